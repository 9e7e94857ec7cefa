//! The soft backend's forwarding in a running daemon, and how a commit
//! moves it: the front-panel ports' I/O the forwarding thread reads and
//! writes, the host interfaces (the shim's host interface objects and
//! their TAPs, with the switch's addresses) and the loopback addresses
//! on `lo`.
//!
//! The same code builds them at start and follows every commit
//! ([`FollowsConfig`]): before the shim reconciles, what leaves is
//! detached from the thread, its TAP closed (so deleted) and its host
//! interface object removed, so the shim may remove the port or router
//! interface it pointed at; after, what is new is created and attached.
//! Ports and interfaces that stay are not touched, so their traffic flows
//! on through a commit.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use dataplane::io::{AfPacket, PortIo, Tap, TapConfig};
use dataplane::pipeline::PortId;
use ipnetwork::IpNetwork;
use sai_shim::backend::soft::SoftBackend;
use sai_shim::{HostInterfaceAttr, ObjectId, Sai};

use crate::apply::Applied;
use crate::backend::RunningForwarding;
use crate::commit::FollowsConfig;
use crate::config::resources::PortRings;
use crate::config::{Config, PortKind, PortMode};
use crate::forwarding::{Attachment, Forwarding, TrafficManagerSetup};
use crate::hostif::{self, HostIfSpec, LoopbackAddresses};
use crate::ib::SharedIb;

/// What a host interface serves.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum HostKey {
    /// A front-panel port (`sw-ethN`).
    Port(String),
    /// A VLAN's router interface (`vlanN`).
    Vlan(u16),
}

impl HostKey {
    fn tap_name(&self) -> String {
        match self {
            HostKey::Port(port) => hostif::port_host_name(port),
            HostKey::Vlan(vid) => hostif::vlan_host_name(*vid),
        }
    }
}

#[derive(Debug)]
struct HostState {
    /// The shim's host interface object.
    object: ObjectId,
    /// The addresses on its TAP.
    addresses: Vec<IpNetwork>,
}

/// The host interfaces `config` asks for, with their addresses. An IB-like
/// port has none: nothing of the kernel's goes out of it, and its 0x88B5
/// frames stay in the IB-like plane.
fn wanted_hosts(config: &Config) -> BTreeMap<HostKey, Vec<IpNetwork>> {
    let mut hosts = BTreeMap::new();
    for port in &config.ports {
        let addresses = match &port.mode {
            PortMode::Ib(_) => continue,
            PortMode::Routed { addresses } => addresses.clone(),
            _ => Vec::new(),
        };
        hosts.insert(HostKey::Port(port.name.clone()), addresses);
    }
    for vlan in config.vlans.iter().filter(|v| !v.addresses.is_empty()) {
        hosts.insert(HostKey::Vlan(vlan.id), vlan.addresses.clone());
    }
    hosts
}

/// The ports' I/O as `config` wants it: kind and MTU (a new MTU opens the
/// port again, its ring slots sized for it).
fn wanted_ports(config: &Config) -> BTreeMap<String, (PortKind, u16)> {
    config.ports.iter().map(|p| (p.name.clone(), (p.kind, p.mtu))).collect()
}

/// The forwarding thread and everything it reads and writes.
pub struct SoftForwarding {
    sai: Arc<Mutex<Sai<SoftBackend>>>,
    forwarding: Option<Forwarding<ObjectId>>,
    /// Ports whose I/O the thread has: pipeline index, kind and MTU.
    ports: BTreeMap<String, (PortId, (PortKind, u16))>,
    hosts: BTreeMap<HostKey, HostState>,
    loopback: LoopbackAddresses,
    /// The `qos:` the thread's traffic manager was built from.
    qos: Option<qos::tm::TmConfig>,
    /// The port object behind each pipeline index when it was built.
    tm_owners: Vec<Option<ObjectId>>,
    /// `forwarding.realtime_priority` as the thread was last told.
    realtime_priority: Option<u8>,
}

fn lock(sai: &Mutex<Sai<SoftBackend>>) -> std::sync::MutexGuard<'_, Sai<SoftBackend>> {
    sai.lock().unwrap_or_else(|e| e.into_inner())
}

