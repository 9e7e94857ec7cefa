//! RFC 8950 (extended next hop encoding) with FRR: IPv4 unicast routes over
//! a session between IPv6 addresses, on a link with no IPv4 address at all,
//! as BGP unnumbered fabrics run. FRR is configured
//! `neighbor X capability extended-nexthop`; ours `extended_next_hop: true`.
//! Checked: both OPENs carry the capability (negotiated on our side, and
//! FRR's `show bgp neighbors` lists it), FRR's IPv4 route reaches our FIB
//! through FRR's IPv6 address, ours reaches FRR with our IPv6 address as
//! its next hop (MP_REACH_NLRI, AFI 1, 16-octet next hop), and a withdraw
//! removes it.

use std::time::Duration;

use fabric_tests::bgp_speaker::Speaker;
use fabric_tests::frr::{Afi, Frr, FrrConfig, FrrNeighbor, frr_available};
use fabric_tests::{Netns, veth};

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn bgp_frr_ipv4_routes_over_an_ipv6_only_link_with_ipv6_next_hops() {
    if !frr_available("bgp_frr_ipv4_routes_over_an_ipv6_only_link_with_ipv6_next_hops") {
        return;
    }
    let frr_ns = Netns::new("enhf");
    let ours_ns = Netns::new("enho");
    veth(&frr_ns, "eth1", &ours_ns, "eth1");
    frr_ns.ip(&["addr", "add", "fd00:31::1/64", "dev", "eth1", "nodad"]);
    ours_ns.ip(&["addr", "add", "fd00:31::2/64", "dev", "eth1", "nodad"]);

    let mut n = FrrNeighbor::new("fd00:31::2", 65002);
    n.families = vec![Afi::Ipv4, Afi::Ipv6];
    n.extra.push("neighbor fd00:31::2 capability extended-nexthop".into());
    let frr = Frr::start(
        &frr_ns,
        &FrrConfig::new(65001, "10.255.0.1").neighbor(n).network("10.77.0.0/24").network("fd00:77::/48").render(),
    );
    let ours = Speaker::start(
        &ours_ns,
        r#"
asn: 65002
router_id: 10.255.0.2
timers: { hold_time: 9, connect_retry: 1 }
networks: [10.88.0.0/24, "fd00:88::/48"]
neighbors:
  - { address: "fd00:31::1", remote_as: 65001, families: [ipv4-unicast, ipv6-unicast], extended_next_hop: true }
"#,
    );
    frr.wait_established("fd00:31::2", WAIT);
    ours.wait_established("fd00:31::1", WAIT);
    let neighbor = ours.neighbor("fd00:31::1").unwrap();
    assert_eq!(neighbor["negotiated"]["extended_next_hop"], true, "{neighbor}");
    let theirs = frr.neighbor("fd00:31::2");
    let caps = theirs["neighborCapabilities"].to_string();
    assert!(caps.contains("extendedNexthop"), "FRR sees no extended next hop capability: {caps}");

    // FRR's IPv4 route, through FRR's IPv6 address.
    ours.wait("FRR's IPv4 route via its IPv6 address", WAIT, |_| {
        ours.fib("10.77.0.0/24").is_some_and(|hops| hops == ["fd00:31::1"])
    });
    let route = ours.route("10.77.0.0/24").unwrap();
    assert_eq!(route["paths"][0]["next_hop"], "fd00:31::1", "{route}");

    // Ours, with our IPv6 address as its next hop.
    let route = frr.wait_route("10.88.0.0/24", WAIT, |r| r["paths"][0]["nexthops"][0]["ip"] == "fd00:31::2");
    assert_eq!(route["paths"][0]["nexthops"][0]["afi"], "ipv6", "{route}");
    assert_eq!(route["paths"][0]["aspath"]["string"], "65002", "{route}");

    // A withdraw over MP_UNREACH_NLRI removes it.
    ours.control(&["del 10.88.0.0/24"]);
    frr.wait_no_route("10.88.0.0/24", WAIT);
    assert!(frr.route("fd00:88::/48").is_some(), "the IPv6 route stays");
}
