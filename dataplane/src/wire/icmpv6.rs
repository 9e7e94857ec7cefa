//! ICMPv6 (RFC 4443): echo request and reply and the errors a router sends
//! (destination unreachable, packet too big, time exceeded); and neighbour
//! discovery's solicitation and advertisement (RFC 4861 sections 4.3, 4.4)
//! with their link-layer address options. The checksum covers the IPv6
//! pseudo-header (RFC 4443 section 2.3).

use std::net::Ipv6Addr;

use super::{Error, EthernetAddress, Field, IpProtocol, Result, checksum, ipv6, read_u16, write_u16};

/// The message types this module knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Icmpv6Message {
    DstUnreachable,
    PacketTooBig,
    TimeExceeded,
    ParamProblem,
    EchoRequest,
    EchoReply,
    RouterSolicit,
    RouterAdvert,
    NeighborSolicit,
    NeighborAdvert,
    Redirect,
    Unknown(u8),
}

impl From<u8> for Icmpv6Message {
    fn from(value: u8) -> Self {
        match value {
            1 => Icmpv6Message::DstUnreachable,
            2 => Icmpv6Message::PacketTooBig,
            3 => Icmpv6Message::TimeExceeded,
            4 => Icmpv6Message::ParamProblem,
            128 => Icmpv6Message::EchoRequest,
            129 => Icmpv6Message::EchoReply,
            133 => Icmpv6Message::RouterSolicit,
            134 => Icmpv6Message::RouterAdvert,
            135 => Icmpv6Message::NeighborSolicit,
            136 => Icmpv6Message::NeighborAdvert,
            137 => Icmpv6Message::Redirect,
            other => Icmpv6Message::Unknown(other),
        }
    }
}

impl From<Icmpv6Message> for u8 {
    fn from(value: Icmpv6Message) -> Self {
        match value {
            Icmpv6Message::DstUnreachable => 1,
            Icmpv6Message::PacketTooBig => 2,
            Icmpv6Message::TimeExceeded => 3,
            Icmpv6Message::ParamProblem => 4,
            Icmpv6Message::EchoRequest => 128,
            Icmpv6Message::EchoReply => 129,
            Icmpv6Message::RouterSolicit => 133,
            Icmpv6Message::RouterAdvert => 134,
            Icmpv6Message::NeighborSolicit => 135,
            Icmpv6Message::NeighborAdvert => 136,
            Icmpv6Message::Redirect => 137,
            Icmpv6Message::Unknown(other) => other,
        }
    }
}

/// Codes of Destination Unreachable (RFC 4443 section 3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DstUnreachable {
    NoRoute,
    AdminProhibited,
    BeyondScope,
    AddrUnreachable,
    PortUnreachable,
    FailedPolicy,
    RejectRoute,
    Unknown(u8),
}

impl From<u8> for DstUnreachable {
    fn from(value: u8) -> Self {
        match value {
            0 => DstUnreachable::NoRoute,
            1 => DstUnreachable::AdminProhibited,
            2 => DstUnreachable::BeyondScope,
            3 => DstUnreachable::AddrUnreachable,
            4 => DstUnreachable::PortUnreachable,
            5 => DstUnreachable::FailedPolicy,
            6 => DstUnreachable::RejectRoute,
            other => DstUnreachable::Unknown(other),
        }
    }
}

impl From<DstUnreachable> for u8 {
    fn from(value: DstUnreachable) -> Self {
        match value {
            DstUnreachable::NoRoute => 0,
            DstUnreachable::AdminProhibited => 1,
            DstUnreachable::BeyondScope => 2,
            DstUnreachable::AddrUnreachable => 3,
            DstUnreachable::PortUnreachable => 4,
            DstUnreachable::FailedPolicy => 5,
            DstUnreachable::RejectRoute => 6,
            DstUnreachable::Unknown(other) => other,
        }
    }
}

/// Codes of Time Exceeded (RFC 4443 section 3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeExceeded {
    /// Hop limit exceeded in transit: what a router sends.
    HopLimitExceeded,
    FragReassemblyExceeded,
    Unknown(u8),
}

impl From<u8> for TimeExceeded {
    fn from(value: u8) -> Self {
        match value {
            0 => TimeExceeded::HopLimitExceeded,
            1 => TimeExceeded::FragReassemblyExceeded,
            other => TimeExceeded::Unknown(other),
        }
    }
}

impl From<TimeExceeded> for u8 {
    fn from(value: TimeExceeded) -> Self {
        match value {
            TimeExceeded::HopLimitExceeded => 0,
            TimeExceeded::FragReassemblyExceeded => 1,
            TimeExceeded::Unknown(other) => other,
        }
    }
}

mod field {
    use super::Field;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Field = 2..4;
    /// Echo: identifier and sequence number.
    pub const ECHO_IDENT: Field = 4..6;
    pub const ECHO_SEQ_NO: Field = 6..8;
    /// Packet Too Big: the MTU of the next-hop link.
    pub const MTU: Field = 4..8;
    /// Unused in the other errors; reserved (and, in an advertisement,
    /// the R/S/O flags) in neighbour discovery.
    pub const MESSAGE_BODY: Field = 4..8;
    pub const NA_FLAGS: usize = 4;
    pub const DATA: usize = 8;
    /// Neighbour solicitation and advertisement.
    pub const TARGET_ADDR: Field = 8..24;
    pub const ND_OPTIONS: usize = 24;
    /// Redirect (RFC 4861 4.5): the target, then the destination, then options.
    pub const REDIRECT_DST_ADDR: Field = 24..40;
    pub const REDIRECT_OPTIONS: usize = 40;
}

