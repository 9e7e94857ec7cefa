//! The fabric as the SM knows it: nodes (switches and channel adapters) by
//! GUID, their ports, who each port is cabled to, and the LIDs the SM gave
//! them. Discovery builds it from SMP answers; the in-process fabric and the
//! ibnetdiscover importer build it from a file; routing reads it.

use rustc_hash::FxHashMap;

use crate::packet::attributes::{NodeType, PortState};

/// What a node is, as far as routing cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeKind {
    Switch,
    /// A channel adapter: an HCA-like endpoint (routers are treated as CAs).
    Ca,
}

impl NodeKind {
    pub fn from_node_type(node_type: NodeType) -> Option<NodeKind> {
        match node_type {
            NodeType::Switch => Some(NodeKind::Switch),
            NodeType::Ca | NodeType::Router => Some(NodeKind::Ca),
            NodeType::Unknown(_) => None,
        }
    }

    pub fn node_type(self) -> NodeType {
        match self {
            NodeKind::Switch => NodeType::Switch,
            NodeKind::Ca => NodeType::Ca,
        }
    }
}

/// The far end of a cable: node index and port number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortRef {
    pub node: usize,
    pub port: u8,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Port {
    /// Port GUID (a switch has one, for port 0; a CA one per port).
    pub guid: u64,
    pub remote: Option<PortRef>,
    /// Last state read or set.
    pub state: Option<PortState>,
    /// LinkWidthActive and LinkSpeedActive as PortInfo encodes them.
    pub width: u8,
    pub speed: u8,
    /// Base LID (CA ports and switch port 0), 0 until assigned.
    pub lid: u16,
    /// Operational VLs reported (PortInfo VLCap).
    pub vl_cap: u8,
    /// The directed route to a CA through this port (a CA answers PortInfo
    /// for the port an SMP enters by).
    pub path: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub guid: u64,
    pub kind: NodeKind,
    pub description: String,
    /// Physical ports; `ports` has `num_ports + 1` entries (index = port
    /// number; a CA's entry 0 is unused).
    pub num_ports: u8,
    pub ports: Vec<Port>,
    /// The directed route from the SM's node to this node (output ports).
    pub path: Vec<u8>,
    /// SwitchInfo LinearFDBCap (switches).
    pub linear_fdb_cap: u16,
}

impl Node {
    pub fn new(guid: u64, kind: NodeKind, num_ports: u8, description: impl Into<String>) -> Node {
        Node {
            guid,
            kind,
            description: description.into(),
            num_ports,
            ports: vec![Port::default(); usize::from(num_ports) + 1],
            path: Vec::new(),
            linear_fdb_cap: if kind == NodeKind::Switch { 0xc000 } else { 0 },
        }
    }

    pub fn is_switch(&self) -> bool {
        self.kind == NodeKind::Switch
    }

    /// The ports that carry a LID: port 0 of a switch, every cabled port of
    /// a CA.
    pub fn endpoint_ports(&self) -> impl Iterator<Item = u8> + '_ {
        let switch = self.is_switch();
        (0..=self.num_ports).filter(move |&port| {
            if switch { port == 0 } else { port != 0 && self.ports[usize::from(port)].remote.is_some() }
        })
    }

    pub fn port(&self, port: u8) -> Option<&Port> {
        self.ports.get(usize::from(port))
    }
}

/// Why a topology could not be built as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopologyError {
    DuplicateGuid(u64),
    NoSuchPort { node: usize, port: u8 },
    PortInUse { node: usize, port: u8 },
}

impl core::fmt::Display for TopologyError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TopologyError::DuplicateGuid(guid) => write!(f, "GUID {guid:#018x} appears twice"),
            TopologyError::NoSuchPort { node, port } => write!(f, "node {node} has no port {port}"),
            TopologyError::PortInUse { node, port } => write!(f, "port {port} of node {node} is cabled twice"),
        }
    }
}

impl std::error::Error for TopologyError {}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Topology {
    pub nodes: Vec<Node>,
    by_guid: FxHashMap<u64, usize>,
}

impl Topology {
    pub fn new() -> Topology {
        Topology::default()
    }

