//! Switch and HCA planes cabled by in-memory links, in virtual time:
//!
//! ```text
//! hca-a (1) -- (1) sw1 (2) -- (1) sw2 (2) -- (1) hca-b
//!                   (3) -- (1) hca-c
//! ```

use std::collections::VecDeque;

use super::hca::{HcaConfig, HcaPlane, SendError};
use super::switch::{SwitchPlane, SwitchPlaneConfig, SwitchPortConfig};
use crate::lid::LidMap;
use crate::packet::attributes::{LftBlock, LftBlockRepr, Notice, NoticeRepr, PortInfo, PortInfoRepr, PortState};
use crate::packet::{AttributeId, MadStatus, Method, SmpRepr};
use crate::sm::{SmConfig, SmEvent, SubnetManager};
use dataplane::wire::EthernetAddress;

const US: u64 = 1_000;
/// The lab's flow-control refresh period.
const REFRESH_NS: u64 = 1_000 * US;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Switch(usize, u8),
    Hca(usize),
}

struct Lab {
    switches: Vec<SwitchPlane>,
    hcas: Vec<HcaPlane>,
    links: Vec<(End, End)>,
    wire: VecDeque<(End, Vec<u8>)>,
    now: u64,
}

fn mac(n: u8) -> EthernetAddress {
    EthernetAddress([2, 0, 0, 0, 0, n])
}

impl Lab {
    fn new(data_vls: u8, buffer_blocks: u16) -> Lab {
        let switch = |guid: u64, ports: &[u8]| {
            SwitchPlane::new(&SwitchPlaneConfig {
                guid,
                description: format!("sw{guid:x}"),
                mac: mac(guid as u8),
                ports: ports
                    .iter()
                    .map(|&number| SwitchPortConfig { number, data_vls, mtu: 1024, rate_bps: None })
                    .collect(),
                buffer_blocks,
                flow_control_refresh_ns: REFRESH_NS,
            })
            .unwrap()
        };
        let hca = |guid: u64| {
            HcaPlane::new(HcaConfig {
                guid,
                description: format!("hca{guid:x}"),
                mac: mac(guid as u8),
                data_vls,
                mtu: 1024,
                buffer_blocks,
                flow_control_refresh_ns: REFRESH_NS,
                line_rate_bps: None,
            })
            .unwrap()
        };
        let links = vec![
            (End::Hca(0), End::Switch(0, 1)),
            (End::Switch(0, 2), End::Switch(1, 1)),
            (End::Switch(1, 2), End::Hca(1)),
            (End::Switch(0, 3), End::Hca(2)),
        ];
        let mut lab = Lab {
            switches: vec![switch(0x10, &[1, 2, 3]), switch(0x20, &[1, 2])],
            hcas: vec![hca(0xa0), hca(0xb0), hca(0xc0)],
            links,
            wire: VecDeque::new(),
            now: 0,
        };
        lab.settle(10 * US);
        lab
    }

    fn peer(&self, end: End) -> Option<End> {
        self.links.iter().find_map(|&(a, b)| {
            if a == end {
                Some(b)
            } else if b == end {
                Some(a)
            } else {
                None
            }
        })
    }

    /// Delivers frames until the wire is quiet, polling everyone at `step`.
    fn settle(&mut self, step: u64) {
        for _ in 0..100_000 {
            self.now += step;
            self.poll_all();
            if !self.deliver() {
                return;
            }
        }
        panic!("the lab never settled");
    }

    /// Lets `ns` pass (flow-control refreshes fall due), then settles;
    /// everyone is polled at least every refresh period on the way, as the
    /// daemons' loops do (a link silent for 20 of them goes down).
    fn wait(&mut self, ns: u64) {
        let mut left = ns;
        while left > 0 {
            let step = left.min(REFRESH_NS);
            left -= step;
            self.now += step;
            self.poll_all();
            self.settle(US);
        }
    }

