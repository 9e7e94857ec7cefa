use super::*;
use crate::packet::Open;

const S: u64 = NANOS_PER_SEC;

fn config() -> SessionConfig {
    SessionConfig::new("192.0.2.2".parse().unwrap(), 65002, 65001, Ipv4Addr::new(1, 1, 1, 1))
}

fn peer_open(hold: u16, id: [u8; 4]) -> Message {
    Message::Open(Open::new(
        65002,
        hold,
        Ipv4Addr::from(id),
        vec![Capability::Multiprotocol(AfiSafi::IPV4_UNICAST), Capability::RouteRefresh],
    ))
}

fn drain(n: &mut Neighbor) -> Vec<Action> {
    core::iter::from_fn(|| n.poll_action()).collect()
}

fn sent(actions: &[Action]) -> Vec<(ConnId, Message)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Send(c, m) => Some((*c, m.clone())),
            _ => None,
        })
        .collect()
}

/// Brings a neighbour to Established over an outgoing connection; returns its id.
fn establish(n: &mut Neighbor, now: u64, peer_hold: u16) -> ConnId {
    n.handle(now, Event::ManualStart);
    let actions = drain(n);
    let Some(Action::Connect(c)) = actions.first().cloned() else { panic!("{actions:?}") };
    n.handle(now, Event::TcpConnected(c));
    let actions = drain(n);
    assert!(matches!(sent(&actions)[..], [(cc, Message::Open(_))] if cc == c));
    assert_eq!(n.state(), State::OpenSent);
    n.handle(now, Event::Message(c, peer_open(peer_hold, [2, 2, 2, 2])));
    assert_eq!(sent(&drain(n)), vec![(c, Message::Keepalive)]);
    assert_eq!(n.state(), State::OpenConfirm);
    n.handle(now, Event::Message(c, Message::Keepalive));
    let actions = drain(n);
    assert!(matches!(&actions[..], [Action::Established(cc, _)] if *cc == c), "{actions:?}");
    c
}

#[test]
fn active_open_reaches_established_and_negotiates_hold_time() {
    let mut n = Neighbor::new(config());
    let c = establish(&mut n, 0, 30);
    assert_eq!(n.state(), State::Established);
    let neg = n.negotiated().unwrap();
    assert_eq!((neg.hold_time, neg.keepalive_time, neg.peer_as), (30, 10, 65002));
    assert_eq!(neg.families, vec![Family::Ipv4Unicast]);
    assert!(neg.ebgp && neg.four_octet_as && neg.route_refresh);
    assert_eq!(n.uptime(5 * S), Some(5 * S));
    assert_eq!((n.counters.sent.open, n.counters.received.open, n.counters.received.keepalive), (1, 1, 1));
    // Keepalive every 10 s.
    assert_eq!(n.poll_timeout(), Some(10 * S));
    n.handle_timeout(10 * S);
    assert_eq!(sent(&drain(&mut n)), vec![(c, Message::Keepalive)]);
    assert_eq!(n.poll_timeout(), Some(20 * S));
}

#[test]
fn hold_timer_expiry_sends_notification_and_restarts() {
    let mut n = Neighbor::new(config());
    let c = establish(&mut n, 0, 9);
    // A keepalive at 2 s pushes the hold deadline to 11 s.
    n.handle(2 * S, Event::Message(c, Message::Keepalive));
    n.handle_timeout(3 * S);
    drain(&mut n);
    n.handle_timeout(10 * S);
    assert_eq!(n.state(), State::Established);
    drain(&mut n);
    n.handle_timeout(11 * S);
    let actions = drain(&mut n);
    assert_eq!(sent(&actions), vec![(c, Message::Notification(Notification { code: 4, subcode: 0, data: vec![] }))]);
    assert!(actions.contains(&Action::Close(c)));
    assert!(actions.iter().any(|a| matches!(a, Action::Down { .. })));
    assert_eq!(n.state(), State::Idle);
    // Automatic restart after the idle hold time.
    n.handle_timeout(12 * S);
    assert!(matches!(drain(&mut n)[..], [Action::Connect(_)]));
    assert_eq!(n.state(), State::Connect);
}

