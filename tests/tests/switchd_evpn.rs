//! BGP-EVPN between `switchd` VTEPs: two leaves and a spine, eBGP (IPv4
//! unicast for the loopbacks, L2VPN EVPN for the overlay) over the links.
//! The leaves map VLAN 10 to VNI 10100 with no static flood list: the flood
//! lists come from type 3 routes and the hosts' MACs from type 2 routes.
//! The spine holds no VNI; it passes the EVPN routes on with the VTEP next
//! hop unchanged.
//!
//! ```text
//!                 [s1 AS65000, no VNI]
//!                 eth1            eth2
//!      10.1.0.0/31 /                \ 10.2.0.0/31
//!             eth1                    eth1
//!   [l1 AS65101 VTEP 10.255.0.1]    [l2 AS65102 VTEP 10.255.0.2]
//!             eth3 (VLAN 10 = VNI 10100)  eth3
//!          [h1 192.168.100.11]      [h2 192.168.100.12]
//! ```
//!
//! Checked: the hosts ping each other; each leaf's `show evpn vni` lists the
//! other VTEP as the VNI's only remote VTEP, `show evpn mac vni all` has the
//! other host's MAC as remote behind the other VTEP (from its type 2
//! route, as `show bgp l2vpn evpn route type 2` shows it with the VNI,
//! route target and encapsulation) and its own host's as local; the FDB
//! (`show mac`) has the remote MAC behind that VTEP; the spine holds all
//! routes without any VNI.

use std::time::{Duration, Instant};

use fabric_tests::evpn::spine_config;
use fabric_tests::{Netns, Switchd, require_root_and_tools, veth};
use serde_json::Value;

const CONVERGE: Duration = Duration::from_secs(60);

fn leaf(i: u8) -> String {
    leaf_config(i, "soft", "")
}

/// A leaf whose VLAN 10 has `svi` as its SVI's addresses (YAML list items,
/// empty: no SVI).
fn leaf_with_svi(i: u8, svi: &str) -> String {
    leaf_config(i, "soft", svi)
}

/// Leaf `i` on `backend` (`soft` or `kernel`), with `svi` as VLAN 10's SVI
/// addresses (empty: no SVI).
fn leaf_config(i: u8, backend: &str, svi: &str) -> String {
    let vlan = if svi.is_empty() { "{ id: 10 }".to_string() } else { format!("{{ id: 10, addresses: [{svi}] }}") };
    format!(
        "name: l{i}
backend: {backend}
lldp: {{ enabled: false }}
loopback: [10.255.0.{i}/32]
ports:
  - {{ name: eth1, mode: routed, addresses: [10.{i}.0.0/31] }}
  - {{ name: eth3, mode: access, vlan: 10 }}
vlans:
  - {vlan}
vxlan:
  source: 10.255.0.{i}
  vnis: [{{ vni: 10100, vlan: 10 }}]
bgp:
  asn: 6510{i}
  timers: {{ hold_time: 9, connect_retry: 2 }}
  redistribute: [loopback]
  neighbors:
    - {{ interface: eth1, remote_as: 65000, families: [ipv4-unicast, l2vpn-evpn] }}
  evpn:
    vtep_ip: 10.255.0.{i}
    vnis: [{{ vni: 10100 }}]
"
    )
}

const VTEPS: [&str; 2] = ["10.255.0.1", "10.255.0.2"];

/// The fabric of the picture above: the spine, the two leaves with the
/// given configs, and h1 (192.168.100.11) behind l1, h2 (.12) behind l2.
/// The daemons are stopped before their namespaces go (field order).
struct Fabric {
    spine: Switchd,
    leaves: [Switchd; 2],
    hosts: [Netns; 2],
    switches: [Netns; 3],
}

impl Fabric {
    /// Namespaces named after `tag`; `spine` is the spine's config.
    fn start(tag: &str, spine: &str, leaves: [String; 2]) -> Fabric {
        let s1 = Netns::new(&format!("{tag}s"));
        let l1 = Netns::new(&format!("{tag}1"));
        let l2 = Netns::new(&format!("{tag}2"));
        let h1 = Netns::new(&format!("{tag}h"));
        let h2 = Netns::new(&format!("{tag}i"));
        veth(&s1, "eth1", &l1, "eth1");
        veth(&s1, "eth2", &l2, "eth1");
        veth(&h1, "eth0", &l1, "eth3");
        veth(&h2, "eth0", &l2, "eth3");
        for (h, addr) in [(&h1, "192.168.100.11/24"), (&h2, "192.168.100.12/24")] {
            h.host_setup("eth0", addr, None);
            // Room for the 50 bytes of VXLAN encapsulation.
            h.ip(&["link", "set", "eth0", "mtu", "1450"]);
        }
        let spine = Switchd::start(&s1, spine);
        let [c1, c2] = leaves;
        let leaves = [Switchd::start(&l1, &c1), Switchd::start(&l2, &c2)];
        Fabric { spine, leaves, hosts: [h1, h2], switches: [s1, l1, l2] }
    }

    /// Waits until each leaf floods VNI 10100 to the other leaf alone
    /// (from its type 3 route).
    fn wait_for_flood_lists(&self) {
        for (i, sw) in self.leaves.iter().enumerate() {
            let other = VTEPS[1 - i];
            wait_for(&format!("l{} flooding to {other}", i + 1), || {
                let vnis = json(sw, &["show", "evpn", "vni"]);
                let vni = vnis.as_array()?.iter().find(|v| v["vni"] == 10100)?.clone();
                (vni["remote_vteps"] == serde_json::json!([other])).then_some(())
            });
        }
    }
}

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

/// `show evpn mac vni all` entry for `mac`.
fn evpn_mac(sw: &Switchd, mac: &str) -> Option<Value> {
    json(sw, &["show", "evpn", "mac", "vni", "all"]).as_array()?.iter().find(|m| m["mac"] == mac).cloned()
}

#[test]
fn switchd_leaves_build_the_overlay_from_evpn_routes() {
    if !require_root_and_tools("switchd_evpn", &["ip", "ping"]) {
        return;
    }
    let fabric = Fabric::start("ev", &spine_config(), [leaf(1), leaf(2)]);
    the_overlay_is_built_from_evpn_routes(&fabric);
}

