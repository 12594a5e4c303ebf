//! Dataspace selections as libhdf5 serializes them: which elements of a dataspace are
//! selected. A virtual dataset's mappings hold two each (the source's and the virtual's).
//!
//! Every encoding starts with the selection type (u32: 0 none, 1 points, 2 hyperslab, 3 all)
//! and its version (u32). Then, by type and version:
//!
//! | selection      | fields after type and version                                        |
//! |----------------|----------------------------------------------------------------------|
//! | none, all (1)  | reserved (u32, 0), length (u32, 0)                                   |
//! | points 1       | reserved (u32), length (u32), rank (u32), count (u32), coordinates  |
//! |                | (u32 each, point after point)                                        |
//! | points 2       | encoded size `E` (u8: 2, 4 or 8), rank (u32), count (E),            |
//! |                | coordinates (E each)                                                 |
//! | hyperslab 1    | reserved (u32), length (u32), rank (u32), block count (u32), blocks |
//! |                | (start corner then end corner, u32 each coordinate)                  |
//! | hyperslab 2    | flags (u8, bit 0 regular), length (u32), rank (u32); regular:        |
//! |                | per dimension start, stride, count, block (u64 each); otherwise     |
//! |                | block count (u64) and blocks (u64 each coordinate)                   |
//! | hyperslab 3    | flags (u8), `E` (u8), rank (u32); regular: per dimension start,      |
//! |                | stride, count, block (E each); otherwise block count (E), blocks (E) |
//!
//! The length fields count the bytes that follow them. A regular hyperslab's count or block
//! may be unlimited ([`UNLIMITED`], all ones); in a version 3 encoding narrower than 8 bytes
//! the unlimited value is the field's own all-ones value. libhdf5 writes version 1 hyperslabs
//! (as a block list, regular or not) unless a count or block is unlimited or the file's low
//! version bound is 1.10 or later.

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};

const STRUCTURE: &str = "dataspace selection";

/// The unlimited count or block of a regular hyperslab (`H5S_UNLIMITED`).
pub const UNLIMITED: u64 = u64::MAX;

/// The largest rank libhdf5 allows (`H5S_MAX_RANK`).
pub const MAX_RANK: usize = 32;

const TYPE_NONE: u32 = 0;
const TYPE_POINTS: u32 = 1;
const TYPE_HYPERSLAB: u32 = 2;
const TYPE_ALL: u32 = 3;

const FLAG_REGULAR: u8 = 0x01;

/// A decoded selection.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Selection {
    /// Nothing selected.
    None,
    /// Every element of the dataspace.
    All,
    /// A list of elements.
    Points(Points),
    /// A hyperslab: regular, or a union of blocks.
    Hyperslab(Hyperslab),
}

/// How a point selection is encoded.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum PointsEncoding {
    /// Version 1: 4-byte coordinates.
    V1,
    /// Version 2: coordinates of the given width (2, 4 or 8 bytes).
    V2 {
        /// Bytes per coordinate and count.
        enc_size: u8,
    },
}

/// A point selection.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Points {
    /// How it is encoded.
    pub encoding: PointsEncoding,
    /// Rank of the dataspace.
    pub rank: usize,
    /// The points' coordinates, one point after the other (`rank` each).
    pub coords: Vec<u64>,
}

/// How a hyperslab selection is encoded.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum HyperslabEncoding {
    /// Version 1: a block list of 4-byte coordinates.
    V1,
    /// Version 2: regular with 8-byte fields, or a block list of 8-byte coordinates.
    V2,
    /// Version 3: fields of the given width (2, 4 or 8 bytes).
    V3 {
        /// Bytes per field.
        enc_size: u8,
    },
}

/// One dimension of a regular hyperslab.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RegularDim {
    /// First selected index.
    pub start: u64,
    /// Distance between the starts of consecutive blocks.
    pub stride: u64,
    /// Number of blocks ([`UNLIMITED`]: as many as the extent holds).
    pub count: u64,
    /// Block size ([`UNLIMITED`]: to the end of the extent).
    pub block: u64,
}

/// What a hyperslab selects.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum HyperslabShape {
    /// A regular hyperslab, one entry per dimension.
    Regular(Vec<RegularDim>),
    /// A union of blocks, each its start corner then its end corner (inclusive), `2 · rank`
    /// coordinates a block.
    Blocks(Vec<u64>),
}

