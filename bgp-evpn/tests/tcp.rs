//! Two speakers over real TCP on loopback addresses, through `BgpSpeaker`.

use std::net::IpAddr;
use std::time::Duration;

use bgp_evpn::config::NeighborConfig;
use bgp_evpn::neighbor::State;
use bgp_evpn::packet::{Family, Nlri};
use bgp_evpn::sink::TableSink;
use bgp_evpn::{BgpConfig, BgpSpeaker};

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn config(asn: u32, me: &str, peer: &str, peer_as: u32, port: u16) -> BgpConfig {
    let mut c = BgpConfig::new(asn, me.parse().unwrap());
    c.listen_address = ip(me);
    c.listen_port = port;
    c.timers.hold_time = 3;
    c.timers.connect_retry = 1;
    let mut n = NeighborConfig::new(ip(peer), peer_as);
    n.port = port;
    n.local_address = Some(ip(me));
    c.neighbors.push(n);
    c
}

async fn wait_for(what: &str, mut cond: impl AsyncFnMut() -> bool) {
    for _ in 0..200 {
        if cond().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_speakers_over_tcp_exchange_routes_and_close_cleanly() {
    // Both sides connect actively: whatever collides is resolved by §6.8.
    let port = 20000 + (std::process::id() % 20000) as u16;
    let mut a_cfg = config(65001, "127.0.0.1", "127.0.0.2", 65002, port);
    a_cfg.networks = vec!["10.10.0.0/16".parse().unwrap(), "2001:db8:10::/48".parse().unwrap()];
    let b_cfg = config(65002, "127.0.0.2", "127.0.0.1", 65001, port);
    let table = TableSink::default();
    let a = BgpSpeaker::spawn(a_cfg, Box::new(TableSink::default())).await.unwrap();
    let b = BgpSpeaker::spawn(b_cfg, Box::new(table.clone())).await.unwrap();

    let v4: Nlri = "10.10.0.0/16".parse().unwrap();
    wait_for("route on b", async || table.0.lock().unwrap().ip_route(&v4) == Some(vec![ip("127.0.0.1")])).await;
    let s = &b.summary().await[0];
    assert_eq!(s.state, State::Established);
    assert_eq!(s.prefixes_received, 2);
    let routes = b.routes(Family::Ipv6Unicast, None).await;
    assert_eq!(routes[0].paths[0].as_path, "65001");

    // Withdraw propagates.
    a.remove_network(v4).await;
    wait_for("withdraw on b", async || table.0.lock().unwrap().ip_route(&v4).is_none()).await;
    assert_eq!(b.loc_rib_len().await, 1);

    // Keepalives hold the 3 s session past its hold time.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(b.summary().await[0].state, State::Established);

    // An administrative shutdown reaches b as a NOTIFICATION.
    a.shutdown().await;
    wait_for("b sees the cease", async || {
        let s = &b.summary().await[0];
        s.state != State::Established && s.last_error.as_deref().is_some_and(|e| e.contains("Cease"))
    })
    .await;
    assert!(table.0.lock().unwrap().is_empty());
}

/// A raw peer over TCP: hand-made bytes in, our replies out.
mod raw {
    use super::*;
    use bgp_evpn::packet::AfiSafi;
    use bgp_evpn::packet::message::frame_len;
    use bgp_evpn::packet::{Capability, DecodeContext, Message, Open, decode_message};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpSocket, TcpStream};

    pub struct RawPeer {
        pub stream: TcpStream,
        buf: Vec<u8>,
    }

    impl RawPeer {
        pub async fn connect(local: &str, remote: std::net::SocketAddr) -> RawPeer {
            let socket = TcpSocket::new_v4().unwrap();
            socket.bind(std::net::SocketAddr::new(ip(local), 0)).unwrap();
            RawPeer { stream: socket.connect(remote).await.unwrap(), buf: Vec::new() }
        }

        pub async fn send(&mut self, bytes: &[u8]) {
            self.stream.write_all(bytes).await.unwrap();
        }

        /// The next message, or None on EOF/timeout.
        pub async fn recv(&mut self) -> Option<Message> {
            loop {
                if let Ok(Some(len)) = frame_len(&self.buf, 65535) {
                    let msg = decode_message(&self.buf[..len]).ok();
                    self.buf.drain(..len);
                    return msg;
                }
                let mut chunk = [0u8; 4096];
                let n = tokio::time::timeout(Duration::from_secs(5), self.stream.read(&mut chunk)).await.ok()?.ok()?;
                if n == 0 {
                    return None;
                }
                self.buf.extend_from_slice(&chunk[..n]);
            }
        }

        /// OPEN and KEEPALIVE exchange up to Established.
        pub async fn establish(&mut self, asn: u32, id: [u8; 4]) {
            let open = Open::new(asn, 30, id.into(), vec![Capability::Multiprotocol(AfiSafi::IPV4_UNICAST)]);
            self.send(&Message::Open(open).to_bytes(&DecodeContext::default())).await;
            self.send(&Message::Keepalive.to_bytes(&DecodeContext::default())).await;
            assert!(matches!(self.recv().await, Some(Message::Open(_))));
            assert!(matches!(self.recv().await, Some(Message::Keepalive)));
        }
    }

    pub fn update(attrs: &[u8], nlri: &[u8]) -> Vec<u8> {
        let mut body = vec![0, 0];
        body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
        body.extend_from_slice(attrs);
        body.extend_from_slice(nlri);
        let mut msg = vec![0xff; 16];
        msg.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
        msg.push(2);
        msg.extend_from_slice(&body);
        msg
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rfc7606_actions_from_a_raw_peer_over_tcp() {
    let port = 20000 + ((std::process::id() + 7) % 20000) as u16;
    let mut cfg = BgpConfig::new(65001, "127.0.0.1".parse().unwrap());
    cfg.listen_address = ip("127.0.0.1");
    cfg.listen_port = port;
    let mut n = NeighborConfig::new(ip("127.0.0.3"), 65003);
    n.passive = true;
    cfg.neighbors.push(n);
    let table = TableSink::default();
    let speaker = BgpSpeaker::spawn(cfg, Box::new(table.clone())).await.unwrap();
    let mut peer = raw::RawPeer::connect("127.0.0.3", speaker.listen_addr.unwrap()).await;
    peer.establish(65003, [3, 3, 3, 3]).await;

    // ORIGIN IGP, AS_PATH 65003, NEXT_HOP 127.0.0.3.
    let good = [0x40, 1, 1, 0, 0x40, 2, 6, 2, 1, 0, 0, 0xfe, 0x03, 0x40, 3, 4, 127, 0, 0, 3];
    let p: Nlri = "10.7.0.0/16".parse().unwrap();
    peer.send(&raw::update(&good, &[16, 10, 7])).await;
    wait_for("route installed", async || table.0.lock().unwrap().ip_route(&p).is_some()).await;

    // §7.8: COMMUNITIES of 3 bytes: treat-as-withdraw, session stays up.
    let bad = [&good[..], &[0xc0, 8, 3, 0, 0, 1]].concat();
    peer.send(&raw::update(&bad, &[16, 10, 7])).await;
    wait_for("route withdrawn", async || table.0.lock().unwrap().ip_route(&p).is_none()).await;
    let s = &speaker.summary().await[0];
    assert_eq!((s.state, s.errors.treat_as_withdraw), (State::Established, 1));

    // §7.7: AGGREGATOR of 5 bytes: attribute discard, the route is kept.
    let discard = [&good[..], &[0xc0, 7, 5, 0, 0, 1, 2, 3]].concat();
    peer.send(&raw::update(&discard, &[16, 10, 7])).await;
    wait_for("route back", async || table.0.lock().unwrap().ip_route(&p).is_some()).await;
    assert_eq!(speaker.summary().await[0].errors.attribute_discard, 1);

    // A bad NLRI length: session reset with UPDATE Message Error / Invalid Network Field.
    peer.send(&raw::update(&good, &[40, 1, 2, 3, 4, 5])).await;
    // Skip what was already in flight (End-of-RIB, keepalives).
    let mut reply = peer.recv().await;
    while matches!(reply, Some(bgp_evpn::packet::Message::Update(_) | bgp_evpn::packet::Message::Keepalive)) {
        reply = peer.recv().await;
    }
    assert!(
        matches!(&reply, Some(bgp_evpn::packet::Message::Notification(n)) if (n.code, n.subcode) == (3, 10)),
        "{reply:?}"
    );
    assert_eq!(peer.recv().await, None, "connection closed after the NOTIFICATION");
    wait_for("session down", async || speaker.summary().await[0].state != State::Established).await;
    assert!(table.0.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_header_is_answered_with_its_notification_before_the_close() {
    let port = 20000 + ((std::process::id() + 13) % 20000) as u16;
    let mut cfg = BgpConfig::new(65001, "127.0.0.1".parse().unwrap());
    cfg.listen_address = ip("127.0.0.1");
    cfg.listen_port = port;
    let mut n = NeighborConfig::new(ip("127.0.0.4"), 65004);
    n.passive = true;
    cfg.neighbors.push(n);
    let speaker = BgpSpeaker::spawn(cfg, Box::new(TableSink::default())).await.unwrap();
    let mut peer = raw::RawPeer::connect("127.0.0.4", speaker.listen_addr.unwrap()).await;
    // A KEEPALIVE whose marker is not all ones: Message Header Error /
    // Connection Not Synchronized (RFC 4271 §6.1), then the connection closes.
    let mut bad = bgp_evpn::packet::Message::Keepalive.to_bytes(&Default::default());
    bad[0] = 0;
    peer.send(&bad).await;
    let mut reply = peer.recv().await;
    while matches!(reply, Some(bgp_evpn::packet::Message::Open(_))) {
        reply = peer.recv().await;
    }
    assert!(
        matches!(&reply, Some(bgp_evpn::packet::Message::Notification(n)) if (n.code, n.subcode) == (1, 1)),
        "{reply:?}"
    );
    assert_eq!(peer.recv().await, None);
}
