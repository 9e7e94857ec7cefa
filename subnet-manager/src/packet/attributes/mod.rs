//! SMP attributes (IBA vol. 1 section 14.2.5, and 13.4.8.2 for Notice):
//! each a view over the 64-byte SMP data and an owned `...Repr`.

mod lft;
mod node_description;
mod node_info;
mod notice;
mod port_info;
mod sl2vl;
mod sm_info;
mod switch_info;
mod vl_arb;

pub use lft::{LFT_BLOCK_ENTRIES, LftBlock, LftBlockRepr};
pub use node_description::{NodeDescription, NodeDescriptionRepr};
pub use node_info::{NodeInfo, NodeInfoRepr, NodeType};
pub use notice::{DATA_DETAILS_LEN, Notice, NoticeRepr, TRAP_LINK_STATE_CHANGE, TRAP_LOCAL_CHANGES};
pub use port_info::{LinkSpeed, LinkWidth, PortInfo, PortInfoRepr, PortPhysState, PortState};
pub use sl2vl::{SlToVlRepr, SlToVlTable, sl2vl_modifier};
pub use sm_info::{SmInfo, SmInfoControl, SmInfoRepr, SmState};
pub use switch_info::{SwitchInfo, SwitchInfoRepr};
pub use vl_arb::{VL_ARB_BLOCK_ENTRIES, VlArbBlock, VlArbEntry, VlArbRepr, VlArbTable, vl_arb_modifier};

/// Attribute identifiers of the subnet management class (IBA 14.2.5,
/// table 145), those this crate meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AttributeId {
    Notice,
    NodeDescription,
    NodeInfo,
    SwitchInfo,
    GuidInfo,
    PortInfo,
    PKeyTable,
    SlToVlMappingTable,
    VlArbitrationTable,
    LinearForwardingTable,
    RandomForwardingTable,
    MulticastForwardingTable,
    SmInfo,
    Unknown(u16),
}

impl From<u16> for AttributeId {
    fn from(value: u16) -> Self {
        match value {
            0x0002 => AttributeId::Notice,
            0x0010 => AttributeId::NodeDescription,
            0x0011 => AttributeId::NodeInfo,
            0x0012 => AttributeId::SwitchInfo,
            0x0014 => AttributeId::GuidInfo,
            0x0015 => AttributeId::PortInfo,
            0x0016 => AttributeId::PKeyTable,
            0x0017 => AttributeId::SlToVlMappingTable,
            0x0018 => AttributeId::VlArbitrationTable,
            0x0019 => AttributeId::LinearForwardingTable,
            0x001a => AttributeId::RandomForwardingTable,
            0x001b => AttributeId::MulticastForwardingTable,
            0x0020 => AttributeId::SmInfo,
            other => AttributeId::Unknown(other),
        }
    }
}

impl From<AttributeId> for u16 {
    fn from(value: AttributeId) -> Self {
        match value {
            AttributeId::Notice => 0x0002,
            AttributeId::NodeDescription => 0x0010,
            AttributeId::NodeInfo => 0x0011,
            AttributeId::SwitchInfo => 0x0012,
            AttributeId::GuidInfo => 0x0014,
            AttributeId::PortInfo => 0x0015,
            AttributeId::PKeyTable => 0x0016,
            AttributeId::SlToVlMappingTable => 0x0017,
            AttributeId::VlArbitrationTable => 0x0018,
            AttributeId::LinearForwardingTable => 0x0019,
            AttributeId::RandomForwardingTable => 0x001a,
            AttributeId::MulticastForwardingTable => 0x001b,
            AttributeId::SmInfo => 0x0020,
            AttributeId::Unknown(other) => other,
        }
    }
}

/// The 64 bytes of SMP data an attribute is emitted into.
pub type SmpData = [u8; crate::packet::smp::DATA_LEN];

/// Round trip checks shared by every attribute's tests: a Repr made by
/// parsing arbitrary bytes emits bytes that parse back to it, and emitting
/// is idempotent.
#[cfg(test)]
macro_rules! attribute_round_trip {
    ($name:ident, $view:ident, $repr:ident) => {
        proptest::proptest! {
            #[test]
            fn $name(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80)) {
                match $view::new_checked(&bytes[..]) {
                    Err(_) => proptest::prop_assert!(bytes.len() < $view::<&[u8]>::LEN),
                    Ok(view) => {
                        if let Ok(repr) = $repr::parse(&view) {
                            let mut out = [0u8; 64];
                            repr.emit(&mut $view::new_unchecked(&mut out[..]));
                            let again = $repr::parse(&$view::new_checked(&out[..]).unwrap()).unwrap();
                            proptest::prop_assert_eq!(&again, &repr);
                            let mut out2 = [0u8; 64];
                            again.emit(&mut $view::new_unchecked(&mut out2[..]));
                            proptest::prop_assert_eq!(out, out2);
                        }
                    }
                }
            }
        }
    };
}
#[cfg(test)]
pub(crate) use attribute_round_trip;
