//! The decision process: RFC 4271 §9.1.2 route selection with the usual
//! tie-breaks, and the multipath (ECMP) set.
//!
//! Selection follows the RFC's elimination order rather than one pairwise
//! comparator, because the MED step (§9.1.2.2 c) only compares routes from the
//! same neighbouring AS and is therefore not a total order.

use std::net::{IpAddr, Ipv4Addr};

use serde::{Deserialize, Serialize};

use crate::packet::PathAttrs;

/// Where a candidate route came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PeerKind {
    /// Originated by this speaker (networks, connected subnets).
    Local,
    External,
    Internal,
}

/// RFC 4271 §5.1.5: the LOCAL_PREF assumed when none is carried.
pub const DEFAULT_LOCAL_PREF: u32 = 100;
/// Weight of locally originated routes (the customary 32768).
pub const LOCAL_WEIGHT: u32 = 32768;

/// One route competing for a destination.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    pub attrs: &'a PathAttrs,
    pub kind: PeerKind,
    /// Local preference of the neighbour (not carried on the wire).
    pub weight: u32,
    pub peer_router_id: Ipv4Addr,
    pub peer_addr: Option<IpAddr>,
    /// Cost to the next hop if the IGP/kernel knows it.
    pub igp_cost: Option<u32>,
}

