//! Port I/O adapters: how frames get from a Linux network device into the
//! pipeline and back out. Thin on purpose: no forwarding logic lives here.
//!
//! * [`afpacket::AfPacket`]: a raw `AF_PACKET` socket bound to one interface
//!   (a front-panel `ethN`, usually one end of a veth pair), with
//!   `PACKET_MMAP` rx and tx rings so that a batch of frames costs one
//!   syscall, not one per frame.
//! * [`tap::Tap`]: a TAP device, used for host interfaces (the kernel side of
//!   the switch's own traffic) and for ports the config asks to be TAPs.
//!
//! Both implement [`PortIo`]. Received frames are copied into a
//! [`FrameBatch`], a fixed arena allocated once, so the steady state
//! allocates nothing.

pub mod afpacket;
pub mod gso;
pub mod offload;
pub mod tap;

use std::io;
use std::os::fd::RawFd;

pub use afpacket::{AfPacket, AfPacketConfig};
pub use tap::{Tap, TapConfig};

/// Largest Ethernet frame a port adapter hands over: a 9216-byte jumbo MTU
/// plus the Ethernet header and two VLAN tags.
pub const MAX_FRAME_LEN: usize = 9216 + 14 + 8;

/// A batch of received frames stored back to back in one arena of
/// fixed-size slots. Allocated once; [`FrameBatch::clear`] keeps it.
pub struct FrameBatch {
    arena: Box<[u8]>,
    lens: Box<[usize]>,
    slot_len: usize,
    count: usize,
}

impl FrameBatch {
    /// A batch of `capacity` frames of at most `slot_len` bytes each.
    pub fn new(capacity: usize, slot_len: usize) -> FrameBatch {
        assert!(capacity > 0 && slot_len > 0);
        FrameBatch {
            arena: vec![0; capacity * slot_len].into_boxed_slice(),
            lens: vec![0; capacity].into_boxed_slice(),
            slot_len,
            count: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.lens.len()
    }

    pub fn slot_len(&self) -> usize {
        self.slot_len
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn is_full(&self) -> bool {
        self.count == self.lens.len()
    }

    pub fn clear(&mut self) {
        self.count = 0;
    }

    /// The `index`th frame of the batch.
    pub fn get(&self, index: usize) -> Option<&[u8]> {
        if index >= self.count {
            return None;
        }
        let start = index * self.slot_len;
        Some(&self.arena[start..start + self.lens[index]])
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        (0..self.count).filter_map(move |i| self.get(i))
    }

    /// The next free slot, to be filled and then made part of the batch by
    /// [`FrameBatch::commit`]. `None` when the batch is full.
    pub fn next_slot(&mut self) -> Option<&mut [u8]> {
        if self.is_full() {
            return None;
        }
        let start = self.count * self.slot_len;
        Some(&mut self.arena[start..start + self.slot_len])
    }

    /// Appends the frame just written into [`FrameBatch::next_slot`].
    pub fn commit(&mut self, len: usize) {
        assert!(!self.is_full() && len <= self.slot_len);
        self.lens[self.count] = len;
        self.count += 1;
    }

    /// Copies `frame` into the next slot. Returns false (and keeps nothing)
    /// when the batch is full or the frame does not fit a slot.
    pub fn push(&mut self, frame: &[u8]) -> bool {
        match self.next_slot() {
            Some(slot) if frame.len() <= slot.len() => {
                slot[..frame.len()].copy_from_slice(frame);
                self.commit(frame.len());
                true
            }
            _ => false,
        }
    }
}

/// What an adapter counted on its own, below the pipeline: frames the
/// kernel or the adapter lost before the pipeline could see them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct IoStats {
    pub rx_frames: u64,
    pub rx_bytes: u64,
    pub tx_frames: u64,
    pub tx_bytes: u64,
    /// Frames longer than a slot that could not be cut into segments (not
    /// TCP, or above the configured MTU): dropped, never half-forwarded.
    pub rx_truncated: u64,
    /// Frames whose TCP/UDP checksum the sender left to offload
    /// (`TP_STATUS_CSUMNOTREADY`), completed in software on receive (see
    /// [`offload`]). Non-zero means the peer of this port has tx checksum
    /// offload on; `ethtool -K <peer> tx off` saves the work.
    pub rx_checksum_partial: u64,
    /// TCP super-frames of a peer with TSO/GSO on, cut into segments on
    /// receive (see [`gso`]); the segments count in `rx_frames`.
    pub rx_super_frames: u64,
    /// Frames the kernel dropped because the rx ring was full
    /// (`PACKET_STATISTICS`), summed over reads.
    pub rx_ring_drops: u64,
    /// Frames handed to `send` that could not be transmitted.
    pub tx_errors: u64,
    /// How long the oldest frame of each read had waited in the rx ring:
    /// the kernel's receive timestamp of the first frame a read takes
    /// against the clock after the read (`AfPacket`; one clock read per
    /// read, no syscall). What `pfc.rx-lag-ns` must cover.
    pub rx_wait: WaitHistogram,
}

/// Upper bounds of [`WaitHistogram`]'s buckets, nanoseconds: 10 us to 1 s
/// by decades (a last bucket holds what is longer).
pub const WAIT_BOUNDS_NS: [u64; 6] = [10_000, 100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000];

/// Waits by decade, with their worst and their sum.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WaitHistogram {
    /// Waits of at most `WAIT_BOUNDS_NS[i]` (not cumulative); the last,
    /// longer than a second.
    pub buckets: [u64; 7],
    pub max_ns: u64,
    pub sum_ns: u64,
}

