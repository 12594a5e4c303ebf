//! The SWMR writer (`write`): appends, flushes, announces its extent, and checks its write
//! order after every flush.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use h5chunk::{Durability, File, FileOptions, FilterSpec, IndexKind};

use crate::common::{dims_text, wall_us, write_atomically};
use crate::scenario::{FILL, Grow, Scenario, for_each_coord, oracle, scenario};
use crate::soak::RunReport;

/// What `write` is told: the protocol of `benches/libhdf5/swmr_writer.c`.
pub(crate) struct WriteArgs {
    pub(crate) path: PathBuf,
    pub(crate) scenario: Scenario,
    pub(crate) n: u64,
    pub(crate) deflate: bool,
    pub(crate) per_flush: u64,
    pub(crate) bound: PathBuf,
    pub(crate) done: PathBuf,
    pub(crate) swmr: bool,
    /// Record the metadata writes and check their order after every flush.
    pub(crate) trace: bool,
    pub(crate) durability: Durability,
    /// A SWMR writer with the library's default options (`FileOptions { swmr_write: true,
    /// .. }`: default version bounds, [`Durability::Flush`]), as a user's: the soak's; with
    /// `--durability`, that durability instead of the default.
    pub(crate) default_options: bool,
    /// `--durability` was given.
    pub(crate) durability_given: bool,
    /// Append `DIMS\tMICROSECONDS` (wall clock) here as each flush starts.
    pub(crate) flush_log: Option<PathBuf>,
    /// Rows per append along dimension 0 (and per fill step): 1 by default; the benchmark
    /// appends a chunk's rows at a time, the chunk-index paper's unit.
    pub(crate) rows: u64,
    /// Sleep this long after each flush (the polling benchmark: a writer at a steady pace, so
    /// that readers poll while it writes).
    pub(crate) pause: Duration,
    /// No `flushed DIMS` line after each flush (the benchmark's timed writers: the C writer
    /// prints none either, and nobody reads them).
    pub(crate) quiet: bool,
}

