//! The files this process has open, by identity, so that opening a file again shares the first
//! open's state, as libhdf5 shares one file among all the handles a process opens on it (two
//! handles with caches of their own would each write the file as if alone; and the second one's
//! lock would conflict with the first's, which is no other process's).
//!
//! A file's identity is its device and inode on Unix, its canonical path elsewhere, so a file
//! reached through two names or a link is still one file. Entries hold weak references: a file
//! every handle of which is gone is open no more, and its entry is dropped at the next lookup.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

/// What makes two opens the same file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Identity {
    /// Device and inode numbers.
    #[cfg_attr(not(unix), allow(dead_code))]
    Inode(u64, u64),
    /// The canonical path, where the platform has no inode numbers.
    #[cfg_attr(unix, allow(dead_code))]
    Path(PathBuf),
}

impl Identity {
    /// The identity of `file`, opened at `path`; `None` when the platform cannot say.
    pub(crate) fn of(file: &std::fs::File, path: &Path) -> Option<Identity> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let _ = path;
            let m = file.metadata().ok()?;
            Some(Identity::Inode(m.dev(), m.ino()))
        }
        #[cfg(not(unix))]
        {
            let _ = file;
            std::fs::canonicalize(path).ok().map(Identity::Path)
        }
    }
}

/// Open files of type `T` by identity.
#[derive(Debug)]
pub(crate) struct Registry<T> {
    open: Mutex<Vec<(Identity, Weak<T>)>>,
}

impl<T> Registry<T> {
    pub(crate) const fn new() -> Self {
        Registry {
            open: Mutex::new(Vec::new()),
        }
    }

    /// The open file of identity `id` that `live` accepts (one being closed is not), if any.
    pub(crate) fn find(&self, id: &Identity, live: impl Fn(&T) -> bool) -> Option<Arc<T>> {
        let mut open = self.open.lock();
        open.retain(|(_, w)| w.strong_count() > 0);
        open.iter()
            .filter(|(i, _)| i == id)
            .filter_map(|(_, w)| w.upgrade())
            .find(|t| live(t))
    }

    /// Record `file` as open under `id`.
    pub(crate) fn insert(&self, id: Identity, file: &Arc<T>) {
        let mut open = self.open.lock();
        open.retain(|(_, w)| w.strong_count() > 0);
        open.push((id, Arc::downgrade(file)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_live_files_only() {
        let r: Registry<u32> = Registry::new();
        let id = Identity::Inode(1, 2);
        let a = Arc::new(7);
        r.insert(id.clone(), &a);
        assert_eq!(r.find(&id, |_| true).as_deref(), Some(&7));
        assert!(
            r.find(&id, |v| *v != 7).is_none(),
            "refused by the liveness test"
        );
        assert!(r.find(&Identity::Inode(1, 3), |_| true).is_none());
        drop(a);
        assert!(
            r.find(&id, |_| true).is_none(),
            "a dropped file is open no more"
        );
        assert!(r.open.lock().is_empty());
    }
}
