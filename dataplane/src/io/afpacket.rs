//! A raw `AF_PACKET` socket bound to one interface, with `PACKET_MMAP`
//! rings (TPACKET_V2) for rx and tx.
//!
//! Why these choices:
//! * `libc` rather than `pnet_datalink`: pnet's Linux channel costs a
//!   `poll` and a `recvfrom`/`recvmsg` per received frame (and a `poll` and a
//!   `sendto` per sent one), has no `PACKET_MMAP` ring, and hands the VLAN
//!   tag the kernel stripped back only as aux data (its recent `next_msg`),
//!   leaving reinsertion to the caller. A switch needs batched ring I/O and
//!   tags in the frame; `libc` has every constant and struct needed.
//! * TPACKET_V2 rather than V3: V3's block-based rx ring delivers a block
//!   only when it is full or its timer fires, which adds latency at low
//!   rates, and its tx ring brings nothing over V2's. V2 hands each frame
//!   over as soon as it lands, with `tp_vlan_tci`/`tp_vlan_tpid` per frame.
//! * VLAN tags: the kernel always strips the outer 802.1Q tag into skb
//!   metadata before `AF_PACKET` sees the frame (hardware offload or
//!   `skb_vlan_untag`), whatever ethtool says. The ring header carries it
//!   (`TP_STATUS_VLAN_VALID`), and [`AfPacket::recv_batch`] puts it back in
//!   the frame, so the pipeline sees the frame as it was on the wire.
//! * `PACKET_IGNORE_OUTGOING`: without it the socket would read back every
//!   frame it transmits.
//! * Checksums: a peer with tx checksum offload sends TCP/UDP with the
//!   checksum left for the "hardware" (`TP_STATUS_CSUMNOTREADY`); the adapter
//!   completes it on receive ([`super::offload`]) and counts it.
//! * TSO/GSO: a peer with the kernel's default offloads sends TCP super-frames
//!   of up to 64 KiB, longer than a slot. `PACKET_COPY_THRESH` makes the
//!   kernel queue such a frame whole on the socket as well (the slot says
//!   `TP_STATUS_COPY`); it is read with `recv` and cut into MTU-sized segments
//!   ([`super::gso`]), as the sender's NIC would have. Slots stay MTU-sized.
//!   What cannot be cut (not TCP) is counted in `rx_truncated` and dropped.
//! * Slots smaller than the MTU: the same path carries a jumbo frame on a
//!   port whose slots are smaller (`frame_size` below what `for_mtu` would
//!   give): it is read whole with `recv` and sent with `send`. A ring's
//!   memory is allocated at setup and resident for the socket's life (the
//!   kernel writes every slot in turn), while the socket's queue holds a
//!   frame only while it waits; so a lab of many idle switches with jumbo
//!   ports keeps small slots and pays a copy and a system call per jumbo
//!   frame instead (see `docs/benchmarks.md`, "Labs").

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use super::gso::{MAX_SUPER_FRAME, Segmenter, fits_mtu};
use super::{FrameBatch, IoStats, PortIo, if_index, if_running_on};

/// Room for the VLAN tag the kernel strips from a super-frame read with `recv`.
const TAG_ROOM: usize = 4;

/// Socket receive buffer for super-frames queued beside the ring (the kernel
/// copies one only while the socket's queue is below it).
const SUPER_FRAME_QUEUE_BYTES: libc::c_int = 4 << 20;

/// Sizes of the rings. Slots are fixed size; a frame longer than
/// `frame_size` minus the ring header goes through the socket's own queue
/// instead (a copy and a system call per frame; see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AfPacketConfig {
    /// Bytes per ring slot: a power of two, at least 2048 for a 1500-byte MTU
    /// (the V2 header and sockaddr take about 80 bytes of it).
    pub frame_size: usize,
    pub rx_frames: usize,
    pub tx_frames: usize,
    /// Receive frames for every destination MAC (a switch port must).
    pub promiscuous: bool,
    /// The interface's MTU: TCP super-frames are cut into segments whose IP
    /// packets fit it.
    pub mtu: u32,
    /// The EtherType the socket receives (`ETH_P_ALL` for every frame, as
    /// a port needs; an agent of one protocol binds to its own, so other
    /// traffic neither costs it copies nor fills its ring).
    pub protocol: u16,
}

