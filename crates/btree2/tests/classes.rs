//! The record-class design fits libhdf5's other record types without changes to the tree: a
//! class for links indexed by name hash (type 5: 4-byte hash, 7-byte fractal-heap ID), and
//! filtered chunk records (type 11) with sizes and masks.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use core::cmp::Ordering;
use std::collections::BTreeMap;

use common::*;
use h5chunk_btree2::{BTree2, Params, RecordClass};
use h5chunk_cache::MemStorage;
use h5chunk_format::Addr;

/// libhdf5's `H5G_DENSE_BT2_NAME_REC`-shaped record: the name's hash, then the heap ID.
#[derive(Debug)]
struct LinkNameClass;

#[derive(Clone, Debug, PartialEq, Eq)]
struct LinkRec {
    hash: u32,
    heap_id: [u8; 7],
}

impl RecordClass for LinkNameClass {
    type Record = LinkRec;
    type Key = u32;
    fn tree_type(&self) -> u8 {
        5
    }
    fn record_size(&self) -> usize {
        11
    }
    fn decode(&self, raw: &[u8], at: Addr) -> h5chunk_format::Result<LinkRec> {
        let (Some(h), Some(id)) = (raw.get(..4), raw.get(4..11)) else {
            return Err(h5chunk_format::Error::Truncated {
                structure: "link name record",
                at,
                needed: 11,
                available: raw.len() as u64,
            });
        };
        Ok(LinkRec {
            hash: u32::from_le_bytes(h.try_into().unwrap()),
            heap_id: id.try_into().unwrap(),
        })
    }
    fn encode(&self, r: &LinkRec, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        out.extend_from_slice(&r.hash.to_le_bytes());
        out.extend_from_slice(&r.heap_id);
        Ok(())
    }
    fn key<'r>(&self, r: &'r LinkRec) -> &'r u32 {
        &r.hash
    }
    fn compare(&self, key: &u32, r: &LinkRec) -> Ordering {
        key.cmp(&r.hash)
    }
}

#[test]
fn link_name_hash_records() {
    let storage = MemStorage::new();
    let cache = mem_cache(&storage, false);
    // Dense link storage uses 512-byte nodes, split 100 %, merge 40 %.
    let params = Params {
        node_size: 512,
        ..Params::CHUNK_INDEX
    };
    let mut t = BTree2::create(&cache, S, LinkNameClass, params).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..5000u32 {
        let hash = i.wrapping_mul(0x9e37_79b9);
        let rec = LinkRec {
            hash,
            heap_id: [i as u8, (i >> 8) as u8, 0, 0, 0, 0, 1],
        };
        t.try_insert(&cache, rec.clone()).unwrap();
        model.insert(hash, rec);
    }
    for i in (0..5000u32).step_by(3) {
        let hash = i.wrapping_mul(0x9e37_79b9);
        assert_eq!(t.remove(&cache, &hash).unwrap(), model.remove(&hash));
    }
    let st = t.validate(&cache).unwrap();
    assert!(st.depth >= 2, "{st:?}");
    let header = t.addr();
    assert!(cache.flush().unwrap().is_complete());
    let eoa = cache.allocator().eoa();
    let reader = mem_cache(&storage, false);
    reader.allocator().set_eoa(eoa);
    let t = BTree2::open(&reader, header, S, LinkNameClass).unwrap();
    assert_eq!(t.header().tree_type, 5);
    let got: Vec<LinkRec> = t.to_vec(&reader).unwrap();
    assert_eq!(got, model.into_values().collect::<Vec<_>>());
}

