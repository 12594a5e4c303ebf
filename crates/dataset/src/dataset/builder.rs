//! Creating a dataset: the builder (as h5py's `create_dataset` or hdf5-metno's builder), which
//! chooses the chunk index as libhdf5 does and writes the dataset's object header.

use std::sync::Arc;

use h5chunk_format::chunk_record::{RecordCodec, chunk_size_len};
use h5chunk_format::cursor::Encoder;
use h5chunk_format::message::fill_value::AllocTime as FillAlloc;
use h5chunk_format::message::{
    ChunkedFlags, ChunkedLayout, DataLayout, Dataspace, DataspaceKind, DataspaceVersion, Extent,
    FillDefinition, FillTime, FillValue, FillValueOld, FillValueVersion, Filter, FilterPipeline,
    LayoutVersion, Message, PipelineVersion, filter_pipeline::id,
};
use h5chunk_format::message::{ExternalFiles, ExternalSlot, MessageType};
use h5chunk_format::object_header::MessageFlags;

use crate::chunk_cache::{ChunkCache, DEFAULT_BUDGET};
use crate::dataset::chunked::Chunked;
use crate::dataset::fresh::Fresh;
use crate::dataset::{Dataset, DatasetState, StorageState, external};
use crate::error::{Error, Result};
use crate::file::File;
use crate::filters::Pipeline;
use crate::index::adapter::{self, Shape};
use crate::index::select::{AllocTime, IndexKind, IndexRequest, choose};
use crate::link::{self, At, Resolver};
use crate::store::{HeaderPad, Store};
use crate::types::{Datatype, DatatypeClass, H5Type, TypeClass, TypeDesc, VarLenKind};

/// A filter to apply when creating a dataset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterSpec {
    /// gzip at a level 0..=9.
    Deflate(u32),
    /// Byte shuffle.
    Shuffle,
    /// Fletcher32 checksum.
    Fletcher32,
    /// LZF (h5py's filter 32000).
    Lzf,
    /// LZ4 (filter 32004) in blocks of this many bytes (0: the filter's default, 1 GiB), each
    /// stored raw when LZ4 does not make it smaller. Chunks are byte-identical to the reference
    /// filter's (hdf5plugin's `LZ4(nbytes)`).
    Lz4(u32),
    /// Bitshuffle (filter 32008) in blocks of `block_size` elements (a multiple of 8; 0: the
    /// filter's default, 8 KiB worth of elements), then the blocks' compression. Without
    /// compression and with LZ4, chunks are byte-identical to the reference filter's
    /// (hdf5plugin's `Bitshuffle(nelems, cname)`).
    Bitshuffle {
        /// Elements per block (0: the default).
        block_size: u32,
        /// What compresses each block.
        compression: BitshuffleCompression,
    },
    /// Zstandard (filter 32015) at a level. The level is recorded as given, but every level
    /// encodes with the pure-Rust encoder's fastest setting (close to libzstd's level 1).
    Zstd(i32),
    /// bzip2 (filter 307, PyTables' and hdf5plugin's) with blocks of 100 kB × this level
    /// (1..=9).
    Bzip2(u32),
    /// Blosc (filter 32001, hdf5plugin's `Blosc(cname, clevel, shuffle)`): c-blosc 1 buffers of
    /// shuffled blocks compressed with a codec at a level (1..=9; 0 and data that does not
    /// compress leave the chunk unfiltered, as the reference filter does).
    Blosc {
        /// The codec of the blocks.
        codec: BloscCodec,
        /// The level, 0..=9.
        level: u8,
        /// The shuffle before compression.
        shuffle: BloscShuffle,
    },
    /// Blosc2 (filter 32026, hdf5plugin's `Blosc2(cname, clevel, filters)`): one c-blosc2
    /// frame per chunk (a plain super-chunk, as hdf5-blosc2 writes chunks of one dimension and
    /// reads chunks of any), at a level 0..=9 (0: stored raw in the frame).
    Blosc2 {
        /// The codec of the blocks.
        codec: BloscCodec,
        /// The level, 0..=9.
        level: u8,
        /// The filter before compression (hdf5plugin's `NOFILTER`, `SHUFFLE`, `BITSHUFFLE`,
        /// `DELTA`; its lossy `TRUNC_PREC` is read, and refused when writing).
        shuffle: BloscShuffle,
    },
    /// PyTables' LZO filter (305): LZO1X streams of our own greedy compressor, which liblzo2
    /// (PyTables built with LZO) decodes; chunks LZO does not shrink are stored unfiltered.
    /// Client data `[1, 23, 0]` (level 1, object version 23, type 0), as PyTables 2.x Tables
    /// record them: streams without the checksum trailer of PyTables before 0.8.
    Lzo,
    /// szip (filter 4, CCSDS 121.0 adaptive entropy coding as libaec writes it for libhdf5):
    /// `nn` the nearest-neighbour predictor (else entropy coding only), blocks of
    /// `pixels_per_block` pixels (an even number, 2..=32); h5py's
    /// `compression='szip', compression_opts=('nn' or 'ec', pixels_per_block)`. The client data
    /// are those libhdf5's set_local makes (byte order, bits per pixel, scanline). Chunks the
    /// coding does not shrink are stored unfiltered, as libhdf5's filter leaves them.
    Szip {
        /// The nearest-neighbour predictor.
        nn: bool,
        /// Pixels per block.
        pixels_per_block: u32,
    },
}

