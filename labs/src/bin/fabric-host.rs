//! `fabric-host`: the lab's host program on a namespace's `eth1`.
//!
//! `fabric-host send --to IP --rate 800M --bytes 64M --dscp 26 --qp N`
//! `fabric-host recv [--expect-bytes 64M] [--idle-ms 500]`
//! `fabric-host pfc-storm --priority 3 --for-ms 1000`
//! `fabric-host ib --iface eth1 --guid 0x... [--ping LID,...|--ping-file F] [--send LID --packets N] [--read-pps N]`
//! Each prints what happened (goodput, CNPs, pauses obeyed, reordering);
//! `--json` prints it as one JSON object.

use std::net::Ipv4Addr;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use labs::fabric_host::ib;
use labs::fabric_host::roce::{self, RecvOptions, SendOptions};
use labs::fabric_host::storm::{self, StormOptions};
use labs::fabric_host::{parse_bytes, parse_rate};

#[derive(Parser)]
#[command(name = "fabric-host", version, about = "The lab host program: RoCEv2-like traffic, or an IB-like HCA")]
struct Cli {
    /// The interface to own.
    #[arg(long, global = true, default_value = "eth1")]
    interface: String,
    /// Print the report as JSON.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Send one message of --bytes on --qp, paced at --rate, obeying PFC and
    /// (with --dcqcn) reacting to CNPs.
    Send {
        #[arg(long)]
        to: Ipv4Addr,
        /// Wire rate: 800M, 1G...
        #[arg(long, value_parser = parse_rate)]
        rate: u64,
        /// The link's speed (PFC quanta are its bit times); the rate by default.
        #[arg(long, value_parser = parse_rate)]
        link_speed: Option<u64>,
        /// Bytes to send: 64M, 4K...
        #[arg(long, value_parser = parse_bytes)]
        bytes: u64,
        #[arg(long, default_value_t = 26)]
        dscp: u8,
        /// The PFC priority to obey; DSCP / 8 by default (26 -> 3).
        #[arg(long)]
        priority: Option<u8>,
        #[arg(long, default_value_t = 1)]
        qp: u32,
        /// Payload bytes per frame.
        #[arg(long, default_value_t = 4096)]
        payload: usize,
        /// UDP source port; 49152 + QP by default.
        #[arg(long)]
        src_port: Option<u16>,
        /// React to CNPs (DCQCN's reaction point).
        #[arg(long)]
        dcqcn: bool,
        #[arg(long, default_value_t = 120)]
        timeout_secs: u64,
        /// Start at this wall-clock time, milliseconds since the Unix epoch
        /// (several senders start together).
        #[arg(long)]
        start_at_unix_ms: Option<u64>,
        /// Packets sent and not yet acknowledged, at most (go-back-N's
        /// window). Large by default (4 MiB of 4 KiB packets), as a RoCE
        /// NIC's: PFC, not the window, holds a sender back in an incast.
        #[arg(long, default_value_t = 1024)]
        window: u64,
    },
    /// Receive until --expect-bytes arrived, or --idle-ms after the last
    /// packet, returning CNPs for CE marks.
    Recv {
        #[arg(long, value_parser = parse_bytes)]
        expect_bytes: Option<u64>,
        #[arg(long, default_value_t = 1000)]
        idle_ms: u64,
        #[arg(long, default_value_t = 120)]
        timeout_secs: u64,
        #[arg(long, default_value_t = 50)]
        cnp_interval_us: u64,
    },
    /// A misbehaving peer: pause --priority (XOFF frames of --quanta every
    /// --interval-us) for --for-ms, whatever the switch sends.
    PfcStorm {
        #[arg(long, default_value_t = 3)]
        priority: u8,
        #[arg(long, default_value_t = 65535)]
        quanta: u16,
        #[arg(long, default_value_t = 1000)]
        interval_us: u64,
        #[arg(long)]
        for_ms: u64,
    },
    /// An HCA-like endpoint of the IB-like plane: agent, ibping, paced sender, slow reader.
    Ib(IbArgs),
}

