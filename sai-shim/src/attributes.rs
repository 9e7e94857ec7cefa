//! Typed attributes: one enum per object type (what a caller passes to create
//! and set) and one struct per object type (the object's full state, which get
//! returns and backends receive).
//!
//! Attribute names follow SAI's (`SAI_PORT_ATTR_ADMIN_STATE` is
//! [`PortAttr::AdminState`]); references to other objects are [`ObjectId`]s,
//! checked by the object store before any backend sees them.

use std::net::{IpAddr, Ipv4Addr};

use dataplane::wire::{EthernetAddress, VlanId};

use crate::error::{SaiError, SaiResult};
use crate::object::{ObjectId, ObjectType};
use crate::qos::{BufferPool, BufferProfile, IngressPriorityGroup, QosMap, Queue, Scheduler, Wred};

/// What every attribute enum tells the generic create/set code.
pub trait Attribute: Clone + core::fmt::Debug {
    /// The SAI-like name of the attribute, used in errors.
    fn name(&self) -> &'static str;
    /// Whether the attribute can only be given at creation.
    fn create_only(&self) -> bool {
        false
    }
}

/// Rejects a create call that names the same attribute twice.
pub(crate) fn check_duplicates<A: Attribute>(object: &'static str, attrs: &[A]) -> SaiResult<()> {
    for (i, attr) in attrs.iter().enumerate() {
        if attrs[..i].iter().any(|earlier| earlier.name() == attr.name()) {
            return Err(SaiError::InvalidAttribute {
                object,
                attribute: attr.name(),
                reason: "given more than once".into(),
            });
        }
    }
    Ok(())
}

/// Rejects a set call on a create-only attribute.
pub(crate) fn check_settable<A: Attribute>(object: &'static str, attr: &A) -> SaiResult<()> {
    if attr.create_only() {
        return Err(SaiError::CreateOnlyAttribute { object, attribute: attr.name() });
    }
    Ok(())
}

fn mandatory<T>(object: ObjectType, attribute: &'static str, value: Option<T>) -> SaiResult<T> {
    value.ok_or(SaiError::MandatoryAttributeMissing { object: object.name(), attribute })
}

/// One reference from an object's attribute to another object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reference {
    pub attribute: &'static str,
    pub id: ObjectId,
    pub expected: &'static [ObjectType],
}

macro_rules! attr_names {
    ($attr:ident { $($variant:ident => $name:literal $(, create_only = $co:literal)?;)* }) => {
        impl Attribute for $attr {
            fn name(&self) -> &'static str {
                match self { $($attr::$variant(..) => $name,)* }
            }
            fn create_only(&self) -> bool {
                match self { $($attr::$variant(..) => false $(|| $co)?,)* }
            }
        }
    };
}

// ---------------------------------------------------------------- switch

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwitchAttr {
    /// Default source MAC of router interfaces.
    SrcMacAddress(EthernetAddress),
    /// Seconds after which an unrefreshed learned MAC ages out; 0 = never.
    FdbAgingTime(u32),
    /// The QoS maps classification uses, at most one of each type
    /// (SAI binds each type by its own attribute, QOS_DSCP_TO_TC_MAP...).
    QosMapList(Vec<ObjectId>),
    /// Which header gives the traffic class.
    QosTrust(qos::classify::Trust),
    /// Pause quanta in the PFC frames the switch sends.
    PfcQuanta(u16),
    /// The peers' time to act on a PFC frame, ns (for the headroom).
    PfcResponseTime(u64),
    /// How long a received frame may wait in the switch's own receive path
    /// before it is charged, ns (for the headroom; 0 on an ASIC).
    PfcRxLag(u64),
    /// SONiC's PFC watchdog, switch-wide.
    PfcWatchdog(qos::watchdog::WatchdogConfig),
    /// Dynamic load balancing of ECMP groups.
    Dlb(qos::dlb::DlbConfig),
}

attr_names!(SwitchAttr {
    SrcMacAddress => "SRC_MAC_ADDRESS";
    FdbAgingTime => "FDB_AGING_TIME";
    QosMapList => "QOS_MAP_LIST";
    QosTrust => "QOS_TRUST";
    PfcQuanta => "PFC_QUANTA";
    PfcResponseTime => "PFC_RESPONSE_TIME";
    PfcRxLag => "PFC_RX_LAG";
    PfcWatchdog => "PFC_WATCHDOG";
    Dlb => "DLB";
});

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switch {
    pub src_mac_address: EthernetAddress,
    pub fdb_aging_time: u32,
    /// Read-only: the CPU port, the next hop of routes to the switch's own addresses.
    pub cpu_port: ObjectId,
    /// Read-only: the virtual router every switch starts with.
    pub default_virtual_router: ObjectId,
    pub qos_maps: Vec<ObjectId>,
    pub qos_trust: qos::classify::Trust,
    pub pfc_quanta: u16,
    pub pfc_response_ns: u64,
    pub pfc_rx_lag_ns: u64,
    pub pfc_watchdog: qos::watchdog::WatchdogConfig,
    pub dlb: qos::dlb::DlbConfig,
}

impl Switch {
    pub(crate) fn apply(&mut self, attr: SwitchAttr) {
        match attr {
            SwitchAttr::SrcMacAddress(mac) => self.src_mac_address = mac,
            SwitchAttr::FdbAgingTime(seconds) => self.fdb_aging_time = seconds,
            SwitchAttr::QosMapList(maps) => self.qos_maps = maps,
            SwitchAttr::QosTrust(trust) => self.qos_trust = trust,
            SwitchAttr::PfcQuanta(quanta) => self.pfc_quanta = quanta,
            SwitchAttr::PfcResponseTime(ns) => self.pfc_response_ns = ns,
            SwitchAttr::PfcRxLag(ns) => self.pfc_rx_lag_ns = ns,
            SwitchAttr::PfcWatchdog(watchdog) => self.pfc_watchdog = watchdog,
            SwitchAttr::Dlb(dlb) => self.dlb = dlb,
        }
    }

