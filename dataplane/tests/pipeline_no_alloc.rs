//! The pipeline allocates nothing per packet once warm: every path (bridging,
//! flooding, VXLAN both ways, routing with ECMP, ARP, ICMP answers and
//! errors, neighbour timers) runs under an allocator that counts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::{IpAddr, Ipv4Addr};

use dataplane::pipeline::{
    DEFAULT_VRF, Disposition, FdbDest, FdbKind, NextHop, Output, PortConfig, RifKind, RouteTarget, RouterInterface,
    Switch, SwitchConfig, VtepConfig,
};
use dataplane::wire::arp::Operation;
use dataplane::wire::{
    ArpPacket, ArpRepr, Ecn, EtherType, EthernetAddress, EthernetFrame, EthernetRepr, Icmpv4Packet, Icmpv4Repr,
    IpProtocol, Ipv4Packet, Ipv4Repr, UdpPacket, UdpRepr, VXLAN_PORT, VxlanPacket, VxlanRepr,
};

struct CountingAllocator;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    /// Per thread: the tests run in parallel, each counting its own
    /// closure (a global count took in the other tests' allocations).
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
    /// Bytes allocated and not yet freed while counting was on.
    static LIVE_BYTES: Cell<isize> = const { Cell::new(0) };
}

fn count() {
    if COUNTING.with(Cell::get) {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
    }
}

/// Live bytes, counted while counting is on (frees of memory allocated
/// before are counted too, so only a difference over one closure means much).
fn track(delta: isize) {
    if COUNTING.with(Cell::get) {
        LIVE_BYTES.with(|n| n.set(n.get() + delta));
    }
}

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        track(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        track(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        track(new_size as isize - layout.size() as isize);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Allocations made by `f` on this thread.
fn allocations_in(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    COUNTING.with(|counting| counting.set(true));
    f();
    COUNTING.with(|counting| counting.set(false));
    ALLOCATIONS.with(Cell::get) - before
}

const SECOND: u64 = 1_000_000_000;

fn mac(kind: u8, last: u8) -> EthernetAddress {
    EthernetAddress([0x02, kind, 0, 0, 0, last])
}

fn ethernet(dst: EthernetAddress, src: EthernetAddress, ethertype: EtherType, payload: &[u8]) -> Vec<u8> {
    let mut buf = vec![0; 14 + payload.len()];
    EthernetRepr { dst_addr: dst, src_addr: src, ethertype }.emit(&mut EthernetFrame::new_unchecked(&mut buf[..]));
    buf[14..].copy_from_slice(payload);
    buf
}

fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, protocol: IpProtocol, ttl: u8, payload: &[u8]) -> Vec<u8> {
    let repr = Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        protocol,
        payload_len: payload.len(),
        ttl,
        dscp: 0,
        ecn: Ecn::NotEct,
        ident: 1,
        dont_frag: false,
        more_frags: false,
        frag_offset: 0,
    };
    let mut buf = vec![0; repr.buffer_len()];
    repr.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
    buf[20..].copy_from_slice(payload);
    buf
}

fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let repr = UdpRepr { src_port: sport, dst_port: dport, payload_len: payload.len() };
    let mut buf = vec![0; repr.buffer_len()];
    buf[8..].copy_from_slice(payload);
    repr.emit_header(&mut UdpPacket::new_unchecked(&mut buf[..]));
    buf
}

fn v4(a: u8, b: u8, c: u8, d: u8) -> Ipv4Addr {
    Ipv4Addr::new(a, b, c, d)
}

