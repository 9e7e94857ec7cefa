//! RoCEv2-like traffic on the host's link: `fabric-host send` and
//! `fabric-host recv`.
//!
//! A data frame is Ethernet / IPv4 (DSCP as asked, ECT(0)) / UDP to 4791 /
//! BTH (RC SEND First..Last, the QP, the PSN) / payload / ICRC (zeros: the
//! switch never checks it). A CNP is the same stack with BTH opcode 0x81
//! and 16 bytes of zeros (RoCEv2 Annex A17), sent on DSCP 48.

use std::net::{Ipv4Addr, UdpSocket};
use std::time::Duration;

use dataplane::io::PortIo as _;
use dataplane::wire::ipv4::{Ecn, Ipv4Packet, Ipv4Repr};
use dataplane::wire::mac_control::{MacControlPacket, MacControlRepr};
use dataplane::wire::{
    EtherType, EthernetAddress, EthernetFrame, EthernetRepr, IpProtocol, UdpPacket, UdpRepr, ethernet, ipv4, udp,
};
use qos::endpoint::bth::{self, Opcode};
use qos::endpoint::dcqcn::{Params, ReactionPoint};
use qos::endpoint::pacer::{Pacer, WIRE_OVERHEAD_BYTES};
use qos::endpoint::receiver::{Arrival, Receiver};
use qos::endpoint::{ROCEV2_UDP_PORT, bth::Repr as BthRepr};
use serde::Serialize;

use super::go_back_n::{self, Ack, QpState, Requester, RequesterCounters, Responder};
use super::{Link, monotonic_ns, next_hop, wait_readable};

/// DSCP of CNPs (the usual RoCE setting: their own strict-priority class).
pub const CNP_DSCP: u8 = 48;
const HEADERS: usize = ethernet::HEADER_LEN + ipv4::HEADER_LEN + udp::HEADER_LEN + bth::HEADER_LEN;

/// `fabric-host send`.
#[derive(Debug, Clone)]
pub struct SendOptions {
    pub interface: String,
    pub to: Ipv4Addr,
    /// Bits per second on the wire (preamble and gap included).
    pub rate_bps: u64,
    /// The link's speed: a PFC quantum is 512 bit times of it.
    pub link_bps: u64,
    pub bytes: u64,
    pub dscp: u8,
    /// The PFC priority the flow obeys.
    pub priority: u8,
    pub qp: u32,
    /// Payload bytes per frame.
    pub payload: usize,
    /// UDP source port (RoCEv2 uses it for ECMP entropy).
    pub src_port: u16,
    /// Run DCQCN's reaction point on CNPs.
    pub dcqcn: bool,
    /// Give up after this long.
    pub timeout: Duration,
    /// Start sending at this wall-clock time (so several senders start
    /// together), after the next hop is resolved.
    pub start_at: Option<std::time::SystemTime>,
    /// Packets sent and not yet acknowledged, at most.
    pub window: u64,
}

/// The retransmission timer: first value and limit of its doubling. Well
/// above a lab's round trip (milliseconds, more while a loaded machine
/// keeps a switch from its CPU or a pause holds the queue), so a packet
/// is sent again only when it or its ACK was lost.
const RTO_NS: u64 = 250_000_000;
const MAX_RTO_NS: u64 = 1_000_000_000;

#[derive(Debug, Clone, Default, Serialize)]
pub struct SendReport {
    /// Data frames sent, retransmissions included.
    pub frames: u64,
    /// Payload bytes acknowledged by the receiver.
    pub payload_bytes: u64,
    pub wire_bytes: u64,
    pub duration_ns: u64,
    /// Wire bits per second over the run.
    pub rate_bps: u64,
    pub pauses_obeyed: u64,
    pub resumes: u64,
    pub paused_ns: u64,
    pub pfc_frames_received: u64,
    pub cnps_received: u64,
    /// DCQCN's current rate at the end.
    pub final_rate_bps: u64,
    /// DCQCN's lowest rate during the run (its cuts on CNPs).
    pub min_rate_bps: u64,
    /// Every packet acknowledged.
    pub completed: bool,
    /// Go-back-N: ACKs, NAKs, timer expiries, packets sent again.
    pub transport: RequesterCounters,
    /// Frames the kernel dropped for want of room in this socket's rx ring.
    pub rx_ring_drops: u64,
}

