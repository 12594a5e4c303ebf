//! Decoding each on-disk block type with `h5chunk_format`: `decode/<signature>`. The blocks are
//! taken from files h5chunk writes for the benchmark's scenarios (found by signature), so the
//! images are real ones with their checksums.

use criterion::{Criterion, criterion_group, criterion_main};
use h5chunk::IndexKind;
use h5chunk_benches::{Geometry, Scenario, append, create};
use h5chunk_format::{Addr, Sizes};
use h5chunk_format::{btree1, btree2, earray, farray, superblock};
use std::hint::black_box;

const N: u64 = 3_000;

/// The bytes of a file holding `N` appends of `scenario` with `kind`.
fn file_bytes(dir: &std::path::Path, scenario: Scenario, kind: IndexKind) -> Vec<u8> {
    let g = Geometry::new(scenario, N, 1).expect("geometry");
    let path = dir.join(format!("{}-{}.h5", scenario.name(), kind.name()));
    let (file, ds) = create(&path, &g, kind).expect("create");
    let mut dims = g.initial_dims();
    let mut buf = Vec::new();
    for i in 0..N {
        append(&ds, &g, i, &mut dims, &mut buf).expect("append");
    }
    drop(ds);
    file.close().expect("close");
    std::fs::read(&path).expect("read file")
}

/// The offset of the first block with `signature`.
fn find(bytes: &[u8], signature: &[u8]) -> usize {
    bytes
        .windows(signature.len())
        .position(|w| w == signature)
        .unwrap_or_else(|| panic!("no {:?} block", String::from_utf8_lossy(signature)))
}

fn decode(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("h5chunk-criterion-decode-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let sizes = Sizes::DEFAULT;
    let mut group = c.benchmark_group("decode");

    let ea = file_bytes(&dir, Scenario::S1, IndexKind::ExtensibleArray);
    group.bench_function("superblock", |b| {
        b.iter(|| superblock::Superblock::decode(black_box(&ea), Addr(0)).expect("superblock"))
    });
    let at = find(&ea, b"EAHD");
    let header = earray::Header::decode(&ea[at..], Addr(at as u64), sizes).expect("EAHD");
    group.bench_function("EAHD", |b| {
        b.iter(|| earray::Header::decode(black_box(&ea[at..]), Addr(at as u64), sizes))
    });
    let geometry = earray::Geometry::new(header.params).expect("geometry");
    let at = find(&ea, b"EAIB");
    group.bench_function("EAIB", |b| {
        b.iter(|| {
            earray::IndexBlock::decode(
                black_box(&ea[at..]),
                Addr(at as u64),
                sizes,
                &geometry,
                header.element_size,
            )
            .expect("EAIB")
        })
    });

    let fa = file_bytes(&dir, Scenario::Fixed, IndexKind::FixedArray);
    let at = find(&fa, b"FAHD");
    let header = farray::Header::decode(&fa[at..], Addr(at as u64), sizes).expect("FAHD");
    group.bench_function("FAHD", |b| {
        b.iter(|| farray::Header::decode(black_box(&fa[at..]), Addr(at as u64), sizes))
    });
    let geometry = farray::Geometry::new(
        header.nelmts,
        header.element_size,
        header.max_dblk_page_nelmts_bits,
    )
    .expect("geometry");
    let at = find(&fa, b"FADB");
    group.bench_function("FADB", |b| {
        b.iter(|| {
            farray::DataBlock::decode(black_box(&fa[at..]), Addr(at as u64), sizes, &geometry)
                .expect("FADB")
        })
    });

    let bt2 = file_bytes(&dir, Scenario::S3x, IndexKind::BTree2);
    let at = find(&bt2, b"BTHD");
    let header = btree2::Header::decode(&bt2[at..], Addr(at as u64), sizes).expect("BTHD");
    group.bench_function("BTHD", |b| {
        b.iter(|| btree2::Header::decode(black_box(&bt2[at..]), Addr(at as u64), sizes))
    });
    let geometry = btree2::Geometry::new(&header, sizes).expect("geometry");
    let root = header.root.expect("a non-empty tree");
    let at = root.0 as usize;
    group.bench_function(if header.depth == 0 { "BTLF" } else { "BTIN" }, |b| {
        b.iter(|| {
            btree2::Node::decode(
                black_box(&bt2[at..]),
                root,
                sizes,
                &geometry,
                header.depth,
                u64::from(header.root_nrec),
            )
            .expect("root node")
        })
    });

    let bt1 = file_bytes(&dir, Scenario::S1, IndexKind::BTree1);
    // The first TREE node of a version 0 file is the root group's (node type 0); the chunk
    // tree's nodes have node type 1.
    let at = bt1
        .windows(5)
        .position(|w| w == b"TREE\x01")
        .expect("a chunk B-tree node");
    group.bench_function("TREE", |b| {
        b.iter(|| {
            btree1::Node::<btree1::ChunkKey>::decode(
                black_box(&bt1[at..]),
                Addr(at as u64),
                sizes,
                superblock::DEFAULT_INDEXED_STORAGE_K,
                2,
            )
            .expect("TREE")
        })
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, decode);
criterion_main!(benches);
