//! The SWMR soak (`cargo xtask swmr-soak`, and its short run inside `cargo xtask test`): an
//! h5chunk SWMR writer appends to a dataset and flushes, while reader processes, h5chunk ones
//! (this program's `read` command) and h5py ones (`h5py.File(path, 'r', swmr=True)` with
//! `dataset.refresh()`), follow it and check every element they can see.
//!
//! Every element's value is a function of its coordinates (`i * 1_000_003` in one dimension,
//! `i * 1_000_003 + j` in two, `i * 1_000_003 + j * 1_009 + k` in three), so a reader checks
//! all it sees: after each refresh it reads the part of the extent that is new to it. A reader
//! also checks that the extent it sees never shrinks and never passes the extent the writer
//! announced before its latest flush (the writer writes that extent to a side file, then
//! flushes). The fixed-array scenario fills a fixed extent row by row: nothing gates what a
//! reader sees there (libhdf5 too writes a chunk whenever its chunk cache evicts it), so a
//! reader checks that every element holds its value or the fill value, and that the rows it
//! sees written never pass the rows the writer announced it would write before its next
//! announcement.
//!
//! The writer records its metadata writes and checks their order against the flush
//! dependencies after every flush (`h5chunk_cache::check_write_order`).
//!
//! `h5chunk-swmr soak --appends N --readers R [--h5py-readers R] [--scenarios a,b]
//!  [--chunks 1,8192] [--deflate both|on|off] [--per-flush E] [--python PY] [--dir D]`
//!
//! prints one line per run and a summary; exits non-zero on any wrong value, reader error or
//! write-order violation.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use h5chunk::{Durability, File, FileOptions, FilterSpec, IndexKind, OpenOptions};

/// How a scenario's extent grows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Grow {
    /// Rows appended along dimension 0.
    Dim0,
    /// Columns appended along dimension 1.
    Dim1,
    /// A row or a column, whichever keeps the extent nearer square.
    Alternate,
    /// A fixed extent, filled row by row.
    Fill,
}

/// One dataset shape and growth pattern.
#[derive(Clone, Debug)]
struct Scenario {
    name: &'static str,
    initial: Vec<u64>,
    max: Vec<Option<u64>>,
    chunk: Vec<u64>,
    grow: Grow,
    /// The chunk index libhdf5 (and h5chunk) choose for it.
    index: IndexKind,
}

const SCENARIOS: &[&str] = &[
    "earray",
    "earray2d",
    "btree2-x",
    "btree2-y",
    "btree2-alt",
    "btree2-3d",
    "farray",
];

/// The value at `coords`.
fn oracle(coords: &[u64]) -> i64 {
    let v = match coords {
        [i] => i * 1_000_003,
        [i, j] => i * 1_000_003 + j,
        [i, j, k] => i * 1_000_003 + j * 1_009 + k,
        _ => unreachable!("ranks 1 to 3"),
    };
    v as i64
}

/// The fill value of the fixed-array scenario (never an oracle value).
const FILL: i64 = -1;

/// `n` elements in chunks of about `chunk_elems` elements.
fn scenario(name: &str, n: u64, chunk_elems: u64) -> Result<Scenario, String> {
    let e = chunk_elems.max(1);
    let s = (e as f64).sqrt().floor().max(1.0) as u64;
    Ok(match name {
        "earray" => Scenario {
            name: "earray",
            initial: vec![0],
            max: vec![None],
            chunk: vec![e],
            grow: Grow::Dim0,
            index: IndexKind::ExtensibleArray,
        },
        "earray2d" => Scenario {
            name: "earray2d",
            initial: vec![0, 8],
            max: vec![None, Some(8)],
            chunk: vec![(e / 4).max(1), e.min(4)],
            grow: Grow::Dim0,
            index: IndexKind::ExtensibleArray,
        },
        "btree2-x" => Scenario {
            name: "btree2-x",
            initial: vec![0, 8],
            max: vec![None, None],
            chunk: vec![(e / 4).max(1), e.min(4)],
            grow: Grow::Dim0,
            index: IndexKind::BTree2,
        },
        "btree2-y" => Scenario {
            name: "btree2-y",
            initial: vec![8, 0],
            max: vec![None, None],
            chunk: vec![e.min(4), (e / 4).max(1)],
            grow: Grow::Dim1,
            index: IndexKind::BTree2,
        },
        "btree2-alt" => Scenario {
            name: "btree2-alt",
            initial: vec![1, 1],
            max: vec![None, None],
            chunk: vec![s, s],
            grow: Grow::Alternate,
            index: IndexKind::BTree2,
        },
        "btree2-3d" => Scenario {
            name: "btree2-3d",
            initial: vec![0, 4, 4],
            max: vec![None, None, None],
            chunk: vec![(e / 4).max(1), e.min(2), (e / 2).clamp(1, 2)],
            grow: Grow::Dim0,
            index: IndexKind::BTree2,
        },
        "farray" => {
            let rows = n.div_ceil(8).max(1);
            Scenario {
                name: "farray",
                initial: vec![rows, 8],
                max: vec![Some(rows), Some(8)],
                chunk: vec![(e / 4).max(1), e.min(4)],
                grow: Grow::Fill,
                index: IndexKind::FixedArray,
            }
        }
        other => return Err(format!("unknown scenario {other} (one of {SCENARIOS:?})")),
    })
}

