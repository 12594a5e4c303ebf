//! Data Layout message (type 0x0008): where a dataset's raw data lives.
//!
//! Versions 3, 4 and 5 start with version (1 byte) and layout class (1 byte: 0 compact,
//! 1 contiguous, 2 chunked, 3 virtual). Then, by class:
//!
//! | class         | fields                                                                |
//! |---------------|-----------------------------------------------------------------------|
//! | compact       | size (u16), raw data                                                  |
//! | contiguous    | address (O), size (L)                                                 |
//! | chunked, v3   | dimensionality `nd` (u8, = rank + 1), v1 B-tree address (O),          |
//! |               | `nd` chunk dims (u32 each; the last is the element size in bytes)     |
//! | chunked, v4/5 | flags (u8), `nd` (u8), `enc` (u8, 1..8), `nd` dims of `enc` bytes,    |
//! |               | chunk index type (u8), index parameters, index address (O)            |
//! | virtual, v4/5 | global heap collection address (O) and object index (u32) of the      |
//! |               | mappings ([`crate::vds`]); undefined address and 0 when there are none |
//!
//! Chunk index types and their parameters (version 4 and 5):
//!
//! | type                 | parameters                                                     |
//! |----------------------|----------------------------------------------------------------|
//! | 1 single chunk       | if flags bit 1: filtered chunk size (L), filter mask (u32)     |
//! | 2 implicit           | none                                                           |
//! | 3 fixed array        | max_dblk_page_nelmts_bits (u8)                                 |
//! | 4 extensible array   | max_nelmts_bits, idx_blk_elmts, sup_blk_min_data_ptrs,         |
//! |                      | data_blk_min_elmts, max_dblk_page_nelmts_bits (u8 each)        |
//! | 5 v2 B-tree          | node size (u32), split percent (u8), merge percent (u8)        |
//!
//! Version 5 (libhdf5 2.0) has the version 4 wire layout. Versions 1 and 2 are decoded for
//! reading only: version (1), dimensionality (1), layout class (1), reserved (5), address (O,
//! contiguous and chunked only), dims (u32 each), and for compact storage a u32 size and the
//! raw data.

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};
use crate::sizes::Sizes;

const STRUCTURE: &str = "Data Layout message";

/// The largest chunk dimensionality: rank 32 plus the element-size slot (`H5O_LAYOUT_NDIMS`).
pub const MAX_NDIMS: usize = 33;

bitflags::bitflags! {
    /// Chunked layout flags (versions 4 and 5).
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
    pub struct ChunkedFlags: u8 {
        /// Partial edge chunks are stored unfiltered (`H5Pset_chunk_opts`).
        const DONT_FILTER_PARTIAL_BOUND_CHUNKS = 0x01;
        /// A single-chunk index whose chunk is filtered: the layout stores its size and mask.
        const SINGLE_INDEX_WITH_FILTER = 0x02;
    }
}

/// Data Layout message version (3 and later; versions 1 and 2 are [`LegacyLayout`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum LayoutVersion {
    /// Version 3: chunked datasets always use a v1 B-tree.
    V3,
    /// Version 4: chunk index types; libver `V110` and later.
    V4,
    /// Version 5: the version 4 wire layout, written by libhdf5 2.0 for filtered datasets.
    V5,
}

impl LayoutVersion {
    /// The version number as stored.
    pub fn number(self) -> u8 {
        match self {
            LayoutVersion::V3 => 3,
            LayoutVersion::V4 => 4,
            LayoutVersion::V5 => 5,
        }
    }
}

/// The size and filter mask of a filtered single chunk.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct FilteredChunk {
    /// Size of the filtered chunk in bytes.
    pub size: u64,
    /// Filter mask: bit i set means filter i of the pipeline was skipped.
    pub filter_mask: u32,
}

/// Extensible array creation parameters, in the layout message's order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct EarrayParams {
    /// Number of bits needed to store the maximum number of elements.
    pub max_nelmts_bits: u8,
    /// Number of elements stored in the index block.
    pub idx_blk_elmts: u8,
    /// Minimum number of data block pointers in a super block.
    pub sup_blk_min_data_ptrs: u8,
    /// Minimum number of elements in a data block.
    pub data_blk_min_elmts: u8,
    /// Number of bits of the maximum number of elements in a data block page.
    pub max_dblk_page_nelmts_bits: u8,
}

impl EarrayParams {
    /// The parameters libhdf5 uses: (32, 4, 4, 16, 10).
    pub const DEFAULT: EarrayParams = EarrayParams {
        max_nelmts_bits: 32,
        idx_blk_elmts: 4,
        sup_blk_min_data_ptrs: 4,
        data_blk_min_elmts: 16,
        max_dblk_page_nelmts_bits: 10,
    };
}

/// Version 2 B-tree creation parameters.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Btree2Params {
    /// Node size in bytes.
    pub node_size: u32,
    /// Split percent.
    pub split_percent: u8,
    /// Merge percent.
    pub merge_percent: u8,
}

impl Btree2Params {
    /// The parameters libhdf5 uses: node size 2048, split 100 %, merge 40 %.
    pub const DEFAULT: Btree2Params = Btree2Params {
        node_size: 2048,
        split_percent: 100,
        merge_percent: 40,
    };
}

/// The chunk index type and its creation parameters.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ChunkIndex {
    /// Version 1 B-tree (the only index of a version 3 layout; type 0, invalid in 4 and 5).
    BTreeV1,
    /// Type 1: a single chunk; its size and mask are stored when it is filtered.
    Single(Option<FilteredChunk>),
    /// Type 2: all chunks allocated contiguously, no index structure.
    Implicit,
    /// Type 3: fixed array, with its `max_dblk_page_nelmts_bits`.
    FixedArray {
        /// Number of bits of the maximum number of elements in a data block page.
        max_dblk_page_nelmts_bits: u8,
    },
    /// Type 4: extensible array.
    ExtensibleArray(EarrayParams),
    /// Type 5: version 2 B-tree.
    BTreeV2(Btree2Params),
    /// Type [`SKIP_LIST_INDEX_TYPE`]: h5chunk's deterministic skip list (`docs/format/skiplist.md`).
    /// libhdf5 does not know this type and refuses the dataset ("unknown chunk index type")
    /// rather than misreading it.
    SkipList(SkipListParams),
}

