//! Loads a table into the sans-IO speaker and reports time and memory per
//! route, without sockets: the speaker's own cost, which the TCP benchmark
//! (`scripts/bench-bgp`) adds I/O to.
//!
//! `cargo run --release -p bgp-evpn --example table_load -- [PREFIXES]`
//! (default 1,000,000 IPv4 /24s in 1000 attribute sets, packed as a peer
//! packs them: about 100 prefixes per 4096-byte UPDATE).

use std::net::{IpAddr, Ipv4Addr};
use std::time::Instant;

use bgp_evpn::BgpConfig;
use bgp_evpn::config::NeighborConfig;
use bgp_evpn::events::{Output, Speaker};
use bgp_evpn::packet::message::{MAX_LEN, frame_len};
use bgp_evpn::packet::update::pack_announce;
use bgp_evpn::packet::{
    AfiSafi, AsPath, Capability, DecodeContext, Family, Ipv4Prefix, Message, Nlri, Open, PathAttrs,
};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("VmRSS:").and_then(|v| v.split_whitespace().next()?.parse().ok()))
        })
        .unwrap_or(0)
}

fn main() {
    let count: u32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let ctx = DecodeContext::default();
    // The wire bytes, built before measuring.
    let routes: Vec<Nlri> = (0..count)
        .map(|i| Nlri::Ipv4(Ipv4Prefix::new(Ipv4Addr::from((11u32 << 24) + (i << 8)), 24).unwrap()))
        .collect();
    let mut wire = Vec::new();
    for (i, chunk) in routes.chunks((count as usize / 1000).max(1)).enumerate() {
        let attrs = PathAttrs {
            as_path: AsPath::from_sequence([65100, 65200, 4_200_000_000 + i as u32]),
            next_hop: Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2))),
            ..Default::default()
        };
        pack_announce(&attrs, Family::Ipv4Unicast, chunk, &ctx, MAX_LEN, &mut wire);
    }
    drop(routes);

    let mut cfg = BgpConfig::new(65001, Ipv4Addr::new(10, 0, 0, 1));
    cfg.neighbors.push(NeighborConfig::new(IpAddr::from([10, 0, 0, 2]), 65100));
    let mut sp = Speaker::new(cfg).unwrap();
    sp.start(0);
    let peer = sp.peer_by_addr(IpAddr::from([10, 0, 0, 2])).unwrap();
    let conn = sp.accepted(0, peer, IpAddr::from([10, 0, 0, 1]));
    let open = Open::new(65100, 90, Ipv4Addr::new(10, 0, 0, 2), vec![Capability::Multiprotocol(AfiSafi::IPV4_UNICAST)]);
    sp.received(0, peer, conn, &Message::Open(open).to_bytes(&ctx));
    sp.received(0, peer, conn, &Message::Keepalive.to_bytes(&ctx));
    while sp.poll_output().is_some() {}

    let rss_before = rss_kib();
    let start = Instant::now();
    let (mut at, mut messages, mut fib) = (0, 0u64, 0u64);
    while let Ok(Some(len)) = frame_len(&wire[at..], MAX_LEN) {
        sp.received(0, peer, conn, &wire[at..at + len]);
        while let Some(o) = sp.poll_output() {
            if let Output::Fib { .. } = o {
                fib += 1;
            }
        }
        at += len;
        messages += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    let rss_after = rss_kib();
    if sp.rib.loc_len() != count as usize {
        let missing: Vec<_> = (0..count)
            .map(|i| Nlri::Ipv4(Ipv4Prefix::new(Ipv4Addr::from((11u32 << 24) + (i << 8)), 24).unwrap()))
            .filter(|n| sp.rib.loc(n).is_none())
            .take(5)
            .collect();
        panic!("{} in the Loc-RIB; missing e.g. {missing:?}; {:?}", sp.rib.loc_len(), sp.summary(0)[0].errors);
    }
    let per_route = (rss_after.saturating_sub(rss_before) * 1024) as f64 / count as f64;
    println!(
        "{count} prefixes in {messages} UPDATEs: Loc-RIB full in {secs:.3} s ({:.2} M prefixes/s), {fib} FIB changes, \
         RSS +{:.1} MiB ({per_route:.0} bytes/route), {} attribute sets interned",
        count as f64 / secs / 1e6,
        rss_after.saturating_sub(rss_before) as f64 / 1024.0,
        sp.rib.interned()
    );
}
