//! Files: create and open with library version bounds, flush, close.
//!
//! Everything h5chunk changes reaches the file at `flush` (or `close`, or when the `File` is
//! dropped), children first: dirty raw-data chunks, then the chunk-index blocks through the
//! metadata cache (which orders them by their flush dependencies), then the object headers that
//! point to the indexes, then the superblock with the end-of-file address. A file is readable by
//! libhdf5 after every `flush`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use h5chunk_cache::{CacheConfig, FileStorage, MetadataCache, Storage};
use h5chunk_format::message::Message;
use h5chunk_format::object_header::RawMessage;
use h5chunk_format::superblock::{self, Superblock};
use h5chunk_format::symbol_table_entry::{Cache, SymbolTableEntry};
use h5chunk_format::{Addr, Sizes};
use parking_lot::Mutex;

use crate::dataset::{Dataset, DatasetBuilder, DatasetShared};
use crate::error::{Error, Result};
use crate::group::{self, LinkValue};
use crate::libver::LibverBounds;
use crate::object::{Headers, create_header, raw};
use crate::types::H5Type;

/// Storage seen from the superblock's base address (a file with a userblock).
#[derive(Debug)]
struct BaseStorage {
    inner: FileStorage,
    base: u64,
}

impl Storage for BaseStorage {
    fn read_at(&self, addr: Addr, buf: &mut [u8]) -> std::io::Result<()> {
        self.inner.read_at(Addr(addr.get() + self.base), buf)
    }
    fn write_at(&self, addr: Addr, data: &[u8]) -> std::io::Result<()> {
        self.inner.write_at(Addr(addr.get() + self.base), data)
    }
    fn len(&self) -> std::io::Result<u64> {
        Ok(self.inner.len()?.saturating_sub(self.base))
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.inner.set_len(len + self.base)
    }
    fn sync(&self) -> std::io::Result<()> {
        self.inner.sync()
    }
}

/// The state shared by every handle on one open file.
#[derive(Debug)]
pub(crate) struct FileInner {
    path: PathBuf,
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) cache: MetadataCache,
    pub(crate) sizes: Sizes,
    pub(crate) bounds: LibverBounds,
    pub(crate) writable: bool,
    pub(crate) group_internal_k: u16,
    pub(crate) group_leaf_k: u16,
    /// The indexed-storage K of version 1 B-tree chunk indexes.
    pub(crate) istore_k: u16,
    superblock: Mutex<Superblock>,
    headers: Mutex<Headers>,
    /// Every dataset opened or created, by object header address: one shared state per
    /// dataset, so every handle sees the same chunk cache and nothing cached is lost when a
    /// handle is dropped before the file is flushed.
    datasets: Mutex<HashMap<Addr, Arc<DatasetShared>>>,
}

impl FileInner {
    /// `len` bytes at `at`. Space allocated but never written (past the file's current end,
    /// within the end of allocation) reads as zeros, as it will once the file is extended.
    pub(crate) fn read(&self, at: Addr, len: u64) -> Result<Vec<u8>> {
        let size = usize::try_from(len).map_err(|_| Error::Unsupported("reads over 4 GiB"))?;
        let mut buf = vec![0u8; size];
        // The common case, every chunk read: the bytes are in the file. Only a read that runs
        // past the file's end asks for its length (one system call less per read).
        if self.storage.read_at(at, &mut buf).is_ok() {
            return Ok(buf);
        }
        let end = self.storage.len().map_err(h5chunk_cache::Error::from)?;
        let eoa = self.cache.allocator().eoa().get().max(end);
        let wanted = at.get().checked_add(len);
        if wanted.is_none_or(|w| w > eoa) {
            return Err(Error::Format(h5chunk_format::Error::Truncated {
                structure: "file",
                at,
                needed: len,
                available: eoa.saturating_sub(at.get()),
            }));
        }
        let n = len.min(end.saturating_sub(at.get()));
        buf.fill(0);
        self.storage
            .read_at(at, &mut buf[..n as usize])
            .map_err(h5chunk_cache::Error::from)?;
        Ok(buf)
    }