/// The codec of the Blosc filters' blocks (hdf5plugin's `cname`). LZ4HC blocks are written by
/// the LZ4 compressor (the same format), Zstandard at its fastest setting whatever the level;
/// the level is recorded as given. Snappy is read nowhere and not offered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BloscCodec {
    /// BloscLZ (Blosc's own LZ77 codec; hdf5plugin's default).
    BloscLz,
    /// LZ4.
    Lz4,
    /// LZ4HC (the LZ4 format).
    Lz4Hc,
    /// zlib.
    Zlib,
    /// Zstandard.
    Zstd,
}

impl BloscCodec {
    /// The filters' compressor code (client data 6).
    fn code(self) -> u32 {
        match self {
            BloscCodec::BloscLz => 0,
            BloscCodec::Lz4 => 1,
            BloscCodec::Lz4Hc => 2,
            BloscCodec::Zlib => 4,
            BloscCodec::Zstd => 5,
        }
    }
}

/// The shuffle the Blosc filters apply to each block before compressing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BloscShuffle {
    /// None.
    None,
    /// Byte shuffle (hdf5plugin's default).
    Byte,
    /// Bit shuffle.
    Bit,
    /// Blosc2's delta filter (hdf5plugin's `Blosc2.DELTA`): words XORed with their
    /// predecessor in a chunk's first block, with the first block's elsewhere. Blosc 1 has no
    /// delta: [`FilterSpec::Blosc`] refuses it.
    Delta,
}

impl BloscShuffle {
    fn code(self) -> u32 {
        match self {
            BloscShuffle::None => 0,
            BloscShuffle::Byte => 1,
            BloscShuffle::Bit => 2,
            BloscShuffle::Delta => 3,
        }
    }
}

/// The compression after bitshuffle's bit transpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitshuffleCompression {
    /// None: the chunk is the transposed blocks.
    None,
    /// LZ4 blocks (what detectors write).
    Lz4,
    /// Zstandard frames at a level (encoded at the fastest setting whatever the level, as
    /// [`FilterSpec::Zstd`]).
    Zstd(i32),
}

/// The Blosc2 filter's identifier (hdf5-blosc2), which the format crate does not name.
const BLOSC2: u16 = 32026;
/// PyTables' LZO filter's identifier.
const LZO: u16 = 305;

/// The szip client data libhdf5's set_local makes: the options mask (raw, K13 allowed, the
/// predictor or entropy coding only, the byte order), pixels per block, bits per pixel, and
/// pixels per scanline (the chunk's fastest dimension, at most 128 blocks; when shorter than a
/// block, 128 blocks or the whole chunk).
fn szip_client_data(nn: bool, ppb: u32, elem: u64, big_endian: bool, chunk: &[u64]) -> Vec<u32> {
    const RAW: u32 = 128;
    const ALLOW_K13: u32 = 1;
    const NN: u32 = 32;
    const EC: u32 = 4;
    const MSB: u32 = 16;
    const LSB: u32 = 8;
    let mask = RAW | ALLOW_K13 | if nn { NN } else { EC } | if big_endian { MSB } else { LSB };
    let max_line = u64::from(ppb).saturating_mul(128);
    let fastest = chunk.last().copied().unwrap_or(1);
    let points = chunk.iter().product::<u64>();
    let line = if fastest < u64::from(ppb) {
        max_line.min(points)
    } else {
        max_line.min(fastest)
    };
    vec![
        mask,
        ppb,
        u32::try_from(elem.saturating_mul(8)).unwrap_or(0),
        u32::try_from(line).unwrap_or(0),
    ]
}

/// Messages of a new object header, with their flags.
type HeaderMessages = Vec<(Message, MessageFlags)>;

/// Builds a new dataset: chunked (any index kind), or contiguous in external files
/// ([`external`](Self::external)).
#[derive(Debug)]
pub struct DatasetBuilder {
    file: File,
    group: Option<At>,
    dtype: TypeDesc,
    shape: Vec<u64>,
    max_shape: Option<Vec<Option<u64>>>,
    chunk: Option<Vec<u64>>,
    fill: Option<Vec<u8>>,
    alloc_time: AllocTime,
    filters: Vec<FilterSpec>,
    /// A pipeline given as stored (id, client data, optional) rather than as specs.
    stored_filters: Option<Vec<super::inspect::FilterInfo>>,
    /// A contiguous dataset of these stored bytes (`None` inside: not allocated).
    contiguous: Option<Option<Vec<u8>>>,
    index: Option<IndexKind>,
    dont_filter_partial: bool,
    cache_bytes: usize,
    external: Option<Vec<(String, u64, Option<u64>)>>,
    /// The stored type, when given as a Datatype rather than a number type.
    datatype: Option<Datatype>,
    /// The dataset's attributes keep their creation order (h5py's `track_order=True`).
    track_order: bool,
    /// Mappings of a virtual dataset (none: not virtual).
    virtual_maps: Vec<super::vds::write::VirtualMap>,
}

