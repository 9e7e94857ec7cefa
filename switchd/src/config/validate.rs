//! Whole-config validation: every check runs, every failure is collected
//! with the path of the field it concerns, and only a config with none
//! becomes a [`Config`].

use super::file::*;
use super::*;
use dataplane::wire::EthernetAddress;
use std::collections::{BTreeMap, BTreeSet, HashMap};

struct Validator {
    errors: Vec<ConfigError>,
}

impl Validator {
    fn error(&mut self, path: impl Into<String>, reason: impl Into<String>) {
        self.errors.push(ConfigError { path: path.into(), line: None, reason: reason.into() });
    }
}

pub(super) fn validate(file: ConfigFile) -> Result<Config, ConfigErrors> {
    let mut v = Validator { errors: Vec::new() };

    check_name(&mut v, &file.name);
    let socket = match &file.management.socket {
        Some(path) if !path.is_absolute() => {
            v.error("management.socket", format!("{} is not an absolute path", path.display()));
            path.clone()
        }
        Some(path) => path.clone(),
        None => mgmt_cli::default_socket_path(&file.name),
    };
    let lldp = check_lldp(&mut v, &file.lldp);

    let vlans = check_vlans(&mut v, &file.vlans);
    let declared_vlans: BTreeSet<u16> = vlans.iter().map(|vlan| vlan.id).collect();
    let ports = check_ports(&mut v, &file, &declared_vlans);
    check_static_mac_ports(&mut v, &file, &ports);
    check_loopback(&mut v, &file.loopback);

    check_backend(&mut v, &file);
    let port_rings = check_resources(&mut v, &file, &ports);
    let realtime_priority = check_forwarding(&mut v, &file);
    let config_so_far = Config {
        name: file.name.clone(),
        system_mac: crate::apply::switch_mac(&file.name),
        backend: file.backend,
        log_level: file.log_level,
        socket,
        lldp,
        profile: file.profile,
        port_rings,
        loopback: file.loopback.clone(),
        ports,
        vlans,
        vxlan: None,
        vrfs: Vec::new(),
        routes: Vec::new(),
        bgp: None,
        qos: None,
        dlb_groups: BTreeMap::new(),
        ib: None,
        metrics: file.metrics.as_ref().map(|m| m.listen),
        realtime_priority,
        source: file.clone(),
    };
    check_overlaps(&mut v, &file, &config_so_far);
    let vxlan = file.vxlan.as_ref().map(|x| check_vxlan(&mut v, x, &config_so_far, &declared_vlans));
    let routes = check_routes(&mut v, &file.routes, &config_so_far);
    // BGP's EVPN part is checked against the VXLAN section.
    let config_so_far = Config { vxlan, ..config_so_far };
    let bgp = file.bgp.as_ref().map(|b| super::bgp::check(b, &config_so_far, &mut v.errors));
    let vrfs = check_vrfs(&mut v, &file, &config_so_far);
    let qos = super::qos::check(&file, &mut v.errors);
    let dlb_groups = super::qos::check_dlb_groups(&file, &routes, &mut v.errors);
    let has_ib_ports = config_so_far.ports.iter().any(|p| matches!(p.mode, PortMode::Ib(_)));
    let ib = super::ib::check(&mut v.errors, &file, has_ib_ports);

    if !v.errors.is_empty() {
        return Err(ConfigErrors { source: None, errors: v.errors });
    }
    Ok(Config { routes, bgp, ib, qos, dlb_groups, vrfs, ..config_so_far })
}

/// `forwarding:`: a real-time priority in `SCHED_FIFO`'s range, and only
/// where there is a forwarding thread (the soft backend).
fn check_forwarding(v: &mut Validator, file: &ConfigFile) -> Option<u8> {
    let priority = file.forwarding.as_ref()?.realtime_priority?;
    if !(1..=99).contains(&priority) {
        v.error(
            "forwarding.realtime_priority",
            format!(
                "{priority} is outside SCHED_FIFO's 1..=99 (leave it out to run the forwarding thread at nice -10)"
            ),
        );
        return None;
    }
    if file.backend == BackendKind::Kernel {
        v.error("forwarding.realtime_priority", "backend: kernel has no forwarding thread (the kernel forwards)");
        return None;
    }
    Some(priority as u8)
}

