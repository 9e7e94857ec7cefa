//! Shared helpers for the cross-crate tests in `tests/tests/`: a network
//! namespace harness ([`Netns`], [`veth`]), process guards that clean up even
//! when a test panics, and a [`Switchd`] launcher.
//!
//! Every name is unique per process and per call (`ft<pid>x<counter>...`),
//! so tests can run in parallel and a leftover from a crashed run never
//! collides with a new one.

pub mod bgp_speaker;
pub mod bird;
pub mod evpn;
pub mod fabric_host;
pub mod frr;
pub mod gobgp;
pub mod ibsim;
pub mod kernel;
pub mod kernel_vm;
pub mod labs;
pub mod metrics;
pub mod netns;
pub mod switchd;
pub mod tcp;
pub mod wait;

pub use kernel::{KernelVlans, kernel_can_tag, kernel_has_vrf, kernel_vlans};
pub use netns::{Netns, ProcessGuard, require_root_and_tools, unique_name, veth};
pub use switchd::{Switchd, TempDir, swcli_json, workspace_binary};
pub use tcp::{echo_server, tcp_round_trip};
pub use wait::poll_until;
