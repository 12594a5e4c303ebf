//! `cargo xtask bench`: the chunk-index paper's append benchmark (§III), h5chunk and libhdf5
//! side by side.
//!
//! xtask depends on no workspace crate, so the measuring happens in two programs it builds and
//! runs: `h5chunk-bench` (package `h5chunk-benches`, release mode) and
//! `benches/libhdf5/append_bench.c`, compiled with the system C compiler against the libhdf5
//! that pkg-config finds. Both take one scenario and index per run and print `CURVE` and
//! `RESULT` lines (or one `UNAVAILABLE` line); the runs alternate between the two programs, so
//! a slow spell of a shared machine hurts both. xtask parses the lines, prints the table and
//! writes `target/bench/results.csv` and `target/bench/append.svg`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::TaskResult;
use crate::harness::{IMPLS, build_bench_bin, build_c_program, build_release_bin, parse_line};

/// Scenarios and the indexes measured in each, in table order (as `benches/src/lib.rs`).
pub const PLAN: &[(&str, &[&str])] = &[
    ("s1", &["btree1", "earray", "skiplist"]),
    ("s2x", &["btree1", "earray", "skiplist"]),
    ("s2y", &["btree1", "earray", "skiplist"]),
    ("s3x", &["btree1", "btree2"]),
    ("s3y", &["btree1", "btree2"]),
    ("s3alt", &["btree1", "btree2"]),
    ("fixed", &["btree1", "farray", "implicit"]),
];

/// Appends per run by default: the whole default run takes about a minute on 2 cores.
pub const DEFAULT_N: u64 = 50_000;
/// The paper's count (`--full`).
pub const FULL_N: u64 = 2_500_000;
/// Rounds over all runs by default; the table keeps each figure's best round, since a shared
/// machine only ever makes a run slower. `--full` makes it 1.
pub const DEFAULT_REPEAT: u32 = 3;

#[derive(Debug, PartialEq)]
struct Options {
    n: u64,
    /// `--n` was given (else `--instructions` runs its own smaller default).
    n_given: bool,
    /// `--instructions`: count instructions under callgrind instead of timing.
    instructions: bool,
    repeat: u32,
    chunk_bytes: u64,
    scenarios: Vec<String>,
    indexes: Option<Vec<String>>,
}

fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        n: DEFAULT_N,
        n_given: false,
        instructions: false,
        repeat: DEFAULT_REPEAT,
        chunk_bytes: 1,
        scenarios: PLAN.iter().map(|(s, _)| s.to_string()).collect(),
        indexes: None,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--full" => {
                o.n = FULL_N;
                o.n_given = true;
                o.repeat = 1;
            }
            "--instructions" => o.instructions = true,
            "--n" => {
                o.n = value()?
                    .replace('_', "")
                    .parse()
                    .map_err(|e| format!("--n: {e}"))?;
                if o.n < 2 {
                    return Err("--n must be at least 2".into());
                }
                o.n_given = true;
            }
            "--repeat" => {
                o.repeat = value()?.parse().map_err(|e| format!("--repeat: {e}"))?;
                if o.repeat == 0 {
                    return Err("--repeat must be at least 1".into());
                }
            }
            "--chunk-bytes" => {
                o.chunk_bytes = value()?
                    .parse()
                    .map_err(|e| format!("--chunk-bytes: {e}"))?;
                if o.chunk_bytes == 0 {
                    return Err("--chunk-bytes must be at least 1".into());
                }
            }
            "--scenario" => {
                let list: Vec<String> = value()?.split(',').map(str::to_string).collect();
                for s in &list {
                    if !PLAN.iter().any(|(p, _)| p == s) {
                        return Err(format!(
                            "unknown scenario `{s}` (one of {})",
                            PLAN.iter().map(|(p, _)| *p).collect::<Vec<_>>().join(", ")
                        ));
                    }
                }
                o.scenarios = list;
            }
            "--index" => {
                let list: Vec<String> = value()?.split(',').map(str::to_string).collect();
                for i in &list {
                    if !PLAN.iter().any(|(_, ix)| ix.contains(&i.as_str())) {
                        return Err(format!("unknown index `{i}`"));
                    }
                }
                o.indexes = Some(list);
            }
            other => {
                return Err(format!(
                    "unknown argument `{other}` (see `cargo xtask help`)"
                ));
            }
        }
    }
    Ok(o)
}