impl DatasetBuilder {
    pub(crate) fn new(file: File, dtype: TypeDesc) -> DatasetBuilder {
        DatasetBuilder {
            file,
            group: None,
            dtype,
            shape: Vec::new(),
            max_shape: None,
            chunk: None,
            fill: None,
            alloc_time: AllocTime::Incremental,
            filters: Vec::new(),
            stored_filters: None,
            contiguous: None,
            index: None,
            dont_filter_partial: false,
            cache_bytes: DEFAULT_BUDGET,
            external: None,
            datatype: None,
            track_order: false,
            virtual_maps: Vec::new(),
        }
    }

    /// A builder of a dataset of elements of `datatype` as stored.
    pub(crate) fn with_datatype(file: File, mut datatype: Datatype) -> DatasetBuilder {
        // A variable-length element is a heap ID, as wide as the file's addresses make it.
        if matches!(datatype.class, DatatypeClass::VarLen { .. }) {
            let len = h5chunk_format::global_heap::HeapId::encoded_len(file.inner.store.sizes);
            datatype.size = u32::try_from(len).unwrap_or(16);
        }
        let dtype = TypeDesc::of(&datatype).unwrap_or(TypeDesc {
            class: crate::types::TypeClass::Other,
            size: 0,
            order: crate::types::ByteOrder::LittleEndian,
        });
        DatasetBuilder {
            datatype: Some(datatype),
            ..DatasetBuilder::new(file, dtype)
        }
    }

    pub(crate) fn in_group(mut self, g: At) -> Self {
        self.group = Some(g);
        self
    }

    /// Current dimensions.
    pub fn shape(mut self, shape: &[u64]) -> Self {
        self.shape = shape.to_vec();
        self
    }

    /// Maximum dimensions; `None` is unlimited (default: the current dimensions).
    pub fn max_shape(mut self, max: &[Option<u64>]) -> Self {
        self.max_shape = Some(max.to_vec());
        self
    }

    /// Chunk dimensions.
    pub fn chunk(mut self, chunk: &[u64]) -> Self {
        self.chunk = Some(chunk.to_vec());
        self
    }

    /// The fill value of unwritten elements (default: zero).
    pub fn fill_value<T: H5Type>(mut self, v: T) -> Self {
        let mut b = vec![0u8; T::DESC.size];
        v.write_le(&mut b);
        self.fill = Some(b);
        self
    }

    /// The fill value as little-endian bytes of one element of the dataset's type.
    pub fn fill_value_bytes(mut self, le: &[u8]) -> Self {
        self.fill = Some(le.to_vec());
        self
    }

    /// When chunks are allocated (default: incrementally).
    pub fn alloc_time(mut self, t: AllocTime) -> Self {
        self.alloc_time = t;
        self
    }

    /// Add a filter (applied in the order added when writing).
    pub fn filter(mut self, f: FilterSpec) -> Self {
        self.filters.push(f);
        self
    }

    /// Use this filter pipeline as another dataset stores it ([`Dataset::filters`]): each
    /// filter's id, client data and optional flag kept as they are, so chunks copied with
    /// [`Dataset::read_direct_chunk`] and [`Dataset::write_direct_chunk`] decode the same
    /// (`h5chunk repack`). Replaces filters added with [`filter`](Self::filter); a filter
    /// h5chunk cannot run is refused, typed, when the dataset is created.
    pub fn stored_filters(mut self, filters: &[super::inspect::FilterInfo]) -> Self {
        self.stored_filters = Some(filters.to_vec());
        self
    }

    /// Make a contiguous dataset (libhdf5's default layout) holding `stored`: its elements in
    /// C order in the file's byte order (as [`Dataset::contiguous_extent`] finds them in
    /// another file), written once when the dataset is created; `None` leaves the data
    /// unallocated (reads see the fill value). No chunks, filters or growing dimensions; the
    /// dataset is then read-only to h5chunk (writing contiguous datasets is refused, typed).
    pub fn contiguous(mut self, stored: Option<Vec<u8>>) -> Self {
        self.contiguous = Some(stored);
        self
    }

    /// Use this index instead of libhdf5's choice.
    pub fn index(mut self, kind: IndexKind) -> Self {
        self.index = Some(kind);
        self
    }

    /// Store partial edge chunks unfiltered (`H5Pset_chunk_opts`; forces layout version 4).
    pub fn dont_filter_partial_chunks(mut self) -> Self {
        self.dont_filter_partial = true;
        self
    }

