//! Read-only [`Storage`] backends of the browser, both synchronous and so usable only in a
//! Web Worker:
//! - [`BlobStorage`]: a `Blob` (a `File` from `<input type=file>` or a drop), each read one
//!   `FileReaderSync.readAsArrayBuffer` of a `Blob.slice`: nothing is loaded whole, so a file
//!   of any size opens (no 2 GiB limit; offsets are exact up to 2^53).
//! - [`UrlStorage`]: a URL read by synchronous `XMLHttpRequest`s with a `Range` header, through
//!   a cache of [`BLOCK`]-byte blocks (the server must answer ranges with 206); or, deferred
//!   ([`UrlStorage::deferred`]), by no request of its own: a read it cannot answer from what
//!   was supplied notes the bytes it needs and fails with `WouldBlock`, and the caller fetches
//!   them asynchronously (`fetch`, on a page too), supplies them and runs the operation again.
//!
//! `Storage` must be `Send + Sync` and JavaScript objects are neither: the `Blob`s live in a
//! thread-local table (a worker is one thread) and a storage holds its key.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use h5chunk::storage::{Addr, Storage};
use js_sys::{ArrayBuffer, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Blob, FileReaderSync, XmlHttpRequest, XmlHttpRequestResponseType};

thread_local! {
    /// The open Blobs, by key.
    static BLOBS: RefCell<HashMap<u64, Blob>> = RefCell::new(HashMap::new());
}

/// The next key of [`BLOBS`].
static NEXT_BLOB: AtomicU64 = AtomicU64::new(1);

fn js_error(what: &str, e: &JsValue) -> io::Error {
    let text = e
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"));
    io::Error::other(format!("{what}: {text}"))
}

fn read_only() -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        "the browser's storages are read-only",
    )
}

/// The end of `len` bytes at `start`, if it is at most `size`.
fn end_within(start: u64, len: usize, size: u64) -> io::Result<u64> {
    start
        .checked_add(len as u64)
        .filter(|&e| e <= size)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("{len} bytes at {start} pass the end ({size})"),
            )
        })
}

/// Copy an `ArrayBuffer` of exactly `buf.len()` bytes into `buf`.
fn copy_exact(what: &str, got: &ArrayBuffer, buf: &mut [u8]) -> io::Result<()> {
    let view = Uint8Array::new(got);
    if u64::from(view.length()) != buf.len() as u64 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "{what}: asked for {} bytes, got {}",
                buf.len(),
                view.length()
            ),
        ));
    }
    view.copy_to(buf);
    Ok(())
}

/// A `Blob` read by slices with `FileReaderSync` (Web Workers only).
#[derive(Debug)]
pub struct BlobStorage {
    key: u64,
    size: u64,
    reads: AtomicU64,
}

impl BlobStorage {
    /// A storage over `blob`, which stays in this thread's table until the storage is dropped.
    pub fn new(blob: Blob) -> io::Result<BlobStorage> {
        // `Blob.size` is a double; sizes are integers below 2^53.
        let size = blob.size();
        if !(0.0..9.007_199_254_740_992e15).contains(&size) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a Blob of {size} bytes"),
            ));
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let size = size as u64;
        // Checked here, so that a worker without FileReaderSync fails at open.
        FileReaderSync::new()
            .map_err(|e| js_error("FileReaderSync (a Blob is read in a Web Worker only)", &e))?;
        let key = NEXT_BLOB.fetch_add(1, Ordering::Relaxed);
        BLOBS.with(|b| b.borrow_mut().insert(key, blob));
        Ok(BlobStorage {
            key,
            size,
            reads: AtomicU64::new(0),
        })
    }

    /// Slices read so far.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }
}

impl Drop for BlobStorage {
    fn drop(&mut self) {
        BLOBS.with(|b| b.borrow_mut().remove(&self.key));
    }
}