/// The (scenario, index) pairs the options select.
fn cases(o: &Options) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (s, indexes) in PLAN {
        if !o.scenarios.iter().any(|x| x == s) {
            continue;
        }
        for i in *indexes {
            if o.indexes.as_ref().is_none_or(|l| l.iter().any(|x| x == i)) {
                out.push((s.to_string(), i.to_string()));
            }
        }
    }
    out
}

/// One run's outcome.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The `key=value` fields of its RESULT line, the line itself, and the points of its
    /// CURVE line.
    Measured {
        fields: BTreeMap<String, String>,
        line: String,
        curve: Curve,
    },
    /// Why there is no measurement.
    Unavailable(String),
}

/// Cumulative append time (seconds) after so many chunks.
pub type Curve = Vec<(u64, f64)>;

/// Run outcomes by (scenario, index, implementation).
pub type Results = BTreeMap<(String, String, String), Outcome>;

/// `1:0.01,2:0.02` as points.
fn parse_curve(points: &str) -> Curve {
    points
        .split(',')
        .filter_map(|p| {
            let (i, t) = p.split_once(':')?;
            Some((i.parse().ok()?, t.parse().ok()?))
        })
        .collect()
}

/// The outcome a program's output describes.
pub fn outcome_of(stdout: &str) -> Outcome {
    let mut result = None;
    let mut curve = Vec::new();
    let mut reason = None;
    for line in stdout.lines() {
        match parse_line(line) {
            Some(("RESULT", f)) => result = Some((f, line.to_string())),
            Some(("CURVE", f)) => {
                curve = f.get("points").map(|p| parse_curve(p)).unwrap_or_default()
            }
            Some(("UNAVAILABLE", f)) => reason = f.get("reason").cloned(),
            _ => {}
        }
    }
    match (result, reason) {
        (Some((fields, line)), None) => Outcome::Measured {
            fields,
            line,
            curve,
        },
        (_, Some(r)) => Outcome::Unavailable(r),
        (None, None) => Outcome::Unavailable("no RESULT line".into()),
    }
}

