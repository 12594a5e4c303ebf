//! The errors of the `btree2` crate.

use h5chunk_format::Addr;

/// A `btree2` result.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// What went wrong in a version 2 B-tree operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The metadata cache (storage, allocation, flush dependencies) failed; a node or header that
    /// does not decode arrives here as [`h5chunk_cache::Error::Read`], naming type and address.
    #[error(transparent)]
    Cache(#[from] h5chunk_cache::Error),
    /// An on-disk structure could not be decoded or encoded outside the cache.
    #[error(transparent)]
    Format(#[from] h5chunk_format::Error),
    /// The tree's structure is inconsistent (counts, depths, record order), as found while
    /// walking it from the header at `header`.
    #[error("v2 B-tree @ {header}: {reason} (at {at})")]
    Corrupt {
        /// The tree's header address.
        header: Addr,
        /// The node (or header) at fault.
        at: Addr,
        /// What is inconsistent.
        reason: String,
    },
    /// The header disagrees with what the caller opened the tree with: its tree type or record
    /// size is not the record class's.
    #[error("v2 B-tree @ {header}: {what} is {found}, the record class expects {expected}")]
    Mismatch {
        /// The tree's header address.
        header: Addr,
        /// `"tree type"` or `"record size"`.
        what: &'static str,
        /// The header's value.
        found: u64,
        /// The class's value.
        expected: u64,
    },
    /// An insert found a record with the same key already in the tree.
    #[error("v2 B-tree @ {header}: a record with this key is already in the tree")]
    Exists {
        /// The tree's header address.
        header: Addr,
    },
    /// A modification changed the key of a record, which would break the tree's order.
    #[error("v2 B-tree @ {header}: a modification changed the record's key")]
    KeyChanged {
        /// The tree's header address.
        header: Addr,
    },
    /// The caller's arguments do not fit a v2 B-tree: creation parameters that libhdf5 would
    /// refuse or that give unusable nodes, a record class of the wrong rank.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Something this crate does not implement; names the feature.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
}
