//! UPDATE message (RFC 4271 §4.3), multiprotocol NLRI (RFC 4760), RFC 7606
//! error classification, and update packing (many prefixes per message).

use std::net::IpAddr;

use super::DecodeContext;
use super::attribute::{self, DecodedAttrs, MpReach, MpUnreach, PathAttrs, decode_attributes, flag, type_code};
use super::error::{AttributeError, DecodeError, ErrorAction, update_subcode};
use super::message::{HEADER_LEN, MessageType, write_header};
use super::nlri::{AfiSafi, Family, Nlri};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Update {
    /// The Withdrawn Routes field (IPv4 unicast only).
    pub withdrawn: Vec<Nlri>,
    pub attrs: PathAttrs,
    /// The NLRI field (IPv4 unicast only).
    pub nlri: Vec<Nlri>,
    pub mp_reach: Option<MpReach>,
    pub mp_unreach: Option<MpUnreach>,
    /// RFC 7606 errors that did not reset the session.
    pub errors: Vec<AttributeError>,
}

impl Update {
    /// The most severe RFC 7606 action this UPDATE calls for, if any.
    pub fn error_action(&self) -> Option<ErrorAction> {
        self.errors.iter().map(|e| e.action).max()
    }

    /// RFC 4724 §2: an UPDATE with nothing in it (IPv4) or only an empty
    /// MP_UNREACH_NLRI marks the end of the initial table.
    pub fn end_of_rib(&self) -> Option<AfiSafi> {
        if !self.withdrawn.is_empty() || !self.nlri.is_empty() || self.mp_reach.is_some() {
            return None;
        }
        match &self.mp_unreach {
            None if self.attrs == PathAttrs::default() && self.errors.is_empty() => Some(AfiSafi::IPV4_UNICAST),
            Some(un) if un.withdrawn.is_empty() => Some(un.afi_safi),
            _ => None,
        }
    }

    /// Every route the UPDATE announces, with the next hop that applies to it.
    pub fn announced(&self) -> impl Iterator<Item = (Nlri, Option<IpAddr>)> + '_ {
        let classic = self.nlri.iter().map(|n| (*n, self.attrs.next_hop));
        let mp = self.mp_reach.iter().flat_map(|r| r.nlri.iter().map(|n| (*n, Some(r.next_hop))));
        classic.chain(mp)
    }

    /// Every route the UPDATE withdraws.
    pub fn withdrawn_routes(&self) -> impl Iterator<Item = Nlri> + '_ {
        self.withdrawn.iter().copied().chain(self.mp_unreach.iter().flat_map(|u| u.withdrawn.iter().copied()))
    }

    /// Decodes the body after the 19-byte header.
    pub fn decode(body: &[u8], ctx: &DecodeContext) -> Result<Update, DecodeError> {
        let malformed = |reason| DecodeError::update(update_subcode::MALFORMED_ATTRIBUTE_LIST, Vec::new(), reason);
        let wd_len =
            body.get(..2).map(|b| u16::from_be_bytes([b[0], b[1]]) as usize).ok_or_else(|| malformed("truncated"))?;
        let withdrawn_field = body.get(2..2 + wd_len).ok_or_else(|| malformed("withdrawn routes length too large"))?;
        let at = 2 + wd_len;
        let attr_len = body
            .get(at..at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]) as usize)
            .ok_or_else(|| malformed("truncated"))?;
        // RFC 4271 §6.3: Withdrawn Routes Length + Total Attribute Length + 23
        // exceeding the message length is a Malformed Attribute List.
        let attrs_field =
            body.get(at + 2..at + 2 + attr_len).ok_or_else(|| malformed("total attribute length too large"))?;
        let nlri_field = &body[at + 2 + attr_len..];

        // RFC 7606 §5.3: an error in the Withdrawn Routes or NLRI field
        // leaves no way to know which routes are affected: "session reset".
        let network_error = || {
            DecodeError::update(
                update_subcode::INVALID_NETWORK_FIELD,
                Vec::new(),
                "bad prefix in NLRI or withdrawn routes",
            )
        };
        let mut withdrawn = Vec::new();
        Nlri::decode_all(Family::Ipv4Unicast, withdrawn_field, &mut withdrawn).map_err(|_| network_error())?;
        let mut nlri = Vec::new();
        Nlri::decode_all(Family::Ipv4Unicast, nlri_field, &mut nlri).map_err(|_| network_error())?;

        let DecodedAttrs { attrs, mp_reach, mp_unreach, mut errors, has_origin, has_as_path, has_next_hop } =
            decode_attributes(attrs_field, ctx)?;

        // RFC 7606 §3 d: "If any of the well-known mandatory attributes are
        // not present in an UPDATE message, then 'treat-as-withdraw' MUST be
        // used." Only UPDATEs that announce something need them; NEXT_HOP only
        // for routes in the NLRI field (RFC 4760 §3 makes it discretionary otherwise).
        let announces = !nlri.is_empty() || mp_reach.as_ref().is_some_and(|r| !r.nlri.is_empty());
        if announces {
            for (present, code) in [(has_origin, type_code::ORIGIN), (has_as_path, type_code::AS_PATH)] {
                if !present && !errors.iter().any(|e| e.type_code == code) {
                    errors.push(AttributeError {
                        type_code: code,
                        action: ErrorAction::TreatAsWithdraw,
                        subcode: update_subcode::MISSING_WELL_KNOWN,
                        reason: "missing well-known attribute",
                    });
                }
            }
            if !nlri.is_empty() && !has_next_hop && !errors.iter().any(|e| e.type_code == type_code::NEXT_HOP) {
                errors.push(AttributeError {
                    type_code: type_code::NEXT_HOP,
                    action: ErrorAction::TreatAsWithdraw,
                    subcode: update_subcode::MISSING_WELL_KNOWN,
                    reason: "missing NEXT_HOP",
                });
            }
        }
        Ok(Update { withdrawn, attrs, nlri, mp_reach, mp_unreach, errors })
    }

    /// Encodes the body (everything after the header) as given: IPv4 routes
    /// in the classic fields, MP attributes first (RFC 7606 §5.1).
    pub fn encode_body(&self, ctx: &DecodeContext, out: &mut Vec<u8>) {
        let wd_at = out.len();
        out.extend_from_slice(&[0, 0]);
        for n in &self.withdrawn {
            n.encode(out);
        }
        let wd_len = (out.len() - wd_at - 2) as u16;
        out[wd_at..wd_at + 2].copy_from_slice(&wd_len.to_be_bytes());
        let attr_at = out.len();
        out.extend_from_slice(&[0, 0]);
        if let Some(reach) = &self.mp_reach {
            encode_mp_reach(reach.afi_safi, reach.next_hop, reach.link_local_next_hop, &reach.nlri, out);
        }
        if let Some(unreach) = &self.mp_unreach {
            encode_mp_unreach(unreach.afi_safi, &unreach.withdrawn, out);
        }
        let has_attrs = !self.nlri.is_empty() || self.mp_reach.is_some() || self.attrs != PathAttrs::default();
        if has_attrs {
            // NEXT_HOP whenever the UPDATE carries one (an IPv4 address),
            // even without NLRI, so what was decoded encodes back.
            self.attrs.encode(ctx, true, out);
        }
        let attr_len = (out.len() - attr_at - 2) as u16;
        out[attr_at..attr_at + 2].copy_from_slice(&attr_len.to_be_bytes());
        for n in &self.nlri {
            n.encode(out);
        }
    }
}

