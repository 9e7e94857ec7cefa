//! `fabric-host ib`: an HCA-like endpoint on one interface, over
//! `subnet_manager::plane::hca::HcaPlane` (credits per data VL, the CA's
//! agent) and an AF_PACKET socket for EtherType 0x88B5.
//!
//! It always answers SMPs and echoes pings. What else it does is chosen by
//! options: `--ping LID` (ibping-like round trips), `--send LID` (a stream
//! of sequence-numbered packets, as fast as credits allow or at `--rate`;
//! `--flow LID:SL` adds streams, each on its own SL and so its own VL and
//! credits), `--line-rate-mbps` (the port's line rate: a fast sender into
//! a slower fabric),
//! `--read-pps` (a slow reader: take at most that many packets a second,
//! the rest wait in the receive buffer holding their credit), `--hold-file`
//! (a stalled reader: nothing taken while that file exists). It reports
//! JSON lines on stdout: `lid` when the port gets a LID, `pong` per reply,
//! `ping_summary`, `send_summary`, and `summary` at exit (SIGTERM, SIGINT,
//! or `--for-secs`).

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use subnet_manager::packet::attributes::PortState;
use subnet_manager::plane::hca::{HcaConfig, HcaPlane, SendError};
use subnet_manager::transport::inband::{PacketSocket, wait_readable};

/// Marks the payloads this program understands.
const PING_MAGIC: [u8; 4] = *b"IBPG";
const DATA_MAGIC: [u8; 4] = *b"IBDT";
const PING: u8 = 1;
const PONG: u8 = 2;
/// Magic, kind and padding, sequence number, send time.
const PING_LEN: usize = 20;

#[derive(Debug, Clone)]
pub struct Options {
    pub iface: String,
    pub guid: u64,
    pub name: String,
    pub data_vls: u8,
    pub mtu: u16,
    pub buffer_blocks: u16,
    /// ibping these LIDs, one after the other.
    pub ping: Vec<u16>,
    /// Or the LIDs listed in this file, once it appears (a test learns
    /// them from the SM after this program started); each time its text
    /// changes, another round (words that are not LIDs, such as `round-2`,
    /// make a change without changing the targets).
    pub ping_file: Option<std::path::PathBuf>,
    pub count: u32,
    pub interval: Duration,
    /// Send a stream of packets to this LID (on `sl`).
    pub send: Option<u16>,
    /// More streams: (LID, SL).
    pub flows: Vec<(u16, u8)>,
    /// The port's line rate in bits per second.
    pub line_rate_bps: Option<u64>,
    pub packets: u64,
    /// Payload bytes per packet (a multiple of 4, at least 8).
    pub size: usize,
    pub sl: u8,
    /// Packets per second; 0: as fast as credits allow.
    pub rate: u64,
    /// Packets taken from the receive buffer per second; 0: all at once.
    pub read_pps: u64,
    /// Take nothing while this file exists: the packets wait in the
    /// receive buffer holding their VL's credit, so the sender's VL stalls
    /// (a count-based test of head-of-line blocking, whatever the load).
    pub hold_file: Option<std::path::PathBuf>,
    /// Stop after this long (0: at SIGTERM/SIGINT).
    pub for_secs: f64,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Release);
}

fn emit(value: serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}

/// Per-source receive accounting of the data stream: in order, none lost.
#[derive(Debug, Default, Clone, Copy)]
struct StreamStats {
    received: u64,
    next_seq: u64,
    gaps: u64,
    out_of_order: u64,
    /// Payload bytes, and when the first and last packets were taken (ns
    /// since start): the stream's goodput.
    bytes: u64,
    first_ns: u64,
    last_ns: u64,
}

/// ibping: `count` round trips to each target in turn.
struct Pinger {
    /// Which reading of the ping file (0 for `--ping`).
    round: u32,
    targets: Vec<u16>,
    current: usize,
    sent: u32,
    replies: u32,
    rtts_us: Vec<f64>,
    next_at: Instant,
}

impl Pinger {
    fn new(round: u32, targets: Vec<u16>) -> Pinger {
        Pinger { round, targets, current: 0, sent: 0, replies: 0, rtts_us: Vec::new(), next_at: Instant::now() }
    }

    fn target(&self) -> Option<u16> {
        self.targets.get(self.current).copied()
    }

    /// Reports the current target and moves to the next.
    fn summarize(&mut self) {
        let Some(lid) = self.target() else { return };
        let rtts = &self.rtts_us;
        let avg = rtts.iter().sum::<f64>() / rtts.len().max(1) as f64;
        let max = rtts.iter().cloned().fold(0.0, f64::max);
        let min = rtts.iter().cloned().fold(f64::INFINITY, f64::min);
        emit(
            json!({"event": "ping_summary", "round": self.round, "to": lid, "sent": self.sent, "received": self.replies,
            "min_us": if self.replies > 0 { min } else { 0.0 }, "avg_us": avg, "max_us": max}),
        );
        *self = Pinger {
            targets: core::mem::take(&mut self.targets),
            current: self.current + 1,
            ..Pinger::new(self.round, Vec::new())
        };
    }
}

