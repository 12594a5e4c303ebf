//! Model test: random extend / insert / get / shrink / for_each / close-and-reopen sequences over
//! `MemStorage`, checked against a `Vec` of records (docs/STYLE.md, section 5, tests), with
//! every flush's write order checked.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::sync::Arc;

use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache, check_write_order};
use h5chunk_format::chunk_record::ChunkRecord;
use h5chunk_format::{Addr, Sizes};
use h5chunk_skiplist::{ElementClass, Error, Lookup, Params, SkipList};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Extend(u16),
    Shrink(u16),
    Set(u32, Option<u32>),
    Get(u32, usize),
    Iterate,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u16..12).prop_map(Op::Extend),
        1 => (0u16..8).prop_map(Op::Shrink),
        4 => (any::<u32>(), proptest::option::weighted(0.8, 1u32..1_000_000)).prop_map(|(i, a)| Op::Set(i, a)),
        3 => (any::<u32>(), 0usize..4).prop_map(|(i, l)| Op::Get(i, l)),
        1 => Just(Op::Iterate),
        1 => Just(Op::Reopen),
    ]
}

fn params() -> impl Strategy<Value = Params> {
    (1u32..4, 1u32..4, any::<bool>(), 4u8..8).prop_map(|(s, g, filtered, m)| Params {
        class: if filtered {
            ElementClass::Filtered { size_width: 3 }
        } else {
            ElementClass::Unfiltered
        },
        max_height: m,
        steps_per_supernode: s,
        group_len: g,
    })
}

fn cache(storage: &MemStorage, eoa: Option<Addr>) -> MetadataCache {
    let config = CacheConfig {
        record_trace: true,
        // Small, so that supernodes are evicted and re-read during the sequence.
        max_bytes: 2048,
        ..CacheConfig::default()
    };
    let c = MetadataCache::new(Arc::new(storage.clone()), config).unwrap();
    if let Some(eoa) = eoa {
        // The superblock records the EOA: ghosts are allocated but not yet written.
        c.allocator().set_eoa(eoa);
    }
    c
}

fn check_iteration(list: &SkipList, c: &MetadataCache, model: &[ChunkRecord]) {
    let mut fwd = Vec::new();
    list.for_each(c, |i, r| fwd.push((i, r))).unwrap();
    let expect: Vec<(u64, ChunkRecord)> = (0u64..).zip(model.iter().copied()).collect();
    assert_eq!(fwd, expect);
    let mut back = Vec::new();
    list.for_each_backward(c, |i, r| back.push((i, r))).unwrap();
    back.reverse();
    assert_eq!(back, expect);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn model_against_vec(p in params(), ops in proptest::collection::vec(op(), 1..60)) {
        let storage = MemStorage::new();
        let mut c = cache(&storage, None);
        let mut list = SkipList::create(&c, Sizes::DEFAULT, p).unwrap();
        let g = u64::from(p.group_len);
        let mut model: Vec<ChunkRecord> = Vec::new();
        let mut steps = 0u64;
        let max_steps = p.max_supernodes() * u64::from(p.steps_per_supernode);
        for op in ops {
            match op {
                Op::Extend(d) => {
                    let to = steps + u64::from(d);
                    match list.extend(&c, to) {
                        Ok(()) => {
                            steps = to;
                            model.resize((steps * g) as usize, ChunkRecord::default());
                        }
                        Err(Error::Full { .. }) => prop_assert!(to > max_steps, "full at {}", to),
                        Err(e) => panic!("extend: {e}"),
                    }
                }
                Op::Shrink(d) => {
                    let to = steps.saturating_sub(u64::from(d));
                    let removed = list.shrink(&c, to).unwrap();
                    let expect: Vec<(u64, ChunkRecord)> = (0u64..)
                        .zip(model.iter().copied())
                        .skip((to * g) as usize)
                        .filter(|(_, r)| r.addr.is_some())
                        .collect();
                    prop_assert_eq!(removed, expect);
                    steps = to;
                    model.truncate((steps * g) as usize);
                }
                Op::Set(i, a) => {
                    let rec = match (a, p.class) {
                        (None, _) => ChunkRecord::default(),
                        (Some(a), ElementClass::Unfiltered) => ChunkRecord { addr: Some(Addr(u64::from(a))), size: 0, mask: 0 },
                        (Some(a), _) => ChunkRecord { addr: Some(Addr(u64::from(a))), size: u64::from(a % 5000), mask: a % 3 },
                    };
                    if model.is_empty() {
                        let out_of_bounds = matches!(list.insert(&c, u64::from(i), rec), Err(Error::OutOfRange { .. }));
                        prop_assert!(out_of_bounds);
                    } else {
                        let i = u64::from(i) % model.len() as u64;
                        list.insert(&c, i, rec).unwrap();
                        model[i as usize] = rec;
                    }
                }
                Op::Get(i, l) => {
                    let lookup = Lookup::ALL[l];
                    let len = model.len() as u64;
                    let i = u64::from(i) % (len + 2);
                    match list.get_with(&c, lookup, i) {
                        Ok(r) => prop_assert_eq!(r, model[i as usize]),
                        Err(Error::OutOfRange { .. }) => prop_assert!(i >= len),
                        Err(e) => panic!("get: {e}"),
                    }
                }
                Op::Iterate => check_iteration(&list, &c, &model),
                Op::Reopen => {
                    prop_assert!(c.flush().unwrap().is_complete());
                    check_write_order(&c.take_trace()).unwrap();
                    let eoa = c.allocator().eoa();
                    c = cache(&storage, Some(eoa));
                    list = SkipList::open(&c, list.addr(), Sizes::DEFAULT).unwrap();
                    prop_assert_eq!(list.params(), p);
                }
            }
            prop_assert_eq!(list.steps(&c).unwrap(), steps);
        }
        // Finally: everything through a fresh cache, then delete.
        prop_assert!(c.flush().unwrap().is_complete());
        check_write_order(&c.take_trace()).unwrap();
        let eoa = c.allocator().eoa();
        let c = cache(&storage, Some(eoa));
        let list = SkipList::open(&c, list.addr(), Sizes::DEFAULT).unwrap();
        check_iteration(&list, &c, &model);
        for (i, r) in model.iter().enumerate() {
            prop_assert_eq!(list.get(&c, i as u64).unwrap(), *r);
        }
        let usage = list.usage(&c).unwrap();
        prop_assert!(usage.total() <= eoa.get());
        list.delete(&c).unwrap();
    }
}

