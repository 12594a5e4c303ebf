//! Symbol table entry: one member of an old-style group (inside a `SNOD`), and the root group's
//! entry inside a version 0/1 superblock.
//!
//! | field                     | size | meaning                                               |
//! |---------------------------|------|-------------------------------------------------------|
//! | link name offset          | L    | offset of the member's name in the group's local heap |
//! | object header address     | O    | the member's object header                            |
//! | cache type                | 4    | 0 nothing cached, 1 symbol table, 2 soft link          |
//! | reserved                  | 4    | zero                                                  |
//! | scratch-pad space         | 16   | type 1: B-tree address (O) + heap address (O);        |
//! |                           |      | type 2: link value offset (u32); else unused          |
//!
//! The specification gives the link name offset O bytes; libhdf5 encodes it as a length (L).
//! The two agree whenever O = L, which is every file h5py writes; this module follows libhdf5.
//! The scratch pad is kept byte for byte, so an entry re-encodes identically even when its
//! unused scratch bytes are not zero.

#![deny(missing_docs)]

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::Result;
use crate::sizes::Sizes;

/// Bytes of scratch-pad space in every entry, whatever the superblock's widths.
pub const SCRATCH_PAD_LEN: usize = 16;

/// What the scratch pad caches, as selected by the entry's "cache type".
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Cache {
    /// Cache type 0: nothing is cached.
    Nothing,
    /// Cache type 1: the member is a group; its symbol table's B-tree and local heap addresses.
    SymbolTable {
        /// Address of the group's v1 B-tree.
        btree: Option<Addr>,
        /// Address of the group's local heap.
        heap: Option<Addr>,
    },
    /// Cache type 2: the member is a soft link; the offset of its value in the local heap.
    SoftLink {
        /// Offset of the link value in the group's local heap.
        link_value_offset: u32,
    },
}

impl Cache {
    /// The on-disk "cache type" number.
    pub fn cache_type(&self) -> u32 {
        match self {
            Cache::Nothing => 0,
            Cache::SymbolTable { .. } => 1,
            Cache::SoftLink { .. } => 2,
        }
    }
}

/// A symbol table entry (spec: "Symbol Table Entry").
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SymbolTableEntry {
    /// "Link Name Offset": byte offset of the member's name in the group's local heap.
    pub link_name_offset: u64,
    /// "Object Header Address" of the member.
    pub object_header: Option<Addr>,
    cache: Cache,
    scratch: [u8; SCRATCH_PAD_LEN],
}

impl SymbolTableEntry {
    /// An entry with the given cache; the scratch pad is encoded from `cache` with the unused
    /// bytes zero, as libhdf5 writes it.
    pub fn new(
        link_name_offset: u64,
        object_header: Option<Addr>,
        cache: Cache,
        sizes: Sizes,
    ) -> Result<Self> {
        let mut scratch = [0u8; SCRATCH_PAD_LEN];
        let mut out = Vec::with_capacity(SCRATCH_PAD_LEN);
        let mut e = Encoder::new(&mut out, sizes, "symbol table entry");
        match cache {
            Cache::Nothing => {}
            Cache::SymbolTable { btree, heap } => {
                e.offset(btree, "scratch-pad B-tree address")?;
                e.offset(heap, "scratch-pad heap address")?;
            }
            Cache::SoftLink { link_value_offset } => e.u32(link_value_offset),
        }
        // At most two 8-byte addresses were written, so `out` fits the 16-byte pad.
        for (dst, src) in scratch.iter_mut().zip(out.iter()) {
            *dst = *src;
        }
        Ok(SymbolTableEntry {
            link_name_offset,
            object_header,
            cache,
            scratch,
        })
    }

    /// The cache type and the values its scratch pad holds.
    pub fn cache(&self) -> Cache {
        self.cache
    }

    /// The 16 bytes of scratch-pad space exactly as stored.
    pub fn scratch_pad(&self) -> &[u8; SCRATCH_PAD_LEN] {
        &self.scratch
    }

    /// The encoded length: L + O + 24 (40 bytes with O = L = 8).
    pub fn encoded_len(sizes: Sizes) -> usize {
        usize::from(sizes.lengths())
            .saturating_add(usize::from(sizes.offsets()))
            .saturating_add(8 + SCRATCH_PAD_LEN)
    }

    /// Decode an entry from `bytes`, whose first byte is at file address `at`.
    pub fn decode(bytes: &[u8], at: Addr, sizes: Sizes) -> Result<Self> {
        let mut d = Decoder::new(bytes, at, sizes, "symbol table entry");
        Self::decode_with(&mut d)
    }

    /// Decode an entry at the cursor's position (inside a `SNOD` or a superblock).
    pub fn decode_with(d: &mut Decoder<'_>) -> Result<Self> {
        let link_name_offset = d.length()?;
        let object_header = d.offset()?;
        let type_at = d.addr();
        let cache_type = d.u32()?;
        d.skip(4)?; // reserved; libhdf5 ignores it
        let scratch_at = d.addr();
        let scratch: [u8; SCRATCH_PAD_LEN] = d.array()?;
        let mut s = Decoder::new(&scratch, scratch_at, d.sizes(), d.structure());
        let cache = match cache_type {
            0 => Cache::Nothing,
            1 => Cache::SymbolTable {
                btree: s.offset()?,
                heap: s.offset()?,
            },
            2 => Cache::SoftLink {
                link_value_offset: s.u32()?,
            },
            other => return Err(d.bad_value(type_at, "cache type", u64::from(other))),
        };
        Ok(SymbolTableEntry {
            link_name_offset,
            object_header,
            cache,
            scratch,
        })
    }

