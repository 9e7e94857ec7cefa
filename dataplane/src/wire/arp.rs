//! ARP (RFC 826), as used to resolve IPv4 addresses on Ethernet.
//!
//! The view reads any hardware/protocol address lengths (the offsets of the
//! address fields follow from `hlen` and `plen`), so a checked view never
//! panics; [`ArpRepr`] handles only IPv4 over Ethernet and calls anything else
//! [`Error::Unsupported`].

use std::net::Ipv4Addr;

use super::{Error, EtherType, EthernetAddress, Field, Result, read_u16, write_u16};

/// `ar$hrd` for Ethernet (RFC 826; IANA "Hardware Types").
pub const HARDWARE_ETHERNET: u16 = 1;

/// The ARP operation (`ar$op`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Request,
    Reply,
    /// RARP, InARP and other operations this switch does not act on.
    Unknown(u16),
}

impl From<u16> for Operation {
    fn from(value: u16) -> Self {
        match value {
            1 => Operation::Request,
            2 => Operation::Reply,
            other => Operation::Unknown(other),
        }
    }
}

impl From<Operation> for u16 {
    fn from(value: Operation) -> Self {
        match value {
            Operation::Request => 1,
            Operation::Reply => 2,
            Operation::Unknown(other) => other,
        }
    }
}

mod field {
    #![allow(non_snake_case)]
    use super::Field;

    pub const HTYPE: Field = 0..2;
    pub const PTYPE: Field = 2..4;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: Field = 6..8;

    // RFC 826: the four addresses follow the fixed part back to back, each as
    // long as its length byte says.
    pub const fn SHA(hlen: u8, _plen: u8) -> Field {
        let start = OPER.end;
        start..start + hlen as usize
    }
    pub const fn SPA(hlen: u8, plen: u8) -> Field {
        let start = SHA(hlen, plen).end;
        start..start + plen as usize
    }
    pub const fn THA(hlen: u8, plen: u8) -> Field {
        let start = SPA(hlen, plen).end;
        start..start + hlen as usize
    }
    pub const fn TPA(hlen: u8, plen: u8) -> Field {
        let start = THA(hlen, plen).end;
        start..start + plen as usize
    }
}

/// Length of the fixed part (types, lengths, operation).
pub const FIXED_LEN: usize = field::OPER.end;

/// Length of an ARP packet for IPv4 over Ethernet (without Ethernet padding).
pub const PACKET_LEN: usize = field::TPA(6, 4).end;

/// A read/write view of an ARP packet.
#[derive(Debug, Clone)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    pub const fn new_unchecked(buffer: T) -> ArpPacket<T> {
        ArpPacket { buffer }
    }

    /// Wraps a buffer after checking it holds the fixed part and the four
    /// addresses at the lengths the packet declares.
    pub fn new_checked(buffer: T) -> Result<ArpPacket<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < FIXED_LEN || len < field::TPA(self.hardware_len(), self.protocol_len()).end {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn hardware_type(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::HTYPE)
    }

    /// The protocol type, an EtherType (0x0800 for IPv4).
    pub fn protocol_type(&self) -> EtherType {
        EtherType::from(read_u16(self.buffer.as_ref(), field::PTYPE))
    }

    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }

    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }

    pub fn operation(&self) -> Operation {
        Operation::from(read_u16(self.buffer.as_ref(), field::OPER))
    }

    pub fn sender_hardware_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[field::SHA(self.hardware_len(), self.protocol_len())]
    }

    pub fn sender_protocol_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[field::SPA(self.hardware_len(), self.protocol_len())]
    }

    pub fn target_hardware_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[field::THA(self.hardware_len(), self.protocol_len())]
    }

    pub fn target_protocol_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[field::TPA(self.hardware_len(), self.protocol_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    pub fn set_hardware_type(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::HTYPE, value);
    }

    pub fn set_protocol_type(&mut self, value: EtherType) {
        write_u16(self.buffer.as_mut(), field::PTYPE, value.into());
    }

    pub fn set_hardware_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::HLEN] = value;
    }

    pub fn set_protocol_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::PLEN] = value;
    }

    pub fn set_operation(&mut self, value: Operation) {
        write_u16(self.buffer.as_mut(), field::OPER, value.into());
    }

    /// Writes the sender hardware address; `value` must be `hardware_len` long.
    pub fn set_sender_hardware_addr(&mut self, value: &[u8]) {
        let field = field::SHA(self.hardware_len(), self.protocol_len());
        self.buffer.as_mut()[field].copy_from_slice(value);
    }

    /// Writes the sender protocol address; `value` must be `protocol_len` long.
    pub fn set_sender_protocol_addr(&mut self, value: &[u8]) {
        let field = field::SPA(self.hardware_len(), self.protocol_len());
        self.buffer.as_mut()[field].copy_from_slice(value);
    }

    /// Writes the target hardware address; `value` must be `hardware_len` long.
    pub fn set_target_hardware_addr(&mut self, value: &[u8]) {
        let field = field::THA(self.hardware_len(), self.protocol_len());
        self.buffer.as_mut()[field].copy_from_slice(value);
    }

    /// Writes the target protocol address; `value` must be `protocol_len` long.
    pub fn set_target_protocol_addr(&mut self, value: &[u8]) {
        let field = field::TPA(self.hardware_len(), self.protocol_len());
        self.buffer.as_mut()[field].copy_from_slice(value);
    }
}

