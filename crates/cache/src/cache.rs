//! The metadata cache: typed entries by file address, flush dependencies, chunk proxies, CLOCK
//! eviction under a byte budget, verified reads with retries, statistics and the write trace.
//!
//! Concurrency: one `parking_lot::Mutex` guards the index (which entries are resident, their
//! flags, the dependency graph, statistics). Each entry lives in its own `Arc<RwLock<T>>`, so
//! readers of different (or the same) entries proceed in parallel once they hold the `Arc`, and
//! a miss reads the storage without holding the index lock. Writes of images (flush, eviction)
//! happen under the index lock: only the single writer does them.
//!
//! Lock order: an entry's read lock may be taken while holding the index lock (to encode it).
//! An entry's write lock is only ever held by an [`EntryMut`], whose entry is flagged
//! *protected* under the index lock before the write lock is taken and unflagged after it is
//! released; the cache never locks a protected entry, so an `EntryMut` may call back into the
//! cache. A thread must not protect an entry while it holds a read guard of that same entry.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::Duration;

use h5chunk_format::Addr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};

use parking_lot::{ArcRwLockWriteGuard, Mutex, MutexGuard, RawRwLock, RwLock, RwLockReadGuard};

use crate::alloc::Allocator;
use crate::entry::{CacheEntry, Key, ProxyId};
use crate::error::{Error, Result};
use crate::hash::IntMap;
use crate::stats::{CacheStats, TypeStats};
use crate::storage::Storage;
use crate::trace::{TraceEvent, WriteTrace};

/// How the cache behaves.
#[derive(Clone, Debug)]
pub struct CacheConfig {
    /// The byte budget: the sum of the image lengths of resident entries the cache tries to stay
    /// under by evicting. It can be exceeded while nothing is evictable (everything pinned,
    /// protected or blocked by dirty children), and by the entry just accessed, which is never
    /// evicted by its own access.
    pub max_bytes: usize,
    /// Attempts per load before a verification failure is reported (at least 1). libhdf5 uses 1
    /// by default and [`CacheConfig::SWMR_READ_ATTEMPTS`] for SWMR access.
    pub read_attempts: u32,
    /// The first back-off between attempts; it doubles after each retry.
    pub retry_initial_backoff: Duration,
    /// The longest back-off between two attempts.
    pub retry_max_backoff: Duration,
    /// No new attempt starts once this much time has passed since the first one.
    pub retry_max_total: Duration,
    /// Record a [`WriteTrace`] (for tests: it grows with every event).
    pub record_trace: bool,
}

impl CacheConfig {
    /// The metadata read attempts of a SWMR reader or writer, as libhdf5.
    pub const SWMR_READ_ATTEMPTS: u32 = 100;

    /// The configuration of a SWMR reader: 100 read attempts.
    pub fn swmr_reader() -> Self {
        CacheConfig {
            read_attempts: Self::SWMR_READ_ATTEMPTS,
            ..CacheConfig::default()
        }
    }
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            // libhdf5's default maximum metadata cache size. libhdf5 starts at 2 MiB and grows
            // toward 32 MiB while its hit rate is low (adaptive resize); a budget is a cap, not
            // an allocation, so this cache allows the maximum from the start.
            max_bytes: 32 << 20,
            read_attempts: 1,
            retry_initial_backoff: Duration::from_micros(1),
            retry_max_backoff: Duration::from_millis(10),
            retry_max_total: Duration::from_secs(2),
            record_trace: false,
        }
    }
}

/// Writes the dirty chunks that chunk proxies stand for; implemented by the chunk cache's owner
/// and called by [`MetadataCache::flush_with`] before any metadata is written.
pub trait ChunkFlusher {
    /// Write the chunks of `proxies` to storage. On `Ok` the cache marks every one of them
    /// clean (calling [`MetadataCache::chunk_written`] as well is harmless). The cache's index
    /// lock is not held during the call.
    fn flush_chunks(
        &mut self,
        proxies: &[ProxyId],
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;
}

impl<F> ChunkFlusher for F
where
    F: FnMut(&[ProxyId]) -> Result<(), Box<dyn std::error::Error + Send + Sync>>,
{
    fn flush_chunks(
        &mut self,
        proxies: &[ProxyId],
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self(proxies)
    }
}

/// What a flush did and what it had to leave dirty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use = "a flush can leave entries dirty; check `is_complete`"]
pub struct FlushReport {
    /// Images written.
    pub written: usize,
    /// Dirty entries left dirty: protected, or with a descendant that could not be written (a
    /// dirty proxy) or is protected.
    pub blocked: Vec<Addr>,
    /// Proxies still dirty.
    pub dirty_proxies: Vec<ProxyId>,
}

impl FlushReport {
    /// Whether nothing is left dirty.
    pub fn is_complete(&self) -> bool {
        self.blocked.is_empty() && self.dirty_proxies.is_empty()
    }
}

/// An entry as the cache stores it, with its type erased.
trait ErasedEntry: Any + Send + Sync {
    fn encode_into(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()>;
}

impl<T: CacheEntry> ErasedEntry for RwLock<T> {
    fn encode_into(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        self.read().encode(out)
    }
}

/// A resident entry and its flags.
/// A loaded entry: its value, its image's length, and where its checksum is with its bytes
/// (checksummed types).
type Loaded<T> = (T, usize, Option<(usize, [u8; 4])>);

struct Slot {
    value: Arc<dyn ErasedEntry>,
    type_name: &'static str,
    checksummed: bool,
    /// The length of the entry's space in the file; every image written must have it.
    len: usize,
    dirty: bool,
    pinned: bool,
    /// Held by an [`EntryMut`]: never locked, written or evicted by the cache meanwhile.
    protected: bool,
    /// The thread holding the [`EntryMut`]: its own `get` of the entry would wait for itself
    /// (a cyclic structure in a corrupt file leads there), so it is an error instead.
    protector: Option<std::thread::ThreadId>,
    /// The CLOCK reference bit: set by every access, cleared when the eviction hand passes.
    /// An entry is evicted when the hand finds it clear (accessed less recently than one sweep).
    /// Atomic: a hit sets it holding the index lock shared.
    referenced: AtomicBool,
    /// Where the image's checksum is and its 4 bytes, as loaded: what
    /// [`MetadataCache::mark_stale`] compares with the file's to keep an unchanged entry.
    tail: Option<(usize, [u8; 4])>,
    /// Marked by [`MetadataCache::mark_stale`]: checked against the file before its next use.
    stale: AtomicBool,
    /// Where the entry's type counts hits taken with the index lock shared: its place in
    /// `Inner::shared_hits` ([`NO_SHARED_HITS`]: none; its hits take the exclusive path).
    hits: u8,
}

/// [`Slot::hits`] of an entry whose type has no shared hit counter.
const NO_SHARED_HITS: u8 = u8::MAX;

/// A counter threads add to side by side: one cache line per stripe, a thread's stripe chosen
/// once per thread, so counting costs no shared write.
#[derive(Default)]
struct StripedCounter {
    stripes: [PaddedCount; STRIPES],
}

/// Stripes of a [`StripedCounter`].
const STRIPES: usize = 8;

#[derive(Default)]
#[repr(align(64))]
struct PaddedCount(AtomicU64);

impl std::fmt::Debug for StripedCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripedCounter").finish_non_exhaustive()
    }
}

impl StripedCounter {
    #[inline]
    fn add_one(&self) {
        // A constant-initialised thread local (no lazy-init state to check on every hit),
        // `usize::MAX` until the thread's first hit picks its stripe.
        thread_local! {
            static STRIPE: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
        }
        let mut i = STRIPE.get();
        if i == usize::MAX {
            i = Self::pick_stripe();
            STRIPE.set(i);
        }
        if let Some(c) = self.stripes.get(i) {
            c.0.fetch_add(1, AtomicOrdering::Relaxed);
        }
    }

    #[cold]
    fn pick_stripe() -> usize {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        std::thread::current().id().hash(&mut h);
        (h.finish() as usize) % STRIPES
    }

    /// The count, reset to zero.
    fn take(&self) -> u64 {
        self.stripes
            .iter()
            .map(|c| c.0.swap(0, AtomicOrdering::Relaxed))
            .fold(0, u64::saturating_add)
    }
}

/// I/O counted during one load.
#[derive(Default)]
struct LoadIo {
    reads: u64,
    bytes: u64,
    retries: u64,
}

/// Why one load attempt failed.
enum AttemptError {
    Io(std::io::Error),
    Format(h5chunk_format::Error),
}

/// The resident entries: a hash map for the lookups of every access (one probe, where an
/// ordered map walks several nodes), and the addresses in order for what needs an order (the
/// CLOCK hand, flush and listing order).
#[derive(Default)]
struct Entries {
    map: crate::IntMap<Addr, Slot>,
    order: BTreeSet<Addr>,
}

impl Entries {
    #[inline]
    fn get(&self, addr: &Addr) -> Option<&Slot> {
        self.map.get(addr)
    }
    #[inline]
    fn get_mut(&mut self, addr: &Addr) -> Option<&mut Slot> {
        self.map.get_mut(addr)
    }
    #[inline]
    fn contains_key(&self, addr: &Addr) -> bool {
        self.map.contains_key(addr)
    }
    fn insert(&mut self, addr: Addr, slot: Slot) -> Option<Slot> {
        self.order.insert(addr);
        self.map.insert(addr, slot)
    }
    fn remove(&mut self, addr: &Addr) -> Option<Slot> {
        self.order.remove(addr);
        self.map.remove(addr)
    }
    fn len(&self) -> usize {
        self.map.len()
    }
    /// Every entry, in address order.
    /// Every entry, in no particular order (one pass over the map, no lookups).
    fn iter_unordered(&self) -> impl Iterator<Item = (&Addr, &Slot)> {
        self.map.iter()
    }
    fn iter(&self) -> impl Iterator<Item = (&Addr, &Slot)> {
        self.order
            .iter()
            .filter_map(|a| self.map.get(a).map(|s| (a, s)))
    }
    /// Every address, in order.
    fn keys(&self) -> impl Iterator<Item = &Addr> {
        self.order.iter()
    }
    /// The first address at or after `from`, wrapping to the first of all.
    fn next_from(&self, from: Addr) -> Option<Addr> {
        self.order
            .range(from..)
            .next()
            .or_else(|| self.order.iter().next())
            .copied()
    }
}

