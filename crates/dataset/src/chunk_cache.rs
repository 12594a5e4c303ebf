//! The raw-data chunk cache of one dataset: write-back, LRU under a byte budget, keyed by
//! scaled chunk coordinates packed into log2-sized bit fields (the chunk-index paper, §II.C).
//!
//! A key's field widths depend only on how many chunks a dimension has had, rounded up to a
//! power of two, so extending a dimension changes no key until its chunk count crosses a power
//! of two; only then are the cached entries re-keyed.

use smallvec::SmallVec;

/// Scaled chunk coordinates, inline up to rank 4 (no allocation per chunk).
pub(crate) type Coords = SmallVec<[u64; 4]>;

/// libhdf5 2.0's default chunk cache size per dataset.
pub const DEFAULT_BUDGET: usize = 8 << 20;

/// Bytes each cached chunk costs besides its data (key, coordinates, LRU and map entries), so
/// that a cache of tiny chunks is bounded by its real memory, not only by chunk bytes.
const ENTRY_OVERHEAD: usize = 256;

/// Packs scaled coordinates into one integer with `bits[u]` bits for dimension `u`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KeyPacker {
    bits: Vec<u32>,
}

impl KeyPacker {
    /// Widths for chunk grids up to `extent[u]` chunks per dimension.
    pub fn new(extent: &[u64]) -> KeyPacker {
        KeyPacker {
            bits: extent.iter().map(|&n| bits_for(n)).collect(),
        }
    }

    /// Whether coordinates below `extent` still fit the current widths.
    pub fn covers(&self, extent: &[u64]) -> bool {
        self.bits
            .iter()
            .zip(extent)
            .all(|(&b, &n)| bits_for(n) <= b)
    }

    /// The packed key, or `None` if `scaled` does not fit.
    pub fn pack(&self, scaled: &[u64]) -> Option<u128> {
        let mut key = 0u128;
        let mut used = 0u32;
        for (&b, &s) in self.bits.iter().zip(scaled) {
            if b < 64 && s >> b != 0 {
                return None;
            }
            used = used.checked_add(b).filter(|&u| u <= 128)?;
            key = key.checked_shl(b).unwrap_or(0) | u128::from(s);
        }
        Some(key)
    }
}

/// Bits for coordinates `0..n`: `ceil(log2(n))`, at least 1.
fn bits_for(n: u64) -> u32 {
    // `leading_zeros` is at most 64: the subtraction is exact.
    u64::BITS
        .saturating_sub(n.saturating_sub(1).leading_zeros())
        .max(1)
}

type KeyMap<V> = h5chunk_cache::IntMap<u128, V>;

/// No slot: the end of the LRU list.
const NIL: usize = usize::MAX;

/// One cached chunk.
#[derive(Debug)]
pub(crate) struct Cached {
    pub scaled: Coords,
    /// The whole chunk, unfiltered, in the file's byte order.
    pub data: Vec<u8>,
    pub dirty: bool,
}

impl Cached {
    /// What the entry counts against the budget.
    fn cost(&self) -> usize {
        // The data is in memory, so its length is far below `usize::MAX`.
        self.data.len().saturating_add(ENTRY_OVERHEAD)
    }
}

/// A slab slot: a chunk and its neighbours in the LRU list (most recent at the head).
#[derive(Debug)]
struct Node {
    key: u128,
    chunk: Cached,
    prev: usize,
    next: usize,
}

/// The cache: a hash map from packed key to slab slot, and an intrusive doubly linked LRU list
/// through the slab, so that a hit, an insert and an eviction are O(1) with no allocation
/// besides the chunk's own.
#[derive(Debug)]
pub(crate) struct ChunkCache {
    packer: KeyPacker,
    map: KeyMap<usize>,
    slab: Vec<Option<Node>>,
    free: Vec<usize>,
    head: usize,
    tail: usize,
    bytes: usize,
    budget: usize,
    /// Chunks whose coordinates do not fit a packed key (grids of more than 2^128 chunks)
    /// bypass the cache.
    pub misses_unpacked: u64,
    /// Per dimension, the size up to which the keys need no re-packing (see `fit_dims`;
    /// empty until it first runs).
    room_dims: SmallVec<[u64; 4]>,
    /// This cache among every one this process made (see `repeat_miss`).
    id: u64,
}

