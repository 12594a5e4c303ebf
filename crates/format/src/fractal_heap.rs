//! Fractal heap (`FRHP` header, `FHIB` indirect and `FHDB` direct blocks): where new-style
//! groups keep their links and objects their attributes once there are too many for the
//! object header ("dense" storage). Objects are found by heap ID; managed objects live in
//! direct blocks laid out as a doubling table (width blocks a row; rows 0 and 1 of the
//! starting block size, each later row twice the one before), rows past the largest direct
//! block size holding indirect blocks of their own.
//!
//! Header (`FRHP`, version 0): heap ID length u16, I/O filters' encoded length u16, flags u8
//! (bit 1: direct blocks checksummed), maximum managed object size u32, next huge ID (L),
//! huge-object B-tree address (O), free space (L), free-space manager address (O), managed
//! space (L), allocated managed space (L), direct-block allocation iterator (L), managed
//! objects (L), huge objects' size (L) and count (L), tiny objects' size (L) and count (L),
//! table width u16, starting block size (L), maximum direct block size (L), maximum heap size
//! (u16, bits of heap offsets), starting rows of the root indirect block u16, root block
//! address (O), current rows of the root indirect block u16 (0: the root is a direct block),
//! then with filters the filtered root direct block's size (L), its filter mask u32 and the
//! filter pipeline, and the checksum.

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};
use crate::message::FilterPipeline;
use crate::sizes::Sizes;

/// The header's signature.
pub const HEADER_SIGNATURE: &[u8; 4] = b"FRHP";
/// An indirect block's signature.
pub const INDIRECT_SIGNATURE: &[u8; 4] = b"FHIB";
/// A direct block's signature.
pub const DIRECT_SIGNATURE: &[u8; 4] = b"FHDB";

/// Flag bit: direct blocks carry a checksum.
const FLAG_CHECKSUM_DIRECT: u8 = 0x02;

/// The largest direct block libhdf5 makes (`H5HF_MAX_DIRECT_SIZE_LIMIT`, 2 GiB): a header
/// whose maximum direct block size is larger is refused.
pub const MAX_DIRECT_LIMIT: u64 = 2 << 30;

/// The largest header: fixed fields at the widest sizes, without a filter pipeline.
pub const MAX_HEADER_LEN: usize = 4 + 1 + 2 + 2 + 1 + 4 + 12 * 8 + 2 * 8 + 2 + 2 + 8 + 2 + 4;

/// A decoded fractal heap header (the fields a reader needs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Bytes of a heap ID.
    pub id_len: u16,
    /// Bytes of the encoded filter pipeline (0: direct blocks unfiltered).
    pub filters_len: u16,
    /// Whether direct blocks carry a checksum.
    pub checksum_direct: bool,
    /// The largest managed object.
    pub max_managed: u32,
    /// The huge objects' B-tree, if any.
    pub huge_btree: Option<Addr>,
    /// Doubling-table width (blocks a row), a power of two.
    pub width: u16,
    /// Bytes of the blocks of rows 0 and 1, a power of two.
    pub start_block: u64,
    /// The largest direct block, a power of two.
    pub max_direct: u64,
    /// Bits of a heap offset.
    pub max_heap_bits: u16,
    /// The root block: a direct block when `root_rows` is 0, else an indirect block.
    pub root: Option<Addr>,
    /// Rows of the root indirect block (0: the root is a direct block).
    pub root_rows: u16,
    /// Bytes of the header, checksum included.
    pub len: usize,
    /// The I/O filters of a filtered heap (direct blocks and huge objects go through them).
    pub filters: Option<Filters>,
    /// The statistics and bookkeeping a writer keeps up to date.
    pub stats: HeapStats,
}

/// A filtered heap's pipeline, and its root direct block's stored size and filter mask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filters {
    /// The pipeline, as a filter pipeline message encodes it.
    pub pipeline: FilterPipeline,
    /// Bytes of the root direct block as stored (filtered), when the root is a direct block.
    pub root_size: u64,
    /// The root direct block's filter mask (a set bit `i`: filter `i` skipped).
    pub root_mask: u32,
}

/// The header's bookkeeping fields: what a reader does not need and a writer must keep true.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeapStats {
    /// The next huge object's ID.
    pub next_huge_id: u64,
    /// Free bytes in the managed (direct) blocks.
    pub free_space: u64,
    /// The managed blocks' free-space manager, if any.
    pub free_manager: Option<Addr>,
    /// Bytes of heap space the root's rows cover.
    pub managed_space: u64,
    /// Bytes of direct blocks allocated.
    pub allocated_space: u64,
    /// Heap offset of the next direct block to allocate.
    pub iterator_offset: u64,
    /// Managed objects stored.
    pub managed_objects: u64,
    /// Bytes and count of huge objects.
    pub huge_size: u64,
    /// Count of huge objects.
    pub huge_count: u64,
    /// Bytes of tiny objects.
    pub tiny_size: u64,
    /// Count of tiny objects.
    pub tiny_count: u64,
    /// "Starting # of rows in root indirect block".
    pub start_rows: u16,
}