/// Length of the header every ICMPv6 message has.
pub const HEADER_LEN: usize = field::DATA;
/// Length of a neighbour solicitation or advertisement without options.
pub const ND_HEADER_LEN: usize = field::ND_OPTIONS;

/// The hop limit neighbour discovery messages are sent with and must arrive
/// with (RFC 4861 sections 7.1.1, 7.1.2): proof they were not routed. The
/// IPv6 layer checks it; this module never sees the IPv6 header.
pub const ND_HOP_LIMIT: u8 = 255;

/// The most of an invoking packet an error should quote: as much as fits in
/// the IPv6 minimum MTU (RFC 4443 section 2.4 (c)).
pub const MAX_ERROR_QUOTE: usize = ipv6::MIN_MTU - ipv6::HEADER_LEN - HEADER_LEN;

/// The part of `invoking_packet` to quote in an ICMPv6 error (see
/// [`MAX_ERROR_QUOTE`]).
pub fn error_quote(invoking_packet: &[u8]) -> &[u8] {
    &invoking_packet[..invoking_packet.len().min(MAX_ERROR_QUOTE)]
}

const FLAG_ROUTER: u8 = 0x80;
const FLAG_SOLICITED: u8 = 0x40;
const FLAG_OVERRIDE: u8 = 0x20;

const OPTION_SOURCE_LLADDR: u8 = 1;
const OPTION_TARGET_LLADDR: u8 = 2;
/// RFC 4861 4.6.3: as much of the redirected packet as fits.
const OPTION_REDIRECTED_HEADER: u8 = 4;
/// The redirected header option's type, length and six reserved octets.
const REDIRECTED_HEADER_PREFIX: usize = 8;
/// Length of a redirect without options.
pub const REDIRECT_HEADER_LEN: usize = field::REDIRECT_OPTIONS;
/// Options count their length in units of 8 bytes (RFC 4861 section 4.6).
const OPTION_UNIT: usize = 8;

/// A read/write view of an ICMPv6 message. The buffer must end where the
/// message ends (the IPv6 payload), since the checksum covers all of it.
#[derive(Debug, Clone)]
pub struct Icmpv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv6Packet<T> {
    pub const fn new_unchecked(buffer: T) -> Icmpv6Packet<T> {
        Icmpv6Packet { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Icmpv6Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// The 8-byte header, and for neighbour solicitation/advertisement the
    /// target address too (RFC 4861: "ICMP length is 24 or more octets").
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let needed = match self.msg_type() {
            Icmpv6Message::NeighborSolicit | Icmpv6Message::NeighborAdvert => ND_HEADER_LEN,
            _ => HEADER_LEN,
        };
        if len < needed { Err(Error::Truncated) } else { Ok(()) }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn msg_type(&self) -> Icmpv6Message {
        Icmpv6Message::from(self.buffer.as_ref()[field::TYPE])
    }

    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    pub fn checksum(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    pub fn echo_ident(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::ECHO_IDENT)
    }

    pub fn echo_seq_no(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::ECHO_SEQ_NO)
    }

    /// The MTU of a Packet Too Big message.
    pub fn mtu(&self) -> u32 {
        let data = &self.buffer.as_ref()[field::MTU];
        u32::from_be_bytes([data[0], data[1], data[2], data[3]])
    }

    /// Router flag of a neighbour advertisement.
    pub fn router_flag(&self) -> bool {
        self.buffer.as_ref()[field::NA_FLAGS] & FLAG_ROUTER != 0
    }

    /// Solicited flag of a neighbour advertisement.
    pub fn solicited_flag(&self) -> bool {
        self.buffer.as_ref()[field::NA_FLAGS] & FLAG_SOLICITED != 0
    }

    /// Override flag of a neighbour advertisement.
    pub fn override_flag(&self) -> bool {
        self.buffer.as_ref()[field::NA_FLAGS] & FLAG_OVERRIDE != 0
    }

    /// Target address of a neighbour solicitation or advertisement.
    ///
    /// # Panics
    /// On a buffer shorter than [`ND_HEADER_LEN`] (which `new_checked`
    /// rejects for those two types).
    pub fn target_addr(&self) -> Ipv6Addr {
        let bytes: [u8; 16] = self.buffer.as_ref()[field::TARGET_ADDR].try_into().unwrap();
        Ipv6Addr::from(bytes)
    }

    fn computed_checksum(&self, src_addr: Ipv6Addr, dst_addr: Ipv6Addr) -> u16 {
        let data = self.buffer.as_ref();
        let pseudo = checksum::pseudo_header_v6(src_addr, dst_addr, IpProtocol::Icmpv6.into(), data.len() as u32);
        checksum::finish(pseudo + checksum::sum(data))
    }

    /// Whether the checksum over the pseudo-header and the whole message is
    /// correct.
    pub fn verify_checksum(&self, src_addr: Ipv6Addr, dst_addr: Ipv6Addr) -> bool {
        self.computed_checksum(src_addr, dst_addr) == 0
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Icmpv6Packet<&'a T> {
    /// What follows the 8-byte header: echo data, or the invoking packet of
    /// an error.
    pub fn data(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::DATA..]
    }

    /// The options of a neighbour solicitation or advertisement.
    pub fn nd_options(&self) -> NdOptions<'a> {
        NdOptions { rest: self.buffer.as_ref().get(field::ND_OPTIONS..).unwrap_or(&[]) }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv6Packet<T> {
    pub fn set_msg_type(&mut self, value: Icmpv6Message) {
        self.buffer.as_mut()[field::TYPE] = value.into();
    }

    pub fn set_msg_code(&mut self, value: u8) {
        self.buffer.as_mut()[field::CODE] = value;
    }

    pub fn set_checksum(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::CHECKSUM, value);
    }

    pub fn set_echo_ident(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::ECHO_IDENT, value);
    }

