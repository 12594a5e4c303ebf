//! `cargo xtask reach`: how many of the datasets h5py reads each HDF5 reader reads equal.
//!
//! The measurement issue 34 asks for: on a corpus of files nobody on this project wrote
//! (PyTables' wheel test files, h5py's test data) plus the fixtures our tests generate, every
//! dataset h5py (with hdf5plugin) reads is read by h5chunk, rust-hdf5 (crates.io, every
//! filter feature), hdf5-pure (crates.io), pyfive (PyPI) and jsfive (npm), and counted per
//! reader as read equal, wrong, refused (by cause) or crashed.
//!
//! Each reader is a small program (`xtask/reach/`) that walks one file and prints one JSON
//! line per dataset it finds: its path, shape and a SHA-256 of its values in one form for
//! every reader (numbers as little-endian values of the stored size, other fixed-size types
//! as the file's bytes, variable-length strings as each string's UTF-8 bytes and a NUL; a
//! null dataspace is "empty", other variable-length types "vlen": read, not compared), or
//! the error it gave. A compound is also equal when its records match h5py's member by
//! member (pyfive builds records itself and leaves other bytes between members). Every reader runs in its own process per file, with a timeout.
//!
//! The readers are installed under `target/reach/`, never into the workspace: the Rust
//! ones (h5chunk by path, rust-hdf5 and hdf5-pure from crates.io) as a cargo project of
//! their own generated in `target/reach/rust/` (its own `Cargo.lock` and target folder),
//! jsfive with npm into `target/reach/node/`, pyfive with pip into the Python (its pin is in
//! `xtask/fixtures/requirements.txt`). The Python is `$H5CHUNK_PYTHON` when set, else the
//! xtask venv. The corpus folder is `--corpus DIR`, else `$H5CHUNK_FIXTURES`, else
//! `target/fixtures` (generated when stale); PyTables' and h5py's files are fetched into it
//! when absent.
//!
//! Prints the table and writes one row per (dataset, reader) to `target/reach/reach.csv`.
//! A measurement, not a test: `cargo xtask test` does not run it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::TaskResult;

/// The PyTables wheel whose `tables/tests/*.h5` are part of the corpus (the same pin as
/// `crates/dataset/tests/files_people_hold.rs`).
const TABLES: &str = "tables==3.11.1";
/// jsfive from npm.
const JSFIVE: &str = "jsfive@0.4.2";
/// The crates.io readers, pinned: rust-hdf5 with every filter its features offer.
const RUST_HDF5: &str = r#"rust-hdf5 = { version = "=0.7.9", features = ["all_filters"] }"#;
const HDF5_PURE: &str = r#"hdf5-pure = "=0.47.0""#;

/// The readers compared with h5py, in table order.
pub const READERS: [&str; 5] = ["h5chunk", "rust-hdf5", "hdf5-pure", "pyfive", "jsfive"];

const COMMON_RS: &str = include_str!("../reach/common.rs");
const H5CHUNK_RS: &str = include_str!("../reach/h5chunk_reader.rs");
const RUST_HDF5_RS: &str = include_str!("../reach/rust_hdf5_reader.rs");
const HDF5_PURE_RS: &str = include_str!("../reach/hdf5_pure_reader.rs");
const PY_READER: &str = include_str!("../reach/py_reader.py");
const JS_READER: &str = include_str!("../reach/jsfive_reader.mjs");
const FETCH: &str = include_str!("../reach/fetch_corpus.py");

