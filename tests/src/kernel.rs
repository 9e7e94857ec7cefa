//! What this machine's kernel can do for the kernel backend's VLANs, probed
//! the way the backend probes it (in a throwaway namespace).

use std::sync::OnceLock;

use crate::netns::Netns;

/// How the kernel backend bridges VLANs on this kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelVlans {
    /// `ip link add b type bridge vlan_filtering 1` works
    /// (`CONFIG_BRIDGE_VLAN_FILTERING`): one VLAN-aware bridge.
    pub vlan_filtering: bool,
    /// `ip link add link x name x.5 type vlan id 5` works
    /// (`CONFIG_VLAN_8021Q`): tagged members and SVIs.
    pub dot1q: bool,
}

impl KernelVlans {
    /// The bridge mode `switchd` reports for this kernel.
    pub fn mode(self) -> &'static str {
        if self.vlan_filtering { "vlan-aware" } else { "per-vlan" }
    }

    /// Whether a trunk (tagged VLAN members) can be bridged: a VLAN-aware
    /// bridge, or 802.1Q devices in per-VLAN bridges.
    pub fn tagging(self) -> bool {
        self.vlan_filtering || self.dot1q
    }
}

/// Probes once per test process.
pub fn kernel_vlans() -> KernelVlans {
    static PROBED: OnceLock<KernelVlans> = OnceLock::new();
    *PROBED.get_or_init(|| {
        let ns = Netns::new("kvp");
        let ip = |args: &[&str]| {
            let mut full = vec!["-n", ns.name()];
            full.extend_from_slice(args);
            crate::netns::run_status("ip", &full).status.success()
        };
        let vlan_filtering = ip(&["link", "add", "b0", "type", "bridge", "vlan_filtering", "1"]);
        let dot1q = ip(&["link", "add", "v0", "type", "veth", "peer", "name", "v1"])
            && ip(&["link", "add", "link", "v0", "name", "v0.5", "type", "vlan", "id", "5"]);
        KernelVlans { vlan_filtering, dot1q }
    })
}

/// Whether a test that needs the kernel to bridge tagged VLANs can run its
/// tagged part. A kernel built without both `CONFIG_BRIDGE_VLAN_FILTERING`
/// and `CONFIG_VLAN_8021Q` (this project's VMs run one) cannot bridge tagged
/// frames, and no package the test command installs changes that; the test
/// then checks the other side of the contract instead (a trunk config refused
/// whole, naming the port) and says so loudly, under `CI=true` too.
pub fn kernel_can_tag(test: &str) -> bool {
    let vlans = kernel_vlans();
    if vlans.tagging() {
        return true;
    }
    eprintln!(
        "NOTE {test}: this kernel has neither CONFIG_BRIDGE_VLAN_FILTERING nor CONFIG_VLAN_8021Q, \
         so the kernel backend cannot bridge tagged VLANs; checking that a trunk is refused instead"
    );
    false
}

/// Whether this kernel has l3mdev VRFs (`CONFIG_NET_VRF`), probed once in a
/// throwaway namespace. Where it has none, the kernel backend's VRF tests
/// run in `switchd_kernel_vm`'s VM.
pub fn kernel_has_vrf() -> bool {
    static PROBED: OnceLock<bool> = OnceLock::new();
    *PROBED.get_or_init(|| {
        let ns = Netns::new("kvrfp");
        crate::netns::run_status("ip", &["-n", ns.name(), "link", "add", "v", "type", "vrf", "table", "10"])
            .status
            .success()
    })
}
