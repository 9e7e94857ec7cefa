//! The management API of `switchd`: the request and response types (shared
//! by the daemon and its clients), the wire codec, a blocking client, and the
//! renderers behind `swcli`.
//!
//! # Wire protocol
//!
//! JSON over a Unix stream socket, one value per line: the client writes one
//! [`Request`] followed by `\n`, the server answers one [`Response`] followed
//! by `\n`. A connection may carry any number of request/response pairs in
//! turn. See [`codec`].
//!
//! # Adding a command
//!
//! 1. a variant of [`Request`] and, carrying its answer, a variant of
//!    [`Reply`] whose payload is a type in [`api`];
//! 2. the handler in `switchd::mgmt` that builds that payload;
//! 3. an implementation of [`render::Render`] for the payload, and the
//!    subcommand in `swcli` (`src/bin/swcli.rs`) that maps to the request.

pub mod api;
pub mod candidate;
pub mod client;
pub mod codec;
pub mod ib;
pub mod lossless;
pub mod qos;
pub mod render;
mod render_qos;
pub mod shell;
pub mod table;

pub use api::{Reply, Request, Response};
pub use client::{Client, ClientError};

/// Environment variable that overrides the default socket path of `swcli`.
pub const SOCKET_ENV: &str = "SWCLI_SOCKET";

/// Where `switchd` listens when its config names no socket: one socket per
/// switch name, so several daemons (one per namespace or per simulated
/// switch) can share a host.
pub fn default_socket_path(switch_name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("/run/switchd/{switch_name}.sock"))
}

/// Where daemons put their sockets by default.
pub const SOCKET_DIR: &str = "/run/switchd";

/// The socket `swcli` uses when given no `--socket` and no [`SOCKET_ENV`]
/// and [`SOCKET_DIR`] does not hold exactly one socket.
pub const DEFAULT_CLIENT_SOCKET: &str = "/run/switchd/switch.sock";

/// The socket to talk to when none is named: the only `*.sock` in `dir`
/// (one daemon per namespace is the common case), else
/// [`DEFAULT_CLIENT_SOCKET`].
pub fn discover_socket(dir: &std::path::Path) -> std::path::PathBuf {
    let sockets: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|ext| ext == "sock"))
                .collect()
        })
        .unwrap_or_default();
    match <[_; 1]>::try_from(sockets) {
        Ok([only]) => only,
        Err(_) => std::path::PathBuf::from(DEFAULT_CLIENT_SOCKET),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_only_socket_is_found() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(discover_socket(dir.path()), std::path::PathBuf::from(DEFAULT_CLIENT_SOCKET));
        std::fs::write(dir.path().join("leaf1.sock"), b"").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"").unwrap();
        assert_eq!(discover_socket(dir.path()), dir.path().join("leaf1.sock"));
        std::fs::write(dir.path().join("leaf2.sock"), b"").unwrap();
        assert_eq!(discover_socket(dir.path()), std::path::PathBuf::from(DEFAULT_CLIENT_SOCKET));
    }
}
