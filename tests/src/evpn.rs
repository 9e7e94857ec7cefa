//! What the EVPN namespace tests share: the spine between their two leaves.

/// `switchd` config of the spine `s1`: eBGP unnumbered to the leaves on
/// eth1 and eth2, IPv4 unicast and L2VPN EVPN on each session.
pub fn spine_config() -> String {
    "name: s1
lldp: { enabled: false }
loopback: [10.255.1.1/32]
ports:
  - { name: eth1, mode: routed, addresses: [10.1.0.1/31] }
  - { name: eth2, mode: routed, addresses: [10.2.0.1/31] }
bgp:
  asn: 65000
  timers: { hold_time: 9, connect_retry: 2 }
  redistribute: [loopback]
  neighbors:
    - { interface: eth1, remote_as: external, families: [ipv4-unicast, l2vpn-evpn] }
    - { interface: eth2, remote_as: external, families: [ipv4-unicast, l2vpn-evpn] }
"
    .into()
}
