//! A containerlab topology file (`*.clab.yml`) as the runner reads it: the
//! subset of containerlab's format this project's labs use, with unknown
//! keys kept out by the schema test rather than here (containerlab accepts
//! many more; the runner refuses only what it cannot honour).
//!
//! ```yaml
//! name: incast
//! topology:
//!   kinds:
//!     linux: { image: ghcr.io/fabric/switchd:latest }
//!   nodes:
//!     sw1:
//!       kind: linux
//!       labels: { labs.role: switchd }
//!       binds: [sw1.yaml:/etc/switchd/config.yaml:ro]
//!     h1:
//!       kind: linux
//!       image: debian:bookworm-slim
//!       labels: { labs.role: host }
//!       exec: [ip addr add 192.168.10.11/24 dev eth1]
//!   links:
//!     - endpoints: [sw1:eth1, h1:eth1]
//! ```
//!
//! Every node is containerlab's `linux` kind; what the runner does with it
//! is the `labs.role` label: `switchd` (the daemon with the config bound at
//! [`SWITCHD_CONFIG`]), `frr` (zebra and bgpd with the config bound at
//! [`FRR_CONFIG`]), `host` (a plain namespace set up by its `exec` lines) or
//! `hca` (an HCA-like endpoint of the IB-like plane: the node's
//! `entrypoint` and `cmd`, `fabric-host ib ...`, as its program).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where the node image's entrypoint reads the switch config.
pub const SWITCHD_CONFIG: &str = "/etc/switchd/config.yaml";
/// Where FRR's image reads its integrated config.
pub const FRR_CONFIG: &str = "/etc/frr/frr.conf";
/// The label naming a node's role for the runner.
pub const ROLE_LABEL: &str = "labs.role";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    pub name: String,
    pub topology: Body,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Body {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kinds: BTreeMap<String, NodeDefaults>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults: Option<NodeDefaults>,
    pub nodes: BTreeMap<String, Node>,
    #[serde(default)]
    pub links: Vec<Link>,
}

/// Settings a kind or `defaults` gives every node that does not set them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeDefaults {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// `host-path:container-path[:ro]`, host paths relative to the file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub binds: Vec<String>,
    /// Commands run in the node once its links exist.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exec: Vec<String>,
    #[serde(rename = "mgmt-ipv4", default, skip_serializing_if = "Option::is_none")]
    pub mgmt_ipv4: Option<String>,
    /// The container's entrypoint and command (containerlab's); an `hca`
    /// node's program is the two together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entrypoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmd: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// `[node:ifname, node:ifname]`.
    pub endpoints: [String; 2],
    /// Both ends' MTU (containerlab's brief-link `mtu`); the kernel's
    /// default (1500) when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
}

/// What the runner runs in a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Switchd,
    Frr,
    Host,
    Hca,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Switchd => "switchd",
            Role::Frr => "frr",
            Role::Host => "host",
            Role::Hca => "hca",
        })
    }
}

/// One end of a link.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Endpoint {
    pub node: String,
    pub interface: String,
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.node, self.interface)
    }
}

impl Endpoint {
    /// `node:ifname`.
    pub fn parse(text: &str) -> Result<Endpoint, String> {
        let (node, interface) =
            text.split_once(':').ok_or_else(|| format!("endpoint {text:?} is not node:interface"))?;
        if node.is_empty() || interface.is_empty() {
            return Err(format!("endpoint {text:?} is not node:interface"));
        }
        // IFNAMSIZ is 16 with the terminating NUL.
        if interface.len() > 15 || interface.contains(['/', ' ', ':']) {
            return Err(format!("endpoint {text:?}: {interface:?} is not a Linux interface name"));
        }
        Ok(Endpoint { node: node.to_owned(), interface: interface.to_owned() })
    }
}

/// A node as the runner deploys it: its role and files resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedNode {
    pub name: String,
    pub role: Role,
    pub image: Option<String>,
    /// The switchd or FRR config on this machine, if bound.
    pub config: Option<PathBuf>,
    pub exec: Vec<String>,
    /// An `hca` node's program: `entrypoint` then `cmd`, split at spaces.
    pub program: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    #[error("cannot read {path}: {error}")]
    Read { path: PathBuf, error: std::io::Error },
    #[error("{path}: {error}")]
    Parse { path: PathBuf, error: serde_yaml::Error },
    #[error("{path}: {reason}")]
    Invalid { path: PathBuf, reason: String },
}