/// The layout index type number of h5chunk's skip list: far above libhdf5's 1 to 5.
pub const SKIP_LIST_INDEX_TYPE: u8 = 64;

/// Skip list creation parameters, stored after the index type: max height (u8), then steps of
/// the unlimited dimension per supernode (u32).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct SkipListParams {
    /// The greatest supernode height (1 to 63).
    pub max_height: u8,
    /// Steps of the unlimited dimension per supernode.
    pub steps_per_supernode: u32,
}

impl ChunkIndex {
    /// A fixed array with libhdf5's default page size parameter (10).
    pub const FIXED_ARRAY_DEFAULT: ChunkIndex = ChunkIndex::FixedArray {
        max_dblk_page_nelmts_bits: 10,
    };

    fn type_number(&self) -> u8 {
        match self {
            ChunkIndex::BTreeV1 => 0,
            ChunkIndex::Single(_) => 1,
            ChunkIndex::Implicit => 2,
            ChunkIndex::FixedArray { .. } => 3,
            ChunkIndex::ExtensibleArray(_) => 4,
            ChunkIndex::BTreeV2(_) => 5,
            ChunkIndex::SkipList(_) => SKIP_LIST_INDEX_TYPE,
        }
    }
}

/// A chunked layout (class 2), versions 3 to 5.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ChunkedLayout {
    /// Message version.
    pub version: LayoutVersion,
    /// Flags (versions 4 and 5; empty in version 3).
    pub flags: ChunkedFlags,
    /// Bytes per encoded dimension (versions 4 and 5; a version 3 layout stores u32 dims and
    /// keeps 4 here). Kept as stored so that re-encoding is identical.
    pub enc: u8,
    /// The `nd` chunk dimensions: one per dataset dimension, then the element size in bytes.
    pub dims: Vec<u64>,
    /// Chunk index type and parameters.
    pub index: ChunkIndex,
    /// Address of the index (v1 B-tree root, array or B-tree header, single chunk, or first
    /// implicit chunk); `None` until allocated.
    pub address: Option<Addr>,
}

impl ChunkedLayout {
    /// A chunked layout for `chunk_dims` (without the element-size slot) and `element_size`,
    /// with the minimal `enc` and the flags the index implies (single-chunk filter flag).
    pub fn new(
        version: LayoutVersion,
        chunk_dims: &[u64],
        element_size: u64,
        index: ChunkIndex,
        address: Option<Addr>,
    ) -> Self {
        let mut dims = chunk_dims.to_vec();
        dims.push(element_size);
        let enc = match version {
            LayoutVersion::V3 => 4,
            LayoutVersion::V4 | LayoutVersion::V5 => min_enc(&dims),
        };
        let mut flags = ChunkedFlags::empty();
        if matches!(index, ChunkIndex::Single(Some(_))) {
            flags |= ChunkedFlags::SINGLE_INDEX_WITH_FILTER;
        }
        ChunkedLayout {
            version,
            flags,
            enc,
            dims,
            index,
            address,
        }
    }

    /// The dataset rank (`nd` − 1).
    pub fn rank(&self) -> usize {
        self.dims.len().saturating_sub(1)
    }

    /// The chunk dimensions, without the element-size slot.
    pub fn chunk_dims(&self) -> &[u64] {
        self.dims.get(..self.rank()).unwrap_or(&[])
    }

    /// The datatype element size in bytes (the last dimension).
    pub fn element_size(&self) -> u64 {
        self.dims.last().copied().unwrap_or(0)
    }

    /// Bytes of one unfiltered chunk: the product of all `nd` dims, or `None` on overflow.
    pub fn chunk_bytes(&self) -> Option<u64> {
        self.dims
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
    }
}

/// The minimum `enc` for these dims: the largest number of bytes any of them needs
/// (`(floor(log2 v) + 8) / 8`), at least 1.
pub fn min_enc(dims: &[u64]) -> u8 {
    let bits = dims
        .iter()
        .map(|&v| 64u32.saturating_sub(v.leading_zeros()))
        .max()
        .unwrap_or(0);
    u8::try_from(bits.div_ceil(8).max(1)).unwrap_or(8)
}

/// The layout class of a version 1 or 2 message.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum LegacyClass {
    /// Raw data stored in the message.
    Compact,
    /// Raw data stored in one contiguous block.
    Contiguous,
    /// Raw data stored in chunks indexed by a v1 B-tree.
    Chunked,
}

/// A version 1 or 2 Data Layout message. Decoded for reading; never encoded (libhdf5 raises
/// every layout it writes to version 3).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct LegacyLayout {
    /// 1 or 2.
    pub version: u8,
    /// Layout class.
    pub class: LegacyClass,
    /// Data address (contiguous) or B-tree address (chunked); `None` if undefined or compact.
    pub address: Option<Addr>,
    /// Dimension sizes (u32); for chunked storage the chunk dims with the element size last.
    pub dims: Vec<u32>,
    /// Raw data of compact storage (empty otherwise).
    pub compact_data: Vec<u8>,
}

