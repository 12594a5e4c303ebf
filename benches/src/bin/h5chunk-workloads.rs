//! h5chunk's side of `cargo xtask bench --workloads`: one user-shaped workload per run, timed,
//! with h5chunk's default options unless `--durability` says otherwise. The h5py script
//! (`benches/workloads/workloads_bench.py`) and the C program (`benches/libhdf5/workloads_bench.c`)
//! do the same operations on the same values and print the same line:
//!
//! `RESULT impl=h5chunk workload=W durability=D seconds=S check=C`
//!
//! `check` is a sum of what was read back (or the file's size class for writes), equal across
//! the three programs when they agree on the values.
//!
//! Workloads (sizes from the arguments, so `--quick` can shrink them):
//! - `logger N`: N appends of one row of 8 f64 to an extendible dataset with chunks of 1,024
//!   rows, a file flush every 100 appends, then close.
//! - `frames N SIDE`: N frames SIDE×SIDE u16, shuffle + deflate 4, one frame a chunk, appended
//!   one at a time along an unlimited first dimension, then close.
//! - `bulk SIDE CHUNK`: one SIDE×SIDE f32 array written in one call, chunks CHUNK×CHUNK,
//!   unfiltered, then close (the values are made before the clock starts).
//! - `read SIDE CHUNK`: open the `bulk` file and read it whole in one call.
//! - `windows N SIDE`: open the `bulk` file and read N random 64×64 windows (a fixed LCG).

use std::path::{Path, PathBuf};
use std::time::Instant;

use h5chunk::{Durability, File, FileOptions, FilterSpec, OpenOptions};

/// Rows of 8 f64 per logger chunk.
const LOGGER_CHUNK: u64 = 1024;
/// Appends between two flushes in the logger.
const LOGGER_FLUSH: u64 = 100;
/// The side of a random window.
const WINDOW: u64 = 64;

struct Args {
    workload: String,
    dir: PathBuf,
    durability: Option<Durability>,
    numbers: Vec<u64>,
}

fn parse() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let workload = it.next().ok_or("usage: WORKLOAD DIR DURABILITY N...")?;
    let dir = PathBuf::from(it.next().ok_or("no DIR")?);
    let durability = match it.next().ok_or("no DURABILITY")?.as_str() {
        "default" => None,
        "sync" => Some(Durability::Sync),
        "flush" => Some(Durability::Flush),
        "none" => Some(Durability::None),
        other => return Err(format!("durability {other}: default, sync, flush or none")),
    };
    let numbers = it
        .map(|v| v.parse::<u64>().map_err(|e| format!("{v}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Args {
        workload,
        dir,
        durability,
        numbers,
    })
}

fn options(d: Option<Durability>) -> FileOptions {
    match d {
        None => FileOptions::default(),
        Some(durability) => FileOptions {
            durability,
            ..FileOptions::default()
        },
    }
}

/// The value at (r, c) of the bulk array (exact in f32 for the sizes used).
pub fn bulk_value(r: u64, c: u64, side: u64) -> f32 {
    ((r * side + c) % 1_000_003) as f32
}

/// The frame pixel at (i, y, x).
fn frame_value(i: u64, y: u64, x: u64) -> u16 {
    ((i * 7 + y * 3 + x) & 0x0fff) as u16
}

