//! PortInfo (IBA 14.2.5.6, table 151): 64 bytes per port; the attribute
//! modifier is the port number (ignored on a channel adapter, which answers
//! for the port the SMP came in on).

use crate::packet::{Result, fixed_view, view_fields};

/// PortState (IBA 14.2.5.6; state machine in 7.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PortState {
    /// 0 in a Set: leave the state alone.
    NoChange,
    Down,
    Init,
    Armed,
    Active,
    Unknown(u8),
}

impl From<u8> for PortState {
    fn from(value: u8) -> Self {
        match value {
            0 => PortState::NoChange,
            1 => PortState::Down,
            2 => PortState::Init,
            3 => PortState::Armed,
            4 => PortState::Active,
            other => PortState::Unknown(other),
        }
    }
}

impl From<PortState> for u8 {
    fn from(value: PortState) -> Self {
        match value {
            PortState::NoChange => 0,
            PortState::Down => 1,
            PortState::Init => 2,
            PortState::Armed => 3,
            PortState::Active => 4,
            PortState::Unknown(other) => other,
        }
    }
}

/// PortPhysicalState (IBA 14.2.5.6; 5.6.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PortPhysState {
    NoChange,
    Sleep,
    Polling,
    Disabled,
    PortConfigurationTraining,
    LinkUp,
    LinkErrorRecovery,
    PhyTest,
    Unknown(u8),
}

impl From<u8> for PortPhysState {
    fn from(value: u8) -> Self {
        match value {
            0 => PortPhysState::NoChange,
            1 => PortPhysState::Sleep,
            2 => PortPhysState::Polling,
            3 => PortPhysState::Disabled,
            4 => PortPhysState::PortConfigurationTraining,
            5 => PortPhysState::LinkUp,
            6 => PortPhysState::LinkErrorRecovery,
            7 => PortPhysState::PhyTest,
            other => PortPhysState::Unknown(other),
        }
    }
}

impl From<PortPhysState> for u8 {
    fn from(value: PortPhysState) -> Self {
        match value {
            PortPhysState::NoChange => 0,
            PortPhysState::Sleep => 1,
            PortPhysState::Polling => 2,
            PortPhysState::Disabled => 3,
            PortPhysState::PortConfigurationTraining => 4,
            PortPhysState::LinkUp => 5,
            PortPhysState::LinkErrorRecovery => 6,
            PortPhysState::PhyTest => 7,
            PortPhysState::Unknown(other) => other,
        }
    }
}

/// LinkWidth bits (IBA 14.2.5.6: LinkWidthEnabled/Supported/Active).
pub struct LinkWidth;

impl LinkWidth {
    pub const X1: u8 = 1;
    pub const X4: u8 = 2;
    pub const X8: u8 = 4;
    pub const X12: u8 = 8;
    pub const X2: u8 = 16;

    /// Lanes of an active width value, 0 if it is not one width.
    pub fn lanes(active: u8) -> u8 {
        match active {
            Self::X1 => 1,
            Self::X2 => 2,
            Self::X4 => 4,
            Self::X8 => 8,
            Self::X12 => 12,
            _ => 0,
        }
    }
}

/// LinkSpeed bits (IBA 14.2.5.6: LinkSpeedSupported/Enabled/Active).
pub struct LinkSpeed;

impl LinkSpeed {
    /// 2.5 Gb/s per lane.
    pub const SDR: u8 = 1;
    /// 5.0 Gb/s.
    pub const DDR: u8 = 2;
    /// 10.0 Gb/s.
    pub const QDR: u8 = 4;
}

fixed_view!(
    /// A read/write view of PortInfo.
    PortInfo,
    64
);

