//! The `evpn:` part of the speaker's configuration: our VTEP, the MAC-VRFs
//! (one EVI per VNI, VLAN-based service, RFC 7432 §6.1), the IP-VRFs of
//! symmetric IRB (RFC 9135) and MAC mobility's duplicate detection.
//!
//! ```yaml
//! evpn:
//!   vtep_ip: 10.255.0.1
//!   vnis:
//!     - { vni: 100 }                       # RD 10.255.0.1:100, RT 65001:100
//!     - { vni: 200, vrf: tenant1, rd: "10.255.0.1:7", import_rts: ["65000:200"] }
//!   vrfs:
//!     - { name: tenant1, l3vni: 4001, router_mac: "02:00:00:00:00:01", networks: [192.168.0.0/16] }
//!   duplicate_detection: { max_moves: 5, window_secs: 180 }
//! ```
//!
//! RDs and RTs not given are derived as FRR derives them: RD
//! `router-id:EVI` (type 1, the EVI being the VNI, so it must fit in 16
//! bits), RT `ASN:VNI` (type 0 with the low 16 bits of the ASN).

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr};

use serde::{Deserialize, Serialize};

use crate::packet::Nlri;
use crate::packet::evpn::{ExtCommunity, MacAddr, RouteDistinguisher};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvpnConfig {
    /// Our VTEP address: the next hop of our routes and the PMSI endpoint of
    /// our type 3 routes.
    pub vtep_ip: IpAddr,
    #[serde(default)]
    pub vnis: Vec<VniConfig>,
    #[serde(default)]
    pub vrfs: Vec<VrfConfig>,
    #[serde(default)]
    pub duplicate_detection: DuplicateDetection,
}

/// One MAC-VRF (EVI) for one VNI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VniConfig {
    pub vni: u32,
    #[serde(default)]
    pub rd: Option<String>,
    /// Route targets imported; `ASN:VNI` when empty.
    #[serde(default)]
    pub import_rts: Vec<String>,
    /// Route targets attached to our routes; `ASN:VNI` when empty.
    #[serde(default)]
    pub export_rts: Vec<String>,
    /// The IP-VRF whose L3VNI this VNI's host routes use (symmetric IRB).
    #[serde(default)]
    pub vrf: Option<String>,
    /// MACs configured behind a local port (static FDB entries): always
    /// ours, advertised as type 2; a sticky one never moves (RFC 7432 §15.2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub static_macs: Vec<StaticMac>,
}

/// A MAC configured behind a local port of the VNI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticMac {
    #[serde(with = "mac_text")]
    pub mac: MacAddr,
    /// Advertised with the sticky bit of the MAC Mobility community: no
    /// remote advertisement moves it.
    #[serde(default)]
    pub sticky: bool,
}

/// One IP-VRF with its L3VNI (RFC 9135 §4, symmetric IRB).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VrfConfig {
    pub name: String,
    pub l3vni: u32,
    /// Our router MAC on the L3VNI (RFC 9135 §8.1's Router's MAC community).
    #[serde(with = "mac_text")]
    pub router_mac: MacAddr,
    #[serde(default)]
    pub rd: Option<String>,
    #[serde(default)]
    pub import_rts: Vec<String>,
    #[serde(default)]
    pub export_rts: Vec<String>,
    /// Prefixes advertised as type 5 routes (RFC 9136).
    #[serde(default, with = "crate::config::nlri_list")]
    pub networks: Vec<Nlri>,
}

/// RFC 7432 §15.1: "If N MAC moves are detected within M seconds ... the
/// PE MUST alert the operator and stop sending and processing any BGP
/// MAC/IP Advertisement routes for that MAC address" (FRR's defaults 5 in 180 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DuplicateDetection {
    pub max_moves: u32,
    pub window_secs: u32,
}

impl Default for DuplicateDetection {
    fn default() -> Self {
        DuplicateDetection { max_moves: 5, window_secs: 180 }
    }
}

/// A VNI is 24 bits (RFC 7348 §5).
pub const MAX_VNI: u32 = 0x00ff_ffff;

/// Parses `ASN:N`, `A.B.C.D:N` (a route distinguisher as FRR writes it).
pub fn parse_rd(text: &str) -> Result<RouteDistinguisher, String> {
    let (admin, number) = text.rsplit_once(':').ok_or_else(|| format!("{text:?}: expected ADMIN:NUMBER"))?;
    if let Ok(addr) = admin.parse::<Ipv4Addr>() {
        let number = number.parse().map_err(|_| format!("{text:?}: number must fit 16 bits after an address"))?;
        return Ok(RouteDistinguisher::Ipv4 { addr, number });
    }
    let asn: u32 =
        admin.parse().map_err(|_| format!("{text:?}: administrator is neither an AS nor an IPv4 address"))?;
    match u16::try_from(asn) {
        Ok(asn) => Ok(RouteDistinguisher::As2 {
            asn,
            number: number.parse().map_err(|_| format!("{text:?}: number must fit 32 bits"))?,
        }),
        Err(_) => Ok(RouteDistinguisher::As4 {
            asn,
            number: number.parse().map_err(|_| format!("{text:?}: number must fit 16 bits after a 4-octet AS"))?,
        }),
    }
}

