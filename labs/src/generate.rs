//! Lab generators: a topology file and every node's config, written side by
//! side (`DIR/NAME.clab.yml`, `DIR/NAME/NODE.yaml`).
//!
//! All of them build one shape, a two-tier Clos of `switchd`s with a BGP
//! underlay (RFC 7938: eBGP on every link, spines sharing one AS, each leaf
//! its own, ECMP over the spines) and hosts behind the leaves:
//!
//! - `ai-rail`: S servers × R rails; server NIC r (`eth{r+1}`) goes to the
//!   rail-r leaf of its group (`servers_per_leaf` servers share a leaf), so
//!   rail traffic stays one hop within a group and crosses the spines
//!   between groups.
//! - `fattree --radix K`: the two-level fat-tree of K-port switches: K/2
//!   spines, K leaves with K/2 uplinks and K/2 hosts each.
//! - `fattree --radix K --ib` (`ib-fattree`): the same shape in the IB-like
//!   plane instead: every switch port in `mode: ib`, no BGP, the subnet
//!   manager embedded in `spine1`, and K*K/2 HCAs (`fabric-host ib`).
//! - `incast`: one switch, hosts sending to one receiver.
//! - `evpn-leaf-spine`: 2 spines, 4 leaves, two hosts per leaf in two VRFs
//!   of two VNIs each; the overlay is BGP-EVPN over the same eBGP sessions,
//!   with symmetric IRB on the `switchd` leaves.
//!
//! Addressing (readable and collision-free up to 32768 links and 4096
//! leaves): link k is `10.0.{k/128}.{2(k%128)}/31` (leaf even, spine odd),
//! switch n's loopback `10.255.{n/256}.{n%256}/32`, leaf L's host subnet
//! `172.{16+L/256}.{L%256}.0/24` (gateway .1, hosts from .10).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use crate::topology::{Body, FRR_CONFIG, Link, Node, NodeDefaults, ROLE_LABEL, SWITCHD_CONFIG, Topology};

/// The node image the Dockerfile in `labs/image` builds.
pub const SWITCHD_IMAGE: &str = "ghcr.io/fabric-nos/switchd:latest";
pub const HOST_IMAGE: &str = "ghcr.io/fabric-nos/host:latest";
pub const FRR_IMAGE: &str = "quay.io/frrouting/frr:10.2.1";
/// The spines' shared AS.
pub const SPINE_ASN: u32 = 65000;
/// Leaf L's AS is this plus L (4-byte private range, RFC 6996).
pub const LEAF_ASN_BASE: u32 = 4_200_000_000;
/// The lossless class in every switch of `ai-rail` and `incast`: RoCE's
/// preset (DSCP 26 -> priority 3 and 48 -> 4 lossless with PFC, DCQCN's
/// ECN on queues 3 and 4), LLDP every 5 s so that `labs check lossless`
/// finds each link's far end soon after deploy. The PFC response time is
/// 20 ms, not a NIC's microsecond: the lab's hosts and switches are
/// processes that react to a pause when they next run, and the headroom
/// must hold what they send meanwhile.
pub const LOSSLESS_QOS: &str = "lldp: { enabled: true, tx_interval_secs: 5 }
qos:
  preset: roce
  pfc: { priorities: [3, 4], response-ns: 20000000 }
";
/// The shared buffer of a lossless switch: 1 MiB per port, at least 8 MiB.
const LOSSLESS_POOL_PER_PORT: usize = 1 << 20;
const LOSSLESS_POOL_MIN: usize = 8 << 20;
/// Every switch port of a lossless lab: jumbo MTU, emulated 100 Mb/s (what
/// a 2-core machine forwards through many switches), 5 m of cable.
const LOSSLESS_PORT: &str = ", mtu: 9100, speed: 100M, cable-length: 5";
/// The links' MTU in a lossless lab (both veth ends).
pub const LOSSLESS_MTU: u32 = 9100;
/// What a generated rail fabric's switches reserve: lab-sized tables and
/// rings (128 + 32 slots of a 1500-byte port: 320 KiB, against 10 MiB by
/// default), so that a hundred switches fit one machine. See switchd's
/// `config/resources.rs`.
pub const LAB_RESOURCES: &str = "profile: small\nport_rings: { rx_kib: 256, tx_kib: 64 }\n";
/// The same with the lossless class's jumbo frames (MTU 9100): 256 slots to
/// receive a port (fewer lose frames of an all-to-all in the kernel ring,
/// before the traffic manager) and 32 to send, of 512 bytes each (the
/// control plane's frames fit; data frames of 1500 or 9000 bytes went
/// through the socket's queue beside the ring with 1 KiB slots already,
/// which holds memory only while frames wait). 144 KiB a port, where 1 KiB
/// slots took 288 KiB and slots of the MTU (16 KiB) 5 MiB for as many; a
/// 28-port spine holds 4 MiB less (`docs/benchmarks.md`).
pub const LAB_RESOURCES_JUMBO: &str = "profile: small\nport_rings: { rx_kib: 128, tx_kib: 16, slot_bytes: 512 }\n";
/// The first host address in a leaf's subnet.
const FIRST_HOST: usize = 10;

/// A lab ready to be written: the topology and its node configs.
#[derive(Debug, Clone)]
pub struct Generated {
    pub topology: Topology,
    /// Paths relative to the output folder, with their contents.
    pub files: BTreeMap<String, String>,
}

impl Generated {
    /// Writes `DIR/NAME.clab.yml` and the configs; returns the topology's path.
    pub fn write(&self, dir: &Path) -> std::io::Result<PathBuf> {
        for (relative, text) in &self.files {
            let path = dir.join(relative);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(path, text)?;
        }
        let path = dir.join(format!("{}.clab.yml", self.topology.name));
        std::fs::create_dir_all(dir)?;
        let header =
            "# Generated by `labs generate`; deploy with `labs deploy -t FILE` or `containerlab deploy -t FILE`.\n";
        std::fs::write(&path, format!("{header}{}", self.topology.to_yaml()))?;
        Ok(path)
    }
}

