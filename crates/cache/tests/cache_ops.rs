//! Behaviour of the metadata cache's operations, one at a time.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use std::sync::Arc;

use common::{Block, Plain};
use h5chunk_cache::{
    CacheConfig, CacheEntry, Error, FaultyStorage, Key, MemStorage, MetadataCache, ProxyId,
    Storage, TraceEvent, check_write_order,
};
use h5chunk_format::Addr;

fn traced(max_bytes: usize) -> CacheConfig {
    CacheConfig {
        max_bytes,
        record_trace: true,
        ..CacheConfig::default()
    }
}

fn mem_cache(max_bytes: usize) -> (MemStorage, MetadataCache) {
    let mem = MemStorage::new();
    let cache = MetadataCache::new(Arc::new(mem.clone()), traced(max_bytes)).unwrap();
    (mem, cache)
}

fn faulty_cache(max_bytes: usize) -> (Arc<FaultyStorage<MemStorage>>, MetadataCache) {
    let storage = Arc::new(FaultyStorage::new(MemStorage::new()));
    let cache = MetadataCache::new(storage.clone(), traced(max_bytes)).unwrap();
    (storage, cache)
}

fn payload(c: &MetadataCache, a: u64) -> Vec<u8> {
    c.get::<Block>(Addr(a), &()).unwrap().read().payload.clone()
}

#[test]
fn hits_misses_and_speculative_reads_are_counted() {
    let (mem, w) = mem_cache(1 << 20);
    w.insert(Addr(0), Block::new([1; 4])).unwrap();
    w.insert(Addr(64), Block::new([2; 40])).unwrap();
    assert!(w.flush().unwrap().is_complete());
    assert_eq!(w.stats().of("TBLK").writes, 2);
    assert_eq!(w.stats().of("TBLK").inserts, 2);

    let r = MetadataCache::new(Arc::new(mem), CacheConfig::default()).unwrap();
    assert_eq!(payload(&r, 0), [1; 4]);
    // A 16-byte image fits the speculative read: one read.
    assert_eq!(r.stats().of("TBLK").reads, 1);
    assert_eq!(payload(&r, 64), [2; 40]);
    // A 52-byte one needs a second, full read.
    let st = r.stats().of("TBLK");
    assert_eq!((st.misses, st.reads, st.bytes_read), (2, 3, 16 + 16 + 52));
    payload(&r, 0);
    assert_eq!(r.stats().of("TBLK").hits, 1);
    assert_eq!(r.stats().total().misses, 2);
    r.reset_stats();
    assert_eq!(r.stats().total().hits, 0);
}

#[test]
fn typed_access_rejects_the_wrong_type() {
    let (_, c) = mem_cache(1 << 20);
    c.insert(Addr(0), Block::new([1; 4])).unwrap();
    assert!(matches!(
        c.get::<Plain>(Addr(0), &()),
        Err(Error::TypeMismatch {
            expected: "PLN0",
            found: "TBLK",
            ..
        })
    ));
    assert!(matches!(
        c.insert(Addr(0), Plain(1)),
        Err(Error::AlreadyResident {
            type_name: "TBLK",
            ..
        })
    ));
}

