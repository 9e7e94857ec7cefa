//! Subnet management packets (IBA vol. 1 section 14.2.1): the MAD common
//! header followed by the SMP fields, 256 bytes in all.
//!
//! LID routed (14.2.1.1, management class 0x01):
//!
//! ```text
//! bytes   0..24   MAD common header (status 16 bits, class-specific reserved)
//! bytes  24..32   M_Key
//! bytes  32..64   reserved
//! bytes  64..128  SMP data (the attribute)
//! bytes 128..256  reserved
//! ```
//!
//! Directed route (14.2.1.2, management class 0x81):
//!
//! ```text
//! bytes   4..6    D (1 bit: 0 outbound, 1 returning) | Status (15 bits)
//! byte    6       HopPointer
//! byte    7       HopCount
//! bytes  24..32   M_Key
//! bytes  32..34   DrSLID    (0xFFFF, the permissive LID, for the
//! bytes  34..36   DrDLID     directed part; see 14.2.2)
//! bytes  36..64   reserved
//! bytes  64..128  SMP data
//! bytes 128..192  InitialPath (entry i is the port of hop i, 1..=HopCount)
//! bytes 192..256  ReturnPath  (filled in by each switch on the way)
//! ```

use super::attributes::AttributeId;
use super::mad::{self, BASE_VERSION, MAD_LEN, MadStatus, Method, MgmtClass, SM_CLASS_VERSION};
use super::{Error, Result, fixed_view, view_fields};

/// Bytes of the attribute data in an SMP (IBA 14.2.1: 64).
pub const DATA_LEN: usize = 64;

/// Entries of each path array; entry 0 is unused, so at most 63 hops
/// (IBA 14.2.1.2: HopCount "0 to 63").
pub const PATH_LEN: usize = 64;
pub const MAX_HOPS: u8 = 63;

/// The permissive LID (IBA 4.1.2): "the packet is for whoever receives it".
pub const PERMISSIVE_LID: u16 = 0xffff;

mod field {
    use core::ops::Range;
    /// D bit and 15-bit status of a directed-route SMP.
    pub const DR_STATUS: usize = super::mad::field::STATUS;
    pub const HOP_POINTER: usize = 6;
    pub const HOP_COUNT: usize = 7;
    pub const M_KEY: usize = 24;
    pub const DR_SLID: usize = 32;
    pub const DR_DLID: usize = 34;
    pub const LID_ROUTED_RESERVED: Range<usize> = 32..64;
    pub const DR_RESERVED: Range<usize> = 36..64;
    pub const DATA: Range<usize> = 64..128;
    pub const INITIAL_PATH: Range<usize> = 128..192;
    pub const RETURN_PATH: Range<usize> = 192..256;
    pub const LID_ROUTED_TRAILER: Range<usize> = 128..256;
}

fixed_view!(
    /// A read/write view of an SMP, either routing. The accessors of the
    /// other routing's fields read whatever the bytes hold.
    Smp,
    MAD_LEN
);

view_fields!(Smp {
    base_version, set_base_version: u8 = [0, 1, 0, 8];
    mgmt_class_raw, set_mgmt_class_raw: u8 = [1, 1, 0, 8];
    class_version, set_class_version: u8 = [2, 1, 0, 8];
    method_raw, set_method_raw: u8 = [3, 1, 0, 8];
    /// The whole 16-bit status of a LID-routed SMP.
    status_raw, set_status_raw: u16 = [4, 2, 0, 16];
    /// D: 0 while a directed-route SMP travels out, 1 on its way back.
    direction_raw, set_direction_raw: u8 = [field::DR_STATUS, 2, 15, 1];
    /// The 15-bit status of a directed-route SMP.
    dr_status, set_dr_status: u16 = [field::DR_STATUS, 2, 0, 15];
    hop_pointer, set_hop_pointer: u8 = [field::HOP_POINTER, 1, 0, 8];
    hop_count, set_hop_count: u8 = [field::HOP_COUNT, 1, 0, 8];
    transaction_id, set_transaction_id: u64 = [8, 8, 0, 64];
    attribute_id_raw, set_attribute_id_raw: u16 = [16, 2, 0, 16];
    attribute_modifier, set_attribute_modifier: u32 = [20, 4, 0, 32];
    m_key, set_m_key: u64 = [field::M_KEY, 8, 0, 64];
    dr_slid, set_dr_slid: u16 = [field::DR_SLID, 2, 0, 16];
    dr_dlid, set_dr_dlid: u16 = [field::DR_DLID, 2, 0, 16];
});

