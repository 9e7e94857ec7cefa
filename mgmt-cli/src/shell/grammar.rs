//! The shell's commands: one table of templates that parsing, Tab
//! completion and `?` help all read, so they cannot disagree.
//!
//! A template is words: keywords, `<value>` placeholders (completed from
//! the daemon's live values where it has them), and at most one trailing
//! `[<optional>]`. Keywords may be abbreviated to any unique prefix
//! (`sh int`).

use crate::api::{AddressFamily, PgWatermarkKind, Request};
use std::sync::LazyLock;

/// Where the shell is: what commands mean depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Operational,
    Configure,
}

/// What a parsed line asks the session to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// One request whose reply is shown (every operational `show`).
    Request(Request),
    /// `show interfaces NAME`: one row of `show interfaces`.
    ShowInterface(String),
    Configure,
    ShowCandidate,
    Compare,
    Set {
        path: Vec<String>,
        value: String,
    },
    Delete {
        path: Vec<String>,
    },
    Commit {
        confirm_within_secs: Option<u64>,
        comment: Option<String>,
    },
    CommitCheck,
    Rollback(usize),
    Discard,
    Save,
    Exit,
    Abort,
    Help,
}

/// The kinds of value a placeholder takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    Interface,
    Neighbor,
    Prefix,
    Vlan,
    Vni,
    /// `5` (minutes), `30s`, `2m`.
    Duration,
    Number,
    /// The rest of the line.
    Text,
    /// A configuration path (all words but the value for `set`).
    Path,
    /// A YAML value.
    Value,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    Keyword(&'static str),
    Value(ValueKind, &'static str),
}

impl Token {
    pub fn text(&self) -> String {
        match self {
            Token::Keyword(word) => (*word).to_owned(),
            Token::Value(_, name) => format!("<{name}>"),
        }
    }
}

type Build = fn(&[String]) -> Result<Action, String>;

pub struct Template {
    pub tokens: Vec<Token>,
    /// Tokens from this index on may be left out (the `[...]` part).
    pub optional_from: usize,
    pub help: &'static str,
    pub modes: &'static [Mode],
    /// From the values the placeholders took, in order.
    build: Build,
}

const ANY: &[Mode] = &[Mode::Operational, Mode::Configure];
const OPERATIONAL: &[Mode] = &[Mode::Operational];
const CONFIGURE: &[Mode] = &[Mode::Configure];

fn request(request: Request) -> Result<Action, String> {
    Ok(Action::Request(request))
}

fn parse_value<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("{text:?} is not {what}"))
}

/// `5` is minutes (as Junos counts), `30s` seconds, `2m` minutes.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let bad = || format!("{text:?} is not a duration (minutes, or 30s, 2m)");
    let (number, unit) = match text.strip_suffix('s') {
        Some(n) => (n, 1),
        None => (text.strip_suffix('m').unwrap_or(text), 60),
    };
    let n: u64 = number.parse().map_err(|_| bad())?;
    if n == 0 {
        return Err(bad());
    }
    Ok(n * unit)
}

fn bgp_routes(family: AddressFamily, args: &[String]) -> Result<Action, String> {
    request(Request::ShowBgpRoutes { family, prefix: args.first().cloned() })
}

/// FRR's route type words, or the number.
fn evpn_route_type(text: &str) -> Result<u8, String> {
    match text {
        "1" | "ead" => Ok(1),
        "2" | "macip" => Ok(2),
        "3" | "multicast" => Ok(3),
        "4" | "es" => Ok(4),
        "5" | "prefix" => Ok(5),
        _ => Err(format!("{text:?}: a route type is 1-5, ead, macip, multicast, es or prefix")),
    }
}

/// A VNI, or `all` (`None`).
fn vni_or_all(text: &str) -> Result<Option<u32>, String> {
    match text {
        "all" => Ok(None),
        vni => parse_value(vni, "a VNI or all").map(Some),
    }
}

