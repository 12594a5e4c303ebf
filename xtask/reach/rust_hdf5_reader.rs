//! The rust-hdf5 reader of `cargo xtask reach` (crates.io `rust-hdf5`, every filter feature).

#[path = "../common.rs"]
mod common;

use common::{Got, emit, file_error, hash, strings_hash, swap};
use rust_hdf5::{ByteOrder, DatatypeMessage, H5File};

fn has_vlen(t: &DatatypeMessage) -> bool {
    match t {
        DatatypeMessage::VarLenString { .. } | DatatypeMessage::VarLenSequence { .. } => true,
        DatatypeMessage::Compound { members, .. } => members.iter().any(|m| has_vlen(&m.datatype)),
        DatatypeMessage::Array { base, .. } => has_vlen(base),
        _ => false,
    }
}

/// Element size and byte order when `t` reads as numbers.
fn number(t: &DatatypeMessage) -> Option<(usize, ByteOrder)> {
    match t {
        DatatypeMessage::FixedPoint {
            size, byte_order, ..
        }
        | DatatypeMessage::FloatingPoint {
            size, byte_order, ..
        } => Some((*size as usize, *byte_order)),
        DatatypeMessage::Enum { base, .. } => number(base),
        _ => None,
    }
}

fn read(f: &H5File, path: &str) -> Got {
    let ds = match f.dataset(path.trim_start_matches('/')) {
        Ok(d) => d,
        Err(e) => return Got::Err(e.to_string()),
    };
    if ds.is_null() {
        return Got::Read(None, "empty".into());
    }
    let shape = Some(ds.shape().iter().map(|&d| d as u64).collect());
    let t = match ds.datatype() {
        Ok(t) => t,
        Err(e) => return Got::Err(e.to_string()),
    };
    let r = if matches!(t, DatatypeMessage::VarLenString { .. }) {
        ds.read_strings().map(|s| strings_hash(&s))
    } else if has_vlen(&t) {
        ds.read_raw_bytes().map(|_| "vlen".to_owned())
    } else if let Some((size, order)) = number(&t) {
        ds.read_raw_bytes().map(|mut b| {
            if order == ByteOrder::BigEndian {
                swap(&mut b, size);
            }
            hash(&b)
        })
    } else {
        ds.read_raw_bytes().map(|b| hash(&b))
    };
    match r {
        Ok(h) => Got::Read(shape, h),
        Err(e) => Got::Err(e.to_string()),
    }
}

fn main() {
    let path = std::env::args().nth(1).expect("a file");
    let f = match H5File::open(&path) {
        Ok(f) => f,
        Err(e) => return file_error(e.to_string()),
    };
    for name in f.dataset_names() {
        let p = format!("/{}", name.trim_start_matches('/'));
        emit(&p, read(&f, &p));
    }
}