/// A generator's parameters refused before anything is written.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct GenerateError(String);

/// The rail-optimised fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AiRail {
    pub servers: usize,
    pub rails: usize,
    pub spines: usize,
    pub servers_per_leaf: usize,
}

impl AiRail {
    pub fn generate(&self, name: &str) -> Result<Generated, GenerateError> {
        let AiRail { servers, rails, spines, servers_per_leaf } = *self;
        if servers == 0 || rails == 0 || servers_per_leaf == 0 {
            return Err(GenerateError("servers, rails and servers-per-leaf must be at least 1".into()));
        }
        if servers_per_leaf > 240 {
            return Err(GenerateError("servers-per-leaf: at most 240 (hosts are .10-.249 of a /24)".into()));
        }
        let groups = servers.div_ceil(servers_per_leaf);
        if groups * rails > 4096 {
            return Err(GenerateError(format!("{groups} groups x {rails} rails is more than 4096 leaves")));
        }
        if groups > 1 && spines == 0 {
            return Err(GenerateError("spines: servers in more than one group need at least one spine".into()));
        }
        let mut clos = Clos::new(name, spines);
        clos.lossless = true;
        clos.resources = LAB_RESOURCES_JUMBO;
        // Leaf (group, rail) is leaf number group * rails + rail.
        for group in 0..groups {
            for rail in 0..rails {
                clos.add_leaf(&format!("leaf-g{}-r{}", group + 1, rail + 1));
            }
        }
        for server in 0..servers {
            let group = server / servers_per_leaf;
            let host = format!("server{}", server + 1);
            let mut exec = Vec::new();
            for rail in 0..rails {
                let leaf = group * rails + rail;
                let nic = format!("eth{}", rail + 1);
                let address = clos.attach_host(leaf, &host, &nic, server % servers_per_leaf);
                exec.push(format!("ip addr add {address}/24 dev {nic}"));
                // Rail r of the other groups is reached through this NIC's
                // leaf, so rail traffic never crosses to another rail.
                let gateway = host_gateway(leaf);
                for other in (0..groups).filter(|&g| g != group) {
                    let subnet = host_subnet(other * rails + rail);
                    exec.push(format!("ip route add {subnet}/24 via {gateway} dev {nic}"));
                }
            }
            clos.add_host(&host, exec);
        }
        Ok(clos.finish())
    }
}

/// The two-level fat-tree of radix-K switches.
pub fn fattree(name: &str, radix: usize) -> Result<Generated, GenerateError> {
    if radix < 2 || !radix.is_multiple_of(2) {
        return Err(GenerateError(format!("radix {radix}: an even number of ports, at least 2")));
    }
    let half = radix / 2;
    AiRail { servers: radix * half, rails: 1, spines: half, servers_per_leaf: half }.generate(name)
}

/// Data VLs on every port of the IB-like labs.
pub const IB_DATA_VLS: u8 = 2;
/// The SM's sweep interval in the IB-like labs: a trap from a switch whose
/// port changed starts a sweep at once; this bounds how late a change no
/// trap reported is found.
pub const IB_SWEEP_MS: u64 = 500;
/// Echoes per target and their spacing in an HCA's ibping rounds (`labs
/// check`).
pub const IB_PING_COUNT: u32 = 3;
pub const IB_PING_INTERVAL_MS: u64 = 20;

/// Switch n's node GUID in the IB-like labs (spines 1..=S, then leaves).
fn ib_switch_guid(n: usize) -> u64 {
    0x0002_c903_0000_0000 | (n as u64) << 8
}

/// HCA h's node GUID (its port GUID is one more, as `fabric-host` makes it).
fn ib_hca_guid(h: usize) -> u64 {
    0x0002_c904_0000_0000 | (h as u64) << 8
}

