//! Newline-delimited JSON framing shared by the client and the server.
//!
//! serde_json never emits a raw newline inside a value (newlines in strings
//! are escaped), so one line is exactly one message.

use serde::{Serialize, de::DeserializeOwned};

/// Longest line either side accepts; a running config is the largest answer.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// `value` as one line of JSON, newline included.
pub fn encode<T: Serialize>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(value)?;
    line.push(b'\n');
    Ok(line)
}

/// `value` as one line of JSON appended to `line`: a stream's chunks
/// reuse a buffer the size of the last one instead of growing a new one.
pub fn encode_into<T: Serialize>(value: &T, line: &mut Vec<u8>) -> serde_json::Result<()> {
    serde_json::to_writer(&mut *line, value)?;
    line.push(b'\n');
    Ok(())
}

/// One message from one line (with or without its trailing newline).
pub fn decode<T: DeserializeOwned>(line: &[u8]) -> serde_json::Result<T> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    serde_json::from_slice(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::*;

    #[test]
    fn request_is_one_line_tagged_by_name() {
        let line = encode(&Request::ShowMac).unwrap();
        assert_eq!(line, b"{\"request\":\"show_mac\"}\n");
        assert_eq!(decode::<Request>(&line).unwrap(), Request::ShowMac);
    }

    #[test]
    fn response_round_trips_and_escapes_newlines() {
        let response = Response::Ok {
            reply: Reply::RunningConfig(RunningConfig { yaml: "name: a\nports: []\n".into(), generation: 0 }),
        };
        let line = encode(&response).unwrap();
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        assert_eq!(decode::<Response>(&line).unwrap(), response);
    }

    #[test]
    fn unknown_request_is_an_error_not_a_panic() {
        assert!(decode::<Request>(b"{\"request\":\"reboot\"}").is_err());
        assert!(decode::<Request>(b"not json").is_err());
    }
}
