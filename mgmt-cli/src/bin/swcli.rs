//! `swcli`: the operator's shell for `switchd`.
//!
//! `swcli [--socket PATH] [--json] show interfaces|mac|vxlan|neighbors|routes|lldp|running-config|drops`
//! `swcli show bgp summary|neighbors [ADDR]|ipv4 unicast [PREFIX]|ipv6 unicast [PREFIX]`, `swcli show ip|ipv6 route`
//! `swcli show interfaces counters|pfc counters|queue counters|queue wredcounters|queue watermark`,
//! `swcli show priority-group watermark headroom|shared|buffer pool|pfcwd stats|dlb`

use clap::{Parser, Subcommand};
use mgmt_cli::api::{AddressFamily, PgWatermarkKind};
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
    /// Ports and VLAN interfaces with their state and counters
    /// (`interfaces counters`: SONiC's per-port counters).
    Interfaces {
        #[command(subcommand)]
        what: Option<ShowInterfaces>,
    },
    /// PFC frames per port and priority (`pfc counters`).
    Pfc {
        #[command(subcommand)]
        what: Counters,
    },
    /// Egress queues: `queue counters|wredcounters|watermark`.
    Queue {
        #[command(subcommand)]
        what: ShowQueue,
    },
    /// Ingress priority groups: `priority-group watermark headroom|shared`.
    PriorityGroup {
        #[command(subcommand)]
        what: ShowPriorityGroup,
    },
    /// The shared buffer: `buffer pool`.
    Buffer {
        #[command(subcommand)]
        what: ShowBuffer,
    },
    /// The PFC watchdog: `pfcwd stats`.
    Pfcwd {
        #[command(subcommand)]
        what: ShowPfcwd,
    },
    /// Dynamic load balancing: groups, members, quality, flowlets, moves.
    Dlb,
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
}

#[derive(Subcommand, Clone, Copy)]
enum ShowInterfaces {
    Counters,
}

#[derive(Subcommand, Clone, Copy)]
enum Counters {
    Counters,
}

#[derive(Subcommand, Clone, Copy)]
enum ShowQueue {
    Counters,
    Wredcounters,
    Watermark,
}

#[derive(Subcommand, Clone, Copy)]
enum ShowPriorityGroup {
    Watermark {
        #[command(subcommand)]
        kind: WatermarkKind,
    },
}

#[derive(Subcommand, Clone, Copy)]
enum WatermarkKind {
    Headroom,
    Shared,
}

#[derive(Subcommand, Clone, Copy)]
enum ShowBuffer {
    Pool,
}

#[derive(Subcommand, Clone, Copy)]
enum ShowPfcwd {
    Stats,
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
    fn request(self) -> Request {
        let routes = |family, Safi::Unicast { prefix }| Request::ShowBgpRoutes { family, prefix };
        match self {
            Show::Interfaces { what: None } => Request::ShowInterfaces,
            Show::Interfaces { what: Some(ShowInterfaces::Counters) } => Request::ShowInterfacesCounters,
            Show::Pfc { what: Counters::Counters } => Request::ShowPfcCounters,
            Show::Queue { what: ShowQueue::Counters } => Request::ShowQueueCounters,
            Show::Queue { what: ShowQueue::Wredcounters } => Request::ShowQueueWredCounters,
            Show::Queue { what: ShowQueue::Watermark } => Request::ShowQueueWatermark,
            Show::PriorityGroup { what: ShowPriorityGroup::Watermark { kind } } => {
                Request::ShowPriorityGroupWatermark {
                    kind: match kind {
                        WatermarkKind::Headroom => PgWatermarkKind::Headroom,
                        WatermarkKind::Shared => PgWatermarkKind::Shared,
                    },
                }
            }
            Show::Buffer { what: ShowBuffer::Pool } => Request::ShowBufferPool,
            Show::Pfcwd { what: ShowPfcwd::Stats } => Request::ShowPfcwdStats,
            Show::Dlb => Request::ShowDlb,
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
        }
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
