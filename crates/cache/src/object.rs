//! A read-only [`Storage`] over an object store (S3 and its kin, through `object_store`):
//! HDF5 files read in place, with range requests.
//!
//! What keeps the requests few:
//! - **Read-ahead.** Opening fetches the object's first [`READ_AHEAD`] bytes in the same
//!   request that tells its size: the superblock, the root group and most object headers and
//!   small indexes sit there, so opening and listing a small file costs one GET.
//! - **A block cache.** Everything else is fetched in [`BLOCK`]-byte blocks, kept up to a
//!   budget (oldest first out): metadata read once stays.
//! - **Coalescing.** A read needing several missing blocks fetches each run of them in one
//!   request; [`Storage::prefetch`] takes a whole selection's ranges at once, joins runs
//!   closer than [`GAP`] and fetches the joined runs concurrently.
//!
//! Every GET is counted ([`ObjectStorage::requests`]): what the tests bound.

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, ObjectStore, ObjectStoreExt};
use parking_lot::Mutex;

use h5chunk_format::Addr;

use crate::storage::Storage;

/// Bytes fetched with the object's size when it is opened. 1 MiB: it holds the metadata of a
/// metadata-first file of a few hundred datasets (an ATL03-like granule's 0.7 MB: superblock,
/// headers, groups and every chunk-index root), so that opening, listing and reading a chunk
/// of it is two GETs; on a file whose metadata is scattered between its chunks, it costs a
/// few hundred KB more than 256 KiB and saves a few requests (the granule of `bench --cloud`:
/// 279 GETs and 2.98 MB to list, against 286 and 2.24 MB).
pub const READ_AHEAD: u64 = 1 << 20;
/// The unit of the block cache, by default. Small, because an HDF5 file's metadata is small
/// pieces scattered between the chunks: an h5py granule of 160 deflated datasets (11.7 MB)
/// lists in 1.3 MB fetched with 4 KiB blocks, in 11.5 MB with 64 KiB ones. A run of blocks
/// (a chunk) is still one request.
pub const BLOCK: u64 = 4 << 10;
/// Missing runs closer than this are fetched as one request, by default. Joining across
/// larger holes trades bytes for requests: in the granule above the datasets' headers are
/// 73 KB apart, and a gap that spans that fetches the whole file (65 GETs, 9.3 MB) where
/// 16 KiB fetches 1.3 MB in 237 GETs issued concurrently, a level of the tree at a time.
pub const GAP: u64 = 16 << 10;
/// The option (and, as `H5CHUNK_BLOCK_SIZE`, the environment variable) that sets the block
/// cache's unit.
pub const BLOCK_OPTION: &str = "h5chunk_block_size";
/// The option (and, as `H5CHUNK_COALESCE_GAP`, the environment variable) that sets the gap
/// below which missing runs are joined into one request.
pub const GAP_OPTION: &str = "h5chunk_coalesce_gap";
/// The option (and, as `H5CHUNK_READ_AHEAD`, the environment variable) that sets how many of
/// the object's first bytes the opening request fetches ([`READ_AHEAD`] unless set): the page
/// size of paged files one expects (8 MiB for ICESat-2's cloud-optimized granules) makes the
/// opening request bring their whole first page, so opening, listing and reading a chunk of a
/// metadata-first file costs two requests, not three.
pub const READ_AHEAD_OPTION: &str = "h5chunk_read_ahead";
/// The largest read-ahead that may be asked for.
const READ_AHEAD_MAX: u64 = 64 << 20;

/// The block size, gap and read-ahead `options` (else the environment) ask for, checked.
fn coalescing(options: &[(String, String)]) -> io::Result<(u64, u64, u64)> {
    let find = |key: &str, env: &str| -> io::Result<Option<u64>> {
        let v = options
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(env).ok());
        v.map(|v| {
            v.trim().parse::<u64>().map_err(|e| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("{key} = {v}: {e}"))
            })
        })
        .transpose()
    };
    let block = find(BLOCK_OPTION, "H5CHUNK_BLOCK_SIZE")?.unwrap_or(BLOCK);
    if !block.is_power_of_two() || !(512..=16 << 20).contains(&block) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{BLOCK_OPTION} = {block}: a power of two from 512 to 16777216"),
        ));
    }
    let gap = find(GAP_OPTION, "H5CHUNK_COALESCE_GAP")?.unwrap_or(GAP);
    if gap > 64 << 20 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{GAP_OPTION} = {gap}: at most 67108864"),
        ));
    }
    let read_ahead = find(READ_AHEAD_OPTION, "H5CHUNK_READ_AHEAD")?.unwrap_or(READ_AHEAD);
    if read_ahead > READ_AHEAD_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{READ_AHEAD_OPTION} = {read_ahead}: at most {READ_AHEAD_MAX}"),
        ));
    }
    Ok((block, gap, read_ahead))
}

