//! The superblock: the file's entry point, found at offset 0, 512, 1024, 2048, ...
//!
//! Versions 0 and 1 (96 and 100 bytes with O = L = 8; no checksum):
//!
//! | field                                   | size | notes                                  |
//! |-----------------------------------------|------|----------------------------------------|
//! | signature                               | 8    | `\x89HDF\r\n\x1a\n`                    |
//! | version of superblock                   | 1    | 0 or 1                                 |
//! | version of file free-space storage      | 1    | 0                                      |
//! | version of root group symbol table entry| 1    | 0                                      |
//! | reserved                                | 1    |                                        |
//! | version of shared header message format | 1    | 0                                      |
//! | size of offsets (O), size of lengths (L)| 1+1  |                                        |
//! | reserved                                | 1    |                                        |
//! | group leaf node K, group internal node K| 2+2  |                                        |
//! | file consistency flags                  | 4    |                                        |
//! | indexed storage internal node K         | 2    | version 1 only, then 2 reserved bytes  |
//! | base address                            | O    | absolute                               |
//! | free-space info address                 | O    | libhdf5: superblock extension address  |
//! | end of file address                     | O    |                                        |
//! | driver information block address        | O    |                                        |
//! | root group symbol table entry           | L+O+24 |                                      |
//!
//! Versions 2 and 3 (48 bytes with O = L = 8):
//!
//! | field                                   | size |                                        |
//! |-----------------------------------------|------|----------------------------------------|
//! | signature                               | 8    |                                        |
//! | version of superblock                   | 1    | 2 or 3                                 |
//! | size of offsets, size of lengths        | 1+1  |                                        |
//! | file consistency flags                  | 1    | checked by libhdf5 in version 3 only   |
//! | base address                            | O    |                                        |
//! | superblock extension address            | O    |                                        |
//! | end of file address                     | O    |                                        |
//! | root group object header address        | O    |                                        |
//! | superblock checksum                     | 4    | lookup3 over every byte before it      |
//!
//! Reserved bytes are ignored when decoding (as libhdf5 does) and written as zero.

#![deny(missing_docs)]

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};
use crate::sizes::Sizes;
use crate::symbol_table_entry::SymbolTableEntry;

/// The format signature that starts every superblock.
pub const SIGNATURE: [u8; 8] = *b"\x89HDF\r\n\x1a\n";

/// Bytes at the start of a superblock that always suffice for [`Superblock::len_from_prefix`]
/// (the smallest superblock, version 2 with O = 2, is 24 bytes long).
pub const PREFIX_LEN: usize = 16;

/// The largest superblock [`Superblock::len_from_prefix`] can report (version 1, O = L = 8).
pub const MAX_LEN: usize = 100;

/// libhdf5's default "group leaf node K" (stored only in version 0/1 superblocks).
pub const DEFAULT_GROUP_LEAF_K: u16 = 4;
/// libhdf5's default "group internal node K".
pub const DEFAULT_GROUP_INTERNAL_K: u16 = 16;
/// libhdf5's default "indexed storage internal node K" (chunk B-trees).
pub const DEFAULT_INDEXED_STORAGE_K: u16 = 32;

const STRUCTURE: &str = "superblock";

/// File offsets at which a superblock signature may start, in search order: 0, 512, 1024,
/// 2048, ... (each a power of two from 512 on), stopping where an 8-byte signature would no
/// longer fit in a file of `file_len` bytes.
pub fn signature_offsets(file_len: u64) -> impl Iterator<Item = u64> {
    core::iter::successors(Some(0u64), |&a| {
        if a == 0 { Some(512) } else { a.checked_mul(2) }
    })
    .take_while(move |&a| a.checked_add(8).is_some_and(|end| end <= file_len))
}

