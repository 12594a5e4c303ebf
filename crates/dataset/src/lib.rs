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
pub mod error;
mod file;
pub mod filters;
mod group;
pub mod index;
pub mod libver;
mod object;
pub mod select;
pub mod types;

pub use check::{CheckReport, Problem};
pub use dataset::inspect::{FilterInfo, IndexReport, StorageKind};
pub use dataset::{ChunkInfo, Dataset, DatasetBuilder, FilterSpec};
pub use error::{Error, Result};
pub use file::{CreateMode, File, FileOptions, Group, MemberKind};
pub use group::LinkValue;
pub use index::IndexKind;
