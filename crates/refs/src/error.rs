//! What can go wrong while describing a file as kerchunk references.

/// Why references could not be made or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading the HDF5 file failed.
    #[error(transparent)]
    Hdf5(#[from] h5chunk::Error),
    /// A dataset that kerchunk references (a Zarr array over the file's bytes) cannot
    /// describe: a filter with no numcodecs codec, an element type Zarr has not, a chunk that
    /// skipped filters.
    #[error("{dataset}: {what}: no Zarr equivalent, so no kerchunk reference to it")]
    NoZarrEquivalent {
        /// The dataset's path.
        dataset: String,
        /// What has no equivalent.
        what: String,
    },
    /// Writing the references failed.
    #[error("{file}: {source}")]
    Io {
        /// The file written.
        file: String,
        /// What the operating system (or the Parquet writer) said.
        source: std::io::Error,
    },
    /// A broken invariant of this crate (a bug, not bad input).
    #[error("internal error: {0}")]
    Internal(&'static str),
}

/// The result of this crate's operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;
