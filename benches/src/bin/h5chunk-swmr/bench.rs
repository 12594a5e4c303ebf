//! `cargo xtask bench --swmr` (`bench`): h5chunk's and libhdf5's SWMR writers, on and off,
//! in interleaved rounds, and the polling readers.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::common::{percentile, result_fields, this_program};
use crate::poll::{H5PY_POLL, poll_report};
use crate::scenario::scenario;
use crate::soak::{Paths, spawn_reader};

pub(crate) struct BenchOptions {
    pub(crate) n: u64,
    pub(crate) chunk: u64,
    pub(crate) per_flush: u64,
    pub(crate) scenarios: Vec<String>,
    pub(crate) python: PathBuf,
    pub(crate) c_writer: PathBuf,
    pub(crate) dir: PathBuf,
    pub(crate) repeat: u32,
}

pub(crate) fn parse_bench(args: &[String]) -> Result<BenchOptions, String> {
    let mut o = BenchOptions {
        n: 200_000,
        chunk: 16,
        per_flush: 1000,
        scenarios: vec!["earray".into(), "btree2-x".into(), "farray".into()],
        python: PathBuf::new(),
        c_writer: PathBuf::new(),
        dir: std::env::temp_dir().join("h5chunk-swmr-bench"),
        // A writer run takes 4 to 100 ms: the best of nine interleaved rounds (each side
        // alike) steadies the ratio on a shared machine at a cost of a few seconds.
        repeat: 9,
    };
    let mut it = args.iter();
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| format!("{k} needs a value"))?;
        let num = |s: &str| s.parse::<u64>().map_err(|e| format!("{k}: {e}"));
        match k.as_str() {
            "--n" => o.n = num(v)?,
            "--chunk" => o.chunk = num(v)?,
            "--per-flush" => o.per_flush = num(v)?.max(1),
            "--scenarios" => o.scenarios = v.split(',').map(str::to_owned).collect(),
            "--python" => o.python = PathBuf::from(v),
            "--c-writer" => o.c_writer = PathBuf::from(v),
            "--dir" => o.dir = PathBuf::from(v),
            "--repeat" => o.repeat = num(v)?.max(1) as u32,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(o)
}

/// Seconds per append, the flush log (extent → microseconds at the flush's start), and the
/// pollers' outputs.
pub(crate) type WriterRun = (f64, std::collections::HashMap<String, u64>, Vec<String>);

/// One writer run of the benchmark: `(seconds, flush log)`; with pollers (commands) started
/// once the writer is ready, their outputs too.
pub(crate) fn bench_writer(
    o: &BenchOptions,
    writer: &str,
    sc: &str,
    swmr: bool,
    pollers: &[Command],
) -> Result<WriterRun, String> {
    std::fs::create_dir_all(&o.dir).map_err(|e| format!("{}: {e}", o.dir.display()))?;
    let tag = format!("{writer}-{sc}-{}", if swmr { "swmr" } else { "plain" });
    let paths = Paths::new(&o.dir, &tag);
    let log = o.dir.join(format!("{tag}.flushes"));
    let args = [
        paths.path.to_string_lossy().into_owned(),
        sc.to_owned(),
        o.n.to_string(),
        o.chunk.to_string(),
        "0".to_owned(),
        o.per_flush.to_string(),
        // No announcements: the pollers check no bound.
        "-".to_owned(),
        paths.done.to_string_lossy().into_owned(),
        if swmr { "swmr" } else { "plain" }.to_owned(),
    ];
    // A chunk's rows per append: each append is one chunk (or a row of chunks).
    let rows = scenario(sc, o.n, o.chunk)?.chunk[0].to_string();
    let mut cmd = if writer == "h5chunk" {
        let mut c = this_program("write")?;
        c.args(&args).args(["--no-trace", "--rows", &rows]);
        if pollers.is_empty() {
            // Timed: no line and no log entry per flush (the C writer writes neither).
            c.arg("--quiet");
        } else {
            // A steady pace, so that readers poll while it writes, and the flushes' times for
            // the readers' latency.
            c.args(["--pause-us", "500", "--flush-log"]).arg(&log);
        }
        c
    } else {
        let mut c = Command::new(&o.c_writer);
        c.args(&args).arg(&rows);
        c
    };
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("{writer} writer: {e}"))?;
    let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut polls = Vec::new();
    if swmr {
        let mut line = String::new();
        out.read_line(&mut line).map_err(|e| e.to_string())?;
        if line.trim() != "ready" {
            return Err(format!("{writer} writer: {line:?}"));
        }
        for p in pollers {
            let mut c = Command::new(p.get_program());
            c.args(p.get_args()).arg(&paths.path).arg(&paths.done);
            polls.push(spawn_reader(c)?);
        }
        for (_, out) in &mut polls {
            let mut line = String::new();
            out.read_line(&mut line).map_err(|e| e.to_string())?;
            if line.trim() != "ready" {
                return Err(format!("poller: {line:?}"));
            }
        }
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        writeln!(stdin, "go").map_err(|e| e.to_string())?;
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut out, &mut text).map_err(|e| e.to_string())?;
    if !child.wait().map_err(|e| e.to_string())?.success() {
        return Err(format!("{writer} writer failed"));
    }
    let field = |k: &str| {
        result_fields(&text)
            .find(|&(key, _)| key == k)
            .and_then(|(_, v)| v.parse::<f64>().ok())
            .ok_or_else(|| format!("{writer} writer printed no {k}: {text:?}"))
    };
    // Appends per second.
    let seconds = field("seconds")? / field("calls")?;
    let mut flushes = std::collections::HashMap::new();
    if let Ok(t) = std::fs::read_to_string(&log) {
        for line in t.lines() {
            if let Some((dims, us)) = line.split_once('\t')
                && let Ok(us) = us.parse()
            {
                flushes.entry(dims.to_owned()).or_insert(us);
            }
        }
    }
    let mut outs = Vec::new();
    for (mut c, mut out) in polls {
        let mut t = String::new();
        std::io::Read::read_to_string(&mut out, &mut t).map_err(|e| e.to_string())?;
        c.wait().map_err(|e| e.to_string())?;
        outs.push(t);
    }
    Ok((seconds, flushes, outs))
}

