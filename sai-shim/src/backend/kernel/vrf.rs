//! VRFs as zebra maps them: the first virtual router is the default (the
//! main table); every other one is an l3mdev VRF device `nos-vrf<TABLE>`
//! (`ip link add nos-vrf1001 type vrf table 1001`) with a routing table of
//! its own. A router interface of the VRF is its netdev enslaved to the VRF
//! device (the kernel then looks its packets up in that table), and the
//! VRF's routes go into the table. Needs `CONFIG_NET_VRF`; where the kernel
//! lacks it, its refusal comes back as the error of the virtual router's
//! creation.

use std::collections::HashMap;

use netlink_packet_route::link::{InfoData, InfoKind, InfoVrf, LinkAttribute, LinkInfo, LinkMessage};

use super::link::{admin, delete_link};
use super::{KernelBackend, Netdev, UndoLog, kernel_error};
use crate::error::SaiResult;
use crate::object::ObjectId;

/// The kernel's main routing table (`RT_TABLE_MAIN`): the default virtual
/// router's.
pub(super) const MAIN_TABLE: u32 = 254;

/// A virtual router other than the default: its device and table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Vrf {
    pub device: Netdev,
    pub table: u32,
}

/// `ip link add <name> type vrf table <table>`.
pub(super) fn vrf_message(name: &str, table: u32) -> LinkMessage {
    let mut message = LinkMessage::default();
    message.attributes.push(LinkAttribute::IfName(name.to_owned()));
    message.attributes.push(LinkAttribute::LinkInfo(vec![
        LinkInfo::Kind(InfoKind::Vrf),
        LinkInfo::Data(InfoData::Vrf(vec![InfoVrf::TableId(table)])),
    ]));
    message
}

impl KernelBackend {
    pub(super) fn create_virtual_router(&mut self, log: &mut UndoLog, id: ObjectId) -> SaiResult<()> {
        if self.default_virtual_router.is_none() {
            self.default_virtual_router = Some(id);
            return Ok(());
        }
        let table = free_table(&self.vrfs, self.config.vrf_table_base);
        let mut message = vrf_message(&self.config.vrf_name(table), table);
        admin(&mut message, true);
        let device = self.create_device(log, "create the VRF", message)?;
        self.vrfs.insert(id, Vrf { device, table });
        Ok(())
    }

    /// The store removes a virtual router only once nothing refers to it.
    pub(super) fn remove_virtual_router(&mut self, id: ObjectId) -> SaiResult<()> {
        if self.default_virtual_router == Some(id) {
            self.default_virtual_router = None;
            return Ok(());
        }
        let Some(vrf) = self.vrfs.remove(&id) else { return Ok(()) };
        match self.netlink.request(&delete_link(vrf.device.ifindex)) {
            Ok(()) => Ok(()),
            Err(error) if error.errno == libc::ENODEV => Ok(()),
            Err(error) => {
                let what = format!("delete {}", vrf.device.name);
                self.vrfs.insert(id, vrf);
                Err(kernel_error(what, error))
            }
        }
    }

    /// The routing table of a virtual router's routes.
    pub(super) fn table_of(&self, virtual_router: ObjectId) -> u32 {
        self.vrfs.get(&virtual_router).map_or(MAIN_TABLE, |vrf| vrf.table)
    }

    /// A router interface's netdev joins its VRF (nothing for the default).
    pub(super) fn join_vrf(&self, log: &mut UndoLog, netdev: &Netdev, virtual_router: ObjectId) -> SaiResult<()> {
        match self.vrfs.get(&virtual_router) {
            Some(vrf) => self.enslave(log, netdev, &vrf.device),
            None => Ok(()),
        }
    }

    /// And leaves it when the router interface goes.
    pub(super) fn leave_vrf(&self, log: &mut UndoLog, netdev: &Netdev, virtual_router: ObjectId) -> SaiResult<()> {
        match self.vrfs.get(&virtual_router) {
            Some(vrf) => self.release(log, netdev, &vrf.device),
            None => Ok(()),
        }
    }
}

/// The lowest table from `base` no VRF of ours holds.
fn free_table(vrfs: &HashMap<ObjectId, Vrf>, base: u32) -> u32 {
    (base..).find(|table| !vrfs.values().any(|vrf| vrf.table == *table)).expect("a free table")
}

#[cfg(test)]
mod tests {
    use netlink_packet_core::Emitable;

    use super::*;

    /// `ip link add vrf-red type vrf table 1001`: its attributes after the
    /// 16-byte ifinfomsg (iproute2 sends the kind without its NUL: length
    /// 7, the same padded bytes).
    #[test]
    fn the_vrf_device_is_iproute2s() {
        let message = vrf_message("vrf-red", 1001);
        let mut bytes = vec![0; message.buffer_len()];
        message.emit(&mut bytes);
        let expected: &[u8] = &[
            0x0c, 0x00, 0x03, 0x00, b'v', b'r', b'f', b'-', b'r', b'e', b'd', 0x00, // IFLA_IFNAME
            0x18, 0x00, 0x12, 0x00, // IFLA_LINKINFO
            0x08, 0x00, 0x01, 0x00, b'v', b'r', b'f', 0x00, // IFLA_INFO_KIND "vrf\0"
            0x0c, 0x00, 0x02, 0x00, // IFLA_INFO_DATA
            0x08, 0x00, 0x01, 0x00, 0xe9, 0x03, 0x00, 0x00, // IFLA_VRF_TABLE 1001
        ];
        assert_eq!(&bytes[16..], expected);
    }

    #[test]
    fn tables_are_the_lowest_free_from_the_base() {
        let mut vrfs = HashMap::new();
        assert_eq!(free_table(&vrfs, 1001), 1001);
        let device = |ifindex| Netdev { ifindex, name: format!("nos-vrf{ifindex}") };
        vrfs.insert(ObjectId::from_raw(1), Vrf { device: device(1), table: 1001 });
        vrfs.insert(ObjectId::from_raw(2), Vrf { device: device(2), table: 1003 });
        assert_eq!(free_table(&vrfs, 1001), 1002);
    }
}
