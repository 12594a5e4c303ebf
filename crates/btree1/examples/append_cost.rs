//! The cost of appending chunks to a chunk index: `insert_many` against a loop of `insert`.
//! Run under callgrind to count instructions per chunk:
//!
//! ```text
//! cargo build --release -p h5chunk-btree1 --example append_cost
//! valgrind --tool=callgrind --toggle-collect='*ChunkTree*insert_many*' \
//!     target/release/examples/append_cost many 50000
//! valgrind --tool=callgrind --toggle-collect='*append_cost*insert_loop*' \
//!     target/release/examples/append_cost loop 50000
//! ```
//!
//! `many2` and `loop2` append rows of 4 chunks of a 2-D dataset instead. Divide the collected
//! instructions by the number of chunks.
// A measuring tool, not a reader of files: its arithmetic is on its own small numbers.
#![allow(clippy::arithmetic_side_effects)]

use std::sync::Arc;

use h5chunk_btree1::{Chunk, ChunkTree, DEFAULT_CHUNK_K, Result};
use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache};
use h5chunk_format::{Addr, Sizes};

#[inline(never)]
fn insert_loop(cache: &MetadataCache, tree: &ChunkTree, chunks: &[Chunk]) -> Result<()> {
    for c in chunks {
        tree.insert(cache, c, None)?;
    }
    Ok(())
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "many".into());
    let n: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(50_000);
    let cache = MetadataCache::new(Arc::new(MemStorage::new()), CacheConfig::default())?;
    cache.allocator().set_eoa(Addr(2048));
    let rank2 = mode.ends_with("2");
    let dims: &[u64] = if rank2 { &[10, 10, 4] } else { &[10, 4] };
    let tree = ChunkTree::create(&cache, Sizes::DEFAULT, DEFAULT_CHUNK_K, dims)?;
    let chunks: Vec<Chunk> = (0..n)
        .map(|i| Chunk {
            offsets: if rank2 {
                vec![i / 4 * 10, i % 4 * 10].into()
            } else {
                vec![i * 10].into()
            },
            size: 400,
            filter_mask: 0,
            addr: Addr((1 << 40) + i * 400),
        })
        .collect();
    if mode.starts_with("loop") {
        insert_loop(&cache, &tree, &chunks)?;
    } else {
        tree.insert_many(&cache, &chunks)?;
    }
    let listed = tree.to_vec(&cache)?.len();
    println!("{mode}: {listed} chunks, depth {}", tree.depth(&cache)?);
    Ok(())
}
