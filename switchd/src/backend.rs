//! How each shim backend runs inside the daemon.
//!
//! The daemon is generic over the shim's backend: config apply, BGP, the
//! management API and notifications only speak the shim. What differs is
//! how frames move. The soft backend (this project's pipeline) needs the
//! front-panel ports' I/O, host interfaces (TAPs the kernel's own traffic
//! goes through) and the forwarding thread, so it creates and owns them; a
//! backend whose forwarding is the kernel's owns none of that.

use std::sync::{Arc, Mutex};

use dataplane::pipeline::PortId;
use sai_shim::backend::kernel::{KernelBackend, KernelConfig};
use sai_shim::backend::soft::SoftBackend;
use sai_shim::{Backend, Sai};

use crate::apply::Applied;
use crate::commit::FollowsConfig;
use crate::config::{Config, PortMode};
use crate::daemon::{RunError, io_error};
use crate::forwarding::{TM_CATCH_UP, TrafficManagerSetup};
use crate::hostif;
use crate::ib::{IbRuntime, SharedIb};
use crate::soft_forwarding::SoftForwarding;
use dataplane::node::{AnyTrafficManager, QosTrafficManager};

/// What the daemon needs from a backend beyond the shim API.
pub trait DaemonBackend: Backend + Send + Sized + 'static {
    /// The name `backend:` selects it by, and logs use.
    const NAME: &'static str;

    /// The backend for `config`, before anything is programmed.
    fn for_config(config: &Config) -> Result<Self, RunError>;

    /// The config could not be applied, or forwarding not started, at
    /// start: removes what the backend put outside the process (the soft
    /// backend's state dies with it).
    fn abandon(_sai: &mut Sai<Self>) {}

    /// Starts moving frames for the programmed shim: whatever ports, host
    /// interfaces, loopback addresses and threads this backend needs,
    /// owned by what it returns (stopped, they are gone), which follows
    /// every commit.
    fn start_forwarding(
        sai: &Arc<Mutex<Sai<Self>>>,
        config: &Config,
        applied: &Applied,
        ib: Option<SharedIb>,
    ) -> Result<Box<dyn RunningForwarding>, RunError>;

    /// The IB-like plane for `config`'s ports in `mode: ib`, if any (only
    /// a backend whose forwarding is this project's pipeline runs one).
    fn ib_runtime(_backend: &Self, _config: &Config, _applied: &Applied) -> Result<Option<SharedIb>, RunError> {
        Ok(None)
    }

    /// The ports LLDP speaks on: the agent's port id, the port's name, its
    /// description, and the Linux interface LLDP frames are read from and
    /// written to.
    fn lldp_ports(sai: &Sai<Self>, config: &Config, applied: &Applied) -> Vec<LldpPort>;
}

/// One port as LLDP sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LldpPort {
    pub id: PortId,
    pub name: String,
    pub description: Option<String>,
    /// Where LLDPDUs are read and written.
    pub interface: String,
}

/// Forwarding as a backend runs it.
pub trait RunningForwarding: FollowsConfig {
    /// Stops it and removes what it created (TAPs, threads, addresses).
    fn stop(&mut self);

    /// Its port adapters' counters (kernel ring drops...), when it has
    /// adapters of its own.
    fn io_stats(&self) -> Option<crate::mgmt::IoStatsHandle> {
        None
    }
}

impl FollowsConfig for Box<dyn RunningForwarding> {
    fn remove_stale(&mut self, target: &Config, applied: &Applied) -> Result<(), String> {
        (**self).remove_stale(target, applied)
    }

    fn add_missing(&mut self, target: &Config, applied: &Applied) -> Result<(), String> {
        (**self).add_missing(target, applied)
    }
}

/// The soft backend: the forwarding thread runs the node over AF_PACKET/TAP
/// ports and the host interfaces' TAPs.
impl DaemonBackend for SoftBackend {
    const NAME: &'static str = "soft";

    fn for_config(config: &Config) -> Result<SoftBackend, RunError> {
        Ok(SoftBackend::new(config.profile.switch_config()))
    }

