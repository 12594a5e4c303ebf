//! Datasets: create (a builder, as h5py's `create_dataset` or hdf5-rust's builder), open,
//! read and write hyperslabs, resize, append, and list allocated chunks.

use std::sync::Arc;

use h5chunk_format::Addr;
use h5chunk_format::chunk_record::{ChunkRecord, RecordCodec, chunk_size_len};
use h5chunk_format::message::fill_value::AllocTime as FillAlloc;
use h5chunk_format::message::{
    ChunkIndex as LayoutIndex, ChunkedFlags, ChunkedLayout, DataLayout, Dataspace, DataspaceKind,
    DataspaceVersion, Extent, FillDefinition, FillTime, FillValue, FillValueOld, FillValueVersion,
    Filter, FilterPipeline, LayoutVersion, Message, PipelineVersion, filter_pipeline::id,
};
use parking_lot::Mutex;

use crate::chunk_cache::{ChunkCache, DEFAULT_BUDGET};
use crate::error::{Error, Result};
use crate::file::{File, FileInner, Group};
use crate::filters::Pipeline;
use crate::index::adapter::{self, ChunkIndex, Shape};
use crate::index::select::{AllocTime, IndexKind, IndexRequest, choose};
use crate::select::Hyperslab;
use crate::types::{H5Type, TypeDesc, from_le_bytes, to_le_bytes};

pub(crate) mod inspect;

/// New chunks written (and chunk proxies dirty) at once when a dataset flushes.
const PROXY_BATCH: usize = 256;

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
}

/// One allocated chunk, as `H5Dchunk_iter` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkInfo {
    /// Element offsets of the chunk's first element.
    pub offset: Vec<u64>,
    /// File address of the stored chunk.
    pub addr: Addr,
    /// Stored size in bytes.
    pub size: u64,
    /// Filter mask (bit i set: filter i skipped).
    pub filter_mask: u32,
}

/// Builds a new chunked dataset.
#[derive(Debug)]
pub struct DatasetBuilder {
    file: File,
    group: Option<Group>,
    dtype: TypeDesc,
    shape: Vec<u64>,
    max_shape: Option<Vec<Option<u64>>>,
    chunk: Option<Vec<u64>>,
    fill: Option<Vec<u8>>,
    alloc_time: AllocTime,
    filters: Vec<FilterSpec>,
    index: Option<IndexKind>,
    dont_filter_partial: bool,
    cache_bytes: usize,
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
            index: None,
            dont_filter_partial: false,
            cache_bytes: DEFAULT_BUDGET,
        }
    }

    pub(crate) fn in_group(mut self, g: Group) -> Self {
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

    /// The chunk cache's byte budget (default 8 MiB).
    pub fn chunk_cache_bytes(mut self, n: usize) -> Self {
        self.cache_bytes = n;
        self
    }

    /// Create the dataset at `path` (relative to the builder's group, or absolute).
    pub fn create(self, path: &str) -> Result<Dataset> {
        let f = Arc::clone(&self.file.inner);
        f.check_writable()?;
        let (parent_path, name) = match path.trim_end_matches('/').rsplit_once('/') {
            Some((p, n)) => (if p.is_empty() { "/" } else { p }, n),
            None => (".", path),
        };
        let parent = match (&self.group, parent_path) {
            (Some(g), p) => g.group(p)?,
            (None, p) => self.file.group(if p == "." { "/" } else { p })?,
        };
        let rank = self.shape.len();
        let max_dims = self
            .max_shape
            .clone()
            .unwrap_or_else(|| self.shape.iter().map(|&d| Some(d)).collect());
        let chunk = self.chunk.clone().ok_or_else(|| {
            Error::InvalidArgument("a chunked dataset needs chunk dimensions".into())
        })?;
        if rank == 0 || max_dims.len() != rank || chunk.len() != rank || chunk.contains(&0) {
            return Err(Error::InvalidArgument(format!(
                "shape {:?}, max shape {max_dims:?} and chunk {chunk:?} must have one non-zero chunk dimension per dimension",
                self.shape
            )));
        }
        for (u, (&d, m)) in self.shape.iter().zip(&max_dims).enumerate() {
            if m.is_some_and(|m| d > m) {
                return Err(Error::InvalidArgument(format!(
                    "dimension {u}: size {d} above its maximum"
                )));
            }
        }
        let elem = self.dtype.size as u64;
        let chunk_bytes = chunk
            .iter()
            .try_fold(elem, |acc, &c| acc.checked_mul(c))
            .filter(|&b| b < (1 << 32))
            .ok_or_else(|| Error::InvalidArgument("chunks must hold less than 4 GiB".into()))?;
        let filtered = !self.filters.is_empty();
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
                })
                .collect(),
        });
        let codec = record_codec(&f, filtered, version, chunk_bytes)?;
        let shape = Shape {
            dims: self.shape.clone(),
            max_dims: max_dims.clone(),
            chunk: chunk.clone(),
            chunk_bytes,
            codec,
        };
        let index = adapter::create(&f, &shape, sel.index, sel.kind)?;
        // The fill value, one element in the file's byte order.
        let mut fill = self.fill.clone().unwrap_or_else(|| vec![0; elem as usize]);
        if fill.len() != elem as usize {
            return Err(Error::InvalidArgument(format!(
                "a fill value of {} bytes for {elem}-byte elements",
                fill.len()
            )));
        }
        self.dtype.to_from_le(&mut fill);
        let (layout_index, address) = index.layout();
        let mut layout = ChunkedLayout::new(version, &chunk, elem, layout_index, address);
        if self.dont_filter_partial {
            layout.flags |= ChunkedFlags::DONT_FILTER_PARTIAL_BOUND_CHUNKS;
        }
        let new_style = f.bounds.new_style();
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
                Message::Dataspace(dataspace(new_style, &self.shape, &max_dims)),
                0,
            ),
            (Message::Datatype(self.dtype.to_datatype()), 1),
            (Message::FillValue(fill_msg), 1),
        ];
        if !new_style && self.fill.is_some() {
            messages.push((
                Message::FillValueOld(FillValueOld {
                    value: fill.clone(),
                }),
                1,
            ));
        }
        if let Some(p) = &pipeline_msg {
            messages.push((Message::FilterPipeline(p.clone()), 1));
        }
        messages.push((Message::DataLayout(DataLayout::Chunked(layout.clone())), 0));
        let header = f.create_object(&messages, 256)?;
        parent.link(name, header)?;
        let pipeline = pipeline_msg
            .as_ref()
            .map(|p| Pipeline::new(p, elem as usize))
            .transpose()
            .map_err(|source| Error::Pipeline {
                dataset: path.to_owned(),
                source,
            })?;
        let grid = shape.grid();
        let state = DatasetState {
            path: format!("{}/{name}", parent.path().trim_end_matches('/')),
            header,
            dtype: self.dtype,
            dims_written: self.shape.clone(),
            storage: StorageState::Chunked(Box::new(Chunked {
                layout_written: (index.layout()),
                layout,
                index,
                shape,
                pipeline,
                fill,
                cache: ChunkCache::new(&grid, self.cache_bytes),
                alloc_early: self.alloc_time == AllocTime::Early,
            })),
        };
        let d = Dataset::from_state(&self.file, state);
        if self.alloc_time == AllocTime::Early {
            d.allocate_all()?;
        }
        Ok(d)
    }
}