/// Ports 0/1 routed (10.0.0.1/24, 10.0.1.1/24, ECMP to 172.16.0.0/16 and
/// the VTEPs 2.2.0.0/16 over both), ports 2/3 in VLAN 100 (VNI 5000, SVI
/// 192.168.100.1/24), VTEP 1.1.1.1.
fn switch() -> Switch {
    let mut switch =
        Switch::new(SwitchConfig { fdb_capacity: 4096, neighbor_capacity: 1024, ..SwitchConfig::default() });
    for port in 0..2u16 {
        switch.set_port(port, PortConfig { pvid: 0, ..PortConfig::default() }).unwrap();
        let rif = RouterInterface {
            kind: RifKind::Port(port),
            mac: mac(0xe, port as u8),
            mtu: 1500,
            admin_up: true,
            vrf: DEFAULT_VRF,
        };
        switch.set_router_interface(port, rif).unwrap();
        switch.set_route(format!("10.0.{port}.1/32").parse().unwrap(), RouteTarget::Local).unwrap();
        switch.set_route(format!("10.0.{port}.0/24").parse().unwrap(), RouteTarget::Connected(port)).unwrap();
        switch.set_neighbor(port, IpAddr::V4(v4(10, 0, port as u8, 2)), mac(0xf, port as u8)).unwrap();
        switch.set_next_hop(port.into(), NextHop { rif: port, ip: IpAddr::V4(v4(10, 0, port as u8, 2)) }).unwrap();
    }
    switch.set_next_hop_group(1, &[0, 1]).unwrap();
    switch.set_route("172.16.0.0/16".parse().unwrap(), RouteTarget::Group(1)).unwrap();
    switch.set_route("2.2.0.0/16".parse().unwrap(), RouteTarget::Group(1)).unwrap();
    switch.set_route("1.1.1.1/32".parse().unwrap(), RouteTarget::Local).unwrap();
    switch.create_vlan(100).unwrap();
    for port in 2..4u16 {
        switch.set_port(port, PortConfig { pvid: 100, ..PortConfig::default() }).unwrap();
        switch.set_vlan_member(100, port, false).unwrap();
    }
    let svi =
        RouterInterface { kind: RifKind::Vlan(100), mac: mac(0xe, 2), mtu: 1500, admin_up: true, vrf: DEFAULT_VRF };
    switch.set_router_interface(2, svi).unwrap();
    switch.set_route("192.168.100.1/32".parse().unwrap(), RouteTarget::Local).unwrap();
    switch.set_route("192.168.100.0/24".parse().unwrap(), RouteTarget::Connected(2)).unwrap();
    switch.set_vtep(Some(VtepConfig { source_ip: v4(1, 1, 1, 1), udp_port: VXLAN_PORT }));
    switch.map_vlan_to_vni(100, 5000).unwrap();
    switch.add_flood_vtep(5000, v4(2, 2, 0, 1)).unwrap();
    switch.add_flood_vtep(5000, v4(2, 2, 0, 2)).unwrap();
    switch.set_fdb_entry(100, mac(0xb, 1), FdbDest::Tunnel(v4(2, 2, 0, 1)), FdbKind::Static, 0).unwrap();
    switch.set_fdb_entry(100, mac(0xa, 3), FdbDest::Port(3), FdbKind::Static, 0).unwrap();
    switch
}

