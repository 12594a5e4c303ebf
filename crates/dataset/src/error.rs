//! The errors of the `h5chunk` crate.

/// An `h5chunk` result.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument is out of range or inconsistent (a shape, bounds, a selection).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The file uses a feature h5chunk does not implement yet.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    /// A structure in the file failed to decode.
    #[error(transparent)]
    Format(#[from] h5chunk_format::Error),
    /// The metadata cache or storage failed.
    #[error(transparent)]
    Cache(#[from] h5chunk_cache::Error),
}