#[derive(Args)]
struct IbArgs {
    /// The interface of the IB-like link.
    #[arg(long, default_value = "eth1")]
    iface: String,
    /// Node GUID (hex, 0x...); the port GUID is GUID + 1.
    #[arg(long, value_parser = parse_guid)]
    guid: u64,
    /// NodeDescription.
    #[arg(long, default_value = "fabric-host")]
    name: String,
    #[arg(long, default_value_t = 4)]
    data_vls: u8,
    /// IB MTU: the largest payload.
    #[arg(long, default_value_t = 1024)]
    mtu: u16,
    /// Receive buffer per data VL in 64-byte blocks.
    #[arg(long, default_value_t = 64)]
    buffer_blocks: u16,
    /// ibping these LIDs in turn (`--count` times each, every `--interval-ms`).
    #[arg(long, value_delimiter = ',')]
    ping: Vec<u16>,
    /// Ping the LIDs listed in this file (whitespace separated, ending in a newline) once it appears.
    #[arg(long)]
    ping_file: Option<std::path::PathBuf>,
    #[arg(long, default_value_t = 5)]
    count: u32,
    #[arg(long, default_value_t = 100)]
    interval_ms: u64,
    /// Send a stream of `--packets` packets of `--size` bytes to this LID.
    #[arg(long)]
    send: Option<u16>,
    #[arg(long, default_value_t = 1000)]
    packets: u64,
    #[arg(long, default_value_t = 256)]
    size: usize,
    #[arg(long, default_value_t = 0)]
    sl: u8,
    /// More streams like `--send`'s, each `LID:SL` (its own `--packets`, at `--rate`).
    #[arg(long, value_parser = parse_flow)]
    flow: Vec<(u16, u8)>,
    /// Packets per second (0: as fast as credits allow).
    #[arg(long, default_value_t = 0)]
    rate: u64,
    /// The port's line rate in Mb/s, counting the Ethernet frames it writes (0: as fast as the link takes them).
    #[arg(long, default_value_t = 0)]
    line_rate_mbps: u64,
    /// Take at most this many received packets a second (0: no limit): a slow receiver.
    #[arg(long, default_value_t = 0)]
    read_pps: u64,
    /// Take nothing received while this file exists (a stalled receiver: its credit stays held).
    #[arg(long)]
    hold_file: Option<std::path::PathBuf>,
    /// Stop after this many seconds (0: at SIGTERM or SIGINT, or when the ping is done).
    #[arg(long, default_value_t = 0.0)]
    for_secs: f64,
}

fn parse_flow(text: &str) -> Result<(u16, u8), String> {
    let bad = || format!("bad flow {text:?}: LID:SL");
    let (lid, sl) = text.split_once(':').ok_or_else(bad)?;
    let sl: u8 = sl.parse().map_err(|_| bad())?;
    if sl > 15 {
        return Err(bad());
    }
    Ok((lid.parse().map_err(|_| bad())?, sl))
}

