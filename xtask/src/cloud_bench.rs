//! `cargo xtask bench --cloud [--quick] [--dev] [KEY=VALUE ...]`: issue 36's benchmark of
//! opening, listing and reading a remote file, h5chunk against h5py over fsspec, through a
//! local S3 (moto) and a local HTTP server, each behind a proxy that adds a fixed latency to
//! every request (20 ms and 80 ms) and counts GETs, HEADs and bytes.
//!
//! xtask builds the `h5chunk` binary (for `repack`) and the `cloud_probe` example of
//! `crates/cli` (h5chunk's side: `File::open_url`, the listing of `ls`, one chunk read), in
//! release unless `--dev` or `--quick` (then the `test` profile's build);
//! `benches/cloud/cloud_bench.py` (its docstring says what it does) makes the files (an ATL03-like granule written by h5py in its default layout, its
//! `h5chunk repack --paged 8MiB --metadata-first` copy and libhdf5's `h5repack -S PAGE` copy),
//! starts the servers and the proxies, runs every side once per (server, latency, file) and
//! prints one `RESULT` line each. h5chunk runs twice: with its defaults, and with the opening
//! request's read-ahead set to 8 MiB, the page (`H5CHUNK_READ_AHEAD`; `ra=` sets it); the
//! default read-ahead (1 MiB) already holds the metadata-first copy's metadata. kerchunk's side reads references made beforehand from the
//! local files (the seconds that took are in the table's footer). xtask prints the table,
//! issue 36's done-when checks beside
//! the figures (reported, not failed: the request counts are exact, the seconds depend on the
//! machine) and writes `target/bench/cloud.csv`. The task fails when a side fails, when
//! h5chunk's own counts differ from the proxy's, or when the sides list a different number of
//! objects or read a different chunk.
//!
//! `--quick`: a small granule, 5 ms, two fsspec modes, the test build: `cargo xtask test` runs
//! it to prove the verb, the servers, the proxy and both sides work and agree; its figures mean
//! nothing. Extra `KEY=VALUE` arguments go to the script (`beams=`, `subgroups=`, `datasets=`,
//! `n=`, `chunk=`, `page=`, `ra=`, `block=`, `latencies=`, `modes=`, `servers=`, `kerchunk=0`
//! to leave kerchunk out, `log=1` for the
//! proxy's request log); the script's output is kept in `target/bench/cloud.out`. The Python
//! is `H5CHUNK_PYTHON` when set (one with xtask's requirements), else the xtask venv.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::TaskResult;
use crate::harness::parse_line;

/// The script's parameters for `--quick`.
const QUICK: &[&str] = &[
    "beams=1",
    "subgroups=2",
    "datasets=3",
    "n=4000",
    "chunk=1000",
    "page=65536",
    "latencies=5",
    "modes=readahead,blockcache",
    "h5repack=0",
];

#[derive(Debug, PartialEq)]
struct Options {
    quick: bool,
    release: bool,
    params: Vec<String>,
}

fn parse_options(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        quick: false,
        release: true,
        params: Vec::new(),
    };
    for a in args {
        match a.as_str() {
            "--quick" => {
                o.quick = true;
                o.release = false;
            }
            "--dev" => o.release = false,
            p if p.contains('=') && !p.starts_with('-') => o.params.push(p.to_string()),
            other => return Err(format!("bench --cloud: unexpected argument `{other}`")),
        }
    }
    Ok(o)
}

/// One run: (server, latency ms, file kind, side) and its RESULT fields.
type Key = (String, u64, String, String);
type Runs = BTreeMap<Key, BTreeMap<String, String>>;

/// What the script printed: the runs, the files' sizes by kind, and the failures it reported.
#[derive(Debug, Default)]
struct Output {
    runs: Runs,
    sizes: BTreeMap<String, u64>,
    failures: Vec<String>,
}

