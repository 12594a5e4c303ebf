//! The npm package of crates/wasm (`cargo xtask wasm`, `H5CHUNK_WASM_PKG`) in headless
//! Chromium (`H5CHUNK_CHROMIUM`): its example page, served by a static server here, opens an
//! h5py file chosen in its `<input type=file>` (set over the DevTools protocol) in a worker, by
//! Blob slices, and the values it shows equal h5py's for every filter h5chunk has; the same file
//! by URL through range requests (counted: a fraction of the file's bytes); and a file of over
//! 4 GiB (a sparse one: a 4 GiB user block ahead of the superblock); and a file h5py extends
//! between two looks, by URL, seen grown after `refresh`.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

// Keyboard input (`Browser::key`) is not used here.
#[allow(dead_code)]
#[path = "support/cdp.rs"]
mod cdp;
mod common;

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use common::{s, tmp};
use h5chunk_testkit::interop;
use serde_json::{Value, json};

/// A request the server answered from `/data/`: the path and its `Range` header.
type Log = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A static server on loopback: `/example/` from crates/wasm/example, `/pkg/` from the built
/// package, `/data/` from the test's directory (with range requests, logged).
struct Static {
    url: String,
    log: Log,
}

fn mime(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript",
        Some("wasm") => "application/wasm",
        _ => "application/octet-stream",
    }
}

fn serve(mut c: TcpStream, roots: &[(String, PathBuf)], log: &Log) {
    let mut r = BufReader::new(c.try_clone().unwrap());
    let mut line = String::new();
    if r.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let target = line.split(' ').nth(1).unwrap_or("/").to_owned();
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
    let path = target.split('?').next().unwrap_or("/");
    let file = roots.iter().find_map(|(prefix, dir)| {
        let rest = path.strip_prefix(prefix.as_str())?;
        (!rest.contains("..")).then(|| dir.join(rest))
    });
    let Some(mut f) = file.and_then(|p| std::fs::File::open(p).ok()) else {
        let _ = c
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    };
    let size = f.metadata().unwrap().len();
    if path.starts_with("/data/") {
        log.lock().unwrap().push((path.to_owned(), range.clone()));
    }
    let (status, from, to) = match range.as_deref().and_then(|r| r.strip_prefix("bytes=")) {
        Some(r) => {
            let (a, b) = r.split_once('-').unwrap();
            let a: u64 = a.parse().unwrap();
            let b: u64 = b.parse::<u64>().map_or(size, |b| (b + 1).min(size));
            if a >= size {
                let head = format!(
                    "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{size}\r\n\
                     Content-Length: 0\r\nConnection: close\r\n\r\n"
                );
                let _ = c.write_all(head.as_bytes());
                return;
            }
            (206, a, b)
        }
        None => (200, 0, size),
    };
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n",
        if status == 206 {
            "Partial Content"
        } else {
            "OK"
        },
        mime(path),
        to - from
    );
    if status == 206 {
        head.push_str(&format!(
            "Content-Range: bytes {from}-{}/{size}\r\n",
            to - 1
        ));
    }
    head.push_str("\r\n");
    if c.write_all(head.as_bytes()).is_err() {
        return;
    }
    f.seek(SeekFrom::Start(from)).unwrap();
    let _ = std::io::copy(&mut (&mut f).take(to - from), &mut c);
}

impl Static {
    fn start(pkg: &Path, data: &Path) -> Static {
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wasm/example");
        let roots = Arc::new(vec![
            ("/example/".to_owned(), example),
            ("/pkg/".to_owned(), pkg.to_owned()),
            ("/data/".to_owned(), data.to_owned()),
        ]);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let log: Log = Arc::default();
        let l = log.clone();
        std::thread::spawn(move || {
            for c in listener.incoming().flatten() {
                let (roots, log) = (roots.clone(), l.clone());
                std::thread::spawn(move || serve(c, &roots, &log));
            }
        });
        Static { url, log }
    }
}

