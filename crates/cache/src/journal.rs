//! A rollback journal that makes every flush atomic with respect to a crash.
//!
//! [`Journaled`] sits between the file's users (the metadata cache, the chunk writers, the
//! superblock) and the storage. It knows the file's length at the last completed flush (the
//! *durable length*); every byte below it belongs to the state that flush left. Before the
//! first write since that flush that would overwrite such bytes (an index block updated in
//! place, an object header, the superblock, or the tail cut by a truncation), the original
//! bytes go to the journal as a checksummed record. Writes past the durable length need no
//! record: a rollback cuts the file back to that length.
//!
//! A flush ([`Journaled::begin`] .. [`Journaled::commit`]) also *defers* its in-place writes:
//! they are queued (reads see them) until the commit, which makes the journal durable once,
//! applies the queue in the order it was written, makes the file durable, and then removes the
//! journal. Removing the journal is the commit point. A crash at any instant leaves either a
//! journal whose records restore the last completed flush, or no journal and the new flush
//! complete: [`recover`] (run by the next writable open, or `h5chunk recover FILE`) writes the
//! saved bytes back and cuts the file to the recorded length.
//!
//! On disk the journal is a header (`H5CJRNL1`, the epoch, the durable length, a lookup3
//! checksum) followed by records (`JREC`, address, length, the original bytes, a lookup3
//! checksum over the epoch, address, length and bytes). A record is complete before the
//! overwrite it protects starts, so recovery stops at the first torn or foreign record and
//! applies every complete one (restoring bytes that were never overwritten is harmless).
//! `docs/design/crash-safe-flush.md` gives the full argument.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use h5chunk_format::Addr;
use h5chunk_format::checksum::lookup3;
use parking_lot::Mutex;

use crate::storage::{FileStorage, Storage};

/// What a flush promises to survive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Durability {
    /// No journal and no `fsync`: fastest, but a crash inside a flush (or an eviction between
    /// flushes) can leave a file that does not open.
    None,
    /// The journal without `fsync` (the default): every flush survives the process being
    /// killed at any instant (the kernel keeps every completed write), but not a power cut.
    /// libhdf5's and h5py's flushes do not `fsync` either (and survive neither); why this is the
    /// default: `docs/design/crash-safe-flush.md`, section "The default".
    #[default]
    Flush,
    /// The journal, with the journal, the file and the journal's removal made durable in that
    /// order: every flush survives a power cut too, for three `fsync`s a flush.
    Sync,
}

/// Where a journal lives.
#[derive(Clone)]
pub enum JournalPlace {
    /// A sidecar file, created when a flush first needs it and removed at every commit.
    File(PathBuf),
    /// A storage of its own, emptied at every commit (for tests and for backends without
    /// files).
    Storage(Arc<dyn Storage>),
}

impl fmt::Debug for JournalPlace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JournalPlace::File(p) => write!(f, "JournalPlace::File({})", p.display()),
            JournalPlace::Storage(s) => write!(f, "JournalPlace::Storage({s:?})"),
        }
    }
}

impl JournalPlace {
    /// The sidecar journal of the file at `path`: `<path>.h5chunk-journal`.
    pub fn beside(path: &Path) -> JournalPlace {
        let mut name = path.as_os_str().to_owned();
        name.push(".h5chunk-journal");
        JournalPlace::File(PathBuf::from(name))
    }

    /// The journal's storage if it exists (a file) or holds any byte.
    fn existing(&self, writable: bool) -> io::Result<Option<Arc<dyn Storage>>> {
        match self {
            JournalPlace::File(p) => {
                let mut o = std::fs::OpenOptions::new();
                o.read(true).write(writable);
                match o.open(p) {
                    Ok(f) => Ok(Some(Arc::new(FileStorage::new(f)))),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(e),
                }
            }
            JournalPlace::Storage(s) => Ok((!s.is_empty()?).then(|| Arc::clone(s))),
        }
    }

    /// An empty journal, ready for a header.
    fn create(&self) -> io::Result<Arc<dyn Storage>> {
        match self {
            JournalPlace::File(p) => {
                let f = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(p)?;
                Ok(Arc::new(FileStorage::new(f)))
            }
            JournalPlace::Storage(s) => {
                s.set_len(0)?;
                Ok(Arc::clone(s))
            }
        }
    }

    /// Remove the journal (the commit point); with `sync`, durably.
    fn remove(&self, sync: bool) -> io::Result<()> {
        match self {
            JournalPlace::File(p) => {
                match std::fs::remove_file(p) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
                if sync {
                    // The removal is a change to the directory: make it durable there.
                    let dir = match p.parent() {
                        Some(d) if !d.as_os_str().is_empty() => d,
                        _ => Path::new("."),
                    };
                    std::fs::File::open(dir)?.sync_all()?;
                }
                Ok(())
            }
            JournalPlace::Storage(s) => {
                s.set_len(0)?;
                if sync {
                    s.sync()?;
                }
                Ok(())
            }
        }
    }
}