impl Storage for BlobStorage {
    fn read_at(&self, addr: Addr, buf: &mut [u8]) -> io::Result<()> {
        let start = addr.0;
        let end = end_within(start, buf.len(), self.size)?;
        if buf.is_empty() {
            return Ok(());
        }
        let blob = BLOBS
            .with(|b| b.borrow().get(&self.key).cloned())
            .ok_or_else(|| io::Error::other("the Blob was released"))?;
        #[allow(clippy::cast_precision_loss)]
        let slice = blob
            .slice_with_f64_and_f64(start as f64, end as f64)
            .map_err(|e| js_error("Blob.slice", &e))?;
        let reader = FileReaderSync::new().map_err(|e| js_error("FileReaderSync", &e))?;
        let got = reader
            .read_as_array_buffer(&slice)
            .map_err(|e| js_error("FileReaderSync.readAsArrayBuffer", &e))?;
        self.reads.fetch_add(1, Ordering::Relaxed);
        copy_exact("Blob", &got, buf)
    }

    fn write_at(&self, _addr: Addr, _data: &[u8]) -> io::Result<()> {
        Err(read_only())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.size)
    }

    fn set_len(&self, _len: u64) -> io::Result<()> {
        Err(read_only())
    }

    fn sync(&self) -> io::Result<()> {
        Ok(())
    }
}

/// The unit of [`UrlStorage`]'s cache and of its requests: 4 KiB, as the CLI's remote reads.
/// HDF5 metadata is small pieces (object headers, B-tree nodes, heaps) that libhdf5 packs
/// into 2 KiB blocks next to the data written with them, so a file written over time has its
/// metadata spread through it: a bigger unit fetches mostly raw data with each piece. Listing
/// the 132 objects of `cargo xtask bench --browser`'s 4 GiB file took 34 requests and 2.1 MiB
/// with 64 KiB blocks, 39 requests and 180 KiB with these.
pub const BLOCK: u64 = 4 << 10;
/// The cache's budget.
const CACHE_BYTES: usize = 64 << 20;
/// Reads of at least this many bytes bypass the cache.
const DIRECT: u64 = 256 << 10;
/// A prefetch joins runs of missing blocks fewer than this many blocks (256 KiB) apart into
/// one request.
const GAP_BLOCKS: u64 = (256 << 10) / BLOCK;

#[derive(Debug, Default)]
struct Blocks {
    /// Block index -> its bytes (the last block may be short).
    have: BTreeMap<u64, Vec<u8>>,
    /// Insertion order, for eviction.
    order: VecDeque<u64>,
    bytes: usize,
}

impl Blocks {
    fn insert(&mut self, index: u64, data: Vec<u8>) {
        let n = data.len();
        if self.have.insert(index, data).is_none() {
            self.order.push_back(index);
            self.bytes = self.bytes.saturating_add(n);
        }
        while self.bytes > CACHE_BYTES {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(d) = self.have.remove(&old) {
                self.bytes = self.bytes.saturating_sub(d.len());
            }
        }
    }
}

/// What a deferred [`UrlStorage`] was asked for and could not answer.
#[derive(Debug, Default)]
struct Deferred {
    /// Ranges `(start, end)` to fetch: runs of whole blocks, or a large read's exact bytes.
    pending: Vec<(u64, u64)>,
    /// Large reads' ranges handed out by `take_pending`, to be supplied whole.
    direct_asked: Vec<(u64, u64)>,
    /// Large reads' bytes, by `(start, end)`, kept until the operation settles (an operation
    /// run again reads them again).
    direct: BTreeMap<(u64, u64), Vec<u8>>,
}

/// A URL read by synchronous range requests (Web Workers only: a page's synchronous
/// requests cannot ask for an `ArrayBuffer`), or deferred (see the module's documentation).
/// Reads go through a cache of [`BLOCK`]-byte blocks; a read missing several adjacent blocks
/// asks for them in one request.
#[derive(Debug)]
pub struct UrlStorage {
    url: String,
    size: AtomicU64,
    blocks: Mutex<Blocks>,
    requests: AtomicU64,
    bytes_fetched: AtomicU64,
    /// Some: no requests of its own (bytes come through [`UrlStorage::supply`]).
    deferred: Option<Mutex<Deferred>>,
}

/// The error of a deferred read the supplied bytes do not cover.
fn would_block(url: &str, start: u64, end: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::WouldBlock,
        format!("{url}: bytes {start}..{end} are not fetched yet"),
    )
}

impl UrlStorage {
    /// Open `url`: one request for its first block tells its size (`Content-Range`).
    pub fn open(url: &str) -> io::Result<UrlStorage> {
        let s = UrlStorage {
            url: url.to_owned(),
            size: AtomicU64::new(0),
            blocks: Mutex::new(Blocks::default()),
            requests: AtomicU64::new(0),
            bytes_fetched: AtomicU64::new(0),
            deferred: None,
        };
        s.refresh()?;
        Ok(s)
    }