/// What every fabric here must show once up: flood lists from type 3,
/// hosts pinging, each host's MAC local on its leaf and remote behind its
/// VTEP on the other (EVPN and the FDB), the type 2 route's attributes, the
/// spine holding every route without a VNI. Returns h1's and h2's MACs.
fn the_overlay_is_built_from_evpn_routes(fabric: &Fabric) -> [String; 2] {
    let Fabric { spine, leaves, hosts: [h1, h2], .. } = fabric;
    // Flood lists from type 3 routes: each leaf floods VNI 10100 to the other.
    fabric.wait_for_flood_lists();
    assert!(h1.ping_until("192.168.100.12", CONVERGE), "h1 -> h2 across the overlay");
    assert!(h1.ping("192.168.100.12", 3) && h2.ping("192.168.100.11", 3), "every reply both ways");

    // MACs through type 2 routes: local on one leaf, remote on the other.
    let macs = [mac_of(h1), mac_of(h2)];
    for (i, sw) in leaves.iter().enumerate() {
        let (own, other) = (&macs[i], &macs[1 - i]);
        let remote = wait_for(&format!("{other} remote on l{}", i + 1), || evpn_mac(sw, other));
        assert_eq!(
            (remote["kind"].as_str(), remote["vtep"].as_str()),
            (Some("remote"), Some(VTEPS[1 - i])),
            "{remote}"
        );
        let local = wait_for(&format!("{own} local on l{}", i + 1), || evpn_mac(sw, own));
        assert_eq!(local["kind"], "local", "{local}");
        // The forwarding table has the remote MAC behind the other VTEP.
        let fdb = sw.show_rows("mac");
        let entry = fdb.iter().find(|m| m["mac"].as_str().is_some_and(|m| m.eq_ignore_ascii_case(other)));
        let dest = entry.and_then(|e| e["destination"].as_str()).unwrap_or_default();
        assert!(dest.contains(VTEPS[1 - i]), "l{}'s FDB entry for {other}: {entry:?}", i + 1);
    }

    // The route behind l1's view of h2: type 2 from l2 with VNI, RT and
    // encapsulation, next hop l2's VTEP (through the spine, unchanged).
    let table = json(&leaves[0], &["show", "bgp", "l2vpn", "evpn", "route", "type", "2"]);
    let routes = table["routes"].as_array().expect("routes");
    assert!(routes.iter().all(|r| r["route_type"] == 2), "{table:#}");
    let h2_route = routes
        .iter()
        .find(|r| r["prefix"].as_str().is_some_and(|p| p.contains(&macs[1]) && p.starts_with("10.255.0.2:10100")))
        .unwrap_or_else(|| panic!("no type 2 for h2 from l2: {table:#}"));
    let best = &h2_route["paths"][0];
    assert_eq!(best["next_hop"], "10.255.0.2", "{best}");
    assert_eq!(best["label1"], 10100, "{best}");
    assert_eq!(best["as_path"], "65000 65102", "{best}");
    let communities: Vec<&str> = best["ext_communities"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(communities.contains(&"RT:65102:10100") && communities.contains(&"ET:8"), "{communities:?}");

    // The spine carries every route (two type 3, two type 2 at least) and has no VNI.
    let on_spine = json(spine, &["show", "bgp", "l2vpn", "evpn"]);
    let kinds: Vec<u64> =
        on_spine["routes"].as_array().unwrap().iter().filter_map(|r| r["route_type"].as_u64()).collect();
    assert!(
        kinds.iter().filter(|&&k| k == 3).count() == 2 && kinds.iter().filter(|&&k| k == 2).count() >= 2,
        "{kinds:?}"
    );
    let (ok, _, err) = spine.swcli_status(&["show", "evpn", "vni"]);
    assert!(!ok && err.contains("not configured"), "{err}");
    macs
}

/// The spine's config on the kernel backend.
fn kernel_spine() -> String {
    spine_config().replacen("lldp:", "backend: kernel\nlldp:", 1)
}

/// `bridge -j fdb show` in `ns`: the kernel's own FDB.
fn kernel_fdb(ns: &Netns) -> Vec<Value> {
    let text = ns.exec(&["bridge", "-j", "fdb", "show"]);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("bridge -j fdb show: {e}: {text}"))
}

/// The VNI's vxlan device on the kernel backend.
const VXLAN_DEVICE: &str = "nos-vx10100";

/// The remote VTEPs `mac` is installed behind on the vxlan device (the
/// device's own entries with a `dst`).
fn kernel_vteps_of(fdb: &[Value], mac: &str) -> Vec<String> {
    fdb.iter()
        .filter(|e| e["ifname"] == VXLAN_DEVICE && e["mac"].as_str().is_some_and(|m| m.eq_ignore_ascii_case(mac)))
        .filter_map(|e| e["dst"].as_str().map(str::to_string))
        .collect()
}

/// The kernel's FDB on a kernel leaf agrees with its routes: the remote
/// host's MAC on the vxlan device with `dst` = the remote VTEP (type 2),
/// one all-zeros flood entry per remote VTEP (type 3), and `show evpn mac`
/// names the same VTEP.
#[track_caller]
fn assert_kernel_fdb_matches_routes(leaf: &Switchd, ns: &Netns, remote_mac: &str, remote_vtep: &str) {
    let fdb = kernel_fdb(ns);
    assert_eq!(kernel_vteps_of(&fdb, remote_mac), [remote_vtep], "{remote_mac} behind {remote_vtep}: {fdb:#?}");
    assert_eq!(kernel_vteps_of(&fdb, "00:00:00:00:00:00"), [remote_vtep], "the flood list: {fdb:#?}");
    // RFC 8365 5.1: the bridge learns nothing from the overlay's frames;
    // what it has on the vxlan port came from routes (or is the device's own).
    let learned: Vec<&Value> = fdb
        .iter()
        .filter(|e| e["ifname"] == VXLAN_DEVICE && e["master"].is_string() && e["state"] != "permanent")
        .filter(|e| !e["flags"].as_array().is_some_and(|f| f.iter().any(|f| f == "extern_learn")))
        .collect();
    assert!(learned.is_empty(), "learned from the overlay's frames: {learned:#?}");
    let macs = json(leaf, &["show", "evpn", "mac", "vni", "10100"]);
    let entry = macs.as_array().unwrap().iter().find(|m| m["mac"] == remote_mac).cloned();
    let entry = entry.unwrap_or_else(|| panic!("{remote_mac} in show evpn mac vni 10100: {macs:#}"));
    assert_eq!((entry["kind"].as_str(), entry["vtep"].as_str()), (Some("remote"), Some(remote_vtep)), "{entry}");
}

