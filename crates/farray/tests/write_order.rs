//! Flush dependencies as the SWMR design's table 8 gives them, checked on the cache's graph,
//! by the write-order checker on the trace, and by SWMR readers of every intermediate file.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use h5chunk_cache::{
    CacheConfig, Key, MemStorage, MetadataCache, ProxyId, ViolationKind, check_write_order,
};
use h5chunk_farray::{FixedArray, Params};
use h5chunk_format::Sizes;
use h5chunk_format::chunk_record::{ChunkRecord, RecordCodec};

const S: Sizes = Sizes::DEFAULT;

fn write_chunks(cache: &MetadataCache) -> h5chunk_cache::FlushReport {
    cache
        .flush_with(&mut |_: &[ProxyId]| Ok::<(), Box<dyn std::error::Error + Send + Sync>>(()))
        .unwrap()
}

fn params(nelmts: u64) -> Params {
    Params {
        nelmts,
        max_dblk_page_nelmts_bits: 10,
    }
}

#[test]
fn paged_dependencies_follow_table_8() {
    let storage = MemStorage::new();
    let cache = common::cache(&storage);
    let mut fa = FixedArray::create(&cache, S, RecordCodec::unfiltered(S), params(5_000)).unwrap();
    let hdr = fa.addr();
    let (p0, p1) = (cache.create_proxy(), cache.create_proxy());
    fa.insert_with_proxy(&cache, 3, &common::at(0x9000), Some(p0))
        .unwrap();
    fa.insert_with_proxy(&cache, 3_100, &common::at(0xa000), Some(p1))
        .unwrap();
    fa.insert(&cache, 3_101, &common::at(0xb000)).unwrap();
    let db = fa.data_block_addr(&cache).unwrap().unwrap();
    let (page0, page3) = (fa.page_addr(db, 0).unwrap(), fa.page_addr(db, 3).unwrap());

    // Header → data block; data block → the pages in use, and no other; page → chunk proxy.
    assert_eq!(cache.flush_children(hdr), vec![Key::Entry(db)]);
    assert_eq!(
        cache.flush_children(db),
        vec![Key::Entry(page0), Key::Entry(page3)]
    );
    assert_eq!(cache.flush_children(page0), vec![Key::Proxy(p0)]);
    assert_eq!(cache.flush_children(page3), vec![Key::Proxy(p1)]);

    // While the chunks are unwritten nothing that leads to them may be written.
    let report = cache.flush().unwrap();
    assert_eq!(
        report.blocked.iter().copied().collect::<BTreeSet<_>>(),
        BTreeSet::from([hdr, db, page0, page3])
    );
    cache.chunk_written(p1).unwrap();
    let report = cache.flush().unwrap();
    assert_eq!(
        report.blocked.len(),
        3,
        "page 3 is written, its parents wait for page 0"
    );
    let report = write_chunks(&cache);
    assert!(report.is_complete());
    let trace = cache.take_trace();
    check_write_order(&trace).unwrap();
    assert_eq!(trace.written(), vec![page3, page0, db, hdr]);
}

#[test]
fn unpaged_dependencies_follow_table_8() {
    let storage = MemStorage::new();
    let cache = common::cache(&storage);
    let mut fa = FixedArray::create(&cache, S, RecordCodec::unfiltered(S), params(12)).unwrap();
    let proxies: Vec<ProxyId> = (0..3).map(|_| cache.create_proxy()).collect();
    for (i, &p) in proxies.iter().enumerate() {
        fa.insert_with_proxy(
            &cache,
            i as u64 * 5,
            &common::at(0x9000 + i as u64),
            Some(p),
        )
        .unwrap();
    }
    let db = fa.data_block_addr(&cache).unwrap().unwrap();
    assert_eq!(cache.flush_children(fa.addr()), vec![Key::Entry(db)]);
    assert_eq!(
        cache.flush_children(db),
        proxies.iter().map(|&p| Key::Proxy(p)).collect::<Vec<_>>()
    );
    assert!(!cache.flush().unwrap().is_complete());
    assert!(write_chunks(&cache).is_complete());
    let trace = cache.take_trace();
    check_write_order(&trace).unwrap();
    assert_eq!(trace.written(), vec![db, fa.addr()]);
}