/// The two-level fat-tree of radix-K switches in the IB-like plane: K/2
/// spines, K leaves with K/2 uplinks (`eth1..ethK/2`, one to each spine)
/// and K/2 HCAs (`ethK/2+1..ethK`). The SM in `spine1` (priority 15,
/// `ftree` routing with `minhop` where the fabric is no longer a fat tree,
/// as after a link failure) discovers it, gives LIDs, programs the LFTs and
/// takes the ports Active; the HCAs answer it and ibping each other.
pub fn ib_fattree(name: &str, radix: usize) -> Result<Generated, GenerateError> {
    if radix < 2 || !radix.is_multiple_of(2) {
        return Err(GenerateError(format!("radix {radix}: an even number of ports, at least 2")));
    }
    if radix > 64 {
        return Err(GenerateError(format!("radix {radix}: at most 64 (2048 HCAs)")));
    }
    let half = radix / 2;
    let spines: Vec<String> = (1..=half).map(|s| format!("spine{s}")).collect();
    let leaves: Vec<String> = (1..=radix).map(|l| format!("leaf{l}")).collect();
    let mut nodes = BTreeMap::new();
    let mut links = Vec::new();
    let mut files = BTreeMap::new();
    let port_line = |port: usize| format!("  - {{ name: eth{port}, mode: ib, data_vls: {IB_DATA_VLS} }}\n");
    let switch_yaml = |switch: &str, n: usize, ports: usize| {
        let mut yaml = format!("name: {switch}\n{LAB_RESOURCES}ports:\n");
        (1..=ports).for_each(|port| yaml.push_str(&port_line(port)));
        let _ = writeln!(yaml, "ib:\n  guid: {:#018x}", ib_switch_guid(n));
        if n == 1 {
            let _ =
                writeln!(yaml, "  sm: {{ priority: 15, engine: [ftree, minhop], sweep_interval_ms: {IB_SWEEP_MS} }}");
        }
        yaml
    };
    let mut switch_node = |switch: &str, yaml: String| {
        files.insert(format!("{name}/{switch}.yaml"), yaml);
        let node = Node {
            kind: "linux".into(),
            image: Some(SWITCHD_IMAGE.into()),
            labels: [(ROLE_LABEL.to_owned(), "switchd".to_owned())].into(),
            binds: vec![format!("{name}/{switch}.yaml:{SWITCHD_CONFIG}:ro")],
            ..Node::default()
        };
        nodes.insert(switch.to_owned(), node);
    };
    for (s, spine) in spines.iter().enumerate() {
        switch_node(spine, switch_yaml(spine, s + 1, radix));
    }
    for (l, leaf) in leaves.iter().enumerate() {
        switch_node(leaf, switch_yaml(leaf, half + l + 1, radix));
    }
    // Uplinks first, so `eth1..ethK/2` of every leaf read top-down.
    for (l, leaf) in leaves.iter().enumerate() {
        for (s, spine) in spines.iter().enumerate() {
            links
                .push(Link { endpoints: [format!("{leaf}:eth{}", s + 1), format!("{spine}:eth{}", l + 1)], mtu: None });
        }
    }
    for (l, leaf) in leaves.iter().enumerate() {
        for slot in 0..half {
            let h = l * half + slot + 1;
            let hca = format!("hca{h}");
            links
                .push(Link { endpoints: [format!("{leaf}:eth{}", half + slot + 1), format!("{hca}:eth1")], mtu: None });
            let cmd = format!(
                "ib --iface eth1 --guid {:#018x} --name {hca} --data-vls {IB_DATA_VLS} --count {IB_PING_COUNT} --interval-ms {IB_PING_INTERVAL_MS}",
                ib_hca_guid(h)
            );
            let node = Node {
                kind: "linux".into(),
                image: Some(SWITCHD_IMAGE.into()),
                labels: [(ROLE_LABEL.to_owned(), "hca".to_owned())].into(),
                entrypoint: Some("fabric-host".into()),
                cmd: Some(cmd),
                ..Node::default()
            };
            nodes.insert(hca, node);
        }
    }
    let topology =
        Topology { name: name.to_owned(), topology: Body { kinds: BTreeMap::new(), defaults: None, nodes, links } };
    Ok(Generated { topology, files })
}

/// One switch, `hosts` hosts on it; the last one is the incast receiver.
pub fn incast(name: &str, hosts: usize) -> Result<Generated, GenerateError> {
    if hosts < 2 {
        return Err(GenerateError("incast needs at least two hosts (senders and a receiver)".into()));
    }
    let mut clos = Clos::new(name, 0);
    clos.lossless = true;
    clos.add_leaf("sw1");
    for i in 0..hosts {
        let host = format!("h{}", i + 1);
        clos.attach_host(0, &host, "eth1", i);
        let exec = vec![format!("ip addr add {}/24 dev eth1", clos.host_address(0, i))];
        clos.add_host(&host, exec);
    }
    Ok(clos.finish())
}

/// The tenants of `evpn-leaf-spine` (symmetric IRB, RFC 9135): each VRF
/// with its L3VNI and two VNIs with their VLANs (the hosts' subnets are
/// `192.168.VLAN.0/24`, the anycast gateway `.1`).
pub const EVPN_VRFS: [EvpnVrf; 2] = [
    EvpnVrf { name: "red", l3vni: 4001, vnis: [(10010, 10), (10020, 20)] },
    EvpnVrf { name: "blue", l3vni: 4002, vnis: [(10030, 30), (10040, 40)] },
];

/// The anycast gateway's MAC: the same SVI MAC on every leaf, so a host
/// keeps its gateway's ARP entry wherever it moves.
pub const ANYCAST_GATEWAY_MAC: &str = "02:00:5e:00:01:01";

/// One tenant VRF of `evpn-leaf-spine`.
#[derive(Debug, Clone, Copy)]
pub struct EvpnVrf {
    pub name: &'static str,
    pub l3vni: u32,
    /// (VNI, VLAN)
    pub vnis: [(u32, u16); 2],
}

/// The (VRF, VNI, VLAN)s with hosts on leaf `leaf`: both VNIs of VRF red on
/// every leaf (bridged across the fabric, and routed between them on one
/// leaf and across leaves), and one VNI of VRF blue, the first on odd
/// leaves and the second on even ones (so blue's VNIs meet only routed
/// across the fabric).
pub fn evpn_leaf_vnis(leaf: usize) -> Vec<(EvpnVrf, u32, u16)> {
    let [red, blue] = EVPN_VRFS;
    let (blue_vni, blue_vlan) = blue.vnis[leaf % 2];
    vec![(red, red.vnis[0].0, red.vnis[0].1), (red, red.vnis[1].0, red.vnis[1].1), (blue, blue_vni, blue_vlan)]
}