pub(crate) fn parse_write(args: &[String]) -> Result<WriteArgs, String> {
    let [
        path,
        sc,
        n,
        e,
        deflate,
        per_flush,
        bound,
        done,
        mode,
        rest @ ..,
    ] = args
    else {
        return Err(
            "write PATH SCENARIO N CHUNK_ELEMS DEFLATE PER_FLUSH BOUND DONE swmr|plain \
                    [--no-trace] [--default-options] [--quiet] [--rows R] [--pause-us US] [--flush-log PATH] \
                    [--durability sync|flush|none]"
                .into(),
        );
    };
    let num = |s: &String| s.parse::<u64>().map_err(|e| format!("{s}: {e}"));
    let n = num(n)?;
    let mut w = WriteArgs {
        path: PathBuf::from(path),
        scenario: scenario(sc, n, num(e)?)?,
        n,
        deflate: deflate == "1",
        per_flush: num(per_flush)?.max(1),
        bound: PathBuf::from(bound),
        done: PathBuf::from(done),
        swmr: mode == "swmr",
        trace: true,
        durability: Durability::Flush,
        default_options: false,
        durability_given: false,
        flush_log: None,
        rows: 1,
        pause: Duration::ZERO,
        quiet: false,
    };
    let mut it = rest.iter();
    while let Some(k) = it.next() {
        match k.as_str() {
            "--no-trace" => w.trace = false,
            "--default-options" => w.default_options = true,
            "--quiet" => w.quiet = true,
            "--pause-us" => {
                w.pause = Duration::from_micros(
                    it.next()
                        .and_then(|v| v.parse().ok())
                        .ok_or("--pause-us needs a number")?,
                );
            }
            "--rows" => {
                w.rows = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&r| r > 0)
                    .ok_or("--rows needs a positive number")?;
            }
            "--flush-log" => {
                w.flush_log = Some(PathBuf::from(it.next().ok_or("--flush-log needs a path")?));
            }
            "--durability" => {
                w.durability_given = true;
                w.durability = match it.next().map(String::as_str) {
                    Some("sync") => Durability::Sync,
                    Some("flush") => Durability::Flush,
                    Some("none") => Durability::None,
                    _ => return Err("--durability sync|flush|none".into()),
                }
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(w)
}

/// The h5chunk writer (`write` command), a process of its own: create the file and the
/// dataset, start SWMR writing, print `ready`, wait for a line on stdin, then append and flush,
/// printing `flushed DIMS\tSTART_US\tEND_US\tELEMENTS` after each flush (what a writer killed
/// mid-run had completed, when the flush ran, and the elements written so far) and a `RESULT`
/// line at the end.
pub(crate) fn write_main(args: &[String]) -> Result<(), String> {
    let w = parse_write(args)?;
    let sc = &w.scenario;
    let (path, done, bound) = (&w.path, &w.done, &w.bound);
    let tag = sc.name;
    let mut out = std::io::stdout();
    let options = if w.default_options && w.swmr {
        // A user's SWMR writer: only `swmr_write` (and the write trace, which records and
        // changes nothing; and the durability when asked) set.
        let defaults = FileOptions::default();
        FileOptions {
            swmr_write: true,
            trace: w.trace,
            durability: if w.durability_given {
                w.durability
            } else {
                defaults.durability
            },
            ..defaults
        }
    } else {
        FileOptions {
            // As the C writer's (and h5py's `libver='latest'`): the same chunk indexes with
            // SWMR on or off.
            bounds: h5chunk::LibverBounds::new(h5chunk::Libver::V110, h5chunk::Libver::Latest)
                .map_err(|e| e.to_string())?,
            swmr_write: w.swmr,
            trace: w.trace,
            durability: w.durability,
            ..FileOptions::default()
        }
    };
    let f = File::create_with(path, options).map_err(|e| format!("create: {e}"))?;
    let mut b = f
        .new_dataset::<i64>()
        .shape(&sc.initial)
        .max_shape(&sc.max)
        .chunk(&sc.chunk)
        .fill_value(FILL);
    if sc.index == IndexKind::SkipList {
        b = b.index(IndexKind::SkipList);
    }
    if w.deflate {
        b = b.filter(FilterSpec::Shuffle).filter(FilterSpec::Deflate(4));
    }
    let d = b.create("x").map_err(|e| format!("create x: {e}"))?;
    if d.index_kind() != Some(sc.index) {
        return Err(format!(
            "{tag}: index {:?}, expected {:?}",
            d.index_kind(),
            sc.index
        ));
    }
    // Dim1 and Alternate start with rows (or a cell) that hold values already.
    let mut dims = sc.initial.clone();
    if sc.grow != Grow::Fill && dims.iter().all(|&x| x > 0) {
        let count = dims.clone();
        let mut v = Vec::new();
        for_each_coord(&vec![0; dims.len()], &count, |c| v.push(oracle(c)));
        d.write_slice(&v, &vec![0; dims.len()], &count, None)
            .map_err(|e| format!("first write: {e}"))?;
    }
    f.flush().map_err(|e| format!("flush: {e}"))?;
    if w.swmr {
        f.start_swmr_write()
            .map_err(|e| format!("start_swmr_write: {e}"))?;
    }
    let swmr = w.swmr;
    // `-`: no announcements (the benchmark has no checking readers).
    let announce = |dims: &[u64]| {
        if swmr && bound.as_os_str() != "-" {
            write_atomically(bound, &dims_text(dims))
        } else {
            Ok(())
        }
    };
    let mut filled = 0u64; // Fill: rows written
    let per_flush = w.per_flush;
    // Fill: the rows written before the next announcement, at most.
    let total_rows = dims[0];
    let ahead = move |filled: u64| vec![(filled + per_flush.div_ceil(8) + 1).min(total_rows), 8];
    announce(&if sc.grow == Grow::Fill {
        ahead(0)
    } else {
        dims.clone()
    })?;

    if swmr {
        writeln!(out, "ready").map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
        let mut go = String::new();
        std::io::stdin()
            .read_line(&mut go)
            .map_err(|e| e.to_string())?;
    }

    let mut rep = RunReport::default();
    let mut violations = 0u64;
    let mut calls = 0u64;
    let started = Instant::now();
    let mut since_flush = 0u64;
    let mut row = Vec::new();
    let trace = w.trace;
    let pause = w.pause;
    let quiet = w.quiet;
    let mut log = match &w.flush_log {
        Some(p) => Some(std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?),
        None => None,
    };
    let mut flush = |dims: &[u64], done_dims: &[u64], rep: &mut RunReport| -> Result<(), String> {
        announce(dims)?;
        if let Some(l) = &mut log {
            writeln!(l, "{}\t{}", dims_text(dims), wall_us()).map_err(|e| e.to_string())?;
        }
        let flush_start = wall_us();
        f.flush().map_err(|e| format!("flush: {e}"))?;
        let flush_end = wall_us();
        rep.flushes += 1;
        if trace && let Err(v) = h5chunk_cache::check_write_order(&f.take_write_trace()) {
            violations += 1;
            eprintln!(
                "h5chunk writer: write order after flush {}: {v}",
                rep.flushes
            );
        }
        if swmr && !quiet {
            // The flush's wall-clock interval, for the soak to tell the opens inside one.
            writeln!(
                out,
                "flushed {}\t{flush_start}\t{flush_end}\t{}",
                dims_text(done_dims),
                rep.elements
            )
            .map_err(|e| e.to_string())?;
            out.flush().map_err(|e| e.to_string())?;
        }
        std::thread::sleep(pause);
        Ok(())
    };
    while rep.elements < w.n {
        row.clear();
        match sc.grow {
            Grow::Dim0 => {
                let r = dims[0];
                let width = dims[1..].iter().product::<u64>();
                if dims.len() == 1 {
                    // The common cases, without the general walk's per-element bookkeeping.
                    row.extend((r..r + w.rows).map(|i| oracle(&[i])));
                } else if dims.len() == 2 {
                    let cols = dims[1];
                    for i in r..r + w.rows {
                        row.extend((0..cols).map(|j| oracle(&[i, j])));
                    }
                } else {
                    let mut c = vec![r; dims.len()];
                    let mut tail = dims.clone();
                    tail[0] = w.rows;
                    c[1..].iter_mut().for_each(|x| *x = 0);
                    for_each_coord(&c, &tail, |cc| row.push(oracle(cc)));
                }
                d.append(&row).map_err(|e| format!("append: {e}"))?;
                dims[0] += w.rows;
                rep.elements += width * w.rows;
            }
            Grow::Dim1 => {
                let c = dims[1];
                dims[1] += 1;
                d.resize(&dims).map_err(|e| format!("resize: {e}"))?;
                for_each_coord(&[0, c], &[dims[0], 1], |cc| row.push(oracle(cc)));
                d.write_slice(&row, &[0, c], &[dims[0], 1], None)
                    .map_err(|e| format!("write: {e}"))?;
                rep.elements += dims[0];
            }
            Grow::Alternate => {
                let (start, count) = if dims[0] <= dims[1] {
                    dims[0] += 1;
                    (vec![dims[0] - 1, 0], vec![1, dims[1]])
                } else {
                    dims[1] += 1;
                    (vec![0, dims[1] - 1], vec![dims[0], 1])
                };
                d.resize(&dims).map_err(|e| format!("resize: {e}"))?;
                for_each_coord(&start, &count, |cc| row.push(oracle(cc)));
                d.write_slice(&row, &start, &count, None)
                    .map_err(|e| format!("write: {e}"))?;
                rep.elements += count.iter().product::<u64>();
            }
            Grow::Shrink => {
                if calls % 4 == 3 && dims[0] >= 3 * w.rows {
                    dims[0] -= 2 * w.rows;
                    d.resize(&dims).map_err(|e| format!("shrink: {e}"))?;
                } else {
                    let r = dims[0];
                    row.extend((r..r + w.rows).map(|i| oracle(&[i])));
                    d.append(&row).map_err(|e| format!("append: {e}"))?;
                    dims[0] += w.rows;
                    rep.elements += w.rows;
                }
            }
            Grow::Sparse => {
                let c = sc.chunk[0];
                dims[0] += 4 * c;
                d.resize(&dims).map_err(|e| format!("resize: {e}"))?;
                let at = calls.wrapping_mul(7919) % (dims[0] / c) * c;
                row.extend((at..at + c).map(|i| oracle(&[i])));
                d.write_slice(&row, &[at], &[c], None)
                    .map_err(|e| format!("write: {e}"))?;
                rep.elements += c;
            }
            Grow::Fill => {
                if filled >= dims[0] {
                    break;
                }
                let k = w.rows.min(dims[0] - filled);
                for i in filled..filled + k {
                    row.extend((0..8).map(|j| oracle(&[i, j])));
                }
                d.write_slice(&row, &[filled, 0], &[k, 8], None)
                    .map_err(|e| format!("write: {e}"))?;
                filled += k;
                rep.elements += 8 * k;
            }
        }
        calls += 1;
        since_flush += row.len() as u64;
        if since_flush >= per_flush {
            since_flush = 0;
            let (shown, done_dims) = if sc.grow == Grow::Fill {
                (ahead(filled), vec![filled, 8])
            } else {
                (dims.clone(), dims.clone())
            };
            flush(&shown, &done_dims, &mut rep)?;
        }
    }
    let last = if sc.grow == Grow::Fill {
        vec![filled, 8]
    } else {
        dims.clone()
    };
    flush(&last, &last, &mut rep)?;
    if swmr {
        write_atomically(done, &dims_text(&last))?;
    }
    f.close().map_err(|e| format!("close: {e}"))?;
    rep.seconds = started.elapsed().as_secs_f64();
    println!(
        "RESULT appends={} calls={calls} flushes={} seconds={:.6} violations={violations}",
        rep.elements, rep.flushes, rep.seconds
    );
    Ok(())
}
