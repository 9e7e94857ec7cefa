//! OPEN message (RFC 4271 §4.2) with the Capabilities optional parameter (RFC 5492).

use std::net::Ipv4Addr;

use super::capability::Capability;
use super::error::{DecodeError, open_subcode};
use super::nlri::AfiSafi;

pub const BGP_VERSION: u8 = 4;
/// RFC 6793 §9: the 2-octet stand-in for an AS number above 65535.
pub const AS_TRANS: u16 = 23456;
const PARAM_CAPABILITIES: u8 = 2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Open {
    /// The 2-octet "My Autonomous System" field; see [`Open::asn`].
    pub my_as: u16,
    pub hold_time: u16,
    pub bgp_id: Ipv4Addr,
    pub capabilities: Vec<Capability>,
}

impl Open {
    /// Builds an OPEN for a speaker in `asn`, setting AS_TRANS and the
    /// 4-octet AS capability as RFC 6793 §4.1 requires.
    pub fn new(asn: u32, hold_time: u16, bgp_id: Ipv4Addr, mut capabilities: Vec<Capability>) -> Open {
        if !capabilities.iter().any(|c| matches!(c, Capability::FourOctetAs(_))) {
            capabilities.push(Capability::FourOctetAs(asn));
        }
        let my_as = u16::try_from(asn).unwrap_or(AS_TRANS);
        Open { my_as, hold_time, bgp_id, capabilities }
    }

    /// The sender's AS: the 4-octet AS capability if present (RFC 6793 §4.1).
    pub fn asn(&self) -> u32 {
        self.capabilities
            .iter()
            .find_map(|c| match c {
                Capability::FourOctetAs(asn) => Some(*asn),
                _ => None,
            })
            .unwrap_or(self.my_as as u32)
    }

    pub fn families(&self) -> impl Iterator<Item = AfiSafi> + '_ {
        self.capabilities.iter().filter_map(|c| match c {
            Capability::Multiprotocol(af) => Some(*af),
            _ => None,
        })
    }

    pub fn has(&self, pred: impl Fn(&Capability) -> bool) -> bool {
        self.capabilities.iter().any(pred)
    }

    /// Decodes the body after the 19-byte header. Semantic checks that need
    /// configuration (peer AS, hold time policy) belong to the FSM.
    pub fn decode(body: &[u8]) -> Result<Open, DecodeError> {
        // RFC 4271 §6.2: too short bodies are a Bad Message Length, found by
        // the header check (minimum OPEN length 29); this is a second line.
        if body.len() < 10 {
            return Err(DecodeError::header(
                super::error::header_subcode::BAD_MESSAGE_LENGTH,
                ((body.len() + 19) as u16).to_be_bytes().to_vec(),
                "OPEN too short",
            ));
        }
        if body[0] != BGP_VERSION {
            // §6.2: the data is the largest locally supported version number.
            return Err(DecodeError::open(
                open_subcode::UNSUPPORTED_VERSION,
                (BGP_VERSION as u16).to_be_bytes().to_vec(),
                "unsupported BGP version",
            ));
        }
        let my_as = u16::from_be_bytes([body[1], body[2]]);
        let hold_time = u16::from_be_bytes([body[3], body[4]]);
        // §6.2: "Hold Time ... MUST reject Hold Time values of one or two seconds."
        if hold_time == 1 || hold_time == 2 {
            return Err(DecodeError::open(open_subcode::UNACCEPTABLE_HOLD_TIME, Vec::new(), "hold time 1 or 2"));
        }
        let bgp_id = Ipv4Addr::new(body[5], body[6], body[7], body[8]);
        // RFC 6286 §2.2: a zero BGP Identifier is the only invalid one.
        if bgp_id.is_unspecified() {
            return Err(DecodeError::open(open_subcode::BAD_BGP_IDENTIFIER, Vec::new(), "zero BGP identifier"));
        }
        let params_len = body[9] as usize;
        let params = body.get(10..10 + params_len).filter(|_| body.len() == 10 + params_len).ok_or_else(|| {
            DecodeError::open(open_subcode::UNSPECIFIC, Vec::new(), "optional parameters length mismatch")
        })?;
        let mut capabilities = Vec::new();
        let mut rest = params;
        while !rest.is_empty() {
            let [ptype, plen, ..] = *rest else {
                return Err(DecodeError::open(open_subcode::UNSPECIFIC, Vec::new(), "truncated optional parameter"));
            };
            let value = rest.get(2..2 + plen as usize).ok_or_else(|| {
                DecodeError::open(open_subcode::UNSPECIFIC, Vec::new(), "truncated optional parameter")
            })?;
            if ptype != PARAM_CAPABILITIES {
                return Err(DecodeError::open(
                    open_subcode::UNSUPPORTED_OPTIONAL_PARAMETER,
                    Vec::new(),
                    "unsupported optional parameter",
                ));
            }
            let mut caps = value;
            while !caps.is_empty() {
                let (cap, used) = Capability::decode(caps)?;
                capabilities.push(cap);
                caps = &caps[used..];
            }
            rest = &rest[2 + plen as usize..];
        }
        Ok(Open { my_as, hold_time, bgp_id, capabilities })
    }

    pub fn encode_body(&self, out: &mut Vec<u8>) {
        out.push(BGP_VERSION);
        out.extend_from_slice(&self.my_as.to_be_bytes());
        out.extend_from_slice(&self.hold_time.to_be_bytes());
        out.extend_from_slice(&self.bgp_id.octets());
        let len_at = out.len();
        out.push(0);
        // One Capabilities parameter per capability, as most speakers send.
        for cap in &self.capabilities {
            out.push(PARAM_CAPABILITIES);
            let at = out.len();
            out.push(0);
            cap.encode(out);
            out[at] = (out.len() - at - 1).min(255) as u8;
        }
        out[len_at] = (out.len() - len_at - 1).min(255) as u8;
    }
}