pub fn run(root: &Path, args: &[String]) -> TaskResult {
    if args.iter().any(|a| a == "--swmr") {
        let rest: Vec<String> = args.iter().filter(|a| *a != "--swmr").cloned().collect();
        return swmr(root, &rest);
    }
    if args.iter().any(|a| a == "--refs") {
        let rest: Vec<String> = args.iter().filter(|a| *a != "--refs").cloned().collect();
        return refs(root, &rest);
    }
    if args.iter().any(|a| a == "--filters") {
        let rest: Vec<String> = args.iter().filter(|a| *a != "--filters").cloned().collect();
        return crate::filters::run(root, &rest);
    }
    if args.iter().any(|a| a == "--browser") {
        let rest: Vec<String> = args.iter().filter(|a| *a != "--browser").cloned().collect();
        return crate::browser_bench::run(root, &rest);
    }
    if args.iter().any(|a| a == "--python") {
        let rest: Vec<String> = args.iter().filter(|a| *a != "--python").cloned().collect();
        return crate::python_bench::run(root, &rest);
    }
    if args.iter().any(|a| a == "--workloads") {
        let rest: Vec<String> = args
            .iter()
            .filter(|a| *a != "--workloads")
            .cloned()
            .collect();
        return crate::workloads::run(root, &rest);
    }
    if args.iter().any(|a| a == "--cloud") {
        let rest: Vec<String> = args.iter().filter(|a| *a != "--cloud").cloned().collect();
        return crate::cloud_bench::run(root, &rest);
    }
    if args.iter().any(|a| a == "--bulk") {
        let rest: Vec<String> = args.iter().filter(|a| *a != "--bulk").cloned().collect();
        return crate::bulk::run(root, &rest);
    }
    let o = parse_options(args)?;
    let cases = cases(&o);
    if cases.is_empty() {
        return Err("no scenario has that index".into());
    }
    let out_dir = root.join("target").join("bench");
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let files = out_dir.join("files");
    std::fs::create_dir_all(&files).map_err(|e| format!("{}: {e}", files.display()))?;

    eprintln!("xtask bench: building h5chunk-bench (release)");
    let ours = build_h5chunk_bench(root)?;
    // The comparison needs libhdf5's C library: installed here as .ci/run installs h5dump
    // (where we may), else the table says which command would.
    let theirs = crate::install::ensure(crate::install::LIBHDF5)
        .and_then(|()| build_libhdf5_bench(root, &out_dir));
    match &theirs {
        Ok(p) => eprintln!("xtask bench: libhdf5 side: {}", p.display()),
        Err(why) => eprintln!("xtask bench: libhdf5 side unavailable: {why}"),
    }

    if o.instructions {
        crate::install::ensure(crate::install::VALGRIND)?;
        let n = if o.n_given {
            o.n
        } else {
            crate::instructions::DEFAULT_N
        };
        let counts = crate::instructions::run(&cases, n, o.chunk_bytes, &ours, &theirs, &files);
        println!();
        print!("{}", crate::instructions::table(&cases, &counts, n));
        return Ok(());
    }

    let started = Instant::now();
    let total = cases.len() * IMPLS.len() * o.repeat as usize;
    let progress = std::io::stderr().is_terminal();
    let mut results = Results::new();
    let mut done = 0;
    for _round in 0..o.repeat {
        for (scenario, index) in &cases {
            for imp in IMPLS {
                if progress {
                    show_progress(done, total, &format!("{scenario} {index} {imp}"), &started);
                }
                let outcome = match (imp, &theirs) {
                    ("h5chunk", _) => {
                        let mut cmd = Command::new(&ours);
                        cmd.args(["--scenario", scenario, "--index", index])
                            .args(["--n", &o.n.to_string()])
                            .args(["--chunk-bytes", &o.chunk_bytes.to_string()])
                            .arg("--dir")
                            .arg(&files);
                        measure(&mut cmd)
                    }
                    (_, Ok(bin)) => {
                        let mut cmd = Command::new(bin);
                        cmd.args([scenario.as_str(), index.as_str()])
                            .arg(o.n.to_string())
                            .arg(o.chunk_bytes.to_string())
                            .arg(&files);
                        measure(&mut cmd)
                    }
                    (_, Err(why)) => Outcome::Unavailable(format!("libhdf5 not available: {why}")),
                };
                if let Outcome::Measured { line, .. } = &outcome {
                    if progress {
                        eprint!("\r\x1b[K");
                    }
                    println!("{line}");
                }
                let key = (scenario.clone(), index.clone(), imp.to_string());
                let merged = match results.remove(&key) {
                    Some(old) => best(old, outcome),
                    None => outcome,
                };
                results.insert(key, merged);
                done += 1;
            }
        }
    }
    if progress {
        eprint!("\r\x1b[K");
    }
    let wall = started.elapsed().as_secs_f64();
    println!();
    print!(
        "{}",
        table(
            &cases,
            &results,
            o.n,
            o.chunk_bytes,
            o.repeat,
            theirs.as_ref().err()
        )
    );
    println!("wall time {wall:.1} s for {total} runs");

    let csv_path = out_dir.join("results.csv");
    std::fs::write(&csv_path, csv(&results)).map_err(|e| format!("{}: {e}", csv_path.display()))?;
    let svg_path = out_dir.join("append.svg");
    std::fs::write(&svg_path, svg(&cases, &results, o.n))
        .map_err(|e| format!("{}: {e}", svg_path.display()))?;
    println!("wrote {} and {}", csv_path.display(), svg_path.display());
    Ok(())
}

fn show_progress(done: usize, total: usize, what: &str, started: &Instant) {
    const WIDTH: usize = 30;
    let filled = WIDTH * done / total.max(1);
    eprint!(
        "\r\x1b[K[{}{}] {done}/{total} {:5.1}s  {what}",
        "#".repeat(filled),
        " ".repeat(WIDTH - filled),
        started.elapsed().as_secs_f64()
    );
    let _ = std::io::stderr().flush();
}

