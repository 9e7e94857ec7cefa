//! A shell session on one daemon: its mode, its private candidate, and
//! what each command line does. No terminal here: [`Session::execute`]
//! takes a line and returns the text to print, so the one-shot form and
//! tests use it as the interactive shell does.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::grammar::{self, Action, Mode, Token, ValueKind};
use crate::api::{AddressFamily, CommitRequest, Completions, Reply, Request};
use crate::candidate::{Candidate, LIST_KEYS};
use crate::render::Render;
use crate::{Client, ClientError};

/// What one line produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub text: String,
    pub status: Status,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    /// The line did not parse (exit status 2 in the one-shot form).
    Usage,
    /// The daemon refused or failed it (exit status 3).
    Refused,
    /// The daemon could not be reached (exit status 4).
    Unreachable,
    /// A check found an error (exit status 1).
    Failed,
    /// The shell should end.
    Exit,
}

impl Output {
    fn ok(text: impl Into<String>) -> Output {
        Output { text: text.into(), status: Status::Ok }
    }
}

/// Output filters after `|`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pipe {
    Json,
    Grep(String),
    NoMore,
}

const PIPES: &[(&str, &str)] = &[
    ("json", "the answer as JSON"),
    ("grep", "only lines holding a text"),
    ("no-more", "print without paging (the shell never pages)"),
];

/// How long live values for completion are reused.
const LIVE_VALUES_TTL: Duration = Duration::from_secs(2);

/// Fields of the configuration model, by path (`*` is an entry of a keyed
/// list), for completing `set` and `delete` paths beyond what the
/// candidate holds.
const FIELDS: &[(&str, &[&str])] = &[
    (
        "",
        &["name", "log_level", "management", "lldp", "loopback", "ports", "vlans", "vxlan", "routes", "bgp", "metrics"],
    ),
    ("management", &["socket"]),
    ("metrics", &["listen"]),
    ("lldp", &["enabled", "tx_interval_secs", "hold_multiplier"]),
    ("ports *", &["kind", "admin", "mtu", "description", "mode", "vlan", "vlans", "native", "addresses"]),
    ("vlans *", &["name", "members", "addresses"]),
    ("vxlan", &["source", "udp_port", "vnis"]),
    ("vxlan vnis *", &["vlan", "flood"]),
    ("routes *", &["next_hops"]),
    (
        "bgp",
        &[
            "asn",
            "router_id",
            "listen_port",
            "timers",
            "multipath",
            "networks",
            "redistribute",
            "neighbors",
            "prefix_lists",
            "policies",
        ],
    ),
    (
        "bgp neighbors *",
        &[
            "remote_as",
            "description",
            "families",
            "hold_time",
            "connect_retry",
            "passive",
            "next_hop_self",
            "route_reflector_client",
            "import_policy",
            "export_policy",
            "max_prefix",
            "allow_own_as",
            "weight",
            "shutdown",
        ],
    ),
];

/// The values of fields that take one of a few words.
const CHOICES: &[(&str, &[&str])] = &[
    ("admin", &["up", "down"]),
    ("mode", &["access", "trunk", "routed"]),
    ("kind", &["afpacket", "tap"]),
    ("backend", &["soft", "kernel"]),
    ("log_level", &["trace", "debug", "info", "warn", "error"]),
    ("remote_as", &["internal", "external"]),
    ("enabled", &["true", "false"]),
    ("passive", &["true", "false"]),
    ("shutdown", &["true", "false"]),
    ("next_hop_self", &["true", "false"]),
    ("route_reflector_client", &["true", "false"]),
];

pub struct Session {
    client: Client,
    socket: PathBuf,
    /// The switch's name, for the prompt.
    pub name: String,
    pub mode: Mode,
    candidate: Option<Candidate>,
    live: Option<(Instant, Completions)>,
}

/// One completion: the text replacing the word being typed, and its help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub value: String,
    pub help: String,
}

impl Session {
    pub fn connect(socket: &Path) -> Result<Session, ClientError> {
        let client = Client::connect(socket)?;
        let name = "switch".into();
        Ok(Session { client, socket: socket.to_owned(), name, mode: Mode::Operational, candidate: None, live: None })
    }