const MAGIC: &[u8; 8] = b"H5CJRNL1";
const RECORD: &[u8; 4] = b"JREC";
/// Magic, epoch, durable length, checksum.
const HEADER_LEN: u64 = 28;
/// Record signature, address, length (the bytes and the checksum follow).
const RECORD_HEAD: u64 = 16;

fn header(epoch: u64, durable_len: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER_LEN as usize);
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&epoch.to_le_bytes());
    h.extend_from_slice(&durable_len.to_le_bytes());
    let sum = lookup3(&h);
    h.extend_from_slice(&sum.to_le_bytes());
    h
}

/// A record's checksum: over the epoch (so a record of another epoch never passes), the
/// address, the length and the bytes.
fn record_sum(epoch: u64, addr: u64, bytes: &[u8]) -> u32 {
    let mut body = Vec::with_capacity(bytes.len().saturating_add(20));
    body.extend_from_slice(&epoch.to_le_bytes());
    body.extend_from_slice(&addr.to_le_bytes());
    body.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    body.extend_from_slice(bytes);
    lookup3(&body)
}

/// The largest run of original bytes one record holds (longer runs take several records).
const MAX_RECORD: u64 = 1 << 20;

/// What [`recover`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recovery {
    /// Records applied (ranges of original bytes written back).
    pub records: u64,
    /// Bytes written back.
    pub bytes: u64,
    /// The length the file was cut back to: its length at the last completed flush.
    pub durable_len: u64,
}

fn read_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

fn read_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// The journal's header if it is complete: `(epoch, durable_len)`.
fn read_header(journal: &dyn Storage) -> io::Result<Option<(u64, u64)>> {
    if journal.len()? < HEADER_LEN {
        return Ok(None);
    }
    let mut h = [0u8; HEADER_LEN as usize];
    journal.read_at(Addr(0), &mut h)?;
    let (body, sum) = h.split_at(24);
    if !body.starts_with(MAGIC) || read_u32(sum, 0) != Some(lookup3(body)) {
        return Ok(None);
    }
    Ok(read_u64(body, 8).zip(read_u64(body, 16)))
}

/// Remove whatever journal `place` holds, unread (the file it belonged to is being replaced).
pub fn discard_journal(place: &JournalPlace) -> io::Result<()> {
    match place {
        JournalPlace::File(p) if !p.exists() => Ok(()),
        _ => place.remove(false),
    }
}

/// Whether `place` holds a journal that [`recover`] would apply (a complete header): the file
/// beside it is then not in the state of its last completed flush.
pub fn needs_recovery(place: &JournalPlace) -> io::Result<bool> {
    match place.existing(false)? {
        Some(j) => Ok(read_header(&*j)?.is_some()),
        None => Ok(false),
    }
}

/// Roll the file in `inner` back to its last completed flush using the journal at `place`,
/// then remove the journal. `None` when there is no journal with a complete header (nothing
/// was overwritten since that flush; a journal without one is removed).
pub fn recover(inner: &dyn Storage, place: &JournalPlace) -> io::Result<Option<Recovery>> {
    let Some(journal) = place.existing(true)? else {
        return Ok(None);
    };
    let Some((epoch, durable_len)) = read_header(&*journal)? else {
        place.remove(true)?;
        return Ok(None);
    };
    let jlen = journal.len()?;
    let mut pos = HEADER_LEN;
    let mut done = Recovery {
        records: 0,
        bytes: 0,
        durable_len,
    };
    // Every record read is bounded by the journal's own length, checked before it sizes a
    // buffer; the loop advances by at least RECORD_HEAD per record, so it ends.
    while let Some(after_head) = pos.checked_add(RECORD_HEAD).filter(|&e| e <= jlen) {
        let mut head = [0u8; RECORD_HEAD as usize];
        journal.read_at(Addr(pos), &mut head)?;
        let (Some(addr), Some(len)) = (read_u64(&head, 4), read_u32(&head, 12)) else {
            break;
        };
        let len = u64::from(len);
        let Some(end) = after_head.checked_add(len).and_then(|e| e.checked_add(4)) else {
            break;
        };
        if !head.starts_with(RECORD) || end > jlen || len > MAX_RECORD {
            break;
        }
        let mut rest = vec![0u8; (len as usize).saturating_add(4)];
        journal.read_at(Addr(after_head), &mut rest)?;
        let (bytes, sum) = rest.split_at(len as usize);
        if read_u32(sum, 0) != Some(record_sum(epoch, addr, bytes)) {
            break;
        }
        inner.write_at(Addr(addr), bytes)?;
        done.records = done.records.saturating_add(1);
        done.bytes = done.bytes.saturating_add(len);
        pos = end;
    }
    inner.set_len(durable_len)?;
    inner.sync()?;
    place.remove(true)?;
    Ok(Some(done))
}

/// One deferred change of a flush.
#[derive(Debug)]
enum Queued {
    Write(u64, Vec<u8>),
}

