//! Chunk records as the chunk indexes store them: the fixed/extensible array elements and the
//! v2 B-tree records of types 10 (unfiltered) and 11 (filtered).
//!
//! | record                  | layout                                                           |
//! |-------------------------|------------------------------------------------------------------|
//! | array, unfiltered       | chunk address (sa)                                               |
//! | array, filtered         | chunk address (sa), chunk size (`size_width`), filter mask (u32) |
//! | v2 B-tree type 10       | chunk address (sa), `rank` × u64 scaled coordinates              |
//! | v2 B-tree type 11       | chunk address (sa), chunk size (`size_width`), filter mask (u32), `rank` × u64 scaled coordinates |
//!
//! `size_width` is `chunk_size_len` for layout version 4 (see [`chunk_size_len`]) and the size
//! of lengths for layout version 5.

#![deny(missing_docs)]

use smallvec::SmallVec;

use crate::addr::{Addr, Sizes};
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};

/// Scaled chunk coordinates (chunk grid indices), dim 0 first.
pub type Scaled = SmallVec<[u64; 4]>;

/// Most dimensions HDF5 allows.
pub const MAX_RANK: usize = 32;

/// Width of the chunk-size field of filtered records under layout version 4: the bytes needed
/// for `chunk_bytes` plus one spare byte, at most 8.
pub fn chunk_size_len(chunk_bytes: u64) -> u8 {
    let log2 = chunk_bytes.max(1).ilog2() as u8;
    (log2 / 8).saturating_add(2).min(8)
}

/// What a chunk index stores for one chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ChunkRecord {
    /// The chunk's address, `None` when not allocated.
    pub addr: Option<Addr>,
    /// Stored size in bytes (filtered records only; 0 otherwise).
    pub size: u64,
    /// Filter mask: bit i set means filter i was skipped (filtered records only).
    pub mask: u32,
}

/// How chunk records are encoded in one index: filtered or not, and the size field's width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordCodec {
    offsets: u8,
    /// `Some(width)` for filtered records.
    size_width: Option<u8>,
}

impl RecordCodec {
    /// Unfiltered records: just the address.
    pub fn unfiltered(sizes: Sizes) -> RecordCodec {
        RecordCodec {
            offsets: sizes.offsets(),
            size_width: None,
        }
    }

    /// Filtered records with a `size_width`-byte size field (1 to 8).
    pub fn filtered(sizes: Sizes, size_width: u8) -> Result<RecordCodec> {
        if !(1..=8).contains(&size_width) {
            return Err(Error::Unencodable {
                structure: "chunk record",
                reason: format!("chunk size width {size_width} not in 1..=8"),
            });
        }
        Ok(RecordCodec {
            offsets: sizes.offsets(),
            size_width: Some(size_width),
        })
    }

    /// Whether records carry a size and a filter mask.
    pub fn is_filtered(&self) -> bool {
        self.size_width.is_some()
    }

    /// The width of the size field of filtered records; `None` when unfiltered.
    pub fn size_width(&self) -> Option<u8> {
        self.size_width
    }

    /// Bytes of one array element.
    pub fn element_size(&self) -> usize {
        usize::from(self.offsets).saturating_add(
            self.size_width
                .map_or(0, |w| usize::from(w).saturating_add(4)),
        )
    }

    /// The element of an unallocated chunk: the undefined address, size 0, mask 0.
    pub fn fill(&self) -> Vec<u8> {
        let mut out = vec![0xff; usize::from(self.offsets)];
        out.resize(self.element_size(), 0);
        out
    }

    fn sizes(&self) -> Sizes {
        // The widths were validated when the codec was built from a `Sizes`.
        Sizes::new(self.offsets, 8, Addr(0)).unwrap_or(Sizes::DEFAULT)
    }

    /// Decode one array element.
    pub fn decode(&self, bytes: &[u8], at: Addr) -> Result<ChunkRecord> {
        let mut d = Decoder::new(bytes, at, self.sizes(), "chunk record");
        self.decode_from(&mut d)
    }