/// Sends `bytes` as one message on `qp`, every packet until acknowledged
/// (go-back-N, [`go_back_n::Requester`]), and reports what happened.
pub fn send(options: &SendOptions) -> Result<SendReport, String> {
    let mut link = Link::open(&options.interface)?;
    let hop = next_hop(&options.interface, options.to)?;
    let dst_mac = link.resolve(hop, Duration::from_secs(5))?;
    if let Some(at) = options.start_at
        && let Ok(wait) = at.duration_since(std::time::SystemTime::now())
    {
        std::thread::sleep(wait);
    }
    let frame_len = HEADERS + options.payload + bth::ICRC_LEN;
    let total = options.bytes.div_ceil(options.payload as u64).max(1);
    let start = monotonic_ns();
    let deadline = start + options.timeout.as_nanos() as u64;
    let mut pacer = Pacer::new(options.link_bps, options.priority, options.rate_bps, start);
    let mut rp = ReactionPoint::new(Params::for_line_rate(options.link_bps), options.rate_bps, start);
    let mut requester = Requester::new(total, options.window.max(1), RTO_NS, MAX_RTO_NS, start);
    let mut report = SendReport { min_rate_bps: options.rate_bps, ..SendReport::default() };
    let mut frame = vec![0u8; frame_len];
    while !requester.done() {
        let now = monotonic_ns();
        if now > deadline {
            break;
        }
        link.receive();
        for received in link.batch.iter() {
            if let Some((class_enable, quanta)) = parse_pfc(received) {
                report.pfc_frames_received += 1;
                pacer.on_pfc(class_enable, &quanta, now);
                continue;
            }
            // Several senders may share the interface, with the same QP
            // number towards different receivers: the peer's address tells.
            let Some(packet) = parse_rocev2(received, link.ip) else { continue };
            if packet.bth.dest_qp != options.qp || packet.src_ip != options.to {
                continue;
            }
            match packet.bth.opcode {
                Opcode::Cnp => {
                    report.cnps_received += 1;
                    if options.dcqcn {
                        rp.on_cnp(now);
                    }
                }
                Opcode::Other(go_back_n::ACKNOWLEDGE_OPCODE) => {
                    if let Some(ack) = Ack::parse(packet.bth.psn, packet.payload) {
                        requester.on_ack(ack, now);
                    }
                }
                _ => {}
            }
        }
        requester.poll(now);
        if options.dcqcn {
            rp.advance(now);
            pacer.set_rate_bps(rp.rate_bps());
            report.min_rate_bps = report.min_rate_bps.min(rp.rate_bps());
        }
        let mut burst = 0;
        while pacer.ready(now)
            && burst < 32
            && let Some(index) = requester.next_packet()
        {
            let opcode = match (index, total) {
                (_, 1) => Opcode::SendOnly,
                (0, _) => Opcode::SendFirst,
                (n, t) if n + 1 == t => Opcode::SendLast,
                _ => Opcode::SendMiddle,
            };
            let header = DataHeader {
                src_mac: link.mac,
                dst_mac,
                src_ip: link.ip,
                dst_ip: options.to,
                dscp: options.dscp,
                ecn: Ecn::Ect0,
                src_port: options.src_port,
            };
            let psn = go_back_n::psn_of(index);
            header.emit(&mut frame, BthRepr { opcode, psn, ..BthRepr::cnp(options.qp) }, options.payload);
            link.send(&frame)?;
            pacer.on_sent(frame_len as u64, now);
            rp.on_sent(frame_len as u64, now);
            requester.on_sent(index, now);
            report.frames += 1;
            report.wire_bytes += frame_len as u64 + WIRE_OVERHEAD_BYTES;
            burst += 1;
        }
        link.flush();
        // Wake for the next frame the pacer allows, if the window has one,
        // else for the retransmission timer; an ACK or a pause wakes sooner.
        let send_at = requester.next_packet().and(pacer.next_send_ns()).unwrap_or(u64::MAX);
        let wake = send_at.min(requester.timer_due_ns().unwrap_or(u64::MAX)).min(now + 1_000_000);
        wait_readable(link.fd(), wake.saturating_sub(monotonic_ns()));
    }
    let end = monotonic_ns();
    let counters = pacer.counters();
    report.duration_ns = end - start;
    report.rate_bps =
        (u128::from(report.wire_bytes) * 8 * 1_000_000_000 / u128::from(report.duration_ns.max(1))) as u64;
    report.pauses_obeyed = counters.pauses_obeyed;
    report.resumes = counters.resumes;
    report.paused_ns = counters.paused_ns;
    report.final_rate_bps = pacer.rate_bps();
    report.payload_bytes = (requester.acked() * options.payload as u64).min(options.bytes);
    report.completed = requester.done();
    report.transport = requester.counters();
    report.rx_ring_drops = link.io.stats().rx_ring_drops;
    Ok(report)
}

