//! A host NIC running the RoCE-like endpoint of `qos::endpoint`: queue
//! pairs (one per destination) sending messages as RoCEv2 packets, each
//! paced at its DCQCN rate; the NIC's line, which obeys PFC pauses of the
//! data priority; the receiver, which reorders, counts and answers CE marks
//! with CNPs.
//!
//! Packets are real frames: Ethernet, IPv4 (DSCP 26, ECT(0) with ECN),
//! UDP to 4791 from a per-QP source port (the ECMP entropy), the BTH, the
//! payload and an ICRC slot. The switch pipelines route them as any other.

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use dataplane::pipeline::{FramePool, FrameRef};
use dataplane::wire::mac_control::{MacControlPacket, MacControlRepr};
use dataplane::wire::{
    Ecn, EtherType, EthernetAddress, EthernetFrame, EthernetRepr, IpProtocol, Ipv4Packet, Ipv4Repr, UdpPacket, ethernet,
};
use qos::endpoint::ROCEV2_UDP_PORT;
use qos::endpoint::bth::{self, Opcode};
use qos::endpoint::dcqcn::{Params, ReactionPoint};
use qos::endpoint::pacer::Pacer;
use qos::endpoint::receiver::{Arrival, DEFAULT_CNP_INTERVAL_NS, Receiver};
use qos::shaper::LineRate;

use super::experiment::{CNP_DSCP, DATA_PRIORITY};

/// Ethernet + IPv4 + UDP + BTH.
pub const HEADERS_LEN: usize = 14 + 20 + 8 + bth::HEADER_LEN;
const IP_OFFSET: usize = 14;
const UDP_OFFSET: usize = 34;
const BTH_OFFSET: usize = 42;

/// A frame of `payload` bytes: headers, payload, ICRC.
pub fn frame_len(payload: u32) -> usize {
    HEADERS_LEN + payload as usize + bth::ICRC_LEN
}

/// The message a QP is sending.
#[derive(Debug, Clone, Copy)]
struct Current {
    message: u32,
    bytes: u64,
    /// Bytes still to send.
    remaining: u64,
    first_psn: u32,
}

/// A queue pair: messages from one host to one other, in order.
pub struct Connection {
    pub src: u32,
    pub dst: u32,
    /// Headers of every packet, with the per-packet fields to fill.
    template: [u8; HEADERS_LEN],
    psn: u32,
    /// Messages released and waiting for the QP.
    pending: VecDeque<u32>,
    /// The message being sent, and its bytes still to send.
    current: Option<Current>,
    /// Messages fully sent, not yet fully received (in order), with their first PSN.
    pub in_flight: VecDeque<(u32, u32)>,
    /// PSNs the receiver asked for again (NAK), sent ahead of new data.
    retransmit: VecDeque<u32>,
    pacer: Pacer,
    dcqcn: Option<ReactionPoint>,
    /// In the host's active list.
    active: bool,
    /// Background traffic: on the NIC's background priority, after the
    /// collectives' packets when the NIC serves them strictly first.
    pub background: bool,
}

/// What a connection needs to know at build time.
pub struct ConnectionSpec {
    pub src_mac: EthernetAddress,
    pub gateway_mac: EthernetAddress,
    pub src_ip: Ipv4Addr,
    pub dst_ip: Ipv4Addr,
    pub qp: u32,
    pub ecn: bool,
    pub dcqcn: bool,
    pub link_bps: u64,
    /// DSCP of its data packets.
    pub dscp: u8,
    pub background: bool,
}

impl Connection {
    pub fn new(src: u32, dst: u32, spec: &ConnectionSpec) -> Connection {
        let mut template = [0u8; HEADERS_LEN];
        EthernetRepr { src_addr: spec.src_mac, dst_addr: spec.gateway_mac, ethertype: EtherType::Ipv4 }
            .emit(&mut EthernetFrame::new_unchecked(&mut template[..]));
        write_ip_udp(&mut template, spec.src_ip, spec.dst_ip, spec.dscp, spec.ecn, entropy_port(spec.qp), 0);
        let mut bth = bth::Packet::new_unchecked(&mut template[BTH_OFFSET..]);
        bth::Repr {
            opcode: Opcode::SendMiddle,
            solicited: false,
            pad_count: 0,
            pkey: bth::DEFAULT_PKEY,
            dest_qp: spec.qp,
            ack_request: false,
            psn: 0,
        }
        .emit(&mut bth);
        Connection {
            src,
            dst,
            template,
            psn: 0,
            pending: VecDeque::new(),
            current: None,
            in_flight: VecDeque::new(),
            retransmit: VecDeque::new(),
            pacer: Pacer::new(spec.link_bps, DATA_PRIORITY, spec.link_bps, 0),
            dcqcn: spec.dcqcn.then(|| ReactionPoint::new(Params::default(), spec.link_bps, 0)),
            active: false,
            background: spec.background,
        }
    }

