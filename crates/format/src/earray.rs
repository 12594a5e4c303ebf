//! Extensible array: header (`EAHD`), index block (`EAIB`), super blocks (`EASB`), data blocks
//! (`EADB`) and data block pages, with the geometry derived from the creation parameters.
//!
//! libhdf5 indexes the chunks of a dataset with exactly one unlimited dimension (latest format)
//! with an extensible array. Element bytes are opaque here: the element class (an unfiltered
//! chunk address, or a filtered chunk record) belongs to the caller.
//!
//! Header (`sa` = size of offsets, `ss` = size of lengths):
//!
//! | off    | size | field                                                  |
//! |--------|------|--------------------------------------------------------|
//! | 0      | 4    | signature `EAHD`                                       |
//! | 4      | 1    | version (0)                                            |
//! | 5      | 1    | client id (0 unfiltered chunks, 1 filtered)            |
//! | 6      | 1    | element size                                           |
//! | 7      | 1    | max number of elements bits                            |
//! | 8      | 1    | index block elements                                   |
//! | 9      | 1    | data block min elements (note: layout message order differs) |
//! | 10     | 1    | super block min data pointers                          |
//! | 11     | 1    | max data block page elements bits                      |
//! | 12     | 6×ss | statistics: super blocks, super block bytes, data blocks, data block bytes, max index set, elements realized |
//! | 12+6ss | sa   | index block address                                    |
//! | …      | 4    | checksum                                               |
//!
//! Index block: `EAIB`, version, client id, header address (sa), the index block elements,
//! data block addresses (sa each), super block addresses (sa each), checksum.
//!
//! Super block: `EASB`, version, client id, header address (sa), block offset (`arr_off_size`
//! bytes), page-init bitmaps (only when its data blocks are paged), data block addresses,
//! checksum.
//!
//! Data block: `EADB`, version, client id, header address (sa), block offset, then either the
//! elements and a checksum over the whole block, or (paged) a checksum over the prefix alone,
//! followed by the pages, each `page_nelmts` elements plus a checksum.

#![deny(missing_docs)]

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};
use crate::sizes::Sizes;

pub use crate::farray::{bit, decode_page, encode_page, set_bit};

/// `EAHD`.
pub const HEADER_SIGNATURE: [u8; 4] = *b"EAHD";
/// `EAIB`.
pub const INDEX_BLOCK_SIGNATURE: [u8; 4] = *b"EAIB";
/// `EASB`.
pub const SUPER_BLOCK_SIGNATURE: [u8; 4] = *b"EASB";
/// `EADB`.
pub const DATA_BLOCK_SIGNATURE: [u8; 4] = *b"EADB";
/// The only version of every block.
pub const VERSION: u8 = 0;

/// The creation parameters of an extensible array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Params {
    /// log2 of the maximum number of elements.
    pub max_nelmts_bits: u8,
    /// Elements stored in the index block itself.
    pub idx_blk_elmts: u8,
    /// Elements of the smallest data block (a power of two).
    pub data_blk_min_elmts: u8,
    /// Data block pointers of the smallest super block (a power of two, at least 2).
    pub sup_blk_min_data_ptrs: u8,
    /// log2 of the elements of a data block page.
    pub max_dblk_page_nelmts_bits: u8,
}

impl Params {
    /// The parameters libhdf5 uses for every chunk index: (32, 4, 16, 4, 10).
    pub const CHUNK_INDEX: Params = Params {
        max_nelmts_bits: 32,
        idx_blk_elmts: 4,
        data_blk_min_elmts: 16,
        sup_blk_min_data_ptrs: 4,
        max_dblk_page_nelmts_bits: 10,
    };
}

impl From<crate::message::layout::EarrayParams> for Params {
    /// The layout message stores the parameters in another order than the header: map by name.
    fn from(p: crate::message::layout::EarrayParams) -> Params {
        Params {
            max_nelmts_bits: p.max_nelmts_bits,
            idx_blk_elmts: p.idx_blk_elmts,
            data_blk_min_elmts: p.data_blk_min_elmts,
            sup_blk_min_data_ptrs: p.sup_blk_min_data_ptrs,
            max_dblk_page_nelmts_bits: p.max_dblk_page_nelmts_bits,
        }
    }
}

