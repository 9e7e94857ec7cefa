//! What one run varies, as `labs sim` flags set it: load balancing, PFC,
//! ECN/DCQCN, the links, the seed.

use dataplane::node::QosTrafficManager;
use qos::dlb::{DlbConfig, DlbMode};
use qos::scheduler::Discipline;
use qos::tm::{EcnSetting, PortConfig, TmConfig};

/// How switches spread flows over equal-cost paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum LoadBalancing {
    /// Static ECMP: the seeded 5-tuple hash.
    Ecmp,
    /// Flowlet DLB: a flow moves to the least loaded member after an idle gap.
    Flowlet,
    /// Per-packet spraying to the least loaded member (receivers reorder).
    Spray,
}

/// Which event queue runs the simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum QueueKind {
    Heap,
    Wheel,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Experiment {
    pub lb: LoadBalancing,
    /// Lossless priority 3 (PFC); otherwise every class is lossy.
    pub pfc: bool,
    /// ECN marking in the switches and DCQCN in the hosts.
    pub ecn: bool,
    pub link_bps: u64,
    pub link_delay_ns: u64,
    /// RoCE payload bytes per packet.
    pub mtu: u32,
    /// Shared buffer per switch, bytes (0: 8 MiB, or 512 KiB per port if more).
    pub buffer_bytes: u64,
    /// Flowlet inactivity gap, microseconds.
    pub flowlet_us: u32,
    pub seed: u64,
    /// Queue-depth sampling interval, ns (0: none).
    pub sample_ns: u64,
    pub queue: QueueKind,
    /// Stop here even if the workload has not finished, ns.
    pub time_limit_ns: u64,
    /// Take this link (index in the fabric's cable list) down at this time.
    pub link_failure: Option<(u32, u64)>,
    /// How long after a link fails the routes move off it (BGP's withdrawal), ns.
    pub reconverge_ns: u64,
    /// A message not received this long after its last packet left is sent again, ns.
    pub rto_ns: u64,
    /// Threads to split the run across (1: one partition). Not part of the
    /// results: a split run writes the same files.
    #[serde(skip)]
    pub threads: usize,
    /// The traffic class (0..=7) background traffic travels on: DSCP
    /// class * 8, the NIC obeying PFC on that priority (`None`: the
    /// collectives' class, 3).
    pub background_class: Option<u8>,
    /// The collectives' class (queue 3) strict priority over the others,
    /// at the switches and at the NICs (which then send a collective's
    /// packet before any background packet).
    pub strict_collective: bool,
}

impl Default for Experiment {
    fn default() -> Experiment {
        Experiment {
            lb: LoadBalancing::Ecmp,
            pfc: true,
            ecn: false,
            link_bps: 100_000_000_000,
            link_delay_ns: 500,
            mtu: 4096,
            buffer_bytes: 0,
            flowlet_us: 16,
            seed: 1,
            sample_ns: 10_000,
            queue: QueueKind::Heap,
            time_limit_ns: 10_000_000_000,
            link_failure: None,
            rto_ns: 4_000_000,
            reconverge_ns: 200_000,
            threads: 1,
            background_class: None,
            strict_collective: false,
        }
    }
}

/// DSCP of RoCE data (traffic class 3, lossless with PFC).
pub const DATA_DSCP: u8 = 26;
/// DSCP of CNPs (traffic class 6, strict priority).
pub const CNP_DSCP: u8 = 48;
/// The PFC priority data travels on.
pub const DATA_PRIORITY: u8 = 3;

impl Experiment {
    /// Refuses a background class or strict priority that cannot run, naming the flag.
    pub fn validate(&self) -> Result<(), String> {
        match self.background_class {
            Some(class) if class > 7 => return Err(format!("--background-class {class}: a traffic class, 0 to 7")),
            Some(6) => return Err("--background-class 6: the CNPs' strict class (take 0-5 or 7)".into()),
            _ => {}
        }
        if self.strict_collective && self.background_class.unwrap_or(DATA_PRIORITY) == DATA_PRIORITY {
            return Err("--strict-collective: needs --background-class other than 3 (the collectives' class)".into());
        }
        Ok(())
    }

    /// The DSCP background traffic carries (its class selector).
    pub fn background_dscp(&self) -> u8 {
        self.background_class.map_or(DATA_DSCP, |class| class << 3)
    }

    /// The priority background traffic is paused on.
    pub fn background_priority(&self) -> u8 {
        self.background_class.unwrap_or(DATA_PRIORITY)
    }

    /// The traffic manager of a switch with `ports` ports.
    pub fn tm_config(&self, ports: u16) -> TmConfig {
        let port =
            PortConfig { cable_length_m: (self.link_delay_ns / 5).max(1) as u32, ..PortConfig::new(self.link_bps) };
        let ports_config = vec![port; usize::from(ports)];
        let mut config = if self.pfc { TmConfig::roce(ports_config) } else { TmConfig::default_with(ports_config) };
        for queue in &mut config.queues {
            if !self.ecn {
                queue.ecn = EcnSetting::Off;
            }
        }
        if self.ecn && !self.pfc {
            config.queues[3].ecn = EcnSetting::Dcqcn;
        }
        if self.strict_collective {
            config.queues[usize::from(DATA_PRIORITY)].scheduler = Discipline::Strict;
        }
        let size =
            if self.buffer_bytes > 0 { self.buffer_bytes } else { (8u64 << 20).max(u64::from(ports) * (512 << 10)) };
        config.pool.size_bytes = size;
        config.dlb = self.dlb_config();
        config.seed = self.seed;
        config
    }

    pub fn dlb_config(&self) -> DlbConfig {
        let mode = match self.lb {
            LoadBalancing::Ecmp => DlbMode::Static,
            LoadBalancing::Flowlet => DlbMode::Flowlet,
            LoadBalancing::Spray => DlbMode::Spray,
        };
        DlbConfig { mode, inactivity_us: self.flowlet_us.max(1), window_us: 10, ..DlbConfig::default() }
    }

    /// The traffic manager, built (the configuration refused whole, naming its field).
    pub fn traffic_manager(&self, ports: u16) -> Result<QosTrafficManager, String> {
        QosTrafficManager::new(&self.tm_config(ports)).map_err(|e| format!("traffic manager: {e}"))
    }
}

trait DefaultWith {
    fn default_with(ports: Vec<PortConfig>) -> TmConfig;
}

impl DefaultWith for TmConfig {
    /// Every class lossy, no PFC.
    fn default_with(ports: Vec<PortConfig>) -> TmConfig {
        TmConfig { ports, ..TmConfig::default() }
    }
}