/// The boxes (start, count) that cover `new` minus `old` (both extents from the origin).
fn new_boxes(old: &[u64], new: &[u64]) -> Vec<(Vec<u64>, Vec<u64>)> {
    let mut out = Vec::new();
    for k in 0..new.len() {
        if new[k] <= old[k] {
            continue;
        }
        let mut start = vec![0; new.len()];
        let mut count = new.to_vec();
        count[..k].copy_from_slice(&old[..k]);
        start[k] = old[k];
        count[k] = new[k] - old[k];
        if count.iter().all(|&c| c > 0) {
            out.push((start, count));
        }
    }
    out
}

/// Every coordinate of the box `start`/`count` in C order.
fn for_each_coord(start: &[u64], count: &[u64], mut f: impl FnMut(&[u64])) {
    let total: u64 = count.iter().product();
    let mut c = start.to_vec();
    for _ in 0..total {
        f(&c);
        for d in (0..c.len()).rev() {
            c[d] += 1;
            if c[d] < start[d] + count[d] {
                break;
            }
            c[d] = start[d];
        }
    }
}

fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

fn dims_text(d: &[u64]) -> String {
    d.iter().map(u64::to_string).collect::<Vec<_>>().join(" ")
}

fn parse_dims(s: &str) -> Option<Vec<u64>> {
    s.split_whitespace().map(|x| x.parse().ok()).collect()
}

/// What one reader process reports.
#[derive(Clone, Copy, Debug, Default)]
struct ReaderReport {
    refreshes: u64,
    checked: u64,
    wrong: u64,
    errors: u64,
    /// Metadata reads retried after a checksum failure (`None`: h5py does not say).
    retries: Option<u64>,
}

impl ReaderReport {
    fn parse(line: &str) -> Option<ReaderReport> {
        let rest = line.strip_prefix("RESULT ")?;
        let mut r = ReaderReport::default();
        for kv in rest.split_whitespace() {
            let (k, v) = kv.split_once('=')?;
            match k {
                "refreshes" => r.refreshes = v.parse().ok()?,
                "checked" => r.checked = v.parse().ok()?,
                "wrong" => r.wrong = v.parse().ok()?,
                "errors" => r.errors = v.parse().ok()?,
                "retries" => r.retries = v.parse().ok(),
                _ => {}
            }
        }
        Some(r)
    }
}