/// The VRFs are `bgp.evpn.vrfs` (each with its L3VNI and router MAC); an
/// SVI's or a routed port's `vrf:` names one; an L3VNI is no VLAN's VNI.
fn check_vrfs(v: &mut Validator, file: &ConfigFile, config: &Config) -> Vec<Vrf> {
    let evpn = file.bgp.as_ref().and_then(|b| b.evpn.as_ref());
    let vrfs: Vec<Vrf> = evpn
        .map(|e| {
            e.vrfs
                .iter()
                .map(|vrf| Vrf {
                    name: vrf.name.clone(),
                    l3vni: vrf.l3vni,
                    router_mac: EthernetAddress(vrf.router_mac.0),
                })
                .collect()
        })
        .unwrap_or_default();
    for (i, vrf) in vrfs.iter().enumerate() {
        let vni_maps = config.vxlan.iter().flat_map(|x| x.vnis.iter());
        if let Some(map) = vni_maps.clone().find(|m| m.vni == vrf.l3vni) {
            v.error(
                format!("bgp.evpn.vrfs[{i}].l3vni"),
                format!("VNI {} is VLAN {}'s in vxlan.vnis; an L3VNI is the VRF's alone", vrf.l3vni, map.vlan),
            );
        }
        if config.vxlan.is_none() {
            v.error(format!("bgp.evpn.vrfs[{i}]"), "an L3VNI needs the vxlan section (the tunnel)");
        }
    }
    for (i, vlan) in file.vlans.iter().enumerate() {
        if let Some(name) = &vlan.vrf
            && !vrfs.iter().any(|vrf| &vrf.name == name)
        {
            v.error(format!("vlans[{i}].vrf"), format!("VRF {name:?} is not declared in bgp.evpn.vrfs"));
        }
    }
    for (i, port) in file.ports.iter().enumerate() {
        if let Some(name) = &port.vrf
            && !vrfs.iter().any(|vrf| &vrf.name == name)
        {
            v.error(format!("ports[{i}].vrf"), format!("VRF {name:?} is not declared in bgp.evpn.vrfs"));
        }
    }
    vrfs
}

/// A static MAC is behind a member port of its VLAN.
fn check_static_mac_ports(v: &mut Validator, file: &ConfigFile, ports: &[Port]) {
    for (i, vlan) in file.vlans.iter().enumerate() {
        for (j, entry) in vlan.static_macs.iter().enumerate() {
            let member = ports.iter().find(|p| p.name == entry.port);
            if !member.is_some_and(|p| p.mode.memberships().iter().any(|(vid, _)| *vid == vlan.id)) {
                v.error(
                    format!("vlans[{i}].static_macs[{j}].port"),
                    format!("{} is not a member port of VLAN {}", entry.port, vlan.id),
                );
            }
        }
    }
}

/// The ports fit the profile's tables and the rings hold frames of their MTU.
fn check_resources(v: &mut Validator, file: &ConfigFile, ports: &[Port]) -> super::resources::PortRings {
    let max_ports = file.profile.max_ports();
    if ports.len() > max_ports {
        v.error("ports", format!("{} ports, the {:?} profile takes {max_ports}", ports.len(), file.profile));
    }
    let largest_mtu = ports.iter().filter(|p| p.kind == PortKind::Afpacket).map(|p| p.mtu).max().unwrap_or(1500);
    let mut errors = Vec::new();
    let rings = super::resources::check_rings(file.port_rings.as_ref(), largest_mtu, &mut errors);
    for (path, reason) in errors {
        v.error(path, reason);
    }
    rings
}

