//! The MAD common header (IBA vol. 1 section 13.4.2), the methods
//! (13.4.5) and the status field (13.4.7).
//!
//! ```text
//!  0               1               2               3
//! | BaseVersion   | MgmtClass     | ClassVersion  |R| Method      |
//! | Status                        | ClassSpecific                 |
//! | TransactionID (64 bits)                                       |
//! |                                                               |
//! | AttributeID                   | Reserved                      |
//! | AttributeModifier                                             |
//! ```
//!
//! Every MAD this crate handles is 256 bytes (IBA 13.4.1: MADs are exactly
//! 256 bytes on the wire; RMPP is the SA's business, not the SM's).

use super::{Error, Result, fixed_view, view_fields};

/// The length of every MAD (IBA 13.4.1).
pub const MAD_LEN: usize = 256;

/// The common header's length; class-specific fields start here.
pub const HEADER_LEN: usize = 24;

/// IBA 13.4.2: "BaseVersion ... shall be set to 1".
pub const BASE_VERSION: u8 = 1;

/// The class version of the subnet management classes (IBA 14.2.1).
pub const SM_CLASS_VERSION: u8 = 1;

/// Management classes (IBA 13.4.4, table 102), those this crate meets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MgmtClass {
    /// Subnet management, LID routed (0x01).
    SubnLid,
    /// Subnet management, directed route (0x81).
    SubnDirectedRoute,
    /// Subnet administration (0x03).
    SubnAdm,
    /// Performance management (0x04).
    Performance,
    Unknown(u8),
}

impl From<u8> for MgmtClass {
    fn from(value: u8) -> Self {
        match value {
            0x01 => MgmtClass::SubnLid,
            0x81 => MgmtClass::SubnDirectedRoute,
            0x03 => MgmtClass::SubnAdm,
            0x04 => MgmtClass::Performance,
            other => MgmtClass::Unknown(other),
        }
    }
}

impl From<MgmtClass> for u8 {
    fn from(value: MgmtClass) -> Self {
        match value {
            MgmtClass::SubnLid => 0x01,
            MgmtClass::SubnDirectedRoute => 0x81,
            MgmtClass::SubnAdm => 0x03,
            MgmtClass::Performance => 0x04,
            MgmtClass::Unknown(other) => other,
        }
    }
}

/// The method byte, response bit included (IBA 13.4.5, table 103).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    Get,
    Set,
    Send,
    Trap,
    Report,
    TrapRepress,
    GetResp,
    ReportResp,
    Unknown(u8),
}

impl Method {
    /// Whether the R bit (most significant bit of the method byte) is set.
    pub fn is_response(self) -> bool {
        u8::from(self) & 0x80 != 0
    }
}

impl From<u8> for Method {
    fn from(value: u8) -> Self {
        match value {
            0x01 => Method::Get,
            0x02 => Method::Set,
            0x03 => Method::Send,
            0x05 => Method::Trap,
            0x06 => Method::Report,
            0x07 => Method::TrapRepress,
            0x81 => Method::GetResp,
            0x86 => Method::ReportResp,
            other => Method::Unknown(other),
        }
    }
}

impl From<Method> for u8 {
    fn from(value: Method) -> Self {
        match value {
            Method::Get => 0x01,
            Method::Set => 0x02,
            Method::Send => 0x03,
            Method::Trap => 0x05,
            Method::Report => 0x06,
            Method::TrapRepress => 0x07,
            Method::GetResp => 0x81,
            Method::ReportResp => 0x86,
            Method::Unknown(other) => other,
        }
    }
}

/// The invalid-field code of the status (IBA 13.4.7, table 104, bits 2-4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InvalidField {
    /// 0: no invalid fields.
    None,
    /// 1: bad version: the base or class version is not supported.
    BadVersion,
    /// 2: the method is not supported.
    MethodUnsupported,
    /// 3: the method/attribute combination is not supported.
    MethodAttributeUnsupported,
    /// 7: one or more fields in the attribute or attribute modifier contain
    /// an invalid value.
    InvalidValue,
    /// 4-6: reserved codes.
    Reserved(u8),
}

/// The 16-bit MAD status (IBA 13.4.7). In a directed-route SMP the top bit
/// is the direction bit instead, and only the low 15 bits are status
/// ([`super::smp`] splits them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MadStatus(pub u16);

