//! NodeDescription (IBA 14.2.5.2): 64 bytes of UTF-8 text, NUL padded.

use crate::packet::{Error, Result, fixed_view};

pub const NODE_DESCRIPTION_LEN: usize = 64;

fixed_view!(
    /// A read/write view of NodeDescription.
    NodeDescription,
    NODE_DESCRIPTION_LEN
);

impl<T: AsRef<[u8]>> NodeDescription<T> {
    /// The bytes up to the first NUL.
    pub fn text_bytes(&self) -> &[u8] {
        let bytes = &self.buffer.as_ref()[..NODE_DESCRIPTION_LEN];
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(NODE_DESCRIPTION_LEN);
        &bytes[..end]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> NodeDescription<T> {
    /// Writes `text`, cut at 64 bytes (on a character boundary), NUL padded.
    pub fn set_text(&mut self, text: &str) {
        let mut end = text.len().min(NODE_DESCRIPTION_LEN);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let bytes = &mut self.buffer.as_mut()[..NODE_DESCRIPTION_LEN];
        bytes.fill(0);
        bytes[..end].copy_from_slice(&text.as_bytes()[..end]);
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NodeDescriptionRepr {
    pub text: String,
}

impl NodeDescriptionRepr {
    /// Text that is not UTF-8 is [`Error::Malformed`] (IBA 14.2.5.2 says
    /// UTF-8).
    pub fn parse<T: AsRef<[u8]>>(view: &NodeDescription<T>) -> Result<NodeDescriptionRepr> {
        let text = core::str::from_utf8(view.text_bytes()).map_err(|_| Error::Malformed)?;
        Ok(NodeDescriptionRepr { text: text.to_owned() })
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut NodeDescription<T>) {
        view.set_text(&self.text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::attributes::attribute_round_trip;

    attribute_round_trip!(round_trip, NodeDescription, NodeDescriptionRepr);

    #[test]
    fn text_is_nul_padded_and_cut_on_a_char_boundary() {
        let mut bytes = [0xffu8; 64];
        NodeDescription::new_unchecked(&mut bytes[..]).set_text("sw1 HCA-1");
        assert_eq!(&bytes[..10], b"sw1 HCA-1\0");
        assert!(bytes[9..].iter().all(|&b| b == 0));
        let long = format!("{}é", "x".repeat(63));
        NodeDescription::new_unchecked(&mut bytes[..]).set_text(&long);
        let repr = NodeDescriptionRepr::parse(&NodeDescription::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(repr.text, "x".repeat(63));
        bytes[0] = 0xff;
        assert_eq!(
            NodeDescriptionRepr::parse(&NodeDescription::new_checked(&bytes[..]).unwrap()),
            Err(Error::Malformed)
        );
    }
}
