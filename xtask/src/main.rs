//! h5chunk's task runner: `cargo xtask <task>`.
//!
//! A table of tasks, each a function with a one-line help; `cargo xtask help` lists them. CI
//! calls the same tasks a developer calls (`.ci/run` is `cargo xtask test` plus the system
//! packages it needs), so the two never drift. xtask depends on no workspace crate: it only
//! runs cargo, Python, h5dump and the benchmark programs as processes.

mod bench;
mod browser_bench;
mod bulk;
mod cloud_bench;
mod deps;
mod filters;
mod fixtures;
mod fuzz;
mod harness;
mod install;
mod instructions;
#[cfg(test)]
mod interop;
mod modules;
mod python_bench;
mod reach;
mod wasm;
mod workloads;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// What a task returns: `Err` carries the message printed before exiting non-zero.
type TaskResult = Result<(), String>;

/// The end of a benchmark task that compares programs: its rows written to `csv_path`, then an
/// error naming every run that failed and every row whose programs' check figures disagree.
fn bench_verdict(
    task: &str,
    csv_path: &std::path::Path,
    csv: &str,
    mut failures: Vec<String>,
    disagreements: Vec<String>,
) -> TaskResult {
    std::fs::write(csv_path, csv).map_err(|e| format!("{}: {e}", csv_path.display()))?;
    println!("wrote {}", csv_path.display());
    failures.extend(disagreements);
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{task}: {}", failures.join("; ")))
    }
}

struct Task {
    name: &'static str,
    usage: &'static str,
    help: &'static str,
    run: fn(&[String]) -> TaskResult,
}