/// The block cache's budget.
const CACHE_BYTES: usize = 256 << 20;

/// A read-only storage over one object: one ranged GET at open brings the first
/// [`READ_AHEAD`] bytes and the size; later reads go through a cache of [`BLOCK`]-byte
/// blocks; [`Storage::prefetch`] joins missing runs closer than [`GAP`] and fetches them
/// concurrently. Every GET is counted ([`ObjectStorage::requests`]).
pub struct ObjectStorage {
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    url: String,
    len: u64,
    runtime: tokio::runtime::Runtime,
    /// The object's first bytes (all of it when smaller than [`READ_AHEAD`]).
    head: Vec<u8>,
    blocks: Mutex<Blocks>,
    /// The unit of the block cache ([`BLOCK`] unless set).
    block: u64,
    /// Missing runs closer than this are fetched as one request ([`GAP`] unless set).
    gap: u64,
    requests: AtomicU64,
    bytes_fetched: AtomicU64,
    /// A range the first read missing inside it fetches whole
    /// ([`Storage::fetch_whole_on_miss`]); taken by that read.
    whole: Mutex<Option<Range<u64>>>,
}

#[derive(Default)]
struct Blocks {
    /// Block index -> its bytes (the last block may be short).
    have: BTreeMap<u64, Arc<[u8]>>,
    /// Insertion order, for eviction.
    order: VecDeque<u64>,
    bytes: usize,
}

impl Blocks {
    fn insert(&mut self, index: u64, data: Arc<[u8]>) {
        if self.have.insert(index, data.clone()).is_none() {
            self.order.push_back(index);
            self.bytes = self.bytes.saturating_add(data.len());
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

impl std::fmt::Debug for ObjectStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectStorage")
            .field("url", &self.url)
            .field("len", &self.len)
            .field("requests", &self.requests())
            .finish()
    }
}

fn other(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

impl ObjectStorage {
    /// Open the object at `url`: `s3://bucket/key` (credentials, region and endpoint from the
    /// standard `AWS_*` environment variables, then from `options`: object_store's S3 keys
    /// such as `aws_endpoint`, `aws_allow_http`, `aws_access_key_id`), `http(s)://host/path`
    /// (a server that answers range requests; `options` are object_store's client keys such as
    /// `timeout`) or `file:///path`.
    ///
    /// The coalescing is tuned by the options `h5chunk_block_size` (the block cache's unit, a
    /// power of two from 512 bytes to 16 MiB), `h5chunk_coalesce_gap` (missing runs closer than
    /// this many bytes are joined into one request, up to 64 MiB) and `h5chunk_read_ahead` (the
    /// first bytes the opening request fetches, up to 64 MiB), or by the environment variables
    /// `H5CHUNK_BLOCK_SIZE`, `H5CHUNK_COALESCE_GAP` and `H5CHUNK_READ_AHEAD` when the options
    /// do not say; they are not passed to the store.
    pub fn open(url: &str, options: &[(String, String)]) -> io::Result<ObjectStorage> {
        let (block, gap, read_ahead) = coalescing(options)?;
        let options: Vec<(String, String)> = options
            .iter()
            .filter(|(k, _)| k != BLOCK_OPTION && k != GAP_OPTION && k != READ_AHEAD_OPTION)
            .cloned()
            .collect();
        let mut s = Self::open_store(url, &options, read_ahead)?;
        s.block = block;
        s.gap = gap;
        Ok(s)
    }

    fn open_store(
        url: &str,
        options: &[(String, String)],
        read_ahead: u64,
    ) -> io::Result<ObjectStorage> {
        let (store, path): (Arc<dyn ObjectStore>, ObjectPath) =
            if let Some(rest) = url.strip_prefix("s3://") {
                let (_, key) = rest.split_once('/').unwrap_or((rest, ""));
                let mut b = object_store::aws::AmazonS3Builder::from_env().with_url(url);
                for (k, v) in options {
                    let key = k.parse().map_err(|e| {
                        io::Error::new(io::ErrorKind::InvalidInput, format!("{k}: {e}"))
                    })?;
                    b = b.with_config(key, v);
                }
                let path = ObjectPath::from_url_path(key)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
                (Arc::new(b.build().map_err(other)?), path)
            } else if let Some(rest) = url
                .strip_prefix("http://")
                .or_else(|| url.strip_prefix("https://"))
            {
                // The store is the server; the object its path. The server must answer range
                // requests (206 with Content-Range), which is how the size comes without a
                // HEAD.
                let (host, key) = rest.split_once('/').unwrap_or((rest, ""));
                let scheme = if url.starts_with("https://") {
                    "https"
                } else {
                    "http"
                };
                let mut client = object_store::ClientOptions::new().with_allow_http(true);
                for (k, v) in options {
                    let key = k.parse().map_err(|e| {
                        io::Error::new(io::ErrorKind::InvalidInput, format!("{k}: {e}"))
                    })?;
                    client = client.with_config(key, v);
                }
                let b = object_store::http::HttpBuilder::new()
                    .with_url(format!("{scheme}://{host}"))
                    .with_client_options(client);
                let path = ObjectPath::from_url_path(key)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
                (Arc::new(b.build().map_err(other)?), path)
            } else if let Some(p) = url.strip_prefix("file://") {
                let path = ObjectPath::from_filesystem_path(p)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
                (Arc::new(object_store::local::LocalFileSystem::new()), path)
            } else {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("{url}: only s3://, http(s):// and file:// URLs are supported"),
                ));
            };
        Self::open_on_with(store, path, url, read_ahead)
    }