/// `fabric-host recv`.
#[derive(Debug, Clone)]
pub struct RecvOptions {
    pub interface: String,
    /// Stop once this many payload bytes arrived in order.
    pub expect_bytes: Option<u64>,
    /// Stop this long after the last arrival (once something arrived).
    pub idle: Duration,
    /// Give up after this long in all.
    pub timeout: Duration,
    /// At most one CNP per QP per this interval.
    pub cnp_interval: Duration,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct QpReport {
    pub qp: u32,
    pub packets: u64,
    pub delivered_bytes: u64,
    pub ce_marked: u64,
    pub cnps_sent: u64,
    pub out_of_order: u64,
    pub reordered_delivered: u64,
    pub duplicates: u64,
    pub beyond_window: u64,
    pub max_reorder_distance: u32,
    pub messages_completed: u64,
    pub flow_completion_ns: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct RecvReport {
    pub packets: u64,
    pub delivered_bytes: u64,
    /// Frame bytes plus preamble and gap of every data frame.
    pub wire_bytes: u64,
    /// First to last arrival.
    pub duration_ns: u64,
    /// Payload delivered in order, bits per second over the run.
    pub goodput_bps: u64,
    /// Data frames on the wire, bits per second over the run.
    pub wire_bps: u64,
    pub ce_marked: u64,
    pub cnps_sent: u64,
    pub out_of_order: u64,
    pub reordered_delivered: u64,
    pub duplicates: u64,
    pub beyond_window: u64,
    pub max_reorder_distance: u32,
    /// Go-back-N acknowledgements returned.
    pub acks_sent: u64,
    pub naks_sent: u64,
    /// Frames the kernel dropped for want of room in this socket's rx ring.
    pub rx_ring_drops: u64,
    pub queue_pairs: Vec<QpReport>,
}

/// A QP the receiver has heard from: where its acknowledgements go and when.
struct Peer {
    qp: u32,
    /// The data packet's addresses, swapped: the ACK's and CNP's headers.
    reply: DataHeader,
    responder: Responder,
    /// This batch: a packet arrived ahead of a hole, a message completed.
    hole: bool,
    message_completed: bool,
}

/// After the expected bytes arrived, stay this long after the last arrival
/// to acknowledge again what a sender repeats because it missed the last ACK.
const LINGER_NS: u64 = 1_500_000_000;

/// Receives RoCEv2 data until told enough, answering CE marks with CNPs
/// and data with ACKs and NAKs (go-back-N, [`go_back_n::Responder`]).
pub fn recv(options: &RecvOptions) -> Result<RecvReport, String> {
    let mut link = Link::open(&options.interface)?;
    // Bound, never read: the kernel then answers no datagram to 4791 with
    // an ICMP port unreachable (the data is ours, through AF_PACKET).
    let _quiet = UdpSocket::bind((link.ip, ROCEV2_UDP_PORT)).map_err(|e| format!("bind UDP 4791: {e}"))?;
    let mut receiver = Receiver::new(256, options.cnp_interval.as_nanos() as u64);
    let start = monotonic_ns();
    let (mut first, mut last, mut last_delivery) = (None::<u64>, 0u64, 0u64);
    let mut report = RecvReport::default();
    let mut cnp = vec![0u8; HEADERS + bth::CNP_PAYLOAD_LEN + bth::ICRC_LEN];
    let mut ack = vec![0u8; HEADERS + go_back_n::AETH_LEN + bth::ICRC_LEN];
    let mut peers: Vec<Peer> = Vec::new();
    let mut done_at = None::<u64>;
    loop {
        let now = monotonic_ns();
        if now - start > options.timeout.as_nanos() as u64 {
            break;
        }
        if first.is_some() && now - last > options.idle.as_nanos() as u64 {
            break;
        }
        if done_at.is_none() && options.expect_bytes.is_some_and(|want| receiver.counters().delivered_bytes >= want) {
            done_at = Some(now);
        }
        if done_at.is_some() && now - last > LINGER_NS.min(options.idle.as_nanos() as u64) {
            break;
        }
        wait_readable(link.fd(), 10_000_000);
        let now = monotonic_ns();
        link.receive();
        let mut cnps: Vec<(DataHeader, u32)> = Vec::new();
        for frame in link.batch.iter() {
            let Some(data) = parse_rocev2(frame, link.ip) else { continue };
            if !matches!(data.bth.opcode, Opcode::SendFirst | Opcode::SendMiddle | Opcode::SendLast | Opcode::SendOnly)
            {
                continue;
            }
            first.get_or_insert(now);
            last = now;
            report.wire_bytes += frame.len() as u64 + 4 + WIRE_OVERHEAD_BYTES;
            let arrival = Arrival {
                qp: data.bth.dest_qp,
                psn: data.bth.psn,
                opcode: data.bth.opcode,
                payload_len: data.payload_len as u32,
                congestion_experienced: data.ecn == Ecn::Ce,
            };
            let reply = DataHeader {
                src_mac: link.mac,
                dst_mac: data.src_mac,
                src_ip: link.ip,
                dst_ip: data.src_ip,
                dscp: CNP_DSCP,
                ecn: Ecn::NotEct,
                src_port: data.src_port,
            };
            let peer = match peers.iter().position(|p| p.qp == arrival.qp) {
                Some(i) => &mut peers[i],
                None => {
                    peers.push(Peer {
                        qp: arrival.qp,
                        reply,
                        responder: Responder::new(ACK_EVERY, ACK_DELAY_NS, NAK_INTERVAL_NS),
                        hole: false,
                        message_completed: false,
                    });
                    peers.last_mut().expect("just pushed")
                }
            };
            let before = receiver.qp_counters(arrival.qp).unwrap_or_default();
            let Ok(outcome) = receiver.on_arrival(arrival, now) else { continue };
            let after = receiver.qp_counters(arrival.qp).unwrap_or_default();
            if after.duplicates > before.duplicates {
                peer.responder.on_duplicate();
            }
            if after.out_of_order > before.out_of_order || after.beyond_window > before.beyond_window {
                peer.hole = true;
            }
            if outcome.delivered_packets > 0 {
                last_delivery = now;
            }
            peer.message_completed |= outcome.message_completed;
            if let Some(qp) = outcome.cnp_for_qp {
                cnps.push((reply, qp));
            }
        }
        for (header, qp) in cnps {
            header.emit(&mut cnp, BthRepr::cnp(qp), bth::CNP_PAYLOAD_LEN);
            link.send(&cnp)?;
        }
        for peer in &mut peers {
            let Some(expected_psn) = receiver.expected_psn(peer.qp) else { continue };
            let state = QpState { expected_psn, hole: peer.hole, message_completed: peer.message_completed };
            (peer.hole, peer.message_completed) = (false, false);
            let Some(answer) = peer.responder.poll(state, now) else { continue };
            let bth = BthRepr {
                opcode: Opcode::Other(go_back_n::ACKNOWLEDGE_OPCODE),
                psn: answer.psn(),
                ..BthRepr::cnp(peer.qp)
            };
            peer.reply.emit(&mut ack, bth, go_back_n::AETH_LEN);
            answer.emit_aeth(&mut ack[HEADERS..HEADERS + go_back_n::AETH_LEN]);
            link.send(&ack)?;
        }
        link.flush();
    }
    let totals = receiver.counters();
    report.packets = totals.packets;
    report.delivered_bytes = totals.delivered_bytes;
    report.ce_marked = totals.ce_marked;
    report.cnps_sent = totals.cnps_sent;
    report.out_of_order = totals.out_of_order;
    report.reordered_delivered = totals.reordered_delivered;
    report.duplicates = totals.duplicates;
    report.beyond_window = totals.beyond_window;
    report.max_reorder_distance = totals.max_reorder_distance;
    report.acks_sent = peers.iter().map(|p| p.responder.acks_sent).sum();
    report.naks_sent = peers.iter().map(|p| p.responder.naks_sent).sum();
    report.rx_ring_drops = link.io.stats().rx_ring_drops;
    report.duration_ns = first.map_or(0, |first| last_delivery.max(first) - first);
    let per_second =
        |bytes: u64| (u128::from(bytes) * 8 * 1_000_000_000 / u128::from(report.duration_ns.max(1))) as u64;
    report.goodput_bps = per_second(report.delivered_bytes);
    report.wire_bps = per_second(report.wire_bytes);
    for peer in &peers {
        let qp = peer.qp;
        let Some(c) = receiver.qp_counters(qp) else { continue };
        report.queue_pairs.push(QpReport {
            qp,
            packets: c.packets,
            delivered_bytes: c.delivered_bytes,
            ce_marked: c.ce_marked,
            cnps_sent: c.cnps_sent,
            out_of_order: c.out_of_order,
            reordered_delivered: c.reordered_delivered,
            duplicates: c.duplicates,
            beyond_window: c.beyond_window,
            max_reorder_distance: c.max_reorder_distance,
            messages_completed: c.messages_completed,
            flow_completion_ns: receiver.flow_completion_ns(qp),
        });
    }
    Ok(report)
}

/// Acknowledge every this many packets delivered in order, or after this
/// long with some unacknowledged, or at a message's end; a hole is NAKed
/// again after the interval if it stays open.
const ACK_EVERY: u32 = 16;
const ACK_DELAY_NS: u64 = 2_000_000;
const NAK_INTERVAL_NS: u64 = 50_000_000;

/// Everything below the BTH of a RoCEv2 frame.
#[derive(Debug, Clone, Copy)]
struct DataHeader {
    src_mac: EthernetAddress,
    dst_mac: EthernetAddress,
    src_ip: Ipv4Addr,
    dst_ip: Ipv4Addr,
    dscp: u8,
    ecn: Ecn,
    src_port: u16,
}

impl DataHeader {
    /// Writes the frame (headers, BTH, `payload` zero bytes, ICRC) into
    /// `frame`, which is exactly that long.
    fn emit(&self, frame: &mut [u8], bth: BthRepr, payload: usize) {
        let udp_len = udp::HEADER_LEN + bth::HEADER_LEN + payload + bth::ICRC_LEN;
        EthernetRepr { dst_addr: self.dst_mac, src_addr: self.src_mac, ethertype: EtherType::Ipv4 }
            .emit(&mut EthernetFrame::new_unchecked(&mut frame[..]));
        let ip = &mut frame[ethernet::HEADER_LEN..];
        Ipv4Repr {
            src_addr: self.src_ip,
            dst_addr: self.dst_ip,
            protocol: IpProtocol::Udp,
            payload_len: udp_len,
            ttl: 64,
            dscp: self.dscp,
            ecn: self.ecn,
            ident: 0,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
        }
        .emit(&mut Ipv4Packet::new_unchecked(&mut ip[..]));
        let udp = &mut ip[ipv4::HEADER_LEN..];
        let datagram = &mut udp[..udp_len];
        let bth_start = udp::HEADER_LEN;
        bth.emit(&mut bth::Packet::new_unchecked(&mut datagram[bth_start..]));
        datagram[bth_start + bth::HEADER_LEN..].fill(0);
        // RoCEv2 senders leave the UDP checksum zero (the ICRC covers the data).
        UdpRepr { src_port: self.src_port, dst_port: ROCEV2_UDP_PORT, payload_len: udp_len - udp::HEADER_LEN }
            .emit_header(&mut UdpPacket::new_unchecked(&mut datagram[..]));
    }
}

/// A RoCEv2 frame for `our_ip`, parsed.
struct Rocev2<'a> {
    src_mac: EthernetAddress,
    src_ip: Ipv4Addr,
    src_port: u16,
    ecn: Ecn,
    bth: BthRepr,
    payload_len: usize,
    /// The bytes after the BTH, up to the ICRC.
    payload: &'a [u8],
}

fn parse_rocev2(frame: &[u8], our_ip: Ipv4Addr) -> Option<Rocev2<'_>> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EtherType::Ipv4 {
        return None;
    }
    let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
    if ip.dst_addr() != our_ip || ip.protocol() != IpProtocol::Udp {
        return None;
    }
    let datagram = UdpPacket::new_checked(ip.payload()).ok()?;
    if datagram.dst_port() != ROCEV2_UDP_PORT {
        return None;
    }
    let body = datagram.payload();
    let packet = bth::Packet::new_checked(body).ok()?;
    let bth = BthRepr::parse(&packet).ok()?;
    let payload_len = body.len().checked_sub(bth::HEADER_LEN + bth::ICRC_LEN)?;
    Some(Rocev2 {
        src_mac: eth.src_addr(),
        src_ip: ip.src_addr(),
        src_port: datagram.src_port(),
        ecn: ip.ecn(),
        bth,
        payload_len,
        payload: &body[bth::HEADER_LEN..bth::HEADER_LEN + payload_len],
    })
}