const TASKS: &[Task] = &[
    Task {
        name: "help",
        usage: "help",
        help: "list the tasks",
        run: help,
    },
    Task {
        name: "test",
        usage: "test [ARGS FOR cargo test...]",
        help: "venv + fresh fixtures in target/, then `cargo test --workspace` requiring interop",
        run: test,
    },
    Task {
        name: "test-python",
        usage: "test-python [ARGS FOR pytest...]",
        help: "build the Python module (crates/python) into the venv with maturin and run its \
               pytest suite against h5py (part of `test`)",
        run: test_python,
    },
    Task {
        name: "gen-fixtures",
        usage: "gen-fixtures [--out DIR] [--small]",
        help: "write the libhdf5 fixtures + manifest.json with h5py (default DIR target/fixtures)",
        run: gen_fixtures,
    },
    Task {
        name: "deps",
        usage: "deps",
        help: "fail if a workspace dependency breaks the layering of docs/STYLE.md, section 1 (the house), a \
               module import circle appears inside any crate, or docs/ARCHITECTURE.md does not \
               name a module",
        run: deps,
    },
    Task {
        name: "lint",
        usage: "lint",
        help: "cargo fmt --check, clippy on all targets with warnings denied, the docs of every \
               crate with every feature (warnings denied), then the library core checked for \
               wasm32-unknown-unknown (installing the target with rustup)",
        run: lint,
    },
    Task {
        name: "wasm",
        usage: "wasm",
        help: "the npm package of crates/wasm (h5chunk for the browser) in crates/wasm/pkg: \
               cargo build --target wasm32-unknown-unknown --release, then wasm-bindgen \
               --target web (installed at the crate's pinned version into target/tools)",
        run: wasm_task,
    },
    Task {
        name: "fuzz",
        usage: "fuzz [--minutes M] [--seed S] [--cases N]",
        help: "seeded mutation campaign over the fixtures through h5chunk ls/check/cat, each run \
               under a memory cap and a timeout; fails on any panic, abort, crash or hang \
               (findings in target/fuzz/findings) and on any file `check` calls clean that \
               `ls` or `cat` refuses (in target/fuzz/missed)",
        run: fuzz,
    },
    Task {
        name: "crash",
        usage: "crash [--kills N] [--durability sync|flush|none]",
        help: "SIGKILL campaign: N kills (default 1000) of an appending writer per chunk index, \
               each file checked with h5chunk and h5py against its last completed flush \
               (`none`: the control without the journal, which reports its losses)",
        run: crash,
    },
    Task {
        name: "swmr-soak",
        usage: "swmr-soak [--appends N] [--readers R] [--h5py-readers R] [--probes P] \
                [--scenarios S,..] [--chunks E,..] [--deflate both|on|off] [--per-flush E] \
                [--durability sync|flush|none] [--writer W] [--kill]",
        help: "an h5chunk SWMR writer with the default options appends N elements per scenario \
               (extensible array 1-D and 2-D, v2 B-tree 2-D along each dimension and \
               alternately, 3-D, fixed array, skip list, shrink, sparse), flushing as it goes, \
               while R h5chunk and R h5py reader processes refresh and check every value they \
               see, and P more h5chunk readers open at random instants (before the first \
               flush, between and inside flushes), check every value, refresh and exit; fails \
               on any failed open, wrong value, reader error or write-order violation \
               (defaults: N 1,000,000, R 5, P 60: 1,200 opens); --writer h5py|c: a libhdf5 \
               writer (h5py, or benches/libhdf5/swmr_writer.c on the system's libhdf5) instead; \
               --kill: SIGKILL the writer at a random point, then check the file after clear",
        run: swmr_soak,
    },
    Task {
        name: "bench",
        usage: "bench [--full] [--instructions] [--bulk [--mib N] [--threads T]] \
                [--filters [--mib N] [--threads T]] \
                [--workloads [--quick] [--rounds N]] [--browser [--quick] [--flushes N]] [--python [--quick] [--rounds N] [--scale F]] [--swmr] \
                [--refs [--chunks N] [--kinds K,..] [--dask-gib G]] \
                [--cloud [--quick] [--dev] [KEY=VALUE..]] [--n N] [--scenario S,..] \
                [--index I,..]",
        help: "the chunk-index paper's append benchmark, h5chunk vs libhdf5 (target/bench/); \
               --instructions counts instructions per append and per lookup under callgrind \
               instead; also --repeat R, --chunk-bytes B; --bulk measures bulk write/read \
               throughput (1 GiB float32, unfiltered and shuffle+deflate, 1 and T threads) \
               against libhdf5 and a dd-style copy (target/bench/bulk.csv); --filters measures \
               every filter's decompression (and bitshuffle/LZ4, LZ4, Zstd compression) MB/s, \
               1 and T threads, and direct chunk writes of pre-compressed 4 MiB frames, against \
               libhdf5 + hdf5plugin through h5py (N MiB per data kind, default 256; \
               target/bench/filters.csv); --swmr measures SWMR \
               writers (h5chunk vs libhdf5's C writer, SWMR on and off) and polling readers \
               (bytes and reads per refresh, flush-to-visible latency; h5chunk vs h5py); \
               --workloads times issue 39's five user-shaped workloads (logger, frames, bulk \
               write, bulk read, random windows) with default options, h5chunk (also with \
               Durability::Sync and ::Flush) vs h5py vs the libhdf5 C API, best of N rounds \
               (target/bench/workloads.csv; --quick: small sizes, one round); \
               --browser compares h5chunk's wasm build with h5wasm (npm, pinned) in one \
               headless Chromium on a 4 GiB remote file (bytes, requests and time to show \
               the tree and read one 1 MiB slice), and times `h5chunk view` following an \
               h5py SWMR writer (flush to row shown, p50 over N flushes; \
               target/bench/browser.csv; --quick: the default polling only, 20 flushes); \
               --python builds the Python module in release and times it against h5py: appends \
               (one row, one chunk), random elements and windows, 1/2/every-core threads reading \
               one dataset, and xarray load() through engine h5chunk vs h5netcdf and netcdf4, \
               best of N rounds, with issue 35's thresholds (target/bench/python.csv; --quick: \
               tiny sizes, dev build, one round; --scale F: the full sizes times F); \
               --refs times kerchunk reference generation for a 1,000,000-chunk dataset of \
               each index kind, `h5chunk refs` vs kerchunk's SingleHdf5ToZarr on the same \
               h5py-written file (seconds, peak RSS), then a dask LocalCluster reading a 2 GiB \
               file from a local S3 server (moto) through each reference set \
               (--dask-gib G; target/bench/refs.txt); --cloud opens, lists and reads one \
               chunk of an ATL03-like h5py granule, its metadata-first paged repack and \
               libhdf5's paged repack through a local S3 (moto) and a local HTTP server behind \
               a proxy adding 20 and 80 ms a request, h5chunk vs h5py over fsspec in each cache \
               mode: GETs, HEADs, bytes, seconds, and issue 36's targets \
               (target/bench/cloud.csv; --quick: a tiny file, 5 ms, test build; --dev: test build)",
        run: bench,
    },
    Task {
        name: "reach",
        usage: "reach [--corpus DIR] [--timeout S]",
        help: "how many datasets h5py (with hdf5plugin) reads each reader reads equal, wrong, \
               refuses (by cause) or crashes on: h5chunk, rust-hdf5, hdf5-pure, pyfive, \
               jsfive, one process per reader and file, on PyTables' and h5py's test files \
               and our fixtures (DIR: default $H5CHUNK_FIXTURES, else target/fixtures); \
               readers installed under target/reach/; table printed, rows in \
               target/reach/reach.csv",
        run: reach,
    },
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((name, rest)) = args.split_first() else {
        print_help();
        return ExitCode::from(2);
    };
    let Some(task) = TASKS.iter().find(|t| t.name == name.as_str()) else {
        eprintln!("xtask: unknown task `{name}`\n");
        print_help();
        return ExitCode::from(2);
    };
    match (task.run)(rest) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask {}: {message}", task.name);
            ExitCode::FAILURE
        }
    }
}

