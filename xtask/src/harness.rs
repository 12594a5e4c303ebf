//! What the benchmark tasks share (`bench`, `bench --bulk`, `bench --instructions`, `fuzz`):
//! building the measured programs, and the `RESULT` lines they print.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The two implementations.
pub const IMPLS: [&str; 2] = ["h5chunk", "libhdf5"];

/// The `key=value` fields of a `RESULT`, `CURVE`, `APPEND` or `LOOKUP` line (`None` for any
/// other line).
/// Values hold no spaces, except the reason of an `UNAVAILABLE` line, which runs to the end.
pub fn parse_line(line: &str) -> Option<(&str, BTreeMap<String, String>)> {
    let (kind, rest) = line.split_once(' ')?;
    if !matches!(
        kind,
        "RESULT" | "CURVE" | "UNAVAILABLE" | "APPEND" | "LOOKUP"
    ) {
        return None;
    }
    let mut fields = BTreeMap::new();
    let mut rest = rest.trim();
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=')?;
        if key.contains(' ') {
            return None;
        }
        let (value, next) = if key == "reason" {
            (after, "")
        } else {
            after.split_once(' ').unwrap_or((after, ""))
        };
        fields.insert(key.to_string(), value.to_string());
        rest = next.trim_start();
    }
    Some((kind, fields))
}

/// Builds one binary of `h5chunk-benches` in release mode; its path.
pub fn build_bench_bin(root: &Path, bin: &str) -> Result<PathBuf, String> {
    build_release_bin(root, "h5chunk-benches", bin)
}

/// Builds binary `bin` of `package` in release mode and returns its path (from cargo's JSON
/// messages, so CARGO_TARGET_DIR is honoured).
pub fn build_release_bin(root: &Path, package: &str, bin: &str) -> Result<PathBuf, String> {
    let mut cmd = crate::cargo();
    cmd.current_dir(root).args([
        "build",
        "--release",
        "-p",
        package,
        "--bin",
        bin,
        "--message-format=json-render-diagnostics",
    ]);
    let out = cmd
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!("{} failed ({})", crate::describe(&cmd), out.status));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["reason"] == "compiler-artifact" && v["target"]["name"] == bin)
        .find_map(|v| v["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| format!("cargo reported no {bin} executable"))
}

/// Every dirty page on the machine written back (`sync`): run untimed before a timed write, so
/// that it starts from a settled state instead of meeting the writeback of the files written
/// before it (which side met it depended on the order, and moved rows by up to 2x).
pub fn settle_writeback() {
    let _ = Command::new("sync").status();
}

/// Compiles `benches/libhdf5/<name>.c` into `out_dir/<name>` against libhdf5 (and libm).
pub fn build_c_program(root: &Path, out_dir: &Path, name: &str) -> Result<PathBuf, String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    if crate::find_on_path(&cc).is_none() && !Path::new(&cc).is_file() {
        return Err(format!("no C compiler `{cc}` on PATH (install gcc)"));
    }
    // pkg-config and libhdf5's headers, installed where apt-get may run: the SWMR soak's C
    // writer under `cargo xtask test` needs them as the benchmarks do, on a fresh machine too.
    crate::install::ensure(crate::install::LIBHDF5)?;
    let flags = ["hdf5", "hdf5-serial"]
        .iter()
        .find_map(|pkg| {
            let out = Command::new("pkg-config")
                .args(["--cflags", "--libs", pkg])
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        })
        .ok_or("pkg-config knows no hdf5 package (install libhdf5-dev)")?;
    let source = root
        .join("benches")
        .join("libhdf5")
        .join(format!("{name}.c"));
    let exe = out_dir.join(name);
    let mut cmd = Command::new(&cc);
    cmd.args(["-O2", "-o"])
        .arg(&exe)
        .arg(&source)
        .args(flags.split_whitespace())
        .arg("-lm");
    let out = cmd.output().map_err(|e| format!("cannot run {cc}: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "{} failed: {}",
            crate::describe(&cmd),
            stderr.lines().next().unwrap_or("")
        ));
    }
    Ok(exe)
}
