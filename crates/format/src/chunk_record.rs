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

use crate::addr::{Addr, all_ones};
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};
use crate::sizes::Sizes;

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

    /// Encode `r` as one array element into `out`, which must be exactly
    /// [`element_size`](Self::element_size) bytes: the hot path of batched index updates, with
    /// no buffer to grow.
    pub fn encode_slice(&self, r: &ChunkRecord, out: &mut [u8]) -> Result<()> {
        let o = usize::from(self.offsets);
        let wrong = |field: &'static str, value: u64, width: u8| Error::TooWide {
            structure: "chunk record",
            field,
            value,
            width,
        };
        if out.len() != self.element_size() {
            return Err(wrong("element", out.len() as u64, 0));
        }
        let (addr_field, rest) = out.split_at_mut_checked(o).unwrap_or_default();
        let addr = match r.addr {
            Some(a) => a.get(),
            None => u64::MAX,
        };
        if r.addr.is_some() && !fits(addr, self.offsets) {
            return Err(wrong("chunk address", addr, self.offsets));
        }
        put_le(addr_field, addr);
        if let Some(w) = self.size_width {
            if !fits(r.size, w) {
                return Err(wrong("chunk size", r.size, w));
            }
            let (size_field, mask_field) = rest
                .split_at_mut_checked(usize::from(w))
                .unwrap_or_default();
            put_le(size_field, r.size);
            put_le(mask_field, u64::from(r.mask));
        }
        Ok(())
    }

    /// Decode one array element of exactly [`element_size`](Self::element_size) bytes (the
    /// hot path of lookups); `None` if `bytes` has another length.
    pub fn decode_slice(&self, bytes: &[u8]) -> Option<ChunkRecord> {
        if bytes.len() != self.element_size() {
            return None;
        }
        let (addr_field, rest) = bytes.split_at_checked(usize::from(self.offsets))?;
        let raw = get_le(addr_field);
        let addr = (raw != all_ones(self.offsets)).then_some(Addr(raw));
        let (size, mask) = match self.size_width {
            Some(w) => {
                let (size_field, mask_field) = rest.split_at_checked(usize::from(w))?;
                (get_le(size_field), get_le(mask_field) as u32)
            }
            None => (0, 0),
        };
        Some(ChunkRecord { addr, size, mask })
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

    /// [`bt2_record_size`](Self::bt2_record_size), `None` if it overflows.
    fn bt2_record_size_checked(&self, rank: usize) -> Option<usize> {
        self.element_size().checked_add(rank.checked_mul(8)?)
    }

    /// Bytes of one v2 B-tree record (type 10 or 11) of `rank` dimensions.
    pub fn bt2_record_size(&self, rank: usize) -> usize {
        self.element_size().saturating_add(rank.saturating_mul(8))
    }

    /// Decode a v2 B-tree chunk record of `rank` dimensions.
    pub fn decode_bt2(&self, bytes: &[u8], at: Addr, rank: usize) -> Result<(ChunkRecord, Scaled)> {
        // The hot path of v2 B-tree searches: a record of exactly the right length.
        if rank <= MAX_RANK
            && Some(bytes.len()) == self.bt2_record_size_checked(rank)
            && let Some((head, coords)) = bytes.split_at_checked(self.element_size())
            && let Some(r) = self.decode_slice(head)
        {
            let words = coords.chunks_exact(8).map(get_le);
            let scaled = if rank <= 4 {
                // Filled in place: no growth of the small vector word by word.
                let mut buf = [0u64; 4];
                for (b, w) in buf.iter_mut().zip(words) {
                    *b = w;
                }
                Scaled::from_buf_and_len(buf, rank)
            } else {
                words.collect()
            };
            return Ok((r, scaled));
        }
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

    /// Encode a v2 B-tree chunk record into `slot`, exactly
    /// [`bt2_record_size`](Self::bt2_record_size)`(scaled.len())` bytes (its place in a node).
    pub fn encode_bt2_slot(&self, r: &ChunkRecord, scaled: &[u64], slot: &mut [u8]) -> Result<()> {
        if Some(slot.len()) != self.bt2_record_size_checked(scaled.len()) {
            return Err(Error::Unencodable {
                structure: "v2 B-tree chunk record",
                reason: format!(
                    "{} bytes for a record of {} dimensions",
                    slot.len(),
                    scaled.len()
                ),
            });
        }
        let (head, coords) = slot
            .split_at_mut_checked(self.element_size())
            .unwrap_or_default();
        self.encode_slice(r, head)?;
        for (field, &s) in coords.chunks_exact_mut(8).zip(scaled) {
            field.copy_from_slice(&s.to_le_bytes());
        }
        Ok(())
    }

    /// Append a v2 B-tree chunk record.
    pub fn encode_bt2(&self, r: &ChunkRecord, scaled: &[u64], out: &mut Vec<u8>) -> Result<()> {
        // Straight into the buffer (node images encode hundreds of records each).
        let start = out.len();
        out.resize(start.saturating_add(self.element_size()), 0);
        let written = match out.get_mut(start..) {
            Some(field) => self.encode_slice(r, field),
            None => Ok(()),
        };
        if let Err(e) = written {
            out.truncate(start);
            return Err(e);
        }
        for &s in scaled {
            out.extend_from_slice(&s.to_le_bytes());
        }
        Ok(())
    }
}

/// Whether `v` fits `width` bytes (1 to 8).
fn fits(v: u64, width: u8) -> bool {
    width >= 8 || v <= all_ones(width)
}

/// Store the low `field.len()` bytes of `v`, little-endian (at most 8).
fn put_le(field: &mut [u8], v: u64) {
    if let Ok(whole) = <&mut [u8; 8]>::try_from(&mut *field) {
        *whole = v.to_le_bytes();
        return;
    }
    for (b, x) in field.iter_mut().zip(v.to_le_bytes()) {
        *b = x;
    }
}

/// A little-endian unsigned integer of `field.len()` bytes (at most 8).
fn get_le(field: &[u8]) -> u64 {
    if let Ok(whole) = <[u8; 8]>::try_from(field) {
        return u64::from_le_bytes(whole);
    }
    let mut le = [0u8; 8];
    for (l, b) in le.iter_mut().zip(field) {
        *l = *b;
    }
    u64::from_le_bytes(le)
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
        // In place (a node image's record slot): the same bytes, and only into a slot of the
        // record's size.
        for codec in [u, f] {
            let mut appended = Vec::new();
            codec.encode_bt2(&r, &[3, 4], &mut appended).unwrap();
            let mut slot = vec![0xee; codec.bt2_record_size(2)];
            codec.encode_bt2_slot(&r, &[3, 4], &mut slot).unwrap();
            assert_eq!(slot, appended);
            for wrong in [slot.len() - 1, slot.len() + 1, 0] {
                assert!(
                    codec
                        .encode_bt2_slot(&r, &[3, 4], &mut vec![0; wrong])
                        .is_err()
                );
            }
        }
        // A size that does not fit its field is refused, not truncated.
        let too_big = ChunkRecord { size: 1 << 24, ..r };
        assert!(f.encode(&too_big, &mut Vec::new()).is_err());
        assert!(f.encode_slice(&too_big, &mut [0; 15]).is_err());
    }

    proptest::proptest! {
        /// The slice codec writes and reads exactly what the cursor codec does.
        #[test]
        fn slice_codec_matches_the_cursor_codec(
            offsets in proptest::sample::select(vec![2u8, 4, 8]),
            width in proptest::option::of(1u8..=8),
            addr in proptest::option::of(proptest::num::u64::ANY),
            size in proptest::num::u64::ANY,
            mask in proptest::num::u32::ANY,
        ) {
            let sizes = Sizes::new(offsets, 8, Addr(0)).unwrap();
            let c = match width {
                Some(w) => RecordCodec::filtered(sizes, w).unwrap(),
                None => RecordCodec::unfiltered(sizes),
            };
            let r = ChunkRecord { addr: addr.map(Addr), size: if width.is_some() { size } else { 0 }, mask: if width.is_some() { mask } else { 0 } };
            let mut by_cursor = Vec::new();
            let cursor = c.encode(&r, &mut by_cursor);
            let mut by_slice = vec![0u8; c.element_size()];
            let slice = c.encode_slice(&r, &mut by_slice);
            proptest::prop_assert_eq!(cursor.is_ok(), slice.is_ok());
            if cursor.is_ok() {
                proptest::prop_assert_eq!(&by_cursor, &by_slice);
                proptest::prop_assert_eq!(c.decode_slice(&by_slice), Some(c.decode(&by_cursor, Addr(0)).unwrap()));
            }
            proptest::prop_assert!(c.encode_slice(&r, &mut vec![0; c.element_size() + 1]).is_err());
            proptest::prop_assert_eq!(c.decode_slice(&by_slice[1..]), None);
        }
    }
}