fn print_help() {
    println!("usage: cargo xtask <task> [args]\n\ntasks:");
    let width = TASKS.iter().map(|t| t.usage.len()).max().unwrap_or(0);
    for task in TASKS {
        println!("  {:width$}  {}", task.usage, task.help);
    }
}

fn help(args: &[String]) -> TaskResult {
    no_args(args)?;
    print_help();
    Ok(())
}

fn test(args: &[String]) -> TaskResult {
    let root = workspace_root();
    // h5dump first: it is the one prerequisite xtask cannot install itself.
    let h5dump = find_h5dump().ok_or_else(|| {
        "h5dump not found: `cargo xtask test` compares h5chunk's files with libhdf5's own reader. \
         Install Debian's hdf5-tools (`apt-get install hdf5-tools`) or point H5CHUNK_H5DUMP at an \
         h5dump binary."
            .to_string()
    })?;
    // Chromium: the browser tests of `h5chunk view` drive it headless.
    let chromium = find_chromium().ok_or_else(|| {
        "chromium not found: `cargo xtask test` opens `h5chunk view` in a headless browser. \
         Install Debian's chromium (`apt-get install chromium`) or point H5CHUNK_CHROMIUM at a \
         Chromium binary."
            .to_string()
    })?;
    let python = fixtures::ensure_venv(&root)?;
    let fixtures_dir = root.join("target").join("fixtures");
    fixtures::ensure_fresh(&root, &python, &fixtures_dir)?;

    eprintln!("xtask test: H5CHUNK_FIXTURES={}", fixtures_dir.display());
    eprintln!("xtask test: H5CHUNK_PYTHON={}", python.display());
    eprintln!("xtask test: H5CHUNK_H5DUMP={}", h5dump.display());
    eprintln!("xtask test: H5CHUNK_CHROMIUM={}", chromium.display());
    // The npm package of crates/wasm, whose example page the browser test drives.
    let wasm_pkg = wasm::build(&root)?;
    eprintln!("xtask test: H5CHUNK_WASM_PKG={}", wasm_pkg.display());
    let mut cmd = cargo();
    cmd.current_dir(&root).arg("test");
    // `--workspace` unless the caller picked packages: cargo would otherwise ignore `-p`.
    let picks_packages = args.iter().take_while(|a| a.as_str() != "--").any(|a| {
        matches!(a.as_str(), "-p" | "--package" | "--workspace" | "--all")
            || a.starts_with("--package=")
            || (a.starts_with("-p") && a.len() > 2)
    });
    if !picks_packages {
        cmd.arg("--workspace");
    }
    // Every test binary runs even when one fails, so the summary covers the whole suite.
    cmd.arg("--no-fail-fast");
    // Every optional feature is tested (ndarray support, the cache's fault injection) unless
    // the caller chose features.
    if !args.iter().any(|a| {
        a.starts_with("--features")
            || a == "-F"
            || a.starts_with("--all-features")
            || a == "--no-default-features"
    }) {
        cmd.arg("--all-features");
    }
    cmd.args(args)
        .env("H5CHUNK_REQUIRE_INTEROP", "1")
        .env("H5CHUNK_FIXTURES", &fixtures_dir)
        .env("H5CHUNK_PYTHON", &python)
        .env("H5CHUNK_H5DUMP", &h5dump)
        .env("H5CHUNK_CHROMIUM", &chromium)
        .env("H5CHUNK_WASM_PKG", &wasm_pkg);
    run_tests(&mut cmd)?;
    // The Python module, a workspace of its own, built and tested against h5py.
    python_tests(&root, &python, &[])?;
    // The SWMR soak's short run: every scenario, chunks of 1 element and 64 KiB, with and
    // without deflate, 2 h5chunk and 2 h5py readers each, and 3 readers opened at random
    // instants (about a minute; durability `flush`, for the time).
    eprintln!("xtask test: SWMR soak, short run");
    run_swmr_soak(
        &root,
        &[
            "--appends",
            "20000",
            "--readers",
            "2",
            "--probes",
            "3",
            "--durability",
            "flush",
            "--chunks",
            "1,8192",
            "--deflate",
            "both",
        ],
        &[],
    )?;
    // Readers opened at random instants against writers with the default options (durability
    // `sync`): every scenario, plain and shuffle+deflate, 6 each (120 opens, a few seconds);
    // `cargo xtask swmr-soak` opens 1,200.
    eprintln!("xtask test: SWMR soak, readers at random instants, default options");
    run_swmr_soak(
        &root,
        &[
            "--appends",
            "5000",
            "--per-flush",
            "100",
            "--readers",
            "0",
            "--h5py-readers",
            "0",
            "--probes",
            "6",
            "--chunks",
            "16",
            "--deflate",
            "both",
        ],
        &[],
    )?;
    // The writer killed with SIGKILL at a random point of each run: readers go on reading,
    // and the file reopens after `h5chunk clear` with every flushed value.
    eprintln!("xtask test: SWMR soak, short run, writer killed");
    run_swmr_soak(
        &root,
        &[
            "--kill",
            "--appends",
            "20000",
            "--readers",
            "2",
            "--durability",
            "flush",
            "--chunks",
            "16",
            "--deflate",
            "both",
        ],
        &[],
    )?;
    // The reverse: libhdf5 writers (h5py with libhdf5 2.0, and the C program on the system's
    // libhdf5 1.10), h5chunk readers.
    for writer in ["h5py", "c"] {
        eprintln!("xtask test: SWMR soak, short run, {writer} writer");
        run_swmr_soak(
            &root,
            &[
                "--writer",
                writer,
                "--appends",
                "5000",
                "--readers",
                "2",
                "--h5py-readers",
                "0",
                "--chunks",
                "16",
                "--deflate",
                "both",
            ],
            &[],
        )?;
    }
    // The workloads benchmark at small sizes, one round: proves the verb and its three
    // programs work and agree on the values (a few seconds; the figures mean nothing).
    eprintln!("xtask test: bench --workloads --quick");
    workloads::run_with(&root, &python, &["--quick".to_string()])?;
    // The Python benchmark at tiny sizes, one round, on the module the pytest run built: the
    // h5chunk module, h5py and xarray's engines agree on every row's values (seconds).
    eprintln!("xtask test: bench --python --quick");
    python_bench::quick(&root, &python)?;
    // The browser comparison on its 4 GiB (sparse) file and the live view over 20 flushes
    // (about 30 s): h5chunk's wasm build agrees with h5py and fetches at most 1/20 of the
    // bytes h5wasm does; the page shows a flushed row within 500 ms (p50).
    eprintln!("xtask test: bench --browser --quick");
    browser_bench::quick(&root, &python, &wasm_pkg)?;
    // The cloud benchmark on a tiny granule: moto, the HTTP server, the counting proxy,
    // h5chunk's probe and h5py over fsspec all work and agree (seconds; the figures mean
    // nothing).
    eprintln!("xtask test: bench --cloud --quick");
    cloud_bench::quick(&root, &python)?;
    // The fuzz campaign's smoke run: a fixed, seeded set of mutants (about 15 s); any panic,
    // abort, crash, hang or check miss fails the task. `cargo xtask fuzz --minutes M` is the long one.
    eprintln!("xtask test: fuzz smoke run ({FUZZ_SMOKE_CASES} mutants)");
    fuzz::campaign(
        &root,
        std::time::Duration::from_secs(120),
        Some(FUZZ_SMOKE_CASES),
        1,
    )
}

