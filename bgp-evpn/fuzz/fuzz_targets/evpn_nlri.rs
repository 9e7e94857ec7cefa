//! The EVPN NLRI, extended community and PMSI tunnel decoders on arbitrary
//! bytes: nothing panics, and whatever decodes re-encodes to bytes that
//! decode to the same routes.
#![no_main]

use bgp_evpn::packet::evpn::{EvpnRoute, ExtCommunity, PmsiTunnel};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut routes = Vec::new();
    if EvpnRoute::decode_all(data, &mut routes).is_ok() {
        let mut bytes = Vec::new();
        for route in &routes {
            let _ = route.to_string();
            route.encode(&mut bytes);
        }
        let mut again = Vec::new();
        assert_eq!(EvpnRoute::decode_all(&bytes, &mut again), Ok(0));
        assert_eq!(again, routes);
    }
    if let Ok(pmsi) = PmsiTunnel::decode(data) {
        let mut bytes = Vec::new();
        pmsi.encode(&mut bytes);
        assert_eq!(PmsiTunnel::decode(&bytes), Ok(pmsi));
    }
    for chunk in data.chunks_exact(8) {
        let raw = u64::from_be_bytes(chunk.try_into().unwrap());
        let community = ExtCommunity::from_u64(raw);
        assert_eq!(ExtCommunity::from_u64(community.to_u64()), community);
    }
});
