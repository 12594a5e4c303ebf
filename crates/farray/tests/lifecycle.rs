//! The fixed array's operations one by one: creation parameters, the data block and pages
//! created on first use, the shorter last page, bytes used, iteration, delete, filtered
//! records, and a reader following a writer.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use std::ops::ControlFlow;

use h5chunk_cache::MemStorage;
use h5chunk_farray::{DATA_BLOCK_TYPE, Error, FixedArray, HEADER_TYPE, PAGE_TYPE, Params};
use h5chunk_format::chunk_record::{ChunkRecord, RecordCodec};
use h5chunk_format::farray::decode_page;
use h5chunk_format::{Addr, Sizes};

const S: Sizes = Sizes::DEFAULT;

fn params(nelmts: u64, bits: u8) -> Params {
    Params {
        nelmts,
        max_dblk_page_nelmts_bits: bits,
    }
}

#[test]
fn params_for_chunks_follow_the_max_chunk_grid() {
    // The fixtures' arrays: (12, 10) in (4, 5); max 100 in 4; (33, 34) in (1, 1).
    assert_eq!(
        Params::for_chunks(&[12, 10], &[4, 5], 10).unwrap().nelmts,
        6
    );
    assert_eq!(Params::for_chunks(&[100], &[4], 10).unwrap().nelmts, 25);
    assert_eq!(
        Params::for_chunks(&[33, 34], &[1, 1], 10).unwrap().nelmts,
        1_122
    );
    assert!(matches!(
        Params::for_chunks(&[10], &[0], 10),
        Err(Error::InvalidArgument(_))
    ));
    assert!(Params::for_chunks(&[10, 10], &[1], 10).is_err());
    assert!(Params::for_chunks(&[u64::MAX, u64::MAX], &[1, 1], 10).is_err());
}

#[test]
fn create_rejects_impossible_parameters() {
    let cache = common::cache(&MemStorage::new());
    let codec = RecordCodec::unfiltered(S);
    for p in [
        params(0, 10),
        params(10, 0),
        params(10, 32),
        params(u64::MAX, 10),
    ] {
        assert!(
            FixedArray::create(&cache, S, codec, p).is_err(),
            "{p:?} accepted"
        );
    }
}

#[test]
fn out_of_range_is_an_error() {
    let cache = common::cache(&MemStorage::new());
    let mut fa = FixedArray::create(&cache, S, RecordCodec::unfiltered(S), params(12, 10)).unwrap();
    assert!(matches!(
        fa.get(&cache, 12),
        Err(Error::OutOfRange { index: 12, len: 12 })
    ));
    assert!(matches!(
        fa.insert(&cache, u64::MAX, &common::at(1)),
        Err(Error::OutOfRange { .. })
    ));
}

#[test]
fn data_block_created_on_first_set() {
    let storage = MemStorage::new();
    let cache = common::cache(&storage);
    let mut fa = FixedArray::create(&cache, S, RecordCodec::unfiltered(S), params(12, 10)).unwrap();
    assert_eq!(fa.data_block_addr(&cache).unwrap(), None);
    assert_eq!(fa.bytes_used(&cache).unwrap(), 28);
    assert_eq!(fa.get(&cache, 3).unwrap(), ChunkRecord::default());
    assert_eq!(fa.to_vec(&cache).unwrap(), vec![]);
    assert_eq!(cache.stats().of(DATA_BLOCK_TYPE).inserts, 0);
    fa.insert(&cache, 3, &common::at(0x800)).unwrap();
    assert!(fa.data_block_addr(&cache).unwrap().is_some());
    // libhdf5's 12-element block: 6 + 8 + 12 × 8 + 4 bytes.
    assert_eq!(fa.bytes_used(&cache).unwrap(), 28 + 114);
    assert_eq!(cache.stats().of(DATA_BLOCK_TYPE).inserts, 1);
    assert_eq!(cache.stats().of(HEADER_TYPE).inserts, 1);
}

