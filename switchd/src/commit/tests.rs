use super::*;
use crate::daemon::{build_shim, lldp_agent};
use sai_shim::backend::soft::SoftBackend;

const BASE: &str = "name: s1\nports:\n  - { name: eth1, mode: routed, addresses: [10.0.0.1/24] }\n  - { name: eth2, mode: access, vlan: 10 }\nvlans:\n  - { id: 10 }\n";

fn configurator(startup: &Path) -> Configurator<SoftBackend> {
    std::fs::write(startup, BASE).unwrap();
    let config = Arc::new(Config::load(startup).unwrap());
    let (sai, applied) = build_shim(&config).unwrap();
    let sai = Arc::new(Mutex::new(sai));
    let view = Arc::new(RwLock::new(SwitchView {
        config: config.clone(),
        applied: Arc::new(applied.clone()),
        sai: sai.clone(),
        lldp: Arc::new(Mutex::new(lldp_agent(&config))),
        bgp: None,
        now: Arc::new(|| 0),
        ib: None,
        io_stats: Default::default(),
    }));
    Configurator::new(config, applied, sai, view, startup.to_owned())
}

fn admin() -> Peer {
    Peer { uid: 1000, user: "alice".into(), privilege: Some(mgmt_cli::api::Privilege::Configure) }
}

fn with_route(next_hop: &str) -> String {
    format!("{BASE}routes:\n  - {{ prefix: 10.9.0.0/24, next_hops: [{next_hop}] }}\n")
}

fn commit_request(yaml: &str, base: u64, confirm: Option<u64>) -> Request {
    Request::Commit(CommitRequest {
        yaml: yaml.to_owned(),
        base_generation: base,
        comment: Some("test".into()),
        confirm_within_secs: confirm,
    })
}

fn ok(response: Option<Response>) -> Reply {
    match response.expect("a configuration request") {
        Response::Ok { reply } => reply,
        Response::Error { message } => panic!("refused: {message}"),
    }
}

fn refused(response: Option<Response>) -> String {
    match response.expect("a configuration request") {
        Response::Error { message } => message,
        Response::Ok { reply } => panic!("accepted: {reply:?}"),
    }
}

fn has_route(c: &Configurator<SoftBackend>, prefix: &str) -> bool {
    let view = c.view.read().unwrap().clone();
    view.routes().iter().any(|r| r.prefix == prefix)
}

#[test]
fn a_commit_applies_and_a_bad_one_names_the_field_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let c = configurator(&dir.path().join("s1.yaml"));
    let now = Instant::now();
    let reply = ok(c.handle(&admin(), &commit_request(&with_route("10.0.0.2"), 0, None), now));
    assert!(matches!(reply, Reply::Committed(ref done) if done.generation == 1), "{reply:?}");
    assert!(has_route(&c, "10.9.0.0/24"));

    let message = refused(c.handle(&admin(), &commit_request(&with_route("10.7.7.7"), 1, None), now));
    assert!(message.contains("routes[0].next_hops[0]"), "{message}");
    assert_eq!(c.generation(), 1);
    assert_eq!(c.running().routes[0].next_hops[0].0.to_string(), "10.0.0.2");

    let moved = format!("{}management: {{ socket: /run/s1-elsewhere.sock }}\n", with_route("10.0.0.2"));
    let message = refused(c.handle(&admin(), &commit_request(&moved, 1, None), now));
    assert!(message.contains("need a restart") && message.contains("management.socket"), "{message}");
    assert_eq!(c.generation(), 1);
}

/// A rename applies live; the switch MAC and the socket (its default
/// path derived from the old name) stay, and the answer says so.
#[test]
fn a_rename_applies_live_keeping_the_mac_and_the_socket() {
    let dir = tempfile::tempdir().unwrap();
    let c = configurator(&dir.path().join("s1.yaml"));
    let before = c.running();
    let reply = ok(c.handle(&admin(), &commit_request(&BASE.replace("name: s1", "name: s2"), 0, None), Instant::now()));
    let Reply::Committed(done) = reply else { panic!("{reply:?}") };
    assert!(done.disrupted.iter().any(|d| d.starts_with("name: now s2")), "{:?}", done.disrupted);
    let after = c.running();
    assert_eq!(after.name, "s2");
    assert_eq!((after.system_mac, &after.socket), (before.system_mac, &before.socket));
    assert_ne!(after.system_mac, crate::apply::switch_mac("s2"), "not the new name's MAC");
    assert_eq!(c.view.read().unwrap().config.name, "s2", "the shows read the new name");
}