/// The header's statistics, maintained as libhdf5 maintains them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Number of super blocks created.
    pub nsuper_blks: u64,
    /// Total bytes of the super blocks.
    pub super_blk_size: u64,
    /// Number of data blocks created.
    pub ndata_blks: u64,
    /// Total bytes of the data blocks (a paged block counts its pages).
    pub data_blk_size: u64,
    /// One more than the highest index set.
    pub max_idx_set: u64,
    /// Elements realized: the index block's plus those of every data block created.
    pub nelmts: u64,
}

/// The extensible array header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Client id: 0 for unfiltered chunks, 1 for filtered chunks.
    pub client_id: u8,
    /// Size of one element in bytes.
    pub element_size: u8,
    /// The creation parameters.
    pub params: Params,
    /// The statistics.
    pub stats: Stats,
    /// Address of the index block, `None` until the first element is set.
    pub index_block: Option<Addr>,
}

impl Header {
    /// Encoded size in bytes, checksum included.
    #[allow(clippy::arithmetic_side_effects)] // small constants and widths of at most 8
    pub fn encoded_len(sizes: Sizes) -> usize {
        12 + 6 * usize::from(sizes.lengths()) + usize::from(sizes.offsets()) + 4
    }

    /// Decode a header whose first byte is at file address `at`.
    pub fn decode(bytes: &[u8], at: Addr, sizes: Sizes) -> Result<Header> {
        let mut d = Decoder::new(bytes, at, sizes, "EAHD");
        d.signature(&HEADER_SIGNATURE)?;
        d.verify_checksum(Self::encoded_len(sizes).saturating_sub(4))?;
        let (client_id, _) = block_version_and_client(&mut d)?;
        let es_at = d.addr();
        let element_size = d.u8()?;
        if element_size == 0 {
            return Err(d.bad_value(es_at, "element size", 0));
        }
        let params_at = d.addr();
        let params = Params {
            max_nelmts_bits: d.u8()?,
            idx_blk_elmts: d.u8()?,
            data_blk_min_elmts: d.u8()?,
            sup_blk_min_data_ptrs: d.u8()?,
            max_dblk_page_nelmts_bits: d.u8()?,
        };
        Geometry::new(params).map_err(|e| match e {
            Error::Unencodable { reason, .. } => d.invalid(params_at, reason),
            other => other,
        })?;
        let stats = Stats {
            nsuper_blks: d.length()?,
            super_blk_size: d.length()?,
            ndata_blks: d.length()?,
            data_blk_size: d.length()?,
            max_idx_set: d.length()?,
            nelmts: d.length()?,
        };
        let index_block = d.offset()?;
        Ok(Header {
            client_id,
            element_size,
            params,
            stats,
            index_block,
        })
    }

    /// Append the encoded header, checksum last.
    pub fn encode(&self, sizes: Sizes, out: &mut Vec<u8>) -> Result<()> {
        let mut e = Encoder::new(out, sizes, "EAHD");
        e.bytes(&HEADER_SIGNATURE);
        e.u8(VERSION);
        e.u8(self.client_id);
        e.u8(self.element_size);
        let p = &self.params;
        for b in [
            p.max_nelmts_bits,
            p.idx_blk_elmts,
            p.data_blk_min_elmts,
            p.sup_blk_min_data_ptrs,
            p.max_dblk_page_nelmts_bits,
        ] {
            e.u8(b);
        }
        let s = &self.stats;
        for (v, f) in [
            (s.nsuper_blks, "number of super blocks"),
            (s.super_blk_size, "super block bytes"),
            (s.ndata_blks, "number of data blocks"),
            (s.data_blk_size, "data block bytes"),
            (s.max_idx_set, "max index set"),
            (s.nelmts, "elements realized"),
        ] {
            e.length(v, f)?;
        }
        e.offset(self.index_block, "index block address")?;
        e.checksum();
        Ok(())
    }
}

/// Read and check the version byte and the client id that follow every block's signature.
fn block_version_and_client(d: &mut Decoder<'_>) -> Result<(u8, ())> {
    let v_at = d.addr();
    let version = d.u8()?;
    if version != VERSION {
        return Err(d.bad_version(v_at, version));
    }
    let c_at = d.addr();
    let client_id = d.u8()?;
    if client_id > 1 {
        return Err(d.bad_value(c_at, "client id", client_id.into()));
    }
    Ok((client_id, ()))
}

