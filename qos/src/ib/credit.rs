//! Credit-based link flow control per data VL (IBA vol. 1, 7.9).
//!
//! Both counters are 12 bits wide and wrap at 4096 (IBA 7.9.4):
//!
//! * the sender counts FCTBS, the 64-byte blocks it has sent on the VL, and
//!   keeps the last FCCL the receiver granted. "A packet may be sent only if
//!   (FCCL - (FCTBS + blocks of the packet)) mod 4096 <= 2048" (7.9.4.3, the
//!   credit-limit test), so nothing is ever sent into a full buffer and
//!   nothing on a data VL is dropped for lack of room: it waits;
//! * the receiver counts ABR, the blocks it has received, and grants
//!   FCCL = ABR + free blocks, capped at ABR + 2048 (7.9.4.2). Every
//!   flow-control packet from the sender resets ABR to the sender's FCTBS,
//!   which heals a lost packet's blocks.
//!
//! A [`LinkCredits`] holds both sides for the operational data VLs of one
//! port, says when a flow-control packet is due (on every change, and every
//! `refresh_ns` anyway) and when the link may go ACTIVE (a flow-control
//! packet received on every operational data VL).

use super::MANAGEMENT_VL;

/// Counters wrap at this modulus.
pub const MODULUS: u16 = 4096;
const MASK: u16 = MODULUS - 1;
/// Largest credit the limit test allows ahead of FCTBS (7.9.4.3) and the cap
/// on what a receiver advertises (7.9.4.2).
pub const MAX_AHEAD: u16 = 2048;

/// Data VLs an IBA port may operate (OperationalVLs: 1, 2, 4 or 8; 7.6.1).
pub const MAX_DATA_VLS: usize = 8;

/// What a flow-control packet carries for one VL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowControlUpdate {
    pub vl: u8,
    pub fctbs: u16,
    pub fccl: u16,
}

/// The sending side of one data VL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SendCredits {
    /// Blocks sent since link init, mod 4096.
    fctbs: u16,
    /// Last credit limit the peer granted, mod 4096.
    fccl: u16,
}

impl SendCredits {
    /// The credit-limit test of 7.9.4.3 for a packet of `blocks`.
    pub fn can_send(&self, blocks: u16) -> bool {
        let after = self.fctbs.wrapping_add(blocks) & MASK;
        (self.fccl.wrapping_sub(after) & MASK) <= MAX_AHEAD
    }

    /// Blocks the peer has room for now (0 when the limit is reached).
    pub fn available(&self) -> u16 {
        let ahead = self.fccl.wrapping_sub(self.fctbs) & MASK;
        if ahead <= MAX_AHEAD { ahead } else { 0 }
    }

    /// Counts a packet of `blocks` as sent. Call only after
    /// [`can_send`](Self::can_send) said yes.
    pub fn sent(&mut self, blocks: u16) {
        self.fctbs = self.fctbs.wrapping_add(blocks) & MASK;
    }

    /// Takes the peer's credit limit from its flow-control packet.
    pub fn granted(&mut self, fccl: u16) {
        self.fccl = fccl & MASK;
    }

    pub fn fctbs(&self) -> u16 {
        self.fctbs
    }
}

/// The receiving side of one data VL: a buffer of `capacity` blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiveCredits {
    capacity: u16,
    /// Blocks held, not yet forwarded or consumed.
    occupied: u16,
    /// Adjusted blocks received, mod 4096.
    abr: u16,
}

/// Why a data packet was not taken into a receive buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiveError {
    /// The sender sent beyond the credit granted (IBA 7.9.4.3 makes this a
    /// link error; the packet is discarded and counted).
    Overrun,
}

impl ReceiveCredits {
    pub fn new(capacity_blocks: u16) -> ReceiveCredits {
        ReceiveCredits { capacity: capacity_blocks, occupied: 0, abr: 0 }
    }

    /// FCCL to advertise: ABR plus free blocks, at most ABR + 2048 (7.9.4.2).
    pub fn fccl(&self) -> u16 {
        let free = (self.capacity - self.occupied).min(MAX_AHEAD);
        self.abr.wrapping_add(free) & MASK
    }

    /// A data packet of `blocks` arrives.
    pub fn received(&mut self, blocks: u16) -> Result<(), ReceiveError> {
        if blocks > self.capacity - self.occupied {
            // Still counted in ABR: the sender counted it in FCTBS.
            self.abr = self.abr.wrapping_add(blocks) & MASK;
            return Err(ReceiveError::Overrun);
        }
        self.occupied += blocks;
        self.abr = self.abr.wrapping_add(blocks) & MASK;
        Ok(())
    }