pub fn run(root: &Path, args: &[String]) -> TaskResult {
    let mut corpus: Option<PathBuf> = None;
    let mut timeout = Duration::from_secs(60);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--corpus" => {
                corpus = Some(PathBuf::from(it.next().ok_or("`--corpus` needs a folder")?))
            }
            "--timeout" => {
                timeout = Duration::from_secs(
                    it.next()
                        .and_then(|v| v.parse::<u64>().ok())
                        .filter(|&v| v > 0)
                        .ok_or("`--timeout` needs a positive number of seconds")?,
                )
            }
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    let python = match std::env::var_os("H5CHUNK_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => crate::fixtures::ensure_venv(root)?,
    };
    let corpus = match corpus.or_else(|| {
        std::env::var_os("H5CHUNK_FIXTURES")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
    }) {
        Some(dir) => dir,
        None => {
            let out = root.join("target").join("fixtures");
            crate::fixtures::ensure_fresh(root, &python, &out)?;
            out
        }
    };
    let dir = root.join("target").join("reach");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;

    eprintln!("xtask reach: corpus {}", corpus.display());
    let fetch = dir.join("fetch_corpus.py");
    write_if_changed(&fetch, FETCH)?;
    crate::run(
        Command::new(&python)
            .arg(&fetch)
            .arg(TABLES)
            .arg(dir.join("wheels"))
            .arg(&corpus),
    )?;
    let files = h5_files(&corpus)?;
    if files.is_empty() {
        return Err(format!("no .h5 files under {}", corpus.display()));
    }

    let py_reader = dir.join("py_reader.py");
    write_if_changed(&py_reader, PY_READER)?;
    ensure_pyfive(root, &python)?;
    let node = ensure_jsfive(&dir)?;
    let bins = build_rust_readers(root, &dir)?;

    let mut commands: Vec<(&str, Vec<std::ffi::OsString>)> = Vec::new();
    let py = |which: &str| {
        vec![
            python.clone().into_os_string(),
            py_reader.clone().into_os_string(),
            which.into(),
        ]
    };
    commands.push(("h5py", py("h5py")));
    commands.push((
        "h5chunk",
        vec![bins.join("h5chunk_reader").into_os_string()],
    ));
    commands.push((
        "rust-hdf5",
        vec![bins.join("rust_hdf5_reader").into_os_string()],
    ));
    commands.push((
        "hdf5-pure",
        vec![bins.join("hdf5_pure_reader").into_os_string()],
    ));
    commands.push(("pyfive", py("pyfive")));
    commands.push((
        "jsfive",
        vec![
            "node".into(),
            node.join("jsfive_reader.mjs").into_os_string(),
        ],
    ));

    let started = Instant::now();
    let mut results: Vec<FileResult> = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let name = file
            .strip_prefix(&corpus)
            .unwrap_or(file)
            .to_string_lossy()
            .into_owned();
        eprintln!("xtask reach: [{}/{}] {name}", i + 1, files.len());
        let mut runs = BTreeMap::new();
        for (reader, argv) in &commands {
            runs.insert(reader.to_string(), run_reader(argv, file, timeout));
        }
        results.push(FileResult { name, runs });
    }
    let table = Table::from_results(&results);
    let text = table.render();
    println!("{text}");
    let csv = dir.join("reach.csv");
    std::fs::write(&csv, table.csv()).map_err(|e| format!("{}: {e}", csv.display()))?;
    eprintln!(
        "xtask reach: {} files in {:.0} s; rows in {}",
        files.len(),
        started.elapsed().as_secs_f64(),
        csv.display()
    );
    Ok(())
}

fn write_if_changed(path: &Path, text: &str) -> TaskResult {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// Every `.h5` file below `dir`, sorted.
fn h5_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))? {
            let p = e.map_err(|e| format!("{}: {e}", d.display()))?.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "h5") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// pyfive at the pin of requirements.txt, installed into `python` when it lacks it.
fn ensure_pyfive(root: &Path, python: &Path) -> TaskResult {
    let requirements = root.join(crate::fixtures::REQUIREMENTS);
    let text = std::fs::read_to_string(&requirements)
        .map_err(|e| format!("{}: {e}", requirements.display()))?;
    let pin = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("pyfive=="))
        .ok_or_else(|| format!("no pyfive pin in {}", requirements.display()))?;
    let version = pin.trim_start_matches("pyfive==");
    let have = Command::new(python)
        .args([
            "-c",
            "import pyfive, importlib.metadata as m; print(m.version('pyfive'))",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    if have.as_deref() != Some(version) {
        eprintln!("xtask reach: installing {pin} into {}", python.display());
        crate::run(Command::new(python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            pin,
        ]))?;
    }
    Ok(())
}

