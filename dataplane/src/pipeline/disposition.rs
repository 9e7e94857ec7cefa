//! What became of a frame, and the link-level frames taken off a port before
//! the pipeline.

use super::counters::DropReason;

/// What became of one frame given to [`Switch::process`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Sent out of one port (bridged, routed, or encapsulated).
    Forwarded,
    /// Sent to several ports and/or remote VTEPs.
    Flooded,
    /// Routed to a next hop whose address is being resolved: held, and
    /// sent when it is (or answered with an unreachable when it fails).
    Held,
    /// Given to the host only.
    Punted,
    /// Answered by the pipeline itself (ARP reply, NA, echo reply, ICMP error),
    /// possibly with a copy to the host.
    Consumed,
    Dropped(DropReason),
    /// A link-level frame taken off the port before the pipeline, for its
    /// owner: counted, never forwarded or punted.
    LinkLevel(LinkLevelFrame),
}

/// The kinds of link-level frames recognised at port ingress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkLevelFrame {
    /// 802.3x PAUSE (MAC control opcode 0x0001).
    Pause,
    /// 802.1Qbb PFC (MAC control opcode 0x0101).
    Pfc,
    /// Another MAC control opcode: no owner acts on it.
    MacControlOther,
    /// An IB-like frame (EtherType 0x88B5), for the IB-like plane.
    IbLike,
}

pub(crate) const MAC_CONTROL: u16 = 0x8808;
pub(crate) const IB_LIKE: u16 = 0x88b5;

/// Recognises a link-level frame by its (untagged: MAC control and IB-like
/// frames are never VLAN-tagged) EtherType and, for MAC control, opcode.
#[inline]
pub fn link_level_frame(frame: &[u8]) -> Option<LinkLevelFrame> {
    use crate::wire::mac_control::Opcode;
    let ethertype = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
    match crate::wire::EtherType::from(ethertype) {
        crate::wire::EtherType::MacControl => Some(match frame.get(14..16) {
            Some(op) => match Opcode::from(u16::from_be_bytes([op[0], op[1]])) {
                Opcode::Pause => LinkLevelFrame::Pause,
                Opcode::PriorityFlowControl => LinkLevelFrame::Pfc,
                Opcode::Unknown(_) => LinkLevelFrame::MacControlOther,
            },
            None => LinkLevelFrame::MacControlOther,
        }),
        crate::wire::EtherType::LocalExperimental => Some(LinkLevelFrame::IbLike),
        _ => None,
    }
}
