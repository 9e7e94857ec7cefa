//! Address families and Network Layer Reachability Information.
//!
//! A route is keyed by an [`Nlri`]; every address family is one more variant
//! (EVPN, AFI 25 / SAFI 70, arrives as `Nlri::Evpn`), so the RIBs, the
//! decision process and update packing stay family-agnostic.

use core::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

use super::evpn::{EvpnError, EvpnPathData, EvpnRoute};

/// An (AFI, SAFI) pair as carried on the wire (RFC 4760 §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct AfiSafi {
    pub afi: u16,
    pub safi: u8,
}

impl AfiSafi {
    pub const IPV4_UNICAST: AfiSafi = AfiSafi { afi: 1, safi: 1 };
    pub const IPV6_UNICAST: AfiSafi = AfiSafi { afi: 2, safi: 1 };
    /// RFC 7432 §7: L2VPN (RFC 4761) AFI, EVPN SAFI.
    pub const L2VPN_EVPN: AfiSafi = AfiSafi { afi: 25, safi: 70 };

    pub fn family(self) -> Option<Family> {
        match self {
            AfiSafi::IPV4_UNICAST => Some(Family::Ipv4Unicast),
            AfiSafi::IPV6_UNICAST => Some(Family::Ipv6Unicast),
            AfiSafi::L2VPN_EVPN => Some(Family::L2vpnEvpn),
            _ => None,
        }
    }
}

impl fmt::Display for AfiSafi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.family() {
            Some(family) => write!(f, "{family}"),
            None => write!(f, "afi {} safi {}", self.afi, self.safi),
        }
    }
}

/// The families this speaker decodes into routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    Ipv4Unicast,
    Ipv6Unicast,
    L2vpnEvpn,
}

impl Family {
    pub const ALL: [Family; 3] = [Family::Ipv4Unicast, Family::Ipv6Unicast, Family::L2vpnEvpn];

    pub fn afi_safi(self) -> AfiSafi {
        match self {
            Family::Ipv4Unicast => AfiSafi::IPV4_UNICAST,
            Family::Ipv6Unicast => AfiSafi::IPV6_UNICAST,
            Family::L2vpnEvpn => AfiSafi::L2VPN_EVPN,
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Family::Ipv4Unicast => "ipv4-unicast",
            Family::Ipv6Unicast => "ipv6-unicast",
            Family::L2vpnEvpn => "l2vpn-evpn",
        })
    }
}

/// Why an NLRI could not be read (the caller maps it to the RFC 7606 action
/// of the field it came from).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NlriError {
    PrefixTooLong,
    Truncated,
    /// An EVPN route that does not fit its type's layout.
    Evpn(EvpnError),
}

macro_rules! prefix_type {
    ($name:ident, $addr:ty, $bits:expr, $bytes:expr) => {
        /// An address prefix; host bits are always zero.
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name {
            addr: $addr,
            len: u8,
        }

        impl $name {
            pub const MAX_LEN: u8 = $bits;

            /// `None` when `len` exceeds the address width. Host bits are cleared.
            pub fn new(addr: $addr, len: u8) -> Option<Self> {
                if len > $bits {
                    return None;
                }
                let mut octets = addr.octets();
                mask_octets(&mut octets, len);
                Some(Self { addr: <$addr>::from(octets), len })
            }

            pub fn addr(&self) -> $addr {
                self.addr
            }

            pub fn len(&self) -> u8 {
                self.len
            }

            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            pub fn contains(&self, other: &Self) -> bool {
                other.len >= self.len && Self::new(other.addr, self.len).map(|p| p.addr) == Some(self.addr)
            }

            /// Reads one `<length, prefix>` pair (RFC 4271 §4.3) and returns it
            /// with the number of bytes consumed.
            pub fn decode(buf: &[u8]) -> Result<(Self, usize), NlriError> {
                let (&len, rest) = buf.split_first().ok_or(NlriError::Truncated)?;
                if len > $bits {
                    return Err(NlriError::PrefixTooLong);
                }
                let nbytes = (len as usize).div_ceil(8);
                let bytes = rest.get(..nbytes).ok_or(NlriError::Truncated)?;
                let mut octets = [0u8; $bytes];
                octets[..nbytes].copy_from_slice(bytes);
                mask_octets(&mut octets, len);
                Ok((Self { addr: <$addr>::from(octets), len }, 1 + nbytes))
            }

            pub fn encoded_len(&self) -> usize {
                1 + (self.len as usize).div_ceil(8)
            }

            pub fn encode(&self, out: &mut Vec<u8>) {
                out.push(self.len);
                out.extend_from_slice(&self.addr.octets()[..(self.len as usize).div_ceil(8)]);
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}/{}", self.addr, self.len)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(self, f)
            }
        }

        impl core::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                let (addr, len) = s.split_once('/').ok_or_else(|| format!("{s}: missing /length"))?;
                let addr: $addr = addr.parse().map_err(|e| format!("{s}: {e}"))?;
                let len: u8 = len.parse().map_err(|e| format!("{s}: {e}"))?;
                Self::new(addr, len).ok_or_else(|| format!("{s}: length above {}", $bits))
            }
        }
    };
}