    fn start_forwarding(
        sai: &Arc<Mutex<Sai<SoftBackend>>>,
        config: &Config,
        applied: &Applied,
        ib: Option<SharedIb>,
    ) -> Result<Box<dyn RunningForwarding>, RunError> {
        let setup = traffic_manager(&mut sai.lock().unwrap_or_else(|e| e.into_inner()), config)?;
        let forwarding = SoftForwarding::start(sai, config, applied, setup, ib).map_err(RunError::Forwarding)?;
        Ok(Box::new(forwarding))
    }

    fn ib_runtime(backend: &SoftBackend, config: &Config, applied: &Applied) -> Result<Option<SharedIb>, RunError> {
        let index = |name: &str| backend.port_index(applied.ports[name].port).expect("applied port has an index");
        let runtime = IbRuntime::new(config, index).map_err(RunError::Ib)?;
        Ok(runtime.map(|r| Arc::new(Mutex::new(r))))
    }

    fn lldp_ports(sai: &Sai<SoftBackend>, config: &Config, applied: &Applied) -> Vec<LldpPort> {
        config
            .ports
            .iter()
            .filter(|port| !matches!(port.mode, PortMode::Ib(_)))
            .map(|port| LldpPort {
                id: sai.backend().port_index(applied.ports[&port.name].port).expect("applied port has an index"),
                name: port.name.clone(),
                description: port.description.clone(),
                // The pipeline punts LLDP to the port's host interface, and
                // what is written there leaves through the port unchanged.
                interface: hostif::port_host_name(&port.name),
            })
            .collect()
    }
}

/// The kernel backend: the kernel forwards between the ports themselves,
/// so there is no forwarding thread and no host interface; what the daemon
/// adds is the switch's addresses on its interfaces (routed ports, SVIs,
/// `lo`), marked as ours so a restart removes stale ones.
impl DaemonBackend for KernelBackend {
    const NAME: &'static str = "kernel";

    fn for_config(_config: &Config) -> Result<KernelBackend, RunError> {
        KernelBackend::new(KernelConfig::default()).map_err(io_error("open rtnetlink sockets"))
    }

    fn abandon(sai: &mut Sai<KernelBackend>) {
        if let Err(error) = sai.backend().remove_addresses() {
            tracing::warn!(%error, "kernel backend: cannot remove the addresses the refused start put in place");
        }
        if let Err(error) = sai.backend_mut().remove_all_of_ours() {
            tracing::warn!(%error, "kernel backend: cannot remove what the refused config installed");
        }
    }

    fn start_forwarding(
        sai: &Arc<Mutex<Sai<KernelBackend>>>,
        config: &Config,
        applied: &Applied,
        _ib: Option<SharedIb>,
    ) -> Result<Box<dyn RunningForwarding>, RunError> {
        let mut forwarding = KernelForwarding { sai: sai.clone() };
        forwarding.sync_addresses(config, applied)?;
        tracing::info!("kernel backend: the kernel forwards; addresses in place");
        Ok(Box::new(forwarding))
    }

    fn lldp_ports(_sai: &Sai<KernelBackend>, config: &Config, _applied: &Applied) -> Vec<LldpPort> {
        config
            .ports
            .iter()
            .map(|port| LldpPort {
                id: port.number,
                name: port.name.clone(),
                description: port.description.clone(),
                // The bridge never forwards LLDP (a link-local group); the
                // agent reads and writes the port itself.
                interface: port.name.clone(),
            })
            .collect()
    }
}

/// The kernel forwarding on behalf of a running daemon: stopping removes
/// what the switch put in the kernel (a stopped switch forwards nothing),
/// leaving everything that is not ours.
struct KernelForwarding {
    sai: Arc<Mutex<Sai<KernelBackend>>>,
}