#[test]
fn dependencies_reject_cycles_duplicates_and_unknown_nodes() {
    let (_, c) = mem_cache(1 << 20);
    for a in [0, 64, 128, 192] {
        c.insert(Addr(a), Block::new([0; 4])).unwrap();
    }
    let (a, b, cc, d) = (Addr(0), Addr(64), Addr(128), Addr(192));
    c.add_flush_dependency(a, b).unwrap();
    c.add_flush_dependency(b, cc).unwrap();
    // A child with two parents.
    c.add_flush_dependency(d, cc).unwrap();
    assert_eq!(c.flush_parents(cc), vec![Key::Entry(b), Key::Entry(d)]);
    assert!(matches!(
        c.add_flush_dependency(cc, a),
        Err(Error::DependencyCycle { .. })
    ));
    assert!(matches!(
        c.add_flush_dependency(a, a),
        Err(Error::DependencyCycle { .. })
    ));
    assert!(matches!(
        c.add_flush_dependency(a, b),
        Err(Error::DependencyExists { .. })
    ));
    // Entries take part whether cached or not (an uncached entry is clean); proxies must live.
    c.add_flush_dependency(a, Addr(4096)).unwrap();
    let foreign = mem_cache(1 << 20).1.create_proxy();
    assert!(matches!(
        c.add_flush_dependency(a, foreign),
        Err(Error::UnknownProxy(_))
    ));
    c.remove_flush_dependency(b, cc).unwrap();
    assert!(matches!(
        c.remove_flush_dependency(b, cc),
        Err(Error::NoSuchDependency { .. })
    ));
    // With b -> c gone, c -> a no longer closes a cycle through b... but d -> c remains.
    c.add_flush_dependency(cc, a).unwrap();
    assert_eq!(c.flush_children(cc), vec![Key::Entry(a)]);
}

#[test]
fn moves_carry_dependencies_and_dirtiness() {
    let (storage, c) = faulty_cache(1 << 20);
    c.insert(Addr(0), Block::new([1; 4])).unwrap();
    c.insert(Addr(64), Block::new([2; 4])).unwrap();
    c.add_flush_dependency(Addr(0), Addr(64)).unwrap();
    assert!(c.flush().unwrap().is_complete());
    storage.clear_writes();

    c.move_entry(Addr(64), Addr(256)).unwrap();
    assert!(!c.is_resident(Addr(64)));
    assert!(c.is_dirty(Addr(256)));
    assert_eq!(c.flush_children(Addr(0)), vec![Key::Entry(Addr(256))]);
    assert!(matches!(
        c.move_entry(Addr(256), Addr(0)),
        Err(Error::AlreadyResident { .. })
    ));
    c.mark_dirty(Addr(0)).unwrap();
    assert!(c.flush().unwrap().is_complete());
    let addrs: Vec<Addr> = storage.writes().iter().map(|w| w.addr).collect();
    assert_eq!(addrs, [Addr(256), Addr(0)]);
    check_write_order(&c.take_trace()).unwrap();
    assert_eq!(payload(&c, 256), [2; 4]);
}

#[test]
fn removed_entries_are_not_written_and_lose_their_dependencies() {
    let (storage, c) = faulty_cache(1 << 20);
    c.insert(Addr(0), Block::new([1; 4])).unwrap();
    c.insert(Addr(64), Block::new([2; 4])).unwrap();
    c.add_flush_dependency(Addr(0), Addr(64)).unwrap();
    c.remove(Addr(64)).unwrap();
    assert!(c.flush_children(Addr(0)).is_empty());
    assert!(c.flush().unwrap().is_complete());
    let addrs: Vec<Addr> = storage.writes().iter().map(|w| w.addr).collect();
    assert_eq!(addrs, [Addr(0)]);
    // Removing what is not cached is not an error.
    c.remove(Addr(4096)).unwrap();
}

