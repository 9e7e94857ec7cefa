//! The bridge's VLANs and FDB: VLAN membership of ports (PVID, untagged),
//! flood lists (all-zero-MAC entries on vxlan devices), static and remote
//! FDB entries, learned entries flushed on request and read back for display.

use std::net::Ipv4Addr;

use dataplane::wire::{EthernetAddress, VlanId};
use netlink_packet_core::{NLM_F_APPEND, NLM_F_CREATE, NLM_F_REPLACE};
use netlink_packet_route::link::{InfoData, InfoKind, InfoVlan, LinkAttribute, LinkFlags, LinkInfo, LinkMessage};
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourFlags, NeighbourMessage, NeighbourState,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use super::netlink::{Message, Request};
use super::vlan_aware::AwareMember;
use super::{KernelBackend, Netdev, UndoLog, kernel_error};
use crate::api::ObjectStore;
use crate::attributes::*;
use crate::backend::{FdbDetail, FdbFlush, FdbFlushType};
use crate::error::{SaiError, SaiResult};
use crate::notification::{FdbEvent, Notification};
use crate::object::{FdbEntryKey, ObjectId};

/// An AF_BRIDGE neighbour (FDB) message.
pub(super) fn fdb_message(
    ifindex: u32,
    mac: EthernetAddress,
    state: NeighbourState,
    flags: NeighbourFlags,
) -> NeighbourMessage {
    let mut message = NeighbourMessage::default();
    message.header.family = AddressFamily::Bridge;
    message.header.ifindex = ifindex;
    message.header.state = state;
    message.header.flags = flags;
    message.attributes.push(NeighbourAttribute::LinkLayerAddress(mac.0.to_vec()));
    message
}

/// The requests that delete what `message` installed: an entry of both the
/// vxlan device and the bridge (`self master`, a remote MAC) as two, the
/// device's first. In one request the kernel deletes the bridge's part
/// first and stops there when it is gone: when a host that was behind a
/// remote VTEP moves here, the bridge takes its entry over to the local
/// port (`br_fdb_update`), and the route's withdrawal then left the
/// device's entry toward the old VTEP, where the vxlan device sent the
/// host's unicast (instead of every VTEP) once the bridge forgot it.
pub(super) fn deletions(message: &NeighbourMessage) -> Vec<NeighbourMessage> {
    let both = NeighbourFlags::Own | NeighbourFlags::Controller;
    if !message.header.flags.contains(both) {
        return vec![message.clone()];
    }
    [NeighbourFlags::Own, NeighbourFlags::Controller]
        .into_iter()
        .map(|part| {
            let mut message = message.clone();
            message.header.flags = part;
            message
        })
        .collect()
}

/// What an FDB message says, read from the kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FdbRecord {
    pub ifindex: u32,
    pub mac: EthernetAddress,
    pub vid: Option<VlanId>,
    pub master: Option<u32>,
    pub dst: Option<Ipv4Addr>,
    pub state: NeighbourState,
    pub flags: NeighbourFlags,
}

impl FdbRecord {
    pub(super) fn of(message: &NeighbourMessage) -> Option<FdbRecord> {
        if message.header.family != AddressFamily::Bridge {
            return None;
        }
        let mut record = FdbRecord {
            ifindex: message.header.ifindex,
            mac: EthernetAddress::ZERO,
            vid: None,
            master: None,
            dst: None,
            state: message.header.state,
            flags: message.header.flags,
        };
        let mut has_mac = false;
        for attribute in &message.attributes {
            match attribute {
                NeighbourAttribute::LinkLayerAddress(mac) if mac.len() == 6 => {
                    record.mac = EthernetAddress(mac[..6].try_into().expect("6 bytes"));
                    has_mac = true;
                }
                NeighbourAttribute::Vlan(vid) => record.vid = Some(*vid),
                NeighbourAttribute::Controller(master) => record.master = Some(*master),
                NeighbourAttribute::Destination(NeighbourAddress::Inet(ip)) => record.dst = Some(*ip),
                // In an AF_BRIDGE message the crate cannot tell the VTEP's
                // family from the header, and leaves the bytes raw.
                NeighbourAttribute::Destination(NeighbourAddress::Other(bytes)) if bytes.len() == 4 => {
                    record.dst = Some(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]));
                }
                _ => {}
            }
        }
        has_mac.then_some(record)
    }

    /// Learned by a bridge itself: not static, not local, not installed by
    /// a control plane (`extern_learn`), not a device's own (`self`) entry.
    pub(super) fn is_learned(&self) -> bool {
        self.master.is_some()
            && !matches!(self.state, NeighbourState::Noarp | NeighbourState::Permanent)
            && !self.flags.intersects(NeighbourFlags::ExtLearned | NeighbourFlags::Own)
    }
}

