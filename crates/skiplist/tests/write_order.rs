//! The append protocol of the paper's sections VII and XI as cache flush dependencies
//! (docs/format/skiplist.md §7): supernodes reach the file before the tail that makes them
//! visible, a written supernode is never rewritten to gain a forward pointer, and a crash
//! after any write leaves a file whose reader sees a consistent prefix.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::collections::BTreeMap;
use std::sync::Arc;

use h5chunk_cache::{
    CacheConfig, CacheEntry, FaultyStorage, MemStorage, MetadataCache, check_write_order,
};
use h5chunk_format::chunk_record::ChunkRecord;
use h5chunk_format::{Addr, Sizes};
use h5chunk_skiplist::{Params, SkipList, Supernode, Tail};

const STEPS: u64 = 40;
const GROUP: u32 = 2;

fn params() -> Params {
    Params {
        steps_per_supernode: 3,
        group_len: GROUP,
        max_height: 8,
        ..Params::default()
    }
}

/// The chunk address the scenario gives slot `i`.
fn chunk(i: u64) -> Addr {
    Addr(0x10_0000 + 0x100 * i)
}

/// The paper's append scenario: one step at a time, extend, record the step's chunks, flush.
/// Returns the tail's address.
fn append_scenario(cache: &MetadataCache, faulty: Option<&FaultyStorage<MemStorage>>) -> Addr {
    let list = SkipList::create(cache, Sizes::DEFAULT, params()).unwrap();
    assert!(cache.flush().unwrap().is_complete());
    for step in 0..STEPS {
        if let Some(f) = faulty {
            f.set_tag(Some(&format!("step {step}")));
        }
        list.extend(cache, step + 1).unwrap();
        for j in 0..u64::from(GROUP) {
            let i = list.slot_index(step, j).unwrap();
            list.insert(
                cache,
                i,
                ChunkRecord {
                    addr: Some(chunk(i)),
                    size: 0,
                    mask: 0,
                },
            )
            .unwrap();
        }
        assert!(cache.flush().unwrap().is_complete());
    }
    list.addr()
}

fn writer(storage: Arc<FaultyStorage<MemStorage>>, trace: bool) -> MetadataCache {
    let config = CacheConfig {
        record_trace: trace,
        ..CacheConfig::default()
    };
    let cache = MetadataCache::new(storage, config).unwrap();
    cache.set_swmr_write(true);
    cache
}

#[test]
fn flush_order_is_children_first() {
    let storage = Arc::new(FaultyStorage::new(MemStorage::new()));
    let cache = writer(storage.clone(), true);
    let tail = append_scenario(&cache, Some(&storage));
    check_write_order(&cache.take_trace()).expect("supernodes before the tail");
    // Every flush wrote the tail last.
    let writes = storage.writes();
    let mut by_tag: BTreeMap<String, Vec<Addr>> = BTreeMap::new();
    for w in &writes {
        if let Some(t) = &w.tag {
            by_tag.entry(t.clone()).or_default().push(w.addr);
        }
    }
    assert_eq!(by_tag.len(), STEPS as usize);
    for (tag, addrs) in by_tag {
        assert_eq!(addrs.last(), Some(&tail), "{tag}: the tail is written last");
        assert_eq!(addrs.iter().filter(|&&a| a == tail).count(), 1, "{tag}");
    }
}