fn measure(cmd: &mut Command) -> Outcome {
    match cmd.output() {
        Ok(out) => {
            let stdout = String::from_utf8_lossy(&out.stdout);
            match outcome_of(&stdout) {
                Outcome::Unavailable(r) if r == "no RESULT line" => {
                    let stderr = String::from_utf8_lossy(&out.stderr);
                    let last = stderr.lines().last().unwrap_or("").trim();
                    Outcome::Unavailable(format!(
                        "{} exited {}: {last}",
                        crate::describe(cmd),
                        out.status
                    ))
                }
                o => o,
            }
        }
        Err(e) => Outcome::Unavailable(format!("cannot run {:?}: {e}", cmd.get_program())),
    }
}

/// Builds `h5chunk-bench` in release mode and returns its path (from cargo's JSON messages,
/// so CARGO_TARGET_DIR is honoured).
fn build_h5chunk_bench(root: &Path) -> Result<PathBuf, String> {
    build_bench_bin(root, "h5chunk-bench")
}

/// Compiles `benches/libhdf5/append_bench.c` with `$CC` (default `cc`) and the flags of
/// pkg-config's `hdf5` (or `hdf5-serial`) package; the error says what is missing.
fn build_libhdf5_bench(root: &Path, out_dir: &Path) -> Result<PathBuf, String> {
    build_c_program(root, out_dir, "append_bench")
}

/// Two rounds of one run merged: each rate its higher value, each time its lower, the append
/// curve of the faster append phase; a measurement beats an unavailable run.
pub fn best(a: Outcome, b: Outcome) -> Outcome {
    let (
        Outcome::Measured {
            fields: fa,
            line: la,
            curve: ca,
        },
        Outcome::Measured {
            fields: fb,
            line: lb,
            curve: cb,
        },
    ) = (&a, &b)
    else {
        return if matches!(a, Outcome::Measured { .. }) {
            a
        } else {
            b
        };
    };
    let b_appends_faster = num(fb, "append_s") < num(fa, "append_s");
    let (mut fields, line, curve) = if b_appends_faster {
        (fb.clone(), lb.clone(), cb.clone())
    } else {
        (fa.clone(), la.clone(), ca.clone())
    };
    for (key, higher) in [
        ("appends_per_s", true),
        ("append_s", false),
        ("lookup_per_s", true),
        ("seq_read_s", false),
    ] {
        if let (Some(x), Some(y)) = (num(fa, key), num(fb, key)) {
            let pick = if (x >= y) == higher {
                &fa[key]
            } else {
                &fb[key]
            };
            fields.insert(key.to_string(), pick.clone());
        }
    }
    Outcome::Measured {
        fields,
        line,
        curve,
    }
}

fn num(fields: &BTreeMap<String, String>, key: &str) -> Option<f64> {
    fields.get(key)?.parse().ok()
}

fn measured<'a>(
    r: &'a Results,
    s: &str,
    i: &str,
    imp: &str,
) -> Option<&'a BTreeMap<String, String>> {
    match r.get(&(s.to_string(), i.to_string(), imp.to_string()))? {
        Outcome::Measured { fields, .. } => Some(fields),
        Outcome::Unavailable(_) => None,
    }
}

/// `12345.6` as `12,346`.
fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", x.max(0.0));
    let mut out = String::new();
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "-".into(),
    }
}

/// Microseconds per operation at `rate` operations per second.
fn micros(rate: Option<f64>) -> String {
    match rate {
        Some(r) if r > 0.0 => format!("{:.2}", 1e6 / r),
        _ => "n/a".into(),
    }
}

