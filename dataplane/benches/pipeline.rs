//! Packets per second through the pipeline on one core: L2 known unicast,
//! VXLAN encapsulation and decapsulation, IPv4 LPM routing with ECMP over
//! 100,000 routes. Each iteration processes a batch of distinct frames (as
//! the port adapters do) and clears the output buffer once.
//!
//! `node_tm/*`: the L2 and VXLAN-encapsulation paths through the node loop
//! (`Node::receive_batch`, 64 frames a read as `switchd` reads its rings)
//! to a port sink, with the FIFO (`fifo`) and with the `qos` traffic
//! manager (`qos_tm`: classify, ECN decision, admission, VOQ enqueue and
//! dequeue at the port's line rate; DLB's flowlet choice over the VXLAN
//! underlay's ECMP group), so that the traffic manager's cost is the
//! difference between two rows of the same run.

mod fixtures;

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dataplane::node::{Node, TrafficManager};
use dataplane::pipeline::{
    DEFAULT_VRF, FdbDest, FdbKind, NextHop, Output, PortConfig, RifKind, RouteTarget, RouterInterface, Switch,
    SwitchConfig,
};
use dataplane::wire::{EtherType, VXLAN_PORT, VxlanPacket, VxlanRepr};
use fixtures::*;

fn run_batch(c: &mut Criterion, name: &str, mut switch: Switch, ingress: u16, frames: Vec<Vec<u8>>, expect_out: usize) {
    let mut out = Output::with_capacity(BATCH * 2);
    // Warm up the tables (learning, neighbour state) and check the path works.
    for frame in &frames {
        switch.process(NOW, ingress, frame, &mut out);
    }
    out.clear();
    for frame in &frames {
        switch.process(NOW, ingress, frame, &mut out);
    }
    assert_eq!(out.len(), expect_out * frames.len(), "{name}: every frame must be forwarded");
    let mut group = c.benchmark_group("pipeline");
    group.throughput(Throughput::Elements(frames.len() as u64));
    group.bench_function(name, |b| {
        b.iter(|| {
            out.clear();
            for frame in &frames {
                black_box(switch.process(NOW, ingress, black_box(frame), &mut out));
            }
        })
    });
    group.finish();
}

fn l2_known_unicast(c: &mut Criterion) {
    let mut switch = Switch::new(SwitchConfig::default());
    switch.create_vlan(10).unwrap();
    for port in 0..2 {
        switch.set_port(port, PortConfig { pvid: 10, ..PortConfig::default() }).unwrap();
        switch.set_vlan_member(10, port, false).unwrap();
    }
    let frames: Vec<Vec<u8>> = (0..BATCH)
        .map(|i| {
            switch.set_fdb_entry(10, mac(0xb, i), FdbDest::Port(1), FdbKind::Dynamic, NOW).unwrap();
            small_udp_frame(mac(0xb, i), mac(0xa, i), Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 1, 1), i as u16)
        })
        .collect();
    run_batch(c, "l2_known_unicast", switch, 0, frames, 1);
}

fn vxlan_encap(c: &mut Criterion) {
    let mut switch = vtep_switch();
    let frames: Vec<Vec<u8>> = (0..BATCH)
        .map(|i| {
            let remote = Ipv4Addr::new(2, 2, 0, (i % 16) as u8 + 1);
            switch.set_fdb_entry(100, mac(0xb, i), FdbDest::Tunnel(remote), FdbKind::Static, NOW).unwrap();
            small_udp_frame(
                mac(0xb, i),
                mac(0xa, i),
                Ipv4Addr::new(192, 168, 0, 1),
                Ipv4Addr::new(192, 168, 0, 2),
                i as u16,
            )
        })
        .collect();
    run_batch(c, "vxlan_encap", switch, 0, frames, 1);
}

