//! The forwarding tables the control plane programs, apart from the stage
//! code that reads them per packet: ids, errors, and one module per table.

mod dir24;
pub(crate) mod fib;

/// Dense index of a front-panel port, `< SwitchConfig::max_ports`, chosen by the caller.
pub type PortId = u16;
/// Dense index of a router interface, `< SwitchConfig::max_router_interfaces`.
pub type RifId = u16;
pub type NextHopId = u32;
pub type NextHopGroupId = u32;
/// A 24-bit VXLAN network identifier.
pub type Vni = u32;
/// A virtual routing and forwarding instance (its own routing table),
/// `< SwitchConfig::max_vrfs`; VRF 0 always exists.
pub type VrfId = u16;
/// The VRF every switch has, and the underlay's: router interfaces and
/// routes are in it unless they name another.
pub const DEFAULT_VRF: VrfId = 0;

/// Why a table operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableError {
    Full,
    NotFound,
    InUse,
    Invalid(&'static str),
}

impl core::fmt::Display for TableError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TableError::Full => f.write_str("table full"),
            TableError::NotFound => f.write_str("not found"),
            TableError::InUse => f.write_str("in use"),
            TableError::Invalid(why) => write!(f, "invalid: {why}"),
        }
    }
}

impl std::error::Error for TableError {}