impl Default for AfPacketConfig {
    fn default() -> Self {
        AfPacketConfig {
            frame_size: 2048,
            rx_frames: 4096,
            tx_frames: 1024,
            promiscuous: true,
            mtu: 1500,
            protocol: libc::ETH_P_ALL as u16,
        }
    }
}

impl AfPacketConfig {
    /// Slots large enough for frames of an interface with this MTU, and as
    /// many as fit a fixed memory budget per ring (8 MiB rx, 2 MiB tx), so a
    /// jumbo port holds fewer, larger slots instead of 64 MiB of ring.
    pub fn for_mtu(mtu: u32) -> AfPacketConfig {
        const RX_RING_BYTES: usize = 8 << 20;
        const TX_RING_BYTES: usize = 2 << 20;
        let needed = mtu as usize + 14 + 8 + 128;
        let frame_size = needed.next_power_of_two().max(2048);
        AfPacketConfig {
            frame_size,
            rx_frames: (RX_RING_BYTES / frame_size).max(256),
            tx_frames: (TX_RING_BYTES / frame_size).max(64),
            promiscuous: true,
            mtu,
            protocol: libc::ETH_P_ALL as u16,
        }
    }
}

/// The smallest ring slot: its header and address (about 80 bytes) and
/// room for the control plane's frames (ARP, BGP keepalives, LLDP, ICMP
/// echoes, TCP ACKs) in the slot itself; anything longer goes through the
/// socket's queue (see the module comment).
pub const MIN_FRAME_SIZE: usize = 512;

/// Where a V2 tx frame's data starts in its slot: the kernel reads it from
/// `TPACKET2_HDRLEN - sizeof(sockaddr_ll)` unless `PACKET_TX_HAS_OFF` is set
/// (Documentation/networking/packet_mmap.rst, "TX ring").
const TX_DATA_OFFSET: usize = libc::TPACKET2_HDRLEN - std::mem::size_of::<libc::sockaddr_ll>();

/// One ring inside the shared mapping: `frames` slots of `frame_size` bytes.
struct Ring {
    base: NonNull<u8>,
    frame_size: usize,
    frames: usize,
    head: usize,
}

impl Ring {
    fn slot(&self, index: usize) -> *mut u8 {
        // SAFETY: index < frames, so the offset stays inside the mapping.
        unsafe { self.base.as_ptr().add(index * self.frame_size) }
    }

    fn header(&self, index: usize) -> *mut libc::tpacket2_hdr {
        self.slot(index).cast()
    }

    /// The slot's status word, shared with the kernel: read with acquire and
    /// written with release so frame contents are ordered around it.
    fn status(&self, index: usize) -> &AtomicU32 {
        // SAFETY: tp_status is the first, 4-byte aligned u32 of the slot's
        // header; the mapping outlives the returned reference (tied to &self).
        unsafe { AtomicU32::from_ptr(std::ptr::addr_of_mut!((*self.header(index)).tp_status)) }
    }

    fn advance(&mut self) {
        self.head = (self.head + 1) % self.frames;
    }
}

/// An `AF_PACKET` port.
pub struct AfPacket {
    name: String,
    ifindex: u32,
    fd: OwnedFd,
    map: NonNull<u8>,
    map_len: usize,
    rx: Ring,
    tx: Ring,
    tx_pending: usize,
    stats: IoStats,
    mtu: usize,
    /// The super-frame being cut into segments, across calls when a batch
    /// fills up in the middle of one. Made at the first frame longer than a
    /// slot: 64 KiB a port that most ports of an idle switch never use.
    segmenter: Option<Box<Segmenter>>,
    /// The socket [`AfPacket::send_direct`] sends with, opened when first needed.
    direct: Option<OwnedFd>,
}

// SAFETY: the mapping is owned by this value alone and only touched through
// &mut self (the kernel is the other party, synchronised by the status words).
unsafe impl Send for AfPacket {}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(rc) }
}

fn setsockopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: value points to a live T of the size given.
    check(unsafe {
        libc::setsockopt(fd, level, name, (value as *const T).cast(), std::mem::size_of::<T>() as libc::socklen_t)
    })
    .map(drop)
}