fn test_python(args: &[String]) -> TaskResult {
    let root = workspace_root();
    let python = fixtures::ensure_venv(&root)?;
    python_tests(&root, &python, args)
}

/// Builds `crates/python` (the `h5chunk` Python module, a workspace of its own that the root
/// excludes) into the venv with `maturin develop`, into `target/python`, then runs its pytest
/// suite there. The dev profile with optimised dependencies: a release build (fat LTO) would
/// take minutes more for nothing the tests need.
fn python_tests(root: &Path, python: &Path, args: &[String]) -> TaskResult {
    let crate_dir = root.join("crates").join("python");
    eprintln!("xtask test: building the Python module (maturin develop)");
    python_bench::build_module(root, python, false)?;
    eprintln!("xtask test: the Python module's tests (pytest, h5py as the oracle)");
    let tmp = root.join("target").join("tmp").join("pytest");
    std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    run(Command::new(python)
        .current_dir(root)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp"])
        .arg(&tmp)
        .arg(crate_dir.join("tests"))
        .args(args))
}

/// Mutants in `cargo xtask test`'s fuzz smoke run.
const FUZZ_SMOKE_CASES: u64 = 600;

/// Runs `cargo test`, passing its output through, and ends with one summary line summed over
/// every test binary (`summary: N passed, N failed[, N skipped]`): cargo's own last line belongs
/// to whichever binary ran last, often a doc-test run of a crate with no doc-tests.
fn run_tests(cmd: &mut Command) -> TaskResult {
    use std::io::{BufRead, BufReader, Write};
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err("cargo test: no output pipes".to_string());
    };
    let skipped = std::thread::spawn(move || {
        let mut skipped = 0u64;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            skipped += u64::from(line.starts_with("SKIPPED"));
            let _ = writeln!(std::io::stderr(), "{line}");
        }
        skipped
    });
    let (mut passed, mut failed) = (0u64, 0u64);
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        if let Some((p, f)) = parse_test_result(&line) {
            passed += p;
            failed += f;
        }
        println!("{line}");
    }
    let status = child.wait().map_err(|e| format!("cargo test: {e}"))?;
    let skipped = skipped.join().unwrap_or(0);
    let tail = if skipped > 0 {
        format!(", {skipped} skipped")
    } else {
        String::new()
    };
    println!("summary: {passed} passed, {failed} failed{tail}");
    if status.success() {
        Ok(())
    } else {
        Err(format!("{} failed ({status})", describe(cmd)))
    }
}