impl LegacyLayout {
    /// The version 3 layout that reads the same data, as libhdf5 reads a version 1 or 2
    /// message (and writes it back, should it rewrite the message: it never encodes below
    /// version 3). `data_size` is the dataset's size in bytes (elements times element size):
    /// libhdf5 computes a contiguous layout's size from the dataspace, because the message's
    /// 32-bit dims may have been truncated. A chunked layout keeps its dims (the element size
    /// last) and its v1 B-tree; compact data is kept as stored.
    pub fn upgraded(self, data_size: u64) -> DataLayout {
        match self.class {
            LegacyClass::Compact => DataLayout::Compact {
                version: LayoutVersion::V3,
                data: self.compact_data,
            },
            LegacyClass::Contiguous => DataLayout::Contiguous {
                version: LayoutVersion::V3,
                address: self.address,
                size: data_size,
            },
            LegacyClass::Chunked => DataLayout::Chunked(ChunkedLayout {
                version: LayoutVersion::V3,
                flags: ChunkedFlags::empty(),
                enc: 4,
                dims: self.dims.iter().map(|&d| u64::from(d)).collect(),
                index: ChunkIndex::BTreeV1,
                address: self.address,
            }),
        }
    }
}

/// A decoded Data Layout message.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum DataLayout {
    /// Version 1 or 2 (read-only).
    Legacy(LegacyLayout),
    /// Class 0: raw data stored in the message.
    Compact {
        /// Message version.
        version: LayoutVersion,
        /// The raw data (at most 65535 bytes).
        data: Vec<u8>,
    },
    /// Class 1: raw data in one contiguous block.
    Contiguous {
        /// Message version.
        version: LayoutVersion,
        /// Address of the raw data; `None` until allocated.
        address: Option<Addr>,
        /// Size of the raw data in bytes.
        size: u64,
    },
    /// Class 2: chunked storage.
    Chunked(ChunkedLayout),
    /// Class 3: a virtual dataset (versions 4 and 5), whose mappings live in a global heap
    /// object.
    Virtual {
        /// Message version.
        version: LayoutVersion,
        /// The global heap collection holding the mappings; `None` when there are none.
        heap: Option<Addr>,
        /// The mappings' object index in that collection.
        index: u32,
    },
}

impl DataLayout {
    /// The message version number.
    pub fn version(&self) -> u8 {
        match self {
            DataLayout::Legacy(l) => l.version,
            DataLayout::Compact { version, .. }
            | DataLayout::Contiguous { version, .. }
            | DataLayout::Virtual { version, .. } => version.number(),
            DataLayout::Chunked(c) => c.version.number(),
        }
    }

    /// The chunked layout, if this is one (versions 3 to 5).
    pub fn as_chunked(&self) -> Option<&ChunkedLayout> {
        match self {
            DataLayout::Chunked(c) => Some(c),
            _ => None,
        }
    }

    /// Decode a Data Layout message body.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        let at = d.addr();
        let version = match d.u8()? {
            v @ (1 | 2) => return decode_legacy(d, v).map(DataLayout::Legacy),
            3 => LayoutVersion::V3,
            4 => LayoutVersion::V4,
            5 => LayoutVersion::V5,
            v => return Err(d.bad_version(at, v)),
        };
        let at = d.addr();
        match d.u8()? {
            0 => {
                let size = d.u16()?;
                let data = d.bytes(usize::from(size))?.to_vec();
                Ok(DataLayout::Compact { version, data })
            }
            1 => {
                let address = d.offset()?;
                let size = d.length()?;
                Ok(DataLayout::Contiguous {
                    version,
                    address,
                    size,
                })
            }
            2 if version == LayoutVersion::V3 => decode_chunked_v3(d).map(DataLayout::Chunked),
            2 => decode_chunked_v4(d, version).map(DataLayout::Chunked),
            3 if version != LayoutVersion::V3 => {
                let heap = d.offset()?;
                let index = d.u32()?;
                Ok(DataLayout::Virtual {
                    version,
                    heap,
                    index,
                })
            }
            c => Err(d.bad_value(at, "layout class", u64::from(c))),
        }
    }

    /// Encode a Data Layout message body. Versions 1 and 2 are [`Error::Unencodable`].
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        match self {
            DataLayout::Legacy(l) => Err(unencodable(format!(
                "version {} layout messages are read-only",
                l.version
            ))),
            DataLayout::Compact { version, data } => {
                let size = u16::try_from(data.len()).map_err(|_| Error::TooWide {
                    structure: STRUCTURE,
                    field: "compact data size",
                    value: data.len() as u64,
                    width: 2,
                })?;
                e.u8(version.number());
                e.u8(0);
                e.u16(size);
                e.bytes(data);
                Ok(())
            }
            DataLayout::Contiguous {
                version,
                address,
                size,
            } => {
                e.u8(version.number());
                e.u8(1);
                e.offset(*address, "raw data address")?;
                e.length(*size, "raw data size")
            }
            DataLayout::Chunked(c) => encode_chunked(c, e),
            DataLayout::Virtual {
                version,
                heap,
                index,
            } => {
                if *version == LayoutVersion::V3 {
                    return Err(unencodable(
                        "a virtual layout needs layout message version 4".to_owned(),
                    ));
                }
                e.u8(version.number());
                e.u8(3);
                e.offset(*heap, "virtual dataset mappings address")?;
                e.u32(*index);
                Ok(())
            }
        }
    }

    /// The body's encoded length (for a legacy layout, the length it was stored with).
    pub fn encoded_len(&self, sizes: Sizes) -> usize {
        let o = usize::from(sizes.offsets());
        let l = usize::from(sizes.lengths());
        match self {
            DataLayout::Legacy(x) => {
                let mut n = 8usize.saturating_add(x.dims.len().saturating_mul(4));
                if x.class == LegacyClass::Compact {
                    n = n.saturating_add(4).saturating_add(x.compact_data.len());
                } else {
                    n = n.saturating_add(o);
                }
                n
            }
            DataLayout::Compact { data, .. } => data.len().saturating_add(4),
            DataLayout::Contiguous { .. } => o.saturating_add(l).saturating_add(2),
            DataLayout::Virtual { .. } => o.saturating_add(6),
            DataLayout::Chunked(c) => match c.version {
                LayoutVersion::V3 => c
                    .dims
                    .len()
                    .saturating_mul(4)
                    .saturating_add(o)
                    .saturating_add(3),
                LayoutVersion::V4 | LayoutVersion::V5 => {
                    let params = match c.index {
                        ChunkIndex::Single(Some(_)) => l.saturating_add(4),
                        ChunkIndex::Single(None) | ChunkIndex::Implicit | ChunkIndex::BTreeV1 => 0,
                        ChunkIndex::FixedArray { .. } => 1,
                        ChunkIndex::ExtensibleArray(_) => 5,
                        ChunkIndex::BTreeV2(_) => 6,
                        ChunkIndex::SkipList(_) => 5,
                    };
                    c.dims
                        .len()
                        .saturating_mul(usize::from(c.enc))
                        .saturating_add(6)
                        .saturating_add(params)
                        .saturating_add(o)
                }
            },
        }
    }
}