impl Header {
    /// Decode a header from `bytes` (at least [`Header::len`] of them) at `at`, checksum
    /// verified and the table's geometry checked.
    pub fn decode(bytes: &[u8], at: Addr, sizes: Sizes) -> Result<Header> {
        let mut d = Decoder::new(bytes, at, sizes, "fractal heap header");
        d.signature(HEADER_SIGNATURE)?;
        let v_at = d.addr();
        let version = d.u8()?;
        if version != 0 {
            return Err(d.bad_version(v_at, version));
        }
        let id_len = d.u16()?;
        let filters_len = d.u16()?;
        let flags = d.u8()?;
        let max_managed = d.u32()?;
        let mut stats = HeapStats {
            next_huge_id: d.length()?,
            ..HeapStats::default()
        };
        let huge_btree = d.offset()?;
        stats.free_space = d.length()?;
        stats.free_manager = d.offset()?;
        stats.managed_space = d.length()?;
        stats.allocated_space = d.length()?;
        stats.iterator_offset = d.length()?;
        stats.managed_objects = d.length()?;
        stats.huge_size = d.length()?;
        stats.huge_count = d.length()?;
        stats.tiny_size = d.length()?;
        stats.tiny_count = d.length()?;
        let w_at = d.addr();
        let width = d.u16()?;
        let start_block = d.length()?;
        let max_direct = d.length()?;
        let bits_at = d.addr();
        let max_heap_bits = d.u16()?;
        stats.start_rows = d.u16()?;
        let root = d.offset()?;
        let rows_at = d.addr();
        let root_rows = d.u16()?;
        // A filtered heap: the root direct block's stored size and mask, then the pipeline
        // (decoded once the checksum is verified).
        let filtered = if filters_len > 0 {
            let root_size = d.length()?;
            let root_mask = d.u32()?;
            let p_at = d.addr();
            let pipeline = d.bytes(usize::from(filters_len))?;
            Some((root_size, root_mask, p_at, pipeline))
        } else {
            None
        };
        let covered = d.position();
        d.verify_checksum(covered)?;
        let filters = match filtered {
            Some((root_size, root_mask, p_at, raw)) => {
                let mut p = Decoder::new(raw, p_at, sizes, "fractal heap I/O filters");
                Some(Filters {
                    pipeline: FilterPipeline::decode(&mut p)?,
                    root_size,
                    root_mask,
                })
            }
            None => None,
        };
        if width == 0 || !width.is_power_of_two() || width > 4096 {
            return Err(d.bad_value(w_at, "table width", u64::from(width)));
        }
        // libhdf5 makes no direct block over 2 GiB (`H5HF_MAX_DIRECT_SIZE_LIMIT`): a larger
        // maximum would let the file size a block a reader holds in memory.
        if !start_block.is_power_of_two()
            || !max_direct.is_power_of_two()
            || max_direct < start_block
            || max_direct > MAX_DIRECT_LIMIT
        {
            return Err(d.invalid(
                w_at,
                format!("block sizes {start_block} (start) and {max_direct} (largest direct)"),
            ));
        }
        if max_heap_bits == 0 || max_heap_bits > 64 {
            return Err(d.bad_value(bits_at, "maximum heap size", u64::from(max_heap_bits)));
        }
        let h = Header {
            id_len,
            filters_len,
            checksum_direct: flags & FLAG_CHECKSUM_DIRECT != 0,
            max_managed,
            huge_btree,
            width,
            start_block,
            max_direct,
            max_heap_bits,
            root,
            root_rows,
            len: covered.saturating_add(4),
            filters,
            stats,
        };
        if u32::from(root_rows) > h.max_rows() {
            return Err(d.bad_value(
                rows_at,
                "rows of the root indirect block",
                u64::from(root_rows),
            ));
        }
        Ok(h)
    }

    /// Bytes of a heap offset (in heap IDs and block headers).
    pub fn offset_bytes(&self) -> usize {
        usize::from(self.max_heap_bits.div_ceil(8))
    }

    /// Bytes of a managed object's length in its heap ID: enough for the smaller of the
    /// largest direct block and the largest managed object.
    pub fn length_bytes(&self) -> usize {
        let limit = self.max_direct.min(u64::from(self.max_managed));
        // Bytes needed to encode `limit`: floor(log2) / 8 + 1.
        (limit.max(1).ilog2() / 8).saturating_add(1) as usize
    }

    /// Rows of the table held in direct blocks.
    pub fn direct_rows(&self) -> u32 {
        // Rows 0 and 1 are start-sized; row r >= 1 is start << (r - 1).
        self.max_direct
            .ilog2()
            .saturating_sub(self.start_block.ilog2())
            .saturating_add(2)
    }

    /// The most rows any indirect block can have (heap offsets are `max_heap_bits` wide).
    pub fn max_rows(&self) -> u32 {
        let width_bits = u32::from(self.width).ilog2();
        u32::from(self.max_heap_bits)
            .saturating_sub(self.start_block.ilog2())
            .saturating_sub(width_bits)
            .saturating_add(2)
    }

    /// Bytes of each block of `row`.
    pub fn row_block_size(&self, row: u32) -> u64 {
        if row == 0 {
            self.start_block
        } else {
            self.start_block
                .checked_shl(row.saturating_sub(1))
                .unwrap_or(u64::MAX)
        }
    }

