//! The virtual dataset global heap block: a virtual dataset's mappings, kept as one object of
//! a global heap collection that its layout message (class 3) names.
//!
//! | field             | size | notes                                                    |
//! |-------------------|------|----------------------------------------------------------|
//! | version           | 1    | 0 (libhdf5 1.10 on) or 1 (libhdf5 2.0, when smaller)     |
//! | number of entries | L    |                                                          |
//! | entries           | var  | each: version 1 only, flags (u8); the source file name   |
//! |                   |      | (NUL-terminated; `.` is the virtual dataset's own file), |
//! |                   |      | the source dataset name (NUL-terminated), the source     |
//! |                   |      | selection and the virtual selection ([`Selection`])      |
//! | checksum          | 4    | lookup3 of every byte before it                          |
//!
//! Version 1's entry flags: bit 0, the file name is not stored but an entry index (L) whose
//! file name it shares; bit 1, the same for the dataset name; bit 2, the source is the
//! virtual dataset's own file (no file name stored). libhdf5 2.0 writes version 1 for a file
//! whose low version bound is 2.0 when that is the smaller encoding, and shares a name
//! when the name is longer than an index.
//!
//! Source names may hold printf-style `%b` (the block number of an unlimited mapping) and
//! `%%` (a percent sign); this module keeps them as stored.

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};
use crate::selection::Selection;
use crate::sizes::Sizes;

const STRUCTURE: &str = "virtual dataset global heap block";

/// The encoding of libhdf5 1.10 to 2.0: every name stored.
pub const VERSION_0: u8 = 0;
/// libhdf5 2.0's encoding with entry flags (names shared between entries).
pub const VERSION_1: u8 = 1;

const FLAG_FILE_SHARED: u8 = 0x01;
const FLAG_DATASET_SHARED: u8 = 0x02;
const FLAG_SAME_FILE: u8 = 0x04;

/// How a version 1 entry stores one of its names.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum NameEncoding {
    /// The name itself (the only way of version 0).
    #[default]
    Stored,
    /// The index of an earlier entry whose name it is.
    Shared(u64),
    /// The virtual dataset's own file, named by a flag (file names of version 1 only).
    SameFile,
}

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
    /// How the source file name is stored.
    pub file_encoding: NameEncoding,
    /// How the source dataset name is stored.
    pub dataset_encoding: NameEncoding,
}

/// The decoded block: every mapping, in order.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Mappings {
    /// The encoding version ([`VERSION_0`] or [`VERSION_1`]).
    pub version: u8,
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
        if version != VERSION_0 && version != VERSION_1 {
            return Err(d.bad_version(v_at, version));
        }
        let n = d.length()?;
        let n = d.check_count(n, MIN_ENTRY)?;
        let mut entries: Vec<Mapping> = Vec::with_capacity(n);
        for _ in 0..n {
            let flags_at = d.addr();
            let flags = if version == VERSION_1 { d.u8()? } else { 0 };
            if flags & !(FLAG_FILE_SHARED | FLAG_DATASET_SHARED | FLAG_SAME_FILE) != 0
                || flags & (FLAG_FILE_SHARED | FLAG_SAME_FILE) == FLAG_FILE_SHARED | FLAG_SAME_FILE
            {
                return Err(d.bad_value(flags_at, "entry flags", u64::from(flags)));
            }
            let (source_file, file_encoding) = if flags & FLAG_SAME_FILE != 0 {
                (".".to_owned(), NameEncoding::SameFile)
            } else if flags & FLAG_FILE_SHARED != 0 {
                let (i, m) = shared(&mut d, &entries)?;
                (m.source_file.clone(), NameEncoding::Shared(i))
            } else {
                (c_string(&mut d, "source file name")?, NameEncoding::Stored)
            };
            let (source_dataset, dataset_encoding) = if flags & FLAG_DATASET_SHARED != 0 {
                let (i, m) = shared(&mut d, &entries)?;
                (m.source_dataset.clone(), NameEncoding::Shared(i))
            } else {
                (
                    c_string(&mut d, "source dataset name")?,
                    NameEncoding::Stored,
                )
            };
            let source_selection = Selection::decode(&mut d)?;
            let virtual_selection = Selection::decode(&mut d)?;
            entries.push(Mapping {
                source_file,
                source_dataset,
                source_selection,
                virtual_selection,
                file_encoding,
                dataset_encoding,
            });
        }
        if !d.is_empty() {
            return Err(d.invalid(
                d.addr(),
                format!("{} bytes after the last entry", d.remaining()),
            ));
        }
        Ok(Mappings { version, entries })
    }

    /// Encode the block, checksum included.
    pub fn encode(&self, sizes: Sizes) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut e = Encoder::new(&mut out, sizes, STRUCTURE);
        if self.version != VERSION_0 && self.version != VERSION_1 {
            return Err(unencodable(format!("version {}", self.version)));
        }
        e.u8(self.version);
        e.length(self.entries.len() as u64, "number of entries")?;
        for (at, m) in self.entries.iter().enumerate() {
            let names = [
                (&m.source_file, m.file_encoding, FLAG_FILE_SHARED),
                (&m.source_dataset, m.dataset_encoding, FLAG_DATASET_SHARED),
            ];
            if self.version == VERSION_1 {
                let mut flags = 0;
                for (_, how, flag) in names {
                    flags |= match how {
                        NameEncoding::Stored => 0,
                        NameEncoding::Shared(_) => flag,
                        NameEncoding::SameFile => FLAG_SAME_FILE,
                    };
                }
                e.u8(flags);
            }
            for (name, how, _) in names {
                match how {
                    NameEncoding::Stored => {
                        if name.as_bytes().contains(&0) {
                            return Err(unencodable(format!("a name with a NUL byte: {name:?}")));
                        }
                        e.bytes(name.as_bytes());
                        e.u8(0);
                    }
                    _ if self.version == VERSION_0 => {
                        return Err(unencodable("a shared name in version 0".to_owned()));
                    }
                    NameEncoding::Shared(i) if (i as usize) < at => {
                        e.length(i, "shared name index")?;
                    }
                    NameEncoding::Shared(i) => {
                        return Err(unencodable(format!("entry {at} shares entry {i}'s name")));
                    }
                    NameEncoding::SameFile => {}
                }
            }
            m.source_selection.encode(&mut e)?;
            m.virtual_selection.encode(&mut e)?;
        }
        e.checksum();
        Ok(out)
    }
}

