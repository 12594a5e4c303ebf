//! The soak (`soak`): a writer and its readers per run, over scenarios, chunk sizes and
//! filters, with the writer killed and the file checked when asked.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use h5chunk::{File, IndexKind};

use crate::common::{dims_text, parse_dims, result_fields, this_program, write_atomically};
use crate::probe::ProbeReport;
use crate::read::{H5PY_READER, ReaderReport};
use crate::scenario::{FILL, Grow, SCENARIOS, Scenario, for_each_coord, oracle, scenario};

pub(crate) struct Options {
    pub(crate) appends: u64,
    pub(crate) readers: usize,
    pub(crate) h5py_readers: usize,
    pub(crate) scenarios: Vec<String>,
    pub(crate) chunks: Vec<u64>,
    pub(crate) deflate: Vec<bool>,
    pub(crate) per_flush: Option<u64>,
    pub(crate) python: Option<PathBuf>,
    pub(crate) dir: PathBuf,
    /// Who writes: `h5chunk` (this process), `h5py` or `c` (libhdf5, a process of its own).
    pub(crate) writer: String,
    /// The C writer (`benches/libhdf5/swmr_writer.c`, built).
    pub(crate) c_writer: Option<PathBuf>,
    /// Kill the writer with SIGKILL at a random point of each run.
    pub(crate) kill: bool,
    /// Seeds the kill points and the readers' random instants.
    pub(crate) seed: u64,
    /// Reader processes opened at random instants of each run (see [`Probes`]).
    pub(crate) probes: usize,
    /// The h5chunk writer's durability (`None`: the library's default, `flush`).
    pub(crate) durability: Option<String>,
}