    /// Rows of an indirect block that spans `size` bytes of heap (a child's size is its
    /// row's block size times the width... as libhdf5 sizes it: the rows whose blocks add up
    /// to `size`).
    pub fn rows_for_size(&self, size: u64) -> u32 {
        let w = u64::from(self.width);
        let mut total = 0u64;
        let mut rows = 0u32;
        while total < size && rows < self.max_rows() {
            total = total.saturating_add(self.row_block_size(rows).saturating_mul(w));
            rows = rows.saturating_add(1);
        }
        rows
    }

    /// Bits of the heap span of the table's first row (`start_block` times `width`).
    fn first_row_bits(&self) -> u32 {
        self.start_block
            .max(1)
            .ilog2()
            .saturating_add(u32::from(self.width.max(1)).ilog2())
    }

    /// The most rows the root indirect block grows to, as libhdf5 bounds it: the rows whose
    /// blocks span the `max_heap_bits`-bit heap.
    pub fn max_root_rows(&self) -> u32 {
        u32::from(self.max_heap_bits)
            .saturating_sub(self.first_row_bits())
            .saturating_add(1)
    }

    /// Heap offset of the first block of `row`, from the start of its indirect block: rows 0
    /// and 1 span `width` starting blocks each, and each later row as much as all before it.
    pub fn row_offset(&self, row: u32) -> u64 {
        if row == 0 {
            0
        } else {
            self.start_block
                .saturating_mul(u64::from(self.width))
                .checked_shl(row.saturating_sub(1))
                .unwrap_or(u64::MAX)
        }
    }

    /// Rows of a child indirect block in row `row` (`row` at or past [`direct_rows`]): the
    /// rows whose blocks span that row's block size.
    ///
    /// [`direct_rows`]: Self::direct_rows
    pub fn child_rows(&self, row: u32) -> u32 {
        self.row_block_size(row)
            .max(1)
            .ilog2()
            .saturating_sub(self.first_row_bits())
            .saturating_add(1)
    }

    /// The row whose blocks are `size` bytes (a power of two, at least the starting size).
    pub fn size_to_row(&self, size: u64) -> u32 {
        if size <= self.start_block {
            0
        } else {
            size.ilog2()
                .saturating_sub(self.start_block.max(1).ilog2())
                .saturating_add(1)
        }
    }

    /// The smallest direct block libhdf5 makes for a new object of `len` bytes: the starting
    /// size, or the power of two above `len`, doubled when the block's header leaves too
    /// little room.
    pub fn min_block_size(&self, sizes: Sizes, len: u64) -> u64 {
        let size = if len < self.start_block {
            self.start_block
        } else {
            1u64.checked_shl(len.max(1).ilog2().saturating_add(1))
                .unwrap_or(u64::MAX)
        };
        if size < (self.direct_header_len(sizes) as u64).saturating_add(len) {
            size.saturating_mul(2)
        } else {
            size
        }
    }

    /// Free bytes of one entry of each row `0..rows` with all its direct blocks made and
    /// empty: a direct block's size less its header, an indirect block's the sum over the
    /// entries of its rows. libhdf5 counts this space free as soon as a root row covers it.
    pub fn entry_free(&self, sizes: Sizes, rows: u32) -> Vec<u64> {
        let w = u64::from(self.width);
        let mut free: Vec<u64> = Vec::new();
        for row in 0..rows {
            let f = if row < self.direct_rows() {
                self.row_block_size(row)
                    .saturating_sub(self.direct_header_len(sizes) as u64)
            } else {
                let child = self.child_rows(row) as usize;
                free.iter()
                    .take(child)
                    .fold(0u64, |acc, f| acc.saturating_add(f.saturating_mul(w)))
            };
            free.push(f);
        }
        free
    }

    /// Bytes of a direct block's header (before its objects).
    pub fn direct_header_len(&self, sizes: Sizes) -> usize {
        let sum =
            usize::from(sizes.offsets()).saturating_add(self.offset_bytes().saturating_add(5));
        if self.checksum_direct {
            sum.saturating_add(4)
        } else {
            sum
        }
    }

    /// Bytes of an indirect block of `rows` rows.
    pub fn indirect_len(&self, sizes: Sizes, rows: u32) -> usize {
        let w = usize::from(self.width);
        let direct = (rows.min(self.direct_rows()) as usize).saturating_mul(w);
        let indirect = (rows.saturating_sub(self.direct_rows()) as usize).saturating_mul(w);
        let o = usize::from(sizes.offsets());
        let per_direct = if self.filters_len > 0 {
            o.saturating_add(usize::from(sizes.lengths()))
                .saturating_add(4)
        } else {
            o
        };
        (o.saturating_add(5).saturating_add(self.offset_bytes()))
            .saturating_add(direct.saturating_mul(per_direct))
            .saturating_add(indirect.saturating_mul(o))
            .saturating_add(4)
    }
}