fn encode_mp_reach(
    afi_safi: AfiSafi,
    next_hop: IpAddr,
    link_local: Option<std::net::Ipv6Addr>,
    nlri: &[Nlri],
    out: &mut Vec<u8>,
) {
    attribute::encode_attribute_with(flag::OPTIONAL, type_code::MP_REACH_NLRI, out, |out| {
        out.extend_from_slice(&afi_safi.afi.to_be_bytes());
        out.push(afi_safi.safi);
        match (next_hop, link_local) {
            (IpAddr::V4(a), _) => {
                out.push(4);
                out.extend_from_slice(&a.octets());
            }
            (IpAddr::V6(a), None) => {
                out.push(16);
                out.extend_from_slice(&a.octets());
            }
            (IpAddr::V6(a), Some(ll)) => {
                out.push(32);
                out.extend_from_slice(&a.octets());
                out.extend_from_slice(&ll.octets());
            }
        }
        out.push(0);
        for n in nlri {
            n.encode(out);
        }
    });
}

fn encode_mp_unreach(afi_safi: AfiSafi, withdrawn: &[Nlri], out: &mut Vec<u8>) {
    attribute::encode_attribute_with(flag::OPTIONAL, type_code::MP_UNREACH_NLRI, out, |out| {
        out.extend_from_slice(&afi_safi.afi.to_be_bytes());
        out.push(afi_safi.safi);
        for n in withdrawn {
            n.encode(out);
        }
    });
}

/// Fixed bytes of an MP attribute around its NLRI: extended header (4), AFI
/// and SAFI (3), and for MP_REACH the next hop length, next hop and reserved byte.
fn mp_overhead(reach: bool, next_hop: Option<IpAddr>, link_local: bool) -> usize {
    let nh = match next_hop {
        Some(IpAddr::V4(_)) => 4,
        Some(IpAddr::V6(_)) if link_local => 32,
        Some(IpAddr::V6(_)) => 16,
        None => 0,
    };
    4 + 3 + if reach { 2 + nh } else { 0 }
}