impl WaitHistogram {
    pub fn record(&mut self, ns: u64) {
        let bucket = WAIT_BOUNDS_NS.iter().position(|&bound| ns <= bound).unwrap_or(WAIT_BOUNDS_NS.len());
        self.buckets[bucket] += 1;
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns = self.sum_ns.saturating_add(ns);
    }

    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// Waits longer than `bound_ns`, one of [`WAIT_BOUNDS_NS`] (0: all).
    pub fn over(&self, bound_ns: u64) -> u64 {
        let first = WAIT_BOUNDS_NS.iter().position(|&b| b == bound_ns).map_or(0, |i| i + 1);
        self.buckets[first..].iter().sum()
    }
}

/// `CLOCK_REALTIME` in nanoseconds, the clock of the rx ring's timestamps
/// (read through the vDSO: no syscall).
pub(crate) fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is valid for the call.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One port's I/O, whatever the device behind it.
pub trait PortIo: Send {
    /// The interface name (`eth1`, `sw-eth1`...).
    fn name(&self) -> &str;

    /// The descriptor to poll for readability.
    fn fd(&self) -> RawFd;

    /// Appends the frames that are ready to `batch`, until it is full or none
    /// is left; never blocks. Returns how many were appended.
    fn recv_batch(&mut self, batch: &mut FrameBatch) -> io::Result<usize>;

    /// Queues one frame for transmission. Adapters with a tx ring send on
    /// [`PortIo::flush`]; others send right away.
    fn send(&mut self, frame: &[u8]) -> io::Result<()>;

    /// Transmits what [`PortIo::send`] queued.
    fn flush(&mut self) -> io::Result<()>;

    fn stats(&self) -> IoStats;

    /// Whether the link under the port is up (carrier), for adapters that
    /// can tell; `None` when the question has no meaning (a TAP is up as long
    /// as it exists).
    fn link_up(&self) -> Option<bool> {
        None
    }

    /// Takes the error the socket holds (`SO_ERROR`), if any. A pending
    /// error makes the descriptor poll as ready forever, so a poller that
    /// sees `EPOLLERR` must take it (an `AF_PACKET` socket gets `ENETDOWN`
    /// when its interface goes away).
    fn take_error(&mut self) -> Option<io::Error> {
        None
    }
}

/// Copies an interface name into the fixed `ifr_name` field, refusing names
/// the kernel would refuse (empty, or `IFNAMSIZ` bytes or more).
pub(crate) fn ifreq_for(name: &str) -> io::Result<libc::ifreq> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.contains(['/', ' ', '\0']) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("invalid interface name {name:?}")));
    }
    // SAFETY: ifreq is plain old data; all zeroes is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    Ok(req)
}

/// A datagram socket to issue interface ioctls (`SIOCGIFINDEX`,
/// `SIOCSIFMTU`...) on.
pub(crate) fn control_socket() -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket(2) call; the result is checked before use.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// Runs one interface ioctl on `req`.
pub(crate) fn ifreq_ioctl(request: libc::Ioctl, req: &mut libc::ifreq) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let sock = control_socket()?;
    ifreq_ioctl_on(sock.as_raw_fd(), request, req)
}

