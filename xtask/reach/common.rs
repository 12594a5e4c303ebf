//! The output every reach reader prints: one JSON line per dataset it finds, flushed as it
//! goes (a reader that dies keeps what it printed). Values are hashed in the form
//! `cargo xtask reach` compares (xtask/src/reach.rs): numbers as little-endian values of the
//! stored size, other fixed-size types as the file's bytes, variable-length strings as each
//! string's UTF-8 bytes followed by a NUL, a null dataspace as "empty", and any other
//! variable-length type as "vlen" (read, not compared).

use std::io::Write;

use sha2::{Digest, Sha256};

pub fn hash(bytes: &[u8]) -> String {
    let d = Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn strings_hash(strings: &[String]) -> String {
    let mut all = Vec::new();
    for s in strings {
        all.extend_from_slice(s.as_bytes());
        all.push(0);
    }
    hash(&all)
}

/// Little-endian values from elements of `size` bytes stored big-endian.
pub fn swap(bytes: &mut [u8], size: usize) {
    if size > 1 {
        for e in bytes.chunks_exact_mut(size) {
            e.reverse();
        }
    }
}

pub enum Got {
    /// (shape, hash)
    Read(Option<Vec<u64>>, String),
    Err(String),
}

pub fn emit(path: &str, got: Got) {
    let v = match got {
        Got::Read(shape, h) => serde_json::json!({"path": path, "shape": shape, "hash": h}),
        Got::Err(e) => serde_json::json!({"path": path, "err": e}),
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

pub fn file_error(e: String) {
    let v = serde_json::json!({"file_err": e});
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

pub fn join(parent: &str, name: &str) -> String {
    if parent == "/" || parent.is_empty() {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}
