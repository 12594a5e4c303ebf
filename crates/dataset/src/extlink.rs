//! External links followed: the file an external link names is found where libhdf5 looks for
//! it, and opened as libhdf5 opens it.
//!
//! The search (libhdf5's `H5F_prefix_open_file`): a name that is an absolute path is tried as
//! it is first, and is then reduced to its last component for the rest of the search; each
//! folder of the `HDF5_EXT_PREFIX` environment variable (a colon-separated list; a folder
//! starting with `${ORIGIN}` starts at the linking file's folder); the folder of the linking
//! file, as it was opened (absolute); the name as given (relative to the working folder); the
//! linking file's folder once symbolic links are resolved. The first candidate that is a
//! regular file (never a FIFO or a device, whose open could wait forever) is opened, with the linking file's intent (read-only, read-write, SWMR reading), and shared
//! with any open of the same file in this process ([`crate::open_files`]), as libhdf5's
//! external file cache shares one open among the links that reach a file.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::file::{File, OpenOptions};
use crate::link::{self, At, MemberKind, Reached, Resolver};

/// The object at `path` from the group `from` of `file`, which must be a `kind`, and the file
/// it is in: each external link on the way opens its target file ([`open_target`]) and the
/// walk goes on there, within libhdf5's limit of soft and external links in all.
pub(crate) fn reach(file: &File, from: &At, path: &str, kind: MemberKind) -> Result<(File, At)> {
    let mut file = file.clone();
    let mut from = from.clone();
    let mut path = path.to_owned();
    let mut hops = 0;
    loop {
        let store = &file.inner.store;
        let resolver = Resolver {
            store,
            root: file.inner.root()?,
        };
        match resolver.walk(&from, &path, &mut hops)? {
            Reached::Here(at) => {
                if link::kind_of(store, at.addr)? != kind {
                    return Err(Error::WrongKind {
                        path: at.path,
                        expected: kind.name(),
                    });
                }
                return Ok((file, at));
            }
            Reached::External {
                link,
                file: target,
                path: object,
                rest,
            } => {
                let next = open_target(&file, &link, &target)?;
                from = At {
                    addr: next.inner.root()?,
                    path: "/".into(),
                };
                path = format!("/{}/{rest}", object.trim_start_matches('/'));
                file = next;
            }
        }
    }
}

/// The paths to try, in order, for the file name `name` an external link in the file opened
/// at `origin` holds, with `prefixes` the value of `HDF5_EXT_PREFIX`.
pub(crate) fn candidates(
    name: &str,
    prefixes: Option<&str>,
    origin: Option<&Path>,
) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let given = Path::new(name);
    // An absolute name is tried as it is; the rest of the search uses its last component.
    let rest: &Path = if given.is_absolute() {
        out.push(given.to_path_buf());
        match given.file_name() {
            Some(last) => Path::new(last),
            None => return out,
        }
    } else {
        given
    };
    let folder = origin.and_then(Path::parent);
    for prefix in prefixes.unwrap_or("").split(':').filter(|p| !p.is_empty()) {
        let prefix = match (prefix.strip_prefix("${ORIGIN}"), folder) {
            (Some(after), Some(f)) => f.join(after.trim_start_matches('/')),
            (Some(_), None) => continue,
            (None, _) => PathBuf::from(prefix),
        };
        out.push(prefix.join(rest));
    }
    if let Some(f) = folder {
        out.push(f.join(rest));
    }
    out.push(rest.to_path_buf());
    if let Some(real) = origin
        .and_then(|o| std::fs::canonicalize(o).ok())
        .and_then(|r| r.parent().map(Path::to_path_buf))
    {
        out.push(real.join(rest));
    }
    let mut seen = Vec::with_capacity(out.len());
    out.retain(|p| {
        let new = !seen.contains(p);
        if new {
            seen.push(p.clone());
        }
        new
    });
    out
}

/// Open the file `target` that the external link at `link` in `from` names: the first
/// candidate that exists, with `from`'s intent.
pub(crate) fn open_target(from: &File, link: &str, target: &str) -> Result<File> {
    let store = &from.inner.store;
    if target.is_empty() {
        return Err(Error::corrupt(
            "link message",
            None,
            format!("{}: external link {link} names no file", store.name),
        ));
    }
    let options = if store.swmr_read {
        OpenOptions::swmr_read()
    } else if store.writable {
        OpenOptions::read_write()
    } else {
        OpenOptions::read_only()
    };
    let prefixes = std::env::var("HDF5_EXT_PREFIX").ok();
    let tried = candidates(target, prefixes.as_deref(), from.inner.origin());
    for path in &tried {
        // Only regular files: a name in a hostile file could be a FIFO (an open that waits
        // for a writer forever) or a device.
        match std::fs::metadata(path) {
            Ok(m) if m.is_file() => {}
            _ => continue,
        }
        match File::open_with(path, options) {
            Ok(f) => return Ok(f),
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Err(Error::ExternalMissing {
        file: store.name.clone(),
        link: link.to_owned(),
        target: target.to_owned(),
        tried: tried.iter().map(|p| p.display().to_string()).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::candidates;
    use std::path::{Path, PathBuf};

    fn strs(v: Vec<PathBuf>) -> Vec<String> {
        v.into_iter().map(|p| p.display().to_string()).collect()
    }

    #[test]
    fn search_order() {
        let origin = Path::new("/no/such/dir/master.h5");
        assert_eq!(
            strs(candidates("d.h5", Some("/p1::/p2"), Some(origin))),
            ["/p1/d.h5", "/p2/d.h5", "/no/such/dir/d.h5", "d.h5"]
        );
        assert_eq!(
            strs(candidates("/abs/sub/d.h5", None, Some(origin))),
            ["/abs/sub/d.h5", "/no/such/dir/d.h5", "d.h5"]
        );
        assert_eq!(
            strs(candidates("sub/d.h5", Some("${ORIGIN}/x"), Some(origin))),
            [
                "/no/such/dir/x/sub/d.h5",
                "/no/such/dir/sub/d.h5",
                "sub/d.h5"
            ]
        );
        assert_eq!(strs(candidates("d.h5", None, None)), ["d.h5"]);
    }
}