impl Header {
    /// Encode the header (unfiltered heaps only), checksum included.
    pub fn encode(&self, sizes: Sizes) -> Result<Vec<u8>> {
        if self.filters_len > 0 {
            return Err(Error::Unencodable {
                structure: "fractal heap header",
                reason: "filtered heaps are not written".into(),
            });
        }
        let mut out = Vec::with_capacity(MAX_HEADER_LEN);
        let mut e = Encoder::new(&mut out, sizes, "fractal heap header");
        let st = &self.stats;
        e.bytes(HEADER_SIGNATURE);
        e.u8(0);
        e.u16(self.id_len);
        e.u16(0);
        e.u8(if self.checksum_direct {
            FLAG_CHECKSUM_DIRECT
        } else {
            0
        });
        e.u32(self.max_managed);
        e.length(st.next_huge_id, "next huge object ID")?;
        e.offset(self.huge_btree, "huge objects B-tree")?;
        e.length(st.free_space, "free space")?;
        e.offset(st.free_manager, "free-space manager")?;
        for (v, field) in [
            (st.managed_space, "managed space"),
            (st.allocated_space, "allocated managed space"),
            (st.iterator_offset, "direct block allocation iterator"),
            (st.managed_objects, "managed objects"),
            (st.huge_size, "huge objects' size"),
            (st.huge_count, "huge objects"),
            (st.tiny_size, "tiny objects' size"),
            (st.tiny_count, "tiny objects"),
        ] {
            e.length(v, field)?;
        }
        e.u16(self.width);
        e.length(self.start_block, "starting block size")?;
        e.length(self.max_direct, "maximum direct block size")?;
        e.u16(self.max_heap_bits);
        e.u16(st.start_rows);
        e.offset(self.root, "root block")?;
        e.u16(self.root_rows);
        e.checksum();
        Ok(out)
    }

    /// A managed object's heap ID (`id_len` bytes): version 0, type managed, its offset and
    /// length.
    pub fn managed_id(&self, offset: u64, len: u64) -> Vec<u8> {
        let mut id = vec![0u8];
        id.extend_from_slice(
            offset
                .to_le_bytes()
                .get(..self.offset_bytes())
                .unwrap_or_default(),
        );
        id.extend_from_slice(
            len.to_le_bytes()
                .get(..self.length_bytes())
                .unwrap_or_default(),
        );
        id.resize(usize::from(self.id_len), 0);
        id
    }

    /// The first bytes of a direct block at heap offset `block_offset`
    /// ([`direct_header_len`](Self::direct_header_len) of them; a zero checksum field, which
    /// [`seal_direct`](Self::seal_direct) fills).
    pub fn direct_prefix(&self, sizes: Sizes, heap: Addr, block_offset: u64) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut e = Encoder::new(&mut out, sizes, "fractal heap direct block");
        e.bytes(DIRECT_SIGNATURE);
        e.u8(0);
        e.offset(Some(heap), "heap header address")?;
        e.uint(block_offset, self.offset_bytes() as u8, "block offset")?;
        if self.checksum_direct {
            e.u32(0);
        }
        Ok(out)
    }

    /// Fill a whole direct block's checksum field (the block's lookup3 with the field zeroed).
    pub fn seal_direct(&self, sizes: Sizes, block: &mut [u8]) {
        if !self.checksum_direct {
            return;
        }
        let at = self.direct_header_len(sizes).saturating_sub(4);
        if let Some(field) = block.get_mut(at..at.saturating_add(4)) {
            field.fill(0);
        }
        let c = crate::checksum::lookup3(block);
        if let Some(field) = block.get_mut(at..at.saturating_add(4)) {
            field.copy_from_slice(&c.to_le_bytes());
        }
    }

    /// An indirect block of `children.len() / width` rows at heap offset `block_offset`
    /// (unfiltered), checksum included.
    pub fn encode_indirect(
        &self,
        sizes: Sizes,
        heap: Addr,
        block_offset: u64,
        children: &[Option<Addr>],
    ) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut e = Encoder::new(&mut out, sizes, "fractal heap indirect block");
        e.bytes(INDIRECT_SIGNATURE);
        e.u8(0);
        e.offset(Some(heap), "heap header address")?;
        e.uint(block_offset, self.offset_bytes() as u8, "block offset")?;
        for c in children {
            e.offset(*c, "child block")?;
        }
        e.checksum();
        Ok(out)
    }
}

/// A decoded heap ID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeapId {
    /// A managed object: its offset in the heap and its length.
    Managed {
        /// Offset in the heap's managed space.
        offset: u64,
        /// Bytes.
        len: u64,
    },
    /// A tiny object, stored in the ID itself.
    Tiny(Vec<u8>),
    /// A huge object (stored outside the heap's blocks).
    Huge(HugeId),
}

/// How a huge object's heap ID finds it. libhdf5 stores the object's place in the ID itself
/// when the ID is long enough for it ("direct"), else a key into the heap's huge-object
/// B-tree (types 1 and 2; types 3 and 4 index the direct ones).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HugeId {
    /// The key of the object's record in the huge-object B-tree (type 1, or 2 when filtered).
    Indirect(u64),
    /// The object's place, in the ID.
    Direct(HugeRecord),
}

