//! The append fast path (whole-chunk writes into the fresh-chunk buffer, batched index
//! updates, the raw page cache) checked against a model, for every index kind: values read
//! back before and after flushes and reopening, the write-order checker on a traced run with a
//! metadata cache small enough to evict mid-run, and h5py reading what was written.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk::libver::{Libver, LibverBounds};
use h5chunk::{File, FileOptions, IndexKind};
use h5chunk_testkit::{h5py, interop};

fn tmp(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

fn options(kind: IndexKind) -> FileOptions {
    let low = if kind == IndexKind::BTree1 {
        Libver::Earliest
    } else {
        Libver::Latest
    };
    FileOptions {
        bounds: LibverBounds::new(low, Libver::Latest).unwrap(),
        // A few index blocks at most: blocks are written and evicted while appending.
        metadata_cache_bytes: Some(4096),
        ..FileOptions::default()
    }
}

/// The value of element `(i, j)`: any element read back can be checked.
fn value(i: u64, j: u64) -> i32 {
    (i * 1_009 + j) as i32
}

/// Appends `n` chunks of `chunk` rows by 4 columns, one whole chunk per write (as the
/// benchmark does), flushing now and then; checks the trace, the values (before and after
/// reopening) and, when h5py is there, what libhdf5 reads.
fn append_whole_chunks(kind: IndexKind, n: u64) {
    let path = tmp(&format!("append_path_{}.h5", kind.name()));
    let chunk = [3u64, 4];
    let fixed = matches!(kind, IndexKind::FixedArray | IndexKind::Implicit);
    let rows = n * chunk[0];
    let f = FileOptions {
        trace: true,
        ..options(kind)
    }
    .create(&path)
    .unwrap();
    let mut b = f
        .new_dataset::<i32>()
        .shape(&[if fixed { rows } else { 0 }, 4])
        .max_shape(&if fixed {
            vec![Some(rows), Some(4)]
        } else if kind == IndexKind::BTree2 {
            vec![None, None]
        } else {
            vec![None, Some(4)]
        })
        .chunk(&chunk);
    if !matches!(kind, IndexKind::BTree1 | IndexKind::FixedArray) {
        b = b.index(kind);
    }
    if kind == IndexKind::Implicit {
        b = b.alloc_time(h5chunk::AllocTime::Early);
    }
    let d = b.create("d").unwrap();
    assert_eq!(d.index_kind(), Some(kind));
    for c in 0..n {
        let r0 = c * chunk[0];
        if !fixed {
            d.resize(&[r0 + chunk[0], 4]).unwrap();
        }
        let block: Vec<i32> = (0..chunk[0])
            .flat_map(|r| (0..4).map(move |j| value(r0 + r, j)))
            .collect();
        d.write_slice(&block, &[r0, 0], &chunk, None).unwrap();
        // Fresh chunks read back before any flush.
        if c % 37 == 0 {
            assert_eq!(
                d.read_slice::<i32>(&[r0 + 1, 2], &[1, 1], None).unwrap(),
                vec![value(r0 + 1, 2)]
            );
        }
        if c % 211 == 0 {
            f.flush().unwrap();
        }
    }
    f.flush().unwrap();
    let trace = f.take_write_trace();
    h5chunk_cache::check_write_order(&trace).unwrap_or_else(|v| panic!("{}: {v:?}", kind.name()));
    let want: Vec<i32> = (0..rows)
        .flat_map(|i| (0..4).map(move |j| value(i, j)))
        .collect();
    assert_eq!(d.read::<i32>().unwrap(), want, "{}", kind.name());
    f.close().unwrap();
    drop(d);

    let f = File::open(&path).unwrap();
    let d = f.dataset("d").unwrap();
    assert_eq!(d.read::<i32>().unwrap(), want, "{} reopened", kind.name());
    // One-element lookups (the page-cache path), scattered.
    for i in (0..rows).step_by(7) {
        assert_eq!(
            d.read_slice::<i32>(&[i, 3], &[1, 1], None).unwrap(),
            vec![value(i, 3)]
        );
    }
    assert_eq!(d.chunks().unwrap().len() as u64, n);
    drop(d);
    drop(f);
    if kind == IndexKind::SkipList {
        // libhdf5 has no skip list.
        return;
    }
    let Some(python) = interop::python("append_path_whole_chunks") else {
        return;
    };
    let le: Vec<u8> = want.iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(h5py::values_le(&python, &path, "d"), le, "{}", kind.name());
}

#[test]
fn whole_chunk_appends_keep_write_order_and_values_for_every_index() {
    for kind in [
        IndexKind::ExtensibleArray,
        IndexKind::BTree1,
        IndexKind::BTree2,
        IndexKind::SkipList,
        IndexKind::FixedArray,
        IndexKind::Implicit,
    ] {
        append_whole_chunks(kind, 2_000);
    }
}

/// Everything that can touch a chunk while it waits in the fresh buffer sees it, and leaves
/// the dataset as if it had been written at once.
#[test]
fn fresh_chunks_are_seen_by_every_operation() {
    let path = tmp("append_path_fresh.h5");
    let f = File::create_with(&path, options(IndexKind::ExtensibleArray)).unwrap();
    let d = f
        .new_dataset::<i32>()
        .shape(&[0])
        .max_shape(&[None])
        .chunk(&[4])
        .create("d")
        .unwrap();
    d.resize(&[16]).unwrap();
    for c in 0..4i32 {
        d.write_slice(&[c; 4], &[c as u64 * 4], &[4], None).unwrap();
    }
    // Rewritten whole while fresh: the second write wins.
    d.write_slice(&[9; 4], &[4], &[4], None).unwrap();
    // A partial write into a fresh chunk.
    d.write_slice(&[7], &[10], &[1], None).unwrap();
    assert_eq!(
        d.read::<i32>().unwrap(),
        vec![0, 0, 0, 0, 9, 9, 9, 9, 2, 2, 7, 2, 3, 3, 3, 3]
    );
    // Direct chunk I/O flushes what it would otherwise miss or overwrite.
    let (bytes, mask) = d.read_direct_chunk(&[8]).unwrap().unwrap();
    assert_eq!(
        (bytes, mask),
        (
            [2, 2, 7, 2]
                .iter()
                .flat_map(|x: &i32| x.to_le_bytes())
                .collect(),
            0
        )
    );
    d.write_slice(&[5; 4], &[12], &[4], None).unwrap();
    let raw: Vec<u8> = [6i32; 4].iter().flat_map(|x| x.to_le_bytes()).collect();
    d.write_direct_chunk(&[12], &raw, 0).unwrap();
    assert_eq!(d.read_slice::<i32>(&[12], &[4], None).unwrap(), vec![6; 4]);
    // A shrink drops the fresh chunks it leaves outside and cuts the one it halves.
    d.resize(&[20]).unwrap();
    d.write_slice(&[8; 4], &[16], &[4], None).unwrap();
    d.resize(&[18]).unwrap();
    d.resize(&[20]).unwrap();
    assert_eq!(
        d.read_slice::<i32>(&[16], &[4], None).unwrap(),
        vec![8, 8, 0, 0]
    );
    f.close().unwrap();
    drop(d);
    let f = File::open(&path).unwrap();
    assert_eq!(
        f.dataset("d").unwrap().read::<i32>().unwrap(),
        vec![0, 0, 0, 0, 9, 9, 9, 9, 2, 2, 7, 2, 6, 6, 6, 6, 8, 8, 0, 0]
    );
}

/// A chunk read through the page cache and then rewritten in place reads back new, in the same
/// file handle and after reopening.
#[test]
fn rewritten_chunks_are_not_served_stale_from_the_page_cache() {
    let path = tmp("append_path_pages.h5");
    let f = File::create_with(&path, options(IndexKind::FixedArray)).unwrap();
    let d = f
        .new_dataset::<i32>()
        .shape(&[64])
        .chunk(&[2])
        .create("d")
        .unwrap();
    d.write(&(0..64).collect::<Vec<i32>>()).unwrap();
    f.flush().unwrap();
    assert_eq!(d.read_slice::<i32>(&[10], &[1], None).unwrap(), vec![10]);
    d.write_slice(&[-1, -2], &[10], &[2], None).unwrap();
    f.flush().unwrap();
    assert_eq!(d.read_slice::<i32>(&[10], &[1], None).unwrap(), vec![-1]);
    assert_eq!(d.read_slice::<i32>(&[11], &[1], None).unwrap(), vec![-2]);
    f.close().unwrap();
    drop(d);
    let f = File::open(&path).unwrap();
    let d = f.dataset("d").unwrap();
    assert_eq!(d.read_slice::<i32>(&[11], &[1], None).unwrap(), vec![-2]);
}

/// Writes of several whole chunks at once (a row of chunks appended to a 2-D dataset, a block
/// of a 3-D one) go straight into the chunks' buffers: checked against a model for every
/// index kind, with chunks held fresh, cached (a partial write first) and on disk (after a
/// flush), in 3-D, and after reopening. Unaligned boxes take the general path beside them.
#[test]
fn aligned_boxes_of_chunks_write_what_the_model_holds() {
    let shape = [8u64, 9, 4];
    let chunk = [2u64, 3, 2];
    let n: usize = shape.iter().product::<u64>() as usize;
    let at = |i: u64, j: u64, k: u64| ((i * shape[1] + j) * shape[2] + k) as usize;
    for kind in [
        IndexKind::BTree1,
        IndexKind::BTree2,
        IndexKind::ExtensibleArray,
        IndexKind::FixedArray,
    ] {
        let path = tmp(&format!("append_path_aligned_{}.h5", kind.name()));
        let f = File::create_with(&path, options(kind)).unwrap();
        let max: Vec<Option<u64>> = match kind {
            IndexKind::FixedArray => shape.iter().map(|&x| Some(x)).collect(),
            IndexKind::ExtensibleArray => vec![None, Some(shape[1]), Some(shape[2])],
            _ => vec![None; 3],
        };
        let mut b = f
            .new_dataset::<i32>()
            .shape(&shape)
            .max_shape(&max)
            .chunk(&chunk)
            .fill_value(-1);
        if kind != IndexKind::FixedArray {
            b = b.index(kind);
        }
        let d = b.create("d").unwrap();
        let mut model = vec![-1i32; n];
        let mut write = |start: [u64; 3], count: [u64; 3], tag: i32| {
            let mut v = Vec::new();
            for i in start[0]..start[0] + count[0] {
                for j in start[1]..start[1] + count[1] {
                    for k in start[2]..start[2] + count[2] {
                        let x = tag * 10_000 + at(i, j, k) as i32;
                        model[at(i, j, k)] = x;
                        v.push(x);
                    }
                }
            }
            d.write_slice(&v, &start, &count, None).unwrap();
        };
        // A partial write caches chunk (0, 0, 0); the aligned box then covers it.
        write([0, 0, 0], [1, 1, 1], 1);
        write([0, 0, 0], [4, 6, 4], 2);
        // Aligned boxes of one row of chunks and of a single column.
        write([4, 0, 0], [2, 9, 4], 3);
        write([6, 3, 2], [2, 3, 2], 4);
        f.flush().unwrap();
        // Over chunks on disk, and an unaligned box beside them.
        write([2, 3, 0], [4, 6, 2], 5);
        write([1, 1, 1], [3, 4, 2], 6);
        assert_eq!(d.read::<i32>().unwrap(), model, "{kind:?}");
        f.close().unwrap();
        drop(d);
        let f = File::open(&path).unwrap();
        assert_eq!(
            f.dataset("d").unwrap().read::<i32>().unwrap(),
            model,
            "{kind:?} reopened"
        );
    }
}

/// `append` of whole chunks takes its own path (straight into the fresh chunks, the extent
/// grown under the same lock); everything it must not take goes the general way. Checked
/// against a model for 1-, 2- and 3-D datasets: whole chunk rows, a partial row (after which
/// the extent is off the grid), rows again, a shrink that leaves a chunk cached past the end,
/// and a filtered dataset.
#[test]
fn appends_of_whole_chunks_and_the_appends_they_decline_write_what_the_model_holds() {
    let path = tmp("append_path_appends.h5");
    let f = File::create_with(&path, options(IndexKind::ExtensibleArray)).unwrap();
    // (name, chunk, the other dimensions, deflate)
    let cases: [(&str, Vec<u64>, Vec<u64>, bool); 4] = [
        ("one", vec![5], vec![], false),
        ("two", vec![3, 4], vec![8], false),
        ("three", vec![2, 3, 2], vec![6, 4], false),
        ("zipped", vec![3, 4], vec![8], true),
    ];
    for (name, chunk, others, deflate) in cases {
        let inner: u64 = others.iter().product();
        let mut shape = vec![0u64];
        shape.extend(&others);
        let mut max = vec![None];
        max.extend(others.iter().map(|&d| Some(d)));
        let mut b = f
            .new_dataset::<i64>()
            .shape(&shape)
            .max_shape(&max)
            .chunk(&chunk);
        if deflate {
            b = b.filter(h5chunk::FilterSpec::Deflate(1));
        }
        let d = b.create(name).unwrap();
        let mut model: Vec<i64> = Vec::new();
        let append = |model: &mut Vec<i64>, rows: u64| {
            let start = model.len() as i64;
            let v: Vec<i64> = (start..start + (rows * inner) as i64).collect();
            d.append(&v).unwrap();
            model.extend(&v);
        };
        let c0 = chunk[0];
        // Whole chunk rows, one and three at a time.
        append(&mut model, c0);
        append(&mut model, 3 * c0);
        // A partial row: the extent leaves the grid, and the appends after it complete the
        // chunk row through the general path.
        append(&mut model, 1);
        append(&mut model, c0 - 1);
        append(&mut model, 2 * c0);
        assert_eq!(d.read::<i64>().unwrap(), model, "{name}");
        f.flush().unwrap();
        // A shrink by part of a chunk row (the cut chunk stays cached), then whole rows again
        // from an extent off the grid, then back on it.
        let rows = model.len() as u64 / inner;
        let keep = rows - 1;
        let mut dims = vec![keep];
        dims.extend(&others);
        d.resize(&dims).unwrap();
        model.truncate((keep * inner) as usize);
        append(&mut model, 1);
        append(&mut model, c0);
        assert_eq!(d.read::<i64>().unwrap(), model, "{name}");
        f.flush().unwrap();
        let n = model.len() as u64 / inner;
        assert_eq!(d.shape()[0], n, "{name}");
    }
    f.close().unwrap();
    let f = File::open(&path).unwrap();
    for name in ["one", "two", "three", "zipped"] {
        let d = f.dataset(name).unwrap();
        let v = d.read::<i64>().unwrap();
        // Values are their own positions (shrunk rows were appended again with new values).
        assert_eq!(v.len() as u64 % d.shape()[1..].iter().product::<u64>(), 0);
        assert!(
            v.iter().enumerate().all(|(i, &x)| x == i as i64),
            "{name}: {v:?}"
        );
    }
}

/// A slab of whole chunks written straight into the fresh chunks (the box path) is declined
/// when one of its chunks is fresh already: written again before a flush, a box replaces the
/// fresh chunks in place, so the file holds each chunk once (as if written once) and reads
/// the second write.
#[test]
fn a_box_of_chunks_written_twice_before_a_flush_is_stored_once() {
    let write = |name: &str, times: i64| {
        let path = tmp(name);
        let f = File::create_with(&path, options(IndexKind::ExtensibleArray)).unwrap();
        let d = f
            .new_dataset::<i64>()
            .shape(&[64, 8])
            .max_shape(&[None, Some(8)])
            .chunk(&[4, 4])
            .create("d")
            .unwrap();
        for t in 0..times {
            let v: Vec<i64> = (0..8 * 8).map(|i| i * 10 + t).collect();
            d.write_slice(&v, &[8, 0], &[8, 8], None).unwrap();
        }
        f.close().unwrap();
        drop(d);
        let f = File::open(&path).unwrap();
        let got = f
            .dataset("d")
            .unwrap()
            .read_slice::<i64>(&[8, 0], &[8, 8], None)
            .unwrap();
        let want: Vec<i64> = (0..8 * 8).map(|i| i * 10 + times - 1).collect();
        assert_eq!(got, want, "{name}");
        std::fs::metadata(&path).unwrap().len()
    };
    assert_eq!(write("box_once.h5", 1), write("box_twice.h5", 2));
}
