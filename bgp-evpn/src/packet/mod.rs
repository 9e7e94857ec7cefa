//! BGP-4 wire format: every message, hand-written decoders that never panic,
//! and encoders that append to a caller's buffer.

pub mod attribute;
pub mod capability;
pub mod error;
pub mod evpn;
pub mod message;
pub mod nlri;
pub mod notification;
pub mod open;
pub mod update;

pub use attribute::{
    AsPath, AsSegment, LargeCommunity, MpReach, MpUnreach, Origin, PathAttrs, RawAttribute, SegmentKind,
};
pub use capability::Capability;
pub use error::{AttributeError, DecodeError, ErrorAction, ErrorCode};
pub use message::{Message, MessageType, RouteRefresh};
pub use nlri::{AfiSafi, Family, Ipv4Prefix, Ipv6Prefix, Nlri};
pub use notification::Notification;
pub use open::Open;
pub use update::Update;

/// What decoding depends on beyond the bytes: the session's negotiated
/// capabilities and the kind of peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeContext {
    /// RFC 6793: AS numbers in AS_PATH and AGGREGATOR are 4 octets.
    pub four_octet_as: bool,
    /// RFC 8654: messages up to 65535 bytes.
    pub extended_message: bool,
    /// The peer is external (RFC 7606 §7.5 discards LOCAL_PREF from it).
    pub ebgp: bool,
}

impl Default for DecodeContext {
    fn default() -> Self {
        DecodeContext { four_octet_as: true, extended_message: false, ebgp: false }
    }
}

impl DecodeContext {
    pub fn max_message_len(&self) -> usize {
        if self.extended_message { message::EXTENDED_MAX_LEN } else { message::MAX_LEN }
    }
}

/// Decodes one complete message with the most permissive context (4-octet
/// AS, extended messages): the entry point for fuzzing and tools.
pub fn decode_message(buf: &[u8]) -> Result<Message, DecodeError> {
    let ctx = DecodeContext { four_octet_as: true, extended_message: true, ebgp: false };
    Message::decode(buf, &ctx)
}

#[cfg(test)]
mod tests;