    /// Keep the creation order of the dataset's attributes (h5py's `track_order=True`,
    /// libhdf5's `H5Pset_attr_creation_order` with tracking and indexing): h5py then lists
    /// them in the order made. Needs the 1.8+ format (refused, typed, under the earliest
    /// library version bounds).
    pub fn track_order(mut self, on: bool) -> Self {
        self.track_order = on;
        self
    }

    /// The chunk cache's byte budget (default 8 MiB).
    pub fn chunk_cache_bytes(mut self, n: usize) -> Self {
        self.cache_bytes = n;
        self
    }

    /// Keep the dataset's bytes in other files (libhdf5's `H5Pset_external`, h5py's
    /// `external=[(name, offset, size), ...]`): each part a file name, where the part starts in
    /// that file, and its bytes (`None`: unlimited, the last part only). The parts, one after
    /// the other, hold the dataset's bytes (C order, the file's byte order) and must hold all
    /// of them. The storage is contiguous: no [`chunk`](Self::chunk), no filter, fixed
    /// dimensions. Files are created on the first write and never truncated. Relative names
    /// resolve as libhdf5 resolves them: under `HDF5_EXTFILE_PREFIX` when set (`${ORIGIN}`:
    /// the HDF5 file's directory), else the current working directory.
    pub fn external(mut self, parts: &[(&str, u64, Option<u64>)]) -> Self {
        self.external = Some(
            parts
                .iter()
                .map(|&(name, offset, size)| (name.to_owned(), offset, size))
                .collect(),
        );
        self
    }

    /// Make a virtual dataset (h5py's `VirtualLayout`, `H5Pset_virtual`): the elements
    /// `source` selects of the dataset `source_dataset` in the file `source_file` (`.`: this
    /// file; a relative name is found as libhdf5 finds it, from the virtual file's folder;
    /// `%b` stands for the block number of an unlimited mapping) show at the elements
    /// `target` selects. Mappings apply in the order given; the dataset has no storage of
    /// its own, and elements no mapping reaches read as the fill value.
    pub fn virtual_map(
        mut self,
        source_file: &str,
        source_dataset: &str,
        source: super::vds::VirtualSelection,
        target: super::vds::VirtualSelection,
    ) -> Self {
        self.virtual_maps.push(super::vds::write::VirtualMap {
            file: source_file.to_owned(),
            dataset: source_dataset.to_owned(),
            source,
            target,
        });
        self
    }