#[test]
fn steady_state_allocates_nothing() {
    let mut switch = switch();
    let host = mac(0xa, 2);
    let data = udp(1000, 2000, &[0; 18]);
    let bridged = ethernet(
        mac(0xa, 3),
        host,
        EtherType::Ipv4,
        &ipv4(v4(192, 168, 100, 2), v4(192, 168, 100, 3), IpProtocol::Udp, 64, &data),
    );
    let flooded = ethernet(
        mac(0xa, 9),
        host,
        EtherType::Ipv4,
        &ipv4(v4(192, 168, 100, 2), v4(192, 168, 100, 9), IpProtocol::Udp, 64, &data),
    );
    let encapsulated = ethernet(
        mac(0xb, 1),
        host,
        EtherType::Ipv4,
        &ipv4(v4(192, 168, 100, 2), v4(192, 168, 100, 20), IpProtocol::Udp, 64, &data),
    );
    let routed = ethernet(
        mac(0xe, 0),
        mac(0xf, 0),
        EtherType::Ipv4,
        &ipv4(v4(10, 0, 0, 2), v4(172, 16, 3, 4), IpProtocol::Udp, 64, &data),
    );
    let expiring = ethernet(
        mac(0xe, 0),
        mac(0xf, 0),
        EtherType::Ipv4,
        &ipv4(v4(10, 0, 0, 2), v4(172, 16, 3, 4), IpProtocol::Udp, 1, &data),
    );
    let echo = Icmpv4Repr::EchoRequest { ident: 1, seq_no: 1, data: b"ping" };
    let mut echo_bytes = vec![0; echo.buffer_len()];
    echo.emit(&mut Icmpv4Packet::new_unchecked(&mut echo_bytes[..]));
    let ping = ethernet(
        mac(0xe, 0),
        mac(0xf, 0),
        EtherType::Ipv4,
        &ipv4(v4(10, 0, 0, 2), v4(10, 0, 0, 1), IpProtocol::Icmp, 64, &echo_bytes),
    );
    let arp = ArpRepr {
        operation: Operation::Request,
        sender_hardware_addr: mac(0xf, 0),
        sender_protocol_addr: v4(10, 0, 0, 2),
        target_hardware_addr: EthernetAddress::ZERO,
        target_protocol_addr: v4(10, 0, 0, 1),
    };
    let mut arp_bytes = vec![0; 28];
    arp.emit(&mut ArpPacket::new_unchecked(&mut arp_bytes[..]));
    let arp_request = ethernet(EthernetAddress::BROADCAST, mac(0xf, 0), EtherType::Arp, &arp_bytes);
    let inner = ethernet(
        mac(0xa, 3),
        mac(0xb, 1),
        EtherType::Ipv4,
        &ipv4(v4(192, 168, 100, 20), v4(192, 168, 100, 3), IpProtocol::Udp, 64, &data),
    );
    let mut vxlan = vec![0; 8 + inner.len()];
    VxlanRepr { vni: 5000 }.emit(&mut VxlanPacket::new_unchecked(&mut vxlan[..]));
    vxlan[8..].copy_from_slice(&inner);
    let decapsulated = ethernet(
        mac(0xe, 0),
        mac(0xf, 0),
        EtherType::Ipv4,
        &ipv4(v4(2, 2, 0, 1), v4(1, 1, 1, 1), IpProtocol::Udp, 64, &udp(50000, VXLAN_PORT, &vxlan)),
    );
    let unresolved = ethernet(
        mac(0xe, 0),
        mac(0xf, 0),
        EtherType::Ipv4,
        &ipv4(v4(10, 0, 0, 2), v4(10, 0, 1, 77), IpProtocol::Udp, 64, &data),
    );

    let cases: [(&str, u16, &[u8], Disposition); 10] = [
        ("bridged", 2, &bridged, Disposition::Forwarded),
        ("flooded with head-end replication", 2, &flooded, Disposition::Flooded),
        ("encapsulated", 2, &encapsulated, Disposition::Forwarded),
        ("decapsulated", 0, &decapsulated, Disposition::Forwarded),
        ("routed over ECMP", 0, &routed, Disposition::Forwarded),
        ("TTL expired", 0, &expiring, Disposition::Dropped(dataplane::pipeline::DropReason::TtlExpired)),
        ("echo answered", 0, &ping, Disposition::Consumed),
        ("ARP answered", 0, &arp_request, Disposition::Consumed),
        (
            "neighbour miss, its queue full",
            0,
            &unresolved,
            Disposition::Dropped(dataplane::pipeline::DropReason::NeighborQueueFull),
        ),
        ("garbage", 0, &[0xffu8; 9], Disposition::Dropped(dataplane::pipeline::DropReason::Malformed)),
    ];
    let mut out = Output::new();
    let mut now = 1000 * SECOND;
    // Warm up: tables, the output buffer, scratch buffers, the event queue,
    // the buffers of the packets held for the unresolved neighbour (three).
    for _ in 0..4 {
        for (_, port, frame, _) in &cases {
            switch.process(now, *port, frame, &mut out);
        }
    }
    switch.poll(now, &mut out);
    out.clear();
    switch.drain_events().for_each(drop);
    for (name, port, frame, expected) in &cases {
        let mut disposition = None;
        let allocations = allocations_in(|| {
            for _ in 0..1000 {
                out.clear();
                disposition = Some(switch.process(now, *port, frame, &mut out));
            }
        });
        assert_eq!(disposition, Some(*expected), "{name}");
        assert_eq!(allocations, 0, "{name} allocated");
    }
    // Timers: neighbour probes and aging walk without allocating either.
    let allocations = allocations_in(|| {
        for _ in 0..100 {
            now += SECOND / 2;
            out.clear();
            switch.poll(now, &mut out);
        }
    });
    assert_eq!(allocations, 0, "poll allocated");
}

