//! Path attributes (RFC 4271 §4.3, §5) and their error handling (RFC 7606).

use core::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::DecodeContext;
use super::error::{AttributeError, DecodeError, ErrorAction, update_subcode};
use super::evpn::{EvpnPathData, PmsiTunnel};
use super::nlri::{AfiSafi, Family, Nlri};

pub mod flag {
    pub const OPTIONAL: u8 = 0x80;
    pub const TRANSITIVE: u8 = 0x40;
    pub const PARTIAL: u8 = 0x20;
    pub const EXTENDED_LENGTH: u8 = 0x10;
}

pub mod type_code {
    pub const ORIGIN: u8 = 1;
    pub const AS_PATH: u8 = 2;
    pub const NEXT_HOP: u8 = 3;
    pub const MULTI_EXIT_DISC: u8 = 4;
    pub const LOCAL_PREF: u8 = 5;
    pub const ATOMIC_AGGREGATE: u8 = 6;
    pub const AGGREGATOR: u8 = 7;
    pub const COMMUNITIES: u8 = 8;
    pub const ORIGINATOR_ID: u8 = 9;
    pub const CLUSTER_LIST: u8 = 10;
    pub const MP_REACH_NLRI: u8 = 14;
    pub const MP_UNREACH_NLRI: u8 = 15;
    pub const EXTENDED_COMMUNITIES: u8 = 16;
    pub const AS4_PATH: u8 = 17;
    pub const AS4_AGGREGATOR: u8 = 18;
    /// RFC 6514 §5 (EVPN type 3 routes, RFC 7432 §11.2).
    pub const PMSI_TUNNEL: u8 = super::super::evpn::PMSI_TUNNEL_TYPE_CODE;
    pub const LARGE_COMMUNITIES: u8 = 32;
}