/// The commands, as `(words, help, modes, build)`.
const COMMANDS: &[(&str, &str, &[Mode], Build)] = &[
    ("show interfaces", "ports and VLAN interfaces: state, addresses, counters", ANY, |_| {
        request(Request::ShowInterfaces)
    }),
    ("show interfaces counters", "per-port counters, as SONiC shows them", ANY, |_| {
        request(Request::ShowInterfacesCounters)
    }),
    ("show interfaces <interface>", "one interface: state, addresses, counters", ANY, |args| {
        Ok(Action::ShowInterface(args[0].clone()))
    }),
    ("show mac", "the MAC address table", ANY, |_| request(Request::ShowMac)),
    ("show vxlan", "VTEP, VNI mappings, flood lists, remote VTEPs", ANY, |_| request(Request::ShowVxlan)),
    ("show neighbors", "the ARP and neighbour discovery cache", ANY, |_| request(Request::ShowNeighbors)),
    ("show arp", "the ARP and neighbour discovery cache", ANY, |_| request(Request::ShowNeighbors)),
    ("show routes", "the forwarding table", ANY, |_| request(Request::ShowRoutes)),
    ("show lldp", "LLDP neighbours", ANY, |_| request(Request::ShowLldp)),
    ("show running-config", "the running configuration, as YAML", ANY, |_| request(Request::ShowRunningConfig)),
    ("show drops", "frames dropped, by reason and ingress port", ANY, |_| request(Request::ShowDrops)),
    ("check lossless", "PFC, headroom, ECN Kmin below XOFF, watchdog, on this switch", ANY, |_| {
        request(Request::CheckLossless)
    }),
    ("show lossless profile", "what the fabric-wide lossless check reads from this switch", ANY, |_| {
        request(Request::ShowLosslessProfile)
    }),
    ("show backend", "what forwards (soft pipeline or kernel) and how VLANs map", ANY, |_| {
        request(Request::ShowBackend)
    }),
    ("show bgp summary", "one line per BGP neighbour", ANY, |_| request(Request::ShowBgpSummary)),
    ("show bgp neighbors [<neighbor>]", "BGP sessions in detail", ANY, |args| {
        let address = args.first().map(|a| parse_value(a, "an IP address")).transpose()?;
        request(Request::ShowBgpNeighbors { address })
    }),
    ("show bfd peers", "BFD sessions: state, intervals, multiplier, uptime, counters", ANY, |_| {
        request(Request::ShowBfdPeers)
    }),
    ("show bgp ipv4 unicast [<prefix>]", "the IPv4 BGP table, or one prefix", ANY, |args| {
        bgp_routes(AddressFamily::Ipv4, args)
    }),
    ("show bgp ipv6 unicast [<prefix>]", "the IPv6 BGP table, or one prefix", ANY, |args| {
        bgp_routes(AddressFamily::Ipv6, args)
    }),
    ("show ip route", "the IPv4 routing table with protocols", ANY, |_| {
        request(Request::ShowIpRoute { family: AddressFamily::Ipv4 })
    }),
    ("show ipv6 route", "the IPv6 routing table with protocols", ANY, |_| {
        request(Request::ShowIpRoute { family: AddressFamily::Ipv6 })
    }),
    ("show ip route vrf <text>", "one VRF's IPv4 routing table", ANY, |args| {
        request(Request::ShowIpRouteVrf { family: AddressFamily::Ipv4, vrf: args[0].clone() })
    }),
    ("show ipv6 route vrf <text>", "one VRF's IPv6 routing table", ANY, |args| {
        request(Request::ShowIpRouteVrf { family: AddressFamily::Ipv6, vrf: args[0].clone() })
    }),
    ("show pfc counters", "PFC frames sent and received per port and priority", ANY, |_| {
        request(Request::ShowPfcCounters)
    }),
    ("show queue counters", "egress queues: frames and bytes sent, dropped, waiting", ANY, |_| {
        request(Request::ShowQueueCounters)
    }),
    ("show queue wredcounters", "egress queues: WRED drops and ECN marks", ANY, |_| {
        request(Request::ShowQueueWredCounters)
    }),
    ("show queue watermark", "egress queues: highest occupancy", ANY, |_| request(Request::ShowQueueWatermark)),
    ("show priority-group watermark headroom", "ingress priority groups: highest headroom use", ANY, |_| {
        request(Request::ShowPriorityGroupWatermark { kind: PgWatermarkKind::Headroom })
    }),
    ("show priority-group watermark shared", "ingress priority groups: highest shared use", ANY, |_| {
        request(Request::ShowPriorityGroupWatermark { kind: PgWatermarkKind::Shared })
    }),
    ("show buffer pool", "the shared buffer: size, use, watermark, drops by reason", ANY, |_| {
        request(Request::ShowBufferPool)
    }),
    ("show pfcwd stats", "the PFC watchdog: storms detected and restored per queue", ANY, |_| {
        request(Request::ShowPfcwdStats)
    }),
    ("show dlb", "dynamic load balancing: groups, members, quality, flowlets, moves", ANY, |_| {
        request(Request::ShowDlb)
    }),
    ("show ib port", "IB-like ports: state, credits per VL, PortCounters", ANY, |_| request(Request::ShowIbPorts)),
    ("show ib ports", "IB-like ports: state, credits per VL, PortCounters", ANY, |_| request(Request::ShowIbPorts)),
    ("show ib counters", "IB-like ports' PortCounters; the agent's SMPs, M_Key violations and traps", ANY, |_| {
        request(Request::ShowIbCounters)
    }),
    ("show ib lft [<text>]", "this switch's LFT, or another switch's (name or GUID) from the SM here", ANY, |args| {
        request(Request::ShowIbLft { switch: args.first().cloned() })
    }),
    ("show ib sm", "the subnet manager in this switch: state, priority, sweeps", ANY, |_| request(Request::ShowIbSm)),
    ("show ib topology", "the IB-like fabric the subnet manager here discovered", ANY, |_| {
        request(Request::ShowIbTopology)
    }),
    (
        "show ib routes balance",
        "the SM's last routing: routes per port, edge-forwarding index, deadlock free per VL",
        ANY,
        |_| request(Request::ShowIbRoutesBalance),
    ),
    ("show bgp l2vpn evpn", "the EVPN BGP table: every route and path", ANY, |_| {
        request(Request::ShowBgpEvpn { route_type: None })
    }),
    (
        "show bgp l2vpn evpn route [type <text>]",
        "EVPN routes, or those of one type (1-5, macip, multicast, prefix)",
        ANY,
        |args| request(Request::ShowBgpEvpn { route_type: args.first().map(|t| evpn_route_type(t)).transpose()? }),
    ),
    ("show evpn vni [<vni>]", "MAC-VRFs and L3VNIs: RD, route targets, MACs, remote VTEPs", ANY, |args| {
        request(Request::ShowEvpnVni { vni: args.first().map(|v| parse_value(v, "a VNI")).transpose()? })
    }),
    (
        "show evpn mac vni <text>",
        "EVPN MACs of a VNI (or all): local or behind which VTEP, sequence, moves",
        ANY,
        |args| request(Request::ShowEvpnMac { vni: vni_or_all(&args[0])? }),
    ),
    ("show evpn arp-cache vni <text>", "ARP/ND bindings of a VNI (or all), local and from EVPN", ANY, |args| {
        request(Request::ShowEvpnArpCache { vni: vni_or_all(&args[0])? })
    }),
    (
        "show evpn next-hops [vni <text>]",
        "remote VTEPs of the L3VNIs (or of one): router MAC, VRF routes through each",
        ANY,
        |args| request(Request::ShowEvpnNextHops { vni: args.first().map(|v| vni_or_all(v)).transpose()?.flatten() }),
    ),
    ("show vrf", "IP-VRFs with their L3VNI, router MAC and EVPN routes", ANY, |_| request(Request::ShowVrf)),
    ("show system commit history", "the last commits: time, user, comment", ANY, |_| {
        request(Request::ShowCommitHistory)
    }),
    ("configure", "edit a private candidate copy of the running configuration", OPERATIONAL, |_| Ok(Action::Configure)),
    ("save", "write the running configuration to the startup file", ANY, |_| Ok(Action::Save)),
    ("show", "the candidate configuration", CONFIGURE, |_| Ok(Action::ShowCandidate)),
    ("show compare", "the candidate's changes to running, as a diff", CONFIGURE, |_| Ok(Action::Compare)),
    ("compare", "the candidate's changes to running, as a diff", CONFIGURE, |_| Ok(Action::Compare)),
    ("set <path> <value>", "set a field of the candidate (value in YAML: 9000, up, [10, 20])", CONFIGURE, |args| {
        let (value, path) = args.split_last().ok_or("set needs a path and a value")?;
        Ok(Action::Set { path: path.to_vec(), value: value.clone() })
    }),
    ("delete <path>", "remove a field or an entry from the candidate", CONFIGURE, |args| {
        Ok(Action::Delete { path: args.to_vec() })
    }),
    ("commit [comment <text>]", "validate the candidate and make it running", CONFIGURE, |args| {
        Ok(Action::Commit { confirm_within_secs: None, comment: args.first().cloned() })
    }),
    (
        "commit confirmed <duration> [comment <text>]",
        "commit, rolled back unless `commit` follows within the time (minutes, or 30s)",
        CONFIGURE,
        |args| {
            Ok(Action::Commit { confirm_within_secs: Some(parse_duration(&args[0])?), comment: args.get(1).cloned() })
        },
    ),
    ("commit check", "validate the candidate without committing", CONFIGURE, |_| Ok(Action::CommitCheck)),
    ("rollback <n>", "load the configuration of N commits ago into the candidate", CONFIGURE, |args| {
        Ok(Action::Rollback(parse_value(&args[0], "a number of commits")?))
    }),
    ("discard", "drop the candidate's changes and start again from running", CONFIGURE, |_| Ok(Action::Discard)),
    ("abort", "leave configuration mode, dropping the candidate", CONFIGURE, |_| Ok(Action::Abort)),
    ("exit", "leave configuration mode (or the shell)", ANY, |_| Ok(Action::Exit)),
    ("quit", "leave the shell", OPERATIONAL, |_| Ok(Action::Exit)),
    ("help", "list the commands", ANY, |_| Ok(Action::Help)),
];

