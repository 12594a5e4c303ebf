//! `cargo xtask bench --filters [--mib N] [--threads T]`: the filters, h5chunk against the
//! reference C filters (libhdf5's own and hdf5plugin's, through h5py in the xtask venv).
//!
//! For a detector-like u16 image stack and a float32 climate-like field (about N MiB each,
//! default 256, one 2 MiB frame per chunk), every filter h5chunk reads that h5py can write
//! (deflate, shuffle + deflate, bitshuffle/LZ4, LZ4, Zstd, Blosc, Blosc2, bzip2, szip; LZO has
//! no writer there): decompression MB/s of a whole-dataset read, h5py (one thread: libhdf5's
//! global lock serialises its filters) against h5chunk on one thread and on T (default: the
//! available cores), values checked by checksum; compression MB/s for bitshuffle/LZ4, LZ4,
//! Zstd (h5py's write of the dataset against h5chunk's, creation to close); both the reads and
//! the writes in three rounds of the two sides in turn, each side's best kept (each read
//! process itself keeps the better of two reads; each write starts after a `sync`); and
//! frames/s of pre-compressed 4 MiB bitshuffle/LZ4 frames written with `write_direct_chunk`
//! (h5py's `id.write_direct_chunk`, i.e. `H5Dwrite_chunk`, against h5chunk's). Prints a table
//! and writes `target/bench/filters.csv`. MB/s are of uncompressed values (10^6 bytes per second).
//!
//! The Python is `$H5CHUNK_PYTHON` when set (a venv with h5py and hdf5plugin), else the xtask
//! venv.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::TaskResult;
use crate::harness::{build_bench_bin, parse_line, settle_writeback};

/// Filters with an h5chunk compression row.
const COMPRESS: [&str; 3] = ["bitshuffle-lz4", "lz4", "zstd"];

/// Rounds of reads and of compression writes, h5py's and h5chunk's in turn (best of each).
const ROUNDS: u32 = 3;

struct Row {
    kind: String,
    filter: String,
    op: &'static str,
    imp: &'static str,
    threads: u64,
    units: f64,
    seconds: f64,
}

/// A row's reference figure (libhdf5, one thread) and h5chunk's, one per thread count.
fn push_rows(
    rows: &mut Vec<Row>,
    kind: &str,
    filter: &str,
    op: &'static str,
    units: f64,
    reference: f64,
    ours: &BTreeMap<u64, f64>,
) {
    let row = |imp, threads, seconds| Row {
        kind: kind.to_string(),
        filter: filter.to_string(),
        op,
        imp,
        threads,
        units,
        seconds,
    };
    rows.push(row("libhdf5", 1, reference));
    for (&t, &seconds) in ours {
        rows.push(row("h5chunk", t, seconds));
    }
}

/// The `KIND key=value ...` lines of a command's output, or why it failed.
fn lines(cmd: &mut Command, kind: &str) -> Result<Vec<BTreeMap<String, String>>, String> {
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if !out.status.success() {
        return Err(format!("{} exited {}", crate::describe(cmd), out.status));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    Ok(stdout
        .lines()
        .filter_map(|l| {
            let (k, rest) = l.split_once(' ')?;
            (k == kind).then(|| parse_line(&format!("RESULT {rest}")).map(|(_, f)| f))?
        })
        .collect())
}

/// The first `KIND key=value ...` line of a command's output, or why there is none.
fn first_line(cmd: &mut Command, kind: &str) -> Result<BTreeMap<String, String>, String> {
    lines(cmd, kind)?
        .into_iter()
        .next()
        .ok_or_else(|| format!("no {kind} line"))
}

/// Keep the lesser of `seconds` and what `best` holds for `threads`.
fn keep_best(best: &mut BTreeMap<u64, f64>, threads: u64, seconds: f64) {
    let b = best.entry(threads).or_insert(seconds);
    *b = b.min(seconds);
}

fn field(f: &BTreeMap<String, String>, k: &str) -> Result<f64, String> {
    f.get(k)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("no {k} in {f:?}"))
}

