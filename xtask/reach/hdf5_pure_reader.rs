//! The hdf5-pure reader of `cargo xtask reach` (crates.io `hdf5-pure`, default features).

#[path = "../common.rs"]
mod common;

use std::collections::BTreeSet;

use common::{Got, emit, file_error, hash, join, strings_hash, swap};
use hdf5_pure::{Datatype, DatatypeByteOrder, File, Group};

fn has_vlen(t: &Datatype) -> bool {
    match t {
        Datatype::VariableLength { .. } => true,
        Datatype::Compound { members, .. } => members.iter().any(|m| has_vlen(&m.datatype)),
        Datatype::Array { base_type, .. } => has_vlen(base_type),
        _ => false,
    }
}

fn number(t: &Datatype) -> Option<(usize, bool)> {
    match t {
        Datatype::FixedPoint {
            size, byte_order, ..
        }
        | Datatype::FloatingPoint {
            size, byte_order, ..
        } => Some((*size as usize, *byte_order == DatatypeByteOrder::BigEndian)),
        Datatype::Enumeration { base_type, .. } => number(base_type),
        _ => None,
    }
}

fn read(g: &Group, name: &str) -> Got {
    let ds = match g.dataset(name) {
        Ok(d) => d,
        Err(e) => return Got::Err(e.to_string()),
    };
    let t = match ds.datatype() {
        Ok(t) => t,
        Err(e) => return Got::Err(e.to_string()),
    };
    let shape = match ds.shape() {
        Ok(s) => s,
        Err(e) => return Got::Err(e.to_string()),
    };
    let r = match &t {
        Datatype::VariableLength {
            is_string: true, ..
        } => ds.read_string().map(|s| strings_hash(&s)),
        t if has_vlen(t) => ds.read_raw().map(|_| "vlen".to_owned()),
        t => match number(t) {
            Some((size, big)) => ds.read_raw().map(|mut b| {
                if big {
                    swap(&mut b, size);
                }
                hash(&b)
            }),
            None => ds.read_raw().map(|b| hash(&b)),
        },
    };
    match r {
        Ok(h) => Got::Read(Some(shape), h),
        Err(e) => Got::Err(e.to_string()),
    }
}

fn walk(g: &Group, path: &str, depth: usize, seen: &mut BTreeSet<String>) {
    if depth > 64 {
        return;
    }
    match g.datasets() {
        Ok(names) => {
            for n in names {
                emit(&join(path, &n), read(g, &n));
            }
        }
        Err(e) => emit(
            &format!("{}/*", path.trim_end_matches('/')),
            Got::Err(e.to_string()),
        ),
    }
    if let Ok(groups) = g.groups() {
        for n in groups {
            let p = join(path, &n);
            if !seen.insert(p.clone()) {
                continue;
            }
            match g.group(&n) {
                Ok(sub) => walk(&sub, &p, depth + 1, seen),
                Err(e) => emit(&format!("{p}/*"), Got::Err(e.to_string())),
            }
        }
    }
}

fn main() {
    let path = std::env::args().nth(1).expect("a file");
    let f = match File::open(&path) {
        Ok(f) => f,
        Err(e) => return file_error(e.to_string()),
    };
    walk(&f.root(), "/", 0, &mut BTreeSet::new());
}
