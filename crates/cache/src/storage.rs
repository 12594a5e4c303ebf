//! Byte storage under the cache: a file, a memory buffer, or (with the `testing` feature) a
//! fault-injecting wrapper.
//!
//! Every method takes `&self`, so readers share one storage without a lock: a file is read and
//! written with positioned I/O (`pread`/`pwrite` on Unix), never by seeking a shared cursor;
//! where the platform has no positioned I/O (WebAssembly), [`FileStorage`] seeks under a lock
//! of its own, so the library builds everywhere and I/O stays behind this seam. One metadata image is always written in one [`Storage::write_at`] call, so a storage
//! that makes single writes atomic never exposes half an image.

use std::fmt;
use std::fs::File;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use h5chunk_format::Addr;
use parking_lot::{Mutex, RwLock};

/// What a remote storage fetched: its requests (the opening one included) and their bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct RemoteStats {
    /// GET (range) requests made.
    pub requests: u64,
    /// HEAD requests made.
    pub heads: u64,
    /// Bytes the requests returned.
    pub bytes: u64,
}

/// Positioned, shareable byte storage.
pub trait Storage: Send + Sync + fmt::Debug {
    /// Fill `buf` from the bytes at `addr`. Reading past the end is an
    /// [`io::ErrorKind::UnexpectedEof`] error.
    fn read_at(&self, addr: Addr, buf: &mut [u8]) -> io::Result<()>;

    /// Write all of `data` at `addr`, growing the storage (zero-filled) if needed.
    fn write_at(&self, addr: Addr, data: &[u8]) -> io::Result<()>;

    /// The current length in bytes.
    fn len(&self) -> io::Result<u64>;

    /// Whether the storage holds no bytes.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Truncate or extend (zero-filled) to `len` bytes.
    fn set_len(&self, len: u64) -> io::Result<()>;

    /// Make every completed write durable.
    fn sync(&self) -> io::Result<()>;

    /// Fill each buffer of `runs` from the bytes at its address: the byte runs of one chunk a
    /// selection needs, read together. The default reads them one after another; a storage
    /// for which each request costs a round trip (an object store) fetches them at once.
    fn read_runs_at(&self, runs: &mut [(Addr, &mut [u8])]) -> io::Result<()> {
        for (addr, buf) in runs.iter_mut() {
            self.read_at(*addr, buf)?;
        }
        Ok(())
    }

    /// Write `parts` back to back from `addr`, as one write of their concatenation (the rows of
    /// chunks gathered from a caller's array, written with no copy where the storage allows).
    /// The default joins them and makes one [`write_at`](Storage::write_at); a file writes them
    /// with vectored writes, straight from where they lie.
    fn write_gather_at(&self, addr: Addr, parts: &[&[u8]]) -> io::Result<()> {
        self.write_at(addr, &parts.concat())
    }

    /// Say that the byte ranges `(address, length)` are about to be read: a storage for which
    /// each request costs a round trip (an object store) fetches them together now. The
    /// default does nothing.
    fn prefetch(&self, ranges: &[(Addr, u64)]) -> io::Result<()> {
        let _ = ranges;
        Ok(())
    }

    /// Say that the byte range `(address, length)` is read as a whole: the first read that
    /// misses a byte of it fetches all of it not cached yet in the same request, rather than
    /// only what it asked for (a paged file's first page, which holds its metadata: what one
    /// read of it misses, the next read would). Nothing is fetched before that read. The
    /// default does nothing.
    fn fetch_whole_on_miss(&self, range: (Addr, u64)) {
        let _ = range;
    }

    /// Say that from now on the length runs ahead of the bytes written (grown with
    /// [`set_len`](Storage::set_len) a step at a time, as a SWMR writer's end of allocation
    /// moves) and the writes that follow land in that hole, mostly in order. A storage may
    /// make them cheaper ([`FileStorage`] fills the hole with zeros ahead of them). The
    /// default does nothing.
    fn expect_growth_ahead(&self) {}

    /// What a storage whose requests cross a network fetched so far (an object store's
    /// requests and bytes); `None` (the default) for local storage.
    fn remote_stats(&self) -> Option<RemoteStats> {
        None
    }
}

