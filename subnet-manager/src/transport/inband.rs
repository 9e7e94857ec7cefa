//! The in-band transport: SMPs over this project's IB-like links, inside
//! Ethernet frames of EtherType 0x88B5 (`dataplane::wire::ib`): a data
//! packet on VL15 whose LRH says "IBA local" (LNH 2), then, as on a real
//! InfiniBand link, a BTH (UD SEND only to QP0, P_Key 0xFFFF), a DETH
//! (source QP 0) and the 256-byte MAD, then the VCRC. (The project's link
//! layer carries no ICRC.) tshark's InfiniBand dissector reads the same
//! bytes after the 0x88B5 shim.
//!
//! The SM's node answers its own SMPs and steps outgoing directed routes
//! with an [`Agent`] of its own (what a real HCA's SMA does under
//! libibumad); a node with several ports (a switch-embedded SM) sends each
//! SMP out of the port its route starts with.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use dataplane::wire::ib::{IbPacketRepr, LrhRepr, MANAGEMENT_VL, NextHeader};
use dataplane::wire::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr};

use super::SmpTransport;
use crate::agent::{Agent, Disposition};
use crate::packet::smp::PERMISSIVE_LID;
use crate::packet::{MAD_LEN, SmpRepr};
use crate::sm::OutgoingSmp;

/// EtherType of the IB-like link layer (IEEE 802 local experimental).
pub const ETHERTYPE_IB: u16 = 0x88b5;

/// BTH: opcode 0x64 (UD SEND only), TVer 0, P_Key 0xFFFF, destination QP 0,
/// PSN 0; then DETH: Q_Key 0, source QP 0.
const BTH_DETH: [u8; 20] = [0x64, 0x00, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
const PAYLOAD_LEN: usize = BTH_DETH.len() + MAD_LEN;

/// An Ethernet frame carrying `mad` on VL15 from `slid` to `dlid`.
pub fn encode_frame(mad: &[u8; MAD_LEN], dlid: u16, slid: u16, src: EthernetAddress) -> Vec<u8> {
    let mut payload = [0u8; PAYLOAD_LEN];
    payload[..BTH_DETH.len()].copy_from_slice(&BTH_DETH);
    payload[BTH_DETH.len()..].copy_from_slice(mad);
    let ib = IbPacketRepr::Data {
        lrh: LrhRepr {
            vl: MANAGEMENT_VL,
            sl: 0,
            next_header: NextHeader::IbaLocal,
            dlid,
            slid,
            payload_len: PAYLOAD_LEN,
        },
        payload: &payload,
    };
    let ethernet =
        EthernetRepr { dst_addr: EthernetAddress::BROADCAST, src_addr: src, ethertype: EtherType::LocalExperimental };
    let mut frame = vec![0u8; ethernet.buffer_len() + ib.buffer_len()];
    ethernet.emit(&mut EthernetFrame::new_unchecked(&mut frame[..]));
    ib.emit(&mut frame[ethernet.buffer_len()..]).expect("sized for it");
    frame
}

/// The MAD in a frame, with the LRH's DLID and SLID, if the frame is an
/// IB-like VL15 data packet to QP0 whose CRC checks.
pub fn decode_frame(frame: &[u8]) -> Option<([u8; MAD_LEN], u16, u16)> {
    let ethernet = EthernetFrame::new_checked(frame).ok()?;
    let repr = EthernetRepr::parse(&ethernet).ok()?;
    if repr.ethertype != EtherType::LocalExperimental {
        return None;
    }
    let IbPacketRepr::Data { lrh, payload } = IbPacketRepr::parse(ethernet.payload()).ok()? else { return None };
    if lrh.vl != MANAGEMENT_VL || lrh.next_header != NextHeader::IbaLocal || payload.len() < PAYLOAD_LEN {
        return None;
    }
    // UD SEND only to QP 0.
    if payload[0] != 0x64 || payload[5..8] != [0, 0, 0] {
        return None;
    }
    let mut mad = [0u8; MAD_LEN];
    mad.copy_from_slice(&payload[BTH_DETH.len()..PAYLOAD_LEN]);
    Some((mad, lrh.dlid, lrh.slid))
}

/// A raw socket on one interface for EtherType 0x88B5 (AF_PACKET).
pub struct PacketSocket {
    fd: OwnedFd,
    pub mac: EthernetAddress,
}

impl PacketSocket {
    pub fn open(interface: &str) -> io::Result<PacketSocket> {
        let name = std::ffi::CString::new(interface).map_err(|_| io::Error::other("interface name with NUL"))?;
        if interface.len() >= libc::IFNAMSIZ {
            return Err(io::Error::other(format!("{interface}: name too long")));
        }
        // SAFETY: plain socket calls with valid arguments; the fd is owned
        // from here on.
        unsafe {
            let index = libc::if_nametoindex(name.as_ptr());
            if index == 0 {
                return Err(io::Error::new(
                    io::Error::last_os_error().kind(),
                    format!("{interface}: no such interface"),
                ));
            }
            let protocol = ETHERTYPE_IB.to_be() as i32;
            let raw = libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, protocol);
            if raw < 0 {
                return Err(io::Error::last_os_error());
            }
            let fd = OwnedFd::from_raw_fd(raw);
            // The MAC by SIOCGIFHWADDR rather than sysfs: this thread's
            // network namespace, whatever /sys shows.
            let mut request: libc::ifreq = std::mem::zeroed();
            for (slot, byte) in request.ifr_name.iter_mut().zip(interface.bytes()) {
                *slot = byte as libc::c_char;
            }
            if libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFHWADDR, &mut request) < 0 {
                return Err(io::Error::last_os_error());
            }
            let mut mac = [0u8; 6];
            for (byte, value) in mac.iter_mut().zip(request.ifr_ifru.ifru_hwaddr.sa_data.iter()) {
                *byte = *value as u8;
            }
            let mut address: libc::sockaddr_ll = std::mem::zeroed();
            address.sll_family = libc::AF_PACKET as u16;
            address.sll_protocol = ETHERTYPE_IB.to_be();
            address.sll_ifindex = index as i32;
            let bound = libc::bind(
                fd.as_raw_fd(),
                (&address as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            );
            if bound < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(PacketSocket { fd, mac: EthernetAddress(mac) })
        }
    }

    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: the buffer is valid for its length.
        let sent = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        if sent < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
    }

    /// One frame, without waiting.
    pub fn try_recv(&self, buffer: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: the buffer is valid for its length.
        let got =
            unsafe { libc::recv(self.fd.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len(), libc::MSG_DONTWAIT) };
        if got < 0 {
            let error = io::Error::last_os_error();
            return if error.kind() == io::ErrorKind::WouldBlock { Ok(None) } else { Err(error) };
        }
        Ok(Some(got as usize))
    }

    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }
}