    pub(crate) fn references(&self) -> Vec<Reference> {
        self.qos_maps
            .iter()
            .map(|&id| Reference { attribute: "QOS_MAP_LIST", id, expected: &[ObjectType::QosMap] })
            .collect()
    }
}

// ---------------------------------------------------------------- port

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortAttr {
    /// The front-panel name (`eth1`); mandatory, unique, create-only. The soft
    /// backend names its I/O by it, the kernel backend finds the netdev by it.
    Name(String),
    /// Default false, as in SAI.
    AdminState(bool),
    /// Largest IP packet (L3 MTU) the port sends, default 1500.
    Mtu(u16),
    /// The VLAN untagged frames belong to, default 1.
    PortVlanId(VlanId),
    /// Line rate, bits per second; 0 = none configured (the port sends as
    /// fast as its I/O takes frames).
    Speed(u64),
    /// Metres of cable to the peer (for the PFC headroom), default 5.
    CableLength(u32),
    /// Priorities PFC is enabled on, bit p for priority p.
    PriorityFlowControl(u8),
}

attr_names!(PortAttr {
    Name => "NAME", create_only = true;
    AdminState => "ADMIN_STATE";
    Mtu => "MTU";
    PortVlanId => "PORT_VLAN_ID";
    Speed => "SPEED";
    CableLength => "CABLE_LENGTH";
    PriorityFlowControl => "PRIORITY_FLOW_CONTROL";
});

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    pub name: String,
    pub admin_state: bool,
    pub mtu: u16,
    pub port_vlan_id: VlanId,
    pub speed_bps: u64,
    pub cable_length_m: u32,
    pub priority_flow_control: u8,
    /// Read-only: link state as last reported by the backend.
    pub oper_status: bool,
}

impl Port {
    pub(crate) fn build(attrs: &[PortAttr]) -> SaiResult<Port> {
        let mut name = None;
        let mut port = Port {
            name: String::new(),
            admin_state: false,
            mtu: 1500,
            port_vlan_id: 1,
            speed_bps: 0,
            cable_length_m: 5,
            priority_flow_control: 0,
            oper_status: false,
        };
        for attr in attrs {
            match attr {
                PortAttr::Name(n) => name = Some(n.clone()),
                other => port.apply(other.clone())?,
            }
        }
        port.name = mandatory(ObjectType::Port, "NAME", name)?;
        if port.name.is_empty() {
            return Err(SaiError::invalid(ObjectType::Port, "NAME", "empty"));
        }
        Ok(port)
    }

    pub(crate) fn apply(&mut self, attr: PortAttr) -> SaiResult<()> {
        match attr {
            PortAttr::Name(name) => self.name = name,
            PortAttr::AdminState(up) => self.admin_state = up,
            PortAttr::Mtu(mtu) => {
                if !(68..=9216).contains(&mtu) {
                    return Err(SaiError::invalid(ObjectType::Port, "MTU", format!("{mtu} outside 68..=9216")));
                }
                self.mtu = mtu
            }
            PortAttr::PortVlanId(vid) => {
                check_vid(ObjectType::Port, "PORT_VLAN_ID", vid)?;
                self.port_vlan_id = vid
            }
            PortAttr::Speed(bps) => self.speed_bps = bps,
            PortAttr::CableLength(metres) => self.cable_length_m = metres,
            PortAttr::PriorityFlowControl(mask) => self.priority_flow_control = mask,
        }
        Ok(())
    }
}

fn check_vid(object: ObjectType, attribute: &'static str, vid: VlanId) -> SaiResult<()> {
    if !(1..=dataplane::wire::vlan::VID_MAX).contains(&vid) {
        return Err(SaiError::invalid(object, attribute, format!("VLAN id {vid} outside 1..=4094")));
    }
    Ok(())
}

// ---------------------------------------------------------------- VLAN

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VlanAttr {
    /// The 802.1Q VLAN id; mandatory, unique, create-only.
    VlanId(VlanId),
}

attr_names!(VlanAttr {
    VlanId => "VLAN_ID", create_only = true;
});

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vlan {
    pub vlan_id: VlanId,
}