/// One key's set of flush-dependency neighbours, sorted: a handful of keys in place (a node's
/// parent, a leaf's few proxies), spilling to the heap for an internal node's children.
#[derive(Debug, Default)]
struct KeySet(smallvec::SmallVec<[Key; 4]>);

/// The keys a walk of the graph has visited.
type KeySeen =
    std::collections::HashSet<Key, std::hash::BuildHasherDefault<crate::hash::IntHasher>>;

impl KeySet {
    fn contains(&self, k: &Key) -> bool {
        self.0.binary_search(k).is_ok()
    }
    /// Whether `k` was new.
    fn insert(&mut self, k: Key) -> bool {
        match self.0.binary_search(&k) {
            Ok(_) => false,
            Err(i) => {
                self.0.insert(i, k);
                true
            }
        }
    }
    /// Whether `k` was there.
    fn remove(&mut self, k: &Key) -> bool {
        match self.0.binary_search(k) {
            Ok(i) => {
                self.0.remove(i);
                true
            }
            Err(_) => false,
        }
    }
    /// Put `to` in the place of `from` (a moved entry): in place when the order allows it, as
    /// for a key's only parent.
    #[inline]
    fn replace(&mut self, from: &Key, to: Key) {
        // A key's only neighbour (a node's parent, above all: a moved internal node re-keys
        // each of its children's) needs no search.
        if let [only] = self.0.as_mut_slice()
            && *only == *from
        {
            *only = to;
            return;
        }
        self.replace_searched(from, to);
    }

    /// [`replace`](Self::replace) in a set of several keys.
    #[inline(never)]
    fn replace_searched(&mut self, from: &Key, to: Key) {
        let Ok(i) = self.0.binary_search(from) else {
            self.insert(to);
            return;
        };
        let fits = i
            .checked_sub(1)
            .is_none_or(|l| self.0.get(l).is_some_and(|k| *k < to))
            && self.0.get(i.saturating_add(1)).is_none_or(|k| to < *k);
        if fits {
            if let Some(slot) = self.0.get_mut(i) {
                *slot = to;
            }
        } else {
            self.0.remove(i);
            self.insert(to);
        }
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    fn iter(&self) -> std::slice::Iter<'_, Key> {
        self.0.iter()
    }
}