/// The owned form of an ARP packet for IPv4 over Ethernet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArpRepr {
    pub operation: Operation,
    pub sender_hardware_addr: EthernetAddress,
    pub sender_protocol_addr: Ipv4Addr,
    pub target_hardware_addr: EthernetAddress,
    pub target_protocol_addr: Ipv4Addr,
}

impl ArpRepr {
    /// Reads an IPv4-over-Ethernet packet; other hardware or protocol types,
    /// or other address lengths, are [`Error::Unsupported`].
    pub fn parse<T: AsRef<[u8]>>(packet: &ArpPacket<T>) -> Result<ArpRepr> {
        packet.check_len()?;
        if packet.hardware_type() != HARDWARE_ETHERNET
            || packet.protocol_type() != EtherType::Ipv4
            || packet.hardware_len() != 6
            || packet.protocol_len() != 4
        {
            return Err(Error::Unsupported);
        }
        Ok(ArpRepr {
            operation: packet.operation(),
            sender_hardware_addr: EthernetAddress::from_bytes(packet.sender_hardware_addr()),
            sender_protocol_addr: ipv4_from(packet.sender_protocol_addr()),
            target_hardware_addr: EthernetAddress::from_bytes(packet.target_hardware_addr()),
            target_protocol_addr: ipv4_from(packet.target_protocol_addr()),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        PACKET_LEN
    }

    /// Writes the packet into the start of `packet`, which must hold at least
    /// [`PACKET_LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut ArpPacket<T>) {
        packet.set_hardware_type(HARDWARE_ETHERNET);
        packet.set_protocol_type(EtherType::Ipv4);
        packet.set_hardware_len(6);
        packet.set_protocol_len(4);
        packet.set_operation(self.operation);
        packet.set_sender_hardware_addr(self.sender_hardware_addr.as_bytes());
        packet.set_sender_protocol_addr(&self.sender_protocol_addr.octets());
        packet.set_target_hardware_addr(self.target_hardware_addr.as_bytes());
        packet.set_target_protocol_addr(&self.target_protocol_addr.octets());
    }

    /// A gratuitous ARP announces the sender's own binding: it asks for (or
    /// answers) its own address (RFC 5227 section 3).
    pub fn is_gratuitous(&self) -> bool {
        self.sender_protocol_addr == self.target_protocol_addr
    }

    /// The reply a host owning `target_protocol_addr` at `our_hardware_addr`
    /// sends to this request (RFC 826, "Packet Reception").
    pub fn reply(&self, our_hardware_addr: EthernetAddress) -> ArpRepr {
        ArpRepr {
            operation: Operation::Reply,
            sender_hardware_addr: our_hardware_addr,
            sender_protocol_addr: self.target_protocol_addr,
            target_hardware_addr: self.sender_hardware_addr,
            target_protocol_addr: self.sender_protocol_addr,
        }
    }
}

fn ipv4_from(data: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(data[0], data[1], data[2], data[3])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{EthernetFrame, EthernetRepr};
    use proptest::prelude::*;

    // Captured with `tshark -i vA -w arp.pcap -f arp` on one end of a veth
    // pair between two network namespaces (10.99.0.1 at 02:00:00:00:00:01
    // pinging 10.99.0.2 at 02:00:00:00:00:02), Linux 6.18 kernel ARP, dumped
    // with `tshark -x`. On veth the kernel sends 42-byte frames: padding to
    // the 60-byte minimum is left to a NIC.
    const CAPTURED_REQUEST: &str =
        "ffffffffffff020000000001080600010800060400010200000000010a6300010000000000000a630002";
    const CAPTURED_REPLY: &str = "020000000001020000000002080600010800060400020200000000020a6300020200000000010a630001";

    pub(crate) fn hex(text: &str) -> Vec<u8> {
        (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
    }

    fn parse_frame(frame: &[u8]) -> (EthernetRepr, ArpRepr) {
        let eth = EthernetFrame::new_checked(frame).unwrap();
        let eth_repr = EthernetRepr::parse(&eth).unwrap();
        let arp = ArpRepr::parse(&ArpPacket::new_checked(eth.payload()).unwrap()).unwrap();
        (eth_repr, arp)
    }

    const HOST_A: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);
    const HOST_B: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);