fn parse_guid(text: &str) -> Result<u64, String> {
    u64::from_str_radix(text.trim_start_matches("0x"), 16).map_err(|_| format!("bad GUID {text:?}"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Ib(args) => return run_ib(args),
        Command::Send {
            to,
            rate,
            link_speed,
            bytes,
            dscp,
            priority,
            qp,
            payload,
            src_port,
            dcqcn,
            timeout_secs,
            start_at_unix_ms,
            window,
        } => {
            let options = SendOptions {
                interface: cli.interface,
                to,
                rate_bps: rate,
                link_bps: link_speed.unwrap_or(rate),
                bytes,
                dscp: dscp & 63,
                priority: priority.unwrap_or(dscp >> 3) & 7,
                qp,
                payload: payload.clamp(1, 9000),
                src_port: src_port.unwrap_or(49152u16.wrapping_add(qp as u16)),
                dcqcn,
                timeout: Duration::from_secs(timeout_secs),
                start_at: start_at_unix_ms.map(|ms| std::time::UNIX_EPOCH + Duration::from_millis(ms)),
                window: window.clamp(1, 1 << 20),
            };
            roce::send(&options).map(|report| {
                let text = format!(
                    "sent {} frames, {} payload bytes in {:.3} s: {:.1} Mb/s on the wire\n\
                     PFC frames received {}, pauses obeyed {}, resumes {}, paused {:.3} ms\n\
                     CNPs received {}, final rate {:.1} Mb/s{}\n\
                     ACKs {}, NAKs {}, timeouts {}, frames sent again {}\n",
                    report.frames,
                    report.payload_bytes,
                    report.duration_ns as f64 / 1e9,
                    report.rate_bps as f64 / 1e6,
                    report.pfc_frames_received,
                    report.pauses_obeyed,
                    report.resumes,
                    report.paused_ns as f64 / 1e6,
                    report.cnps_received,
                    report.final_rate_bps as f64 / 1e6,
                    if report.completed { "" } else { " (timed out)" },
                    report.transport.acks_received,
                    report.transport.naks_received,
                    report.transport.timeouts,
                    report.transport.retransmitted,
                );
                (serde_json::to_string(&report).expect("report serializes"), text)
            })
        }
        Command::PfcStorm { priority, quanta, interval_us, for_ms } => {
            let options = StormOptions {
                interface: cli.interface,
                class_enable: 1 << (priority & 7),
                quanta,
                interval: Duration::from_micros(interval_us.max(1)),
                duration: Duration::from_millis(for_ms),
            };
            storm::storm(&options).map(|report| {
                let text = format!(
                    "sent {} PFC XOFF frames (priority {}, quanta {quanta}) in {:.3} s\n",
                    report.pfc_frames_sent,
                    priority & 7,
                    report.duration_ns as f64 / 1e9
                );
                (serde_json::to_string(&report).expect("report serializes"), text)
            })
        }
        Command::Recv { expect_bytes, idle_ms, timeout_secs, cnp_interval_us } => {
            let options = RecvOptions {
                interface: cli.interface,
                expect_bytes,
                idle: Duration::from_millis(idle_ms),
                timeout: Duration::from_secs(timeout_secs),
                cnp_interval: Duration::from_micros(cnp_interval_us),
            };
            roce::recv(&options).map(|report| {
                let text = format!(
                    "received {} packets, {} bytes in order in {:.3} s: goodput {:.1} Mb/s ({:.1} Mb/s on the wire)\n\
                     CE marked {}, CNPs sent {}, out of order {} (reordered and delivered {}, duplicates {}, beyond the window {}, farthest {})\n",
                    report.packets,
                    report.delivered_bytes,
                    report.duration_ns as f64 / 1e9,
                    report.goodput_bps as f64 / 1e6,
                    report.wire_bps as f64 / 1e6,
                    report.ce_marked,
                    report.cnps_sent,
                    report.out_of_order,
                    report.reordered_delivered,
                    report.duplicates,
                    report.beyond_window,
                    report.max_reorder_distance,
                );
                (serde_json::to_string(&report).expect("report serializes"), text)
            })
        }
    };
    match result {
        Ok((json, text)) => {
            if cli.json {
                println!("{json}");
            } else {
                print!("{text}");
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("fabric-host: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run_ib(args: IbArgs) -> ExitCode {
    if args.size < 12 || !args.size.is_multiple_of(4) {
        eprintln!("fabric-host: --size must be a multiple of 4, at least 12");
        return ExitCode::FAILURE;
    }
    let options = ib::Options {
        iface: args.iface,
        guid: args.guid,
        name: args.name,
        data_vls: args.data_vls,
        mtu: args.mtu,
        buffer_blocks: args.buffer_blocks,
        ping: args.ping,
        ping_file: args.ping_file,
        count: args.count,
        interval: Duration::from_millis(args.interval_ms),
        send: args.send,
        flows: args.flow,
        line_rate_bps: (args.line_rate_mbps > 0).then_some(args.line_rate_mbps * 1_000_000),
        packets: args.packets,
        size: args.size,
        sl: args.sl,
        rate: args.rate,
        read_pps: args.read_pps,
        hold_file: args.hold_file,
        for_secs: args.for_secs,
    };
    match ib::run(options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("fabric-host: {error}");
            ExitCode::FAILURE
        }
    }
}
