//! One BFD session's state machine (RFC 5880 section 6.2, reception 6.8.6,
//! timers 6.8.2-6.8.4, Poll/Final 6.5), asynchronous mode without echo or
//! demand, sans-IO: packets and time in, packets to send and state changes
//! out. Times are nanoseconds on the caller's clock; intervals on the wire
//! are microseconds.

use super::packet::{ControlRepr, Diagnostic, State};

const MICROSECOND: u64 = 1_000;
/// RFC 5880 6.8.3: while the session is not Up, packets go no faster than
/// one a second.
const SLOW_TX_US: u32 = 1_000_000;

/// What the operator (or BGP, registering a neighbour) asks of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionConfig {
    /// bfd.DesiredMinTxInterval once Up, microseconds.
    pub desired_min_tx_us: u32,
    /// bfd.RequiredMinRxInterval, microseconds.
    pub required_min_rx_us: u32,
    /// bfd.DetectMult.
    pub detect_mult: u8,
}

impl Default for SessionConfig {
    /// FRR's defaults: 300 ms both ways, multiplier 3.
    fn default() -> SessionConfig {
        SessionConfig { desired_min_tx_us: 300_000, required_min_rx_us: 300_000, detect_mult: 3 }
    }
}

/// A state change, for the session's users (BGP drops its neighbour on
/// `Down` from `Up`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    pub from: State,
    pub to: State,
    pub diagnostic: Diagnostic,
}

/// The state variables of RFC 5880 section 6.8.1, and the timers.
#[derive(Debug, Clone)]
pub struct Session {
    config: SessionConfig,
    state: State,
    remote_state: State,
    local_discriminator: u32,
    remote_discriminator: u32,
    local_diagnostic: Diagnostic,
    /// The desired transmit interval in force (slow while not Up, RFC
    /// 5880 6.8.3), and whether a Poll Sequence is announcing a change.
    desired_min_tx_us: u32,
    polling: bool,
    remote_desired_min_tx_us: u32,
    remote_min_rx_us: u32,
    remote_detect_mult: u8,
    /// A received Poll awaits our Final (RFC 5880 6.5).
    final_due: bool,
    next_tx: u64,
    /// When the session goes Down for want of packets (Init and Up), or
    /// forgets the remote discriminator (Down); `u64::MAX` = not armed.
    detection_deadline: u64,
    last_received: Option<u64>,
    /// For the transmit jitter (RFC 5880 6.8.7), xorshift state.
    jitter: u32,
}

impl Session {
    /// A session in Down, sending its first packet at `now`.
    /// `local_discriminator` must be non-zero and unique on the system.
    pub fn new(config: SessionConfig, local_discriminator: u32, now: u64) -> Session {
        assert_ne!(local_discriminator, 0, "RFC 5880 6.8.1: the local discriminator is non-zero");
        Session {
            config,
            state: State::Down,
            remote_state: State::Down,
            local_discriminator,
            remote_discriminator: 0,
            local_diagnostic: Diagnostic::None,
            desired_min_tx_us: config.desired_min_tx_us.max(SLOW_TX_US),
            polling: false,
            // RFC 5880 6.8.1: the remote's RequiredMinRxInterval starts at 1.
            remote_desired_min_tx_us: 0,
            remote_min_rx_us: 1,
            remote_detect_mult: 0,
            final_due: false,
            next_tx: now,
            detection_deadline: u64::MAX,
            last_received: None,
            jitter: local_discriminator | 1,
        }
    }

    pub fn state(&self) -> State {
        self.state
    }

    pub fn remote_state(&self) -> State {
        self.remote_state
    }

    pub fn local_discriminator(&self) -> u32 {
        self.local_discriminator
    }

    pub fn remote_discriminator(&self) -> u32 {
        self.remote_discriminator
    }

    pub fn diagnostic(&self) -> Diagnostic {
        self.local_diagnostic
    }

    pub fn config(&self) -> SessionConfig {
        self.config
    }

    /// What the remote last asked for: its desired transmit and required
    /// receive intervals (microseconds) and its detection multiplier.
    pub fn remote_timers(&self) -> (u32, u32, u8) {
        (self.remote_desired_min_tx_us, self.remote_min_rx_us, self.remote_detect_mult)
    }

    /// When the last packet for this session arrived (caller's clock).
    pub fn last_received(&self) -> Option<u64> {
        self.last_received
    }