/// Where a huge object is: a record of the huge-object B-tree, or a direct heap ID's body.
///
/// | type | fields                                                          |
/// |------|-----------------------------------------------------------------|
/// | 1    | address (O), stored length (L), ID (L)                          |
/// | 2    | address (O), stored length (L), filter mask u32, size (L), ID (L) |
/// | 3    | address (O), stored length (L)                                  |
/// | 4    | address (O), stored length (L), filter mask u32, size (L)       |
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HugeRecord {
    /// Where the object's (possibly filtered) bytes are.
    pub addr: Addr,
    /// Bytes stored in the file.
    pub len: u64,
    /// A filtered heap's object: its filter mask and its size once unfiltered.
    pub filtered: Option<(u32, u64)>,
    /// Types 1 and 2: the object's ID (the key heap IDs name it by).
    pub id: Option<u64>,
}

impl HugeRecord {
    /// Bytes of a record of B-tree `tree_type` (1 to 4).
    pub fn record_len(tree_type: u8, sizes: Sizes) -> usize {
        let (o, l) = (usize::from(sizes.offsets()), usize::from(sizes.lengths()));
        let base = o.saturating_add(l);
        let filtered = l.saturating_add(4);
        match tree_type {
            1 => base.saturating_add(l),
            2 => base.saturating_add(filtered).saturating_add(l),
            3 => base,
            _ => base.saturating_add(filtered),
        }
    }

    /// Decode a record of B-tree `tree_type` (1 to 4) at `at`.
    pub fn decode(raw: &[u8], at: Addr, sizes: Sizes, tree_type: u8) -> Result<HugeRecord> {
        let mut d = Decoder::new(raw, at, sizes, "huge object record");
        let addr = d.defined_offset("huge object address")?;
        let len = d.length()?;
        let filtered = if matches!(tree_type, 2 | 4) {
            Some((d.u32()?, d.length()?))
        } else {
            None
        };
        let id = if matches!(tree_type, 1 | 2) {
            Some(d.length()?)
        } else {
            None
        };
        Ok(HugeRecord {
            addr,
            len,
            filtered,
            id,
        })
    }

    /// Encode a record of B-tree `tree_type` (1 to 4).
    pub fn encode(&self, sizes: Sizes, tree_type: u8, out: &mut Vec<u8>) -> Result<()> {
        let mut e = Encoder::new(out, sizes, "huge object record");
        e.offset(Some(self.addr), "huge object address")?;
        e.length(self.len, "huge object length")?;
        if matches!(tree_type, 2 | 4) {
            let (mask, size) = self.filtered.unwrap_or_default();
            e.u32(mask);
            e.length(size, "huge object size")?;
        }
        if matches!(tree_type, 1 | 2) {
            e.length(self.id.unwrap_or_default(), "huge object ID")?;
        }
        Ok(())
    }
}

impl Header {
    /// Whether huge objects' heap IDs hold their place (else a key of the huge-object
    /// B-tree): when the ID has room for it after its first byte, as libhdf5 decides.
    pub fn huge_ids_direct(&self, sizes: Sizes) -> bool {
        let room = usize::from(self.id_len).saturating_sub(1);
        let (o, l) = (usize::from(sizes.offsets()), usize::from(sizes.lengths()));
        let needed = if self.filters_len > 0 {
            o.saturating_add(l).saturating_add(4).saturating_add(l)
        } else {
            o.saturating_add(l)
        };
        room >= needed
    }

    /// The type of the heap's huge-object B-tree (1 to 4).
    pub fn huge_tree_type(&self, sizes: Sizes) -> u8 {
        match (self.huge_ids_direct(sizes), self.filters_len > 0) {
            (false, false) => 1,
            (false, true) => 2,
            (true, false) => 3,
            (true, true) => 4,
        }
    }
}

impl HeapId {
    /// Decode a heap ID of `h` (a heap of a file of `sizes`).
    pub fn decode(id: &[u8], h: &Header, sizes: Sizes, at: Addr) -> Result<HeapId> {
        let bad = |reason: String| Error::Invalid {
            structure: "fractal heap ID",
            at,
            reason,
        };
        let (&first, rest) = id.split_first().ok_or_else(|| bad("empty".into()))?;
        if first >> 6 != 0 {
            return Err(bad(format!("version {}", first >> 6)));
        }
        match (first >> 4) & 0x3 {
            0 => {
                let (o, l) = (h.offset_bytes(), h.length_bytes());
                let off = rest
                    .get(..o)
                    .ok_or_else(|| bad("short managed ID".into()))?;
                let len = rest
                    .get(o..o.saturating_add(l))
                    .ok_or_else(|| bad("short managed ID".into()))?;
                Ok(HeapId::Managed {
                    offset: le(off),
                    len: le(len),
                })
            }
            1 if h.huge_ids_direct(sizes) => {
                let tree_type = h.huge_tree_type(sizes);
                let body = rest
                    .get(..HugeRecord::record_len(tree_type, sizes))
                    .ok_or_else(|| bad("short huge object ID".into()))?;
                Ok(HeapId::Huge(HugeId::Direct(HugeRecord::decode(
                    body, at, sizes, tree_type,
                )?)))
            }
            1 => {
                // The key: the ID's bytes after the first, up to 8 of them.
                let n = rest.len().min(8);
                Ok(HeapId::Huge(HugeId::Indirect(le(rest
                    .get(..n)
                    .unwrap_or_default()))))
            }
            2 => {
                // IDs up to 18 bytes keep the length (less one) in the first byte's low bits;
                // longer ones in the next byte too.
                let (len, data) = if id.len() <= 18 {
                    (usize::from(first & 0x0f).saturating_add(1), rest)
                } else {
                    let (&second, data) = rest
                        .split_first()
                        .ok_or_else(|| bad("short tiny ID".into()))?;
                    (
                        (usize::from(first & 0x0f) << 8 | usize::from(second)).saturating_add(1),
                        data,
                    )
                };
                data.get(..len)
                    .map(|d| HeapId::Tiny(d.to_vec()))
                    .ok_or_else(|| {
                        bad(format!(
                            "tiny object of {len} bytes in a {}-byte ID",
                            id.len()
                        ))
                    })
            }
            t => Err(bad(format!("type {t}"))),
        }
    }
}

