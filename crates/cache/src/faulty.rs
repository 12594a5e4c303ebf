//! A fault-injecting storage for tests (feature `testing`).
//!
//! [`FaultyStorage`] wraps another storage and
//! - records every write in order (address, length, bytes that reached the inner storage, and
//!   an optional caller-supplied tag),
//! - fails the Nth operation with an I/O error,
//! - simulates a crash at the Nth write: that write is torn at a chosen byte and every later
//!   write is silently lost, as after a power failure,
//! - serves torn reads: the next K reads overlapping an address range come back with the later
//!   part of the overlap garbled, as a reader sees a block the writer is rewriting.
//!
//! Operations are counted from the moment a fault is armed: `fail_nth_op(1)` fails the very
//! next operation.

use std::io;
use std::sync::Arc;

use h5chunk_format::Addr;
use parking_lot::Mutex;

use crate::storage::Storage;

/// One write that reached [`FaultyStorage`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteRecord {
    /// Position in the stream of writes (0 for the first write ever made).
    pub seq: u64,
    /// Where the write started.
    pub addr: Addr,
    /// How many bytes the caller asked to write.
    pub len: usize,
    /// How many of them reached the inner storage (less than `len` for the torn write of a
    /// simulated crash, 0 for writes after it).
    pub persisted: usize,
    /// The tag set with [`FaultyStorage::set_tag`] when the write was made.
    pub tag: Option<String>,
}

#[derive(Debug)]
struct Tear {
    start: u64,
    end: u64,
    remaining: u64,
}

#[derive(Debug, Default)]
struct State {
    ops: u64,
    fail_at_op: Option<u64>,
    writes: u64,
    crash_at_write: Option<(u64, usize)>,
    crashed: bool,
    tears: Vec<Tear>,
    torn_reads: u64,
    log: Vec<WriteRecord>,
    tag: Option<String>,
}

impl State {
    /// Count one operation; an error if it is the one armed to fail.
    fn op(&mut self, what: &str) -> io::Result<()> {
        // A test counter: it saturates rather than overflow (never reached in practice).
        self.ops = self.ops.saturating_add(1);
        if self.fail_at_op == Some(self.ops) {
            self.fail_at_op = None;
            return Err(io::Error::other(format!(
                "injected failure of operation {} ({what})",
                self.ops
            )));
        }
        Ok(())
    }
}

/// A storage wrapper that records writes and injects failures, crashes and torn reads.
#[derive(Debug)]
pub struct FaultyStorage<S> {
    inner: S,
    /// Shared with [`siblings`](FaultyStorage::sibling): one stream of operations and writes.
    state: Arc<Mutex<State>>,
}