/// Where an element lives, from [`Geometry::locate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// Element `0` of the index block's own elements.
    IndexBlock(usize),
    /// In a data block: `sblk` is the super block row `u`; `dblk` the data block's position
    /// among the row's blocks; `elmt` the element within the data block.
    DataBlock {
        /// Super block row `u`.
        sblk: usize,
        /// Data block within the row.
        dblk: u64,
        /// Element within the data block.
        elmt: u64,
    },
}

/// The layout derived from [`Params`], computed once per array so lookups do no loops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    params: Params,
    nsblks: usize,
    arr_off_size: u8,
    page_nelmts: u64,
    iblk_nsblks: usize,
    ndblk_addrs: usize,
    nsblk_addrs: usize,
    log2_dblk_min: u32,
    rows: Vec<Row>,
}

/// One super block row `u` of the geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// Data blocks in the row.
    pub ndblks: u64,
    /// Elements per data block.
    pub dblk_nelmts: u64,
    /// First element index of the row, not counting the index block's elements.
    pub start_idx: u64,
    /// Number of data blocks in all earlier rows.
    pub start_dblk: u64,
    /// Pages per data block; 0 when not paged.
    pub npages: u64,
}

// Geometry arithmetic is bounded: `new` validates the parameters (at most 64 rows, page
// bits at most 31, power-of-two block sizes), so every row value fits in a u64 (the
// running sums saturate) and block lengths are small multiples of them.
#[allow(clippy::arithmetic_side_effects)]
impl Geometry {
    /// Validate `params` and derive the geometry. Invalid parameters give
    /// [`Error::Unencodable`] with the reason.
    pub fn new(params: Params) -> Result<Geometry> {
        let bad = |reason: &str| Error::Unencodable {
            structure: "EAHD",
            reason: format!("invalid extensible array parameters {params:?}: {reason}"),
        };
        let p = params;
        if p.max_nelmts_bits == 0 || p.max_nelmts_bits > 64 {
            return Err(bad("max elements bits must be 1..=64"));
        }
        if p.idx_blk_elmts == 0 {
            return Err(bad("index block elements must be non-zero"));
        }
        if !p.data_blk_min_elmts.is_power_of_two() {
            return Err(bad("data block min elements must be a power of two"));
        }
        if !p.sup_blk_min_data_ptrs.is_power_of_two() || p.sup_blk_min_data_ptrs < 2 {
            return Err(bad(
                "super block min data pointers must be a power of two >= 2",
            ));
        }
        if p.max_dblk_page_nelmts_bits == 0 || p.max_dblk_page_nelmts_bits > 31 {
            return Err(bad("page bits must be 1..=31"));
        }
        let log2_dblk_min = p.data_blk_min_elmts.trailing_zeros();
        if u32::from(p.max_nelmts_bits) < log2_dblk_min {
            return Err(bad("max elements smaller than a data block"));
        }
        let nsblks = 1 + usize::from(p.max_nelmts_bits) - log2_dblk_min as usize;
        let iblk_nsblks = 2 * p.sup_blk_min_data_ptrs.trailing_zeros() as usize;
        if iblk_nsblks > nsblks {
            return Err(bad("more super block rows in the index block than exist"));
        }
        let page_nelmts = 1u64 << p.max_dblk_page_nelmts_bits;
        let mut rows = Vec::with_capacity(nsblks);
        let (mut start_idx, mut start_dblk) = (0u64, 0u64);
        for u in 0..nsblks {
            let ndblks = 1u64 << (u / 2);
            let dblk_nelmts = (1u64 << u.div_ceil(2).min(63)) * u64::from(p.data_blk_min_elmts);
            let npages = if dblk_nelmts > page_nelmts {
                dblk_nelmts / page_nelmts
            } else {
                0
            };
            rows.push(Row {
                ndblks,
                dblk_nelmts,
                start_idx,
                start_dblk,
                npages,
            });
            start_idx = start_idx.saturating_add(ndblks.saturating_mul(dblk_nelmts));
            start_dblk = start_dblk.saturating_add(ndblks);
        }
        Ok(Geometry {
            params,
            nsblks,
            arr_off_size: p.max_nelmts_bits.div_ceil(8),
            page_nelmts,
            iblk_nsblks,
            ndblk_addrs: 2 * (usize::from(p.sup_blk_min_data_ptrs) - 1),
            nsblk_addrs: nsblks - iblk_nsblks,
            log2_dblk_min,
            rows,
        })
    }

