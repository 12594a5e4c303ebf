//! Helpers shared by the fixed array's integration tests.

#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;

use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache};
use h5chunk_format::Addr;
use h5chunk_format::chunk_record::ChunkRecord;

/// A writer's cache over `storage` that records its write trace.
pub fn cache(storage: &MemStorage) -> MetadataCache {
    let config = CacheConfig {
        record_trace: true,
        ..CacheConfig::default()
    };
    MetadataCache::new(Arc::new(storage.clone()), config).unwrap()
}

/// A fresh reader's cache over a copy of `bytes`.
pub fn reader(bytes: Vec<u8>) -> MetadataCache {
    MetadataCache::new(
        Arc::new(MemStorage::from_vec(bytes)),
        CacheConfig::default(),
    )
    .unwrap()
}

/// An unfiltered record pointing at `a`.
pub fn at(a: u64) -> ChunkRecord {
    ChunkRecord {
        addr: Some(Addr(a)),
        ..ChunkRecord::default()
    }
}

/// The chunks of the maximum chunk grid along each dimension: `ceil(max / chunk)`.
pub fn grid(max: &[u64], chunk: &[u64]) -> Vec<u64> {
    max.iter().zip(chunk).map(|(m, c)| m.div_ceil(*c)).collect()
}

/// The fixed array index of the chunk at element `offset`: row-major over the maximum chunk
/// grid (docs/format/chunk-index-format.md §3).
pub fn linear(offset: &[u64], chunk: &[u64], max: &[u64]) -> u64 {
    let g = grid(max, chunk);
    offset
        .iter()
        .zip(chunk)
        .zip(&g)
        .fold(0, |acc, ((o, c), n)| acc * n + o / c)
}

/// The scaled coordinates of fixed array index `idx` (the inverse of [`linear`]).
pub fn scaled(mut idx: u64, chunk: &[u64], max: &[u64]) -> Vec<u64> {
    let g = grid(max, chunk);
    let mut out = vec![0; g.len()];
    for (o, n) in out.iter_mut().zip(&g).rev() {
        *o = idx % n;
        idx /= n;
    }
    out
}
