//! Symmetric IRB between `switchd` VTEPs (RFC 9135 section 4.1): two leaves
//! and a spine, eBGP as in `switchd_evpn.rs`. Both leaves have VLAN 10 (VNI
//! 10100, 172.16.1.0/24) and VLAN 20 (VNI 10200, 172.16.2.0/24) with the same
//! distributed anycast gateway on each (172.16.1.1 and 172.16.2.1, one MAC),
//! both SVIs in VRF tenant1 with L3VNI 4001 and a router MAC per leaf.
//!
//! ```text
//!                 [s1 AS65000, no VNI]
//!                 eth1            eth2
//!      10.1.0.0/31 /                \ 10.2.0.0/31
//!             eth1                    eth1
//!   [l1 AS65101 VTEP 10.255.0.1]    [l2 AS65102 VTEP 10.255.0.2]
//!             eth3 (VLAN 10)              eth3 (VLAN 20)
//!          [h1 172.16.1.11]            [h2 172.16.2.12]
//! ```
//!
//! Checked: each host reaches its gateway on its own leaf; each leaf learns
//! its host and advertises a MAC+IP type 2 with both labels and its router
//! MAC, which the other leaf installs as a /32 in tenant1 (`show vrf`,
//! `show ip route vrf tenant1`, not in the default table); h1 pings h2 across VNIs; the echo request
//! crosses the underlay (captured on the spine, decoded by tshark) on the
//! L3VNI with the inner frame addressed to l2's router MAC. Then the
//! overlay follows reloads, and routed ports in VRFs route over the L3VNI
//! (see [`routed_ports_in_vrfs`]).

use std::time::Duration;

use fabric_tests::evpn::spine_config;
use fabric_tests::switchd::TempDir;
use fabric_tests::{Netns, Switchd, poll_until, require_root_and_tools, swcli_json, veth};
use serde_json::Value;

const CONVERGE: Duration = Duration::from_secs(60);
const GATEWAY_MAC: &str = "02:00:5e:00:01:01";

fn router_mac(i: u8) -> String {
    format!("02:cc:00:00:00:0{i}")
}

/// Leaf `i` with its host port eth3 in `host_vlan`.
fn leaf(i: u8, host_vlan: u16) -> String {
    leaf_with(i, host_vlan, "tenant1", 4001, false)
}