impl Vlan {
    pub(crate) fn build(attrs: &[VlanAttr]) -> SaiResult<Vlan> {
        let mut vid = None;
        for attr in attrs {
            match attr {
                VlanAttr::VlanId(v) => vid = Some(*v),
            }
        }
        let vlan_id = mandatory(ObjectType::Vlan, "VLAN_ID", vid)?;
        check_vid(ObjectType::Vlan, "VLAN_ID", vlan_id)?;
        Ok(Vlan { vlan_id })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaggingMode {
    #[default]
    Untagged,
    Tagged,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VlanMemberAttr {
    VlanId(ObjectId),
    BridgePortId(ObjectId),
    /// Default untagged. Ignored for tunnel bridge ports (the VNI identifies the VLAN).
    TaggingMode(TaggingMode),
}

attr_names!(VlanMemberAttr {
    VlanId => "VLAN_ID", create_only = true;
    BridgePortId => "BRIDGE_PORT_ID", create_only = true;
    TaggingMode => "VLAN_TAGGING_MODE";
});

/// Membership of a bridge port in a VLAN. On a tunnel bridge port, the
/// membership puts the remote VTEP on the VLAN's flood list (head-end
/// replication of broadcast, unknown unicast and multicast).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlanMember {
    pub vlan: ObjectId,
    pub bridge_port: ObjectId,
    pub tagging_mode: TaggingMode,
}

impl VlanMember {
    pub(crate) fn build(attrs: &[VlanMemberAttr]) -> SaiResult<VlanMember> {
        let (mut vlan, mut bridge_port, mut tagging_mode) = (None, None, TaggingMode::Untagged);
        for attr in attrs {
            match attr {
                VlanMemberAttr::VlanId(id) => vlan = Some(*id),
                VlanMemberAttr::BridgePortId(id) => bridge_port = Some(*id),
                VlanMemberAttr::TaggingMode(mode) => tagging_mode = *mode,
            }
        }
        Ok(VlanMember {
            vlan: mandatory(ObjectType::VlanMember, "VLAN_ID", vlan)?,
            bridge_port: mandatory(ObjectType::VlanMember, "BRIDGE_PORT_ID", bridge_port)?,
            tagging_mode,
        })
    }

    pub(crate) fn apply(&mut self, attr: VlanMemberAttr) {
        if let VlanMemberAttr::TaggingMode(mode) = attr {
            self.tagging_mode = mode;
        }
    }

    fn references(&self) -> Vec<Reference> {
        vec![
            Reference { attribute: "VLAN_ID", id: self.vlan, expected: &[ObjectType::Vlan] },
            Reference { attribute: "BRIDGE_PORT_ID", id: self.bridge_port, expected: &[ObjectType::BridgePort] },
        ]
    }
}

// ---------------------------------------------------------------- bridge port

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BridgePortType {
    /// A front-panel port.
    Port(ObjectId),
    /// A remote VTEP ([`ObjectType::TunnelEndpoint`]).
    Tunnel(ObjectId),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BridgePortAttr {
    Type(BridgePortType),
    /// Whether source MACs are learned on this bridge port; default true.
    /// Meaningful on port bridge ports only.
    Learning(bool),
}

attr_names!(BridgePortAttr {
    Type => "TYPE", create_only = true;
    Learning => "FDB_LEARNING_MODE";
});

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgePort {
    pub bridge_port_type: BridgePortType,
    pub learning: bool,
}

impl BridgePort {
    pub(crate) fn build(attrs: &[BridgePortAttr]) -> SaiResult<BridgePort> {
        let (mut kind, mut learning) = (None, true);
        for attr in attrs {
            match attr {
                BridgePortAttr::Type(t) => kind = Some(*t),
                BridgePortAttr::Learning(on) => learning = *on,
            }
        }
        Ok(BridgePort { bridge_port_type: mandatory(ObjectType::BridgePort, "TYPE", kind)?, learning })
    }

    pub(crate) fn apply(&mut self, attr: BridgePortAttr) {
        if let BridgePortAttr::Learning(on) = attr {
            self.learning = on;
        }
    }

    fn references(&self) -> Vec<Reference> {
        vec![match self.bridge_port_type {
            BridgePortType::Port(id) => Reference { attribute: "TYPE", id, expected: &[ObjectType::Port] },
            BridgePortType::Tunnel(id) => Reference { attribute: "TYPE", id, expected: &[ObjectType::TunnelEndpoint] },
        }]
    }
}

// ---------------------------------------------------------------- routing

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VirtualRouterAttr {
    /// The VRF's router MAC: the inner source of what it routes into the
    /// overlay, and the inner destination its L3VNI answers to.
    SrcMacAddress(EthernetAddress),
}

attr_names!(VirtualRouterAttr {
    SrcMacAddress => "SRC_MAC_ADDRESS", create_only = true;
});

/// A virtual router (VRF).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VirtualRouter {
    /// `None`: the switch's SRC_MAC_ADDRESS.
    pub src_mac_address: Option<EthernetAddress>,
}

impl VirtualRouter {
    pub(crate) fn build(attrs: &[VirtualRouterAttr]) -> SaiResult<VirtualRouter> {
        let mut vr = VirtualRouter::default();
        for attr in attrs {
            match attr {
                VirtualRouterAttr::SrcMacAddress(mac) => {
                    if !mac.is_unicast() || *mac == EthernetAddress::ZERO {
                        return Err(SaiError::invalid(
                            ObjectType::VirtualRouter,
                            "SRC_MAC_ADDRESS",
                            format!("{mac} is not a unicast address"),
                        ));
                    }
                    vr.src_mac_address = Some(*mac);
                }
            }
        }
        Ok(vr)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouterInterfaceType {
    /// A routed port.
    Port(ObjectId),
    /// An SVI: routing for the hosts of a VLAN.
    Vlan(ObjectId),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouterInterfaceAttr {
    VirtualRouterId(ObjectId),
    Type(RouterInterfaceType),
    /// Default: the switch's SRC_MAC_ADDRESS.
    SrcMacAddress(EthernetAddress),
    /// Default 1500.
    Mtu(u16),
    /// Default true.
    AdminState(bool),
    /// ICMP redirects for packets hair-pinned out of this interface (RFC
    /// 1812 5.2.7.2, RFC 4861 8.2); default true. Not a SAI attribute: the
    /// soft backend's pipeline sends them.
    SendRedirects(bool),
}

attr_names!(RouterInterfaceAttr {
    VirtualRouterId => "VIRTUAL_ROUTER_ID", create_only = true;
    Type => "TYPE", create_only = true;
    SrcMacAddress => "SRC_MAC_ADDRESS";
    Mtu => "MTU";
    AdminState => "ADMIN_STATE";
    SendRedirects => "SEND_REDIRECTS";
});

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterInterface {
    pub virtual_router: ObjectId,
    pub rif_type: RouterInterfaceType,
    pub src_mac_address: EthernetAddress,
    pub mtu: u16,
    pub admin_state: bool,
    pub send_redirects: bool,
}

impl RouterInterface {
    pub(crate) fn build(attrs: &[RouterInterfaceAttr], switch_mac: EthernetAddress) -> SaiResult<RouterInterface> {
        let (mut vr, mut kind) = (None, None);
        let mut rif = RouterInterface {
            virtual_router: ObjectId::from_raw(0),
            rif_type: RouterInterfaceType::Port(ObjectId::from_raw(0)),
            src_mac_address: switch_mac,
            mtu: 1500,
            admin_state: true,
            send_redirects: true,
        };
        for attr in attrs {
            match attr {
                RouterInterfaceAttr::VirtualRouterId(id) => vr = Some(*id),
                RouterInterfaceAttr::Type(t) => kind = Some(*t),
                other => rif.apply(other.clone())?,
            }
        }
        rif.virtual_router = mandatory(ObjectType::RouterInterface, "VIRTUAL_ROUTER_ID", vr)?;
        rif.rif_type = mandatory(ObjectType::RouterInterface, "TYPE", kind)?;
        Ok(rif)
    }

    pub(crate) fn apply(&mut self, attr: RouterInterfaceAttr) -> SaiResult<()> {
        match attr {
            RouterInterfaceAttr::VirtualRouterId(id) => self.virtual_router = id,
            RouterInterfaceAttr::Type(t) => self.rif_type = t,
            RouterInterfaceAttr::SrcMacAddress(mac) => {
                if !mac.is_unicast() || mac == EthernetAddress::ZERO {
                    return Err(SaiError::invalid(
                        ObjectType::RouterInterface,
                        "SRC_MAC_ADDRESS",
                        format!("{mac} is not a unicast address"),
                    ));
                }
                self.src_mac_address = mac
            }
            RouterInterfaceAttr::Mtu(mtu) => {
                if !(68..=9216).contains(&mtu) {
                    return Err(SaiError::invalid(
                        ObjectType::RouterInterface,
                        "MTU",
                        format!("{mtu} outside 68..=9216"),
                    ));
                }
                self.mtu = mtu
            }
            RouterInterfaceAttr::AdminState(up) => self.admin_state = up,
            RouterInterfaceAttr::SendRedirects(on) => self.send_redirects = on,
        }
        Ok(())
    }

    fn references(&self) -> Vec<Reference> {
        vec![
            Reference {
                attribute: "VIRTUAL_ROUTER_ID",
                id: self.virtual_router,
                expected: &[ObjectType::VirtualRouter],
            },
            match self.rif_type {
                RouterInterfaceType::Port(id) => Reference { attribute: "TYPE", id, expected: &[ObjectType::Port] },
                RouterInterfaceType::Vlan(id) => Reference { attribute: "TYPE", id, expected: &[ObjectType::Vlan] },
            },
        ]
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextHopAttr {
    Ip(IpAddr),
    RouterInterfaceId(ObjectId),
    /// With TUNNEL_VNI and TUNNEL_MAC, instead of ROUTER_INTERFACE_ID: a
    /// next hop of type TUNNEL_ENCAP, IP being the remote VTEP.
    TunnelId(ObjectId),
    TunnelVni(u32),
    /// The inner destination MAC (the remote router MAC).
    TunnelMac(EthernetAddress),
}

attr_names!(NextHopAttr {
    Ip => "IP", create_only = true;
    RouterInterfaceId => "ROUTER_INTERFACE_ID", create_only = true;
    TunnelId => "TUNNEL_ID", create_only = true;
    TunnelVni => "TUNNEL_VNI", create_only = true;
    TunnelMac => "TUNNEL_MAC", create_only = true;
});

/// SAI's next-hop types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextHopType {
    /// A neighbour on a router interface.
    Ip { router_interface: ObjectId },
    /// Across the overlay (symmetric IRB): VXLAN with `vni` through
    /// `tunnel` to the next hop's IP, the inner frame to `mac`.
    TunnelEncap { tunnel: ObjectId, vni: u32, mac: EthernetAddress },
}

/// A next hop: an IP neighbour, or a remote VTEP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextHop {
    pub ip: IpAddr,
    pub next_hop_type: NextHopType,
}

impl NextHop {
    pub(crate) fn build(attrs: &[NextHopAttr]) -> SaiResult<NextHop> {
        let (mut ip, mut rif, mut tunnel, mut vni, mut mac) = (None, None, None, None, None);
        for attr in attrs {
            match attr {
                NextHopAttr::Ip(a) => ip = Some(*a),
                NextHopAttr::RouterInterfaceId(id) => rif = Some(*id),
                NextHopAttr::TunnelId(id) => tunnel = Some(*id),
                NextHopAttr::TunnelVni(v) => vni = Some(*v),
                NextHopAttr::TunnelMac(m) => mac = Some(*m),
            }
        }
        let ip = mandatory(ObjectType::NextHop, "IP", ip)?;
        if ip.is_unspecified() || ip.is_multicast() {
            return Err(SaiError::invalid(ObjectType::NextHop, "IP", format!("{ip} is not a unicast address")));
        }
        let next_hop_type = match (rif, tunnel) {
            (Some(_), Some(_)) => {
                return Err(SaiError::invalid(
                    ObjectType::NextHop,
                    "TUNNEL_ID",
                    "a next hop is on a router interface or a tunnel",
                ));
            }
            (None, Some(tunnel)) => {
                let vni = mandatory(ObjectType::NextHop, "TUNNEL_VNI", vni)?;
                if vni > VNI_MAX {
                    return Err(SaiError::invalid(ObjectType::NextHop, "TUNNEL_VNI", format!("{vni} exceeds 24 bits")));
                }
                let mac = mandatory(ObjectType::NextHop, "TUNNEL_MAC", mac)?;
                if !mac.is_unicast() || mac == EthernetAddress::ZERO {
                    return Err(SaiError::invalid(ObjectType::NextHop, "TUNNEL_MAC", format!("{mac} is not unicast")));
                }
                if !ip.is_ipv4() {
                    return Err(SaiError::invalid(ObjectType::NextHop, "IP", "VTEPs are IPv4"));
                }
                NextHopType::TunnelEncap { tunnel, vni, mac }
            }
            (rif, None) => {
                if vni.is_some() || mac.is_some() {
                    return Err(SaiError::invalid(ObjectType::NextHop, "TUNNEL_VNI", "only a tunnel next hop has one"));
                }
                NextHopType::Ip { router_interface: mandatory(ObjectType::NextHop, "ROUTER_INTERFACE_ID", rif)? }
            }
        };
        Ok(NextHop { ip, next_hop_type })
    }

    /// The router interface of an IP next hop.
    pub fn router_interface(&self) -> Option<ObjectId> {
        match self.next_hop_type {
            NextHopType::Ip { router_interface } => Some(router_interface),
            NextHopType::TunnelEncap { .. } => None,
        }
    }

    fn references(&self) -> Vec<Reference> {
        match self.next_hop_type {
            NextHopType::Ip { router_interface } => vec![Reference {
                attribute: "ROUTER_INTERFACE_ID",
                id: router_interface,
                expected: &[ObjectType::RouterInterface],
            }],
            NextHopType::TunnelEncap { tunnel, .. } => {
                vec![Reference { attribute: "TUNNEL_ID", id: tunnel, expected: &[ObjectType::Tunnel] }]
            }
        }
    }
}

/// An ECMP group: its members are [`NextHopGroupMember`] objects; a flow's
/// 5-tuple hash picks one, or dynamic load balancing does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NextHopGroup {
    /// This group's DLB mode (SAI binds an ARS object to the group,
    /// `SAI_NEXT_HOP_GROUP_ATTR_ARS_OBJECT_ID`; here only its mode);
    /// `None`: the switch's (`SwitchAttr::Dlb`).
    pub dlb_mode: Option<qos::dlb::DlbMode>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextHopGroupAttr {
    DlbMode(Option<qos::dlb::DlbMode>),
}

attr_names!(NextHopGroupAttr {
    DlbMode => "DLB_MODE";
});

impl NextHopGroup {
    pub(crate) fn build(attrs: &[NextHopGroupAttr]) -> NextHopGroup {
        let mut group = NextHopGroup::default();
        for attr in attrs {
            group.apply(attr.clone());
        }
        group
    }

    pub(crate) fn apply(&mut self, attr: NextHopGroupAttr) {
        match attr {
            NextHopGroupAttr::DlbMode(mode) => self.dlb_mode = mode,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextHopGroupMemberAttr {
    NextHopGroupId(ObjectId),
    NextHopId(ObjectId),
}

attr_names!(NextHopGroupMemberAttr {
    NextHopGroupId => "NEXT_HOP_GROUP_ID", create_only = true;
    NextHopId => "NEXT_HOP_ID", create_only = true;
});

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextHopGroupMember {
    pub group: ObjectId,
    pub next_hop: ObjectId,
}

impl NextHopGroupMember {
    pub(crate) fn build(attrs: &[NextHopGroupMemberAttr]) -> SaiResult<NextHopGroupMember> {
        let (mut group, mut next_hop) = (None, None);
        for attr in attrs {
            match attr {
                NextHopGroupMemberAttr::NextHopGroupId(id) => group = Some(*id),
                NextHopGroupMemberAttr::NextHopId(id) => next_hop = Some(*id),
            }
        }
        Ok(NextHopGroupMember {
            group: mandatory(ObjectType::NextHopGroupMember, "NEXT_HOP_GROUP_ID", group)?,
            next_hop: mandatory(ObjectType::NextHopGroupMember, "NEXT_HOP_ID", next_hop)?,
        })
    }

    fn references(&self) -> Vec<Reference> {
        vec![
            Reference { attribute: "NEXT_HOP_GROUP_ID", id: self.group, expected: &[ObjectType::NextHopGroup] },
            Reference { attribute: "NEXT_HOP_ID", id: self.next_hop, expected: &[ObjectType::NextHop] },
        ]
    }
}

// ---------------------------------------------------------------- VXLAN

/// The IANA-assigned VXLAN UDP port (RFC 7348 section 5).
pub const VXLAN_UDP_PORT: u16 = 4789;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TunnelAttr {
    /// The local VTEP address, the outer source of encapsulated frames.
    EncapSrcIp(Ipv4Addr),
    /// Default 4789.
    UdpDstPort(u16),
}

attr_names!(TunnelAttr {
    EncapSrcIp => "ENCAP_SRC_IP";
    UdpDstPort => "VXLAN_UDP_DPORT";
});

/// A VXLAN tunnel: the switch's VTEP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tunnel {
    pub encap_src_ip: Ipv4Addr,
    pub udp_dst_port: u16,
}

impl Tunnel {
    pub(crate) fn build(attrs: &[TunnelAttr]) -> SaiResult<Tunnel> {
        let mut src = None;
        let mut tunnel = Tunnel { encap_src_ip: Ipv4Addr::UNSPECIFIED, udp_dst_port: VXLAN_UDP_PORT };
        for attr in attrs {
            match attr {
                TunnelAttr::EncapSrcIp(ip) => src = Some(*ip),
                other => tunnel.apply(other.clone())?,
            }
        }
        tunnel.apply(TunnelAttr::EncapSrcIp(mandatory(ObjectType::Tunnel, "ENCAP_SRC_IP", src)?))?;
        Ok(tunnel)
    }

    pub(crate) fn apply(&mut self, attr: TunnelAttr) -> SaiResult<()> {
        match attr {
            TunnelAttr::EncapSrcIp(ip) => {
                if ip.is_unspecified() || ip.is_multicast() || ip.is_broadcast() {
                    return Err(SaiError::invalid(ObjectType::Tunnel, "ENCAP_SRC_IP", format!("{ip} is not unicast")));
                }
                self.encap_src_ip = ip
            }
            TunnelAttr::UdpDstPort(port) => {
                if port == 0 {
                    return Err(SaiError::invalid(ObjectType::Tunnel, "VXLAN_UDP_DPORT", "port 0"));
                }
                self.udp_dst_port = port
            }
        }
        Ok(())
    }
}

/// The largest VXLAN network identifier (24 bits).
pub const VNI_MAX: u32 = (1 << 24) - 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TunnelMapEntryAttr {
    TunnelId(ObjectId),
    VlanId(ObjectId),
    /// Instead of VLAN_ID_VALUE: the VNI is an L3VNI of this virtual router.
    VirtualRouterId(ObjectId),
    Vni(u32),
}

attr_names!(TunnelMapEntryAttr {
    TunnelId => "TUNNEL_ID", create_only = true;
    VlanId => "VLAN_ID_VALUE", create_only = true;
    VirtualRouterId => "VIRTUAL_ROUTER_ID_VALUE", create_only = true;
    Vni => "VNI_ID_KEY", create_only = true;
});

/// What a VNI maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TunnelMapValue {
    /// A VLAN stretched over the VNI (an L2VNI).
    Vlan(ObjectId),
    /// A VRF routed over the VNI (an L3VNI, symmetric IRB).
    VirtualRouter(ObjectId),
}

/// Maps a VLAN or a virtual router to a VNI and back (SAI's VLAN_TO_VNI
/// and VNI_TO_VLAN, or VIRTUAL_ROUTER_ID_TO_VNI and VNI_TO_VIRTUAL_ROUTER_ID,
/// map entries in one object: each stretches over exactly one VNI).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelMapEntry {
    pub tunnel: ObjectId,
    pub value: TunnelMapValue,
    pub vni: u32,
}

impl TunnelMapEntry {
    pub(crate) fn build(attrs: &[TunnelMapEntryAttr]) -> SaiResult<TunnelMapEntry> {
        let (mut tunnel, mut value, mut vni) = (None, None, None);
        for attr in attrs {
            let next = match attr {
                TunnelMapEntryAttr::TunnelId(id) => {
                    tunnel = Some(*id);
                    continue;
                }
                TunnelMapEntryAttr::Vni(v) => {
                    vni = Some(*v);
                    continue;
                }
                TunnelMapEntryAttr::VlanId(id) => TunnelMapValue::Vlan(*id),
                TunnelMapEntryAttr::VirtualRouterId(id) => TunnelMapValue::VirtualRouter(*id),
            };
            if value.replace(next).is_some() {
                return Err(SaiError::invalid(
                    ObjectType::TunnelMapEntry,
                    "VIRTUAL_ROUTER_ID_VALUE",
                    "a VNI maps to a VLAN or a virtual router",
                ));
            }
        }
        let vni = mandatory(ObjectType::TunnelMapEntry, "VNI_ID_KEY", vni)?;
        if vni > VNI_MAX {
            return Err(SaiError::invalid(ObjectType::TunnelMapEntry, "VNI_ID_KEY", format!("{vni} exceeds 24 bits")));
        }
        Ok(TunnelMapEntry {
            tunnel: mandatory(ObjectType::TunnelMapEntry, "TUNNEL_ID", tunnel)?,
            value: mandatory(ObjectType::TunnelMapEntry, "VLAN_ID_VALUE", value)?,
            vni,
        })
    }

    /// The VLAN of an L2VNI map.
    pub fn vlan(&self) -> Option<ObjectId> {
        match self.value {
            TunnelMapValue::Vlan(vlan) => Some(vlan),
            TunnelMapValue::VirtualRouter(_) => None,
        }
    }

    fn references(&self) -> Vec<Reference> {
        let value = match self.value {
            TunnelMapValue::Vlan(id) => Reference { attribute: "VLAN_ID_VALUE", id, expected: &[ObjectType::Vlan] },
            TunnelMapValue::VirtualRouter(id) => {
                Reference { attribute: "VIRTUAL_ROUTER_ID_VALUE", id, expected: &[ObjectType::VirtualRouter] }
            }
        };
        vec![Reference { attribute: "TUNNEL_ID", id: self.tunnel, expected: &[ObjectType::Tunnel] }, value]
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TunnelEndpointAttr {
    TunnelId(ObjectId),
    RemoteIp(Ipv4Addr),
}

attr_names!(TunnelEndpointAttr {
    TunnelId => "TUNNEL_ID", create_only = true;
    RemoteIp => "REMOTE_IP", create_only = true;
});

/// A remote VTEP. A bridge port of type tunnel makes it a destination of FDB
/// entries (remote MACs) and of VLAN flooding (as a VLAN member).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelEndpoint {
    pub tunnel: ObjectId,
    pub remote_ip: Ipv4Addr,
}

impl TunnelEndpoint {
    pub(crate) fn build(attrs: &[TunnelEndpointAttr]) -> SaiResult<TunnelEndpoint> {
        let (mut tunnel, mut remote) = (None, None);
        for attr in attrs {
            match attr {
                TunnelEndpointAttr::TunnelId(id) => tunnel = Some(*id),
                TunnelEndpointAttr::RemoteIp(ip) => remote = Some(*ip),
            }
        }
        let remote_ip = mandatory(ObjectType::TunnelEndpoint, "REMOTE_IP", remote)?;
        if remote_ip.is_unspecified() || remote_ip.is_multicast() || remote_ip.is_broadcast() {
            return Err(SaiError::invalid(
                ObjectType::TunnelEndpoint,
                "REMOTE_IP",
                format!("{remote_ip} is not unicast"),
            ));
        }
        Ok(TunnelEndpoint { tunnel: mandatory(ObjectType::TunnelEndpoint, "TUNNEL_ID", tunnel)?, remote_ip })
    }

    fn references(&self) -> Vec<Reference> {
        vec![Reference { attribute: "TUNNEL_ID", id: self.tunnel, expected: &[ObjectType::Tunnel] }]
    }
}

// ---------------------------------------------------------------- host interface

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostInterfaceAttr {
    /// The netdev name the host sees (a TAP); mandatory, unique.
    Name(String),
    /// The port or router interface whose punted traffic this host interface
    /// receives and through which the host sends.
    ObjId(ObjectId),
}

attr_names!(HostInterfaceAttr {
    Name => "NAME", create_only = true;
    ObjId => "OBJ_ID", create_only = true;
});

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostInterface {
    pub name: String,
    pub obj: ObjectId,
}

impl HostInterface {
    pub(crate) fn build(attrs: &[HostInterfaceAttr]) -> SaiResult<HostInterface> {
        let (mut name, mut obj) = (None, None);
        for attr in attrs {
            match attr {
                HostInterfaceAttr::Name(n) => name = Some(n.clone()),
                HostInterfaceAttr::ObjId(id) => obj = Some(*id),
            }
        }
        let name = mandatory(ObjectType::HostInterface, "NAME", name)?;
        // Linux limits interface names to IFNAMSIZ - 1 bytes.
        if name.is_empty() || name.len() > 15 {
            return Err(SaiError::invalid(ObjectType::HostInterface, "NAME", "must be 1 to 15 bytes"));
        }
        Ok(HostInterface { name, obj: mandatory(ObjectType::HostInterface, "OBJ_ID", obj)? })
    }

    fn references(&self) -> Vec<Reference> {
        vec![Reference {
            attribute: "OBJ_ID",
            id: self.obj,
            expected: &[ObjectType::Port, ObjectType::RouterInterface],
        }]
    }
}

// ---------------------------------------------------------------- entries

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FdbEntryType {
    /// Ages out like a learned entry and may move.
    Dynamic,
    /// Never ages and never moves.
    Static,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FdbEntryAttr {
    Type(FdbEntryType),
    BridgePortId(ObjectId),
    /// A static entry that learning may still move (SAI's ALLOW_MAC_MOVE).
    AllowMacMove(bool),
}

attr_names!(FdbEntryAttr {
    Type => "TYPE";
    BridgePortId => "BRIDGE_PORT_ID";
    AllowMacMove => "ALLOW_MAC_MOVE";
});

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FdbEntry {
    pub entry_type: FdbEntryType,
    pub bridge_port: ObjectId,
    pub allow_mac_move: bool,
}

impl FdbEntry {
    pub(crate) fn build(attrs: &[FdbEntryAttr]) -> SaiResult<FdbEntry> {
        let (mut kind, mut port, mut allow_mac_move) = (None, None, false);
        for attr in attrs {
            match attr {
                FdbEntryAttr::Type(t) => kind = Some(*t),
                FdbEntryAttr::BridgePortId(id) => port = Some(*id),
                FdbEntryAttr::AllowMacMove(allow) => allow_mac_move = *allow,
            }
        }
        Ok(FdbEntry {
            entry_type: kind.ok_or(SaiError::MandatoryAttributeMissing { object: "fdb entry", attribute: "TYPE" })?,
            bridge_port: port
                .ok_or(SaiError::MandatoryAttributeMissing { object: "fdb entry", attribute: "BRIDGE_PORT_ID" })?,
            allow_mac_move,
        })
    }

    pub(crate) fn apply(&mut self, attr: FdbEntryAttr) {
        match attr {
            FdbEntryAttr::Type(t) => self.entry_type = t,
            FdbEntryAttr::BridgePortId(id) => self.bridge_port = id,
            FdbEntryAttr::AllowMacMove(allow) => self.allow_mac_move = allow,
        }
    }

    pub(crate) fn references(&self) -> Vec<Reference> {
        vec![Reference { attribute: "BRIDGE_PORT_ID", id: self.bridge_port, expected: &[ObjectType::BridgePort] }]
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PacketAction {
    /// Forward to NEXT_HOP_ID.
    #[default]
    Forward,
    /// Discard (blackhole).
    Drop,
    /// Send to the host (CPU) instead of forwarding.
    Trap,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteEntryAttr {
    /// Default forward.
    PacketAction(PacketAction),
    /// A next hop, a next-hop group, a router interface (a connected subnet)
    /// or the CPU port (an address of the switch itself). Mandatory with the
    /// forward action.
    NextHopId(Option<ObjectId>),
}

attr_names!(RouteEntryAttr {
    PacketAction => "PACKET_ACTION";
    NextHopId => "NEXT_HOP_ID";
});

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteEntry {
    pub packet_action: PacketAction,
    pub next_hop: Option<ObjectId>,
}

impl RouteEntry {
    pub(crate) fn build(attrs: &[RouteEntryAttr]) -> SaiResult<RouteEntry> {
        let mut route = RouteEntry { packet_action: PacketAction::Forward, next_hop: None };
        for attr in attrs {
            route.apply(attr.clone());
        }
        Ok(route)
    }

    pub(crate) fn apply(&mut self, attr: RouteEntryAttr) {
        match attr {
            RouteEntryAttr::PacketAction(action) => self.packet_action = action,
            RouteEntryAttr::NextHopId(id) => self.next_hop = id,
        }
    }

    pub(crate) fn references(&self) -> Vec<Reference> {
        self.next_hop
            .map(|id| Reference {
                attribute: "NEXT_HOP_ID",
                id,
                expected: &[
                    ObjectType::NextHop,
                    ObjectType::NextHopGroup,
                    ObjectType::RouterInterface,
                    ObjectType::Port,
                ],
            })
            .into_iter()
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NeighborEntryAttr {
    DstMacAddress(EthernetAddress),
}

attr_names!(NeighborEntryAttr {
    DstMacAddress => "DST_MAC_ADDRESS";
});

/// A static neighbour (the control plane's, e.g. from an EVPN type-2 route
/// with an IP). Neighbours the pipeline resolves itself are reported through
/// notifications instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeighborEntry {
    pub dst_mac_address: EthernetAddress,
}

impl NeighborEntry {
    pub(crate) fn build(attrs: &[NeighborEntryAttr]) -> SaiResult<NeighborEntry> {
        let mut mac = None;
        for attr in attrs {
            match attr {
                NeighborEntryAttr::DstMacAddress(m) => mac = Some(*m),
            }
        }
        let mac =
            mac.ok_or(SaiError::MandatoryAttributeMissing { object: "neighbor entry", attribute: "DST_MAC_ADDRESS" })?;
        let entry = NeighborEntry { dst_mac_address: mac };
        entry.validate()?;
        Ok(entry)
    }

    pub(crate) fn apply(&mut self, attr: NeighborEntryAttr) -> SaiResult<()> {
        match attr {
            NeighborEntryAttr::DstMacAddress(mac) => self.dst_mac_address = mac,
        }
        self.validate()
    }

    fn validate(&self) -> SaiResult<()> {
        if !self.dst_mac_address.is_unicast() || self.dst_mac_address == EthernetAddress::ZERO {
            return Err(SaiError::entry_invalid(
                "neighbor entry",
                "DST_MAC_ADDRESS",
                format!("{} is not a unicast address", self.dst_mac_address),
            ));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------- all objects

/// The state of any id-keyed object, as backends receive it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Object {
    Switch(Switch),
    Port(Port),
    Vlan(Vlan),
    VlanMember(VlanMember),
    BridgePort(BridgePort),
    VirtualRouter(VirtualRouter),
    RouterInterface(RouterInterface),
    NextHop(NextHop),
    NextHopGroup(NextHopGroup),
    NextHopGroupMember(NextHopGroupMember),
    Tunnel(Tunnel),
    TunnelMapEntry(TunnelMapEntry),
    TunnelEndpoint(TunnelEndpoint),
    HostInterface(HostInterface),
    QosMap(QosMap),
    BufferPool(BufferPool),
    BufferProfile(BufferProfile),
    IngressPriorityGroup(IngressPriorityGroup),
    Queue(Queue),
    Scheduler(Scheduler),
    Wred(Wred),
}

impl Object {
    pub fn object_type(&self) -> ObjectType {
        match self {
            Object::Switch(_) => ObjectType::Switch,
            Object::Port(_) => ObjectType::Port,
            Object::Vlan(_) => ObjectType::Vlan,
            Object::VlanMember(_) => ObjectType::VlanMember,
            Object::BridgePort(_) => ObjectType::BridgePort,
            Object::VirtualRouter(_) => ObjectType::VirtualRouter,
            Object::RouterInterface(_) => ObjectType::RouterInterface,
            Object::NextHop(_) => ObjectType::NextHop,
            Object::NextHopGroup(_) => ObjectType::NextHopGroup,
            Object::NextHopGroupMember(_) => ObjectType::NextHopGroupMember,
            Object::Tunnel(_) => ObjectType::Tunnel,
            Object::TunnelMapEntry(_) => ObjectType::TunnelMapEntry,
            Object::TunnelEndpoint(_) => ObjectType::TunnelEndpoint,
            Object::HostInterface(_) => ObjectType::HostInterface,
            Object::QosMap(_) => ObjectType::QosMap,
            Object::BufferPool(_) => ObjectType::BufferPool,
            Object::BufferProfile(_) => ObjectType::BufferProfile,
            Object::IngressPriorityGroup(_) => ObjectType::IngressPriorityGroup,
            Object::Queue(_) => ObjectType::Queue,
            Object::Scheduler(_) => ObjectType::Scheduler,
            Object::Wred(_) => ObjectType::Wred,
        }
    }

    /// The other objects this one's attributes name; each holds a reference
    /// count on its target for as long as this object exists.
    pub fn references(&self) -> Vec<Reference> {
        match self {
            Object::VlanMember(o) => o.references(),
            Object::BridgePort(o) => o.references(),
            Object::RouterInterface(o) => o.references(),
            Object::NextHop(o) => o.references(),
            Object::NextHopGroupMember(o) => o.references(),
            Object::TunnelMapEntry(o) => o.references(),
            Object::TunnelEndpoint(o) => o.references(),
            Object::HostInterface(o) => o.references(),
            Object::Switch(o) => o.references(),
            Object::BufferProfile(o) => o.references(),
            Object::IngressPriorityGroup(o) => o.references(),
            Object::Queue(o) => o.references(),
            Object::QosMap(_) | Object::BufferPool(_) | Object::Scheduler(_) | Object::Wred(_) => Vec::new(),
            Object::Port(_)
            | Object::Vlan(_)
            | Object::VirtualRouter(_)
            | Object::NextHopGroup(_)
            | Object::Tunnel(_) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_build_defaults_and_mandatory() {
        let port = Port::build(&[PortAttr::Name("eth1".into())]).unwrap();
        assert_eq!((port.admin_state, port.mtu, port.port_vlan_id), (false, 1500, 1));
        assert_eq!(
            Port::build(&[PortAttr::AdminState(true)]),
            Err(SaiError::MandatoryAttributeMissing { object: "port", attribute: "NAME" })
        );
        assert!(matches!(
            Port::build(&[PortAttr::Name("eth1".into()), PortAttr::PortVlanId(4095)]),
            Err(SaiError::InvalidAttribute { attribute: "PORT_VLAN_ID", .. })
        ));
    }

    #[test]
    fn duplicates_and_create_only() {
        let attrs = [PortAttr::Name("a".into()), PortAttr::Mtu(1500), PortAttr::Mtu(9000)];
        assert!(matches!(check_duplicates("port", &attrs), Err(SaiError::InvalidAttribute { attribute: "MTU", .. })));
        assert!(check_settable("port", &PortAttr::Name("b".into())).is_err());
        assert!(check_settable("port", &PortAttr::Mtu(9000)).is_ok());
    }

    #[test]
    fn vni_is_24_bits() {
        let id = ObjectId::new(ObjectType::Tunnel, 1);
        let vlan = ObjectId::new(ObjectType::Vlan, 2);
        let attrs =
            [TunnelMapEntryAttr::TunnelId(id), TunnelMapEntryAttr::VlanId(vlan), TunnelMapEntryAttr::Vni(1 << 24)];
        assert!(matches!(TunnelMapEntry::build(&attrs), Err(SaiError::InvalidAttribute { .. })));
    }
}
