//! The session table: peers by address and sessions by local
//! discriminator, the demultiplexing of RFC 5880 section 6.8.6 and the
//! single-hop checks of RFC 5881 section 5, sans-IO. The I/O task feeds it
//! datagrams (with their TTL) and the time, and sends what it returns.

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::packet::{ControlPacket, ControlRepr, HEADER_LEN, PacketError, TTL};
use super::session::{Session, SessionConfig, Transition};

/// Why a datagram was not given to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Discard {
    Packet(PacketError),
    /// RFC 5881 section 5: single-hop packets arrive with TTL 255 (GTSM).
    Ttl(u8),
    /// No session for that discriminator or, with none, that address.
    NoSession,
}

/// Every BFD session of the system, keyed by peer address.
#[derive(Debug, Default)]
pub struct Sessions {
    by_peer: BTreeMap<IpAddr, Session>,
    peer_of: BTreeMap<u32, IpAddr>,
    next_discriminator: u32,
}

impl Sessions {
    pub fn new() -> Sessions {
        Sessions::default()
    }

    /// Starts a session with `peer` (no-op if one exists); returns its
    /// local discriminator.
    pub fn add(&mut self, peer: IpAddr, config: SessionConfig, now: u64) -> u32 {
        if let Some(session) = self.by_peer.get(&peer) {
            return session.local_discriminator();
        }
        self.next_discriminator = self.next_discriminator.wrapping_add(1).max(1);
        while self.peer_of.contains_key(&self.next_discriminator) {
            self.next_discriminator = self.next_discriminator.wrapping_add(1).max(1);
        }
        let discriminator = self.next_discriminator;
        self.by_peer.insert(peer, Session::new(config, discriminator, now));
        self.peer_of.insert(discriminator, peer);
        discriminator
    }

    pub fn remove(&mut self, peer: IpAddr) {
        if let Some(session) = self.by_peer.remove(&peer) {
            self.peer_of.remove(&session.local_discriminator());
        }
    }

    pub fn get(&self, peer: IpAddr) -> Option<&Session> {
        self.by_peer.get(&peer)
    }

    pub fn iter(&self) -> impl Iterator<Item = (IpAddr, &Session)> {
        self.by_peer.iter().map(|(peer, session)| (*peer, session))
    }

    /// A datagram received from `from` on UDP 3784 with IP TTL (hop
    /// limit) `ttl`: checked, demultiplexed (by Your Discriminator, else
    /// by the source address) and given to its session. Returns the
    /// session's peer and the state change the packet caused.
    pub fn receive(
        &mut self,
        now: u64,
        from: IpAddr,
        ttl: u8,
        datagram: &[u8],
    ) -> Result<(IpAddr, Option<Transition>), Discard> {
        if ttl != TTL {
            return Err(Discard::Ttl(ttl));
        }
        let packet = ControlPacket::new_checked(datagram).map_err(Discard::Packet)?;
        let repr = ControlRepr::parse(&packet).map_err(Discard::Packet)?;
        let peer = match repr.your_discriminator {
            0 => from,
            discriminator => *self.peer_of.get(&discriminator).ok_or(Discard::NoSession)?,
        };
        let session = self.by_peer.get_mut(&peer).ok_or(Discard::NoSession)?;
        Ok((peer, session.receive(now, &repr)))
    }

    /// Runs the detection timers; the sessions that changed state.
    pub fn poll(&mut self, now: u64) -> Vec<(IpAddr, Transition)> {
        self.by_peer.iter_mut().filter_map(|(peer, session)| Some((*peer, session.poll(now)?))).collect()
    }

    /// The packets due at `now`, each with the peer to send it to.
    pub fn transmit(&mut self, now: u64) -> Vec<(IpAddr, [u8; HEADER_LEN])> {
        let mut out = Vec::new();
        for (peer, session) in &mut self.by_peer {
            if let Some(repr) = session.transmit(now) {
                let mut buf = [0u8; HEADER_LEN];
                repr.emit(&mut buf);
                out.push((*peer, buf));
            }
        }
        out
    }

    /// The earliest time any session has work.
    pub fn next_wakeup(&self) -> u64 {
        self.by_peer.values().map(Session::next_wakeup).min().unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::super::packet::State;
    use super::*;

    const MS: u64 = 1_000_000;
    const FAST: SessionConfig =
        SessionConfig { desired_min_tx_us: 100_000, required_min_rx_us: 100_000, detect_mult: 3 };

    #[test]
    fn two_tables_bring_their_session_up_over_datagrams_and_gtsm_is_enforced() {
        let (a_addr, b_addr): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let mut a = Sessions::new();
        let mut b = Sessions::new();
        a.add(b_addr, FAST, 0);
        b.add(a_addr, FAST, 0);
        b.add("10.0.0.9".parse().unwrap(), FAST, 0);
        let mut now = 0;
        while now < 50 * MS {
            for (to, bytes) in a.transmit(now) {
                assert_eq!(to, b_addr);
                let _ = b.receive(now, a_addr, TTL, &bytes);
            }
            for (to, bytes) in b.transmit(now) {
                if to == a_addr {
                    let _ = a.receive(now, b_addr, TTL, &bytes);
                }
            }
            now += MS;
        }
        assert_eq!(a.get(b_addr).unwrap().state(), State::Up);
        assert_eq!(b.get(a_addr).unwrap().state(), State::Up);
        assert_eq!(b.get("10.0.0.9".parse().unwrap()).unwrap().state(), State::Down);
        // A packet that crossed a router (TTL below 255) is refused.
        let (_, bytes) = a.transmit(10 * 1_000 * MS).pop().unwrap();
        assert_eq!(b.receive(now, a_addr, 254, &bytes), Err(Discard::Ttl(254)));
        // Unknown discriminators and strangers find no session.
        let mut stray = bytes;
        stray[8..12].copy_from_slice(&999u32.to_be_bytes());
        assert_eq!(b.receive(now, a_addr, TTL, &stray), Err(Discard::NoSession));
        assert_eq!(
            a.receive(now, "10.9.9.9".parse().unwrap(), TTL, &{
                let mut down = bytes;
                down[1] = 0x40;
                down[8..12].fill(0);
                down
            }),
            Err(Discard::NoSession)
        );
        // Silence from A: B's session goes down within the detection time.
        let changes: Vec<_> = (0..400).flat_map(|step| b.poll(now + step * MS)).collect();
        assert!(changes.iter().any(|(peer, t)| *peer == a_addr && t.to == State::Down), "{changes:?}");
    }
}
