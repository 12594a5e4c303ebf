//! Flush dependencies as the SWMR design (section 8) lists them for the v1 B-tree: internal
//! node → child node, leaf → chunk proxy (chunk index) or symbol table node (group). Checked
//! two ways: the dependency graph equals the tree's structure exactly after splits, root moves
//! and removals, and the cache's write-order checker accepts every flush (and fires when the
//! cache is deliberately broken).
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use h5chunk_btree1::entry::{NodeCtx, NodeEntry};
use h5chunk_btree1::{Chunk, ChunkTree, Group};
use h5chunk_cache::{CacheConfig, Key, MemStorage, MetadataCache, ProxyId, check_write_order};
use h5chunk_format::btree1::{ChunkKey, GroupKey, NodeKey};
use h5chunk_format::symbol_table_entry::Cache;
use h5chunk_format::{Addr, Sizes};

const S: Sizes = Sizes::DEFAULT;

fn cache() -> MetadataCache {
    let config = CacheConfig {
        record_trace: true,
        ..CacheConfig::default()
    };
    let cache = MetadataCache::new(Arc::new(MemStorage::new()), config).unwrap();
    cache.allocator().set_eoa(Addr(512));
    cache
}

/// Every node under `root`: address → (level, children).
fn nodes<K: NodeKey + Send + Sync + 'static>(
    cache: &MetadataCache,
    ctx: &NodeCtx<K::Params>,
    root: Addr,
) -> BTreeMap<Addr, (u8, Vec<Addr>)>
where
    K::Params: Send + Sync + 'static,
{
    let mut out = BTreeMap::new();
    let mut todo = vec![root];
    while let Some(a) = todo.pop() {
        let n = cache
            .get::<NodeEntry<K>>(a, ctx)
            .unwrap()
            .read()
            .node()
            .clone();
        if n.level > 0 {
            todo.extend(&n.children);
        }
        out.insert(a, (n.level, n.children));
    }
    out
}

fn chunk_at(i: u64, addr: Addr) -> Chunk {
    Chunk {
        offsets: vec![i * 2].into(),
        size: 8,
        filter_mask: 0,
        addr,
    }
}

/// Insert 300 chunks in a scrambled order with K = 2 (4 levels), each with a chunk proxy,
/// then remove a third; the graph must mirror the tree.
#[test]
fn dependencies_mirror_the_tree() {
    let cache = cache();
    let tree = ChunkTree::create(&cache, S, 2, &[2, 4]).unwrap();
    let mut proxy_of: BTreeMap<Addr, ProxyId> = BTreeMap::new();
    for j in 0..300u64 {
        let i = (j * 37 + 11) % 300;
        let addr = Addr(1 << 32 | i);
        let p = cache.create_proxy();
        proxy_of.insert(addr, p);
        tree.insert(&cache, &chunk_at(i, addr), Some(p)).unwrap();
    }
    for i in (0..300u64).step_by(3) {
        let c = tree.remove(&cache, &[i * 2]).unwrap().unwrap();
        cache
            .remove_proxy(proxy_of.remove(&c.addr).unwrap())
            .unwrap();
    }
    assert!(tree.depth(&cache).unwrap() >= 4);
    let ctx = NodeCtx {
        sizes: S,
        k: 2,
        params: 2u8,
    };
    for (addr, (level, children)) in nodes::<ChunkKey>(&cache, &ctx, tree.addr()) {
        let deps: BTreeSet<Key> = cache.flush_children(addr).into_iter().collect();
        let want: BTreeSet<Key> = if level > 0 {
            children.iter().map(|&c| Key::Entry(c)).collect()
        } else {
            children.iter().map(|c| Key::Proxy(proxy_of[c])).collect()
        };
        assert_eq!(deps, want, "node {addr} at level {level}");
    }

    // Nothing reaches the file while the chunks are dirty.
    let report = cache.flush().unwrap();
    assert_eq!(report.written, 0);
    assert_eq!(report.dirty_proxies.len(), proxy_of.len());
    // The chunk cache writes the chunks; then the nodes follow, children first.
    let report = cache
        .flush_with(&mut |_: &[ProxyId]| Ok::<(), Box<dyn std::error::Error + Send + Sync>>(()))
        .unwrap();
    assert!(report.is_complete());
    check_write_order(&cache.take_trace()).expect("children before parents");
}

/// With half the chunks written, only the leaves whose chunks are all written (and nothing
/// above a blocked leaf) reach the file.
#[test]
fn leaves_wait_for_their_chunks() {
    let cache = cache();
    let tree = ChunkTree::create(&cache, S, 2, &[2, 4]).unwrap();
    let mut proxies = Vec::new();
    for i in 0..40u64 {
        let p = cache.create_proxy();
        tree.insert(&cache, &chunk_at(i, Addr(1 << 32 | i)), Some(p))
            .unwrap();
        proxies.push(p);
    }
    for p in proxies.iter().take(20) {
        cache.chunk_written(*p).unwrap();
    }
    let report = cache.flush().unwrap();
    assert!(report.written > 0 && !report.blocked.is_empty());
    assert!(report.blocked.contains(&tree.addr()));
    check_write_order(&cache.take_trace()).expect("children before parents");
    for p in &proxies[20..] {
        cache.chunk_written(*p).unwrap();
    }
    assert!(cache.flush().unwrap().is_complete());
    check_write_order(&cache.take_trace()).expect("children before parents");
}

/// A cache that writes parents first is caught by the checker on our dependencies.
#[test]
fn broken_flush_order_is_detected() {
    let cache = cache();
    let tree = ChunkTree::create(&cache, S, 2, &[2, 4]).unwrap();
    for i in 0..40u64 {
        tree.insert(&cache, &chunk_at(i, Addr(1 << 32 | i)), None)
            .unwrap();
    }
    cache.testing_break_flush_order(true);
    let _ = cache.flush().unwrap();
    assert!(check_write_order(&cache.take_trace()).is_err());
}

#[test]
fn group_leaves_depend_on_their_symbol_table_nodes() {
    let cache = cache();
    let g = Group::create(&cache, S, 2, 2, 32).unwrap();
    for i in 0..120u32 {
        let name = format!("n{:03}", (i * 47) % 120);
        g.insert(&cache, name.as_bytes(), Addr(0x100), Cache::Nothing)
            .unwrap();
    }
    let ctx = NodeCtx {
        sizes: S,
        k: 2,
        params: (),
    };
    let all = nodes::<GroupKey>(&cache, &ctx, g.btree_address());
    assert!(all.values().any(|(l, _)| *l >= 2));
    for (addr, (_, children)) in all {
        let deps: BTreeSet<Key> = cache.flush_children(addr).into_iter().collect();
        let want: BTreeSet<Key> = children.iter().map(|&c| Key::Entry(c)).collect();
        assert_eq!(deps, want, "node {addr}");
    }
    assert!(cache.flush().unwrap().is_complete());
    check_write_order(&cache.take_trace()).expect("children before parents");
}