impl AfPacket {
    /// Opens a socket on interface `name` with default ring sizes.
    pub fn open(name: &str) -> io::Result<AfPacket> {
        Self::with_config(name, AfPacketConfig::default())
    }

    pub fn with_config(name: &str, config: AfPacketConfig) -> io::Result<AfPacket> {
        let frame_size = config.frame_size;
        if !frame_size.is_power_of_two()
            || frame_size < MIN_FRAME_SIZE
            || config.rx_frames == 0
            || config.tx_frames == 0
        {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "bad AF_PACKET ring geometry"));
        }
        let ifindex = if_index(name)?;

        // Protocol 0 until bind: no frame is queued before the rings exist.
        // SAFETY: plain socket(2) call, checked.
        let raw = check(unsafe {
            libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
        })?;
        // SAFETY: raw is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };

        let version = libc::tpacket_versions::TPACKET_V2 as libc::c_int;
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_VERSION, &version)?;
        let one: libc::c_int = 1;
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &one)?;
        // A frame the kernel refuses to send (too long...) is skipped instead
        // of stalling the tx ring.
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_LOSS, &one)?;
        // Our frames need no qdisc (veth has none anyway); failure is harmless.
        let _ = setsockopt(raw, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &one);
        // Frames longer than a slot (GSO super-frames) are also queued whole
        // on the socket, for recv (see the module comment).
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_COPY_THRESH, &one)?;
        if setsockopt(raw, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &SUPER_FRAME_QUEUE_BYTES).is_err() {
            let _ = setsockopt(raw, libc::SOL_SOCKET, libc::SO_RCVBUF, &SUPER_FRAME_QUEUE_BYTES);
        }

        // Ring geometry: blocks of one page-multiple holding whole frames.
        let block_size = frame_size.max(page_size());
        let frames_per_block = block_size / frame_size;
        let rx_frames = config.rx_frames.div_ceil(frames_per_block) * frames_per_block;
        let tx_frames = config.tx_frames.div_ceil(frames_per_block) * frames_per_block;
        let request = |frames: usize| libc::tpacket_req {
            tp_block_size: block_size as libc::c_uint,
            tp_block_nr: (frames / frames_per_block) as libc::c_uint,
            tp_frame_size: frame_size as libc::c_uint,
            tp_frame_nr: frames as libc::c_uint,
        };
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_RX_RING, &request(rx_frames))?;
        setsockopt(raw, libc::SOL_PACKET, libc::PACKET_TX_RING, &request(tx_frames))?;

        // The rx ring comes first in the mapping, the tx ring right after it.
        let rx_len = rx_frames * frame_size;
        let map_len = rx_len + tx_frames * frame_size;
        // SAFETY: mapping the socket's rings as the packet_mmap ABI describes.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                raw,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let map = NonNull::new(map.cast::<u8>()).expect("mmap returned null");
        let rx = Ring { base: map, frame_size, frames: rx_frames, head: 0 };
        // SAFETY: rx_len < map_len.
        let tx_base = unsafe { NonNull::new_unchecked(map.as_ptr().add(rx_len)) };
        let tx = Ring { base: tx_base, frame_size, frames: tx_frames, head: 0 };
        let port = AfPacket {
            name: name.to_string(),
            ifindex,
            fd,
            map,
            map_len,
            rx,
            tx,
            tx_pending: 0,
            stats: IoStats::default(),
            mtu: config.mtu as usize,
            segmenter: None,
            direct: None,
        };

        bind_to(raw, ifindex, config.protocol)?;

        if config.promiscuous {
            // SAFETY: packet_mreq is POD.
            let mut mreq: libc::packet_mreq = unsafe { std::mem::zeroed() };
            mreq.mr_ifindex = ifindex as libc::c_int;
            mreq.mr_type = libc::PACKET_MR_PROMISC as u16;
            setsockopt(raw, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)?;
        }
        Ok(port)
    }

    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// Frames the kernel dropped for lack of rx ring space since the last
    /// call (`PACKET_STATISTICS` resets on read).
    fn read_kernel_drops(&mut self) {
        // SAFETY: tpacket_stats is POD.
        let mut stats: libc::tpacket_stats = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: stats and len are valid for the call.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut stats as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        };
        if rc == 0 {
            self.stats.rx_ring_drops += u64::from(stats.tp_drops);
        }
    }

    /// Reads the frame the kernel queued on the socket for a `TP_STATUS_COPY`
    /// slot (one longer than a slot), with the VLAN tag the kernel stripped
    /// put back. One whose packet fits the MTU (a jumbo frame on a port whose
    /// slots are smaller than its MTU) goes into the batch whole; a longer
    /// one is loaded into the segmenter and its first segments pushed.
    /// Counted as truncated when it cannot be read whole or cut. Returns the
    /// frames pushed.
    fn receive_copied(&mut self, tag: Option<(u16, u16)>, checksum_partial: bool, batch: &mut FrameBatch) -> usize {
        let mtu = self.mtu;
        let segmenter = self.segmenter.get_or_insert_with(|| Box::new(Segmenter::new()));
        let buffer = segmenter.buffer();
        // Untagged frames land where the segmenter reads them; tagged ones
        // leave room to put the tag back after the MAC addresses.
        let offset = if tag.is_some() { TAG_ROOM } else { 0 };
        let room = &mut buffer[offset..];
        // SAFETY: room is a valid writable buffer of the length given.
        let rc = unsafe {
            libc::recv(self.fd.as_raw_fd(), room.as_mut_ptr().cast(), room.len(), libc::MSG_DONTWAIT | libc::MSG_TRUNC)
        };
        if rc < 12 || rc as usize > MAX_SUPER_FRAME - offset {
            self.stats.rx_truncated += 1;
            return 0;
        }
        let mut len = rc as usize;
        if let Some((tpid, tci)) = tag {
            buffer.copy_within(TAG_ROOM..TAG_ROOM + 12, 0);
            buffer[12..14].copy_from_slice(&tpid.to_be_bytes());
            buffer[14..16].copy_from_slice(&tci.to_be_bytes());
            len += TAG_ROOM;
        }
        if fits_mtu(&buffer[..len], mtu) {
            let slot = batch.next_slot().expect("batch not full");
            if len > slot.len() {
                self.stats.rx_truncated += 1;
                return 0;
            }
            slot[..len].copy_from_slice(&buffer[..len]);
            if checksum_partial {
                super::offload::complete_l4_checksum(&mut slot[..len]);
            }
            batch.commit(len);
            self.stats.rx_frames += 1;
            self.stats.rx_bytes += len as u64;
            return 1;
        }
        match segmenter.load(len, mtu) {
            Ok(()) => self.stats.rx_super_frames += 1,
            Err(_) => self.stats.rx_truncated += 1,
        }
        self.push_segments(batch)
    }

    /// Moves segments of the loaded super-frame into the batch while it has
    /// room; returns how many.
    fn push_segments(&mut self, batch: &mut FrameBatch) -> usize {
        let mut pushed = 0;
        let Some(segmenter) = self.segmenter.as_mut() else { return 0 };
        while segmenter.remaining() > 0 {
            let Some(slot) = batch.next_slot() else { break };
            match segmenter.next_segment(slot) {
                Some(len) => {
                    batch.commit(len);
                    pushed += 1;
                    self.stats.rx_frames += 1;
                    self.stats.rx_bytes += len as u64;
                }
                None => {
                    // A batch slot smaller than a segment: drop the rest.
                    self.stats.rx_truncated += 1;
                    segmenter.discard();
                    break;
                }
            }
        }
        pushed
    }

    /// Sends one frame as a copy, for when every tx ring slot is still in
    /// flight or the frame is longer than a slot. Not through the ring's
    /// socket: with a tx ring, `send` on it transmits the ring's slots and
    /// ignores the buffer given (`tpacket_snd`), so a second socket without
    /// rings, bound to no protocol (it receives nothing), sends these.
    fn send_direct(&mut self, frame: &[u8]) -> io::Result<()> {
        if self.direct.is_none() {
            match open_send_only(self.ifindex) {
                Ok(fd) => self.direct = Some(fd),
                Err(error) => {
                    self.stats.tx_errors += 1;
                    return Err(error);
                }
            }
        }
        let fd = self.direct.as_ref().expect("opened above").as_raw_fd();
        // SAFETY: frame is a valid buffer for the call.
        let rc = unsafe { libc::send(fd, frame.as_ptr().cast(), frame.len(), libc::MSG_DONTWAIT) };
        if rc < 0 {
            self.stats.tx_errors += 1;
            return Err(io::Error::last_os_error());
        }
        self.stats.tx_frames += 1;
        self.stats.tx_bytes += frame.len() as u64;
        Ok(())
    }
}