/// The table: per scenario and index, appends/s of both and their ratio (h5chunk / libhdf5),
/// lookups/s and ratio, h5chunk's metadata reads per cold lookup, file bytes and index
/// metadata bytes per chunk of both; then the reasons for missing cells.
pub fn table(
    cases: &[(String, String)],
    r: &Results,
    n: u64,
    chunk_bytes: u64,
    repeat: u32,
    libhdf5_missing: Option<&String>,
) -> String {
    let header = [
        "scenario",
        "index",
        "append/s h5c",
        "append/s hdf5",
        "ratio",
        "us/app h5c",
        "us/app hdf5",
        "lookup/s h5c",
        "lookup/s hdf5",
        "ratio",
        "us/lkp h5c",
        "us/lkp hdf5",
        "reads/cold",
        "file B h5c",
        "file B hdf5",
        "meta B/chk h5c",
        "meta B/chk hdf5",
    ];
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut notes = Vec::new();
    for (s, i) in cases {
        let ours = measured(r, s, i, "h5chunk");
        let theirs = measured(r, s, i, "libhdf5");
        let get = |f: Option<&BTreeMap<String, String>>, k: &str| f.and_then(|f| num(f, k));
        let cell = |f: Option<&BTreeMap<String, String>>, k: &str| {
            get(f, k).map(thousands).unwrap_or_else(|| "n/a".into())
        };
        let meta = |f: Option<&BTreeMap<String, String>>| {
            get(f, "meta_bytes_per_chunk")
                .map(|m| format!("{m:.2}"))
                .unwrap_or_else(|| "n/a".into())
        };
        rows.push(vec![
            s.clone(),
            i.clone(),
            cell(ours, "appends_per_s"),
            cell(theirs, "appends_per_s"),
            ratio(get(ours, "appends_per_s"), get(theirs, "appends_per_s")),
            micros(get(ours, "appends_per_s")),
            micros(get(theirs, "appends_per_s")),
            cell(ours, "lookup_per_s"),
            cell(theirs, "lookup_per_s"),
            ratio(get(ours, "lookup_per_s"), get(theirs, "lookup_per_s")),
            micros(get(ours, "lookup_per_s")),
            micros(get(theirs, "lookup_per_s")),
            ours.and_then(|f| f.get("reads_per_lookup").cloned())
                .unwrap_or_else(|| "n/a".into()),
            cell(ours, "file_bytes"),
            cell(theirs, "file_bytes"),
            meta(ours),
            meta(theirs),
        ]);
        for imp in IMPLS {
            if let Some(Outcome::Unavailable(why)) = r.get(&(s.clone(), i.clone(), imp.to_string()))
            {
                if imp == "libhdf5" && libhdf5_missing.is_some() {
                    continue;
                }
                notes.push(format!("  {s} {i} {imp}: {why}"));
            }
        }
    }
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.len());
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "chunk-index append benchmark: n={n} appends of {chunk_bytes}-byte chunks per run, \
         best of {repeat}; ratio = h5chunk / libhdf5"
    );
    if let Some(why) = libhdf5_missing {
        let _ = writeln!(out, "libhdf5: not available ({why}); h5chunk alone");
    }
    let line = |cells: &[String]| {
        let mut l = String::new();
        for (k, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if k < 2 {
                let _ = write!(l, "{c:<w$}  ");
            } else {
                let _ = write!(l, "{c:>w$}  ");
            }
        }
        l.trim_end().to_string()
    };
    let head: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let _ = writeln!(out, "{}", line(&head));
    let _ = writeln!(
        out,
        "{}",
        "-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1))
    );
    for row in &rows {
        let _ = writeln!(out, "{}", line(row));
    }
    if !notes.is_empty() {
        let _ = writeln!(out, "unavailable:");
        for n in notes {
            let _ = writeln!(out, "{n}");
        }
    }
    out
}

/// One CSV row per run, measured or not.
pub fn csv(r: &Results) -> String {
    const COLUMNS: [&str; 9] = [
        "append_s",
        "appends_per_s",
        "lookup_per_s",
        "reads_per_lookup",
        "seq_read_s",
        "file_bytes",
        "meta_bytes_per_chunk",
        "n",
        "chunk_bytes",
    ];
    let mut out = format!("impl,scenario,index,{},unavailable\n", COLUMNS.join(","));
    for ((s, i, imp), o) in r {
        let _ = write!(out, "{imp},{s},{i}");
        match o {
            Outcome::Measured { fields, .. } => {
                for c in COLUMNS {
                    let _ = write!(out, ",{}", fields.get(c).map(String::as_str).unwrap_or(""));
                }
                out.push_str(",\n");
            }
            Outcome::Unavailable(why) => {
                out.push_str(&",".repeat(COLUMNS.len()));
                let _ = writeln!(out, ",\"{}\"", why.replace('"', "'"));
            }
        }
    }
    out
}

