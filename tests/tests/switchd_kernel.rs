//! `switchd` with `backend: kernel`: the Linux kernel forwards, programmed
//! through the shim over rtnetlink.
//!
//! - What the shim installed is what `ip -j route`, `ip -j nexthop`,
//!   `bridge -j fdb` and `ip -j -d link` show, read back and compared; VLAN
//!   membership by `bridge -j vlan` when the kernel has VLAN filtering (one
//!   VLAN-aware bridge `nos-br`), by the per-VLAN bridges' members
//!   (`ip -j -d link`, `bridge -j link`) when it has not. The test says
//!   which mode it exercised.
//! - Hosts ping across a VLAN (the kernel bridge), between subnets (the
//!   kernel FIB, an ECMP route through a nexthop group) and over VXLAN to a
//!   kernel VTEP.
//! - SIGKILL and a restart with a changed config reconcile: stale objects of
//!   ours go, foreign ones (added by the test) stay, traffic comes back.
//! - A kernel refusal (a duplicate route, a nexthop id taken) comes back as
//!   the shim's typed error with nothing left half-done, and through the
//!   management API as a refused commit with the kernel's words.
//! - FDB entries the shim installs (a static MAC, a remote MAC behind a
//!   VTEP) are what `bridge -j fdb` shows, and the shim reads them back.
//! - Symmetric IRB: L3VNIs and tunnel-encap next hops as zebra lays them
//!   out, read back and routed per VRF to a kernel VTEP (needs VRFs: in the
//!   VM); ARP suppression answered by the bridge, no ARP on the uplink.
//! - Forwarding that cannot start after the config was applied leaves
//!   nothing of ours in the kernel.
//!
//! ```text
//!  [h1 192.168.10.1] -- eth1 [sw] eth3 10.0.1.1/24 -- 10.0.1.2 [r1 + kernel VTEP vx0 192.168.10.3]
//!  [h2 192.168.10.2] -- eth2      eth4 10.0.2.1/24 -- 10.0.2.2 [r2]
//!    VLAN 10, SVI 192.168.10.254 = nos-vlan10, VNI 10010 flooded to 10.0.1.2
//! ```

use std::collections::BTreeSet;
use std::time::Duration;

use fabric_tests::{Netns, Switchd, kernel_has_vrf, kernel_vlans, require_root_and_tools, veth};
use serde_json::Value;

/// Our routing protocol number (the backend's default).
const PROTOCOL: &str = "196";

const CONFIG: &str = "
name: ksw
backend: kernel
loopback: [10.255.0.1/32]
ports:
  - { name: eth1, mode: access, vlan: 10 }
  - { name: eth2, mode: access, vlan: 10 }
  - { name: eth3, mode: routed, addresses: [10.0.1.1/24] }
  - { name: eth4, mode: routed, addresses: [10.0.2.1/24] }
vlans:
  - { id: 10, addresses: [192.168.10.254/24] }
vxlan:
  source: 10.255.0.1
  vnis: [{ vni: 10010, vlan: 10, flood: [10.0.1.2] }]
routes:
  - { prefix: 10.99.0.0/16, next_hops: [10.0.1.2, 10.0.2.2] }
  - { prefix: 10.98.0.0/16, next_hops: [10.0.1.2] }
";

/// After the restart: 10.98/16 gone, 10.97/16 new, the ECMP route down to
/// one next hop (its group goes), eth2 moved to a new VLAN 20.
const CHANGED: &str = "
name: ksw
backend: kernel
loopback: [10.255.0.1/32]
ports:
  - { name: eth1, mode: access, vlan: 10 }
  - { name: eth2, mode: access, vlan: 20 }
  - { name: eth3, mode: routed, addresses: [10.0.1.1/24] }
  - { name: eth4, mode: routed, addresses: [10.0.2.1/24] }
vlans:
  - { id: 10, addresses: [192.168.10.254/24] }
  - { id: 20 }
vxlan:
  source: 10.255.0.1
  vnis: [{ vni: 10010, vlan: 10, flood: [10.0.1.2] }]
routes:
  - { prefix: 10.99.0.0/16, next_hops: [10.0.2.2] }
  - { prefix: 10.97.0.0/16, next_hops: [10.0.2.2] }
";

struct Topology {
    sw: Netns,
    h1: Netns,
    h2: Netns,
    r1: Netns,
    r2: Netns,
}

fn topology() -> Topology {
    let t = Topology {
        sw: Netns::new("ks"),
        h1: Netns::new("kh1"),
        h2: Netns::new("kh2"),
        r1: Netns::new("kr1"),
        r2: Netns::new("kr2"),
    };
    veth(&t.h1, "eth0", &t.sw, "eth1");
    veth(&t.h2, "eth0", &t.sw, "eth2");
    veth(&t.r1, "eth0", &t.sw, "eth3");
    veth(&t.r2, "eth0", &t.sw, "eth4");
    t.h1.host_setup("eth0", "192.168.10.1/24", Some("192.168.10.254"));
    t.h2.host_setup("eth0", "192.168.10.2/24", Some("192.168.10.254"));
    t.r1.host_setup("eth0", "10.0.1.2/24", Some("10.0.1.1"));
    t.r2.host_setup("eth0", "10.0.2.2/24", Some("10.0.2.1"));
    // r1 is also a kernel VTEP for VNI 10010, with a host address on it.
    t.r1.ip(&[
        "link",
        "add",
        "vx0",
        "type",
        "vxlan",
        "id",
        "10010",
        "local",
        "10.0.1.2",
        "dstport",
        "4789",
        "nolearning",
    ]);
    t.r1.exec(&["bridge", "fdb", "append", "00:00:00:00:00:00", "dev", "vx0", "dst", "10.255.0.1"]);
    t.r1.ip(&["link", "set", "vx0", "mtu", "1450"]);
    t.r1.ip(&["addr", "add", "192.168.10.3/24", "dev", "vx0"]);
    t.r1.ip(&["link", "set", "vx0", "up"]);
    t
}

fn json(ns: &Netns, argv: &[&str]) -> Vec<Value> {
    let text = ns.exec(argv);
    match serde_json::from_str(&text) {
        Ok(Value::Array(rows)) => rows,
        other => panic!("{argv:?}: not a JSON array ({other:?}): {text}"),
    }
}

fn link<'a>(links: &'a [Value], name: &str) -> &'a Value {
    links.iter().find(|l| l["ifname"] == name).unwrap_or_else(|| panic!("no link {name}"))
}

/// Our routes, by destination.
fn our_routes(sw: &Netns) -> Vec<Value> {
    json(sw, &["ip", "-j", "route", "show", "proto", PROTOCOL])
}

fn destinations(routes: &[Value]) -> BTreeSet<String> {
    routes.iter().map(|r| r["dst"].as_str().expect("dst").to_string()).collect()
}

/// The bridge VLANs `bridge -j vlan show` lists for `ifname`, with whether
/// each is the PVID and egresses untagged.
fn bridge_vlans(sw: &Netns, ifname: &str) -> BTreeSet<(u64, bool, bool)> {
    json(sw, &["bridge", "-j", "vlan", "show"])
        .iter()
        .filter(|row| row["ifname"] == ifname)
        .flat_map(|row| row["vlans"].as_array().cloned().unwrap_or_default())
        .map(|vlan| {
            let flags: Vec<String> =
                vlan["flags"].as_array().into_iter().flatten().filter_map(|f| f.as_str().map(String::from)).collect();
            (
                vlan["vlan"].as_u64().expect("vid"),
                flags.iter().any(|f| f == "PVID"),
                flags.iter().any(|f| f == "Egress Untagged"),
            )
        })
        .collect()
}

/// Checks that `ports` are untagged access members (PVID) of `vid` and
/// nothing else, in whichever bridge mode the kernel allows.
#[track_caller]
fn assert_access_members(sw: &Netns, vid: u64, ports: &[&str]) {
    let links = json(sw, &["ip", "-j", "-d", "link"]);
    if kernel_vlans().vlan_filtering {
        let bridge = link(&links, "nos-br");
        assert_eq!(bridge["linkinfo"]["info_data"]["vlan_filtering"], 1, "{bridge}");
        for port in ports {
            assert_eq!(link(&links, port)["master"], "nos-br", "{port} in the VLAN-aware bridge");
            assert_eq!(bridge_vlans(sw, port), [(vid, true, true)].into(), "{port}: vlan {vid} pvid untagged");
        }
        assert!(bridge_vlans(sw, "nos-br").iter().any(|(v, _, _)| *v == vid), "vlan {vid} on the bridge itself");
    } else {
        let bridge = format!("nos-vlan{vid}");
        assert_eq!(link(&links, &bridge)["linkinfo"]["info_kind"], "bridge");
        let members: BTreeSet<String> = json(sw, &["bridge", "-j", "link", "show"])
            .iter()
            .filter(|row| row["master"] == bridge.as_str())
            .map(|row| row["ifname"].as_str().expect("ifname").to_string())
            .collect();
        for port in ports {
            assert_eq!(link(&links, port)["master"], bridge.as_str(), "{port} in VLAN {vid}'s bridge");
            assert!(members.contains(*port), "bridge -j link: {port} in {bridge}: {members:?}");
        }
    }
}

fn gateways_of(nexthops: &[Value], id: u64) -> BTreeSet<String> {
    let nexthop = nexthops.iter().find(|n| n["id"] == id).unwrap_or_else(|| panic!("no nexthop {id}: {nexthops:?}"));
    match nexthop["group"].as_array() {
        Some(members) => members.iter().flat_map(|m| gateways_of(nexthops, m["id"].as_u64().expect("id"))).collect(),
        None => [nexthop["gateway"].as_str().expect("gateway").to_string()].into(),
    }
}

