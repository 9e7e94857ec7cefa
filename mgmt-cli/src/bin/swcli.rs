//! `swcli`: the operator's shell for `switchd`.
//!
//! `swcli [--socket PATH] [--json] show interfaces|mac|vxlan|neighbors|routes|lldp|running-config|drops`
//! `swcli show bgp summary|neighbors [ADDR]|ipv4 unicast [PREFIX]|ipv6 unicast [PREFIX]`, `swcli show ip|ipv6 route`
//! `swcli show bgp l2vpn evpn [route [type N]]`, `swcli show evpn vni [VNI]|mac vni VNI|all|arp-cache vni VNI|all`,
//! `swcli show vrf`

use clap::{Parser, Subcommand};
use mgmt_cli::api::AddressFamily;
use mgmt_cli::render::Render;
use mgmt_cli::{Client, Request};
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "swcli", version, about = "Query a running switchd")]
struct Cli {
    /// The daemon's management socket [env: SWCLI_SOCKET] [default: the only
    /// socket in /run/switchd, else /run/switchd/switch.sock]
    #[arg(long, global = true)]
    socket: Option<PathBuf>,
    /// Print the answer as JSON instead of a table.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show state.
    Show {
        #[command(subcommand)]
        what: Show,
    },
}

#[derive(Subcommand, Clone)]
enum Show {
    /// Ports and VLAN interfaces with their state and counters.
    Interfaces,
    /// The MAC address table.
    Mac,
    /// VTEP, VNI mappings, flood lists and remote VTEPs.
    Vxlan,
    /// The ARP and neighbour discovery cache.
    #[command(alias = "arp")]
    Neighbors,
    /// The routing table.
    Routes,
    /// LLDP neighbours.
    Lldp,
    /// The running configuration, as YAML.
    RunningConfig,
    /// Frames the pipeline dropped, by reason and ingress port.
    Drops,
    /// The BGP speaker: sessions, neighbours, tables.
    Bgp {
        #[command(subcommand)]
        what: ShowBgp,
    },
    /// The IPv4 routing table with each route's protocol (FRR's `show ip route`).
    Ip {
        #[command(subcommand)]
        what: ShowRib,
    },
    /// The IPv6 routing table with each route's protocol.
    Ipv6 {
        #[command(subcommand)]
        what: ShowRib,
    },
    /// EVPN: VNIs, MACs, ARP/ND suppression entries.
    Evpn {
        #[command(subcommand)]
        what: ShowEvpn,
    },
    /// IP-VRFs and the routes EVPN put in them.
    Vrf,
}

#[derive(Subcommand, Clone)]
enum ShowEvpn {
    /// MAC-VRFs and L3VNIs: RD, RTs, MAC and ARP counts, remote VTEPs.
    Vni { vni: Option<u32> },
    /// `mac vni VNI|all`: local and remote MACs with MAC mobility state.
    Mac {
        #[command(subcommand)]
        vni: VniSelector,
    },
    /// `arp-cache vni VNI|all`: ARP/ND bindings, local and from MAC+IP routes.
    ArpCache {
        #[command(subcommand)]
        vni: VniSelector,
    },
}

#[derive(Subcommand, Clone)]
enum VniSelector {
    /// A VNI, or `all`.
    Vni { which: String },
}

impl VniSelector {
    fn vni(&self) -> Result<Option<u32>, String> {
        let VniSelector::Vni { which } = self;
        match which.as_str() {
            "all" => Ok(None),
            n => n.parse().map(Some).map_err(|_| format!("{n:?}: expected a VNI or `all`")),
        }
    }
}

#[derive(Subcommand, Clone)]
enum ShowBgp {
    /// One line per neighbour: state, uptime, prefixes.
    Summary,
    /// Sessions in detail: negotiated capabilities, timers, message counters.
    #[command(alias = "neighbor")]
    Neighbors { address: Option<IpAddr> },
    /// The IPv4 unicast table (every path of every prefix, or of one).
    Ipv4 {
        #[command(subcommand)]
        safi: Safi,
    },
    /// The IPv6 unicast table.
    Ipv6 {
        #[command(subcommand)]
        safi: Safi,
    },
    /// `l2vpn evpn [route [type N]]`: the EVPN table.
    L2vpn {
        #[command(subcommand)]
        safi: EvpnSafi,
    },
}

