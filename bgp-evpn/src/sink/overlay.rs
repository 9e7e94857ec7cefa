//! EVPN's layer-2 state into the shim: remote VTEPs as tunnel endpoints
//! with a bridge port each, flood lists as VLAN members of those bridge
//! ports (head-end replication, RFC 8365 §8), remote MACs as FDB entries
//! on them (RFC 7432 §9.2.2), remote MAC+IP bindings as ARP/ND suppression
//! entries in the VNI's VLAN (§10).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{IpAddr, Ipv4Addr};

use sai_shim::{
    Backend, BridgePortAttr, BridgePortType, EthernetAddress, FdbEntryAttr, FdbEntryKey, FdbEntryType, ObjectId, Sai,
    SuppressionEntryKey, TaggingMode, TunnelEndpointAttr, VlanMemberAttr,
};

use crate::packet::evpn::MacAddr;

/// A remote VTEP's objects and how many flood entries and MACs use them.
#[derive(Debug)]
struct Vtep {
    endpoint: ObjectId,
    bridge_port: ObjectId,
    users: usize,
    /// Made by the switch's own config (a static flood list): never removed here.
    configured: bool,
}

/// A remote MAC's FDB entry: behind which VTEP, and whether pinned there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RemoteMac {
    vtep: Ipv4Addr,
    sticky: bool,
}

/// The shim objects EVPN's L2 state lives in, and what it made of them.
#[derive(Debug)]
pub struct Overlay {
    tunnel: ObjectId,
    /// The VLAN each EVPN VNI is mapped to.
    vlans: HashMap<u32, ObjectId>,
    vteps: BTreeMap<Ipv4Addr, Vtep>,
    flood: HashMap<(u32, Ipv4Addr), ObjectId>,
    macs: HashMap<(u32, MacAddr), RemoteMac>,
    /// ARP/ND suppression entries made, per VNI.
    suppressed: BTreeSet<(u32, IpAddr)>,
}

/// Why an overlay change was not made.
pub type OverlayError = String;

impl Overlay {
    /// `tunnel`: the switch's VXLAN tunnel; `vlans`: VNI -> VLAN object;
    /// `configured`: remote VTEPs the config already made (endpoint,
    /// bridge port), shared rather than made twice.
    pub fn new(
        tunnel: ObjectId,
        vlans: HashMap<u32, ObjectId>,
        configured: impl IntoIterator<Item = (Ipv4Addr, (ObjectId, ObjectId))>,
    ) -> Overlay {
        let vteps = configured
            .into_iter()
            .map(|(ip, (endpoint, bridge_port))| (ip, Vtep { endpoint, bridge_port, users: 0, configured: true }))
            .collect();
        Overlay { tunnel, vlans, vteps, flood: HashMap::new(), macs: HashMap::new(), suppressed: BTreeSet::new() }
    }

    /// The tunnel EVPN's objects hang off.
    pub fn tunnel(&self) -> ObjectId {
        self.tunnel
    }

    /// Removes what was made in `vni` (its VLAN or VNI map is about to
    /// go or change) and forgets its VLAN until [`Self::set_vlans`].
    pub fn detach<B: Backend>(&mut self, sai: &mut Sai<B>, vni: u32) {
        let Some(vlan) = self.vlans.remove(&vni) else { return };
        let flood: Vec<(Ipv4Addr, ObjectId)> =
            self.flood.iter().filter(|((v, _), _)| *v == vni).map(|((_, vtep), m)| (*vtep, *m)).collect();
        for (vtep, member) in flood {
            self.flood.remove(&(vni, vtep));
            if let Err(e) = sai.remove(member) {
                tracing::warn!(vni, %vtep, error = %e, "removing a flood entry");
            }
            self.release(sai, vtep);
        }
        let macs: Vec<(MacAddr, Ipv4Addr)> =
            self.macs.iter().filter(|((v, _), _)| *v == vni).map(|((_, mac), remote)| (*mac, remote.vtep)).collect();
        for (mac, vtep) in macs {
            self.macs.remove(&(vni, mac));
            let _ = sai.remove_fdb_entry(FdbEntryKey { vlan, mac: EthernetAddress(mac.0) });
            self.release(sai, vtep);
        }
        let ips: Vec<IpAddr> = self
            .suppressed
            .range((vni, IpAddr::from([0u8; 4]))..)
            .take_while(|(v, _)| *v == vni)
            .map(|(_, ip)| *ip)
            .collect();
        for ip in ips {
            self.suppressed.remove(&(vni, ip));
            let _ = sai.remove_suppression_entry(SuppressionEntryKey { vlan, ip });
        }
    }

