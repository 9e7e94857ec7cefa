//! Session protection against FRR's bgpd: TCP MD5 signatures (RFC 2385) and
//! GTSM (RFC 5082), our `bgp-speaker` and bgpd in namespaces over veths.

use std::time::{Duration, Instant};

use fabric_tests::bgp_speaker::Speaker;
use fabric_tests::frr::{Afi, Frr, FrrConfig, FrrNeighbor, frr_available};
use fabric_tests::{Netns, veth};

const WAIT: Duration = Duration::from_secs(30);

fn ours_yaml(router_id: &str, neighbors: &[String]) -> String {
    let mut y = format!(
        "asn: 65002\nrouter_id: {router_id}\ntimers: {{ hold_time: 9, connect_retry: 1 }}\nnetworks: [10.22.0.0/24]\nneighbors:\n"
    );
    for n in neighbors {
        y.push_str(&format!("  - {n}\n"));
    }
    y
}

/// FRR at .1, ours at .2 on one link, IPv4 and IPv6 sessions, each side with
/// its own password; returns once the outcome is known.
fn md5_pair(tag: &str, frr_password: &str, our_password: &str) -> (Netns, Netns, Frr, Speaker) {
    let frr_ns = Netns::new(&format!("{tag}f"));
    let ours_ns = Netns::new(&format!("{tag}o"));
    veth(&frr_ns, "eth1", &ours_ns, "eth1");
    frr_ns.ip(&["addr", "add", "10.13.0.1/30", "dev", "eth1"]);
    frr_ns.ip(&["addr", "add", "fd00:13::1/64", "dev", "eth1", "nodad"]);
    ours_ns.ip(&["addr", "add", "10.13.0.2/30", "dev", "eth1"]);
    ours_ns.ip(&["addr", "add", "fd00:13::2/64", "dev", "eth1", "nodad"]);
    let mut v4 = FrrNeighbor::new("10.13.0.2", 65002);
    v4.families = vec![Afi::Ipv4];
    v4.extra.push(format!("neighbor 10.13.0.2 password {frr_password}"));
    let mut v6 = FrrNeighbor::new("fd00:13::2", 65002);
    v6.families = vec![Afi::Ipv6];
    v6.extra.push(format!("neighbor fd00:13::2 password {frr_password}"));
    let frr = Frr::start(&frr_ns, &FrrConfig::new(65001, "10.13.0.1").neighbor(v4).neighbor(v6).render());
    let ours = Speaker::start(
        &ours_ns,
        &ours_yaml(
            "10.13.0.2",
            &[
                format!(
                    "{{ address: 10.13.0.1, remote_as: 65001, families: [ipv4-unicast], password: {our_password} }}"
                ),
                format!(
                    "{{ address: \"fd00:13::1\", remote_as: 65001, families: [ipv6-unicast], password: {our_password} }}"
                ),
            ],
        ),
    );
    (frr_ns, ours_ns, frr, ours)
}

#[test]
fn bgp_md5_matching_password_comes_up_wrong_one_does_not() {
    if !frr_available("bgp_md5_matching_password_comes_up_wrong_one_does_not") {
        return;
    }
    {
        let (_f, _o, frr, ours) = md5_pair("md5ok", "Fabric-Key-1", "Fabric-Key-1");
        frr.wait_established("10.13.0.2", WAIT);
        frr.wait_established("fd00:13::2", WAIT);
        ours.wait_established("10.13.0.1", WAIT);
        ours.wait_established("fd00:13::1", WAIT);
        frr.wait_route("10.22.0.0/24", WAIT, |_| true);
        assert!(!ours.log().contains("Fabric-Key-1"), "password in our log:\n{}", ours.log());
    }
    let (_f, _o, frr, ours) = md5_pair("md5bad", "Fabric-Key-1", "Other-Key-2");
    // Our connect attempts time out (FRR's kernel drops the mis-signed SYNs)
    // and the log says why; FRR's SYNs to us are dropped the same way.
    let log = ours.wait("connect timeout blamed on MD5", WAIT, |_| ours.log().contains("TCP MD5 is configured"));
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        for peer in ["10.13.0.1", "fd00:13::1"] {
            let n = ours.neighbor(peer).unwrap();
            assert_ne!(n["state"], "Established", "{n} {log}");
        }
        for peer in ["10.13.0.2", "fd00:13::2"] {
            assert_ne!(frr.neighbor_state(peer).as_deref(), Some("Established"));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(!ours.log().contains("Other-Key-2"), "password in our log:\n{}", ours.log());
}

/// FRR -- router -- ours: FRR is two hops away and sends with TTL 255
/// (`ebgp-multihop 255`), so its segments reach us with TTL 254. With
/// `ttl_security_hops: 1` our kernel drops them (RFC 5082: at most one
/// hop); with 2 the session comes up, so it is the hop count that decides.
fn gtsm_session(tag: &str, hops: u8) -> (Vec<Netns>, Frr, Speaker) {
    let frr_ns = Netns::new(&format!("{tag}f"));
    let router = Netns::new(&format!("{tag}r"));
    let ours_ns = Netns::new(&format!("{tag}o"));
    veth(&frr_ns, "eth1", &router, "eth1");
    veth(&router, "eth2", &ours_ns, "eth1");
    frr_ns.ip(&["addr", "add", "10.14.1.1/24", "dev", "eth1"]);
    frr_ns.ip(&["route", "add", "10.14.2.0/24", "via", "10.14.1.2"]);
    router.ip(&["addr", "add", "10.14.1.2/24", "dev", "eth1"]);
    router.ip(&["addr", "add", "10.14.2.1/24", "dev", "eth2"]);
    router.sysctl("net.ipv4.ip_forward", "1");
    ours_ns.ip(&["addr", "add", "10.14.2.2/24", "dev", "eth1"]);
    ours_ns.ip(&["route", "add", "10.14.1.0/24", "via", "10.14.2.1"]);
    let mut n = FrrNeighbor::new("10.14.2.2", 65002);
    n.families = vec![Afi::Ipv4];
    n.extra.push("neighbor 10.14.2.2 ebgp-multihop 255".into());
    let frr = Frr::start(&frr_ns, &FrrConfig::new(65001, "10.14.1.1").neighbor(n).render());
    let ours = Speaker::start(
        &ours_ns,
        &ours_yaml(
            "10.14.2.2",
            &[format!(
                "{{ address: 10.14.1.1, remote_as: 65001, families: [ipv4-unicast], ttl_security_hops: {hops} }}"
            )],
        ),
    );
    (vec![frr_ns, router, ours_ns], frr, ours)
}

#[test]
fn bgp_gtsm_drops_a_peer_two_hops_away() {
    if !frr_available("bgp_gtsm_drops_a_peer_two_hops_away") {
        return;
    }
    {
        let (_ns, frr, ours) = gtsm_session("gtsm2", 2);
        ours.wait_established("10.14.1.1", WAIT);
        frr.wait_established("10.14.2.2", WAIT);
    }
    let (_ns, frr, ours) = gtsm_session("gtsm1", 1);
    // Give both sides several connect attempts (connect retry 1 s each).
    let deadline = Instant::now() + Duration::from_secs(8);
    while Instant::now() < deadline {
        let n = ours.neighbor("10.14.1.1").unwrap();
        assert_ne!(n["state"], "Established", "GTSM let a peer two hops away in: {n}");
        assert_ne!(frr.neighbor_state("10.14.2.2").as_deref(), Some("Established"));
        std::thread::sleep(Duration::from_millis(200));
    }
}
