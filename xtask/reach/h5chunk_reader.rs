//! The h5chunk reader of `cargo xtask reach`: walks a file as `h5chunk ls` does and reads
//! every dataset through the public API.

#[path = "../common.rs"]
mod common;

use std::collections::BTreeSet;

use common::{Got, emit, file_error, hash, join, strings_hash};
use h5chunk::types::{DatatypeClass, TypeClass, TypeDesc};
use h5chunk::{File, Group, MemberKind};

fn has_vlen(t: &h5chunk::types::Datatype) -> bool {
    match &t.class {
        DatatypeClass::VarLen { .. } => true,
        DatatypeClass::Compound(ms) => ms.iter().any(|m| has_vlen(&m.datatype)),
        DatatypeClass::Array { base, .. } => has_vlen(base),
        _ => false,
    }
}

fn read(f: &File, path: &str) -> Got {
    let ds = match f.dataset(path) {
        Ok(d) => d,
        Err(e) => return Got::Err(e.to_string()),
    };
    if ds.is_null() {
        return Got::Read(None, "empty".into());
    }
    let shape = Some(ds.shape());
    let t = ds.datatype().clone();
    let r = match TypeDesc::of(&t) {
        Err(e) => Err(e),
        Ok(d) if d.class == TypeClass::VarLenString => ds.read_strings().map(|s| strings_hash(&s)),
        Ok(_) if has_vlen(&t) => ds.read_raw().map(|_| "vlen".to_owned()),
        // Numbers come as little-endian values, anything else as stored.
        Ok(_) => ds.read_raw().map(|b| hash(&b)),
    };
    match r {
        Ok(h) => Got::Read(shape, h),
        Err(e) => Got::Err(e.to_string()),
    }
}

fn walk(f: &File, g: &Group, seen: &mut BTreeSet<u64>) {
    let members = match g.members() {
        Ok(m) => m,
        Err(e) => {
            emit(
                &format!("{}/*", g.path().trim_end_matches('/')),
                Got::Err(e.to_string()),
            );
            return;
        }
    };
    for (name, kind) in members {
        let path = join(g.path(), &name);
        match kind {
            MemberKind::Group => match g.group(&name) {
                Ok(sub) => {
                    if seen.insert(sub.object_address()) {
                        walk(f, &sub, seen);
                    }
                }
                Err(e) => emit(&format!("{path}/*"), Got::Err(e.to_string())),
            },
            MemberKind::Dataset => emit(&path, read(f, &path)),
            _ => {}
        }
    }
}

fn main() {
    let path = std::env::args().nth(1).expect("a file");
    let f = match File::open(&path) {
        Ok(f) => f,
        Err(e) => return file_error(e.to_string()),
    };
    match f.root() {
        Ok(root) => {
            let mut seen = BTreeSet::from([root.object_address()]);
            walk(&f, &root, &mut seen);
        }
        Err(e) => file_error(e.to_string()),
    }
}
