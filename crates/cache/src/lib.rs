//! Storage backends, file-space allocation and the metadata cache with flush dependencies: the
//! layer between the on-disk encodings of `h5chunk-format` and the structure crates (B-trees,
//! extensible and fixed arrays, skip list) that keep their blocks in the cache.
//!
//! ```
//! use std::sync::Arc;
//!
//! use h5chunk_cache::{CacheConfig, CacheEntry, MemStorage, MetadataCache, check_write_order};
//! use h5chunk_format::{Addr, cursor::verify_checksum, checksum::lookup3};
//!
//! /// A tiny entry class: `NOTE`, one byte of length n, n bytes of text, lookup3 checksum.
//! #[derive(Debug)]
//! struct Note(String);
//!
//! impl CacheEntry for Note {
//!     type Context = ();
//!     const TYPE_NAME: &'static str = "NOTE";
//!     const CHECKSUMMED: bool = true;
//!
//!     fn initial_load_len(_: &()) -> usize {
//!         5 // signature and length: enough to learn the full length
//!     }
//!     fn final_load_len(prefix: &[u8], _: Addr, _: &()) -> h5chunk_format::Result<usize> {
//!         Ok(5 + usize::from(prefix.get(4).copied().unwrap_or(0)) + 4)
//!     }
//!     fn decode(image: &[u8], at: Addr, _: &()) -> h5chunk_format::Result<Self> {
//!         let covered = image.len().saturating_sub(4);
//!         verify_checksum(image, covered, at, "NOTE")?; // before any field is trusted
//!         let text = image.get(5..covered).unwrap_or_default();
//!         Ok(Note(String::from_utf8_lossy(text).into_owned()))
//!     }
//!     fn image_len(&self) -> usize {
//!         5 + self.0.len() + 4
//!     }
//!     fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
//!         let start = out.len();
//!         out.extend_from_slice(b"NOTE");
//!         out.push(self.0.len() as u8);
//!         out.extend_from_slice(self.0.as_bytes());
//!         let sum = lookup3(&out[start..]);
//!         out.extend_from_slice(&sum.to_le_bytes());
//!         Ok(())
//!     }
//! }
//!
//! # fn main() -> Result<(), h5chunk_cache::Error> {
//! let storage = MemStorage::new();
//! let config = CacheConfig { record_trace: true, ..CacheConfig::default() };
//! let cache = MetadataCache::new(Arc::new(storage.clone()), config)?;
//!
//! // A parent block that points to a child block: allocate both, insert them (dirty).
//! let parent = cache.allocator().allocate(32)?;
//! let child = cache.allocator().allocate(32)?;
//! cache.insert(parent, Note("index".into()))?;
//! cache.insert(child, Note("leaf".into()))?;
//! // The parent must not reach the file before the child it points to.
//! cache.add_flush_dependency(parent, child)?;
//! // An index also waits for the raw-data chunk it points to, through a chunk proxy.
//! let chunk = cache.create_proxy();
//! cache.add_flush_dependency(child, chunk)?;
//!
//! // A plain flush writes nothing yet: the chunk is dirty, so child and parent wait.
//! let report = cache.flush()?;
//! assert_eq!(report.blocked, vec![parent, child]);
//!
//! // The chunk cache's owner writes the chunks when asked, then the cache writes the child,
//! // then the parent.
//! let report = cache.flush_with(&mut |_chunks: &[h5chunk_cache::ProxyId]| {
//!     /* write the chunks' bytes here */
//!     Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
//! })?;
//! assert!(report.is_complete());
//! let trace = cache.take_trace();
//! assert_eq!(trace.written(), vec![child, parent]);
//! check_write_order(&trace).expect("children first");
//!
//! // Modify through a protected handle: mutable access marks the entry dirty.
//! cache.protect::<Note>(child, &())?.0.make_ascii_uppercase();
//! assert!(cache.is_dirty(child));
//! assert!(cache.flush()?.is_complete());
//!
//! // A fresh cache over the same bytes reads and verifies the blocks.
//! let reader = MetadataCache::new(Arc::new(storage), CacheConfig::swmr_reader())?;
//! assert_eq!(reader.get::<Note>(child, &())?.read().0, "LEAF");
//! assert_eq!(reader.stats().of("NOTE").misses, 1);
//! # Ok(())
//! # }
//! ```
//!
//! # The model
//!
//! - **Storage** ([`Storage`]): positioned reads and writes through `&self`, so readers share
//!   it without a lock. [`FileStorage`] uses `pread`/`pwrite`, [`MemStorage`] a shared buffer,
//!   and `FaultyStorage` (feature `testing`) records writes and injects failures, crashes and
//!   torn reads. Every metadata image is written in one `write_at` call.
//! - **Allocation** ([`Allocator`], reachable through [`MetadataCache::allocator`]): first-fit
//!   over the end-of-allocation address (EOA) that the superblock records. While a SWMR writer
//!   is active, freed space is deferred, never reused, because a reader may still reach it.
//! - **Entries and classes** ([`CacheEntry`]): a client crate implements one class per on-disk
//!   structure: its type name, how to learn the full length from the first bytes, decode
//!   (checksum first) and encode. Entries are cached by file address and accessed typed:
//!   [`get`](MetadataCache::get) gives a shared [`EntryRef`], [`protect`](MetadataCache::protect)
//!   an exclusive [`EntryMut`] that marks the entry dirty when mutated. Entries can be inserted,
//!   resized, moved, removed, pinned and unpinned.
//! - **Flush dependencies** ([`add_flush_dependency`](MetadataCache::add_flush_dependency)): a
//!   parent is never written, nor evicted, while a child of it (or anything below a child) is
//!   dirty or protected; a child may have several parents; cycles are refused. [`flush`](MetadataCache::flush)
//!   writes children before parents. The graph is over [`Key`]s, so it survives the eviction
//!   of clean entries.
//! - **Chunk proxies** ([`create_proxy`](MetadataCache::create_proxy)): nodes that stand for
//!   raw-data chunks held by the dataset crate's chunk cache. A proxy is dirty until
//!   [`chunk_written`](MetadataCache::chunk_written); [`flush_with`](MetadataCache::flush_with)
//!   first asks a [`ChunkFlusher`] to write every dirty chunk, then writes the metadata. This
//!   crate knows nothing else of chunks.
//! - **Eviction**: least recently used first, under [`CacheConfig::max_bytes`]; pinned,
//!   protected and blocked entries stay, and a dirty entry is written before it goes.
//! - **Verified reads and retries**: a checksummed entry that fails to decode (a torn read while
//!   a SWMR writer rewrites it) is read again up to [`CacheConfig::read_attempts`] times (1 by
//!   default, 100 for [`CacheConfig::swmr_reader`], as libhdf5), with a capped exponential
//!   back-off and a cap on the total time; then [`Error::Read`] names the type and address and
//!   carries the format error as its `source()`.
//! - **Statistics** ([`CacheStats`]): hits, misses, reads, bytes, retries, writes, evictions per
//!   entry type.
//! - **Write trace** ([`WriteTrace`], [`check_write_order`]): with
//!   [`CacheConfig::record_trace`], the cache records dirtying, dependencies, writes and
//!   evictions; the checker replays them with its own model and reports the first write or
//!   eviction that broke a dependency. Every structure crate's tests run it.
//!
//! # Concurrency
//!
//! There is no global lock: each cache has one internal index lock (a `parking_lot` mutex, never
//! held during a miss's I/O) and each entry its own `RwLock`, so readers share a cache and read
//! entries in parallel. Flushes and evictions write under the index lock; only the single
//! writer makes them.

