//! Corrupt trees yield errors, never a panic, a hang or a stack overflow: bad signatures, levels
//! and entry counts out of range, children that point to themselves or to an ancestor, empty
//! internal nodes, and every single-byte flip of a whole tree and of a group.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::sync::Arc;

use h5chunk_btree1::{Chunk, ChunkTree, Error, Group};
use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache};
use h5chunk_format::btree1::{ChunkNode, MAX_DEPTH};
use h5chunk_format::symbol_table_entry::Cache;
use h5chunk_format::{Addr, Sizes};

const S: Sizes = Sizes::DEFAULT;
const K: u16 = 2;
const DIMS: [u64; 2] = [2, 4];

/// A three-level chunk tree (K = 2, 40 chunks) in storage: its bytes and root.
fn built() -> (Vec<u8>, Addr) {
    let storage = MemStorage::new();
    let cache = MetadataCache::new(Arc::new(storage.clone()), CacheConfig::default()).unwrap();
    cache.allocator().set_eoa(Addr(64));
    let tree = ChunkTree::create(&cache, S, K, &DIMS).unwrap();
    for i in 0..40u64 {
        let c = Chunk {
            offsets: vec![i * 2].into(),
            size: 8,
            filter_mask: 0,
            addr: Addr(0x10_0000 + i),
        };
        tree.insert(&cache, &c, None).unwrap();
    }
    assert_eq!(tree.depth(&cache).unwrap(), 3);
    let root = tree.addr();
    assert!(cache.flush().unwrap().is_complete());
    (storage.to_vec(), root)
}

fn node_len() -> usize {
    ChunkNode::encoded_len(S, K, 2)
}

/// Run every operation over `bytes`; each must end, Ok or Err. Returns the first error.
fn exercise(bytes: Vec<u8>, root: Addr) -> Option<Error> {
    let cache = MetadataCache::new(
        Arc::new(MemStorage::from_vec(bytes)),
        CacheConfig::default(),
    )
    .unwrap();
    let tree = match ChunkTree::open(&cache, root, S, K, &DIMS) {
        Ok(t) => t,
        Err(e) => return Some(e),
    };
    let mut first = None;
    let mut note = |r: Result<(), Error>| {
        if let Err(e) = r
            && first.is_none()
        {
            first = Some(e);
        }
    };
    note(tree.to_vec(&cache).map(drop));
    note(tree.get(&cache, &[20]).map(drop));
    note(tree.get(&cache, &[200]).map(drop));
    note(tree.tree().shape(&cache).map(drop));
    note(tree.bytes_used(&cache).map(drop));
    let c = Chunk {
        offsets: vec![41].into(),
        size: 8,
        filter_mask: 0,
        addr: Addr(0x20_0000),
    };
    note(tree.insert(
        &cache,
        &Chunk {
            offsets: vec![40].into(),
            ..c.clone()
        },
        None,
    ));
    note(tree.insert(
        &cache,
        &Chunk {
            offsets: vec![0].into(),
            ..c.clone()
        },
        None,
    ));
    note(tree.remove(&cache, &[10]).map(drop));
    note(tree.remove(&cache, &[78]).map(drop));
    note(tree.to_vec(&cache).map(drop));
    first
}

/// The node at `root` in `bytes`, decoded.
fn node(bytes: &[u8], at: Addr) -> ChunkNode {
    let a = at.get() as usize;
    ChunkNode::decode(&bytes[a..a + node_len()], at, S, K, 2).unwrap()
}

fn put(bytes: &mut [u8], at: Addr, n: &ChunkNode) {
    let mut out = Vec::new();
    n.encode(S, K, 2, &mut out).unwrap();
    let a = at.get() as usize;
    bytes[a..a + out.len()].copy_from_slice(&out);
}

#[test]
fn intact_tree_has_no_error() {
    let (bytes, root) = built();
    assert!(exercise(bytes, root).is_none());
}

#[test]
fn rejects_bad_signature() {
    let (mut bytes, root) = built();
    bytes[root.get() as usize] = b'X';
    assert!(matches!(
        exercise(bytes, root),
        Some(Error::Cache(h5chunk_cache::Error::Read {
            source: h5chunk_format::Error::BadSignature { .. },
            ..
        }))
    ));
}