/// Everything behind the index lock.
#[derive(Default)]
struct Inner {
    entries: Entries,
    /// [`MetadataCache::mark_stale`] has marked entries (a SWMR reader's cache): lookups check
    /// for stale entries only then, so a writer's hits pay nothing for it.
    marked_stale: bool,
    /// The CLOCK hand: the address eviction looks at next (entries in address order, wrapping).
    /// Accesses only set a bit, so the bookkeeping of a hit is O(1) with no allocation.
    hand: Addr,
    bytes: usize,
    /// Bumped whenever the cache writes an image or inserts, moves or removes an entry, so a
    /// load that read the storage without the lock can tell that what it read may be stale.
    epoch: u64,
    /// The cache's generation (see [`MetadataCache::generation`]), shared with the cache so
    /// that it is read without the index lock.
    generation: Arc<AtomicU64>,
    /// Live proxies and whether each is dirty.
    proxies: BTreeMap<ProxyId, bool>,
    next_proxy: u64,
    /// The dependency graph over keys. It outlives residency: a clean entry can be evicted and
    /// reloaded without losing its dependencies; `remove` drops them.
    /// Hashed, not ordered: a SWMR writer's moves re-key a node's every edge once a flush, and
    /// an ordered map's searches cost most of that. Each set is kept sorted, so walks visit
    /// children in key order whatever the order the edges were added in.
    children: IntMap<Key, KeySet>,
    parents: IntMap<Key, KeySet>,
    /// Per-type statistics, a handful of types: a linear scan comparing the `&'static str`
    /// pointers first is cheaper than an ordered map on every access.
    stats: Vec<(&'static str, TypeStats)>,
    /// Hits counted holding the index lock shared (see `get_shared`), per type; added to
    /// `stats` when they are reported.
    shared_hits: Vec<(&'static str, StripedCounter)>,
    trace: Option<Vec<TraceEvent>>,
    swmr_write: bool,
    break_flush_order: bool,
    /// During a flush: images written in order, held while each starts where the last ended
    /// (see `Pending`).
    pending: Option<Pending>,
    /// The pending run's buffers between flushes, kept so that a flush does not grow new ones.
    spare: (Vec<u8>, Vec<(Addr, &'static str)>),
}

/// Metadata images a flush has written, in order, that lie end to end in the file: one
/// `write_at` for the run instead of one each. Joining only images that continue the run
/// keeps the order safe: a later image lies at a higher address, so a write cut short by a
/// kill leaves a prefix, the earlier images, in the file, never a later one without them.
struct Pending {
    at: Addr,
    bytes: Vec<u8>,
    /// The entries in the run, marked clean when written; dirty again if the write fails.
    entries: Vec<(Addr, &'static str)>,
}

/// The most bytes one joined write holds.
const MAX_JOINED_WRITE: usize = 1 << 20;

impl Inner {
    fn record(&mut self, ev: TraceEvent) {
        if let Some(t) = self.trace.as_mut() {
            t.push(ev);
        }
    }

    /// Update the statistics of `type_name` with `f`.
    /// The place of `type_name`'s shared hit counter in `shared_hits`, made on first use
    /// ([`NO_SHARED_HITS`] past the few types a file has).
    fn hit_counter(&mut self, type_name: &'static str) -> u8 {
        let at = (self.shared_hits.iter()).position(|(n, _)| std::ptr::eq(*n, type_name));
        let at = at.unwrap_or_else(|| {
            self.shared_hits
                .push((type_name, StripedCounter::default()));
            self.shared_hits.len().saturating_sub(1)
        });
        u8::try_from(at).unwrap_or(NO_SHARED_HITS)
    }

    fn count(&mut self, type_name: &'static str, f: impl FnOnce(&mut TypeStats)) {
        // Type names are `'static` constants: the pointer finds them (one pass, no string
        // compare on the hot path); the text is compared only when no pointer matches.
        let at = (self.stats.iter())
            .position(|(n, _)| std::ptr::eq(*n, type_name))
            .or_else(|| self.stats.iter().position(|(n, _)| *n == type_name));
        match at.and_then(|i| self.stats.get_mut(i)) {
            Some((_, st)) => f(st),
            None => {
                let mut st = TypeStats::default();
                f(&mut st);
                self.stats.push((type_name, st));
            }
        }
    }

    fn touch(&mut self, addr: Addr) {
        if let Some(slot) = self.entries.get_mut(&addr) {
            slot.referenced.store(true, AtomicOrdering::Relaxed);
        }
    }

    /// Note a write, insert, move or remove. Only equality of epochs matters, and 2^64 changes
    /// cannot happen, so wrapping never makes two different moments compare equal.
    fn bump_epoch(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
    }

    /// Something a copy of an entry's contents may depend on changed (see
    /// [`MetadataCache::generation`]). Release: whoever reads the new generation sees the change.
    fn bump_generation(&self) {
        self.generation.fetch_add(1, AtomicOrdering::Release);
    }

    /// Account `len` more resident bytes. The sum is a budget estimate that `take_slot` lowers
    /// with `saturating_sub`; saturating here keeps it monotone instead of wrapping to small.
    fn add_bytes(&mut self, len: usize) {
        self.bytes = self.bytes.saturating_add(len);
    }

    fn slot(&self, addr: Addr) -> Result<&Slot> {
        self.entries.get(&addr).ok_or_else(|| Error::NotResident {
            key: Key::Entry(addr),
        })
    }

    fn slot_mut(&mut self, addr: Addr) -> Result<&mut Slot> {
        self.entries
            .get_mut(&addr)
            .ok_or_else(|| Error::NotResident {
                key: Key::Entry(addr),
            })
    }

    /// Whether `key` itself is dirty; a non-resident entry is clean.
    fn is_dirty(&self, key: Key) -> bool {
        match key {
            Key::Entry(a) => self.entries.get(&a).is_some_and(|s| s.dirty),
            Key::Proxy(p) => self.proxies.get(&p).copied().unwrap_or(false),
        }
    }

    fn children_of(&self, key: Key) -> Vec<Key> {
        self.children
            .get(&key)
            .map(|c| c.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Whether `key` is a protected entry. A protected entry may become dirty at any moment
    /// (its holder is modifying it), so for blocking its parents it counts as dirty.
    fn is_protected(&self, key: Key) -> bool {
        matches!(key, Key::Entry(a) if self.entries.get(&a).is_some_and(|s| s.protected))
    }

    /// Whether any descendant of `key` is dirty or protected: then `key` may be neither written
    /// nor evicted.
    fn is_blocked(&self, key: Key) -> bool {
        let mut seen = KeySeen::default();
        let mut stack = self.children_of(key);
        while let Some(k) = stack.pop() {
            if !seen.insert(k) {
                continue;
            }
            if self.is_dirty(k) || self.is_protected(k) {
                return true;
            }
            if let Some(cs) = self.children.get(&k) {
                stack.extend(cs.iter().copied());
            }
        }
        false
    }

    /// Whether `to` is reachable from `from` along parent → child edges.
    fn reaches(&self, from: Key, to: Key) -> bool {
        let mut seen = KeySeen::default();
        let mut stack: smallvec::SmallVec<[Key; 16]> = smallvec::smallvec![from];
        while let Some(k) = stack.pop() {
            if k == to {
                return true;
            }
            if seen.insert(k)
                && let Some(cs) = self.children.get(&k)
            {
                stack.extend(cs.iter().copied());
            }
        }
        false
    }

    fn drop_edges(&mut self, key: Key) {
        for c in self.children.remove(&key).unwrap_or_default().0 {
            if let Some(p) = self.parents.get_mut(&c) {
                p.remove(&key);
                if p.is_empty() {
                    self.parents.remove(&c);
                }
            }
        }
        for p in self.parents.remove(&key).unwrap_or_default().0 {
            if let Some(c) = self.children.get_mut(&p) {
                c.remove(&key);
                if c.is_empty() {
                    self.children.remove(&p);
                }
            }
        }
    }

    fn has_edges(&self, key: Key) -> bool {
        self.children.contains_key(&key) || self.parents.contains_key(&key)
    }

    fn set_dirty(&mut self, addr: Addr) -> Result<()> {
        self.slot_mut(addr)?.dirty = true;
        self.record(TraceEvent::Dirtied(Key::Entry(addr)));
        Ok(())
    }

    /// Drop a resident entry from memory (it must be clean, or being removed).
    fn take_slot(&mut self, addr: Addr) -> Option<Slot> {
        let slot = self.entries.remove(&addr)?;
        self.bytes = self.bytes.saturating_sub(slot.len);
        Some(slot)
    }

    /// The resident entries that are clean and held by nobody (not pinned, not protected).
    fn clean_unheld(&self) -> Vec<Addr> {
        self.entries
            .iter()
            .filter(|(_, s)| !s.dirty && !s.pinned && !s.protected)
            .map(|(&a, _)| a)
            .collect()
    }

    fn evict_slot(&mut self, addr: Addr) {
        if let Some(slot) = self.take_slot(addr) {
            self.bump_generation();
            self.count(slot.type_name, |st| {
                st.evictions = st.evictions.saturating_add(1);
            });
            self.record(TraceEvent::Evicted(Key::Entry(addr)));
        }
    }

    /// Encode the entry at `addr` and write its image in one `write_at`. The caller has checked
    /// that the entry is not protected (its lock is free to read) and, unless the broken order
    /// is requested for a test, that no descendant is dirty.
    fn write_entry(&mut self, storage: &dyn Storage, addr: Addr) -> Result<()> {
        let slot = self.slot(addr)?;
        let (type_name, len) = (slot.type_name, slot.len);
        if self.swmr_write && !slot.checksummed {
            return Err(Error::NotChecksummed { type_name, addr });
        }
        let value = Arc::clone(&slot.value);
        let encode = |out: &mut Vec<u8>| -> Result<()> {
            let start = out.len();
            let encoded = value.encode_into(out).map_err(|source| Error::Encode {
                type_name,
                addr,
                source,
            });
            let actual = out.len().saturating_sub(start);
            if encoded.is_err() || actual != len {
                out.truncate(start);
            }
            encoded?;
            if actual != len {
                return Err(Error::ImageLength {
                    type_name,
                    addr,
                    expected: len,
                    actual,
                });
            }
            Ok(())
        };
        let Some(p) = &mut self.pending else {
            let mut image = Vec::with_capacity(len);
            encode(&mut image)?;
            storage
                .write_at(addr, &image)
                .map_err(|source| Error::EntryIo {
                    type_name,
                    addr,
                    op: "writing",
                    source,
                })?;
            self.bump_epoch();
            return self.written(addr, type_name, len);
        };
        // Joined to the run when it continues it; else the run is written and this image
        // starts the next one, in the same buffer. Either way it is encoded in place.
        let joins = p.at.get().checked_add(p.bytes.len() as u64) == Some(addr.get())
            && p.bytes.len().saturating_add(len) <= MAX_JOINED_WRITE;
        if !joins {
            self.write_pending(storage)?;
        }
        if let Some(p) = &mut self.pending {
            if p.bytes.is_empty() {
                p.at = addr;
            }
            p.bytes.reserve(len);
            encode(&mut p.bytes)?;
            p.entries.push((addr, type_name));
        }
        self.bump_epoch();
        self.written(addr, type_name, len)
    }

    /// The entry at `addr` was written (or joined to the pending run): clean, counted, traced.
    fn written(&mut self, addr: Addr, type_name: &'static str, len: usize) -> Result<()> {
        let key = Key::Entry(addr);
        // Only a traced run looks at them (the write-order checker).
        let dirty_children: Vec<Key> = if self.trace.is_some() {
            self.children_of(key)
                .into_iter()
                .filter(|&c| self.is_dirty(c))
                .collect()
        } else {
            Vec::new()
        };
        if let Some(slot) = self.entries.get_mut(&addr) {
            slot.dirty = false;
        }
        self.count(type_name, |st| {
            st.writes = st.writes.saturating_add(1);
            st.bytes_written = st.bytes_written.saturating_add(len as u64);
        });
        self.record(TraceEvent::Written {
            key,
            type_name,
            len,
            dirty_children,
        });
        Ok(())
    }

    /// Write the joined run of images, if any, keeping it (and the next ones) joinable. On
    /// failure its entries are dirty again: nothing they hold is lost.
    fn write_pending(&mut self, storage: &dyn Storage) -> Result<()> {
        let Some(p) = self.pending.as_mut() else {
            return Ok(());
        };
        if p.bytes.is_empty() {
            return Ok(());
        }
        let written = storage.write_at(p.at, &p.bytes);
        let (at, entries) = (p.at, std::mem::take(&mut p.entries));
        p.bytes.clear();
        if let Err(source) = written {
            let type_name = entries.first().map_or("metadata", |&(_, t)| t);
            for (a, _) in entries {
                if let Some(slot) = self.entries.get_mut(&a) {
                    slot.dirty = true;
                }
            }
            return Err(Error::EntryIo {
                type_name,
                addr: at,
                op: "writing",
                source,
            });
        }
        Ok(())
    }

    /// Write `root` and every dirty descendant, children first; `settled` memoizes which keys
    /// are known clean with no dirty descendant (`true`) or known stuck (`false`). Returns
    /// whether `root` ended up settled.
    ///
    /// The walk is an explicit-stack post-order DFS: the graph is acyclic (cycles are refused
    /// when dependencies are added and moves cannot create any), so it terminates, and its
    /// depth is not limited by the thread's stack.
    fn settle(
        &mut self,
        storage: &dyn Storage,
        root: Key,
        settled: &mut IntMap<Key, bool>,
    ) -> Result<bool> {
        struct Frame {
            key: Key,
            children: std::vec::IntoIter<Key>,
            ok: bool,
        }
        if let Some(&done) = settled.get(&root) {
            return Ok(done);
        }
        let mut stack = vec![Frame {
            key: root,
            children: self.children_of(root).into_iter(),
            ok: true,
        }];
        while let Some(top) = stack.last_mut() {
            if let Some(child) = top.children.next() {
                match settled.get(&child) {
                    Some(true) => {}
                    Some(false) => top.ok = false,
                    // Without children of its own (a leaf of the graph: most entries and every
                    // proxy), a key settles by itself, without a frame or a memo: settling it
                    // again costs a lookup (it was written the first time).
                    None if !self.children.contains_key(&child) => {
                        if !self.settle_self(storage, child)? {
                            top.ok = false;
                        }
                    }
                    None => {
                        let children = self.children_of(child).into_iter();
                        stack.push(Frame {
                            key: child,
                            children,
                            ok: true,
                        });
                    }
                }
                continue;
            }
            let Some(frame) = stack.pop() else { break };
            let done = frame.ok && self.settle_self(storage, frame.key)?;
            settled.insert(frame.key, done);
            if !done && let Some(parent) = stack.last_mut() {
                parent.ok = false;
            }
        }
        Ok(settled.get(&root).copied().unwrap_or(false))
    }

    /// With every descendant of `key` settled: write `key` if it is a dirty entry that can be
    /// written. Returns whether `key` is now settled: clean and not protected (a protected
    /// entry may be dirtied by its holder at any moment, so its parents wait for it).
    fn settle_self(&mut self, storage: &dyn Storage, key: Key) -> Result<bool> {
        match key {
            Key::Proxy(p) => Ok(!self.proxies.get(&p).copied().unwrap_or(false)),
            Key::Entry(a) => match self.entries.get(&a) {
                None => Ok(true),
                Some(s) if s.protected => Ok(false),
                Some(s) if !s.dirty => Ok(true),
                Some(_) => {
                    self.write_entry(storage, a)?;
                    Ok(true)
                }
            },
        }
    }

    /// Write every dirty entry that can be written (see [`MetadataCache::flush`]), joining
    /// images that lie end to end into one write.
    fn flush(&mut self, storage: &dyn Storage) -> Result<FlushReport> {
        // The deliberately wrong order writes every image alone, as the crash tests that must
        // catch it expect (joined, a parent and the child after it could land together).
        if !self.break_flush_order {
            let (mut bytes, mut entries) = std::mem::take(&mut self.spare);
            bytes.clear();
            entries.clear();
            self.pending = Some(Pending {
                at: Addr(0),
                bytes,
                entries,
            });
        }
        let report = self.flush_entries(storage);
        let last = self.write_pending(storage);
        if let Some(p) = self.pending.take()
            && p.bytes.capacity() <= MAX_JOINED_WRITE
        {
            self.spare = (p.bytes, p.entries);
        }
        let report = report?;
        last?;
        Ok(report)
    }

    fn flush_entries(&mut self, storage: &dyn Storage) -> Result<FlushReport> {
        let mut dirty: Vec<Addr> = Vec::new();
        // What may hold a dirty entry back: dirty and protected entries, dirty proxies.
        let mut blockers: Vec<Key> = Vec::new();
        for (&a, s) in self.entries.iter_unordered() {
            if s.dirty {
                dirty.push(a);
            }
            if s.dirty || s.protected {
                blockers.push(Key::Entry(a));
            }
        }
        dirty.sort_unstable();
        blockers.extend(
            (self.proxies.iter())
                .filter(|&(_, &d)| d)
                .map(|(&p, _)| Key::Proxy(p)),
        );
        let mut report = FlushReport::default();
        if self.break_flush_order {
            report.written = self.flush_parents_first(storage, &dirty)?;
        } else {
            self.settle_upward(storage, blockers)?;
            report.written = dirty
                .iter()
                .filter(|&&a| !self.is_dirty(Key::Entry(a)))
                .count();
        }
        report.blocked = dirty
            .into_iter()
            .filter(|&a| self.is_dirty(Key::Entry(a)))
            .collect();
        report.dirty_proxies = self
            .proxies
            .iter()
            .filter(|(_, d)| **d)
            .map(|(&p, _)| p)
            .collect();
        Ok(report)
    }

    /// Write every dirty entry whose descendants are all settled, children first: Kahn's
    /// order over `blockers` and their ancestors, found walking up the graph. A key is
    /// settled once its children among them are (the others have nothing dirty or protected
    /// below them); the lowest address goes first among those ready, so that new nodes,
    /// allocated in order, join into long writes. Walking down from each dirty entry instead
    /// visits every child of every internal node on every flush, clean or not.
    fn settle_upward(&mut self, storage: &dyn Storage, blockers: Vec<Key>) -> Result<()> {
        // Per key of the set, its children in the set not settled yet.
        let mut waiting: IntMap<Key, usize> = IntMap::default();
        let mut seen: KeySeen = blockers.iter().copied().collect();
        let mut stack = blockers;
        let mut all: Vec<Key> = stack.clone();
        while let Some(k) = stack.pop() {
            if let Some(ps) = self.parents.get(&k) {
                for &p in ps.iter() {
                    let w = waiting.entry(p).or_insert(0);
                    *w = w.saturating_add(1);
                    if seen.insert(p) {
                        stack.push(p);
                        all.push(p);
                    }
                }
            }
        }
        let mut ready: BTreeSet<Key> = all
            .into_iter()
            .filter(|k| !waiting.contains_key(k))
            .collect();
        while let Some(k) = ready.pop_first() {
            if !self.settle_self(storage, k)? {
                // Blocked: its ancestors stay dirty, for a later flush.
                continue;
            }
            if let Some(ps) = self.parents.get(&k) {
                for &p in ps.iter() {
                    if let Some(w) = waiting.get_mut(&p) {
                        *w = w.saturating_sub(1);
                        if *w == 0 {
                            ready.insert(p);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The deliberately wrong order of the `testing` feature: a pre-order walk from the entries
    /// without parents, writing each dirty entry before its children.
    fn flush_parents_first(&mut self, storage: &dyn Storage, dirty: &[Addr]) -> Result<usize> {
        let mut roots: Vec<Key> = dirty
            .iter()
            .map(|&a| Key::Entry(a))
            .filter(|k| !self.parents.contains_key(k))
            .collect();
        // Entries whose parents are all clean are reached from their clean ancestors.
        // In key order (the map is hashed), so the wrong order is the same on every run.
        let mut clean_roots: Vec<Key> = self
            .children
            .keys()
            .filter(|k| !self.parents.contains_key(k))
            .copied()
            .collect();
        clean_roots.sort_unstable();
        roots.extend(clean_roots);
        let mut seen = BTreeSet::new();
        let mut written = 0usize;
        let mut stack: Vec<Key> = roots.into_iter().rev().collect();
        while let Some(k) = stack.pop() {
            if !seen.insert(k) {
                continue;
            }
            if let Key::Entry(a) = k
                && self
                    .entries
                    .get(&a)
                    .is_some_and(|s| s.dirty && !s.protected)
            {
                self.write_entry(storage, a)?;
                // At most one write per dirty entry, so this cannot saturate.
                written = written.saturating_add(1);
            }
            stack.extend(self.children_of(k).into_iter().rev());
        }
        // Dirty entries in no dependency at all.
        for &a in dirty {
            if self
                .entries
                .get(&a)
                .is_some_and(|s| s.dirty && !s.protected)
            {
                self.write_entry(storage, a)?;
                // At most one write per dirty entry, so this cannot saturate.
                written = written.saturating_add(1);
            }
        }
        Ok(written)
    }

    /// Evict entries until the budget holds or nothing more can go, by CLOCK: the hand walks
    /// the entries in address order (wrapping), clears the reference bit of an entry accessed
    /// since its last pass and evicts one found clear. Pinned, protected and blocked entries
    /// stay; a dirty entry is written first. `keep` is the entry whose access triggered this and
    /// is not evicted by it. Two full sweeps without an eviction mean nothing can go.
    fn make_space(&mut self, storage: &dyn Storage, max: usize, keep: Option<Addr>) -> Result<()> {
        let mut idle: usize = 0;
        while self.bytes > max && idle <= self.entries.len().saturating_mul(2) {
            let Some(addr) = self.entries.next_from(self.hand) else {
                break;
            };
            self.hand = Addr(addr.get().wrapping_add(1));
            idle = idle.saturating_add(1);
            if Some(addr) == keep {
                continue;
            }
            let Some(slot) = self.entries.get_mut(&addr) else {
                continue;
            };
            if slot.pinned || slot.protected {
                continue;
            }
            if slot.referenced.swap(false, AtomicOrdering::Relaxed) {
                continue;
            }
            let dirty = slot.dirty;
            if self.is_blocked(Key::Entry(addr)) {
                continue;
            }
            if dirty {
                self.write_entry(storage, addr)?;
            }
            self.evict_slot(addr);
            idle = 0;
        }
        Ok(())
    }

    /// Re-key the dependencies of `from` to `to`.
    fn move_edges(&mut self, from: Key, to: Key) {
        if let Some(cs) = self.children.remove(&from) {
            for c in cs.iter() {
                if let Some(ps) = self.parents.get_mut(c) {
                    ps.replace(&from, to);
                }
            }
            self.children.insert(to, cs);
        }
        if let Some(ps) = self.parents.remove(&from) {
            for p in ps.iter() {
                if let Some(cs) = self.children.get_mut(p) {
                    cs.replace(&from, to);
                }
            }
            self.parents.insert(to, ps);
        }
    }
}

/// The metadata cache of one open file.
pub struct MetadataCache {
    storage: Arc<dyn Storage>,
    config: CacheConfig,
    /// Shared by hits (see `get_shared`); alone for everything else.
    inner: RwLock<crate::CacheLine<Inner>>,
    alloc: Mutex<Allocator>,
    /// The allocator's EOA, readable without its lock (see [`MetadataCache::eoa`]).
    eoa: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The storage's length when last asked: a load that ends within it needs no `stat` of the
    /// file (one system call per load otherwise). A load that reaches past it asks again, so a
    /// file that grows (a SWMR writer's, or this writer's own) is seen at its new length.
    known_len: std::sync::atomic::AtomicU64,
    /// The generation (see [`MetadataCache::generation`]); `Inner` holds the same counter.
    generation: Arc<AtomicU64>,
}

/// Caches made so far: each cache's generations start in a range of their own.
static CACHES: AtomicU64 = AtomicU64::new(0);

impl fmt::Debug for MetadataCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.write();
        f.debug_struct("MetadataCache")
            .field("storage", &self.storage)
            .field("entries", &inner.entries.len())
            .field("bytes", &inner.bytes)
            .field("proxies", &inner.proxies.len())
            .field("config", &self.config)
            .finish()
    }
}

/// A shared, read-only handle on a cached entry. It stays valid after the entry is evicted (it
/// is then a detached snapshot of a clean entry).
pub struct EntryRef<T> {
    addr: Addr,
    value: Arc<RwLock<T>>,
}

impl<T: CacheEntry> EntryRef<T> {
    /// The entry's file address.
    pub fn addr(&self) -> Addr {
        self.addr
    }

    /// Read the entry. Blocks while a [`EntryMut`] of it is alive on another thread (and
    /// deadlocks if one is alive on this thread).
    pub fn read(&self) -> RwLockReadGuard<'_, T> {
        self.value.read()
    }
}

impl<T> Clone for EntryRef<T> {
    fn clone(&self) -> Self {
        EntryRef {
            addr: self.addr,
            value: Arc::clone(&self.value),
        }
    }
}

impl<T: CacheEntry> fmt::Debug for EntryRef<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EntryRef({} @ {})", T::TYPE_NAME, self.addr)
    }
}

/// Exclusive access to a protected entry. While it lives the entry is never written, moved,
/// removed or evicted. Mutable access marks the entry dirty; dropping the guard unprotects it.
pub struct EntryMut<'c, T: CacheEntry> {
    // Fields drop in declaration order: the entry's lock is released before `release` takes
    // the index lock, as the lock order requires.
    guard: ArcRwLockWriteGuard<RawRwLock, T>,
    release: Unprotect<'c>,
}

/// Unprotects an entry (and marks it dirty if it was modified) when dropped.
struct Unprotect<'c> {
    cache: &'c MetadataCache,
    addr: Addr,
    dirty: bool,
}

impl Drop for Unprotect<'_> {
    fn drop(&mut self) {
        let mut inner = self.cache.inner.write();
        // After the entry's lock is released (the guard drops first): a copy made from the
        // entry before the change carries an older generation.
        inner.bump_generation();
        if let Some(slot) = inner.entries.get_mut(&self.addr) {
            slot.protected = false;
            slot.protector = None;
            if self.dirty {
                slot.dirty = true;
                inner.record(TraceEvent::Dirtied(Key::Entry(self.addr)));
            }
        }
    }
}

impl<T: CacheEntry> EntryMut<'_, T> {
    /// The entry's file address.
    pub fn addr(&self) -> Addr {
        self.release.addr
    }

    /// Mark the entry dirty without touching it.
    pub fn mark_dirty(&mut self) {
        self.release.dirty = true;
    }

    /// Change the length of the entry's space (the caller has allocated it); marks it dirty.
    pub fn resize(&mut self, new_len: usize) -> Result<()> {
        self.release.dirty = true;
        self.release.cache.resize(self.release.addr, new_len)
    }
}

impl<T: CacheEntry> Deref for EntryMut<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T: CacheEntry> DerefMut for EntryMut<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.release.dirty = true;
        &mut self.guard
    }
}

impl<T: CacheEntry> fmt::Debug for EntryMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EntryMut({} @ {})", T::TYPE_NAME, self.release.addr)
    }
}

