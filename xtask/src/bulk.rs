//! `cargo xtask bench --bulk [--mib N] [--threads T]`: bulk throughput, h5chunk against libhdf5.
//!
//! Writes then reads back a 2-D float32 dataset of N MiB (default 1,024) in 1 MiB chunks,
//! unfiltered and with shuffle + deflate level 4: h5chunk (`h5chunk-bulk`) from one thread and
//! from T threads (default: the available cores), libhdf5 (`benches/libhdf5/bulk_bench.c`) from
//! one thread (its global lock serialises every call); three rounds of the sides in turn, each
//! run after a `sync`, each side's best write and best read kept. A `dd`-style copy of the
//! same size on the same disk (1 MiB writes, then reads) gives the physical limit. Prints a
//! table with MB/s (10^6 bytes of dataset values per second), peak RSS and file size, and writes
//! `target/bench/bulk.csv`. Then random single-element reads of one shared dataset from one
//! and from T threads (`h5chunk-reads`), into `target/bench/reads.csv`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::TaskResult;
use crate::harness::{build_bench_bin, build_c_program, parse_line};

struct Row {
    filter: String,
    imp: String,
    threads: u64,
    fields: BTreeMap<String, String>,
}

fn num(r: &Row, k: &str) -> f64 {
    r.fields
        .get(k)
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

/// Rounds of the write-then-read runs, the sides in turn (best of each).
const ROUNDS: u32 = 3;

/// `run` added to `rows`, or, when a row of its filter, side and thread count is there
/// already, that row's write and read times lowered to `run`'s where `run`'s are lower (a
/// shared machine only ever slows a run down).
fn keep_best(rows: &mut Vec<Row>, run: Row) {
    let same =
        |r: &&mut Row| r.filter == run.filter && r.imp == run.imp && r.threads == run.threads;
    let Some(row) = rows.iter_mut().find(same) else {
        rows.push(run);
        return;
    };
    for k in ["write_s", "read_s"] {
        if num(&run, k) < num(row, k)
            && let Some(v) = run.fields.get(k)
        {
            row.fields.insert(k.to_string(), v.clone());
        }
    }
}

/// One run's RESULT line, or why there is none.
fn measure(cmd: &mut Command) -> Result<BTreeMap<String, String>, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .filter_map(parse_line)
        .find(|(kind, _)| *kind == "RESULT")
        .map(|(_, f)| f)
        .ok_or_else(|| {
            let stderr = String::from_utf8_lossy(&out.stderr);
            format!(
                "{} exited {}: {}",
                crate::describe(cmd),
                out.status,
                stderr.lines().last().unwrap_or("")
            )
        })
}

/// The `dd`-style copy: `mib` MiB written in 1 MiB writes (then `fdatasync`, as the data must
/// reach the disk for a copy to count), read back in 1 MiB reads; seconds for each.
fn disk_copy(dir: &Path, mib: u64) -> Result<(f64, f64), String> {
    let path = dir.join("bulk_dd.bin");
    let block = vec![0x5au8; 1 << 20];
    let t0 = Instant::now();
    let mut f = std::fs::File::create(&path).map_err(|e| e.to_string())?;
    for _ in 0..mib {
        f.write_all(&block).map_err(|e| e.to_string())?;
    }
    f.sync_data().map_err(|e| e.to_string())?;
    drop(f);
    let write_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let mut f = std::fs::File::open(&path).map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        total += n as u64;
    }
    let read_s = t1.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    if total != mib << 20 {
        return Err(format!("dd: read {total} bytes of {}", mib << 20));
    }
    Ok((write_s, read_s))
}

