//! The running configuration and how it changes: commits from `swcli`'s
//! candidates and from SIGHUP, confirmed commits that roll back by
//! themselves, the commit history, and `save` to the startup file.
//!
//! A commit is validated whole ([`Config::from_yaml`], errors naming each
//! field), checked for changes that cannot apply in place
//! ([`restart_needed`]), then applied as a diff: what runs outside the
//! shim and follows the config's interfaces ([`FollowsConfig`]: the
//! forwarding thread's port I/O and host interfaces, the LLDP agent's
//! sockets) lets go of what leaves, the shim reconciles
//! ([`apply::reconcile`]), and they take up what is new. If any step
//! fails the previous running config is converged back the same way.
//! Either way the running config is the new one or the old one, never a
//! mix.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant, SystemTime};

use mgmt_cli::api::{self, CommitRequest, Reply, Request, Response};
use mgmt_cli::candidate::diff;
use sai_shim::{Backend, Sai};

use crate::access::Peer;
use crate::apply::{self, Applied};
use crate::config::Config;
use crate::daemon::restart_needed;
use crate::mgmt::SwitchView;

/// How many commits `show system commit history` keeps (and `rollback`
/// reaches), the startup config included.
pub const HISTORY: usize = 50;

/// One commit as the history keeps it.
#[derive(Debug, Clone)]
struct Record {
    generation: u64,
    time_unix: u64,
    user: String,
    comment: Option<String>,
    yaml: String,
    confirm: Option<Confirm>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Confirm {
    Pending,
    Confirmed,
    RolledBack,
}

/// A confirmed commit waiting for its confirmation.
struct Pending {
    generation: u64,
    deadline: Instant,
    /// What to go back to: running before the first unconfirmed commit.
    previous: Arc<Config>,
}

struct State {
    running: Arc<Config>,
    applied: Applied,
    generation: u64,
    /// Newest first.
    history: VecDeque<Record>,
    pending: Option<Pending>,
}

/// Something running beside the shim that follows the config's ports
/// and interfaces, moved along by every commit.
pub trait FollowsConfig: Send {
    /// Before the shim reconciles to `target` (`applied` is still the
    /// old one): lets go of the ports and interfaces `target` has not, so
    /// the shim can remove them.
    fn remove_stale(&mut self, target: &Config, applied: &Applied) -> Result<(), String>;
    /// After the shim reconciled to `target` (`applied` is the new one):
    /// takes up what is new.
    fn add_missing(&mut self, target: &Config, applied: &Applied) -> Result<(), String>;
}

/// A follower shared between the daemon (which stops it) and the
/// [`Configurator`] (which moves it).
pub type Follower = Arc<Mutex<dyn FollowsConfig>>;

/// The configuration requests of the management socket, as the server
/// sees them (whatever the backend).
pub trait ConfigService: Send + Sync {
    /// The answer to a configuration request; `None` for the others.
    fn handle(&self, peer: &Peer, request: &Request, now: Instant) -> Option<Response>;
}

impl<B: Backend + Send> ConfigService for Configurator<B> {
    fn handle(&self, peer: &Peer, request: &Request, now: Instant) -> Option<Response> {
        Configurator::handle(self, peer, request, now)
    }
}

/// Owns the running configuration of a daemon.
pub struct Configurator<B: Backend> {
    state: Mutex<State>,
    /// Moved along with the shim, in this order (and back in reverse).
    followers: Mutex<Vec<Follower>>,
    sai: Arc<Mutex<Sai<B>>>,
    view: Arc<RwLock<SwitchView<B>>>,
    /// The startup file `save` writes.
    startup: PathBuf,
}

fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl<B: Backend> Configurator<B> {
    /// `running` as loaded from `startup` and applied (`applied`).
    pub fn new(
        running: Arc<Config>,
        applied: Applied,
        sai: Arc<Mutex<Sai<B>>>,
        view: Arc<RwLock<SwitchView<B>>>,
        startup: PathBuf,
    ) -> Configurator<B> {
        let first = Record {
            generation: 0,
            time_unix: unix_now(),
            user: "startup".into(),
            comment: Some(format!("loaded from {}", startup.display())),
            yaml: running.to_yaml(),
            confirm: None,
        };
        let state = State { running, applied, generation: 0, history: VecDeque::from([first]), pending: None };
        Configurator { state: Mutex::new(state), followers: Mutex::new(Vec::new()), sai, view, startup }
    }

    /// Moves `follower` with every commit from now on (after those added
    /// before it; it lets go before them).
    pub fn follow(&self, follower: Follower) {
        lock(&self.followers).push(follower);
    }

    /// Answers the requests about configuration; `None` for the others.
    pub fn handle(&self, peer: &Peer, request: &Request, now: Instant) -> Option<Response> {
        let result = match request {
            Request::ShowRunningConfig => {
                let state = lock(&self.state);
                Ok(Reply::RunningConfig(api::RunningConfig {
                    yaml: state.running.to_yaml(),
                    generation: state.generation,
                }))
            }
            Request::ShowCommitHistory => Ok(Reply::CommitHistory(self.history(now))),
            Request::ShowCommit { back } => {
                let state = lock(&self.state);
                match state.history.get(*back) {
                    Some(record) => Ok(Reply::RunningConfig(api::RunningConfig {
                        yaml: record.yaml.clone(),
                        generation: record.generation,
                    })),
                    None => Err(format!("no commit {back} back: the history holds {}", state.history.len())),
                }
            }
            Request::Validate { yaml } => self.validate(yaml).map(Reply::Validated),
            Request::Commit(commit) => self.commit(peer, commit, now).map(Reply::Committed),
            Request::Save => self.save().map(Reply::Saved),
            _ => return None,
        };
        Some(match result {
            Ok(reply) => Response::Ok { reply },
            Err(message) => Response::Error { message },
        })
    }

    pub fn generation(&self) -> u64 {
        lock(&self.state).generation
    }

    pub fn running(&self) -> Arc<Config> {
        lock(&self.state).running.clone()
    }

    fn history(&self, now: Instant) -> Vec<api::CommitEntry> {
        let state = lock(&self.state);
        state
            .history
            .iter()
            .map(|record| api::CommitEntry {
                generation: record.generation,
                time_unix: record.time_unix,
                user: record.user.clone(),
                comment: record.comment.clone(),
                confirm: record.confirm.map(|confirm| match confirm {
                    Confirm::Pending => {
                        let left = state
                            .pending
                            .as_ref()
                            .map_or(Duration::ZERO, |p| p.deadline.saturating_duration_since(now));
                        format!("pending {}s", left.as_secs())
                    }
                    Confirm::Confirmed => "confirmed".into(),
                    Confirm::RolledBack => "rolled back".into(),
                }),
            })
            .collect()
    }

    /// `validate`: what `commit` would check, without applying.
    fn validate(&self, yaml: &str) -> Result<api::Validated, String> {
        let candidate = Config::from_yaml(yaml).map_err(|errors| errors.to_string())?;
        let state = lock(&self.state);
        let reasons = restart_needed(&state.running, &candidate);
        if !reasons.is_empty() {
            return Err(restart_refusal(&reasons));
        }
        Ok(api::Validated { diff: diff(&state.running.to_yaml(), &candidate.to_yaml()) })
    }

    /// `commit` of a candidate from a session.
    fn commit(&self, peer: &Peer, request: &CommitRequest, now: Instant) -> Result<api::Committed, String> {
        let mut state = lock(&self.state);
        if request.base_generation != state.generation {
            let base = state.history.iter().find(|r| r.generation == request.base_generation);
            let latest = &state.history[0];
            let changes = match base {
                Some(base) => diff(&base.yaml, &latest.yaml),
                None => "(the candidate's base is no longer in the history)\n".into(),
            };
            return Err(format!(
                "commit refused: running changed since this candidate was copied (generation {} -> {}, \
                 last by {}); start again from running (`discard`) to commit on top of it.\n\
                 Changes to running since:\n{changes}",
                request.base_generation, state.generation, latest.user
            ));
        }
        let candidate = Config::from_yaml(&request.yaml).map_err(|errors| errors.to_string())?;
        let unchanged = candidate.to_yaml() == state.running.to_yaml();
        if unchanged && request.confirm_within_secs.is_none() {
            // A plain `commit` confirms a pending confirmed commit.
            let outcome = match state.pending.take() {
                Some(pending) => {
                    set_confirm(&mut state.history, pending.generation, Confirm::Confirmed);
                    tracing::info!(user = %peer.user, generation = pending.generation, "commit confirmed");
                    "commit confirmed"
                }
                None => "no changes",
            };
            return Ok(api::Committed {
                generation: state.generation,
                rollback_in_secs: None,
                outcome: outcome.into(),
                disrupted: Vec::new(),
            });
        }
        let disrupted = disruptions(&state.running, &candidate);
        self.apply(&mut state, candidate)?;
        let generation = state.generation;
        let previous_pending = state.pending.take();
        if let Some(pending) = &previous_pending {
            set_confirm(&mut state.history, pending.generation, Confirm::Confirmed);
        }
        let rollback_in_secs = request.confirm_within_secs;
        if let Some(secs) = rollback_in_secs {
            let previous = match previous_pending {
                Some(pending) => pending.previous,
                None => Config::from_yaml(&state.history[0].yaml).map(Arc::new).expect("history holds valid configs"),
            };
            state.pending = Some(Pending { generation, deadline: now + Duration::from_secs(secs), previous });
        }
        let yaml = state.running.to_yaml();
        record(
            &mut state.history,
            Record {
                generation,
                time_unix: unix_now(),
                user: peer.user.clone(),
                comment: request.comment.clone(),
                yaml,
                confirm: rollback_in_secs.map(|_| Confirm::Pending),
            },
        );
        tracing::info!(user = %peer.user, generation, comment = ?request.comment, confirm_within_secs = ?rollback_in_secs, "commit");
        Ok(api::Committed { generation, rollback_in_secs, outcome: "committed".into(), disrupted })
    }

    /// SIGHUP: the startup file, committed as the daemon.
    pub fn reload(&self, path: &Path) -> Result<u64, String> {
        let candidate = Config::load(path).map_err(|errors| errors.to_string())?;
        let mut state = lock(&self.state);
        self.apply(&mut state, candidate)?;
        let generation = state.generation;
        let yaml = state.running.to_yaml();
        record(
            &mut state.history,
            Record {
                generation,
                time_unix: unix_now(),
                user: "SIGHUP".into(),
                comment: Some(format!("reload of {}", path.display())),
                yaml,
                confirm: None,
            },
        );
        Ok(generation)
    }

    /// When the pending confirmed commit, if any, rolls back. `None` too
    /// while a commit is being applied: this is asked on the runtime's
    /// threads, which must not wait for a commit that waits for them (EVPN's
    /// follower runs work on the speaker and the route programmer).
    pub fn deadline(&self) -> Option<Instant> {
        let state = match self.state.try_lock() {
            Ok(state) => state,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        state.pending.as_ref().map(|p| p.deadline)
    }

    /// Rolls back a confirmed commit not confirmed by `now`.
    pub fn expire(&self, now: Instant) {
        let mut state = lock(&self.state);
        let Some(pending) = state.pending.take_if(|p| p.deadline <= now) else {
            return;
        };
        let previous = (*pending.previous).clone();
        match self.apply(&mut state, previous) {
            Ok(()) => {
                set_confirm(&mut state.history, pending.generation, Confirm::RolledBack);
                let generation = state.generation;
                let yaml = state.running.to_yaml();
                record(
                    &mut state.history,
                    Record {
                        generation,
                        time_unix: unix_now(),
                        user: "switchd".into(),
                        comment: Some(format!("rollback: commit {} was not confirmed in time", pending.generation)),
                        yaml,
                        confirm: None,
                    },
                );
                tracing::warn!(generation = pending.generation, "confirmed commit not confirmed in time: rolled back");
            }
            Err(error) => tracing::error!(%error, "rollback of an unconfirmed commit failed; it stays"),
        }
    }

    /// Makes `candidate` running: in place, or not at all.
    fn apply(&self, state: &mut State, mut candidate: Config) -> Result<(), String> {
        let reasons = restart_needed(&state.running, &candidate);
        if !reasons.is_empty() {
            return Err(restart_refusal(&reasons));
        }
        // Set once at start, kept by a rename: the switch's MAC, and the
        // socket when its path only follows the name.
        candidate.system_mac = state.running.system_mac;
        candidate.socket = state.running.socket.clone();
        let guid_from_name = crate::ib::follow::guid_from_name(&candidate);
        if let (Some(running), Some(ib)) = (&state.running.ib, &mut candidate.ib)
            && guid_from_name
        {
            ib.guid = running.guid;
        }
        if let Err(error) = self.converge(&mut state.applied, &candidate) {
            tracing::error!(%error, "applying the candidate failed; restoring the running config");
            if let Err(error) = self.converge(&mut state.applied, &state.running) {
                tracing::error!(%error, "could not restore the running config");
            }
            return Err(format!("commit failed and was undone: {error}"));
        }
        state.running = Arc::new(candidate);
        state.generation += 1;
        let mut view = self.view.write().unwrap_or_else(|e| e.into_inner());
        view.config = state.running.clone();
        view.applied = Arc::new(state.applied.clone());
        // `bgp.evpn` follows commits; the shows read it here.
        if let (Some(bgp), Some(config)) = (view.bgp.as_mut(), &state.running.bgp) {
            bgp.config = Arc::new(config.clone());
        }
        Ok(())
    }

    /// Brings the followers and the shim to `target`.
    fn converge(&self, applied: &mut Applied, target: &Config) -> Result<(), String> {
        let followers = lock(&self.followers);
        for follower in followers.iter().rev() {
            lock(follower).remove_stale(target, applied)?;
        }
        apply::reconcile(&mut lock(&self.sai), applied, target).map_err(|error| error.to_string())?;
        for follower in followers.iter() {
            lock(follower).add_missing(target, applied)?;
        }
        Ok(())
    }

    /// `save`: running to the startup file, atomically.
    fn save(&self) -> Result<api::Saved, String> {
        let (yaml, generation) = {
            let state = lock(&self.state);
            (state.running.to_yaml(), state.generation)
        };
        write_atomically(&self.startup, yaml.as_bytes())
            .map_err(|e| format!("cannot save to {}: {e}", self.startup.display()))?;
        tracing::info!(path = %self.startup.display(), generation, "running config saved");
        Ok(api::Saved { path: self.startup.display().to_string(), generation })
    }
}

/// What applying `candidate` in place disrupts, for the commit's answer.
fn disruptions(running: &Config, candidate: &Config) -> Vec<String> {
    let mut disrupted = Vec::new();
    if running.name != candidate.name {
        let socket = match running.source.management.socket {
            None => format!(" and the management socket {}", running.socket.display()),
            Some(_) => String::new(),
        };
        disrupted.push(format!(
            "name: now {} (prompt, LLDP system name, shows); the switch MAC{socket} stay until switchd restarts",
            candidate.name
        ));
    }
    if let (Some(old), Some(new)) = (&running.bgp, &candidate.bgp)
        && let Some(why) = bgp_evpn::events::reconfigure::reset_reason(old, new)
    {
        disrupted.push(format!("{why} (the speaker restarted in place, switchd kept running)"));
    }
    disrupted
}

fn restart_refusal(reasons: &[String]) -> String {
    format!("commit refused, these changes need a restart of switchd: {}", reasons.join("; "))
}

fn record(history: &mut VecDeque<Record>, record: Record) {
    history.push_front(record);
    history.truncate(HISTORY);
}

fn set_confirm(history: &mut VecDeque<Record>, generation: u64, confirm: Confirm) {
    if let Some(record) = history.iter_mut().find(|r| r.generation == generation) {
        record.confirm = Some(confirm);
    }
}

/// Replaces `path` with `contents` so that a crash at any point leaves the
/// old file or the new one: a temporary file in the same directory,
/// written and fsynced, renamed over `path` (atomic within a file
/// system), then the directory fsynced so the rename itself is durable.
pub fn write_atomically(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| std::io::Error::other("the path names no file"))?;
    let prefix = format!(".{}.", name.to_string_lossy());
    // Temporaries of saves killed before their rename are of no use now.
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let stale = entry.file_name().to_str().is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".tmp"));
            if stale {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    let temporary = dir.join(format!("{prefix}{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(contents)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temporary, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

#[cfg(test)]
mod tests;