/// Parses a route target `ASN:N` or `A.B.C.D:N`.
pub fn parse_rt(text: &str) -> Result<ExtCommunity, String> {
    Ok(match parse_rd(text)? {
        RouteDistinguisher::As2 { asn, number } => ExtCommunity::RouteTargetAs2 { asn, number },
        RouteDistinguisher::Ipv4 { addr, number } => ExtCommunity::RouteTargetIpv4 { addr, number },
        RouteDistinguisher::As4 { asn, number } => ExtCommunity::RouteTargetAs4 { asn, number },
        RouteDistinguisher::Other(_) => return Err(format!("{text:?}: not a route target")),
    })
}

/// FRR's derived route target for a VNI: the low 16 bits of our AS and the VNI.
pub fn derived_rt(asn: u32, vni: u32) -> ExtCommunity {
    ExtCommunity::RouteTargetAs2 { asn: (asn & 0xffff) as u16, number: vni }
}

/// The RD derived as `router-id:EVI`, or `None` when the EVI does not fit
/// the type 1 RD's 16-bit number.
pub fn derived_rd(router_id: Ipv4Addr, evi: u32) -> Option<RouteDistinguisher> {
    u16::try_from(evi).ok().map(|number| RouteDistinguisher::Ipv4 { addr: router_id, number })
}

impl EvpnConfig {
    /// Checks the whole section; the error names the field.
    pub fn validate(&self, router_id: Ipv4Addr) -> Result<(), String> {
        if self.vtep_ip.is_unspecified() || self.vtep_ip.is_multicast() {
            return Err("bgp.evpn.vtep_ip: must be a unicast address".into());
        }
        let mut vnis = HashSet::new();
        let vrf_names: HashSet<&str> = self.vrfs.iter().map(|v| v.name.as_str()).collect();
        for (i, v) in self.vnis.iter().enumerate() {
            let field = |f: &str| format!("bgp.evpn.vnis[{i}].{f}");
            if v.vni == 0 || v.vni > MAX_VNI {
                return Err(format!("{}: must be 1 to {MAX_VNI}", field("vni")));
            }
            if !vnis.insert(v.vni) {
                return Err(format!("{}: VNI {} is configured twice", field("vni"), v.vni));
            }
            match &v.rd {
                Some(rd) => {
                    parse_rd(rd).map_err(|e| format!("{}: {e}", field("rd")))?;
                }
                None if derived_rd(router_id, v.vni).is_none() => {
                    return Err(format!("{}: VNI {} does not fit an RD's 16-bit number; give one", field("rd"), v.vni));
                }
                None => {}
            }
            for (name, rts) in [("import_rts", &v.import_rts), ("export_rts", &v.export_rts)] {
                for rt in rts {
                    parse_rt(rt).map_err(|e| format!("{}: {e}", field(name)))?;
                }
            }
            if let Some(vrf) = &v.vrf
                && !vrf_names.contains(vrf.as_str())
            {
                return Err(format!("{}: VRF {vrf:?} is not defined in bgp.evpn.vrfs", field("vrf")));
            }
            let mut macs = HashSet::new();
            for (j, s) in v.static_macs.iter().enumerate() {
                if s.mac.0[0] & 1 != 0 || s.mac.0 == [0; 6] {
                    return Err(format!("{}: {} is not a unicast MAC", field(&format!("static_macs[{j}].mac")), s.mac));
                }
                if !macs.insert(s.mac) {
                    return Err(format!("{}: {} listed twice", field(&format!("static_macs[{j}].mac")), s.mac));
                }
            }
        }
        let mut names = HashSet::new();
        for (i, v) in self.vrfs.iter().enumerate() {
            if v.networks.iter().any(|n| n.family() == crate::packet::Family::L2vpnEvpn) {
                return Err(format!("bgp.evpn.vrfs[{i}].networks: IP prefixes only"));
            }
        }
        for (i, v) in self.vrfs.iter().enumerate() {
            let field = |f: &str| format!("bgp.evpn.vrfs[{i}].{f}");
            if v.name.is_empty() || !names.insert(v.name.as_str()) {
                return Err(format!("{}: empty or configured twice", field("name")));
            }
            if v.l3vni == 0 || v.l3vni > MAX_VNI {
                return Err(format!("{}: must be 1 to {MAX_VNI}", field("l3vni")));
            }
            if !vnis.insert(v.l3vni) {
                return Err(format!("{}: VNI {} is already in use", field("l3vni"), v.l3vni));
            }
            if v.router_mac.0[0] & 1 != 0 || v.router_mac == MacAddr::default() {
                return Err(format!("{}: must be a unicast MAC", field("router_mac")));
            }
            match &v.rd {
                Some(rd) => {
                    parse_rd(rd).map_err(|e| format!("{}: {e}", field("rd")))?;
                }
                None if derived_rd(router_id, v.l3vni).is_none() => {
                    return Err(format!(
                        "{}: L3VNI {} does not fit an RD's 16-bit number; give one",
                        field("rd"),
                        v.l3vni
                    ));
                }
                None => {}
            }
            for (name, rts) in [("import_rts", &v.import_rts), ("export_rts", &v.export_rts)] {
                for rt in rts {
                    parse_rt(rt).map_err(|e| format!("{}: {e}", field(name)))?;
                }
            }
        }
        if self.duplicate_detection.max_moves == 0 || self.duplicate_detection.window_secs == 0 {
            return Err("bgp.evpn.duplicate_detection: max_moves and window_secs must be at least 1".into());
        }
        Ok(())
    }
}

