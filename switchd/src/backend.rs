//! How each shim backend runs inside the daemon.
//!
//! The daemon is generic over the shim's backend: config apply, BGP, the
//! management API and notifications only speak the shim. What differs is
//! how frames move. The soft backend (this project's pipeline) needs the
//! front-panel ports' I/O, host interfaces (TAPs the kernel's own traffic
//! goes through) and the forwarding thread, so it creates and owns them; a
//! backend whose forwarding is the kernel's owns none of that.

use std::sync::{Arc, Mutex};

use dataplane::io::{AfPacket, AfPacketConfig, PortIo, Tap, TapConfig};
use dataplane::pipeline::{PortId, SwitchConfig};
use sai_shim::backend::kernel::{KernelBackend, KernelConfig};
use sai_shim::backend::soft::SoftBackend;
use sai_shim::{Backend, HostInterfaceAttr, ObjectId, Sai};

use crate::apply::{self, Applied};
use crate::config::{Config, PortKind, PortMode};
use crate::daemon::{RunError, io_error};
use crate::forwarding::{Attachment, Forwarding, TM_CATCH_UP, TrafficManagerSetup};
use crate::hostif::{self, HostIfSpec};
use crate::ib::{IbRuntime, SharedIb};
use dataplane::node::{AnyTrafficManager, QosTrafficManager};
use qos::dlb::DlbMode;

/// What the daemon needs from a backend beyond the shim API.
pub trait DaemonBackend: Backend + Send + Sized + 'static {
    /// The name `backend:` selects it by, and logs use.
    const NAME: &'static str;

    /// Whether the backend puts the config's loopback addresses on `lo`
    /// itself (the daemon does otherwise).
    const OWNS_LOOPBACK: bool = false;

    /// The backend for `config`, before anything is programmed.
    fn for_config(config: &Config) -> Result<Self, RunError>;

    /// Starts moving frames for the programmed shim: whatever ports, host
    /// interfaces and threads this backend needs, owned by what it returns
    /// (dropped or stopped, they are gone).
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
pub trait RunningForwarding: Send {
    /// Stops it and removes what it created (TAPs, threads).
    fn stop(self: Box<Self>);
}

impl RunningForwarding for Forwarding<ObjectId> {
    fn stop(self: Box<Self>) {
        Forwarding::stop(*self);
    }
}

/// The soft backend: the forwarding thread runs the node over AF_PACKET/TAP
/// ports and the host interfaces' TAPs.
impl DaemonBackend for SoftBackend {
    const NAME: &'static str = "soft";

    fn for_config(_config: &Config) -> Result<SoftBackend, RunError> {
        Ok(SoftBackend::new(SwitchConfig::default()))
    }