/// One-line help of the words that lead to several commands.
const GROUPS: &[(&str, &str)] = &[
    ("show", "show state"),
    ("show bgp", "the BGP speaker: sessions and tables"),
    ("show bgp ipv4", "IPv4 tables"),
    ("show bgp ipv6", "IPv6 tables"),
    ("show bgp l2vpn", "L2VPN tables"),
    ("show evpn", "EVPN: VNIs, MACs, ARP/ND bindings"),
    ("show evpn mac", "EVPN MACs"),
    ("show evpn arp-cache", "ARP/ND bindings"),
    ("show ip", "IPv4 routing"),
    ("show ipv6", "IPv6 routing"),
    ("show system", "the system"),
    ("show ib", "the IB-like plane: ports, LFTs, the subnet manager"),
    ("show system commit", "commits"),
    ("commit", "validate the candidate and make it running"),
];

fn value_kind(name: &str) -> ValueKind {
    match name {
        "interface" => ValueKind::Interface,
        "neighbor" => ValueKind::Neighbor,
        "prefix" => ValueKind::Prefix,
        "vlan" => ValueKind::Vlan,
        "vni" => ValueKind::Vni,
        "duration" => ValueKind::Duration,
        "n" => ValueKind::Number,
        "text" => ValueKind::Text,
        "path" => ValueKind::Path,
        "value" => ValueKind::Value,
        other => panic!("unknown placeholder <{other}>"),
    }
}