bitflags::bitflags! {
    /// "File Consistency Flags". Versions 0 and 1 store them in 4 bytes, versions 2 and 3 in
    /// one. Bits libhdf5 does not define are kept (so a v0/v1/v2 superblock re-encodes
    /// identically) but rejected in version 3, as libhdf5 rejects them.
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
    pub struct ConsistencyFlags: u32 {
        /// Bit 0: the file is open for writing (`H5F_SUPER_WRITE_ACCESS`).
        const WRITE_ACCESS = 0x01;
        /// Bit 1: `H5F_SUPER_FILE_OK`, defined by libhdf5 but never set.
        const FILE_OK = 0x02;
        /// Bit 2: the file is open for SWMR writing (`H5F_SUPER_SWMR_WRITE_ACCESS`).
        const SWMR_WRITE_ACCESS = 0x04;
    }
}

/// The fields only versions 0 and 1 have.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LegacyFields {
    /// "Group Leaf Node K": a symbol table node holds up to 2K entries.
    pub group_leaf_k: u16,
    /// "Group Internal Node K": a group B-tree node holds up to 2K children.
    pub group_internal_k: u16,
    /// "Indexed Storage Internal Node K": present (`Some`) exactly in version 1.
    pub indexed_storage_k: Option<u16>,
    /// "Driver Information Block Address".
    pub driver_info_address: Option<Addr>,
    /// "Root Group Symbol Table Entry".
    pub root_entry: SymbolTableEntry,
}

/// The version-specific part of a superblock.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum VersionFields {
    /// Versions 0 and 1: B-tree K values, driver information and the root group's entry.
    Legacy(LegacyFields),
    /// Versions 2 and 3: the "Root Group Object Header Address".
    Modern {
        /// Address of the root group's object header.
        root_object_header: Addr,
    },
}

/// A decoded superblock of any version 0 to 3.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Superblock {
    /// "Version Number of the Superblock", 0 to 3.
    pub version: u8,
    /// "Size of Offsets" and "Size of Lengths".
    pub sizes: Sizes,
    /// "File Consistency Flags".
    pub consistency_flags: ConsistencyFlags,
    /// "Base Address": absolute file offset every other address is relative to.
    pub base_address: u64,
    /// "Superblock Extension Address" (v2/v3); "Address of File Free-space Info" (v0/v1),
    /// which libhdf5 reads as the extension address.
    pub extension_address: Option<Addr>,
    /// "End of File Address": base address plus the end of allocated space.
    pub eof_address: u64,
    /// The fields that differ between versions 0/1 and 2/3.
    pub fields: VersionFields,
}

impl Superblock {
    /// A version 0 superblock as libhdf5 writes one for h5py's default (earliest) format.
    pub fn new_v0(sizes: Sizes, eof_address: u64, root_entry: SymbolTableEntry) -> Self {
        Superblock {
            version: 0,
            sizes,
            consistency_flags: ConsistencyFlags::empty(),
            base_address: 0,
            extension_address: None,
            eof_address,
            fields: VersionFields::Legacy(LegacyFields {
                group_leaf_k: DEFAULT_GROUP_LEAF_K,
                group_internal_k: DEFAULT_GROUP_INTERNAL_K,
                indexed_storage_k: None,
                driver_info_address: None,
                root_entry,
            }),
        }
    }

    /// A version 3 superblock (what libhdf5 writes for `libver='latest'` and SWMR).
    pub fn new_v3(sizes: Sizes, eof_address: u64, root_object_header: Addr) -> Self {
        Superblock {
            version: 3,
            sizes,
            consistency_flags: ConsistencyFlags::empty(),
            base_address: 0,
            extension_address: None,
            eof_address,
            fields: VersionFields::Modern { root_object_header },
        }
    }

    /// The root group's object header address (v0/v1: from the root symbol table entry).
    pub fn root_object_header(&self) -> Option<Addr> {
        match &self.fields {
            VersionFields::Legacy(l) => l.root_entry.object_header,
            VersionFields::Modern { root_object_header } => Some(*root_object_header),
        }
    }

    /// The version 0/1 fields, if this is such a superblock.
    pub fn legacy(&self) -> Option<&LegacyFields> {
        match &self.fields {
            VersionFields::Legacy(l) => Some(l),
            VersionFields::Modern { .. } => None,
        }
    }

