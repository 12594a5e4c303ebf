//! Files: create and open with library version bounds on any storage backend, flush, close.
//!
//! A file is a [`Store`] (storage, metadata cache, object headers) plus what only the file as a
//! whole has: the superblock and the registry of open objects. Everything h5chunk changes
//! reaches the storage at `flush` (or `close`, or when the last handle is dropped), children
//! first: each open dataset's dirty raw-data chunks and index changes, then the chunk-index
//! blocks through the metadata cache (which orders them by their flush dependencies), then the
//! object headers that point to the indexes, then the superblock with the end-of-file address
//! (before the object headers for a SWMR writer: see `write_all`). A file is readable by
//! libhdf5 after every `flush`.
//!
//! As libhdf5, an open for writing marks the superblock's consistency flags and takes the file
//! lock, and a clean close clears and releases them (the single-writer/multiple-reader rules
//! are in `swmr.rs`).

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use h5chunk_cache::{
    CacheConfig, Counted, Durability, FileStorage, IoStats, JournalPlace, Journaled, MetadataCache,
    Recovery, Storage,
};
use h5chunk_format::message::Message;
use h5chunk_format::object_header::MessageFlags;
use h5chunk_format::superblock::{ConsistencyFlags, Superblock};
use h5chunk_format::symbol_table_entry::{Cache, SymbolTableEntry};
use h5chunk_format::{Addr, Sizes};
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::libver::{Libver, LibverBounds};
use crate::link;
use crate::open_files::{Identity, Registry};
use crate::store::{BTreeK, HeaderPad, Store};

/// Bytes of a version 0/1 superblock with 8-byte offsets and lengths (and its root group's
/// symbol table entry), and of a version 2/3 one.
const SUPERBLOCK_V0_LEN: u64 = 96;
const SUPERBLOCK_V2_LEN: u64 = 48;

/// The name errors give a file on a storage backend (the backend may hold gigabytes: its
/// `Debug` form is no name).
const BACKEND: &str = "(storage backend)";

/// Storage seen from the superblock's base address (a file with a userblock).
#[derive(Debug)]
struct BaseStorage {
    inner: Arc<dyn Storage>,
    base: u64,
}

impl BaseStorage {
    fn shifted(&self, addr: Addr) -> std::io::Result<Addr> {
        addr.get()
            .checked_add(self.base)
            .map(Addr)
            .ok_or_else(|| std::io::Error::other("address past 2^64 after the userblock"))
    }
}

impl Storage for BaseStorage {
    fn read_at(&self, addr: Addr, buf: &mut [u8]) -> std::io::Result<()> {
        self.inner.read_at(self.shifted(addr)?, buf)
    }
    fn write_at(&self, addr: Addr, data: &[u8]) -> std::io::Result<()> {
        self.inner.write_at(self.shifted(addr)?, data)
    }
    fn len(&self) -> std::io::Result<u64> {
        Ok(self.inner.len()?.saturating_sub(self.base))
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.inner.set_len(self.shifted(Addr(len))?.get())
    }
    fn sync(&self) -> std::io::Result<()> {
        self.inner.sync()
    }
    fn read_runs_at(&self, runs: &mut [(Addr, &mut [u8])]) -> std::io::Result<()> {
        if self.base == 0 {
            return self.inner.read_runs_at(runs);
        }
        // Shifted and handed down whole, so an object store fetches them together.
        let mut shifted = runs
            .iter_mut()
            .map(|(a, b)| Ok((self.shifted(*a)?, &mut **b)))
            .collect::<std::io::Result<Vec<_>>>()?;
        self.inner.read_runs_at(&mut shifted)
    }
    fn write_gather_at(&self, addr: Addr, parts: &[&[u8]]) -> std::io::Result<()> {
        self.inner.write_gather_at(self.shifted(addr)?, parts)
    }
    fn remote_stats(&self) -> Option<h5chunk_cache::RemoteStats> {
        self.inner.remote_stats()
    }
    fn prefetch(&self, ranges: &[(Addr, u64)]) -> std::io::Result<()> {
        let shifted = ranges
            .iter()
            .map(|&(a, n)| Ok((self.shifted(a)?, n)))
            .collect::<std::io::Result<Vec<_>>>()?;
        self.inner.prefetch(&shifted)
    }
    fn fetch_whole_on_miss(&self, range: (Addr, u64)) {
        if let Ok(at) = self.shifted(range.0) {
            self.inner.fetch_whole_on_miss((at, range.1));
        }
    }
    fn expect_growth_ahead(&self) {
        self.inner.expect_growth_ahead()
    }
}

/// An object that stays open with the file and is written by its flush (a dataset's chunk
/// cache and index state). One shared state per object header, whichever handle opened it.
pub(crate) trait OpenObject: Any + Send + Sync + fmt::Debug {
    /// Write what changed (children before the object header that points to them).
    fn flush(&self, store: &Store) -> Result<()>;
    /// Refuse SWMR writing if this object cannot be written under it.
    fn check_swmr(&self) -> Result<()>;
}

/// The state shared by every handle on one open file.
#[derive(Debug)]
pub(crate) struct FileInner {
    pub(crate) store: Store,
    superblock: Mutex<Superblock>,
    /// Every object opened or created, by object header address: one shared state per
    /// object, so every handle sees the same chunk cache and nothing cached is lost when a
    /// handle is dropped before the file is flushed.
    open: Mutex<HashMap<Addr, Arc<dyn OpenObject>>>,
    /// The rollback journal under the storage, which makes each flush atomic (none for
    /// read-only files and `Durability::None`).
    pub(crate) journal: Option<Arc<Journaled>>,
    /// What a flush promises to survive.
    durability: Durability,
    /// The superblock the last flush wrote (`None` before the first): the same one is not
    /// encoded or written again.
    superblock_written: Mutex<Option<Superblock>>,
    /// A second handle on the file's lock (`flock`), to release it when SWMR writing starts;
    /// the lock itself goes with the storage's handle.
    lock: Mutex<Option<std::fs::File>>,
    /// Opens of the file not yet closed: one per `File::open`/`create` that made or shared
    /// this state (clones of a `File` are the same open). [`File::close`] closes the file
    /// when it closes the last one, as libhdf5 closes a file with its last file ID.
    opens: std::sync::atomic::AtomicUsize,
    /// The path the file was opened or created at, made absolute then (libhdf5's "extpath"):
    /// external links in it name files relative to its folder. None for other storages.
    origin: std::sync::OnceLock<std::path::PathBuf>,
}