    pub fn set_echo_seq_no(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::ECHO_SEQ_NO, value);
    }

    pub fn set_mtu(&mut self, value: u32) {
        self.buffer.as_mut()[field::MTU].copy_from_slice(&value.to_be_bytes());
    }

    /// Sets the R, S and O flags of a neighbour advertisement, clearing the
    /// reserved bits.
    pub fn set_neighbor_flags(&mut self, router: bool, solicited: bool, override_flag: bool) {
        let mut flags = 0;
        if router {
            flags |= FLAG_ROUTER;
        }
        if solicited {
            flags |= FLAG_SOLICITED;
        }
        if override_flag {
            flags |= FLAG_OVERRIDE;
        }
        self.buffer.as_mut()[field::MESSAGE_BODY].copy_from_slice(&[flags, 0, 0, 0]);
    }

    pub fn set_target_addr(&mut self, value: Ipv6Addr) {
        self.buffer.as_mut()[field::TARGET_ADDR].copy_from_slice(&value.octets());
    }

    /// Computes and stores the checksum over the pseudo-header and the whole
    /// buffer.
    pub fn fill_checksum(&mut self, src_addr: Ipv6Addr, dst_addr: Ipv6Addr) {
        self.set_checksum(0);
        let value = self.computed_checksum(src_addr, dst_addr);
        self.set_checksum(value);
    }

    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA..]
    }
}

/// One neighbour discovery option (RFC 4861 section 4.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NdOption<'a> {
    SourceLinkLayerAddr(EthernetAddress),
    TargetLinkLayerAddr(EthernetAddress),
    /// An option this module does not interpret: its type and the bytes
    /// after the type and length octets. Receivers ignore these.
    Unknown {
        kind: u8,
        data: &'a [u8],
    },
}

/// An iterator over neighbour discovery options. A zero length (RFC 4861
/// section 4.6: "nodes MUST silently discard an ND packet that contains an
/// option with length zero") yields `Malformed`, an option running past the
/// message `Truncated`; after an error the iterator ends.
#[derive(Debug, Clone)]
pub struct NdOptions<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for NdOptions<'a> {
    type Item = Result<NdOption<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let rest = core::mem::take(&mut self.rest);
        let Some(&length_units) = rest.get(1) else {
            return Some(Err(Error::Truncated));
        };
        let len = usize::from(length_units) * OPTION_UNIT;
        if len == 0 {
            return Some(Err(Error::Malformed));
        }
        let Some(option) = rest.get(..len) else {
            return Some(Err(Error::Truncated));
        };
        self.rest = &rest[len..];
        // Every option is at least 8 bytes, so an Ethernet address (6 bytes
        // after type and length) always fits.
        Some(Ok(match option[0] {
            OPTION_SOURCE_LLADDR => NdOption::SourceLinkLayerAddr(EthernetAddress::from_bytes(&option[2..])),
            OPTION_TARGET_LLADDR => NdOption::TargetLinkLayerAddr(EthernetAddress::from_bytes(&option[2..])),
            kind => NdOption::Unknown { kind, data: &option[2..] },
        }))
    }
}

/// The owned form of the ICMPv6 messages a switch answers or originates.
/// Data and invoking packets borrow from the parsed buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Icmpv6Repr<'a> {
    EchoRequest {
        ident: u16,
        seq_no: u16,
        data: &'a [u8],
    },
    EchoReply {
        ident: u16,
        seq_no: u16,
        data: &'a [u8],
    },
    DstUnreachable {
        reason: DstUnreachable,
        /// The start of the packet that could not be delivered, from its
        /// IPv6 header on.
        invoking_packet: &'a [u8],
    },
    PacketTooBig {
        mtu: u32,
        invoking_packet: &'a [u8],
    },
    TimeExceeded {
        reason: TimeExceeded,
        invoking_packet: &'a [u8],
    },
    NeighborSolicit {
        target_addr: Ipv6Addr,
        /// Absent in duplicate address detection (source `::`).
        source_lladdr: Option<EthernetAddress>,
    },
    NeighborAdvert {
        /// R: the sender is a router.
        router_flag: bool,
        /// S: sent in response to a solicitation.
        solicited_flag: bool,
        /// O: the advertisement should override a cached link-layer address.
        override_flag: bool,
        target_addr: Ipv6Addr,
        target_lladdr: Option<EthernetAddress>,
    },
    /// RFC 4861 4.5: a better first hop (`target_addr`) for `dst_addr`,
    /// with the start of the packet that was redirected (padded with zeros
    /// to 8 octets when written; as read, it includes that padding).
    Redirect {
        target_addr: Ipv6Addr,
        dst_addr: Ipv6Addr,
        target_lladdr: Option<EthernetAddress>,
        redirected: &'a [u8],
    },
}