fn parse_output(stdout: &str) -> Output {
    let mut out = Output::default();
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("FILE ") {
            let f: BTreeMap<&str, &str> = rest
                .split(' ')
                .filter_map(|kv| kv.split_once('='))
                .collect();
            if let (Some(kind), Some(bytes)) =
                (f.get("kind"), f.get("bytes").and_then(|b| b.parse().ok()))
            {
                out.sizes.insert(kind.to_string(), bytes);
            }
        } else if line.starts_with("MISMATCH ") || line.starts_with("DISAGREE ") {
            out.failures.push(line.to_string());
        } else if let Some(("RESULT", f)) = parse_line(line) {
            let (Some(server), Some(lat), Some(file), Some(side)) = (
                f.get("server"),
                f.get("latency_ms").and_then(|l| l.parse().ok()),
                f.get("file"),
                f.get("side"),
            ) else {
                continue;
            };
            if let Some(why) = f.get("failed") {
                out.failures.push(format!(
                    "{server} {lat} ms {file} {side}: {}",
                    why.replace('_', " ")
                ));
                continue;
            }
            out.runs
                .insert((server.clone(), lat, file.clone(), side.clone()), f);
        }
    }
    out
}

fn num(f: &BTreeMap<String, String>, key: &str) -> f64 {
    f.get(key).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
}

/// Open + list: (requests, GETs, HEADs, bytes, seconds).
type Listing = (f64, f64, f64, f64, f64);

fn listing(f: &BTreeMap<String, String>) -> Listing {
    let (g, h) = (num(f, "list_gets"), num(f, "list_heads"));
    (
        g + h,
        g,
        h,
        num(f, "list_bytes"),
        num(f, "open_s") + num(f, "list_s"),
    )
}

/// Open + list + one chunk: (GETs, HEADs, bytes, seconds).
fn whole(f: &BTreeMap<String, String>) -> (f64, f64, f64, f64) {
    (
        num(f, "read_gets"),
        num(f, "read_heads"),
        num(f, "read_bytes"),
        num(f, "open_s") + num(f, "list_s") + num(f, "read_s"),
    )
}

fn table(o: &Output) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "\n{:<47} | {:^35} | {:^29}",
        "", "open + list", "open + list + read one chunk"
    );
    let _ = writeln!(
        t,
        "{:<6} {:>4} {:<15} {:<18} | {:>5} {:>4} {:>8} {:>6} {:>8} | {:>5} {:>4} {:>8} {:>8}",
        "server", "ms", "file", "side", "GET", "HEAD", "MB", "%file", "s", "GET", "HEAD", "MB", "s"
    );
    let _ = writeln!(t, "{}", "-".repeat(118));
    let mut last = None;
    for ((server, lat, file, side), f) in &o.runs {
        let group = (server, lat, file);
        if last.is_some_and(|l| l != group) {
            let _ = writeln!(t);
        }
        last = Some(group);
        let size = o.sizes.get(file).copied().unwrap_or(0) as f64;
        let (_, lg, lh, lb, ls) = listing(f);
        let (wg, wh, wb, ws) = whole(f);
        let _ = writeln!(
            t,
            "{:<6} {:>4} {:<15} {:<18} | {:>5} {:>4} {:>8.2} {:>5.1}% {:>8.3} | {:>5} {:>4} {:>8.2} {:>8.3}",
            server,
            lat,
            file,
            side,
            lg,
            lh,
            lb / 1e6,
            100.0 * lb / size,
            ls,
            wg,
            wh,
            wb / 1e6,
            ws
        );
    }
    let sizes: Vec<String> = o
        .sizes
        .iter()
        .map(|(k, v)| format!("{k} {:.1} MB", *v as f64 / 1e6))
        .collect();
    let _ = writeln!(
        t,
        "files: {}; MB: response bodies the proxy counted; s: the side's own clock (imports and \
         process start excluded)",
        sizes.join(", ")
    );
    let generated: BTreeMap<&String, &String> = o
        .runs
        .iter()
        .filter_map(|((_, _, file, side), f)| {
            (side == "kerchunk").then(|| f.get("gen_s").map(|g| (file, g)))?
        })
        .collect();
    if !generated.is_empty() {
        let g: Vec<String> = generated
            .iter()
            .map(|(file, s)| format!("{file} {s} s"))
            .collect();
        let _ = writeln!(
            t,
            "kerchunk: references made beforehand from the local file (not in its rows): {}",
            g.join(", ")
        );
    }
    t
}

