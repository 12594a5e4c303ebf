//! The SWMR soak (`cargo xtask swmr-soak`, and its short run inside `cargo xtask test`): an
//! h5chunk SWMR writer appends to a dataset and flushes, while reader processes, h5chunk ones
//! (this program's `read` command) and h5py ones (`h5py.File(path, 'r', swmr=True)` with
//! `dataset.refresh()`), follow it and check every element they can see.
//!
//! Every element's value is a function of its coordinates (`i * 1_000_003` in one dimension,
//! `i * 1_000_003 + j` in two, `i * 1_000_003 + j * 1_009 + k` in three), so a reader checks
//! all it sees: after each refresh it reads the part of the extent that is new to it. A reader
//! also checks that the extent it sees never shrinks and never passes the extent the writer
//! announced before its latest flush (the writer writes that extent to a side file, then
//! flushes). The fixed-array scenario fills a fixed extent row by row: nothing gates what a
//! reader sees there (libhdf5 too writes a chunk whenever its chunk cache evicts it), so a
//! reader checks that every element holds its value or the fill value, and that the rows it
//! sees written never pass the rows the writer announced it would write before its next
//! announcement.
//!
//! libhdf5's own shrink and sparse scenarios (`test/swmr_remove_*`, `test/swmr_sparse_*`) are
//! re-expressed for h5chunk readers: `shrink` appends rows and every fourth step removes two
//! (chunks dropped and cut under the readers), `sparse` grows the extent by four chunks a
//! step and writes one whole chunk at a scattered place. Their readers check a window of the
//! extent that moves with each refresh, every element its value or the fill value, the extent
//! free to shrink.
//!
//! The writer records its metadata writes and checks their order against the flush
//! dependencies after every flush (`h5chunk_cache::check_write_order`). The h5chunk writer
//! runs with the library's default options (`FileOptions { swmr_write: true, .. }`, so
//! durability `sync`), unless `--durability` says otherwise.
//!
//! Besides the readers that follow the whole run, each run opens `--probes P` more reader
//! processes at random instants ([`probe`]): before the first flush completes, between
//! flushes and inside them. Each opens the file once as a SWMR reader (no retry), checks
//! every element it sees, refreshes a few times and exits; the soak counts their opens,
//! failed opens and wrong values, and which opens overlapped a flush.
//!
//! `h5chunk-swmr soak --appends N --readers R [--h5py-readers R] [--probes P] [--scenarios a,b]
//!  [--chunks 1,8192] [--deflate both|on|off] [--per-flush E] [--durability D] [--python PY]
//!  [--dir D]`
//!
//! prints one line per run, a table of the random-instant readers and a summary; exits
//! non-zero on any wrong value, reader error, failed open or write-order violation.
//!
//! The program's parts: [`scenario`] (what is written and what every element holds),
//! [`write`](mod@write) (the writer), [`read`](mod@read) (an h5chunk reader, and the h5py reader's script),
//! [`probe`] (a reader opened at a random instant), [`soak`] (the soak: runs, readers, random
//! instants, kills), [`poll`] and [`bench`](mod@bench) (`cargo xtask bench --swmr`:
//! polling readers and timed writers), [`common`] (what they share).

mod bench;
mod common;
mod poll;
mod probe;
mod read;
mod scenario;
mod soak;
mod write;

use bench::bench_main;
use poll::poll_main;
use probe::probe_main;
use read::read_main;
use soak::soak_main;
use write::write_main;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("read") => read_main(&args[1..]).map(|()| true),
        Some("probe") => probe_main(&args[1..]).map(|()| true),
        Some("soak") => soak_main(&args[1..]),
        Some("write") => write_main(&args[1..]).map(|()| true),
        Some("poll") => poll_main(&args[1..]).map(|()| true),
        Some("bench") => bench_main(&args[1..]),
        _ => Err(
            "usage: h5chunk-swmr soak [options] | read [options] | probe [options] | write PATH \
             SCENARIO .."
                .into(),
        ),
    };
    match result {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::FAILURE,
        Err(e) => {
            eprintln!("h5chunk-swmr: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
