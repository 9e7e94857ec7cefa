//! `show` of the traffic manager, in SONiC's words: what the shim's
//! backend reports ([`sai_shim::QosReport`]), by the config's port names.

use std::collections::BTreeMap;

use dataplane::node::PortQosStats;
use dataplane::pipeline::DropReason;
use mgmt_cli::api::PgWatermarkKind;
use mgmt_cli::qos::{self as api, CLASSES};
use sai_shim::{Backend, Object, ObjectId, QosReport, RouterInterfaceType, Sai};

use crate::mgmt::SwitchView;

impl<B: Backend> SwitchView<B> {
    fn report(&self) -> (Option<QosReport>, BTreeMap<ObjectId, String>) {
        let sai = self.sai.lock().unwrap_or_else(|e| e.into_inner());
        let names = self.applied.ports.iter().map(|(name, objects)| (objects.port, name.clone())).collect();
        (sai.qos_report(), names)
    }

    /// Each port's stats by name, in the config's port order.
    fn qos_ports(&self) -> Vec<(String, PortQosStats)> {
        let (Some(report), names) = self.report() else { return Vec::new() };
        let mut by_name: BTreeMap<&str, PortQosStats> = BTreeMap::new();
        for (stats, object) in report.stats.ports.iter().zip(&report.port_objects) {
            if let Some(name) = object.and_then(|id| names.get(&id)) {
                by_name.insert(name, stats.clone());
            }
        }
        self.config.ports.iter().filter_map(|p| by_name.remove(p.name.as_str()).map(|s| (p.name.clone(), s))).collect()
    }

    pub fn interface_counters(&self) -> Vec<api::InterfaceCounters> {
        let speeds: BTreeMap<String, u64> = self.qos_ports().into_iter().map(|(name, s)| (name, s.speed_bps)).collect();
        let sai = self.sai.lock().unwrap_or_else(|e| e.into_inner());
        self.config
            .ports
            .iter()
            .map(|port| {
                let id = self.applied.ports[&port.name].port;
                let c = sai.port_counters(id).unwrap_or_default();
                let up = port.admin_up && sai.port_oper_status(id);
                api::InterfaceCounters {
                    iface: port.name.clone(),
                    state: if up { "U" } else { "D" }.into(),
                    speed_bps: speeds.get(&port.name).copied(),
                    rx_ok: c.rx_packets,
                    rx_bytes: c.rx_bytes,
                    rx_err: c.drops.get(DropReason::Malformed) + c.drops.get(DropReason::BadChecksum),
                    rx_drp: c.rx_drops,
                    tx_ok: c.tx_packets,
                    tx_bytes: c.tx_bytes,
                    tx_err: 0,
                    tx_drp: c.tx_drops,
                }
            })
            .collect()
    }

    pub fn pfc_counters(&self) -> Vec<api::PfcCounters> {
        self.qos_ports()
            .into_iter()
            .map(|(port, s)| api::PfcCounters {
                port,
                rx: s.pfc.rx_frames,
                tx: s.pfc.tx_frames,
                paused_us: s.pfc.paused_ns.map(|ns| ns / 1_000),
            })
            .collect()
    }

    pub fn queue_counters(&self) -> Vec<api::QueueCounters> {
        let mut out = Vec::new();
        for (port, s) in self.qos_ports() {
            for (q, queue) in s.queues.iter().enumerate() {
                out.push(api::QueueCounters {
                    port: port.clone(),
                    txq: format!("UC{q}"),
                    counter_pkts: queue.tx_frames,
                    counter_bytes: queue.tx_bytes,
                    drop_pkts: queue.dropped_frames,
                    drop_bytes: queue.dropped_bytes,
                    depth_pkts: queue.depth_frames,
                    depth_bytes: queue.depth_bytes,
                });
            }
        }
        out
    }

    pub fn wred_counters(&self) -> Vec<api::WredCounters> {
        let mut out = Vec::new();
        for (port, s) in self.qos_ports() {
            for (q, queue) in s.queues.iter().enumerate() {
                out.push(api::WredCounters {
                    port: port.clone(),
                    txq: format!("UC{q}"),
                    wred_drp_pkts: queue.wred_dropped,
                    ecn_marked_pkts: queue.ecn_marked,
                });
            }
        }
        out
    }

    pub fn pg_watermarks(&self, kind: PgWatermarkKind) -> api::Watermarks {
        let rows = self
            .qos_ports()
            .into_iter()
            .map(|(port, s)| api::WatermarkRow {
                port,
                bytes: s.priority_groups.map(|pg| match kind {
                    PgWatermarkKind::Headroom => pg.watermark_headroom_bytes,
                    PgWatermarkKind::Shared => pg.watermark_shared_bytes,
                }),
            })
            .collect();
        let kind = match kind {
            PgWatermarkKind::Headroom => "headroom",
            PgWatermarkKind::Shared => "shared",
        };
        api::Watermarks { kind: kind.into(), rows }
    }