view_fields!(PortInfo {
    m_key, set_m_key: u64 = [0, 8, 0, 64];
    gid_prefix, set_gid_prefix: u64 = [8, 8, 0, 64];
    lid, set_lid: u16 = [16, 2, 0, 16];
    master_sm_lid, set_master_sm_lid: u16 = [18, 2, 0, 16];
    capability_mask, set_capability_mask: u32 = [20, 4, 0, 32];
    diag_code, set_diag_code: u16 = [24, 2, 0, 16];
    m_key_lease_period, set_m_key_lease_period: u16 = [26, 2, 0, 16];
    local_port_num, set_local_port_num: u8 = [28, 1, 0, 8];
    link_width_enabled, set_link_width_enabled: u8 = [29, 1, 0, 8];
    link_width_supported, set_link_width_supported: u8 = [30, 1, 0, 8];
    link_width_active, set_link_width_active: u8 = [31, 1, 0, 8];
    link_speed_supported, set_link_speed_supported: u8 = [32, 1, 4, 4];
    port_state_raw, set_port_state_raw: u8 = [32, 1, 0, 4];
    port_phys_state_raw, set_port_phys_state_raw: u8 = [33, 1, 4, 4];
    link_down_default_state, set_link_down_default_state: u8 = [33, 1, 0, 4];
    m_key_protect_bits, set_m_key_protect_bits: u8 = [34, 1, 6, 2];
    lmc, set_lmc: u8 = [34, 1, 0, 3];
    link_speed_active, set_link_speed_active: u8 = [35, 1, 4, 4];
    link_speed_enabled, set_link_speed_enabled: u8 = [35, 1, 0, 4];
    neighbor_mtu, set_neighbor_mtu: u8 = [36, 1, 4, 4];
    master_sm_sl, set_master_sm_sl: u8 = [36, 1, 0, 4];
    vl_cap, set_vl_cap: u8 = [37, 1, 4, 4];
    init_type, set_init_type: u8 = [37, 1, 0, 4];
    vl_high_limit, set_vl_high_limit: u8 = [38, 1, 0, 8];
    vl_arbitration_high_cap, set_vl_arbitration_high_cap: u8 = [39, 1, 0, 8];
    vl_arbitration_low_cap, set_vl_arbitration_low_cap: u8 = [40, 1, 0, 8];
    init_type_reply, set_init_type_reply: u8 = [41, 1, 4, 4];
    mtu_cap, set_mtu_cap: u8 = [41, 1, 0, 4];
    vl_stall_count, set_vl_stall_count: u8 = [42, 1, 5, 3];
    hoq_life, set_hoq_life: u8 = [42, 1, 0, 5];
    /// 1: VL0 only, 2: VL0-1, 3: VL0-3, 4: VL0-7, 5: VL0-14.
    operational_vls, set_operational_vls: u8 = [43, 1, 4, 4];
    partition_enforcement_inbound, set_partition_enforcement_inbound: u8 = [43, 1, 3, 1];
    partition_enforcement_outbound, set_partition_enforcement_outbound: u8 = [43, 1, 2, 1];
    filter_raw_inbound, set_filter_raw_inbound: u8 = [43, 1, 1, 1];
    filter_raw_outbound, set_filter_raw_outbound: u8 = [43, 1, 0, 1];
    m_key_violations, set_m_key_violations: u16 = [44, 2, 0, 16];
    p_key_violations, set_p_key_violations: u16 = [46, 2, 0, 16];
    q_key_violations, set_q_key_violations: u16 = [48, 2, 0, 16];
    guid_cap, set_guid_cap: u8 = [50, 1, 0, 8];
    client_reregister, set_client_reregister: u8 = [51, 1, 7, 1];
    multicast_pkey_trap_suppression, set_multicast_pkey_trap_suppression: u8 = [51, 1, 5, 2];
    subnet_timeout, set_subnet_timeout: u8 = [51, 1, 0, 5];
    resp_time_value, set_resp_time_value: u8 = [52, 1, 0, 5];
    local_phy_errors, set_local_phy_errors: u8 = [53, 1, 4, 4];
    overrun_errors, set_overrun_errors: u8 = [53, 1, 0, 4];
    max_credit_hint, set_max_credit_hint: u16 = [54, 2, 0, 16];
    link_round_trip_latency, set_link_round_trip_latency: u32 = [56, 4, 0, 24];
    capability_mask2, set_capability_mask2: u16 = [60, 2, 0, 16];
    link_speed_ext_active, set_link_speed_ext_active: u8 = [62, 1, 4, 4];
    link_speed_ext_supported, set_link_speed_ext_supported: u8 = [62, 1, 0, 4];
    link_speed_ext_enabled, set_link_speed_ext_enabled: u8 = [63, 1, 0, 5];
});

