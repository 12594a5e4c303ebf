//! Counting the I/O a file handle makes: [`Counted`] wraps the storage a file is opened on and
//! counts the requests made through it and their bytes; a storage whose requests cross a
//! network (an object store) also says what it fetched ([`Storage::remote_stats`]), which its
//! own caching makes fewer than the reads asked of it.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use h5chunk_format::Addr;

use crate::storage::{RemoteStats, Storage};

/// The requests a file handle made through its storage, and their bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct IoStats {
    /// Read requests (each run of a batched read counts once).
    pub reads: u64,
    /// Bytes those reads asked for.
    pub bytes_read: u64,
    /// Write requests.
    pub writes: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// What a remote storage fetched to serve the reads; `None` for local storage.
    pub remote: Option<RemoteStats>,
}

/// A storage that counts the requests made through it (see the module docs).
#[derive(Debug)]
pub struct Counted {
    inner: Arc<dyn Storage>,
    reads: AtomicU64,
    bytes_read: AtomicU64,
    writes: AtomicU64,
    bytes_written: AtomicU64,
}

impl Counted {
    /// Count the requests made through `inner`.
    pub fn new(inner: Arc<dyn Storage>) -> Counted {
        Counted {
            inner,
            reads: AtomicU64::new(0),
            bytes_read: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            bytes_written: AtomicU64::new(0),
        }
    }

    /// What has been counted so far.
    pub fn stats(&self) -> IoStats {
        IoStats {
            reads: self.reads.load(Ordering::Relaxed),
            bytes_read: self.bytes_read.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            bytes_written: self.bytes_written.load(Ordering::Relaxed),
            remote: self.inner.remote_stats(),
        }
    }

    fn read(&self, n: usize) {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.bytes_read.fetch_add(n as u64, Ordering::Relaxed);
    }
}

impl Storage for Counted {
    fn read_at(&self, addr: Addr, buf: &mut [u8]) -> io::Result<()> {
        self.read(buf.len());
        self.inner.read_at(addr, buf)
    }
    fn write_at(&self, addr: Addr, data: &[u8]) -> io::Result<()> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.bytes_written
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        self.inner.write_at(addr, data)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn sync(&self) -> io::Result<()> {
        self.inner.sync()
    }
    fn read_runs_at(&self, runs: &mut [(Addr, &mut [u8])]) -> io::Result<()> {
        // Runs back to back in the storage count as one read: a file reads them with one
        // vectored read.
        let (mut reads, mut bytes, mut end) = (0u64, 0u64, None);
        for (addr, buf) in runs.iter() {
            if end != Some(addr.get()) {
                reads = reads.saturating_add(1);
            }
            bytes = bytes.saturating_add(buf.len() as u64);
            end = Some(addr.get().saturating_add(buf.len() as u64));
        }
        self.reads.fetch_add(reads, Ordering::Relaxed);
        self.bytes_read.fetch_add(bytes, Ordering::Relaxed);
        self.inner.read_runs_at(runs)
    }
    fn write_gather_at(&self, addr: Addr, parts: &[&[u8]]) -> io::Result<()> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        let bytes = parts
            .iter()
            .fold(0u64, |n, p| n.saturating_add(p.len() as u64));
        self.bytes_written.fetch_add(bytes, Ordering::Relaxed);
        self.inner.write_gather_at(addr, parts)
    }
    fn prefetch(&self, ranges: &[(Addr, u64)]) -> io::Result<()> {
        self.inner.prefetch(ranges)
    }
    fn fetch_whole_on_miss(&self, range: (Addr, u64)) {
        self.inner.fetch_whole_on_miss(range)
    }
    fn expect_growth_ahead(&self) {
        self.inner.expect_growth_ahead()
    }
    fn remote_stats(&self) -> Option<RemoteStats> {
        self.inner.remote_stats()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::storage::MemStorage;

    #[test]
    fn counts_requests_and_bytes() {
        let c = Counted::new(Arc::new(MemStorage::new()));
        c.write_at(Addr(0), &[1; 100]).unwrap();
        let mut a = [0u8; 10];
        let mut b = [0u8; 20];
        c.read_at(Addr(5), &mut a).unwrap();
        c.read_runs_at(&mut [(Addr(0), &mut a[..]), (Addr(50), &mut b[..])])
            .unwrap();
        assert_eq!(
            c.stats(),
            IoStats {
                reads: 3,
                bytes_read: 40,
                writes: 1,
                bytes_written: 100,
                remote: None,
            }
        );
    }
}
