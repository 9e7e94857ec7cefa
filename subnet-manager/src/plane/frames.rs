//! The Ethernet frames of the IB-like link: header, then the 0x88B5 payload
//! of `dataplane::wire::ib` (data packet or flow-control packet).

use dataplane::wire::ib::{DataPacket, FlowControlOp, FlowControlRepr, IbPacketRepr, LrhRepr, SHIM_LEN};
use dataplane::wire::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr};
use qos::ib::credit::FlowControlUpdate;

/// Ethernet header bytes before the 0x88B5 payload.
pub const ETHERNET_HEADER_LEN: usize = 14;
/// Ethernet's smallest frame without FCS: flow-control frames are padded
/// to it.
pub const MIN_FRAME_LEN: usize = 60;

/// What an 0x88B5 frame carries, as a port acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkPacket {
    /// A data packet (management on VL15): its LRH and the bytes it holds
    /// in a receive buffer (LRH, payload, VCRC).
    Data {
        lrh: LrhRepr,
        wire_len: u32,
    },
    FlowControl(FlowControlUpdate),
}

/// Why a frame was not an IB-like packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    NotIbLike,
    /// The packet failed to parse: truncated, bad CRC, unknown delimiter,
    /// LVer other than 0, flow control on VL15.
    Malformed(dataplane::wire::Error),
}

/// Reads an Ethernet frame of EtherType 0x88B5. Never panics.
pub fn parse(frame: &[u8]) -> Result<LinkPacket, FrameError> {
    let ethernet = EthernetFrame::new_checked(frame).map_err(|_| FrameError::NotIbLike)?;
    if EthernetRepr::parse(&ethernet).map_err(|_| FrameError::NotIbLike)?.ethertype != EtherType::LocalExperimental {
        return Err(FrameError::NotIbLike);
    }
    let payload = ethernet.payload();
    match IbPacketRepr::parse(payload).map_err(FrameError::Malformed)? {
        IbPacketRepr::Data { lrh, .. } => {
            let wire_len = DataPacket::new_unchecked(&payload[SHIM_LEN..]).wire_len() as u32;
            Ok(LinkPacket::Data { lrh, wire_len })
        }
        IbPacketRepr::FlowControl(fc) => {
            Ok(LinkPacket::FlowControl(FlowControlUpdate { vl: fc.vl, fctbs: fc.fctbs, fccl: fc.fccl }))
        }
    }
}

fn ethernet_header(frame: &mut [u8], src: EthernetAddress) {
    let repr =
        EthernetRepr { dst_addr: EthernetAddress::BROADCAST, src_addr: src, ethertype: EtherType::LocalExperimental };
    repr.emit(&mut EthernetFrame::new_unchecked(frame));
}

/// Writes a flow-control frame for `update` into `buffer`; its length.
pub fn flow_control(buffer: &mut [u8; 64], src: EthernetAddress, update: FlowControlUpdate) -> usize {
    *buffer = [0; 64];
    ethernet_header(&mut buffer[..], src);
    let repr = IbPacketRepr::FlowControl(FlowControlRepr {
        op: FlowControlOp::Normal,
        vl: update.vl,
        fctbs: update.fctbs,
        fccl: update.fccl,
    });
    repr.emit(&mut buffer[ETHERNET_HEADER_LEN..]).expect("a flow-control packet fits 50 bytes");
    MIN_FRAME_LEN
}

/// A data frame: `lrh` (its payload length must be `payload.len()`, a
/// multiple of 4) and `payload`, padded to Ethernet's minimum.
pub fn data(src: EthernetAddress, lrh: &LrhRepr, payload: &[u8]) -> Result<Vec<u8>, dataplane::wire::Error> {
    let repr = IbPacketRepr::Data { lrh: *lrh, payload };
    let mut frame = vec![0u8; (ETHERNET_HEADER_LEN + repr.buffer_len()).max(MIN_FRAME_LEN)];
    ethernet_header(&mut frame, src);
    repr.emit(&mut frame[ETHERNET_HEADER_LEN..])?;
    Ok(frame)
}

/// The payload of a data frame that [`parse`] accepted.
pub fn payload<'a>(frame: &'a [u8], lrh: &LrhRepr) -> &'a [u8] {
    let start = ETHERNET_HEADER_LEN + SHIM_LEN + dataplane::wire::ib::LRH_LEN;
    &frame[start..start + lrh.payload_len]
}

/// Readies a forwarded data frame for its next link: this node's source
/// address, and the output VL (the VCRC recomputed when it changes).
pub fn relay(frame: &mut [u8], src: EthernetAddress, vl: u8) {
    frame[6..12].copy_from_slice(&src.0);
    let mut packet = DataPacket::new_unchecked(&mut frame[ETHERNET_HEADER_LEN + SHIM_LEN..]);
    if packet.vl() != vl {
        packet.set_vl(vl);
    }
}