#[test]
fn rejects_level_and_count_out_of_range() {
    let (bytes, root) = built();
    let mut b = bytes.clone();
    b[root.get() as usize + 5] = MAX_DEPTH + 1;
    assert!(matches!(
        exercise(b, root),
        Some(Error::Cache(h5chunk_cache::Error::Read {
            source: h5chunk_format::Error::BadValue {
                field: "node level",
                ..
            },
            ..
        }))
    ));
    let mut b = bytes.clone();
    b[root.get() as usize + 6] = 2 * K as u8 + 1;
    assert!(matches!(
        exercise(b, root),
        Some(Error::Cache(h5chunk_cache::Error::Read {
            source: h5chunk_format::Error::BadValue {
                field: "entries used",
                ..
            },
            ..
        }))
    ));
    // A child whose level is not its parent's minus one.
    let r = node(&bytes, root);
    let child = r.children[0];
    let mut b = bytes.clone();
    b[child.get() as usize + 5] = 0;
    assert!(matches!(exercise(b, root), Some(Error::Corrupt { .. })));
    // An internal node below the root with no children.
    let mut b = bytes.clone();
    b[child.get() as usize + 6] = 0;
    assert!(matches!(exercise(b, root), Some(Error::Corrupt { .. })));
}

#[test]
fn rejects_children_pointing_up() {
    let (bytes, root) = built();
    // The root's first child is the root itself.
    let mut r = node(&bytes, root);
    r.children[0] = root;
    let mut b = bytes.clone();
    put(&mut b, root, &r);
    assert!(matches!(exercise(b, root), Some(Error::Corrupt { .. })));
    // A level-1 node whose child is the root (a cycle through two levels).
    let r = node(&bytes, root);
    let mid_at = r.children[1];
    let mut mid = node(&bytes, mid_at);
    mid.children[0] = root;
    let mut b = bytes.clone();
    put(&mut b, mid_at, &mid);
    assert!(matches!(exercise(b, root), Some(Error::Corrupt { .. })));
    // Two children that are the same node: a walk reports it instead of visiting it twice
    // (shared subtrees would make a walk exponential in the depth).
    let mut r = node(&bytes, root);
    r.children[1] = r.children[0];
    let mut b = bytes.clone();
    put(&mut b, root, &r);
    let cache =
        MetadataCache::new(Arc::new(MemStorage::from_vec(b)), CacheConfig::default()).unwrap();
    let tree = ChunkTree::open(&cache, root, S, K, &DIMS).unwrap();
    assert!(matches!(tree.to_vec(&cache), Err(Error::Corrupt { .. })));
    assert!(matches!(
        tree.bytes_used(&cache),
        Err(Error::Corrupt { .. })
    ));
    // The same with levels forged to match: the root claims level 1 and points to itself.
    let mut r = node(&bytes, root);
    r.level = 1;
    r.children = vec![root, r.children[1]];
    r.keys.truncate(3);
    let mut b = bytes.clone();
    put(&mut b, root, &r);
    assert!(exercise(b, root).is_some());
}

#[test]
fn every_flipped_byte_is_survived() {
    let (bytes, root) = built();
    let mut errors = 0;
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0xa5;
        if exercise(b, root).is_some() {
            errors += 1;
        }
    }
    assert!(errors > 0);
}

#[test]
fn corrupt_groups_are_errors() {
    let storage = MemStorage::new();
    let cache = MetadataCache::new(Arc::new(storage.clone()), CacheConfig::default()).unwrap();
    cache.allocator().set_eoa(Addr(64));
    let g = Group::create(&cache, S, 2, 1, 16).unwrap();
    for i in 0..30 {
        g.insert(
            &cache,
            format!("m{i:02}").as_bytes(),
            Addr(0x40),
            Cache::Nothing,
        )
        .unwrap();
    }
    let (btree, heap) = (g.btree_address(), g.heap_address());
    assert!(cache.flush().unwrap().is_complete());
    let bytes = storage.to_vec();
    let run = |b: Vec<u8>| -> Option<Error> {
        let cache =
            MetadataCache::new(Arc::new(MemStorage::from_vec(b)), CacheConfig::default()).unwrap();
        let g = match Group::open(&cache, btree, heap, S, 2, 1) {
            Ok(g) => g,
            Err(e) => return Some(e),
        };
        let mut first = None;
        for r in [
            g.to_vec(&cache).map(drop),
            g.get(&cache, b"m07").map(drop),
            g.insert(&cache, b"new", Addr(0x40), Cache::Nothing),
            g.bytes_used(&cache).map(drop),
        ] {
            if let Err(e) = r
                && first.is_none()
            {
                first = Some(e);
            }
        }
        first
    };
    assert!(run(bytes.clone()).is_none());
    let mut b = bytes.clone();
    b[heap.get() as usize] = b'X';
    assert!(run(b).is_some());
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x5a;
        let _ = run(b);
    }
}