/// h5py writes the file (every filter h5chunk reads, the chunk indexes of libver latest, a
/// contiguous 8 MiB dataset, strings, a scalar) and prints, per dataset, the values the page
/// shows: the first 100 of its first row (`d[0, ..., 0, :100]`).
const WRITE: &str = r#"
import sys, json
import numpy as np, h5py, hdf5plugin
path, userblock = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(37)
kw = {"userblock_size": userblock} if userblock else {}
with h5py.File(path, "w", libver="latest", **kw) as f:
    s = f.create_group("signals")
    s.attrs["rate_hz"] = 250.0
    d = s.create_dataset("sine", data=np.sin(np.arange(1000) / 10.0), chunks=(100,),
                         maxshape=(None,), shuffle=True, compression="gzip", compression_opts=4)
    d.attrs["units"] = "V"
    s.create_dataset("counts", data=rng.integers(-1000, 1000, (20, 30), dtype=np.int32),
                     chunks=(5, 10), fletcher32=True, compression="gzip")
    s.create_dataset("frames", data=rng.random((4, 32, 48), dtype=np.float32),
                     chunks=(1, 32, 48), **hdf5plugin.LZ4())
    g = f.create_group("filters")
    g.create_dataset("zstd", data=np.arange(5000, dtype=np.int16) % 300 - 150,
                     chunks=(1000,), **hdf5plugin.Zstd())
    g.create_dataset("bzip2", data=(np.arange(4000, dtype=np.uint16) * 7) % 1000,
                     chunks=(500,), **hdf5plugin.BZip2())
    g.create_dataset("blosc", data=rng.normal(size=(50, 200)), chunks=(10, 200),
                     **hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE))
    g.create_dataset("bitshuffle", data=np.arange(3000, dtype=np.int64) * -3,
                     chunks=(600,), **hdf5plugin.Bitshuffle(cname="lz4"))
    g.create_dataset("lzf", data=np.arange(2000, dtype=np.uint32) ** 2, chunks=(250,),
                     compression="lzf")
    g.create_dataset("blosc2", data=np.arange(1500.0) / 7, chunks=(300,),
                     **hdf5plugin.Blosc2(cname="zstd", clevel=5))
    g.create_dataset("szip", data=np.arange(1200, dtype=np.int32) - 600, chunks=(200,),
                     compression="szip")
    p = f.create_group("plain")
    p.create_dataset("contiguous", data=np.linspace(0.0, 1.0, 1 << 20))
    p.create_dataset("chunked", data=np.arange(100000.0), chunks=(4096,))
    p.create_dataset("bytes", data=np.arange(256, dtype=np.uint8))
    p.create_dataset("small", data=np.array([-1, 2, -3], dtype=np.int8))
    p["scalar"] = 3.5
    t = f.create_group("text")
    t.create_dataset("names", data=["alpha", "beta", "γάμμα"], dtype=h5py.string_dtype())
    t.create_dataset("fixed", data=np.array([b"ab", b"cde"], dtype="S4"))
out = {}
with h5py.File(path, "r") as f:
    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            if obj.ndim == 0:
                v = [obj[()].item()]
            else:
                v = obj[(0,) * (obj.ndim - 1) + (slice(0, 100),)].tolist()
            v = [x.decode() if isinstance(x, bytes) else x for x in v]
            out["/" + name] = v
    f.visititems(visit)
print(json.dumps(out))
"#;

/// The values the page shows for `path` (after selecting it).
fn shown(b: &mut cdp::Browser, path: &str) -> Value {
    let v = b.eval(&format!(
        "h5select({path:?}).then(() => {{ const d = document.getElementById('detail'); \
         if (d.dataset.error) return {{ error: d.dataset.error }}; \
         return JSON.parse(document.getElementById('values').dataset.values); }})"
    ));
    assert!(v.get("error").is_none(), "{path}: {v}");
    v
}

