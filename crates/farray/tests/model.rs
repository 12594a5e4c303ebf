//! Model test: random operation sequences against a `Vec`, with flushes, evictions under a
//! small byte budget, and close-and-reopen from the bytes written, over `MemStorage`. Every
//! cache's write trace must also pass the write-order checker.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use std::sync::Arc;

use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache, check_write_order};
use h5chunk_farray::{Error, FixedArray, Params};
use h5chunk_format::chunk_record::{ChunkRecord, RecordCodec};
use h5chunk_format::{Addr, Sizes};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    /// Set element `i % n` (`None`: set it back to the fill value).
    Set(u64, Option<(u64, u64, u32)>),
    Get(u64),
    /// Set with a chunk proxy, written at the next flush.
    SetWithProxy(u64, u64),
    Flush,
    EvictClean,
    Reopen,
    Iterate,
}

fn op() -> impl Strategy<Value = Op> {
    let value = (1u64..1 << 30, 0u64..1 << 16, any::<u32>());
    prop_oneof![
        6 => (any::<u64>(), proptest::option::weighted(0.9, value)).prop_map(|(i, v)| Op::Set(i, v)),
        3 => any::<u64>().prop_map(Op::Get),
        2 => (any::<u64>(), 1u64..1 << 30).prop_map(|(i, a)| Op::SetWithProxy(i, a)),
        1 => Just(Op::Flush),
        1 => Just(Op::EvictClean),
        1 => Just(Op::Reopen),
        1 => Just(Op::Iterate),
    ]
}

struct World {
    storage: MemStorage,
    cache: MetadataCache,
    sizes: Sizes,
    codec: RecordCodec,
    params: Params,
    fa: FixedArray<RecordCodec>,
    max_bytes: usize,
}

impl World {
    fn new_cache(storage: &MemStorage, max_bytes: usize) -> MetadataCache {
        let config = CacheConfig {
            record_trace: true,
            max_bytes,
            ..CacheConfig::default()
        };
        MetadataCache::new(Arc::new(storage.clone()), config).unwrap()
    }

    /// Write every chunk and every block, check the trace, and reopen from the bytes with a
    /// fresh cache (the allocator keeps the end of allocation, as the superblock would).
    fn reopen(&mut self) {
        self.flush();
        check_write_order(&self.cache.take_trace()).unwrap();
        let eoa = self.cache.allocator().eoa();
        let cache = Self::new_cache(&self.storage, self.max_bytes);
        cache.allocator().set_eoa(eoa);
        self.fa =
            FixedArray::open(&cache, self.fa.addr(), self.sizes, self.codec, self.params).unwrap();
        self.cache = cache;
    }

    fn flush(&self) {
        let report = self
            .cache
            .flush_with(&mut |_: &[h5chunk_cache::ProxyId]| {
                Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
            })
            .unwrap();
        assert!(report.is_complete(), "{report:?}");
    }
}

fn record(codec: &RecordCodec, v: Option<(u64, u64, u32)>) -> ChunkRecord {
    match v {
        None => ChunkRecord::default(),
        Some((a, size, mask)) if codec.is_filtered() => ChunkRecord {
            addr: Some(Addr(a)),
            size,
            mask,
        },
        Some((a, _, _)) => common::at(a),
    }
}