fn record_codec(
    f: &FileInner,
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

fn dataspace(new_style: bool, dims: &[u64], max: &[Option<u64>]) -> Dataspace {
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
        kind: DataspaceKind::Simple,
        dims: dims.to_vec(),
        max_dims: differs.then_some(max),
    }
}

#[derive(Debug)]
struct Chunked {
    layout: ChunkedLayout,
    layout_written: (LayoutIndex, Option<Addr>),
    index: Box<dyn ChunkIndex>,
    shape: Shape,
    pipeline: Option<Pipeline>,
    /// One element of fill value, in the file's byte order.
    fill: Vec<u8>,
    cache: ChunkCache,
    alloc_early: bool,
}

#[derive(Debug)]
enum StorageState {
    Chunked(Box<Chunked>),
    Contiguous {
        addr: Option<Addr>,
        size: u64,
        /// One element of fill value (file byte order), for storage never allocated.
        fill: Vec<u8>,
    },
    Compact {
        data: Vec<u8>,
    },
}

#[derive(Debug)]
struct DatasetState {
    path: String,
    header: Addr,
    dtype: TypeDesc,
    /// The dimensions the file's dataspace message holds.
    dims_written: Vec<u64>,
    storage: StorageState,
}

/// The part of a dataset every handle shares; the file flushes it.
#[derive(Debug)]
pub(crate) struct DatasetShared {
    state: Mutex<DatasetState>,
    dims: Mutex<(Vec<u64>, Vec<Option<u64>>)>,
}

impl DatasetShared {
    /// Write dirty chunks and the changed dataspace and layout messages.
    pub(crate) fn flush(&self, f: &FileInner) -> Result<()> {
        let mut st = self.state.lock();
        let dims = self.dims.lock().0.clone();
        let DatasetState {
            path,
            header,
            storage,
            dims_written,
            ..
        } = &mut *st;
        if let StorageState::Chunked(c) = storage {
            let dirty = c.cache.take_dirty();
            c.write_chunks(f, path, dirty)?;
            let now = c.index.layout();
            if now != c.layout_written {
                c.layout.index = now.0;
                c.layout.address = now.1;
                f.replace_message(
                    *header,
                    &Message::DataLayout(DataLayout::Chunked(c.layout.clone())),
                )?;
                c.layout_written = now;
            }
        }
        if *dims_written != dims {
            let max = self.dims.lock().1.clone();
            let new_style = matches!(
                f.messages(*header)?
                    .iter()
                    .find(|m| matches!(m, Message::Dataspace(_))),
                Some(Message::Dataspace(Dataspace {
                    version: DataspaceVersion::V2,
                    ..
                }))
            );
            f.replace_message(
                *header,
                &Message::Dataspace(dataspace(new_style, &dims, &max)),
            )?;
            *dims_written = dims;
        }
        Ok(())
    }
}

impl Chunked {
    fn chunk_elems(&self) -> u64 {
        self.shape.chunk.iter().product()
    }

    fn is_partial(&self, scaled: &[u64]) -> bool {
        scaled
            .iter()
            .zip(&self.shape.chunk)
            .zip(&self.shape.dims)
            .any(|((&s, &c), &d)| (s + 1) * c > d)
    }

