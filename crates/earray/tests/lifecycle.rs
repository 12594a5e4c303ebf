//! Behaviour of the array over a memory storage: lazy creation, libhdf5's statistics and block
//! offsets, bytes used, delete, the SWMR write order and the cost of appends in writes.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::*;
use h5chunk_cache::{
    CacheConfig, FaultyStorage, MemStorage, MetadataCache, Storage, TraceEvent, check_write_order,
};
use h5chunk_earray::{ChunkAddrs, Error, ExtensibleArray};
use h5chunk_format::Addr;
use h5chunk_format::earray::{
    DataBlock, Geometry, Header, IndexBlock, Location, Params, Stats, SuperBlock,
};

/// The statistics libhdf5 keeps after elements `0..n` were set in order (n ≥ 1).
fn expected_append_stats(n: u64, element_size: u8) -> Stats {
    let g = Geometry::new(Params::CHUNK_INDEX).unwrap();
    let iblk = u64::from(Params::CHUNK_INDEX.idx_blk_elmts);
    let mut s = Stats {
        max_idx_set: n,
        nelmts: iblk,
        ..Stats::default()
    };
    for u in 0..g.nsblks() {
        let r = g.row(u).unwrap();
        if iblk + r.start_idx >= n {
            break;
        }
        if u >= g.iblk_nsblks() {
            s.nsuper_blks += 1;
            s.super_blk_size += g.super_block_len(S, u) as u64;
        }
        for d in 0..r.ndblks {
            if iblk + r.start_idx + d * r.dblk_nelmts >= n {
                break;
            }
            s.ndata_blks += 1;
            s.data_blk_size += g.data_block_allocated_len(S, u, element_size);
            s.nelmts += r.dblk_nelmts;
        }
    }
    s
}

/// Distinct data block pages holding elements `0..n`.
fn pages_touched(n: u64) -> u64 {
    let g = Geometry::new(Params::CHUNK_INDEX).unwrap();
    let mut pages = BTreeSet::new();
    for i in 0..n {
        if let Some(Location::DataBlock { sblk, dblk, elmt }) = g.locate(i)
            && g.row(sblk).unwrap().npages > 0
        {
            pages.insert((sblk, dblk, elmt / g.page_nelmts()));
        }
    }
    pages.len() as u64
}

#[test]
fn statistics_match_libhdf5_after_13000_appends() {
    // The header libhdf5 1.14.6 wrote for 13 000 chunks (docs/format/chunk-index-format.md §6.2).
    let (_, cache) = new_cache();
    let mut ea = new_addr_array(&cache);
    for i in 0..13_000 {
        ea.append(&cache, &Some(chunk_addr(i))).unwrap();
    }
    let libhdf5 = Stats {
        nsuper_blks: 6,
        super_blk_size: 580,
        ndata_blks: 56,
        data_blk_size: 107_600,
        max_idx_set: 13_000,
        nelmts: 13_300,
    };
    assert_eq!(ea.stats(&cache).unwrap(), libhdf5);
    assert_eq!(expected_append_stats(13_000, 8), libhdf5);
}

#[test]
fn statistics_match_libhdf5_for_the_paged_fixture() {
    // ea_paged.h5: 140 000 chunks written by libhdf5, crossing into paged data blocks. Its
    // header is found by signature so that this test needs no file navigation.
    let path = h5chunk_testkit::fixtures::dir().join("ea_paged.h5");
    let Ok(bytes) = std::fs::read(&path) else {
        eprintln!(
            "SKIPPED: {} absent (set H5CHUNK_FIXTURES, as cargo xtask test does)",
            path.display()
        );
        return;
    };
    let at = bytes.windows(4).position(|w| w == b"EAHD").unwrap();
    let h = Header::decode(&bytes[at..], Addr(at as u64), S).unwrap();
    let (_, cache) = new_cache();
    let mut ea = new_addr_array(&cache);
    for i in 0..140_000 {
        ea.append(&cache, &Some(chunk_addr(i))).unwrap();
    }
    assert_eq!(ea.stats(&cache).unwrap(), h.stats);
    assert_eq!(h.stats, expected_append_stats(140_000, 8));
}