    /// "Group Leaf Node K" (v2/v3 store it only in the superblock extension; this returns the
    /// default for them).
    pub fn group_leaf_k(&self) -> u16 {
        self.legacy()
            .map_or(DEFAULT_GROUP_LEAF_K, |l| l.group_leaf_k)
    }

    /// "Group Internal Node K" (default for v2/v3, see [`Superblock::group_leaf_k`]).
    pub fn group_internal_k(&self) -> u16 {
        self.legacy()
            .map_or(DEFAULT_GROUP_INTERNAL_K, |l| l.group_internal_k)
    }

    /// "Indexed Storage Internal Node K": stored only in version 1; version 0 implies the
    /// default 32; versions 2/3 keep a non-default value in the superblock extension.
    pub fn indexed_storage_k(&self) -> u16 {
        self.legacy()
            .and_then(|l| l.indexed_storage_k)
            .unwrap_or(DEFAULT_INDEXED_STORAGE_K)
    }

    /// The full length of the superblock whose first bytes are `prefix` (at least
    /// [`PREFIX_LEN`] bytes is always enough), so a caller can read exactly that much.
    pub fn len_from_prefix(prefix: &[u8], at: Addr) -> Result<usize> {
        let mut d = Decoder::new(prefix, at, Sizes::DEFAULT, STRUCTURE);
        d.signature(&SIGNATURE)?;
        let version_at = d.addr();
        let version = d.u8()?;
        let (o, l) = match version {
            0 | 1 => {
                d.skip(4)?;
                let o_at = d.addr();
                let (o, l) = (d.u8()?, d.u8()?);
                (Sizes::new(o, l, o_at)?.offsets(), l)
            }
            2 | 3 => {
                let o_at = d.addr();
                let (o, l) = (d.u8()?, d.u8()?);
                (Sizes::new(o, l, o_at)?.offsets(), l)
            }
            v => return Err(d.bad_version(version_at, v)),
        };
        let sizes = Sizes::new(o, l, at)?;
        Ok(Self::len_for(version, sizes))
    }

    /// This superblock as found at absolute file offset `at`, which is where libhdf5 puts the
    /// base address whatever the stored one says: a file whose bytes were moved (a user block
    /// prepended by `cat`, a superblock written at an offset) keeps its addresses relative to
    /// the superblock. The end of file address moves by the same distance; libhdf5 writes the
    /// moved values back at the next read-write open, and so does h5chunk (the superblock is
    /// rewritten with these values). An end of file below the stored base is an error.
    pub fn moved_to(mut self, at: u64) -> Result<Superblock> {
        if self.base_address == at {
            return Ok(self);
        }
        let relative_eof = self
            .eof_address
            .checked_sub(self.base_address)
            .ok_or_else(|| Error::Invalid {
                structure: STRUCTURE,
                at: Addr(at),
                reason: format!(
                    "end of file address {:#x} below the base address {:#x}",
                    self.eof_address, self.base_address
                ),
            })?;
        self.eof_address = relative_eof.checked_add(at).ok_or_else(|| Error::Invalid {
            structure: STRUCTURE,
            at: Addr(at),
            reason: format!("end of file address {relative_eof:#x} past 2^64 at offset {at:#x}"),
        })?;
        self.base_address = at;
        Ok(self)
    }

    /// The encoded length of a superblock of `version` with `sizes` (version 0..=3).
    fn len_for(version: u8, sizes: Sizes) -> usize {
        // Every width is at most 8, so none of these sums can overflow; saturating arithmetic
        // keeps the lint happy without a fallible path.
        let o = usize::from(sizes.offsets());
        let four_addresses = o.saturating_mul(4);
        match version {
            0 | 1 => {
                let fixed: usize = if version == 1 { 28 } else { 24 };
                fixed
                    .saturating_add(four_addresses)
                    .saturating_add(SymbolTableEntry::encoded_len(sizes))
            }
            _ => 12usize.saturating_add(four_addresses).saturating_add(4),
        }
    }