/// A hyperslab selection.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Hyperslab {
    /// How it is encoded.
    pub encoding: HyperslabEncoding,
    /// Rank of the dataspace.
    pub rank: usize,
    /// What it selects.
    pub shape: HyperslabShape,
}

impl Hyperslab {
    /// The number of blocks of a block list (`None` for a regular hyperslab).
    pub fn block_count(&self) -> Option<usize> {
        match &self.shape {
            HyperslabShape::Regular(_) => None,
            HyperslabShape::Blocks(b) => Some(b.len().checked_div(self.rank.saturating_mul(2))?),
        }
    }
}

impl Selection {
    /// The rank the selection was encoded for (`None` for none and all, which carry none).
    pub fn rank(&self) -> Option<usize> {
        match self {
            Selection::None | Selection::All => None,
            Selection::Points(p) => Some(p.rank),
            Selection::Hyperslab(h) => Some(h.rank),
        }
    }

    /// Decode one selection at the cursor.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Selection> {
        let type_at = d.addr();
        let kind = d.u32()?;
        let version_at = d.addr();
        let version = d.u32()?;
        let bad_version =
            |d: &Decoder<'_>| d.bad_version(version_at, u8::try_from(version).unwrap_or(u8::MAX));
        match kind {
            TYPE_NONE | TYPE_ALL => {
                if version != 1 {
                    return Err(bad_version(d));
                }
                // Reserved and length (zero), which libhdf5 skips.
                d.skip(8)?;
                Ok(if kind == TYPE_ALL {
                    Selection::All
                } else {
                    Selection::None
                })
            }
            TYPE_POINTS => {
                let encoding = match version {
                    1 => {
                        d.skip(8)?;
                        PointsEncoding::V1
                    }
                    2 => PointsEncoding::V2 {
                        enc_size: enc_size(d)?,
                    },
                    _ => return Err(bad_version(d)),
                };
                let width = match encoding {
                    PointsEncoding::V1 => 4,
                    PointsEncoding::V2 { enc_size } => enc_size,
                };
                let rank = rank(d)?;
                let n = d.uint(width)?;
                let values = n.saturating_mul(rank as u64);
                let values = d.check_count(values, usize::from(width))?;
                let mut coords = Vec::with_capacity(values);
                for _ in 0..values {
                    coords.push(d.uint(width)?);
                }
                Ok(Selection::Points(Points {
                    encoding,
                    rank,
                    coords,
                }))
            }
            TYPE_HYPERSLAB => {
                let (encoding, flags, width) = match version {
                    1 => {
                        d.skip(8)?;
                        (HyperslabEncoding::V1, 0, 4)
                    }
                    2 => {
                        let flags = flags(d)?;
                        d.skip(4)?;
                        (HyperslabEncoding::V2, flags, 8)
                    }
                    3 => {
                        let flags = flags(d)?;
                        let enc_size = enc_size(d)?;
                        (HyperslabEncoding::V3 { enc_size }, flags, enc_size)
                    }
                    _ => return Err(bad_version(d)),
                };
                let rank = rank(d)?;
                let shape = if flags & FLAG_REGULAR != 0 {
                    let mut dims = Vec::with_capacity(rank);
                    for _ in 0..rank {
                        let start = d.uint(width)?;
                        let stride = d.uint(width)?;
                        let count = unlimited(d.uint(width)?, width);
                        let block = unlimited(d.uint(width)?, width);
                        dims.push(RegularDim {
                            start,
                            stride,
                            count,
                            block,
                        });
                    }
                    HyperslabShape::Regular(dims)
                } else {
                    let n = d.uint(width)?;
                    let values = n.saturating_mul(rank as u64).saturating_mul(2);
                    let values = d.check_count(values, usize::from(width))?;
                    let mut coords = Vec::with_capacity(values);
                    for _ in 0..values {
                        coords.push(d.uint(width)?);
                    }
                    HyperslabShape::Blocks(coords)
                };
                Ok(Selection::Hyperslab(Hyperslab {
                    encoding,
                    rank,
                    shape,
                }))
            }
            k => Err(d.bad_value(type_at, "selection type", u64::from(k))),
        }
    }

    /// Encode the selection.
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        match self {
            Selection::None | Selection::All => {
                e.u32(if matches!(self, Selection::All) {
                    TYPE_ALL
                } else {
                    TYPE_NONE
                });
                e.u32(1);
                e.u32(0);
                e.u32(0);
                Ok(())
            }
            Selection::Points(p) => {
                check_rank(p.rank)?;
                let n = whole(p.coords.len(), p.rank)
                    .ok_or_else(|| unencodable("coordinates that are no whole number of points"))?
                    as u64;
                e.u32(TYPE_POINTS);
                let width = match p.encoding {
                    PointsEncoding::V1 => {
                        e.u32(1);
                        e.u32(0);
                        // Rank, count and the coordinates follow.
                        let len = (p.coords.len() as u64)
                            .checked_mul(4)
                            .and_then(|b| b.checked_add(8));
                        e.uint(len.unwrap_or(u64::MAX), 4, "point selection length")?;
                        4
                    }
                    PointsEncoding::V2 { enc_size } => {
                        e.u32(2);
                        e.u8(enc_size);
                        enc_size
                    }
                };
                e.u32(p.rank as u32);
                e.uint(n, width, "point count")?;
                for &c in &p.coords {
                    e.uint(c, width, "point coordinate")?;
                }
                Ok(())
            }
            Selection::Hyperslab(h) => h.encode(e),
        }
    }
}

