//! h5chunk's side of `cargo xtask bench --filters`. Three modes, each printing one `RESULT`
//! line:
//!
//! - `read FILE THREADS`: opens FILE (filter pool of THREADS threads) and reads dataset `/data`
//!   whole; `read_s` from opening to the last value (best of two, as the reference's),
//!   `checksum` the wrapping sum of the values'
//!   little-endian bytes taken as `u64` words (the reference computes the same over h5py's
//!   read).
//! - `compress SRC DST FILTER THREADS`: reads `/data` of SRC (untimed), then writes it into a
//!   new DST with FILTER (`bitshuffle-lz4`, `lz4`, `zstd`), the same chunks and type, on a pool
//!   of THREADS; `write_s` from creating DST to closing it, `write_faults` the minor page
//!   faults of that span (Linux; 0 elsewhere).
//! - `direct SRC DST COUNT`: takes SRC's stored chunks (pre-compressed frames, one per chunk
//!   along the first dimension) and writes COUNT of them, cycling, with `write_direct_chunk`
//!   into a new DST whose pipeline is SRC's filter; `write_s` from creating DST to closing it.

use std::path::Path;
use std::time::Instant;

use h5chunk::{
    BitshuffleCompression, Dataset, Durability, File, FileOptions, FilterSpec, OpenOptions,
};

fn checksum(bytes: &[u8]) -> u64 {
    bytes
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().unwrap_or([0; 8])))
        .fold(0u64, u64::wrapping_add)
}

fn opts(threads: usize) -> FileOptions {
    FileOptions {
        durability: Durability::Flush,
        threads: Some(threads),
        ..FileOptions::default()
    }
}

fn spec(filter: &str) -> Result<Vec<FilterSpec>, String> {
    Ok(match filter {
        "bitshuffle-lz4" => vec![FilterSpec::Bitshuffle {
            block_size: 0,
            compression: BitshuffleCompression::Lz4,
        }],
        "lz4" => vec![FilterSpec::Lz4(0)],
        "zstd" => vec![FilterSpec::Zstd(3)],
        "deflate" => vec![FilterSpec::Deflate(4)],
        "shuffle-deflate" => vec![FilterSpec::Shuffle, FilterSpec::Deflate(4)],
        "bzip2" => vec![FilterSpec::Bzip2(9)],
        other => return Err(format!("no compress row for filter {other}")),
    })
}

/// A new dataset `/data` in `f` shaped, chunked and typed as `like`, with `filters`.
fn create_like(f: &File, like: &Dataset, filters: Vec<FilterSpec>) -> Result<Dataset, String> {
    let shape = like.shape();
    let chunk = like.chunk().ok_or("the source dataset is not chunked")?;
    let size = like.datatype().element_size();
    macro_rules! make {
        ($t:ty) => {{
            let mut b = f.new_dataset::<$t>().shape(&shape).chunk(&chunk);
            for s in filters {
                b = b.filter(s);
            }
            b.create("data").map_err(|e| e.to_string())
        }};
    }
    match size {
        1 => make!(u8),
        2 => make!(u16),
        4 => make!(u32),
        8 => make!(u64),
        other => Err(format!("no benchmark type of {other} bytes")),
    }
}

fn read(path: &Path, threads: usize) -> Result<String, String> {
    // Best of two, as the reference: the first run also warms the page cache.
    let mut read_s = f64::INFINITY;
    let mut bytes = Vec::new();
    for _ in 0..2 {
        drop(bytes);
        let t0 = Instant::now();
        let read_opts = OpenOptions {
            threads: Some(threads),
            ..OpenOptions::read_only()
        };
        let f = File::open_with(path, read_opts).map_err(|e| e.to_string())?;
        let d = f.dataset("data").map_err(|e| e.to_string())?;
        bytes = d.read_raw().map_err(|e| e.to_string())?;
        read_s = read_s.min(t0.elapsed().as_secs_f64());
    }
    Ok(format!(
        "read_s={read_s:.6} bytes={} checksum={}",
        bytes.len(),
        checksum(&bytes)
    ))
}