/// The same fabric with every switchd on the kernel backend: the Linux
/// bridge and vxlan device forward, programmed from the EVPN routes (no
/// static flood list anywhere). Besides what every fabric shows, each
/// leaf's kernel FDB has the other host's MAC on the vxlan device with the
/// other VTEP as `dst` and one all-zeros flood entry for it, and `show evpn
/// mac` agrees; h2's link going down flushes it from l2's bridge, l2
/// withdraws its type 2, and l1's kernel and EVPN tables drop it (the flood
/// entry stays).
#[test]
fn kernel_leaves_build_the_overlay_from_evpn_routes() {
    if !require_root_and_tools("switchd_evpn", &["ip", "ping", "bridge"]) {
        return;
    }
    let leaves = [leaf_config(1, "kernel", ""), leaf_config(2, "kernel", "")];
    let fabric = Fabric::start("ek", &kernel_spine(), leaves);
    let macs = the_overlay_is_built_from_evpn_routes(&fabric);
    let [_, l1, l2] = &fabric.switches;
    for (i, ns) in [l1, l2].into_iter().enumerate() {
        assert_kernel_fdb_matches_routes(&fabric.leaves[i], ns, &macs[1 - i], VTEPS[1 - i]);
    }
    tcp_crosses_the_overlay(&fabric);

    // h2 goes: l2's bridge flushes its MAC with the port's link, l2
    // withdraws the route, l1 removes the entry from its kernel.
    fabric.hosts[1].ip(&["link", "set", "eth0", "down"]);
    wait_for("h2's MAC withdrawn at l1", || {
        let gone = evpn_mac(&fabric.leaves[0], &macs[1]).is_none()
            && evpn_mac(&fabric.leaves[1], &macs[1]).is_none()
            && kernel_vteps_of(&kernel_fdb(l1), &macs[1]).is_empty();
        gone.then_some(())
    });
    let fdb = kernel_fdb(l1);
    assert!(
        !fdb.iter().any(|e| e["mac"].as_str().is_some_and(|m| m.eq_ignore_ascii_case(&macs[1]))),
        "no entry for h2 left in l1's bridge: {fdb:#?}"
    );
    assert_eq!(kernel_vteps_of(&fdb, "00:00:00:00:00:00"), [VTEPS[1]], "l2 still floods: {fdb:#?}");
}

/// `prefix` in tenant1's routing table (`show ip route vrf tenant1`).
fn vrf_table_route(sw: &Switchd, prefix: &str) -> Option<Value> {
    json(sw, &["show", "ip", "route", "vrf", "tenant1"]).as_array()?.iter().find(|r| r["prefix"] == prefix).cloned()
}

/// The attribute of `type_code` in one path of GoBGP's JSON RIB.
fn gobgp_attr(path: &Value, type_code: u64) -> Value {
    fabric_tests::gobgp::path_attr(path, type_code)
        .cloned()
        .unwrap_or_else(|| panic!("no attribute {type_code}: {path:#}"))
}