prefix_type!(Ipv4Prefix, Ipv4Addr, 32, 4);
prefix_type!(Ipv6Prefix, Ipv6Addr, 128, 16);

/// Reads `<length, prefix>` pairs until `buf` is used up.
fn decode_prefixes(
    mut buf: &[u8],
    out: &mut Vec<Nlri>,
    decode: impl Fn(&[u8]) -> Result<(Nlri, usize), NlriError>,
) -> Result<(), NlriError> {
    while !buf.is_empty() {
        let (nlri, used) = decode(buf)?;
        out.push(nlri);
        buf = &buf[used..];
    }
    Ok(())
}

fn mask_octets(octets: &mut [u8], len: u8) {
    let len = len as usize;
    for (i, octet) in octets.iter_mut().enumerate() {
        let bit = i * 8;
        if bit >= len {
            *octet = 0;
        } else if len - bit < 8 {
            *octet &= 0xffu8 << (8 - (len - bit));
        }
    }
}

/// One route's key: a family plus what identifies the route inside it.
///
/// An EVPN route in the RIBs is its key form ([`EvpnRoute::key`]: the
/// fields RFC 7432 §7 and RFC 9136 §3.1 exclude from the key zeroed); the
/// excluded fields (labels, ESI, gateway) travel with the path in
/// [`super::PathAttrs::evpn`]. As decoded from or encoded to an UPDATE it
/// is the whole route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Nlri {
    Ipv4(Ipv4Prefix),
    Ipv6(Ipv6Prefix),
    Evpn(EvpnRoute),
}

impl Nlri {
    pub fn family(&self) -> Family {
        match self {
            Nlri::Ipv4(_) => Family::Ipv4Unicast,
            Nlri::Ipv6(_) => Family::Ipv6Unicast,
            Nlri::Evpn(_) => Family::L2vpnEvpn,
        }
    }