#[test]
fn the_kernel_holds_what_the_shim_installed_and_forwards() {
    if !require_root_and_tools("switchd_kernel", &["ip", "bridge", "ping"]) {
        return;
    }
    let t = topology();
    let switchd = Switchd::start(&t.sw, CONFIG);

    // ---- read back: routes (connected as scope link, static by nhid)
    let routes = our_routes(&t.sw);
    assert_eq!(
        destinations(&routes),
        ["10.0.1.0/24", "10.0.2.0/24", "10.98.0.0/16", "10.99.0.0/16", "192.168.10.0/24"].map(String::from).into(),
        "{routes:#?}"
    );
    let connected = routes.iter().find(|r| r["dst"] == "192.168.10.0/24").unwrap();
    assert_eq!((connected["dev"].as_str(), connected["scope"].as_str()), (Some("nos-vlan10"), Some("link")));
    let nexthops = json(&t.sw, &["ip", "-j", "nexthop"]);
    let route = |dst: &str| routes.iter().find(|r| r["dst"] == dst).unwrap().clone();
    let single = route("10.98.0.0/16")["nhid"].as_u64().expect("10.98/16 by nhid");
    let group = route("10.99.0.0/16")["nhid"].as_u64().expect("10.99/16 by nhid");
    assert_eq!(gateways_of(&nexthops, single), ["10.0.1.2".to_string()].into());
    assert_eq!(gateways_of(&nexthops, group), ["10.0.1.2".to_string(), "10.0.2.2".to_string()].into());
    // The group shares the single route's nexthop object.
    let members: Vec<u64> = nexthops.iter().find(|n| n["id"] == group).unwrap()["group"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_u64().unwrap())
        .collect();
    assert!(members.contains(&single), "group {members:?} reuses nexthop {single}");

    // ---- read back: devices and VLAN membership
    let mode = kernel_vlans();
    eprintln!("switchd_kernel: bridge mode {} on this kernel ({mode:?})", mode.mode());
    // The daemon says which mode it chose.
    let backend = switchd.show_json("backend");
    assert_eq!(backend["name"], "kernel", "{backend}");
    let details = backend["details"].as_array().cloned().unwrap_or_default();
    assert!(
        details.iter().any(|d| d[0] == "bridge_mode" && d[1] == mode.mode()),
        "show backend names the bridge mode {}: {backend}",
        mode.mode()
    );
    assert!(switchd.swcli(&["show", "backend"]).contains(mode.mode()));
    assert_access_members(&t.sw, 10, &["eth1", "eth2"]);
    let links = json(&t.sw, &["ip", "-j", "-d", "link"]);
    // The SVI: the VLAN's bridge itself, or an 802.1Q device on the
    // VLAN-aware bridge.
    let bridge = link(&links, "nos-vlan10");
    let vxlan = link(&links, "nos-vx10010");
    if mode.vlan_filtering {
        assert_eq!(bridge["linkinfo"]["info_kind"], "vlan");
        assert_eq!(bridge["linkinfo"]["info_data"]["id"], 10);
        assert_eq!(bridge["link"], "nos-br");
        assert_eq!(vxlan["master"], "nos-br");
        assert_eq!(bridge_vlans(&t.sw, "nos-vx10010"), [(10, true, true)].into(), "the VNI carries VLAN 10");
    } else {
        assert_eq!(bridge["linkinfo"]["info_kind"], "bridge");
        assert_eq!(vxlan["master"], "nos-vlan10");
    }
    let data = &vxlan["linkinfo"]["info_data"];
    assert_eq!(
        (data["id"].as_u64(), data["local"].as_str(), data["port"].as_u64()),
        (Some(10010), Some("10.255.0.1"), Some(4789))
    );
    assert_eq!(data["learning"], false, "nolearning: {data}");
    // A routed port and the SVI carry the router interfaces' MAC.
    assert_eq!(link(&links, "eth3")["address"], bridge["address"]);
    assert_eq!(link(&links, "eth3")["master"], Value::Null);

    // ---- read back: the VNI's flood list
    let fdb = json(&t.sw, &["bridge", "-j", "fdb", "show", "dev", "nos-vx10010"]);
    assert!(
        fdb.iter().any(|e| e["mac"] == "00:00:00:00:00:00" && e["dst"] == "10.0.1.2"),
        "head-end replication entry: {fdb:#?}"
    );

    // ---- forwarding
    assert!(t.h1.ping_until("192.168.10.2", Duration::from_secs(10)), "h1 -> h2 in VLAN 10");
    assert!(t.h1.ping("192.168.10.254", 2), "h1 -> its gateway, the SVI");
    assert!(t.h1.ping("10.0.2.2", 2), "h1 -> r2, routed");
    assert!(t.h1.ping("10.255.0.1", 2), "h1 -> the switch's loopback");
    assert!(t.h1.ping_until("192.168.10.3", Duration::from_secs(10)), "h1 -> r1's VTEP over VXLAN");

    // ---- the management API over the kernel: MACs where the bridges learned
    // them, counters from the kernel's link statistics.
    let h1_mac = t.h1.exec(&["cat", "/sys/class/net/eth0/address"]).trim().to_string();
    let macs = switchd.show_rows("mac");
    let h1_row = macs.iter().find(|m| m["mac"].as_str().is_some_and(|m| m.eq_ignore_ascii_case(&h1_mac)));
    assert!(h1_row.is_some_and(|m| m["destination"] == "eth1"), "h1 learned on eth1: {macs:#?}");
    assert!(switchd.counter("eth1", "rx_packets") >= 5, "{}", switchd.counters("eth1"));
}

#[test]
fn a_restart_after_sigkill_reconciles_ours_and_leaves_foreign_objects() {
    if !require_root_and_tools("switchd_kernel", &["ip", "bridge", "ping"]) {
        return;
    }
    let t = topology();
    let mut first = Switchd::start(&t.sw, CONFIG);
    assert!(t.h1.ping_until("10.0.2.2", Duration::from_secs(10)), "h1 -> r2 before the kill");
    // SAFETY: kill has no memory preconditions.
    assert_eq!(unsafe { libc::kill(first.process.id() as i32, libc::SIGKILL) }, 0);
    let _ = first.process.wait_timeout(Duration::from_secs(5));

    // What the killed daemon left is still there...
    assert!(destinations(&our_routes(&t.sw)).contains("10.98.0.0/16"));
    // ...and the test adds objects of its own.
    t.sw.ip(&["route", "add", "10.77.0.0/16", "via", "10.0.1.2"]);
    t.sw.ip(&["nexthop", "add", "id", "7", "via", "10.0.2.2", "dev", "eth4"]);
    t.sw.ip(&["route", "add", "10.76.0.0/16", "nhid", "7"]);
    t.sw.ip(&["link", "add", "foreign0", "type", "bridge"]);
    t.sw.ip(&["addr", "add", "10.200.0.1/24", "dev", "foreign0"]);

    let _second = Switchd::start(&t.sw, CHANGED);

    let routes = our_routes(&t.sw);
    let expected: BTreeSet<String> =
        ["10.0.1.0/24", "10.0.2.0/24", "10.97.0.0/16", "10.99.0.0/16", "192.168.10.0/24"].map(String::from).into();
    assert_eq!(destinations(&routes), expected, "stale 10.98/16 removed: {routes:#?}");
    let nexthops = json(&t.sw, &["ip", "-j", "nexthop"]);
    let ours: Vec<&Value> = nexthops.iter().filter(|n| n["id"] != 7).collect();
    assert!(
        ours.iter().all(|n| n["group"].is_null() || n["group"].as_array().is_some_and(|g| g.len() == 1)),
        "the ECMP group is gone: {nexthops:#?}"
    );
    // Foreign objects untouched.
    let all_routes = json(&t.sw, &["ip", "-j", "route"]);
    assert!(all_routes.iter().any(|r| r["dst"] == "10.77.0.0/16" && r["gateway"] == "10.0.1.2"), "{all_routes:#?}");
    assert!(all_routes.iter().any(|r| r["dst"] == "10.76.0.0/16" && r["nhid"] == 7), "{all_routes:#?}");
    assert!(nexthops.iter().any(|n| n["id"] == 7 && n["gateway"] == "10.0.2.2"), "{nexthops:#?}");
    let links = json(&t.sw, &["ip", "-j", "-d", "link"]);
    let foreign = link(&links, "foreign0");
    assert_eq!(foreign["linkinfo"]["info_kind"], "bridge");
    let addresses = json(&t.sw, &["ip", "-j", "addr", "show", "dev", "foreign0"]);
    assert!(addresses[0]["addr_info"].as_array().unwrap().iter().any(|a| a["local"] == "10.200.0.1"));
    // The changed config is in place.
    assert_access_members(&t.sw, 10, &["eth1"]);
    assert_access_members(&t.sw, 20, &["eth2"]);
    // Traffic is back.
    assert!(t.h1.ping_until("10.0.2.2", Duration::from_secs(10)), "h1 -> r2 after the restart");
    assert!(!t.h1.ping("192.168.10.2", 1), "h2 left VLAN 10");
}

