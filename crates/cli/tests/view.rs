//! `h5chunk view`: the JSON API over loopback HTTP (values equal the library's), and the page
//! in headless Chromium (Debian's package, `H5CHUNK_CHROMIUM`): the values it plots equal
//! h5py's, and a screenshot of it.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

#[path = "support/cdp.rs"]
mod cdp;
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{s, tmp};
use h5chunk::File;
use h5chunk_testkit::{fixtures, interop};
use serde_json::Value;

/// A running `h5chunk view`, stopped on drop.
struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT/`
    url: String,
}

impl Server {
    fn start(file: &Path, extra: &[&str]) -> Server {
        Server::start_with(s(file), extra, &[])
    }

    /// `h5chunk view WHAT` (a path or a URL) with these environment variables.
    fn start_with(what: &str, extra: &[&str], env: &[(String, String)]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_h5chunk"))
            .args(["view", what])
            .envs(env.iter().map(|(k, v)| (k, v)))
            // A test that fails before its drop still leaves no server behind for long.
            .args(["--exit-after", "600"])
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim().to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");
        Server { child, url }
    }

    fn port(&self) -> u16 {
        self.url
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches('/')
            .parse()
            .unwrap()
    }

    /// One request: the status code and body.
    fn request(&self, method: &str, target: &str) -> (u16, String) {
        self.request_to(&format!("127.0.0.1:{}", self.port()), method, target)
    }

    /// One request naming `host` in its `Host` header.
    fn request_to(&self, host: &str, method: &str, target: &str) -> (u16, String) {
        let mut c = TcpStream::connect(("127.0.0.1", self.port())).unwrap();
        write!(
            c,
            "{method} {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut all = String::new();
        c.read_to_string(&mut all).unwrap();
        let (head, body) = all.split_once("\r\n\r\n").unwrap();
        let code = head.split(' ').nth(1).unwrap().parse().unwrap();
        (code, body.to_owned())
    }

    fn json(&self, target: &str) -> Value {
        let (code, body) = self.request("GET", target);
        assert_eq!(code, 200, "{target}: {body}");
        serde_json::from_str(&body).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn numbers(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

#[test]
fn view_serves_the_page_and_json_of_the_file_on_loopback() {
    let file = fixtures::dir().join("sb0_earliest.h5");
    let server = Server::start(&file, &[]);
    // The page and its assets, from the binary.
    let (code, page) = server.request("GET", "/");
    assert_eq!(code, 200);
    assert!(page.contains("<script src=\"/view.js\">"), "{page}");
    assert!(
        !page.contains("https://"),
        "the page loads nothing from elsewhere"
    );
    for asset in ["/view.js", "/view.css"] {
        let (code, body) = server.request("GET", asset);
        assert_eq!(code, 200, "{asset}");
        assert!(
            !body.contains("https://") && !body.contains("http://"),
            "{asset}"
        );
    }
    // The tree names every dataset of the listing.
    let tree = server.json("/api/tree").to_string();
    for path in ["/g1/g2/leaf_i4", "/chunked_2d", "/unlimited_2d", "/soft"] {
        assert!(tree.contains(&format!("\"{path}\"")), "{path}: {tree}");
    }
    // Metadata as the library says it.
    let info = server.json("/api/info?path=%2Fchunked_2d");
    assert_eq!(info["chunks"], serde_json::json!([4, 7]));
    assert_eq!(info["index"], "btree1");
    assert_eq!(info["shape"], serde_json::json!([20, 30]));
    assert_eq!(info["dtype"], "<i4");
    // A strided hyperslab's values and statistics.
    let d = server.json("/api/data?path=/chunked_2d&start=2,1&count=5,7&step=3,4");
    let f = File::open(&file).unwrap();
    let want: Vec<i32> = f
        .dataset("/chunked_2d")
        .unwrap()
        .read_slice(&[2, 1], &[5, 7], Some(&[3, 4]))
        .unwrap();
    let want: Vec<f64> = want.iter().map(|&v| f64::from(v)).collect();
    assert_eq!(numbers(&d["values"]), want);
    let min = want.iter().copied().fold(f64::INFINITY, f64::min);
    let max = want.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert_eq!(d["stats"]["min"].as_f64(), Some(min));
    assert_eq!(d["stats"]["max"].as_f64(), Some(max));
    // Errors: a JSON reason, a status; nothing but GET.
    let (code, body) = server.request("GET", "/api/data?path=/nope");
    assert_eq!(code, 400);
    assert!(body.contains("\"error\""), "{body}");
    let (code, _) = server.request("GET", "/api/data?path=/chunked_2d&start=0&count=1&step=1");
    assert_eq!(code, 400, "a 1-D selection of a 2-D dataset");
    assert_eq!(server.request("GET", "/elsewhere").0, 404);
    assert_eq!(server.request("POST", "/api/tree").0, 405);
    // Another site's name pointed at 127.0.0.1 (DNS rebinding) gets nothing.
    assert_eq!(server.request_to("evil.example", "GET", "/api/tree").0, 403);
    assert_eq!(server.request_to("evil.example:80", "GET", "/").0, 403);
    let local = format!("localhost:{}", server.port());
    assert_eq!(server.request_to(&local, "GET", "/api/tree").0, 200);
    // Refresh: the shape (nobody is writing).
    let r = server.json("/api/refresh?path=/unlimited_2d");
    assert_eq!(r["shape"], serde_json::json!([9, 10]));
}

#[test]
fn view_reads_a_file_in_object_storage_by_its_url() {
    let Some(python) = interop::python("view_reads_a_file_in_object_storage") else {
        return;
    };
    let moto = h5chunk_testkit::moto::Moto::start(&python);
    let local = fixtures::dir().join("sb0_earliest.h5");
    moto.upload(&python, "view-bucket", &[&local]);
    let env: Vec<(String, String)> = moto
        .env()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let server = Server::start_with("s3://view-bucket/sb0_earliest.h5", &[], &env);
    let tree = server.json("/api/tree");
    assert_eq!(tree["file"], "sb0_earliest.h5");
    assert!(tree.to_string().contains("\"/g1/u1_chunked\""), "{tree}");
    let d = server.json("/api/data?path=/chunked_2d&start=0,0&count=20,30&step=1,1");
    let want: Vec<i32> = File::open(&local)
        .unwrap()
        .dataset("/chunked_2d")
        .unwrap()
        .read()
        .unwrap();
    let want: Vec<f64> = want.iter().map(|&v| f64::from(v)).collect();
    assert_eq!(numbers(&d["values"]), want);
}

#[test]
fn view_stops_after_exit_after_and_on_ctrl_c_and_refuses_a_taken_port() {
    let file = fixtures::dir().join("sb0_earliest.h5");
    let mut child = Command::new(env!("CARGO_BIN_EXE_h5chunk"))
        .args(["view", s(&file), "--exit-after", "1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line
        .trim()
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    // While it serves, its port is taken.
    let err = common::fails(&["view", s(&file), "--port", &port.to_string()]);
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success());
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "still serving");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Ctrl-C (SIGINT) stops it too.
    let mut server = Server::start(&file, &[]);
    let pid = server.child.id().to_string();
    let sent = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(sent.success());
    let start = Instant::now();
    while server.child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "SIGINT did not stop it"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Run Chromium headless on `url` with `args`, killed after two minutes; its stdout.
fn chromium(chrome: &Path, dir: &Path, url: &str, args: &[&str]) -> String {
    let profile = dir.join("chromium-profile");
    let mut child = Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--window-size=1280,960",
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", chrome.display()));
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("chromium did not finish with {url} in two minutes");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap()
}

/// What the page says it plotted (`#plotted`), from a dumped DOM.
fn plotted(dom: &str) -> Value {
    let start = dom
        .find("id=\"plotted\"")
        .unwrap_or_else(|| panic!("no #plotted: {dom}"));
    let open = start + dom[start..].find('>').unwrap() + 1;
    let close = open + dom[open..].find("</pre>").unwrap();
    let text = dom[open..close]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text:?}"))
}