/// This process's minor page faults so far (Linux `/proc/self/stat`, field 10), or 0.
fn minor_faults() -> u64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // Fields after the command name (in parentheses): state is field 3, minflt 10.
            let rest = s.get(s.rfind(')')? + 1..)?.to_owned();
            rest.split_whitespace().nth(7)?.parse().ok()
        })
        .unwrap_or(0)
}

fn compress(src: &Path, dst: &Path, filter: &str, threads: usize) -> Result<String, String> {
    let f = File::open(src).map_err(|e| e.to_string())?;
    let like = f.dataset("data").map_err(|e| e.to_string())?;
    let data = like.read_raw().map_err(|e| e.to_string())?;
    let faults0 = minor_faults();
    let t0 = Instant::now();
    let out = File::create_with(dst, opts(threads)).map_err(|e| e.to_string())?;
    let d = create_like(&out, &like, spec(filter)?)?;
    d.write_raw(&data).map_err(|e| e.to_string())?;
    drop(d);
    out.close().map_err(|e| e.to_string())?;
    let write_s = t0.elapsed().as_secs_f64();
    let write_faults = minor_faults().saturating_sub(faults0);
    let stored = std::fs::metadata(dst).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_file(dst);
    Ok(format!(
        "write_s={write_s:.6} bytes={} file_bytes={stored} write_faults={write_faults}",
        data.len()
    ))
}

fn direct(src: &Path, dst: &Path, count: u64) -> Result<String, String> {
    let f = File::open(src).map_err(|e| e.to_string())?;
    let like = f.dataset("data").map_err(|e| e.to_string())?;
    let shape = like.shape();
    let chunk = like.chunk().ok_or("the source dataset is not chunked")?;
    let frames = shape.first().copied().unwrap_or(0);
    let mut stored = Vec::new();
    for i in 0..frames {
        let mut offset = vec![0u64; shape.len()];
        offset[0] = i;
        if let Some(c) = like.read_direct_chunk(&offset).map_err(|e| e.to_string())? {
            stored.push(c);
        }
    }
    if stored.is_empty() || chunk.first() != Some(&1) {
        return Err("the source needs one stored frame per chunk".into());
    }
    let mut out_shape = shape.clone();
    out_shape[0] = count;
    let t0 = Instant::now();
    let out = File::create_with(dst, opts(1)).map_err(|e| e.to_string())?;
    let mut b = out.new_dataset::<u32>().shape(&out_shape).chunk(&chunk);
    b = b.filter(FilterSpec::Bitshuffle {
        block_size: 0,
        compression: BitshuffleCompression::Lz4,
    });
    let d = b.create("data").map_err(|e| e.to_string())?;
    let mut bytes = 0usize;
    for i in 0..count {
        let (frame, mask) = &stored[(i as usize) % stored.len()];
        let mut offset = vec![0u64; out_shape.len()];
        offset[0] = i;
        d.write_direct_chunk(&offset, frame, *mask)
            .map_err(|e| e.to_string())?;
        bytes += frame.len();
    }
    drop(d);
    out.close().map_err(|e| e.to_string())?;
    let write_s = t0.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(dst);
    Ok(format!(
        "write_s={write_s:.6} frames={count} stored_bytes={bytes}"
    ))
}

fn run() -> Result<String, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |s: &str| s.parse::<u64>().map_err(|e| format!("{s}: {e}"));
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["read", file, threads] => read(Path::new(file), num(threads)? as usize),
        ["compress", src, dst, filter, threads] => compress(
            Path::new(src),
            Path::new(dst),
            filter,
            num(threads)? as usize,
        ),
        ["direct", src, dst, count] => direct(Path::new(src), Path::new(dst), num(count)?),
        _ => Err(
            "usage: read FILE THREADS | compress SRC DST FILTER THREADS | \
                  direct SRC DST COUNT"
                .into(),
        ),
    }
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(fields) => {
            println!("RESULT impl=h5chunk {fields}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("h5chunk-filters: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
