//! Our trees take the shape libhdf5 gives them: replaying the chunks of libhdf5-written trees
//! in key order (the order h5py's single write allocated them) yields the same nodes, node by
//! node: level, keys (size, mask, offsets, the non-tight right keys included) and children.
//! Plus the documented split figures: 200 sequential 1-D chunks give leaves of 57, 57, 57, 29
//! with K = 32 (a 57/7 split), and 14/2 with K = 8.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::sync::Arc;

use h5chunk_btree1::entry::{NodeCtx, NodeEntry};
use h5chunk_btree1::{Chunk, ChunkTree, DEFAULT_CHUNK_K};
use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache};
use h5chunk_format::btree1::{ChunkKey, Node};
use h5chunk_format::{Addr, Sizes};
use h5chunk_testkit::{H5File, fixtures};

/// A node without its addresses: level, keys, children of a leaf, has left and right siblings.
type NodeImage = (u8, Vec<ChunkKey>, Vec<Addr>, bool, bool);

/// Every node under `addr` in depth-first order, without its own address and sibling
/// addresses (which depend on allocation): (level, keys, children of leaves).
fn dump(cache: &MetadataCache, ctx: &NodeCtx<u8>, addr: Addr, out: &mut Vec<NodeImage>) {
    let node: Node<ChunkKey> = cache
        .get::<NodeEntry<ChunkKey>>(addr, ctx)
        .unwrap()
        .read()
        .node()
        .clone();
    let leaf_children = if node.level == 0 {
        node.children.clone()
    } else {
        Vec::new()
    };
    out.push((
        node.level,
        node.keys.clone(),
        leaf_children,
        node.left.is_some(),
        node.right.is_some(),
    ));
    if node.level > 0 {
        for &c in &node.children {
            dump(cache, ctx, c, out);
        }
    }
}

#[test]
fn replaying_libhdf5_trees_gives_identical_nodes() {
    let list = fixtures::datasets(|e, o| {
        o["index_type"] == "btree1"
            && e["userblock_size"].as_u64() == Some(0)
            && o["chunks_allocated"].as_u64().unwrap_or(0) > 0
            && o["filters"].as_array().is_none_or(|f| f.is_empty())
            && o["alloc_time"] != "early"
    });
    let mut replayed = 0;
    let mut deep = 0;
    for fx in &list {
        let what = format!("{}:{}", fx.file.display(), fx.path());
        let f = H5File::open(&fx.file);
        let ds = f.dataset(fx.path());
        let layout = ds.chunked();
        // From the manifest: a v2/v3 superblock keeps a non-default K in its extension,
        // which the testkit's reader does not read.
        let k = fx.entry["istore_k"].as_u64().unwrap() as u16;
        let nd = layout.dims.len() as u8;
        let ctx = NodeCtx {
            sizes: f.sizes(),
            k,
            params: nd,
        };
        let theirs_cache = f.cache(CacheConfig::default());
        let root = layout.address.unwrap();
        let tree = ChunkTree::open(&theirs_cache, root, f.sizes(), k, &layout.dims).unwrap();
        let chunks = tree.to_vec(&theirs_cache).unwrap();
        let mut theirs = Vec::new();
        dump(&theirs_cache, &ctx, root, &mut theirs);

        let storage = MemStorage::new();
        let cache = MetadataCache::new(Arc::new(storage), CacheConfig::default()).unwrap();
        cache.allocator().set_eoa(Addr(1 << 20));
        let ours = ChunkTree::create(&cache, f.sizes(), k, &layout.dims).unwrap();
        for c in &chunks {
            ours.insert(&cache, c, None).unwrap();
        }
        let mut mine = Vec::new();
        dump(&cache, &ctx, ours.addr(), &mut mine);
        assert_eq!(mine, theirs, "{what}");
        replayed += 1;
        if theirs[0].0 > 0 {
            deep += 1;
        }
    }
    assert!(replayed >= 5 && deep >= 2, "{replayed} trees, {deep} deep");
}

fn sequential(k: u16, n: u64) -> Vec<Vec<usize>> {
    let cache = MetadataCache::new(Arc::new(MemStorage::new()), CacheConfig::default()).unwrap();
    cache.allocator().set_eoa(Addr(4096));
    let tree = ChunkTree::create(&cache, Sizes::DEFAULT, k, &[1, 1]).unwrap();
    for i in 0..n {
        let c = Chunk {
            offsets: vec![i].into(),
            size: 1,
            filter_mask: 0,
            addr: Addr(1 << 30 | i),
        };
        tree.insert(&cache, &c, None).unwrap();
    }
    tree.tree().shape(&cache).unwrap()
}

#[test]
fn sequential_appends_split_like_libhdf5() {
    assert_eq!(
        sequential(DEFAULT_CHUNK_K, 200),
        vec![vec![4], vec![57, 57, 57, 29]]
    );
    assert_eq!(sequential(8, 20), vec![vec![2], vec![14, 6]]);
    // Depth 3: with K = 2 (4 children a node), appends split 3/1.
    assert_eq!(
        sequential(2, 40),
        vec![
            vec![4],
            vec![3, 3, 3, 4],
            vec![3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4]
        ]
    );
}
