//! NodeInfo (IBA 14.2.5.3, table 146): 40 bytes describing a node.

use crate::packet::{Result, fixed_view, view_fields};

/// NodeType (IBA 14.2.5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeType {
    /// 1: channel adapter (an HCA-like endpoint).
    Ca,
    /// 2: switch.
    Switch,
    /// 3: router.
    Router,
    Unknown(u8),
}

impl From<u8> for NodeType {
    fn from(value: u8) -> Self {
        match value {
            1 => NodeType::Ca,
            2 => NodeType::Switch,
            3 => NodeType::Router,
            other => NodeType::Unknown(other),
        }
    }
}

impl From<NodeType> for u8 {
    fn from(value: NodeType) -> Self {
        match value {
            NodeType::Ca => 1,
            NodeType::Switch => 2,
            NodeType::Router => 3,
            NodeType::Unknown(other) => other,
        }
    }
}

fixed_view!(
    /// A read/write view of NodeInfo.
    NodeInfo,
    40
);

view_fields!(NodeInfo {
    base_version, set_base_version: u8 = [0, 1, 0, 8];
    class_version, set_class_version: u8 = [1, 1, 0, 8];
    node_type_raw, set_node_type_raw: u8 = [2, 1, 0, 8];
    /// Physical ports (switch port 0 not counted).
    num_ports, set_num_ports: u8 = [3, 1, 0, 8];
    system_image_guid, set_system_image_guid: u64 = [4, 8, 0, 64];
    node_guid, set_node_guid: u64 = [12, 8, 0, 64];
    /// The GUID of the port the SMP came in on (port 0 on a switch).
    port_guid, set_port_guid: u64 = [20, 8, 0, 64];
    partition_cap, set_partition_cap: u16 = [28, 2, 0, 16];
    device_id, set_device_id: u16 = [30, 2, 0, 16];
    revision, set_revision: u32 = [32, 4, 0, 32];
    /// The port the SMP came in on.
    local_port_num, set_local_port_num: u8 = [36, 1, 0, 8];
    vendor_id, set_vendor_id: u32 = [37, 3, 0, 24];
});

impl<T: AsRef<[u8]>> NodeInfo<T> {
    pub fn node_type(&self) -> NodeType {
        NodeType::from(self.node_type_raw())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeInfoRepr {
    pub base_version: u8,
    pub class_version: u8,
    pub node_type: NodeType,
    pub num_ports: u8,
    pub system_image_guid: u64,
    pub node_guid: u64,
    pub port_guid: u64,
    pub partition_cap: u16,
    pub device_id: u16,
    pub revision: u32,
    pub local_port_num: u8,
    pub vendor_id: u32,
}

impl NodeInfoRepr {
    pub fn parse<T: AsRef<[u8]>>(view: &NodeInfo<T>) -> Result<NodeInfoRepr> {
        Ok(NodeInfoRepr {
            base_version: view.base_version(),
            class_version: view.class_version(),
            node_type: view.node_type(),
            num_ports: view.num_ports(),
            system_image_guid: view.system_image_guid(),
            node_guid: view.node_guid(),
            port_guid: view.port_guid(),
            partition_cap: view.partition_cap(),
            device_id: view.device_id(),
            revision: view.revision(),
            local_port_num: view.local_port_num(),
            vendor_id: view.vendor_id(),
        })
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut NodeInfo<T>) {
        view.set_base_version(self.base_version);
        view.set_class_version(self.class_version);
        view.set_node_type_raw(self.node_type.into());
        view.set_num_ports(self.num_ports);
        view.set_system_image_guid(self.system_image_guid);
        view.set_node_guid(self.node_guid);
        view.set_port_guid(self.port_guid);
        view.set_partition_cap(self.partition_cap);
        view.set_device_id(self.device_id);
        view.set_revision(self.revision);
        view.set_local_port_num(self.local_port_num);
        view.set_vendor_id(self.vendor_id & 0x00ff_ffff);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::attributes::attribute_round_trip;

    attribute_round_trip!(round_trip, NodeInfo, NodeInfoRepr);

    #[test]
    fn golden_switch_node_info() {
        // ibsim's switch: base/class version 1, type 2 (switch), 8 ports.
        let repr = NodeInfoRepr {
            base_version: 1,
            class_version: 1,
            node_type: NodeType::Switch,
            num_ports: 8,
            system_image_guid: 0x0008_f104_0041_1a08,
            node_guid: 0x0008_f104_0041_1a08,
            port_guid: 0x0008_f104_0041_1a08,
            partition_cap: 8,
            device_id: 0xb924,
            revision: 0xa1,
            local_port_num: 3,
            vendor_id: 0x0008f1,
        };
        let mut bytes = [0u8; 40];
        repr.emit(&mut NodeInfo::new_unchecked(&mut bytes[..]));
        assert_eq!(&bytes[..4], &[1, 1, 2, 8]);
        assert_eq!(&bytes[12..20], &[0x00, 0x08, 0xf1, 0x04, 0x00, 0x41, 0x1a, 0x08]);
        assert_eq!(&bytes[28..40], &[0, 8, 0xb9, 0x24, 0, 0, 0, 0xa1, 3, 0x00, 0x08, 0xf1]);
    }
}