/// The passed and failed counts of a libtest closing line
/// (`test result: ok. 3 passed; 0 failed; 0 ignored; ...`).
fn parse_test_result(line: &str) -> Option<(u64, u64)> {
    let rest = line.strip_prefix("test result: ")?;
    let count = |word: &str| {
        rest.split(';').find_map(|part| {
            part.trim()
                .strip_suffix(word)?
                .trim()
                .rsplit(' ')
                .next()?
                .parse()
                .ok()
        })
    };
    Some((count(" passed")?, count(" failed")?))
}

fn gen_fixtures(args: &[String]) -> TaskResult {
    let root = workspace_root();
    let mut out = root.join("target").join("fixtures");
    let mut small = false;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => {
                let dir = args.next().ok_or("--out needs a directory")?;
                out = std::env::current_dir()
                    .map_err(|e| format!("current directory: {e}"))?
                    .join(dir);
            }
            "--small" => small = true,
            other => {
                return Err(format!(
                    "unknown argument `{other}` (see `cargo xtask help`)"
                ));
            }
        }
    }
    let python = fixtures::ensure_venv(&root)?;
    fixtures::generate(&root, &python, &out, small)
}

fn deps(args: &[String]) -> TaskResult {
    no_args(args)?;
    let root = workspace_root();
    let violations = deps::check_workspace(&root)?;
    let circles = modules::check_workspace(&root)?;
    if violations.is_empty() && circles.is_empty() {
        println!(
            "xtask deps: workspace dependencies follow the layering of docs/STYLE.md, section 1 (the house); \
             no module import circle in any crate, and docs/ARCHITECTURE.md names every room"
        );
        return Ok(());
    }
    for violation in &violations {
        eprintln!("  {violation}");
    }
    for circle in &circles {
        eprintln!("  {circle}");
    }
    Err(format!(
        "{} dependency edge(s) break the layering of docs/STYLE.md, section 1 (the house), {} problem(s) of \
         rooms (import circles, or rooms docs/ARCHITECTURE.md does not name)",
        violations.len(),
        circles.len()
    ))
}

