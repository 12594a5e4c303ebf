//! A chunked dataset's storage state: its index, chunk cache and filter pipeline, and how
//! chunks are loaded, filtered, written and recorded.

use h5chunk_format::Addr;
use h5chunk_format::chunk_record::ChunkRecord;
use h5chunk_format::message::{ChunkIndex as LayoutIndex, ChunkedFlags, ChunkedLayout};

use crate::chunk_cache::ChunkCache;
use crate::error::{Error, Result};
use crate::filters::Pipeline;
use crate::index::adapter::{ChunkIndex, Shape};
use crate::store::Store;

/// New chunks written (and chunk proxies dirty) at once when a dataset flushes.
const PROXY_BATCH: usize = 256;

#[derive(Debug)]
pub(crate) struct Chunked {
    pub(crate) layout: ChunkedLayout,
    pub(crate) layout_written: (LayoutIndex, Option<Addr>),
    pub(crate) index: Box<dyn ChunkIndex>,
    pub(crate) shape: Shape,
    pub(crate) pipeline: Option<Pipeline>,
    /// One element of fill value, in the file's byte order.
    pub(crate) fill: Vec<u8>,
    pub(crate) cache: ChunkCache,
    pub(crate) alloc_early: bool,
}

impl Chunked {
    pub(crate) fn chunk_elems(&self) -> u64 {
        self.shape.chunk.iter().product()
    }

    pub(crate) fn is_partial(&self, scaled: &[u64]) -> bool {
        scaled
            .iter()
            .zip(&self.shape.chunk)
            .zip(&self.shape.dims)
            // A chunk ending past 2^64 ends past `d` too.
            .any(|((&s, &c), &d)| {
                s.checked_add(1)
                    .and_then(|end| end.checked_mul(c))
                    .is_none_or(|end| end > d)
            })
    }

    pub(crate) fn skips_filters(&self, scaled: &[u64]) -> bool {
        self.layout
            .flags
            .contains(ChunkedFlags::DONT_FILTER_PARTIAL_BOUND_CHUNKS)
            && self.is_partial(scaled)
    }

    /// The chunk's unfiltered bytes from the file, or fill.
    pub(crate) fn load(&mut self, f: &Store, path: &str, scaled: &[u64]) -> Result<Vec<u8>> {
        let chunk_bytes = self.shape.chunk_bytes as usize;
        match self.index.get(f, scaled)? {
            Some(ChunkRecord {
                addr: Some(addr),
                size,
                mask,
            }) => {
                let stored_len = match (&self.pipeline, self.skips_filters(scaled)) {
                    (Some(_), false) => size,
                    _ => chunk_bytes as u64,
                };
                let stored = f.read(addr, stored_len)?;
                match (&self.pipeline, self.skips_filters(scaled)) {
                    (Some(p), false) => {
                        p.decode(stored, mask, chunk_bytes)
                            .map_err(|source| Error::Filter {
                                dataset: path.to_owned(),
                                chunk: scaled.to_vec(),
                                source,
                            })
                    }
                    _ => Ok(stored),
                }
            }
            _ => Ok(self.fill.repeat(self.chunk_elems() as usize)),
        }
    }

    /// Filter and write a chunk, then record it in the index.
    pub(crate) fn write_chunk(
        &mut self,
        f: &Store,
        path: &str,
        scaled: &[u64],
        data: Vec<u8>,
    ) -> Result<()> {
        self.write_chunks(f, path, vec![(scaled.to_vec(), data)])
    }

