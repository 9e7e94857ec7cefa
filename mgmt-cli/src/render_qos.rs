//! Tables of the traffic manager's shows, with SONiC's column names.

use crate::qos::*;
use crate::render::Render;
use crate::table::Table;

fn queue_header(first: &str) -> Vec<String> {
    std::iter::once(first.to_owned()).chain((0..CLASSES).map(|i| i.to_string())).collect()
}

impl Render for Vec<InterfaceCounters> {
    fn render(&self) -> String {
        let mut table = Table::new([
            "IFACE", "STATE", "SPEED", "RX_OK", "RX_BYTES", "RX_ERR", "RX_DRP", "TX_OK", "TX_BYTES", "TX_ERR", "TX_DRP",
        ]);
        for c in self {
            table.row([
                c.iface.clone(),
                c.state.clone(),
                c.speed_bps.map_or_else(|| "N/A".to_owned(), speed),
                c.rx_ok.to_string(),
                c.rx_bytes.to_string(),
                c.rx_err.to_string(),
                c.rx_drp.to_string(),
                c.tx_ok.to_string(),
                c.tx_bytes.to_string(),
                c.tx_err.to_string(),
                c.tx_drp.to_string(),
            ]);
        }
        table.render()
    }
}

fn speed(bps: u64) -> String {
    match bps {
        b if b >= 1_000_000_000 && b % 1_000_000_000 == 0 => format!("{}G", b / 1_000_000_000),
        b if b >= 1_000_000 && b % 1_000_000 == 0 => format!("{}M", b / 1_000_000),
        b => b.to_string(),
    }
}

impl Render for Vec<PfcCounters> {
    fn render(&self) -> String {
        let mut out = String::new();
        for (title, pick) in [
            ("Rx", (|c: &PfcCounters| c.rx) as fn(&PfcCounters) -> [u64; CLASSES]),
            ("Tx", |c: &PfcCounters| c.tx),
            ("Paused us", |c: &PfcCounters| c.paused_us),
        ] {
            let header: Vec<String> =
                std::iter::once(format!("Port {title}")).chain((0..CLASSES).map(|p| format!("PFC{p}"))).collect();
            let mut table = Table::new(header);
            for c in self {
                table.row(std::iter::once(c.port.clone()).chain(pick(c).iter().map(u64::to_string)));
            }
            out.push_str(&table.render());
            out.push('\n');
        }
        out
    }
}

impl Render for Vec<QueueCounters> {
    fn render(&self) -> String {
        let mut table = Table::new([
            "Port",
            "TxQ",
            "Counter/pkts",
            "Counter/bytes",
            "Drop/pkts",
            "Drop/bytes",
            "Depth/pkts",
            "Depth/bytes",
        ]);
        for q in self {
            table.row([
                q.port.clone(),
                q.txq.clone(),
                q.counter_pkts.to_string(),
                q.counter_bytes.to_string(),
                q.drop_pkts.to_string(),
                q.drop_bytes.to_string(),
                q.depth_pkts.to_string(),
                q.depth_bytes.to_string(),
            ]);
        }
        table.render()
    }
}

impl Render for Vec<WredCounters> {
    fn render(&self) -> String {
        let mut table = Table::new(["Port", "TxQ", "WredDrp/pkts", "EcnMarked/pkts"]);
        for q in self {
            table.row([q.port.clone(), q.txq.clone(), q.wred_drp_pkts.to_string(), q.ecn_marked_pkts.to_string()]);
        }
        table.render()
    }
}

impl Render for Watermarks {
    fn render(&self) -> String {
        let (title, prefix) = match self.kind.as_str() {
            "headroom" => ("Ingress headroom per PG:", "PG"),
            "shared" => ("Ingress shared pool occupancy per PG:", "PG"),
            _ => ("Egress shared pool occupancy per unicast queue:", "UC"),
        };
        let mut header = queue_header("Port");
        for (i, cell) in header.iter_mut().skip(1).enumerate() {
            *cell = format!("{prefix}{i}");
        }
        let mut table = Table::new(header);
        for row in &self.rows {
            table.row(std::iter::once(row.port.clone()).chain(row.bytes.iter().map(u64::to_string)));
        }
        format!("{title}\n{}", table.render())
    }
}

impl Render for Vec<BufferPool> {
    fn render(&self) -> String {
        let mut table = Table::new(["Pool", "Size", "Used", "Shared", "SharedUsed", "Watermark"]);
        let mut drops = Table::new(["Drop reason", "Packets"]);
        for pool in self {
            table.row([
                pool.pool.clone(),
                pool.size_bytes.to_string(),
                pool.used_bytes.to_string(),
                pool.shared_bytes.to_string(),
                pool.shared_used_bytes.to_string(),
                pool.watermark_bytes.to_string(),
            ]);
            for (reason, packets) in &pool.drops {
                drops.row([reason.clone(), packets.to_string()]);
            }
        }
        format!("{}\n{}", table.render(), drops.render())
    }
}

impl Render for Vec<PfcwdStats> {
    fn render(&self) -> String {
        let mut table = Table::new([
            "QUEUE",
            "STATUS",
            "STORM DETECTED/RESTORED",
            "TX DROP",
            "LAST DETECTED AFTER",
            "LAST RESTORED AFTER",
        ]);
        let ms = |ns: Option<u64>| ns.map_or_else(|| "-".into(), |ns| format!("{:.1} ms", ns as f64 / 1e6));
        for s in self {
            table.row([
                format!("{}:{}", s.port, s.queue),
                s.status.clone(),
                format!("{}/{}", s.storm_detected, s.storm_restored),
                s.tx_drop.to_string(),
                ms(s.last_detection_ns),
                ms(s.last_restoration_ns),
            ]);
        }
        table.render()
    }
}

impl Render for Dlb {
    fn render(&self) -> String {
        let Some(mode) = &self.mode else { return "DLB: off (static ECMP hashing)\n".to_owned() };
        let mut table = Table::new(["GROUP", "MODE", "MEMBER", "PORT", "COST", "PACKETS", "FLOWLETS", "MOVES"]);
        for (index, group) in self.groups.iter().enumerate() {
            for (i, member) in group.next_hops.iter().enumerate() {
                let first = i == 0;
                table.row([
                    if first { index.to_string() } else { String::new() },
                    if first { group.mode.clone() } else { String::new() },
                    member.next_hop.clone(),
                    member.port.clone().unwrap_or_else(|| "-".into()),
                    member.quality_cost.map_or_else(|| "-".into(), |c| c.to_string()),
                    if first { group.packets.to_string() } else { String::new() },
                    if first { group.flowlets.to_string() } else { String::new() },
                    if first { group.moves.to_string() } else { String::new() },
                ]);
            }
        }
        format!("DLB mode: {mode}\n{}", table.render())
    }
}