#[test]
fn written_supernodes_are_never_rewritten_for_forward_pointers() {
    let storage = Arc::new(FaultyStorage::new(MemStorage::new()));
    let cache = writer(storage.clone(), false);
    // Extend only, one supernode per flush: every supernode is written exactly once, though
    // every one of them has forward pointers to supernodes created after it.
    let p = Params {
        steps_per_supernode: 1,
        max_height: 8,
        ..Params::default()
    };
    let list = SkipList::create(&cache, Sizes::DEFAULT, p).unwrap();
    for n in 1..=100u64 {
        list.extend(&cache, n).unwrap();
        assert!(cache.flush().unwrap().is_complete());
    }
    let mut count: BTreeMap<Addr, usize> = BTreeMap::new();
    for w in storage.writes() {
        *count.entry(w.addr).or_default() += 1;
    }
    assert_eq!(count.remove(&list.addr()), Some(100));
    assert_eq!(count.len(), 100);
    assert!(count.values().all(|&c| c == 1));
    assert_eq!(cache.stats().of(Supernode::TYPE_NAME).writes, 100);

    // In the append scenario, only the last supernode is rewritten (to record chunks).
    let storage = Arc::new(FaultyStorage::new(MemStorage::new()));
    let cache = writer(storage.clone(), false);
    let tail = append_scenario(&cache, Some(&storage));
    let reader =
        MetadataCache::new(Arc::new(storage.inner().clone()), CacheConfig::default()).unwrap();
    let list = SkipList::open(&reader, tail, Sizes::DEFAULT).unwrap();
    let mut last_step_written: BTreeMap<Addr, u64> = BTreeMap::new();
    for w in storage.writes() {
        if let Some(step) = w.tag.as_deref().and_then(|t| t.strip_prefix("step ")) {
            last_step_written.insert(w.addr, step.parse().unwrap());
        }
    }
    let per = u64::from(params().steps_per_supernode);
    for k in 1..=list.supernodes(&reader).unwrap() {
        let at = list
            .locate(&reader, h5chunk_skiplist::Lookup::Inner, k)
            .unwrap();
        // Supernode k covers steps (k-1)·S .. k·S - 1 and is last no later than that.
        assert!(
            last_step_written[&at] < k * per,
            "supernode {k} rewritten after it stopped being last"
        );
    }
}

/// What a reader of the crashed file sees: `None` if the tail was never completely written.
fn read_back(storage: &MemStorage, tail: Addr) -> Result<Option<(u64, Vec<ChunkRecord>)>, String> {
    let reader = MetadataCache::new(Arc::new(storage.clone()), CacheConfig::default()).unwrap();
    // A tail that was never written is all zeros, or beyond the end of the file.
    let len = Tail::encoded_len(Sizes::DEFAULT, params().max_height) as u64;
    if storage
        .to_vec()
        .get(tail.get() as usize..(tail.get() + len) as usize)
        .is_none_or(|b| b.iter().all(|&x| x == 0))
    {
        return Ok(None);
    }
    let list = SkipList::open(&reader, tail, Sizes::DEFAULT).map_err(|e| e.to_string())?;
    let steps = list.steps(&reader).map_err(|e| e.to_string())?;
    let mut records = Vec::new();
    list.for_each(&reader, |_, r| records.push(r))
        .map_err(|e| e.to_string())?;
    for (i, r) in records.iter().enumerate() {
        let got = list.get(&reader, i as u64).map_err(|e| e.to_string())?;
        assert_eq!(got, *r);
    }
    Ok(Some((steps, records)))
}