#[test]
fn filtered_chunk_records_round_trip() {
    let storage = MemStorage::new();
    let cache = mem_cache(&storage, false);
    let mut t = BTree2::create(&cache, S, class2f(), Params::CHUNK_INDEX).unwrap();
    assert_eq!(t.header().tree_type, 11);
    assert_eq!(t.header().record_size, 30);
    for i in 0..3000u64 {
        t.try_insert(
            &cache,
            fentry(i % 60, i / 60, 0x4000 + i, 100 + i % 900, (i % 3) as u32),
        )
        .unwrap();
    }
    // Update (insert-or-replace): an existing key is replaced, a key above the maximum appended
    // without a search.
    assert!(!t.insert(&cache, fentry(7, 7, 0x7777, 77, 1), None).unwrap());
    assert!(
        t.insert(&cache, fentry(60, 0, 0x8888, 88, 0), None)
            .unwrap()
    );
    let e = t.get(&cache, &[7, 7]).unwrap().unwrap();
    assert_eq!(
        (e.record.addr, e.record.size, e.record.mask),
        (Some(Addr(0x7777)), 77, 1)
    );
    assert_eq!(t.len(), 3001);
    let (min, max) = t.min_max(&cache).unwrap().unwrap();
    assert_eq!(
        (&min.scaled[..], &max.scaled[..]),
        (&[0u64, 0][..], &[60u64, 0][..])
    );
    // A size too wide for the 2-byte field is refused at encode time, by the flush.
    t.try_insert(&cache, fentry(61, 0, 0x9999, 1 << 20, 0))
        .unwrap();
    assert!(cache.flush().is_err());
}

#[test]
fn delete_frees_everything_and_bytes_used_counts_nodes() {
    let storage = MemStorage::new();
    let cache = mem_cache(&storage, false);
    let mut t = BTree2::create(&cache, S, class2(), SMALL).unwrap();
    for i in 0..500u64 {
        t.try_insert(&cache, entry(i, 0, 0x1000 + i)).unwrap();
    }
    let nodes = t.nodes(&cache).unwrap().len() as u64;
    assert_eq!(
        t.bytes_used(&cache).unwrap(),
        38 + nodes * u64::from(SMALL.node_size)
    );
    let used = t.bytes_used(&cache).unwrap();
    let free0 = cache.allocator().free_space();
    let eoa0 = cache.allocator().eoa();
    t.delete(&cache).unwrap();
    let free1 = cache.allocator().free_space();
    let eoa1 = cache.allocator().eoa();
    // Every byte comes back: to the free list, or off the end of the file.
    assert_eq!(free1 - free0 + (eoa0.get() - eoa1.get()), used);
    assert!(cache.resident().is_empty());
}

/// Type-5-shaped records whose keys repeat: a hash of only a few values, and names kept
/// outside the tree (as a fractal heap keeps them), which order the records of one hash.
#[derive(Debug)]
struct CollidingNames;

impl RecordClass for CollidingNames {
    type Record = LinkRec;
    type Key = u32;
    fn tree_type(&self) -> u8 {
        5
    }
    fn record_size(&self) -> usize {
        11
    }
    fn decode(&self, raw: &[u8], at: Addr) -> h5chunk_format::Result<LinkRec> {
        LinkNameClass.decode(raw, at)
    }
    fn encode(&self, r: &LinkRec, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        LinkNameClass.encode(r, out)
    }
    fn key<'r>(&self, r: &'r LinkRec) -> &'r u32 {
        &r.hash
    }
    fn compare(&self, key: &u32, r: &LinkRec) -> Ordering {
        key.cmp(&r.hash)
    }
    fn keys_repeat(&self) -> bool {
        true
    }
}

/// Name number `i`, its "hash" (five values: most names collide) and its record.
fn colliding(i: u16) -> (String, LinkRec) {
    let name = format!("name{:05}", u32::from(i).wrapping_mul(7919) % 10_007);
    let hash = u32::from(i % 5) * 1000;
    let mut heap_id = [0u8; 7];
    heap_id[..2].copy_from_slice(&i.to_le_bytes());
    (name, LinkRec { hash, heap_id })
}

/// The name a record's heap ID stands for.
fn name_of(r: &LinkRec) -> String {
    colliding(u16::from_le_bytes([r.heap_id[0], r.heap_id[1]])).0
}