#[test]
fn kernel_refusals_are_typed_errors_and_leave_nothing_half_done() {
    use sai_shim::backend::kernel::{KernelBackend, KernelConfig};
    use sai_shim::*;

    if !require_root_and_tools("switchd_kernel", &["ip"]) {
        return;
    }
    let sw = Netns::new("ke");
    let peer = Netns::new("kep");
    veth(&peer, "eth0", &sw, "eth3");
    let config = KernelConfig::default();
    let base = config.nexthop_id_base;
    let (duplicate, taken_id, nexthops_after) = sw.enter(move || {
        let backend = KernelBackend::new(config).expect("netlink sockets");
        let mut sai = Sai::new(backend, &[]).expect("switch object");
        // The management interface and a netdev that does not exist.
        let eth0 = sai.create_port(&[PortAttr::Name("eth0".into())]);
        assert!(matches!(eth0, Err(SaiError::InvalidAttribute { attribute: "NAME", .. })), "{eth0:?}");
        let missing = sai.create_port(&[PortAttr::Name("eth9".into())]);
        assert!(
            matches!(&missing, Err(SaiError::InvalidAttribute { reason, .. }) if reason.contains("eth9")),
            "{missing:?}"
        );

        let port = sai.create_port(&[PortAttr::Name("eth3".into()), PortAttr::AdminState(true)]).expect("eth3");
        let vr = sai.default_virtual_router();
        let rif = sai
            .create_router_interface(&[
                RouterInterfaceAttr::VirtualRouterId(vr),
                RouterInterfaceAttr::Type(RouterInterfaceType::Port(port)),
            ])
            .expect("router interface");
        let hop = sai
            .create_next_hop(&[NextHopAttr::Ip("10.0.1.2".parse().unwrap()), NextHopAttr::RouterInterfaceId(rif)])
            .expect("next hop");

        // A foreign route holds the prefix: the kernel says EEXIST.
        let status =
            std::process::Command::new("ip").args(["route", "add", "10.66.0.0/16", "dev", "eth3"]).status().unwrap();
        assert!(status.success());
        let key = RouteEntryKey { virtual_router: vr, destination: "10.66.0.0/16".parse().unwrap() };
        let duplicate = sai.create_route_entry(key, &[RouteEntryAttr::NextHopId(Some(hop))]);
        assert!(sai.get_route_entry(key).is_err(), "a refused route is not in the store");

        // A group takes two nexthop objects (the blackhole member, then the
        // group); the second id is taken by a foreign nexthop, so the first
        // is undone.
        let status = std::process::Command::new("ip")
            .args(["nexthop", "add", "id", &(base + 2).to_string(), "via", "10.0.1.9", "dev", "eth3", "onlink"])
            .status()
            .unwrap();
        assert!(status.success());
        let taken_id = sai.create_next_hop_group();
        let out = std::process::Command::new("ip").args(["-j", "nexthop"]).output().unwrap();
        (duplicate, taken_id, String::from_utf8_lossy(&out.stdout).into_owned())
    });
    assert!(
        matches!(&duplicate, Err(SaiError::AlreadyExists(what)) if what.contains("10.66.0.0/16")),
        "a duplicate route is the shim's AlreadyExists: {duplicate:?}"
    );
    assert!(matches!(&taken_id, Err(SaiError::AlreadyExists(_))), "{taken_id:?}");
    let nexthops: Vec<Value> = serde_json::from_str(&nexthops_after).unwrap();
    let ids: BTreeSet<u64> = nexthops.iter().map(|n| n["id"].as_u64().unwrap()).collect();
    assert_eq!(
        ids,
        [u64::from(base), u64::from(base) + 2].into(),
        "the blackhole made on the way was undone: {nexthops:#?}"
    );
    // The foreign route is as the test made it.
    let routes = json(&sw, &["ip", "-j", "route", "show", "10.66.0.0/16"]);
    assert_eq!(routes.len(), 1);
    assert!(routes[0]["nhid"].is_null(), "{routes:?}");
}

/// Bulk route creation goes to the kernel as one netlink batch with a
/// result per route: the one a foreign route holds is refused alone
/// (AlreadyExists) and the others are installed, referencing their nexthop.
#[test]
fn bulk_routes_are_one_batch_with_a_result_per_route() {
    use sai_shim::backend::kernel::{KernelBackend, KernelConfig};
    use sai_shim::*;

    if !require_root_and_tools("switchd_kernel", &["ip"]) {
        return;
    }
    let sw = Netns::new("kb");
    let peer = Netns::new("kbp");
    veth(&peer, "eth0", &sw, "eth3");
    let count = 2000u32;
    let results = sw.enter(move || {
        let mut sai = Sai::new(KernelBackend::new(KernelConfig::default()).expect("netlink"), &[]).expect("switch");
        let port = sai.create_port(&[PortAttr::Name("eth3".into()), PortAttr::AdminState(true)]).expect("eth3");
        let vr = sai.default_virtual_router();
        let rif = sai
            .create_router_interface(&[
                RouterInterfaceAttr::VirtualRouterId(vr),
                RouterInterfaceAttr::Type(RouterInterfaceType::Port(port)),
            ])
            .expect("router interface");
        let hop = sai
            .create_next_hop(&[NextHopAttr::Ip("10.0.1.2".parse().unwrap()), NextHopAttr::RouterInterfaceId(rif)])
            .expect("next hop");
        let status =
            std::process::Command::new("ip").args(["route", "add", "10.66.7.0/24", "dev", "eth3"]).status().unwrap();
        assert!(status.success());
        let via = [RouteEntryAttr::NextHopId(Some(hop))];
        let entries: Vec<(RouteEntryKey, &[RouteEntryAttr])> = (0..count)
            .map(|i| {
                let destination = format!("10.{}.{}.0/24", 64 + i / 256, i % 256).parse().unwrap();
                (RouteEntryKey { virtual_router: vr, destination }, &via[..])
            })
            .collect();
        let results = sai.create_route_entries(&entries);
        assert_eq!(sai.store().route_entries().count(), count as usize - 1);
        results
    });
    // 10.66.7.0/24 is entry 2 * 256 + 7.
    let refused: Vec<_> = results.iter().enumerate().filter(|(_, r)| r.is_err()).collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].0, 2 * 256 + 7);
    assert!(
        matches!(refused[0].1, Err(sai_shim::SaiError::AlreadyExists(what)) if what.contains("10.66.7.0/24")),
        "{refused:?}"
    );
    let routes = our_routes(&sw);
    assert_eq!(routes.len(), count as usize - 1);
    assert!(routes.iter().all(|r| r["nhid"].is_u64()), "every route references the nexthop object");
    let foreign = json(&sw, &["ip", "-j", "route", "show", "10.66.7.0/24"]);
    assert!(foreign.len() == 1 && foreign[0]["nhid"].is_null(), "{foreign:?}");
}

/// One leaf on each backend, hosts in one VNI across them.
#[test]
fn a_kernel_leaf_and_a_soft_leaf_carry_a_vni_between_hosts() {
    if !require_root_and_tools("switchd_kernel", &["ip", "bridge", "ping"]) {
        return;
    }
    let leaf = |name: &str, backend: &str, own: &str, peer: &str, link: &str, peer_link: &str| {
        format!(
            "
name: {name}
backend: {backend}
loopback: [{own}/32]
ports:
  - {{ name: eth1, mode: access, vlan: 10 }}
  - {{ name: eth2, mode: routed, addresses: [{link}/30] }}
vlans:
  - {{ id: 10 }}
vxlan:
  source: {own}
  vnis: [{{ vni: 10010, vlan: 10, flood: [{peer}] }}]
routes:
  - {{ prefix: {peer}/32, next_hops: [{peer_link}] }}
"
        )
    };
    let l1 = Netns::new("kl1");
    let l2 = Netns::new("kl2");
    let h1 = Netns::new("kx1");
    let h2 = Netns::new("kx2");
    veth(&h1, "eth0", &l1, "eth1");
    veth(&h2, "eth0", &l2, "eth1");
    veth(&l1, "eth2", &l2, "eth2");
    // The soft leaf reads frames whole: no checksum or segmentation
    // offloads on what the kernel leaf sends it.
    l1.disable_offloads("eth2");
    h1.host_setup("eth0", "192.168.10.1/24", None);
    h2.host_setup("eth0", "192.168.10.2/24", None);
    for h in [&h1, &h2] {
        h.ip(&["link", "set", "eth0", "mtu", "1450"]);
    }
    let _kernel = Switchd::start(&l1, &leaf("kleaf", "kernel", "10.255.0.1", "10.255.0.2", "10.0.12.1", "10.0.12.2"));
    let _soft = Switchd::start(&l2, &leaf("sleaf", "soft", "10.255.0.2", "10.255.0.1", "10.0.12.2", "10.0.12.1"));
    assert!(h1.ping_until("192.168.10.2", Duration::from_secs(15)), "h1 -> h2 across the mixed fabric");
    assert!(h1.ping("192.168.10.2", 3), "every reply");
    assert!(h2.ping("192.168.10.1", 3), "and back");
}