    /// DCQCN's current rate, if it runs.
    pub fn rate_bps(&self) -> Option<u64> {
        self.dcqcn.as_ref().map(ReactionPoint::rate_bps)
    }

    pub fn cnps(&self) -> u64 {
        self.dcqcn.as_ref().map_or(0, ReactionPoint::cnps)
    }
}

/// RC Acknowledge (IBA Table 38): here a NAK asking for one PSN again.
const NAK_OPCODE: u8 = 0x11;

fn opcode_for(first: bool, last: bool) -> Opcode {
    match (first, last) {
        (true, true) => Opcode::SendOnly,
        (true, false) => Opcode::SendFirst,
        (false, false) => Opcode::SendMiddle,
        (false, true) => Opcode::SendLast,
    }
}

impl Connection {
    /// The payload length and opcode packet `psn` had, if its message is
    /// not yet delivered whole.
    fn packet_of(&self, psn: u32, mtu: u64, message_bytes: &dyn Fn(u32) -> u64) -> Option<(u32, Opcode)> {
        let sent = self.in_flight.iter().map(|&(m, first)| (m, message_bytes(m), first));
        let current = self.current.iter().map(|c| (c.message, c.bytes, c.first_psn));
        for (_, bytes, first_psn) in sent.chain(current) {
            let bytes = bytes.max(1);
            let packets = bytes.div_ceil(mtu);
            let index = u64::from(psn.wrapping_sub(first_psn) & (bth::PSN_MODULUS - 1));
            if index < packets {
                let last = index == packets - 1;
                let payload = if last { bytes - (packets - 1) * mtu } else { mtu };
                return Some((payload as u32, opcode_for(index == 0, last)));
            }
        }
        None
    }
}

/// The UDP source port of a QP: RoCEv2 puts flow entropy there.
fn entropy_port(qp: u32) -> u16 {
    let mixed = qp.wrapping_mul(0x9e37_79b9) >> 16;
    0xc000 | (mixed as u16 & 0x3fff)
}

fn write_ip_udp(frame: &mut [u8], src: Ipv4Addr, dst: Ipv4Addr, dscp: u8, ecn: bool, sport: u16, payload: usize) {
    let udp_len = 8 + bth::HEADER_LEN + payload + bth::ICRC_LEN;
    Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        protocol: IpProtocol::Udp,
        payload_len: udp_len,
        ttl: 64,
        dscp,
        ecn: if ecn { Ecn::Ect0 } else { Ecn::NotEct },
        ident: 0,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
    }
    .emit(&mut Ipv4Packet::new_unchecked(&mut frame[IP_OFFSET..]));
    let mut udp = UdpPacket::new_unchecked(&mut frame[UDP_OFFSET..]);
    udp.set_src_port(sport);
    udp.set_dst_port(ROCEV2_UDP_PORT);
    udp.set_len(udp_len as u16);
    // RoCEv2 leaves the UDP checksum zero (the ICRC covers the payload).
    udp.set_checksum(0);
}

/// Counters of one NIC.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct NicCounters {
    pub data_frames_sent: u64,
    pub cnps_sent: u64,
    pub cnps_received: u64,
    /// NAKs for packets beyond the receiver's reorder window, sent and received.
    pub naks_sent: u64,
    pub naks_received: u64,
    /// Messages sent again whole after a retransmission timeout.
    pub timeouts: u64,
    pub pfc_frames_received: u64,
    /// Frames that did not parse as anything this NIC takes.
    pub malformed: u64,
    /// Unicast frames for another MAC (a bridge flooding an unknown one).
    pub not_ours: u64,
}