    /// The parameters.
    pub fn params(&self) -> Params {
        self.params
    }

    /// Number of super block rows.
    pub fn nsblks(&self) -> usize {
        self.nsblks
    }

    /// Width in bytes of the block offset fields.
    pub fn arr_off_size(&self) -> u8 {
        self.arr_off_size
    }

    /// Elements per data block page.
    pub fn page_nelmts(&self) -> u64 {
        self.page_nelmts
    }

    /// Rows whose data block pointers live in the index block.
    pub fn iblk_nsblks(&self) -> usize {
        self.iblk_nsblks
    }

    /// Data block pointers in the index block.
    pub fn ndblk_addrs(&self) -> usize {
        self.ndblk_addrs
    }

    /// Super block pointers in the index block.
    pub fn nsblk_addrs(&self) -> usize {
        self.nsblk_addrs
    }

    /// Row `u`.
    pub fn row(&self, u: usize) -> Option<&Row> {
        self.rows.get(u)
    }

    /// The maximum number of elements (`2^max_nelmts_bits`).
    pub fn max_nelmts(&self) -> u64 {
        1u64.checked_shl(u32::from(self.params.max_nelmts_bits))
            .unwrap_or(u64::MAX)
    }

    /// Where element `i` lives, or `None` beyond the array's maximum size. O(1).
    pub fn locate(&self, i: u64) -> Option<Location> {
        let iblk = u64::from(self.params.idx_blk_elmts);
        if i < iblk {
            return Some(Location::IndexBlock(i as usize));
        }
        let j = i - iblk;
        // u = floor(log2(j / data_blk_min_elmts + 1)).
        let q = (j >> self.log2_dblk_min).checked_add(1)?;
        let u = (63 - q.leading_zeros()) as usize;
        let row = self.rows.get(u)?;
        let off = j - row.start_idx;
        Some(Location::DataBlock {
            sblk: u,
            dblk: off / row.dblk_nelmts,
            elmt: off % row.dblk_nelmts,
        })
    }

    /// Bytes of the index block, checksum included.
    pub fn index_block_len(&self, sizes: Sizes, element_size: u8) -> usize {
        6 + usize::from(sizes.offsets())
            + usize::from(self.params.idx_blk_elmts) * usize::from(element_size)
            + (self.ndblk_addrs + self.nsblk_addrs) * usize::from(sizes.offsets())
            + 4
    }

    /// Bytes of one page-init bitmap of row `u`'s data blocks (0 when not paged).
    pub fn bitmap_len(&self, u: usize) -> usize {
        self.rows
            .get(u)
            .map_or(0, |r| r.npages.div_ceil(8) as usize)
    }

    /// Bytes of the super block of row `u`, checksum included.
    pub fn super_block_len(&self, sizes: Sizes, u: usize) -> usize {
        let ndblks = self.rows.get(u).map_or(0, |r| r.ndblks as usize);
        6 + usize::from(sizes.offsets())
            + usize::from(self.arr_off_size)
            + ndblks * self.bitmap_len(u)
            + ndblks * usize::from(sizes.offsets())
            + 4
    }

    /// Bytes of a data block prefix (signature to block offset).
    pub fn data_block_prefix_len(&self, sizes: Sizes) -> usize {
        6 + usize::from(sizes.offsets()) + usize::from(self.arr_off_size)
    }

    /// Bytes of the first read of a data block of row `u`: the whole block when not paged, the
    /// prefix and its checksum when paged.
    pub fn data_block_image_len(&self, sizes: Sizes, u: usize, element_size: u8) -> u64 {
        let prefix = self.data_block_prefix_len(sizes) as u64 + 4;
        match self.rows.get(u) {
            Some(r) if r.npages == 0 => prefix + r.dblk_nelmts * u64::from(element_size),
            _ => prefix,
        }
    }

    /// Bytes allocated for a data block of row `u` and its pages.
    pub fn data_block_allocated_len(&self, sizes: Sizes, u: usize, element_size: u8) -> u64 {
        let prefix = self.data_block_prefix_len(sizes) as u64 + 4;
        self.rows.get(u).map_or(prefix, |r| {
            prefix + r.dblk_nelmts * u64::from(element_size) + r.npages * 4
        })
    }