impl<S: Storage + ?Sized> Storage for Arc<S> {
    fn read_at(&self, addr: Addr, buf: &mut [u8]) -> io::Result<()> {
        (**self).read_at(addr, buf)
    }
    fn write_at(&self, addr: Addr, data: &[u8]) -> io::Result<()> {
        (**self).write_at(addr, data)
    }
    fn len(&self) -> io::Result<u64> {
        (**self).len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        (**self).set_len(len)
    }
    fn sync(&self) -> io::Result<()> {
        (**self).sync()
    }
    fn read_runs_at(&self, runs: &mut [(Addr, &mut [u8])]) -> io::Result<()> {
        (**self).read_runs_at(runs)
    }
    fn write_gather_at(&self, addr: Addr, parts: &[&[u8]]) -> io::Result<()> {
        (**self).write_gather_at(addr, parts)
    }
    fn prefetch(&self, ranges: &[(Addr, u64)]) -> io::Result<()> {
        (**self).prefetch(ranges)
    }
    fn fetch_whole_on_miss(&self, range: (Addr, u64)) {
        (**self).fetch_whole_on_miss(range)
    }
    fn expect_growth_ahead(&self) {
        (**self).expect_growth_ahead()
    }
    fn remote_stats(&self) -> Option<RemoteStats> {
        (**self).remote_stats()
    }
}

/// A file, accessed with positioned reads and writes only.
#[derive(Debug)]
pub struct FileStorage {
    file: File,
    /// The length, kept here when this process is the file's only writer
    /// ([`FileStorage::sole_writer`]): then no write of another process can change it, and a
    /// flush need not ask the file system (a `statx` each time) what it already knows.
    len: Option<AtomicU64>,
    /// A sole writer's tail (see [`Tail`]).
    tail: Option<Tail>,
    /// Held across a seek and its read or write, where there is no positioned I/O.
    #[cfg(not(unix))]
    cursor: Mutex<()>,
}

/// How far a sole writer has written, to fill the tail that `set_len` grew with zeros ahead
/// of the writes that will land in it.
///
/// A SWMR writer's file runs ahead of its data: the end of allocation moves a megabyte at a
/// time and the file is grown to it with `set_len`, which leaves a hole. Each flush then writes
/// a few pages into the hole, and the kernel takes a page for each write, one at a time. Once
/// told ([`Storage::expect_growth_ahead`]), a write that reaches past everything written so
/// far also writes zeros over the next [`FILL_STEP`] bytes of the hole (never past the file's
/// length, so the length and every byte read stay as they were): the kernel takes those pages
/// in one go, and the next flushes' writes land on pages it has already. (Measured on ext4: a
/// flush's writes cost about 30% less in the kernel.) Not by default: a writer that fills a
/// hole in large writes (early allocation) would only write its bytes twice.
#[derive(Debug)]
struct Tail {
    /// Whether to fill (see [`Storage::expect_growth_ahead`]).
    on: std::sync::atomic::AtomicBool,
    /// Every byte written lies below this; between it and the length is a hole nobody wrote.
    written: AtomicU64,
    /// Held by a write that reaches past `written`, across its write and its fill, so no fill
    /// ever lands over another write.
    lock: Mutex<()>,
}

/// The bytes of the hole a fill writes at most.
const FILL_STEP: usize = 128 << 10;

/// The zeros a fill writes.
static ZEROS: [u8; FILL_STEP] = [0; FILL_STEP];

impl FileStorage {
    /// Wrap an open file (opened for reading, or reading and writing). Its length is asked of
    /// the file system each time: another process may be writing it.
    pub fn new(file: File) -> Self {
        FileStorage {
            file,
            len: None,
            tail: None,
            #[cfg(not(unix))]
            cursor: Mutex::new(()),
        }
    }

    /// Wrap a file this process alone writes (a writer holding the file's lock, or a SWMR
    /// writer, whose readers never write): its length is read once and then followed through
    /// this storage's own writes and `set_len`s.
    pub fn sole_writer(file: File) -> io::Result<Self> {
        let len = file.metadata()?.len();
        Ok(FileStorage {
            file,
            len: Some(AtomicU64::new(len)),
            tail: Some(Tail {
                on: std::sync::atomic::AtomicBool::new(false),
                written: AtomicU64::new(len),
                lock: Mutex::new(()),
            }),
            #[cfg(not(unix))]
            cursor: Mutex::new(()),
        })
    }

