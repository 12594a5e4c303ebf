//! The libhdf5-written fixtures and their manifest (see `fixtures/README.md`).

use std::path::PathBuf;

use serde_json::Value;

/// `H5CHUNK_FIXTURES` (the full generated set, set by `cargo xtask test`), else the committed
/// subset in `fixtures/libhdf5`.
pub fn dir() -> PathBuf {
    match std::env::var_os("H5CHUNK_FIXTURES").filter(|v| !v.is_empty()) {
        Some(dir) => dir.into(),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/libhdf5"),
    }
}

/// The fixtures' `manifest.json`.
pub fn manifest() -> Value {
    let path = dir().join("manifest.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run `cargo xtask gen-fixtures`)", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One dataset of one fixture file.
#[derive(Clone, Debug)]
pub struct Fixture {
    /// The file.
    pub file: PathBuf,
    /// The file's manifest entry.
    pub entry: Value,
    /// The dataset's manifest object (`path`, `dtype`, `shape`, `index_type`, ...).
    pub object: Value,
}

impl Fixture {
    /// The dataset's path in its file.
    pub fn path(&self) -> &str {
        self.object["path"].as_str().unwrap_or("/")
    }
}

/// Every dataset for which `pred(file entry, object)` holds.
pub fn datasets(pred: impl Fn(&Value, &Value) -> bool) -> Vec<Fixture> {
    let dir = dir();
    let manifest = manifest();
    let mut out = Vec::new();
    for entry in manifest["files"].as_array().into_iter().flatten() {
        let Some(name) = entry["file"].as_str() else {
            continue;
        };
        for object in entry["objects"].as_array().into_iter().flatten() {
            if object["kind"] == "dataset" && pred(entry, object) {
                out.push(Fixture {
                    file: dir.join(name),
                    entry: entry.clone(),
                    object: object.clone(),
                });
            }
        }
    }
    out
}
