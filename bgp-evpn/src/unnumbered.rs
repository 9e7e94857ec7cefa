//! BGP unnumbered's neighbour discovery: on each interface with an
//! unnumbered neighbour, router advertisements (RFC 4861 section 4.2) go
//! out as FRR sends them (so the peer learns our link-local address), a
//! router solicitation at start asks the peer for its own at once, and
//! every advertisement received names the peer: its link-local source
//! address. Only packets with hop limit 255 count (RFC 4861 6.1.2: they
//! were not forwarded).

use std::io;
use std::net::{Ipv6Addr, SocketAddrV6};
use std::os::fd::AsRawFd;
use std::time::Duration;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use tokio::io::unix::AsyncFd;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::bfd::socket::recvmsg_with_ttl;

/// FRR's advertisement interval on unnumbered BGP interfaces.
const RA_INTERVAL: Duration = Duration::from_secs(10);
/// Until the interface can send (it may not exist yet, or its link-local
/// address is still tentative), try again this often.
const RETRY: Duration = Duration::from_secs(1);
const HOP_LIMIT: u32 = 255;

mod icmpv6 {
    pub const ROUTER_SOLICITATION: u8 = 133;
    pub const ROUTER_ADVERTISEMENT: u8 = 134;
    /// Option 1: Source Link-Layer Address (RFC 4861 4.6.1).
    pub const OPTION_SOURCE_LINK_LAYER: u8 = 1;
}

const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
const ALL_ROUTERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);

/// A peer found on an interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    pub interface: String,
    pub address: Ipv6Addr,
}

/// A router advertisement: we are a router for neighbour discovery only,
/// so the router lifetime is 0 (hosts must not take us as their default
/// router); reachable time and retransmit timer unspecified. The kernel
/// fills in the ICMPv6 checksum of a raw ICMPv6 socket.
pub fn router_advertisement(mac: Option<[u8; 6]>) -> Vec<u8> {
    let mut out = vec![icmpv6::ROUTER_ADVERTISEMENT, 0, 0, 0, 64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    if let Some(mac) = mac {
        out.extend_from_slice(&[icmpv6::OPTION_SOURCE_LINK_LAYER, 1]);
        out.extend_from_slice(&mac);
    }
    out
}

/// A router solicitation (RFC 4861 4.1).
pub fn router_solicitation(mac: Option<[u8; 6]>) -> Vec<u8> {
    let mut out = vec![icmpv6::ROUTER_SOLICITATION, 0, 0, 0, 0, 0, 0, 0];
    if let Some(mac) = mac {
        out.extend_from_slice(&[icmpv6::OPTION_SOURCE_LINK_LAYER, 1]);
        out.extend_from_slice(&mac);
    }
    out
}

/// What a received ICMPv6 message means here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heard {
    /// An advertisement from this (link-local) router: our peer.
    Peer(Ipv6Addr),
    /// A solicitation: answer with an advertisement now.
    Solicited,
    Other,
}

/// Classifies a message from `from` that arrived with `hop_limit`, on an
/// interface whose MAC is `own_mac`: our own advertisements, should the
/// link echo them back, name nobody.
pub fn classify(message: &[u8], from: Ipv6Addr, hop_limit: u8, own_mac: Option<[u8; 6]>) -> Heard {
    if hop_limit != 255 || own_mac.is_some_and(|mac| source_link_layer(message) == Some(mac)) {
        return Heard::Other;
    }
    match message.first() {
        // RFC 4861 6.1.2: an advertisement's source is link-local, and it
        // is at least 16 octets.
        Some(&icmpv6::ROUTER_ADVERTISEMENT) if message.len() >= 16 && is_link_local(from) => Heard::Peer(from),
        Some(&icmpv6::ROUTER_SOLICITATION) if message.len() >= 8 => Heard::Solicited,
        _ => Heard::Other,
    }
}

/// The Source Link-Layer Address option of an RA (options from octet 16)
/// or RS (from octet 8).
fn source_link_layer(message: &[u8]) -> Option<[u8; 6]> {
    let mut at = match *message.first()? {
        icmpv6::ROUTER_ADVERTISEMENT => 16,
        icmpv6::ROUTER_SOLICITATION => 8,
        _ => return None,
    };
    while let [kind, len, ..] = *message.get(at..)? {
        let end = at + usize::from(len) * 8;
        if len == 0 || end > message.len() {
            return None;
        }
        if kind == icmpv6::OPTION_SOURCE_LINK_LAYER && len == 1 {
            return message[at + 2..at + 8].try_into().ok();
        }
        at = end;
    }
    None
}

fn is_link_local(ip: Ipv6Addr) -> bool {
    ip.segments()[0] & 0xffc0 == 0xfe80
}

/// Starts discovery on each interface; peers found go to `found`.
pub fn spawn(interfaces: Vec<String>, found: mpsc::UnboundedSender<Discovered>) -> Vec<JoinHandle<()>> {
    interfaces.into_iter().map(|iface| tokio::spawn(run(iface, found.clone()))).collect()
}

