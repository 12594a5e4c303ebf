//! Per-entry-type statistics: what benchmarks report as I/O accesses per lookup.

use std::collections::BTreeMap;

/// Counters for one entry type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TypeStats {
    /// Lookups (`get`/`protect`) served from memory.
    pub hits: u64,
    /// Lookups that had to read the storage.
    pub misses: u64,
    /// `read_at` calls (a miss costs one, or two when the speculative read was too short, per
    /// attempt).
    pub reads: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Reads retried after a failed verification (a torn or stale image).
    pub retries: u64,
    /// Loads that failed after every attempt.
    pub read_failures: u64,
    /// Images written (each in one `write_at`).
    pub writes: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Entries inserted (new structures).
    pub inserts: u64,
    /// Entries evicted to stay within the byte budget or on request.
    pub evictions: u64,
}

impl TypeStats {
    /// Storage reads per lookup (hits and misses), the benchmarks' "I/O accesses per lookup".
    pub fn reads_per_lookup(&self) -> f64 {
        // Statistics counters saturate rather than wrap: a pinned maximum is still "very many".
        let lookups = self.hits.saturating_add(self.misses);
        if lookups == 0 {
            0.0
        } else {
            self.reads as f64 / lookups as f64
        }
    }

    /// Sums counters; they saturate (statistics only, never used for sizes or offsets).
    fn add(&mut self, o: &TypeStats) {
        self.hits = self.hits.saturating_add(o.hits);
        self.misses = self.misses.saturating_add(o.misses);
        self.reads = self.reads.saturating_add(o.reads);
        self.bytes_read = self.bytes_read.saturating_add(o.bytes_read);
        self.retries = self.retries.saturating_add(o.retries);
        self.read_failures = self.read_failures.saturating_add(o.read_failures);
        self.writes = self.writes.saturating_add(o.writes);
        self.bytes_written = self.bytes_written.saturating_add(o.bytes_written);
        self.inserts = self.inserts.saturating_add(o.inserts);
        self.evictions = self.evictions.saturating_add(o.evictions);
    }
}

/// A snapshot of the statistics of every entry type seen so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Counters by entry type name ([`CacheEntry::TYPE_NAME`](crate::CacheEntry::TYPE_NAME)).
    pub by_type: BTreeMap<&'static str, TypeStats>,
}

impl CacheStats {
    /// The counters of one type (all zero if it was never seen).
    pub fn of(&self, type_name: &str) -> TypeStats {
        self.by_type.get(type_name).copied().unwrap_or_default()
    }

    /// The counters summed over every type.
    pub fn total(&self) -> TypeStats {
        let mut t = TypeStats::default();
        for s in self.by_type.values() {
            t.add(s);
        }
        t
    }
}
