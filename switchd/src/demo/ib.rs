//! The demo's IB-like plane: two switches running `switchd`'s own IB
//! runtime ([`IbRuntime`]: the `qos::ib` engine, the agent, and on ib-s1
//! the embedded subnet manager) and three HCA-like endpoints
//! ([`HcaPlane`], what `fabric-host ib` runs), cabled in memory and run in
//! virtual time. Nothing is set by hand: the SM discovers the plane with
//! directed-route SMPs, gives LIDs, routes, programs the LFTs and takes
//! every port to Active; then the HCAs ping each other by LID.
//!
//! ```text
//! ha -- (eth1) ib-s1 (eth2) -- (eth1) ib-s2 (eth2) -- hb
//!             (eth3) -- hc
//! ```

use std::collections::VecDeque;

use dataplane::pipeline::PortId;
use dataplane::wire::EthernetAddress;
use subnet_manager::plane::hca::{HcaConfig, HcaPlane};

use crate::config::Config;
use crate::ib::IbRuntime;

pub const CONFIGS: [(&str, &str); 2] =
    [("ib-s1", include_str!("../../demo/ib-s1.yaml")), ("ib-s2", include_str!("../../demo/ib-s2.yaml"))];

/// HCAs: name, GUID.
const HCAS: [(&str, u64); 3] = [("ha", 0xa0), ("hb", 0xb0), ("hc", 0xc0)];
pub const NAMES: [&str; 3] = [HCAS[0].0, HCAS[1].0, HCAS[2].0];

pub const MAP: &str = "
    ha -- (eth1) ib-s1 (eth2) -- (eth1) ib-s2 (eth2) -- hb
                (eth3) -- hc";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// Switch index, port number (`ethN` is port N).
    Switch(usize, u8),
    Hca(usize),
}

const CABLES: [(End, End); 4] = [
    (End::Hca(0), End::Switch(0, 1)),
    (End::Switch(0, 2), End::Switch(1, 1)),
    (End::Switch(1, 2), End::Hca(1)),
    (End::Switch(0, 3), End::Hca(2)),
];

const STEP_NS: u64 = 100_000;
const PING: &[u8; 8] = b"IBPGping";
const PONG: &[u8; 8] = b"IBPGpong";

pub struct IbDemo {
    pub switches: Vec<(String, IbRuntime)>,
    pub hcas: Vec<HcaPlane>,
    wire: VecDeque<(End, Vec<u8>)>,
    /// Per HCA, the LIDs its pongs came from.
    pongs: Vec<Vec<u16>>,
    pub now: u64,
}

fn peer(end: End) -> Option<End> {
    CABLES.iter().find_map(|&(a, b)| {
        if a == end {
            Some(b)
        } else if b == end {
            Some(a)
        } else {
            None
        }
    })
}

impl IbDemo {
    pub fn build() -> IbDemo {
        let switches = CONFIGS
            .iter()
            .map(|(name, yaml)| {
                let config = Config::from_yaml(yaml).unwrap_or_else(|e| panic!("embedded config {name}: {e}"));
                // Pipeline port ids are the IBA port numbers here.
                let number = |port: &str| -> PortId { port.trim_start_matches("eth").parse().unwrap_or(0) };
                let runtime = IbRuntime::new(&config, number)
                    .unwrap_or_else(|e| panic!("{name}: {e}"))
                    .unwrap_or_else(|| panic!("{name} has IB-like ports"));
                (name.to_string(), runtime)
            })
            .collect();
        let hcas = HCAS
            .iter()
            .map(|&(name, guid)| {
                HcaPlane::new(HcaConfig {
                    guid,
                    description: name.into(),
                    mac: EthernetAddress([2, 0, 0, 0, 0xa, guid as u8]),
                    data_vls: 2,
                    mtu: 1024,
                    buffer_blocks: 64,
                    flow_control_refresh_ns: crate::ib::FLOW_CONTROL_REFRESH_NS,
                    line_rate_bps: None,
                })
                .expect("HCA config")
            })
            .collect();
        IbDemo { switches, hcas, wire: VecDeque::new(), pongs: vec![Vec::new(); HCAS.len()], now: 0 }
    }