    pub(crate) fn write(&self, at: Addr, bytes: &[u8]) -> Result<()> {
        self.check_writable()?;
        self.storage
            .write_at(at, bytes)
            .map_err(h5chunk_cache::Error::from)?;
        Ok(())
    }

    pub(crate) fn allocate(&self, len: u64) -> Result<Addr> {
        self.check_writable()?;
        Ok(self.cache.allocator().allocate(len)?)
    }

    pub(crate) fn free(&self, at: Addr, len: u64) -> Result<()> {
        Ok(self.cache.allocator().free(at, len)?)
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.writable {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "{} is open read-only",
                self.path.display()
            )))
        }
    }

    pub(crate) fn messages(&self, at: Addr) -> Result<Vec<Message>> {
        self.headers.lock().messages(&*self.storage, self.sizes, at)
    }

    pub(crate) fn add_message(&self, at: Addr, m: RawMessage) -> Result<()> {
        self.check_writable()?;
        self.headers
            .lock()
            .add(&*self.storage, &self.cache, self.sizes, at, m)
    }

    pub(crate) fn replace_message(&self, at: Addr, m: &Message) -> Result<()> {
        self.check_writable()?;
        self.headers
            .lock()
            .replace(&*self.storage, self.sizes, at, m)
    }

    /// Create an object header holding `messages` (chunk 0 padded to `pad` bytes); its address.
    pub(crate) fn create_object(&self, messages: &[(Message, u8)], pad: usize) -> Result<Addr> {
        self.check_writable()?;
        let raws = messages
            .iter()
            .map(|(m, flags)| raw(m, *flags, self.sizes))
            .collect::<Result<Vec<_>>>()?;
        let h = create_header(&self.cache, self.sizes, self.bounds.new_style(), raws, pad)?;
        let at = h.addr();
        self.headers.lock().insert_new(h);
        Ok(at)
    }

    /// Register a new dataset's state (the one already registered at `header` wins).
    pub(crate) fn insert_dataset(&self, header: Addr, d: Arc<DatasetShared>) -> Arc<DatasetShared> {
        Arc::clone(self.datasets.lock().entry(header).or_insert(d))
    }

    /// The shared state of the dataset at `header`, made by `make` the first time.
    pub(crate) fn dataset_state(
        &self,
        header: Addr,
        make: impl FnOnce() -> Result<Arc<DatasetShared>>,
    ) -> Result<Arc<DatasetShared>> {
        if let Some(d) = self.datasets.lock().get(&header) {
            return Ok(Arc::clone(d));
        }
        let d = make()?;
        Ok(Arc::clone(self.datasets.lock().entry(header).or_insert(d)))
    }

    pub(crate) fn root(&self) -> Result<Addr> {
        self.superblock
            .lock()
            .root_object_header()
            .ok_or(Error::Unsupported("a superblock without a root group"))
    }

    /// Children first: datasets (chunks, then their index and header messages), the metadata
    /// cache, object headers, then the superblock.
    pub(crate) fn flush(&self) -> Result<()> {
        if !self.writable {
            return Ok(());
        }
        let datasets: Vec<_> = self.datasets.lock().values().cloned().collect();
        for d in datasets {
            d.flush(self)?;
        }
        let report = self.cache.flush()?;
        if !report.is_complete() {
            return Err(Error::Unsupported(
                "a metadata flush blocked by unwritten chunks",
            ));
        }
        self.headers.lock().flush(&*self.storage)?;
        let eoa = self.cache.allocator().eoa().get();
        let mut sb = self.superblock.lock();
        sb.eof_address = eoa + sb.base_address;
        let mut out = Vec::new();
        sb.encode(&mut out)?;
        // The superblock sits at the base address, which is storage address 0.
        self.storage
            .write_at(Addr(0), &out)
            .map_err(h5chunk_cache::Error::from)?;
        let len = self.storage.len().map_err(h5chunk_cache::Error::from)?;
        if len != eoa {
            self.storage
                .set_len(eoa)
                .map_err(h5chunk_cache::Error::from)?;
        }
        self.storage.sync().map_err(h5chunk_cache::Error::from)?;
        Ok(())
    }
}

