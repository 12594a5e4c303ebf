//! The errors of the `btree1` crate.

use h5chunk_format::Addr;

/// A `btree1` result.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// What went wrong in a v1 B-tree operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The metadata cache (or the storage under it) failed, or a node failed to decode there.
    #[error(transparent)]
    Cache(#[from] h5chunk_cache::Error),
    /// An on-disk structure could not be decoded or encoded.
    #[error(transparent)]
    Format(#[from] h5chunk_format::Error),
    /// The tree's structure is inconsistent: a node at the wrong level, keys out of order, a
    /// child pointing back up the tree, an empty internal node. Names the node.
    #[error("TREE @ {addr}: corrupt tree: {reason}")]
    Corrupt {
        /// The node where the inconsistency was found.
        addr: Addr,
        /// What is wrong.
        reason: String,
    },
    /// The caller's arguments do not fit the tree (a key of the wrong rank, an offset that is
    /// not on the chunk grid, K = 0, a name with a NUL byte).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The name is already present in the group.
    #[error("a link named {0:?} exists already")]
    Exists(String),
    /// Something this crate does not implement; names the feature.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
}

impl Error {
    pub(crate) fn corrupt(addr: Addr, reason: impl Into<String>) -> Self {
        Error::Corrupt {
            addr,
            reason: reason.into(),
        }
    }
}
