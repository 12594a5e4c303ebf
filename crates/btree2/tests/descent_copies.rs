//! Lookups go down the internal levels on copies of the nodes, kept while the metadata
//! cache's generation stays put: every change through the handle, and a reader's refresh
//! after the writer's flush, must reach them.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use std::sync::Arc;

use common::*;
use h5chunk_btree2::{BTree2, ChunkClass};
use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache};
use h5chunk_format::Addr;

/// Record `i` of a 20-wide grid.
fn key(i: u64) -> [u64; 2] {
    [i / 20, i % 20]
}

/// The address `tree` records for chunk `i`, if any.
fn addr_of(t: &BTree2<ChunkClass>, cache: &MetadataCache, i: u64) -> Option<u64> {
    t.get(cache, &key(i))
        .unwrap()
        .map(|e| e.record.addr.unwrap().get())
}

#[test]
fn lookups_see_changes_made_through_the_handle() {
    let storage = MemStorage::new();
    let cache = mem_cache(&storage, false);
    let mut t = BTree2::create(&cache, S, class2(), SMALL).unwrap();
    for i in 0..300 {
        let [a, b] = key(i);
        t.try_insert(&cache, entry(a, b, 0x1000 + i)).unwrap();
    }
    assert!(t.depth() >= 2, "depth {}", t.depth());
    // Every lookup, which makes copies of the internal nodes on the way.
    for i in 0..300 {
        assert_eq!(addr_of(&t, &cache, i), Some(0x1000 + i), "chunk {i}");
    }
    // New addresses for every record, those held by internal nodes included.
    for i in 0..300 {
        let changed = t
            .modify(&cache, &key(i), |r| r.record.addr = Some(Addr(0x9000 + i)))
            .unwrap();
        assert!(changed, "chunk {i}");
    }
    for i in 0..300 {
        assert_eq!(addr_of(&t, &cache, i), Some(0x9000 + i), "chunk {i}");
    }
    // Insertions that split nodes up to the root, then removals.
    for i in 300..600 {
        let [a, b] = key(i);
        t.try_insert(&cache, entry(a, b, 0x9000 + i)).unwrap();
        assert_eq!(addr_of(&t, &cache, i), Some(0x9000 + i), "chunk {i}");
    }
    assert_eq!(addr_of(&t, &cache, 600), None);
    for i in (0..600).step_by(3) {
        assert!(t.remove(&cache, &key(i)).unwrap().is_some(), "chunk {i}");
    }
    for i in 0..600 {
        let want = (i % 3 != 0).then_some(0x9000 + i);
        assert_eq!(addr_of(&t, &cache, i), want, "chunk {i}");
    }
}

#[test]
fn a_reader_sees_the_writers_flushed_changes_after_refresh() {
    let storage = MemStorage::new();
    let w = mem_cache(&storage, false);
    let mut t = BTree2::create(&w, S, class2(), SMALL).unwrap();
    for i in 0..300 {
        let [a, b] = key(i);
        t.try_insert(&w, entry(a, b, 0x1000 + i)).unwrap();
    }
    assert!(w.flush().unwrap().is_complete());

    let r = MetadataCache::new(Arc::new(storage.clone()), CacheConfig::swmr_reader()).unwrap();
    let mut rt = BTree2::open(&r, t.addr(), S, class2()).unwrap();
    assert!(rt.depth() >= 2, "depth {}", rt.depth());
    for i in 0..300 {
        assert_eq!(addr_of(&rt, &r, i), Some(0x1000 + i), "chunk {i}");
    }

    // The writer moves every chunk and adds as many, then flushes.
    for i in 0..300 {
        t.modify(&w, &key(i), |rec| rec.record.addr = Some(Addr(0x9000 + i)))
            .unwrap();
    }
    for i in 300..600 {
        let [a, b] = key(i);
        t.try_insert(&w, entry(a, b, 0x9000 + i)).unwrap();
    }
    assert!(w.flush().unwrap().is_complete());

    // The reader's refresh: its cache re-checks what it holds, its handle re-reads the header.
    r.mark_stale();
    rt.refresh(&r).unwrap();
    for i in 0..600 {
        assert_eq!(addr_of(&rt, &r, i), Some(0x9000 + i), "chunk {i}");
    }
}
