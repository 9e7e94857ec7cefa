//! Every topology in `labs/topologies` and every generator's output is a
//! valid containerlab file (containerlab's own JSON schema, found at
//! `../shared/containerlab/clab.schema.json` beside the repository), the
//! runner accepts it, and every switch config it binds is accepted by
//! `switchd`'s config model.

use std::path::{Path, PathBuf};

use labs::generate::{self, AiRail, Generated};
use labs::topology::{Role, Topology};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

fn schema() -> jsonschema::Validator {
    let path = repo_root().join("../shared/containerlab/clab.schema.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("containerlab schema at {}: {e} (the repo's parent holds shared/)", path.display()));
    let schema: serde_json::Value = serde_json::from_str(&text).expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("schema compiles")
}

/// Schema errors of a topology file's text, as readable lines.
fn schema_errors(validator: &jsonschema::Validator, yaml: &str) -> Vec<String> {
    let document: serde_json::Value = serde_yaml::from_str(yaml).expect("topology is YAML");
    validator.iter_errors(&document).map(|e| format!("{} at {}", e, e.instance_path())).collect()
}

/// Schema, runner and switchd config checks of one lab in `dir`.
fn check_lab(validator: &jsonschema::Validator, path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let errors = schema_errors(validator, &text);
    assert!(errors.is_empty(), "{} is not a valid containerlab file:\n{}", path.display(), errors.join("\n"));
    let topology = Topology::load(path).unwrap_or_else(|e| panic!("{e}"));
    let nodes = topology.resolve(path.parent().unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for node in nodes {
        match node.role {
            Role::Switchd => {
                let config = node.config.unwrap();
                let parsed = switchd::config::Config::load(&config).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(parsed.name, node.name, "{}", config.display());
            }
            Role::Frr => assert!(node.config.unwrap().is_file()),
            Role::Host => assert!(!node.exec.is_empty(), "host {} has no addresses", node.name),
            Role::Hca => assert_eq!(node.program[..2], ["fabric-host", "ib"], "hca {}", node.name),
        }
    }
}

#[test]
fn checked_in_topologies_are_valid() {
    let validator = schema();
    let dir = repo_root().join("labs/topologies");
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".clab.yml") {
            check_lab(&validator, &path);
            seen.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    seen.sort();
    for wanted in ["ai-rail.clab.yml", "evpn-leaf-spine.clab.yml", "ib-fattree.clab.yml", "incast.clab.yml"] {
        assert!(seen.iter().any(|s| s == wanted), "{wanted} missing from {}", dir.display());
    }
}

fn check_generated(validator: &jsonschema::Validator, lab: Generated) {
    let dir = tempfile::tempdir().unwrap();
    let path = lab.write(dir.path()).unwrap();
    check_lab(validator, &path);
}

#[test]
fn generated_labs_are_valid() {
    let validator = schema();
    check_generated(
        &validator,
        AiRail { servers: 16, rails: 8, spines: 4, servers_per_leaf: 8 }.generate("ai-rail").unwrap(),
    );
    check_generated(
        &validator,
        AiRail { servers: 64, rails: 2, spines: 16, servers_per_leaf: 8 }.generate("ai32").unwrap(),
    );
    check_generated(&validator, generate::fattree("fattree", 8).unwrap());
    check_generated(&validator, generate::ib_fattree("ib-fattree", 8).unwrap());
    check_generated(&validator, generate::incast("incast", 4).unwrap());
    check_generated(&validator, generate::evpn_leaf_spine("evpn", 4, true).unwrap());
}

#[test]
fn the_schema_check_catches_a_bad_file() {
    // So the tests above cannot pass by validating nothing.
    let validator = schema();
    let bad = "name: x\ntopology:\n  nodes:\n    a: { kind: not-a-kind }\n";
    assert!(!schema_errors(&validator, bad).is_empty());
    let bad_link = "name: x\ntopology:\n  nodes:\n    a: { kind: linux }\n  links:\n    - endpoints: 7\n";
    assert!(!schema_errors(&validator, bad_link).is_empty());
}

#[test]
fn checked_in_files_match_the_generators() {
    // The checked-in labs are the generators' output; regenerate with
    // `labs generate incast`, `evpn-leaf-spine`, and
    // `ai-rail --servers 4 --rails 2 --spines 2 --servers-per-leaf 2` and
    // `fattree --radix 4 --ib` in labs/topologies.
    let dir = repo_root().join("labs/topologies");
    for lab in [
        generate::incast("incast", 4).unwrap(),
        generate::evpn_leaf_spine("evpn-leaf-spine", 4, true).unwrap(),
        AiRail { servers: 4, rails: 2, spines: 2, servers_per_leaf: 2 }.generate("ai-rail").unwrap(),
        generate::ib_fattree("ib-fattree", 4).unwrap(),
    ] {
        for (relative, text) in &lab.files {
            let on_disk = std::fs::read_to_string(dir.join(relative)).unwrap();
            assert_eq!(&on_disk, text, "{relative} differs from the generator's output");
        }
        let on_disk = Topology::load(&dir.join(format!("{}.clab.yml", lab.topology.name))).unwrap();
        assert_eq!(on_disk, lab.topology);
    }
}
