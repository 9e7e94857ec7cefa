//! The Prometheus endpoint (`metrics: { listen: ADDR:PORT }`): `GET
//! /metrics` answers the text exposition format, encoded by
//! `prometheus-client`.
//!
//! Every value is read at scrape time from the same handlers that answer
//! `swcli show ...` ([`SwitchView`]), so a scrape and a `show` agree.
//! Names follow Prometheus conventions: `switch_` prefix, counters end in
//! `_total`, byte counts carry the `bytes` unit, times `seconds`. The
//! traffic manager's families are in [`qos`], EVPN's and the IB-like
//! plane's in [`planes`].

use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};
use sai_shim::Backend;

use crate::apply::Applied;
use crate::commit::FollowsConfig;
use crate::config::Config;
use crate::mgmt::SwitchView;

mod planes;
mod qos;

/// Reads the switch on each scrape.
struct SwitchCollector<B: Backend> {
    view: Arc<RwLock<SwitchView<B>>>,
}

impl<B: Backend> fmt::Debug for SwitchCollector<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SwitchCollector")
    }
}

type Labels<'a> = Vec<(&'static str, &'a str)>;

/// One metric family: its samples with their labels.
fn family<M: EncodeMetric>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    samples: Vec<(Labels<'_>, M)>,
) -> fmt::Result {
    let Some(first) = samples.first() else { return Ok(()) };
    let mut descriptor = encoder.encode_descriptor(name, help, unit, first.1.metric_type())?;
    for (labels, metric) in &samples {
        metric.encode(descriptor.encode_family(labels)?)?;
    }
    Ok(())
}

/// A [`dataplane::io::WaitHistogram`] as a Prometheus histogram in seconds.
#[derive(Debug)]
struct WaitMetric(dataplane::io::WaitHistogram);

impl EncodeMetric for WaitMetric {
    fn encode(&self, mut encoder: prometheus_client::encoding::MetricEncoder) -> fmt::Result {
        let wait = &self.0;
        let bounds = dataplane::io::WAIT_BOUNDS_NS.iter().map(|&ns| ns as f64 / 1e9).chain([f64::MAX]);
        let buckets: Vec<(f64, u64)> = bounds.zip(wait.buckets).collect();
        encoder.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            wait.sum_ns as f64 / 1e9,
            wait.count(),
            &buckets,
            None,
        )
    }

    fn metric_type(&self) -> prometheus_client::metrics::MetricType {
        prometheus_client::metrics::MetricType::Histogram
    }
}

fn counter(value: u64) -> ConstCounter<u64> {
    ConstCounter::new(value)
}

fn gauge(value: usize) -> ConstGauge<i64> {
    ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX))
}

