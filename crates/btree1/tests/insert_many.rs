//! `ChunkTree::insert_many` is `ChunkTree::insert(chunk, None)` on each chunk in order: the
//! same bytes reach the storage (same nodes, splits, keys and space allocation), in an order the
//! write-order checker accepts, with the same flush dependencies, for appends (the fast path),
//! random keys, replacements, duplicates and mixes of them, after removals, in 1-D and 2-D.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use h5chunk_btree1::entry::{NodeCtx, NodeEntry};
use h5chunk_btree1::{Chunk, ChunkTree, DEFAULT_CHUNK_K, Error};
use h5chunk_cache::{CacheConfig, Key, MemStorage, MetadataCache, ProxyId, check_write_order};
use h5chunk_format::btree1::ChunkKey;
use h5chunk_format::{Addr, Sizes};
use proptest::prelude::*;

const S: Sizes = Sizes::DEFAULT;

fn new_cache(storage: &MemStorage) -> MetadataCache {
    let config = CacheConfig {
        record_trace: true,
        // Small enough that clean and dirty nodes are evicted (written) during a batch.
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

/// Every node of the tree and its flush-dependency children.
fn graph(cache: &MetadataCache, k: u16, nd: u8, root: Addr) -> BTreeMap<Addr, BTreeSet<Key>> {
    let ctx = NodeCtx {
        sizes: S,
        k,
        params: nd,
    };
    let mut out = BTreeMap::new();
    let mut todo = vec![root];
    while let Some(a) = todo.pop() {
        let n = cache
            .get::<NodeEntry<ChunkKey>>(a, &ctx)
            .unwrap()
            .read()
            .node()
            .clone();
        if n.level > 0 {
            todo.extend(&n.children);
        }
        out.insert(a, cache.flush_children(a).into_iter().collect());
    }
    out
}

/// One run of a batch, materialised against what is inserted so far.
#[derive(Clone, Debug)]
enum Run {
    /// `n` chunks after the last one, skipping `gap` chunk positions before each.
    Append { n: usize, gap: u64 },
    /// Chunks at random positions up to a little past the last one (new or existing).
    Random { n: usize, seed: u64 },
    /// Chunks already in the tree, replaced (picked by index among them).
    Replace(Vec<usize>),
    /// The batch's previous chunk again, with a new size and address.
    Repeat,
}

fn run() -> impl Strategy<Value = Run> {
    prop_oneof![
        8 => (1usize..1200, prop_oneof![4 => Just(0u64), 1 => 1u64..3])
            .prop_map(|(n, gap)| Run::Append { n, gap }),
        2 => (1usize..40, any::<u64>()).prop_map(|(n, seed)| Run::Random { n, seed }),
        2 => proptest::collection::vec(any::<usize>(), 1..20).prop_map(Run::Replace),
        1 => Just(Run::Repeat),
    ]
}

/// A batch: its runs, and whether both caches are dropped and reopened over their storage
/// before it.
fn batch() -> impl Strategy<Value = Batch> {
    let removals = prop_oneof![
        3 => Just(Vec::new()),
        1 => proptest::collection::vec((any::<bool>(), any::<usize>()), 1..30),
    ];
    (
        proptest::collection::vec(run(), 1..5),
        proptest::bool::weighted(0.3),
        removals,
    )
        .prop_map(|(runs, reopen, removals)| Batch {
            runs,
            reopen,
            removals,
        })
}

/// One batch of `insert_many` (a loop of `insert` on the other side), after dropping and
/// reopening both caches if `reopen`, and removing chunks from both trees: `(true, i)` one of
/// the last chunks (so that appends follow a right edge that removals moved), `(false, i)`
/// any chunk.
#[derive(Clone, Debug)]
struct Batch {
    runs: Vec<Run>,
    reopen: bool,
    removals: Vec<(bool, usize)>,
}

/// The layout of the test dataset: `width` chunks a row along dimension 1 (rank 2) or a
/// plain 1-D dataset (`width` 0); chunk positions are numbered in key order.
struct Grid {
    chunk: Vec<u64>,
    width: u64,
}

impl Grid {
    fn offsets(&self, pos: u64) -> Vec<u64> {
        match (pos.checked_div(self.width), pos.checked_rem(self.width)) {
            (Some(row), Some(col)) => vec![row * self.chunk[0], col * self.chunk[1]],
            _ => vec![pos * self.chunk[0]],
        }
    }
}

/// Turn the runs into chunks, updating `model` (position → chunk) and `serial`.
fn materialise(
    runs: &[Run],
    grid: &Grid,
    model: &mut BTreeMap<u64, Chunk>,
    serial: &mut u64,
) -> Vec<Chunk> {
    let mut out: Vec<Chunk> = Vec::new();
    let mut make = |pos: u64, model: &mut BTreeMap<u64, Chunk>, out: &mut Vec<Chunk>| {
        *serial += 1;
        let c = Chunk {
            offsets: grid.offsets(pos).into(),
            size: 1 + (*serial % 5000) as u32,
            filter_mask: (*serial % 3) as u32,
            addr: Addr((1 << 40) + *serial),
        };
        model.insert(pos, c.clone());
        out.push(c);
    };
    let mut last_pos: Option<u64> = None;
    for r in runs {
        match r {
            Run::Append { n, gap } => {
                for _ in 0..*n {
                    let next = model.keys().next_back().map_or(0, |&p| p + 1) + gap;
                    make(next, model, &mut out);
                    last_pos = Some(next);
                }
            }
            Run::Random { n, seed } => {
                let mut x = *seed | 1;
                let top = model.keys().next_back().map_or(0, |&p| p + 1) + 20;
                for _ in 0..*n {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let pos = (x >> 33) % top;
                    make(pos, model, &mut out);
                    last_pos = Some(pos);
                }
            }
            Run::Replace(picks) => {
                for &i in picks {
                    let keys: Vec<u64> = model.keys().copied().collect();
                    if let Some(&pos) = keys.get(i % keys.len().max(1)) {
                        make(pos, model, &mut out);
                        last_pos = Some(pos);
                    }
                }
            }
            Run::Repeat => {
                if let Some(pos) = last_pos {
                    make(pos, model, &mut out);
                }
            }
        }
    }
    out
}

fn check_batches(k: u16, grid: &Grid, batches: &[Batch]) {
    let mut dims = grid.chunk.clone();
    dims.push(4);
    let nd = dims.len() as u8;
    let one_storage = MemStorage::new();
    let many_storage = MemStorage::new();
    let mut one = new_cache(&one_storage);
    let mut many = new_cache(&many_storage);
    let root = ChunkTree::create(&one, S, k, &dims).unwrap().addr();
    assert_eq!(ChunkTree::create(&many, S, k, &dims).unwrap().addr(), root);
    assert!(one.flush().unwrap().is_complete());
    assert!(many.flush().unwrap().is_complete());
    let mut model = BTreeMap::new();
    let mut serial = 0u64;
    for batch in batches {
        if batch.reopen {
            one = new_cache(&one_storage);
            many = new_cache(&many_storage);
        }
        let a = ChunkTree::open(&one, root, S, k, &dims).unwrap();
        let b = ChunkTree::open(&many, root, S, k, &dims).unwrap();
        for &(tail, i) in &batch.removals {
            let keys: Vec<u64> = model.keys().copied().collect();
            let Some(&pos) = (if tail {
                keys.iter().rev().nth(i % 5)
            } else {
                keys.get(i % keys.len().max(1))
            }) else {
                continue;
            };
            let offsets = grid.offsets(pos);
            let removed = model.remove(&pos);
            assert_eq!(a.remove(&one, &offsets).unwrap(), removed);
            assert_eq!(b.remove(&many, &offsets).unwrap(), removed);
        }
        let chunks = materialise(&batch.runs, grid, &mut model, &mut serial);
        let want = chunks.iter().try_for_each(|c| a.insert(&one, c, None));
        let got = b.insert_many(&many, &chunks);
        match (want, got) {
            (Ok(()), Ok(())) => {}
            // With K = 1 libhdf5's split ratios keep one child in every left node, so a tree
            // of sequential appends deepens by a level every two: both stop at MAX_DEPTH.
            (Err(Error::Corrupt { .. }), Err(Error::Corrupt { .. })) if k == 1 => return,
            (want, got) => panic!("insert: {want:?}, insert_many: {got:?}"),
        }
        assert_eq!(graph(&one, k, nd, root), graph(&many, k, nd, root));
        assert!(one.flush().unwrap().is_complete());
        assert!(many.flush().unwrap().is_complete());
        check_write_order(&many.take_trace()).expect("write order");
        let _ = one.take_trace();
        assert!(
            one_storage.to_vec() == many_storage.to_vec(),
            "bytes differ"
        );
        let listed = b.to_vec(&many).unwrap();
        assert_eq!(a.to_vec(&one).unwrap(), listed);
        assert_eq!(listed, model.values().cloned().collect::<Vec<_>>());
    }
    let b = ChunkTree::open(&many, root, S, k, &dims).unwrap();
    b.tree().shape(&many).unwrap();
}

fn k() -> impl Strategy<Value = u16> {
    prop_oneof![Just(DEFAULT_CHUNK_K), 1u16..5]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// `insert_many` is `insert` on each chunk: same bytes, same dependencies, same chunks.
    #[test]
    fn insert_many_writes_what_insert_writes_1d(
        k in k(),
        c0 in 1u64..5,
        batches in proptest::collection::vec(batch(), 1..5),
    ) {
        check_batches(k, &Grid { chunk: vec![c0], width: 0 }, &batches);
    }

    /// The same in 2-D: a dataset growing along its first dimension, `width` chunks a row.
    #[test]
    fn insert_many_writes_what_insert_writes_2d(
        k in k(),
        chunk in proptest::collection::vec(1u64..5, 2),
        width in 1u64..5,
        batches in proptest::collection::vec(batch(), 1..5),
    ) {
        check_batches(k, &Grid { chunk, width }, &batches);
    }
}

fn chunk_1d(i: u64) -> Chunk {
    Chunk {
        offsets: vec![i * 10].into(),
        size: 40 + (i % 7) as u32,
        filter_mask: 0,
        addr: Addr((1 << 40) + i * 64),
    }
}

/// One batch of 50,000 appended chunks: every one is found, listed in order, in a tree of
/// three levels split as libhdf5 splits.
#[test]
fn insert_many_appends_50000_chunks() {
    let storage = MemStorage::new();
    let cache = new_cache(&storage);
    let tree = ChunkTree::create(&cache, S, DEFAULT_CHUNK_K, &[10, 4]).unwrap();
    let chunks: Vec<Chunk> = (0..50_000).map(chunk_1d).collect();
    tree.insert_many(&cache, &chunks).unwrap();
    for i in (0..50_000).step_by(997).chain([0, 1, 56, 57, 49_999]) {
        assert_eq!(
            tree.get(&cache, &[i * 10]).unwrap(),
            Some(chunk_1d(i)),
            "chunk {i}"
        );
    }
    assert_eq!(tree.get(&cache, &[500_000]).unwrap(), None);
    assert_eq!(tree.to_vec(&cache).unwrap().len(), 50_000);
    assert_eq!(tree.depth(&cache).unwrap(), 3);
    let shape = tree.tree().shape(&cache).unwrap();
    // Sequential appends leave every leaf but the last with 57 of its 64 children.
    let leaves = shape.last().unwrap();
    assert!(leaves[..leaves.len() - 1].iter().all(|&n| n == 57));
    assert!(cache.flush().unwrap().is_complete());
    check_write_order(&cache.take_trace()).expect("write order");
    let reader = new_cache(&storage);
    let tree = ChunkTree::open(&reader, tree.addr(), S, DEFAULT_CHUNK_K, &[10, 4]).unwrap();
    assert_eq!(tree.to_vec(&reader).unwrap(), chunks);
}

/// An invalid chunk stops the batch where the loop of `insert` stops: the chunks before it
/// are in, with the same bytes, and the error is the one `insert` reports.
#[test]
fn insert_many_stops_at_an_invalid_chunk() {
    for bad in [
        Chunk {
            size: 0,
            ..chunk_1d(300)
        },
        Chunk {
            offsets: vec![3005].into(),
            ..chunk_1d(300)
        },
        Chunk {
            offsets: vec![10, 20].into(),
            ..chunk_1d(300)
        },
    ] {
        let mut chunks: Vec<Chunk> = (0..300).map(chunk_1d).collect();
        chunks.push(bad);
        chunks.extend((301..400).map(chunk_1d));
        let (one_storage, many_storage) = (MemStorage::new(), MemStorage::new());
        let (one, many) = (new_cache(&one_storage), new_cache(&many_storage));
        let a = ChunkTree::create(&one, S, 2, &[10, 4]).unwrap();
        let b = ChunkTree::create(&many, S, 2, &[10, 4]).unwrap();
        let want = chunks.iter().try_for_each(|c| a.insert(&one, c, None));
        let got = b.insert_many(&many, &chunks);
        assert!(matches!(want, Err(Error::InvalidArgument(_))), "{want:?}");
        assert!(matches!(got, Err(Error::InvalidArgument(_))), "{got:?}");
        assert_eq!(b.to_vec(&many).unwrap(), chunks[..300].to_vec());
        assert!(one.flush().unwrap().is_complete());
        assert!(many.flush().unwrap().is_complete());
        check_write_order(&many.take_trace()).expect("write order");
        assert!(
            one_storage.to_vec() == many_storage.to_vec(),
            "bytes differ"
        );
    }
}

/// Appended after chunks inserted with chunk proxies, the leaves keep depending on those
/// proxies exactly as with `insert`, and nothing is written before the chunks.
#[test]
fn insert_many_keeps_the_leaves_chunk_dependencies() {
    let (one_storage, many_storage) = (MemStorage::new(), MemStorage::new());
    let (one, many) = (new_cache(&one_storage), new_cache(&many_storage));
    let a = ChunkTree::create(&one, S, 2, &[10, 4]).unwrap();
    let b = ChunkTree::create(&many, S, 2, &[10, 4]).unwrap();
    for i in 0..30 {
        a.insert(&one, &chunk_1d(i), Some(one.create_proxy()))
            .unwrap();
        b.insert(&many, &chunk_1d(i), Some(many.create_proxy()))
            .unwrap();
    }
    let chunks: Vec<Chunk> = (30..200).map(chunk_1d).collect();
    for c in &chunks {
        a.insert(&one, c, None).unwrap();
    }
    b.insert_many(&many, &chunks).unwrap();
    assert_eq!(graph(&one, 2, 2, a.addr()), graph(&many, 2, 2, b.addr()));
    let written = |_: &[ProxyId]| Ok::<(), Box<dyn std::error::Error + Send + Sync>>(());
    assert!(one.flush_with(&mut { written }).unwrap().is_complete());
    assert!(many.flush_with(&mut { written }).unwrap().is_complete());
    check_write_order(&many.take_trace()).expect("write order");
    assert!(
        one_storage.to_vec() == many_storage.to_vec(),
        "bytes differ"
    );
    assert_eq!(b.to_vec(&many).unwrap().len(), 200);
}

/// Batches of appends that end at every point of the splits (right after a leaf, an internal
/// node or the root split, with or without the right key changing since), in 1-D and 2-D.
#[test]
fn insert_many_matches_insert_wherever_a_batch_ends() {
    for k in [2u16, 3, 4] {
        for grid in [
            Grid {
                chunk: vec![10],
                width: 0,
            },
            Grid {
                chunk: vec![2, 3],
                width: 3,
            },
        ] {
            let mut dims = grid.chunk.clone();
            dims.push(4);
            let (one_storage, many_storage) = (MemStorage::new(), MemStorage::new());
            let (one, many) = (new_cache(&one_storage), new_cache(&many_storage));
            let a = ChunkTree::create(&one, S, k, &dims).unwrap();
            let b = ChunkTree::create(&many, S, k, &dims).unwrap();
            let mut pos = 0u64;
            for size in (1..=3).cycle().take(300) {
                let chunks: Vec<Chunk> = (pos..pos + size)
                    .map(|p| Chunk {
                        offsets: grid.offsets(p).into(),
                        ..chunk_1d(p)
                    })
                    .collect();
                pos += size;
                for c in &chunks {
                    a.insert(&one, c, None).unwrap();
                }
                b.insert_many(&many, &chunks).unwrap();
                assert!(one.flush().unwrap().is_complete());
                assert!(many.flush().unwrap().is_complete());
                check_write_order(&many.take_trace()).expect("write order");
                let _ = one.take_trace();
                assert!(
                    one_storage.to_vec() == many_storage.to_vec(),
                    "bytes differ: K = {k}, {} chunks",
                    pos
                );
            }
            assert!(b.tree().shape(&many).unwrap().len() >= 4);
        }
    }
}
