//! h5chunk: HDF5 chunked datasets in pure Rust, byte-compatible with libhdf5 and h5py.
//!
//! Create, append to, read and reopen the same `.h5` files that h5py, `h5dump`, netCDF4 and
//! xarray open, with every chunk index libhdf5 writes (version 1 and 2 B-trees, extensible and
//! fixed arrays, single chunk, implicit), chosen as libhdf5 chooses it. No C library, no global
//! lock.
//!
//! ```
//! use h5chunk::{File, FilterSpec};
//!
//! # let dir = std::env::temp_dir().join(format!("h5chunk-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! let path = dir.join("log.h5");
//!
//! // Create a file and a 1-D dataset that can grow without limit (h5py:
//! // `f.create_dataset("temperature", shape=(0,), maxshape=(None,), chunks=(1024,),
//! //  dtype="f8", compression="gzip")`).
//! let file = File::create(&path)?;
//! let temps = file
//!     .new_dataset::<f64>()
//!     .shape(&[0])
//!     .max_shape(&[None])
//!     .chunk(&[1024])
//!     .filter(FilterSpec::Shuffle)
//!     .filter(FilterSpec::Deflate(4))
//!     .create("temperature")?;
//!
//! // Append records as they come; `flush` makes them durable and readable by libhdf5.
//! temps.append(&[20.5, 20.7, 21.0])?;
//! temps.append(&[21.2])?;
//! file.flush()?;
//! assert_eq!(temps.shape(), vec![4]);
//!
//! // Read all of it, or a slice (start, count, stride).
//! assert_eq!(temps.read::<f64>()?, vec![20.5, 20.7, 21.0, 21.2]);
//! assert_eq!(temps.read_slice::<f64>(&[1], &[2], None)?, vec![20.7, 21.0]);
//! file.close()?;
//!
//! // Reopen: read-only with `File::open`, or read-write with `File::open_rw` to append more.
//! let file = File::open_rw(&path)?;
//! let temps = file.dataset("temperature")?;
//! temps.append(&[21.4])?;
//! assert_eq!(temps.read::<f64>()?, vec![20.5, 20.7, 21.0, 21.2, 21.4]);
//! assert_eq!(temps.index_kind(), Some(h5chunk::IndexKind::BTree1)); // h5py's default bounds
//! file.close()?;
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Where to go next
//!
//! - [`guide::files`]: creating and opening files, library version bounds, storage backends,
//!   when data reaches the disk.
//! - [`guide::datasets`]: shapes, chunks, fill values, typed and raw reads and writes,
//!   slices, appends, resizing, direct chunk I/O.
//! - [`guide::indexes`]: which chunk index a dataset gets and why, and who can read it.
//! - [`guide::filters`]: compression and checksums, and which readers know them.
//! - [`guide::errors`]: the error type, what each variant means, and checking a damaged file.
//! - [`guide::swmr`]: one writer appending while other processes (h5chunk or h5py) read.
//! - kerchunk references (`h5chunk refs`, the `h5chunk-refs` crate), so that zarr and
//!   dask read a file's chunks without libhdf5; `File::open_url` (feature `object-store`)
//!   reads a file where it is kept in S3, with range requests.
//! - [`guide::types`]: strings, compound and other element types, attributes, netCDF-4
//!   (dimension scales that netCDF4 and xarray read) and external storage.
//!
//! The `examples/` folder of this crate holds programs to copy: `append_logger` (a growing
//! log), `print_dataset` (a reader) and `to_npy` (a converter to NumPy's `.npy`). The byte
//! layouts the code relies on are in the repository's `docs/format/`.

#![forbid(unsafe_code)]
// docs.rs (nightly) names the cargo feature each gated item needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod attr;
mod check;
mod chunk_cache;
mod convert;
mod dataset;
mod error;
mod extension;
mod extlink;
mod file;
mod group;
pub mod index;
mod prefetch;
/// The filter pipeline (the `h5chunk-filters` crate): [`filters::FilterError`] says why a chunk
/// could not be filtered or unfiltered.
pub use h5chunk_filters as filters;
mod index_kind;
pub mod libver;
mod link;
mod meta;
mod object;
mod object_refs;
mod open_files;
mod paged;
mod select;
pub mod selection;
mod store;
mod swmr;
pub mod types;
mod values;

pub use attr::{Attr, Attributes};
pub use check::{CheckReport, Problem};
pub use dataset::external::ExternalFile;
pub use dataset::inspect::{FilterInfo, IndexReport, StorageKind};
pub use dataset::{
    BitshuffleCompression, BloscCodec, BloscShuffle, ChunkInfo, ChunkVisitor, Dataset,
    DatasetBuilder, FilterSpec, RowWriter, Slab, Slabs, VirtualMapping, VirtualSelection,
    VirtualView,
};
pub use error::{Error, Result};
pub use file::{CreateMode, File, FileOptions, OpenOptions};
pub use group::{Group, GroupOptions};
pub use h5chunk_cache::{Durability, IoStats, Recovery, RemoteStats};
/// IEEE half-precision floats (numpy's `float16`) and bfloat16, from the `half` crate: [`H5Type`]s.
pub use half::{bf16, f16};
pub use index::{AllocTime, IndexKind};
pub use libver::{Libver, LibverBounds};
pub use link::{LinkValue, MemberKind};
pub use paged::{FileSpace, FileSpaceStrategy};
pub use selection::{Dim, Selected, Selection};
pub use types::{H5Type, TypeClass, TypeDesc};

/// Guides, one page per concern. Documentation only: every example in them is a tested
/// doctest.
pub mod guide {
    #[doc = include_str!("guide/files.md")]
    pub mod files {}
    #[doc = include_str!("guide/datasets.md")]
    pub mod datasets {}
    #[doc = include_str!("guide/indexes.md")]
    pub mod indexes {}
    #[doc = include_str!("guide/filters.md")]
    pub mod filters {}
    #[doc = include_str!("guide/errors.md")]
    pub mod errors {}
    #[doc = include_str!("guide/swmr.md")]
    pub mod swmr {}
    #[doc = include_str!("guide/types.md")]
    pub mod types {}
}

/// Storage backends a [`File`] can live on ([`FileOptions::create_on`], [`OpenOptions::open_on`]): the
/// metadata cache's positioned-I/O trait and its file and memory implementations.
pub mod storage {
    #[cfg(feature = "object-store")]
    #[cfg_attr(docsrs, doc(cfg(feature = "object-store")))]
    pub use h5chunk_cache::{BLOCK, GAP, ObjectStorage, READ_AHEAD};
    pub use h5chunk_cache::{FileStorage, MemStorage, Storage};
    /// A byte address in the file, as [`Storage`]'s methods take it.
    pub use h5chunk_format::Addr;
}