#[test]
fn pages_created_on_first_use_and_untouched_pages_never_read() {
    let storage = MemStorage::new();
    let cache = common::cache(&storage);
    let mut fa =
        FixedArray::create(&cache, S, RecordCodec::unfiltered(S), params(5_000, 10)).unwrap();
    for i in [0, 1, 1_023, 4_999, 4_998] {
        fa.insert(&cache, i, &common::at(0x1000 + i)).unwrap();
    }
    assert_eq!(cache.stats().of(PAGE_TYPE).inserts, 2, "pages 0 and 4");
    assert!(cache.flush().unwrap().is_complete());

    let reader = common::reader(storage.to_vec());
    let r = FixedArray::open(
        &reader,
        fa.addr(),
        S,
        RecordCodec::unfiltered(S),
        fa.params(),
    )
    .unwrap();
    for i in (1_024..4_096).step_by(11) {
        assert_eq!(r.get(&reader, i).unwrap(), ChunkRecord::default());
    }
    assert_eq!(reader.stats().of(PAGE_TYPE).misses, 0);
    let set: Vec<u64> = r.to_vec(&reader).unwrap().iter().map(|e| e.0).collect();
    assert_eq!(set, vec![0, 1, 1_023, 4_998, 4_999]);
    assert_eq!(reader.stats().of(PAGE_TYPE).misses, 2);
}

#[test]
fn shorter_last_page_as_libhdf5_lays_it_out() {
    // docs/format/chunk-index-format.md §7.2: 2,500 elements, three pages, the last holding 452; the
    // prefix is 15 bytes + checksum, so page 0 starts 19 bytes into the block.
    let storage = MemStorage::new();
    let cache = common::cache(&storage);
    let mut fa =
        FixedArray::create(&cache, S, RecordCodec::unfiltered(S), params(2_500, 10)).unwrap();
    fa.insert(&cache, 2_499, &common::at(0xabc)).unwrap();
    fa.insert(&cache, 0, &common::at(0xdef)).unwrap();
    assert!(cache.flush().unwrap().is_complete());
    let db = fa.data_block_addr(&cache).unwrap().unwrap();
    assert_eq!(fa.page_addr(db, 0).unwrap(), Addr(db.get() + 19));
    assert_eq!(
        fa.page_addr(db, 2).unwrap(),
        Addr(db.get() + 19 + 2 * (1024 * 8 + 4))
    );
    assert_eq!(fa.bytes_used(&cache).unwrap(), 28 + 19 + 2_500 * 8 + 3 * 4);
    let bytes = storage.to_vec();
    // The bitmap: pages 0 and 2, MSB first.
    assert_eq!(bytes[db.get() as usize + 14], 0xa0);
    let at = fa.page_addr(db, 2).unwrap();
    let page = &bytes[at.get() as usize..][..452 * 8 + 4];
    let elems = decode_page(page, at, 452, 8, "page").unwrap();
    assert_eq!(&elems[451 * 8..], &0xabcu64.to_le_bytes());
    assert!(elems[..451 * 8].iter().all(|&b| b == 0xff));
}