fn read_nd(d: &mut Decoder<'_>) -> Result<u8> {
    let at = d.addr();
    let nd = d.u8()?;
    if !(2..=MAX_NDIMS).contains(&usize::from(nd)) {
        return Err(d.bad_value(at, "dimensionality", u64::from(nd)));
    }
    Ok(nd)
}

fn decode_chunked_v3(d: &mut Decoder<'_>) -> Result<ChunkedLayout> {
    let nd = read_nd(d)?;
    let address = d.offset()?;
    let n = d.check_count(u64::from(nd), 4)?;
    let mut dims = Vec::with_capacity(n);
    for _ in 0..n {
        let at = d.addr();
        let v = d.u32()?;
        if v == 0 {
            return Err(d.bad_value(at, "chunk dimension", 0));
        }
        dims.push(u64::from(v));
    }
    Ok(ChunkedLayout {
        version: LayoutVersion::V3,
        flags: ChunkedFlags::empty(),
        enc: 4,
        dims,
        index: ChunkIndex::BTreeV1,
        address,
    })
}

fn decode_chunked_v4(d: &mut Decoder<'_>, version: LayoutVersion) -> Result<ChunkedLayout> {
    let at = d.addr();
    let raw_flags = d.u8()?;
    let flags = ChunkedFlags::from_bits(raw_flags)
        .ok_or_else(|| d.bad_value(at, "flags", u64::from(raw_flags)))?;
    let nd = read_nd(d)?;
    let at = d.addr();
    let enc = d.u8()?;
    if !(1..=8).contains(&enc) {
        return Err(d.bad_value(at, "encoded dimension size", u64::from(enc)));
    }
    let n = d.check_count(u64::from(nd), usize::from(enc))?;
    let mut dims = Vec::with_capacity(n);
    for _ in 0..n {
        let at = d.addr();
        let v = d.uint(enc)?;
        if v == 0 {
            return Err(d.bad_value(at, "chunk dimension", 0));
        }
        dims.push(v);
    }
    let at = d.addr();
    let index = match d.u8()? {
        1 => ChunkIndex::Single(if flags.contains(ChunkedFlags::SINGLE_INDEX_WITH_FILTER) {
            let size = d.length()?;
            let filter_mask = d.u32()?;
            Some(FilteredChunk { size, filter_mask })
        } else {
            None
        }),
        2 => ChunkIndex::Implicit,
        3 => ChunkIndex::FixedArray {
            max_dblk_page_nelmts_bits: nonzero_param(d, "max_dblk_page_nelmts_bits")?,
        },
        4 => ChunkIndex::ExtensibleArray(EarrayParams {
            max_nelmts_bits: nonzero_param(d, "max_nelmts_bits")?,
            idx_blk_elmts: nonzero_param(d, "idx_blk_elmts")?,
            sup_blk_min_data_ptrs: nonzero_param(d, "sup_blk_min_data_ptrs")?,
            data_blk_min_elmts: nonzero_param(d, "data_blk_min_elmts")?,
            max_dblk_page_nelmts_bits: nonzero_param(d, "max_dblk_page_nelmts_bits")?,
        }),
        5 => ChunkIndex::BTreeV2(Btree2Params {
            node_size: d.u32()?,
            split_percent: d.u8()?,
            merge_percent: d.u8()?,
        }),
        SKIP_LIST_INDEX_TYPE => ChunkIndex::SkipList(SkipListParams {
            max_height: nonzero_param(d, "skip list max height")?,
            steps_per_supernode: d.u32()?,
        }),
        t => return Err(d.bad_value(at, "chunk index type", u64::from(t))),
    };
    let address = d.offset()?;
    Ok(ChunkedLayout {
        version,
        flags,
        enc,
        dims,
        index,
        address,
    })
}

fn nonzero_param(d: &mut Decoder<'_>, field: &'static str) -> Result<u8> {
    let at = d.addr();
    match d.u8()? {
        0 => Err(d.bad_value(at, field, 0)),
        v => Ok(v),
    }
}