    fn skips_filters(&self, scaled: &[u64]) -> bool {
        self.layout
            .flags
            .contains(ChunkedFlags::DONT_FILTER_PARTIAL_BOUND_CHUNKS)
            && self.is_partial(scaled)
    }

    /// The chunk's unfiltered bytes from the file, or fill.
    fn load(&mut self, f: &FileInner, path: &str, scaled: &[u64]) -> Result<Vec<u8>> {
        let chunk_bytes = self.shape.chunk_bytes as usize;
        match self.index.get(f, scaled)? {
            Some(ChunkRecord {
                addr: Some(addr),
                size,
                mask,
            }) => {
                let stored_len = match (&self.pipeline, self.skips_filters(scaled)) {
                    (Some(_), false) => size,
                    _ => chunk_bytes as u64,
                };
                let stored = f.read(addr, stored_len)?;
                match (&self.pipeline, self.skips_filters(scaled)) {
                    (Some(p), false) => {
                        p.decode(stored, mask, chunk_bytes)
                            .map_err(|source| Error::Filter {
                                dataset: path.to_owned(),
                                chunk: scaled.to_vec(),
                                source,
                            })
                    }
                    _ => Ok(stored),
                }
            }
            _ => Ok(self.fill.repeat(self.chunk_elems() as usize)),
        }
    }

    /// Filter and write a chunk, then record it in the index.
    fn write_chunk(
        &mut self,
        f: &FileInner,
        path: &str,
        scaled: &[u64],
        data: Vec<u8>,
    ) -> Result<()> {
        self.write_chunks(f, path, vec![(scaled.to_vec(), data)])
    }

    /// Filter and write chunks, then record them in the index. Chunks that keep their place
    /// are written there; all the others get one new block, written in one call (adjacent
    /// chunks land next to each other in the file).
    fn write_chunks(
        &mut self,
        f: &FileInner,
        path: &str,
        chunks: Vec<(Vec<u64>, Vec<u8>)>,
    ) -> Result<()> {
        let filtered = self.pipeline.is_some();
        let mut fresh: Vec<(Vec<u64>, Vec<u8>, u32)> = Vec::new();
        for (scaled, data) in chunks {
            let (stored, mask) = match (&self.pipeline, self.skips_filters(&scaled)) {
                (Some(p), false) => p.encode(data).map_err(|source| Error::Filter {
                    dataset: path.to_owned(),
                    chunk: scaled.clone(),
                    source,
                })?,
                _ => (data, 0),
            };
            let old = self.index.get(f, &scaled)?.map(|mut r| {
                // Unfiltered records carry no size or mask: every chunk is `chunk_bytes` long.
                if !filtered {
                    r.size = 0;
                    r.mask = 0;
                }
                r
            });
            match old {
                Some(ChunkRecord {
                    addr: Some(a),
                    size,
                    ..
                }) if !filtered || size == stored.len() as u64 => {
                    f.write(a, &stored)?;
                    let rec = ChunkRecord {
                        addr: Some(a),
                        size: if filtered { stored.len() as u64 } else { 0 },
                        mask,
                    };
                    if old != Some(rec) {
                        // The chunk is written already: nothing for the index to wait for.
                        self.index.insert(f, &scaled, rec, None)?;
                    }
                }
                Some(ChunkRecord {
                    addr: Some(a),
                    size,
                    ..
                }) => {
                    f.free(a, size)?;
                    fresh.push((scaled, stored, mask));
                }
                _ => fresh.push((scaled, stored, mask)),
            }
        }
        if fresh.is_empty() {
            return Ok(());
        }
        // In batches, so that few chunk proxies are dirty at once (a B-tree split attaches
        // every dirty proxy of the nodes it touches to the new nodes).
        for batch in fresh.chunks(PROXY_BATCH) {
            let total: u64 = batch.iter().map(|(_, b, _)| b.len() as u64).sum();
            let base = f.allocate(total)?;
            let mut block = Vec::with_capacity(total as usize);
            for (_, b, _) in batch {
                block.extend_from_slice(b);
            }
            // Each new record goes into the index with a chunk proxy: the index block holding
            // it cannot reach the file until the proxy says the chunk is written, whatever the
            // metadata cache flushes or evicts in between.
            let mut proxies = Vec::with_capacity(batch.len());
            let mut at = base.get();
            for (scaled, stored, mask) in batch {
                let rec = ChunkRecord {
                    addr: Some(Addr(at)),
                    size: if filtered { stored.len() as u64 } else { 0 },
                    mask: *mask,
                };
                at += stored.len() as u64;
                let proxy = f.cache.create_proxy();
                proxies.push(proxy);
                self.index.insert(f, scaled, rec, Some(proxy))?;
            }
            f.write(base, &block)?;
            for p in proxies {
                f.cache.chunk_written(p)?;
                f.cache.remove_proxy(p)?;
            }
        }
        Ok(())
    }

