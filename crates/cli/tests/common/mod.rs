//! Running the built `h5chunk` binary from tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Run `h5chunk` with `args`.
pub fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_h5chunk"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run h5chunk: {e}"))
}

/// Run `h5chunk` with `args`, which must succeed quietly; its stdout.
pub fn ok(args: &[&str]) -> Vec<u8> {
    let out = run(args);
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "h5chunk {args:?}: {}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Run `h5chunk` with `args`, which must succeed; its stdout as text.
pub fn ok_text(args: &[&str]) -> String {
    String::from_utf8(ok(args)).unwrap_or_else(|e| panic!("h5chunk {args:?}: stdout: {e}"))
}

/// Run `h5chunk` with `args`, which must fail with exit status 1 and one line on stderr; that
/// line.
pub fn fails(args: &[&str]) -> String {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "h5chunk {args:?}: {err}");
    assert!(!err.contains("panicked"), "h5chunk {args:?}: {err}");
    assert_eq!(
        err.lines().count(),
        1,
        "h5chunk {args:?}: not one line: {err}"
    );
    assert!(
        err.starts_with("h5chunk: error: "),
        "h5chunk {args:?}: {err}"
    );
    err
}

/// A fresh directory for one test.
pub fn tmp(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// `(3, 4)` as the tool prints shapes (`(5,)` for one dimension, `inf` for unlimited).
pub fn dims_text(dims: &[Option<u64>]) -> String {
    let parts: Vec<String> = dims
        .iter()
        .map(|d| d.map_or("inf".to_owned(), |d| d.to_string()))
        .collect();
    match parts.as_slice() {
        [one] => format!("({one},)"),
        _ => format!("({})", parts.join(", ")),
    }
}

/// The path as a `&str` (test paths are UTF-8).
pub fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}
