//! Whole-tree operations: removing every chunk leaves a valid empty tree (an empty leaf at the
//! root's address, as libhdf5 leaves it) that takes new chunks; deleting a chunk index or a
//! group frees every byte it allocated; sizes are counted.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::sync::Arc;

use h5chunk_btree1::{Chunk, ChunkTree, Group};
use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache};
use h5chunk_format::btree1::ChunkNode;
use h5chunk_format::symbol_table_entry::Cache;
use h5chunk_format::{Addr, Sizes};

const S: Sizes = Sizes::DEFAULT;
const START: Addr = Addr(64);

fn cache(storage: &MemStorage) -> MetadataCache {
    let cache = MetadataCache::new(Arc::new(storage.clone()), CacheConfig::default()).unwrap();
    cache.allocator().set_eoa(START);
    cache
}

fn chunk(i: u64) -> Chunk {
    Chunk {
        offsets: vec![i * 3, 0].into(),
        size: 24,
        filter_mask: 0,
        addr: Addr(1 << 40 | i),
    }
}

#[test]
fn emptied_tree_is_an_empty_leaf_and_grows_again() {
    let storage = MemStorage::new();
    let cache = cache(&storage);
    let tree = ChunkTree::create(&cache, S, 2, &[3, 5, 8]).unwrap();
    for i in 0..50 {
        tree.insert(&cache, &chunk((i * 17) % 50), None).unwrap();
    }
    assert_eq!(tree.depth(&cache).unwrap(), 4);
    for i in 0..50 {
        assert_eq!(tree.remove(&cache, &[i * 3, 0]).unwrap(), Some(chunk(i)));
        assert_eq!(tree.remove(&cache, &[i * 3, 0]).unwrap(), None);
    }
    assert_eq!(tree.to_vec(&cache).unwrap(), vec![]);
    assert_eq!(tree.tree().shape(&cache).unwrap(), vec![vec![0]]);
    // Every emptied node was freed: only the root remains allocated.
    let node = ChunkNode::encoded_len(S, 2, 3) as u64;
    assert_eq!(tree.bytes_used(&cache).unwrap(), node);
    assert!(cache.flush().unwrap().is_complete());
    let root = tree.addr();
    let bytes = storage.to_vec();
    let r = ChunkNode::decode(&bytes[root.get() as usize..], root, S, 2, 3).unwrap();
    assert_eq!(
        (r.level, r.children.len(), r.left, r.right),
        (0, 0, None, None)
    );
    for i in 0..10 {
        tree.insert(&cache, &chunk(i), None).unwrap();
    }
    assert_eq!(tree.to_vec(&cache).unwrap().len(), 10);
}

#[test]
fn delete_frees_everything() {
    let storage = MemStorage::new();
    let cache = cache(&storage);
    let tree = ChunkTree::create(&cache, S, 2, &[3, 5, 8]).unwrap();
    for i in 0..60 {
        tree.insert(&cache, &chunk(i), None).unwrap();
    }
    let (nodes, depth) = tree.tree().node_count(&cache).unwrap();
    assert_eq!(depth, 4);
    assert_eq!(
        tree.bytes_used(&cache).unwrap(),
        nodes * ChunkNode::encoded_len(S, 2, 3) as u64
    );
    let mut seen = Vec::new();
    tree.delete(&cache, |c| {
        seen.push(c.clone());
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, (0..60).map(chunk).collect::<Vec<_>>());
    assert_eq!(cache.allocator().eoa(), START);

    let g = Group::create(&cache, S, 2, 2, 16).unwrap();
    for i in 0..80 {
        g.insert(
            &cache,
            format!("x{i}").as_bytes(),
            Addr(0x30),
            Cache::Nothing,
        )
        .unwrap();
    }
    assert!(g.tree().node_count(&cache).unwrap().1 >= 3);
    assert!(g.bytes_used(&cache).unwrap() > g.tree().bytes_used(&cache).unwrap());
    g.delete(&cache).unwrap();
    assert_eq!(cache.allocator().eoa(), START);
    assert_eq!(cache.allocator().free_space(), 0);
}