pub static TEMPLATES: LazyLock<Vec<Template>> = LazyLock::new(|| {
    COMMANDS
        .iter()
        .map(|(words, help, modes, build)| {
            let mut tokens = Vec::new();
            let mut optional_from = None;
            let optional_start = words.find('[');
            for (offset, word) in word_offsets(words) {
                if optional_from.is_none() && optional_start.is_some_and(|start| offset >= start) {
                    optional_from = Some(tokens.len());
                }
                let word = word.trim_matches(|c| c == '[' || c == ']');
                tokens.push(match word.strip_prefix('<').and_then(|w| w.strip_suffix('>')) {
                    Some(name) => Token::Value(value_kind(name), name_static(name)),
                    None => Token::Keyword(keyword_static(word)),
                });
            }
            let optional_from = optional_from.unwrap_or(tokens.len());
            Template { tokens, optional_from, help, modes, build: *build }
        })
        .collect()
});

fn word_offsets(text: &'static str) -> impl Iterator<Item = (usize, &'static str)> {
    text.split(' ').scan(0, |offset, word| {
        let at = *offset;
        *offset += word.len() + 1;
        Some((at, word))
    })
}

fn keyword_static(word: &str) -> &'static str {
    // Every keyword is a substring of COMMANDS, which is 'static.
    COMMANDS
        .iter()
        .flat_map(|(words, ..)| words.split(' '))
        .map(|w| w.trim_matches(|c| c == '[' || c == ']'))
        .find(|w| *w == word)
        .expect("the keyword comes from COMMANDS")
}

fn name_static(name: &str) -> &'static str {
    ["interface", "neighbor", "prefix", "vlan", "vni", "duration", "n", "text", "path", "value"]
        .into_iter()
        .find(|n| *n == name)
        .expect("known placeholder")
}

