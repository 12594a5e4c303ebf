//! Helpers shared by the earray tests.

#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;

use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache, Storage};
use h5chunk_earray::{ChunkAddrs, ExtensibleArray, FilteredChunks};
use h5chunk_format::chunk_record::ChunkRecord;
use h5chunk_format::earray::Params;
use h5chunk_format::{Addr, Sizes};

pub const S: Sizes = Sizes::DEFAULT;

/// Bytes reserved at the start of every test storage (where a superblock would sit).
pub const RESERVED: u64 = 64;

/// A cache over `storage` that records its write trace, with a budget large enough that nothing
/// is evicted unless a test asks for it.
pub fn cache_over(storage: Arc<dyn Storage>) -> MetadataCache {
    let config = CacheConfig {
        record_trace: true,
        max_bytes: 256 << 20,
        ..CacheConfig::default()
    };
    let cache = MetadataCache::new(storage, config).unwrap();
    let eoa = cache.allocator().eoa();
    if eoa.get() < RESERVED {
        cache.allocator().set_eoa(Addr(RESERVED));
    }
    cache
}

/// A fresh memory storage and a cache over it.
pub fn new_cache() -> (MemStorage, MetadataCache) {
    let storage = MemStorage::new();
    let cache = cache_over(Arc::new(storage.clone()));
    (storage, cache)
}

/// A reader's cache over the bytes of `storage` as they are now.
pub fn reader(storage: &MemStorage) -> MetadataCache {
    MetadataCache::new(Arc::new(storage.clone()), CacheConfig::default()).unwrap()
}

pub fn addrs() -> ChunkAddrs {
    ChunkAddrs::new(S)
}

pub fn filtered() -> FilteredChunks {
    FilteredChunks::layout_v4(S, 4000).unwrap()
}

/// A deterministic chunk address for element `i`.
pub fn chunk_addr(i: u64) -> Addr {
    Addr(0x1000_0000 + i * 16)
}

/// A deterministic filtered record for element `i`.
pub fn record(i: u64) -> ChunkRecord {
    ChunkRecord {
        addr: Some(chunk_addr(i)),
        size: 1 + i % 4000,
        mask: (i % 3) as u32,
    }
}

pub fn new_addr_array(cache: &MetadataCache) -> ExtensibleArray<ChunkAddrs> {
    ExtensibleArray::create(cache, S, addrs(), Params::CHUNK_INDEX).unwrap()
}

pub fn new_filtered_array(cache: &MetadataCache) -> ExtensibleArray<FilteredChunks> {
    ExtensibleArray::create(cache, S, filtered(), Params::CHUNK_INDEX).unwrap()
}