impl<S: Storage> FaultyStorage<S> {
    /// Wrap `inner`; no fault is armed.
    pub fn new(inner: S) -> Self {
        FaultyStorage {
            inner,
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// Wrap a second storage in the same fault stream: operations and writes on either count
    /// in one sequence, so a crash armed on one cuts the writes of both at one instant (a file
    /// and its journal, say).
    pub fn sibling<T: Storage>(&self, inner: T) -> FaultyStorage<T> {
        FaultyStorage {
            inner,
            state: Arc::clone(&self.state),
        }
    }

    /// The wrapped storage (what survived a simulated crash).
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Make the `n`th operation from now (1 = the next; reads, writes, `len`, `set_len` and
    /// `sync` all count) fail once with an I/O error.
    pub fn fail_nth_op(&self, n: u64) {
        let mut st = self.state.lock();
        st.fail_at_op = Some(st.ops.saturating_add(n));
    }

    /// Simulate a crash at the `n`th write from now (1 = the next): only its first `keep` bytes
    /// reach the inner storage, and every later write is lost while still reporting success.
    pub fn crash_at_write(&self, n: u64, keep: usize) {
        let mut st = self.state.lock();
        st.crash_at_write = Some((st.writes.saturating_add(n), keep));
    }

    /// Whether a simulated crash has happened.
    pub fn crashed(&self) -> bool {
        self.state.lock().crashed
    }

    /// Garble the next `count` reads that overlap `addr .. addr + len`: in each, the second
    /// half of the overlapping bytes is XORed with 0x5a (a torn, partly stale image).
    pub fn tear_reads(&self, addr: Addr, len: u64, count: u64) {
        self.state.lock().tears.push(Tear {
            start: addr.get(),
            end: addr.get().saturating_add(len),
            remaining: count,
        });
    }

    /// Stop serving torn reads.
    pub fn clear_tears(&self) {
        self.state.lock().tears.clear();
    }

    /// How many reads were served torn so far.
    pub fn torn_reads(&self) -> u64 {
        self.state.lock().torn_reads
    }

    /// Label every later write with `tag` (or with nothing).
    pub fn set_tag(&self, tag: Option<&str>) {
        self.state.lock().tag = tag.map(str::to_owned);
    }

    /// Every write so far, in order.
    pub fn writes(&self) -> Vec<WriteRecord> {
        self.state.lock().log.clone()
    }

    /// Forget the recorded writes (counters and armed faults are kept).
    pub fn clear_writes(&self) {
        self.state.lock().log.clear();
    }
}

impl<S: Storage> Storage for FaultyStorage<S> {
    fn read_at(&self, addr: Addr, buf: &mut [u8]) -> io::Result<()> {
        let mut st = self.state.lock();
        st.op("read")?;
        self.inner.read_at(addr, buf)?;
        let start = addr.get();
        let end = start.saturating_add(buf.len() as u64);
        let mut torn = false;
        for tear in st.tears.iter_mut().filter(|t| t.remaining > 0) {
            let lo = start.max(tear.start);
            let hi = end.min(tear.end);
            if lo >= hi {
                continue;
            }
            // The filter above keeps only tears with `remaining > 0`.
            tear.remaining = tear.remaining.saturating_sub(1);
            torn = true;
            // Offsets into `buf`; both are within it because lo..hi lies within start..end, so
            // the subtractions cannot fail and the sums stay at most `hi - start`.
            let (Some(off), Some(span)) = (lo.checked_sub(start), hi.checked_sub(lo)) else {
                continue;
            };
            let from = off.saturating_add(span / 2) as usize;
            let to = off.saturating_add(span) as usize;
            for b in buf.get_mut(from..to).into_iter().flatten() {
                *b ^= 0x5a;
            }
        }
        if torn {
            st.torn_reads = st.torn_reads.saturating_add(1);
        }
        Ok(())
    }

    fn write_at(&self, addr: Addr, data: &[u8]) -> io::Result<()> {
        let mut st = self.state.lock();
        st.op("write")?;
        let seq = st.writes;
        // Write counter (a test facility): saturates rather than overflow.
        st.writes = st.writes.saturating_add(1);
        let persisted = if st.crashed {
            0
        } else if let Some((n, keep)) = st.crash_at_write.filter(|(n, _)| *n == st.writes) {
            let _ = n;
            st.crashed = true;
            keep.min(data.len())
        } else {
            data.len()
        };
        if let Some(part) = data.get(..persisted).filter(|p| !p.is_empty()) {
            self.inner.write_at(addr, part)?;
        }
        let tag = st.tag.clone();
        st.log.push(WriteRecord {
            seq,
            addr,
            len: data.len(),
            persisted,
            tag,
        });
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        self.state.lock().op("len")?;
        self.inner.len()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut st = self.state.lock();
        st.op("set_len")?;
        if st.crashed {
            return Ok(());
        }
        self.inner.set_len(len)
    }

    fn sync(&self) -> io::Result<()> {
        self.state.lock().op("sync")?;
        self.inner.sync()
    }
    fn expect_growth_ahead(&self) {
        self.inner.expect_growth_ahead()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemStorage;

    #[test]
    fn records_writes_in_order_with_tags() {
        let s = FaultyStorage::new(MemStorage::new());
        s.write_at(Addr(8), b"abc").unwrap();
        s.set_tag(Some("index"));
        s.write_at(Addr(0), b"xy").unwrap();
        let log = s.writes();
        assert_eq!(log.len(), 2);
        assert_eq!((log[0].seq, log[0].addr, log[0].len), (0, Addr(8), 3));
        assert_eq!(log[0].tag, None);
        assert_eq!((log[1].seq, log[1].addr), (1, Addr(0)));
        assert_eq!(log[1].tag.as_deref(), Some("index"));
    }

    #[test]
    fn fails_the_nth_operation_once() {
        let s = FaultyStorage::new(MemStorage::new());
        s.fail_nth_op(2);
        s.write_at(Addr(0), b"a").unwrap();
        let mut b = [0u8; 1];
        assert!(s.read_at(Addr(0), &mut b).is_err());
        s.read_at(Addr(0), &mut b).unwrap();
        assert_eq!(&b, b"a");
    }

    #[test]
    fn crash_tears_the_nth_write_and_loses_the_rest() {
        let s = FaultyStorage::new(MemStorage::new());
        s.write_at(Addr(0), b"0000").unwrap();
        s.crash_at_write(1, 2);
        s.write_at(Addr(4), b"1111").unwrap();
        s.write_at(Addr(8), b"2222").unwrap();
        assert!(s.crashed());
        s.write_at(Addr(0), b"3333").unwrap();
        assert_eq!(s.inner().to_vec(), b"000011");
        let persisted: Vec<usize> = s.writes().iter().map(|w| w.persisted).collect();
        assert_eq!(persisted, [4, 2, 0, 0]);
    }

    #[test]
    fn torn_reads_garble_only_the_range_and_only_k_times() {
        let s = FaultyStorage::new(MemStorage::from_vec(vec![0u8; 16]));
        s.tear_reads(Addr(4), 8, 2);
        let mut outside = [0u8; 4];
        s.read_at(Addr(12), &mut outside).unwrap();
        assert_eq!(outside, [0; 4]);
        for _ in 0..2 {
            let mut buf = [0u8; 16];
            s.read_at(Addr(0), &mut buf).unwrap();
            // Overlap 4..12: its second half, 8..12, is garbled.
            let garbled: Vec<usize> = (0..16).filter(|&i| buf[i] != 0).collect();
            assert_eq!(garbled, [8, 9, 10, 11]);
        }
        let mut buf = [0u8; 16];
        s.read_at(Addr(0), &mut buf).unwrap();
        assert_eq!(buf, [0; 16]);
        assert_eq!(s.torn_reads(), 2);
    }
}