fn unencodable(reason: String) -> Error {
    Error::Unencodable {
        structure: STRUCTURE,
        reason,
    }
}

/// An earlier entry named by index (a shared name of version 1).
fn shared<'m>(d: &mut Decoder<'_>, entries: &'m [Mapping]) -> Result<(u64, &'m Mapping)> {
    let at = d.addr();
    let i = d.length()?;
    usize::try_from(i)
        .ok()
        .and_then(|i| entries.get(i))
        .map(|m| (i, m))
        .ok_or_else(|| d.bad_value(at, "shared name index", i))
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
                    file_encoding: NameEncoding::Stored,
                    dataset_encoding: NameEncoding::Stored,
                },
                Mapping {
                    source_file: "src.h5".into(),
                    source_dataset: "a".into(),
                    source_selection: block([0, 0], [3, 4]),
                    virtual_selection: block([4, 0], [7, 4]),
                    file_encoding: NameEncoding::Stored,
                    dataset_encoding: NameEncoding::Stored,
                },
            ]
        );
        assert_eq!(m.encode(Sizes::DEFAULT).unwrap(), H5PY_BLOCK);
    }

    /// libhdf5 2.0's version 1 (h5py, low bound latest): two entries of a long file and
    /// dataset name (the second shares both), two of the same file (the second shares the
    /// dataset name). Selections: all, then rows 0 to 3 of a 4 x 10 dataset, version 3.
    #[test]
    fn decode_version_1_shared_names() {
        let all = [3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let row = |r: u8| {
            [
                2, 0, 0, 0, 3, 0, 0, 0, 1, 2, 2, 0, 0, 0, // regular, 2-byte, rank 2
                r, 0, 1, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 10, 0,
            ]
        };
        let mut body = vec![1u8, 4, 0, 0, 0, 0, 0, 0, 0];
        body.push(0);
        body.extend_from_slice(b"long_source_file_name.h5\0a_long_dataset_name_here\0");
        body.extend_from_slice(&all);
        body.extend_from_slice(&row(0));
        body.push(3);
        body.extend_from_slice(&[0; 16]);
        body.extend_from_slice(&all);
        body.extend_from_slice(&row(1));
        body.push(4);
        body.extend_from_slice(b"a_long_local_dataset_name\0");
        body.extend_from_slice(&all);
        body.extend_from_slice(&row(2));
        body.push(6);
        body.extend_from_slice(&[2, 0, 0, 0, 0, 0, 0, 0]);
        body.extend_from_slice(&all);
        body.extend_from_slice(&row(3));
        let mut bytes = Vec::new();
        let mut e = Encoder::new(&mut bytes, Sizes::DEFAULT, STRUCTURE);
        e.bytes(&body);
        e.checksum();
        let m = Mappings::decode(&bytes, Addr(0), Sizes::DEFAULT).unwrap();
        assert_eq!(m.version, VERSION_1);
        let names: Vec<(&str, &str, NameEncoding, NameEncoding)> = m
            .entries
            .iter()
            .map(|e| {
                (
                    e.source_file.as_str(),
                    e.source_dataset.as_str(),
                    e.file_encoding,
                    e.dataset_encoding,
                )
            })
            .collect();
        use NameEncoding::*;
        assert_eq!(
            names,
            [
                (
                    "long_source_file_name.h5",
                    "a_long_dataset_name_here",
                    Stored,
                    Stored
                ),
                (
                    "long_source_file_name.h5",
                    "a_long_dataset_name_here",
                    Shared(0),
                    Shared(0)
                ),
                (".", "a_long_local_dataset_name", SameFile, Stored),
                (".", "a_long_local_dataset_name", SameFile, Shared(2)),
            ]
        );
        assert_eq!(m.encode(Sizes::DEFAULT).unwrap(), bytes);
        // An index naming a later entry (or itself) is refused.
        let mut bad = body.clone();
        let first_shared = 9 + 1 + 25 + 25 + 16 + 30 + 1;
        bad[first_shared] = 1;
        let mut b = Vec::new();
        let mut e = Encoder::new(&mut b, Sizes::DEFAULT, STRUCTURE);
        e.bytes(&bad);
        e.checksum();
        assert!(matches!(
            Mappings::decode(&b, Addr(0), Sizes::DEFAULT),
            Err(Error::BadValue {
                field: "shared name index",
                ..
            })
        ));
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
        b[0] = 2;
        assert!(matches!(
            Mappings::decode(&reencode(b), Addr(0), Sizes::DEFAULT),
            Err(Error::BadVersion { version: 2, .. })
        ));
        let mut b = H5PY_BLOCK.to_vec();
        b.insert(b.len() - 4, 0);
        assert!(matches!(
            Mappings::decode(&reencode(b), Addr(0), Sizes::DEFAULT),
            Err(Error::Invalid { .. })
        ));
    }
}