fn same(path: &str, got: &Value, want: &Value) {
    let (g, w) = (got.as_array().unwrap(), want.as_array().unwrap());
    assert_eq!(g.len(), w.len(), "{path}: {got} vs {want}");
    for (a, b) in g.iter().zip(w) {
        let equal = match (a.as_f64(), b.as_f64()) {
            // Equal as the doubles JavaScript holds (float32 values widened both sides).
            (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-6 * y.abs().max(1e-30),
            _ => a == b,
        };
        assert!(equal, "{path}: {got} vs {want}");
    }
}

/// Choose `file` in the page's `<input type=file>` and wait for the tree.
fn choose(b: &mut cdp::Browser, file: &Path) {
    let state = choose_any(b, file);
    assert!(state.starts_with("open"), "{state}");
}

/// Choose `file` and wait for the tree or an error: the page's state and status line.
fn choose_any(b: &mut cdp::Browser, file: &Path) -> String {
    b.wait_for(
        "document.readyState === 'complete' && !!window.h5select",
        30,
    );
    b.page("DOM.getDocument", json!({}));
    let input = b.page(
        "Runtime.evaluate",
        json!({ "expression": "document.getElementById('file')" }),
    );
    let object = input["result"]["objectId"].as_str().unwrap().to_owned();
    // The state the last file left is no answer for this one.
    b.eval("document.body.dataset.state = 'choosing'");
    b.page(
        "DOM.setFileInputFiles",
        json!({ "files": [s(file)], "objectId": object }),
    );
    b.wait_for(
        "document.body.dataset.state === 'open' || document.body.dataset.state === 'error'",
        60,
    );
    let state = b
        .eval("document.body.dataset.state + ': ' + document.getElementById('status').textContent");
    // The next choice must fire `change` again, even for the same file.
    b.eval("document.getElementById('file').value = ''");
    state.as_str().unwrap().to_owned()
}

#[test]
fn example_page_reads_h5py_files_by_blob_slices_and_by_range_requests_in_chromium() {
    let test = "wasm_example_page";
    let Some(python) = interop::python(test) else {
        return;
    };
    let Some(chrome) = interop::tool("H5CHUNK_CHROMIUM", test) else {
        return;
    };
    let Some(pkg) = interop::tool("H5CHUNK_WASM_PKG", test) else {
        return;
    };
    assert!(
        pkg.join("h5chunk_wasm_bg.wasm").is_file() && pkg.join("h5chunk_wasm.d.ts").is_file(),
        "{}: no built package (cargo xtask wasm)",
        pkg.display()
    );
    let dir = tmp(test);
    let file = dir.join("demo.h5");
    let said = interop::run_python(&python, WRITE, &[s(&file), "0"]);
    let h5py: Value = serde_json::from_str(said.trim()).unwrap();
    let server = Static::start(&pkg, &dir);

    // A local file, as a person would choose it: the tree, the metadata and every dataset's
    // first values as h5py reads them.
    let mut b = cdp::Browser::open(&chrome, &dir, &format!("{}/example/index.html", server.url));
    choose(&mut b, &file);
    for path in h5py.as_object().unwrap().keys() {
        let n = b.eval(&format!(
            "document.querySelectorAll('#tree li[data-path=\"{path}\"][data-kind=dataset]').length"
        ));
        assert_eq!(n, json!(1), "{path} in the tree");
    }
    for (path, want) in h5py.as_object().unwrap() {
        same(path, &shown(&mut b, path), want);
    }
    let detail = b.eval(
        "h5select('/signals/sine').then(() => document.getElementById('detail').textContent)",
    );
    let detail = detail.as_str().unwrap();
    assert!(
        detail.contains("shuffle, deflate(4)")
            && detail.contains("earray")
            && detail.contains("units"),
        "metadata: {detail}"
    );
    assert_eq!(b.errors(), json!([]), "uncaught errors");

    // The same file by URL: range requests only, and a fraction of its bytes for the tree
    // and the first values of each dataset (the 8 MiB contiguous one read 100 values' worth).
    b.eval(
        "document.getElementById('url').value = '/data/demo.h5'; \
         document.getElementById('open-url').click()",
    );
    b.wait_for("document.body.dataset.state === 'opening'", 10);
    b.wait_for(
        "document.body.dataset.state === 'open' || document.body.dataset.state === 'error'",
        60,
    );
    for (path, want) in h5py.as_object().unwrap() {
        same(path, &shown(&mut b, path), want);
    }
    let log = server.log.lock().unwrap().clone();
    assert!(!log.is_empty(), "no range request");
    assert!(
        log.iter().all(|(p, r)| p == "/data/demo.h5" && r.is_some()),
        "a request without a range: {log:?}"
    );
    let size = std::fs::metadata(&file).unwrap().len();
    let fetched: u64 = log
        .iter()
        .map(|(_, r)| {
            let (a, b) = r
                .as_deref()
                .unwrap()
                .trim_start_matches("bytes=")
                .split_once('-')
                .unwrap();
            (b.parse::<u64>().unwrap() + 1).min(size) - a.parse::<u64>().unwrap()
        })
        .sum();
    assert!(
        fetched * 4 < size,
        "{fetched} bytes asked for of a {size}-byte file"
    );
    eprintln!(
        "{test}: by URL, {} range requests, {fetched} of {size} bytes",
        log.len()
    );

    // A whole chunked dataset by URL (25 uncompressed chunks of 32 KiB, 800 KB over 13
    // blocks): its chunks are prefetched together, so one or two requests, not one a block.
    let before = server.log.lock().unwrap().len();
    let r = b.eval("h5ask({ op: 'read', path: '/plain/chunked' }).then((r) => r.answer)");
    assert_eq!(r["length"], json!(100_000), "{r}");
    assert_eq!(r["sum"].as_f64(), Some(99_999.0 * 100_000.0 / 2.0), "{r}");
    let requests = server.log.lock().unwrap().len() - before;
    assert!(requests <= 2, "{requests} requests for /plain/chunked");

    // Over 4 GiB: the same datasets behind a 4 GiB user block (a hole in a sparse file), so
    // every read is a Blob slice at an offset past 2^32.
    let big = dir.join("big.h5");
    let said = interop::run_python(&python, WRITE, &[s(&big), &(1u64 << 32).to_string()]);
    let h5py_big: Value = serde_json::from_str(said.trim()).unwrap();
    assert!(std::fs::metadata(&big).unwrap().len() > 4 << 30);
    // One browser at a time: they would share the profile in `dir`.
    drop(b);
    let mut b = cdp::Browser::open(&chrome, &dir, &format!("{}/example/index.html", server.url));
    choose(&mut b, &big);
    for path in [
        "/signals/sine",
        "/filters/zstd",
        "/plain/contiguous",
        "/text/names",
    ] {
        same(path, &shown(&mut b, path), &h5py_big[path]);
    }
    assert_eq!(b.errors(), json!([]), "uncaught errors");
    drop(b);
    let _ = std::fs::remove_file(&big);
}

/// h5py writes `/x` (20 values, unlimited) or, given `grow`, extends it to 50.
const GROW: &str = r#"
import sys, json
import numpy as np, h5py
path, grow = sys.argv[1], sys.argv[2] == "grow"
with h5py.File(path, "a" if grow else "w", libver="latest") as f:
    if grow:
        d = f["x"]
        d.resize((50,))
        d[20:] = np.arange(20, 50) * 1.5
    else:
        f.create_dataset("x", data=np.arange(20) * 1.5, chunks=(8,), maxshape=(None,),
                         compression="gzip")
with h5py.File(path, "r") as f:
    print(json.dumps(f["x"][:].tolist()))
"#;

#[test]
fn example_page_sees_a_file_h5py_extended_after_refresh_by_url() {
    let test = "wasm_example_refresh";
    let Some(python) = interop::python(test) else {
        return;
    };
    let Some(chrome) = interop::tool("H5CHUNK_CHROMIUM", test) else {
        return;
    };
    let Some(pkg) = interop::tool("H5CHUNK_WASM_PKG", test) else {
        return;
    };
    let dir = tmp(test);
    let file = dir.join("grow.h5");
    let before: Value =
        serde_json::from_str(interop::run_python(&python, GROW, &[s(&file), "new"]).trim())
            .unwrap();
    let server = Static::start(&pkg, &dir);
    let mut b = cdp::Browser::open(&chrome, &dir, &format!("{}/example/index.html", server.url));
    b.wait_for(
        "document.readyState === 'complete' && !!window.h5select",
        30,
    );
    b.eval(
        "document.getElementById('url').value = '/data/grow.h5'; \
         document.getElementById('open-url').click()",
    );
    b.wait_for(
        "document.body.dataset.state === 'open' || document.body.dataset.state === 'error'",
        60,
    );
    same("/x", &shown(&mut b, "/x"), &before);
    assert_eq!(before.as_array().unwrap().len(), 20);

    let after: Value =
        serde_json::from_str(interop::run_python(&python, GROW, &[s(&file), "grow"]).trim())
            .unwrap();
    // Without a refresh the page keeps the extent it read.
    same("/x", &shown(&mut b, "/x"), &before);
    let r = b.eval("h5ask({ op: 'refresh', path: '/x' }).then((r) => r.answer)");
    assert_eq!(r["shape"], json!([50]), "{r}");
    same("/x", &r["values"], &after);
    assert_eq!(b.errors(), json!([]), "uncaught errors");
}

#[test]
fn example_page_says_why_a_file_does_not_open_and_opens_the_next() {
    let test = "wasm_example_errors";
    let Some(python) = interop::python(test) else {
        return;
    };
    let Some(chrome) = interop::tool("H5CHUNK_CHROMIUM", test) else {
        return;
    };
    let Some(pkg) = interop::tool("H5CHUNK_WASM_PKG", test) else {
        return;
    };
    let dir = tmp(test);
    let good = dir.join("good.h5");
    let want: Value =
        serde_json::from_str(interop::run_python(&python, GROW, &[s(&good), "new"]).trim())
            .unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let (text, cut, empty) = (
        dir.join("text.h5"),
        dir.join("cut.h5"),
        dir.join("empty.h5"),
    );
    std::fs::write(&text, "not an HDF5 file\n".repeat(100)).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 3]).unwrap();
    std::fs::write(&empty, b"").unwrap();
    let server = Static::start(&pkg, &dir);
    let mut b = cdp::Browser::open(&chrome, &dir, &format!("{}/example/index.html", server.url));
    // Each refused with a message (a panic would end the module: the next open would fail).
    for bad in [&text, &empty] {
        let state = choose_any(&mut b, bad);
        assert!(state.starts_with("error: "), "{}: {state}", bad.display());
        assert!(state.len() > "error: ".len() + 10, "{state}");
        eprintln!("{test}: {state}");
    }
    // A file cut short may open (its root group sits early) but says what it cannot read.
    let state = choose_any(&mut b, &cut);
    eprintln!("{test}: {state}");
    if state.starts_with("open") {
        let v = b.eval(
            "h5select('/x').then(() => document.getElementById('detail').dataset.error \
             ?? document.getElementById('values').dataset.values)",
        );
        eprintln!("{test}: /x of the cut file: {v}");
        assert!(v.is_string(), "{v}");
    } else {
        assert!(state.starts_with("error: "), "{state}");
    }
    choose(&mut b, &good);
    same("/x", &shown(&mut b, "/x"), &want);
    assert_eq!(b.errors(), json!([]), "uncaught errors");
}

