//! The errors of the `cache` layer. Every error about an entry names its type (the class's
//! `TYPE_NAME`) and its file address; lower-layer errors stay reachable through `source()`.

use std::io;

use h5chunk_format::Addr;

use crate::entry::{Key, ProxyId};

/// A `cache` result.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// What went wrong in storage, allocation or the metadata cache.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O error outside any entry (storage length, sync, set_len).
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    /// A format error outside any entry's read or write.
    #[error(transparent)]
    Format(#[from] h5chunk_format::Error),
    /// An entry could not be read and verified within the configured number of attempts.
    #[error("{type_name} @ {addr}: read failed after {attempts} attempt(s): {source}")]
    Read {
        type_name: &'static str,
        addr: Addr,
        attempts: u32,
        #[source]
        source: h5chunk_format::Error,
    },
    /// The storage failed while reading or writing an entry's image.
    #[error("{type_name} @ {addr}: I/O error while {op}: {source}")]
    EntryIo {
        type_name: &'static str,
        addr: Addr,
        op: &'static str,
        #[source]
        source: io::Error,
    },
    /// The entry class could not encode the entry.
    #[error("{type_name} @ {addr}: cannot encode: {source}")]
    Encode {
        type_name: &'static str,
        addr: Addr,
        #[source]
        source: h5chunk_format::Error,
    },
    /// The encoded image does not have the length the cache recorded for the entry (set at
    /// insert, load or [`resize`](crate::MetadataCache::resize)); writing it would overrun or
    /// underfill the space allocated to it.
    #[error("{type_name} @ {addr}: image is {actual} bytes but the entry occupies {expected}")]
    ImageLength {
        type_name: &'static str,
        addr: Addr,
        expected: usize,
        actual: usize,
    },
    /// The entry at `addr` is of another type than the one asked for.
    #[error("{addr}: entry is a {found}, not a {expected}")]
    TypeMismatch {
        addr: Addr,
        expected: &'static str,
        found: &'static str,
    },
    /// The operation needs an entry (or a live proxy) that the cache does not hold.
    #[error("{key}: not in the cache")]
    NotResident { key: Key },
    /// An entry is already cached at this address.
    #[error("{type_name} @ {addr}: an entry is already cached at this address")]
    AlreadyResident { type_name: &'static str, addr: Addr },
    /// A move's destination still has flush dependencies of its own.
    #[error("{addr}: the destination of a move still has flush dependencies")]
    DestinationInUse { addr: Addr },
    /// The entry is protected (held for modification) and cannot be protected again, moved,
    /// removed or evicted.
    #[error("{type_name} @ {addr}: entry is protected")]
    Protected { type_name: &'static str, addr: Addr },
    /// The entry is pinned (pinning twice, or evicting a pinned entry).
    #[error("{type_name} @ {addr}: entry is pinned")]
    Pinned { type_name: &'static str, addr: Addr },
    /// Unpinning an entry that is not pinned.
    #[error("{type_name} @ {addr}: entry is not pinned")]
    NotPinned { type_name: &'static str, addr: Addr },
    /// The entry has a dirty or protected descendant (a child, or something below a clean
    /// child), so it can be neither written nor evicted yet.
    #[error("{key}: blocked by a dirty or protected flush-dependency descendant")]
    Blocked { key: Key },
    /// The dependency would close a cycle (or make an entry its own parent).
    #[error("flush dependency {parent} -> {child} would create a cycle")]
    DependencyCycle { parent: Key, child: Key },
    /// The dependency exists already.
    #[error("flush dependency {parent} -> {child} exists already")]
    DependencyExists { parent: Key, child: Key },
    /// The dependency does not exist.
    #[error("no flush dependency {parent} -> {child}")]
    NoSuchDependency { parent: Key, child: Key },
    /// The proxy was never created or has been removed.
    #[error("{0}: unknown chunk proxy")]
    UnknownProxy(ProxyId),
    /// A SWMR writer may only write checksummed entries: a reader cannot detect a torn write of
    /// anything else.
    #[error("{type_name} @ {addr}: not checksummed, so it cannot be written under SWMR")]
    NotChecksummed { type_name: &'static str, addr: Addr },
    /// The chunk flusher given to [`flush_with`](crate::MetadataCache::flush_with) failed.
    #[error("writing dirty chunks failed: {source}")]
    ChunkFlush {
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An allocation of zero bytes.
    #[error("cannot allocate zero bytes")]
    ZeroLength,
    /// An address computation left the 64-bit address space.
    #[error("address overflow: {addr} + {len}")]
    AddressOverflow { addr: Addr, len: u64 },
    /// A free of space that is not allocated (beyond the EOA, or overlapping free space).
    #[error("bad free of {len} bytes @ {addr}: {reason}")]
    BadFree {
        addr: Addr,
        len: u64,
        reason: &'static str,
    },
    /// An alignment of zero (every address would have to be a multiple of 0).
    #[error("alignment must be at least 1")]
    BadAlignment,
    /// Something h5chunk does not implement; names the feature.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
}
