//! Symbol table node (`SNOD`, version 1): a leaf of an old-style group's B-tree, holding the
//! group's members sorted by name.
//!
//! | field                  | size                     | notes                                 |
//! |------------------------|--------------------------|---------------------------------------|
//! | signature              | 4                        | `SNOD`                                |
//! | version                | 1                        | 1                                     |
//! | reserved               | 1                        | zero                                  |
//! | number of symbols      | 2                        | entries in use, at most 2K            |
//! | entries                | 2K × (L + O + 24)        | K = group leaf node K; unused zero    |
//!
//! libhdf5 always allocates and writes the node at full capacity (328 bytes with K = 4 and
//! O = L = 8), zero-filling the unused entries; encoding does the same. No checksum.

#![deny(missing_docs)]

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};
use crate::sizes::Sizes;
use crate::symbol_table_entry::SymbolTableEntry;

/// The symbol table node signature.
pub const SIGNATURE: [u8; 4] = *b"SNOD";
/// The only symbol table node version.
pub const VERSION: u8 = 1;

const STRUCTURE: &str = "SNOD";

/// A symbol table node: the entries in use and the node's capacity.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SymbolTableNode {
    /// The entries in use ("Number of Symbols" of them), in stored order.
    pub entries: Vec<SymbolTableEntry>,
    group_leaf_k: u16,
}

impl SymbolTableNode {
    /// An empty node for a file whose superblock's "Group Leaf Node K" is `group_leaf_k`.
    pub fn new(group_leaf_k: u16) -> Self {
        SymbolTableNode {
            entries: Vec::new(),
            group_leaf_k,
        }
    }

    /// The "Group Leaf Node K" the node was sized with.
    pub fn group_leaf_k(&self) -> u16 {
        self.group_leaf_k
    }

    /// The most entries the node holds: 2K.
    pub fn capacity(&self) -> usize {
        usize::from(self.group_leaf_k).saturating_mul(2)
    }

    /// The node's size on disk: 8 + 2K entries (328 bytes with K = 4 and O = L = 8).
    pub fn encoded_len(group_leaf_k: u16, sizes: Sizes) -> usize {
        let entries = usize::from(group_leaf_k).saturating_mul(2);
        8usize.saturating_add(entries.saturating_mul(SymbolTableEntry::encoded_len(sizes)))
    }