/// How `words` fit `template`: the placeholder values, or `None`.
fn matches(template: &Template, words: &[String]) -> Option<Vec<String>> {
    let required = template.optional_from;
    let mut args = Vec::new();
    let mut i = 0;
    for (t, token) in template.tokens.iter().enumerate() {
        if i == words.len() {
            return (t >= required || t == template.tokens.len()).then_some(args);
        }
        match token {
            Token::Keyword(keyword) => {
                if words[i] != *keyword {
                    return None;
                }
                i += 1;
            }
            Token::Value(ValueKind::Text | ValueKind::Path, _) if t == template.tokens.len() - 1 => {
                args.extend(match token {
                    Token::Value(ValueKind::Text, _) => vec![words[i..].join(" ")],
                    _ => words[i..].to_vec(),
                });
                i = words.len();
            }
            Token::Value(ValueKind::Path, _) => {
                // `set <path> <value>`: the path is every word but the last.
                if words.len() - i < 2 {
                    return None;
                }
                args.extend(words[i..].iter().cloned());
                i = words.len();
                break;
            }
            Token::Value(..) => {
                args.push(words[i].clone());
                i += 1;
            }
        }
    }
    (i == words.len()).then_some(args)
}

/// Expands unique keyword prefixes (`sh int` -> `show interfaces`).
pub fn expand(words: &[&str], mode: Mode) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in words {
        let position = out.len();
        let keywords: Vec<&str> = candidates_at(&out, mode)
            .into_iter()
            .filter_map(|(token, _)| match token {
                Token::Keyword(k) => Some(k),
                Token::Value(..) => None,
            })
            .collect();
        let expanded = if keywords.contains(word) {
            (*word).to_owned()
        } else {
            let mut starting: Vec<&str> = keywords.iter().copied().filter(|k| k.starts_with(word)).collect();
            starting.dedup();
            match starting.as_slice() {
                [only] => (*only).to_owned(),
                _ => (*word).to_owned(),
            }
        };
        debug_assert_eq!(out.len(), position);
        out.push(expanded);
    }
    out
}

/// The tokens that may follow `words` in `mode`, each with its help.
pub fn candidates_at(words: &[String], mode: Mode) -> Vec<(Token, String)> {
    let mut out: Vec<(Token, String)> = Vec::new();
    for template in TEMPLATES.iter().filter(|t| t.modes.contains(&mode)) {
        let Some(next) = next_token(template, words) else { continue };
        let help = match &next {
            // A keyword that leads to several commands has a group help.
            Token::Keyword(_) => {
                let mut prefix: Vec<String> = words.to_vec();
                prefix.push(next.text());
                let prefix = prefix.join(" ");
                GROUPS
                    .iter()
                    .find(|(group, _)| *group == prefix)
                    .map_or_else(|| template.help.to_owned(), |(_, help)| (*help).to_owned())
            }
            Token::Value(..) => template.help.to_owned(),
        };
        if !out.iter().any(|(token, _)| *token == next) {
            out.push((next, help));
        }
    }
    out
}

/// The token of `template` after `words` (which must match its start).
fn next_token(template: &Template, words: &[String]) -> Option<Token> {
    let mut i = 0;
    for token in &template.tokens {
        if i == words.len() {
            return Some(token.clone());
        }
        match token {
            Token::Keyword(keyword) => {
                if words[i] != *keyword {
                    return None;
                }
                i += 1;
            }
            // Paths and text take every further word.
            Token::Value(ValueKind::Text | ValueKind::Path, _) => return Some(token.clone()),
            Token::Value(..) => i += 1,
        }
    }
    None
}

/// Whether `words` already form a whole command (`<cr>` may follow).
pub fn complete_command(words: &[String], mode: Mode) -> bool {
    TEMPLATES.iter().filter(|t| t.modes.contains(&mode)).any(|t| matches(t, words).is_some())
}

/// The words of a command line, where a YAML flow value (`[10, 20]`,
/// `{ mode: routed, mtu: 9000 }`) or a quoted string stays one word.
pub fn split_words(line: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut start = None;
    let mut depth = 0usize;
    let mut quote = None;
    for (at, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') => depth = depth.saturating_sub(1),
            (None, c) if c.is_whitespace() && depth == 0 => {
                if let Some(from) = start.take() {
                    words.push(&line[from..at]);
                }
                continue;
            }
            _ => {}
        }
        start.get_or_insert(at);
    }
    if let Some(from) = start {
        words.push(&line[from..]);
    }
    words
}