/// A `get` of an entry the calling thread holds protected would wait for itself (a cyclic
/// structure in a corrupt file leads there): an error instead.
/// Inline: every hit asks, and an entry is rarely protected (the thread's id is asked only
/// then).
#[inline(always)]
fn not_own_protect(slot: &Slot, addr: Addr) -> Result<()> {
    if slot.protected {
        return protected_by_me(slot, addr);
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn protected_by_me(slot: &Slot, addr: Addr) -> Result<()> {
    if slot.protector == Some(std::thread::current().id()) {
        return Err(Error::Protected {
            type_name: slot.type_name,
            addr,
        });
    }
    Ok(())
}

fn downcast<T: CacheEntry>(addr: Addr, slot: &Slot) -> Result<Arc<RwLock<T>>> {
    let any: Arc<dyn Any + Send + Sync> = slot.value.clone();
    any.downcast::<RwLock<T>>()
        .map_err(|_| Error::TypeMismatch {
            addr,
            expected: T::TYPE_NAME,
            found: slot.type_name,
        })
}

impl MetadataCache {
    /// A cache over `storage`. The allocator's EOA starts at the storage's length; set it from
    /// the superblock with [`MetadataCache::allocator`] when opening an existing file.
    pub fn new(storage: Arc<dyn Storage>, config: CacheConfig) -> Result<Self> {
        let eoa = storage.len()?;
        // Each cache's generations start at a multiple of 2^40 of its own, so a copy made
        // from one cache never passes for current in another (2^40 changes apart).
        let first = CACHES
            .fetch_add(1, AtomicOrdering::Relaxed)
            .wrapping_shl(40);
        let generation = Arc::new(AtomicU64::new(first));
        let inner = Inner {
            trace: config.record_trace.then(Vec::new),
            generation: Arc::clone(&generation),
            ..Inner::default()
        };
        let alloc = Allocator::new(Addr(eoa));
        Ok(MetadataCache {
            storage,
            config,
            inner: RwLock::new(crate::CacheLine(inner)),
            eoa: alloc.shared_eoa(),
            alloc: Mutex::new(alloc),
            known_len: std::sync::atomic::AtomicU64::new(eoa),
            generation,
        })
    }

    /// The cache's generation: a number that changes whenever an entry's contents may change
    /// or an entry leaves the cache. It moves on when an entry is protected for modification
    /// and again when it is unprotected (after the change), and on every insertion, resize,
    /// move, removal, eviction and [`mark_stale`](Self::mark_stale) (a SWMR reader's
    /// refresh). A structure may keep copies of entries it read while the generation stays
    /// what it was before it read them: reading it costs one load, no lock.
    ///
    /// Generations of different caches differ, so a copy from one is never taken for current
    /// in another.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(AtomicOrdering::Acquire)
    }

    /// The storage's length, at least `end` if the storage is that long: the length known from
    /// the last ask when it covers `end`, else asked afresh.
    fn storage_len_for(&self, end: u64) -> std::io::Result<u64> {
        use std::sync::atomic::Ordering::Relaxed;
        let known = self.known_len.load(Relaxed);
        if end <= known {
            return Ok(known);
        }
        let len = self.storage.len()?;
        self.known_len.store(len, Relaxed);
        Ok(len)
    }

    /// The storage under the cache.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// The configuration.
    pub fn config(&self) -> &CacheConfig {
        &self.config
    }

    /// The file-space allocator (its own lock, independent of the index lock).
    pub fn allocator(&self) -> MutexGuard<'_, Allocator> {
        self.alloc.lock()
    }

    /// The end-of-allocation address, without taking the allocator's lock (a read that only
    /// checks bounds against it).
    pub fn eoa(&self) -> Addr {
        Addr(self.eoa.load(std::sync::atomic::Ordering::Acquire))
    }

    /// Enter or leave SWMR-write mode: only checksummed entries may then be written, and the
    /// allocator defers the reuse of freed space.
    pub fn set_swmr_write(&self, on: bool) {
        self.inner.write().swmr_write = on;
        self.alloc.lock().set_swmr_write(on);
    }

    /// Write parents before their children from now on, ignoring every dependency: a broken
    /// cache, to prove that [`check_write_order`](crate::check_write_order) fires.
    #[cfg(feature = "testing")]
    pub fn testing_break_flush_order(&self, on: bool) {
        self.inner.write().break_flush_order = on;
    }

    // ----- typed access -------------------------------------------------------------------

    /// The entry of type `T` at `addr`, loaded and verified if not resident.
    pub fn get<T: CacheEntry>(&self, addr: Addr, ctx: &T::Context) -> Result<EntryRef<T>> {
        if let Some(value) = self.get_shared::<T>(addr)? {
            return Ok(EntryRef { addr, value });
        }
        let value = self.fetch::<T>(addr, ctx, |slot| not_own_protect(slot, addr))?;
        Ok(EntryRef { addr, value })
    }

    /// `f` on the entry of type `T` at `addr` (loaded if needed), read-locked. A hit runs `f`
    /// with no reference count taken: lookups on several threads share nothing they write.
    /// `f` must not wait for the cache's writers (it may read other entries).
    pub fn read_with<T: CacheEntry, R>(
        &self,
        addr: Addr,
        ctx: &T::Context,
        f: impl FnOnce(&T) -> R,
    ) -> Result<R> {
        {
            // Recursive: `f` may read other entries while a writer waits for the index.
            let inner = self.inner.read_recursive();
            if let Some(slot) = inner.entries.get(&addr)
                && !slot.stale.load(AtomicOrdering::Acquire)
                && let Some((_, hits)) = inner.shared_hits.get(usize::from(slot.hits))
            {
                not_own_protect(slot, addr)?;
                let any: &(dyn Any + Send + Sync) = &*slot.value;
                let lock = any
                    .downcast_ref::<RwLock<T>>()
                    .ok_or_else(|| Error::TypeMismatch {
                        addr,
                        expected: T::TYPE_NAME,
                        found: slot.type_name,
                    })?;
                // An entry a writer holds is waited for below, without the index lock (its
                // writer needs the index to give it back).
                if let Some(entry) = lock.try_read_recursive() {
                    if !slot.referenced.load(AtomicOrdering::Relaxed) {
                        slot.referenced.store(true, AtomicOrdering::Relaxed);
                    }
                    hits.add_one();
                    return Ok(f(&entry));
                }
            }
        }
        let e = self.get::<T>(addr, ctx)?;
        let entry = e.read();
        Ok(f(&entry))
    }

    /// [`read_with`](Self::read_with) with the decoding context made by `make_ctx` only if
    /// the entry must be loaded (as [`get_with`](Self::get_with)): a hit takes no reference
    /// count and builds no context (a v2 B-tree node's context holds two shared pointers).
    /// The hit path is `read_with`'s, written out again: shared through a helper returning
    /// the closure on a miss, both paths ran more instructions (callgrind).
    pub fn read_with_lazy<T: CacheEntry, R>(
        &self,
        addr: Addr,
        make_ctx: impl FnOnce() -> T::Context,
        f: impl FnOnce(&T) -> R,
    ) -> Result<R>
    where
        T::Context: Sized,
    {
        {
            // Recursive: `f` may read other entries while a writer waits for the index.
            let inner = self.inner.read_recursive();
            if let Some(slot) = inner.entries.get(&addr)
                && !slot.stale.load(AtomicOrdering::Acquire)
                && let Some((_, hits)) = inner.shared_hits.get(usize::from(slot.hits))
            {
                not_own_protect(slot, addr)?;
                let any: &(dyn Any + Send + Sync) = &*slot.value;
                let lock = any
                    .downcast_ref::<RwLock<T>>()
                    .ok_or_else(|| Error::TypeMismatch {
                        addr,
                        expected: T::TYPE_NAME,
                        found: slot.type_name,
                    })?;
                // An entry a writer holds is waited for below, without the index lock (its
                // writer needs the index to give it back).
                if let Some(entry) = lock.try_read_recursive() {
                    if !slot.referenced.load(AtomicOrdering::Relaxed) {
                        slot.referenced.store(true, AtomicOrdering::Relaxed);
                    }
                    hits.add_one();
                    return Ok(f(&entry));
                }
            }
        }
        let e = self.get_with::<T>(addr, make_ctx)?;
        let entry = e.read();
        Ok(f(&entry))
    }

    /// A hit, found holding the index lock shared: lookups on several threads do not wait
    /// for each other. `None` on a miss (or for an entry whose type has no shared counter).
    fn get_shared<T: CacheEntry>(&self, addr: Addr) -> Result<Option<Arc<RwLock<T>>>> {
        let inner = self.inner.read();
        let Some(slot) = inner.entries.get(&addr) else {
            return Ok(None);
        };
        if slot.stale.load(AtomicOrdering::Acquire) {
            return Ok(None);
        }
        let Some((_, hits)) = inner.shared_hits.get(usize::from(slot.hits)) else {
            return Ok(None);
        };
        let value = downcast::<T>(addr, slot)?;
        not_own_protect(slot, addr)?;
        if !slot.referenced.load(AtomicOrdering::Relaxed) {
            slot.referenced.store(true, AtomicOrdering::Relaxed);
        }
        hits.add_one();
        Ok(Some(value))
    }

    /// [`get`](Self::get) with the decoding context made by `make_ctx` only if the entry must
    /// be loaded: a hit pays nothing for a context that holds shared pointers.
    pub fn get_with<T: CacheEntry>(
        &self,
        addr: Addr,
        make_ctx: impl FnOnce() -> T::Context,
    ) -> Result<EntryRef<T>>
    where
        T::Context: Sized,
    {
        if let Some(value) = self.get_shared::<T>(addr)? {
            return Ok(EntryRef { addr, value });
        }
        let value =
            self.fetch_with::<T, T::Context>(addr, make_ctx, |slot| not_own_protect(slot, addr))?;
        Ok(EntryRef { addr, value })
    }

    /// The entry of type `T` at `addr` (loaded if needed), protected for modification.
    pub fn protect<T: CacheEntry>(&self, addr: Addr, ctx: &T::Context) -> Result<EntryMut<'_, T>> {
        let value = self.fetch::<T>(addr, ctx, |slot| {
            if slot.protected {
                return Err(Error::Protected {
                    type_name: slot.type_name,
                    addr,
                });
            }
            slot.protected = true;
            slot.protector = Some(std::thread::current().id());
            Ok(())
        })?;
        // Before any change: a copy made from now on is checked again once it is unprotected.
        self.generation.fetch_add(1, AtomicOrdering::Release);
        let guard = value.write_arc();
        Ok(EntryMut {
            guard,
            release: Unprotect {
                cache: self,
                addr,
                dirty: false,
            },
        })
    }

    /// Look `addr` up, loading it on a miss; `on_resident` runs under the index lock once the
    /// entry is resident (to flag it protected atomically with the lookup).
    fn fetch<T: CacheEntry>(
        &self,
        addr: Addr,
        ctx: &T::Context,
        on_resident: impl FnOnce(&mut Slot) -> Result<()>,
    ) -> Result<Arc<RwLock<T>>> {
        self.fetch_with::<T, &T::Context>(addr, || ctx, on_resident)
    }

    /// [`fetch`](Self::fetch) with the decoding context made only on a miss (a hit needs none).
    fn fetch_with<T: CacheEntry, X: std::borrow::Borrow<T::Context>>(
        &self,
        addr: Addr,
        make_ctx: impl FnOnce() -> X,
        on_resident: impl FnOnce(&mut Slot) -> Result<()>,
    ) -> Result<Arc<RwLock<T>>> {
        let epoch = {
            let mut inner = self.inner.write();
            if inner.marked_stale
                && inner
                    .entries
                    .get(&addr)
                    .is_some_and(|s| s.stale.load(AtomicOrdering::Acquire))
            {
                self.revalidate(&mut inner, addr);
            }
            if let Some(slot) = inner.entries.get_mut(&addr) {
                let value = downcast::<T>(addr, slot)?;
                on_resident(slot)?;
                // The CLOCK bit, on the slot just found (no second search).
                slot.referenced.store(true, AtomicOrdering::Relaxed);
                inner.count(T::TYPE_NAME, |st| st.hits = st.hits.saturating_add(1));
                return Ok(value);
            }
            inner.epoch
        };
        // A miss: read without the index lock, so other lookups proceed meanwhile.
        let owned_ctx = make_ctx();
        let ctx = owned_ctx.borrow();
        let (mut loaded, io) = self.load::<T>(addr, ctx);
        let mut inner = self.inner.write();
        Self::count_load(&mut inner, T::TYPE_NAME, &io, loaded.is_ok(), true);
        if !inner.entries.contains_key(&addr) && inner.epoch != epoch {
            // The cache wrote or removed something while we read: what we read may predate it
            // (or be torn by it). Reading again under the lock cannot race with the cache's own
            // writes, which all happen under it.
            let (again, io) = self.load::<T>(addr, ctx);
            Self::count_load(&mut inner, T::TYPE_NAME, &io, again.is_ok(), false);
            loaded = again;
        }
        let inner = &mut **inner;
        let value = match inner.entries.get_mut(&addr) {
            // Another thread loaded or inserted it meanwhile: theirs wins.
            Some(slot) => {
                let value = downcast::<T>(addr, slot)?;
                on_resident(slot)?;
                value
            }
            None => {
                let (entry, len, tail) = loaded?;
                let value = Arc::new(RwLock::new(entry));
                let hits = inner.hit_counter(T::TYPE_NAME);
                let mut slot = Slot {
                    value: value.clone(),
                    type_name: T::TYPE_NAME,
                    checksummed: T::CHECKSUMMED,
                    len,
                    dirty: false,
                    pinned: false,
                    protected: false,
                    protector: None,
                    referenced: AtomicBool::new(true),
                    tail,
                    stale: AtomicBool::new(false),
                    hits,
                };
                on_resident(&mut slot)?;
                inner.entries.insert(addr, slot);
                inner.add_bytes(len);
                value
            }
        };
        inner.touch(addr);
        inner.make_space(&*self.storage, self.config.max_bytes, Some(addr))?;
        Ok(value)
    }

    fn count_load(inner: &mut Inner, type_name: &'static str, io: &LoadIo, ok: bool, miss: bool) {
        // Statistics: saturate rather than overflow.
        inner.count(type_name, |st| {
            st.misses = st.misses.saturating_add(u64::from(miss));
            st.reads = st.reads.saturating_add(io.reads);
            st.bytes_read = st.bytes_read.saturating_add(io.bytes);
            st.retries = st.retries.saturating_add(io.retries);
            if !ok {
                st.read_failures = st.read_failures.saturating_add(1);
            }
        });
    }

    /// Read and verify the entry at `addr`, retrying verification failures of checksummed types
    /// with a capped exponential back-off within the configured bounds.
    fn load<T: CacheEntry>(&self, addr: Addr, ctx: &T::Context) -> (Result<Loaded<T>>, LoadIo) {
        let cfg = &self.config;
        let max_attempts = cfg.read_attempts.max(1);
        let start = crate::clock::now();
        let mut backoff = cfg.retry_initial_backoff;
        let mut io = LoadIo::default();
        let mut attempt = 0u32;
        loop {
            // The loop returns once `attempt >= max_attempts` (a `u32`), so this cannot saturate.
            attempt = attempt.saturating_add(1);
            let source = match self.load_once::<T>(addr, ctx, &mut io) {
                Ok(v) => return (Ok(v), io),
                Err(AttemptError::Io(source)) => {
                    let err = Error::EntryIo {
                        type_name: T::TYPE_NAME,
                        addr,
                        op: "reading",
                        source,
                    };
                    return (Err(err), io);
                }
                Err(AttemptError::Format(e)) => e,
            };
            let elapsed = crate::clock::since(start);
            // Only a checksummed image can tell a torn read from a real one, so only those are
            // retried: for others a retry could not change the verdict.
            if !T::CHECKSUMMED || attempt >= max_attempts || elapsed >= cfg.retry_max_total {
                let err = Error::Read {
                    type_name: T::TYPE_NAME,
                    addr,
                    attempts: attempt,
                    source,
                };
                return (Err(err), io);
            }
            io.retries = io.retries.saturating_add(1);
            crate::clock::pause(backoff.min(cfg.retry_max_total.saturating_sub(elapsed)));
            backoff = backoff.saturating_mul(2).min(cfg.retry_max_backoff);
        }
    }

    /// One attempt: speculative read, length from the prefix, full re-read if longer, decode.
    fn load_once<T: CacheEntry>(
        &self,
        addr: Addr,
        ctx: &T::Context,
        io: &mut LoadIo,
    ) -> Result<Loaded<T>, AttemptError> {
        let truncated = |needed: usize, available: usize| {
            AttemptError::Format(h5chunk_format::Error::Truncated {
                structure: T::TYPE_NAME,
                at: addr,
                needed: needed as u64,
                available: available as u64,
            })
        };
        let wanted = T::initial_load_len(ctx);
        let end = |len: usize| addr.get().saturating_add(len as u64);
        // A SWMR reader reads past the superblock's EOA (docs/format/file-format.md §7.4), so the bound is
        // the storage's length. Lengths read from the image are checked against it before they
        // size a buffer.
        let file_len = self
            .storage_len_for(end(wanted))
            .map_err(AttemptError::Io)?;
        let mut avail = usize::try_from(file_len.saturating_sub(addr.get())).unwrap_or(usize::MAX);
        let initial = wanted.min(avail);
        if initial == 0 {
            return Err(truncated(wanted, 0));
        }
        // The image is read into this thread's scratch buffer: no zeroed allocation per load.
        let mut scratch = Scratch::take();
        let buf = scratch.sized(initial).map_err(AttemptError::Io)?;
        self.storage.read_at(addr, buf).map_err(AttemptError::Io)?;
        // I/O statistics: saturate rather than overflow.
        io.reads = io.reads.saturating_add(1);
        io.bytes = io.bytes.saturating_add(initial as u64);
        let full = T::final_load_len(buf, addr, ctx).map_err(AttemptError::Format)?;
        if full > avail {
            // The length known may be stale (the file grew since): ask once more.
            let file_len = self.storage_len_for(end(full)).map_err(AttemptError::Io)?;
            avail = usize::try_from(file_len.saturating_sub(addr.get())).unwrap_or(usize::MAX);
        }
        if full == 0 || full > avail {
            return Err(truncated(full.max(1), avail));
        }
        let buf = if full > initial {
            // Re-read the whole image in one read, so it comes from one moment of the file.
            let buf = scratch.sized(full).map_err(AttemptError::Io)?;
            self.storage.read_at(addr, buf).map_err(AttemptError::Io)?;
            io.reads = io.reads.saturating_add(1);
            io.bytes = io.bytes.saturating_add(full as u64);
            buf
        } else {
            scratch.sized(full).map_err(AttemptError::Io)?
        };
        let entry = T::decode(buf, addr, ctx).map_err(AttemptError::Format)?;
        let tail = entry.checksum_at(full).and_then(|at| {
            let t = buf.get(at..at.checked_add(4)?)?;
            Some((at, <[u8; 4]>::try_from(t).ok()?))
        });
        Ok((entry, full, tail))
    }

    /// Insert a new entry at `addr` (space the caller has allocated). It starts dirty.
    pub fn insert<T: CacheEntry>(&self, addr: Addr, entry: T) -> Result<()> {
        let len = entry.image_len();
        addr.checked_add(len as u64).ok_or(Error::AddressOverflow {
            addr,
            len: len as u64,
        })?;
        let mut inner = self.inner.write();
        if let Some(slot) = inner.entries.get(&addr) {
            return Err(Error::AlreadyResident {
                type_name: slot.type_name,
                addr,
            });
        }
        let hits = inner.hit_counter(T::TYPE_NAME);
        inner.bump_generation();
        inner.entries.insert(
            addr,
            Slot {
                value: Arc::new(RwLock::new(entry)),
                type_name: T::TYPE_NAME,
                checksummed: T::CHECKSUMMED,
                len,
                dirty: true,
                pinned: false,
                protected: false,
                protector: None,
                referenced: AtomicBool::new(true),
                tail: None,
                stale: AtomicBool::new(false),
                hits,
            },
        );
        inner.add_bytes(len);
        inner.bump_epoch();
        inner.touch(addr);
        inner.count(T::TYPE_NAME, |st| st.inserts = st.inserts.saturating_add(1));
        inner.record(TraceEvent::Dirtied(Key::Entry(addr)));
        inner.make_space(&*self.storage, self.config.max_bytes, Some(addr))
    }

    /// Mark the entry at `addr` dirty.
    pub fn mark_dirty(&self, addr: Addr) -> Result<()> {
        self.inner.write().set_dirty(addr)
    }

    /// Change the length of the entry's space (the caller allocated the new space); marks it
    /// dirty. Allowed while the entry is protected.
    pub fn resize(&self, addr: Addr, new_len: usize) -> Result<()> {
        let mut inner = self.inner.write();
        let slot = inner.slot_mut(addr)?;
        let old = std::mem::replace(&mut slot.len, new_len);
        inner.bump_generation();
        inner.bytes = inner.bytes.saturating_sub(old);
        inner.add_bytes(new_len);
        inner.set_dirty(addr)?;
        inner.make_space(&*self.storage, self.config.max_bytes, Some(addr))
    }

    /// Move the entry at `from` to `to` (space the caller allocated; the caller frees `from`).
    /// Its dependencies follow it, and it is dirty at its new address.
    pub fn move_entry(&self, from: Addr, to: Addr) -> Result<()> {
        let mut inner = self.inner.write();
        let slot = inner.slot(from)?;
        if slot.protected {
            return Err(Error::Protected {
                type_name: slot.type_name,
                addr: from,
            });
        }
        if from == to {
            return inner.set_dirty(from);
        }
        if let Some(other) = inner.entries.get(&to) {
            return Err(Error::AlreadyResident {
                type_name: other.type_name,
                addr: to,
            });
        }
        if inner.has_edges(Key::Entry(to)) {
            return Err(Error::DestinationInUse { addr: to });
        }
        let Some(slot) = inner.take_slot(from) else {
            return Err(Error::NotResident {
                key: Key::Entry(from),
            });
        };
        inner.add_bytes(slot.len);
        inner.entries.insert(to, slot);
        inner.move_edges(Key::Entry(from), Key::Entry(to));
        inner.bump_epoch();
        inner.bump_generation();
        inner.touch(to);
        inner.record(TraceEvent::Moved { from, to });
        inner.set_dirty(to)
    }

    /// Drop the entry at `addr` without writing it, with its dependencies (the structure it
    /// belonged to no longer references it; the caller frees its space). Not an error if it is
    /// not resident.
    pub fn remove(&self, addr: Addr) -> Result<()> {
        let mut inner = self.inner.write();
        if let Some(slot) = inner.entries.get(&addr)
            && slot.protected
        {
            return Err(Error::Protected {
                type_name: slot.type_name,
                addr,
            });
        }
        inner.take_slot(addr);
        inner.drop_edges(Key::Entry(addr));
        inner.bump_epoch();
        inner.bump_generation();
        inner.record(TraceEvent::Removed(Key::Entry(addr)));
        Ok(())
    }

    /// Pin the entry: it stays in memory until unpinned.
    pub fn pin(&self, addr: Addr) -> Result<()> {
        let mut inner = self.inner.write();
        let slot = inner.slot_mut(addr)?;
        if slot.pinned {
            return Err(Error::Pinned {
                type_name: slot.type_name,
                addr,
            });
        }
        slot.pinned = true;
        inner.record(TraceEvent::Pinned(Key::Entry(addr)));
        Ok(())
    }

    /// Unpin the entry.
    pub fn unpin(&self, addr: Addr) -> Result<()> {
        let mut inner = self.inner.write();
        let slot = inner.slot_mut(addr)?;
        if !slot.pinned {
            return Err(Error::NotPinned {
                type_name: slot.type_name,
                addr,
            });
        }
        slot.pinned = false;
        inner.record(TraceEvent::Unpinned(Key::Entry(addr)));
        inner.make_space(&*self.storage, self.config.max_bytes, None)
    }

    /// Evict the entry at `addr` now, writing it first if dirty. An error if it is pinned,
    /// protected, or blocked by a dirty descendant.
    pub fn evict(&self, addr: Addr) -> Result<()> {
        let mut inner = self.inner.write();
        let slot = inner.slot(addr)?;
        let (type_name, pinned, protected, dirty) =
            (slot.type_name, slot.pinned, slot.protected, slot.dirty);
        if protected {
            return Err(Error::Protected { type_name, addr });
        }
        if pinned {
            return Err(Error::Pinned { type_name, addr });
        }
        if inner.is_blocked(Key::Entry(addr)) {
            return Err(Error::Blocked {
                key: Key::Entry(addr),
            });
        }
        if dirty {
            inner.write_entry(&*self.storage, addr)?;
        }
        inner.evict_slot(addr);
        Ok(())
    }

    /// Evict every clean entry that may go (not pinned, protected or blocked), as a SWMR
    /// reader's refresh does. Returns how many were evicted.
    pub fn evict_clean(&self) -> usize {
        let mut inner = self.inner.write();
        let addrs = inner.clean_unheld();
        let mut n = 0usize;
        for a in addrs {
            if !inner.is_blocked(Key::Entry(a)) {
                inner.evict_slot(a);
                // At most `addrs.len()`, so this cannot saturate.
                n = n.saturating_add(1);
            }
        }
        n
    }

    /// A SWMR reader's refresh that re-reads only what changed: every clean entry with a
    /// checksum is kept but marked stale, the others are evicted. A stale entry is checked
    /// before its next use by reading the 4 bytes of its checksum in the file
    /// ([`CacheEntry::checksum_at`](crate::CacheEntry::checksum_at)): unchanged, it is used as
    /// it is; changed, it is read again. A writer changes
    /// a block in place only with a new checksum (or moves it), so 4 bytes tell. How many
    /// entries were marked.
    pub fn mark_stale(&self) -> usize {
        let mut inner = self.inner.write();
        inner.marked_stale = true;
        inner.bump_generation();
        let addrs = inner.clean_unheld();
        let mut n = 0usize;
        for a in addrs {
            let keep = inner
                .entries
                .get(&a)
                .is_some_and(|s| s.checksummed && s.tail.is_some());
            if keep {
                if let Some(s) = inner.entries.get(&a) {
                    s.stale.store(true, AtomicOrdering::Release);
                }
                n = n.saturating_add(1);
            } else if !inner.is_blocked(Key::Entry(a)) {
                inner.evict_slot(a);
            }
        }
        n
    }

    /// Check the stale entry at `addr` against the file (see [`mark_stale`](Self::mark_stale)):
    /// kept if its image still ends in the same 4 bytes, evicted otherwise (or on any doubt).
    fn revalidate(&self, inner: &mut Inner, addr: Addr) {
        let Some(slot) = inner.entries.get(&addr) else {
            return;
        };
        let (type_name, len, tail) = (slot.type_name, slot.len, slot.tail);
        let mut now = [0u8; 4];
        let same = match tail {
            Some((off, t)) if off.saturating_add(4) <= len => {
                match addr.get().checked_add(off as u64) {
                    Some(at) => self.storage.read_at(Addr(at), &mut now).is_ok() && now == t,
                    None => false,
                }
            }
            _ => false,
        };
        inner.count(type_name, |st| {
            st.reads = st.reads.saturating_add(1);
            st.bytes_read = st.bytes_read.saturating_add(4);
        });
        if same {
            if let Some(slot) = inner.entries.get(&addr) {
                slot.stale.store(false, AtomicOrdering::Release);
            }
        } else {
            inner.evict_slot(addr);
        }
    }

    // ----- flush dependencies and proxies --------------------------------------------------

    /// `parent` may not be written (nor evicted) while `child`, or anything below it, is dirty.
    /// A child may have several parents; a dependency that would close a cycle is refused.
    ///
    /// The graph is over keys, not resident entries: an entry need not be cached to take part
    /// (one that is not cached is clean), so a structure can link a parent to a child that an
    /// eviction has just written out. Proxies must be live.
    pub fn add_flush_dependency(
        &self,
        parent: impl Into<Key>,
        child: impl Into<Key>,
    ) -> Result<()> {
        let (parent, child) = (parent.into(), child.into());
        let mut inner = self.inner.write();
        for k in [parent, child] {
            if let Key::Proxy(p) = k
                && !inner.proxies.contains_key(&p)
            {
                return Err(Error::UnknownProxy(p));
            }
        }
        // An existing edge is found in O(1); only a new one pays for the cycle search (index
        // crates re-add the edges of a path on every descent).
        if inner
            .children
            .get(&parent)
            .is_some_and(|c| c.contains(&child))
        {
            return Err(Error::DependencyExists { parent, child });
        }
        // A proxy has no children, so an edge to one cannot close a cycle.
        // A key without children (a proxy, a leaf node) cannot reach `parent`: no search.
        if parent == child || (inner.children.contains_key(&child) && inner.reaches(child, parent))
        {
            return Err(Error::DependencyCycle { parent, child });
        }
        inner.children.entry(parent).or_default().insert(child);
        inner.parents.entry(child).or_default().insert(parent);
        inner.record(TraceEvent::DependencyAdded { parent, child });
        Ok(())
    }

    /// Remove a dependency added with [`add_flush_dependency`](Self::add_flush_dependency).
    pub fn remove_flush_dependency(
        &self,
        parent: impl Into<Key>,
        child: impl Into<Key>,
    ) -> Result<()> {
        let (parent, child) = (parent.into(), child.into());
        let mut inner = self.inner.write();
        let removed = inner
            .children
            .get_mut(&parent)
            .is_some_and(|c| c.remove(&child));
        if !removed {
            return Err(Error::NoSuchDependency { parent, child });
        }
        if inner.children.get(&parent).is_some_and(KeySet::is_empty) {
            inner.children.remove(&parent);
        }
        if let Some(ps) = inner.parents.get_mut(&child) {
            ps.remove(&parent);
            if ps.is_empty() {
                inner.parents.remove(&child);
            }
        }
        inner.record(TraceEvent::DependencyRemoved { parent, child });
        Ok(())
    }

    /// The children of `key`.
    pub fn flush_children(&self, key: impl Into<Key>) -> Vec<Key> {
        self.inner.write().children_of(key.into())
    }

    /// The parents of `key`.
    pub fn flush_parents(&self, key: impl Into<Key>) -> Vec<Key> {
        let inner = self.inner.write();
        inner
            .parents
            .get(&key.into())
            .map(|p| p.iter().copied().collect())
            .unwrap_or_default()
    }

    /// A new chunk proxy, dirty until [`chunk_written`](Self::chunk_written).
    pub fn create_proxy(&self) -> ProxyId {
        let mut inner = self.inner.write();
        let id = ProxyId(inner.next_proxy);
        // One id per call: 2^64 proxies cannot be created, so this never actually wraps.
        inner.next_proxy = inner.next_proxy.wrapping_add(1);
        inner.proxies.insert(id, true);
        inner.record(TraceEvent::Dirtied(Key::Proxy(id)));
        id
    }

    /// The proxy's chunk was modified again in the chunk cache.
    pub fn mark_proxy_dirty(&self, id: ProxyId) -> Result<()> {
        let mut inner = self.inner.write();
        let dirty = inner.proxies.get_mut(&id).ok_or(Error::UnknownProxy(id))?;
        *dirty = true;
        inner.record(TraceEvent::Dirtied(Key::Proxy(id)));
        Ok(())
    }

    /// The proxy's chunk has reached storage: parents that waited only for it may be written.
    pub fn chunk_written(&self, id: ProxyId) -> Result<()> {
        let mut inner = self.inner.write();
        let dirty = inner.proxies.get_mut(&id).ok_or(Error::UnknownProxy(id))?;
        *dirty = false;
        inner.record(TraceEvent::Cleaned(Key::Proxy(id)));
        Ok(())
    }

    /// Forget a proxy and its dependencies (its chunk left the chunk cache, or was deleted).
    pub fn remove_proxy(&self, id: ProxyId) -> Result<()> {
        let mut inner = self.inner.write();
        inner.proxies.remove(&id).ok_or(Error::UnknownProxy(id))?;
        inner.drop_edges(Key::Proxy(id));
        inner.record(TraceEvent::Removed(Key::Proxy(id)));
        Ok(())
    }

    /// The proxies whose chunks are not written yet.
    pub fn dirty_proxies(&self) -> Vec<ProxyId> {
        let inner = self.inner.write();
        inner
            .proxies
            .iter()
            .filter(|(_, d)| **d)
            .map(|(&p, _)| p)
            .collect()
    }

    // ----- flushing -----------------------------------------------------------------------

    /// Write every dirty entry that can be written, children before parents. Entries waiting
    /// for a dirty proxy (or for a protected entry) stay dirty and are listed in the report.
    pub fn flush(&self) -> Result<FlushReport> {
        let mut inner = self.inner.write();
        let report = inner.flush(&*self.storage)?;
        // Entries that were dirty or blocked may be evictable now.
        inner.make_space(&*self.storage, self.config.max_bytes, None)?;
        Ok(report)
    }

    /// Have `chunks` write every dirty proxy's chunk first, then flush all metadata: the order
    /// a dataset flush needs (chunk data, then the index blocks that point to it).
    pub fn flush_with(&self, chunks: &mut dyn ChunkFlusher) -> Result<FlushReport> {
        let dirty = self.dirty_proxies();
        if !dirty.is_empty() {
            chunks
                .flush_chunks(&dirty)
                .map_err(|source| Error::ChunkFlush { source })?;
            let mut inner = self.inner.write();
            for id in dirty {
                if let Some(d) = inner.proxies.get_mut(&id) {
                    *d = false;
                    inner.record(TraceEvent::Cleaned(Key::Proxy(id)));
                }
            }
        }
        self.flush()
    }

    /// Write the entry at `addr` and its dirty descendants, children first. Returns whether the
    /// entry is now clean (false if a dirty proxy or protected entry blocks it).
    pub fn flush_entry(&self, addr: Addr) -> Result<bool> {
        let mut inner = self.inner.write();
        let mut settled = IntMap::default();
        inner.settle(&*self.storage, Key::Entry(addr), &mut settled)
    }

    /// Make every completed write durable.
    pub fn sync(&self) -> Result<()> {
        Ok(self.storage.sync()?)
    }

    // ----- introspection ------------------------------------------------------------------

    /// Whether an entry is cached at `addr`.
    pub fn is_resident(&self, addr: Addr) -> bool {
        self.inner.write().entries.contains_key(&addr)
    }

    /// Whether `key` (an entry or a proxy) is dirty.
    pub fn is_dirty(&self, key: impl Into<Key>) -> bool {
        self.inner.write().is_dirty(key.into())
    }

    /// Whether the entry at `addr` is pinned.
    pub fn is_pinned(&self, addr: Addr) -> bool {
        self.inner
            .write()
            .entries
            .get(&addr)
            .is_some_and(|s| s.pinned)
    }

    /// Whether `key` has a dirty or protected descendant (so it can be neither written nor
    /// evicted).
    pub fn is_blocked(&self, key: impl Into<Key>) -> bool {
        self.inner.write().is_blocked(key.into())
    }

    /// The addresses of the resident entries, in address order.
    pub fn resident(&self) -> Vec<Addr> {
        self.inner.write().entries.keys().copied().collect()
    }

    /// The sum of the image lengths of the resident entries.
    pub fn resident_bytes(&self) -> usize {
        self.inner.write().bytes
    }

    /// A snapshot of the per-type statistics.
    pub fn stats(&self) -> CacheStats {
        let mut inner = self.inner.write();
        let shared: Vec<(&'static str, u64)> = inner
            .shared_hits
            .iter()
            .map(|(n, c)| (*n, c.take()))
            .collect();
        for (name, hits) in shared {
            inner.count(name, |st| st.hits = st.hits.saturating_add(hits));
        }
        CacheStats {
            by_type: inner.stats.iter().copied().collect(),
        }
    }

    /// Zero the statistics.
    pub fn reset_stats(&self) {
        let mut inner = self.inner.write();
        inner.stats.clear();
        for (_, c) in &inner.shared_hits {
            c.take();
        }
    }

    /// The events recorded since the last call (empty unless
    /// [`CacheConfig::record_trace`] is set).
    pub fn take_trace(&self) -> WriteTrace {
        let mut inner = self.inner.write();
        WriteTrace {
            events: inner.trace.as_mut().map(std::mem::take).unwrap_or_default(),
        }
    }
}

