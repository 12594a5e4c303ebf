//! The raw-data chunk cache of one dataset: write-back, LRU under a byte budget, keyed by
//! scaled chunk coordinates packed into log2-sized bit fields (the chunk-index paper, §II.C).
//!
//! A key's field widths depend only on how many chunks a dimension has had, rounded up to a
//! power of two, so extending a dimension changes no key until its chunk count crosses a power
//! of two; only then are the cached entries re-keyed.

use std::collections::{BTreeMap, HashMap};

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

/// The access counter after `tick`. One access per nanosecond would take five centuries to
/// reach `u64::MAX`; saturating there keeps it panic-free.
fn next_tick(tick: u64) -> u64 {
    tick.saturating_add(1)
}

/// One cached chunk.
#[derive(Debug)]
pub(crate) struct Cached {
    pub scaled: Vec<u64>,
    /// The whole chunk, unfiltered, in the file's byte order.
    pub data: Vec<u8>,
    pub dirty: bool,
    tick: u64,
}

impl Cached {
    /// What the entry counts against the budget.
    fn cost(&self) -> usize {
        // The data is in memory, so its length is far below `usize::MAX`.
        self.data.len().saturating_add(ENTRY_OVERHEAD)
    }
}

/// The cache.
#[derive(Debug)]
pub(crate) struct ChunkCache {
    packer: KeyPacker,
    map: HashMap<u128, Cached>,
    lru: BTreeMap<u64, u128>,
    tick: u64,
    bytes: usize,
    budget: usize,
    /// Chunks whose coordinates do not fit a packed key (grids of more than 2^128 chunks)
    /// bypass the cache.
    pub misses_unpacked: u64,
}

impl ChunkCache {
    pub fn new(extent: &[u64], budget: usize) -> ChunkCache {
        ChunkCache {
            packer: KeyPacker::new(extent),
            map: HashMap::new(),
            lru: BTreeMap::new(),
            tick: 0,
            bytes: 0,
            budget,
            misses_unpacked: 0,
        }
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
        let old = std::mem::take(&mut self.map);
        self.lru.clear();
        for (_, c) in old {
            if let Some(k) = packer.pack(&c.scaled) {
                self.lru.insert(c.tick, k);
                self.map.insert(k, c);
            }
        }
        self.packer = packer;
    }

    pub fn get_mut(&mut self, scaled: &[u64]) -> Option<&mut Cached> {
        let k = self.packer.pack(scaled)?;
        let c = self.map.get_mut(&k)?;
        self.tick = next_tick(self.tick);
        self.lru.remove(&c.tick);
        c.tick = self.tick;
        self.lru.insert(c.tick, k);
        Some(c)
    }

    /// Insert a chunk; returns the chunks evicted to stay within the budget (dirty ones must
    /// be written by the caller), or the chunk itself back if it cannot be cached.
    pub fn insert(&mut self, scaled: Vec<u64>, data: Vec<u8>, dirty: bool) -> Vec<Cached> {
        self.tick = next_tick(self.tick);
        let c = Cached {
            scaled,
            data,
            dirty,
            tick: self.tick,
        };
        let Some(k) = self.packer.pack(&c.scaled) else {
            self.misses_unpacked = self.misses_unpacked.saturating_add(1);
            return vec![c];
        };
        self.bytes = self.bytes.saturating_add(c.cost());
        self.lru.insert(c.tick, k);
        if let Some(old) = self.map.insert(k, c) {
            self.bytes = self.bytes.saturating_sub(old.cost());
            self.lru.remove(&old.tick);
        }
        let mut evicted = Vec::new();
        while self.bytes > self.budget && self.map.len() > 1 {
            let Some((&t, &key)) = self.lru.iter().next() else {
                break;
            };
            self.lru.remove(&t);
            if let Some(c) = self.map.remove(&key) {
                self.bytes = self.bytes.saturating_sub(c.cost());
                evicted.push(c);
            }
        }
        evicted
    }

    pub fn remove(&mut self, scaled: &[u64]) -> Option<Cached> {
        let k = self.packer.pack(scaled)?;
        let c = self.map.remove(&k)?;
        self.lru.remove(&c.tick);
        self.bytes = self.bytes.saturating_sub(c.cost());
        Some(c)
    }

    /// Every dirty chunk, marked clean, in key order (adjacent chunks first to last).
    pub fn take_dirty(&mut self) -> Vec<(Vec<u64>, Vec<u8>)> {
        let mut keys: Vec<u128> = self
            .map
            .iter()
            .filter(|(_, c)| c.dirty)
            .map(|(&k, _)| k)
            .collect();
        keys.sort_unstable();
        keys.into_iter()
            .filter_map(|k| {
                let c = self.map.get_mut(&k)?;
                c.dirty = false;
                Some((c.scaled.clone(), c.data.clone()))
            })
            .collect()
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
        c.insert(vec![1, 2], vec![7; 4], true);
        c.set_extent(&[6, 3]); // still fits: no re-key
        assert!(c.get_mut(&[1, 2]).is_some());
        c.set_extent(&[100, 3]);
        assert_eq!(c.get_mut(&[1, 2]).map(|x| x.data.clone()), Some(vec![7; 4]));
        c.insert(vec![99, 0], vec![1; 4], false);
        assert_eq!(c.take_dirty(), vec![(vec![1, 2], vec![7; 4])]);
        assert!(c.take_dirty().is_empty());
    }

    #[test]
    fn evicts_least_recently_used_within_the_budget() {
        // Room for two 4-byte chunks with their per-entry overhead.
        let mut c = ChunkCache::new(&[10], 2 * (4 + ENTRY_OVERHEAD) + 1);
        assert!(c.insert(vec![0], vec![0; 4], true).is_empty());
        assert!(c.insert(vec![1], vec![1; 4], false).is_empty());
        c.get_mut(&[0]);
        let out = c.insert(vec![2], vec![2; 4], false);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].scaled, vec![1]);
        assert!(c.get_mut(&[0]).is_some_and(|x| x.dirty));
    }
}
