//! `switchd`'s Prometheus endpoint as a scraper sees it: one GET of
//! `/metrics` from inside the switch's namespace, the body read by an
//! independent parser (python3-prometheus-client's OpenMetrics parser), so
//! a test checks what a real scraper would accept.

use std::io::{Read, Write};
use std::process::{Command, Stdio};

use crate::Netns;

/// Prints every sample of the OpenMetrics text on stdin as JSON.
const PARSE: &str = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        out.append({'family': family.name, 'type': family.type, 'name': s.name, 'labels': s.labels, 'value': s.value})
print(json.dumps(out))
"#;

/// Whether the parser is installed; under CI=true its absence fails the
/// test (the package is in scripts/test-all's list), elsewhere it skips.
pub fn parser_present(test: &str) -> bool {
    let present = Command::new("/usr/bin/python3")
        .args(["-c", "import prometheus_client.openmetrics.parser"])
        .status()
        .is_ok_and(|s| s.success());
    if !present {
        assert!(std::env::var_os("CI").is_none(), "{test}: python3-prometheus-client is missing");
        eprintln!("skipping {test}: python3-prometheus-client is not installed");
    }
    present
}

/// One parsed scrape.
pub struct Scrape {
    /// The OpenMetrics text as served.
    pub body: String,
    /// Every sample: `family`, `type`, `name`, `labels`, `value`.
    pub samples: Vec<serde_json::Value>,
}

impl Scrape {
    /// GETs `http://{addr}/metrics` from inside `ns`; panics unless the
    /// answer is a 200 of OpenMetrics text the parser accepts whole.
    #[track_caller]
    pub fn get(ns: &Netns, addr: &str) -> Scrape {
        let text = ns.enter(|| {
            let mut stream = std::net::TcpStream::connect(addr).expect("connect to the metrics endpoint");
            stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: sw\r\n\r\n").expect("request");
            let mut answer = String::new();
            stream.read_to_string(&mut answer).expect("answer");
            answer
        });
        let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
        assert!(head.starts_with("HTTP/1.") && head.contains(" 200 "), "{head}");
        assert!(head.to_lowercase().contains("application/openmetrics-text"), "{head}");
        let mut child = Command::new("/usr/bin/python3")
            .args(["-c", PARSE])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3");
        child.stdin.take().expect("stdin").write_all(body.as_bytes()).expect("stdin");
        let out = child.wait_with_output().expect("parser");
        assert!(
            out.status.success(),
            "the parser refused the scrape: {}\n{body}",
            String::from_utf8_lossy(&out.stderr)
        );
        let samples = crate::swcli_json(&String::from_utf8_lossy(&out.stdout));
        let samples = samples.as_array().expect("samples").clone();
        Scrape { body: body.to_owned(), samples }
    }

    /// The value of sample `name` with (at least) `labels`, if scraped.
    pub fn find(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples
            .iter()
            .find(|s| s["name"] == name && labels.iter().all(|(k, v)| s["labels"][*k] == *v))
            .and_then(|s| s["value"].as_f64())
    }

    /// As [`Scrape::find`], panicking with the body when it is missing.
    #[track_caller]
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.find(name, labels).unwrap_or_else(|| panic!("no {name}{labels:?} in the scrape:\n{}", self.body))
    }
}