impl SoftForwarding {
    /// Creates the ports' I/O, the host interfaces and the loopback
    /// addresses of `config` and starts the thread on them.
    pub fn start(
        sai: &Arc<Mutex<Sai<SoftBackend>>>,
        config: &Config,
        applied: &Applied,
        setup: TrafficManagerSetup,
        ib: Option<SharedIb>,
    ) -> Result<SoftForwarding, String> {
        let mut this = SoftForwarding {
            sai: sai.clone(),
            forwarding: None,
            ports: BTreeMap::new(),
            hosts: BTreeMap::new(),
            loopback: LoopbackAddresses::add(&[]).map_err(|e| e.to_string())?,
            qos: config.qos.clone(),
            tm_owners: setup.port_owners.clone(),
            realtime_priority: config.realtime_priority,
        };
        let attachments = this.take_up(config, applied)?;
        let forwarding = Forwarding::start_with(sai.clone(), attachments, setup, ib)
            .map_err(|e| format!("start the forwarding thread: {e}"))?;
        if config.realtime_priority.is_some() {
            forwarding.set_realtime(config.realtime_priority);
        }
        this.forwarding = Some(forwarding);
        // After forwarding, so a failure here leaves nothing behind either
        // (what forwarding made is dropped on return).
        this.loopback.set(&config.loopback).map_err(|e| e.to_string())?;
        Ok(this)
    }

    /// Creates what `target` has and this has not: host interface objects
    /// and their TAPs, port I/O; adds the new addresses of the host
    /// interfaces that stay. Returns the new attachments, for the thread.
    /// On error everything created here is undone.
    fn take_up(&mut self, target: &Config, applied: &Applied) -> Result<Vec<Attachment<ObjectId>>, String> {
        let wanted = wanted_hosts(target);
        let switch_mac = target.system_mac.0;
        let mut specs: Vec<(HostKey, HostIfSpec<ObjectId>)> = Vec::new();
        let mut new_ports: Vec<(String, PortId, PortKind, u16)> = Vec::new();
        let created = {
            let mut sai = lock(&self.sai);
            let mut create = || -> Result<(), String> {
                for (key, addresses) in wanted.iter().filter(|(key, _)| !self.hosts.contains_key(*key)) {
                    let (target_object, mac, mtu, front_panel) = match key {
                        HostKey::Port(name) => {
                            let objects = &applied.ports[name];
                            let port = target.ports.iter().find(|p| &p.name == name).expect("wanted from target");
                            let mac = match objects.router_interface {
                                Some(rif) => {
                                    sai.get_router_interface(rif).map_err(|e| e.to_string())?.src_mac_address.0
                                }
                                None => switch_mac,
                            };
                            let front = (port.kind == PortKind::Afpacket).then(|| port.name.clone());
                            (objects.port, mac, u32::from(port.mtu), front)
                        }
                        HostKey::Vlan(vid) => {
                            let rif = applied.vlans[vid].router_interface.expect("an SVI has a router interface");
                            let rif_attrs = sai.get_router_interface(rif).map_err(|e| e.to_string())?;
                            (rif, rif_attrs.src_mac_address.0, u32::from(rif_attrs.mtu), None)
                        }
                    };
                    let name = key.tap_name();
                    let object = sai
                        .create_host_interface(&[
                            HostInterfaceAttr::Name(name.clone()),
                            HostInterfaceAttr::ObjId(target_object),
                        ])
                        .map_err(|e| format!("host interface {name}: {e}"))?;
                    specs.push((
                        key.clone(),
                        HostIfSpec { name, host_if: object, mac, mtu, addresses: addresses.clone(), front_panel },
                    ));
                }
                for port in target.ports.iter().filter(|p| !self.ports.contains_key(&p.name)) {
                    let index =
                        sai.backend().port_index(applied.ports[&port.name].port).expect("applied port has an index");
                    new_ports.push((port.name.clone(), index, port.kind, port.mtu));
                }
                Ok(())
            };
            let result = create();
            if result.is_err() {
                remove_objects(&mut sai, specs.iter().map(|(_, spec)| spec.host_if));
            }
            result
        };
        created?;
        let undo = |sai: &Mutex<Sai<SoftBackend>>, specs: &[(HostKey, HostIfSpec<ObjectId>)]| {
            remove_objects(&mut lock(sai), specs.iter().map(|(_, spec)| spec.host_if));
        };
        let mut attachments = Vec::new();
        for (name, index, kind, mtu) in &new_ports {
            match open_port(name, *kind, *mtu, target.port_rings) {
                Ok(io) => attachments.push(Attachment::Port { port: *index, io }),
                Err(error) => {
                    undo(&self.sai, &specs);
                    return Err(error);
                }
            }
        }
        let host_specs: Vec<HostIfSpec<ObjectId>> = specs.iter().map(|(_, spec)| spec.clone()).collect();
        match hostif::create_host_interfaces(&host_specs) {
            Ok(hosts) => attachments.extend(hosts),
            Err(error) => {
                undo(&self.sai, &specs);
                return Err(error.to_string());
            }
        }
        // Addresses new on host interfaces that stay. Recorded before they
        // are added, so going back removes any that were.
        let mut additions = Vec::new();
        for (key, addresses) in &wanted {
            if let Some(host) = self.hosts.get_mut(key) {
                let new: Vec<IpNetwork> = addresses.iter().filter(|a| !host.addresses.contains(a)).copied().collect();
                if !new.is_empty() {
                    host.addresses.extend(&new);
                    additions.push((key.tap_name(), new));
                }
            }
        }
        for (key, spec) in specs {
            self.hosts.insert(key, HostState { object: spec.host_if, addresses: spec.addresses });
        }
        for (name, index, kind, mtu) in new_ports {
            self.ports.insert(name, (index, (kind, mtu)));
        }
        let additions: Vec<(&str, &[IpNetwork])> = additions.iter().map(|(n, a)| (n.as_str(), a.as_slice())).collect();
        hostif::add_addresses(&additions).map_err(|e| e.to_string())?;
        Ok(attachments)
    }
}