/// jsfive installed with npm into `target/reach/node`, with the reader beside it.
fn ensure_jsfive(dir: &Path) -> Result<PathBuf, String> {
    let node = dir.join("node");
    write_if_changed(&node.join("jsfive_reader.mjs"), JS_READER)?;
    let package = node.join("package.json");
    if !package.exists() {
        write_if_changed(&package, "{\"private\": true}\n")?;
    }
    let version = JSFIVE.split('@').nth(1).unwrap_or_default();
    let installed = std::fs::read_to_string(node.join("node_modules/jsfive/package.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .is_some_and(|v| v["version"] == version);
    if !installed {
        eprintln!("xtask reach: npm install {JSFIVE} into {}", node.display());
        crate::run(
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--prefix"])
                .arg(&node)
                .arg(JSFIVE),
        )
        .map_err(|e| format!("{e} (jsfive needs node and npm)"))?;
    }
    Ok(node)
}

/// The Rust readers as a cargo project of their own under `target/reach/rust` (its own lock
/// file and target folder, so nothing of it enters the workspace's); returns the folder of
/// the built programs.
fn build_rust_readers(root: &Path, dir: &Path) -> Result<PathBuf, String> {
    let project = dir.join("rust");
    let h5chunk = root.join("crates").join("dataset");
    let manifest = format!(
        "# Generated by `cargo xtask reach` (xtask/src/reach.rs): the Rust readers it compares.\n\
         [package]\nname = \"reach-readers\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         publish = false\n\n[workspace]\n\n[dependencies]\n\
         h5chunk = {{ path = {:?} }}\n{RUST_HDF5}\n{HDF5_PURE}\n\
         sha2 = \"0.10\"\nserde_json = \"1\"\n",
        h5chunk.to_string_lossy()
    );
    write_if_changed(&project.join("Cargo.toml"), &manifest)?;
    write_if_changed(&project.join("src").join("common.rs"), COMMON_RS)?;
    let bin = project.join("src").join("bin");
    write_if_changed(&bin.join("h5chunk_reader.rs"), H5CHUNK_RS)?;
    write_if_changed(&bin.join("rust_hdf5_reader.rs"), RUST_HDF5_RS)?;
    write_if_changed(&bin.join("hdf5_pure_reader.rs"), HDF5_PURE_RS)?;
    let target = project.join("target");
    eprintln!(
        "xtask reach: building the Rust readers in {}",
        project.display()
    );
    crate::run(
        crate::cargo()
            .args(["build", "--bins", "--manifest-path"])
            .arg(project.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", &target),
    )?;
    Ok(target.join("debug"))
}

/// What one reader said about one file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Run {
    /// Per dataset path: `Ok((shape, hash))` or `Err(message)`.
    pub datasets: BTreeMap<String, Result<(Value, String), String>>,
    /// Per compound dataset, the hash of its records without the bytes between members (h5py
    /// gives it beside the stored bytes; pyfive gives only it).
    pub packed: BTreeMap<String, String>,
    /// Groups it could not list (`path/*` records), with the error.
    pub unlisted: Vec<(String, String)>,
    /// The file did not open: the error.
    pub file_err: Option<String>,
    /// It died (exit status, signal or timeout) instead of finishing.
    pub crashed: Option<String>,
}

#[derive(Debug)]
pub struct FileResult {
    pub name: String,
    pub runs: BTreeMap<String, Run>,
}

/// Parses a reader's output lines.
pub fn parse_run(stdout: &str, crashed: Option<String>) -> Run {
    let mut run = Run {
        crashed,
        ..Run::default()
    };
    for line in stdout.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if let Some(e) = v["file_err"].as_str() {
            run.file_err = Some(e.to_owned());
            continue;
        }
        let Some(path) = v["path"].as_str() else {
            continue;
        };
        if let Some(e) = v["err"].as_str() {
            if let Some(group) = path.strip_suffix("/*") {
                run.unlisted.push((group.to_owned(), e.to_owned()));
            } else {
                run.datasets.insert(path.to_owned(), Err(e.to_owned()));
            }
        } else if let Some(h) = v["hash"].as_str() {
            if let Some(p) = v["packed"].as_str() {
                run.packed.insert(path.to_owned(), p.to_owned());
            }
            run.datasets
                .insert(path.to_owned(), Ok((v["shape"].clone(), h.to_owned())));
        }
    }
    run
}

fn run_reader(argv: &[std::ffi::OsString], file: &Path, timeout: Duration) -> Run {
    let Some((program, args)) = argv.split_first() else {
        return Run::default();
    };
    let child = Command::new(program)
        .args(args)
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            return Run {
                crashed: Some(format!("cannot start: {e}")),
                ..Run::default()
            };
        }
    };
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Ok(Some(s)) = child.try_wait() {
            break Ok(s);
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            break Err(());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stdout = String::from_utf8_lossy(&reader.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    let crashed = match status {
        Err(()) => Some(format!("timeout ({} s)", timeout.as_secs())),
        Ok(s) if s.success() => None,
        Ok(s) => {
            use std::os::unix::process::ExitStatusExt;
            let what = match (s.code(), s.signal()) {
                (_, Some(sig)) => format!("signal {sig}"),
                (Some(101), _) => "panic".to_owned(),
                (code, _) => format!("exit {}", code.unwrap_or(-1)),
            };
            let last = stderr
                .lines()
                .rev()
                .find(|l| l.contains("panicked") || !l.trim().is_empty())
                .unwrap_or_default();
            Some(format!("{what}: {}", shorten(last, 120)))
        }
    };
    parse_run(&stdout, crashed)
}

/// One reader's outcome on one dataset h5py reads.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Equal,
    /// Read without error; h5py's values are variable-length sequences, not compared.
    ReadNotCompared,
    Wrong(String),
    Refused(String),
    Crashed(String),
}

