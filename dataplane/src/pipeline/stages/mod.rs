//! The stage code: what runs per frame (and per timer tick) over the tables.
//! Each stage is a set of methods on [`Stages`] (the tables and the
//! forwarding state borrowed for one call), in the order a frame meets them:
//! `ingress` (port, link-level frames), `bridge` (802.1Q classification,
//! learning, FDB lookup, flooding, egress tagging, with `suppression`
//! answering ARP/ND for EVPN-known hosts instead of flooding), `router` (LPM in the
//! ingress VRF, ECMP, TTL, MTU), `fragment` (IPv4 larger than the
//! egress MTU), `neighbor` (ARP/ND), `icmp` (errors), `redirect` (ICMP redirects),
//! `vxlan` (encapsulation, decapsulation, head-end replication).

mod bridge;
mod context;
mod fragment;
mod icmp;
mod ingress;
mod neighbor;
mod redirect;
mod router;
mod suppression;
mod vxlan;

pub(crate) use context::{ForwardingState, Stages};
