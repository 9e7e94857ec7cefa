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
    wait_for("route on b", async || table.0.lock().unwrap().get(&v4) == Some(&vec![ip("127.0.0.1")])).await;
    let s = &b.summary().await[0];
    assert_eq!(s.state, State::Established);
    assert_eq!(s.prefixes_received, 2);
    let routes = b.routes(Family::Ipv6Unicast, None).await;
    assert_eq!(routes[0].paths[0].as_path, "65001");

    // Withdraw propagates.
    a.remove_network(v4).await;
    wait_for("withdraw on b", async || !table.0.lock().unwrap().contains_key(&v4)).await;
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
