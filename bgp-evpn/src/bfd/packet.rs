//! The BFD control packet (RFC 5880 section 4.1): a typed view over the
//! bytes with the fields at named offsets, and [`ControlRepr`], its parsed
//! form, with the reception checks of section 6.8.6 that need only the
//! packet.

use std::fmt;

/// The protocol version this implementation speaks (RFC 5880 4.1 "Vers").
pub const VERSION: u8 = 1;
/// The mandatory section; an authentication section may follow.
pub const HEADER_LEN: usize = 24;
/// UDP destination port of single-hop control packets (RFC 5881 section 4).
pub const CONTROL_PORT: u16 = 3784;
/// Source ports are taken from this range (RFC 5881 section 4).
pub const SOURCE_PORTS: std::ops::RangeInclusive<u16> = 49152..=65535;
/// The TTL / hop limit single-hop packets are sent with and must arrive
/// with (RFC 5881 section 5, the GTSM of RFC 5082).
pub const TTL: u8 = 255;

mod field {
    pub type Field = std::ops::Range<usize>;
    /// Version (3 bits) and diagnostic (5 bits).
    pub const VERS_DIAG: usize = 0;
    /// State (2 bits) and the P, F, C, A, D, M flags.
    pub const STATE_FLAGS: usize = 1;
    pub const DETECT_MULT: usize = 2;
    pub const LENGTH: usize = 3;
    pub const MY_DISCRIMINATOR: Field = 4..8;
    pub const YOUR_DISCRIMINATOR: Field = 8..12;
    pub const DESIRED_MIN_TX: Field = 12..16;
    pub const REQUIRED_MIN_RX: Field = 16..20;
    pub const REQUIRED_MIN_ECHO_RX: Field = 20..24;
}

const FLAG_POLL: u8 = 0x20;
const FLAG_FINAL: u8 = 0x10;
const FLAG_CONTROL_PLANE_INDEPENDENT: u8 = 0x08;
const FLAG_AUTH_PRESENT: u8 = 0x04;
const FLAG_DEMAND: u8 = 0x02;
const FLAG_MULTIPOINT: u8 = 0x01;

/// Session states (RFC 5880 section 4.1 "Sta").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum State {
    AdminDown,
    Down,
    Init,
    Up,
}

impl State {
    fn from_bits(bits: u8) -> State {
        match bits & 0b11 {
            0 => State::AdminDown,
            1 => State::Down,
            2 => State::Init,
            _ => State::Up,
        }
    }

    fn bits(self) -> u8 {
        match self {
            State::AdminDown => 0,
            State::Down => 1,
            State::Init => 2,
            State::Up => 3,
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            State::AdminDown => "admin-down",
            State::Down => "down",
            State::Init => "init",
            State::Up => "up",
        })
    }
}

/// Why the session last left Up (RFC 5880 section 4.1 "Diag").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Diagnostic {
    None,
    ControlDetectionTimeExpired,
    EchoFunctionFailed,
    NeighborSignaledSessionDown,
    ForwardingPlaneReset,
    PathDown,
    ConcatenatedPathDown,
    AdministrativelyDown,
    ReverseConcatenatedPathDown,
    Unknown(u8),
}

impl From<u8> for Diagnostic {
    fn from(value: u8) -> Diagnostic {
        match value {
            0 => Diagnostic::None,
            1 => Diagnostic::ControlDetectionTimeExpired,
            2 => Diagnostic::EchoFunctionFailed,
            3 => Diagnostic::NeighborSignaledSessionDown,
            4 => Diagnostic::ForwardingPlaneReset,
            5 => Diagnostic::PathDown,
            6 => Diagnostic::ConcatenatedPathDown,
            7 => Diagnostic::AdministrativelyDown,
            8 => Diagnostic::ReverseConcatenatedPathDown,
            other => Diagnostic::Unknown(other),
        }
    }
}