#[test]
fn blocks_are_created_lazily_on_the_path_only() {
    let (_, cache) = new_cache();
    let mut ea = new_addr_array(&cache);
    assert_eq!(ea.header(&cache).unwrap().index_block, None);
    assert_eq!(ea.get(&cache, 12_345).unwrap(), None);
    assert_eq!(ea.stats(&cache).unwrap(), Stats::default());
    ea.insert(&cache, 12_345, &Some(Addr(117_277))).unwrap();
    let g = ea.geometry().clone();
    // Index block, super block of row 9 and one of its data blocks: nothing else.
    assert_eq!(
        ea.stats(&cache).unwrap(),
        Stats {
            nsuper_blks: 1,
            super_blk_size: g.super_block_len(S, 9) as u64,
            ndata_blks: 1,
            data_blk_size: g.data_block_allocated_len(S, 9, 8),
            max_idx_set: 12_346,
            nelmts: 4 + 512,
        }
    );
    // A far index in a paged row: one super block, one data block (at full size), one page.
    ea.insert(&cache, 300_000, &Some(Addr(0x9999))).unwrap();
    let st = cache.stats();
    assert_eq!(st.of("EASB").inserts, 2);
    assert_eq!(st.of("EADB").inserts, 2);
    assert_eq!(st.of("EADB page").inserts, 1);
    assert_eq!(ea.get(&cache, 300_000).unwrap(), Some(Addr(0x9999)));
    assert_eq!(ea.get(&cache, 300_001).unwrap(), None);
    assert_eq!(ea.get(&cache, 299_000).unwrap(), None); // same block, page never written
    assert_eq!(ea.get(&cache, 12_345).unwrap(), Some(Addr(117_277)));
    assert_eq!(
        ea.to_vec(&cache).unwrap(),
        vec![(12_345, Some(Addr(117_277))), (300_000, Some(Addr(0x9999)))]
    );
}

#[test]
fn block_offsets_copy_libhdf5_and_blocks_start_undefined() {
    let (storage, cache) = new_cache();
    let mut ea = new_addr_array(&cache);
    for i in 0..2_100 {
        ea.append(&cache, &Some(chunk_addr(i))).unwrap();
    }
    assert!(cache.flush().unwrap().is_complete());
    let g = ea.geometry().clone();
    let bytes = storage.to_vec();
    let h = ea.header(&cache).unwrap();
    let ib_at = h.index_block.unwrap();
    let ib = IndexBlock::decode(&bytes[ib_at.get() as usize..], ib_at, S, &g, 8).unwrap();
    // Quirk Q1: the stored offsets of the index block's data blocks, as libhdf5 writes them.
    let offsets: Vec<u64> = ib
        .dblk_addrs
        .iter()
        .zip([0usize, 1, 2, 2, 3, 3])
        .map(|(a, u)| {
            let a = a.unwrap();
            DataBlock::decode(&bytes[a.get() as usize..], a, S, &g, u, 8)
                .unwrap()
                .block_offset
        })
        .collect();
    assert_eq!(offsets, [0, 48, 112, 144, 368, 432]);
    // Super blocks carry start_idx(u), their data blocks the true offset; unused pointers
    // are undefined.
    let sb_at = ib.sblk_addrs[2].unwrap(); // row 6
    let sb = SuperBlock::decode(&bytes[sb_at.get() as usize..], sb_at, S, &g, 6).unwrap();
    assert_eq!(sb.block_offset, g.row(6).unwrap().start_idx);
    // Elements 2036..2099 sit in row 7 (super block pointer 3); later rows do not exist and
    // read as undefined.
    assert!(ib.sblk_addrs[3].is_some());
    assert_eq!(ib.sblk_addrs[4..], vec![None; g.nsblk_addrs() - 4][..]);
    assert_eq!(ea.get(&cache, 2_100).unwrap(), None);
    let db_at = sb.dblk_addrs[1].unwrap();
    let db = DataBlock::decode(&bytes[db_at.get() as usize..], db_at, S, &g, 6, 8).unwrap();
    assert_eq!(db.block_offset, g.row(6).unwrap().start_idx + 128);
}