    fn poll_all(&mut self) {
        let now = self.now;
        let mut out = Vec::new();
        for (i, switch) in self.switches.iter_mut().enumerate() {
            switch.poll(now, &mut |port, frame| {
                out.push((End::Switch(i, port), frame.to_vec()));
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
    }

    fn send(&mut self, out: Vec<(End, Vec<u8>)>) {
        for (from, frame) in out {
            if let Some(to) = self.peer(from) {
                self.wire.push_back((to, frame));
            }
        }
    }

    /// Everything on the wire now arrives; true if anything did.
    fn deliver(&mut self) -> bool {
        let mut any = false;
        while let Some((to, frame)) = self.wire.pop_front() {
            any = true;
            let now = self.now;
            let mut out = Vec::new();
            match to {
                End::Switch(i, port) => self.switches[i].receive(now, port, &frame, &mut |p, f| {
                    out.push((End::Switch(i, p), f.to_vec()));
                    true
                }),
                End::Hca(i) => self.hcas[i].receive(now, &frame, &mut |f| {
                    out.push((End::Hca(i), f.to_vec()));
                    true
                }),
            }
            self.send(out);
        }
        any
    }

    /// An SMP from hca-a (the harness's "SM"), and its answer.
    fn smp(&mut self, smp: SmpRepr) -> SmpRepr {
        let mut out = Vec::new();
        self.hcas[0].send_from_sm(&smp.to_bytes(), 0xffff, &mut |f| {
            out.push((End::Hca(0), f.to_vec()));
            true
        });
        self.send(out);
        self.settle(US);
        let answers = self.hcas[0].take_for_sm();
        assert_eq!(answers.len(), 1, "one answer to {smp:?}");
        SmpRepr::parse_bytes(&answers[0]).unwrap()
    }

    fn set_lid(&mut self, path: &[u8], lid: u16) {
        let mut info = PortInfoRepr { lid, ..PortInfoRepr::default() };
        info.port_state = PortState::NoChange.into();
        let mut data = [0u8; 64];
        info.emit(&mut PortInfo::new_unchecked(&mut data[..]));
        let answer = self.smp(SmpRepr::directed(Method::Set, 1, AttributeId::PortInfo, 0, path, data).unwrap());
        assert_eq!(answer.status, MadStatus::OK);
    }

    fn set_lft(&mut self, path: &[u8], routes: &[(u16, u8)]) {
        let mut ports = [0xff; 64];
        for &(lid, port) in routes {
            ports[usize::from(lid)] = port;
        }
        let mut data = [0u8; 64];
        LftBlockRepr { ports }.emit(&mut LftBlock::new_unchecked(&mut data[..]));
        let answer =
            self.smp(SmpRepr::directed(Method::Set, 2, AttributeId::LinearForwardingTable, 0, path, data).unwrap());
        assert_eq!(answer.status, MadStatus::OK);
    }

    /// A PortInfo Set of `port` (ignored by CAs) at the end of `path` with
    /// `wanted`'s state and NeighborMTU, the rest left as it is.
    fn set_port(&mut self, path: &[u8], port: u32, state: PortState, neighbor_mtu: u8) -> MadStatus {
        // Read, modify, write: a CA's PortInfo Set carries its LID too.
        let get = SmpRepr::directed(Method::Get, 4, AttributeId::PortInfo, port, path, [0; 64]).unwrap();
        let mut info = PortInfoRepr::parse(&PortInfo::new_unchecked(&self.smp(get).data[..])).unwrap();
        info.neighbor_mtu = neighbor_mtu;
        info.port_state = state.into();
        let mut data = [0u8; 64];
        info.emit(&mut PortInfo::new_unchecked(&mut data[..]));
        self.smp(SmpRepr::directed(Method::Set, 4, AttributeId::PortInfo, port, path, data).unwrap()).status
    }

    /// Every port of the lab: (directed route, PortInfo modifier).
    fn all_ports() -> Vec<(Vec<u8>, u32)> {
        let mut ports = vec![(vec![], 0), (vec![1, 2, 2], 0), (vec![1, 3], 0)];
        ports.extend((1..=3).map(|port| (vec![1], port)));
        ports.extend((1..=2).map(|port| (vec![1, 2], port)));
        ports
    }

    /// The SM's last step by hand: every port Armed, then Active but for
    /// `except`.
    fn activate(&mut self, except: Option<(&[u8], u32)>) {
        for (path, port) in Self::all_ports() {
            assert_eq!(self.set_port(&path, port, PortState::Armed, 0), MadStatus::OK);
        }
        for (path, port) in Self::all_ports() {
            if except != Some((&path, port)) {
                assert_eq!(self.set_port(&path, port, PortState::Active, 0), MadStatus::OK);
            }
        }
    }

    /// LIDs: hca-a 1, hca-b 2, hca-c 3, sw1 10, sw2 11; LFTs by hand; every
    /// port Active.
    fn program_by_hand(&mut self) {
        self.program_lids_and_lfts();
        self.activate(None);
    }

    fn program_lids_and_lfts(&mut self) {
        self.set_lid(&[], 1);
        self.set_lid(&[1, 2, 2], 2);
        self.set_lid(&[1, 3], 3);
        self.set_lid(&[1], 10);
        self.set_lid(&[1, 2], 11);
        self.set_lft(&[1], &[(1, 1), (2, 2), (3, 3), (11, 2)]);
        self.set_lft(&[1, 2], &[(1, 1), (2, 2), (3, 1), (10, 1)]);
    }

    fn send_data(&mut self, from: usize, dlid: u16, sl: u8, payload: &[u8]) -> Result<(), SendError> {
        let now = self.now;
        let mut out = Vec::new();
        let result = self.hcas[from].send(now, dlid, sl, payload, &mut |f| {
            out.push((End::Hca(from), f.to_vec()));
            true
        });
        self.send(out);
        result
    }
}

#[test]
fn links_exchange_flow_control_and_ports_come_up_in_init() {
    let lab = Lab::new(2, 16);
    assert!(lab.hcas.iter().all(HcaPlane::link_ready));
    assert!(lab.hcas.iter().all(|h| h.state() == PortState::Init));
    let status = lab.switches[0].port_status();
    assert_eq!(status.len(), 3);
    assert!(status.iter().all(|p| p.flow_control_ready && p.state == PortState::Init));
    assert!(status.iter().all(|p| p.vls.iter().all(|vl| vl.send_credit_blocks == 16)));
}

#[test]
fn a_silent_peer_takes_the_link_down_and_its_return_brings_it_back_to_init() {
    let mut lab = Lab::new(2, 16);
    let port_3 = |lab: &Lab| lab.switches[0].port_status()[2].state;
    // hca-c's process dies: its frames stop, the carrier stays up.
    let cable = lab.links.remove(3);
    assert_eq!(cable, (End::Switch(0, 3), End::Hca(2)));
    // Within the silence allowed, nothing changes.
    lab.wait(10 * REFRESH_NS);
    assert_eq!(port_3(&lab), PortState::Init);
    lab.wait(15 * REFRESH_NS);
    assert_eq!(port_3(&lab), PortState::Down);
    let switch_info = lab.switches[0].agent().switch.as_ref().unwrap().info;
    assert!(switch_info.port_state_change, "the SM's light sweep sees it");
    // The other ports kept hearing their peers.
    assert!(lab.switches[0].port_status()[..2].iter().all(|p| p.state == PortState::Init));
    // A new process on the same wire: flow control again, the port in Init.
    lab.links.push(cable);
    lab.wait(2 * REFRESH_NS);
    assert_eq!(port_3(&lab), PortState::Init);
}

#[test]
fn lfts_set_by_hand_through_smps_carry_data_with_no_loss_to_a_slow_reader() {
    let mut lab = Lab::new(2, 16);
    lab.program_by_hand();
    assert_eq!(lab.switches[0].lid(), 10);
    assert_eq!(lab.switches[0].lft_entries(), vec![(1, 1), (2, 2), (3, 3), (11, 2)]);
    assert_eq!(lab.hcas[1].lid(), 2);

    // hca-a floods hca-b, which reads one packet every 10th round.
    let payload = [7u8; 256];
    let (mut sent, mut received, mut refused) = (0u32, 0u32, 0u32);
    for round in 0..2_000 {
        while lab.send_data(0, 2, 0, &payload).is_ok() {
            sent += 1;
        }
        refused += 1;
        lab.settle(US);
        if round % 10 == 0 {
            while let Some(packet) = lab.hcas[1].take() {
                assert_eq!((packet.slid, packet.payload.len()), (1, 256));
                received += 1;
                if received % 4 == 0 {
                    break;
                }
            }
        }
    }
    while lab.hcas[1].held() > 0 || lab.switches.iter().any(|s| s.frames_held() > 0) {
        while lab.hcas[1].take().is_some() {
            received += 1;
        }
        lab.settle(US);
    }
    assert_eq!(sent, received, "nothing lost");
    assert!(refused > 0 && lab.hcas[0].counters().xmit_wait > 0, "the sender was held back by credits");
    let sw1_port2 = &lab.switches[0].port_status()[1];
    assert!(sw1_port2.counters.xmit_wait > 0, "sw1 waited on sw2's credit");
    // Data, the LID and LFT Sets to sw2 and hca-b, and a Get and a Set for
    // each of their 3 ports going Armed and then Active.
    assert_eq!(sw1_port2.counters.xmit_packets, u64::from(sent) + 1 + 2 + 12, "data plus the SMPs to sw2 and hca-b");
    assert_eq!(lab.switches[0].port_status()[0].counters.rcv_switch_relay_errors, 0);
}

#[test]
fn a_blocked_vl_does_not_block_another_vl_or_port() {
    let mut lab = Lab::new(2, 16);
    lab.program_by_hand();
    // hca-b never reads: VL0 towards it fills up end to end.
    while lab.send_data(0, 2, 0, &[1u8; 256]).is_ok() {
        lab.settle(US);
    }
    lab.settle(US);
    assert_eq!(lab.send_data(0, 2, 0, &[1u8; 256]), Err(SendError::NoCredit));
    // Credit is per input VL: hca-a's VL0 is held up at sw1's full buffer,
    // but SL1 rides VL1, to the blocked destination and to hca-c alike, and
    // hca-c's own VL0 into sw1 goes to hca-a past the blocked VOQ.
    for _ in 0..5 {
        lab.send_data(0, 2, 1, &[2u8; 64]).unwrap();
        lab.send_data(0, 3, 1, &[3u8; 64]).unwrap();
        lab.send_data(2, 1, 0, &[4u8; 64]).unwrap();
        lab.settle(US);
    }
    let mut vl1 = 0;
    while let Some(packet) = lab.hcas[1].take() {
        vl1 += usize::from(packet.vl == 1);
    }
    assert_eq!(vl1, 5);
    let count = |hca: &mut HcaPlane| core::iter::from_fn(|| hca.take()).count();
    assert_eq!(count(&mut lab.hcas[2]), 5);
    assert_eq!(count(&mut lab.hcas[0]), 5);
    assert!(lab.switches[0].port_status()[1].vls[0].queued > 0, "VL0 towards sw2 still blocked");
}

#[test]
fn unknown_dlid_is_dropped_and_counted_and_malformed_frames_too() {
    let mut lab = Lab::new(1, 16);
    lab.program_by_hand();
    lab.send_data(0, 99, 0, &[0u8; 64]).unwrap();
    lab.settle(US);
    assert_eq!(lab.switches[0].port_status()[0].counters.rcv_switch_relay_errors, 1);
    let mut frame = super::frames::data(
        mac(9),
        &dataplane::wire::ib::LrhRepr {
            vl: 0,
            sl: 0,
            next_header: dataplane::wire::ib::NextHeader::Raw,
            dlid: 2,
            slid: 1,
            payload_len: 64,
        },
        &[0u8; 64],
    )
    .unwrap();
    frame[40] ^= 0xff;
    lab.switches[0].receive(lab.now, 1, &frame, &mut |_, _| true);
    assert_eq!(lab.switches[0].counters().malformed, 1);
}

#[test]
fn data_moves_only_between_active_ports_and_within_the_neighbour_mtu() {
    let mut lab = Lab::new(1, 16);
    lab.program_lids_and_lfts();
    assert_eq!(lab.send_data(0, 3, 0, &[0u8; 64]), Err(SendError::NotActive));

    // All Active but sw1's port 3 (to hca-c), left Armed: it sends no data
    // (discarded and counted there) but takes data in, which activates it.
    lab.activate(Some((&[1], 3)));
    lab.send_data(0, 3, 0, &[1u8; 64]).unwrap();
    lab.settle(US);
    assert!(lab.hcas[2].take().is_none());
    let port3 = &lab.switches[0].port_status()[2];
    assert_eq!((port3.state, port3.counters.xmit_discards), (PortState::Armed, 1));
    lab.send_data(2, 1, 0, &[2u8; 64]).unwrap();
    lab.settle(US);
    assert_eq!(lab.hcas[0].take().map(|p| p.slid), Some(3));
    assert_eq!(lab.switches[0].port_status()[2].state, PortState::Active);
    lab.send_data(0, 3, 0, &[3u8; 64]).unwrap();
    lab.settle(US);
    assert_eq!(lab.hcas[2].take().map(|p| p.slid), Some(1));

    // NeighborMTU 256 on sw1's port 2 (to sw2): 512 bytes do not pass it,
    // 256 do. A NeighborMTU above the port's MTUCap (1024) is refused.
    assert_eq!(lab.set_port(&[1], 2, PortState::NoChange, 1), MadStatus::OK);
    lab.send_data(0, 2, 0, &[4u8; 512]).unwrap();
    lab.send_data(0, 2, 0, &[5u8; 256]).unwrap();
    lab.settle(US);
    let sizes: Vec<usize> = core::iter::from_fn(|| lab.hcas[1].take()).map(|p| p.payload.len()).collect();
    assert_eq!(sizes, [256]);
    assert_eq!(lab.switches[0].port_status()[1].counters.xmit_discards, 1);
    assert_eq!(
        lab.set_port(&[1], 2, PortState::NoChange, 4),
        MadStatus::invalid(crate::packet::InvalidField::InvalidValue)
    );
    // Nothing was left held for the discarded packets.
    assert_eq!(lab.switches.iter().map(SwitchPlane::frames_held).sum::<usize>(), 0);
}

#[test]
fn a_port_state_change_sends_trap_128_to_the_master_sm() {
    let mut lab = Lab::new(1, 16);
    lab.program_by_hand();
    // No master SM named yet: the change is only flagged in SwitchInfo.
    lab.switches[1].set_carrier(lab.now, 2, false, &mut |_, _| true);
    lab.settle(US);
    assert_eq!(lab.switches[1].counters().traps_sent, 0);
    assert!(lab.hcas[0].take_for_sm().is_empty());
    lab.switches[1].set_carrier(lab.now, 2, true, &mut |_, _| true);
    lab.wait(2_000 * US);
    assert_eq!(lab.switches[1].port_status()[1].state, PortState::Init, "flow control exchanged again");

    // The "SM" on hca-a (LID 1) tells sw2 where it is.
    // SubnetTimeout 8: 4.096 us x 2^8, a trap unanswered for 1.05 ms is
    // sent again.
    let mut info = PortInfoRepr { lid: 11, master_sm_lid: 1, subnet_timeout: 8, ..PortInfoRepr::default() };
    info.port_state = PortState::NoChange.into();
    let mut data = [0u8; 64];
    info.emit(&mut PortInfo::new_unchecked(&mut data[..]));
    let answer = lab.smp(SmpRepr::directed(Method::Set, 3, AttributeId::PortInfo, 0, &[1, 2], data).unwrap());
    assert_eq!(answer.status, MadStatus::OK);

    // hca-b's cable is pulled: sw2 traps, LID routed through sw1's LFT.
    let mut out = Vec::new();
    lab.switches[1].set_carrier(lab.now, 2, false, &mut |port, frame| {
        out.push((End::Switch(1, port), frame.to_vec()));
        true
    });
    lab.send(out);
    lab.settle(US);
    let mads = lab.hcas[0].take_for_sm();
    assert_eq!(mads.len(), 1, "one trap");
    let trap = SmpRepr::parse_bytes(&mads[0]).unwrap();
    assert_eq!((trap.method, trap.attribute_id), (Method::Trap, AttributeId::Notice));
    let notice = NoticeRepr::parse(&Notice::new_unchecked(&trap.data[..])).unwrap();
    assert_eq!((notice.trap_number, notice.issuer_lid, notice.lid_address()), (128, 11, 11));
    assert_eq!(lab.switches[1].counters().traps_sent, 1);

    // Unanswered, it comes again after the subnet timeout, the same trap.
    lab.wait(1_000 * US);
    assert!(lab.hcas[0].take_for_sm().is_empty(), "not before the subnet timeout");
    lab.wait(100 * US);
    let again = lab.hcas[0].take_for_sm();
    assert_eq!(again.len(), 1, "repeated");
    assert_eq!(SmpRepr::parse_bytes(&again[0]).unwrap(), trap);
    assert_eq!(lab.switches[1].counters().traps_resent, 1);

    // The SM's TrapRepress ends it, unanswered.
    let mut repress = trap;
    repress.method = Method::TrapRepress;
    let frame = crate::transport::inband::encode_frame(&repress.to_bytes(), 11, 1, mac(0xa0));
    lab.send(vec![(End::Hca(0), frame)]);
    lab.settle(US);
    assert_eq!(lab.switches[1].counters().traps_repressed, 1);
    assert!(lab.hcas[0].take_for_sm().is_empty());
    lab.wait(100_000 * US);
    assert!(lab.hcas[0].take_for_sm().is_empty(), "not repeated once repressed");
    assert_eq!(lab.switches[1].counters().traps_resent, 1);
}

#[test]
fn vl_arbitration_tables_set_by_smp_program_the_output_port() {
    use crate::packet::attributes::{VlArbBlock, VlArbEntry, VlArbRepr, VlArbTable, vl_arb_modifier};
    use qos::ib::arbiter::ArbitrationEntry;
    // The default as the agent reads it: one low-priority table, 32 units
    // per VL.
    let mut lab = Lab::new(2, 16);
    let get = SmpRepr::directed(
        Method::Get,
        8,
        AttributeId::VlArbitrationTable,
        vl_arb_modifier(VlArbBlock::LowLower, 2),
        &[1],
        [0; 64],
    );
    let read = VlArbRepr::parse(&VlArbTable::new_unchecked(&lab.smp(get.unwrap()).data[..])).unwrap();
    assert_eq!(&read.entries[..2], &[VlArbEntry { vl: 0, weight: 32 }, VlArbEntry { vl: 1, weight: 32 }]);

    // One VL alone in the high-priority table, with no LimitOfHighPriority.
    for first in [1u8, 0] {
        let mut lab = Lab::new(2, 16);
        lab.program_by_hand();
        let mut high = VlArbRepr { entries: [VlArbEntry::default(); 32] };
        high.entries[0] = VlArbEntry { vl: first, weight: 255 };
        let mut data = [0u8; 64];
        high.emit(&mut VlArbTable::new_unchecked(&mut data[..]));
        let modifier = vl_arb_modifier(VlArbBlock::HighLower, 2);
        let set = SmpRepr::directed(Method::Set, 9, AttributeId::VlArbitrationTable, modifier, &[1], data);
        assert_eq!(lab.smp(set.unwrap()).status, MadStatus::OK);
        let mut info = PortInfoRepr { vl_high_limit: 255, ..PortInfoRepr::default() };
        info.port_state = PortState::NoChange.into();
        let mut data = [0u8; 64];
        info.emit(&mut PortInfo::new_unchecked(&mut data[..]));
        let answer = lab.smp(SmpRepr::directed(Method::Set, 10, AttributeId::PortInfo, 2, &[1], data).unwrap());
        let read = PortInfoRepr::parse(&PortInfo::new_unchecked(&answer.data[..])).unwrap();
        assert_eq!((answer.status, read.vl_high_limit), (MadStatus::OK, 255));
        // The engine's arbiter for sw1's port 2 has them (qos::ib::arbiter's
        // tests show what the tables do to the order of packets).
        let (high, low, limit) = lab.switches[0].engine().arbiter(2).unwrap().tables();
        assert_eq!((high[0].vl, high[0].weight, limit), (first, 255, 255));
        assert!(high[1..].iter().all(|entry| entry.weight == 0));
        assert_eq!(&low[..2], &[ArbitrationEntry { vl: 0, weight: 32 }, ArbitrationEntry { vl: 1, weight: 32 }]);
        let port3_high = lab.switches[0].engine().arbiter(3).unwrap().tables().0;
        assert!(port3_high.iter().all(|entry| entry.weight == 0), "port 3 untouched");
    }
}

#[test]
fn malformed_smps_get_iba_statuses() {
    let mut lab = Lab::new(1, 16);
    // Unsupported attribute (a Get of Notice), unsupported method (Send).
    let answer = lab.smp(SmpRepr::directed(Method::Get, 5, AttributeId::Notice, 0, &[1], [0; 64]).unwrap());
    assert_eq!(answer.status, MadStatus::invalid(crate::packet::InvalidField::MethodAttributeUnsupported));
    let answer = lab.smp(SmpRepr::directed(Method::Send, 6, AttributeId::NodeInfo, 0, &[1], [0; 64]).unwrap());
    assert_eq!(answer.status, MadStatus::invalid(crate::packet::InvalidField::MethodUnsupported));
    // Class version 2: "bad version", carried back through sw1, which
    // cannot parse it either. Sent by hand, stepped as hca-a's agent would:
    // `send_from_sm` refuses what it cannot parse.
    let mut smp = SmpRepr::directed(Method::Get, 7, AttributeId::NodeInfo, 0, &[1, 2], [0; 64]).unwrap();
    if let crate::packet::SmpRouting::DirectedRoute { hop_pointer, .. } = &mut smp.routing {
        *hop_pointer = 1;
    }
    let mut bytes = smp.to_bytes();
    bytes[2] = 2;
    let frame = crate::transport::inband::encode_frame(&bytes, 0xffff, 0, mac(0xa0));
    lab.send(vec![(End::Hca(0), frame)]);
    lab.settle(US);
    let answers = lab.hcas[0].take_for_sm();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0][2], 2, "the request's class version kept");
    let mut patched = answers[0];
    patched[2] = 1;
    let answer = SmpRepr::parse_bytes(&patched).unwrap();
    assert_eq!(answer.method, Method::GetResp);
    assert_eq!(answer.status, MadStatus::invalid(crate::packet::InvalidField::BadVersion));
    assert_eq!(lab.switches[1].counters().bad_version, 1);
}

#[test]
fn the_sm_on_a_switch_brings_the_plane_up_and_every_pair_exchanges_data() {
    let mut lab = Lab::new(2, 16);
    let mut sm = SubnetManager::new(
        SmConfig { timeout_ns: 20_000 * US, light_sweep_interval_ns: 1_000_000 * US, ..SmConfig::default() },
        LidMap::default(),
    );
    {
        let agent = lab.switches[0].agent_mut();
        agent.ports[0].capability_mask |= crate::sm::CAPABILITY_IS_SM;
        sm.set_port_guid(agent.node_info.port_guid);
        agent.sm_info = Some(sm.sm_info());
    }
    sm.start(lab.now);
    // The SM on sw1's port 0, stepped with the lab until the fabric is up.
    let run = |lab: &mut Lab, sm: &mut SubnetManager| {
        let mut events = Vec::new();
        for _ in 0..10_000 {
            let mut out = Vec::new();
            while let Some(smp) = sm.poll_transmit(lab.now) {
                lab.switches[0].send_from_sm(lab.now, &smp.bytes, smp.dlid, &mut |p, f| {
                    out.push((End::Switch(0, p), f.to_vec()));
                    true
                });
            }
            lab.send(out);
            lab.settle(US);
            for mad in lab.switches[0].take_for_sm() {
                sm.handle_mad(lab.now, &mad);
            }
            sm.handle_timer(lab.now);
            let before = events.len();
            events.extend(core::iter::from_fn(|| sm.poll_event()));
            if events[before..].iter().any(|e| matches!(e, SmEvent::FabricUp { .. })) {
                break;
            }
        }
        events
    };
    let up = run(&mut lab, &mut sm).iter().any(|e| matches!(e, SmEvent::FabricUp { .. }));
    assert!(up, "fabric up");
    assert_eq!(sm.status().switches, 2);
    assert_eq!(sm.status().cas, 3);
    assert!(lab.hcas.iter().all(|h| h.state() == PortState::Active && h.lid() != 0));
    assert!(lab.switches.iter().all(|s| s.port_status().iter().all(|p| p.state == PortState::Active)));
    let lids: Vec<u16> = lab.hcas.iter().map(HcaPlane::lid).collect();
    for from in 0..3 {
        for to in 0..3 {
            if from != to {
                lab.send_data(from, lids[to], 0, &[from as u8; 32]).unwrap();
                lab.settle(US);
                let packet = lab.hcas[to].take().expect("delivered");
                assert_eq!(packet.slid, lids[from]);
            }
        }
    }

    // hca-c's cable on the SM's own switch is pulled: the switch's trap 128
    // goes to the SM beside it, whose TrapRepress (LID routed to the
    // switch's own LID) must reach that agent, or the trap repeats and
    // every repeat is another heavy sweep.
    lab.switches[0].set_carrier(lab.now, 3, false, &mut |_, _| true);
    let events = run(&mut lab, &mut sm);
    assert!(events.iter().any(|e| matches!(e, SmEvent::Trap { number: 128, .. })), "{events:?}");
    assert_eq!(lab.switches[0].counters().traps_repressed, 1);
    lab.wait(100 * REFRESH_NS);
    assert_eq!(lab.switches[0].counters().traps_resent, 0);
    assert!(lab.switches[0].take_for_sm().is_empty(), "no trap repeated");
}

mod arbitrary_frames {
    use super::*;
    use proptest::prelude::*;

