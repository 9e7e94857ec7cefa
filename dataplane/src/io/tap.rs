//! TAP devices (`/dev/net/tun` with `IFF_TAP | IFF_NO_PI`): Ethernet frames
//! written by the kernel into the device are read here, and frames written
//! here appear to the kernel as received on it.
//!
//! Used for host interfaces (the switch's own traffic to the kernel) and for
//! ports the config asks to be TAPs. The device is not persistent: closing
//! the descriptor, which [`Drop`] does, removes it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::{FrameBatch, IoStats, PortIo, ifreq_for, set_if_mac, set_if_mtu, set_if_up};

/// How to create a TAP.
#[derive(Debug, Clone, Default)]
pub struct TapConfig {
    pub name: String,
    /// Hardware address; the kernel picks a random one when `None`.
    pub mac: Option<[u8; 6]>,
    pub mtu: Option<u32>,
    /// Bring the device up once created.
    pub up: bool,
}

/// A TAP device, removed on drop.
pub struct Tap {
    name: String,
    fd: OwnedFd,
    stats: IoStats,
}

impl Tap {
    /// Creates the TAP (failing if a device of that name exists and is not a
    /// TAP we may attach to), then applies MAC, MTU and admin state.
    pub fn create(config: &TapConfig) -> io::Result<Tap> {
        let path = c"/dev/net/tun";
        // SAFETY: path is NUL-terminated; the result is checked.
        let raw = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: raw is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut req = ifreq_for(&config.name)?;
        req.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: req is a valid ifreq for TUNSETIFF.
        if unsafe { libc::ioctl(raw, libc::TUNSETIFF as _, &mut req as *mut libc::ifreq) } < 0 {
            return Err(io::Error::last_os_error());
        }
        let tap = Tap { name: config.name.clone(), fd, stats: IoStats::default() };
        if let Some(mac) = config.mac {
            set_if_mac(&tap.name, mac)?;
        }
        if let Some(mtu) = config.mtu {
            set_if_mtu(&tap.name, mtu)?;
        }
        if config.up {
            set_if_up(&tap.name, true)?;
        }
        Ok(tap)
    }
}

impl PortIo for Tap {
    fn name(&self) -> &str {
        &self.name
    }

    fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn recv_batch(&mut self, batch: &mut FrameBatch) -> io::Result<usize> {
        let mut received = 0;
        while let Some(slot) = batch.next_slot() {
            // SAFETY: slot is a valid writable buffer of slot.len() bytes.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), slot.as_mut_ptr().cast(), slot.len()) };
            if n < 0 {
                let err = io::Error::last_os_error();
                match err.kind() {
                    io::ErrorKind::WouldBlock => break,
                    io::ErrorKind::Interrupted => continue,
                    _ => return Err(err),
                }
            }
            if n == 0 {
                break;
            }
            let n = n as usize;
            batch.commit(n);
            received += 1;
            self.stats.rx_frames += 1;
            self.stats.rx_bytes += n as u64;
        }
        Ok(received)
    }

    fn send(&mut self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: frame is a valid buffer for the call.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len()) };
        if n < 0 {
            self.stats.tx_errors += 1;
            return Err(io::Error::last_os_error());
        }
        self.stats.tx_frames += 1;
        self.stats.tx_bytes += frame.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn stats(&self) -> IoStats {
        self.stats
    }
}

impl AsRawFd for Tap {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
