//! h5chunk's side of `cargo xtask bench`: one scenario and index per run, printing a `CURVE`
//! line (cumulative append time at intervals) and a `RESULT` line in the format
//! `benches/libhdf5/append_bench.c` also prints.
//!
//! ```text
//! h5chunk-bench --scenario s1 --index earray --n 30000 --chunk-bytes 1 --dir target/bench
//! ```
//!
//! Phases, as the chunk-index paper's §III and issue 11 describe them:
//! 1. append: `n` times extend the dataset by one chunk and write it, then close the file
//!    (timed, close included);
//! 2. lookup: reopen, read one element from each of `k` distinct random chunks (timed);
//! 3. cold lookup: for `m` more distinct chunks, drop every clean metadata entry, read one
//!    element and count the metadata reads the cache did;
//! 4. sequential read: reopen and read every chunk in order, in slabs of [`SLAB_CHUNKS`]
//!    chunks (the staircase of `s3alt` chunk by chunk, since its bounding box is mostly
//!    unwritten fill);
//! 5. file size and index metadata bytes per chunk.
//!
//! `--stop-after append` (or `--append-only`) stops after phase 1, printing an `APPEND` line;
//! `--stop-after lookup` after phase 2, printing a `LOOKUP` line with the lookup count. The two
//! phases are the functions `bench_append_phase` and `bench_lookup_phase`, which
//! `cargo xtask bench --instructions` counts under callgrind (`--toggle-collect`), as it counts
//! their twins in `benches/libhdf5/append_bench.c`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use h5chunk::{File, IndexKind};
use h5chunk_benches::{
    DATASET, Geometry, SLAB_CHUNKS, Scenario, append, create, parse_index, read_one, read_slab,
    sample,
};

/// Points of the append-time curve.
const CURVE_POINTS: u64 = 50;
/// Most warm lookups per run.
const LOOKUPS: u64 = 20_000;
/// Most cold lookups per run.
const COLD_LOOKUPS: u64 = 200;

struct Args {
    scenario: Scenario,
    index: IndexKind,
    n: u64,
    chunk_bytes: u64,
    dir: PathBuf,
    /// Stop after this phase: "append" or "lookup" (for profiling one alone).
    stop_after: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut scenario = None;
    let mut index = None;
    let mut n = 20_000u64;
    let mut chunk_bytes = 1u64;
    let mut dir = std::env::temp_dir();
    let mut stop_after = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--scenario" => {
                let v = value()?;
                scenario = Some(Scenario::parse(&v).ok_or(format!("unknown scenario {v}"))?);
            }
            "--index" => {
                let v = value()?;
                index = Some(parse_index(&v).ok_or(format!("unknown index {v}"))?);
            }
            "--n" => n = value()?.parse().map_err(|e| format!("--n: {e}"))?,
            "--chunk-bytes" => {
                chunk_bytes = value()?
                    .parse()
                    .map_err(|e| format!("--chunk-bytes: {e}"))?
            }
            "--dir" => dir = PathBuf::from(value()?),
            "--append-only" => stop_after = Some("append".to_string()),
            "--stop-after" => {
                let v = value()?;
                if v != "append" && v != "lookup" {
                    return Err(format!("--stop-after takes append or lookup, not {v}"));
                }
                stop_after = Some(v);
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if n == 0 {
        return Err("--n must be at least 1".into());
    }
    Ok(Args {
        scenario: scenario.ok_or("--scenario is required")?,
        index: index.ok_or("--index is required")?,
        n,
        chunk_bytes,
        dir,
        stop_after,
    })
}

