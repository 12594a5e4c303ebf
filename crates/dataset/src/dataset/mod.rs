//! Datasets: open, read and write hyperslabs, resize, append, and list allocated chunks.
//! Creating one is [`builder`]'s; a chunked dataset's storage state is [`chunked`]'s.

use smallvec::SmallVec;
use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use h5chunk_format::Addr;
use h5chunk_format::chunk_record::ChunkRecord;
use h5chunk_format::message::{
    DataLayout, Dataspace, DataspaceKind, DataspaceVersion, Extent, FillDefinition, Message,
    MessageType,
};
use parking_lot::{RwLock, RwLockWriteGuard};

use crate::chunk_cache::{ChunkCache, DEFAULT_BUDGET};
use crate::error::{Error, Result};
use crate::file::{File, OpenObject};
use crate::filters::Pipeline;
use crate::index::adapter::{self, Shape};
use crate::index::select::IndexKind;
use crate::select::{Hyperslab, Run};
use crate::store::Store;
use crate::types::{Datatype, H5Type, TypeDesc, to_le_bytes};

use builder::{dataspace, record_codec};
use chunked::Chunked;

mod append;
pub(crate) mod builder;
pub(crate) mod chunked;
pub(crate) mod external;
pub(crate) mod fresh;
pub(crate) mod inspect;
mod read;
mod refresh;
mod scales;
mod sequences;
pub(crate) mod stream;
mod strings;

pub use builder::{DatasetBuilder, FilterSpec};
pub use stream::{RowWriter, Slab, Slabs};

/// Whole unfiltered chunks at least this large are written from the caller's buffer straight
/// to the file; smaller ones are batched (many appended chunks, one write).
const DIRECT_WRITE_BYTES: u64 = 256 << 10;

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

/// What [`Dataset::for_each_chunk`] calls for each chunk: grid indices, address, stored size,
/// filter mask.
pub(crate) type ChunkVisitor<'a> = dyn FnMut(&[u64], Addr, u64, u32) + 'a;

#[derive(Debug)]
pub(crate) enum StorageState {
    Chunked(Box<Chunked>),
    Contiguous {
        addr: Option<Addr>,
        size: u64,
        /// One element of fill value (file byte order), for storage never allocated.
        fill: Vec<u8>,
        /// The files holding the bytes instead, for external storage (then `addr` is none).
        external: Option<Arc<external::External>>,
    },
    Compact {
        data: Vec<u8>,
    },
}

#[derive(Debug)]
pub(crate) struct DatasetState {
    pub(crate) path: String,
    pub(crate) header: Addr,
    pub(crate) dtype: TypeDesc,
    /// The Datatype message, as stored.
    pub(crate) datatype: Datatype,
    /// The dimensions the file's dataspace message holds.
    pub(crate) dims_written: Vec<u64>,
    /// Whether that message is of version 2, once a flush has looked (a message rewritten on
    /// every flush keeps its version; the header is not decoded again to learn it).
    pub(crate) dataspace_v2: Option<bool>,
    /// A null dataspace (h5py's `Empty`): no elements; held as dims `[0]`.
    pub(crate) null: bool,
    pub(crate) storage: StorageState,
}

/// The part of a dataset every handle shares; the file flushes it.
#[derive(Debug)]
pub(crate) struct DatasetShared {
    /// Readers share it (a lookup and a copy out of the chunk cache); anything that changes
    /// the dataset takes it alone, through [`write`](Self::write). No read holds it across
    /// storage I/O or a filter (see `read.rs`).
    state: RwLock<h5chunk_cache::CacheLine<DatasetState>>,
    dims: RwLock<(Vec<u64>, Vec<Option<u64>>)>,
    /// Moves each time the state is taken for writing: a reader that fetched chunks without
    /// the lock caches them only if nothing changed the dataset meanwhile.
    version: AtomicU64,
    /// Whether chunks go through a filter pipeline (fixed for the dataset's life).
    filtered: bool,
    /// The element type (fixed too): asked on every read, without the lock.
    dtype: TypeDesc,
    /// The element type as stored (every class).
    datatype: Datatype,
    /// Chunk loads readers have under way (see `read.rs`).
    inflight: read::InFlight,
}

impl DatasetShared {
    /// The state, alone, for a change.
    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, h5chunk_cache::CacheLine<DatasetState>> {
        let g = self.state.write();
        self.version.fetch_add(1, Ordering::SeqCst);
        g
    }

    pub(crate) fn version(&self) -> u64 {
        self.version.load(Ordering::SeqCst)
    }
}

/// Refuse a chunk index SWMR writing cannot keep consistent for readers: the version 1
/// B-tree (no checksums on its nodes), as libhdf5 refuses it.
pub(super) fn swmr_index(path: &str, kind: IndexKind) -> Result<()> {
    if kind == IndexKind::BTree1 {
        return Err(Error::SwmrIndex {
            dataset: path.to_owned(),
            index: "version 1 B-tree",
        });
    }
    Ok(())
}

impl OpenObject for DatasetShared {
    fn check_swmr(&self) -> Result<()> {
        let st = self.state.read();
        match &st.storage {
            StorageState::Chunked(c) => swmr_index(&st.path, c.index.kind()),
            _ => Ok(()),
        }
    }

    /// Write dirty chunks and the changed dataspace and layout messages.
    fn flush(&self, f: &Store) -> Result<()> {
        let mut st = self.write();
        let dims = self.dims.read().0.clone();
        let DatasetState {
            path,
            header,
            storage,
            dims_written,
            dataspace_v2,
            ..
        } = &mut **st;
        if let StorageState::Chunked(c) = storage {
            c.flush_cache(f, path)?;
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
            let max = self.dims.read().1.clone();
            let new_style = match *dataspace_v2 {
                Some(v2) => v2,
                None => {
                    let v2 = matches!(
                        f.messages(*header)?
                            .iter()
                            .find(|m| matches!(m, Message::Dataspace(_))),
                        Some(Message::Dataspace(Dataspace {
                            version: DataspaceVersion::V2,
                            ..
                        }))
                    );
                    *dataspace_v2 = Some(v2);
                    v2
                }
            };
            f.replace_message(
                *header,
                &Message::Dataspace(dataspace(new_style, &dims, &max)),
            )?;
            *dims_written = dims;
        }
        Ok(())
    }
}

/// The bytes of a dataset of `dims` elements of `elem` bytes (saturated: a size past 2^64 is
/// refused by the reads it would size).
fn data_bytes(dims: &[u64], elem: usize) -> u64 {
    dims.iter().fold(elem as u64, |n, &d| n.saturating_mul(d))
}

/// An open dataset. Cloning gives another handle on the same dataset.
#[derive(Clone, Debug)]
pub struct Dataset {
    file: File,
    shared: Arc<DatasetShared>,
}

impl Dataset {
    /// The current and maximum dims a state gives its handles.
    fn extent_of(state: &DatasetState) -> (Vec<u64>, Vec<Option<u64>>) {
        match &state.storage {
            StorageState::Chunked(c) => (c.shape.dims.clone(), c.shape.max_dims.clone()),
            _ => (
                state.dims_written.clone(),
                state.dims_written.iter().map(|&d| Some(d)).collect(),
            ),
        }
    }