#[test]
fn pinned_entries_are_never_evicted() {
    let (_, c) = mem_cache(64);
    c.insert(Addr(0), Block::new([9; 20])).unwrap();
    c.pin(Addr(0)).unwrap();
    assert!(matches!(c.pin(Addr(0)), Err(Error::Pinned { .. })));
    for i in 1..10u64 {
        c.insert(Addr(i * 64), Block::new([i as u8; 20])).unwrap();
    }
    assert!(c.is_resident(Addr(0)) && c.is_pinned(Addr(0)));
    assert!(matches!(c.evict(Addr(0)), Err(Error::Pinned { .. })));
    c.unpin(Addr(0)).unwrap();
    assert!(matches!(c.unpin(Addr(0)), Err(Error::NotPinned { .. })));
    // Unpinned, it is evictable like any other: the CLOCK hand clears its reference bit on one
    // pass and evicts it on the next, so a few new entries push it out.
    assert!(c.resident_bytes() <= 64);
    for i in 10..14u64 {
        c.insert(Addr(i * 64), Block::new([i as u8; 20])).unwrap();
        assert!(c.resident_bytes() <= 64);
    }
    assert!(!c.is_resident(Addr(0)));
    for i in 0..14u64 {
        assert_eq!(
            payload(&c, i * 64),
            [i as u8 + if i == 0 { 9 } else { 0 }; 20]
        );
    }
    let trace = c.take_trace();
    assert!(
        trace
            .events
            .iter()
            .any(|e| matches!(e, TraceEvent::Evicted(_)))
    );
    check_write_order(&trace).unwrap();
    assert!(c.stats().of("TBLK").evictions > 0);
}

#[test]
fn protected_entries_are_neither_evicted_nor_written() {
    let (_, c) = mem_cache(64);
    c.insert(Addr(0), Block::new([1; 4])).unwrap();
    c.insert(Addr(64), Block::new([2; 4])).unwrap();
    c.add_flush_dependency(Addr(64), Addr(0)).unwrap();
    let mut e = c.protect::<Block>(Addr(0), &()).unwrap();
    assert!(matches!(
        c.protect::<Block>(Addr(0), &()),
        Err(Error::Protected { .. })
    ));
    assert!(matches!(c.remove(Addr(0)), Err(Error::Protected { .. })));
    assert!(matches!(c.evict(Addr(0)), Err(Error::Protected { .. })));
    e.payload = vec![3; 4];
    // The protected dirty child and its parent stay dirty through a flush.
    let report = c.flush().unwrap();
    assert_eq!(report.blocked, vec![Addr(0), Addr(64)]);
    for i in 2..6u64 {
        c.insert(Addr(i * 64), Block::new([0; 4])).unwrap();
    }
    assert!(c.is_resident(Addr(0)) && c.is_resident(Addr(64)));
    drop(e);
    assert!(c.flush().unwrap().is_complete());
    assert_eq!(payload(&c, 0), [3; 4]);
    check_write_order(&c.take_trace()).unwrap();
}

#[test]
fn an_image_must_fit_the_recorded_length() {
    let (_, c) = mem_cache(1 << 20);
    c.insert(Addr(0), Block::new([1; 4])).unwrap();
    {
        let mut e = c.protect::<Block>(Addr(0), &()).unwrap();
        e.payload.push(5);
    }
    assert!(matches!(
        c.flush(),
        Err(Error::ImageLength {
            expected: 16,
            actual: 17,
            ..
        })
    ));
    {
        let mut e = c.protect::<Block>(Addr(0), &()).unwrap();
        let len = e.image_len();
        e.resize(len).unwrap();
    }
    assert!(c.flush().unwrap().is_complete());
    assert_eq!(payload(&c, 0), [1, 1, 1, 1, 5]);
}

#[test]
fn a_swmr_writer_refuses_unchecksummed_entries() {
    let (_, c) = mem_cache(1 << 20);
    c.set_swmr_write(true);
    assert!(c.allocator().is_swmr_write());
    c.insert(Addr(0), Plain(7)).unwrap();
    assert!(matches!(
        c.flush(),
        Err(Error::NotChecksummed {
            type_name: "PLN0",
            ..
        })
    ));
    c.set_swmr_write(false);
    assert!(c.flush().unwrap().is_complete());
    assert_eq!(c.get::<Plain>(Addr(0), &()).unwrap().read().0, 7);
}

