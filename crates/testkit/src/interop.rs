//! The interop tools under the convention of `docs/TESTING.md`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The external tool named by `var` (`H5CHUNK_PYTHON`, `H5CHUNK_H5DUMP`), if the test can run.
///
/// Unset or empty, and `H5CHUNK_REQUIRE_INTEROP` not `1`: prints the skip line and returns
/// `None`. With `H5CHUNK_REQUIRE_INTEROP=1` (set by `cargo xtask test`) a missing tool fails the
/// test instead.
pub fn tool(var: &str, test: &str) -> Option<PathBuf> {
    let required = std::env::var("H5CHUNK_REQUIRE_INTEROP").as_deref() == Ok("1");
    match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(path) => Some(path.into()),
        None if required => panic!("{test}: H5CHUNK_REQUIRE_INTEROP=1 but {var} is not set"),
        None => {
            // The stderr handle, not `eprintln!`: libtest captures the print macros of passing
            // tests, and a skip must be visible.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED (interop): {test}: set by cargo xtask test"
            );
            None
        }
    }
}

/// The venv's Python with h5py and numpy (`H5CHUNK_PYTHON`).
pub fn python(test: &str) -> Option<PathBuf> {
    tool("H5CHUNK_PYTHON", test)
}

/// libhdf5's `h5dump` (`H5CHUNK_H5DUMP`; Debian's hdf5-tools, libhdf5 1.10).
pub fn h5dump(test: &str) -> Option<PathBuf> {
    tool("H5CHUNK_H5DUMP", test)
}

/// Run `script` with `python -c`, `args` following; its stdout. Panics with the script's stderr
/// when it fails.
pub fn run_python(python: &Path, script: &str, args: &[&str]) -> String {
    run_python_env(python, script, args, &[])
}

/// [`run_python`] with the environment variables `env` set for the script (what libhdf5 reads
/// from the environment: `HDF5_EXT_PREFIX`, `HDF5_PLUGIN_PATH`, ...).
pub fn run_python_env(python: &Path, script: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        out.status.success(),
        "python failed ({}):\n{}\nscript:\n{script}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Assert that `h5dump` reads the whole file at `path` (exit status 0).
pub fn h5dump_ok(h5dump: &Path, path: &Path) {
    let out = Command::new(h5dump)
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", h5dump.display()));
    assert!(
        out.status.success(),
        "h5dump {} failed ({}):\n{}",
        path.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
