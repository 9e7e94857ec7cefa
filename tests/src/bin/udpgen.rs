//! `udpgen`: a UDP load generator for benchmarks, sending pre-built
//! Ethernet/IPv4/UDP frames out of one interface through an AF_PACKET tx
//! ring as fast as the ring drains, for a fixed time, cycling over many
//! source ports so that every inner flow differs.
//!
//! ```text
//! udpgen IFACE SRC_MAC DST_MAC SRC_IP DST_IP SECONDS [FRAME_LEN] [FLOWS] [PPS]
//! ```
//! With `PPS`, the sender paces itself to that rate (in bursts of 64);
//! without, it sends as fast as it can.
//! Prints the frames sent and the rate. Run it inside the sender's
//! namespace (`ip netns exec`).

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use dataplane::io::{AfPacket, AfPacketConfig, PortIo};

fn parse_mac(text: &str) -> [u8; 6] {
    let bytes: Vec<u8> = text.split(':').map(|b| u8::from_str_radix(b, 16).expect("hex MAC byte")).collect();
    bytes.try_into().expect("six MAC bytes")
}

/// RFC 1071 one's-complement sum of the IPv4 header.
fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for chunk in header.chunks(2) {
        sum += u32::from(u16::from_be_bytes([chunk[0], *chunk.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn build(frame: &mut [u8], src_mac: [u8; 6], dst_mac: [u8; 6], src: Ipv4Addr, dst: Ipv4Addr, sport: u16) {
    let len = frame.len();
    frame[..6].copy_from_slice(&dst_mac);
    frame[6..12].copy_from_slice(&src_mac);
    frame[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut frame[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((len - 14) as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&src.octets());
    ip[16..20].copy_from_slice(&dst.octets());
    let checksum = ipv4_checksum(ip);
    ip[10..12].copy_from_slice(&checksum.to_be_bytes());
    let udp = &mut frame[34..42];
    udp[0..2].copy_from_slice(&sport.to_be_bytes());
    udp[2..4].copy_from_slice(&9u16.to_be_bytes()); // discard
    udp[4..6].copy_from_slice(&((len - 34) as u16).to_be_bytes());
    // UDP checksum 0: none (RFC 768), valid over IPv4.
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 7 {
        eprintln!("usage: udpgen IFACE SRC_MAC DST_MAC SRC_IP DST_IP SECONDS [FRAME_LEN] [FLOWS] [PPS]");
        std::process::exit(2);
    }
    let iface = &args[1];
    let src_mac = parse_mac(&args[2]);
    let dst_mac = parse_mac(&args[3]);
    let src: Ipv4Addr = args[4].parse().expect("SRC_IP");
    let dst: Ipv4Addr = args[5].parse().expect("DST_IP");
    let seconds: f64 = args[6].parse().expect("SECONDS");
    let frame_len: usize = args.get(7).map(|s| s.parse().expect("FRAME_LEN")).unwrap_or(64).max(60);
    let flows: usize = args.get(8).map(|s| s.parse().expect("FLOWS")).unwrap_or(256).max(1);
    let pps: Option<f64> = args.get(9).map(|s| s.parse().expect("PPS"));

    let frames: Vec<Vec<u8>> = (0..flows)
        .map(|i| {
            let mut frame = vec![0u8; frame_len];
            build(&mut frame, src_mac, dst_mac, src, dst, 10_000 + i as u16);
            frame
        })
        .collect();
    let config = AfPacketConfig { tx_frames: 4096, rx_frames: 64, promiscuous: false, ..AfPacketConfig::default() };
    let mut port = AfPacket::with_config(iface, config).expect("open AF_PACKET on the interface");
    let duration = Duration::from_secs_f64(seconds);
    let start = Instant::now();
    let mut sent: u64 = 0;
    'run: loop {
        for frame in &frames {
            // Flushed every 64 frames; the clock read every 1024.
            let _ = port.send(frame);
            sent += 1;
            if sent.is_multiple_of(64) {
                let _ = port.flush();
                if let Some(pps) = pps {
                    let due = Duration::from_secs_f64(sent as f64 / pps);
                    if let Some(ahead) = due.checked_sub(start.elapsed()) {
                        std::thread::sleep(ahead);
                    }
                }
                if sent.is_multiple_of(1024) && start.elapsed() >= duration {
                    break 'run;
                }
            }
        }
    }
    let _ = port.flush();
    let elapsed = start.elapsed().as_secs_f64();
    let stats = port.stats();
    println!(
        "sent {} frames of {frame_len} bytes in {elapsed:.2} s: {:.0} pps (tx errors {})",
        stats.tx_frames,
        stats.tx_frames as f64 / elapsed,
        stats.tx_errors
    );
}