/// `cargo xtask bench --swmr`: SWMR writers' appends/s (on and off, h5chunk and libhdf5's C
/// writer), and polling readers' cost per refresh and latency (h5chunk and h5py).
pub(crate) fn bench_main(args: &[String]) -> Result<bool, String> {
    let o = parse_bench(args)?;
    println!(
        "SWMR writers: {} elements per scenario, chunks of {} elements, each append a chunk's \
         rows, a flush every {} elements (h5chunk: Durability::Flush, no fsync; libhdf5 never \
         fsyncs), best of {} interleaved rounds",
        o.n, o.chunk, o.per_flush, o.repeat
    );
    println!(
        "{:<10} {:>14} {:>14} {:>14} {:>14} {:>9}",
        "scenario", "h5chunk swmr/s", "h5chunk off/s", "libhdf5 swmr/s", "libhdf5 off/s", "swmr ×"
    );
    let mut ok = true;
    for sc in &o.scenarios {
        // Round after round, each writer once a round: the machine's state drifts (a shared
        // virtual machine runs at two speeds), and interleaving gives every writer the same
        // spread of it. Each writer's best round is its figure.
        let kinds = [
            ("h5chunk", true),
            ("h5chunk", false),
            ("c", true),
            ("c", false),
        ];
        let mut best = [f64::INFINITY; 4];
        for _ in 0..o.repeat {
            for ((w, swmr), b) in kinds.iter().zip(best.iter_mut()) {
                *b = b.min(bench_writer(&o, w, sc, *swmr, &[])?.0);
            }
        }
        let [hs, hp, cs, cp] = best.map(|b| 1.0 / b);
        println!(
            "{sc:<10} {hs:>14.0} {hp:>14.0} {cs:>14.0} {cp:>14.0} {:>8.2}×",
            hs / cs
        );
        println!(
            "RESULT kind=swmr_writer scenario={sc} h5chunk_swmr={hs:.0} h5chunk_plain={hp:.0} \
             libhdf5_swmr={cs:.0} libhdf5_plain={cp:.0} ratio={:.2}",
            hs / cs
        );
        ok &= hs >= 10.0 * cs;
    }
    println!();
    println!(
        "Polling readers following the h5chunk SWMR writer (each poll: refresh, extent, the \
         newest element; bytes and read calls from /proc/self/io)"
    );
    println!(
        "{:<10} {:<8} {:>7} {:>12} {:>11} {:>10} {:>10}",
        "scenario", "reader", "polls", "bytes/poll", "reads/poll", "p50 µs", "p99 µs"
    );
    let script = o.dir.join("h5py_poll.py");
    std::fs::create_dir_all(&o.dir).map_err(|e| e.to_string())?;
    std::fs::write(&script, H5PY_POLL).map_err(|e| e.to_string())?;
    for sc in &o.scenarios {
        let ours = this_program("poll")?;
        let mut theirs = Command::new(&o.python);
        theirs.arg(&script);
        let (_, flushes, outs) = bench_writer(&o, "h5chunk", sc, true, &[ours, theirs])?;
        let mut per = Vec::new();
        for (who, text) in ["h5chunk", "h5py"].iter().zip(&outs) {
            let mut r = poll_report(text, &flushes);
            let polls = r.polls.max(1) as f64;
            let (p50, p99) = (
                percentile(&mut r.latencies, 0.5),
                percentile(&mut r.latencies, 0.99),
            );
            // A fixed extent (the fixed array being filled) shows once: no latency to tell.
            let (l50, l99) = if r.latencies.len() > 1 {
                (p50.to_string(), p99.to_string())
            } else {
                ("n/a".to_owned(), "n/a".to_owned())
            };
            println!(
                "{sc:<10} {who:<8} {:>7} {:>12.0} {:>11.1} {l50:>10} {l99:>10}",
                r.polls,
                r.bytes as f64 / polls,
                r.reads as f64 / polls
            );
            println!(
                "RESULT kind=swmr_poll scenario={sc} reader={who} polls={} bytes_per_poll={:.0} \
                 reads_per_poll={:.2} p50_us={p50} p99_us={p99}",
                r.polls,
                r.bytes as f64 / polls,
                r.reads as f64 / polls
            );
            per.push(r.bytes as f64 / polls);
        }
        ok &= per.first() < per.get(1);
    }
    Ok(ok)
}