impl<'a> Icmpv6Repr<'a> {
    /// Reads a message carried from `src_addr` to `dst_addr`.
    ///
    /// `BadChecksum` for a wrong checksum; `Unsupported` for message types
    /// not listed in [`Icmpv6Repr`]; `Truncated` for an error quoting less
    /// than an IPv6 header. Neighbour discovery is validated as RFC 4861
    /// sections 7.1.1 and 7.1.2 ask (except the hop limit, see
    /// [`ND_HOP_LIMIT`]), failures being `Malformed`: code 0, a unicast
    /// target, no zero-length option, no source link-layer address from the
    /// unspecified address (whose solicitation must go to a solicited-node
    /// group), no Solicited flag on an advertisement to a multicast group.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &Icmpv6Packet<&'a T>,
        src_addr: Ipv6Addr,
        dst_addr: Ipv6Addr,
    ) -> Result<Icmpv6Repr<'a>> {
        packet.check_len()?;
        if !packet.verify_checksum(src_addr, dst_addr) {
            return Err(Error::BadChecksum);
        }
        let code = packet.msg_code();
        match packet.msg_type() {
            Icmpv6Message::EchoRequest | Icmpv6Message::EchoReply if code != 0 => Err(Error::Malformed),
            Icmpv6Message::EchoRequest => Ok(Icmpv6Repr::EchoRequest {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data: packet.data(),
            }),
            Icmpv6Message::EchoReply => Ok(Icmpv6Repr::EchoReply {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data: packet.data(),
            }),
            Icmpv6Message::DstUnreachable => Ok(Icmpv6Repr::DstUnreachable {
                reason: DstUnreachable::from(code),
                invoking_packet: invoking_packet(packet.data())?,
            }),
            Icmpv6Message::PacketTooBig if code != 0 => Err(Error::Malformed),
            Icmpv6Message::PacketTooBig => {
                Ok(Icmpv6Repr::PacketTooBig { mtu: packet.mtu(), invoking_packet: invoking_packet(packet.data())? })
            }
            Icmpv6Message::TimeExceeded => Ok(Icmpv6Repr::TimeExceeded {
                reason: TimeExceeded::from(code),
                invoking_packet: invoking_packet(packet.data())?,
            }),
            Icmpv6Message::NeighborSolicit => {
                let target_addr = nd_target(packet, code)?;
                let mut source_lladdr = None;
                for option in packet.nd_options() {
                    if let NdOption::SourceLinkLayerAddr(addr) = option? {
                        source_lladdr = source_lladdr.or(Some(addr));
                    }
                }
                if src_addr.is_unspecified() && (source_lladdr.is_some() || !is_solicited_node(dst_addr)) {
                    return Err(Error::Malformed);
                }
                Ok(Icmpv6Repr::NeighborSolicit { target_addr, source_lladdr })
            }
            Icmpv6Message::NeighborAdvert => {
                let target_addr = nd_target(packet, code)?;
                let mut target_lladdr = None;
                for option in packet.nd_options() {
                    if let NdOption::TargetLinkLayerAddr(addr) = option? {
                        target_lladdr = target_lladdr.or(Some(addr));
                    }
                }
                if dst_addr.is_multicast() && packet.solicited_flag() {
                    return Err(Error::Malformed);
                }
                Ok(Icmpv6Repr::NeighborAdvert {
                    router_flag: packet.router_flag(),
                    solicited_flag: packet.solicited_flag(),
                    override_flag: packet.override_flag(),
                    target_addr,
                    target_lladdr,
                })
            }
            Icmpv6Message::Redirect => {
                let bytes = packet.buffer.as_ref();
                if code != 0 || bytes.len() < REDIRECT_HEADER_LEN {
                    return Err(Error::Malformed);
                }
                let address = |field: Field| Ipv6Addr::from(<[u8; 16]>::try_from(&bytes[field]).expect("16 octets"));
                let (mut target_lladdr, mut redirected) = (None, &bytes[..0]);
                let mut options = &bytes[REDIRECT_HEADER_LEN..];
                while options.len() >= 2 {
                    let len = usize::from(options[1]) * OPTION_UNIT;
                    if len == 0 || len > options.len() {
                        return Err(Error::Malformed);
                    }
                    match options[0] {
                        OPTION_TARGET_LLADDR => target_lladdr = Some(EthernetAddress::from_bytes(&options[2..8])),
                        OPTION_REDIRECTED_HEADER if len >= REDIRECTED_HEADER_PREFIX => {
                            redirected = &options[REDIRECTED_HEADER_PREFIX..len]
                        }
                        _ => {}
                    }
                    options = &options[len..];
                }
                Ok(Icmpv6Repr::Redirect {
                    target_addr: address(field::TARGET_ADDR),
                    dst_addr: address(field::REDIRECT_DST_ADDR),
                    target_lladdr,
                    redirected,
                })
            }
            _ => Err(Error::Unsupported),
        }
    }

    /// Length of the whole message, header, data and options.
    pub fn buffer_len(&self) -> usize {
        let lladdr_option = |present: bool| if present { OPTION_UNIT } else { 0 };
        match self {
            Icmpv6Repr::EchoRequest { data, .. } | Icmpv6Repr::EchoReply { data, .. } => HEADER_LEN + data.len(),
            Icmpv6Repr::DstUnreachable { invoking_packet, .. }
            | Icmpv6Repr::PacketTooBig { invoking_packet, .. }
            | Icmpv6Repr::TimeExceeded { invoking_packet, .. } => HEADER_LEN + invoking_packet.len(),
            Icmpv6Repr::NeighborSolicit { source_lladdr, .. } => ND_HEADER_LEN + lladdr_option(source_lladdr.is_some()),
            Icmpv6Repr::NeighborAdvert { target_lladdr, .. } => ND_HEADER_LEN + lladdr_option(target_lladdr.is_some()),
            Icmpv6Repr::Redirect { target_lladdr, redirected, .. } => {
                REDIRECT_HEADER_LEN + lladdr_option(target_lladdr.is_some()) + redirected_header_option(redirected)
            }
        }
    }

    /// Writes the message and its checksum for a packet from `src_addr` to
    /// `dst_addr`. `packet` must be exactly [`Icmpv6Repr::buffer_len`] bytes
    /// long, since the checksum covers the whole buffer.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Icmpv6Packet<T>,
        src_addr: Ipv6Addr,
        dst_addr: Ipv6Addr,
    ) {
        let write_data = |packet: &mut Icmpv6Packet<T>, msg_type, code, data: &[u8]| {
            packet.set_msg_type(msg_type);
            packet.set_msg_code(code);
            packet.data_mut()[..data.len()].copy_from_slice(data);
        };
        match *self {
            Icmpv6Repr::EchoRequest { ident, seq_no, data } => {
                write_data(packet, Icmpv6Message::EchoRequest, 0, data);
                packet.set_echo_ident(ident);
                packet.set_echo_seq_no(seq_no);
            }
            Icmpv6Repr::EchoReply { ident, seq_no, data } => {
                write_data(packet, Icmpv6Message::EchoReply, 0, data);
                packet.set_echo_ident(ident);
                packet.set_echo_seq_no(seq_no);
            }
            Icmpv6Repr::DstUnreachable { reason, invoking_packet } => {
                write_data(packet, Icmpv6Message::DstUnreachable, reason.into(), invoking_packet);
                packet.set_mtu(0);
            }
            Icmpv6Repr::PacketTooBig { mtu, invoking_packet } => {
                write_data(packet, Icmpv6Message::PacketTooBig, 0, invoking_packet);
                packet.set_mtu(mtu);
            }
            Icmpv6Repr::TimeExceeded { reason, invoking_packet } => {
                write_data(packet, Icmpv6Message::TimeExceeded, reason.into(), invoking_packet);
                packet.set_mtu(0);
            }
            Icmpv6Repr::NeighborSolicit { target_addr, source_lladdr } => {
                packet.set_msg_type(Icmpv6Message::NeighborSolicit);
                packet.set_msg_code(0);
                packet.set_neighbor_flags(false, false, false);
                packet.set_target_addr(target_addr);
                if let Some(addr) = source_lladdr {
                    emit_lladdr_option(packet, OPTION_SOURCE_LLADDR, addr);
                }
            }
            Icmpv6Repr::NeighborAdvert { router_flag, solicited_flag, override_flag, target_addr, target_lladdr } => {
                packet.set_msg_type(Icmpv6Message::NeighborAdvert);
                packet.set_msg_code(0);
                packet.set_neighbor_flags(router_flag, solicited_flag, override_flag);
                packet.set_target_addr(target_addr);
                if let Some(addr) = target_lladdr {
                    emit_lladdr_option(packet, OPTION_TARGET_LLADDR, addr);
                }
            }
            Icmpv6Repr::Redirect { target_addr, dst_addr, target_lladdr, redirected } => {
                packet.set_msg_type(Icmpv6Message::Redirect);
                packet.set_msg_code(0);
                let bytes = packet.buffer.as_mut();
                bytes[field::MESSAGE_BODY].fill(0);
                bytes[field::TARGET_ADDR].copy_from_slice(&target_addr.octets());
                bytes[field::REDIRECT_DST_ADDR].copy_from_slice(&dst_addr.octets());
                let mut at = REDIRECT_HEADER_LEN;
                if let Some(addr) = target_lladdr {
                    bytes[at] = OPTION_TARGET_LLADDR;
                    bytes[at + 1] = 1;
                    bytes[at + 2..at + OPTION_UNIT].copy_from_slice(addr.as_bytes());
                    at += OPTION_UNIT;
                }
                let len = redirected_header_option(redirected);
                if len > 0 {
                    let option = &mut bytes[at..at + len];
                    option.fill(0);
                    option[0] = OPTION_REDIRECTED_HEADER;
                    option[1] = (len / OPTION_UNIT) as u8;
                    option[REDIRECTED_HEADER_PREFIX..REDIRECTED_HEADER_PREFIX + redirected.len()]
                        .copy_from_slice(redirected);
                }
            }
        }
        packet.fill_checksum(src_addr, dst_addr);
    }
}