#[test]
fn bytes_used_and_delete_account_for_every_byte() {
    let (_, cache) = new_cache();
    let mut ea = new_filtered_array(&cache);
    for i in (0..140_000).step_by(7) {
        ea.insert(&cache, i, &record(i)).unwrap();
    }
    ea.insert(&cache, 600_000, &record(1)).unwrap();
    let eoa = cache.allocator().eoa().get();
    assert_eq!(ea.bytes_used(&cache).unwrap(), eoa - RESERVED);
    assert!(cache.flush().unwrap().is_complete());
    let header = ea.addr();
    ea.delete(&cache).unwrap();
    assert_eq!(cache.allocator().eoa(), Addr(RESERVED));
    assert_eq!(cache.allocator().free_space(), 0);
    assert!(cache.resident().is_empty());
    assert!(cache.flush_children(header).is_empty());
}

#[test]
fn open_checks_the_element_class() {
    let (storage, cache) = new_cache();
    let mut ea = new_filtered_array(&cache);
    ea.append(&cache, &record(0)).unwrap();
    assert!(cache.flush().unwrap().is_complete());
    let r = reader(&storage);
    let err = ExtensibleArray::open(&r, ea.addr(), S, addrs()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Mismatch {
                found_client: 1,
                expected_client: 0,
                ..
            }
        ),
        "{err}"
    );
    let ro = ExtensibleArray::open(&r, ea.addr(), S, filtered()).unwrap();
    assert_eq!(ro.get(&r, 0).unwrap(), record(0));
}

#[test]
fn rejects_indices_beyond_the_maximum() {
    let (_, cache) = new_cache();
    let mut ea = new_addr_array(&cache);
    let max = 1u64 << 32;
    assert_eq!(ea.max_len(), max);
    let err = ea.insert(&cache, max, &Some(Addr(1))).unwrap_err();
    assert!(matches!(err, Error::OutOfRange { index, .. } if index == max));
    assert!(matches!(
        ea.get(&cache, u64::MAX),
        Err(Error::OutOfRange { .. })
    ));
    // The last index is fine: its path is created (row 28, a paged data block).
    ea.insert(&cache, max - 1, &Some(Addr(1))).unwrap();
    assert_eq!(ea.get(&cache, max - 1).unwrap(), Some(Addr(1)));
    assert_eq!(ea.len(&cache).unwrap(), max);
}

/// Where each written key sits in the trace.
fn write_positions(cache: &MetadataCache) -> Vec<Addr> {
    let trace = cache.take_trace();
    check_write_order(&trace).unwrap();
    trace.written()
}

#[test]
fn write_order_is_data_block_super_block_index_block_header() {
    let (_, cache) = new_cache();
    let mut ea = new_addr_array(&cache);
    for i in 0..244 {
        ea.append(&cache, &Some(chunk_addr(i))).unwrap();
    }
    assert!(cache.flush().unwrap().is_complete());
    cache.take_trace();
    // Index 244 opens row 4: a new super block and data block.
    ea.append(&cache, &Some(chunk_addr(244))).unwrap();
    assert!(cache.flush().unwrap().is_complete());
    let written = write_positions(&cache);
    let ib = ea.header(&cache).unwrap().index_block.unwrap();
    assert_eq!(written.len(), 4, "{written:?}");
    assert_eq!(written[2], ib);
    assert_eq!(written[3], ea.addr());
    let sb = written[1];
    assert_eq!(cache.flush_children(sb), vec![written[0].into()]);

    // Index 131 060 opens row 13: super block, paged data block prefix and its first page.
    for i in 245..131_061 {
        ea.append(&cache, &Some(chunk_addr(i))).unwrap();
    }
    cache.take_trace();
    assert!(cache.flush().unwrap().is_complete());
    let written = write_positions(&cache);
    let pos = |a: Addr| written.iter().position(|&w| w == a).unwrap();
    assert_eq!(*written.last().unwrap(), ea.addr());
    let ib_pos = pos(ib);
    for child in cache.flush_children(ib) {
        let h5chunk_cache::Key::Entry(c) = child else {
            panic!()
        };
        if let Some(p) = written.iter().position(|&w| w == c) {
            assert!(p < ib_pos);
            for grandchild in cache.flush_children(c) {
                let h5chunk_cache::Key::Entry(g) = grandchild else {
                    panic!()
                };
                if let Some(q) = written.iter().position(|&w| w == g) {
                    assert!(q < p, "a page or data block after its super block");
                }
            }
        }
    }
    assert_eq!(ea.get(&cache, 131_060).unwrap(), Some(chunk_addr(131_060)));
}