    /// This superblock's encoded length.
    pub fn encoded_len(&self) -> usize {
        Self::len_for(self.version, self.sizes)
    }

    /// Decode a superblock; `bytes` start at the signature, whose file address is `at`.
    /// Bytes after the superblock are ignored.
    pub fn decode(bytes: &[u8], at: Addr) -> Result<Self> {
        let len = Self::len_from_prefix(bytes, at)?;
        let mut d = Decoder::new(bytes, at, Sizes::DEFAULT, STRUCTURE);
        let body = d.sub(len)?;
        let buf = body.buffer();
        // The widths were validated by len_from_prefix.
        let mut d = Decoder::new(buf, at, Sizes::DEFAULT, STRUCTURE);
        d.skip(SIGNATURE.len())?;
        let version = d.u8()?;
        match version {
            0 | 1 => Self::decode_legacy(buf, at, version),
            _ => Self::decode_modern(buf, at, version),
        }
    }

    fn decode_legacy(buf: &[u8], at: Addr, version: u8) -> Result<Self> {
        let mut d = Decoder::new(buf, at, Sizes::DEFAULT, STRUCTURE);
        d.skip(SIGNATURE.len().saturating_add(1))?;
        for field in [
            "version of file free-space storage",
            "version of root group symbol table entry",
        ] {
            let field_at = d.addr();
            let v = d.u8()?;
            if v != 0 {
                return Err(d.bad_value(field_at, field, u64::from(v)));
            }
        }
        d.skip(1)?; // reserved
        let shared_at = d.addr();
        let shared = d.u8()?;
        if shared != 0 {
            return Err(d.bad_value(
                shared_at,
                "version of shared header message format",
                u64::from(shared),
            ));
        }
        let sizes_at = d.addr();
        let (o, l) = (d.u8()?, d.u8()?);
        let sizes = Sizes::new(o, l, sizes_at)?;
        let mut d = Decoder::new(buf, at, sizes, STRUCTURE);
        d.skip(16)?;
        let group_leaf_k = nonzero_k(&mut d, "group leaf node K")?;
        let group_internal_k = nonzero_k(&mut d, "group internal node K")?;
        let consistency_flags = ConsistencyFlags::from_bits_retain(d.u32()?);
        let indexed_storage_k = if version == 1 {
            let k = nonzero_k(&mut d, "indexed storage internal node K")?;
            d.skip(2)?; // reserved
            Some(k)
        } else {
            None
        };
        let base_address = d.defined_offset("base address")?.get();
        let extension_address = d.offset()?;
        let eof_address = d.defined_offset("end of file address")?.get();
        let driver_info_address = d.offset()?;
        let root_entry = SymbolTableEntry::decode_with(&mut d)?;
        Ok(Superblock {
            version,
            sizes,
            consistency_flags,
            base_address,
            extension_address,
            eof_address,
            fields: VersionFields::Legacy(LegacyFields {
                group_leaf_k,
                group_internal_k,
                indexed_storage_k,
                driver_info_address,
                root_entry,
            }),
        })
    }

    fn decode_modern(buf: &[u8], at: Addr, version: u8) -> Result<Self> {
        let covered = buf.len().saturating_sub(4);
        Decoder::new(buf, at, Sizes::DEFAULT, STRUCTURE).verify_checksum(covered)?;
        let mut d = Decoder::new(buf, at, Sizes::DEFAULT, STRUCTURE);
        d.skip(SIGNATURE.len().saturating_add(1))?;
        let sizes_at = d.addr();
        let (o, l) = (d.u8()?, d.u8()?);
        let sizes = Sizes::new(o, l, sizes_at)?;
        let mut d = Decoder::new(buf, at, sizes, STRUCTURE);
        d.skip(11)?;
        let flags_at = d.addr();
        let raw_flags = d.u8()?;
        let consistency_flags = ConsistencyFlags::from_bits_retain(u32::from(raw_flags));
        if version >= 3 && !ConsistencyFlags::all().contains(consistency_flags) {
            return Err(d.bad_value(flags_at, "file consistency flags", u64::from(raw_flags)));
        }
        let base_address = d.defined_offset("base address")?.get();
        let extension_address = d.offset()?;
        let eof_address = d.defined_offset("end of file address")?.get();
        let root_object_header = d.defined_offset("root group object header address")?;
        Ok(Superblock {
            version,
            sizes,
            consistency_flags,
            base_address,
            extension_address,
            eof_address,
            fields: VersionFields::Modern { root_object_header },
        })
    }

