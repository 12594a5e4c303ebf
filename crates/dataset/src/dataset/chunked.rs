//! A chunked dataset's storage state: its index, chunk cache and filter pipeline, and how
//! chunks are loaded, filtered, written and recorded.

use std::borrow::Cow;

use h5chunk_format::Addr;
use h5chunk_format::chunk_record::ChunkRecord;
use h5chunk_format::message::{ChunkIndex as LayoutIndex, ChunkedFlags, ChunkedLayout};
use parking_lot::RwLock;

use crate::chunk_cache::{Cached, ChunkCache, Coords};
use crate::dataset::fresh::Fresh;
use crate::error::{Error, Result};
use crate::filters::Pipeline;
use crate::index::adapter::{ChunkIndex, Shape};
use crate::store::Store;

/// New chunks are copied into one buffer and written with one call, up to this many bytes at a
/// time (a flush of many small chunks is a few large writes, not one write per chunk).
const WRITE_BATCH_BYTES: u64 = 4 << 20;

/// Most records handed to the index in one `insert_many`.
const RECORD_BATCH: usize = 1 << 16;

/// A chunk that gets new space: its coordinates, its stored bytes and its filter mask.
type NewChunk<'a> = (&'a [u64], Cow<'a, [u8]>, u32);

#[derive(Debug)]
pub(crate) struct Chunked {
    pub(crate) layout: ChunkedLayout,
    pub(crate) layout_written: (LayoutIndex, Option<Addr>),
    pub(crate) index: Box<dyn ChunkIndex>,
    pub(crate) shape: Shape,
    pub(crate) pipeline: Option<Pipeline>,
    /// One element of fill value, in the file's byte order.
    pub(crate) fill: Vec<u8>,
    /// Behind its own lock: readers holding the dataset's state shared still touch and fill it.
    pub(crate) cache: RwLock<h5chunk_cache::CacheLine<ChunkCache>>,
    pub(crate) alloc_early: bool,
    /// Chunks per dimension of the box outside which the index holds no chunk: the grid of
    /// the extent the dataset was opened with (zero for a new dataset), grown to cover every
    /// chunk written since. A chunk outside it (an appended one) is known to be new without
    /// asking the index.
    pub(crate) known: Vec<u64>,
    /// Chunks written whole and not yet stored (see [`Fresh`]).
    pub(crate) fresh: Fresh,
    /// The shape of the last append of whole chunks, for the next one of the same length.
    pub(crate) append_plan: Option<Box<super::append::AppendPlan>>,
    /// The shape of the last slab write of whole new chunks, for the next one of that shape.
    pub(crate) box_plan: Option<Box<super::append::BoxPlan>>,
    /// The filter pipeline's output buffers of the last batch of chunks written, kept for the
    /// next batch with what they last held (see [`write_chunks`](Self::write_chunks)).
    pub(crate) spare: Vec<Vec<u8>>,
}

/// Most output buffers [`Chunked::spare`] keeps, and most bytes of room they hold together:
/// a batch's worth for the usual chunk sizes (the fresh chunks' budget, or a slab write's
/// batch), never more than a few times the chunk cache.
const SPARE_BUFFERS: usize = 64;
const SPARE_BYTES: usize = 64 << 20;

/// Uncompressed bytes of chunks each filter thread encodes before they are written (see
/// [`Chunked::write_chunks`]): about one core's share of the cache.
const HOT_BYTES_PER_THREAD: usize = 2 << 20;

/// Copy `src` into `dst` (of the same length): as one fixed-size move for ranks up to 4, where
/// a call to memcpy would cost more than the copy (appends copy the dims each time).
#[inline(always)]
pub(crate) fn copy_dims(dst: &mut [u64], src: &[u64]) {
    #[inline(always)]
    fn fixed<const N: usize>(dst: &mut [u64], src: &[u64]) -> bool {
        match (<&mut [u64; N]>::try_from(dst), <&[u64; N]>::try_from(src)) {
            (Ok(d), Ok(s)) => {
                *d = *s;
                true
            }
            _ => false,
        }
    }
    let done = match dst.len() {
        1 => fixed::<1>(dst, src),
        2 => fixed::<2>(dst, src),
        3 => fixed::<3>(dst, src),
        4 => fixed::<4>(dst, src),
        _ => false,
    };
    if !done && dst.len() == src.len() {
        dst.copy_from_slice(src);
    }
}