    /// Decode a node at `at`; `bytes` must hold the whole allocated node.
    pub fn decode(bytes: &[u8], at: Addr, sizes: Sizes, group_leaf_k: u16) -> Result<Self> {
        let mut outer = Decoder::new(bytes, at, sizes, STRUCTURE);
        if group_leaf_k == 0 {
            return Err(outer.bad_value(at, "group leaf node K", 0));
        }
        let mut d = outer.sub(Self::encoded_len(group_leaf_k, sizes))?;
        d.signature(&SIGNATURE)?;
        let version_at = d.addr();
        let version = d.u8()?;
        if version != VERSION {
            return Err(d.bad_version(version_at, version));
        }
        d.skip(1)?; // reserved
        let count_at = d.addr();
        let count = d.u16()?;
        let capacity = usize::from(group_leaf_k).saturating_mul(2);
        if usize::from(count) > capacity {
            return Err(d.bad_value(count_at, "number of symbols", u64::from(count)));
        }
        let n = d.check_count(u64::from(count), SymbolTableEntry::encoded_len(sizes))?;
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            entries.push(SymbolTableEntry::decode_with(&mut d)?);
        }
        Ok(SymbolTableNode {
            entries,
            group_leaf_k,
        })
    }

    /// Append the node at full capacity, unused entries zero.
    pub fn encode(&self, sizes: Sizes, out: &mut Vec<u8>) -> Result<()> {
        let count = u16::try_from(self.entries.len())
            .ok()
            .filter(|&c| usize::from(c) <= self.capacity())
            .ok_or_else(|| Error::Unencodable {
                structure: STRUCTURE,
                reason: format!(
                    "{} entries exceed the node's capacity {}",
                    self.entries.len(),
                    self.capacity()
                ),
            })?;
        let mut e = Encoder::new(out, sizes, STRUCTURE);
        e.bytes(&SIGNATURE);
        e.u8(VERSION);
        e.u8(0);
        e.u16(count);
        for entry in &self.entries {
            entry.encode_with(&mut e)?;
        }
        let total = Self::encoded_len(self.group_leaf_k, sizes);
        e.zeros(total.saturating_sub(e.position()));
        Ok(())
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
    use crate::symbol_table_entry::Cache;
    use proptest::prelude::*;

    const S: Sizes = Sizes::DEFAULT;

    /// The first 48 bytes of the root group's SNOD at 0x430 of the earliest-format file
    /// (§9.5); the remaining 280 bytes (7 unused entries) are zero.
    #[rustfmt::skip]
    const HEAD: [u8; 48] = [
        b'S', b'N', b'O', b'D',             // signature
        1,                                  // version 1
        0,                                  // reserved
        1, 0,                               // number of symbols 1
        8, 0, 0, 0, 0, 0, 0, 0,             // entry 0: link name offset 8 ("d")
        0x20, 0x03, 0, 0, 0, 0, 0, 0,       // entry 0: object header 0x320
        0, 0, 0, 0,                         // entry 0: cache type 0
        0, 0, 0, 0,                         // entry 0: reserved
        0, 0, 0, 0, 0, 0, 0, 0,             // entry 0: scratch pad
        0, 0, 0, 0, 0, 0, 0, 0,
    ];

    fn image() -> Vec<u8> {
        let mut v = HEAD.to_vec();
        v.resize(328, 0);
        v
    }

    #[test]
    fn decode_earliest_snod() {
        let bytes = image();
        assert_eq!(SymbolTableNode::encoded_len(4, S), 328);
        let node = SymbolTableNode::decode(&bytes, Addr(0x430), S, 4).unwrap();
        assert_eq!(node.capacity(), 8);
        assert_eq!(node.entries.len(), 1);
        let e = &node.entries[0];
        assert_eq!(e.link_name_offset, 8);
        assert_eq!(e.object_header, Some(Addr(0x320)));
        assert_eq!(e.cache(), Cache::Nothing);
        let mut out = Vec::new();
        node.encode(S, &mut out).unwrap();
        assert_eq!(out, bytes);
    }

    #[test]
    fn roundtrip_full_node() {
        let mut node = SymbolTableNode::new(2);
        for i in 0..4u64 {
            node.entries.push(
                SymbolTableEntry::new(8 * i, Some(Addr(0x1000 + i)), Cache::Nothing, S).unwrap(),
            );
        }
        let mut out = Vec::new();
        node.encode(S, &mut out).unwrap();
        assert_eq!(out.len(), 8 + 4 * 40);
        assert_eq!(SymbolTableNode::decode(&out, Addr(0), S, 2).unwrap(), node);
        node.entries.push(node.entries[0].clone());
        assert!(matches!(
            node.encode(S, &mut Vec::new()),
            Err(Error::Unencodable { .. })
        ));
    }

    #[test]
    fn rejects_bad_nodes() {
        let mut b = image();
        b[6] = 9;
        assert!(matches!(
            SymbolTableNode::decode(&b, Addr(0x430), S, 4),
            Err(Error::BadValue {
                at: Addr(0x436),
                field: "number of symbols",
                ..
            })
        ));
        let mut b = image();
        b[4] = 2;
        assert!(matches!(
            SymbolTableNode::decode(&b, Addr(0), S, 4),
            Err(Error::BadVersion { .. })
        ));
        let mut b = image();
        b[0] = b'T';
        assert!(matches!(
            SymbolTableNode::decode(&b, Addr(0), S, 4),
            Err(Error::BadSignature { .. })
        ));
        assert!(SymbolTableNode::decode(&image(), Addr(0), S, 0).is_err());
    }

    #[test]
    fn rejects_truncation() {
        let bytes = image();
        for n in 0..bytes.len() {
            assert!(
                SymbolTableNode::decode(&bytes[..n], Addr(0), S, 4).is_err(),
                "prefix {n}"
            );
        }
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(
            mut bytes in proptest::collection::vec(any::<u8>(), 0..400),
            k in 0u16..6,
        ) {
            let _ = SymbolTableNode::decode(&bytes, Addr(0), S, k);
            if bytes.len() >= 4 {
                bytes[..4].copy_from_slice(&SIGNATURE);
            }
            let _ = SymbolTableNode::decode(&bytes, Addr(0), S, k);
        }
    }
}
