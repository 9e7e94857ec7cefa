//! The topology format of `ibnetdiscover` output, which ibsim reads too
//! (ibsim's net-examples): node records of a header line and one line per
//! cabled port, optionally preceded by GUID lines.
//!
//! ```text
//! switchguid=0x0002c90000000001
//! Switch  36 "S-0002c90000000001"     # "leaf-1" enhanced port 0 lid 1 lmc 0
//! [1]     "H-0002c90000001001"[1](2c90000001001)   # "host-1" lid 5 4xQDR
//!
//! Hca     1 "H-0002c90000001001"
//! [1](2c90000001001)  "S-0002c90000000001"[1]
//! ```
//!
//! Node GUIDs come from a `switchguid=`/`caguid=` line, else from an
//! `S-`/`H-` identifier, else they are made up in file order. A cable may
//! be listed from one end or both.

use rustc_hash::FxHashMap;

use crate::topology::{Node, NodeKind, PortRef, Topology, TopologyError};

/// Where and why a file could not be read; refused whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl core::fmt::Display for ParseError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// GUIDs made up for nodes that name none start here.
const MADE_UP_GUID_BASE: u64 = 0x0002_c900_0100_0000;

struct PendingLink {
    line: usize,
    local: usize,
    local_port: u8,
    remote_id: String,
    remote_port: u8,
}

/// Reads a topology. The node descriptions are the quoted identifiers (as
/// ibsim answers NodeDescription) unless a comment gives one.
pub fn parse(text: &str) -> Result<Topology, ParseError> {
    let mut topology = Topology::new();
    let mut ids: FxHashMap<String, usize> = FxHashMap::default();
    let mut links = Vec::new();
    let mut current: Option<usize> = None;
    let mut next_guid: Option<u64> = None;
    let mut made_up = MADE_UP_GUID_BASE;
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let error = |message: String| ParseError { line: line_no, message };
        let (line, comment) = match raw.find('#') {
            Some(at) if !raw[..at].contains('"') || raw[..at].matches('"').count() % 2 == 0 => {
                (&raw[..at], Some(&raw[at + 1..]))
            }
            _ => (raw, None),
        };
        let line = line.trim();
        if line.is_empty() {
            if comment.is_none() {
                current = None;
            }
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            let key = key.trim();
            if matches!(key, "switchguid" | "caguid" | "rtguid") {
                let value = value.trim();
                let value = value.split('(').next().unwrap_or(value);
                next_guid = Some(parse_hex(value).ok_or_else(|| error(format!("bad GUID {value:?}")))?);
            }
            continue; // vendid=, devid=, sysimgguid=: informative
        }
        if let Some(rest) = line.strip_prefix('[') {
            let node = current.ok_or_else(|| error("port line outside a node record".into()))?;
            let (port, rest) = rest.split_once(']').ok_or_else(|| error("missing ] after the port number".into()))?;
            let port: u8 = port.trim().parse().map_err(|_| error(format!("bad port number {port:?}")))?;
            if port == 0 || port > topology.nodes[node].num_ports {
                return Err(error(format!("port {port} out of range 1..={}", topology.nodes[node].num_ports)));
            }
            let rest = rest.trim_start();
            let rest = if let Some(after) = rest.strip_prefix('(') {
                let (guid, after) =
                    after.split_once(')').ok_or_else(|| error("missing ) after the port GUID".into()))?;
                let guid = parse_hex(guid).ok_or_else(|| error(format!("bad port GUID {guid:?}")))?;
                topology.nodes[node].ports[usize::from(port)].guid = guid;
                after.trim_start()
            } else {
                rest
            };
            let rest = rest.strip_prefix('"').ok_or_else(|| error("expected the remote node's quoted id".into()))?;
            let (remote_id, rest) = rest.split_once('"').ok_or_else(|| error("unterminated quote".into()))?;
            let rest = rest.trim_start().strip_prefix('[').ok_or_else(|| error("expected [remote port]".into()))?;
            let (remote_port, _) =
                rest.split_once(']').ok_or_else(|| error("missing ] after the remote port".into()))?;
            let remote_port: u8 =
                remote_port.trim().parse().map_err(|_| error(format!("bad remote port {remote_port:?}")))?;
            links.push(PendingLink {
                line: line_no,
                local: node,
                local_port: port,
                remote_id: remote_id.to_string(),
                remote_port,
            });
            continue;
        }
        let mut words = line.split_whitespace();
        let kind = match words.next() {
            Some("Switch") => NodeKind::Switch,
            Some("Hca" | "Ca" | "Rt") => NodeKind::Ca,
            Some(other) => return Err(error(format!("unknown record {other:?}"))),
            None => continue,
        };
        let ports: u8 =
            words.next().and_then(|w| w.parse().ok()).ok_or_else(|| error("expected the number of ports".into()))?;
        let id = line.split('"').nth(1).ok_or_else(|| error("expected the node's quoted id".into()))?.to_string();
        let guid = match next_guid.take().or_else(|| guid_from_id(&id)) {
            Some(guid) => guid,
            None => {
                made_up += 1;
                made_up
            }
        };
        let description = comment.and_then(|c| c.split('"').nth(1)).map(str::to_string).unwrap_or_else(|| id.clone());
        let mut node = Node::new(guid, kind, ports, description);
        if kind == NodeKind::Switch {
            node.ports[0].guid = guid;
        }
        let index = topology.add_node(node).map_err(|e| error(e.to_string()))?;
        if ids.insert(id.clone(), index).is_some() {
            return Err(error(format!("node {id:?} defined twice")));
        }
        current = Some(index);
    }
    for link in links {
        let remote = *ids
            .get(&link.remote_id)
            .ok_or_else(|| ParseError { line: link.line, message: format!("unknown node {:?}", link.remote_id) })?;
        let result = topology.connect(
            PortRef { node: link.local, port: link.local_port },
            PortRef { node: remote, port: link.remote_port },
        );
        if let Err(e) = result {
            let message = match e {
                TopologyError::NoSuchPort { port, .. } => format!("{:?} has no port {port}", link.remote_id),
                other => other.to_string(),
            };
            return Err(ParseError { line: link.line, message });
        }
    }
    // A CA port GUID nobody named: node GUID + port number, as ibsim does.
    for node in &mut topology.nodes {
        if node.kind == NodeKind::Ca {
            for port in 1..=node.num_ports {
                let entry = &mut node.ports[usize::from(port)];
                if entry.guid == 0 {
                    entry.guid = node.guid + u64::from(port);
                }
            }
        }
    }
    Ok(topology)
}

