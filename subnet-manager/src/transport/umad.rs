//! The libibumad transport: `umad_*` calls of rdma-core's libibumad
//! (Debian `libibumad3`), declared by hand and bound at run time with
//! `dlopen`, so the crate builds and its other transports run where the
//! library is absent. Under ibsim, run with
//! `LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so`: umad2sim
//! interposes the file calls libibumad makes and talks to ibsim.

use std::ffi::{CStr, c_char, c_int, c_long, c_void};
use std::io;
use std::time::Duration;

use super::SmpTransport;
use crate::packet::MAD_LEN;
use crate::sm::OutgoingSmp;

type InitFn = unsafe extern "C" fn() -> c_int;
type OpenPortFn = unsafe extern "C" fn(*const c_char, c_int) -> c_int;
type ClosePortFn = unsafe extern "C" fn(c_int) -> c_int;
type RegisterFn = unsafe extern "C" fn(c_int, c_int, c_int, u8, *const c_long) -> c_int;
type SizeFn = unsafe extern "C" fn() -> usize;
type GetMadFn = unsafe extern "C" fn(*mut c_void) -> *mut c_void;
type SetAddrFn = unsafe extern "C" fn(*mut c_void, c_int, c_int, c_int, c_int) -> c_int;
type SendFn = unsafe extern "C" fn(c_int, c_int, *mut c_void, c_int, c_int, c_int) -> c_int;
type RecvFn = unsafe extern "C" fn(c_int, *mut c_void, *mut c_int, c_int) -> c_int;

/// The libibumad entry points this transport uses.
struct Library {
    _handle: *mut c_void,
    open_port: OpenPortFn,
    close_port: ClosePortFn,
    register: RegisterFn,
    size: SizeFn,
    get_mad: GetMadFn,
    set_addr: SetAddrFn,
    send: SendFn,
    recv: RecvFn,
}

fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        "unknown dlopen error".into()
    } else {
        unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned()
    }
}

impl Library {
    fn load() -> io::Result<Library> {
        // SAFETY: dlopen/dlsym with NUL-terminated names; every symbol is
        // cast to the signature umad.h declares for it.
        unsafe {
            let handle = libc::dlopen(c"libibumad.so.3".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL);
            if handle.is_null() {
                return Err(io::Error::other(format!("libibumad.so.3 (Debian libibumad3): {}", dl_error())));
            }
            macro_rules! symbol {
                ($name:literal, $ty:ty) => {{
                    let pointer = libc::dlsym(handle, $name.as_ptr());
                    if pointer.is_null() {
                        return Err(io::Error::other(format!("libibumad: {}", dl_error())));
                    }
                    std::mem::transmute::<*mut c_void, $ty>(pointer)
                }};
            }
            let init: InitFn = symbol!(c"umad_init", InitFn);
            if init() < 0 {
                return Err(io::Error::other("umad_init failed"));
            }
            Ok(Library {
                _handle: handle,
                open_port: symbol!(c"umad_open_port", OpenPortFn),
                close_port: symbol!(c"umad_close_port", ClosePortFn),
                register: symbol!(c"umad_register", RegisterFn),
                size: symbol!(c"umad_size", SizeFn),
                get_mad: symbol!(c"umad_get_mad", GetMadFn),
                set_addr: symbol!(c"umad_set_addr", SetAddrFn),
                send: symbol!(c"umad_send", SendFn),
                recv: symbol!(c"umad_recv", RecvFn),
            })
        }
    }
}

/// Management classes the SM registers for (IBA 13.4.4).
const CLASS_SUBN_LID: c_int = 0x01;
const CLASS_SUBN_DIRECTED_ROUTE: c_int = 0x81;

pub struct UmadTransport {
    lib: Library,
    port_id: c_int,
    agent_dr: c_int,
    agent_lid: c_int,
    /// One umad buffer: the ib_user_mad header then the 256-byte MAD.
    buffer: Vec<u64>,
    /// Kernel-side response timeout given with each send, in ms (the SM
    /// core does its own timeouts and retries; this only lets the kernel
    /// match responses to requests).
    pub send_timeout_ms: c_int,
}