impl KernelForwarding {
    /// The switch's addresses on its interfaces (routed ports, SVIs, `lo`)
    /// as `config` has them.
    fn sync_addresses(&mut self, config: &Config, applied: &Applied) -> Result<(), RunError> {
        let shim = self.sai.lock().unwrap_or_else(|e| e.into_inner());
        let mut wanted = Vec::new();
        for port in &config.ports {
            if let PortMode::Routed { addresses } = &port.mode {
                wanted.extend(addresses.iter().map(|a| (port.name.clone(), *a)));
            }
        }
        for vlan in &config.vlans {
            let Some(rif) = applied.vlans[&vlan.id].router_interface else { continue };
            let netdev = shim.backend().router_interface_netdev(rif).expect("applied SVI has a netdev").to_owned();
            wanted.extend(vlan.addresses.iter().map(|a| (netdev.clone(), *a)));
        }
        wanted.extend(config.loopback.iter().map(|a| (hostif::LOOPBACK_INTERFACE.to_owned(), *a)));
        shim.backend().sync_addresses(&wanted)?;
        Ok(())
    }
}

/// The kernel's interfaces follow the shim; only the addresses are the
/// daemon's to move.
impl FollowsConfig for KernelForwarding {
    fn remove_stale(&mut self, _target: &Config, _applied: &Applied) -> Result<(), String> {
        Ok(())
    }

    fn add_missing(&mut self, target: &Config, applied: &Applied) -> Result<(), String> {
        self.sync_addresses(target, applied).map_err(|e| e.to_string())
    }
}

impl RunningForwarding for KernelForwarding {
    fn stop(&mut self) {
        let mut shim = self.sai.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(error) = shim.backend().remove_addresses() {
            tracing::warn!(%error, "kernel backend: cannot remove the switch's addresses");
        }
        if let Err(error) = shim.backend_mut().remove_all_of_ours() {
            tracing::warn!(%error, "kernel backend: cannot remove what the switch installed");
        }
    }
}

/// The traffic manager the shim's QoS objects describe (the FIFO when
/// there are none), and DLB as the pipeline's ECMP path quality when a
/// dynamic mode is configured.
pub(crate) fn traffic_manager(sai: &mut Sai<SoftBackend>, config: &Config) -> Result<TrafficManagerSetup, RunError> {
    let Some(tm_config) = sai.backend().tm_config(sai.store())? else {
        sai.backend_mut().set_path_quality(None);
        return Ok(TrafficManagerSetup { port_owners: port_owners(sai), ..TrafficManagerSetup::default() });
    };
    let tm_config = crate::qos::daemon_tm_config(tm_config, TM_CATCH_UP.as_nanos() as u64);
    let mut tm = QosTrafficManager::new(&tm_config).map_err(|e| {
        RunError::Shim(sai_shim::SaiError::InvalidAttribute {
            object: "traffic manager",
            attribute: "configuration",
            reason: e.to_string(),
        })
    })?;
    let mac = config.system_mac;
    for index in 0..tm_config.ports.len() {
        tm.set_port_mac(index as PortId, mac);
    }
    // DLB runs with every traffic manager, even when all groups hash
    // statically, so that a group a later commit creates with a mode of its
    // own (`qos.dlb.groups`) balances as configured at once.
    let dlb = tm.dlb(tm_config.dlb.clone());
    sai.backend_mut().set_path_quality(Some(Box::new(dlb)));
    tracing::info!(
        ports = tm_config.ports.len(),
        pfc = ?tm_config.pfc.priorities,
        dlb = tm_config.dlb.mode.name(),
        "traffic manager: qos (ports transmit at their line rate)"
    );
    Ok(TrafficManagerSetup {
        tm: AnyTrafficManager::Qos(Box::new(tm)),
        stats: Some(sai.backend().qos_stats_slot()),
        watchdog_events: Some(sai.backend().watchdog_events_slot()),
        port_owners: port_owners(sai),
    })
}

/// The shim's port object behind each pipeline index, up to the highest
/// in use ([`TrafficManagerSetup::port_owners`]).
pub(crate) fn port_owners(sai: &Sai<SoftBackend>) -> Vec<Option<sai_shim::ObjectId>> {
    let backend = sai.backend();
    let indices: Vec<(usize, sai_shim::ObjectId)> = (sai.store().objects_of(sai_shim::ObjectType::Port))
        .filter_map(|(id, _)| backend.port_index(id).map(|index| (usize::from(index), id)))
        .collect();
    let mut owners = vec![None; indices.iter().map(|(index, _)| index + 1).max().unwrap_or(0)];
    for (index, id) in indices {
        owners[index] = Some(id);
    }
    owners
}
