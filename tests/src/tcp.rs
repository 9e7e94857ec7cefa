//! TCP echo across namespaces: proves a connection works end to end (several
//! segments each way), e.g. to a listener in a switch's namespace through its
//! dataplane.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::netns::Netns;

const PAYLOAD_LEN: usize = 20_000;
const TIMEOUT: Duration = Duration::from_secs(5);

/// Binds `addr` inside `ns` and echoes back what each of `connections`
/// clients sends until it shuts down its side.
pub fn echo_server(ns: &Netns, addr: &str, connections: usize) -> JoinHandle<()> {
    let (addr, name) = (addr.to_string(), ns.name().to_string());
    let listener = ns.enter(move || TcpListener::bind(&addr).unwrap_or_else(|e| panic!("bind {addr} in {name}: {e}")));
    std::thread::spawn(move || {
        for _ in 0..connections {
            let (mut conn, _) = listener.accept().expect("accept");
            conn.set_read_timeout(Some(TIMEOUT)).unwrap();
            let mut data = Vec::new();
            conn.read_to_end(&mut data).expect("read");
            conn.write_all(&data).expect("echo");
        }
    })
}

/// Connects from `client` to `addr`, sends 20 kB, and checks all of it comes back.
#[track_caller]
pub fn tcp_round_trip(client: &Netns, addr: &str) {
    let addr = addr.to_string();
    client.enter(move || {
        let mut stream = TcpStream::connect_timeout(&addr.parse().unwrap(), TIMEOUT)
            .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        let payload = vec![b'x'; PAYLOAD_LEN];
        stream.write_all(&payload).unwrap();
        stream.shutdown(std::net::Shutdown::Write).unwrap();
        let mut back = Vec::new();
        stream.read_to_end(&mut back).unwrap_or_else(|e| panic!("read from {addr}: {e}"));
        assert_eq!(back.len(), payload.len(), "echo of {addr} complete");
    })
}