/// Issue 36's done-when checks on the runs: (what, met) lines.
fn checks(o: &Output) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let groups: std::collections::BTreeSet<(String, u64)> =
        o.runs.keys().map(|(s, l, _, _)| (s.clone(), *l)).collect();
    for (server, lat) in &groups {
        let get = |file: &str, side: &str| {
            o.runs
                .get(&(server.clone(), *lat, file.to_string(), side.to_string()))
        };
        for side in ["h5chunk", "h5chunk-ra"] {
            if let Some(f) = get("metadata-first", side) {
                let (g, h, _, _) = whole(f);
                out.push((
                    format!(
                        "{server} {lat} ms, metadata-first, {side}: open + list + read one \
                         chunk in {g} GET, {h} HEAD (needed <= 2 GET, 0 HEAD)"
                    ),
                    g <= 2.0 && h == 0.0,
                ));
            }
        }
        let Some(ours) = get("original", "h5chunk") else {
            continue;
        };
        let fsspec: Vec<(&String, Listing)> = o
            .runs
            .iter()
            .filter(|((s, l, file, side), _)| {
                s == server && l == lat && file == "original" && side.starts_with("fsspec-")
            })
            .map(|((_, _, _, side), f)| (side, listing(f)))
            .collect();
        let Some((best_side, best)) = fsspec
            .iter()
            .min_by(|a, b| a.1.0.total_cmp(&b.1.0))
            .map(|(s, l)| (*s, *l))
        else {
            continue;
        };
        let (req, _, _, bytes, secs) = listing(ours);
        let size = o.sizes.get("original").copied().unwrap_or(0) as f64;
        out.push((
            format!(
                "{server} {lat} ms, original: open + list in {req} requests against {} \
                 ({best_side}, fsspec's fewest) (needed <= 1/3: {:.1})",
                best.0,
                best.0 / 3.0
            ),
            req * 3.0 <= best.0,
        ));
        out.push((
            format!(
                "{server} {lat} ms, original: open + list fetched {:.1}% of the file \
                 (needed <= 25%)",
                100.0 * bytes / size
            ),
            bytes * 4.0 <= size,
        ));
        if *lat == 20 {
            let fastest = fsspec
                .iter()
                .map(|(_, l)| l.4)
                .fold(f64::INFINITY, f64::min);
            out.push((
                format!(
                    "{server} {lat} ms, original: open + list {secs:.3} s against fsspec's \
                     fastest {fastest:.3} s: {:.2}x (needed >= 3x)",
                    fastest / secs
                ),
                fastest >= 3.0 * secs,
            ));
        }
    }
    out
}

fn csv(o: &Output) -> String {
    let mut c = String::from(
        "server,latency_ms,file,file_bytes,side,open_s,list_s,read_s,open_gets,open_heads,\
         open_bytes,list_gets,list_heads,list_bytes,read_gets,read_heads,read_bytes,objects\n",
    );
    for ((server, lat, file, side), f) in &o.runs {
        let v = |k: &str| f.get(k).cloned().unwrap_or_default();
        let _ = writeln!(
            c,
            "{server},{lat},{file},{},{side},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            o.sizes.get(file).copied().unwrap_or(0),
            v("open_s"),
            v("list_s"),
            v("read_s"),
            v("open_gets"),
            v("open_heads"),
            v("open_bytes"),
            v("list_gets"),
            v("list_heads"),
            v("list_bytes"),
            v("read_gets"),
            v("read_heads"),
            v("read_bytes"),
            v("objects"),
        );
    }
    c
}

