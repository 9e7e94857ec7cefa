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
