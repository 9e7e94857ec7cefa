//! A whole speaker with two neighbours driven by arbitrary events: TCP
//! events, timer jumps, arbitrary frames and well-formed OPEN/KEEPALIVE/UPDATE
//! messages, so the FSM (Neighbor::handle), RFC 7606 handling, the RIBs and
//! the decision process all see hostile sequences.
#![no_main]

use std::net::{IpAddr, Ipv4Addr};

use bgp_evpn::config::{BgpConfig, NeighborConfig, MaxPrefix};
use bgp_evpn::events::{Output, Speaker};
use bgp_evpn::neighbor::{NANOS_PER_SEC, State};
use bgp_evpn::packet::{Capability, DecodeContext, Message, Open, AfiSafi};
use libfuzzer_sys::fuzz_target;

fn speaker() -> Speaker {
    let mut c = BgpConfig::new(65001, Ipv4Addr::new(10, 0, 0, 1));
    c.networks = vec!["10.1.0.0/16".parse().unwrap(), "2001:db8::/32".parse().unwrap()];
    let mut a = NeighborConfig::new(IpAddr::from([10, 0, 0, 2]), 65002);
    a.max_prefix = Some(MaxPrefix { limit: 50, warning_only: false });
    let mut b = NeighborConfig::new(IpAddr::from([10, 0, 0, 3]), 65001);
    b.route_reflector_client = true;
    c.neighbors = vec![a, b];
    Speaker::new(c).unwrap()
}

fuzz_target!(|data: &[u8]| {
    let mut sp = speaker();
    let mut now = 0u64;
    sp.start(now);
    let peers = [1usize, 2];
    let mut conns: Vec<(usize, u64)> = Vec::new();
    let mut rest = data;
    while let [op, arg, tail @ ..] = rest {
        rest = tail;
        let peer = peers[(*arg & 1) as usize];
        let conn = conns.iter().rev().find(|(p, _)| *p == peer).map(|(_, c)| *c).unwrap_or(1);
        match op % 8 {
            0 => sp.start_peer(now, peer),
            1 => sp.stop_peer(now, peer),
            2 => {
                let c = sp.accepted(now, peer, IpAddr::from([10, 0, 0, 1]));
                conns.push((peer, c));
            }
            3 => sp.closed(now, peer, conn),
            4 => {
                now += (*arg as u64) * NANOS_PER_SEC / 4;
                sp.handle_timeout(now);
            }
            5 => {
                // An arbitrary frame of up to 255 bytes.
                let len = (*arg as usize).min(rest.len());
                sp.received(now, peer, conn, &rest[..len]);
                rest = &rest[len..];
            }
            6 => {
                let asn = if peer == 1 { 65002 } else { 65001 };
                let caps = vec![Capability::Multiprotocol(AfiSafi::IPV4_UNICAST), Capability::Multiprotocol(AfiSafi::IPV6_UNICAST)];
                let open = Open::new(asn, (*arg as u16) & 0x1f, Ipv4Addr::new(10, 0, 0, peer as u8 + 1), caps);
                let bytes = Message::Open(open).to_bytes(&DecodeContext::default());
                sp.received(now, peer, conn, &bytes);
            }
            _ => sp.received(now, peer, conn, &Message::Keepalive.to_bytes(&DecodeContext::default())),
        }
        while let Some(out) = sp.poll_output() {
            if let Output::Connect { peer, conn, .. } = out {
                if arg & 2 != 0 {
                    sp.connected(now, peer, conn, IpAddr::from([10, 0, 0, 1]));
                } else {
                    sp.closed(now, peer, conn);
                }
                conns.push((peer, conn));
            }
        }
        for p in peers {
            let peer = sp.peer(p).unwrap();
            assert_eq!(peer.fsm.state() == State::Established, peer.fsm.negotiated().is_some());
        }
    }
});
