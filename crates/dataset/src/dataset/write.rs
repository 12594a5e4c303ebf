//! The write path: typed writes (converted to the dataset's type), and the routes a slab
//! write takes to the chunks, chosen by one [`WritePlan`].

use smallvec::SmallVec;
use std::borrow::Cow;

use h5chunk_format::Addr;
use h5chunk_format::chunk_record::ChunkRecord;

use crate::error::{Error, Result};
use crate::index::select::IndexKind;
use crate::select::{Hyperslab, Run};
use crate::store::Store;
use crate::types::{H5Type, TypeDesc, to_le_bytes};
use h5chunk_filters::kept;

use super::chunked::Chunked;
use super::grid::{
    MAX_FAST_RANK, aligned_grid, copy_in, copy_runs, grid_position, short_chunk, step_row_major,
    whole_chunk_at,
};
use super::{DIRECT_WRITE_BYTES, Dataset, DatasetState, StorageState};

/// The routes a slab write takes to the chunks, in the order they are tried: the first that
/// takes the write does all of it, and one that does not take it has changed nothing. Each
/// route checks its own conditions, under the dataset's state, and the order is what makes
/// the cheapest correct route win. (An append tries one route before all of these:
/// `Dataset::append_whole_chunks`, whole new chunks pushed at the end of the first unlimited
/// dimension; a strided write goes to [`WritePlan::Selection`] at once.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WritePlan {
    /// A box of whole chunks inside the extent, none cached or fresh: each becomes a fresh
    /// chunk, its rows copied straight from the caller's bytes (`write_box_of_new_chunks`,
    /// `append.rs`).
    NewChunks,
    /// Exactly one chunk of the grid, of a type stored little-endian: its bytes as they are,
    /// copied once into the chunk's buffer (`write_whole_chunk`).
    WholeChunk,
    /// A selection on the chunk grid (a row or block of whole chunks), inside the extent, of a
    /// type stored little-endian: each chunk's rows copied straight into its buffer, a new
    /// fresh chunk when it is not cached, with no selection walked (`write_aligned`).
    Aligned,
    /// Anything else: the hyperslab walked chunk by chunk, each chunk read (or filled) and
    /// changed in the chunk cache (`write_selection_raw`). Takes every write.
    Selection,
}

/// Largest output buffer a thread keeps for the filtered chunks it writes one at a time.
const KEPT_CHUNK_BUFFER: usize = 16 << 20;

