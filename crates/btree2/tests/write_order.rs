//! Flush dependencies (header -> root, internal -> child, node -> chunk proxy), the write-order
//! checker, and SWMR shadowing of splits, rebalances and merges.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::*;
use h5chunk_btree2::BTree2;
use h5chunk_cache::{
    CacheConfig, FaultyStorage, Key, MemStorage, MetadataCache, ProxyId, check_write_order,
};
use h5chunk_format::Addr;

#[test]
fn writes_children_before_parents() {
    let storage = MemStorage::new();
    let cache = mem_cache(&storage, true);
    let mut t = BTree2::create(&cache, S, class2(), SMALL).unwrap();
    for i in 0..400u64 {
        t.try_insert(&cache, entry((i * 37) % 400, 0, 0x1000 + i))
            .unwrap();
        if i % 50 == 49 {
            assert!(cache.flush().unwrap().is_complete());
        }
    }
    for i in 0..300u64 {
        assert!(t.remove(&cache, &[(i * 11) % 400, 0]).unwrap().is_some());
        if i % 40 == 39 {
            assert!(cache.flush().unwrap().is_complete());
        }
    }
    assert!(cache.flush().unwrap().is_complete());
    check_write_order(&cache.take_trace()).unwrap();
    // The dependency graph mirrors the tree: header -> root, every internal node -> children.
    let root = t.header().root.unwrap();
    assert_eq!(cache.flush_children(t.addr()), vec![Key::Entry(root)]);
    for (addr, depth) in t.nodes(&cache).unwrap() {
        if depth > 0 {
            let kids = cache.flush_children(addr);
            assert!(!kids.is_empty());
            for k in kids {
                let Key::Entry(child) = k else {
                    panic!("proxy under an internal node")
                };
                assert_eq!(cache.flush_parents(child), vec![Key::Entry(addr)]);
            }
        }
    }
}

#[test]
fn nodes_wait_for_their_chunks() {
    let storage = MemStorage::new();
    let cache = mem_cache(&storage, true);
    let mut t = BTree2::create(&cache, S, class2(), SMALL).unwrap();
    let mut proxies: Vec<ProxyId> = Vec::new();
    for i in 0..300u64 {
        let p = cache.create_proxy();
        proxies.push(p);
        t.try_insert_with_proxy(&cache, entry((i * 7) % 300, 1, 0x1000 + i), Some(p))
            .unwrap();
    }
    assert!(t.depth() >= 2);
    // Every chunk is dirty: nothing of the tree may be written.
    let report = cache.flush().unwrap();
    assert!(report.blocked.contains(&t.addr()));
    // All chunks but one reach the file: the node holding that one's record, its ancestors
    // and the header still wait, through splits and rebalances that moved the record.
    let last = proxies[123];
    for &p in &proxies {
        if p != last {
            cache.chunk_written(p).unwrap();
        }
    }
    let report = cache.flush().unwrap();
    assert!(!report.is_complete());
    assert!(report.blocked.contains(&t.addr()));
    assert!(report.blocked.contains(&t.header().root.unwrap()));
    cache.chunk_written(last).unwrap();
    assert!(cache.flush().unwrap().is_complete());
    // A modification attaches the new chunk's proxy to the node holding the record.
    let p = cache.create_proxy();
    assert!(
        t.modify_with_proxy(&cache, &[5, 1], Some(p), |e| e.record.addr =
            Some(Addr(0x9999)))
            .unwrap()
    );
    assert!(!cache.flush().unwrap().is_complete());
    let report = cache
        .flush_with(&mut |_: &[ProxyId]| Ok::<(), Box<dyn std::error::Error + Send + Sync>>(()))
        .unwrap();
    assert!(report.is_complete());
    check_write_order(&cache.take_trace()).unwrap();
    assert_eq!(
        t.get(&cache, &[5, 1]).unwrap().unwrap().record.addr,
        Some(Addr(0x9999))
    );
}

struct Swmr {
    storage: Arc<FaultyStorage<MemStorage>>,
    cache: MetadataCache,
}