/// 2 spines, `leaves` leaves (the last one run by FRR with a kernel VTEP if
/// `frr_leaf`), on each leaf a host in each VNI of VRF red and one in a VNI
/// of VRF blue (see [`evpn_leaf_vnis`]). The overlay is BGP-EVPN (RFC 8365):
/// each leaf advertises its VNIs (type 3: the flood lists) and its hosts'
/// MACs (type 2) over eBGP to the spines, which carry L2VPN EVPN with the
/// next hop unchanged and hold no VNI themselves; no leaf has a static
/// flood list. The `switchd` leaves do symmetric IRB (RFC 9135): each VNI's
/// SVI is the anycast gateway (same address and MAC on every leaf) in its
/// VRF, each VRF has an L3VNI and a router MAC per leaf, hosts' MAC+IP
/// routes carry both VNIs, so a leaf routes into a VNI it does not have
/// over the L3VNI to the leaf that has the host. The FRR leaf does the
/// same with the kernel's devices as FRR lays them out (see
/// [`Clos::frr_leaf_exec`]); every host routes through the anycast gateway.
pub fn evpn_leaf_spine(name: &str, leaves: usize, frr_leaf: bool) -> Result<Generated, GenerateError> {
    if leaves < 2 {
        return Err(GenerateError("evpn-leaf-spine needs at least two leaves".into()));
    }
    if leaves > 240 {
        return Err(GenerateError("evpn-leaf-spine: at most 240 leaves (hosts are .10-.249 of a /24)".into()));
    }
    let mut clos = Clos::new(name, 2);
    clos.evpn = true;
    for i in 0..leaves {
        clos.add_leaf(&format!("leaf{}", i + 1));
    }
    if frr_leaf {
        clos.frr_leaves.insert(leaves - 1);
    }
    for leaf in 0..leaves {
        let vtep = clos.loopback(clos.leaf_switch(leaf));
        let mut vxlan = format!("vxlan:\n  source: {vtep}\n  vnis:\n");
        let mut vlans = String::from("vlans:\n");
        let mut evpn = format!("  evpn:\n    vtep_ip: {vtep}\n    vnis:\n");
        let mut vrfs = String::from("    vrfs:\n");
        for (vrf, vni, vlan) in evpn_leaf_vnis(leaf) {
            let host = format!("h{}-vni{vni}", leaf + 1);
            let port = clos.attach_host_port(leaf, &host, "eth1");
            clos.leaf_ports[leaf].push(format!("  - {{ name: {port}, mode: access, vlan: {vlan} }}\n"));
            clos.leaf_vnis[leaf].push(vni);
            let address = Ipv4Addr::new(192, 168, vlan as u8, (leaf + FIRST_HOST) as u8);
            let gateway = Ipv4Addr::new(192, 168, vlan as u8, 1);
            let exec =
                vec![format!("ip addr add {address}/24 dev eth1"), format!("ip route add default via {gateway}")];
            clos.add_host(&host, exec);
            let (name, l3vni) = (vrf.name, vrf.l3vni);
            let _ = writeln!(vxlan, "    - {{ vni: {vni}, vlan: {vlan} }}");
            let _ = writeln!(
                vlans,
                "  - {{ id: {vlan}, name: vni{vni}, addresses: [{gateway}/24], vrf: {name}, mac: \"{ANYCAST_GATEWAY_MAC}\" }}"
            );
            let _ = writeln!(evpn, "      - {{ vni: {vni}, vrf: {name} }}");
            let router_mac = evpn_router_mac(name, leaf);
            if !vrfs.contains(&format!("name: {name},")) {
                let _ = writeln!(vrfs, "      - {{ name: {name}, l3vni: {l3vni}, router_mac: \"{router_mac}\" }}");
            }
        }
        clos.leaf_extra[leaf] = format!("{vxlan}{vlans}");
        clos.leaf_bgp_extra[leaf] = format!("{evpn}{vrfs}");
        clos.leaf_has_hosts_vlan[leaf] = false;
    }
    Ok(clos.finish())
}

/// One router MAC per leaf and VRF (RFC 9135 section 8.1).
fn evpn_router_mac(vrf: &str, leaf: usize) -> String {
    let v = EVPN_VRFS.iter().position(|r| r.name == vrf).expect("one of EVPN_VRFS");
    format!("02:cc:00:00:{:02x}:{:02x}", v + 1, leaf + 1)
}

/// The kernel routing table of an `evpn-leaf-spine` VRF's device.
fn evpn_vrf_table(vrf: &str) -> usize {
    1001 + EVPN_VRFS.iter().position(|r| r.name == vrf).expect("one of EVPN_VRFS")
}

fn host_subnet(leaf: usize) -> Ipv4Addr {
    Ipv4Addr::new(172, 16 + (leaf / 256) as u8, (leaf % 256) as u8, 0)
}

fn host_gateway(leaf: usize) -> Ipv4Addr {
    let [a, b, c, _] = host_subnet(leaf).octets();
    Ipv4Addr::new(a, b, c, 1)
}

/// The builder behind every generator.
struct Clos {
    name: String,
    spines: usize,
    leaf_names: Vec<String>,
    /// Per leaf: its host-facing port lines (YAML list items).
    leaf_ports: Vec<Vec<String>>,
    /// Per leaf: extra top-level YAML (VXLAN).
    leaf_extra: Vec<String>,
    /// Per leaf: extra YAML inside its `bgp:` section (EVPN).
    leaf_bgp_extra: Vec<String>,
    /// Whether the BGP sessions carry L2VPN EVPN besides IPv4 unicast.
    evpn: bool,
    /// Whether every switch carries the lossless class (see [`LOSSLESS_QOS`]).
    lossless: bool,
    /// Per leaf: whether its host ports are in VLAN 10 with the subnet's
    /// gateway on the SVI (the default), or set up by the generator.
    leaf_has_hosts_vlan: Vec<bool>,
    /// With EVPN: the VNIs of each leaf's hosts, in port order.
    leaf_vnis: Vec<Vec<u32>>,
    /// Per leaf: the next free front-panel port number.
    next_port: Vec<usize>,
    frr_leaves: std::collections::BTreeSet<usize>,
    nodes: BTreeMap<String, Node>,
    links: Vec<Link>,
    /// Top-level YAML every switchd config gets after its name (table and
    /// ring sizes); empty for the defaults.
    resources: &'static str,
}

