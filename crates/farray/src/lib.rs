//! The fixed array of HDF5 (`FAHD`/`FADB`), the chunk index of datasets with no unlimited
//! dimension under the latest file format, kept in the metadata cache of `h5chunk-cache`.
//!
//! ```
//! use std::sync::Arc;
//!
//! use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache, check_write_order};
//! use h5chunk_farray::{FixedArray, Params};
//! use h5chunk_format::chunk_record::{ChunkRecord, RecordCodec};
//! use h5chunk_format::{Addr, Sizes};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let storage = MemStorage::new();
//! let config = CacheConfig { record_trace: true, ..CacheConfig::default() };
//! let cache = MetadataCache::new(Arc::new(storage.clone()), config)?;
//! let sizes = Sizes::DEFAULT;
//!
//! // The index of a 2-D dataset of max shape (100, 60) in (1, 1) chunks: 6,000 elements,
//! // so the data block is split into 1,024-element pages.
//! let params = Params::for_chunks(&[100, 60], &[1, 1], 10)?;
//! let codec = RecordCodec::unfiltered(sizes);
//! let mut fa = FixedArray::create(&cache, sizes, codec, params)?;
//! assert!(fa.geometry().is_paged());
//!
//! // The first set creates the data block, and the element's page.
//! let chunk = ChunkRecord { addr: Some(Addr(0x4000)), ..ChunkRecord::default() };
//! fa.insert(&cache, 5_000, &chunk)?;
//! assert_eq!(fa.get(&cache, 5_000)?, chunk);
//! assert_eq!(fa.get(&cache, 7)?, ChunkRecord::default()); // never set: undefined address
//!
//! // An element pointing at a chunk still in the chunk cache waits for it via its proxy.
//! let proxy = cache.create_proxy();
//! let other = ChunkRecord { addr: Some(Addr(0x8000)), ..ChunkRecord::default() };
//! fa.insert_with_proxy(&cache, 12, &other, Some(proxy))?;
//! assert!(!cache.flush()?.is_complete()); // page 0, the data block and header wait
//! cache.chunk_written(proxy)?;
//! assert!(cache.flush()?.is_complete());
//! check_write_order(&cache.take_trace())?; // children reached the file before parents
//!
//! // Reopen through a fresh cache over the same bytes; the layout's counts are checked.
//! let reader = MetadataCache::new(Arc::new(storage), CacheConfig::swmr_reader())?;
//! let fa = FixedArray::open(&reader, fa.addr(), sizes, codec, params)?;
//! let set: Vec<u64> = fa.to_vec(&reader)?.into_iter().map(|(i, _)| i).collect();
//! assert_eq!(set, vec![12, 5_000]);
//! // Another element count than the layout implies is an error.
//! let wrong = Params { nelmts: 6_001, ..params };
//! assert!(FixedArray::open(&reader, fa.addr(), sizes, codec, wrong).is_err());
//! # Ok(())
//! # }
//! ```
//!
//! # Structure
//!
//! - A header (`FAHD`): element count, element size, client id, page size, data block
//!   address. [`FixedArray::create`] writes it; [`FixedArray::open`] checks it against the
//!   element class and the [`Params`] the dataset's layout implies.
//! - A data block (`FADB`), created by the first set. Up to `2^page_bits` elements it holds
//!   them; beyond, it holds a page-init bitmap and the elements live in pages that follow it
//!   (the last page shorter), each its own cache entry created by the first set of one of its
//!   elements. Unwritten pages read as the fill value and are never read.
//! - Element classes ([`ElementClass`]): [`RecordCodec`](h5chunk_format::chunk_record::RecordCodec)
//!   gives chunk records, unfiltered (an address) or filtered (address, size, filter mask).
//! - Flush dependencies as the SWMR design's table 8: header → data block; paged data block →
//!   each page from its first use; data block (unpaged) or page → chunk proxy.
//!
//! What it deliberately lacks: it knows nothing of datasets or chunk coordinates (the
//! dataset crate's adapter maps coordinates to the linear index) and it never resizes: a fixed
//! array's size is fixed by the dataset's maximum dimensions.

#![forbid(unsafe_code)]

mod array;
mod class;
mod entry;
mod error;

pub use array::{FixedArray, Params};
pub use class::ElementClass;
pub use entry::{DATA_BLOCK_TYPE, HEADER_TYPE, PAGE_TYPE};
pub use error::{Error, Result};