#[test]
fn passive_waits_for_the_peer() {
    let mut cfg = config();
    cfg.passive = true;
    let mut n = Neighbor::new(cfg);
    n.handle(0, Event::ManualStart);
    assert!(drain(&mut n).is_empty());
    assert_eq!(n.state(), State::Active);
    n.handle_timeout(100 * S);
    assert!(drain(&mut n).is_empty(), "a passive neighbour never connects");
    n.handle(S, Event::TcpAccepted(2));
    assert!(matches!(sent(&drain(&mut n))[..], [(2, Message::Open(_))]));
    assert_eq!(n.state(), State::OpenSent);
}

#[test]
fn idle_refuses_connections_and_connect_retry_retries() {
    let mut n = Neighbor::new(config());
    n.handle(0, Event::TcpAccepted(2));
    assert_eq!(drain(&mut n), vec![Action::Close(2)]);
    n.handle(0, Event::ManualStart);
    let [Action::Connect(c1)] = drain(&mut n)[..] else { panic!() };
    n.handle_timeout(10 * S);
    let actions = drain(&mut n);
    assert_eq!(actions[0], Action::Close(c1));
    assert!(matches!(actions[1], Action::Connect(c2) if c2 != c1));
    // A failed connection goes to Active and retries after ConnectRetry.
    let Action::Connect(c2) = actions[1] else { panic!() };
    n.handle(11 * S, Event::TcpClosed(c2));
    assert_eq!(n.state(), State::Active);
    drain(&mut n);
    n.handle_timeout(21 * S);
    assert!(matches!(drain(&mut n)[..], [Action::Connect(_)]));
}

#[test]
fn bad_peer_as_is_refused_with_notification() {
    let mut n = Neighbor::new(config());
    n.handle(0, Event::ManualStart);
    let [Action::Connect(c)] = drain(&mut n)[..] else { panic!() };
    n.handle(0, Event::TcpConnected(c));
    drain(&mut n);
    let open = Open::new(65099, 90, Ipv4Addr::new(2, 2, 2, 2), vec![]);
    n.handle(0, Event::Message(c, Message::Open(open)));
    let actions = drain(&mut n);
    let sent = sent(&actions);
    assert!(matches!(&sent[..], [(_, Message::Notification(Notification { code: 2, subcode: 2, .. }))]), "{sent:?}");
    assert_eq!(n.state(), State::Idle);
}

/// "remote-as external": any AS but ours; the peer's is learned from its OPEN.
#[test]
fn external_only_accepts_any_other_as_and_refuses_ours() {
    let mut cfg = config();
    cfg.remote_as = None;
    cfg.external_only = true;
    let mut n = Neighbor::new(cfg.clone());
    establish(&mut n, 0, 30);
    assert_eq!(n.negotiated().map(|neg| (neg.peer_as, neg.ebgp)), Some((65002, true)));

    let mut n = Neighbor::new(cfg);
    n.handle(0, Event::ManualStart);
    let [Action::Connect(c)] = drain(&mut n)[..] else { panic!() };
    n.handle(0, Event::TcpConnected(c));
    drain(&mut n);
    let open = Open::new(65001, 90, Ipv4Addr::new(2, 2, 2, 2), vec![]);
    n.handle(0, Event::Message(c, Message::Open(open)));
    let sent = sent(&drain(&mut n));
    assert!(matches!(&sent[..], [(_, Message::Notification(Notification { code: 2, subcode: 2, .. }))]), "{sent:?}");
    assert_eq!(n.state(), State::Idle);
}

#[test]
fn zero_hold_time_disables_keepalives() {
    let mut n = Neighbor::new(config());
    establish(&mut n, 0, 0);
    assert_eq!(n.negotiated().unwrap().hold_time, 0);
    assert_eq!(n.poll_timeout(), None);
}