    fn shared_from_state(state: DatasetState) -> Arc<DatasetShared> {
        let (dims, max) = Dataset::extent_of(&state);
        let filtered = matches!(&state.storage, StorageState::Chunked(c) if c.pipeline.is_some());
        Arc::new(DatasetShared {
            filtered,
            dtype: state.dtype,
            datatype: state.datatype.clone(),
            inflight: read::InFlight::default(),
            state: RwLock::new(h5chunk_cache::CacheLine(state)),
            dims: RwLock::new((dims, max)),
            version: AtomicU64::new(0),
        })
    }

    pub(crate) fn from_state(file: &File, state: DatasetState) -> Result<Dataset> {
        let header = state.header;
        let fresh = Dataset::shared_from_state(state);
        let shared = file.inner.open_object(header, || Ok(fresh))?;
        Ok(Dataset {
            file: file.clone(),
            shared,
        })
    }

    pub(crate) fn open(file: &File, header: Addr, path: String) -> Result<Dataset> {
        let shared = file.inner.open_object(header, || {
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
        let f = &file.inner.store;
        let (mut space, mut dtype, mut layout, mut pipeline, mut fill) =
            (None, None, None, None, None);
        let mut external = None;
        for m in f.messages(header)? {
            match m {
                Message::Unknown { kind, data } if kind == MessageType::EXTERNAL_FILES => {
                    external = Some(data);
                }
                Message::Dataspace(d) => space = Some(d),
                Message::Datatype(t) => dtype = Some(t),
                Message::DataLayout(l) => layout = Some(l),
                Message::FilterPipeline(p) => pipeline = Some(p),
                Message::FillValue(v) => fill = Some(v),
                _ => {}
            }
        }
        let space = space.ok_or_else(|| {
            Error::corrupt("dataset", header, format!("{path}: no dataspace message"))
        })?;
        let datatype = dtype.ok_or_else(|| {
            Error::corrupt("dataset", header, format!("{path}: no datatype message"))
        })?;
        let dtype = TypeDesc::of(&datatype)?;
        // A null dataspace has no elements: dims [0] make every read and write select none.
        let null = space.kind == DataspaceKind::Null;
        let dims = if null { vec![0] } else { space.dims.clone() };
        // The dataspace decoder refuses a dimension above its maximum.
        let max_dims: Vec<Option<u64>> = match &space.max_dims {
            _ if null => vec![Some(0)],
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
        let layout = layout.ok_or_else(|| {
            Error::corrupt("dataset", header, format!("{path}: no layout message"))
        })?;
        // Versions 1 and 2 (HDF5 1.4-1.6) read as the version 3 message libhdf5 makes of them.
        let layout = match layout {
            DataLayout::Legacy(l) => l.upgraded(data_bytes(&dims, elem)),
            l => l,
        };
        let storage = match layout {
            DataLayout::Chunked(c) => {
                let filtered = pipeline.as_ref().is_some_and(|p| !p.filters.is_empty());
                let chunk_bytes = c
                    .chunk_bytes()
                    .ok_or(Error::Unsupported("chunks of 2^64 bytes"))?;
                // libhdf5's limits: one chunk dimension per dataset dimension, none zero, and
                // under 4 GiB a chunk. A file breaking them sizes no buffer here.
                let chunk_dims = c.chunk_dims();
                if chunk_dims.len() != dims.len() || chunk_dims.contains(&0) {
                    return Err(Error::corrupt(
                        "layout message",
                        header,
                        format!("{path}: chunk dims {chunk_dims:?} for dims {dims:?}"),
                    ));
                }
                if chunk_bytes > u64::from(u32::MAX) {
                    return Err(Error::corrupt(
                        "layout message",
                        header,
                        format!("{path}: a chunk of {chunk_bytes} bytes (the limit is 4 GiB)"),
                    ));
                }
                let shape = Shape {
                    dims: dims.clone(),
                    max_dims,
                    chunk: c.chunk_dims().to_vec(),
                    chunk_bytes,
                    codec: record_codec(f, filtered, c.version, chunk_bytes)?,
                };
                let index = adapter::open(f, &shape, &c.index, c.address)?;
                let kind = index.kind();
                if f.swmr_write() {
                    swmr_index(&path, kind)?;
                }
                index.check_extent(&shape.dims, &shape.chunk)?;
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
                let fresh =
                    fresh::Fresh::new(grid.len(), usize::try_from(chunk_bytes).unwrap_or(0));
                StorageState::Chunked(Box::new(Chunked {
                    layout_written: index.layout(),
                    layout: c,
                    index,
                    shape,
                    pipeline,
                    fill: fill_bytes,
                    cache: RwLock::new(h5chunk_cache::CacheLine(ChunkCache::new(
                        &grid,
                        DEFAULT_BUDGET,
                    ))),
                    alloc_early: false,
                    // Chunks exist only inside the extent (libhdf5 removes those a shrink
                    // leaves outside).
                    known: Chunked::first_known(kind, grid),
                    fresh,
                    append_plan: None,
                    box_plan: None,
                }))
            }
            DataLayout::Contiguous { address, size, .. } => match external {
                // The bytes are in other files, however the layout message reads.
                Some(body) => {
                    let e = external::External::load(f, header, &path, &body)?;
                    let needed = dims
                        .iter()
                        .try_fold(elem as u64, |n, &d| n.checked_mul(d))
                        .unwrap_or(u64::MAX);
                    if e.capacity() < needed {
                        return Err(Error::corrupt(
                            "external data files message",
                            header,
                            format!(
                                "{path}: the external files hold {} bytes, the dataset {needed}",
                                e.capacity()
                            ),
                        ));
                    }
                    StorageState::Contiguous {
                        addr: None,
                        size,
                        fill: fill_bytes,
                        external: Some(Arc::new(e)),
                    }
                }
                None => StorageState::Contiguous {
                    addr: address,
                    size,
                    fill: fill_bytes,
                    external: None,
                },
            },
            DataLayout::Compact { data, .. } => StorageState::Compact { data },
            DataLayout::Legacy(_) => {
                return Err(Error::Internal("a version 1/2 layout left unconverted"));
            }
        };
        Ok(DatasetState {
            path,
            header,
            dtype,
            datatype,
            dims_written: dims,
            dataspace_v2: None,
            null,
            storage,
        })
    }

    /// The dataset's path.
    pub fn path(&self) -> String {
        self.shared.state.read().path.clone()
    }

    /// The store, header address and path attribute methods work on.
    /// The address of the dataset's object header: what an object reference to it holds
    /// (see [`write_object_refs`](Self::write_object_refs), [`File::object_path`](crate::File::object_path)).
    pub fn object_address(&self) -> u64 {
        self.shared.state.read().header.get()
    }

    fn attr_target(&self) -> (&Store, Addr, String) {
        let st = self.shared.state.read();
        (&self.file.inner.store, st.header, st.path.clone())
    }

    crate::attr::attribute_methods!("dataset");

    /// Whether the dataspace is null (h5py's `h5py.Empty`, libhdf5's `H5S_NULL`): the dataset
    /// has no elements and no shape. It reports [`shape`](Self::shape) `[0]` and
    /// [`max_shape`](Self::max_shape) `[Some(0)]`, so every read gives zero elements.
    pub fn is_null(&self) -> bool {
        self.shared.state.read().null
    }

    /// Current dimensions.
    pub fn shape(&self) -> Vec<u64> {
        self.shared.dims.read().0.clone()
    }

    /// Maximum dimensions (`None`: unlimited).
    pub fn max_shape(&self) -> Vec<Option<u64>> {
        self.shared.dims.read().1.clone()
    }

    /// The element type.
    pub fn dtype(&self) -> TypeDesc {
        self.shared.dtype
    }

    /// The file the dataset belongs to.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// The element type as the file stores it (every class: string padding and character
    /// set, compound members, enumeration names and values, ...).
    pub fn datatype(&self) -> &Datatype {
        &self.shared.datatype
    }

    /// Chunk dimensions, if chunked.
    pub fn chunk(&self) -> Option<Vec<u64>> {
        match &self.shared.state.read().storage {
            StorageState::Chunked(c) => Some(c.shape.chunk.clone()),
            _ => None,
        }
    }

    /// The chunk index kind, if chunked.
    pub fn index_kind(&self) -> Option<IndexKind> {
        match &self.shared.state.read().storage {
            StorageState::Chunked(c) => Some(c.index.kind()),
            _ => None,
        }
    }

    /// The layout message version, if chunked.
    pub fn layout_version(&self) -> Option<u8> {
        match &self.shared.state.read().storage {
            StorageState::Chunked(c) => Some(c.layout.version.number()),
            _ => None,
        }
    }

    fn check_type(&self, t: TypeDesc) -> Result<()> {
        let d = self.dtype();
        if d.class != t.class || d.size != t.size {
            return Err(Error::arg(
                "element type",
                format!(
                    "dataset {} holds {} elements, not {}",
                    self.path(),
                    d.numpy(),
                    t.numpy()
                ),
            ));
        }
        Ok(())
    }

    /// Read everything, as `T`.
    pub fn read<T: H5Type>(&self) -> Result<Vec<T>> {
        self.check_type(T::DESC)?;
        self.read_values(&Hyperslab::all(&self.shape()))
    }

    /// Read everything, as little-endian bytes of the dataset's type (for element types known
    /// only at run time: see [`Dataset::dtype`]).
    pub fn read_raw(&self) -> Result<Vec<u8>> {
        let dims = self.shape();
        self.read_selection_raw(&Hyperslab::all(&dims))
    }

    /// Read a hyperslab as little-endian bytes of the dataset's type, in C order.
    pub fn read_slice_raw(
        &self,
        start: &[u64],
        count: &[u64],
        stride: Option<&[u64]>,
    ) -> Result<Vec<u8>> {
        let h = Hyperslab::new(start, count, stride, &self.shape())?;
        self.read_selection_raw(&h)
    }

    /// Read a hyperslab (`stride` 1 when `None`), as `T`, in C order.
    pub fn read_slice<T: H5Type>(
        &self,
        start: &[u64],
        count: &[u64],
        stride: Option<&[u64]>,
    ) -> Result<Vec<T>> {
        if stride.is_none() {
            let mut one = [T::default()];
            if self.read_one_element(start, count, &mut one)? {
                return Ok(one.to_vec());
            }
        }
        self.check_type(T::DESC)?;
        self.read_values(&Hyperslab::new(start, count, stride, &self.shape())?)
    }

    /// `h`'s elements as a new vector (the type checked), or a typed error when they do not
    /// fit in memory.
    fn read_values<T: H5Type>(&self, h: &Hyperslab) -> Result<Vec<T>> {
        let n = usize::try_from(h.len())
            .map_err(|_| Error::arg("selection", "more elements than memory can address"))?;
        let mut out = Vec::new();
        out.try_reserve_exact(n).map_err(|_| {
            Error::arg(
                "selection",
                format!("{n} elements do not fit in memory (read it in parts with read_slice)"),
            )
        })?;
        out.resize(n, T::default());
        self.read_typed(h, &mut out)?;
        Ok(out)
    }

    /// Read a hyperslab into `out` (as h5py's `read_direct`, or `H5Dread` into the caller's
    /// buffer): `out` holds exactly the selected elements, in C order. A loop of small reads
    /// allocates nothing per read, and unfiltered chunks selected whole are read from the file
    /// straight into `out`.
    pub fn read_slice_into<T: H5Type>(
        &self,
        start: &[u64],
        count: &[u64],
        stride: Option<&[u64]>,
        out: &mut [T],
    ) -> Result<()> {
        if stride.is_none() && self.read_one_element(start, count, out)? {
            return Ok(());
        }
        self.check_type(T::DESC)?;
        let h = Hyperslab::new(start, count, stride, &self.shape())?;
        if u64::try_from(out.len()).ok() != Some(h.len()) {
            return Err(Error::arg(
                "out",
                format!("holds {} elements, the selection {}", out.len(), h.len()),
            ));
        }
        self.read_typed(&h, out)
    }

    /// Fill `out` (exactly `h`'s elements; the type checked) from `h`: straight into its
    /// memory when `T` allows and the host is little-endian, else through a byte buffer.
    fn read_typed<T: H5Type>(&self, h: &Hyperslab, out: &mut [T]) -> Result<()> {
        let dtype = self.dtype();
        if cfg!(target_endian = "little")
            && let Some(bytes) = T::bytes_mut(out)
            && bytes.len() as u64 == h.len().saturating_mul(dtype.size as u64)
        {
            self.read_selection_into(h, bytes)?;
            dtype.to_from_le(bytes);
            return Ok(());
        }
        let bytes = self.read_selection_raw(h)?;
        for (o, b) in out.iter_mut().zip(bytes.chunks_exact(T::DESC.size)) {
            *o = T::read_le(b);
        }
        Ok(())
    }

    /// The lookup path (see [`read_element`](Self::read_element)) for a one-element `out`;
    /// `false` when the selection is of another kind.
    fn read_one_element<T: H5Type>(
        &self,
        start: &[u64],
        count: &[u64],
        out: &mut [T],
    ) -> Result<bool> {
        let [slot] = out else {
            return Ok(false);
        };
        let dtype = self.dtype();
        // Another element type: the general path reports it.
        if dtype.class != T::DESC.class
            || dtype.size != T::DESC.size
            || count.iter().any(|&n| n != 1)
        {
            return Ok(false);
        }
        // The element's bytes, in the file's order, then as `T`.
        let mut buf = [0u8; 16];
        let Some(one) = buf.get_mut(..dtype.size) else {
            return Ok(false);
        };
        if !self.read_element(start, one)? {
            return Ok(false);
        }
        dtype.to_from_le(one);
        *slot = T::read_le(one);
        Ok(true)
    }

    pub(crate) fn read_selection_raw(&self, h: &Hyperslab) -> Result<Vec<u8>> {
        let elem = self.dtype().size;
        let n = usize::try_from(h.len())
            .map_err(|_| Error::arg("selection", "more elements than memory can address"))?;
        let bytes = n
            .checked_mul(elem)
            .ok_or_else(|| Error::arg("selection", "more bytes than memory can address"))?;
        let mut out = zeroed(bytes)?;
        self.read_selection_into(h, &mut out)?;
        self.dtype().to_from_le(&mut out);
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
        if cfg!(target_endian = "little")
            && let Some(le) = T::bytes(data)
        {
            // The values' own bytes: a whole chunk is copied once, into its buffer.
            return self.write_slice_raw(le, start, count, stride);
        }
        let h = Hyperslab::new(start, count, stride, &self.shape())?;
        self.write_selection_raw(&h, to_le_bytes(data))
    }

    /// Write everything from little-endian bytes of the dataset's type, in C order.
    pub fn write_raw(&self, le: &[u8]) -> Result<()> {
        let dims = self.shape();
        self.write_selection_raw(&Hyperslab::all(&dims), le.to_vec())
    }

    /// Write a hyperslab from little-endian bytes of the dataset's type.
    pub fn write_slice_raw(
        &self,
        le: &[u8],
        start: &[u64],
        count: &[u64],
        stride: Option<&[u64]>,
    ) -> Result<()> {
        if stride.is_none()
            && (self.write_box_of_new_chunks(le, start, count)?
                || self.write_whole_chunk(le, start, count)?
                || self.write_aligned(le, start, count)?)
        {
            return Ok(());
        }
        let h = Hyperslab::new(start, count, stride, &self.shape())?;
        self.write_selection_raw(&h, le.to_vec())
    }

    /// The append path: a selection that is exactly one chunk of the grid, inside the extent,
    /// of a type stored little-endian, is that chunk's bytes as they are. They are copied once,
    /// into the chunk's buffer (a new fresh chunk when the chunk is not cached), with no
    /// selection built or walked. Whether the write was of that kind (and done).
    fn write_whole_chunk(&self, le: &[u8], start: &[u64], count: &[u64]) -> Result<bool> {
        let f = &self.file.inner.store;
        f.check_writable()?;
        let encoded = if self.shared.filtered {
            self.encode_whole_chunk(le, start, count)?
        } else {
            None
        };
        self.with_chunked_le(|f, path, header, c, _| {
            let Some(scaled) = whole_chunk_at(c, le, start, count) else {
                return Ok(false);
            };
            // Stored as it is, written at once with no copy to batch: a chunk encoded before the
            // state was taken, or a large unfiltered one from the caller's buffer.
            let ready = match encoded {
                Some((bytes, mask)) if c.pipeline.is_some() => Some((Cow::Owned(bytes), mask)),
                _ if c.pipeline.is_none() && c.shape.chunk_bytes >= DIRECT_WRITE_BYTES => {
                    Some((Cow::Borrowed(le), 0))
                }
                _ => None,
            };
            if let Some((stored, mask)) = ready
                && !c.cache.get_mut().contains(&scaled)
                && c.fresh.position(&scaled).is_none()
            {
                c.write_encoded(f, &[(&scaled, stored, mask)])?;
                return Ok(true);
            }
            if !c.write_whole(f, path, &scaled, le)? {
                return Err(short_chunk(path, header, &scaled));
            }
            Ok(true)
        })
    }

    /// Run `body` on the chunked storage of a dataset whose type is stored little-endian
    /// (the append paths' case), holding the state: `body` gets the store, the path, the
    /// object header address, the chunked storage and the element size. `Ok(false)` for any
    /// other dataset.
    fn with_chunked_le(
        &self,
        body: impl FnOnce(&Store, &str, Addr, &mut Chunked, usize) -> Result<bool>,
    ) -> Result<bool> {
        let f = &self.file.inner.store;
        let mut st = self.shared.write();
        let elem = st.dtype.size;
        if !st.dtype.stored_le() {
            return Ok(false);
        }
        let DatasetState {
            path,
            header,
            storage,
            ..
        } = &mut **st;
        let StorageState::Chunked(c) = storage else {
            return Ok(false);
        };
        body(f, path, *header, c, elem)
    }

    /// The append path of several chunks (a row of chunks appended to a 2-D dataset, a block of
    /// them): a selection on the chunk grid, inside the extent, of a type stored
    /// little-endian. Each chunk's rows are copied straight from `le` into the chunk's buffer
    /// (a new fresh chunk when it is not cached), with no selection built or walked. Whether
    /// the write was of that kind (and done).
    fn write_aligned(&self, le: &[u8], start: &[u64], count: &[u64]) -> Result<bool> {
        self.file.inner.store.check_writable()?;
        self.with_chunked_le(|f, path, header, c, elem| {
            // Fixed arrays for up to four dimensions (the common ranks; others take the
            // general path): this runs once an append.
            let mut bufs = [[0u64; MAX_FAST_RANK]; 4];
            let [first_b, n_b, at_b, scaled_b] = &mut bufs;
            let rank = c.shape.chunk.len();
            let (Some(first), Some(n), Some(at), Some(scaled)) = (
                first_b.get_mut(..rank),
                n_b.get_mut(..rank),
                at_b.get_mut(..rank),
                scaled_b.get_mut(..rank),
            ) else {
                return Ok(false);
            };
            if !aligned_grid(&c.shape.chunk, &c.shape.dims, (start, count), first, n) {
                return Ok(false);
            }
            scaled.copy_from_slice(first);
            let mut chunk_b = [0u64; MAX_FAST_RANK];
            let chunk = chunk_b.get_mut(..rank).unwrap_or_default();
            chunk.copy_from_slice(&c.shape.chunk);
            let (Some(total), Some(row)) = (
                count.iter().try_fold(elem as u64, |a, &k| a.checked_mul(k)),
                chunk
                    .last()
                    .and_then(|&k| usize::try_from(k).ok()?.checked_mul(elem)),
            ) else {
                return Ok(false);
            };
            if total != le.len() as u64 || row == 0 {
                return Err(Error::arg(
                    "data",
                    format!("{} bytes for a selection of {total} bytes", le.len()),
                ));
            }
            // Bytes between consecutive indices of each dimension in `le` (row-major over `count`).
            let mut pitch = [0usize; MAX_FAST_RANK];
            let mut acc = elem;
            for (p, &k) in pitch.iter_mut().zip(count).rev() {
                *p = acc;
                acc = acc.saturating_mul(usize::try_from(k).unwrap_or(usize::MAX));
            }
            // Where each of a chunk's rows (its last dimension) starts in `le`, from where the
            // chunk starts there: the same for every chunk of the box.
            let outer = chunk.get(..rank.saturating_sub(1)).unwrap_or_default();
            let nrows = outer
                .iter()
                .try_fold(1usize, |a, &k| a.checked_mul(usize::try_from(k).ok()?));
            // Chunks of more rows than this (a million) take the general path.
            let Some(nrows) = nrows.filter(|&r| r <= 1 << 20) else {
                return Ok(false);
            };
            let mut offsets: SmallVec<[usize; 16]> = SmallVec::with_capacity(nrows);
            let mut rows_b = [0u64; MAX_FAST_RANK];
            let rows = rows_b.get_mut(..outer.len()).unwrap_or_default();
            loop {
                offsets.push((rows.iter().zip(&pitch)).fold(0usize, |o, (&r, &p)| {
                    o.saturating_add(usize::try_from(r).unwrap_or(usize::MAX).saturating_mul(p))
                }));
                if !step_row_major(rows, outer) {
                    break;
                }
            }
            let offsets: &[usize] = &offsets;
            // The chunks of the box `first .. first + n`, in row-major order; `at` counts from 0.
            loop {
                let base =
                    (at.iter().zip(&*chunk).zip(&pitch)).fold(0usize, |o, ((&a, &k), &p)| {
                        let i = usize::try_from(a.saturating_mul(k)).unwrap_or(usize::MAX);
                        o.saturating_add(i.saturating_mul(p))
                    });
                let rows = |i: usize| {
                    let src = base.saturating_add(*offsets.get(i)?);
                    le.get(src..src.checked_add(row)?)
                };
                if !c.write_whole_rows(f, path, scaled, (offsets.len(), row), rows)? {
                    return Err(short_chunk(path, header, scaled));
                }
                if !step_row_major(at, n) {
                    return Ok(true);
                }
                for ((s, &f0), &a) in scaled.iter_mut().zip(&*first).zip(&*at) {
                    *s = f0.saturating_add(a);
                }
            }
        })
    }

    /// A whole filtered chunk is encoded before the state is taken for the write, so that
    /// writers on several threads compress side by side: its stored bytes and filter mask
    /// (`None` when the write is not of a whole filtered chunk).
    fn encode_whole_chunk(
        &self,
        le: &[u8],
        start: &[u64],
        count: &[u64],
    ) -> Result<Option<(Vec<u8>, u32)>> {
        let (pipeline, path, scaled) = {
            let st = self.shared.state.read();
            let StorageState::Chunked(c) = &st.storage else {
                return Ok(None);
            };
            let Some(p) = &c.pipeline else {
                return Ok(None);
            };
            match whole_chunk_at(c, le, start, count) {
                Some(scaled) if st.dtype.stored_le() && !c.skips_filters(&scaled) => {
                    (p.clone(), st.path.clone(), scaled)
                }
                _ => return Ok(None),
            }
        };
        pipeline
            .encode(le)
            .map(Some)
            .map_err(|source| Error::Filter {
                dataset: path,
                chunk: scaled.to_vec(),
                source,
            })
    }

    fn write_selection_raw(&self, h: &Hyperslab, mut data: Vec<u8>) -> Result<()> {
        let f = &self.file.inner.store;
        f.check_writable()?;
        let dims = self.shape();
        let mut st = self.shared.write();
        let elem = st.dtype.size;
        if h.len().checked_mul(elem as u64) != Some(data.len() as u64) {
            return Err(Error::arg(
                "data",
                format!(
                    "{} bytes for a selection of {} elements of {elem} bytes",
                    data.len(),
                    h.len()
                ),
            ));
        }
        st.dtype.to_from_le(&mut data);
        let DatasetState {
            path,
            header,
            storage,
            ..
        } = &mut **st;
        if let StorageState::Contiguous {
            external: Some(e), ..
        } = storage
        {
            return e.write_selection(h, &dims, &data, elem);
        }
        let StorageState::Chunked(c) = storage else {
            return Err(Error::Unsupported("writing contiguous or compact datasets"));
        };
        let chunk = c.shape.chunk.clone();
        let chunk_elems = c.chunk_elems();
        h.try_for_each_chunk(&chunk, |scaled| {
            let whole = h.covered(&chunk, scaled) == chunk_elems;
            let buf = c.write_target(f, path, scaled, whole)?;
            if !copy_runs(h, &chunk, scaled, |r| copy_in(buf, &data, r, elem)) {
                return Err(short_chunk(path, *header, scaled));
            }
            Ok(())
        })
    }

    /// Change the current dimensions within the maximum ones. Shrinking drops the chunks wholly
    /// outside the new extent (their space is freed) and resets the elements of the cut chunks
    /// beyond it to the fill value, as libhdf5 does.
    pub fn resize(&self, dims: &[u64]) -> Result<()> {
        let f = &self.file.inner.store;
        f.check_writable()?;
        {
            // The append path: no dimension shrinks, so no chunk is dropped or cut and the
            // index learns of the new extent from the chunks written into it. The dims change
            // in memory; the dataspace message is written at the next flush.
            let mut st = self.shared.write();
            if let StorageState::Chunked(c) = &mut st.storage {
                let mut g = self.shared.dims.write();
                let (cur, max) = &mut *g;
                let grows = dims.len() == max.len()
                    && dims.len() == cur.len()
                    && dims
                        .iter()
                        .zip(cur.iter())
                        .zip(max)
                        .all(|((&d, &o), m)| d >= o && m.is_none_or(|m| d <= m));
                if grows {
                    // Element by element: a call to memcmp costs more than these few words.
                    if cur.iter().ne(dims.iter()) {
                        chunked::copy_dims(cur, dims);
                        c.set_grown_dims(dims);
                    }
                    return Ok(());
                }
            }
        }
        let old = {
            let g = self.shared.dims.read();
            let (cur, max) = (&g.0, &g.1);
            if dims.len() != max.len()
                || dims.iter().zip(max).any(|(&d, m)| m.is_some_and(|m| d > m))
            {
                return Err(Error::arg(
                    "dims",
                    format!("cannot resize to {dims:?} within {max:?}"),
                ));
            }
            // The old extent matters only to a shrink; growing copies nothing.
            let shrinks = dims.iter().zip(cur).any(|(n, o)| n < o);
            shrinks.then(|| cur.clone())
        };
        let mut st = self.shared.write();
        let DatasetState { path, storage, .. } = &mut **st;
        let StorageState::Chunked(c) = storage else {
            return Err(Error::Unsupported(
                "resizing contiguous or compact datasets",
            ));
        };
        let shrinks = old.is_some();
        if let Some(old) = old {
            // Write what is cached so the index knows every chunk, then prune.
            c.flush_cache(f, path)?;
            let chunk = c.shape.chunk.clone();
            let chunks = match pruned_region(&chunk, &old, dims) {
                // A small region past the new extent: its chunks are looked up one by one
                // (a shrink by a few rows costs a few lookups, not a walk of the index).
                Some(region) => {
                    let mut found = Vec::new();
                    for scaled in region {
                        if let Some(rec) = c.index.get(f, &scaled)? {
                            found.push((scaled, rec));
                        }
                    }
                    found
                }
                None => {
                    let mut all = Vec::new();
                    c.index.for_each(f, &mut |s, r| all.push((s.to_vec(), r)))?;
                    all
                }
            };
            for (scaled, rec) in chunks {
                let outside = scaled
                    .iter()
                    .zip(&chunk)
                    .zip(dims)
                    // A chunk starting past 2^64 starts past `d` too.
                    .any(|((&s, &cd), &d)| s.checked_mul(cd).is_none_or(|start| start >= d));
                if outside {
                    c.index.remove(f, &scaled)?;
                    c.cache.get_mut().remove(&scaled);
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
                let cut = scaled.iter().zip(&chunk).zip(dims.iter().zip(&old)).any(
                    |((&s, &cd), (&n, &o))| {
                        let end = s.checked_add(1).and_then(|e| e.checked_mul(cd));
                        end.is_none_or(|end| end > n) && n < o
                    },
                );
                if cut {
                    let elem = c.fill.len();
                    let fill = c.fill.clone();
                    let buf = c.cached(f, path, &scaled, false)?;
                    reset_outside(buf, &scaled, &chunk, dims, &fill, elem);
                    if let Some(e) = c.cache.get_mut().get_mut(&scaled) {
                        e.dirty = true;
                    }
                }
            }
        }
        if shrinks {
            c.index.set_dims(f, dims)?;
        }
        c.set_grown_dims(dims);
        drop(st);
        let mut g = self.shared.dims.write();
        g.0.clear();
        g.0.extend_from_slice(dims);
        Ok(())
    }

    /// Append `data` (C order) along the first unlimited dimension: the dimension grows by
    /// `data.len()` divided by the product of the other dimensions.
    pub fn append<T: H5Type>(&self, data: &[T]) -> Result<()> {
        self.check_type(T::DESC)?;
        if cfg!(target_endian = "little")
            && let Some(le) = T::bytes(data)
            && self.append_whole_chunks(le)?
        {
            return Ok(());
        }
        // The new extent, and where the appended slab starts and how large it is, in one pass
        // over the current dims (no copy of them kept).
        let (new, start, count) = {
            let g = self.shared.dims.read();
            let (cur, max) = (&g.0, &g.1);
            let k = max
                .iter()
                .position(Option::is_none)
                .ok_or_else(|| Error::arg("data", "append needs an unlimited dimension"))?;
            let others: u64 = (cur.iter().enumerate())
                .filter(|&(u, _)| u != k)
                .map(|(_, &d)| d)
                .product();
            let values = data.len() as u64;
            let grow = match values.checked_div(others) {
                Some(grow) if values.is_multiple_of(others) => grow,
                _ => {
                    return Err(Error::arg(
                        "data",
                        format!(
                            "{} values do not fill whole slices of {others} elements",
                            data.len()
                        ),
                    ));
                }
            };
            let old_len = *cur
                .get(k)
                .ok_or(Error::Internal("an unlimited dimension past the rank"))?;
            let len = old_len
                .checked_add(grow)
                .ok_or_else(|| Error::arg("data", "appending past 2^64 elements"))?;
            let at = |u: usize, here: u64, other: u64| if u == k { here } else { other };
            let new: SmallVec<[u64; 4]> = (cur.iter().enumerate())
                .map(|(u, &d)| at(u, len, d))
                .collect();
            let start: SmallVec<[u64; 4]> = (0..cur.len()).map(|u| at(u, old_len, 0)).collect();
            let count: SmallVec<[u64; 4]> = (cur.iter().enumerate())
                .map(|(u, &d)| at(u, grow, d))
                .collect();
            (new, start, count)
        };
        self.resize(&new)?;
        if cfg!(target_endian = "little")
            && let Some(le) = T::bytes(data)
        {
            // The type is checked above: straight to the bytes' path.
            return self.write_slice_raw(le, &start, &count, None);
        }
        self.write_slice(data, &start, &count, None)
    }

    /// Allocate every chunk of the current extent now (early allocation), writing fill values.
    fn allocate_all(&self) -> Result<()> {
        let f = &self.file.inner.store;
        let mut st = self.shared.write();
        let DatasetState { path, storage, .. } = &mut **st;
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
                .chunk_count()
                .unwrap_or(0);
                let chunk = c.fill.repeat(c.chunk_elems() as usize);
                for i in 0..n {
                    let at = i
                        .checked_mul(c.shape.chunk_bytes)
                        .and_then(|off| base.get().checked_add(off))
                        .ok_or_else(|| {
                            Error::corrupt("layout", base, format!("implicit chunk {i} past 2^64"))
                        })?;
                    f.write(Addr(at), &chunk)?;
                }
            }
            return Ok(());
        }
        let grid = c.shape.grid();
        let all = Hyperslab::all(&grid);
        for scaled in all.chunks(&vec![1; grid.len()]) {
            if c.index.get(f, &scaled)?.is_none() {
                let data = c.fill.repeat(c.chunk_elems() as usize);
                c.write_chunk(f, path, &scaled, &data)?;
            }
        }
        Ok(())
    }

    /// Every allocated chunk, as `H5Dchunk_iter` reports them (dirty cached chunks are written
    /// first so that they are listed).
    pub fn chunks(&self) -> Result<Vec<ChunkInfo>> {
        let chunk = self.chunk().unwrap_or_default();
        let path = self.path();
        let mut out = Vec::new();
        // The first chunk whose offset does not fit `u64`.
        let mut past = None;
        self.for_each_chunk(&mut |s, addr, size, mask| {
            // A single-chunk index reports its one chunk with no coordinates: the origin.
            let offset = (s.iter().chain(std::iter::repeat(&0)))
                .zip(&chunk)
                .map(|(a, b)| a.checked_mul(*b))
                .collect();
            match offset {
                Some(offset) => out.push(ChunkInfo {
                    offset,
                    addr,
                    size,
                    filter_mask: mask,
                }),
                None => {
                    past.get_or_insert_with(|| s.to_vec());
                }
            }
        })?;
        if let Some(s) = past {
            return Err(Error::corrupt(
                "chunk index",
                None,
                format!("{path}: chunk {s:?} starts past 2^64"),
            ));
        }
        Ok(out)
    }

    /// Visit every allocated chunk: its scaled coordinates (chunk grid indices; none for a
    /// single-chunk index), address, stored size and filter mask. Dirty cached chunks are
    /// written first. Nothing per chunk is allocated (a million-chunk index is walked for
    /// `h5chunk refs`).
    pub(crate) fn for_each_chunk(&self, visit: &mut ChunkVisitor<'_>) -> Result<()> {
        let f = &self.file.inner.store;
        let mut st = self.shared.write();
        let DatasetState { path, storage, .. } = &mut **st;
        let StorageState::Chunked(c) = storage else {
            return Ok(());
        };
        c.flush_cache(f, path)?;
        let chunk_bytes = c.shape.chunk_bytes;
        let filtered = c.pipeline.is_some();
        c.index.for_each(f, &mut |s, r| {
            if let Some(addr) = r.addr {
                visit(s, addr, if filtered { r.size } else { chunk_bytes }, r.mask);
            }
        })
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
        let f = &self.file.inner.store;
        f.check_writable()?;
        let mut st = self.shared.write();
        let dims = self.shared.dims.read().0.clone();
        let DatasetState { path, storage, .. } = &mut **st;
        let StorageState::Chunked(c) = storage else {
            return Err(Error::Unsupported(
                "direct chunk writes to contiguous or compact datasets",
            ));
        };
        let scaled = grid_position(offset, &c.shape.chunk, &dims)?;
        let filtered = c.pipeline.is_some();
        if !filtered && stored.len() as u64 != c.shape.chunk_bytes {
            return Err(Error::arg(
                "stored",
                format!(
                    "an unfiltered chunk holds {} bytes, not {}",
                    c.shape.chunk_bytes,
                    stored.len()
                ),
            ));
        }
        // A cached or fresh copy would overwrite what is written here.
        c.cache.get_mut().remove(&scaled);
        if c.fresh.position(&scaled).is_some() {
            c.flush_fresh(f, path)?;
        }
        let old = c.index.get(f, &scaled)?;
        let addr = match old {
            Some(ChunkRecord {
                addr: Some(a),
                size,
                ..
            }) if !f.swmr_write() && (!filtered || size == stored.len() as u64) => a,
            Some(ChunkRecord {
                addr: Some(a),
                size,
                ..
            }) => {
                // Unfiltered records may carry no size: every such chunk is `chunk_bytes`.
                f.free(a, if filtered { size } else { c.shape.chunk_bytes })?;
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
        )?;
        c.note_recorded(&scaled);
        Ok(())
    }

    /// A chunk's stored bytes and filter mask, without decoding (h5py's `read_direct_chunk`);
    /// `None` if the chunk is not allocated. Cached changes are written first.
    pub fn read_direct_chunk(&self, offset: &[u64]) -> Result<Option<(Vec<u8>, u32)>> {
        let f = &self.file.inner.store;
        let mut st = self.shared.write();
        let dims = self.shared.dims.read().0.clone();
        let DatasetState { path, storage, .. } = &mut **st;
        let StorageState::Chunked(c) = storage else {
            return Err(Error::Unsupported(
                "direct chunk reads of contiguous or compact datasets",
            ));
        };
        let scaled = grid_position(offset, &c.shape.chunk, &dims)?;
        if let Some(e) = c.cache.get_mut().get_mut(&scaled)
            && e.dirty
        {
            e.dirty = false;
            let data = e.data.clone();
            c.write_chunk(f, path, &scaled, &data)?;
        }
        if c.fresh.position(&scaled).is_some() {
            c.flush_fresh(f, path)?;
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
            .map_err(|_| Error::Internal("ndarray refused the dataset's own shape"))
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
        let f = &self.file.inner.store;
        let mut st = self.shared.write();
        match &mut st.storage {
            StorageState::Chunked(c) => c.index.metadata_bytes(f),
            _ => Ok(0),
        }
    }
}

/// The chunk `le` is, whole, when `start`/`count` select exactly one chunk of the grid inside
/// the extent and `le` is that chunk's size.
#[inline(always)]
fn whole_chunk_at(
    c: &Chunked,
    le: &[u8],
    start: &[u64],
    count: &[u64],
) -> Option<SmallVec<[u64; 4]>> {
    if le.len() as u64 != c.shape.chunk_bytes
        || count.iter().ne(c.shape.chunk.iter())
        || start.len() != count.len()
    {
        return None;
    }
    let mut scaled: SmallVec<[u64; 4]> = SmallVec::new();
    for ((&s, &n), &d) in start.iter().zip(count).zip(&c.shape.dims) {
        match (s.checked_rem(n), s.checked_div(n), s.checked_add(n)) {
            (Some(0), Some(q), Some(end)) if end <= d => scaled.push(q),
            _ => return None,
        }
    }
    Some(scaled)
}

/// The scaled coordinates of every chunk of the `old` extent that reaches past the `new` one
/// (to drop or to cut), when there are at most [`PRUNE_LOOKUPS`]; `None` when there are more
/// (walking the index is then cheaper) or a bound overflows. For each dimension that shrinks,
/// the slab of chunks from the first one the new extent does not hold whole, with the
/// dimensions before it that shrink too kept inside theirs, so that no chunk comes twice.
fn pruned_region(chunk: &[u64], old: &[u64], new: &[u64]) -> Option<Vec<Vec<u64>>> {
    let rank = chunk.len();
    if old.len() != rank || new.len() != rank {
        return None;
    }
    // Per dimension: chunks in the old extent, and chunks the new extent holds whole.
    let grid: Vec<u64> = (old.iter().zip(chunk))
        .map(|(&o, &c)| o.checked_add(c.checked_sub(1)?)?.checked_div(c))
        .collect::<Option<_>>()?;
    let whole: Vec<u64> = (new.iter().zip(chunk))
        .map(|(&n, &c)| n.checked_div(c))
        .collect::<Option<_>>()?;
    let mut out = Vec::new();
    for d in 0..rank {
        let (Some(&n), Some(&o)) = (new.get(d), old.get(d)) else {
            return None;
        };
        if n >= o {
            continue;
        }
        // The slab: dimension d from `whole[d]`, earlier shrinking dimensions inside their
        // whole chunks, every other dimension over the old grid.
        let mut lo = vec![0u64; rank];
        let mut hi = grid.clone();
        for e in 0..rank {
            let (Some(l), Some(h), Some(&w)) = (lo.get_mut(e), hi.get_mut(e), whole.get(e)) else {
                return None;
            };
            if e == d {
                *l = w;
            } else if e < d && new.get(e) < old.get(e) {
                *h = (*h).min(w);
            }
        }
        let count = (lo.iter().zip(&hi))
            .try_fold(1u64, |a, (&l, &h)| a.checked_mul(h.saturating_sub(l)))?;
        if count == 0 {
            continue;
        }
        if (out.len() as u64).saturating_add(count) > PRUNE_LOOKUPS {
            return None;
        }
        let span: Vec<u64> = (lo.iter().zip(&hi))
            .map(|(&l, &h)| h.saturating_sub(l))
            .collect();
        let mut rel = vec![0u64; rank];
        loop {
            out.push(
                (lo.iter().zip(&rel))
                    .map(|(&l, &r)| l.saturating_add(r))
                    .collect(),
            );
            if !step_row_major(&mut rel, &span) {
                break;
            }
        }
    }
    Some(out)
}

/// The most chunk lookups a shrink makes before it walks the whole index instead.
const PRUNE_LOOKUPS: u64 = 4096;

/// Step `idx` to the next index of the box `0 .. bound` in row-major order: `false` (with
/// `idx` back at zeros) after the last.
fn step_row_major(idx: &mut [u64], bound: &[u64]) -> bool {
    for (i, &b) in idx.iter_mut().zip(bound).rev() {
        *i = i.saturating_add(1);
        if *i < b {
            return true;
        }
        *i = 0;
    }
    false
}

/// The most dimensions the box-of-chunks append path handles (on the stack).
const MAX_FAST_RANK: usize = 4;

/// Whether a selection covers a box of whole chunks exactly, on the chunk grid and inside the
/// extent; if so `first` gets its first chunk's scaled coordinates and `n` the number of
/// chunks along each dimension (all slices one per dimension).
fn aligned_grid(
    chunk: &[u64],
    dims: &[u64],
    (start, count): (&[u64], &[u64]),
    first: &mut [u64],
    n: &mut [u64],
) -> bool {
    let rank = chunk.len();
    if [start.len(), count.len(), dims.len(), first.len(), n.len()]
        .iter()
        .any(|&l| l != rank)
    {
        return false;
    }
    let dims_iter = start.iter().zip(count).zip(chunk).zip(dims);
    for ((((&s, &k), &c), &d), (f, m)) in dims_iter.zip(first.iter_mut().zip(n.iter_mut())) {
        let (q, r) = (s.checked_div(c), k.checked_div(c));
        match (s.checked_rem(c), k.checked_rem(c), s.checked_add(k), q, r) {
            (Some(0), Some(0), Some(end), Some(q), Some(r)) if k > 0 && end <= d => {
                *f = q;
                *m = r;
            }
            _ => return false,
        }
    }
    true
}

/// The scaled coordinates of the chunk whose first element is at `offset`.
/// `len` zero bytes, or a typed error when the memory cannot be had (a selection sized by a
/// file's dataspace may ask for petabytes: that is an error, not an abort).
pub(crate) fn zeroed(len: usize) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        Error::arg(
            "selection",
            format!("{len} bytes do not fit in memory (read it in parts with read_slice)"),
        )
    })?;
    v.resize(len, 0);
    Ok(v)
}

fn grid_position(offset: &[u64], chunk: &[u64], dims: &[u64]) -> Result<Vec<u64>> {
    let bad = || {
        Error::arg(
            "offset",
            format!(
                "{offset:?} is not the first element of a chunk (chunk {chunk:?}) inside {dims:?}"
            ),
        )
    };
    if offset.len() != chunk.len()
        || offset
            .iter()
            .zip(chunk)
            .zip(dims)
            .any(|((&o, &c), &d)| o.checked_rem(c) != Some(0) || o >= d)
    {
        return Err(bad());
    }
    offset
        .iter()
        .zip(chunk)
        .map(|(o, c)| o.checked_div(*c))
        .collect::<Option<_>>()
        .ok_or_else(bad)
}

/// Chunk `scaled`'s buffer is too short for the selection's runs: its layout's element size
/// disagrees with the datatype's.
fn short_chunk(path: &str, header: Addr, scaled: &[u64]) -> Error {
    Error::corrupt(
        "dataset",
        header,
        format!("{path}: chunk {scaled:?} is shorter than its elements"),
    )
}

/// Contiguous or compact storage of `len` bytes is too short for the dataspace.
fn short_storage(path: &str, header: Addr, len: usize) -> Error {
    Error::corrupt(
        "dataset",
        header,
        format!("{path}: storage of {len} bytes is shorter than its dataspace"),
    )
}

/// Call `copy` on each run of `h` in chunk `scaled` (dims `chunk`) until one does not fit its
/// buffers; whether all fit.
fn copy_runs(
    h: &Hyperslab,
    chunk: &[u64],
    scaled: &[u64],
    mut copy: impl FnMut(Run) -> Option<()>,
) -> bool {
    let mut fits = true;
    h.runs(chunk, scaled, |r| {
        if fits {
            fits = copy(r).is_some();
        }
    });
    fits
}

/// A run in bytes: its range in the chunk buffer (from its first element to the end of its
/// last), its range in the selection buffer, and the distance between its elements in the
/// chunk buffer.
struct ByteRun {
    chunk: std::ops::Range<usize>,
    memory: std::ops::Range<usize>,
    step: usize,
}

impl ByteRun {
    /// Run `r` of `elem`-byte elements; `None` if a bound overflows, or for a step of 0 (runs
    /// step by at least 1).
    fn new(r: Run, elem: usize) -> Option<ByteRun> {
        let bytes = |n: u64| usize::try_from(n).ok()?.checked_mul(elem);
        let (c, m, n, step) = (
            bytes(r.chunk)?,
            bytes(r.memory)?,
            bytes(r.len)?,
            bytes(r.chunk_step)?,
        );
        if r.chunk_step == 0 {
            return None;
        }
        let span = match r.len.checked_sub(1) {
            None => 0,
            Some(k) => usize::try_from(k)
                .ok()?
                .checked_mul(step)?
                .checked_add(elem)?,
        };
        Some(ByteRun {
            chunk: c..c.checked_add(span)?,
            memory: m..m.checked_add(n)?,
            step,
        })
    }
}

/// Copy run `r` from a chunk buffer into the selection buffer; `None` if it does not fit them.
fn copy_out(out: &mut [u8], chunk: &[u8], r: Run, elem: usize) -> Option<()> {
    if elem == 0 {
        return Some(());
    }
    let b = ByteRun::new(r, elem)?;
    let (dst, src) = (out.get_mut(b.memory)?, chunk.get(b.chunk)?);
    if r.chunk_step == 1 {
        dst.copy_from_slice(src);
    } else {
        // `step >= elem`: each piece of `src` starts with one element, the last is one.
        for (d, s) in dst.chunks_exact_mut(elem).zip(src.chunks(b.step)) {
            d.copy_from_slice(s.get(..elem)?);
        }
    }
    Some(())
}

/// Copy run `r` from the selection buffer into a chunk buffer; `None` if it does not fit them.
pub(crate) fn copy_in(chunk: &mut [u8], data: &[u8], r: Run, elem: usize) -> Option<()> {
    if elem == 0 {
        return Some(());
    }
    let b = ByteRun::new(r, elem)?;
    let (dst, src) = (chunk.get_mut(b.chunk)?, data.get(b.memory)?);
    if r.chunk_step == 1 {
        dst.copy_from_slice(src);
    } else {
        // `step >= elem`: each piece of `dst` starts with one element, the last is one.
        for (d, s) in dst.chunks_mut(b.step).zip(src.chunks_exact(elem)) {
            d.get_mut(..elem)?.copy_from_slice(s);
        }
    }
    Some(())
}

/// Copy a hyperslab out of a whole C-order array (contiguous and compact layouts): the array
/// is one chunk the size of the dataset. Whether `whole` held every element selected.
fn copy_from_contiguous(
    h: &Hyperslab,
    dims: &[u64],
    whole: &[u8],
    base: u64,
    out: &mut [u8],
    elem: usize,
) -> bool {
    if dims.is_empty() {
        let n = out.len().min(whole.len());
        if let (Some(dst), Some(src)) = (out.get_mut(..n), whole.get(..n)) {
            dst.copy_from_slice(src);
        }
        return true;
    }
    let chunk: Vec<u64> = dims.iter().map(|&d| d.max(1)).collect();
    let zero = vec![0u64; dims.len()];
    // `whole` starts at element `base` of the storage.
    copy_runs(h, &chunk, &zero, |mut r| {
        r.chunk = r.chunk.checked_sub(base)?;
        copy_out(out, whole, r, elem)
    })
}

/// Reset the elements of chunk `scaled` that lie outside `dims` to `fill` (`elem` bytes).
fn reset_outside(
    buf: &mut [u8],
    scaled: &[u64],
    chunk: &[u64],
    dims: &[u64],
    fill: &[u8],
    elem: usize,
) {
    if elem == 0 {
        return;
    }
    // Along each dimension, the chunk's local indices below `inside` lie within `dims` (none
    // when the chunk starts past the end, or past 2^64).
    let inside: Vec<u64> = scaled
        .iter()
        .zip(chunk)
        .zip(dims)
        .map(|((&s, &c), &d)| s.checked_mul(c).map_or(0, |start| d.saturating_sub(start)))
        .collect();
    let n: u64 = chunk.iter().product();
    for (i, slot) in (0..n).zip(buf.chunks_exact_mut(elem)) {
        // Element `i` in C order; every chunk dimension is at least 1, or `n` would be 0.
        let mut rest = i;
        let mut outside = false;
        for (&c, &lim) in chunk.iter().zip(&inside).rev() {
            outside |= rest.checked_rem(c).unwrap_or(0) >= lim;
            rest = rest.checked_div(c).unwrap_or(0);
        }
        if outside {
            slot.copy_from_slice(fill);
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]
mod prune_tests {
    use super::pruned_region;
    use std::collections::BTreeSet;

    /// Every chunk of the old grid that reaches past the new extent in a dimension that
    /// shrinks, by brute force.
    fn brute(chunk: &[u64], old: &[u64], new: &[u64]) -> BTreeSet<Vec<u64>> {
        let grid: Vec<u64> = old.iter().zip(chunk).map(|(o, c)| o.div_ceil(*c)).collect();
        let mut out = BTreeSet::new();
        let mut at = vec![0u64; chunk.len()];
        if grid.contains(&0) {
            return out;
        }
        loop {
            let past = (0..chunk.len()).any(|d| new[d] < old[d] && (at[d] + 1) * chunk[d] > new[d]);
            if past {
                out.insert(at.clone());
            }
            if !super::step_row_major(&mut at, &grid) {
                return out;
            }
        }
    }

    #[test]
    fn the_pruned_region_is_every_chunk_past_the_new_extent_once() {
        let cases: &[(&[u64], &[u64], &[u64])] = &[
            (&[16], &[100], &[98]),
            (&[16], &[100], &[96]),
            (&[16], &[100], &[0]),
            (&[4, 3], &[10, 9], &[7, 9]),
            (&[4, 3], &[10, 9], &[10, 4]),
            (&[4, 3], &[10, 9], &[5, 2]),
            (&[2, 3, 2], &[7, 8, 5], &[3, 8, 1]),
            (&[2, 3, 2], &[7, 8, 5], &[7, 8, 5]),
        ];
        for &(chunk, old, new) in cases {
            let got = pruned_region(chunk, old, new).unwrap();
            let set: BTreeSet<Vec<u64>> = got.iter().cloned().collect();
            assert_eq!(
                set.len(),
                got.len(),
                "{chunk:?} {old:?} {new:?}: a chunk twice"
            );
            assert_eq!(set, brute(chunk, old, new), "{chunk:?} {old:?} {new:?}");
        }
        // Too many to look up one by one: walk the index instead.
        assert!(pruned_region(&[1, 1], &[100, 100], &[0, 0]).is_none());
    }
}