fn lint(args: &[String]) -> TaskResult {
    no_args(args)?;
    let root = workspace_root();
    run(cargo()
        .current_dir(&root)
        .args(["fmt", "--all", "--", "--check"]))?;
    run(cargo().current_dir(&root).args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--",
        "-D",
        "warnings",
    ]))?;
    // The generated docs with every feature on, as docs.rs builds them: a broken link or a
    // doc example that no longer names real API fails here.
    run(cargo()
        .current_dir(&root)
        .env("RUSTDOCFLAGS", "-D warnings")
        .args([
            "doc",
            "--workspace",
            "--lib",
            "--no-deps",
            "--all-features",
            "--quiet",
        ]))?;
    // The Python module is a workspace of its own (it links pyo3 only under maturin), so the
    // workspace-wide commands above skip it: the same checks, through its manifest.
    let python = root.join("crates/python/Cargo.toml");
    run(cargo()
        .current_dir(&root)
        .arg("fmt")
        .arg("--manifest-path")
        .arg(&python)
        .args(["--", "--check"]))?;
    run(cargo()
        .current_dir(&root)
        .arg("clippy")
        .arg("--manifest-path")
        .arg(&python)
        .args(["--all-targets", "--", "-D", "warnings"]))?;
    wasm_check(&root)
}

use wasm::WASM_TARGET;

/// `cargo check` of the library core (format, cache, the structure crates, h5chunk without
/// default features) for WebAssembly, so that file I/O, locks and threads stay behind the
/// `Storage` seam; then crates/wasm's own lints. The target's standard library comes from
/// rustup when it is missing.
fn wasm_check(root: &Path) -> TaskResult {
    wasm::ensure_target(root)?;
    run(cargo().current_dir(root).args([
        "check",
        "--target",
        WASM_TARGET,
        "--no-default-features",
        "-p",
        "h5chunk",
        "-p",
        "h5chunk-format",
        "-p",
        "h5chunk-cache",
        "-p",
        "h5chunk-btree1",
        "-p",
        "h5chunk-btree2",
        "-p",
        "h5chunk-earray",
        "-p",
        "h5chunk-farray",
        "-p",
        "h5chunk-skiplist",
        "-p",
        "h5chunk-filters",
        "-p",
        "h5chunk-dense",
    ]))?;
    wasm::lint(root)
}

fn wasm_task(args: &[String]) -> TaskResult {
    if let Some(a) = args.first() {
        return Err(format!("unexpected argument `{a}`"));
    }
    wasm::build(&workspace_root()).map(|_| ())
}

fn fuzz(args: &[String]) -> TaskResult {
    fuzz::run(&workspace_root(), args)
}