impl<T: AsRef<[u8]>> Smp<T> {
    pub fn mgmt_class(&self) -> MgmtClass {
        MgmtClass::from(self.mgmt_class_raw())
    }

    pub fn method(&self) -> Method {
        Method::from(self.method_raw())
    }

    pub fn attribute_id(&self) -> AttributeId {
        AttributeId::from(self.attribute_id_raw())
    }

    pub fn is_directed_route(&self) -> bool {
        self.mgmt_class() == MgmtClass::SubnDirectedRoute
    }

    /// Whether a directed-route SMP is on its way back (D = 1).
    pub fn is_returning(&self) -> bool {
        self.direction_raw() == 1
    }

    /// The status of either routing (15 bits for directed route).
    pub fn status(&self) -> MadStatus {
        if self.is_directed_route() { MadStatus(self.dr_status()) } else { MadStatus(self.status_raw()) }
    }

    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA]
    }

    pub fn initial_path(&self) -> &[u8] {
        &self.buffer.as_ref()[field::INITIAL_PATH]
    }

    pub fn return_path(&self) -> &[u8] {
        &self.buffer.as_ref()[field::RETURN_PATH]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Smp<T> {
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA]
    }

    pub fn initial_path_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::INITIAL_PATH]
    }

    pub fn return_path_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::RETURN_PATH]
    }

    /// Sets the status of either routing, keeping a directed-route SMP's
    /// D bit.
    pub fn set_status(&mut self, status: MadStatus) {
        if self.is_directed_route() { self.set_dr_status(status.0 & 0x7fff) } else { self.set_status_raw(status.0) }
    }
}

/// How an SMP travels and the fields only that routing has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SmpRouting {
    /// Class 0x01: routed by the LRH's DLID like any packet.
    LidRouted,
    /// Class 0x81: steered hop by hop along `initial_path` (IBA 14.2.2).
    DirectedRoute {
        /// D bit: false outbound, true returning.
        returning: bool,
        hop_pointer: u8,
        hop_count: u8,
        dr_slid: u16,
        dr_dlid: u16,
        initial_path: [u8; PATH_LEN],
        return_path: [u8; PATH_LEN],
    },
}

/// An owned SMP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SmpRepr {
    pub method: Method,
    /// 16 bits LID routed; 15 bits directed route.
    pub status: MadStatus,
    pub transaction_id: u64,
    pub attribute_id: AttributeId,
    pub attribute_modifier: u32,
    pub m_key: u64,
    pub routing: SmpRouting,
    pub data: [u8; DATA_LEN],
}

impl SmpRepr {
    /// Reads an SMP. Not an SMP class, or a base or class version other
    /// than 1: [`Error::Unsupported`]; a hop count above 63:
    /// [`Error::Malformed`].
    pub fn parse<T: AsRef<[u8]>>(smp: &Smp<T>) -> Result<SmpRepr> {
        if smp.base_version() != BASE_VERSION || smp.class_version() != SM_CLASS_VERSION {
            return Err(Error::Unsupported);
        }
        let routing = match smp.mgmt_class() {
            MgmtClass::SubnLid => SmpRouting::LidRouted,
            MgmtClass::SubnDirectedRoute => {
                if smp.hop_count() > MAX_HOPS {
                    return Err(Error::Malformed);
                }
                let mut initial_path = [0u8; PATH_LEN];
                initial_path.copy_from_slice(smp.initial_path());
                let mut return_path = [0u8; PATH_LEN];
                return_path.copy_from_slice(smp.return_path());
                SmpRouting::DirectedRoute {
                    returning: smp.is_returning(),
                    hop_pointer: smp.hop_pointer(),
                    hop_count: smp.hop_count(),
                    dr_slid: smp.dr_slid(),
                    dr_dlid: smp.dr_dlid(),
                    initial_path,
                    return_path,
                }
            }
            _ => return Err(Error::Unsupported),
        };
        let mut data = [0u8; DATA_LEN];
        data.copy_from_slice(smp.data());
        Ok(SmpRepr {
            method: smp.method(),
            status: smp.status(),
            transaction_id: smp.transaction_id(),
            attribute_id: smp.attribute_id(),
            attribute_modifier: smp.attribute_modifier(),
            m_key: smp.m_key(),
            routing,
            data,
        })
    }