/// The demo file: a growable 1-D signal, a 3-D stack of images, strings and attributes.
const WRITE: &str = r#"
import h5py, json, sys
import numpy as np
with h5py.File(sys.argv[1], "w", libver="latest") as f:
    f.attrs["title"] = "h5chunk view demo"
    g = f.create_group("signals")
    t = np.linspace(0, 8 * np.pi, 2000)
    d = g.create_dataset("sine", data=np.sin(t) * np.exp(-t / 15), chunks=(256,),
                         compression="gzip", maxshape=(None,))
    d.attrs["units"] = "V"
    d.attrs["rate_hz"] = 250.0
    i = np.arange(500)[:, None]
    g.create_dataset("xyz", data=np.hstack([np.cos(i / 40), np.sin(i / 40), i / 500.0]),
                     chunks=(100, 3), maxshape=(None, 3))
    y, x = np.mgrid[0:96, 0:128]
    frames = np.stack([
        np.exp(-((x - 30 - 10 * k) ** 2 + (y - 48) ** 2) / 300.0)
        + 0.5 * np.exp(-((x - 100) ** 2 + (y - 20 - 8 * k) ** 2) / 150.0)
        for k in range(6)]).astype("<f4")
    im = f.create_dataset("images/frames", data=frames, chunks=(1, 48, 64),
                          compression="gzip", shuffle=True)
    im.attrs["exposure_ms"] = 12.5
    f["images/labels"] = np.array([b"first", b"second", b"third"])
    rec = np.dtype([("id", "<i4"), ("x", "<f8"), ("tag", "S4")])
    f["records"] = np.array([(1, 0.5, b"a"), (2, -1.25, b"bb"), (3, 1e-9, b"c,d")], dtype=rec)
