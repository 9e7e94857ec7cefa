//! A standalone BGP speaker: runs [`bgp_evpn::BgpSpeaker`] from a YAML file
//! (the `bgp:` section of switchd's config). Used by the interop tests and
//! the benchmark, and handy for trying the speaker against a peer.
//!
//! ```text
//! bgp-speaker --config bgp.yaml [--status status.json] [--interval-ms 100]
//! ```
//!
//! The status file (rewritten atomically every interval) holds the
//! neighbour summary, the Loc-RIB size, the installed routes and, for small
//! tables, every Loc-RIB entry. Commands, one per line, on stdin or in the
//! `--control` file (read and deleted every interval; write it with a
//! rename): `add PREFIX`, `del PREFIX`, `stop PEER`, `start PEER`, `quit`,
//! and for EVPN what a dataplane reports: `mac VNI MAC`, `unmac VNI MAC`,
//! `neigh VNI IP MAC`, `unneigh VNI IP`.
//! SIGTERM/SIGINT and `quit` send Cease to every peer and exit.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bgp_evpn::evpn::config::mac_text;
use bgp_evpn::fib::{FibChange, NextHop};
use bgp_evpn::packet::{Family, Nlri};
use bgp_evpn::{BgpConfig, BgpSpeaker};
use bgp_evpn::{RouteSink, sink};
use tokio::io::AsyncBufReadExt;

/// The installed routes, for the status file. Next-hop sets are shared (a
/// table has few distinct ones), so a large table costs little beyond the
/// speaker's own RIBs.
#[derive(Clone, Default)]
struct Installed(Arc<Mutex<InstalledTable>>);

#[derive(Default)]
struct InstalledTable {
    routes: BTreeMap<Nlri, Arc<[IpAddr]>>,
    sets: HashMap<Vec<IpAddr>, Arc<[IpAddr]>>,
    /// EVPN state: remote MACs, ARP/ND entries, flood lists, IP-VRF routes.
    evpn: sink::Installed,
}

impl RouteSink for Installed {
    fn apply(&mut self, change: FibChange) {
        let Ok(mut t) = self.0.lock() else { return };
        let (prefix, next_hops) = match change {
            FibChange::Route { vrf: None, prefix, next_hops } => (prefix, next_hops),
            other => return t.evpn.apply(other),
        };
        let Some(nlri) = Nlri::from_network(prefix) else { return };
        if next_hops.is_empty() {
            t.routes.remove(&nlri);
            return;
        }
        let next_hops: Vec<IpAddr> = next_hops.iter().filter_map(NextHop::ip).collect();
        let set = match t.sets.get(&next_hops) {
            Some(set) => set.clone(),
            None => {
                let set: Arc<[IpAddr]> = next_hops.as_slice().into();
                t.sets.insert(next_hops, set.clone());
                set
            }
        };
        t.routes.insert(nlri, set);
    }
}

/// Beyond this many routes the status file lists counts only.
const MAX_LISTED_ROUTES: usize = 10_000;

struct Args {
    config: PathBuf,
    status: Option<PathBuf>,
    control: Option<PathBuf>,
    interval: Duration,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let (mut config, mut status, mut control, mut interval) = (None, None, None, Duration::from_millis(100));
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--config" => config = Some(PathBuf::from(value()?)),
            "--status" => status = Some(PathBuf::from(value()?)),
            "--control" => control = Some(PathBuf::from(value()?)),
            "--interval-ms" => {
                interval = Duration::from_millis(value()?.parse().map_err(|e| format!("--interval-ms: {e}"))?)
            }
            "-h" | "--help" => {
                return Err(
                    "usage: bgp-speaker --config FILE [--status FILE] [--control FILE] [--interval-ms N]".into()
                );
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Args { config: config.ok_or("--config is required")?, status, control, interval })
}