    /// The VLAN of each EVPN VNI from now on (after [`Self::detach`] of
    /// those whose VLAN changes).
    pub fn set_vlans(&mut self, vlans: HashMap<u32, ObjectId>) {
        self.vlans = vlans;
    }

    /// The VNIs EVPN has objects in (their VLANs).
    pub fn vlans(&self) -> &HashMap<u32, ObjectId> {
        &self.vlans
    }

    fn vlan(&self, vni: u32) -> Result<ObjectId, OverlayError> {
        self.vlans.get(&vni).copied().ok_or_else(|| format!("VNI {vni} is mapped to no VLAN"))
    }

    fn v4(vtep: IpAddr) -> Result<Ipv4Addr, OverlayError> {
        match vtep {
            IpAddr::V4(v4) => Ok(v4),
            IpAddr::V6(v6) => v6.to_ipv4_mapped().ok_or_else(|| format!("VTEP {vtep}: IPv6 VTEPs are not supported")),
        }
    }

    /// The bridge port of `vtep`, made on first use.
    fn acquire<B: Backend>(&mut self, sai: &mut Sai<B>, vtep: Ipv4Addr) -> Result<ObjectId, OverlayError> {
        if let Some(v) = self.vteps.get_mut(&vtep) {
            v.users += 1;
            return Ok(v.bridge_port);
        }
        let endpoint = sai
            .create_tunnel_endpoint(&[TunnelEndpointAttr::TunnelId(self.tunnel), TunnelEndpointAttr::RemoteIp(vtep)])
            .map_err(|e| format!("tunnel endpoint {vtep}: {e}"))?;
        // RFC 8365 section 5.1: an EVPN VTEP learns remote MACs from the
        // control plane, never from the frames the remote sends.
        let attrs = [BridgePortAttr::Type(BridgePortType::Tunnel(endpoint)), BridgePortAttr::Learning(false)];
        let bridge_port = match sai.create_bridge_port(&attrs) {
            Ok(bp) => bp,
            Err(e) => {
                let _ = sai.remove(endpoint);
                return Err(format!("bridge port of VTEP {vtep}: {e}"));
            }
        };
        self.vteps.insert(vtep, Vtep { endpoint, bridge_port, users: 1, configured: false });
        Ok(bridge_port)
    }

    fn release<B: Backend>(&mut self, sai: &mut Sai<B>, vtep: Ipv4Addr) {
        let Some(v) = self.vteps.get_mut(&vtep) else { return };
        v.users = v.users.saturating_sub(1);
        if v.users > 0 || v.configured {
            return;
        }
        let (endpoint, bridge_port) = (v.endpoint, v.bridge_port);
        self.vteps.remove(&vtep);
        if let Err(e) = sai.remove(bridge_port).and_then(|()| sai.remove(endpoint)) {
            tracing::warn!(%vtep, error = %e, "removing a remote VTEP");
        }
    }

    /// `vtep` joins (`present`) or leaves the flood list of `vni`.
    pub fn flood<B: Backend>(
        &mut self,
        sai: &mut Sai<B>,
        vni: u32,
        vtep: IpAddr,
        present: bool,
    ) -> Result<(), OverlayError> {
        if !present && !self.vlans.contains_key(&vni) {
            // Detached with its VNI: nothing of it is left to remove.
            return Ok(());
        }
        let (vlan, vtep) = (self.vlan(vni)?, Self::v4(vtep)?);
        match (present, self.flood.get(&(vni, vtep)).copied()) {
            (true, None) => {
                let bridge_port = self.acquire(sai, vtep)?;
                let member = sai.create_vlan_member(&[
                    VlanMemberAttr::VlanId(vlan),
                    VlanMemberAttr::BridgePortId(bridge_port),
                    VlanMemberAttr::TaggingMode(TaggingMode::Untagged),
                ]);
                match member {
                    Ok(member) => {
                        self.flood.insert((vni, vtep), member);
                    }
                    Err(e) => {
                        self.release(sai, vtep);
                        return Err(format!("flood entry {vtep} of VNI {vni}: {e}"));
                    }
                }
            }
            (false, Some(member)) => {
                self.flood.remove(&(vni, vtep));
                sai.remove(member).map_err(|e| format!("flood entry {vtep} of VNI {vni}: {e}"))?;
                self.release(sai, vtep);
            }
            _ => {}
        }
        Ok(())
    }