impl KernelBackend {
    /// The VLAN of an FDB record: the VLAN whose bridge holds it, or in
    /// the VLAN-aware bridge the record's own `vlan`.
    pub(super) fn vid_of_record(&self, record: &FdbRecord) -> Option<VlanId> {
        match self.vlan_aware_bridge() {
            Some(bridge) => record.vid.filter(|_| record.master == Some(bridge.ifindex)),
            None => record.master.and_then(|master| self.vid_of_bridge.get(&master).copied()),
        }
    }

    /// In the VLAN-aware bridge an FDB entry names its VLAN (`NDA_VLAN`).
    fn with_vlan(&self, mut message: NeighbourMessage, vid: VlanId) -> NeighbourMessage {
        if self.vlan_aware_bridge().is_some() {
            message.attributes.push(NeighbourAttribute::Vlan(vid));
        }
        message
    }

    fn member_port(&self, store: &ObjectStore, bridge_port: ObjectId) -> SaiResult<Option<(ObjectId, Netdev)>> {
        match store.bridge_port(bridge_port).map(|b| b.bridge_port_type) {
            Some(BridgePortType::Port(port)) => Ok(Some((port, self.port(port)?.clone()))),
            Some(BridgePortType::Tunnel(_)) => Ok(None),
            None => Err(SaiError::UnknownObject(bridge_port)),
        }
    }

    /// Whether `bridge_port` learns (a bridge port's default).
    fn learns(&self, store: &ObjectStore, bridge_port: ObjectId) -> bool {
        store.bridge_port(bridge_port).is_none_or(|b| b.learning)
    }

    fn remote_of(&self, store: &ObjectStore, bridge_port: ObjectId) -> SaiResult<Ipv4Addr> {
        match store.bridge_port(bridge_port).map(|b| b.bridge_port_type) {
            Some(BridgePortType::Tunnel(endpoint)) => {
                Ok(store.tunnel_endpoint(endpoint).ok_or(SaiError::UnknownObject(endpoint))?.remote_ip)
            }
            _ => Err(SaiError::UnknownObject(bridge_port)),
        }
    }

    fn vxlan_of(&self, vid: VlanId) -> SaiResult<&(u32, Netdev)> {
        self.vxlans.get(&vid).ok_or_else(|| SaiError::InvalidAttribute {
            object: "vlan member",
            attribute: "VLAN_ID",
            reason: format!("vlan {vid} is mapped to no VNI"),
        })
    }

    /// The head-end replication entry of `remote` on a vxlan device.
    fn flood_entry(&self, vxlan: &Netdev, remote: Ipv4Addr) -> NeighbourMessage {
        let mut message =
            fdb_message(vxlan.ifindex, EthernetAddress::ZERO, NeighbourState::Permanent, NeighbourFlags::Own);
        message.attributes.push(NeighbourAttribute::Destination(NeighbourAddress::Inet(remote)));
        message
    }