/// An index block at 0 pointing to two chunks, each standing behind a proxy.
#[test]
fn chunk_proxies_hold_back_their_parents_until_written() {
    let (storage, c) = faulty_cache(1 << 20);
    c.insert(Addr(0), Block::new([0; 16])).unwrap();
    let p1 = c.create_proxy();
    let p2 = c.create_proxy();
    c.add_flush_dependency(Addr(0), p1).unwrap();
    c.add_flush_dependency(Addr(0), p2).unwrap();
    assert!(c.is_dirty(p1) && c.is_blocked(Addr(0)));

    let report = c.flush().unwrap();
    assert_eq!(report.blocked, vec![Addr(0)]);
    assert_eq!(report.dirty_proxies, vec![p1, p2]);
    assert!(storage.writes().is_empty());

    // The owner writes the first chunk on its own: still blocked by the second.
    c.chunk_written(p1).unwrap();
    assert!(!c.flush().unwrap().is_complete());

    // flush_with asks the owner to write what is left, then writes the index.
    let mut asked = Vec::new();
    let chunk_storage = storage.clone();
    let mut flusher =
        |proxies: &[ProxyId]| -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
            asked.extend_from_slice(proxies);
            chunk_storage.set_tag(Some("chunk"));
            chunk_storage.write_at(Addr(4096), &[0xcc; 64])?;
            chunk_storage.set_tag(None);
            Ok(())
        };
    let report = c.flush_with(&mut flusher).unwrap();
    assert!(report.is_complete());
    assert_eq!(report.written, 1);
    assert_eq!(asked, vec![p2]);
    let log = storage.writes();
    assert_eq!(log.len(), 2);
    assert_eq!(
        (log[0].tag.as_deref(), log[0].addr),
        (Some("chunk"), Addr(4096))
    );
    assert_eq!(log[1].addr, Addr(0));
    check_write_order(&c.take_trace()).unwrap();

    // A chunk modified again blocks the index's next change.
    c.mark_proxy_dirty(p2).unwrap();
    c.mark_dirty(Addr(0)).unwrap();
    assert!(!c.flush_entry(Addr(0)).unwrap());
    c.remove_proxy(p2).unwrap();
    assert!(c.flush_entry(Addr(0)).unwrap());
    assert!(matches!(c.chunk_written(p2), Err(Error::UnknownProxy(_))));
}

#[test]
fn a_failing_chunk_flusher_leaves_everything_dirty() {
    let (_, c) = mem_cache(1 << 20);
    c.insert(Addr(0), Block::new([0; 4])).unwrap();
    let p = c.create_proxy();
    c.add_flush_dependency(Addr(0), p).unwrap();
    let mut failing = |_: &[ProxyId]| -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        Err("disk full".into())
    };
    assert!(matches!(
        c.flush_with(&mut failing),
        Err(Error::ChunkFlush { .. })
    ));
    assert!(c.is_dirty(p) && c.is_dirty(Addr(0)));
}

#[test]
fn eviction_writes_dirty_entries_children_first_and_respects_the_budget() {
    let (storage, c) = faulty_cache(3 * 24);
    // A chain 0 -> 64 -> ... -> 448 -> proxy, built bottom-up: each new parent is inserted
    // while everything below it waits for the chunk, so nothing of the chain is evictable.
    let p = c.create_proxy();
    let mut child = Key::Proxy(p);
    for i in (0..8u64).rev() {
        c.insert(Addr(i * 64), Block::new([i as u8; 12])).unwrap();
        c.add_flush_dependency(Addr(i * 64), child).unwrap();
        child = Key::Entry(Addr(i * 64));
    }
    assert_eq!(c.resident().len(), 8, "a blocked entry was evicted");
    assert_eq!(c.flush().unwrap().blocked.len(), 8);
    assert!(storage.writes().is_empty());
    c.chunk_written(p).unwrap();
    assert!(c.flush().unwrap().is_complete());
    let written: Vec<Addr> = storage.writes().iter().map(|w| w.addr).collect();
    let expected: Vec<Addr> = (0..8u64).rev().map(|i| Addr(i * 64)).collect();
    assert_eq!(written, expected, "children first");
    // Clean now, the chain fits the budget again.
    assert!(c.resident_bytes() <= 3 * 24);
    for i in 0..8u64 {
        assert_eq!(payload(&c, i * 64), [i as u8; 12]);
    }
    assert!(c.resident_bytes() <= 3 * 24);
    let trace = c.take_trace();
    check_write_order(&trace).unwrap();
    // Every image reached storage in exactly one write.
    let logged: Vec<(Addr, usize)> = storage.writes().iter().map(|w| (w.addr, w.len)).collect();
    let traced: Vec<(Addr, usize)> = trace
        .events
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Written {
                key: Key::Entry(a),
                len,
                ..
            } => Some((*a, *len)),
            _ => None,
        })
        .collect();
    assert_eq!(logged, traced);
}