#[test]
fn a_stale_candidate_is_refused_with_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let c = configurator(&dir.path().join("s1.yaml"));
    let now = Instant::now();
    ok(c.handle(&admin(), &commit_request(&with_route("10.0.0.2"), 0, None), now));
    // A second session copied generation 0 and commits on top of it.
    let message = refused(c.handle(&admin(), &commit_request(&format!("{BASE}  - {{ id: 20 }}\n"), 0, None), now));
    assert!(message.contains("running changed") && message.contains("alice"), "{message}");
    assert!(message.contains("+routes:"), "the diff is shown: {message}");
    assert!(has_route(&c, "10.9.0.0/24"));
}

#[test]
fn a_confirmed_commit_rolls_back_unless_confirmed() {
    let dir = tempfile::tempdir().unwrap();
    let c = configurator(&dir.path().join("s1.yaml"));
    let start = Instant::now();
    let reply = ok(c.handle(&admin(), &commit_request(&with_route("10.0.0.2"), 0, Some(30)), start));
    assert!(matches!(reply, Reply::Committed(ref done) if done.rollback_in_secs == Some(30)));
    c.expire(start + Duration::from_secs(29));
    assert!(has_route(&c, "10.9.0.0/24"), "not yet");
    c.expire(start + Duration::from_secs(30));
    assert!(!has_route(&c, "10.9.0.0/24"), "rolled back");
    assert_eq!(c.generation(), 2);
    let Reply::CommitHistory(history) = ok(c.handle(&admin(), &Request::ShowCommitHistory, start)) else { panic!() };
    assert_eq!(history[0].user, "switchd");
    assert_eq!(history[1].confirm.as_deref(), Some("rolled back"));

    // Confirmed by a plain commit of the same candidate: stays.
    ok(c.handle(&admin(), &commit_request(&with_route("10.0.0.2"), 2, Some(30)), start));
    let reply = ok(c.handle(&admin(), &commit_request(&with_route("10.0.0.2"), 3, None), start));
    assert!(matches!(reply, Reply::Committed(ref done) if done.outcome == "commit confirmed"), "{reply:?}");
    c.expire(start + Duration::from_secs(60));
    assert!(has_route(&c, "10.9.0.0/24"));
    assert_eq!(c.deadline(), None);
}

#[test]
fn history_serves_rollback_and_save_writes_running() {
    let dir = tempfile::tempdir().unwrap();
    let startup = dir.path().join("s1.yaml");
    let c = configurator(&startup);
    let now = Instant::now();
    ok(c.handle(&admin(), &commit_request(&with_route("10.0.0.2"), 0, None), now));
    let Reply::RunningConfig(back) = ok(c.handle(&admin(), &Request::ShowCommit { back: 1 }, now)) else { panic!() };
    assert_eq!(back.generation, 0);
    assert!(!back.yaml.contains("routes"));
    assert!(refused(c.handle(&admin(), &Request::ShowCommit { back: 5 }, now)).contains("no commit 5 back"));
    assert!(!std::fs::read_to_string(&startup).unwrap().contains("10.9.0.0/24"));
    // What a save killed between write and rename leaves behind.
    std::fs::write(dir.path().join(".s1.yaml.99999.tmp"), "name: torn").unwrap();
    ok(c.handle(&admin(), &Request::Save, now));
    let saved = Config::load(&startup).unwrap();
    assert_eq!(saved.routes.len(), 1);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "no temporary file left: {leftovers:?}");
}

