//! The store: what every structure of one open file reaches the bytes through.
//!
//! A [`Store`] holds the storage backend, the metadata cache (with its space allocator), the
//! file's sizes of offsets and lengths, the library version bounds new objects follow, whether
//! the file may be changed, the B-tree K values of the superblock, and the object headers read
//! or changed so far. Index adapters, groups and object headers take a `&Store`; nothing here
//! knows files, groups or datasets, so each of them can be tested over a [`MemStorage`]
//! without a file on disk.
//!
//! [`MemStorage`]: h5chunk_cache::MemStorage

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use h5chunk_cache::{ImageKind, MetadataCache, PageCache, Storage};
use h5chunk_format::message::Message;
use h5chunk_format::object_header::{MessageFlags, RawMessage};
use h5chunk_format::{Addr, Sizes};
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::libver::LibverBounds;
use crate::meta;
use crate::object::{Headers, create_header, raw};
use h5chunk_filters::kept;

/// The B-tree K values a file's superblock sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BTreeK {
    /// Group B-tree internal node K.
    pub group_internal: u16,
    /// Group B-tree leaf node K.
    pub group_leaf: u16,
    /// The indexed-storage K of version 1 B-tree chunk indexes.
    pub istore: u16,
}

impl Default for BTreeK {
    fn default() -> BTreeK {
        BTreeK {
            group_internal: h5chunk_btree1::DEFAULT_GROUP_INTERNAL_K,
            group_leaf: h5chunk_btree1::DEFAULT_GROUP_LEAF_K,
            istore: h5chunk_format::superblock::DEFAULT_INDEXED_STORAGE_K,
        }
    }
}

/// The padding libhdf5 gives chunk 0 of a new object header's messages, by kind of object:
/// room for later messages without a continuation chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HeaderPad {
    /// A group under the earliest format (a version 1 header holding a symbol table message).
    OldGroup,
    /// A group under the 1.8+ format (a version 2 header holding link info and group info).
    NewGroup,
    /// A group under the 1.8+ format that tracks creation order (its message headers carry
    /// creation indexes): the room h5py's `track_order=True` groups get.
    TrackedGroup,
    /// A dataset, under either format.
    Dataset,
    /// The superblock extension: its messages alone, as libhdf5 sizes it.
    Extension,
}

impl HeaderPad {
    /// Bytes of message area chunk 0 is padded to.
    pub fn bytes(self) -> usize {
        match self {
            HeaderPad::OldGroup => 24,
            HeaderPad::NewGroup => 120,
            HeaderPad::TrackedGroup => 180,
            HeaderPad::Dataset => 256,
            HeaderPad::Extension => 0,
        }
    }
}

/// Everything below groups and datasets of one open file.
#[derive(Debug)]
pub(crate) struct Store {
    /// The file's name in errors: its path, or the backend's description.
    pub name: String,
    pub storage: Arc<dyn Storage>,
    pub cache: MetadataCache,
    pub sizes: Sizes,
    pub bounds: LibverBounds,
    pub writable: bool,
    pub k: BTreeK,
    /// The superblock extension's File Space Info message, if the file has one.
    pub file_space: Option<h5chunk_format::message::FileSpaceInfo>,
    /// The counter of the requests made through the storage (see `File::io_stats`).
    pub io: Option<Arc<h5chunk_cache::Counted>>,
    /// Recently read pages of raw data (see [`PageCache`]): the small chunks of random
    /// lookups cost a memory copy once their page has been read.
    pub pages: PageCache,
    headers: Mutex<Headers>,
    /// Fractal heaps being appended to (dense links and attributes), written at each flush.
    pub heaps: h5chunk_dense::OpenHeaps,
    /// Counts raw-data writes and frees (see [`epoch`](Self::epoch)).
    epoch: AtomicU64,
    /// Threads a read or flush may filter chunks on (1: the calling thread alone).
    pub threads: usize,
    /// Opened as a SWMR reader: a chunk that fails to decode is read again (see
    /// [`read_stored`](Self::read_stored)).
    pub swmr_read: bool,
    /// The pool those threads are, made on first use.
    pool: OnceLock<Option<rayon::ThreadPool>>,
    /// Whether the file is in SWMR-write mode (see [`swmr_write`](Self::swmr_write)).
    swmr: AtomicBool,
    /// Whether new objects are refused (see [`check_no_swmr`](Self::check_no_swmr)).
    frozen: AtomicBool,
    /// Closed ([`File::close`](crate::File::close)): no more changes, whatever handles remain.
    closed: AtomicBool,
}