fn swmr() -> Swmr {
    let storage = Arc::new(FaultyStorage::new(MemStorage::new()));
    let cache = MetadataCache::new(
        storage.clone(),
        CacheConfig {
            record_trace: true,
            ..CacheConfig::default()
        },
    )
    .unwrap();
    cache.allocator().allocate(64).unwrap();
    cache.set_swmr_write(true);
    Swmr { storage, cache }
}

/// Run `op` once per step; whenever it restructured the tree (some node left it), check that
/// the nodes that left kept their old images byte for byte, that new nodes took space never
/// handed out before, and that the header was the last write.
fn check_shadowing(
    s: &Swmr,
    t: &mut BTree2<h5chunk_btree2::ChunkClass>,
    steps: u64,
    mut op: impl FnMut(&mut BTree2<h5chunk_btree2::ChunkClass>, u64),
) -> usize {
    let mut shadowed_ops = 0;
    for i in 0..steps {
        assert!(s.cache.flush().unwrap().is_complete());
        let before = s.storage.inner().to_vec();
        // Space never handed out starts here (under SWMR the EOA runs ahead, a step at a time).
        let high = s.cache.allocator().high_water();
        let old: BTreeSet<Addr> = t
            .nodes(&s.cache)
            .unwrap()
            .into_iter()
            .map(|n| n.0)
            .collect();
        s.storage.clear_writes();
        op(t, i);
        assert!(s.cache.flush().unwrap().is_complete());
        let after = s.storage.inner().to_vec();
        let new: BTreeSet<Addr> = t
            .nodes(&s.cache)
            .unwrap()
            .into_iter()
            .map(|n| n.0)
            .collect();
        let gone: Vec<Addr> = old.difference(&new).copied().collect();
        if gone.is_empty() {
            continue;
        }
        shadowed_ops += 1;
        for a in &gone {
            let r = a.get() as usize..a.get() as usize + SMALL.node_size as usize;
            assert_eq!(
                before[r.clone()],
                after[r],
                "shadowed node {a} was overwritten"
            );
        }
        for a in new.difference(&old) {
            assert!(
                *a >= high,
                "new node {a} reuses space handed out before (below {high})"
            );
        }
        let writes = s.storage.writes();
        assert_eq!(
            writes.last().unwrap().addr,
            t.addr(),
            "the header is written last"
        );
    }
    check_write_order(&s.cache.take_trace()).unwrap();
    shadowed_ops
}

#[test]
fn swmr_splits_and_rebalances_shadow_nodes() {
    let s = swmr();
    let mut t = BTree2::create(&s.cache, S, class2(), SMALL).unwrap();
    for i in 0..150u64 {
        t.try_insert(&s.cache, entry((i * 13) % 150, 0, 0x1000 + i))
            .unwrap();
    }
    let n = check_shadowing(&s, &mut t, 150, |t, i| {
        t.try_insert(&s.cache, entry((i * 29) % 150, 1, 0x2000 + i))
            .unwrap();
    });
    assert!(n >= 10, "only {n} restructuring inserts");
    let n = check_shadowing(&s, &mut t, 120, |t, i| {
        assert!(
            t.remove(&s.cache, &[(i * 17) % 150, (i % 2)])
                .unwrap()
                .is_some()
                || i % 2 == 1
        );
    });
    assert!(n >= 5, "only {n} restructuring removals");
    t.validate(&s.cache).unwrap();
    // Freed space is deferred, never reused, while SWMR writing is on.
    assert!(s.cache.allocator().deferred_space() > 0);
}