#[test]
fn for_each_stops_when_asked() {
    let cache = common::cache(&MemStorage::new());
    for n in [30, 3_000] {
        let mut fa =
            FixedArray::create(&cache, S, RecordCodec::unfiltered(S), params(n, 10)).unwrap();
        for i in (0..n).step_by(7) {
            fa.insert(&cache, i, &common::at(0x100 + i)).unwrap();
        }
        let mut seen = Vec::new();
        fa.for_each(&cache, |i, _| {
            seen.push(i);
            if seen.len() == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
        assert_eq!(seen, vec![0, 7, 14]);
    }
}

#[test]
fn filtered_records_roundtrip_in_both_widths() {
    // Layout v4 width for a 4,000-byte chunk (3) and layout v5's size of lengths (8).
    for width in [3, 8] {
        let storage = MemStorage::new();
        let cache = common::cache(&storage);
        let codec = RecordCodec::filtered(S, width).unwrap();
        let p = params(2_000, 10);
        let mut fa = FixedArray::create(&cache, S, codec, p).unwrap();
        let r = ChunkRecord {
            addr: Some(Addr(0x4000)),
            size: 3_999,
            mask: 0b101,
        };
        fa.insert(&cache, 1_500, &r).unwrap();
        assert!(cache.flush().unwrap().is_complete());
        let reader = common::reader(storage.to_vec());
        let fa = FixedArray::open(&reader, fa.addr(), S, codec, p).unwrap();
        assert_eq!(fa.get(&reader, 1_500).unwrap(), r);
        assert_eq!(fa.get(&reader, 1_501).unwrap(), ChunkRecord::default());
        assert_eq!(fa.to_vec(&reader).unwrap(), vec![(1_500, r)]);
    }
    // A size that does not fit the width is refused, and nothing is written.
    let cache = common::cache(&MemStorage::new());
    let codec = RecordCodec::filtered(S, 2).unwrap();
    let mut fa = FixedArray::create(&cache, S, codec, params(4, 10)).unwrap();
    let big = ChunkRecord {
        addr: Some(Addr(1)),
        size: 1 << 16,
        mask: 0,
    };
    assert!(matches!(fa.insert(&cache, 0, &big), Err(Error::Format(_))));
    assert_eq!(fa.data_block_addr(&cache).unwrap(), None);
}

#[test]
fn delete_drops_blocks_and_frees_their_space() {
    for n in [12, 5_000] {
        let storage = MemStorage::new();
        let cache = common::cache(&storage);
        let base = cache.allocator().allocate(100).unwrap();
        let mut fa =
            FixedArray::create(&cache, S, RecordCodec::unfiltered(S), params(n, 10)).unwrap();
        for i in [0, n - 1] {
            fa.insert_with_proxy(&cache, i, &common::at(0x100), Some(cache.create_proxy()))
                .unwrap();
        }
        let used = fa.bytes_used(&cache).unwrap();
        let eoa = cache.allocator().eoa();
        assert_eq!(eoa.get(), base.get() + 100 + used);
        let addr = fa.addr();
        fa.delete(&cache).unwrap();
        assert!(cache.resident().is_empty(), "{:?}", cache.resident());
        assert!(!cache.is_resident(addr));
        // Nothing of the array is left to write, although its chunks were never written.
        assert!(cache.flush().unwrap().written == 0);
        let alloc = cache.allocator();
        assert_eq!(alloc.free_space() + (eoa.get() - alloc.eoa().get()), used);
    }
}

/// A reader that opened the array before its data block existed finds the block once it
/// refreshes (drops its clean cached header), as a SWMR reader does.
#[test]
fn reader_sees_data_block_created_after_it_opened() {
    let storage = MemStorage::new();
    let cache = common::cache(&storage);
    let mut fa =
        FixedArray::create(&cache, S, RecordCodec::unfiltered(S), params(2_000, 10)).unwrap();
    assert!(cache.flush().unwrap().is_complete());
    let reader = h5chunk_cache::MetadataCache::new(
        std::sync::Arc::new(storage.clone()),
        h5chunk_cache::CacheConfig::swmr_reader(),
    )
    .unwrap();
    let r = FixedArray::open(
        &reader,
        fa.addr(),
        S,
        RecordCodec::unfiltered(S),
        fa.params(),
    )
    .unwrap();
    assert_eq!(r.get(&reader, 1_999).unwrap(), ChunkRecord::default());
    fa.insert(&cache, 1_999, &common::at(0x7000)).unwrap();
    assert!(cache.flush().unwrap().is_complete());
    reader.evict_clean();
    assert_eq!(r.get(&reader, 1_999).unwrap(), common::at(0x7000));
}