impl UmadTransport {
    /// Opens `ca` (None: the first) port `port` (0: the first active) and
    /// registers the SM classes: directed route, and LID routed with the
    /// Trap method so traps reach us.
    pub fn open(ca: Option<&CStr>, port: c_int) -> io::Result<UmadTransport> {
        let lib = Library::load()?;
        // SAFETY: the signatures match umad.h; pointers are valid for the
        // calls' duration.
        unsafe {
            let port_id = (lib.open_port)(ca.map_or(std::ptr::null(), CStr::as_ptr), port);
            if port_id < 0 {
                return Err(io::Error::from_raw_os_error(-port_id));
            }
            let agent_dr = (lib.register)(port_id, CLASS_SUBN_DIRECTED_ROUTE, 1, 0, std::ptr::null());
            // Method mask bit 5: Trap (unsolicited, so it must be asked for).
            let mut mask = [0 as c_long; 4];
            mask[0] = 1 << 0x05;
            let agent_lid = (lib.register)(port_id, CLASS_SUBN_LID, 1, 0, mask.as_ptr());
            if agent_dr < 0 || agent_lid < 0 {
                (lib.close_port)(port_id);
                return Err(io::Error::other(format!("umad_register failed: {agent_dr} {agent_lid}")));
            }
            let size = (lib.size)() + MAD_LEN;
            Ok(UmadTransport {
                lib,
                port_id,
                agent_dr,
                agent_lid,
                buffer: vec![0u64; size.div_ceil(8)],
                send_timeout_ms: 1000,
            })
        }
    }

    fn umad(&mut self) -> *mut c_void {
        self.buffer.as_mut_ptr().cast()
    }
}

impl SmpTransport for UmadTransport {
    fn send(&mut self, smp: &OutgoingSmp) -> io::Result<()> {
        let agent = if smp.bytes[1] == CLASS_SUBN_DIRECTED_ROUTE as u8 { self.agent_dr } else { self.agent_lid };
        let umad = self.umad();
        // SAFETY: `umad` holds umad_size() + 256 bytes; get_mad points into it.
        unsafe {
            std::ptr::write_bytes(umad.cast::<u8>(), 0, self.buffer.len() * 8);
            let mad = (self.lib.get_mad)(umad).cast::<u8>();
            std::ptr::copy_nonoverlapping(smp.bytes.as_ptr(), mad, MAD_LEN);
            (self.lib.set_addr)(umad, c_int::from(smp.dlid), 0, 0, 0);
            // A response is expected for requests, not for TrapRepress.
            let timeout = if smp.bytes[3] & 0x80 != 0 || smp.bytes[3] == 0x07 { 0 } else { self.send_timeout_ms };
            let result = (self.lib.send)(self.port_id, agent, umad, MAD_LEN as c_int, timeout, 0);
            if result < 0 {
                return Err(io::Error::from_raw_os_error(-result));
            }
        }
        Ok(())
    }

    fn recv(&mut self, timeout: Duration) -> io::Result<Option<[u8; MAD_LEN]>> {
        let umad = self.umad();
        let mut length: c_int = MAD_LEN as c_int;
        let timeout_ms = timeout.as_millis().min(i32::MAX as u128) as c_int;
        // SAFETY: as in send.
        unsafe {
            let result = (self.lib.recv)(self.port_id, umad, &mut length, timeout_ms);
            if result < 0 {
                let errno = -result;
                if errno == libc::ETIMEDOUT || errno == libc::EAGAIN || errno == libc::EWOULDBLOCK {
                    return Ok(None);
                }
                return Err(io::Error::from_raw_os_error(errno));
            }
            // A send that timed out in the kernel comes back with a status
            // and the request's bytes: not a response; the core times out.
            let status = *(umad.cast::<u32>().add(1));
            if status != 0 {
                return Ok(None);
            }
            let mad = (self.lib.get_mad)(umad).cast::<u8>();
            let mut bytes = [0u8; MAD_LEN];
            std::ptr::copy_nonoverlapping(mad, bytes.as_mut_ptr(), MAD_LEN);
            Ok(Some(bytes))
        }
    }
}

impl Drop for UmadTransport {
    fn drop(&mut self) {
        // SAFETY: the port was opened by this transport.
        unsafe {
            (self.lib.close_port)(self.port_id);
        }
    }
}
