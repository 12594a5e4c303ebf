//! SIGKILL campaign: a writer process appends rows to a dataset of each index kind, with a
//! small metadata cache (index blocks are evicted, so written in place, between flushes) and a
//! flush every few batches, printing the row count after every flush that returned. The test
//! kills it with SIGKILL at a random instant, then checks the file: it opens (a writable open
//! applies the journal an interrupted flush left), and the rows the last reported flush covered
//! read back exactly, in h5chunk and (for every index libhdf5 knows) in h5py.
//!
//! The writer is this test binary itself, run again with `H5CHUNK_KILL_WRITER` set. The short
//! run (a few kills per index) is part of `cargo test`; `cargo xtask crash --kills N` runs the
//! long one (`kill_campaign_long`, N kills per index, in release).
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use h5chunk::libver::{Libver, LibverBounds};
use h5chunk::{Durability, File, FileOptions, IndexKind};
use h5chunk_testkit::interop;

const COLS: u64 = 4;
const CHUNK: [u64; 2] = [2, COLS];
/// Rows a fixed-array dataset holds (its fixed shape).
const FIXED_ROWS: u64 = 200_000;
/// Rows written per batch, and batches per flush.
const BATCH: u64 = 6;
const FLUSH_EVERY: u64 = 7;

const KINDS: [IndexKind; 5] = [
    IndexKind::ExtensibleArray,
    IndexKind::BTree1,
    IndexKind::BTree2,
    IndexKind::FixedArray,
    IndexKind::SkipList,
];

fn value(i: u64, j: u64) -> i32 {
    (i * 1_000 + j) as i32
}

fn kind_named(name: &str) -> IndexKind {
    *KINDS.iter().find(|k| k.name() == name).unwrap()
}

/// The writer: runs until killed (or until the fixed array is full).
fn writer(path: &Path, kind: IndexKind) {
    let low = if kind == IndexKind::BTree1 {
        Libver::Earliest
    } else {
        Libver::Latest
    };
    // `H5CHUNK_KILL_DURABILITY=none` runs the campaign without the journal (a control).
    let durability = match std::env::var("H5CHUNK_KILL_DURABILITY").as_deref() {
        Ok("none") => Durability::None,
        Ok("flush") => Durability::Flush,
        _ => Durability::Sync,
    };
    let opts = FileOptions {
        bounds: LibverBounds::new(low, Libver::Latest).unwrap(),
        metadata_cache_bytes: Some(8 << 10),
        durability,
        ..FileOptions::default()
    };
    let f = File::create_with(path, opts).unwrap();
    let fixed = kind == IndexKind::FixedArray;
    let mut b = f
        .new_dataset::<i32>()
        .shape(&[if fixed { FIXED_ROWS } else { 0 }, COLS])
        .max_shape(&match kind {
            IndexKind::FixedArray => vec![Some(FIXED_ROWS), Some(COLS)],
            IndexKind::BTree2 => vec![None, None],
            _ => vec![None, Some(COLS)],
        })
        .chunk(&CHUNK);
    if !matches!(kind, IndexKind::BTree1 | IndexKind::FixedArray) {
        b = b.index(kind);
    }
    let d = b.create("d").unwrap();
    f.flush().unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "flushed 0").unwrap();
    out.flush().unwrap();
    let mut rows = 0u64;
    let mut batch = 0u64;
    while !fixed || rows + BATCH <= FIXED_ROWS {
        if !fixed {
            d.resize(&[rows + BATCH, COLS]).unwrap();
        }
        let block: Vec<i32> = (rows..rows + BATCH)
            .flat_map(|i| (0..COLS).map(move |j| value(i, j)))
            .collect();
        d.write_slice(&block, &[rows, 0], &[BATCH, COLS], None)
            .unwrap();
        rows += BATCH;
        batch += 1;
        if batch.is_multiple_of(FLUSH_EVERY) {
            f.flush().unwrap();
            writeln!(out, "flushed {rows}").unwrap();
            out.flush().unwrap();
        }
    }
}

/// A small seeded generator for kill delays.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[derive(Debug, Default)]
struct Tally {
    kills: u64,
    recovered: u64,
    unopenable: u64,
    lost: u64,
}

/// Kill one writer of `kind` after `delay`; check the file with h5chunk; returns the rows the
/// last reported flush covered and whether a journal was applied.
fn one_kill(kind: IndexKind, path: &Path, delay: Duration, tally: &mut Tally) -> u64 {
    let _ = std::fs::remove_file(path);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "kill_writer_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            "H5CHUNK_KILL_WRITER",
            format!("{}:{}", kind.name(), path.display()),
        )
        .env(
            "H5CHUNK_KILL_DURABILITY",
            std::env::var("H5CHUNK_KILL_DURABILITY").unwrap_or_default(),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    // Read the flush reports on a thread, so the pipe never fills.
    let reader = std::thread::spawn(move || {
        let mut last = None;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(n) = line.strip_prefix("flushed ") {
                last = n.trim().parse::<u64>().ok();
            }
        }
        last
    });
    // Wait for the first flush to be reported before timing the kill, so process start-up
    // does not eat the delay.
    let start = Instant::now();
    while !path.exists() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(delay);
    child.kill().unwrap();
    child.wait().unwrap();
    let flushed = reader.join().unwrap();
    tally.kills += 1;
    let Some(rows) = flushed else {
        // Killed before the file's first flush: nothing was promised.
        return 0;
    };
    let side = PathBuf::from(format!("{}.h5chunk-journal", path.display()));
    if h5chunk_cache::needs_recovery(&h5chunk_cache::JournalPlace::File(side)).unwrap() {
        tally.recovered += 1;
    }
    // SIGKILL left the file marked open for writing: cleared as `h5clear -s` would (after the
    // journal check above: the writable open applies it).
    if let Err(e) = File::clear_consistency_flags(path) {
        eprintln!("{kind:?}: cannot clear the flags after a kill: {e}");
        tally.unopenable += 1;
        return rows;
    }
    let f = match File::open_rw(path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{kind:?}: cannot open after a kill: {e}");
            tally.unopenable += 1;
            return rows;
        }
    };
    let ok = f.dataset("d").and_then(|d| {
        let shape = d.shape();
        if shape[0] < rows {
            return Ok(false);
        }
        if rows == 0 {
            return Ok(true);
        }
        let got = d.read_slice::<i32>(&[0, 0], &[rows, COLS], None)?;
        Ok(got
            .iter()
            .enumerate()
            .all(|(n, &v)| v == value(n as u64 / COLS, n as u64 % COLS)))
    });
    if !matches!(ok, Ok(true)) {
        eprintln!("{kind:?}: flushed rows lost or changed after a kill ({rows} rows): {ok:?}");
        tally.lost += 1;
    }
    rows
}