/// The h5chunk reader (`read` command): follow the dataset until the writer is done.
fn read_main(args: &[String]) -> Result<(), String> {
    let mut file = None;
    let (mut name, mut n, mut chunk_elems) = (String::new(), 0u64, 1u64);
    let (mut done, mut bound) = (None, None);
    let mut it = args.iter();
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| format!("{k} needs a value"))?;
        match k.as_str() {
            "--file" => file = Some(PathBuf::from(v)),
            "--scenario" => name = v.clone(),
            "--n" => n = v.parse().map_err(|e| format!("--n: {e}"))?,
            "--chunk-elems" => {
                chunk_elems = v.parse().map_err(|e| format!("--chunk-elems: {e}"))?
            }
            "--done" => done = Some(PathBuf::from(v)),
            "--bound" => bound = Some(PathBuf::from(v)),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let (file, done, bound) = match (file, done, bound) {
        (Some(f), Some(d), Some(b)) => (f, d, b),
        _ => return Err("read needs --file, --done and --bound".into()),
    };
    let sc = scenario(&name, n, chunk_elems)?;
    let opened = Instant::now();
    let f = loop {
        match File::open_with(&file, OpenOptions::swmr_read()) {
            Ok(f) => break f,
            Err(e) if opened.elapsed() < Duration::from_secs(60) => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(format!("open: {e}")),
        }
    };
    let d = f.dataset("x").map_err(|e| format!("dataset: {e}"))?;
    println!("ready");
    std::io::stdout().flush().ok();
    let mut rep = ReaderReport::default();
    let mut seen: Vec<u64> = vec![0; sc.initial.len()];
    let mut prefix = 0u64; // Fill: rows known written
    let rows = sc.initial[0];
    let mut finishing = 0u32;
    loop {
        let final_dims = std::fs::read_to_string(&done)
            .ok()
            .and_then(|s| parse_dims(&s));
        if let Err(e) = d.refresh() {
            rep.errors += 1;
            eprintln!("h5chunk reader: refresh: {e}");
            if rep.errors > 20 {
                break;
            }
            continue;
        }
        rep.refreshes += 1;
        let shape = d.shape();
        let announced = std::fs::read_to_string(&bound)
            .ok()
            .and_then(|s| parse_dims(&s));
        if sc.grow == Grow::Fill {
            if shape != sc.initial {
                rep.wrong += 1;
                eprintln!(
                    "h5chunk reader: fixed extent {shape:?} is not {:?}",
                    sc.initial
                );
                break;
            }
            // A window of rows past the known prefix: written rows, then fill rows only.
            let window = (4096 / 8).min(rows - prefix);
            if window > 0 {
                match d.read_slice::<i64>(&[prefix, 0], &[window, 8], None) {
                    Ok(v) => {
                        rep.checked += v.len() as u64;
                        let mut i = 0usize;
                        for_each_coord(&[prefix, 0], &[window, 8], |c| {
                            if v[i] != FILL && v[i] != oracle(c) {
                                if rep.wrong < 5 {
                                    eprintln!("h5chunk reader: {c:?} holds {}", v[i]);
                                }
                                rep.wrong += 1;
                            }
                            i += 1;
                        });
                        let mut q = 0u64;
                        while q < window
                            && (0..8).all(|c| v[(q * 8 + c) as usize] == oracle(&[prefix + q, c]))
                        {
                            q += 1;
                        }
                        prefix += q;
                        // Read after the data: what was read was written by then.
                        let announced = std::fs::read_to_string(&bound)
                            .ok()
                            .and_then(|s| parse_dims(&s));
                        if let Some(b) = &announced
                            && prefix > b[0]
                        {
                            rep.wrong += 1;
                            eprintln!("h5chunk reader: {prefix} rows seen, {} announced", b[0]);
                        }
                    }
                    Err(e) => {
                        rep.errors += 1;
                        eprintln!("h5chunk reader: read: {e}");
                    }
                }
            }
            if let Some(fd) = &final_dims
                && prefix >= fd[0]
            {
                break;
            }
        } else {
            if shape.iter().zip(&seen).any(|(s, o)| s < o) {
                rep.wrong += 1;
                eprintln!("h5chunk reader: extent shrank from {seen:?} to {shape:?}");
            }
            if let Some(b) = &announced
                && shape.iter().zip(b).any(|(s, b)| s > b)
            {
                rep.wrong += 1;
                eprintln!("h5chunk reader: extent {shape:?} past the announced {b:?}");
            }
            let old: Vec<u64> = seen.iter().zip(&shape).map(|(&o, &s)| o.min(s)).collect();
            for (start, count) in new_boxes(&old, &shape) {
                match d.read_slice::<i64>(&start, &count, None) {
                    Ok(v) => {
                        let mut i = 0usize;
                        for_each_coord(&start, &count, |c| {
                            if v[i] != oracle(c) {
                                if rep.wrong < 5 {
                                    eprintln!(
                                        "h5chunk reader: {c:?} holds {}, not {}",
                                        v[i],
                                        oracle(c)
                                    );
                                }
                                rep.wrong += 1;
                            }
                            i += 1;
                        });
                        rep.checked += v.len() as u64;
                    }
                    Err(e) => {
                        rep.errors += 1;
                        eprintln!("h5chunk reader: read {start:?}+{count:?}: {e}");
                    }
                }
            }
            seen = shape.clone();
            if let Some(fd) = &final_dims
                && *fd == shape
            {
                break;
            }
        }
        if final_dims.is_some() {
            // The writer is done: its last flush must show within a few refreshes.
            finishing += 1;
            if finishing > 1000 {
                rep.errors += 1;
                eprintln!("h5chunk reader: the final extent never showed (at {seen:?})");
                break;
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let retries = f.cache_stats().total().retries;
    println!(
        "RESULT refreshes={} checked={} wrong={} errors={} retries={retries}",
        rep.refreshes, rep.checked, rep.wrong, rep.errors
    );
    Ok(())
}

/// The h5py reader: the same checks as `read_main`, through libhdf5.
const H5PY_READER: &str = r#"
import sys, time, os
import h5py, numpy as np
path, scen, done_path, bound_path = sys.argv[1:5]
FILL = -1
def oracle(start, count):
    g = np.meshgrid(*[np.arange(s, s + c, dtype=np.int64) for s, c in zip(start, count)],
                    indexing='ij')
    if len(g) == 1:
        return g[0] * 1000003
    if len(g) == 2:
        return g[0] * 1000003 + g[1]
    return g[0] * 1000003 + g[1] * 1009 + g[2]
def dims(p):
    try:
        with open(p) as fh:
            return [int(x) for x in fh.read().split()]
    except (FileNotFoundError, ValueError):
        return None
t0 = time.time()
while True:
    try:
        f = h5py.File(path, 'r', swmr=True)
        break
    except OSError:
        if time.time() - t0 > 60:
            raise
        time.sleep(0.005)
d = f['x']
print('ready', flush=True)
refreshes = checked = wrong = errors = 0
rank = len(d.shape)
seen = [0] * rank
prefix = 0
finishing = 0
while True:
    final = dims(done_path)
    try:
        d.refresh()
    except Exception as e:
        errors += 1
        print('h5py reader: refresh:', e, file=sys.stderr)
        if errors > 20:
            break
        continue
    refreshes += 1
    shape = list(d.shape)
    bound = dims(bound_path)
    if scen == 'farray':
        rows = shape[0]
        window = min(4096 // 8, rows - prefix)
        if window > 0:
            try:
                v = d[prefix:prefix + window, :]
                checked += v.size
                exp = oracle([prefix, 0], [window, 8])
                bad = int(np.count_nonzero((v != exp) & (v != FILL)))
                if bad:
                    wrong += bad
                    print('h5py reader:', bad, 'values neither written nor fill', file=sys.stderr)
                good = np.all(v == exp, axis=1)
                q = int(np.argmin(good)) if not good.all() else window
                prefix += q
                bound = dims(bound_path)  # after the data: what was read was written by then
                if bound is not None and prefix > bound[0]:
                    wrong += 1
                    print('h5py reader:', prefix, 'rows seen,', bound[0], 'announced', file=sys.stderr)
            except Exception as e:
                errors += 1
                print('h5py reader: read:', e, file=sys.stderr)
        if final is not None and prefix >= final[0]:
            break
    else:
        if any(s < o for s, o in zip(shape, seen)):
            wrong += 1
            print('h5py reader: extent shrank', seen, shape, file=sys.stderr)
        if bound is not None and any(s > b for s, b in zip(shape, bound)):
            wrong += 1
            print('h5py reader: extent', shape, 'past the announced', bound, file=sys.stderr)
        old = [min(o, s) for o, s in zip(seen, shape)]
        for k in range(rank):
            if shape[k] <= old[k]:
                continue
            start = [0] * rank
            count = list(shape)
            for j in range(k):
                count[j] = old[j]
            start[k] = old[k]
            count[k] = shape[k] - old[k]
            if min(count) == 0:
                continue
            try:
                v = d[tuple(slice(s, s + c) for s, c in zip(start, count))]
                checked += v.size
                bad = int(np.count_nonzero(v != oracle(start, count)))
                if bad:
                    wrong += bad
                    print('h5py reader:', bad, 'wrong values in', start, count, file=sys.stderr)
            except Exception as e:
                errors += 1
                print('h5py reader: read:', e, file=sys.stderr)
        seen = shape
        if final is not None and final == shape:
            break
    if final is not None:
        finishing += 1
        if finishing > 1000:
            errors += 1
            print('h5py reader: the final extent never showed', seen, file=sys.stderr)
            break
    time.sleep(0.0002)
f.close()
print(f'RESULT refreshes={refreshes} checked={checked} wrong={wrong} errors={errors}', flush=True)
"#;

struct Options {
    appends: u64,
    readers: usize,
    h5py_readers: usize,
    scenarios: Vec<String>,
    chunks: Vec<u64>,
    deflate: Vec<bool>,
    per_flush: Option<u64>,
    python: Option<PathBuf>,
    dir: PathBuf,
    /// Who writes: `h5chunk` (this process), `h5py` or `c` (libhdf5, a process of its own).
    writer: String,
    /// The C writer (`benches/libhdf5/swmr_writer.c`, built).
    c_writer: Option<PathBuf>,
}

fn parse_soak(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        appends: 20_000,
        readers: 2,
        h5py_readers: usize::MAX,
        scenarios: SCENARIOS.iter().map(|s| s.to_string()).collect(),
        chunks: vec![1, 8192],
        deflate: vec![false, true],
        per_flush: None,
        python: std::env::var_os("H5CHUNK_PYTHON").map(PathBuf::from),
        dir: std::env::temp_dir().join("h5chunk-swmr-soak"),
        writer: "h5chunk".into(),
        c_writer: None,
    };
    let mut it = args.iter();
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| format!("{k} needs a value"))?;
        let num = |s: &str| s.parse::<u64>().map_err(|e| format!("{k}: {e}"));
        match k.as_str() {
            "--appends" => o.appends = num(v)?,
            "--readers" => o.readers = num(v)? as usize,
            "--h5py-readers" => o.h5py_readers = num(v)? as usize,
            "--scenarios" => o.scenarios = v.split(',').map(str::to_owned).collect(),
            "--chunks" => o.chunks = v.split(',').map(num).collect::<Result<_, _>>()?,
            "--deflate" => {
                o.deflate = match v.as_str() {
                    "both" => vec![false, true],
                    "on" => vec![true],
                    "off" => vec![false],
                    _ => return Err("--deflate: both, on or off".into()),
                }
            }
            "--per-flush" => o.per_flush = Some(num(v)?.max(1)),
            "--python" => o.python = Some(PathBuf::from(v)),
            "--dir" => o.dir = PathBuf::from(v),
            "--writer" => o.writer = v.clone(),
            "--c-writer" => o.c_writer = Some(PathBuf::from(v)),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if o.h5py_readers == usize::MAX {
        o.h5py_readers = o.readers;
    }
    if o.appends == 0 {
        return Err("--appends must be positive".into());
    }
    Ok(o)
}

/// What one writer run reports.
#[derive(Debug, Default)]
struct RunReport {
    flushes: u64,
    elements: u64,
    seconds: f64,
    readers: Vec<(&'static str, ReaderReport)>,
    failures: Vec<String>,
}

fn spawn_reader(mut cmd: Command) -> Result<(Child, BufReader<ChildStdout>), String> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("spawning a reader: {e}"))?;
    let out = BufReader::new(child.stdout.take().ok_or("no reader stdout")?);
    Ok((child, out))
}

/// One run: a writer here, readers in child processes.
fn run(o: &Options, sc: &Scenario, chunk_elems: u64, deflate: bool) -> Result<RunReport, String> {
    std::fs::create_dir_all(&o.dir).map_err(|e| format!("{}: {e}", o.dir.display()))?;
    let tag = format!(
        "{}-c{chunk_elems}{}",
        sc.name,
        if deflate { "-z" } else { "" }
    );
    let paths = Paths::new(&o.dir, &tag);
    if o.writer != "h5chunk" {
        return run_external(o, sc, &paths, chunk_elems, deflate);
    }
    let Paths { path, done, bound } = &paths;
    let f = File::create_with(
        path,
        FileOptions {
            swmr_write: true,
            trace: true,
            durability: Durability::Flush,
            ..FileOptions::default()
        },
    )
    .map_err(|e| format!("create: {e}"))?;
    let mut b = f
        .new_dataset::<i64>()
        .shape(&sc.initial)
        .max_shape(&sc.max)
        .chunk(&sc.chunk)
        .fill_value(FILL);
    if deflate {
        b = b.filter(FilterSpec::Shuffle).filter(FilterSpec::Deflate(4));
    }
    let d = b.create("x").map_err(|e| format!("create x: {e}"))?;
    if d.index_kind() != Some(sc.index) {
        return Err(format!(
            "{tag}: index {:?}, expected {:?}",
            d.index_kind(),
            sc.index
        ));
    }
    // Dim1 and Alternate start with rows (or a cell) that hold values already.
    let mut dims = sc.initial.clone();
    if sc.grow != Grow::Fill && dims.iter().all(|&x| x > 0) {
        let count = dims.clone();
        let mut v = Vec::new();
        for_each_coord(&vec![0; dims.len()], &count, |c| v.push(oracle(c)));
        d.write_slice(&v, &vec![0; dims.len()], &count, None)
            .map_err(|e| format!("first write: {e}"))?;
    }
    f.flush().map_err(|e| format!("flush: {e}"))?;
    f.start_swmr_write()
        .map_err(|e| format!("start_swmr_write: {e}"))?;
    let announce = |dims: &[u64]| write_atomically(bound, &dims_text(dims));
    let mut filled = 0u64; // Fill: rows written
    let per_flush = o.per_flush.unwrap_or((o.appends / 500).max(1));
    // Fill: the rows written before the next announcement, at most.
    let total_rows = dims[0];
    let ahead = move |filled: u64| vec![(filled + per_flush.div_ceil(8) + 1).min(total_rows), 8];
    announce(&if sc.grow == Grow::Fill {
        ahead(0)
    } else {
        dims.clone()
    })?;

    let readers = spawn_readers(o, sc, &paths, chunk_elems)?;

    let mut rep = RunReport::default();
    let started = Instant::now();
    let mut since_flush = 0u64;
    let mut row = Vec::new();
    let flush = |dims: &[u64], rep: &mut RunReport| -> Result<(), String> {
        announce(dims)?;
        f.flush().map_err(|e| format!("flush: {e}"))?;
        rep.flushes += 1;
        if let Err(v) = h5chunk_cache::check_write_order(&f.take_write_trace()) {
            rep.failures
                .push(format!("write order after flush {}: {v}", rep.flushes));
        }
        Ok(())
    };
    while rep.elements < o.appends {
        row.clear();
        match sc.grow {
            Grow::Dim0 => {
                let r = dims[0];
                let width = dims[1..].iter().product::<u64>();
                let mut c = vec![r; dims.len()];
                let mut tail = dims.clone();
                tail[0] = 1;
                c[1..].iter_mut().for_each(|x| *x = 0);
                for_each_coord(&c, &tail, |cc| row.push(oracle(cc)));
                d.append(&row).map_err(|e| format!("append: {e}"))?;
                dims[0] += 1;
                rep.elements += width;
            }
            Grow::Dim1 => {
                let c = dims[1];
                dims[1] += 1;
                d.resize(&dims).map_err(|e| format!("resize: {e}"))?;
                for_each_coord(&[0, c], &[dims[0], 1], |cc| row.push(oracle(cc)));
                d.write_slice(&row, &[0, c], &[dims[0], 1], None)
                    .map_err(|e| format!("write: {e}"))?;
                rep.elements += dims[0];
            }
            Grow::Alternate => {
                let (start, count) = if dims[0] <= dims[1] {
                    dims[0] += 1;
                    (vec![dims[0] - 1, 0], vec![1, dims[1]])
                } else {
                    dims[1] += 1;
                    (vec![0, dims[1] - 1], vec![dims[0], 1])
                };
                d.resize(&dims).map_err(|e| format!("resize: {e}"))?;
                for_each_coord(&start, &count, |cc| row.push(oracle(cc)));
                d.write_slice(&row, &start, &count, None)
                    .map_err(|e| format!("write: {e}"))?;
                rep.elements += count.iter().product::<u64>();
            }
            Grow::Fill => {
                if filled >= dims[0] {
                    break;
                }
                for_each_coord(&[filled, 0], &[1, 8], |cc| row.push(oracle(cc)));
                d.write_slice(&row, &[filled, 0], &[1, 8], None)
                    .map_err(|e| format!("write: {e}"))?;
                filled += 1;
                rep.elements += 8;
            }
        }
        since_flush += row.len() as u64;
        if since_flush >= per_flush {
            since_flush = 0;
            let shown = if sc.grow == Grow::Fill {
                ahead(filled)
            } else {
                dims.clone()
            };
            flush(&shown, &mut rep)?;
        }
    }
    let last = if sc.grow == Grow::Fill {
        vec![filled, 8]
    } else {
        dims.clone()
    };
    flush(&last, &mut rep)?;
    rep.seconds = started.elapsed().as_secs_f64();
    write_atomically(done, &dims_text(&last))?;

    collect(readers, started, &mut rep)?;
    f.close().map_err(|e| format!("close: {e}"))?;
    Ok(rep)
}

/// The files of one run: the HDF5 file, the final extent the writer writes when done, and
/// the extent it announces before each flush.
struct Paths {
    path: PathBuf,
    done: PathBuf,
    bound: PathBuf,
}

impl Paths {
    fn new(dir: &Path, tag: &str) -> Paths {
        let p = Paths {
            path: dir.join(format!("{tag}.h5")),
            done: dir.join(format!("{tag}.done")),
            bound: dir.join(format!("{tag}.bound")),
        };
        for f in [&p.path, &p.done, &p.bound] {
            let _ = std::fs::remove_file(f);
        }
        p
    }
}

type Readers = Vec<(&'static str, (Child, BufReader<ChildStdout>))>;

/// Start the reader processes of a run and wait until each has the file open.
fn spawn_readers(o: &Options, sc: &Scenario, paths: &Paths, chunk_elems: u64) -> Result<Readers, String> {
    let Paths { path, done, bound } = paths;
    let mut readers: Readers = Vec::new();
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    for _ in 0..o.readers {
        let mut cmd = Command::new(&exe);
        cmd.arg("read")
            .args(["--file", &path.to_string_lossy()])
            .args(["--scenario", sc.name])
            .args(["--n", &o.appends.to_string()])
            .args(["--chunk-elems", &chunk_elems.to_string()])
            .args(["--done", &done.to_string_lossy()])
            .args(["--bound", &bound.to_string_lossy()]);
        readers.push(("h5chunk", spawn_reader(cmd)?));
    }
    if o.h5py_readers > 0 {
        let python = o
            .python
            .as_ref()
            .ok_or("h5py readers need --python or H5CHUNK_PYTHON (or --h5py-readers 0)")?;
        let script = o.dir.join("h5py_reader.py");
        std::fs::write(&script, H5PY_READER).map_err(|e| format!("{}: {e}", script.display()))?;
        for _ in 0..o.h5py_readers {
            let mut cmd = Command::new(python);
            cmd.arg(&script)
                .arg(&path)
                .arg(sc.name)
                .arg(&done)
                .arg(&bound);
            readers.push(("h5py", spawn_reader(cmd)?));
        }
    }
    for (who, (_, out)) in &mut readers {
        let mut line = String::new();
        out.read_line(&mut line)
            .map_err(|e| format!("{who} reader: {e}"))?;
        if line.trim() != "ready" {
            return Err(format!("{who} reader did not start: {line:?}"));
        }
    }
    Ok(readers)
}

/// Wait for the readers of a run (killing those still running at a deadline) and add their
/// reports to `rep`.
fn collect(mut readers: Readers, started: Instant, rep: &mut RunReport) -> Result<(), String> {
    // A reader stuck in retries (libhdf5 sleeps longer after each failed attempt) is killed
    // at a deadline and counted as failed.
    let deadline = Instant::now() + Duration::from_secs(60).max(started.elapsed() * 10);
    for (who, (child, _)) in &mut readers {
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                _ => {
                    let _ = child.kill();
                    rep.failures
                        .push(format!("{who} reader still running at the deadline"));
                    break;
                }
            }
        }
    }
    for (who, (mut child, mut out)) in readers {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut out, &mut text)
            .map_err(|e| format!("{who} reader: {e}"))?;
        let status = child.wait().map_err(|e| format!("{who} reader: {e}"))?;
        match text.lines().find_map(ReaderReport::parse) {
            Some(r) if status.success() => rep.readers.push((who, r)),
            _ => rep.failures.push(format!(
                "{who} reader ended with {status} and no result: {text:?}"
            )),
        }
    }
    Ok(())
}