    /// `show ip route` streamed to `out` as the daemon's chunks arrive:
    /// the table is never whole in memory here or in the daemon. As JSON
    /// (`json`) it is an array of one route a line; as a table, the
    /// legend then each route's lines. Only lines holding every pattern
    /// of `greps` are written. The number of routes.
    pub fn stream_ip_routes(
        &mut self,
        family: AddressFamily,
        json: bool,
        greps: &[String],
        out: &mut dyn std::io::Write,
    ) -> Result<usize, ClientError> {
        let mut emit = |text: &str| -> std::io::Result<()> {
            if greps.is_empty() {
                return out.write_all(text.as_bytes());
            }
            for line in text.lines().filter(|line| greps.iter().all(|pattern| line.contains(pattern.as_str()))) {
                out.write_all(line.as_bytes())?;
                out.write_all(b"\n")?;
            }
            Ok(())
        };
        let started = std::cell::Cell::new(false);
        let output_error = std::cell::Cell::new(None);
        let mut first = true;
        let mut text = String::new();
        let request = Request::StreamIpRoute { family };
        // As JSON each route is the daemon's own bytes, one a line: never
        // decoded here. The table decodes each route to lay it out.
        let mut chunk = |routes: &[&serde_json::value::RawValue]| -> std::io::Result<()> {
            text.clear();
            if !started.replace(true) {
                text.push_str(if json { "[\n" } else { crate::render::IP_ROUTE_CODES });
            }
            for route in routes {
                if json {
                    if !first {
                        text.push_str(",\n");
                    }
                    text.push_str(route.get());
                } else {
                    let route: crate::api::IpRoute = serde_json::from_str(route.get())?;
                    crate::render::render_ip_route(&route, &mut text);
                }
                first = false;
            }
            // Kept apart from the socket's errors: the reader left, not the daemon.
            emit(&text).map_err(|error| {
                let kind = error.kind();
                output_error.set(Some(error));
                std::io::Error::new(kind, "output closed")
            })
        };
        let streamed = match self.client.stream_raw_ip_routes(&request, &mut chunk) {
            // The daemon went away before answering: once more on a new connection.
            Err(ClientError::Io(_) | ClientError::Closed) if !started.get() => {
                Client::connect(&self.socket).and_then(|client| {
                    self.client = client;
                    self.client.stream_raw_ip_routes(&request, &mut chunk)
                })
            }
            other => other,
        };
        if let Some(error) = output_error.take() {
            // The rest of the answer is still on its way: a new connection
            // for what follows (the daemon stops when this one closes).
            if let Ok(client) = Client::connect(&self.socket) {
                self.client = client;
            }
            return Err(ClientError::Output(error));
        }
        let count = streamed?;
        let tail = match (started.get(), json) {
            (false, true) => "[]\n",
            (false, false) => crate::render::IP_ROUTE_CODES,
            (true, true) => "\n]\n",
            (true, false) => "",
        };
        emit(tail).and_then(|()| out.flush()).map_err(ClientError::Output)?;
        Ok(count)
    }

    /// Runs one line as [`Session::execute`] does, but writes the answer
    /// to `out`, as it comes for a route table (`show ip route`, `show
    /// ipv6 route`: streamed, `| grep` applied per line). What is
    /// returned holds only what was not written: the error of a failed
    /// line.
    pub fn execute_to(&mut self, line: &str, out: &mut dyn std::io::Write) -> Output {
        if let Some((family, json, greps)) = self.streamed_route_table(line) {
            return match self.stream_ip_routes(family, json, &greps, out) {
                Ok(_) => Output::ok(""),
                Err(ClientError::Output(error)) => output_failed(error),
                Err(error) => Output { text: format!("error: {error}\n"), status: error_status(&error) },
            };
        }
        let output = self.execute(line);
        if !matches!(output.status, Status::Ok | Status::Failed | Status::Exit) {
            return output;
        }
        match out.write_all(output.text.as_bytes()).and_then(|()| out.flush()) {
            Ok(()) => Output { text: String::new(), status: output.status },
            Err(error) => output_failed(error),
        }
    }

    /// The family, `| json` and `| grep` patterns of a route table line.
    fn streamed_route_table(&self, line: &str) -> Option<(AddressFamily, bool, Vec<String>)> {
        let mut parts = line.split('|');
        let command = parts.next()?.trim();
        let mut json = false;
        let mut greps = Vec::new();
        for part in parts {
            match parse_pipe(part.trim()).ok()? {
                Pipe::Json => json = true,
                Pipe::Grep(pattern) => greps.push(pattern),
                Pipe::NoMore => {}
            }
        }
        match grammar::parse(command, self.mode) {
            Ok(Action::Request(Request::ShowIpRoute { family })) => Some((family, json, greps)),
            _ => None,
        }
    }

