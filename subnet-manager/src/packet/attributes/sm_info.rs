//! SMInfo (IBA 14.2.5.13, table 159; SM state machine 14.4): 21 bytes.
//! The attribute modifier of a Set is the control (14.4.1, table 160).

use crate::packet::{Result, fixed_view, view_fields};

/// SMState (IBA 14.2.5.13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SmState {
    NotActive,
    Discovering,
    Standby,
    Master,
    Unknown(u8),
}

impl From<u8> for SmState {
    fn from(value: u8) -> Self {
        match value {
            0 => SmState::NotActive,
            1 => SmState::Discovering,
            2 => SmState::Standby,
            3 => SmState::Master,
            other => SmState::Unknown(other),
        }
    }
}

impl From<SmState> for u8 {
    fn from(value: SmState) -> Self {
        match value {
            SmState::NotActive => 0,
            SmState::Discovering => 1,
            SmState::Standby => 2,
            SmState::Master => 3,
            SmState::Unknown(other) => other,
        }
    }
}

/// The attribute modifier of an SMInfo Set (IBA 14.4.1, table 160).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SmInfoControl {
    Handover,
    Acknowledge,
    Disable,
    Standby,
    Discover,
    Unknown(u32),
}

impl From<u32> for SmInfoControl {
    fn from(value: u32) -> Self {
        match value {
            1 => SmInfoControl::Handover,
            2 => SmInfoControl::Acknowledge,
            3 => SmInfoControl::Disable,
            4 => SmInfoControl::Standby,
            5 => SmInfoControl::Discover,
            other => SmInfoControl::Unknown(other),
        }
    }
}

impl From<SmInfoControl> for u32 {
    fn from(value: SmInfoControl) -> Self {
        match value {
            SmInfoControl::Handover => 1,
            SmInfoControl::Acknowledge => 2,
            SmInfoControl::Disable => 3,
            SmInfoControl::Standby => 4,
            SmInfoControl::Discover => 5,
            SmInfoControl::Unknown(other) => other,
        }
    }
}

fixed_view!(
    /// A read/write view of SMInfo.
    SmInfo,
    21
);

view_fields!(SmInfo {
    guid, set_guid: u64 = [0, 8, 0, 64];
    sm_key, set_sm_key: u64 = [8, 8, 0, 64];
    /// Incremented by a master SM as it works, so a standby polling it sees
    /// it alive (IBA 14.4.2).
    act_count, set_act_count: u32 = [16, 4, 0, 32];
    priority, set_priority: u8 = [20, 1, 4, 4];
    sm_state_raw, set_sm_state_raw: u8 = [20, 1, 0, 4];
});

impl<T: AsRef<[u8]>> SmInfo<T> {
    pub fn sm_state(&self) -> SmState {
        SmState::from(self.sm_state_raw())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SmInfoRepr {
    pub guid: u64,
    pub sm_key: u64,
    pub act_count: u32,
    pub priority: u8,
    pub sm_state: SmState,
}

impl SmInfoRepr {
    pub fn parse<T: AsRef<[u8]>>(v: &SmInfo<T>) -> Result<SmInfoRepr> {
        Ok(SmInfoRepr {
            guid: v.guid(),
            sm_key: v.sm_key(),
            act_count: v.act_count(),
            priority: v.priority(),
            sm_state: v.sm_state(),
        })
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, v: &mut SmInfo<T>) {
        v.set_guid(self.guid);
        v.set_sm_key(self.sm_key);
        v.set_act_count(self.act_count);
        v.set_priority(self.priority);
        v.set_sm_state_raw(self.sm_state.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::attributes::attribute_round_trip;

    attribute_round_trip!(round_trip, SmInfo, SmInfoRepr);

    #[test]
    fn golden_bytes() {
        let repr =
            SmInfoRepr { guid: 0x1122, sm_key: 0, act_count: 0x0102_0304, priority: 14, sm_state: SmState::Master };
        let mut bytes = [0u8; 21];
        repr.emit(&mut SmInfo::new_unchecked(&mut bytes[..]));
        assert_eq!(&bytes[6..8], &[0x11, 0x22]);
        assert_eq!(&bytes[16..], &[1, 2, 3, 4, 0xe3]);
    }
}
