//! Model tests: random operation sequences against a `BTreeMap`, for chunk trees of ranks 1 to
//! 4 and for old-style groups, with small K values so that trees grow several levels, with
//! close-and-reopen from the bytes in storage, the tree's structure (levels, sibling links)
//! checked, and the write order checked on every flush.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use h5chunk_btree1::{Chunk, ChunkTree, Error, Group, Located};
use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache, check_write_order};
use h5chunk_format::symbol_table_entry::Cache;
use h5chunk_format::{Addr, Sizes};
use proptest::prelude::*;

const S: Sizes = Sizes::DEFAULT;

fn new_cache(storage: &MemStorage) -> MetadataCache {
    let config = CacheConfig {
        record_trace: true,
        // Small enough that clean nodes are evicted and read back during a run.
        max_bytes: 64 << 10,
        ..CacheConfig::default()
    };
    let cache = MetadataCache::new(Arc::new(storage.clone()), config).unwrap();
    let eoa = cache.allocator().eoa();
    if eoa.get() < 512 {
        cache.allocator().set_eoa(Addr(512));
    }
    cache
}

fn flush_checked(cache: &MetadataCache) {
    assert!(cache.flush().unwrap().is_complete());
    check_write_order(&cache.take_trace()).expect("write order");
}

#[derive(Clone, Debug)]
enum ChunkOp {
    Insert(Vec<u64>, u32, u32),
    Get(Vec<u64>),
    Remove(Vec<u64>),
    Iterate(usize),
    Reopen,
}

fn chunk_ops(rank: usize) -> impl Strategy<Value = Vec<ChunkOp>> {
    let coords = proptest::collection::vec(0u64..7, rank);
    let op = prop_oneof![
        6 => (coords.clone(), 1u32..5000, 0u32..4).prop_map(|(c, s, m)| ChunkOp::Insert(c, s, m)),
        2 => coords.clone().prop_map(ChunkOp::Get),
        2 => coords.prop_map(ChunkOp::Remove),
        1 => (1usize..50).prop_map(ChunkOp::Iterate),
        1 => Just(ChunkOp::Reopen),
    ];
    proptest::collection::vec(op, 1..250)
}

fn run_chunk_model(_rank: usize, k: u16, chunk: &[u64], ops: &[ChunkOp]) {
    let mut dims = chunk.to_vec();
    dims.push(4);
    let storage = MemStorage::new();
    let mut cache = new_cache(&storage);
    let root = ChunkTree::create(&cache, S, k, &dims).unwrap().addr();
    let mut model: BTreeMap<Vec<u64>, (u32, u32, Addr)> = BTreeMap::new();
    let mut next_addr = 1u64 << 40;
    for op in ops {
        let tree = ChunkTree::open(&cache, root, S, k, &dims).unwrap();
        match op {
            ChunkOp::Insert(c, size, mask) => {
                let offsets: Vec<u64> = c.iter().zip(chunk).map(|(a, b)| a * b).collect();
                next_addr += 1;
                let ch = Chunk {
                    offsets: offsets.clone().into(),
                    size: *size,
                    filter_mask: *mask,
                    addr: Addr(next_addr),
                };
                tree.insert(&cache, &ch, None).unwrap();
                model.insert(offsets, (*size, *mask, Addr(next_addr)));
            }
            ChunkOp::Get(c) => {
                let offsets: Vec<u64> = c.iter().zip(chunk).map(|(a, b)| a * b).collect();
                let got = tree.get(&cache, &offsets).unwrap();
                let want = model.get(&offsets).map(|&(size, filter_mask, addr)| Chunk {
                    offsets: offsets.clone().into(),
                    size,
                    filter_mask,
                    addr,
                });
                assert_eq!(got, want);
                // The lookup by chunk coordinates finds the same record.
                let located = tree.get_scaled(&cache, c).unwrap();
                let want = model
                    .get(&offsets)
                    .map(|&(size, filter_mask, addr)| Located {
                        size,
                        filter_mask,
                        addr,
                    });
                assert_eq!(located, want);
            }
            ChunkOp::Remove(c) => {
                let offsets: Vec<u64> = c.iter().zip(chunk).map(|(a, b)| a * b).collect();
                let got = tree.remove(&cache, &offsets).unwrap().map(|c| c.addr);
                assert_eq!(got, model.remove(&offsets).map(|v| v.2));
            }
            ChunkOp::Iterate(stop) => {
                let mut seen = Vec::new();
                let flow = tree
                    .for_each(&cache, |c| {
                        seen.push(c.offsets.to_vec());
                        if seen.len() == *stop {
                            ControlFlow::Break(())
                        } else {
                            ControlFlow::Continue(())
                        }
                    })
                    .unwrap();
                let want: Vec<Vec<u64>> = model.keys().take(*stop).cloned().collect();
                assert_eq!(seen, want);
                assert_eq!(flow.is_break(), *stop <= model.len());
            }
            ChunkOp::Reopen => {
                flush_checked(&cache);
                cache = new_cache(&storage);
            }
        }
    }
    let tree = ChunkTree::open(&cache, root, S, k, &dims).unwrap();
    tree.tree().shape(&cache).unwrap();
    let all: Vec<(Vec<u64>, (u32, u32, Addr))> = tree
        .to_vec(&cache)
        .unwrap()
        .into_iter()
        .map(|c| (c.offsets.to_vec(), (c.size, c.filter_mask, c.addr)))
        .collect();
    assert_eq!(all, model.into_iter().collect::<Vec<_>>());
    flush_checked(&cache);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn chunk_tree_rank1_matches_model(k in 1u16..4, c0 in 1u64..5, ops in chunk_ops(1)) {
        run_chunk_model(1, k, &[c0], &ops);
    }

    #[test]
    fn chunk_tree_rank2_matches_model(k in 1u16..4, c in proptest::collection::vec(1u64..5, 2),
        ops in chunk_ops(2)) {
        run_chunk_model(2, k, &c, &ops);
    }

    #[test]
    fn chunk_tree_rank3_matches_model(k in 1u16..4, c in proptest::collection::vec(1u64..5, 3),
        ops in chunk_ops(3)) {
        run_chunk_model(3, k, &c, &ops);
    }

    #[test]
    fn chunk_tree_rank4_matches_model(k in 1u16..4, c in proptest::collection::vec(1u64..5, 4),
        ops in chunk_ops(4)) {
        run_chunk_model(4, k, &c, &ops);
    }
}