/// How [`File::create`] treats an existing file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CreateMode {
    /// Replace it (h5py's `'w'`).
    #[default]
    Truncate,
    /// Fail if it exists (h5py's `'x'`).
    Exclusive,
}

/// Options for creating a file.
#[derive(Clone, Copy, Debug, Default)]
pub struct FileOptions {
    /// Library version bounds (default: earliest to latest, as h5py).
    pub bounds: LibverBounds,
    /// What to do with an existing file.
    pub mode: CreateMode,
}

/// An open HDF5 file. Cloning gives another handle on the same file.
#[derive(Clone, Debug)]
pub struct File {
    pub(crate) inner: Arc<FileInner>,
}

impl File {
    /// Create `path` with h5py's default bounds (a version 0 superblock, old-style groups,
    /// version 1 B-tree chunk indexes).
    pub fn create(path: impl AsRef<Path>) -> Result<File> {
        File::create_with(path, FileOptions::default())
    }

    /// Create `path` with `options`.
    pub fn create_with(path: impl AsRef<Path>, options: FileOptions) -> Result<File> {
        File::create_inner(path, options, false)
    }

    /// Create `path` with `options`, recording every metadata write, dependency and eviction
    /// (see [`File::take_write_trace`]); for tests and diagnostics.
    pub fn create_traced(path: impl AsRef<Path>, options: FileOptions) -> Result<File> {
        File::create_inner(path, options, true)
    }

    fn create_inner(path: impl AsRef<Path>, options: FileOptions, trace: bool) -> Result<File> {
        let path = path.as_ref().to_path_buf();
        let mut open = std::fs::OpenOptions::new();
        open.read(true).write(true);
        match options.mode {
            CreateMode::Truncate => open.create(true).truncate(true),
            CreateMode::Exclusive => open.create_new(true),
        };
        let file = open.open(&path).map_err(|e| io_error(&path, e))?;
        let storage: Arc<dyn Storage> = Arc::new(BaseStorage {
            inner: FileStorage::new(file),
            base: 0,
        });
        let bounds = options.bounds;
        let version = bounds.superblock_version(false, false);
        let sizes = Sizes::DEFAULT;
        let sb_len: u64 = if version >= 2 { 48 } else { 96 };
        let config = CacheConfig {
            record_trace: trace,
            ..CacheConfig::default()
        };
        let cache = MetadataCache::new(Arc::clone(&storage), config)?;
        cache.allocator().set_eoa(Addr(sb_len));
        // The root group's address is not known yet: a placeholder superblock until it is.
        let placeholder = Superblock::new_v3(sizes, sb_len, Addr(0));
        let inner = Arc::new(FileInner {
            path,
            storage,
            cache,
            sizes,
            bounds,
            writable: true,
            group_internal_k: h5chunk_btree1::DEFAULT_GROUP_INTERNAL_K,
            group_leaf_k: h5chunk_btree1::DEFAULT_GROUP_LEAF_K,
            istore_k: superblock::DEFAULT_INDEXED_STORAGE_K,
            superblock: Mutex::new(placeholder),
            headers: Mutex::new(Headers::default()),
            datasets: Mutex::new(HashMap::new()),
        });
        let messages: Vec<(Message, u8)> = group::new_group_messages(&inner)?
            .into_iter()
            .map(|m| {
                let flags = if matches!(m, Message::GroupInfo(_)) {
                    1
                } else {
                    0
                };
                (m, flags)
            })
            .collect();
        let pad = if bounds.new_style() { 120 } else { 24 };
        let root = inner.create_object(&messages, pad)?;
        let sb = if version >= 2 {
            let mut sb = Superblock::new_v3(sizes, sb_len, root);
            sb.version = version;
            sb
        } else {
            let cache = match &messages[0].0 {
                Message::SymbolTable(st) => Cache::SymbolTable {
                    btree: Some(st.btree_address),
                    heap: Some(st.local_heap_address),
                },
                _ => Cache::Nothing,
            };
            let entry = SymbolTableEntry::new(0, Some(root), cache, sizes)?;
            Superblock::new_v0(sizes, sb_len, entry)
        };
        *inner.superblock.lock() = sb;
        let f = File { inner };
        f.flush()?;
        Ok(f)
    }

