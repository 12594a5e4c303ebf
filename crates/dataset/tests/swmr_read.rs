//! h5chunk as a SWMR reader of a live libhdf5 writer (h5py, `swmr_mode = True`) in another
//! process: the reader refreshes while the writer appends and flushes, and checks every value
//! it can see. Values are a function of their coordinates, so any visible element is checked;
//! the visible extent must never shrink, nor pass what the writer has written.
//!
//! Also the open rules of a SWMR reader: the flags of a v3 file say a SWMR writer has it open
//! (or nobody); a plain reader refuses that file.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use h5chunk::{Error, File, OpenOptions};
use h5chunk_testkit::interop;
use rstest::rstest;

/// The h5py writer: creates `x` (rank 1 or 2, `cols` columns), turns SWMR writing on, prints
/// `ready`, then appends `n` rows `step` at a time, flushing the dataset after each step, and
/// prints `done` before closing. Row `r`, column `c` holds `r * 1_000_003 + c`.
const WRITER: &str = r#"
import sys, time
import h5py, numpy as np
path, n, step, chunk, cols, index, deflate = sys.argv[1:8]
n, step, chunk, cols = int(n), int(step), int(chunk), int(cols)
f = h5py.File(path, 'w', libver='latest')
kw = dict(compression='gzip', compression_opts=4, shuffle=True) if deflate == '1' else {}
if cols == 0:
    d = f.create_dataset('x', shape=(0,), maxshape=(None,), chunks=(chunk,), dtype='<i8', **kw)
else:
    # 'btree2': two unlimited dimensions, so libhdf5 indexes the chunks with a v2 B-tree.
    maxcols = None if index == 'btree2' else cols
    d = f.create_dataset('x', shape=(0, cols), maxshape=(None, maxcols), chunks=(chunk, 4),
                         dtype='<i8', **kw)
f.swmr_mode = True
print('ready', flush=True)
i = 0
while i < n:
    k = min(step, n - i)
    rows = np.arange(i, i + k, dtype='<i8')
    if cols == 0:
        d.resize((i + k,))
        d[i:i + k] = rows * 1000003
    else:
        d.resize((i + k, cols))
        d[i:i + k, :] = rows[:, None] * 1000003 + np.arange(cols, dtype='<i8')[None, :]
    d.flush()
    i += k
    time.sleep(0.0005)
print('done', flush=True)
f.close()
"#;

/// What the writer writes: rows, rows per flush, chunk rows, columns (0: rank 1), index kind
/// ("earray" or "btree2"), deflate+shuffle or not.
struct Writes<'a> {
    n: u64,
    step: u64,
    chunk: u64,
    cols: u64,
    index: &'a str,
    deflate: bool,
}

