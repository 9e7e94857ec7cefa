//! `labs fault netem` where the kernel has `sch_netem`. This machine's
//! kernel (and CI's) has none, so `labs_faults`'s netem test says NOT
//! TESTED there; this test boots Debian's kernel, which has it as a module,
//! in a throwaway VM (`scripts/kernel-vm`: qemu, this machine's root
//! filesystem read-only) and runs that test inside:
//! `netem_delays_drops_and_clears_in_the_incast_lab` deploys the `incast`
//! lab with `labs deploy`, and measures with ping through `sw1` a 100 ms
//! delay (every round trip >= 100 ms), a 20% loss (5-45% of 200 echoes)
//! and the recovery once both are removed (replies undelayed and none lost
//! within 5 s of the removal command). Its figures are printed (`-- --nocapture`).
//!
//! It must have measured: a run that printed NOT TESTED fails here.

use fabric_tests::kernel_vm::{KERNEL_VM_PACKAGES, kernel_vm_missing, run_in_kernel_vm, test_binary};
use fabric_tests::workspace_binary;

const TEST: &str = "netem_delays_drops_and_clears_in_the_incast_lab";

#[test]
fn netem_takes_effect_and_clears_on_a_kernel_with_sch_netem() {
    if let Some(missing) = kernel_vm_missing() {
        let message = format!("labs_netem_vm: needs {missing} (packages: {})", KERNEL_VM_PACKAGES.join(" "));
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "{message} (CI=true: a missing prerequisite is a failure)"
        );
        eprintln!("SKIP {message}");
        return;
    }
    // Built here: the guest sees the target directory read-only.
    for binary in ["switchd", "swcli", "labs"] {
        workspace_binary(binary);
    }
    let binary = test_binary("labs_faults");
    let script = format!(
        "set -e\n\
         modprobe sch_netem && echo 'probe: sch_netem'\n\
         {} --exact --nocapture {TEST}\n",
        binary.display()
    );
    let run = run_in_kernel_vm(&["bash", "-c", &script], 600);
    eprintln!("{}", run.output);
    eprintln!("labs_netem_vm: {:.0}s in the VM", run.seconds);
    assert!(run.success(), "the test in the VM failed (exit {:?}); its output is above", run.code);
    assert!(run.output.contains("probe: sch_netem"), "the VM's kernel has sch_netem");
    assert!(!run.output.contains("NOT TESTED"), "the test in the VM did not measure netem");
    let result = run.output.lines().find(|l| l.starts_with("test result: ")).expect("a test result line");
    assert!(result.starts_with("test result: ok. 1 passed; 0 failed"), "{result}");
    for step in ["NETEM delay", "NETEM loss 20%", "NETEM removed"] {
        assert!(run.output.contains(step), "no {step:?} line: a step did not run");
    }
}
