//! Datasets: open, read and write hyperslabs, resize, append, and list allocated chunks.
//! Creating one is [`builder`]'s; a chunked dataset's storage state is [`chunked`]'s.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use h5chunk_format::Addr;
use h5chunk_format::message::{DataLayout, Dataspace, DataspaceVersion, Message};
use parking_lot::{RwLock, RwLockWriteGuard};

use crate::error::{Error, Result};
use crate::file::{File, OpenObject};
use crate::index::select::IndexKind;
use crate::store::Store;
use crate::types::{Datatype, TypeDesc};

use builder::dataspace;
use chunked::Chunked;

mod append;
pub(crate) mod builder;
pub(crate) mod chunked;
pub(crate) mod external;
pub(crate) mod fresh;
mod grid;
pub(crate) mod inspect;
mod open;
mod read;
mod refresh;
mod resize;
mod scales;
mod sequences;
pub(crate) mod stream;
mod strings;
pub(crate) mod vds;
mod write;

pub use builder::{BitshuffleCompression, BloscCodec, BloscShuffle, DatasetBuilder, FilterSpec};
pub use stream::{RowWriter, Slab, Slabs};
pub use vds::{VirtualMapping, VirtualSelection, VirtualView};

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
pub type ChunkVisitor<'a> = dyn FnMut(&[u64], Addr, u64, u32) + 'a;

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
    /// A virtual dataset: its mappings, made concrete for the current extent.
    Virtual(Arc<vds::Virtual>),
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
pub(super) fn data_bytes(dims: &[u64], elem: usize) -> u64 {
    dims.iter().fold(elem as u64, |n, &d| n.saturating_mul(d))
}

/// An open dataset. Cloning gives another handle on the same dataset.
#[derive(Clone, Debug)]
pub struct Dataset {
    file: File,
    shared: Arc<DatasetShared>,
}

impl Dataset {
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

    /// The dataset's attributes (h5py's `dataset.attrs`).
    pub fn attrs(&self) -> crate::attr::Attributes<'_> {
        let st = self.shared.state.read();
        crate::attr::Attributes::new(&self.file.inner.store, Some(st.header), st.path.clone())
    }

    /// The attribute `name` (h5py's `dataset.attrs[name]`; `attrs().get(name)`).
    pub fn attr(&self, name: &str) -> Result<crate::Attr> {
        self.attrs().get(name)
    }

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
        if (d.class != t.class || d.size != t.size) && !crate::convert::convertible(d, t) {
            // A float of a layout h5chunk does not convert: say which, field by field.
            if t.is_number()
                && let Err(e @ Error::UnsupportedFloat { .. }) =
                    TypeDesc::from_datatype(self.datatype())
            {
                return Err(e);
            }
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
    /// `h5chunk refs`). Addresses are relative to [`File::base_address`](crate::File::base_address).
    pub fn for_each_chunk(&self, visit: &mut ChunkVisitor<'_>) -> Result<()> {
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