/// A little-endian integer of up to 8 bytes.
fn le(bytes: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    for (d, s) in b.iter_mut().zip(bytes) {
        *d = *s;
    }
    u64::from_le_bytes(b)
}

/// One child of an indirect block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Child {
    /// Where it is (`None`: not allocated yet).
    pub addr: Option<Addr>,
    /// Its row in the block's table.
    pub row: u32,
    /// Its column.
    pub col: u32,
    /// A direct block of a filtered heap: its stored (filtered) size and filter mask.
    pub filtered: Option<(u64, u32)>,
}

/// A decoded indirect block: its heap offset and its children, row by row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndirectBlock {
    /// The heap offset of the block's first byte of managed space.
    pub block_offset: u64,
    /// Children, `width` a row; rows below [`Header::direct_rows`] are direct blocks.
    pub children: Vec<Child>,
}

impl IndirectBlock {
    /// Decode an indirect block of `rows` rows ([`Header::indirect_len`] bytes) at `at`,
    /// checksum verified.
    pub fn decode(
        bytes: &[u8],
        at: Addr,
        sizes: Sizes,
        h: &Header,
        heap: Addr,
        rows: u32,
    ) -> Result<IndirectBlock> {
        let len = h.indirect_len(sizes, rows);
        let bytes = bytes.get(..len).ok_or(Error::Truncated {
            structure: "fractal heap indirect block",
            at,
            needed: len as u64,
            available: bytes.len() as u64,
        })?;
        let mut d = Decoder::new(bytes, at, sizes, "fractal heap indirect block");
        let block_offset = block_prefix(&mut d, INDIRECT_SIGNATURE, Some(len), h, heap)?;
        let mut children = Vec::new();
        for row in 0..rows {
            for col in 0..u32::from(h.width) {
                let addr = d.offset()?;
                let filtered = if row < h.direct_rows() && h.filters_len > 0 {
                    Some((d.length()?, d.u32()?))
                } else {
                    None
                };
                children.push(Child {
                    addr,
                    row,
                    col,
                    filtered,
                });
            }
        }
        Ok(IndirectBlock {
            block_offset,
            children,
        })
    }
}

/// The fields a block starts with: signature, version 0, the heap's header address, the
/// block's heap offset (returned); with `checksummed`, the checksum after that many bytes is
/// verified first.
fn block_prefix(
    d: &mut Decoder<'_>,
    signature: &'static [u8; 4],
    checksummed: Option<usize>,
    h: &Header,
    heap: Addr,
) -> Result<u64> {
    d.signature(signature)?;
    if let Some(len) = checksummed {
        d.verify_checksum(len.saturating_sub(4))?;
    }
    let v_at = d.addr();
    let version = d.u8()?;
    if version != 0 {
        return Err(d.bad_version(v_at, version));
    }
    let h_at = d.addr();
    if d.offset()? != Some(heap) {
        return Err(d.invalid(h_at, format!("belongs to another heap than {heap}")));
    }
    d.uint(h.offset_bytes() as u8)
}