    fn unencodable(reason: &str) -> Error {
        Error::Unencodable {
            structure: STRUCTURE,
            reason: reason.to_owned(),
        }
    }

    /// Append the superblock to `out` (v2/v3: with its checksum last).
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<()> {
        let mut e = Encoder::new(out, self.sizes, STRUCTURE);
        e.bytes(&SIGNATURE);
        e.u8(self.version);
        match (&self.fields, self.version) {
            (VersionFields::Legacy(l), 0 | 1) => {
                if l.indexed_storage_k.is_some() != (self.version == 1) {
                    return Err(Self::unencodable(
                        "indexed storage K must be present in version 1 and only there",
                    ));
                }
                e.bytes(&[0, 0, 0, 0]);
                e.u8(self.sizes.offsets());
                e.u8(self.sizes.lengths());
                e.u8(0);
                e.u16(l.group_leaf_k);
                e.u16(l.group_internal_k);
                e.u32(self.consistency_flags.bits());
                if let Some(k) = l.indexed_storage_k {
                    e.u16(k);
                    e.u16(0);
                }
                e.offset(Some(Addr(self.base_address)), "base address")?;
                e.offset(self.extension_address, "free-space info address")?;
                e.offset(Some(Addr(self.eof_address)), "end of file address")?;
                e.offset(l.driver_info_address, "driver information block address")?;
                l.root_entry.encode_with(&mut e)?;
            }
            (VersionFields::Modern { root_object_header }, 2 | 3) => {
                e.u8(self.sizes.offsets());
                e.u8(self.sizes.lengths());
                let flags = self.consistency_flags.bits();
                if self.version >= 3 && !ConsistencyFlags::all().contains(self.consistency_flags) {
                    return Err(Self::unencodable(
                        "version 3 file consistency flags with undefined bits",
                    ));
                }
                e.uint(u64::from(flags), 1, "file consistency flags")?;
                e.offset(Some(Addr(self.base_address)), "base address")?;
                e.offset(self.extension_address, "superblock extension address")?;
                e.offset(Some(Addr(self.eof_address)), "end of file address")?;
                e.offset(
                    Some(*root_object_header),
                    "root group object header address",
                )?;
                e.checksum();
            }
            _ => {
                return Err(Self::unencodable(
                    "version does not match the version-specific fields",
                ));
            }
        }
        Ok(())
    }
}

