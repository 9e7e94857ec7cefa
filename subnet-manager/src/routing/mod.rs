//! Routing engines: from the topology and its LIDs to a linear forwarding
//! table per switch, selectable with a fallback order like OpenSM's
//! (`routing_engine ftree,updn,minhop`: the first engine that accepts the
//! fabric routes it).
//!
//! * [`minhop`]: shortest paths, the least-loaded of the equal ports per
//!   destination (OpenSM's default);
//! * [`updn`]: up*/down* from detected or configured roots, deadlock free;
//! * [`ftree`]: fat trees only: ranks from the leaves, destinations routed
//!   leaf by leaf, port by port, each up-going hop on the least-loaded port,
//!   ties broken destination-mod-k;
//! * [`sssp`]: balanced single-source shortest paths (OpenSM's SSSP/DFSSSP):
//!   each destination's tree by Dijkstra over channel weights that grow with
//!   the routes already placed;
//! * [`dfsssp`]: sssp's routes with destinations put on virtual lanes so
//!   that each lane's channel dependency graph ([`cdg`]) is acyclic.
//!
//! [`analysis`] reports each result's balance (routes per switch port,
//! edge-forwarding index) and whether its channel dependency graph is cycle
//! free per VL.

// Switches are dense ids indexing several parallel arrays at once.
#![allow(clippy::needless_range_loop)]

pub mod analysis;
pub mod cdg;
pub mod dfsssp;
pub mod ftree;
pub mod graph;
pub mod minhop;
pub mod sssp;
pub mod updn;

pub use analysis::{Balance, analyze};
pub use graph::SwitchGraph;

use crate::topology::Topology;

/// An LFT entry with no route (IBA: 255 means "drop").
pub const NO_ROUTE: u8 = 0xff;

/// The engines, by their OpenSM names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Engine {
    Minhop,
    Updn,
    Ftree,
    Sssp,
    Dfsssp,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Minhop => "minhop",
            Engine::Updn => "updn",
            Engine::Ftree => "ftree",
            Engine::Sssp => "sssp",
            Engine::Dfsssp => "dfsssp",
        }
    }

    pub fn from_name(name: &str) -> Option<Engine> {
        Some(match name {
            "minhop" => Engine::Minhop,
            "updn" => Engine::Updn,
            "ftree" => Engine::Ftree,
            "sssp" => Engine::Sssp,
            "dfsssp" => Engine::Dfsssp,
            _ => return None,
        })
    }

    /// Parses OpenSM's comma-separated `routing_engine` list.
    pub fn parse_list(list: &str) -> Result<Vec<Engine>, String> {
        list.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|name| Engine::from_name(name).ok_or_else(|| format!("unknown routing engine {name:?}")))
            .collect()
    }
}

/// Why an engine declined the fabric (the next in the list is tried).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoutingError {
    /// ftree: the fabric is not a fat tree (the reason says where).
    NotAFatTree(String),
    /// updn: a configured root GUID is not a switch of the fabric.
    UnknownRoot(u64),
    /// dfsssp: more VLs needed than the fabric offers.
    TooManyLayers { needed: usize, available: u8 },
    /// No engine in the list accepted the fabric.
    NoEngine,
}

impl core::fmt::Display for RoutingError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            RoutingError::NotAFatTree(why) => write!(f, "not a fat tree: {why}"),
            RoutingError::UnknownRoot(guid) => write!(f, "root {guid:#018x} is not a switch of the fabric"),
            RoutingError::TooManyLayers { needed, available } => {
                write!(f, "deadlock freedom needs {needed} VLs, the fabric has {available}")
            }
            RoutingError::NoEngine => f.write_str("no routing engine accepted the fabric"),
        }
    }
}

impl std::error::Error for RoutingError {}

/// Engine settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutingConfig {
    /// Tried in order; the first that accepts the fabric routes it.
    pub engines: Vec<Engine>,
    /// LIDs per CA port: 2^lmc.
    pub lmc: u8,
    /// updn roots by switch GUID; empty: detected.
    pub roots: Vec<u64>,
    /// Data VLs the fabric offers (dfsssp layering).
    pub max_vls: u8,
}

