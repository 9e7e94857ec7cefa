//! NOTIFICATION message (RFC 4271 §4.5).

use core::fmt;

use super::error::{DecodeError, ErrorCode, cease_subcode, header_subcode};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub code: u8,
    pub subcode: u8,
    pub data: Vec<u8>,
}

impl Notification {
    pub fn new(code: ErrorCode, subcode: u8) -> Notification {
        Notification { code: code as u8, subcode, data: Vec::new() }
    }

    pub fn cease(subcode: u8) -> Notification {
        Notification::new(ErrorCode::Cease, subcode)
    }

    pub fn decode(body: &[u8]) -> Result<Notification, DecodeError> {
        match body {
            [code, subcode, data @ ..] => Ok(Notification { code: *code, subcode: *subcode, data: data.to_vec() }),
            _ => Err(DecodeError::header(
                header_subcode::BAD_MESSAGE_LENGTH,
                ((body.len() + 19) as u16).to_be_bytes().to_vec(),
                "NOTIFICATION too short",
            )),
        }
    }

    pub fn encode_body(&self, out: &mut Vec<u8>) {
        out.push(self.code);
        out.push(self.subcode);
        out.extend_from_slice(&self.data);
    }

    pub fn is_admin_shutdown(&self) -> bool {
        self.code == ErrorCode::Cease as u8 && self.subcode == cease_subcode::ADMIN_SHUTDOWN
    }
}

impl fmt::Display for Notification {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let code = match self.code {
            1 => "Message Header Error",
            2 => "OPEN Message Error",
            3 => "UPDATE Message Error",
            4 => "Hold Timer Expired",
            5 => "Finite State Machine Error",
            6 => "Cease",
            7 => "ROUTE-REFRESH Message Error",
            _ => "unknown error",
        };
        write!(f, "{code} ({}/{})", self.code, self.subcode)
    }
}
