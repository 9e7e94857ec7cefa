//! ICMP echo to many addresses at once from inside a namespace, on one raw
//! socket: the all-pairs ping of `labs check` without a process per pair
//! (16k pairs in a 64-host lab). Frames built and read with the dataplane's
//! wire formats.

use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use dataplane::wire::icmpv4::{Icmpv4Packet, Icmpv4Repr};
use dataplane::wire::ipv4::Ipv4Packet;

/// What one round found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PingRound {
    /// Targets the kernel had no route to (not a pair).
    pub unroutable: Vec<Ipv4Addr>,
    /// Targets that were sent an echo and did not answer within the wait.
    pub unanswered: Vec<Ipv4Addr>,
    pub answered: usize,
}

static NEXT_IDENT: AtomicU16 = AtomicU16::new(1);
const PAYLOAD: &[u8] = b"labs check echo";
/// Between two echo requests of a round.
const SEND_GAP: Duration = Duration::from_micros(100);

/// Sends one echo request to each target from namespace `ns` and waits up
/// to `wait` for the replies.
pub fn ping_round(ns: &str, targets: &[Ipv4Addr], wait: Duration) -> Result<PingRound, String> {
    if targets.len() > usize::from(u16::MAX) {
        return Err(format!("{} targets: at most {} per round", targets.len(), u16::MAX));
    }
    let targets = targets.to_vec();
    crate::netns::enter(ns, move || round(&targets, wait))
}

fn round(targets: &[Ipv4Addr], wait: Duration) -> Result<PingRound, String> {
    // SAFETY: plain socket(2); owned below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::IPPROTO_ICMP) };
    if fd < 0 {
        return Err(format!("raw ICMP socket: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: fd is a new socket nobody else owns.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    // Every reply of a round may arrive before the first is read.
    let rcvbuf: libc::c_int = 4 << 20;
    // SAFETY: setsockopt with an int option on our socket.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&rcvbuf as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    let ident = NEXT_IDENT.fetch_add(1, Ordering::Relaxed) ^ (std::process::id() as u16);
    let mut result = PingRound::default();
    let mut waiting = vec![false; targets.len()];
    let mut frame = [0u8; 8 + PAYLOAD.len()];
    for (seq, target) in targets.iter().enumerate() {
        let repr = Icmpv4Repr::EchoRequest { ident, seq_no: seq as u16, data: PAYLOAD };
        let mut packet = Icmpv4Packet::new_unchecked(&mut frame[..]);
        repr.emit(&mut packet);
        let address = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr { s_addr: u32::from(*target).to_be() },
            sin_zero: [0; 8],
        };
        // SAFETY: frame and address live across the call; lengths are theirs.
        let sent = unsafe {
            libc::sendto(
                socket.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                0,
                (&address as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        // Paced, so a round is not one burst into the switches' rings.
        std::thread::sleep(SEND_GAP);
        if sent < 0 {
            let error = std::io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::ENETUNREACH) | Some(libc::EHOSTUNREACH) => result.unroutable.push(*target),
                // A neighbour that failed to resolve before: it counts as unanswered.
                _ => waiting[seq] = true,
            }
        } else {
            waiting[seq] = true;
        }
    }
    let deadline = Instant::now() + wait;
    let mut buffer = [0u8; 2048];
    while waiting.iter().any(|w| *w) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let mut poll = libc::pollfd { fd: socket.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one pollfd, alive across the call.
        let ready = unsafe { libc::poll(&mut poll, 1, left.as_millis().max(1) as libc::c_int) };
        if ready <= 0 {
            continue;
        }
        // SAFETY: buffer is writable for its length.
        let len =
            unsafe { libc::recv(socket.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len(), libc::MSG_DONTWAIT) };
        if len <= 0 {
            continue;
        }
        // Raw ICMP sockets deliver the IPv4 header too; anything that does
        // not parse is someone else's packet.
        let Ok(ip) = Ipv4Packet::new_checked(&buffer[..len as usize]) else { continue };
        let source = ip.src_addr();
        let Ok(icmp) = Icmpv4Packet::new_checked(ip.payload()) else { continue };
        if let Ok(Icmpv4Repr::EchoReply { ident: id, seq_no, .. }) = Icmpv4Repr::parse(&icmp) {
            let seq = usize::from(seq_no);
            if id == ident && seq < targets.len() && targets[seq] == source && waiting[seq] {
                waiting[seq] = false;
                result.answered += 1;
            }
        }
    }
    result.unanswered = targets.iter().zip(&waiting).filter(|(_, w)| **w).map(|(t, _)| *t).collect();
    Ok(result)
}