thread_local! {
    /// This thread's buffer for stored chunk bytes a decoder only borrows (see
    /// [`Store::read_stored_slice`]): kept from chunk to chunk, its bytes already written, so
    /// that a chunk's read is not preceded by zeroing the room it lands in.
    static STORED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The most room [`STORED`] keeps after a read: a larger chunk's buffer is freed.
const STORED_KEPT_MAX: usize = 16 << 20;

/// Buffers at least this large are asked of the allocator zeroed (see [`try_zeroed`]).
const ZEROED_BY_ALLOCATOR: usize = 64 << 10;

/// `len` default values (zero for the number types), or `None` when they do not fit in
/// memory: the room is asked for first ([`Vec::try_reserve_exact`]), so a size that does not
/// fit is an error, never an abort. A large buffer is then asked of the allocator zeroed
/// (`vec![0; n]` is `calloc`), whose fresh pages the kernel zeroes as they are first touched
/// (by the read that fills them), with no pass writing zeros over them first; a small one
/// keeps the room it reserved and is filled (one allocation, as a metadata read wants).
pub(crate) fn try_zeroed<T: Clone + Default>(len: usize) -> Option<Vec<T>> {
    let mut v: Vec<T> = Vec::new();
    v.try_reserve_exact(len).ok()?;
    if len.saturating_mul(std::mem::size_of::<T>()) >= ZEROED_BY_ALLOCATOR {
        drop(v);
        let v = vec![T::default(); len];
        advise_huge_pages(
            v.as_ptr().cast(),
            len.saturating_mul(std::mem::size_of::<T>()),
        );
        return Some(v);
    }
    v.resize(len, T::default());
    Some(v)
}

/// Buffers at least this large are advised huge pages (see [`advise_huge_pages`]): numpy's
/// threshold for the same advice on its arrays.
const HUGE_PAGES_FROM: usize = 4 << 20;

/// Advise transparent huge pages for the `len` bytes at `ptr`, a buffer a read is about to fill,
/// when it is at least [`HUGE_PAGES_FROM`] long (Linux `madvise(MADV_HUGEPAGE)`, a hint that
/// changes no byte: where the system's THP mode is `madvise`, as numpy advises its large
/// arrays). Given before the first touch of freshly mapped memory, the kernel then backs it
/// with 2 MiB pages as the read writes it: a 256 MiB read takes ~130 page faults, not ~65,500.
/// Nothing elsewhere (other systems, wasm32).
pub(crate) fn advise_huge_pages(ptr: *const u8, len: usize) {
    #[cfg(target_os = "linux")]
    if len >= HUGE_PAGES_FROM {
        kevy_madvise::advise_hugepage(ptr, len);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len, HUGE_PAGES_FROM);
}

/// Run `attempt` (given its number, from 1) up to `attempts` times while `retry` says its
/// error may pass on another try, sleeping between tries from 1 µs, doubling, capped at 10 ms:
/// how a SWMR reader reads again what it caught mid-write.
pub(crate) fn with_backoff<T, E>(
    attempts: u32,
    retry: impl Fn(&E) -> bool,
    mut attempt: impl FnMut(u32) -> std::result::Result<T, E>,
) -> std::result::Result<T, E> {
    let mut backoff = std::time::Duration::from_micros(1);
    let mut tries = 1u32;
    loop {
        match attempt(tries) {
            Err(e) if tries < attempts && retry(&e) => {
                h5chunk_cache::pause(backoff);
                backoff = backoff
                    .saturating_mul(2)
                    .min(std::time::Duration::from_millis(10));
                tries = tries.saturating_add(1);
            }
            other => return other,
        }
    }
}

/// Bytes of raw-data pages a file keeps.
const RAW_PAGE_CACHE_BYTES: usize = 4 << 20;

impl Store {
    pub fn new(
        name: String,
        storage: Arc<dyn Storage>,
        cache: MetadataCache,
        sizes: Sizes,
        bounds: LibverBounds,
        writable: bool,
        k: BTreeK,
    ) -> Store {
        Store {
            name,
            storage,
            cache,
            sizes,
            bounds,
            writable,
            k,
            file_space: None,
            io: None,
            pages: PageCache::new(RAW_PAGE_CACHE_BYTES),
            headers: Mutex::new(Headers::default()),
            heaps: h5chunk_dense::OpenHeaps::default(),
            epoch: AtomicU64::new(0),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            swmr_read: false,
            pool: OnceLock::new(),
            swmr: AtomicBool::new(false),
            frozen: AtomicBool::new(false),
            closed: AtomicBool::new(false),
        }
    }

    /// Whether the file is in SWMR-write mode: readers in other processes may be reading it
    /// at any instant, so no new object is created, freed space is not reused, the metadata
    /// cache writes only checksummed entries, and a stored chunk is never rewritten in place
    /// with different bytes.
    pub fn swmr_write(&self) -> bool {
        self.swmr.load(Ordering::Acquire)
    }

    /// Enter SWMR-write mode (there is no way back but closing the file, as in libhdf5);
    /// `frozen`: refuse new objects from now on (SWMR writing started on a file readers may
    /// have open), not only a file created for SWMR writing whose objects are still to come.
    pub fn start_swmr_write(&self, frozen: bool) {
        self.cache.set_swmr_write(true);
        // The end of allocation now runs a step ahead of the writes (see the allocator).
        self.storage.expect_growth_ahead();
        self.swmr.store(true, Ordering::Release);
        if frozen {
            self.frozen.store(true, Ordering::Release);
        }
    }

    /// Refuse a new object (`what`: "dataset", "group", "attribute", ...) once SWMR writing
    /// has started on a file readers may have open, as libhdf5 documents: a reader's view of
    /// the file's objects is fixed when it opens it.
    pub fn check_no_swmr(&self, what: &'static str) -> Result<()> {
        if self.frozen.load(Ordering::Acquire) {
            return Err(Error::SwmrNewObject {
                file: self.name.clone(),
                what,
            });
        }
        Ok(())
    }

    /// A counter that moves before any stored byte of raw data can change: before every
    /// [`write`](Self::write) and every [`free`](Self::free) (freed space may be reused). A
    /// reader that found a chunk's address under its dataset's lock and read the chunk without
    /// it knows the bytes it read were the chunk's if the counter did not move in between.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// The filter pool, when more than one thread is allowed (`None`: filter on the caller's
    /// thread). A pool that cannot be started leaves the work on the caller's thread.
    pub fn pool(&self) -> Option<&rayon::ThreadPool> {
        self.pool
            .get_or_init(|| {
                (self.threads > 1)
                    .then(|| {
                        rayon::ThreadPoolBuilder::new()
                            .num_threads(self.threads)
                            .thread_name(|i| format!("h5chunk-filter-{i}"))
                            .build()
                            .ok()
                    })
                    .flatten()
            })
            .as_ref()
    }

    /// An I/O error of this file.
    pub fn io(&self, source: std::io::Error) -> Error {
        Error::Io {
            file: self.name.clone(),
            source,
        }
    }

    /// `len` bytes at `at`. Space allocated but never written (past the file's current end,
    /// within the end of allocation) reads as zeros, as it will once the file is extended.
    /// The length is checked against the end of allocation before any buffer is sized.
    pub fn read(&self, at: Addr, len: u64) -> Result<Vec<u8>> {
        self.check_read(at, len)?;
        let size = usize::try_from(len).map_err(|_| Error::Unsupported("reads over 4 GiB"))?;
        let mut buf = self.zeroed(size)?;
        self.read_checked(at, &mut buf)?;
        Ok(buf)
    }

    /// [`read`](Self::read) of metadata this crate decodes itself (heap blocks, global heap
    /// collections): past the raw-data page cache, since the metadata cache writes such
    /// blocks straight to storage, without the page cache knowing.
    pub fn read_meta(&self, at: Addr, len: u64) -> Result<Vec<u8>> {
        self.check_read(at, len)?;
        let size = usize::try_from(len).map_err(|_| Error::Unsupported("reads over 4 GiB"))?;
        let mut buf = self.zeroed(size)?;
        self.read_past_pages(at, &mut buf)?;
        Ok(buf)
    }

    /// `size` zero bytes, or an out-of-memory I/O error: a length from the file is checked
    /// against the file's end only, which a large file leaves far above what the process may
    /// hold.
    fn zeroed(&self, size: usize) -> Result<Vec<u8>> {
        try_zeroed(size).ok_or_else(|| {
            self.io(std::io::Error::new(
                std::io::ErrorKind::OutOfMemory,
                format!("a read of {size} bytes does not fit in memory"),
            ))
        })
    }

    /// [`read`](Self::read) into `buf` (its length is the read's).
    #[inline]
    pub fn read_into(&self, at: Addr, buf: &mut [u8]) -> Result<()> {
        self.check_read(at, buf.len() as u64)?;
        self.read_checked(at, buf)
    }

    /// The stored bytes of a chunk (`len` at `at`) through `decode`. A SWMR reader reads them
    /// again, with capped back-off, while `decode` fails: libhdf5's SWMR writer rewrites a
    /// filtered chunk in place when its new stored size equals the old one, so a reader can
    /// catch it half-written; the retry finds it whole. A file not under SWMR fails at once.
    pub fn read_stored<T, E>(
        &self,
        at: Addr,
        len: u64,
        mut decode: impl FnMut(Vec<u8>) -> std::result::Result<T, E>,
        err: impl Fn(E) -> Error,
    ) -> Result<T> {
        self.retrying(at, len, || {
            let stored = self.read(at, len).map_err(|e| (e, false))?;
            decode(stored).map_err(|e| (err(e), true))
        })
    }

    /// `attempt` (a read of the `len` bytes at `at` and their decoding) until it succeeds, up
    /// to the attempts a SWMR reader makes (one otherwise), with the pages of those bytes
    /// forgotten before each retry. An attempt's error says whether another is worth it: an
    /// I/O error ends it at once; a decoding error is worth another read.
    fn retrying<T>(
        &self,
        at: Addr,
        len: u64,
        mut attempt: impl FnMut() -> std::result::Result<T, (Error, bool)>,
    ) -> Result<T> {
        let attempts = if self.swmr_read {
            h5chunk_cache::CacheConfig::SWMR_READ_ATTEMPTS
        } else {
            1
        };
        with_backoff(
            attempts,
            |(_, again): &(Error, bool)| *again,
            |tries| {
                if tries > 1 {
                    self.pages.invalidate(at, len);
                }
                attempt()
            },
        )
        .map_err(|(e, _)| e)
    }

    /// [`read_stored`](Self::read_stored) for a `decode` that only borrows the stored bytes:
    /// they are read into this thread's kept buffer ([`STORED`]), which is zeroed only where
    /// it grows, where `read_stored` zeroes a new buffer for every chunk before the read
    /// overwrites it.
    pub fn read_stored_slice<T, E>(
        &self,
        at: Addr,
        len: u64,
        mut decode: impl FnMut(&[u8]) -> std::result::Result<T, E>,
        err: impl Fn(E) -> Error,
    ) -> Result<T> {
        // Not on this thread (its locals torn down, or a read already using the buffer).
        let Some(mut buf) = kept::take(&STORED) else {
            return self.read_stored(at, len, |stored| decode(&stored), err);
        };
        let result = self.retrying(at, len, || {
            let stored = self.read_kept(at, len, &mut buf).map_err(|e| (e, false))?;
            decode(stored).map_err(|e| (err(e), true))
        });
        kept::keep(&STORED, buf, STORED_KEPT_MAX);
        result
    }

    /// [`read`](Self::read) into the first `len` bytes of `buf`, grown (zeroed) if shorter:
    /// those bytes.
    fn read_kept<'b>(&self, at: Addr, len: u64, buf: &'b mut Vec<u8>) -> Result<&'b [u8]> {
        self.check_read(at, len)?;
        let size = usize::try_from(len).map_err(|_| Error::Unsupported("reads over 4 GiB"))?;
        if let Some(more) = size.checked_sub(buf.len()).filter(|&n| n > 0) {
            buf.try_reserve_exact(more).map_err(|_| {
                self.io(std::io::Error::new(
                    std::io::ErrorKind::OutOfMemory,
                    format!("a read of {size} bytes does not fit in memory"),
                ))
            })?;
            buf.resize(size, 0);
        }
        let dst = buf
            .get_mut(..size)
            .ok_or(Error::Internal("kept read buffer"))?;
        self.read_checked(at, dst)?;
        Ok(dst)
    }

    /// [`read_into`](Self::read_into) past the page cache (a read no neighbour will follow).
    pub fn read_uncached(&self, at: Addr, buf: &mut [u8]) -> Result<()> {
        self.check_read(at, buf.len() as u64)?;
        if self.storage.read_at(at, buf).is_ok() {
            return Ok(());
        }
        self.read_checked(at, buf)
    }

    /// Refuse a read of `len` bytes at `at` past both the end of allocation and the file's end.
    fn check_read(&self, at: Addr, len: u64) -> Result<()> {
        let eoa = self.cache.eoa().get();
        let wanted = at.get().checked_add(len);
        if wanted.is_none_or(|w| w > eoa) {
            // Past the end of allocation; the file may still be longer (a file some other
            // writer extended), so only its real length can refuse the read.
            let end = self.storage.len().map_err(|e| self.io(e))?;
            if wanted.is_none_or(|w| w > eoa.max(end)) {
                return Err(Error::Format(h5chunk_format::Error::Truncated {
                    structure: "file",
                    at,
                    needed: len,
                    available: eoa.max(end).saturating_sub(at.get()),
                }));
            }
        }
        Ok(())
    }

    /// Fill `buf` from `at` (checked by `check_read`): through the page cache when it serves
    /// the read; bytes past the file's end read as zeros.
    fn read_checked(&self, at: Addr, buf: &mut [u8]) -> Result<()> {
        // A SWMR reader reads exactly what it needs: its pages would be dropped at every
        // refresh, and a page read near the end of a growing file reads bytes no index points
        // at yet.
        if !self.swmr_read
            && self
                .pages
                .read(&*self.storage, at, buf)
                .map_err(|e| self.io(e))?
        {
            return Ok(());
        }
        self.read_past_pages(at, buf)
    }

    /// [`read_checked`](Self::read_checked) without the page cache.
    fn read_past_pages(&self, at: Addr, buf: &mut [u8]) -> Result<()> {
        // The common case, every chunk read: the bytes are in the file. Only a read that runs
        // past the file's end asks for its length (one system call less per read).
        if self.storage.read_at(at, buf).is_ok() {
            return Ok(());
        }
        let end = self.storage.len().map_err(|e| self.io(e))?;
        let n = (buf.len() as u64).min(end.saturating_sub(at.get()));
        buf.fill(0);
        let head = buf
            .get_mut(..usize::try_from(n).map_err(|_| Error::Internal("read length"))?)
            .ok_or(Error::Internal("read length"))?;
        // Allocated space wholly past the file's end (chunks allocated early, not yet
        // written) reads as zeros, with no read at all.
        if !head.is_empty() {
            self.storage.read_at(at, head).map_err(|e| self.io(e))?;
        }
        Ok(())
    }

    /// Write `bytes` at `at`.
    pub fn write(&self, at: Addr, bytes: &[u8]) -> Result<()> {
        self.check_writable()?;
        self.epoch.fetch_add(1, Ordering::SeqCst);
        let written = self.storage.write_at(at, bytes).map_err(|e| self.io(e));
        // Once written: a reader that loaded one of these pages meanwhile, with what was there
        // before, does not keep it (the page cache's generation), and none is kept from before.
        self.pages.invalidate(at, bytes.len() as u64);
        written
    }

    /// Write `parts` back to back from `at`, as [`write`](Self::write) writes their
    /// concatenation, with no copy where the storage writes vectored (a file).
    pub fn write_gather(&self, at: Addr, parts: &[&[u8]]) -> Result<()> {
        self.check_writable()?;
        self.epoch.fetch_add(1, Ordering::SeqCst);
        let written = self
            .storage
            .write_gather_at(at, parts)
            .map_err(|e| self.io(e));
        let len = parts
            .iter()
            .fold(0u64, |n, p| n.saturating_add(p.len() as u64));
        self.pages.invalidate(at, len);
        written
    }

    /// The page size, when the file is written in pages (paged aggregation).
    pub fn page_size(&self) -> Option<u64> {
        self.cache.allocator().page_size()
    }

    /// Allocate `len` bytes of raw data (chunks, global heap collections, huge heap
    /// objects): in raw-data pages when the file is paged, as libhdf5 counts them.
    pub fn allocate_raw(&self, len: u64) -> Result<Addr> {
        self.check_writable()?;
        Ok(self.cache.allocator().allocate_raw(len)?)
    }

    /// Allocate `len` bytes of file space (metadata, in a paged file).
    pub fn allocate(&self, len: u64) -> Result<Addr> {
        self.check_writable()?;
        Ok(self.cache.allocator().allocate(len)?)
    }

    /// Give back `len` bytes at `at`.
    pub fn free(&self, at: Addr, len: u64) -> Result<()> {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        Ok(self.cache.allocator().free(at, len)?)
    }

    pub fn check_writable(&self) -> Result<()> {
        if !self.writable {
            return Err(Error::ReadOnly {
                file: self.name.clone(),
            });
        }
        if self.is_closed() {
            return Err(Error::Closed {
                file: self.name.clone(),
            });
        }
        Ok(())
    }

    /// Mark the file closed: changes are refused from now on. Whether it was open.
    pub fn mark_closed(&self) -> bool {
        !self.closed.swap(true, Ordering::AcqRel)
    }

    /// Whether the file has been closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The typed messages of the object header at `at`, in stored order.
    pub fn messages(&self, at: Addr) -> Result<Vec<Message>> {
        self.headers.lock().messages(&*self.storage, self.sizes, at)
    }

    /// The messages of the object header at `at` as stored, in stored order.
    pub fn raw_messages(&self, at: Addr) -> Result<Vec<RawMessage>> {
        self.headers
            .lock()
            .raw_messages(&*self.storage, self.sizes, at)
    }

    /// Read the object header at `at` from the file again at its next access (unless it has
    /// changes of this process to write).
    pub fn forget_header(&self, at: Addr) {
        self.headers.lock().forget_clean(at);
    }

    /// Add `m` to the object header at `at`.
    pub fn add_message(&self, at: Addr, m: RawMessage) -> Result<()> {
        self.check_writable()?;
        self.headers
            .lock()
            .add(&*self.storage, &self.cache, self.sizes, at, m)
    }

    /// The version (1 or 2) of the object header at `at`.
    pub fn header_version(&self, at: Addr) -> Result<u8> {
        Ok(self
            .headers
            .lock()
            .get(&*self.storage, self.sizes, at)?
            .version())
    }

    /// Whether the header at `at` tracks, and whether it indexes, its attributes' creation
    /// order (a version 2 header's flags; a version 1 header does neither).
    pub fn header_attr_order(&self, at: Addr) -> Result<(bool, bool)> {
        Ok(
            match self
                .headers
                .lock()
                .get(&*self.storage, self.sizes, at)?
                .prefix()
            {
                h5chunk_format::object_header::Prefix::V2(p) => {
                    (p.creation_order_tracked, p.creation_order_indexed)
                }
                _ => (false, false),
            },
        )
    }

    /// Turn the first message of the header at `at` that `pick` chooses (by type and stored
    /// body) into free space; whether there was one.
    pub fn remove_message(
        &self,
        at: Addr,
        pick: impl Fn(h5chunk_format::message::MessageType, &[u8]) -> bool,
    ) -> Result<bool> {
        self.check_writable()?;
        self.headers
            .lock()
            .remove(&*self.storage, self.sizes, at, pick)
    }

    /// Replace the first message of `m`'s kind in the object header at `at`.
    pub fn replace_message(&self, at: Addr, m: &Message) -> Result<()> {
        self.check_writable()?;
        self.headers
            .lock()
            .replace(&*self.storage, self.sizes, at, m)
    }

    /// Create an object header holding `messages` (chunk 0 padded as `pad` says); its address.
    /// `track_order`: the header tracks and indexes its attributes' creation order (a version 2
    /// header's flags, as libhdf5 sets them for `H5Pset_attr_creation_order`).
    pub fn create_object(
        &self,
        messages: &[(Message, MessageFlags)],
        pad: HeaderPad,
        track_order: bool,
    ) -> Result<Addr> {
        self.check_writable()?;
        self.check_no_swmr("object")?;
        let raws = messages
            .iter()
            .map(|(m, flags)| raw(m, *flags, self.sizes))
            .collect::<Result<Vec<_>>>()?;
        let h = create_header(
            &self.cache,
            self.sizes,
            self.bounds.new_style(),
            raws,
            pad.bytes(),
            track_order,
        )?;
        let at = h.addr();
        self.headers.lock().insert_new(h);
        Ok(at)
    }

    /// Hand every changed object header to the metadata cache, each chunk an image that
    /// depends on the blocks its messages point at (see [`meta`](crate::meta)). What the cache
    /// cannot hold is returned to be written after it: a SWMR writer's version 1 header
    /// chunks, which have no checksum (the cache refuses to write those under SWMR), go after
    /// the cache's blocks as they always did.
    pub fn stage_headers(&self) -> Result<Vec<(Addr, Vec<u8>)>> {
        let swmr = self.swmr_write();
        let mut late = Vec::new();
        self.headers
            .lock()
            .stage(self.sizes, |at, v2, bytes, children| {
                if v2 {
                    self.put_image::<meta::HeaderChunkV2>(at, bytes, &children)
                } else if swmr {
                    late.push((at, bytes));
                    Ok(())
                } else {
                    self.put_image::<meta::HeaderChunkV1>(at, bytes, &children)
                }
            })?;
        Ok(late)
    }

    /// The staged headers have reached the file (the cache has been flushed).
    pub fn headers_written(&self) {
        self.headers.lock().staged_written();
    }

    /// The image of kind `K` the metadata cache holds at `at`, if it holds one (a block this
    /// writer made or changed, perhaps not yet written).
    pub fn cached_image<K: ImageKind>(&self, at: Addr) -> Option<Vec<u8>> {
        self.cache.image::<K>(at)
    }

    /// Put the image `bytes` of a block of kind `K` at `at` in the metadata cache (replacing
    /// what it held there), to be written after every block in `children` (the blocks it
    /// points at); the dependencies it had on other blocks are dropped.
    ///
    /// A SWMR writer's blocks without a checksum (global heap collections, direct blocks of a
    /// heap that does not checksum them) are written at once instead: the cache refuses to
    /// write what a reader cannot tell torn, and each of those is a leaf, pointing at nothing,
    /// so writing it first keeps children before parents.
    pub fn put_image<K: ImageKind>(
        &self,
        at: Addr,
        bytes: Vec<u8>,
        children: &[Addr],
    ) -> Result<()> {
        if self.swmr_write() && !K::CHECKSUMMED {
            return self.write(at, &bytes);
        }
        self.check_writable()?;
        Ok(self.cache.put_image::<K>(at, bytes, children)?)
    }
}

