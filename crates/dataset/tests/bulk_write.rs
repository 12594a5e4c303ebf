//! Bulk writes: a box of large unfiltered chunks that overflows the fresh chunks' budget (a
//! whole array of 1 MiB chunks written in one call) goes from the caller's buffer straight to
//! the file, each chunk's rows gathered by vectored writes, and its records after; a rewrite
//! of chunks the index holds keeps their places (the general path). The values read back in
//! h5chunk and h5py, ranks 2 and 3.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk::File;
use h5chunk_testkit::interop;

fn value(i: u64, salt: u64) -> f32 {
    ((i * 7 + salt) % 1_000_003) as f32
}

/// Write `shape` in `chunk`s in one call (and a second time over it, other values); the
/// bytes each write moved and its writes; the values read back equal the last ones written.
fn bulk(name: &str, shape: &[u64], chunk: &[u64]) -> (Vec<(u64, u64)>, std::path::PathBuf) {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("bulk_{name}.h5"));
    let n: u64 = shape.iter().product();
    let f = File::create(&path).unwrap();
    let d = f
        .new_dataset::<f32>()
        .shape(shape)
        .chunk(chunk)
        .create("d")
        .unwrap();
    let mut moved = Vec::new();
    let mut last = Vec::new();
    for salt in [0, 5] {
        last = (0..n).map(|i| value(i, salt)).collect();
        let before = f.io_stats();
        d.write(&last).unwrap();
        let after = f.io_stats();
        moved.push((
            after.bytes_written - before.bytes_written,
            after.writes - before.writes,
        ));
        assert_eq!(d.read::<f32>().unwrap(), last, "{name}: read back, open");
    }
    drop(d);
    f.close().unwrap();
    let f = File::open(&path).unwrap();
    assert_eq!(
        f.dataset("d").unwrap().read::<f32>().unwrap(),
        last,
        "{name}: read back, reopened"
    );
    (moved, path)
}

/// h5py reads the file `bulk` wrote, with the second write's values.
fn h5py_agrees(test: &str, path: &std::path::Path, n: u64) {
    if let Some(python) = interop::python(test) {
        let le: Vec<u8> = (0..n).flat_map(|i| value(i, 5).to_le_bytes()).collect();
        assert_eq!(
            h5chunk_testkit::h5py::values_le(&python, path, "d"),
            le,
            "h5py"
        );
    }
    let _ = std::fs::remove_file(path);
}

/// 10 MiB of 1 MiB chunks (512×512 f32) against the 8 MiB budget: the first write moves the
/// chunks' bytes and nothing else, in vectored writes of 1,024 rows (2 MiB) each; the second,
/// over chunks the index holds, takes the general path (in place, through the chunk cache).
#[test]
fn a_box_of_large_chunks_goes_straight_to_the_file() {
    let (moved, path) = bulk("2d", &[2560, 1024], &[512, 512]);
    let bytes = 2560 * 1024 * 4;
    assert_eq!(moved[0], (bytes, bytes / (2 << 20)), "first write");
    // The rewrite goes through the chunk cache: what it holds is written by the close.
    assert!(
        moved[1].0 <= bytes,
        "the rewrite moves each chunk once at most"
    );
    h5py_agrees(
        "bulk_write::a_box_of_large_chunks_goes_straight_to_the_file",
        &path,
        2560 * 1024,
    );
}

/// Rank 3, chunks of 2 × 300 × 256 f32 (600 KiB), 16 of them: rows of one chunk lie in two
/// planes of the slab.
#[test]
fn a_rank_3_box_goes_straight_to_the_file() {
    let (moved, path) = bulk("3d", &[8, 600, 512], &[2, 300, 256]);
    let bytes = 8 * 600 * 512 * 4;
    assert_eq!(moved[0].0, bytes, "first write: the chunks' bytes only");
    // 16 chunks of 600 rows of 1 KiB: 9,600 parts, 1,024 a write.
    assert_eq!(moved[0].1, 9600_u64.div_ceil(1024), "vectored writes");
    h5py_agrees(
        "bulk_write::a_rank_3_box_goes_straight_to_the_file",
        &path,
        8 * 600 * 512,
    );
}

/// h5py with hdf5plugin's filters: the C-order little-endian bytes of `dataset`.
const PLUGIN_VALUES: &str = r#"
import sys, h5py, hdf5plugin
with h5py.File(sys.argv[1], 'r') as f:
    a = f[sys.argv[2]][()]
    sys.stdout.write(a.astype(a.dtype.newbyteorder('<')).tobytes().hex())
"#;