/// The Optional and Transitive flags each recognised attribute must carry.
fn expected_flags(code: u8) -> Option<u8> {
    use flag::*;
    use type_code::*;
    Some(match code {
        ORIGIN | AS_PATH | NEXT_HOP | LOCAL_PREF | ATOMIC_AGGREGATE => TRANSITIVE,
        MULTI_EXIT_DISC | ORIGINATOR_ID | CLUSTER_LIST | MP_REACH_NLRI | MP_UNREACH_NLRI => OPTIONAL,
        AGGREGATOR | COMMUNITIES | EXTENDED_COMMUNITIES | AS4_PATH | AS4_AGGREGATOR | PMSI_TUNNEL
        | LARGE_COMMUNITIES => OPTIONAL | TRANSITIVE,
        _ => return None,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Origin {
    #[default]
    Igp = 0,
    Egp = 1,
    Incomplete = 2,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Igp => "IGP",
            Origin::Egp => "EGP",
            Origin::Incomplete => "incomplete",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SegmentKind {
    Set = 1,
    Sequence = 2,
    ConfedSequence = 3,
    ConfedSet = 4,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AsSegment {
    pub kind: SegmentKind,
    pub asns: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct AsPath {
    pub segments: Vec<AsSegment>,
}

impl AsPath {
    pub fn from_sequence(asns: impl IntoIterator<Item = u32>) -> AsPath {
        let asns: Vec<u32> = asns.into_iter().collect();
        if asns.is_empty() {
            return AsPath::default();
        }
        AsPath { segments: vec![AsSegment { kind: SegmentKind::Sequence, asns }] }
    }

    /// Path length for the decision process (RFC 4271 §9.1.2.2 a: a set counts
    /// as one; RFC 5065 §5.3: confederation segments do not count).
    pub fn path_len(&self) -> usize {
        self.segments
            .iter()
            .map(|s| match s.kind {
                SegmentKind::Sequence => s.asns.len(),
                SegmentKind::Set => 1,
                _ => 0,
            })
            .sum()
    }

    /// Number of AS numbers, as RFC 6793 §4.2.3 counts them when merging AS4_PATH.
    fn as4_count(&self) -> usize {
        self.segments
            .iter()
            .map(|s| match s.kind {
                SegmentKind::Sequence => s.asns.len(),
                SegmentKind::Set => 1,
                _ => 0,
            })
            .sum()
    }

    /// The AS a route was learned from: the first AS of a leading AS_SEQUENCE
    /// (RFC 4271 §9.1.2.2 c compares MED only between routes sharing it).
    pub fn neighbor_as(&self) -> Option<u32> {
        match self.segments.first() {
            Some(AsSegment { kind: SegmentKind::Sequence, asns }) => asns.first().copied(),
            _ => None,
        }
    }

    /// The AS that originated the route: the last AS of the path.
    pub fn origin_as(&self) -> Option<u32> {
        self.segments.last().and_then(|s| s.asns.last().copied())
    }

    pub fn contains(&self, asn: u32) -> bool {
        self.segments.iter().any(|s| s.asns.contains(&asn))
    }

    /// RFC 4271 §5.1.2 b: prepend our AS when advertising to an external peer.
    pub fn prepend(&mut self, asn: u32) {
        match self.segments.first_mut() {
            Some(seg) if seg.kind == SegmentKind::Sequence && seg.asns.len() < 255 => seg.asns.insert(0, asn),
            _ => self.segments.insert(0, AsSegment { kind: SegmentKind::Sequence, asns: vec![asn] }),
        }
    }

    fn decode(mut buf: &[u8], four_octet: bool) -> Option<AsPath> {
        let width = if four_octet { 4 } else { 2 };
        let mut segments = Vec::new();
        while !buf.is_empty() {
            let [kind, count, ..] = *buf else { return None };
            let kind = match kind {
                1 => SegmentKind::Set,
                2 => SegmentKind::Sequence,
                3 => SegmentKind::ConfedSequence,
                4 => SegmentKind::ConfedSet,
                _ => return None,
            };
            // RFC 7606 §7.2: a segment of zero length is malformed.
            if count == 0 {
                return None;
            }
            let bytes = buf.get(2..2 + count as usize * width)?;
            let asns = bytes
                .chunks_exact(width)
                .map(|c| {
                    if four_octet {
                        u32::from_be_bytes([c[0], c[1], c[2], c[3]])
                    } else {
                        u16::from_be_bytes([c[0], c[1]]) as u32
                    }
                })
                .collect();
            segments.push(AsSegment { kind, asns });
            buf = &buf[2 + count as usize * width..];
        }
        Some(AsPath { segments })
    }

    fn encode(&self, four_octet: bool, out: &mut Vec<u8>) {
        for seg in &self.segments {
            // A segment holds at most 255 AS numbers; longer ones are split.
            for chunk in seg.asns.chunks(255) {
                out.push(seg.kind as u8);
                out.push(chunk.len() as u8);
                for &asn in chunk {
                    if four_octet {
                        out.extend_from_slice(&asn.to_be_bytes());
                    } else {
                        let asn = u16::try_from(asn).unwrap_or(super::open::AS_TRANS);
                        out.extend_from_slice(&asn.to_be_bytes());
                    }
                }
            }
        }
    }

    fn needs_as4(&self) -> bool {
        self.segments.iter().any(|s| s.asns.iter().any(|&a| a > u16::MAX as u32))
    }

    /// RFC 6793 §4.2.3: rebuild the true path from a 2-octet AS_PATH and AS4_PATH.
    fn merge_as4(self, as4: AsPath) -> AsPath {
        let (n, n4) = (self.as4_count(), as4.as4_count());
        if n < n4 {
            // "the AS4_PATH attribute MUST be ignored".
            return self;
        }
        let mut keep = n - n4;
        let mut segments = Vec::new();
        for seg in self.segments {
            if keep == 0 {
                break;
            }
            match seg.kind {
                SegmentKind::Sequence if seg.asns.len() > keep => {
                    segments.push(AsSegment { kind: seg.kind, asns: seg.asns[..keep].to_vec() });
                    keep = 0;
                }
                SegmentKind::Sequence => {
                    keep -= seg.asns.len();
                    segments.push(seg);
                }
                SegmentKind::Set => {
                    keep -= 1;
                    segments.push(seg);
                }
                _ => segments.push(seg),
            }
        }
        segments.extend(as4.segments);
        AsPath { segments }
    }
}

impl fmt::Display for AsPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for seg in &self.segments {
            if !first {
                f.write_str(" ")?;
            }
            first = false;
            let asns: Vec<String> = seg.asns.iter().map(u32::to_string).collect();
            match seg.kind {
                SegmentKind::Sequence => write!(f, "{}", asns.join(" "))?,
                SegmentKind::Set => write!(f, "{{{}}}", asns.join(","))?,
                SegmentKind::ConfedSequence => write!(f, "({})", asns.join(" "))?,
                SegmentKind::ConfedSet => write!(f, "[{}]", asns.join(","))?,
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LargeCommunity {
    pub global_admin: u32,
    pub local_1: u32,
    pub local_2: u32,
}

/// An attribute this speaker does not interpret, passed on if transitive.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RawAttribute {
    pub flags: u8,
    pub type_code: u8,
    pub value: Vec<u8>,
}

/// The attributes a route carries. Shared (interned) between routes in the RIBs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct PathAttrs {
    pub origin: Origin,
    pub as_path: AsPath,
    /// NEXT_HOP, or for multiprotocol routes the MP_REACH_NLRI next hop.
    pub next_hop: Option<IpAddr>,
    /// The link-local half of a 32-byte IPv6 next hop (RFC 2545 §3).
    pub link_local_next_hop: Option<Ipv6Addr>,
    pub med: Option<u32>,
    pub local_pref: Option<u32>,
    pub atomic_aggregate: bool,
    pub aggregator: Option<(u32, Ipv4Addr)>,
    pub communities: Vec<u32>,
    pub originator_id: Option<Ipv4Addr>,
    pub cluster_list: Vec<Ipv4Addr>,
    pub ext_communities: Vec<u64>,
    pub large_communities: Vec<LargeCommunity>,
    /// PMSI_TUNNEL (RFC 6514 §5): where an EVPN type 3 route's BUM traffic goes.
    pub pmsi_tunnel: Option<PmsiTunnel>,
    /// Not an attribute on the wire: the fields of an EVPN NLRI outside its
    /// key (labels, ESI, gateway), kept with the path (see
    /// [`EvpnPathData`]). Routes of one VNI share them, so they still share
    /// one interned attribute set.
    pub evpn: Option<EvpnPathData>,
    pub unknown: Vec<RawAttribute>,
}

/// MP_REACH_NLRI (RFC 4760 §3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpReach {
    pub afi_safi: AfiSafi,
    pub next_hop: IpAddr,
    pub link_local_next_hop: Option<Ipv6Addr>,
    pub nlri: Vec<Nlri>,
}

/// MP_UNREACH_NLRI (RFC 4760 §4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpUnreach {
    pub afi_safi: AfiSafi,
    pub withdrawn: Vec<Nlri>,
}

/// Everything read from the Path Attributes field of one UPDATE.
#[derive(Debug, Clone, Default)]
pub struct DecodedAttrs {
    pub attrs: PathAttrs,
    pub mp_reach: Option<MpReach>,
    pub mp_unreach: Option<MpUnreach>,
    pub errors: Vec<AttributeError>,
    pub has_origin: bool,
    pub has_as_path: bool,
    pub has_next_hop: bool,
}

impl DecodedAttrs {
    fn error(&mut self, type_code: u8, action: ErrorAction, subcode: u8, reason: &'static str) {
        self.errors.push(AttributeError { type_code, action, subcode, reason });
    }
}

/// Decodes the Path Attributes field, classifying each error as RFC 7606 says.
/// Only errors that must reset the session are returned as `Err`.
pub fn decode_attributes(mut buf: &[u8], ctx: &DecodeContext) -> Result<DecodedAttrs, DecodeError> {
    use type_code::*;
    let mut out = DecodedAttrs::default();
    let mut seen = [false; 256];
    let mut as4_path = None;
    let mut as4_aggregator = None;
    while !buf.is_empty() {
        // RFC 7606 §4: fewer bytes than a minimal attribute header, or an
        // attribute overrunning the field: "treat-as-withdraw" MUST be used,
        // relying on Total Path Attribute Length to locate the NLRI.
        let header_len = if buf[0] & flag::EXTENDED_LENGTH != 0 { 4 } else { 3 };
        if buf.len() < header_len {
            out.error(
                0,
                ErrorAction::TreatAsWithdraw,
                update_subcode::MALFORMED_ATTRIBUTE_LIST,
                "truncated attribute header",
            );
            break;
        }
        let (flags, code) = (buf[0], buf[1]);
        let len = if header_len == 4 { u16::from_be_bytes([buf[2], buf[3]]) as usize } else { buf[2] as usize };
        let Some(value) = buf.get(header_len..header_len + len) else {
            out.error(
                code,
                ErrorAction::TreatAsWithdraw,
                update_subcode::ATTRIBUTE_LENGTH,
                "attribute overruns the field",
            );
            break;
        };
        let raw = &buf[..header_len + len];
        buf = &buf[header_len + len..];

        // RFC 7606 §3 g: a repeated MP_REACH_NLRI/MP_UNREACH_NLRI resets the
        // session; any other repeated attribute: "all the occurrences of the
        // attribute other than the first one SHALL be discarded".
        if seen[code as usize] {
            if code == MP_REACH_NLRI || code == MP_UNREACH_NLRI {
                return Err(DecodeError::update(
                    update_subcode::MALFORMED_ATTRIBUTE_LIST,
                    Vec::new(),
                    "repeated MP attribute",
                ));
            }
            continue;
        }
        seen[code as usize] = true;

        let Some(expected) = expected_flags(code) else {
            // RFC 4271 §6.3: an unrecognized well-known attribute resets the session.
            if flags & flag::OPTIONAL == 0 {
                return Err(DecodeError::update(
                    update_subcode::UNRECOGNIZED_WELL_KNOWN,
                    raw.to_vec(),
                    "unrecognized well-known attribute",
                ));
            }
            // §5: unrecognized optional non-transitive attributes are quietly
            // ignored; optional transitive ones are passed on with Partial set.
            if flags & flag::TRANSITIVE != 0 {
                // The length encoding is chosen again when it is sent on.
                out.attrs.unknown.push(RawAttribute {
                    flags: (flags | flag::PARTIAL) & !flag::EXTENDED_LENGTH,
                    type_code: code,
                    value: value.to_vec(),
                });
            }
            continue;
        };
        // RFC 7606 §3 c: Optional/Transitive bits in conflict with the
        // attribute's definition: the attribute is malformed, "treat-as-withdraw".
        if flags & (flag::OPTIONAL | flag::TRANSITIVE) != expected {
            if code == MP_REACH_NLRI || code == MP_UNREACH_NLRI {
                // The routes to withdraw are inside the attribute itself; read them anyway.
                decode_mp(code, value, &mut out)?;
            }
            out.error(code, ErrorAction::TreatAsWithdraw, update_subcode::ATTRIBUTE_FLAGS, "attribute flags conflict");
            continue;
        }
        let errors_before = out.errors.len();
        let attrs = &mut out.attrs;
        match code {
            // RFC 7606 §7.1: wrong length or undefined value: "treat-as-withdraw".
            ORIGIN => match value {
                [0] => attrs.origin = Origin::Igp,
                [1] => attrs.origin = Origin::Egp,
                [2] => attrs.origin = Origin::Incomplete,
                _ => out.error(code, ErrorAction::TreatAsWithdraw, update_subcode::INVALID_ORIGIN, "bad ORIGIN"),
            },
            // RFC 7606 §7.2: a malformed AS_PATH: "treat-as-withdraw". This
            // speaker is in no confederation, so every peer is outside ours,
            // and RFC 5065 §5 makes confederation segments from such a peer
            // an error (§7.2 again: malformed).
            AS_PATH => match AsPath::decode(value, ctx.four_octet_as) {
                Some(path)
                    if path
                        .segments
                        .iter()
                        .any(|s| matches!(s.kind, SegmentKind::ConfedSequence | SegmentKind::ConfedSet)) =>
                {
                    out.error(
                        code,
                        ErrorAction::TreatAsWithdraw,
                        update_subcode::MALFORMED_AS_PATH,
                        "AS_CONFED segment from a peer outside our confederation",
                    )
                }
                Some(path) => attrs.as_path = path,
                None => out.error(
                    code,
                    ErrorAction::TreatAsWithdraw,
                    update_subcode::MALFORMED_AS_PATH,
                    "malformed AS_PATH",
                ),
            },
            // RFC 7606 §7.3: length other than 4: "treat-as-withdraw".
            NEXT_HOP => match value {
                [a, b, c, d] => attrs.next_hop = Some(IpAddr::V4(Ipv4Addr::new(*a, *b, *c, *d))),
                _ => out.error(
                    code,
                    ErrorAction::TreatAsWithdraw,
                    update_subcode::ATTRIBUTE_LENGTH,
                    "bad NEXT_HOP length",
                ),
            },
            // RFC 7606 §7.4: length other than 4: "treat-as-withdraw".
            MULTI_EXIT_DISC => match u32_value(value) {
                Some(v) => attrs.med = Some(v),
                None => {
                    out.error(code, ErrorAction::TreatAsWithdraw, update_subcode::ATTRIBUTE_LENGTH, "bad MED length")
                }
            },
            LOCAL_PREF => {
                if ctx.ebgp {
                    // RFC 7606 §7.5: from an external neighbor "it SHALL be
                    // discarded using the approach of 'attribute discard'".
                    out.error(
                        code,
                        ErrorAction::AttributeDiscard,
                        update_subcode::OPTIONAL_ATTRIBUTE,
                        "LOCAL_PREF from eBGP",
                    );
                } else {
                    // §7.5: from an internal neighbor, length other than 4: "treat-as-withdraw".
                    match u32_value(value) {
                        Some(v) => attrs.local_pref = Some(v),
                        None => out.error(
                            code,
                            ErrorAction::TreatAsWithdraw,
                            update_subcode::ATTRIBUTE_LENGTH,
                            "bad LOCAL_PREF length",
                        ),
                    }
                }
            }
            // RFC 7606 §7.6: length other than 0: "attribute discard".
            ATOMIC_AGGREGATE => {
                if value.is_empty() {
                    attrs.atomic_aggregate = true;
                } else {
                    out.error(
                        code,
                        ErrorAction::AttributeDiscard,
                        update_subcode::ATTRIBUTE_LENGTH,
                        "bad ATOMIC_AGGREGATE length",
                    );
                }
            }
            // RFC 7606 §7.7: length other than 6 (8 with 4-octet AS): "attribute discard".
            AGGREGATOR => match aggregator_value(value, ctx.four_octet_as) {
                Some(agg) => attrs.aggregator = Some(agg),
                None => out.error(
                    code,
                    ErrorAction::AttributeDiscard,
                    update_subcode::ATTRIBUTE_LENGTH,
                    "bad AGGREGATOR length",
                ),
            },
            // RFC 7606 §7.8: length not a non-zero multiple of 4: "treat-as-withdraw".
            COMMUNITIES => {
                if value.is_empty() || value.len() % 4 != 0 {
                    out.error(
                        code,
                        ErrorAction::TreatAsWithdraw,
                        update_subcode::OPTIONAL_ATTRIBUTE,
                        "bad COMMUNITIES length",
                    );
                } else {
                    attrs.communities =
                        value.chunks_exact(4).map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]])).collect();
                }
            }
            // RFC 7606 §7.9: from an external peer "attribute discard",
            // whatever its content; otherwise length other than 4: "treat-as-withdraw".
            ORIGINATOR_ID if ctx.ebgp => out.error(
                code,
                ErrorAction::AttributeDiscard,
                update_subcode::OPTIONAL_ATTRIBUTE,
                "ORIGINATOR_ID from eBGP",
            ),
            ORIGINATOR_ID => match u32_value(value) {
                Some(v) => attrs.originator_id = Some(Ipv4Addr::from(v)),
                None => out.error(
                    code,
                    ErrorAction::TreatAsWithdraw,
                    update_subcode::ATTRIBUTE_LENGTH,
                    "bad ORIGINATOR_ID length",
                ),
            },
            // RFC 7606 §7.10: from an external peer "attribute discard";
            // otherwise length not a non-zero multiple of 4: "treat-as-withdraw".
            CLUSTER_LIST if ctx.ebgp => out.error(
                code,
                ErrorAction::AttributeDiscard,
                update_subcode::OPTIONAL_ATTRIBUTE,
                "CLUSTER_LIST from eBGP",
            ),
            CLUSTER_LIST => {
                if value.is_empty() || value.len() % 4 != 0 {
                    out.error(
                        code,
                        ErrorAction::TreatAsWithdraw,
                        update_subcode::ATTRIBUTE_LENGTH,
                        "bad CLUSTER_LIST length",
                    );
                } else {
                    attrs.cluster_list = value.chunks_exact(4).map(|c| Ipv4Addr::new(c[0], c[1], c[2], c[3])).collect();
                }
            }
            MP_REACH_NLRI | MP_UNREACH_NLRI => decode_mp(code, value, &mut out)?,
            // RFC 7606 has no section for PMSI_TUNNEL; by its §2 rule an
            // attribute that decides where traffic goes cannot be discarded
            // without changing forwarding: a malformed one is "treat-as-withdraw".
            PMSI_TUNNEL => match PmsiTunnel::decode(value) {
                Ok(tunnel) => attrs.pmsi_tunnel = Some(tunnel),
                Err(_) => out.error(
                    code,
                    ErrorAction::TreatAsWithdraw,
                    update_subcode::OPTIONAL_ATTRIBUTE,
                    "malformed PMSI_TUNNEL",
                ),
            },
            // RFC 7606 §7.14: length not a non-zero multiple of 8: "treat-as-withdraw".
            EXTENDED_COMMUNITIES => {
                if value.is_empty() || value.len() % 8 != 0 {
                    out.error(
                        code,
                        ErrorAction::TreatAsWithdraw,
                        update_subcode::OPTIONAL_ATTRIBUTE,
                        "bad EXTENDED_COMMUNITIES length",
                    );
                } else {
                    attrs.ext_communities =
                        value.chunks_exact(8).map(|c| u64::from_be_bytes(c.try_into().unwrap_or_default())).collect();
                }
            }
            // RFC 8092 §6: length not a non-zero multiple of 12: "treat-as-withdraw".
            LARGE_COMMUNITIES => {
                if value.is_empty() || value.len() % 12 != 0 {
                    out.error(
                        code,
                        ErrorAction::TreatAsWithdraw,
                        update_subcode::OPTIONAL_ATTRIBUTE,
                        "bad LARGE_COMMUNITIES length",
                    );
                } else {
                    attrs.large_communities = value
                        .chunks_exact(12)
                        .map(|c| LargeCommunity {
                            global_admin: u32::from_be_bytes([c[0], c[1], c[2], c[3]]),
                            local_1: u32::from_be_bytes([c[4], c[5], c[6], c[7]]),
                            local_2: u32::from_be_bytes([c[8], c[9], c[10], c[11]]),
                        })
                        .collect();
                }
            }
            // RFC 6793 §6: a malformed AS4_PATH/AS4_AGGREGATOR "MUST be
            // discarded"; from a 4-octet speaker they are ignored (§4.2.2).
            AS4_PATH => match AsPath::decode(value, true) {
                Some(path) if !ctx.four_octet_as => as4_path = Some(path),
                Some(_) => {}
                None => out.error(
                    code,
                    ErrorAction::AttributeDiscard,
                    update_subcode::OPTIONAL_ATTRIBUTE,
                    "malformed AS4_PATH",
                ),
            },
            AS4_AGGREGATOR => match aggregator_value(value, true) {
                Some(agg) if !ctx.four_octet_as => as4_aggregator = Some(agg),
                Some(_) => {}
                None => out.error(
                    code,
                    ErrorAction::AttributeDiscard,
                    update_subcode::OPTIONAL_ATTRIBUTE,
                    "malformed AS4_AGGREGATOR",
                ),
            },
            _ => {}
        }
        let ok = out.errors.len() == errors_before;
        match code {
            ORIGIN => out.has_origin = ok,
            AS_PATH => out.has_as_path = ok,
            NEXT_HOP => out.has_next_hop = ok,
            _ => {}
        }
    }
    // RFC 6793 §4.2.3: AS4_AGGREGATOR replaces AGGREGATOR only when the latter
    // carries AS_TRANS; otherwise both AS4 attributes are ignored.
    let as_trans = super::open::AS_TRANS as u32;
    match (out.attrs.aggregator, as4_aggregator) {
        (Some((asn, _)), Some(agg4)) if asn == as_trans => {
            out.attrs.aggregator = Some(agg4);
            if let Some(path) = as4_path.take() {
                out.attrs.as_path = core::mem::take(&mut out.attrs.as_path).merge_as4(path);
            }
        }
        (Some(_), Some(_)) => {}
        _ => {
            if let Some(path) = as4_path.take() {
                out.attrs.as_path = core::mem::take(&mut out.attrs.as_path).merge_as4(path);
            }
        }
    }
    Ok(out)
}