    /// Create the dataset at `path` (relative to the builder's group, or absolute).
    pub fn create(mut self, path: &str) -> Result<Dataset> {
        // The parent group first, following soft and external links: past an external link
        // the dataset is made in the file it names (opened as the linking file is, so
        // writable when it is), as h5py's `create_dataset` makes it there.
        let (parent_path, name) = link::split_relative(path)?;
        let start = match self.group.clone() {
            Some(g) => g,
            None => At {
                addr: self.file.inner.root()?,
                path: "/".into(),
            },
        };
        let (in_file, parent) =
            crate::extlink::reach(&self.file, &start, parent_path, link::MemberKind::Group)?;
        self.file = in_file;
        self.group = Some(parent);
        let path = name;
        let file = Arc::clone(&self.file.inner);
        let f = &file.store;
        f.check_writable()?;
        f.check_no_swmr("dataset")?;
        let datatype = match &self.datatype {
            Some(t) => {
                if let DatatypeClass::VarLen {
                    kind: VarLenKind::Sequence,
                    base,
                } = &t.class
                {
                    // What `write_sequences` writes and `read_sequences` reads: numbers.
                    if TypeDesc::from_datatype(base).is_err() {
                        return Err(Error::Unsupported(
                            "creating datasets of variable-length sequences of other than \
                             integers and floats",
                        ));
                    }
                    if self.external.is_some() {
                        return Err(Error::Unsupported(
                            "external storage of variable-length sequences",
                        ));
                    }
                }
                if self.external.is_some() && self.dtype.class == TypeClass::VarLenString {
                    return Err(Error::Unsupported(
                        "external storage of variable-length strings",
                    ));
                }
                if self.dtype.size == 0 {
                    return Err(Error::arg("datatype", "elements of zero bytes"));
                }
                t.clone()
            }
            None => self.dtype.to_datatype().ok_or(Error::Unsupported(
                "creating datasets of types other than integers and floats",
            ))?,
        };
        let (parent_path, name) = link::split_relative(path)?;
        let resolver = Resolver {
            store: f,
            root: file.root()?,
        };
        let start = self.group.clone().unwrap_or_else(|| At {
            addr: resolver.root,
            path: "/".into(),
        });
        let parent = resolver.group(&start, parent_path)?;
        if !self.virtual_maps.is_empty() {
            if self.chunk.is_some() || !self.filters.is_empty() || self.external.is_some() {
                return Err(Error::arg(
                    "virtual_map",
                    "a virtual dataset has no chunks, filters or external storage",
                ));
            }
            let max_dims = self
                .max_shape
                .clone()
                .unwrap_or_else(|| self.shape.iter().map(|&d| Some(d)).collect());
            let (heap, index) =
                super::vds::write::store_mappings(f, self.shape.len(), &self.virtual_maps)?;
            let (_, mut messages) =
                self.header_messages(f.bounds.new_style(), &max_dims, &datatype)?;
            messages.push((
                Message::DataLayout(DataLayout::Virtual {
                    version: LayoutVersion::V4,
                    heap: Some(heap),
                    index,
                }),
                MessageFlags::empty(),
            ));
            let header = new_header(f, &parent, name, &messages, self.track_order)?;
            return Dataset::open(&self.file, header, link::child_path(&parent.path, name));
        }
        if let Some(parts) = &self.external {
            return self.create_external(f, &parent, name, datatype, parts);
        }
        if let Some(stored) = &self.contiguous {
            return self.create_contiguous(f, &parent, name, datatype, stored.as_deref());
        }
        let rank = self.shape.len();
        let max_dims = self
            .max_shape
            .clone()
            .unwrap_or_else(|| self.shape.iter().map(|&d| Some(d)).collect());
        let chunk = self
            .chunk
            .clone()
            .ok_or_else(|| Error::arg("chunk", "a chunked dataset needs chunk dimensions"))?;
        if rank == 0 || max_dims.len() != rank || chunk.len() != rank || chunk.contains(&0) {
            return Err(Error::arg(
                "chunk",
                format!(
                    "shape {:?}, max shape {max_dims:?} and chunk {chunk:?} must have one non-zero chunk dimension per dimension",
                    self.shape
                ),
            ));
        }
        for (u, (&d, m)) in self.shape.iter().zip(&max_dims).enumerate() {
            if m.is_some_and(|m| d > m) {
                return Err(Error::arg(
                    "shape",
                    format!("dimension {u}: size {d} above its maximum"),
                ));
            }
        }
        let elem = self.dtype.size as u64;
        let chunk_bytes = chunk
            .iter()
            .try_fold(elem, |acc, &c| acc.checked_mul(c))
            .filter(|&b| b < (1 << 32))
            .ok_or_else(|| Error::arg("chunk", "chunks must hold less than 4 GiB"))?;
        if self.filters.iter().any(|f| {
            matches!(
                f,
                FilterSpec::Blosc {
                    shuffle: BloscShuffle::Delta,
                    ..
                }
            )
        }) {
            return Err(Error::arg(
                "filter",
                "Blosc has no delta filter (Blosc2 has)",
            ));
        }
        let filtered = match &self.stored_filters {
            Some(stored) => !stored.is_empty(),
            None => !self.filters.is_empty(),
        };
        let sel = choose(&IndexRequest {
            dims: &self.shape,
            max_dims: &max_dims,
            chunk: &chunk,
            filtered,
            alloc_time: self.alloc_time,
            dont_filter_partial_chunks: self.dont_filter_partial,
            bounds: f.bounds,
            force: self.index,
        })?;
        let version = match sel.layout_version {
            3 => LayoutVersion::V3,
            4 => LayoutVersion::V4,
            _ => LayoutVersion::V5,
        };
        let pipeline_version = if f.bounds.new_style() {
            PipelineVersion::V2
        } else {
            PipelineVersion::V1
        };
        let stored_msg = self.stored_filters.as_ref().map(|stored| FilterPipeline {
            version: pipeline_version,
            filters: stored
                .iter()
                .map(|f| {
                    let flags = if f.optional {
                        h5chunk_format::message::filter_pipeline::FLAG_OPTIONAL
                    } else {
                        0
                    };
                    Filter::new(pipeline_version, f.id, flags, f.client_data.clone())
                })
                .collect(),
        });
        let pipeline_msg = filtered.then(|| FilterPipeline {
            version: pipeline_version,
            filters: self
                .filters
                .iter()
                .map(|spec| match *spec {
                    FilterSpec::Deflate(level) => {
                        Filter::new(pipeline_version, id::DEFLATE, 1, vec![level])
                    }
                    FilterSpec::Shuffle => {
                        Filter::new(pipeline_version, id::SHUFFLE, 1, vec![elem as u32])
                    }
                    FilterSpec::Fletcher32 => {
                        Filter::new(pipeline_version, id::FLETCHER32, 0, vec![])
                    }
                    FilterSpec::Lzf => Filter::new(
                        pipeline_version,
                        id::LZF,
                        1,
                        vec![4, 261, chunk_bytes as u32],
                    ),
                    // Client data and flags as hdf5plugin writes them (optional filters).
                    FilterSpec::Lz4(block) => {
                        Filter::new(pipeline_version, id::LZ4, 1, vec![block])
                    }
                    FilterSpec::Bitshuffle {
                        block_size,
                        compression,
                    } => {
                        // The filter's version (0.4) that hdf5plugin records, the element size,
                        // the block size, the compression and its level.
                        let mut cd = vec![0, 4, elem as u32, block_size];
                        match compression {
                            BitshuffleCompression::None => cd.push(0),
                            BitshuffleCompression::Lz4 => cd.push(2),
                            BitshuffleCompression::Zstd(level) => {
                                cd.extend([3, level as u32]);
                            }
                        }
                        Filter::new(pipeline_version, id::BITSHUFFLE, 1, cd)
                    }
                    FilterSpec::Zstd(level) => {
                        Filter::new(pipeline_version, id::ZSTD, 1, vec![level as u32])
                    }
                    FilterSpec::Bzip2(level) => {
                        Filter::new(pipeline_version, id::BZIP2, 1, vec![level.clamp(1, 9)])
                    }
                    // The client data hdf5plugin's filters leave after their set_local: the
                    // filter revision and Blosc format, the type size (1 above 255), the chunk's
                    // bytes, then what was asked for.
                    FilterSpec::Blosc {
                        codec,
                        level,
                        shuffle,
                    } => {
                        let typesize = if elem > 255 { 1 } else { elem as u32 };
                        Filter::new(
                            pipeline_version,
                            id::BLOSC,
                            1,
                            vec![
                                2,
                                2,
                                typesize,
                                chunk_bytes as u32,
                                u32::from(level),
                                shuffle.code(),
                                codec.code(),
                            ],
                        )
                    }
                    FilterSpec::Lzo => Filter::new(pipeline_version, LZO, 1, vec![1, 23, 0]),
                    FilterSpec::Szip {
                        nn,
                        pixels_per_block,
                    } => Filter::new(
                        pipeline_version,
                        id::SZIP,
                        1,
                        szip_client_data(
                            nn,
                            pixels_per_block,
                            elem,
                            self.dtype.order == crate::types::ByteOrder::BigEndian,
                            &chunk,
                        ),
                    ),
                    // Revision 1, the block size chosen by the filter (0).
                    FilterSpec::Blosc2 {
                        codec,
                        level,
                        shuffle,
                    } => Filter::new(
                        pipeline_version,
                        BLOSC2,
                        1,
                        vec![
                            1,
                            0,
                            elem as u32,
                            chunk_bytes as u32,
                            u32::from(level),
                            shuffle.code(),
                            codec.code(),
                        ],
                    ),
                })
                .collect(),
        });
        let pipeline_msg = match stored_msg {
            Some(stored) => filtered.then_some(stored),
            None => pipeline_msg,
        };
        // Before anything reaches the file: unusable parameters (a deflate level over 9, a
        // bitshuffle block that is not a multiple of 8) leave no dataset behind.
        let pipeline = pipeline_msg
            .as_ref()
            .map(|p| Pipeline::new(p, elem as usize))
            .transpose()
            .map_err(|source| Error::Pipeline {
                dataset: path.to_owned(),
                source,
            })?;
        let codec = record_codec(f, filtered, version, chunk_bytes)?;
        let shape = Shape {
            dims: self.shape.clone(),
            max_dims: max_dims.clone(),
            chunk: chunk.clone(),
            chunk_bytes,
            codec,
        };
        if f.swmr_write() {
            super::swmr_index(path, sel.kind)?;
        }
        let index = adapter::create(f, &shape, sel.index, sel.kind)?;
        let kind = index.kind();
        let (layout_index, address) = index.layout();
        let mut layout = ChunkedLayout::new(version, &chunk, elem, layout_index, address);
        if self.dont_filter_partial {
            layout.flags |= ChunkedFlags::DONT_FILTER_PARTIAL_BOUND_CHUNKS;
        }
        let new_style = f.bounds.new_style();
        let (fill, mut messages) = self.header_messages(new_style, &max_dims, &datatype)?;
        if let Some(p) = &pipeline_msg {
            messages.push((Message::FilterPipeline(p.clone()), MessageFlags::CONSTANT));
        }
        messages.push((
            Message::DataLayout(DataLayout::Chunked(layout.clone())),
            MessageFlags::empty(),
        ));
        let header = new_header(f, &parent, name, &messages, self.track_order)?;
        let grid = shape.grid();
        let fresh = Fresh::new(grid.len(), usize::try_from(shape.chunk_bytes).unwrap_or(0));
        let state = DatasetState {
            path: link::child_path(&parent.path, name),
            header,
            dtype: self.dtype,
            datatype,
            dims_written: self.shape.clone(),
            dataspace_v2: None,
            null: false,
            storage: StorageState::Chunked(Box::new(Chunked {
                layout_written: (index.layout()),
                layout,
                index,
                shape,
                pipeline,
                fill,
                cache: parking_lot::RwLock::new(h5chunk_cache::CacheLine(ChunkCache::new(
                    &grid,
                    self.cache_bytes,
                ))),
                alloc_early: self.alloc_time == AllocTime::Early,
                // A new index holds no chunk.
                known: Chunked::first_known(kind, vec![0; grid.len()]),
                fresh,
                append_plan: None,
                box_plan: None,
                spare: Vec::new(),
            })),
        };
        let d = Dataset::from_state(&self.file, state)?;
        if self.alloc_time == AllocTime::Early {
            d.allocate_all()?;
        }
        Ok(d)
    }

