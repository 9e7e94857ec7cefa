//! Transports carry the SM's SMPs; the SM core never touches them.
//!
//! * [`umad`]: libibumad (loaded at run time, so nothing links against it
//!   at build time): real InfiniBand HCAs, and ibsim's simulated fabrics
//!   through umad2sim (`LD_PRELOAD=libumad2sim.so`);
//! * [`inband`]: over this project's IB-like links (VL15 inside 0x88B5
//!   frames) on AF_PACKET sockets, with [`inband::serve_agent`] running an
//!   agent on the other nodes (until the IB-like plane's node runs its own);
//! * the in-process fabric of simulated agents (`crate::fabric`) is driven
//!   directly, in virtual time.

pub mod inband;
pub mod umad;

use std::time::{Duration, Instant};

use crate::packet::MAD_LEN;
use crate::sm::{OutgoingSmp, SmEvent, SubnetManager};

/// Something that moves 256-byte MADs between the SM and the fabric.
pub trait SmpTransport {
    /// Sends one SMP (directed route when `dlid` is 0xFFFF).
    fn send(&mut self, smp: &OutgoingSmp) -> std::io::Result<()>;
    /// Waits up to `timeout` for one MAD; `Ok(None)` when none came.
    fn recv(&mut self, timeout: Duration) -> std::io::Result<Option<[u8; MAD_LEN]>>;
}

/// Runs `sm` over `transport` in real time until `done` says so for an
/// event or `limit` passes; every event goes to `log` too. Returns the
/// events.
pub fn drive(
    sm: &mut SubnetManager,
    transport: &mut dyn SmpTransport,
    limit: Duration,
    mut done: impl FnMut(&SmEvent) -> bool,
    mut log: impl FnMut(u64, &SmEvent),
) -> std::io::Result<Vec<SmEvent>> {
    let start = Instant::now();
    let now = || start.elapsed().as_nanos() as u64;
    let mut events = Vec::new();
    sm.start(now());
    loop {
        while let Some(out) = sm.poll_transmit(now()) {
            transport.send(&out)?;
        }
        let mut finished = false;
        while let Some(event) = sm.poll_event() {
            log(now(), &event);
            finished |= done(&event);
            events.push(event);
        }
        if finished || start.elapsed() >= limit {
            return Ok(events);
        }
        let wait = match sm.next_timer() {
            Some(at) => Duration::from_nanos(at.saturating_sub(now())),
            None => Duration::from_millis(100),
        }
        .min(Duration::from_millis(100));
        match transport.recv(wait)? {
            Some(mad) => sm.handle_mad(now(), &mad),
            None => sm.handle_timer(now()),
        }
        // Drain whatever else already arrived without waiting.
        while let Some(mad) = transport.recv(Duration::ZERO)? {
            sm.handle_mad(now(), &mad);
        }
        sm.handle_timer(now());
    }
}