fn run(
    nelmts: u64,
    page_bits: u8,
    filtered: bool,
    narrow: bool,
    max_bytes: usize,
    ops: Vec<Op>,
) -> Result<(), TestCaseError> {
    let sizes = if narrow {
        Sizes::new(4, 4, Addr(0)).unwrap()
    } else {
        Sizes::DEFAULT
    };
    let codec = if filtered {
        RecordCodec::filtered(sizes, 3).unwrap()
    } else {
        RecordCodec::unfiltered(sizes)
    };
    let params = Params {
        nelmts,
        max_dblk_page_nelmts_bits: page_bits,
    };
    let storage = MemStorage::new();
    let cache = World::new_cache(&storage, max_bytes);
    // Something before the array, so its addresses are not 0.
    cache.allocator().allocate(96).unwrap();
    let fa = FixedArray::create(&cache, sizes, codec, params).unwrap();
    let mut w = World {
        storage,
        cache,
        sizes,
        codec,
        params,
        fa,
        max_bytes,
    };
    let mut model = vec![ChunkRecord::default(); nelmts as usize];
    for op in ops {
        match op {
            Op::Set(i, v) => {
                let (i, r) = (i % nelmts, record(&codec, v));
                w.fa.insert(&w.cache, i, &r).unwrap();
                model[i as usize] = r;
            }
            Op::SetWithProxy(i, a) => {
                let (i, r) = (i % nelmts, record(&codec, Some((a, 7, 1))));
                let proxy = w.cache.create_proxy();
                w.fa.insert_with_proxy(&w.cache, i, &r, Some(proxy))
                    .unwrap();
                model[i as usize] = r;
            }
            Op::Get(i) => {
                let i = i % nelmts;
                prop_assert_eq!(w.fa.get(&w.cache, i).unwrap(), model[i as usize]);
            }
            Op::Flush => w.flush(),
            Op::EvictClean => {
                w.cache.evict_clean();
            }
            Op::Reopen => w.reopen(),
            Op::Iterate => {
                let want: Vec<(u64, ChunkRecord)> = model
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.addr.is_some())
                    .map(|(i, r)| (i as u64, *r))
                    .collect();
                prop_assert_eq!(w.fa.to_vec(&w.cache).unwrap(), want);
            }
        }
    }
    // Out of range is an error, not a panic.
    let out_of_range = matches!(w.fa.get(&w.cache, nelmts), Err(Error::OutOfRange { .. }));
    prop_assert!(out_of_range);
    w.reopen();
    for (i, r) in model.iter().enumerate() {
        prop_assert_eq!(&w.fa.get(&w.cache, i as u64).unwrap(), r, "element {}", i);
    }
    check_write_order(&w.cache.take_trace()).unwrap();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn model_matches_vec(
        nelmts in 1u64..2_600,
        page_bits in 1u8..=11,
        filtered in any::<bool>(),
        narrow in any::<bool>(),
        small_cache in any::<bool>(),
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        let max_bytes = if small_cache { 600 } else { 1 << 20 };
        run(nelmts, page_bits, filtered, narrow, max_bytes, ops)?;
    }
}

/// The libhdf5 page size (1,024 elements) over 5,000 elements with a dense write pattern.
#[test]
fn model_default_page_size_dense() {
    let ops: Vec<Op> = (0..5_000u64)
        .step_by(3)
        .map(|i| Op::Set(i, Some((0x1000 + i, 1, 0))))
        .chain([Op::Reopen, Op::Iterate])
        .collect();
    run(5_000, 10, false, false, 1 << 20, ops).unwrap();
}

fn memory_cache() -> (MemStorage, MetadataCache) {
    let storage = MemStorage::new();
    let cache = World::new_cache(&storage, 1 << 20);
    (storage, cache)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// `insert_many` is `set` on each item: the same bytes reach the storage, in an order the
    /// write-order checker accepts, and the array reads back the same.
    #[test]
    fn insert_many_writes_what_insert_writes(
        page_bits in prop_oneof![Just(2u8), Just(4), Just(10)],
        batches in prop::collection::vec(
            prop::collection::vec((0u64..300, 1u64..1 << 30), 0..120),
            1..4,
        ),
    ) {
        let sizes = Sizes::DEFAULT;
        let codec = RecordCodec::unfiltered(sizes);
        let params = Params { nelmts: 300, max_dblk_page_nelmts_bits: page_bits };
        let (one_storage, one) = memory_cache();
        let (many_storage, many) = memory_cache();
        let mut a = FixedArray::create(&one, sizes, codec, params).unwrap();
        let mut b = FixedArray::create(&many, sizes, codec, params).unwrap();
        for batch in &batches {
            let items: Vec<(u64, ChunkRecord)> = batch
                .iter()
                .map(|&(i, addr)| (i, ChunkRecord { addr: Some(Addr(addr)), size: 0, mask: 0 }))
                .collect();
            for (i, r) in &items {
                a.insert(&one, *i, r).unwrap();
            }
            b.insert_many(&many, &items, None).unwrap();
            prop_assert!(one.flush().unwrap().is_complete());
            prop_assert!(many.flush().unwrap().is_complete());
            check_write_order(&many.take_trace()).unwrap();
            prop_assert_eq!(one_storage.to_vec(), many_storage.to_vec());
        }
    }
}