    /// Offset of page `p` from its data block's address.
    pub fn page_offset(&self, sizes: Sizes, p: u64, element_size: u8) -> u64 {
        self.data_block_prefix_len(sizes) as u64
            + 4
            + p * (self.page_nelmts * u64::from(element_size) + 4)
    }
}

/// The index block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexBlock {
    /// Client id, as in the header.
    pub client_id: u8,
    /// Address of the array's header.
    pub header: Addr,
    /// The index block's own elements, raw (`idx_blk_elmts × element_size` bytes).
    pub elements: Vec<u8>,
    /// Data block addresses (rows below `iblk_nsblks`).
    pub dblk_addrs: Vec<Option<Addr>>,
    /// Super block addresses (rows from `iblk_nsblks` on).
    pub sblk_addrs: Vec<Option<Addr>>,
}

impl IndexBlock {
    /// A new index block with every element `fill` and every pointer undefined.
    pub fn new(client_id: u8, header: Addr, g: &Geometry, fill: &[u8]) -> IndexBlock {
        IndexBlock {
            client_id,
            header,
            elements: fill.repeat(usize::from(g.params.idx_blk_elmts)),
            dblk_addrs: vec![None; g.ndblk_addrs],
            sblk_addrs: vec![None; g.nsblk_addrs],
        }
    }

    /// Decode an index block at file address `at`.
    pub fn decode(
        bytes: &[u8],
        at: Addr,
        sizes: Sizes,
        g: &Geometry,
        element_size: u8,
    ) -> Result<IndexBlock> {
        let mut d = Decoder::new(bytes, at, sizes, "EAIB");
        d.signature(&INDEX_BLOCK_SIGNATURE)?;
        d.verify_checksum(g.index_block_len(sizes, element_size).saturating_sub(4))?;
        let (client_id, _) = block_version_and_client(&mut d)?;
        let header = d.defined_offset("header address")?;
        let elements = d
            .bytes(usize::from(g.params.idx_blk_elmts).saturating_mul(usize::from(element_size)))?
            .to_vec();
        let mut dblk_addrs = Vec::with_capacity(g.ndblk_addrs);
        for _ in 0..g.ndblk_addrs {
            dblk_addrs.push(d.offset()?);
        }
        let mut sblk_addrs = Vec::with_capacity(g.nsblk_addrs);
        for _ in 0..g.nsblk_addrs {
            sblk_addrs.push(d.offset()?);
        }
        Ok(IndexBlock {
            client_id,
            header,
            elements,
            dblk_addrs,
            sblk_addrs,
        })
    }

    /// Append the encoded block, checksum last.
    pub fn encode(&self, sizes: Sizes, out: &mut Vec<u8>) -> Result<()> {
        let mut e = Encoder::new(out, sizes, "EAIB");
        e.bytes(&INDEX_BLOCK_SIGNATURE);
        e.u8(VERSION);
        e.u8(self.client_id);
        e.offset(Some(self.header), "header address")?;
        e.bytes(&self.elements);
        for a in &self.dblk_addrs {
            e.offset(*a, "data block address")?;
        }
        for a in &self.sblk_addrs {
            e.offset(*a, "super block address")?;
        }
        e.checksum();
        Ok(())
    }
}

/// A super block (row `u` of the geometry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuperBlock {
    /// Client id, as in the header.
    pub client_id: u8,
    /// Address of the array's header.
    pub header: Addr,
    /// The block offset field: the row's first element index (`start_idx(u)`).
    pub block_offset: u64,
    /// Page-init bitmaps of the row's data blocks, concatenated, MSB first (bit
    /// `dblk × npages + page`); empty when the row is not paged.
    pub page_init: Vec<u8>,
    /// Data block addresses.
    pub dblk_addrs: Vec<Option<Addr>>,
}

impl SuperBlock {
    /// A new super block for row `u` with no data blocks.
    pub fn new(client_id: u8, header: Addr, g: &Geometry, u: usize) -> SuperBlock {
        let (ndblks, start_idx) = g
            .row(u)
            .map_or((0, 0), |r| (r.ndblks as usize, r.start_idx));
        SuperBlock {
            client_id,
            header,
            block_offset: start_idx,
            page_init: vec![0; ndblks.saturating_mul(g.bitmap_len(u))],
            dblk_addrs: vec![None; ndblks],
        }
    }

