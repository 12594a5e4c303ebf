//! h5chunk's side of `cargo xtask bench --bulk`: write, then read back, a 2-D float32 dataset of
//! `--mib` MiB in 1 MiB chunks (256 rows of 1,024 values), unfiltered or with shuffle + deflate
//! level 4, from `--threads` threads (each writes and reads its own whole-chunk row slabs of the
//! one shared `Dataset`). Prints one line:
//!
//! `RESULT impl=h5chunk filter=F threads=T mib=N write_s=.. read_s=.. peak_rss_kib=..`
//!
//! The write is timed from creating the file to closing it (every chunk compressed and in the
//! file); the read from opening it to the last value, which is checked. Flushes use
//! `Durability::Flush` (crash-atomic, no fsync), as libhdf5 does not fsync either.

use std::path::PathBuf;
use std::time::Instant;

use zerocopy::IntoBytes;

use h5chunk::{Durability, File, FileOptions, FilterSpec, OpenOptions};
use h5chunk_benches::bulk::{COLS, ROWS_PER_CHUNK, row_values};

struct Args {
    dir: PathBuf,
    mib: u64,
    threads: usize,
    deflate: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        dir: std::env::temp_dir(),
        mib: 1024,
        threads: 1,
        deflate: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--dir" => a.dir = PathBuf::from(v()?),
            "--mib" => a.mib = v()?.parse().map_err(|e| format!("--mib: {e}"))?,
            "--threads" => a.threads = v()?.parse().map_err(|e| format!("--threads: {e}"))?,
            "--filter" => {
                a.deflate = match v()?.as_str() {
                    "none" => false,
                    "deflate" => true,
                    other => return Err(format!("--filter {other}: none or deflate")),
                }
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.threads == 0 || a.mib == 0 {
        return Err("--threads and --mib must be positive".into());
    }
    Ok(a)
}

/// The process's peak resident set (`VmHWM`), in KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The chunk rows (slabs of `ROWS_PER_CHUNK` rows) thread `t` of `threads` handles.
fn slabs(total: u64, t: usize, threads: usize) -> impl Iterator<Item = u64> {
    (0..total).filter(move |s| (*s as usize) % threads == t)
}

fn run(a: &Args) -> Result<(), String> {
    let chunks = a.mib; // one chunk per MiB
    let rows = chunks * ROWS_PER_CHUNK;
    let filter = if a.deflate { "deflate" } else { "none" };
    let path = a
        .dir
        .join(format!("bulk_h5chunk_{filter}_{}.h5", a.threads));

    let t0 = Instant::now();
    // `--threads 1` is h5chunk on one thread throughout: no filter pool either.
    let opts = FileOptions {
        durability: Durability::Flush,
        threads: Some(a.threads),
        ..FileOptions::default()
    };
    let f = File::create_with(&path, opts).map_err(|e| e.to_string())?;
    let mut b = f
        .new_dataset::<f32>()
        .shape(&[rows, COLS])
        .chunk(&[ROWS_PER_CHUNK, COLS]);
    if a.deflate {
        b = b.filter(FilterSpec::Shuffle).filter(FilterSpec::Deflate(4));
    }
    let d = b.create("data").map_err(|e| e.to_string())?;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..a.threads)
            .map(|t| {
                let d = d.clone();
                s.spawn(move || -> Result<(), String> {
                    let mut buf = Vec::new();
                    for slab in slabs(chunks, t, a.threads) {
                        buf.clear();
                        for r in slab * ROWS_PER_CHUNK..(slab + 1) * ROWS_PER_CHUNK {
                            row_values(r, &mut buf);
                        }
                        d.write_slice(
                            &buf,
                            &[slab * ROWS_PER_CHUNK, 0],
                            &[ROWS_PER_CHUNK, COLS],
                            None,
                        )
                        .map_err(|e| format!("write slab {slab}: {e}"))?;
                    }
                    Ok(())
                })
            })
            .collect();
        h5chunk_benches::join_all(handles, "writer")
    })?;
    drop(d);
    f.close().map_err(|e| e.to_string())?;
    let write_s = t0.elapsed().as_secs_f64();
    let rss_write = peak_rss_kib();

    let t1 = Instant::now();
    let read_opts = OpenOptions {
        threads: Some(a.threads),
        ..OpenOptions::read_only()
    };
    let f = File::open_with(&path, read_opts).map_err(|e| e.to_string())?;
    let d = f.dataset("data").map_err(|e| e.to_string())?;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..a.threads)
            .map(|t| {
                let d = d.clone();
                s.spawn(move || -> Result<(), String> {
                    // Into one buffer, reused, as the C program reads into its `buf`.
                    let mut want = Vec::new();
                    let mut got = vec![0f32; (ROWS_PER_CHUNK * COLS) as usize];
                    for slab in slabs(chunks, t, a.threads) {
                        d.read_slice_into(
                            &[slab * ROWS_PER_CHUNK, 0],
                            &[ROWS_PER_CHUNK, COLS],
                            None,
                            &mut got,
                        )
                        .map_err(|e| format!("read slab {slab}: {e}"))?;
                        want.clear();
                        for r in slab * ROWS_PER_CHUNK..(slab + 1) * ROWS_PER_CHUNK {
                            row_values(r, &mut want);
                        }
                        // Bytes compared, as the C program's `memcmp`.
                        if got.as_bytes() != want.as_bytes() {
                            return Err(format!("slab {slab} reads back different values"));
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        h5chunk_benches::join_all(handles, "reader")
    })?;
    let read_s = t1.elapsed().as_secs_f64();
    let file_bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    drop(d);
    drop(f);
    let _ = std::fs::remove_file(&path);
    println!(
        "RESULT impl=h5chunk filter={filter} threads={} mib={} write_s={write_s:.6} \
         read_s={read_s:.6} file_bytes={file_bytes} peak_rss_write_kib={rss_write} \
         peak_rss_kib={}",
        a.threads,
        a.mib,
        peak_rss_kib()
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    match parse().and_then(|a| run(&a)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("h5chunk-bulk: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
