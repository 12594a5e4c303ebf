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
    /// A file could not be opened, created or accessed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A chunk could not go through the filter pipeline.
    #[error("dataset {dataset}: chunk {chunk:?}: {source}")]
    Filter {
        /// The dataset's path.
        dataset: String,
        /// The chunk's scaled coordinates.
        chunk: Vec<u64>,
        /// What the filter said.
        source: crate::filters::FilterError,
    },
    /// The dataset's filter pipeline cannot be used.
    #[error("dataset {dataset}: {source}")]
    Pipeline {
        /// The dataset's path.
        dataset: String,
        /// What is wrong.
        source: crate::filters::FilterError,
    },
    /// A chunk index structure failed.
    #[error("{kind} chunk index: {source}")]
    Index {
        /// Which index.
        kind: &'static str,
        /// What its crate said.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The metadata cache or storage failed.
    #[error(transparent)]
    Cache(#[from] h5chunk_cache::Error),
}
