//! Session protection on the TCP sockets of BGP sessions, through the kernel:
//! TCP MD5 signatures (RFC 2385, `TCP_MD5SIG`) and the Generalized TTL
//! Security Mechanism (RFC 5082, `IP_MINTTL` / `IPV6_MINHOPCOUNT`).
//!
//! Both are per neighbour. A listening socket carries one MD5 key per
//! neighbour address (the kernel picks it by the SYN's source, and accepted
//! sockets inherit it); an outgoing socket gets its neighbour's key before
//! `connect`. The kernel drops unsigned or badly signed segments itself and
//! logs "MD5 Hash mismatch"/"MD5 Hash NOT expected" — nothing reaches us.

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;

use serde::{Deserialize, Serialize};

/// RFC 2385 key length limit in Linux (`TCP_MD5SIG_MAXKEYLEN`).
pub const MD5_MAX_KEY_LEN: usize = 80;

/// A neighbour's TCP MD5 password. `Debug` and `Display` never show it, so it
/// cannot reach logs or `{:?}` dumps of the configuration.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Password(String);

impl Password {
    pub fn new(secret: impl Into<String>) -> Password {
        Password(secret.into())
    }
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
    /// The error for an unusable password, without its text.
    pub fn check(&self) -> Result<(), String> {
        match self.0.len() {
            0 => Err("must not be empty".into()),
            n if n > MD5_MAX_KEY_LEN => {
                Err(format!("at most {MD5_MAX_KEY_LEN} bytes (Linux TCP_MD5SIG_MAXKEYLEN), got {n}"))
            }
            _ => Ok(()),
        }
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(<hidden>)")
    }
}

impl fmt::Display for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<hidden>")
    }
}

/// Linux `struct tcp_md5sig` (include/uapi/linux/tcp.h); libc does not export it.
#[repr(C)]
struct TcpMd5Sig {
    tcpm_addr: libc::sockaddr_storage,
    tcpm_flags: u8,
    tcpm_prefixlen: u8,
    tcpm_keylen: u16,
    tcpm_ifindex: i32,
    tcpm_key: [u8; MD5_MAX_KEY_LEN],
}

/// Installs (`Some`) or removes (`None`) the MD5 key for segments to and
/// from `peer` on `socket`. On an IPv6 socket an IPv4 peer is given as its
/// IPv4-mapped address, which the kernel turns into an IPv4 key.
pub fn set_md5_key(socket: &impl AsRawFd, socket_is_v6: bool, peer: IpAddr, key: Option<&Password>) -> io::Result<()> {
    // SAFETY: all-zero is a valid value of this plain C struct.
    let mut sig: TcpMd5Sig = unsafe { std::mem::zeroed() };
    let storage = &mut sig.tcpm_addr as *mut libc::sockaddr_storage;
    match (peer, socket_is_v6) {
        (IpAddr::V4(v4), false) => {
            // SAFETY: sockaddr_storage is large and aligned enough for sockaddr_in.
            let sin = unsafe { &mut *(storage as *mut libc::sockaddr_in) };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_addr.s_addr = u32::from(v4).to_be();
        }
        (ip, true) => {
            let v6 = match ip {
                IpAddr::V4(v4) => v4.to_ipv6_mapped(),
                IpAddr::V6(v6) => v6,
            };
            // SAFETY: sockaddr_storage is large and aligned enough for sockaddr_in6.
            let sin6 = unsafe { &mut *(storage as *mut libc::sockaddr_in6) };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_addr.s6_addr = v6.octets();
        }
        (IpAddr::V6(_), false) => {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "IPv6 peer on an IPv4 socket"));
        }
    }
    if let Some(key) = key {
        key.check().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("password: {e}")))?;
        let bytes = key.as_bytes();
        sig.tcpm_key[..bytes.len()].copy_from_slice(bytes);
        sig.tcpm_keylen = bytes.len() as u16;
    }
    // SAFETY: `sig` is a valid tcp_md5sig and the length passed is its size.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_MD5SIG,
            &sig as *const TcpMd5Sig as *const libc::c_void,
            std::mem::size_of::<TcpMd5Sig>() as libc::socklen_t,
        )
    };
    if rc != 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