    /// Open `path` in `store`; `url` names it in messages.
    pub fn open_on(
        store: Arc<dyn ObjectStore>,
        path: ObjectPath,
        url: &str,
    ) -> io::Result<ObjectStorage> {
        Self::open_on_with(store, path, url, READ_AHEAD)
    }

    /// [`ObjectStorage::open_on`], the opening request fetching the first `read_ahead` bytes
    /// (at least one).
    pub fn open_on_with(
        store: Arc<dyn ObjectStore>,
        path: ObjectPath,
        url: &str,
        read_ahead: u64,
    ) -> io::Result<ObjectStorage> {
        let read_ahead = read_ahead.max(1);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        // One request: the first bytes, and the object's size with them.
        let got = runtime
            .block_on(async {
                let r = store
                    .get_opts(&path, GetOptions::new().with_range(Some(0..read_ahead)))
                    .await?;
                let len = r.meta.size;
                Ok::<_, object_store::Error>((len, r.bytes().await?))
            })
            // The caller names the URL.
            .map_err(|e| match e {
                object_store::Error::NotFound { .. } => {
                    io::Error::new(io::ErrorKind::NotFound, "no such object")
                }
                e => io::Error::other(e.to_string()),
            })?;
        let s = ObjectStorage {
            store,
            path,
            url: url.to_owned(),
            len: got.0,
            runtime,
            head: got.1.to_vec(),
            blocks: Mutex::new(Blocks::default()),
            block: BLOCK,
            gap: GAP,
            requests: AtomicU64::new(1),
            bytes_fetched: AtomicU64::new(got.1.len() as u64),
            whole: Mutex::new(None),
        };
        Ok(s)
    }

    /// GET requests made so far (the opening one included).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Bytes those requests returned.
    pub fn bytes_fetched(&self) -> u64 {
        self.bytes_fetched.load(Ordering::Relaxed)
    }

    /// The URL it was opened with.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The block holding byte `at`.
    fn index(&self, at: u64) -> u64 {
        at.checked_div(self.block).unwrap_or_default()
    }

