//! Model test: random operation sequences against a `BTreeMap`, with close-and-reopen, checking
//! order, counts and node fill after every operation.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use common::*;
use h5chunk_btree2::{BTree2, Error};
use h5chunk_cache::MemStorage;
use h5chunk_format::Addr;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Insert(u64, u64),
    Remove(u64, u64),
    Find(u64, u64),
    Nth(u64),
    Modify(u64, u64),
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u64..24;
    prop_oneof![
        6 => (k.clone(), k.clone()).prop_map(|(a, b)| Op::Insert(a, b)),
        3 => (k.clone(), k.clone()).prop_map(|(a, b)| Op::Remove(a, b)),
        1 => (k.clone(), k.clone()).prop_map(|(a, b)| Op::Find(a, b)),
        1 => (0u64..600).prop_map(Op::Nth),
        1 => (k.clone(), k).prop_map(|(a, b)| Op::Modify(a, b)),
        1 => Just(Op::Reopen),
    ]
}

fn run(ops: &[Op], swmr: bool) -> u16 {
    let mut deepest = 0;
    let storage = MemStorage::new();
    let mut cache = mem_cache(&storage, false);
    cache.set_swmr_write(swmr);
    let mut model: BTreeMap<[u64; 2], u64> = BTreeMap::new();
    let header = BTree2::create(&cache, S, class2(), SMALL).unwrap().addr();
    let mut serial = 0x10_0000u64;
    for op in ops {
        {
            let mut t = BTree2::open(&cache, header, S, class2()).unwrap();
            match *op {
                Op::Insert(a, b) => {
                    serial += 1;
                    let r = t.try_insert(&cache, entry(a, b, serial));
                    match model.entry([a, b]) {
                        std::collections::btree_map::Entry::Occupied(_) => {
                            assert!(matches!(r, Err(Error::Exists { .. })), "{r:?}");
                        }
                        std::collections::btree_map::Entry::Vacant(v) => {
                            r.unwrap();
                            v.insert(serial);
                        }
                    }
                }
                Op::Remove(a, b) => {
                    let got = t.remove(&cache, &[a, b]).unwrap();
                    let want = model.remove(&[a, b]);
                    assert_eq!(got.map(|e| e.record.addr.unwrap().0), want);
                }
                Op::Find(a, b) => {
                    let got = t.get(&cache, &[a, b]).unwrap();
                    assert_eq!(
                        got.map(|e| e.record.addr.unwrap().0),
                        model.get(&[a, b]).copied()
                    );
                }
                Op::Nth(n) => {
                    let got = t.nth(&cache, n).unwrap();
                    let want = model.iter().nth(n as usize).map(|(k, v)| (*k, *v));
                    assert_eq!(
                        got.map(|e| ([e.scaled[0], e.scaled[1]], e.record.addr.unwrap().0)),
                        want
                    );
                }
                Op::Modify(a, b) => {
                    serial += 1;
                    let s = serial;
                    let found = t
                        .modify(&cache, &[a, b], |e| e.record.addr = Some(Addr(s)))
                        .unwrap();
                    assert_eq!(found, model.contains_key(&[a, b]));
                    if let Some(v) = model.get_mut(&[a, b]) {
                        *v = s;
                    }
                    // A modification may not move a record.
                    if found {
                        let r = t.modify(&cache, &[a, b], |e| e.scaled[0] += 100);
                        assert!(matches!(r, Err(Error::KeyChanged { .. })), "{r:?}");
                    }
                }
                Op::Reopen => {}
            }
            let st = t.validate(&cache).unwrap();
            deepest = deepest.max(st.depth);
            assert_eq!(st.records, model.len() as u64);
            check_fill(&t, &st);
            let got: Vec<([u64; 2], u64)> = t
                .to_vec(&cache)
                .unwrap()
                .iter()
                .map(|e| ([e.scaled[0], e.scaled[1]], e.record.addr.unwrap().0))
                .collect();
            let want: Vec<([u64; 2], u64)> = model.iter().map(|(k, v)| (*k, *v)).collect();
            assert_eq!(got, want);
        }
        if let Op::Reopen = op {
            assert!(cache.flush().unwrap().is_complete());
            let eoa = cache.allocator().eoa();
            cache = mem_cache(&storage, false);
            cache.allocator().set_eoa(eoa);
            cache.set_swmr_write(swmr);
        }
    }
    deepest
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn model_random_ops(ops in proptest::collection::vec(op(), 1..400), swmr in any::<bool>()) {
        let _ = run(&ops, swmr);
    }
}

#[test]
fn model_fill_then_drain_changes_depth() {
    // Ascending inserts to depth >= 2, then removals in a scattered order down to empty.
    let mut ops: Vec<Op> = (0..24)
        .flat_map(|a| (0..12).map(move |b| Op::Insert(a, b)))
        .collect();
    ops.push(Op::Reopen);
    ops.extend(
        (0..24)
            .rev()
            .flat_map(|a| (0..12).map(move |b| Op::Remove((a * 7) % 24, b))),
    );
    assert!(run(&ops, false) >= 2);
    assert!(run(&ops, true) >= 2);
}

#[test]
fn for_each_stops_early() {
    let storage = MemStorage::new();
    let cache = mem_cache(&storage, false);
    let mut t = BTree2::create(&cache, S, class2(), SMALL).unwrap();
    for i in 0..300 {
        t.try_insert(&cache, entry(i / 10, i % 10, 0x1000 + i))
            .unwrap();
    }
    assert!(t.depth() >= 2);
    let mut seen = 0;
    let flow = t
        .for_each(&cache, |_| {
            seen += 1;
            if seen == 57 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert!(flow.is_break());
    assert_eq!(seen, 57);
}