/// What a backend cannot do is refused here, naming the backend, rather
/// than failing (or being ignored) when it is applied.
fn check_backend(v: &mut Validator, file: &ConfigFile) {
    if file.backend != BackendKind::Kernel {
        return;
    }
    if file.qos.is_some() {
        v.error(
            "qos",
            "backend kernel: the traffic manager is the soft backend's (the kernel's qdiscs are not programmed)",
        );
    }
    for (i, port) in file.ports.iter().enumerate() {
        if port.speed.is_some() {
            v.error(format!("ports[{i}].speed"), "backend kernel: line rates are the soft backend's traffic manager's");
        }
    }
    for (i, port) in file.ports.iter().enumerate() {
        if port.kind == PortKind::Tap {
            v.error(
                format!("ports[{i}].kind"),
                "backend kernel: the kernel forwards between existing netdevs; TAP ports are the soft backend's",
            );
        }
    }
}

fn check_name(v: &mut Validator, name: &str) {
    if name.is_empty() {
        v.error("name", "must not be empty");
    } else if name.len() > 64 {
        v.error("name", "longer than 64 characters");
    } else if !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) {
        v.error("name", format!("{name:?} may only hold letters, digits, '-', '_' and '.'"));
    }
}

fn check_lldp(v: &mut Validator, lldp: &LldpFile) -> Lldp {
    // IEEE 802.1AB-2016 10.5.4.2: msgTxInterval 1..3600, msgTxHold 1..100;
    // TTL = min(65535, interval * hold).
    if !(1..=3600).contains(&lldp.tx_interval_secs) {
        v.error("lldp.tx_interval_secs", format!("{} is outside 1..=3600", lldp.tx_interval_secs));
    }
    if !(1..=100).contains(&lldp.hold_multiplier) {
        v.error("lldp.hold_multiplier", format!("{} is outside 1..=100", lldp.hold_multiplier));
    }
    let ttl = (u64::from(lldp.tx_interval_secs) * u64::from(lldp.hold_multiplier)).min(65535) as u16;
    Lldp { enabled: lldp.enabled, tx_interval_secs: lldp.tx_interval_secs, ttl_secs: ttl }
}