/// A run whose writer is libhdf5: h5py (`--writer h5py`) or the C program
/// (`--writer c`, `--c-writer PATH`), in a process of its own; the readers start once it has
/// turned SWMR writing on, and it starts appending once they have the file open.
fn run_external(
    o: &Options,
    sc: &Scenario,
    paths: &Paths,
    chunk_elems: u64,
    deflate: bool,
) -> Result<RunReport, String> {
    let per_flush = o.per_flush.unwrap_or((o.appends / 500).max(1));
    let args = [
        paths.path.to_string_lossy().into_owned(),
        sc.name.to_owned(),
        o.appends.to_string(),
        chunk_elems.to_string(),
        if deflate { "1" } else { "0" }.to_owned(),
        per_flush.to_string(),
        paths.bound.to_string_lossy().into_owned(),
        paths.done.to_string_lossy().into_owned(),
        "swmr".to_owned(),
    ];
    let mut cmd = match o.writer.as_str() {
        "h5py" => {
            let python = o.python.as_ref().ok_or("--writer h5py needs --python")?;
            let script = o.dir.join("h5py_writer.py");
            std::fs::write(&script, H5PY_WRITER)
                .map_err(|e| format!("{}: {e}", script.display()))?;
            let mut c = Command::new(python);
            c.arg(script);
            c
        }
        "c" => Command::new(o.c_writer.as_ref().ok_or("--writer c needs --c-writer")?),
        other => return Err(format!("unknown writer {other} (h5chunk, h5py or c)")),
    };
    let mut writer = cmd
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("spawning the {} writer: {e}", o.writer))?;
    let mut out = BufReader::new(writer.stdout.take().ok_or("no writer stdout")?);
    let mut line = String::new();
    out.read_line(&mut line)
        .map_err(|e| format!("writer: {e}"))?;
    if line.trim() != "ready" {
        let _ = writer.kill();
        return Err(format!("the {} writer did not start: {line:?}", o.writer));
    }
    let readers = spawn_readers(o, sc, paths, chunk_elems)?;
    let started = Instant::now();
    let mut stdin = writer.stdin.take().ok_or("no writer stdin")?;
    writeln!(stdin, "go").map_err(|e| format!("writer: {e}"))?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut out, &mut text).map_err(|e| format!("writer: {e}"))?;
    let status = writer.wait().map_err(|e| format!("writer: {e}"))?;
    let mut rep = RunReport::default();
    if !status.success() {
        rep.failures.push(format!("the writer ended with {status}"));
    }
    for kv in text
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_default()
        .split_whitespace()
    {
        match kv.split_once('=') {
            Some(("appends", v)) => rep.elements = v.parse().unwrap_or(0),
            Some(("flushes", v)) => rep.flushes = v.parse().unwrap_or(0),
            Some(("seconds", v)) => rep.seconds = v.parse().unwrap_or(0.0),
            _ => {}
        }
    }
    if !paths.done.exists() {
        // Readers wait for it: a writer that failed must not leave them waiting.
        write_atomically(&paths.done, "0")?;
    }
    collect(readers, started, &mut rep)?;
    Ok(rep)
}