#[derive(Subcommand, Clone)]
enum EvpnSafi {
    Evpn {
        /// `route`, `route type N` (1-5, or macip, multicast, es, prefix, ead).
        words: Vec<String>,
    },
}

fn evpn_route_type(words: &[String]) -> Result<Option<u8>, String> {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    match words[..] {
        [] | ["route"] => Ok(None),
        ["route", "type", t] => match t {
            "1" | "ead" => Ok(Some(1)),
            "2" | "macip" => Ok(Some(2)),
            "3" | "multicast" => Ok(Some(3)),
            "4" | "es" => Ok(Some(4)),
            "5" | "prefix" => Ok(Some(5)),
            _ => Err(format!("{t:?}: route type is 1-5, ead, macip, multicast, es or prefix")),
        },
        _ => Err(format!("{:?}: expected `route [type N]`", words.join(" "))),
    }
}

#[derive(Subcommand, Clone)]
enum Safi {
    Unicast {
        /// A prefix (`10.0.0.0/24`), or an address for the longest prefix holding it.
        prefix: Option<String>,
    },
}

#[derive(Subcommand, Clone, Copy)]
enum ShowRib {
    Route,
}

impl Show {
    fn request(self) -> Result<Request, String> {
        let routes = |family, Safi::Unicast { prefix }| Request::ShowBgpRoutes { family, prefix };
        Ok(match self {
            Show::Interfaces => Request::ShowInterfaces,
            Show::Mac => Request::ShowMac,
            Show::Vxlan => Request::ShowVxlan,
            Show::Neighbors => Request::ShowNeighbors,
            Show::Routes => Request::ShowRoutes,
            Show::Lldp => Request::ShowLldp,
            Show::RunningConfig => Request::ShowRunningConfig,
            Show::Drops => Request::ShowDrops,
            Show::Bgp { what: ShowBgp::Summary } => Request::ShowBgpSummary,
            Show::Bgp { what: ShowBgp::Neighbors { address } } => Request::ShowBgpNeighbors { address },
            Show::Bgp { what: ShowBgp::Ipv4 { safi } } => routes(AddressFamily::Ipv4, safi),
            Show::Bgp { what: ShowBgp::Ipv6 { safi } } => routes(AddressFamily::Ipv6, safi),
            Show::Ip { what: ShowRib::Route } => Request::ShowIpRoute { family: AddressFamily::Ipv4 },
            Show::Ipv6 { what: ShowRib::Route } => Request::ShowIpRoute { family: AddressFamily::Ipv6 },
            Show::Bgp { what: ShowBgp::L2vpn { safi: EvpnSafi::Evpn { words } } } => {
                Request::ShowBgpEvpn { route_type: evpn_route_type(&words)? }
            }
            Show::Evpn { what: ShowEvpn::Vni { vni } } => Request::ShowEvpnVni { vni },
            Show::Evpn { what: ShowEvpn::Mac { vni } } => Request::ShowEvpnMac { vni: vni.vni()? },
            Show::Evpn { what: ShowEvpn::ArpCache { vni } } => Request::ShowEvpnArpCache { vni: vni.vni()? },
            Show::Vrf => Request::ShowVrf,
        })
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let socket = cli
        .socket
        .or_else(|| std::env::var_os(mgmt_cli::SOCKET_ENV).map(PathBuf::from))
        .unwrap_or_else(|| mgmt_cli::discover_socket(std::path::Path::new(mgmt_cli::SOCKET_DIR)));
    let request = match cli.command {
        Command::Show { what } => what.request(),
    };
    let request = match request {
        Ok(request) => request,
        Err(error) => {
            eprintln!("swcli: {error}");
            return ExitCode::FAILURE;
        }
    };
    let reply = Client::connect(&socket).and_then(|mut client| client.request(&request));
    match reply {
        Ok(reply) => {
            if cli.json {
                // The payload alone: scripts index it directly (`.[0].mac`).
                let value = serde_json::to_value(&reply).expect("reply serializes");
                let data = value.get("data").cloned().unwrap_or(value);
                println!("{}", serde_json::to_string_pretty(&data).expect("json value serializes"));
            } else {
                print!("{}", reply.render());
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("swcli: {error}");
            ExitCode::FAILURE
        }
    }
}
