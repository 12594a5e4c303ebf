//! Object Header Continuation message (type 0x0010).
//!
//! | field  | size | meaning                                                        |
//! |--------|------|----------------------------------------------------------------|
//! | offset | O    | address of the continuation block                              |
//! | length | L    | its length (v2: includes the `OCHK` signature and checksum)    |

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::Result;

/// Where the next chunk of an object header lives.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Continuation {
    /// Address of the continuation block.
    pub offset: Addr,
    /// Length of the continuation block in bytes.
    pub length: u64,
}

impl Continuation {
    /// Decode a continuation message body.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        let offset = d.defined_offset("continuation block address")?;
        let length = d.length()?;
        Ok(Continuation { offset, length })
    }

    /// Encode a continuation message body.
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        e.offset(Some(self.offset), "continuation block address")?;
        e.length(self.length, "continuation block length")
    }

    /// The body's encoded length.
    pub fn encoded_len(sizes: crate::Sizes) -> usize {
        usize::from(sizes.offsets().saturating_add(sizes.lengths()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sizes;

    #[rustfmt::skip]
    const BODY: [u8; 16] = [
        0x78, 0x05, 0, 0, 0, 0, 0, 0, // offset 0x578
        0xe0, 0x01, 0, 0, 0, 0, 0, 0, // length 480
    ];

    #[test]
    fn roundtrip_continuation() {
        let mut d = Decoder::new(&BODY, Addr(0x100), Sizes::DEFAULT, "test");
        let c = Continuation::decode(&mut d).unwrap();
        assert_eq!(
            c,
            Continuation {
                offset: Addr(0x578),
                length: 480
            }
        );
        let mut out = Vec::new();
        c.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, "test"))
            .unwrap();
        assert_eq!(out, BODY);
    }

    #[test]
    fn rejects_truncation() {
        for n in 0..BODY.len() {
            let mut d = Decoder::new(&BODY[..n], Addr(0), Sizes::DEFAULT, "test");
            assert!(Continuation::decode(&mut d).is_err(), "prefix {n}");
        }
    }
}