#[derive(Debug, Default)]
struct State {
    /// The file's length at the last commit.
    durable_len: u64,
    /// Ranges below `durable_len` whose original bytes are in the journal (start -> end,
    /// disjoint).
    saved: BTreeMap<u64, u64>,
    /// The open journal and where its next record goes (`None`: not written this epoch).
    journal: Option<(Arc<dyn Storage>, u64)>,
    /// Counts commits: records of another epoch never pass the checksum.
    epoch: u64,
    /// Inside `begin .. commit`: in-place writes wait in `queue`.
    batching: bool,
    queue: Vec<Queued>,
    /// A truncation asked for inside the flush, applied at the commit (the file reads as
    /// this long meanwhile, unless a later write reaches further).
    cut: Option<u64>,
    /// Whether anything was written or cut since the last commit (a commit with nothing to
    /// make durable costs no `fsync`).
    changed: bool,
    /// Bypassed, inside a flush: where new space starts (the file's length when the flush
    /// began, or what the caller said: see `begin_with_frontier`). Nothing at or past it is
    /// reachable from anything written before the flush.
    frontier: u64,
    /// Bypassed, inside a flush: writes at or past `frontier` (start -> bytes, disjoint, runs
    /// that meet joined), written before every queued write and in address order.
    fresh: BTreeMap<u64, Vec<u8>>,
    /// Bytes held in `fresh`.
    fresh_bytes: usize,
    /// The buffer of the largest run written out last, emptied, for the next flush's first
    /// run: a flush's held bytes are then joined without growing a buffer again.
    spare: Vec<u8>,
}

impl State {
    /// The end of the furthest write a flush holds back (queued or in new space), 0 if none.
    fn held_end(&self) -> u64 {
        (self.queue.iter())
            .map(|Queued::Write(a, d)| a.saturating_add(d.len() as u64))
            .chain((self.fresh.iter().next_back()).map(|(a, d)| a.saturating_add(d.len() as u64)))
            .max()
            .unwrap_or(0)
    }
}

/// The most bytes a bypassed flush holds back in new space before writing them (they can go
/// at any time: nothing points at them yet), and the most one joined write holds.
const MAX_FRESH: usize = 4 << 20;

/// Keep `buf`, written out, as the spare run buffer if it is the largest seen.
fn keep_spare(st: &mut State, mut buf: Vec<u8>) {
    if buf.capacity() > st.spare.capacity() {
        buf.clear();
        st.spare = buf;
    }
}

/// A write into new space at least this long is not held (see `hold_fresh`).
const DIRECT_FRESH: usize = 64 << 10;

/// A storage whose in-place overwrites are journaled: before the first overwrite since the last
/// commit the original bytes go to a checksummed journal record, in-place writes of a flush wait
/// for its commit, and removing the journal is the commit point ([`recover`] undoes the rest).
pub struct Journaled {
    inner: Arc<dyn Storage>,
    place: JournalPlace,
    sync: bool,
    state: Mutex<State>,
    /// Whether `state.queue` may hold writes (reads skip the lock when it does not).
    queued: AtomicBool,
    /// Writes go straight through, unjournaled (see [`bypass`](Journaled::bypass)).
    bypass: AtomicBool,
}

impl fmt::Debug for Journaled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Journaled")
            .field("inner", &self.inner)
            .field("place", &self.place)
            .field("sync", &self.sync)
            .finish()
    }
}

impl Journaled {
    /// Journal the writes to `inner`, whose current contents are the durable state (recover
    /// first if a journal may exist). With `Durability::Sync` the journal and the file are
    /// made durable at each commit; `Durability::Flush` only orders the writes.
    pub fn new(
        inner: Arc<dyn Storage>,
        place: JournalPlace,
        durability: Durability,
    ) -> io::Result<Journaled> {
        let durable_len = inner.len()?;
        Ok(Journaled {
            inner,
            place,
            sync: durability == Durability::Sync,
            state: Mutex::new(State {
                durable_len,
                ..State::default()
            }),
            queued: AtomicBool::new(false),
            bypass: AtomicBool::new(false),
        })
    }

    /// From now on, write straight through with no journal: for a writer whose write order
    /// alone keeps the file consistent at every instant (a SWMR writer, whose readers rely on
    /// exactly that), against a process crash. Call it between flushes (after a commit);
    /// there is no way back.
    pub fn bypass(&self) -> io::Result<()> {
        let mut st = self.state.lock();
        if st.batching || st.changed {
            return Err(io::Error::other(
                "journal bypass asked for with a flush under way",
            ));
        }
        st.journal = None;
        self.bypass.store(true, Ordering::Release);
        Ok(())
    }

    /// Whether writes go straight through (see [`bypass`](Self::bypass)).
    pub fn is_bypassed(&self) -> bool {
        self.bypass.load(Ordering::Acquire)
    }