/// Builds the `h5chunk` binary and the `cloud_probe` example; their paths. Not release: the
/// `test` profile, whose artifacts `cargo test --workspace` (which `cargo xtask test` ran
/// before) left, so that only the example is compiled.
fn build(root: &Path, release: bool) -> Result<(PathBuf, PathBuf), String> {
    let mut cmd = crate::cargo();
    cmd.current_dir(root).args([
        "build",
        "-p",
        "h5chunk-cli",
        "--bin",
        "h5chunk",
        "--example",
        "cloud_probe",
        "--message-format=json-render-diagnostics",
    ]);
    cmd.args(["--profile", if release { "release" } else { "test" }]);
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!("{} failed ({})", crate::describe(&cmd), out.status));
    }
    let find = |name: &str| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["reason"] == "compiler-artifact" && v["target"]["name"] == name)
            .find_map(|v| v["executable"].as_str().map(PathBuf::from))
            .ok_or_else(|| format!("cargo reported no {name} executable"))
    };
    Ok((find("h5chunk")?, find("cloud_probe")?))
}

pub fn run(root: &Path, args: &[String]) -> TaskResult {
    let o = parse_options(args)?;
    // A Python that has the requirements already (the interop tests' variable), else the venv.
    let python = match std::env::var_os("H5CHUNK_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => crate::fixtures::ensure_venv(root)?,
    };
    run_with(root, &python, &o)
}

/// `--quick` with the venv `cargo xtask test` made.
pub fn quick(root: &Path, python: &Path) -> TaskResult {
    run_with(
        root,
        python,
        &Options {
            quick: true,
            release: false,
            params: Vec::new(),
        },
    )
}

