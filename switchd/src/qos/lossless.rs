//! This switch as the lossless check sees it (`qos::lossless`): the
//! traffic manager's configuration, the ports with their MTU and the far
//! end LLDP reports. `swcli check lossless` runs the switch's own checks
//! here; `labs check lossless` reads the profile of every switch and runs
//! the fabric's.

use mgmt_cli::lossless::LosslessFinding;
use qos::lossless::{self, PortProfile, Severity, SwitchProfile};
use sai_shim::Backend;

use crate::mgmt::SwitchView;

impl<B: Backend> SwitchView<B> {
    pub fn lossless_profile(&self) -> SwitchProfile {
        let neighbors = self.lldp_neighbors();
        let ports = self
            .config
            .ports
            .iter()
            .map(|port| PortProfile {
                name: port.name.clone(),
                mtu: u32::from(port.mtu),
                neighbor: neighbors
                    .iter()
                    .find(|n| n.local_port == port.name)
                    .and_then(|n| Some((n.system_name.clone()?, n.port_id.clone()))),
            })
            .collect();
        SwitchProfile { name: self.config.name.clone(), ports, tm: self.config.qos.clone() }
    }

    pub fn check_lossless(&self) -> Vec<LosslessFinding> {
        lossless::check_switch(&self.lossless_profile()).into_iter().map(to_api).collect()
    }
}

pub fn to_api(finding: lossless::Finding) -> LosslessFinding {
    LosslessFinding {
        severity: match finding.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
        .into(),
        scope: finding.scope,
        check: finding.check,
        message: finding.message,
        fix: finding.fix,
    }
}