fn parse_hex(text: &str) -> Option<u64> {
    let text = text.trim();
    u64::from_str_radix(text.strip_prefix("0x").unwrap_or(text), 16).ok()
}

/// ibnetdiscover names nodes `S-<guid>` and `H-<guid>`.
fn guid_from_id(id: &str) -> Option<u64> {
    let hex = id.strip_prefix("S-").or_else(|| id.strip_prefix("H-")).or_else(|| id.strip_prefix("R-"))?;
    (hex.len() == 16).then(|| parse_hex(hex)).flatten()
}

/// Writes `topology` in the same format (ibsim reads it; so do we).
pub fn write(topology: &Topology) -> String {
    let mut out = String::new();
    let ids: Vec<String> = topology.nodes.iter().map(|n| n.description.clone()).collect();
    for node in &topology.nodes {
        let (word, guid_key) = if node.is_switch() { ("Switch", "switchguid") } else { ("Hca", "caguid") };
        out.push_str(&format!("{guid_key}={:#018x}\n", node.guid));
        out.push_str(&format!("{word}\t{} \"{}\"\n", node.num_ports, node.description));
        for port in 1..=node.num_ports {
            if let Some(remote) = node.ports[usize::from(port)].remote {
                out.push_str(&format!("[{port}]\t\"{}\"[{}]\n", ids[remote.node], remote.port));
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const IBSIM_EXAMPLE: &str = r#"# Net configuration file example
Switch	8 "Switch1"
[1]	"Hca1"[1]
[3]	"Switch2"[3]
[5]	"Switch2"[5]

Switch 8 "Switch2"
[1]	"Hca2"[1]
[3]	"Switch1"[3]
[5]	"Switch1"[5]

Hca	2 "Hca1"
[1]	"Switch1"[1]

Hca 	2 "Hca2"
[1]	"Switch2"[1]
"#;

    const IBNETDISCOVER: &str = r#"
vendid=0x2c9
devid=0xbd36
sysimgguid=0x2c90000000001
switchguid=0x2c90000000001(2c90000000001)
Switch	24 "S-0002c90000000001"		# "leaf one" base port 0 lid 1 lmc 0
[1]	"H-0002c90000001001"[1](2c90000001002) 		# "host a" lid 5 4xSDR

caguid=0x2c90000001001
Ca	2 "H-0002c90000001001"		# "host a"
[1](2c90000001002) 	"S-0002c90000000001"[1]		# lid 5 lmc 0 "leaf one" lid 1 4xSDR
"#;

    #[test]
    fn reads_ibsim_examples() {
        let topology = parse(IBSIM_EXAMPLE).unwrap();
        assert_eq!(topology.nodes.len(), 4);
        assert_eq!(topology.switch_count(), 2);
        let s1 = &topology.nodes[0];
        assert_eq!(s1.description, "Switch1");
        assert_eq!(s1.ports[3].remote, Some(PortRef { node: 1, port: 3 }));
        assert_eq!(s1.ports[5].remote, Some(PortRef { node: 1, port: 5 }));
        assert_eq!(topology.nodes[2].ports[1].remote, Some(PortRef { node: 0, port: 1 }));
        // Written back and read again: the same cabling.
        let again = parse(&write(&topology)).unwrap();
        for (a, b) in topology.nodes.iter().zip(&again.nodes) {
            assert_eq!(a.guid, b.guid);
            let remotes = |n: &Node| n.ports.iter().map(|p| p.remote).collect::<Vec<_>>();
            assert_eq!(remotes(a), remotes(b));
        }
    }

    #[test]
    fn reads_ibnetdiscover_output_with_guids_and_comments() {
        let topology = parse(IBNETDISCOVER).unwrap();
        assert_eq!(topology.nodes[0].guid, 0x2c90000000001);
        assert_eq!(topology.nodes[0].description, "leaf one");
        assert_eq!(topology.nodes[1].guid, 0x2c90000001001);
        assert_eq!(topology.nodes[1].ports[1].guid, 0x2c90000001002);
        assert_eq!(topology.nodes[1].kind, NodeKind::Ca);
        assert_eq!(topology.nodes[1].description, "host a");
    }

    #[test]
    fn refuses_bad_files_naming_the_line() {
        let error = parse("Switch 4 \"a\"\n[5] \"b\"[1]\n").unwrap_err();
        assert_eq!(error.line, 2);
        assert!(error.message.contains("out of range"), "{error}");
        let error = parse("Switch 4 \"a\"\n[1] \"nobody\"[1]\n").unwrap_err();
        assert!(error.message.contains("unknown node"), "{error}");
        let error = parse("Widget 4 \"a\"\n").unwrap_err();
        assert_eq!(error.line, 1);
        let error = parse("Switch 4 \"a\"\n[1] \"h\"[1]\n\nHca 1 \"h\"\n[1] \"a\"[2]\n").unwrap_err();
        assert!(error.message.contains("cabled twice"), "{error}");
    }
}