impl PortIo for AfPacket {
    fn name(&self) -> &str {
        &self.name
    }

    fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn recv_batch(&mut self, batch: &mut FrameBatch) -> io::Result<usize> {
        let mut received = self.push_segments(batch);
        // The kernel's receive timestamp of the first frame this read
        // takes: the oldest still waiting.
        let mut oldest: Option<u64> = None;
        while !batch.is_full() && self.segmenter.as_ref().is_none_or(|s| s.remaining() == 0) {
            let index = self.rx.head;
            let status = self.rx.status(index).load(Ordering::Acquire);
            if status & libc::TP_STATUS_USER == 0 {
                break;
            }
            // SAFETY: the slot belongs to us until we hand it back below; the
            // kernel wrote a tpacket2_hdr at its start and the frame at tp_mac.
            let header = unsafe { std::ptr::read(self.rx.header(index)) };
            if oldest.is_none() && header.tp_sec != 0 {
                oldest = Some(u64::from(header.tp_sec) * 1_000_000_000 + u64::from(header.tp_nsec));
            }
            let snap = header.tp_snaplen as usize;
            let mac = header.tp_mac as usize;
            if status & libc::TP_STATUS_CSUMNOTREADY != 0 {
                self.stats.rx_checksum_partial += 1;
            }
            if status & libc::TP_STATUS_LOSING != 0 {
                self.read_kernel_drops();
            }
            if status & libc::TP_STATUS_COPY != 0 {
                let tag = (status & libc::TP_STATUS_VLAN_VALID != 0).then(|| {
                    let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 && header.tp_vlan_tpid != 0 {
                        header.tp_vlan_tpid
                    } else {
                        0x8100
                    };
                    (tpid, header.tp_vlan_tci)
                });
                received += self.receive_copied(tag, status & libc::TP_STATUS_CSUMNOTREADY != 0, batch);
            } else if snap < header.tp_len as usize || mac + snap > self.rx.frame_size {
                self.stats.rx_truncated += 1;
            } else {
                // SAFETY: mac + snap is inside the slot (checked above).
                let data = unsafe { std::slice::from_raw_parts(self.rx.slot(index).add(mac), snap) };
                let slot = batch.next_slot().expect("batch not full");
                let tagged = status & libc::TP_STATUS_VLAN_VALID != 0;
                let len = if tagged { snap + 4 } else { snap };
                if len > slot.len() || snap < 12 {
                    self.stats.rx_truncated += 1;
                } else {
                    if tagged {
                        // Put the tag the kernel stripped back after the two
                        // MAC addresses (IEEE 802.1Q clause 9.3).
                        let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 && header.tp_vlan_tpid != 0 {
                            header.tp_vlan_tpid
                        } else {
                            0x8100
                        };
                        slot[..12].copy_from_slice(&data[..12]);
                        slot[12..14].copy_from_slice(&tpid.to_be_bytes());
                        slot[14..16].copy_from_slice(&header.tp_vlan_tci.to_be_bytes());
                        slot[16..len].copy_from_slice(&data[12..]);
                    } else {
                        slot[..len].copy_from_slice(data);
                    }
                    if status & libc::TP_STATUS_CSUMNOTREADY != 0 {
                        super::offload::complete_l4_checksum(&mut slot[..len]);
                    }
                    batch.commit(len);
                    received += 1;
                    self.stats.rx_frames += 1;
                    self.stats.rx_bytes += len as u64;
                }
            }
            self.rx.status(index).store(libc::TP_STATUS_KERNEL, Ordering::Release);
            self.rx.advance();
        }
        if let Some(stamp) = oldest {
            self.stats.rx_wait.record(super::realtime_ns().saturating_sub(stamp));
        }
        Ok(received)
    }

    fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        if TX_DATA_OFFSET + frame.len() > self.tx.frame_size {
            // Longer than a slot (slots smaller than the MTU): after what is
            // queued, so frames leave in order, as a plain copy.
            self.flush()?;
            return self.send_direct(frame);
        }
        let index = self.tx.head;
        let status = self.tx.status(index).load(Ordering::Acquire);
        if status != libc::TP_STATUS_AVAILABLE && status != libc::TP_STATUS_WRONG_FORMAT {
            // Every slot is queued or still owned by the kernel: push what is
            // queued, then fall back to a plain copy for this frame.
            self.flush()?;
            return self.send_direct(frame);
        }
        // SAFETY: the slot is ours (status AVAILABLE); the data fits (checked).
        unsafe {
            let slot = self.tx.slot(index);
            std::ptr::copy_nonoverlapping(frame.as_ptr(), slot.add(TX_DATA_OFFSET), frame.len());
            (*self.tx.header(index)).tp_len = frame.len() as u32;
        }
        self.tx.status(index).store(libc::TP_STATUS_SEND_REQUEST, Ordering::Release);
        self.tx.advance();
        self.tx_pending += 1;
        self.stats.tx_frames += 1;
        self.stats.tx_bytes += frame.len() as u64;
        if self.tx_pending == self.tx.frames {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.tx_pending == 0 {
            return Ok(());
        }
        self.tx_pending = 0;
        // A zero-length send tells the kernel to transmit every slot marked
        // TP_STATUS_SEND_REQUEST; MSG_DONTWAIT: do not wait for completion.
        // SAFETY: no buffer is passed.
        let rc = unsafe { libc::send(self.fd.as_raw_fd(), std::ptr::null(), 0, libc::MSG_DONTWAIT) };
        if rc < 0 {
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::WouldBlock {
                self.stats.tx_errors += 1;
                return Err(err);
            }
        }
        Ok(())
    }

