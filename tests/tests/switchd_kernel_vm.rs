//! The kernel backend's VLAN-aware mode on a kernel that has it. This
//! machine's kernel may lack `CONFIG_BRIDGE_VLAN_FILTERING` and
//! `CONFIG_VLAN_8021Q` (the backend then falls back to one bridge per VLAN),
//! so the test boots Debian's kernel, which has both, in a throwaway VM
//! (`scripts/kernel-vm`: qemu, this machine's root filesystem read-only)
//! and runs there the kernel-backend tests that depend on the bridge mode:
//!
//! - `switchd_kernel`: what the shim installed is what `bridge -j vlan`
//!   (PVID, untagged), `bridge -j fdb` and `ip -j -d link` show, on the one
//!   VLAN-aware bridge `nos-br` with its SVI an 802.1Q device; a trunk's and
//!   a native VLAN's flags, moved by a commit; hosts ping across the VLAN,
//!   routed and over VXLAN to a kernel VTEP (the vxlan device a port of the
//!   VLAN-aware bridge);
//! - `switchd_kernel`: a second virtual router is an l3mdev VRF device
//!   with its own table (`CONFIG_NET_VRF`), hosts routed through it;
//! - `switchd_kernel`: symmetric IRB, two VRFs each with an L3VNI (a
//!   bridge SVI in the VRF holding the vxlan device), routes through
//!   tunnel-encap next hops read back and routed to a kernel VTEP laid out
//!   as zebra's; ARP suppression on the VLAN-aware bridge (`neigh_suppress`
//!   on the vxlan port, the binding on the 802.1Q SVI);
//! - `switchd_l2` on the kernel backend: learning, flooding, and the trunk
//!   (tagged VLAN 10 in, tagged VLAN 10 out) through the filtering bridge;
//! - `evpn_irb` on the kernel backend: symmetric IRB through `switchd`,
//!   leaves and spine on the kernel, the L3VNI, its routes, neighbours and
//!   router-MAC FDB entries from BGP-EVPN's MAC+IP routes, hosts in two VNIs
//!   routed across the fabric on the L3VNI;
//!
//! Inside the VM the probe must find `vlan_filtering`, and each test must
//! report the bridge mode it ran (`vlan-aware`): a VM that fell back to the
//! per-VLAN model fails here.

use fabric_tests::kernel_vm::{KERNEL_VM_PACKAGES, kernel_vm_missing, run_in_kernel_vm, test_binary};
use fabric_tests::workspace_binary;

/// (test target, the tests of it to run in the VM).
const IN_THE_VM: &[(&str, &[&str])] = &[
    (
        "switchd_kernel",
        &[
            "the_kernel_holds_what_the_shim_installed_and_forwards",
            "fdb_entries_the_shim_installs_are_what_bridge_fdb_shows",
            "vlan_aware_membership_is_what_bridge_vlan_shows",
            "a_virtual_router_is_a_vrf_device_with_its_own_table",
            "an_l3vni_routes_each_vrf_across_the_overlay_as_zebra_lays_it_out",
            "an_arp_request_for_a_suppressed_binding_is_answered_by_the_bridge",
        ],
    ),
    ("switchd_l2", &["on_the_kernel_backend_two_hosts_on_one_vlan_ping_and_are_learned_on_their_ports"]),
    ("evpn_irb", &["kernel_leaves_route_hosts_in_two_vnis_over_the_l3vni"]),
];

#[test]
fn the_kernel_backend_runs_vlan_aware_on_a_kernel_with_vlan_filtering() {
    if let Some(missing) = kernel_vm_missing() {
        let message = format!("switchd_kernel_vm: needs {missing} (packages: {})", KERNEL_VM_PACKAGES.join(" "));
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "{message} (CI=true: a missing prerequisite is a failure)"
        );
        eprintln!("SKIP {message}");
        return;
    }
    // Built here: the guest sees the target directory read-only.
    workspace_binary("switchd");
    workspace_binary("swcli");
    let mut script = String::from(
        "set -e\n\
         ip link add kvmprobe type bridge vlan_filtering 1 && ip link del kvmprobe && echo 'probe: vlan_filtering'\n",
    );
    for (target, tests) in IN_THE_VM {
        let binary = test_binary(target);
        script.push_str(&format!("{} --exact --nocapture --test-threads=3 {}\n", binary.display(), tests.join(" ")));
    }
    let run = run_in_kernel_vm(&["bash", "-c", &script], 600);
    eprintln!("{}", run.output);
    eprintln!("switchd_kernel_vm: {:.0}s in the VM", run.seconds);
    assert!(run.success(), "the tests in the VM failed (exit {:?}); their output is above", run.code);
    assert!(run.output.contains("probe: vlan_filtering"), "the VM's kernel has VLAN filtering");
    // One `test result` line per binary, in order, with all its tests
    // passed (with --nocapture a test's own lines split "test X ... ok").
    let results: Vec<&str> = run.output.lines().filter(|l| l.starts_with("test result: ")).collect();
    assert_eq!(results.len(), IN_THE_VM.len(), "one result per test binary: {results:?}");
    for ((target, tests), result) in IN_THE_VM.iter().zip(&results) {
        let want = format!("test result: ok. {} passed; 0 failed", tests.len());
        assert!(result.starts_with(&want), "{target}: {result}, want {want}");
    }
    // Each ran the VLAN-aware model, and said so.
    assert!(run.output.contains("switchd_kernel: bridge mode vlan-aware"), "switchd_kernel ran VLAN-aware");
    assert!(run.output.contains("fdb read-back in bridge mode vlan-aware"));
    assert!(run.output.contains("arp suppression in bridge mode vlan-aware"));
    assert!(!run.output.contains("NOTE switchd_kernel"), "no switchd_kernel test skipped its part");
    assert!(run.output.contains("kernel bridge mode on this kernel: ") && !run.output.contains("NOTE switchd_l2"));
    assert!(
        run.output.contains("evpn_irb: kernel leaves routed over the L3VNI") && !run.output.contains("NOTE evpn_irb")
    );
}
