//! Local heap (`HEAP`, version 0): the names of an old-style group's members.
//!
//! Header (32 bytes with O = L = 8):
//!
//! | field                          | size | notes                                           |
//! |--------------------------------|------|-------------------------------------------------|
//! | signature                      | 4    | `HEAP`                                          |
//! | version                        | 1    | 0                                               |
//! | reserved                       | 3    | zero                                            |
//! | data segment size              | L    | bytes of the data segment                       |
//! | offset to head of free list    | L    | 1 (libhdf5) or all ones: no free block          |
//! | address of data segment        | O    | usually right after the header                  |
//!
//! Data segment: NUL-terminated names, each padded with NULs to a multiple of 8 bytes; offset
//! 0 holds the empty string. Each free block starts with:
//!
//! | field                     | size | notes                                   |
//! |---------------------------|------|-----------------------------------------|
//! | offset of next free block | L    | 1 (or all ones) ends the list           |
//! | size of this free block   | L    | including these two fields              |
//!
//! No checksum. Reserved bytes are ignored when decoding and written as zero.

#![deny(missing_docs)]

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};
use crate::sizes::Sizes;

/// The local heap signature.
pub const SIGNATURE: [u8; 4] = *b"HEAP";
/// The only local heap version.
pub const VERSION: u8 = 0;
/// The free-list offset libhdf5 writes for "no free block" (`H5HL_FREE_NULL`).
pub const FREE_LIST_NONE: u64 = 1;

const STRUCTURE: &str = "HEAP";
const DATA_STRUCTURE: &str = "local heap data segment";

/// Whether a stored free-list offset means "no (more) free blocks": 1, or all ones.
fn is_none(offset: u64, sizes: Sizes) -> bool {
    offset == FREE_LIST_NONE || offset == sizes.undef_length()
}

/// The local heap header.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LocalHeap {
    /// "Data Segment Size" in bytes.
    pub data_segment_size: u64,
    /// "Offset to Head of Free-list" as stored (1 or all ones: none); kept so the header
    /// re-encodes identically. See [`LocalHeap::free_list_head`].
    pub free_list_head: u64,
    /// "Address of Data Segment".
    pub data_segment_address: Addr,
}

impl LocalHeap {
    /// The offset of the first free block, or `None` when the list is empty.
    pub fn free_list_head(&self, sizes: Sizes) -> Option<u64> {
        (!is_none(self.free_list_head, sizes)).then_some(self.free_list_head)
    }

    /// Encoded length of the header: 8 + 2L + O (32 with O = L = 8).
    pub fn encoded_len(sizes: Sizes) -> usize {
        let l = usize::from(sizes.lengths());
        8usize
            .saturating_add(l.saturating_mul(2))
            .saturating_add(usize::from(sizes.offsets()))
    }

    /// Decode a header whose first byte is at `at`; bytes after it are ignored.
    pub fn decode(bytes: &[u8], at: Addr, sizes: Sizes) -> Result<Self> {
        let mut d = Decoder::new(bytes, at, sizes, STRUCTURE);
        d.signature(&SIGNATURE)?;
        let version_at = d.addr();
        let version = d.u8()?;
        if version != VERSION {
            return Err(d.bad_version(version_at, version));
        }
        d.skip(3)?;
        let data_segment_size = d.length()?;
        let head_at = d.addr();
        let free_list_head = d.length()?;
        if !is_none(free_list_head, sizes) && free_list_head >= data_segment_size {
            return Err(d.bad_value(head_at, "offset to head of free-list", free_list_head));
        }
        let data_segment_address = d.defined_offset("address of data segment")?;
        Ok(LocalHeap {
            data_segment_size,
            free_list_head,
            data_segment_address,
        })
    }

    /// Append the header to `out`.
    pub fn encode(&self, sizes: Sizes, out: &mut Vec<u8>) -> Result<()> {
        let mut e = Encoder::new(out, sizes, STRUCTURE);
        e.bytes(&SIGNATURE);
        e.u8(VERSION);
        e.zeros(3);
        e.length(self.data_segment_size, "data segment size")?;
        e.length(self.free_list_head, "offset to head of free-list")?;
        e.offset(Some(self.data_segment_address), "address of data segment")
    }
}

