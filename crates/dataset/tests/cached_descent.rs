//! The B-tree chunk indexes keep copies of their internal nodes for lookups, valid while the
//! metadata cache's generation stays put. These tests warm those copies with one-element
//! reads (each a lookup), then change the tree, and check that every lookup after sees the
//! change: chunks appended through the handle (leaves and internal nodes split, the root
//! moves and grows a level), chunks rewritten elsewhere (a v2 B-tree keeps chunk records in
//! its internal nodes too), and a SWMR reader's refresh after the writer's flush.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::path::PathBuf;

use h5chunk::{File, FileOptions, FilterSpec, IndexKind, OpenOptions};

/// Elements per chunk: a chunk of zeros deflates to far fewer bytes than one of noise, so a
/// rewrite with noise moves the chunk and changes its index record.
const CHUNK: u64 = 64;

/// A fresh directory for one test case.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "h5chunk_cached_descent_{}_{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Noise for element `i` in round `round` (never 0).
fn noise(i: u64, round: u64) -> i64 {
    let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ round.wrapping_mul(0xd1b5_4a32_d192_ed03);
    x ^= x >> 29;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 32;
    (x | 1) as i64
}

/// Every chunk's first element read on its own (one lookup each), against `want`.
fn check_each_chunk(ds: &h5chunk::Dataset, rank2: bool, want: &[i64], what: &str) {
    let chunks = want.len() as u64 / CHUNK;
    for c in 0..chunks {
        let i = c * CHUNK;
        let got = if rank2 {
            ds.read_slice::<i64>(&[i, 0], &[1, 1], None).unwrap()
        } else {
            ds.read_slice::<i64>(&[i], &[1], None).unwrap()
        };
        assert_eq!(got, vec![want[i as usize]], "{what}: chunk {c}");
    }
}

/// Appends and rewrites through the writing handle, after lookups warmed the copies.
fn through_the_handle(kind: IndexKind) {
    let dir = scratch(&format!("handle_{kind:?}"));
    let path = dir.join("h.h5");
    let f = File::create(&path).unwrap();
    let ds = f
        .new_dataset::<i64>()
        .shape(&[0])
        .max_shape(&[None])
        .chunk(&[CHUNK])
        .filter(FilterSpec::Deflate(4))
        .index(kind)
        .chunk_cache_bytes(0)
        .create("x")
        .unwrap();
    assert_eq!(ds.index_kind(), Some(kind));
    // 3000 chunks of zeros: a v1 B-tree of 64-entry leaves has a root over them, a v2 B-tree
    // of 512-byte nodes two internal levels.
    let first = 3000 * CHUNK;
    let mut want = vec![0i64; first as usize];
    ds.append(&want).unwrap();
    check_each_chunk(&ds, false, &want, "written");
    check_each_chunk(&ds, false, &want, "warm");
    // As many again, of noise: nodes split at every level, the v1 root among them.
    let more: Vec<i64> = (first..2 * first).map(|i| noise(i, 0)).collect();
    ds.append(&more).unwrap();
    want.extend_from_slice(&more);
    check_each_chunk(&ds, false, &want, "appended");
    // Every other old chunk rewritten with noise: it grows, so it moves, and its record
    // (internal or leaf) holds the new address.
    for c in (0..3000u64).step_by(2) {
        let vals: Vec<i64> = (c * CHUNK..(c + 1) * CHUNK).map(|i| noise(i, 1)).collect();
        ds.write_slice(&vals, &[c * CHUNK], &[CHUNK], None).unwrap();
        want[(c * CHUNK) as usize..((c + 1) * CHUNK) as usize].copy_from_slice(&vals);
    }
    check_each_chunk(&ds, false, &want, "rewritten");
    f.close().unwrap();
    // And the file says the same to a fresh reader.
    let r = File::open(&path).unwrap();
    let x = r.dataset("x").unwrap();
    check_each_chunk(&x, false, &want, "reopened");
    assert_eq!(x.read::<i64>().unwrap(), want);
    drop((x, r));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_warm_v1_b_tree_descent_sees_appends_and_rewrites_through_the_handle() {
    through_the_handle(IndexKind::BTree1);
}

#[test]
fn a_warm_v2_b_tree_descent_sees_appends_and_rewrites_through_the_handle() {
    through_the_handle(IndexKind::BTree2);
}

/// A SWMR reader warms its copies, the writer appends, rewrites (SWMR writes a rewritten chunk
/// elsewhere) and flushes, and the reader's refresh makes its lookups see all of it.
#[test]
fn a_warm_v2_b_tree_descent_sees_a_swmr_writers_flush_after_refresh() {
    let dir = scratch("swmr");
    let path = dir.join("s.h5");
    let f = File::create_with(
        &path,
        FileOptions {
            swmr_write: true,
            ..FileOptions::default()
        },
    )
    .unwrap();
    let d = f
        .new_dataset::<i64>()
        .shape(&[0, 1])
        .max_shape(&[None, None])
        .chunk(&[CHUNK, 1])
        .filter(FilterSpec::Deflate(4))
        .create("x")
        .unwrap();
    assert_eq!(d.index_kind(), Some(IndexKind::BTree2));
    f.start_swmr_write().unwrap();
    let first = 2000 * CHUNK;
    let mut want = vec![0i64; first as usize];
    d.append(&want).unwrap();
    f.flush().unwrap();
    let r = File::open_with(&path, OpenOptions::swmr_read()).unwrap();
    let seen = r.dataset("x").unwrap();
    check_each_chunk(&seen, true, &want, "first flush");
    check_each_chunk(&seen, true, &want, "warm");
    let more: Vec<i64> = (first..2 * first).map(|i| noise(i, 0)).collect();
    d.append(&more).unwrap();
    want.extend_from_slice(&more);
    for c in (0..2000u64).step_by(3) {
        let vals: Vec<i64> = (c * CHUNK..(c + 1) * CHUNK).map(|i| noise(i, 2)).collect();
        d.write_slice(&vals, &[c * CHUNK, 0], &[CHUNK, 1], None)
            .unwrap();
        want[(c * CHUNK) as usize..((c + 1) * CHUNK) as usize].copy_from_slice(&vals);
    }
    f.flush().unwrap();
    seen.refresh().unwrap();
    assert_eq!(seen.shape(), vec![2 * first, 1]);
    check_each_chunk(&seen, true, &want, "after refresh");
    f.close().unwrap();
    drop((seen, r));
    let _ = std::fs::remove_dir_all(&dir);
}
