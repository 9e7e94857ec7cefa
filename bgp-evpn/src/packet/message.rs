//! Message header and framing (RFC 4271 §4.1), KEEPALIVE (§4.4) and
//! ROUTE-REFRESH (RFC 2918 §3).

use super::DecodeContext;
use super::error::{DecodeError, ErrorCode, header_subcode};
use super::nlri::AfiSafi;
use super::notification::Notification;
use super::open::Open;
use super::update::Update;

pub const HEADER_LEN: usize = 19;
/// RFC 4271 §4.1.
pub const MAX_LEN: usize = 4096;
/// RFC 8654 §4: with the Extended Message capability on both sides.
pub const EXTENDED_MAX_LEN: usize = 65535;
const MARKER: [u8; 16] = [0xff; 16];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum MessageType {
    Open = 1,
    Update = 2,
    Notification = 3,
    Keepalive = 4,
    RouteRefresh = 5,
}

impl MessageType {
    fn from_u8(v: u8) -> Option<MessageType> {
        Some(match v {
            1 => MessageType::Open,
            2 => MessageType::Update,
            3 => MessageType::Notification,
            4 => MessageType::Keepalive,
            5 => MessageType::RouteRefresh,
            _ => return None,
        })
    }

    /// Minimum message length per type (RFC 4271 §6.1, RFC 2918 §3).
    fn min_len(self) -> usize {
        match self {
            MessageType::Open => 29,
            MessageType::Update => 23,
            MessageType::Notification => 21,
            MessageType::Keepalive => 19,
            MessageType::RouteRefresh => 23,
        }
    }
}

/// ROUTE-REFRESH (RFC 2918 §3); the subtype byte is RFC 7313's (0 = normal request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteRefresh {
    pub afi_safi: AfiSafi,
    pub subtype: u8,
}

// Messages live briefly between the socket and the FSM; boxing the UPDATE
// would cost an allocation per message for no gain.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Open(Open),
    Update(Update),
    Notification(Notification),
    Keepalive,
    RouteRefresh(RouteRefresh),
}

/// Reads a header at the start of `buf`: `Ok(None)` when more bytes are
/// needed, otherwise the full length of the first message. Errors are the
/// §6.1 Message Header Errors.
pub fn frame_len(buf: &[u8], max_len: usize) -> Result<Option<usize>, DecodeError> {
    if buf.len() < HEADER_LEN {
        return Ok(None);
    }
    if buf[..16] != MARKER {
        return Err(DecodeError::header(header_subcode::CONNECTION_NOT_SYNCHRONIZED, Vec::new(), "bad marker"));
    }
    let len = u16::from_be_bytes([buf[16], buf[17]]) as usize;
    let bad_length =
        || DecodeError::header(header_subcode::BAD_MESSAGE_LENGTH, buf[16..18].to_vec(), "bad message length");
    let kind = MessageType::from_u8(buf[18])
        .ok_or_else(|| DecodeError::header(header_subcode::BAD_MESSAGE_TYPE, vec![buf[18]], "bad message type"))?;
    // RFC 8654 §4: OPEN and KEEPALIVE stay within 4096 bytes even when extended.
    let type_max = if matches!(kind, MessageType::Open | MessageType::Keepalive) { MAX_LEN } else { max_len };
    if len < kind.min_len() || len > type_max {
        return Err(bad_length());
    }
    if matches!(kind, MessageType::Keepalive) && len != HEADER_LEN {
        return Err(bad_length());
    }
    Ok((buf.len() >= len).then_some(len))
}

impl Message {
    /// Decodes exactly one message that fills `buf`.
    pub fn decode(buf: &[u8], ctx: &DecodeContext) -> Result<Message, DecodeError> {
        let max_len = if ctx.extended_message { EXTENDED_MAX_LEN } else { MAX_LEN };
        let len = match frame_len(buf, max_len)? {
            Some(len) if len == buf.len() => len,
            _ => {
                let field = buf.get(16..18).map(<[u8]>::to_vec).unwrap_or_default();
                return Err(DecodeError::header(
                    header_subcode::BAD_MESSAGE_LENGTH,
                    field,
                    "length field disagrees with the buffer",
                ));
            }
        };
        let body = &buf[HEADER_LEN..len];
        Ok(match buf[18] {
            1 => Message::Open(Open::decode(body)?),
            2 => Message::Update(Update::decode(body, ctx)?),
            3 => Message::Notification(Notification::decode(body)?),
            4 => Message::Keepalive,
            _ => {
                let [a0, a1, subtype, safi] = *body else {
                    // RFC 7313 §5: "Invalid Message Length" (code 7, subcode 1).
                    return Err(DecodeError::new(ErrorCode::RouteRefresh, 1, buf.to_vec(), "bad ROUTE-REFRESH length"));
                };
                Message::RouteRefresh(RouteRefresh {
                    afi_safi: AfiSafi { afi: u16::from_be_bytes([a0, a1]), safi },
                    subtype,
                })
            }
        })
    }

    pub fn kind(&self) -> MessageType {
        match self {
            Message::Open(_) => MessageType::Open,
            Message::Update(_) => MessageType::Update,
            Message::Notification(_) => MessageType::Notification,
            Message::Keepalive => MessageType::Keepalive,
            Message::RouteRefresh(_) => MessageType::RouteRefresh,
        }
    }

    /// Appends the framed message to `out`.
    pub fn encode(&self, ctx: &DecodeContext, out: &mut Vec<u8>) {
        let start = out.len();
        write_header(out, self.kind());
        match self {
            Message::Open(open) => open.encode_body(out),
            Message::Update(update) => update.encode_body(ctx, out),
            Message::Notification(n) => n.encode_body(out),
            Message::Keepalive => {}
            Message::RouteRefresh(rr) => {
                out.extend_from_slice(&rr.afi_safi.afi.to_be_bytes());
                out.push(rr.subtype);
                out.push(rr.afi_safi.safi);
            }
        }
        finish(out, start);
    }

    pub fn to_bytes(&self, ctx: &DecodeContext) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(ctx, &mut out);
        out
    }
}

pub(crate) fn write_header(out: &mut Vec<u8>, kind: MessageType) {
    out.extend_from_slice(&MARKER);
    out.extend_from_slice(&[0, 0, kind as u8]);
}

/// Patches the length of the message that starts at `start`.
pub(crate) fn finish(out: &mut [u8], start: usize) {
    let len = (out.len() - start).min(u16::MAX as usize) as u16;
    out[start + 16..start + 18].copy_from_slice(&len.to_be_bytes());
}