    /// A packet of `blocks` left the buffer (forwarded or consumed).
    pub fn released(&mut self, blocks: u16) {
        self.occupied = self.occupied.saturating_sub(blocks);
    }

    /// The sender's FCTBS from its flow-control packet (7.9.4.2: ABR := FCTBS).
    pub fn synchronize(&mut self, fctbs: u16) {
        self.abr = fctbs & MASK;
    }

    pub fn occupied(&self) -> u16 {
        self.occupied
    }

    pub fn capacity(&self) -> u16 {
        self.capacity
    }
}

/// Why a link's flow-control configuration was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigError {
    /// Operational VLs must be 1, 2, 4 or 8.
    OperationalVls(u8),
    /// A receive buffer must hold at least one maximum-size packet and
    /// fewer than 4096 blocks.
    BufferBlocks(u16),
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ConfigError::OperationalVls(n) => {
                write!(f, "operational_vls: {n} is not 1, 2, 4 or 8")
            }
            ConfigError::BufferBlocks(n) => {
                write!(f, "buffer_blocks: {n} is not in 1..4096")
            }
        }
    }
}

impl std::error::Error for ConfigError {}

/// Both sides of flow control for one port's operational data VLs.
#[derive(Debug, Clone)]
pub struct LinkCredits {
    operational_vls: u8,
    send: [SendCredits; MAX_DATA_VLS],
    receive: [ReceiveCredits; MAX_DATA_VLS],
    /// A flow-control packet from the peer was seen on this VL.
    heard: [bool; MAX_DATA_VLS],
    /// This VL's FCCL changed since the last flow-control packet we sent.
    dirty: [bool; MAX_DATA_VLS],
    last_sent_ns: [u64; MAX_DATA_VLS],
    refresh_ns: u64,
    /// Packets refused for exceeding the granted credit.
    pub overruns: u64,
}

impl LinkCredits {
    /// `buffer_blocks` per data VL; flow-control packets repeat at least every
    /// `refresh_ns` even without a change.
    pub fn new(operational_vls: u8, buffer_blocks: u16, refresh_ns: u64) -> Result<LinkCredits, ConfigError> {
        if !matches!(operational_vls, 1 | 2 | 4 | 8) {
            return Err(ConfigError::OperationalVls(operational_vls));
        }
        if buffer_blocks == 0 || buffer_blocks >= MODULUS {
            return Err(ConfigError::BufferBlocks(buffer_blocks));
        }
        Ok(LinkCredits {
            operational_vls,
            send: [SendCredits::default(); MAX_DATA_VLS],
            receive: [ReceiveCredits::new(buffer_blocks); MAX_DATA_VLS],
            heard: [false; MAX_DATA_VLS],
            dirty: [true; MAX_DATA_VLS],
            last_sent_ns: [0; MAX_DATA_VLS],
            refresh_ns,
            overruns: 0,
        })
    }

    pub fn refresh_ns(&self) -> u64 {
        self.refresh_ns
    }

    /// Link down: both sides start from zero and flow control must be
    /// exchanged again. Occupied receive blocks stay held (their packets
    /// are still queued) until released.
    pub fn reset(&mut self) {
        for i in 0..MAX_DATA_VLS {
            let held = self.receive[i].occupied;
            self.send[i] = SendCredits::default();
            self.receive[i] = ReceiveCredits::new(self.receive[i].capacity);
            self.receive[i].occupied = held;
            self.heard[i] = false;
            self.dirty[i] = true;
        }
    }

    pub fn operational_vls(&self) -> u8 {
        self.operational_vls
    }

    fn data_vl(&self, vl: u8) -> Option<usize> {
        (vl < self.operational_vls && vl != MANAGEMENT_VL).then_some(usize::from(vl))
    }

    /// True once a flow-control packet has been received on every
    /// operational data VL: the link may leave ARMED for ACTIVE, and data
    /// may flow (7.9.4, 7.2).
    pub fn exchanged(&self) -> bool {
        self.heard[..usize::from(self.operational_vls)].iter().all(|&heard| heard)
    }

    /// The credit-limit test for a packet of `blocks` on `vl`. False for a VL
    /// that is not operational.
    pub fn can_send(&self, vl: u8, blocks: u16) -> bool {
        self.data_vl(vl).is_some_and(|i| self.heard[i] && self.send[i].can_send(blocks))
    }

