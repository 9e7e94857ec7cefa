//! BGP-EVPN interop with FRR as a VTEP: FRR's bgpd and zebra drive a kernel
//! VXLAN device and bridge (`advertise-all-vni`, the VXLAN device with
//! `nolearning`, as FRR's own EVPN topotests build it) and peer EVPN with a
//! `switchd` leaf over eBGP on their link. Neither side has a static flood
//! list: FRR's kernel flood entry and its remote MACs come from our type 3
//! and type 2 routes; ours from FRR's.
//!
//! ```text
//!   [l1 switchd AS65101 VTEP 10.255.0.1] eth1 --10.1.0.0/31-- eth1 [fr FRR AS65102 VTEP 10.255.0.2]
//!             eth3 (VLAN 10 = VNI 10100)                          eth3 in br10100 with vx10100
//!          [h1 192.168.100.11]                                  [h2 192.168.100.12]
//! ```
//!
//! Checked: the hosts ping each other across; FRR's `show bgp l2vpn evpn
//! json` holds our type 3 and our host's type 2 with our RD, route target,
//! VNI, next hop and VXLAN encapsulation; FRR put our MAC and our VTEP in
//! the kernel (`bridge fdb`); our `show evpn mac vni all` has FRR's host as
//! remote behind FRR's VTEP, and `show evpn vni` floods to it.
//!
//! The second test adds symmetric IRB and type 5 routes: FRR's VRF is a
//! network namespace (this kernel has no VRF devices), hosts in VNI 100
//! behind FRR and VNI 200 behind us route to each other over L3VNI 4001;
//! each side's type 2 MAC+IP and type 5 routes are checked in the other's
//! tables and forwarding state (see [`irb`]).

use std::time::{Duration, Instant};

use fabric_tests::frr::{Frr, frr_available};
use fabric_tests::{Netns, Switchd, veth};
use serde_json::Value;

const CONVERGE: Duration = Duration::from_secs(60);
const VNI: u32 = 10100;

const SWITCHD: &str = "name: l1
lldp: { enabled: false }
loopback: [10.255.0.1/32]
ports:
  - { name: eth1, mode: routed, addresses: [10.1.0.0/31] }
  - { name: eth3, mode: access, vlan: 10 }
vlans:
  - { id: 10 }
vxlan:
  source: 10.255.0.1
  vnis: [{ vni: 10100, vlan: 10 }]
bgp:
  asn: 65101
  timers: { hold_time: 9, connect_retry: 2 }
  redistribute: [loopback]
  neighbors:
    - { interface: eth1, remote_as: 65102, families: [ipv4-unicast, l2vpn-evpn] }
  evpn:
    vtep_ip: 10.255.0.1
    vnis: [{ vni: 10100 }]
";

/// bgpd.conf of the FRR VTEP: its loopback in IPv4 unicast (the VXLAN
/// underlay), every VNI zebra knows advertised in L2VPN EVPN.
const FRR: &str = "frr defaults datacenter
hostname fr
log stdout informational
router bgp 65102
 bgp router-id 10.255.0.2
 no bgp ebgp-requires-policy
 no bgp default ipv4-unicast
 neighbor 10.1.0.0 remote-as 65101
 neighbor 10.1.0.0 timers 1 3
 neighbor 10.1.0.0 timers connect 1
 address-family ipv4 unicast
  network 10.255.0.2/32
  neighbor 10.1.0.0 activate
 exit-address-family
 address-family l2vpn evpn
  neighbor 10.1.0.0 activate
  advertise-all-vni
 exit-address-family
exit
";

fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + CONVERGE;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out after {CONVERGE:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn json(sw: &Switchd, args: &[&str]) -> Value {
    let mut argv = args.to_vec();
    argv.push("--json");
    serde_json::from_str(&sw.swcli(&argv)).expect("swcli --json")
}

fn mac_of(ns: &Netns) -> String {
    ns.exec(&["cat", "/sys/class/net/eth0/address"]).trim().to_lowercase()
}

/// The FRR leaf's kernel VTEP: bridge br10100 of the host port and a VXLAN
/// device with no data-plane learning and no flood entry (zebra adds both
/// from EVPN).
fn kernel_vtep(fr: &Netns) {
    fr.ip(&["addr", "add", "10.255.0.2/32", "dev", "lo"]);
    fr.ip(&["addr", "add", "10.1.0.1/31", "dev", "eth1"]);
    fr.ip(&["link", "add", "br10100", "type", "bridge"]);
    let vni = VNI.to_string();
    fr.ip(&[
        "link",
        "add",
        "vx10100",
        "type",
        "vxlan",
        "id",
        &vni,
        "local",
        "10.255.0.2",
        "dstport",
        "4789",
        "nolearning",
    ]);
    for member in ["vx10100", "eth3"] {
        fr.ip(&["link", "set", member, "master", "br10100"]);
        fr.ip(&["link", "set", member, "up"]);
    }
    fr.ip(&["link", "set", "br10100", "up"]);
}

/// Waits for the route of `route_type` from RD `rd` in FRR's `show bgp l2vpn evpn
/// json` whose prefix contains `needle`: (prefix, best path). Panics with
/// FRR's table when it does not come.
fn frr_route(frr: &Frr, rd: &str, route_type: u64, needle: &str) -> (String, Value) {
    let deadline = Instant::now() + CONVERGE;
    loop {
        if let Some(found) = find_frr_route(frr, rd, route_type, needle) {
            return found;
        }
        if Instant::now() >= deadline {
            let table = frr.json("show bgp l2vpn evpn json");
            panic!("no type {route_type} route with {needle} from RD {rd} in FRR: {table:#}");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn find_frr_route(frr: &Frr, rd: &str, route_type: u64, needle: &str) -> Option<(String, Value)> {
    let table = frr.json("show bgp l2vpn evpn json");
    let routes = table.get(rd)?.as_object()?;
    routes.iter().filter(|(prefix, _)| prefix.contains(needle)).find_map(|(prefix, entry)| {
        let paths = entry["paths"].as_array()?;
        // FRR 8 lists path objects; some versions nest them in arrays.
        let flat = paths.iter().flat_map(|p| p.as_array().map_or_else(|| vec![p], |a| a.iter().collect()));
        let best = flat.into_iter().find(|p| p["routeType"].as_u64() == Some(route_type) && p["bestpath"] == true)?;
        Some((prefix.clone(), best.clone()))
    })
}

#[test]
fn frr_vtep_and_switchd_vtep_build_the_overlay_together() {
    if !frr_available("evpn_frr") || !fabric_tests::require_root_and_tools("evpn_frr", &["ip", "bridge", "ping"]) {
        return;
    }
    let l1 = Netns::new("efl");
    let fr = Netns::new("eff");
    let h1 = Netns::new("efa");
    let h2 = Netns::new("efb");
    veth(&l1, "eth1", &fr, "eth1");
    veth(&h1, "eth0", &l1, "eth3");
    veth(&h2, "eth0", &fr, "eth3");
    for (h, addr) in [(&h1, "192.168.100.11/24"), (&h2, "192.168.100.12/24")] {
        h.host_setup("eth0", addr, None);
        // Room for the 50 bytes of VXLAN encapsulation.
        h.ip(&["link", "set", "eth0", "mtu", "1450"]);
    }
    kernel_vtep(&fr);
    let frr = Frr::start_with_zebra(&fr, FRR);
    let switchd = Switchd::start(&l1, SWITCHD);
    frr.wait_established("10.1.0.0", CONVERGE);

    // Each floods the VNI to the other: ours from FRR's type 3, FRR's
    // (zebra's all-zeros entry on the VXLAN device) from ours.
    wait_for("l1 flooding to FRR's VTEP", || {
        let vnis = json(&switchd, &["show", "evpn", "vni"]);
        let vni = vnis.as_array()?.iter().find(|v| v["vni"] == VNI)?.clone();
        (vni["remote_vteps"] == serde_json::json!(["10.255.0.2"])).then_some(())
    });
    wait_for("FRR's kernel flood entry to 10.255.0.1", || {
        let fdb = fr.exec(&["bridge", "fdb", "show", "dev", "vx10100"]);
        fdb.lines().any(|l| l.starts_with("00:00:00:00:00:00") && l.contains("dst 10.255.0.1")).then_some(())
    });

    assert!(h1.ping_until("192.168.100.12", CONVERGE), "h1 -> h2 across switchd's and FRR's VTEPs");
    assert!(h1.ping("192.168.100.12", 3) && h2.ping("192.168.100.11", 3), "every reply both ways");

    let (mac1, mac2) = (mac_of(&h1), mac_of(&h2));
    // Ours in FRR's table: the type 3 and h1's type 2, RD router-id:VNI,
    // RT ASN:VNI, VNI as the label, our VTEP as next hop, VXLAN encapsulation.
    let rd = "10.255.0.1:10100";
    let (prefix, imet) = frr_route(&frr, rd, 3, "10.255.0.1");
    assert_eq!(prefix, "[3]:[0]:[32]:[10.255.0.1]");
    let (prefix, macip) = frr_route(&frr, rd, 2, &mac1);
    assert_eq!(prefix, format!("[2]:[0]:[48]:[{mac1}]"));
    for (what, path) in [("type 3", &imet), ("type 2", &macip)] {
        let next_hop = path["nexthops"][0]["ip"].as_str();
        assert_eq!(next_hop, Some("10.255.0.1"), "{what}: {path:#}");
        let communities = path["extendedCommunity"]["string"].as_str().unwrap_or_default();
        assert!(communities.contains("RT:65101:10100") && communities.contains("ET:8"), "{what}: {path:#}");
        assert_eq!(path["valid"], true, "{what}: {path:#}");
    }

    // FRR imported h1's MAC into VNI 10100 (our label) and installed it in
    // the kernel: on that VNI's VXLAN device, behind our VTEP.
    wait_for("h1's MAC in FRR's kernel FDB", || {
        let fdb = fr.exec(&["bridge", "fdb", "show", "dev", "vx10100"]);
        fdb.lines().any(|l| l.starts_with(&mac1) && l.contains("dst 10.255.0.1")).then_some(())
    });

    // FRR's host in ours: remote behind FRR's VTEP, from its type 2.
    let remote = wait_for("h2's MAC in show evpn mac", || {
        json(&switchd, &["show", "evpn", "mac", "vni", "all"])
            .as_array()?
            .iter()
            .find(|m| m["mac"] == mac2.as_str())
            .cloned()
    });
    assert_eq!((remote["kind"].as_str(), remote["vtep"].as_str()), (Some("remote"), Some("10.255.0.2")), "{remote}");
    let fdb = switchd.show_rows("mac");
    let entry = fdb.iter().find(|m| m["mac"].as_str().is_some_and(|m| m.eq_ignore_ascii_case(&mac2)));
    let dest = entry.and_then(|e| e["destination"].as_str()).unwrap_or_default();
    assert!(dest.contains("10.255.0.2"), "l1's FDB entry for {mac2}: {entry:?}");
    let table = json(&switchd, &["show", "bgp", "l2vpn", "evpn", "route", "type", "2"]);
    let theirs =
        table["routes"].as_array().unwrap().iter().find(|r| r["prefix"].as_str().is_some_and(|p| p.contains(&mac2)));
    let best = &theirs.unwrap_or_else(|| panic!("FRR's type 2 for {mac2}: {table:#}"))["paths"][0];
    assert_eq!(
        (best["next_hop"].as_str(), best["label1"].as_u64()),
        (Some("10.255.0.2"), Some(u64::from(VNI))),
        "{best}"
    );
}

/// Symmetric IRB and type 5 routes with FRR as the other VTEP. This kernel
/// has no VRF devices (CONFIG_NET_VRF), so FRR's VRF is a network namespace
/// (zebra `--vrfwnetns`, as FRR's bgp_evpn_rt5 topotest runs it) holding the
/// tenant's bridges: br100 (VNI 100, the host port, SVI 172.16.1.1) and
/// br4001 (L3VNI 4001, the router MAC); their VXLAN devices are created in
/// FRR's namespace (the underlay) and moved in.
///
/// ```text
///   [l1 switchd AS65101 VTEP 10.255.0.1] eth1 --10.1.0.0/31-- eth1 [fr FRR AS65102 VTEP 10.255.0.2]
///     VRF tenant1, L3VNI 4001                                   VRF = netns "frv..": br100, br4001
///     eth3 (VLAN 20 = VNI 200, SVI 172.16.2.1)                  eth3 in br100 (VNI 100)
///          [h1 172.16.2.11]                                          [h2 172.16.1.12]
/// ```
mod irb {
    use super::*;

    pub const OUR_RMAC: &str = "02:cc:00:00:00:01";
    pub const FRR_RMAC: &str = "02:dd:00:00:00:02";

    pub const SWITCHD: &str = "name: l1
lldp: { enabled: false }
loopback: [10.255.0.1/32]
ports:
  - { name: eth1, mode: routed, addresses: [10.1.0.0/31] }
  - { name: eth3, mode: access, vlan: 20 }
vlans:
  - { id: 20, addresses: [172.16.2.1/24], vrf: tenant1, mac: \"02:00:5e:00:01:01\" }
vxlan:
  source: 10.255.0.1
  vnis: [{ vni: 200, vlan: 20 }]
bgp:
  asn: 65101
  timers: { hold_time: 9, connect_retry: 2 }
  redistribute: [loopback]
  neighbors:
    - { interface: eth1, remote_as: 65102, families: [ipv4-unicast, l2vpn-evpn] }
  evpn:
    vtep_ip: 10.255.0.1
    vnis: [{ vni: 200, vrf: tenant1 }]
    vrfs: [{ name: tenant1, l3vni: 4001, router_mac: \"02:cc:00:00:00:01\", networks: [10.9.1.0/24] }]
";

    /// bgpd.conf: the underlay and EVPN as in [`super::FRR`], and the VRF's
    /// BGP instance advertising its connected subnet as type 5.
    pub fn frr_config(vrf: &str) -> String {
        format!(
            "frr defaults datacenter
hostname fr
log stdout informational
router bgp 65102
 bgp router-id 10.255.0.2
 no bgp ebgp-requires-policy
 no bgp default ipv4-unicast
 neighbor 10.1.0.0 remote-as 65101
 neighbor 10.1.0.0 timers 1 3
 neighbor 10.1.0.0 timers connect 1
 address-family ipv4 unicast
  network 10.255.0.2/32
  neighbor 10.1.0.0 activate
 exit-address-family
 address-family l2vpn evpn
  neighbor 10.1.0.0 activate
  advertise-all-vni
 exit-address-family
exit
router bgp 65102 vrf {vrf}
 bgp router-id 10.255.0.2
 no bgp ebgp-requires-policy
 address-family ipv4 unicast
  redistribute connected
 exit-address-family
 address-family l2vpn evpn
  advertise ipv4 unicast
 exit-address-family
exit
"
        )
    }

    /// FRR's VTEP: underlay in `fr`, the tenant in the netns VRF `vrf`.
    pub fn kernel_vtep(fr: &Netns, vrf: &Netns) {
        fr.ip(&["addr", "add", "10.255.0.2/32", "dev", "lo"]);
        fr.ip(&["addr", "add", "10.1.0.1/31", "dev", "eth1"]);
        for (vx, vni, br) in [("vx100", "100", "br100"), ("vx4001", "4001", "br4001")] {
            fr.ip(&[
                "link",
                "add",
                vx,
                "type",
                "vxlan",
                "id",
                vni,
                "local",
                "10.255.0.2",
                "dstport",
                "4789",
                "nolearning",
            ]);
            fr.ip(&["link", "set", vx, "netns", vrf.name()]);
            vrf.ip(&["link", "add", br, "type", "bridge", "stp_state", "0"]);
            vrf.ip(&["link", "set", vx, "master", br]);
            vrf.ip(&["link", "set", vx, "type", "bridge_slave", "learning", "off"]);
        }
        vrf.ip(&["link", "set", "br4001", "address", FRR_RMAC]);
        vrf.ip(&["link", "set", "eth3", "master", "br100"]);
        for dev in ["lo", "vx100", "vx4001", "br100", "br4001", "eth3"] {
            vrf.ip(&["link", "set", dev, "up"]);
        }
        vrf.ip(&["addr", "add", "172.16.1.1/24", "dev", "br100"]);
        vrf.sysctl("net.ipv4.ip_forward", "1");
    }
}

#[test]
fn frr_netns_vrf_and_switchd_route_between_vnis_with_type_2_and_type_5() {
    if !frr_available("evpn_frr")
        || !fabric_tests::require_root_and_tools("evpn_frr", &["ip", "bridge", "ping", "unshare", "nsenter"])
    {
        return;
    }
    let l1 = Netns::new("efl");
    let fr = Netns::new("eff");
    let vrf = Netns::new("efv");
    let h1 = Netns::new("efa");
    let h2 = Netns::new("efb");
    veth(&l1, "eth1", &fr, "eth1");
    veth(&h1, "eth0", &l1, "eth3");
    veth(&h2, "eth0", &vrf, "eth3");
    for (h, addr, gw) in [(&h1, "172.16.2.11/24", "172.16.2.1"), (&h2, "172.16.1.12/24", "172.16.1.1")] {
        h.host_setup("eth0", addr, Some(gw));
        h.ip(&["link", "set", "eth0", "mtu", "1450"]);
    }
    irb::kernel_vtep(&fr, &vrf);
    let zebra_conf = format!("vrf {}\n vni 4001\nexit-vrf\n", vrf.name());
    let frr = Frr::start_with_netns_vrfs(&fr, &zebra_conf, &irb::frr_config(vrf.name()), &[&vrf]);
    let switchd = Switchd::start(&l1, irb::SWITCHD);
    frr.wait_established("10.1.0.0", CONVERGE);

    // Each host reaches its gateway, so each VTEP learns its host's MAC and IP.
    assert!(h1.ping_until("172.16.2.1", CONVERGE) && h2.ping_until("172.16.1.1", CONVERGE), "hosts -> gateways");
    let (mac1, mac2) = (mac_of(&h1), mac_of(&h2));

    // Ours in FRR's table. h1's MAC+IP: RD router-id:VNI, both VNIs as
    // labels (FRR shows "L2/L3"), the MAC-VRF's and the IP-VRF's RTs, VXLAN,
    // our router MAC, our VTEP as next hop.
    let show = format!("show bgp l2vpn evpn route rd 10.255.0.1:200 mac {mac1} ip 172.16.2.11 json");
    let macip = wait_for("our MAC+IP type 2 in FRR", || {
        let table = frr.json(&show);
        (table["rd"] == "10.255.0.1:200")
            .then(|| best_path(&table[format!("[2]:[0]:[48]:[{mac1}]:[32]:[172.16.2.11]")]))?
    });
    assert_eq!(macip["vni"], "200/4001", "{macip:#}");
    assert_irb_attrs(&macip, &["RT:65101:200", "RT:65101:4001", "ET:8", &format!("Rmac:{}", irb::OUR_RMAC)]);
    // Our type 5 for tenant1's network: RD router-id:L3VNI, the L3VNI.
    let prefix5 = wait_for("our type 5 in FRR", || {
        let table = frr.json("show bgp l2vpn evpn route rd 10.255.0.1:4001 type 5 json");
        best_path(&table["10.255.0.1:4001"]["[5]:[0]:[24]:[10.9.1.0]"])
    });
    assert_eq!(prefix5["vni"], "4001", "{prefix5:#}");
    assert_irb_attrs(&prefix5, &["RT:65101:4001", "ET:8", &format!("Rmac:{}", irb::OUR_RMAC)]);

    // zebra put both in the VRF's kernel table through our VTEP, with our
    // router MAC as the neighbour on the L3VNI's bridge and in its FDB.
    for prefix in ["10.9.1.0/24", "172.16.2.11"] {
        wait_for(&format!("{prefix} in FRR's VRF"), || {
            let route = vrf.ip(&["route", "show", prefix]);
            route.contains("via 10.255.0.1 dev br4001").then_some(())
        });
    }
    let neigh = vrf.ip(&["neigh", "show", "10.255.0.1", "dev", "br4001"]);
    assert!(neigh.contains(irb::OUR_RMAC), "FRR's neighbour for our VTEP: {neigh}");
    let fdb = vrf.exec(&["bridge", "fdb", "show", "dev", "vx4001"]);
    assert!(fdb.lines().any(|l| l.starts_with(irb::OUR_RMAC) && l.contains("dst 10.255.0.1")), "{fdb}");

    // FRR's in ours: its type 5 (br100's subnet) and h2's MAC+IP in
    // tenant1 through FRR's VTEP on the L3VNI to FRR's router MAC.
    for prefix in ["172.16.1.0/24", "172.16.1.12/32"] {
        let route = wait_for(&format!("{prefix} in tenant1"), || {
            let table = json(&switchd, &["show", "ip", "route", "vrf", "tenant1"]);
            table.as_array()?.iter().find(|r| r["prefix"] == prefix).cloned()
        });
        assert_eq!(route["protocol"], "bgp", "{route}");
        let hop = serde_json::json!({ "ip": "10.255.0.2", "interface": "vni4001", "active": true, "router_mac": irb::FRR_RMAC });
        assert_eq!(route["next_hops"], serde_json::json!([hop]), "{route}");
    }
    let theirs = json(&switchd, &["show", "bgp", "l2vpn", "evpn", "route", "type", "2"]);
    let theirs = theirs["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["prefix"].as_str().is_some_and(|p| p.contains(&mac2) && p.contains("172.16.1.12")));
    let best = &theirs.unwrap_or_else(|| panic!("FRR's MAC+IP for {mac2}"))["paths"][0];
    assert_eq!((best["label1"].as_u64(), best["label2"].as_u64()), (Some(100), Some(4001)), "{best}");

    // Routed across VNIs both ways: h1 (VNI 200, ours) and h2 (VNI 100, FRR's).
    assert!(h1.ping_until("172.16.1.12", CONVERGE), "h1 -> h2 across VNIs through symmetric IRB");
    assert!(h1.ping("172.16.1.12", 3) && h2.ping("172.16.2.11", 3), "every reply both ways");
}

/// The best path of one prefix in FRR's route JSON: its `paths`, or the
/// paths themselves (`route rd .. mac .. ip ..`), listed flat or nested in
/// arrays, as FRR versions differ.
fn best_path(entry: &Value) -> Option<Value> {
    let paths = entry["paths"].as_array().or(entry.as_array())?;
    let flat = paths.iter().flat_map(|p| p.as_array().map_or_else(|| vec![p], |a| a.iter().collect()));
    flat.into_iter().find(|p| p["bestpath"] == true || p["bestpath"]["overall"] == true).cloned()
}

/// One of our IRB routes as FRR holds it: valid, from our VTEP, with these
/// extended communities.
#[track_caller]
fn assert_irb_attrs(path: &Value, communities: &[&str]) {
    assert_eq!(path["valid"], true, "{path:#}");
    assert_eq!(path["nexthops"][0]["ip"], "10.255.0.1", "{path:#}");
    let have = path["extendedCommunity"]["string"].as_str().unwrap_or_default();
    for c in communities {
        assert!(have.split(' ').any(|h| h == *c), "{c} in {have}: {path:#}");
    }
}