impl<B: Backend + Send + 'static> Collector for SwitchCollector<B>
where
    SwitchView<B>: Send + Sync,
{
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let view = self.view.read().unwrap_or_else(|e| e.into_inner()).clone();
        let e = &mut encoder;

        let interfaces = view.interfaces();
        let ports: Vec<_> = interfaces.iter().filter(|i| i.kind != "svi").collect();
        let per_port = |f: fn(&mgmt_cli::api::Counters) -> u64| -> Vec<(Labels, ConstCounter<u64>)> {
            ports.iter().map(|i| (vec![("port", i.name.as_str())], counter(f(&i.counters)))).collect()
        };
        family(e, "switch_port_received_packets", "Frames received on the port", None, per_port(|c| c.rx_packets))?;
        family(e, "switch_port_received", "Bytes received on the port", Some(&Unit::Bytes), per_port(|c| c.rx_bytes))?;
        family(e, "switch_port_transmitted_packets", "Frames sent out of the port", None, per_port(|c| c.tx_packets))?;
        family(
            e,
            "switch_port_transmitted",
            "Bytes sent out of the port",
            Some(&Unit::Bytes),
            per_port(|c| c.tx_bytes),
        )?;
        family(
            e,
            "switch_port_received_dropped_packets",
            "Frames received and dropped",
            None,
            per_port(|c| c.rx_drops),
        )?;
        family(
            e,
            "switch_port_transmit_dropped_packets",
            "Frames dropped on transmit",
            None,
            per_port(|c| c.tx_drops),
        )?;
        family(
            e,
            "switch_port_rx_ring_dropped_packets",
            "Frames the kernel dropped before the switch saw them (the port's receive ring was full)",
            None,
            per_port(|c| c.rx_ring_drops),
        )?;
        let waits = view.ring_waits();
        let ring_waits: Vec<_> = ports
            .iter()
            .filter(|i| i.rx_ring_wait.is_some())
            .map(|i| (vec![("port", i.name.as_str())], WaitMetric(waits.get(&i.name).copied().unwrap_or_default())))
            .collect();
        family(
            e,
            "switch_port_rx_ring_wait_seconds",
            "How long the oldest frame of each read of the port's AF_PACKET receive ring had waited (what qos.pfc.rx-lag-ns must cover)",
            None,
            ring_waits,
        )?;
        let oper: Vec<_> =
            ports.iter().map(|i| (vec![("port", i.name.as_str())], gauge(usize::from(i.oper_up)))).collect();
        family(e, "switch_port_oper_up", "1 when the port is operationally up", None, oper)?;

        let drops = view.pipeline_drops();
        let switch_drops: Vec<_> = drops
            .iter()
            .filter(|d| d.interface.is_none())
            .map(|d| (vec![("reason", d.reason.as_str())], counter(d.packets)))
            .collect();
        family(e, "switch_pipeline_dropped_packets", "Frames the pipeline dropped, by reason", None, switch_drops)?;
        let port_drops: Vec<_> = drops
            .iter()
            .filter_map(|d| {
                let port = d.interface.as_deref()?;
                Some((vec![("port", port), ("reason", d.reason.as_str())], counter(d.packets)))
            })
            .collect();
        family(
            e,
            "switch_port_pipeline_dropped_packets",
            "Frames the pipeline dropped, by ingress port and reason",
            None,
            port_drops,
        )?;
        let forwarding = view.forwarding_stats();
        let forwarding_drops: Vec<_> = forwarding
            .drops()
            .into_iter()
            .map(|(reason, packets)| (vec![("reason", reason)], counter(packets)))
            .collect();
        family(
            e,
            "switch_forwarding_dropped_packets",
            "Frames the forwarding thread lost around the pipeline (traffic manager, port adapters), by reason",
            None,
            forwarding_drops,
        )?;
        let looped = forwarding.looped;
        let errors = vec![
            (vec![("kind", "receive")], counter(looped.rx_errors)),
            (vec![("kind", "pipeline-panic")], counter(looped.panics)),
            (vec![("kind", "watchdog-event-lost")], counter(looped.watchdog_events_lost)),
        ];
        family(
            e,
            "switch_forwarding_errors",
            "Failed receives, batches abandoned after a pipeline panic, PFC watchdog events nobody took in time",
            None,
            errors,
        )?;
        let (scheduling, late) = (&forwarding.scheduling, &looped.late);
        family(
            e,
            "switch_forwarding_realtime_priority",
            "The forwarding thread's SCHED_FIFO priority; 0: SCHED_OTHER at nice -10",
            None,
            vec![(Vec::new(), gauge(usize::from(scheduling.realtime.unwrap_or(0))))],
        )?;
        family(
            e,
            "switch_forwarding_realtime_refused",
            "Times the kernel refused SCHED_FIFO for the forwarding thread (forwarding.realtime_priority)",
            None,
            vec![(Vec::new(), counter(scheduling.refusals))],
        )?;
        let over: Vec<_> = (crate::scheduling::LATE_BOUNDS_NS.iter().zip(crate::scheduling::LATE_NAMES))
            .map(|(bound, name)| (vec![("over", name)], counter(late.over(*bound))))
            .collect();
        family(
            e,
            "switch_forwarding_late_wakeups",
            "Wake-ups of the forwarding thread later than `over` after the instant it asked for (scheduling delay)",
            None,
            over,
        )?;
        family(
            e,
            "switch_forwarding_wakeup_late_max_seconds",
            "The latest the forwarding thread woke after the instant it asked for",
            None,
            vec![(Vec::new(), prometheus_client::metrics::gauge::ConstGauge::new(late.max_ns as f64 / 1e9))],
        )?;
        family(
            e,
            "switch_traffic_manager_migrated_packets",
            "Queued frames a replaced traffic manager handed to its successor",
            None,
            vec![(Vec::new(), counter(forwarding.node.tm_migrated))],
        )?;

        let macs = view.mac_table();
        family(
            e,
            "switch_fdb_entries",
            "MAC addresses in the forwarding database",
            None,
            vec![(vec![], gauge(macs.len()))],
        )?;
        let routes = view.routes();
        let mut kinds: Vec<&str> = routes.iter().map(|r| r.kind.as_str()).collect();
        kinds.sort();
        kinds.dedup();
        let by_kind: Vec<_> = kinds
            .iter()
            .map(|kind| (vec![("kind", *kind)], gauge(routes.iter().filter(|r| r.kind == *kind).count())))
            .collect();
        family(e, "switch_route_entries", "Routes in the forwarding table, by kind", None, by_kind)?;
        family(
            e,
            "switch_neighbor_entries",
            "ARP and neighbour discovery entries",
            None,
            vec![(vec![], gauge(view.neighbors().len()))],
        )?;
        family(
            e,
            "switch_lldp_neighbors",
            "LLDP neighbours",
            None,
            vec![(vec![], gauge(view.lldp_neighbors().len()))],
        )?;

        if let Some(bgp) = &view.bgp {
            let summary = bgp.summary();
            let peers: Vec<(String, &mgmt_cli::api::BgpPeer)> =
                summary.peers.iter().map(|p| (p.address.to_string(), p)).collect();
            let per_peer = |f: fn(&mgmt_cli::api::BgpPeer) -> usize| -> Vec<(Labels, ConstGauge<i64>)> {
                peers.iter().map(|(address, p)| (vec![("peer", address.as_str())], gauge(f(p)))).collect()
            };
            family(
                e,
                "switch_bgp_peer_established",
                "1 when the BGP session is Established",
                None,
                per_peer(|p| usize::from(p.state == "Established")),
            )?;
            family(
                e,
                "switch_bgp_peer_prefixes_received",
                "Prefixes accepted from the peer",
                None,
                per_peer(|p| p.prefixes_received),
            )?;
            family(
                e,
                "switch_bgp_peer_prefixes_sent",
                "Prefixes advertised to the peer",
                None,
                per_peer(|p| p.prefixes_sent),
            )?;
            let messages = |f: fn(&mgmt_cli::api::BgpPeer) -> u64| -> Vec<(Labels, ConstCounter<u64>)> {
                peers.iter().map(|(address, p)| (vec![("peer", address.as_str())], counter(f(p)))).collect()
            };
            family(
                e,
                "switch_bgp_peer_received_messages",
                "BGP messages received",
                None,
                messages(|p| p.messages_received),
            )?;
            family(e, "switch_bgp_peer_sent_messages", "BGP messages sent", None, messages(|p| p.messages_sent))?;
            family(
                e,
                "switch_bgp_rib_routes",
                "Destinations in the Loc-RIB",
                None,
                vec![(vec![], gauge(summary.loc_rib_routes))],
            )?;
            family(
                e,
                "switch_bgp_install_failures",
                "Route changes forwarding did not take",
                None,
                vec![(vec![], counter(summary.install_failures))],
            )?;
        }
        qos::encode(&view, e)?;
        planes::encode_evpn(&view, e)?;
        planes::encode_ib(&view, e)?;
        Ok(())
    }
}