/// One open of a file, shared by the clones of the [`File`] it made (and the groups and
/// datasets reached through them): dropped or closed, the file has one open fewer.
#[derive(Debug)]
struct Opened {
    inner: Arc<FileInner>,
    closed: std::sync::atomic::AtomicBool,
}

impl Opened {
    fn new(inner: &Arc<FileInner>) -> Arc<Opened> {
        Arc::new(Opened {
            inner: Arc::clone(inner),
            closed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Close this open, once: the opens still left.
    fn close(&self) -> usize {
        use std::sync::atomic::Ordering;
        if self.closed.swap(true, Ordering::AcqRel) {
            return self.inner.opens.load(Ordering::Acquire);
        }
        self.inner
            .opens
            .fetch_sub(1, Ordering::AcqRel)
            .saturating_sub(1)
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        self.close();
    }
}

/// The files this process has open by path (see [`crate::open_files`]).
static OPEN_FILES: Registry<FileInner> = Registry::new();

impl FileInner {
    /// The absolute path the file was opened or created at (None for other storages).
    pub(crate) fn origin(&self) -> Option<&Path> {
        self.origin.get().map(|p| p.as_path())
    }

    /// Record the path the file was opened at, made absolute against the working folder of
    /// now (as libhdf5 records it when it opens a file).
    fn set_origin(&self, path: &Path) {
        if let Ok(abs) = std::path::absolute(path) {
            let _ = self.origin.set(abs);
        }
    }

    /// The root group became new-style (`crate::link::add_link_message`): its entry in a
    /// version 0/1 superblock caches a symbol table no more, as libhdf5 clears it then.
    pub(crate) fn uncache_root_symbol_table(&self) -> Result<()> {
        let mut sb = self.superblock.lock();
        let sizes = sb.sizes;
        if let h5chunk_format::superblock::VersionFields::Legacy(l) = &mut sb.fields
            && matches!(l.root_entry.cache(), Cache::SymbolTable { .. })
        {
            l.root_entry = SymbolTableEntry::new(
                l.root_entry.link_name_offset,
                l.root_entry.object_header,
                Cache::Nothing,
                sizes,
            )?;
        }
        Ok(())
    }

    /// Whether the file is still open: not closed by [`File::close`].
    fn is_open(&self) -> bool {
        !self.store.is_closed()
    }

    /// The superblock's base address: where address 0 of the file's structures is (past a
    /// userblock).
    pub(crate) fn base_address(&self) -> u64 {
        self.superblock.lock().base_address
    }

    /// The shared state of the object at `header`, made by `make` the first time.
    pub(crate) fn open_object<T: OpenObject>(
        &self,
        header: Addr,
        make: impl FnOnce() -> Result<Arc<T>>,
    ) -> Result<Arc<T>> {
        let existing = self.open.lock().get(&header).cloned();
        let shared = match existing {
            Some(o) => o,
            None => {
                let fresh: Arc<dyn OpenObject> = make()?;
                // Another handle may have opened it meanwhile: the first one registered wins.
                Arc::clone(self.open.lock().entry(header).or_insert(fresh))
            }
        };
        let any: Arc<dyn Any + Send + Sync> = shared;
        any.downcast::<T>()
            .map_err(|_| Error::Internal("an object header opened as two kinds of object"))
    }

    /// The root group's object header.
    pub(crate) fn root(&self) -> Result<Addr> {
        self.superblock
            .lock()
            .root_object_header()
            .ok_or_else(|| Error::corrupt("superblock", Addr(0), "no root group address"))
    }

    /// Children first: open objects (chunks, then their index and header messages), the
    /// metadata cache, object headers, then the superblock; atomically with respect to a
    /// crash when the file has a journal (its in-place writes wait for the commit, which
    /// applies them after the journal of the bytes they overwrite is complete).
    pub(crate) fn flush(&self) -> Result<()> {
        let s = &self.store;
        if !s.writable || s.is_closed() {
            return Ok(());
        }
        let Some(journal) = &self.journal else {
            return self.write_all();
        };
        // New space starts past the highest block ever allocated (under SWMR the file runs
        // ahead of it, to the end of the allocator's step), in storage addresses.
        let high = s.cache.allocator().high_water().get();
        let base = self.superblock.lock().base_address;
        journal.begin_with_frontier(high.saturating_add(base));
        match self.write_all() {
            Ok(()) => journal.commit().map_err(|e| s.io(e)),
            Err(e) => {
                // The flush's writes so far still reach the file (journaled), so the file and
                // the caches agree; the next flush commits them.
                if let Err(again) = journal.abandon() {
                    eprintln!("h5chunk: {}: after a failed flush: {again}", s.name);
                }
                Err(e)
            }
        }
    }

    /// What a flush writes, in order.
    fn write_all(&self) -> Result<()> {
        let s = &self.store;
        // In header order: the same changes make the same file, whatever the map's order.
        let mut open: Vec<_> = self
            .open
            .lock()
            .iter()
            .map(|(a, o)| (*a, Arc::clone(o)))
            .collect();
        open.sort_by_key(|(a, _)| *a);
        let open: Vec<_> = open.into_iter().map(|(_, o)| o).collect();
        for o in open {
            o.flush(s)?;
        }
        // A SWMR writer's readers (and the file after a crash) must never find a pointer past
        // the end of file the superblock records: the file is extended and the superblock
        // written before any block that points at the new space (nothing below allocates).
        // Otherwise (with a journal making the flush atomic) the superblock goes last.
        let swmr = s.swmr_write();
        if swmr {
            self.write_superblock(true)?;
        }
        // Every metadata block into the metadata cache, each depending on the blocks it
        // points at: heap blocks, then the object headers.
        s.heaps.flush(s)?;
        let late = s.stage_headers()?;
        // The cache writes children before parents: chunk indexes before the headers whose
        // layouts point at them, heap blocks before the heap's header, the heap and its name
        // index before the header whose link or attribute info points at them, global heap
        // collections before the headers of their attributes.
        let report = s.cache.flush()?;
        if !report.is_complete() {
            return Err(Error::Internal(
                "a metadata flush blocked by chunks not yet written",
            ));
        }
        s.headers_written();
        for (at, bytes) in late {
            s.write(at, &bytes)?;
        }
        self.write_superblock(swmr)?;
        // With a journal the commit makes the file durable.
        if self.journal.is_none() && self.durability == Durability::Sync {
            s.storage.sync().map_err(|e| s.io(e))?;
        }
        Ok(())
    }

    /// Write the superblock with the end of allocation as its end of file (unless the same
    /// image was written last), and cut or extend the file to it; `extend_first`: extend the
    /// file before the superblock says it is that long.
    fn write_superblock(&self, extend_first: bool) -> Result<()> {
        let s = &self.store;
        let eoa = s.cache.allocator().eoa().get();
        if extend_first && s.storage.len().map_err(|e| s.io(e))? < eoa {
            s.pages.clear();
            s.storage.set_len(eoa).map_err(|e| s.io(e))?;
        }
        let mut sb = self.superblock.lock();
        sb.eof_address = eoa
            .checked_add(sb.base_address)
            .ok_or(Error::Internal("end of allocation past 2^64"))?;
        // Unchanged since the last flush wrote it: not encoded, rewritten, journaled or synced.
        let mut written = self.superblock_written.lock();
        if written.as_ref() != Some(&*sb) {
            let mut out = Vec::new();
            sb.encode(&mut out)?;
            let base = sb.base_address;
            // The superblock sits at the base address, which is storage address 0.
            s.pages.invalidate(Addr(0), out.len() as u64);
            match &self.journal {
                // Applied first at the commit: see `Journaled::write_first`. The journal sits
                // under the base-address shift, so the superblock is at the base address.
                Some(j) => j.write_first(Addr(base), &out),
                None => s.storage.write_at(Addr(0), &out),
            }
            .map_err(|e| s.io(e))?;
            *written = Some(sb.clone());
        }
        drop(written);
        drop(sb);
        let len = s.storage.len().map_err(|e| s.io(e))?;
        if len != eoa {
            s.pages.clear();
            s.storage.set_len(eoa).map_err(|e| s.io(e))?;
        }
        Ok(())
    }

    /// Once SWMR writing has started (no new objects), with [`Durability::Flush`]: no more
    /// journal. The SWMR write order keeps the file consistent at every instant, for its
    /// readers and after a crash of the process alike (chunks and index blocks before their
    /// parents, the end of file before the object headers, no rewrite in place of anything a
    /// reader can see change, no reuse of freed space), so the journal's copies would only
    /// cost each flush a file of its own. `Durability::Sync` keeps it: a power cut can tear
    /// a write in place.
    fn swmr_without_journal(&self) -> Result<()> {
        if self.durability == Durability::Flush
            && let Some(j) = &self.journal
        {
            j.bypass().map_err(|e| self.store.io(e))?;
        }
        Ok(())
    }
}

impl FileInner {
    fn new(
        store: Store,
        superblock: Superblock,
        journal: Option<Arc<Journaled>>,
        durability: Durability,
        lock: Option<std::fs::File>,
    ) -> FileInner {
        FileInner {
            store,
            superblock: Mutex::new(superblock),
            open: Mutex::new(HashMap::new()),
            origin: std::sync::OnceLock::new(),
            journal,
            durability,
            superblock_written: Mutex::new(None),
            lock: Mutex::new(lock),
            opens: std::sync::atomic::AtomicUsize::new(1),
        }
    }

    /// Release the file lock (a SWMR writer holds none).
    fn unlock(&self) -> Result<()> {
        if let Some(f) = self.lock.lock().take() {
            f.unlock().map_err(|e| self.store.io(e))?;
        }
        Ok(())
    }

    /// Mark the file open for writing (and for SWMR writing) in the superblock's consistency
    /// flags, and write the superblock at once, as libhdf5 does at a read-write open.
    fn set_flags(&self, swmr: bool) -> Result<()> {
        {
            let mut sb = self.superblock.lock();
            sb.consistency_flags |= ConsistencyFlags::WRITE_ACCESS;
            if swmr {
                sb.consistency_flags |= ConsistencyFlags::SWMR_WRITE_ACCESS;
            }
        }
        self.flush()
    }

    /// A clean close: write what changed, then clear the consistency flags (the last write,
    /// as libhdf5 clears them as the last step of a clean close).
    fn close(&self) -> Result<()> {
        if self.store.is_closed() {
            return Ok(());
        }
        self.flush()?;
        if self.store.writable {
            // A SWMR writer's unused rest of its last allocation step goes back: the file
            // ends where its last block does, as libhdf5 leaves it.
            self.store.cache.allocator().release_tail();
            self.superblock.lock().consistency_flags = ConsistencyFlags::empty();
            self.flush()?;
        }
        self.store.mark_closed();
        self.unlock()
    }
}

impl Drop for FileInner {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            // Drop cannot fail: report it instead (call `close` to handle the error).
            eprintln!("h5chunk: closing {} on drop failed: {e}", self.store.name);
        }
    }
}

/// How [`File::create`] treats an existing file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CreateMode {
    /// Replace it (h5py's `'w'`).
    #[default]
    Truncate,
    /// Fail if it exists (h5py's `'x'`); on a storage backend, if it holds any byte.
    Exclusive,
}