    pub fn queue_watermarks(&self) -> api::Watermarks {
        let rows = self
            .qos_ports()
            .into_iter()
            .map(|(port, s)| api::WatermarkRow { port, bytes: s.queues.map(|q| u64::from(q.watermark_bytes)) })
            .collect();
        api::Watermarks { kind: "queue".into(), rows }
    }

    pub fn buffer_pools(&self) -> Vec<api::BufferPool> {
        let (Some(report), _) = self.report() else { return Vec::new() };
        let s = &report.stats;
        vec![api::BufferPool {
            pool: "ingress_lossless_pool".into(),
            size_bytes: s.pool_size_bytes,
            used_bytes: s.pool_used_bytes,
            shared_bytes: s.pool_shared_bytes,
            shared_used_bytes: s.pool_shared_used_bytes,
            watermark_bytes: s.pool_watermark_bytes,
            drops: s.drops.iter().map(|(reason, n)| ((*reason).to_owned(), *n)).collect(),
            migrated_frames: s.migrated_frames,
        }]
    }

    /// The queues the watchdog watches: those of PFC-enabled priorities.
    pub fn pfcwd_stats(&self) -> Vec<api::PfcwdStats> {
        let Some(tm) = &self.config.qos else { return Vec::new() };
        let mut watched = [false; CLASSES];
        for &priority in &tm.pfc.priorities {
            watched[usize::from(tm.maps.pfc_priority_to_queue[usize::from(priority)])] = true;
        }
        let mut out = Vec::new();
        for (port, s) in self.qos_ports() {
            for (q, queue) in s.queues.iter().enumerate().filter(|(q, _)| watched[*q]) {
                let stormed = queue.storms_detected > 0;
                let restored = queue.storms_restored > 0;
                out.push(api::PfcwdStats {
                    port: port.clone(),
                    queue: q as u8,
                    status: if queue.storm { "stormed" } else { "operational" }.into(),
                    storm_detected: queue.storms_detected,
                    storm_restored: queue.storms_restored,
                    tx_drop: queue.watchdog_dropped,
                    last_storm_began_ns: stormed.then_some(queue.storm_began_ns),
                    last_storm_detected_ns: stormed.then_some(queue.storm_detected_ns),
                    last_detection_ns: stormed.then(|| queue.storm_detected_ns - queue.storm_began_ns),
                    last_storm_last_pause_ns: restored.then_some(queue.storm_last_pause_ns),
                    last_storm_restored_ns: restored.then_some(queue.storm_restored_ns),
                    last_restoration_ns: restored.then(|| queue.storm_restored_ns - queue.storm_last_pause_ns),
                    detection_ms: tm.watchdog.detection_ms,
                    restoration_ms: tm.watchdog.restoration_ms,
                    poll_interval_ms: tm.watchdog.poll_interval_ms,
                });
            }
        }
        out
    }

    pub fn dlb(&self) -> api::Dlb {
        let (report, names) = self.report();
        let Some((dlb, groups)) = report.as_ref().and_then(|r| r.dlb.clone()) else { return api::Dlb::default() };
        let report = report.expect("dlb implies a report");
        let index_of: BTreeMap<ObjectId, usize> =
            report.port_objects.iter().enumerate().filter_map(|(i, o)| o.map(|o| (o, i))).collect();
        let sai = self.sai.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = api::Dlb { mode: Some(dlb.default_mode.to_owned()), groups: Vec::new() };
        for (group, object) in dlb.groups.iter().zip(groups) {
            let next_hops = object
                .map(|group| members(&sai, group))
                .unwrap_or_default()
                .into_iter()
                .map(|(ip, port)| api::DlbMember {
                    next_hop: ip,
                    port: port.and_then(|p| names.get(&p).cloned()),
                    quality_cost: port.and_then(|p| index_of.get(&p)).and_then(|&i| dlb.port_costs.get(i).copied()),
                })
                .collect();
            out.groups.push(api::DlbGroup {
                next_hops,
                mode: group.mode.to_owned(),
                packets: group.packets,
                flowlets: group.flowlets,
                moves: group.moves,
            });
        }
        out
    }
}

/// A group's members: next-hop address and the port it leaves by (for a
/// routed port).
fn members<B: Backend>(sai: &Sai<B>, group: ObjectId) -> Vec<(String, Option<ObjectId>)> {
    let store = sai.store();
    store
        .objects_of(sai_shim::ObjectType::NextHopGroupMember)
        .filter_map(|(_, o)| match o {
            Object::NextHopGroupMember(m) if m.group == group => Some(m.next_hop),
            _ => None,
        })
        .filter_map(|hop| match store.get(hop) {
            Some(Object::NextHop(hop)) => {
                let port = match hop.router_interface().and_then(|rif| store.get(rif)) {
                    Some(Object::RouterInterface(rif)) => match rif.rif_type {
                        RouterInterfaceType::Port(port) => Some(port),
                        _ => None,
                    },
                    _ => None,
                };
                Some((hop.ip.to_string(), port))
            }
            _ => None,
        })
        .collect()
}