impl MadStatus {
    pub const OK: MadStatus = MadStatus(0);
    /// Bit 0: busy, the request was discarded and may be retried.
    pub const BUSY: u16 = 0x0001;
    /// Bit 1: redirection required.
    pub const REDIRECT: u16 = 0x0002;
    const INVALID_FIELD_SHIFT: u32 = 2;
    const INVALID_FIELD_MASK: u16 = 0x7 << Self::INVALID_FIELD_SHIFT;

    /// A status carrying only an invalid-field code.
    pub fn invalid(field: InvalidField) -> MadStatus {
        let code: u16 = match field {
            InvalidField::None => 0,
            InvalidField::BadVersion => 1,
            InvalidField::MethodUnsupported => 2,
            InvalidField::MethodAttributeUnsupported => 3,
            InvalidField::InvalidValue => 7,
            InvalidField::Reserved(code) => u16::from(code & 0x7),
        };
        MadStatus(code << Self::INVALID_FIELD_SHIFT)
    }

    pub fn is_ok(self) -> bool {
        self.0 == 0
    }

    pub fn busy(self) -> bool {
        self.0 & Self::BUSY != 0
    }

    pub fn redirect(self) -> bool {
        self.0 & Self::REDIRECT != 0
    }

    pub fn invalid_field(self) -> InvalidField {
        match (self.0 & Self::INVALID_FIELD_MASK) >> Self::INVALID_FIELD_SHIFT {
            0 => InvalidField::None,
            1 => InvalidField::BadVersion,
            2 => InvalidField::MethodUnsupported,
            3 => InvalidField::MethodAttributeUnsupported,
            7 => InvalidField::InvalidValue,
            other => InvalidField::Reserved(other as u8),
        }
    }

    /// Bits 8-14: class-specific status.
    pub fn class_specific(self) -> u8 {
        ((self.0 >> 8) & 0x7f) as u8
    }
}

impl core::fmt::Display for MadStatus {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.is_ok() {
            return f.write_str("ok");
        }
        write!(f, "0x{:04x}", self.0)?;
        if self.busy() {
            f.write_str(" busy")?;
        }
        if self.redirect() {
            f.write_str(" redirect")?;
        }
        match self.invalid_field() {
            InvalidField::None => Ok(()),
            InvalidField::BadVersion => f.write_str(" bad-version"),
            InvalidField::MethodUnsupported => f.write_str(" method-unsupported"),
            InvalidField::MethodAttributeUnsupported => f.write_str(" method-attribute-unsupported"),
            InvalidField::InvalidValue => f.write_str(" invalid-value"),
            InvalidField::Reserved(code) => write!(f, " invalid-field-code-{code}"),
        }
    }
}

pub(crate) mod field {
    pub const BASE_VERSION: usize = 0;
    pub const MGMT_CLASS: usize = 1;
    pub const CLASS_VERSION: usize = 2;
    pub const METHOD: usize = 3;
    pub const STATUS: usize = 4;
    pub const CLASS_SPECIFIC: usize = 6;
    pub const TRANSACTION_ID: usize = 8;
    pub const ATTRIBUTE_ID: usize = 16;
    pub const ATTRIBUTE_MODIFIER: usize = 20;
}

fixed_view!(
    /// A read/write view of the MAD common header at the start of a buffer.
    MadHeader,
    HEADER_LEN
);

view_fields!(MadHeader {
    base_version, set_base_version: u8 = [field::BASE_VERSION, 1, 0, 8];
    mgmt_class_raw, set_mgmt_class_raw: u8 = [field::MGMT_CLASS, 1, 0, 8];
    class_version, set_class_version: u8 = [field::CLASS_VERSION, 1, 0, 8];
    /// The whole method byte, R bit included.
    method_raw, set_method_raw: u8 = [field::METHOD, 1, 0, 8];
    status_raw, set_status_raw: u16 = [field::STATUS, 2, 0, 16];
    class_specific, set_class_specific: u16 = [field::CLASS_SPECIFIC, 2, 0, 16];
    transaction_id, set_transaction_id: u64 = [field::TRANSACTION_ID, 8, 0, 64];
    attribute_id_raw, set_attribute_id_raw: u16 = [field::ATTRIBUTE_ID, 2, 0, 16];
    attribute_modifier, set_attribute_modifier: u32 = [field::ATTRIBUTE_MODIFIER, 4, 0, 32];
});