impl From<Diagnostic> for u8 {
    fn from(value: Diagnostic) -> u8 {
        match value {
            Diagnostic::None => 0,
            Diagnostic::ControlDetectionTimeExpired => 1,
            Diagnostic::EchoFunctionFailed => 2,
            Diagnostic::NeighborSignaledSessionDown => 3,
            Diagnostic::ForwardingPlaneReset => 4,
            Diagnostic::PathDown => 5,
            Diagnostic::ConcatenatedPathDown => 6,
            Diagnostic::AdministrativelyDown => 7,
            Diagnostic::ReverseConcatenatedPathDown => 8,
            Diagnostic::Unknown(other) => other & 0x1f,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Diagnostic::None => f.write_str("none"),
            Diagnostic::ControlDetectionTimeExpired => f.write_str("control detection time expired"),
            Diagnostic::EchoFunctionFailed => f.write_str("echo function failed"),
            Diagnostic::NeighborSignaledSessionDown => f.write_str("neighbor signaled session down"),
            Diagnostic::ForwardingPlaneReset => f.write_str("forwarding plane reset"),
            Diagnostic::PathDown => f.write_str("path down"),
            Diagnostic::ConcatenatedPathDown => f.write_str("concatenated path down"),
            Diagnostic::AdministrativelyDown => f.write_str("administratively down"),
            Diagnostic::ReverseConcatenatedPathDown => f.write_str("reverse concatenated path down"),
            Diagnostic::Unknown(code) => write!(f, "diagnostic {code}"),
        }
    }
}

/// Why a received packet was discarded (RFC 5880 section 6.8.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketError {
    /// Shorter than the mandatory section or its own Length field.
    Truncated,
    BadVersion(u8),
    /// Length below 24 (26 with authentication).
    BadLength(u8),
    ZeroDetectMult,
    /// The Multipoint bit, reserved for future point-to-multipoint use.
    Multipoint,
    ZeroMyDiscriminator,
    /// An authentication section, and no authentication is configured.
    Authenticated,
}

impl fmt::Display for PacketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PacketError::Truncated => f.write_str("truncated"),
            PacketError::BadVersion(v) => write!(f, "version {v}"),
            PacketError::BadLength(len) => write!(f, "length {len}"),
            PacketError::ZeroDetectMult => f.write_str("detect multiplier 0"),
            PacketError::Multipoint => f.write_str("multipoint bit set"),
            PacketError::ZeroMyDiscriminator => f.write_str("my discriminator 0"),
            PacketError::Authenticated => f.write_str("authentication present, none configured"),
        }
    }
}

impl std::error::Error for PacketError {}

/// A BFD control packet over a byte buffer.
#[derive(Debug, Clone, Copy)]
pub struct ControlPacket<T: AsRef<[u8]>> {
    buffer: T,
}

fn read_u32(bytes: &[u8], field: field::Field) -> u32 {
    u32::from_be_bytes(bytes[field].try_into().expect("four octets"))
}

impl<T: AsRef<[u8]>> ControlPacket<T> {
    pub const fn new_unchecked(buffer: T) -> ControlPacket<T> {
        ControlPacket { buffer }
    }

    /// The buffer holds the mandatory section and what its Length says.
    pub fn new_checked(buffer: T) -> Result<ControlPacket<T>, PacketError> {
        let packet = ControlPacket::new_unchecked(buffer);
        let bytes = packet.buffer.as_ref();
        if bytes.len() < HEADER_LEN || bytes.len() < usize::from(packet.length()) {
            return Err(PacketError::Truncated);
        }
        Ok(packet)
    }

    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VERS_DIAG] >> 5
    }

    pub fn diagnostic(&self) -> Diagnostic {
        Diagnostic::from(self.buffer.as_ref()[field::VERS_DIAG] & 0x1f)
    }

    pub fn state(&self) -> State {
        State::from_bits(self.buffer.as_ref()[field::STATE_FLAGS] >> 6)
    }

    fn flag(&self, flag: u8) -> bool {
        self.buffer.as_ref()[field::STATE_FLAGS] & flag != 0
    }

    pub fn poll(&self) -> bool {
        self.flag(FLAG_POLL)
    }

    pub fn final_(&self) -> bool {
        self.flag(FLAG_FINAL)
    }

    pub fn auth_present(&self) -> bool {
        self.flag(FLAG_AUTH_PRESENT)
    }

    pub fn demand(&self) -> bool {
        self.flag(FLAG_DEMAND)
    }

    pub fn multipoint(&self) -> bool {
        self.flag(FLAG_MULTIPOINT)
    }

    pub fn detect_mult(&self) -> u8 {
        self.buffer.as_ref()[field::DETECT_MULT]
    }

    pub fn length(&self) -> u8 {
        self.buffer.as_ref()[field::LENGTH]
    }

    pub fn my_discriminator(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::MY_DISCRIMINATOR)
    }

    pub fn your_discriminator(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::YOUR_DISCRIMINATOR)
    }

    /// Microseconds, as every interval on the wire.
    pub fn desired_min_tx(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::DESIRED_MIN_TX)
    }

    pub fn required_min_rx(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::REQUIRED_MIN_RX)
    }

    pub fn required_min_echo_rx(&self) -> u32 {
        read_u32(self.buffer.as_ref(), field::REQUIRED_MIN_ECHO_RX)
    }
}

