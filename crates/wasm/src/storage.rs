//! Read-only [`Storage`] backends of the browser, both synchronous and so usable only in a
//! Web Worker:
//! - [`BlobStorage`]: a `Blob` (a `File` from `<input type=file>` or a drop), each read one
//!   `FileReaderSync.readAsArrayBuffer` of a `Blob.slice`: nothing is loaded whole, so a file
//!   of any size opens (no 2 GiB limit; offsets are exact up to 2^53).
//! - [`UrlStorage`]: a URL read by synchronous `XMLHttpRequest`s with a `Range` header, through
//!   a cache of [`BLOCK`]-byte blocks (the server must answer ranges with 206).
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

/// A URL read by synchronous range requests (Web Workers only: a page's synchronous
/// requests cannot ask for an `ArrayBuffer`). Reads go through a cache of [`BLOCK`]-byte
/// blocks; a read missing several adjacent blocks asks for them in one request.
#[derive(Debug)]
pub struct UrlStorage {
    url: String,
    size: AtomicU64,
    blocks: Mutex<Blocks>,
    requests: AtomicU64,
    bytes_fetched: AtomicU64,
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
        };
        s.refresh()?;
        Ok(s)
    }

    /// Forget every cached block and ask the size again (a file a writer is extending).
    pub fn refresh(&self) -> io::Result<()> {
        self.lock().map(|mut b| *b = Blocks::default())?;
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