#[test]
fn the_write_order_checker_sees_a_broken_order() {
    // Proves the dependencies are registered: the cache's deliberately wrong order (parents
    // first) is caught by the checker on this array's blocks.
    let (_, cache) = new_cache();
    let mut ea = new_addr_array(&cache);
    cache.testing_break_flush_order(true);
    for i in 0..300 {
        ea.append(&cache, &Some(chunk_addr(i))).unwrap();
    }
    let _ = cache.flush().unwrap();
    assert!(check_write_order(&cache.take_trace()).is_err());
}

#[test]
fn insert_with_proxy_waits_for_the_chunk_proxy() {
    let (_, cache) = new_cache();
    let mut ea = new_addr_array(&cache);
    let proxy = cache.create_proxy();
    ea.insert_with_proxy(&cache, 100, &Some(Addr(0x5000)), proxy)
        .unwrap();
    let report = cache.flush().unwrap();
    assert_eq!(report.dirty_proxies, vec![proxy]);
    // Header, index block and the data block wait for the chunk.
    assert_eq!(report.blocked.len(), 3, "{report:?}");
    assert!(report.blocked.contains(&ea.addr()));
    let report = cache
        .flush_with(&mut |_: &[h5chunk_cache::ProxyId]| {
            Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
        })
        .unwrap();
    assert!(report.is_complete());
    check_write_order(&cache.take_trace()).unwrap();
}

/// Appends `range` to `ea`, flushes, and returns the writes per type made by the flush(es).
fn append_and_count(
    cache: &MetadataCache,
    ea: &mut ExtensibleArray<ChunkAddrs>,
    range: std::ops::Range<u64>,
    flush_every: u64,
) -> u64 {
    cache.reset_stats();
    for i in range {
        ea.append(cache, &Some(chunk_addr(i))).unwrap();
        if (i + 1) % flush_every == 0 {
            assert!(cache.flush().unwrap().is_complete());
        }
    }
    assert!(cache.flush().unwrap().is_complete());
    cache.stats().total().writes
}

#[test]
fn appends_cost_constant_metadata_writes_per_element() {
    const N: u64 = 140_000;
    let (_, cache) = new_cache();
    let mut ea = new_addr_array(&cache);
    let writes = append_and_count(&cache, &mut ea, 0..N, u64::MAX);
    let st = ea.stats(&cache).unwrap();
    let pages = pages_touched(N);
    let by = cache.stats();
    // One flush writes every block exactly once.
    assert_eq!(by.of("EAHD").writes, 1);
    assert_eq!(by.of("EAIB").writes, 1);
    assert_eq!(by.of("EASB").writes, st.nsuper_blks);
    assert_eq!(by.of("EADB").writes, st.ndata_blks);
    assert_eq!(by.of("EADB page").writes, pages);
    assert_eq!(writes, 2 + st.nsuper_blks + st.ndata_blks + pages);
    eprintln!(
        "MEASURED appends {N}, one flush: {writes} metadata writes ({:.5} per element)",
        writes as f64 / N as f64
    );
    check_write_order(&cache.take_trace()).unwrap();

    // Flushing every 1 000 appends: each flush rewrites at most the header, the index block,
    // one super block and the (at most two) data blocks or pages being filled.
    let (_, cache) = new_cache();
    let mut ea = new_addr_array(&cache);
    let writes = append_and_count(&cache, &mut ea, 0..N, 1_000);
    let blocks = 2 + st.nsuper_blks + st.ndata_blks + pages;
    let flushes = N / 1_000 + 1;
    assert!(
        writes <= blocks + 5 * flushes,
        "{writes} > {blocks} + 5 × {flushes}"
    );
    eprintln!(
        "MEASURED appends {N}, flush every 1000: {writes} metadata writes ({:.5} per element)",
        writes as f64 / N as f64
    );
    // Flushing after every append: a bounded number of writes each (header and the block
    // holding the element, plus the parents of blocks just created).
    let (_, cache) = new_cache();
    let mut ea = new_addr_array(&cache);
    let writes = append_and_count(&cache, &mut ea, 0..20_000, 1);
    assert!(writes <= 2 * 20_000 + 3 * 200, "{writes}");
    eprintln!(
        "MEASURED appends 20000, flush every append: {writes} metadata writes ({:.3} per element)",
        writes as f64 / 20_000.0
    );
    check_write_order(&cache.take_trace()).unwrap();
}