impl Default for RoutingConfig {
    fn default() -> Self {
        RoutingConfig { engines: vec![Engine::Minhop], lmc: 0, roots: Vec::new(), max_vls: 8 }
    }
}

/// The result of routing: an LFT per switch (indexed by node), and the VL
/// (as an SL) each destination LID's traffic uses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lfts {
    tables: Vec<Option<Vec<u8>>>,
    /// SL per destination LID (dfsssp layers); empty: SL 0 everywhere.
    pub sl_of_lid: Vec<u8>,
    /// The engine that produced these tables.
    pub engine: Option<Engine>,
    /// Engines before it in the list that declined the fabric, and why.
    pub refused: Vec<(Engine, RoutingError)>,
}

impl Lfts {
    /// Empty tables (every entry [`NO_ROUTE`]) for the switches of
    /// `topology`, LIDs `0..=max_lid`.
    pub fn new(topology: &Topology, max_lid: u16) -> Lfts {
        let tables =
            topology.nodes.iter().map(|n| n.is_switch().then(|| vec![NO_ROUTE; usize::from(max_lid) + 1])).collect();
        Lfts { tables, sl_of_lid: Vec::new(), engine: None, refused: Vec::new() }
    }

    pub fn table(&self, node: usize) -> Option<&[u8]> {
        self.tables.get(node).and_then(|t| t.as_deref())
    }

    pub fn table_mut(&mut self, node: usize) -> Option<&mut Vec<u8>> {
        self.tables.get_mut(node).and_then(|t| t.as_mut())
    }

    pub fn port(&self, node: usize, lid: u16) -> Option<u8> {
        self.table(node)?.get(usize::from(lid)).copied().filter(|&p| p != NO_ROUTE)
    }

    pub fn set(&mut self, node: usize, lid: u16, port: u8) {
        if let Some(entry) = self.table_mut(node).and_then(|t| t.get_mut(usize::from(lid))) {
            *entry = port;
        }
    }
}

/// Routes `topology` with the first engine of `config.engines` that
/// accepts it. LIDs must be assigned.
pub fn route(topology: &Topology, config: &RoutingConfig) -> Result<Lfts, Vec<(Engine, RoutingError)>> {
    let graph = SwitchGraph::new(topology, config.lmc);
    let mut refused = Vec::new();
    for &engine in &config.engines {
        let result = match engine {
            Engine::Minhop => Ok(minhop::route(&graph)),
            Engine::Updn => updn::route(&graph, &config.roots),
            Engine::Ftree => ftree::route(&graph),
            Engine::Sssp => Ok(sssp::route(&graph)),
            Engine::Dfsssp => dfsssp::route(&graph, config.max_vls),
        };
        match result {
            Ok(mut lfts) => {
                lfts.engine = Some(engine);
                lfts.refused = refused;
                return Ok(lfts);
            }
            Err(error) => refused.push((engine, error)),
        }
    }
    if refused.is_empty() {
        refused.push((Engine::Minhop, RoutingError::NoEngine));
    }
    Err(refused)
}

/// Picks, among `candidates` (ports), the one with the least routes so far
/// in `load`, ties broken by `tie` modulo the number of tied ports, and
/// counts the route on it.
#[inline]
pub(crate) fn least_loaded(candidates: &[u8], load: &mut [u32], tie: usize) -> u8 {
    let mut best = u32::MAX;
    let mut tied = 0usize;
    for &port in candidates {
        let l = load[usize::from(port)];
        if l < best {
            best = l;
            tied = 1;
        } else if l == best {
            tied += 1;
        }
    }
    let mut pick = tie % tied.max(1);
    let mut chosen = candidates[0];
    for &port in candidates {
        if load[usize::from(port)] == best {
            if pick == 0 {
                chosen = port;
                break;
            }
            pick -= 1;
        }
    }
    load[usize::from(chosen)] += 1;
    chosen
}

#[cfg(test)]
mod tests;
