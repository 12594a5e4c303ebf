//! `File::check`: walk every group and dataset reachable from the superblock, decode every
//! structure on the way (object headers, group B-trees and heaps, every block of every chunk
//! index, whose checksums the metadata cache verifies on load) and every chunk (fletcher32 and
//! compressed streams), and report each problem with its address instead of stopping at the
//! first.
//!
//! The superblock itself (its checksum, and an end of file beyond the file's length) is
//! verified by [`File::open`], which fails on a damaged one.

use std::collections::HashSet;
use std::fmt;

use h5chunk_format::Addr;

use crate::dataset::Dataset;
use crate::error::Error;
use crate::file::File;
use crate::link::MemberKind;
use crate::link::{self, LinkValue};

/// One problem `check` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The file address of the damaged structure or chunk, where one is known (an error
    /// message may name a deeper block's address too).
    pub addr: Option<u64>,
    /// The path of the group or dataset it belongs to.
    pub object: String,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.addr {
            Some(a) => write!(f, "{a:#x}: {}: {}", self.object, self.what),
            None => write!(f, "-: {}: {}", self.object, self.what),
        }
    }
}

/// What `check` found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Every problem, in the order found.
    pub problems: Vec<Problem>,
    /// Objects not checked because they use a feature h5chunk does not implement (dense
    /// groups, v2 B-tree chunk indexes, string types, ...), with the reason.
    pub skipped: Vec<String>,
    /// Groups walked.
    pub groups: u64,
    /// Datasets checked.
    pub datasets: u64,
    /// Chunks checked.
    pub chunks: u64,
}

impl CheckReport {
    /// Whether no problem was found.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

impl File {
    /// Check every structure reachable from the superblock (see the module documentation).
    pub fn check(&self) -> CheckReport {
        self.check_with(&mut |_, _| {})
    }

