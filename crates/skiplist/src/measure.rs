//! The lookup-cost experiment of the paper's Table 1 (§XV): build a list of `n` supernodes,
//! look every supernode up from the tail along each variant's route with every supernode
//! evicted beforehand, and count the supernode reads through the cache's statistics.

use std::num::NonZeroU64;
use std::sync::Arc;

use h5chunk_cache::{CacheConfig, CacheEntry, MemStorage, MetadataCache};
use h5chunk_format::Sizes;

use crate::error::{Error, Result};
use crate::format::{Params, Supernode};
use crate::list::SkipList;
use crate::shape::Lookup;

/// Supernode reads summed over looking up each of `n` supernodes once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessCounts {
    /// The number of supernodes.
    pub supernodes: u64,
    /// Total supernode reads per variant, in the order of [`Lookup::ALL`] (binary tree,
    /// right-most, left and right-most, inner).
    pub reads: [u64; 4],
}

impl AccessCounts {
    /// The average reads per lookup of `lookup` as an exact fraction (numerator, denominator),
    /// reduced.
    pub fn fraction(&self, lookup: Lookup) -> (u64, u64) {
        let i = Lookup::ALL.iter().position(|&l| l == lookup).unwrap_or(0);
        let num = self.reads.get(i).copied().unwrap_or(0);
        // The gcd is 0 only when both are 0; dividing by 1 then leaves (0, 0) as before.
        let g = NonZeroU64::new(gcd(num, self.supernodes)).unwrap_or(NonZeroU64::MIN);
        (num / g, self.supernodes / g)
    }

    /// The average reads per lookup of `lookup`.
    pub fn average(&self, lookup: Lookup) -> f64 {
        let (num, den) = self.fraction(lookup);
        num as f64 / den.max(1) as f64
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    // Euclid's algorithm; `checked_rem` is `None` exactly when `b == 0`, where it stops.
    while let Some(r) = a.checked_rem(b) {
        a = b;
        b = r;
    }
    a
}

/// Build a list of `supernodes` supernodes (one step each) in memory, then count the
/// supernode reads of looking each one up with every variant. Each lookup starts with only the
/// tail in memory (its reads are counted under its own type and ignored), as the paper counts.
pub fn access_counts(supernodes: u64) -> Result<AccessCounts> {
    if supernodes == 0 {
        return Err(Error::InvalidArgument("at least one supernode"));
    }
    // The bit length of `supernodes`: `leading_zeros` is at most 64, so this never saturates.
    let bits = u64::BITS.saturating_sub(supernodes.leading_zeros());
    let max_height = u8::try_from(bits).unwrap_or(63);
    let params = Params {
        steps_per_supernode: 1,
        max_height: max_height.max(1),
        ..Params::default()
    };
    let storage = MemStorage::new();
    let cache = MetadataCache::new(Arc::new(storage.clone()), CacheConfig::default())?;
    let list = SkipList::create(&cache, Sizes::DEFAULT, params)?;
    list.extend(&cache, supernodes)?;
    let report = cache.flush()?;
    if !report.is_complete() {
        return Err(Error::Unsupported("the list could not be flushed"));
    }

    let reader = MetadataCache::new(Arc::new(storage), CacheConfig::default())?;
    let list = SkipList::open(&reader, list.addr(), Sizes::DEFAULT)?;
    let mut reads = [0u64; 4];
    for (total, lookup) in reads.iter_mut().zip(Lookup::ALL) {
        // Slot `slot` is the only slot of supernode `slot + 1`.
        for slot in 0..supernodes {
            reader.evict_clean();
            let before = reader.stats().of(Supernode::TYPE_NAME).reads;
            list.get_with(&reader, lookup, slot)?;
            let after = reader.stats().of(Supernode::TYPE_NAME).reads;
            // Read counts only grow (nothing resets the statistics here); they saturate.
            *total = total.saturating_add(after.saturating_sub(before));
        }
    }
    Ok(AccessCounts { supernodes, reads })
}