/// The registry of one switch.
pub fn registry<B: Backend + Send + 'static>(view: Arc<RwLock<SwitchView<B>>>) -> Registry
where
    SwitchView<B>: Send + Sync,
{
    let mut registry = Registry::default();
    registry.register_collector(Box::new(SwitchCollector { view }));
    registry
}

/// A scrape of `registry`, in the text format.
pub fn scrape(registry: &Registry) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).expect("writing to a String cannot fail");
    text
}

/// The HTTP endpoint, on a thread of its own (a scrape every few seconds).
pub struct MetricsServer {
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
    /// The listening socket, also held by tiny_http's accept thread, which
    /// closes its copy only some time after the server is dropped: `stop`
    /// shuts the socket down itself, so that the address is free (and
    /// refuses connections) when a commit that moved it returns.
    listener: std::net::TcpListener,
}

/// What `prometheus-client` encodes: OpenMetrics text (Prometheus
/// scrapes it natively).
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

impl MetricsServer {
    pub fn start(listen: SocketAddr, registry: Registry) -> std::io::Result<MetricsServer> {
        let listener = std::net::TcpListener::bind(listen)?;
        let kept = listener.try_clone()?;
        let server = Arc::new(tiny_http::Server::from_listener(listener, None).map_err(std::io::Error::other)?);
        let serving = server.clone();
        let thread = std::thread::Builder::new().name("metrics".into()).spawn(move || {
            for request in serving.incoming_requests() {
                let response = if request.url() == "/metrics" {
                    let header = tiny_http::Header::from_bytes("Content-Type", CONTENT_TYPE).expect("valid header");
                    tiny_http::Response::from_string(scrape(&registry)).with_header(header)
                } else {
                    tiny_http::Response::from_string("see /metrics\n").with_status_code(404)
                };
                if let Err(error) = request.respond(response) {
                    tracing::debug!(%error, "metrics response failed");
                }
            }
        })?;
        Ok(MetricsServer { server, thread: Some(thread), listener: kept })
    }

    pub fn stop(mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // The accept thread is told to stop when the server drops (the
        // last reference: the serving thread has ended); the shutdown
        // unlistens the socket now whichever copy closes last.
        drop(self.server);
        // SAFETY: shutdown(2) on a descriptor this struct owns.
        unsafe { libc::shutdown(std::os::fd::AsRawFd::as_raw_fd(&self.listener), libc::SHUT_RDWR) };
    }
}