    pub(super) fn create_vlan_member(
        &mut self,
        store: &ObjectStore,
        log: &mut UndoLog,
        member: &VlanMember,
    ) -> SaiResult<()> {
        let vid = self.vid(member.vlan)?;
        let bridge = self.bridge(vid)?.clone();
        match self.member_port(store, member.bridge_port)? {
            Some((port, netdev)) => {
                let learning = store.bridge_port(member.bridge_port).is_none_or(|b| b.learning);
                let port_state = store.port(port).ok_or(SaiError::UnknownObject(port))?;
                if self.vlan_aware_bridge().is_some() {
                    let member =
                        AwareMember { port, vid, tagging: member.tagging_mode, pvid: port_state.port_vlan_id == vid };
                    return self.create_aware_member(log, &bridge, &netdev, member, learning);
                }
                match member.tagging_mode {
                    TaggingMode::Untagged => {
                        if port_state.port_vlan_id != vid {
                            return Err(SaiError::NotSupported(format!(
                                "the kernel backend bridges a port's untagged frames in its PORT_VLAN_ID \
                                 ({}), not in vlan {vid}",
                                port_state.port_vlan_id
                            )));
                        }
                        if let Some(other) = self.untagged_vlan.get(&port) {
                            return Err(SaiError::NotSupported(format!(
                                "{} is an untagged member of vlan {other} already",
                                netdev.name
                            )));
                        }
                        self.enslave(log, &netdev, &bridge)?;
                        if !learning {
                            self.set_learning(log, &netdev, false)?;
                        }
                        self.untagged_vlan.insert(port, vid);
                    }
                    TaggingMode::Tagged => {
                        let mut message = LinkMessage::default();
                        message
                            .attributes
                            .push(LinkAttribute::IfName(self.config.subinterface_name(&netdev.name, vid)));
                        message.attributes.push(LinkAttribute::Link(netdev.ifindex));
                        message.attributes.push(LinkAttribute::Controller(bridge.ifindex));
                        message.attributes.push(LinkAttribute::LinkInfo(vec![
                            LinkInfo::Kind(InfoKind::Vlan),
                            LinkInfo::Data(InfoData::Vlan(vec![InfoVlan::Id(vid)])),
                        ]));
                        message.header.flags |= LinkFlags::Up;
                        message.header.change_mask |= LinkFlags::Up;
                        let device =
                            self.create_device(log, &format!("tagged vlan {vid} of {}", netdev.name), message)?;
                        if !learning {
                            self.set_learning(log, &device, false)?;
                        }
                        self.bridge_port_of_ifindex.insert(device.ifindex, member.bridge_port);
                        self.subinterfaces.insert((port, vid), device);
                    }
                }
                Ok(())
            }
            None => {
                let remote = self.remote_of(store, member.bridge_port)?;
                let (_, vxlan) = self.vxlan_of(vid)?.clone();
                let entry = self.flood_entry(&vxlan, remote);
                self.send(
                    log,
                    format!("flood entry {remote} on {}", vxlan.name),
                    Request::route(RouteNetlinkMessage::NewNeighbour(entry.clone()), NLM_F_CREATE | NLM_F_APPEND),
                    Some(Request::route(RouteNetlinkMessage::DelNeighbour(entry), 0)),
                )?;
                // RFC 8365 5.1: an EVPN VTEP's MACs come from the control
                // plane. The vxlan device is one bridge port for all the
                // VNI's VTEPs, so it stops learning with the first of them
                // that must not learn (else the bridge learns remote MACs
                // behind it that no route names, flooded to every VTEP).
                if !self.learns(store, member.bridge_port) {
                    let count = self.unlearning_vteps.get(&vid).copied().unwrap_or(0);
                    if count == 0 {
                        self.set_learning(log, &vxlan, false)?;
                        self.forget_learned_behind(&vxlan)?;
                    }
                    self.count_unlearning(vid, count + 1);
                }
                Ok(())
            }
        }
    }

    pub(super) fn set_vlan_member(
        &mut self,
        store: &ObjectStore,
        log: &mut UndoLog,
        old: &VlanMember,
        new: &VlanMember,
    ) -> SaiResult<()> {
        if old.tagging_mode == new.tagging_mode {
            return Ok(());
        }
        let Some((port, netdev)) = self.member_port(store, new.bridge_port)? else { return Ok(()) };
        if self.vlan_aware_bridge().is_some() {
            let vid = self.vid(new.vlan)?;
            let pvid = store.port(port).is_some_and(|p| p.port_vlan_id == vid);
            return self.reflag_aware_member(
                log,
                port,
                &netdev,
                vid,
                (old.tagging_mode, pvid),
                (new.tagging_mode, pvid),
            );
        }
        // Untagged is the port itself in the bridge, tagged an 802.1Q
        // device: a change of mode is a new membership.
        self.remove_vlan_member(store, log, old)?;
        self.create_vlan_member(store, log, new)
    }