/// The checker sees our dependencies: a cache that writes parents first is caught.
#[test]
fn broken_flush_order_is_caught() {
    for nelmts in [12, 5_000] {
        let storage = MemStorage::new();
        let cache = common::cache(&storage);
        let mut fa =
            FixedArray::create(&cache, S, RecordCodec::unfiltered(S), params(nelmts)).unwrap();
        fa.insert(&cache, nelmts - 1, &common::at(0x9000)).unwrap();
        cache.testing_break_flush_order(true);
        let _ = write_chunks(&cache);
        let v = check_write_order(&cache.take_trace()).unwrap_err();
        assert_eq!(v.kind, ViolationKind::WrittenBeforeChild);
    }
}

/// Under a byte budget that forces evictions (and so writes in the middle of operations), with
/// chunks written in a random order, no parent ever reaches the file before a child.
#[test]
fn evictions_respect_dependencies() {
    let storage = MemStorage::new();
    let config = CacheConfig {
        record_trace: true,
        max_bytes: 3 * 1024,
        ..CacheConfig::default()
    };
    let cache = MetadataCache::new(Arc::new(storage.clone()), config).unwrap();
    let mut fa = FixedArray::create(&cache, S, RecordCodec::unfiltered(S), params(6_000)).unwrap();
    let mut pending = Vec::new();
    let mut x = 12345u64;
    for round in 0..2_000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let i = (x >> 33) % 6_000;
        let p = cache.create_proxy();
        fa.insert_with_proxy(&cache, i, &common::at(0x100_000 + round), Some(p))
            .unwrap();
        pending.push(p);
        if x.is_multiple_of(7) {
            let p = pending.swap_remove((x as usize >> 7) % pending.len());
            cache.chunk_written(p).unwrap();
        }
    }
    assert!(
        cache.stats().total().evictions > 0,
        "the budget forced evictions"
    );
    assert!(write_chunks(&cache).is_complete());
    check_write_order(&cache.take_trace()).unwrap();
}

/// A SWMR reader opening any intermediate state of the file (after partial flushes that leave
/// unwritten chunks' blocks dirty) reads without error, and every element it sees is the fill
/// value or a value whose chunk was already written.
#[test]
fn swmr_readers_never_see_unwritten_children() {
    let storage = MemStorage::new();
    let cache = common::cache(&storage);
    let mut fa = FixedArray::create(&cache, S, RecordCodec::unfiltered(S), params(3_000)).unwrap();
    let (addr, p) = (fa.addr(), fa.params());
    assert!(cache.flush().unwrap().is_complete());
    let mut proxy_of: BTreeMap<u64, ProxyId> = BTreeMap::new(); // chunk address → proxy
    let mut written: BTreeSet<u64> = BTreeSet::new(); // chunk addresses written
    let mut pending: Vec<(ProxyId, u64)> = Vec::new();
    let mut x = 99u64;
    let mut next = 0x100_000u64;
    let mut seen_set = 0;
    for round in 0..40 {
        for _ in 0..40 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let i = (x >> 33) % 3_000;
            let proxy = cache.create_proxy();
            next += 1;
            fa.insert_with_proxy(&cache, i, &common::at(next), Some(proxy))
                .unwrap();
            proxy_of.insert(next, proxy);
            pending.push((proxy, next));
        }
        // Write about half of the outstanding chunks (all of them every third round), then
        // flush what may be flushed: pages whose chunks are all written reach the file, their
        // data block and the header only once nothing below them is dirty.
        let keep: Vec<(ProxyId, u64)> = pending
            .drain(..)
            .filter(|&(proxy, chunk)| {
                if round % 3 == 2 || (chunk ^ x).is_multiple_of(2) {
                    cache.chunk_written(proxy).unwrap();
                    written.insert(chunk);
                    false
                } else {
                    true
                }
            })
            .collect();
        pending = keep;
        let _ = cache.flush().unwrap();

        let reader = common::reader(storage.to_vec());
        let r = FixedArray::open(&reader, addr, S, RecordCodec::unfiltered(S), p).unwrap();
        for (i, rec) in r.to_vec(&reader).unwrap() {
            let chunk = rec.addr.unwrap().get();
            assert!(proxy_of.contains_key(&chunk), "element {i}: unknown chunk");
            assert!(
                written.contains(&chunk),
                "element {i}: chunk {chunk:#x} not written"
            );
            seen_set += 1;
        }
        for i in (0..3_000).step_by(97) {
            let rec = r.get(&reader, i).unwrap();
            assert!(rec == ChunkRecord::default() || written.contains(&rec.addr.unwrap().get()));
        }
    }
    assert!(seen_set > 100, "readers saw elements: {seen_set}");
    assert!(write_chunks(&cache).is_complete());
    check_write_order(&cache.take_trace()).unwrap();
}