impl Clos {
    fn new(name: &str, spines: usize) -> Clos {
        Clos {
            name: name.to_owned(),
            spines,
            leaf_names: Vec::new(),
            leaf_ports: Vec::new(),
            leaf_extra: Vec::new(),
            leaf_bgp_extra: Vec::new(),
            evpn: false,
            lossless: false,
            leaf_has_hosts_vlan: Vec::new(),
            leaf_vnis: Vec::new(),
            next_port: Vec::new(),
            frr_leaves: Default::default(),
            nodes: BTreeMap::new(),
            links: Vec::new(),
            resources: "",
        }
    }

    fn add_leaf(&mut self, name: &str) {
        self.leaf_names.push(name.to_owned());
        self.leaf_ports.push(Vec::new());
        self.leaf_extra.push(String::new());
        self.leaf_bgp_extra.push(String::new());
        self.leaf_has_hosts_vlan.push(true);
        self.leaf_vnis.push(Vec::new());
        // eth1..ethS are the uplinks.
        self.next_port.push(self.spines + 1);
    }

    /// A link's MTU: jumbo frames with the lossless class (RoCE's 4 KiB
    /// payloads), the kernel's default otherwise.
    fn link_mtu(&self) -> Option<u32> {
        self.lossless.then_some(LOSSLESS_MTU)
    }

