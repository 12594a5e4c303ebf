//! Model test: random insert/get/append/reopen sequences against a `BTreeMap`, over a memory
//! storage, with the write order checked at every flush.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::*;
use h5chunk_cache::{MemStorage, MetadataCache, check_write_order};
use h5chunk_earray::{ElementClass, ExtensibleArray};
use h5chunk_format::Addr;
use h5chunk_format::chunk_record::ChunkRecord;
use h5chunk_format::earray::Params;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Set(u64, u64),
    Get(u64),
    Append(u64),
    Reopen,
}

/// Indices that land in every part of the geometry: the index block, the index block's data
/// blocks, super blocks, paged data blocks, and far away.
fn index() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 0..300u64,
        3 => 0..5_000u64,
        2 => 131_000..134_000u64,
        1 => 0..(1u64 << 32),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (index(), any::<u64>()).prop_map(|(i, v)| Op::Set(i, v)),
        3 => index().prop_map(Op::Get),
        3 => any::<u64>().prop_map(Op::Append),
        1 => Just(Op::Reopen),
    ]
}

fn value(v: u64) -> ChunkRecord {
    ChunkRecord {
        addr: Some(Addr(v % (1 << 48))),
        size: v % 4_000,
        mask: (v >> 50) as u32 & 3,
    }
}

/// Flush (checking the order), then reopen the array from the storage in a fresh cache.
fn reopen<C: ElementClass + Clone>(
    storage: &MemStorage,
    cache: MetadataCache,
    ea: &ExtensibleArray<C>,
) -> (MetadataCache, ExtensibleArray<C>) {
    assert!(cache.flush().unwrap().is_complete());
    check_write_order(&cache.take_trace()).unwrap();
    let eoa = cache.allocator().eoa();
    let fresh = cache_over(Arc::new(storage.clone()));
    fresh.allocator().set_eoa(eoa);
    let ea = ExtensibleArray::open(&fresh, ea.addr(), S, ea.class().clone()).unwrap();
    (fresh, ea)
}

fn run<C: ElementClass + Clone>(
    class: C,
    ops: &[Op],
    conv: impl Fn(u64) -> C::Element,
) -> Result<(), TestCaseError> {
    let (storage, mut cache) = new_cache();
    let mut ea = ExtensibleArray::create(&cache, S, class.clone(), Params::CHUNK_INDEX).unwrap();
    let mut model: BTreeMap<u64, C::Element> = BTreeMap::new();
    let len = |m: &BTreeMap<u64, C::Element>| m.keys().next_back().map_or(0, |k| k + 1);
    for op in ops {
        match *op {
            Op::Set(i, v) => {
                ea.insert(&cache, i, &conv(v)).unwrap();
                model.insert(i, conv(v));
            }
            Op::Get(i) => {
                let want = model.get(&i).copied().unwrap_or(class.fill());
                prop_assert_eq!(ea.get(&cache, i).unwrap(), want);
            }
            Op::Append(v) => {
                let i = ea.append(&cache, &conv(v)).unwrap();
                prop_assert_eq!(i, len(&model));
                model.insert(i, conv(v));
            }
            Op::Reopen => {
                let (c, e) = reopen(&storage, cache, &ea);
                cache = c;
                ea = e;
            }
        }
        prop_assert_eq!(ea.len(&cache).unwrap(), len(&model));
    }
    let (cache, ea) = reopen(&storage, cache, &ea);
    let want: Vec<(u64, C::Element)> = model.into_iter().collect();
    prop_assert_eq!(ea.to_vec(&cache).unwrap(), want.clone());
    for (i, v) in want {
        prop_assert_eq!(ea.get(&cache, i).unwrap(), v);
    }
    // The header's other statistics agree with what the blocks on disk add up to.
    let st = ea.stats(&cache).unwrap();
    prop_assert_eq!(
        ea.bytes_used(&cache).unwrap(),
        cache.allocator().eoa().get() - RESERVED
    );
    prop_assert!(st.nelmts >= 4 || st.max_idx_set == 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn model_filtered_records(ops in prop::collection::vec(op(), 1..40)) {
        run(filtered(), &ops, value)?;
    }

    #[test]
    fn model_chunk_addresses(ops in prop::collection::vec(op(), 1..40)) {
        run(addrs(), &ops, |v| value(v).addr)?;
    }
}

/// Sorted, distinct indices in runs (appends) and scattered (random sets), with values.
fn batch() -> impl Strategy<Value = Vec<(u64, u64)>> {
    prop::collection::btree_map(
        prop_oneof![3 => 0..3_000u64, 1 => 131_000..134_000u64],
        any::<u64>(),
        1..400,
    )
    .prop_map(|m| m.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// `insert_many` is `set` on each item: the same bytes reach the storage, in an order the
    /// write-order checker accepts, and the array reads back the same.
    #[test]
    fn insert_many_writes_what_insert_writes(batches in prop::collection::vec(batch(), 1..4)) {
        let (one_storage, one) = new_cache();
        let (many_storage, many) = new_cache();
        let mut a = ExtensibleArray::create(&one, S, filtered(), Params::CHUNK_INDEX).unwrap();
        let mut b = ExtensibleArray::create(&many, S, filtered(), Params::CHUNK_INDEX).unwrap();
        for items in &batches {
            for &(i, v) in items {
                a.insert(&one, i, &value(v)).unwrap();
            }
            let items: Vec<_> = items.iter().map(|&(i, v)| (i, value(v))).collect();
            b.insert_many(&many, &items, None).unwrap();
            prop_assert!(one.flush().unwrap().is_complete());
            prop_assert!(many.flush().unwrap().is_complete());
            check_write_order(&many.take_trace()).unwrap();
            prop_assert_eq!(one_storage.to_vec(), many_storage.to_vec());
        }
        prop_assert_eq!(a.to_vec(&one).unwrap(), b.to_vec(&many).unwrap());
    }
}
