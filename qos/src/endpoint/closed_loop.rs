//! DCQCN's whole loop in virtual time: three reaction points ([`super::dcqcn`])
//! start at line rate into one 100 Mb/s egress of the traffic manager
//! ([`crate::tm`], ECN marking on the depth a frame leaves behind), a
//! receiver ([`super::receiver`]) answers CE with CNPs, which reach the
//! senders a millisecond later (an emulated host's reaction time, as in
//! the `qos_ecn` lab). The figures the lab prints come from this loop; here
//! they are exact (virtual time, seeded marking).

use super::bth::Opcode;
use super::dcqcn::{Params, ReactionPoint};
use super::receiver::{Arrival, Receiver};
use super::serialization_ns;
use crate::buffer::QueueLimit;
use crate::classify::ClassKey;
use crate::ecn::{NonEct, WredProfile};
use crate::tm::{Dequeue, EcnSetting, FrameInfo, PortConfig, TmConfig, TrafficManager};

const LINE_BPS: u64 = 100_000_000;
const SENDERS: usize = 3;
const FRAME: u32 = 1100;
/// Preamble, SFD, FCS and gap: what a frame occupies on the wire besides its bytes.
const WIRE_EXTRA: u64 = 24;
const FEEDBACK_NS: u64 = 1_000_000;
const STEP_NS: u64 = 10_000;
const KMIN: u32 = 40_000;
const KMAX: u32 = 800_000;

struct Run {
    /// Payload delivered over the time from the first to the last frame, bit/s.
    goodput_bps: u64,
    queue_watermark: u32,
    cnps: u64,
    lowest_rates: [u64; SENDERS],
}

/// `bytes_each` from every sender through the bottleneck.
fn incast(bytes_each: u64, cnp_interval_ns: u64) -> Run {
    let ports = (0..=SENDERS).map(|_| PortConfig { mtu: 1500, ..PortConfig::new(LINE_BPS) }).collect();
    let mut config = TmConfig { ports, ..TmConfig::default() };
    config.pool.size_bytes = 32 << 20;
    config.queues[1].limit = QueueLimit::Static { bytes: 16 << 20 };
    config.queues[1].ecn = EcnSetting::Profile(WredProfile {
        kmin_bytes: KMIN,
        kmax_bytes: KMAX,
        pmax_percent: 50,
        ecn: true,
        non_ect: NonEct::Pass,
    });
    config.priority_groups[1].dynamic_th = 7;
    let mut tm = TrafficManager::new(&config, 0u32).unwrap();
    let egress = SENDERS as u16;
    let mut rps: Vec<ReactionPoint> =
        (0..SENDERS).map(|_| ReactionPoint::new(Params::for_line_rate(LINE_BPS), LINE_BPS, 0)).collect();
    let mut lowest_rates = [LINE_BPS; SENDERS];
    let mut next_send = [0u64; SENDERS];
    let mut psn = [0u32; SENDERS];
    let mut sent = [0u64; SENDERS];
    let mut receiver = Receiver::new(SENDERS, cnp_interval_ns);
    let mut feedback: Vec<(u64, usize)> = Vec::new();
    let (mut delivered, mut first, mut last) = (0u64, None, 0u64);
    let mut now = 0;
    while delivered < bytes_each * SENDERS as u64 {
        assert!(now < 60_000_000_000, "the incast never finished");
        for i in 0..SENDERS {
            rps[i].advance(now);
            while next_send[i] <= now && sent[i] < bytes_each {
                let frame = FrameInfo {
                    ingress: Some(i as u16),
                    egress,
                    class: ClassKey::Tc(1),
                    len: FRAME,
                    ecn_capable: true,
                    flow_hash: i as u32,
                };
                tm.enqueue(now, (i as u32) << 24 | psn[i], &frame).expect("no drop");
                psn[i] += 1;
                sent[i] += u64::from(FRAME);
                let wire = u64::from(FRAME) + WIRE_EXTRA;
                rps[i].on_sent(wire, now);
                next_send[i] += serialization_ns(wire * 8, rps[i].rate_bps());
                lowest_rates[i] = lowest_rates[i].min(rps[i].rate_bps());
            }
        }
        while let Dequeue::Send { handle, bytes, mark_ce, .. } = tm.dequeue(now, egress) {
            let sender = (handle >> 24) as usize;
            let arrival = Arrival {
                qp: sender as u32,
                psn: handle & 0xff_ffff,
                opcode: Opcode::SendMiddle,
                payload_len: bytes,
                congestion_experienced: mark_ce,
            };
            if let Some(qp) = receiver.on_arrival(arrival, now).unwrap().cnp_for_qp {
                feedback.push((now + FEEDBACK_NS, qp as usize));
            }
            delivered += u64::from(bytes);
            first.get_or_insert(now);
            last = now;
        }
        feedback.retain(|&(at, sender)| {
            if at > now {
                return true;
            }
            rps[sender].on_cnp(now);
            lowest_rates[sender] = lowest_rates[sender].min(rps[sender].rate_bps());
            false
        });
        now += STEP_NS;
    }
    let duration = last - first.unwrap();
    Run {
        goodput_bps: (u128::from(delivered) * 8 * 1_000_000_000 / u128::from(duration)) as u64,
        queue_watermark: tm.queue_watermark_bytes(egress, 1),
        cnps: rps.iter().map(ReactionPoint::cnps).sum(),
        lowest_rates,
    }
}

#[test]
fn dcqcn_holds_the_bottleneck_busy_with_the_queue_in_kmin_kmax() {
    // The lab's incast: 3 MiB from each sender, at most one CNP per QP per ms.
    let run = incast(3 << 20, 1_000_000);
    eprintln!(
        "goodput {} b/s, queue watermark {} B, {} CNPs, lowest rates {:?} b/s",
        run.goodput_bps, run.queue_watermark, run.cnps, run.lowest_rates
    );
    assert!(run.cnps > 0);
    assert!(run.lowest_rates.iter().all(|&r| r < LINE_BPS / 2), "every sender cut: {:?}", run.lowest_rates);
    assert!((KMIN..=KMAX).contains(&run.queue_watermark), "watermark {}", run.queue_watermark);
    assert!(run.goodput_bps >= LINE_BPS * 60 / 100, "goodput {} b/s", run.goodput_bps);
}