/// A PFC frame's class-enable vector and quanta.
fn parse_pfc(frame: &[u8]) -> Option<(u8, [u16; 8])> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EtherType::MacControl {
        return None;
    }
    let packet = MacControlPacket::new_checked(eth.payload()).ok()?;
    match MacControlRepr::parse(&packet).ok()? {
        MacControlRepr::PriorityFlowControl { class_enable, quanta } => Some((class_enable, quanta)),
        MacControlRepr::Pause { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the sender writes, the receiver's parser reads back.
    #[test]
    fn data_frames_round_trip() {
        let header = DataHeader {
            src_mac: EthernetAddress([2, 0, 0, 0, 0, 1]),
            dst_mac: EthernetAddress([2, 0, 0, 0, 0, 2]),
            src_ip: Ipv4Addr::new(10, 0, 0, 1),
            dst_ip: Ipv4Addr::new(10, 0, 0, 2),
            dscp: 26,
            ecn: Ecn::Ect0,
            src_port: 49152,
        };
        let mut frame = vec![0u8; HEADERS + 1024 + bth::ICRC_LEN];
        header.emit(&mut frame, BthRepr { opcode: Opcode::SendMiddle, psn: 77, ..BthRepr::cnp(9) }, 1024);
        let parsed = parse_rocev2(&frame, header.dst_ip).unwrap();
        assert_eq!((parsed.bth.dest_qp, parsed.bth.psn, parsed.bth.opcode), (9, 77, Opcode::SendMiddle));
        assert_eq!((parsed.payload_len, parsed.src_ip, parsed.src_port), (1024, header.src_ip, 49152));
        assert_eq!(parsed.ecn, Ecn::Ect0);
        let ip = Ipv4Packet::new_checked(&frame[ethernet::HEADER_LEN..]).unwrap();
        assert_eq!(ip.dscp(), 26);
        assert!(ip.verify_checksum());
        assert!(parse_rocev2(&frame, Ipv4Addr::new(10, 0, 0, 3)).is_none());
    }
}