    /// Open `path` read-only.
    pub fn open(path: impl AsRef<Path>) -> Result<File> {
        File::open_with(path, false)
    }

    /// Open `path` for reading and writing (h5py's `'r+'`).
    pub fn open_rw(path: impl AsRef<Path>) -> Result<File> {
        File::open_with(path, true)
    }

    fn open_with(path: impl AsRef<Path>, writable: bool) -> Result<File> {
        let path = path.as_ref().to_path_buf();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(writable)
            .open(&path)
            .map_err(|e| io_error(&path, e))?;
        let raw = FileStorage::new(file);
        let len = raw.len().map_err(|e| io_error(&path, e))?;
        let read = |at: u64, n: u64| -> Result<Vec<u8>> {
            let n = n.min(len.saturating_sub(at));
            let mut buf = vec![0u8; n as usize];
            raw.read_at(Addr(at), &mut buf)
                .map_err(|e| io_error(&path, e))?;
            Ok(buf)
        };
        let mut at = None;
        for o in superblock::signature_offsets(len) {
            if read(o, 8)? == superblock::SIGNATURE {
                at = Some(o);
                break;
            }
        }
        let at = at.ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{}: not an HDF5 file (no superblock signature)",
                path.display()
            ))
        })?;
        let prefix = read(at, superblock::PREFIX_LEN as u64)?;
        let sb_len = Superblock::len_from_prefix(&prefix, Addr(at))?;
        let sb = Superblock::decode(&read(at, sb_len as u64)?, Addr(at))?;
        if sb.base_address != at {
            return Err(Error::Unsupported(
                "a base address other than the superblock's position",
            ));
        }
        if sb.eof_address > len {
            return Err(Error::InvalidArgument(format!(
                "{}: truncated file: {len} bytes, the superblock says {}",
                path.display(),
                sb.eof_address
            )));
        }
        if sb.extension_address.is_some() {
            return Err(Error::Unsupported("superblock extensions"));
        }
        let storage: Arc<dyn Storage> = Arc::new(BaseStorage {
            inner: raw,
            base: at,
        });
        let cache = MetadataCache::new(Arc::clone(&storage), CacheConfig::default())?;
        cache.allocator().set_eoa(Addr(sb.eof_address - at));
        // New objects follow h5py's default bounds, but never an older group style than the
        // file's root uses.
        let bounds = if sb.version >= 2 {
            LibverBounds::new(crate::libver::Libver::V18, crate::libver::Libver::Latest)?
        } else {
            LibverBounds::default()
        };
        let inner = Arc::new(FileInner {
            path,
            storage,
            cache,
            sizes: sb.sizes,
            bounds,
            writable,
            group_internal_k: sb.group_internal_k(),
            group_leaf_k: sb.group_leaf_k(),
            istore_k: sb.indexed_storage_k(),
            superblock: Mutex::new(sb),
            headers: Mutex::new(Headers::default()),
            datasets: Mutex::new(HashMap::new()),
        });
        Ok(File { inner })
    }

    /// The superblock's version.
    pub fn superblock_version(&self) -> u8 {
        self.inner.superblock.lock().version
    }

    /// The library version bounds new objects follow.
    pub fn bounds(&self) -> LibverBounds {
        self.inner.bounds
    }

    /// The root group.
    pub fn root(&self) -> Result<Group> {
        Ok(Group {
            file: self.clone(),
            addr: self.inner.root()?,
            path: "/".into(),
        })
    }

    /// The group at `path`.
    pub fn group(&self, path: &str) -> Result<Group> {
        self.root()?.group(path)
    }

    /// Create the group at `path` (its parent must exist).
    pub fn create_group(&self, path: &str) -> Result<Group> {
        let (parent, name) = split_path(path)?;
        self.group(parent)?.create_group(name)
    }

    /// The dataset at `path`.
    pub fn dataset(&self, path: &str) -> Result<Dataset> {
        let (parent, name) = split_path(path)?;
        self.group(parent)?.dataset(name)
    }

    /// Start building a dataset of `T` elements.
    pub fn new_dataset<T: H5Type>(&self) -> DatasetBuilder {
        DatasetBuilder::new(self.clone(), T::DESC)
    }

    /// Start building a dataset of a runtime-chosen element type.
    pub fn new_dataset_of(&self, dtype: crate::types::TypeDesc) -> DatasetBuilder {
        DatasetBuilder::new(self.clone(), dtype)
    }

    /// The metadata cache's counters by entry type (hits, misses, reads, writes, ...): what the
    /// benchmarks report as metadata accesses per lookup.
    pub fn cache_stats(&self) -> h5chunk_cache::CacheStats {
        self.inner.cache.stats()
    }

    /// The metadata writes, flush dependencies (chunk proxies included) and evictions recorded
    /// since the last call, for `h5chunk_cache::check_write_order` (empty unless the file was
    /// created with [`File::create_traced`]).
    pub fn take_write_trace(&self) -> h5chunk_cache::WriteTrace {
        self.inner.cache.take_trace()
    }

    /// Zero the metadata cache's counters.
    pub fn reset_cache_stats(&self) {
        self.inner.cache.reset_stats();
    }

    /// Write what is dirty, then drop every clean metadata entry from the cache, so the next
    /// lookups start cold (for measurements).
    pub fn evict_metadata(&self) -> Result<()> {
        self.flush()?;
        self.inner.cache.evict_clean();
        Ok(())
    }

    /// Write everything that changed, children first; the file is then complete on disk.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// Flush and close this handle.
    pub fn close(self) -> Result<()> {
        self.flush()
    }
}