/// Dense storage reaches the file through the store: its reads past the page cache, its
/// blocks through the metadata cache.
impl h5chunk_dense::Space for Store {
    fn cache(&self) -> &MetadataCache {
        &self.cache
    }
    fn sizes(&self) -> Sizes {
        self.sizes
    }
    fn read(&self, at: Addr, len: u64) -> h5chunk_dense::Result<Vec<u8>> {
        self.read_meta(at, len).map_err(dense_err)
    }
    fn room(&self, at: Addr) -> h5chunk_dense::Result<u64> {
        let avail = self.cache.eoa().get().saturating_sub(at.get());
        let in_file = self
            .storage
            .len()
            .map_err(|e| dense_err(self.io(e)))?
            .saturating_sub(at.get());
        Ok(avail.max(in_file))
    }
    fn write(&self, at: Addr, bytes: &[u8]) -> h5chunk_dense::Result<()> {
        Store::write(self, at, bytes).map_err(dense_err)
    }
    fn allocate(&self, len: u64) -> h5chunk_dense::Result<Addr> {
        Store::allocate(self, len).map_err(dense_err)
    }
    fn allocate_raw(&self, len: u64) -> h5chunk_dense::Result<Addr> {
        Store::allocate_raw(self, len).map_err(dense_err)
    }
    fn free(&self, at: Addr, len: u64) -> h5chunk_dense::Result<()> {
        self.cache.remove(at)?;
        Store::free(self, at, len).map_err(dense_err)
    }
    fn swmr_write(&self) -> bool {
        Store::swmr_write(self)
    }
    fn put_block(
        &self,
        kind: h5chunk_dense::BlockKind,
        at: Addr,
        bytes: Vec<u8>,
        children: &[Addr],
    ) -> h5chunk_dense::Result<()> {
        use h5chunk_dense::BlockKind as K;
        match kind {
            K::Header => self.put_image::<h5chunk_dense::HeaderImage>(at, bytes, children),
            K::Indirect => self.put_image::<h5chunk_dense::IndirectImage>(at, bytes, children),
            K::Direct { checksummed: true } => {
                self.put_image::<h5chunk_dense::DirectSummedImage>(at, bytes, children)
            }
            K::Direct { checksummed: false } => {
                self.put_image::<h5chunk_dense::DirectImage>(at, bytes, children)
            }
        }
        .map_err(dense_err)
    }
    fn flush_heap(&self, heap: Addr) -> h5chunk_dense::Result<()> {
        self.heaps.flush_one(self, heap)
    }
    fn held_id_len(&self, heap: Addr) -> Option<usize> {
        self.heaps.id_len(heap)
    }
}

/// An error of the store, carried through dense storage whole.
fn dense_err(e: Error) -> h5chunk_dense::Error {
    h5chunk_dense::Error::Space(Box::new(e))
}