/// Options for creating a file.
#[derive(Clone, Copy, Debug, Default)]
pub struct FileOptions {
    /// Library version bounds (default: earliest to latest, as h5py).
    pub bounds: LibverBounds,
    /// What to do with an existing file.
    pub mode: CreateMode,
    /// Record every metadata write, dependency and eviction (see
    /// [`File::take_write_trace`]); for tests and diagnostics.
    pub trace: bool,
    /// The metadata cache's byte budget (`None`: libhdf5's default maximum size, 32 MiB).
    /// Index blocks beyond it are written and evicted while the file is open.
    pub metadata_cache_bytes: Option<usize>,
    /// What each flush survives (default [`Durability::Flush`]: the process being killed at
    /// any instant, through a journal beside the file, `<file>.h5chunk-journal`, that exists
    /// only while a flush or an eviction between flushes is overwriting data of the last
    /// completed flush; [`Durability::Sync`] adds `fsync`s so that a power cut is survived too).
    pub durability: Durability,
    /// Threads that filter chunks: a read or flush of many compressed chunks (de)compresses
    /// them on this many threads (`None`: the available cores; `Some(1)`: the calling thread
    /// alone). Output is the same byte for byte whatever the number.
    pub threads: Option<usize>,
    /// Create the file for single-writer/multiple-reader writing (libhdf5's `H5Fcreate` with
    /// `H5F_ACC_SWMR_WRITE`): a version 3 superblock, a low library version bound of at least
    /// V110 (so new datasets get SWMR-safe chunk indexes), the consistency flags of a SWMR
    /// writer from the start and no file lock, so SWMR readers may open it at any time.
    /// Objects may still be created (as libhdf5 allows); create them, flush, then let readers
    /// in, or call [`File::start_swmr_write`] to refuse new objects from then on.
    pub swmr_write: bool,
    /// Write a paged file (libhdf5's paged aggregation, `H5Pset_file_space_strategy(PAGE)`
    /// with `H5Pset_file_space_page_size`) of pages of this many bytes (512 to 1 GiB):
    /// metadata and raw data in separate pages, no block smaller than a page across a page
    /// boundary, the end of file a multiple of the page size, and the File Space Info message
    /// in a superblock extension (so the superblock is version 2 at least; the high bound
    /// must allow V110). Free space is not persisted. Not with `swmr_write`.
    pub page_size: Option<u64>,
    /// With [`page_size`](Self::page_size): keep the file's first this many bytes (rounded up
    /// to whole pages) for metadata, so the superblock, object headers, group structures and
    /// chunk indexes come first and raw data after (one request of that size opens and lists
    /// the file and finds every chunk). When the room is full, later metadata goes to new
    /// pages after the data; a room not filled stays a hole.
    pub metadata_room: Option<u64>,
}