fn u32_value(value: &[u8]) -> Option<u32> {
    <[u8; 4]>::try_from(value).ok().map(u32::from_be_bytes)
}

fn aggregator_value(value: &[u8], four_octet: bool) -> Option<(u32, Ipv4Addr)> {
    match (four_octet, value) {
        (true, [a, b, c, d, e, f, g, h]) => Some((u32::from_be_bytes([*a, *b, *c, *d]), Ipv4Addr::new(*e, *f, *g, *h))),
        (false, [a, b, e, f, g, h]) => Some((u16::from_be_bytes([*a, *b]) as u32, Ipv4Addr::new(*e, *f, *g, *h))),
        _ => None,
    }
}

/// MP_REACH_NLRI / MP_UNREACH_NLRI. RFC 7606 §7.11 and §7.12 (with RFC 4760
/// §7): a malformed one whose AFI/SAFI can be read disables that AFI/SAFI;
/// one too short to name its AFI/SAFI can only reset the session.
fn decode_mp(code: u8, value: &[u8], out: &mut DecodedAttrs) -> Result<(), DecodeError> {
    let reach = code == type_code::MP_REACH_NLRI;
    let Some(&[a0, a1, safi]) = value.get(..3).and_then(|v| <&[u8; 3]>::try_from(v).ok()) else {
        return Err(DecodeError::update(update_subcode::OPTIONAL_ATTRIBUTE, Vec::new(), "MP attribute too short"));
    };
    let afi_safi = AfiSafi { afi: u16::from_be_bytes([a0, a1]), safi };
    let disable = ErrorAction::AfiSafiDisable(afi_safi);
    let Some(family) = afi_safi.family() else {
        // A family we did not negotiate and do not know: nothing to do with it.
        return Ok(());
    };
    let mut nlri = Vec::new();
    if reach {
        let Some(&nh_len) = value.get(3) else {
            {
                out.error(code, disable, update_subcode::OPTIONAL_ATTRIBUTE, "MP_REACH_NLRI truncated");
                return Ok(());
            }
        };
        let nh_len = nh_len as usize;
        let (Some(nh), Some(_reserved)) = (value.get(4..4 + nh_len), value.get(4 + nh_len)) else {
            {
                out.error(code, disable, update_subcode::OPTIONAL_ATTRIBUTE, "MP_REACH_NLRI truncated");
                return Ok(());
            }
        };
        let (next_hop, link_local) = match nh.len() {
            // RFC 7432 §7 / RFC 8365 §5.1.3: an EVPN next hop is one VTEP
            // address, IPv4 or IPv6; a link-local second half means nothing.
            32 if family == Family::L2vpnEvpn => {
                out.error(code, disable, update_subcode::OPTIONAL_ATTRIBUTE, "bad EVPN next hop length");
                return Ok(());
            }
            4 => (IpAddr::V4(Ipv4Addr::new(nh[0], nh[1], nh[2], nh[3])), None),
            16 => (IpAddr::V6(ipv6(&nh[..16])), None),
            32 => (IpAddr::V6(ipv6(&nh[..16])), Some(ipv6(&nh[16..]))),
            // RFC 7606 §7.11: a next hop length inconsistent with the AFI/SAFI.
            _ => {
                out.error(code, disable, update_subcode::OPTIONAL_ATTRIBUTE, "bad MP next hop length");
                return Ok(());
            }
        };
        if Nlri::decode_all(family, &value[5 + nh_len..], &mut nlri).is_err() {
            {
                out.error(code, disable, update_subcode::OPTIONAL_ATTRIBUTE, "bad MP_REACH_NLRI prefix");
                return Ok(());
            }
        }
        out.mp_reach = Some(MpReach { afi_safi, next_hop, link_local_next_hop: link_local, nlri });
    } else {
        if Nlri::decode_all(family, &value[3..], &mut nlri).is_err() {
            {
                out.error(code, disable, update_subcode::OPTIONAL_ATTRIBUTE, "bad MP_UNREACH_NLRI prefix");
                return Ok(());
            }
        }
        out.mp_unreach = Some(MpUnreach { afi_safi, withdrawn: nlri });
    }
    Ok(())
}