fn open_port(name: &str, kind: PortKind, mtu: u16, rings: PortRings) -> Result<Box<dyn PortIo>, String> {
    Ok(match kind {
        PortKind::Afpacket => Box::new(
            AfPacket::with_config(name, rings.for_mtu(mtu)).map_err(|e| format!("open {name} (AF_PACKET): {e}"))?,
        ),
        PortKind::Tap => Box::new(
            Tap::create(&TapConfig { name: name.to_owned(), mac: None, mtu: Some(u32::from(mtu)), up: true })
                .map_err(|e| format!("create TAP {name}: {e}"))?,
        ),
    })
}

fn remove_objects(sai: &mut Sai<SoftBackend>, objects: impl Iterator<Item = ObjectId>) {
    for object in objects {
        if let Err(error) = sai.remove(object) {
            tracing::warn!(%error, "cannot remove a host interface object");
        }
    }
}

impl FollowsConfig for SoftForwarding {
    fn remove_stale(&mut self, target: &Config, applied: &Applied) -> Result<(), String> {
        let Some(forwarding) = &self.forwarding else { return Ok(()) };
        let ports = wanted_ports(target);
        // A port with a new MTU: its socket and its host interface (`sw-ethN`,
        // the kernel's MTU for what the switch itself sends) open again.
        let new_mtu: Vec<String> = self
            .ports
            .iter()
            .filter(|(name, (_, (kind, mtu)))| ports.get(*name).is_some_and(|(k, m)| k == kind && m != mtu))
            .map(|(name, _)| name.clone())
            .collect();
        let stale_ports: Vec<String> = self
            .ports
            .iter()
            .filter(|(name, (_, kind))| ports.get(*name) != Some(kind))
            .map(|(name, _)| name.clone())
            .collect();
        for name in stale_ports {
            let (index, _) = self.ports.remove(&name).expect("listed");
            tracing::info!(port = %name, "port I/O detached");
            forwarding.detach_port(index);
        }
        let hosts = wanted_hosts(target);
        // An SVI moving to another VRF is made again: its TAP goes first.
        let moved = crate::apply_vrf::moved_svis(&lock(&self.sai), applied, target);
        let stale_hosts: Vec<HostKey> = self
            .hosts
            .keys()
            .filter(|key| {
                !hosts.contains_key(*key)
                    || matches!(key, HostKey::Vlan(id) if moved.contains(id))
                    || matches!(key, HostKey::Port(name) if new_mtu.contains(name))
            })
            .cloned()
            .collect();
        let mut removed = Vec::new();
        for key in stale_hosts {
            let host = self.hosts.remove(&key).expect("listed");
            tracing::info!(interface = %key.tap_name(), "host interface removed");
            forwarding.detach_host(host.object);
            removed.push(host.object);
        }
        // The thread closes the TAPs (deleting them) and lets go of the
        // ports' sockets; the shim lock is not held while it does.
        forwarding.sync();
        remove_objects(&mut lock(&self.sai), removed.into_iter());
        let mut removals = Vec::new();
        for (key, host) in self.hosts.iter_mut() {
            let stale: Vec<IpNetwork> = host.addresses.iter().filter(|a| !hosts[key].contains(a)).copied().collect();
            if !stale.is_empty() {
                host.addresses.retain(|a| !stale.contains(a));
                removals.push((key.tap_name(), stale));
            }
        }
        let removals: Vec<(&str, &[IpNetwork])> = removals.iter().map(|(n, a)| (n.as_str(), a.as_slice())).collect();
        hostif::remove_addresses(&removals).map_err(|e| e.to_string())?;
        let kept: Vec<IpNetwork> =
            self.loopback.addresses().iter().filter(|a| target.loopback.contains(a)).copied().collect();
        self.loopback.set(&kept).map_err(|e| e.to_string())
    }