impl<T: AsRef<[u8]>> PortInfo<T> {
    pub fn port_state(&self) -> PortState {
        PortState::from(self.port_state_raw())
    }

    pub fn port_phys_state(&self) -> PortPhysState {
        PortPhysState::from(self.port_phys_state_raw())
    }
}

/// The owned PortInfo. Sub-byte fields hold only their low bits when
/// emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PortInfoRepr {
    pub m_key: u64,
    pub gid_prefix: u64,
    pub lid: u16,
    pub master_sm_lid: u16,
    pub capability_mask: u32,
    pub diag_code: u16,
    pub m_key_lease_period: u16,
    pub local_port_num: u8,
    pub link_width_enabled: u8,
    pub link_width_supported: u8,
    pub link_width_active: u8,
    pub link_speed_supported: u8,
    pub port_state: u8,
    pub port_phys_state: u8,
    pub link_down_default_state: u8,
    pub m_key_protect_bits: u8,
    pub lmc: u8,
    pub link_speed_active: u8,
    pub link_speed_enabled: u8,
    pub neighbor_mtu: u8,
    pub master_sm_sl: u8,
    pub vl_cap: u8,
    pub init_type: u8,
    pub vl_high_limit: u8,
    pub vl_arbitration_high_cap: u8,
    pub vl_arbitration_low_cap: u8,
    pub init_type_reply: u8,
    pub mtu_cap: u8,
    pub vl_stall_count: u8,
    pub hoq_life: u8,
    pub operational_vls: u8,
    pub partition_enforcement_inbound: bool,
    pub partition_enforcement_outbound: bool,
    pub filter_raw_inbound: bool,
    pub filter_raw_outbound: bool,
    pub m_key_violations: u16,
    pub p_key_violations: u16,
    pub q_key_violations: u16,
    pub guid_cap: u8,
    pub client_reregister: bool,
    pub multicast_pkey_trap_suppression: u8,
    pub subnet_timeout: u8,
    pub resp_time_value: u8,
    pub local_phy_errors: u8,
    pub overrun_errors: u8,
    pub max_credit_hint: u16,
    pub link_round_trip_latency: u32,
    pub capability_mask2: u16,
    pub link_speed_ext_active: u8,
    pub link_speed_ext_supported: u8,
    pub link_speed_ext_enabled: u8,
}

impl PortInfoRepr {
    pub fn state(&self) -> PortState {
        PortState::from(self.port_state)
    }

    pub fn phys_state(&self) -> PortPhysState {
        PortPhysState::from(self.port_phys_state)
    }