/// A control packet's contents. Intervals in microseconds, as on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlRepr {
    pub diagnostic: Diagnostic,
    pub state: State,
    pub poll: bool,
    pub final_: bool,
    /// C: BFD runs independently of the control plane (not here: false).
    pub control_plane_independent: bool,
    pub demand: bool,
    pub detect_mult: u8,
    pub my_discriminator: u32,
    pub your_discriminator: u32,
    pub desired_min_tx_us: u32,
    pub required_min_rx_us: u32,
    pub required_min_echo_rx_us: u32,
}

impl ControlRepr {
    /// Parses and runs the checks of RFC 5880 6.8.6 that need no session:
    /// version, length, detect multiplier, multipoint, my discriminator,
    /// and (no authentication being configured) the A bit. The checks on
    /// Your Discriminator need the session table.
    pub fn parse<T: AsRef<[u8]>>(packet: &ControlPacket<T>) -> Result<ControlRepr, PacketError> {
        if packet.version() != VERSION {
            return Err(PacketError::BadVersion(packet.version()));
        }
        let min_len = if packet.auth_present() { HEADER_LEN + 2 } else { HEADER_LEN };
        if usize::from(packet.length()) < min_len {
            return Err(PacketError::BadLength(packet.length()));
        }
        if packet.detect_mult() == 0 {
            return Err(PacketError::ZeroDetectMult);
        }
        if packet.multipoint() {
            return Err(PacketError::Multipoint);
        }
        if packet.my_discriminator() == 0 {
            return Err(PacketError::ZeroMyDiscriminator);
        }
        if packet.auth_present() {
            return Err(PacketError::Authenticated);
        }
        Ok(ControlRepr {
            diagnostic: packet.diagnostic(),
            state: packet.state(),
            poll: packet.poll(),
            final_: packet.final_(),
            control_plane_independent: packet.flag(FLAG_CONTROL_PLANE_INDEPENDENT),
            demand: packet.demand(),
            detect_mult: packet.detect_mult(),
            my_discriminator: packet.my_discriminator(),
            your_discriminator: packet.your_discriminator(),
            desired_min_tx_us: packet.desired_min_tx(),
            required_min_rx_us: packet.required_min_rx(),
            required_min_echo_rx_us: packet.required_min_echo_rx(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the packet (no authentication section) into `buf`, which
    /// must be at least [`HEADER_LEN`] octets.
    pub fn emit(&self, buf: &mut [u8]) {
        buf[field::VERS_DIAG] = (VERSION << 5) | (u8::from(self.diagnostic) & 0x1f);
        let mut flags = self.state.bits() << 6;
        for (set, flag) in [
            (self.poll, FLAG_POLL),
            (self.final_, FLAG_FINAL),
            (self.control_plane_independent, FLAG_CONTROL_PLANE_INDEPENDENT),
            (self.demand, FLAG_DEMAND),
        ] {
            if set {
                flags |= flag;
            }
        }
        buf[field::STATE_FLAGS] = flags;
        buf[field::DETECT_MULT] = self.detect_mult;
        buf[field::LENGTH] = HEADER_LEN as u8;
        buf[field::MY_DISCRIMINATOR].copy_from_slice(&self.my_discriminator.to_be_bytes());
        buf[field::YOUR_DISCRIMINATOR].copy_from_slice(&self.your_discriminator.to_be_bytes());
        buf[field::DESIRED_MIN_TX].copy_from_slice(&self.desired_min_tx_us.to_be_bytes());
        buf[field::REQUIRED_MIN_RX].copy_from_slice(&self.required_min_rx_us.to_be_bytes());
        buf[field::REQUIRED_MIN_ECHO_RX].copy_from_slice(&self.required_min_echo_rx_us.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Down-state control packet as FRR's bfdd sends them by default
    /// (300 ms intervals, multiplier 3, no echo), written out by hand from
    /// RFC 5880 4.1: version 1, diagnostic 0, state Down, length 24.
    const FRR_DOWN: [u8; 24] = [
        0x20, 0x40, 0x03, 0x18, 0x5c, 0x1b, 0x7a, 0x21, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x04, 0x93, 0xe0, 0x00, 0x04, 0x93, 0xe0, 0x00, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn parses_a_down_packet_and_writes_it_back() {
        let repr = ControlRepr::parse(&ControlPacket::new_checked(&FRR_DOWN[..]).unwrap()).unwrap();
        assert_eq!(repr.state, State::Down);
        assert_eq!(repr.diagnostic, Diagnostic::None);
        assert_eq!((repr.detect_mult, repr.my_discriminator, repr.your_discriminator), (3, 0x5c1b_7a21, 0));
        assert_eq!(
            (repr.desired_min_tx_us, repr.required_min_rx_us, repr.required_min_echo_rx_us),
            (300_000, 300_000, 0)
        );
        assert!(!repr.poll && !repr.final_);
        let mut buf = [0u8; HEADER_LEN];
        repr.emit(&mut buf);
        assert_eq!(buf, FRR_DOWN);
    }

    #[test]
    fn flags_and_diagnostics_round_trip() {
        let repr = ControlRepr {
            diagnostic: Diagnostic::ControlDetectionTimeExpired,
            state: State::Up,
            poll: true,
            final_: false,
            control_plane_independent: false,
            demand: false,
            detect_mult: 3,
            my_discriminator: 7,
            your_discriminator: 9,
            desired_min_tx_us: 100_000,
            required_min_rx_us: 100_000,
            required_min_echo_rx_us: 0,
        };
        let mut buf = [0u8; HEADER_LEN];
        repr.emit(&mut buf);
        assert_eq!(buf[0], 0x21, "version 1, diagnostic 1");
        assert_eq!(buf[1], 0xe0, "Up, Poll");
        assert_eq!(ControlRepr::parse(&ControlPacket::new_checked(&buf[..]).unwrap()), Ok(repr));
        let fin = ControlRepr { poll: false, final_: true, ..repr };
        fin.emit(&mut buf);
        assert_eq!(buf[1], 0xd0);
    }

    #[test]
    fn the_reception_checks_of_6_8_6_discard_bad_packets() {
        let check = |mutate: fn(&mut [u8; 24])| {
            let mut buf = FRR_DOWN;
            mutate(&mut buf);
            ControlPacket::new_checked(&buf[..]).and_then(|p| ControlRepr::parse(&p))
        };
        assert_eq!(check(|b| b[0] = 0x40), Err(PacketError::BadVersion(2)));
        assert_eq!(check(|b| b[3] = 20), Err(PacketError::BadLength(20)));
        assert_eq!(check(|b| b[3] = 30), Err(PacketError::Truncated), "longer than the datagram");
        assert_eq!(check(|b| b[2] = 0), Err(PacketError::ZeroDetectMult));
        assert_eq!(check(|b| b[1] |= 0x01), Err(PacketError::Multipoint));
        assert_eq!(check(|b| b[4..8].fill(0)), Err(PacketError::ZeroMyDiscriminator));
        assert_eq!(check(|b| b[1] |= 0x04), Err(PacketError::BadLength(24)), "A needs an auth section");
        assert_eq!(ControlPacket::new_checked(&FRR_DOWN[..10]).err(), Some(PacketError::Truncated));
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            if let Ok(packet) = ControlPacket::new_checked(&bytes[..]) {
                let _ = ControlRepr::parse(&packet);
            }
        }
    }
}