/// `got` equals `want`, or the first difference is reported (not every value).
fn same(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
        panic!("{what}: value {i} is {}, not {}", got[i], want[i]);
    }
}

/// A whole-dataset write to a filtered dataset: chunks whose rows follow on in the caller's
/// buffer are compressed from it in batches (on the filter pool), the others through the fresh
/// chunks, and chunks already cached or fresh are changed there. On one and two threads, LZ4
/// and Zstandard, chunks that are whole frames (straight from the slab) or halves of frames
/// (gathered): a partial write caches chunk 0 first (a straight path that skipped it would
/// leave the cache's older values to be flushed over it), then two whole writes of other
/// values (the second rewrites every chunk, at other sizes), then every chunk again, one a
/// call (each compressed into the writing thread's kept buffer). The values read back open,
/// reopened, and in h5py.
#[test]
fn filtered_whole_writes_compress_from_the_callers_buffer() {
    use h5chunk::{FileOptions, FilterSpec};
    let python =
        interop::python("bulk_write::filtered_whole_writes_compress_from_the_callers_buffer");
    let shape = [12u64, 64, 64];
    let n: u64 = shape.iter().product();
    for threads in [1usize, 2] {
        for (fname, filter) in [("lz4", FilterSpec::Lz4(0)), ("zstd", FilterSpec::Zstd(3))] {
            for chunk in [[1u64, 64, 64], [3, 64, 64], [2, 32, 64]] {
                let name = format!(
                    "filtered_{fname}_{threads}_{}x{}x{}",
                    chunk[0], chunk[1], chunk[2]
                );
                let path =
                    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.h5"));
                let opts = FileOptions {
                    threads: Some(threads),
                    ..FileOptions::default()
                };
                let f = File::create_with(&path, opts).unwrap();
                let d = f
                    .new_dataset::<f32>()
                    .shape(&shape)
                    .chunk(&chunk)
                    .filter(filter)
                    .create("d")
                    .unwrap();
                d.write_slice(&[1.5f32; 4], &[0, 0, 0], &[1, 2, 2], None)
                    .unwrap();
                let mut last: Vec<f32>;
                for salt in [3, 11] {
                    // Runs of repeats, so the chunks compress, to other sizes for each salt.
                    last = (0..n)
                        .map(|i| value(i / (salt * 8), salt))
                        .collect::<Vec<f32>>();
                    let le: Vec<u8> = last.iter().flat_map(|v| v.to_le_bytes()).collect();
                    d.write_raw(&le).unwrap();
                    same(
                        &d.read::<f32>().unwrap(),
                        &last,
                        &format!("{name}: read back, open"),
                    );
                }
                // Then chunk by chunk, one a call (a frame at a time, as a detector writes):
                // each compressed into the writing thread's kept buffer, at other sizes again.
                let salt = 17;
                last = (0..n).map(|i| value(i / 40, salt)).collect::<Vec<f32>>();
                for a in 0..shape[0] / chunk[0] {
                    for b in 0..shape[1] / chunk[1] {
                        let start = [a * chunk[0], b * chunk[1], 0];
                        let mut values = Vec::new();
                        for i in 0..chunk[0] {
                            for j in 0..chunk[1] {
                                let row = ((start[0] + i) * shape[1] + start[1] + j) * shape[2];
                                values.extend_from_slice(
                                    &last[row as usize..(row + shape[2]) as usize],
                                );
                            }
                        }
                        d.write_slice(&values, &start, &chunk, None).unwrap();
                    }
                }
                same(
                    &d.read::<f32>().unwrap(),
                    &last,
                    &format!("{name}: chunk by chunk, open"),
                );
                drop(d);
                f.close().unwrap();
                let f = File::open(&path).unwrap();
                let d = f.dataset("d").unwrap();
                same(
                    &d.read::<f32>().unwrap(),
                    &last,
                    &format!("{name}: reopened"),
                );
                // Compressed: every chunk went through the filter.
                let stored: u64 = d.chunks().unwrap().iter().map(|c| c.size).sum();
                assert!(stored < n * 4 / 2, "{name}: {stored} bytes stored");
                drop((d, f));
                if let Some(python) = &python {
                    let hex =
                        interop::run_python(python, PLUGIN_VALUES, &[path.to_str().unwrap(), "d"]);
                    let le: Vec<u8> = last.iter().flat_map(|v| v.to_le_bytes()).collect();
                    let want: String = le.iter().map(|b| format!("{b:02x}")).collect();
                    assert!(hex.trim() == want, "{name}: h5py reads other values");
                }
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}