    /// What a switch port line adds with the lossless class: its MTU, the
    /// line rate the traffic manager emulates and the cable length (both
    /// sized into the PFC headroom).
    fn port_extra(&self) -> &'static str {
        if self.lossless { LOSSLESS_PORT } else { "" }
    }

    /// The `lldp:` and `qos:` sections of a switch with `ports` ports: the
    /// shared pool grows with the ports, whose lossless PGs each reserve
    /// headroom for a 20 ms response at 100 Mb/s.
    fn qos_section(&self, ports: usize) -> String {
        if !self.lossless {
            return String::new();
        }
        let pool = (ports * LOSSLESS_POOL_PER_PORT).max(LOSSLESS_POOL_MIN);
        format!("{LOSSLESS_QOS}  pool: {{ size-bytes: {pool}, cell-bytes: 256 }}\n")
    }

    /// Switch numbers: spines 1..=S, then the leaves.
    fn leaf_switch(&self, leaf: usize) -> usize {
        self.spines + leaf + 1
    }

    fn loopback(&self, switch: usize) -> Ipv4Addr {
        Ipv4Addr::new(10, 255, (switch / 256) as u8, (switch % 256) as u8)
    }

    fn host_address(&self, leaf: usize, slot: usize) -> Ipv4Addr {
        let [a, b, c, _] = host_subnet(leaf).octets();
        Ipv4Addr::new(a, b, c, (FIRST_HOST + slot) as u8)
    }

    /// Cables `host:nic` to the leaf's next free port; returns that port.
    fn attach_host_port(&mut self, leaf: usize, host: &str, nic: &str) -> String {
        let port = format!("eth{}", self.next_port[leaf]);
        self.next_port[leaf] += 1;
        let endpoints = [format!("{}:{port}", self.leaf_names[leaf]), format!("{host}:{nic}")];
        self.links.push(Link { endpoints, mtu: self.link_mtu() });
        port
    }

    /// A host in the leaf's host VLAN; returns its address.
    fn attach_host(&mut self, leaf: usize, host: &str, nic: &str, slot: usize) -> Ipv4Addr {
        let port = self.attach_host_port(leaf, host, nic);
        let extra = self.port_extra();
        self.leaf_ports[leaf].push(format!("  - {{ name: {port}, mode: access, vlan: 10{extra} }}\n"));
        self.host_address(leaf, slot)
    }

    fn add_host(&mut self, name: &str, exec: Vec<String>) {
        let node = Node {
            kind: "linux".into(),
            image: Some(HOST_IMAGE.into()),
            labels: [(ROLE_LABEL.to_owned(), "host".to_owned())].into(),
            exec,
            ..Node::default()
        };
        self.nodes.insert(name.to_owned(), node);
    }

    fn switch_node(&self, name: &str, frr: bool) -> Node {
        let (role, image, target, file) = if frr {
            ("frr", FRR_IMAGE, FRR_CONFIG, format!("{}/{name}.frr.conf", self.name))
        } else {
            ("switchd", SWITCHD_IMAGE, SWITCHD_CONFIG, format!("{}/{name}.yaml", self.name))
        };
        Node {
            kind: "linux".into(),
            image: Some(image.into()),
            labels: [(ROLE_LABEL.to_owned(), role.to_owned())].into(),
            binds: vec![format!("{file}:{target}:ro")],
            ..Node::default()
        }
    }

    fn finish(mut self) -> Generated {
        let mut files = BTreeMap::new();
        let leaves = self.leaf_names.len();
        // Link (leaf, spine) is number leaf * S + spine.
        let p2p = |leaf: usize, spine: usize, spine_side: bool| {
            let k = leaf * self.spines + spine;
            Ipv4Addr::new(10, 0, (k / 128) as u8, (2 * (k % 128) + usize::from(spine_side)) as u8)
        };
        // With EVPN every session carries both families (RFC 8365 section
        // 5: the overlay's routes ride the underlay's eBGP sessions).
        let families = if self.evpn { ", families: [ipv4-unicast, l2vpn-evpn]" } else { "" };
        let mut fabric_links = Vec::new();
        for spine in 0..self.spines {
            let name = format!("spine{}", spine + 1);
            let mut yaml =
                format!("name: {name}\n{}loopback: [{}/32]\nports:\n", self.resources, self.loopback(spine + 1));
            let mut neighbors = String::new();
            for leaf in 0..leaves {
                let port = format!("eth{}", leaf + 1);
                let _ = writeln!(
                    yaml,
                    "  - {{ name: {port}, mode: routed, addresses: [{}/31]{} }}",
                    p2p(leaf, spine, true),
                    self.port_extra()
                );
                let _ = writeln!(
                    neighbors,
                    "    - {{ interface: {port}, remote_as: {}, description: {}{families} }}",
                    LEAF_ASN_BASE + leaf as u32 + 1,
                    self.leaf_names[leaf]
                );
                fabric_links.push(Link {
                    endpoints: [format!("{}:eth{}", self.leaf_names[leaf], spine + 1), format!("{name}:{port}")],
                    mtu: self.link_mtu(),
                });
            }
            let _ = write!(
                yaml,
                "bgp:\n  asn: {SPINE_ASN}\n  timers: {{ hold_time: 9, connect_retry: 2 }}\n  multipath: {{ max_paths: 64 }}\n  redistribute: [loopback]\n  neighbors:\n{neighbors}"
            );
            yaml.push_str(&self.qos_section(leaves));
            files.insert(format!("{}/{name}.yaml", self.name), yaml);
            let node = self.switch_node(&name, false);
            self.nodes.insert(name, node);
        }
        for leaf in 0..leaves {
            let name = self.leaf_names[leaf].clone();
            let frr = self.frr_leaves.contains(&leaf);
            let asn = LEAF_ASN_BASE + leaf as u32 + 1;
            let loopback = self.loopback(self.leaf_switch(leaf));
            if frr {
                files.insert(format!("{}/{name}.frr.conf", self.name), self.frr_leaf_config(leaf, asn, loopback, &p2p));
            } else {
                let mut yaml = format!("name: {name}\n{}loopback: [{loopback}/32]\nports:\n", self.resources);
                let mut neighbors = String::new();
                for spine in 0..self.spines {
                    let _ = writeln!(
                        yaml,
                        "  - {{ name: eth{}, mode: routed, addresses: [{}/31]{} }}",
                        spine + 1,
                        p2p(leaf, spine, false),
                        self.port_extra()
                    );
                    let _ = writeln!(
                        neighbors,
                        "    - {{ interface: eth{}, remote_as: {SPINE_ASN}, description: spine{}{families} }}",
                        spine + 1,
                        spine + 1
                    );
                }
                for line in &self.leaf_ports[leaf] {
                    yaml.push_str(line);
                }
                if self.leaf_has_hosts_vlan[leaf] && !self.leaf_ports[leaf].is_empty() {
                    let _ =
                        writeln!(yaml, "vlans:\n  - {{ id: 10, name: hosts, addresses: [{}/24] }}", host_gateway(leaf));
                }
                yaml.push_str(&self.leaf_extra[leaf]);
                if self.spines > 0 {
                    let _ = write!(
                        yaml,
                        "bgp:\n  asn: {asn}\n  timers: {{ hold_time: 9, connect_retry: 2 }}\n  multipath: {{ max_paths: {} }}\n  redistribute: [loopback, connected]\n  neighbors:\n{neighbors}",
                        self.spines.max(1)
                    );
                    yaml.push_str(&self.leaf_bgp_extra[leaf]);
                }
                yaml.push_str(&self.qos_section(self.spines + self.leaf_ports[leaf].len()));
                files.insert(format!("{}/{name}.yaml", self.name), yaml);
            }
            let node = self.switch_node(&name, frr);
            // An FRR leaf's kernel VTEP and bridge are made by its exec lines.
            let node = if frr { Node { exec: self.frr_leaf_exec(leaf, loopback), ..node } } else { node };
            self.nodes.insert(name, node);
        }
        // Fabric links first, so `eth1..ethS` of every leaf read top-down.
        fabric_links.append(&mut self.links);
        let topology = Topology {
            name: self.name.clone(),
            topology: Body {
                kinds: BTreeMap::from([("linux".to_owned(), NodeDefaults::default())])
                    .into_iter()
                    .filter(|(_, d)| d.image.is_some())
                    .collect(),
                defaults: None,
                nodes: self.nodes,
                links: fabric_links,
            },
        };
        Generated { topology, files }
    }

    /// FRR's integrated config for a leaf: the same underlay as a `switchd`
    /// leaf (eBGP to each spine over the /31s, loopback announced, ECMP)
    /// and, with EVPN, every VNI zebra finds in the kernel advertised
    /// (`advertise-all-vni`: the VXLAN devices of the node's exec lines).
    fn frr_leaf_config(
        &self,
        leaf: usize,
        asn: u32,
        loopback: Ipv4Addr,
        p2p: &dyn Fn(usize, usize, bool) -> Ipv4Addr,
    ) -> String {
        // Addresses are the node's exec lines (zebra reads them from the
        // kernel); this file is bgpd's.
        let mut conf = format!("frr defaults datacenter\nhostname {}\n", self.leaf_names[leaf]);
        let _ = write!(
            conf,
            "!\nrouter bgp {asn}\n bgp router-id {loopback}\n no bgp ebgp-requires-policy\n timers bgp 3 9\n"
        );
        for spine in 0..self.spines {
            let _ = writeln!(conf, " neighbor {} remote-as {SPINE_ASN}", p2p(leaf, spine, true));
            let _ = writeln!(conf, " neighbor {} timers connect 2", p2p(leaf, spine, true));
        }
        let _ = write!(
            conf,
            " address-family ipv4 unicast\n  network {loopback}/32\n  maximum-paths {}\n exit-address-family\n",
            self.spines.max(1)
        );
        if self.evpn {
            conf.push_str(" address-family l2vpn evpn\n");
            for spine in 0..self.spines {
                let _ = writeln!(conf, "  neighbor {} activate", p2p(leaf, spine, true));
            }
            conf.push_str("  advertise-all-vni\n exit-address-family\n");
        }
        conf.push_str("exit\n");
        // Symmetric IRB: each VRF's L3VNI (zebra's `vrf` / `vni`) and a BGP
        // instance in it, which imports the MAC+IP routes' host routes into
        // the VRF and gives its own hosts' the L3VNI and router MAC.
        for vrf in self.frr_leaf_vrfs(leaf) {
            let (name, l3vni) = (vrf.name, vrf.l3vni);
            let _ = write!(
                conf,
                "vrf {name}\n vni {l3vni}\nexit-vrf\nrouter bgp {asn} vrf {name}\n bgp router-id {loopback}\n no bgp ebgp-requires-policy\nexit\n"
            );
        }
        conf
    }

    /// The tenant VRFs of an FRR leaf's VNIs (empty without EVPN).
    fn frr_leaf_vrfs(&self, leaf: usize) -> Vec<EvpnVrf> {
        let mut vrfs: Vec<EvpnVrf> = Vec::new();
        if self.evpn {
            for (vrf, _, _) in evpn_leaf_vnis(leaf) {
                if !vrfs.iter().any(|v| v.name == vrf.name) {
                    vrfs.push(vrf);
                }
            }
        }
        vrfs
    }

    /// An FRR leaf's addresses and kernel VTEP: per VNI a bridge of the
    /// host port and a VXLAN device with no data-plane learning and no
    /// flood entry: zebra adds the remote VTEPs and MACs from EVPN. With
    /// tenant VRFs, symmetric IRB laid out as FRR's bgp_evpn topotests do:
    /// a VRF device per tenant (`labs deploy` makes it a network namespace
    /// on a kernel without them, `frr_vrf.rs`), its L3VNI a bridge with the
    /// router MAC holding the L3VNI's VXLAN device, enslaved to the VRF; each
    /// VNI's bridge in its VRF too, with the anycast gateway's address and
    /// MAC.
    fn frr_leaf_exec(&self, leaf: usize, loopback: Ipv4Addr) -> Vec<String> {
        let mut exec = vec![format!("ip addr add {loopback}/32 dev lo")];
        for spine in 0..self.spines {
            let k = leaf * self.spines + spine;
            let address = Ipv4Addr::new(10, 0, (k / 128) as u8, (2 * (k % 128)) as u8);
            exec.push(format!("ip addr add {address}/31 dev eth{}", spine + 1));
        }
        let vxlan =
            |vni: u32| format!("ip link add vx{vni} type vxlan id {vni} local {loopback} dstport 4789 nolearning");
        let vrfs = self.frr_leaf_vrfs(leaf);
        if !vrfs.is_empty() {
            exec.push("sysctl -qw net.ipv4.ip_forward=1".into());
        }
        for vrf in &vrfs {
            let (name, l3vni) = (vrf.name, vrf.l3vni);
            exec.push(format!("ip link add {name} type vrf table {}", evpn_vrf_table(name)));
            exec.push(format!("ip link set {name} up"));
            exec.push(format!("ip link add br{l3vni} type bridge"));
            exec.push(format!("ip link set br{l3vni} master {name}"));
            exec.push(format!("ip link set br{l3vni} address {}", evpn_router_mac(name, leaf)));
            exec.push(vxlan(l3vni));
            exec.push(format!("ip link set vx{l3vni} master br{l3vni}"));
            exec.push(format!("ip link set vx{l3vni} up"));
            exec.push(format!("ip link set br{l3vni} up"));
        }
        // One plain bridge per VNI (VLAN-aware bridges are not in every
        // kernel): host port eth(S+1) with the leaf's first VNI, and so on.
        for (i, vni) in self.leaf_vnis[leaf].iter().enumerate() {
            let (bridge, vx, port) = (format!("br{vni}"), format!("vx{vni}"), format!("eth{}", self.spines + 1 + i));
            exec.push(format!("ip link add {bridge} type bridge"));
            if let Some((vrf, _, vlan)) = vrfs.first().and(evpn_leaf_vnis(leaf).into_iter().find(|(_, v, _)| v == vni))
            {
                exec.push(format!("ip link set {bridge} master {}", vrf.name));
                exec.push(format!("ip link set {bridge} address {ANYCAST_GATEWAY_MAC}"));
                exec.push(format!("ip addr add 192.168.{vlan}.1/24 dev {bridge}"));
            }
            exec.push(vxlan(*vni));
            for member in [&vx, &port] {
                exec.push(format!("ip link set {member} master {bridge}"));
                exec.push(format!("ip link set {member} up"));
            }
            exec.push(format!("ip link set {bridge} up"));
        }
        exec
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ai_rail_counts_and_cabling() {
        let lab = AiRail { servers: 16, rails: 8, spines: 4, servers_per_leaf: 8 }.generate("ai").unwrap();
        let t = &lab.topology;
        t.check().unwrap();
        let switches = t.topology.nodes.values().filter(|n| n.labels[ROLE_LABEL] == "switchd").count();
        // 2 groups x 8 rails leaves + 4 spines.
        assert_eq!(switches, 20);
        assert_eq!(t.topology.nodes.values().filter(|n| n.labels[ROLE_LABEL] == "host").count(), 16);
        // Every leaf to every spine, every server NIC to a leaf.
        assert_eq!(t.topology.links.len(), 16 * 4 + 16 * 8);
        // Server 9 is in group 2: its NIC 3 goes to leaf-g2-r3, first host port.
        assert!(
            t.topology.links.iter().any(|l| l.endpoints == ["leaf-g2-r3:eth5".to_owned(), "server9:eth3".to_owned()])
        );
        // Every switch config the topology binds exists and switchd accepts it.
        for node in t.resolve(Path::new("")).unwrap() {
            if let Some(config) = node.config {
                let text = &lab.files[config.to_str().unwrap()];
                assert!(text.contains(&format!("name: {}", node.name)));
            }
        }
    }

    #[test]
    fn fattree_shape() {
        let lab = fattree("ft", 8).unwrap();
        let nodes = &lab.topology.topology.nodes;
        assert_eq!(nodes.keys().filter(|n| n.starts_with("spine")).count(), 4);
        assert_eq!(nodes.keys().filter(|n| n.starts_with("leaf")).count(), 8);
        assert_eq!(nodes.keys().filter(|n| n.starts_with("server")).count(), 32);
        assert!(fattree("ft", 7).is_err());
    }

    #[test]
    fn ib_fattree_shape_and_configs() {
        let lab = ib_fattree("ibf", 4).unwrap();
        let t = &lab.topology;
        t.check().unwrap();
        let role = |r: &str| t.topology.nodes.values().filter(|n| n.labels[ROLE_LABEL] == r).count();
        // 2 spines + 4 leaves, 8 HCAs; every leaf to every spine, every HCA to its leaf.
        assert_eq!((role("switchd"), role("hca"), role("host")), (6, 8, 0));
        assert_eq!(t.topology.links.len(), 4 * 2 + 8);
        assert!(t.topology.links.iter().any(|l| l.endpoints == ["leaf2:eth4".to_owned(), "hca4:eth1".to_owned()]));
        assert!(t.topology.links.iter().any(|l| l.endpoints == ["leaf3:eth2".to_owned(), "spine2:eth3".to_owned()]));
        // Only spine1 has the SM; every port of every switch is IB-like.
        let config = |node: &str| &lab.files[&format!("ibf/{node}.yaml")];
        assert!(config("spine1").contains("sm: { priority: 15"));
        assert!(!config("spine2").contains("sm:") && !config("leaf1").contains("sm:"));
        assert_eq!(config("leaf4").matches("mode: ib").count(), 4);
        assert!(!config("leaf4").contains("bgp"));
        // The HCAs' programs, each with its own GUID and name.
        let nodes = t.resolve(Path::new("")).unwrap();
        let hca3 = nodes.iter().find(|n| n.name == "hca3").unwrap();
        assert_eq!(hca3.program[..3], ["fabric-host", "ib", "--iface"]);
        assert!(hca3.program.windows(2).any(|w| w == ["--name", "hca3"]), "{:?}", hca3.program);
        let guids: std::collections::BTreeSet<&String> =
            nodes.iter().filter_map(|n| n.program.iter().skip_while(|w| *w != "--guid").nth(1)).collect();
        assert_eq!(guids.len(), 8);
        assert!(ib_fattree("x", 5).is_err() && ib_fattree("x", 66).is_err());
    }

    #[test]
    fn evpn_leaf_spine_has_symmetric_irb_on_every_leaf() {
        let lab = evpn_leaf_spine("e", 4, true).unwrap();
        let leaf1: serde_yaml::Value = serde_yaml::from_str(&lab.files["e/leaf1.yaml"]).unwrap();
        let vrfs = &leaf1["bgp"]["evpn"]["vrfs"];
        assert_eq!((vrfs[0]["name"].as_str(), vrfs[0]["l3vni"].as_u64()), (Some("red"), Some(4001)));
        assert_eq!((vrfs[1]["name"].as_str(), vrfs[1]["l3vni"].as_u64()), (Some("blue"), Some(4002)));
        let svi = &leaf1["vlans"][2];
        assert_eq!(svi["vrf"].as_str(), Some("blue"));
        assert_eq!(svi["addresses"][0].as_str(), Some("192.168.30.1/24"));
        assert_eq!(svi["mac"].as_str(), Some(ANYCAST_GATEWAY_MAC));
        // Blue's VNIs never share a leaf: they meet only over the L3VNI.
        let blue: Vec<u32> = (0..4).map(|leaf| evpn_leaf_vnis(leaf)[2].1).collect();
        assert_eq!(blue, [10030, 10040, 10030, 10040]);
        // Every host routes through the anycast gateway, the FRR leaf's too.
        let exec = |host: &str| lab.topology.topology.nodes[host].exec.clone();
        assert!(exec("h2-vni10040").contains(&"ip route add default via 192.168.40.1".to_owned()));
        assert!(exec("h4-vni10040").contains(&"ip route add default via 192.168.40.1".to_owned()));
        assert!(!lab.files.contains_key("e/leaf4.yaml"));
        // The FRR leaf: a VRF device per tenant holding its L3VNI's bridge
        // (FRR's router MAC) and the SVIs (the anycast gateway); zebra's
        // L3VNIs and a BGP instance per VRF in its config.
        let leaf4 = exec("leaf4");
        for line in [
            "ip link add blue type vrf table 1002",
            "ip link set br4002 master blue",
            "ip link set br4002 address 02:cc:00:00:02:04",
            "ip link add vx4002 type vxlan id 4002 local 10.255.0.6 dstport 4789 nolearning",
            "ip link set br10040 master blue",
            "ip link set br10040 address 02:00:5e:00:01:01",
            "ip addr add 192.168.40.1/24 dev br10040",
        ] {
            assert!(leaf4.contains(&line.to_owned()), "{line}: {leaf4:#?}");
        }
        let frr = &lab.files["e/leaf4.frr.conf"];
        assert!(frr.contains("vrf blue\n vni 4002\nexit-vrf\nrouter bgp 4200000004 vrf blue\n"), "{frr}");
        assert_eq!(crate::frr_vrf::config_vrfs(frr), ["red", "blue"]);
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(AiRail { servers: 4, rails: 2, spines: 0, servers_per_leaf: 2 }.generate("x").is_err());
        assert!(AiRail { servers: 0, rails: 2, spines: 1, servers_per_leaf: 2 }.generate("x").is_err());
        assert!(incast("x", 1).is_err());
    }
}