    /// The cached chunk at `scaled`, loading it (or starting from fill when `whole` says the
    /// caller overwrites all of it).
    fn cached(
        &mut self,
        f: &FileInner,
        path: &str,
        scaled: &[u64],
        whole: bool,
    ) -> Result<&mut Vec<u8>> {
        if self.cache.get_mut(scaled).is_none() {
            let data = if whole {
                self.fill.repeat(self.chunk_elems() as usize)
            } else {
                self.load(f, path, scaled)?
            };
            for evicted in self.cache.insert(scaled.to_vec(), data, false) {
                if evicted.dirty {
                    self.write_chunk(f, path, &evicted.scaled, evicted.data)?;
                }
            }
        }
        match self.cache.get_mut(scaled) {
            Some(c) => Ok(&mut c.data),
            // The key did not fit the cache (a grid of more than 2^128 chunks).
            None => Err(Error::Unsupported(
                "chunk grids too large for the chunk cache",
            )),
        }
    }
}

/// An open dataset. Cloning gives another handle on the same dataset.
#[derive(Clone, Debug)]
pub struct Dataset {
    file: File,
    shared: Arc<DatasetShared>,
}

impl Dataset {
    fn shared_from_state(state: DatasetState) -> Arc<DatasetShared> {
        let (dims, max) = match &state.storage {
            StorageState::Chunked(c) => (c.shape.dims.clone(), c.shape.max_dims.clone()),
            _ => (
                state.dims_written.clone(),
                state.dims_written.iter().map(|&d| Some(d)).collect(),
            ),
        };
        Arc::new(DatasetShared {
            state: Mutex::new(state),
            dims: Mutex::new((dims, max)),
        })
    }

    fn from_state(file: &File, state: DatasetState) -> Dataset {
        let header = state.header;
        let fresh = Dataset::shared_from_state(state);
        let shared = file.inner.insert_dataset(header, fresh);
        Dataset {
            file: file.clone(),
            shared,
        }
    }

    pub(crate) fn open(file: &File, header: Addr, path: String) -> Result<Dataset> {
        let shared = file.inner.dataset_state(header, || {
            Ok(Dataset::shared_from_state(Dataset::load(
                file, header, path,
            )?))
        })?;
        Ok(Dataset {
            file: file.clone(),
            shared,
        })
    }

    fn load(file: &File, header: Addr, path: String) -> Result<DatasetState> {
        let f = &file.inner;
        let (mut space, mut dtype, mut layout, mut pipeline, mut fill) =
            (None, None, None, None, None);
        for m in f.messages(header)? {
            match m {
                Message::Dataspace(d) => space = Some(d),
                Message::Datatype(t) => dtype = Some(t),
                Message::DataLayout(l) => layout = Some(l),
                Message::FilterPipeline(p) => pipeline = Some(p),
                Message::FillValue(v) => fill = Some(v),
                _ => {}
            }
        }
        let space = space.ok_or_else(|| {
            Error::InvalidArgument(format!("{path}: not a dataset (no dataspace)"))
        })?;
        let dtype = TypeDesc::from_datatype(&dtype.ok_or(Error::Unsupported(
            "datatypes other than integers and floats",
        ))?)?;
        if space.kind != DataspaceKind::Simple && space.kind != DataspaceKind::Scalar {
            return Err(Error::Unsupported("null dataspaces"));
        }
        let dims = space.dims.clone();
        let max_dims: Vec<Option<u64>> = match &space.max_dims {
            Some(m) => m
                .iter()
                .map(|e| match e {
                    Extent::Fixed(n) => Some(*n),
                    Extent::Unlimited => None,
                })
                .collect(),
            None => dims.iter().map(|&d| Some(d)).collect(),
        };
        let elem = dtype.size;
        let mut fill_bytes = match fill.map(|v| v.value) {
            Some(FillDefinition::User(v)) if v.len() == elem => v,
            _ => vec![0; elem],
        };
        if fill_bytes.len() != elem {
            fill_bytes = vec![0; elem];
        }
        let storage =
            match layout.ok_or_else(|| Error::InvalidArgument(format!("{path}: no layout")))? {
                DataLayout::Chunked(c) => {
                    let filtered = pipeline.as_ref().is_some_and(|p| !p.filters.is_empty());
                    let chunk_bytes = c
                        .chunk_bytes()
                        .ok_or(Error::Unsupported("chunks of 2^64 bytes"))?;
                    let shape = Shape {
                        dims: dims.clone(),
                        max_dims,
                        chunk: c.chunk_dims().to_vec(),
                        chunk_bytes,
                        codec: record_codec(f, filtered, c.version, chunk_bytes)?,
                    };
                    let index = adapter::open(f, &shape, &c.index, c.address)?;
                    let pipeline = match &pipeline {
                        Some(p) if filtered => {
                            Some(Pipeline::new(p, elem).map_err(|source| Error::Pipeline {
                                dataset: path.clone(),
                                source,
                            })?)
                        }
                        _ => None,
                    };
                    let grid = shape.grid();
                    StorageState::Chunked(Box::new(Chunked {
                        layout_written: index.layout(),
                        layout: c,
                        index,
                        shape,
                        pipeline,
                        fill: fill_bytes,
                        cache: ChunkCache::new(&grid, DEFAULT_BUDGET),
                        alloc_early: false,
                    }))
                }
                DataLayout::Contiguous { address, size, .. } => StorageState::Contiguous {
                    addr: address,
                    size,
                    fill: fill_bytes,
                },
                DataLayout::Compact { data, .. } => StorageState::Compact { data },
                DataLayout::Legacy(_) => {
                    return Err(Error::Unsupported("layout message versions 1 and 2"));
                }
            };
        Ok(DatasetState {
            path,
            header,
            dtype,
            dims_written: dims,
            storage,
        })
    }