/// The `N` of a front-panel port name `ethN`, N >= 1.
fn port_number(name: &str) -> Result<u16, String> {
    let digits = name.strip_prefix("eth").filter(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
    match digits.map(str::parse::<u16>) {
        Some(Ok(0)) => Err("eth0 is the management interface; it is never a front-panel port".into()),
        Some(Ok(n)) if !digits.unwrap().starts_with('0') => Ok(n),
        _ => Err(format!("{name:?} is not a front-panel port name (eth1..ethN)")),
    }
}

/// Checks an interface address: not a /0, not an IPv4 network or broadcast
/// address on a subnet that has them (prefix < 31).
fn check_address(v: &mut Validator, path: String, address: &IpNetwork) {
    if address.prefix() == 0 {
        v.error(path, format!("{address} has a zero-length prefix"));
        return;
    }
    if let IpNetwork::V4(net) = address
        && net.prefix() < 31
    {
        if net.ip() == net.network() {
            v.error(path, format!("{address} is the subnet's network address"));
        } else if net.ip() == net.broadcast() {
            v.error(path, format!("{address} is the subnet's broadcast address"));
        }
    }
}

fn check_vlan_id(v: &mut Validator, path: String, id: u16) -> bool {
    if VLAN_RANGE.contains(&id) {
        true
    } else {
        v.error(path, format!("VLAN id {id} is outside 1..=4094"));
        false
    }
}

fn check_vlans(v: &mut Validator, vlans: &[VlanFile]) -> Vec<Vlan> {
    let mut seen: HashMap<u16, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, vlan) in vlans.iter().enumerate() {
        if !check_vlan_id(v, format!("vlans[{i}].id"), vlan.id) {
            continue;
        }
        if let Some(first) = seen.insert(vlan.id, i) {
            v.error(format!("vlans[{i}].id"), format!("duplicate VLAN {} (first declared at vlans[{first}])", vlan.id));
            continue;
        }
        for (j, address) in vlan.addresses.iter().enumerate() {
            check_address(v, format!("vlans[{i}].addresses[{j}]"), address);
        }
        let mac = vlan.mac.as_deref().and_then(|text| match text.parse::<EthernetAddress>() {
            Ok(mac) if mac.is_unicast() && mac != EthernetAddress::ZERO => Some(mac),
            Ok(_) => {
                v.error(format!("vlans[{i}].mac"), format!("{text} is not a unicast MAC"));
                None
            }
            Err(_) => {
                v.error(format!("vlans[{i}].mac"), format!("{text:?} is not a MAC address"));
                None
            }
        });
        if vlan.mac.is_some() && vlan.addresses.is_empty() {
            v.error(format!("vlans[{i}].mac"), "only a VLAN with addresses has a router interface");
        }
        if vlan.vrf.is_some() && vlan.addresses.is_empty() {
            v.error(format!("vlans[{i}].vrf"), "only a VLAN with addresses has a router interface");
        }
        let mut static_macs: Vec<StaticMac> = Vec::new();
        for (j, entry) in vlan.static_macs.iter().enumerate() {
            let path = format!("vlans[{i}].static_macs[{j}].mac");
            match entry.mac.parse::<EthernetAddress>() {
                Ok(mac) if !mac.is_unicast() || mac == EthernetAddress::ZERO => {
                    v.error(path, format!("{} is not a unicast MAC", entry.mac))
                }
                Ok(mac) if static_macs.iter().any(|s| s.mac == mac) => {
                    v.error(path, format!("{} listed twice", entry.mac))
                }
                Ok(mac) => static_macs.push(StaticMac { mac, port: entry.port.clone(), sticky: entry.sticky }),
                Err(_) => v.error(path, format!("{:?} is not a MAC address", entry.mac)),
            }
        }
        out.push(Vlan {
            id: vlan.id,
            name: vlan.name.clone(),
            addresses: vlan.addresses.clone(),
            vrf: vlan.vrf.clone(),
            mac,
            static_macs,
        });
    }
    out.sort_by_key(|vlan| vlan.id);
    out
}