/// Parses one command line (without its `| ...` pipes).
pub fn parse(line: &str, mode: Mode) -> Result<Action, String> {
    let raw: Vec<&str> = split_words(line);
    if raw.is_empty() {
        return Err("empty command".into());
    }
    let words = expand(&raw, mode);
    for template in TEMPLATES.iter().filter(|t| t.modes.contains(&mode)) {
        if let Some(args) = matches(template, &words) {
            return (template.build)(&args);
        }
    }
    // Say where it went wrong: the longest start that fits something.
    let mut fit = 0;
    while fit < words.len() && !candidates_at(&words[..=fit], mode).is_empty() {
        fit += 1;
    }
    if fit == words.len() {
        let next: Vec<String> = candidates_at(&words, mode).into_iter().map(|(t, _)| t.text()).collect();
        return Err(format!("incomplete command; next: {}", next.join(" ")));
    }
    let next: Vec<String> = candidates_at(&words[..fit], mode).into_iter().map(|(t, _)| t.text()).collect();
    Err(format!("unknown word {:?} after {:?}; expected one of: {}", raw[fit], raw[..fit].join(" "), next.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Mode::*;

    #[test]
    fn flow_values_stay_one_word() {
        assert_eq!(
            split_words("set ports eth2 { mode: routed, addresses: [10.2.0.1/24] }"),
            ["set", "ports", "eth2", "{ mode: routed, addresses: [10.2.0.1/24] }"]
        );
        assert_eq!(split_words("  set ports eth1 vlans [10, 20]  "), ["set", "ports", "eth1", "vlans", "[10, 20]"]);
        assert_eq!(
            split_words("set ports eth1 description \"to spine 1\""),
            ["set", "ports", "eth1", "description", "\"to spine 1\""]
        );
        let set = parse("set ports eth1 vlans [10, 20]", Configure);
        assert_eq!(
            set,
            Ok(Action::Set { path: vec!["ports".into(), "eth1".into(), "vlans".into()], value: "[10, 20]".into() })
        );
    }

    #[test]
    fn evpn_shows_parse_as_frr_spells_them() {
        let req = |line: &str| match parse(line, Operational) {
            Ok(Action::Request(r)) => r,
            other => panic!("{line}: {other:?}"),
        };
        assert_eq!(req("show bgp l2vpn evpn"), Request::ShowBgpEvpn { route_type: None });
        assert_eq!(req("show bgp l2vpn evpn route type macip"), Request::ShowBgpEvpn { route_type: Some(2) });
        assert_eq!(req("sh bgp l2 evpn route type 5"), Request::ShowBgpEvpn { route_type: Some(5) });
        assert_eq!(req("show evpn vni 100"), Request::ShowEvpnVni { vni: Some(100) });
        assert_eq!(req("show evpn mac vni all"), Request::ShowEvpnMac { vni: None });
        assert_eq!(req("show evpn arp-cache vni 100"), Request::ShowEvpnArpCache { vni: Some(100) });
        assert_eq!(req("show vrf"), Request::ShowVrf);
        assert_eq!(req("show evpn next-hops"), Request::ShowEvpnNextHops { vni: None });
        assert_eq!(req("show evpn next-hops vni all"), Request::ShowEvpnNextHops { vni: None });
        assert_eq!(req("show evpn next-hops vni 4001"), Request::ShowEvpnNextHops { vni: Some(4001) });
        assert!(parse("show evpn next-hops vni lots", Operational).is_err());
        assert_eq!(
            req("show ip route vrf tenant1"),
            Request::ShowIpRouteVrf { family: AddressFamily::Ipv4, vrf: "tenant1".into() }
        );
        assert!(parse("show bgp l2vpn evpn route type 9", Operational).is_err());
        assert!(parse("show evpn mac vni lots", Operational).is_err());
    }

    #[test]
    fn show_commands_parse_to_their_requests() {
        assert_eq!(parse("show interfaces", Operational), Ok(Action::Request(Request::ShowInterfaces)));
        assert_eq!(
            parse("show interfaces counters", Operational),
            Ok(Action::Request(Request::ShowInterfacesCounters))
        );
        assert_eq!(
            parse("show priority-group watermark headroom", Operational),
            Ok(Action::Request(Request::ShowPriorityGroupWatermark { kind: PgWatermarkKind::Headroom }))
        );
        assert_eq!(parse("show pfcwd stats", Operational), Ok(Action::Request(Request::ShowPfcwdStats)));
        assert_eq!(parse("show bfd peers", Operational), Ok(Action::Request(Request::ShowBfdPeers)));
        assert_eq!(parse("sh int", Operational), Ok(Action::Request(Request::ShowInterfaces)));
        assert_eq!(
            parse("show bgp ipv4 unicast 10.0.0.0/24", Operational),
            Ok(Action::Request(Request::ShowBgpRoutes {
                family: AddressFamily::Ipv4,
                prefix: Some("10.0.0.0/24".into())
            }))
        );
        assert_eq!(
            parse("show bgp neighbors", Configure),
            Ok(Action::Request(Request::ShowBgpNeighbors { address: None }))
        );
        assert_eq!(
            parse("show ipv6 route", Operational),
            Ok(Action::Request(Request::ShowIpRoute { family: AddressFamily::Ipv6 }))
        );
        assert!(parse("show bgp neighbors nope", Operational).unwrap_err().contains("not an IP address"));
        assert_eq!(parse("sh int eth1", Operational), Ok(Action::ShowInterface("eth1".into())));
    }

    #[test]
    fn configure_mode_commands() {
        assert_eq!(
            parse("set ports eth1 mtu 9000", Configure),
            Ok(Action::Set { path: vec!["ports".into(), "eth1".into(), "mtu".into()], value: "9000".into() })
        );
        assert_eq!(parse("delete vlans 20", Configure), Ok(Action::Delete { path: vec!["vlans".into(), "20".into()] }));
        assert_eq!(parse("show", Configure), Ok(Action::ShowCandidate));
        assert_eq!(parse("show compare", Configure), Ok(Action::Compare));
        assert_eq!(parse("commit", Configure), Ok(Action::Commit { confirm_within_secs: None, comment: None }));
        assert_eq!(
            parse("commit comment raise the mtu", Configure),
            Ok(Action::Commit { confirm_within_secs: None, comment: Some("raise the mtu".into()) })
        );
        assert_eq!(
            parse("commit confirmed 2", Configure),
            Ok(Action::Commit { confirm_within_secs: Some(120), comment: None })
        );
        assert_eq!(
            parse("commit confirmed 30s comment try", Configure),
            Ok(Action::Commit { confirm_within_secs: Some(30), comment: Some("try".into()) })
        );
        assert_eq!(parse("commit check", Configure), Ok(Action::CommitCheck));
        assert_eq!(parse("rollback 1", Configure), Ok(Action::Rollback(1)));
        assert!(parse("set ports", Configure).is_err());
        assert!(parse("set ports eth1 mtu 9000", Operational).is_err(), "set needs configure");
        assert!(parse("configure", Configure).is_err());
    }

    #[test]
    fn errors_say_what_may_follow() {
        let error = parse("show bogus", Operational).unwrap_err();
        assert!(error.contains("\"bogus\"") && error.contains("interfaces"), "{error}");
        let error = parse("show bgp", Operational).unwrap_err();
        assert!(error.contains("incomplete") && error.contains("summary"), "{error}");
    }

    #[test]
    fn candidates_list_next_words_with_help() {
        let next = candidates_at(&["show".into()], Operational);
        let words: Vec<String> = next.iter().map(|(t, _)| t.text()).collect();
        assert!(words.contains(&"interfaces".to_owned()) && words.contains(&"bgp".to_owned()), "{words:?}");
        let bgp = next.iter().find(|(t, _)| t.text() == "bgp").unwrap();
        assert_eq!(bgp.1, "the BGP speaker: sessions and tables");
        let after = candidates_at(&["show".into(), "bgp".into(), "neighbors".into()], Operational);
        assert_eq!(after[0].0, Token::Value(ValueKind::Neighbor, "neighbor"));
        assert!(complete_command(&["show".into(), "bgp".into(), "neighbors".into()], Operational));
        assert!(!complete_command(&["show".into(), "bgp".into()], Operational));
        assert_eq!(parse_duration("30s"), Ok(30));
        assert_eq!(parse_duration("5"), Ok(300));
        assert!(parse_duration("0").is_err());
    }
}