impl<T: AsRef<[u8]>> MadHeader<T> {
    pub fn mgmt_class(&self) -> MgmtClass {
        MgmtClass::from(self.mgmt_class_raw())
    }

    pub fn method(&self) -> Method {
        Method::from(self.method_raw())
    }
}

/// The owned MAD common header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MadHeaderRepr {
    pub mgmt_class: MgmtClass,
    pub class_version: u8,
    pub method: Method,
    pub status: MadStatus,
    pub class_specific: u16,
    pub transaction_id: u64,
    pub attribute_id: u16,
    pub attribute_modifier: u32,
}

impl MadHeaderRepr {
    /// Reads the header; a base version other than 1 is
    /// [`Error::Unsupported`] (IBA 13.4.2: a receiver "shall" reject it).
    pub fn parse<T: AsRef<[u8]>>(header: &MadHeader<T>) -> Result<MadHeaderRepr> {
        if header.base_version() != BASE_VERSION {
            return Err(Error::Unsupported);
        }
        Ok(MadHeaderRepr {
            mgmt_class: header.mgmt_class(),
            class_version: header.class_version(),
            method: header.method(),
            status: MadStatus(header.status_raw()),
            class_specific: header.class_specific(),
            transaction_id: header.transaction_id(),
            attribute_id: header.attribute_id_raw(),
            attribute_modifier: header.attribute_modifier(),
        })
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, header: &mut MadHeader<T>) {
        header.set_base_version(BASE_VERSION);
        header.set_mgmt_class_raw(self.mgmt_class.into());
        header.set_class_version(self.class_version);
        header.set_method_raw(self.method.into());
        header.set_status_raw(self.status.0);
        header.set_class_specific(self.class_specific);
        header.set_transaction_id(self.transaction_id);
        header.set_attribute_id_raw(self.attribute_id);
        header.buffer.as_mut()[18..20].fill(0);
        header.set_attribute_modifier(self.attribute_modifier);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_codes_are_iba_table_104() {
        // OpenSM's IB_MAD_STATUS_* values (ib_types.h) for the same codes.
        assert_eq!(MadStatus::invalid(InvalidField::BadVersion).0, 0x0004);
        assert_eq!(MadStatus::invalid(InvalidField::MethodUnsupported).0, 0x0008);
        assert_eq!(MadStatus::invalid(InvalidField::MethodAttributeUnsupported).0, 0x000c);
        assert_eq!(MadStatus::invalid(InvalidField::InvalidValue).0, 0x001c);
        assert_eq!(MadStatus(0x001c).invalid_field(), InvalidField::InvalidValue);
        assert!(MadStatus(0x0001).busy());
        assert!(MadStatus(0x0002).redirect());
        assert_eq!(MadStatus(0x7f00).class_specific(), 0x7f);
        assert_eq!(MadStatus(0x000c).to_string(), "0x000c method-attribute-unsupported");
    }

    #[test]
    fn header_round_trip_and_offsets() {
        let repr = MadHeaderRepr {
            mgmt_class: MgmtClass::SubnLid,
            class_version: 1,
            method: Method::GetResp,
            status: MadStatus(0x001c),
            class_specific: 0x1234,
            transaction_id: 0x0102_0304_0506_0708,
            attribute_id: 0x0011,
            attribute_modifier: 0xa0b0_c0d0,
        };
        let mut bytes = [0xffu8; HEADER_LEN];
        repr.emit(&mut MadHeader::new_unchecked(&mut bytes[..]));
        assert_eq!(
            bytes,
            [
                0x01, 0x01, 0x01, 0x81, 0x00, 0x1c, 0x12, 0x34, 1, 2, 3, 4, 5, 6, 7, 8, 0x00, 0x11, 0, 0, 0xa0, 0xb0,
                0xc0, 0xd0
            ]
        );
        let parsed = MadHeaderRepr::parse(&MadHeader::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(parsed, repr);
        assert!(parsed.method.is_response());
    }

    #[test]
    fn short_or_bad_version_is_refused() {
        assert_eq!(MadHeader::new_checked(&[0u8; 23][..]).unwrap_err(), Error::Truncated);
        let mut bytes = [0u8; HEADER_LEN];
        bytes[0] = 2;
        let header = MadHeader::new_checked(&bytes[..]).unwrap();
        assert_eq!(MadHeaderRepr::parse(&header), Err(Error::Unsupported));
    }
}