/// Python: every (file, rows) pair read by h5py, first `rows` rows checked against `value`.
const H5PY_CHECK: &str = r#"
import sys, h5py, numpy as np
bad = 0
for arg in sys.argv[1:]:
    path, rows = arg.rsplit(':', 1)
    rows = int(rows)
    try:
        with h5py.File(path, 'r') as f:
            d = f['d']
            if d.shape[0] < rows:
                bad += 1
                continue
            got = d[:rows, :]
            i = np.arange(rows, dtype=np.int64)[:, None]
            j = np.arange(4, dtype=np.int64)[None, :]
            if not np.array_equal(got, (i * 1000 + j).astype(np.int32)):
                bad += 1
    except Exception as e:  # libhdf5 refusing the file counts against it
        print(f"{path}: {e}", file=sys.stderr)
        bad += 1
print(bad)
"#;

fn campaign(kills_per_kind: u64, max_delay_ms: u64) -> Vec<(IndexKind, Tally, Option<u64>)> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("kill_campaign");
    std::fs::create_dir_all(&dir).unwrap();
    let python = interop::python("kill campaign");
    let mut rng = SplitMix(2026);
    let mut summary = Vec::new();
    for kind in KINDS {
        let mut tally = Tally::default();
        let mut kept = Vec::new();
        let path = dir.join(format!("kill_{}.h5", kind.name()));
        for n in 0..kills_per_kind {
            let delay = Duration::from_micros(rng.next() % (max_delay_ms * 1000 + 1));
            let rows = one_kill(kind, &path, delay, &mut tally);
            // Keep a few recovered files for h5py (skip lists are h5chunk's own index).
            if kind != IndexKind::SkipList && rows > 0 && (n % 5 == 0 || n + 1 == kills_per_kind) {
                let keep = dir.join(format!("kept_{}_{n}.h5", kind.name()));
                std::fs::copy(&path, &keep).unwrap();
                kept.push(format!("{}:{rows}", keep.display()));
            }
        }
        let h5py_bad = match (&python, kept.is_empty()) {
            (Some(py), false) => {
                let args: Vec<&str> = kept.iter().map(String::as_str).collect();
                let out = interop::run_python(py, H5PY_CHECK, &args);
                Some(out.trim().parse::<u64>().unwrap())
            }
            _ => None,
        };
        eprintln!(
            "{:>7}: {} kills, {} journals applied, {} files unopenable, {} with flushed rows lost \
             or changed; h5py checked {} files: {}",
            kind.name(),
            tally.kills,
            tally.recovered,
            tally.unopenable,
            tally.lost,
            kept.len(),
            h5py_bad.map_or("skipped".to_string(), |b| format!("{b} bad")),
        );
        summary.push((kind, tally, h5py_bad));
    }
    summary
}

fn assert_nothing_lost(summary: &[(IndexKind, Tally, Option<u64>)]) {
    for (kind, t, bad) in summary {
        assert_eq!((t.unopenable, t.lost), (0, 0), "{kind:?}: {t:?}");
        assert_eq!(bad.unwrap_or(0), 0, "{kind:?}: h5py saw wrong values");
    }
}

/// The writer's entry point (does nothing unless this binary was started as a writer).
#[test]
fn kill_writer_entry() {
    if let Ok(spec) = std::env::var("H5CHUNK_KILL_WRITER") {
        let (kind, path) = spec.split_once(':').unwrap();
        writer(Path::new(path), kind_named(kind));
    }
}

/// A few kills per index kind, within `cargo test`.
#[test]
fn kill_campaign_short() {
    assert_nothing_lost(&campaign(6, 60));
}

/// `cargo xtask crash --kills N`: `H5CHUNK_KILLS` kills per index kind. Without that variable
/// (a plain `cargo test`) it does nothing: the short campaign above is the in-suite version.
#[test]
fn kill_campaign_long() {
    let Some(kills) = std::env::var("H5CHUNK_KILLS")
        .ok()
        .and_then(|k| k.parse::<u64>().ok())
    else {
        return;
    };
    let summary = campaign(kills, 300);
    // The control run without the journal reports its losses rather than failing.
    if std::env::var("H5CHUNK_KILL_DURABILITY").as_deref() != Ok("none") {
        assert_nothing_lost(&summary);
    }
}