pub fn run(root: &Path, args: &[String]) -> TaskResult {
    let mut mib = 256u64;
    let mut threads = std::thread::available_parallelism().map_or(2, |n| n.get() as u64);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .and_then(|v| v.parse::<u64>().ok())
                .filter(|&v| v > 0)
                .ok_or_else(|| format!("`{a}` needs a positive number"))
        };
        match a.as_str() {
            "--mib" => mib = value()?,
            "--threads" => threads = value()?,
            other => return Err(format!("bench --filters: unexpected argument `{other}`")),
        }
    }
    let out_dir = root.join("target").join("bench");
    let files = out_dir.join("filters");
    std::fs::create_dir_all(&files).map_err(|e| format!("{}: {e}", files.display()))?;
    let python = match std::env::var_os("H5CHUNK_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => crate::fixtures::ensure_venv(root)?,
    };
    eprintln!("xtask bench --filters: building h5chunk-filters (release)");
    let ours = build_bench_bin(root, "h5chunk-filters")?;
    let script = root
        .join("benches")
        .join("filters")
        .join("filters_bench.py");
    let started = Instant::now();

    eprintln!("xtask bench --filters: reference files and timings (h5py + hdf5plugin)");
    let made = lines(
        Command::new(&python)
            .arg(&script)
            .arg("make")
            .arg(&files)
            .arg(mib.to_string()),
        "ROW",
    )?;
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    let mb = |bytes: f64| bytes / 1e6;
    for r in &made {
        let kind = r.get("kind").cloned().unwrap_or_default();
        let filter = r.get("filter").cloned().unwrap_or_default();
        let file = r.get("file").cloned().unwrap_or_default();
        let bytes = field(r, "bytes")?;
        let mut counts = vec![1];
        if threads > 1 {
            counts.push(threads);
        }
        // Decompression: h5py's read and h5chunk's (each thread count) in turn, ROUNDS rounds,
        // best of each, as the compression rows below: one read of each side timed minutes
        // apart met different page-cache and writeback states (a row moved 0.65x-1.16x from
        // run to run with no change to its path). `make`'s own read is h5py's first round.
        let mut best_ref = field(r, "read_s")?;
        let mut best: BTreeMap<u64, f64> = BTreeMap::new();
        for round in 1..=ROUNDS {
            eprintln!("xtask bench --filters: {kind} {filter} read, round {round}/{ROUNDS}");
            if round > 1 {
                match first_line(
                    Command::new(&python).arg(&script).arg("read").arg(&file),
                    "READ",
                ) {
                    Ok(w) => best_ref = best_ref.min(field(&w, "read_s")?),
                    Err(why) => problems.push(format!("{kind} {filter} h5py read: {why}")),
                }
            }
            for &t in &counts {
                match first_line(
                    Command::new(&ours)
                        .arg("read")
                        .arg(&file)
                        .arg(t.to_string()),
                    "RESULT",
                ) {
                    Ok(f) => {
                        if f.get("checksum") != r.get("checksum") {
                            problems.push(format!(
                                "{kind} {filter}: h5chunk's values differ from h5py's (checksum)"
                            ));
                        }
                        keep_best(&mut best, t, field(&f, "read_s")?);
                    }
                    Err(why) => problems.push(format!("{kind} {filter} read {t}: {why}")),
                }
            }
        }
        push_rows(
            &mut rows,
            &kind,
            &filter,
            "decompress",
            mb(bytes),
            best_ref,
            &best,
        );
        if COMPRESS.contains(&filter.as_str()) {
            // Compression: h5py's write and h5chunk's (each thread count) in turn, ROUNDS
            // rounds, best of each, each after a `sync` (`make` wrote every filter's file of
            // the kind first), so that neither side alone meets the kernel's writeback of the
            // files written before it. `make`'s own write is one more of h5py's.
            let mut best_ref = field(r, "write_s")?;
            let mut best: BTreeMap<u64, f64> = BTreeMap::new();
            let dst = files.join(format!("{kind}_{filter}_h5chunk.h5"));
            for round in 1..=ROUNDS {
                eprintln!("xtask bench --filters: {kind} {filter} write, round {round}/{ROUNDS}");
                if round > 1 {
                    settle_writeback();
                    match first_line(
                        Command::new(&python)
                            .arg(&script)
                            .arg("write")
                            .arg(&file)
                            .arg(&dst)
                            .arg(&filter),
                        "WRITE",
                    ) {
                        Ok(w) => best_ref = best_ref.min(field(&w, "write_s")?),
                        Err(why) => problems.push(format!("{kind} {filter} h5py write: {why}")),
                    }
                }
                for &t in &counts {
                    settle_writeback();
                    match first_line(
                        Command::new(&ours)
                            .arg("compress")
                            .arg(&file)
                            .arg(&dst)
                            .arg(&filter)
                            .arg(t.to_string()),
                        "RESULT",
                    ) {
                        Ok(f) => {
                            keep_best(&mut best, t, field(&f, "write_s")?);
                        }
                        Err(why) => problems.push(format!("{kind} {filter} compress {t}: {why}")),
                    }
                }
            }
            push_rows(
                &mut rows,
                &kind,
                &filter,
                "compress",
                mb(bytes),
                best_ref,
                &best,
            );
        }
        let _ = std::fs::remove_file(&file);
    }

    // Pre-compressed frames through direct chunk writes.
    let count = (mib / 4).max(4);
    eprintln!("xtask bench --filters: {count} direct chunk writes of 4 MiB frames");
    match first_line(
        Command::new(&python)
            .arg(&script)
            .arg("direct")
            .arg(&files)
            .arg(count.to_string()),
        "DIRECT",
    ) {
        Ok(r) => {
            let src = r.get("file").cloned().unwrap_or_default();
            rows.push(Row {
                kind: "frames-u32".into(),
                filter: "bitshuffle-lz4".into(),
                op: "direct-write",
                imp: "libhdf5",
                threads: 1,
                units: count as f64,
                seconds: field(&r, "write_s")?,
            });
            match first_line(
                Command::new(&ours)
                    .arg("direct")
                    .arg(&src)
                    .arg(files.join("frames_direct_h5chunk.h5"))
                    .arg(count.to_string()),
                "RESULT",
            ) {
                Ok(f) => rows.push(Row {
                    kind: "frames-u32".into(),
                    filter: "bitshuffle-lz4".into(),
                    op: "direct-write",
                    imp: "h5chunk",
                    threads: 1,
                    units: count as f64,
                    seconds: field(&f, "write_s")?,
                }),
                Err(why) => problems.push(format!("direct writes: {why}")),
            }
            let _ = std::fs::remove_file(&src);
        }
        Err(why) => problems.push(format!("direct writes (reference): {why}")),
    }

    let mut t = String::new();
    let _ = writeln!(
        t,
        "\nfilters: {mib} MiB per data kind, 2 MiB chunks; decompress/compress in MB/s of values, \
         direct-write in frames/s (4 MiB frames); vs ref = h5chunk / libhdf5 (one thread)"
    );
    let _ = writeln!(
        t,
        "{:<11} {:<16} {:<13} {:<8} {:>7} {:>12} {:>8}",
        "data", "filter", "op", "impl", "threads", "rate", "vs ref"
    );
    let _ = writeln!(t, "{}", "-".repeat(80));
    let reference = |r: &Row| {
        rows.iter()
            .find(|h| {
                h.imp == "libhdf5" && h.kind == r.kind && h.filter == r.filter && h.op == r.op
            })
            .map(|h| h.units / h.seconds)
    };
    let mut csv = String::from("kind,filter,op,impl,threads,units,seconds,rate,vs_ref\n");
    for r in &rows {
        let rate = r.units / r.seconds;
        let vs = match reference(r) {
            Some(h) if r.imp == "h5chunk" => format!("{:.2}x", rate / h),
            _ => String::new(),
        };
        let _ = writeln!(
            t,
            "{:<11} {:<16} {:<13} {:<8} {:>7} {:>12.1} {:>8}",
            r.kind, r.filter, r.op, r.imp, r.threads, rate, vs
        );
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{:.3},{:.6},{:.3},{}",
            r.kind,
            r.filter,
            r.op,
            r.imp,
            r.threads,
            r.units,
            r.seconds,
            rate,
            vs.trim_end_matches('x')
        );
    }
    let _ = writeln!(
        t,
        "not measured: LZO (no writer in h5py or hdf5plugin; read by h5chunk, see codec_filters.rs)"
    );
    for p in &problems {
        let _ = writeln!(t, "PROBLEM: {p}");
    }
    let _ = writeln!(t, "wall time {:.1} s", started.elapsed().as_secs_f64());
    print!("{t}");
    let path = out_dir.join("filters.csv");
    std::fs::write(&path, csv).map_err(|e| format!("{}: {e}", path.display()))?;
    println!("wrote {}", path.display());
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{} problem(s), listed above", problems.len()))
    }
}