    /// Parses 256 bytes at once.
    pub fn parse_bytes(bytes: &[u8]) -> Result<SmpRepr> {
        SmpRepr::parse(&Smp::new_checked(bytes)?)
    }

    /// Writes all 256 bytes, reserved ones zero.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, smp: &mut Smp<T>) {
        smp.set_base_version(BASE_VERSION);
        smp.set_class_version(SM_CLASS_VERSION);
        smp.set_method_raw(self.method.into());
        smp.set_transaction_id(self.transaction_id);
        smp.set_attribute_id_raw(self.attribute_id.into());
        smp.buffer.as_mut()[18..20].fill(0);
        smp.set_attribute_modifier(self.attribute_modifier);
        smp.set_m_key(self.m_key);
        smp.data_mut().copy_from_slice(&self.data);
        match &self.routing {
            SmpRouting::LidRouted => {
                smp.set_mgmt_class_raw(MgmtClass::SubnLid.into());
                smp.set_status_raw(self.status.0);
                smp.buffer.as_mut()[6..8].fill(0);
                smp.buffer.as_mut()[field::LID_ROUTED_RESERVED].fill(0);
                smp.buffer.as_mut()[field::LID_ROUTED_TRAILER].fill(0);
            }
            SmpRouting::DirectedRoute {
                returning,
                hop_pointer,
                hop_count,
                dr_slid,
                dr_dlid,
                initial_path,
                return_path,
            } => {
                smp.set_mgmt_class_raw(MgmtClass::SubnDirectedRoute.into());
                smp.set_direction_raw(u8::from(*returning));
                smp.set_dr_status(self.status.0 & 0x7fff);
                smp.set_hop_pointer(*hop_pointer);
                smp.set_hop_count(*hop_count);
                smp.set_dr_slid(*dr_slid);
                smp.set_dr_dlid(*dr_dlid);
                smp.buffer.as_mut()[field::DR_RESERVED].fill(0);
                smp.initial_path_mut().copy_from_slice(initial_path);
                smp.return_path_mut().copy_from_slice(return_path);
            }
        }
    }

    /// The 256 bytes of this SMP.
    pub fn to_bytes(&self) -> [u8; MAD_LEN] {
        let mut bytes = [0u8; MAD_LEN];
        self.emit(&mut Smp::new_unchecked(&mut bytes[..]));
        bytes
    }

    /// A directed-route request from the SM along `path` (the output port
    /// at each hop; empty for the SM's own node), as IBA 14.2.2.1 has the
    /// requester build it: hop pointer 0, DrSLID and DrDLID permissive.
    /// More than 63 hops: [`Error::Malformed`].
    pub fn directed(
        method: Method,
        transaction_id: u64,
        attribute_id: AttributeId,
        attribute_modifier: u32,
        path: &[u8],
        data: [u8; DATA_LEN],
    ) -> Result<SmpRepr> {
        if path.len() > usize::from(MAX_HOPS) {
            return Err(Error::Malformed);
        }
        let mut initial_path = [0u8; PATH_LEN];
        initial_path[1..=path.len()].copy_from_slice(path);
        Ok(SmpRepr {
            method,
            status: MadStatus::OK,
            transaction_id,
            attribute_id,
            attribute_modifier,
            m_key: 0,
            routing: SmpRouting::DirectedRoute {
                returning: false,
                hop_pointer: 0,
                hop_count: path.len() as u8,
                dr_slid: PERMISSIVE_LID,
                dr_dlid: PERMISSIVE_LID,
                initial_path,
                return_path: [0u8; PATH_LEN],
            },
            data,
        })
    }

    /// A LID-routed request.
    pub fn lid_routed(
        method: Method,
        transaction_id: u64,
        attribute_id: AttributeId,
        attribute_modifier: u32,
        data: [u8; DATA_LEN],
    ) -> SmpRepr {
        SmpRepr {
            method,
            status: MadStatus::OK,
            transaction_id,
            attribute_id,
            attribute_modifier,
            m_key: 0,
            routing: SmpRouting::LidRouted,
            data,
        }
    }

    /// The hop count of a directed-route SMP, 0 for LID routed.
    pub fn hop_count(&self) -> u8 {
        match self.routing {
            SmpRouting::LidRouted => 0,
            SmpRouting::DirectedRoute { hop_count, .. } => hop_count,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn directed_route_layout_matches_umad_smp() {
        // Offsets of struct umad_smp (rdma-core's umad_sm.h), which OpenSM
        // and infiniband-diags send: hop_ptr 6, hop_cnt 7, mkey 24,
        // dr_slid 32, dr_dlid 34, data 64, initial_path 128, return_path 192.
        let repr = SmpRepr::directed(Method::Get, 0x1122_3344_5566_7788, AttributeId::NodeInfo, 0, &[1, 3, 5], [0; 64])
            .unwrap();
        let bytes = repr.to_bytes();
        assert_eq!(&bytes[..8], &[0x01, 0x81, 0x01, 0x01, 0x00, 0x00, 0x00, 0x03]);
        assert_eq!(&bytes[8..16], &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]);
        assert_eq!(&bytes[16..24], &[0x00, 0x11, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&bytes[32..36], &[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(&bytes[128..132], &[0, 1, 3, 5]);
        assert!(bytes[192..].iter().all(|&b| b == 0));
    }

    #[test]
    fn direction_bit_is_the_top_of_the_status_word() {
        let mut repr = SmpRepr::directed(Method::GetResp, 7, AttributeId::PortInfo, 2, &[1], [0; 64]).unwrap();
        repr.status = MadStatus(0x001c);
        if let SmpRouting::DirectedRoute { returning, .. } = &mut repr.routing {
            *returning = true;
        }
        let bytes = repr.to_bytes();
        assert_eq!(&bytes[3..6], &[0x81, 0x80, 0x1c]);
        let parsed = SmpRepr::parse_bytes(&bytes).unwrap();
        assert_eq!(parsed, repr);
        assert_eq!(Smp::new_checked(&bytes[..]).unwrap().status(), MadStatus(0x001c));
    }

    #[test]
    fn refuses_what_is_not_an_smp() {
        assert_eq!(SmpRepr::parse_bytes(&[0u8; 255]), Err(Error::Truncated));
        let mut bytes = SmpRepr::lid_routed(Method::Get, 1, AttributeId::NodeInfo, 0, [0; 64]).to_bytes();
        bytes[1] = 0x03;
        assert_eq!(SmpRepr::parse_bytes(&bytes), Err(Error::Unsupported));
        bytes[1] = 0x01;
        bytes[2] = 2;
        assert_eq!(SmpRepr::parse_bytes(&bytes), Err(Error::Unsupported));
        let mut dr = SmpRepr::directed(Method::Get, 1, AttributeId::NodeInfo, 0, &[1], [0; 64]).unwrap().to_bytes();
        dr[7] = 64;
        assert_eq!(SmpRepr::parse_bytes(&dr), Err(Error::Malformed));
        assert_eq!(
            SmpRepr::directed(Method::Get, 1, AttributeId::NodeInfo, 0, &[1; 64], [0; 64]),
            Err(Error::Malformed)
        );
    }

    proptest! {
        /// Any 256 bytes: parse never panics; what parses emits bytes that
        /// parse to the same SMP, and emitting again changes nothing.
        #[test]
        fn any_bytes_round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(repr) = SmpRepr::parse_bytes(&bytes) {
                let emitted = repr.to_bytes();
                prop_assert_eq!(SmpRepr::parse_bytes(&emitted), Ok(repr));
                prop_assert_eq!(SmpRepr::parse_bytes(&emitted).unwrap().to_bytes(), emitted);
                // Only reserved bytes may differ from the input.
                for (index, (a, b)) in bytes.iter().zip(emitted.iter()).enumerate() {
                    let reserved = (18..20).contains(&index)
                        || match repr.routing {
                            SmpRouting::LidRouted => (6..8).contains(&index) || (32..64).contains(&index) || index >= 128,
                            SmpRouting::DirectedRoute { .. } => (36..64).contains(&index),
                        };
                    prop_assert!(reserved || a == b, "byte {} changed", index);
                }
            }
        }

        #[test]
        fn directed_requests_round_trip(path in proptest::collection::vec(1u8..=254, 0..=63), tid: u64, modifier: u32, data: [u8; 32]) {
            let mut payload = [0u8; 64];
            payload[..32].copy_from_slice(&data);
            let repr = SmpRepr::directed(Method::Set, tid, AttributeId::LinearForwardingTable, modifier, &path, payload).unwrap();
            prop_assert_eq!(SmpRepr::parse_bytes(&repr.to_bytes()), Ok(repr));
        }
    }
}
