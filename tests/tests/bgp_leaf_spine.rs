//! A three-stage leaf-spine of our speakers (`bgp-speaker`), one per
//! namespace, eBGP over veth links: two spines in different ASes, two
//! leaves. Each leaf installs its remote leaf's loopbacks (IPv4 and IPv6)
//! as an ECMP route through both spines (as-path multipath relax); when a
//! spine dies the group shrinks to the other one, and grows back.

use std::time::Duration;

use fabric_tests::bgp_speaker::Speaker;
use fabric_tests::{Netns, require_root_and_tools, veth};

const WAIT: Duration = Duration::from_secs(30);

fn speaker_yaml(asn: u32, router_id: &str, networks: &[&str], neighbors: &[(&str, u32)]) -> String {
    let mut y = format!(
        "asn: {asn}\nrouter_id: {router_id}\ntimers: {{ hold_time: 3, connect_retry: 1 }}\nipv6_next_hop: \"fd00:{:x}::1\"\nnetworks: [{}]\nneighbors:\n",
        asn,
        networks.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
    );
    for (addr, remote_as) in neighbors {
        y.push_str(&format!("  - {{ address: {addr}, remote_as: {remote_as} }}\n"));
    }
    y
}

#[test]
fn bgp_leaf_spine_ecmp_through_both_spines() {
    if !require_root_and_tools("bgp_leaf_spine_ecmp_through_both_spines", &["ip"]) {
        return;
    }
    let names = ["s1", "s2", "l1", "l2"];
    let ns: Vec<Netns> = names.iter().map(|n| Netns::new(&format!("bls{n}"))).collect();
    // Links leaf i - spine j: 10.31.<i><j>.1 on the leaf, .2 on the spine.
    for (li, leaf) in [2usize, 3].iter().enumerate() {
        for (sj, spine) in [0usize, 1].iter().enumerate() {
            let (lif, sif) = (format!("eth{}", sj + 1), format!("eth{}", li + 1));
            veth(&ns[*leaf], &lif, &ns[*spine], &sif);
            ns[*leaf].ip(&["addr", "add", &format!("10.31.{}{}.1/30", li + 1, sj + 1), "dev", &lif]);
            ns[*spine].ip(&["addr", "add", &format!("10.31.{}{}.2/30", li + 1, sj + 1), "dev", &sif]);
        }
    }
    let spine = |j: usize| {
        let n: Vec<(String, u32)> = (1..=2).map(|i| (format!("10.31.{i}{j}.1"), 65100 + i as u32)).collect();
        let n: Vec<(&str, u32)> = n.iter().map(|(a, s)| (a.as_str(), *s)).collect();
        speaker_yaml(65000 + j as u32, &format!("10.0.0.{j}"), &[], &n)
    };
    let leaf = |i: usize| {
        let n: Vec<(String, u32)> = (1..=2).map(|j| (format!("10.31.{i}{j}.2"), 65000 + j as u32)).collect();
        let n: Vec<(&str, u32)> = n.iter().map(|(a, s)| (a.as_str(), *s)).collect();
        let lo4 = format!("10.255.0.{i}/32");
        let lo6 = format!("fd00:ff::{i}/128");
        speaker_yaml(65100 + i as u32, &format!("10.0.1.{i}"), &[&lo4, &lo6], &n)
    };
    let mut s1 = Some(Speaker::start(&ns[0], &spine(1)));
    let _s2 = Speaker::start(&ns[1], &spine(2));
    let l1 = Speaker::start(&ns[2], &leaf(1));
    let l2 = Speaker::start(&ns[3], &leaf(2));

    let both = |l: &Speaker, prefix: &str, hops: &[&str]| {
        l.fib(prefix).is_some_and(|mut h| {
            h.sort();
            h == hops
        })
    };
    l1.wait("ECMP to leaf 2's loopback", WAIT, |_| both(&l1, "10.255.0.2/32", &["10.31.11.2", "10.31.12.2"]));
    l2.wait("ECMP to leaf 1's loopback", WAIT, |_| both(&l2, "10.255.0.1/32", &["10.31.21.2", "10.31.22.2"]));
    l1.wait("IPv6 ECMP", WAIT, |_| both(&l1, "fd00:ff::2/128", &["fd00:fde9::1", "fd00:fdea::1"]));
    let route = l1.route("10.255.0.2/32").unwrap();
    let paths = route["paths"].as_array().unwrap();
    assert_eq!(paths.iter().filter(|p| p["multipath"] == true).count(), 2, "{route}");
    let mut as_paths: Vec<&str> = paths.iter().filter_map(|p| p["as_path"].as_str()).collect();
    as_paths.sort();
    assert_eq!(as_paths, vec!["65001 65102", "65002 65102"]);

    // Spine 1 dies: leaf 1 falls back to spine 2 alone.
    s1.take().unwrap().stop();
    l1.wait("group shrinks to spine 2", WAIT, |_| both(&l1, "10.255.0.2/32", &["10.31.12.2"]));
    let s1 = Speaker::start(&ns[0], &spine(1));
    l1.wait("group grows back", WAIT, |_| both(&l1, "10.255.0.2/32", &["10.31.11.2", "10.31.12.2"]));
    drop(s1);
}
