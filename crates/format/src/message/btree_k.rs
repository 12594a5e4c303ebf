//! B-tree 'K' Values message (type 0x0013): the B-tree K values of a file whose superblock
//! (version 2 or 3) has no room for them, kept in the superblock extension.
//!
//! | off | size | field                               |
//! |-----|------|-------------------------------------|
//! | 0   | 1    | version = 0                         |
//! | 1   | 2    | indexed storage internal node K     |
//! | 3   | 2    | group internal node K               |
//! | 5   | 2    | group leaf node K                   |

use crate::cursor::{Decoder, Encoder};
use crate::error::Result;

/// A decoded B-tree 'K' Values message.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct BTreeKValues {
    /// "Indexed Storage Internal Node K" (v1 B-tree chunk indexes).
    pub indexed_storage_internal_k: u16,
    /// "Group Internal Node K".
    pub group_internal_k: u16,
    /// "Group Leaf Node K".
    pub group_leaf_k: u16,
}

impl BTreeKValues {
    /// Decode a B-tree 'K' Values message body. A K of zero is invalid (libhdf5 refuses it
    /// when it is set).
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        let at = d.addr();
        let version = d.u8()?;
        if version != 0 {
            return Err(d.bad_version(at, version));
        }
        let mut k = || -> Result<u16> {
            let at = d.addr();
            match d.u16()? {
                0 => Err(d.bad_value(at, "B-tree K", 0)),
                v => Ok(v),
            }
        };
        Ok(BTreeKValues {
            indexed_storage_internal_k: k()?,
            group_internal_k: k()?,
            group_leaf_k: k()?,
        })
    }

    /// Encode the message body.
    pub fn encode(&self, e: &mut Encoder<'_>) {
        e.u8(0);
        e.u16(self.indexed_storage_internal_k);
        e.u16(self.group_internal_k);
        e.u16(self.group_leaf_k);
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::Error;
    use crate::addr::Addr;
    use crate::sizes::Sizes;

    #[rustfmt::skip]
    const BODY: [u8; 7] = [
        0,          // version 0
        8, 0,       // indexed storage internal K 8
        16, 0,      // group internal K 16
        4, 0,       // group leaf K 4
    ];

    fn decode(body: &[u8]) -> Result<BTreeKValues> {
        BTreeKValues::decode(&mut Decoder::new(
            body,
            Addr(0x40),
            Sizes::DEFAULT,
            "B-tree K",
        ))
    }

    #[test]
    fn roundtrip() {
        let k = decode(&BODY).unwrap();
        assert_eq!(
            k,
            BTreeKValues {
                indexed_storage_internal_k: 8,
                group_internal_k: 16,
                group_leaf_k: 4
            }
        );
        let mut out = Vec::new();
        k.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, "B-tree K"));
        assert_eq!(out, BODY);
    }

    #[test]
    fn rejects_truncation() {
        for n in 0..BODY.len() {
            assert!(decode(&BODY[..n]).is_err(), "prefix {n}");
        }
    }

    #[test]
    fn rejects_bad_values() {
        let mut b = BODY;
        b[0] = 1;
        assert!(matches!(decode(&b), Err(Error::BadVersion { .. })));
        let mut b = BODY;
        b[3] = 0;
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue { at: Addr(0x43), .. })
        ));
    }
}
