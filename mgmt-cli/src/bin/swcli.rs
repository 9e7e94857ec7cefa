//! `swcli`: the operator's shell for `switchd`.
//!
//! `swcli` with no command opens the interactive shell on the local
//! daemon (from a terminal; from a pipe it runs one command per line).
//! `swcli [--socket PATH] [--json] COMMAND...` runs one command, the same
//! as in the shell: `swcli show ip route`, `swcli show bgp summary --json`.
//! Exit status: 0 done, 1 a check found an error, 2 the command did not parse, 3 switchd refused or
//! failed it, 4 switchd could not be reached. A reader that leaves early
//! (`swcli show ip route | head -1`) is not a failure: status 0, nothing
//! printed (not 141, a death by SIGPIPE, which `set -o pipefail` would
//! count as a failure).

use clap::Parser;
use mgmt_cli::shell::repl;
use mgmt_cli::shell::session::{Session, Status};
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "swcli",
    version,
    about = "The shell of switchd: no command opens it; a command runs once",
    after_help = "Commands: `swcli help` lists them; in the shell, `?` lists what may follow.\n\n\
                  Exit status: 0 done, 1 a check found an error, 2 the command did not parse, 3 switchd refused or \
                  failed it, 4 switchd could not be reached (commands from standard input: the last failure's); a reader \
                  that leaves early (`| head -1`, a broken pipe) ends it quietly with 0."
)]
struct Cli {
    /// The daemon's management socket [env: SWCLI_SOCKET] [default: the only
    /// socket in /run/switchd, else /run/switchd/switch.sock]
    #[arg(long, global = true)]
    socket: Option<PathBuf>,
    /// Print the answer as JSON instead of a table (as `| json`).
    #[arg(long, global = true)]
    json: bool,
    /// A command, as typed in the shell (`show interfaces`).
    words: Vec<String>,
}

fn exit_code(status: Status) -> ExitCode {
    match status {
        Status::Ok | Status::Exit => ExitCode::SUCCESS,
        Status::Failed => ExitCode::from(1),
        Status::Usage => ExitCode::from(2),
        Status::Refused => ExitCode::from(3),
        Status::Unreachable => ExitCode::from(4),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let socket = cli
        .socket
        .or_else(|| std::env::var_os(mgmt_cli::SOCKET_ENV).map(PathBuf::from))
        .unwrap_or_else(|| mgmt_cli::discover_socket(std::path::Path::new(mgmt_cli::SOCKET_DIR)));
    let mut session = match Session::connect(&socket) {
        Ok(session) => session,
        Err(error) => {
            eprintln!("swcli: {error}");
            return exit_code(Status::Unreachable);
        }
    };
    if !cli.words.is_empty() {
        let mut line = cli.words.join(" ");
        if cli.json {
            line.push_str(" | json");
        }
        // `show ip route` streams: a million routes start at once and
        // are never whole in memory.
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        let output = session.execute_to(&line, &mut out);
        drop(out);
        if !output.text.is_empty() {
            eprint!("swcli: {}", output.text.strip_prefix("error: ").unwrap_or(&output.text));
        }
        return exit_code(output.status);
    }
    if std::io::stdin().is_terminal() {
        return match repl::run(session) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("swcli: terminal: {error}");
                ExitCode::FAILURE
            }
        };
    }
    // A script on standard input: every line runs; the last failure is the status.
    let mut status = Status::Ok;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let output = session.execute_to(&line, &mut std::io::stdout().lock());
        // Unwritable only when the reader left: `Exit` says so already.
        let _ = std::io::stdout().lock().write_all(output.text.as_bytes());
        match output.status {
            Status::Exit => break,
            Status::Ok => {}
            failed => status = failed,
        }
    }
    exit_code(status)
}