    /// The messages every new dataset's header starts with (dataspace, datatype, fill value,
    /// and the old fill value message at the earliest bounds), and the fill value, one element
    /// in the file's byte order.
    fn header_messages(
        &self,
        new_style: bool,
        max_dims: &[Option<u64>],
        datatype: &Datatype,
    ) -> Result<(Vec<u8>, HeaderMessages)> {
        let elem = self.dtype.size as u64;
        // The fill value, one element in the file's byte order.
        let mut fill = self.fill.clone().unwrap_or_else(|| vec![0; elem as usize]);
        if fill.len() != elem as usize {
            return Err(Error::arg(
                "fill value",
                format!("{} bytes for {elem}-byte elements", fill.len()),
            ));
        }
        self.dtype.to_from_le(&mut fill);
        let fill_msg = FillValue {
            version: if new_style {
                FillValueVersion::V3
            } else {
                FillValueVersion::V2
            },
            alloc_time: match self.alloc_time {
                AllocTime::Early => FillAlloc::Early,
                AllocTime::Late => FillAlloc::Late,
                AllocTime::Incremental => FillAlloc::Incremental,
            },
            fill_time: FillTime::IfSet,
            value: match &self.fill {
                Some(_) => FillDefinition::User(fill.clone()),
                None => FillDefinition::Default,
            },
        };
        let mut messages = vec![
            (
                Message::Dataspace(dataspace(new_style, &self.shape, max_dims)),
                MessageFlags::empty(),
            ),
            (Message::Datatype(datatype.clone()), MessageFlags::CONSTANT),
            (Message::FillValue(fill_msg), MessageFlags::CONSTANT),
        ];
        if !new_style && self.fill.is_some() {
            messages.push((
                Message::FillValueOld(FillValueOld {
                    value: fill.clone(),
                }),
                MessageFlags::CONSTANT,
            ));
        }
        Ok((fill, messages))
    }