    /// Learns the switch's name for the prompt.
    pub fn fetch_name(&mut self) -> Result<(), ClientError> {
        if let Reply::RunningConfig(running) = self.request(&Request::ShowRunningConfig)? {
            self.name = yaml_name(&running.yaml).unwrap_or_else(|| "switch".into());
        }
        Ok(())
    }

    pub fn prompt(&self) -> String {
        match self.mode {
            Mode::Operational => format!("{}> ", self.name),
            Mode::Configure => {
                let changed = self.candidate.as_ref().is_some_and(Candidate::changed);
                format!("{}(config{})# ", self.name, if changed { "*" } else { "" })
            }
        }
    }

    /// Sends a request, reconnecting once if the daemon went away.
    fn request(&mut self, request: &Request) -> Result<Reply, ClientError> {
        match self.client.request(request) {
            Err(ClientError::Io(_) | ClientError::Closed) => {
                self.client = Client::connect(&self.socket)?;
                self.client.request(request)
            }
            other => other,
        }
    }

    /// Runs one line: `COMMAND [| json] [| grep TEXT] [| no-more]`.
    pub fn execute(&mut self, line: &str) -> Output {
        let mut parts = line.split('|');
        let command = parts.next().unwrap_or_default().trim();
        if command.is_empty() {
            return Output::ok("");
        }
        let mut pipes = Vec::new();
        for part in parts {
            match parse_pipe(part.trim()) {
                Ok(pipe) => pipes.push(pipe),
                Err(message) => return Output { text: format!("{message}\n"), status: Status::Usage },
            }
        }
        let action = match grammar::parse(command, self.mode) {
            Ok(action) => action,
            Err(message) => return Output { text: format!("error: {message}\n"), status: Status::Usage },
        };
        let json = pipes.contains(&Pipe::Json);
        let mut output = match self.run(action, json) {
            Ok(output) => output,
            Err(error) => Output { text: format!("error: {error}\n"), status: error_status(&error) },
        };
        for pipe in &pipes {
            if let Pipe::Grep(pattern) = pipe {
                output.text =
                    output.text.lines().filter(|l| l.contains(pattern.as_str())).map(|l| format!("{l}\n")).collect();
            }
        }
        output
    }

