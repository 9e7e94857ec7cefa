//! MAC Control frames (IEEE 802.3 clause 31, EtherType 0x8808): 802.3x PAUSE
//! (annex 31B) and 802.1Qbb priority-based flow control (PFC, annex 31D).
//!
//! This view covers the MAC Control client data after the Ethernet header: a
//! 16-bit opcode, its parameters, and reserved zeros up to the minimum frame
//! size. Pause times are in quanta of 512 bit times at the link's speed.

use super::{Error, EthernetAddress, Field, Result, read_u16, write_u16};

/// The reserved multicast address PAUSE and PFC frames are sent to (802.3
/// annex 31B.1); bridges never forward it.
pub const DESTINATION: EthernetAddress = EthernetAddress([0x01, 0x80, 0xc2, 0x00, 0x00, 0x01]);

/// Bit times in one pause quantum (802.3 annex 31B.2).
pub const BITS_PER_QUANTUM: u64 = 512;

/// Number of priorities a PFC frame carries a timer for.
pub const PRIORITIES: usize = 8;

/// The MAC Control opcode (802.3 annex 31A).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Opcode {
    /// 802.3x PAUSE: one timer for the whole link.
    Pause,
    /// 802.1Qbb PFC: one timer per priority.
    PriorityFlowControl,
    /// EPON GATE/REPORT, EXTENSION and others this switch does not act on.
    Unknown(u16),
}

impl From<u16> for Opcode {
    fn from(value: u16) -> Self {
        match value {
            0x0001 => Opcode::Pause,
            0x0101 => Opcode::PriorityFlowControl,
            other => Opcode::Unknown(other),
        }
    }
}

impl From<Opcode> for u16 {
    fn from(value: Opcode) -> Self {
        match value {
            Opcode::Pause => 0x0001,
            Opcode::PriorityFlowControl => 0x0101,
            Opcode::Unknown(other) => other,
        }
    }
}

mod field {
    use super::Field;

    pub const OPCODE: Field = 0..2;
    /// PAUSE (annex 31B.2): `pause_time`.
    pub const PAUSE_TIME: Field = 2..4;
    /// PFC (annex 31D.2): `priority_enable_vector`, whose upper octet is
    /// reserved, then `time[0]`..`time[7]`.
    pub const CLASS_ENABLE: Field = 2..4;
    pub const PFC_TIMES: Field = 4..20;
}

/// Bytes a checked view may read: the opcode and the longest parameter set
/// (PFC's). Every MAC Control frame is of minimum frame size (802.3 31.4), so
/// its client data is [`MIN_LEN`] bytes and this rejects no valid frame.
pub const PARAMETERS_LEN: usize = field::PFC_TIMES.end;

/// Length of the MAC Control client data in a minimum-size frame: 64 bytes
/// less the Ethernet header and the FCS. Parameters are followed by reserved
/// zeros up to this length.
pub const MIN_LEN: usize = 46;

/// A read/write view of the MAC Control client data of a frame.
#[derive(Debug, Clone)]
pub struct MacControlPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> MacControlPacket<T> {
    pub const fn new_unchecked(buffer: T) -> MacControlPacket<T> {
        MacControlPacket { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<MacControlPacket<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks the buffer holds [`PARAMETERS_LEN`] bytes, so that every
    /// accessor is in bounds whatever the opcode.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < PARAMETERS_LEN { Err(Error::Truncated) } else { Ok(()) }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn opcode(&self) -> Opcode {
        Opcode::from(read_u16(self.buffer.as_ref(), field::OPCODE))
    }

    /// PAUSE's `pause_time` in quanta; 0 resumes transmission at once.
    pub fn pause_time(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::PAUSE_TIME)
    }

    /// PFC's `priority_enable_vector`: bit `n` set means `time[n]` is valid.
    /// The upper octet is reserved: sent as zero, ignored on receipt (802.3 annex 31D).
    pub fn class_enable_vector(&self) -> u8 {
        read_u16(self.buffer.as_ref(), field::CLASS_ENABLE) as u8
    }

