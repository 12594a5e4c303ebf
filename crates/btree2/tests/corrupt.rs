//! Hostile input: every node type (header, internal node, leaf) rejects truncation, flipped
//! bytes, counts inconsistent with the node size or with each other, a depth beyond the stated
//! maximum, and cycles, with an error and never a panic or a hang.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use common::*;
use h5chunk_btree2::{BTree2, Error};
use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache};
use h5chunk_format::btree2::{Geometry, Header, MAX_DEPTH, Node};
use h5chunk_format::checksum::lookup3;
use h5chunk_format::{Addr, Sizes};
use std::sync::Arc;

struct Image {
    bytes: Vec<u8>,
    header: Addr,
}

/// A depth-2 tree of small nodes, flushed to memory.
fn image() -> Image {
    let storage = MemStorage::new();
    let cache = mem_cache(&storage, false);
    let mut t = BTree2::create(&cache, S, class2(), SMALL).unwrap();
    for i in 0..200u64 {
        t.try_insert(&cache, entry(i / 10, i % 10, 0x1000 + i))
            .unwrap();
    }
    assert_eq!(t.depth(), 2);
    let header = t.addr();
    assert!(cache.flush().unwrap().is_complete());
    Image {
        bytes: storage.to_vec(),
        header,
    }
}

/// Open and walk the whole tree in a fresh cache: the first error, or the record count.
fn walk(bytes: &[u8], header: Addr) -> Result<u64, Error> {
    let cache = MetadataCache::new(
        Arc::new(MemStorage::from_vec(bytes.to_vec())),
        CacheConfig::default(),
    )
    .unwrap();
    let t = BTree2::open(&cache, header, S, class2())?;
    let st = t.validate(&cache)?;
    let n = t.to_vec(&cache)?.len() as u64;
    t.nth(&cache, st.records.saturating_sub(1))?;
    t.get(&cache, &[3, 3])?;
    Ok(n)
}

fn decode_header(img: &Image) -> Header {
    let len = Header::encoded_len(S);
    let at = img.header.get() as usize;
    Header::decode(&img.bytes[at..at + len], img.header, S).unwrap()
}

/// (address, depth, nrec, used bytes incl. checksum) of the root, its first child and the
/// first leaf.
fn nodes(img: &Image) -> Vec<(Addr, u16, u64, usize)> {
    let h = decode_header(img);
    let g = Geometry::new(&h, S).unwrap();
    let mut out = Vec::new();
    let (mut addr, mut nrec) = (h.root.unwrap(), u64::from(h.root_nrec));
    for depth in (0..=h.depth).rev() {
        let at = addr.get() as usize;
        let node =
            Node::decode(&img.bytes[at..at + g.node_size()], addr, S, &g, depth, nrec).unwrap();
        out.push((
            addr,
            depth,
            nrec,
            Node::used_len(&g, depth, nrec as usize) + 4,
        ));
        if let Some(c) = node.children.first() {
            (addr, nrec) = (c.addr, c.nrec);
        }
    }
    out
}

/// Re-encode the node at `addr` after `edit`, with a valid checksum.
fn rewrite(
    img: &Image,
    bytes: &mut [u8],
    addr: Addr,
    depth: u16,
    nrec: u64,
    edit: impl FnOnce(&mut Node),
) {
    let h = decode_header(img);
    let g = Geometry::new(&h, S).unwrap();
    let at = addr.get() as usize;
    let mut node = Node::decode(&bytes[at..at + g.node_size()], addr, S, &g, depth, nrec).unwrap();
    edit(&mut node);
    let mut out = Vec::new();
    node.encode(S, &g, depth, &mut out).unwrap();
    bytes[at..at + out.len()].copy_from_slice(&out);
}

fn rewrite_header(img: &Image, bytes: &mut [u8], edit: impl FnOnce(&mut Header)) {
    let mut h = decode_header(img);
    edit(&mut h);
    let mut out = Vec::new();
    h.encode(S, &mut out).unwrap();
    let at = img.header.get() as usize;
    bytes[at..at + out.len()].copy_from_slice(&out);
}

#[test]
fn intact_image_walks() {
    let img = image();
    assert_eq!(walk(&img.bytes, img.header).unwrap(), 200);
    let kinds: Vec<u16> = nodes(&img).iter().map(|n| n.1).collect();
    assert_eq!(kinds, vec![2, 1, 0]);
}

#[test]
fn rejects_truncation() {
    let img = image();
    let mut blocks = vec![(img.header, Header::encoded_len(S))];
    blocks.extend(nodes(&img).iter().map(|&(a, _, _, used)| (a, used)));
    for (addr, len) in blocks {
        for n in 0..len {
            let cut = addr.get() as usize + n;
            let r = walk(&img.bytes[..cut], img.header);
            assert!(r.is_err(), "{addr} cut at +{n}: {r:?}");
        }
    }
}