#[derive(Clone, Debug)]
enum GroupOp {
    Insert(String),
    Lookup(String),
    List,
    Reopen,
}

fn group_ops() -> impl Strategy<Value = Vec<GroupOp>> {
    let name = "[a-e]{1,5}";
    let op = prop_oneof![
        6 => name.prop_map(GroupOp::Insert),
        3 => name.prop_map(GroupOp::Lookup),
        1 => Just(GroupOp::List),
        1 => Just(GroupOp::Reopen),
    ];
    proptest::collection::vec(op, 1..200)
}

fn run_group_model(internal_k: u16, leaf_k: u16, ops: &[GroupOp]) {
    let storage = MemStorage::new();
    let mut cache = new_cache(&storage);
    let (btree, heap) = {
        let g = Group::create(&cache, S, internal_k, leaf_k, 24).unwrap();
        (g.btree_address(), g.heap_address())
    };
    let mut model: BTreeMap<Vec<u8>, Addr> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        let g = Group::open(&cache, btree, heap, S, internal_k, leaf_k).unwrap();
        match op {
            GroupOp::Insert(name) => {
                let oh = Addr(0x1000 + i as u64);
                let r = g.insert(&cache, name.as_bytes(), oh, Cache::Nothing);
                if model.contains_key(name.as_bytes()) {
                    assert!(matches!(r, Err(Error::Exists(_))), "{r:?}");
                } else {
                    r.unwrap();
                    model.insert(name.as_bytes().to_vec(), oh);
                }
            }
            GroupOp::Lookup(name) => {
                let got = g
                    .get(&cache, name.as_bytes())
                    .unwrap()
                    .and_then(|e| e.object_header);
                assert_eq!(got, model.get(name.as_bytes()).copied());
            }
            GroupOp::List => {
                let got: Vec<(Vec<u8>, Addr)> = g
                    .to_vec(&cache)
                    .unwrap()
                    .into_iter()
                    .map(|l| (l.name, l.entry.object_header.unwrap()))
                    .collect();
                assert_eq!(got, model.clone().into_iter().collect::<Vec<_>>());
            }
            GroupOp::Reopen => {
                flush_checked(&cache);
                cache = new_cache(&storage);
            }
        }
    }
    let g = Group::open(&cache, btree, heap, S, internal_k, leaf_k).unwrap();
    g.tree().shape(&cache).unwrap();
    let names: Vec<Vec<u8>> = g
        .to_vec(&cache)
        .unwrap()
        .into_iter()
        .map(|l| l.name)
        .collect();
    assert_eq!(names, model.keys().cloned().collect::<Vec<_>>());
    flush_checked(&cache);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn group_matches_model(internal_k in 1u16..4, leaf_k in 1u16..3, ops in group_ops()) {
        run_group_model(internal_k, leaf_k, &ops);
    }
}

#[test]
fn get_scaled_rejects_a_wrong_rank_and_offsets_past_2_64() {
    let storage = MemStorage::new();
    let cache = new_cache(&storage);
    let dims = [10u64, 20, 4];
    let tree = ChunkTree::create(&cache, S, 4, &dims).unwrap();
    let ch = Chunk {
        offsets: [10u64, 40].into_iter().collect(),
        size: 800,
        filter_mask: 0,
        addr: Addr(4096),
    };
    tree.insert(&cache, &ch, None).unwrap();
    assert_eq!(
        tree.get_scaled(&cache, &[1, 2]).unwrap(),
        Some(Located {
            size: 800,
            filter_mask: 0,
            addr: Addr(4096)
        })
    );
    assert_eq!(tree.get_scaled(&cache, &[2, 1]).unwrap(), None);
    assert!(matches!(
        tree.get_scaled(&cache, &[1]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        tree.get_scaled(&cache, &[u64::MAX / 2, 0]),
        Err(Error::InvalidArgument(_))
    ));
}
