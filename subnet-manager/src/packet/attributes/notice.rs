//! Notice (IBA 13.4.8.2, table 118): the attribute of Trap and
//! TrapRepress. In an SMP only its first 64 bytes travel (the SMP data),
//! which leaves IssuerGID out, as subnet management traps do.

use crate::packet::{Result, fixed_view, view_fields};

/// Generic trap 128: "Link State of at least one port of switch at
/// <LIDADDR> has changed" (IBA 14.2.5.1, table 144).
pub const TRAP_LINK_STATE_CHANGE: u16 = 128;

/// Generic trap 144: "the attributes of a port changed", with its new
/// CapabilityMask (IBA 14.2.5.1, table 144); a port that starts or stops
/// an SM (CapabilityMask IsSM) sends it, and the master sweeps to meet the
/// new SM or forget the old one.
pub const TRAP_LOCAL_CHANGES: u16 = 144;

/// Notice type "informational" (IBA 13.4.8.2: 4).
pub const NOTICE_TYPE_INFO: u8 = 4;

/// ProducerType of a switch (IBA 13.4.8.2: 2).
pub const PRODUCER_SWITCH: u32 = 2;

/// Notice type "urgent" (IBA 13.4.8.2: 1).
pub const NOTICE_TYPE_URGENT: u8 = 1;

pub const DATA_DETAILS_LEN: usize = 54;

fixed_view!(
    /// A read/write view of the first 64 bytes of a Notice.
    Notice,
    64
);

view_fields!(Notice {
    is_generic, set_is_generic: u8 = [0, 1, 7, 1];
    notice_type, set_notice_type: u8 = [0, 1, 0, 7];
    /// ProducerType when generic, VendorID otherwise.
    producer_type, set_producer_type: u32 = [1, 3, 0, 24];
    /// TrapNumber when generic, DeviceID otherwise.
    trap_number, set_trap_number: u16 = [4, 2, 0, 16];
    issuer_lid, set_issuer_lid: u16 = [6, 2, 0, 16];
    notice_toggle, set_notice_toggle: u8 = [8, 2, 15, 1];
    notice_count, set_notice_count: u16 = [8, 2, 0, 15];
});

impl<T: AsRef<[u8]>> Notice<T> {
    pub fn data_details(&self) -> &[u8] {
        &self.buffer.as_ref()[10..64]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Notice<T> {
    pub fn data_details_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[10..64]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NoticeRepr {
    pub is_generic: bool,
    pub notice_type: u8,
    pub producer_type: u32,
    pub trap_number: u16,
    pub issuer_lid: u16,
    pub notice_toggle: bool,
    pub notice_count: u16,
    pub data_details: [u8; DATA_DETAILS_LEN],
}

impl NoticeRepr {
    /// Trap 128 from the switch at `switch_lid`: one of its ports changed
    /// state. LIDADDR is the first field of the data details.
    pub fn link_state_change(switch_lid: u16) -> NoticeRepr {
        let mut data_details = [0u8; DATA_DETAILS_LEN];
        data_details[..2].copy_from_slice(&switch_lid.to_be_bytes());
        NoticeRepr {
            is_generic: true,
            notice_type: NOTICE_TYPE_URGENT,
            producer_type: PRODUCER_SWITCH,
            trap_number: TRAP_LINK_STATE_CHANGE,
            issuer_lid: switch_lid,
            notice_toggle: false,
            notice_count: 0,
            data_details,
        }
    }

    /// Trap 144 from port 0 of the switch at `switch_lid`: its
    /// CapabilityMask is now `capability_mask`. Data details as OpenSM's
    /// `ntc_144`: 2 reserved bytes, LIDADDR, a reserved byte, LocalChanges
    /// (bit 0: a change other than those flagged), CapabilityMask, then
    /// ChangeFlags and CapabilityMask2 (0 here).
    pub fn capability_mask_change(switch_lid: u16, capability_mask: u32) -> NoticeRepr {
        let mut data_details = [0u8; DATA_DETAILS_LEN];
        data_details[2..4].copy_from_slice(&switch_lid.to_be_bytes());
        data_details[5] = 1;
        data_details[6..10].copy_from_slice(&capability_mask.to_be_bytes());
        NoticeRepr {
            is_generic: true,
            notice_type: NOTICE_TYPE_INFO,
            producer_type: PRODUCER_SWITCH,
            trap_number: TRAP_LOCAL_CHANGES,
            issuer_lid: switch_lid,
            notice_toggle: false,
            notice_count: 0,
            data_details,
        }
    }

    /// LIDADDR of trap 128 (the first 16 bits of the data details).
    pub fn lid_address(&self) -> u16 {
        u16::from_be_bytes([self.data_details[0], self.data_details[1]])
    }

    pub fn parse<T: AsRef<[u8]>>(v: &Notice<T>) -> Result<NoticeRepr> {
        let mut data_details = [0u8; DATA_DETAILS_LEN];
        data_details.copy_from_slice(v.data_details());
        Ok(NoticeRepr {
            is_generic: v.is_generic() != 0,
            notice_type: v.notice_type(),
            producer_type: v.producer_type(),
            trap_number: v.trap_number(),
            issuer_lid: v.issuer_lid(),
            notice_toggle: v.notice_toggle() != 0,
            notice_count: v.notice_count(),
            data_details,
        })
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, v: &mut Notice<T>) {
        v.set_is_generic(u8::from(self.is_generic));
        v.set_notice_type(self.notice_type);
        v.set_producer_type(self.producer_type);
        v.set_trap_number(self.trap_number);
        v.set_issuer_lid(self.issuer_lid);
        v.set_notice_toggle(u8::from(self.notice_toggle));
        v.set_notice_count(self.notice_count);
        v.data_details_mut().copy_from_slice(&self.data_details);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::attributes::attribute_round_trip;

    attribute_round_trip!(round_trip, Notice, NoticeRepr);

    #[test]
    fn trap_128_golden_bytes() {
        let repr = NoticeRepr::link_state_change(0x0012);
        let mut bytes = [0u8; 64];
        repr.emit(&mut Notice::new_unchecked(&mut bytes[..]));
        assert_eq!(&bytes[..12], &[0x81, 0x00, 0x00, 0x02, 0x00, 0x80, 0x00, 0x12, 0x00, 0x00, 0x00, 0x12]);
        assert_eq!(NoticeRepr::parse(&Notice::new_checked(&bytes[..]).unwrap()).unwrap().lid_address(), 0x12);
    }
}
