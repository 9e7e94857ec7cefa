//! Capabilities advertised in OPEN (RFC 5492).

use super::error::{DecodeError, open_subcode};
use super::nlri::AfiSafi;

pub mod code {
    pub const MULTIPROTOCOL: u8 = 1;
    pub const ROUTE_REFRESH: u8 = 2;
    pub const EXTENDED_NEXT_HOP: u8 = 5;
    pub const EXTENDED_MESSAGE: u8 = 6;
    pub const GRACEFUL_RESTART: u8 = 64;
    pub const FOUR_OCTET_AS: u8 = 65;
}

/// Per-family entry of the Graceful Restart capability (RFC 4724 §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GracefulRestartFamily {
    pub afi_safi: AfiSafi,
    /// "Forwarding State" bit: the peer kept its forwarding state.
    pub forwarding_preserved: bool,
}

/// One entry of the Extended Next Hop Encoding capability (RFC 8950
/// section 4): NLRI of this AFI/SAFI may carry a next hop of that AFI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtendedNextHop {
    pub nlri_afi: u16,
    /// Two octets here, unlike in the Multiprotocol capability.
    pub nlri_safi: u16,
    pub next_hop_afi: u16,
}

impl ExtendedNextHop {
    /// IPv4 unicast over an IPv6 next hop: what BGP unnumbered needs.
    pub const IPV4_UNICAST_OVER_IPV6: ExtendedNextHop = ExtendedNextHop { nlri_afi: 1, nlri_safi: 1, next_hop_afi: 2 };
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capability {
    /// RFC 4760 §8.
    Multiprotocol(AfiSafi),
    /// RFC 2918 §2.
    RouteRefresh,
    /// RFC 8950 §4.
    ExtendedNextHop(Vec<ExtendedNextHop>),
    /// RFC 8654 §3.
    ExtendedMessage,
    /// RFC 4724 §3; this speaker acts as a helper only.
    GracefulRestart { restarting: bool, restart_time: u16, families: Vec<GracefulRestartFamily> },
    /// RFC 6793 §3.
    FourOctetAs(u32),
    /// Anything else, kept so it can be logged.
    Unknown { code: u8, value: Vec<u8> },
}

impl Capability {
    /// Decodes one capability TLV and returns it with the bytes consumed.
    pub fn decode(buf: &[u8]) -> Result<(Capability, usize), DecodeError> {
        let malformed = || DecodeError::open(open_subcode::UNSPECIFIC, Vec::new(), "malformed capability");
        let (&code, rest) = buf.split_first().ok_or_else(malformed)?;
        let (&len, rest) = rest.split_first().ok_or_else(malformed)?;
        let value = rest.get(..len as usize).ok_or_else(malformed)?;
        let cap = match code {
            code::MULTIPROTOCOL => {
                let [a0, a1, _reserved, safi] = *value else {
                    return Err(malformed());
                };
                Capability::Multiprotocol(AfiSafi { afi: u16::from_be_bytes([a0, a1]), safi })
            }
            code::ROUTE_REFRESH if value.is_empty() => Capability::RouteRefresh,
            code::EXTENDED_NEXT_HOP => {
                // RFC 8950 §4: triples of 2-octet fields.
                if value.is_empty() || value.len() % 6 != 0 {
                    return Err(malformed());
                }
                let field = |c: &[u8], at: usize| u16::from_be_bytes([c[at], c[at + 1]]);
                Capability::ExtendedNextHop(
                    value
                        .chunks_exact(6)
                        .map(|c| ExtendedNextHop {
                            nlri_afi: field(c, 0),
                            nlri_safi: field(c, 2),
                            next_hop_afi: field(c, 4),
                        })
                        .collect(),
                )
            }
            code::EXTENDED_MESSAGE if value.is_empty() => Capability::ExtendedMessage,
            code::GRACEFUL_RESTART => {
                if value.len() < 2 || (value.len() - 2) % 4 != 0 {
                    return Err(malformed());
                }
                let head = u16::from_be_bytes([value[0], value[1]]);
                let families = value[2..]
                    .chunks_exact(4)
                    .map(|c| GracefulRestartFamily {
                        afi_safi: AfiSafi { afi: u16::from_be_bytes([c[0], c[1]]), safi: c[2] },
                        forwarding_preserved: c[3] & 0x80 != 0,
                    })
                    .collect();
                Capability::GracefulRestart { restarting: head & 0x8000 != 0, restart_time: head & 0x0fff, families }
            }
            code::FOUR_OCTET_AS => {
                let [a, b, c, d] = *value else {
                    return Err(malformed());
                };
                Capability::FourOctetAs(u32::from_be_bytes([a, b, c, d]))
            }
            code::ROUTE_REFRESH | code::EXTENDED_MESSAGE => return Err(malformed()),
            _ => Capability::Unknown { code, value: value.to_vec() },
        };
        Ok((cap, 2 + len as usize))
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0, 0]);
        let code = match self {
            Capability::Multiprotocol(af) => {
                out.extend_from_slice(&af.afi.to_be_bytes());
                out.extend_from_slice(&[0, af.safi]);
                code::MULTIPROTOCOL
            }
            Capability::RouteRefresh => code::ROUTE_REFRESH,
            Capability::ExtendedNextHop(entries) => {
                for e in entries {
                    out.extend_from_slice(&e.nlri_afi.to_be_bytes());
                    out.extend_from_slice(&e.nlri_safi.to_be_bytes());
                    out.extend_from_slice(&e.next_hop_afi.to_be_bytes());
                }
                code::EXTENDED_NEXT_HOP
            }
            Capability::ExtendedMessage => code::EXTENDED_MESSAGE,
            Capability::GracefulRestart { restarting, restart_time, families } => {
                let head = (restart_time & 0x0fff) | if *restarting { 0x8000 } else { 0 };
                out.extend_from_slice(&head.to_be_bytes());
                for f in families {
                    out.extend_from_slice(&f.afi_safi.afi.to_be_bytes());
                    out.push(f.afi_safi.safi);
                    out.push(if f.forwarding_preserved { 0x80 } else { 0 });
                }
                code::GRACEFUL_RESTART
            }
            Capability::FourOctetAs(asn) => {
                out.extend_from_slice(&asn.to_be_bytes());
                code::FOUR_OCTET_AS
            }
            Capability::Unknown { code, value } => {
                out.extend_from_slice(value);
                *code
            }
        };
        out[start] = code;
        // Every capability this speaker builds fits in 255 bytes; clamp so a
        // huge Unknown cannot produce a wrong length silently.
        out[start + 1] = (out.len() - start - 2).min(255) as u8;
    }
}
