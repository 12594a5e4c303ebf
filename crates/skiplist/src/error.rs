//! The errors of the skip list crate. Decode errors keep the structure (`SKLT`, `SKLS`) and
//! file address of the `format` layer; cache errors keep theirs; both stay reachable through
//! `source()`.

/// A skip list result.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// What went wrong in a skip list operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The metadata cache failed (I/O, or a block that does not verify: see its source).
    #[error(transparent)]
    Cache(#[from] h5chunk_cache::Error),
    /// A block is inconsistent with the list (a pointer to the wrong supernode, a tail whose
    /// pointers do not fit its length, ...), or a value cannot be encoded.
    #[error(transparent)]
    Format(#[from] h5chunk_format::Error),
    /// Something this crate does not implement; names the feature.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    /// The caller's arguments do not fit the list: creation parameters outside the limits of
    /// the format (names the parameter), or a record the list's element class cannot hold.
    #[error("invalid argument: {0}")]
    InvalidArgument(&'static str),
    /// A slot index at or beyond the list's length.
    #[error("slot {index} is out of range: the list holds {len} slots")]
    OutOfRange {
        /// The slot asked for.
        index: u64,
        /// The number of slots.
        len: u64,
    },
    /// More supernodes than the max height allows.
    #[error(
        "{steps} steps need {supernodes} supernodes; a list of max height {max_height} holds at most 2^{max_height} - 1"
    )]
    Full {
        /// The steps asked for.
        steps: u64,
        /// The supernodes they need.
        supernodes: u64,
        /// The list's max height.
        max_height: u8,
    },
    /// `extend` to fewer steps, or `shrink` to more.
    #[error("cannot {op} a list of {current} steps to {requested}")]
    WrongDirection {
        /// `"extend"` or `"shrink"`.
        op: &'static str,
        /// The current number of steps.
        current: u64,
        /// The number asked for.
        requested: u64,
    },
}