    /// The negotiated transmit interval (RFC 5880 6.8.2): the larger of
    /// ours and what the remote can receive, in microseconds.
    pub fn tx_interval_us(&self) -> u32 {
        self.desired_min_tx_us.max(self.remote_min_rx_us)
    }

    /// The detection time (RFC 5880 6.8.4, asynchronous mode): the
    /// remote's multiplier times the larger of what we can receive and
    /// what it wants to send, in microseconds.
    pub fn detection_time_us(&self) -> u64 {
        u64::from(self.remote_detect_mult)
            * u64::from(self.config.required_min_rx_us.max(self.remote_desired_min_tx_us))
    }

    /// The next time [`Session::poll`] or [`Session::transmit`] has work.
    pub fn next_wakeup(&self) -> u64 {
        if self.final_due { 0 } else { self.next_tx.min(self.detection_deadline) }
    }

    /// A received packet already checked by [`ControlRepr::parse`] and
    /// demultiplexed to this session (RFC 5880 6.8.6, from "If the Your
    /// Discriminator field is zero and the State field is not Down or
    /// AdminDown, discard"). Returns the state change it caused.
    pub fn receive(&mut self, now: u64, packet: &ControlRepr) -> Option<Transition> {
        if packet.your_discriminator == 0 && !matches!(packet.state, State::Down | State::AdminDown) {
            return None;
        }
        if packet.your_discriminator != 0 && packet.your_discriminator != self.local_discriminator {
            return None;
        }
        self.remote_discriminator = packet.my_discriminator;
        self.remote_state = packet.state;
        self.remote_desired_min_tx_us = packet.desired_min_tx_us;
        self.remote_detect_mult = packet.detect_mult;
        let remote_min_rx_changed = self.remote_min_rx_us != packet.required_min_rx_us;
        self.remote_min_rx_us = packet.required_min_rx_us;
        if packet.final_ && self.polling {
            // RFC 5880 6.5: the remote acknowledged our new parameters.
            self.polling = false;
        }
        if packet.poll {
            self.final_due = true;
        }
        self.last_received = Some(now);
        if remote_min_rx_changed {
            // RFC 5880 6.8.3: a longer interval the remote asks for applies now.
            self.next_tx = self.next_tx.min(now.saturating_add(self.jittered_interval()));
        }
        if self.state == State::AdminDown {
            return None;
        }
        let transition = match (self.state, packet.state) {
            (State::Down, _) | (State::Init, _) | (State::Up, _) if packet.state == State::AdminDown => {
                (self.state != State::Down).then(|| self.go(State::Down, Diagnostic::NeighborSignaledSessionDown))
            }
            (State::Down, State::Down) => Some(self.go(State::Init, Diagnostic::None)),
            (State::Down, State::Init) | (State::Init, State::Init | State::Up) => {
                Some(self.go(State::Up, Diagnostic::None))
            }
            (State::Up, State::Down) => Some(self.go(State::Down, Diagnostic::NeighborSignaledSessionDown)),
            _ => None,
        };
        self.arm_detection(now);
        transition
    }

    /// Runs the detection timer (RFC 5880 6.8.4): in Init or Up, no packet
    /// within the detection time takes the session Down; in Down, the
    /// remote discriminator is forgotten (6.8.1).
    pub fn poll(&mut self, now: u64) -> Option<Transition> {
        if now < self.detection_deadline {
            return None;
        }
        self.detection_deadline = u64::MAX;
        match self.state {
            State::Init | State::Up => {
                let transition = self.go(State::Down, Diagnostic::ControlDetectionTimeExpired);
                self.remote_discriminator = 0;
                Some(transition)
            }
            _ => {
                self.remote_discriminator = 0;
                None
            }
        }
    }

    /// The packet to send at `now`, if one is due: the periodic one
    /// (jittered, RFC 5880 6.8.7), or at once a Final answering a Poll.
    /// No periodic packet goes while the remote asks for none (its
    /// RequiredMinRxInterval is 0, 6.8.7).
    pub fn transmit(&mut self, now: u64) -> Option<ControlRepr> {
        if self.final_due {
            self.final_due = false;
            return Some(self.packet(false, true));
        }
        if now < self.next_tx || (self.remote_min_rx_us == 0 && self.remote_discriminator != 0) {
            return None;
        }
        self.next_tx = now.saturating_add(self.jittered_interval());
        Some(self.packet(self.polling, false))
    }