pub(crate) fn parse_soak(args: &[String]) -> Result<Options, String> {
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
        kill: false,
        seed: 1,
        probes: 5,
        durability: None,
    };
    let mut it = args.iter();
    while let Some(k) = it.next() {
        if k == "--kill" {
            o.kill = true;
            continue;
        }
        let v = it.next().ok_or_else(|| format!("{k} needs a value"))?;
        let num = |s: &str| s.parse::<u64>().map_err(|e| format!("{k}: {e}"));
        match k.as_str() {
            "--seed" => o.seed = num(v)?,
            "--appends" => o.appends = num(v)?,
            "--readers" => o.readers = num(v)? as usize,
            "--probes" => o.probes = num(v)? as usize,
            "--durability" => o.durability = Some(v.clone()),
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
pub(crate) struct RunReport {
    pub(crate) flushes: u64,
    pub(crate) elements: u64,
    pub(crate) seconds: f64,
    pub(crate) readers: Vec<(&'static str, ReaderReport)>,
    pub(crate) failures: Vec<String>,
    /// The writer was killed after completing the flush of this extent.
    pub(crate) killed: Option<Vec<u64>>,
    /// The readers opened at random instants.
    pub(crate) probes: ProbeTally,
}

pub(crate) fn spawn_reader(mut cmd: Command) -> Result<(Child, BufReader<ChildStdout>), String> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("spawning a reader: {e}"))?;
    let out = BufReader::new(child.stdout.take().ok_or("no reader stdout")?);
    Ok((child, out))
}

/// One run: a writer here, readers in child processes.
pub(crate) fn run(
    o: &Options,
    sc: &Scenario,
    chunk_elems: u64,
    deflate: bool,
) -> Result<RunReport, String> {
    std::fs::create_dir_all(&o.dir).map_err(|e| format!("{}: {e}", o.dir.display()))?;
    let tag = format!(
        "{}-c{chunk_elems}{}",
        sc.name,
        if deflate { "-z" } else { "" }
    );
    let paths = Paths::new(&o.dir, &tag);
    run_external(o, sc, &paths, chunk_elems, deflate)
}

/// Whether only h5chunk readers follow `sc`: h5py cannot read the skip list, and the shrink
/// and sparse scenarios (libhdf5's own) are re-expressed for h5chunk readers.
pub(crate) fn h5chunk_readers_only(sc: &Scenario) -> bool {
    sc.index == IndexKind::SkipList || sc.grow.loose()
}

/// The files of one run: the HDF5 file, the final extent the writer writes when done, and
/// the extent it announces before each flush.
pub(crate) struct Paths {
    pub(crate) path: PathBuf,
    pub(crate) done: PathBuf,
    pub(crate) bound: PathBuf,
}

impl Paths {
    pub(crate) fn new(dir: &Path, tag: &str) -> Paths {
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

pub(crate) type Readers = Vec<(&'static str, (Child, BufReader<ChildStdout>))>;

/// Start the reader processes of a run and wait until each has the file open.
pub(crate) fn spawn_readers(
    o: &Options,
    sc: &Scenario,
    paths: &Paths,
    chunk_elems: u64,
) -> Result<Readers, String> {
    let Paths { path, done, bound } = paths;
    let mut readers: Readers = Vec::new();
    for _ in 0..o.readers {
        let mut cmd = this_program("read")?;
        cmd.args(["--file", &path.to_string_lossy()])
            .args(["--scenario", sc.name])
            .args(["--n", &o.appends.to_string()])
            .args(["--chunk-elems", &chunk_elems.to_string()])
            .args(["--done", &done.to_string_lossy()])
            .args(["--bound", &bound.to_string_lossy()]);
        readers.push(("h5chunk", spawn_reader(cmd)?));
    }
    // h5py cannot read h5chunk's skip list; libhdf5's own shrink and sparse scenarios are
    // followed by h5chunk readers.
    if o.h5py_readers > 0 && !h5chunk_readers_only(sc) {
        let python = o
            .python
            .as_ref()
            .ok_or("h5py readers need --python or H5CHUNK_PYTHON (or --h5py-readers 0)")?;
        let script = o.dir.join("h5py_reader.py");
        std::fs::write(&script, H5PY_READER).map_err(|e| format!("{}: {e}", script.display()))?;
        for _ in 0..o.h5py_readers {
            let mut cmd = Command::new(python);
            cmd.arg(&script).arg(path).arg(sc.name).arg(done).arg(bound);
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
pub(crate) fn collect(
    mut readers: Readers,
    started: Instant,
    rep: &mut RunReport,
) -> Result<(), String> {
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
pub(crate) fn run_external(
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
        "h5chunk" => this_program("write")?,
        other => return Err(format!("unknown writer {other} (h5chunk, h5py or c)")),
    };
    cmd.args(&args);
    if o.writer == "h5chunk" {
        // The library's default options, as a user's SWMR writer.
        cmd.arg("--default-options");
        if let Some(d) = &o.durability {
            cmd.args(["--durability", d]);
        }
    }
    let mut writer = cmd
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
    let seed = o.seed ^ chunk_elems.rotate_left(17) ^ u64::from(deflate).rotate_left(40);
    let mut probes = Probes::new(o, sc, paths, chunk_elems, seed)?;
    let started = Instant::now();
    let mut stdin = writer.stdin.take().ok_or("no writer stdin")?;
    writeln!(stdin, "go").map_err(|e| format!("writer: {e}"))?;
    // The readers due at the start open before the first flush completes (or inside it),
    // with nothing flushed they must see.
    probes.flushed(0, &[], 0, started);
    // The writer's lines, as they come: `flushed DIMS\tSTART\tEND` after each completed
    // flush.
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let pump = std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut rng = h5chunk_benches::SplitMix(o.seed ^ chunk_elems ^ u64::from(deflate));
    // --kill: SIGKILL after a random number of completed flushes (up to about half the run's),
    // a random few hundred microseconds later: often inside the next flush.
    let expected = (o.appends / per_flush).max(2);
    // (The h5chunk writer's runs: the kill checks what h5chunk's journal restores.)
    let kill_after =
        (o.kill && o.writer == "h5chunk").then(|| 1 + rng.next_u64() % (expected / 2).max(1));
    let (mut text, mut flushed, mut nflush, mut killed) = (String::new(), None, 0u64, false);
    loop {
        let line = match rx.recv_timeout(probes.wait()) {
            Ok(line) => line,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                probes.fire_due()?;
                continue;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        };
        if let Some(rest) = line.strip_prefix("flushed ") {
            let mut fields = rest.split('\t');
            flushed = fields.next().and_then(parse_dims);
            let mut num = || fields.next().and_then(|t| t.parse::<u64>().ok());
            let (start, end, elements) = (num(), num(), num());
            if let (Some(a), Some(b)) = (start, end) {
                probes.flush_times.push((a, b));
            }
            nflush += 1;
            if !killed && kill_after.is_some_and(|k| nflush >= k) {
                std::thread::sleep(Duration::from_micros(rng.next_u64() % 800));
                let _ = writer.kill();
                killed = true;
                // A dead writer's file is `h5chunk clear`'s: no reader opens it from now on.
                probes.stop();
            }
            if let (Some(d), Some(e)) = (&flushed, elements) {
                probes.flushed(nflush, d, e, started);
            }
        }
        probes.fire_due()?;
        text.push_str(&line);
        text.push('\n');
    }
    let _ = pump.join();
    let status = writer.wait().map_err(|e| format!("writer: {e}"))?;
    let mut rep = RunReport::default();
    if killed && !text.contains("RESULT ") {
        // Killed mid-run: what the readers must see, at least, is the last completed flush.
        let last = flushed.clone().ok_or("killed before its first flush")?;
        write_atomically(&paths.done, &dims_text(&last))?;
        rep.flushes = nflush;
        rep.elements = last.iter().product();
        rep.killed = Some(last);
    } else if !status.success() {
        rep.failures.push(format!("the writer ended with {status}"));
    }
    for (k, v) in result_fields(&text) {
        match k {
            "appends" => rep.elements = v.parse().unwrap_or(0),
            "flushes" => rep.flushes = v.parse().unwrap_or(0),
            "seconds" => rep.seconds = v.parse().unwrap_or(0.0),
            "violations" if v != "0" => rep
                .failures
                .push(format!("{v} flushes broke the flush-dependency order")),
            _ => {}
        }
    }
    if !paths.done.exists() {
        // Readers wait for it: a writer that failed must not leave them waiting.
        write_atomically(&paths.done, "0")?;
    }
    // Readers still due (the writer flushed fewer times than expected) open now, after it.
    probes.finish()?;
    collect(readers, started, &mut rep)?;
    rep.probes = probes.collect();
    if let Some(last) = rep.killed.clone()
        && let Err(e) = after_kill(o, sc, paths, &last)
    {
        rep.failures.push(format!("after the kill: {e}"));
    }
    Ok(rep)
}

/// A writer was killed after completing the flush of extent `last`: the file opens after
/// `h5chunk clear` (flags cleared, an interrupted flush rolled back), its extent covers
/// `last`, and every value in it is right, through h5chunk and through h5py.
pub(crate) fn after_kill(
    o: &Options,
    sc: &Scenario,
    paths: &Paths,
    last: &[u64],
) -> Result<(), String> {
    File::clear_consistency_flags(&paths.path).map_err(|e| format!("clear: {e}"))?;
    let f = File::open(&paths.path).map_err(|e| format!("open: {e}"))?;
    let d = f.dataset("x").map_err(|e| format!("dataset: {e}"))?;
    let shape = d.shape();
    let covered = if sc.grow == Grow::Fill {
        shape == sc.initial
    } else {
        shape.iter().zip(last).all(|(s, l)| s >= l)
    };
    if !covered {
        return Err(format!(
            "extent {shape:?} does not cover the flushed {last:?}"
        ));
    }
    let v = d.read::<i64>().map_err(|e| format!("read: {e}"))?;
    let (mut i, mut wrong) = (0usize, 0u64);
    let mut rows_written = 0u64;
    for_each_coord(&vec![0; shape.len()], &shape, |c| {
        let want = oracle(c);
        if v[i] == want {
            if sc.grow == Grow::Fill && c[1] == 7 && c[0] == rows_written {
                rows_written += 1;
            }
        } else if sc.grow != Grow::Fill || v[i] != FILL {
            wrong += 1;
        }
        i += 1;
    });
    if wrong > 0 {
        return Err(format!("{wrong} wrong values"));
    }
    if sc.grow == Grow::Fill && rows_written < last[0] {
        return Err(format!("{rows_written} rows written, {} flushed", last[0]));
    }
    f.close().map_err(|e| format!("close: {e}"))?;
    if let Some(python) = &o.python
        && !h5chunk_readers_only(sc)
    {
        // h5py (libhdf5) reads the same file and checks it the same way.
        let mut cmd = Command::new(python);
        cmd.arg(o.dir.join("h5py_reader.py"))
            .arg(&paths.path)
            .arg(sc.name)
            .arg(&paths.done)
            .arg(&paths.bound);
        let out = cmd.output().map_err(|e| format!("h5py: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        match text.lines().find_map(ReaderReport::parse) {
            Some(r) if out.status.success() && r.wrong == 0 && r.errors == 0 => {}
            _ => {
                return Err(format!(
                    "h5py after the kill: {text} {}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    Ok(())
}

/// The h5py writer of `--writer h5py`: the scenarios of [`scenario`] through h5py (libhdf5
/// 2.0), with the protocol of `benches/libhdf5/swmr_writer.c`, and the `flushed` lines of
/// the h5chunk writer.
pub(crate) const H5PY_WRITER: &str = r#"
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
def flushed(d, t1):
    # As the h5chunk writer: the extent flushed, the flush's wall-clock interval and the
    # elements written so far.
    t2 = int(time.time() * 1e6)
    print('flushed ' + ' '.join(str(x) for x in d) + f'\t{t1}\t{t2}\t{elements}', flush=True)
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
        t1 = int(time.time() * 1e6)
        d.flush()
        flushes += 1
        flushed([filled, 8] if grow == 'fill' else dims, t1)
last = [filled, 8] if grow == 'fill' else dims
announce(bound, last)
t1 = int(time.time() * 1e6)
d.flush()
flushes += 1
flushed(last, t1)
announce(done, last)
f.close()
print(f'RESULT appends={elements} flushes={flushes} seconds={time.perf_counter() - t0:.6f}', flush=True)
"#;

pub(crate) fn soak_main(args: &[String]) -> Result<bool, String> {
    let o = parse_soak(args)?;
    let mut all_ok = true;
    let mut totals = (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    let mut probe_rows: Vec<(String, ProbeTally)> = Vec::new();
    println!(
        "{:<11} {:>6} {:>4} {:>9} {:>7} {:>8} {:>9} {:>10} {:>12} {:>6} {:>5} {:>6} {:>8}",
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
        "torn",
        "errors",
        "retries"
    );
    for name in &o.scenarios {
        if name == "skiplist" && o.writer != "h5chunk" {
            // h5chunk's own index: libhdf5 writes no skip list.
            continue;
        }
        if matches!(name.as_str(), "shrink" | "sparse") && (o.writer != "h5chunk" || o.kill) {
            // h5chunk's writer only; a killed writer's check assumes an extent that only grows.
            continue;
        }
        for &chunk in &o.chunks {
            for &deflate in &o.deflate {
                let sc = scenario(name, o.appends, chunk)?;
                let rep = run(&o, &sc, chunk, deflate)?;
                let sum = |f: fn(&ReaderReport) -> u64| {
                    rep.readers.iter().map(|(_, r)| f(r)).sum::<u64>()
                };
                let (refreshes, checked, wrong, torn, errors) = (
                    sum(|r| r.refreshes),
                    sum(|r| r.checked),
                    sum(|r| r.wrong),
                    sum(|r| r.torn),
                    sum(|r| r.errors),
                );
                let retries = sum(|r| r.retries.unwrap_or(0));
                let n_h5py = rep.readers.iter().filter(|(w, _)| *w == "h5py").count();
                println!(
                    "{:<11} {:>6} {:>4} {:>9} {:>7} {:>8.2} {:>4}+{:<4} {:>10} {:>12} {:>6} {:>5} {:>6} {:>8}",
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
                    torn,
                    errors,
                    retries
                );
                if let Some(last) = &rep.killed {
                    println!(
                        "  killed (SIGKILL) after flush {} (extent {last:?}); readers went on; \
                         reopened after clear: values checked by h5chunk and h5py",
                        rep.flushes
                    );
                }
                for f in &rep.failures {
                    println!("  FAILED: {f}");
                }
                let expected_readers = if h5chunk_readers_only(&sc) {
                    o.readers
                } else {
                    o.readers + o.h5py_readers
                };
                // Torn elements are a writer's doing: none from h5chunk's (it never rewrites
                // visible data in place under SWMR); libhdf5's are reported, not failed.
                if wrong > 0
                    || (torn > 0 && o.writer == "h5chunk")
                    || errors > 0
                    || !rep.failures.is_empty()
                    || rep.readers.len() != expected_readers
                {
                    all_ok = false;
                }
                if let Some(p) = (o.probes > 0 && o.writer != "c").then_some(&rep.probes) {
                    // As it comes (the table at the end sums them up).
                    println!(
                        "  readers at random instants: {} opens, {} failed, {} wrong, {} torn, \
                         {} errors; {} overlapped a flush, {} began before the first flush ended",
                        p.opens, p.failed, p.wrong, p.torn, p.errors, p.mid_flush, p.before_first
                    );
                    for f in &p.failures {
                        println!("  FAILED (random-instant reader): {f}");
                    }
                    if p.failed > 0
                        || p.wrong > 0
                        || p.errors > 0
                        || (p.torn > 0 && o.writer == "h5chunk")
                        || (rep.killed.is_none() && p.opens != o.probes as u64)
                    {
                        all_ok = false;
                    }
                    probe_rows.push((
                        format!(
                            "{:<11} {:>6} {:>4}",
                            sc.name,
                            chunk,
                            if deflate { "yes" } else { "no" }
                        ),
                        p.clone(),
                    ));
                }
                totals.0 += rep.elements;
                totals.1 += refreshes;
                totals.2 += checked;
                totals.3 += wrong + errors;
                totals.4 += retries;
                totals.5 += torn;
            }
        }
    }
    let mut all = ProbeTally::default();
    if !probe_rows.is_empty() {
        println!();
        println!(
            "Readers opened at random instants ({} writer{}): one SWMR open each, every \
             value checked, then refreshes",
            o.writer,
            match (o.writer.as_str(), &o.durability) {
                ("h5chunk", None) => ", default options".to_owned(),
                ("h5chunk", Some(d)) => format!(", default options but durability {d}"),
                _ => String::new(),
            }
        );
        let head = |t: &ProbeTally, label: &str| {
            println!(
                "{label:<23} {:>6} {:>7} {:>6} {:>5} {:>6} {:>9} {:>12} {:>9} {:>8} {:>5}",
                t.opens,
                t.failed,
                t.wrong,
                t.torn,
                t.errors,
                t.refreshes,
                t.checked,
                t.mid_flush,
                t.before_first,
                t.late
            )
        };
        println!(
            "{:<23} {:>6} {:>7} {:>6} {:>5} {:>6} {:>9} {:>12} {:>9} {:>8} {:>5}",
            "scenario  chunk  zip",
            "opens",
            "failed",
            "wrong",
            "torn",
            "errors",
            "refreshes",
            "checked",
            "mid-flush",
            "<1st",
            "late"
        );
        for (label, t) in &probe_rows {
            head(t, label);
            all.opens += t.opens;
            all.failed += t.failed;
            all.wrong += t.wrong;
            all.torn += t.torn;
            all.errors += t.errors;
            all.refreshes += t.refreshes;
            all.checked += t.checked;
            all.mid_flush += t.mid_flush;
            all.before_first += t.before_first;
            all.late += t.late;
        }
        head(&all, "total");
    }
    println!(
        "SUMMARY appends={} refreshes={} checked={} wrong_or_errors={} torn={} retries={} \
         opens={} failed_opens={} open_wrong={} open_errors={} ok={all_ok}",
        totals.0,
        totals.1,
        totals.2,
        totals.3,
        totals.5,
        totals.4,
        all.opens,
        all.failed,
        all.wrong,
        all.errors
    );
    Ok(all_ok)
}

/// What the readers opened at random instants in a run saw.
#[derive(Debug, Default, Clone)]
pub(crate) struct ProbeTally {
    /// Readers told to open (each opens once).
    pub(crate) opens: u64,
    /// Opens that failed, and readers that ended without a result.
    pub(crate) failed: u64,
    pub(crate) wrong: u64,
    pub(crate) torn: u64,
    /// Failed reads and refreshes after a successful open.
    pub(crate) errors: u64,
    pub(crate) checked: u64,
    pub(crate) refreshes: u64,
    /// Opens under way while the writer flushed.
    pub(crate) mid_flush: u64,
    /// Opens begun before the writer's first flush completed.
    pub(crate) before_first: u64,
    /// Opens after the writer had ended (due at a point it never reached).
    pub(crate) late: u64,
    pub(crate) failures: Vec<String>,
}

/// Readers armed ahead of their instants (process start-up off the clock).
const ARMED: usize = 4;

/// The readers of a run opened at random instants (this program's `probe` command): each
/// is due at a random point of the writer's progress (a tenth of them at its start, the rest
/// anywhere up to 95% of its elements); when the writer reports the flush that reaches that
/// point, the reader is told to open after a random delay of up to the mean time between
/// flushes (so it opens between flushes or inside one). Reader processes are started ahead
/// of time, a few at once, and told to open through their stdin, so that the instants are
/// the soak's and not the process start-up's.
pub(crate) struct Probes {
    args: Vec<String>,
    total: usize,
    spawned: usize,
    armed: std::collections::VecDeque<Child>,
    fired: Vec<Child>,
    /// Each reader's point of the writer's progress (elements), ascending; `next` is the
    /// first not yet scheduled.
    due: Vec<u64>,
    next: usize,
    /// Scheduled: the instant to open, and the extent of the last completed flush.
    pending: Vec<(Instant, Vec<u64>)>,
    /// The writer's flushes, wall-clock microseconds (start, end).
    pub(crate) flush_times: Vec<(u64, u64)>,
    rng: h5chunk_benches::SplitMix,
    last: Vec<u64>,
    late: u64,
    failures: Vec<String>,
}

impl Probes {
    pub(crate) fn new(
        o: &Options,
        sc: &Scenario,
        paths: &Paths,
        chunk_elems: u64,
        seed: u64,
    ) -> Result<Probes, String> {
        // The C writer (timed by `cargo xtask bench --swmr`) reports no flushes.
        let total = if o.writer == "c" { 0 } else { o.probes };
        let mut rng = h5chunk_benches::SplitMix(seed);
        let at_start = total.div_ceil(10);
        let mut due: Vec<u64> = (0..total)
            .map(|i| {
                if i < at_start {
                    0
                } else {
                    1 + rng.next_u64() % (o.appends * 19 / 20).max(1)
                }
            })
            .collect();
        due.sort_unstable();
        let args = vec![
            "--file".into(),
            paths.path.to_string_lossy().into_owned(),
            "--scenario".into(),
            sc.name.to_owned(),
            "--n".into(),
            o.appends.to_string(),
            "--chunk-elems".into(),
            chunk_elems.to_string(),
            "--bound".into(),
            paths.bound.to_string_lossy().into_owned(),
        ];
        let mut p = Probes {
            args,
            total,
            spawned: 0,
            armed: Default::default(),
            fired: Vec::new(),
            due,
            next: 0,
            pending: Vec::new(),
            flush_times: Vec::new(),
            rng,
            last: Vec::new(),
            late: 0,
            failures: Vec::new(),
        };
        while p.spawned < p.total.min(ARMED) {
            let c = p.spawn()?;
            p.armed.push_back(c);
        }
        Ok(p)
    }

    fn spawn(&mut self) -> Result<Child, String> {
        self.spawned += 1;
        let mut cmd = this_program("probe")?;
        cmd.args(&self.args)
            .args(["--seed", &self.rng.next_u64().to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        cmd.spawn().map_err(|e| format!("spawning a reader: {e}"))
    }

    /// The writer completed a flush (`n`; 0: it has just been told to start) of extent
    /// `dims`, with `elements` written: the readers due by then are scheduled.
    pub(crate) fn flushed(&mut self, n: u64, dims: &[u64], elements: u64, started: Instant) {
        self.last = dims.to_vec();
        let gap = if n == 0 {
            Duration::from_micros(500)
        } else {
            started.elapsed() / n.try_into().unwrap_or(u32::MAX)
        };
        while let Some(&d) = self.due.get(self.next)
            && d <= elements
        {
            self.next += 1;
            let nanos = gap.as_nanos().max(1) as u64;
            let delay = Duration::from_nanos(self.rng.next_u64() % nanos);
            self.pending.push((Instant::now() + delay, dims.to_vec()));
        }
    }

    /// How long until the next reader is due.
    pub(crate) fn wait(&self) -> Duration {
        let now = Instant::now();
        self.pending
            .iter()
            .map(|(t, _)| t.saturating_duration_since(now))
            .min()
            .unwrap_or(Duration::from_millis(50))
    }

    /// Tell the readers now due to open.
    pub(crate) fn fire_due(&mut self) -> Result<(), String> {
        let now = Instant::now();
        let (due, later): (Vec<_>, Vec<_>) = self.pending.drain(..).partition(|(t, _)| *t <= now);
        self.pending = later;
        for (_, dims) in due {
            self.fire(&dims)?;
        }
        Ok(())
    }

    fn fire(&mut self, dims: &[u64]) -> Result<(), String> {
        let mut child = match self.armed.pop_front() {
            Some(c) => c,
            None => self.spawn()?,
        };
        let told = child
            .stdin
            .take()
            .map(|mut s| writeln!(s, "go {}", dims_text(dims)));
        if !matches!(told, Some(Ok(()))) {
            self.failures
                .push("a reader could not be told to open (it had ended)".into());
        }
        self.fired.push(child);
        if self.spawned < self.total {
            let c = self.spawn()?;
            self.armed.push_back(c);
        }
        Ok(())
    }

    /// The writer died: no reader opens its file from now on (it is `h5chunk clear`'s).
    pub(crate) fn stop(&mut self) {
        self.pending.clear();
        self.next = self.due.len();
        self.total = self.spawned;
    }

    /// The writer ended: the readers still due open now.
    pub(crate) fn finish(&mut self) -> Result<(), String> {
        let rest: Vec<Vec<u64>> = self.pending.drain(..).map(|(_, d)| d).collect();
        for d in rest {
            self.fire(&d)?;
        }
        while self.next < self.due.len() {
            self.next += 1;
            self.late += 1;
            let last = self.last.clone();
            self.fire(&last)?;
        }
        Ok(())
    }

    /// Wait for every reader and tally what they saw.
    pub(crate) fn collect(mut self) -> ProbeTally {
        let mut t = ProbeTally {
            late: self.late,
            failures: std::mem::take(&mut self.failures),
            ..ProbeTally::default()
        };
        // Armed readers never told to open end at the end of their stdin.
        for mut c in self.armed.drain(..) {
            drop(c.stdin.take());
            let _ = c.wait();
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        for mut c in self.fired.drain(..) {
            t.opens += 1;
            let status = loop {
                match c.try_wait() {
                    Ok(Some(s)) => break Some(s),
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    _ => {
                        let _ = c.kill();
                        let _ = c.wait();
                        break None;
                    }
                }
            };
            let mut text = String::new();
            if let Some(out) = c.stdout.as_mut() {
                let _ = std::io::Read::read_to_string(out, &mut text);
            }
            let rep = text.lines().find_map(ProbeReport::parse);
            match (status, rep) {
                (Some(s), Some(r)) if s.success() => {
                    if !r.opened {
                        t.failed += 1;
                        t.failures.push("a reader's open failed".into());
                        continue;
                    }
                    t.wrong += r.wrong;
                    t.torn += r.torn;
                    t.errors += r.errors;
                    t.checked += r.checked;
                    t.refreshes += r.refreshes;
                    if self
                        .flush_times
                        .iter()
                        .any(|&(a, b)| r.open_start < b && r.open_end > a)
                    {
                        t.mid_flush += 1;
                    }
                    if self
                        .flush_times
                        .first()
                        .is_some_and(|&(_, b)| r.open_start < b)
                    {
                        t.before_first += 1;
                    }
                }
                (status, _) => {
                    t.failed += 1;
                    t.failures.push(format!(
                        "a reader ended with {} and no result: {text:?}",
                        status.map_or("a timeout".to_owned(), |s| s.to_string())
                    ));
                }
            }
        }
        t
    }
}
