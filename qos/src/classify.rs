//! Classification maps in the SAI/SONiC style: a frame's DSCP (or its
//! 802.1p PCP when it carries no IP header, or when the maps trust PCP)
//! gives its traffic class (TC); the TC gives the egress queue and the
//! ingress priority group (PG). Received PFC frames name priorities, which
//! map to the queues they stop (`PFC_PRIORITY_TO_QUEUE`), and the PFC frames
//! we send for a PG name the priorities that map to it
//! (`PFC_PRIORITY_TO_PRIORITY_GROUP`).
//!
//! SAI object types modelled: `SAI_QOS_MAP_TYPE_DSCP_TO_TC`,
//! `DOT1P_TO_TC`, `TC_TO_QUEUE`, `TC_TO_PRIORITY_GROUP`,
//! `PFC_PRIORITY_TO_QUEUE`, `PFC_PRIORITY_TO_PRIORITY_GROUP`.

use serde::{Deserialize, Serialize};

/// Traffic classes, queues per port, priority groups per port and PFC
/// priorities: eight of each, as on the ASICs SONiC runs on.
pub const CLASSES: usize = 8;

/// Which header field the switch trusts for the traffic class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trust {
    /// DSCP when the frame carries IP, else the PCP of its outer tag.
    #[default]
    Dscp,
    /// Always the PCP of the outer tag (0 when untagged).
    Pcp,
}

/// The maps, all values in `0..8`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct QosMaps {
    pub trust: Trust,
    /// TC for each of the 64 DSCP values.
    #[serde(with = "dscp_map")]
    pub dscp_to_tc: [u8; 64],
    pub pcp_to_tc: [u8; CLASSES],
    pub tc_to_queue: [u8; CLASSES],
    pub tc_to_pg: [u8; CLASSES],
    pub pfc_priority_to_queue: [u8; CLASSES],
    pub pfc_priority_to_pg: [u8; CLASSES],
}

impl Default for QosMaps {
    /// SONiC's default-ish maps: DSCP's class selector (the top three bits)
    /// gives the TC, PCP is the TC, and every map from TC or priority is
    /// the identity.
    fn default() -> QosMaps {
        let mut dscp_to_tc = [0u8; 64];
        for (dscp, tc) in dscp_to_tc.iter_mut().enumerate() {
            *tc = (dscp >> 3) as u8;
        }
        let identity = [0, 1, 2, 3, 4, 5, 6, 7];
        QosMaps {
            trust: Trust::Dscp,
            dscp_to_tc,
            pcp_to_tc: identity,
            tc_to_queue: identity,
            tc_to_pg: identity,
            pfc_priority_to_queue: identity,
            pfc_priority_to_pg: identity,
        }
    }
}

/// What classification gives a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Classified {
    pub tc: u8,
    pub queue: u8,
    pub pg: u8,
}

/// The header fields classification reads, or an already known TC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassKey {
    /// The pipeline (or a test) already chose the traffic class.
    Tc(u8),
    /// The frame's DSCP (if it carries IP) and its outer PCP.
    Headers { dscp: Option<u8>, pcp: u8 },
}

impl QosMaps {
    /// The TC, queue and PG of a frame. Out-of-range inputs are masked, so
    /// this never panics.
    #[inline]
    pub fn classify(&self, key: ClassKey) -> Classified {
        let tc = match key {
            ClassKey::Tc(tc) => tc & 7,
            ClassKey::Headers { dscp: Some(dscp), .. } if self.trust == Trust::Dscp => {
                self.dscp_to_tc[usize::from(dscp & 63)]
            }
            ClassKey::Headers { pcp, .. } => self.pcp_to_tc[usize::from(pcp & 7)],
        };
        let tc_index = usize::from(tc & 7);
        Classified { tc, queue: self.tc_to_queue[tc_index], pg: self.tc_to_pg[tc_index] }
    }

    /// The priorities whose PFC frames a PG's XOFF/XON names: a class-enable
    /// vector bit per priority mapped to `pg`.
    pub fn priorities_of_pg(&self, pg: u8) -> u8 {
        (0..CLASSES).filter(|&p| self.pfc_priority_to_pg[p] == pg).fold(0u8, |v, p| v | 1 << p)
    }

    /// The queues stopped by a pause of the priorities in `class_enable`.
    pub fn queues_of_priorities(&self, class_enable: u8) -> u8 {
        (0..CLASSES).filter(|&p| class_enable & (1 << p) != 0).fold(0u8, |v, p| v | 1 << self.pfc_priority_to_queue[p])
    }

    /// Every map value in range, or the field and entry that is not.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let check = |name: &str, values: &[u8]| {
            for (index, &value) in values.iter().enumerate() {
                if usize::from(value) >= CLASSES {
                    return Err((format!("{name}[{index}]"), format!("{value} is not in 0..{CLASSES}")));
                }
            }
            Ok(())
        };
        check("dscp-to-tc", &self.dscp_to_tc)?;
        check("pcp-to-tc", &self.pcp_to_tc)?;
        check("tc-to-queue", &self.tc_to_queue)?;
        check("tc-to-pg", &self.tc_to_pg)?;
        check("pfc-priority-to-queue", &self.pfc_priority_to_queue)?;
        check("pfc-priority-to-pg", &self.pfc_priority_to_pg)
    }
}

/// The maps composed once: each DSCP, PCP and TC straight to its
/// [`Classified`], so a frame's class is one load instead of a TC lookup
/// followed by the queue and PG lookups that depend on it. Gives what
/// [`QosMaps::classify`] gives for every key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassTable {
    trust: Trust,
    by_dscp: [Classified; 64],
    by_pcp: [Classified; CLASSES],
    by_tc: [Classified; CLASSES],
}