    /// PFC's `time[0]`..`time[7]` in quanta, indexed by priority.
    pub fn pfc_times(&self) -> [u16; PRIORITIES] {
        let data = &self.buffer.as_ref()[field::PFC_TIMES];
        core::array::from_fn(|priority| u16::from_be_bytes([data[2 * priority], data[2 * priority + 1]]))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> MacControlPacket<T> {
    pub fn set_opcode(&mut self, value: Opcode) {
        write_u16(self.buffer.as_mut(), field::OPCODE, value.into());
    }

    pub fn set_pause_time(&mut self, value: u16) {
        write_u16(self.buffer.as_mut(), field::PAUSE_TIME, value);
    }

    /// Writes the class-enable vector with its reserved upper octet zero.
    pub fn set_class_enable_vector(&mut self, value: u8) {
        write_u16(self.buffer.as_mut(), field::CLASS_ENABLE, u16::from(value));
    }

    pub fn set_pfc_times(&mut self, value: [u16; PRIORITIES]) {
        let data = &mut self.buffer.as_mut()[field::PFC_TIMES];
        for (slot, time) in data.chunks_exact_mut(2).zip(value) {
            slot.copy_from_slice(&time.to_be_bytes());
        }
    }
}

/// The owned form of the MAC Control frames this switch sends and obeys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MacControlRepr {
    /// 802.3x PAUSE: stop all transmission for `quanta`.
    Pause { quanta: u16 },
    /// 802.1Qbb PFC: stop priority `n` for `quanta[n]` where bit `n` of
    /// `class_enable` is set. Timers of disabled classes are carried as read
    /// but mean nothing.
    PriorityFlowControl { class_enable: u8, quanta: [u16; PRIORITIES] },
}

impl MacControlRepr {
    /// Reads a PAUSE or PFC frame; other opcodes are [`Error::Unsupported`].
    pub fn parse<T: AsRef<[u8]>>(packet: &MacControlPacket<T>) -> Result<MacControlRepr> {
        packet.check_len()?;
        match packet.opcode() {
            Opcode::Pause => Ok(MacControlRepr::Pause { quanta: packet.pause_time() }),
            Opcode::PriorityFlowControl => Ok(MacControlRepr::PriorityFlowControl {
                class_enable: packet.class_enable_vector(),
                quanta: packet.pfc_times(),
            }),
            Opcode::Unknown(_) => Err(Error::Unsupported),
        }
    }

    /// The client data of a minimum-size frame: parameters and reserved zeros.
    pub const fn buffer_len(&self) -> usize {
        MIN_LEN
    }

    /// Writes the opcode and parameters and zeroes the reserved bytes after
    /// them, up to [`MIN_LEN`]; `packet` must hold at least that many bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut MacControlPacket<T>) {
        packet.buffer.as_mut()[..MIN_LEN].fill(0);
        match *self {
            MacControlRepr::Pause { quanta } => {
                packet.set_opcode(Opcode::Pause);
                packet.set_pause_time(quanta);
            }
            MacControlRepr::PriorityFlowControl { class_enable, quanta } => {
                packet.set_opcode(Opcode::PriorityFlowControl);
                packet.set_class_enable_vector(class_enable);
                packet.set_pfc_times(quanta);
            }
        }
    }

    /// How long this frame asks the receiver to stop sending `priority`
    /// (0..=7): `None` if the frame says nothing about it, `Some(0)` to resume.
    /// PAUSE stops every priority.
    pub fn quanta_for(&self, priority: u8) -> Option<u16> {
        match *self {
            MacControlRepr::Pause { quanta } => Some(quanta),
            MacControlRepr::PriorityFlowControl { class_enable, quanta } => {
                let priority = usize::from(priority);
                (priority < PRIORITIES && class_enable & (1 << priority) != 0).then(|| quanta[priority])
            }
        }
    }
}

/// The duration of `quanta` pause quanta on a link of `link_bits_per_second`,
/// in nanoseconds, rounded up so that a receiver honours at least what was
/// asked. A speed of 0 is taken as 1 bit/s rather than dividing by zero.
pub const fn quanta_to_nanos(quanta: u16, link_bits_per_second: u64) -> u64 {
    let bits = quanta as u128 * BITS_PER_QUANTUM as u128;
    let speed = if link_bits_per_second == 0 { 1 } else { link_bits_per_second as u128 };
    let nanos = (bits * 1_000_000_000).div_ceil(speed);
    if nanos > u64::MAX as u128 { u64::MAX } else { nanos as u64 }
}

