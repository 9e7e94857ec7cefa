//! An FRR node's tenant VRFs (symmetric IRB) on a kernel with or without
//! l3mdev VRF devices.
//!
//! A topology's FRR node builds its VRFs as FRR's bgp_evpn topotests and
//! containerlab hosts do: `ip link add red type vrf table 1001`, the
//! L3VNI's bridge and the SVIs enslaved to it (`ip link set br4001 master
//! red`). A kernel without `CONFIG_NET_VRF` refuses the VRF device; there
//! zebra runs FRR's other VRF backend (`zebra --vrfwnetns`, as FRR's
//! bgp_evpn_rt5 topotest does): each VRF is a network namespace, and what
//! the exec lines enslave to a VRF is moved into that namespace instead
//! ([`netns_script`]), with whatever is later enslaved to it or
//! addressed on it. The VXLAN devices keep their socket in the node's
//! namespace, where the underlay is.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::{Command, Stdio};

/// Whether the kernel makes VRF devices: one made and removed in `namespace`.
pub fn kernel_has_vrf_devices(namespace: &str) -> bool {
    let ip = |args: &[&str]| {
        Command::new("ip")
            .args(["-n", namespace])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let made = ip(&["link", "add", "labs-vrf-probe", "type", "vrf", "table", "4242"]);
    if made {
        ip(&["link", "del", "labs-vrf-probe"]);
    }
    made
}

/// Whether exec lines make VRF devices (`ip link add NAME type vrf ...`).
pub fn makes_vrf_devices(lines: &[String]) -> bool {
    lines.iter().any(|l| {
        matches!(l.split_whitespace().collect::<Vec<_>>().as_slice(), ["ip", "link", "add", _, "type", "vrf", ..])
    })
}

/// The network namespace standing for VRF `vrf` of the node in `node_ns`.
pub fn vrf_namespace(node_ns: &str, vrf: &str) -> String {
    format!("{node_ns}.{vrf}")
}

/// The VRFs an FRR config declares (`vrf NAME` blocks, zebra's: `vni`).
pub fn config_vrfs(config: &str) -> Vec<String> {
    config.lines().filter_map(|l| l.strip_prefix("vrf ")).map(|n| n.trim().to_owned()).collect()
}

/// Splits an integrated FRR config into zebra's part (the `vrf NAME` ..
/// `exit-vrf` blocks: the L3VNIs) and bgpd's (the rest), as vtysh would
/// hand them out.
pub fn split_config(config: &str) -> (String, String) {
    let (mut zebra, mut bgpd) = (String::new(), String::new());
    let mut in_vrf = false;
    for line in config.lines() {
        if line.starts_with("vrf ") {
            in_vrf = true;
        }
        let to = if in_vrf { &mut zebra } else { &mut bgpd };
        to.push_str(line);
        to.push('\n');
        if in_vrf && line.trim() == "exit-vrf" {
            in_vrf = false;
        }
    }
    (zebra, bgpd)
}

/// The exec lines `lines` (run in `node_ns`, with VRF devices) as a shell
/// script run in the root namespace that lays them out with VRFs as
/// namespaces (see the module comment).
pub fn netns_script(node_ns: &str, lines: &[String]) -> String {
    let mut script = String::new();
    let mut vrfs: Vec<String> = Vec::new();
    // Where each device moved to (absent: still in the node's namespace).
    let mut moved: BTreeMap<String, String> = BTreeMap::new();
    // A device enslaved to a VRF is made in the VRF's namespace: a bridge
    // cannot change namespace once made.
    let mut made_in: BTreeMap<String, String> = BTreeMap::new();
    let vrf_names: Vec<&str> = lines
        .iter()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["ip", "link", "add", vrf, "type", "vrf", ..] => Some(*vrf),
            _ => None,
        })
        .collect();
    for line in lines {
        if let ["ip", "link", "set", dev, "master", master] = line.split_whitespace().collect::<Vec<_>>().as_slice()
            && vrf_names.contains(master)
        {
            made_in.insert((*dev).to_owned(), vrf_namespace(node_ns, master));
        }
    }
    for line in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        let ns_of = |dev: &str| moved.get(dev).cloned().unwrap_or_else(|| node_ns.to_owned());
        match words.as_slice() {
            ["ip", "link", "add", vrf, "type", "vrf", ..] => {
                let ns = vrf_namespace(node_ns, vrf);
                let _ = writeln!(script, "ip netns add {ns}\nip -n {ns} link set lo up");
                let _ = writeln!(script, "ip netns exec {ns} sysctl -qw net.ipv4.ip_forward=1");
                vrfs.push((*vrf).to_owned());
            }
            ["ip", "link", "set", vrf, "up"] if vrfs.iter().any(|v| v == vrf) => {}
            ["ip", "link", "add", dev, ..] if made_in.contains_key(*dev) => {
                let ns = made_in[*dev].clone();
                let _ = writeln!(script, "ip -n {ns} {}", words[1..].join(" "));
                moved.insert((*dev).to_owned(), ns);
            }
            ["ip", "link", "set", dev, "master", master] => {
                let is_vrf = vrfs.iter().any(|v| v == master);
                let target = if is_vrf { vrf_namespace(node_ns, master) } else { ns_of(master) };
                let from = ns_of(dev);
                if from != target {
                    let _ = writeln!(script, "ip -n {from} link set {dev} netns {target}");
                    moved.insert((*dev).to_owned(), target.clone());
                }
                if !is_vrf {
                    let _ = writeln!(script, "ip -n {target} link set {dev} master {master}");
                }
            }
            ["ip", rest @ ..] => {
                // The device the line is about: `dev X`, or `link set X`.
                let dev = rest.windows(2).find(|w| w[0] == "dev").map(|w| w[1]).or(match rest {
                    ["link", "set", dev, ..] => Some(*dev),
                    _ => None,
                });
                let ns = dev.map_or_else(|| node_ns.to_owned(), ns_of);
                let _ = writeln!(script, "ip -n {ns} {}", rest.join(" "));
            }
            _ => {
                let _ = writeln!(script, "ip netns exec {node_ns} {line}");
            }
        }
    }
    script
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vrf_members_move_into_the_vrf_namespace_with_what_follows_them() {
        let lines: Vec<String> = [
            "ip addr add 10.255.0.6/32 dev lo",
            "ip link add red type vrf table 1001",
            "ip link set red up",
            "ip link add br10010 type bridge",
            "ip link set br10010 master red",
            "ip addr add 192.168.10.1/24 dev br10010",
            "ip link add vx10010 type vxlan id 10010 local 10.255.0.6 dstport 4789 nolearning",
            "ip link set vx10010 master br10010",
            "ip link set eth3 master br10010",
            "ip link set eth3 up",
            "sysctl -qw net.ipv4.ip_forward=1",
        ]
        .map(String::from)
        .to_vec();
        let script = netns_script("n", &lines);
        assert_eq!(
            script,
            "ip -n n addr add 10.255.0.6/32 dev lo\n\
             ip netns add n.red\nip -n n.red link set lo up\n\
             ip netns exec n.red sysctl -qw net.ipv4.ip_forward=1\n\
             ip -n n.red link add br10010 type bridge\n\
             ip -n n.red addr add 192.168.10.1/24 dev br10010\n\
             ip -n n link add vx10010 type vxlan id 10010 local 10.255.0.6 dstport 4789 nolearning\n\
             ip -n n link set vx10010 netns n.red\n\
             ip -n n.red link set vx10010 master br10010\n\
             ip -n n link set eth3 netns n.red\n\
             ip -n n.red link set eth3 master br10010\n\
             ip -n n.red link set eth3 up\n\
             ip netns exec n sysctl -qw net.ipv4.ip_forward=1\n"
        );
    }

    #[test]
    fn zebra_gets_the_vrf_blocks_and_bgpd_the_rest() {
        let conf = "hostname l\n!\nvrf red\n vni 4001\nexit-vrf\nrouter bgp 1\nexit\n";
        let (zebra, bgpd) = split_config(conf);
        assert_eq!(zebra, "vrf red\n vni 4001\nexit-vrf\n");
        assert_eq!(bgpd, "hostname l\n!\nrouter bgp 1\nexit\n");
        assert_eq!(config_vrfs(conf), ["red"]);
    }
}