impl Candidate<'_> {
    fn local_pref(&self) -> u32 {
        self.attrs.local_pref.unwrap_or(DEFAULT_LOCAL_PREF)
    }

    /// RFC 4456 §9: ORIGINATOR_ID stands in for the router id when present.
    fn router_id(&self) -> u32 {
        u32::from(self.attrs.originator_id.unwrap_or(self.peer_router_id))
    }

    /// RFC 4271 §9.1.2.2 c: a missing MED is the lowest value.
    fn med(&self) -> u32 {
        self.attrs.med.unwrap_or(0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MultipathConfig {
    /// 1 disables multipath.
    pub max_paths: usize,
    /// Accept equal-length paths through different neighbouring ASes
    /// ("bestpath as-path multipath-relax"), as leaf-spine designs with one
    /// ASN per spine need.
    pub as_path_relax: bool,
}

impl Default for MultipathConfig {
    fn default() -> Self {
        MultipathConfig { max_paths: 64, as_path_relax: true }
    }
}

/// Every value of [`Selection::reason`], in decision order.
pub const REASONS: [&str; 12] = [
    "only path",
    "weight",
    "local preference",
    "locally originated",
    "AS path length",
    "origin",
    "MED",
    "eBGP over iBGP",
    "IGP cost",
    "router id",
    "cluster list length",
    "peer address",
];

/// The outcome of the decision process for one destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Index of the best route in the candidate slice.
    pub best: usize,
    /// Indices of the routes used for forwarding, best first; at least the best.
    pub multipath: Vec<usize>,
    /// Which step decided, for `show` output.
    pub reason: &'static str,
}

fn keep_by<K: Ord + Copy>(
    cands: &[Candidate],
    set: &mut Vec<usize>,
    key: impl Fn(&Candidate) -> K,
    highest: bool,
) -> bool {
    let Some(best) =
        (if highest { set.iter().map(|&i| key(&cands[i])).max() } else { set.iter().map(|&i| key(&cands[i])).min() })
    else {
        return false;
    };
    let before = set.len();
    set.retain(|&i| key(&cands[i]) == best);
    set.len() != before
}

/// Runs the decision process over `cands` (all feasible routes for one
/// destination). `None` when there are none.
pub fn select(cands: &[Candidate], multipath: &MultipathConfig) -> Option<Selection> {
    if cands.is_empty() {
        return None;
    }
    let mut set: Vec<usize> = (0..cands.len()).collect();
    let mut reason = "only path";
    // The first step that removed a candidate is the one that decided.
    let mut step = |_: &mut Vec<usize>, changed: bool, why: &'static str| {
        if changed && reason == "only path" {
            reason = why;
        }
    };
    // Weight, then §9.1.1 degree of preference (LOCAL_PREF).
    let c = keep_by(cands, &mut set, |c| c.weight, true);
    step(&mut set, c, "weight");
    let c = keep_by(cands, &mut set, |c| c.local_pref(), true);
    step(&mut set, c, "local preference");
    // Locally originated routes before learned ones.
    let c = keep_by(cands, &mut set, |c| c.kind == PeerKind::Local, true);
    step(&mut set, c, "locally originated");
    // §9.1.2.2 a: shortest AS_PATH.
    let c = keep_by(cands, &mut set, |c| c.attrs.as_path.path_len(), false);
    step(&mut set, c, "AS path length");
    // §9.1.2.2 b: lowest ORIGIN.
    let c = keep_by(cands, &mut set, |c| c.attrs.origin, false);
    step(&mut set, c, "origin");
    // §9.1.2.2 c: remove routes whose MED is above the lowest MED among
    // routes from the same neighbouring AS.
    let before = set.len();
    let snapshot = set.clone();
    set.retain(|&i| {
        let nas = cands[i].attrs.as_path.neighbor_as();
        !snapshot.iter().any(|&j| cands[j].attrs.as_path.neighbor_as() == nas && cands[j].med() < cands[i].med())
    });
    let changed = set.len() != before;
    step(&mut set, changed, "MED");
    // §9.1.2.2 d: external before internal (local routes are already ahead).
    let c = keep_by(cands, &mut set, |c| c.kind != PeerKind::Internal, true);
    step(&mut set, c, "eBGP over iBGP");
    // §9.1.2.2 e: lowest interior cost to the next hop, when known.
    let c = keep_by(cands, &mut set, |c| c.igp_cost.unwrap_or(0), false);
    step(&mut set, c, "IGP cost");

    // Multipath candidates: everything still equal at this point.
    let equal = set.clone();

    // §9.1.2.2 f: lowest BGP Identifier (ORIGINATOR_ID for reflected routes).
    let c = keep_by(cands, &mut set, |c| c.router_id(), false);
    step(&mut set, c, "router id");
    // RFC 4456 §9: shortest CLUSTER_LIST.
    let c = keep_by(cands, &mut set, |c| c.attrs.cluster_list.len(), false);
    step(&mut set, c, "cluster list length");
    // §9.1.2.2 g: lowest peer address.
    let c = keep_by(cands, &mut set, |c| c.peer_addr, false);
    step(&mut set, c, "peer address");
    let best = set[0];

    let b = &cands[best];
    let mut paths = vec![best];
    if multipath.max_paths > 1 && b.kind != PeerKind::Local {
        for &i in &equal {
            if i == best || paths.len() >= multipath.max_paths {
                continue;
            }
            let c = &cands[i];
            let same_kind = c.kind == b.kind;
            // Without relax, eBGP multipath needs the same neighbouring AS;
            // iBGP multipath needs identical AS_PATHs.
            let as_ok = match b.kind {
                PeerKind::External => {
                    multipath.as_path_relax || c.attrs.as_path.neighbor_as() == b.attrs.as_path.neighbor_as()
                }
                _ => c.attrs.as_path == b.attrs.as_path,
            };
            let distinct_hop = c.attrs.next_hop != b.attrs.next_hop
                && !paths.iter().any(|&p| cands[p].attrs.next_hop == c.attrs.next_hop);
            if same_kind && as_ok && distinct_hop {
                paths.push(i);
            }
        }
        // Stable order for forwarding: by next hop.
        paths[1..].sort_by_key(|&i| cands[i].attrs.next_hop);
    }
    Some(Selection { best, multipath: paths, reason })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{AsPath, Origin};

    fn attrs(path: &[u32], nh: [u8; 4]) -> PathAttrs {
        PathAttrs {
            as_path: AsPath::from_sequence(path.iter().copied()),
            next_hop: Some(IpAddr::from(nh)),
            ..Default::default()
        }
    }

    fn cand(attrs: &PathAttrs, kind: PeerKind, id: u8) -> Candidate<'_> {
        Candidate {
            attrs,
            kind,
            weight: 0,
            peer_router_id: Ipv4Addr::new(id, id, id, id),
            peer_addr: Some(IpAddr::from([10, 0, 0, id])),
            igp_cost: None,
        }
    }

    fn best(cands: &[Candidate]) -> (usize, &'static str) {
        let s = select(cands, &MultipathConfig { max_paths: 1, as_path_relax: false }).unwrap();
        assert!(REASONS.contains(&s.reason), "{} is missing from REASONS", s.reason);
        (s.best, s.reason)
    }

    #[test]
    fn each_step_decides_in_rfc_order() {
        let short = attrs(&[65001], [1, 1, 1, 1]);
        let long = attrs(&[65002, 65003], [2, 2, 2, 2]);
        // Weight beats everything.
        let mut a = cand(&long, PeerKind::External, 2);
        a.weight = 10;
        assert_eq!(best(&[cand(&short, PeerKind::External, 1), a]), (1, "weight"));
        // Local preference beats path length.
        let lp = PathAttrs { local_pref: Some(200), ..long.clone() };
        assert_eq!(
            best(&[cand(&short, PeerKind::Internal, 1), cand(&lp, PeerKind::Internal, 2)]),
            (1, "local preference")
        );
        // Shorter AS path.
        assert_eq!(
            best(&[cand(&long, PeerKind::External, 1), cand(&short, PeerKind::External, 2)]),
            (1, "AS path length")
        );
        // Lower origin.
        let egp = PathAttrs { origin: Origin::Egp, ..short.clone() };
        assert_eq!(best(&[cand(&egp, PeerKind::External, 1), cand(&short, PeerKind::External, 2)]), (1, "origin"));
        // eBGP over iBGP.
        assert_eq!(
            best(&[cand(&short, PeerKind::Internal, 1), cand(&short, PeerKind::External, 2)]),
            (1, "eBGP over iBGP")
        );
        // IGP cost.
        let (mut x, mut y) = (cand(&short, PeerKind::Internal, 1), cand(&short, PeerKind::Internal, 2));
        x.igp_cost = Some(20);
        y.igp_cost = Some(10);
        assert_eq!(best(&[x, y]), (1, "IGP cost"));
        // Router id, then ORIGINATOR_ID standing in for it.
        assert_eq!(best(&[cand(&short, PeerKind::Internal, 3), cand(&short, PeerKind::Internal, 2)]), (1, "router id"));
        let reflected = PathAttrs { originator_id: Some(Ipv4Addr::new(9, 9, 9, 9)), ..short.clone() };
        assert_eq!(
            best(&[cand(&reflected, PeerKind::Internal, 1), cand(&short, PeerKind::Internal, 2)]),
            (1, "router id")
        );
        // Cluster list length, then peer address.
        let c1 = PathAttrs {
            originator_id: Some(Ipv4Addr::new(5, 5, 5, 5)),
            cluster_list: vec![Ipv4Addr::new(1, 0, 0, 1)],
            ..short.clone()
        };
        let c2 = PathAttrs { cluster_list: vec![], ..c1.clone() };
        assert_eq!(
            best(&[cand(&c1, PeerKind::Internal, 1), cand(&c2, PeerKind::Internal, 2)]),
            (1, "cluster list length")
        );
        let mut p = cand(&c2, PeerKind::Internal, 1);
        p.peer_addr = Some(IpAddr::from([10, 0, 0, 9]));
        assert_eq!(best(&[p, cand(&c2, PeerKind::Internal, 2)]), (1, "peer address"));
        // Locally originated beats learned.
        assert_eq!(
            best(&[cand(&short, PeerKind::External, 1), cand(&PathAttrs::default(), PeerKind::Local, 2)]),
            (1, "locally originated")
        );
    }

    #[test]
    fn med_is_compared_only_within_a_neighbour_as() {
        let a = PathAttrs { med: Some(50), ..attrs(&[65001], [1, 1, 1, 1]) };
        let b = PathAttrs { med: Some(10), ..attrs(&[65001], [2, 2, 2, 2]) };
        let c = PathAttrs { med: Some(5), ..attrs(&[65009], [3, 3, 3, 3]) };
        // a and b share AS 65001: b's lower MED removes a. c is from another AS and survives on its own.
        let cands = [cand(&a, PeerKind::External, 1), cand(&b, PeerKind::External, 2), cand(&c, PeerKind::External, 3)];
        let s = select(&cands, &MultipathConfig { max_paths: 1, as_path_relax: false }).unwrap();
        assert_eq!((s.best, s.reason), (1, "MED"));
    }

    #[test]
    fn ebgp_multipath_with_and_without_as_path_relax() {
        // A leaf hearing a remote loopback from two spines in different ASes.
        let via1 = attrs(&[65001, 65100], [10, 0, 1, 1]);
        let via2 = attrs(&[65002, 65100], [10, 0, 2, 1]);
        let longer = attrs(&[65003, 65004, 65100], [10, 0, 3, 1]);
        let cands = [
            cand(&via1, PeerKind::External, 1),
            cand(&via2, PeerKind::External, 2),
            cand(&longer, PeerKind::External, 3),
        ];
        let relax = select(&cands, &MultipathConfig { max_paths: 8, as_path_relax: true }).unwrap();
        assert_eq!(relax.multipath, vec![0, 1]);
        let strict = select(&cands, &MultipathConfig { max_paths: 8, as_path_relax: false }).unwrap();
        assert_eq!(strict.multipath, vec![0]);
        // Spines sharing one ASN need no relax.
        let via2_same = attrs(&[65001, 65100], [10, 0, 2, 1]);
        let cands = [cand(&via1, PeerKind::External, 1), cand(&via2_same, PeerKind::External, 2)];
        assert_eq!(
            select(&cands, &MultipathConfig { max_paths: 8, as_path_relax: false }).unwrap().multipath,
            vec![0, 1]
        );
        // max_paths caps the set.
        assert_eq!(select(&cands, &MultipathConfig { max_paths: 1, as_path_relax: true }).unwrap().multipath, vec![0]);
    }

    proptest::proptest! {
        /// The outcome never depends on the order candidates are listed in
        /// (the MED step is not a total order, so a pairwise sort would).
        #[test]
        fn selection_is_independent_of_candidate_order(
            specs in proptest::collection::vec((0u32..2, 0u32..3, 1usize..4, 0u8..3, proptest::option::of(0u32..3), 65001u32..65004, proptest::bool::ANY), 1..8),
            rotate in 0usize..8,
        ) {
            let attrs: Vec<PathAttrs> = specs
                .iter()
                .enumerate()
                .map(|(i, &(_, lp, len, origin, med, nas, _))| PathAttrs {
                    local_pref: Some(100 + lp),
                    as_path: AsPath::from_sequence(std::iter::once(nas).chain(std::iter::repeat_n(65100, len - 1))),
                    origin: [Origin::Igp, Origin::Egp, Origin::Incomplete][origin as usize],
                    med,
                    next_hop: Some(IpAddr::from([10, 0, 0, i as u8 + 1])),
                    ..Default::default()
                })
                .collect();
            let cands: Vec<Candidate> = specs
                .iter()
                .zip(&attrs)
                .enumerate()
                .map(|(i, (&(w, ..), a))| Candidate {
                    attrs: a,
                    kind: if specs[i].6 { PeerKind::External } else { PeerKind::Internal },
                    weight: w,
                    peer_router_id: Ipv4Addr::new(1, 1, 1, (i as u8 * 37) % 11),
                    peer_addr: Some(IpAddr::from([10, 0, 0, i as u8 + 1])),
                    igp_cost: None,
                })
                .collect();
            let mp = MultipathConfig::default();
            let a = select(&cands, &mp).unwrap();
            let mut rotated = cands.clone();
            let r = rotate % rotated.len();
            rotated.rotate_left(r);
            let b = select(&rotated, &mp).unwrap();
            let back = |i: usize| (i + r) % cands.len();
            proptest::prop_assert_eq!(a.best, back(b.best));
            let mut ma: Vec<usize> = a.multipath.clone();
            let mut mb: Vec<usize> = b.multipath.iter().map(|&i| back(i)).collect();
            ma.sort();
            mb.sort();
            proptest::prop_assert_eq!(ma, mb);
        }
    }
}