/// Append time against chunks appended, one panel per scenario (as the paper's figure 5),
/// one line per index and implementation: colour by index, solid h5chunk, dashed libhdf5.
pub fn svg(cases: &[(String, String)], r: &Results, n: u64) -> String {
    const PW: f64 = 520.0;
    const PH: f64 = 260.0;
    const ML: f64 = 70.0;
    const MT: f64 = 40.0;
    const GAP: f64 = 70.0;
    let colour = |index: &str| match index {
        "btree1" => "#1f77b4",
        "earray" => "#d62728",
        "btree2" => "#2ca02c",
        "skiplist" => "#9467bd",
        "farray" => "#ff7f0e",
        "implicit" => "#8c564b",
        _ => "#333333",
    };
    let mut scenarios: Vec<&str> = Vec::new();
    for (s, _) in cases {
        if !scenarios.contains(&s.as_str()) {
            scenarios.push(s);
        }
    }
    let height = MT + scenarios.len() as f64 * (PH + GAP);
    let width = ML + PW + 200.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(
        out,
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{ML}\" y=\"22\" \
         font-size=\"15\">Append time against chunks appended (solid h5chunk, dashed libhdf5)</text>"
    );
    for (k, s) in scenarios.iter().enumerate() {
        let top = MT + k as f64 * (PH + GAP);
        let lines: Vec<(&str, &str, &Curve)> = cases
            .iter()
            .filter(|(cs, _)| cs == s)
            .flat_map(|(_, i)| IMPLS.iter().map(move |imp| (i.as_str(), *imp)))
            .filter_map(
                |(i, imp)| match r.get(&(s.to_string(), i.to_string(), imp.to_string())) {
                    Some(Outcome::Measured { curve, .. }) if !curve.is_empty() => {
                        Some((i, imp, curve))
                    }
                    _ => None,
                },
            )
            .collect();
        let tmax = lines
            .iter()
            .flat_map(|(_, _, c)| c.iter().map(|p| p.1))
            .fold(0.0f64, f64::max)
            .max(1e-6);
        let x = |i: u64| ML + PW * i as f64 / n.max(1) as f64;
        let y = |t: f64| top + PH - PH * t / tmax;
        let _ = writeln!(
            out,
            "<text x=\"{ML}\" y=\"{:.1}\" font-weight=\"bold\">{s}</text>\n\
             <rect x=\"{ML}\" y=\"{top}\" width=\"{PW}\" height=\"{PH}\" fill=\"none\" stroke=\"#999\"/>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{tmax:.3} s</text>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">0</text>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{n} chunks</text>",
            top - 6.0,
            ML - 6.0,
            top + 10.0,
            ML - 6.0,
            top + PH,
            ML + PW,
            top + PH + 16.0,
        );
        for (row, (i, imp, curve)) in lines.iter().enumerate() {
            let mut d = format!("M{:.1},{:.1}", x(0), y(0.0));
            for &(c, t) in curve.iter() {
                let _ = write!(d, " L{:.1},{:.1}", x(c), y(t));
            }
            let dash = if *imp == "libhdf5" {
                " stroke-dasharray=\"6,4\""
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "<path d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\"{dash}/>",
                colour(i)
            );
            let ly = top + 14.0 + 16.0 * row as f64;
            let lx = ML + PW + 12.0;
            let _ = writeln!(
                out,
                "<line x1=\"{lx}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{}\" \
                 stroke-width=\"1.8\"{dash}/><text x=\"{:.1}\" y=\"{ly:.1}\">{i} {imp}</text>",
                ly - 4.0,
                lx + 28.0,
                ly - 4.0,
                colour(i),
                lx + 34.0
            );
        }
    }
    out.push_str("</svg>\n");
    out
}

