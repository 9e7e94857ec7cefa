//! The InfiniBand Base Transport Header as RoCEv2 carries it after UDP 4791
//! (IBA Vol 1, 9.2 "Base Transport Header"), in the zero-copy view + `Repr`
//! style of `dataplane::wire`.
//!
//! ```text
//!  0               1               2               3
//! | OpCode        |SE|M|Pad|TVer  | Partition Key                 |
//! | Resv8a (F/B)  | Destination QP                                |
//! |A| Resv7       | Packet Sequence Number                        |
//! ```
//! A CNP (RoCEv2 Annex A17.9.2, "Congestion Notification Packet") is a BTH
//! with opcode 0x81, followed by 16 reserved bytes and the 4-byte ICRC.

use core::fmt;

/// Offsets of the BTH fields, named once.
mod field {
    pub const OPCODE: usize = 0;
    pub const FLAGS: usize = 1; // SE(7) M(6) PadCnt(5:4) TVer(3:0)
    pub const PKEY: core::ops::Range<usize> = 2..4;
    pub const RESV8A: usize = 4;
    pub const DEST_QP: core::ops::Range<usize> = 5..8;
    pub const ACK_REQ: usize = 8; // A(7), reserved(6:0)
    pub const PSN: core::ops::Range<usize> = 9..12;
}

/// Length of the BTH.
pub const HEADER_LEN: usize = 12;
/// Length of the invariant CRC that ends every RoCEv2 packet.
pub const ICRC_LEN: usize = 4;
/// Reserved bytes a CNP carries after its BTH (Annex A17.9.2).
pub const CNP_PAYLOAD_LEN: usize = 16;
/// The default partition key (full membership of the default partition).
pub const DEFAULT_PKEY: u16 = 0xffff;
/// PSNs are 24-bit and wrap.
pub const PSN_MODULUS: u32 = 1 << 24;

/// BTH opcodes this endpoint uses (IBA Vol 1, Table 38; 0x81 from Annex A17).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opcode {
    /// RC SEND First (0x00).
    SendFirst,
    /// RC SEND Middle (0x01).
    SendMiddle,
    /// RC SEND Last (0x02).
    SendLast,
    /// RC SEND Only (0x04).
    SendOnly,
    /// RoCEv2 Congestion Notification Packet (0x81).
    Cnp,
    /// Any other opcode, carried as is.
    Other(u8),
}

impl From<u8> for Opcode {
    fn from(value: u8) -> Self {
        match value {
            0x00 => Opcode::SendFirst,
            0x01 => Opcode::SendMiddle,
            0x02 => Opcode::SendLast,
            0x04 => Opcode::SendOnly,
            0x81 => Opcode::Cnp,
            other => Opcode::Other(other),
        }
    }
}

impl From<Opcode> for u8 {
    fn from(value: Opcode) -> Self {
        match value {
            Opcode::SendFirst => 0x00,
            Opcode::SendMiddle => 0x01,
            Opcode::SendLast => 0x02,
            Opcode::SendOnly => 0x04,
            Opcode::Cnp => 0x81,
            Opcode::Other(other) => other,
        }
    }
}

impl Opcode {
    /// Whether the packet ends a message (the flow's completion for FCT).
    pub fn ends_message(self) -> bool {
        matches!(self, Opcode::SendLast | Opcode::SendOnly)
    }
}

/// Why a buffer is not a BTH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// Shorter than the 12-byte header.
    Truncated,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated => write!(f, "buffer shorter than the 12-byte BTH"),
        }
    }
}

impl std::error::Error for Error {}

/// A read/write view of a BTH at the start of `buffer`.
#[derive(Debug, Clone, Copy)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps `buffer` without checking its length.
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// Wraps `buffer`, refusing one too short for the header.
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(Packet { buffer })
    }

    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn opcode(&self) -> Opcode {
        Opcode::from(self.buffer.as_ref()[field::OPCODE])
    }

    /// Solicited event bit.
    pub fn solicited(&self) -> bool {
        self.buffer.as_ref()[field::FLAGS] & 0x80 != 0
    }

    /// Pad count: bytes of padding before the ICRC.
    pub fn pad_count(&self) -> u8 {
        (self.buffer.as_ref()[field::FLAGS] >> 4) & 0x3
    }

    pub fn pkey(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::PKEY];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// 24-bit destination queue pair.
    pub fn dest_qp(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::DEST_QP];
        u32::from_be_bytes([0, b[0], b[1], b[2]])
    }

    pub fn ack_request(&self) -> bool {
        self.buffer.as_ref()[field::ACK_REQ] & 0x80 != 0
    }

    /// 24-bit packet sequence number.
    pub fn psn(&self) -> u32 {
        let b = &self.buffer.as_ref()[field::PSN];
        u32::from_be_bytes([0, b[0], b[1], b[2]])
    }

    /// Bytes after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_opcode(&mut self, opcode: Opcode) {
        self.buffer.as_mut()[field::OPCODE] = opcode.into();
    }

    /// Sets SE, M = 0 (no migration), the pad count and TVer = 0.
    pub fn set_flags(&mut self, solicited: bool, pad_count: u8) {
        self.buffer.as_mut()[field::FLAGS] = (u8::from(solicited) << 7) | ((pad_count & 0x3) << 4);
    }

    pub fn set_pkey(&mut self, pkey: u16) {
        self.buffer.as_mut()[field::PKEY].copy_from_slice(&pkey.to_be_bytes());
    }

    pub fn set_dest_qp(&mut self, qp: u32) {
        let b = qp.to_be_bytes();
        self.buffer.as_mut()[field::RESV8A] = 0;
        self.buffer.as_mut()[field::DEST_QP].copy_from_slice(&b[1..4]);
    }

    pub fn set_ack_request(&mut self, ack_request: bool) {
        self.buffer.as_mut()[field::ACK_REQ] = u8::from(ack_request) << 7;
    }

    pub fn set_psn(&mut self, psn: u32) {
        let b = psn.to_be_bytes();
        self.buffer.as_mut()[field::PSN].copy_from_slice(&b[1..4]);
    }
}