    /// `write_at` without the tail's bookkeeping.
    fn write_plain(&self, addr: Addr, data: Bytes<'_>, end: u64) -> io::Result<()> {
        let r = match data {
            Bytes::One(one) => self.pwrite(one, addr.get()),
            Bytes::Parts(parts) => self.pwritev(parts, addr.get()),
        };
        if let Some(len) = &self.len {
            // Even a failed write may have grown the file: ask again next time.
            match &r {
                // An empty write grows nothing.
                Ok(()) if data.is_empty() => {}
                Ok(()) => {
                    len.fetch_max(end, Ordering::Relaxed);
                }
                Err(_) => len.store(self.file.metadata()?.len(), Ordering::Relaxed),
            }
        }
        r
    }

    /// Under the tail's lock, after a write ending at `end` past everything written: fill the
    /// hole after it with zeros, up to [`FILL_STEP`] bytes and never past the length.
    fn fill_tail(&self, tail: &Tail, end: u64) -> io::Result<()> {
        let len = self.len.as_ref().map_or(0, |l| l.load(Ordering::Relaxed));
        let from = end.max(tail.written.load(Ordering::Acquire));
        // To a page boundary, so the next fill starts on one.
        let to = (from.saturating_add(FILL_STEP as u64) & !4095).min(len);
        let n = to.saturating_sub(from) as usize;
        if let Some(zeros) = ZEROS.get(..n).filter(|z| !z.is_empty()) {
            self.write_plain(Addr(from), Bytes::One(zeros), to)?;
        }
        tail.written.fetch_max(to.max(end), Ordering::Release);
        Ok(())
    }