    /// [`create`](Self::create) for [`external`](Self::external) storage.
    fn create_external(
        &self,
        f: &Store,
        parent: &At,
        name: &str,
        datatype: Datatype,
        parts: &[(String, u64, Option<u64>)],
    ) -> Result<Dataset> {
        if self.chunk.is_some() || !self.filters.is_empty() {
            return Err(Error::arg(
                "external",
                "external storage is contiguous: no chunks and no filters",
            ));
        }
        let max_dims: Vec<Option<u64>> = self.shape.iter().map(|&d| Some(d)).collect();
        if self.max_shape.as_ref().is_some_and(|m| *m != max_dims) {
            return Err(Error::Unsupported(
                "external storage of datasets whose dimensions can grow",
            ));
        }
        let elem = self.dtype.size as u64;
        let needed = (self.shape.iter())
            .try_fold(elem, |n, &d| n.checked_mul(d))
            .ok_or_else(|| Error::arg("shape", "more bytes than a file can address"))?;
        let bad = |why: String| Error::arg("external", why);
        if parts.is_empty() || parts.len() > usize::from(u16::MAX) {
            return Err(bad(format!("{} parts (1 to 65535)", parts.len())));
        }
        for (i, (n, _, size)) in parts.iter().enumerate() {
            if n.is_empty() || n.contains('\0') {
                return Err(bad(format!("part {i}: {n:?} is not a file name")));
            }
            if size.is_none() && i.saturating_add(1) != parts.len() {
                return Err(bad(format!(
                    "part {i}: only the last part may be unlimited"
                )));
            }
            if size.is_some_and(|s| s >= f.sizes.undef_length()) {
                return Err(bad(format!("part {i}: size {size:?} too large")));
            }
        }
        let capacity = (parts.iter()).fold(0u64, |n, p| n.saturating_add(p.2.unwrap_or(u64::MAX)));
        if capacity < needed {
            return Err(bad(format!(
                "the parts hold {capacity} bytes, the dataset needs {needed}"
            )));
        }
        let names: Vec<&str> = parts.iter().map(|p| p.0.as_str()).collect();
        let (heap, offsets) = external::create_name_heap(f, &names)?;
        let efl = ExternalFiles {
            allocated: u16::try_from(parts.len()).unwrap_or(u16::MAX),
            heap,
            slots: (parts.iter().zip(&offsets))
                .map(|(p, &name_offset)| ExternalSlot {
                    name_offset,
                    offset: p.1,
                    size: p.2,
                })
                .collect(),
        };
        let mut body = Vec::new();
        efl.encode(&mut Encoder::new(
            &mut body,
            f.sizes,
            "external data files message",
        ))?;
        let new_style = f.bounds.new_style();
        let (fill, mut messages) = self.header_messages(new_style, &max_dims, &datatype)?;
        messages.push((
            Message::Unknown {
                kind: MessageType::EXTERNAL_FILES,
                data: body,
            },
            MessageFlags::CONSTANT,
        ));
        messages.push((
            Message::DataLayout(DataLayout::Contiguous {
                version: LayoutVersion::V3,
                address: None,
                size: needed,
            }),
            MessageFlags::empty(),
        ));
        let header = new_header(f, parent, name, &messages, self.track_order)?;
        let prefix = std::env::var(external::PREFIX_ENV).ok();
        let resolved = external::External {
            parts: parts
                .iter()
                .map(|(n, offset, size)| external::Part {
                    path: external::resolve(n, prefix.as_deref(), &f.name),
                    name: n.clone(),
                    offset: *offset,
                    size: size.unwrap_or(u64::MAX),
                })
                .collect(),
        };
        let state = DatasetState {
            path: link::child_path(&parent.path, name),
            header,
            dtype: self.dtype,
            datatype,
            dims_written: self.shape.clone(),
            dataspace_v2: None,
            null: false,
            storage: StorageState::Contiguous {
                addr: None,
                size: needed,
                fill,
                external: Some(Arc::new(resolved)),
            },
        };
        Dataset::from_state(&self.file, state)
    }
}