impl ClassTable {
    pub fn new(maps: &QosMaps) -> ClassTable {
        let of_tc = |tc: u8| {
            let index = usize::from(tc & 7);
            Classified { tc, queue: maps.tc_to_queue[index], pg: maps.tc_to_pg[index] }
        };
        ClassTable {
            trust: maps.trust,
            by_dscp: core::array::from_fn(|dscp| of_tc(maps.dscp_to_tc[dscp])),
            by_pcp: core::array::from_fn(|pcp| of_tc(maps.pcp_to_tc[pcp])),
            by_tc: core::array::from_fn(|tc| of_tc(tc as u8)),
        }
    }

    #[inline]
    pub fn classify(&self, key: ClassKey) -> Classified {
        match key {
            ClassKey::Tc(tc) => self.by_tc[usize::from(tc & 7)],
            ClassKey::Headers { dscp: Some(dscp), .. } if self.trust == Trust::Dscp => {
                self.by_dscp[usize::from(dscp & 63)]
            }
            ClassKey::Headers { pcp, .. } => self.by_pcp[usize::from(pcp & 7)],
        }
    }
}

/// serde for the 64-entry DSCP map (serde derives arrays only up to 32):
/// a sequence of 64 values, or a sparse map `{dscp: tc}` over the default.
mod dscp_map {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<S: Serializer>(map: &[u8; 64], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(map.iter())
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        Full(Vec<u8>),
        Sparse(BTreeMap<u8, u8>),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<[u8; 64], D::Error> {
        match Form::deserialize(deserializer)? {
            Form::Full(values) => {
                values.try_into().map_err(|v: Vec<u8>| D::Error::custom(format!("{} entries, expected 64", v.len())))
            }
            Form::Sparse(entries) => {
                let mut map = super::QosMaps::default().dscp_to_tc;
                for (dscp, tc) in entries {
                    let slot = map
                        .get_mut(usize::from(dscp))
                        .ok_or_else(|| D::Error::custom(format!("DSCP {dscp} is not in 0..64")))?;
                    *slot = tc;
                }
                Ok(map)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dscp_classifies_ip_frames_and_pcp_the_others() {
        let mut maps = QosMaps::default();
        maps.dscp_to_tc[26] = 3; // AF31, RoCE's usual marking
        maps.pcp_to_tc[5] = 6;
        maps.tc_to_queue[3] = 4;
        maps.tc_to_pg[3] = 3;
        assert_eq!(maps.classify(ClassKey::Headers { dscp: Some(26), pcp: 5 }), Classified { tc: 3, queue: 4, pg: 3 });
        assert_eq!(maps.classify(ClassKey::Headers { dscp: None, pcp: 5 }).tc, 6);
        maps.trust = Trust::Pcp;
        assert_eq!(maps.classify(ClassKey::Headers { dscp: Some(26), pcp: 5 }).tc, 6);
        assert_eq!(maps.classify(ClassKey::Tc(3)).queue, 4);
        // Out-of-range inputs are masked, never a panic.
        assert_eq!(maps.classify(ClassKey::Tc(11)).tc, 3);
        assert_eq!(QosMaps::default().classify(ClassKey::Headers { dscp: Some(46), pcp: 0 }).tc, 5);
    }

    #[test]
    fn the_composed_table_classifies_as_the_maps() {
        let mut maps = QosMaps::default();
        maps.dscp_to_tc[26] = 3;
        maps.dscp_to_tc[48] = 6;
        maps.pcp_to_tc[5] = 6;
        maps.tc_to_queue = [1, 0, 2, 4, 3, 5, 7, 6];
        maps.tc_to_pg = [0, 0, 0, 3, 4, 0, 0, 0];
        for trust in [Trust::Dscp, Trust::Pcp] {
            maps.trust = trust;
            let table = ClassTable::new(&maps);
            for value in 0..=255u8 {
                for key in [
                    ClassKey::Tc(value),
                    ClassKey::Headers { dscp: Some(value), pcp: value },
                    ClassKey::Headers { dscp: None, pcp: value },
                ] {
                    assert_eq!(table.classify(key), maps.classify(key), "{key:?} under {trust:?}");
                }
            }
        }
    }

    #[test]
    fn pfc_maps_give_class_enable_vectors_and_queues() {
        let mut maps = QosMaps::default();
        maps.pfc_priority_to_pg[4] = 3;
        assert_eq!(maps.priorities_of_pg(3), 0b0001_1000);
        maps.pfc_priority_to_queue[4] = 3;
        assert_eq!(maps.queues_of_priorities(0b0001_0000), 0b0000_1000);
        assert_eq!(maps.queues_of_priorities(0b1000_0001), 0b1000_0001);
    }

    #[test]
    fn validation_names_the_entry() {
        let mut maps = QosMaps::default();
        maps.tc_to_pg[2] = 9;
        assert_eq!(maps.validate(), Err(("tc-to-pg[2]".into(), "9 is not in 0..8".into())));
    }

    #[test]
    fn dscp_map_parses_sparse_and_full_yaml() {
        let maps: QosMaps = serde_yaml::from_str("dscp-to-tc: {26: 3, 48: 6}\ntrust: pcp\n").unwrap();
        assert_eq!((maps.dscp_to_tc[26], maps.dscp_to_tc[48], maps.dscp_to_tc[8]), (3, 6, 1));
        assert_eq!(maps.trust, Trust::Pcp);
        let yaml = serde_yaml::to_string(&maps).unwrap();
        assert_eq!(serde_yaml::from_str::<QosMaps>(&yaml).unwrap(), maps);
        assert!(serde_yaml::from_str::<QosMaps>("dscp-to-tc: [1, 2]").is_err());
    }
}