/// The next chunk cache's `id`.
static NEXT_CACHE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl ChunkCache {
    pub fn new(extent: &[u64], budget: usize) -> ChunkCache {
        ChunkCache {
            packer: KeyPacker::new(extent),
            map: KeyMap::default(),
            slab: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            bytes: 0,
            budget,
            misses_unpacked: 0,
            room_dims: SmallVec::new(),
            id: NEXT_CACHE_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    fn node(&self, i: usize) -> Option<&Node> {
        self.slab.get(i).and_then(Option::as_ref)
    }

    fn node_mut(&mut self, i: usize) -> Option<&mut Node> {
        self.slab.get_mut(i).and_then(Option::as_mut)
    }

    /// Take slot `i` out of the LRU list.
    fn unlink(&mut self, i: usize) {
        let Some((prev, next)) = self.node(i).map(|n| (n.prev, n.next)) else {
            return;
        };
        match self.node_mut(prev) {
            Some(p) => p.next = next,
            None => self.head = next,
        }
        match self.node_mut(next) {
            Some(n) => n.prev = prev,
            None => self.tail = prev,
        }
    }

    /// Put slot `i` at the head of the LRU list (most recently used).
    fn push_front(&mut self, i: usize) {
        let head = self.head;
        if let Some(n) = self.node_mut(i) {
            n.prev = NIL;
            n.next = head;
        }
        match self.node_mut(head) {
            Some(h) => h.prev = i,
            None => self.tail = i,
        }
        self.head = i;
    }

    /// Remove slot `i` entirely, returning its chunk.
    fn take_slot(&mut self, i: usize) -> Option<Cached> {
        self.unlink(i);
        let node = self.slab.get_mut(i)?.take()?;
        self.map.remove(&node.key);
        self.free.push(i);
        self.bytes = self.bytes.saturating_sub(node.chunk.cost());
        Some(node.chunk)
    }

    /// The dataset's dimensions are now `dims`, in chunks of `chunk`: re-key only when the
    /// grid outgrows the key fields. The common case (an append) compares dimensions against
    /// the room the fields leave, with no division.
    #[inline]
    pub fn fit_dims(&mut self, dims: &[u64], chunk: &[u64]) {
        // Word by word for the ranks of appends (every resize asks).
        let fits = match (dims, self.room_dims.as_slice()) {
            (&[d0], &[r0]) => d0 <= r0,
            (&[d0, d1], &[r0, r1]) => d0 <= r0 && d1 <= r1,
            (d, r) => d.len() == r.len() && d.iter().zip(r).all(|(&d, &room)| d <= room),
        };
        if !fits {
            self.refit_dims(dims, chunk);
        }
    }

    /// [`fit_dims`](Self::fit_dims) when the fields must widen: rare, and kept out of line so
    /// that the append path stays small.
    #[cold]
    #[inline(never)]
    fn refit_dims(&mut self, dims: &[u64], chunk: &[u64]) {
        let grid: SmallVec<[u64; 4]> = dims
            .iter()
            .zip(chunk)
            .map(|(&d, &c)| d.div_ceil(c))
            .collect();
        self.set_extent(&grid);
        // Chunks per dimension the fields hold (`u64::MAX` for 64 bits or more), as elements.
        self.room_dims = self
            .packer
            .bits
            .iter()
            .zip(chunk)
            .map(|(&b, &k)| 1u64.checked_shl(b).unwrap_or(u64::MAX).saturating_mul(k))
            .collect();
    }

    /// The grid grew or shrank to `extent` chunks per dimension: re-key only if a field
    /// must widen.
    pub fn set_extent(&mut self, extent: &[u64]) {
        if self.packer.covers(extent) {
            return;
        }
        let packer = KeyPacker::new(
            &extent
                .iter()
                .zip(&self.packer.bits)
                .map(|(&n, &b)| n.max(1u64 << b.min(63)))
                .collect::<Vec<_>>(),
        );
        self.map.clear();
        let mut lost = Vec::new();
        for (i, slot) in self.slab.iter_mut().enumerate() {
            if let Some(node) = slot {
                match packer.pack(&node.chunk.scaled) {
                    Some(k) => {
                        node.key = k;
                        self.map.insert(k, i);
                    }
                    None => lost.push(i),
                }
            }
        }
        self.packer = packer;
        // Wider fields keep every key that fitted before; a chunk that no longer fits can only
        // come from a shrink and is outside the extent.
        for i in lost {
            self.unlink(i);
            if let Some(Some(node)) = self.slab.get_mut(i).map(Option::take) {
                self.bytes = self.bytes.saturating_sub(node.chunk.cost());
            }
            self.free.push(i);
        }
    }

    /// The byte budget.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Whether no chunk is cached.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Whether the chunk at `scaled` is cached (without making it the most recent).
    pub fn contains(&self, scaled: &[u64]) -> bool {
        !self.map.is_empty()
            && self
                .packer
                .pack(scaled)
                .is_some_and(|k| self.map.contains_key(&k))
    }

    /// The cached chunk at `scaled`, leaving its recency as it is.
    pub fn peek(&self, scaled: &[u64]) -> Option<&Cached> {
        let k = self.packer.pack(scaled)?;
        let i = *self.map.get(&k)?;
        self.node(i).map(|n| &n.chunk)
    }

    pub fn get_mut(&mut self, scaled: &[u64]) -> Option<&mut Cached> {
        if self.map.is_empty() {
            return None;
        }
        let k = self.packer.pack(scaled)?;
        let i = *self.map.get(&k)?;
        if self.head != i {
            self.unlink(i);
            self.push_front(i);
        }
        self.node_mut(i).map(|n| &mut n.chunk)
    }

    /// Insert a chunk; returns the chunks evicted to stay within the budget (dirty ones must
    /// be written by the caller), or the chunk itself back if it cannot be cached.
    pub fn insert(&mut self, scaled: Coords, data: Vec<u8>, dirty: bool) -> Vec<Cached> {
        let chunk = Cached {
            scaled,
            data,
            dirty,
        };
        let Some(key) = self.packer.pack(&chunk.scaled) else {
            self.misses_unpacked = self.misses_unpacked.saturating_add(1);
            return vec![chunk];
        };
        let mut evicted = Vec::new();
        if let Some(&old) = self.map.get(&key) {
            // Replaced by the new chunk: nothing to write back.
            let _replaced = self.take_slot(old);
        }
        self.bytes = self.bytes.saturating_add(chunk.cost());
        let node = Node {
            key,
            chunk,
            prev: NIL,
            next: NIL,
        };
        let i = match self.free.pop() {
            Some(i) => {
                if let Some(slot) = self.slab.get_mut(i) {
                    *slot = Some(node);
                }
                i
            }
            None => {
                self.slab.push(Some(node));
                self.slab.len().saturating_sub(1)
            }
        };
        self.map.insert(key, i);
        self.push_front(i);
        while self.bytes > self.budget && self.map.len() > 1 {
            let lru = self.tail;
            match self.take_slot(lru) {
                Some(c) => evicted.push(c),
                None => break,
            }
        }
        evicted
    }

    /// Cache a clean chunk a reader loaded, if that evicts no dirty chunk (a reader sharing the
    /// dataset cannot write one back) and the chunk is not cached already (a writer's copy is
    /// newer); whether it was cached.
    pub fn insert_clean(&mut self, scaled: &[u64], data: Vec<u8>) -> bool {
        let cost = data.len().saturating_add(ENTRY_OVERHEAD);
        if cost > self.budget || self.contains(scaled) || self.packer.pack(scaled).is_none() {
            return false;
        }
        // The entries `insert` would evict, least recent first: all clean?
        let mut over = self.bytes.saturating_add(cost).saturating_sub(self.budget);
        let mut i = self.tail;
        while over > 0 {
            let Some(n) = self.node(i) else { break };
            if n.chunk.dirty {
                return false;
            }
            over = over.saturating_sub(n.chunk.cost());
            i = n.prev;
        }
        let evicted = self.insert(Coords::from_slice(scaled), data, false);
        evicted.iter().all(|e| !e.dirty)
    }

    /// A single-element read by this thread missed the chunk at `scaled`: whether this
    /// thread's previous miss in this cache was of the same chunk (it walks the chunk: worth
    /// loading it whole). Per thread, so readers note misses without a shared write (a hash of
    /// the key: a rare false "again" only loads a chunk whole).
    pub fn repeat_miss(&self, scaled: &[u64]) -> bool {
        thread_local! {
            static LAST_MISS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((u64::MAX, 0)) };
        }
        let Some(key) = self.packer.pack(scaled) else {
            return false;
        };
        let h = (key as u64) ^ ((key >> 64) as u64).rotate_left(29);
        // This cache, by its id: a cache made where a dropped one was is another cache.
        let me = (self.id, h);
        LAST_MISS.with(|last| last.replace(me)) == me
    }

    pub fn remove(&mut self, scaled: &[u64]) -> Option<Cached> {
        let k = self.packer.pack(scaled)?;
        let i = *self.map.get(&k)?;
        self.take_slot(i)
    }

    /// Every dirty chunk, in key order (adjacent chunks first to last), with its data moved
    /// out (the entry keeps its place, empty): give each back with [`restore`](Self::restore)
    /// once written, so that a flush copies no chunk.
    pub fn take_dirty(&mut self) -> Vec<(Coords, Vec<u8>)> {
        // Slab order is insertion order: appended chunks come out sorted already, and the
        // sort is skipped.
        let mut dirty: Vec<(u128, usize)> = self
            .slab
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.as_ref().filter(|n| n.chunk.dirty).map(|n| (n.key, i)))
            .collect();
        if !dirty.is_sorted_by_key(|&(k, _)| k) {
            dirty.sort_unstable_by_key(|&(k, _)| k);
        }
        dirty
            .into_iter()
            .filter_map(|(_, i)| {
                let n = self.node_mut(i)?;
                n.chunk.dirty = false;
                Some((n.chunk.scaled.clone(), std::mem::take(&mut n.chunk.data)))
            })
            .collect()
    }

    /// Give back the data [`take_dirty`](Self::take_dirty) moved out, clean if it was written,
    /// dirty again if not (a failed flush loses nothing from the cache).
    pub fn restore(&mut self, scaled: &[u64], data: Vec<u8>, written: bool) {
        let Some(i) = self
            .packer
            .pack(scaled)
            .and_then(|k| self.map.get(&k).copied())
        else {
            return;
        };
        if let Some(n) = self.node_mut(i) {
            if n.chunk.data.is_empty() {
                n.chunk.data = data;
            }
            n.chunk.dirty |= !written;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_change_only_when_a_field_widens() {
        let p = KeyPacker::new(&[5, 3]);
        assert_eq!(p.bits, vec![3, 2]);
        assert!(p.covers(&[8, 4]));
        assert!(!p.covers(&[9, 4]));
        assert_eq!(p.pack(&[1, 2]), Some((1 << 2) | 2));
        assert_eq!(p.pack(&[8, 0]), None);
        let mut c = ChunkCache::new(&[5, 3], 1 << 20);
        c.insert(smallvec::smallvec![1, 2], vec![7; 4], true);
        c.set_extent(&[6, 3]); // still fits: no re-key
        assert!(c.get_mut(&[1, 2]).is_some());
        c.set_extent(&[100, 3]);
        assert_eq!(c.get_mut(&[1, 2]).map(|x| x.data.clone()), Some(vec![7; 4]));
        c.insert(smallvec::smallvec![99, 0], vec![1; 4], false);
        let dirty = c.take_dirty();
        assert_eq!(dirty, vec![(Coords::from_slice(&[1, 2]), vec![7; 4])]);
        assert!(c.take_dirty().is_empty());
        // Given back after a failed write: dirty again, nothing lost.
        for (s, d) in dirty {
            c.restore(&s, d, false);
        }
        assert_eq!(
            c.take_dirty(),
            vec![(Coords::from_slice(&[1, 2]), vec![7; 4])]
        );
    }

    #[test]
    fn evicts_least_recently_used_within_the_budget() {
        // Room for two 4-byte chunks with their per-entry overhead.
        let mut c = ChunkCache::new(&[10], 2 * (4 + ENTRY_OVERHEAD) + 1);
        assert!(
            c.insert(smallvec::smallvec![0], vec![0; 4], true)
                .is_empty()
        );
        assert!(
            c.insert(smallvec::smallvec![1], vec![1; 4], false)
                .is_empty()
        );
        c.get_mut(&[0]);
        let out = c.insert(smallvec::smallvec![2], vec![2; 4], false);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].scaled.as_slice(), &[1]);
        assert!(c.get_mut(&[0]).is_some_and(|x| x.dirty));
    }
}