impl Chunked {
    /// Whether the index may hold a record for the chunk at `scaled` (see `known`). Indexes
    /// without a structure answer for every chunk.
    pub(crate) fn may_exist(&self, scaled: &[u64]) -> bool {
        scaled.iter().zip(&self.known).all(|(s, k)| s < k)
    }

    /// The first `known` box of an index of kind `kind` whose chunks lie inside `known`:
    /// unbounded for the indexes without a structure, which answer for every chunk.
    pub(crate) fn first_known(kind: crate::index::IndexKind, known: Vec<u64>) -> Vec<u64> {
        use crate::index::IndexKind;
        if matches!(kind, IndexKind::Implicit | IndexKind::Single) {
            vec![u64::MAX; known.len()]
        } else {
            known
        }
    }

    /// The index now holds the chunk at `scaled`: grow the box to cover it.
    pub(crate) fn note_recorded(&mut self, scaled: &[u64]) {
        for (k, &s) in self.known.iter_mut().zip(scaled) {
            *k = (*k).max(s.saturating_add(1));
        }
    }

    /// The current dimensions are now `dims` (of the dataset's rank): the index needs nothing
    /// (see `ChunkIndex::set_dims` for shrinks), the chunk cache re-packs its keys only when
    /// the grid outgrows their fields.
    #[inline]
    pub(crate) fn set_grown_dims(&mut self, dims: &[u64]) {
        if self.shape.dims.len() == dims.len() {
            copy_dims(&mut self.shape.dims, dims);
        } else {
            self.shape.dims.clear();
            self.shape.dims.extend_from_slice(dims);
        }
        self.cache.get_mut().fit_dims(dims, &self.shape.chunk);
    }

    /// The index's record of the chunk at `scaled`, without asking the index for a chunk known
    /// to be new (see `known`).
    pub(crate) fn recorded(&self, f: &Store, scaled: &[u64]) -> Result<Option<ChunkRecord>> {
        if self.may_exist(scaled) {
            self.index.get(f, scaled)
        } else {
            Ok(None)
        }
    }

    pub(crate) fn chunk_elems(&self) -> u64 {
        self.shape.chunk.iter().product()
    }