impl Topology {
    pub fn load(path: &Path) -> Result<Topology, TopologyError> {
        let text =
            std::fs::read_to_string(path).map_err(|error| TopologyError::Read { path: path.to_owned(), error })?;
        let topology: Topology =
            serde_yaml::from_str(&text).map_err(|error| TopologyError::Parse { path: path.to_owned(), error })?;
        topology.check().map_err(|reason| TopologyError::Invalid { path: path.to_owned(), reason })?;
        Ok(topology)
    }

    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(self).expect("a topology always serializes")
    }

    /// What containerlab itself would refuse, plus what the runner needs:
    /// names that fit a namespace name, links between declared nodes, no
    /// interface used twice, a role the runner knows.
    pub fn check(&self) -> Result<(), String> {
        let name_ok =
            |n: &str| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
        if !name_ok(&self.name) {
            return Err(format!("name {:?}: letters, digits, '-', '_' and '.' only", self.name));
        }
        let mut used = BTreeSet::new();
        for (i, link) in self.topology.links.iter().enumerate() {
            if link.mtu.is_some_and(|mtu| !(68..=65535).contains(&mtu)) {
                return Err(format!("topology.links[{i}].mtu: 68 to 65535"));
            }
            for text in &link.endpoints {
                let endpoint = Endpoint::parse(text).map_err(|e| format!("topology.links[{i}]: {e}"))?;
                if !self.topology.nodes.contains_key(&endpoint.node) {
                    return Err(format!("topology.links[{i}]: no node {:?}", endpoint.node));
                }
                if !used.insert(endpoint.clone()) {
                    return Err(format!("topology.links[{i}]: {endpoint} is used by another link"));
                }
            }
        }
        for name in self.topology.nodes.keys() {
            if !name_ok(name) {
                return Err(format!("topology.nodes.{name}: letters, digits, '-', '_' and '.' only"));
            }
            self.role(name).map_err(|e| format!("topology.nodes.{name}: {e}"))?;
        }
        Ok(())
    }

    /// Links as endpoint pairs, in file order.
    pub fn links(&self) -> Vec<(Endpoint, Endpoint)> {
        self.links_with_mtu().into_iter().map(|(a, b, _)| (a, b)).collect()
    }

    /// Links as endpoint pairs with their MTU, in file order.
    pub fn links_with_mtu(&self) -> Vec<(Endpoint, Endpoint, Option<u32>)> {
        self.topology
            .links
            .iter()
            .filter_map(|l| {
                Some((Endpoint::parse(&l.endpoints[0]).ok()?, Endpoint::parse(&l.endpoints[1]).ok()?, l.mtu))
            })
            .collect()
    }

    fn defaults_for<'a>(&'a self, node: &'a Node) -> impl Iterator<Item = &'a NodeDefaults> {
        self.topology.kinds.get(&node.kind).into_iter().chain(self.topology.defaults.as_ref())
    }

    /// The node's `labs.role` (from the node, its kind or the defaults).
    pub fn role(&self, name: &str) -> Result<Role, String> {
        let node = self.topology.nodes.get(name).ok_or_else(|| format!("no node {name:?}"))?;
        let label = node
            .labels
            .get(ROLE_LABEL)
            .or_else(|| self.defaults_for(node).find_map(|d| d.labels.get(ROLE_LABEL)))
            .ok_or_else(|| format!("no {ROLE_LABEL} label (switchd, frr, host or hca)"))?;
        match label.as_str() {
            "switchd" => Ok(Role::Switchd),
            "frr" => Ok(Role::Frr),
            "host" => Ok(Role::Host),
            "hca" => Ok(Role::Hca),
            other => Err(format!("{ROLE_LABEL}: {other:?} is not switchd, frr, host or hca")),
        }
    }

    /// Every node with its role and the config bound into it, bind paths
    /// resolved against `dir` (the topology file's folder).
    pub fn resolve(&self, dir: &Path) -> Result<Vec<ResolvedNode>, String> {
        let mut nodes = Vec::new();
        for (name, node) in &self.topology.nodes {
            let role = self.role(name)?;
            let wanted = match role {
                Role::Switchd => Some(SWITCHD_CONFIG),
                Role::Frr => Some(FRR_CONFIG),
                Role::Host | Role::Hca => None,
            };
            let mut config = None;
            for bind in &node.binds {
                let mut parts = bind.split(':');
                let (Some(host), Some(target)) = (parts.next(), parts.next()) else {
                    return Err(format!("topology.nodes.{name}.binds: {bind:?} is not host:container[:ro]"));
                };
                if Some(target) == wanted {
                    config = Some(dir.join(host));
                }
            }
            if let Some(target) = wanted
                && config.is_none()
            {
                return Err(format!("topology.nodes.{name}: a {role} node needs a bind to {target}"));
            }
            let program: Vec<String> = [&node.entrypoint, &node.cmd]
                .into_iter()
                .flatten()
                .flat_map(|words| words.split_whitespace().map(str::to_owned))
                .collect();
            if role == Role::Hca && program.is_empty() {
                return Err(format!("topology.nodes.{name}: an hca node needs its program in entrypoint/cmd"));
            }
            let image = node.image.clone().or_else(|| self.defaults_for(node).find_map(|d| d.image.clone()));
            nodes.push(ResolvedNode { name: name.clone(), role, image, config, exec: node.exec.clone(), program });
        }
        Ok(nodes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = "
name: t
topology:
  kinds:
    linux: { labels: { labs.role: host } }
  nodes:
    sw: { kind: linux, labels: { labs.role: switchd }, binds: ['sw.yaml:/etc/switchd/config.yaml:ro'] }
    h1: { kind: linux, exec: ['ip addr add 10.0.0.1/24 dev eth1'] }
  links:
    - endpoints: ['sw:eth1', 'h1:eth1']
";

    #[test]
    fn roles_and_binds_resolve() {
        let t: Topology = serde_yaml::from_str(SMALL).unwrap();
        t.check().unwrap();
        let nodes = t.resolve(Path::new("/labs")).unwrap();
        let sw = nodes.iter().find(|n| n.name == "sw").unwrap();
        assert_eq!(sw.role, Role::Switchd);
        assert_eq!(sw.config.as_deref(), Some(Path::new("/labs/sw.yaml")));
        let h1 = nodes.iter().find(|n| n.name == "h1").unwrap();
        assert_eq!(h1.role, Role::Host, "role from the kind's labels");
        assert_eq!(t.links().len(), 1);
    }

    #[test]
    fn bad_links_are_refused_naming_the_link() {
        let mut t: Topology = serde_yaml::from_str(SMALL).unwrap();
        t.topology.links.push(Link { endpoints: ["sw:eth1".into(), "h1:eth2".into()], mtu: None });
        assert!(t.check().unwrap_err().contains("links[1]: sw:eth1 is used by another link"));
        t.topology.links[1] = Link { endpoints: ["sw:eth2".into(), "nope:eth1".into()], mtu: None };
        assert!(t.check().unwrap_err().contains("no node \"nope\""));
        t.topology.links[1] = Link { endpoints: ["sw:eth2".into(), "h1".into()], mtu: None };
        assert!(t.check().unwrap_err().contains("not node:interface"));
        t.topology.links[1] = Link { endpoints: ["sw:eth2".into(), "h1:eth2".into()], mtu: Some(20) };
        assert!(t.check().unwrap_err().contains("links[1].mtu"));
        t.topology.links[1] = Link { endpoints: ["sw:eth2".into(), "h1".into()], mtu: None };
        assert!(t.check().unwrap_err().contains("not node:interface"));
    }

    #[test]
    fn switchd_without_config_is_refused() {
        let mut t: Topology = serde_yaml::from_str(SMALL).unwrap();
        t.topology.nodes.get_mut("sw").unwrap().binds.clear();
        assert!(t.resolve(Path::new(".")).unwrap_err().contains("needs a bind to /etc/switchd/config.yaml"));
        t.topology.nodes.get_mut("sw").unwrap().labels.insert(ROLE_LABEL.into(), "router".into());
        assert!(t.check().unwrap_err().contains("\"router\" is not switchd"));
    }
}
