//! Import and export policy: prefix lists and route maps that match on
//! prefixes and communities and set LOCAL_PREF, MED, communities and AS-path
//! prepends. Kept deliberately small: what a leaf-spine fabric needs.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::packet::{Nlri, PathAttrs};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Permit,
    Deny,
}

/// One prefix-list line: `prefix` with optional `ge`/`le` length bounds, as
/// in the usual `ip prefix-list` syntax.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrefixListEntry {
    pub action: Verdict,
    #[serde(with = "nlri_str")]
    pub prefix: Nlri,
    #[serde(default)]
    pub ge: Option<u8>,
    #[serde(default)]
    pub le: Option<u8>,
}

impl PrefixListEntry {
    fn matches(&self, nlri: &Nlri) -> bool {
        let (covers, len, base_len) = match (&self.prefix, nlri) {
            (Nlri::Ipv4(p), Nlri::Ipv4(n)) => (p.contains(n), n.len(), p.len()),
            (Nlri::Ipv6(p), Nlri::Ipv6(n)) => (p.contains(n), n.len(), p.len()),
            _ => return false,
        };
        if !covers {
            return false;
        }
        match (self.ge, self.le) {
            // Without bounds a line matches its exact prefix only.
            (None, None) => len == base_len,
            (ge, le) => len >= ge.unwrap_or(base_len) && le.is_none_or(|le| len <= le),
        }
    }
}

/// Lines are tried in order; the first match decides; no match denies.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PrefixList(pub Vec<PrefixListEntry>);

