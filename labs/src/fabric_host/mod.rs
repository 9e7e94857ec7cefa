//! `fabric-host`: the lab's host program. It owns a namespace's `eth1`
//! through `AF_PACKET` and runs an endpoint's logic on it, sans-IO cores
//! from `qos::endpoint` driven by the monotonic clock here.
//!
//! - [`ib`]: an HCA-like endpoint of the IB-like plane: the CA's subnet
//!   management agent (it answers SMPs and takes the LID an SM gives it),
//!   data packets to a DLID sent only as credits allow, an ibping-like
//!   echo, a paced sender and a (possibly slow) receiver.
//! - [`roce`]: RoCEv2-like traffic (UDP 4791, BTH): a sender paced to a
//!   rate, obeying PFC pauses of its priority and running DCQCN's reaction
//!   point on CNPs; a receiver that returns CNPs for CE-marked packets and
//!   puts sprayed packets back in order.
//! - [`storm`]: a misbehaving peer that keeps a priority paused (PFC XOFF
//!   frames without end), for the switch's PFC watchdog.
//!
//! This module holds what every mode shares: the link (the `AF_PACKET`
//! socket, the interface's addresses, ARP for the next hop), the clock and
//! the size/rate arguments.

pub mod go_back_n;
pub mod ib;
pub mod roce;
pub mod storm;

use std::net::Ipv4Addr;
use std::os::fd::RawFd;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use dataplane::io::{AfPacket, AfPacketConfig, FrameBatch, PortIo};
use dataplane::wire::arp::{ArpPacket, ArpRepr, Operation};
use dataplane::wire::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr, ethernet};

/// Nanoseconds on the monotonic clock since the program started.
pub fn monotonic_ns() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// `800M`, `1G`, `100000000`: bits per second (decimal multiples).
pub fn parse_rate(text: &str) -> Result<u64, String> {
    parse_scaled(text, 1000, "bps").and_then(|r| if r == 0 { Err("a rate must be positive".into()) } else { Ok(r) })
}

/// `64M`, `4K`, `1000`: bytes (binary multiples, as `dd` and `iperf` read them).
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    parse_scaled(text, 1024, "B")
}

fn parse_scaled(text: &str, base: u64, unit: &str) -> Result<u64, String> {
    let upper = text.trim().to_ascii_uppercase();
    let trimmed = upper.strip_suffix(&unit.to_ascii_uppercase()).unwrap_or(&upper);
    let (digits, power) = match trimmed.chars().last() {
        Some('K') => (&trimmed[..trimmed.len() - 1], 1),
        Some('M') => (&trimmed[..trimmed.len() - 1], 2),
        Some('G') => (&trimmed[..trimmed.len() - 1], 3),
        Some('T') => (&trimmed[..trimmed.len() - 1], 4),
        _ => (trimmed, 0),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(base.pow(power)))
        .ok_or_else(|| format!("{text:?} is not a number with an optional K, M, G or T"))
}