impl FileOptions {
    /// Options for a paged file of pages of `page_size` bytes (see
    /// [`page_size`](Self::page_size)), the rest default.
    pub fn paged(page_size: u64) -> FileOptions {
        FileOptions {
            page_size: Some(page_size),
            ..FileOptions::default()
        }
    }
}

/// Options for opening an existing file.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenOptions {
    /// Open for reading and writing (h5py's `'r+'`) rather than read-only (`'r'`).
    pub writable: bool,
    /// What each flush of a writable file survives (see [`FileOptions::durability`]).
    pub durability: Durability,
    /// Threads that filter chunks (see [`FileOptions::threads`]).
    pub threads: Option<usize>,
    /// Open as a single-writer/multiple-reader reader (h5py's `swmr=True`, libhdf5's
    /// `H5F_ACC_SWMR_READ`): read-only, a version 3 file's flags must say a SWMR writer has it
    /// open (or nobody), the superblock's stale end of file is not held against the file, and
    /// metadata whose checksum fails is read again (up to
    /// [`SWMR_READ_ATTEMPTS`](h5chunk_cache::CacheConfig::SWMR_READ_ATTEMPTS) times), since
    /// the writer may be writing it. [`Dataset::refresh`](crate::Dataset::refresh) then shows
    /// what the writer has flushed since.
    pub swmr_read: bool,
    /// Open for single-writer/multiple-reader writing (libhdf5's `H5F_ACC_SWMR_WRITE`; as
    /// opening read-write and calling [`File::start_swmr_write`]): needs a version 3
    /// superblock; the file takes no new objects.
    pub swmr_write: bool,
}

impl OpenOptions {
    /// Refuse options that contradict each other.
    fn check(&self) -> Result<()> {
        if self.swmr_read && self.swmr_write {
            return Err(Error::arg(
                "options",
                "a file is opened as a SWMR reader or as a SWMR writer, not both",
            ));
        }
        if self.swmr_read && self.writable {
            return Err(Error::arg(
                "options",
                "a SWMR reader opens the file read-only",
            ));
        }
        Ok(())
    }

    /// A SWMR reader (h5py's `h5py.File(path, 'r', swmr=True)`; see
    /// [`swmr_read`](Self::swmr_read)).
    pub fn swmr_read() -> OpenOptions {
        OpenOptions {
            writable: false,
            swmr_read: true,
            ..OpenOptions::default()
        }
    }

    /// Read-only (h5py's `'r'`).
    pub fn read_only() -> OpenOptions {
        OpenOptions {
            writable: false,
            ..OpenOptions::default()
        }
    }

    /// Read and write (h5py's `'r+'`).
    pub fn read_write() -> OpenOptions {
        OpenOptions {
            writable: true,
            ..OpenOptions::default()
        }
    }

    /// A SWMR writer (see [`swmr_write`](Self::swmr_write)).
    pub fn swmr_write() -> OpenOptions {
        OpenOptions {
            writable: true,
            swmr_write: true,
            ..OpenOptions::default()
        }
    }
}

impl FileOptions {
    /// Create `path` with these options (as [`File::create_with`]).
    pub fn create(self, path: impl AsRef<Path>) -> Result<File> {
        File::create_with(path, self)
    }

    /// Create a file on any storage backend (memory, a fault-injecting wrapper, a remote
    /// object): as [`create`](Self::create), with the storage in place of a path. `Truncate`
    /// empties the storage first; `Exclusive` refuses storage that holds any byte.
    pub fn create_on(self, storage: Arc<dyn Storage>) -> Result<File> {
        File::create_named(BACKEND.into(), storage, None, self, None)
    }

    /// [`create_on`](Self::create_on) with the rollback journal of
    /// [`durability`](Self::durability) kept in `journal`, a storage of its own (emptied at
    /// every completed flush).
    pub fn create_on_journaled(
        self,
        storage: Arc<dyn Storage>,
        journal: Arc<dyn Storage>,
    ) -> Result<File> {
        File::create_named(
            BACKEND.into(),
            storage,
            Some(JournalPlace::Storage(journal)),
            self,
            None,
        )
    }
}

impl OpenOptions {
    /// Open `path` with these options (as [`File::open_with`]).
    pub fn open(self, path: impl AsRef<Path>) -> Result<File> {
        File::open_with(path, self)
    }

    /// Open a file held by any storage backend, as [`open`](Self::open) opens a path.
    pub fn open_on(self, storage: Arc<dyn Storage>) -> Result<File> {
        File::open_named(BACKEND.into(), storage, None, self, None)
    }