    #[test]
    fn captured_request() {
        let frame = hex(CAPTURED_REQUEST);
        let (eth, arp) = parse_frame(&frame);
        assert_eq!(eth.ethertype, EtherType::Arp);
        assert_eq!(arp.operation, Operation::Request);
        assert_eq!(arp.sender_hardware_addr, HOST_A);
        assert_eq!(arp.sender_protocol_addr, Ipv4Addr::new(10, 99, 0, 1));
        assert_eq!(arp.target_hardware_addr, EthernetAddress::ZERO);
        assert_eq!(arp.target_protocol_addr, Ipv4Addr::new(10, 99, 0, 2));
        assert!(!arp.is_gratuitous());
    }

    #[test]
    fn captured_reply_matches_our_reply() {
        let (_, request) = parse_frame(&hex(CAPTURED_REQUEST));
        let frame = hex(CAPTURED_REPLY);
        let (_, reply) = parse_frame(&frame);
        assert_eq!(reply, request.reply(HOST_B));

        let mut emitted = [0u8; PACKET_LEN];
        request.reply(HOST_B).emit(&mut ArpPacket::new_unchecked(&mut emitted[..]));
        assert_eq!(&emitted[..], &frame[14..]);
    }

    #[test]
    fn padding_after_packet_is_ignored() {
        let mut frame = hex(CAPTURED_REQUEST);
        frame.resize(60, 0);
        let (_, arp) = parse_frame(&frame);
        assert_eq!(arp.target_protocol_addr, Ipv4Addr::new(10, 99, 0, 2));
    }

    #[test]
    fn truncated_at_every_length() {
        let frame = hex(CAPTURED_REQUEST);
        let payload = &frame[14..];
        for len in 0..PACKET_LEN {
            assert_eq!(ArpPacket::new_checked(&payload[..len]).unwrap_err(), Error::Truncated, "len {len}");
        }
    }

    #[test]
    fn other_types_and_lengths_are_unsupported() {
        let frame = hex(CAPTURED_REQUEST);
        let mut payload = frame[14..].to_vec();
        // IEEE 802 hardware type (6), as Token Ring hosts sent.
        payload[1] = 6;
        assert_eq!(ArpRepr::parse(&ArpPacket::new_checked(&payload[..]).unwrap()), Err(Error::Unsupported));

        let mut payload = frame[14..].to_vec();
        payload[2..4].copy_from_slice(&[0x86, 0xdd]);
        assert_eq!(ArpRepr::parse(&ArpPacket::new_checked(&payload[..]).unwrap()), Err(Error::Unsupported));

        // A shorter protocol length still parses as a view (the offsets move)
        // but is not IPv4 over Ethernet.
        let mut payload = frame[14..].to_vec();
        payload[5] = 2;
        let packet = ArpPacket::new_checked(&payload[..]).unwrap();
        assert_eq!(packet.target_protocol_addr().len(), 2);
        assert_eq!(ArpRepr::parse(&packet), Err(Error::Unsupported));

        // A longer hardware length needs more bytes than are there.
        let mut payload = frame[14..].to_vec();
        payload[4] = 20;
        assert_eq!(ArpPacket::new_checked(&payload[..]).unwrap_err(), Error::Truncated);
    }

    #[test]
    fn unknown_operation_is_kept() {
        let frame = hex(CAPTURED_REQUEST);
        let mut payload = frame[14..].to_vec();
        payload[7] = 8; // InARP request (RFC 2390)
        let arp = ArpRepr::parse(&ArpPacket::new_checked(&payload[..]).unwrap()).unwrap();
        assert_eq!(arp.operation, Operation::Unknown(8));
    }

    fn any_operation() -> impl Strategy<Value = Operation> {
        any::<u16>().prop_map(Operation::from)
    }

    proptest! {
        #[test]
        fn round_trip(
            operation in any_operation(),
            sha in any::<[u8; 6]>(), spa in any::<[u8; 4]>(),
            tha in any::<[u8; 6]>(), tpa in any::<[u8; 4]>(),
        ) {
            let repr = ArpRepr {
                operation,
                sender_hardware_addr: EthernetAddress(sha),
                sender_protocol_addr: Ipv4Addr::from(spa),
                target_hardware_addr: EthernetAddress(tha),
                target_protocol_addr: Ipv4Addr::from(tpa),
            };
            let mut buf = vec![0u8; repr.buffer_len()];
            repr.emit(&mut ArpPacket::new_unchecked(&mut buf[..]));
            prop_assert_eq!(ArpRepr::parse(&ArpPacket::new_checked(&buf[..]).unwrap()).unwrap(), repr);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(packet) = ArpPacket::new_checked(&data[..]) {
                let _ = ArpRepr::parse(&packet);
                let _ = (packet.sender_hardware_addr(), packet.sender_protocol_addr());
                let _ = (packet.target_hardware_addr(), packet.target_protocol_addr());
            }
        }
    }
}