    /// The underlying file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Write `parts` back to back from `offset`: vectored writes (`pwritev`) of at most
    /// [`IOV_MAX`] parts each, straight from where the parts lie.
    #[cfg(unix)]
    fn pwritev(&self, parts: &[&[u8]], mut offset: u64) -> io::Result<()> {
        if small_parts(parts.iter().map(|p| p.len())) {
            return self.pwrite_gathered(parts, offset);
        }
        for group in parts.chunks(IOV_MAX) {
            let mut slices: Vec<io::IoSlice<'_>> = group
                .iter()
                .filter(|p| !p.is_empty())
                .map(|p| io::IoSlice::new(p))
                .collect();
            let mut left: &mut [io::IoSlice<'_>] = &mut slices;
            while !left.is_empty() {
                match rustix::io::pwritev(&self.file, left, offset) {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(n) => {
                        // The kernel wrote `n` bytes of these slices, so `n` is at most theirs.
                        io::IoSlice::advance_slices(&mut left, n);
                        offset = offset.saturating_add(n as u64);
                    }
                    Err(e) if e == rustix::io::Errno::INTR => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(())
    }

    /// Write `parts` back to back from `offset`, one after the other.
    #[cfg(not(unix))]
    fn pwritev(&self, parts: &[&[u8]], mut offset: u64) -> io::Result<()> {
        for p in parts {
            self.pwrite(p, offset)?;
            offset = offset.saturating_add(p.len() as u64);
        }
        Ok(())
    }

    /// Fill the buffers of `runs`, which lie back to back in the file from `offset`, with
    /// vectored reads (`preadv`): one system call for a chunk's rows landing in their places.
    #[cfg(unix)]
    fn preadv(&self, runs: &mut [(Addr, &mut [u8])], mut offset: u64) -> io::Result<()> {
        if small_parts(runs.iter().map(|(_, b)| b.len())) {
            return self.pread_scattered(runs, offset);
        }
        let mut slices: Vec<io::IoSliceMut<'_>> = runs
            .iter_mut()
            .filter(|(_, b)| !b.is_empty())
            .map(|(_, b)| io::IoSliceMut::new(b))
            .collect();
        let mut left: &mut [io::IoSliceMut<'_>] = &mut slices;
        while !left.is_empty() {
            match rustix::io::preadv(&self.file, left, offset) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "read past the end of the file",
                    ));
                }
                Ok(n) => {
                    // The kernel read `n` bytes into these slices, so `n` is at most theirs.
                    io::IoSliceMut::advance_slices(&mut left, n);
                    offset = offset.saturating_add(n as u64);
                }
                Err(e) if e == rustix::io::Errno::INTR => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Fill the buffers of `runs`, which lie back to back in the file from `offset`, one
    /// after the other.
    #[cfg(not(unix))]
    fn preadv(&self, runs: &mut [(Addr, &mut [u8])], mut offset: u64) -> io::Result<()> {
        for (_, b) in runs.iter_mut() {
            self.pread(b, offset)?;
            offset = offset.saturating_add(b.len() as u64);
        }
        Ok(())
    }

    /// `parts` (small ones: see [`small_parts`]) copied into this thread's bounce buffer,
    /// [`BOUNCE_LEN`] bytes at a time, each batch written with one `pwrite`: a buffer that
    /// stays in the processor's cache, as libhdf5 gathers a chunk before writing it. A part
    /// as large as the buffer goes out on its own.
    #[cfg(unix)]
    fn pwrite_gathered(&self, parts: &[&[u8]], mut offset: u64) -> io::Result<()> {
        with_bounce(|buf| {
            let mut used = 0usize;
            for p in parts {
                if used.saturating_add(p.len()) > buf.len() && used > 0 {
                    self.pwrite(buf.get(..used).unwrap_or_default(), offset)?;
                    offset = offset.saturating_add(used as u64);
                    used = 0;
                }
                match buf.get_mut(used..used.saturating_add(p.len())) {
                    Some(to) => {
                        to.copy_from_slice(p);
                        used = used.saturating_add(p.len());
                    }
                    None => {
                        self.pwrite(p, offset)?;
                        offset = offset.saturating_add(p.len() as u64);
                    }
                }
            }
            if used > 0 {
                self.pwrite(buf.get(..used).unwrap_or_default(), offset)?;
            }
            Ok(())
        })
    }

    /// Fill the buffers of `runs` (small ones, back to back in the file from `offset`) from
    /// one `pread` into this thread's bounce buffer per [`BOUNCE_LEN`] bytes, then copies:
    /// the kernel's copy lands in a buffer that stays cached, and the scatter is a `memcpy`
    /// a row, as libhdf5 reads a chunk that skips its cache. A run as large as the buffer is
    /// read in place.
    #[cfg(unix)]
    fn pread_scattered(&self, runs: &mut [(Addr, &mut [u8])], mut offset: u64) -> io::Result<()> {
        with_bounce(|buf| {
            let mut rest = runs;
            while !rest.is_empty() {
                // The runs that fill the buffer (at least one).
                let mut bytes = 0usize;
                let mut n = 0usize;
                for (_, b) in rest.iter() {
                    if n > 0 && bytes.saturating_add(b.len()) > buf.len() {
                        break;
                    }
                    bytes = bytes.saturating_add(b.len());
                    n = n.saturating_add(1);
                }
                let Some((group, tail)) = std::mem::take(&mut rest).split_at_mut_checked(n) else {
                    return Ok(());
                };
                rest = tail;
                match (group, buf.get_mut(..bytes)) {
                    ([(_, b)], _) => self.pread(b, offset)?,
                    (group, Some(from)) => {
                        self.pread(from, offset)?;
                        let mut at = 0usize;
                        for (_, b) in group.iter_mut() {
                            let end = at.saturating_add(b.len());
                            if let Some(src) = from.get(at..end) {
                                b.copy_from_slice(src);
                            }
                            at = end;
                        }
                    }
                    // More than the buffer in one group happens only for a single run.
                    (group, None) => {
                        let mut at = offset;
                        for (_, b) in group.iter_mut() {
                            self.pread(b, at)?;
                            at = at.saturating_add(b.len() as u64);
                        }
                    }
                }
                offset = offset.saturating_add(bytes as u64);
            }
            Ok(())
        })
    }

    /// Fill `buf` from the file at `offset` (`pread`).
    #[cfg(unix)]
    fn pread(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(&self.file, buf, offset)
    }

    /// Write all of `data` at `offset` (`pwrite`).
    #[cfg(unix)]
    fn pwrite(&self, data: &[u8], offset: u64) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(&self.file, data, offset)
    }

    /// Fill `buf` from the file at `offset`: a seek and a read, under the cursor's lock.
    #[cfg(not(unix))]
    fn pread(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        use std::io::{Read, Seek, SeekFrom};
        let _cursor = self.cursor.lock();
        let mut f = &self.file;
        f.seek(SeekFrom::Start(offset))?;
        f.read_exact(buf)
    }

    /// Write all of `data` at `offset`: a seek and a write, under the cursor's lock.
    #[cfg(not(unix))]
    fn pwrite(&self, data: &[u8], offset: u64) -> io::Result<()> {
        use std::io::{Seek, SeekFrom, Write};
        let _cursor = self.cursor.lock();
        let mut f = &self.file;
        f.seek(SeekFrom::Start(offset))?;
        f.write_all(data)
    }
}

/// Most buffers one vectored read or write takes (Linux's `IOV_MAX`).
const IOV_MAX: usize = 1024;

/// Bytes of the per-thread buffer small vectored reads and writes go through: about a
/// chunk's worth, small enough to stay in the processor's cache.
#[cfg(unix)]
const BOUNCE_LEN: usize = 1 << 20;

/// Parts this small on average go through the bounce buffer. Measured here (8192² f32 in
/// 512² chunks, 2 KiB rows): `pwritev` of 1,024 rows of 2 KiB moved 2.6 GB/s and `preadv` into
/// fresh memory 1.6 GB/s, where one `pwrite`/`pread` of 1 MiB from a cached buffer moved 7 and
/// 11 GB/s: the kernel's per-segment copy costs more than a `memcpy` a row.
#[cfg(unix)]
const SMALL_PART: usize = 64 << 10;

/// Whether parts of these lengths are small enough on average for the bounce buffer.
#[cfg(unix)]
fn small_parts(lens: impl Iterator<Item = usize>) -> bool {
    let (n, total) = lens.fold((0usize, 0usize), |(n, t), l| {
        (n.saturating_add(1), t.saturating_add(l))
    });
    n > 1 && total.checked_div(n).is_some_and(|avg| avg < SMALL_PART)
}

#[cfg(unix)]
thread_local! {
    static BOUNCE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Run `f` with this thread's bounce buffer ([`BOUNCE_LEN`] bytes; a fresh one if the
/// thread's is in use).
#[cfg(unix)]
fn with_bounce<R>(f: impl FnOnce(&mut [u8]) -> R) -> R {
    BOUNCE.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            if buf.len() != BOUNCE_LEN {
                *buf = vec![0u8; BOUNCE_LEN];
            }
            f(&mut buf)
        }
        Err(_) => f(&mut vec![0u8; BOUNCE_LEN]),
    })
}

/// What a [`FileStorage`] write writes: one buffer, or parts back to back.
#[derive(Clone, Copy)]
enum Bytes<'a> {
    One(&'a [u8]),
    Parts(&'a [&'a [u8]]),
}