/// One free block of the data segment.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FreeBlock {
    /// Offset of the block in the data segment.
    pub offset: u64,
    /// Size of the block in bytes.
    pub size: u64,
}

impl FreeBlock {
    fn end(&self) -> Option<u64> {
        self.offset.checked_add(self.size)
    }
}

/// The data segment of a local heap: its bytes and its free list, in list order.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LocalHeapData {
    data: Vec<u8>,
    free: Vec<FreeBlock>,
    at: Addr,
    sizes: Sizes,
}

impl LocalHeapData {
    /// A new data segment of `size` bytes (rounded up to a multiple of 8) at `at`, entirely
    /// free, as libhdf5 creates one. A group then inserts the empty name at offset 0.
    pub fn new(size: usize, at: Addr, sizes: Sizes) -> Self {
        let size = size.checked_next_multiple_of(8).unwrap_or(size);
        let mut heap = LocalHeapData {
            data: vec![0; size],
            free: Vec::new(),
            at,
            sizes,
        };
        if size as u64 >= heap.free_header_len() {
            heap.free.push(FreeBlock {
                offset: 0,
                size: size as u64,
            });
        }
        heap.write_free_list();
        heap
    }

    /// Decode the data segment `bytes` (exactly the header's data segment size, at `at`) and
    /// walk its free list from the header's stored `free_list_head`.
    pub fn decode(bytes: &[u8], at: Addr, sizes: Sizes, free_list_head: u64) -> Result<Self> {
        let heap = LocalHeapData {
            data: bytes.to_vec(),
            free: Vec::new(),
            at,
            sizes,
        };
        let free = heap.walk_free_list(free_list_head)?;
        Ok(LocalHeapData { free, ..heap })
    }

    /// 2L: the bytes a free block's own header takes (`H5HL_SIZEOF_FREE`).
    fn free_header_len(&self) -> u64 {
        u64::from(self.sizes.lengths()).saturating_mul(2)
    }

    fn addr_of(&self, offset: u64) -> Addr {
        Addr(self.at.get().wrapping_add(offset))
    }

    fn walk_free_list(&self, head: u64) -> Result<Vec<FreeBlock>> {
        let len = self.data.len() as u64;
        // Blocks cannot overlap and each holds a 2L-byte header, so a list longer than this
        // revisits a block: a cycle in a corrupt file, reported rather than followed forever.
        let max_blocks = len.checked_div(self.free_header_len()).unwrap_or(0);
        let mut free = Vec::new();
        let mut offset = head;
        while !is_none(offset, self.sizes) {
            if free.len() as u64 >= max_blocks {
                return Err(Error::Invalid {
                    structure: DATA_STRUCTURE,
                    at: self.addr_of(offset),
                    reason: "free list is cyclic or has overlapping blocks".to_owned(),
                });
            }
            let at = self.addr_of(offset);
            let start = usize::try_from(offset)
                .ok()
                .filter(|&o| (o as u64) < len)
                .ok_or(Error::BadValue {
                    structure: DATA_STRUCTURE,
                    at,
                    field: "free block offset",
                    value: offset,
                })?;
            let mut d = Decoder::new(
                self.data.get(start..).unwrap_or(&[]),
                at,
                self.sizes,
                DATA_STRUCTURE,
            );
            let next = d.length()?;
            let size_at = d.addr();
            let size = d.length()?;
            let block = FreeBlock { offset, size };
            if block.end().is_none_or(|end| end > len) {
                return Err(d.bad_value(size_at, "free block size", size));
            }
            free.push(block);
            offset = next;
        }
        Ok(free)
    }

    /// The data segment's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }

    /// The data segment's size in bytes (the header's "Data Segment Size").
    pub fn len(&self) -> u64 {
        self.data.len() as u64
    }

    /// Whether the data segment is empty.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The free blocks in list order.
    pub fn free_list(&self) -> &[FreeBlock] {
        &self.free
    }

    /// The "Offset to Head of Free-list" for the header: the first block, or 1 for none.
    pub fn free_list_head(&self) -> u64 {
        self.free.first().map_or(FREE_LIST_NONE, |b| b.offset)
    }