/// A parsed BTH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub opcode: Opcode,
    pub solicited: bool,
    pub pad_count: u8,
    pub pkey: u16,
    pub dest_qp: u32,
    pub ack_request: bool,
    pub psn: u32,
}

impl Repr {
    /// Reads the header; never panics on a checked packet.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, Error> {
        if packet.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(Repr {
            opcode: packet.opcode(),
            solicited: packet.solicited(),
            pad_count: packet.pad_count(),
            pkey: packet.pkey(),
            dest_qp: packet.dest_qp(),
            ack_request: packet.ack_request(),
            psn: packet.psn(),
        })
    }

    /// A CNP addressed to the sender's queue pair `qp`.
    pub fn cnp(qp: u32) -> Repr {
        Repr {
            opcode: Opcode::Cnp,
            solicited: false,
            pad_count: 0,
            pkey: DEFAULT_PKEY,
            dest_qp: qp & (PSN_MODULUS - 1),
            ack_request: false,
            psn: 0,
        }
    }

    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into `packet` (at least `HEADER_LEN` long).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_opcode(self.opcode);
        packet.set_flags(self.solicited, self.pad_count);
        packet.set_pkey(self.pkey);
        packet.set_dest_qp(self.dest_qp);
        packet.set_ack_request(self.ack_request);
        packet.set_psn(self.psn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A CNP to QP 0x000123, as a ConnectX NIC sends it (BTH only).
    const CNP_BYTES: [u8; 12] = [0x81, 0x00, 0xff, 0xff, 0x00, 0x00, 0x01, 0x23, 0x00, 0x00, 0x00, 0x00];

    #[test]
    fn parses_a_cnp() {
        let packet = Packet::new_checked(&CNP_BYTES[..]).unwrap();
        let repr = Repr::parse(&packet).unwrap();
        assert_eq!(repr, Repr::cnp(0x123));
        assert_eq!(repr.opcode, Opcode::Cnp);
    }

    #[test]
    fn emit_then_parse_round_trips_every_field() {
        let repr = Repr {
            opcode: Opcode::SendLast,
            solicited: true,
            pad_count: 3,
            pkey: 0x8001,
            dest_qp: 0xabcdef,
            ack_request: true,
            psn: 0xfffffe,
        };
        let mut buffer = [0u8; HEADER_LEN];
        repr.emit(&mut Packet::new_unchecked(&mut buffer[..]));
        assert_eq!(buffer, [0x02, 0xb0, 0x80, 0x01, 0x00, 0xab, 0xcd, 0xef, 0x80, 0xff, 0xff, 0xfe]);
        assert_eq!(Repr::parse(&Packet::new_unchecked(&buffer[..])).unwrap(), repr);
        let mut cnp = [0u8; HEADER_LEN];
        Repr::cnp(0x123).emit(&mut Packet::new_unchecked(&mut cnp[..]));
        assert_eq!(cnp, CNP_BYTES);
    }

    #[test]
    fn short_buffers_are_refused_not_panicked_on() {
        for len in 0..HEADER_LEN {
            assert_eq!(Packet::new_checked(&CNP_BYTES[..len]).unwrap_err(), Error::Truncated);
            assert_eq!(Repr::parse(&Packet::new_unchecked(&CNP_BYTES[..len])).unwrap_err(), Error::Truncated);
        }
    }

    #[test]
    fn opcodes_round_trip() {
        for byte in 0..=255u8 {
            assert_eq!(u8::from(Opcode::from(byte)), byte);
        }
        assert!(Opcode::SendOnly.ends_message());
        assert!(!Opcode::SendMiddle.ends_message());
    }
}