/// MACs the kernel bridge learns and link changes come back as the same shim
/// notifications the soft backend sends.
#[test]
fn kernel_learning_and_link_state_are_shim_notifications() {
    use sai_shim::backend::kernel::{KernelBackend, KernelConfig};
    use sai_shim::*;

    if !require_root_and_tools("switchd_kernel", &["ip", "ping"]) {
        return;
    }
    let sw = Netns::new("kn");
    let h1 = Netns::new("kn1");
    veth(&h1, "eth0", &sw, "eth1");
    h1.host_setup("eth0", "192.168.10.1/24", None);
    let h1_mac = h1.exec(&["cat", "/sys/class/net/eth0/address"]).trim().to_string();
    let h1_name = h1.name().to_string();
    let (learned, went_down, aged) = sw.enter(move || {
        let mut sai = Sai::new(KernelBackend::new(KernelConfig::default()).unwrap(), &[]).unwrap();
        let vlan = sai.create_vlan(&[VlanAttr::VlanId(10)]).unwrap();
        let port = sai
            .create_port(&[PortAttr::Name("eth1".into()), PortAttr::AdminState(true), PortAttr::PortVlanId(10)])
            .unwrap();
        let bridge_port = sai.create_bridge_port(&[BridgePortAttr::Type(BridgePortType::Port(port))]).unwrap();
        sai.create_vlan_member(&[VlanMemberAttr::VlanId(vlan), VlanMemberAttr::BridgePortId(bridge_port)]).unwrap();
        let h1 = |args: &[&str]| {
            std::process::Command::new("ip").args(["netns", "exec", &h1_name]).args(args).output().unwrap()
        };
        let wait_for = |sai: &mut Sai<KernelBackend>, what: &dyn Fn(&Notification) -> bool| {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while std::time::Instant::now() < deadline {
                if let Some(found) = sai.drain_notifications().into_iter().find(|n| what(n)) {
                    return Some(found);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            None
        };
        // Anything h1 sends (an ARP request) teaches the bridge its MAC.
        h1(&["ping", "-c", "1", "-W", "1", "192.168.10.9"]);
        let mac = h1_mac.parse().unwrap();
        let learned = wait_for(
            &mut sai,
            &|n| matches!(n, Notification::Fdb { event: FdbEvent::Learned, entry, .. } if entry.mac == mac),
        );
        let learned_ok = matches!(
            learned,
            Some(Notification::Fdb { entry: FdbEntryKey { vlan: v, .. }, bridge_port: Some(b), .. })
                if v == vlan && b == bridge_port
        );
        // The peer goes down: eth1 loses its carrier, the bridge forgets h1.
        h1(&["ip", "link", "set", "eth0", "down"]);
        let down = wait_for(&mut sai, &|n| matches!(n, Notification::PortOperStatus { up: false, .. }));
        let went_down = matches!(down, Some(Notification::PortOperStatus { port: p, up: false }) if p == port)
            && !sai.port_oper_status(port);
        let aged = sai.backend().fdb_details(sai.store()).iter().all(|d| d.key.mac != mac);
        (learned_ok.then_some(()).ok_or(learned), went_down, aged)
    });
    assert!(learned.is_ok(), "h1's MAC learned on its bridge port in VLAN 10: {learned:?}");
    assert!(went_down, "link down reported for eth1");
    assert!(aged, "the bridge forgot h1 with the link");
}

/// A kernel refusal through the management API: a commit adding a route
/// whose prefix a foreign route holds is refused whole with the kernel's
/// words (the shim's `AlreadyExists`), the running config and what the
/// kernel holds stay as they were, and the daemon goes on.
#[test]
fn a_kernel_refusal_of_a_commit_is_reported_through_the_management_api() {
    if !require_root_and_tools("switchd_kernel", &["ip", "bridge", "ping"]) {
        return;
    }
    let t = topology();
    let switchd = Switchd::start(&t.sw, CONFIG);
    assert!(t.h1.ping_until("10.0.2.2", Duration::from_secs(10)), "h1 -> r2 before");
    t.sw.ip(&["route", "add", "10.66.0.0/16", "dev", "eth4"]);
    let before = destinations(&our_routes(&t.sw));

    let (code, text) = switchd.swcli_script(
        "configure\nset routes 10.66.0.0/16 next_hops [10.0.2.2]\nset routes 10.65.0.0/16 next_hops [10.0.2.2]\ncommit\n",
    );
    eprintln!("swcli (exit {code}):\n{text}");
    assert!(text.contains("10.66.0.0/16"), "the refusal names the route (exit {code}): {text}");
    assert!(text.to_lowercase().contains("exists"), "the kernel's EEXIST as the shim's AlreadyExists: {text}");
    assert!(!text.contains("committed (generation"), "nothing committed: {text}");

    // Nothing changed: running config, our routes (10.65/16 was not left
    // behind), the foreign route; and the daemon still answers and forwards.
    let running = switchd.swcli(&["show", "running-config"]);
    assert!(!running.contains("10.66.0.0/16") && !running.contains("10.65.0.0/16"), "{running}");
    assert_eq!(destinations(&our_routes(&t.sw)), before, "the refused commit left nothing of its own");
    let foreign = json(&t.sw, &["ip", "-j", "route", "show", "10.66.0.0/16"]);
    assert_eq!(foreign.len(), 1, "{foreign:?}");
    assert_eq!(foreign[0]["dev"], "eth4", "{foreign:?}");
    assert!(foreign[0]["protocol"] != PROTOCOL, "{foreign:?}");
    assert!(t.h1.ping("10.0.2.2", 2), "h1 -> r2 after the refusal");
}

/// FDB entries the shim installs are what `bridge -j fdb` shows, in
/// whichever bridge mode the kernel has: a static MAC on a port (in VLAN
/// 10's bridge, or `vlan 10` in the VLAN-aware one) and a remote MAC behind
/// a VTEP on the VNI's vxlan device (`dst`, `extern_learn`, as zebra
/// installs EVPN MACs) and a static one that must not move (the device's
/// entry `permanent`, the bridge's `static`), read back by the shim with
/// its VTEP; removed, they are gone from the kernel.
#[test]
fn fdb_entries_the_shim_installs_are_what_bridge_fdb_shows() {
    use sai_shim::backend::kernel::{KernelBackend, KernelConfig};
    use sai_shim::*;

    if !require_root_and_tools("switchd_kernel", &["ip", "bridge"]) {
        return;
    }
    let sw = Netns::new("kf");
    let peer = Netns::new("kfp");
    veth(&peer, "eth0", &sw, "eth1");
    let sw_name = sw.name().to_string();
    let fdb = move || -> Vec<Value> {
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", &sw_name, "bridge", "-j", "fdb", "show"])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let local: EthernetAddress = "02:00:00:00:0f:01".parse().unwrap();
    let remote: EthernetAddress = "02:00:00:00:0f:02".parse().unwrap();
    let pinned: EthernetAddress = "02:00:00:00:0f:03".parse().unwrap();
    let vtep: std::net::Ipv4Addr = "10.0.1.2".parse().unwrap();
    let (installed, shown, removed) = sw.enter(move || {
        let mut sai = Sai::new(KernelBackend::new(KernelConfig::default()).unwrap(), &[]).unwrap();
        let vlan = sai.create_vlan(&[VlanAttr::VlanId(10)]).unwrap();
        let port = sai
            .create_port(&[PortAttr::Name("eth1".into()), PortAttr::AdminState(true), PortAttr::PortVlanId(10)])
            .unwrap();
        let bridge_port = sai.create_bridge_port(&[BridgePortAttr::Type(BridgePortType::Port(port))]).unwrap();
        sai.create_vlan_member(&[VlanMemberAttr::VlanId(vlan), VlanMemberAttr::BridgePortId(bridge_port)]).unwrap();
        let tunnel = sai.create_tunnel(&[TunnelAttr::EncapSrcIp("10.255.0.1".parse().unwrap())]).unwrap();
        sai.create_tunnel_map_entry(&[
            TunnelMapEntryAttr::TunnelId(tunnel),
            TunnelMapEntryAttr::VlanId(vlan),
            TunnelMapEntryAttr::Vni(10010),
        ])
        .unwrap();
        let endpoint = sai
            .create_tunnel_endpoint(&[TunnelEndpointAttr::TunnelId(tunnel), TunnelEndpointAttr::RemoteIp(vtep)])
            .unwrap();
        let remote_port = sai.create_bridge_port(&[BridgePortAttr::Type(BridgePortType::Tunnel(endpoint))]).unwrap();
        let local_key = FdbEntryKey { vlan, mac: local };
        let remote_key = FdbEntryKey { vlan, mac: remote };
        sai.create_fdb_entry(
            local_key,
            &[FdbEntryAttr::Type(FdbEntryType::Static), FdbEntryAttr::BridgePortId(bridge_port)],
        )
        .unwrap();
        sai.create_fdb_entry(
            remote_key,
            &[FdbEntryAttr::Type(FdbEntryType::Dynamic), FdbEntryAttr::BridgePortId(remote_port)],
        )
        .unwrap();
        // A static remote MAC that must not move (`noarp`).
        let pinned_key = FdbEntryKey { vlan, mac: pinned };
        sai.create_fdb_entry(
            pinned_key,
            &[FdbEntryAttr::Type(FdbEntryType::Static), FdbEntryAttr::BridgePortId(remote_port)],
        )
        .expect("a static remote MAC");
        let installed = fdb();
        let shown: Vec<(EthernetAddress, bool, Option<std::net::Ipv4Addr>)> = sai
            .fdb_details()
            .into_iter()
            .filter(|d| d.key.vlan == vlan)
            .map(|d| (d.key.mac, d.entry.bridge_port == remote_port, d.remote_vtep))
            .collect();
        sai.remove_fdb_entry(local_key).unwrap();
        sai.remove_fdb_entry(remote_key).unwrap();
        sai.remove_fdb_entry(pinned_key).unwrap();
        (installed, shown, fdb())
    });

    let mode = kernel_vlans();
    eprintln!("fdb read-back in bridge mode {}", mode.mode());
    let has = |rows: &[Value], mac: &str, pred: &dyn Fn(&Value) -> bool| {
        rows.iter().any(|r| r["mac"].as_str().is_some_and(|m| m.eq_ignore_ascii_case(mac)) && pred(r))
    };
    let flags = |r: &Value| -> Vec<String> {
        r["flags"].as_array().into_iter().flatten().filter_map(|f| f.as_str().map(String::from)).collect()
    };
    let in_vlan = |r: &Value| {
        if mode.vlan_filtering { r["vlan"] == 10 && r["master"] == "nos-br" } else { r["master"] == "nos-vlan10" }
    };
    // The static MAC: on eth1, in VLAN 10, static.
    assert!(
        has(&installed, "02:00:00:00:0f:01", &|r| r["ifname"] == "eth1"
            && in_vlan(r)
            && r["state"] == "static"
            && flags(r).iter().any(|f| f == "sticky")),
        "static MAC on eth1 in VLAN 10: {installed:#?}"
    );
    // The remote MAC: the vxlan device's own entry to the VTEP, and the
    // bridge's entry on the vxlan port, both extern_learn.
    assert!(
        has(&installed, "02:00:00:00:0f:02", &|r| r["ifname"] == "nos-vx10010"
            && r["dst"] == "10.0.1.2"
            && flags(r).iter().any(|f| f == "extern_learn")),
        "remote MAC behind 10.0.1.2 on the vxlan device: {installed:#?}"
    );
    assert!(
        has(&installed, "02:00:00:00:0f:02", &|r| r["ifname"] == "nos-vx10010" && in_vlan(r)),
        "remote MAC in VLAN 10's bridge on the vxlan port: {installed:#?}"
    );
    // The static remote MAC: the device's permanent entry to the VTEP and
    // the bridge's static one on the vxlan port, sticky (learning never
    // moves it).
    assert!(
        has(&installed, "02:00:00:00:0f:03", &|r| r["ifname"] == "nos-vx10010"
            && r["dst"] == "10.0.1.2"
            && r["state"] == "permanent"),
        "static remote MAC behind 10.0.1.2 on the vxlan device: {installed:#?}"
    );
    assert!(
        has(&installed, "02:00:00:00:0f:03", &|r| r["ifname"] == "nos-vx10010"
            && in_vlan(r)
            && r["state"] == "static"
            && flags(r).iter().any(|f| f == "sticky")),
        "static remote MAC static in VLAN 10's bridge: {installed:#?}"
    );
    // The shim reads them back (what `swcli show mac` shows).
    assert!(shown.contains(&(local, false, None)), "{shown:?}");
    assert!(shown.contains(&(remote, true, Some(vtep))), "{shown:?}");
    assert!(shown.contains(&(pinned, true, Some(vtep))), "{shown:?}");
    // Removed, they are gone.
    for mac in ["02:00:00:00:0f:01", "02:00:00:00:0f:02", "02:00:00:00:0f:03"] {
        assert!(!has(&removed, mac, &|_| true), "{mac} removed: {removed:#?}");
    }
}

/// Ports of every kind in the VLAN-aware bridge, read back with `bridge -j
/// vlan`: access ports carry their VLAN `pvid untagged`, a trunk its VLANs
/// tagged and its native VLAN `pvid untagged`, the bridge itself every VLAN
/// (and not the kernel's default VLAN 1), an SVI is an 802.1Q device on it.
/// A commit that moves the trunk's native VLAN and prunes one moves the
/// flags with it. Needs a kernel with `CONFIG_BRIDGE_VLAN_FILTERING`: where
/// this one lacks it, `switchd_kernel_vm` runs this test in a VM on one
/// that has it.
#[test]
fn vlan_aware_membership_is_what_bridge_vlan_shows() {
    if !require_root_and_tools("switchd_kernel", &["ip", "bridge"]) {
        return;
    }
    if !kernel_vlans().vlan_filtering {
        eprintln!("NOTE switchd_kernel: no VLAN filtering in this kernel; switchd_kernel_vm runs this test in a VM");
        return;
    }
    let sw = Netns::new("kva");
    let peers: Vec<Netns> = (1..=3).map(|i| Netns::new(&format!("kva{i}"))).collect();
    for (i, peer) in peers.iter().enumerate() {
        veth(peer, "eth0", &sw, &format!("eth{}", i + 1));
    }
    let switchd = Switchd::start(
        &sw,
        "
name: kva
backend: kernel
ports:
  - { name: eth1, mode: access, vlan: 10 }
  - { name: eth2, mode: access, vlan: 20 }
  - { name: eth3, mode: trunk, vlans: [10, 20], native: 30 }
vlans:
  - { id: 10 }
  - { id: 20, addresses: [192.168.20.254/24] }
  - { id: 30 }
",
    );
    let links = json(&sw, &["ip", "-j", "-d", "link"]);
    let bridge = &link(&links, "nos-br")["linkinfo"]["info_data"];
    assert_eq!(
        (bridge["vlan_filtering"].as_u64(), bridge["vlan_default_pvid"].as_u64()),
        (Some(1), Some(0)),
        "{bridge}"
    );
    for port in ["eth1", "eth2", "eth3"] {
        assert_eq!(link(&links, port)["master"], "nos-br", "{port} in the VLAN-aware bridge");
    }
    assert_eq!(bridge_vlans(&sw, "eth1"), [(10, true, true)].into(), "eth1: access vlan 10");
    assert_eq!(bridge_vlans(&sw, "eth2"), [(20, true, true)].into(), "eth2: access vlan 20");
    assert_eq!(
        bridge_vlans(&sw, "eth3"),
        [(10, false, false), (20, false, false), (30, true, true)].into(),
        "eth3: trunk 10,20 tagged, native 30"
    );
    let on_bridge: BTreeSet<u64> = bridge_vlans(&sw, "nos-br").into_iter().map(|(vid, _, _)| vid).collect();
    assert_eq!(on_bridge, [10, 20, 30].into(), "the bridge itself carries every VLAN, not VLAN 1");
    let svi = link(&links, "nos-vlan20");
    assert_eq!(
        (svi["linkinfo"]["info_kind"].as_str(), svi["linkinfo"]["info_data"]["id"].as_u64(), svi["link"].as_str()),
        (Some("vlan"), Some(20), Some("nos-br")),
        "{svi}"
    );
    assert!(!links.iter().any(|l| l["ifname"] == "nos-vlan10"), "no SVI without an address");

    let (code, text) =
        switchd.swcli_script("configure\nset ports eth3 { mode: trunk, vlans: [20], native: 10 }\ncommit\n");
    assert!(text.contains("committed (generation"), "the commit applies (exit {code}): {text}");
    assert_eq!(
        bridge_vlans(&sw, "eth3"),
        [(10, true, true), (20, false, false)].into(),
        "eth3 after the commit: native 10, trunk 20, no 30"
    );
    assert_eq!(bridge_vlans(&sw, "eth1"), [(10, true, true)].into(), "eth1 untouched");
}

/// A virtual router other than the default is an l3mdev VRF device with a
/// table of its own, as zebra maps VRFs: its router interfaces are enslaved
/// to it, its routes (connected and by nexthop) are in its table and not
/// in the main one, and hosts on two of its interfaces ping each other
/// through it. Removed, the router interfaces leave it and it goes. Needs
/// `CONFIG_NET_VRF`: where this kernel lacks it, `switchd_kernel_vm` runs
/// this test in a VM on one that has it.
#[test]
fn a_virtual_router_is_a_vrf_device_with_its_own_table() {
    use sai_shim::backend::kernel::{KernelBackend, KernelConfig};
    use sai_shim::*;

    if !require_root_and_tools("switchd_kernel", &["ip", "ping"]) {
        return;
    }
    if !kernel_has_vrf() {
        eprintln!("NOTE switchd_kernel: no VRFs in this kernel; switchd_kernel_vm runs this test in a VM");
        return;
    }
    let sw = Netns::new("kv");
    let h1 = Netns::new("kvh1");
    let h2 = Netns::new("kvh2");
    veth(&h1, "eth0", &sw, "eth1");
    veth(&h2, "eth0", &sw, "eth2");
    h1.host_setup("eth0", "10.1.1.2/24", Some("10.1.1.1"));
    h2.host_setup("eth0", "10.1.2.2/24", Some("10.1.2.1"));
    let table = KernelConfig::default().vrf_table_base;
    let (h1_ns, h2_ns) = (h1.name().to_string(), h2.name().to_string());
    let ip = |args: &[&str]| {
        let out = std::process::Command::new("ip").args(args).output().unwrap();
        assert!(out.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let json_of = |text: String| -> Vec<Value> { serde_json::from_str(&text).unwrap() };
    sw.enter(move || {
        let mut sai = Sai::new(KernelBackend::new(KernelConfig::default()).unwrap(), &[]).unwrap();
        let red = sai.create_virtual_router().expect("a second virtual router: a VRF");
        let mut rifs = Vec::new();
        for (name, address, subnet) in [("eth1", "10.1.1.1/24", "10.1.1.0/24"), ("eth2", "10.1.2.1/24", "10.1.2.0/24")]
        {
            let port = sai.create_port(&[PortAttr::Name(name.into()), PortAttr::AdminState(true)]).unwrap();
            let rif = sai
                .create_router_interface(&[
                    RouterInterfaceAttr::VirtualRouterId(red),
                    RouterInterfaceAttr::Type(RouterInterfaceType::Port(port)),
                ])
                .unwrap();
            // What switchd does for a routed port's address (the route to
            // its subnet is the shim's connected route).
            ip(&["addr", "add", address, "dev", name, "noprefixroute"]);
            let key = RouteEntryKey { virtual_router: red, destination: subnet.parse().unwrap() };
            sai.create_route_entry(key, &[RouteEntryAttr::NextHopId(Some(rif))]).unwrap();
            rifs.push(rif);
        }
        let hop = sai
            .create_next_hop(&[NextHopAttr::Ip("10.1.2.2".parse().unwrap()), NextHopAttr::RouterInterfaceId(rifs[1])])
            .unwrap();
        let routed = RouteEntryKey { virtual_router: red, destination: "10.77.0.0/16".parse().unwrap() };
        sai.create_route_entry(routed, &[RouteEntryAttr::NextHopId(Some(hop))]).unwrap();

        // ---- read back: the device, its members, its table
        let links = json_of(ip(&["-j", "-d", "link"]));
        let vrf_name = format!("nos-vrf{table}");
        let vrf = link(&links, &vrf_name);
        assert_eq!(vrf["linkinfo"]["info_kind"], "vrf", "{vrf}");
        assert_eq!(vrf["linkinfo"]["info_data"]["table"], table, "{vrf}");
        for port in ["eth1", "eth2"] {
            assert_eq!(link(&links, port)["master"], vrf_name.as_str(), "{port} in the VRF");
        }
        let routes = json_of(ip(&["-j", "route", "show", "table", &table.to_string(), "proto", PROTOCOL]));
        assert_eq!(
            destinations(&routes),
            ["10.1.1.0/24", "10.1.2.0/24", "10.77.0.0/16"].map(String::from).into(),
            "our routes in the VRF's table: {routes:#?}"
        );
        let nexthops = json_of(ip(&["-j", "nexthop"]));
        let nhid = routes.iter().find(|r| r["dst"] == "10.77.0.0/16").unwrap()["nhid"].as_u64().expect("by nhid");
        assert_eq!(gateways_of(&nexthops, nhid), ["10.1.2.2".to_string()].into());
        let main = json_of(ip(&["-j", "route", "show", "table", "main", "proto", PROTOCOL]));
        assert!(main.is_empty(), "nothing of the VRF's in the main table: {main:#?}");
        // The kernel routes h1 -> h2 in the VRF (and to the VRF's 10.77/16).
        let ping = |ns: &str, to: &str| {
            std::process::Command::new("ip")
                .args(["netns", "exec", ns, "ping", "-c", "2", "-i", "0.3", "-W", "3", to])
                .status()
                .unwrap()
                .success()
        };
        assert!(ping(&h1_ns, "10.1.2.2"), "h1 -> h2 routed in the VRF");
        assert!(ping(&h2_ns, "10.1.1.2"), "h2 -> h1 routed in the VRF");

        // ---- removal: routes, router interfaces, the VRF
        sai.remove_route_entry(routed).unwrap();
        sai.remove(hop).unwrap();
        for (rif, prefix) in rifs.iter().zip(["10.1.1.0/24", "10.1.2.0/24"]) {
            sai.remove_route_entry(RouteEntryKey { virtual_router: red, destination: prefix.parse().unwrap() })
                .unwrap();
            sai.remove(*rif).unwrap();
        }
        let links = json_of(ip(&["-j", "-d", "link"]));
        assert!(link(&links, "eth1")["master"].is_null(), "eth1 left the VRF");
        sai.remove(red).unwrap();
        let links = json_of(ip(&["-j", "-d", "link"]));
        assert!(!links.iter().any(|l| l["ifname"] == vrf_name.as_str()), "the VRF device is gone");
    });
}

/// `02:00:00:00:0a:01` as the shim's MAC.
fn parse_mac(text: &str) -> sai_shim::EthernetAddress {
    let bytes: Vec<u8> = text.split(':').map(|b| u8::from_str_radix(b, 16).expect("hex")).collect();
    sai_shim::EthernetAddress(bytes.try_into().expect("6 bytes"))
}

/// A kernel VTEP laid out as zebra lays out symmetric IRB, in `peer`: VRF
/// `vrf` (table `table`) with the L3VNI's bridge `br<vni>` (router MAC
/// `mac`) holding vxlan device `vx<vni>`, a host address `host` on a dummy
/// in the VRF, and the route back to our hosts' 10.1.1.0/24 through our
/// VTEP 10.255.0.1 with our router MAC `our_mac`.
fn irb_peer_vrf(peer: &Netns, vrf: &str, table: &str, vni: &str, mac: &str, host: &str, our_mac: &str) {
    let (bridge, vxlan, dummy) = (format!("br{vni}"), format!("vx{vni}"), format!("d{vni}"));
    peer.ip(&["link", "add", vrf, "type", "vrf", "table", table]);
    peer.ip(&["link", "set", vrf, "up"]);
    peer.ip(&["link", "add", &bridge, "address", mac, "type", "bridge"]);
    peer.ip(&["link", "set", &bridge, "master", vrf, "up"]);
    peer.ip(&["link", "add", &vxlan, "type", "vxlan", "id", vni, "local", "10.0.1.2", "dstport", "4789", "nolearning"]);
    peer.ip(&["link", "set", &vxlan, "master", &bridge, "up"]);
    peer.ip(&["link", "add", &dummy, "type", "dummy"]);
    peer.ip(&["link", "set", &dummy, "master", vrf, "up"]);
    peer.ip(&["addr", "add", host, "dev", &dummy]);
    peer.ip(&["route", "add", "vrf", vrf, "10.1.1.0/24", "via", "10.255.0.1", "dev", &bridge, "onlink"]);
    peer.ip(&["neigh", "replace", "10.255.0.1", "lladdr", our_mac, "dev", &bridge, "nud", "permanent"]);
    peer.exec(&["bridge", "fdb", "add", our_mac, "dev", &vxlan, "dst", "10.255.0.1", "self", "permanent"]);
}

/// Symmetric IRB through the kernel, as zebra builds it: two virtual
/// routers with an L3VNI each (100 and 200) are VRF devices whose L3VNI
/// SVI `nos-irb<VNI>` (a bridge with the router MAC, the vxlan device
/// `nos-vx<VNI>` in it) is enslaved to the VRF; a route through a
/// tunnel-encap next hop is a route in the VRF's table via the remote VTEP
/// `onlink` on that SVI, with a permanent neighbour (VTEP -> remote router
/// MAC) on the SVI and an FDB entry (router MAC -> VTEP) on the vxlan
/// device. Read back with `ip -j route show vrf`, `ip -j neigh`, `bridge -j
/// fdb` and `ip -j -d link`; hosts in two VRFs with the same subnet reach
/// each its own VRF's remote host across the L3VNI (a kernel VTEP with two
/// VRFs, as zebra lays them out) and not the other's. A tunnel next hop the
/// kernel refuses leaves no neighbour or FDB entry behind; the last next
/// hop to a VTEP takes its neighbour and FDB entry along; a restart
/// removes the L3VNIs' devices. Needs `CONFIG_NET_VRF` (else
/// `switchd_kernel_vm` runs it in a VM).
#[test]
fn an_l3vni_routes_each_vrf_across_the_overlay_as_zebra_lays_it_out() {
    use sai_shim::backend::kernel::{KernelBackend, KernelConfig};
    use sai_shim::*;

    if !require_root_and_tools("switchd_kernel", &["ip", "bridge", "ping"]) {
        return;
    }
    if !kernel_has_vrf() {
        eprintln!("NOTE switchd_kernel: no VRFs in this kernel; switchd_kernel_vm runs the L3VNI test in a VM");
        return;
    }
    const RED_MAC: &str = "02:00:00:00:0a:01";
    const BLUE_MAC: &str = "02:00:00:00:0a:02";
    const PEER_RED_MAC: &str = "02:00:00:00:0b:01";
    const PEER_BLUE_MAC: &str = "02:00:00:00:0b:02";
    let sw = Netns::new("kl3");
    let h1 = Netns::new("kl3h1");
    let h2 = Netns::new("kl3h2");
    let peer = Netns::new("kl3p");
    veth(&h1, "eth0", &sw, "eth1");
    veth(&h2, "eth0", &sw, "eth2");
    veth(&peer, "eth0", &sw, "eth3");
    // One subnet in both VRFs: only the VRFs keep them apart.
    h1.host_setup("eth0", "10.1.1.2/24", Some("10.1.1.1"));
    h2.host_setup("eth0", "10.1.1.2/24", Some("10.1.1.1"));
    peer.host_setup("eth0", "10.0.1.2/24", None);
    peer.ip(&["route", "add", "10.255.0.1/32", "via", "10.0.1.1"]);
    irb_peer_vrf(&peer, "red", "10", "100", PEER_RED_MAC, "10.2.2.1/32", RED_MAC);
    irb_peer_vrf(&peer, "blue", "20", "200", PEER_BLUE_MAC, "10.2.2.2/32", BLUE_MAC);
    let base = KernelConfig::default().vrf_table_base;
    let (red_vrf, blue_vrf) = (format!("nos-vrf{base}"), format!("nos-vrf{}", base + 1));
    let ip = |args: &[&str]| -> String {
        let out = std::process::Command::new("ip").args(args).output().unwrap();
        assert!(out.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let run_json = |program: &str, args: &[&str]| -> Vec<Value> {
        let out = std::process::Command::new(program).args(args).output().unwrap();
        assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap_or_default()
    };
    let ping = |ns: &Netns, to: &str| ns.ping(to, 2);
    let mac = parse_mac;
    sw.enter(|| {
        let mut sai = Sai::new(KernelBackend::new(KernelConfig::default()).unwrap(), &[]).unwrap();
        let default = sai.default_virtual_router();
        let red = sai.create_virtual_router_with(&[VirtualRouterAttr::SrcMacAddress(mac(RED_MAC))]).unwrap();
        let blue = sai.create_virtual_router_with(&[VirtualRouterAttr::SrcMacAddress(mac(BLUE_MAC))]).unwrap();
        // The underlay: eth3 routed in the default VRF, the VTEP on lo.
        ip(&["addr", "add", "10.255.0.1/32", "dev", "lo"]);
        let mut port_rif = |name: &str, vr: ObjectId| {
            let port = sai.create_port(&[PortAttr::Name(name.into()), PortAttr::AdminState(true)]).unwrap();
            sai.create_router_interface(&[
                RouterInterfaceAttr::VirtualRouterId(vr),
                RouterInterfaceAttr::Type(RouterInterfaceType::Port(port)),
            ])
            .unwrap()
        };
        let underlay = port_rif("eth3", default);
        let red_rif = port_rif("eth1", red);
        let blue_rif = port_rif("eth2", blue);
        ip(&["addr", "add", "10.0.1.1/24", "dev", "eth3"]);
        for (port, vr, rif) in [("eth1", red, red_rif), ("eth2", blue, blue_rif)] {
            ip(&["addr", "add", "10.1.1.1/24", "dev", port, "noprefixroute"]);
            let key = RouteEntryKey { virtual_router: vr, destination: "10.1.1.0/24".parse().unwrap() };
            sai.create_route_entry(key, &[RouteEntryAttr::NextHopId(Some(rif))]).unwrap();
        }
        let _ = underlay;
        let tunnel = sai.create_tunnel(&[TunnelAttr::EncapSrcIp("10.255.0.1".parse().unwrap())]).unwrap();
        let mut maps = Vec::new();
        let mut hops = Vec::new();
        for (vr, vni, peer_mac) in [(red, 100, PEER_RED_MAC), (blue, 200, PEER_BLUE_MAC)] {
            maps.push(
                sai.create_tunnel_map_entry(&[
                    TunnelMapEntryAttr::TunnelId(tunnel),
                    TunnelMapEntryAttr::VirtualRouterId(vr),
                    TunnelMapEntryAttr::Vni(vni),
                ])
                .unwrap(),
            );
            let hop = sai
                .create_next_hop(&[
                    NextHopAttr::Ip("10.0.1.2".parse().unwrap()),
                    NextHopAttr::TunnelId(tunnel),
                    NextHopAttr::TunnelVni(vni),
                    NextHopAttr::TunnelMac(mac(peer_mac)),
                ])
                .expect("a tunnel-encap next hop");
            let key = RouteEntryKey { virtual_router: vr, destination: "10.2.2.0/24".parse().unwrap() };
            sai.create_route_entry(key, &[RouteEntryAttr::NextHopId(Some(hop))]).unwrap();
            hops.push(hop);
        }

        // ---- read back: devices, routes, neighbours, FDB
        let links = run_json("ip", &["-j", "-d", "link"]);
        for (vni, vrf, our_mac) in [(100, &red_vrf, RED_MAC), (200, &blue_vrf, BLUE_MAC)] {
            let (svi_name, vxlan_name) = (format!("nos-irb{vni}"), format!("nos-vx{vni}"));
            let svi = link(&links, &svi_name);
            assert_eq!(svi["linkinfo"]["info_kind"], "bridge", "{svi}");
            assert_eq!(svi["master"], vrf.as_str(), "the L3VNI's SVI in its VRF: {svi}");
            assert_eq!(svi["address"], our_mac, "the router MAC on the SVI: {svi}");
            let vxlan = link(&links, &vxlan_name);
            assert_eq!(vxlan["master"], svi_name.as_str(), "{vxlan}");
            let data = &vxlan["linkinfo"]["info_data"];
            assert_eq!(data["id"], vni, "{vxlan}");
            assert_eq!(data["local"], "10.255.0.1", "{vxlan}");
            assert_eq!(data["learning"], false, "{vxlan}");
        }
        for (vni, vrf, peer_mac) in [(100, &red_vrf, PEER_RED_MAC), (200, &blue_vrf, PEER_BLUE_MAC)] {
            let svi = format!("nos-irb{vni}");
            let routes = run_json("ip", &["-j", "route", "show", "vrf", vrf, "proto", PROTOCOL]);
            let route = routes.iter().find(|r| r["dst"] == "10.2.2.0/24").unwrap_or_else(|| panic!("{routes:#?}"));
            assert_eq!(route["gateway"], "10.0.1.2", "{route}");
            assert_eq!(route["dev"], svi.as_str(), "{route}");
            assert!(route["flags"].as_array().is_some_and(|f| f.iter().any(|f| f == "onlink")), "{route}");
            assert!(route["nhid"].is_u64(), "through a nexthop object: {route}");
            let neighbours = run_json("ip", &["-j", "neigh", "show", "dev", &svi]);
            assert!(
                neighbours.iter().any(|n| n["dst"] == "10.0.1.2"
                    && n["lladdr"] == peer_mac
                    && n["state"].as_array().is_some_and(|s| s.iter().any(|s| s == "PERMANENT"))),
                "the VTEP -> remote router MAC on {svi}: {neighbours:#?}"
            );
            let fdb = run_json("bridge", &["-j", "fdb", "show", "dev", &format!("nos-vx{vni}")]);
            assert!(
                fdb.iter().any(|e| e["mac"] == peer_mac && e["dst"] == "10.0.1.2"),
                "the remote router MAC behind its VTEP on nos-vx{vni}: {fdb:#?}"
            );
        }
        let main = run_json("ip", &["-j", "route", "show", "table", "main", "proto", PROTOCOL]);
        assert!(main.iter().all(|r| r["dst"] != "10.2.2.0/24"), "no VRF route in the main table: {main:#?}");

        // ---- traffic: each VRF reaches its own remote host, not the other's
        assert!(ping(&h1, "10.2.2.1"), "red host -> red remote host across L3VNI 100");
        assert!(ping(&h2, "10.2.2.2"), "blue host -> blue remote host across L3VNI 200");
        assert!(!ping(&h1, "10.2.2.2"), "red reaches nothing of blue's");
        assert!(!ping(&h2, "10.2.2.1"), "blue reaches nothing of red's");
        let stats = run_json("ip", &["-j", "-s", "link", "show", "nos-vx100"]);
        let sent = stats[0]["stats64"]["tx"]["packets"].as_u64().unwrap_or(0);
        assert!(sent >= 2, "the red pings left through the L3VNI's vxlan device: {stats:#?}");

        // ---- a refused tunnel next hop leaves nothing behind: the nexthop
        // id it would take is a foreign nexthop's
        let nexthops = run_json("ip", &["-j", "nexthop"]);
        let next_id = nexthops.iter().filter_map(|n| n["id"].as_u64()).max().unwrap() + 1;
        ip(&["nexthop", "add", "id", &next_id.to_string(), "via", "10.0.1.9", "dev", "eth3", "onlink"]);
        let refused = sai.create_next_hop(&[
            NextHopAttr::Ip("10.0.1.3".parse().unwrap()),
            NextHopAttr::TunnelId(tunnel),
            NextHopAttr::TunnelVni(100),
            NextHopAttr::TunnelMac(mac("02:00:00:00:0c:01")),
        ]);
        assert!(matches!(refused, Err(SaiError::AlreadyExists(_))), "{refused:?}");
        let neighbours = run_json("ip", &["-j", "neigh", "show", "dev", "nos-irb100"]);
        assert!(neighbours.iter().all(|n| n["dst"] != "10.0.1.3"), "the neighbour was undone: {neighbours:#?}");
        let fdb = run_json("bridge", &["-j", "fdb", "show", "dev", "nos-vx100"]);
        assert!(fdb.iter().all(|e| e["mac"] != "02:00:00:00:0c:01"), "the FDB entry was undone: {fdb:#?}");
        ip(&["nexthop", "del", "id", &next_id.to_string()]);

        // ---- blue's route and next hop go: its neighbour and FDB entry too
        sai.remove_route_entry(RouteEntryKey { virtual_router: blue, destination: "10.2.2.0/24".parse().unwrap() })
            .unwrap();
        sai.remove(hops[1]).unwrap();
        let neighbours = run_json("ip", &["-j", "neigh", "show", "dev", "nos-irb200"]);
        assert!(neighbours.iter().all(|n| n["dst"] != "10.0.1.2"), "{neighbours:#?}");
        let fdb = run_json("bridge", &["-j", "fdb", "show", "dev", "nos-vx200"]);
        assert!(fdb.iter().all(|e| e["mac"] != PEER_BLUE_MAC), "{fdb:#?}");
        sai.remove(maps[1]).unwrap();
        let links = run_json("ip", &["-j", "link"]);
        assert!(!links.iter().any(|l| l["ifname"] == "nos-irb200" || l["ifname"] == "nos-vx200"), "L3VNI 200 went");

        // ---- a restart (the daemon killed: nothing removed) reconciles
        drop(sai);
        let _restarted = Sai::new(KernelBackend::new(KernelConfig::default()).unwrap(), &[]).unwrap();
        let links = run_json("ip", &["-j", "link"]);
        let ours: Vec<&Value> = links
            .iter()
            .filter(|l| l["ifname"].as_str().is_some_and(|n| n.starts_with("nos-irb") || n.starts_with("nos-vx")))
            .collect();
        assert!(ours.is_empty(), "a restart removes the L3VNIs of the last run: {ours:#?}");
    });
}

/// ARP suppression as zebra sets it up: the VNI's vxlan device has
/// `neigh_suppress on`, and a remote host's MAC+IP binding is a neighbour
/// entry on the VLAN's SVI. A local host's ARP request for the remote host
/// is answered by the bridge (the remote VTEP here has no such host at
/// all, so the answer can only be ours) and no ARP frame goes into the
/// overlay (captured on the uplink). Runs in both bridge modes.
#[test]
fn an_arp_request_for_a_suppressed_binding_is_answered_by_the_bridge() {
    use sai_shim::backend::kernel::{KernelBackend, KernelConfig};
    use sai_shim::*;

    if !require_root_and_tools("switchd_kernel", &["ip", "bridge", "ping", "tcpdump"]) {
        return;
    }
    const REMOTE_MAC: &str = "02:00:00:00:0d:03";
    let sw = Netns::new("kas");
    let h1 = Netns::new("kash1");
    let peer = Netns::new("kasp");
    veth(&h1, "eth0", &sw, "eth1");
    veth(&peer, "eth0", &sw, "eth3");
    h1.host_setup("eth0", "192.168.10.1/24", None);
    peer.host_setup("eth0", "10.0.1.2/24", None);
    let mac = parse_mac;
    let (mut sai, vlan) = sw.enter(|| {
        let mut sai = Sai::new(KernelBackend::new(KernelConfig::default()).unwrap(), &[]).unwrap();
        let default = sai.default_virtual_router();
        let uplink = sai.create_port(&[PortAttr::Name("eth3".into()), PortAttr::AdminState(true)]).unwrap();
        sai.create_router_interface(&[
            RouterInterfaceAttr::VirtualRouterId(default),
            RouterInterfaceAttr::Type(RouterInterfaceType::Port(uplink)),
        ])
        .unwrap();
        let vlan = sai.create_vlan(&[VlanAttr::VlanId(10)]).unwrap();
        let port = sai
            .create_port(&[PortAttr::Name("eth1".into()), PortAttr::AdminState(true), PortAttr::PortVlanId(10)])
            .unwrap();
        let bridge_port = sai.create_bridge_port(&[BridgePortAttr::Type(BridgePortType::Port(port))]).unwrap();
        sai.create_vlan_member(&[
            VlanMemberAttr::VlanId(vlan),
            VlanMemberAttr::BridgePortId(bridge_port),
            VlanMemberAttr::TaggingMode(TaggingMode::Untagged),
        ])
        .unwrap();
        sai.create_router_interface(&[
            RouterInterfaceAttr::VirtualRouterId(default),
            RouterInterfaceAttr::Type(RouterInterfaceType::Vlan(vlan)),
        ])
        .unwrap();
        let tunnel = sai.create_tunnel(&[TunnelAttr::EncapSrcIp("10.0.1.1".parse().unwrap())]).unwrap();
        sai.create_tunnel_map_entry(&[
            TunnelMapEntryAttr::TunnelId(tunnel),
            TunnelMapEntryAttr::VlanId(vlan),
            TunnelMapEntryAttr::Vni(10010),
        ])
        .unwrap();
        let endpoint = sai
            .create_tunnel_endpoint(&[
                TunnelEndpointAttr::TunnelId(tunnel),
                TunnelEndpointAttr::RemoteIp("10.0.1.2".parse().unwrap()),
            ])
            .unwrap();
        let remote = sai.create_bridge_port(&[BridgePortAttr::Type(BridgePortType::Tunnel(endpoint))]).unwrap();
        sai.create_vlan_member(&[
            VlanMemberAttr::VlanId(vlan),
            VlanMemberAttr::BridgePortId(remote),
            VlanMemberAttr::TaggingMode(TaggingMode::Untagged),
        ])
        .unwrap();
        sai.create_fdb_entry(
            FdbEntryKey { vlan, mac: mac(REMOTE_MAC) },
            &[
                FdbEntryAttr::Type(FdbEntryType::Static),
                FdbEntryAttr::BridgePortId(remote),
                FdbEntryAttr::AllowMacMove(true),
            ],
        )
        .unwrap();
        sai.set_suppression_entry(SuppressionEntryKey { vlan, ip: "192.168.10.3".parse().unwrap() }, mac(REMOTE_MAC))
            .expect("the kernel backend suppresses ARP");
        (sai, vlan)
    });
    sw.ip(&["addr", "add", "10.0.1.1/24", "dev", "eth3"]);
    // The SVI: the VLAN's bridge (per-VLAN) or its 802.1Q device (VLAN-aware).
    let svi = "nos-vlan10";
    // ---- read back: the flag on the vxlan port, the binding on the SVI
    let ports = json(&sw, &["bridge", "-j", "-d", "link", "show", "dev", "nos-vx10010"]);
    assert_eq!(ports[0]["neigh_suppress"], true, "neigh_suppress on the VNI's vxlan port: {ports:#?}");
    let neighbours = json(&sw, &["ip", "-j", "neigh", "show", "dev", svi]);
    assert!(
        neighbours.iter().any(|n| n["dst"] == "192.168.10.3" && n["lladdr"] == REMOTE_MAC),
        "the binding on {svi}: {neighbours:#?}"
    );
    // ---- a local host's ARP is answered locally, nothing crosses the uplink
    let capture = std::env::temp_dir().join(format!("{}.pcap", sw.name()));
    let capture_path = capture.to_string_lossy().into_owned();
    let mut tcpdump = sw.spawn(&["tcpdump", "-i", "eth3", "-n", "-U", "-w", &capture_path, "udp", "port", "4789"]);
    std::thread::sleep(Duration::from_millis(800));
    // The ping itself goes into the overlay (unicast to the remote MAC);
    // only the answer to its ARP request matters.
    let _ = h1.exec_status(&["ping", "-c", "1", "-W", "1", "192.168.10.3"]);
    let learned = json(&h1, &["ip", "-j", "neigh", "show", "192.168.10.3", "dev", "eth0"]);
    std::thread::sleep(Duration::from_millis(500));
    tcpdump.stop(Duration::from_secs(2));
    assert!(
        learned.iter().any(|n| n["lladdr"] == REMOTE_MAC),
        "h1 learned the remote host's MAC from the bridge's answer: {learned:#?}"
    );
    let decoded = std::process::Command::new("tcpdump").args(["-n", "-r", &capture_path]).output().unwrap();
    let text = String::from_utf8_lossy(&decoded.stdout).into_owned();
    let _ = std::fs::remove_file(&capture);
    assert!(text.contains("ICMP echo request"), "the capture saw the overlay (the ping): {text}");
    assert!(!text.contains("ARP"), "no ARP frame crossed the uplink: {text}");
    eprintln!("arp suppression in bridge mode {}", sai.backend().bridge_mode());
    sai.remove_suppression_entry(SuppressionEntryKey { vlan, ip: "192.168.10.3".parse().unwrap() }).unwrap();
    let neighbours = json(&sw, &["ip", "-j", "neigh", "show", "dev", svi]);
    assert!(neighbours.iter().all(|n| n["dst"] != "192.168.10.3"), "the binding went: {neighbours:#?}");
}

/// Forwarding that cannot start after the config was applied (here the
/// loopback's IPv6 address, refused because the namespace has IPv6 off on
/// `lo`) ends the daemon with nothing of ours left in the kernel: neither
/// the routed port's address it had put in place, nor the VLAN's bridge,
/// nor our routes; a foreign address stays.
#[test]
fn a_start_that_fails_after_apply_leaves_nothing_of_ours() {
    if !require_root_and_tools("switchd_kernel", &["ip"]) {
        return;
    }
    let sw = Netns::new("kfs");
    let peer = Netns::new("kfsp");
    veth(&peer, "eth0", &sw, "eth3");
    veth(&peer, "eth1", &sw, "eth1");
    sw.sysctl("net.ipv6.conf.lo.disable_ipv6", "1");
    sw.ip(&["addr", "add", "10.9.9.9/32", "dev", "lo"]);
    let mut switchd = Switchd::spawn(
        &sw,
        "
name: kfs
backend: kernel
loopback: [10.255.0.1/32, 'fd00:255::1/128']
ports:
  - { name: eth1, mode: access, vlan: 10 }
  - { name: eth3, mode: routed, addresses: [10.0.1.1/24] }
vlans:
  - { id: 10 }
routes:
  - { prefix: 10.99.0.0/16, next_hops: [10.0.1.2] }
",
    );
    let out =
        switchd.process.wait_timeout(Duration::from_secs(20)).expect("switchd exits when forwarding cannot start");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "switchd failed: {stderr}");
    assert!(stderr.contains("fd00:255::1"), "the error names the refused address: {stderr}");
    let addresses = json(&sw, &["ip", "-j", "addr"]);
    let all: Vec<String> = addresses
        .iter()
        .flat_map(|link| link["addr_info"].as_array().cloned().unwrap_or_default())
        .filter_map(|a| a["local"].as_str().map(String::from))
        .collect();
    assert!(!all.iter().any(|a| a == "10.0.1.1" || a == "10.255.0.1"), "our addresses went: {all:?}");
    assert!(all.iter().any(|a| a == "10.9.9.9"), "the foreign address stays: {all:?}");
    let links = json(&sw, &["ip", "-j", "link"]);
    assert!(
        !links.iter().any(|l| l["ifname"].as_str().is_some_and(|n| n.starts_with("nos-"))),
        "no device of ours: {links:#?}"
    );
    assert!(our_routes(&sw).is_empty(), "no route of ours: {:#?}", our_routes(&sw));
}