impl Outcome {
    fn label(&self) -> &'static str {
        match self {
            Outcome::Equal => "equal",
            Outcome::ReadNotCompared => "read (vlen, not compared)",
            Outcome::Wrong(_) => "wrong",
            Outcome::Refused(_) => "refused",
            Outcome::Crashed(_) => "crashed",
        }
    }

    fn detail(&self) -> &str {
        match self {
            Outcome::Wrong(s) | Outcome::Refused(s) | Outcome::Crashed(s) => s,
            _ => "",
        }
    }

    /// Read, equal or not compared.
    pub fn read(&self) -> bool {
        matches!(self, Outcome::Equal | Outcome::ReadNotCompared)
    }
}

fn sha256_of_nothing() -> &'static str {
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
}

/// How `run` did on the dataset `path` that h5py read as `(shape, hash)`, or as `packed`
/// for a compound's records without their gaps.
pub fn outcome(run: &Run, path: &str, want: &(Value, String), packed: Option<&str>) -> Outcome {
    match run.datasets.get(path) {
        Some(Ok((shape, hash))) => {
            let (want_shape, want_hash) = want;
            if want_hash == "vlen" {
                return Outcome::ReadNotCompared;
            }
            if want_hash == "empty" {
                // A null dataspace: "empty", or no values at all under any shape.
                return if hash == "empty" || hash == sha256_of_nothing() {
                    Outcome::Equal
                } else {
                    Outcome::Wrong(format!("values for a null dataspace (shape {shape})"))
                };
            }
            if shape != want_shape {
                Outcome::Wrong(format!("shape {shape}, h5py {want_shape}"))
            } else if hash == want_hash || Some(hash.as_str()) == packed {
                Outcome::Equal
            } else if hash == "vlen" || hash == "empty" || hash == "null elements" {
                Outcome::Wrong(format!("read as {hash}"))
            } else {
                Outcome::Wrong("values differ".to_owned())
            }
        }
        Some(Err(e)) => Outcome::Refused(cause(e)),
        None => {
            if let Some(e) = &run.file_err {
                return Outcome::Refused(format!("file: {}", cause(e)));
            }
            if let Some((_, e)) = run
                .unlisted
                .iter()
                .find(|(g, _)| g.is_empty() || path.starts_with(&format!("{g}/")))
            {
                return Outcome::Refused(format!("group: {}", cause(e)));
            }
            match &run.crashed {
                Some(c) => Outcome::Crashed(c.clone()),
                None => Outcome::Refused("not listed".to_owned()),
            }
        }
    }
}

