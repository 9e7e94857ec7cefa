//! The EVPN and IB-like plane families, from the same handlers as `swcli
//! show evpn vni` and `show ib sm|port`.

use std::fmt;

use mgmt_cli::api::{Reply, Request};
use prometheus_client::encoding::DescriptorEncoder;
use sai_shim::Backend;

use super::{Labels, counter, family, gauge};
use crate::mgmt::SwitchView;

/// VNIs and their MACs, when the speaker runs EVPN.
pub(super) fn encode_evpn<B: Backend>(view: &SwitchView<B>, e: &mut DescriptorEncoder) -> fmt::Result {
    let Some(bgp) = view.bgp.as_ref().filter(|bgp| bgp.config.evpn.is_some()) else { return Ok(()) };
    let Reply::EvpnVnis(vnis) = crate::evpn::show(bgp, &Request::ShowEvpnVni { vni: None }) else { return Ok(()) };
    family(e, "switch_evpn_vnis", "VNIs EVPN serves", None, vec![(vec![], gauge(vnis.len()))])?;
    let names: Vec<String> = vnis.iter().map(|v| v.vni.to_string()).collect();
    let per_vni = |f: fn(&mgmt_cli::api::EvpnVni) -> usize| -> Vec<(Labels, _)> {
        vnis.iter().zip(&names).map(|(v, n)| (vec![("vni", n.as_str())], gauge(f(v)))).collect()
    };
    family(e, "switch_evpn_local_macs", "MACs learned on local ports", None, per_vni(|v| v.local_macs))?;
    family(e, "switch_evpn_remote_macs", "MACs from remote VTEPs' type 2 routes", None, per_vni(|v| v.remote_macs))?;
    family(e, "switch_evpn_arp_entries", "IP-to-MAC bindings", None, per_vni(|v| v.arp_entries))?;
    family(e, "switch_evpn_duplicate_macs", "MACs frozen for moving too often", None, per_vni(|v| v.duplicate_macs))?;
    family(e, "switch_evpn_remote_vteps", "Remote VTEPs flooding the VNI", None, per_vni(|v| v.remote_vteps.len()))?;
    Ok(())
}

/// The IB-like ports and the embedded subnet manager, when ports are in
/// `mode: ib`.
pub(super) fn encode_ib<B: Backend>(view: &SwitchView<B>, e: &mut DescriptorEncoder) -> fmt::Result {
    let Some(ib) = &view.ib else { return Ok(()) };
    let (ports, sm) = {
        let ib = crate::ib::lock(ib);
        (ib.show_ports(), ib.show_sm((view.now)()))
    };
    let per_port = |f: fn(&mgmt_cli::ib::IbPort) -> u64| -> Vec<(Labels, _)> {
        ports.iter().map(|p| (vec![("port", p.name.as_str())], counter(f(p)))).collect()
    };
    family(
        e,
        "switch_ib_port_received_packets",
        "IB-like packets received",
        None,
        per_port(|p| p.counters.rcv_packets),
    )?;
    family(
        e,
        "switch_ib_port_transmitted_packets",
        "IB-like packets sent",
        None,
        per_port(|p| p.counters.xmit_packets),
    )?;
    family(
        e,
        "switch_ib_port_transmit_wait",
        "Transmit opportunities with packets queued and no credit",
        None,
        per_port(|p| p.counters.xmit_wait),
    )?;
    let active: Vec<(Labels, _)> =
        ports.iter().map(|p| (vec![("port", p.name.as_str())], gauge(usize::from(p.state == "active")))).collect();
    family(e, "switch_ib_port_active", "1 when the port is Active", None, active)?;
    if sm.state == "not configured" {
        return Ok(());
    }
    let labels: Labels = vec![("state", sm.state.as_str())];
    family(e, "switch_ib_sm_info", "The subnet manager's state", None, vec![(labels, gauge(1))])?;
    let one = |value: u64| vec![(Labels::new(), counter(value))];
    family(e, "switch_ib_sm_heavy_sweeps", "Heavy sweeps", None, one(sm.heavy_sweeps))?;
    family(e, "switch_ib_sm_light_sweeps", "Light sweeps", None, one(sm.light_sweeps))?;
    family(e, "switch_ib_sm_smps_sent", "SMPs the SM sent", None, one(sm.smps_sent))?;
    family(e, "switch_ib_sm_failed_smps", "SMPs that got no answer", None, one(sm.failed_smps))?;
    family(e, "switch_ib_sm_traps", "Traps the SM received", None, one(sm.traps))?;
    family(e, "switch_ib_sm_lft_blocks_set", "LFT blocks the SM wrote", None, one(sm.lft_blocks_set))?;
    let size = |value: usize| vec![(Labels::new(), gauge(value))];
    family(e, "switch_ib_sm_switches", "Switches in the subnet", None, size(sm.switches))?;
    family(e, "switch_ib_sm_cas", "Channel adapters in the subnet", None, size(sm.cas))?;
    family(e, "switch_ib_sm_fabric_up", "1 when every port is Active", None, size(usize::from(sm.fabric_up)))?;
    if let Some(ms) = sm.last_reroute_ms {
        let seconds = vec![(Labels::new(), prometheus_client::metrics::gauge::ConstGauge::new(ms / 1e3))];
        family(e, "switch_ib_sm_last_reroute_seconds", "From the last change to new LFTs", None, seconds)?;
    }
    Ok(())
}