/// The number of quanta that covers at least `nanos` nanoseconds on a link of
/// `link_bits_per_second`, saturating at the largest pause a frame can carry
/// (0xffff quanta). A speed of 0 is taken as 1 bit/s.
pub const fn nanos_to_quanta(nanos: u64, link_bits_per_second: u64) -> u16 {
    let bits = (nanos as u128 * link_bits_per_second as u128).div_ceil(1_000_000_000);
    let quanta = bits.div_ceil(BITS_PER_QUANTUM as u128);
    if quanta > u16::MAX as u128 { u16::MAX } else { quanta as u16 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{EtherType, EthernetFrame, EthernetRepr};
    use proptest::prelude::*;

    fn hex(text: &str) -> Vec<u8> {
        let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits.chunks(2).map(|pair| u8::from_str_radix(core::str::from_utf8(pair).unwrap(), 16).unwrap()).collect()
    }

    // PAUSE frames an ASIX AX88772 USB NIC sent on its own, as captured and
    // posted in a Linux netdev report on the asix driver (60 bytes, no FCS;
    // source address all zeros, as that chip sends): XOFF with the largest
    // pause time, then XON.
    const CAPTURED_XOFF: &str = "0180c2000001 000000000000 8808 0001 ffff
        0000000000000000000000000000 00000000000000000000000000000000 000000000000000000000000";
    const CAPTURED_XON: &str = "0180c2000001 000000000000 8808 0001 0000
        0000000000000000000000000000 00000000000000000000000000000000 000000000000000000000000";

    // No PFC capture could be had offline: this is the frame an Ixia port was
    // programmed to send in a SONiC PFC test (XOFF for priority 3, 0xffff
    // quanta; 60 bytes, no FCS). tshark 4.0 decodes it as a PFC frame with
    // class-enable vector 0x0008 and C3 time 65535.
    const PFC_XOFF_PRIORITY_3: &str = "0180c2000001 001122334401 8808 0101 0008
        0000 0000 0000 ffff 0000 0000 0000 0000
        0000000000000000000000000000000000000000000000000000";

    fn parse_frame(frame: &[u8]) -> (EthernetRepr, MacControlRepr) {
        let eth = EthernetFrame::new_checked(frame).unwrap();
        let repr = MacControlRepr::parse(&MacControlPacket::new_checked(eth.payload()).unwrap()).unwrap();
        (EthernetRepr::parse(&eth).unwrap(), repr)
    }

    fn emit_frame(src: EthernetAddress, repr: &MacControlRepr) -> Vec<u8> {
        let eth = EthernetRepr { dst_addr: DESTINATION, src_addr: src, ethertype: EtherType::MacControl };
        let mut frame = vec![0xaa; eth.buffer_len() + repr.buffer_len()];
        let mut view = EthernetFrame::new_unchecked(&mut frame[..]);
        eth.emit(&mut view);
        repr.emit(&mut MacControlPacket::new_unchecked(view.payload_mut()));
        frame
    }

    #[test]
    fn captured_pause_frames() {
        let xoff = hex(CAPTURED_XOFF);
        assert_eq!(xoff.len(), 60);
        let (eth, repr) = parse_frame(&xoff);
        assert_eq!(eth.dst_addr, DESTINATION);
        assert_eq!(eth.ethertype, EtherType::MacControl);
        assert_eq!(repr, MacControlRepr::Pause { quanta: 0xffff });
        assert_eq!(repr.quanta_for(5), Some(0xffff));
        assert_eq!(emit_frame(EthernetAddress::ZERO, &repr), xoff);

        let xon = hex(CAPTURED_XON);
        let (_, repr) = parse_frame(&xon);
        assert_eq!(repr, MacControlRepr::Pause { quanta: 0 });
        assert_eq!(emit_frame(EthernetAddress::ZERO, &repr), xon);
    }

    #[test]
    fn pfc_frame() {
        let frame = hex(PFC_XOFF_PRIORITY_3);
        assert_eq!(frame.len(), 60);
        let (eth, repr) = parse_frame(&frame);
        assert_eq!(eth.src_addr, EthernetAddress([0x00, 0x11, 0x22, 0x33, 0x44, 0x01]));
        let MacControlRepr::PriorityFlowControl { class_enable, quanta } = repr else { panic!("{repr:?}") };
        assert_eq!(class_enable, 0b0000_1000);
        assert_eq!(quanta, [0, 0, 0, 0xffff, 0, 0, 0, 0]);
        assert_eq!(repr.quanta_for(3), Some(0xffff));
        assert_eq!(repr.quanta_for(2), None);
        assert_eq!(repr.quanta_for(8), None);
        assert_eq!(emit_frame(eth.src_addr, &repr), frame);
    }

    #[test]
    fn reserved_octet_of_class_vector_is_ignored() {
        let mut frame = hex(PFC_XOFF_PRIORITY_3);
        frame[16] = 0xff;
        let (_, repr) = parse_frame(&frame);
        assert!(matches!(repr, MacControlRepr::PriorityFlowControl { class_enable: 0x08, .. }));
    }

    #[test]
    fn unknown_opcode_is_unsupported() {
        let mut frame = hex(CAPTURED_XOFF);
        frame[15] = 0x02; // EPON GATE
        let packet = MacControlPacket::new_checked(&frame[14..]).unwrap();
        assert_eq!(packet.opcode(), Opcode::Unknown(2));
        assert_eq!(MacControlRepr::parse(&packet), Err(Error::Unsupported));
    }

    #[test]
    fn truncated_at_every_length() {
        let frame = hex(PFC_XOFF_PRIORITY_3);
        for len in 0..PARAMETERS_LEN {
            assert_eq!(MacControlPacket::new_checked(&frame[14..14 + len]).unwrap_err(), Error::Truncated);
        }
        assert!(MacControlPacket::new_checked(&frame[14..14 + PARAMETERS_LEN]).is_ok());
    }

    #[test]
    fn quanta_at_link_speeds() {
        // One quantum is 512 bit times: 5.12 ns at 100 Gb/s, 51.2 ns at 10 Gb/s.
        assert_eq!(quanta_to_nanos(1, 100_000_000_000), 6);
        assert_eq!(quanta_to_nanos(100, 100_000_000_000), 512);
        assert_eq!(quanta_to_nanos(10, 10_000_000_000), 512);
        // The longest pause at 400 Gb/s and at 1 Gb/s.
        assert_eq!(quanta_to_nanos(0xffff, 400_000_000_000), 83_885);
        assert_eq!(quanta_to_nanos(0xffff, 1_000_000_000), 33_553_920);
        assert_eq!(quanta_to_nanos(0, 100_000_000_000), 0);
        assert_eq!(quanta_to_nanos(1, 0), 512_000_000_000);

        assert_eq!(nanos_to_quanta(512, 100_000_000_000), 100);
        assert_eq!(nanos_to_quanta(513, 100_000_000_000), 101);
        assert_eq!(nanos_to_quanta(1, 100_000_000_000), 1);
        assert_eq!(nanos_to_quanta(0, 100_000_000_000), 0);
        assert_eq!(nanos_to_quanta(1_000_000_000, 100_000_000_000), u16::MAX);
        assert_eq!(nanos_to_quanta(u64::MAX, u64::MAX), u16::MAX);
    }

    fn any_repr() -> impl Strategy<Value = MacControlRepr> {
        prop_oneof![
            any::<u16>().prop_map(|quanta| MacControlRepr::Pause { quanta }),
            (any::<u8>(), any::<[u16; PRIORITIES]>())
                .prop_map(|(class_enable, quanta)| { MacControlRepr::PriorityFlowControl { class_enable, quanta } }),
        ]
    }

    proptest! {
        #[test]
        fn round_trip(repr in any_repr()) {
            let mut buf = vec![0x55u8; repr.buffer_len()];
            repr.emit(&mut MacControlPacket::new_unchecked(&mut buf[..]));
            prop_assert!(buf[PARAMETERS_LEN..].iter().all(|&byte| byte == 0));
            prop_assert_eq!(MacControlRepr::parse(&MacControlPacket::new_checked(&buf[..]).unwrap()).unwrap(), repr);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(packet) = MacControlPacket::new_checked(&data[..]) {
                let _ = MacControlRepr::parse(&packet);
                let _ = (packet.pause_time(), packet.class_enable_vector(), packet.pfc_times());
            }
        }

        #[test]
        fn quanta_conversion_covers_the_time(nanos in 0u64..10_000_000, gbps in 1u64..=800) {
            let speed = gbps * 1_000_000_000;
            let quanta = nanos_to_quanta(nanos, speed);
            if quanta < u16::MAX {
                prop_assert!(quanta_to_nanos(quanta, speed) >= nanos);
                // and not by more than one quantum (plus the rounding nanosecond)
                prop_assert!(quanta == 0 || quanta_to_nanos(quanta - 1, speed) < nanos + 1);
            }
        }
    }
}