#[test]
fn eviction_under_a_small_budget_keeps_the_order_and_the_values() {
    let storage = MemStorage::new();
    let config = CacheConfig {
        record_trace: true,
        max_bytes: 64 << 10,
        ..CacheConfig::default()
    };
    let cache = MetadataCache::new(Arc::new(storage.clone()), config).unwrap();
    cache.allocator().set_eoa(Addr(RESERVED));
    let mut ea = new_filtered_array(&cache);
    for i in 0..40_000 {
        ea.append(&cache, &record(i)).unwrap();
    }
    ea.insert(&cache, 200_000, &record(7)).unwrap();
    assert!(cache.stats().total().evictions > 0);
    for i in (0..40_000).step_by(97) {
        assert_eq!(ea.get(&cache, i).unwrap(), record(i));
    }
    assert!(cache.flush().unwrap().is_complete());
    check_write_order(&cache.take_trace()).unwrap();
    let r = reader(&storage);
    let ro = ExtensibleArray::open(&r, ea.addr(), S, filtered()).unwrap();
    let set = ro.to_vec(&r).unwrap();
    assert_eq!(set.len(), 40_001);
    assert!(set.iter().take(40_000).all(|&(i, v)| v == record(i)));
}

/// Append 240 elements and flush; then append up to 2 500 and replay that second flush with a
/// crash at each of its writes in turn (the write and every later one lost). For each crash
/// point: whether a fresh reader found every element below the visible count in place.
fn crash_outcomes(broken_order: bool) -> Vec<(u64, bool)> {
    let base = MemStorage::new();
    let faulty = Arc::new(FaultyStorage::new(base.clone()));
    let cache = cache_over(faulty.clone());
    let mut ea = new_addr_array(&cache);
    for i in 0..240 {
        ea.append(&cache, &Some(chunk_addr(i))).unwrap();
    }
    assert!(cache.flush().unwrap().is_complete());
    let snapshot = base.to_vec();
    faulty.clear_writes();
    for i in 240..2_500 {
        ea.append(&cache, &Some(chunk_addr(i))).unwrap();
    }
    assert!(cache.flush().unwrap().is_complete());
    let nwrites = faulty.writes().len() as u64;
    assert!(nwrites > 10);
    let header = ea.addr();
    let mut out = Vec::new();
    for n in 1..=nwrites {
        let base = MemStorage::from_vec(snapshot.clone());
        let faulty = Arc::new(FaultyStorage::new(base.clone()));
        let cache = cache_over(faulty.clone() as Arc<dyn Storage>);
        cache.allocator().set_eoa(Addr(snapshot.len() as u64));
        cache.testing_break_flush_order(broken_order);
        let mut ea = ExtensibleArray::open(&cache, header, S, addrs()).unwrap();
        for i in 240..2_500 {
            ea.append(&cache, &Some(chunk_addr(i))).unwrap();
        }
        faulty.crash_at_write(n, 0);
        let _ = cache.flush().unwrap();
        assert!(faulty.crashed());
        let r = reader(&base);
        let ro = ExtensibleArray::open(&r, header, S, addrs()).unwrap();
        let visible = ro.len(&r).unwrap();
        let ok = (0..visible).all(|i| ro.get(&r, i).ok() == Some(Some(chunk_addr(i))));
        out.push((n, ok));
    }
    out
}