fn set_int_opt(socket: &impl AsRawFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: an int option with its correct length.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            &value as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Linux's `IP_TTL` / `IPV6_UNICAST_HOPS` value meaning "the system default".
const DEFAULT_TTL: libc::c_int = -1;

/// GTSM on the shared listening socket. An accepted socket gets its own
/// neighbour's minimum only after `accept`, by which time the peer's first
/// segments (its OPEN) may already sit in the receive queue unchecked; so
/// the listener itself must drop SYNs that travelled too far. It serves every
/// neighbour, so it enforces the loosest requirement among them: when every
/// neighbour has GTSM, the largest hop count; when any has none, nothing
/// (then a GTSM neighbour's check starts at `accept`, which RFC 5082 section
/// 3 does not strictly satisfy: give all neighbours GTSM). Replies (SYN-ACK)
/// go out with TTL 255 whenever any neighbour has GTSM, so a peer enforcing
/// GTSM on its connect accepts them. With no GTSM neighbour left (the last
/// one removed at run time) both go back to the system's defaults.
pub fn set_listener_gtsm(socket: &impl AsRawFd, socket_is_v6: bool, hops: &[Option<u8>]) -> io::Result<()> {
    let any = hops.iter().any(Option::is_some);
    let loosest = if hops.iter().all(Option::is_some) { hops.iter().flatten().max().copied() } else { None };
    let min_ttl = loosest.map_or(0, |h| 256 - libc::c_int::from(h.clamp(1, 254)));
    let ttl = if any { 255 } else { DEFAULT_TTL };
    // IPv4 options on an IPv6 socket apply to its IPv4-mapped traffic.
    set_int_opt(socket, libc::IPPROTO_IP, libc::IP_TTL, ttl)?;
    set_int_opt(socket, libc::IPPROTO_IP, libc::IP_MINTTL, min_ttl)?;
    if socket_is_v6 {
        set_int_opt(socket, libc::IPPROTO_IPV6, libc::IPV6_UNICAST_HOPS, ttl)?;
        set_int_opt(socket, libc::IPPROTO_IPV6, libc::IPV6_MINHOPCOUNT, min_ttl)?;
    }
    Ok(())
}

/// RFC 5082 section 3: send with TTL (hop limit) 255 and accept only
/// segments whose TTL shows at most `hops` hops travelled, i.e. TTL >=
/// 256 - hops (`hops` 1 = directly connected). `peer` picks IPv4 or IPv6
/// options; an IPv4 peer on an IPv6 socket (IPv4-mapped) is IPv4 on the wire.
pub fn set_gtsm(socket: &impl AsRawFd, peer: SocketAddr, hops: u8) -> io::Result<()> {
    let min_ttl = 256 - libc::c_int::from(hops.clamp(1, 254));
    let v4_on_wire = match peer.ip() {
        IpAddr::V4(_) => true,
        IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some(),
    };
    if v4_on_wire {
        set_int_opt(socket, libc::IPPROTO_IP, libc::IP_TTL, 255)?;
        set_int_opt(socket, libc::IPPROTO_IP, libc::IP_MINTTL, min_ttl)
    } else {
        set_int_opt(socket, libc::IPPROTO_IPV6, libc::IPV6_UNICAST_HOPS, 255)?;
        set_int_opt(socket, libc::IPPROTO_IPV6, libc::IPV6_MINHOPCOUNT, min_ttl)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use std::time::Duration;
    use tokio::net::TcpSocket;

    #[test]
    fn password_is_hidden_from_debug_and_display() {
        let p = Password::new("s3cret-pass");
        assert!(!format!("{p:?}").contains("s3cret"));
        assert!(!format!("{p}").contains("s3cret"));
        assert_eq!(p.as_bytes(), b"s3cret-pass");
    }

    #[test]
    fn password_length_checked() {
        assert!(Password::new("").check().is_err());
        assert!(Password::new("x".repeat(81)).check().unwrap_err().contains("80"));
        assert!(Password::new("x".repeat(80)).check().is_ok());
    }

    /// Listener with a key for 127.0.0.1; a connect from 127.0.0.1 with
    /// `client_key` either completes or is never answered (the kernel drops
    /// the mis-signed SYN).
    async fn md5_connect(listener_key: &str, client_key: Option<&str>) -> bool {
        let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let listen = TcpSocket::new_v4().unwrap();
        set_md5_key(&listen, false, lo, Some(&Password::new(listener_key))).unwrap();
        listen.bind(SocketAddr::new(lo, 0)).unwrap();
        let listener = listen.listen(8).unwrap();
        let addr = listener.local_addr().unwrap();
        let client = TcpSocket::new_v4().unwrap();
        if let Some(k) = client_key {
            set_md5_key(&client, false, lo, Some(&Password::new(k))).unwrap();
        }
        let accept = async { listener.accept().await.map(|_| ()) };
        let both = async { tokio::try_join!(client.connect(addr), accept).is_ok() };
        // A dropped SYN is retried after 1 s; two seconds without an answer
        // means the kernel refused the signature.
        tokio::time::timeout(Duration::from_secs(2), both).await.unwrap_or(false)
    }

    #[tokio::test]
    async fn md5_matching_keys_connect_wrong_or_missing_do_not() {
        assert!(md5_connect("fabric-key", Some("fabric-key")).await, "matching keys must connect");
        assert!(!md5_connect("fabric-key", Some("other-key")).await, "a wrong key must not connect");
        assert!(!md5_connect("fabric-key", None).await, "an unsigned SYN must not connect");
    }

    #[tokio::test]
    async fn md5_ipv4_peer_on_dual_stack_socket() {
        let sock = TcpSocket::new_v6().unwrap();
        set_md5_key(&sock, true, IpAddr::V4(Ipv4Addr::LOCALHOST), Some(&Password::new("k"))).unwrap();
        set_md5_key(&sock, true, IpAddr::V4(Ipv4Addr::LOCALHOST), None).unwrap();
    }

    fn min_ttl(sock: &impl AsRawFd) -> libc::c_int {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: reading an int option into an int.
        let rc = unsafe {
            libc::getsockopt(
                sock.as_raw_fd(),
                libc::IPPROTO_IP,
                libc::IP_MINTTL,
                &mut v as *mut libc::c_int as *mut libc::c_void,
                &mut len,
            )
        };
        assert_eq!(rc, 0);
        v
    }

    #[test]
    fn listener_gtsm_enforces_the_loosest_neighbour() {
        let all = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        set_listener_gtsm(&all, false, &[Some(1), Some(2)]).unwrap();
        assert_eq!((min_ttl(&all), all.ttl().unwrap()), (254, 255));
        let mixed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        set_listener_gtsm(&mixed, false, &[Some(1), None]).unwrap();
        assert_eq!((min_ttl(&mixed), mixed.ttl().unwrap()), (0, 255));
        let none = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        set_listener_gtsm(&none, false, &[None]).unwrap();
        assert_eq!(min_ttl(&none), 0);
        assert_ne!(none.ttl().unwrap(), 255);
        let default_ttl = none.ttl().unwrap();
        // The last GTSM neighbour removed: the listener checks nothing more.
        set_listener_gtsm(&all, false, &[None]).unwrap();
        assert_eq!((min_ttl(&all), all.ttl().unwrap()), (0, default_ttl));
        let v6 = std::net::TcpListener::bind("[::1]:0").unwrap();
        set_listener_gtsm(&v6, true, &[Some(1)]).unwrap();
        set_listener_gtsm(&v6, true, &[]).unwrap();
        assert_eq!(min_ttl(&v6), 0);
    }

    #[test]
    fn gtsm_sets_ttl_255_and_min_ttl() {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        set_gtsm(&sock, "127.0.0.1:179".parse().unwrap(), 1).unwrap();
        assert_eq!(sock.ttl().unwrap(), 255);
        assert_eq!(min_ttl(&sock), 255);
    }
}