    pub fn sent(&mut self, vl: u8, blocks: u16) {
        if let Some(i) = self.data_vl(vl) {
            self.send[i].sent(blocks);
        }
    }

    /// A data packet of `blocks` on `vl` arrived. An overrun is counted.
    pub fn received(&mut self, vl: u8, blocks: u16) -> Result<(), ReceiveError> {
        let Some(i) = self.data_vl(vl) else {
            self.overruns += 1;
            return Err(ReceiveError::Overrun);
        };
        let result = self.receive[i].received(blocks);
        if result.is_err() {
            self.overruns += 1;
        }
        result
    }

    /// A packet of `blocks` received on `vl` left its buffer; the new credit
    /// is due to the peer.
    pub fn released(&mut self, vl: u8, blocks: u16) {
        if let Some(i) = self.data_vl(vl) {
            self.receive[i].released(blocks);
            self.dirty[i] = true;
        }
    }

    /// The peer's flow-control packet (Normal or Init alike: both carry its
    /// FCTBS and FCCL). Returns false for a VL that is not operational here.
    pub fn flow_control_received(&mut self, update: FlowControlUpdate) -> bool {
        let Some(i) = self.data_vl(update.vl) else {
            return false;
        };
        let before = self.receive[i].fccl();
        self.send[i].granted(update.fccl);
        self.receive[i].synchronize(update.fctbs);
        if self.receive[i].fccl() != before {
            self.dirty[i] = true;
        }
        if !self.heard[i] {
            // Answer at once so the peer can count the link exchanged too.
            self.dirty[i] = true;
        }
        self.heard[i] = true;
        true
    }

    /// The next flow-control packet due at `now_ns` (a changed FCCL, or a
    /// refresh), marked as sent; `None` when nothing is due. Call until None.
    pub fn poll_flow_control(&mut self, now_ns: u64) -> Option<FlowControlUpdate> {
        for i in 0..usize::from(self.operational_vls) {
            let refresh_due = now_ns.saturating_sub(self.last_sent_ns[i]) >= self.refresh_ns;
            if self.dirty[i] || refresh_due {
                self.dirty[i] = false;
                self.last_sent_ns[i] = now_ns;
                return Some(FlowControlUpdate {
                    vl: i as u8,
                    fctbs: self.send[i].fctbs(),
                    fccl: self.receive[i].fccl(),
                });
            }
        }
        None
    }

    /// Earliest time a refresh is due, for the caller's timer.
    pub fn next_refresh_ns(&self) -> u64 {
        self.last_sent_ns[..usize::from(self.operational_vls)]
            .iter()
            .map(|&sent| sent.saturating_add(self.refresh_ns))
            .min()
            .unwrap_or(u64::MAX)
    }

    pub fn send_credits(&self, vl: u8) -> Option<&SendCredits> {
        self.data_vl(vl).map(|i| &self.send[i])
    }

