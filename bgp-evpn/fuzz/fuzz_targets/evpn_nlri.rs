//! The EVPN NLRI, extended community and PMSI tunnel decoders on arbitrary
//! bytes: nothing panics, and whatever decodes re-encodes to bytes that
//! decode to the same routes; splitting a route into its key and non-key
//! fields and joining them again gives the route back.
#![no_main]

use bgp_evpn::packet::evpn::{EvpnRoute, ExtCommunity, PmsiTunnel};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut routes = Vec::new();
    if EvpnRoute::decode_all(data, &mut routes).is_ok() {
        let mut bytes = Vec::new();
        for route in &routes {
            let _ = route.to_string();
            let at = bytes.len();
            route.encode(&mut bytes);
            assert_eq!(bytes.len() - at, route.encoded_len());
            // The RIBs' key form plus the path's non-key fields give the route back.
            let (key, data) = route.split();
            assert_eq!(key.key(), key);
            assert_eq!(key.with_data(&data), *route);
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
