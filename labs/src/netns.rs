//! Work inside a named network namespace from a thread of this process.

use std::os::fd::AsRawFd as _;

// <linux/ethtool.h>: legacy set commands taking a struct ethtool_value.
const ETHTOOL_STXCSUM: u32 = 0x17;
const ETHTOOL_SSG: u32 = 0x19;
const ETHTOOL_STSO: u32 = 0x1f;
const ETHTOOL_SGSO: u32 = 0x24;
const ETHTOOL_SGRO: u32 = 0x2c;

/// Runs `f` on a thread that has entered `/run/netns/NAME`.
pub fn enter<T: Send>(name: &str, f: impl FnOnce() -> Result<T, String> + Send) -> Result<T, String> {
    let path = format!("/run/netns/{name}");
    let file = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                // SAFETY: setns on this thread only, with an open namespace fd.
                if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(format!("setns {path}: {}", std::io::Error::last_os_error()));
                }
                f()
            })
            .join()
            .map_err(|_| "namespace worker panicked".to_owned())?
    })
}

/// Turns off what a peer read by AF_PACKET cannot take today: TSO/GSO/GRO
/// super-frames, scatter-gather and tx checksum offload (the checksum would
/// be left for "hardware" the veth does not have). Through the ethtool
/// ioctl, so the `ethtool` tool is not needed.
pub fn disable_offloads(namespace: &str, ifname: &str) -> Result<(), String> {
    let ifname = ifname.to_owned();
    enter(namespace, move || {
        #[repr(C)]
        struct EthtoolValue {
            cmd: u32,
            data: u32,
        }
        // SAFETY: plain socket(2) for the ioctl; closed below.
        let sock = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if sock < 0 {
            return Err(format!("socket: {}", std::io::Error::last_os_error()));
        }
        let mut result = Ok(());
        for cmd in [ETHTOOL_SGRO, ETHTOOL_SGSO, ETHTOOL_STSO, ETHTOOL_SSG, ETHTOOL_STXCSUM] {
            let mut value = EthtoolValue { cmd, data: 0 };
            // SAFETY: ifreq is plain data; zeroes are valid.
            let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
            for (dst, src) in req.ifr_name.iter_mut().zip(ifname.bytes()) {
                *dst = src as libc::c_char;
            }
            req.ifr_ifru.ifru_data = (&mut value as *mut EthtoolValue).cast();
            // SAFETY: req and value live across the call.
            let rc = unsafe { libc::ioctl(sock, libc::SIOCETHTOOL as _, &mut req as *mut libc::ifreq) };
            if rc != 0 {
                result = Err(format!("ethtool {cmd:#x} on {ifname}: {}", std::io::Error::last_os_error()));
                break;
            }
        }
        // SAFETY: closing the socket opened above.
        unsafe { libc::close(sock) };
        result
    })
}