/// `cargo xtask bench --swmr`: `h5chunk-swmr bench` (SWMR writers' appends/s, h5chunk and
/// `benches/libhdf5/swmr_writer.c`, SWMR on and off; polling readers' bytes and reads per
/// refresh and latency, h5chunk and h5py), with its output in `target/bench/swmr.txt`. Extra
/// arguments go to `h5chunk-swmr bench` (`--n`, `--chunk`, `--per-flush`, `--repeat`,
/// `--scenarios`).
fn swmr(root: &Path, args: &[String]) -> TaskResult {
    let out_dir = root.join("target").join("bench");
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let python = crate::fixtures::ensure_venv(root)?;
    let exe = build_bench_bin(root, "h5chunk-swmr")?;
    let c = build_c_program(root, &out_dir, "swmr_writer")?;
    let out = Command::new(&exe)
        .arg("bench")
        .args(["--python".as_ref(), python.as_os_str()])
        .args(["--c-writer".as_ref(), c.as_os_str()])
        .arg("--dir")
        .arg(out_dir.join("swmr"))
        .args(args)
        .output()
        .map_err(|e| format!("{}: {e}", exe.display()))?;
    std::io::stderr().write_all(&out.stderr).ok();
    report(&out, &out_dir.join("swmr.txt"), "swmr", "SWMR")
}

/// Print a benchmark program's table (its output less the `RESULT` lines), keep all of its
/// output in `path`, and fail when the program said a done-when line is not met.
fn report(out: &std::process::Output, path: &Path, verb: &str, what: &str) -> TaskResult {
    let text = String::from_utf8_lossy(&out.stdout);
    let table: String = text
        .lines()
        .filter(|l| !l.starts_with("RESULT "))
        .map(|l| format!("{l}\n"))
        .collect();
    print!("{table}");
    std::fs::write(path, text.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("xtask bench --{verb}: wrote {}", path.display());
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "a done-when line of the {what} benchmark is not met (see the table)"
        ))
    }
}

/// `cargo xtask bench --refs`: `benches/refs/refs_bench.py` with the venv's Python (h5py
/// writes the files, kerchunk is the comparison) and the release `h5chunk` binary; its table
/// in `target/bench/refs.txt`. Extra arguments go to the script (`--chunks N`, `--kinds`,
/// `--dask-gib G`).
fn refs(root: &Path, args: &[String]) -> TaskResult {
    let out_dir = root.join("target").join("bench");
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let python = crate::fixtures::ensure_venv(root)?;
    let exe = build_release_bin(root, "h5chunk-cli", "h5chunk")?;
    let script = root.join("benches").join("refs").join("refs_bench.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg("--h5chunk")
        .arg(&exe)
        .arg("--dir")
        .arg(out_dir.join("refs"))
        .args(args)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("{}: {e}", python.display()))?;
    report(&out, &out_dir.join("refs.txt"), "refs", "references")
}

#[cfg(test)]
mod tests {
    use super::*;

    const OURS: &str = "CURVE impl=h5chunk scenario=s1 index=earray n=4 chunk_bytes=1 \
                        points=2:0.001000,4:0.002000\n\
                        RESULT impl=h5chunk scenario=s1 index=earray n=4 chunk_bytes=1 \
                        append_s=0.002 appends_per_s=2000.0 lookup_per_s=30000.0 \
                        reads_per_lookup=4.00 seq_read_s=0.001 file_bytes=4096 \
                        meta_bytes_per_chunk=8.32\n";

    #[test]
    fn parses_result_and_curve_lines() {
        let Outcome::Measured {
            fields,
            line,
            curve,
        } = outcome_of(OURS)
        else {
            panic!("no measurement in {OURS}");
        };
        assert_eq!(fields["index"], "earray");
        assert_eq!(fields["appends_per_s"], "2000.0");
        assert_eq!(fields["reads_per_lookup"], "4.00");
        assert_eq!(curve, vec![(2, 0.001), (4, 0.002)]);
        assert!(
            line.starts_with("RESULT impl=h5chunk scenario=s1 index=earray n=4"),
            "{line}"
        );
        assert_eq!(parse_line("test result: ok"), None);
    }

    #[test]
    fn unavailable_reason_keeps_its_spaces() {
        let o = outcome_of("UNAVAILABLE impl=libhdf5 reason=the skip list is ours\n");
        assert_eq!(o, Outcome::Unavailable("the skip list is ours".into()));
        assert_eq!(
            outcome_of(""),
            Outcome::Unavailable("no RESULT line".into())
        );
    }