fn check_ports(v: &mut Validator, file: &ConfigFile, declared: &BTreeSet<u16>) -> Vec<Port> {
    let mut index_of: HashMap<&str, usize> = HashMap::new();
    for (i, port) in file.ports.iter().enumerate() {
        if let Err(reason) = port_number(&port.name) {
            v.error(format!("ports[{i}].name"), reason);
        } else if let Some(first) = index_of.insert(&port.name, i) {
            v.error(format!("ports[{i}].name"), format!("duplicate port {} (first at ports[{first}])", port.name));
        }
    }

    // Memberships declared from the VLAN side, per port index.
    let mut from_vlans: BTreeMap<usize, Vec<(u16, String)>> = BTreeMap::new();
    for (i, vlan) in file.vlans.iter().enumerate() {
        for (j, member) in vlan.members.iter().enumerate() {
            let path = format!("vlans[{i}].members[{j}]");
            match index_of.get(member.as_str()) {
                Some(&p) => from_vlans.entry(p).or_default().push((vlan.id, path)),
                None => v.error(path, format!("unknown port {member}")),
            }
        }
    }

    let mut out = Vec::new();
    for (i, port) in file.ports.iter().enumerate() {
        let at = |field: &str| format!("ports[{i}].{field}");
        if !MTU_RANGE.contains(&port.mtu) {
            v.error(at("mtu"), format!("{} is outside 68..=9216", port.mtu));
        }
        let vlan_side = from_vlans.remove(&i).unwrap_or_default();
        let check_declared = |v: &mut Validator, path: String, id: u16| {
            if check_vlan_id(v, path.clone(), id) && !declared.contains(&id) {
                v.error(path, format!("VLAN {id} is not declared in vlans"));
            }
        };
        let ib = super::ib::check_port(&mut v.errors, file, i);
        let mode = match port.mode {
            ModeKind::Ib => {
                for (_, path) in &vlan_side {
                    v.error(path.clone(), format!("{} is an IB-like port; it cannot join a VLAN", port.name));
                }
                ib.map(PortMode::Ib)
            }
            ModeKind::Access => {
                for (field, set) in [
                    ("vlans", port.vlans.is_some()),
                    ("native", port.native.is_some()),
                    ("addresses", port.addresses.is_some()),
                ] {
                    if set {
                        v.error(at(field), "not valid on an access port");
                    }
                }
                if let Some(vlan) = port.vlan {
                    check_declared(v, at("vlan"), vlan);
                }
                let mut candidates: BTreeSet<u16> = port.vlan.into_iter().collect();
                candidates.extend(vlan_side.iter().map(|(id, _)| *id));
                match candidates.len() {
                    0 => {
                        v.error(at("vlan"), "an access port needs a VLAN (here or in a VLAN's members)");
                        None
                    }
                    1 => Some(PortMode::Access { vlan: *candidates.first().unwrap() }),
                    _ => {
                        let list: Vec<String> = candidates.iter().map(u16::to_string).collect();
                        v.error(
                            at("vlan"),
                            format!("an access port is in exactly one VLAN, this one is in {}", list.join(", ")),
                        );
                        None
                    }
                }
            }
            ModeKind::Trunk => {
                for (field, set) in [("vlan", port.vlan.is_some()), ("addresses", port.addresses.is_some())] {
                    if set {
                        v.error(at(field), "not valid on a trunk port");
                    }
                }
                let mut tagged = BTreeSet::new();
                for (j, &id) in port.vlans.iter().flatten().enumerate() {
                    let path = format!("ports[{i}].vlans[{j}]");
                    check_declared(v, path.clone(), id);
                    if !tagged.insert(id) {
                        v.error(path, format!("VLAN {id} listed twice"));
                    }
                }
                tagged.extend(vlan_side.iter().map(|(id, _)| *id));
                if let Some(native) = port.native {
                    check_declared(v, at("native"), native);
                    // The native VLAN is carried untagged, not also tagged.
                    tagged.remove(&native);
                }
                if tagged.is_empty() && port.native.is_none() {
                    v.error(at("vlans"), "a trunk port needs at least one VLAN");
                }
                Some(PortMode::Trunk { vlans: tagged.into_iter().collect(), native: port.native })
            }
            ModeKind::Routed => {
                for (field, set) in
                    [("vlan", port.vlan.is_some()), ("vlans", port.vlans.is_some()), ("native", port.native.is_some())]
                {
                    if set {
                        v.error(at(field), "not valid on a routed port");
                    }
                }
                for (_, path) in &vlan_side {
                    v.error(path.clone(), format!("{} is a routed port; it cannot join a VLAN", port.name));
                }
                let addresses = port.addresses.clone().unwrap_or_default();
                for (j, address) in addresses.iter().enumerate() {
                    check_address(v, format!("ports[{i}].addresses[{j}]"), address);
                }
                Some(PortMode::Routed { addresses })
            }
        };
        if port.redirects.is_some() && !matches!(mode, Some(PortMode::Routed { .. })) {
            v.error(at("redirects"), "only a routed port sends redirects".to_string());
        }
        if port.vrf.is_some() {
            match &mode {
                Some(PortMode::Routed { addresses }) if addresses.is_empty() => {
                    v.error(at("vrf"), "only a routed port with addresses routes in a VRF")
                }
                Some(PortMode::Routed { .. }) | None => {}
                Some(_) => v.error(at("vrf"), "only a routed port routes in a VRF (an SVI's is the VLAN's vrf)"),
            }
        }
        if let (Ok(number), Some(mode)) = (port_number(&port.name), mode) {
            out.push(Port {
                name: port.name.clone(),
                number,
                kind: port.kind,
                admin_up: port.admin == AdminState::Up,
                mtu: port.mtu,
                description: port.description.clone(),
                mode,
                redirects: port.redirects.unwrap_or(true),
                vrf: port.vrf.clone(),
            });
        }
    }
    out
}