impl Bytes<'_> {
    fn len(&self) -> u64 {
        match self {
            Bytes::One(b) => b.len() as u64,
            Bytes::Parts(p) => p.iter().fold(0u64, |n, b| n.saturating_add(b.len() as u64)),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl FileStorage {
    /// [`Storage::write_at`] of one buffer or of parts back to back: the length followed and
    /// the tail filled (see [`Tail`]) alike.
    fn write_bytes(&self, addr: Addr, data: Bytes<'_>) -> io::Result<()> {
        let end = addr
            .get()
            .checked_add(data.len())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "write past 2^64"))?;
        match &self.tail {
            // A write past everything written: it and the fill after it under the lock, so a
            // concurrent write (which, landing below `written`, takes no lock) never lands
            // in a range a fill may still be writing.
            Some(tail)
                if tail.on.load(Ordering::Relaxed)
                    && end > tail.written.load(Ordering::Acquire)
                    && !data.is_empty() =>
            {
                let _g = tail.lock.lock();
                self.write_plain(addr, data, end)?;
                self.fill_tail(tail, end)
            }
            Some(tail) => {
                self.write_plain(addr, data, end)?;
                if !data.is_empty() {
                    tail.written.fetch_max(end, Ordering::Release);
                }
                Ok(())
            }
            None => self.write_plain(addr, data, end),
        }
    }
}

