//! The demo's EVPN shows: the in-memory speakers' tables as `swcli show bgp
//! l2vpn evpn` and `show evpn ...` have them (the daemon asks its speaker's
//! task; here the speakers are at hand), through the daemon's own
//! conversions in [`crate::evpn`].

use std::collections::HashSet;

use bgp_evpn::packet::Family;
use dataplane::wire::EthernetAddress;
use mgmt_cli::api::{self, Reply, Request};

use super::Fabric;

impl Fabric {
    /// `show bgp l2vpn evpn [route type N]` of `switch`.
    pub fn evpn_routes(&self, switch: &str, route_type: Option<u8>) -> api::BgpEvpnRoutes {
        let i = self.switch_index(switch);
        let config = self.switches[i].view.config.bgp.as_ref().expect("the demo's switches run BGP");
        let routes = self.bgp.speakers[i].as_ref().map(|bgp| bgp.speaker.routes(Family::L2vpnEvpn, None));
        crate::evpn::evpn_table(config, routes.unwrap_or_default(), route_type)
    }

    /// How many EVPN routes of each type (the index) `switch`'s BGP table
    /// holds; each path counted once per prefix.
    pub fn evpn_route_counts(&self, switch: &str) -> [usize; 6] {
        let mut counts = [0; 6];
        for route in self.evpn_routes(switch, None).routes {
            if let Some(count) = counts.get_mut(usize::from(route.route_type)) {
                *count += 1;
            }
        }
        counts
    }

    /// `show evpn vni|mac|arp-cache` and `show vrf` of `switch`.
    pub fn evpn_show(&self, switch: &str, request: &Request) -> Reply {
        let i = self.switch_index(switch);
        let state = self.bgp.speakers[i]
            .as_ref()
            .and_then(|bgp| bgp.speaker.evpn.as_ref())
            .map(|evpn| evpn.state(self.now()))
            .unwrap_or_default();
        crate::evpn::show_state(state, request)
    }

    /// `show ip route vrf NAME` of `switch`: the shim's table, with the
    /// routes the speaker installed there shown as BGP's (the daemon asks
    /// its speaker's installed table the same way).
    pub fn ip_routes_in_vrf(&self, switch: &str, vrf: &str) -> Vec<api::IpRoute> {
        let view = &self.switches[self.switch_index(switch)].view;
        let mut routes = view.ip_routes_in(api::AddressFamily::Ipv4, Some(vrf)).unwrap_or_default();
        let Reply::Vrfs(vrfs) = self.evpn_show(switch, &Request::ShowVrf) else { return routes };
        let from_bgp: HashSet<String> =
            vrfs.into_iter().filter(|v| v.name == vrf).flat_map(|v| v.routes).map(|r| r.prefix).collect();
        for route in routes.iter_mut().filter(|r| r.protocol == "kernel" && from_bgp.contains(&r.prefix)) {
            route.protocol = "bgp".into();
            route.distance = 20;
        }
        routes
    }

    /// The switch and VRF whose router MAC on L3VNI `vni` is `mac`, if any.
    pub fn router_mac_owner(&self, vni: u32, mac: EthernetAddress) -> Option<(&str, &str)> {
        self.switches.iter().find_map(|sw| {
            let evpn = sw.view.config.bgp.as_ref()?.evpn.as_ref()?;
            let vrf = evpn.vrfs.iter().find(|v| v.l3vni == vni && v.router_mac.0 == mac.0)?;
            Some((sw.name.as_str(), vrf.name.as_str()))
        })
    }

    fn switch_index(&self, name: &str) -> usize {
        self.switches.iter().position(|s| s.name == name).expect("known switch")
    }
}