    /// Fetch the missing blocks that `ranges` touch (beyond the read-ahead): runs of missing
    /// blocks closer than [`GAP`] in one request each, the requests concurrently. A missing
    /// block inside the range to fetch whole brings the rest of that range with it.
    fn fetch(&self, ranges: &[Range<u64>]) -> io::Result<()> {
        let head = self.head.len() as u64;
        let mut wanted: Vec<u64> = Vec::new();
        {
            let blocks = self.blocks.lock();
            let missing = |r: &Range<u64>, wanted: &mut Vec<u64>| {
                let start = r.start.max(head);
                if start < r.end {
                    let (first, last) = (self.index(start), self.index(r.end.saturating_sub(1)));
                    wanted.extend((first..=last).filter(|b| !blocks.have.contains_key(b)));
                }
            };
            for r in ranges {
                missing(r, &mut wanted);
            }
            if !wanted.is_empty() {
                let mut whole = self.whole.lock();
                let hit = whole.as_ref().is_some_and(|w| {
                    let (first, last) = (self.index(w.start), self.index(w.end.saturating_sub(1)));
                    wanted.iter().any(|b| (first..=last).contains(b))
                });
                if hit && let Some(w) = whole.take() {
                    missing(&w, &mut wanted);
                }
            }
        }
        wanted.sort_unstable();
        wanted.dedup();
        // Join into requests.
        let gap_blocks = self.index(self.gap);
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for b in wanted {
            match runs.last_mut() {
                Some((_, end)) if b <= end.saturating_add(gap_blocks) => *end = b,
                _ => runs.push((b, b)),
            }
        }
        if runs.is_empty() {
            return Ok(());
        }
        let requests: Vec<Range<u64>> = runs
            .iter()
            .map(|&(a, b)| {
                a.saturating_mul(self.block)
                    ..b.saturating_add(1).saturating_mul(self.block).min(self.len)
            })
            .filter(|r| r.start < r.end)
            .collect();
        self.requests
            .fetch_add(requests.len() as u64, Ordering::Relaxed);
        let store = &self.store;
        let path = &self.path;
        let got = self
            .runtime
            .block_on(futures::future::try_join_all(
                requests.iter().map(|r| store.get_range(path, r.clone())),
            ))
            .map_err(|e| io::Error::other(format!("{}: {e}", self.url)))?;
        let mut blocks = self.blocks.lock();
        for (r, bytes) in requests.iter().zip(got) {
            self.bytes_fetched
                .fetch_add(bytes.len() as u64, Ordering::Relaxed);
            if bytes.len() as u64 != r.end.saturating_sub(r.start) {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "{}: asked for bytes {}..{}, got {}",
                        self.url,
                        r.start,
                        r.end,
                        bytes.len()
                    ),
                ));
            }
            for (i, piece) in bytes.chunks(self.block as usize).enumerate() {
                let index = self.index(r.start).saturating_add(i as u64);
                blocks.insert(index, Arc::from(piece));
            }
        }
        Ok(())
    }

    /// Copy `buf.len()` bytes at `start` from the read-ahead and the cached blocks; false if
    /// a block is missing.
    fn copy_out(&self, start: u64, buf: &mut [u8]) -> bool {
        let head = self.head.len() as u64;
        let mut at = start;
        let mut done = 0usize;
        if at < head {
            let n = (head.saturating_sub(at) as usize).min(buf.len());
            let (src, dst) = (
                self.head.get(at as usize..(at as usize).saturating_add(n)),
                buf.get_mut(..n),
            );
            match (src, dst) {
                (Some(s), Some(d)) => d.copy_from_slice(s),
                _ => return false,
            }
            done = n;
            at = at.saturating_add(n as u64);
        }
        let blocks = self.blocks.lock();
        while done < buf.len() {
            let Some(block) = blocks.have.get(&self.index(at)) else {
                return false;
            };
            let off = at.checked_rem(self.block).unwrap_or_default() as usize;
            let n = block
                .len()
                .saturating_sub(off)
                .min(buf.len().saturating_sub(done));
            if n == 0 {
                return false;
            }
            match (
                block.get(off..off.saturating_add(n)),
                buf.get_mut(done..done.saturating_add(n)),
            ) {
                (Some(s), Some(d)) => d.copy_from_slice(s),
                _ => return false,
            }
            done = done.saturating_add(n);
            at = at.saturating_add(n as u64);
        }
        true
    }
}