    /// Start a flush: in-place writes wait for [`commit`](Self::commit).
    ///
    /// Bypassed (no journal), a flush is still held back, for fewer and larger writes with
    /// the same guarantee: writes past the file's length at the start (new space, which
    /// nothing the readers or a crash can reach points into yet; see
    /// [`begin_with_frontier`](Self::begin_with_frontier)) are joined in address order, and the commit writes them first, then the writes over the existing file in
    /// the order they were made. Every write over the existing file thus still follows
    /// everything written before it, the only order a SWMR reader or a crash can observe.
    pub fn begin(&self) {
        // Unknown length: nothing counts as new space, every write keeps its place.
        self.begin_with_frontier(self.inner.len().unwrap_or(u64::MAX));
    }

    /// [`begin`](Self::begin), with the caller saying where new space starts: `frontier` (in
    /// this storage's addresses) must lie past everything written before the flush that anyone
    /// could reach (the end of the highest block ever allocated, say, when the file is longer
    /// than what is allocated). Bypassed, writes at or past it are held and joined.
    pub fn begin_with_frontier(&self, frontier: u64) {
        let mut st = self.state.lock();
        if self.is_bypassed() {
            st.frontier = frontier;
        }
        st.batching = true;
    }

    /// End a flush atomically: make the journal durable, apply the deferred writes in order,
    /// make the file durable, remove the journal. The file's state now is the durable one.
    pub fn commit(&self) -> io::Result<()> {
        let mut st = self.state.lock();
        if self.is_bypassed() {
            st.batching = false;
            return self.drain(&mut st);
        }
        if !st.changed {
            st.batching = false;
            return Ok(());
        }
        let journaled = st.journal.is_some();
        if self.sync
            && let Some((j, _)) = &st.journal
        {
            j.sync()?;
        }
        self.apply_queue(&mut st)?;
        if self.sync {
            self.inner.sync()?;
        }
        if journaled {
            st.journal = None;
            self.place.remove(self.sync)?;
        }
        st.durable_len = self.inner.len()?;
        st.saved.clear();
        st.epoch = st.epoch.wrapping_add(1);
        st.batching = false;
        st.changed = false;
        Ok(())
    }

    /// Give up a flush that failed: its deferred writes are applied as ordinary writes (they
    /// stay journaled), so the file and the caches agree; the next commit settles them.
    pub fn abandon(&self) -> io::Result<()> {
        let mut st = self.state.lock();
        st.batching = false;
        self.drain(&mut st)
    }

    /// Write what a flush holds back: the new space in address order (runs that meet in one
    /// write), then the queued writes in order, then the deferred cut.
    fn drain(&self, st: &mut State) -> io::Result<()> {
        self.write_fresh(st)?;
        self.apply_queue(st)
    }

    /// Write the held-back new space, joining runs that meet, up to [`MAX_FRESH`] bytes a
    /// write.
    fn write_fresh(&self, st: &mut State) -> io::Result<()> {
        let fresh = std::mem::take(&mut st.fresh);
        st.fresh_bytes = 0;
        let mut run: Option<(u64, Vec<u8>)> = None;
        for (at, bytes) in fresh {
            match &mut run {
                Some((start, buf))
                    if start.saturating_add(buf.len() as u64) == at
                        && buf.len().saturating_add(bytes.len()) <= MAX_FRESH =>
                {
                    buf.extend_from_slice(&bytes);
                }
                _ => {
                    if let Some((start, buf)) = run.replace((at, bytes)) {
                        self.inner.write_at(Addr(start), &buf)?;
                        keep_spare(st, buf);
                    }
                }
            }
        }
        if let Some((start, buf)) = run {
            self.inner.write_at(Addr(start), &buf)?;
            keep_spare(st, buf);
        }
        Ok(())
    }

    /// Bypassed, inside a flush: hold `data` (at `start`, at or past the frontier) back in new
    /// space, joined to the run it continues.
    fn hold_fresh(&self, st: &mut State, start: u64, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let end = start.saturating_add(data.len() as u64);
        // A write over bytes held already (rare: the same block written twice in a flush):
        // what is held goes out first, so the later bytes win.
        let overlaps = st
            .fresh
            .range(..end)
            .next_back()
            .is_some_and(|(&a, b)| a.saturating_add(b.len() as u64) > start);
        if overlaps || st.fresh_bytes.saturating_add(data.len()) > MAX_FRESH {
            self.write_fresh(st)?;
        }
        // A large write gains nothing from joining and would only be copied: it goes now.
        if data.len() >= DIRECT_FRESH {
            return self.inner.write_at(Addr(start), data);
        }
        st.fresh_bytes = st.fresh_bytes.saturating_add(data.len());
        let before = st
            .fresh
            .range_mut(..start)
            .next_back()
            .filter(|(a, b)| a.saturating_add(b.len() as u64) == start);
        match before {
            Some((_, b)) => b.extend_from_slice(data),
            None => {
                let mut run = std::mem::take(&mut st.spare);
                run.extend_from_slice(data);
                st.fresh.insert(start, run);
            }
        }
        // The run after, if this write reaches it, joins too.
        if let Some(next) = st.fresh.remove(&end) {
            match st.fresh.range_mut(..end).next_back() {
                Some((_, b)) => b.extend_from_slice(&next),
                // Cannot happen (this write starts before `end`), but nothing is dropped.
                None => {
                    st.fresh.insert(end, next);
                }
            }
        }
        self.queued.store(true, Ordering::Release);
        Ok(())
    }

