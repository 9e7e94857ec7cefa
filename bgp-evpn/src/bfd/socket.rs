//! The UDP sockets of single-hop BFD (RFC 5881): per address family, one
//! bound to the control port that receives, reporting each datagram's TTL
//! (hop limit), and one bound to a source port in 49152-65535 that sends
//! with TTL 255 (section 4: one source port for all packets of a session;
//! section 5: TTL 255 out, and required in).

use std::io;
use std::mem;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket as StdUdpSocket};
use std::os::fd::AsRawFd;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::Interest;
use tokio::net::UdpSocket;

use super::packet::{SOURCE_PORTS, TTL};

/// The receiving and the sending socket of one address family.
pub struct FamilySockets {
    pub receive: UdpSocket,
    pub send: UdpSocket,
}

impl FamilySockets {
    /// Binds the control port `port` on the unspecified address of
    /// `family` (IPv6 only on the IPv6 socket, so both families can hold
    /// the port), and a sending socket on the first free source port.
    pub fn bind(ipv6: bool, port: u16) -> io::Result<FamilySockets> {
        let any: IpAddr = if ipv6 { Ipv6Addr::UNSPECIFIED.into() } else { Ipv4Addr::UNSPECIFIED.into() };
        let receive = new_socket(ipv6)?;
        receive.set_reuse_address(true)?;
        if ipv6 {
            receive.set_recv_hoplimit_v6(true)?;
        } else {
            set_recv_ttl_v4(&receive)?;
        }
        receive.bind(&SocketAddr::new(any, port).into())?;
        let send = new_socket(ipv6)?;
        if ipv6 {
            send.set_unicast_hops_v6(u32::from(TTL))?;
        } else {
            send.set_ttl_v4(u32::from(TTL))?;
        }
        bind_source_port(&send, any)?;
        Ok(FamilySockets { receive: into_tokio(receive)?, send: into_tokio(send)? })
    }
}

fn new_socket(ipv6: bool) -> io::Result<Socket> {
    let domain = if ipv6 { Domain::IPV6 } else { Domain::IPV4 };
    let socket = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
    if ipv6 {
        socket.set_only_v6(true)?;
    }
    socket.set_nonblocking(true)?;
    Ok(socket)
}

fn into_tokio(socket: Socket) -> io::Result<UdpSocket> {
    UdpSocket::from_std(StdUdpSocket::from(socket))
}

/// RFC 5881 section 4: the source port is in 49152-65535. Starts at a
/// point derived from the process id so that two daemons on one host
/// rarely probe the same ports.
fn bind_source_port(socket: &Socket, any: IpAddr) -> io::Result<()> {
    let span = u32::from(SOURCE_PORTS.end() - SOURCE_PORTS.start()) + 1;
    let first = std::process::id() % span;
    let mut last_error = io::Error::from(io::ErrorKind::AddrInUse);
    for offset in 0..span {
        let port = SOURCE_PORTS.start() + ((first + offset) % span) as u16;
        match socket.bind(&SocketAddr::new(any, port).into()) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => last_error = e,
            Err(e) => return Err(e),
        }
    }
    Err(last_error)
}

/// `IP_RECVTTL`: each datagram comes with its TTL (socket2 has no setter).
fn set_recv_ttl_v4(socket: &Socket) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket and an int option of the right size.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_RECVTTL,
            (&on as *const libc::c_int).cast(),
            mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// One received datagram: its length in the buffer, its source, and the
/// TTL (hop limit) it arrived with (0 when the kernel gave none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    pub len: usize,
    pub from: SocketAddr,
    pub ttl: u8,
}

/// Waits for the next datagram on `socket` (bound by [`FamilySockets`]).
pub async fn recv_with_ttl(socket: &UdpSocket, buf: &mut [u8]) -> io::Result<Received> {
    socket.async_io(Interest::READABLE, || recvmsg_with_ttl(socket.as_raw_fd(), buf)).await
}

/// `recvmsg(2)` with the `IP_TTL` / `IPV6_HOPLIMIT` control message read.
pub(crate) fn recvmsg_with_ttl(fd: libc::c_int, buf: &mut [u8]) -> io::Result<Received> {
    // SAFETY: plain-old-data structs, zeroed is a valid value for each.
    let mut from: libc::sockaddr_storage = unsafe { mem::zeroed() };
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // Room for one int-sized control message (both options carry an int).
    let mut control = [0u64; 8];
    let mut msg: libc::msghdr = unsafe { mem::zeroed() };
    msg.msg_name = (&mut from as *mut libc::sockaddr_storage).cast();
    msg.msg_namelen = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = mem::size_of_val(&control) as _;
    // SAFETY: every pointer in `msg` points at live buffers of the sizes given.
    let len = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if len < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut ttl = 0u8;
    // SAFETY: the kernel filled `msg_controllen` bytes of `control`; the
    // CMSG_* walk stays within them, and each payload read is an int.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            let (level, kind) = ((*cmsg).cmsg_level, (*cmsg).cmsg_type);
            if (level, kind) == (libc::IPPROTO_IP, libc::IP_TTL)
                || (level, kind) == (libc::IPPROTO_IPV6, libc::IPV6_HOPLIMIT)
            {
                let value = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
                ttl = u8::try_from(value).unwrap_or(0);
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    let from = sockaddr_to_std(&from).ok_or_else(|| io::Error::other("datagram from a non-IP address"))?;
    Ok(Received { len: len as usize, from, ttl })
}

fn sockaddr_to_std(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match i32::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let sin = unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(sin.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let sin6 = unsafe { &*(storage as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip,
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}