#[test]
fn notification_and_unexpected_messages_end_the_session() {
    let mut n = Neighbor::new(config());
    let c = establish(&mut n, 0, 90);
    n.handle(S, Event::Message(c, Message::Notification(Notification::cease(cease_subcode::ADMIN_SHUTDOWN))));
    let actions = drain(&mut n);
    assert!(actions.contains(&Action::Close(c)));
    assert!(matches!(actions.last(), Some(Action::Down { reason, graceful: false }) if reason.contains("Cease")));
    assert_eq!(n.counters.received.notification, 1);

    // An UPDATE before Established is an FSM error (RFC 6608 subcode 2 in OpenConfirm).
    let mut n = Neighbor::new(config());
    n.handle(0, Event::ManualStart);
    let [Action::Connect(c)] = drain(&mut n)[..] else { panic!() };
    n.handle(0, Event::TcpConnected(c));
    n.handle(0, Event::Message(c, peer_open(90, [2, 2, 2, 2])));
    drain(&mut n);
    n.handle(0, Event::Message(c, Message::Update(Update::default())));
    let sent = sent(&drain(&mut n));
    assert_eq!(sent, vec![(c, Message::Notification(Notification { code: 5, subcode: 2, data: vec![] }))]);
}

#[test]
fn updates_and_refresh_are_passed_up_and_decode_errors_reset() {
    let mut n = Neighbor::new(config());
    let c = establish(&mut n, 0, 90);
    n.handle(S, Event::Message(c, Message::Update(Update::default())));
    assert!(matches!(drain(&mut n)[..], [Action::UpdateReceived(_)]));
    n.handle(S, Event::Message(c, Message::RouteRefresh(RouteRefresh { afi_safi: AfiSafi::IPV4_UNICAST, subtype: 0 })));
    assert_eq!(drain(&mut n), vec![Action::RouteRefreshRequested(AfiSafi::IPV4_UNICAST)]);
    let err = DecodeError::new(ErrorCode::Update, 1, vec![], "test");
    n.handle(S, Event::DecodeError(c, err));
    let actions = drain(&mut n);
    assert_eq!(sent(&actions), vec![(c, Message::Notification(Notification { code: 3, subcode: 1, data: vec![] }))]);
    assert_eq!(n.state(), State::Idle);
    assert_eq!(n.counters.decode_errors, 1);
}

#[test]
fn collision_keeps_the_connection_of_the_higher_identifier() {
    // Peer id 2.2.2.2 > ours 1.1.1.1: the peer's connection wins.
    let mut n = Neighbor::new(config());
    n.handle(0, Event::ManualStart);
    let [Action::Connect(ours)] = drain(&mut n)[..] else { panic!() };
    n.handle(0, Event::TcpConnected(ours));
    drain(&mut n);
    n.handle(0, Event::TcpAccepted(2));
    assert!(matches!(sent(&drain(&mut n))[..], [(2, Message::Open(_))]));
    n.handle(0, Event::Message(2, peer_open(90, [2, 2, 2, 2])));
    let actions = drain(&mut n);
    let collision = Message::Notification(Notification::cease(cease_subcode::CONNECTION_COLLISION));
    assert_eq!(sent(&actions), vec![(ours, collision.clone()), (2, Message::Keepalive)]);
    assert!(actions.contains(&Action::Close(ours)));
    assert_eq!((n.state(), n.conn()), (State::OpenConfirm, Some(2)));
    n.handle(0, Event::Message(2, Message::Keepalive));
    assert!(matches!(drain(&mut n)[..], [Action::Established(2, _)]));

    // Peer id 0.0.0.9 < ours: our connection stays, theirs is closed.
    let mut n = Neighbor::new(config());
    n.handle(0, Event::ManualStart);
    let [Action::Connect(ours)] = drain(&mut n)[..] else { panic!() };
    n.handle(0, Event::TcpConnected(ours));
    n.handle(0, Event::Message(ours, peer_open(90, [0, 0, 0, 9])));
    drain(&mut n);
    assert_eq!(n.state(), State::OpenConfirm);
    n.handle(0, Event::TcpAccepted(4));
    drain(&mut n);
    n.handle(0, Event::Message(4, peer_open(90, [0, 0, 0, 9])));
    let actions = drain(&mut n);
    assert_eq!(sent(&actions), vec![(4, collision)]);
    assert!(actions.contains(&Action::Close(4)));
    assert_eq!((n.state(), n.conn()), (State::OpenConfirm, Some(ours)));
}

