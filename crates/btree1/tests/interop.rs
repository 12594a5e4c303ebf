//! Trees we build are read by libhdf5, and libhdf5 keeps extending them.
//!
//! One earliest-format file holds a 2-D dataset whose v1 B-tree chunk index we built with
//! 10,000 chunks inserted in a scrambled order (depth 3), and an old-style group with 300
//! links whose B-tree, symbol table nodes and local heap we built, and a dataset whose tree we
//! filled with 500 chunks and emptied again. h5py reads every value and lists every link,
//! h5dump reads the file; then h5py appends 1,000 chunks through libhdf5's own B-tree code,
//! writes 10 chunks into the emptied tree and adds a link to our group, and our reader finds
//! all of it, equal to what h5py reports. A second test
//! has libhdf5 build a depth-3 tree that our reader decodes record for record.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::ops::ControlFlow;

use h5chunk_btree1::{
    Chunk, ChunkTree, DEFAULT_CHUNK_K, DEFAULT_GROUP_INTERNAL_K, DEFAULT_GROUP_LEAF_K,
    DEFAULT_HEAP_SIZE, Group,
};
use h5chunk_cache::{CacheConfig, check_write_order};
use h5chunk_format::message::{
    ByteOrder, ChunkIndex, ChunkedLayout, Datatype, LayoutVersion, Message, SymbolTable,
};
use h5chunk_format::object_header::{MessageFlags, ObjectHeader, RawMessage};
use h5chunk_format::symbol_table_entry::Cache;
use h5chunk_testkit::{DatasetSpec, FileWriter, Format, H5File, h5py, interop};

const ROWS: u64 = 100;
const COLS: u64 = 400;
const CHUNK: [u64; 2] = [1, 4];
const LINKS: usize = 300;