async fn write_status(speaker: &BgpSpeaker, table: &Installed, path: &PathBuf) {
    let loc_rib = speaker.loc_rib_len().await;
    let summary = speaker.summary().await;
    // Only small tables are copied out: the lock is shared with the speaker.
    let (fib_len, fib, evpn_fib): (usize, BTreeMap<String, Vec<String>>, serde_json::Value) = match table.0.lock() {
        Ok(t) => {
            let fib = if t.routes.len() <= MAX_LISTED_ROUTES {
                t.routes.iter().map(|(n, hops)| (n.to_string(), hops.iter().map(|h| h.to_string()).collect())).collect()
            } else {
                BTreeMap::new()
            };
            let e = &t.evpn;
            let small = e.macs.len() <= MAX_LISTED_ROUTES;
            let evpn = serde_json::json!({
                "remote_macs": e.macs.len(),
                "macs": if small { e.macs.iter().map(|((vni, mac), vtep)| format!("{vni} {mac} {vtep}")).collect() } else { Vec::new() },
                "neighbors": e.neighbors.iter().map(|((vni, ip), mac)| format!("{vni} {ip} {mac}")).collect::<Vec<_>>(),
                "flood": e.flood.iter().map(|(vni, vteps)| (vni.to_string(), vteps.iter().map(|v| v.to_string()).collect::<Vec<_>>())).collect::<BTreeMap<_, _>>(),
                "vrf_routes": e.routes.iter().filter(|((vrf, _), _)| vrf.is_some()).map(|((vrf, prefix), hops)| {
                    format!("{} {prefix} {}", vrf.as_deref().unwrap_or(""), hops.iter().map(|h| h.to_string()).collect::<Vec<_>>().join(","))
                }).collect::<Vec<_>>(),
            });
            (t.routes.len(), fib, evpn)
        }
        Err(_) => (0, BTreeMap::new(), serde_json::Value::Null),
    };
    let mut status = serde_json::json!({
        "loc_rib": loc_rib,
        "fib_routes": fib_len,
        "neighbors": summary,
        "fib": fib,
        "evpn_fib": evpn_fib,
    });
    let (bfd_peers, bfd_discards) = speaker.bfd_peers().await;
    if !bfd_peers.is_empty() {
        status["bfd"] = serde_json::json!({ "peers": bfd_peers, "discards": bfd_discards });
    }
    if loc_rib <= MAX_LISTED_ROUTES {
        status["ipv4"] = serde_json::to_value(speaker.routes(Family::Ipv4Unicast, None).await).unwrap_or_default();
        status["ipv6"] = serde_json::to_value(speaker.routes(Family::Ipv6Unicast, None).await).unwrap_or_default();
        status["evpn"] = serde_json::to_value(speaker.routes(Family::L2vpnEvpn, None).await).unwrap_or_default();
        status["evpn_state"] = serde_json::to_value(speaker.evpn_state().await).unwrap_or_default();
    }
    let tmp = path.with_extension("tmp");
    if std::fs::write(&tmp, status.to_string()).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

/// Runs one command; false for `quit`.
async fn command(speaker: &BgpSpeaker, line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["add", p] => match p.parse::<Nlri>() {
            Ok(n) => speaker.add_network(n).await,
            Err(e) => eprintln!("bgp-speaker: {e}"),
        },
        ["del", p] => match p.parse::<Nlri>() {
            Ok(n) => speaker.remove_network(n).await,
            Err(e) => eprintln!("bgp-speaker: {e}"),
        },
        ["stop", a] => {
            if let Ok(a) = a.parse() {
                speaker.stop_peer(a).await
            }
        }
        ["start", a] => {
            if let Ok(a) = a.parse() {
                speaker.start_peer(a).await
            }
        }
        // EVPN: what a dataplane would report (a learned or aged MAC, an ARP/ND binding).
        ["mac", vni, mac] | ["unmac", vni, mac] => match (vni.parse(), mac_text::parse(mac)) {
            (Ok(vni), Ok(mac)) => speaker.evpn_local_mac(vni, mac, words[0] == "mac").await,
            _ => eprintln!("bgp-speaker: {line:?}: expected VNI MAC"),
        },
        ["neigh", vni, ip, mac] => match (vni.parse(), ip.parse(), mac_text::parse(mac)) {
            (Ok(vni), Ok(ip), Ok(mac)) => speaker.evpn_local_neighbor(vni, ip, Some(mac)).await,
            _ => eprintln!("bgp-speaker: {line:?}: expected VNI IP MAC"),
        },
        ["unneigh", vni, ip] => match (vni.parse(), ip.parse()) {
            (Ok(vni), Ok(ip)) => speaker.evpn_local_neighbor(vni, ip, None).await,
            _ => eprintln!("bgp-speaker: {line:?}: expected VNI IP"),
        },
        ["quit"] => return false,
        [] => {}
        _ => eprintln!("bgp-speaker: unknown command {line:?}"),
    }
    true
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("bgp-speaker: {e}");
            std::process::exit(2);
        }
    };
    let text = match std::fs::read_to_string(&args.config) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("bgp-speaker: {}: {e}", args.config.display());
            std::process::exit(2);
        }
    };
    let config = match BgpConfig::from_yaml(&text) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("bgp-speaker: {}: {e}", args.config.display());
            std::process::exit(2);
        }
    };
    let table = Installed::default();
    let speaker = match BgpSpeaker::spawn(config, Box::new(table.clone())).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bgp-speaker: {e}");
            std::process::exit(1);
        }
    };
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut stdin_open = true;
    let mut tick = tokio::time::interval(args.interval);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
    loop {
        tokio::select! {
            _ = tick.tick() => {
                if let Some(path) = &args.control
                    && let Ok(text) = std::fs::read_to_string(path)
                {
                    let _ = std::fs::remove_file(path);
                    let mut quit = false;
                    for line in text.lines() {
                        quit |= !command(&speaker, line).await;
                    }
                    if quit {
                        break;
                    }
                }
                if let Some(path) = &args.status {
                    write_status(&speaker, &table, path).await;
                }
            }
            line = lines.next_line(), if stdin_open => {
                let Ok(Some(line)) = line else { stdin_open = false; continue };
                if !command(&speaker, &line).await {
                    break;
                }
                if let Some(path) = &args.status {
                    write_status(&speaker, &table, path).await;
                }
            }
            _ = tokio::signal::ctrl_c() => break,
            _ = term.recv() => break,
        }
    }
    speaker.shutdown().await;
}