/// One host NIC.
pub struct Host {
    pub mac: EthernetAddress,
    pub gateway_mac: EthernetAddress,
    pub ip: Ipv4Addr,
    line: LineRate,
    /// PFC obedience on the data priority, at line rate.
    nic: Pacer,
    /// PFC obedience on the background's priority when it is another.
    background_nic: Option<Pacer>,
    /// Serve the collectives' connections strictly before the background's.
    strict: bool,
    /// Connections with a message to send, served round robin.
    active: Vec<u32>,
    cursor: usize,
    /// CNPs to send: (destination IP, the sender's QP).
    cnps: VecDeque<(Ipv4Addr, u32)>,
    /// NAKs to send: (destination IP, the sender's QP, the PSN wanted again).
    naks: VecDeque<(Ipv4Addr, u32, u32)>,
    /// QPs with packets held behind a hole: (QP, the hole's PSN, since when,
    /// NAKed). A hole that outlives [`HOLE_TIMEOUT_NS`] is a lost packet.
    holes: Vec<(u32, u32, u64, bool)>,
    pub receiver: Receiver,
    /// When the host asked to be woken (`u64::MAX`: not asked).
    pub wake_at: u64,
    pub counters: NicCounters,
    mtu: u32,
}

/// What the host put on its link.
pub struct Sent {
    /// The frame, in the simulator's pool (one reference, the cable's).
    pub frame: FrameRef,
    pub len: usize,
    /// The last packet of this message (first time): start its retransmission timer.
    pub message_sent: Option<u32>,
}

/// What a received frame did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Received {
    /// Messages now completely received on this QP (connection id).
    pub completed: Option<(u32, u64)>,
    /// The host may have something to send now (a CNP, a resume).
    pub wake: bool,
}

impl Host {
    pub fn new(
        mac: EthernetAddress,
        gateway_mac: EthernetAddress,
        ip: Ipv4Addr,
        link_bps: u64,
        mtu: u32,
        receive_qps: usize,
    ) -> Host {
        Host {
            mac,
            gateway_mac,
            ip,
            line: LineRate::new(link_bps, 0),
            nic: Pacer::new(link_bps, DATA_PRIORITY, link_bps, 0),
            background_nic: None,
            strict: false,
            active: Vec::new(),
            cursor: 0,
            cnps: VecDeque::new(),
            naks: VecDeque::new(),
            holes: Vec::new(),
            receiver: Receiver::new(receive_qps, DEFAULT_CNP_INTERVAL_NS),
            wake_at: u64::MAX,
            counters: NicCounters::default(),
            mtu,
        }
    }

    /// Background traffic on priority `priority` (a pacer of its own if it
    /// is not the data priority); the collectives' connections served
    /// strictly first if `strict`.
    pub fn set_background(&mut self, priority: u8, strict: bool, link_bps: u64) {
        self.background_nic = (priority != DATA_PRIORITY).then(|| Pacer::new(link_bps, priority, link_bps, 0));
        self.strict = strict;
    }

    /// Time this NIC's data priority was held by PFC with frames ready.
    pub fn paused_ns(&self) -> u64 {
        self.nic.counters().paused_ns
    }

    pub fn pauses_obeyed(&self) -> u64 {
        self.nic.counters().pauses_obeyed
    }

    /// A message of `bytes` on connection `id` is released.
    pub fn release(&mut self, connections: &mut [Connection], id: u32, message: u32, bytes: u64) {
        let connection = &mut connections[id as usize];
        if connection.current.is_none() {
            connection.current = Some(Current { message, bytes, remaining: bytes.max(1), first_psn: connection.psn });
        } else {
            connection.pending.push_back(message);
        }
        if !connection.active {
            connection.active = true;
            self.active.push(id);
        }
    }

    /// Message `message` on `id` is still not received a timeout after its
    /// last packet left: send all of it again (go-back-N over the message;
    /// the receiver discards what it already has as duplicates).
    pub fn retransmit_message(&mut self, connections: &mut [Connection], id: u32, message: u32, bytes: u64) {
        let connection = &mut connections[id as usize];
        let Some(&(_, first_psn)) = connection.in_flight.iter().find(|(m, _)| *m == message) else { return };
        let packets = bytes.max(1).div_ceil(u64::from(self.mtu)) as u32;
        for i in 0..packets {
            connection.retransmit.push_back((first_psn + i) & (bth::PSN_MODULUS - 1));
        }
        self.counters.timeouts += 1;
        if !connection.active {
            connection.active = true;
            self.active.push(id);
        }
    }