#[test]
fn dirty_entries_evicted_under_pressure_are_written_first() {
    let (mem, c) = mem_cache(2 * 24);
    for i in 0..6u64 {
        c.insert(Addr(i * 64), Block::new([i as u8; 12])).unwrap();
    }
    assert!(c.resident_bytes() <= 2 * 24);
    check_write_order(&c.take_trace()).unwrap();
    assert!(c.flush().unwrap().is_complete());
    let r = MetadataCache::new(Arc::new(mem), CacheConfig::default()).unwrap();
    for i in 0..6u64 {
        assert_eq!(payload(&r, i * 64), [i as u8; 12]);
    }
}

#[test]
fn evict_clean_keeps_dirty_pinned_and_blocked_entries() {
    let (_, c) = mem_cache(1 << 20);
    for i in 0..4u64 {
        c.insert(Addr(i * 64), Block::new([0; 4])).unwrap();
    }
    assert!(c.flush().unwrap().is_complete());
    c.pin(Addr(0)).unwrap();
    c.mark_dirty(Addr(64)).unwrap();
    c.add_flush_dependency(Addr(128), Addr(64)).unwrap();
    assert_eq!(c.evict_clean(), 1);
    assert_eq!(c.resident(), vec![Addr(0), Addr(64), Addr(128)]);
    check_write_order(&c.take_trace()).unwrap();
}

#[test]
fn dependencies_survive_eviction_of_clean_entries() {
    let (_, c) = mem_cache(1 << 20);
    c.insert(Addr(0), Block::new([0; 4])).unwrap();
    c.insert(Addr(64), Block::new([0; 4])).unwrap();
    c.add_flush_dependency(Addr(0), Addr(64)).unwrap();
    assert!(c.flush().unwrap().is_complete());
    c.evict(Addr(64)).unwrap();
    // Reloaded and modified, the child still holds its parent back.
    c.protect::<Block>(Addr(64), &()).unwrap().payload[0] = 1;
    assert!(c.is_blocked(Addr(0)));
    c.mark_dirty(Addr(0)).unwrap();
    assert!(c.flush().unwrap().is_complete());
    let trace = c.take_trace();
    assert_eq!(
        &trace.written()[2..],
        &[Addr(64), Addr(0)],
        "child before parent"
    );
    check_write_order(&trace).unwrap();
}

#[test]
fn readers_share_one_cache_across_threads() {
    let (_, w) = mem_cache(1 << 20);
    for i in 0..32u64 {
        w.insert(Addr(i * 64), Block::new([i as u8; 20])).unwrap();
    }
    assert!(w.flush().unwrap().is_complete());
    let storage = w.storage().clone();
    let shared = MetadataCache::new(
        storage,
        CacheConfig {
            max_bytes: 8 * 32,
            ..CacheConfig::default()
        },
    )
    .unwrap();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let shared = &shared;
            s.spawn(move || {
                for round in 0..50u64 {
                    let i = (round * 7 + t * 5) % 32;
                    let e = shared.get::<Block>(Addr(i * 64), &()).unwrap();
                    assert_eq!(e.read().payload, [i as u8; 20]);
                }
            });
        }
    });
    let st = shared.stats().of("TBLK");
    assert_eq!(st.hits + st.misses, 200);
}

