//! NIL message (type 0x0000): padding in an object header.
//!
//! | field | size | meaning                                   |
//! |-------|------|-------------------------------------------|
//! | data  | n    | ignored; libhdf5 writes zeros; n may be 0 |
//!
//! Only the length is kept. [`super::Message::decode`] hands a NIL body with non-zero bytes to
//! [`super::Message::Unknown`] instead, so that rewriting a header never changes its bytes.

use crate::cursor::{Decoder, Encoder};
use crate::error::Result;

/// A NIL (padding) message of `len` bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Nil {
    /// Length of the message body in bytes.
    pub len: usize,
}

impl Nil {
    /// Decode a NIL body: every remaining byte belongs to it.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        let len = d.remaining();
        d.skip(len)?;
        Ok(Nil { len })
    }

    /// Encode a NIL body: `len` zero bytes.
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        e.zeros(self.len);
        Ok(())
    }

    /// The body's encoded length.
    pub fn encoded_len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;
    use crate::{Addr, Sizes};

    #[test]
    fn roundtrip_nil_keeps_length() {
        for n in [0usize, 1, 7, 72, 181] {
            let body = vec![0u8; n];
            let mut d = Decoder::new(&body, Addr(0x63), Sizes::DEFAULT, "NIL message");
            let nil = Nil::decode(&mut d).unwrap();
            assert_eq!(nil, Nil { len: n });
            assert_eq!(nil.encoded_len(), n);
            let mut out = Vec::new();
            nil.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, "NIL message"))
                .unwrap();
            assert_eq!(out, body);
        }
    }

    #[test]
    fn rejects_truncation() {
        // Every prefix of a NIL body is itself a valid (shorter) NIL body: nothing to reject,
        // but no prefix may panic and each keeps its own length.
        let body = [0u8; 24];
        for n in 0..body.len() {
            let mut d = Decoder::new(&body[..n], Addr(0), Sizes::DEFAULT, "NIL message");
            assert_eq!(Nil::decode(&mut d).unwrap(), Nil { len: n });
        }
    }
}