/// Read a u16 "K" value, which libhdf5 requires to be positive.
fn nonzero_k(d: &mut Decoder<'_>, field: &'static str) -> Result<u16> {
    let at = d.addr();
    let k = d.u16()?;
    if k == 0 {
        return Err(d.bad_value(at, field, 0));
    }
    Ok(k)
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

    /// Superblock v3 of the 447-byte latest-format h5py file (docs/format/file-format.md §9.1).
    #[rustfmt::skip]
    pub(crate) const LATEST: [u8; 48] = [
        0x89, b'H', b'D', b'F', b'\r', b'\n', 0x1a, b'\n', // signature
        3,                                                 // version 3
        8,                                                 // size of offsets
        8,                                                 // size of lengths
        0,                                                 // file consistency flags
        0, 0, 0, 0, 0, 0, 0, 0,                            // base address 0
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,    // extension address: undefined
        0xbf, 0x01, 0, 0, 0, 0, 0, 0,                      // end of file address 447
        0x30, 0, 0, 0, 0, 0, 0, 0,                         // root object header 0x30
        0x5f, 0x38, 0xfe, 0xf4,                            // checksum
    ];

    /// Superblock v0 of the 1400-byte earliest-format h5py file (docs/format/file-format.md §9.5).
    #[rustfmt::skip]
    pub(crate) const EARLIEST: [u8; 96] = [
        0x89, b'H', b'D', b'F', b'\r', b'\n', 0x1a, b'\n', // signature
        0,                                                 // version 0
        0,                                                 // free-space storage version
        0,                                                 // root symbol table entry version
        0,                                                 // reserved
        0,                                                 // shared header message version
        8,                                                 // size of offsets
        8,                                                 // size of lengths
        0,                                                 // reserved
        4, 0,                                              // group leaf node K = 4
        16, 0,                                             // group internal node K = 16
        0, 0, 0, 0,                                        // file consistency flags
        0, 0, 0, 0, 0, 0, 0, 0,                            // base address 0
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,    // free-space info: undefined
        0x78, 0x05, 0, 0, 0, 0, 0, 0,                      // end of file address 1400
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,    // driver info: undefined
        0, 0, 0, 0, 0, 0, 0, 0,                            // root entry: link name offset 0
        0x60, 0, 0, 0, 0, 0, 0, 0,                         // root entry: object header 0x60
        1, 0, 0, 0,                                        // root entry: cache type 1
        0, 0, 0, 0,                                        // root entry: reserved
        0x88, 0, 0, 0, 0, 0, 0, 0,                         // root entry scratch: B-tree 0x88
        0xa8, 0x02, 0, 0, 0, 0, 0, 0,                      // root entry scratch: heap 0x2a8
    ];

    fn reencode(sb: &Superblock) -> Vec<u8> {
        let mut out = Vec::new();
        sb.encode(&mut out).unwrap();
        assert_eq!(out.len(), sb.encoded_len());
        out
    }

    #[test]
    fn decode_latest() {
        assert_eq!(
            Superblock::len_from_prefix(&LATEST[..PREFIX_LEN], Addr(0)).unwrap(),
            48
        );
        let sb = Superblock::decode(&LATEST, Addr(0)).unwrap();
        assert_eq!(sb.version, 3);
        assert_eq!(sb.sizes, Sizes::DEFAULT);
        assert_eq!(sb.consistency_flags, ConsistencyFlags::empty());
        assert_eq!(sb.base_address, 0);
        assert_eq!(sb.extension_address, None);
        assert_eq!(sb.eof_address, 447);
        assert_eq!(sb.root_object_header(), Some(Addr(0x30)));
        assert_eq!(sb, Superblock::new_v3(Sizes::DEFAULT, 447, Addr(0x30)));
        assert_eq!(reencode(&sb), LATEST);
    }

    #[test]
    fn decode_earliest() {
        assert_eq!(
            Superblock::len_from_prefix(&EARLIEST[..PREFIX_LEN], Addr(0)).unwrap(),
            96
        );
        let sb = Superblock::decode(&EARLIEST, Addr(0)).unwrap();
        assert_eq!(sb.version, 0);
        assert_eq!(sb.eof_address, 0x578);
        assert_eq!(sb.group_leaf_k(), 4);
        assert_eq!(sb.group_internal_k(), 16);
        assert_eq!(sb.indexed_storage_k(), 32);
        assert_eq!(sb.root_object_header(), Some(Addr(0x60)));
        let l = sb.legacy().unwrap();
        assert_eq!(l.driver_info_address, None);
        assert_eq!(
            l.root_entry.cache(),
            Cache::SymbolTable {
                btree: Some(Addr(0x88)),
                heap: Some(Addr(0x2a8))
            }
        );
        let root = l.root_entry.clone();
        assert_eq!(sb, Superblock::new_v0(Sizes::DEFAULT, 0x578, root));
        assert_eq!(reencode(&sb), EARLIEST);
    }

    #[test]
    fn moved_superblock_takes_its_position_as_base() {
        // A file written at offset 0 (base 0, EOF 0x578), then moved 512 bytes down.
        let sb = Superblock::decode(&EARLIEST, Addr(0)).unwrap();
        let moved = sb.clone().moved_to(512).unwrap();
        assert_eq!((moved.base_address, moved.eof_address), (512, 0x578 + 512));
        assert_eq!(moved.root_object_header(), sb.root_object_header());
        // And back: a stored base of 512 found at 0.
        let back = moved.clone().moved_to(0).unwrap();
        assert_eq!(back, sb);
        // Unmoved: unchanged.
        assert_eq!(moved.clone().moved_to(512).unwrap(), moved);
        // An end of file below the base, or one past 2^64 once moved, is an error.
        let mut bad = sb.clone();
        bad.base_address = 0x1000;
        assert!(matches!(bad.moved_to(0), Err(Error::Invalid { .. })));
        let mut far = sb;
        far.eof_address = u64::MAX - 8;
        assert!(matches!(far.moved_to(512), Err(Error::Invalid { .. })));
    }

    #[test]
    fn roundtrip_v1_and_v2_and_flags() {
        let mut sb = Superblock::decode(&EARLIEST, Addr(0)).unwrap();
        sb.version = 1;
        if let VersionFields::Legacy(l) = &mut sb.fields {
            l.indexed_storage_k = Some(8);
        }
        sb.consistency_flags = ConsistencyFlags::WRITE_ACCESS;
        let bytes = reencode(&sb);
        assert_eq!(bytes.len(), 100);
        assert_eq!(Superblock::len_from_prefix(&bytes, Addr(0)).unwrap(), 100);
        assert_eq!(&bytes[20..28], &[1, 0, 0, 0, 8, 0, 0, 0]);
        let back = Superblock::decode(&bytes, Addr(0)).unwrap();
        assert_eq!(back, sb);
        assert_eq!(back.indexed_storage_k(), 8);

        let mut sb = Superblock::decode(&LATEST, Addr(0)).unwrap();
        sb.version = 2;
        let bytes = reencode(&sb);
        assert_eq!(Superblock::decode(&bytes, Addr(0)).unwrap(), sb);

        // SWMR writer flags (docs/format/file-format.md §8: checksum 0xed1c2339).
        let mut sb = Superblock::decode(&LATEST, Addr(0)).unwrap();
        sb.consistency_flags = ConsistencyFlags::WRITE_ACCESS | ConsistencyFlags::SWMR_WRITE_ACCESS;
        let bytes = reencode(&sb);
        assert_eq!(&bytes[44..], &[0x39, 0x23, 0x1c, 0xed]);
        assert_eq!(Superblock::decode(&bytes, Addr(0)).unwrap(), sb);
    }

    #[test]
    fn roundtrip_small_widths_and_userblock() {
        let sizes = Sizes::new(4, 2, Addr(0)).unwrap();
        let mut sb = Superblock::new_v3(sizes, 0x1234, Addr(0x1c));
        sb.base_address = 0x200;
        let bytes = reencode(&sb);
        assert_eq!(bytes.len(), 32);
        assert_eq!(Superblock::decode(&bytes, Addr(0x200)).unwrap(), sb);
        let entry = SymbolTableEntry::new(0, Some(Addr(0x40)), Cache::Nothing, sizes).unwrap();
        let sb = Superblock::new_v0(sizes, 0x999, entry);
        let bytes = reencode(&sb);
        assert_eq!(Superblock::decode(&bytes, Addr(0)).unwrap(), sb);
    }

    #[test]
    fn rejects_undefined_v3_flags_but_keeps_v0_flags() {
        let mut bytes = LATEST;
        bytes[11] = 0x08;
        let sum = crate::checksum::lookup3(&bytes[..44]);
        bytes[44..].copy_from_slice(&sum.to_le_bytes());
        assert!(matches!(
            Superblock::decode(&bytes, Addr(0)),
            Err(Error::BadValue {
                at: Addr(11),
                field: "file consistency flags",
                ..
            })
        ));
        let mut bytes = EARLIEST;
        bytes[21] = 0x80;
        let sb = Superblock::decode(&bytes, Addr(0)).unwrap();
        assert_eq!(reencode(&sb), bytes);
    }

    #[test]
    fn rejects_bad_versions_and_k() {
        let mut bytes = LATEST;
        bytes[8] = 4;
        assert!(matches!(
            Superblock::decode(&bytes, Addr(0)),
            Err(Error::BadVersion { version: 4, .. })
        ));
        let mut bytes = EARLIEST;
        bytes[9] = 1;
        assert!(matches!(
            Superblock::decode(&bytes, Addr(0)),
            Err(Error::BadValue { .. })
        ));
        let mut bytes = EARLIEST;
        bytes[16] = 0;
        assert!(matches!(
            Superblock::decode(&bytes, Addr(0)),
            Err(Error::BadValue {
                field: "group leaf node K",
                ..
            })
        ));
        let mut bytes = EARLIEST;
        bytes[13] = 3;
        assert!(matches!(
            Superblock::decode(&bytes, Addr(0)),
            Err(Error::BadValue { .. })
        ));
    }

    #[test]
    fn rejects_truncation() {
        for image in [&LATEST[..], &EARLIEST[..]] {
            for n in 0..image.len() {
                assert!(
                    Superblock::decode(&image[..n], Addr(0)).is_err(),
                    "prefix {n}"
                );
            }
        }
    }

    #[test]
    fn rejects_flipped_byte() {
        for i in 0..LATEST.len() {
            for bit in [0x01u8, 0x80] {
                let mut bytes = LATEST;
                bytes[i] ^= bit;
                assert!(
                    Superblock::decode(&bytes, Addr(0)).is_err(),
                    "byte {i} bit {bit:#x}"
                );
            }
        }
    }

    #[test]
    fn signature_search_offsets() {
        assert_eq!(signature_offsets(447).collect::<Vec<_>>(), vec![0]);
        assert_eq!(signature_offsets(959).collect::<Vec<_>>(), vec![0, 512]);
        assert_eq!(
            signature_offsets(2056).collect::<Vec<_>>(),
            vec![0, 512, 1024, 2048]
        );
        assert_eq!(signature_offsets(4).count(), 0);
        assert_eq!(signature_offsets(u64::MAX).count(), 56);
    }

    proptest::proptest! {
        #[test]
        fn random_bytes_never_panic(
            bytes in proptest::collection::vec(proptest::arbitrary::any::<u8>(), 0..120),
            which in 0usize..2,
            edits in proptest::collection::vec(
                (proptest::arbitrary::any::<usize>(), proptest::arbitrary::any::<u8>()), 1..6),
        ) {
            let _ = Superblock::len_from_prefix(&bytes, Addr(0));
            let _ = Superblock::decode(&bytes, Addr(0));
            // Valid images with a few bytes changed (the signature kept) reach the field
            // decoders rather than stopping at the signature.
            let mut image = if which == 0 { LATEST.to_vec() } else { EARLIEST.to_vec() };
            for (i, v) in edits {
                let i = 8 + i % (image.len() - 8);
                image[i] = v;
            }
            if let Ok(len) = Superblock::len_from_prefix(&image, Addr(0)) {
                proptest::prop_assert!(len <= MAX_LEN);
            }
            if let Ok(sb) = Superblock::decode(&image, Addr(0)) {
                let mut out = Vec::new();
                if sb.encode(&mut out).is_ok() {
                    proptest::prop_assert_eq!(Superblock::decode(&out, Addr(0)).unwrap(), sb);
                }
            }
        }
    }

    #[test]
    fn rejects_inconsistent_encoding() {
        let mut sb = Superblock::decode(&LATEST, Addr(0)).unwrap();
        sb.version = 0;
        assert!(matches!(
            sb.encode(&mut Vec::new()),
            Err(Error::Unencodable { .. })
        ));
        let mut sb = Superblock::decode(&LATEST, Addr(0)).unwrap();
        sb.consistency_flags = ConsistencyFlags::from_bits_retain(0x10);
        assert!(sb.encode(&mut Vec::new()).is_err());
    }
}
