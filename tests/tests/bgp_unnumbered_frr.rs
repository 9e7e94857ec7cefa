//! BGP unnumbered with FRR: our speaker (`bgp-speaker`) and FRR (zebra and
//! bgpd) on a link with no address but the kernel's IPv6 link-local ones.
//! Ours: `{ interface: eth1, remote_as: 65001 }`; FRR: `neighbor eth1
//! interface remote-as external`, which has zebra send router
//! advertisements on eth1. Each side learns the other's link-local address
//! from its advertisements (ours answers FRR's and sends its own), one
//! session between the two link-local addresses carries IPv4 and IPv6
//! unicast, IPv4 with IPv6 next hops (RFC 8950, which FRR enables by itself
//! on interface neighbours). Checked: the session is Established on both
//! sides, FRR's IPv4 and IPv6 routes are in our FIB through FRR's
//! link-local address, ours are in FRR's table through ours, and zebra
//! installs our IPv4 route in FRR's kernel via our link-local address
//! (`ip route`: `via inet6 fe80::...`).

use std::time::Duration;

use fabric_tests::bgp_speaker::Speaker;
use fabric_tests::frr::{Frr, frr_available};
use fabric_tests::{Netns, poll_until, veth};

const WAIT: Duration = Duration::from_secs(40);

const FRR_BGPD: &str = "frr defaults datacenter
hostname frr
log stdout debugging
debug bgp neighbor-events
router bgp 65001
 bgp router-id 10.255.0.1
 no bgp ebgp-requires-policy
 no bgp default ipv4-unicast
 no bgp network import-check
 neighbor eth1 interface remote-as external
 neighbor eth1 timers 1 3
 neighbor eth1 timers connect 1
 address-family ipv4 unicast
  network 10.77.0.0/24
  neighbor eth1 activate
 exit-address-family
 address-family ipv6 unicast
  network fd00:77::/48
  neighbor eth1 activate
 exit-address-family
exit
";

const OURS: &str = r#"
asn: 65002
router_id: 10.255.0.2
timers: { hold_time: 9, connect_retry: 1 }
networks: [10.88.0.0/24, "fd00:88::/48"]
neighbors:
  - { interface: eth1, remote_as: 65001 }
"#;

/// The link-local address of `ifname` in `ns`, once no longer tentative.
fn link_local(ns: &Netns, ifname: &str) -> String {
    poll_until(Duration::from_secs(10), Duration::from_millis(100), || {
        let out = ns.ip(&["-6", "-o", "addr", "show", "dev", ifname, "scope", "link"]);
        if out.contains("tentative") {
            return None;
        }
        out.split_whitespace().skip_while(|w| *w != "inet6").nth(1)?.split('/').next().map(str::to_string)
    })
    .unwrap_or_else(|| panic!("{ifname} in {} has no link-local address", ns.name()))
}

#[test]
fn bgp_unnumbered_with_frr_over_link_local_carries_ipv4_and_ipv6() {
    if !frr_available("bgp_unnumbered_with_frr_over_link_local_carries_ipv4_and_ipv6") {
        return;
    }
    let frr_ns = Netns::new("unf");
    let ours_ns = Netns::new("uno");
    veth(&frr_ns, "eth1", &ours_ns, "eth1");
    let (frr_ll, ours_ll) = (link_local(&frr_ns, "eth1"), link_local(&ours_ns, "eth1"));

    let frr = Frr::start_with_zebra(&frr_ns, FRR_BGPD);
    let ours = Speaker::start(&ours_ns, OURS);

    ours.wait_established(&frr_ll, WAIT);
    let deadline = std::time::Instant::now() + WAIT;
    while frr.neighbor_state("eth1").as_deref() != Some("Established") {
        assert!(std::time::Instant::now() < deadline, "FRR: eth1 not Established: {:#}", frr.neighbor("eth1"));
        std::thread::sleep(Duration::from_millis(200));
    }
    let neighbor = ours.neighbor(&frr_ll).unwrap();
    assert_eq!(neighbor["negotiated"]["extended_next_hop"], true, "{neighbor}");

    // FRR's routes through FRR's link-local address, both families.
    for prefix in ["10.77.0.0/24", "fd00:77::/48"] {
        ours.wait(&format!("{prefix} via FRR's link-local address"), WAIT, |_| {
            ours.fib(prefix).is_some_and(|hops| hops == [frr_ll.clone()])
        });
    }
    // Ours in FRR's table, through our link-local address.
    for prefix in ["10.88.0.0/24", "fd00:88::/48"] {
        let route = frr.wait_route(prefix, WAIT, |r| r["paths"][0]["nexthops"].to_string().contains(&ours_ll));
        assert_eq!(route["paths"][0]["aspath"]["string"], "65002", "{route}");
    }
    // zebra put our IPv4 route in FRR's kernel through our IPv6 link-local
    // address (RFC 8950 forwarding: IPv4 via an IPv6 next hop).
    let kernel = poll_until(WAIT, Duration::from_millis(200), || {
        let out = frr_ns.ip(&["route", "show", "10.88.0.0/24"]);
        out.contains(&format!("via inet6 {ours_ll}")).then_some(out)
    });
    assert!(kernel.is_some(), "FRR's kernel: {}", frr_ns.ip(&["route", "show", "10.88.0.0/24"]));
}
