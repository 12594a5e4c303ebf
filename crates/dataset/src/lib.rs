//! h5chunk: files, groups and chunked datasets, with the chunk index chosen as libhdf5 chooses.
//!
//! Work in progress (its issue is open): so far the library version bounds and the format
//! versions they imply ([`libver`]), the chunk-index choice ([`index::choose`]) and the linear
//! chunk index of the array indexes ([`index::linear`]).
//!
//! ```
//! use h5chunk::index::{AllocTime, IndexKind, IndexRequest, choose};
//! use h5chunk::libver::{Libver, LibverBounds};
//!
//! // One unlimited dimension under the latest format: an extensible array, layout version 4.
//! let s = choose(&IndexRequest {
//!     dims: &[0],
//!     max_dims: &[None],
//!     chunk: &[4],
//!     filtered: false,
//!     alloc_time: AllocTime::Incremental,
//!     dont_filter_partial_chunks: false,
//!     bounds: LibverBounds::new(Libver::Latest, Libver::Latest)?,
//!     force: None,
//! })?;
//! assert_eq!((s.layout_version, s.kind), (4, IndexKind::ExtensibleArray));
//! # Ok::<(), h5chunk::Error>(())
//! ```

#![forbid(unsafe_code)]

mod check;
mod chunk_cache;
mod dataset;
mod error;
mod file;
pub mod filters;
mod group;
pub mod index;
mod index_kind;
pub mod libver;
mod link;
mod object;
mod select;
mod store;
pub mod types;

pub use check::{CheckReport, Problem};
pub use dataset::inspect::{FilterInfo, IndexReport, StorageKind};
pub use dataset::{ChunkInfo, Dataset, DatasetBuilder, FilterSpec};
pub use error::{Error, Result};
pub use file::{CreateMode, File, FileOptions, OpenOptions};
pub use group::Group;
pub use index::{AllocTime, IndexKind};
pub use libver::{Libver, LibverBounds};
pub use link::{LinkValue, MemberKind};
pub use types::{H5Type, TypeClass, TypeDesc};

/// Storage backends a [`File`] can live on ([`File::create_on`], [`File::open_on`]): the
/// metadata cache's positioned-I/O trait and its file and memory implementations.
pub mod storage {
    pub use h5chunk_cache::{FileStorage, MemStorage, Storage};
}
