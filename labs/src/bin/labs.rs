//! `labs`: generate containerlab topologies and run them in network
//! namespaces.
//!
//! ```text
//! labs generate ai-rail --servers 16 --rails 8 --spines 4 [-o DIR]
//! labs generate fattree --radix 8 [--ib] [-o DIR]
//! labs deploy -t FILE            # one namespace per node, clab-LAB-NODE
//! labs inspect [-t FILE | --name LAB]
//! labs exec NODE [-t FILE | --name LAB] -- CMD...
//! labs graph -t FILE [-o OUT.svg|.png|.dot]
//! labs check [-t FILE | --name LAB] [--timeout SECS] [--pairs all|per-leaf|auto]
//! labs check lossless [-t FILE | --name LAB | --socket PATH...] [--json]   # exit 1 on an error
//! labs ping NODE ADDR... [--name LAB]  # one echo each, from the node, as check does
//! labs traffic [--name LAB] [--pattern all-to-all|incast] [--bytes 1M] [--rate 100M] [--dscp 26] [--json]
//! labs fault link-down|link-up NODE:ethN | netem NODE:ethN --delay MS --loss PCT | kill NODE | restart NODE
//! labs destroy [-t FILE | --name LAB]
//! labs sim --fattree 16 --workload allreduce --size 64MiB --lb flowlet --out DIR
//! labs sim compare --fattree 4 --workload permutation --lb ecmp,flowlet,spray --out DIR
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use labs::generate::{self, AiRail};
use labs::runner::{self, Lab};
use labs::topology::Topology;

#[derive(Parser)]
#[command(name = "labs", version, about = "containerlab topologies in network namespaces")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum PairsArg {
    All,
    PerLeaf,
    Auto,
}

/// Which lab: its topology file, or the name of a deployed one.
#[derive(Args, Clone)]
struct Which {
    #[arg(long, short = 't', global = true)]
    topo: Option<PathBuf>,
    #[arg(long, global = true)]
    name: Option<String>,
}