    #[test]
    fn table_shows_ratios_and_missing_libhdf5() {
        let mut r = Results::new();
        r.insert(
            ("s1".into(), "earray".into(), "h5chunk".into()),
            outcome_of(OURS),
        );
        let theirs = OURS
            .replace("impl=h5chunk", "impl=libhdf5")
            .replace("appends_per_s=2000.0", "appends_per_s=1000.0")
            .replace("reads_per_lookup=4.00", "reads_per_lookup=na");
        r.insert(
            ("s1".into(), "earray".into(), "libhdf5".into()),
            outcome_of(&theirs),
        );
        let cases = vec![("s1".to_string(), "earray".to_string())];
        let t = table(&cases, &r, 4, 1, 1, None);
        let row = t
            .lines()
            .find(|l| l.starts_with("s1"))
            .expect("a row for s1");
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[..5], ["s1", "earray", "2,000", "1,000", "2.00x"]);
        // Microseconds per append of both, next to the rates.
        assert_eq!(cells[5..7], ["500.00", "1000.00"]);
        assert_eq!(cells[9], "1.00x");
        assert_eq!(cells[12], "4.00");

        r.insert(
            ("s1".into(), "earray".into(), "libhdf5".into()),
            Outcome::Unavailable("libhdf5 not available: no cc".into()),
        );
        let why = "no C compiler `cc`".to_string();
        let t = table(&cases, &r, 4, 1, 1, Some(&why));
        assert!(
            t.contains("libhdf5: not available (no C compiler `cc`); h5chunk alone"),
            "{t}"
        );
        let row = t
            .lines()
            .find(|l| l.starts_with("s1"))
            .expect("a row for s1");
        assert_eq!(row.split_whitespace().nth(3), Some("n/a"));
        assert!(!t.contains("unavailable:"), "{t}");
    }

    #[test]
    fn best_keeps_each_figures_best_round() {
        let slow = OURS
            .replace("append_s=0.002", "append_s=0.004")
            .replace("appends_per_s=2000.0", "appends_per_s=1000.0")
            .replace("lookup_per_s=30000.0", "lookup_per_s=40000.0");
        let merged = best(outcome_of(OURS), outcome_of(&slow));
        let Outcome::Measured { fields, .. } = &merged else {
            panic!("no measurement: {merged:?}");
        };
        assert_eq!(fields["appends_per_s"], "2000.0");
        assert_eq!(fields["append_s"], "0.002");
        assert_eq!(fields["lookup_per_s"], "40000.0");
        let gone = Outcome::Unavailable("crashed".into());
        assert_eq!(best(gone.clone(), outcome_of(OURS)), outcome_of(OURS));
        assert_eq!(best(gone.clone(), gone.clone()), gone);
    }

    #[test]
    fn options_select_cases() {
        let args: Vec<String> = [
            "--scenario",
            "s3x,fixed",
            "--index",
            "btree1",
            "--n",
            "1_000",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let o = parse_options(&args).expect("valid options");
        assert_eq!(o.n, 1000);
        assert_eq!(
            cases(&o),
            vec![
                ("s3x".into(), "btree1".into()),
                ("fixed".into(), "btree1".into())
            ]
        );
        assert_eq!(
            parse_options(&["--full".to_string()]).map(|o| o.n),
            Ok(FULL_N)
        );
        assert!(parse_options(&["--scenario".to_string(), "s9".to_string()]).is_err());
    }

    #[test]
    fn csv_has_a_row_per_run() {
        let mut r = Results::new();
        r.insert(
            ("s1".into(), "earray".into(), "h5chunk".into()),
            outcome_of(OURS),
        );
        r.insert(
            ("s1".into(), "skiplist".into(), "libhdf5".into()),
            Outcome::Unavailable("not in libhdf5".into()),
        );
        let text = csv(&r);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(
            lines[1].starts_with("h5chunk,s1,earray,0.002,2000.0,"),
            "{}",
            lines[1]
        );
        assert!(lines[2].ends_with(",\"not in libhdf5\""), "{}", lines[2]);
        assert_eq!(lines[1].split(',').count(), lines[0].split(',').count());
        assert_eq!(lines[2].split(',').count(), lines[0].split(',').count());
    }
}