/// A 64-bit LCG (Knuth's MMIX constants), the same in the three programs.
fn lcg(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

fn bulk_path(dir: &Path, durability: &str) -> PathBuf {
    dir.join(format!("workloads_h5chunk_{durability}_bulk.h5"))
}

fn need(n: &[u64], k: usize) -> Result<&[u64], String> {
    if n.len() != k || n.contains(&0) {
        return Err(format!("this workload takes {k} positive numbers"));
    }
    Ok(n)
}

fn run(a: &Args) -> Result<(f64, f64), String> {
    let e = |e: h5chunk::Error| e.to_string();
    let dname = match a.durability {
        None => "default",
        Some(Durability::Sync) => "sync",
        Some(Durability::Flush) => "flush",
        Some(Durability::None) => "none",
    };
    match a.workload.as_str() {
        "logger" => {
            let n = need(&a.numbers, 1)?[0];
            let path = a.dir.join(format!("workloads_h5chunk_{dname}_logger.h5"));
            let t0 = Instant::now();
            let f = File::create_with(&path, options(a.durability)).map_err(e)?;
            let d = f
                .new_dataset::<f64>()
                .shape(&[0, 8])
                .max_shape(&[None, Some(8)])
                .chunk(&[LOGGER_CHUNK, 8])
                .create("log")
                .map_err(e)?;
            let mut row = [0f64; 8];
            for i in 0..n {
                for (k, v) in row.iter_mut().enumerate() {
                    *v = i as f64 + k as f64;
                }
                d.append(&row).map_err(e)?;
                if (i + 1) % LOGGER_FLUSH == 0 {
                    f.flush().map_err(e)?;
                }
            }
            drop(d);
            f.close().map_err(e)?;
            let s = t0.elapsed().as_secs_f64();
            let check = check_logger(&path, n)?;
            let _ = std::fs::remove_file(&path);
            Ok((s, check))
        }
        "frames" => {
            let n = need(&a.numbers, 2)?;
            let (frames, side) = (n[0], n[1]);
            let path = a.dir.join(format!("workloads_h5chunk_{dname}_frames.h5"));
            let mut frame = vec![0u16; (side * side) as usize];
            let t0 = Instant::now();
            let f = File::create_with(&path, options(a.durability)).map_err(e)?;
            let d = f
                .new_dataset::<u16>()
                .shape(&[0, side, side])
                .max_shape(&[None, Some(side), Some(side)])
                .chunk(&[1, side, side])
                .filter(FilterSpec::Shuffle)
                .filter(FilterSpec::Deflate(4))
                .create("frames")
                .map_err(e)?;
            for i in 0..frames {
                for y in 0..side {
                    for x in 0..side {
                        frame[(y * side + x) as usize] = frame_value(i, y, x);
                    }
                }
                d.append(&frame).map_err(e)?;
            }
            drop(d);
            f.close().map_err(e)?;
            let s = t0.elapsed().as_secs_f64();
            let f = File::open(&path).map_err(e)?;
            let got: Vec<u16> = f
                .dataset("frames")
                .map_err(e)?
                .read_slice(&[frames - 1, 0, 0], &[1, side, side], None)
                .map_err(e)?;
            drop(f);
            let _ = std::fs::remove_file(&path);
            Ok((s, got.iter().map(|&v| f64::from(v)).sum()))
        }
        "bulk" => {
            let n = need(&a.numbers, 2)?;
            let (side, chunk) = (n[0], n[1]);
            let path = bulk_path(&a.dir, dname);
            let mut data = Vec::with_capacity((side * side) as usize);
            for r in 0..side {
                for c in 0..side {
                    data.push(bulk_value(r, c, side));
                }
            }
            let t0 = Instant::now();
            let f = File::create_with(&path, options(a.durability)).map_err(e)?;
            let d = f
                .new_dataset::<f32>()
                .shape(&[side, side])
                .chunk(&[chunk, chunk])
                .create("data")
                .map_err(e)?;
            d.write(&data).map_err(e)?;
            drop(d);
            f.close().map_err(e)?;
            let s = t0.elapsed().as_secs_f64();
            let bytes = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
            Ok((s, (bytes >> 20) as f64))
        }
        "read" => {
            let n = need(&a.numbers, 2)?;
            let side = n[0];
            let path = bulk_path(&a.dir, dname);
            let mut buf = vec![0f32; (side * side) as usize];
            let t0 = Instant::now();
            let f = File::open_with(&path, OpenOptions::read_only()).map_err(e)?;
            let d = f.dataset("data").map_err(e)?;
            d.read_slice_into(&[0, 0], &[side, side], None, &mut buf)
                .map_err(e)?;
            drop(d);
            drop(f);
            let s = t0.elapsed().as_secs_f64();
            // Every value checked after the clock.
            for r in 0..side {
                for c in 0..side {
                    if buf[(r * side + c) as usize] != bulk_value(r, c, side) {
                        return Err(format!("({r}, {c}) reads back a different value"));
                    }
                }
            }
            Ok((s, buf.iter().map(|&v| f64::from(v)).sum()))
        }
        "windows" => {
            let n = need(&a.numbers, 2)?;
            let (count, side) = (n[0], n[1]);
            let path = bulk_path(&a.dir, dname);
            let mut buf = vec![0f32; (WINDOW * WINDOW) as usize];
            let mut state = 42u64;
            let mut sum = 0f64;
            let t0 = Instant::now();
            let f = File::open_with(&path, OpenOptions::read_only()).map_err(e)?;
            let d = f.dataset("data").map_err(e)?;
            for _ in 0..count {
                let r = lcg(&mut state) % (side - WINDOW + 1);
                let c = lcg(&mut state) % (side - WINDOW + 1);
                d.read_slice_into(&[r, c], &[WINDOW, WINDOW], None, &mut buf)
                    .map_err(e)?;
                sum += f64::from(buf[0]) + f64::from(buf[buf.len() - 1]);
            }
            drop(d);
            drop(f);
            Ok((t0.elapsed().as_secs_f64(), sum))
        }
        "clean" => {
            let _ = std::fs::remove_file(bulk_path(&a.dir, dname));
            Ok((0.0, 0.0))
        }
        other => Err(format!("unknown workload {other}")),
    }
}

/// The logger file's last row, summed (checked to hold `n` rows).
fn check_logger(path: &Path, n: u64) -> Result<f64, String> {
    let f = File::open(path).map_err(|e| e.to_string())?;
    let d = f.dataset("log").map_err(|e| e.to_string())?;
    if d.shape() != [n, 8] {
        return Err(format!("logger shape {:?}, not [{n}, 8]", d.shape()));
    }
    let last: Vec<f64> = d
        .read_slice(&[n - 1, 0], &[1, 8], None)
        .map_err(|e| e.to_string())?;
    Ok(last.iter().sum())
}

fn main() -> std::process::ExitCode {
    let out = parse().and_then(|a| run(&a).map(|r| (a, r)));
    match out {
        Ok((a, (s, check))) => {
            let d = match a.durability {
                None => "default",
                Some(Durability::Sync) => "sync",
                Some(Durability::Flush) => "flush",
                Some(Durability::None) => "none",
            };
            println!(
                "RESULT impl=h5chunk workload={} durability={d} seconds={s:.6} check={check}",
                a.workload
            );
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("h5chunk-workloads: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