fn emit_lladdr_option<T: AsRef<[u8]> + AsMut<[u8]>>(packet: &mut Icmpv6Packet<T>, kind: u8, addr: EthernetAddress) {
    let option = &mut packet.buffer.as_mut()[field::ND_OPTIONS..field::ND_OPTIONS + OPTION_UNIT];
    option[0] = kind;
    option[1] = 1;
    option[2..].copy_from_slice(addr.as_bytes());
}

/// Length of the redirected header option carrying `redirected` (none when empty).
fn redirected_header_option(redirected: &[u8]) -> usize {
    if redirected.is_empty() { 0 } else { REDIRECTED_HEADER_PREFIX + redirected.len().next_multiple_of(OPTION_UNIT) }
}

fn nd_target<T: AsRef<[u8]> + ?Sized>(packet: &Icmpv6Packet<&T>, code: u8) -> Result<Ipv6Addr> {
    let target_addr = packet.target_addr();
    if code != 0 || target_addr.is_multicast() {
        return Err(Error::Malformed);
    }
    Ok(target_addr)
}

/// Whether `addr` is in a solicited-node multicast group, ff02::1:ff00:0/104
/// (RFC 4291 section 2.7.1).
fn is_solicited_node(addr: Ipv6Addr) -> bool {
    let octets = addr.octets();
    octets[..13] == [0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff]
}