    /// Append the entry to `out`.
    pub fn encode(&self, sizes: Sizes, out: &mut Vec<u8>) -> Result<()> {
        let mut e = Encoder::new(out, sizes, "symbol table entry");
        self.encode_with(&mut e)
    }

    /// Append the entry through an existing encoder.
    pub fn encode_with(&self, e: &mut Encoder<'_>) -> Result<()> {
        e.length(self.link_name_offset, "link name offset")?;
        e.offset(self.object_header, "object header address")?;
        e.u32(self.cache.cache_type());
        e.u32(0);
        e.bytes(&self.scratch);
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
    use crate::error::Error;

    /// The root group's entry from the 1400-byte earliest-format file (docs/format/file-format.md §9.5).
    #[rustfmt::skip]
    pub(crate) const ROOT_ENTRY: [u8; 40] = [
        0, 0, 0, 0, 0, 0, 0, 0,             // link name offset 0
        0x60, 0, 0, 0, 0, 0, 0, 0,          // object header address 0x60
        1, 0, 0, 0,                         // cache type 1: symbol table
        0, 0, 0, 0,                         // reserved
        0x88, 0, 0, 0, 0, 0, 0, 0,          // scratch: B-tree address 0x88
        0xa8, 0x02, 0, 0, 0, 0, 0, 0,       // scratch: local heap address 0x2a8
    ];

    /// The dataset's entry in the SNOD of the same file.
    #[rustfmt::skip]
    const DATASET_ENTRY: [u8; 40] = [
        8, 0, 0, 0, 0, 0, 0, 0,             // link name offset 8 ("d")
        0x20, 0x03, 0, 0, 0, 0, 0, 0,       // object header address 0x320
        0, 0, 0, 0,                         // cache type 0: nothing
        0, 0, 0, 0,                         // reserved
        0, 0, 0, 0, 0, 0, 0, 0,             // scratch pad (unused)
        0, 0, 0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn decode_root_entry() {
        let e = SymbolTableEntry::decode(&ROOT_ENTRY, Addr(56), Sizes::DEFAULT).unwrap();
        assert_eq!(e.link_name_offset, 0);
        assert_eq!(e.object_header, Some(Addr(0x60)));
        assert_eq!(
            e.cache(),
            Cache::SymbolTable {
                btree: Some(Addr(0x88)),
                heap: Some(Addr(0x2a8))
            }
        );
        let built = SymbolTableEntry::new(0, Some(Addr(0x60)), e.cache(), Sizes::DEFAULT).unwrap();
        assert_eq!(built, e);
    }

    #[test]
    fn roundtrip_entries() {
        for bytes in [ROOT_ENTRY, DATASET_ENTRY] {
            let e = SymbolTableEntry::decode(&bytes, Addr(0), Sizes::DEFAULT).unwrap();
            let mut out = Vec::new();
            e.encode(Sizes::DEFAULT, &mut out).unwrap();
            assert_eq!(out, bytes);
            assert_eq!(out.len(), SymbolTableEntry::encoded_len(Sizes::DEFAULT));
        }
    }

    #[test]
    fn roundtrip_keeps_unused_scratch_bytes() {
        let mut bytes = DATASET_ENTRY;
        bytes[30] = 0x5a;
        let e = SymbolTableEntry::decode(&bytes, Addr(0), Sizes::DEFAULT).unwrap();
        let mut out = Vec::new();
        e.encode(Sizes::DEFAULT, &mut out).unwrap();
        assert_eq!(out, bytes);
    }

    #[test]
    fn decode_soft_link_and_small_widths() {
        let sizes = Sizes::new(4, 4, Addr(0)).unwrap();
        let e = SymbolTableEntry::new(
            16,
            Some(Addr(0x40)),
            Cache::SoftLink {
                link_value_offset: 24,
            },
            sizes,
        )
        .unwrap();
        let mut out = Vec::new();
        e.encode(sizes, &mut out).unwrap();
        assert_eq!(out.len(), 32);
        assert_eq!(SymbolTableEntry::decode(&out, Addr(0), sizes).unwrap(), e);
    }

    #[test]
    fn rejects_bad_cache_type() {
        let mut bytes = DATASET_ENTRY;
        bytes[16] = 3;
        assert!(matches!(
            SymbolTableEntry::decode(&bytes, Addr(0x100), Sizes::DEFAULT),
            Err(Error::BadValue {
                at: Addr(0x110),
                field: "cache type",
                value: 3,
                ..
            })
        ));
    }

    proptest::proptest! {
        #[test]
        fn random_bytes_never_panic(
            mut bytes in proptest::collection::vec(proptest::arbitrary::any::<u8>(), 0..48),
            cache_type in 0u32..4,
        ) {
            let _ = SymbolTableEntry::decode(&bytes, Addr(0), Sizes::new(2, 4, Addr(0)).unwrap());
            // A plausible cache type and zero reserved bytes reach the scratch-pad decoding;
            // everything but the reserved bytes must then re-encode as stored.
            if bytes.len() >= 24 {
                bytes[16..20].copy_from_slice(&cache_type.to_le_bytes());
                bytes[20..24].fill(0);
            }
            if let Ok(e) = SymbolTableEntry::decode(&bytes, Addr(0), Sizes::DEFAULT) {
                let mut out = Vec::new();
                e.encode(Sizes::DEFAULT, &mut out).unwrap();
                proptest::prop_assert_eq!(&out[..], &bytes[..out.len()]);
            }
        }
    }

    #[test]
    fn rejects_truncation() {
        for n in 0..ROOT_ENTRY.len() {
            assert!(
                SymbolTableEntry::decode(&ROOT_ENTRY[..n], Addr(0), Sizes::DEFAULT).is_err(),
                "prefix {n}"
            );
        }
    }
}