/// The IPv4 address and prefix length of `interface`.
pub fn interface_ipv4(interface: &str) -> Result<(Ipv4Addr, u8), String> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list`, freed below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Err(format!("getifaddrs: {}", std::io::Error::last_os_error()));
    }
    let mut found = None;
    let mut cursor = list;
    while !cursor.is_null() {
        // SAFETY: a node of the list getifaddrs returned.
        let entry = unsafe { &*cursor };
        cursor = entry.ifa_next;
        if entry.ifa_addr.is_null() || entry.ifa_netmask.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string of the list.
        let name = unsafe { std::ffi::CStr::from_ptr(entry.ifa_name) };
        // SAFETY: ifa_addr is non-null; its family tells its type.
        if name.to_bytes() != interface.as_bytes() || i32::from(unsafe { (*entry.ifa_addr).sa_family }) != libc::AF_INET
        {
            continue;
        }
        // SAFETY: an AF_INET address is a sockaddr_in; so is its netmask.
        let (address, mask) = unsafe {
            (
                (*(entry.ifa_addr as *const libc::sockaddr_in)).sin_addr.s_addr,
                (*(entry.ifa_netmask as *const libc::sockaddr_in)).sin_addr.s_addr,
            )
        };
        found = Some((Ipv4Addr::from(u32::from_be(address)), u32::from_be(mask).count_ones() as u8));
        break;
    }
    // SAFETY: the list getifaddrs allocated.
    unsafe { libc::freeifaddrs(list) };
    found.ok_or_else(|| format!("{interface} has no IPv4 address"))
}

/// The next hop towards `destination`: itself when on `interface`'s
/// subnet, else the gateway of the longest matching route of the main table
/// (`/proc/net/route`) that leaves through `interface` (a server with one
/// NIC per rail has a route per rail).
pub fn next_hop(interface: &str, destination: Ipv4Addr) -> Result<Ipv4Addr, String> {
    let (address, prefix) = interface_ipv4(interface)?;
    let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(prefix)) };
    if u32::from(address) & mask == u32::from(destination) & mask {
        return Ok(destination);
    }
    let table = std::fs::read_to_string("/proc/net/route").map_err(|e| format!("/proc/net/route: {e}"))?;
    route_lookup(&table, interface, destination)
        .ok_or_else(|| format!("{destination} is not on {interface}'s subnet and no route through {interface} has it"))
}

/// An address as `/proc/net/route` prints it: the hex of a little-endian
/// word holding the address in network order.
fn proc_route_address(hex: &str) -> Option<Ipv4Addr> {
    u32::from_str_radix(hex, 16).ok().map(|raw| Ipv4Addr::from(u32::from_be(raw.to_le())))
}

/// The longest match for `destination` among `table`'s routes through
/// `interface`: its gateway, or `destination` itself for an on-link route.
fn route_lookup(table: &str, interface: &str, destination: Ipv4Addr) -> Option<Ipv4Addr> {
    let mut best: Option<(u32, Ipv4Addr)> = None;
    for line in table.lines().skip(1) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [iface, dest, gateway, _flags, _refcnt, _use, _metric, mask, ..] = fields[..] else { continue };
        let (Some(dest), Some(gateway), Some(mask)) =
            (proc_route_address(dest), proc_route_address(gateway), proc_route_address(mask))
        else {
            continue;
        };
        let mask = u32::from(mask);
        if iface != interface || u32::from(destination) & mask != u32::from(dest) || best.is_some_and(|(m, _)| m > mask)
        {
            continue;
        }
        best = Some((mask, if gateway.is_unspecified() { destination } else { gateway }));
    }
    best.map(|(_, hop)| hop)
}

/// The host's link: an `AF_PACKET` socket on one interface with its MAC
/// and IPv4 address.
pub struct Link {
    pub io: AfPacket,
    pub mac: EthernetAddress,
    pub ip: Ipv4Addr,
    pub batch: FrameBatch,
    pub name: String,
}

impl Link {
    pub fn open(interface: &str) -> Result<Link, String> {
        let config = AfPacketConfig { promiscuous: false, ..AfPacketConfig::for_mtu(9216) };
        let io = AfPacket::with_config(interface, config).map_err(|e| format!("AF_PACKET on {interface}: {e}"))?;
        let mac = EthernetAddress(dataplane::io::if_mac(interface).map_err(|e| format!("MAC of {interface}: {e}"))?);
        let (ip, _) = interface_ipv4(interface)?;
        let batch = FrameBatch::new(64, io_slot_len());
        Ok(Link { io, mac, ip, batch, name: interface.to_owned() })
    }

    pub fn fd(&self) -> RawFd {
        self.io.fd()
    }

    /// Queues a frame, flushing the tx ring when it is full.
    pub fn send(&mut self, frame: &[u8]) -> Result<(), String> {
        if self.io.send(frame).is_err() {
            self.io.flush().map_err(|e| format!("flush {}: {e}", self.name))?;
            self.io.send(frame).map_err(|e| format!("send on {}: {e}", self.name))?;
        }
        Ok(())
    }

    pub fn flush(&mut self) {
        let _ = self.io.flush();
    }

    /// Reads what is ready into `self.batch`.
    pub fn receive(&mut self) -> usize {
        self.batch.clear();
        self.io.recv_batch(&mut self.batch).unwrap_or(0)
    }

    /// Asks for `target`'s MAC (ARP) until it answers or `timeout` passes.
    pub fn resolve(&mut self, target: Ipv4Addr, timeout: Duration) -> Result<EthernetAddress, String> {
        let deadline = monotonic_ns() + timeout.as_nanos() as u64;
        let mut request = [0u8; 60];
        EthernetRepr { dst_addr: EthernetAddress::BROADCAST, src_addr: self.mac, ethertype: EtherType::Arp }
            .emit(&mut EthernetFrame::new_unchecked(&mut request[..]));
        ArpRepr {
            operation: Operation::Request,
            sender_hardware_addr: self.mac,
            sender_protocol_addr: self.ip,
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: target,
        }
        .emit(&mut ArpPacket::new_unchecked(&mut request[ethernet::HEADER_LEN..]));
        while monotonic_ns() < deadline {
            self.send(&request)?;
            self.flush();
            let retry = monotonic_ns() + 200_000_000;
            while monotonic_ns() < retry.min(deadline) {
                wait_readable(self.fd(), 10_000_000);
                self.receive();
                for frame in self.batch.iter() {
                    let Ok(eth) = EthernetFrame::new_checked(frame) else { continue };
                    if eth.ethertype() != EtherType::Arp {
                        continue;
                    }
                    let Ok(arp) = ArpPacket::new_checked(eth.payload()) else { continue };
                    if let Ok(reply) = ArpRepr::parse(&arp)
                        && reply.operation == Operation::Reply
                        && reply.sender_protocol_addr == target
                    {
                        return Ok(reply.sender_hardware_addr);
                    }
                }
            }
        }
        Err(format!("no ARP reply from {target} on {}", self.name))
    }
}

fn io_slot_len() -> usize {
    dataplane::io::MAX_FRAME_LEN
}

/// Waits until `fd` is readable or `timeout_ns` passes (nanosecond
/// precision, `ppoll`).
pub fn wait_readable(fd: RawFd, timeout_ns: u64) -> bool {
    let mut pollfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let timeout = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    unsafe { libc::ppoll(&mut pollfd, 1, &timeout, std::ptr::null()) > 0 }
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_longest_route_through_the_interface_is_the_next_hop() {
        // 172.16.2.0/24 via 172.16.0.1 on eth1, default via 172.16.1.1 on eth2.
        let table = "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT
eth2\t00000000\t010110AC\t0003\t0\t0\t0\t00000000\t0\t0\t0
eth1\t000210AC\t010010AC\t0003\t0\t0\t0\t00FFFFFF\t0\t0\t0
eth1\t000010AC\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
";
        let to = |a: &str| a.parse::<Ipv4Addr>().unwrap();
        assert_eq!(route_lookup(table, "eth1", to("172.16.2.10")), Some(to("172.16.0.1")));
        assert_eq!(route_lookup(table, "eth1", to("172.16.0.7")), Some(to("172.16.0.7")), "on-link");
        assert_eq!(route_lookup(table, "eth2", to("10.9.9.9")), Some(to("172.16.1.1")), "default");
        assert_eq!(route_lookup(table, "eth1", to("10.9.9.9")), None, "no route through eth1");
    }

    use super::*;

    #[test]
    fn rates_are_decimal_and_sizes_binary() {
        assert_eq!(parse_rate("800M"), Ok(800_000_000));
        assert_eq!(parse_rate("1gbps"), Ok(1_000_000_000));
        assert_eq!(parse_bytes("64M"), Ok(64 << 20));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert!(parse_rate("0").is_err());
        assert!(parse_bytes("lots").is_err());
    }
}
