//! Paths below a group: whether one names an object, and the groups on the way to a new one
//! made as h5py makes them.

use h5chunk::Error;
use pyo3::prelude::*;

use crate::error::{IntoPy, to_py};

/// The group that is to hold `path` and the name `path` gives it there: the groups on the
/// way (all but its last component) made where missing, as h5py makes intermediate groups.
pub fn make_parents<'p>(at: &h5chunk::Group, path: &'p str) -> PyResult<(h5chunk::Group, &'p str)> {
    let trimmed = path.trim_end_matches('/');
    let (parents, last) = match trimmed.rsplit_once('/') {
        Some((p, l)) => (p, l),
        None => ("", trimmed),
    };
    let mut cur = if path.starts_with('/') {
        at.file().root().py()?
    } else {
        at.clone()
    };
    for part in parents.split('/').filter(|p| !p.is_empty()) {
        cur = if exists(&cur, part)? {
            cur.group(part).py()?
        } else {
            cur.create_group(part).py()?
        };
    }
    Ok((cur, last))
}

/// Whether `path` names an object below `at` (a missing link anywhere on it: no).
pub fn exists(at: &h5chunk::Group, path: &str) -> PyResult<bool> {
    match at.group(path) {
        Ok(_) | Err(Error::WrongKind { .. }) => Ok(true),
        Err(Error::NotFound { .. }) => Ok(false),
        Err(e) => Err(to_py(e)),
    }
}