impl DatasetBuilder {
    /// A contiguous dataset of `stored` bytes (see [`contiguous`](Self::contiguous)).
    fn create_contiguous(
        &self,
        f: &Store,
        parent: &At,
        name: &str,
        datatype: Datatype,
        stored: Option<&[u8]>,
    ) -> Result<Dataset> {
        if self.chunk.is_some()
            || !self.filters.is_empty()
            || self.stored_filters.as_ref().is_some_and(|s| !s.is_empty())
        {
            return Err(Error::arg(
                "contiguous",
                "a contiguous dataset has no chunks and no filters",
            ));
        }
        let max_dims: Vec<Option<u64>> = self.shape.iter().map(|&d| Some(d)).collect();
        if self.max_shape.as_ref().is_some_and(|m| *m != max_dims) {
            return Err(Error::arg(
                "contiguous",
                "a contiguous dataset's dimensions cannot grow",
            ));
        }
        let elem = self.dtype.size as u64;
        let needed = (self.shape.iter())
            .try_fold(elem, |n, &d| n.checked_mul(d))
            .ok_or_else(|| Error::arg("shape", "more bytes than a file can address"))?;
        if let Some(b) = stored
            && b.len() as u64 != needed
        {
            return Err(Error::arg(
                "contiguous",
                format!("{} bytes given, the dataset holds {needed}", b.len()),
            ));
        }
        let (_, mut messages) = self.header_messages(f.bounds.new_style(), &max_dims, &datatype)?;
        let address = match stored {
            Some(bytes) if !bytes.is_empty() => {
                let base = f.allocate_raw(needed)?;
                f.write(base, bytes)?;
                Some(base)
            }
            _ => None,
        };
        messages.push((
            Message::DataLayout(DataLayout::Contiguous {
                version: LayoutVersion::V3,
                address,
                size: needed,
            }),
            MessageFlags::empty(),
        ));
        let header = new_header(f, parent, name, &messages, self.track_order)?;
        Dataset::open(&self.file, header, link::child_path(&parent.path, name))
    }
}

/// A new dataset's object header of `messages`, linked as `name` in `parent`.
fn new_header(
    f: &Store,
    parent: &At,
    name: &str,
    messages: &HeaderMessages,
    track_order: bool,
) -> Result<h5chunk_format::Addr> {
    let header = f.create_object(messages, HeaderPad::Dataset, track_order)?;
    link::add_link(
        f,
        parent.addr,
        &parent.path,
        name,
        header,
        h5chunk_format::symbol_table_entry::Cache::Nothing,
    )?;
    Ok(header)
}

pub(crate) fn record_codec(
    f: &Store,
    filtered: bool,
    version: LayoutVersion,
    chunk_bytes: u64,
) -> Result<RecordCodec> {
    if !filtered {
        return Ok(RecordCodec::unfiltered(f.sizes));
    }
    let width = match version {
        LayoutVersion::V5 => f.sizes.lengths(),
        _ => chunk_size_len(chunk_bytes),
    };
    Ok(RecordCodec::filtered(f.sizes, width)?)
}

pub(crate) fn dataspace(new_style: bool, dims: &[u64], max: &[Option<u64>]) -> Dataspace {
    let max: Vec<Extent> = max
        .iter()
        .map(|m| m.map_or(Extent::Unlimited, Extent::Fixed))
        .collect();
    let differs = max.iter().zip(dims).any(|(m, &d)| *m != Extent::Fixed(d));
    Dataspace {
        version: if new_style {
            DataspaceVersion::V2
        } else {
            DataspaceVersion::V1
        },
        // Rank 0 is a scalar (what libhdf5 writes, and all a version 1 message can say).
        kind: if dims.is_empty() {
            DataspaceKind::Scalar
        } else {
            DataspaceKind::Simple
        },
        dims: dims.to_vec(),
        max_dims: differs.then_some(max),
    }
}
