//! Opening a dataset: its header's messages decoded into the state every handle shares.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use h5chunk_format::Addr;
use h5chunk_format::message::{
    DataLayout, DataspaceKind, Extent, FillDefinition, Message, MessageType,
};
use parking_lot::RwLock;

use crate::chunk_cache::{ChunkCache, DEFAULT_BUDGET};
use crate::error::{Error, Result};
use crate::file::File;
use crate::filters::Pipeline;
use crate::index::adapter::{self, Shape};
use crate::types::TypeDesc;

use super::builder::record_codec;
use super::chunked::Chunked;
use super::{Dataset, DatasetShared, DatasetState, StorageState, data_bytes, swmr_index};
use super::{external, fresh, read};

impl Dataset {
    /// The current and maximum dims a state gives its handles.
    pub(super) fn extent_of(state: &DatasetState) -> (Vec<u64>, Vec<Option<u64>>) {
        match &state.storage {
            StorageState::Chunked(c) => (c.shape.dims.clone(), c.shape.max_dims.clone()),
            StorageState::Virtual(v) => (v.dims.clone(), v.max_dims.clone()),
            _ => (
                state.dims_written.clone(),
                state.dims_written.iter().map(|&d| Some(d)).collect(),
            ),
        }
    }

    pub(super) fn shared_from_state(state: DatasetState) -> Arc<DatasetShared> {
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

    pub(super) fn load(file: &File, header: Addr, path: String) -> Result<DatasetState> {
        Dataset::load_with(file, header, path, super::vds::VirtualView::default())
    }

    /// [`load`](Self::load), a virtual dataset's extent made in `view`.
    pub(super) fn load_with(
        file: &File,
        header: Addr,
        path: String,
        view: super::vds::VirtualView,
    ) -> Result<DatasetState> {
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
        // libhdf5's dataspace rules (the decoder enforced those of the dims alone): the element
        // count, and the bytes of all elements, fit in 64 bits.
        let bytes = space
            .element_count()
            .and_then(|n| n.checked_mul(elem as u64));
        if bytes.is_none() {
            return Err(Error::corrupt(
                "dataspace message",
                header,
                format!("{path}: dims {dims:?} of {elem}-byte elements: beyond 2^64 bytes"),
            ));
        }
        let bytes = bytes.unwrap_or(u64::MAX);
        // libhdf5's rules for stored data: compact data holds exactly the dataset's bytes, and
        // allocated contiguous storage has exactly their size (the version 1 and 2 layouts,
        // which store no size, get it from the dataspace below).
        match &layout {
            Some(DataLayout::Compact { data, .. }) if !null && data.len() as u64 != bytes => {
                return Err(Error::corrupt(
                    "layout message",
                    header,
                    format!(
                        "{path}: compact data of {} bytes for dims {dims:?} of {elem}-byte \
                         elements ({bytes} bytes)",
                        data.len()
                    ),
                ));
            }
            Some(DataLayout::Contiguous {
                address: Some(_),
                size,
                ..
            }) if external.is_none() && !null && *size != bytes => {
                return Err(Error::corrupt(
                    "layout message",
                    header,
                    format!(
                        "{path}: contiguous storage of {size} bytes for dims {dims:?} of \
                         {elem}-byte elements ({bytes} bytes)"
                    ),
                ));
            }
            _ => {}
        }
        let fill_bytes = match fill.map(|v| v.value) {
            Some(FillDefinition::User(v)) if v.len() == elem => v,
            // The element size comes from the file (up to 4 GiB): the zero fill is allocated
            // only if memory allows, else the open fails with an error naming the dataset.
            _ => zeros(elem).map_err(|()| {
                Error::corrupt(
                    "datatype message",
                    header,
                    format!("{path}: a fill value of {elem} bytes does not fit in memory"),
                )
            })?,
        };
        let layout = layout.ok_or_else(|| {
            Error::corrupt("dataset", header, format!("{path}: no layout message"))
        })?;
        // Versions 1 and 2 (HDF5 1.4-1.6) read as the version 3 message libhdf5 makes of them.
        let layout = match layout {
            DataLayout::Legacy(l) => l.upgraded(data_bytes(&dims, elem)),
            l => l,
        };
        let mut dims = dims;
        let storage = match layout {
            DataLayout::Virtual { heap, index, .. } => {
                let v = super::vds::Virtual::load(
                    file, header, &path, heap, index, &dims, &max_dims, dtype, fill_bytes, view,
                )?;
                // The extent the sources give (what a flush would otherwise write back).
                dims.clone_from(&v.dims);
                StorageState::Virtual(Arc::new(v))
            }
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
                // The limit holds for the chunk's elements at the datatype's size too (the
                // layout keeps its own copy of the element size, which a file may contradict:
                // refused below, after the limit, which names the larger problem).
                let typed_bytes = chunk_dims
                    .iter()
                    .try_fold(elem as u64, |n, &d| n.checked_mul(d))
                    .unwrap_or(u64::MAX);
                let limited = chunk_bytes.max(typed_bytes);
                if limited > u64::from(u32::MAX) {
                    return Err(Error::corrupt(
                        "layout message",
                        header,
                        format!("{path}: a chunk of {limited} bytes (the limit is 4 GiB - 1)"),
                    ));
                }
                // libhdf5 refuses a dataset whose datatype contradicts the layout's element
                // size (its last dimension), and so do we: the chunk buffers are sized by the
                // layout and read by the datatype, so such a file would open, pass `check`
                // (every chunk decodes to the layout's size) and fail every read.
                if c.element_size() != elem as u64 {
                    return Err(Error::corrupt(
                        "layout message",
                        header,
                        format!(
                            "{path}: the chunk layout stores an element size of {} bytes, the \
                             datatype {elem}",
                            c.element_size()
                        ),
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
                    spare: Vec::new(),
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
}

/// `n` zero bytes, or `Err` where the allocation fails (a size read from a file). The probe
/// makes the failure an error instead of an abort; the zeroed allocation then costs no time
/// and no memory until its pages are touched, so a huge element size does not stall an open.
fn zeros(n: usize) -> std::result::Result<Vec<u8>, ()> {
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(n).map_err(|_| ())?;
    drop(probe);
    Ok(vec![0; n])
}