/// MAC addresses as `aa:bb:cc:dd:ee:ff` in YAML.
pub mod mac_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::packet::evpn::MacAddr;

    pub fn parse(s: &str) -> Result<MacAddr, String> {
        let mut out = [0u8; 6];
        let mut parts = s.split(':');
        for byte in &mut out {
            let part = parts.next().ok_or_else(|| format!("{s:?}: expected six octets"))?;
            *byte = u8::from_str_radix(part, 16).map_err(|_| format!("{s:?}: bad octet {part:?}"))?;
        }
        if parts.next().is_some() {
            return Err(format!("{s:?}: expected six octets"));
        }
        Ok(MacAddr(out))
    }

    pub fn serialize<S: Serializer>(mac: &MacAddr, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(mac)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<MacAddr, D::Error> {
        parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rds_and_rts_parse_and_derive_as_frr_does() {
        assert_eq!(parse_rd("10.0.0.1:100").unwrap().to_string(), "10.0.0.1:100");
        assert_eq!(parse_rd("65000:4000000").unwrap(), RouteDistinguisher::As2 { asn: 65000, number: 4_000_000 });
        assert_eq!(parse_rd("4200000000:7").unwrap(), RouteDistinguisher::As4 { asn: 4_200_000_000, number: 7 });
        assert!(parse_rd("10.0.0.1:70000").is_err());
        assert!(parse_rd("nonsense").is_err());
        assert_eq!(parse_rt("65001:100").unwrap().to_string(), "RT:65001:100");
        assert_eq!(derived_rt(4_200_000_001, 100), ExtCommunity::RouteTargetAs2 { asn: 0xea01, number: 100 });
        assert_eq!(derived_rd(Ipv4Addr::new(1, 1, 1, 1), 100).unwrap().to_string(), "1.1.1.1:100");
        assert_eq!(derived_rd(Ipv4Addr::new(1, 1, 1, 1), 70000), None);
    }

    #[test]
    fn bad_sections_are_refused_naming_the_field() {
        let rid = Ipv4Addr::new(1, 1, 1, 1);
        let ok: EvpnConfig = serde_yaml::from_str(
            "vtep_ip: 1.1.1.1\nvnis: [{vni: 100, vrf: t1}]\nvrfs: [{name: t1, l3vni: 4001, router_mac: '02:00:00:00:00:01'}]",
        )
        .unwrap();
        ok.validate(rid).unwrap();
        let mut bad = ok.clone();
        bad.vnis[0].vrf = Some("t2".into());
        assert!(bad.validate(rid).unwrap_err().starts_with("bgp.evpn.vnis[0].vrf"));
        let mut bad = ok.clone();
        bad.vrfs[0].l3vni = 100;
        assert!(bad.validate(rid).unwrap_err().starts_with("bgp.evpn.vrfs[0].l3vni"));
        let mut bad = ok.clone();
        bad.vnis[0].vni = 1 << 24;
        assert!(bad.validate(rid).unwrap_err().starts_with("bgp.evpn.vnis[0].vni"));
        let mut bad = ok.clone();
        bad.vnis[0].vni = 70000;
        assert!(bad.validate(rid).unwrap_err().starts_with("bgp.evpn.vnis[0].rd"));
        let mut bad = ok.clone();
        bad.vnis[0].import_rts = vec!["x:y".into()];
        assert!(bad.validate(rid).unwrap_err().starts_with("bgp.evpn.vnis[0].import_rts"));
        let mut bad = ok;
        bad.vrfs[0].router_mac = MacAddr([1, 0, 0, 0, 0, 1]);
        assert!(bad.validate(rid).unwrap_err().starts_with("bgp.evpn.vrfs[0].router_mac"));
        assert!(
            serde_yaml::from_str::<EvpnConfig>("vtep_ip: 1.1.1.1\nvrfs: [{name: a, l3vni: 1, router_mac: zz}]")
                .is_err()
        );
    }
}