fn spawn_writer(
    python: &Path,
    path: &Path,
    w: &Writes<'_>,
) -> (Child, BufReader<std::process::ChildStdout>) {
    let Writes {
        n,
        step,
        chunk,
        cols,
        index,
        deflate,
    } = *w;
    let mut child = Command::new(python)
        .arg("-c")
        .arg(WRITER)
        .arg(path)
        .args([
            n.to_string(),
            step.to_string(),
            chunk.to_string(),
            cols.to_string(),
            index.to_string(),
            if deflate { "1" } else { "0" }.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "the writer did not start");
    (child, out)
}

/// Read everything visible and check it; the number of rows seen.
fn check_visible(ds: &h5chunk::Dataset, cols: u64, last_rows: u64, n: u64) -> u64 {
    let dims = ds.shape();
    let rows = dims[0];
    assert!(
        rows >= last_rows,
        "the extent shrank: {rows} after {last_rows}"
    );
    assert!(rows <= n, "more rows ({rows}) than the writer writes ({n})");
    if rows == 0 {
        return 0;
    }
    let values: Vec<i64> = ds.read().unwrap();
    let width = cols.max(1);
    assert_eq!(values.len() as u64, rows * width);
    for (i, &v) in values.iter().enumerate() {
        let (r, c) = (i as u64 / width, i as u64 % width);
        let want = (r * 1_000_003 + if cols == 0 { 0 } else { c }) as i64;
        assert_eq!(v, want, "row {r} column {c} of {rows}");
    }
    rows
}

#[rstest]
#[case::earray_1d(0, 1, "earray", false)]
#[case::earray_1d_deflate(0, 16, "earray", true)]
#[case::earray_2d(8, 4, "earray", false)]
#[case::btree2_2d(8, 4, "btree2", false)]
#[case::btree2_2d_deflate(8, 8, "btree2", true)]
fn h5chunk_follows_a_live_h5py_swmr_writer(
    #[case] cols: u64,
    #[case] chunk: u64,
    #[case] index: &str,
    #[case] deflate: bool,
) {
    let Some(python) = interop::python("h5chunk_follows_a_live_h5py_swmr_writer") else {
        return;
    };
    let dir = scratch(&format!("{index}_{cols}_{chunk}_{deflate}"));
    let path = dir.join("swmr.h5");
    let n = 3000;
    let writes = Writes {
        n,
        step: 7,
        chunk,
        cols,
        index,
        deflate,
    };
    let (mut writer, mut out) = spawn_writer(&python, &path, &writes);

    // A plain reader refuses the file while the SWMR writer has it.
    assert!(matches!(
        File::open(&path),
        Err(Error::FileFlagged { flags: 5, .. })
    ));
    let file = File::open_with(&path, OpenOptions::swmr_read()).unwrap();
    let ds = file.dataset("x").unwrap();
    let (mut rows, mut refreshes) = (0u64, 0u64);
    let start = Instant::now();
    loop {
        ds.refresh().unwrap();
        refreshes += 1;
        rows = check_visible(&ds, cols, rows, n);
        if rows == n {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "saw {rows} of {n} rows after 2 minutes"
        );
    }
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "done");
    assert!(writer.wait().unwrap().success());
    assert!(refreshes > 1, "the reader saw the dataset grow");
    // The closed file reads the same, with a plain open too.
    let plain = File::open(&path).unwrap();
    check_visible(&plain.dataset("x").unwrap(), cols, n, n);
    drop((ds, file, plain));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fresh directory for one test case.
fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("h5chunk_swmr_read_{}_{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_swmr_reader_refuses_a_writer_not_in_swmr_mode_and_refresh_is_a_no_op_for_writers() {
    let Some(python) = interop::python("a_swmr_reader_refuses_a_writer_not_in_swmr_mode") else {
        return;
    };
    let dir = scratch("plain");
    let path = dir.join("plain.h5");
    // A v3 file left flagged open for writing only (bit 0), as a plain writer that crashed
    // leaves it: h5py writes it, then the flag is set back as libhdf5 sets it on open.
    let script = r#"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], 'w', libver='latest')
f.create_dataset('x', data=np.arange(10, dtype='<i8'), maxshape=(None,), chunks=(4,))
f.close()
"#;
    interop::run_python(&python, script, &[path.to_str().unwrap()]);
    // No writer: a SWMR reader opens it.
    let f = File::open_with(&path, OpenOptions::swmr_read()).unwrap();
    let d = f.dataset("x").unwrap();
    d.refresh().unwrap();
    assert_eq!(d.read::<i64>().unwrap(), (0..10).collect::<Vec<i64>>());
    drop((d, f));
    // A libhdf5 writer not in SWMR mode holds it (flags 0x01, no file locking so that the
    // flags alone decide): the SWMR reader refuses it, as libhdf5 does.
    let holder = r#"
import sys, h5py
f = h5py.File(sys.argv[1], 'r+', libver='latest', locking=False)
print('ready', flush=True)
sys.stdin.readline()
f.close()
"#;
    let mut child = Command::new(&python)
        .arg("-c")
        .arg(holder)
        .arg(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    let err = File::open_with(&path, OpenOptions::swmr_read()).unwrap_err();
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    assert!(
        matches!(err, Error::NotSwmrWriting { flags: 1, .. }),
        "{err}"
    );
    let w = File::open_with(&path, OpenOptions::read_write()).unwrap();
    // A writer's refresh changes nothing.
    let d = w.dataset("x").unwrap();
    d.append(&[10i64]).unwrap();
    d.refresh().unwrap();
    assert_eq!(d.shape(), vec![11]);
    // A SWMR reader opens read-only.
    let both = OpenOptions {
        writable: true,
        ..OpenOptions::swmr_read()
    };
    assert!(File::open_with(&path, both).is_err());
    drop((d, w));
    let _ = std::fs::remove_dir_all(&dir);
}

/// libhdf5's SWMR writer rewrites a filtered chunk in place when its new stored size equals
/// the old one, so a SWMR reader can catch it half-written: the reader reads it again, with
/// back-off, and finds it whole. A reader not in SWMR mode reports the damage at once.
#[test]
fn a_swmr_reader_reads_a_chunk_caught_mid_rewrite_again() {
    use h5chunk::libver::{Libver, LibverBounds};
    use h5chunk::{FileOptions, FilterSpec};
    let dir = scratch("torn_chunk");
    let path = dir.join("t.h5");
    let f = File::create_with(
        &path,
        FileOptions {
            bounds: LibverBounds::new(Libver::V110, Libver::Latest).unwrap(),
            ..FileOptions::default()
        },
    )
    .unwrap();
    let d = f
        .new_dataset::<i64>()
        .shape(&[0])
        .max_shape(&[None])
        .chunk(&[64])
        .filter(FilterSpec::Deflate(4))
        .create("x")
        .unwrap();
    let values: Vec<i64> = (0..64).map(|i| i * 1_000_003).collect();
    d.append(&values).unwrap();
    f.close().unwrap();
    let c = File::open(&path)
        .unwrap()
        .dataset("x")
        .unwrap()
        .chunks()
        .unwrap()[0]
        .clone();
    let whole = std::fs::read(&path).unwrap();
    let (at, len) = (c.addr.get() as usize, c.size as usize);
    let mut torn = whole.clone();
    torn[at + len / 2..at + len].fill(0xff);
    std::fs::write(&path, &torn).unwrap();
    let err = File::open(&path)
        .unwrap()
        .dataset("x")
        .unwrap()
        .read::<i64>()
        .unwrap_err();
    assert!(matches!(err, Error::Filter { .. }), "{err}");
    let r = File::open_with(&path, OpenOptions::swmr_read()).unwrap();
    let d = r.dataset("x").unwrap();
    let fixer = {
        let path = path.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            std::os::unix::fs::FileExt::write_all_at(&file, &whole[at..at + len], at as u64)
                .unwrap();
        })
    };
    assert_eq!(d.read::<i64>().unwrap(), values);
    fixer.join().unwrap();
}

