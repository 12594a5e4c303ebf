//! Hostile input (docs/STYLE.md, section 4; docs/format/skiplist.md §4–§5): every block rejects
//! truncation and flipped bytes when read through the cache, and a cyclic or misdirected
//! pointer in a corrupt file is an error, not a hang or a wrong answer.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::sync::Arc;

use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache};
use h5chunk_format::chunk_record::ChunkRecord;
use h5chunk_format::{Addr, Sizes};
use h5chunk_skiplist::{Error, Lookup, Params, SkipList, Supernode, SupernodeContext, Tail};

const STEPS: u64 = 21;

fn params() -> Params {
    Params {
        steps_per_supernode: 2,
        max_height: 5,
        ..Params::default()
    }
}

/// A flushed list of 11 supernodes whose slots all hold chunk addresses; the file's bytes, the
/// tail's address, and each supernode's (index, address, length).
fn build() -> (Vec<u8>, Addr, Vec<(u64, Addr, usize)>) {
    let storage = MemStorage::new();
    let cache = MetadataCache::new(Arc::new(storage.clone()), CacheConfig::default()).unwrap();
    let list = SkipList::create(&cache, Sizes::DEFAULT, params()).unwrap();
    list.extend(&cache, STEPS).unwrap();
    for i in 0..STEPS {
        list.insert(
            &cache,
            i,
            ChunkRecord {
                addr: Some(Addr(0x9000 + i)),
                size: 0,
                mask: 0,
            },
        )
        .unwrap();
    }
    assert!(cache.flush().unwrap().is_complete());
    let mut nodes = Vec::new();
    for k in 1..=list.supernodes(&cache).unwrap() {
        let at = list.locate(&cache, Lookup::Inner, k).unwrap();
        assert_eq!(
            cache
                .get::<Supernode>(at, &ctx(list.addr(), Some(k)))
                .unwrap()
                .read()
                .index,
            k
        );
        nodes.push((k, at, supernode_len(k)));
    }
    (storage.to_vec(), list.addr(), nodes)
}

fn supernode_len(k: u64) -> usize {
    let h = k.trailing_zeros() as usize + 1;
    // 10 + O + L + 2·h·O + 2 slots × O.
    10 + 8 + 8 + 16 * h + 16
}

fn ctx(tail: Addr, expect: Option<u64>) -> SupernodeContext {
    SupernodeContext {
        sizes: Sizes::DEFAULT,
        params: params(),
        codec: params().codec(Sizes::DEFAULT).unwrap(),
        tail,
        expect,
    }
}

/// Open the list in `bytes` and read all of it every way; the first error.
fn read_all(bytes: Vec<u8>, tail: Addr) -> Result<Vec<ChunkRecord>, Error> {
    let cache = MetadataCache::new(
        Arc::new(MemStorage::from_vec(bytes)),
        CacheConfig::default(),
    )?;
    let list = SkipList::open(&cache, tail, Sizes::DEFAULT)?;
    let mut fwd = Vec::new();
    list.for_each(&cache, |_, r| fwd.push(r))?;
    let mut back = Vec::new();
    list.for_each_backward(&cache, |_, r| back.push(r))?;
    back.reverse();
    assert_eq!(fwd, back);
    for lookup in Lookup::ALL {
        for i in 0..list.len(&cache)? {
            cache.evict_clean();
            assert_eq!(list.get_with(&cache, lookup, i)?, fwd[i as usize]);
        }
    }
    Ok(fwd)
}

#[test]
fn intact_file_reads_back() {
    let (bytes, tail, _) = build();
    let records = read_all(bytes, tail).unwrap();
    assert_eq!(records.len() as u64, STEPS);
}

#[test]
fn rejects_flipped_byte() {
    let (bytes, tail, nodes) = build();
    let tail_len = Tail::encoded_len(Sizes::DEFAULT, params().max_height);
    let blocks = std::iter::once((tail, tail_len)).chain(nodes.iter().map(|&(_, a, l)| (a, l)));
    let mut flips = 0;
    for (at, len) in blocks {
        for off in 0..len {
            let mut b = bytes.clone();
            b[at.get() as usize + off] ^= 0x40;
            assert!(
                read_all(b, tail).is_err(),
                "flip at {at}+{off} went unnoticed"
            );
            flips += 1;
        }
    }
    // The rest of the file is ghost space: reserved, never written, never read.
    let cache = MetadataCache::new(
        Arc::new(MemStorage::from_vec(bytes.clone())),
        CacheConfig::default(),
    )
    .unwrap();
    let ghosts = SkipList::open(&cache, tail, Sizes::DEFAULT)
        .unwrap()
        .usage(&cache)
        .unwrap()
        .ghosts;
    assert!(bytes.len() - flips <= ghosts as usize);
}