    fn run(&mut self, action: Action, json: bool) -> Result<Output, ClientError> {
        let text = match action {
            Action::Request(request) => {
                let reply = self.request(&request)?;
                let failed = matches!(&reply, Reply::LosslessFindings(f) if f.iter().any(|f| f.is_error()));
                let text = if json { json_payload(&reply) } else { reply.render() };
                if failed {
                    return Ok(Output { text, status: Status::Failed });
                }
                text
            }
            Action::ShowInterface(name) => {
                let Reply::Interfaces(mut all) = self.request(&Request::ShowInterfaces)? else {
                    return Err(ClientError::Server("unexpected answer to show interfaces".into()));
                };
                all.retain(|i| i.name == name);
                if all.is_empty() {
                    return Ok(usage(format!("no interface {name}")));
                }
                let reply = Reply::Interfaces(all);
                if json { json_payload(&reply) } else { reply.render() }
            }
            Action::Help => help_text(self.mode),
            Action::Configure => {
                self.candidate = Some(self.copy_running()?);
                self.mode = Mode::Configure;
                "entering configuration mode: a private candidate copied from running\n".into()
            }
            Action::ShowCandidate => self.candidate()?.to_yaml(),
            Action::Compare => {
                let diff = self.candidate()?.compare();
                if diff.is_empty() { "no changes\n".into() } else { diff }
            }
            Action::Set { path, value } => {
                let path: Vec<&str> = path.iter().map(String::as_str).collect();
                if let Err(error) = self.candidate_mut()?.set(&path, &value) {
                    return Ok(usage(error));
                }
                String::new()
            }
            Action::Delete { path } => {
                let path: Vec<&str> = path.iter().map(String::as_str).collect();
                if let Err(error) = self.candidate_mut()?.delete(&path) {
                    return Ok(usage(error));
                }
                String::new()
            }
            Action::CommitCheck => {
                let yaml = self.candidate()?.to_yaml();
                self.request(&Request::Validate { yaml })?.render()
            }
            Action::Commit { confirm_within_secs, comment } => {
                let candidate = self.candidate()?;
                let request = Request::Commit(CommitRequest {
                    yaml: candidate.to_yaml(),
                    base_generation: candidate.base_generation,
                    comment,
                    confirm_within_secs,
                });
                let reply = self.request(&request)?;
                // Go on from the new running configuration.
                self.candidate = Some(self.copy_running()?);
                reply.render()
            }
            Action::Rollback(back) => {
                let Reply::RunningConfig(old) = self.request(&Request::ShowCommit { back })? else {
                    return Err(ClientError::Server("unexpected answer to show commit".into()));
                };
                if let Err(error) = self.candidate_mut()?.load(&old.yaml) {
                    return Ok(usage(error));
                }
                format!("loaded generation {} into the candidate; `show compare`, then `commit`\n", old.generation)
            }
            Action::Discard => {
                self.candidate = Some(self.copy_running()?);
                "candidate reset to running\n".into()
            }
            Action::Save => self.request(&Request::Save)?.render(),
            Action::Abort => {
                self.candidate = None;
                self.mode = Mode::Operational;
                "left configuration mode; candidate dropped\n".into()
            }
            Action::Exit => match self.mode {
                Mode::Configure if self.candidate.as_ref().is_some_and(Candidate::changed) => {
                    return Ok(usage("the candidate has uncommitted changes: `commit` them, or `abort` to drop them"));
                }
                Mode::Configure => {
                    self.candidate = None;
                    self.mode = Mode::Operational;
                    String::new()
                }
                Mode::Operational => return Ok(Output { text: String::new(), status: Status::Exit }),
            },
        };
        Ok(Output::ok(text))
    }

    fn copy_running(&mut self) -> Result<Candidate, ClientError> {
        match self.request(&Request::ShowRunningConfig)? {
            Reply::RunningConfig(running) => {
                // A commit (this session's or another's) may have renamed the switch.
                if let Some(name) = yaml_name(&running.yaml) {
                    self.name = name;
                }
                Candidate::new(&running.yaml, running.generation).map_err(|e| ClientError::Server(e.to_string()))
            }
            _ => Err(ClientError::Server("unexpected answer to show running-config".into())),
        }
    }

    fn candidate(&self) -> Result<&Candidate, ClientError> {
        self.candidate.as_ref().ok_or_else(|| ClientError::Server("not in configuration mode".into()))
    }

    fn candidate_mut(&mut self) -> Result<&mut Candidate, ClientError> {
        self.candidate.as_mut().ok_or_else(|| ClientError::Server("not in configuration mode".into()))
    }

    fn live_values(&mut self) -> Completions {
        if let Some((at, values)) = &self.live
            && at.elapsed() < LIVE_VALUES_TTL
        {
            return values.clone();
        }
        let values = match self.request(&Request::ShowCompletions) {
            Ok(Reply::Completions(values)) => values,
            _ => Completions::default(),
        };
        self.live = Some((Instant::now(), values.clone()));
        values
    }

    /// What may replace the word being typed at the end of `line`.
    pub fn complete(&mut self, line: &str) -> Vec<Completion> {
        let (_, partial) = split_partial(line);
        let mut out: Vec<Completion> = self
            .next_words(line)
            .into_iter()
            .filter(|c| c.value.starts_with(partial) && !c.value.starts_with('<') && c.value != "|")
            .collect();
        out.dedup_by(|a, b| a.value == b.value);
        out
    }

    /// `?`: what may follow, one line of help each.
    pub fn help_at(&mut self, line: &str) -> String {
        let (typed, partial) = split_partial(line);
        let mut rows: Vec<Completion> = self
            .next_words(line)
            .into_iter()
            .filter(|c| c.value.starts_with(partial) || c.value.starts_with('<'))
            .collect();
        rows.dedup_by(|a, b| a.value == b.value);
        let words = grammar_words(&typed, self.mode);
        if partial.is_empty() && !line.contains('|') && grammar::complete_command(&words, self.mode) {
            rows.push(Completion { value: "<cr>".into(), help: "run the command".into() });
        }
        if rows.is_empty() {
            return "  (nothing may follow)\n".into();
        }
        let width = rows.iter().map(|r| r.value.len()).max().unwrap_or(0);
        rows.iter().map(|r| format!("  {:<width$}  {}\n", r.value, r.help)).collect()
    }