    /// The NUL-terminated name at `offset`, without its NUL.
    pub fn name(&self, offset: u64) -> Result<&[u8]> {
        let at = self.addr_of(offset);
        let tail = usize::try_from(offset)
            .ok()
            .and_then(|o| self.data.get(o..))
            .filter(|t| !t.is_empty())
            .ok_or(Error::BadValue {
                structure: DATA_STRUCTURE,
                at: self.at,
                field: "name offset",
                value: offset,
            })?;
        let end = tail
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| Error::Invalid {
                structure: DATA_STRUCTURE,
                at,
                reason: format!("name at offset {offset} has no NUL terminator"),
            })?;
        Ok(tail.get(..end).unwrap_or(&[]))
    }

    /// Insert `name` (NUL-terminated, padded to a multiple of 8) and return its offset,
    /// following libhdf5's placement: the first free block that fits exactly or leaves room
    /// for a free block header; otherwise the segment grows (at least doubling), extending a
    /// free block at its end if there is one. The free list is written back into the bytes.
    /// When the segment grows, the caller must store the new [`LocalHeapData::len`] (and move
    /// the segment if it cannot grow in place).
    pub fn insert_name(&mut self, name: &[u8]) -> Result<u64> {
        let overflow = || Error::Unencodable {
            structure: DATA_STRUCTURE,
            reason: "the data segment would exceed the address space".to_owned(),
        };
        if name.contains(&0) {
            return Err(Error::Unencodable {
                structure: DATA_STRUCTURE,
                reason: "a name cannot contain a NUL byte".to_owned(),
            });
        }
        let buf_size = (name.len() as u64).checked_add(1).ok_or_else(overflow)?;
        let need = buf_size.checked_next_multiple_of(8).ok_or_else(overflow)?;
        let min_free = self.free_header_len();

        let mut placed = None;
        let mut last: Option<usize> = None;
        for i in 0..self.free.len() {
            let Some(block) = self.free.get(i).copied() else {
                break;
            };
            if block.size > need && block.size.saturating_sub(need) >= min_free {
                if let Some(b) = self.free.get_mut(i) {
                    b.offset = block.offset.saturating_add(need);
                    b.size = block.size.saturating_sub(need);
                }
                placed = Some((block.offset, None));
                break;
            } else if block.size == need {
                placed = Some((block.offset, Some(i)));
                break;
            }
            if last.is_none_or(|l| self.free.get(l).is_some_and(|b| b.offset < block.offset)) {
                last = Some(i);
            }
        }
        let offset = match placed {
            Some((offset, remove)) => {
                if let Some(i) = remove {
                    self.free.remove(i);
                }
                offset
            }
            None => self.grow(need, buf_size, last)?,
        };
        let start = usize::try_from(offset).map_err(|_| overflow())?;
        let end = start.checked_add(name.len()).ok_or_else(overflow)?;
        let slot = self.data.get_mut(start..=end).ok_or_else(overflow)?;
        let (text, nul) = slot.split_at_mut(name.len());
        text.copy_from_slice(name);
        nul.fill(0);
        self.write_free_list();
        Ok(offset)
    }

    /// Grow the segment for an object of `need` bytes (`buf_size` of them used) and return the
    /// object's offset. `last` is the free block closest to the end.
    fn grow(&mut self, need: u64, buf_size: u64, last: Option<usize>) -> Result<u64> {
        let overflow = || Error::Unencodable {
            structure: DATA_STRUCTURE,
            reason: "the data segment would exceed the address space".to_owned(),
        };
        let min_free = self.free_header_len();
        let old = self.len();
        let last_at_end = last.filter(|&i| {
            self.free
                .get(i)
                .and_then(FreeBlock::end)
                .is_some_and(|end| end == old)
        });
        let mut more = need.max(old);
        if last_at_end.is_none() && more < need.saturating_add(min_free) {
            more = need;
        }
        let new_len = old.checked_add(more).ok_or_else(overflow)?;
        let extra = more.saturating_sub(need);
        let offset = match last_at_end.and_then(|i| self.free.get_mut(i).map(|b| (i, b))) {
            Some((i, block)) => {
                let offset = block.offset;
                block.offset = block.offset.saturating_add(need);
                block.size = block.size.saturating_add(extra);
                if block.size < min_free {
                    self.free.remove(i);
                }
                offset
            }
            None => {
                if extra >= min_free {
                    self.free.insert(
                        0,
                        FreeBlock {
                            offset: old.saturating_add(need),
                            size: extra,
                        },
                    );
                }
                old
            }
        };
        let new_len = usize::try_from(new_len).map_err(|_| overflow())?;
        self.data.resize(new_len, 0);
        // Like libhdf5, clear everything after the new object so no stale bytes reach the file.
        let clear_from =
            usize::try_from(offset.saturating_add(buf_size)).map_err(|_| overflow())?;
        if let Some(tail) = self.data.get_mut(clear_from..) {
            tail.fill(0);
        }
        Ok(offset)
    }

    /// Write each free block's header (next offset, size) into the data bytes.
    fn write_free_list(&mut self) {
        let sizes = self.sizes;
        let l = sizes.lengths();
        let headers: Vec<(u64, u64, u64)> = self
            .free
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let next = self
                    .free
                    .get(i.saturating_add(1))
                    .map_or(FREE_LIST_NONE, |n| n.offset);
                (b.offset, next, b.size)
            })
            .collect();
        for (offset, next, size) in headers {
            let mut header = Vec::with_capacity(16);
            let mut e = Encoder::new(&mut header, sizes, DATA_STRUCTURE);
            // Offsets and sizes of blocks inside the segment fit an L-byte length whenever the
            // segment's own size does; a value that does not is left unwritten.
            if e.uint(next, l, "next free block").is_err()
                || e.uint(size, l, "free block size").is_err()
            {
                continue;
            }
            let start = usize::try_from(offset).ok();
            let slot = start.and_then(|s| {
                let end = s.checked_add(header.len())?;
                self.data.get_mut(s..end)
            });
            if let Some(slot) = slot {
                slot.copy_from_slice(&header);
            }
        }
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
    use proptest::prelude::*;

    const S: Sizes = Sizes::DEFAULT;

    /// The root group's local heap header at 0x2a8 of the earliest-format file (§9.5).
    #[rustfmt::skip]
    const HEADER: [u8; 32] = [
        b'H', b'E', b'A', b'P',             // signature
        0,                                  // version 0
        0, 0, 0,                            // reserved
        88, 0, 0, 0, 0, 0, 0, 0,            // data segment size 88
        16, 0, 0, 0, 0, 0, 0, 0,            // offset to head of free list 16
        0xc8, 0x02, 0, 0, 0, 0, 0, 0,       // address of data segment 0x2c8
    ];

    /// Its data segment at 0x2c8.
    #[rustfmt::skip]
    const DATA: [u8; 88] = [
        0, 0, 0, 0, 0, 0, 0, 0,             // offset 0: "" padded to 8
        b'd', 0, 0, 0, 0, 0, 0, 0,          // offset 8: "d" padded to 8
        1, 0, 0, 0, 0, 0, 0, 0,             // offset 16: free block, next = 1 (none)
        72, 0, 0, 0, 0, 0, 0, 0,            //   size 72
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // rest of the free block
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn decode_earliest_heap() {
        let h = LocalHeap::decode(&HEADER, Addr(0x2a8), S).unwrap();
        assert_eq!(
            h,
            LocalHeap {
                data_segment_size: 88,
                free_list_head: 16,
                data_segment_address: Addr(0x2c8)
            }
        );
        assert_eq!(h.free_list_head(S), Some(16));
        let mut out = Vec::new();
        h.encode(S, &mut out).unwrap();
        assert_eq!(out, HEADER);
        assert_eq!(out.len(), LocalHeap::encoded_len(S));

        let data = LocalHeapData::decode(&DATA, Addr(0x2c8), S, h.free_list_head).unwrap();
        assert_eq!(
            data.free_list(),
            &[FreeBlock {
                offset: 16,
                size: 72
            }]
        );
        assert_eq!(data.name(0).unwrap(), b"");
        assert_eq!(data.name(8).unwrap(), b"d");
        assert_eq!(data.free_list_head(), 16);
        assert_eq!(data.bytes(), DATA);
    }

    #[test]
    fn roundtrip_insert_reproduces_libhdf5() {
        let mut data = LocalHeapData::new(88, Addr(0x2c8), S);
        assert_eq!(data.insert_name(b"").unwrap(), 0);
        assert_eq!(data.insert_name(b"d").unwrap(), 8);
        assert_eq!(data.bytes(), DATA);
        assert_eq!(data.free_list_head(), 16);
    }

    #[test]
    fn roundtrip_insert_grows() {
        let mut data = LocalHeapData::new(88, Addr(0), S);
        data.insert_name(b"").unwrap();
        let mut offsets = Vec::new();
        for i in 0..20u32 {
            let name = format!("dataset_{i:03}");
            let off = data.insert_name(name.as_bytes()).unwrap();
            offsets.push((off, name));
        }
        for (off, name) in &offsets {
            assert_eq!(data.name(*off).unwrap(), name.as_bytes());
        }
        // The written free list decodes to the same blocks.
        let back = LocalHeapData::decode(data.bytes(), Addr(0), S, data.free_list_head()).unwrap();
        assert_eq!(back.free_list(), data.free_list());
        assert_eq!(data.len() % 8, 0);
        assert!(data.insert_name(b"a\0b").is_err());
    }

    #[test]
    fn rejects_bad_heaps() {
        let mut h = HEADER;
        h[4] = 1;
        assert!(matches!(
            LocalHeap::decode(&h, Addr(0), S),
            Err(Error::BadVersion { .. })
        ));
        let mut h = HEADER;
        h[16] = 88;
        assert!(matches!(
            LocalHeap::decode(&h, Addr(0), S),
            Err(Error::BadValue { .. })
        ));
        // A free list head of 1 or all ones means none.
        let mut h = HEADER;
        h[16..24].copy_from_slice(&[0xff; 8]);
        let heap = LocalHeap::decode(&h, Addr(0), S).unwrap();
        assert_eq!(heap.free_list_head(S), None);
        let mut out = Vec::new();
        heap.encode(S, &mut out).unwrap();
        assert_eq!(out, h);
        // A block pointing at itself is a cycle.
        let mut d = DATA;
        d[16] = 16;
        assert!(matches!(
            LocalHeapData::decode(&d, Addr(0), S, 16),
            Err(Error::Invalid { .. })
        ));
        // A block running past the end.
        let mut d = DATA;
        d[24] = 80;
        assert!(LocalHeapData::decode(&d, Addr(0), S, 16).is_err());
        assert!(LocalHeapData::decode(&DATA, Addr(0), S, 84).is_err());
        // Names must be inside and terminated.
        let data = LocalHeapData::decode(&DATA, Addr(0), S, 16).unwrap();
        assert!(data.name(88).is_err());
        assert!(data.name(u64::MAX).is_err());
        let data = LocalHeapData::decode(&[b'x'; 8], Addr(0), S, 1).unwrap();
        assert!(data.name(0).is_err());
    }

    #[test]
    fn rejects_truncation() {
        for n in 0..HEADER.len() {
            assert!(
                LocalHeap::decode(&HEADER[..n], Addr(0), S).is_err(),
                "prefix {n}"
            );
        }
        // The free block at 16 needs 16 bytes of header and 72 of body.
        for n in 0..DATA.len() {
            assert!(
                LocalHeapData::decode(&DATA[..n], Addr(0), S, 16).is_err(),
                "prefix {n}"
            );
        }
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..200),
            head in any::<u64>(),
            small in 0u64..200,
            name in proptest::collection::vec(1u8..=255, 0..40),
        ) {
            let _ = LocalHeap::decode(&bytes, Addr(0), S);
            for h in [head, small] {
                if let Ok(mut d) = LocalHeapData::decode(&bytes, Addr(0), S, h) {
                    let _ = d.name(small);
                    let _ = d.name(head);
                    let _ = d.insert_name(&name);
                }
            }
        }
    }
}