/// GoBGP (AS 65000, on switchd's link) injects EVPN routes with its CLI:
/// a type 2 (MAC), a type 3 (flood list) and a type 5 (a prefix for the
/// IP-VRF). switchd installs the MAC and the flood entry (`show evpn`,
/// `show mac`, `show vxlan`) and the prefix in its VRF (`show vrf`, `show
/// ip route vrf tenant1`: via GoBGP's VTEP on the L3VNI to its router MAC),
/// and removes them when GoBGP withdraws; switchd's own type 3 and its type 5
/// for tenant1's network (RD, RT, label, next hop, router MAC) are in
/// GoBGP's RIB.
#[test]
fn gobgp_injects_evpn_routes_that_switchd_installs_and_withdraws() {
    use fabric_tests::gobgp::{Gobgp, GobgpConfig, GobgpNeighbor, gobgp_available};
    if !require_root_and_tools("switchd_evpn", &["ip"]) || !gobgp_available("switchd_evpn") {
        return;
    }
    let sw = Netns::new("evg");
    let gb = Netns::new("evb");
    let host = Netns::new("evh");
    veth(&gb, "eth0", &sw, "eth1");
    veth(&host, "eth0", &sw, "eth3");
    gb.host_setup("eth0", "10.1.0.1/31", None);
    let config = "name: l1
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
  neighbors:
    - { interface: eth1, remote_as: 65000, families: [ipv4-unicast, l2vpn-evpn] }
  evpn:
    vtep_ip: 10.255.0.1
    vnis: [{ vni: 10100, vrf: tenant1 }]
    vrfs: [{ name: tenant1, l3vni: 4000, router_mac: '02:00:00:00:01:01', networks: [10.9.0.0/24] }]
";
    let switchd = Switchd::start(&sw, config);
    let mut neighbor = GobgpNeighbor::new("10.1.0.0", 65101);
    neighbor.families = vec![fabric_tests::frr::Afi::Ipv4];
    neighbor.evpn = true;
    let gobgp = Gobgp::start(&gb, &GobgpConfig::new(65000, "10.1.0.1").neighbor(neighbor));
    gobgp.wait_established("10.1.0.0", CONVERGE);

    // GoBGP's CLI, as its docs spell the three route types. The RTs carry
    // GoBGP's AS: switchd's derived RTs match them with the AS masked, as FRR's do.
    let rd = ["rd", "10.1.0.1:100"];
    let macadv = [
        "macadv",
        "02:00:00:00:00:aa",
        "0.0.0.0",
        "etag",
        "0",
        "label",
        "10100",
        rd[0],
        rd[1],
        "rt",
        "65000:10100",
        "encap",
        "vxlan",
    ];
    let multicast = [
        "multicast",
        "10.1.0.1",
        "etag",
        "0",
        rd[0],
        rd[1],
        "rt",
        "65000:10100",
        "encap",
        "vxlan",
        "pmsi",
        "ingress-repl",
        "10100",
        "10.1.0.1",
    ];
    let prefix = [
        "prefix",
        "172.16.50.0/24",
        "etag",
        "0",
        "rd",
        "10.1.0.1:4000",
        "rt",
        "65000:4000",
        "encap",
        "vxlan",
        "label",
        "4000",
        "router-mac",
        "02:00:00:00:00:99",
    ];
    for route in [&macadv[..], &multicast[..], &prefix[..]] {
        let mut args = vec!["global", "rib", "-a", "evpn", "add"];
        args.extend_from_slice(route);
        gobgp.cli(&args);
    }

    let mac = wait_for("GoBGP's MAC in show evpn mac", || evpn_mac(&switchd, "02:00:00:00:00:aa"));
    assert_eq!((mac["kind"].as_str(), mac["vtep"].as_str()), (Some("remote"), Some("10.1.0.1")), "{mac}");
    let fdb = switchd.show_rows("mac");
    let entry = fdb.iter().find(|m| m["mac"].as_str().is_some_and(|m| m.eq_ignore_ascii_case("02:00:00:00:00:aa")));
    assert!(entry.and_then(|e| e["destination"].as_str()).is_some_and(|d| d.contains("10.1.0.1")), "FDB: {fdb:#?}");
    wait_for("GoBGP's VTEP on the flood list", || {
        let vnis = json(&switchd, &["show", "evpn", "vni", "10100"]);
        (vnis[0]["remote_vteps"] == serde_json::json!(["10.1.0.1"])).then_some(())
    });
    let vxlan = switchd.show_json("vxlan");
    assert!(vxlan["remote_vteps"].as_array().unwrap().iter().any(|v| v["address"] == "10.1.0.1"), "{vxlan}");
    let vrf = wait_for("the type 5 prefix in tenant1", || {
        let vrfs = json(&switchd, &["show", "vrf"]);
        let routes = vrfs[0]["routes"].as_array()?.clone();
        routes.into_iter().find(|r| r["prefix"] == "172.16.50.0/24")
    });
    assert_eq!(vrf["next_hops"], serde_json::json!(["10.1.0.1 vni 4000 rmac 02:00:00:00:00:99"]), "{vrf}");
    // The VRF's routing table: a BGP route through GoBGP's VTEP on the
    // L3VNI to the router MAC of its route.
    let route = vrf_table_route(&switchd, "172.16.50.0/24").unwrap_or_else(|| panic!("172.16.50.0/24 in tenant1"));
    assert_eq!((route["protocol"].as_str(), route["installed"].as_bool()), (Some("bgp"), Some(true)), "{route}");
    assert_eq!(
        route["next_hops"],
        serde_json::json!([{ "ip": "10.1.0.1", "interface": "vni4000", "active": true, "router_mac": "02:00:00:00:00:99" }]),
        "{route}"
    );

    // Ours in GoBGP's RIB: switchd's type 3 for VNI 10100 with its RD.
    let ours = (0..40)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(250));
            gobgp.cli(&["global", "rib", "-a", "evpn"])
        })
        .find(|rib| rib.contains("10.255.0.1:10100"))
        .unwrap_or_else(|| gobgp.cli(&["global", "rib", "-a", "evpn"]));
    assert!(ours.contains("10.255.0.1:10100"), "switchd's type 3 in GoBGP's RIB:\n{ours}");
    // Our type 5 for tenant1's network: RD router-id:L3VNI, the L3VNI as
    // label, our VTEP as next hop, RT ASN:L3VNI, VXLAN, our router MAC.
    let type5 = wait_for("switchd's type 5 in GoBGP's RIB", || {
        let rib = gobgp.json(&["global", "rib", "-a", "evpn"]);
        rib.as_object()?.iter().find(|(key, _)| key.contains("10.9.0.0/24")).map(|(_, paths)| paths[0].clone())
    });
    let nlri = &type5["nlri"];
    assert_eq!(nlri["type"], 5, "{type5:#}");
    let rd = &nlri["value"]["rd"];
    assert_eq!((rd["admin"].as_str(), rd["assigned"].as_u64()), (Some("10.255.0.1"), Some(4000)), "{type5:#}");
    assert_eq!(nlri["value"]["label"], 4000, "{type5:#}");
    let reach = gobgp_attr(&type5, 14);
    assert_eq!(reach["nexthop"], "10.255.0.1", "{type5:#}");
    let communities = gobgp_attr(&type5, 16)["value"].as_array().cloned().unwrap_or_default();
    let has = |want: serde_json::Value| communities.contains(&want);
    assert!(has(serde_json::json!({ "type": 0, "subtype": 2, "value": "65101:4000" })), "RT: {type5:#}");
    assert!(has(serde_json::json!({ "type": 3, "subtype": 12, "tunnel_type": 8 })), "encapsulation: {type5:#}");
    assert!(has(serde_json::json!({ "type": 6, "subtype": 3, "mac": "02:00:00:00:01:01" })), "router MAC: {type5:#}");

    // GoBGP withdraws: the MAC, the flood entry and the prefix go.
    for route in [&macadv[..], &multicast[..], &prefix[..]] {
        let mut args = vec!["global", "rib", "-a", "evpn", "del"];
        args.extend_from_slice(route);
        gobgp.cli(&args);
    }
    wait_for("everything from GoBGP withdrawn", || {
        let gone = evpn_mac(&switchd, "02:00:00:00:00:aa").is_none()
            && json(&switchd, &["show", "evpn", "vni", "10100"])[0]["remote_vteps"] == serde_json::json!([])
            && json(&switchd, &["show", "vrf"])[0]["routes"] == serde_json::json!([])
            && vrf_table_route(&switchd, "172.16.50.0/24").is_none();
        gone.then_some(())
    });
    let fdb = switchd.show_rows("mac");
    assert!(
        !fdb.iter().any(|m| m["mac"].as_str().is_some_and(|m| m.eq_ignore_ascii_case("02:00:00:00:00:aa"))),
        "{fdb:#?}"
    );
}

/// ARP suppression (RFC 7432 section 10): each leaf has an SVI in VNI 10100
/// and learns its host's IP from the host's ARP for it, so each advertises
/// a MAC+IP type 2; the other leaf puts the binding in its suppression
/// table. A host's ARP request for the host behind the other leaf is then
/// answered by its own leaf: the ping works and no ARP frame crosses the
/// underlay (tcpdump on the spine's side of both uplinks: every frame the
/// leaves send into it, decoded by tshark).
#[test]
fn leaves_answer_arp_for_evpn_known_hosts_and_flood_none_over_the_overlay() {
    if !require_root_and_tools("switchd_evpn", &["ip", "ping", "tcpdump", "tshark"]) {
        return;
    }
    let leaves = [leaf_with_svi(1, "192.168.100.1/24"), leaf_with_svi(2, "192.168.100.2/24")];
    arp_is_answered_by_the_leaves(&Fabric::start("ea", &spine_config(), leaves));
}

