//! `cargo xtask bench --browser`: h5chunk's wasm build against h5wasm (libhdf5 compiled with
//! Emscripten, from npm) in the same headless Chromium, on a 4 GiB remote file, and how soon
//! `h5chunk view` shows a row a SWMR writer flushed.
//!
//! The file (`benches/browser/make_file.py`, h5py) is an instrument's run: 33 scan groups,
//! each with attributes, a 128 MiB frame stack and two small datasets, written scan after scan
//! so each scan's metadata lies next to its data (4.1 GiB, sparse on disk). A loopback HTTP
//! server here answers `HEAD` and `Range` and logs every request; the page
//! (`benches/browser/index.html`) runs each side in its own Web Worker, timed from the page:
//! `tree` opens the URL and lists every object with its kind (what a tree view shows), `slice`
//! reads 1 MiB (256 rows of the last scan's frames, past 2^32 bytes into the file); a third
//! side, `h5chunk_async`, is the same build's asynchronous reads (`h5chunk_async.js`, `fetch`)
//! on the page's own thread. Bytes and requests are the server's counts for that side's URL
//! (each side has its own path to the same file). h5wasm runs in its lazy mode for
//! remote files: Emscripten's `FS.createLazyFile` (a `HEAD`, then synchronous range requests
//! of 1 MiB chunks); its other ways in load the whole file into memory first.
//!
//! The live figure: an h5py SWMR writer (`benches/browser/live_writer.py`) appends and flushes
//! `--flushes` times (200 to 500 ms apart) while `h5chunk view` (a dev build) shows the
//! dataset polling every 100 ms (`?poll=100`) and at its default (250 ms); the page notes the wall-clock
//! time each new length appears in its plot (a `MutationObserver`), and the figure is the
//! median of (shown − flush returned).
//!
//! Rows in `target/bench/browser.csv`; the task fails when h5chunk's tree or slice disagrees
//! with h5py's, when h5wasm finished and fetched less than 20 times h5chunk's bytes, or when
//! the p50 at the default polling is over 500 ms (issue 37's goals). h5wasm's own failures are
//! reported in the table, not failed.

// The DevTools-protocol driver the CLI's browser tests use (crates/cli/tests/support).
#[allow(dead_code)]
#[path = "../../crates/cli/tests/support/cdp.rs"]
mod cdp;

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::TaskResult;

/// The h5wasm release compared (npm), unpacked into `target/tools/h5wasm`.
pub const H5WASM_VERSION: &str = "0.10.3";
/// Flushes the live figure is taken over, by default.
const DEFAULT_FLUSHES: usize = 25;

/// One request the server answered: its path, method and the body bytes it sent.
#[derive(Debug, Clone)]
struct Logged {
    path: String,
    head: bool,
    bytes: u64,
}

type Log = Arc<Mutex<Vec<Logged>>>;

fn mime(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript",
        Some("wasm") => "application/wasm",
        _ => "application/octet-stream",
    }
}

/// Answer one connection: a file below one of `roots`, whole or the `Range` asked (one range
/// `bytes=A-B` or `bytes=A-`), `HEAD` too; requests below `/data/` logged.
fn serve(mut c: TcpStream, roots: &[(String, PathBuf)], log: &Log) {
    let Ok(clone) = c.try_clone() else { return };
    let mut r = BufReader::new(clone);
    let mut line = String::new();
    if r.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut words = line.split(' ');
    let head = words.next() == Some("HEAD");
    let target = words.next().unwrap_or("/").to_owned();
    let mut range = None;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':')
            && k.eq_ignore_ascii_case("range")
        {
            range = Some(v.trim().to_owned());
        }
    }
    let path = target.split('?').next().unwrap_or("/").to_owned();
    let file = roots.iter().find_map(|(prefix, dir)| {
        let rest = path.strip_prefix(prefix.as_str())?;
        (!rest.contains("..")).then(|| dir.join(rest))
    });
    let Some(mut f) = file.and_then(|p| std::fs::File::open(p).ok()) else {
        let _ = c
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    };
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    let asked = range
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.split_once('-'))
        .and_then(|(a, b)| {
            let a: u64 = a.trim().parse().ok()?;
            let b = b.trim().parse::<u64>().map_or(size, |b| (b + 1).min(size));
            Some((a, b))
        });
    let (status, from, to) = match asked {
        Some((a, _)) if a >= size => {
            let _ = write!(
                c,
                "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{size}\r\n\
                 Content-Length: 0\r\nConnection: close\r\n\r\n"
            );
            return;
        }
        Some((a, b)) => (206, a, b.max(a)),
        None => (200, 0, size),
    };
    let sent = if head { 0 } else { to - from };
    if path.starts_with("/data/")
        && let Ok(mut l) = log.lock()
    {
        l.push(Logged {
            path: path.clone(),
            head,
            bytes: sent,
        });
    }
    let mut reply = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n\
         Accept-Ranges: bytes\r\nCache-Control: no-store\r\nConnection: close\r\n",
        if status == 206 {
            "Partial Content"
        } else {
            "OK"
        },
        mime(&path),
        to - from
    );
    if status == 206 {
        reply.push_str(&format!(
            "Content-Range: bytes {from}-{}/{size}\r\n",
            to.saturating_sub(1)
        ));
    }
    reply.push_str("\r\n");
    if c.write_all(reply.as_bytes()).is_err() || head {
        return;
    }
    if f.seek(SeekFrom::Start(from)).is_ok() {
        let _ = std::io::copy(&mut (&mut f).take(to - from), &mut c);
    }
}