    /// The dataset's path.
    pub fn path(&self) -> String {
        self.shared.state.lock().path.clone()
    }

    /// Current dimensions.
    pub fn shape(&self) -> Vec<u64> {
        self.shared.dims.lock().0.clone()
    }

    /// Maximum dimensions (`None`: unlimited).
    pub fn max_shape(&self) -> Vec<Option<u64>> {
        self.shared.dims.lock().1.clone()
    }

    /// The element type.
    pub fn dtype(&self) -> TypeDesc {
        self.shared.state.lock().dtype
    }

    /// Chunk dimensions, if chunked.
    pub fn chunk(&self) -> Option<Vec<u64>> {
        match &self.shared.state.lock().storage {
            StorageState::Chunked(c) => Some(c.shape.chunk.clone()),
            _ => None,
        }
    }

    /// The chunk index kind, if chunked.
    pub fn index_kind(&self) -> Option<IndexKind> {
        match &self.shared.state.lock().storage {
            StorageState::Chunked(c) => Some(c.index.kind()),
            _ => None,
        }
    }

    /// The layout message version, if chunked.
    pub fn layout_version(&self) -> Option<u8> {
        match &self.shared.state.lock().storage {
            StorageState::Chunked(c) => Some(c.layout.version.number()),
            _ => None,
        }
    }

    fn check_type(&self, t: TypeDesc) -> Result<()> {
        let d = self.dtype();
        if d.class != t.class || d.size != t.size {
            return Err(Error::InvalidArgument(format!(
                "dataset {} holds {} elements, not {}",
                self.path(),
                d.numpy(),
                t.numpy()
            )));
        }
        Ok(())
    }

    /// Read everything, as `T`.
    pub fn read<T: H5Type>(&self) -> Result<Vec<T>> {
        self.check_type(T::DESC)?;
        Ok(from_le_bytes(&self.read_raw()?))
    }

    /// Read everything, as little-endian bytes of the dataset's type.
    pub fn read_raw(&self) -> Result<Vec<u8>> {
        let dims = self.shape();
        self.read_selection_raw(&Hyperslab::all(&dims))
    }

    /// Read a hyperslab (`stride` 1 when `None`), as `T`, in C order.
    pub fn read_slice<T: H5Type>(
        &self,
        start: &[u64],
        count: &[u64],
        stride: Option<&[u64]>,
    ) -> Result<Vec<T>> {
        self.check_type(T::DESC)?;
        let h = Hyperslab::new(start, count, stride, &self.shape())?;
        Ok(from_le_bytes(&self.read_selection_raw(&h)?))
    }

    fn read_selection_raw(&self, h: &Hyperslab) -> Result<Vec<u8>> {
        let f = &self.file.inner;
        let mut st = self.shared.state.lock();
        let elem = st.dtype.size;
        let n = usize::try_from(h.len())
            .map_err(|_| Error::InvalidArgument("selection too large".into()))?;
        let mut out = vec![
            0u8;
            n.checked_mul(elem).ok_or_else(|| Error::InvalidArgument(
                "selection too large".into()
            ))?
        ];
        let dtype = st.dtype;
        let DatasetState { path, storage, .. } = &mut *st;
        match storage {
            StorageState::Chunked(c) => {
                let chunk = c.shape.chunk.clone();
                for scaled in h.chunks(&chunk) {
                    let data = c.cached(f, path, &scaled, false)?;
                    h.runs(&chunk, &scaled, |r| copy_out(&mut out, data, r, elem));
                }
            }
            StorageState::Contiguous { addr, size, fill } => {
                let dims = self.shared.dims.lock().0.clone();
                let whole = match addr {
                    Some(a) => f.read(*a, *size)?,
                    None => fill.repeat((*size as usize) / elem.max(1)),
                };
                copy_from_contiguous(h, &dims, &whole, &mut out, elem);
            }
            StorageState::Compact { data } => {
                let dims = self.shared.dims.lock().0.clone();
                copy_from_contiguous(h, &dims, data, &mut out, elem);
            }
        }
        dtype.to_from_le(&mut out);
        Ok(out)
    }

    /// Write everything from `T` values in C order.
    pub fn write<T: H5Type>(&self, data: &[T]) -> Result<()> {
        self.check_type(T::DESC)?;
        let dims = self.shape();
        self.write_selection_raw(&Hyperslab::all(&dims), to_le_bytes(data))
    }

    /// Write a hyperslab from `T` values in C order.
    pub fn write_slice<T: H5Type>(
        &self,
        data: &[T],
        start: &[u64],
        count: &[u64],
        stride: Option<&[u64]>,
    ) -> Result<()> {
        self.check_type(T::DESC)?;
        let h = Hyperslab::new(start, count, stride, &self.shape())?;
        self.write_selection_raw(&h, to_le_bytes(data))
    }

    /// Write a hyperslab from little-endian bytes of the dataset's type.
    pub fn write_slice_raw(
        &self,
        le: &[u8],
        start: &[u64],
        count: &[u64],
        stride: Option<&[u64]>,
    ) -> Result<()> {
        let h = Hyperslab::new(start, count, stride, &self.shape())?;
        self.write_selection_raw(&h, le.to_vec())
    }