/// The invoking packet of an error must at least hold an IPv6 header.
fn invoking_packet(data: &[u8]) -> Result<&[u8]> {
    if data.len() < ipv6::HEADER_LEN { Err(Error::Truncated) } else { Ok(data) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Ipv6Packet, Ipv6Repr, ipv6::tests::ECHO_REQUEST};
    use proptest::prelude::*;

    // Whole IPv6 packets emitted with scapy 2.5 and pasted here.

    // Echo reply 2001:db8::2 -> 2001:db8::1 answering ipv6::tests::ECHO_REQUEST
    // (ident 0x1d2e, seq 3, data "abcdefgh"): IPv6()/ICMPv6EchoReply().
    const ECHO_REPLY: [u8; 56] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x10, 0x3a, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x81, 0x00, 0x74, 0x79, 0x1d, 0x2e, 0x00, 0x03, //
        0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
    ];

    // Neighbour solicitation from fe80::200:ff:fe00:1 (00:00:00:00:00:01) for
    // fe80::200:ff:fe00:2, sent to its solicited-node group ff02::1:ff00:2:
    // IPv6(hlim=255)/ICMPv6ND_NS(tgt=..)/ICMPv6NDOptSrcLLAddr(lladdr=..).
    const NEIGHBOR_SOLICIT: [u8; 72] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x02, 0x00, 0x00, 0xff, 0xfe, 0x00, 0x00, 0x01, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x01, 0xff, 0x00, 0x00, 0x02, 0x87, 0x00, 0x7a, 0x97, 0x00, 0x00, 0x00, 0x00, //
        0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0xff, 0xfe, 0x00, 0x00, 0x02, //
        0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
    ];

    // Duplicate address detection for fe80::200:ff:fe00:2: the same
    // solicitation from :: without a source link-layer address option.
    const DAD_SOLICIT: [u8; 64] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x18, 0x3a, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x01, 0xff, 0x00, 0x00, 0x02, 0x87, 0x00, 0x7b, 0x23, 0x00, 0x00, 0x00, 0x00, //
        0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0xff, 0xfe, 0x00, 0x00, 0x02,
    ];

    // The solicited advertisement answering NEIGHBOR_SOLICIT, R, S and O set,
    // target link-layer address 00:00:00:00:00:02:
    // IPv6(hlim=255)/ICMPv6ND_NA(R=1, S=1, O=1, tgt=..)/ICMPv6NDOptDstLLAddr().
    const NEIGHBOR_ADVERT: [u8; 72] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x02, 0x00, 0x00, 0xff, 0xfe, 0x00, 0x00, 0x02, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        0x02, 0x00, 0x00, 0xff, 0xfe, 0x00, 0x00, 0x01, 0x88, 0x00, 0x97, 0x19, 0xe0, 0x00, 0x00, 0x00, //
        0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0xff, 0xfe, 0x00, 0x00, 0x02, //
        0x02, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,
    ];

    // Packet Too Big (MTU 1400) from router 2001:db8::fe quoting a UDP
    // datagram: IPv6()/ICMPv6PacketTooBig(mtu=1400)/bytes(IPv6()/UDP()/b"big").
    const PACKET_TOO_BIG: [u8; 99] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x3b, 0x3a, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x2a, 0x72, 0x00, 0x00, 0x05, 0x78, //
        0x60, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x11, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x05, 0x00, 0x06, 0x00, 0x0b, 0xda, 0xee, //
        0x62, 0x69, 0x67,
    ];

    // Hop limit exceeded from 2001:db8::fe quoting a UDP datagram sent with
    // hop limit 1: IPv6()/ICMPv6TimeExceeded(code=0)/bytes(...).
    const TIME_EXCEEDED: [u8; 96] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x38, 0x3a, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfe, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x00, 0x2f, 0x2c, 0x00, 0x00, 0x00, 0x00, //
        0x60, 0x00, 0x00, 0x00, 0x00, 0x08, 0x11, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x05, 0x00, 0x06, 0x00, 0x08, 0xa4, 0x5e,
    ];

    // Port unreachable from 2001:db8::2: ICMPv6DestUnreach(code=4).
    const PORT_UNREACHABLE: [u8; 96] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x38, 0x3a, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x01, 0x04, 0x31, 0xe5, 0x00, 0x00, 0x00, 0x00, //
        0x60, 0x00, 0x00, 0x00, 0x00, 0x08, 0x11, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x05, 0x00, 0x06, 0x00, 0x08, 0xa4, 0x5e,
    ];

    /// Splits a whole IPv6 packet into its header and ICMPv6 message.
    fn split(packet: &[u8]) -> (Ipv6Repr, &[u8]) {
        let ip = Ipv6Packet::new_checked(packet).unwrap();
        let repr = Ipv6Repr::parse(&ip).unwrap();
        assert_eq!(repr.next_header, IpProtocol::Icmpv6);
        (repr, ip.payload())
    }

    fn parse_and_reemit(packet: &[u8]) -> Icmpv6Repr<'_> {
        let (ip, message) = split(packet);
        let repr = Icmpv6Repr::parse(&Icmpv6Packet::new_checked(message).unwrap(), ip.src_addr, ip.dst_addr).unwrap();
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut Icmpv6Packet::new_unchecked(&mut buf[..]), ip.src_addr, ip.dst_addr);
        assert_eq!(buf, message, "re-emitted {repr:?}");
        repr
    }

    #[test]
    fn echo_request_and_reply() {
        let request = parse_and_reemit(&ECHO_REQUEST);
        assert_eq!(request, Icmpv6Repr::EchoRequest { ident: 0x1d2e, seq_no: 3, data: b"abcdefgh" });
        let reply = parse_and_reemit(&ECHO_REPLY);
        assert_eq!(reply, Icmpv6Repr::EchoReply { ident: 0x1d2e, seq_no: 3, data: b"abcdefgh" });
    }

    #[test]
    fn neighbor_solicitation() {
        let (ip, _) = split(&NEIGHBOR_SOLICIT);
        assert_eq!(ip.hop_limit, ND_HOP_LIMIT);
        assert_eq!(
            parse_and_reemit(&NEIGHBOR_SOLICIT),
            Icmpv6Repr::NeighborSolicit {
                target_addr: "fe80::200:ff:fe00:2".parse().unwrap(),
                source_lladdr: Some(EthernetAddress([0, 0, 0, 0, 0, 1])),
            }
        );
        assert_eq!(
            parse_and_reemit(&DAD_SOLICIT),
            Icmpv6Repr::NeighborSolicit { target_addr: "fe80::200:ff:fe00:2".parse().unwrap(), source_lladdr: None }
        );
    }

    #[test]
    fn neighbor_advertisement() {
        assert_eq!(
            parse_and_reemit(&NEIGHBOR_ADVERT),
            Icmpv6Repr::NeighborAdvert {
                router_flag: true,
                solicited_flag: true,
                override_flag: true,
                target_addr: "fe80::200:ff:fe00:2".parse().unwrap(),
                target_lladdr: Some(EthernetAddress([0, 0, 0, 0, 0, 2])),
            }
        );
    }

    #[test]
    fn errors_quote_the_invoking_packet() {
        let Icmpv6Repr::PacketTooBig { mtu, invoking_packet } = parse_and_reemit(&PACKET_TOO_BIG) else { panic!() };
        assert_eq!(mtu, 1400);
        let quoted = Ipv6Repr::parse(&Ipv6Packet::new_checked(invoking_packet).unwrap()).unwrap();
        assert_eq!(quoted.next_header, IpProtocol::Udp);
        let Icmpv6Repr::TimeExceeded { reason, invoking_packet } = parse_and_reemit(&TIME_EXCEEDED) else { panic!() };
        assert_eq!(reason, TimeExceeded::HopLimitExceeded);
        assert_eq!(Ipv6Packet::new_checked(invoking_packet).unwrap().hop_limit(), 1);
        let Icmpv6Repr::DstUnreachable { reason, .. } = parse_and_reemit(&PORT_UNREACHABLE) else { panic!() };
        assert_eq!(reason, DstUnreachable::PortUnreachable);
        assert_eq!(error_quote(&[0; 2000]).len(), 1232);
    }

    #[test]
    fn bad_checksum() {
        let (ip, message) = split(&NEIGHBOR_SOLICIT);
        let packet = Icmpv6Packet::new_checked(message).unwrap();
        // The checksum covers the pseudo-header: another source breaks it.
        let other: Ipv6Addr = "fe80::200:ff:fe00:9".parse().unwrap();
        assert_eq!(Icmpv6Repr::parse(&packet, other, ip.dst_addr).unwrap_err(), Error::BadChecksum);
        let mut corrupted = message.to_vec();
        corrupted[30] ^= 0x01;
        let packet = Icmpv6Packet::new_checked(&corrupted[..]).unwrap();
        assert_eq!(Icmpv6Repr::parse(&packet, ip.src_addr, ip.dst_addr).unwrap_err(), Error::BadChecksum);
    }

    /// Rewrites `message` with `edit` and a fresh checksum, then parses it.
    fn parse_edited(packet: &[u8], edit: impl FnOnce(&mut Vec<u8>)) -> Result<()> {
        let (ip, message) = split(packet);
        let mut message = message.to_vec();
        edit(&mut message);
        Icmpv6Packet::new_unchecked(&mut message[..]).fill_checksum(ip.src_addr, ip.dst_addr);
        let packet = Icmpv6Packet::new_checked(&message[..])?;
        Icmpv6Repr::parse(&packet, ip.src_addr, ip.dst_addr).map(|_| ())
    }

    #[test]
    fn invalid_neighbor_discovery() {
        // RFC 4861 section 4.6: a zero-length option.
        assert_eq!(parse_edited(&NEIGHBOR_SOLICIT, |m| m[25] = 0), Err(Error::Malformed));
        // An option longer than the message.
        assert_eq!(parse_edited(&NEIGHBOR_SOLICIT, |m| m[25] = 2), Err(Error::Truncated));
        // A lone option type octet.
        assert_eq!(parse_edited(&DAD_SOLICIT, |m| m.push(1)), Err(Error::Truncated));
        // Unknown options are skipped.
        assert_eq!(parse_edited(&NEIGHBOR_SOLICIT, |m| m.extend_from_slice(&[14, 1, 0, 0, 0, 0, 0, 0])), Ok(()));
        // Non-zero code, multicast target, short message.
        assert_eq!(parse_edited(&NEIGHBOR_ADVERT, |m| m[1] = 1), Err(Error::Malformed));
        assert_eq!(parse_edited(&NEIGHBOR_ADVERT, |m| m[8] = 0xff), Err(Error::Malformed));
        assert_eq!(parse_edited(&DAD_SOLICIT, |m| m.truncate(23)), Err(Error::Truncated));
        // DAD with a source link-layer address option.
        assert_eq!(
            parse_edited(&DAD_SOLICIT, |m| m.extend_from_slice(&[1, 1, 0, 0, 0, 0, 0, 9])),
            Err(Error::Malformed)
        );
        // An unsolicited advertisement to all-nodes may not claim S.
        let mut to_all_nodes = NEIGHBOR_ADVERT;
        to_all_nodes[24..40].copy_from_slice(&"ff02::1".parse::<Ipv6Addr>().unwrap().octets());
        assert_eq!(parse_edited(&to_all_nodes, |_| ()), Err(Error::Malformed));
        assert_eq!(parse_edited(&to_all_nodes, |m| m[4] = FLAG_OVERRIDE), Ok(()));
    }

    #[test]
    fn truncated_and_unsupported() {
        let (ip, message) = split(&ECHO_REPLY);
        assert_eq!(Icmpv6Packet::new_checked(&message[..7]).unwrap_err(), Error::Truncated);
        // A router solicitation, well formed but not handled here.
        let mut solicitation = [133, 0, 0, 0, 0, 0, 0, 0];
        Icmpv6Packet::new_unchecked(&mut solicitation[..]).fill_checksum(ip.src_addr, ip.dst_addr);
        let packet = Icmpv6Packet::new_checked(&solicitation[..]).unwrap();
        assert_eq!(Icmpv6Repr::parse(&packet, ip.src_addr, ip.dst_addr).unwrap_err(), Error::Unsupported);
        // An error quoting less than an IPv6 header.
        assert_eq!(parse_edited(&TIME_EXCEEDED, |m| m.truncate(HEADER_LEN + 39)), Err(Error::Truncated));
    }

    fn unicast() -> impl Strategy<Value = Ipv6Addr> {
        any::<[u8; 16]>().prop_map(|mut octets| {
            octets[0] = 0x20;
            Ipv6Addr::from(octets)
        })
    }

    fn lladdr() -> impl Strategy<Value = Option<EthernetAddress>> {
        proptest::option::of(any::<[u8; 6]>().prop_map(EthernetAddress))
    }

    proptest! {
        #[test]
        fn round_trip(
            data in proptest::collection::vec(any::<u8>(), 40..200),
            kind in 0u8..7,
            (a, b, code) in any::<(u16, u16, u8)>(),
            flags in any::<(bool, bool, bool)>(),
            (src, dst, target) in (unicast(), unicast(), unicast()),
            lladdr in lladdr(),
        ) {
            let repr = match kind {
                0 => Icmpv6Repr::EchoRequest { ident: a, seq_no: b, data: &data },
                1 => Icmpv6Repr::EchoReply { ident: a, seq_no: b, data: &data },
                2 => Icmpv6Repr::DstUnreachable { reason: code.into(), invoking_packet: &data },
                3 => Icmpv6Repr::PacketTooBig { mtu: u32::from(a) << 16 | u32::from(b), invoking_packet: &data },
                4 => Icmpv6Repr::TimeExceeded { reason: code.into(), invoking_packet: &data },
                5 => Icmpv6Repr::NeighborSolicit { target_addr: target, source_lladdr: lladdr },
                _ => Icmpv6Repr::NeighborAdvert {
                    router_flag: flags.0,
                    solicited_flag: flags.1,
                    override_flag: flags.2,
                    target_addr: target,
                    target_lladdr: lladdr,
                },
            };
            let mut buf = vec![0u8; repr.buffer_len()];
            repr.emit(&mut Icmpv6Packet::new_unchecked(&mut buf[..]), src, dst);
            let packet = Icmpv6Packet::new_checked(&buf[..]).unwrap();
            prop_assert!(packet.verify_checksum(src, dst));
            prop_assert_eq!(Icmpv6Repr::parse(&packet, src, dst).unwrap(), repr);
        }

        #[test]
        fn code_numbers_round_trip(number in any::<u8>()) {
            prop_assert_eq!(u8::from(DstUnreachable::from(number)), number);
            prop_assert_eq!(u8::from(TimeExceeded::from(number)), number);
            prop_assert_eq!(u8::from(Icmpv6Message::from(number)), number);
        }

        #[test]
        fn parse_never_panics(
            message_type in prop_oneof![Just(135u8), Just(136u8), any::<u8>()],
            body in proptest::collection::vec(any::<u8>(), 0..80),
            (src, dst) in (unicast(), unicast()),
        ) {
            // Valid checksums so that parsing gets past the checksum test.
            let mut data = vec![message_type];
            data.extend_from_slice(&body);
            if data.len() >= HEADER_LEN {
                Icmpv6Packet::new_unchecked(&mut data[..]).fill_checksum(src, dst);
            }
            if let Ok(packet) = Icmpv6Packet::new_checked(&data[..]) {
                let _ = Icmpv6Repr::parse(&packet, src, dst);
                let _ = packet.nd_options().count();
            }
        }

        #[test]
        fn option_walk_never_panics(options in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut walked = 0;
            for option in (NdOptions { rest: &options }) {
                walked += 1;
                if option.is_err() {
                    break;
                }
            }
            prop_assert!(walked <= options.len() / 2 + 1);
        }
    }
}
