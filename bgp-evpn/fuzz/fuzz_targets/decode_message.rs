//! Every message decoder on arbitrary bytes, under both 2- and 4-octet AS
//! contexts; whatever decodes must re-encode and decode to the same value.
#![no_main]

use bgp_evpn::packet::{DecodeContext, Message, decode_message};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = Message::decode(data, &DecodeContext { four_octet_as: false, extended_message: false, ebgp: true });
    let Ok(msg) = decode_message(data) else { return };
    let ctx = DecodeContext { four_octet_as: true, extended_message: true, ebgp: false };
    let bytes = msg.to_bytes(&ctx);
    if let Ok(again) = Message::decode(&bytes, &ctx) {
        // RFC 7606 outcomes are recorded on the first decode only (the
        // offending attributes are gone from the re-encoding).
        if let (Message::Update(a), Message::Update(b)) = (&msg, &again) {
            if a.errors.is_empty() {
                assert_eq!(a, b);
            }
        } else {
            assert_eq!(msg, again);
        }
    }
});