    /// `url`, read by no request of its own: its first block is pending (supplying it tells
    /// the size), and every read of bytes not supplied yet notes them and fails with
    /// `WouldBlock`.
    pub fn deferred(url: &str) -> UrlStorage {
        UrlStorage {
            url: url.to_owned(),
            size: AtomicU64::new(0),
            blocks: Mutex::new(Blocks::default()),
            requests: AtomicU64::new(0),
            bytes_fetched: AtomicU64::new(0),
            deferred: Some(Mutex::new(Deferred {
                pending: vec![(0, BLOCK)],
                ..Deferred::default()
            })),
        }
    }

    /// Whether this storage is deferred.
    pub fn is_deferred(&self) -> bool {
        self.deferred.is_some()
    }

    fn deferred_lock(&self) -> io::Result<Option<std::sync::MutexGuard<'_, Deferred>>> {
        self.deferred
            .as_ref()
            .map(|d| {
                d.lock()
                    .map_err(|_| io::Error::other("the pending list was poisoned"))
            })
            .transpose()
    }

    /// Note `(start, end)` as needed (once).
    fn defer(&self, d: &mut Deferred, start: u64, end: u64) {
        if !d.pending.contains(&(start, end)) {
            d.pending.push((start, end));
        }
    }

    /// How many ranges a deferred storage waits for.
    pub fn pending_count(&self) -> usize {
        self.deferred_lock()
            .ok()
            .flatten()
            .map_or(0, |d| d.pending.len())
    }

    /// The ranges `(start, end)` a deferred storage waits for, handed out once each (their
    /// bytes come back through `supply`).
    pub fn take_pending(&self) -> io::Result<Vec<(u64, u64)>> {
        let Some(mut d) = self.deferred_lock()? else {
            return Ok(Vec::new());
        };
        let taken = std::mem::take(&mut d.pending);
        for &(a, b) in &taken {
            if b.saturating_sub(a) >= DIRECT && !d.direct_asked.contains(&(a, b)) {
                d.direct_asked.push((a, b));
            }
        }
        Ok(taken)
    }

    /// The bytes of a range `take_pending` gave (the server may clip its end to the size),
    /// and the resource's size as the answer said it.
    pub fn supply(&self, start: u64, bytes: &[u8], size: u64) -> io::Result<()> {
        let Some(mut d) = self.deferred_lock()? else {
            return Err(io::Error::other(
                "supply: this URL is read by its own requests",
            ));
        };
        self.size.store(size, Ordering::Relaxed);
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.bytes_fetched
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        let end = start.saturating_add(bytes.len() as u64);
        let asked = d.direct_asked.iter().position(|&r| r == (start, end));
        // A large read's bytes (or, not at a block's start, one whose ask an earlier
        // `settle` forgot) are kept whole for the reads of that range.
        if asked.is_some() || !start.is_multiple_of(BLOCK) {
            if let Some(i) = asked {
                d.direct_asked.swap_remove(i);
            }
            d.direct.insert((start, end), bytes.to_vec());
            return Ok(());
        }
        drop(d);
        let mut blocks = self.lock()?;
        let first = start / BLOCK;
        for (i, piece) in bytes.chunks(BLOCK as usize).enumerate() {
            // A short piece only at the end of the resource.
            if piece.len() as u64 == BLOCK || end >= size {
                blocks.insert(first.saturating_add(i as u64), piece.to_vec());
            }
        }
        Ok(())
    }

    /// An operation ran to its end: the large reads' bytes it used are dropped.
    pub fn settle(&self) {
        if let Ok(Some(mut d)) = self.deferred_lock() {
            d.direct.clear();
            d.direct_asked.clear();
        }
    }

    /// Forget every cached block and ask the size again (a file a writer is extending).
    /// Deferred: the first block is pending again.
    pub fn refresh(&self) -> io::Result<()> {
        self.lock().map(|mut b| *b = Blocks::default())?;
        if let Some(mut d) = self.deferred_lock()? {
            *d = Deferred::default();
            d.pending.push((0, BLOCK));
            return Ok(());
        }
        let (size, first) = self.get(0, BLOCK)?;
        self.size.store(size, Ordering::Relaxed);
        if !first.is_empty() {
            self.lock()?.insert(0, first);
        }
        Ok(())
    }

    /// Requests made so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Bytes those requests returned.
    pub fn bytes_fetched(&self) -> u64 {
        self.bytes_fetched.load(Ordering::Relaxed)
    }

    fn lock(&self) -> io::Result<std::sync::MutexGuard<'_, Blocks>> {
        self.blocks
            .lock()
            .map_err(|_| io::Error::other("the block cache was poisoned"))
    }

    /// One `GET` of bytes `start..end` (the end clipped by the server to the size): the
    /// resource's size and the bytes.
    fn get(&self, start: u64, end: u64) -> io::Result<(u64, Vec<u8>)> {
        let what = |e: &JsValue| js_error(&self.url, e);
        let xhr = XmlHttpRequest::new().map_err(|e| what(&e))?;
        xhr.open_with_async("GET", &self.url, false)
            .map_err(|e| what(&e))?;
        xhr.set_request_header("Range", &format!("bytes={start}-{}", end.saturating_sub(1)))
            .map_err(|e| what(&e))?;
        xhr.set_response_type(XmlHttpRequestResponseType::Arraybuffer);
        xhr.send().map_err(|e| what(&e))?;
        self.requests.fetch_add(1, Ordering::Relaxed);
        let status = xhr.status().map_err(|e| what(&e))?;
        let body: ArrayBuffer = xhr
            .response()
            .map_err(|e| what(&e))?
            .dyn_into()
            .map_err(|_| io::Error::other(format!("{}: no body", self.url)))?;
        let bytes = Uint8Array::new(&body).to_vec();
        self.bytes_fetched
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        match status {
            206 => {
                // `bytes A-B/SIZE`
                let size = xhr
                    .get_response_header("Content-Range")
                    .map_err(|e| what(&e))?
                    .and_then(|r| r.rsplit_once('/').and_then(|(_, n)| n.trim().parse().ok()))
                    .ok_or_else(|| {
                        io::Error::other(format!(
                            "{}: a range answer without the size in Content-Range (a \
                             cross-origin server must expose it)",
                            self.url
                        ))
                    })?;
                Ok((size, bytes))
            }
            // 416: a range past the end (an empty resource, or one that shrank).
            416 => Ok((0, Vec::new())),
            200 => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "{}: the server ignores Range requests (it sent the whole resource)",
                    self.url
                ),
            )),
            404 => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{}: not found", self.url),
            )),
            s => Err(io::Error::other(format!("{}: HTTP {s}", self.url))),
        }
    }

    /// Fetch blocks `first..=last` (of a resource of `size` bytes) in one request and cache them.
    fn fetch_blocks(&self, first: u64, last: u64, size: u64) -> io::Result<()> {
        let from = first.saturating_mul(BLOCK);
        let to = last.saturating_add(1).saturating_mul(BLOCK).min(size);
        if from >= to {
            return Ok(());
        }
        let (_, bytes) = self.get(from, to)?;
        if bytes.len() as u64 != to.saturating_sub(from) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{}: asked for bytes {from}..{to}, got {}",
                    self.url,
                    bytes.len()
                ),
            ));
        }
        let mut blocks = self.lock()?;
        for (i, piece) in bytes.chunks(BLOCK as usize).enumerate() {
            blocks.insert(first.saturating_add(i as u64), piece.to_vec());
        }
        Ok(())
    }

    /// Copy `buf.len()` bytes at `start` out of the cached blocks; false if one is missing.
    fn copy_out(blocks: &Blocks, start: u64, buf: &mut [u8]) -> bool {
        let mut at = start;
        let mut done = 0usize;
        while done < buf.len() {
            let Some(block) = blocks.have.get(&(at / BLOCK)) else {
                return false;
            };
            let off = usize::try_from(at % BLOCK).unwrap_or(usize::MAX);
            let n = block
                .len()
                .saturating_sub(off)
                .min(buf.len().saturating_sub(done));
            match (
                block.get(off..off.saturating_add(n)),
                buf.get_mut(done..done.saturating_add(n)),
            ) {
                (Some(s), Some(d)) if n > 0 => d.copy_from_slice(s),
                _ => return false,
            }
            done = done.saturating_add(n);
            at = at.saturating_add(n as u64);
        }
        true
    }
}

