//! The IB-like plane of one node, sans-IO: what a switch port or an
//! HCA-like endpoint does with the 0x88B5 frames of its links.
//!
//! * [`switch::SwitchPlane`]: `qos::ib`'s switch engine (receive buffers and
//!   credits per data VL, the LFT, SL-to-VL, VOQs, VL arbitration) with the
//!   switch's subnet management agent on VL15; an LFT, SL-to-VL or LID Set
//!   the agent answers is programmed into the engine, and PortInfo reports
//!   the ports as the links and their flow control stand;
//! * [`hca::HcaPlane`]: one port with credits per data VL, the CA's agent,
//!   and data packets sent to a DLID only when the link's credit covers
//!   them; what arrives is held (its credit not returned) until taken.
//!
//! Frames go out through a closure the caller gives (`switchd`'s forwarding
//! loop, `fabric-host`, the tests' in-memory links); time is an input.

pub mod frames;
pub mod hca;
pub mod switch;

pub use frames::LinkPacket;

use crate::packet::attributes::PortInfoRepr;

/// PortInfo OperationalVLs / VLCap encoding of `data_vls` (IBA 14.2.5.6:
/// 1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7).
pub fn vls_code(data_vls: u8) -> u8 {
    match data_vls {
        1 => 1,
        2 => 2,
        4 => 3,
        _ => 4,
    }
}

/// PortInfo MTUCap / NeighborMTU encoding of an IB MTU in bytes (1 = 256
/// ... 5 = 4096).
pub fn mtu_code(mtu: u16) -> u8 {
    match mtu {
        0..=256 => 1,
        257..=512 => 2,
        513..=1024 => 3,
        1025..=2048 => 4,
        _ => 5,
    }
}

/// The IB MTU in bytes of a PortInfo MTU code (0 and codes above 5 read
/// as 4096: no smaller limit).
pub fn mtu_bytes(code: u8) -> u16 {
    match code {
        1..=4 => 128 << code,
        _ => 4096,
    }
}

/// The longest data packet an MTU (in bytes, of payload) lets through, as
/// the switch engine and the credits count it: LRH + payload + VCRC.
pub fn max_wire_len(mtu: u16) -> u32 {
    (usize::from(mtu) + dataplane::wire::ib::LRH_LEN + dataplane::wire::ib::VCRC_LEN) as u32
}

/// The engine's view of a PortInfo PortState: data moves only Armed (in)
/// and Active (both ways).
pub fn logical_state(state: crate::packet::attributes::PortState) -> qos::ib::switch::LogicalState {
    use crate::packet::attributes::PortState;
    use qos::ib::switch::LogicalState;
    match state {
        PortState::Armed => LogicalState::Armed,
        PortState::Active => LogicalState::Active,
        _ => LogicalState::Init,
    }
}

/// How far behind its clock a rated port may catch up with back-to-back
/// packets: the caller's wake-ups come late on a loaded machine, and a line
/// that could not make up for them would send below its rate. As the
/// Ethernet traffic manager's `TM_CATCH_UP` in `switchd`.
pub const LINE_CATCH_UP_NS: u64 = 5_000_000;

/// The engine's line rate for a port of `bits_per_s`, counting the Ethernet
/// header and delimiter shim each packet travels with.
pub fn port_rate(bits_per_s: u64) -> qos::ib::switch::PortRate {
    qos::ib::switch::PortRate {
        bits_per_s,
        frame_overhead: (frames::ETHERNET_HEADER_LEN + dataplane::wire::ib::SHIM_LEN) as u32,
        catch_up_ns: LINE_CATCH_UP_NS,
    }
}

/// The IB MTUs a port may be given.
pub const MTUS: [u16; 5] = [256, 512, 1024, 2048, 4096];

/// The port's advertised capabilities for `data_vls` and `mtu`.
pub(crate) fn describe_port(info: &mut PortInfoRepr, data_vls: u8, mtu: u16) {
    info.vl_cap = vls_code(data_vls);
    info.operational_vls = vls_code(data_vls);
    info.mtu_cap = mtu_code(mtu);
    info.neighbor_mtu = mtu_code(mtu);
}

/// SL to VL as both ends set it up before an SM says otherwise: SL n on
/// VL n mod the data VLs, so flows on different SLs use different VLs.
pub fn default_sl_to_vl(data_vls: u8) -> [u8; 16] {
    core::array::from_fn(|sl| (sl as u8) % data_vls.max(1))
}

/// Frames held by handle (the engine queues descriptors, not bytes): the
/// slots are reused, so the steady state allocates nothing.
#[derive(Debug, Default)]
pub(crate) struct FrameStore {
    frames: Vec<Vec<u8>>,
    free: Vec<u32>,
}

impl FrameStore {
    pub(crate) fn store(&mut self, bytes: &[u8]) -> u32 {
        let handle = match self.free.pop() {
            Some(handle) => handle,
            None => {
                self.frames.push(Vec::with_capacity(bytes.len().max(512)));
                (self.frames.len() - 1) as u32
            }
        };
        let slot = &mut self.frames[handle as usize];
        slot.clear();
        slot.extend_from_slice(bytes);
        handle
    }

    pub(crate) fn get_mut(&mut self, handle: u32) -> &mut Vec<u8> {
        &mut self.frames[handle as usize]
    }

    pub(crate) fn release(&mut self, handle: u32) {
        self.free.push(handle);
    }

    /// Frames held now.
    pub(crate) fn held(&self) -> usize {
        self.frames.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests;