impl Storage for FileStorage {
    fn read_at(&self, addr: Addr, buf: &mut [u8]) -> io::Result<()> {
        self.pread(buf, addr.get())
    }
    fn write_at(&self, addr: Addr, data: &[u8]) -> io::Result<()> {
        self.write_bytes(addr, Bytes::One(data))
    }
    fn write_gather_at(&self, addr: Addr, parts: &[&[u8]]) -> io::Result<()> {
        self.write_bytes(addr, Bytes::Parts(parts))
    }
    /// Runs that lie back to back in the file are read together, each group of at most
    /// 1,024 (Linux's `IOV_MAX`) with one vectored read (`preadv`) where the platform has one.
    fn read_runs_at(&self, runs: &mut [(Addr, &mut [u8])]) -> io::Result<()> {
        let mut rest = runs;
        loop {
            let Some(((first, buf), _)) = rest.split_first() else {
                return Ok(());
            };
            let at = first.get();
            // The runs that follow the first one in the file, with no gap.
            let mut end = at.saturating_add(buf.len() as u64);
            let mut n = 1usize;
            for (a, b) in rest.iter().skip(1).take(IOV_MAX.saturating_sub(1)) {
                if a.get() != end {
                    break;
                }
                end = end.saturating_add(b.len() as u64);
                n = n.saturating_add(1);
            }
            let Some((group, tail)) = std::mem::take(&mut rest).split_at_mut_checked(n) else {
                return Ok(());
            };
            rest = tail;
            match group {
                [(_, b)] => self.pread(b, at)?,
                _ => self.preadv(group, at)?,
            }
        }
    }
    fn len(&self) -> io::Result<u64> {
        match &self.len {
            Some(len) => Ok(len.load(Ordering::Relaxed)),
            None => Ok(self.file.metadata()?.len()),
        }
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        let r = self.file.set_len(len);
        if let Some(t) = &self.tail {
            // A cut takes the written bytes past it away; a growth adds a hole.
            t.written.fetch_min(len, Ordering::Release);
        }
        if let Some(l) = &self.len {
            match &r {
                Ok(()) => l.store(len, Ordering::Relaxed),
                Err(_) => l.store(self.file.metadata()?.len(), Ordering::Relaxed),
            }
        }
        r
    }
    fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }
    fn expect_growth_ahead(&self) {
        if let Some(t) = &self.tail {
            t.on.store(true, Ordering::Relaxed);
        }
    }
}

/// An in-memory storage. Clones share the same bytes, so a test can keep a handle to what a
/// cache wrote and reopen it with a fresh cache.
#[derive(Clone, Debug, Default)]
pub struct MemStorage {
    bytes: Arc<RwLock<Vec<u8>>>,
}

impl MemStorage {
    /// An empty storage.
    pub fn new() -> Self {
        MemStorage::default()
    }

    /// A storage holding `bytes`.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        MemStorage {
            bytes: Arc::new(RwLock::new(bytes)),
        }
    }

    /// A copy of the current bytes.
    pub fn to_vec(&self) -> Vec<u8> {
        self.bytes.read().clone()
    }
}

/// `addr .. addr + len` as a `usize` range, or an error if it does not fit in memory.
fn mem_range(addr: Addr, len: usize) -> io::Result<(usize, usize)> {
    let start = usize::try_from(addr.get())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "address beyond memory"))?;
    let end = start
        .checked_add(len)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "address overflow"))?;
    Ok((start, end))
}