/// The server on loopback: its base URL and its log.
fn start_server(roots: Vec<(String, PathBuf)>) -> Result<(String, Log), String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let log: Log = Arc::default();
    let (roots, l) = (Arc::new(roots), log.clone());
    std::thread::spawn(move || {
        for c in listener.incoming().flatten() {
            let (roots, log) = (roots.clone(), l.clone());
            std::thread::spawn(move || serve(c, &roots, &log));
        }
    });
    Ok((format!("http://127.0.0.1:{port}"), log))
}

/// Requests and bytes logged for paths starting `prefix` from entry `since` on.
fn counted(log: &Log, since: usize, prefix: &str) -> (usize, u64, usize) {
    let l = log.lock().map(|l| l.clone()).unwrap_or_default();
    let mine: Vec<&Logged> = l
        .iter()
        .skip(since)
        .filter(|e| e.path.starts_with(prefix))
        .collect();
    (
        mine.len(),
        mine.iter().map(|e| e.bytes).sum(),
        mine.iter().filter(|e| e.head).count(),
    )
}

fn log_len(log: &Log) -> usize {
    log.lock().map(|l| l.len()).unwrap_or(0)
}

/// The venv's Python (`H5CHUNK_PYTHON` when set, else target/venv, created when missing).
fn python(root: &Path) -> Result<PathBuf, String> {
    match std::env::var_os("H5CHUNK_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => Ok(PathBuf::from(p)),
        None => crate::fixtures::ensure_venv(root),
    }
}

/// The npm package of crates/wasm: `H5CHUNK_WASM_PKG` when set, else built (`cargo xtask wasm`).
fn wasm_pkg(root: &Path) -> Result<PathBuf, String> {
    let pkg = match std::env::var_os("H5CHUNK_WASM_PKG").filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => crate::wasm::build(root)?,
    };
    if pkg.join("h5chunk_wasm_bg.wasm").is_file() {
        Ok(pkg)
    } else {
        Err(format!("{}: no built package", pkg.display()))
    }
}