/// Check a direct block's header (the first [`Header::direct_header_len`] bytes of `block`,
/// all of it when checksummed): signature, version, heap, and the block's heap offset, which
/// must be `offset`.
pub fn check_direct(
    block: &[u8],
    at: Addr,
    sizes: Sizes,
    h: &Header,
    heap: Addr,
    offset: u64,
) -> Result<()> {
    let mut d = Decoder::new(block, at, sizes, "fractal heap direct block");
    let o_at = Addr(
        at.get()
            .saturating_add(5)
            .saturating_add(u64::from(sizes.offsets())),
    );
    let got = block_prefix(&mut d, DIRECT_SIGNATURE, None, h, heap)?;
    if got != offset {
        return Err(d.invalid(o_at, format!("block offset {got}, the table says {offset}")));
    }
    if h.checksum_direct {
        // The checksum covers the whole block with its own field zeroed.
        let c_at = d.position();
        let stored = d.u32()?;
        let mut copy = block.to_vec();
        if let Some(field) = copy.get_mut(c_at..c_at.saturating_add(4)) {
            field.fill(0);
        }
        let computed = crate::checksum::lookup3(&copy);
        if computed != stored {
            return Err(Error::ChecksumMismatch {
                structure: "fractal heap direct block",
                at,
                stored,
                computed,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            id_len: 7,
            filters_len: 0,
            checksum_direct: true,
            max_managed: 4096,
            huge_btree: None,
            width: 4,
            start_block: 512,
            max_direct: 65536,
            max_heap_bits: 32,
            root: Some(Addr(4096)),
            root_rows: 0,
            len: 0,
            filters: None,
            stats: HeapStats::default(),
        }
    }

    #[test]
    fn the_doubling_table_and_heap_ids_follow_the_header() {
        let h = header();
        assert_eq!(h.offset_bytes(), 4);
        // min(64 KiB, 4096) = 4096 needs 2 bytes.
        assert_eq!(h.length_bytes(), 2);
        // Rows 0 and 1 of 512, then 1 KiB .. 64 KiB: 9 direct rows.
        assert_eq!(h.direct_rows(), 9);
        assert_eq!(
            (0..4).map(|r| h.row_block_size(r)).collect::<Vec<_>>(),
            [512, 512, 1024, 2048]
        );
        // A child indirect block of a row of 128 KiB blocks spans rows summing to it.
        assert_eq!(h.rows_for_size(4 * 512), 1);
        assert_eq!(h.rows_for_size(4 * 1024), 2);
        let managed =
            HeapId::decode(&[0x00, 0x10, 0, 0, 0, 0x2a, 0], &h, Sizes::DEFAULT, Addr(0)).unwrap();
        assert_eq!(
            managed,
            HeapId::Managed {
                offset: 16,
                len: 42
            }
        );
        let tiny = HeapId::decode(&[0x22, 1, 2, 3, 0, 0, 0], &h, Sizes::DEFAULT, Addr(0)).unwrap();
        assert_eq!(tiny, HeapId::Tiny(vec![1, 2, 3]));
        assert_eq!(
            HeapId::decode(&[0x10, 5, 1, 0, 0, 0, 0], &h, Sizes::DEFAULT, Addr(0)).unwrap(),
            HeapId::Huge(HugeId::Indirect(261))
        );
        // Bad versions and types, and IDs too short for what they say: errors.
        for bad in [
            &[0x40u8, 0, 0][..],
            &[0x30, 0],
            &[0x00, 1, 2],
            &[0x2f, 1, 2],
            &[],
        ] {
            assert!(
                HeapId::decode(bad, &h, Sizes::DEFAULT, Addr(0)).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn decode_huge_ids_of_each_kind() {
        let sizes = Sizes::DEFAULT;
        let mut h = header();
        // 7-byte IDs cannot hold an address and a length: a B-tree key (type 1).
        assert_eq!(h.huge_tree_type(sizes), 1);
        // With filters, type 2.
        h.filters_len = 20;
        assert_eq!(h.huge_tree_type(sizes), 2);
        // 17-byte IDs hold address and length (type 3), 29-byte ones with filters mask and
        // size (type 4); a filtered heap of 17-byte IDs stays indirect.
        h.id_len = 17;
        assert_eq!(h.huge_tree_type(sizes), 2);
        h.filters_len = 0;
        assert_eq!(h.huge_tree_type(sizes), 3);
        #[rustfmt::skip]
        let direct = [
            0x10,                                   // version 0, type huge
            0x00, 0x20, 0, 0, 0, 0, 0, 0,           // address 0x2000
            0x10, 0x27, 0, 0, 0, 0, 0, 0,           // stored length 10,000
        ];
        let want = HugeRecord {
            addr: Addr(0x2000),
            len: 10_000,
            filtered: None,
            id: None,
        };
        assert_eq!(
            HeapId::decode(&direct, &h, sizes, Addr(0)).unwrap(),
            HeapId::Huge(HugeId::Direct(want.clone()))
        );
        h.id_len = 29;
        h.filters_len = 20;
        assert_eq!(h.huge_tree_type(sizes), 4);
        let mut filtered = direct.to_vec();
        filtered.extend([1, 0, 0, 0]); // filter mask: filter 0 skipped
        filtered.extend(20_000u64.to_le_bytes()); // size unfiltered
        assert_eq!(
            HeapId::decode(&filtered, &h, sizes, Addr(0)).unwrap(),
            HeapId::Huge(HugeId::Direct(HugeRecord {
                filtered: Some((1, 20_000)),
                ..want
            }))
        );
        // Each prefix of a direct ID is an error.
        for n in 1..filtered.len() {
            assert!(
                HeapId::decode(&filtered[..n], &h, sizes, Addr(0)).is_err(),
                "{n}"
            );
        }
    }

    #[test]
    fn roundtrip_huge_records() {
        let sizes = Sizes::DEFAULT;
        for tree_type in 1..=4u8 {
            let rec = HugeRecord {
                addr: Addr(4096),
                len: 800_000,
                filtered: matches!(tree_type, 2 | 4).then_some((0, 900_000)),
                id: matches!(tree_type, 1 | 2).then_some(3),
            };
            let mut raw = Vec::new();
            rec.encode(sizes, tree_type, &mut raw).unwrap();
            assert_eq!(raw.len(), HugeRecord::record_len(tree_type, sizes));
            assert_eq!(
                HugeRecord::decode(&raw, Addr(0), sizes, tree_type).unwrap(),
                rec
            );
            for n in 0..raw.len() {
                assert!(HugeRecord::decode(&raw[..n], Addr(0), sizes, tree_type).is_err());
            }
        }
    }

    #[test]
    fn the_table_grows_as_libhdf5_grows_it() {
        let h = header();
        let sizes = Sizes::DEFAULT;
        // 32-bit offsets over a first row of 4 x 512 bytes: 22 root rows at most.
        assert_eq!(h.max_root_rows(), 22);
        assert_eq!(
            (0..4).map(|r| h.row_offset(r)).collect::<Vec<_>>(),
            [0, 2048, 4096, 8192]
        );
        // A root of 16 rows spans 64 MiB (libhdf5's managed space for such a heap).
        assert_eq!(h.row_offset(16), 64 << 20);
        // Child indirect blocks: rows 9, 10 and 11 (128, 256 and 512 KiB blocks) hold only
        // direct rows; row 12's (1 MiB) hold a row of indirect blocks of their own.
        assert_eq!(
            (9..13).map(|r| h.child_rows(r)).collect::<Vec<_>>(),
            [7, 8, 9, 10]
        );
        assert_eq!(h.size_to_row(512), 0);
        assert_eq!(h.size_to_row(1024), 2);
        assert_eq!(h.size_to_row(65536), 8);
        // Direct block header: 21 bytes with 8-byte addresses and 4-byte heap offsets.
        assert_eq!(h.min_block_size(sizes, 24), 512);
        assert_eq!(h.min_block_size(sizes, 491), 512);
        assert_eq!(h.min_block_size(sizes, 492), 1024);
        assert_eq!(h.min_block_size(sizes, 1024), 2048);
        assert_eq!(h.min_block_size(sizes, 2040), 4096);
        // libhdf5's free space of a 16-row root holding 20,000 links of 24 bytes.
        let free = h.entry_free(sizes, 16);
        assert_eq!(free[0], 491);
        let covered: u64 = free.iter().map(|f| f * 4).sum();
        assert_eq!(covered - 20_000 * 24, 66_464_140);
    }

    proptest::proptest! {
        /// Any bytes: a header, an indirect block or a direct block decodes or is an error;
        /// nothing panics and no length read from the bytes sizes an allocation.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let sizes = Sizes::DEFAULT;
            let _ = Header::decode(&bytes, Addr(0), sizes);
            let mut signed = b"FRHP".to_vec();
            signed.extend(&bytes);
            let _ = Header::decode(&signed, Addr(0), sizes);
            let h = header();
            let _ = IndirectBlock::decode(&bytes, Addr(0), sizes, &h, Addr(0), 3);
            let _ = check_direct(&bytes, Addr(0), sizes, &h, Addr(0), 0);
            let _ = HeapId::decode(&bytes, &h, Sizes::DEFAULT, Addr(0));
        }
    }

    #[test]
    fn written_headers_and_blocks_read_back() {
        let sizes = Sizes::DEFAULT;
        let mut h = header();
        h.root_rows = 9;
        h.stats = HeapStats {
            free_space: 100,
            managed_space: 524_288,
            allocated_space: 1024,
            iterator_offset: 1024,
            managed_objects: 3,
            start_rows: 1,
            ..HeapStats::default()
        };
        let bytes = h.encode(sizes).unwrap();
        let back = Header::decode(&bytes, Addr(64), sizes).unwrap();
        assert_eq!(
            back,
            Header {
                len: bytes.len(),
                ..h.clone()
            }
        );
        // A direct block: its prefix, sealed, passes the reader's check.
        let mut block = h.direct_prefix(sizes, Addr(64), 512).unwrap();
        assert_eq!(block.len(), h.direct_header_len(sizes));
        block.resize(512, 0);
        block[40] = 7;
        h.seal_direct(sizes, &mut block);
        check_direct(&block, Addr(9000), sizes, &h, Addr(64), 512).unwrap();
        block[41] = 1;
        assert!(check_direct(&block, Addr(9000), sizes, &h, Addr(64), 512).is_err());
        // An indirect block of 9 rows, two children.
        let mut children = vec![None; 36];
        children[0] = Some(Addr(4096));
        children[1] = Some(Addr(8192));
        let ib = h.encode_indirect(sizes, Addr(64), 0, &children).unwrap();
        assert_eq!(ib.len(), h.indirect_len(sizes, 9));
        let back = IndirectBlock::decode(&ib, Addr(5000), sizes, &h, Addr(64), 9).unwrap();
        assert_eq!(back.children[1].addr, Some(Addr(8192)));
        assert_eq!(back.children[2].addr, None);
        // A managed ID decodes to its offset and length.
        let id = h.managed_id(1234, 56);
        assert_eq!(id.len(), 7);
        assert_eq!(
            HeapId::decode(&id, &h, sizes, Addr(0)).unwrap(),
            HeapId::Managed {
                offset: 1234,
                len: 56
            }
        );
    }
}
