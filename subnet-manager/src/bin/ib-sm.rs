//! `ib-sm`: the subnet manager as a program.
//!
//! * `ib-sm run`: the SM over libibumad (real HCAs, or ibsim through
//!   umad2sim: `LD_PRELOAD=.../libumad2sim.so ib-sm run --once`);
//! * `ib-sm gen-fattree 650|1500|4100|10k|50k`: a fat tree in ibsim's
//!   format;
//! * `ib-sm inprocess NETFILE`: brings a topology up with simulated agents
//!   in process and prints the time each phase took;
//! * `ib-sm route NETFILE`: routes a topology offline and prints its
//!   balance.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use subnet_manager::agent::Agent;
use subnet_manager::fabric::Fabric;
use subnet_manager::interop::generate::FatTree;
use subnet_manager::interop::{ibnet, lfts_dump};
use subnet_manager::lid::{self, LidMap};
use subnet_manager::packet::AttributeId;
use subnet_manager::routing::{self, Engine, RoutingConfig};
use subnet_manager::sm::{SmConfig, SmEvent, SubnetManager};
use subnet_manager::topology::{NodeKind, PortRef, Topology};
use subnet_manager::transport::inband::{InBandTransport, serve_agent};
use subnet_manager::transport::{drive, umad::UmadTransport};

#[derive(Parser)]
#[command(about = "InfiniBand subnet manager")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct RoutingArgs {
    /// Routing engines in fallback order (OpenSM names).
    #[arg(long, default_value = "ftree,updn,minhop")]
    engine: String,
    #[arg(long, default_value_t = 0)]
    lmc: u8,
}

impl RoutingArgs {
    fn config(&self) -> Result<RoutingConfig, String> {
        if self.lmc > 7 {
            return Err(format!("--lmc {}: at most 7", self.lmc));
        }
        Ok(RoutingConfig { engines: Engine::parse_list(&self.engine)?, lmc: self.lmc, ..RoutingConfig::default() })
    }
}

/// The SM's keys (OpenSM's `sm_key`, `m_key`, `m_key_protection_level`,
/// `m_key_lease_period`); 0: none.
#[derive(clap::Args, Clone)]
struct KeyArgs {
    /// SMInfo SM_Key shared by the subnet's SMs (hex).
    #[arg(long, value_parser = parse_hex, default_value = "0")]
    sm_key: u64,
    /// M_Key set on every CA port and switch port 0 and carried in every SMP (hex).
    #[arg(long, value_parser = parse_hex, default_value = "0")]
    m_key: u64,
    /// M_KeyProtectBits, 0-3.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=3))]
    m_key_protect: u8,
    /// M_KeyLeasePeriod in seconds (0: never expires).
    #[arg(long, default_value_t = 0)]
    m_key_lease_s: u16,
}