/// h5wasm's npm package, unpacked: `npm pack h5wasm@VERSION` into target/tools/h5wasm once.
fn h5wasm(root: &Path) -> Result<PathBuf, String> {
    let tools = root.join("target").join("tools").join("h5wasm");
    let package = tools.join("package");
    let stamp = tools.join("version");
    let entry = package.join("dist").join("esm").join("hdf5_hl.js");
    if entry.is_file() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(H5WASM_VERSION) {
        return Ok(package);
    }
    std::fs::create_dir_all(&tools).map_err(|e| format!("{}: {e}", tools.display()))?;
    if package.exists() {
        std::fs::remove_dir_all(&package).map_err(|e| format!("{}: {e}", package.display()))?;
    }
    eprintln!("xtask bench --browser: npm pack h5wasm@{H5WASM_VERSION}");
    let out = Command::new("npm")
        .current_dir(&tools)
        .args(["pack", &format!("h5wasm@{H5WASM_VERSION}")])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run npm (install Debian's `npm`): {e}"))?;
    if !out.status.success() {
        return Err(format!("npm pack h5wasm@{H5WASM_VERSION} failed"));
    }
    let tgz = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .to_owned();
    crate::run(Command::new("tar").current_dir(&tools).args(["xzf", &tgz]))?;
    let _ = std::fs::remove_file(tools.join(&tgz));
    std::fs::write(&stamp, H5WASM_VERSION).map_err(|e| format!("{}: {e}", stamp.display()))?;
    if entry.is_file() {
        Ok(package)
    } else {
        Err(format!("{}: missing after unpacking", entry.display()))
    }
}

/// The dev build of the `h5chunk` binary (what the CLI's view tests run).
fn h5chunk_binary(root: &Path) -> Result<PathBuf, String> {
    let mut cmd = crate::cargo();
    cmd.current_dir(root).args([
        "build",
        "-p",
        "h5chunk-cli",
        "--bin",
        "h5chunk",
        "--message-format=json-render-diagnostics",
    ]);
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!("{} failed", crate::describe(&cmd)));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["reason"] == "compiler-artifact" && v["target"]["name"] == "h5chunk")
        .find_map(|v| v["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| "cargo reported no h5chunk executable".to_owned())
}

/// One side's figures for one step.
#[derive(Debug, Clone)]
struct Step {
    side: &'static str,
    step: &'static str,
    requests: usize,
    heads: usize,
    bytes: u64,
    ms: f64,
    /// "ok", or what went wrong (an error, a disagreement with h5py).
    check: String,
}

/// Ask the page's worker for `side` to do `op`; the answer (`ok`, `ms`, `answer`, `error`).
fn ask(b: &mut cdp::Browser, side: &str, op: &str, args: &Value) -> Value {
    b.eval(&format!("bench({side:?}, {op:?}, {args})"))
}

/// Every side on the remote file: its tree and slice steps.
fn compare(
    b: &mut cdp::Browser,
    log: &Log,
    file: &Value,
    url_of: impl Fn(&str) -> String,
) -> Vec<Step> {
    let mut steps = Vec::new();
    let want_tree = &file["tree"];
    for side in ["h5chunk", "h5chunk_async", "h5wasm"] {
        let init = ask(b, side, "init", &json!({}));
        if init["ok"] != json!(true) {
            steps.push(Step {
                side,
                step: "init",
                requests: 0,
                heads: 0,
                bytes: 0,
                ms: init["ms"].as_f64().unwrap_or(f64::NAN),
                check: format!("failed: {}", init["error"]),
            });
            continue;
        }
        let prefix = format!("/data/{side}/");
        let mut failed = false;
        for step in ["tree", "slice"] {
            if failed {
                break;
            }
            let since = log_len(log);
            let args = match step {
                "tree" => json!({ "url": url_of(side) }),
                _ => {
                    json!({ "path": file["dataset"], "start": file["start"], "count": file["count"] })
                }
            };
            let r = ask(b, side, step, &args);
            let (requests, bytes, heads) = counted(log, since, &prefix);
            let check = if r["ok"] != json!(true) {
                failed = true;
                format!(
                    "failed: {}",
                    r["error"].as_str().unwrap_or("no answer").replace(',', ";")
                )
            } else if step == "tree" {
                let mut got: Vec<Value> =
                    r["answer"]["tree"].as_array().cloned().unwrap_or_default();
                got.sort_by_key(|v| v.to_string());
                let mut want: Vec<Value> = want_tree.as_array().cloned().unwrap_or_default();
                want.sort_by_key(|v| v.to_string());
                if got == want {
                    format!("ok ({} objects)", got.len())
                } else {
                    format!(
                        "tree differs from h5py's ({} objects vs {})",
                        got.len(),
                        want.len()
                    )
                }
            } else {
                let (n, s) = (&r["answer"]["elements"], r["answer"]["sum"].as_f64());
                if n == &file["elements"] && s == file["sum"].as_f64() {
                    format!("ok (sum {})", file["sum"])
                } else {
                    format!("slice differs from h5py's: {} values; sum {:?}", n, s)
                }
            };
            steps.push(Step {
                side,
                step,
                requests,
                heads,
                bytes,
                ms: r["ms"].as_f64().unwrap_or(f64::NAN),
                check,
            });
        }
    }
    steps
}

/// The live figure at one polling interval: each flush's (shown − flushed) in ms.
fn live(
    root: &Path,
    chrome: &Path,
    python: &Path,
    h5chunk: &Path,
    dir: &Path,
    flushes: usize,
    poll: Option<u32>,
) -> Result<Vec<f64>, String> {
    let file = dir.join(format!("live-{}.h5", poll.unwrap_or(0)));
    let _ = std::fs::remove_file(&file);
    let mut writer = Command::new(python)
        .arg(root.join("benches/browser/live_writer.py"))
        .arg(&file)
        .arg(flushes.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run the writer: {e}"))?;
    let mut to_writer = writer.stdin.take().ok_or("no writer stdin")?;
    let mut from_writer = BufReader::new(writer.stdout.take().ok_or("no writer stdout")?);
    let mut line = String::new();
    from_writer
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    if line.trim() != "ready" {
        let _ = writer.kill();
        return Err(format!("the writer said {line:?}"));
    }
    let mut view = Command::new(h5chunk)
        .arg("view")
        .arg(&file)
        .args(["--exit-after", "600"])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run h5chunk view: {e}"))?;
    let mut url = String::new();
    if let Some(out) = view.stdout.take() {
        BufReader::new(out)
            .read_line(&mut url)
            .map_err(|e| e.to_string())?;
    }
    let query = poll.map(|p| format!("?poll={p}")).unwrap_or_default();
    let page = format!("{}{query}#/live/signal", url.trim());
    let result = (|| {
        let mut b = cdp::Browser::open(chrome, dir, &page);
        let length = "(() => { try { const p = JSON.parse(document.getElementById('plotted').textContent); \
                      return p.path === '/live/signal' ? p.values.length : -1 } catch (e) { return -1 } })()";
        b.wait_for(&format!("{length} === 100"), 60);
        b.eval(&format!(
            "window.__seen = {{}}; new MutationObserver(() => {{ const n = {length}; \
             if (n > 0 && !(n in __seen)) __seen[n] = Date.now(); }}).observe(\
             document.getElementById('plotted'), {{ childList: true, characterData: true, subtree: true }}); true"
        ));
        writeln!(to_writer, "go").map_err(|e| e.to_string())?;
        to_writer.flush().map_err(|e| e.to_string())?;
        let mut flushed = Vec::new();
        for _ in 0..flushes {
            let mut l = String::new();
            from_writer.read_line(&mut l).map_err(|e| e.to_string())?;
            let v: Value =
                serde_json::from_str(l.trim()).map_err(|e| format!("writer said {l:?}: {e}"))?;
            flushed.push((
                v["length"].as_u64().unwrap_or(0),
                v["flushed_ms"].as_f64().unwrap_or(f64::NAN),
            ));
        }
        let last = flushed.last().map(|f| f.0).unwrap_or(0);
        b.wait_for(&format!("{last} in window.__seen"), 30);
        let seen = b.eval("window.__seen");
        let mut lat = Vec::new();
        for (n, at) in flushed {
            // A length the page skipped (two flushes inside one poll) shows with the next one.
            let shown = seen
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.parse::<u64>().ok()?, v.as_f64()?)))
                .filter(|(k, _)| *k >= n)
                .map(|(_, t)| t)
                .fold(f64::INFINITY, f64::min);
            lat.push(shown - at);
        }
        Ok(lat)
    })();
    let _ = view.kill();
    let _ = view.wait();
    let _ = writer.wait();
    let _ = std::fs::remove_file(&file);
    result
}