thread_local! {
    /// This thread's output buffer for whole filtered chunks written one a call (a frame at a
    /// time), kept between calls with what it last held (`Pipeline::encode_to`): each chunk
    /// is compressed into pages already mapped, with no allocation and no zeroing.
    static CHUNK_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// This thread's kept output buffer (empty if there is none, or it is in use).
fn take_chunk_buffer() -> Vec<u8> {
    kept::take(&CHUNK_BUFFER).unwrap_or_default()
}

/// Keep `out` as this thread's output buffer, unless it is larger than
/// [`KEPT_CHUNK_BUFFER`] or smaller than the one kept.
fn keep_chunk_buffer(out: Vec<u8>) {
    kept::keep(&CHUNK_BUFFER, out, KEPT_CHUNK_BUFFER);
}

/// Whole chunks of a slab write to a filtered dataset, compressed from the caller's bytes
/// where they lie and written together (`Chunked::write_chunks`: on the filter pool, into the
/// output buffers it keeps), a batch at a time: as many chunks as the fresh chunks' budget
/// holds, and at least two per filter thread, so that the threads share a batch evenly and
/// the compressed bytes held at once stay bounded whatever the slab's size.
struct SlabBatch {
    rank: usize,
    most: usize,
    /// The chunks' coordinates, `rank` each.
    coords: Vec<u64>,
    /// Each chunk's bytes in the slab.
    ranges: Vec<(usize, usize)>,
}

impl SlabBatch {
    fn new(c: &mut Chunked, f: &Store, rank: usize) -> SlabBatch {
        let per_budget = usize::try_from(c.shape.chunk_bytes)
            .ok()
            .and_then(|b| c.fresh_budget_mut().checked_div(b))
            .unwrap_or(1);
        let most = per_budget.max(f.threads.saturating_mul(2)).max(1);
        SlabBatch {
            rank,
            most,
            coords: Vec::with_capacity(most.saturating_mul(rank)),
            ranges: Vec::with_capacity(most),
        }
    }

    fn push(&mut self, scaled: &[u64], start: usize, end: usize) {
        self.coords.extend_from_slice(scaled);
        self.ranges.push((start, end));
    }

    fn is_full(&self) -> bool {
        self.ranges.len() >= self.most
    }

    /// Compress and write the chunks held, then forget them.
    fn write(&mut self, f: &Store, path: &str, c: &mut Chunked, le: &[u8]) -> Result<()> {
        if self.ranges.is_empty() {
            return Ok(());
        }
        let past = || Error::Internal("a slab chunk past its slab");
        let chunks: Vec<(&[u64], &[u8])> = self
            .coords
            .chunks_exact(self.rank.max(1))
            .zip(&self.ranges)
            .map(|(s, &(a, b))| Ok((s, le.get(a..b).ok_or_else(past)?)))
            .collect::<Result<_>>()?;
        c.write_chunks(f, path, &chunks)?;
        self.coords.clear();
        self.ranges.clear();
        Ok(())
    }
}

impl Dataset {
    /// Write everything from `T` values in C order (numbers of another type than the
    /// dataset's are converted as libhdf5 converts them; see [`Error::ValueOutOfRange`]).
    pub fn write<T: H5Type>(&self, data: &[T]) -> Result<()> {
        self.check_type(T::DESC)?;
        let dims = self.shape();
        if !dims.is_empty() && !dims.contains(&0) {
            // The slab writer's routes: values of the dataset's own type go from `data` as
            // they are (whole chunks copied once, into new chunks written in large blocks),
            // with no byte copy of the whole array first.
            let start: SmallVec<[u64; MAX_FAST_RANK]> = smallvec::smallvec![0; dims.len()];
            return self.write_slice(data, &start, &dims, None);
        }
        let le = self.to_dataset_type(data)?;
        self.write_selection_raw(&Hyperslab::all(&dims), le)
    }

    /// `data` as little-endian bytes of the dataset's type, converted when `T` is another.
    pub(super) fn to_dataset_type<T: H5Type>(&self, data: &[T]) -> Result<Vec<u8>> {
        let le = to_le_bytes(data);
        let dtype = self.dtype();
        if dtype.class == T::DESC.class && dtype.size == T::DESC.size {
            return Ok(le);
        }
        let mut out = vec![0u8; data.len().saturating_mul(dtype.size)];
        self.converted(T::DESC, &le, dtype, &mut out)?;
        Ok(out)
    }

    /// [`convert::convert`](crate::convert::convert), its failure named as this dataset's.
    pub(super) fn converted(
        &self,
        from: TypeDesc,
        src: &[u8],
        to: TypeDesc,
        dst: &mut [u8],
    ) -> Result<()> {
        crate::convert::convert(from, src, to, dst).map_err(|u| Error::ValueOutOfRange {
            object: self.path(),
            index: u.index as u64,
            value: u.value,
            to: to.numpy(),
        })
    }

    /// Write a hyperslab from `T` values in C order.
    pub fn write_slice<T: H5Type>(
        &self,
        data: &[T],
        start: &[u64],
        count: &[u64],
        stride: Option<&[u64]>,
    ) -> Result<()> {
        self.check_type(T::DESC)?;
        let dtype = self.dtype();
        let same = dtype.class == T::DESC.class && dtype.size == T::DESC.size;
        if same
            && cfg!(target_endian = "little")
            && let Some(le) = T::bytes(data)
        {
            // The values' own bytes: a whole chunk is copied once, into its buffer.
            return self.write_slice_raw(le, start, count, stride);
        }
        if !same {
            let le = self.to_dataset_type(data)?;
            return self.write_slice_raw(&le, start, count, stride);
        }
        let h = Hyperslab::new(start, count, stride, &self.shape())?;
        self.write_selection_raw(&h, to_le_bytes(data))
    }

    /// Write everything from little-endian bytes of the dataset's type, in C order.
    pub fn write_raw(&self, le: &[u8]) -> Result<()> {
        let dims = self.shape();
        if !dims.is_empty() && !dims.contains(&0) {
            // The slab writer's routes, as `write` takes them: whole chunks go from `le` as
            // they are, with no copy of the whole array first and no chunk buffer zeroed
            // before it is overwritten.
            let start: SmallVec<[u64; MAX_FAST_RANK]> = smallvec::smallvec![0; dims.len()];
            return self.write_slice_raw(le, &start, &dims, None);
        }
        self.write_selection_raw(&Hyperslab::all(&dims), le.to_vec())
    }

    /// Write a hyperslab from little-endian bytes of the dataset's type, by the first
    /// route (the private `WritePlan`) that takes it, in the order its variants are declared.
    pub fn write_slice_raw(
        &self,
        le: &[u8],
        start: &[u64],
        count: &[u64],
        stride: Option<&[u64]>,
    ) -> Result<()> {
        // The precedence of WritePlan, spelled out as a chain of calls: a loop over the plans
        // kept `write_slice_raw` from being inlined into its callers (35-50 more instructions
        // per append under callgrind).
        if stride.is_none()
            && (self.take(WritePlan::NewChunks, le, start, count, None)?
                || self.take(WritePlan::WholeChunk, le, start, count, None)?
                || self.take(WritePlan::Aligned, le, start, count, None)?)
        {
            return Ok(());
        }
        self.take(WritePlan::Selection, le, start, count, stride)
            .map(|_| ())
    }

    /// Write by `plan` when it takes the write: `Ok(false)`, with nothing changed, when it
    /// does not. The first three take unstrided writes only; [`WritePlan::Selection`] takes
    /// every write.
    #[inline(always)]
    fn take(
        &self,
        plan: WritePlan,
        le: &[u8],
        start: &[u64],
        count: &[u64],
        stride: Option<&[u64]>,
    ) -> Result<bool> {
        match plan {
            WritePlan::NewChunks => self.write_box_of_new_chunks(le, start, count),
            WritePlan::WholeChunk => self.write_whole_chunk(le, start, count),
            WritePlan::Aligned => self.write_aligned(le, start, count),
            WritePlan::Selection => {
                let h = Hyperslab::new(start, count, stride, &self.shape())?;
                self.write_selection_raw(&h, le.to_vec())?;
                Ok(true)
            }
        }
    }

    /// The append path: a selection that is exactly one chunk of the grid, inside the extent,
    /// of a type stored little-endian, is that chunk's bytes as they are. They are copied once,
    /// into the chunk's buffer (a new fresh chunk when the chunk is not cached), with no
    /// selection built or walked. Whether the write was of that kind (and done).
    pub(super) fn write_whole_chunk(
        &self,
        le: &[u8],
        start: &[u64],
        count: &[u64],
    ) -> Result<bool> {
        let f = &self.file.inner.store;
        f.check_writable()?;
        let encoded = if self.shared.filtered {
            self.encode_whole_chunk(le, start, count)?
        } else {
            None
        };
        let done = self.with_chunked_le(|f, path, header, c, _| {
            let Some(scaled) = whole_chunk_at(c, le, start, count) else {
                return Ok(false);
            };
            // Stored as it is, written at once with no copy to batch: a chunk encoded before the
            // state was taken, or a large unfiltered one from the caller's buffer.
            let ready = match &encoded {
                Some((bytes, len, mask)) if c.pipeline.is_some() => {
                    bytes.get(..*len).map(|b| (Cow::Borrowed(b), *mask))
                }
                _ if c.pipeline.is_none() && c.shape.chunk_bytes >= DIRECT_WRITE_BYTES => {
                    Some((Cow::Borrowed(le), 0))
                }
                _ => None,
            };
            if let Some((stored, mask)) = ready
                && !c.cache.get_mut().contains(&scaled)
                && c.fresh.position(&scaled).is_none()
            {
                c.write_encoded(f, &[(&scaled, stored, mask)])?;
                return Ok(true);
            }
            if !c.write_whole(f, path, &scaled, le)? {
                return Err(short_chunk(path, header, &scaled));
            }
            Ok(true)
        });
        if let Some((bytes, _, _)) = encoded {
            keep_chunk_buffer(bytes);
        }
        done
    }

    /// Run `body` on the chunked storage of a dataset whose type is stored little-endian
    /// (the append paths' case), holding the state: `body` gets the store, the path, the
    /// object header address, the chunked storage and the element size. `Ok(false)` for any
    /// other dataset.
    pub(super) fn with_chunked_le(
        &self,
        body: impl FnOnce(&Store, &str, Addr, &mut Chunked, usize) -> Result<bool>,
    ) -> Result<bool> {
        let f = &self.file.inner.store;
        let mut st = self.shared.write();
        let elem = st.dtype.size;
        if !st.dtype.stored_le() {
            return Ok(false);
        }
        let DatasetState {
            path,
            header,
            storage,
            ..
        } = &mut **st;
        let StorageState::Chunked(c) = storage else {
            return Ok(false);
        };
        body(f, path, *header, c, elem)
    }

    /// The append path of several chunks (a row of chunks appended to a 2-D dataset, a block of
    /// them): a selection on the chunk grid, inside the extent, of a type stored
    /// little-endian. Each chunk's rows are copied straight from `le` into the chunk's buffer
    /// (a new fresh chunk when it is not cached), with no selection built or walked. Whether
    /// the write was of that kind (and done).
    pub(super) fn write_aligned(&self, le: &[u8], start: &[u64], count: &[u64]) -> Result<bool> {
        self.file.inner.store.check_writable()?;
        self.with_chunked_le(|f, path, header, c, elem| {
            // Fixed arrays for up to four dimensions (the common ranks; others take the
            // general path): this runs once an append.
            let mut bufs = [[0u64; MAX_FAST_RANK]; 4];
            let [first_b, n_b, at_b, scaled_b] = &mut bufs;
            let rank = c.shape.chunk.len();
            let (Some(first), Some(n), Some(at), Some(scaled)) = (
                first_b.get_mut(..rank),
                n_b.get_mut(..rank),
                at_b.get_mut(..rank),
                scaled_b.get_mut(..rank),
            ) else {
                return Ok(false);
            };
            if !aligned_grid(&c.shape.chunk, &c.shape.dims, (start, count), first, n) {
                return Ok(false);
            }
            scaled.copy_from_slice(first);
            let mut chunk_b = [0u64; MAX_FAST_RANK];
            let chunk = chunk_b.get_mut(..rank).unwrap_or_default();
            chunk.copy_from_slice(&c.shape.chunk);
            let (Some(total), Some(row)) = (
                count.iter().try_fold(elem as u64, |a, &k| a.checked_mul(k)),
                chunk
                    .last()
                    .and_then(|&k| usize::try_from(k).ok()?.checked_mul(elem)),
            ) else {
                return Ok(false);
            };
            if total != le.len() as u64 || row == 0 {
                return Err(Error::arg(
                    "data",
                    format!("{} bytes for a selection of {total} bytes", le.len()),
                ));
            }
            // Bytes between consecutive indices of each dimension in `le` (row-major over `count`).
            let mut pitch = [0usize; MAX_FAST_RANK];
            let mut acc = elem;
            for (p, &k) in pitch.iter_mut().zip(count).rev() {
                *p = acc;
                acc = acc.saturating_mul(usize::try_from(k).unwrap_or(usize::MAX));
            }
            // Where each of a chunk's rows (its last dimension) starts in `le`, from where the
            // chunk starts there: the same for every chunk of the box.
            let outer = chunk.get(..rank.saturating_sub(1)).unwrap_or_default();
            let nrows = outer
                .iter()
                .try_fold(1usize, |a, &k| a.checked_mul(usize::try_from(k).ok()?));
            // Chunks of more rows than this (a million) take the general path.
            let Some(nrows) = nrows.filter(|&r| r <= 1 << 20) else {
                return Ok(false);
            };
            let mut offsets: SmallVec<[usize; 16]> = SmallVec::with_capacity(nrows);
            let mut rows_b = [0u64; MAX_FAST_RANK];
            let rows = rows_b.get_mut(..outer.len()).unwrap_or_default();
            loop {
                offsets.push((rows.iter().zip(&pitch)).fold(0usize, |o, (&r, &p)| {
                    o.saturating_add(usize::try_from(r).unwrap_or(usize::MAX).saturating_mul(p))
                }));
                if !step_row_major(rows, outer) {
                    break;
                }
            }
            let offsets: &[usize] = &offsets;
            // A filtered chunk whose rows follow on in `le` (it spans the slab's inner
            // dimensions) is compressed from `le` where it lies, with no copy into a chunk
            // buffer first, in batches that the filter pool shares out (see `SlabBatch`).
            let mut batch = (c.pipeline.is_some()
                && offsets
                    .iter()
                    .enumerate()
                    .all(|(i, &o)| i.checked_mul(row) == Some(o))
                && usize::try_from(c.shape.chunk_bytes).ok() == offsets.len().checked_mul(row))
            .then(|| SlabBatch::new(c, f, rank));
            // The chunks of the box `first .. first + n`, in row-major order; `at` counts from 0.
            loop {
                let base =
                    (at.iter().zip(&*chunk).zip(&pitch)).fold(0usize, |o, ((&a, &k), &p)| {
                        let i = usize::try_from(a.saturating_mul(k)).unwrap_or(usize::MAX);
                        o.saturating_add(i.saturating_mul(p))
                    });
                let taken = match &mut batch {
                    Some(b)
                        if !c.cache.get_mut().contains(scaled)
                            && c.fresh.position(scaled).is_none() =>
                    {
                        let end = base
                            .checked_add(offsets.len().saturating_mul(row))
                            .filter(|&e| e <= le.len())
                            .ok_or_else(|| short_chunk(path, header, scaled))?;
                        b.push(scaled, base, end);
                        if b.is_full() {
                            b.write(f, path, c, le)?;
                        }
                        true
                    }
                    _ => false,
                };
                let rows = |i: usize| {
                    let src = base.saturating_add(*offsets.get(i)?);
                    le.get(src..src.checked_add(row)?)
                };
                if !taken && !c.write_whole_rows(f, path, scaled, (offsets.len(), row), rows)? {
                    return Err(short_chunk(path, header, scaled));
                }
                if !step_row_major(at, n) {
                    if let Some(b) = &mut batch {
                        b.write(f, path, c, le)?;
                    }
                    return Ok(true);
                }
                for ((s, &f0), &a) in scaled.iter_mut().zip(&*first).zip(&*at) {
                    *s = f0.saturating_add(a);
                }
            }
        })
    }

    /// A whole filtered chunk is encoded before the state is taken for the write, so that
    /// writers on several threads compress side by side: its stored bytes and filter mask
    /// (`None` when the write is not of a whole filtered chunk).
    pub(super) fn encode_whole_chunk(
        &self,
        le: &[u8],
        start: &[u64],
        count: &[u64],
    ) -> Result<Option<(Vec<u8>, usize, u32)>> {
        let (pipeline, path, scaled) = {
            let st = self.shared.state.read();
            let StorageState::Chunked(c) = &st.storage else {
                return Ok(None);
            };
            let Some(p) = &c.pipeline else {
                return Ok(None);
            };
            match whole_chunk_at(c, le, start, count) {
                Some(scaled) if st.dtype.stored_le() && !c.skips_filters(&scaled) => {
                    (p.clone(), st.path.clone(), scaled)
                }
                _ => return Ok(None),
            }
        };
        let mut out = take_chunk_buffer();
        super::chunked::reserve_output(&mut out, pipeline.encoded_room(le.len()));
        match pipeline.encode_to(le, &mut out) {
            Ok((len, mask)) => Ok(Some((out, len, mask))),
            Err(source) => {
                keep_chunk_buffer(out);
                Err(Error::Filter {
                    dataset: path,
                    chunk: scaled.to_vec(),
                    source,
                })
            }
        }
    }

    pub(super) fn write_selection_raw(&self, h: &Hyperslab, mut data: Vec<u8>) -> Result<()> {
        let f = &self.file.inner.store;
        f.check_writable()?;
        let dims = self.shape();
        let mut st = self.shared.write();
        let elem = st.dtype.size;
        if h.len().checked_mul(elem as u64) != Some(data.len() as u64) {
            return Err(Error::arg(
                "data",
                format!(
                    "{} bytes for a selection of {} elements of {elem} bytes",
                    data.len(),
                    h.len()
                ),
            ));
        }
        st.dtype.to_from_le(&mut data);
        let DatasetState {
            path,
            header,
            storage,
            ..
        } = &mut **st;
        if let StorageState::Contiguous {
            external: Some(e), ..
        } = storage
        {
            return e.write_selection(h, &dims, &data, elem);
        }
        let StorageState::Chunked(c) = storage else {
            if matches!(storage, StorageState::Virtual(_)) {
                return Err(Error::Unsupported("writing to a virtual dataset"));
            }
            return Err(Error::Unsupported("writing contiguous or compact datasets"));
        };
        let chunk = c.shape.chunk.clone();
        let chunk_elems = c.chunk_elems();
        // Runs are written in place only where that is one plain write each: with a journal,
        // every in-place write outside a flush first copies the bytes it overwrites into the
        // journal (and makes that durable, under `Durability::Sync`), so there the chunk
        // waits in the cache and the flush journals it in one batch.
        let in_place = self
            .file
            .inner
            .journal
            .as_ref()
            .is_none_or(|j| j.is_bypassed());
        h.try_for_each_chunk(&chunk, |scaled| {
            let whole = h.covered(&chunk, scaled) == chunk_elems;
            if !whole && in_place && c.write_runs(f, path, *header, h, scaled, &data, elem)? {
                return Ok(());
            }
            let buf = c.write_target(f, path, scaled, whole)?;
            if !copy_runs(h, &chunk, scaled, |r| copy_in(buf, &data, r, elem)) {
                return Err(short_chunk(path, *header, scaled));
            }
            Ok(())
        })
    }

    /// Allocate every chunk of the current extent now (early allocation), writing fill values.
    pub(super) fn allocate_all(&self) -> Result<()> {
        let f = &self.file.inner.store;
        let mut st = self.shared.write();
        let DatasetState { path, storage, .. } = &mut **st;
        let StorageState::Chunked(c) = storage else {
            return Ok(());
        };
        if !c.alloc_early {
            return Ok(());
        }
        if c.index.kind() == IndexKind::Implicit {
            // The whole run is allocated already; a non-zero fill value must be written into
            // it, as libhdf5 does at allocation (space never written reads as zeros).
            if c.fill.iter().any(|&b| b != 0) {
                let (_, Some(base)) = c.index.layout() else {
                    return Ok(());
                };
                let n = crate::index::linear::LinearIndex::for_dataset(
                    &c.shape.max_dims,
                    &c.shape.chunk,
                )?
                .chunk_count()
                .unwrap_or(0);
                let chunk = c.fill.repeat(c.chunk_elems() as usize);
                for i in 0..n {
                    let at = i
                        .checked_mul(c.shape.chunk_bytes)
                        .and_then(|off| base.get().checked_add(off))
                        .ok_or_else(|| {
                            Error::corrupt("layout", base, format!("implicit chunk {i} past 2^64"))
                        })?;
                    f.write(Addr(at), &chunk)?;
                }
            }
            return Ok(());
        }
        let grid = c.shape.grid();
        let all = Hyperslab::all(&grid);
        for scaled in all.chunks(&vec![1; grid.len()]) {
            if c.index.get(f, &scaled)?.is_none() {
                let data = c.fill.repeat(c.chunk_elems() as usize);
                c.write_chunk(f, path, &scaled, &data)?;
            }
        }
        Ok(())
    }

    /// Write a chunk's stored bytes as they are (already filtered, with `filter_mask` saying
    /// which filters were skipped), like h5py's `write_direct_chunk`. `offset` is the chunk's
    /// first element and must lie on the chunk grid within the current extent.
    pub fn write_direct_chunk(
        &self,
        offset: &[u64],
        stored: &[u8],
        filter_mask: u32,
    ) -> Result<()> {
        let f = &self.file.inner.store;
        f.check_writable()?;
        let mut st = self.shared.write();
        let dims = self.shared.dims.read().0.clone();
        let DatasetState { path, storage, .. } = &mut **st;
        let StorageState::Chunked(c) = storage else {
            return Err(Error::Unsupported(
                "direct chunk writes to contiguous or compact datasets",
            ));
        };
        let scaled = grid_position(offset, &c.shape.chunk, &dims)?;
        let filtered = c.pipeline.is_some();
        if !filtered && stored.len() as u64 != c.shape.chunk_bytes {
            return Err(Error::arg(
                "stored",
                format!(
                    "an unfiltered chunk holds {} bytes, not {}",
                    c.shape.chunk_bytes,
                    stored.len()
                ),
            ));
        }
        // A cached or fresh copy would overwrite what is written here.
        c.cache.get_mut().remove(&scaled);
        if c.fresh.position(&scaled).is_some() {
            c.flush_fresh(f, path)?;
        }
        let old = c.index.get(f, &scaled)?;
        let addr = match old {
            Some(ChunkRecord {
                addr: Some(a),
                size,
                ..
            }) if !f.swmr_write() && (!filtered || size == stored.len() as u64) => a,
            Some(ChunkRecord {
                addr: Some(a),
                size,
                ..
            }) => {
                // Unfiltered records may carry no size: every such chunk is `chunk_bytes`.
                f.free(a, if filtered { size } else { c.shape.chunk_bytes })?;
                f.allocate_raw(stored.len() as u64)?
            }
            _ => f.allocate_raw(stored.len() as u64)?,
        };
        f.write(addr, stored)?;
        c.index.insert(
            f,
            &scaled,
            ChunkRecord {
                addr: Some(addr),
                size: if filtered { stored.len() as u64 } else { 0 },
                mask: if filtered { filter_mask } else { 0 },
            },
            // Written just above: nothing for the index to wait for.
            None,
        )?;
        c.note_recorded(&scaled);
        Ok(())
    }

    /// Write an n-dimensional array at `start` (its shape is the selection's count; cargo
    /// feature `ndarray`).
    #[cfg(feature = "ndarray")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
    pub fn write_array<T: H5Type>(
        &self,
        a: ndarray::ArrayViewD<'_, T>,
        start: &[u64],
    ) -> Result<()> {
        let count: Vec<u64> = a.shape().iter().map(|&n| n as u64).collect();
        let data: Vec<T> = a.iter().copied().collect();
        self.write_slice(&data, start, &count, None)
    }
}

impl Chunked {
    /// Write the runs `h` selects in the chunk at `scaled` (from `data`, the selection's bytes
    /// in the file's order) straight to where the chunk is stored, with no read of the chunk
    /// and past the chunk cache: when the chunk is unfiltered, stored, neither cached nor
    /// fresh, the file has no journal that would copy each run first (the caller checks),
    /// the file is not in SWMR-write mode (where a chunk is never changed in place), and
    /// [`reads_runs`](Self::reads_runs)'s rule says the chunk would not be worth caching.
    /// Runs that touch are written in one call; a strided run (elements apart in the chunk)
    /// is the one case read, changed and written back, over its span. `false`, with nothing
    /// written, when the chunk takes the cached path.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write_runs(
        &mut self,
        f: &Store,
        path: &str,
        header: Addr,
        h: &Hyperslab,
        scaled: &[u64],
        data: &[u8],
        elem: usize,
    ) -> Result<bool> {
        if self.pipeline.is_some()
            || elem == 0
            || f.swmr_write()
            || self.cache.get_mut().contains(scaled)
            || self.fresh.position(scaled).is_some()
            || !self.reads_runs(h, scaled, elem)
        {
            return Ok(false);
        }
        let Some(ChunkRecord {
            addr: Some(base), ..
        }) = self.recorded(f, scaled)?
        else {
            return Ok(false);
        };
        let short = || short_chunk(path, header, scaled);
        let e = elem as u64;
        // Each run in bytes: (first byte in the chunk, one past its last, first byte in
        // `data`, its bytes in `data`), checked against both before anything is written.
        let mut runs: Vec<(u64, u64, usize, usize, Run)> = Vec::new();
        let (mut fits, mut dense) = (true, true);
        h.runs(&self.shape.chunk, scaled, |r| {
            let span = r
                .len
                .checked_sub(1)
                .and_then(|k| k.checked_mul(r.chunk_step))
                .and_then(|k| k.checked_add(r.chunk))
                .and_then(|last| last.checked_add(1))
                .and_then(|end| end.checked_mul(e))
                .zip(r.chunk.checked_mul(e))
                .zip(
                    r.memory
                        .checked_mul(e)
                        .zip(r.len.checked_mul(e))
                        .and_then(|(m, n)| {
                            Some((usize::try_from(m).ok()?, usize::try_from(n).ok()?))
                        }),
                );
            match span {
                Some(((end, start), (m, n)))
                    if fits
                        && end <= self.shape.chunk_bytes
                        && m.checked_add(n).is_some_and(|x| x <= data.len()) =>
                {
                    // A strided run's span is read into a buffer of its size: at most twice
                    // its own bytes (or 64 KiB), else the chunk takes the cached path, which
                    // checks the chunk against the file before sizing a buffer.
                    let sparse = r.chunk_step > 1
                        && r.len > 1
                        && end.saturating_sub(start) > (n as u64).saturating_mul(2).max(1 << 16);
                    dense &= !sparse;
                    runs.push((start, end, m, n, r));
                }
                _ => fits = false,
            }
        });
        if !fits {
            return Err(short());
        }
        if !dense {
            return Ok(false);
        }
        let at = |off: u64| base.get().checked_add(off).map(Addr).ok_or_else(short);
        let mut i = 0;
        while let Some(&(start, end, m, n, r)) = runs.get(i) {
            if r.chunk_step > 1 && r.len > 1 {
                // Elements apart: the span read, changed, written back.
                // Read past the page cache: a page read would move more than the span.
                let len = usize::try_from(end.saturating_sub(start)).map_err(|_| short())?;
                let mut span = vec![0u8; len];
                f.read_uncached(at(start)?, &mut span)?;
                copy_in(&mut span, data, Run { chunk: 0, ..r }, elem).ok_or_else(short)?;
                f.write(at(start)?, &span)?;
                i = i.saturating_add(1);
                continue;
            }
            // This run and the ones that follow on in the chunk: one write; straight from
            // `data` when they follow on there too.
            let mut j = i.saturating_add(1);
            let (mut to, mut mem_to, mut as_is) = (end, m.saturating_add(n), true);
            while let Some(&(s2, e2, m2, n2, r2)) = runs.get(j) {
                if s2 != to || (r2.chunk_step > 1 && r2.len > 1) {
                    break;
                }
                as_is &= m2 == mem_to;
                to = e2;
                mem_to = m2.saturating_add(n2);
                j = j.saturating_add(1);
            }
            if as_is {
                f.write(at(start)?, data.get(m..mem_to).ok_or_else(short)?)?;
            } else {
                let mut joined =
                    Vec::with_capacity(usize::try_from(to.saturating_sub(start)).unwrap_or(0));
                for &(_, _, m2, n2, _) in runs.get(i..j).unwrap_or_default() {
                    joined
                        .extend_from_slice(data.get(m2..m2.saturating_add(n2)).ok_or_else(short)?);
                }
                f.write(at(start)?, &joined)?;
            }
            i = j;
        }
        Ok(true)
    }
}