    pub(super) fn remove_vlan_member(
        &mut self,
        store: &ObjectStore,
        log: &mut UndoLog,
        member: &VlanMember,
    ) -> SaiResult<()> {
        let vid = self.vid(member.vlan)?;
        match self.member_port(store, member.bridge_port)? {
            Some((port, netdev)) => {
                let bridge = self.bridge(vid)?.clone();
                let gone = match member.tagging_mode {
                    _ if self.vlan_aware_bridge().is_some() => {
                        let pvid = store.port(port).map_or(0, |p| p.port_vlan_id);
                        self.remove_aware_member(log, &bridge, port, &netdev, vid, pvid)?;
                        netdev.ifindex
                    }
                    TaggingMode::Untagged => {
                        self.release(log, &netdev, &bridge)?;
                        self.untagged_vlan.remove(&port);
                        netdev.ifindex
                    }
                    TaggingMode::Tagged => {
                        let Some(device) = self.subinterfaces.get(&(port, vid)).cloned() else { return Ok(()) };
                        // Deleting a device cannot be undone; it is the
                        // call's only and last request.
                        self.netlink
                            .request(&super::link::delete_link(device.ifindex))
                            .map_err(|e| kernel_error(format!("delete {}", device.name), e))?;
                        self.subinterfaces.remove(&(port, vid));
                        self.bridge_port_of_ifindex.remove(&device.ifindex);
                        device.ifindex
                    }
                };
                let bridge_port = member.bridge_port;
                self.forget_learned(
                    |entry_vid, _, ifindex| entry_vid == vid && ifindex == gone,
                    Some(bridge_port),
                    store,
                );
                Ok(())
            }
            None => {
                let remote = self.remote_of(store, member.bridge_port)?;
                let unlearning = !self.learns(store, member.bridge_port);
                let count = self.unlearning_vteps.get(&vid).copied().unwrap_or(0);
                let Some((_, vxlan)) = self.vxlans.get(&vid).cloned() else {
                    // The vxlan device went with its VNI map already.
                    if unlearning {
                        self.count_unlearning(vid, count.saturating_sub(1));
                    }
                    return Ok(());
                };
                let entry = self.flood_entry(&vxlan, remote);
                self.send(
                    log,
                    format!("flood entry {remote} off {}", vxlan.name),
                    Request::route(RouteNetlinkMessage::DelNeighbour(entry.clone()), 0),
                    Some(Request::route(RouteNetlinkMessage::NewNeighbour(entry), NLM_F_CREATE | NLM_F_APPEND)),
                )?;
                if unlearning {
                    // The last such VTEP gone: the port learns again.
                    if count == 1 {
                        self.set_learning(log, &vxlan, true)?;
                    }
                    self.count_unlearning(vid, count.saturating_sub(1));
                }
                Ok(())
            }
        }
    }

    /// Deletes what the bridge learned behind `vxlan` before it stopped
    /// learning: frames that came in from the overlay between the device's
    /// creation and its first EVPN VTEP (a restarted leaf hears the other
    /// VTEPs flooding to it before its own routes arrive). Such entries
    /// name no VTEP, so the device would flood to them, and they would
    /// stand for the ageing time beside what the routes say.
    fn forget_learned_behind(&mut self, vxlan: &Netdev) -> SaiResult<()> {
        for record in self.dump_fdb()? {
            if record.ifindex != vxlan.ifindex || !record.is_learned() {
                continue;
            }
            let Some(vid) = self.vid_of_record(&record) else { continue };
            let message =
                self.with_vlan(fdb_message(record.ifindex, record.mac, record.state, NeighbourFlags::Controller), vid);
            match self.netlink.request(&Request::route(RouteNetlinkMessage::DelNeighbour(message), 0)) {
                Ok(()) => {}
                Err(error) if error.errno == libc::ENOENT => {}
                Err(error) => return Err(kernel_error(format!("forgetting {} on {}", record.mac, vxlan.name), error)),
            }
        }
        Ok(())
    }