    pub fn encoded_len(&self) -> usize {
        match self {
            Nlri::Ipv4(p) => p.encoded_len(),
            Nlri::Ipv6(p) => p.encoded_len(),
            Nlri::Evpn(r) => r.encoded_len(),
        }
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Nlri::Ipv4(p) => p.encode(out),
            Nlri::Ipv6(p) => p.encode(out),
            Nlri::Evpn(r) => r.encode(out),
        }
    }

    /// Reads every NLRI of `family` in `buf`, appending to `out`. EVPN
    /// routes of a type this speaker does not know are skipped (RFC 7432 §7).
    pub fn decode_all(family: Family, buf: &[u8], out: &mut Vec<Nlri>) -> Result<(), NlriError> {
        match family {
            Family::Ipv4Unicast => {
                decode_prefixes(buf, out, |b| Ipv4Prefix::decode(b).map(|(p, n)| (Nlri::Ipv4(p), n)))
            }
            Family::Ipv6Unicast => {
                decode_prefixes(buf, out, |b| Ipv6Prefix::decode(b).map(|(p, n)| (Nlri::Ipv6(p), n)))
            }
            Family::L2vpnEvpn => {
                let mut routes = Vec::new();
                EvpnRoute::decode_all(buf, &mut routes).map_err(NlriError::Evpn)?;
                out.extend(routes.into_iter().map(Nlri::Evpn));
                Ok(())
            }
        }
    }

    /// The route's key and, for EVPN types 1, 2 and 5, its non-key fields
    /// (see [`EvpnRoute::split`]). IP prefixes are their own keys.
    pub fn split(self) -> (Nlri, Option<EvpnPathData>) {
        match self {
            Nlri::Evpn(r @ (EvpnRoute::InclusiveMulticast { .. } | EvpnRoute::EthernetSegment { .. })) => {
                (Nlri::Evpn(r), None)
            }
            Nlri::Evpn(r) => {
                let (key, data) = r.split();
                (Nlri::Evpn(key), Some(data))
            }
            ip => (ip, None),
        }
    }

    /// The IP prefix of an IP route.
    pub fn ip_network(&self) -> Option<ipnetwork::IpNetwork> {
        match self {
            Nlri::Ipv4(p) => ipnetwork::IpNetwork::new(IpAddr::V4(p.addr()), p.len()).ok(),
            Nlri::Ipv6(p) => ipnetwork::IpNetwork::new(IpAddr::V6(p.addr()), p.len()).ok(),
            Nlri::Evpn(_) => None,
        }
    }

    /// The IP route of a prefix.
    pub fn from_network(net: ipnetwork::IpNetwork) -> Option<Nlri> {
        match net {
            ipnetwork::IpNetwork::V4(n) => Ipv4Prefix::new(n.network(), n.prefix()).map(Nlri::Ipv4),
            ipnetwork::IpNetwork::V6(n) => Ipv6Prefix::new(n.network(), n.prefix()).map(Nlri::Ipv6),
        }
    }

    pub fn contains_addr(&self, addr: IpAddr) -> bool {
        match (self, addr) {
            (Nlri::Ipv4(p), IpAddr::V4(a)) => Ipv4Prefix::new(a, 32).is_some_and(|h| p.contains(&h)),
            (Nlri::Ipv6(p), IpAddr::V6(a)) => Ipv6Prefix::new(a, 128).is_some_and(|h| p.contains(&h)),
            _ => false,
        }
    }
}

impl fmt::Display for Nlri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Nlri::Ipv4(p) => write!(f, "{p}"),
            Nlri::Ipv6(p) => write!(f, "{p}"),
            Nlri::Evpn(r) => write!(f, "{r}"),
        }
    }
}

impl core::str::FromStr for Nlri {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.contains(':') { s.parse().map(Nlri::Ipv6) } else { s.parse().map(Nlri::Ipv4) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_round_trip_and_host_bits_cleared() {
        let p: Ipv4Prefix = "10.1.2.3/23".parse().unwrap();
        assert_eq!(p.to_string(), "10.1.2.0/23");
        let mut buf = Vec::new();
        p.encode(&mut buf);
        assert_eq!(buf, [23, 10, 1, 2]);
        assert_eq!(Ipv4Prefix::decode(&buf), Ok((p, 4)));
        // Trailing bits beyond the length are ignored on receipt.
        assert_eq!(Ipv4Prefix::decode(&[23, 10, 1, 3]).unwrap().0, p);
    }

    #[test]
    fn bad_prefixes_are_errors() {
        assert_eq!(Ipv4Prefix::decode(&[33, 1, 2, 3, 4, 5]), Err(NlriError::PrefixTooLong));
        assert_eq!(Ipv4Prefix::decode(&[24, 1, 2]), Err(NlriError::Truncated));
        assert_eq!(Ipv6Prefix::decode(&[129]), Err(NlriError::PrefixTooLong));
        let p: Ipv6Prefix = "2001:db8::/32".parse().unwrap();
        let mut buf = Vec::new();
        p.encode(&mut buf);
        assert_eq!(buf, [32, 0x20, 0x01, 0x0d, 0xb8]);
    }

    #[test]
    fn contains() {
        let p: Ipv4Prefix = "10.0.0.0/8".parse().unwrap();
        assert!(p.contains(&"10.1.0.0/16".parse().unwrap()));
        assert!(!p.contains(&"11.0.0.0/16".parse().unwrap()));
        assert!(!p.contains(&"0.0.0.0/0".parse().unwrap()));
    }
}