    /// ARP/ND suppression: `ip` in `vni` is `mac` (`None`: forget it), so
    /// the switch answers local hosts' requests for it (RFC 7432 §10).
    pub fn suppression<B: Backend>(
        &mut self,
        sai: &mut Sai<B>,
        vni: u32,
        ip: IpAddr,
        mac: Option<MacAddr>,
    ) -> Result<(), OverlayError> {
        if mac.is_none() && !self.vlans.contains_key(&vni) {
            return Ok(());
        }
        let key = SuppressionEntryKey { vlan: self.vlan(vni)?, ip };
        let result = match mac {
            Some(mac) => sai.set_suppression_entry(key, EthernetAddress(mac.0)).map(|()| {
                self.suppressed.insert((vni, ip));
            }),
            None => {
                self.suppressed.remove(&(vni, ip));
                match sai.remove_suppression_entry(key) {
                    Err(sai_shim::SaiError::UnknownEntry(_)) => Ok(()),
                    other => other,
                }
            }
        };
        result.map_err(|e| format!("ARP/ND suppression of {ip} in VNI {vni}: {e}"))
    }

    /// `mac` in `vni` is behind `vtep` (`None`: no longer). The entry is
    /// static (it lives as long as the route, never aged) with MAC moves
    /// allowed, so that a host that moves here is learned over it (the
    /// speaker then advertises it with a higher sequence number). A
    /// `sticky` MAC's entry (RFC 7432 section 15.2) allows no move: a frame
    /// from it on a local port is counted and not learned.
    pub fn mac<B: Backend>(
        &mut self,
        sai: &mut Sai<B>,
        vni: u32,
        mac: MacAddr,
        vtep: Option<IpAddr>,
        sticky: bool,
    ) -> Result<(), OverlayError> {
        if vtep.is_none() && !self.vlans.contains_key(&vni) {
            return Ok(());
        }
        let vlan = self.vlan(vni)?;
        let key = FdbEntryKey { vlan, mac: EthernetAddress(mac.0) };
        let wanted = vtep.map(Self::v4).transpose()?.map(|vtep| RemoteMac { vtep, sticky });
        let old = self.macs.get(&(vni, mac)).copied();
        if old == wanted {
            return Ok(());
        }
        // The new VTEP first: one that stays (only the sticky bit changed)
        // keeps its objects.
        let bridge_port = wanted.map(|w| self.acquire(sai, w.vtep)).transpose()?;
        if let Some(old) = old {
            self.macs.remove(&(vni, mac));
            // Already gone if it aged or the host was learned here over it.
            let _ = sai.remove_fdb_entry(key);
            self.release(sai, old.vtep);
        }
        if let (Some(wanted), Some(bridge_port)) = (wanted, bridge_port) {
            let attrs = [
                FdbEntryAttr::Type(FdbEntryType::Static),
                FdbEntryAttr::AllowMacMove(!wanted.sticky),
                FdbEntryAttr::BridgePortId(bridge_port),
            ];
            // A control-plane entry already there (the static config's) gives way.
            let made = match sai.create_fdb_entry(key, &attrs) {
                Err(sai_shim::SaiError::AlreadyExists(_)) => {
                    let _ = sai.remove_fdb_entry(key);
                    sai.create_fdb_entry(key, &attrs)
                }
                other => other,
            };
            if let Err(e) = made {
                self.release(sai, wanted.vtep);
                return Err(format!("FDB entry {mac} in VNI {vni} -> {}: {e}", wanted.vtep));
            }
            self.macs.insert((vni, mac), wanted);
        }
        Ok(())
    }
}