    /// 0x88B5 frames with any delimiter, LRH, payload and CRC (fixed up
    /// half the time so that they get past the CRC checks).
    fn frame() -> impl Strategy<Value = Vec<u8>> {
        (proptest::collection::vec(any::<u8>(), 0..400), any::<bool>()).prop_map(|(body, fix_crc)| {
            let mut frame = vec![0xff; 12];
            frame.extend_from_slice(&[0x88, 0xb5]);
            frame.extend_from_slice(&body);
            if fix_crc && frame.len() > 24 && frame[14] == 0xfb {
                let mut packet = dataplane::wire::ib::DataPacket::new_unchecked(&mut frame[16..]);
                if packet.check_len().is_ok() {
                    packet.fill_vcrc();
                }
            }
            frame
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
        #[test]
        fn any_frame_on_any_port_is_taken_or_counted_never_a_panic(
            frames in proptest::collection::vec((0u8..6, frame()), 1..20),
        ) {
            let mut lab = Lab::new(2, 16);
            lab.program_by_hand();
            for (port, frame) in &frames {
                let now = lab.now;
                lab.switches[0].receive(now, *port, frame, &mut |_, _| true);
                lab.hcas[0].receive(now, frame, &mut |_| true);
            }
            lab.settle(US);
            // The fabric still carries data afterwards.
            lab.send_data(2, 1, 0, &[9u8; 64]).unwrap();
            lab.settle(US);
            prop_assert!(core::iter::from_fn(|| lab.hcas[0].take()).any(|p| p.slid == 3));
        }
    }
}
