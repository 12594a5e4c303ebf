//! Source datasets: names with printf-style block numbers, and the files they are found in.
//!
//! A source file name is searched as libhdf5 searches it (`H5F_prefix_open_file` with the
//! `HDF5_VDS_PREFIX` environment variable): the external-link search order of
//! [`crate::extlink::candidates`]. `.` is the virtual dataset's own file. A source that
//! cannot be found (no file, or no such dataset in it) is not an error: its elements read as
//! the fill value, as libhdf5 reads them.

use crate::error::{Error, Result};
use crate::file::{File, OpenOptions};

use super::super::Dataset;

/// The environment variable libhdf5 reads for the folders to search for source files.
pub(crate) const PREFIX_ENV: &str = "HDF5_VDS_PREFIX";

/// One piece of a parsed name.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    /// `%b`: the block number.
    Block,
}

/// A source file or dataset name, with its `%b` substitutions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Name {
    parts: Vec<Part>,
}

impl Name {
    /// Parse `raw` as libhdf5 does: `%b` is the block number, `%%` a percent sign; any other
    /// `%` sequence is refused.
    pub(crate) fn parse(raw: &str) -> Result<Name> {
        let mut parts = Vec::new();
        let mut text = String::new();
        let mut chars = raw.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                text.push(c);
                continue;
            }
            match chars.next() {
                Some('%') => text.push('%'),
                Some('b') => {
                    if !text.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut text)));
                    }
                    parts.push(Part::Block);
                }
                _ => {
                    return Err(Error::Unsupported(
                        "virtual dataset source names with a % sequence other than %b and %%",
                    ));
                }
            }
        }
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        Ok(Name { parts })
    }

    /// Whether the name holds `%b`.
    pub(crate) fn is_printf(&self) -> bool {
        self.parts.contains(&Part::Block)
    }

    /// The name for block `b`.
    pub(crate) fn with_block(&self, b: u64) -> String {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Block => out.push_str(&b.to_string()),
            }
        }
        out
    }
}

/// Where a source dataset is.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// In the virtual dataset's own file: reopened at each read by its path (a handle kept
    /// here would keep the file open through its own open-object registry).
    Here(String),
    /// In another file, kept open.
    There(Dataset),
}

impl Source {
    /// The dataset, for a read.
    pub(crate) fn dataset(&self, file: &File) -> Result<Dataset> {
        match self {
            Source::Here(path) => file.dataset(path),
            Source::There(d) => Ok(d.clone()),
        }
    }
}

/// Open the source `dataset` of file `name` for the virtual dataset in `file`; `None` when
/// either is not there.
pub(crate) fn open(file: &File, name: &str, dataset: &str) -> Result<Option<Source>> {
    if name == "." {
        return Ok(match file.dataset(dataset) {
            Ok(d) => {
                refresh_source(file, &d)?;
                Some(Source::Here(dataset.to_owned()))
            }
            Err(e) if absent(&e) => None,
            Err(e) => return Err(e),
        });
    }
    let store = &file.inner.store;
    if store.name.contains("://") {
        return Err(Error::Unsupported(
            "virtual dataset sources in other files of an object store",
        ));
    }
    // Sources are only read: read-only, or SWMR reads when the virtual dataset's file is
    // read so (a writer may be extending them).
    let options = if store.swmr_read {
        OpenOptions::swmr_read()
    } else {
        OpenOptions::read_only()
    };
    let prefixes = std::env::var(PREFIX_ENV).ok();
    for path in crate::extlink::candidates(name, prefixes.as_deref(), file.inner.origin()) {
        // Only regular files (a FIFO's open could wait forever).
        match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => {}
            _ => continue,
        }
        let other = match File::open_with(&path, options) {
            Ok(f) => f,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                continue;
            }
            Err(e) => return Err(e),
        };
        return Ok(match other.dataset(dataset) {
            Ok(d) => {
                refresh_source(file, &d)?;
                Some(Source::There(d))
            }
            Err(e) if absent(&e) => None,
            Err(e) => return Err(e),
        });
    }
    Ok(None)
}

/// A SWMR reader's view of a source another process is extending is the newest: each
/// (re)load of the virtual dataset refreshes its sources.
fn refresh_source(file: &File, d: &Dataset) -> Result<()> {
    if file.inner.store.swmr_read {
        d.refresh()?;
    }
    Ok(())
}

/// Whether `e` says a dataset is not there (which reads as the fill value).
fn absent(e: &Error) -> bool {
    matches!(e, Error::NotFound { .. } | Error::WrongKind { .. })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printf_names() {
        let n = Name::parse("data_%b.h5").unwrap();
        assert!(n.is_printf());
        assert_eq!(n.with_block(12), "data_12.h5");
        let n = Name::parse("100%%_%b%b").unwrap();
        assert_eq!(n.with_block(3), "100%_33");
        let n = Name::parse("plain.h5").unwrap();
        assert!(!n.is_printf());
        assert_eq!(n.with_block(1), "plain.h5");
        assert!(matches!(Name::parse("a%d"), Err(Error::Unsupported(_))));
        assert!(matches!(Name::parse("a%"), Err(Error::Unsupported(_))));
    }
}