with h5py.File(sys.argv[1], "r") as f:
    print(json.dumps({
        "sine": f["signals/sine"][:].tolist(),
        "xyz": f["signals/xyz"][:].ravel().tolist(),
        "frame0": f["images/frames"][0].astype(float).ravel().tolist(),
        "labels": [b.decode() for b in f["images/labels"][:]],
    }))
"#;

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= y.abs() * 1e-15)
}

#[test]
fn page_in_chromium_plots_h5py_values_and_saves_a_screenshot() {
    let test = "page_in_chromium_plots_h5py_values";
    let Some(python) = interop::python(test) else {
        return;
    };
    let Some(chrome) = interop::tool("H5CHUNK_CHROMIUM", test) else {
        return;
    };
    let dir = tmp(test);
    let file = dir.join("demo.h5");
    let said = interop::run_python(&python, WRITE, &[s(&file)]);
    let h5py: Value = serde_json::from_str(said.trim()).unwrap();
    let server = Server::start(&file, &[]);

    // The 1-D signal: a line of every value (2,000 points fit), as h5py reads them.
    let dom = chromium(
        &chrome,
        &dir,
        &format!("{}#/signals/sine", server.url),
        &["--dump-dom"],
    );
    let p = plotted(&dom);
    assert_eq!(p["path"], "/signals/sine");
    assert_eq!(p["kind"], "line");
    assert_eq!(p["step"], serde_json::json!([1]));
    assert!(
        close(&numbers(&p["values"]), &numbers(&h5py["sine"])),
        "sine"
    );
    // The tree shows every object; the metadata card the chunk index and filters.
    for path in [
        "/signals",
        "/signals/sine",
        "/images/frames",
        "/images/labels",
    ] {
        assert!(dom.contains(&format!("data-path=\"{path}\"")), "{path}");
    }
    assert!(
        dom.contains("earray") && dom.contains("deflate(4)"),
        "metadata"
    );
    assert!(
        dom.contains("rate_hz") && dom.contains("250.0"),
        "attributes"
    );

    // A 2-D dataset of three columns (a logger's rows): a line per column, every value.
    let dom = chromium(
        &chrome,
        &dir,
        &format!("{}#/signals/xyz", server.url),
        &["--dump-dom"],
    );
    let p = plotted(&dom);
    assert_eq!(p["kind"], "lines");
    assert_eq!(p["count"], serde_json::json!([500, 3]));
    assert!(close(&numbers(&p["values"]), &numbers(&h5py["xyz"])), "xyz");
    assert!(dom.contains("[:, 2]"), "a legend entry per column");

    // The 3-D stack: an image of frame 0 (the slider's first position).
    let dom = chromium(
        &chrome,
        &dir,
        &format!("{}#/images/frames", server.url),
        &["--dump-dom"],
    );
    let p = plotted(&dom);
    assert_eq!(p["kind"], "image");
    assert_eq!(p["start"], serde_json::json!([0, 0, 0]));
    assert_eq!(p["count"], serde_json::json!([1, 96, 128]));
    assert!(
        close(&numbers(&p["values"]), &numbers(&h5py["frame0"])),
        "frame 0"
    );
    assert!(dom.contains("shuffle, deflate(4)"), "filters in order");
    assert!(
        dom.contains("aria-label=\"index along dimension 0\""),
        "a slider for dim 0"
    );

    // Strings: shown as text.
    let dom = chromium(
        &chrome,
        &dir,
        &format!("{}#/images/labels", server.url),
        &["--dump-dom"],
    );
    let p = plotted(&dom);
    let want: Vec<String> = h5py["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| format!("\"{}\"", v.as_str().unwrap()))
        .collect();
    assert_eq!(p["text"], serde_json::json!(want));

    // A compound dataset: a table with a column per field.
    let dom = chromium(
        &chrome,
        &dir,
        &format!("{}#/records", server.url),
        &["--dump-dom"],
    );
    for cell in [
        "<th>id</th>",
        "<th>x</th>",
        "<th>tag</th>",
        ">-1.25<",
        ">1e-9<",
        ">\"c,d\"<",
    ] {
        assert!(dom.contains(cell), "{cell}: {dom}");
    }

    // The screenshot: the image of the stack.
    let shot = dir.join("view.png");
    chromium(
        &chrome,
        &dir,
        &format!("{}#/images/frames", server.url),
        &[&format!("--screenshot={}", shot.display())],
    );
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png.len() > 20_000, "a blank page? {} bytes", png.len());
    let keep = Path::new(env!("CARGO_TARGET_TMPDIR")).join("view.png");
    std::fs::copy(&shot, &keep).unwrap();
    // `H5CHUNK_UPDATE_SCREENSHOT=1` refreshes the README's picture.
    if std::env::var("H5CHUNK_UPDATE_SCREENSHOT").as_deref() == Ok("1") {
        let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/view.png");
        std::fs::copy(&shot, &docs).unwrap();
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An h5py (libhdf5) SWMR writer: 100 values of a growable 1-D dataset flushed, then as many
/// more as each line of stdin says, each batch flushed; after each flush, every value so far
/// (JSON) on stdout. `f` adds a frame to a stack of 4 × 5 frames (its values on stdout); `0`
/// ends it.
const SWMR_WRITER: &str = r#"
import h5py, json, sys
import numpy as np
f = h5py.File(sys.argv[1], "w", libver="latest")
d = f.create_dataset("live/signal", shape=(0,), maxshape=(None,), chunks=(64,), dtype="<f8")
f.create_dataset("live/other", data=np.arange(3))
frames = f.create_dataset("live/frames", data=np.arange(20.0).reshape(1, 4, 5),
                          maxshape=(None, 4, 5), chunks=(1, 4, 5))
f.swmr_mode = True
def add(n):
    i = d.shape[0]
    d.resize((i + n,))
    d[i:] = np.sin(np.arange(i, i + n) / 10.0) * (1 + np.arange(i, i + n) / 100.0)
    d.flush()
    print(json.dumps(d[:].tolist()), flush=True)
def frame():
    k = frames.shape[0]
    frames.resize((k + 1, 4, 5))
    frames[k] = np.arange(20.0).reshape(4, 5) * (k + 1) - k
    frames.flush()
    print(json.dumps(frames[k].ravel().tolist()), flush=True)
add(100)
for line in sys.stdin:
    if line.strip() == "f":
        frame()
        continue
    n = int(line)
    if n == 0:
        break
    add(n)
f.close()
"#;

#[test]
fn page_follows_an_h5py_swmr_writer_and_moves_through_the_tree_by_keyboard() {
    let test = "page_follows_an_h5py_swmr_writer";
    let Some(python) = interop::python(test) else {
        return;
    };
    let Some(chrome) = interop::tool("H5CHUNK_CHROMIUM", test) else {
        return;
    };
    let dir = tmp(test);
    let file = dir.join("live.h5");
    let mut writer = Command::new(&python)
        .args(["-c", SWMR_WRITER, s(&file)])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut to_writer = writer.stdin.take().unwrap();
    let mut from_writer = BufReader::new(writer.stdout.take().unwrap());
    let mut flushed = || -> Vec<f64> {
        let mut line = String::new();
        from_writer.read_line(&mut line).unwrap();
        serde_json::from_str::<Vec<f64>>(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    };
    let first = flushed();
    let server = Server::start(&file, &[]);
    let mut page = cdp::Browser::open(
        &chrome,
        &dir,
        &format!("{}?poll=100#/live/signal", server.url),
    );
    let plotted_len = "(() => { try { const p = JSON.parse(document.getElementById('plotted').textContent); \
                       return p.path === '/live/signal' ? p.values.length : -1 } catch (e) { return -1 } })()";
    page.wait_for(&format!("{plotted_len} === 100"), 30);
    let values = |page: &mut cdp::Browser| -> Vec<f64> {
        numbers(&page.eval("JSON.parse(document.getElementById('plotted').textContent).values"))
    };
    assert!(close(&values(&mut page), &first), "the first 100");
    assert_eq!(
        page.eval("document.getElementById('live').hidden"),
        serde_json::json!(false)
    );
    // Each flush shows: the plot grows to what h5py wrote.
    let mut latencies = Vec::new();
    for n in [50u64, 7, 300] {
        writeln!(to_writer, "{n}").unwrap();
        to_writer.flush().unwrap();
        let now = flushed();
        let took = page.wait_for(&format!("{plotted_len} === {}", now.len()), 30);
        latencies.push(took);
        assert!(
            close(&values(&mut page), &now),
            "after {} values",
            now.len()
        );
    }
    let _ = writeln!(
        std::io::stderr(),
        "{test}: flush to plot {:?} (polling every 100 ms)",
        latencies
    );
    // The tree by keyboard: the focus is on the dataset opened.
    let focused = "document.activeElement.dataset.path";
    assert_eq!(page.eval(focused), "/live/signal");
    page.key("ArrowUp");
    assert_eq!(page.eval(focused), "/live/other");
    page.wait_for(
        "JSON.parse(document.getElementById('plotted').textContent).path === '/live/other'",
        30,
    );
    assert!(
        page.eval("location.hash")
            .as_str()
            .unwrap()
            .contains("other")
    );
    // Left: to the parent group; again: fold it; right: unfold; right again: its first child.
    page.key("ArrowLeft");
    assert_eq!(page.eval(focused), "/live");
    page.key("ArrowLeft");
    let expanded = "document.activeElement.getAttribute('aria-expanded')";
    assert_eq!(page.eval(expanded), "false");
    page.key("ArrowDown");
    assert_eq!(
        page.eval(focused),
        "/live",
        "the folded group's members are skipped"
    );
    page.key("Home");
    assert_eq!(page.eval(focused), "/");
    page.key("ArrowDown");
    page.key("ArrowRight");
    assert_eq!(page.eval(expanded), "true");
    page.key("ArrowRight");
    assert_eq!(page.eval(focused), "/live/frames");
    page.key("End");
    assert_eq!(page.eval(focused), "/live/signal");
    // A stack of frames being written: the image stays at the newest frame as frames land.
    page.eval("location.hash = '#' + encodeURIComponent('/live/frames')");
    let newest = "(() => { try { const p = JSON.parse(document.getElementById('plotted').textContent); \
                  return p.path === '/live/frames' ? p.start[0] : -1 } catch (e) { return -1 } })()";
    page.wait_for(&format!("{newest} === 0"), 30);
    for k in 1..=2 {
        writeln!(to_writer, "f").unwrap();
        to_writer.flush().unwrap();
        let now = flushed();
        page.wait_for(&format!("{newest} === {k}"), 30);
        assert!(close(&values(&mut page), &now), "frame {k}");
    }
    assert_eq!(
        page.eval("document.querySelector('#controls output').textContent"),
        "2"
    );
    writeln!(to_writer, "0").unwrap();
    assert!(writer.wait().unwrap().success());
    // No uncaught error or rejection on the way (a thrown one is seen: checked by hand).
    assert_eq!(page.errors(), serde_json::json!([]), "the page's errors");
    drop(page);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