#[test]
fn extended_next_hop_is_negotiated_only_when_both_offer_it() {
    let offer = Capability::ExtendedNextHop(vec![ExtendedNextHop::IPV4_UNICAST_OVER_IPV6]);
    let open_with = |caps: Vec<Capability>| Message::Open(Open::new(65002, 90, Ipv4Addr::new(2, 2, 2, 2), caps));
    for (ours, theirs, agreed) in [(true, true, true), (true, false, false), (false, true, false)] {
        let mut config = config();
        config.extended_next_hop = ours;
        assert_eq!(config.open().capabilities.contains(&offer), ours);
        let mut n = Neighbor::new(config);
        n.handle(0, Event::ManualStart);
        let Some(Action::Connect(c)) = drain(&mut n).first().cloned() else { panic!() };
        n.handle(0, Event::TcpConnected(c));
        drain(&mut n);
        let mut caps = vec![Capability::Multiprotocol(AfiSafi::IPV4_UNICAST)];
        if theirs {
            caps.push(offer.clone());
        }
        n.handle(0, Event::Message(c, open_with(caps)));
        n.handle(0, Event::Message(c, Message::Keepalive));
        assert_eq!(n.negotiated().map(|n| n.extended_next_hop), Some(agreed), "ours {ours}, theirs {theirs}");
    }
}

#[test]
fn bfd_down_drops_the_session_with_cease_bfd_down_and_it_restarts() {
    let mut n = Neighbor::new(config());
    // Before OpenConfirm there is nothing to protect yet: ignored.
    n.handle(0, Event::ManualStart);
    drain(&mut n);
    n.handle(0, Event::BfdDown("control detection time expired".into()));
    assert_eq!(n.state(), State::Connect);
    let mut n = Neighbor::new(config());
    let c = establish(&mut n, 0, 90);
    n.handle(S, Event::BfdDown("control detection time expired".into()));
    let actions = drain(&mut n);
    // RFC 9384: Cease, subcode 10 "BFD Down".
    assert_eq!(sent(&actions), vec![(c, Message::Notification(Notification::cease(10)))]);
    assert!(actions.contains(&Action::Close(c)), "{actions:?}");
    assert!(
        actions.iter().any(|a| matches!(a, Action::Down { reason, graceful: false } if reason == "BFD down (control detection time expired)")),
        "{actions:?}"
    );
    assert_eq!(n.state(), State::Idle);
    // Still administratively up: it tries again after the idle hold time.
    assert!(n.poll_timeout().is_some());
}

#[test]
fn interface_down_drops_the_session_without_notification_and_it_restarts() {
    // Nothing to drop before the OPEN goes out.
    let mut n = Neighbor::new(config());
    n.handle(0, Event::ManualStart);
    drain(&mut n);
    n.handle(0, Event::InterfaceDown);
    assert_eq!(n.state(), State::Connect);
    let mut n = Neighbor::new(config());
    let c = establish(&mut n, 0, 90);
    n.handle(S, Event::InterfaceDown);
    let actions = drain(&mut n);
    assert_eq!(sent(&actions), vec![], "the link a NOTIFICATION would take is gone");
    assert!(actions.contains(&Action::Close(c)), "{actions:?}");
    assert!(
        actions.iter().any(|a| matches!(a, Action::Down { reason, graceful: false } if reason == "interface down")),
        "{actions:?}"
    );
    assert_eq!(n.state(), State::Idle);
    assert!(n.poll_timeout().is_some(), "tries again after the idle hold time");
}

#[test]
fn manual_stop_sends_cease_and_stays_down() {
    let mut n = Neighbor::new(config());
    let c = establish(&mut n, 0, 90);
    n.handle(S, Event::ManualStop);
    let actions = drain(&mut n);
    assert_eq!(sent(&actions), vec![(c, Message::Notification(Notification::cease(cease_subcode::ADMIN_SHUTDOWN)))]);
    assert_eq!(n.poll_timeout(), None);
    assert_eq!(n.state(), State::Idle);
}
