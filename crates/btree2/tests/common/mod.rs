#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;

use h5chunk_btree2::{BTree2, ChunkClass, ChunkEntry, Params, TreeStats};
use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache};
use h5chunk_format::chunk_record::{ChunkRecord, RecordCodec, Scaled};
use h5chunk_format::{Addr, Sizes};

pub const S: Sizes = Sizes::DEFAULT;

/// Rank-2 unfiltered chunk records (24 bytes).
pub fn class2() -> ChunkClass {
    ChunkClass::new(RecordCodec::unfiltered(S), 2).unwrap()
}

/// Rank-2 filtered chunk records with a 2-byte size field (30 bytes).
pub fn class2f() -> ChunkClass {
    ChunkClass::new(RecordCodec::filtered(S, 2).unwrap(), 2).unwrap()
}

/// Small nodes (10 leaf records of 24 bytes), so a few hundred records make a deep tree.
pub const SMALL: Params = Params {
    node_size: 250,
    split_percent: 100,
    merge_percent: 40,
};

pub fn entry(a: u64, b: u64, addr: u64) -> ChunkEntry {
    ChunkEntry {
        scaled: Scaled::from_slice(&[a, b]),
        record: ChunkRecord {
            addr: Some(Addr(addr)),
            size: 0,
            mask: 0,
        },
    }
}

pub fn fentry(a: u64, b: u64, addr: u64, size: u64, mask: u32) -> ChunkEntry {
    ChunkEntry {
        scaled: Scaled::from_slice(&[a, b]),
        record: ChunkRecord {
            addr: Some(Addr(addr)),
            size,
            mask,
        },
    }
}

pub fn mem_cache(storage: &MemStorage, trace: bool) -> MetadataCache {
    let cfg = CacheConfig {
        record_trace: trace,
        ..CacheConfig::default()
    };
    let cache = MetadataCache::new(Arc::new(storage.clone()), cfg).unwrap();
    // Keep address 0 unused, as a superblock would.
    if cache.allocator().eoa() == Addr(0) {
        cache.allocator().allocate(64).unwrap();
    }
    cache
}

/// Non-root fill must not fall below the smaller of the merge bound and what a split leaves.
pub fn check_fill(t: &BTree2<ChunkClass>, st: &TreeStats) {
    let h = t.header();
    let g = h5chunk_format::btree2::Geometry::new(h, S).unwrap();
    for d in 0..=st.depth {
        let max = g.level(d).unwrap().max_nrec;
        let split = max * u64::from(h.split_percent) / 100;
        let low = (max * u64::from(h.merge_percent) / 100).max(1);
        let floor = low.min((split - 1) / 2);
        let di = usize::from(d);
        assert!(st.max_fill[di] <= split, "depth {d}: {st:?}");
        if st.min_fill[di] != u64::MAX {
            assert!(
                st.min_fill[di] >= floor,
                "depth {d}: fill {} < {floor}: {st:?}",
                st.min_fill[di]
            );
        }
    }
}
