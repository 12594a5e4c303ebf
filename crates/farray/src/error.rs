//! The errors of the fixed array. Lower-layer errors stay reachable through `source()`.

use h5chunk_format::Addr;

/// A fixed array result.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// What went wrong in a fixed array operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The metadata cache or the storage under it failed; a block that could not be read or
    /// verified is reported here, with the format error as its `source()`.
    #[error(transparent)]
    Cache(#[from] h5chunk_cache::Error),
    /// A block or element could not be decoded or encoded.
    #[error(transparent)]
    Format(#[from] h5chunk_format::Error),
    /// The header disagrees with what the caller opened the array with: the element count,
    /// page size, element size or client id the dataset's layout and element class imply.
    #[error("FAHD @ {addr}: {field} is {found} but the layout implies {expected}")]
    Mismatch {
        /// The header's address.
        addr: Addr,
        /// The header field at fault.
        field: &'static str,
        /// The value the header stores.
        found: u64,
        /// The value the caller's layout implies.
        expected: u64,
    },
    /// An element index at or past the array's end.
    #[error("element {index} is out of range: the array has {len} elements")]
    OutOfRange {
        /// The index asked for.
        index: u64,
        /// The number of elements (or of pages, for a page index).
        len: u64,
    },
    /// The caller's arguments do not fit a fixed array: creation parameters (or an element
    /// class) that no fixed array can have.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Something h5chunk does not implement; names the feature.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
}