    fn write_selection_raw(&self, h: &Hyperslab, mut data: Vec<u8>) -> Result<()> {
        let f = &self.file.inner;
        f.check_writable()?;
        let mut st = self.shared.state.lock();
        let elem = st.dtype.size;
        if data.len() as u64 != h.len() * elem as u64 {
            return Err(Error::InvalidArgument(format!(
                "{} bytes for a selection of {} elements of {elem} bytes",
                data.len(),
                h.len()
            )));
        }
        st.dtype.to_from_le(&mut data);
        let DatasetState { path, storage, .. } = &mut *st;
        let StorageState::Chunked(c) = storage else {
            return Err(Error::Unsupported("writing contiguous or compact datasets"));
        };
        let chunk = c.shape.chunk.clone();
        let chunk_elems = c.chunk_elems();
        for scaled in h.chunks(&chunk) {
            let mut covered = 0u64;
            h.runs(&chunk, &scaled, |r| covered += r.len);
            let whole = covered == chunk_elems;
            let buf = c.cached(f, path, &scaled, whole)?;
            h.runs(&chunk, &scaled, |r| copy_in(buf, &data, r, elem));
            if let Some(entry) = c.cache.get_mut(&scaled) {
                entry.dirty = true;
            }
        }
        Ok(())
    }

    /// Change the current dimensions within the maximum ones. Shrinking drops the chunks wholly
    /// outside the new extent (their space is freed) and resets the elements of the cut chunks
    /// beyond it to the fill value, as libhdf5 does.
    pub fn resize(&self, dims: &[u64]) -> Result<()> {
        let f = &self.file.inner;
        f.check_writable()?;
        let max = self.max_shape();
        if dims.len() != max.len()
            || dims
                .iter()
                .zip(&max)
                .any(|(&d, m)| m.is_some_and(|m| d > m))
        {
            return Err(Error::InvalidArgument(format!(
                "cannot resize to {dims:?} within {max:?}"
            )));
        }
        let old = self.shape();
        let mut st = self.shared.state.lock();
        let DatasetState { path, storage, .. } = &mut *st;
        let StorageState::Chunked(c) = storage else {
            return Err(Error::Unsupported(
                "resizing contiguous or compact datasets",
            ));
        };
        let shrinks = dims.iter().zip(&old).any(|(n, o)| n < o);
        if shrinks {
            // Write what is cached so the index knows every chunk, then prune.
            let dirty = c.cache.take_dirty();
            c.write_chunks(f, path, dirty)?;
            let mut chunks = Vec::new();
            c.index
                .for_each(f, &mut |s, r| chunks.push((s.to_vec(), r)))?;
            let chunk = c.shape.chunk.clone();
            for (scaled, rec) in chunks {
                let outside = scaled
                    .iter()
                    .zip(&chunk)
                    .zip(dims)
                    .any(|((&s, &cd), &d)| s * cd >= d);
                if outside {
                    c.index.remove(f, &scaled)?;
                    c.cache.remove(&scaled);
                    if let Some(a) = rec.addr {
                        let len = if c.pipeline.is_some() {
                            rec.size
                        } else {
                            c.shape.chunk_bytes
                        };
                        f.free(a, len)?;
                    }
                    continue;
                }
                let cut = scaled
                    .iter()
                    .zip(&chunk)
                    .zip(dims.iter().zip(&old))
                    .any(|((&s, &cd), (&n, &o))| (s + 1) * cd > n && n < o);
                if cut {
                    let elem = c.fill.len();
                    let fill = c.fill.clone();
                    let buf = c.cached(f, path, &scaled, false)?;
                    reset_outside(buf, &scaled, &chunk, dims, &fill, elem);
                    if let Some(e) = c.cache.get_mut(&scaled) {
                        e.dirty = true;
                    }
                }
            }
        }
        c.shape.dims = dims.to_vec();
        c.index.set_dims(f, dims)?;
        let grid = c.shape.grid();
        c.cache.set_extent(&grid);
        drop(st);
        self.shared.dims.lock().0 = dims.to_vec();
        Ok(())
    }

    /// Append `data` (C order) along the first unlimited dimension: the dimension grows by
    /// `data.len()` divided by the product of the other dimensions.
    pub fn append<T: H5Type>(&self, data: &[T]) -> Result<()> {
        self.check_type(T::DESC)?;
        let dims = self.shape();
        let max = self.max_shape();
        let k = max
            .iter()
            .position(Option::is_none)
            .ok_or_else(|| Error::InvalidArgument("append needs an unlimited dimension".into()))?;
        let others: u64 = dims
            .iter()
            .enumerate()
            .filter(|&(u, _)| u != k)
            .map(|(_, &d)| d)
            .product();
        if others == 0 || !(data.len() as u64).is_multiple_of(others) {
            return Err(Error::InvalidArgument(format!(
                "{} values do not fill whole slices of {others} elements",
                data.len()
            )));
        }
        let grow = data.len() as u64 / others;
        let mut new = dims.clone();
        new[k] += grow;
        self.resize(&new)?;
        let mut start = vec![0u64; dims.len()];
        start[k] = dims[k];
        let mut count = new.clone();
        count[k] = grow;
        self.write_slice(data, &start, &count, None)
    }

