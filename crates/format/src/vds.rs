//! The virtual dataset global heap block: a virtual dataset's mappings, kept as one object of
//! a global heap collection that its layout message (class 3) names.
//!
//! | field             | size | notes                                                    |
//! |-------------------|------|----------------------------------------------------------|
//! | version           | 1    | 0 (the only encoding libhdf5 1.10 to 2.0 write)          |
//! | number of entries | L    |                                                          |
//! | entries           | var  | each: source file name (NUL-terminated; `.` is the      |
//! |                   |      | virtual dataset's own file), source dataset name         |
//! |                   |      | (NUL-terminated), source selection, virtual selection   |
//! |                   |      | ([`Selection`] encodings)                                |
//! | checksum          | 4    | lookup3 of every byte before it                          |
//!
//! Source names may hold printf-style `%b` (the block number of an unlimited mapping) and
//! `%%` (a percent sign); this module keeps them as stored.

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};
use crate::selection::Selection;
use crate::sizes::Sizes;

const STRUCTURE: &str = "virtual dataset global heap block";

/// The encoding version libhdf5 writes.
pub const VERSION: u8 = 0;

/// One mapping: the source selection of a source dataset shows in the virtual selection.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Mapping {
    /// The source file's name as stored (`.`: the same file).
    pub source_file: String,
    /// The source dataset's path in that file, as stored.
    pub source_dataset: String,
    /// The selected elements of the source dataset.
    pub source_selection: Selection,
    /// Where they show in the virtual dataset.
    pub virtual_selection: Selection,
}

/// The decoded block: every mapping, in order.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Mappings {
    /// The mappings, in the order libhdf5 applies them.
    pub entries: Vec<Mapping>,
}

/// The smallest encoded entry: two one-byte names and two 16-byte selections.
const MIN_ENTRY: usize = 2 + 16 + 16;

impl Mappings {
    /// Decode the block (the whole heap object, at file address `at`).
    pub fn decode(bytes: &[u8], at: Addr, sizes: Sizes) -> Result<Mappings> {
        let covered = bytes.len().checked_sub(4).ok_or(Error::Truncated {
            structure: STRUCTURE,
            at,
            needed: 4,
            available: bytes.len() as u64,
        })?;
        let d = Decoder::new(bytes, at, sizes, STRUCTURE);
        d.verify_checksum(covered)?;
        let body = bytes.get(..covered).unwrap_or_default();
        let mut d = Decoder::new(body, at, sizes, STRUCTURE);
        let v_at = d.addr();
        let version = d.u8()?;
        if version != VERSION {
            return Err(d.bad_version(v_at, version));
        }
        let n = d.length()?;
        let n = d.check_count(n, MIN_ENTRY)?;
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            let source_file = c_string(&mut d, "source file name")?;
            let source_dataset = c_string(&mut d, "source dataset name")?;
            let source_selection = Selection::decode(&mut d)?;
            let virtual_selection = Selection::decode(&mut d)?;
            entries.push(Mapping {
                source_file,
                source_dataset,
                source_selection,
                virtual_selection,
            });
        }
        if !d.is_empty() {
            return Err(d.invalid(
                d.addr(),
                format!("{} bytes after the last entry", d.remaining()),
            ));
        }
        Ok(Mappings { entries })
    }

    /// Encode the block, checksum included.
    pub fn encode(&self, sizes: Sizes) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut e = Encoder::new(&mut out, sizes, STRUCTURE);
        e.u8(VERSION);
        e.length(self.entries.len() as u64, "number of entries")?;
        for m in &self.entries {
            for name in [&m.source_file, &m.source_dataset] {
                if name.as_bytes().contains(&0) {
                    return Err(Error::Unencodable {
                        structure: STRUCTURE,
                        reason: format!("a name with a NUL byte: {name:?}"),
                    });
                }
                e.bytes(name.as_bytes());
                e.u8(0);
            }
            m.source_selection.encode(&mut e)?;
            m.virtual_selection.encode(&mut e)?;
        }
        e.checksum();
        Ok(out)
    }
}