    /// One step of virtual time: everyone polled, then every frame on the
    /// wire delivered (and what that causes) until it is quiet.
    fn step(&mut self) {
        self.now += STEP_NS;
        let now = self.now;
        let mut out = Vec::new();
        for (i, (_, runtime)) in self.switches.iter_mut().enumerate() {
            runtime.poll(now, &mut |port, frame| {
                out.push((End::Switch(i, port as u8), frame.to_vec()));
                true
            });
        }
        for (i, hca) in self.hcas.iter_mut().enumerate() {
            hca.poll(now, &mut |frame| {
                out.push((End::Hca(i), frame.to_vec()));
                true
            });
        }
        self.send(out);
        while let Some((to, frame)) = self.wire.pop_front() {
            let mut out = Vec::new();
            match to {
                End::Switch(i, port) => self.switches[i].1.receive(now, PortId::from(port), &frame, &mut |p, f| {
                    out.push((End::Switch(i, p as u8), f.to_vec()));
                    true
                }),
                End::Hca(i) => self.hcas[i].receive(now, &frame, &mut |f| {
                    out.push((End::Hca(i), f.to_vec()));
                    true
                }),
            }
            self.send(out);
        }
        self.echo();
    }

    fn send(&mut self, out: Vec<(End, Vec<u8>)>) {
        for (from, frame) in out {
            if let Some(to) = peer(from) {
                self.wire.push_back((to, frame));
            }
        }
    }

    /// Every HCA answers pings (`fabric-host ib`'s echo).
    fn echo(&mut self) {
        let now = self.now;
        let mut out = Vec::new();
        for (i, hca) in self.hcas.iter_mut().enumerate() {
            let mut kept = VecDeque::new();
            while let Some(packet) = hca.take() {
                if packet.payload.starts_with(PING) {
                    let _ = hca.send(now, packet.slid, 0, PONG, &mut |f| {
                        out.push((End::Hca(i), f.to_vec()));
                        true
                    });
                } else {
                    kept.push_back(packet);
                }
            }
            self.pongs[i].extend(kept.into_iter().filter(|p| p.payload.starts_with(PONG)).map(|p| p.slid));
        }
        self.send(out);
    }

    /// Runs until the SM in ib-s1 has the plane up (or `limit_ns` passes);
    /// returns the virtual time it took.
    pub fn bring_up(&mut self, limit_ns: u64) -> Option<u64> {
        while self.now < limit_ns {
            self.step();
            if self.switches[0].1.sm.as_ref().is_some_and(|sm| sm.fabric_up) {
                return Some(self.now);
            }
        }
        None
    }

    /// `count` pings from HCA `from` to `lid`; the replies that came back.
    pub fn ping(&mut self, from: usize, lid: u16, count: usize) -> usize {
        let before = self.pongs[from].len();
        for _ in 0..count {
            let now = self.now;
            let mut out = Vec::new();
            let _ = self.hcas[from].send(now, lid, 0, PING, &mut |f| {
                out.push((End::Hca(from), f.to_vec()));
                true
            });
            self.send(out);
            for _ in 0..10 {
                self.step();
            }
        }
        self.pongs[from][before..].iter().filter(|&&slid| slid == lid).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_sm_brings_the_plane_up_and_every_pair_pings() {
        let mut plane = IbDemo::build();
        assert!(plane.bring_up(10_000_000_000).is_some(), "the plane did not come up");
        let sm = plane.switches[0].1.show_sm(plane.now);
        assert_eq!((sm.state.as_str(), sm.switches, sm.cas), ("master", 2, 3), "{sm:?}");
        // Every port Active on both switches, every HCA with its own LID.
        for (name, runtime) in &plane.switches {
            assert!(runtime.show_ports().iter().all(|p| p.state == "active"), "{name}");
        }
        let lids: Vec<u16> = plane.hcas.iter().map(HcaPlane::lid).collect();
        assert!(lids.iter().all(|&l| l != 0) && lids[0] != lids[1] && lids[1] != lids[2] && lids[0] != lids[2]);
        for (from, from_name) in NAMES.iter().enumerate() {
            for (to, to_name) in NAMES.iter().enumerate().filter(|&(to, _)| to != from) {
                assert_eq!(plane.ping(from, lids[to], 3), 3, "{from_name} -> {to_name}");
            }
        }
    }
}
