//! SwitchInfo (IBA 14.2.5.4, table 147): the switch's forwarding database
//! capacities and tops. Layout as OpenSM's `ib_switch_info_t`: 20 bytes.

use crate::packet::{Result, fixed_view, view_fields};

fixed_view!(
    /// A read/write view of SwitchInfo.
    SwitchInfo,
    20
);

view_fields!(SwitchInfo {
    /// Entries the linear forwarding table can hold (LIDs 0..cap).
    linear_fdb_cap, set_linear_fdb_cap: u16 = [0, 2, 0, 16];
    random_fdb_cap, set_random_fdb_cap: u16 = [2, 2, 0, 16];
    multicast_fdb_cap, set_multicast_fdb_cap: u16 = [4, 2, 0, 16];
    /// The highest LID the LFT holds a valid entry for; the SM sets it.
    linear_fdb_top, set_linear_fdb_top: u16 = [6, 2, 0, 16];
    default_port, set_default_port: u8 = [8, 1, 0, 8];
    default_multicast_primary_port, set_default_multicast_primary_port: u8 = [9, 1, 0, 8];
    default_multicast_not_primary_port, set_default_multicast_not_primary_port: u8 = [10, 1, 0, 8];
    life_time_value, set_life_time_value: u8 = [11, 1, 3, 5];
    /// Set by the switch when a port changed state; the SM clears it by
    /// writing 1 (IBA 14.2.5.4).
    port_state_change, set_port_state_change: u8 = [11, 1, 2, 1];
    optimized_sl_to_vl_mapping_programming, set_optimized_sl_to_vl_mapping_programming: u8 = [11, 1, 0, 2];
    lids_per_port, set_lids_per_port: u16 = [12, 2, 0, 16];
    partition_enforcement_cap, set_partition_enforcement_cap: u16 = [14, 2, 0, 16];
    inbound_enforcement_cap, set_inbound_enforcement_cap: u8 = [16, 1, 7, 1];
    outbound_enforcement_cap, set_outbound_enforcement_cap: u8 = [16, 1, 6, 1];
    filter_raw_inbound_cap, set_filter_raw_inbound_cap: u8 = [16, 1, 5, 1];
    filter_raw_outbound_cap, set_filter_raw_outbound_cap: u8 = [16, 1, 4, 1];
    enhanced_port0, set_enhanced_port0: u8 = [16, 1, 3, 1];
    multicast_fdb_top, set_multicast_fdb_top: u16 = [18, 2, 0, 16];
});

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SwitchInfoRepr {
    pub linear_fdb_cap: u16,
    pub random_fdb_cap: u16,
    pub multicast_fdb_cap: u16,
    pub linear_fdb_top: u16,
    pub default_port: u8,
    pub default_multicast_primary_port: u8,
    pub default_multicast_not_primary_port: u8,
    pub life_time_value: u8,
    pub port_state_change: bool,
    pub optimized_sl_to_vl_mapping_programming: u8,
    pub lids_per_port: u16,
    pub partition_enforcement_cap: u16,
    pub inbound_enforcement_cap: bool,
    pub outbound_enforcement_cap: bool,
    pub filter_raw_inbound_cap: bool,
    pub filter_raw_outbound_cap: bool,
    pub enhanced_port0: bool,
    pub multicast_fdb_top: u16,
}

impl SwitchInfoRepr {
    pub fn parse<T: AsRef<[u8]>>(v: &SwitchInfo<T>) -> Result<SwitchInfoRepr> {
        Ok(SwitchInfoRepr {
            linear_fdb_cap: v.linear_fdb_cap(),
            random_fdb_cap: v.random_fdb_cap(),
            multicast_fdb_cap: v.multicast_fdb_cap(),
            linear_fdb_top: v.linear_fdb_top(),
            default_port: v.default_port(),
            default_multicast_primary_port: v.default_multicast_primary_port(),
            default_multicast_not_primary_port: v.default_multicast_not_primary_port(),
            life_time_value: v.life_time_value(),
            port_state_change: v.port_state_change() != 0,
            optimized_sl_to_vl_mapping_programming: v.optimized_sl_to_vl_mapping_programming(),
            lids_per_port: v.lids_per_port(),
            partition_enforcement_cap: v.partition_enforcement_cap(),
            inbound_enforcement_cap: v.inbound_enforcement_cap() != 0,
            outbound_enforcement_cap: v.outbound_enforcement_cap() != 0,
            filter_raw_inbound_cap: v.filter_raw_inbound_cap() != 0,
            filter_raw_outbound_cap: v.filter_raw_outbound_cap() != 0,
            enhanced_port0: v.enhanced_port0() != 0,
            multicast_fdb_top: v.multicast_fdb_top(),
        })
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, v: &mut SwitchInfo<T>) {
        v.buffer.as_mut()[..20].fill(0);
        v.set_linear_fdb_cap(self.linear_fdb_cap);
        v.set_random_fdb_cap(self.random_fdb_cap);
        v.set_multicast_fdb_cap(self.multicast_fdb_cap);
        v.set_linear_fdb_top(self.linear_fdb_top);
        v.set_default_port(self.default_port);
        v.set_default_multicast_primary_port(self.default_multicast_primary_port);
        v.set_default_multicast_not_primary_port(self.default_multicast_not_primary_port);
        v.set_life_time_value(self.life_time_value);
        v.set_port_state_change(u8::from(self.port_state_change));
        v.set_optimized_sl_to_vl_mapping_programming(self.optimized_sl_to_vl_mapping_programming);
        v.set_lids_per_port(self.lids_per_port);
        v.set_partition_enforcement_cap(self.partition_enforcement_cap);
        v.set_inbound_enforcement_cap(u8::from(self.inbound_enforcement_cap));
        v.set_outbound_enforcement_cap(u8::from(self.outbound_enforcement_cap));
        v.set_filter_raw_inbound_cap(u8::from(self.filter_raw_inbound_cap));
        v.set_filter_raw_outbound_cap(u8::from(self.filter_raw_outbound_cap));
        v.set_enhanced_port0(u8::from(self.enhanced_port0));
        v.set_multicast_fdb_top(self.multicast_fdb_top);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::attributes::attribute_round_trip;

    attribute_round_trip!(round_trip, SwitchInfo, SwitchInfoRepr);

    #[test]
    fn golden_bytes() {
        let repr = SwitchInfoRepr {
            linear_fdb_cap: 0xc000,
            multicast_fdb_cap: 0x0200,
            linear_fdb_top: 0x0123,
            life_time_value: 18,
            port_state_change: true,
            enhanced_port0: true,
            ..SwitchInfoRepr::default()
        };
        let mut bytes = [0xaau8; 20];
        repr.emit(&mut SwitchInfo::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, [0xc0, 0, 0, 0, 0x02, 0, 0x01, 0x23, 0, 0, 0, (18 << 3) | 4, 0, 0, 0, 0, 0x08, 0, 0, 0]);
    }
}