/// The page's own thread (no worker, so no synchronous request) reads the file by URL through
/// `h5chunk_async.js`: `fetch` range requests, each operation run again until it has its
/// bytes. Every dataset's first values equal h5py's, a whole 8 MiB contiguous dataset reads
/// (one large range), and a file h5py extends is seen grown after `refresh`.
#[test]
fn async_url_reads_on_the_page_equal_h5py_and_see_a_file_grow() {
    let test = "wasm_async_url";
    let Some(python) = interop::python(test) else {
        return;
    };
    let Some(chrome) = interop::tool("H5CHUNK_CHROMIUM", test) else {
        return;
    };
    let Some(pkg) = interop::tool("H5CHUNK_WASM_PKG", test) else {
        return;
    };
    assert!(
        pkg.join("h5chunk_async.js").is_file(),
        "{}: no h5chunk_async.js (cargo xtask wasm)",
        pkg.display()
    );
    let dir = tmp(test);
    let file = dir.join("demo.h5");
    let said = interop::run_python(&python, WRITE, &[s(&file), "0"]);
    let h5py: Value = serde_json::from_str(said.trim()).unwrap();
    let grow = dir.join("grow.h5");
    let before: Value =
        serde_json::from_str(interop::run_python(&python, GROW, &[s(&grow), "new"]).trim())
            .unwrap();
    let server = Static::start(&pkg, &dir);
    let mut b = cdp::Browser::open(&chrome, &dir, &format!("{}/example/index.html", server.url));
    b.wait_for("document.readyState === 'complete'", 30);
    let got = b.eval(
        r#"(async () => {
  const m = await import('/pkg/h5chunk_async.js');
  await m.init();
  const f = await m.AsyncH5File.open('/data/demo.h5');
  const values = {};
  const plain = (v) => Array.from(v, (x) => (typeof x === 'bigint' ? Number(x) : x));
  async function walk(path) {
    for (const c of await f.children(path)) {
      if (c.kind === 'group') await walk(c.path);
      if (c.kind !== 'dataset') continue;
      const info = await f.info(c.path);
      const rank = info.shape.length;
      values[c.path] = plain(rank === 0 ? await f.read(c.path)
        : await f.read(c.path, info.shape.map(() => 0),
                       info.shape.map((n, i) => (i === rank - 1 ? Math.min(n, 100) : 1))));
    }
  }
  await walk('/');
  // Calls made together (each waits its turn).
  const together = (await Promise.all(['/filters/zstd', '/filters/blosc2', '/text/names']
    .map((p) => f.read(p, [0], [3])))).map(plain);
  const whole = await f.read('/plain/contiguous');
  let sum = 0;
  for (const x of whole) sum += x;
  const g = await m.AsyncH5File.open('/data/grow.h5');
  window.grown = g;
  const before = plain(await g.read('/x'));
  return { values, together, length: whole.length, sum, before, requests: f.requests, bytes: f.bytesFetched,
           filters: (await f.info('/signals/sine')).filters };
})().catch((e) => ({ error: String(e?.message ?? e) }))"#,
    );
    assert!(got.get("error").is_none(), "{got}");
    for (path, want) in h5py.as_object().unwrap() {
        same(path, &got["values"][path], want);
    }
    for (i, path) in ["/filters/zstd", "/filters/blosc2", "/text/names"]
        .iter()
        .enumerate()
    {
        let want: Vec<Value> = h5py[*path].as_array().unwrap()[..3].to_vec();
        same(path, &got["together"][i], &json!(want));
    }
    assert_eq!(got["length"], json!(1 << 20), "{}", got["length"]);
    let want_sum = (1u64 << 19) as f64;
    let sum = got["sum"].as_f64().unwrap();
    assert!((sum - want_sum).abs() < 1e-6 * want_sum, "{sum}");
    assert_eq!(got["filters"], json!(["shuffle", "deflate(4)"]));
    same("/x", &got["before"], &before);
    let log = server.log.lock().unwrap().clone();
    assert!(
        log.iter().all(|(_, r)| r.is_some()),
        "a request without a range: {log:?}"
    );
    eprintln!(
        "{test}: {} range requests, {} bytes (the 8 MiB dataset included)",
        got["requests"], got["bytes"]
    );

    let after: Value =
        serde_json::from_str(interop::run_python(&python, GROW, &[s(&grow), "grow"]).trim())
            .unwrap();
    let r = b.eval(
        r#"(async () => {
  const g = window.grown;
  const kept = Array.from(await g.read('/x')).length;
  const shape = await g.refresh('/x');
  return { kept, shape, values: Array.from(await g.read('/x')) };
})().catch((e) => ({ error: String(e?.message ?? e) }))"#,
    );
    assert!(r.get("error").is_none(), "{r}");
    // Without a refresh the file keeps the extent it read.
    assert_eq!(r["kept"], json!(20), "{r}");
    assert_eq!(r["shape"], json!([50]), "{r}");
    same("/x", &r["values"], &after);
    assert_eq!(b.errors(), json!([]), "uncaught errors");
}