    /// [`open_on`](Self::open_on), the file called `name` in errors (a URL, the name of a
    /// browser's `File`) instead of a placeholder.
    pub fn open_on_named(self, name: &str, storage: Arc<dyn Storage>) -> Result<File> {
        File::open_named(name.to_owned(), storage, None, self, None)
    }

    /// [`open_on`](Self::open_on) with the rollback journal in `journal` (see
    /// [`FileOptions::create_on_journaled`]): a journal an interrupted flush left there is
    /// applied first when opening for writing, and refused when opening read-only.
    pub fn open_on_journaled(
        self,
        storage: Arc<dyn Storage>,
        journal: Arc<dyn Storage>,
    ) -> Result<File> {
        File::open_named(
            BACKEND.into(),
            storage,
            Some(JournalPlace::Storage(journal)),
            self,
            None,
        )
    }

    /// Open a file in object storage with object_store's configuration keys
    /// (`aws_endpoint`, `aws_allow_http`, `aws_access_key_id`, ...) over the environment's
    /// (see [`File::open_url`]); these options must be read-only. A plain path opens as
    /// [`open`](Self::open) does. Cargo feature `object-store`.
    #[cfg(feature = "object-store")]
    #[cfg_attr(docsrs, doc(cfg(feature = "object-store")))]
    pub fn open_url(self, url: &str, store_options: &[(String, String)]) -> Result<File> {
        if !url.contains("://") {
            return File::open_with(url, self);
        }
        if self.writable || self.swmr_write {
            return Err(Error::arg(
                "options",
                "files in object storage open read-only",
            ));
        }
        let storage = h5chunk_cache::ObjectStorage::open(url, store_options)
            .map_err(|e| io_error(Path::new(url), e))?;
        File::open_named(url.to_owned(), Arc::new(storage), None, self, None)
    }
}

/// An open HDF5 file. Cloning gives another handle on the same file; the file is closed
/// (flushed, its consistency flags cleared, its lock released) by [`File::close`] or when the
/// last handle on it (or on any of its groups and datasets) is dropped.
#[derive(Clone, Debug)]
pub struct File {
    pub(crate) inner: Arc<FileInner>,
    /// The open this handle belongs to.
    open: Arc<Opened>,
}

impl File {
    /// Where the file's structures begin: the superblock's base address, past a user block
    /// (0 for most files). Addresses inside the file are relative to it; an absolute byte
    /// offset in the file (what kerchunk references and `h5dump -p` show) is this plus the
    /// address.
    pub fn base_address(&self) -> u64 {
        self.inner.base_address()
    }

    /// Create `path` with h5py's default bounds (a version 0 superblock, old-style groups,
    /// version 1 B-tree chunk indexes).
    pub fn create(path: impl AsRef<Path>) -> Result<File> {
        File::create_with(path, FileOptions::default())
    }

    /// Create `path` with `options`.
    pub fn create_with(path: impl AsRef<Path>, options: FileOptions) -> Result<File> {
        let path = path.as_ref();
        let mut open = std::fs::OpenOptions::new();
        open.read(true).write(true);
        // Truncated only once locked (`create_named`): a file another process has open is
        // left whole.
        match options.mode {
            CreateMode::Truncate => open.create(true),
            CreateMode::Exclusive => open.create_new(true),
        };
        let file = open.open(path).map_err(|e| io_error(path, e))?;
        let name = path.display().to_string();
        let id = Identity::of(&file, path);
        if let Some(id) = &id
            && OPEN_FILES.find(id, FileInner::is_open).is_some()
        {
            // Before the lock and the truncation: the open file is left whole.
            return Err(Error::AlreadyOpen {
                file: name,
                how: ", so it cannot be created anew (truncated)",
            });
        }
        let lock = crate::swmr::lock(&file, crate::swmr::Lock::Exclusive, &name)?;
        // Locked (or a SWMR writer, whose readers never write): this process alone writes it.
        let storage = FileStorage::sole_writer(file).map_err(|e| io_error(path, e))?;
        let f = File::create_named(
            name,
            Arc::new(storage),
            Some(JournalPlace::beside(path)),
            options,
            lock,
        )?;
        if options.swmr_write {
            f.inner.unlock()?;
        }
        f.inner.set_origin(path);
        if let Some(id) = id {
            OPEN_FILES.insert(id, &f.inner);
        }
        Ok(f)
    }