    pub fn parse<T: AsRef<[u8]>>(v: &PortInfo<T>) -> Result<PortInfoRepr> {
        Ok(PortInfoRepr {
            m_key: v.m_key(),
            gid_prefix: v.gid_prefix(),
            lid: v.lid(),
            master_sm_lid: v.master_sm_lid(),
            capability_mask: v.capability_mask(),
            diag_code: v.diag_code(),
            m_key_lease_period: v.m_key_lease_period(),
            local_port_num: v.local_port_num(),
            link_width_enabled: v.link_width_enabled(),
            link_width_supported: v.link_width_supported(),
            link_width_active: v.link_width_active(),
            link_speed_supported: v.link_speed_supported(),
            port_state: v.port_state_raw(),
            port_phys_state: v.port_phys_state_raw(),
            link_down_default_state: v.link_down_default_state(),
            m_key_protect_bits: v.m_key_protect_bits(),
            lmc: v.lmc(),
            link_speed_active: v.link_speed_active(),
            link_speed_enabled: v.link_speed_enabled(),
            neighbor_mtu: v.neighbor_mtu(),
            master_sm_sl: v.master_sm_sl(),
            vl_cap: v.vl_cap(),
            init_type: v.init_type(),
            vl_high_limit: v.vl_high_limit(),
            vl_arbitration_high_cap: v.vl_arbitration_high_cap(),
            vl_arbitration_low_cap: v.vl_arbitration_low_cap(),
            init_type_reply: v.init_type_reply(),
            mtu_cap: v.mtu_cap(),
            vl_stall_count: v.vl_stall_count(),
            hoq_life: v.hoq_life(),
            operational_vls: v.operational_vls(),
            partition_enforcement_inbound: v.partition_enforcement_inbound() != 0,
            partition_enforcement_outbound: v.partition_enforcement_outbound() != 0,
            filter_raw_inbound: v.filter_raw_inbound() != 0,
            filter_raw_outbound: v.filter_raw_outbound() != 0,
            m_key_violations: v.m_key_violations(),
            p_key_violations: v.p_key_violations(),
            q_key_violations: v.q_key_violations(),
            guid_cap: v.guid_cap(),
            client_reregister: v.client_reregister() != 0,
            multicast_pkey_trap_suppression: v.multicast_pkey_trap_suppression(),
            subnet_timeout: v.subnet_timeout(),
            resp_time_value: v.resp_time_value(),
            local_phy_errors: v.local_phy_errors(),
            overrun_errors: v.overrun_errors(),
            max_credit_hint: v.max_credit_hint(),
            link_round_trip_latency: v.link_round_trip_latency(),
            capability_mask2: v.capability_mask2(),
            link_speed_ext_active: v.link_speed_ext_active(),
            link_speed_ext_supported: v.link_speed_ext_supported(),
            link_speed_ext_enabled: v.link_speed_ext_enabled(),
        })
    }

    /// Writes all 64 bytes, reserved bits zero.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, v: &mut PortInfo<T>) {
        v.buffer.as_mut()[..64].fill(0);
        v.set_m_key(self.m_key);
        v.set_gid_prefix(self.gid_prefix);
        v.set_lid(self.lid);
        v.set_master_sm_lid(self.master_sm_lid);
        v.set_capability_mask(self.capability_mask);
        v.set_diag_code(self.diag_code);
        v.set_m_key_lease_period(self.m_key_lease_period);
        v.set_local_port_num(self.local_port_num);
        v.set_link_width_enabled(self.link_width_enabled);
        v.set_link_width_supported(self.link_width_supported);
        v.set_link_width_active(self.link_width_active);
        v.set_link_speed_supported(self.link_speed_supported);
        v.set_port_state_raw(self.port_state);
        v.set_port_phys_state_raw(self.port_phys_state);
        v.set_link_down_default_state(self.link_down_default_state);
        v.set_m_key_protect_bits(self.m_key_protect_bits);
        v.set_lmc(self.lmc);
        v.set_link_speed_active(self.link_speed_active);
        v.set_link_speed_enabled(self.link_speed_enabled);
        v.set_neighbor_mtu(self.neighbor_mtu);
        v.set_master_sm_sl(self.master_sm_sl);
        v.set_vl_cap(self.vl_cap);
        v.set_init_type(self.init_type);
        v.set_vl_high_limit(self.vl_high_limit);
        v.set_vl_arbitration_high_cap(self.vl_arbitration_high_cap);
        v.set_vl_arbitration_low_cap(self.vl_arbitration_low_cap);
        v.set_init_type_reply(self.init_type_reply);
        v.set_mtu_cap(self.mtu_cap);
        v.set_vl_stall_count(self.vl_stall_count);
        v.set_hoq_life(self.hoq_life);
        v.set_operational_vls(self.operational_vls);
        v.set_partition_enforcement_inbound(u8::from(self.partition_enforcement_inbound));
        v.set_partition_enforcement_outbound(u8::from(self.partition_enforcement_outbound));
        v.set_filter_raw_inbound(u8::from(self.filter_raw_inbound));
        v.set_filter_raw_outbound(u8::from(self.filter_raw_outbound));
        v.set_m_key_violations(self.m_key_violations);
        v.set_p_key_violations(self.p_key_violations);
        v.set_q_key_violations(self.q_key_violations);
        v.set_guid_cap(self.guid_cap);
        v.set_client_reregister(u8::from(self.client_reregister));
        v.set_multicast_pkey_trap_suppression(self.multicast_pkey_trap_suppression);
        v.set_subnet_timeout(self.subnet_timeout);
        v.set_resp_time_value(self.resp_time_value);
        v.set_local_phy_errors(self.local_phy_errors);
        v.set_overrun_errors(self.overrun_errors);
        v.set_max_credit_hint(self.max_credit_hint);
        v.set_link_round_trip_latency(self.link_round_trip_latency);
        v.set_capability_mask2(self.capability_mask2);
        v.set_link_speed_ext_active(self.link_speed_ext_active);
        v.set_link_speed_ext_supported(self.link_speed_ext_supported);
        v.set_link_speed_ext_enabled(self.link_speed_ext_enabled);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::attributes::attribute_round_trip;