fn main() -> ExitCode {
    match parse_args().and_then(|a| run(&a)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // xtask shows this line in the table as the reason the row is missing.
            println!("UNAVAILABLE impl=h5chunk reason={e}");
            eprintln!("h5chunk-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(a: &Args) -> Result<(), String> {
    let g = Geometry::new(a.scenario, a.n, a.chunk_bytes)?;
    std::fs::create_dir_all(&a.dir).map_err(|e| format!("{}: {e}", a.dir.display()))?;
    let path = a.dir.join(format!(
        "h5chunk-{}-{}.h5",
        a.scenario.name(),
        a.index.name()
    ));
    let tag = format!(
        "impl=h5chunk scenario={} index={} n={} chunk_bytes={}",
        a.scenario.name(),
        a.index.name(),
        a.n,
        g.chunk_bytes()
    );

    // 1. Append, close included.
    let (file, ds) = create(&path, &g, a.index)?;
    let mut curve = Vec::with_capacity(CURVE_POINTS as usize + 1);
    let append_s = bench_append_phase(file, ds, &g, a.n, &mut curve)?;
    curve.push((a.n, append_s));
    if a.stop_after.as_deref() == Some("append") {
        println!("APPEND {tag} append_s={append_s:.6}");
        std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok(());
    }
    let file_bytes = std::fs::metadata(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();

    // 2. Warm lookups on distinct random chunks; 3. cold ones on further distinct chunks.
    let cold = COLD_LOOKUPS.min(a.n / 2);
    let k = LOOKUPS.min(a.n - cold);
    let order = sample(a.n, k + cold);
    let file = File::open(&path).map_err(|e| format!("reopen: {e}"))?;
    let ds = file
        .dataset(DATASET)
        .map_err(|e| format!("reopen {DATASET}: {e}"))?;
    let lookup_s = bench_lookup_phase(&ds, &g, &order[..k as usize])?;
    if a.stop_after.as_deref() == Some("lookup") {
        println!("LOOKUP {tag} k={k} lookup_s={lookup_s:.6}");
        drop(ds);
        drop(file);
        std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok(());
    }
    let mut reads = 0u64;
    for &i in &order[k as usize..] {
        file.evict_metadata().map_err(|e| format!("evict: {e}"))?;
        file.reset_cache_stats();
        read_one(&ds, &g, i)?;
        reads += file.cache_stats().total().reads;
    }
    let reads_per_lookup = if cold == 0 {
        "na".to_string()
    } else {
        format!("{:.2}", reads as f64 / cold as f64)
    };
    let meta = ds
        .index_metadata_bytes()
        .map_err(|e| format!("index metadata bytes: {e}"))?;
    drop(ds);
    drop(file);

    // 4. Sequential read on a fresh handle.
    let file = File::open(&path).map_err(|e| format!("reopen: {e}"))?;
    let ds = file
        .dataset(DATASET)
        .map_err(|e| format!("reopen {DATASET}: {e}"))?;
    let t2 = Instant::now();
    if a.scenario == Scenario::S3alt {
        for i in 0..a.n {
            read_one(&ds, &g, i)?;
        }
    } else {
        let mut first = 0;
        while first < a.n {
            let count = SLAB_CHUNKS.min(a.n - first);
            read_slab(&ds, &g, first, count)?;
            first += count;
        }
    }
    let seq_s = t2.elapsed().as_secs_f64();

    let points: Vec<String> = curve.iter().map(|(i, t)| format!("{i}:{t:.6}")).collect();
    println!("CURVE {tag} points={}", points.join(","));
    println!(
        "RESULT {tag} append_s={append_s:.6} appends_per_s={:.1} lookup_per_s={:.1} \
         reads_per_lookup={reads_per_lookup} seq_read_s={seq_s:.6} file_bytes={file_bytes} \
         meta_bytes_per_chunk={:.2}",
        a.n as f64 / append_s,
        k as f64 / lookup_s,
        meta as f64 / a.n as f64,
    );
    std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}

/// Phase 1: `n` appends, then close the file; returns the seconds taken and records the
/// append-time curve. Never inlined: `xtask bench --instructions` counts what runs inside.
#[inline(never)]
fn bench_append_phase(
    file: File,
    ds: h5chunk::Dataset,
    g: &Geometry,
    n: u64,
    curve: &mut Vec<(u64, f64)>,
) -> Result<f64, String> {
    let every = (n / CURVE_POINTS).max(1);
    let mut dims = g.initial_dims();
    let mut buf = Vec::new();
    let t0 = Instant::now();
    for i in 0..n {
        append(&ds, g, i, &mut dims, &mut buf)?;
        if (i + 1) % every == 0 && i + 1 < n {
            curve.push((i + 1, t0.elapsed().as_secs_f64()));
        }
    }
    drop(ds);
    file.close().map_err(|e| format!("close: {e}"))?;
    Ok(t0.elapsed().as_secs_f64())
}

/// Phase 2: one element of each chunk of `order`, on an open handle; the seconds taken. Never
/// inlined, for the same reason.
#[inline(never)]
fn bench_lookup_phase(ds: &h5chunk::Dataset, g: &Geometry, order: &[u64]) -> Result<f64, String> {
    let t1 = Instant::now();
    for &i in order {
        read_one(ds, g, i)?;
    }
    Ok(t1.elapsed().as_secs_f64())
}