fn encode_chunked(c: &ChunkedLayout, e: &mut Encoder<'_>) -> Result<()> {
    let nd = match u8::try_from(c.dims.len()) {
        Ok(n) if (2..=MAX_NDIMS).contains(&usize::from(n)) => n,
        _ => {
            return Err(unencodable(format!(
                "{} chunk dimensions (2 to 33 allowed, element size included)",
                c.dims.len()
            )));
        }
    };
    e.u8(c.version.number());
    e.u8(2);
    if c.version == LayoutVersion::V3 {
        if c.index != ChunkIndex::BTreeV1 || !c.flags.is_empty() {
            return Err(unencodable(
                "a version 3 layout has no flags and always a v1 B-tree index".into(),
            ));
        }
        e.u8(nd);
        e.offset(c.address, "v1 B-tree address")?;
        for &v in &c.dims {
            e.uint(v, 4, "chunk dimension")?;
        }
        return Ok(());
    }
    if !(1..=8).contains(&c.enc) {
        return Err(unencodable(format!("encoded dimension size {}", c.enc)));
    }
    let with_filter = c.flags.contains(ChunkedFlags::SINGLE_INDEX_WITH_FILTER);
    match c.index {
        ChunkIndex::BTreeV1 => {
            return Err(unencodable(
                "a v1 B-tree index needs a version 3 layout".into(),
            ));
        }
        ChunkIndex::Single(filtered) if filtered.is_some() != with_filter => {
            return Err(unencodable(
                "single-chunk filter parameters disagree with flag 0x02".into(),
            ));
        }
        _ => {}
    }
    e.u8(c.flags.bits());
    e.u8(nd);
    e.u8(c.enc);
    for &v in &c.dims {
        e.uint(v, c.enc, "chunk dimension")?;
    }
    e.u8(c.index.type_number());
    match c.index {
        ChunkIndex::BTreeV1 | ChunkIndex::Implicit | ChunkIndex::Single(None) => {}
        ChunkIndex::Single(Some(f)) => {
            e.length(f.size, "filtered chunk size")?;
            e.u32(f.filter_mask);
        }
        ChunkIndex::FixedArray {
            max_dblk_page_nelmts_bits,
        } => e.u8(max_dblk_page_nelmts_bits),
        ChunkIndex::ExtensibleArray(p) => e.bytes(&[
            p.max_nelmts_bits,
            p.idx_blk_elmts,
            p.sup_blk_min_data_ptrs,
            p.data_blk_min_elmts,
            p.max_dblk_page_nelmts_bits,
        ]),
        ChunkIndex::BTreeV2(p) => {
            e.u32(p.node_size);
            e.u8(p.split_percent);
            e.u8(p.merge_percent);
        }
        ChunkIndex::SkipList(p) => {
            e.u8(p.max_height);
            e.u32(p.steps_per_supernode);
        }
    }
    e.offset(c.address, "chunk index address")
}

fn decode_legacy(d: &mut Decoder<'_>, version: u8) -> Result<LegacyLayout> {
    let at = d.addr();
    let nd = d.u8()?;
    if !(1..=MAX_NDIMS).contains(&usize::from(nd)) {
        return Err(d.bad_value(at, "dimensionality", u64::from(nd)));
    }
    let at = d.addr();
    let class = match d.u8()? {
        0 => LegacyClass::Compact,
        1 => LegacyClass::Contiguous,
        2 if nd >= 2 => LegacyClass::Chunked,
        c => return Err(d.bad_value(at, "layout class", u64::from(c))),
    };
    // Reserved; libhdf5 ignores these bytes and this message is never re-encoded.
    d.skip(5)?;
    let address = match class {
        LegacyClass::Compact => None,
        LegacyClass::Contiguous | LegacyClass::Chunked => d.offset()?,
    };
    let n = d.check_count(u64::from(nd), 4)?;
    let mut dims = Vec::with_capacity(n);
    for _ in 0..n {
        dims.push(d.u32()?);
    }
    let compact_data = if class == LegacyClass::Compact {
        let size = d.u32()?;
        let n = d.check_count(u64::from(size), 1)?;
        d.bytes(n)?.to_vec()
    } else {
        Vec::new()
    };
    Ok(LegacyLayout {
        version,
        class,
        address,
        dims,
        compact_data,
    })
}

fn unencodable(reason: String) -> Error {
    Error::Unencodable {
        structure: STRUCTURE,
        reason,
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects
)]
mod tests {
    #[test]
    fn roundtrip_skip_list_layout() {
        let l = DataLayout::Chunked(ChunkedLayout::new(
            LayoutVersion::V4,
            &[16],
            4,
            ChunkIndex::SkipList(SkipListParams {
                max_height: 32,
                steps_per_supernode: 64,
            }),
            Some(Addr(0x800)),
        ));
        let mut out = Vec::new();
        l.encode(&mut crate::cursor::Encoder::new(
            &mut out,
            crate::Sizes::DEFAULT,
            "t",
        ))
        .unwrap();
        assert_eq!(out[7], SKIP_LIST_INDEX_TYPE); // after version, class, flags, nd, enc, 2 dims
        let mut d = Decoder::new(&out, Addr(0), crate::Sizes::DEFAULT, "t");
        assert_eq!(DataLayout::decode(&mut d).unwrap(), l);
        assert_eq!(l.encoded_len(crate::Sizes::DEFAULT), out.len());
    }

    use super::*;

    fn decode(body: &[u8]) -> Result<DataLayout> {
        DataLayout::decode(&mut Decoder::new(
            body,
            Addr(0xed),
            Sizes::DEFAULT,
            STRUCTURE,
        ))
    }