    fn count_unlearning(&mut self, vid: VlanId, count: usize) {
        match count {
            0 => self.unlearning_vteps.remove(&vid),
            count => self.unlearning_vteps.insert(vid, count),
        };
    }

    // ------------------------------------------------------------ FDB

    /// The messages that install an FDB entry: on a port, a bridge entry;
    /// behind a remote VTEP, the vxlan device's entry with the VTEP as `dst`
    /// and the bridge's entry on the vxlan port, both `extern_learn` (as
    /// zebra installs EVPN MACs) in one message (`self master`). A static
    /// remote MAC that must not move is two messages, the device's entry
    /// `permanent` and the bridge's `noarp` (static) `sticky`: the kernel
    /// refuses `noarp` in the one `self master` message (EINVAL), and its
    /// bridge moves a static entry that is not sticky to the port a frame
    /// from the MAC comes in on (`br_fdb_update`).
    fn fdb_requests(
        &self,
        store: &ObjectStore,
        key: &FdbEntryKey,
        entry: &FdbEntry,
    ) -> SaiResult<Vec<NeighbourMessage>> {
        let vid = self.vid(key.vlan)?;
        // A static entry that allows moves (EVPN's remote MACs) is, as zebra
        // installs a non-sticky remote MAC, reachable rather than NOARP, so
        // the bridge lets a host that moved here take it over.
        let dynamic = entry.entry_type == FdbEntryType::Dynamic || entry.allow_mac_move;
        let messages = match self.member_port(store, entry.bridge_port)? {
            Some((port, netdev)) => vec![fdb_message(
                match self.subinterfaces.get(&(port, vid)) {
                    Some(device) => device.ifindex,
                    None => netdev.ifindex,
                },
                key.mac,
                if dynamic { NeighbourState::Reachable } else { NeighbourState::Noarp },
                if dynamic { NeighbourFlags::Controller } else { NeighbourFlags::Controller | NeighbourFlags::Sticky },
            )],
            None => {
                let remote = self.remote_of(store, entry.bridge_port)?;
                let (_, vxlan) = self.vxlan_of(vid)?;
                let with_dst = |mut message: NeighbourMessage| {
                    message.attributes.push(NeighbourAttribute::Destination(NeighbourAddress::Inet(remote)));
                    message
                };
                if dynamic {
                    vec![with_dst(fdb_message(
                        vxlan.ifindex,
                        key.mac,
                        NeighbourState::Reachable,
                        NeighbourFlags::Own | NeighbourFlags::Controller | NeighbourFlags::ExtLearned,
                    ))]
                } else {
                    vec![
                        with_dst(fdb_message(vxlan.ifindex, key.mac, NeighbourState::Permanent, NeighbourFlags::Own)),
                        fdb_message(
                            vxlan.ifindex,
                            key.mac,
                            NeighbourState::Noarp,
                            NeighbourFlags::Controller | NeighbourFlags::Sticky,
                        ),
                    ]
                }
            }
        };
        Ok(messages.into_iter().map(|message| self.with_vlan(message, vid)).collect())
    }

    pub(super) fn install_fdb_entry(
        &mut self,
        store: &ObjectStore,
        log: &mut UndoLog,
        key: &FdbEntryKey,
        entry: &FdbEntry,
        replacing: bool,
    ) -> SaiResult<()> {
        let vid = self.vid(key.vlan)?;
        for message in self.fdb_requests(store, key, entry)? {
            self.send(
                log,
                format!("fdb entry {} in vlan {vid}", key.mac),
                Request::route(RouteNetlinkMessage::NewNeighbour(message.clone()), NLM_F_CREATE | NLM_F_REPLACE),
                (!replacing).then(|| Request::route(RouteNetlinkMessage::DelNeighbour(message), 0)),
            )?;
        }
        // A control-plane entry replaces a learned one.
        self.learned.remove(&(vid, key.mac));
        Ok(())
    }

