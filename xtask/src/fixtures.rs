//! The Python side of the harness: a venv with h5py at `<root>/target/venv`, and the fixture
//! generator `xtask/fixtures/gen_fixtures.py` that writes HDF5 files plus `manifest.json`.
//!
//! Staleness is decided by the generator itself: `gen_fixtures.py --print-stamp` prints the hash
//! of the script and the h5py/libhdf5/numpy versions, and a successful run leaves the same text in
//! `<out>/.stamp`. xtask regenerates whenever the two differ, so it needs no hashing of its own.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{TaskResult, describe, run};

/// Relative to the workspace root.
const SCRIPT: &str = "xtask/fixtures/gen_fixtures.py";
pub const REQUIREMENTS: &str = "xtask/fixtures/requirements.txt";
/// Inside the venv: the requirements text that was last installed there.
const INSTALLED_MARKER: &str = ".h5chunk-requirements";

/// Creates or updates `<root>/target/venv` and returns its Python interpreter.
///
/// The venv is made with `python3 -m venv` (or `$H5CHUNK_BOOTSTRAP_PYTHON -m venv`); the packages
/// of requirements.txt are (re)installed whenever that file differs from what was last installed.
pub fn ensure_venv(root: &Path) -> Result<PathBuf, String> {
    let venv = root.join("target").join("venv");
    let python = venv.join("bin").join("python");
    let requirements_path = root.join(REQUIREMENTS);
    let requirements = fs::read_to_string(&requirements_path)
        .map_err(|e| format!("{}: {e}", requirements_path.display()))?;

    if python.exists() && !runs(Command::new(&python).args(["-c", "pass"])) {
        eprintln!(
            "xtask: {} is broken (its base Python moved?), recreating it",
            venv.display()
        );
        fs::remove_dir_all(&venv).map_err(|e| format!("removing {}: {e}", venv.display()))?;
    }
    if !python.exists() {
        let bootstrap = std::env::var_os("H5CHUNK_BOOTSTRAP_PYTHON")
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "python3".into());
        eprintln!("xtask: creating the Python venv {}", venv.display());
        run(Command::new(&bootstrap).arg("-m").arg("venv").arg(&venv)).map_err(|e| {
            format!(
                "{e}\n  (on Debian without pyenv the venv module needs `apt-get install python3-venv`)"
            )
        })?;
    }

    let marker = venv.join(INSTALLED_MARKER);
    if fs::read_to_string(&marker).ok().as_deref() != Some(requirements.as_str()) {
        eprintln!("xtask: installing {REQUIREMENTS} into the venv");
        run(Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
            ])
            .arg(&requirements_path))?;
        fs::write(&marker, &requirements).map_err(|e| format!("{}: {e}", marker.display()))?;
    }
    Ok(python)
}

/// Regenerates the full fixture set in `out` unless its stamp matches the current generator.
pub fn ensure_fresh(root: &Path, python: &Path, out: &Path) -> TaskResult {
    let wanted = stamp(root, python, false)?;
    let have = fs::read_to_string(out.join(".stamp")).unwrap_or_default();
    if have.trim() == wanted.trim() && out.join("manifest.json").is_file() {
        eprintln!("xtask: fixtures in {} are up to date", out.display());
        return Ok(());
    }
    eprintln!(
        "xtask: fixtures in {} are missing or stale, regenerating",
        out.display()
    );
    generate(root, python, out, false)
}

/// Runs the generator: HDF5 files, manifest.json and .stamp into `out`.
pub fn generate(root: &Path, python: &Path, out: &Path, small: bool) -> TaskResult {
    let mut cmd = Command::new(python);
    cmd.arg(root.join(SCRIPT)).arg("--out").arg(out);
    if small {
        cmd.arg("--small");
    }
    run(&mut cmd)
}