    /// Puts the next frame on the line if one may go at `now`: a CNP first,
    /// then data round robin over the QPs whose pacers allow it. Otherwise
    /// `Err(when)`: the time to try again (`u64::MAX`: nothing to send).
    pub fn send(
        &mut self,
        now: u64,
        connections: &mut [Connection],
        message_bytes: &dyn Fn(u32) -> u64,
        pool: &mut FramePool,
    ) -> Result<Sent, u64> {
        if !self.line.idle(now) {
            return Err(self.line.free_at(now));
        }
        if let Some((dst, qp)) = self.cnps.pop_front() {
            return Ok(self.send_cnp(now, dst, qp, pool));
        }
        if let Some((dst, qp, psn)) = self.naks.pop_front() {
            return Ok(self.send_nak(now, dst, qp, psn, pool));
        }
        if self.active.is_empty() {
            return Err(u64::MAX);
        }
        let paused = self.nic.paused(now);
        let background_nic = self.background_nic.as_ref().unwrap_or(&self.nic);
        let background_paused = self.background_nic.as_ref().map_or(paused, |nic| nic.paused(now));
        // Pauses end by time or by an XON frame (which wakes the host).
        let resume = |nic: &Pacer| nic.next_send_ns().unwrap_or(u64::MAX);
        if paused && background_paused {
            return Err(resume(&self.nic).min(resume(background_nic)));
        }
        let mut earliest = match (paused, background_paused) {
            (true, _) => resume(&self.nic),
            (_, true) => resume(background_nic),
            _ => u64::MAX,
        };
        let count = self.active.len();
        // Strictly: the collectives' connections first, then the background's.
        let passes = if self.strict { 2 } else { 1 };
        for step in 0..count * passes {
            let index = (self.cursor + step) % count;
            let id = self.active[index];
            let connection = &mut connections[id as usize];
            if self.strict && connection.background != (step >= count) {
                continue;
            }
            if if connection.background { background_paused } else { paused } {
                continue;
            }
            if let Some(dcqcn) = connection.dcqcn.as_mut() {
                dcqcn.advance(now);
                connection.pacer.set_rate_bps(dcqcn.rate_bps());
            }
            let ready_at = connection.pacer.next_send_ns().unwrap_or(u64::MAX);
            if ready_at > now {
                earliest = earliest.min(ready_at);
                continue;
            }
            self.cursor = index + 1;
            let sent = self.send_data(now, connection, message_bytes, pool);
            if connection.current.is_none() && connection.retransmit.is_empty() {
                connection.active = false;
                self.active.swap_remove(index);
                if self.cursor > self.active.len() {
                    self.cursor = 0;
                }
            }
            match sent {
                Some(sent) => return Ok(sent),
                // Only stale repeat requests: the list changed, look again.
                None => return self.send(now, connections, message_bytes, pool),
            }
        }
        Err(earliest)
    }

    fn send_data(
        &mut self,
        now: u64,
        connection: &mut Connection,
        message_bytes: &dyn Fn(u32) -> u64,
        pool: &mut FramePool,
    ) -> Option<Sent> {
        let mtu = u64::from(self.mtu);
        let mut repeat = None;
        while let Some(psn) = connection.retransmit.pop_front() {
            // A PSN of a message delivered whole since needs no repeat.
            if let Some((payload, opcode)) = connection.packet_of(psn, mtu, message_bytes) {
                repeat = Some((psn, payload, opcode));
                break;
            }
        }
        let mut message_sent = None;
        let (psn, payload, opcode) = match repeat {
            Some(packet) => packet,
            None => {
                let current = connection.current.as_mut()?;
                let payload = current.remaining.min(mtu) as u32;
                let first = current.remaining == current.bytes.max(1);
                let last = u64::from(payload) == current.remaining;
                current.remaining -= u64::from(payload);
                let psn = connection.psn;
                connection.psn = (connection.psn + 1) & (bth::PSN_MODULUS - 1);
                if last {
                    message_sent = Some(current.message);
                    connection.in_flight.push_back((current.message, current.first_psn));
                    let next_psn = connection.psn;
                    connection.current = connection.pending.pop_front().map(|next| {
                        let bytes = message_bytes(next);
                        Current { message: next, bytes, remaining: bytes.max(1), first_psn: next_psn }
                    });
                }
                (psn, payload, opcode_for(first, last))
            }
        };
        let len = frame_len(payload);
        // The payload's bytes are whatever the slot held: nothing reads them.
        let (buffer, frame) = pool.alloc_frame(len);
        frame[..HEADERS_LEN].copy_from_slice(&connection.template);
        let udp_len = (8 + bth::HEADER_LEN + payload as usize + bth::ICRC_LEN) as u16;
        {
            let mut ip = Ipv4Packet::new_unchecked(&mut frame[IP_OFFSET..]);
            ip.set_total_len(20 + udp_len);
            ip.fill_checksum();
        }
        UdpPacket::new_unchecked(&mut frame[UDP_OFFSET..]).set_len(udp_len);
        let mut bth = bth::Packet::new_unchecked(&mut frame[BTH_OFFSET..]);
        bth.set_opcode(opcode);
        bth.set_psn(psn);
        self.line.send(now, len as u32);
        let wire_bytes = len as u64 + 4;
        connection.pacer.on_sent(wire_bytes, now);
        match self.background_nic.as_mut().filter(|_| connection.background) {
            Some(nic) => nic.on_sent(wire_bytes, now),
            None => self.nic.on_sent(wire_bytes, now),
        }
        if let Some(dcqcn) = connection.dcqcn.as_mut() {
            dcqcn.on_sent(wire_bytes, now);
            connection.pacer.set_rate_bps(dcqcn.rate_bps());
        }
        self.counters.data_frames_sent += 1;
        Some(Sent { frame: buffer, len, message_sent })
    }