#[derive(Subcommand)]
enum Command {
    /// Run the SM over libibumad.
    Run {
        #[command(flatten)]
        routing: RoutingArgs,
        /// GUID-to-LID map, read at start and written atomically on change.
        #[arg(long)]
        guid2lid: Option<PathBuf>,
        /// Write the LFTs in opensm-lfts.dump format once the fabric is up.
        #[arg(long)]
        lfts_dump: Option<PathBuf>,
        #[arg(long, default_value_t = 32)]
        window: usize,
        #[arg(long, default_value_t = 200)]
        timeout_ms: u64,
        #[arg(long, default_value_t = 3)]
        retries: u8,
        #[arg(long, default_value_t = 0)]
        priority: u8,
        /// Exit once the fabric is up (like `opensm -o`).
        #[arg(long)]
        once: bool,
        /// Give up after this many seconds.
        #[arg(long, default_value_t = 600)]
        limit_s: u64,
        /// Program SL-to-VL and VL arbitration tables (like OpenSM's --qos).
        #[arg(long)]
        qos: bool,
        /// Light sweep interval (OpenSM's -s, in ms here).
        #[arg(long, default_value_t = 10_000)]
        sweep_interval_ms: u64,
        /// Exit once the fabric is up after this many heavy sweeps (2: the
        /// first change routed around).
        #[arg(long)]
        until_sweep: Option<u64>,
        #[command(flatten)]
        keys: KeyArgs,
    },
    /// The SM in band: over 0x88B5 frames on these interfaces (port 1, 2,
    /// ...), its node a CA (one interface) or a switch (several).
    RunInband {
        #[command(flatten)]
        routing: RoutingArgs,
        #[arg(long = "iface", required = true)]
        interfaces: Vec<String>,
        /// Node GUID of the SM's node.
        #[arg(long, value_parser = parse_hex)]
        guid: u64,
        #[arg(long)]
        once: bool,
        #[arg(long, default_value_t = 60)]
        limit_s: u64,
    },
    /// A management agent (SMA) in band on these interfaces, until killed;
    /// prints a line for every Set it answers.
    Agent {
        #[arg(long = "iface", required = true)]
        interfaces: Vec<String>,
        #[arg(long, value_parser = parse_hex)]
        guid: u64,
        /// A switch (forwards directed routes, holds an LFT); else a CA.
        #[arg(long)]
        switch: bool,
        #[arg(long, default_value = "agent")]
        name: String,
    },
    /// Print a generated fat tree in ibsim's topology format.
    GenFattree { preset: String },
    /// Bring a topology up in process with simulated agents.
    Inprocess {
        /// ibnetdiscover/ibsim file, or a gen-fattree preset name.
        topology: String,
        #[command(flatten)]
        routing: RoutingArgs,
        #[arg(long, default_value_t = 64)]
        window: usize,
        /// Once up, take down the first switch-to-switch link of the first
        /// switch, hand its trap to the SM and time the reroute.
        #[arg(long)]
        fail_link: bool,
    },
    /// Route a topology offline and print the balance.
    Route {
        topology: String,
        #[command(flatten)]
        routing: RoutingArgs,
        #[arg(long)]
        lfts_dump: Option<PathBuf>,
    },
}

fn parse_hex(text: &str) -> Result<u64, String> {
    u64::from_str_radix(text.trim_start_matches("0x"), 16)
        .map_err(|_| format!("{text:?} is not a hexadecimal 64-bit number"))
}