/// 200-byte nodes: about seventeen records a leaf, so a few hundred make a tree three deep.
const TINY: Params = Params {
    node_size: 200,
    split_percent: 100,
    merge_percent: 40,
};

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 48,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Inserts and removals by (hash, name) keep the records ordered by hash, then by name (as
    /// libhdf5 orders two link names of one hash), against a `BTreeMap` model: every record
    /// found by its name, each hash's records listed in order, after reopening too.
    #[test]
    fn records_of_one_key_ordered_by_a_tie_break(
        ops in proptest::collection::vec((proptest::bool::weighted(0.7), 0u16..600), 1..900)
    ) {
        let storage = MemStorage::new();
        let cache = mem_cache(&storage, false);
        let mut t = BTree2::create(&cache, S, CollidingNames, TINY).unwrap();
        let mut model: BTreeMap<(u32, String), LinkRec> = BTreeMap::new();
        for (insert, i) in ops {
            let (name, rec) = colliding(i);
            let tie = |r: &LinkRec| name.as_str().cmp(name_of(r).as_str());
            let key = (rec.hash, name.clone());
            if insert {
                let done = t.try_insert_by(&cache, rec.clone(), tie);
                match model.entry(key) {
                    std::collections::btree_map::Entry::Occupied(_) => {
                        let duplicate =
                            matches!(done, Err(h5chunk_btree2::Error::Exists { .. }));
                        proptest::prop_assert!(duplicate, "{:?}", done);
                    }
                    std::collections::btree_map::Entry::Vacant(slot) => {
                        done.unwrap();
                        slot.insert(rec);
                    }
                }
            } else {
                proptest::prop_assert_eq!(t.remove_by(&cache, &rec.hash, tie).unwrap(), model.remove(&key));
            }
        }
        t.validate(&cache).unwrap();
        let header = t.addr();
        proptest::prop_assert!(cache.flush().unwrap().is_complete());
        let eoa = cache.allocator().eoa();
        let reader = mem_cache(&storage, false);
        reader.allocator().set_eoa(eoa);
        let t = BTree2::open(&reader, header, S, CollidingNames).unwrap();
        let all: Vec<LinkRec> = model.values().cloned().collect();
        proptest::prop_assert_eq!(t.to_vec(&reader).unwrap(), all);
        for hash in (0..5).map(|h| h * 1000) {
            let want: Vec<LinkRec> = model
                .range((hash, String::new())..(hash + 1, String::new()))
                .map(|(_, r)| r.clone())
                .collect();
            proptest::prop_assert_eq!(t.get_all(&reader, &hash).unwrap(), want);
        }
        for i in (0..600).step_by(7) {
            let (name, rec) = colliding(i);
            let found = t
                .get_by(&cache, &rec.hash, |r| name.as_str().cmp(name_of(r).as_str()))
                .unwrap();
            proptest::prop_assert_eq!(found.as_ref(), model.get(&(rec.hash, name)));
        }
        proptest::prop_assert!(t.get_all(&reader, &1).unwrap().is_empty());
    }
}

/// A key alone does not name a record of a class whose keys repeat: replacing by key is
/// refused, typed; inserting a second record of a key without a tie-break is a duplicate.
#[test]
fn replacing_by_a_repeated_key_is_refused() {
    let storage = MemStorage::new();
    let cache = mem_cache(&storage, false);
    let mut t = BTree2::create(&cache, S, CollidingNames, TINY).unwrap();
    let (_, a) = colliding(0);
    let (_, b) = colliding(5);
    t.try_insert(&cache, a.clone()).unwrap();
    assert!(matches!(
        t.try_insert(&cache, b.clone()),
        Err(h5chunk_btree2::Error::Exists { .. })
    ));
    assert!(matches!(
        t.insert(&cache, b.clone(), None),
        Err(h5chunk_btree2::Error::Unsupported(_))
    ));
    assert!(matches!(
        t.insert_many(&cache, &[b]),
        Err(h5chunk_btree2::Error::Unsupported(_))
    ));
    assert!(matches!(
        t.modify(&cache, &0, |_| {}),
        Err(h5chunk_btree2::Error::Unsupported(_))
    ));
    assert_eq!(t.get(&cache, &0).unwrap(), Some(a));
}