    fn add_missing(&mut self, target: &Config, applied: &Applied) -> Result<(), String> {
        if self.forwarding.is_none() {
            return Ok(());
        }
        let attachments = self.take_up(target, applied)?;
        let forwarding = self.forwarding.as_ref().expect("checked");
        let owners = crate::backend::port_owners(&lock(&self.sai));
        if traffic_manager_stale(&self.qos, &target.qos, &self.tm_owners, &owners) {
            // The shim holds the new QoS objects and ports: the traffic
            // manager they describe replaces the running one (built under
            // the shim's lock, handed over without it: the thread takes
            // that lock). Before the new ports are attached, so the frames
            // queued for a removed port whose index a new port took are
            // dropped before that port could send them.
            let setup = crate::backend::traffic_manager(&mut lock(&self.sai), target).map_err(|e| e.to_string())?;
            let owners = setup.port_owners.clone();
            forwarding.replace_traffic_manager(setup);
            for attachment in attachments {
                forwarding.attach(attachment);
            }
            forwarding.sync();
            self.qos = target.qos.clone();
            self.tm_owners = owners;
            tracing::info!("traffic manager follows the new qos: and ports");
        } else {
            for attachment in attachments {
                forwarding.attach(attachment);
            }
        }
        if target.realtime_priority != self.realtime_priority {
            forwarding.set_realtime(target.realtime_priority);
            self.realtime_priority = target.realtime_priority;
        }
        self.loopback.set(&target.loopback).map_err(|e| e.to_string())
    }
}

/// Whether the running traffic manager (built from `running` `qos:` for
/// the ports `running_owners`) must be made again for `target` and the
/// shim's ports now (`owners`): a new `qos:` or port speed, or a port
/// removed, even when a port the commit added took its index and the same
/// settings (the old one would send that port's queued frames out of the
/// new one, and hold its peer's pauses and counters for it).
fn traffic_manager_stale(
    running: &Option<qos::tm::TmConfig>,
    target: &Option<qos::tm::TmConfig>,
    running_owners: &[Option<ObjectId>],
    owners: &[Option<ObjectId>],
) -> bool {
    running != target || !crate::forwarding::renumbered_ports(running_owners, owners).is_empty()
}

impl RunningForwarding for SoftForwarding {
    fn io_stats(&self) -> Option<crate::mgmt::IoStatsHandle> {
        self.forwarding.as_ref().map(Forwarding::stats_handle)
    }

    fn stop(&mut self) {
        if let Some(forwarding) = self.forwarding.take() {
            forwarding.stop();
        }
        if let Err(error) = self.loopback.set(&[]) {
            tracing::warn!(%error, "cannot remove the loopback addresses");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn config(ports: &[&str]) -> Config {
        let mut yaml = String::from("name: s\nports:\n");
        for (i, port) in ports.iter().enumerate() {
            yaml.push_str(&format!(
                "  - {{name: {port}, mode: routed, addresses: [10.{i}.0.1/24], speed: 10M, cable-length: 5}}\n"
            ));
        }
        yaml.push_str("qos: {preset: roce}\n");
        Config::from_yaml(&yaml).expect("valid")
    }

    #[test]
    fn a_port_replaced_by_one_with_the_same_settings_makes_the_traffic_manager_again() {
        let (a, b, c, d) = (ObjectId::from_raw(1), ObjectId::from_raw(2), ObjectId::from_raw(3), ObjectId::from_raw(4));
        let running = config(&["eth1", "eth2", "eth3"]);
        // eth3 removed and eth4 added by one commit, at the same speed and
        // cable: the same `qos:` as far as the traffic manager's config
        // goes, and the shim gave eth3's index 2 to eth4.
        let target = config(&["eth1", "eth2", "eth4"]);
        assert_eq!(running.qos, target.qos, "the case this covers: nothing to rebuild for in qos:");
        let before = [Some(a), Some(b), Some(c)];
        assert!(traffic_manager_stale(&running.qos, &target.qos, &before, &[Some(a), Some(b), Some(d)]));
        // eth3 removed alone, its index left empty.
        assert!(traffic_manager_stale(&running.qos, &target.qos, &before, &[Some(a), Some(b)]));
        assert!(traffic_manager_stale(&running.qos, &target.qos, &before, &[Some(a), Some(b), None]));
        // Nothing changed, or only a port added: the running one stays.
        assert!(!traffic_manager_stale(&running.qos, &target.qos, &before, &before));
        assert!(!traffic_manager_stale(&running.qos, &target.qos, &before, &[Some(a), Some(b), Some(c), Some(d)]));
        // A new speed rebuilds as before.
        let slower = Config::from_yaml(
            "name: s\nports:\n  - {name: eth1, mode: routed, addresses: [10.0.0.1/24], speed: 2M, cable-length: 5}\n\
             qos: {preset: roce}\n",
        )
        .expect("valid");
        assert!(traffic_manager_stale(&running.qos, &slower.qos, &before, &before));
    }
}