    /// Takes the session administratively down (RFC 5880 6.8.16), or
    /// back to Down to start again.
    pub fn set_admin_down(&mut self, down: bool, now: u64) -> Option<Transition> {
        match (down, self.state) {
            (true, State::AdminDown) | (false, State::Down | State::Init | State::Up) => None,
            (true, _) => Some(self.go(State::AdminDown, Diagnostic::AdministrativelyDown)),
            (false, State::AdminDown) => {
                self.next_tx = now;
                Some(self.go(State::Down, Diagnostic::None))
            }
        }
    }

    fn go(&mut self, to: State, diagnostic: Diagnostic) -> Transition {
        let from = self.state;
        self.state = to;
        if diagnostic != Diagnostic::None || to == State::Up {
            self.local_diagnostic = diagnostic;
        }
        // RFC 5880 6.8.3: slow while not Up; the fast rate once Up, told
        // to the remote with a Poll Sequence (its detection time depends on it).
        let desired =
            if to == State::Up { self.config.desired_min_tx_us } else { SLOW_TX_US.max(self.config.desired_min_tx_us) };
        if desired != self.desired_min_tx_us {
            self.desired_min_tx_us = desired;
            self.polling = to == State::Up;
        }
        // Tell the remote at once, without waiting for the (slow) timer:
        // each step of the three-way handshake costs one packet, not one second.
        self.next_tx = 0;
        Transition { from, to, diagnostic }
    }

    fn arm_detection(&mut self, now: u64) {
        self.detection_deadline = now.saturating_add(self.detection_time_us() * MICROSECOND);
    }

    /// The transmit interval less 0-25 % (RFC 5880 6.8.7; at most 90 % of
    /// it when the multiplier is 1), in nanoseconds.
    fn jittered_interval(&mut self) -> u64 {
        self.jitter ^= self.jitter << 13;
        self.jitter ^= self.jitter >> 17;
        self.jitter ^= self.jitter << 5;
        let interval = u64::from(self.tx_interval_us()) * MICROSECOND;
        let (low, span) = if self.config.detect_mult == 1 { (75, 15) } else { (75, 25) };
        let percent = low + u64::from(self.jitter) % (span + 1);
        interval * percent / 100
    }