#[test]
fn a_crash_during_a_flush_leaves_a_readable_prefix() {
    // SWMR consequence of the order: after a crash at any write of a flush, what the file's
    // header makes visible (max_idx_set) resolves to written blocks holding the right values.
    let outcomes = crash_outcomes(false);
    let bad: Vec<u64> = outcomes.iter().filter(|o| !o.1).map(|o| o.0).collect();
    assert!(
        bad.is_empty(),
        "crash points leaving dangling elements: {bad:?}"
    );
    // The control: with the cache's deliberately wrong order (parents first), some crash
    // point leaves counted elements that a reader cannot resolve.
    assert!(crash_outcomes(true).iter().any(|o| !o.1));
}

#[test]
fn trace_records_dependencies_of_table_7() {
    // Header → index block → super block → data block and page; nothing else.
    let (_, cache) = new_cache();
    let mut ea = new_addr_array(&cache);
    ea.insert(&cache, 140_000, &Some(Addr(1))).unwrap();
    ea.insert(&cache, 10, &Some(Addr(2))).unwrap();
    let deps: Vec<(h5chunk_cache::Key, h5chunk_cache::Key)> = cache
        .take_trace()
        .events
        .into_iter()
        .filter_map(|e| match e {
            TraceEvent::DependencyAdded { parent, child } => Some((parent, child)),
            _ => None,
        })
        .collect();
    // iblock, sblock 13, its data block, its page; then row 0's data block.
    assert_eq!(deps.len(), 5, "{deps:?}");
    assert_eq!(deps[0].0, ea.addr().into());
    let ib = ea.header(&cache).unwrap().index_block.unwrap();
    assert_eq!(deps[1].0, ib.into());
    assert_eq!(deps[2].0, deps[1].1);
    assert_eq!(deps[3].0, deps[1].1);
    assert_eq!(deps[4].0, ib.into());
}

#[test]
fn a_concurrent_reader_sees_every_counted_element() {
    // A SWMR reader polling the file while the writer appends and flushes: whatever count it
    // finds in the header, every element below it is in place (the reader reads the header
    // first, so every block it loads afterwards is at least as new).
    const N: u64 = 30_000;
    let storage = MemStorage::new();
    let cache = cache_over(Arc::new(storage.clone()));
    // SWMR-write mode: the cache refuses to write any entry without a checksum.
    cache.set_swmr_write(true);
    let mut ea = new_addr_array(&cache);
    ea.append(&cache, &Some(chunk_addr(0))).unwrap();
    assert!(cache.flush().unwrap().is_complete());
    let header = ea.addr();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let reader_storage = storage.clone();
        let done = &done;
        let reader = scope.spawn(move || {
            let mut polls = 0u64;
            let mut last = 0;
            loop {
                let finished = done.load(std::sync::atomic::Ordering::Acquire);
                let r = MetadataCache::new(
                    Arc::new(reader_storage.clone()),
                    CacheConfig::swmr_reader(),
                )
                .unwrap();
                let ro = ExtensibleArray::open(&r, header, S, addrs()).unwrap();
                let len = ro.len(&r).unwrap();
                assert!(len >= last, "the count went back from {last} to {len}");
                for i in [0, len / 3, len / 2, len.saturating_sub(2), len - 1] {
                    assert_eq!(ro.get(&r, i).unwrap(), Some(chunk_addr(i)), "{i} < {len}");
                }
                last = len;
                polls += 1;
                if finished {
                    return (polls, last);
                }
            }
        });
        for i in 1..N {
            ea.append(&cache, &Some(chunk_addr(i))).unwrap();
            if i % 500 == 0 {
                assert!(cache.flush().unwrap().is_complete());
            }
        }
        assert!(cache.flush().unwrap().is_complete());
        done.store(true, std::sync::atomic::Ordering::Release);
        let (polls, last) = reader.join().unwrap();
        assert_eq!(last, N);
        assert!(polls >= 1);
        eprintln!("MEASURED concurrent reader: {polls} polls while {N} elements were appended");
    });
    check_write_order(&cache.take_trace()).unwrap();
}