    /// Write the deferred writes in the order they were made, then the deferred cut.
    fn apply_queue(&self, st: &mut State) -> io::Result<()> {
        for q in std::mem::take(&mut st.queue) {
            match q {
                Queued::Write(addr, data) => self.inner.write_at(Addr(addr), &data)?,
            }
        }
        self.queued.store(false, Ordering::Release);
        if let Some(len) = st.cut.take() {
            self.inner.set_len(len)?;
        }
        Ok(())
    }

    /// Save the original bytes of `start .. end` (clipped to the durable length) that are not
    /// saved yet, as journal records.
    fn save(&self, st: &mut State, start: u64, end: u64) -> io::Result<()> {
        let end = end.min(st.durable_len);
        if start >= end {
            return Ok(());
        }
        // The gaps of `start .. end` not covered by saved ranges.
        let mut gaps = Vec::new();
        let mut pos = start;
        let first = st.saved.range(..=start).next_back().map(|(&s, &e)| (s, e));
        let later = st.saved.range(start.saturating_add(1)..end);
        for (s, e) in first.into_iter().chain(later.map(|(&s, &e)| (s, e))) {
            if e <= pos {
                continue;
            }
            if s > pos {
                gaps.push((pos, s.min(end)));
            }
            pos = pos.max(e);
            if pos >= end {
                break;
            }
        }
        if pos < end {
            gaps.push((pos, end));
        }
        if gaps.is_empty() {
            return Ok(());
        }
        let (journal, mut at) = match st.journal.take() {
            Some(j) => j,
            None => {
                let j = self.place.create()?;
                j.write_at(Addr(0), &header(st.epoch, st.durable_len))?;
                (j, HEADER_LEN)
            }
        };
        let result = (|| {
            let file_len = self.inner.len()?;
            for &(gs, ge) in &gaps {
                let mut s = gs;
                while s < ge {
                    let e = ge.min(s.saturating_add(MAX_RECORD));
                    // Bytes past the file's current end read as zero (a tail already cut and
                    // saved would be covered; this is only the defensive case).
                    let have = e.min(file_len).saturating_sub(s);
                    // At most MAX_RECORD bytes: `s < e <= s + MAX_RECORD`.
                    let mut bytes = vec![0u8; e.saturating_sub(s) as usize];
                    if let Some(part) = bytes.get_mut(..have as usize).filter(|p| !p.is_empty()) {
                        self.inner.read_at(Addr(s), part)?;
                    }
                    let mut rec = Vec::with_capacity(bytes.len().saturating_add(20));
                    rec.extend_from_slice(RECORD);
                    rec.extend_from_slice(&s.to_le_bytes());
                    rec.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                    rec.extend_from_slice(&bytes);
                    rec.extend_from_slice(&record_sum(st.epoch, s, &bytes).to_le_bytes());
                    journal.write_at(Addr(at), &rec)?;
                    at = at.saturating_add(rec.len() as u64);
                    s = e;
                }
            }
            Ok::<(), io::Error>(())
        })();
        st.journal = Some((Arc::clone(&journal), at));
        result?;
        // Outside a flush the overwrite follows at once: the record must be durable first.
        if self.sync && !st.batching {
            journal.sync()?;
        }
        for (gs, ge) in gaps {
            st.saved.insert(gs, ge);
        }
        Ok(())
    }
}

impl Journaled {
    /// [`write_at`](Storage::write_at) for a write the commit applies before every other
    /// deferred one: the superblock, whose end-of-file address must cover the new space the
    /// flush's other writes point to before any of them lands (a reader that opens the file
    /// after a crash during the commit, without recovering it, then never finds a pointer past
    /// the end of allocation).
    pub fn write_first(&self, addr: Addr, data: &[u8]) -> io::Result<()> {
        self.write(addr, data, true)
    }

