//! The errors of dense storage.

use h5chunk_format::Addr;

/// What went wrong reading or writing dense storage.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A structure's bytes do not decode.
    #[error(transparent)]
    Format(#[from] h5chunk_format::Error),
    /// The metadata cache or storage failed.
    #[error(transparent)]
    Cache(#[from] h5chunk_cache::Error),
    /// A name, creation-order or huge-object index (a v2 B-tree) failed.
    #[error("dense storage's index: {0}")]
    Index(#[source] h5chunk_btree2::Error),
    /// An object or block of a filtered heap could not be unfiltered, or the heap's pipeline
    /// cannot be used.
    #[error("fractal heap object @ {at}: {source}")]
    Filter {
        /// The file address of the block, object or heap.
        at: Addr,
        /// What the filter said.
        source: h5chunk_filters::FilterError,
    },
    /// The structure is damaged.
    #[error("{structure}{}: {what}", at.map(|a| format!(" @ {a}")).unwrap_or_default())]
    Corrupt {
        /// The structure: "fractal heap", "name index", ...
        structure: &'static str,
        /// Its file address, where known.
        at: Option<Addr>,
        /// What is wrong.
        what: String,
    },
    /// What the file holds is valid but not supported here.
    #[error("not supported: {0}")]
    Unsupported(&'static str),
    /// An invariant of this crate broke: a bug, whatever the file holds.
    #[error("internal error: {0}")]
    Internal(&'static str),
    /// The [`Space`](crate::Space) the heap lives in failed (its own error, boxed: the crate
    /// above gets it back whole).
    #[error(transparent)]
    Space(Box<dyn std::error::Error + Send + Sync>),
}

impl Error {
    /// A [`Error::Corrupt`].
    pub fn corrupt(
        structure: &'static str,
        at: impl Into<Option<Addr>>,
        what: impl Into<String>,
    ) -> Error {
        Error::Corrupt {
            structure,
            at: at.into(),
            what: what.into(),
        }
    }
}

/// A result of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