    pub fn add_node(&mut self, node: Node) -> Result<usize, TopologyError> {
        if self.by_guid.contains_key(&node.guid) {
            return Err(TopologyError::DuplicateGuid(node.guid));
        }
        let index = self.nodes.len();
        self.by_guid.insert(node.guid, index);
        self.nodes.push(node);
        Ok(index)
    }

    pub fn node_by_guid(&self, guid: u64) -> Option<usize> {
        self.by_guid.get(&guid).copied()
    }

    /// Cables `a` to `b` (both directions).
    pub fn connect(&mut self, a: PortRef, b: PortRef) -> Result<(), TopologyError> {
        for end in [a, b] {
            let node = self.nodes.get(end.node).ok_or(TopologyError::NoSuchPort { node: end.node, port: end.port })?;
            let port = node.port(end.port).ok_or(TopologyError::NoSuchPort { node: end.node, port: end.port })?;
            if end.port == 0 {
                return Err(TopologyError::NoSuchPort { node: end.node, port: 0 });
            }
            if port.remote.is_some_and(|remote| remote != if end == a { b } else { a }) {
                return Err(TopologyError::PortInUse { node: end.node, port: end.port });
            }
        }
        self.nodes[a.node].ports[usize::from(a.port)].remote = Some(b);
        self.nodes[b.node].ports[usize::from(b.port)].remote = Some(a);
        Ok(())
    }

    /// Removes the cable at `at` (both ends).
    pub fn disconnect(&mut self, at: PortRef) {
        let Some(remote) = self
            .nodes
            .get_mut(at.node)
            .and_then(|n| n.ports.get_mut(usize::from(at.port)))
            .and_then(|p| p.remote.take())
        else {
            return;
        };
        if let Some(port) = self.nodes.get_mut(remote.node).and_then(|n| n.ports.get_mut(usize::from(remote.port))) {
            port.remote = None;
        }
    }

    pub fn switches(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes.iter().enumerate().filter(|(_, n)| n.is_switch()).map(|(i, _)| i)
    }

    pub fn cas(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes.iter().enumerate().filter(|(_, n)| !n.is_switch()).map(|(i, _)| i)
    }

    pub fn switch_count(&self) -> usize {
        self.nodes.iter().filter(|n| n.is_switch()).count()
    }

    pub fn ca_count(&self) -> usize {
        self.nodes.len() - self.switch_count()
    }

    /// The node and port a LID belongs to, given LMC (all 2^LMC LIDs of a
    /// port lead to it).
    pub fn lid_owners(&self, lmc: u8) -> FxHashMap<u16, PortRef> {
        let mut owners = FxHashMap::default();
        for (index, node) in self.nodes.iter().enumerate() {
            for port in node.endpoint_ports() {
                let base = node.ports[usize::from(port)].lid;
                if base == 0 {
                    continue;
                }
                let count = if node.is_switch() { 1 } else { 1u16 << lmc };
                for offset in 0..count {
                    owners.insert(base + offset, PortRef { node: index, port });
                }
            }
        }
        owners
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_both_ways_and_refuse_reuse() {
        let mut topology = Topology::new();
        let s = topology.add_node(Node::new(1, NodeKind::Switch, 4, "s")).unwrap();
        let h = topology.add_node(Node::new(2, NodeKind::Ca, 1, "h")).unwrap();
        let h2 = topology.add_node(Node::new(3, NodeKind::Ca, 1, "h2")).unwrap();
        assert_eq!(topology.add_node(Node::new(1, NodeKind::Ca, 1, "dup")), Err(TopologyError::DuplicateGuid(1)));
        topology.connect(PortRef { node: s, port: 1 }, PortRef { node: h, port: 1 }).unwrap();
        assert_eq!(topology.nodes[h].ports[1].remote, Some(PortRef { node: s, port: 1 }));
        assert_eq!(
            topology.connect(PortRef { node: s, port: 1 }, PortRef { node: h2, port: 1 }),
            Err(TopologyError::PortInUse { node: s, port: 1 })
        );
        assert_eq!(
            topology.connect(PortRef { node: s, port: 5 }, PortRef { node: h2, port: 1 }),
            Err(TopologyError::NoSuchPort { node: s, port: 5 })
        );
        topology.disconnect(PortRef { node: h, port: 1 });
        assert_eq!(topology.nodes[s].ports[1].remote, None);
        assert_eq!(topology.node_by_guid(3), Some(h2));
    }
}