fn check_loopback(v: &mut Validator, loopback: &[IpNetwork]) {
    for (i, address) in loopback.iter().enumerate() {
        let host_len = if address.is_ipv4() { 32 } else { 128 };
        if address.prefix() != host_len {
            v.error(
                format!("loopback[{i}]"),
                format!("{address}: loopback addresses are host addresses (/{host_len})"),
            );
        }
    }
}

/// The field path of every address, in the order [`Config::addresses`]
/// lists them (routed ports, SVIs, loopback), with the VRF it is in
/// (`None`: the default one).
fn address_paths(file: &ConfigFile) -> Vec<(IpNetwork, String, Option<&str>)> {
    let mut all = Vec::new();
    for (i, port) in file.ports.iter().enumerate() {
        if port.mode == ModeKind::Routed {
            for (j, a) in port.addresses.iter().flatten().enumerate() {
                all.push((*a, format!("ports[{i}].addresses[{j}]"), port.vrf.as_deref()));
            }
        }
    }
    for (i, vlan) in file.vlans.iter().enumerate() {
        for (j, a) in vlan.addresses.iter().enumerate() {
            all.push((*a, format!("vlans[{i}].addresses[{j}]"), vlan.vrf.as_deref()));
        }
    }
    for (i, a) in file.loopback.iter().enumerate() {
        all.push((*a, format!("loopback[{i}]"), None));
    }
    all
}

fn overlaps(a: &IpNetwork, b: &IpNetwork) -> bool {
    a.is_ipv4() == b.is_ipv4() && (a.contains(b.network()) || b.contains(a.network()))
}

/// Two interface subnets that overlap in one VRF make forwarding
/// ambiguous; in different VRFs they are separate tables (tenants reuse
/// address space), and each VRF's routes, neighbours and ARP/ND
/// suppression bindings are its own.
fn check_overlaps(v: &mut Validator, file: &ConfigFile, _config: &Config) {
    let all = address_paths(file);
    for (i, (a, path_a, vrf_a)) in all.iter().enumerate() {
        for (b, path_b, vrf_b) in &all[..i] {
            if vrf_a == vrf_b && overlaps(a, b) {
                v.error(path_a.clone(), format!("{a} overlaps {b} at {path_b}"));
            }
        }
    }
}