/// Largest scratch buffer a thread keeps between loads; a larger image's buffer is freed.
const SCRATCH_KEEP: usize = 1 << 20;

thread_local! {
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A thread's load buffer, taken for one load and given back on drop (a load inside a load
/// takes a fresh one).
struct Scratch(Vec<u8>);

impl Scratch {
    fn take() -> Scratch {
        Scratch(SCRATCH.with(|s| s.take()))
    }

    /// The buffer at exactly `len` bytes. Bytes kept from an earlier load are overwritten by
    /// the read that follows; only growth is zeroed.
    ///
    /// The length comes from the file (checked against the storage's length only): a buffer
    /// the process cannot have is an out-of-memory I/O error, not an abort.
    fn sized(&mut self, len: usize) -> std::io::Result<&mut [u8]> {
        if let Some(more) = len.checked_sub(self.0.len()) {
            self.0.try_reserve_exact(more).map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::OutOfMemory,
                    format!("a metadata image of {len} bytes does not fit in memory"),
                )
            })?;
        }
        self.0.resize(len, 0);
        Ok(&mut self.0)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.0.capacity() <= SCRATCH_KEEP {
            let buf = std::mem::take(&mut self.0);
            // During thread teardown the slot may be gone: the buffer is then just freed.
            let _ = SCRATCH.try_with(|s| s.set(buf));
        }
    }
}