/// An error message as a cause counted across files: numbers and addresses replaced by `#`,
/// paths and names in quotes dropped, cut short.
pub fn cause(message: &str) -> String {
    let mut out = String::new();
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '0' && chars.peek() == Some(&'x') {
            chars.next();
            while chars.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                chars.next();
            }
            out.push('#');
        } else if c.is_ascii_digit() && !out.ends_with(|p: char| p.is_ascii_alphabetic()) {
            // A number, not a digit inside a name (HDF5, lz4).
            while chars.peek().is_some_and(|c| c.is_ascii_digit()) {
                chars.next();
            }
            out.push('#');
        } else if c == '"' || (c == '\'' && !out.ends_with(|p: char| p.is_alphanumeric())) {
            // A quoted name (a path, a dataset): dropped, quotes kept.
            for d in chars.by_ref() {
                if d == c {
                    break;
                }
            }
            out.push(c);
            out.push(c);
        } else {
            out.push(c);
        }
    }
    shorten(out.trim(), 90)
}

fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Every outcome, and the render of it.
#[derive(Debug, Default)]
pub struct Table {
    pub files: usize,
    /// (file, dataset) h5py reads.
    pub datasets: usize,
    /// (file, dataset) h5py lists and refuses, by cause.
    pub h5py_refuses: BTreeMap<String, usize>,
    /// Files h5py does not open.
    pub h5py_file_errors: Vec<String>,
    /// Per reader, how many of the datasets h5py refuses it reads (nothing to compare with).
    pub read_where_h5py_refuses: BTreeMap<String, usize>,
    /// (file, dataset, reader, outcome)
    pub rows: Vec<(String, String, String, Outcome)>,
}

impl Table {
    pub fn from_results(results: &[FileResult]) -> Table {
        let mut t = Table {
            files: results.len(),
            ..Table::default()
        };
        for f in results {
            let Some(h5py) = f.runs.get("h5py") else {
                continue;
            };
            if let Some(e) = h5py.file_err.as_ref().or(h5py.crashed.as_ref()) {
                t.h5py_file_errors.push(format!("{}: {}", f.name, cause(e)));
                continue;
            }
            for (path, got) in &h5py.datasets {
                let want = match got {
                    Ok(w) => w,
                    Err(e) => {
                        *t.h5py_refuses.entry(cause(e)).or_default() += 1;
                        for reader in READERS {
                            if let Some(Ok(_)) =
                                f.runs.get(reader).and_then(|r| r.datasets.get(path))
                            {
                                *t.read_where_h5py_refuses
                                    .entry(reader.to_owned())
                                    .or_default() += 1;
                            }
                        }
                        continue;
                    }
                };
                t.datasets += 1;
                for reader in READERS {
                    let o = match f.runs.get(reader) {
                        Some(run) => {
                            outcome(run, path, want, h5py.packed.get(path).map(String::as_str))
                        }
                        None => Outcome::Crashed("not run".to_owned()),
                    };
                    t.rows
                        .push((f.name.clone(), path.clone(), reader.to_owned(), o));
                }
            }
        }
        t
    }