fn check_vxlan(v: &mut Validator, vxlan: &VxlanFile, config: &Config, declared: &BTreeSet<u16>) -> Vxlan {
    let local: BTreeSet<IpAddr> = config.addresses().iter().map(|(a, _)| a.ip()).collect();
    if !local.contains(&IpAddr::V4(vxlan.source)) {
        v.error(
            "vxlan.source",
            format!("{} is not an address of this switch (loopback, routed port or SVI)", vxlan.source),
        );
    }
    if vxlan.udp_port == 0 {
        v.error("vxlan.udp_port", "must not be 0");
    }
    let mut vnis: HashMap<u32, usize> = HashMap::new();
    let mut vlans: HashMap<u16, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, map) in vxlan.vnis.iter().enumerate() {
        let at = |field: &str| format!("vxlan.vnis[{i}].{field}");
        if !VNI_RANGE.contains(&map.vni) {
            v.error(at("vni"), format!("VNI {} is outside 1..=16777215", map.vni));
        } else if let Some(first) = vnis.insert(map.vni, i) {
            v.error(at("vni"), format!("VNI {} is already mapped at vxlan.vnis[{first}]", map.vni));
        }
        if check_vlan_id(v, at("vlan"), map.vlan) {
            if !declared.contains(&map.vlan) {
                v.error(at("vlan"), format!("VLAN {} is not declared in vlans", map.vlan));
            } else if let Some(first) = vlans.insert(map.vlan, i) {
                v.error(at("vlan"), format!("VLAN {} is already mapped at vxlan.vnis[{first}]", map.vlan));
            }
        }
        let mut flood = BTreeSet::new();
        for (j, remote) in map.flood.iter().enumerate() {
            let path = format!("vxlan.vnis[{i}].flood[{j}]");
            if *remote == vxlan.source || local.contains(&IpAddr::V4(*remote)) {
                v.error(path, format!("{remote} is an address of this switch, not a remote VTEP"));
            } else if remote.is_unspecified() || remote.is_broadcast() || remote.is_multicast() {
                v.error(path, format!("{remote} is not a unicast address"));
            } else if !flood.insert(*remote) {
                v.error(path, format!("{remote} listed twice"));
            }
        }
        out.push(VniMap { vni: map.vni, vlan: map.vlan, flood: map.flood.clone() });
    }
    Vxlan { source: vxlan.source, udp_port: vxlan.udp_port, vnis: out }
}

fn host_len(address: &IpNetwork) -> u8 {
    if address.is_ipv4() { 32 } else { 128 }
}

fn check_routes(v: &mut Validator, routes: &[RouteFile], config: &Config) -> Vec<StaticRoute> {
    let addresses = config.addresses();
    let mut prefixes: HashMap<IpNetwork, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, route) in routes.iter().enumerate() {
        let prefix = route.prefix;
        if prefix.ip() != prefix.network() {
            let canonical = IpNetwork::new(prefix.network(), prefix.prefix()).expect("same prefix length");
            v.error(format!("routes[{i}].prefix"), format!("{prefix} has host bits set; did you mean {canonical}?"));
        } else if let Some(first) = prefixes.insert(prefix, i) {
            v.error(format!("routes[{i}].prefix"), format!("duplicate route {prefix} (first at routes[{first}])"));
        } else if let Some((a, _)) =
            addresses.iter().find(|(a, _)| prefix.prefix() == host_len(a) && a.ip() == prefix.ip())
        {
            v.error(format!("routes[{i}].prefix"), format!("{prefix} is an address of this switch ({a})"));
        } else if let Some((a, _)) = addresses
            .iter()
            .find(|(a, iface)| iface.is_some() && IpNetwork::new(a.network(), a.prefix()).ok() == Some(prefix))
        {
            v.error(format!("routes[{i}].prefix"), format!("{prefix} is the connected subnet of {a}"));
        }
        if route.next_hops.is_empty() {
            v.error(format!("routes[{i}].next_hops"), "a route needs at least one next hop");
        }
        let mut seen = BTreeSet::new();
        let mut next_hops = Vec::new();
        for (j, &hop) in route.next_hops.iter().enumerate() {
            let path = format!("routes[{i}].next_hops[{j}]");
            if hop.is_ipv4() != prefix.is_ipv4() {
                v.error(path, format!("next hop {hop} is not of the prefix's address family"));
                continue;
            }
            if !seen.insert(hop) {
                v.error(path, format!("next hop {hop} listed twice"));
                continue;
            }
            if addresses.iter().any(|(a, _)| a.ip() == hop) {
                v.error(path, format!("next hop {hop} is an address of this switch"));
                continue;
            }
            let connected = addresses.iter().find_map(|(a, iface)| match iface {
                Some(iface) if a.contains(hop) => Some(iface.clone()),
                _ => None,
            });
            match connected {
                Some(iface) => next_hops.push((hop, iface)),
                None => v.error(path, format!("next hop {hop} is not in a connected subnet")),
            }
        }
        out.push(StaticRoute { prefix, next_hops });
    }
    out
}