    fn create_named(
        name: String,
        storage: Arc<dyn Storage>,
        place: Option<JournalPlace>,
        options: FileOptions,
        lock: Option<std::fs::File>,
    ) -> Result<File> {
        let counted = Arc::new(Counted::new(storage));
        let storage: Arc<dyn Storage> = Arc::clone(&counted) as Arc<dyn Storage>;
        // Before anything is truncated.
        crate::paged::check_options(
            options.page_size,
            options.metadata_room,
            options.swmr_write,
            options.bounds.high(),
        )?;
        let io = |e| Error::Io {
            file: name.clone(),
            source: e,
        };
        match options.mode {
            // An empty file (a new one) is not truncated: cutting a file to its own length of
            // zero marks it, on ext4 (`auto_da_alloc`), as a file being replaced, and its close
            // then starts writing back everything written since, in the caller's `close`, as
            // an `fsync` would (libhdf5's `O_TRUNC` truncates nothing it has just created).
            CreateMode::Truncate => {
                if !storage.is_empty().map_err(io)? {
                    storage.set_len(0).map_err(io)?;
                }
            }
            CreateMode::Exclusive => {
                if !storage.is_empty().map_err(io)? {
                    return Err(Error::arg(
                        "storage",
                        format!("{name} holds data already (CreateMode::Exclusive)"),
                    ));
                }
            }
        }
        let bounds = if options.swmr_write {
            // libhdf5 raises the low bound of a SWMR-write create to V110.
            LibverBounds::new(
                options.bounds.low().max(Libver::V110),
                options.bounds.high(),
            )?
        } else {
            options.bounds
        };
        let mut version = bounds.superblock_version(options.swmr_write, false);
        if options.page_size.is_some() {
            // Versions 0 and 1 have no superblock extension, as libhdf5 raises them.
            version = version.max(2);
        }
        let sizes = Sizes::DEFAULT;
        let sb_len = if version >= 2 {
            SUPERBLOCK_V2_LEN
        } else {
            SUPERBLOCK_V0_LEN
        };
        let defaults = CacheConfig::default();
        let config = CacheConfig {
            record_trace: options.trace,
            max_bytes: options.metadata_cache_bytes.unwrap_or(defaults.max_bytes),
            ..defaults
        };
        // A journal left beside the file this call replaces is the old file's.
        let journal = match place.filter(|_| options.durability != Durability::None) {
            Some(place) => {
                h5chunk_cache::discard_journal(&place).map_err(io)?;
                Some(Arc::new(
                    Journaled::new(Arc::clone(&storage), place, options.durability).map_err(io)?,
                ))
            }
            None => None,
        };
        let storage: Arc<dyn Storage> = Arc::new(BaseStorage {
            inner: match &journal {
                Some(j) => Arc::clone(j) as Arc<dyn Storage>,
                None => storage,
            },
            base: 0,
        });
        let cache = MetadataCache::new(Arc::clone(&storage), config)?;
        cache.allocator().set_eoa(Addr(sb_len));
        let mut store = Store::new(name, storage, cache, sizes, bounds, true, BTreeK::default());
        store.io = Some(counted);
        if let Some(n) = options.threads {
            store.threads = n.max(1);
        }
        // Right after the superblock, in its page, as libhdf5 places it.
        let extension = match options.page_size {
            Some(page) => Some(crate::paged::create(
                &mut store,
                page,
                options.metadata_room,
            )?),
            None => None,
        };
        // The root group's address is not known yet: a placeholder superblock until it is.
        let placeholder = Superblock::new_v3(sizes, sb_len, Addr(0));
        let inner = Arc::new(FileInner::new(
            store,
            placeholder,
            journal,
            options.durability,
            lock,
        ));
        let messages = link::new_group_messages(&inner.store, false)?;
        let pad = if bounds.new_style() {
            HeaderPad::NewGroup
        } else {
            HeaderPad::OldGroup
        };
        let root = inner
            .store
            .create_object(&group_flags(&messages), pad, false)?;
        let sb = if version >= 2 {
            let mut sb = Superblock::new_v3(sizes, sb_len, root);
            sb.version = version;
            sb.extension_address = extension;
            sb
        } else {
            let entry = SymbolTableEntry::new(0, Some(root), symbol_cache(&messages), sizes)?;
            Superblock::new_v0(sizes, sb_len, entry)
        };
        *inner.superblock.lock() = sb;
        if options.swmr_write {
            inner.store.start_swmr_write(false);
        }
        inner.set_flags(options.swmr_write)?;
        Ok(File::first_open(inner))
    }

    /// Open `path` read-only.
    pub fn open(path: impl AsRef<Path>) -> Result<File> {
        File::open_with(path, OpenOptions::read_only())
    }

    /// Open `path` for reading and writing (h5py's `'r+'`).
    pub fn open_rw(path: impl AsRef<Path>) -> Result<File> {
        File::open_with(path, OpenOptions::read_write())
    }

    /// Open `path` with `options`.
    ///
    /// A file this process has open already is shared, as libhdf5 shares it: the new handle
    /// sees everything the others wrote, flushed or not, and [`File::close`] closes the file
    /// with its last open. An open the first cannot share is refused with
    /// [`Error::AlreadyOpen`] (writing a file open read-only; SWMR writing). A SWMR reader
    /// of a file this process is SWMR-writing opens it on its own, as another process would.
    pub fn open_with(path: impl AsRef<Path>, options: OpenOptions) -> Result<File> {
        options.check()?;
        let path = path.as_ref();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(options.writable || options.swmr_write)
            .open(path)
            .map_err(|e| io_error(path, e))?;
        let name = path.display().to_string();
        // A SWMR reader of a file this process is SWMR-writing reads what the writer flushed,
        // with a cache of its own, in this process as in another: it does not share (any
        // other open of the file does, as libhdf5's does), and is not shared.
        let id = Identity::of(&file, path);
        let shared = id.as_ref().and_then(|id| {
            OPEN_FILES.find(id, |f| {
                f.is_open() && !(options.swmr_read && f.store.swmr_write())
            })
        });
        if let Some(open) = shared {
            return File::share(open, &options, name);
        }
        let id = id.filter(|_| !options.swmr_read);
        // As libhdf5: a writer locks the file alone, readers (SWMR or not) share it, and a
        // SWMR writer holds no lock (its readers must get in).
        let how = if options.swmr_write {
            crate::swmr::Lock::None
        } else if options.writable {
            crate::swmr::Lock::Exclusive
        } else {
            crate::swmr::Lock::Shared
        };
        let lock = crate::swmr::lock(&file, how, &name)?;
        // A writer (locked, or SWMR, whose readers never write) is the file's only writer.
        let storage = if options.writable || options.swmr_write {
            FileStorage::sole_writer(file).map_err(|e| io_error(path, e))?
        } else {
            FileStorage::new(file)
        };
        let f = File::open_named(
            name,
            Arc::new(storage),
            Some(JournalPlace::beside(path)),
            options,
            lock,
        )?;
        f.inner.set_origin(path);
        if let Some(id) = id {
            OPEN_FILES.insert(id, &f.inner);
        }
        Ok(f)
    }

    /// A second open of a file this process has open: the open file's state, shared as
    /// libhdf5 shares it, when the first open allows what this one asks.
    fn share(open: Arc<FileInner>, options: &OpenOptions, name: String) -> Result<File> {
        let refuse = |how| Err(Error::AlreadyOpen { file: name, how });
        if options.swmr_write {
            return refuse(", so it cannot be opened again for SWMR writing");
        }
        if options.writable && !open.store.writable {
            return refuse(" read-only, so it cannot be opened again for writing");
        }
        open.opens.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Ok(File {
            open: Opened::new(&open),
            inner: open,
        })
    }

    /// The handle of a file's first open.
    fn first_open(inner: Arc<FileInner>) -> File {
        File {
            open: Opened::new(&inner),
            inner,
        }
    }

