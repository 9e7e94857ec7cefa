//! UPDATE decoding and encoding throughput, in prefixes per second.
//!
//! `cargo bench -p bgp-evpn`. Two tables of 100,000 IPv4 /24s: one sharing a
//! single attribute set (about 1000 prefixes per 4096-byte UPDATE, the
//! best case for packing) and one with 1000 distinct AS paths (100 prefixes
//! per UPDATE, closer to a real feed); plus 100,000 IPv6 /48s over MP_REACH_NLRI.

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bgp_evpn::packet::message::{MAX_LEN, frame_len};
use bgp_evpn::packet::update::pack_announce;
use bgp_evpn::packet::{AsPath, DecodeContext, Family, Ipv4Prefix, Ipv6Prefix, Message, Nlri, PathAttrs};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const PREFIXES: u32 = 100_000;

fn attrs(i: u32, v6: bool) -> PathAttrs {
    PathAttrs {
        as_path: AsPath::from_sequence([65100, 64512 + i]),
        next_hop: Some(if v6 {
            IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1))
        } else {
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))
        }),
        med: Some(10),
        communities: vec![65100 << 16 | 1],
        ..Default::default()
    }
}

fn v4_table() -> Vec<Nlri> {
    (0..PREFIXES).map(|i| Nlri::Ipv4(Ipv4Prefix::new(Ipv4Addr::from((11 << 24) + (i << 8)), 24).unwrap())).collect()
}

fn v6_table() -> Vec<Nlri> {
    (0..PREFIXES)
        .map(|i| {
            Nlri::Ipv6(Ipv6Prefix::new(Ipv6Addr::from((0x2001_0db8u128 << 96) | ((i as u128) << 80)), 48).unwrap())
        })
        .collect()
}

/// Packs `routes` in groups of `per_set` sharing one attribute set.
fn pack(routes: &[Nlri], family: Family, per_set: usize) -> Vec<u8> {
    let ctx = DecodeContext::default();
    let mut out = Vec::new();
    for (i, chunk) in routes.chunks(per_set).enumerate() {
        pack_announce(&attrs(i as u32, family == Family::Ipv6Unicast), family, chunk, &ctx, MAX_LEN, &mut out);
    }
    out
}

fn decode_all(buf: &[u8], ctx: &DecodeContext) -> usize {
    let mut at = 0;
    let mut prefixes = 0;
    while let Ok(Some(len)) = frame_len(&buf[at..], MAX_LEN) {
        if let Ok(Message::Update(u)) = Message::decode(&buf[at..at + len], ctx) {
            prefixes += u.nlri.len() + u.mp_reach.map_or(0, |r| r.nlri.len());
        }
        at += len;
    }
    prefixes
}

fn bench(c: &mut Criterion) {
    let ctx = DecodeContext::default();
    let v4 = v4_table();
    let v6 = v6_table();
    let cases = [
        ("ipv4 one attribute set", &v4, Family::Ipv4Unicast, PREFIXES as usize),
        ("ipv4 1000 attribute sets", &v4, Family::Ipv4Unicast, 100),
        ("ipv6 one attribute set", &v6, Family::Ipv6Unicast, PREFIXES as usize),
    ];
    let mut group = c.benchmark_group("update");
    group.throughput(Throughput::Elements(PREFIXES as u64));
    for (name, routes, family, per_set) in cases {
        let wire = pack(routes, family, per_set);
        assert_eq!(decode_all(&wire, &ctx), PREFIXES as usize);
        group.bench_function(format!("decode {name}"), |b| b.iter(|| black_box(decode_all(black_box(&wire), &ctx))));
        group.bench_function(format!("encode {name}"), |b| {
            b.iter(|| black_box(pack(black_box(routes), family, per_set)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
