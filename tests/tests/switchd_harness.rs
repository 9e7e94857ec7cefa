//! The namespace harness cleans up after a failing test: namespaces
//! deleted, processes in them killed, even when the test panics.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use fabric_tests::{Netns, require_root_and_tools, veth};

fn namespace_exists(name: &str) -> bool {
    std::path::Path::new("/run/netns").join(name).exists()
}

fn process_alive(pid: u32) -> bool {
    // A zombie is reaped by its parent guard; /proc tells whether it runs.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| stat.split_whitespace().nth(2).is_none_or(|state| state != "Z"))
        .unwrap_or(false)
}

#[test]
fn a_panicking_test_leaves_no_namespace_and_no_process() {
    if !require_root_and_tools("switchd_harness", &["ip", "sleep"]) {
        return;
    }
    let mut names = Vec::new();
    let mut pids = Vec::new();
    let result = catch_unwind(AssertUnwindSafe(|| {
        let a = Netns::new("hna");
        let b = Netns::new("hnb");
        veth(&a, "eth0", &b, "eth0");
        names.push(a.name().to_string());
        names.push(b.name().to_string());
        // One process under a guard, one started behind the harness's back.
        let guarded = a.spawn(&["sleep", "1000"]);
        pids.push(guarded.id());
        let stray = b.command("sleep").arg("1000").spawn().expect("spawn");
        pids.push(stray.id());
        std::mem::forget(stray);
        panic!("the test fails here");
    }));
    assert!(result.is_err());
    for name in &names {
        assert!(!namespace_exists(name), "namespace {name} left behind");
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while pids.iter().any(|&pid| process_alive(pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in pids {
        assert!(!process_alive(pid), "process {pid} left running");
    }
}