    pub fn receive_credits(&self, vl: u8) -> Option<&ReceiveCredits> {
        self.data_vl(vl).map(|i| &self.receive[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_test_allows_exactly_the_granted_blocks() {
        let mut send = SendCredits::default();
        send.granted(10);
        assert!(send.can_send(10));
        assert!(!send.can_send(11));
        send.sent(4);
        assert_eq!(send.available(), 6);
        assert!(send.can_send(6));
        assert!(!send.can_send(7));
    }

    #[test]
    fn zero_credits_send_nothing() {
        let send = SendCredits::default();
        assert_eq!(send.available(), 0);
        assert!(!send.can_send(1));
        // A zero-block packet cannot exist (LRH alone is one block), but the
        // test itself holds at the limit.
        assert!(send.can_send(0));
    }

    #[test]
    fn counters_wrap_at_4096() {
        let mut send = SendCredits::default();
        // FCTBS near the top; the peer grants 20 blocks past it, wrapping.
        send.sent(4090);
        send.granted((4090 + 20) % 4096);
        assert_eq!(send.available(), 20);
        assert!(send.can_send(20));
        assert!(!send.can_send(21));
        send.sent(8);
        assert_eq!(send.fctbs(), 2);
        assert_eq!(send.available(), 12);

        let mut receive = ReceiveCredits::new(100);
        receive.synchronize(4000);
        assert_eq!(receive.fccl(), 4);
        receive.received(96).unwrap();
        assert_eq!(receive.fccl(), (4000 + 96 + 4) % 4096);
        receive.released(96);
        assert_eq!(receive.fccl(), (4000 + 96 + 100) % 4096);
    }

    #[test]
    fn stale_limit_more_than_2048_behind_counts_as_no_credit() {
        let mut send = SendCredits::default();
        send.sent(3000);
        send.granted(2900); // FCCL 100 behind FCTBS: reads as 3996 ahead, over 2048
        assert_eq!(send.available(), 0);
        assert!(!send.can_send(1));
    }

    #[test]
    fn receiver_caps_its_grant_at_2048_and_refuses_overruns() {
        let receive = ReceiveCredits::new(3000);
        assert_eq!(receive.fccl(), 2048);
        let mut small = ReceiveCredits::new(4);
        assert_eq!(small.received(5), Err(ReceiveError::Overrun));
        assert_eq!(small.occupied(), 0);
        assert_eq!(small.received(4), Ok(()));
        assert_eq!(small.received(1), Err(ReceiveError::Overrun));
    }

    fn exchange(a: &mut LinkCredits, b: &mut LinkCredits, now: u64) {
        loop {
            let mut moved = false;
            while let Some(update) = a.poll_flow_control(now) {
                b.flow_control_received(update);
                moved = true;
            }
            while let Some(update) = b.poll_flow_control(now) {
                a.flow_control_received(update);
                moved = true;
            }
            if !moved {
                break;
            }
        }
    }

    #[test]
    fn link_is_usable_only_after_flow_control_on_every_vl() {
        let mut a = LinkCredits::new(2, 8, 1_000_000).unwrap();
        let mut b = LinkCredits::new(2, 8, 1_000_000).unwrap();
        assert!(!a.exchanged());
        assert!(!a.can_send(0, 1));
        let update = a.poll_flow_control(0).unwrap();
        b.flow_control_received(update);
        assert!(!b.exchanged(), "VL1 not heard yet");
        exchange(&mut a, &mut b, 0);
        assert!(a.exchanged() && b.exchanged());
        assert!(a.can_send(0, 8));
        assert!(!a.can_send(0, 9));
        assert!(!a.can_send(2, 1), "VL2 is not operational");
        assert!(!a.can_send(MANAGEMENT_VL, 1), "VL15 is not flow controlled");
    }

    #[test]
    fn credits_return_when_the_receiver_frees_its_buffer() {
        let mut a = LinkCredits::new(1, 8, 1_000_000).unwrap();
        let mut b = LinkCredits::new(1, 8, 1_000_000).unwrap();
        exchange(&mut a, &mut b, 0);
        a.sent(0, 8);
        b.received(0, 8).unwrap();
        assert!(!a.can_send(0, 1), "buffer full: the packet waits");
        exchange(&mut a, &mut b, 10);
        assert!(!a.can_send(0, 1), "nothing freed yet");
        b.released(0, 5);
        exchange(&mut a, &mut b, 20);
        assert!(a.can_send(0, 5));
        assert!(!a.can_send(0, 6));
    }

    #[test]
    fn lost_packet_blocks_are_healed_by_the_next_flow_control_packet() {
        let mut a = LinkCredits::new(1, 8, 1_000_000).unwrap();
        let mut b = LinkCredits::new(1, 8, 1_000_000).unwrap();
        exchange(&mut a, &mut b, 0);
        a.sent(0, 3); // lost on the wire: b never sees it
        exchange(&mut a, &mut b, 10);
        assert_eq!(a.send_credits(0).unwrap().available(), 5, "until the refresh");
        exchange(&mut a, &mut b, 1_000_000);
        // b's ABR followed a's FCTBS, so the full buffer is granted again.
        assert_eq!(a.send_credits(0).unwrap().available(), 8);
    }

    #[test]
    fn flow_control_refreshes_periodically_and_on_change_only() {
        let mut a = LinkCredits::new(1, 8, 1_000).unwrap();
        assert!(a.poll_flow_control(0).is_some());
        assert!(a.poll_flow_control(0).is_none());
        assert!(a.poll_flow_control(999).is_none());
        assert_eq!(a.next_refresh_ns(), 1_000);
        assert!(a.poll_flow_control(1_000).is_some());
        a.released(0, 0);
        assert!(a.poll_flow_control(1_001).is_some(), "a change is sent at once");
    }

    #[test]
    fn bad_configuration_is_refused_naming_the_field() {
        assert_eq!(LinkCredits::new(3, 8, 1).unwrap_err(), ConfigError::OperationalVls(3));
        assert_eq!(LinkCredits::new(4, 0, 1).unwrap_err(), ConfigError::BufferBlocks(0));
        assert!(LinkCredits::new(4, 4096, 1).unwrap_err().to_string().starts_with("buffer_blocks"));
    }
}