/// Splits `routes` into as few UPDATE messages as fit `max_len` (4096, or
/// 65535 with RFC 8654), all sharing `attrs`, appending the framed messages
/// to `out`. Returns how many messages were written.
pub fn pack_announce(
    attrs: &PathAttrs,
    family: Family,
    routes: &[Nlri],
    ctx: &DecodeContext,
    max_len: usize,
    out: &mut Vec<u8>,
) -> usize {
    if routes.is_empty() {
        return 0;
    }
    // EVPN routes are keys in the RIBs; the NLRI carries their non-key
    // fields (labels, ESI, gateway) from the path they are announced with.
    let whole: Vec<Nlri>;
    let routes = match (family, &attrs.evpn) {
        (Family::L2vpnEvpn, Some(data)) => {
            whole = routes
                .iter()
                .map(|n| match n {
                    Nlri::Evpn(r) => Nlri::Evpn(r.with_data(data)),
                    other => *other,
                })
                .collect();
            &whole[..]
        }
        _ => routes,
    };
    let classic = family == Family::Ipv4Unicast && matches!(attrs.next_hop, Some(IpAddr::V4(_)));
    let mut attr_bytes = Vec::with_capacity(64);
    attrs.encode(ctx, classic, &mut attr_bytes);
    let overhead = HEADER_LEN
        + 4
        + attr_bytes.len()
        + if classic { 0 } else { mp_overhead(true, attrs.next_hop, attrs.link_local_next_hop.is_some()) };
    let room = max_len.saturating_sub(overhead);
    let mut count = 0;
    for chunk in chunk_by_size(routes, room) {
        let start = out.len();
        write_header(out, MessageType::Update);
        out.extend_from_slice(&[0, 0]);
        let attr_at = out.len();
        out.extend_from_slice(&[0, 0]);
        if classic {
            out.extend_from_slice(&attr_bytes);
            let attr_len = attr_bytes.len() as u16;
            out[attr_at..attr_at + 2].copy_from_slice(&attr_len.to_be_bytes());
            for n in chunk {
                n.encode(out);
            }
        } else {
            let next_hop = attrs.next_hop.unwrap_or(IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED));
            encode_mp_reach(family.afi_safi(), next_hop, attrs.link_local_next_hop, chunk, out);
            out.extend_from_slice(&attr_bytes);
            let attr_len = (out.len() - attr_at - 2) as u16;
            out[attr_at..attr_at + 2].copy_from_slice(&attr_len.to_be_bytes());
        }
        super::message::finish(out, start);
        count += 1;
    }
    count
}

/// Packs withdrawals of `routes` (one family) into as few UPDATEs as fit.
pub fn pack_withdraw(family: Family, routes: &[Nlri], max_len: usize, out: &mut Vec<u8>) -> usize {
    let classic = family == Family::Ipv4Unicast;
    let overhead = HEADER_LEN + 4 + if classic { 0 } else { mp_overhead(false, None, false) };
    let mut count = 0;
    for chunk in chunk_by_size(routes, max_len.saturating_sub(overhead)) {
        let start = out.len();
        write_header(out, MessageType::Update);
        if classic {
            let len: usize = chunk.iter().map(Nlri::encoded_len).sum();
            out.extend_from_slice(&(len as u16).to_be_bytes());
            for n in chunk {
                n.encode(out);
            }
            out.extend_from_slice(&[0, 0]);
        } else {
            out.extend_from_slice(&[0, 0]);
            let attr_at = out.len();
            out.extend_from_slice(&[0, 0]);
            encode_mp_unreach(family.afi_safi(), chunk, out);
            let attr_len = (out.len() - attr_at - 2) as u16;
            out[attr_at..attr_at + 2].copy_from_slice(&attr_len.to_be_bytes());
        }
        super::message::finish(out, start);
        count += 1;
    }
    count
}

/// RFC 4724 §2 End-of-RIB marker for `family`.
pub fn encode_end_of_rib(family: Family, out: &mut Vec<u8>) {
    let update = match family {
        Family::Ipv4Unicast => Update::default(),
        _ => Update {
            mp_unreach: Some(MpUnreach { afi_safi: family.afi_safi(), withdrawn: Vec::new() }),
            ..Default::default()
        },
    };
    super::message::Message::Update(update).encode(&DecodeContext::default(), out);
}

/// Greedy split of `routes` into runs whose encoded size fits `room` bytes.
fn chunk_by_size(routes: &[Nlri], room: usize) -> impl Iterator<Item = &[Nlri]> {
    let room = room.max(17);
    let mut rest = routes;
    core::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut used = 0;
        let mut n = 0;
        for r in rest {
            let len = r.encoded_len();
            if used + len > room {
                break;
            }
            used += len;
            n += 1;
        }
        let n = n.max(1);
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        Some(chunk)
    })
}