    fn write(&self, addr: Addr, data: &[u8], first: bool) -> io::Result<()> {
        let start = addr.get();
        let end = start.saturating_add(data.len() as u64);
        if self.is_bypassed() {
            let mut st = self.state.lock();
            if !st.batching {
                return self.inner.write_at(addr, data);
            }
            // New space is held back and joined; a write over the existing file waits, in
            // order, for everything before it (see `begin`).
            let split = st.frontier.clamp(start, end).saturating_sub(start) as usize;
            let (old, new) = data.split_at(split.min(data.len()));
            if !old.is_empty() {
                st.queue.push(Queued::Write(start, old.to_vec()));
                self.queued.store(true, Ordering::Release);
            }
            return self.hold_fresh(&mut st, start.saturating_add(split as u64), new);
        }
        let mut st = self.state.lock();
        st.changed = true;
        if let Some(cut) = &mut st.cut {
            *cut = (*cut).max(end);
        }
        if start >= st.durable_len {
            return self.inner.write_at(addr, data);
        }
        self.save(&mut st, start, end)?;
        if !st.batching {
            return self.inner.write_at(addr, data);
        }
        // Inside a flush: the part over the durable state waits for the commit; the part past
        // it is new space, written now (no queued write overlaps it).
        // `start < durable_len` here.
        let split = st.durable_len.min(end).saturating_sub(start) as usize;
        let (old, new) = data.split_at(split.min(data.len()));
        let q = Queued::Write(start, old.to_vec());
        if first {
            st.queue.insert(0, q);
        } else {
            st.queue.push(q);
        }
        self.queued.store(true, Ordering::Release);
        if !new.is_empty() {
            self.inner
                .write_at(Addr(start.saturating_add(split as u64)), new)?;
        }
        Ok(())
    }
}