#[test]
fn the_allocator_is_reachable_through_the_cache() {
    let mem = MemStorage::from_vec(vec![0; 48]);
    let c = MetadataCache::new(Arc::new(mem), CacheConfig::default()).unwrap();
    // The EOA starts at the storage's end.
    assert_eq!(c.allocator().eoa(), Addr(48));
    let a = c.allocator().allocate(16).unwrap();
    c.insert(a, Block::new([1; 4])).unwrap();
    assert!(c.flush().unwrap().is_complete());
    c.remove(a).unwrap();
    c.allocator().free(a, 16).unwrap();
    assert_eq!(c.allocator().eoa(), Addr(48));
}

#[test]
fn a_writer_and_readers_share_the_cache_without_deadlock() {
    let (mem, c) = mem_cache(6 * 32);
    // An index at 0 with fifteen children, under a budget that forces constant eviction.
    c.insert(Addr(0), Block::new([0; 20])).unwrap();
    for i in 1..16u64 {
        c.insert(Addr(i * 64), Block::new([0; 20])).unwrap();
        c.add_flush_dependency(Addr(0), Addr(i * 64)).unwrap();
    }
    assert!(c.flush().unwrap().is_complete());
    std::thread::scope(|s| {
        s.spawn(|| {
            for round in 1..=30u8 {
                for i in 1..16u64 {
                    c.protect::<Block>(Addr(i * 64), &()).unwrap().payload = vec![round; 20];
                }
                c.protect::<Block>(Addr(0), &()).unwrap().payload = vec![round; 20];
                if round % 3 == 0 {
                    assert!(c.flush().unwrap().is_complete());
                }
            }
        });
        for t in 0..3u64 {
            let c = &c;
            s.spawn(move || {
                for k in 0..400u64 {
                    let e = c.get::<Block>(Addr(((k + t) % 16) * 64), &()).unwrap();
                    let block = e.read();
                    // Each image is written whole: a reader never sees a mix of two rounds.
                    assert!(block.payload.iter().all(|&b| b == block.payload[0]));
                }
            });
        }
    });
    assert!(c.flush().unwrap().is_complete());
    check_write_order(&c.take_trace()).unwrap();
    let r = MetadataCache::new(Arc::new(mem), CacheConfig::default()).unwrap();
    for i in 0..16u64 {
        assert_eq!(payload(&r, i * 64), [30; 20]);
    }
}

#[test]
fn an_entry_being_modified_holds_its_parents_back() {
    let (_, c) = mem_cache(1 << 20);
    c.insert(Addr(0), Block::new([0; 4])).unwrap();
    c.insert(Addr(64), Block::new([0; 4])).unwrap();
    c.add_flush_dependency(Addr(0), Addr(64)).unwrap();
    assert!(c.flush().unwrap().is_complete());
    // The child is protected but not yet modified: it may become dirty at any moment.
    let child = c.protect::<Block>(Addr(64), &()).unwrap();
    c.mark_dirty(Addr(0)).unwrap();
    assert!(c.is_blocked(Addr(0)));
    assert_eq!(c.flush().unwrap().blocked, vec![Addr(0)]);
    assert!(matches!(c.evict(Addr(0)), Err(Error::Blocked { .. })));
    drop(child);
    assert!(c.flush().unwrap().is_complete());
    check_write_order(&c.take_trace()).unwrap();
}