    /// Decode the super block of row `u` at file address `at`.
    pub fn decode(
        bytes: &[u8],
        at: Addr,
        sizes: Sizes,
        g: &Geometry,
        u: usize,
    ) -> Result<SuperBlock> {
        let mut d = Decoder::new(bytes, at, sizes, "EASB");
        let row = g
            .row(u)
            .ok_or_else(|| d.invalid(at, format!("super block row {u} out of range")))?;
        d.signature(&SUPER_BLOCK_SIGNATURE)?;
        d.verify_checksum(g.super_block_len(sizes, u).saturating_sub(4))?;
        let (client_id, _) = block_version_and_client(&mut d)?;
        let header = d.defined_offset("header address")?;
        let block_offset = d.uint(g.arr_off_size)?;
        let ndblks = row.ndblks as usize;
        let page_init = d.bytes(ndblks.saturating_mul(g.bitmap_len(u)))?.to_vec();
        d.check_count(row.ndblks, usize::from(sizes.offsets()))?;
        let mut dblk_addrs = Vec::with_capacity(ndblks);
        for _ in 0..ndblks {
            dblk_addrs.push(d.offset()?);
        }
        Ok(SuperBlock {
            client_id,
            header,
            block_offset,
            page_init,
            dblk_addrs,
        })
    }

    /// Append the encoded block, checksum last.
    pub fn encode(&self, sizes: Sizes, g: &Geometry, out: &mut Vec<u8>) -> Result<()> {
        let mut e = Encoder::new(out, sizes, "EASB");
        e.bytes(&SUPER_BLOCK_SIGNATURE);
        e.u8(VERSION);
        e.u8(self.client_id);
        e.offset(Some(self.header), "header address")?;
        e.uint(self.block_offset, g.arr_off_size, "block offset")?;
        e.bytes(&self.page_init);
        for a in &self.dblk_addrs {
            e.offset(*a, "data block address")?;
        }
        e.checksum();
        Ok(())
    }
}

/// A data block (of row `u`). When paged, its elements live in separate pages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataBlock {
    /// Client id, as in the header.
    pub client_id: u8,
    /// Address of the array's header.
    pub header: Addr,
    /// The block offset field. libhdf5 stores a wrong value for data blocks reached from the
    /// index block and never checks it; readers must not either.
    pub block_offset: u64,
    /// Raw elements when not paged; empty when paged.
    pub elements: Vec<u8>,
}

impl DataBlock {
    /// A new data block of row `u` with every element `fill`.
    pub fn new(
        client_id: u8,
        header: Addr,
        block_offset: u64,
        g: &Geometry,
        u: usize,
        fill: &[u8],
    ) -> DataBlock {
        let elements = match g.row(u) {
            Some(r) if r.npages == 0 => fill.repeat(r.dblk_nelmts as usize),
            _ => Vec::new(),
        };
        DataBlock {
            client_id,
            header,
            block_offset,
            elements,
        }
    }

    /// Decode the image of a data block of row `u` at file address `at`.
    pub fn decode(
        bytes: &[u8],
        at: Addr,
        sizes: Sizes,
        g: &Geometry,
        u: usize,
        element_size: u8,
    ) -> Result<DataBlock> {
        let mut d = Decoder::new(bytes, at, sizes, "EADB");
        let row = *g
            .row(u)
            .ok_or_else(|| d.invalid(at, format!("data block row {u} out of range")))?;
        d.signature(&DATA_BLOCK_SIGNATURE)?;
        let image = usize::try_from(g.data_block_image_len(sizes, u, element_size))
            .map_err(|_| d.invalid(at, "data block larger than the address space"))?;
        d.verify_checksum(image.saturating_sub(4))?;
        let (client_id, _) = block_version_and_client(&mut d)?;
        let header = d.defined_offset("header address")?;
        let block_offset = d.uint(g.arr_off_size)?;
        let elements = if row.npages == 0 {
            let n = d.check_count(row.dblk_nelmts, usize::from(element_size))?;
            d.bytes(n.saturating_mul(usize::from(element_size)))?
                .to_vec()
        } else {
            Vec::new()
        };
        Ok(DataBlock {
            client_id,
            header,
            block_offset,
            elements,
        })
    }