    attribute_round_trip!(round_trip, PortInfo, PortInfoRepr);

    #[test]
    fn golden_offsets_of_ib_port_info_t() {
        // Offsets and nibble order of OpenSM's ib_port_info_t (ib_types.h).
        let repr = PortInfoRepr {
            lid: 0x0012,
            master_sm_lid: 0x0001,
            local_port_num: 3,
            link_width_active: LinkWidth::X4,
            link_speed_supported: 7,
            port_state: PortState::Armed.into(),
            port_phys_state: PortPhysState::LinkUp.into(),
            link_down_default_state: 2,
            lmc: 2,
            link_speed_active: LinkSpeed::QDR,
            link_speed_enabled: 7,
            neighbor_mtu: 5,
            vl_cap: 4,
            operational_vls: 4,
            subnet_timeout: 18,
            client_reregister: true,
            link_round_trip_latency: 0x00ab_cdef,
            ..PortInfoRepr::default()
        };
        let mut bytes = [0xffu8; 64];
        repr.emit(&mut PortInfo::new_unchecked(&mut bytes[..]));
        assert_eq!(&bytes[16..20], &[0x00, 0x12, 0x00, 0x01]);
        assert_eq!(bytes[28], 3);
        assert_eq!(bytes[31], 0x02);
        assert_eq!(bytes[32], 0x73, "LinkSpeedSupported high nibble, PortState low");
        assert_eq!(bytes[33], 0x52, "PortPhysState high nibble, LinkDownDefault low");
        assert_eq!(bytes[34], 0x02, "LMC in the low 3 bits");
        assert_eq!(bytes[35], 0x47, "LinkSpeedActive high nibble, Enabled low");
        assert_eq!(bytes[36], 0x50);
        assert_eq!(bytes[37], 0x40);
        assert_eq!(bytes[43], 0x40, "OperationalVLs high nibble");
        assert_eq!(bytes[51], 0x80 | 18);
        assert_eq!(&bytes[56..60], &[0x00, 0xab, 0xcd, 0xef]);
        let view = PortInfo::new_checked(&bytes[..]).unwrap();
        assert_eq!(view.port_state(), PortState::Armed);
        assert_eq!(view.port_phys_state(), PortPhysState::LinkUp);
        assert_eq!(PortInfoRepr::parse(&view).unwrap(), repr);
    }
}