    /// Filter and write chunks, then record them in the index. Chunks that keep their place
    /// are written there; all the others get one new block, written in one call (adjacent
    /// chunks land next to each other in the file).
    pub(crate) fn write_chunks(
        &mut self,
        f: &Store,
        path: &str,
        chunks: Vec<(Vec<u64>, Vec<u8>)>,
    ) -> Result<()> {
        let filtered = self.pipeline.is_some();
        let mut fresh: Vec<(Vec<u64>, Vec<u8>, u32)> = Vec::new();
        for (scaled, data) in chunks {
            let (stored, mask) = match (&self.pipeline, self.skips_filters(&scaled)) {
                (Some(p), false) => p.encode(data).map_err(|source| Error::Filter {
                    dataset: path.to_owned(),
                    chunk: scaled.clone(),
                    source,
                })?,
                _ => (data, 0),
            };
            let old = self.index.get(f, &scaled)?.map(|mut r| {
                // Unfiltered records carry no size or mask: every chunk is `chunk_bytes` long.
                if !filtered {
                    r.size = 0;
                    r.mask = 0;
                }
                r
            });
            match old {
                Some(ChunkRecord {
                    addr: Some(a),
                    size,
                    ..
                }) if !filtered || size == stored.len() as u64 => {
                    f.write(a, &stored)?;
                    let rec = ChunkRecord {
                        addr: Some(a),
                        size: if filtered { stored.len() as u64 } else { 0 },
                        mask,
                    };
                    if old != Some(rec) {
                        // The chunk is written already: nothing for the index to wait for.
                        self.index.insert(f, &scaled, rec, None)?;
                    }
                }
                Some(ChunkRecord {
                    addr: Some(a),
                    size,
                    ..
                }) => {
                    f.free(a, size)?;
                    fresh.push((scaled, stored, mask));
                }
                _ => fresh.push((scaled, stored, mask)),
            }
        }
        if fresh.is_empty() {
            return Ok(());
        }
        // In batches, so that few chunk proxies are dirty at once (a B-tree split attaches
        // every dirty proxy of the nodes it touches to the new nodes).
        for batch in fresh.chunks(PROXY_BATCH) {
            let total: u64 = batch.iter().map(|(_, b, _)| b.len() as u64).sum();
            let base = f.allocate(total)?;
            let mut block = Vec::with_capacity(total as usize);
            for (_, b, _) in batch {
                block.extend_from_slice(b);
            }
            // Each new record goes into the index with a chunk proxy: the index block holding
            // it cannot reach the file until the proxy says the chunk is written, whatever the
            // metadata cache flushes or evicts in between.
            let mut proxies = Vec::with_capacity(batch.len());
            let mut at = base.get();
            for (scaled, stored, mask) in batch {
                let rec = ChunkRecord {
                    addr: Some(Addr(at)),
                    size: if filtered { stored.len() as u64 } else { 0 },
                    mask: *mask,
                };
                // Within the block of `total` bytes just allocated at `base`.
                at = at
                    .checked_add(stored.len() as u64)
                    .ok_or(Error::Internal("a chunk batch past 2^64"))?;
                let proxy = f.cache.create_proxy();
                proxies.push(proxy);
                self.index.insert(f, scaled, rec, Some(proxy))?;
            }
            f.write(base, &block)?;
            for p in proxies {
                f.cache.chunk_written(p)?;
                f.cache.remove_proxy(p)?;
            }
        }
        Ok(())
    }

    /// The cached chunk at `scaled`, loading it (or starting from fill when `whole` says the
    /// caller overwrites all of it).
    pub(crate) fn cached(
        &mut self,
        f: &Store,
        path: &str,
        scaled: &[u64],
        whole: bool,
    ) -> Result<&mut Vec<u8>> {
        if self.cache.get_mut(scaled).is_none() {
            let data = if whole {
                self.fill.repeat(self.chunk_elems() as usize)
            } else {
                self.load(f, path, scaled)?
            };
            for evicted in self.cache.insert(scaled.to_vec(), data, false) {
                if evicted.dirty {
                    self.write_chunk(f, path, &evicted.scaled, evicted.data)?;
                }
            }
        }
        match self.cache.get_mut(scaled) {
            Some(c) => Ok(&mut c.data),
            // The key did not fit the cache (a grid of more than 2^128 chunks).
            None => Err(Error::Unsupported(
                "chunk grids too large for the chunk cache",
            )),
        }
    }
}