fn crash(args: &[String]) -> TaskResult {
    let mut kills = "1000".to_string();
    let mut durability = "sync".to_string();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("`{arg}` needs a value"))
        };
        match arg.as_str() {
            "--kills" => kills = value()?,
            "--durability" => durability = value()?,
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    if kills.parse::<u64>().is_err() {
        return Err(format!("--kills {kills}: not a number"));
    }
    if !matches!(durability.as_str(), "sync" | "flush" | "none") {
        return Err(format!("--durability {durability}: sync, flush or none"));
    }
    let root = workspace_root();
    let python = fixtures::ensure_venv(&root)?;
    let mut cmd = cargo();
    cmd.current_dir(&root)
        .args([
            "test",
            "--release",
            "-p",
            "h5chunk",
            "--test",
            "kill_campaign",
            "--",
        ])
        .args(["--nocapture", "--exact", "kill_campaign_long"])
        .env("H5CHUNK_KILLS", &kills)
        .env("H5CHUNK_KILL_DURABILITY", &durability)
        .env("H5CHUNK_PYTHON", &python);
    run(&mut cmd)
}

/// Runs `h5chunk-swmr soak` (release) with `args`, after the defaults `defaults`; with the C
/// SWMR writer (`benches/libhdf5/swmr_writer.c`, built against the system's libhdf5) when the
/// arguments ask for `--writer c`.
fn run_swmr_soak(root: &Path, defaults: &[&str], args: &[String]) -> TaskResult {
    let python = fixtures::ensure_venv(root)?;
    let exe = harness::build_bench_bin(root, "h5chunk-swmr")?;
    let dir = root.join("target").join("swmr-soak");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let all: Vec<&str> = defaults
        .iter()
        .copied()
        .chain(args.iter().map(String::as_str))
        .collect();
    let wants_c = all.windows(2).any(|w| w == ["--writer", "c"]);
    let mut cmd = Command::new(exe);
    cmd.arg("soak")
        .args(&all)
        .args(["--python".as_ref(), python.as_os_str()])
        .arg("--dir")
        .arg(&dir);
    if wants_c {
        let c = harness::build_c_program(root, &dir, "swmr_writer")?;
        cmd.arg("--c-writer").arg(c);
    }
    run(&mut cmd)
}

fn swmr_soak(args: &[String]) -> TaskResult {
    run_swmr_soak(
        &workspace_root(),
        &[
            "--appends",
            "1000000",
            "--readers",
            "5",
            "--probes",
            "60",
            "--chunks",
            "16",
            "--deflate",
            "both",
        ],
        args,
    )
}

fn reach(args: &[String]) -> TaskResult {
    reach::run(&workspace_root(), args)
}

fn bench(args: &[String]) -> TaskResult {
    bench::run(&workspace_root(), args)
}

fn no_args(args: &[String]) -> TaskResult {
    match args.first() {
        None => Ok(()),
        Some(arg) => Err(format!("unexpected argument `{arg}`")),
    }
}

/// The workspace root: xtask's own manifest directory is `<root>/xtask`, whatever the current
/// directory or CARGO_TARGET_DIR.
fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// The cargo that runs us (`cargo xtask` sets CARGO), so a pinned toolchain stays pinned.
fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo")))
}

/// Runs a command to completion, inheriting stdio; a non-zero exit is an error.
fn run(cmd: &mut Command) -> TaskResult {
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{} failed ({status})", describe(cmd)))
    }
}

fn describe(cmd: &Command) -> String {
    let mut text = cmd.get_program().to_string_lossy().into_owned();
    for arg in cmd.get_args() {
        text.push(' ');
        text.push_str(&arg.to_string_lossy());
    }
    text
}

/// h5dump from H5CHUNK_H5DUMP if it names an existing file, else the first one on PATH.
fn find_h5dump() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("H5CHUNK_H5DUMP").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return path.is_file().then_some(path);
    }
    find_on_path("h5dump")
}

/// Chromium from H5CHUNK_CHROMIUM if it names an existing file, else `chromium` (Debian's
/// package) or `chromium-browser` on PATH.
fn find_chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("H5CHUNK_CHROMIUM").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return path.is_file().then_some(path);
    }
    find_on_path("chromium").or_else(|| find_on_path("chromium-browser"))
}

fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_libtest_closing_lines() {
        let ok = "test result: ok. 145 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out";
        assert_eq!(super::parse_test_result(ok), Some((145, 0)));
        let bad = "test result: FAILED. 3 passed; 2 failed; 1 ignored; 0 measured";
        assert_eq!(super::parse_test_result(bad), Some((3, 2)));
        assert_eq!(super::parse_test_result("running 3 tests"), None);
    }
}