fn load_topology(spec: &str) -> Result<Topology, String> {
    if let Some(shape) = FatTree::preset(spec) {
        return Ok(shape.build());
    }
    let text = std::fs::read_to_string(spec).map_err(|e| format!("{spec}: {e}"))?;
    ibnet::parse(&text).map_err(|e| format!("{spec}: {e}"))
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("ib-sm: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::RunInband { routing, interfaces, guid, once, limit_s } => {
            let config = SmConfig { routing: routing.config()?, timeout_ns: 100_000_000, ..SmConfig::default() };
            let kind = if interfaces.len() > 1 { NodeKind::Switch } else { NodeKind::Ca };
            let (agent, guids) = Agent::standalone(guid, kind, interfaces.len() as u8, "ib-sm");
            let sm_port_guid = guids[if kind == NodeKind::Switch { 0 } else { 1 }];
            let mut transport = InBandTransport::new(agent, guids, &interfaces).map_err(|e| format!("in band: {e}"))?;
            let mut sm = SubnetManager::new(config, LidMap::default());
            sm.set_port_guid(sm_port_guid);
            let started = Instant::now();
            let events = drive(
                &mut sm,
                &mut transport,
                Duration::from_secs(limit_s),
                |event| once && matches!(event, SmEvent::FabricUp { .. }),
                |now, event| eprintln!("{:>10.3} ms {event:?}", now as f64 / 1e6),
            )
            .map_err(|e| format!("in band: {e}"))?;
            let up = events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. }));
            println!(
                "fabric {} after {:.3} s: {} switches, {} CAs, {} SMPs sent, {} retried, {} failed",
                if up { "up" } else { "NOT up" },
                started.elapsed().as_secs_f64(),
                sm.topology().switch_count(),
                sm.topology().ca_count(),
                sm.requester_counters().sent,
                sm.requester_counters().retried,
                sm.counters.failed_smps,
            );
            Ok(if up { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Command::Agent { interfaces, guid, switch, name } => {
            let kind = if switch { NodeKind::Switch } else { NodeKind::Ca };
            let (mut agent, guids) = Agent::standalone(guid, kind, interfaces.len() as u8, &name);
            serve_agent(
                &mut agent,
                &guids,
                &interfaces,
                || false,
                |agent, smp| {
                    let what = match smp.attribute_id {
                        AttributeId::PortInfo => {
                            let port = if agent.is_switch() { smp.attribute_modifier as usize } else { 1 };
                            let info = &agent.ports[port.min(agent.ports.len() - 1)];
                            format!("PortInfo port {port} state {:?} lid {}", info.state(), info.lid)
                        }
                        AttributeId::LinearForwardingTable => {
                            let block = smp.attribute_modifier as usize;
                            let table = agent.switch.as_ref().map(|t| &t.lft[block * 64..(block + 1) * 64]);
                            format!("LFT block {block} {:?}", table.unwrap_or(&[]))
                        }
                        other => format!("{other:?}"),
                    };
                    println!("{name} set {what}");
                },
            )
            .map_err(|e| format!("agent: {e}"))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::GenFattree { preset } => {
            let shape = FatTree::preset(&preset)
                .ok_or_else(|| format!("unknown preset {preset:?} (650, 1500, 4100, 10k, 50k)"))?;
            print!("{}", ibnet::write(&shape.build()));
            Ok(ExitCode::SUCCESS)
        }
        Command::Route { topology, routing, lfts_dump } => {
            let config = routing.config()?;
            let mut topology = load_topology(&topology)?;
            lid::assign(&mut topology, config.lmc, 0, &LidMap::default()).map_err(|e| e.to_string())?;
            let started = Instant::now();
            let lfts = routing::route(&topology, &config).map_err(|refused| format!("{refused:?}"))?;
            let took = started.elapsed();
            let balance = routing::analyze(&topology, &lfts, config.lmc);
            println!(
                "engine {} routed {} switches, {} CAs in {:.3} s; routes per switch port max {} min {}, worst up/down spread {}, edge forwarding index {}, unreachable pairs {}, deadlock free per VL {:?}",
                lfts.engine.map_or("-", Engine::name),
                topology.switch_count(),
                topology.ca_count(),
                took.as_secs_f64(),
                balance.max_routes_per_port,
                balance.min_routes_per_port,
                balance.worst_spread,
                balance.edge_forwarding_index,
                balance.unreachable_pairs,
                balance.acyclic_per_vl,
            );
            if let Some(path) = lfts_dump {
                std::fs::write(&path, lfts_dump::write(&topology, &lfts, config.lmc)).map_err(|e| e.to_string())?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Inprocess { topology, routing, window, fail_link } => {
            let config = SmConfig { routing: routing.config()?, window, ..SmConfig::default() };
            let topology = load_topology(&topology)?;
            let host = topology.cas().next().ok_or("the topology has no CA for the SM")?;
            let (switches, cas) = (topology.switch_count(), topology.ca_count());
            let mut fabric = Fabric::new(topology);
            let mut sm = SubnetManager::new(config, LidMap::default());
            let started = Instant::now();
            let mut now = 0;
            sm.start(now);
            let events = fabric.run(&mut sm, host, 1, &mut now, 3_600_000_000_000, 0);
            let took = started.elapsed();
            let up = events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. }));
            println!(
                "in-process fabric of {switches} switches and {cas} CAs: {} in {:.3} s wall ({} SMPs carried)",
                if up { "discovered, routed, programmed and up" } else { "NOT up" },
                took.as_secs_f64(),
                fabric.counters.carried
            );
            if !up {
                return Ok(ExitCode::FAILURE);
            }
            if fail_link {
                let topology = &fabric.topology;
                let link = topology.switches().find_map(|s| {
                    (1..=topology.nodes[s].num_ports).find_map(|port| {
                        let remote = topology.nodes[s].ports[usize::from(port)].remote?;
                        topology.nodes[remote.node].is_switch().then_some(PortRef { node: s, port })
                    })
                });
                let link = link.ok_or("no switch-to-switch link to fail")?;
                let name = format!("{} port {}", topology.nodes[link.node].description, link.port);
                let blocks_before = sm.counters.lft_blocks_set;
                let trap = fabric.link_down(link, sm.sm_lid()).ok_or("no trap from the switch")?;
                let started = Instant::now();
                sm.handle_mad(now, &trap);
                let events = fabric.run(&mut sm, host, 1, &mut now, 3_600_000_000_000, 0);
                let took = started.elapsed();
                let rerouted = events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. }));
                let pairs = fabric.check_all_pairs();
                println!(
                    "link {name} down: {} in {:.3} s wall from the trap to new LFTs ({} LFT blocks rewritten); every HCA pair: {}",
                    if rerouted { "rerouted" } else { "NOT rerouted" },
                    took.as_secs_f64(),
                    sm.counters.lft_blocks_set - blocks_before,
                    match &pairs {
                        Ok(count) => format!("{count} reachable"),
                        Err(first) => format!("FAILED: {first}"),
                    }
                );
                if !rerouted || pairs.is_err() {
                    return Ok(ExitCode::FAILURE);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Run {
            routing,
            guid2lid,
            lfts_dump,
            window,
            timeout_ms,
            retries,
            priority,
            once,
            limit_s,
            qos,
            sweep_interval_ms,
            until_sweep,
            keys,
        } => {
            let config = SmConfig {
                routing: routing.config()?,
                window,
                timeout_ns: timeout_ms * 1_000_000,
                retries,
                priority: priority.min(15),
                program_qos: qos,
                light_sweep_interval_ns: sweep_interval_ms * 1_000_000,
                sm_key: keys.sm_key,
                m_key: keys.m_key,
                m_key_protect_bits: keys.m_key_protect,
                m_key_lease_period: keys.m_key_lease_s,
                ..SmConfig::default()
            };
            let lmc = config.routing.lmc;
            let lids = match &guid2lid {
                Some(path) => LidMap::load(path).map_err(|e| e.to_string())?,
                None => LidMap::default(),
            };
            let mut transport = UmadTransport::open(None, 0).map_err(|e| format!("umad: {e}"))?;
            transport.send_timeout_ms = timeout_ms as i32;
            let mut sm = SubnetManager::new(config, lids);
            let started = Instant::now();
            let events = drive(
                &mut sm,
                &mut transport,
                Duration::from_secs(limit_s),
                |event| match event {
                    SmEvent::FabricUp { sweep, .. } => once || until_sweep.is_some_and(|n| *sweep >= n),
                    _ => false,
                },
                |now, event| eprintln!("{:>10.3} ms {event:?}", now as f64 / 1e6),
            )
            .map_err(|e| format!("umad: {e}"))?;
            let up = events.iter().any(|e| matches!(e, SmEvent::FabricUp { .. }));
            if let Some(path) = guid2lid
                && sm.take_lids_changed()
            {
                let switches = sm.topology().nodes.iter().filter(|n| n.is_switch()).map(|n| n.guid).collect();
                sm.lid_map().store(&path, lmc, &switches).map_err(|e| e.to_string())?;
            }
            if let Some(path) = lfts_dump {
                std::fs::write(&path, lfts_dump::write(sm.topology(), sm.lfts(), lmc)).map_err(|e| e.to_string())?;
            }
            println!(
                "fabric {} after {:.3} s: {} switches, {} CAs, {} SMPs sent, {} retried, {} failed",
                if up { "up" } else { "NOT up" },
                started.elapsed().as_secs_f64(),
                sm.topology().switch_count(),
                sm.topology().ca_count(),
                sm.requester_counters().sent,
                sm.requester_counters().retried,
                sm.counters.failed_smps,
            );
            Ok(if up { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
    }
}
