//! `cargo xtask wasm`: the npm package of crates/wasm in crates/wasm/pkg. The crate built for
//! wasm32-unknown-unknown (release, its own workspace, target dir `target/wasm`), then
//! `wasm-bindgen --target web` (an ES module loading the .wasm, and its TypeScript types),
//! then the package's `package.json`, README and `h5chunk_async.js` (asynchronous URL reads,
//! with its types). wasm-bindgen-cli must be the very version the
//! crate pins (`wasm-bindgen = "=X"`): it is installed with `cargo install` into
//! `target/tools` when `target/tools/bin/wasm-bindgen` is missing or another version.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{cargo, run};

/// The target the library core must build for: the browser's.
pub const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// Add the target's standard library with rustup when it is missing.
pub fn ensure_target(root: &Path) -> Result<(), String> {
    let installed = Command::new("rustup")
        .current_dir(root)
        .args(["target", "list", "--installed"])
        .output()
        .map_err(|e| format!("cannot run rustup (needed for the {WASM_TARGET} check): {e}"))?;
    if !String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|l| l.trim() == WASM_TARGET)
    {
        run(Command::new("rustup")
            .current_dir(root)
            .args(["target", "add", WASM_TARGET]))?;
    }
    Ok(())
}

/// The wasm-bindgen version crates/wasm/Cargo.toml pins (`wasm-bindgen = "=X"`).
fn pinned_version(root: &Path) -> Result<String, String> {
    let manifest = root.join("crates/wasm/Cargo.toml");
    let text =
        std::fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    text.lines()
        .find_map(|l| {
            let rest = l.trim().strip_prefix("wasm-bindgen")?.trim_start();
            let rest = rest.strip_prefix('=')?.trim().strip_prefix("\"=")?;
            Some(rest.split('"').next()?.to_owned())
        })
        .ok_or_else(|| {
            format!(
                "{}: no exact wasm-bindgen pin (`wasm-bindgen = \"=X.Y.Z\"`)",
                manifest.display()
            )
        })
}

/// `target/tools/bin/wasm-bindgen` of the pinned version, installed when missing.
fn wasm_bindgen(root: &Path) -> Result<PathBuf, String> {
    let version = pinned_version(root)?;
    let tools = root.join("target").join("tools");
    let bin = tools.join("bin").join("wasm-bindgen");
    let have = Command::new(&bin)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    if have.as_deref() != Some(&format!("wasm-bindgen {version}")) {
        eprintln!(
            "xtask wasm: installing wasm-bindgen-cli {version} into {}",
            tools.display()
        );
        run(cargo()
            .current_dir(root)
            .args([
                "install",
                "wasm-bindgen-cli",
                "--version",
                &version,
                "--root",
            ])
            .arg(&tools))?;
    }
    Ok(bin)
}

/// Build crates/wasm/pkg; its path.
pub fn build(root: &Path) -> Result<PathBuf, String> {
    ensure_target(root)?;
    let crate_dir = root.join("crates").join("wasm");
    let target_dir = root.join("target").join("wasm");
    run(cargo()
        .current_dir(root)
        .arg("build")
        .arg("--manifest-path")
        .arg(crate_dir.join("Cargo.toml"))
        .args(["--release", "--target", WASM_TARGET, "--target-dir"])
        .arg(&target_dir))?;
    let module = target_dir
        .join(WASM_TARGET)
        .join("release")
        .join("h5chunk_wasm.wasm");
    let pkg = crate_dir.join("pkg");
    let bindgen = wasm_bindgen(root)?;
    run(Command::new(&bindgen)
        .current_dir(root)
        .args(["--target", "web", "--out-dir"])
        .arg(&pkg)
        .arg(&module))?;
    for (from, to) in [
        ("package.json", "package.json"),
        ("README.md", "README.md"),
        ("h5chunk_async.js", "h5chunk_async.js"),
        ("h5chunk_async.d.ts", "h5chunk_async.d.ts"),
    ] {
        std::fs::copy(crate_dir.join(from), pkg.join(to))
            .map_err(|e| format!("copying {from} into {}: {e}", pkg.display()))?;
    }
    eprintln!("xtask wasm: the npm package is in {}", pkg.display());
    Ok(pkg)
}

/// `cargo fmt --check` and clippy (warnings denied) of crates/wasm, for its target.
pub fn lint(root: &Path) -> Result<(), String> {
    ensure_target(root)?;
    let manifest = root.join("crates/wasm/Cargo.toml");
    run(cargo()
        .current_dir(root)
        .arg("fmt")
        .arg("--manifest-path")
        .arg(&manifest)
        .args(["--", "--check"]))?;
    run(cargo()
        .current_dir(root)
        .arg("clippy")
        .arg("--manifest-path")
        .arg(&manifest)
        .args(["--target", WASM_TARGET, "--target-dir"])
        .arg(root.join("target").join("wasm"))
        .args(["--", "-D", "warnings"]))
}
