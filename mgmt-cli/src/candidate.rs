//! The candidate configuration of a `configure` session: a private copy of
//! running, edited with `set PATH VALUE` and `delete PATH` on the YAML
//! model of the startup file, then sent whole to the daemon by `commit`.
//!
//! A path is words: mapping keys, and for lists of entries the entry's key
//! value (`ports eth1 mtu`, `vlans 20 name`, `routes 10.9.0.0/24
//! next_hops`, `vxlan vnis 10010 flood`). Lists of plain values
//! (`loopback`, `addresses`) are set whole as a YAML flow value
//! (`[10.0.0.1/31, 10.0.1.1/31]`). Nothing is validated here: the daemon
//! validates the whole candidate at `commit` (or `validate`) and names the
//! field of each problem.

use serde_yaml::{Mapping, Value};

/// The field that names an entry of each keyed list, by the list's key.
pub const LIST_KEYS: &[(&str, &[&str])] = &[
    ("ports", &["name"]),
    ("vlans", &["id"]),
    ("vnis", &["vni"]),
    ("routes", &["prefix"]),
    ("neighbors", &["interface", "address"]),
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("a path is needed")]
    EmptyPath,
    #[error("{path}: {reason}")]
    Path { path: String, reason: String },
    #[error("value {value:?}: {reason}")]
    Value { value: String, reason: String },
}

#[derive(Debug, Clone)]
pub struct Candidate {
    /// Running as it was copied, to compare against.
    pub running_yaml: String,
    /// The running generation it was copied from.
    pub base_generation: u64,
    root: Value,
}

impl Candidate {
    pub fn new(running_yaml: &str, base_generation: u64) -> Result<Candidate, EditError> {
        let root = serde_yaml::from_str(running_yaml)
            .map_err(|e| EditError::Value { value: "running config".into(), reason: e.to_string() })?;
        Ok(Candidate { running_yaml: running_yaml.to_owned(), base_generation, root })
    }

    /// Replaces the candidate's content (`rollback N`), keeping its base.
    pub fn load(&mut self, yaml: &str) -> Result<(), EditError> {
        self.root = serde_yaml::from_str(yaml)
            .map_err(|e| EditError::Value { value: "stored config".into(), reason: e.to_string() })?;
        Ok(())
    }

    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(&self.root).unwrap_or_else(|e| format!("# cannot serialize: {e}\n"))
    }

    /// Whether the candidate differs from the running copy it started from.
    pub fn changed(&self) -> bool {
        serde_yaml::from_str::<Value>(&self.running_yaml).ok().as_ref() != Some(&self.root)
    }

    /// `set PATH VALUE`: `value` is YAML (`9000`, `up`, `[10, 20]`,
    /// `{ name: eth5, mode: routed }`).
    pub fn set(&mut self, path: &[&str], value: &str) -> Result<(), EditError> {
        let value: Value = serde_yaml::from_str(value)
            .map_err(|e| EditError::Value { value: value.to_owned(), reason: e.to_string() })?;
        let (last, parents) = path.split_last().ok_or(EditError::EmptyPath)?;
        let mut node = &mut self.root;
        let mut list = None;
        for (i, word) in parents.iter().enumerate() {
            node = step(node, word, list, true).map_err(|reason| path_error(&path[..=i], reason))?;
            list = Some(*word);
        }
        // The last word names a field, or an entry of a keyed list set whole.
        match node {
            Value::Sequence(_) => {
                let entry = step(node, last, list, true).map_err(|reason| path_error(path, reason))?;
                match value {
                    Value::Mapping(fields) => {
                        let entry = entry.as_mapping_mut().expect("entries are mappings");
                        for (k, v) in fields {
                            entry.insert(k, v);
                        }
                    }
                    other => return Err(path_error(path, format!("an entry is set with a mapping, not {other:?}"))),
                }
            }
            _ => {
                if node.is_null() {
                    *node = Value::Mapping(Mapping::new());
                }
                let Value::Mapping(map) = node else {
                    return Err(path_error(path, "is not a section with fields".into()));
                };
                map.insert(Value::String((*last).to_owned()), value);
            }
        }
        Ok(())
    }

    /// `delete PATH`: removes a field, or an entry of a keyed list.
    pub fn delete(&mut self, path: &[&str]) -> Result<(), EditError> {
        let (last, parents) = path.split_last().ok_or(EditError::EmptyPath)?;
        let mut node = &mut self.root;
        let mut list = None;
        for (i, word) in parents.iter().enumerate() {
            node = step(node, word, list, false).map_err(|reason| path_error(&path[..=i], reason))?;
            list = Some(*word);
        }
        let removed = match node {
            Value::Mapping(map) => map.remove(*last).is_some(),
            Value::Sequence(items) => {
                let before = items.len();
                items.retain(|item| !entry_matches(item, last, list));
                items.len() != before
            }
            _ => false,
        };
        if removed { Ok(()) } else { Err(path_error(path, "is not in the candidate".into())) }
    }

    /// The words that may follow `path` in the candidate: field names, or
    /// the keys of a list's entries (for completion).
    pub fn children(&self, path: &[&str]) -> Vec<String> {
        let mut node = &self.root;
        let mut list = None;
        for word in path {
            let next = match node {
                Value::Mapping(map) => map.get(*word),
                Value::Sequence(items) => items.iter().find(|item| entry_matches(item, word, list)),
                _ => None,
            };
            let Some(next) = next else { return Vec::new() };
            node = next;
            list = Some(*word);
        }
        match node {
            Value::Mapping(map) => map.keys().filter_map(scalar_text).collect(),
            Value::Sequence(items) => items.iter().filter_map(|item| entry_key(item, list)).collect(),
            _ => Vec::new(),
        }
    }

    /// A unified diff from running to the candidate (empty if equal).
    pub fn compare(&self) -> String {
        diff(&self.running_yaml, &self.to_yaml())
    }
}