    fn send_nak(&mut self, now: u64, dst: Ipv4Addr, qp: u32, psn: u32, pool: &mut FramePool) -> Sent {
        let sent = self.send_cnp(now, dst, qp, pool);
        let frame = pool.bytes_mut(sent.frame);
        let mut bth = bth::Packet::new_unchecked(&mut frame[BTH_OFFSET..]);
        bth.set_opcode(Opcode::Other(NAK_OPCODE));
        bth.set_psn(psn);
        self.counters.cnps_sent -= 1;
        self.counters.naks_sent += 1;
        sent
    }

    fn send_cnp(&mut self, now: u64, dst: Ipv4Addr, qp: u32, pool: &mut FramePool) -> Sent {
        let payload = bth::CNP_PAYLOAD_LEN;
        let len = HEADERS_LEN + payload + bth::ICRC_LEN;
        let (buffer, frame) = pool.alloc_frame(len);
        frame.fill(0);
        EthernetRepr { src_addr: self.mac, dst_addr: self.gateway_mac, ethertype: EtherType::Ipv4 }
            .emit(&mut EthernetFrame::new_unchecked(&mut frame[..]));
        write_ip_udp(frame, self.ip, dst, CNP_DSCP, false, entropy_port(qp), payload);
        Ipv4Packet::new_unchecked(&mut frame[IP_OFFSET..]).fill_checksum();
        bth::Repr::cnp(qp).emit(&mut bth::Packet::new_unchecked(&mut frame[BTH_OFFSET..]));
        self.line.send(now, len as u32);
        self.counters.cnps_sent += 1;
        Sent { frame: buffer, len, message_sent: None }
    }