struct Sender {
    lid: u16,
    sl: u8,
    sent: u64,
    started: Option<Instant>,
    done: bool,
}

/// How long an HCA waits for its interface to appear.
const INTERFACE_WAIT: Duration = Duration::from_secs(120);

/// containerlab starts a node's program first and plugs its links in
/// afterwards (as the switch image's entrypoint knows), so an HCA node's
/// `fabric-host ib` waits for its interface rather than failing.
fn wait_for_interface(iface: &str) -> std::io::Result<()> {
    let path = std::path::Path::new("/sys/class/net").join(iface);
    let deadline = Instant::now() + INTERFACE_WAIT;
    while !path.exists() {
        if Instant::now() >= deadline || STOP.load(Ordering::Acquire) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("interface {iface} did not appear within {INTERFACE_WAIT:?}"),
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

pub fn run(options: Options) -> std::io::Result<()> {
    // SAFETY: installing a handler that only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }
    wait_for_interface(&options.iface)?;
    let socket = PacketSocket::open(&options.iface)?;
    let mut hca = HcaPlane::new(HcaConfig {
        guid: options.guid,
        description: options.name.clone(),
        mac: socket.mac,
        data_vls: options.data_vls,
        mtu: options.mtu,
        buffer_blocks: options.buffer_blocks,
        flow_control_refresh_ns: 50_000_000,
        line_rate_bps: options.line_rate_bps,
    })
    .map_err(|e| std::io::Error::other(e.to_string()))?;
    let start = Instant::now();
    let now = || start.elapsed().as_nanos() as u64;
    let mut buffer = vec![0u8; 16384];
    let mut tx_errors = 0u64;
    let mut tx = |frame: &[u8]| {
        let sent = socket.send(frame).is_ok();
        tx_errors += u64::from(!sent);
        sent
    };
    let mut reported_lid = 0u16;
    let mut streams: HashMap<u16, StreamStats> = HashMap::new();
    let mut echoed = 0u64;
    let mut pending_echoes: Vec<(u16, u8, Vec<u8>)> = Vec::new();
    let mut pinger = (!options.ping.is_empty()).then(|| Pinger::new(0, options.ping.clone()));
    let mut ping_text = String::new();
    let mut rounds = 0;
    let flows = options.send.map(|lid| (lid, options.sl)).into_iter().chain(options.flows.iter().copied());
    let mut senders: Vec<Sender> =
        flows.map(|(lid, sl)| Sender { lid, sl, sent: 0, started: None, done: false }).collect();
    let mut read_allowance = 0.0f64;
    let mut last_read = Instant::now();
    let deadline = (options.for_secs > 0.0).then(|| start + Duration::from_secs_f64(options.for_secs));
    let mut payload = vec![0u8; options.size.max(8)];

    while !STOP.load(Ordering::Acquire) && deadline.is_none_or(|d| Instant::now() < d) {
        // Wake for frames, and at least every millisecond for pacing.
        if wait_readable(&[&socket], Duration::from_millis(1))?.is_some() {
            while let Some(len) = socket.try_recv(&mut buffer)? {
                hca.receive(now(), &buffer[..len], &mut tx);
            }
        }
        hca.poll(now(), &mut tx);
        let lid = hca.lid();
        if lid != reported_lid && hca.state() != PortState::Down {
            reported_lid = lid;
            emit(json!({"event": "lid", "lid": lid, "state": format!("{:?}", hca.state()).to_lowercase()}));
        }

        // The reader: all at once, or `read_pps` a second.
        let mut budget = u64::MAX;
        if options.read_pps > 0 {
            read_allowance += last_read.elapsed().as_secs_f64() * options.read_pps as f64;
            // At most a tenth of a second's worth saved up: a steady pace.
            read_allowance = read_allowance.min((options.read_pps as f64 / 10.0).max(1.0));
            budget = read_allowance as u64;
        }
        last_read = Instant::now();
        if options.hold_file.as_ref().is_some_and(|path| path.exists()) {
            budget = 0;
        }
        let mut taken = 0u64;
        while taken < budget {
            let Some(packet) = hca.take() else { break };
            taken += 1;
            let body = &packet.payload;
            if body.len() >= PING_LEN && body[..4] == PING_MAGIC {
                match body[4] {
                    PING => {
                        let mut reply = body.clone();
                        reply[4] = PONG;
                        pending_echoes.push((packet.slid, packet.sl, reply));
                    }
                    PONG => {
                        if let Some(pinger) = &mut pinger
                            && pinger.target() == Some(packet.slid)
                        {
                            let seq = u32::from_be_bytes(body[8..12].try_into().unwrap());
                            let sent_ns = u64::from_be_bytes(body[12..20].try_into().unwrap());
                            let rtt_us = now().saturating_sub(sent_ns) as f64 / 1e3;
                            pinger.replies += 1;
                            pinger.rtts_us.push(rtt_us);
                            emit(json!({"event": "pong", "from": packet.slid, "seq": seq, "rtt_us": rtt_us}));
                        }
                    }
                    _ => {}
                }
            } else if body.len() >= 12 && body[..4] == DATA_MAGIC {
                let seq = u64::from_be_bytes(body[4..12].try_into().unwrap());
                let stream = streams.entry(packet.slid).or_default();
                let at = now();
                if stream.received == 0 {
                    stream.first_ns = at;
                }
                stream.last_ns = at;
                stream.bytes += body.len() as u64;
                stream.received += 1;
                if seq > stream.next_seq {
                    stream.gaps += seq - stream.next_seq;
                } else if seq < stream.next_seq {
                    stream.out_of_order += 1;
                }
                stream.next_seq = stream.next_seq.max(seq + 1);
            }
        }
        if options.read_pps > 0 {
            read_allowance -= taken as f64;
        }
        pending_echoes.retain(|(to, sl, reply)| {
            let sent = hca.send(now(), *to, *sl, reply, &mut tx).is_ok();
            echoed += u64::from(sent);
            !sent
        });

        if pinger.as_ref().is_none_or(|p| p.target().is_none())
            && let Some(path) = &options.ping_file
            && let Ok(text) = std::fs::read_to_string(path)
            && text.ends_with('\n')
            && text != ping_text
        {
            rounds += 1;
            pinger = Some(Pinger::new(rounds, text.split_whitespace().filter_map(|w| w.parse().ok()).collect()));
            ping_text = text;
        }
        if let Some(pinger) = &mut pinger
            && let Some(target) = pinger.target()
            && pinger.sent < options.count
            && Instant::now() >= pinger.next_at
            && hca.lid() != 0
        {
            let mut ping = [0u8; 32];
            ping[..4].copy_from_slice(&PING_MAGIC);
            ping[4] = PING;
            ping[8..12].copy_from_slice(&pinger.sent.to_be_bytes());
            ping[12..20].copy_from_slice(&now().to_be_bytes());
            if hca.send(now(), target, options.sl, &ping, &mut tx).is_ok() {
                pinger.sent += 1;
                pinger.next_at = Instant::now() + options.interval;
            }
        }
        if let Some(pinger) = &mut pinger
            && pinger.target().is_some()
            && pinger.sent == options.count
            && (pinger.replies == options.count || Instant::now() >= pinger.next_at + Duration::from_secs(2))
        {
            pinger.summarize();
            if pinger.target().is_none() && senders.is_empty() && options.for_secs == 0.0 && options.ping_file.is_none()
            {
                break;
            }
        }

        // The streams, a packet each in turn while credit and the line
        // allow: a stream whose VL has no credit does not hold the others.
        if hca.lid() != 0 && hca.link_ready() {
            let mut progress = true;
            while progress {
                progress = false;
                for sender in senders.iter_mut().filter(|s| !s.done) {
                    let started = *sender.started.get_or_insert_with(Instant::now);
                    if sender.sent == options.packets {
                        sender.done = true;
                        let elapsed = started.elapsed().as_secs_f64();
                        emit(json!({"event": "send_summary", "to": sender.lid, "sl": sender.sl, "sent": sender.sent,
                            "elapsed_s": elapsed, "pps": sender.sent as f64 / elapsed.max(1e-9),
                            "xmit_wait": hca.counters().xmit_wait}));
                        continue;
                    }
                    if options.rate > 0 && sender.sent >= (started.elapsed().as_secs_f64() * options.rate as f64) as u64
                    {
                        continue;
                    }
                    payload[..4].copy_from_slice(&DATA_MAGIC);
                    payload[4..12].copy_from_slice(&sender.sent.to_be_bytes());
                    match hca.send(now(), sender.lid, sender.sl, &payload, &mut tx) {
                        Ok(()) => {
                            sender.sent += 1;
                            progress = true;
                        }
                        Err(SendError::NoCredit | SendError::LineBusy | SendError::LinkDown | SendError::NotActive) => {
                        }
                        Err(SendError::BadLength) => {
                            return Err(std::io::Error::other(format!("--size {}: not a valid payload", options.size)));
                        }
                    }
                }
            }
        }
    }

    let counters = hca.counters();
    let streams: Vec<serde_json::Value> = streams
        .iter()
        .map(|(slid, s)| {
            json!({"slid": slid, "received": s.received, "gaps": s.gaps, "out_of_order": s.out_of_order,
                "bytes": s.bytes, "first_ns": s.first_ns, "last_ns": s.last_ns})
        })
        .collect();
    emit(json!({
        "event": "summary",
        "lid": hca.lid(),
        "state": format!("{:?}", hca.state()).to_lowercase(),
        "held": hca.held(),
        "echoed": echoed,
        "streams": streams,
        "tx_errors": tx_errors,
        "counters": {
            "xmit_packets": counters.xmit_packets, "rcv_packets": counters.rcv_packets,
            "xmit_wait": counters.xmit_wait, "rcv_wrong_dlid": counters.rcv_wrong_dlid,
            "rcv_overruns": counters.rcv_overruns, "rcv_errors": counters.rcv_errors, "malformed": counters.malformed, "bad_smps": counters.bad_smps,
        },
        "agent": {"answered": hca.agent().counters.answered, "bad_status": hca.agent().counters.bad_status},
    }));
    Ok(())
}