fn vxlan_decap(c: &mut Criterion) {
    let mut switch = vtep_switch();
    let frames: Vec<Vec<u8>> = (0..BATCH)
        .map(|i| {
            switch.set_fdb_entry(100, mac(0xa, i), FdbDest::Port(0), FdbKind::Static, NOW).unwrap();
            let inner = small_udp_frame(
                mac(0xa, i),
                mac(0xb, i),
                Ipv4Addr::new(192, 168, 0, 2),
                Ipv4Addr::new(192, 168, 0, 1),
                i as u16,
            );
            let remote = Ipv4Addr::new(2, 2, 0, (i % 16) as u8 + 1);
            let mut vxlan = vec![0u8; 8 + inner.len()];
            VxlanRepr { vni: 5000 }.emit(&mut VxlanPacket::new_unchecked(&mut vxlan[..]));
            vxlan[8..].copy_from_slice(&inner);
            let outer = udp_ip(remote, Ipv4Addr::new(1, 1, 1, 1), 49152 + i as u16, VXLAN_PORT, &vxlan);
            ethernet(mac(0xe, 1), mac(0xf, 1), EtherType::Ipv4, &outer)
        })
        .collect();
    run_batch(c, "vxlan_decap", switch, 1, frames, 1);
}

/// A deterministic generator (xorshift) so that runs are comparable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn ipv4_lpm_ecmp(c: &mut Criterion) {
    let mut switch = Switch::new(SwitchConfig::default());
    // Ingress port 0, four routed uplinks 1..=4 with one next hop each.
    for port in 0..5u16 {
        switch.set_port(port, PortConfig { pvid: 0, ..PortConfig::default() }).unwrap();
        let config = RouterInterface {
            kind: RifKind::Port(port),
            mac: mac(0xe, port.into()),
            mtu: 9000,
            admin_up: true,
            vrf: DEFAULT_VRF,
        };
        switch.set_router_interface(port, config).unwrap();
        let peer = Ipv4Addr::new(10, 0, port as u8, 2);
        switch.set_route(format!("10.0.{port}.1/32").parse().unwrap(), RouteTarget::Local).unwrap();
        switch.set_route(format!("10.0.{port}.0/24").parse().unwrap(), RouteTarget::Connected(port)).unwrap();
        switch.set_neighbor(port, IpAddr::V4(peer), mac(0xf, port.into())).unwrap();
        switch.set_next_hop(port.into(), NextHop { rif: port, ip: IpAddr::V4(peer) }).unwrap();
    }
    switch.set_next_hop_group(1, &[1, 2, 3, 4]).unwrap();
    switch.set_next_hop_group(2, &[1, 2]).unwrap();
    switch.set_next_hop_group(3, &[3, 4]).unwrap();
    // 100,000 routes shaped like a DFZ table: mostly /24, some /16../23 and
    // host routes; targets a mix of the ECMP groups and single next hops.
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut destinations = Vec::new();
    let mut prefixes = Vec::new();
    let mut installed = 0;
    while installed < 100_000 {
        let r = rng.next();
        let len = match r % 100 {
            0..=59 => 24,
            60..=84 => 16 + (r >> 8) as u8 % 8,
            85..=94 => 25 + (r >> 8) as u8 % 7,
            _ => 32,
        };
        let addr = (r >> 32) as u32 | 0x0100_0000;
        let addr = Ipv4Addr::from(addr & (u32::MAX << (32 - u32::from(len))));
        if addr.octets()[0] == 10 || addr.octets()[0] >= 224 {
            continue;
        }
        let target = match r % 7 {
            0 => RouteTarget::NextHop(1 + (r >> 16) as u32 % 4),
            1 | 2 => RouteTarget::Group(2 + (r >> 16) as u32 % 2),
            _ => RouteTarget::Group(1),
        };
        let prefix = ipnetwork::Ipv4Network::new(addr, len).unwrap();
        if switch.route(prefix.into()).is_none() {
            switch.set_route(prefix.into(), target).unwrap();
            prefixes.push(prefix);
            installed += 1;
            if destinations.len() < 4 * BATCH && r.is_multiple_of(97) {
                let host = u32::from(addr) | ((rng.next() as u32) & !(u32::MAX << (32 - u32::from(len))));
                destinations.push(Ipv4Addr::from(if len == 32 { u32::from(addr) } else { host }));
            }
        }
    }
    assert!(switch.route_count() >= 100_000);
    let frames: Vec<Vec<u8>> = destinations
        .iter()
        .take(BATCH)
        .enumerate()
        .map(|(i, &dst)| small_udp_frame(mac(0xe, 0), mac(0xa, i), Ipv4Addr::new(10, 0, 0, 2), dst, i as u16))
        .collect();
    assert_eq!(frames.len(), BATCH);
    // The route lookup alone, to tell the LPM's share from the rest.
    let addrs: Vec<IpAddr> = destinations.iter().take(BATCH).map(|&dst| IpAddr::V4(dst)).collect();
    let mut group = c.benchmark_group("pipeline");
    group.throughput(Throughput::Elements(addrs.len() as u64));
    group.bench_function("lpm_lookup_only_100k_routes", |b| {
        b.iter(|| {
            for addr in &addrs {
                black_box(switch.lookup_route(black_box(*addr)));
            }
        })
    });
    // The same over 65,536 destinations under random installed prefixes: the
    // lookups no longer fit in the caches (what a core sees on a busy link).
    let spread: Vec<IpAddr> = (0..65_536)
        .map(|_| {
            let prefix = prefixes[(rng.next() % prefixes.len() as u64) as usize];
            let host_bits = if prefix.prefix() == 32 { 0 } else { u32::MAX >> prefix.prefix() };
            IpAddr::V4(Ipv4Addr::from(u32::from(prefix.network()) | (rng.next() as u32 & host_bits)))
        })
        .collect();
    group.throughput(Throughput::Elements(spread.len() as u64));
    group.bench_function("lpm_lookup_only_100k_routes_64k_destinations", |b| {
        b.iter(|| {
            for addr in &spread {
                black_box(switch.lookup_route(black_box(*addr)));
            }
        })
    });
    group.finish();
    run_batch(c, "ipv4_lpm_ecmp_100k_routes", switch, 0, frames, 1);
}