/// The ARP suppression test's body on `fabric`, whose leaves have SVIs
/// 192.168.100.1 and .2 in VLAN 10.
fn arp_is_answered_by_the_leaves(fabric: &Fabric) {
    use fabric_tests::switchd::TempDir;
    let Fabric { leaves: [leaf1, leaf2], hosts: [h1, h2], switches: [s1, ..], .. } = fabric;
    fabric.wait_for_flood_lists();
    let leaves = [leaf1, leaf2];
    // Each host resolves its own leaf's SVI: the leaf learns the binding.
    assert!(h1.ping_until("192.168.100.1", CONVERGE) && h2.ping_until("192.168.100.2", CONVERGE), "hosts -> SVIs");
    let hosts = [("192.168.100.11", mac_of(h1)), ("192.168.100.12", mac_of(h2))];
    for (i, sw) in leaves.iter().enumerate() {
        let (ip, mac) = &hosts[1 - i];
        wait_for(&format!("{ip} ({mac}) remote in l{}'s ARP cache", i + 1), || {
            let cache = json(sw, &["show", "evpn", "arp-cache", "vni", "all"]);
            cache
                .as_array()?
                .iter()
                .any(|e| e["ip"] == *ip && e["mac"] == mac.as_str() && e["kind"] == "remote")
                .then_some(())
        });
    }

    // The underlay, from the spine's side of both uplinks.
    let dir = TempDir::new("evpn-arp");
    let mut captures = Vec::new();
    for link in ["eth1", "eth2"] {
        let pcap = dir.path().join(format!("{link}.pcap"));
        let pcap = pcap.to_str().unwrap().to_string();
        captures.push((s1.spawn(&["tcpdump", "-i", link, "-n", "-U", "-w", &pcap, "udp", "port", "4789"]), pcap));
    }
    std::thread::sleep(Duration::from_millis(1000));
    for h in [&h1, &h2] {
        h.ip(&["neigh", "flush", "all"]);
    }
    assert!(h1.ping("192.168.100.12", 3), "h1 -> h2 with ARP answered by l1");
    assert!(h2.ping("192.168.100.11", 3), "h2 -> h1 with ARP answered by l2");
    let learned = h1.ip(&["neigh", "show", "192.168.100.12"]);
    assert!(learned.contains(&hosts[1].1), "h1 has h2's MAC from l1's answer: {learned}");
    std::thread::sleep(Duration::from_millis(500));

    let mut inner = Vec::new();
    for (mut capture, pcap) in captures {
        capture.stop(Duration::from_secs(3));
        // tshark decodes UDP 4789 as VXLAN; the last EtherType is the inner frame's.
        let out = std::process::Command::new("tshark")
            .args(["-r", &pcap, "-Y", "vxlan", "-T", "fields", "-E", "occurrence=l", "-e", "eth.type"])
            .output()
            .expect("run tshark");
        inner.extend(String::from_utf8_lossy(&out.stdout).lines().map(str::to_string));
    }
    // tcpdump sees what the spine receives (the leaves' frames; the
    // spine's own transmissions bypass the taps): at least the six echo
    // requests or replies of one direction made it into the capture.
    assert!(inner.iter().filter(|t| *t == "0x0800").count() >= 6, "the pings crossed the overlay: {inner:?}");
    assert!(!inner.iter().any(|t| t == "0x0806"), "an ARP frame crossed the underlay: {inner:?}");
}

/// A kernel leaf's switchd killed (SIGKILL: nothing of its kernel state
/// removed) and started again: the new daemon clears what the old one left,
/// its sessions come back, the kernel's FDB is built again from the routes
/// it hears (the other host behind the other VTEP, the flood entry, nothing
/// learned on the vxlan port), its host is learned and advertised again, and
/// the hosts ping.
#[test]
fn a_kernel_leaf_killed_and_restarted_builds_the_overlay_again() {
    if !require_root_and_tools("switchd_evpn", &["ip", "ping", "bridge"]) {
        return;
    }
    let leaves = [leaf_config(1, "kernel", ""), leaf_config(2, "kernel", "")];
    let mut fabric = Fabric::start("er", &kernel_spine(), leaves);
    let macs = the_overlay_is_built_from_evpn_routes(&fabric);
    let pid = fabric.leaves[0].process.id();
    // SAFETY: kill has no memory preconditions.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    let _ = fabric.leaves[0].process.wait_timeout(Duration::from_secs(5));
    let l1 = &fabric.switches[1];
    assert_eq!(kernel_vteps_of(&kernel_fdb(l1), &macs[1]), [VTEPS[1]], "the killed daemon's entry stays");

    let restarted = Switchd::start(l1, &leaf_config(1, "kernel", ""));
    fabric.leaves[0] = restarted;
    fabric.wait_for_flood_lists();
    assert!(fabric.hosts[0].ping_until("192.168.100.12", CONVERGE), "h1 -> h2 after the restart");
    for (i, ns) in [&fabric.switches[1], &fabric.switches[2]].into_iter().enumerate() {
        let (mac, vtep) = (&macs[1 - i], VTEPS[1 - i]);
        wait_for(&format!("{mac} behind {vtep} in l{}'s kernel", i + 1), || {
            (kernel_vteps_of(&kernel_fdb(ns), mac) == [vtep]).then_some(())
        });
        assert_kernel_fdb_matches_routes(&fabric.leaves[i], ns, mac, vtep);
    }
    assert!(fabric.hosts[1].ping("192.168.100.11", 3), "h2 -> h1, every reply");
}

/// Full-size TCP segments both ways across the overlay (20 kB echoed):
/// the hosts' MTU leaves room for the encapsulation on every path.
fn tcp_crosses_the_overlay(fabric: &Fabric) {
    let server = fabric_tests::echo_server(&fabric.hosts[1], "192.168.100.12:7000", 1);
    fabric_tests::tcp_round_trip(&fabric.hosts[0], "192.168.100.12:7000");
    server.join().expect("echo server");
}