pub fn run(root: &Path, args: &[String]) -> TaskResult {
    let mut mib = 1024u64;
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
            other => return Err(format!("bench --bulk: unexpected argument `{other}`")),
        }
    }
    let out_dir = root.join("target").join("bench");
    let files = out_dir.join("files");
    std::fs::create_dir_all(&files).map_err(|e| format!("{}: {e}", files.display()))?;
    eprintln!("xtask bench --bulk: building h5chunk-bulk and h5chunk-reads (release)");
    let ours = build_bench_bin(root, "h5chunk-bulk")?;
    let reads_bin = build_bench_bin(root, "h5chunk-reads")?;
    let theirs = crate::install::ensure(crate::install::LIBHDF5)
        .and_then(|()| build_c_program(root, &out_dir, "bulk_bench"));
    if let Err(why) = &theirs {
        eprintln!("xtask bench --bulk: libhdf5 side unavailable: {why}");
    }

    let started = Instant::now();
    let (dd_write, dd_read) = disk_copy(&files, mib)?;
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for filter in ["none", "deflate"] {
        let mut runs: Vec<(&str, u64)> = vec![("libhdf5", 1), ("h5chunk", 1)];
        if threads > 1 {
            runs.push(("h5chunk", threads));
        }
        // ROUNDS rounds of the sides in turn, each run after `sync` (untimed) so that none
        // meets the writeback of the gigabyte the run before it wrote; each side keeps its
        // best write and its best read.
        for round in 1..=ROUNDS {
            for &(imp, t) in &runs {
                eprintln!(
                    "xtask bench --bulk: {filter} {imp} {t} thread(s), round {round}/{ROUNDS}"
                );
                crate::harness::settle_writeback();
                let result = match (imp, &theirs) {
                    ("h5chunk", _) => measure(
                        Command::new(&ours)
                            .arg("--dir")
                            .arg(&files)
                            .args(["--mib", &mib.to_string()])
                            .args(["--threads", &t.to_string()])
                            .args(["--filter", filter]),
                    ),
                    (_, Ok(bin)) => measure(
                        Command::new(bin)
                            .arg(&files)
                            .arg(mib.to_string())
                            .arg(filter),
                    ),
                    (_, Err(why)) => Err(format!("libhdf5 not available: {why}")),
                };
                match result {
                    Ok(fields) => keep_best(
                        &mut rows,
                        Row {
                            filter: filter.to_string(),
                            imp: imp.to_string(),
                            threads: t,
                            fields,
                        },
                    ),
                    Err(why) => skipped.push(format!("{filter} {imp} {t}: {why}")),
                }
            }
        }
    }
    // Random single-element reads of one shared dataset, from 1 and from T threads.
    let mut reads = Vec::new();
    for t in [1, threads] {
        if t == 1 && !reads.is_empty() {
            continue;
        }
        eprintln!("xtask bench --bulk: random reads, {t} thread(s), best of 3");
        // Best of three, as the append benchmark: a shared VM's neighbours only ever slow
        // a run down.
        let mut best: Option<BTreeMap<String, String>> = None;
        for _ in 0..3 {
            match measure(
                Command::new(&reads_bin)
                    .arg("--dir")
                    .arg(&files)
                    .args(["--threads", &t.to_string()])
                    .args(["--reads", "1000000"]),
            ) {
                Ok(fields) => {
                    let rate = |f: &BTreeMap<String, String>| {
                        f.get("reads_per_s")
                            .and_then(|v| v.parse::<f64>().ok())
                            .unwrap_or(0.0)
                    };
                    if best.as_ref().is_none_or(|b| rate(&fields) > rate(b)) {
                        best = Some(fields);
                    }
                }
                Err(why) => {
                    skipped.push(format!("random reads {t}: {why}"));
                    break;
                }
            }
        }
        if let Some(fields) = best {
            reads.push((t, fields));
        }
    }
    let _ = std::fs::remove_file(files.join("reads_h5chunk.h5"));
    let mb = (mib << 20) as f64 / 1e6;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "\nbulk throughput: {mib} MiB float32, 1 MiB chunks; MB/s of dataset values; write = \
         create..close, read = open..last value (checked)"
    );
    let _ = writeln!(
        t,
        "{:<8} {:<12} {:>7} {:>10} {:>10} {:>9} {:>9} {:>10} {:>11} {:>11}",
        "filter",
        "impl",
        "threads",
        "write MB/s",
        "read MB/s",
        "w/hdf5",
        "r/hdf5",
        "peak RSS",
        "file MB",
        "w/disk"
    );
    let _ = writeln!(t, "{}", "-".repeat(107));
    let _ = writeln!(
        t,
        "{:<8} {:<12} {:>7} {:>10.0} {:>10.0} {:>9} {:>9} {:>10} {:>11.0} {:>11}",
        "-",
        "disk (dd)",
        1,
        mb / dd_write,
        mb / dd_read,
        "",
        "",
        "",
        mb,
        "1.00x"
    );
    for r in &rows {
        let hdf5 = rows
            .iter()
            .find(|h| h.imp == "libhdf5" && h.filter == r.filter);
        let ratio = |k: &str| match hdf5 {
            Some(h) if r.imp != "libhdf5" => format!("{:.2}x", num(h, k) / num(r, k)),
            _ => String::new(),
        };
        let _ = writeln!(
            t,
            "{:<8} {:<12} {:>7} {:>10.0} {:>10.0} {:>9} {:>9} {:>7.0} MB {:>11.1} {:>10.2}x",
            r.filter,
            r.imp,
            r.threads,
            mb / num(r, "write_s"),
            mb / num(r, "read_s"),
            ratio("write_s"),
            ratio("read_s"),
            num(r, "peak_rss_kib") * 1024.0 / 1e6,
            num(r, "file_bytes") / 1e6,
            dd_write / num(r, "write_s"),
        );
    }
    let rate = |f: &BTreeMap<String, String>| {
        f.get("reads_per_s")
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    if let Some((_, one)) = reads.iter().find(|(t, _)| *t == 1) {
        let _ = writeln!(
            t,
            "\nrandom single-element reads of one dataset (2048 x 2048 u32, 64 x 64 chunks), each \
             value checked, best of 3"
        );
        let _ = writeln!(t, "{:>7} {:>14} {:>10}", "threads", "reads/s", "vs 1");
        for (n, f) in &reads {
            let _ = writeln!(t, "{n:>7} {:>14.0} {:>9.2}x", rate(f), rate(f) / rate(one));
        }
    }
    for s in &skipped {
        let _ = writeln!(t, "unavailable: {s}");
    }
    let _ = writeln!(t, "wall time {:.1} s", started.elapsed().as_secs_f64());
    print!("{t}");

    let mut csv = String::from(
        "filter,impl,threads,mib,write_s,read_s,write_mbs,read_mbs,peak_rss_kib,file_bytes\n",
    );
    let _ = writeln!(
        csv,
        "-,dd,1,{mib},{dd_write:.6},{dd_read:.6},{:.1},{:.1},,",
        mb / dd_write,
        mb / dd_read
    );
    for r in &rows {
        let _ = writeln!(
            csv,
            "{},{},{},{mib},{},{},{:.1},{:.1},{},{}",
            r.filter,
            r.imp,
            r.threads,
            num(r, "write_s"),
            num(r, "read_s"),
            mb / num(r, "write_s"),
            mb / num(r, "read_s"),
            num(r, "peak_rss_kib"),
            num(r, "file_bytes"),
        );
    }
    let mut reads_csv = String::from("threads,reads,seconds,reads_per_s\n");
    for (n, f) in &reads {
        let field = |k: &str| f.get(k).cloned().unwrap_or_default();
        let _ = writeln!(
            reads_csv,
            "{n},{},{},{}",
            field("reads"),
            field("seconds"),
            field("reads_per_s")
        );
    }
    let reads_path = out_dir.join("reads.csv");
    std::fs::write(&reads_path, reads_csv).map_err(|e| format!("{}: {e}", reads_path.display()))?;
    let path = out_dir.join("bulk.csv");
    std::fs::write(&path, csv).map_err(|e| format!("{}: {e}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(imp: &str, write_s: &str, read_s: &str) -> Row {
        Row {
            filter: "none".into(),
            imp: imp.into(),
            threads: 1,
            fields: [("write_s", write_s), ("read_s", read_s)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn each_side_keeps_its_best_write_and_its_best_read() {
        let mut rows = Vec::new();
        keep_best(&mut rows, row("h5chunk", "0.5", "0.2"));
        keep_best(&mut rows, row("libhdf5", "0.4", "0.3"));
        keep_best(&mut rows, row("h5chunk", "0.3", "0.4"));
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (num(&rows[0], "write_s"), num(&rows[0], "read_s")),
            (0.3, 0.2)
        );
        assert_eq!(
            (num(&rows[1], "write_s"), num(&rows[1], "read_s")),
            (0.4, 0.3)
        );
    }
}