/// The endpoint where the running config asks for it: started, moved to
/// another address or stopped by a commit, as a [`FollowsConfig`]
/// follower (a commit whose new address cannot be bound is refused and the
/// endpoint stays where it was).
pub struct MetricsEndpoint<B: Backend + Send + 'static> {
    view: Arc<RwLock<SwitchView<B>>>,
    running: Option<(SocketAddr, MetricsServer)>,
}

impl<B: Backend + Send + 'static> MetricsEndpoint<B>
where
    SwitchView<B>: Send + Sync,
{
    /// Not listening yet: [`FollowsConfig::add_missing`] starts it.
    pub fn new(view: Arc<RwLock<SwitchView<B>>>) -> Self {
        MetricsEndpoint { view, running: None }
    }

    /// Where it listens (`None`: off).
    pub fn listening(&self) -> Option<SocketAddr> {
        self.running.as_ref().map(|(listen, _)| *listen)
    }

    pub fn stop(&mut self) {
        if let Some((listen, server)) = self.running.take() {
            server.stop();
            tracing::info!(%listen, "metrics endpoint stopped");
        }
    }
}

impl<B: Backend + Send + 'static> FollowsConfig for MetricsEndpoint<B>
where
    SwitchView<B>: Send + Sync,
{
    fn remove_stale(&mut self, target: &Config, _: &Applied) -> Result<(), String> {
        if self.listening() != target.metrics {
            self.stop();
        }
        Ok(())
    }

    fn add_missing(&mut self, target: &Config, _: &Applied) -> Result<(), String> {
        let Some(listen) = target.metrics else { return Ok(()) };
        if self.running.is_none() {
            let server = MetricsServer::start(listen, registry(self.view.clone()))
                .map_err(|error| format!("metrics.listen: {listen}: {error}"))?;
            tracing::info!(%listen, "metrics endpoint listening");
            self.running = Some((listen, server));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::daemon::{build_shim, lldp_agent};
    use std::sync::Mutex;

    #[test]
    fn a_scrape_names_counters_by_convention_and_matches_show() {
        let config = Config::from_yaml(
            "name: m1\nports:\n  - { name: eth1, mode: access, vlan: 10 }\n  - { name: eth2, mode: routed, addresses: [10.0.0.1/24] }\nvlans:\n  - { id: 10 }\n",
        )
        .unwrap();
        let (sai, applied) = build_shim(&config).unwrap();
        let view = SwitchView {
            config: Arc::new(config.clone()),
            applied: Arc::new(applied),
            sai: Arc::new(Mutex::new(sai)),
            lldp: Arc::new(Mutex::new(lldp_agent(&config))),
            bgp: None,
            now: Arc::new(|| 0),
            ib: None,
            io_stats: Default::default(),
        };
        {
            let mut published = view.io_stats.lock().unwrap();
            published.node.tm_drops = 7;
            published.node.tm_reconfigure_drops = 2;
            published.looped.watchdog_events_lost = 1;
        }
        let text = scrape(&registry(Arc::new(RwLock::new(view.clone()))));
        for line in [
            "switch_forwarding_dropped_packets_total{reason=\"traffic-manager\"} 5",
            "switch_forwarding_dropped_packets_total{reason=\"traffic-manager-reconfigure\"} 2",
            "switch_forwarding_errors_total{kind=\"watchdog-event-lost\"} 1",
        ] {
            assert!(text.contains(line), "{line} not in {text}");
        }
        let shown: Vec<_> = view.drops().into_iter().map(|d| (d.interface, d.reason, d.packets)).collect();
        assert_eq!(
            shown,
            [(None, "traffic-manager".into(), 5), (None, "traffic-manager-reconfigure".into(), 2)],
            "show drops lists the forwarding thread's non-zero losses"
        );
        assert!(text.contains("# TYPE switch_port_received_bytes counter"), "{text}");
        assert!(text.contains("switch_port_received_bytes_total{port=\"eth1\"} 0"), "{text}");
        assert!(text.contains("switch_port_oper_up{port=\"eth2\"}"), "{text}");
        let connected = view.routes().iter().filter(|r| r.kind == "connected").count();
        assert!(text.contains(&format!("switch_route_entries{{kind=\"connected\"}} {connected}")), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    /// A commit that moves or removes the endpoint returns with the old
    /// address closed (tiny_http alone closes it a moment later).
    #[test]
    fn a_stopped_endpoint_refuses_connections_at_once() {
        for _ in 0..20 {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let listen = probe.local_addr().unwrap();
            drop(probe);
            let server = MetricsServer::start(listen, Registry::default()).unwrap();
            std::net::TcpStream::connect(listen).expect("listening");
            server.stop();
            assert!(std::net::TcpStream::connect(listen).is_err(), "{listen} still accepts after stop");
        }
    }
}