#[test]
fn usage_counts_tail_supernodes_and_ghosts() {
    let storage = MemStorage::new();
    let c = cache(&storage, None);
    let p = Params {
        steps_per_supernode: 1,
        max_height: 4,
        ..Params::default()
    };
    let list = SkipList::create(&c, Sizes::DEFAULT, p).unwrap();
    let empty = list.usage(&c).unwrap();
    assert_eq!((empty.supernodes, empty.ghosts), (0, 0));
    assert_eq!(empty.tail, 20 + 8 + 3 * 4 * 8);
    list.extend(&c, 5).unwrap();
    let u = list.usage(&c).unwrap();
    // Supernode size: 10 + O + L + 2·h·O + 1 slot × O = 34 + 16h.
    let sn = |h: u64| 34 + 16 * h;
    // Heights of 1..=5: 1 2 1 3 1; ghosts of levels 1, 2, 3: supernodes 6 (height 2),
    // 6 again, 8 (height 4).
    assert_eq!(u.supernodes, 3 * sn(1) + sn(2) + sn(3));
    assert_eq!(u.ghosts, sn(2) + sn(4));
    assert_eq!(u.total(), c.allocator().eoa().get());
    assert_eq!(list.bytes_used(&c).unwrap(), u.total());
    assert!(matches!(
        list.extend(&c, 16),
        Err(Error::Full { supernodes: 16, .. })
    ));
    assert!(matches!(
        list.extend(&c, 2),
        Err(Error::WrongDirection { .. })
    ));
    assert!(matches!(
        list.shrink(&c, 6),
        Err(Error::WrongDirection { .. })
    ));
    assert!(matches!(
        list.insert(
            &c,
            0,
            ChunkRecord {
                addr: Some(Addr(8)),
                size: 1,
                mask: 0
            }
        ),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        SkipList::create(&c, Sizes::DEFAULT, Params { group_len: 0, ..p }),
        Err(Error::InvalidArgument(_))
    ));
    // A full list of max height 4: 15 supernodes, the last ghost (supernode 16) cannot exist.
    list.extend(&c, 15).unwrap();
    assert_eq!(list.supernodes(&c).unwrap(), 15);
    list.shrink(&c, 0).unwrap();
    assert_eq!(list.usage(&c).unwrap().total(), empty.total());
    // Everything but the tail went back to the allocator (the EOA shrank to the tail's end),
    // and deleting gives the tail back too.
    assert_eq!(c.allocator().eoa().get(), list.addr().get() + empty.tail);
    list.extend(&c, 9).unwrap();
    list.delete(&c).unwrap();
    assert_eq!(c.allocator().eoa().get(), 0);
    assert_eq!(c.allocator().free_space(), 0);
    assert!(c.resident().is_empty());
}

#[test]
fn shrink_clears_the_partial_supernode_and_reextends_empty() {
    let storage = MemStorage::new();
    let c = cache(&storage, None);
    let p = Params {
        steps_per_supernode: 4,
        group_len: 2,
        max_height: 6,
        ..Params::default()
    };
    let list = SkipList::create(&c, Sizes::DEFAULT, p).unwrap();
    list.extend(&c, 12).unwrap();
    for i in 0..24 {
        list.insert(
            &c,
            i,
            ChunkRecord {
                addr: Some(Addr(0x1000 + i)),
                size: 0,
                mask: 0,
            },
        )
        .unwrap();
    }
    let removed = list.shrink(&c, 5).unwrap();
    assert_eq!(
        removed.iter().map(|r| r.0).collect::<Vec<_>>(),
        (10..24).collect::<Vec<_>>()
    );
    list.extend(&c, 12).unwrap();
    for i in 0..24 {
        let expect = (i < 10).then_some(Addr(0x1000 + i));
        assert_eq!(list.get(&c, i).unwrap().addr, expect, "slot {i}");
    }
}