    fn packet(&self, poll: bool, final_: bool) -> ControlRepr {
        ControlRepr {
            diagnostic: self.local_diagnostic,
            state: self.state,
            poll,
            final_,
            control_plane_independent: false,
            demand: false,
            detect_mult: self.config.detect_mult,
            my_discriminator: self.local_discriminator,
            your_discriminator: self.remote_discriminator,
            desired_min_tx_us: self.desired_min_tx_us,
            required_min_rx_us: self.config.required_min_rx_us,
            required_min_echo_rx_us: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const FAST: SessionConfig =
        SessionConfig { desired_min_tx_us: 100_000, required_min_rx_us: 100_000, detect_mult: 3 };

    /// Delivers every packet each side has due at `now` to the other.
    fn exchange(a: &mut Session, b: &mut Session, now: u64) -> Vec<Transition> {
        let mut changes = Vec::new();
        for _ in 0..4 {
            let (from_a, from_b) = (a.transmit(now), b.transmit(now));
            if from_a.is_none() && from_b.is_none() {
                break;
            }
            if let Some(packet) = from_a {
                changes.extend(b.receive(now, &packet));
            }
            if let Some(packet) = from_b {
                changes.extend(a.receive(now, &packet));
            }
        }
        changes
    }

    /// Runs both sessions from `start` for `duration`, in 1 ms steps.
    fn run(a: &mut Session, b: &mut Session, start: u64, duration: u64) -> Vec<Transition> {
        let mut changes = Vec::new();
        let mut now = start;
        while now < start + duration {
            changes.extend(a.poll(now));
            changes.extend(b.poll(now));
            changes.extend(exchange(a, b, now));
            now += MS;
        }
        changes
    }

    #[test]
    fn two_sessions_come_up_through_the_three_way_handshake() {
        let mut a = Session::new(FAST, 1, 0);
        let mut b = Session::new(FAST, 2, 0);
        // A's Down reaches B: B goes Init; B's Init reaches A: A goes Up; A's Up: B goes Up.
        let changes = run(&mut a, &mut b, 0, 10 * MS);
        assert_eq!((a.state(), b.state()), (State::Up, State::Up), "{changes:?}");
        assert_eq!((a.remote_discriminator(), b.remote_discriminator()), (2, 1));
        // Up, both send at the negotiated 100 ms less jitter, and the Poll
        // Sequence announcing it ends with a Final.
        run(&mut a, &mut b, 10 * MS, 500 * MS);
        assert!(!a.polling && !b.polling, "poll sequences done");
        assert_eq!(a.tx_interval_us(), 100_000);
        assert_eq!(a.detection_time_us(), 300_000, "3 x 100 ms");
    }

    #[test]
    fn silence_takes_the_session_down_after_the_detection_time() {
        let mut a = Session::new(FAST, 1, 0);
        let mut b = Session::new(FAST, 2, 0);
        run(&mut a, &mut b, 0, 500 * MS);
        assert_eq!(a.state(), State::Up);
        // B falls silent (a cut link): A notices within 3 x 100 ms.
        let cut = 500 * MS;
        let mut now = cut;
        let mut went_down = None;
        while now < cut + 600 * MS {
            if let Some(change) = a.poll(now) {
                went_down = Some((now, change));
                break;
            }
            let _ = a.transmit(now);
            now += MS;
        }
        let (at, change) = went_down.expect("detected");
        assert_eq!(
            change,
            Transition { from: State::Up, to: State::Down, diagnostic: Diagnostic::ControlDetectionTimeExpired }
        );
        assert!(at - cut <= 300 * MS, "within the detection time: {} ms", (at - cut) / MS);
        assert_eq!(a.remote_discriminator(), 0);
        // Down, A sends slowly again, and tells why.
        let packet = a.transmit(now + SLOW_TX_US as u64 * MICROSECOND).unwrap();
        assert_eq!(
            (packet.state, packet.diagnostic, packet.desired_min_tx_us),
            (State::Down, Diagnostic::ControlDetectionTimeExpired, SLOW_TX_US)
        );
    }

    #[test]
    fn the_remote_going_down_or_admin_down_takes_the_session_down() {
        let mut a = Session::new(FAST, 1, 0);
        let mut b = Session::new(FAST, 2, 0);
        run(&mut a, &mut b, 0, 500 * MS);
        let change = b.set_admin_down(true, 500 * MS).unwrap();
        assert_eq!(change.to, State::AdminDown);
        let changes = exchange(&mut a, &mut b, 500 * MS);
        assert_eq!(
            changes,
            vec![Transition { from: State::Up, to: State::Down, diagnostic: Diagnostic::NeighborSignaledSessionDown }]
        );
        // An admin-down session ignores what it receives; back up, it starts again.
        b.set_admin_down(false, 600 * MS);
        run(&mut a, &mut b, 600 * MS, 3_000 * MS);
        assert_eq!((a.state(), b.state()), (State::Up, State::Up));
    }

    #[test]
    fn a_poll_is_answered_with_a_final_at_once() {
        let mut a = Session::new(FAST, 1, 0);
        let poll = ControlRepr {
            diagnostic: Diagnostic::None,
            state: State::Down,
            poll: true,
            final_: false,
            control_plane_independent: false,
            demand: false,
            detect_mult: 3,
            my_discriminator: 77,
            your_discriminator: 0,
            desired_min_tx_us: 1_000_000,
            required_min_rx_us: 300_000,
            required_min_echo_rx_us: 0,
        };
        let _ = a.transmit(0);
        a.receive(5 * MS, &poll);
        let reply = a.transmit(5 * MS).expect("a Final does not wait for the timer");
        assert!(reply.final_ && !reply.poll);
        assert_eq!((reply.your_discriminator, reply.state), (77, State::Init));
        // Packets for another discriminator, or Up with none, are discarded.
        assert_eq!(a.receive(6 * MS, &ControlRepr { your_discriminator: 5, state: State::Up, ..poll }), None);
        assert_eq!(a.receive(6 * MS, &ControlRepr { your_discriminator: 0, state: State::Up, ..poll }), None);
        assert_eq!(a.state(), State::Init);
    }

    #[test]
    fn the_transmit_interval_is_jittered_between_75_and_100_percent() {
        let mut a = Session::new(FAST, 0x1234, 0);
        a.remote_min_rx_us = 100_000;
        a.desired_min_tx_us = 100_000;
        let intervals: Vec<u64> = (0..200).map(|_| a.jittered_interval()).collect();
        assert!(intervals.iter().all(|&i| (75 * MS..=100 * MS).contains(&i)));
        assert!(intervals.iter().any(|&i| i < 85 * MS) && intervals.iter().any(|&i| i > 90 * MS));
    }
}