/// A mixed fabric: l1 on the kernel backend, l2 on the soft one, the
/// spine soft. The overlay between them comes from the same routes; l1's
/// kernel FDB holds h2's MAC behind l2's VTEP and floods to it.
#[test]
fn a_kernel_leaf_and_a_soft_leaf_build_the_overlay_from_evpn_routes() {
    if !require_root_and_tools("switchd_evpn", &["ip", "ping", "bridge"]) {
        return;
    }
    let leaves = [leaf_config(1, "kernel", ""), leaf_config(2, "soft", "")];
    let fabric = Fabric::start("ex", &spine_config(), leaves);
    let macs = the_overlay_is_built_from_evpn_routes(&fabric);
    assert_kernel_fdb_matches_routes(&fabric.leaves[0], &fabric.switches[1], &macs[1], VTEPS[1]);
    tcp_crosses_the_overlay(&fabric);
}

/// ARP suppression with the leaves on the kernel backend: the bindings
/// learned from the other leaf's MAC+IP type 2 are neighbours on the VLAN's
/// SVI with `neigh_suppress` on the vxlan port, so the kernel bridge
/// answers the hosts' ARP requests and none crosses the underlay.
#[test]
fn kernel_leaves_answer_arp_for_evpn_known_hosts() {
    if !require_root_and_tools("switchd_evpn", &["ip", "ping", "bridge", "tcpdump", "tshark"]) {
        return;
    }
    let leaves = [leaf_config(1, "kernel", "192.168.100.1/24"), leaf_config(2, "kernel", "192.168.100.2/24")];
    let fabric = Fabric::start("eq", &kernel_spine(), leaves);
    arp_is_answered_by_the_leaves(&fabric);
    // The binding is the kernel's: h2's on l1's SVI, from the route.
    let [_, l1, _] = &fabric.switches;
    let neighbours = l1.exec(&["ip", "-j", "neigh", "show", "192.168.100.12"]);
    let h2_mac = mac_of(&fabric.hosts[1]);
    assert!(neighbours.contains(&h2_mac) && neighbours.contains("nos-vlan10"), "{neighbours}");
    let ports = l1.exec(&["bridge", "-j", "-d", "link", "show", "dev", VXLAN_DEVICE]);
    assert!(ports.contains("\"neigh_suppress\":true"), "{ports}");
}

/// MAC mobility (RFC 7432 section 15): h1 moves from l1 to l2 (its
/// interface on l1 falls silent, one with the same MAC and address comes
/// up on l2). l2 learns it over its remote entry and advertises it with
/// sequence number 1; l1, seeing the higher number, withdraws its own
/// route and points its FDB at l2; h0 behind l1 reaches h1 on its new leaf.
#[test]
fn a_host_that_moves_to_another_leaf_is_followed_with_a_higher_sequence_number() {
    if !require_root_and_tools("switchd_evpn", &["ip", "ping"]) {
        return;
    }
    a_host_moves_to_another_leaf("em", "soft", |_, _, _| {});
}

/// The same move between leaves on the kernel backend (the spine too):
/// l2's bridge learns h1 over the `extern_learn` entry it had from l1's
/// route, and afterwards each kernel holds h1 where the routes say: l1's on
/// its vxlan device behind l2's VTEP, l2's on its port eth3 and no longer
/// on the vxlan device.
#[test]
fn a_host_that_moves_between_kernel_leaves_is_followed() {
    if !require_root_and_tools("switchd_evpn", &["ip", "ping", "bridge"]) {
        return;
    }
    a_host_moves_to_another_leaf("en", "kernel", |mac, l1, l2| {
        assert_eq!(kernel_vteps_of(&kernel_fdb(l1), mac), [VTEPS[1]], "l1's kernel follows h1 to l2");
        let fdb = kernel_fdb(l2);
        let on_l2: Vec<&Value> =
            fdb.iter().filter(|e| e["mac"].as_str().is_some_and(|m| m.eq_ignore_ascii_case(mac))).collect();
        assert!(
            !on_l2.is_empty() && on_l2.iter().all(|e| e["ifname"] == "eth3"),
            "l2's kernel has h1 on eth3 only: {on_l2:#?}"
        );
    });
}