/// Bytes still allocated after `f` that were not before (on this thread).
fn bytes_kept_by<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE_BYTES.with(Cell::get);
    COUNTING.with(|counting| counting.set(true));
    let value = f();
    COUNTING.with(|counting| counting.set(false));
    (value, (LIVE_BYTES.with(Cell::get) - before).max(0) as usize)
}

#[test]
fn a_small_profile_switch_costs_at_most_64_kib() {
    let (switch, bytes) = bytes_kept_by(|| Switch::new(SwitchConfig::small()));
    assert!(bytes <= 64 * 1024, "a small-profile switch holds {bytes} bytes");
    // The default profile, for comparison, is far bigger (its tables are preallocated).
    let (default, default_bytes) = bytes_kept_by(|| Switch::new(SwitchConfig::default()));
    assert!(default_bytes > 4 * bytes, "{default_bytes} vs {bytes}");
    println!("small profile: {bytes} bytes; default: {default_bytes} bytes");
    drop((switch, default));
}

/// Takes every frame; the node's steady state must not allocate either.
struct Discard;

impl dataplane::node::Ports<dataplane::node::HostIfTarget> for Discard {
    fn transmit(&mut self, _port: u16, _frame: &[u8]) -> bool {
        true
    }
    fn punt(
        &mut self,
        _host_if: Option<dataplane::node::HostIfTarget>,
        _egress: dataplane::pipeline::Egress,
        _frame: &[u8],
    ) {
    }
}

#[test]
fn the_node_loop_allocates_nothing_once_warm() {
    let mut switch = Switch::new(SwitchConfig { fdb_capacity: 1024, ..SwitchConfig::default() });
    switch.create_vlan(10).unwrap();
    for port in 0..4 {
        switch.set_port(port, PortConfig { pvid: 10, ..PortConfig::default() }).unwrap();
        switch.set_vlan_member(10, port, false).unwrap();
    }
    switch.set_fdb_entry(10, mac(2, 0), FdbDest::Port(1), FdbKind::Static, 0).unwrap();
    let unicast = ethernet(mac(2, 0), mac(1, 0), EtherType::Unknown(0x88b6), &[0u8; 100]);
    let flood = ethernet(EthernetAddress::BROADCAST, mac(1, 0), EtherType::Unknown(0x88b6), &[0u8; 100]);
    let mut node = dataplane::node::Node::new();
    let mut now = 1000 * SECOND;
    for frame in [&unicast, &flood] {
        node.receive(&mut switch, now, 0, frame, &mut Discard);
    }
    node.poll(&mut switch, now, &mut Discard);
    let allocations = allocations_in(|| {
        for _ in 0..1000 {
            now += 1000;
            node.receive(&mut switch, now, 0, &unicast, &mut Discard);
            node.receive(&mut switch, now, 0, &flood, &mut Discard);
            node.poll(&mut switch, now, &mut Discard);
        }
    });
    assert_eq!(allocations, 0, "the node allocated");
    assert_eq!(switch.port_counters(1).unwrap().tx_packets, 2002);
}