fn mac_of(interface: &str) -> Option<[u8; 6]> {
    let text = std::fs::read_to_string(format!("/sys/class/net/{interface}/address")).ok()?;
    let bytes: Vec<u8> = text.trim().split(':').filter_map(|b| u8::from_str_radix(b, 16).ok()).collect();
    bytes.try_into().ok()
}

fn ifindex(interface: &str) -> Option<u32> {
    let name = std::ffi::CString::new(interface).ok()?;
    // SAFETY: a valid NUL-terminated string.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    (index != 0).then_some(index)
}

fn open(interface: &str) -> io::Result<(AsyncFd<Socket>, u32)> {
    let index = ifindex(interface).ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such interface"))?;
    let socket = Socket::new(Domain::IPV6, Type::RAW, Some(Protocol::ICMPV6))?;
    socket.bind_device(Some(interface.as_bytes()))?;
    socket.set_multicast_if_v6(index)?;
    socket.set_multicast_hops_v6(HOP_LIMIT)?;
    // Our own advertisements must not come back to us as a peer's.
    socket.set_multicast_loop_v6(false)?;
    socket.set_unicast_hops_v6(HOP_LIMIT)?;
    socket.set_recv_hoplimit_v6(true)?;
    socket.set_nonblocking(true)?;
    // SAFETY: the socket is owned by the AsyncFd from here on: its fd is
    // neither closed nor reused while registered.
    let registered = unsafe { AsyncFd::register(socket) }.map_err(|e| io::Error::other(e.to_string()))?;
    Ok((registered, index))
}

async fn run(interface: String, found: mpsc::UnboundedSender<Discovered>) {
    let (socket, index) = loop {
        match open(&interface) {
            Ok(opened) => break opened,
            Err(e) => {
                tracing::debug!(%interface, error = %e, "unnumbered: interface not ready");
                tokio::time::sleep(RETRY).await;
            }
        }
    };
    let mac = mac_of(&interface);
    let send = |message: &[u8], to: Ipv6Addr| {
        let to = SockAddr::from(SocketAddrV6::new(to, 0, 0, index));
        socket.get_ref().send_to(message, &to)
    };
    let mut solicited = false;
    let mut next_advertisement = tokio::time::Instant::now();
    let mut buf = [0u8; 1500];
    loop {
        let now = tokio::time::Instant::now();
        if now >= next_advertisement {
            let sent = send(&router_advertisement(mac), ALL_NODES);
            if !solicited && sent.is_ok() {
                solicited = send(&router_solicitation(mac), ALL_ROUTERS).is_ok();
            }
            // A tentative link-local address cannot send yet: soon again.
            next_advertisement = now + if sent.is_ok() { RA_INTERVAL } else { RETRY };
        }
        tokio::select! {
            readable = socket.readable() => {
                let Ok(mut guard) = readable else { continue };
                let received = guard.try_io(|s| recvmsg_with_ttl(s.get_ref().as_raw_fd(), &mut buf));
                let Ok(Ok(received)) = received else { continue };
                let std::net::SocketAddr::V6(from) = received.from else { continue };
                match classify(&buf[..received.len.min(buf.len())], *from.ip(), received.ttl, mac) {
                    Heard::Peer(address) => {
                        let _ = found.send(Discovered { interface: interface.clone(), address });
                    }
                    Heard::Solicited => next_advertisement = tokio::time::Instant::now(),
                    Heard::Other => {}
                }
            }
            _ = tokio::time::sleep_until(next_advertisement) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advertisements_name_the_peer_only_from_link_local_with_hop_limit_255() {
        let ll: Ipv6Addr = "fe80::1".parse().unwrap();
        let ra = router_advertisement(Some([2, 0, 0, 0, 0, 1]));
        assert_eq!(ra.len(), 24);
        assert_eq!(&ra[16..18], &[1, 1], "source link-layer address option");
        let mine = Some([2, 0, 0, 0, 0, 2]);
        assert_eq!(classify(&ra, ll, 255, mine), Heard::Peer(ll));
        assert_eq!(classify(&ra, ll, 254, mine), Heard::Other, "forwarded: not from a neighbour");
        assert_eq!(classify(&ra, "2001:db8::1".parse().unwrap(), 255, mine), Heard::Other);
        assert_eq!(classify(&ra[..8], ll, 255, mine), Heard::Other, "truncated");
        assert_eq!(classify(&router_solicitation(None), ll, 255, mine), Heard::Solicited);
        // Our own advertisement, echoed back by the link, is nobody.
        assert_eq!(classify(&router_advertisement(mine), ll, 255, mine), Heard::Other);
        // Router lifetime 0: nobody takes us as a default router.
        assert_eq!(&ra[6..8], &[0, 0]);
    }
}