    /// Every word that may come next (placeholders as `<name>`, followed by
    /// the live values they take).
    fn next_words(&mut self, line: &str) -> Vec<Completion> {
        let (typed, _) = split_partial(line);
        if let Some(after_pipe) = line.rsplit_once('|').map(|(_, rest)| rest) {
            let (piped, _) = split_partial(after_pipe);
            if piped.is_empty() {
                return PIPES.iter().map(|(v, h)| Completion { value: (*v).into(), help: (*h).into() }).collect();
            }
            return Vec::new();
        }
        let words = grammar_words(&typed, self.mode);
        let mut out = Vec::new();
        for (token, help) in grammar::candidates_at(&words, self.mode) {
            match token {
                Token::Keyword(word) => out.push(Completion { value: word.into(), help }),
                Token::Value(kind, _) => {
                    out.push(Completion { value: token.text(), help: help.clone() });
                    out.extend(
                        self.values_of(kind, &words).into_iter().map(|(value, help)| Completion { value, help }),
                    );
                }
            }
        }
        if !words.is_empty() && grammar::complete_command(&words, self.mode) {
            out.push(Completion { value: "|".into(), help: "filter the output: json, grep, no-more".into() });
        }
        out
    }

    fn values_of(&mut self, kind: ValueKind, words: &[String]) -> Vec<(String, String)> {
        let live = |session: &mut Session| session.live_values();
        match kind {
            ValueKind::Interface => live(self).interfaces.into_iter().map(|i| (i, "interface".into())).collect(),
            ValueKind::Neighbor => {
                live(self).neighbors.into_iter().map(|n| (n.to_string(), "neighbour".into())).collect()
            }
            ValueKind::Prefix => live(self).prefixes.into_iter().map(|p| (p, "prefix".into())).collect(),
            ValueKind::Vlan => live(self).vlans.into_iter().map(|v| (v.to_string(), "VLAN".into())).collect(),
            ValueKind::Vni => live(self).vnis.into_iter().map(|v| (v.to_string(), "VNI".into())).collect(),
            ValueKind::Path => self.path_children(&words[1..]),
            _ => Vec::new(),
        }
    }

    /// Completions of a configuration path: what the candidate holds
    /// there, the model's fields, and live names for new list entries.
    fn path_children(&mut self, path: &[String]) -> Vec<(String, String)> {
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        let mut out: Vec<(String, String)> = Vec::new();
        if let Some(candidate) = &self.candidate {
            out.extend(candidate.children(&path).into_iter().map(|c| (c, "in the candidate".into())));
        }
        if let Some((_, choices)) = path.last().and_then(|field| CHOICES.iter().find(|(name, _)| name == field)) {
            out.extend(choices.iter().map(|c| ((*c).to_owned(), "value".to_owned())));
        }
        let pattern = path_pattern(&path);
        if let Some((_, fields)) = FIELDS.iter().find(|(p, _)| *p == pattern) {
            out.extend(fields.iter().map(|f| ((*f).to_owned(), "field".to_owned())));
        }
        match path.as_slice() {
            ["ports"] => {
                let ports = self.live_values().interfaces.into_iter().filter(|i| i.starts_with("eth"));
                out.extend(ports.map(|p| (p, "port".into())));
            }
            ["vlans"] => out.extend(self.live_values().vlans.into_iter().map(|v| (v.to_string(), "VLAN".into()))),
            _ => {}
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|(value, _)| seen.insert(value.clone()));
        out
    }
}

/// What a failed request says about who failed: the connection, or the daemon.
fn error_status(error: &ClientError) -> Status {
    match error {
        ClientError::Connect { .. } | ClientError::Io(_) | ClientError::Closed => Status::Unreachable,
        _ => Status::Refused,
    }
}

/// The answer could not be written. A reader that left early (`swcli
/// show ip route | head -1`: a broken pipe) is no failure: the shell ends
/// quietly with status 0, as [`Status::Exit`]. Anything else is an error
/// of its own (exit status 1).
fn output_failed(error: std::io::Error) -> Output {
    if error.kind() == std::io::ErrorKind::BrokenPipe {
        return Output { text: String::new(), status: Status::Exit };
    }
    Output { text: format!("error: output: {error}\n"), status: Status::Failed }
}

