//! `fabric-host`: the lab host program (see `labs::fabric_host`).
//!
//! `fabric-host ib --iface eth1 --guid 0x... [--ping LID,...|--ping-file F] [--send LID --packets N] [--read-pps N]`

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use labs::fabric_host::ib;

#[derive(Parser)]
#[command(name = "fabric-host", version, about = "The lab host program")]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand)]
enum Mode {
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
    /// Packets per second (0: as fast as credits allow).
    #[arg(long, default_value_t = 0)]
    rate: u64,
    /// Take at most this many received packets a second (0: no limit): a slow receiver.
    #[arg(long, default_value_t = 0)]
    read_pps: u64,
    /// Stop after this many seconds (0: at SIGTERM or SIGINT, or when the ping is done).
    #[arg(long, default_value_t = 0.0)]
    for_secs: f64,
}

fn parse_guid(text: &str) -> Result<u64, String> {
    u64::from_str_radix(text.trim_start_matches("0x"), 16).map_err(|_| format!("bad GUID {text:?}"))
}

fn main() -> ExitCode {
    let Mode::Ib(args) = Cli::parse().mode;
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
        packets: args.packets,
        size: args.size,
        sl: args.sl,
        rate: args.rate,
        read_pps: args.read_pps,
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