impl Storage for MemStorage {
    fn read_at(&self, addr: Addr, buf: &mut [u8]) -> io::Result<()> {
        let (start, end) = mem_range(addr, buf.len())?;
        let bytes = self.bytes.read();
        let src = bytes.get(start..end).ok_or_else(|| {
            io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end of storage")
        })?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn write_at(&self, addr: Addr, data: &[u8]) -> io::Result<()> {
        let (start, end) = mem_range(addr, data.len())?;
        let mut bytes = self.bytes.write();
        if bytes.len() < end {
            bytes.resize(end, 0);
        }
        if let Some(dst) = bytes.get_mut(start..end) {
            dst.copy_from_slice(data);
        }
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.bytes.read().len() as u64)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let len = usize::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "length beyond memory"))?;
        self.bytes.write().resize(len, 0);
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exercise(s: &dyn Storage) {
        assert!(s.is_empty().unwrap());
        s.write_at(Addr(4), b"abcd").unwrap();
        assert_eq!(s.len().unwrap(), 8);
        let mut buf = [0xffu8; 8];
        s.read_at(Addr(0), &mut buf).unwrap();
        assert_eq!(&buf, b"\0\0\0\0abcd");
        let err = s.read_at(Addr(6), &mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        s.set_len(5).unwrap();
        assert_eq!(s.len().unwrap(), 5);
        s.set_len(7).unwrap();
        let mut tail = [0xffu8; 3];
        s.read_at(Addr(4), &mut tail).unwrap();
        assert_eq!(&tail, b"a\0\0");
        s.sync().unwrap();
    }

    #[test]
    fn mem_storage_reads_writes_and_resizes() {
        exercise(&MemStorage::new());
    }

    /// An empty file of this test's own, and its path (to remove).
    fn scratch(tag: &str) -> (File, std::path::PathBuf) {
        let name = format!("h5chunk-cache-{tag}-{}.bin", std::process::id());
        let path = std::env::temp_dir().join(name);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        (file, path)
    }

    #[test]
    fn file_storage_reads_writes_and_resizes() {
        let (file, path) = scratch("plain");
        exercise(&FileStorage::new(file));
        std::fs::remove_file(&path).unwrap();
    }

    /// A sole writer fills the hole that `set_len` grew ahead of its writes, never past the
    /// length and never over a byte written (by this write or any before it).
    #[test]
    fn a_sole_writer_fills_the_hole_ahead_without_changing_a_byte_read() {
        let (file, path) = scratch("tail");
        let s = FileStorage::sole_writer(file).unwrap();
        s.write_at(Addr(0), &[1; 100]).unwrap();
        s.set_len(200).unwrap();
        s.write_at(Addr(150), &[1; 50]).unwrap();
        let filled = |s: &FileStorage| s.tail.as_ref().unwrap().written.load(Ordering::Relaxed);
        assert_eq!(
            filled(&s),
            200,
            "no fill until asked, but the writes are followed"
        );
        s.set_len(100).unwrap();
        s.expect_growth_ahead();
        // A hole of 1 MiB, as a SWMR writer's end of allocation leaves one.
        s.set_len(1 << 20).unwrap();
        assert_eq!(filled(&s), 100, "growth writes nothing");
        // Blocks allocated out of order: the later one is written first.
        s.write_at(Addr(5000), &[3; 50]).unwrap();
        assert_eq!(
            filled(&s),
            (5050 + FILL_STEP as u64) & !4095,
            "zeros ahead, to a page"
        );
        s.write_at(Addr(200), &[2; 50]).unwrap();
        // Up to the length and no further.
        s.write_at(Addr((1 << 20) - 4096), &[4; 10]).unwrap();
        assert_eq!(filled(&s), 1 << 20);
        assert_eq!(s.len().unwrap(), 1 << 20);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 1 << 20);
        let mut all = vec![0xffu8; 1 << 20];
        s.read_at(Addr(0), &mut all).unwrap();
        let want = |i: usize| match i {
            0..100 => 1,
            200..250 => 2,
            5000..5050 => 3,
            x if ((1 << 20) - 4096..(1 << 20) - 4086).contains(&x) => 4,
            _ => 0,
        };
        let wrong = all.iter().enumerate().find(|&(i, &b)| b != want(i));
        assert_eq!(wrong, None, "(offset, byte) read against the bytes written");
        // A cut takes the written bytes past it away: a write after regrowth fills again.
        s.set_len(300).unwrap();
        assert_eq!(filled(&s), 300);
        s.set_len(1 << 20).unwrap();
        s.write_at(Addr(300), &[5; 10]).unwrap();
        assert!(filled(&s) > 310);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_sole_writers_file_storage_follows_its_length() {
        let (file, path) = scratch("sole");
        let s = FileStorage::sole_writer(file).unwrap();
        exercise(&s);
        // Writes inside the file, an empty write past its end and a write past it: the length
        // kept is the file system's.
        s.write_at(Addr(2), b"z").unwrap();
        s.write_at(Addr(100), b"").unwrap();
        assert_eq!(s.len().unwrap(), 7);
        s.write_at(Addr(20), b"end").unwrap();
        assert_eq!(s.len().unwrap(), 23);
        assert_eq!(s.file().metadata().unwrap().len(), 23);
        s.set_len(3).unwrap();
        assert_eq!(s.len().unwrap(), 3);
        assert_eq!(s.file().metadata().unwrap().len(), 3);
        std::fs::remove_file(&path).unwrap();
    }

    /// Runs back to back in the file (read with one vectored read, more than `IOV_MAX` of
    /// them in several) and runs apart land where they should; parts gathered from several
    /// buffers land back to back; a run past the end is an `UnexpectedEof` error. The memory
    /// storage (the trait's defaults) agrees byte for byte.
    #[test]
    fn vectored_runs_and_gathered_parts_land_in_place() {
        let (file, path) = scratch("vectored");
        let f = FileStorage::sole_writer(file).unwrap();
        let m = MemStorage::new();
        let whole: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
        // 3,000 parts of 3 bytes (three vectored writes), then the rest in one part.
        let mut parts: Vec<&[u8]> = whole[..9000].chunks(3).collect();
        parts.push(&whole[9000..]);
        for s in [&f as &dyn Storage, &m] {
            s.write_gather_at(Addr(100), &parts).unwrap();
            assert_eq!(s.len().unwrap(), 40_100);
            let mut back = vec![0u8; 40_000];
            s.read_at(Addr(100), &mut back).unwrap();
            assert!(back == whole, "gathered parts read back");
            // 2,000 runs of 4 bytes back to back, then two apart.
            let mut bufs = vec![[0u8; 4]; 2002];
            let mut runs: Vec<(Addr, &mut [u8])> = bufs
                .iter_mut()
                .enumerate()
                .map(|(i, b)| {
                    let at = if i < 2000 {
                        100 + 4 * i as u64
                    } else {
                        30_000 + 10 * (i as u64 - 2000)
                    };
                    (Addr(at), &mut b[..])
                })
                .collect();
            s.read_runs_at(&mut runs).unwrap();
            for (i, b) in bufs.iter().enumerate() {
                let at = if i < 2000 {
                    4 * i
                } else {
                    29_900 + 10 * (i - 2000)
                };
                assert_eq!(b[..], whole[at..at + 4], "run {i}");
            }
            let (mut a, mut b) = ([0u8; 8], [0u8; 8]);
            let mut past = [(Addr(40_090), &mut a[..]), (Addr(40_098), &mut b[..])];
            let err = s.read_runs_at(&mut past).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
            // Large parts (the vectored calls, not the bounce buffer) and small ones past the
            // bounce buffer's length (several batches) land in place too.
            let big: Vec<u8> = (0..2_500_000u32).map(|i| (i % 253) as u8).collect();
            for size in [100_000, 1000] {
                let parts: Vec<&[u8]> = big.chunks(size).collect();
                s.write_gather_at(Addr(50_000), &parts).unwrap();
                let mut back = vec![0u8; big.len()];
                let mut runs: Vec<(Addr, &mut [u8])> = back
                    .chunks_mut(size)
                    .enumerate()
                    .map(|(i, b)| (Addr(50_000 + (i * size) as u64), b))
                    .collect();
                s.read_runs_at(&mut runs).unwrap();
                assert!(back == big, "parts of {size} bytes");
            }
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn mem_storage_clones_share_bytes() {
        let a = MemStorage::new();
        let b = a.clone();
        a.write_at(Addr(0), b"xy").unwrap();
        assert_eq!(b.to_vec(), b"xy");
    }
}