    /// Append the block image (prefix, elements when not paged, checksum).
    pub fn encode(&self, sizes: Sizes, g: &Geometry, out: &mut Vec<u8>) -> Result<()> {
        let mut e = Encoder::new(out, sizes, "EADB");
        e.bytes(&DATA_BLOCK_SIGNATURE);
        e.u8(VERSION);
        e.u8(self.client_id);
        e.offset(Some(self.header), "header address")?;
        e.uint(self.block_offset, g.arr_off_size, "block offset")?;
        e.bytes(&self.elements);
        e.checksum();
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

    const S: Sizes = Sizes::DEFAULT;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// A header written by libhdf5 1.14.6 for 13 000 chunks (docs/format/chunk-index-format.md §6.2).
    fn eahd() -> Vec<u8> {
        hex(
            "45414844 00 00 08 20 04 10 04 0a  0600000000000000 4402000000000000 \
             3800000000000000 50a4010000000000 c832000000000000 f433000000000000 \
             1702000000000000 1f74ef41",
        )
    }

    #[test]
    fn decode_header_from_libhdf5() {
        let b = eahd();
        let h = Header::decode(&b, Addr(0x1bf), S).unwrap();
        assert_eq!(h.params, Params::CHUNK_INDEX);
        assert_eq!(
            h.stats,
            Stats {
                nsuper_blks: 6,
                super_blk_size: 580,
                ndata_blks: 56,
                data_blk_size: 107_600,
                max_idx_set: 13_000,
                nelmts: 13_300
            }
        );
        assert_eq!(h.index_block, Some(Addr(535)));
        let mut out = Vec::new();
        h.encode(S, &mut out).unwrap();
        assert_eq!(out, b);
    }

    #[test]
    fn geometry_matches_the_reference_table() {
        let g = Geometry::new(Params::CHUNK_INDEX).unwrap();
        assert_eq!(g.nsblks(), 29);
        assert_eq!(g.arr_off_size(), 4);
        assert_eq!(
            (g.iblk_nsblks(), g.ndblk_addrs(), g.nsblk_addrs()),
            (4, 6, 25)
        );
        let expect = [
            (0, 1, 16, 0),
            (3, 2, 64, 112),
            (4, 4, 64, 240),
            (12, 64, 1024, 65_520),
            (13, 64, 2048, 131_056),
            (28, 16_384, 262_144, 4_294_967_280),
        ];
        for (u, ndblks, nelmts, start) in expect {
            let r = g.row(u).unwrap();
            assert_eq!(
                (r.ndblks, r.dblk_nelmts, r.start_idx),
                (ndblks, nelmts, start),
                "u={u}"
            );
        }
        assert_eq!(g.row(13).unwrap().npages, 2);
        assert_eq!(g.row(12).unwrap().npages, 0);
        assert_eq!(g.index_block_len(S, 8), 298);
        for (u, len) in [(4, 54), (6, 86), (8, 150), (10, 278), (12, 534), (13, 598)] {
            assert_eq!(g.super_block_len(S, u), len, "u={u}");
        }
        assert_eq!(g.data_block_image_len(S, 0, 8), 150);
        assert_eq!(g.data_block_image_len(S, 1, 8), 278);
    }

    #[test]
    fn locate_matches_the_worked_example_and_boundaries() {
        let g = Geometry::new(Params::CHUNK_INDEX).unwrap();
        assert_eq!(g.locate(3), Some(Location::IndexBlock(3)));
        assert_eq!(
            g.locate(12_345),
            Some(Location::DataBlock {
                sblk: 9,
                dblk: 8,
                elmt: 69
            })
        );
        assert_eq!(
            g.locate(4),
            Some(Location::DataBlock {
                sblk: 0,
                dblk: 0,
                elmt: 0
            })
        );
        assert_eq!(
            g.locate(243),
            Some(Location::DataBlock {
                sblk: 3,
                dblk: 1,
                elmt: 63
            })
        );
        assert_eq!(
            g.locate(244),
            Some(Location::DataBlock {
                sblk: 4,
                dblk: 0,
                elmt: 0
            })
        );
        assert_eq!(
            g.locate(131_060),
            Some(Location::DataBlock {
                sblk: 13,
                dblk: 0,
                elmt: 0
            })
        );
        // Every index maps to a distinct slot, in order: walk a prefix exhaustively.
        let mut prev = None;
        for i in 4..20_000u64 {
            let Some(Location::DataBlock { sblk, dblk, elmt }) = g.locate(i) else {
                panic!("{i}")
            };
            let r = g.row(sblk).unwrap();
            assert!(dblk < r.ndblks && elmt < r.dblk_nelmts);
            assert_eq!(r.start_idx + dblk * r.dblk_nelmts + elmt + 4, i);
            assert!(prev < Some((sblk, dblk, elmt)));
            prev = Some((sblk, dblk, elmt));
        }
    }

    #[test]
    fn roundtrip_blocks_and_reject_damage() {
        let g = Geometry::new(Params::CHUNK_INDEX).unwrap();
        let fill = [0xffu8; 8];
        let mut ib = IndexBlock::new(0, Addr(0x1bf), &g, &fill);
        ib.dblk_addrs[0] = Some(Addr(0x400));
        ib.sblk_addrs[1] = Some(Addr(0x800));
        let mut sb = SuperBlock::new(0, Addr(0x1bf), &g, 13);
        set_bit(&mut sb.page_init, 2); // data block 1, page 0
        sb.dblk_addrs[1] = Some(Addr(0x9000));
        let db = DataBlock::new(0, Addr(0x1bf), 48, &g, 1, &fill);
        let paged = DataBlock::new(0, Addr(0x1bf), 131_056, &g, 13, &fill);
        type Dec<'a> = dyn Fn(&[u8]) -> Result<()> + 'a;
        let cases: Vec<(Vec<u8>, Box<Dec<'_>>)> = vec![
            (
                {
                    let mut o = Vec::new();
                    ib.encode(S, &mut o).unwrap();
                    o
                },
                Box::new(|b| {
                    IndexBlock::decode(b, Addr(0x207), S, &g, 8).map(|x| assert_eq!(x, ib))
                }),
            ),
            (
                {
                    let mut o = Vec::new();
                    sb.encode(S, &g, &mut o).unwrap();
                    o
                },
                Box::new(|b| {
                    SuperBlock::decode(b, Addr(0x800), S, &g, 13).map(|x| assert_eq!(x, sb))
                }),
            ),
            (
                {
                    let mut o = Vec::new();
                    db.encode(S, &g, &mut o).unwrap();
                    o
                },
                Box::new(|b| {
                    DataBlock::decode(b, Addr(0x400), S, &g, 1, 8).map(|x| assert_eq!(x, db))
                }),
            ),
            (
                {
                    let mut o = Vec::new();
                    paged.encode(S, &g, &mut o).unwrap();
                    o
                },
                Box::new(|b| {
                    DataBlock::decode(b, Addr(0x9000), S, &g, 13, 8).map(|x| assert_eq!(x, paged))
                }),
            ),
        ];
        for (image, decode) in &cases {
            decode(image).unwrap();
            for n in 0..image.len() {
                assert!(decode(&image[..n]).is_err(), "prefix {n}");
            }
            for i in 0..image.len() {
                let mut bad = image.clone();
                bad[i] ^= 0x04;
                assert!(decode(&bad).is_err(), "flipped byte {i}");
            }
        }
        assert_eq!(cases[1].0.len(), 598);
    }

    #[test]
    fn rejects_invalid_params() {
        for p in [
            Params {
                data_blk_min_elmts: 12,
                ..Params::CHUNK_INDEX
            },
            Params {
                sup_blk_min_data_ptrs: 1,
                ..Params::CHUNK_INDEX
            },
            Params {
                max_nelmts_bits: 0,
                ..Params::CHUNK_INDEX
            },
            Params {
                max_nelmts_bits: 65,
                ..Params::CHUNK_INDEX
            },
            Params {
                max_dblk_page_nelmts_bits: 0,
                ..Params::CHUNK_INDEX
            },
            Params {
                max_nelmts_bits: 2,
                ..Params::CHUNK_INDEX
            },
        ] {
            assert!(Geometry::new(p).is_err(), "{p:?}");
        }
    }

    #[test]
    fn header_rejects_truncation_and_flipped_bytes() {
        let b = eahd();
        for n in 0..b.len() {
            assert!(Header::decode(&b[..n], Addr(0), S).is_err());
        }
        for i in 0..b.len() {
            let mut bad = b.clone();
            bad[i] ^= 0x01;
            assert!(Header::decode(&bad, Addr(0), S).is_err(), "byte {i}");
        }
    }
}
