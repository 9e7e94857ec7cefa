//! What one call to the pipeline emits: frames and where they go.
//!
//! One `Output` is reused across calls; `clear` keeps both buffers'
//! capacity, so the steady state allocates nothing.

use core::ops::Range;

use super::PortId;

/// Why a frame goes to the host (the kernel behind the host interface).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PuntReason {
    /// Addressed to one of the switch's own IP addresses ("ip2me").
    Ip2Me,
    /// A copy of an ARP packet, so the kernel keeps its own neighbour table.
    Arp,
    /// A copy of an IPv6 neighbour discovery packet.
    NeighborDiscovery,
    /// An IEEE 802.1D reserved group address (LLDP, LACP, STP...).
    L2Protocol,
    /// Link-local multicast or broadcast IP (routing protocols, DHCP).
    LinkLocalMulticast,
    /// A route whose target is `RouteTarget::Punt`.
    RouteTrap,
}

/// Where an emitted frame goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Egress {
    /// Out of a front-panel port.
    Port(PortId),
    /// To the host interface of `port` (and router interface `rif` when the
    /// frame was received through one); for L3 punts the VLAN tag is removed.
    Host { port: PortId, rif: Option<super::RifId>, reason: PuntReason },
}

/// One emitted frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Emitted<'a> {
    pub to: Egress,
    pub frame: &'a [u8],
}

#[derive(Debug, Clone)]
struct Record {
    to: Egress,
    range: Range<usize>,
}

/// Frames emitted by `Switch::process`, `poll` and the host-send calls.
#[derive(Debug, Clone)]
pub struct Output {
    data: Vec<u8>,
    records: Vec<Record>,
}

impl Default for Output {
    fn default() -> Self {
        Output::new()
    }
}

impl Output {
    pub fn new() -> Output {
        Output::with_capacity(64 * 1024, 256)
    }

    pub fn with_capacity(bytes: usize, frames: usize) -> Output {
        Output { data: Vec::with_capacity(bytes), records: Vec::with_capacity(frames) }
    }

    /// Forgets every frame, keeping the buffers.
    pub fn clear(&mut self) {
        self.data.clear();
        self.records.clear();
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn get(&self, index: usize) -> Option<Emitted<'_>> {
        self.records.get(index).map(|record| Emitted { to: record.to, frame: &self.data[record.range.clone()] })
    }

    pub fn iter(&self) -> impl Iterator<Item = Emitted<'_>> + '_ {
        self.records.iter().map(|record| Emitted { to: record.to, frame: &self.data[record.range.clone()] })
    }

    /// Appends a zeroed frame of `len` bytes and returns it for writing.
    pub(crate) fn push(&mut self, to: Egress, len: usize) -> &mut [u8] {
        let start = self.data.len();
        self.data.resize(start + len, 0);
        self.records.push(Record { to, range: start..start + len });
        &mut self.data[start..]
    }

    /// Appends a frame made of `parts`, without zeroing first, and returns it.
    pub(crate) fn push_parts(&mut self, to: Egress, parts: &[&[u8]]) -> &[u8] {
        let start = self.data.len();
        for part in parts {
            self.data.extend_from_slice(part);
        }
        self.records.push(Record { to, range: start..self.data.len() });
        &self.data[start..]
    }
}