    fn start_forwarding(
        sai: &Arc<Mutex<Sai<SoftBackend>>>,
        config: &Config,
        applied: &Applied,
        ib: Option<SharedIb>,
    ) -> Result<Box<dyn RunningForwarding>, RunError> {
        let (specs, mut attachments, setup) = {
            let mut shim = sai.lock().unwrap_or_else(|e| e.into_inner());
            let setup = traffic_manager(&mut shim, config)?;
            let specs = host_interfaces(&mut shim, config, applied)?;
            (specs, port_attachments(&shim, config, applied)?, setup)
        };
        attachments.extend(hostif::create_host_interfaces(&specs)?);
        let forwarding = Forwarding::start_with(sai.clone(), attachments, setup, ib)
            .map_err(io_error("start the forwarding thread"))?;
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
    const OWNS_LOOPBACK: bool = true;

    fn for_config(_config: &Config) -> Result<KernelBackend, RunError> {
        KernelBackend::new(KernelConfig::default()).map_err(io_error("open rtnetlink sockets"))
    }

    fn start_forwarding(
        sai: &Arc<Mutex<Sai<KernelBackend>>>,
        config: &Config,
        applied: &Applied,
        _ib: Option<SharedIb>,
    ) -> Result<Box<dyn RunningForwarding>, RunError> {
        let shim = sai.lock().unwrap_or_else(|e| e.into_inner());
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
        tracing::info!(addresses = wanted.len(), "kernel backend: the kernel forwards; addresses in place");
        drop(shim);
        Ok(Box::new(KernelForwarding { sai: sai.clone() }))
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

impl RunningForwarding for KernelForwarding {
    fn stop(self: Box<Self>) {
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
fn traffic_manager(sai: &mut Sai<SoftBackend>, config: &Config) -> Result<TrafficManagerSetup, RunError> {
    let Some(tm_config) = sai.backend().tm_config(sai.store())? else {
        return Ok(TrafficManagerSetup::default());
    };
    let tm_config = crate::qos::daemon_tm_config(tm_config, TM_CATCH_UP.as_nanos() as u64);
    let mut tm = QosTrafficManager::new(&tm_config).map_err(|e| {
        RunError::Shim(sai_shim::SaiError::InvalidAttribute {
            object: "traffic manager",
            attribute: "configuration",
            reason: e.to_string(),
        })
    })?;
    let mac = apply::switch_mac(&config.name);
    for index in 0..tm_config.ports.len() {
        tm.set_port_mac(index as PortId, mac);
    }
    if tm_config.dlb.mode != DlbMode::Static || !tm_config.dlb.groups.is_empty() {
        let dlb = tm.dlb(tm_config.dlb.clone());
        sai.backend_mut().set_path_quality(Some(Box::new(dlb)));
    }
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
    })
}

/// Creates the shim's host interface objects and the specs of their TAPs.
fn host_interfaces(
    sai: &mut Sai<SoftBackend>,
    config: &Config,
    applied: &Applied,
) -> Result<Vec<HostIfSpec<ObjectId>>, RunError> {
    let switch_mac = apply::switch_mac(&config.name).0;
    let mut specs = Vec::new();
    // An IB-like port has no host interface: nothing of the kernel's goes
    // out of it, and its 0x88B5 frames stay in the IB-like plane.
    for port in config.ports.iter().filter(|p| !matches!(p.mode, PortMode::Ib(_))) {
        let objects = &applied.ports[&port.name];
        let name = hostif::port_host_name(&port.name);
        let host_if = sai
            .create_host_interface(&[HostInterfaceAttr::Name(name.clone()), HostInterfaceAttr::ObjId(objects.port)])?;
        let mac = match objects.router_interface {
            Some(rif) => sai.get_router_interface(rif)?.src_mac_address.0,
            None => switch_mac,
        };
        let addresses = match &port.mode {
            PortMode::Routed { addresses } => addresses.clone(),
            _ => Vec::new(),
        };
        specs.push(HostIfSpec {
            name,
            host_if,
            mac,
            mtu: u32::from(port.mtu),
            addresses,
            front_panel: (port.kind == PortKind::Afpacket).then(|| port.name.clone()),
        });
    }
    for vlan in &config.vlans {
        let Some(rif) = applied.vlans[&vlan.id].router_interface else { continue };
        let name = hostif::vlan_host_name(vlan.id);
        let host_if =
            sai.create_host_interface(&[HostInterfaceAttr::Name(name.clone()), HostInterfaceAttr::ObjId(rif)])?;
        let rif = sai.get_router_interface(rif)?;
        specs.push(HostIfSpec {
            name,
            host_if,
            mac: rif.src_mac_address.0,
            mtu: u32::from(rif.mtu),
            addresses: vlan.addresses.clone(),
            front_panel: None,
        });
    }
    Ok(specs)
}

fn port_attachments(
    sai: &Sai<SoftBackend>,
    config: &Config,
    applied: &Applied,
) -> Result<Vec<Attachment<ObjectId>>, RunError> {
    let mut out = Vec::new();
    for port in &config.ports {
        let index = sai.backend().port_index(applied.ports[&port.name].port).expect("applied port has an index");
        let io: Box<dyn PortIo> = match port.kind {
            PortKind::Afpacket => Box::new(
                AfPacket::with_config(&port.name, AfPacketConfig::for_mtu(u32::from(port.mtu)))
                    .map_err(io_error(format!("open {} (AF_PACKET)", port.name)))?,
            ),
            PortKind::Tap => Box::new(
                Tap::create(&TapConfig {
                    name: port.name.clone(),
                    mac: None,
                    mtu: Some(u32::from(port.mtu)),
                    up: true,
                })
                .map_err(io_error(format!("create TAP {}", port.name)))?,
            ),
        };
        out.push(Attachment::Port { port: index, io });
    }
    Ok(out)
}
