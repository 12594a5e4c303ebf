//! A chunked dataset's storage state: its index, chunk cache and filter pipeline, and how
//! chunks are loaded, filtered, written and recorded.

use std::borrow::Cow;

use h5chunk_format::Addr;
use h5chunk_format::chunk_record::ChunkRecord;
use h5chunk_format::message::{ChunkIndex as LayoutIndex, ChunkedFlags, ChunkedLayout};

use crate::chunk_cache::{Cached, ChunkCache, Coords};
use crate::error::{Error, Result};
use crate::filters::Pipeline;
use crate::index::adapter::{ChunkIndex, Shape};
use crate::store::Store;

/// New chunks are copied into one buffer and written with one call, up to this many bytes at a
/// time (a flush of many small chunks is a few large writes, not one write per chunk).
const WRITE_BATCH_BYTES: u64 = 4 << 20;

/// A chunk that gets new space: its coordinates, its stored bytes and its filter mask.
type Fresh<'a> = (&'a [u64], Cow<'a, [u8]>, u32);

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
    /// Chunks per dimension of the box outside which the index holds no chunk: the grid of
    /// the extent the dataset was opened with (zero for a new dataset), grown to cover every
    /// chunk written since. A chunk outside it (an appended one) is known to be new without
    /// asking the index.
    pub(crate) known: Vec<u64>,
}

impl Chunked {
    /// Whether the index may hold a record for the chunk at `scaled` (see `known`). Indexes
    /// without a structure answer for every chunk.
    pub(crate) fn may_exist(&self, scaled: &[u64]) -> bool {
        use crate::index::IndexKind;
        matches!(self.index.kind(), IndexKind::Implicit | IndexKind::Single)
            || scaled.iter().zip(&self.known).all(|(s, k)| s < k)
    }

    /// The index now holds the chunk at `scaled`: grow the box to cover it.
    pub(crate) fn note_recorded(&mut self, scaled: &[u64]) {
        for (k, &s) in self.known.iter_mut().zip(scaled) {
            *k = (*k).max(s.saturating_add(1));
        }
    }

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
        let record = if self.may_exist(scaled) {
            self.index.get(f, scaled)?
        } else {
            None
        };
        match record {
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
        self.write_chunks(f, path, &[(Coords::from_slice(scaled), data)])
    }

    /// Write every dirty cached chunk (see [`write_chunks`](Self::write_chunks)). The chunks'
    /// data is moved out of the cache and back, not copied; if writing fails they stay dirty.
    pub(crate) fn flush_cache(&mut self, f: &Store, path: &str) -> Result<()> {
        let dirty = self.cache.take_dirty();
        let result = self.write_chunks(f, path, &dirty);
        let written = result.is_ok();
        for (scaled, data) in dirty {
            self.cache.restore(&scaled, data, written);
        }
        result
    }

    /// Filter and write chunks, then record them in the index. Chunks that keep their place
    /// are written there; all the others get one new block, written in one call (adjacent
    /// chunks land next to each other in the file).
    pub(crate) fn write_chunks(
        &mut self,
        f: &Store,
        path: &str,
        chunks: &[(Coords, Vec<u8>)],
    ) -> Result<()> {
        let filtered = self.pipeline.is_some();
        let mut fresh: Vec<Fresh<'_>> = Vec::new();
        for (scaled, data) in chunks {
            let (stored, mask) = match (&self.pipeline, self.skips_filters(scaled)) {
                (Some(p), false) => {
                    let (out, mask) = p.encode(data.clone()).map_err(|source| Error::Filter {
                        dataset: path.to_owned(),
                        chunk: scaled.to_vec(),
                        source,
                    })?;
                    (Cow::Owned(out), mask)
                }
                _ => (Cow::Borrowed(data.as_slice()), 0),
            };
            let recorded = if self.may_exist(scaled) {
                self.index.get(f, scaled)?
            } else {
                None
            };
            let old = recorded.map(|mut r| {
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
                        self.index.insert(f, scaled, rec, None)?;
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
        // The bytes first, the records after: every new chunk is in the file before any index
        // block can point at it, whatever the metadata cache flushes or evicts in between, so
        // no record has to wait for its chunk (no chunk proxy) and a crash can leave only
        // unreferenced bytes behind.
        let mut rest = fresh.as_slice();
        while !rest.is_empty() {
            let mut n = 0usize;
            let mut total = 0u64;
            for (_, b, _) in rest {
                let len = b.len() as u64;
                if n > 0 && total.saturating_add(len) > WRITE_BATCH_BYTES {
                    break;
                }
                total = total
                    .checked_add(len)
                    .ok_or(Error::Internal("a chunk batch past 2^64"))?;
                n = n.saturating_add(1);
            }
            let (batch, tail) = rest.split_at_checked(n).unwrap_or((rest, &[]));
            rest = tail;
            let base = f.allocate(total)?;
            let mut block = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
            for (_, b, _) in batch {
                block.extend_from_slice(b);
            }
            f.write(base, &block)?;
            let mut records = Vec::with_capacity(batch.len());
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
                records.push((*scaled, rec));
            }
            self.index.insert_many(f, &records)?;
            for &(scaled, _) in &records {
                self.note_recorded(scaled);
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
        Ok(&mut self.cached_entry(f, path, scaled, whole)?.data)
    }

    /// [`cached`](Self::cached), as the cache entry (to mark it dirty without a second lookup).
    pub(crate) fn cached_entry(
        &mut self,
        f: &Store,
        path: &str,
        scaled: &[u64],
        whole: bool,
    ) -> Result<&mut Cached> {
        if self.cache.get_mut(scaled).is_none() {
            // `load` answers fill without asking the index for a chunk known to be new.
            let data = if whole {
                self.fill.repeat(self.chunk_elems() as usize)
            } else {
                self.load(f, path, scaled)?
            };
            for evicted in self.cache.insert(Coords::from_slice(scaled), data, false) {
                if evicted.dirty {
                    self.write_chunk(f, path, &evicted.scaled, evicted.data)?;
                }
            }
        }
        match self.cache.get_mut(scaled) {
            Some(c) => Ok(c),
            // The key did not fit the cache (a grid of more than 2^128 chunks).
            None => Err(Error::Unsupported(
                "chunk grids too large for the chunk cache",
            )),
        }
    }
}
