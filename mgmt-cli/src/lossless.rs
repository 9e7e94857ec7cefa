//! The lossless check's payloads: `swcli check lossless` (the findings of
//! one switch) and the profile `labs check lossless` reads from each
//! switch (the `qos` crate's `lossless::SwitchProfile`, carried as JSON:
//! this crate depends on nothing of ours).

use serde::{Deserialize, Serialize};

use crate::render::Render;
use crate::table::Table;

/// One problem the check found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LosslessFinding {
    /// `error` or `warning`.
    pub severity: String,
    /// `switch s1`, `port s1:eth1` or `link s1:eth1 -- s2:eth1`.
    pub scope: String,
    /// `pfc-priorities`, `headroom`, `ecn-kmin`, `mtu`, `watchdog`, `qos-chain`...
    pub check: String,
    pub message: String,
    pub fix: String,
}

impl LosslessFinding {
    pub fn is_error(&self) -> bool {
        self.severity == "error"
    }
}

impl Render for Vec<LosslessFinding> {
    fn render(&self) -> String {
        if self.is_empty() {
            return "lossless: no problem found\n".to_owned();
        }
        let mut table = Table::new(["SEVERITY", "SCOPE", "CHECK", "PROBLEM", "FIX"]);
        for f in self {
            table.row([f.severity.clone(), f.scope.clone(), f.check.clone(), f.message.clone(), f.fix.clone()]);
        }
        let errors = self.iter().filter(|f| f.is_error()).count();
        format!("{}{errors} error(s), {} warning(s)\n", table.render(), self.len() - errors)
    }
}