impl Storage for Journaled {
    fn read_at(&self, addr: Addr, buf: &mut [u8]) -> io::Result<()> {
        if !self.queued.load(Ordering::Acquire) {
            return self.inner.read_at(addr, buf);
        }
        let mut st = self.state.lock();
        if self.is_bypassed() {
            // A read inside a bypassed flush (rare): what is held back goes out first, in its
            // safe order, and the flush goes on holding what follows.
            self.drain(&mut st)?;
            return self.inner.read_at(addr, buf);
        }
        // Deferred writes may extend past the file's current end: read what exists.
        let start = addr.get();
        let len = self.inner.len()?;
        let have = len.saturating_sub(start).min(buf.len() as u64) as usize;
        let (head, tail) = buf.split_at_mut(have);
        if !head.is_empty() {
            self.inner.read_at(addr, head)?;
        }
        tail.fill(0);
        let end = start.saturating_add(buf.len() as u64);
        let mut covered = len.max(start);
        for Queued::Write(qa, data) in &st.queue {
            let qe = qa.saturating_add(data.len() as u64);
            let (lo, hi) = (start.max(*qa), end.min(qe));
            if lo < hi {
                // `start <= lo < hi <= end` and `qa <= lo < hi <= qe`: no underflow.
                let dst = lo.saturating_sub(start) as usize..hi.saturating_sub(start) as usize;
                let src = lo.saturating_sub(*qa) as usize..hi.saturating_sub(*qa) as usize;
                if let (Some(d), Some(s)) = (buf.get_mut(dst), data.get(src)) {
                    d.copy_from_slice(s);
                }
                covered = covered.max(hi);
            }
        }
        if covered < end {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the end of storage",
            ));
        }
        Ok(())
    }

    fn read_runs_at(&self, runs: &mut [(Addr, &mut [u8])]) -> io::Result<()> {
        if !self.queued.load(Ordering::Acquire) {
            return self.inner.read_runs_at(runs);
        }
        // Deferred writes to read through: run by run.
        for (addr, buf) in runs.iter_mut() {
            self.read_at(*addr, buf)?;
        }
        Ok(())
    }

    fn write_at(&self, addr: Addr, data: &[u8]) -> io::Result<()> {
        self.write(addr, data, false)
    }

    /// What [`write_at`](Storage::write_at) writes at once, nothing saved (new space past the
    /// durable length; anything outside a bypassed flush), goes straight from the parts.
    /// Anything else is joined and goes through `write_at`'s rules.
    fn write_gather_at(&self, addr: Addr, parts: &[&[u8]]) -> io::Result<()> {
        let start = addr.get();
        let len = parts
            .iter()
            .fold(0u64, |n, p| n.saturating_add(p.len() as u64));
        if self.is_bypassed() {
            let st = self.state.lock();
            if !st.batching {
                return self.inner.write_gather_at(addr, parts);
            }
        } else {
            let mut st = self.state.lock();
            if start >= st.durable_len {
                let end = start.saturating_add(len);
                st.changed = true;
                if let Some(cut) = &mut st.cut {
                    *cut = (*cut).max(end);
                }
                return self.inner.write_gather_at(addr, parts);
            }
        }
        self.write(addr, &parts.concat(), false)
    }

    fn len(&self) -> io::Result<u64> {
        let st = self.state.lock();
        match st.cut {
            Some(cut) => Ok(cut),
            None => Ok(self.inner.len()?.max(st.held_end())),
        }
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        if self.is_bypassed() {
            let mut st = self.state.lock();
            // A cut lands after whatever the flush holds back (which must not undo it); a
            // growth changes no byte anyone holds, and goes at once.
            if len < st.held_end().max(self.inner.len()?) {
                self.drain(&mut st)?;
            }
            return self.inner.set_len(len);
        }
        let mut st = self.state.lock();
        let current = self.inner.len()?;
        if len == current && st.cut.is_none() {
            return Ok(());
        }
        st.changed = true;
        if len >= current {
            st.cut = None;
            return self.inner.set_len(len);
        }
        // A cut over the durable state: its bytes are saved first.
        let durable = st.durable_len;
        self.save(&mut st, len, current.min(durable))?;
        if st.batching {
            st.cut = Some(len);
            Ok(())
        } else {
            self.inner.set_len(len)
        }
    }

    fn sync(&self) -> io::Result<()> {
        if self.is_bypassed() {
            let mut st = self.state.lock();
            self.drain(&mut st)?;
        }
        self.inner.sync()
    }

    fn expect_growth_ahead(&self) {
        self.inner.expect_growth_ahead()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::storage::MemStorage;

    fn setup(durable: &[u8]) -> (MemStorage, MemStorage, Journaled) {
        let (file, journal) = (MemStorage::from_vec(durable.to_vec()), MemStorage::new());
        let j = Journaled::new(
            Arc::new(file.clone()),
            JournalPlace::Storage(Arc::new(journal.clone())),
            Durability::Sync,
        )
        .unwrap();
        (file, journal, j)
    }

    fn read(s: &dyn Storage, at: u64, n: usize) -> Vec<u8> {
        let mut b = vec![0u8; n];
        s.read_at(Addr(at), &mut b).unwrap();
        b
    }

    /// A storage that records each write's place and length, over memory.
    #[derive(Debug, Default)]
    struct Recorder {
        mem: MemStorage,
        writes: Mutex<Vec<(u64, usize)>>,
    }

    impl Storage for Recorder {
        fn read_at(&self, addr: Addr, buf: &mut [u8]) -> io::Result<()> {
            self.mem.read_at(addr, buf)
        }
        fn write_at(&self, addr: Addr, data: &[u8]) -> io::Result<()> {
            self.writes.lock().push((addr.get(), data.len()));
            self.mem.write_at(addr, data)
        }
        fn len(&self) -> io::Result<u64> {
            self.mem.len()
        }
        fn set_len(&self, len: u64) -> io::Result<()> {
            self.mem.set_len(len)
        }
        fn sync(&self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_bypassed_flush_writes_new_space_first_joined_then_the_rest_in_order() {
        let file = Arc::new(Recorder {
            mem: MemStorage::from_vec(vec![0u8; 100]),
            ..Recorder::default()
        });
        let j = Journaled::new(
            file.clone(),
            JournalPlace::Storage(Arc::new(MemStorage::new())),
            Durability::Flush,
        )
        .unwrap();
        j.bypass().unwrap();
        let mut model = vec![0u8; 100];
        let mut put = |at: usize, bytes: &[u8]| {
            if model.len() < at + bytes.len() {
                model.resize(at + bytes.len(), 0);
            }
            model[at..at + bytes.len()].copy_from_slice(bytes);
            j.write_at(Addr(at as u64), bytes).unwrap();
        };
        j.begin();
        // New space out of address order, a run that joins two, an in-place write between
        // them, one straddling the old end, and a rewrite of bytes already held.
        put(120, &[1; 10]);
        put(10, &[2; 5]);
        put(100, &[3; 10]);
        put(110, &[4; 10]);
        assert!(file.writes.lock().is_empty(), "held until the commit");
        // Its new part rewrites held bytes: what is held goes out first.
        put(95, &[5; 10]);
        put(20, &[6; 5]);
        put(112, &[7; 3]);
        assert_eq!(j.len().unwrap(), 130);
        // Growing the file changes nothing held.
        j.set_len(140).unwrap();
        assert_eq!(
            file.writes.lock().len(),
            1,
            "only the run sent out by the rewrite"
        );
        j.commit().unwrap();
        model.resize(140, 0);
        assert_eq!(file.mem.to_vec(), model);
        let writes = file.writes.lock().clone();
        // New space, joined and in address order, before every write in place, which keep
        // their order.
        assert_eq!(
            writes,
            vec![(100, 30), (100, 5), (112, 3), (10, 5), (95, 5), (20, 5)],
            "{writes:?}"
        );
        // Outside a flush, writes go straight through; a read inside one sends out what is
        // held, in order.
        file.writes.lock().clear();
        j.write_at(Addr(0), &[9]).unwrap();
        j.begin();
        j.write_at(Addr(150), &[8; 2]).unwrap();
        j.write_at(Addr(1), &[8]).unwrap();
        assert_eq!(read(&j, 0, 2), vec![9, 8]);
        j.commit().unwrap();
        assert_eq!(file.writes.lock().clone(), vec![(0, 1), (150, 2), (1, 1)]);
        // Later flushes join their new space in the buffer of an earlier run (kept, emptied):
        // nothing of the earlier run's bytes shows through.
        for round in 0..3u8 {
            file.writes.lock().clear();
            let at = 200 + 100 * u64::from(round);
            j.begin();
            j.write_at(Addr(at + 4), &[round + 20; 4]).unwrap();
            j.write_at(Addr(at), &[round + 10; 4]).unwrap();
            j.write_at(Addr(at + 8), &[round + 30; 2]).unwrap();
            j.commit().unwrap();
            assert_eq!(file.writes.lock().clone(), vec![(at, 10)]);
            let mut want = vec![round + 10; 4];
            want.extend([round + 20; 4]);
            want.extend([round + 30; 2]);
            assert_eq!(read(&j, at, 10), want);
        }
    }

    #[test]
    fn a_flush_defers_overwrites_and_reads_see_them() {
        let (file, journal, j) = setup(&[1; 64]);
        j.begin();
        j.write_at(Addr(8), &[2; 8]).unwrap();
        // New space is written at once; the overwrite waits, but reads see it.
        j.write_at(Addr(64), &[3; 8]).unwrap();
        assert_eq!(file.to_vec()[8..16], [1; 8]);
        assert_eq!(file.to_vec()[64..72], [3; 8]);
        assert_eq!(read(&j, 4, 8), [1, 1, 1, 1, 2, 2, 2, 2]);
        assert!(
            !journal.to_vec().is_empty(),
            "the original bytes are journaled"
        );
        j.commit().unwrap();
        assert_eq!(file.to_vec()[8..16], [2; 8]);
        assert!(
            journal.to_vec().is_empty(),
            "the commit removes the journal"
        );
        // The next epoch journals the same range again.
        j.write_at(Addr(8), &[4; 8]).unwrap();
        assert_eq!(file.to_vec()[8..16], [4; 8]);
        assert!(!journal.to_vec().is_empty());
    }

    #[test]
    fn recovery_restores_the_last_commit() {
        let (file, journal, j) = setup(&[1; 64]);
        // Between flushes: written through at once, journaled first.
        j.write_at(Addr(0), &[9; 4]).unwrap();
        j.write_at(Addr(60), &[9; 10]).unwrap();
        j.set_len(40).unwrap();
        j.begin();
        j.write_at(Addr(20), &[7; 4]).unwrap();
        drop(j); // A crash: no commit.
        let place = JournalPlace::Storage(Arc::new(journal.clone()));
        assert!(needs_recovery(&place).unwrap());
        let done = recover(&file, &place).unwrap().unwrap();
        assert_eq!(file.to_vec(), vec![1; 64]);
        assert_eq!(done.durable_len, 64);
        assert!(journal.to_vec().is_empty());
        assert!(!needs_recovery(&place).unwrap());
        assert_eq!(recover(&file, &place).unwrap(), None);
    }

    #[test]
    fn a_torn_record_ends_recovery_and_a_torn_header_means_nothing_happened() {
        let (file, journal, j) = setup(&[1; 32]);
        j.write_at(Addr(0), &[5; 4]).unwrap();
        j.write_at(Addr(16), &[6; 4]).unwrap();
        drop(j);
        // Tear the second record: the first is still applied.
        let mut jb = journal.to_vec();
        let last = jb.len() - 1;
        jb[last] ^= 0xff;
        let torn = MemStorage::from_vec(jb);
        let place = JournalPlace::Storage(Arc::new(torn));
        let done = recover(&file, &place).unwrap().unwrap();
        assert_eq!(done.records, 1);
        assert_eq!(&file.to_vec()[..4], &[1; 4]);
        // A header cut short: no record can follow it, so nothing was overwritten.
        let place = JournalPlace::Storage(Arc::new(MemStorage::from_vec(vec![b'H'; 20])));
        assert!(!needs_recovery(&place).unwrap());
        assert_eq!(recover(&file, &place).unwrap(), None);
    }

    #[test]
    fn a_sidecar_journal_exists_only_while_needed() {
        let dir = std::env::temp_dir().join(format!("h5c-journal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.h5");
        std::fs::write(&path, [1u8; 32]).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let place = JournalPlace::beside(&path);
        let JournalPlace::File(side) = &place else {
            unreachable!()
        };
        let side = side.clone();
        let j = Journaled::new(
            Arc::new(FileStorage::new(f)),
            place.clone(),
            Durability::Sync,
        )
        .unwrap();
        j.begin();
        j.write_at(Addr(32), &[2; 8]).unwrap();
        assert!(!side.exists(), "new space needs no journal");
        j.write_at(Addr(0), &[3; 8]).unwrap();
        assert!(side.exists());
        j.commit().unwrap();
        assert!(!side.exists());
        j.write_at(Addr(8), &[4; 8]).unwrap();
        drop(j);
        assert!(needs_recovery(&place).unwrap());
        let file = FileStorage::new(
            std::fs::File::options()
                .read(true)
                .write(true)
                .open(&path)
                .unwrap(),
        );
        recover(&file, &place).unwrap().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..8], &[3; 8]);
        assert_eq!(&bytes[8..16], &[1; 8]);
        assert!(!side.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