/// Waits up to `timeout` for one of `sockets` to be readable; its index.
pub fn wait_readable(sockets: &[&PacketSocket], timeout: Duration) -> io::Result<Option<usize>> {
    let mut fds: Vec<libc::pollfd> =
        sockets.iter().map(|s| libc::pollfd { fd: s.raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: fds is a valid array of pollfd.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if ready < 0 {
        let error = io::Error::last_os_error();
        return if error.kind() == io::ErrorKind::Interrupted { Ok(None) } else { Err(error) };
    }
    Ok(fds.iter().position(|f| f.revents & libc::POLLIN != 0))
}

/// The SM's side: its node's agent and one packet socket per port.
pub struct InBandTransport {
    agent: Agent,
    /// Socket per port number (index 0 unused).
    ports: Vec<Option<PacketSocket>>,
    port_guids: Vec<u64>,
    sm_port: u8,
    /// Responses answered locally, waiting for `recv`.
    local: Vec<[u8; MAD_LEN]>,
    buffer: Vec<u8>,
}

impl InBandTransport {
    /// `agent` is the SM node's agent; `interfaces[i]` is port `i + 1`.
    pub fn new(agent: Agent, port_guids: Vec<u64>, interfaces: &[String]) -> io::Result<InBandTransport> {
        let mut ports = vec![None];
        for interface in interfaces {
            ports.push(Some(PacketSocket::open(interface)?));
        }
        Ok(InBandTransport { agent, ports, port_guids, sm_port: 1, local: Vec::new(), buffer: vec![0u8; 4096] })
    }

    pub fn agent(&self) -> &Agent {
        &self.agent
    }
}

impl SmpTransport for InBandTransport {
    fn send(&mut self, out: &OutgoingSmp) -> io::Result<()> {
        let Ok(mut smp) = SmpRepr::parse_bytes(&out.bytes) else { return Ok(()) };
        let disposition = if out.dlid == PERMISSIVE_LID {
            self.agent.originate(self.sm_port, &self.port_guids, &mut smp)
        } else {
            // LID routed (TrapRepress): out of the SM's port.
            Disposition::Forward { port: self.sm_port }
        };
        match disposition {
            Disposition::ToLocalSm => self.local.push(smp.to_bytes()),
            Disposition::Forward { port } | Disposition::Respond { port } => {
                let Some(Some(socket)) = self.ports.get(usize::from(port)) else { return Ok(()) };
                let slid = self.agent.ports.get(usize::from(self.sm_port)).map_or(0, |p| p.lid);
                socket.send(&encode_frame(&smp.to_bytes(), out.dlid, slid, socket.mac))?;
            }
            Disposition::Discard(_) => {}
        }
        Ok(())
    }

    fn recv(&mut self, timeout: Duration) -> io::Result<Option<[u8; MAD_LEN]>> {
        if let Some(mad) = self.local.pop() {
            return Ok(Some(mad));
        }
        let deadline = Instant::now() + timeout;
        loop {
            let sockets: Vec<&PacketSocket> = self.ports.iter().flatten().collect();
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(ready) = wait_readable(&sockets, left)? else {
                if Instant::now() >= deadline {
                    return Ok(None);
                }
                continue;
            };
            let port = self
                .ports
                .iter()
                .enumerate()
                .filter(|(_, s)| s.is_some())
                .nth(ready)
                .map(|(i, _)| i as u8)
                .unwrap_or(1);
            let Some(len) = sockets[ready].try_recv(&mut self.buffer)? else { continue };
            if let Some((mad, _, _)) = decode_frame(&self.buffer[..len]) {
                let Ok(mut smp) = SmpRepr::parse_bytes(&mad) else { continue };
                if !smp.method.is_response() {
                    // A trap from an agent: for the SM as it is.
                    return Ok(Some(mad));
                }
                if let Disposition::ToLocalSm = self.agent.receive(port, &self.port_guids, &mut smp) {
                    return Ok(Some(smp.to_bytes()));
                }
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
        }
    }
}

/// Runs `agent` on `interfaces` (port i + 1 on `interfaces[i]`) until
/// `stop` says so: answers and forwards SMPs as IBA 14.2.2 steers them.
/// `on_set` hears every answered Set (for logs and tests).
pub fn serve_agent(
    agent: &mut Agent,
    port_guids: &[u64],
    interfaces: &[String],
    mut stop: impl FnMut() -> bool,
    mut on_set: impl FnMut(&Agent, &SmpRepr),
) -> io::Result<()> {
    let sockets: Vec<PacketSocket> = interfaces.iter().map(|i| PacketSocket::open(i)).collect::<io::Result<_>>()?;
    let mut buffer = vec![0u8; 4096];
    while !stop() {
        let refs: Vec<&PacketSocket> = sockets.iter().collect();
        let Some(ready) = wait_readable(&refs, Duration::from_millis(100))? else { continue };
        let in_port = ready as u8 + 1;
        while let Some(len) = sockets[ready].try_recv(&mut buffer)? {
            let Some((mad, dlid, slid)) = decode_frame(&buffer[..len]) else { continue };
            let Ok(mut smp) = SmpRepr::parse_bytes(&mad) else { continue };
            let was_set = smp.method == crate::packet::Method::Set;
            let lid = agent.ports.get(usize::from(in_port)).map_or(0, |p| p.lid);
            match agent.receive(in_port, port_guids, &mut smp) {
                Disposition::Forward { port } | Disposition::Respond { port } => {
                    if let Some(socket) = sockets.get(usize::from(port).wrapping_sub(1)) {
                        // A response goes back to the requester's LID.
                        let (dlid, slid) = if smp.method.is_response() { (slid, lid) } else { (dlid, slid) };
                        socket.send(&encode_frame(&smp.to_bytes(), dlid, slid, socket.mac))?;
                    }
                    if was_set && smp.method.is_response() {
                        on_set(agent, &smp);
                    }
                }
                Disposition::ToLocalSm | Disposition::Discard(_) => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{AttributeId, Method};

    #[test]
    fn frames_round_trip_and_others_are_ignored() {
        let smp = SmpRepr::directed(Method::Get, 9, AttributeId::NodeInfo, 0, &[1, 2], [0; 64]).unwrap();
        let mac = EthernetAddress([2, 0, 0, 0, 0, 1]);
        let frame = encode_frame(&smp.to_bytes(), PERMISSIVE_LID, 0, mac);
        assert_eq!(&frame[12..14], &[0x88, 0xb5]);
        assert_eq!(frame[16] >> 4, 15, "VL15");
        let (mad, dlid, slid) = decode_frame(&frame).unwrap();
        assert_eq!((dlid, slid), (PERMISSIVE_LID, 0));
        assert_eq!(SmpRepr::parse_bytes(&mad), Ok(smp));
        // A flipped bit fails the VCRC; an IPv4 frame is not ours.
        let mut corrupt = frame.clone();
        corrupt[100] ^= 1;
        assert!(decode_frame(&corrupt).is_none());
        let mut other = frame;
        other[12..14].copy_from_slice(&[0x08, 0x00]);
        assert!(decode_frame(&other).is_none());
    }
}