/// A SWMR reader's open can read the superblock while a live writer rewrites it (a torn
/// image, whose checksum fails): it reads it again, a bounded number of times, as the metadata
/// cache retries its entries. A reader not in SWMR mode reports the damage at once. The torn
/// reads are served by `FaultyStorage` over a libhdf5-written version 3 file (the signature
/// and prefix left whole, as a writer never changes them; the rest of the superblock, its
/// checksum included, garbled).
#[test]
fn a_swmr_reader_reads_a_torn_superblock_again() {
    use std::sync::Arc;

    use h5chunk::storage::MemStorage;
    use h5chunk_cache::FaultyStorage;
    use h5chunk_format::Addr;

    let bytes = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/libhdf5/sb3_latest.h5"),
    )
    .unwrap();
    assert_eq!(bytes[8], 3, "a version 3 superblock");
    let faulty = || Arc::new(FaultyStorage::new(MemStorage::from_vec(bytes.clone())));
    // Bytes 24..48 of the 48-byte superblock: the tear garbles 36..48 (the end-of-file and
    // root addresses' last bytes and the checksum).
    let tear = |s: &FaultyStorage<MemStorage>, count| s.tear_reads(Addr(24), 24, count);
    let expected = OpenOptions::read_only()
        .open_on(faulty())
        .unwrap()
        .dataset("/chunked_u4")
        .unwrap()
        .read::<u32>()
        .unwrap();

    // Torn three times, then whole: the SWMR reader opens and reads what the file holds.
    let s = faulty();
    tear(&s, 3);
    let f = OpenOptions::swmr_read().open_on(s.clone()).unwrap();
    assert_eq!(s.torn_reads(), 3);
    let d = f.dataset("/chunked_u4").unwrap();
    assert_eq!(d.read::<u32>().unwrap(), expected);

    // A plain reader fails on the first torn image.
    let s = faulty();
    tear(&s, 1);
    let err = OpenOptions::read_only().open_on(s.clone()).unwrap_err();
    assert!(matches!(err, Error::Format(_)), "{err}");
    assert_eq!(s.torn_reads(), 1);

    // A superblock torn on every read (a damaged one): the retries are bounded, and the
    // error is the checksum's.
    let s = faulty();
    tear(&s, u64::MAX);
    let err = OpenOptions::swmr_read().open_on(s.clone()).unwrap_err();
    assert!(matches!(err, Error::Format(_)), "{err}");
    assert_eq!(
        s.torn_reads(),
        u64::from(h5chunk_cache::CacheConfig::SWMR_READ_ATTEMPTS)
    );
}