fn stamp(root: &Path, python: &Path, small: bool) -> Result<String, String> {
    let mut cmd = Command::new(python);
    cmd.arg(root.join(SCRIPT)).arg("--print-stamp");
    if small {
        cmd.arg("--small");
    }
    let output = cmd
        .output()
        .map_err(|e| format!("cannot run {}: {e}", describe(&cmd)))?;
    if !output.status.success() {
        return Err(format!(
            "{} failed ({}):\n{}",
            describe(&cmd),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn runs(cmd: &mut Command) -> bool {
    cmd.output().is_ok_and(|o| o.status.success())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interop;
    use serde_json::Value;

    /// The committed set must stay small enough to live in the repository.
    const COMMITTED_MAX_BYTES: u64 = 2 * 1024 * 1024;

    fn committed_dir() -> PathBuf {
        crate::workspace_root().join("fixtures").join("libhdf5")
    }

    fn manifest(dir: &Path) -> Value {
        let path = dir.join("manifest.json");
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn files(manifest: &Value) -> &Vec<Value> {
        manifest["files"].as_array().expect("manifest has files")
    }

    #[test]
    fn committed_fixtures_match_their_manifest() {
        let dir = committed_dir();
        let manifest = manifest(&dir);
        assert_eq!(manifest["small"], Value::Bool(true));
        let mut total = fs::metadata(dir.join("manifest.json")).unwrap().len();
        for file in files(&manifest) {
            let name = file["file"].as_str().unwrap();
            let len = fs::metadata(dir.join(name))
                .unwrap_or_else(|e| panic!("{name}: {e}"))
                .len();
            assert_eq!(Some(len), file["size"].as_u64(), "{name}: size");
            total += len;
        }
        assert!(
            total < COMMITTED_MAX_BYTES,
            "committed fixtures take {total} bytes"
        );
    }

    #[test]
    fn committed_manifest_covers_every_chunk_index() {
        let manifest = manifest(&committed_dir());
        let mut seen = std::collections::BTreeSet::new();
        for file in files(&manifest) {
            for object in file["objects"].as_array().unwrap() {
                if let Some(index) = object["index_type"].as_str() {
                    seen.insert((
                        index.to_string(),
                        object["layout_version"].as_u64().unwrap(),
                    ));
                }
            }
        }
        for index in ["single", "implicit", "farray", "earray", "btree2"] {
            assert!(
                seen.contains(&(index.to_string(), 4)),
                "{index} with layout v4"
            );
        }
        assert!(seen.contains(&("btree1".to_string(), 3)));
    }

    /// Interop: the committed subset was written by the current generator (same script hash and
    /// package versions), so plain `cargo test` and `cargo xtask test` check the same files.
    #[test]
    fn committed_fixtures_are_fresh() {
        let Some(python) = interop::tool("H5CHUNK_PYTHON", "committed_fixtures_are_fresh") else {
            return;
        };
        let wanted = stamp(&crate::workspace_root(), &python, true).unwrap();
        let have = fs::read_to_string(committed_dir().join(".stamp")).unwrap_or_default();
        assert_eq!(
            have.trim(),
            wanted.trim(),
            "fixtures/libhdf5 is stale: run `cargo xtask gen-fixtures --out fixtures/libhdf5 --small`"
        );
    }

    /// Interop: h5dump (libhdf5's own reader, usually an older release than h5py's) opens
    /// every fixture that does not need libhdf5 2.0 and reports the superblock version the
    /// manifest states.
    #[test]
    fn h5dump_reads_fixture_superblocks() {
        let Some(h5dump) = interop::tool("H5CHUNK_H5DUMP", "h5dump_reads_fixture_superblocks")
        else {
            return;
        };
        let dir = interop::fixtures_dir();
        for file in files(&manifest(&dir)) {
            let name = file["file"].as_str().unwrap();
            if file["needs_hdf5_2"].as_bool().unwrap() {
                continue;
            }
            let output = Command::new(&h5dump)
                .args(["-B", "-H"])
                .arg(dir.join(name))
                .output()
                .unwrap();
            assert!(output.status.success(), "h5dump {name} failed");
            let text = String::from_utf8_lossy(&output.stdout);
            let want = format!("SUPERBLOCK_VERSION {}", file["superblock_version"]);
            assert!(text.contains(&want), "{name}: h5dump does not say {want}");
        }
    }

    /// Interop: the h5py of the venv reads every fixture's datasets with the sha256 the
    /// manifest records (catches a committed manifest that no longer matches its files).
    #[test]
    fn h5py_reads_fixture_values() {
        let Some(python) = interop::tool("H5CHUNK_PYTHON", "h5py_reads_fixture_values") else {
            return;
        };
        let script = r#"
import hashlib, json, os, sys
import h5py, numpy as np
d = sys.argv[1]
m = json.load(open(os.path.join(d, "manifest.json")))
bad = 0
for f in m["files"]:
    with h5py.File(os.path.join(d, f["file"]), "r") as h:
        for o in f["objects"]:
            if o["kind"] != "dataset":
                continue
            a = np.ascontiguousarray(h[o["path"]][()])
            got = hashlib.sha256(a.astype(a.dtype.newbyteorder("<")).tobytes()).hexdigest()
            if got != o["sha256"]:
                bad += 1
                print("mismatch", f["file"], o["path"])
print("checked", len(m["files"]), "files")
sys.exit(1 if bad else 0)
"#;
        let dir = interop::fixtures_dir();
        let output = Command::new(&python)
            .args(["-c", script])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