#[test]
fn swmr_reader_follows_the_writer() {
    let s = swmr();
    let mut w = BTree2::create(&s.cache, S, class2(), SMALL).unwrap();
    w.try_insert(&s.cache, entry(0, 0, 0x1000)).unwrap();
    assert!(s.cache.flush().unwrap().is_complete());
    let reader = MetadataCache::new(s.storage.clone(), CacheConfig::swmr_reader()).unwrap();
    let mut r = BTree2::open(&reader, w.addr(), S, class2()).unwrap();
    let mut n = 1u64;
    for batch in 0..12u64 {
        for i in 0..40u64 {
            w.try_insert(&s.cache, entry(batch, i + 1, 0x2000 + batch * 100 + i))
                .unwrap();
            n += 1;
        }
        // Before the flush the reader keeps a consistent view of the previous state.
        r.validate(&reader).unwrap();
        assert!(s.cache.flush().unwrap().is_complete());
        reader.evict_clean();
        r.refresh(&reader).unwrap();
        assert_eq!(r.validate(&reader).unwrap().records, n);
        assert_eq!(
            r.get(&reader, &[batch, 40]).unwrap().unwrap().record.addr,
            Some(Addr(0x2000 + batch * 100 + 39))
        );
    }
    assert!(r.depth() >= 2);
}

/// A SWMR reader may read the header and the upper levels of the tree as one flush left them
/// and the levels below as the next flush left them. Every such mix must read: a node whose
/// record count changes (a leaf taking appends, above all) moves to new space rather than
/// change in place, since the reader's older parent gives the old count, and with it the place
/// of the node's checksum. Checked for appends (the append-run path), inserts in the middle
/// and removals, a few records per flush.
#[test]
fn swmr_readers_mixing_two_flushes_read_every_record() {
    let s = swmr();
    let mut t = BTree2::create(&s.cache, S, class2(), SMALL).unwrap();
    let mut keys: BTreeSet<[u64; 2]> = BTreeSet::new();
    let mut next = 0u64;
    let mut mixes = 0;
    for round in 0..120u64 {
        assert!(s.cache.flush().unwrap().is_complete());
        let before = s.storage.inner().to_vec();
        let mut upper: Vec<(Addr, u16)> = t.nodes(&s.cache).unwrap();
        upper.retain(|&(_, depth)| depth > 0);
        let old_keys = keys.clone();
        let depth = t.depth();
        // A few changes per flush: appends mostly, some inserts inside, some removals.
        let batch: Vec<_> = (0..7u64)
            .map(|i| {
                next += 1;
                entry(next, 0, 0x1000 + next * 8 + i)
            })
            .collect();
        t.insert_many(&s.cache, &batch).unwrap();
        keys.extend((next - 6..=next).map(|k| [k, 0]));
        if round % 3 == 1 {
            let k = [(round * 7) % next.max(1) + 1, 1];
            t.try_insert(&s.cache, entry(k[0], 1, 0x9000 + round))
                .unwrap();
            keys.insert(k);
        }
        if round % 4 == 2 && keys.len() > 10 {
            let k = *keys.iter().nth(keys.len() / 2).unwrap();
            assert!(t.remove(&s.cache, &k).unwrap().is_some());
            keys.remove(&k);
        }
        assert!(s.cache.flush().unwrap().is_complete());
        let after = s.storage.inner().to_vec();
        // Levels from the top taken from the older flush: the header alone, then the header
        // and the internal levels down to each depth.
        let node = SMALL.node_size as usize;
        for from_old in 0..=depth {
            let mut mixed = after.clone();
            let h = t.addr().get() as usize;
            let hl = 64.min(before.len() - h);
            mixed[h..h + hl].copy_from_slice(&before[h..h + hl]);
            for &(a, d) in &upper {
                if d + from_old > depth {
                    let a = a.get() as usize;
                    mixed[a..a + node].copy_from_slice(&before[a..a + node]);
                }
            }
            let storage = Arc::new(MemStorage::from_vec(mixed));
            let reader = MetadataCache::new(storage, CacheConfig::default()).unwrap();
            let r = BTree2::open(&reader, t.addr(), S, class2()).unwrap();
            for k in old_keys.union(&keys) {
                let found = r.get(&reader, k).unwrap_or_else(|e| {
                    panic!("round {round}, {from_old} levels old: finding {k:?}: {e}")
                });
                if old_keys.contains(k) && keys.contains(k) {
                    assert!(found.is_some(), "round {round}: {k:?} lost");
                }
            }
            mixes += 1;
        }
    }
    assert!(t.depth() >= 2, "the tree stayed shallow");
    assert!(mixes > 200);
    check_write_order(&s.cache.take_trace()).unwrap();
}