#[test]
fn a_file_written_through_the_cache_reads_back_after_reopening() {
    use h5chunk_cache::FileStorage;
    let path = std::env::temp_dir().join(format!("h5chunk-cache-ops-{}.bin", std::process::id()));
    let open = || {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .unwrap()
    };
    {
        let c =
            MetadataCache::new(Arc::new(FileStorage::new(open())), CacheConfig::default()).unwrap();
        let a = c.allocator().allocate(Block::len_for(8) as u64).unwrap();
        c.insert(a, Block::new(*b"h5chunk!")).unwrap();
        assert!(c.flush().unwrap().is_complete());
        c.sync().unwrap();
    }
    let c = MetadataCache::new(Arc::new(FileStorage::new(open())), CacheConfig::default()).unwrap();
    assert_eq!(payload(&c, 0), b"h5chunk!");
    std::fs::remove_file(&path).unwrap();
}

/// A flush joins images that lie end to end into one write, in order, and the file holds what
/// separate writes would have left; images with a gap between them stay separate writes.
#[test]
fn a_flush_joins_adjacent_images_into_one_write() {
    let (storage, c) = faulty_cache(1 << 20);
    let len = Block::len_for(4) as u64;
    // Three blocks end to end (a child chain: 0 <- len <- 2len), and one after a gap.
    for (i, a) in [0, len, 2 * len, 10 * len].into_iter().enumerate() {
        c.insert(Addr(a), Block::new([i as u8; 4])).unwrap();
    }
    c.add_flush_dependency(Addr(len), Addr(0)).unwrap();
    c.add_flush_dependency(Addr(2 * len), Addr(len)).unwrap();
    assert!(c.flush().unwrap().is_complete());
    check_write_order(&c.take_trace()).unwrap();
    let writes = storage.writes();
    assert_eq!(writes.len(), 2, "{writes:?}");
    assert_eq!((writes[0].addr, writes[0].len), (Addr(0), 3 * len as usize));
    assert_eq!(writes[1].addr, Addr(10 * len));
    let fresh = MetadataCache::new(storage.clone(), CacheConfig::default()).unwrap();
    for (i, a) in [0, len, 2 * len, 10 * len].into_iter().enumerate() {
        assert_eq!(payload(&fresh, a), [i as u8; 4]);
    }
}

/// A reader's cache knows the file's length from when it last asked; entries written after
/// that (by another handle, as a SWMR writer does) are still read, including one whose full
/// image reaches past the length known when its first bytes were read, and a read past the
/// real end is still a clean error.
#[test]
fn reads_see_a_file_that_grew_since_the_cache_opened() {
    let mem = MemStorage::new();
    let writer = MetadataCache::new(Arc::new(mem.clone()), CacheConfig::default()).unwrap();
    writer.insert(Addr(0x40), Block::new([1u8; 4])).unwrap();
    assert!(writer.flush().unwrap().is_complete());
    // Free space after the block, into which an entry straddling the end goes later.
    mem.set_len(0x200).unwrap();
    let reader = MetadataCache::new(Arc::new(mem.clone()), CacheConfig::default()).unwrap();
    assert_eq!(
        reader.get::<Block>(Addr(0x40), &()).unwrap().read().payload,
        [1u8; 4]
    );
    let known = mem.len().unwrap();

    // Written after the reader opened: one entry wholly past the old end, one straddling it
    // whose first 16 bytes lie within it.
    writer
        .insert(Addr(known + 0x100), Block::new([2u8; 100]))
        .unwrap();
    let straddle = Addr(known - 16);
    mem.set_len(known + 0x400).unwrap();
    assert!(writer.flush().unwrap().is_complete());
    writer.insert(straddle, Block::new([3u8; 60])).unwrap();
    assert!(writer.flush().unwrap().is_complete());

    assert_eq!(
        reader.get::<Block>(straddle, &()).unwrap().read().payload,
        [3u8; 60]
    );
    assert_eq!(
        reader
            .get::<Block>(Addr(known + 0x100), &())
            .unwrap()
            .read()
            .payload,
        [2u8; 100]
    );
    let end = mem.len().unwrap();
    assert!(reader.get::<Block>(Addr(end + 8), &()).is_err());
}