impl Storage for ObjectStorage {
    fn read_at(&self, addr: Addr, buf: &mut [u8]) -> io::Result<()> {
        let start = addr.get();
        let end = start
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.len);
        let Some(end) = end else {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{}: {} bytes at {start} pass the object's end ({})",
                    self.url,
                    buf.len(),
                    self.len
                ),
            ));
        };
        if self.copy_out(start, buf) {
            return Ok(());
        }
        self.fetch(std::slice::from_ref(&(start..end)))?;
        if self.copy_out(start, buf) {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "{}: bytes {start}..{end} not cached after fetching them",
                self.url
            )))
        }
    }

    fn write_at(&self, _addr: Addr, _data: &[u8]) -> io::Result<()> {
        Err(read_only(&self.url))
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.len)
    }

    fn set_len(&self, _len: u64) -> io::Result<()> {
        Err(read_only(&self.url))
    }

    fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    fn read_runs_at(&self, runs: &mut [(Addr, &mut [u8])]) -> io::Result<()> {
        // One request for every run not cached yet, then copies.
        let ranges: Vec<(Addr, u64)> = runs.iter().map(|(a, b)| (*a, b.len() as u64)).collect();
        self.prefetch(&ranges)?;
        for (addr, buf) in runs.iter_mut() {
            self.read_at(*addr, buf)?;
        }
        Ok(())
    }

    fn fetch_whole_on_miss(&self, range: (Addr, u64)) {
        let (start, end) = (
            range.0.get(),
            range.0.get().saturating_add(range.1).min(self.len),
        );
        *self.whole.lock() = (start < end && end > self.head.len() as u64).then_some(start..end);
    }

    fn prefetch(&self, ranges: &[(Addr, u64)]) -> io::Result<()> {
        let ranges: Vec<Range<u64>> = ranges
            .iter()
            .map(|&(a, n)| a.get()..a.get().saturating_add(n).min(self.len))
            .collect();
        self.fetch(&ranges)
    }

    fn remote_stats(&self) -> Option<crate::storage::RemoteStats> {
        Some(crate::storage::RemoteStats {
            requests: self.requests(),
            heads: 0,
            bytes: self.bytes_fetched(),
        })
    }
}