fn ipv6(b: &[u8]) -> Ipv6Addr {
    let mut o = [0u8; 16];
    o.copy_from_slice(&b[..16]);
    Ipv6Addr::from(o)
}

/// Appends one attribute with the right length encoding.
pub fn encode_attribute(flags: u8, code: u8, value: &[u8], out: &mut Vec<u8>) {
    if value.len() > 255 {
        out.extend_from_slice(&[flags | flag::EXTENDED_LENGTH, code]);
        out.extend_from_slice(&(value.len() as u16).to_be_bytes());
    } else {
        out.extend_from_slice(&[flags & !flag::EXTENDED_LENGTH, code, value.len() as u8]);
    }
    out.extend_from_slice(value);
}

/// Writes an attribute whose value is produced by `f`, patching the length
/// afterwards; always uses the extended length form when the value may exceed 255.
pub fn encode_attribute_with(flags: u8, code: u8, out: &mut Vec<u8>, f: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&[flags | flag::EXTENDED_LENGTH, code, 0, 0]);
    f(out);
    let len = out.len() - start - 4;
    if len <= 255 {
        // Compact to the one-byte length form.
        out[start] = flags & !flag::EXTENDED_LENGTH;
        out[start + 2] = len as u8;
        out.remove(start + 3);
    } else {
        out[start + 2..start + 4].copy_from_slice(&(len as u16).to_be_bytes());
    }
}