    /// Allocate every chunk of the current extent now (early allocation), writing fill values.
    fn allocate_all(&self) -> Result<()> {
        let f = &self.file.inner;
        let mut st = self.shared.state.lock();
        let DatasetState { path, storage, .. } = &mut *st;
        let StorageState::Chunked(c) = storage else {
            return Ok(());
        };
        if !c.alloc_early {
            return Ok(());
        }
        if c.index.kind() == IndexKind::Implicit {
            // The whole run is allocated already; a non-zero fill value must be written into
            // it, as libhdf5 does at allocation (space never written reads as zeros).
            if c.fill.iter().any(|&b| b != 0) {
                let (_, Some(base)) = c.index.layout() else {
                    return Ok(());
                };
                let n = crate::index::linear::LinearIndex::for_dataset(
                    &c.shape.max_dims,
                    &c.shape.chunk,
                )?
                .len()
                .unwrap_or(0);
                let chunk = c.fill.repeat(c.chunk_elems() as usize);
                for i in 0..n {
                    f.write(Addr(base.get() + i * c.shape.chunk_bytes), &chunk)?;
                }
            }
            return Ok(());
        }
        let grid = c.shape.grid();
        let all = Hyperslab::all(&grid);
        for scaled in all.chunks(&vec![1; grid.len()]) {
            if c.index.get(f, &scaled)?.is_none() {
                let data = c.fill.repeat(c.chunk_elems() as usize);
                c.write_chunk(f, path, &scaled, data)?;
            }
        }
        Ok(())
    }

    /// Every allocated chunk, as `H5Dchunk_iter` reports them (dirty cached chunks are written
    /// first so that they are listed).
    pub fn chunks(&self) -> Result<Vec<ChunkInfo>> {
        let f = &self.file.inner;
        let mut st = self.shared.state.lock();
        let DatasetState { path, storage, .. } = &mut *st;
        let StorageState::Chunked(c) = storage else {
            return Ok(Vec::new());
        };
        let dirty = c.cache.take_dirty();
        c.write_chunks(f, path, dirty)?;
        let chunk = c.shape.chunk.clone();
        let chunk_bytes = c.shape.chunk_bytes;
        let filtered = c.pipeline.is_some();
        let mut out = Vec::new();
        c.index.for_each(f, &mut |s, r| {
            if let Some(addr) = r.addr {
                out.push(ChunkInfo {
                    offset: s.iter().zip(&chunk).map(|(a, b)| a * b).collect(),
                    addr,
                    size: if filtered { r.size } else { chunk_bytes },
                    filter_mask: r.mask,
                });
            }
        })?;
        Ok(out)
    }

    /// Write a chunk's stored bytes as they are (already filtered, with `filter_mask` saying
    /// which filters were skipped), like h5py's `write_direct_chunk`. `offset` is the chunk's
    /// first element and must lie on the chunk grid within the current extent.
    pub fn write_direct_chunk(
        &self,
        offset: &[u64],
        stored: &[u8],
        filter_mask: u32,
    ) -> Result<()> {
        let f = &self.file.inner;
        f.check_writable()?;
        let mut st = self.shared.state.lock();
        let dims = self.shared.dims.lock().0.clone();
        let DatasetState { storage, .. } = &mut *st;
        let StorageState::Chunked(c) = storage else {
            return Err(Error::Unsupported(
                "direct chunk writes to contiguous or compact datasets",
            ));
        };
        let scaled = grid_position(offset, &c.shape.chunk, &dims)?;
        let filtered = c.pipeline.is_some();
        if !filtered && stored.len() as u64 != c.shape.chunk_bytes {
            return Err(Error::InvalidArgument(format!(
                "an unfiltered chunk holds {} bytes, not {}",
                c.shape.chunk_bytes,
                stored.len()
            )));
        }
        // A cached copy would overwrite what is written here.
        c.cache.remove(&scaled);
        let old = c.index.get(f, &scaled)?;
        let addr = match old {
            Some(ChunkRecord {
                addr: Some(a),
                size,
                ..
            }) if !filtered || size == stored.len() as u64 => a,
            Some(ChunkRecord {
                addr: Some(a),
                size,
                ..
            }) => {
                f.free(a, size)?;
                f.allocate(stored.len() as u64)?
            }
            _ => f.allocate(stored.len() as u64)?,
        };
        f.write(addr, stored)?;
        c.index.insert(
            f,
            &scaled,
            ChunkRecord {
                addr: Some(addr),
                size: if filtered { stored.len() as u64 } else { 0 },
                mask: if filtered { filter_mask } else { 0 },
            },
            // Written just above: nothing for the index to wait for.
            None,
        )
    }

    /// A chunk's stored bytes and filter mask, without decoding (h5py's `read_direct_chunk`);
    /// `None` if the chunk is not allocated. Cached changes are written first.
    pub fn read_direct_chunk(&self, offset: &[u64]) -> Result<Option<(Vec<u8>, u32)>> {
        let f = &self.file.inner;
        let mut st = self.shared.state.lock();
        let dims = self.shared.dims.lock().0.clone();
        let DatasetState { path, storage, .. } = &mut *st;
        let StorageState::Chunked(c) = storage else {
            return Err(Error::Unsupported(
                "direct chunk reads of contiguous or compact datasets",
            ));
        };
        let scaled = grid_position(offset, &c.shape.chunk, &dims)?;
        if let Some(e) = c.cache.get_mut(&scaled)
            && e.dirty
        {
            e.dirty = false;
            let data = e.data.clone();
            c.write_chunk(f, path, &scaled, data)?;
        }
        let filtered = c.pipeline.is_some();
        match c.index.get(f, &scaled)? {
            Some(ChunkRecord {
                addr: Some(a),
                size,
                mask,
            }) => {
                let len = if filtered && !c.skips_filters(&scaled) {
                    size
                } else {
                    c.shape.chunk_bytes
                };
                Ok(Some((f.read(a, len)?, mask)))
            }
            _ => Ok(None),
        }
    }