impl Which {
    fn lab_name(&self) -> Result<String, String> {
        match (&self.topo, &self.name) {
            (_, Some(name)) => Ok(name.clone()),
            (Some(path), None) => Topology::load(path).map(|t| t.name).map_err(|e| e.to_string()),
            (None, None) => runner::only_deployed_lab(),
        }
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum CheckKind {
    Lossless,
}

#[derive(Subcommand)]
enum Command {
    /// Write a generated lab (topology and node configs).
    Generate {
        #[command(subcommand)]
        shape: Shape,
        /// Output folder.
        #[arg(long, short = 'o', default_value = ".", global = true)]
        out: PathBuf,
    },
    /// Create the namespaces and links, start the nodes.
    Deploy {
        #[arg(long, short = 't')]
        topo: PathBuf,
    },
    /// The nodes of a deployed lab and their state.
    Inspect {
        #[command(flatten)]
        which: Which,
        #[arg(long)]
        json: bool,
    },
    /// Run a command in a node's namespace.
    Exec {
        node: String,
        #[command(flatten)]
        which: Which,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// The topology as Graphviz DOT (to stdout), or rendered by `dot`.
    Graph {
        #[arg(long, short = 't')]
        topo: PathBuf,
        /// `.dot`, `.svg` or `.png`; the latter two need Graphviz's `dot`.
        #[arg(long, short = 'o')]
        out: Option<PathBuf>,
    },
    /// Wait for convergence: BGP sessions up, routes installed, all-pairs
    /// ping; or, with `lossless`, the fabric-wide lossless check.
    Check {
        /// `lossless`: PFC priorities and MTU equal at both ends of each link,
        /// headroom for each link's speed and cable, ECN Kmin below XOFF, the
        /// watchdog on, the same DSCP -> TC -> PG -> queue chain everywhere.
        what: Option<CheckKind>,
        #[command(flatten)]
        which: Which,
        #[arg(long, default_value_t = 120)]
        timeout: u64,
        /// Which host pairs ping: `all`, `per-leaf` (every host to one host
        /// behind every leaf, every host address at least once) or `auto`
        /// (all up to 20,000 pairs, per leaf above).
        #[arg(long, value_enum, default_value_t = PairsArg::Auto)]
        pairs: PairsArg,
        /// Switches' management sockets instead of a lab's (lossless).
        #[arg(long)]
        socket: Vec<PathBuf>,
        /// The findings as JSON (lossless).
        #[arg(long)]
        json: bool,
    },
    /// Inject a fault.
    Fault {
        #[command(subcommand)]
        fault: Fault,
        #[command(flatten)]
        which: Which,
    },
    /// Remove every namespace, link and process of a lab.
    Destroy {
        #[command(flatten)]
        which: Which,
    },
    /// RoCE-like `fabric-host` flows between the hosts (all-to-all or
    /// incast), with goodput, PFC frames and drops.
    Traffic {
        #[command(flatten)]
        which: Which,
        #[arg(long, value_enum, default_value = "all-to-all")]
        pattern: labs::traffic::Pattern,
        /// Bytes per flow: 1M, 64K...
        #[arg(long, default_value = "1M", value_parser = labs::fabric_host::parse_bytes)]
        bytes: u64,
        /// Each sender's rate: 100M, 1G...
        #[arg(long, default_value = "100M", value_parser = labs::fabric_host::parse_rate)]
        rate: u64,
        /// 26: the lossless class of the labs' RoCE preset; 8: a lossy one.
        #[arg(long, default_value_t = 26)]
        dscp: u8,
        #[arg(long, default_value_t = 60)]
        timeout: u64,
        #[arg(long)]
        json: bool,
    },
    /// Ping addresses from a node, one echo each on one raw socket (as `check` does).
    Ping {
        node: String,
        #[command(flatten)]
        which: Which,
        addresses: Vec<std::net::Ipv4Addr>,
    },
    /// (internal) Watch a deployed lab's nodes and restart those that exit.
    Supervise { name: String },
    /// Run a fabric in the simulator (virtual time, the switches' own code).
    Sim(Box<labs::sim::cli::SimCommand>),
}

#[derive(Subcommand)]
enum Shape {
    /// Rail-optimised two-tier fabric: server NIC r goes to its group's rail-r leaf.
    AiRail {
        #[arg(long, default_value_t = 16)]
        servers: usize,
        #[arg(long, default_value_t = 8)]
        rails: usize,
        #[arg(long, default_value_t = 4)]
        spines: usize,
        #[arg(long, default_value_t = 8)]
        servers_per_leaf: usize,
        #[arg(long, default_value = "ai-rail")]
        name: String,
    },
    /// Two-level fat-tree of radix-K switches (K/2 spines, K leaves, K*K/2 hosts).
    Fattree {
        #[arg(long)]
        radix: usize,
        /// The IB-like plane: ports in `mode: ib`, the SM in spine1, HCAs (`fabric-host ib`).
        #[arg(long)]
        ib: bool,
        /// Default: fattree, or ib-fattree with --ib.
        #[arg(long)]
        name: Option<String>,
    },
    /// One switch and N hosts.
    Incast {
        #[arg(long, default_value_t = 4)]
        hosts: usize,
        #[arg(long, default_value = "incast")]
        name: String,
    },
    /// 2 spines, N leaves (the last one FRR unless --no-frr), hosts in two VRFs of two VNIs each.
    EvpnLeafSpine {
        #[arg(long, default_value_t = 4)]
        leaves: usize,
        #[arg(long)]
        no_frr: bool,
        #[arg(long, default_value = "evpn-leaf-spine")]
        name: String,
    },
}

#[derive(Subcommand)]
enum Fault {
    /// Take a link down at one end (`ip link set down`).
    LinkDown {
        endpoint: String,
    },
    LinkUp {
        endpoint: String,
    },
    /// Delay and/or loss on an interface (`tc qdisc netem`); 0 and 0 removes it.
    Netem {
        endpoint: String,
        #[arg(long, default_value_t = 0.0)]
        delay: f64,
        #[arg(long, default_value_t = 0.0)]
        loss: f64,
    },
    /// Kill a node's program (SIGKILL); the supervisor leaves it down.
    Kill {
        node: String,
    },
    /// Start a node's program again (killing it first if it runs).
    Restart {
        node: String,
    },
}

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so `labs sim ... | head -1` made `println!` panic once the reader left;
    // with the default action restored `labs` ends quietly, as `cat` and `ip` do.
    // SAFETY: called first in main, before any thread exists; SIG_DFL is a valid disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("labs: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<ExitCode, String> {
    match command {
        Command::Generate { shape, out } => {
            let generated = match shape {
                Shape::AiRail { servers, rails, spines, servers_per_leaf, name } => {
                    AiRail { servers, rails, spines, servers_per_leaf }.generate(&name)
                }
                Shape::Fattree { radix, ib: false, name } => {
                    generate::fattree(name.as_deref().unwrap_or("fattree"), radix)
                }
                Shape::Fattree { radix, ib: true, name } => {
                    generate::ib_fattree(name.as_deref().unwrap_or("ib-fattree"), radix)
                }
                Shape::Incast { hosts, name } => generate::incast(&name, hosts),
                Shape::EvpnLeafSpine { leaves, no_frr, name } => generate::evpn_leaf_spine(&name, leaves, !no_frr),
            }
            .map_err(|e| e.to_string())?;
            let path = generated.write(&out).map_err(|e| format!("writing into {}: {e}", out.display()))?;
            let nodes = &generated.topology.topology.nodes;
            println!(
                "wrote {} ({} nodes, {} links, {} configs)",
                path.display(),
                nodes.len(),
                generated.topology.topology.links.len(),
                generated.files.len()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Deploy { topo } => {
            let lab = Lab::deploy(&topo)?;
            print!("{}", lab.inspect_table());
            Ok(ExitCode::SUCCESS)
        }
        Command::Inspect { which, json } => {
            let lab = Lab::open(&which.lab_name()?)?;
            if json {
                println!("{}", lab.inspect_json());
            } else {
                print!("{}", lab.inspect_table());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Exec { node, which, command } => {
            let lab = Lab::open(&which.lab_name()?)?;
            let status = lab.exec(&node, &command)?;
            Ok(ExitCode::from(status.code().unwrap_or(1).clamp(0, 255) as u8))
        }
        Command::Graph { topo, out } => {
            let topology = Topology::load(&topo).map_err(|e| e.to_string())?;
            let dot = runner::graph_dot(&topology);
            match out {
                None => print!("{dot}"),
                Some(path) => {
                    runner::render_graph(&dot, &path)?;
                    println!("wrote {}", path.display());
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Check { what: Some(CheckKind::Lossless), which, socket, json, timeout, .. } => {
            let (profiles, findings) = if socket.is_empty() {
                labs::lossless::check_lab(&Lab::open(&which.lab_name()?)?, Duration::from_secs(timeout))?
            } else {
                labs::lossless::check(&socket)?
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&findings).map_err(|e| e.to_string())?);
            } else {
                print!("{}", labs::lossless::render(&profiles, &findings));
            }
            let failed = findings.iter().any(|f| f.severity == qos::lossless::Severity::Error);
            Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
        }
        Command::Check { which, timeout, pairs, .. } => {
            let lab = Lab::open(&which.lab_name()?)?;
            let pairs = match pairs {
                PairsArg::All => labs::check::Pairs::All,
                PairsArg::PerLeaf => labs::check::Pairs::PerLeaf,
                PairsArg::Auto => labs::check::Pairs::Auto,
            };
            let report = lab.check(Duration::from_secs(timeout), pairs)?;
            println!("{report}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Fault { fault, which } => {
            let lab = Lab::open(&which.lab_name()?)?;
            match fault {
                Fault::LinkDown { endpoint } => lab.link_set(&endpoint, false)?,
                Fault::LinkUp { endpoint } => lab.link_set(&endpoint, true)?,
                Fault::Netem { endpoint, delay, loss } => lab.netem(&endpoint, delay, loss)?,
                Fault::Kill { node } => lab.kill(&node)?,
                Fault::Restart { node } => lab.restart(&node)?,
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Destroy { which } => {
            let name = which.lab_name()?;
            let removed = runner::destroy(&name)?;
            println!("destroyed lab {name}: {removed}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Ping { node, which, addresses } => {
            let lab = Lab::open(&which.lab_name()?)?;
            let round = labs::ping::ping_round(&lab.node(&node)?.namespace, &addresses, Duration::from_secs(1))?;
            println!(
                "{} answered; unanswered: {:?}; no route: {:?}",
                round.answered, round.unanswered, round.unroutable
            );
            Ok(if round.unanswered.is_empty() && round.unroutable.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Traffic { which, pattern, bytes, rate, dscp, timeout, json } => {
            let lab = Lab::open(&which.lab_name()?)?;
            let options = labs::traffic::TrafficOptions {
                pattern,
                bytes,
                rate_bps: rate,
                dscp,
                timeout: Duration::from_secs(timeout),
            };
            let report = labs::traffic::run(&lab, &options)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
            } else {
                println!("{report}");
            }
            Ok(if report.complete() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Command::Supervise { name } => {
            runner::supervise(&name)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Sim(command) => {
            labs::sim::cli::main(*command)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