impl Storage for UrlStorage {
    fn read_at(&self, addr: Addr, buf: &mut [u8]) -> io::Result<()> {
        let start = addr.0;
        let size = self.size.load(Ordering::Relaxed);
        let end = end_within(start, buf.len(), size)?;
        if buf.is_empty() || Self::copy_out(&*self.lock()?, start, buf) {
            return Ok(());
        }
        if let Some(mut d) = self.deferred_lock()? {
            if buf.len() as u64 >= DIRECT {
                if let Some(src) = d.direct.get(&(start, end)).and_then(|b| b.get(..buf.len())) {
                    buf.copy_from_slice(src);
                    return Ok(());
                }
                self.defer(&mut d, start, end);
            } else {
                let (first, last) = (start / BLOCK, end.saturating_sub(1) / BLOCK);
                let from = first.saturating_mul(BLOCK);
                let to = last.saturating_add(1).saturating_mul(BLOCK).min(size);
                self.defer(&mut d, from, to);
            }
            return Err(would_block(&self.url, start, end));
        }
        // A large read (a contiguous dataset's rows, a big chunk) goes straight to the buffer.
        if buf.len() as u64 >= DIRECT {
            let (_, bytes) = self.get(start, end)?;
            let dst = buf.len();
            return match bytes.get(..dst) {
                Some(src) if bytes.len() == dst => {
                    buf.copy_from_slice(src);
                    Ok(())
                }
                _ => Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "{}: asked for bytes {start}..{end}, got {}",
                        self.url,
                        bytes.len()
                    ),
                )),
            };
        }
        // The missing blocks from the first missing one to the last one needed, in one request.
        let (first, last) = (start / BLOCK, end.saturating_sub(1) / BLOCK);
        let first = {
            let blocks = self.lock()?;
            (first..=last)
                .find(|b| !blocks.have.contains_key(b))
                .unwrap_or(first)
        };
        self.fetch_blocks(first, last, size)?;
        if Self::copy_out(&*self.lock()?, start, buf) {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "{}: bytes {start}..{end} not cached after fetching them",
                self.url
            )))
        }
    }

    /// A selection's chunks, fetched before they are read: the missing blocks of the ranges
    /// that go through the cache, runs closer than [`GAP_BLOCKS`] joined into one request each
    /// (at most half the cache's budget at once).
    fn prefetch(&self, ranges: &[(Addr, u64)]) -> io::Result<()> {
        let size = self.size.load(Ordering::Relaxed);
        let mut wanted: Vec<u64> = Vec::new();
        {
            let blocks = self.lock()?;
            for &(at, n) in ranges {
                let end = at.0.checked_add(n).filter(|&e| e <= size);
                let Some(end) = end.filter(|_| n > 0 && n < DIRECT) else {
                    continue;
                };
                let (first, last) = (at.0 / BLOCK, end.saturating_sub(1) / BLOCK);
                wanted.extend((first..=last).filter(|b| !blocks.have.contains_key(b)));
            }
        }
        wanted.sort_unstable();
        wanted.dedup();
        wanted.truncate((CACHE_BYTES as u64 / BLOCK / 2) as usize);
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for b in wanted {
            match runs.last_mut() {
                Some((_, last)) if b <= last.saturating_add(GAP_BLOCKS) => *last = b,
                _ => runs.push((b, b)),
            }
        }
        if let Some(mut d) = self.deferred_lock()? {
            // Noted, not fetched: the next round's requests bring them with the miss.
            for (first, last) in runs {
                let from = first.saturating_mul(BLOCK);
                let to = last.saturating_add(1).saturating_mul(BLOCK).min(size);
                self.defer(&mut d, from, to);
            }
            return Ok(());
        }
        for (first, last) in runs {
            self.fetch_blocks(first, last, size)?;
        }
        Ok(())
    }

    fn write_at(&self, _addr: Addr, _data: &[u8]) -> io::Result<()> {
        Err(read_only())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.size.load(Ordering::Relaxed))
    }

    fn set_len(&self, _len: u64) -> io::Result<()> {
        Err(read_only())
    }

    fn sync(&self) -> io::Result<()> {
        Ok(())
    }
}