    /// A frame arrived whole at `now`.
    pub fn receive(
        &mut self,
        now: u64,
        frame: &[u8],
        connections: &mut [Connection],
        src_of: impl Fn(u32) -> Ipv4Addr,
    ) -> Received {
        let mut out = Received::default();
        let Ok(eth) = EthernetFrame::new_checked(frame) else {
            self.counters.malformed += 1;
            return out;
        };
        // Group frames (PFC's) are everyone's.
        let dst = eth.dst_addr();
        if dst != self.mac && dst.is_unicast() {
            self.counters.not_ours += 1;
            return out;
        }
        match eth.ethertype() {
            EtherType::MacControl => {
                let repr = MacControlPacket::new_checked(&frame[ethernet::HEADER_LEN..])
                    .ok()
                    .and_then(|p| MacControlRepr::parse(&p).ok());
                if let Some(MacControlRepr::PriorityFlowControl { class_enable, quanta }) = repr {
                    self.counters.pfc_frames_received += 1;
                    self.nic.on_pfc(class_enable, &quanta, now);
                    if let Some(nic) = self.background_nic.as_mut() {
                        nic.on_pfc(class_enable, &quanta, now);
                    }
                    out.wake = true;
                } else {
                    self.counters.malformed += 1;
                }
            }
            EtherType::Ipv4 => {
                let Some((ce, bth, payload_len)) = parse_roce(frame) else {
                    self.counters.malformed += 1;
                    return out;
                };
                if bth.opcode == Opcode::Other(NAK_OPCODE) {
                    self.counters.naks_received += 1;
                    if let Some(connection) = connections.get_mut(bth.dest_qp as usize) {
                        connection.retransmit.push_back(bth.psn);
                        if !connection.active {
                            connection.active = true;
                            self.active.push(bth.dest_qp);
                        }
                        out.wake = true;
                    }
                    return out;
                }
                if bth.opcode == Opcode::Cnp {
                    self.counters.cnps_received += 1;
                    if let Some(dcqcn) = connections.get_mut(bth.dest_qp as usize).and_then(|c| c.dcqcn.as_mut()) {
                        dcqcn.on_cnp(now);
                        let rate = dcqcn.rate_bps();
                        connections[bth.dest_qp as usize].pacer.set_rate_bps(rate);
                    }
                    return out;
                }
                let before = self.receiver.counters();
                let arrival = Arrival {
                    qp: bth.dest_qp,
                    psn: bth.psn,
                    opcode: bth.opcode,
                    payload_len,
                    congestion_experienced: ce,
                };
                match self.receiver.on_arrival(arrival, now) {
                    Ok(outcome) => {
                        if let Some(qp) = outcome.cnp_for_qp {
                            self.cnps.push_back((src_of(qp), qp));
                            out.wake = true;
                        }
                        let after = self.receiver.counters();
                        if after.beyond_window > before.beyond_window {
                            // Beyond the reorder window: lost to the receiver.
                            // Ask for it again (selective repeat, as IRN does).
                            self.naks.push_back((src_of(bth.dest_qp), bth.dest_qp, bth.psn));
                            out.wake = true;
                        }
                        if after.out_of_order > before.out_of_order {
                            self.check_hole(now, bth.dest_qp, &src_of);
                        }
                        let completed = after.messages_completed - before.messages_completed;
                        if completed > 0 {
                            out.completed = Some((bth.dest_qp, completed));
                        }
                    }
                    Err(_) => self.counters.malformed += 1,
                }
            }
            _ => self.counters.malformed += 1,
        }
        out
    }
}

/// How long a PSN may be missing while later ones arrive before the
/// receiver asks for it again: longer than any reordering the fabric's
/// queues cause, so a packet merely late is not repeated.
pub const HOLE_TIMEOUT_NS: u64 = 200_000;

impl Host {
    /// An out-of-order arrival on `qp`: remember when its hole opened, and
    /// NAK the hole's PSN once it has been open longer than the timeout
    /// (again each timeout while it stays open).
    fn check_hole(&mut self, now: u64, qp: u32, src_of: &impl Fn(u32) -> Ipv4Addr) {
        let Some(expected) = self.receiver.expected_psn(qp) else { return };
        self.holes.retain(|&(q, psn, _, _)| q != qp || psn == expected);
        match self.holes.iter_mut().find(|h| h.0 == qp) {
            None => self.holes.push((qp, expected, now, false)),
            Some(hole) if now.saturating_sub(hole.2) >= HOLE_TIMEOUT_NS => {
                hole.2 = now;
                hole.3 = true;
                self.naks.push_back((src_of(qp), qp, expected));
            }
            Some(_) => {}
        }
    }
}

/// (CE, BTH, payload bytes) of a RoCEv2 frame.
fn parse_roce(frame: &[u8]) -> Option<(bool, bth::Repr, u32)> {
    let ip = Ipv4Packet::new_checked(frame.get(IP_OFFSET..)?).ok()?;
    if ip.protocol() != IpProtocol::Udp {
        return None;
    }
    let ce = ip.ecn() == Ecn::Ce;
    let udp = UdpPacket::new_checked(frame.get(UDP_OFFSET..)?).ok()?;
    if udp.dst_port() != ROCEV2_UDP_PORT {
        return None;
    }
    let packet = bth::Packet::new_checked(frame.get(BTH_OFFSET..)?).ok()?;
    let repr = bth::Repr::parse(&packet).ok()?;
    let payload = (frame.len().checked_sub(HEADERS_LEN + bth::ICRC_LEN)?) as u32;
    Some((ce, repr, payload))
}