    pub(super) fn uninstall_fdb_entry(
        &mut self,
        store: &ObjectStore,
        log: &mut UndoLog,
        key: &FdbEntryKey,
        entry: &FdbEntry,
        replacing: bool,
    ) -> SaiResult<()> {
        for message in self.fdb_requests(store, key, entry)? {
            let mut removed = false;
            for part in deletions(&message) {
                match self.netlink.request(&Request::route(RouteNetlinkMessage::DelNeighbour(part), 0)) {
                    Ok(()) => removed = true,
                    // Gone already (its port left the bridge, its device
                    // went, the bridge moved the MAC to a local port).
                    Err(error) if [libc::ENOENT, libc::ENODEV].contains(&error.errno) => {}
                    Err(error) => return Err(kernel_error(format!("removing fdb entry {}", key.mac), error)),
                }
            }
            if removed && !replacing {
                log.push(Request::route(RouteNetlinkMessage::NewNeighbour(message), NLM_F_CREATE | NLM_F_REPLACE));
            }
        }
        Ok(())
    }

    /// The bridge FDB as the kernel holds it, with remote VTEPs of overlay MACs.
    fn dump_fdb(&self) -> SaiResult<Vec<FdbRecord>> {
        let mut query = NeighbourMessage::default();
        query.header.family = AddressFamily::Bridge;
        let messages = self
            .netlink
            .dump(Message::Route(RouteNetlinkMessage::GetNeighbour(query)))
            .map_err(|e| kernel_error("reading the bridge fdb", e))?;
        Ok(messages
            .iter()
            .filter_map(|message| match message {
                Message::Route(RouteNetlinkMessage::NewNeighbour(neighbour)) => FdbRecord::of(neighbour),
                _ => None,
            })
            .collect())
    }

    pub(super) fn read_fdb(&self) -> SaiResult<Vec<FdbDetail>> {
        let records = self.dump_fdb()?;
        let vxlan_ifindexes: Vec<u32> = self.vxlans.values().map(|(_, netdev)| netdev.ifindex).collect();
        let mut out = Vec::new();
        for record in &records {
            if record.state == NeighbourState::Permanent || record.mac == EthernetAddress::ZERO {
                continue;
            }
            let Some(vid) = self.vid_of_record(record) else { continue };
            let Some(&vlan) = self.vlan_of_vid.get(&vid) else { continue };
            let (bridge_port, remote_vtep) = if vxlan_ifindexes.contains(&record.ifindex) {
                // The vxlan device's own entry for the MAC names the VTEP;
                // a MAC the bridge learned behind a device that learns
                // nothing is behind the VNI's only flood VTEP, if it has one.
                let own = records
                    .iter()
                    .find(|r| r.ifindex == record.ifindex && r.mac == record.mac && r.dst.is_some())
                    .and_then(|r| r.dst);
                let flooded: Vec<Ipv4Addr> = records
                    .iter()
                    .filter(|r| r.ifindex == record.ifindex && r.mac == EthernetAddress::ZERO)
                    .filter_map(|r| r.dst)
                    .collect();
                let Some(remote) = own.or(match flooded[..] {
                    [only] => Some(only),
                    _ => None,
                }) else {
                    continue;
                };
                let Some(&bridge_port) = self.bridge_port_of_remote.get(&remote) else { continue };
                (bridge_port, Some(remote))
            } else {
                let Some(&bridge_port) = self.bridge_port_of_ifindex.get(&record.ifindex) else { continue };
                (bridge_port, None)
            };
            let entry_type =
                if record.state == NeighbourState::Noarp { FdbEntryType::Static } else { FdbEntryType::Dynamic };
            out.push(FdbDetail {
                key: FdbEntryKey { vlan, mac: record.mac },
                entry: FdbEntry { entry_type, bridge_port, allow_mac_move: false },
                remote_vtep,
                last_seen_ns: None,
            });
        }
        out.sort_by_key(|detail| detail.key);
        out.dedup_by_key(|detail| detail.key);
        Ok(out)
    }

