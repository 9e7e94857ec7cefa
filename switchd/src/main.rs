//! `switchd`: the switch daemon.
//!
//! ```text
//! switchd run   --config FILE    # run the switch
//! switchd check --config FILE    # validate only; exit 2 and name each bad field if invalid
//! switchd demo                   # a built-in in-memory fabric; no file, no root
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use switchd::config::Config;

#[derive(Parser)]
#[command(name = "switchd", version, about = "Software switch daemon")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the switch with a startup config.
    Run {
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Validate a config and exit.
    Check {
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Run the built-in demo fabric in memory and print what happened.
    Demo,
}

/// Exit status of a refused config, distinct from runtime failures (1).
const EXIT_INVALID_CONFIG: u8 = 2;

fn init_tracing(config_level: Option<&str>) {
    use tracing_subscriber::EnvFilter;
    // RUST_LOG wins over the config, so an operator can debug without editing it.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(config_level.unwrap_or("info")));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi).try_init();
}

fn load(path: &Path) -> Result<Config, ExitCode> {
    Config::load(path).map_err(|errors| {
        eprint!("{errors}");
        ExitCode::from(EXIT_INVALID_CONFIG)
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check { config: path } => match load(&path) {
            Ok(config) => {
                println!(
                    "config {} is valid: switch {}, {} ports, {} VLANs, {} static routes{}",
                    path.display(),
                    config.name,
                    config.ports.len(),
                    config.vlans.len(),
                    config.routes.len(),
                    if config.vxlan.is_some() { ", VXLAN" } else { "" }
                );
                ExitCode::SUCCESS
            }
            Err(code) => code,
        },
        Command::Run { config: path } => {
            // Validate everything before touching any interface.
            let config = match load(&path) {
                Ok(config) => config,
                Err(code) => return code,
            };
            init_tracing(config.log_level.map(|l| l.as_str()));
            limit_malloc_arenas();
            let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() {
                Ok(runtime) => runtime,
                Err(error) => {
                    eprintln!("switchd: cannot start the runtime: {error}");
                    return ExitCode::FAILURE;
                }
            };
            match runtime.block_on(switchd::daemon::run(config, path)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    tracing::error!(%error, "switchd failed");
                    eprintln!("switchd: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Demo => {
            init_tracing(Some("warn"));
            switchd::demo::main()
        }
    }
}

/// At most two malloc arenas unless `MALLOC_ARENA_MAX` says otherwise.
/// glibc gives each thread that allocates its own arena (up to 8 a core),
/// and each keeps its own free pages resident: with the runtime's worker,
/// the forwarding, LLDP and metrics threads that was several MiB of an idle
/// switchd, of which a lab runs a hundred (docs/benchmarks.md, "Labs").
#[cfg(target_env = "gnu")]
fn limit_malloc_arenas() {
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets an allocator parameter; called before any
        // thread of ours starts.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, 2) };
    }
}

#[cfg(not(target_env = "gnu"))]
fn limit_malloc_arenas() {}
