//! The `swcli` binary against a stand-in server that answers one canned
//! reply: what it sends, how it prints tables and JSON, and its errors.

use mgmt_cli::api::*;
use mgmt_cli::codec;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::{Command, Output};

/// Serves one connection: records the request line, answers `response`.
fn serve_once(path: &Path, response: Response) -> std::thread::JoinHandle<String> {
    let listener = UnixListener::bind(path).unwrap();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        (&stream).write_all(&codec::encode(&response).unwrap()).unwrap();
        line
    })
}

fn swcli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_swcli")).args(args).env_remove("SWCLI_SOCKET").output().unwrap()
}

fn mac_reply() -> Response {
    Response::Ok {
        reply: Reply::Mac(vec![MacEntry {
            vlan: 10,
            mac: "02:00:00:00:00:01".into(),
            destination: "eth1".into(),
            kind: "dynamic".into(),
            age_secs: Some(4),
        }]),
    }
}

#[test]
fn show_mac_prints_an_aligned_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sock");
    let server = serve_once(&path, mac_reply());
    let output = swcli(&["--socket", path.to_str().unwrap(), "show", "mac"]);
    assert!(output.status.success());
    assert_eq!(server.join().unwrap(), "{\"request\":\"show_mac\"}\n");
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "VLAN  MAC                DESTINATION  TYPE     AGE\n\
         ----  -----------------  -----------  -------  ---\n\
         10    02:00:00:00:00:01  eth1         dynamic  4s\n\
         1 entries\n"
    );
}

#[test]
fn json_flag_prints_the_payload() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sock");
    let server = serve_once(&path, mac_reply());
    // The socket from the environment this time.
    let output = Command::new(env!("CARGO_BIN_EXE_swcli"))
        .args(["show", "mac", "--json"])
        .env("SWCLI_SOCKET", &path)
        .output()
        .unwrap();
    assert!(output.status.success());
    server.join().unwrap();
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value[0]["mac"], "02:00:00:00:00:01");
    assert_eq!(value[0]["destination"], "eth1");
    assert_eq!(value[0]["vlan"], 10);
}

#[test]
fn server_error_and_missing_socket_fail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sock");
    let server = serve_once(&path, Response::Error { message: "no such thing".into() });
    let output = swcli(&["--socket", path.to_str().unwrap(), "show", "routes"]);
    assert_eq!(server.join().unwrap(), "{\"request\":\"show_routes\"}\n");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("switchd: no such thing"));

    let output = swcli(&["--socket", dir.path().join("absent.sock").to_str().unwrap(), "show", "mac"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot connect"));
}

#[test]
fn exit_status_says_what_failed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sock");
    // A server that accepts and answers nothing: a bad command never asks it.
    let listener = UnixListener::bind(&path).unwrap();
    let output = swcli(&["--socket", path.to_str().unwrap(), "show", "bogus"]);
    assert_eq!(output.status.code(), Some(2), "a command that does not parse");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("\"bogus\"") && stderr.contains("interfaces"), "{stderr}");
    drop(listener);

    let server = serve_once(&dir.path().join("t.sock"), Response::Error { message: "permission denied".into() });
    let output = swcli(&["--socket", dir.path().join("t.sock").to_str().unwrap(), "save"]);
    assert_eq!(server.join().unwrap(), "{\"request\":\"save\"}\n");
    assert_eq!(output.status.code(), Some(3), "refused by switchd");

    let output = swcli(&["--socket", dir.path().join("absent.sock").to_str().unwrap(), "show", "mac"]);
    assert_eq!(output.status.code(), Some(4), "no daemon");
}
