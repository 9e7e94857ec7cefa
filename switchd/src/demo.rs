//! The built-in demo fabric (in progress).

use std::process::ExitCode;

pub fn main() -> ExitCode {
    eprintln!("switchd demo: the in-memory fabric is not built yet");
    ExitCode::FAILURE
}