    /// Read everything into an n-dimensional array of the dataset's shape.
    #[cfg(feature = "ndarray")]
    pub fn read_array<T: H5Type>(&self) -> Result<ndarray::ArrayD<T>> {
        let shape: Vec<usize> = self.shape().iter().map(|&d| d as usize).collect();
        ndarray::ArrayD::from_shape_vec(shape, self.read::<T>()?)
            .map_err(|e| Error::InvalidArgument(e.to_string()))
    }

    /// Write an n-dimensional array at `start` (its shape is the selection's count).
    #[cfg(feature = "ndarray")]
    pub fn write_array<T: H5Type>(
        &self,
        a: ndarray::ArrayViewD<'_, T>,
        start: &[u64],
    ) -> Result<()> {
        let count: Vec<u64> = a.shape().iter().map(|&n| n as u64).collect();
        let data: Vec<T> = a.iter().copied().collect();
        self.write_slice(&data, start, &count, None)
    }

    /// Bytes of index metadata in the file.
    pub fn index_metadata_bytes(&self) -> Result<u64> {
        let f = &self.file.inner;
        let mut st = self.shared.state.lock();
        match &mut st.storage {
            StorageState::Chunked(c) => c.index.metadata_bytes(f),
            _ => Ok(0),
        }
    }
}

/// The scaled coordinates of the chunk whose first element is at `offset`.
fn grid_position(offset: &[u64], chunk: &[u64], dims: &[u64]) -> Result<Vec<u64>> {
    if offset.len() != chunk.len()
        || offset
            .iter()
            .zip(chunk)
            .zip(dims)
            .any(|((&o, &c), &d)| o % c != 0 || o >= d)
    {
        return Err(Error::InvalidArgument(format!(
            "{offset:?} is not the first element of a chunk (chunk {chunk:?}) inside {dims:?}"
        )));
    }
    Ok(offset.iter().zip(chunk).map(|(o, c)| o / c).collect())
}

/// Copy run `r` from a chunk buffer into the selection buffer.
fn copy_out(out: &mut [u8], chunk: &[u8], r: crate::select::Run, elem: usize) {
    let (c, m) = (r.chunk as usize * elem, r.memory as usize * elem);
    if r.chunk_step == 1 {
        let n = r.len as usize * elem;
        out[m..m + n].copy_from_slice(&chunk[c..c + n]);
    } else {
        let step = r.chunk_step as usize * elem;
        for i in 0..r.len as usize {
            out[m + i * elem..m + (i + 1) * elem]
                .copy_from_slice(&chunk[c + i * step..c + i * step + elem]);
        }
    }
}

/// Copy run `r` from the selection buffer into a chunk buffer.
fn copy_in(chunk: &mut [u8], data: &[u8], r: crate::select::Run, elem: usize) {
    let (c, m) = (r.chunk as usize * elem, r.memory as usize * elem);
    if r.chunk_step == 1 {
        let n = r.len as usize * elem;
        chunk[c..c + n].copy_from_slice(&data[m..m + n]);
    } else {
        let step = r.chunk_step as usize * elem;
        for i in 0..r.len as usize {
            chunk[c + i * step..c + i * step + elem]
                .copy_from_slice(&data[m + i * elem..m + (i + 1) * elem]);
        }
    }
}

/// Copy a hyperslab out of a whole C-order array (contiguous and compact layouts): the array
/// is one chunk the size of the dataset.
fn copy_from_contiguous(h: &Hyperslab, dims: &[u64], whole: &[u8], out: &mut [u8], elem: usize) {
    if dims.is_empty() {
        let n = out.len().min(whole.len());
        out[..n].copy_from_slice(&whole[..n]);
        return;
    }
    let chunk: Vec<u64> = dims.iter().map(|&d| d.max(1)).collect();
    let zero = vec![0u64; dims.len()];
    h.runs(&chunk, &zero, |r| copy_out(out, whole, r, elem));
}

/// Reset the elements of chunk `scaled` that lie outside `dims` to `fill`.
fn reset_outside(
    buf: &mut [u8],
    scaled: &[u64],
    chunk: &[u64],
    dims: &[u64],
    fill: &[u8],
    elem: usize,
) {
    let rank = chunk.len();
    let n: u64 = chunk.iter().product();
    for i in 0..n {
        let mut rest = i;
        let mut outside = false;
        for u in (0..rank).rev() {
            let local = rest % chunk[u];
            rest /= chunk[u];
            if scaled[u] * chunk[u] + local >= dims[u] {
                outside = true;
            }
        }
        if outside {
            let o = i as usize * elem;
            buf[o..o + elem].copy_from_slice(fill);
        }
    }
}
