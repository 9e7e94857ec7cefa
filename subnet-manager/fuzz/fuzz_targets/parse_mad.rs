//! The MAD/SMP parser and every SMP attribute over arbitrary bytes. Beyond
//! "never panics": whatever parses emits and parses back to itself, and the
//! attribute the header names is parsed from the SMP data the same way.

#![no_main]

use libfuzzer_sys::fuzz_target;
use subnet_manager::packet::attributes::{
    AttributeId, LftBlock, LftBlockRepr, NodeDescription, NodeDescriptionRepr, NodeInfo, NodeInfoRepr, Notice,
    NoticeRepr, PortInfo, PortInfoRepr, SlToVlRepr, SlToVlTable, SmInfo, SmInfoRepr, SwitchInfo, SwitchInfoRepr,
    VlArbRepr, VlArbTable,
};
use subnet_manager::packet::{MadHeader, MadHeaderRepr, SmpRepr};

macro_rules! attribute_round_trip {
    ($data:expr, $view:ident, $repr:ident) => {{
        let view = $view::new_checked($data).expect("SMP data holds every attribute");
        if let Ok(repr) = $repr::parse(&view) {
            let mut out = [0u8; 64];
            repr.emit(&mut $view::new_unchecked(&mut out[..]));
            assert_eq!($repr::parse(&$view::new_checked(&out[..]).unwrap()).as_ref(), Ok(&repr));
        }
    }};
}

fuzz_target!(|data: &[u8]| {
    if let Ok(header) = MadHeader::new_checked(data) {
        if let Ok(repr) = MadHeaderRepr::parse(&header) {
            let mut out = [0u8; 24];
            repr.emit(&mut MadHeader::new_unchecked(&mut out[..]));
            assert_eq!(MadHeaderRepr::parse(&MadHeader::new_checked(&out[..]).unwrap()), Ok(repr));
        }
    }
    let Ok(smp) = SmpRepr::parse_bytes(data) else {
        return;
    };
    let bytes = smp.to_bytes();
    assert_eq!(SmpRepr::parse_bytes(&bytes), Ok(smp));
    let payload = &smp.data[..];
    match smp.attribute_id {
        AttributeId::NodeInfo => attribute_round_trip!(payload, NodeInfo, NodeInfoRepr),
        AttributeId::NodeDescription => attribute_round_trip!(payload, NodeDescription, NodeDescriptionRepr),
        AttributeId::PortInfo => attribute_round_trip!(payload, PortInfo, PortInfoRepr),
        AttributeId::SwitchInfo => attribute_round_trip!(payload, SwitchInfo, SwitchInfoRepr),
        AttributeId::LinearForwardingTable => attribute_round_trip!(payload, LftBlock, LftBlockRepr),
        AttributeId::SlToVlMappingTable => attribute_round_trip!(payload, SlToVlTable, SlToVlRepr),
        AttributeId::VlArbitrationTable => attribute_round_trip!(payload, VlArbTable, VlArbRepr),
        AttributeId::SmInfo => attribute_round_trip!(payload, SmInfo, SmInfoRepr),
        AttributeId::Notice => attribute_round_trip!(payload, Notice, NoticeRepr),
        _ => {}
    }
});