#[test]
fn sighup_reload_is_a_commit_by_the_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let startup = dir.path().join("s1.yaml");
    let c = configurator(&startup);
    std::fs::write(&startup, with_route("10.0.0.2")).unwrap();
    assert_eq!(c.reload(&startup), Ok(1));
    assert!(has_route(&c, "10.9.0.0/24"));
    std::fs::write(&startup, with_route("10.9.9.9")).unwrap();
    assert!(c.reload(&startup).unwrap_err().contains("next_hops"));
    assert_eq!(c.generation(), 1);
}

/// Records what a commit asks of it; refuses to take up port `eth9`.
struct Recorder {
    calls: Arc<Mutex<Vec<String>>>,
}

impl FollowsConfig for Recorder {
    fn remove_stale(&mut self, target: &Config, _applied: &Applied) -> Result<(), String> {
        self.calls.lock().unwrap().push(format!("remove_stale {}", target.ports.len()));
        Ok(())
    }

    fn add_missing(&mut self, target: &Config, applied: &Applied) -> Result<(), String> {
        self.calls.lock().unwrap().push(format!("add_missing {}", target.ports.len()));
        // Called after the shim took the target: its ports are there.
        assert!(target.ports.iter().all(|p| applied.ports.contains_key(&p.name)));
        if target.ports.iter().any(|p| p.name == "eth9") {
            return Err("cannot open eth9".into());
        }
        Ok(())
    }
}

#[test]
fn followers_move_with_a_commit_and_back_when_one_fails() {
    let dir = tempfile::tempdir().unwrap();
    let c = configurator(&dir.path().join("startup.yaml"));
    let calls = Arc::new(Mutex::new(Vec::new()));
    c.follow(Arc::new(Mutex::new(Recorder { calls: calls.clone() })));
    let now = Instant::now();

    let three = BASE.replace("vlans:", "  - { name: eth3, mode: routed, addresses: [10.3.0.1/24] }\nvlans:");
    ok(c.handle(&admin(), &commit_request(&three, 0, None), now));
    assert_eq!(*calls.lock().unwrap(), ["remove_stale 3", "add_missing 3"]);
    assert!(has_route(&c, "10.3.0.0/24"), "the new port's connected route");

    calls.lock().unwrap().clear();
    let nine = three.replace("eth3", "eth9").replace("10.3.0", "10.9.0");
    let message = refused(c.handle(&admin(), &commit_request(&nine, 1, None), now));
    assert!(message.contains("cannot open eth9") && message.contains("undone"), "{message}");
    // Forward to the candidate, then back to running.
    assert_eq!(*calls.lock().unwrap(), ["remove_stale 3", "add_missing 3", "remove_stale 3", "add_missing 3"]);
    assert_eq!(c.generation(), 1);
    assert!(has_route(&c, "10.3.0.0/24") && !has_route(&c, "10.9.0.0/24"), "running untouched");
    let eth9 = c.view.read().unwrap().applied.ports.contains_key("eth9");
    assert!(!eth9, "the shim is back at running");
    assert!(!lock(&c.sai).backend().pipeline().routes().any(|(p, _)| p.to_string() == "10.9.0.0/24"));
}

#[test]
fn the_history_keeps_the_last_fifty_commits_with_time_user_and_comment() {
    let dir = tempfile::tempdir().unwrap();
    let c = configurator(&dir.path().join("s1.yaml"));
    let now = Instant::now();
    for i in 0..60u64 {
        let yaml = if i % 2 == 0 { with_route("10.0.0.2") } else { BASE.to_owned() };
        let mut request = commit_request(&yaml, i, None);
        if let Request::Commit(commit) = &mut request {
            commit.comment = Some(format!("change {i}"));
        }
        ok(c.handle(&admin(), &request, now));
    }
    let Reply::CommitHistory(history) = ok(c.handle(&admin(), &Request::ShowCommitHistory, now)) else {
        panic!("a history")
    };
    assert_eq!(history.len(), HISTORY);
    assert_eq!(HISTORY, 50);
    assert_eq!(history[0].generation, 60, "newest first");
    assert_eq!(history[49].generation, 11);
    assert!(history.iter().all(|e| e.user == "alice" && e.time_unix > 0));
    assert_eq!(history[0].comment.as_deref(), Some("change 59"));
}