/// The MAC mobility test on `backend`; at its end `then` is given h1's MAC
/// and the leaves' namespaces, with the daemons running.
fn a_host_moves_to_another_leaf(tag: &str, backend: &str, then: impl FnOnce(&str, &Netns, &Netns)) {
    let leaf = |i| leaf_config(i, backend, "");
    let spine = if backend == "kernel" { kernel_spine() } else { spine_config() };
    let s1 = Netns::new(&format!("{tag}s"));
    let l1 = Netns::new(&format!("{tag}1"));
    let l2 = Netns::new(&format!("{tag}2"));
    let h0 = Netns::new(&format!("{tag}h"));
    let h1 = Netns::new(&format!("{tag}i"));
    veth(&s1, "eth1", &l1, "eth1");
    veth(&s1, "eth2", &l2, "eth1");
    veth(&h0, "eth0", &l1, "eth3");
    veth(&h1, "eth0", &l2, "eth3");
    // h1's interface on l1, the one it starts on.
    veth(&h1, "eth1", &l1, "eth4");
    h0.host_setup("eth0", "192.168.100.10/24", None);
    h0.ip(&["link", "set", "eth0", "mtu", "1450"]);
    let mac = mac_of(&h1);
    h1.disable_offloads("eth1");
    h1.ip(&["link", "set", "eth0", "down"]);
    h1.ip(&["link", "set", "eth1", "address", &mac, "mtu", "1450"]);
    h1.ip(&["addr", "add", "192.168.100.11/24", "dev", "eth1"]);
    // l1 has a second access port in VLAN 10 for h1's first interface.
    let l1_config = leaf(1).replace(
        "  - { name: eth3, mode: access, vlan: 10 }\n",
        "  - { name: eth3, mode: access, vlan: 10 }\n  - { name: eth4, mode: access, vlan: 10 }\n",
    );
    let _spine = Switchd::start(&s1, &spine);
    let leaf1 = Switchd::start(&l1, &l1_config);
    let leaf2 = Switchd::start(&l2, &leaf(2));
    wait_for("l2 flooding to l1", || {
        let vnis = json(&leaf2, &["show", "evpn", "vni"]);
        (vnis.as_array()?.first()?["remote_vteps"] == serde_json::json!(["10.255.0.1"])).then_some(())
    });
    assert!(h0.ping_until("192.168.100.11", CONVERGE), "h0 -> h1 on l1");
    let before = wait_for("h1 remote on l2", || evpn_mac(&leaf2, &mac).filter(|m| m["kind"] == "remote"));
    assert_eq!((before["vtep"].as_str(), before["sequence"].as_u64()), (Some("10.255.0.1"), Some(0)), "{before}");

    // The move: h1 leaves l1 and comes up on l2 with the same MAC and
    // address; its first frames (pings) teach l2.
    // As a migrated VM: the old place falls silent (another MAC, no
    // address) without its link going down, so l1 still advertises h1 and
    // still has it in its FDB when l2 learns it.
    h1.ip(&["addr", "flush", "dev", "eth1"]);
    h1.ip(&["link", "set", "eth1", "address", "02:00:00:00:99:99"]);
    h1.host_setup("eth0", "192.168.100.11/24", None);
    h1.ip(&["link", "set", "eth0", "address", &mac, "mtu", "1450", "up"]);
    let moved = wait_for("h1 local on l2", || {
        let _ = h1.exec_status(&["ping", "-c", "1", "-W", "1", "192.168.100.10"]);
        evpn_mac(&leaf2, &mac).filter(|m| m["kind"] == "local")
    });
    assert_eq!(moved["sequence"], 1, "RFC 7432 15.1: one more than the route it overrides: {moved}");
    let followed = wait_for("l1 following h1 to l2", || evpn_mac(&leaf1, &mac).filter(|m| m["kind"] == "remote"));
    assert_eq!((followed["vtep"].as_str(), followed["sequence"].as_u64()), (Some("10.255.0.2"), Some(1)), "{followed}");
    // l1's own route is withdrawn: only l2's is in l1's table for the MAC.
    let table = json(&leaf1, &["show", "bgp", "l2vpn", "evpn", "route", "type", "2"]);
    let rds: Vec<&str> = table["routes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["prefix"].as_str())
        .filter(|p| p.contains(&mac))
        .collect();
    assert!(rds.iter().all(|p| p.starts_with("10.255.0.2:")), "{rds:?}");
    let fdb = leaf1.show_rows("mac");
    let entry = fdb.iter().find(|m| m["mac"].as_str().is_some_and(|m| m.eq_ignore_ascii_case(&mac)));
    assert!(entry.and_then(|e| e["destination"].as_str()).is_some_and(|d| d.contains("10.255.0.2")), "{entry:?}");
    assert!(h0.ping("192.168.100.11", 3), "h0 -> h1 on its new leaf");
    then(&mac, &l1, &l2);
}

/// Duplicate detection (RFC 7432 section 15.1): one MAC sends from behind
/// both leaves in turn (ha on l1, hb on l2: two namespaces with the same
/// MAC and address), each time a move; with `max_moves: 3` in the window,
/// the third move freezes the MAC on each leaf: `show evpn mac` marks it
/// duplicate, `show evpn vni` and the metric count it, a warning is logged,
/// and further frames move it no more (its sequence number stays).
#[test]
fn a_mac_flapping_between_leaves_is_frozen_and_reported() {
    if !require_root_and_tools("switchd_evpn", &["ip", "ping"]) {
        return;
    }
    let s1 = Netns::new("eds");
    let l1 = Netns::new("ed1");
    let l2 = Netns::new("ed2");
    let h0 = Netns::new("edh");
    let ha = Netns::new("eda");
    let hb = Netns::new("edb");
    veth(&s1, "eth1", &l1, "eth1");
    veth(&s1, "eth2", &l2, "eth1");
    veth(&h0, "eth0", &l1, "eth3");
    veth(&ha, "eth0", &l1, "eth4");
    veth(&hb, "eth0", &l2, "eth3");
    h0.host_setup("eth0", "192.168.100.10/24", None);
    let mac = "02:00:00:00:dd:01";
    for h in [&ha, &hb] {
        // Quiet until pinged: no IPv6 chatter teaching both leaves at once.
        h.sysctl("net.ipv6.conf.all.disable_ipv6", "1");
        h.sysctl("net.ipv6.conf.default.disable_ipv6", "1");
        h.ip(&["link", "set", "eth0", "address", mac]);
        h.host_setup("eth0", "192.168.100.11/24", None);
    }
    for h in [&h0, &ha, &hb] {
        h.ip(&["link", "set", "eth0", "mtu", "1450"]);
    }
    let detection = "    vnis: [{ vni: 10100 }]\n    duplicate_detection: { max_moves: 3, window_secs: 120 }\n";
    let config = |i: u8| leaf(i).replace("    vnis: [{ vni: 10100 }]\n", detection);
    let l1_config = config(1).replace(
        "  - { name: eth3, mode: access, vlan: 10 }\n",
        "  - { name: eth3, mode: access, vlan: 10 }\n  - { name: eth4, mode: access, vlan: 10 }\n",
    );
    let _spine = Switchd::start(&s1, &spine_config());
    let mut leaf1 = Switchd::start(&l1, &l1_config);
    let mut leaf2 = Switchd::start(&l2, &config(2));
    wait_for("l2 flooding to l1", || {
        let vnis = json(&leaf2, &["show", "evpn", "vni"]);
        (vnis.as_array()?.first()?["remote_vteps"] == serde_json::json!(["10.255.0.1"])).then_some(())
    });
    let send = |h: &Netns| {
        let _ = h.exec_status(&["ping", "-c", "1", "-W", "1", "192.168.100.10"]);
    };
    // The MAC sends from ha (l1: sequence 0), hb (l2: 1), ha (l1: 2): each
    // time the other leaf follows it.
    for (h, here, there, sequence) in [(&ha, &leaf1, &leaf2, 0), (&hb, &leaf2, &leaf1, 1), (&ha, &leaf1, &leaf2, 2)] {
        wait_for(&format!("the MAC local with sequence {sequence}"), || {
            send(h);
            evpn_mac(here, mac).filter(|m| m["kind"] == "local" && m["sequence"] == sequence)
        });
        wait_for(&format!("the other leaf following with {sequence}"), || {
            evpn_mac(there, mac).filter(|m| m["kind"] == "remote" && m["sequence"] == sequence)
        });
    }
    // From hb again: the third move on both leaves.
    let frozen = |sw: &Switchd| evpn_mac(sw, mac).filter(|m| m["duplicate"] == true);
    let on_l2 = wait_for("the MAC frozen on l2", || {
        send(&hb);
        frozen(&leaf2)
    });
    let on_l1 =
        fabric_tests::poll_until(CONVERGE, Duration::from_millis(250), || frozen(&leaf1)).unwrap_or_else(|| {
            let table = json(&leaf1, &["show", "bgp", "l2vpn", "evpn", "route", "type", "2"]);
            panic!("the MAC not frozen on l1: {:?} / l2 {on_l2}; l1's type 2: {table:#}", evpn_mac(&leaf1, mac))
        });
    assert_eq!(on_l2["moves"], 3, "{on_l2}");
    assert_eq!(on_l1["moves"], 3, "{on_l1}");
    for sw in [&leaf1, &leaf2] {
        let vnis = json(sw, &["show", "evpn", "vni"]);
        assert_eq!(vnis[0]["duplicate_macs"], 1, "{vnis:#}");
    }
    // Frozen: the MAC sends from ha again, nothing moves.
    let (l1_before, l2_before) = (on_l1["sequence"].clone(), on_l2["sequence"].clone());
    for _ in 0..3 {
        send(&ha);
        send(&hb);
    }
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(evpn_mac(&leaf1, mac).unwrap()["sequence"], l1_before);
    assert_eq!(evpn_mac(&leaf2, mac).unwrap()["sequence"], l2_before);
    assert_eq!(evpn_mac(&leaf2, mac).unwrap()["moves"], 3, "no move is processed once frozen");
    for sw in [&mut leaf1, &mut leaf2] {
        let out = sw.stop().expect("switchd stopped");
        let log = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
        assert!(log.contains("duplicate MAC"), "the operator is told: {log}");
    }
}

/// Sticky MACs (RFC 7432 §15.2): a MAC learned behind l2 is configured
/// sticky behind l1's eth3 by a reload; l1 advertises it with the sticky
/// bit and l2 follows it there, pinned in its FDB. The MAC sending behind
/// l2 again moves nothing: l1 still has it local and sticky, l2 remote at
/// l1 in EVPN and in its FDB, and l2 counts the refused moves.
#[test]
fn a_sticky_mac_stays_at_its_leaf() {
    if !require_root_and_tools("switchd_evpn", &["ip", "ping"]) {
        return;
    }
    let s1 = Netns::new("ess");
    let l1 = Netns::new("es1");
    let l2 = Netns::new("es2");
    let ha = Netns::new("esa");
    let hb = Netns::new("esb");
    veth(&s1, "eth1", &l1, "eth1");
    veth(&s1, "eth2", &l2, "eth1");
    veth(&ha, "eth0", &l1, "eth3");
    veth(&hb, "eth0", &l2, "eth3");
    let mac = "02:00:00:00:5e:01";
    // Quiet until pinged: ha stays silent, hb sends from the MAC.
    for h in [&ha, &hb] {
        h.sysctl("net.ipv6.conf.all.disable_ipv6", "1");
        h.sysctl("net.ipv6.conf.default.disable_ipv6", "1");
        h.ip(&["link", "set", "eth0", "mtu", "1450"]);
    }
    hb.ip(&["link", "set", "eth0", "address", mac]);
    hb.host_setup("eth0", "192.168.100.12/24", None);
    let _spine = Switchd::start(&s1, &spine_config());
    let leaf1 = Switchd::start(&l1, &leaf(1));
    let leaf2 = Switchd::start(&l2, &leaf(2));
    let send = || {
        let _ = hb.exec_status(&["ping", "-c", "1", "-W", "1", "192.168.100.10"]);
    };
    wait_for("the MAC learned behind l2, remote at l1", || {
        send();
        evpn_mac(&leaf1, mac).filter(|m| m["kind"] == "remote" && m["vtep"] == "10.255.0.2")
    });

    let sticky = leaf(1).replace(
        "  - { id: 10 }\n",
        &format!("  - {{ id: 10, static_macs: [{{ mac: \"{mac}\", port: eth3, sticky: true }}] }}\n"),
    );
    let before = leaf1.generation();
    leaf1.reload(&sticky);
    wait_for("the reload", || (leaf1.generation() > before).then_some(()));
    let at_l1 = wait_for("the MAC local and sticky at l1", || {
        evpn_mac(&leaf1, mac).filter(|m| m["kind"] == "local" && m["sticky"] == true)
    });
    wait_for("l2 following it to l1", || {
        evpn_mac(&leaf2, mac).filter(|m| m["kind"] == "remote" && m["vtep"] == "10.255.0.1" && m["sticky"] == true)
    });

    // The MAC sends behind l2 again: refused there, nothing moves.
    let refused = wait_for("l2 refusing the move", || {
        send();
        evpn_mac(&leaf2, mac).filter(|m| m["refused_moves"].as_u64().is_some_and(|n| n >= 1))
    });
    assert_eq!((refused["kind"].as_str(), refused["vtep"].as_str()), (Some("remote"), Some("10.255.0.1")), "{refused}");
    // Nor in l2's dataplane: its FDB entry is pinned behind l1, never
    // learned on eth3, and further frames keep counting.
    let fdb = json(&leaf2, &["show", "mac"]);
    let entry = fdb.as_array().unwrap().iter().find(|m| m["mac"] == mac).cloned().expect("the MAC in l2's FDB");
    assert_eq!(entry["destination"].as_str(), Some("vtep 10.255.0.1"), "{entry}");
    let first = refused["refused_moves"].as_u64().unwrap();
    wait_for("l2 counting further refusals", || {
        send();
        evpn_mac(&leaf2, mac).filter(|m| m["refused_moves"].as_u64().is_some_and(|n| n > first))
    });
    std::thread::sleep(Duration::from_secs(1));
    let still = evpn_mac(&leaf1, mac).expect("the MAC at l1");
    assert_eq!((still["kind"].as_str(), still["sticky"].as_bool()), (Some("local"), Some(true)), "{still}");
    assert_eq!(still["sequence"], at_l1["sequence"], "{still}");
    let table = leaf1.swcli(&["show", "evpn", "mac", "vni", "10100"]);
    assert!(table.contains("sticky"), "{table}");
}