impl Hyperslab {
    fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        check_rank(self.rank)?;
        let regular = matches!(self.shape, HyperslabShape::Regular(_));
        let flags = if regular { FLAG_REGULAR } else { 0 };
        // The bytes after the length field (versions 1 and 2).
        let body_len = |width: u64| -> Option<u64> {
            let rank = self.rank as u64;
            match &self.shape {
                HyperslabShape::Regular(_) => {
                    rank.checked_mul(4)?.checked_mul(width)?.checked_add(4)
                }
                HyperslabShape::Blocks(b) => (b.len() as u64)
                    .checked_mul(width)?
                    .checked_add(4)?
                    .checked_add(width),
            }
        };
        e.u32(TYPE_HYPERSLAB);
        let width = match self.encoding {
            HyperslabEncoding::V1 => {
                if regular {
                    return Err(unencodable("a version 1 hyperslab is a block list"));
                }
                e.u32(1);
                e.u32(0);
                e.uint(body_len(4).unwrap_or(u64::MAX), 4, "hyperslab length")?;
                4
            }
            HyperslabEncoding::V2 => {
                e.u32(2);
                e.u8(flags);
                e.uint(body_len(8).unwrap_or(u64::MAX), 4, "hyperslab length")?;
                8
            }
            HyperslabEncoding::V3 { enc_size } => {
                if !matches!(enc_size, 2 | 4 | 8) {
                    return Err(unencodable("encoded size other than 2, 4 or 8"));
                }
                e.u32(3);
                e.u8(flags);
                e.u8(enc_size);
                enc_size
            }
        };
        e.u32(self.rank as u32);
        match &self.shape {
            HyperslabShape::Regular(dims) => {
                if dims.len() != self.rank {
                    return Err(unencodable(
                        "regular hyperslab dimensions differ from its rank",
                    ));
                }
                for dim in dims {
                    e.uint(dim.start, width, "hyperslab start")?;
                    e.uint(dim.stride, width, "hyperslab stride")?;
                    e.uint(narrow(dim.count, width), width, "hyperslab count")?;
                    e.uint(narrow(dim.block, width), width, "hyperslab block")?;
                }
            }
            HyperslabShape::Blocks(coords) => {
                let n = whole(coords.len(), self.rank.saturating_mul(2))
                    .ok_or_else(|| unencodable("coordinates that are no whole number of blocks"))?;
                e.uint(n as u64, width, "hyperslab block count")?;
                for &c in coords {
                    e.uint(c, width, "hyperslab block coordinate")?;
                }
            }
        }
        Ok(())
    }
}

/// The all-ones value of a `width`-byte field.
fn all_ones(width: u8) -> u64 {
    1u64.checked_shl(u32::from(width).saturating_mul(8))
        .map_or(u64::MAX, |v| v.wrapping_sub(1))
}

/// `len / per` when `per` divides `len` exactly.
fn whole(len: usize, per: usize) -> Option<usize> {
    (len.checked_rem(per)? == 0)
        .then(|| len.checked_div(per))
        .flatten()
}

/// A count or block read from a `width`-byte field: its all-ones value is unlimited.
fn unlimited(v: u64, width: u8) -> u64 {
    if v == all_ones(width) { UNLIMITED } else { v }
}

/// A count or block for a `width`-byte field: unlimited becomes the field's all-ones value.
fn narrow(v: u64, width: u8) -> u64 {
    if v == UNLIMITED { all_ones(width) } else { v }
}