fn read_only(url: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("{url}: object storage is opened read-only"),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;

    fn storage(bytes: &[u8]) -> ObjectStorage {
        let store = Arc::new(InMemory::new());
        let path = ObjectPath::from("f.h5");
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(store.put(&path, bytes.to_vec().into()))
            .unwrap();
        ObjectStorage::open_on(store, path, "memory:///f.h5").unwrap()
    }

    #[test]
    fn reads_come_from_the_read_ahead_then_from_blocks_fetched_once() {
        let data: Vec<u8> = (0..(READ_AHEAD + 5 * BLOCK + 100))
            .map(|i| (i % 251) as u8)
            .collect();
        let s = storage(&data);
        assert_eq!(s.len().unwrap(), data.len() as u64);
        assert_eq!(s.requests(), 1);
        let mut b = vec![0; 1000];
        s.read_at(Addr(10), &mut b).unwrap();
        assert_eq!(b, data[10..1010]);
        assert_eq!(s.requests(), 1, "inside the read-ahead");
        // Across the read-ahead's end and two blocks: one request.
        let at = READ_AHEAD - 50;
        let mut b = vec![0; (BLOCK + 100) as usize];
        s.read_at(Addr(at), &mut b).unwrap();
        assert_eq!(b, data[at as usize..at as usize + b.len()]);
        assert_eq!(s.requests(), 2);
        s.read_at(Addr(at + 10), &mut b[..100]).unwrap();
        assert_eq!(s.requests(), 2, "cached");
        // The short last block, and past the end.
        let end = data.len() as u64;
        let mut tail = vec![0; 60];
        s.read_at(Addr(end - 60), &mut tail).unwrap();
        assert_eq!(tail, data[data.len() - 60..]);
        assert!(s.read_at(Addr(end - 10), &mut [0; 11]).is_err());
        assert!(s.write_at(Addr(0), &[1]).is_err());
    }

    #[test]
    fn a_larger_read_ahead_serves_more_from_the_opening_request() {
        let data: Vec<u8> = (0..(READ_AHEAD * 3)).map(|i| (i % 241) as u8).collect();
        let store = Arc::new(InMemory::new());
        let path = ObjectPath::from("f.h5");
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(store.put(&path, data.clone().into())).unwrap();
        let s = ObjectStorage::open_on_with(store, path, "memory:///f.h5", 2 * READ_AHEAD).unwrap();
        let mut b = vec![0; 1000];
        s.read_at(Addr(2 * READ_AHEAD - 1000), &mut b).unwrap();
        assert_eq!(
            b,
            data[2 * READ_AHEAD as usize - 1000..2 * READ_AHEAD as usize]
        );
        assert_eq!((s.requests(), s.bytes_fetched()), (1, 2 * READ_AHEAD));
        s.read_at(Addr(2 * READ_AHEAD), &mut b).unwrap();
        assert_eq!(s.requests(), 2, "past the read-ahead");
    }

    #[test]
    fn a_range_to_fetch_whole_comes_with_the_first_read_missing_in_it() {
        let data: Vec<u8> = (0..(READ_AHEAD * 4)).map(|i| (i % 239) as u8).collect();
        let s = storage(&data);
        let page = 2 * READ_AHEAD + 100;
        s.fetch_whole_on_miss((Addr(0), page));
        // Nothing fetched until a read misses; a read outside the range leaves it pending.
        assert_eq!(s.requests(), 1);
        let mut b = vec![0; 100];
        s.read_at(Addr(3 * READ_AHEAD), &mut b).unwrap();
        assert_eq!(
            b,
            data[3 * READ_AHEAD as usize..3 * READ_AHEAD as usize + 100]
        );
        assert_eq!(s.requests(), 2);
        // A read missing inside it: the whole rest of the range, in that one request.
        let at = READ_AHEAD + 5 * BLOCK + 1;
        s.read_at(Addr(at), &mut b).unwrap();
        assert_eq!(b, data[at as usize..at as usize + 100]);
        assert_eq!(s.requests(), 3);
        let fetched = s.bytes_fetched();
        let end = page.div_ceil(BLOCK) * BLOCK;
        assert_eq!(fetched, READ_AHEAD + BLOCK + (end - READ_AHEAD));
        for at in [READ_AHEAD, READ_AHEAD + 17 * BLOCK, page - 100] {
            s.read_at(Addr(at), &mut b).unwrap();
            assert_eq!(b, data[at as usize..at as usize + 100]);
        }
        assert_eq!(
            (s.requests(), s.bytes_fetched()),
            (3, fetched),
            "all cached"
        );
        // Taken by that read: a later miss fetches only what it asks for.
        s.read_at(Addr(end + 3 * BLOCK), &mut b).unwrap();
        assert_eq!((s.requests(), s.bytes_fetched()), (4, fetched + BLOCK));
    }

    #[test]
    fn the_read_ahead_option_is_checked() {
        let opt = |v: &str| vec![(READ_AHEAD_OPTION.to_string(), v.to_string())];
        assert_eq!(coalescing(&opt("8388608")).unwrap().2, 8 << 20);
        assert!(coalescing(&opt("67108865")).is_err());
        assert!(coalescing(&opt("8MiB")).is_err());
    }

    #[test]
    fn runs_are_fetched_in_one_prefetch_then_copied() {
        let data: Vec<u8> = (0..(READ_AHEAD + 40 * BLOCK))
            .map(|i| (i % 13) as u8)
            .collect();
        let s = storage(&data);
        let (a, b) = (READ_AHEAD + 3, READ_AHEAD + 30 * BLOCK + 7);
        let (mut x, mut y) = (vec![0; 100], vec![0; 300]);
        s.read_runs_at(&mut [(Addr(a), &mut x[..]), (Addr(b), &mut y[..])])
            .unwrap();
        assert_eq!(x, data[a as usize..a as usize + 100]);
        assert_eq!(y, data[b as usize..b as usize + 300]);
        assert_eq!(s.requests(), 3, "the open's, and one for each far run");
        let mut past = [0; 10];
        let end = data.len() as u64 - 5;
        assert!(s.read_runs_at(&mut [(Addr(end), &mut past[..])]).is_err());
    }

    #[test]
    fn a_prefetch_joins_near_ranges_and_fetches_the_rest_concurrently() {
        let data: Vec<u8> = (0..(READ_AHEAD + 40 * BLOCK))
            .map(|i| (i % 7) as u8)
            .collect();
        let s = storage(&data);
        let far = READ_AHEAD + 30 * BLOCK;
        s.prefetch(&[
            (Addr(READ_AHEAD + 10), 100),
            (Addr(READ_AHEAD + BLOCK + 5), 100),
            (Addr(far), 2 * BLOCK),
        ])
        .unwrap();
        assert_eq!(s.requests(), 3, "one near run, one far");
        let mut b = vec![0; 2 * BLOCK as usize];
        s.read_at(Addr(far), &mut b).unwrap();
        assert_eq!(s.requests(), 3);
        assert_eq!(b, data[far as usize..far as usize + b.len()]);
    }
}
