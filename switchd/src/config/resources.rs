//! What the switch reserves: its table sizes (`profile:`) and the memory of
//! each AF_PACKET port's rings (`port_rings:`). A lab runs tens of switches
//! on one machine, each of which needs little; the defaults suit one switch
//! carrying real traffic.
//!
//! ```yaml
//! profile: small               # default | small | large
//! port_rings:                  # per afpacket port; default 8192 / 2048
//!   rx_kib: 256
//!   tx_kib: 64
//!   slot_bytes: 512            # optional; default: a frame of the port's MTU
//! ```
//!
//! A ring's memory is allocated when the port opens and becomes resident as
//! the kernel writes its slots in turn, busy or idle. Slots of the MTU cost a
//! jumbo port 16 KiB each; `slot_bytes` smaller than that keeps as many slots
//! in less memory, and each frame longer than a slot is read from the
//! socket's own queue instead (memory only while it waits; a copy and a
//! system call per frame), see `dataplane::io::afpacket`.

use dataplane::io::AfPacketConfig;
use dataplane::pipeline::SwitchConfig;
use serde::{Deserialize, Serialize};

/// The table sizes of the pipeline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// A data-centre switch: 64k MACs, 256k routes, 16k neighbours, 64 ports.
    #[default]
    Default,
    /// A lab switch: small tables (4k MACs, 16k routes, 1k neighbours) but
    /// room for a spine's 256 ports.
    Small,
    /// A border or route-server switch: the default's tables with room for
    /// 2 Mi routes (a full Internet table twice over, or a million-route
    /// fabric).
    Large,
}

impl Profile {
    pub fn is_default(&self) -> bool {
        *self == Profile::Default
    }

    /// The pipeline's sizes for this profile.
    pub fn switch_config(self) -> SwitchConfig {
        match self {
            Profile::Default => SwitchConfig::default(),
            Profile::Small => SwitchConfig {
                max_ports: SMALL_MAX_PORTS,
                max_router_interfaces: SMALL_MAX_PORTS + 64,
                max_vrfs: 16,
                fdb_capacity: 4096,
                route_capacity: 16 * 1024,
                neighbor_capacity: 1024,
                neighbor_hold_capacity: 64,
                event_capacity: 4096,
                dir24_min_routes: 0,
                ..SwitchConfig::default()
            },
            Profile::Large => SwitchConfig { route_capacity: LARGE_ROUTES, ..SwitchConfig::default() },
        }
    }

    /// The most ports the profile takes.
    pub fn max_ports(self) -> usize {
        usize::from(self.switch_config().max_ports)
    }
}

const SMALL_MAX_PORTS: u16 = 256;
const LARGE_ROUTES: usize = 2 * 1024 * 1024;

/// `port_rings:` as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortRingsFile {
    /// Receive ring memory per port, KiB.
    pub rx_kib: u32,
    /// Transmit ring memory per port, KiB.
    pub tx_kib: u32,
    /// Bytes per ring slot (a power of two from 512 to 65536); unset, a
    /// frame of the port's MTU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_bytes: Option<u32>,
}

/// Ring memory of each AF_PACKET port: slots as large as the port's MTU
/// needs, as many as fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRings {
    pub rx_bytes: usize,
    pub tx_bytes: usize,
    /// Bytes per slot, when not the MTU's.
    pub slot_bytes: Option<usize>,
}

impl Default for PortRings {
    /// What [`AfPacketConfig::for_mtu`] reserves: 8 MiB rx, 2 MiB tx.
    fn default() -> Self {
        PortRings { rx_bytes: 8 << 20, tx_bytes: 2 << 20, slot_bytes: None }
    }
}

/// Fewer slots than this and a burst of a few frames is lost.
pub const MIN_RING_SLOTS: usize = 16;
const MAX_RING_KIB: u32 = 256 * 1024;
const SLOT_BYTES: std::ops::RangeInclusive<u32> = dataplane::io::afpacket::MIN_FRAME_SIZE as u32..=65536;

impl PortRings {
    /// The ring geometry of a port with this MTU.
    pub fn for_mtu(self, mtu: u16) -> AfPacketConfig {
        let slot = self.slot_bytes.unwrap_or(AfPacketConfig::for_mtu(u32::from(mtu)).frame_size);
        AfPacketConfig {
            frame_size: slot,
            rx_frames: (self.rx_bytes / slot).max(MIN_RING_SLOTS),
            tx_frames: (self.tx_bytes / slot).max(MIN_RING_SLOTS),
            ..AfPacketConfig::for_mtu(u32::from(mtu))
        }
    }
}

