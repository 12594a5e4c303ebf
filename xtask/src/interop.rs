//! The interop convention of docs/TESTING.md, as xtask's own tests use it. Other crates take it
//! from `h5chunk_testkit::interop`; xtask depends on no workspace crate, so it keeps this copy.

use std::path::PathBuf;

/// The external tool named by `var` (`H5CHUNK_PYTHON`, `H5CHUNK_H5DUMP`), if the test can run.
///
/// Unset or empty, and `H5CHUNK_REQUIRE_INTEROP` not `1`: prints the skip line and returns
/// `None`. With `H5CHUNK_REQUIRE_INTEROP=1` (set by `cargo xtask test`) a missing tool fails the
/// test instead of skipping it.
pub fn tool(var: &str, test: &str) -> Option<PathBuf> {
    let required = std::env::var("H5CHUNK_REQUIRE_INTEROP").as_deref() == Ok("1");
    match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(path) => {
            let path = PathBuf::from(path);
            assert!(
                path.is_file(),
                "{test}: {var}={} is not a file",
                path.display()
            );
            Some(path)
        }
        None if required => panic!("{test}: H5CHUNK_REQUIRE_INTEROP=1 but {var} is not set"),
        None => {
            // Written to the stderr handle, not with `eprintln!`: the test harness captures the
            // print macros of passing tests, and a skip must be visible.
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED (interop): {test}: set by cargo xtask test"
            );
            None
        }
    }
}

/// `H5CHUNK_FIXTURES` if set (the full set in target/fixtures), else the committed subset.
pub fn fixtures_dir() -> PathBuf {
    match std::env::var_os("H5CHUNK_FIXTURES").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => crate::workspace_root().join("fixtures").join("libhdf5"),
    }
}