    /// Open a file in object storage, read-only: `s3://bucket/key` (credentials, region and
    /// endpoint from the standard `AWS_*` environment variables: `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP` for a
    /// local server), `http(s)://host/path` (any server that answers range requests; the size
    /// comes with the first GET's `Content-Range`, no HEAD) or `file:///path`; a plain path
    /// opens as [`File::open`] does. Reads are
    /// range requests: the first bytes come with the opening request, metadata is cached,
    /// and a read's chunks are fetched together (see
    /// [`ObjectStorage`](crate::storage::ObjectStorage)). Cargo feature `object-store`.
    #[cfg(feature = "object-store")]
    #[cfg_attr(docsrs, doc(cfg(feature = "object-store")))]
    pub fn open_url(url: &str) -> Result<File> {
        OpenOptions::read_only().open_url(url, &[])
    }

    /// Zero the superblock's file consistency flags of the file at `path`, as `h5clear -s`
    /// does: for a file a crashed writer left marked open, which libhdf5 and h5chunk refuse
    /// ([`Error::FileFlagged`]). Whether there were flags to clear. A journal an interrupted
    /// flush left beside the file is applied first (see [`File::recover`]). Only safe when
    /// no process has the file open for writing; `h5chunk clear FILE` runs this.
    pub fn clear_consistency_flags(path: impl AsRef<Path>) -> Result<bool> {
        crate::swmr::clear_flags(path.as_ref())
    }

    /// [`File::clear_consistency_flags`] of a file held by a storage backend.
    pub fn clear_consistency_flags_on(storage: &dyn Storage) -> Result<bool> {
        crate::swmr::clear_flags_on(storage, BACKEND)
    }

