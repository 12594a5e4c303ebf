//! Readers on several threads while a writer appends and resizes, in one process: every value
//! read is checked against a model of what the writer has done.
//!
//! The writer appends rows whose values are a function of their place, and every few appends
//! shrinks the dataset by two rows (which the next append writes again). It publishes the
//! rows no later shrink can touch. Readers pick places at random: below that mark a value
//! must be exactly the model's; above it (inside the extent they saw) it may also be the
//! fill value, for a row cut or not yet written. Single elements, small blocks across chunks
//! and whole-column reads all run, with the chunk cache small enough to evict.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use h5chunk::{Durability, File, FileOptions, FilterSpec, IndexKind};
use rstest::rstest;

const COLS: u64 = 8;

fn value(r: u64, c: u64) -> u32 {
    (r * COLS + c + 1) as u32
}

/// xorshift64: reproducible places per thread.
fn next(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

#[rstest]
#[case::earray_plain(IndexKind::ExtensibleArray, false)]
#[case::earray_deflate(IndexKind::ExtensibleArray, true)]
#[case::btree2_plain(IndexKind::BTree2, false)]
#[case::btree1_deflate(IndexKind::BTree1, true)]
fn reads_during_appends_and_resizes_match_the_model(
    #[case] kind: IndexKind,
    #[case] deflate: bool,
) {
    let dir = tempfile_dir();
    let path = dir.join(format!("concurrent_{kind:?}_{deflate}.h5"));
    let f = File::create_with(
        &path,
        FileOptions {
            durability: Durability::Flush,
            threads: Some(2),
            ..FileOptions::default()
        },
    )
    .unwrap();
    let mut b = f
        .new_dataset::<u32>()
        .shape(&[0, COLS])
        .max_shape(&[None, Some(COLS)])
        .chunk(&[4, 4])
        .index(kind)
        // A few chunks: readers' loads evict, and dirty chunks leave the cache mid-run.
        .chunk_cache_bytes(8 * 64);
    if deflate {
        b = b.filter(FilterSpec::Shuffle).filter(FilterSpec::Deflate(1));
    }
    let d = b.create("data").unwrap();

    let stable = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let checked = Arc::new(AtomicU64::new(0));
    std::thread::scope(|s| {
        let mut readers = Vec::new();
        for t in 0..2u64 {
            let (d, stable, done, checked) =
                (d.clone(), stable.clone(), done.clone(), checked.clone());
            readers.push(s.spawn(move || {
                let mut seed = 0x2545_f491_4f6c_dd1d ^ (t + 1);
                let mut one = [0u32];
                while !done.load(Ordering::SeqCst) {
                    let sure = stable.load(Ordering::SeqCst);
                    let rows = d.shape()[0];
                    if rows == 0 {
                        std::thread::yield_now();
                        continue;
                    }
                    let x = next(&mut seed);
                    let (r, c) = (x % rows, (x >> 32) % COLS);
                    let ok = |r: u64, c: u64, v: u32| v == value(r, c) || (r >= sure && v == 0);
                    // A selection reaching past the stable rows may no longer fit: the writer
                    // can shrink the extent between the reader's look at it and the read.
                    let fits = |res: h5chunk::Result<()>, end: u64| match res {
                        Ok(()) => true,
                        Err(h5chunk::Error::InvalidArgument { .. }) if end > sure => false,
                        Err(e) => panic!("a read ending at row {end} (stable {sure}): {e}"),
                    };
                    match x % 5 {
                        // A block across chunk boundaries.
                        0 | 1 => {
                            let n = (rows - r).min(6);
                            let mut got = vec![0u32; (n * COLS) as usize];
                            let res = d.read_slice_into(&[r, 0], &[n, COLS], None, &mut got);
                            if !fits(res, r + n) {
                                continue;
                            }
                            for (i, v) in got.iter().enumerate() {
                                let (rr, cc) = (r + i as u64 / COLS, i as u64 % COLS);
                                assert!(ok(rr, cc, *v), "({rr}, {cc}) read {v}, stable {sure}");
                            }
                        }
                        // A whole column.
                        2 => {
                            let mut got = vec![0u32; rows as usize];
                            let res = d.read_slice_into(&[0, c], &[rows, 1], None, &mut got);
                            if !fits(res, rows) {
                                continue;
                            }
                            for (rr, v) in got.iter().enumerate() {
                                assert!(
                                    ok(rr as u64, c, *v),
                                    "({rr}, {c}) read {v}, stable {sure}"
                                );
                            }
                        }
                        _ => {
                            let res = d.read_slice_into(&[r, c], &[1, 1], None, &mut one);
                            if !fits(res, r + 1) {
                                continue;
                            }
                            assert!(
                                ok(r, c, one[0]),
                                "({r}, {c}) read {}, stable {sure}",
                                one[0]
                            );
                        }
                    }
                    checked.fetch_add(1, Ordering::SeqCst);
                }
            }));
        }
        let writer = s.spawn(|| {
            let mut rows = 0u64;
            for i in 0..400u64 {
                let k = 3 + i % 4;
                let data: Vec<u32> = (rows..rows + k)
                    .flat_map(|r| (0..COLS).map(move |c| value(r, c)))
                    .collect();
                d.append(&data).unwrap();
                rows += k;
                stable.store(rows - 2, Ordering::SeqCst);
                if i % 7 == 6 {
                    rows -= 2;
                    d.resize(&[rows, COLS]).unwrap();
                }
                if i % 50 == 49 {
                    f.flush().unwrap();
                }
            }
            rows
        });
        let rows = writer.join().unwrap();
        // Let the readers see the final state a while before they stop (a reader that failed
        // ends the wait: its panic fails the test).
        while checked.load(Ordering::SeqCst) < 2_000 && !readers.iter().any(|r| r.is_finished()) {
            std::thread::yield_now();
        }
        done.store(true, Ordering::SeqCst);
        let all = d.read::<u32>().unwrap();
        assert_eq!(all.len() as u64, rows * COLS);
        for (i, v) in all.iter().enumerate() {
            let (r, c) = (i as u64 / COLS, i as u64 % COLS);
            assert_eq!(*v, value(r, c), "({r}, {c}) after the run");
        }
    });
    drop(d);
    f.close().unwrap();
    let f = File::open(&path).unwrap();
    let all = f.dataset("data").unwrap().read::<u32>().unwrap();
    for (i, v) in all.iter().enumerate() {
        assert_eq!(
            *v,
            value(i as u64 / COLS, i as u64 % COLS),
            "after reopening"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A parallel read of many filtered chunks and the serial one agree byte for byte, and a
/// file written with a pool of several threads is the file one thread writes.
#[test]
fn parallel_filters_match_the_serial_path() {
    let dir = tempfile_dir();
    let write = |threads: usize| {
        let path = dir.join(format!("pool_{threads}.h5"));
        let f = File::create_with(
            &path,
            FileOptions {
                durability: Durability::Flush,
                threads: Some(threads),
                ..FileOptions::default()
            },
        )
        .unwrap();
        let d = f
            .new_dataset::<f32>()
            .shape(&[256, 256])
            .chunk(&[32, 32])
            .filter(FilterSpec::Shuffle)
            .filter(FilterSpec::Deflate(4))
            .chunk_cache_bytes(1 << 20)
            .create("data")
            .unwrap();
        let values: Vec<f32> = (0..256 * 256).map(|i| (i as f32 * 0.37).sin()).collect();
        // Written element rows at a time: every chunk is dirty in the cache and the flush
        // encodes them together (on the pool when there is one).
        for r in 0..256u64 {
            d.write_slice(
                &values[(r * 256) as usize..][..256],
                &[r, 0],
                &[1, 256],
                None,
            )
            .unwrap();
        }
        // Chunks of whole rows: each lands whole in a read, decoded straight into place.
        let rows = f
            .new_dataset::<f32>()
            .shape(&[256, 256])
            .chunk(&[8, 256])
            .filter(FilterSpec::Shuffle)
            .filter(FilterSpec::Deflate(4))
            .create("rows")
            .unwrap();
        rows.write(&values).unwrap();
        drop(rows);
        drop(d);
        f.close().unwrap();
        (std::fs::read(&path).unwrap(), values, path)
    };
    let (one, values, path1) = write(1);
    let (two, _, path2) = write(2);
    let first_difference = one.iter().zip(&two).position(|(a, b)| a != b);
    assert!(
        one.len() == two.len() && first_difference.is_none(),
        "the file a pool writes differs from the serial one: {} and {} bytes, first \
         difference at {first_difference:?}",
        one.len(),
        two.len()
    );
    for (threads, path) in [(1, &path1), (2, &path2)] {
        let f = File::open_with(
            path,
            h5chunk::OpenOptions {
                threads: Some(threads),
                ..h5chunk::OpenOptions::read_only()
            },
        )
        .unwrap();
        let d = f.dataset("data").unwrap();
        assert_eq!(d.read::<f32>().unwrap(), values, "{threads} thread(s)");
        let rows = f.dataset("rows").unwrap();
        assert_eq!(
            rows.read::<f32>().unwrap(),
            values,
            "rows, {threads} thread(s)"
        );
        let mid = rows.read_slice::<f32>(&[24, 0], &[200, 256], None).unwrap();
        assert_eq!(
            mid[..],
            values[24 * 256..224 * 256],
            "rows 24..224, {threads} thread(s)"
        );
        // A strided selection across every chunk.
        let got = d
            .read_slice::<f32>(&[1, 3], &[85, 51], Some(&[3, 5]))
            .unwrap();
        for (i, v) in got.iter().enumerate() {
            let (r, c) = (1 + 3 * (i / 51), 3 + 5 * (i % 51));
            assert_eq!(*v, values[r * 256 + c]);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "h5chunk_concurrent_{}_{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Handles go to other threads and are shared between them.
#[test]
fn handles_are_send_and_sync() {
    fn shared<T: Send + Sync>() {}
    shared::<File>();
    shared::<h5chunk::Group>();
    shared::<h5chunk::Dataset>();
    shared::<h5chunk::Slabs>();
    shared::<h5chunk::RowWriter>();
}

/// Readers on several threads wanting the same compressed chunks at once (one loads each,
/// the others wait for its bytes) all read the right values.
#[test]
fn readers_of_the_same_chunks_all_read_them_right() {
    let dir = tempfile_dir();
    let path = dir.join("same_chunks.h5");
    let f = File::create(&path).unwrap();
    let d = f
        .new_dataset::<i32>()
        .shape(&[128, 128])
        .chunk(&[16, 16])
        .filter(FilterSpec::Shuffle)
        .filter(FilterSpec::Deflate(6))
        .chunk_cache_bytes(0)
        .create("data")
        .unwrap();
    let values: Vec<i32> = (0..128 * 128).map(|i| i * 31 - 7).collect();
    d.write(&values).unwrap();
    drop(d);
    f.close().unwrap();
    let f = File::open(&path).unwrap();
    let d = f.dataset("data").unwrap();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (d, values) = (d.clone(), &values);
            s.spawn(move || {
                for i in 0..30u64 {
                    // Overlapping blocks across chunks, none of them whole in the output.
                    let (r, c) = ((i * 7 + t) % 100, (i * 11) % 100);
                    let got = d.read_slice::<i32>(&[r, c], &[20, 25], None).unwrap();
                    for (k, v) in got.iter().enumerate() {
                        let (rr, cc) = (r as usize + k / 25, c as usize + k % 25);
                        assert_eq!(*v, values[rr * 128 + cc], "({rr}, {cc})");
                    }
                    // Single elements of the same compressed chunks (each loaded whole).
                    let mut one = [0i32];
                    for k in 0..8u64 {
                        let (rr, cc) = (r + k, c + 2 * k);
                        d.read_slice_into(&[rr, cc], &[1, 1], None, &mut one)
                            .unwrap();
                        assert_eq!(one[0], values[(rr * 128 + cc) as usize], "({rr}, {cc})");
                    }
                }
            });
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
}
