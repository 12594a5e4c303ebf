//! Lookups go down the internal levels on copies of the nodes, kept while the metadata
//! cache's generation stays put: every change through the handle, and a reader's refresh
//! after the writer's flush, must reach them.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::sync::Arc;

use h5chunk_btree1::{Chunk, ChunkTree};
use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache};
use h5chunk_format::{Addr, Sizes};

const S: Sizes = Sizes::DEFAULT;
const START: Addr = Addr(64);
/// Layout dims (rank 2 and the element size); K = 2, so a few dozen chunks make a deep tree.
const DIMS: [u64; 3] = [3, 5, 8];
const K: u16 = 2;

fn cache(storage: &MemStorage, config: CacheConfig) -> MetadataCache {
    let cache = MetadataCache::new(Arc::new(storage.clone()), config).unwrap();
    cache.allocator().set_eoa(START);
    cache
}

/// Chunk `i` at address `base + i`.
fn chunk(i: u64, base: u64) -> Chunk {
    Chunk {
        offsets: vec![i * 3, 0].into(),
        size: 24,
        filter_mask: 0,
        addr: Addr(base + i),
    }
}

/// The address the tree records for chunk `i`, if any.
fn addr_of(t: &ChunkTree, cache: &MetadataCache, i: u64) -> Option<u64> {
    let by_offsets = t.get(cache, &[i * 3, 0]).unwrap().map(|c| c.addr.get());
    let by_scaled = t.get_scaled(cache, &[i, 0]).unwrap().map(|c| c.addr.get());
    assert_eq!(by_offsets, by_scaled, "chunk {i}");
    by_scaled
}

#[test]
fn lookups_see_changes_made_through_the_handle() {
    let storage = MemStorage::new();
    let cache = cache(&storage, CacheConfig::default());
    let t = ChunkTree::create(&cache, S, K, &DIMS).unwrap();
    for i in 0..60 {
        t.insert(&cache, &chunk((i * 17) % 60, 0x1000), None)
            .unwrap();
    }
    assert!(t.depth(&cache).unwrap() >= 3);
    // Every lookup, which makes copies of the internal nodes on the way.
    for i in 0..60 {
        assert_eq!(addr_of(&t, &cache, i), Some(0x1000 + i), "chunk {i}");
    }
    assert_eq!(addr_of(&t, &cache, 60), None);
    // Overwrites, then insertions that split nodes up to the root, then removals.
    for i in 0..60 {
        t.insert(&cache, &chunk(i, 0x9000), None).unwrap();
    }
    for i in 0..60 {
        assert_eq!(addr_of(&t, &cache, i), Some(0x9000 + i), "chunk {i}");
    }
    for i in 60..200 {
        t.insert(&cache, &chunk(i, 0x9000), None).unwrap();
        assert_eq!(addr_of(&t, &cache, i), Some(0x9000 + i), "chunk {i}");
    }
    for i in (0..200).step_by(3) {
        assert!(
            t.remove(&cache, &[i * 3, 0]).unwrap().is_some(),
            "chunk {i}"
        );
    }
    for i in 0..200 {
        let want = (i % 3 != 0).then_some(0x9000 + i);
        assert_eq!(addr_of(&t, &cache, i), want, "chunk {i}");
    }
    // Appends in a batch (the path protected for the run) reach the copies too.
    let batch: Vec<Chunk> = (200..300).map(|i| chunk(i, 0x9000)).collect();
    t.insert_many(&cache, &batch).unwrap();
    for i in 150..300 {
        let want = (i >= 200 || i % 3 != 0).then_some(0x9000 + i);
        assert_eq!(addr_of(&t, &cache, i), want, "chunk {i}");
    }
}

#[test]
fn a_reader_sees_the_writers_flushed_changes_after_refresh() {
    let storage = MemStorage::new();
    let w = cache(&storage, CacheConfig::default());
    let t = ChunkTree::create(&w, S, K, &DIMS).unwrap();
    for i in 0..60 {
        t.insert(&w, &chunk(i, 0x1000), None).unwrap();
    }
    assert!(w.flush().unwrap().is_complete());

    let r = MetadataCache::new(Arc::new(storage.clone()), CacheConfig::swmr_reader()).unwrap();
    let rt = ChunkTree::open(&r, t.addr(), S, K, &DIMS).unwrap();
    assert!(rt.depth(&r).unwrap() >= 3);
    for i in 0..60 {
        assert_eq!(addr_of(&rt, &r, i), Some(0x1000 + i), "chunk {i}");
    }

    // The writer moves every chunk and adds more (the root splits, at its address), then
    // flushes.
    for i in 0..200 {
        t.insert(&w, &chunk(i, 0x9000), None).unwrap();
    }
    assert!(w.flush().unwrap().is_complete());

    // The reader's refresh: its cache re-checks what it holds.
    r.mark_stale();
    for i in 0..200 {
        assert_eq!(addr_of(&rt, &r, i), Some(0x9000 + i), "chunk {i}");
    }
}