    fn decode_from(&self, d: &mut Decoder<'_>) -> Result<ChunkRecord> {
        let addr = d.offset()?;
        let (size, mask) = match self.size_width {
            Some(w) => (d.uint(w)?, d.u32()?),
            None => (0, 0),
        };
        Ok(ChunkRecord { addr, size, mask })
    }

    /// Append one array element.
    pub fn encode(&self, r: &ChunkRecord, out: &mut Vec<u8>) -> Result<()> {
        let mut e = Encoder::new(out, self.sizes(), "chunk record");
        self.encode_to(r, &mut e)
    }

    fn encode_to(&self, r: &ChunkRecord, e: &mut Encoder<'_>) -> Result<()> {
        e.offset(r.addr, "chunk address")?;
        if let Some(w) = self.size_width {
            e.uint(r.size, w, "chunk size")?;
            e.u32(r.mask);
        }
        Ok(())
    }

    /// Bytes of one v2 B-tree record (type 10 or 11) of `rank` dimensions.
    pub fn bt2_record_size(&self, rank: usize) -> usize {
        self.element_size().saturating_add(rank.saturating_mul(8))
    }

    /// Decode a v2 B-tree chunk record of `rank` dimensions.
    pub fn decode_bt2(&self, bytes: &[u8], at: Addr, rank: usize) -> Result<(ChunkRecord, Scaled)> {
        let mut d = Decoder::new(bytes, at, self.sizes(), "v2 B-tree chunk record");
        if rank > MAX_RANK {
            return Err(d.bad_value(at, "rank", rank as u64));
        }
        let r = self.decode_from(&mut d)?;
        let mut scaled = Scaled::with_capacity(rank);
        for _ in 0..rank {
            scaled.push(d.u64()?);
        }
        Ok((r, scaled))
    }

    /// Append a v2 B-tree chunk record.
    pub fn encode_bt2(&self, r: &ChunkRecord, scaled: &[u64], out: &mut Vec<u8>) -> Result<()> {
        let mut e = Encoder::new(out, self.sizes(), "v2 B-tree chunk record");
        self.encode_to(r, &mut e)?;
        for &s in scaled {
            e.u64(s);
        }
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

    #[test]
    fn chunk_size_len_matches_libhdf5() {
        for (bytes, width) in [(1, 2), (8, 2), (255, 2), (256, 3), (800, 3), (4000, 3)] {
            assert_eq!(chunk_size_len(bytes), width, "{bytes}");
        }
        assert_eq!(chunk_size_len(65_536), 4);
        assert_eq!(chunk_size_len((1 << 24) - 1), 4);
        assert_eq!(chunk_size_len(1 << 31), 5);
        assert_eq!(chunk_size_len(u64::MAX), 8);
    }

    #[test]
    fn roundtrip_elements_and_records() {
        let s = Sizes::DEFAULT;
        let f = RecordCodec::filtered(s, 3).unwrap();
        assert_eq!(f.element_size(), 15);
        assert_eq!(f.fill(), [vec![0xff; 8], vec![0; 7]].concat());
        assert_eq!(
            f.decode(&f.fill(), Addr(0)).unwrap(),
            ChunkRecord::default()
        );
        let r = ChunkRecord {
            addr: Some(Addr(0x800)),
            size: 1401,
            mask: 2,
        };
        let mut out = Vec::new();
        f.encode(&r, &mut out).unwrap();
        assert_eq!(f.decode(&out, Addr(0)).unwrap(), r);
        let u = RecordCodec::unfiltered(s);
        assert_eq!(u.bt2_record_size(2), 24);
        let mut out = Vec::new();
        u.encode_bt2(&r, &[3, 4], &mut out).unwrap();
        let (back, scaled) = u.decode_bt2(&out, Addr(0), 2).unwrap();
        assert_eq!((back.addr, scaled.as_slice()), (r.addr, &[3u64, 4][..]));
        for n in 0..out.len() {
            assert!(u.decode_bt2(&out[..n], Addr(0), 2).is_err());
        }
        // A size that does not fit its field is refused, not truncated.
        let too_big = ChunkRecord { size: 1 << 24, ..r };
        assert!(f.encode(&too_big, &mut Vec::new()).is_err());
    }
}