    /// Removes learned entries matching `filter` from the kernel and reports
    /// each as flushed.
    pub(super) fn flush_learned(&mut self, store: &ObjectStore, filter: &FdbFlush) -> SaiResult<()> {
        if filter.entry_type == FdbFlushType::Static {
            return Ok(());
        }
        let vid = filter.vlan.map(|vlan| self.vid(vlan)).transpose()?;
        let ifindexes = match filter.bridge_port {
            Some(bridge_port) => match self.member_port(store, bridge_port)? {
                Some((port, netdev)) => {
                    let mut ifindexes = vec![netdev.ifindex];
                    ifindexes
                        .extend(self.subinterfaces.iter().filter(|((p, _), _)| *p == port).map(|(_, d)| d.ifindex));
                    Some(ifindexes)
                }
                // MACs behind a remote VTEP are the control plane's entries.
                None => return Ok(()),
            },
            None => None,
        };
        self.read_monitor();
        for record in self.dump_fdb()? {
            let Some(record_vid) = self.vid_of_record(&record) else { continue };
            if !record.is_learned()
                || vid.is_some_and(|vid| record_vid != vid)
                || ifindexes.as_ref().is_some_and(|ifindexes| !ifindexes.contains(&record.ifindex))
            {
                continue;
            }
            let message = self.with_vlan(
                fdb_message(record.ifindex, record.mac, record.state, NeighbourFlags::Controller),
                record_vid,
            );
            match self.netlink.request(&Request::route(RouteNetlinkMessage::DelNeighbour(message), 0)) {
                Ok(()) => {}
                Err(error) if error.errno == libc::ENOENT => {}
                Err(error) => return Err(kernel_error(format!("flushing {}", record.mac), error)),
            }
            let vid = record_vid;
            self.learned.remove(&(vid, record.mac));
            if let Some(&vlan) = self.vlan_of_vid.get(&vid) {
                self.notifications.push(Notification::Fdb {
                    event: FdbEvent::Flushed,
                    entry: FdbEntryKey { vlan, mac: record.mac },
                    bridge_port: self.bridge_port_of_ifindex.get(&record.ifindex).copied(),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use netlink_packet_core::{NLM_F_ACK, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload};

    use super::*;

    /// `bridge fdb replace 02:00:00:00:00:01 dev vA master dynamic vlan 10`
    /// (vA ifindex 3), captured with `strace -e trace=sendmsg -e write=3`.
    const FDB_REPLACE_DYNAMIC_VLAN: &[u8] = &[
        0x30, 0x00, 0x00, 0x00, 0x1c, 0x00, 0x05, 0x05, 0xa0, 0xf5, 0x07, 0x6b, 0x00, 0x00, 0x00, 0x00, //
        0x07, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x02, 0x00, 0x04, 0x00, 0x0a, 0x00, 0x02, 0x00, //
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x06, 0x00, 0x05, 0x00, 0x0a, 0x00, 0x00, 0x00,
    ];

    /// An FDB entry of the VLAN-aware bridge is iproute2's with `vlan`.
    #[test]
    fn a_vlan_fdb_entry_is_iproute2s() {
        let mut message =
            fdb_message(3, EthernetAddress([2, 0, 0, 0, 0, 1]), NeighbourState::Reachable, NeighbourFlags::Controller);
        message.attributes.push(NeighbourAttribute::Vlan(10));
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE;
        header.sequence_number = 0x6b07_f5a0;
        let mut packet = NetlinkMessage::new(
            header,
            NetlinkPayload::InnerMessage(Message::Route(RouteNetlinkMessage::NewNeighbour(message))),
        );
        packet.finalize();
        let mut bytes = vec![0; packet.buffer_len()];
        packet.serialize(&mut bytes);
        assert_eq!(bytes, FDB_REPLACE_DYNAMIC_VLAN);
    }
}
