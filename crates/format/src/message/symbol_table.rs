//! Symbol Table message (type 0x0011): an old-style group's B-tree and local heap.
//!
//! | size | field                                   |
//! |------|-----------------------------------------|
//! | O    | v1 B-tree address (node type 0, group)  |
//! | O    | local heap address                      |

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::Result;
use crate::sizes::Sizes;

/// A decoded Symbol Table message.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct SymbolTable {
    /// Address of the group's v1 B-tree.
    pub btree_address: Addr,
    /// Address of the group's local heap.
    pub local_heap_address: Addr,
}

impl SymbolTable {
    /// Decode a Symbol Table message body.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        let btree_address = d.defined_offset("v1 B-tree address")?;
        let local_heap_address = d.defined_offset("local heap address")?;
        Ok(SymbolTable {
            btree_address,
            local_heap_address,
        })
    }

    /// Encode a Symbol Table message body.
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        e.offset(Some(self.btree_address), "v1 B-tree address")?;
        e.offset(Some(self.local_heap_address), "local heap address")
    }

    /// The body's encoded length.
    pub fn encoded_len(sizes: Sizes) -> usize {
        usize::from(sizes.offsets()).saturating_mul(2)
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
    use crate::error::Error;

    const S: &str = "Symbol Table message";

    #[rustfmt::skip]
    const BODY: [u8; 16] = [
        0x88, 0, 0, 0, 0, 0, 0, 0, // v1 B-tree at 0x88
        0xa8, 0x02, 0, 0, 0, 0, 0, 0, // local heap at 0x2a8
    ];

    fn decode(body: &[u8]) -> Result<SymbolTable> {
        SymbolTable::decode(&mut Decoder::new(body, Addr(0x70), Sizes::DEFAULT, S))
    }

    #[test]
    fn roundtrip_symbol_table() {
        let s = decode(&BODY).unwrap();
        assert_eq!(
            s,
            SymbolTable {
                btree_address: Addr(0x88),
                local_heap_address: Addr(0x2a8)
            }
        );
        let mut out = Vec::new();
        s.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, S))
            .unwrap();
        assert_eq!(out, BODY);
        assert_eq!(SymbolTable::encoded_len(Sizes::DEFAULT), 16);
    }

    #[test]
    fn rejects_truncation() {
        for n in 0..BODY.len() {
            assert!(decode(&BODY[..n]).is_err(), "prefix {n}");
        }
    }

    #[test]
    fn rejects_undefined_addresses() {
        let mut b = BODY;
        b[8..].fill(0xff);
        assert!(matches!(
            decode(&b),
            Err(Error::Invalid { at: Addr(0x78), .. })
        ));
    }
}