impl Drop for FileInner {
    fn drop(&mut self) {
        if let Err(e) = self.flush() {
            // Drop cannot fail: report it instead (call `close` to handle the error).
            eprintln!(
                "h5chunk: flushing {} on drop failed: {e}",
                self.path.display()
            );
        }
    }
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source: e,
    }
}

/// `("/a/b", "c")` from `"/a/b/c"`.
fn split_path(path: &str) -> Result<(&str, &str)> {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rsplit_once('/') {
        Some((parent, name)) if !name.is_empty() => {
            Ok((if parent.is_empty() { "/" } else { parent }, name))
        }
        None if !trimmed.is_empty() => Ok(("/", trimmed)),
        _ => Err(Error::InvalidArgument(format!("invalid path {path:?}"))),
    }
}

/// What a group member is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberKind {
    /// A group.
    Group,
    /// A dataset.
    Dataset,
    /// A soft or external link, or an object of another kind.
    Other,
}

/// A group of an open file.
#[derive(Clone, Debug)]
pub struct Group {
    file: File,
    addr: Addr,
    path: String,
}

impl Group {
    /// The group's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    fn child_path(&self, name: &str) -> String {
        if self.path == "/" {
            format!("/{name}")
        } else {
            format!("{}/{name}", self.path)
        }
    }

    /// Every member: name and kind, sorted by name.
    pub fn members(&self) -> Result<Vec<(String, MemberKind)>> {
        let f = &self.file.inner;
        let mut out = Vec::new();
        for (name, v) in group::links(f, self.addr)? {
            let kind = match v {
                LinkValue::Hard(a) => kind_of(f, a)?,
                _ => MemberKind::Other,
            };
            out.push((name, kind));
        }
        Ok(out)
    }

    fn child(&self, name: &str) -> Result<Addr> {
        for (n, v) in group::links(&self.file.inner, self.addr)? {
            if n == name {
                return match v {
                    LinkValue::Hard(a) => Ok(a),
                    LinkValue::Soft(p) => {
                        let p = if p.starts_with('/') {
                            p
                        } else {
                            self.child_path(&p)
                        };
                        let (parent, leaf) = split_path(&p)?;
                        self.file.group(parent)?.child(leaf)
                    }
                    LinkValue::External { .. } => {
                        Err(Error::Unsupported("following external links"))
                    }
                };
            }
        }
        Err(Error::InvalidArgument(format!(
            "{}: no member named {name:?}",
            self.path
        )))
    }

    /// The group at `path`, relative to this one (or absolute).
    pub fn group(&self, path: &str) -> Result<Group> {
        let mut g = if path.starts_with('/') {
            self.file.root()?
        } else {
            self.clone()
        };
        for name in path.split('/').filter(|n| !n.is_empty() && *n != ".") {
            let addr = g.child(name)?;
            if kind_of(&self.file.inner, addr)? != MemberKind::Group {
                return Err(Error::InvalidArgument(format!(
                    "{}: not a group",
                    g.child_path(name)
                )));
            }
            g = Group {
                file: self.file.clone(),
                addr,
                path: g.child_path(name),
            };
        }
        Ok(g)
    }

    /// The dataset `name` in this group.
    pub fn dataset(&self, name: &str) -> Result<Dataset> {
        let addr = self.child(name)?;
        Dataset::open(&self.file, addr, self.child_path(name))
    }

    /// Create a group `name` in this group.
    pub fn create_group(&self, name: &str) -> Result<Group> {
        let f = &self.file.inner;
        let messages: Vec<(Message, u8)> = group::new_group_messages(f)?
            .into_iter()
            .map(|m| {
                let flags = if matches!(m, Message::GroupInfo(_)) {
                    1
                } else {
                    0
                };
                (m, flags)
            })
            .collect();
        let cache = match &messages[0].0 {
            Message::SymbolTable(st) => Cache::SymbolTable {
                btree: Some(st.btree_address),
                heap: Some(st.local_heap_address),
            },
            _ => Cache::Nothing,
        };
        let pad = if f.bounds.new_style() { 120 } else { 24 };
        let addr = f.create_object(&messages, pad)?;
        group::add_link(f, self.addr, name, addr, cache)?;
        Ok(Group {
            file: self.file.clone(),
            addr,
            path: self.child_path(name),
        })
    }

    /// Link an existing object into this group.
    pub(crate) fn link(&self, name: &str, target: Addr) -> Result<()> {
        group::add_link(&self.file.inner, self.addr, name, target, Cache::Nothing)
    }

    /// Start building a dataset of `T` elements in this group (its `create` takes a path
    /// relative to this group).
    pub fn new_dataset<T: H5Type>(&self) -> DatasetBuilder {
        DatasetBuilder::new(self.file.clone(), T::DESC).in_group(self.clone())
    }
}

fn kind_of(f: &FileInner, addr: Addr) -> Result<MemberKind> {
    let mut kind = MemberKind::Other;
    for m in f.messages(addr)? {
        match m {
            Message::DataLayout(_) => return Ok(MemberKind::Dataset),
            Message::SymbolTable(_) | Message::LinkInfo(_) => kind = MemberKind::Group,
            _ => {}
        }
    }
    Ok(kind)
}

#[cfg(test)]
mod tests {
    use super::split_path;

    #[test]
    fn paths() {
        assert_eq!(split_path("/a/b/c").unwrap(), ("/a/b", "c"));
        assert_eq!(split_path("/c").unwrap(), ("/", "c"));
        assert_eq!(split_path("c").unwrap(), ("/", "c"));
        assert!(split_path("/").is_err());
    }
}
