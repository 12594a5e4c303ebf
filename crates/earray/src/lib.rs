//! The extensible array of HDF5 (`EAHD`/`EAIB`/`EASB`/`EADB` and data block pages), the chunk
//! index libhdf5 uses for datasets with exactly one unlimited dimension under the latest file
//! format, kept in the [`MetadataCache`](h5chunk_cache::MetadataCache).
//!
//! ```
//! use std::sync::Arc;
//!
//! use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache, check_write_order};
//! use h5chunk_earray::{ChunkAddrs, ExtensibleArray};
//! use h5chunk_format::{Addr, Sizes, earray::Params};
//!
//! # fn main() -> Result<(), h5chunk_earray::Error> {
//! let storage = MemStorage::new();
//! let config = CacheConfig { record_trace: true, ..CacheConfig::default() };
//! let cache = MetadataCache::new(Arc::new(storage.clone()), config)?;
//! cache.allocator().allocate(512)?; // room for a superblock, say
//!
//! // libhdf5's chunk-index parameters (32, 4, 16, 4, 10), one chunk address per element.
//! let class = ChunkAddrs::new(Sizes::DEFAULT);
//! let mut ea = ExtensibleArray::create(&cache, Sizes::DEFAULT, class, Params::CHUNK_INDEX)?;
//! for i in 0..1_000u64 {
//!     assert_eq!(ea.append(&cache, &Some(Addr(0x10_0000 + i)))?, i);
//! }
//! ea.insert(&cache, 5_000, &Some(Addr(0x20_0000)))?; // a sparse far index creates only its path
//! assert_eq!(ea.get(&cache, 500)?, Some(Addr(0x10_0000 + 500)));
//! assert_eq!(ea.get(&cache, 4_999)?, None); // never set: the fill element
//! assert_eq!(ea.len(&cache)?, 5_001);
//!
//! // Children reach the file before their parents, the header last.
//! assert!(cache.flush()?.is_complete());
//! check_write_order(&cache.take_trace()).expect("SWMR order");
//!
//! // A second cache over the same bytes (a SWMR reader) sees the same elements.
//! let reader = MetadataCache::new(Arc::new(storage), CacheConfig::swmr_reader())?;
//! let ro = ExtensibleArray::open(&reader, ea.addr(), Sizes::DEFAULT, ChunkAddrs::new(Sizes::DEFAULT))?;
//! assert_eq!(ro.get(&reader, 999)?, Some(Addr(0x10_0000 + 999)));
//! assert_eq!(ro.to_vec(&reader)?.len(), 1_001);
//! assert_eq!(ro.stats(&reader)?.max_idx_set, 5_001);
//! # Ok(())
//! # }
//! ```
//!
//! # Structure
//!
//! Element `i < idx_blk_elmts` lives in the index block; the others in data blocks of super
//! block row `u`, whose pointers sit in the index block for the first rows and in a super block
//! otherwise; data blocks larger than a page are split into pages, each written only once one
//! of its elements is set (docs/format/chunk-index-format.md §6). [`Geometry`](h5chunk_format::earray::Geometry)
//! is computed once per array, so a lookup is O(1): at most header → index block → super block
//! → data block or page, with no allocation when the cache holds them.
//!
//! Blocks are created lazily, on the path of the element being set, initialised to the element
//! class's fill element, and counted in the header's statistics exactly as libhdf5 counts them.
//! Data blocks reached from the index block store libhdf5's (wrong) block offset, so our blocks
//! match libhdf5's byte for byte; readers never check it.
//!
//! # Invariants
//!
//! - Flush dependencies follow the SWMR design's table 7 (header → index block → super blocks
//!   and data blocks → pages; any element-holding block → the chunk proxy given to
//!   [`ExtensibleArray::insert_with_proxy`]): a reader never finds a pointer to a block not yet written,
//!   and the header's `max_idx_set` (the visible count) is written last.
//! - Every block names the array's header and client id; checksums are verified before any
//!   field is read; the depth is fixed (at most four blocks on any path), so a corrupt file
//!   cannot make a lookup loop.
//! - What it deliberately lacks: shrinking (libhdf5 never shrinks a chunk index's array either)
//!   and any notion of chunks or coordinates: that is the dataset crate's adapter.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod array;
mod class;
mod entry;
mod error;

pub use array::ExtensibleArray;
pub use class::{
    CLIENT_FILTERED_CHUNKS, CLIENT_UNFILTERED_CHUNKS, ChunkAddrs, ChunkRecords, ElementClass,
    FilteredChunks,
};
pub use error::{Error, Result};
