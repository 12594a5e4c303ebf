//! Instructions per appended record: [`BTree2::insert`] one record at a time (`loop`) against
//! one [`BTree2::insert_many`] (`many`), for `n` records of rank 1 or 2 appended to an empty
//! chunk index with libhdf5's parameters. Count them with callgrind, collecting only the
//! measured function:
//!
//! ```text
//! cargo build --release -p h5chunk-btree2 --example append_cost
//! valgrind --tool=callgrind --toggle-collect='*append_cost*run_*' \
//!     target/release/examples/append_cost many 50000 1
//! ```
//!
//! The instructions collected divided by `n` is the figure.
// A measuring tool, not library code: a panic here is a failed measurement.
#![allow(clippy::unwrap_used, clippy::arithmetic_side_effects)]

use std::sync::Arc;

use h5chunk_btree2::{BTree2, ChunkClass, ChunkEntry, Params};
use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache};
use h5chunk_format::chunk_record::{ChunkRecord, RecordCodec, Scaled};
use h5chunk_format::{Addr, Sizes};

#[inline(never)]
fn run_loop(cache: &MetadataCache, tree: &mut BTree2<ChunkClass>, records: &[ChunkEntry]) {
    for r in records {
        tree.insert(cache, r.clone(), None).unwrap();
    }
}

#[inline(never)]
fn run_many(cache: &MetadataCache, tree: &mut BTree2<ChunkClass>, records: &[ChunkEntry]) {
    tree.insert_many(cache, records).unwrap();
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "many".into());
    let n: u64 = args.next().map_or(50_000, |s| s.parse().unwrap());
    let rank: usize = args.next().map_or(1, |s| s.parse().unwrap());
    let sizes = Sizes::DEFAULT;
    let storage = MemStorage::new();
    let cache = MetadataCache::new(Arc::new(storage), CacheConfig::default()).unwrap();
    cache.allocator().allocate(48).unwrap();
    let class = ChunkClass::new(RecordCodec::unfiltered(sizes), rank).unwrap();
    let mut tree = BTree2::create(&cache, sizes, class, Params::CHUNK_INDEX).unwrap();
    // Rank 2: a dataset of 16 chunks per row growing by rows.
    let records: Vec<ChunkEntry> = (0..n)
        .map(|i| ChunkEntry {
            scaled: if rank == 1 {
                Scaled::from_slice(&[i])
            } else {
                Scaled::from_slice(&[i / 16, i % 16])
            },
            record: ChunkRecord {
                addr: Some(Addr(0x10_0000 + 4096 * i)),
                size: 0,
                mask: 0,
            },
        })
        .collect();
    match mode.as_str() {
        "loop" => run_loop(&cache, &mut tree, &records),
        _ => run_many(&cache, &mut tree, &records),
    }
    let st = tree.validate(&cache).unwrap();
    assert_eq!(st.records, n);
    assert!(cache.flush().unwrap().is_complete());
    eprintln!(
        "{mode}: {n} records of rank {rank}, depth {}, nodes {:?}",
        st.depth, st.nodes
    );
}