    fn stats(&self) -> IoStats {
        self.stats
    }

    fn take_error(&mut self) -> Option<io::Error> {
        let mut error: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: error and len are valid for the call.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_ERROR,
                (&mut error as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        match (rc, error) {
            (0, 0) => None,
            (0, code) => Some(io::Error::from_raw_os_error(code)),
            _ => Some(io::Error::last_os_error()),
        }
    }

    fn link_up(&self) -> Option<bool> {
        // An interface that vanished (its peer namespace deleted) is down.
        Some(if_running_on(self.fd.as_raw_fd(), &self.name).unwrap_or(false))
    }
}

impl AsRawFd for AfPacket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl Drop for AfPacket {
    fn drop(&mut self) {
        let _ = self.flush();
        // SAFETY: map/map_len describe the mapping created in with_config,
        // unmapped exactly once here.
        unsafe {
            libc::munmap(self.map.as_ptr().cast(), self.map_len);
        }
    }
}

/// A raw socket bound to `ifindex` for sending only: protocol 0 receives
/// nothing, and without rings `send` sends the buffer given.
fn open_send_only(ifindex: u32) -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call, checked.
    let raw =
        check(unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: raw is a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let one: libc::c_int = 1;
    let _ = setsockopt(raw, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &one);
    // Protocol 0: a send-only socket receives nothing.
    bind_to(raw, ifindex, 0)?;
    Ok(fd)
}

/// Binds AF_PACKET socket `raw` to interface `ifindex` for EtherType
/// `protocol` (host order; 0 receives nothing).
fn bind_to(raw: libc::c_int, ifindex: u32, protocol: u16) -> io::Result<()> {
    // SAFETY: sockaddr_ll is POD; zeroes are valid.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = protocol.to_be();
    addr.sll_ifindex = ifindex as libc::c_int;
    // SAFETY: addr is a valid sockaddr_ll of the size given.
    check(unsafe {
        libc::bind(
            raw,
            (&addr as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as usize } else { 4096 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_geometry_follows_the_mtu_within_a_memory_budget() {
        let standard = AfPacketConfig::for_mtu(1500);
        assert_eq!(standard.frame_size, 2048);
        assert_eq!(standard.rx_frames, 4096);
        let jumbo = AfPacketConfig::for_mtu(9216);
        assert_eq!(jumbo.frame_size, 16384);
        assert!(jumbo.frame_size - TX_DATA_OFFSET >= 9216 + 14 + 8);
        assert_eq!(jumbo.rx_frames * jumbo.frame_size, standard.rx_frames * standard.frame_size);
    }
}
