//! The version 2 B-tree of HDF5 (`BTHD`/`BTIN`/`BTLF`) over the metadata cache, generic over
//! record classes.
//!
//! ```
//! use std::sync::Arc;
//!
//! use h5chunk_btree2::{BTree2, ChunkClass, ChunkEntry, Params};
//! use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache};
//! use h5chunk_format::chunk_record::{ChunkRecord, RecordCodec, Scaled};
//! use h5chunk_format::{Addr, Sizes};
//!
//! # fn main() -> Result<(), h5chunk_btree2::Error> {
//! let sizes = Sizes::DEFAULT;
//! let storage = MemStorage::new();
//! let cache = MetadataCache::new(Arc::new(storage.clone()), CacheConfig::default())?;
//! cache.allocator().allocate(48)?; // where a superblock would sit
//!
//! // A chunk index of a 2-D dataset with unfiltered chunks (records of type 10), with the
//! // parameters libhdf5 uses for chunk indexes: 2048-byte nodes, split 100 %, merge 40 %.
//! let class = ChunkClass::new(RecordCodec::unfiltered(sizes), 2)?;
//! let mut tree = BTree2::create(&cache, sizes, class, Params::CHUNK_INDEX)?;
//! let chunk = |i: u64, j: u64| ChunkEntry {
//!     scaled: Scaled::from_slice(&[i, j]),
//!     record: ChunkRecord { addr: Some(Addr(0x10_000 + 100 * i + j)), size: 0, mask: 0 },
//! };
//! for i in 0..100 {
//!     for j in 0..100 {
//!         tree.insert(&cache, chunk(i, j), None)?; // appends: the cached maximum skips the search
//!     }
//! }
//! assert_eq!((tree.len(), tree.depth()), (10_000, 2));
//! assert_eq!(tree.get(&cache, &[42, 7])?, Some(chunk(42, 7)));
//! assert_eq!(tree.nth(&cache, 4207)?, Some(chunk(42, 7))); // through the subtree counts
//! assert_eq!(tree.remove(&cache, &[42, 7])?, Some(chunk(42, 7)));
//! let header = tree.addr();
//!
//! // Flush (children before parents), then read the tree back through a fresh cache.
//! assert!(cache.flush()?.is_complete());
//! let reader = MetadataCache::new(Arc::new(storage), CacheConfig::swmr_reader())?;
//! let class = ChunkClass::new(RecordCodec::unfiltered(sizes), 2)?;
//! let tree = BTree2::open(&reader, header, sizes, class)?;
//! assert_eq!(tree.validate(&reader)?.records, 9_999);
//! assert_eq!(tree.get(&reader, &[42, 7])?, None);
//! # Ok(())
//! # }
//! ```
//!
//! # The model
//!
//! - **Record classes** ([`RecordClass`]): the tree stores fixed-size records it never
//!   interprets. A class gives the tree type (stored in the header and every node), the record
//!   size, decode/encode, and a total order by a key each record carries. [`ChunkClass`] is the
//!   chunk index's (types 10 and 11, rank 1 to 32); libhdf5's other record types (links by name
//!   hash, attributes, huge objects) are further classes, with no change to the tree (the tests
//!   implement type 5 to prove it). A class whose keys repeat (two link names of one hash)
//!   leaves the order of such records to the caller: [`BTree2::try_insert_by`],
//!   [`BTree2::get_by`] and [`BTree2::remove_by`] take a tie-break, as libhdf5's compare
//!   callbacks read the names through the heap, and [`BTree2::get_all`] lists one key's
//!   records.
//! - **Nodes in the cache**: the header (`BTHD`), internal nodes (`BTIN`) and leaves (`BTLF`) are
//!   cache entries holding decoded records. A node's record count lives in its parent (or the
//!   header), so every load passes it, with the depth, and a node met again at another depth or
//!   count is a corrupt tree.
//! - **Insert** (top-down, as libhdf5): a full root is split first (the tree grows by one
//!   level); on the way down, a full child is relieved by moving records to a sibling with room
//!   (two rebalancing attempts, with one or both neighbours), and only then split in two, the
//!   middle record moving up. Every node on the path therefore has room when it is reached.
//!   One departure from libhdf5: an append (a key above the maximum) that meets a full
//!   right-most leaf splits it keeping every record but the one that moves up, and starts a new
//!   leaf. Appends fill leaves left to right, so leaves end full rather than 50-88 % full, and
//!   no second leaf is rewritten (under SWMR, shadowed) on every split. Any valid tree shape
//!   reads the same in libhdf5; only the right-most leaf of a level is ever short.
//! - **Remove** (top-down): a child at or below the merge threshold is refilled from a sibling
//!   or merged with it before the descent enters it; a record found in an internal node is
//!   replaced by its successor. A root left with one child is collapsed (the tree shrinks).
//! - **Counts**: every child pointer carries the child's record count and (above depth 1) its
//!   subtree's, kept exact by every operation, so [`BTree2::nth`] is O(depth).
//! - **Minimum and maximum** (the chunk-index paper, section II.A): the handle keeps the
//!   smallest and largest records; a key outside them is known to be absent without a search,
//!   so appends (and [`BTree2::insert`] beyond the maximum) skip the duplicate search and go
//!   straight down the right-most path.
//! - **Batched inserts** ([`BTree2::insert_many`]): the result of [`BTree2::insert`] on each
//!   record in turn, to the byte. A run of appends keeps the right-most path protected, fills
//!   the right-most leaf directly and relieves it (the split an append makes) as an insert
//!   would, touching the counts above it and the header once per run; anything else takes
//!   the per-record path.
//! - **Flush dependencies** (the SWMR design, section 9): header -> root, internal node -> each
//!   child, node -> the chunk proxy of each record inserted or modified with one
//!   ([`BTree2::try_insert_with_proxy`]). When records move between nodes, the dirty proxies of the
//!   nodes involved follow them to every node of the result.
//! - **SWMR shadowing** (section 9.3): when the cache is in SWMR-write mode, a split, rebalance
//!   or merge never rewrites a node a reader may be reading: the nodes involved are written to
//!   new space and every ancestor up to the root is moved too (children before parents), so the
//!   header, written last, switches readers from the old consistent tree to the new one. The
//!   allocator defers reuse of the old space. A plain insert or removal changes a node's record
//!   count, and with it where a reader holding the parent's older count looks for the node's
//!   checksum: a node a reader may reach (allocated before the header was last written) moves
//!   to new space before its count changes, once per flush; its parent changes in place (same
//!   count, same size), and a reader that meets that half-written sees a checksum mismatch and
//!   retries. Nodes allocated since the header was last written change in place.
//!
//! # Hostile input
//!
//! Every node is verified (checksum first) by `h5chunk-format`; counts beyond a node's
//! capacity are refused before anything is allocated for them; descents are bounded by the
//! header's depth, itself at most [`h5chunk_format::btree2::MAX_DEPTH`]; cycles and shared
//! children surface as [`Error::Corrupt`] (count or depth mismatch) or a cache error, never as a
//! hang; [`BTree2::validate`] checks order and every count.

#![forbid(unsafe_code)]

mod class;
mod entry;
mod error;
mod tree;

pub use class::{CHUNK_FILTERED, CHUNK_UNFILTERED, ChunkClass, ChunkEntry, RecordClass};
pub use error::{Error, Result};
pub use tree::{BTree2, Params, TreeStats};