/// The batch through `node` in reads of [`RX_BATCH`] frames, as `switchd`
/// does (virtual time 20 ns per frame), every frame sent to the sink.
fn run_node<T: TrafficManager>(
    c: &mut Criterion,
    name: &str,
    mut switch: Switch,
    mut node: Node<T>,
    frames: &[Vec<u8>],
) {
    let mut sink = Sink::default();
    let mut now = NOW;
    for _ in 0..2 {
        receive_all(&mut node, &mut switch, &mut now, frames, &mut sink);
    }
    assert_eq!(sink.frames, 2 * frames.len(), "{name}: every frame must be sent ({:?})", node.counters());
    let mut group = c.benchmark_group("node_tm");
    group.throughput(Throughput::Elements(frames.len() as u64));
    group.bench_function(name, |b| b.iter(|| receive_all(&mut node, &mut switch, &mut now, frames, &mut sink)));
    group.finish();
}

fn node_with_and_without_tm(c: &mut Criterion) {
    let (switch, frames) = l2_case();
    run_node(c, "l2_known_unicast/fifo", switch, Node::new(), &frames);
    let (switch, frames) = l2_case();
    run_node(c, "l2_known_unicast/qos_tm", switch, Node::with_traffic_manager(qos_tm(2)), &frames);

    let (switch, frames) = vxlan_case();
    run_node(c, "vxlan_encap/fifo", switch, Node::new(), &frames);
    let (mut switch, frames) = vxlan_case();
    let tm = vxlan_tm(&mut switch);
    run_node(c, "vxlan_encap/qos_tm", switch, Node::with_traffic_manager(tm), &frames);
}

criterion_group!(benches, l2_known_unicast, vxlan_encap, vxlan_decap, ipv4_lpm_ecmp, node_with_and_without_tm);
criterion_main!(benches);