    /// A chunk of fill values. A chunk's size comes from the file (up to 4 GiB - 1 bytes):
    /// where memory cannot hold it, an error names the dataset instead of an abort.
    pub(crate) fn fill_chunk(&self, path: &str) -> Result<Vec<u8>> {
        let n = usize::try_from(self.chunk_elems())
            .ok()
            .and_then(|n| n.checked_mul(self.fill.len()))
            .ok_or(Error::Unsupported("chunks larger than memory"))?;
        let mut data = Vec::new();
        data.try_reserve_exact(n).map_err(|_| {
            Error::arg(
                "dataset",
                format!("{path}: a chunk of {n} bytes does not fit in memory"),
            )
        })?;
        // Doubling copies, as `repeat` makes them.
        data.extend_from_slice(self.fill.get(..n.min(self.fill.len())).unwrap_or_default());
        while data.len() < n {
            let more = n.saturating_sub(data.len()).min(data.len());
            data.extend_from_within(..more);
        }
        Ok(data)
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
        let record = self.recorded(f, scaled)?;
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
                match (&self.pipeline, self.skips_filters(scaled)) {
                    (Some(p), false) => f.read_stored(
                        addr,
                        stored_len,
                        |stored| p.decode(stored, mask, chunk_bytes),
                        |source| Error::Filter {
                            dataset: path.to_owned(),
                            chunk: scaled.to_vec(),
                            source,
                        },
                    ),
                    _ => f.read(addr, stored_len),
                }
            }
            _ => self.fill_chunk(path),
        }
    }

    /// Filter and write a chunk, then record it in the index.
    pub(crate) fn write_chunk(
        &mut self,
        f: &Store,
        path: &str,
        scaled: &[u64],
        data: &[u8],
    ) -> Result<()> {
        self.write_chunks(f, path, &[(scaled, data)])
    }

    /// Most bytes fresh chunks hold before they are written: the chunk cache's budget, and at
    /// least 1 MiB (a dataset with no chunk cache still appends in batches).
    pub(crate) fn fresh_budget(&self) -> usize {
        self.cache.read().budget().max(1 << 20)
    }

    /// [`fresh_budget`](Self::fresh_budget) with the dataset held exclusively: no lock taken.
    pub(crate) fn fresh_budget_mut(&mut self) -> usize {
        self.cache.get_mut().budget().max(1 << 20)
    }

    /// Write the fresh chunks if one more would take them past their budget.
    #[inline]
    pub(crate) fn make_fresh_room(&mut self, f: &Store, path: &str) -> Result<()> {
        if !self.fresh.is_empty()
            && self.fresh.cost().saturating_add(self.fresh.cost_of_one()) > self.fresh_budget()
        {
            self.flush_fresh(f, path)?;
        }
        Ok(())
    }

    /// Write every dirty cached chunk and every fresh one (see
    /// [`write_chunks`](Self::write_chunks)). The cached chunks' data is moved out of the cache
    /// and back, not copied; if writing fails they stay dirty, and the fresh ones stay fresh.
    pub(crate) fn flush_cache(&mut self, f: &Store, path: &str) -> Result<()> {
        let dirty = self.cache.get_mut().take_dirty();
        let refs: Vec<(&[u64], &[u8])> = dirty
            .iter()
            .map(|(s, d)| (s.as_slice(), d.as_slice()))
            .collect();
        let result = self.write_chunks(f, path, &refs);
        drop(refs);
        let written = result.is_ok();
        for (scaled, data) in dirty {
            self.cache.get_mut().restore(&scaled, data, written);
        }
        result?;
        self.flush_fresh(f, path)
    }

    /// Write the fresh chunks and record them.
    pub(crate) fn flush_fresh(&mut self, f: &Store, path: &str) -> Result<()> {
        if self.fresh.is_empty() {
            return Ok(());
        }
        let fresh = std::mem::take(&mut self.fresh);
        let result = self.write_fresh(f, path, &fresh);
        self.fresh = fresh;
        if result.is_ok() {
            self.fresh.clear();
        }
        result
    }

    /// The append case, unfiltered chunks none of which the index holds: the buffer is the
    /// block, written at one new place in one call, then recorded in one batch. Anything else
    /// goes through [`write_chunks`](Self::write_chunks).
    fn write_fresh(&mut self, f: &Store, path: &str, fresh: &Fresh) -> Result<()> {
        let bytes = fresh.bytes();
        if self.pipeline.is_none()
            && !f.swmr_write()
            && self.index.kind() == crate::index::IndexKind::Implicit
        {
            return self.write_fresh_implicit(f, fresh);
        }
        // A paged file places each chunk in its own space, so that none smaller than a page
        // crosses a page boundary (`write_chunks` allocates each one there).
        let all_new = self.pipeline.is_none()
            && !bytes.is_empty()
            && f.page_size().is_none()
            && fresh.coords().all(|s| !self.may_exist(s));
        if !all_new {
            let chunks: Vec<(&[u64], &[u8])> = fresh.iter().collect();
            return self.write_chunks(f, path, &chunks);
        }
        let base = f.allocate_raw(bytes.len() as u64)?;
        // The bytes first, the records after (see `write_chunks`).
        f.write(base, bytes)?;
        let step = self.shape.chunk_bytes;
        let past = || Error::Internal("a chunk batch past 2^64");
        let mut at = base.get();
        // Recorded in batches: the index's own arrays for one batch stay a few MiB whatever
        // the number of tiny chunks the buffer held.
        let mut records = Vec::with_capacity(fresh.len().min(RECORD_BATCH));
        for scaled in fresh.coords() {
            records.push((
                scaled,
                ChunkRecord {
                    addr: Some(Addr(at)),
                    size: 0,
                    mask: 0,
                },
            ));
            at = at.checked_add(step).ok_or_else(past)?;
            if records.len() == RECORD_BATCH {
                self.index.insert_many(f, &records)?;
                records.clear();
            }
        }
        if !records.is_empty() {
            self.index.insert_many(f, &records)?;
        }
        for (k, &h) in self.known.iter_mut().zip(fresh.hi()) {
            *k = (*k).max(h);
        }
        Ok(())
    }

    /// The implicit index's case, unfiltered: every chunk has its place already (chunk `i` of
    /// the grid at the run's address plus `i` chunks) and nothing is recorded. The fresh
    /// buffer holds the chunks back to back, so chunks whose places follow each other are one
    /// slice of it: one write per run, from the buffer, with no per-chunk bookkeeping (an
    /// append writes chunks in grid order, so a flush is usually one write).
    fn write_fresh_implicit(&mut self, f: &Store, fresh: &Fresh) -> Result<()> {
        let bytes = fresh.bytes();
        let step = self.shape.chunk_bytes;
        let past = || Error::Internal("a fresh chunk past its buffer");
        // The run being gathered: its file address, and its start and end in `bytes`.
        let mut run: Option<(u64, usize, usize)> = None;
        let mut from = 0usize;
        for scaled in fresh.coords() {
            let to = usize::try_from(step)
                .ok()
                .and_then(|s| from.checked_add(s))
                .filter(|&to| to <= bytes.len())
                .ok_or_else(past)?;
            let at = match self.index.get(f, scaled)? {
                Some(ChunkRecord { addr: Some(a), .. }) => a.get(),
                _ => return Err(Error::Internal("an implicit index without a place")),
            };
            run = match run {
                Some((start, s, e))
                    if e == from
                        && e.checked_sub(s)
                            .and_then(|len| start.checked_add(len as u64))
                            == Some(at) =>
                {
                    Some((start, s, to))
                }
                other => {
                    if let Some((start, s, e)) = other {
                        f.write(Addr(start), bytes.get(s..e).ok_or_else(past)?)?;
                    }
                    Some((at, from, to))
                }
            };
            from = to;
        }
        if let Some((start, s, e)) = run {
            f.write(Addr(start), bytes.get(s..e).ok_or_else(past)?)?;
        }
        Ok(())
    }

    /// Filter and write chunks, then record them in the index (see
    /// [`write_encoded`](Self::write_encoded)). Many filtered chunks are encoded on the file's
    /// filter pool.
    pub(crate) fn write_chunks(
        &mut self,
        f: &Store,
        path: &str,
        chunks: &[(&[u64], &[u8])],
    ) -> Result<()> {
        if self.pipeline.is_none() {
            let stored: Vec<NewChunk<'_>> = chunks
                .iter()
                .map(|&(scaled, data)| (scaled, Cow::Borrowed(data), 0))
                .collect();
            return self.write_encoded(f, &stored);
        }
        // A group at a time, each filter thread's share of a group about its core's cache: the
        // stored bytes are copied into the page cache while they are still in the cache they
        // were compressed into, where a whole batch's (tens of MiB) would be read back from
        // memory. One thread writing 2 MiB Zstandard chunks spent 9% of its time in that copy
        // with a batch, 2% by groups (`cargo xtask bench --filters`, climate Zstd).
        let threads = f.threads.max(1);
        let per_thread = usize::try_from(self.shape.chunk_bytes)
            .ok()
            .and_then(|chunk| HOT_BYTES_PER_THREAD.checked_div(chunk))
            .unwrap_or(1)
            .max(1);
        let group = per_thread.saturating_mul(threads);
        for part in chunks.chunks(group) {
            self.write_chunk_group(f, path, part)?;
        }
        Ok(())
    }

    /// Filter `chunks` (on the filter pool where there are several) and write them, then
    /// record them in the index.
    fn write_chunk_group(
        &mut self,
        f: &Store,
        path: &str,
        chunks: &[(&[u64], &[u8])],
    ) -> Result<()> {
        // One output buffer per chunk, the last group's where there are: after the first group
        // a chunk is compressed into pages already mapped, with no allocation.
        let mut outs: Vec<Vec<u8>> = Vec::with_capacity(chunks.len());
        outs.extend((0..chunks.len()).map(|_| self.spare.pop().unwrap_or_default()));
        if let Some(p) = &self.pipeline {
            for (out, &(_, data)) in outs.iter_mut().zip(chunks) {
                reserve_output(out, p.encoded_room(data.len()));
            }
        }
        // The stored bytes' length in the output buffer and the filter mask (`None`: stored as
        // it is). A buffer is left longer than its chunk (see `Pipeline::encode_to`).
        type Stored = Option<(usize, u32)>;
        let encode = |(&(scaled, data), out): (&(&[u64], &[u8]), &mut Vec<u8>)| -> Result<Stored> {
            match (&self.pipeline, self.skips_filters(scaled)) {
                (Some(p), false) => {
                    let stored = p.encode_to(data, out).map_err(|source| Error::Filter {
                        dataset: path.to_owned(),
                        chunk: scaled.to_vec(),
                        source,
                    })?;
                    Ok(Some(stored))
                }
                _ => Ok(None),
            }
        };
        // Asked only when there is filtering to share: the pool's threads start on first use.
        let pool = (chunks.len() > 1).then(|| f.pool()).flatten();
        let masks: Vec<Result<Stored>> = match pool {
            Some(p) => p.install(|| {
                use rayon::prelude::*;
                chunks
                    .par_iter()
                    .zip(outs.par_iter_mut())
                    .map(encode)
                    .collect()
            }),
            None => chunks.iter().zip(outs.iter_mut()).map(encode).collect(),
        };
        let result = (|| {
            let mut stored = Vec::with_capacity(chunks.len());
            for ((&(scaled, data), m), out) in chunks.iter().zip(masks).zip(&outs) {
                stored.push(match m? {
                    Some((len, mask)) => {
                        let bytes = out
                            .get(..len)
                            .ok_or(Error::Internal("a filtered chunk past its buffer"))?;
                        (scaled, Cow::Borrowed(bytes), mask)
                    }
                    None => (scaled, Cow::Borrowed(data), 0),
                });
            }
            self.write_encoded(f, &stored)
        })();
        self.keep_spare(outs);
        result
    }

    /// Keep `outs` for the next batch's output, within [`SPARE_BUFFERS`] and [`SPARE_BYTES`]:
    /// as they are, not emptied, so that the next chunks' worst cases are not zeroed again.
    fn keep_spare(&mut self, outs: Vec<Vec<u8>>) {
        let mut room: usize = self.spare.iter().map(Vec::capacity).sum();
        for out in outs {
            if out.capacity() == 0 {
                continue;
            }
            room = room.saturating_add(out.capacity());
            if self.spare.len() >= SPARE_BUFFERS || room > SPARE_BYTES {
                break;
            }
            self.spare.push(out);
        }
    }

    /// Write chunks already filtered (their stored bytes and filter masks), then record them in
    /// the index. Chunks that keep their place are written there (adjacent ones in one call);
    /// all the others get one new block, written in one call (adjacent chunks land next to each
    /// other in the file).
    pub(crate) fn write_encoded(&mut self, f: &Store, chunks: &[NewChunk<'_>]) -> Result<()> {
        let filtered = self.pipeline.is_some();
        // Under SWMR a reader may be reading a stored chunk while it is rewritten: a filtered
        // one at its old place with its old size, an unfiltered one whose visible elements
        // change (a fixed-size dataset being filled). A write is not atomic to a concurrent
        // read, so the reader could see a mix of old and new bytes (libhdf5's SWMR writer lets
        // that happen). New bytes go to new space instead, and the index moves to them once
        // they are written: a reader sees the old chunk or the new one. The old space is
        // freed, and not reused while SWMR lasts.
        let keep_place = !f.swmr_write();
        let mut fresh: Vec<(&[u64], &[u8], u32)> = Vec::new();
        let mut in_place = Coalesced::default();
        for (scaled, stored, mask) in chunks {
            let (scaled, stored, mask): (&[u64], &[u8], u32) = (scaled, stored, *mask);
            let recorded = self.recorded(f, scaled)?;
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
                }) if keep_place && (!filtered || size == stored.len() as u64) => {
                    in_place.put(f, a, stored)?;
                    let rec = ChunkRecord {
                        addr: Some(a),
                        size: if filtered { stored.len() as u64 } else { 0 },
                        mask,
                    };
                    if old != Some(rec) {
                        // The record changes (its filter mask): the chunk must be in the file
                        // before the index can point at it.
                        in_place.finish(f)?;
                        self.index.insert(f, scaled, rec, None)?;
                    }
                }
                Some(ChunkRecord {
                    addr: Some(a),
                    size,
                    ..
                }) => {
                    // Unfiltered records carry no size (above): every chunk is `chunk_bytes`.
                    f.free(
                        a,
                        if filtered {
                            size
                        } else {
                            self.shape.chunk_bytes
                        },
                    )?;
                    fresh.push((scaled, stored, mask));
                }
                _ => fresh.push((scaled, stored, mask)),
            }
        }
        in_place.finish(f)?;
        // The bytes first, the records after: every new chunk is in the file before any index
        // block can point at it, whatever the metadata cache flushes or evicts in between, so
        // no record has to wait for its chunk (no chunk proxy) and a crash can leave only
        // unreferenced bytes behind.
        let mut rest = fresh.as_slice();
        let paged = f.page_size().is_some();
        while !rest.is_empty() {
            let mut n = 0usize;
            let mut total = 0u64;
            // In a paged file one chunk a batch: each gets its own place in raw-data pages.
            let batch_bytes = if paged { 0 } else { WRITE_BATCH_BYTES };
            for (_, b, _) in rest {
                let len = b.len() as u64;
                if n > 0 && total.saturating_add(len) > batch_bytes {
                    break;
                }
                total = total
                    .checked_add(len)
                    .ok_or_else(|| Error::Internal("a chunk batch past 2^64"))?;
                n = n.saturating_add(1);
            }
            let (batch, tail) = rest.split_at_checked(n).unwrap_or((rest, &[]));
            rest = tail;
            let base = f.allocate_raw(total)?;
            // The chunks back to back, written from where they lie (a file gathers them with
            // vectored writes): no block is allocated and filled first.
            let parts: Vec<&[u8]> = batch.iter().map(|(_, b, _)| *b).collect();
            match parts.as_slice() {
                [one] => f.write(base, one)?,
                _ => f.write_gather(base, &parts)?,
            }
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
                    .ok_or_else(|| Error::Internal("a chunk batch past 2^64"))?;
                records.push((*scaled, rec));
            }
            self.index.insert_many(f, &records)?;
            for &(scaled, _) in &records {
                self.note_recorded(scaled);
            }
        }
        Ok(())
    }

    /// The chunk at `scaled` for a read: the cached or fresh copy, or the stored one (or fill)
    /// loaded into the cache.
    pub(crate) fn read_view(&mut self, f: &Store, path: &str, scaled: &[u64]) -> Result<&[u8]> {
        if !self.cache.get_mut().contains(scaled)
            && let Some(i) = self.fresh.position(scaled)
        {
            return self
                .fresh
                .chunk(i)
                .ok_or_else(|| Error::Internal("a fresh chunk past its buffer"));
        }
        Ok(self.cached(f, path, scaled, false)?.as_slice())
    }

    /// The chunk at `scaled` for a write (`whole`: the write sets every element), marked as
    /// changed: the cached or fresh copy; a new fresh chunk when the write covers a chunk that
    /// is not cached (nothing to read first, nothing to ask the index); otherwise the stored
    /// chunk (or fill) loaded into the cache.
    pub(crate) fn write_target(
        &mut self,
        f: &Store,
        path: &str,
        scaled: &[u64],
        whole: bool,
    ) -> Result<&mut [u8]> {
        if !self.cache.get_mut().contains(scaled) {
            if let Some(i) = self.fresh.position(scaled) {
                return self
                    .fresh
                    .chunk_mut(i)
                    .ok_or_else(|| Error::Internal("a fresh chunk past its buffer"));
            }
            if whole {
                self.make_fresh_room(f, path)?;
                let i = self.fresh.len();
                if self.fresh.push(scaled).is_some() {
                    return self
                        .fresh
                        .chunk_mut(i)
                        .ok_or_else(|| Error::Internal("a fresh chunk past its buffer"));
                }
            }
        }
        let entry = self.cached_entry(f, path, scaled, whole)?;
        entry.dirty = true;
        Ok(&mut entry.data)
    }

    /// Write the whole chunk at `scaled` from its rows, `rows(i)` the `i`-th of `n` (each
    /// `len` bytes, in the file's order): appended straight to a new fresh chunk when the
    /// chunk is neither cached nor fresh, else copied into its buffer. `false` if the rows do
    /// not make the chunk (a row missing or the wrong length).
    pub(crate) fn write_whole_rows<'d>(
        &mut self,
        f: &Store,
        path: &str,
        scaled: &[u64],
        (n, len): (usize, usize),
        rows: impl Fn(usize) -> Option<&'d [u8]>,
    ) -> Result<bool> {
        if n.checked_mul(len) != usize::try_from(self.shape.chunk_bytes).ok() {
            return Ok(false);
        }
        if !self.cache.get_mut().contains(scaled) && self.fresh.position(scaled).is_none() {
            self.make_fresh_room(f, path)?;
            if let Some(pushed) = self.fresh.push_rows(scaled, (0..n).map(&rows)) {
                return Ok(pushed);
            }
        }
        let buf = self.write_target(f, path, scaled, true)?;
        for (i, to) in buf.chunks_exact_mut(len.max(1)).enumerate() {
            match rows(i) {
                Some(from) if from.len() == to.len() => to.copy_from_slice(from),
                _ => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Write the whole chunk at `scaled` from `data` (its bytes in the file's order): into the
    /// cached or fresh copy, or as a new fresh chunk, copied once.
    pub(crate) fn write_whole(
        &mut self,
        f: &Store,
        path: &str,
        scaled: &[u64],
        data: &[u8],
    ) -> Result<bool> {
        if !self.cache.get_mut().contains(scaled) && self.fresh.position(scaled).is_none() {
            self.make_fresh_room(f, path)?;
            if self.fresh.push_copy(scaled, data) {
                return Ok(true);
            }
        }
        let buf = self.write_target(f, path, scaled, true)?;
        match buf.get_mut(..data.len()).filter(|b| b.len() == data.len()) {
            Some(b) => {
                b.copy_from_slice(data);
                Ok(true)
            }
            None => Ok(false),
        }
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
    /// Dirty chunks the cache evicts to make room become fresh chunks (written in the next
    /// batch), or are written at once if they cannot.
    pub(crate) fn cached_entry(
        &mut self,
        f: &Store,
        path: &str,
        scaled: &[u64],
        whole: bool,
    ) -> Result<&mut Cached> {
        if self.cache.get_mut().get_mut(scaled).is_none() {
            // `load` answers fill without asking the index for a chunk known to be new.
            let data = if whole {
                self.fill_chunk(path)?
            } else {
                self.load(f, path, scaled)?
            };
            for evicted in self
                .cache
                .get_mut()
                .insert(Coords::from_slice(scaled), data, false)
            {
                if evicted.dirty {
                    self.evict_dirty(f, path, &evicted.scaled, &evicted.data)?;
                }
            }
        }
        match self.cache.get_mut().get_mut(scaled) {
            Some(c) => Ok(c),
            // The key did not fit the cache (a grid of more than 2^128 chunks).
            None => Err(Error::Unsupported(
                "chunk grids too large for the chunk cache",
            )),
        }
    }

    /// A dirty chunk left the cache: queue it with the fresh chunks (it is whole), or write it.
    fn evict_dirty(&mut self, f: &Store, path: &str, scaled: &[u64], data: &[u8]) -> Result<()> {
        if self.fresh.position(scaled).is_none() && data.len() as u64 == self.shape.chunk_bytes {
            self.make_fresh_room(f, path)?;
            if let Some(buf) = self.fresh.push(scaled) {
                buf.copy_from_slice(data);
                return Ok(());
            }
        }
        self.write_chunk(f, path, scaled, data)
    }
}

/// Give a new (empty) output buffer its whole room at once, advised huge pages when it is
/// large ([`advise_huge_pages`](crate::store::advise_huge_pages): chunks of 4 MiB and more),
/// before anything touches it: the kernel then backs it with 2 MiB pages as the compressor
/// first writes it, not 4 KiB ones (a kept buffer is faulted in once either way). A buffer
/// with room already, or whose room cannot be had, is left to grow as it is written.
pub(crate) fn reserve_output(out: &mut Vec<u8>, room: usize) {
    if out.capacity() == 0 && out.try_reserve_exact(room).is_ok() {
        crate::store::advise_huge_pages(out.as_ptr(), out.capacity());
    }
}

/// Writes at known places, adjacent ones joined into one call.
#[derive(Debug, Default)]
struct Coalesced {
    at: u64,
    buf: Vec<u8>,
}

impl Coalesced {
    /// Write `bytes` at `at`, now or with its neighbours.
    fn put(&mut self, f: &Store, at: Addr, bytes: &[u8]) -> Result<()> {
        let joins = self
            .at
            .checked_add(self.buf.len() as u64)
            .is_some_and(|end| end == at.get());
        if !self.buf.is_empty()
            && (!joins
                || (self.buf.len() as u64).saturating_add(bytes.len() as u64) > WRITE_BATCH_BYTES)
        {
            self.finish(f)?;
        }
        if bytes.len() as u64 >= WRITE_BATCH_BYTES / 16 {
            // Large chunks go as they are: no copy.
            self.finish(f)?;
            return f.write(at, bytes);
        }
        if self.buf.is_empty() {
            self.at = at.get();
        }
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    /// Write what is held.
    fn finish(&mut self, f: &Store) -> Result<()> {
        if !self.buf.is_empty() {
            f.write(Addr(self.at), &self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }
}