/// A NUL-terminated name, which must be UTF-8.
fn c_string(d: &mut Decoder<'_>, field: &'static str) -> Result<String> {
    let at = d.addr();
    let Some(len) = d.rest().iter().position(|&b| b == 0) else {
        return Err(d.invalid(at, format!("{field} has no terminating NUL")));
    };
    let raw = d.bytes(len)?;
    d.skip(1)?;
    String::from_utf8(raw.to_vec()).map_err(|_| d.invalid(at, format!("{field} is not UTF-8")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selection::{Hyperslab, HyperslabEncoding, HyperslabShape};

    /// The block h5py 3.16 (libhdf5 2.0) wrote for two mappings of `src.h5`'s `a` (4 x 5)
    /// into rows 0-3 and 4-7 of an 8 x 5 virtual dataset.
    #[rustfmt::skip]
    const H5PY_BLOCK: &[u8] = &[
        0x00,                                            // version 0
        0x02, 0, 0, 0, 0, 0, 0, 0,                       // 2 entries
        b's', b'r', b'c', b'.', b'h', b'5', 0,  b'a', 0, // names
        3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // source: all
        2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x18, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0,  // virtual: (0,0)-(3,4)
        b's', b'r', b'c', b'.', b'h', b'5', 0,  b'a', 0,
        2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x18, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0,  // source: (0,0)-(3,4)
        2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x18, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0,
        4, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 4, 0, 0, 0,  // virtual: (4,0)-(7,4)
        0xe8, 0xad, 0xe1, 0xac,                          // checksum
    ];

    fn block(lo: [u64; 2], hi: [u64; 2]) -> Selection {
        Selection::Hyperslab(Hyperslab {
            encoding: HyperslabEncoding::V1,
            rank: 2,
            shape: HyperslabShape::Blocks(vec![lo[0], lo[1], hi[0], hi[1]]),
        })
    }

    #[test]
    fn decode_h5py_block() {
        let m = Mappings::decode(H5PY_BLOCK, Addr(0x828), Sizes::DEFAULT).unwrap();
        assert_eq!(
            m.entries,
            vec![
                Mapping {
                    source_file: "src.h5".into(),
                    source_dataset: "a".into(),
                    source_selection: Selection::All,
                    virtual_selection: block([0, 0], [3, 4]),
                },
                Mapping {
                    source_file: "src.h5".into(),
                    source_dataset: "a".into(),
                    source_selection: block([0, 0], [3, 4]),
                    virtual_selection: block([4, 0], [7, 4]),
                },
            ]
        );
        assert_eq!(m.encode(Sizes::DEFAULT).unwrap(), H5PY_BLOCK);
    }

    #[test]
    fn rejects_truncation() {
        for n in 0..H5PY_BLOCK.len() {
            assert!(Mappings::decode(&H5PY_BLOCK[..n], Addr(0), Sizes::DEFAULT).is_err());
        }
    }

    #[test]
    fn rejects_flipped_byte() {
        for i in 0..H5PY_BLOCK.len() {
            let mut b = H5PY_BLOCK.to_vec();
            b[i] ^= 0x01;
            assert!(
                Mappings::decode(&b, Addr(0), Sizes::DEFAULT).is_err(),
                "byte {i}"
            );
        }
    }

    #[test]
    fn rejects_unknown_version_and_trailing_bytes() {
        let reencode = |mut body: Vec<u8>| {
            let mut out = Vec::new();
            let mut e = Encoder::new(&mut out, Sizes::DEFAULT, STRUCTURE);
            body.truncate(body.len() - 4);
            e.bytes(&body);
            e.checksum();
            out
        };
        let mut b = H5PY_BLOCK.to_vec();
        b[0] = 1;
        assert!(matches!(
            Mappings::decode(&reencode(b), Addr(0), Sizes::DEFAULT),
            Err(Error::BadVersion { version: 1, .. })
        ));
        let mut b = H5PY_BLOCK.to_vec();
        b.insert(b.len() - 4, 0);
        assert!(matches!(
            Mappings::decode(&reencode(b), Addr(0), Sizes::DEFAULT),
            Err(Error::Invalid { .. })
        ));
    }
}