#[test]
fn rejects_truncation() {
    let (bytes, tail, _) = build();
    for len in 0..bytes.len() {
        assert!(
            read_all(bytes[..len].to_vec(), tail).is_err(),
            "truncated to {len}"
        );
    }
}

/// Re-encode supernode `k` (with a valid checksum) after `edit`.
fn rewrite(bytes: &mut [u8], tail: Addr, at: Addr, k: u64, edit: impl FnOnce(&mut Supernode)) {
    let len = supernode_len(k);
    let range = at.get() as usize..at.get() as usize + len;
    let mut sn = Supernode::decode(&bytes[range.clone()], at, &ctx(tail, Some(k))).unwrap();
    edit(&mut sn);
    let mut out = Vec::new();
    sn.encode(&mut out).unwrap();
    bytes[range].copy_from_slice(&out);
}

/// A pointer that leads to the wrong supernode: found on a cache hit (`Invalid`) or when the
/// supernode is read and decoded (`Read`, whose source is the format's `Invalid`).
fn is_corruption(e: &Error) -> bool {
    matches!(
        e,
        Error::Format(h5chunk_format::Error::Invalid { .. })
            | Error::Cache(h5chunk_cache::Error::Read {
                source: h5chunk_format::Error::Invalid { .. },
                ..
            })
    )
}

#[test]
fn cyclic_pointers_are_errors_not_hangs() {
    let (bytes, tail, nodes) = build();
    let addr = |k: u64| nodes[k as usize - 1].1;

    // Supernode 7's back pointer of level 1 leads to itself: backward iteration would loop.
    let mut b = bytes.clone();
    rewrite(&mut b, tail, addr(7), 7, |sn| sn.back[0] = Some(addr(7)));
    let e = read_all(b, tail).unwrap_err();
    assert!(is_corruption(&e), "{e}");

    // Supernode 5's forward pointer of level 1 leads back to supernode 2: a forward cycle.
    let mut b = bytes.clone();
    rewrite(&mut b, tail, addr(5), 5, |sn| sn.forward[0] = Some(addr(2)));
    let e = read_all(b, tail).unwrap_err();
    assert!(is_corruption(&e), "{e}");

    // Supernode 8 (the root) points down to itself at level 3: a lookup that descends
    // through it must not follow it.
    let mut b = bytes.clone();
    rewrite(&mut b, tail, addr(8), 8, |sn| sn.back[2] = Some(addr(8)));
    let cache =
        MetadataCache::new(Arc::new(MemStorage::from_vec(b)), CacheConfig::default()).unwrap();
    let list = SkipList::open(&cache, tail, Sizes::DEFAULT).unwrap();
    // Supernode 4 (slots 6, 7) is reached from the root by its back pointer of level 3.
    let e = list.get_with(&cache, Lookup::BinaryTree, 6).unwrap_err();
    assert!(is_corruption(&e), "{e}");

    // The tail's right-most pointer of level 1 leads to supernode 9 instead of 11.
    let mut b = bytes.clone();
    let storage = MemStorage::from_vec(b.clone());
    let c = MetadataCache::new(Arc::new(storage), CacheConfig::default()).unwrap();
    let mut t = c.get::<Tail>(tail, &Sizes::DEFAULT).unwrap().read().clone();
    t.levels[0].rightmost = Some(addr(9));
    let mut img = Vec::new();
    t.encode(&mut img).unwrap();
    b[tail.get() as usize..tail.get() as usize + img.len()].copy_from_slice(&img);
    let e = read_all(b, tail).unwrap_err();
    assert!(is_corruption(&e), "{e}");

    // A supernode of another list (another tail address) is refused.
    let mut b = bytes;
    rewrite(&mut b, tail, addr(3), 3, |sn| sn.tail = Addr(0x4242));
    let e = read_all(b, tail).unwrap_err();
    assert!(is_corruption(&e), "{e}");
}