/// Checks `port_rings` against the largest MTU of the afpacket ports: each
/// ring must hold at least [`MIN_RING_SLOTS`] slots (of that MTU, unless
/// `slot_bytes` says their size).
pub fn check_rings(file: Option<&PortRingsFile>, largest_mtu: u16, errors: &mut Vec<(String, String)>) -> PortRings {
    let Some(file) = file else { return PortRings::default() };
    if let Some(bytes) = file.slot_bytes
        && (!bytes.is_power_of_two() || !SLOT_BYTES.contains(&bytes))
    {
        errors.push((
            "port_rings.slot_bytes".to_string(),
            format!("{bytes} is not a power of two from {} to {}", SLOT_BYTES.start(), SLOT_BYTES.end()),
        ));
    }
    let slot = match file.slot_bytes {
        Some(bytes) => bytes as usize,
        None => AfPacketConfig::for_mtu(u32::from(largest_mtu)).frame_size,
    };
    let min_kib = (slot * MIN_RING_SLOTS).div_ceil(1024) as u32;
    for (field, kib) in [("rx_kib", file.rx_kib), ("tx_kib", file.tx_kib)] {
        if kib < min_kib {
            let of = match file.slot_bytes {
                Some(_) => format!("{slot}-byte slots"),
                None => format!("frames of MTU {largest_mtu} ({slot}-byte slots)"),
            };
            errors.push((
                format!("port_rings.{field}"),
                format!("{kib} KiB holds fewer than {MIN_RING_SLOTS} {of}: at least {min_kib}"),
            ));
        } else if kib > MAX_RING_KIB {
            errors.push((format!("port_rings.{field}"), format!("{kib} KiB is over the {MAX_RING_KIB} KiB limit")));
        }
    }
    PortRings {
        rx_bytes: file.rx_kib as usize * 1024,
        tx_bytes: file.tx_kib as usize * 1024,
        slot_bytes: file.slot_bytes.map(|bytes| bytes as usize),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_hold_as_many_slots_as_fit_the_memory_given() {
        let rings = PortRings { rx_bytes: 256 << 10, tx_bytes: 64 << 10, slot_bytes: None };
        let standard = rings.for_mtu(1500);
        assert_eq!((standard.frame_size, standard.rx_frames, standard.tx_frames), (2048, 128, 32));
        // Jumbo frames take larger slots: fewer of them, never under the minimum.
        let jumbo = rings.for_mtu(9100);
        assert_eq!((jumbo.frame_size, jumbo.rx_frames, jumbo.tx_frames), (16384, 16, MIN_RING_SLOTS));
        let default = PortRings::default().for_mtu(1500);
        assert_eq!(default, AfPacketConfig::for_mtu(1500));
    }

    #[test]
    fn rings_too_small_for_the_mtu_are_refused_naming_the_field() {
        let mut errors = Vec::new();
        check_rings(Some(&PortRingsFile { rx_kib: 64, tx_kib: 32, slot_bytes: None }), 1500, &mut errors);
        assert_eq!(errors, vec![]);
        check_rings(Some(&PortRingsFile { rx_kib: 64, tx_kib: 16, slot_bytes: None }), 9100, &mut errors);
        let fields: Vec<&str> = errors.iter().map(|(field, _)| field.as_str()).collect();
        assert_eq!(fields, ["port_rings.rx_kib", "port_rings.tx_kib"]);
        assert!(errors[0].1.contains("at least 256"), "{errors:?}");
    }

    #[test]
    fn slots_smaller_than_the_mtu_keep_the_slot_count_in_less_memory() {
        let mut errors = Vec::new();
        let file = PortRingsFile { rx_kib: 256, tx_kib: 32, slot_bytes: Some(1024) };
        let rings = check_rings(Some(&file), 9100, &mut errors);
        assert_eq!(errors, vec![]);
        let jumbo = rings.for_mtu(9100);
        assert_eq!((jumbo.frame_size, jumbo.rx_frames, jumbo.tx_frames, jumbo.mtu), (1024, 256, 32, 9100));
        for bytes in [256, 1500, 1 << 17] {
            let mut errors = Vec::new();
            check_rings(Some(&PortRingsFile { slot_bytes: Some(bytes), ..file }), 9100, &mut errors);
            assert_eq!(errors[0].0, "port_rings.slot_bytes", "{bytes}: {errors:?}");
        }
    }
}