fn tmp(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

fn value(r: u64, c: u64) -> i32 {
    (r * 1000 + c) as i32
}

/// A permutation of 0..n (multiplication by a unit modulo n).
fn scrambled(n: u64) -> impl Iterator<Item = u64> {
    (0..n).map(move |i| (i * 7919 + 13) % n)
}

#[test]
fn libhdf5_reads_and_extends_our_trees() {
    let test = "libhdf5_reads_and_extends_our_trees";
    let path = tmp("btree1_interop.h5");
    let mut w = FileWriter::create(&path, Format::Earliest);
    let s = w.sizes();
    let i4 = Datatype::int(4, true, ByteOrder::LittleEndian);

    // The chunk index: 100 × 100 chunks of 1 × 4 elements.
    let tree = ChunkTree::create(w.cache(), s, DEFAULT_CHUNK_K, &[CHUNK[0], CHUNK[1], 4]).unwrap();
    let per_row = COLS / CHUNK[1];
    for i in scrambled(ROWS * per_row) {
        let (r, c0) = (i / per_row, (i % per_row) * CHUNK[1]);
        let bytes: Vec<u8> = (c0..c0 + CHUNK[1])
            .flat_map(|c| value(r, c).to_le_bytes())
            .collect();
        let addr = w.write_chunk(&bytes);
        let chunk = Chunk {
            offsets: vec![r, c0].into(),
            size: bytes.len() as u32,
            filter_mask: 0,
            addr,
        };
        tree.insert(w.cache(), &chunk, None).unwrap();
    }
    let root = tree.addr();
    assert_eq!(tree.depth(w.cache()).unwrap(), 3);
    let shape = tree.tree().shape(w.cache()).unwrap();
    eprintln!(
        "10,000 scrambled chunks: {} leaves, {} nodes at level 1, index {} bytes",
        shape[2].len(),
        shape[1].len(),
        tree.bytes_used(w.cache()).unwrap()
    );
    let layout = ChunkedLayout::new(
        LayoutVersion::V3,
        &CHUNK,
        4,
        ChunkIndex::BTreeV1,
        Some(root),
    );
    w.add_dataset(
        "d",
        DatasetSpec::chunked(
            i4.clone(),
            &[ROWS, COLS],
            &[None, Some(COLS)],
            &CHUNK,
            layout,
            None,
        ),
    );

    // A tree filled with 500 chunks then emptied: an empty leaf at the root's address.
    let emptied = ChunkTree::create(w.cache(), s, DEFAULT_CHUNK_K, &[10, 4]).unwrap();
    for i in 0..500u64 {
        let addr = w.write_chunk(&[0xee; 40]);
        let c = Chunk {
            offsets: vec![i * 10].into(),
            size: 40,
            filter_mask: 0,
            addr,
        };
        emptied.insert(w.cache(), &c, None).unwrap();
    }
    for i in 0..500u64 {
        emptied.remove(w.cache(), &[i * 10]).unwrap().unwrap();
    }
    let emptied_root = emptied.addr();
    let layout = ChunkedLayout::new(
        LayoutVersion::V3,
        &[10],
        4,
        ChunkIndex::BTreeV1,
        Some(emptied_root),
    );
    w.add_dataset(
        "emptied",
        DatasetSpec::chunked(i4.clone(), &[5000], &[None], &[10], layout, None),
    );

    // The group: 300 links, inserted in a scrambled order, to one empty old-style group.
    let target = Group::create(
        w.cache(),
        s,
        DEFAULT_GROUP_INTERNAL_K,
        DEFAULT_GROUP_LEAF_K,
        DEFAULT_HEAP_SIZE,
    )
    .unwrap();
    let st = Message::SymbolTable(SymbolTable {
        btree_address: target.btree_address(),
        local_heap_address: target.heap_address(),
    });
    let mut data = Vec::new();
    st.encode(s, &mut data).unwrap();
    let messages = vec![RawMessage::new(st.kind(), MessageFlags::empty(), data)];
    let len: usize = ObjectHeader::new_v1(h5chunk_format::Addr(0), s, 1, messages.clone(), None)
        .unwrap()
        .encode_chunks()
        .unwrap()
        .iter()
        .map(|(_, b)| b.len())
        .sum();
    let oh_at = w.cache().allocator().allocate(len as u64).unwrap();
    let oh = ObjectHeader::new_v1(oh_at, s, LINKS as u32, messages, None).unwrap();
    for (a, bytes) in oh.encode_chunks().unwrap() {
        w.storage().write_at(a, &bytes).unwrap();
    }
    let group = Group::create(
        w.cache(),
        s,
        DEFAULT_GROUP_INTERNAL_K,
        DEFAULT_GROUP_LEAF_K,
        DEFAULT_HEAP_SIZE,
    )
    .unwrap();
    let names: Vec<String> = (0..LINKS).map(|i| format!("link_{i:03}")).collect();
    for i in scrambled(LINKS as u64) {
        let cache = Cache::SymbolTable {
            btree: Some(target.btree_address()),
            heap: Some(target.heap_address()),
        };
        group
            .insert(w.cache(), names[i as usize].as_bytes(), oh_at, cache)
            .unwrap();
    }
    assert_eq!(group.to_vec(w.cache()).unwrap().len(), LINKS);
    assert!(group.tree().node_count(w.cache()).unwrap().1 >= 2);
    let (group_btree, group_heap) = (group.btree_address(), group.heap_address());
    w.add_group_symbol_table("many", group_btree, group_heap);

    // Everything we built reaches the file children first.
    assert!(w.cache().flush().unwrap().is_complete());
    check_write_order(&w.cache().take_trace()).expect("write order");
    let path = w.finish();

    // Our own reader over the finished file.
    let f = H5File::open(&path);
    let ds = f.dataset("/d");
    let cache = f.cache(CacheConfig::default());
    let ours = ChunkTree::open(&cache, root, s, DEFAULT_CHUNK_K, &ds.chunked().dims).unwrap();
    assert_eq!(
        ours.to_vec(&cache).unwrap().len(),
        (ROWS * per_row) as usize
    );

    if let Some(h5dump) = interop::h5dump(test) {
        interop::h5dump_ok(&h5dump, &path);
    }
    let Some(python) = interop::python(test) else {
        return;
    };
    // Every value.
    let expect: Vec<u8> = (0..ROWS)
        .flat_map(|r| (0..COLS).flat_map(move |c| value(r, c).to_le_bytes()))
        .collect();
    assert_eq!(h5py::values_le(&python, &path, "d"), expect);
    // Every link.
    let listed = interop::run_python(
        &python,
        "import sys, h5py\nf = h5py.File(sys.argv[1], 'r')\ng = f['many']\n\
         assert all(isinstance(g[k], h5py.Group) for k in g)\nprint('\\n'.join(g))",
        &[&path.to_string_lossy()],
    );
    let listed: Vec<&str> = listed.lines().collect();
    assert_eq!(listed, names.iter().map(String::as_str).collect::<Vec<_>>());

    // The emptied tree reads as fill values, and libhdf5 writes into it.
    assert_eq!(h5py::values_le(&python, &path, "emptied"), vec![0; 20_000]);
    interop::run_python(
        &python,
        "import sys, numpy as np, h5py\nf = h5py.File(sys.argv[1], 'r+')\n\
         f['emptied'][100:200] = np.arange(100, dtype='<i4')\nf.close()",
        &[&path.to_string_lossy()],
    );

    // libhdf5 extends our tree: 10 more rows, 1,000 more chunks.
    interop::run_python(
        &python,
        "import sys, numpy as np, h5py\nf = h5py.File(sys.argv[1], 'r+')\nd = f['d']\n\
         d.resize((110, 400))\nr = np.arange(100, 110)[:, None] * 1000 + np.arange(400)[None, :]\n\
         d[100:110, :] = r.astype('<i4')\nf['many'].create_group('added_by_libhdf5')\nf.close()",
        &[&path.to_string_lossy()],
    );
    let f = H5File::open(&path);
    let ds = f.dataset("/d");
    assert_eq!(ds.chunked().address, Some(root), "the root never moves");
    let cache = f.cache(CacheConfig::default());
    let ours = ChunkTree::open(&cache, root, s, DEFAULT_CHUNK_K, &ds.chunked().dims).unwrap();
    ours.tree().shape(&cache).unwrap();
    let chunks = ours.to_vec(&cache).unwrap();
    assert_eq!(chunks.len(), 11_000);
    let theirs = h5py::chunks(&python, &path, "d");
    assert_eq!(theirs.len(), chunks.len());
    for (t, o) in theirs.iter().zip(&chunks) {
        assert_eq!(
            (&t.offset, t.addr, t.size, t.mask),
            (
                &o.offsets.to_vec(),
                Some(o.addr.get()),
                u64::from(o.size),
                o.filter_mask
            )
        );
    }
    let emptied = ChunkTree::open(&cache, emptied_root, s, DEFAULT_CHUNK_K, &[10, 4]).unwrap();
    let offsets: Vec<Vec<u64>> = emptied
        .to_vec(&cache)
        .unwrap()
        .into_iter()
        .map(|c| c.offsets.to_vec())
        .collect();
    assert_eq!(offsets, (10..20).map(|i| vec![i * 10]).collect::<Vec<_>>());
    let sb = f.superblock();
    let g = Group::open(
        &cache,
        group_btree,
        group_heap,
        s,
        sb.group_internal_k(),
        sb.group_leaf_k(),
    )
    .unwrap();
    assert_eq!(g.to_vec(&cache).unwrap().len(), LINKS + 1);
    assert!(g.get(&cache, b"added_by_libhdf5").unwrap().is_some());
}

#[test]
fn libhdf5_depth_three_tree_decodes() {
    let test = "libhdf5_depth_three_tree_decodes";
    let Some(python) = interop::python(test) else {
        return;
    };
    let path = tmp("btree1_libhdf5_deep.h5");
    interop::run_python(
        &python,
        "import sys, numpy as np, h5py\nwith h5py.File(sys.argv[1], 'w') as f:\n    \
         f.create_dataset('d', data=np.arange(5000, dtype='<u2'), chunks=(1,), maxshape=(None,))",
        &[&path.to_string_lossy()],
    );
    let f = H5File::open(&path);
    let ds = f.dataset("/d");
    let layout = ds.chunked();
    let cache = f.cache(CacheConfig::default());
    let tree = ChunkTree::open(
        &cache,
        layout.address.unwrap(),
        f.sizes(),
        f.superblock().indexed_storage_k(),
        &layout.dims,
    )
    .unwrap();
    assert_eq!(tree.depth(&cache).unwrap(), 3);
    tree.tree().shape(&cache).unwrap();
    let theirs = h5py::chunks(&python, &path, "/d");
    let mut n = 0;
    let _ = tree
        .for_each(&cache, |c| {
            let t = &theirs[n];
            assert_eq!(
                (&t.offset, t.addr, t.size, t.mask),
                (
                    &c.offsets.to_vec(),
                    Some(c.addr.get()),
                    u64::from(c.size),
                    c.filter_mask
                )
            );
            n += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(n, 5000);
}