fn percentile(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    if s.is_empty() {
        return f64::NAN;
    }
    let i = ((s.len() - 1) as f64 * p).round() as usize;
    s[i.min(s.len() - 1)]
}

fn mib(bytes: u64) -> String {
    format!("{:.2}", bytes as f64 / f64::from(1u32 << 20))
}

/// Flushes of the quick run's live figure.
const QUICK_FLUSHES: usize = 20;
/// Issue 37's goals: h5wasm fetches at least this many times h5chunk's bytes for the tree and
/// the slice...
const MIN_RATIO: f64 = 20.0;
/// ... and `h5chunk view` (at its default polling) shows a flushed row within this many ms (p50).
const MAX_P50_MS: f64 = 500.0;
/// The live table's row for the page's default polling (`view.js`'s `POLL_MS`).
const DEFAULT_LABEL: &str = "default (250 ms)";

/// `bench --browser [--flushes N] [--quick]`: `--quick` is what `cargo xtask test` runs
/// ([`quick`]; `--flushes` does not apply).
pub fn run(root: &Path, args: &[String]) -> TaskResult {
    let mut flushes = DEFAULT_FLUSHES;
    let mut quick_run = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--flushes" => {
                flushes = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n: &usize| n >= 1)
                    .ok_or("--flushes needs a count")?;
            }
            "--quick" => quick_run = true,
            other => return Err(format!("bench --browser: unexpected argument `{other}`")),
        }
    }
    let python = python(root)?;
    let pkg = wasm_pkg(root)?;
    if quick_run {
        return quick(root, &python, &pkg);
    }
    let h5chunk = h5chunk_binary(root)?;
    run_with(root, &python, &pkg, &h5chunk, flushes, &[Some(100), None])
}

