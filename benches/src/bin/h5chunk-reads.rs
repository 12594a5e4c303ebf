//! The random-read part of `cargo xtask bench --bulk`: single-element reads of one shared
//! `Dataset` from `--threads` threads, as an analysis script's workers would do them.
//!
//! The file (written once, outside the timing, reused if present): a 2-D `u32` dataset of
//! 2,048 × 2,048 values in 64 × 64 chunks (16 KiB each, unfiltered), value `row * 2048 + col`.
//! Each thread reads `--reads` elements at pseudo-random places with `read_slice_into` and
//! checks every value. Prints one line:
//!
//! `RESULT kind=reads threads=T reads=N seconds=.. reads_per_s=..`

use std::path::PathBuf;
use std::time::Instant;

use h5chunk::{Durability, File, FileOptions, OpenOptions};

const SIDE: u64 = 2048;
const CHUNK: u64 = 64;

fn parse() -> Result<(PathBuf, usize, u64), String> {
    let (mut dir, mut threads, mut reads) = (std::env::temp_dir(), 1usize, 200_000u64);
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--dir" => dir = PathBuf::from(v()?),
            "--threads" => threads = v()?.parse().map_err(|e| format!("--threads: {e}"))?,
            "--reads" => reads = v()?.parse().map_err(|e| format!("--reads: {e}"))?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if threads == 0 || reads == 0 {
        return Err("--threads and --reads must be positive".into());
    }
    Ok((dir, threads, reads))
}

fn make(path: &std::path::Path) -> Result<(), String> {
    if File::open_with(path, OpenOptions::read_only()).is_ok_and(|f| f.dataset("data").is_ok()) {
        return Ok(());
    }
    let opts = FileOptions {
        durability: Durability::Flush,
        ..FileOptions::default()
    };
    let f = File::create_with(path, opts).map_err(|e| e.to_string())?;
    let d = f
        .new_dataset::<u32>()
        .shape(&[SIDE, SIDE])
        .chunk(&[CHUNK, CHUNK])
        .create("data")
        .map_err(|e| e.to_string())?;
    let mut rows = Vec::with_capacity((CHUNK * SIDE) as usize);
    for band in 0..SIDE / CHUNK {
        rows.clear();
        rows.extend((band * CHUNK * SIDE..(band + 1) * CHUNK * SIDE).map(|v| v as u32));
        d.write_slice(&rows, &[band * CHUNK, 0], &[CHUNK, SIDE], None)
            .map_err(|e| e.to_string())?;
    }
    drop(d);
    f.close().map_err(|e| e.to_string())
}

/// xorshift64*: the same places in every run.
fn next(s: &mut u64) -> u64 {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    s.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

fn run() -> Result<(), String> {
    let (dir, threads, reads) = parse()?;
    let path = dir.join("reads_h5chunk.h5");
    make(&path)?;
    let f = File::open_with(&path, OpenOptions::read_only()).map_err(|e| e.to_string())?;
    let d = f.dataset("data").map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let d = d.clone();
                let path = path.clone();
                s.spawn(move || -> Result<(), String> {
                    // `H5CHUNK_READS_SEPARATE`: each thread its own `File` (a comparison).
                    let own;
                    let d = if std::env::var_os("H5CHUNK_READS_SEPARATE").is_some() {
                        own = File::open_with(&path, OpenOptions::read_only())
                            .and_then(|f| f.dataset("data"))
                            .map_err(|e| e.to_string())?;
                        &own
                    } else {
                        &d
                    };
                    let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ (t as u64 + 1);
                    let mut out = [0u32];
                    for _ in 0..reads {
                        let x = next(&mut seed);
                        let (r, c) = ((x >> 11) % SIDE, (x >> 37) % SIDE);
                        d.read_slice_into(&[r, c], &[1, 1], None, &mut out)
                            .map_err(|e| format!("read ({r}, {c}): {e}"))?;
                        if u64::from(out[0]) != r * SIDE + c {
                            return Err(format!("({r}, {c}) reads {}", out[0]));
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        h5chunk_benches::join_all(handles, "reader")
    })?;
    let secs = t0.elapsed().as_secs_f64();
    let total = reads * threads as u64;
    println!(
        "RESULT kind=reads threads={threads} reads={total} seconds={secs:.6} reads_per_s={:.0}",
        total as f64 / secs
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("h5chunk-reads: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