fn run_with(root: &Path, python: &Path, o: &Options) -> TaskResult {
    eprintln!(
        "xtask bench --cloud: building h5chunk and cloud_probe ({})",
        if o.release { "release" } else { "test profile" }
    );
    let (h5chunk, probe) = build(root, o.release)?;
    let out_dir = root.join("target").join("bench");
    let dir = out_dir.join(if o.quick { "cloud-quick" } else { "cloud" });
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let script = root.join("benches").join("cloud").join("cloud_bench.py");
    let mut cmd = Command::new(python);
    cmd.arg(&script)
        .arg("run")
        .arg(&dir)
        .arg(&probe)
        .arg(&h5chunk);
    if o.quick {
        cmd.args(QUICK);
    }
    cmd.args(&o.params);
    eprintln!("xtask bench --cloud: {}", crate::describe(&cmd));
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The script's own lines (with `log=1`, every request the proxy saw), for a closer look.
    let raw = out_dir.join(if o.quick {
        "cloud-quick.out"
    } else {
        "cloud.out"
    });
    std::fs::write(&raw, stdout.as_bytes()).map_err(|e| format!("{}: {e}", raw.display()))?;
    let mut parsed = parse_output(&stdout);
    if !out.status.success() && parsed.failures.is_empty() {
        parsed
            .failures
            .push(format!("{} exited {}", script.display(), out.status));
    }
    if parsed.runs.is_empty() && parsed.failures.is_empty() {
        parsed.failures.push("no RESULT line".into());
    }
    if o.quick {
        let _ = std::fs::remove_dir_all(&dir);
    }
    println!(
        "\nCloud: open, list (every group; every dataset's shape, type and chunks) and read one \
         chunk, one fresh process a run, through a proxy adding the latency to each request{}",
        if o.quick {
            " (--quick: a tiny file, test build; the figures mean nothing)"
        } else {
            ""
        }
    );
    print!("{}", table(&parsed));
    if !o.quick {
        println!("\nissue 36's done-when:");
        for (what, met) in checks(&parsed) {
            println!("  [{}] {what}", if met { "met" } else { "NOT met" });
        }
    }
    let failures = std::mem::take(&mut parsed.failures);
    crate::bench_verdict(
        "bench --cloud",
        &out_dir.join(if o.quick {
            "cloud-quick.csv"
        } else {
            "cloud.csv"
        }),
        &csv(&parsed),
        failures,
        Vec::new(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options() {
        let o = parse_options(&["--quick".into()]).unwrap();
        assert!(o.quick && !o.release);
        let o = parse_options(&["--dev".into(), "n=100".into()]).unwrap();
        assert_eq!(
            (o.quick, o.release, o.params),
            (false, false, vec!["n=100".to_string()])
        );
        assert!(parse_options(&["--full".into()]).is_err());
    }

    const OUT: &str = "FILE kind=original name=a.h5 bytes=4000\n\
FILE kind=metadata-first name=b.h5 bytes=8000\n\
RESULT server=s3 latency_ms=20 file=original side=h5chunk open_s=0.1 list_s=0.1 read_s=0.1 \
open_gets=1 open_heads=0 open_bytes=100 list_gets=5 list_heads=0 list_bytes=900 read_gets=6 \
read_heads=0 read_bytes=1000 objects=3\n\
RESULT server=s3 latency_ms=20 file=original side=fsspec-blockcache open_s=0.5 list_s=0.5 \
read_s=0.1 open_gets=1 open_heads=1 open_bytes=100 list_gets=20 list_heads=1 list_bytes=4000 \
read_gets=21 read_heads=1 read_bytes=4000 objects=3\n\
RESULT server=s3 latency_ms=20 file=original side=fsspec-first open_s=0.5 list_s=0.2 \
read_s=0.1 open_gets=1 open_heads=1 open_bytes=100 list_gets=40 list_heads=1 list_bytes=4000 \
read_gets=41 read_heads=1 read_bytes=4000 objects=3\n\
RESULT server=s3 latency_ms=20 file=original side=kerchunk open_s=0.3 list_s=0.1 read_s=0.1 \
open_gets=0 open_heads=0 open_bytes=0 list_gets=0 list_heads=0 list_bytes=0 read_gets=1 \
read_heads=0 read_bytes=100 objects=3 gen_s=0.7\n\
RESULT server=s3 latency_ms=20 file=metadata-first side=h5chunk open_s=0.1 list_s=0.1 \
read_s=0.1 open_gets=1 open_heads=0 open_bytes=100 list_gets=2 list_heads=0 list_bytes=900 \
read_gets=3 read_heads=0 read_bytes=1000 objects=3\n\
RESULT server=s3 latency_ms=20 file=metadata-first side=h5chunk-ra open_s=0.1 list_s=0.1 \
read_s=0.1 open_gets=1 open_heads=0 open_bytes=100 list_gets=1 list_heads=0 list_bytes=900 \
read_gets=2 read_heads=0 read_bytes=1000 objects=3\n\
RESULT server=http latency_ms=20 file=original side=fsspec-first failed=exited_1:_boom\n\
MISMATCH server=s3 latency_ms=20 file=original side=h5chunk proxy=(1,0,1) side=(2,0,1)\n";

    #[test]
    fn output_table_and_checks() {
        let o = parse_output(OUT);
        assert_eq!(o.runs.len(), 6);
        assert_eq!(o.sizes["metadata-first"], 8000);
        assert_eq!(o.failures.len(), 2, "{:?}", o.failures);
        assert!(o.failures[0].contains("exited 1: boom"), "{:?}", o.failures);
        let t = table(&o);
        assert!(t.contains("22.5%"), "{t}");
        assert!(
            t.contains("made beforehand from the local file (not in its rows): original 0.7 s"),
            "{t}"
        );
        let c = checks(&o);
        let met = |p: &str| c.iter().find(|(w, _)| w.contains(p)).unwrap().1;
        // 3 GETs for the metadata-first file: not met; 2 with the page's read-ahead: met.
        assert!(!met("metadata-first, h5chunk:"), "{c:?}");
        assert!(met("metadata-first, h5chunk-ra:"), "{c:?}");
        // 5 requests against blockcache's 21 (the fewest): 5 * 3 = 15 <= 21.
        assert!(met("requests against 21 (fsspec-blockcache"), "{c:?}");
        assert!(met("fetched 22.5%"), "{c:?}");
        // 0.2 s against the fastest fsspec mode's 0.7 s: 3.5x.
        assert!(met("3.50x"), "{c:?}");
        assert_eq!(csv(&o).lines().count(), 7);
    }
}