/// The quick run for `cargo xtask test`, with its venv and npm package: both sides on the
/// 4 GiB file (h5chunk must agree with h5py, and fetch at most 1/20 of h5wasm's bytes) and
/// the live figure at the default polling over 20 flushes (p50 within 500 ms); about 30 s.
pub fn quick(root: &Path, python: &Path, pkg: &Path) -> TaskResult {
    // The binary the test run just built (its features: every one), rather than a dev build
    // with the CLI's own features, which would compile the crates again.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| root.join("target"), PathBuf::from);
    let built = target.join("debug").join("h5chunk");
    let h5chunk = if built.is_file() {
        built
    } else {
        h5chunk_binary(root)?
    };
    run_with(root, python, pkg, &h5chunk, QUICK_FLUSHES, &[None])
}

fn run_with(
    root: &Path,
    python: &Path,
    pkg: &Path,
    h5chunk: &Path,
    flushes: usize,
    polls: &[Option<u32>],
) -> TaskResult {
    let chrome = crate::find_chromium()
        .ok_or("no Chromium (apt-get install chromium, or set H5CHUNK_CHROMIUM)")?;
    let (python, pkg) = (python.to_owned(), pkg.to_owned());
    let h5wasm = h5wasm(root)?;
    let dir = root.join("target").join("tmp").join("browser-bench");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let out_dir = root.join("target").join("bench");
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;

    let remote = dir.join("run.h5");
    eprintln!(
        "xtask bench --browser: writing {} with h5py",
        remote.display()
    );
    let made = Command::new(&python)
        .arg(root.join("benches/browser/make_file.py"))
        .arg(&remote)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !made.status.success() {
        return Err("benches/browser/make_file.py failed".into());
    }
    let file: Value =
        serde_json::from_slice(&made.stdout).map_err(|e| format!("make_file.py's answer: {e}"))?;
    let size = file["size"].as_u64().unwrap_or(0);

    let (base, log) = start_server(vec![
        ("/bench/".to_owned(), root.join("benches").join("browser")),
        ("/pkg/".to_owned(), pkg),
        ("/h5wasm/".to_owned(), h5wasm),
        ("/data/h5chunk/".to_owned(), dir.clone()),
        ("/data/h5chunk_async/".to_owned(), dir.clone()),
        ("/data/h5wasm/".to_owned(), dir.clone()),
    ])?;
    eprintln!("xtask bench --browser: serving on {base}");
    let steps = {
        let mut b = cdp::Browser::open(&chrome, &dir, &format!("{base}/bench/index.html"));
        b.wait_for("window.benchReady === true", 60);
        let steps = compare(&mut b, &log, &file, |side| {
            format!("{base}/data/{side}/run.h5")
        });
        let errors = b.errors();
        if errors != json!([]) {
            eprintln!("xtask bench --browser: the page's errors: {errors}");
        }
        steps
    };
    let _ = std::fs::remove_file(&remote);

    eprintln!("xtask bench --browser: the live view, {flushes} flushes");
    let mut lives = Vec::new();
    for &poll in polls {
        let label = poll.map_or_else(|| DEFAULT_LABEL.to_owned(), |p| format!("{p} ms"));
        match live(root, &chrome, &python, h5chunk, &dir, flushes, poll) {
            Ok(lat) => lives.push((label, Ok(lat))),
            Err(e) => lives.push((label, Err(e))),
        }
    }

    // The table and the CSV.
    let mut csv = String::from("side,step,requests,head_requests,bytes,ms,check\n");
    let mut failures = Vec::new();
    println!();
    println!(
        "a {:.2} GiB remote file ({} bytes; the slice: {} from {} count {}, 1 MiB at byte {}):",
        size as f64 / f64::from(1u32 << 30),
        size,
        file["dataset"].as_str().unwrap_or(""),
        file["start"],
        file["count"],
        file["slice_offset"]
    );
    println!(
        "{:<14} {:<6} {:>11} {:>13} {:>10} {:>10}  check",
        "side", "step", "requests", "bytes", "MiB", "ms"
    );
    let mut totals: Vec<(&str, usize, u64, f64, bool)> = Vec::new();
    for s in &steps {
        let reqs = if s.heads > 0 {
            format!("{} ({} HEAD)", s.requests, s.heads)
        } else {
            s.requests.to_string()
        };
        println!(
            "{:<14} {:<6} {:>11} {:>13} {:>10} {:>10.1}  {}",
            s.side,
            s.step,
            reqs,
            s.bytes,
            mib(s.bytes),
            s.ms,
            s.check
        );
        csv.push_str(&format!(
            "{},{},{},{},{},{:.1},{}\n",
            s.side, s.step, s.requests, s.heads, s.bytes, s.ms, s.check
        ));
        // h5wasm's failures are figures of the comparison; h5chunk's fail the task.
        if !s.check.starts_with("ok") && s.side == "h5chunk" {
            failures.push(format!("{} {}: {}", s.side, s.step, s.check));
        }
        match totals.iter_mut().find(|t| t.0 == s.side) {
            Some(t) => {
                t.1 += s.requests;
                t.2 += s.bytes;
                t.3 += s.ms;
                t.4 &= s.check.starts_with("ok");
            }
            None => totals.push((s.side, s.requests, s.bytes, s.ms, s.check.starts_with("ok"))),
        }
    }
    for (side, requests, bytes, ms, ok) in &totals {
        println!(
            "{:<14} {:<6} {:>11} {:>13} {:>10} {:>10.1}  {}",
            side,
            "both",
            requests,
            bytes,
            mib(*bytes),
            ms,
            if *ok { "ok" } else { "incomplete" }
        );
        csv.push_str(&format!(
            "{side},tree+slice,{requests},,{bytes},{ms:.1},{}\n",
            if *ok { "ok" } else { "incomplete" }
        ));
    }
    let ours = totals.iter().find(|t| t.0 == "h5chunk");
    let theirs = totals.iter().find(|t| t.0 == "h5wasm");
    if let (Some(o), Some(t)) = (ours, theirs) {
        let ratio = t.2 as f64 / o.2.max(1) as f64;
        println!(
            "h5wasm fetched {ratio:.1}x the bytes h5chunk fetched (goal: at least 20x){}",
            if t.4 { "" } else { " (h5wasm did not finish)" }
        );
        csv.push_str(&format!("ratio,h5wasm/h5chunk bytes,,,,,{ratio:.1}\n"));
        if t.4 && ratio < MIN_RATIO {
            failures.push(format!(
                "h5wasm fetched {ratio:.1}x h5chunk's bytes, not at least {MIN_RATIO}x"
            ));
        }
    }
    println!();
    println!("h5chunk view following an h5py SWMR writer: flush returned -> row shown in the page");
    println!(
        "{:<20} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "polling", "flushes", "p50 ms", "p90 ms", "min ms", "max ms"
    );
    for (label, r) in &lives {
        match r {
            Ok(lat) => {
                let (p50, p90) = (percentile(lat, 0.5), percentile(lat, 0.9));
                let min = lat.iter().copied().fold(f64::INFINITY, f64::min);
                let max = lat.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                println!(
                    "{label:<20} {:>8} {p50:>8.0} {p90:>8.0} {min:>8.0} {max:>8.0}",
                    lat.len()
                );
                csv.push_str(&format!(
                    "view,live poll {label},{},,,{p50:.0},p50 (p90 {p90:.0}; min {min:.0}; max {max:.0})\n",
                    lat.len()
                ));
                if label == DEFAULT_LABEL && (p50.is_nan() || p50 > MAX_P50_MS) {
                    failures.push(format!(
                        "the live view at its default polling: p50 {p50:.0} ms, over {MAX_P50_MS} ms"
                    ));
                }
            }
            Err(e) => {
                println!("{label:<20} failed: {e}");
                failures.push(format!("live view, polling {label}: {e}"));
            }
        }
    }
    println!();
    crate::bench_verdict(
        "bench --browser",
        &out_dir.join("browser.csv"),
        &csv,
        failures,
        Vec::new(),
    )
}
