//! The IB-like link layer's parser (EtherType 0x88B5 payload) over arbitrary
//! bytes. Beyond "never panics": whatever parses emits and parses back to
//! itself. The first input byte's bit 0 fills in a valid VCRC/LPCRC first, so
//! the checks behind the CRC are reached.

#![no_main]

use dataplane::wire::ib::{DataPacket, FLOW_CONTROL_LEN, FlowControlPacket, IbPacketRepr, SHIM_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let mut bytes = rest.to_vec();
    if flags & 1 != 0 && bytes.len() > SHIM_LEN {
        let packet = &mut bytes[SHIM_LEN..];
        if flags & 2 != 0 && packet.len() >= FLOW_CONTROL_LEN {
            FlowControlPacket::new_unchecked(packet).fill_lpcrc();
        } else if let Ok(mut data) = DataPacket::new_checked(packet) {
            data.fill_vcrc();
        }
    }
    if let Ok(repr) = IbPacketRepr::parse(&bytes) {
        let mut again = vec![0u8; repr.buffer_len()];
        assert_eq!(repr.emit(&mut again), Ok(repr.buffer_len()));
        assert_eq!(IbPacketRepr::parse(&again), Ok(repr));
    }
});