/// A mistake in the line itself, not the daemon's.
fn usage(error: impl std::fmt::Display) -> Output {
    Output { text: format!("error: {error}\n"), status: Status::Usage }
}

/// `ports eth1` -> `ports *`: entries of keyed lists become `*`.
fn path_pattern(path: &[&str]) -> String {
    let mut out: Vec<&str> = Vec::new();
    for (i, word) in path.iter().enumerate() {
        let in_list = i > 0 && LIST_KEYS.iter().any(|(list, _)| *list == path[i - 1]);
        out.push(if in_list { "*" } else { word });
    }
    out.join(" ")
}

/// The complete words of `line` and the word being typed ("" after a space).
fn split_partial(line: &str) -> (Vec<String>, &str) {
    let partial = if line.ends_with(char::is_whitespace) { "" } else { line.split_whitespace().last().unwrap_or("") };
    let complete = &line[..line.len() - partial.len()];
    (complete.split_whitespace().map(str::to_owned).collect(), partial)
}

/// The typed words with abbreviations expanded as the parser would.
fn grammar_words(typed: &[String], mode: Mode) -> Vec<String> {
    let raw: Vec<&str> = typed.iter().map(String::as_str).collect();
    grammar::expand(&raw, mode)
}

fn parse_pipe(text: &str) -> Result<Pipe, String> {
    let mut words = text.split_whitespace();
    match (words.next(), words.collect::<Vec<_>>().join(" ")) {
        (Some("json"), rest) if rest.is_empty() => Ok(Pipe::Json),
        (Some("no-more"), rest) if rest.is_empty() => Ok(Pipe::NoMore),
        (Some("grep"), pattern) if !pattern.is_empty() => Ok(Pipe::Grep(pattern)),
        _ => Err(format!("error: unknown filter | {text}; filters: | json, | grep TEXT, | no-more")),
    }
}

/// The reply's payload as pretty JSON (what `--json` prints).
pub fn json_payload(reply: &Reply) -> String {
    let value = serde_json::to_value(reply).expect("reply serializes");
    let data = value.get("data").cloned().unwrap_or(value);
    format!("{}\n", serde_json::to_string_pretty(&data).expect("json value serializes"))
}

fn help_text(mode: Mode) -> String {
    let templates: Vec<_> = grammar::TEMPLATES.iter().filter(|t| t.modes.contains(&mode)).collect();
    let usage = |t: &grammar::Template| -> String {
        let words: Vec<String> = t.tokens.iter().map(Token::text).collect();
        match t.optional_from {
            from if from < words.len() => format!("{} [{}]", words[..from].join(" "), words[from..].join(" ")),
            _ => words.join(" "),
        }
    };
    let width = templates.iter().map(|t| usage(t).len()).max().unwrap_or(0);
    let mut text: String = templates.iter().map(|t| format!("  {:<width$}  {}\n", usage(t), t.help)).collect();
    text.push_str(
        "  ... | json | grep TEXT | no-more    filter the output\n  ? lists what may follow, Tab completes\n",
    );
    text
}

fn yaml_name(yaml: &str) -> Option<String> {
    let value: serde_yaml::Value = serde_yaml::from_str(yaml).ok()?;
    value.get("name")?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_map_list_entries_to_patterns() {
        assert_eq!(path_pattern(&["ports", "eth1"]), "ports *");
        assert_eq!(path_pattern(&["bgp", "neighbors", "10.0.0.1"]), "bgp neighbors *");
        assert_eq!(path_pattern(&[]), "");
        assert_eq!(split_partial("show in"), (vec!["show".to_owned()], "in"));
        assert_eq!(split_partial("show "), (vec!["show".to_owned()], ""));
    }

    #[test]
    fn pipes_parse() {
        assert_eq!(parse_pipe("json"), Ok(Pipe::Json));
        assert_eq!(parse_pipe("grep eth 1"), Ok(Pipe::Grep("eth 1".into())));
        assert!(parse_pipe("sort").is_err());
        assert!(help_text(Mode::Configure).contains("commit confirmed <duration> [comment <text>]"));
    }
}