impl PrefixList {
    pub fn permits(&self, nlri: &Nlri) -> bool {
        self.0.iter().find(|e| e.matches(nlri)).is_some_and(|e| e.action == Verdict::Permit)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Match {
    #[serde(default)]
    pub prefix_list: Option<String>,
    /// A standard community as `asn:value`.
    #[serde(default)]
    pub community: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Set {
    #[serde(default)]
    pub local_pref: Option<u32>,
    #[serde(default)]
    pub med: Option<u32>,
    /// Communities (`asn:value`) added to the route.
    #[serde(default)]
    pub communities: Vec<String>,
    /// How many times to prepend the local AS (export only).
    #[serde(default)]
    pub as_path_prepend: u8,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Term {
    #[serde(default, rename = "match")]
    pub matches: Match,
    pub action: Verdict,
    #[serde(default)]
    pub set: Set,
}

/// A route map: terms in order, the first matching term decides; routes
/// matching no term are denied (as route maps do).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Policy(pub Vec<Term>);

/// What a policy did to a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Reject,
    /// Accepted with the attributes unchanged.
    Accept,
    /// Accepted with new attributes.
    Modified(Box<PathAttrs>),
}

pub fn parse_community(s: &str) -> Option<u32> {
    let (hi, lo) = s.split_once(':')?;
    Some((hi.parse::<u16>().ok()? as u32) << 16 | lo.parse::<u16>().ok()? as u32)
}

/// Named prefix lists and policies, shared by every neighbour.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicySet {
    #[serde(default)]
    pub prefix_lists: HashMap<String, PrefixList>,
    #[serde(default)]
    pub policies: HashMap<String, Policy>,
}

impl PolicySet {
    /// Names every undefined reference, for config validation.
    pub fn check(&self) -> Result<(), String> {
        for (name, policy) in &self.policies {
            for term in &policy.0 {
                if let Some(pl) = &term.matches.prefix_list
                    && !self.prefix_lists.contains_key(pl)
                {
                    return Err(format!("policies.{name}: prefix list {pl:?} is not defined"));
                }
                for c in term.matches.community.iter().chain(&term.set.communities) {
                    if parse_community(c).is_none() {
                        return Err(format!("policies.{name}: community {c:?} is not asn:value"));
                    }
                }
            }
        }
        Ok(())
    }

    /// Applies the policy `name` (no policy: accept) to one route.
    pub fn apply(&self, name: Option<&str>, nlri: &Nlri, attrs: &PathAttrs, local_as: u32) -> Outcome {
        let Some(name) = name else { return Outcome::Accept };
        let Some(policy) = self.policies.get(name) else { return Outcome::Reject };
        for term in &policy.0 {
            if let Some(pl) = &term.matches.prefix_list
                && !self.prefix_lists.get(pl).is_some_and(|l| l.permits(nlri))
            {
                continue;
            }
            if let Some(c) = &term.matches.community
                && !parse_community(c).is_some_and(|c| attrs.communities.contains(&c))
            {
                continue;
            }
            if term.action == Verdict::Deny {
                return Outcome::Reject;
            }
            let set = &term.set;
            if set == &Set::default() {
                return Outcome::Accept;
            }
            let mut out = attrs.clone();
            if let Some(lp) = set.local_pref {
                out.local_pref = Some(lp);
            }
            if let Some(med) = set.med {
                out.med = Some(med);
            }
            for c in set.communities.iter().filter_map(|c| parse_community(c)) {
                if !out.communities.contains(&c) {
                    out.communities.push(c);
                }
            }
            for _ in 0..set.as_path_prepend {
                out.as_path.prepend(local_as);
            }
            return Outcome::Modified(Box::new(out));
        }
        Outcome::Reject
    }
}

mod nlri_str {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::packet::Nlri;

    pub fn serialize<S: Serializer>(n: &Nlri, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(n)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Nlri, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Nlri {
        s.parse().unwrap()
    }

    fn set() -> PolicySet {
        serde_yaml::from_str(
            r#"
prefix_lists:
  loopbacks:
    - { action: deny, prefix: 10.0.0.66/32 }
    - { action: permit, prefix: 10.0.0.0/24, ge: 32 }
    - { action: permit, prefix: "2001:db8::/32", le: 64 }
policies:
  import:
    - match: { prefix_list: loopbacks }
      action: permit
      set: { local_pref: 200, communities: ["65000:1"] }
    - match: { community: "65000:99" }
      action: deny
    - action: permit
  export:
    - match: { prefix_list: loopbacks }
      action: permit
      set: { med: 7, as_path_prepend: 2 }
"#,
        )
        .unwrap()
    }

    #[test]
    fn prefix_lists_match_ge_le_and_exact() {
        let s = set();
        let pl = &s.prefix_lists["loopbacks"];
        assert!(pl.permits(&n("10.0.0.1/32")));
        assert!(!pl.permits(&n("10.0.0.66/32")), "the deny line comes first");
        assert!(!pl.permits(&n("10.0.0.0/24")), "ge 32 excludes the /24 itself");
        assert!(!pl.permits(&n("10.0.1.1/32")));
        assert!(pl.permits(&n("2001:db8:1::/48")));
        assert!(!pl.permits(&n("2001:db8:1::/96")));
        let exact =
            PrefixList(vec![PrefixListEntry { action: Verdict::Permit, prefix: n("10.0.0.0/8"), ge: None, le: None }]);
        assert!(exact.permits(&n("10.0.0.0/8")) && !exact.permits(&n("10.1.0.0/16")));
        assert_eq!(s.check(), Ok(()));
    }

    #[test]
    fn policies_set_attributes_and_deny() {
        let s = set();
        let attrs = PathAttrs::default();
        let Outcome::Modified(out) = s.apply(Some("import"), &n("10.0.0.1/32"), &attrs, 65001) else { panic!() };
        assert_eq!((out.local_pref, out.communities.clone()), (Some(200), vec![65000 << 16 | 1]));
        let tagged = PathAttrs { communities: vec![65000 << 16 | 99], ..Default::default() };
        assert_eq!(s.apply(Some("import"), &n("192.168.0.0/16"), &tagged, 65001), Outcome::Reject);
        assert_eq!(s.apply(Some("import"), &n("192.168.0.0/16"), &attrs, 65001), Outcome::Accept);
        let Outcome::Modified(out) = s.apply(Some("export"), &n("10.0.0.1/32"), &attrs, 65001) else { panic!() };
        assert_eq!((out.med, out.as_path.to_string()), (Some(7), "65001 65001".to_string()));
        assert_eq!(s.apply(Some("export"), &n("192.168.0.0/16"), &attrs, 65001), Outcome::Reject, "implicit deny");
        assert_eq!(s.apply(None, &n("192.168.0.0/16"), &attrs, 65001), Outcome::Accept);
        assert_eq!(s.apply(Some("missing"), &n("192.168.0.0/16"), &attrs, 65001), Outcome::Reject);
    }
}