impl PathAttrs {
    /// Encodes every attribute but the MP ones, in type-code order; NEXT_HOP
    /// only when `with_next_hop` (routes in the IPv4 NLRI field).
    pub fn encode(&self, ctx: &DecodeContext, with_next_hop: bool, out: &mut Vec<u8>) {
        use flag::*;
        use type_code::*;
        encode_attribute(TRANSITIVE, ORIGIN, &[self.origin as u8], out);
        let mut path = Vec::with_capacity(2 + 4 * self.as_path.path_len());
        self.as_path.encode(ctx.four_octet_as, &mut path);
        encode_attribute(TRANSITIVE, AS_PATH, &path, out);
        if let (true, Some(IpAddr::V4(nh))) = (with_next_hop, self.next_hop) {
            encode_attribute(TRANSITIVE, NEXT_HOP, &nh.octets(), out);
        }
        if let Some(med) = self.med {
            encode_attribute(OPTIONAL, MULTI_EXIT_DISC, &med.to_be_bytes(), out);
        }
        if let Some(lp) = self.local_pref.filter(|_| !ctx.ebgp) {
            encode_attribute(TRANSITIVE, LOCAL_PREF, &lp.to_be_bytes(), out);
        }
        if self.atomic_aggregate {
            encode_attribute(TRANSITIVE, ATOMIC_AGGREGATE, &[], out);
        }
        if let Some((asn, addr)) = self.aggregator {
            let mut v = Vec::with_capacity(8);
            if ctx.four_octet_as {
                v.extend_from_slice(&asn.to_be_bytes());
            } else {
                v.extend_from_slice(&u16::try_from(asn).unwrap_or(super::open::AS_TRANS).to_be_bytes());
            }
            v.extend_from_slice(&addr.octets());
            encode_attribute(OPTIONAL | TRANSITIVE, AGGREGATOR, &v, out);
        }
        if !self.communities.is_empty() {
            let v: Vec<u8> = self.communities.iter().flat_map(|c| c.to_be_bytes()).collect();
            encode_attribute(OPTIONAL | TRANSITIVE, COMMUNITIES, &v, out);
        }
        if let Some(id) = self.originator_id {
            encode_attribute(OPTIONAL, ORIGINATOR_ID, &id.octets(), out);
        }
        if !self.cluster_list.is_empty() {
            let v: Vec<u8> = self.cluster_list.iter().flat_map(|c| c.octets()).collect();
            encode_attribute(OPTIONAL, CLUSTER_LIST, &v, out);
        }
        if !self.ext_communities.is_empty() {
            let v: Vec<u8> = self.ext_communities.iter().flat_map(|c| c.to_be_bytes()).collect();
            encode_attribute(OPTIONAL | TRANSITIVE, EXTENDED_COMMUNITIES, &v, out);
        }
        // RFC 6793 §4.2.2: towards a 2-octet speaker, carry the true path in AS4_PATH.
        if !ctx.four_octet_as && self.as_path.needs_as4() {
            let mut v = Vec::new();
            self.as_path.encode(true, &mut v);
            encode_attribute(OPTIONAL | TRANSITIVE, AS4_PATH, &v, out);
        }
        if let Some(tunnel) = &self.pmsi_tunnel {
            let mut v = Vec::with_capacity(21);
            tunnel.encode(&mut v);
            encode_attribute(OPTIONAL | TRANSITIVE, PMSI_TUNNEL, &v, out);
        }
        if !self.large_communities.is_empty() {
            let v: Vec<u8> = self
                .large_communities
                .iter()
                .flat_map(|c| [c.global_admin, c.local_1, c.local_2])
                .flat_map(u32::to_be_bytes)
                .collect();
            encode_attribute(OPTIONAL | TRANSITIVE, LARGE_COMMUNITIES, &v, out);
        }
        for raw in &self.unknown {
            encode_attribute(raw.flags, raw.type_code, &raw.value, out);
        }
    }
}