    /// [`File::check`], calling `progress(done, total)` as chunks are verified.
    pub fn check_with(&self, progress: &mut dyn FnMut(u64, u64)) -> CheckReport {
        let mut report = CheckReport::default();
        let f = &self.inner;
        let root = match f.root() {
            Ok(r) => r,
            Err(e) => {
                report.problems.push(Problem {
                    addr: Some(0),
                    object: "/".into(),
                    what: e.to_string(),
                });
                return report;
            }
        };
        // Walk the groups depth-first, collecting datasets; a header seen twice (a second hard
        // link, or a cycle in a corrupt file) is walked once.
        let mut datasets: Vec<(String, Addr)> = Vec::new();
        let mut seen = HashSet::from([root]);
        let mut stack = vec![("/".to_owned(), root)];
        while let Some((path, addr)) = stack.pop() {
            report.groups = report.groups.saturating_add(1);
            check_attributes(f, addr, &path, &mut report);
            let links = match link::links(&f.store, addr) {
                Ok(l) => l,
                Err(Error::Unsupported(what)) => {
                    report.skipped.push(format!("{path}: unsupported: {what}"));
                    continue;
                }
                Err(e) => {
                    report.problems.push(problem(addr, &path, &e));
                    continue;
                }
            };
            if let Ok(link::LinkStorage::Dense { heap, names }) = link::storage_of(&f.store, addr) {
                name_order(f, addr, &path, heap, names, false, &mut report);
            }
            for (name, value) in links {
                let child = if path == "/" {
                    format!("/{name}")
                } else {
                    format!("{path}/{name}")
                };
                // A link name is not empty and holds no '/' (libhdf5 refuses both: a path
                // could never reach the object).
                if name.is_empty() || name.contains('/') {
                    report.problems.push(Problem {
                        addr: Some(addr.get()),
                        object: child.clone(),
                        what: format!(
                            "link name {name:?} is empty or holds a '/': no path reaches it"
                        ),
                    });
                }
                // The group's name index (a B-tree of names in the local heap, or a link
                // message search) must find each link by its name, as opening a path does.
                match link::lookup(&f.store, addr, &name) {
                    Ok(Some(found)) if found == value => {}
                    Ok(other) => report.problems.push(Problem {
                        addr: Some(addr.get()),
                        object: child.clone(),
                        what: format!(
                            "the group lists this link, but looking it up by name finds {other:?}"
                        ),
                    }),
                    Err(e) => report.problems.push(problem(addr, &child, &e)),
                }
                let LinkValue::Hard(a) = value else { continue };
                if !seen.insert(a) {
                    continue;
                }
                match f.store.messages(a) {
                    Ok(ms) => match link::kind_from(&ms) {
                        MemberKind::Dataset => datasets.push((child, a)),
                        MemberKind::Group => stack.push((child, a)),
                        // A named datatype holds a datatype message; an object with none
                        // of the three kinds' messages is one libhdf5 cannot open.
                        MemberKind::Other
                            if !ms.iter().any(|m| {
                                matches!(m, h5chunk_format::message::Message::Datatype(_))
                            }) =>
                        {
                            report.problems.push(Problem {
                                addr: Some(a.get()),
                                object: child,
                                what: "an object that is no group, dataset or named datatype \
                                       (its header holds none of their messages)"
                                    .into(),
                            });
                        }
                        MemberKind::Other => {}
                    },
                    Err(e) => report.problems.push(problem(a, &child, &e)),
                }
            }
        }
        // Open every dataset and list its chunk records (decoding every index block), then
        // verify the chunks with progress.
        let mut opened: Vec<(Dataset, Vec<_>)> = Vec::new();
        for (path, addr) in datasets {
            check_attributes(f, addr, &path, &mut report);
            let d = match Dataset::open(self, addr, path.clone()) {
                Ok(d) => d,
                Err(Error::Unsupported(what)) => {
                    report.skipped.push(format!("{path}: unsupported: {what}"));
                    continue;
                }
                Err(e) => {
                    report.problems.push(problem(addr, &path, &e));
                    continue;
                }
            };
            report.datasets = report.datasets.saturating_add(1);
            match d.chunk_records() {
                Ok(records) => opened.push((d, records)),
                Err(e) => report.problems.push(problem(addr, &path, &e)),
            }
        }
        let total: u64 = opened.iter().map(|(_, r)| r.len() as u64).sum();
        let mut done = 0u64;
        progress(0, total);
        for (d, records) in &opened {
            let mut step = || {
                done = done.saturating_add(1);
                progress(done, total);
            };
            let object = d.path();
            let problems = &mut report.problems;
            let mut found = |addr: Option<Addr>, what: String| {
                problems.push(Problem {
                    addr: addr.map(Addr::get),
                    object: object.clone(),
                    what,
                })
            };
            if let Err(e) = d.verify_chunks(records, &mut found, &mut step) {
                report
                    .problems
                    .push(problem(d.header_addr(), &d.path(), &e));
            }
            report.chunks = report.chunks.saturating_add(records.len() as u64);
        }
        report
    }
}

/// Read every attribute of the object at `addr` as `Group::attrs` does (values of
/// variable-length strings from the global heap included): a problem for each failure, a
/// skipped line for storage h5chunk does not read yet.
fn check_attributes(f: &crate::file::FileInner, addr: Addr, path: &str, report: &mut CheckReport) {
    match crate::attr::read_all(&f.store, addr) {
        // Dense attributes: libhdf5 finds each by its name's hash, then its name.
        Ok(_) => match crate::attr::dense_addresses(&f.store, addr) {
            Ok(Some((heap, names))) => name_order(f, addr, path, heap, names, true, report),
            Ok(None) => {}
            Err(e) => report.problems.push(problem(addr, path, &e)),
        },
        Err(Error::Unsupported(what)) => {
            report
                .skipped
                .push(format!("{path}: attributes: unsupported: {what}"));
        }
        Err(e) => report.problems.push(problem(addr, path, &e)),
    }
}

/// A problem for each record of the dense name index at `names` (links, or `attributes`)
/// out of libhdf5's order: two names of one hash must be in name order, or libhdf5's
/// lookups, which compare the hash and then the name, may miss one.
fn name_order(
    f: &crate::file::FileInner,
    addr: Addr,
    path: &str,
    heap: Addr,
    names: Addr,
    attributes: bool,
    report: &mut CheckReport,
) {
    match h5chunk_dense::misordered(&f.store, heap, names, attributes) {
        Ok(pairs) => {
            for (a, b) in pairs {
                report.problems.push(Problem {
                    addr: Some(names.get()),
                    object: path.to_owned(),
                    what: format!(
                        "name index: {a:?} before {b:?}, names of one hash out of name order \
                         (libhdf5 may not find them)"
                    ),
                });
            }
        }
        Err(e) => report.problems.push(problem(addr, path, &e.into())),
    }
}

fn problem(addr: Addr, object: &str, e: &Error) -> Problem {
    Problem {
        addr: Some(addr.get()),
        object: object.to_owned(),
        what: e.to_string(),
    }
}