fn enc_size(d: &mut Decoder<'_>) -> Result<u8> {
    let at = d.addr();
    match d.u8()? {
        s @ (2 | 4 | 8) => Ok(s),
        s => Err(d.bad_value(at, "encoded size", u64::from(s))),
    }
}

fn flags(d: &mut Decoder<'_>) -> Result<u8> {
    let at = d.addr();
    match d.u8()? {
        f if f & !FLAG_REGULAR == 0 => Ok(f),
        f => Err(d.bad_value(at, "selection flags", u64::from(f))),
    }
}

fn rank(d: &mut Decoder<'_>) -> Result<usize> {
    let at: Addr = d.addr();
    let r = d.u32()?;
    match usize::try_from(r) {
        Ok(r) if (1..=MAX_RANK).contains(&r) => Ok(r),
        _ => Err(d.bad_value(at, "rank", u64::from(r))),
    }
}

fn check_rank(rank: usize) -> Result<()> {
    if (1..=MAX_RANK).contains(&rank) {
        Ok(())
    } else {
        Err(unencodable(format!("rank {rank}")))
    }
}

fn unencodable(reason: impl Into<String>) -> Error {
    Error::Unencodable {
        structure: STRUCTURE,
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizes::Sizes;

    fn decode(b: &[u8]) -> Result<Selection> {
        let mut d = Decoder::new(b, Addr(0x100), Sizes::DEFAULT, STRUCTURE);
        let s = Selection::decode(&mut d)?;
        assert!(d.is_empty(), "{} bytes left", d.remaining());
        Ok(s)
    }

    fn encode(s: &Selection) -> Vec<u8> {
        let mut out = Vec::new();
        s.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, STRUCTURE))
            .unwrap();
        out
    }

    /// What libhdf5 2.0 wrote (h5py, `vds_*.h5`): each is decoded, checked, and re-encoded to
    /// the same bytes.
    #[rustfmt::skip]
    const ALL: &[u8] = &[
        3, 0, 0, 0,  1, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 0,  // all, version 1, reserved, length 0
    ];
    #[rustfmt::skip]
    const BLOCKS_V1: &[u8] = &[
        2, 0, 0, 0,  1, 0, 0, 0,   // hyperslab, version 1
        0, 0, 0, 0,  40, 0, 0, 0,  // reserved, length 40
        2, 0, 0, 0,  2, 0, 0, 0,   // rank 2, 2 blocks
        0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 0,  // (0,0)-(0,0)
        2, 0, 0, 0,  2, 0, 0, 0,  2, 0, 0, 0,  3, 0, 0, 0,  // (2,2)-(2,3)
    ];
    #[rustfmt::skip]
    const REGULAR_V2: &[u8] = &[
        2, 0, 0, 0,  2, 0, 0, 0,   // hyperslab, version 2
        1,  68, 0, 0, 0,           // regular, length 68
        2, 0, 0, 0,                // rank 2
        0, 0, 0, 0, 0, 0, 0, 0,  4, 0, 0, 0, 0, 0, 0, 0,  // start 0, stride 4
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,   // count unlimited
        4, 0, 0, 0, 0, 0, 0, 0,                           // block 4
        0, 0, 0, 0, 0, 0, 0, 0,  1, 0, 0, 0, 0, 0, 0, 0,  // start 0, stride 1
        1, 0, 0, 0, 0, 0, 0, 0,  5, 0, 0, 0, 0, 0, 0, 0,  // count 1, block 5
    ];
    #[rustfmt::skip]
    const REGULAR_V3: &[u8] = &[
        2, 0, 0, 0,  3, 0, 0, 0,   // hyperslab, version 3
        1, 2,  2, 0, 0, 0,         // regular, 2-byte fields, rank 2
        0, 0,  4, 0,  0xff, 0xff,  4, 0,   // start 0, stride 4, count unlimited, block 4
        0, 0,  1, 0,  1, 0,  5, 0,         // start 0, stride 1, count 1, block 5
    ];
    #[rustfmt::skip]
    const BLOCKS_V3: &[u8] = &[
        2, 0, 0, 0,  3, 0, 0, 0,   // hyperslab, version 3
        0, 2,  2, 0, 0, 0,         // block list, 2-byte fields, rank 2
        2, 0,                      // 2 blocks
        0, 0, 0, 0,  0, 0, 0, 0,   // (0,0)-(0,0)
        2, 0, 2, 0,  2, 0, 3, 0,   // (2,2)-(2,3)
    ];

    #[test]
    fn decode_libhdf5_selections() {
        assert_eq!(decode(ALL).unwrap(), Selection::All);
        let blocks = vec![0, 0, 0, 0, 2, 2, 2, 3];
        assert_eq!(
            decode(BLOCKS_V1).unwrap(),
            Selection::Hyperslab(Hyperslab {
                encoding: HyperslabEncoding::V1,
                rank: 2,
                shape: HyperslabShape::Blocks(blocks.clone()),
            })
        );
        let regular = HyperslabShape::Regular(vec![
            RegularDim {
                start: 0,
                stride: 4,
                count: UNLIMITED,
                block: 4,
            },
            RegularDim {
                start: 0,
                stride: 1,
                count: 1,
                block: 5,
            },
        ]);
        assert_eq!(
            decode(REGULAR_V2).unwrap(),
            Selection::Hyperslab(Hyperslab {
                encoding: HyperslabEncoding::V2,
                rank: 2,
                shape: regular.clone(),
            })
        );
        assert_eq!(
            decode(REGULAR_V3).unwrap(),
            Selection::Hyperslab(Hyperslab {
                encoding: HyperslabEncoding::V3 { enc_size: 2 },
                rank: 2,
                shape: regular,
            })
        );
        let s = decode(BLOCKS_V3).unwrap();
        assert_eq!(
            s,
            Selection::Hyperslab(Hyperslab {
                encoding: HyperslabEncoding::V3 { enc_size: 2 },
                rank: 2,
                shape: HyperslabShape::Blocks(blocks),
            })
        );
        let Selection::Hyperslab(h) = s else {
            unreachable!()
        };
        assert_eq!(h.block_count(), Some(2));
    }

    #[test]
    fn roundtrip_libhdf5_selections() {
        for b in [ALL, BLOCKS_V1, REGULAR_V2, REGULAR_V3, BLOCKS_V3] {
            assert_eq!(encode(&decode(b).unwrap()), b);
        }
    }

    #[test]
    fn roundtrip_points_and_none() {
        for s in [
            Selection::None,
            Selection::Points(Points {
                encoding: PointsEncoding::V1,
                rank: 2,
                coords: vec![1, 2, 3, 4],
            }),
            Selection::Points(Points {
                encoding: PointsEncoding::V2 { enc_size: 8 },
                rank: 1,
                coords: vec![7, 1 << 40],
            }),
            Selection::Hyperslab(Hyperslab {
                encoding: HyperslabEncoding::V3 { enc_size: 4 },
                rank: 1,
                shape: HyperslabShape::Regular(vec![RegularDim {
                    start: 3,
                    stride: 1,
                    count: 1,
                    block: UNLIMITED,
                }]),
            }),
            Selection::Hyperslab(Hyperslab {
                encoding: HyperslabEncoding::V2,
                rank: 1,
                shape: HyperslabShape::Blocks(vec![0, 4, 8, 9]),
            }),
        ] {
            assert_eq!(decode(&encode(&s)).unwrap(), s);
        }
    }

    #[test]
    fn rejects_truncation() {
        for b in [ALL, BLOCKS_V1, REGULAR_V2, REGULAR_V3, BLOCKS_V3] {
            for n in 0..b.len() {
                let mut d = Decoder::new(&b[..n], Addr(0), Sizes::DEFAULT, STRUCTURE);
                assert!(Selection::decode(&mut d).is_err(), "prefix {n}");
            }
        }
    }

    #[test]
    fn rejects_bad_fields() {
        let mut b = ALL.to_vec();
        b[0] = 9;
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                field: "selection type",
                ..
            })
        ));
        let mut b = REGULAR_V3.to_vec();
        b[4] = 4;
        assert!(matches!(decode(&b), Err(Error::BadVersion { .. })));
        let mut b = REGULAR_V3.to_vec();
        b[9] = 3;
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                field: "encoded size",
                ..
            })
        ));
        let mut b = REGULAR_V3.to_vec();
        b[8] = 2;
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                field: "selection flags",
                ..
            })
        ));
        let mut b = REGULAR_V3.to_vec();
        b[10] = 0;
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue { field: "rank", .. })
        ));
        // A block count far beyond the bytes left sizes no allocation.
        let mut b = BLOCKS_V1.to_vec();
        b[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(decode(&b), Err(Error::Truncated { .. })));
    }
}