    fn of(&self, reader: &str) -> impl Iterator<Item = &(String, String, String, Outcome)> {
        self.rows.iter().filter(move |r| r.2 == reader)
    }

    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "reach: {} files, {} datasets h5py (with hdf5plugin) reads",
            self.files, self.datasets
        );
        let _ = writeln!(
            s,
            "\n| reader | read equal | read, vlen not compared | wrong | refused | crashed | reads |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|");
        for reader in READERS {
            let mut n = [0usize; 5];
            for (_, _, _, o) in self.of(reader) {
                let i = match o {
                    Outcome::Equal => 0,
                    Outcome::ReadNotCompared => 1,
                    Outcome::Wrong(_) => 2,
                    Outcome::Refused(_) => 3,
                    Outcome::Crashed(_) => 4,
                };
                n[i] += 1;
            }
            let share = if self.datasets == 0 {
                0.0
            } else {
                100.0 * (n[0] + n[1]) as f64 / self.datasets as f64
            };
            let _ = writeln!(
                s,
                "| {reader} | {} | {} | {} | {} | {} | {share:.0}% |",
                n[0], n[1], n[2], n[3], n[4]
            );
        }
        for reader in READERS {
            let mut causes: BTreeMap<(&str, &str), usize> = BTreeMap::new();
            for (_, _, _, o) in self.of(reader) {
                if !o.read() {
                    *causes.entry((o.label(), o.detail())).or_default() += 1;
                }
            }
            if causes.is_empty() {
                continue;
            }
            let mut causes: Vec<_> = causes.into_iter().collect();
            causes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let _ = writeln!(s, "\n{reader}: not read equal, by cause");
            for ((label, detail), n) in causes {
                let _ = writeln!(s, "  {n:5}  {label}: {detail}");
            }
        }
        if !self.h5py_refuses.is_empty() || !self.h5py_file_errors.is_empty() {
            let _ = writeln!(s, "\nh5py refuses (not counted above)");
            for (c, n) in &self.h5py_refuses {
                let _ = writeln!(s, "  {n:5}  {c}");
            }
            for f in &self.h5py_file_errors {
                let _ = writeln!(s, "  file  {f}");
            }
            let read: Vec<String> = READERS
                .iter()
                .map(|r| {
                    let n = self.read_where_h5py_refuses.get(*r).copied().unwrap_or(0);
                    format!("{r} {n}")
                })
                .collect();
            let _ = writeln!(
                s,
                "  of which each reader reads (not compared): {}",
                read.join(", ")
            );
        }
        let ours: BTreeMap<(&str, &str), &Outcome> = self
            .of("h5chunk")
            .map(|(f, d, _, o)| ((f.as_str(), d.as_str()), o))
            .collect();
        let mut others: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
        for (f, d, r, o) in &self.rows {
            if r != "h5chunk"
                && o.read()
                && ours
                    .get(&(f.as_str(), d.as_str()))
                    .is_none_or(|o| !o.read())
            {
                others
                    .entry((f.as_str(), d.as_str()))
                    .or_default()
                    .insert(r.as_str());
            }
        }
        let _ = writeln!(
            s,
            "\ndatasets another reader reads and h5chunk does not: {}",
            others.len()
        );
        for ((f, d), readers) in others {
            let o = ours.get(&(f, d));
            let _ = writeln!(
                s,
                "  {f}:{d}: read by {}; h5chunk {}",
                readers.into_iter().collect::<Vec<_>>().join(", "),
                o.map_or("-".to_owned(), |o| format!("{}: {}", o.label(), o.detail()))
            );
        }
        s
    }

    pub fn csv(&self) -> String {
        let mut s = String::from("file,dataset,reader,outcome,detail\n");
        let q = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
        for (f, d, r, o) in &self.rows {
            let _ = writeln!(
                s,
                "{},{},{r},{},{}",
                q(f),
                q(d),
                q(o.label()),
                q(o.detail())
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_of(lines: &[&str], crashed: Option<&str>) -> Run {
        parse_run(&lines.join("\n"), crashed.map(str::to_owned))
    }

    #[test]
    fn outcomes_compare_values_shapes_and_name_causes() {
        let h5py = run_of(
            &[
                r#"{"path": "/a", "shape": [2], "hash": "aa"}"#,
                r#"{"path": "/g/b", "shape": [3], "hash": "bb"}"#,
                r#"{"path": "/v", "shape": [1], "hash": "vlen"}"#,
                r#"{"path": "/e", "shape": null, "hash": "empty"}"#,
                r#"{"path": "/h", "err": "OSError: can't read data (filter 32017)"}"#,
            ],
            None,
        );
        let reader = run_of(
            &[
                r#"{"path":"/a","shape":[2],"hash":"aa"}"#,
                r#"{"path":"/v","shape":[1],"hash":"vlen"}"#,
                &format!(
                    r#"{{"path":"/e","shape":[],"hash":"{}"}}"#,
                    sha256_of_nothing()
                ),
                r#"{"path":"/g/*","err":"unsupported: dense storage @ 0x1f00 of 12 links"}"#,
            ],
            None,
        );
        assert_eq!(reader.unlisted.len(), 1);
        let want = |p: &str| match &h5py.datasets[p] {
            Ok(w) => w.clone(),
            Err(e) => panic!("{e}"),
        };
        assert_eq!(outcome(&reader, "/a", &want("/a"), None), Outcome::Equal);
        assert_eq!(
            outcome(&reader, "/v", &want("/v"), None),
            Outcome::ReadNotCompared
        );
        assert_eq!(outcome(&reader, "/e", &want("/e"), None), Outcome::Equal);
        assert_eq!(
            outcome(&reader, "/g/b", &want("/g/b"), None),
            Outcome::Refused("group: unsupported: dense storage @ # of # links".into())
        );
        let wrong = run_of(
            &[r#"{"path":"/a","shape":[1,2],"hash":"aa"}"#],
            Some("panic: x"),
        );
        assert!(matches!(
            outcome(&wrong, "/a", &want("/a"), None),
            Outcome::Wrong(_)
        ));
        assert_eq!(
            outcome(&wrong, "/g/b", &want("/g/b"), None),
            Outcome::Crashed("panic: x".into())
        );
        let unopened = run_of(&[r#"{"file_err":"not an HDF5 file \"x.h5\""}"#], None);
        assert_eq!(
            outcome(&unopened, "/a", &want("/a"), None),
            Outcome::Refused("file: not an HDF5 file \"\"".into())
        );
        assert_eq!(
            outcome(&run_of(&[], None), "/a", &want("/a"), None),
            Outcome::Refused("not listed".into())
        );
        // A compound's records compared without their gaps when that is all a reader gives.
        let packed = run_of(&[r#"{"path":"/a","shape":[2],"hash":"pp"}"#], None);
        assert_eq!(
            outcome(&packed, "/a", &want("/a"), Some("pp")),
            Outcome::Equal
        );
        assert_eq!(
            cause("OSError: Can't open \"/x\" (3 of 0x1f)"),
            "OSError: Can't open \"\" (# of #)"
        );
    }

    #[test]
    fn table_counts_per_reader_and_lists_what_only_others_read() {
        let h5py = run_of(
            &[
                r#"{"path": "/a", "shape": [2], "hash": "aa"}"#,
                r#"{"path": "/b", "shape": [2], "hash": "bb"}"#,
                r#"{"path": "/c", "err": "OSError: no plugin"}"#,
            ],
            None,
        );
        let mut runs = BTreeMap::from([("h5py".to_owned(), h5py)]);
        runs.insert(
            "h5chunk".into(),
            run_of(
                &[
                    r#"{"path":"/a","shape":[2],"hash":"aa"}"#,
                    r#"{"path":"/b","err":"unsupported: filter 32017"}"#,
                ],
                None,
            ),
        );
        runs.insert(
            "rust-hdf5".into(),
            run_of(
                &[
                    r#"{"path":"/a","shape":[2],"hash":"xx"}"#,
                    r#"{"path":"/b","shape":[2],"hash":"bb"}"#,
                ],
                None,
            ),
        );
        let t = Table::from_results(&[FileResult {
            name: "f.h5".into(),
            runs,
        }]);
        assert_eq!(t.datasets, 2);
        assert_eq!(t.h5py_refuses["OSError: no plugin"], 1);
        let text = t.render();
        assert!(
            text.contains("| h5chunk | 1 | 0 | 0 | 1 | 0 | 50% |"),
            "{text}"
        );
        assert!(
            text.contains("| rust-hdf5 | 1 | 0 | 1 | 0 | 0 | 50% |"),
            "{text}"
        );
        // Readers that did not run at all count as crashed, not as refusals.
        assert!(
            text.contains("| jsfive | 0 | 0 | 0 | 0 | 2 | 0% |"),
            "{text}"
        );
        assert!(text.contains("and h5chunk does not: 1"), "{text}");
        assert!(
            text.contains("f.h5:/b: read by rust-hdf5; h5chunk refused: unsupported: filter #"),
            "{text}"
        );
        let csv = t.csv();
        assert_eq!(csv.lines().count(), 1 + 2 * READERS.len());
        assert!(csv.contains("\"f.h5\",\"/a\",rust-hdf5,\"wrong\",\"values differ\""));
    }
}