/// The h5py writer of `--writer h5py`: the scenarios of [`scenario`] through h5py (libhdf5
/// 2.0), with the protocol of `benches/libhdf5/swmr_writer.c`.
const H5PY_WRITER: &str = r#"
import sys, time
import h5py, numpy as np
path, sc, n, e, deflate, per_flush, bound, done, mode = sys.argv[1:10]
n, e, per_flush = int(n), max(1, int(e)), max(1, int(per_flush))
s = max(1, int(e ** 0.5))
while (s + 1) * (s + 1) <= e:
    s += 1
while s * s > e and s > 1:
    s -= 1
e4, emin4 = max(1, e // 4), min(e, 4)
U = None
geo = {
    'earray': ([0], [U], [e], 'dim0'),
    'earray2d': ([0, 8], [U, 8], [e4, emin4], 'dim0'),
    'btree2-x': ([0, 8], [U, U], [e4, emin4], 'dim0'),
    'btree2-y': ([8, 0], [U, U], [emin4, e4], 'dim1'),
    'btree2-alt': ([1, 1], [U, U], [s, s], 'alt'),
    'btree2-3d': ([0, 4, 4], [U, U, U], [e4, min(e, 2), min(max(e // 2, 1), 2)], 'dim0'),
    'farray': ([(n + 7) // 8, 8], [(n + 7) // 8, 8], [e4, emin4], 'fill'),
}
dims, maxshape, chunk, grow = geo[sc]
dims = list(dims)
def oracle(start, count):
    g = np.meshgrid(*[np.arange(a, a + c, dtype=np.int64) for a, c in zip(start, count)],
                    indexing='ij')
    if len(g) == 1:
        return g[0] * 1000003
    if len(g) == 2:
        return g[0] * 1000003 + g[1]
    return g[0] * 1000003 + g[1] * 1009 + g[2]
def announce(p, d):
    with open(p + '.tmp', 'w') as fh:
        fh.write(' '.join(str(x) for x in d))
    import os
    os.replace(p + '.tmp', p)
kw = dict(compression='gzip', compression_opts=4, shuffle=True) if deflate == '1' else {}
f = h5py.File(path, 'w', libver='latest')
d = f.create_dataset('x', shape=tuple(dims), maxshape=tuple(maxshape), chunks=tuple(chunk),
                     dtype='<i8', fillvalue=-1, **kw)
if grow != 'fill' and all(x > 0 for x in dims):
    d[...] = oracle([0] * len(dims), dims)
f.flush()
f.swmr_mode = True
total_rows = dims[0]
ahead = (per_flush + 7) // 8 + 1
filled = 0
announce(bound, [min(ahead, total_rows), 8] if grow == 'fill' else dims)
print('ready', flush=True)
sys.stdin.readline()
t0 = time.perf_counter()
elements = since = flushes = 0
while elements < n:
    rank = len(dims)
    start, count = [0] * rank, list(dims)
    if grow == 'dim0':
        start[0], count[0] = dims[0], 1
        dims[0] += 1
    elif grow == 'dim1':
        start[1], count[1] = dims[1], 1
        dims[1] += 1
    elif grow == 'alt':
        if dims[0] <= dims[1]:
            start[0], count[0] = dims[0], 1
            dims[0] += 1
        else:
            start[1], count[1] = dims[1], 1
            dims[1] += 1
    else:
        if filled >= total_rows:
            break
        start, count = [filled, 0], [1, 8]
        filled += 1
    if grow != 'fill':
        d.resize(tuple(dims))
    d[tuple(slice(a, a + c) for a, c in zip(start, count))] = oracle(start, count)
    k = int(np.prod(count))
    elements += k
    since += k
    if since >= per_flush:
        since = 0
        announce(bound, [min(filled + ahead, total_rows), 8] if grow == 'fill' else dims)
        d.flush()
        flushes += 1
last = [filled, 8] if grow == 'fill' else dims
announce(bound, last)
d.flush()
flushes += 1
announce(done, last)
f.close()
print(f'RESULT appends={elements} flushes={flushes} seconds={time.perf_counter() - t0:.6f}', flush=True)
"#;

fn soak_main(args: &[String]) -> Result<bool, String> {
    let o = parse_soak(args)?;
    let mut all_ok = true;
    let mut totals = (0u64, 0u64, 0u64, 0u64, 0u64);
    println!(
        "{:<11} {:>6} {:>4} {:>9} {:>7} {:>8} {:>9} {:>10} {:>12} {:>6} {:>6} {:>8}",
        "scenario",
        "chunk",
        "zip",
        "appends",
        "flushes",
        "write s",
        "readers",
        "refreshes",
        "checked",
        "wrong",
        "errors",
        "retries"
    );
    for name in &o.scenarios {
        for &chunk in &o.chunks {
            for &deflate in &o.deflate {
                let sc = scenario(name, o.appends, chunk)?;
                let rep = run(&o, &sc, chunk, deflate)?;
                let sum = |f: fn(&ReaderReport) -> u64| {
                    rep.readers.iter().map(|(_, r)| f(r)).sum::<u64>()
                };
                let (refreshes, checked, wrong, errors) = (
                    sum(|r| r.refreshes),
                    sum(|r| r.checked),
                    sum(|r| r.wrong),
                    sum(|r| r.errors),
                );
                let retries = sum(|r| r.retries.unwrap_or(0));
                let n_h5py = rep.readers.iter().filter(|(w, _)| *w == "h5py").count();
                println!(
                    "{:<11} {:>6} {:>4} {:>9} {:>7} {:>8.2} {:>4}+{:<4} {:>10} {:>12} {:>6} {:>6} {:>8}",
                    sc.name,
                    chunk,
                    if deflate { "yes" } else { "no" },
                    rep.elements,
                    rep.flushes,
                    rep.seconds,
                    rep.readers.len() - n_h5py,
                    n_h5py,
                    refreshes,
                    checked,
                    wrong,
                    errors,
                    retries
                );
                for f in &rep.failures {
                    println!("  FAILED: {f}");
                }
                let expected_readers = o.readers + o.h5py_readers;
                if wrong > 0
                    || errors > 0
                    || !rep.failures.is_empty()
                    || rep.readers.len() != expected_readers
                {
                    all_ok = false;
                }
                totals.0 += rep.elements;
                totals.1 += refreshes;
                totals.2 += checked;
                totals.3 += wrong + errors;
                totals.4 += retries;
            }
        }
    }
    println!(
        "SUMMARY appends={} refreshes={} checked={} wrong_or_errors={} retries={} ok={all_ok}",
        totals.0, totals.1, totals.2, totals.3, totals.4
    );
    Ok(all_ok)
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("read") => read_main(&args[1..]).map(|()| true),
        Some("soak") => soak_main(&args[1..]),
        _ => Err("usage: h5chunk-swmr soak [options] | h5chunk-swmr read [options]".into()),
    };
    match result {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::FAILURE,
        Err(e) => {
            eprintln!("h5chunk-swmr: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