    fn encode(l: &DataLayout) -> Vec<u8> {
        let mut out = Vec::new();
        l.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, STRUCTURE))
            .unwrap();
        assert_eq!(out.len(), l.encoded_len(Sizes::DEFAULT));
        out
    }

    fn chunked(
        version: LayoutVersion,
        dims: &[u64],
        elem: u64,
        index: ChunkIndex,
        addr: Option<u64>,
    ) -> DataLayout {
        DataLayout::Chunked(ChunkedLayout::new(
            version,
            dims,
            elem,
            index,
            addr.map(Addr),
        ))
    }

    /// Every example of docs/format/chunk-index-format.md §1 and docs/format/file-format.md §4.5 / §9.1.
    #[rustfmt::skip]
    fn cases() -> Vec<(&'static str, Vec<u8>, DataLayout)> {
        use LayoutVersion::*;
        vec![
            ("v3 u1 chunk (1,)", vec![
                0x03,                                   // version 3
                0x02,                                   // class: chunked
                0x02,                                   // nd = rank 1 + 1
                0x78, 0x05, 0, 0, 0, 0, 0, 0,           // v1 B-tree address 1400
                0x01, 0, 0, 0,                          // chunk dim 1
                0x01, 0, 0, 0,                          // element size 1
            ], chunked(V3, &[1], 1, ChunkIndex::BTreeV1, Some(1400))),
            ("v3 i4 chunk (4,), unallocated", vec![
                0x03, 0x02, 0x02,                       // version 3, chunked, nd 2
                0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // B-tree address UNDEF
                0x04, 0, 0, 0,                          // chunk dim 4
                0x04, 0, 0, 0,                          // element size 4
            ], chunked(V3, &[4], 4, ChunkIndex::BTreeV1, None)),
            ("v4 fixed array i4 chunk (3,5)", vec![
                0x04,                                   // version 4
                0x02,                                   // class: chunked
                0x00,                                   // flags
                0x03,                                   // nd = rank 2 + 1
                0x01,                                   // enc = 1 byte per dim
                0x03, 0x05, 0x04,                       // dims 3, 5, element size 4
                0x03,                                   // index type 3: fixed array
                0x0a,                                   // max_dblk_page_nelmts_bits 10
                0xbf, 0x01, 0, 0, 0, 0, 0, 0,           // FAHD address 0x1bf
            ], chunked(V4, &[3, 5], 4, ChunkIndex::FIXED_ARRAY_DEFAULT, Some(0x1bf))),
            ("v4 extensible array u1 chunk (1,)", vec![
                0x04, 0x02, 0x00,                       // version 4, chunked, flags 0
                0x02, 0x01,                             // nd 2, enc 1
                0x01, 0x01,                             // dims 1, element size 1
                0x04,                                   // index type 4: extensible array
                0x20,                                   // max_nelmts_bits 32
                0x04,                                   // idx_blk_elmts 4
                0x04,                                   // sup_blk_min_data_ptrs 4
                0x10,                                   // data_blk_min_elmts 16
                0x0a,                                   // max_dblk_page_nelmts_bits 10
                0xcf, 0x01, 0, 0, 0, 0, 0, 0,           // EAHD address 0x1cf
            ], chunked(V4, &[1], 1, ChunkIndex::ExtensibleArray(EarrayParams::DEFAULT), Some(0x1cf))),
            ("v4 extensible array i4 chunk (4,), unallocated", vec![
                0x04, 0x02, 0x00, 0x02, 0x01,           // version 4, chunked, flags 0, nd 2, enc 1
                0x04, 0x04,                             // dims 4, element size 4
                0x04, 0x20, 0x04, 0x04, 0x10, 0x0a,     // EA index, default parameters
                0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // UNDEF
            ], chunked(V4, &[4], 4, ChunkIndex::ExtensibleArray(EarrayParams::DEFAULT), None)),
            ("v4 v2 B-tree i4 chunk (2,3)", vec![
                0x04, 0x02, 0x00, 0x03, 0x01,           // version 4, chunked, flags 0, nd 3, enc 1
                0x02, 0x03, 0x04,                       // dims 2, 3, element size 4
                0x05,                                   // index type 5: v2 B-tree
                0x00, 0x08, 0x00, 0x00,                 // node size 2048
                0x64,                                   // split percent 100
                0x28,                                   // merge percent 40
                0x01, 0x03, 0, 0, 0, 0, 0, 0,           // BTHD address 0x301
            ], chunked(V4, &[2, 3], 4, ChunkIndex::BTreeV2(Btree2Params::DEFAULT), Some(0x301))),
            ("v4 single chunk with gzip, i8 chunk (30,30)", vec![
                0x04, 0x02,                             // version 4, chunked
                0x02,                                   // flags: SINGLE_INDEX_WITH_FILTER
                0x03, 0x01,                             // nd 3, enc 1
                0x1e, 0x1e, 0x08,                       // dims 30, 30, element size 8
                0x01,                                   // index type 1: single chunk
                0x79, 0x05, 0, 0, 0, 0, 0, 0,           // filtered chunk size 1401
                0x00, 0x00, 0x00, 0x00,                 // filter mask 0
                0xef, 0x1e, 0, 0, 0, 0, 0, 0,           // chunk address 0x1eef
            ], chunked(V4, &[30, 30], 8,
                ChunkIndex::Single(Some(FilteredChunk { size: 1401, filter_mask: 0 })), Some(0x1eef))),
            ("v5 single chunk with gzip", vec![
                0x05, 0x02, 0x02, 0x03, 0x01,           // version 5, chunked, filter flag, nd 3, enc 1
                0x1e, 0x1e, 0x08,                       // dims 30, 30, element size 8
                0x01,                                   // single chunk
                0x79, 0x05, 0, 0, 0, 0, 0, 0,           // filtered chunk size 1401
                0x00, 0x00, 0x00, 0x00,                 // filter mask 0
                0xef, 0x1e, 0, 0, 0, 0, 0, 0,           // chunk address
            ], chunked(V5, &[30, 30], 8,
                ChunkIndex::Single(Some(FilteredChunk { size: 1401, filter_mask: 0 })), Some(0x1eef))),
            ("v4 implicit i2 chunk (2,3)", vec![
                0x04, 0x02, 0x00, 0x03, 0x01,           // version 4, chunked, flags 0, nd 3, enc 1
                0x02, 0x03, 0x02,                       // dims 2, 3, element size 2
                0x02,                                   // index type 2: implicit
                0xa7, 0x1e, 0, 0, 0, 0, 0, 0,           // first chunk address 0x1ea7
            ], chunked(V4, &[2, 3], 2, ChunkIndex::Implicit, Some(0x1ea7))),
            ("v4 unfiltered single chunk, enc 2", vec![
                0x04, 0x02, 0x00, 0x03,                 // version 4, chunked, flags 0, nd 3
                0x02,                                   // enc 2
                0x01, 0x00, 0xe8, 0x03, 0x04, 0x00,     // dims 1, 1000, element size 4
                0x01,                                   // single chunk, no parameters
                0x00, 0x10, 0, 0, 0, 0, 0, 0,           // chunk address 0x1000
            ], chunked(V4, &[1, 1000], 4, ChunkIndex::Single(None), Some(0x1000))),
            ("v3 contiguous", vec![
                0x03, 0x01,                             // version 3, contiguous
                0x00, 0x08, 0, 0, 0, 0, 0, 0,           // address 0x800
                0x28, 0, 0, 0, 0, 0, 0, 0,              // size 40
            ], DataLayout::Contiguous { version: V3, address: Some(Addr(0x800)), size: 40 }),
            ("v4 compact", vec![
                0x04, 0x00,                             // version 4, compact
                0x04, 0x00,                             // size 4
                0x01, 0x02, 0x03, 0x04,                 // raw data
            ], DataLayout::Compact { version: V4, data: vec![1, 2, 3, 4] }),
        ]
    }

    #[test]
    fn decode_every_documented_layout() {
        for (name, bytes, expected) in cases() {
            let l = decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(l, expected, "{name}");
            assert_eq!(encode(&l), bytes, "{name}");
            let mut padded = bytes.clone();
            padded.resize(bytes.len().next_multiple_of(8), 0);
            assert_eq!(decode(&padded).unwrap(), expected, "{name} padded");
        }
    }

    #[test]
    fn helpers() {
        let l = decode(&cases()[5].1).unwrap();
        let c = l.as_chunked().unwrap();
        assert_eq!(l.version(), 4);
        assert_eq!(c.rank(), 2);
        assert_eq!(c.chunk_dims(), &[2, 3]);
        assert_eq!(c.element_size(), 4);
        assert_eq!(c.chunk_bytes(), Some(24));
        assert_eq!(min_enc(&[1, 1000, 4]), 2);
        assert_eq!(min_enc(&[255]), 1);
        assert_eq!(min_enc(&[256]), 2);
        assert_eq!(min_enc(&[1 << 32]), 5);
        assert_eq!(min_enc(&[u64::MAX]), 8);
        assert_eq!(min_enc(&[]), 1);
    }

    #[test]
    fn keeps_stored_enc() {
        // enc 4 where 1 would do: kept, so the bytes come back unchanged.
        #[rustfmt::skip]
        let body = [
            0x04, 0x02, 0x00, 0x02, // version 4, chunked, flags 0, nd 2
            0x04,                   // enc 4
            0x04, 0, 0, 0,          // chunk dim 4
            0x04, 0, 0, 0,          // element size 4
            0x02,                   // implicit
            0x00, 0x10, 0, 0, 0, 0, 0, 0, // address
        ];
        let l = decode(&body).unwrap();
        assert_eq!(l.as_chunked().unwrap().enc, 4);
        assert_eq!(encode(&l), body);
    }

    #[test]
    fn decode_legacy_is_read_only() {
        #[rustfmt::skip]
        let v1_chunked = [
            0x01,                         // version 1
            0x02,                         // dimensionality 2
            0x02,                         // class: chunked
            0, 0, 0, 0, 0,                // reserved
            0x00, 0x04, 0, 0, 0, 0, 0, 0, // B-tree address 0x400
            0x08, 0, 0, 0,                // chunk dim 8
            0x04, 0, 0, 0,                // element size 4
        ];
        let l = decode(&v1_chunked).unwrap();
        assert_eq!(
            l,
            DataLayout::Legacy(LegacyLayout {
                version: 1,
                class: LegacyClass::Chunked,
                address: Some(Addr(0x400)),
                dims: vec![8, 4],
                compact_data: vec![],
            })
        );
        assert_eq!(l.encoded_len(Sizes::DEFAULT), v1_chunked.len());
        let mut out = Vec::new();
        assert!(matches!(
            l.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, STRUCTURE)),
            Err(Error::Unencodable { .. })
        ));
        #[rustfmt::skip]
        let v2_compact = [
            0x02, 0x01, 0x00,             // version 2, dimensionality 1, compact
            0, 0, 0, 0, 0,                // reserved
            0x03, 0, 0, 0,                // dim 3
            0x03, 0, 0, 0,                // size 3
            0x0a, 0x0b, 0x0c,             // raw data
        ];
        let l = decode(&v2_compact).unwrap();
        assert_eq!(l.encoded_len(Sizes::DEFAULT), v2_compact.len());
        match l {
            DataLayout::Legacy(x) => assert_eq!(x.compact_data, vec![0x0a, 0x0b, 0x0c]),
            other => panic!("{other:?}"),
        }
        for body in [&v1_chunked[..], &v2_compact] {
            for n in 0..body.len() {
                assert!(decode(&body[..n]).is_err(), "prefix {n}");
            }
        }
    }

    #[test]
    fn legacy_layouts_upgrade_to_version_3() {
        let legacy = |class, address, dims: Vec<u32>, compact_data: Vec<u8>| LegacyLayout {
            version: 1,
            class,
            address,
            dims,
            compact_data,
        };
        // Chunked: same dims (element size last), v1 B-tree, version 3 wire form.
        let up = legacy(LegacyClass::Chunked, Some(Addr(0x400)), vec![8, 4], vec![]).upgraded(0);
        assert_eq!(
            up,
            chunked(LayoutVersion::V3, &[8], 4, ChunkIndex::BTreeV1, Some(0x400))
        );
        assert_eq!(up.as_chunked().unwrap().chunk_bytes(), Some(32));
        // Contiguous: the size comes from the dataspace, not the (32-bit) dims.
        let up = legacy(
            LegacyClass::Contiguous,
            Some(Addr(0x800)),
            vec![7, 8],
            vec![],
        )
        .upgraded(1 << 33);
        assert_eq!(
            up,
            DataLayout::Contiguous {
                version: LayoutVersion::V3,
                address: Some(Addr(0x800)),
                size: 1 << 33
            }
        );
        // Never allocated stays so.
        let up = legacy(LegacyClass::Contiguous, None, vec![7], vec![]).upgraded(7);
        assert!(matches!(up, DataLayout::Contiguous { address: None, .. }));
        // Compact: the data as stored; the upgrade encodes as version 3.
        let up = legacy(LegacyClass::Compact, None, vec![3], vec![1, 2, 3]).upgraded(3);
        assert_eq!(
            up,
            DataLayout::Compact {
                version: LayoutVersion::V3,
                data: vec![1, 2, 3]
            }
        );
        assert_eq!(encode(&up), [3, 0, 3, 0, 1, 2, 3]);
    }

    #[test]
    fn decode_virtual_layout() {
        // What h5py 3.16 wrote for a virtual dataset: version 4, class 3, the mappings'
        // collection address and object index.
        #[rustfmt::skip]
        let b = [
            4, 3,                                   // version 4, class virtual
            0x00, 0x08, 0, 0, 0, 0, 0, 0,           // collection at 0x800
            1, 0, 0, 0,                             // object 1
        ];
        let l = decode(&b).unwrap();
        assert_eq!(
            l,
            DataLayout::Virtual {
                version: LayoutVersion::V4,
                heap: Some(Addr(0x800)),
                index: 1
            }
        );
        assert_eq!(encode(&l), b);
        assert_eq!(l.encoded_len(Sizes::DEFAULT), b.len());
        for n in 0..b.len() {
            assert!(decode(&b[..n]).is_err());
        }
    }

    #[test]
    fn rejects_truncation() {
        for (name, bytes, _) in cases() {
            for n in 0..bytes.len() {
                assert!(decode(&bytes[..n]).is_err(), "{name} prefix {n}");
            }
        }
    }

    #[test]
    fn rejects_bad_values_with_address() {
        let ea = cases()[3].1.clone();
        let mut b = ea.clone();
        b[0] = 6;
        assert!(matches!(
            decode(&b),
            Err(Error::BadVersion {
                at: Addr(0xed),
                version: 6,
                ..
            })
        ));
        b[0] = 0;
        assert!(matches!(
            decode(&b),
            Err(Error::BadVersion { version: 0, .. })
        ));
        let mut b = ea.clone();
        b[1] = 4;
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                at: Addr(0xee),
                value: 4,
                ..
            })
        ));
        let mut b = ea.clone();
        b[2] = 0x04; // unknown flag
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                at: Addr(0xef),
                value: 4,
                ..
            })
        ));
        let mut b = ea.clone();
        b[3] = 1; // nd 1
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                at: Addr(0xf0),
                value: 1,
                ..
            })
        ));
        b[3] = 34;
        assert!(matches!(decode(&b), Err(Error::BadValue { value: 34, .. })));
        let mut b = ea.clone();
        b[4] = 9; // enc 9
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                at: Addr(0xf1),
                value: 9,
                ..
            })
        ));
        b[4] = 0;
        assert!(matches!(decode(&b), Err(Error::BadValue { value: 0, .. })));
        let mut b = ea.clone();
        b[5] = 0; // chunk dim 0
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                at: Addr(0xf2),
                value: 0,
                ..
            })
        ));
        let mut b = ea.clone();
        b[7] = 0; // index type 0 (v1 B-tree) in version 4
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                at: Addr(0xf4),
                value: 0,
                ..
            })
        ));
        b[7] = 6;
        assert!(matches!(decode(&b), Err(Error::BadValue { value: 6, .. })));
        let mut b = ea.clone();
        b[10] = 0; // sup_blk_min_data_ptrs 0
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                at: Addr(0xf7),
                value: 0,
                ..
            })
        ));
        let mut b = cases()[2].1.clone();
        b[9] = 0; // fixed array page bits 0
        assert!(matches!(decode(&b), Err(Error::BadValue { value: 0, .. })));
        let mut b = cases()[0].1.clone();
        b[2] = 1; // v3 nd 1
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                at: Addr(0xef),
                value: 1,
                ..
            })
        ));
        let mut b = cases()[0].1.clone();
        b[1] = 3; // virtual in version 3
        assert!(matches!(decode(&b), Err(Error::BadValue { .. })));
    }

    #[test]
    fn rejects_unencodable() {
        let mut out = Vec::new();
        let mut e = Encoder::new(&mut out, Sizes::DEFAULT, STRUCTURE);
        let bad = [
            chunked(LayoutVersion::V3, &[4], 4, ChunkIndex::Implicit, None),
            chunked(LayoutVersion::V4, &[4], 4, ChunkIndex::BTreeV1, None),
            chunked(LayoutVersion::V4, &[], 4, ChunkIndex::Implicit, None),
        ];
        for l in &bad {
            assert!(
                matches!(l.encode(&mut e), Err(Error::Unencodable { .. })),
                "{l:?}"
            );
        }
        let mut c = ChunkedLayout::new(LayoutVersion::V4, &[4], 4, ChunkIndex::Single(None), None);
        c.flags = ChunkedFlags::SINGLE_INDEX_WITH_FILTER;
        assert!(DataLayout::Chunked(c).encode(&mut e).is_err());
        let mut c = ChunkedLayout::new(LayoutVersion::V4, &[300], 4, ChunkIndex::Implicit, None);
        c.enc = 1;
        assert!(matches!(
            DataLayout::Chunked(c).encode(&mut e),
            Err(Error::TooWide { .. })
        ));
        let c = ChunkedLayout::new(LayoutVersion::V3, &[1 << 32], 4, ChunkIndex::BTreeV1, None);
        assert!(matches!(
            DataLayout::Chunked(c).encode(&mut e),
            Err(Error::TooWide { .. })
        ));
    }
}