#[test]
fn rejects_flipped_byte() {
    let img = image();
    let mut blocks = vec![(img.header, Header::encoded_len(S))];
    blocks.extend(nodes(&img).iter().map(|&(a, _, _, used)| (a, used)));
    for (addr, len) in blocks {
        for i in 0..len {
            let mut bad = img.bytes.clone();
            bad[addr.get() as usize + i] ^= 0x10;
            let r = walk(&bad, img.header);
            assert!(r.is_err(), "{addr} byte {i}: {r:?}");
        }
    }
}

#[test]
fn rejects_counts_inconsistent_with_node_size() {
    let img = image();
    let ns = nodes(&img);
    let (root, d1) = (ns[0], ns[1]);
    // The header claims more root records than a root node can hold.
    let mut bad = img.bytes.clone();
    rewrite_header(&img, &mut bad, |h| h.root_nrec = 1000);
    assert!(walk(&bad, img.header).is_err());
    // A pointer claims more records in a child than the child's node size allows: refused
    // before anything is allocated for it.
    let g = Geometry::new(&decode_header(&img), S).unwrap();
    let leaf_max = g.level(0).unwrap().max_nrec;
    for (node, edit_child) in [(root, 0usize), (d1, 0)] {
        let mut bad = img.bytes.clone();
        let over = if node.1 == 2 {
            g.level(1).unwrap().max_nrec + 1
        } else {
            leaf_max + 1
        };
        rewrite(&img, &mut bad, node.0, node.1, node.2, |n| {
            n.children[edit_child].nrec = over
        });
        // The encoder writes the count; the decoder must refuse it.
        assert!(walk(&bad, img.header).is_err(), "depth {}", node.1);
    }
    // Counts that fit but disagree with what the child holds, or with the subtree totals.
    let mut bad = img.bytes.clone();
    rewrite(&img, &mut bad, d1.0, d1.1, d1.2, |n| {
        n.children[0].nrec -= 1
    });
    assert!(walk(&bad, img.header).is_err());
    let mut bad = img.bytes.clone();
    rewrite(&img, &mut bad, root.0, root.1, root.2, |n| {
        n.children[0].total += 1
    });
    assert!(matches!(walk(&bad, img.header), Err(Error::Corrupt { .. })));
    let mut bad = img.bytes.clone();
    rewrite_header(&img, &mut bad, |h| h.total_records += 1);
    assert!(matches!(walk(&bad, img.header), Err(Error::Corrupt { .. })));
}

#[test]
fn rejects_depth_beyond_maximum_and_wrong_depth() {
    let img = image();
    for depth in [MAX_DEPTH + 1, u16::MAX] {
        let mut bad = img.bytes.clone();
        // Written by hand: the encoder does not check the depth, the decoder must.
        let at = img.header.get() as usize;
        bad[at + 12..at + 14].copy_from_slice(&depth.to_le_bytes());
        let len = Header::encoded_len(S);
        let sum = lookup3(&bad[at..at + len - 4]);
        bad[at + len - 4..at + len].copy_from_slice(&sum.to_le_bytes());
        assert!(walk(&bad, img.header).is_err(), "depth {depth}");
    }
    for depth in [0u16, 1, 3, 4] {
        let mut bad = img.bytes.clone();
        rewrite_header(&img, &mut bad, |h| h.depth = depth);
        assert!(walk(&bad, img.header).is_err(), "depth {depth}");
    }
}

#[test]
fn rejects_cycles_without_hanging() {
    let img = image();
    let ns = nodes(&img);
    let (root, d1) = (ns[0], ns[1]);
    // An internal node whose child is the root itself, and a root whose child is itself.
    let mut bad = img.bytes.clone();
    rewrite(&img, &mut bad, d1.0, d1.1, d1.2, |n| {
        n.children[0].addr = root.0;
    });
    assert!(walk(&bad, img.header).is_err());
    let mut bad = img.bytes.clone();
    rewrite(&img, &mut bad, root.0, root.1, root.2, |n| {
        n.children[1].addr = root.0;
    });
    assert!(walk(&bad, img.header).is_err());
    // Two pointers to the same child: counts no longer add up.
    let mut bad = img.bytes.clone();
    rewrite(&img, &mut bad, root.0, root.1, root.2, |n| {
        n.children[1] = n.children[0];
    });
    assert!(walk(&bad, img.header).is_err());
}

#[test]
fn rejects_records_out_of_order_and_wrong_class() {
    let img = image();
    let ns = nodes(&img);
    let leaf = ns[2];
    let mut bad = img.bytes.clone();
    rewrite(&img, &mut bad, leaf.0, leaf.1, leaf.2, |n| {
        let rs = 24;
        let (a, b) = n.records.split_at_mut(rs);
        a.swap_with_slice(&mut b[..rs]);
    });
    assert!(matches!(walk(&bad, img.header), Err(Error::Corrupt { .. })));
    // The tree holds unfiltered records; a filtered class is refused at open.
    let cache = MetadataCache::new(
        Arc::new(MemStorage::from_vec(img.bytes.clone())),
        CacheConfig::default(),
    )
    .unwrap();
    assert!(matches!(
        BTree2::open(&cache, img.header, S, class2f()),
        Err(Error::Mismatch { .. })
    ));
    let _ = Sizes::DEFAULT;
}