#![forbid(unsafe_code)]
// docs.rs (nightly) names the cargo feature each gated item needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod alloc;
mod cache;
mod clock;
mod counted;
mod entry;
mod error;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
mod faulty;
mod hash;
mod image;
mod journal;
mod line;
#[cfg(feature = "object-store")]
#[cfg_attr(docsrs, doc(cfg(feature = "object-store")))]
mod object;
mod paged;
mod pages;
mod stats;
mod storage;
mod trace;

pub use alloc::Allocator;
pub use cache::{CacheConfig, ChunkFlusher, EntryMut, EntryRef, FlushReport, MetadataCache};
pub use clock::pause;
pub use counted::{Counted, IoStats};
pub use entry::{CacheEntry, Key, ProxyId};
pub use error::{Error, Result};
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub use faulty::{FaultyStorage, WriteRecord};
pub use hash::{IntHasher, IntMap};
pub use image::{Image, ImageKind};
pub use journal::{
    Durability, JournalPlace, Journaled, Recovery, discard_journal, needs_recovery, recover,
};
pub use line::CacheLine;
#[cfg(feature = "object-store")]
#[cfg_attr(docsrs, doc(cfg(feature = "object-store")))]
pub use object::{BLOCK, GAP, ObjectStorage, READ_AHEAD};
pub use paged::SpaceKind;
pub use pages::{PAGE_BYTES, PageCache};
pub use stats::{CacheStats, TypeStats};
pub use storage::{FileStorage, MemStorage, RemoteStats, Storage};
pub use trace::{OrderViolation, TraceEvent, ViolationKind, WriteTrace, check_write_order};