    /// Roll the file at `path` back to its last completed flush if an interrupted flush left
    /// a journal beside it (what opening it for writing does first); `None` if there was
    /// nothing to do. `h5chunk recover FILE` runs this.
    pub fn recover(path: impl AsRef<Path>) -> Result<Option<Recovery>> {
        let path = path.as_ref();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| io_error(path, e))?;
        h5chunk_cache::recover(&FileStorage::new(file), &JournalPlace::beside(path))
            .map_err(|e| io_error(path, e))
    }

    fn open_named(
        name: String,
        raw: Arc<dyn Storage>,
        place: Option<JournalPlace>,
        mut options: OpenOptions,
        lock: Option<std::fs::File>,
    ) -> Result<File> {
        options.check()?;
        if options.swmr_write {
            options.writable = true;
        }
        // Every request of this handle, counted from the first (File::io_stats).
        let counted = Arc::new(Counted::new(raw));
        let raw: Arc<dyn Storage> = Arc::clone(&counted) as Arc<dyn Storage>;
        let io = |e| Error::Io {
            file: name.clone(),
            source: e,
        };
        // An interrupted flush: roll back to the last completed one before reading anything.
        // A SWMR reader asks only once it knows from the superblock whether a SWMR writer is
        // live: while one is, the journal is that writer's, mid-flush or not, and the file
        // is whole for readers at every instant of its flushes.
        let reader_place = place.clone().filter(|_| options.swmr_read);
        if let Some(place) = place.as_ref().filter(|_| !options.swmr_read)
            && h5chunk_cache::needs_recovery(place).map_err(io)?
        {
            if !options.writable {
                return Err(Error::NeedsRecovery { file: name });
            }
            h5chunk_cache::recover(&*raw, place).map_err(io)?;
        }
        let journal =
            match place.filter(|_| options.writable && options.durability != Durability::None) {
                Some(place) => Some(Arc::new(
                    Journaled::new(Arc::clone(&raw), place, options.durability).map_err(io)?,
                )),
                None => None,
            };
        let raw: Arc<dyn Storage> = match &journal {
            Some(j) => Arc::clone(j) as Arc<dyn Storage>,
            None => raw,
        };
        // A SWMR reader may read the superblock while a live writer rewrites it (its flush
        // writes it in one call, but a read racing that write can see a torn image: a checksum
        // mismatch). It reads again, with the back-off and bound of the metadata cache's
        // retries; the file's length is read again with it (the writer extends the file).
        // Any other open fails at once: nobody writes its superblock under it.
        let attempts = if options.swmr_read {
            CacheConfig::SWMR_READ_ATTEMPTS
        } else {
            1
        };
        let (len, at, sb) = crate::store::with_backoff(
            attempts,
            |e| matches!(e, Error::Format(_)),
            |_| {
                let len = raw.len().map_err(io)?;
                let (at, sb) = crate::swmr::locate_superblock(&*raw, len, &name)?;
                Ok((len, at, sb))
            },
        )?;
        let swmr_writer_live = if options.swmr_read {
            crate::swmr::check_flags_swmr_read(&sb, &name)?
        } else {
            crate::swmr::check_flags(&sb, &name)?;
            false
        };
        if let Some(place) = &reader_place
            && !swmr_writer_live
            && h5chunk_cache::needs_recovery(place).map_err(io)?
        {
            return Err(Error::NeedsRecovery { file: name });
        }
        if options.swmr_write && sb.version < 3 {
            return Err(Error::SwmrVersion {
                file: name,
                version: sb.version,
            });
        }
        // libhdf5 takes the superblock's position as the base address, whatever is stored.
        let sb = sb.moved_to(at)?;
        // A SWMR writer's superblock end of file lags the file while it runs (libhdf5 skips
        // the check for a SWMR reader of such a file too).
        if sb.eof_address > len && !swmr_writer_live {
            return Err(Error::Truncated {
                file: name,
                len,
                eof: sb.eof_address,
            });
        }
        let storage: Arc<dyn Storage> = Arc::new(BaseStorage {
            inner: raw,
            base: at,
        });
        let config = if options.swmr_read {
            CacheConfig::swmr_reader()
        } else {
            CacheConfig::default()
        };
        let cache = MetadataCache::new(Arc::clone(&storage), config)?;
        // `eof_address <= len` and `base_address == at <= len`: no underflow past the check.
        cache
            .allocator()
            .set_eoa(Addr(sb.eof_address.saturating_sub(at)));
        // New objects follow h5py's default bounds, but never an older group style than the
        // file's root uses.
        let bounds = if sb.version >= 2 {
            LibverBounds::new(Libver::V18, Libver::Latest)?
        } else {
            LibverBounds::default()
        };
        let k = BTreeK {
            group_internal: sb.group_internal_k(),
            group_leaf: sb.group_leaf_k(),
            istore: sb.indexed_storage_k(),
        };
        let mut store = Store::new(name, storage, cache, sb.sizes, bounds, options.writable, k);
        store.io = Some(counted);
        if let Some(n) = options.threads {
            store.threads = n.max(1);
        }
        store.swmr_read = options.swmr_read;
        if let Some(ext) = sb.extension_address {
            crate::extension::apply(&mut store, ext)?;
        }
        crate::paged::prefetch_first_page(&store)?;
        if options.writable {
            if options.swmr_write && crate::paged::page_size(&store)?.is_some() {
                return Err(Error::Unsupported("SWMR writing to a paged file"));
            }
            crate::paged::open_for_writing(&store)?;
        }
        let inner = Arc::new(FileInner::new(store, sb, journal, options.durability, lock));
        if options.writable {
            if options.swmr_write {
                inner.store.start_swmr_write(true);
            }
            inner.set_flags(options.swmr_write)?;
            if options.swmr_write {
                inner.swmr_without_journal()?;
            }
        }
        Ok(File::first_open(inner))
    }

    /// How the file manages its space, if its superblock extension says (a File Space Info
    /// message: libhdf5's file space strategy and page size); `None` for libhdf5's default.
    pub fn file_space(&self) -> Option<crate::paged::FileSpace> {
        self.inner
            .store
            .file_space
            .as_ref()
            .map(crate::paged::FileSpace::from)
    }

    /// The requests this file made through its storage since it was opened (by every handle
    /// sharing it), with their bytes; for a file in object storage, also the GET requests
    /// and bytes fetched to serve them.
    pub fn io_stats(&self) -> IoStats {
        self.inner
            .store
            .io
            .as_ref()
            .map_or_else(IoStats::default, |c| c.stats())
    }

    /// The superblock's version.
    pub fn superblock_version(&self) -> u8 {
        self.inner.superblock.lock().version
    }

    /// The library version bounds new objects follow.
    pub fn bounds(&self) -> LibverBounds {
        self.inner.store.bounds
    }

    /// Whether the file was opened for writing.
    pub fn is_writable(&self) -> bool {
        self.inner.store.writable
    }

    /// The metadata cache's counters by entry type (hits, misses, reads, writes, ...): what the
    /// benchmarks report as metadata accesses per lookup.
    pub fn cache_stats(&self) -> h5chunk_cache::CacheStats {
        self.inner.store.cache.stats()
    }

    /// The metadata writes, flush dependencies (chunk proxies included) and evictions recorded
    /// since the last call, for `h5chunk_cache::check_write_order` (empty unless the file was
    /// created with [`FileOptions::trace`]).
    pub fn take_write_trace(&self) -> h5chunk_cache::WriteTrace {
        self.inner.store.cache.take_trace()
    }

    /// Zero the metadata cache's counters.
    pub fn reset_cache_stats(&self) {
        self.inner.store.cache.reset_stats();
    }

    /// Write what is dirty, then drop every clean metadata entry from the cache, so the next
    /// lookups start cold (for measurements).
    pub fn evict_metadata(&self) -> Result<()> {
        self.flush()?;
        self.inner.store.cache.evict_clean();
        Ok(())
    }

    /// Write everything that changed, children first; the file is then complete on disk.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// Write everything that changed and close the file, as h5py's `File.close`: its
    /// consistency flags are cleared as the last write and its lock released, so other
    /// processes may open it. Handles that outlive it (datasets, groups, clones) can still
    /// read; a change through them is refused ([`Error::Closed`]). Dropping the last handle
    /// closes the file too, but can only print an error.
    ///
    /// A file opened more than once in this process ([`File::open`] of a path it has open
    /// shares the open file, as libhdf5 does) is flushed by each `close` and closed by the
    /// last.
    pub fn close(self) -> Result<()> {
        if self.open.close() > 0 {
            return self.inner.flush();
        }
        self.inner.close()
    }

    /// Start single-writer/multiple-reader writing on a file open for writing, as libhdf5's
    /// `H5Fstart_swmr_write` (h5py's `f.swmr_mode = True`): everything is flushed, the
    /// superblock is marked open for SWMR writing, and the file lock is released so SWMR
    /// readers in other processes can open the file. From then on the file takes no new
    /// objects ([`Error::SwmrNewObject`]), freed space is not reused, and every flush leaves
    /// the file consistent for readers at every instant (children before the parents that
    /// point to them). Needs a version 3 superblock ([`Error::SwmrVersion`]); a dataset on a
    /// version 1 B-tree chunk index refuses it ([`Error::SwmrIndex`]).
    pub fn start_swmr_write(&self) -> Result<()> {
        let inner = &self.inner;
        let s = &inner.store;
        s.check_writable()?;
        let version = inner.superblock.lock().version;
        if version < 3 {
            return Err(Error::SwmrVersion {
                file: s.name.clone(),
                version,
            });
        }
        if s.page_size().is_some() {
            // Deferred reuse and EOA steps are not paged (see h5chunk_cache's paged module).
            return Err(Error::Unsupported("SWMR writing to a paged file"));
        }
        let open: Vec<_> = inner.open.lock().values().cloned().collect();
        for o in &open {
            o.check_swmr()?;
        }
        inner.flush()?;
        s.start_swmr_write(true);
        inner.set_flags(true)?;
        inner.swmr_without_journal()?;
        inner.unlock()
    }

    /// Whether the file is in SWMR-write mode (created or opened so, or
    /// [`start_swmr_write`](Self::start_swmr_write) called).
    pub fn is_swmr_write(&self) -> bool {
        self.inner.store.swmr_write()
    }
}

/// The messages of a new group with their flags: the group info message is constant.
pub(crate) fn group_flags(messages: &[Message]) -> Vec<(Message, MessageFlags)> {
    messages
        .iter()
        .map(|m| {
            let flags = if matches!(m, Message::GroupInfo(_)) {
                MessageFlags::CONSTANT
            } else {
                MessageFlags::empty()
            };
            (m.clone(), flags)
        })
        .collect()
}

/// The symbol table entry's scratch pad of a new group: an old-style group caches its B-tree
/// and heap addresses there.
pub(crate) fn symbol_cache(messages: &[Message]) -> Cache {
    match messages.first() {
        Some(Message::SymbolTable(st)) => Cache::SymbolTable {
            btree: Some(st.btree_address),
            heap: Some(st.local_heap_address),
        },
        _ => Cache::Nothing,
    }
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::Io {
        file: path.display().to_string(),
        source: e,
    }
}
