//! The errors of the `earray` crate. Lower-layer errors (cache, format) are wrapped and stay
//! reachable through `source()`; errors of this crate name the structure and its address.

use h5chunk_format::Addr;

/// An `earray` result.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// What went wrong with an extensible array.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The metadata cache (or the storage under it) failed; a block that failed to load or
    /// verify is reported here with its type and address.
    #[error("metadata cache: {0}")]
    Cache(#[from] h5chunk_cache::Error),
    /// A block could not be decoded or encoded outside the cache.
    #[error("format: {0}")]
    Format(#[from] h5chunk_format::Error),
    /// The header disagrees with what the caller opened the array with: it names another
    /// element class (client id) or element size than the class it was opened with.
    #[error(
        "EAHD @ {addr}: the array holds client id {found_client} with {found_size}-byte elements, \
         the element class expects client id {expected_client} with {expected_size}-byte elements"
    )]
    Mismatch {
        /// Address of the header.
        addr: Addr,
        /// Client id the class expects.
        expected_client: u8,
        /// Client id stored in the header.
        found_client: u8,
        /// Element size the class expects.
        expected_size: u8,
        /// Element size stored in the header.
        found_size: u8,
    },
    /// An element index at or beyond the array's maximum number of elements.
    #[error("EAHD @ {addr}: index {index} is beyond the maximum of {max} elements")]
    OutOfRange {
        /// Address of the header.
        addr: Addr,
        /// The index asked for.
        index: u64,
        /// `2^max_nelmts_bits`.
        max: u64,
    },
    /// The blocks are inconsistent in a way no single decoder can see (an address whose block
    /// would run past the address space, a missing element slot).
    #[error("{structure} @ {addr}: {reason}")]
    Corrupt {
        /// The structure at fault (`EAHD`, `EAIB`, `EASB`, `EADB`, `EADB page`).
        structure: &'static str,
        /// Its file address.
        addr: Addr,
        /// What is wrong.
        reason: String,
    },
    /// Something h5chunk does not implement; names the feature.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
}