/// A unified diff of two YAML texts, `-` running, `+` candidate.
pub fn diff(running: &str, candidate: &str) -> String {
    if running == candidate {
        return String::new();
    }
    similar::TextDiff::from_lines(running, candidate)
        .unified_diff()
        .context_radius(3)
        .header("running", "candidate")
        .to_string()
}

fn path_error(path: &[&str], reason: String) -> EditError {
    EditError::Path { path: path.join(" "), reason }
}

/// One step down from `node` by `word`; `list` is the key of `node` in its
/// parent (it says which field names the entries of a list). Missing
/// fields and entries are created when `create`.
fn step<'a>(node: &'a mut Value, word: &str, list: Option<&str>, create: bool) -> Result<&'a mut Value, String> {
    if node.is_null() && create {
        *node = Value::Mapping(Mapping::new());
    }
    match node {
        Value::Mapping(map) => {
            if !map.contains_key(word) {
                if !create {
                    return Err("is not in the candidate".into());
                }
                let empty = if LIST_KEYS.iter().any(|(name, _)| *name == word) {
                    Value::Sequence(Vec::new())
                } else {
                    Value::Null
                };
                map.insert(Value::String(word.to_owned()), empty);
            }
            Ok(map.get_mut(word).expect("inserted above"))
        }
        Value::Sequence(items) => {
            let found = items.iter().position(|item| entry_matches(item, word, list));
            let index = match found {
                Some(index) => index,
                None if create => {
                    let field = key_field_for_new(word, list).ok_or_else(|| {
                        format!("entries of {} are not named by a key; set the whole list", list.unwrap_or("this list"))
                    })?;
                    let mut entry = Mapping::new();
                    entry.insert(Value::String(field.to_owned()), scalar(word));
                    items.push(Value::Mapping(entry));
                    items.len() - 1
                }
                None => return Err("is not in the candidate".into()),
            };
            Ok(&mut items[index])
        }
        _ => Err("is a value, not a section".into()),
    }
}

/// A word as the YAML scalar it spells (`10` a number, `eth1` a string).
fn scalar(word: &str) -> Value {
    serde_yaml::from_str::<Value>(word)
        .ok()
        .filter(|v| matches!(v, Value::Number(_) | Value::String(_)))
        .unwrap_or_else(|| Value::String(word.to_owned()))
}

fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn key_fields(list: Option<&str>) -> &'static [&'static str] {
    list.and_then(|list| LIST_KEYS.iter().find(|(name, _)| *name == list)).map_or(&[], |(_, keys)| keys)
}

fn entry_key(item: &Value, list: Option<&str>) -> Option<String> {
    let map = item.as_mapping()?;
    key_fields(list).iter().find_map(|field| map.get(*field).and_then(scalar_text))
}

fn entry_matches(item: &Value, word: &str, list: Option<&str>) -> bool {
    entry_key(item, list).is_some_and(|key| key == word)
}

/// The key field a new entry named `word` gets: BGP neighbours by address
/// when `word` is one, else by interface.
fn key_field_for_new(word: &str, list: Option<&str>) -> Option<&'static str> {
    let fields = key_fields(list);
    match fields {
        [] => None,
        [one] => Some(one),
        [by_interface, by_address, ..] => {
            Some(if word.parse::<std::net::IpAddr>().is_ok() { by_address } else { by_interface })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUNNING: &str = "name: s1\nports:\n- name: eth1\n  mode: routed\n  addresses:\n  - 10.0.0.1/24\n- name: eth2\n  mode: access\n  vlan: 10\nvlans:\n- id: 10\n";

    #[test]
    fn set_walks_keyed_lists_and_creates_entries() {
        let mut c = Candidate::new(RUNNING, 3).unwrap();
        assert!(!c.changed());
        c.set(&["ports", "eth1", "mtu"], "9000").unwrap();
        c.set(&["vlans", "20", "name"], "red").unwrap();
        c.set(&["routes", "10.9.0.0/24", "next_hops"], "[10.0.0.2]").unwrap();
        c.set(&["ports", "eth2", "vlan"], "20").unwrap();
        let yaml = c.to_yaml();
        assert!(yaml.contains("mtu: 9000"), "{yaml}");
        assert!(yaml.contains("- id: 20\n  name: red"), "{yaml}");
        assert!(yaml.contains("- prefix: 10.9.0.0/24\n  next_hops:\n  - 10.0.0.2"), "{yaml}");
        assert!(c.changed());
        let diff = c.compare();
        assert!(diff.contains("+  mtu: 9000"), "{diff}");
        assert!(diff.contains("-  vlan: 10\n+  vlan: 20"), "{diff}");
        assert_eq!(c.children(&["ports"]), ["eth1", "eth2"]);
        assert_eq!(c.children(&["vlans"]), ["10", "20"]);
    }

    #[test]
    fn delete_removes_fields_and_entries_and_names_missing_paths() {
        let mut c = Candidate::new(RUNNING, 0).unwrap();
        c.delete(&["ports", "eth2"]).unwrap();
        c.delete(&["ports", "eth1", "addresses"]).unwrap();
        assert!(!c.to_yaml().contains("eth2"));
        assert!(!c.to_yaml().contains("10.0.0.1"));
        assert_eq!(
            c.delete(&["ports", "eth7", "mtu"]),
            Err(EditError::Path { path: "ports eth7".into(), reason: "is not in the candidate".into() })
        );
        assert!(matches!(c.set(&["name", "x"], "1"), Err(EditError::Path { .. })));
        assert!(matches!(c.set(&["ports", "eth1", "mtu"], "[unclosed"), Err(EditError::Value { .. })));
    }

    #[test]
    fn bgp_neighbours_are_keyed_by_interface_or_address() {
        let mut c = Candidate::new(RUNNING, 0).unwrap();
        c.set(&["bgp", "asn"], "65001").unwrap();
        c.set(&["bgp", "neighbors", "eth1", "remote_as"], "external").unwrap();
        c.set(&["bgp", "neighbors", "10.0.0.2", "remote_as"], "65002").unwrap();
        let yaml = c.to_yaml();
        assert!(yaml.contains("- interface: eth1\n    remote_as: external"), "{yaml}");
        assert!(yaml.contains("- address: 10.0.0.2\n    remote_as: 65002"), "{yaml}");
        assert_eq!(c.children(&["bgp", "neighbors"]), ["eth1", "10.0.0.2"]);
    }
}