/// Runs one interface ioctl on `req` through an existing socket.
pub(crate) fn ifreq_ioctl_on(fd: RawFd, request: libc::Ioctl, req: &mut libc::ifreq) -> io::Result<()> {
    // SAFETY: `req` is a valid ifreq for the duration of the call.
    let rc = unsafe { libc::ioctl(fd, request as _, req as *mut libc::ifreq) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The kernel's index of interface `name`.
pub fn if_index(name: &str) -> io::Result<u32> {
    let mut req = ifreq_for(name)?;
    ifreq_ioctl(libc::SIOCGIFINDEX as _, &mut req)?;
    // SAFETY: SIOCGIFINDEX filled the ifindex member of the union.
    Ok(unsafe { req.ifr_ifru.ifru_ifindex } as u32)
}

/// The hardware address of interface `name`.
pub fn if_mac(name: &str) -> io::Result<[u8; 6]> {
    let mut req = ifreq_for(name)?;
    ifreq_ioctl(libc::SIOCGIFHWADDR as _, &mut req)?;
    // SAFETY: SIOCGIFHWADDR filled the hwaddr member of the union.
    let data = unsafe { req.ifr_ifru.ifru_hwaddr.sa_data };
    let mut mac = [0u8; 6];
    for (dst, src) in mac.iter_mut().zip(data.iter()) {
        *dst = *src as u8;
    }
    Ok(mac)
}

/// Whether interface `name` is administratively up and has carrier
/// (`IFF_UP` and `IFF_RUNNING`; a veth loses `IFF_RUNNING` when its peer
/// goes down or away).
pub fn if_running(name: &str) -> io::Result<bool> {
    let sock = control_socket()?;
    if_running_on(std::os::fd::AsRawFd::as_raw_fd(&sock), name)
}

/// [`if_running`] through an existing socket (no socket per call).
pub(crate) fn if_running_on(fd: RawFd, name: &str) -> io::Result<bool> {
    let mut req = ifreq_for(name)?;
    ifreq_ioctl_on(fd, libc::SIOCGIFFLAGS as _, &mut req)?;
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
    let flags = i32::from(unsafe { req.ifr_ifru.ifru_flags });
    Ok(flags & libc::IFF_UP != 0 && flags & libc::IFF_RUNNING != 0)
}

/// Sets the MTU of interface `name`.
pub fn set_if_mtu(name: &str, mtu: u32) -> io::Result<()> {
    let mut req = ifreq_for(name)?;
    req.ifr_ifru.ifru_mtu = mtu as libc::c_int;
    ifreq_ioctl(libc::SIOCSIFMTU as _, &mut req)
}

/// Sets the hardware address of interface `name`.
pub fn set_if_mac(name: &str, mac: [u8; 6]) -> io::Result<()> {
    let mut req = ifreq_for(name)?;
    // SAFETY: writing the hwaddr member of a zeroed POD union.
    unsafe {
        req.ifr_ifru.ifru_hwaddr.sa_family = libc::ARPHRD_ETHER;
        for (dst, src) in req.ifr_ifru.ifru_hwaddr.sa_data.iter_mut().zip(mac) {
            *dst = src as libc::c_char;
        }
    }
    ifreq_ioctl(libc::SIOCSIFHWADDR as _, &mut req)
}

/// Brings interface `name` administratively up or down.
pub fn set_if_up(name: &str, up: bool) -> io::Result<()> {
    let mut req = ifreq_for(name)?;
    ifreq_ioctl(libc::SIOCGIFFLAGS as _, &mut req)?;
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
    let mut flags = unsafe { req.ifr_ifru.ifru_flags };
    if up {
        flags |= libc::IFF_UP as libc::c_short;
    } else {
        flags &= !(libc::IFF_UP as libc::c_short);
    }
    req.ifr_ifru.ifru_flags = flags;
    ifreq_ioctl(libc::SIOCSIFFLAGS as _, &mut req)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_batch_keeps_frames_in_order_and_refuses_what_does_not_fit() {
        let mut batch = FrameBatch::new(2, 8);
        assert!(batch.is_empty());
        assert!(batch.push(&[1, 2, 3]));
        assert!(!batch.push(&[0; 9]), "longer than a slot");
        let slot = batch.next_slot().unwrap();
        slot[..2].copy_from_slice(&[7, 8]);
        batch.commit(2);
        assert!(batch.is_full());
        assert!(!batch.push(&[1]), "full");
        assert_eq!(batch.iter().collect::<Vec<_>>(), vec![&[1, 2, 3][..], &[7, 8][..]]);
        assert_eq!(batch.get(2), None);
        batch.clear();
        assert_eq!(batch.len(), 0);
        assert!(batch.push(&[9; 8]));
        assert_eq!(batch.get(0), Some(&[9; 8][..]));
    }

    #[test]
    fn waits_land_in_their_decade() {
        let mut wait = WaitHistogram::default();
        for ns in [0, 10_000, 10_001, 5_000_000, 2_000_000_000] {
            wait.record(ns);
        }
        assert_eq!(wait.buckets, [2, 1, 0, 1, 0, 0, 1]);
        assert_eq!((wait.count(), wait.max_ns, wait.over(1_000_000), wait.over(0)), (5, 2_000_000_000, 2, 5));
    }

    #[test]
    fn interface_names_the_kernel_would_refuse_are_refused() {
        assert!(ifreq_for("eth1").is_ok());
        assert!(ifreq_for("").is_err());
        assert!(ifreq_for("a-name-that-is-too-long").is_err());
        assert!(ifreq_for("eth/1").is_err());
    }
}