/// Leaf `i` with both SVIs in VRF `vrf` of L3VNI `l3vni`; `vni_30`: also
/// VLAN 30 as VNI 10300 (no SVI, no host).
fn leaf_with(i: u8, host_vlan: u16, vrf: &str, l3vni: u32, vni_30: bool) -> String {
    let rmac = router_mac(i);
    let (vlan_30, map_30, evpn_30) =
        if vni_30 { ("\n  - { id: 30 }", ", { vni: 10300, vlan: 30 }", ", { vni: 10300 }") } else { ("", "", "") };
    format!(
        "name: l{i}
lldp: {{ enabled: false }}
loopback: [10.255.0.{i}/32]
ports:
  - {{ name: eth1, mode: routed, addresses: [10.{i}.0.0/31] }}
  - {{ name: eth3, mode: access, vlan: {host_vlan} }}
vlans:
  - {{ id: 10, addresses: [172.16.1.1/24], vrf: {vrf}, mac: \"{GATEWAY_MAC}\" }}
  - {{ id: 20, addresses: [172.16.2.1/24], vrf: {vrf}, mac: \"{GATEWAY_MAC}\" }}{vlan_30}
vxlan:
  source: 10.255.0.{i}
  vnis: [{{ vni: 10100, vlan: 10 }}, {{ vni: 10200, vlan: 20 }}{map_30}]
bgp:
  asn: 6510{i}
  timers: {{ hold_time: 9, connect_retry: 2 }}
  redistribute: [loopback]
  neighbors:
    - {{ interface: eth1, remote_as: 65000, families: [ipv4-unicast, l2vpn-evpn] }}
  evpn:
    vtep_ip: 10.255.0.{i}
    vnis: [{{ vni: 10100, vrf: {vrf} }}, {{ vni: 10200, vrf: {vrf} }}{evpn_30}]
    vrfs: [{{ name: {vrf}, l3vni: {l3vni}, router_mac: \"{rmac}\" }}]
"
    )
}

fn json(sw: &Switchd, args: &[&str]) -> Value {
    let mut argv = args.to_vec();
    argv.push("--json");
    swcli_json(&sw.swcli(&argv))
}

fn wait_for<T>(what: &str, probe: impl FnMut() -> Option<T>) -> T {
    poll_until(CONVERGE, Duration::from_millis(250), probe).unwrap_or_else(|| panic!("timed out waiting for {what}"))
}

/// The next hops of `prefix` in tenant1 as `show vrf` has them.
fn vrf_route(sw: &Switchd, prefix: &str) -> Option<Value> {
    vrf_route_in(sw, "tenant1", prefix)
}

fn vrf_route_in(sw: &Switchd, vrf: &str, prefix: &str) -> Option<Value> {
    let vrfs = json(sw, &["show", "vrf"]);
    let tenant = vrfs.as_array()?.iter().find(|v| v["name"] == vrf)?.clone();
    tenant["routes"].as_array()?.iter().find(|r| r["prefix"] == prefix).map(|r| r["next_hops"].clone())
}

/// A host on eth0 with its address and default gateway, its MTU leaving
/// room for the 50 bytes of VXLAN encapsulation.
fn overlay_host(host: &Netns, addr: &str, gw: &str) {
    host.host_setup("eth0", addr, Some(gw));
    host.ip(&["link", "set", "eth0", "mtu", "1450"]);
}

/// The fabric of the picture, on `backend` (the leaves and the spine), with
/// h3 and h4 behind l1's eth4 and eth5 for [`routed_ports_in_vrfs`]. The
/// daemons stop before their namespaces go (field order).
struct IrbFabric {
    _spine: Switchd,
    leaves: [Switchd; 2],
    hosts: [Netns; 4],
    switches: [Netns; 3],
}

impl IrbFabric {
    fn start(tag: &str, backend: &str) -> IrbFabric {
        let s1 = Netns::new(&format!("{tag}s"));
        let l1 = Netns::new(&format!("{tag}1"));
        let l2 = Netns::new(&format!("{tag}2"));
        let h1 = Netns::new(&format!("{tag}h"));
        let h2 = Netns::new(&format!("{tag}i"));
        // Behind routed ports of l1, taken up by a later reload.
        let h3 = Netns::new(&format!("{tag}j"));
        let h4 = Netns::new(&format!("{tag}k"));
        veth(&s1, "eth1", &l1, "eth1");
        veth(&s1, "eth2", &l2, "eth1");
        veth(&h1, "eth0", &l1, "eth3");
        veth(&h2, "eth0", &l2, "eth3");
        veth(&h3, "eth0", &l1, "eth4");
        veth(&h4, "eth0", &l1, "eth5");
        for (h, addr, gw) in [
            (&h1, "172.16.1.11/24", "172.16.1.1"),
            (&h2, "172.16.2.12/24", "172.16.2.1"),
            (&h3, "172.16.9.13/24", "172.16.9.1"),
            (&h4, "172.16.8.14/24", "172.16.8.1"),
        ] {
            overlay_host(h, addr, gw);
        }
        let on = |config: String| config.replacen("lldp:", &format!("backend: {backend}\nlldp:"), 1);
        let spine = Switchd::start(&s1, &on(spine_config()));
        let leaves = [Switchd::start(&l1, &on(leaf(1, 10))), Switchd::start(&l2, &on(leaf(2, 20)))];
        IrbFabric { _spine: spine, leaves, hosts: [h1, h2, h3, h4], switches: [s1, l1, l2] }
    }
}

#[test]
fn hosts_in_two_vnis_on_two_leaves_are_routed_over_the_l3vni() {
    if !require_root_and_tools("evpn_irb", &["ip", "ping", "tcpdump", "tshark"]) {
        return;
    }
    let fabric = IrbFabric::start("ir", "soft");
    routed_over_the_l3vni(&fabric);
    let IrbFabric { leaves: [leaf1, leaf2], hosts: [h1, h2, h3, h4], .. } = &fabric;
    live_changes_to_the_overlay(leaf1, leaf2, h1, h2);
    routed_ports_in_vrfs(leaf1, leaf2, h3, h4);
}

/// Symmetric IRB with switchd leaves and spine on the kernel backend
/// (needs `CONFIG_NET_VRF`: where this kernel lacks it, `switchd_kernel_vm`
/// runs the test in a VM). Besides what the soft fabric shows, l1's kernel
/// holds h2's /32 in tenant1's VRF table via l2's VTEP `onlink` on the
/// L3VNI's SVI `nos-irb4001`, l2's router MAC as that VTEP's neighbour there
/// and as an FDB entry `dst` l2's VTEP on `nos-vx4001`, all from the routes.
#[test]
fn kernel_leaves_route_hosts_in_two_vnis_over_the_l3vni() {
    if !require_root_and_tools("evpn_irb", &["ip", "bridge", "ping", "tcpdump", "tshark"]) {
        return;
    }
    if !fabric_tests::kernel_has_vrf() {
        eprintln!("NOTE evpn_irb: no VRFs in this kernel; switchd_kernel_vm runs the kernel IRB test in a VM");
        return;
    }
    let fabric = IrbFabric::start("ik", "kernel");
    routed_over_the_l3vni(&fabric);
    let l1 = &fabric.switches[1];
    let kernel = |argv: &[&str]| -> Vec<Value> {
        let text = l1.exec(argv);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{argv:?}: {e}: {text}"))
    };
    let routes = kernel(&["ip", "-j", "-4", "route", "show", "table", "all"]);
    let h2 = routes.iter().find(|r| r["dst"] == "172.16.2.12").unwrap_or_else(|| panic!("h2's /32: {routes:#?}"));
    assert_ne!(h2["table"], "main", "in tenant1's table: {h2}");
    let hop = match h2["nhid"].as_u64() {
        Some(id) => kernel(&["ip", "-j", "nexthop", "show", "id", &id.to_string()])[0].clone(),
        None => h2.clone(),
    };
    assert_eq!((hop["gateway"].as_str(), hop["dev"].as_str()), (Some("10.255.0.2"), Some("nos-irb4001")), "{hop}");
    assert!(hop["flags"].as_array().is_some_and(|f| f.iter().any(|f| f == "onlink")), "onlink: {hop}");
    let neighbours = kernel(&["ip", "-j", "neigh", "show", "dev", "nos-irb4001"]);
    assert!(
        neighbours.iter().any(|n| n["dst"] == "10.255.0.2" && n["lladdr"] == router_mac(2).as_str()),
        "l2's router MAC as its VTEP's neighbour: {neighbours:#?}"
    );
    let fdb = kernel(&["bridge", "-j", "fdb", "show", "dev", "nos-vx4001"]);
    assert!(
        fdb.iter().any(|e| e["mac"] == router_mac(2).as_str() && e["dst"] == "10.255.0.2"),
        "l2's router MAC behind its VTEP: {fdb:#?}"
    );
    eprintln!("evpn_irb: kernel leaves routed over the L3VNI");
}

/// What the fabric shows once up: the anycast gateways answer, each leaf
/// has the other's host as a /32 in tenant1 over the L3VNI (`show vrf`,
/// `show ip route vrf`, `show evpn next-hops`), and h1 pings h2 with the
/// echo requests on the underlay on the L3VNI to l2's router MAC.
fn routed_over_the_l3vni(fabric: &IrbFabric) {
    let IrbFabric { leaves: [leaf1, leaf2], hosts: [h1, h2, ..], switches: [s1, ..], .. } = fabric;
    // The anycast gateway answers on each leaf; each leaf learns its host.
    assert!(h1.ping_until("172.16.1.1", CONVERGE) && h2.ping_until("172.16.2.1", CONVERGE), "hosts -> gateways");
    let gateway = h1.ip(&["neigh", "show", "172.16.1.1"]);
    assert!(gateway.contains(GATEWAY_MAC), "the gateway answers with the anycast MAC: {gateway}");

    // Each leaf has the other's host as a /32 in tenant1 through the other
    // VTEP, on the L3VNI, to the other's router MAC.
    for (sw, host, vtep, i) in
        [(&leaf1, "172.16.2.12/32", "10.255.0.2", 2), (&leaf2, "172.16.1.11/32", "10.255.0.1", 1)]
    {
        let hops = wait_for(&format!("{host} in tenant1"), || vrf_route(sw, host));
        let expected = format!("{vtep} vni 4001 rmac {}", router_mac(i));
        assert_eq!(hops, serde_json::json!([expected]), "{host}");
    }
    // `show ip route vrf tenant1`: the SVIs' subnets and the remote host by BGP over the L3VNI.
    let table = json(leaf1, &["show", "ip", "route", "vrf", "tenant1"]);
    let route = |prefix: &str| table.as_array().unwrap().iter().find(|r| r["prefix"] == prefix).cloned();
    let remote = route("172.16.2.12/32").unwrap_or_else(|| panic!("no route to h2: {table:#}"));
    assert_eq!(remote["protocol"], "bgp", "{remote}");
    assert_eq!(remote["next_hops"][0]["ip"], "10.255.0.2", "{remote}");
    assert_eq!(remote["next_hops"][0]["interface"], "vni4001", "{remote}");
    assert_eq!(route("172.16.1.0/24").unwrap()["protocol"], "connected", "{table:#}");
    let default = json(leaf1, &["show", "ip", "route"]);
    assert!(!default.to_string().contains("172.16.1.0/24"), "tenant routes stay out of the default VRF: {default}");
    let vrfs = json(leaf1, &["show", "vrf"]);
    let tenant = &vrfs.as_array().unwrap()[0];
    assert_eq!((tenant["name"].as_str(), tenant["l3vni"].as_u64()), (Some("tenant1"), Some(4001)), "{vrfs:#}");
    // `show evpn next-hops`: l2's VTEP on the L3VNI with its router MAC, h2's /32 through it.
    let hops = json(leaf1, &["show", "evpn", "next-hops", "vni", "4001"]);
    let hop = hops.as_array().unwrap().iter().find(|h| h["vtep"] == "10.255.0.2").cloned();
    let hop = hop.unwrap_or_else(|| panic!("no next hop 10.255.0.2: {hops:#}"));
    assert_eq!(
        (hop["vrf"].as_str(), hop["router_mac"].as_str()),
        (Some("tenant1"), Some(router_mac(2).as_str())),
        "{hop}"
    );
    assert!(hop["routes"].as_u64() >= Some(1), "{hop}");

    // The underlay, from the spine's side of l1's uplink.
    let dir = TempDir::new("evpn-irb");
    let pcap = dir.path().join("eth1.pcap");
    let pcap = pcap.to_str().unwrap().to_string();
    let mut capture = s1.spawn(&["tcpdump", "-i", "eth1", "-Q", "in", "-n", "-U", "-w", &pcap, "udp", "port", "4789"]);
    std::thread::sleep(Duration::from_millis(1000));
    assert!(h1.ping_until("172.16.2.12", CONVERGE), "h1 -> h2 across VNIs");
    assert!(h1.ping("172.16.2.12", 3) && h2.ping("172.16.1.11", 3), "every reply both ways");
    std::thread::sleep(Duration::from_millis(500));
    capture.stop(Duration::from_secs(3));
    // tshark decodes UDP 4789 as VXLAN; the last eth.dst is the inner frame's.
    let out = std::process::Command::new("tshark")
        .args(["-r", &pcap, "-Y", "vxlan && icmp.type == 8"])
        .args(["-T", "fields", "-E", "occurrence=l", "-e", "vxlan.vni", "-e", "eth.dst", "-e", "ip.dst"])
        .output()
        .expect("run tshark");
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    let expected = format!("4001\t{}\t172.16.2.12", router_mac(2));
    assert!(lines.len() >= 3 && lines.iter().all(|l| *l == expected), "echo requests on the underlay: {lines:?}");
}

/// Routed ports in VRFs: l1's eth4 (h3, 172.16.9.0/24) is taken into
/// tenant2 by a commit, eth5 (h4, 172.16.8.0/24) is in VRF blue (its own
/// L3VNI, which l2 does not have). eth4's subnet reaches l2 as a type 5 in
/// tenant2 and h3 pings h2 (VNI 10200 on l2) over the L3VNI; h4 reaches its
/// gateway but not h2.
fn routed_ports_in_vrfs(leaf1: &Switchd, leaf2: &Switchd, h3: &Netns, h4: &Netns) {
    let routed = leaf_with(1, 10, "tenant2", 4002, false)
        .replacen(
            "  - { name: eth3, mode: access, vlan: 10 }\n",
            "  - { name: eth3, mode: access, vlan: 10 }\n  \
             - { name: eth4, mode: routed, addresses: [172.16.9.1/24] }\n  \
             - { name: eth5, mode: routed, addresses: [172.16.8.1/24], vrf: blue }\n",
            1,
        )
        .replacen("\" }]\n", "\" }, { name: blue, l3vni: 4009, router_mac: \"02:cc:00:00:00:09\" }]\n", 1);
    reload(leaf1, &routed);
    assert!(h3.ping_until("172.16.9.1", CONVERGE), "h3 -> its gateway in the default VRF");
    assert!(!h3.ping("172.16.2.12", 2), "h3 in the default VRF does not reach tenant2");

    let (_, text) = leaf1.swcli_script("configure\nset ports eth4 vrf tenant2\ncommit\n");
    assert!(text.contains("committed"), "eth4 into tenant2 on commit: {text}");
    let expected = serde_json::json!([format!("10.255.0.1 vni 4002 rmac {}", router_mac(1))]);
    wait_for("eth4's subnet as a type 5 in tenant2 at l2", || {
        vrf_route_in(leaf2, "tenant2", "172.16.9.0/24").filter(|hops| *hops == expected)
    });
    let type5 = json(leaf2, &["show", "bgp", "l2vpn", "evpn", "route", "type", "5"]);
    assert!(type5.to_string().contains("172.16.9.0"), "{type5:#}");
    let table = json(leaf1, &["show", "ip", "route", "vrf", "tenant2"]);
    let eth4 = table.as_array().unwrap().iter().find(|r| r["prefix"] == "172.16.9.0/24").cloned();
    assert_eq!(eth4.map(|r| r["protocol"].clone()), Some("connected".into()), "{table:#}");
    assert!(h3.ping_until("172.16.2.12", CONVERGE), "h3 (routed port in tenant2) -> h2 (VNI 10200 on l2)");
    assert!(h3.ping("172.16.2.12", 3), "every reply");

    assert!(h4.ping_until("172.16.8.1", CONVERGE), "h4 -> its gateway in blue");
    assert!(!h4.ping("172.16.2.12", 3), "blue does not reach tenant2's hosts");
    assert!(vrf_route_in(leaf2, "tenant2", "172.16.8.0/24").is_none(), "blue's subnet is not imported into tenant2");
}

/// Whether `sw` holds a type 3 route for VNI 10300 from leaf 1.
fn has_leaf1_vni_10300(sw: &Switchd) -> bool {
    let routes = json(sw, &["show", "bgp", "l2vpn", "evpn", "route", "type", "3"]);
    routes["routes"].as_array().is_some_and(|r| r.iter().any(|r| r["rd"] == "10.255.0.1:10300"))
}

/// Reloads `sw` with `yaml` (SIGHUP) and waits for the new generation.
fn reload(sw: &Switchd, yaml: &str) {
    let before = sw.generation();
    sw.reload(yaml);
    wait_for("the reload to commit", || (sw.generation() > before).then_some(()));
}

/// The overlay follows SIGHUP reloads, as a diff: a VNI added originates
/// its type 3 (and removed, withdraws it); the VRF renamed with a new
/// L3VNI (the SVIs' `vrf:` with it) takes the remote hosts' routes into the
/// new VRF, where routing across VNIs goes on over the new L3VNI; a bad
/// config is refused whole, naming the field, and forwarding stays.
fn live_changes_to_the_overlay(leaf1: &Switchd, leaf2: &Switchd, h1: &Netns, h2: &Netns) {
    reload(leaf1, &leaf_with(1, 10, "tenant1", 4001, true));
    wait_for("leaf 1's type 3 of VNI 10300 at leaf 2", || has_leaf1_vni_10300(leaf2).then_some(()));
    let vnis = json(leaf1, &["show", "evpn", "vni"]);
    assert!(vnis.as_array().unwrap().iter().any(|v| v["vni"] == 10300), "{vnis:#}");
    reload(leaf1, &leaf(1, 10));
    wait_for("VNI 10300's type 3 withdrawn", || (!has_leaf1_vni_10300(leaf2)).then_some(()));

    reload(leaf1, &leaf_with(1, 10, "tenant2", 4002, false));
    reload(leaf2, &leaf_with(2, 20, "tenant2", 4002, false));
    for (sw, host, vtep, i) in [(leaf1, "172.16.2.12/32", "10.255.0.2", 2), (leaf2, "172.16.1.11/32", "10.255.0.1", 1)]
    {
        let expected = serde_json::json!([format!("{vtep} vni 4002 rmac {}", router_mac(i))]);
        wait_for(&format!("{host} in tenant2 over L3VNI 4002"), || {
            vrf_route_in(sw, "tenant2", host).filter(|hops| *hops == expected)
        });
        let vrfs = json(sw, &["show", "vrf"]);
        let names: Vec<&str> = vrfs.as_array().unwrap().iter().filter_map(|v| v["name"].as_str()).collect();
        assert_eq!(names, ["tenant2"], "{vrfs:#}");
    }
    assert!(h1.ping_until("172.16.2.12", CONVERGE), "h1 -> h2 across VNIs in tenant2");
    assert!(h2.ping("172.16.1.11", 3), "h2 -> h1 in tenant2");

    // An SVI in a VRF that is not declared: refused whole, naming the
    // field, by commit and by SIGHUP.
    let before = leaf1.generation();
    let bad = leaf_with(1, 10, "tenant2", 4002, false).replacen("vrf: tenant2", "vrf: nosuch", 1);
    let (_, text) = leaf1.swcli_script("configure\nset vlans 10 vrf nosuch\ncommit\n");
    assert!(text.contains("vlans[0].vrf") && !text.contains("committed"), "refused naming the field: {text}");
    leaf1.reload(&bad);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(leaf1.generation(), before, "the bad config is not running");
    assert!(h1.ping("172.16.2.12", 3), "forwarding as before");
}

/// The anycast gateway of one leaf resolving a host behind another
/// (docs/evpn.md, "The anycast gateway's own ARP requests"): h1 behind l1
/// is silent, so l2 has no host route to it and routes h2's ping on the
/// subnet of its VLAN 10 SVI, whose ARP request floods in the VNI. h1
/// answers the anycast MAC, l1 takes it and advertises h1's MAC+IP, and l2
/// takes that binding as its answer (its neighbour table has h1); no leaf
/// learns the anycast MAC behind a VTEP.
#[test]
fn a_remote_gateways_request_for_a_silent_host_is_answered_through_evpn() {
    if !require_root_and_tools("evpn_irb", &["ip", "ping"]) {
        return;
    }
    let s1 = Netns::new("ias");
    let l1 = Netns::new("ia1");
    let l2 = Netns::new("ia2");
    let h1 = Netns::new("iah");
    let h2 = Netns::new("iai");
    veth(&s1, "eth1", &l1, "eth1");
    veth(&s1, "eth2", &l2, "eth1");
    veth(&h1, "eth0", &l1, "eth3");
    veth(&h2, "eth0", &l2, "eth3");
    for (h, addr, gw) in [(&h1, "172.16.1.11/24", "172.16.1.1"), (&h2, "172.16.2.12/24", "172.16.2.1")] {
        // h1 silent until asked: no IPv6 chatter.
        h.sysctl("net.ipv6.conf.all.disable_ipv6", "1");
        h.sysctl("net.ipv6.conf.default.disable_ipv6", "1");
        overlay_host(h, addr, gw);
    }
    let _spine = Switchd::start(&s1, &spine_config());
    let leaf1 = Switchd::start(&l1, &leaf(1, 10));
    let leaf2 = Switchd::start(&l2, &leaf(2, 20));
    wait_for("l2 flooding VNI 10100 to l1", || {
        let vnis = json(&leaf2, &["show", "evpn", "vni", "10100"]);
        (vnis.as_array()?.first()?["remote_vteps"] == serde_json::json!(["10.255.0.1"])).then_some(())
    });
    assert!(vrf_route(&leaf2, "172.16.1.11/32").is_none(), "h1 is not known yet");
    let h1_mac = h1.exec(&["cat", "/sys/class/net/eth0/address"]).trim().to_lowercase();

    assert!(h2.ping_until("172.16.1.11", CONVERGE), "h2 -> h1, resolved by l2's SVI");
    let resolved = wait_for("h1 resolved in l2's neighbour table", || {
        let neighbors = json(&leaf2, &["show", "arp"]);
        let h1 =
            |n: &&serde_json::Value| n["ip"] == "172.16.1.11" && n["interface"] == "vlan10" && n["mac"].is_string();
        neighbors.as_array()?.iter().find(h1).cloned()
    });
    assert_eq!(
        resolved["mac"].as_str(),
        Some(h1_mac.as_str()),
        "l2's request answered by l1's MAC+IP route: {resolved}"
    );
    for sw in [&leaf1, &leaf2] {
        let macs = json(sw, &["show", "mac"]);
        let anycast = macs.as_array().unwrap().iter().find(|m| m["mac"] == GATEWAY_MAC).cloned();
        assert!(
            anycast.is_none_or(|m| !m["destination"].as_str().unwrap_or("").starts_with("vtep")),
            "the anycast MAC is never behind a VTEP: {macs:#}"
        );
        let evpn = json(sw, &["show", "evpn", "mac", "vni", "all"]);
        assert!(!evpn.to_string().contains(GATEWAY_MAC), "nor an EVPN MAC: {evpn:#}");
    }
}

/// IPv6's counterpart (docs/evpn.md): h1 behind l1 has a static IPv6
/// address and says nothing (no DAD, no router solicitation), so l2 routes
/// h2's ping on its VLAN 10 SVI's subnet and its neighbour solicitation
/// floods in the VNI. h1 answers the anycast gateway address; l1, which
/// has the same address, takes that advertisement although it did not
/// solicit it (Linux's `accept_untracked_na = 2`) and advertises h1's
/// MAC+IPv6, which l2 installs (a /128 in the VRF) and takes as its answer.
#[test]
fn a_silent_ipv6_host_behind_another_leaf_is_found() {
    if !require_root_and_tools("evpn_irb", &["ip", "ping"]) {
        return;
    }
    let s1 = Netns::new("i6s");
    let l1 = Netns::new("i61");
    let l2 = Netns::new("i62");
    let h1 = Netns::new("i6h");
    let h2 = Netns::new("i6i");
    veth(&s1, "eth1", &l1, "eth1");
    veth(&s1, "eth2", &l2, "eth1");
    veth(&h1, "eth0", &l1, "eth3");
    veth(&h2, "eth0", &l2, "eth3");
    for (h, addr, gw, addr6, gw6) in [
        (&h1, "172.16.1.11/24", "172.16.1.1", "2001:db8:1::11/64", "2001:db8:1::1"),
        (&h2, "172.16.2.12/24", "172.16.2.1", "2001:db8:2::12/64", "2001:db8:2::1"),
    ] {
        for conf in ["all", "default", "eth0"] {
            h.sysctl(&format!("net.ipv6.conf.{conf}.accept_dad"), "0");
            h.sysctl(&format!("net.ipv6.conf.{conf}.router_solicitations"), "0");
        }
        overlay_host(h, addr, gw);
        h.ip(&["-6", "addr", "add", addr6, "dev", "eth0", "nodad"]);
        h.ip(&["-6", "route", "add", "default", "via", gw6]);
    }
    let with_v6 = |config: String| {
        config
            .replace("[172.16.1.1/24]", "[172.16.1.1/24, \"2001:db8:1::1/64\"]")
            .replace("[172.16.2.1/24]", "[172.16.2.1/24, \"2001:db8:2::1/64\"]")
    };
    let _spine = Switchd::start(&s1, &spine_config());
    let leaf1 = Switchd::start(&l1, &with_v6(leaf(1, 10)));
    let leaf2 = Switchd::start(&l2, &with_v6(leaf(2, 20)));
    wait_for("l2 flooding VNI 10100 to l1", || {
        let vnis = json(&leaf2, &["show", "evpn", "vni", "10100"]);
        (vnis.as_array()?.first()?["remote_vteps"] == serde_json::json!(["10.255.0.1"])).then_some(())
    });
    // h2 makes itself known to l2 (its solicitation for its gateway), so
    // l1 can route the answers back; h1 stays silent.
    assert!(h2.ping_until("2001:db8:2::1", CONVERGE), "h2 -> its gateway");
    wait_for("h2's /128 at l1", || vrf_route(&leaf1, "2001:db8:2::12/128"));
    assert!(vrf_route(&leaf2, "2001:db8:1::11/128").is_none(), "h1 is not known yet");
    let h1_mac = h1.exec(&["cat", "/sys/class/net/eth0/address"]).trim().to_lowercase();

    assert!(h2.ping_until("2001:db8:1::11", CONVERGE), "h2 -> the silent h1");
    let hops = wait_for("h1's /128 at l2", || vrf_route(&leaf2, "2001:db8:1::11/128"));
    assert!(hops.to_string().contains("10.255.0.1"), "through l1: {hops}");
    let resolved = wait_for("h1 resolved in l2's neighbour table", || {
        let neighbors = json(&leaf2, &["show", "arp"]);
        let h1 =
            |n: &&serde_json::Value| n["ip"] == "2001:db8:1::11" && n["interface"] == "vlan10" && n["mac"].is_string();
        neighbors.as_array()?.iter().find(h1).cloned()
    });
    assert_eq!(resolved["mac"].as_str(), Some(h1_mac.as_str()), "answered by l1's MAC+IPv6 route: {resolved}");
    assert!(h2.ping("2001:db8:1::11", 3), "and from then on");
}

/// Leaf `i` of [`overlapping_subnets_in_two_vrfs_stay_apart`]: tenants red
/// and blue with the same two subnets, gateways and anycast MAC, red in
/// VLANs 10/20 (VNIs 10100/10200, L3VNI 4001), blue in VLANs 110/120 (VNIs
/// 11100/11200, L3VNI 4002); eth3 is in `red_vlan`, eth4 in `blue_vlan`.
fn overlapping_leaf(i: u8, red_vlan: u16, blue_vlan: u16) -> String {
    format!(
        "name: l{i}
lldp: {{ enabled: false }}
loopback: [10.255.0.{i}/32]
ports:
  - {{ name: eth1, mode: routed, addresses: [10.{i}.0.0/31] }}
  - {{ name: eth3, mode: access, vlan: {red_vlan} }}
  - {{ name: eth4, mode: access, vlan: {blue_vlan} }}
vlans:
  - {{ id: 10, addresses: [172.16.1.1/24], vrf: red, mac: \"{GATEWAY_MAC}\" }}
  - {{ id: 20, addresses: [172.16.2.1/24], vrf: red, mac: \"{GATEWAY_MAC}\" }}
  - {{ id: 110, addresses: [172.16.1.1/24], vrf: blue, mac: \"{GATEWAY_MAC}\" }}
  - {{ id: 120, addresses: [172.16.2.1/24], vrf: blue, mac: \"{GATEWAY_MAC}\" }}
vxlan:
  source: 10.255.0.{i}
  vnis: [{{ vni: 10100, vlan: 10 }}, {{ vni: 10200, vlan: 20 }}, {{ vni: 11100, vlan: 110 }}, {{ vni: 11200, vlan: 120 }}]
bgp:
  asn: 6510{i}
  timers: {{ hold_time: 9, connect_retry: 2 }}
  redistribute: [loopback]
  neighbors:
    - {{ interface: eth1, remote_as: 65000, families: [ipv4-unicast, l2vpn-evpn] }}
  evpn:
    vtep_ip: 10.255.0.{i}
    vnis: [{{ vni: 10100, vrf: red }}, {{ vni: 10200, vrf: red }}, {{ vni: 11100, vrf: blue }}, {{ vni: 11200, vrf: blue }}]
    vrfs:
      - {{ name: red, l3vni: 4001, router_mac: \"02:cc:00:00:0{i}:01\" }}
      - {{ name: blue, l3vni: 4002, router_mac: \"02:cc:00:00:0{i}:02\" }}
"
    )
}

/// Tenants reuse address space: VRFs red and blue both have 172.16.1.0/24
/// and 172.16.2.0/24, with the same gateways, on their own VNIs. h1r and
/// h2r (red) and h1b and h2b (blue) sit in those subnets on two leaves;
/// each pair pings within its VRF (routed over its L3VNI), never across,
/// and each VRF's host routes are its own.
#[test]
fn overlapping_subnets_in_two_vrfs_stay_apart() {
    if !require_root_and_tools("evpn_irb", &["ip", "ping"]) {
        return;
    }
    let s1 = Netns::new("ovs");
    let l1 = Netns::new("ov1");
    let l2 = Netns::new("ov2");
    let h1r = Netns::new("ovr");
    let h2r = Netns::new("ovq");
    let h1b = Netns::new("ovb");
    let h2b = Netns::new("ovc");
    veth(&s1, "eth1", &l1, "eth1");
    veth(&s1, "eth2", &l2, "eth1");
    veth(&h1r, "eth0", &l1, "eth3");
    veth(&h1b, "eth0", &l1, "eth4");
    veth(&h2r, "eth0", &l2, "eth3");
    veth(&h2b, "eth0", &l2, "eth4");
    for (h, addr, gw) in [
        (&h1r, "172.16.1.11/24", "172.16.1.1"),
        (&h2r, "172.16.2.12/24", "172.16.2.1"),
        (&h1b, "172.16.1.21/24", "172.16.1.1"),
        (&h2b, "172.16.2.22/24", "172.16.2.1"),
    ] {
        overlay_host(h, addr, gw);
    }
    let _spine = Switchd::start(&s1, &spine_config());
    let leaf1 = Switchd::start(&l1, &overlapping_leaf(1, 10, 110));
    let leaf2 = Switchd::start(&l2, &overlapping_leaf(2, 20, 120));

    // Each host makes itself known to its gateway, in its own VRF.
    for (h, gw) in [(&h1r, "172.16.1.1"), (&h2r, "172.16.2.1"), (&h1b, "172.16.1.1"), (&h2b, "172.16.2.1")] {
        assert!(h.ping_until(gw, CONVERGE), "{} -> its gateway {gw}", h.name());
    }
    for (sw, vrf, host) in [
        (&leaf1, "red", "172.16.2.12/32"),
        (&leaf1, "blue", "172.16.2.22/32"),
        (&leaf2, "red", "172.16.1.11/32"),
        (&leaf2, "blue", "172.16.1.21/32"),
    ] {
        wait_for(&format!("{host} in {vrf}"), || vrf_route_in(sw, vrf, host));
    }
    // Each VRF has only its own tenant's hosts.
    for (vrf, foreign) in [("red", "172.16.2.22/32"), ("blue", "172.16.2.12/32")] {
        assert!(vrf_route_in(&leaf1, vrf, foreign).is_none(), "{foreign} is not in {vrf}");
    }
    assert!(h1r.ping("172.16.2.12", 3), "red pair, routed over L3VNI 4001");
    assert!(h1b.ping("172.16.2.22", 3), "blue pair, routed over L3VNI 4002");
    assert!(!h1r.ping("172.16.2.22", 2), "red never reaches blue");
    assert!(!h1b.ping("172.16.2.12", 2), "blue never reaches red");
    // The same gateway address answers in both VRFs on both leaves.
    assert!(h2r.ping("172.16.2.1", 1) && h2b.ping("172.16.2.1", 1));
}