/// Crash after every write in turn (the write whole, or lost, or torn in half) and check that
/// a reader sees a consistent prefix: some number of whole steps, each with its chunks, and
/// never a step whose tail entry was written before its supernode.
fn crash_everywhere(break_order: bool) -> (usize, usize) {
    let clean = Arc::new(FaultyStorage::new(MemStorage::new()));
    let cache = writer(clean.clone(), false);
    append_scenario(&cache, None);
    let total = clean.writes().len() as u64;
    let (mut consistent, mut inconsistent) = (0, 0);
    for n in 1..=total {
        for keep in [usize::MAX, 0, 20] {
            let storage = Arc::new(FaultyStorage::new(MemStorage::new()));
            storage.crash_at_write(n, keep);
            let cache = writer(storage.clone(), false);
            if break_order {
                cache.testing_break_flush_order(true);
            }
            let tail = append_scenario(&cache, None);
            assert!(storage.crashed());
            match read_back(storage.inner(), tail) {
                Ok(None) => consistent += 1,
                Ok(Some((steps, records))) => {
                    let expect: Vec<ChunkRecord> = (0..steps * u64::from(GROUP))
                        .map(|i| ChunkRecord {
                            addr: Some(chunk(i)),
                            size: 0,
                            mask: 0,
                        })
                        .collect();
                    if steps <= STEPS && records == expect {
                        consistent += 1;
                    } else {
                        inconsistent += 1;
                    }
                }
                // Only a torn write may be detected, by its checksum; anything else is a
                // reader following a pointer into bytes not yet written.
                Err(e) if keep == 20 && e.contains("checksum mismatch") => consistent += 1,
                Err(_) => inconsistent += 1,
            }
        }
    }
    eprintln!(
        "crash points: {total} writes x 3 modes; consistent {consistent}, inconsistent {inconsistent} (flush order broken: {break_order})"
    );
    (consistent, inconsistent)
}

#[test]
fn crash_after_every_write_leaves_a_consistent_prefix() {
    let (consistent, inconsistent) = crash_everywhere(false);
    assert_eq!(inconsistent, 0);
    assert!(consistent > 3 * STEPS as usize);
}

/// The same crashes with the cache's flush order broken (parents first) do expose readers to
/// unwritten supernodes: the test above has teeth.
#[test]
fn crash_test_detects_a_broken_flush_order() {
    let (_, inconsistent) = crash_everywhere(true);
    assert!(inconsistent > 0);
}

/// A reader thread with its own cache refreshes and reads the whole list while the writer
/// appends: every view is a prefix of whole steps with their chunks, and views only grow.
#[test]
fn concurrent_reader_sees_growing_consistent_prefixes() {
    use std::sync::atomic::{AtomicBool, Ordering};

    let storage = MemStorage::new();
    let w = MetadataCache::new(Arc::new(storage.clone()), CacheConfig::default()).unwrap();
    w.set_swmr_write(true);
    let list = SkipList::create(&w, Sizes::DEFAULT, params()).unwrap();
    assert!(w.flush().unwrap().is_complete());
    let tail = list.addr();
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (storage, done) = (storage.clone(), done.clone());
        std::thread::spawn(move || {
            let r = MetadataCache::new(Arc::new(storage), CacheConfig::swmr_reader()).unwrap();
            let (mut views, mut last) = (0u64, 0u64);
            loop {
                let finished = done.load(Ordering::Acquire);
                r.evict_clean();
                let list = SkipList::open(&r, tail, Sizes::DEFAULT).unwrap();
                let mut records = Vec::new();
                list.for_each(&r, |i, rec| records.push((i, rec))).unwrap();
                let steps = records.len() as u64 / u64::from(GROUP);
                assert_eq!(records.len() as u64, steps * u64::from(GROUP));
                assert!(
                    steps >= last,
                    "the view shrank from {last} to {steps} steps"
                );
                for (i, rec) in records {
                    assert_eq!(
                        rec.addr,
                        Some(chunk(i)),
                        "slot {i} in a view of {steps} steps"
                    );
                }
                last = steps;
                views += 1;
                if finished {
                    return (views, last);
                }
            }
        })
    };
    for step in 0..STEPS {
        list.extend(&w, step + 1).unwrap();
        for j in 0..u64::from(GROUP) {
            let i = list.slot_index(step, j).unwrap();
            list.insert(
                &w,
                i,
                ChunkRecord {
                    addr: Some(chunk(i)),
                    size: 0,
                    mask: 0,
                },
            )
            .unwrap();
        }
        assert!(w.flush().unwrap().is_complete());
        // Let the reader take views in between.
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    done.store(true, Ordering::Release);
    let (views, last) = reader.join().unwrap();
    eprintln!("reader took {views} views");
    assert!(views >= 1);
    assert_eq!(last, STEPS);
}
