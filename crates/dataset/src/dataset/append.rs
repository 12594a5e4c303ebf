//! The append fast path: whole chunks appended along the first unlimited dimension of an
//! unfiltered dataset (a SWMR writer's and a logger's every call) go straight into the fresh
//! chunks, with the extent grown under the same lock and no selection or slab built.
//!
//! [`Dataset::append`] takes it when the appended slab starts and ends on the chunk grid along
//! the growing dimension and the other dimensions hold whole chunks; anything else (a partial
//! chunk, a filter, a chunk already cached or fresh there) takes the general path, which
//! resizes and then writes the slab. What an append needs that depends only on the dataset's
//! shape and the append's length is worked out once ([`AppendPlan`]) and kept while appends of
//! that length follow: the divisions and checks are not repeated on every call.

use super::chunked::Chunked;
use super::fresh::Rows;
use super::grid::{MAX_FAST_RANK, short_chunk, step_row_major};
use super::{Dataset, DatasetState, StorageState};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::types::H5Type;
use h5chunk_format::Addr;
use h5chunk_format::chunk_record::ChunkRecord;
use smallvec::SmallVec;

/// The shape of an append of whole chunks, valid while the dataset's other dimensions and the
/// append's length stay as they were.
#[derive(Clone, Debug)]
pub(crate) struct AppendPlan {
    /// Bytes appended.
    len: usize,
    /// The growing dimension.
    k: usize,
    rank: usize,
    /// The extent of every dimension but `k` (0 at `k`).
    others: [u64; MAX_FAST_RANK],
    /// Elements appended along `k`, and the chunk's extent there.
    grow: u64,
    chunk_k: u64,
    /// Where the appended chunks lie and where their rows are in the appended bytes.
    geom: BoxGeom,
}

impl AppendPlan {
    /// The plan for appending `len` bytes of `elem`-byte elements to a dataset of extent `cur`
    /// along `k`, with chunks `chunk`; `None` when they do not make whole chunks.
    fn new(len: usize, elem: u64, k: usize, cur: &[u64], chunk: &[u64]) -> Option<AppendPlan> {
        let rank = cur.len();
        if rank == 0 || rank > MAX_FAST_RANK || chunk.len() != rank || elem == 0 {
            return None;
        }
        let mut others = [0u64; MAX_FAST_RANK];
        let mut count = [0u64; MAX_FAST_RANK];
        let mut across = 1u64;
        for (u, (&d, &ck)) in cur.iter().zip(chunk).enumerate() {
            if d.checked_rem(ck)? != 0 {
                return None;
            }
            if u != k {
                if d == 0 {
                    return None;
                }
                across = across.checked_mul(d)?;
                *others.get_mut(u)? = d;
                *count.get_mut(u)? = d;
            }
        }
        let values = (len as u64).checked_div(elem)?;
        let grow = values.checked_div(across)?;
        if grow == 0 || grow.checked_mul(across)? != values {
            return None;
        }
        *count.get_mut(k)? = grow;
        // Whole chunks along `k` too, and exactly `len` bytes: the box's own checks.
        let geom = BoxPlan::new(len, elem, count.get(..rank)?, chunk)?.geom;
        Some(AppendPlan {
            len,
            k,
            rank,
            others,
            grow,
            chunk_k: *chunk.get(k)?,
            geom,
        })
    }

    /// Whether the plan holds for appending `len` bytes along `k` to extent `cur`.
    fn fits(&self, len: usize, k: usize, cur: &[u64]) -> bool {
        self.len == len
            && self.k == k
            && self.rank == cur.len()
            && cur
                .iter()
                .zip(&self.others)
                .enumerate()
                .all(|(u, (&d, &o))| u == k || d == o)
    }
}

impl Dataset {
    /// Append `le` (little-endian elements, whole slices of the dataset across its first
    /// unlimited dimension) when they make whole new chunks: `Ok(false)`, with nothing
    /// changed, when the append is not of that kind.
    pub(super) fn append_whole_chunks(&self, le: &[u8]) -> Result<bool> {
        let f = &self.file.inner.store;
        f.check_writable()?;
        let mut st = self.shared.write();
        let elem = st.dtype.size as u64;
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
        if c.pipeline.is_some() || c.alloc_early {
            return Ok(false);
        }
        let mut g = self.shared.dims.write();
        let (cur, max) = &mut *g;
        let Some(k) = max.iter().position(Option::is_none) else {
            return Ok(false);
        };
        let cur_k = cur.get(k).copied().unwrap_or(0);
        // Boxed, so that taking it out and putting it back moves a pointer.
        let plan = match c.append_plan.take() {
            Some(p) if p.fits(le.len(), k, cur) => p,
            _ => match AppendPlan::new(le.len(), elem, k, cur, &c.shape.chunk) {
                Some(p) if max.len() == p.rank && p.rank <= MAX_FAST_RANK => Box::new(p),
                _ => return Ok(false),
            },
        };
        let appended = append_with(f, c, &plan, le, cur_k, (path, *header));
        let grow = plan.grow;
        c.append_plan = Some(plan);
        let Some(len) = appended?.then(|| cur_k.checked_add(grow)).flatten() else {
            return Ok(false);
        };
        if let Some(d) = cur.get_mut(k) {
            *d = len;
        }
        c.set_grown_dims(cur);
        Ok(true)
    }
}

/// Append the chunks of `plan` from `le` to an extent of `cur_k` along the plan's dimension:
/// `Ok(false)`, with nothing changed, when the extent is off the chunk grid there or one of
/// the chunks is already held (fresh or cached).
fn append_with(
    f: &Store,
    c: &mut Chunked,
    plan: &AppendPlan,
    le: &[u8],
    cur_k: u64,
    ctx: (&str, h5chunk_format::Addr),
) -> Result<bool> {
    let AppendPlan { k, chunk_k, .. } = *plan;
    // The new chunks start here along `k`, and at 0 elsewhere.
    let first_k = match (cur_k.checked_div(chunk_k), cur_k.checked_rem(chunk_k)) {
        (Some(q), Some(0)) => q,
        _ => return Ok(false),
    };
    let mut first = [0u64; MAX_FAST_RANK];
    match first.get_mut(k) {
        Some(x) => *x = first_k,
        None => return Ok(false),
    }
    push_box(f, c, &plan.geom, &first, le, ctx)
}

/// Where the chunks of a box of whole chunks lie, and where their rows are in the slab.
#[derive(Clone, Debug)]
pub(crate) struct BoxGeom {
    rank: usize,
    /// Chunks per dimension, the chunk's shape, and the bytes between consecutive indices of
    /// each dimension in the slab.
    n: [u64; MAX_FAST_RANK],
    chunk: [u64; MAX_FAST_RANK],
    pitch: [usize; MAX_FAST_RANK],
    /// The bytes between consecutive chunks of each dimension in the slab.
    step: [usize; MAX_FAST_RANK],
    /// Chunks in the box.
    chunks: usize,
}

/// The geometry of a slab write (a selection of whole chunks, of `len` bytes and shape
/// `count`), kept for the next write of that shape.
#[derive(Clone, Debug)]
pub(crate) struct BoxPlan {
    len: usize,
    count: [u64; MAX_FAST_RANK],
    geom: BoxGeom,
}

impl BoxPlan {
    fn new(len: usize, elem: u64, count: &[u64], chunk: &[u64]) -> Option<BoxPlan> {
        let rank = count.len();
        if rank == 0 || rank > MAX_FAST_RANK || chunk.len() != rank || elem == 0 {
            return None;
        }
        let mut p = BoxPlan {
            len,
            count: [0; MAX_FAST_RANK],
            geom: BoxGeom {
                rank,
                n: [0; MAX_FAST_RANK],
                chunk: [0; MAX_FAST_RANK],
                pitch: [0; MAX_FAST_RANK],
                step: [0; MAX_FAST_RANK],
                chunks: 1,
            },
        };
        p.count.get_mut(..rank)?.copy_from_slice(count);
        p.geom.chunk.get_mut(..rank)?.copy_from_slice(chunk);
        let mut values = 1u64;
        for ((x, &d), &ck) in p.geom.n.iter_mut().zip(count).zip(chunk) {
            if d == 0 || d.checked_rem(ck)? != 0 {
                return None;
            }
            *x = d.checked_div(ck)?;
            p.geom.chunks = p.geom.chunks.checked_mul(usize::try_from(*x).ok()?)?;
            values = values.checked_mul(d)?;
        }
        if values.checked_mul(elem)? != len as u64 {
            return None;
        }
        let mut acc = usize::try_from(elem).ok()?;
        for (q, &d) in p.geom.pitch.iter_mut().zip(count).rev() {
            *q = acc;
            acc = acc.checked_mul(usize::try_from(d).ok()?)?;
        }
        for ((x, &q), &ck) in p.geom.step.iter_mut().zip(&p.geom.pitch).zip(chunk) {
            *x = q.checked_mul(usize::try_from(ck).ok()?)?;
        }
        Some(p)
    }
}

impl Dataset {
    /// Write `le` (little-endian elements) to the selection `start`, `count` when it is a box
    /// of whole chunks inside the extent, none of them cached or fresh: each becomes a new
    /// fresh chunk, its rows copied straight from `le`. `Ok(false)`, with nothing changed,
    /// for any other write.
    pub(super) fn write_box_of_new_chunks(
        &self,
        le: &[u8],
        start: &[u64],
        count: &[u64],
    ) -> Result<bool> {
        let f = &self.file.inner.store;
        f.check_writable()?;
        let mut st = self.shared.write();
        let elem = st.dtype.size as u64;
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
        let rank = c.shape.chunk.len();
        if c.pipeline.is_some() || c.alloc_early || start.len() != rank || count.len() != rank {
            return Ok(false);
        }
        let plan = match c.box_plan.take() {
            // Element by element: a call to memcmp costs more than these few words.
            Some(p) if p.len == le.len() && same_words(p.count.get(..rank), count) => p,
            _ => match BoxPlan::new(le.len(), elem, count, &c.shape.chunk) {
                Some(p) => Box::new(p),
                None => return Ok(false),
            },
        };
        // One large chunk goes straight from the caller's buffer (`write_whole_chunk`).
        let direct = plan.geom.chunks == 1 && c.shape.chunk_bytes >= super::DIRECT_WRITE_BYTES;
        let mut first = [0u64; MAX_FAST_RANK];
        // A plain loop: the zipped iterators' `all` stayed a call of its own (about 50
        // instructions a dimension under callgrind).
        let mut inside = !direct;
        for (u, x) in first.iter_mut().enumerate().take(rank) {
            if !inside {
                break;
            }
            let (Some(&s), Some(&ck), Some(&k), Some(&d)) = (
                start.get(u),
                c.shape.chunk.get(u),
                count.get(u),
                c.shape.dims.get(u),
            ) else {
                inside = false;
                break;
            };
            inside = match (s.checked_div(ck), s.checked_rem(ck), s.checked_add(k)) {
                (Some(q), Some(0), Some(end)) if end <= d => {
                    *x = q;
                    true
                }
                _ => false,
            };
        }
        let written = if inside {
            push_box(f, c, &plan.geom, &first, le, (path, *header))
        } else {
            Ok(false)
        };
        c.box_plan = Some(plan);
        written
    }
}

/// Write the box `geom` of whole chunks whose first chunk is at `first`, from the slab `le`,
/// as new fresh chunks: `Ok(false)`, with nothing changed, when one of them is cached or
/// fresh.
fn push_box(
    f: &Store,
    c: &mut Chunked,
    geom: &BoxGeom,
    first: &[u64; MAX_FAST_RANK],
    le: &[u8],
    (path, header): (&str, h5chunk_format::Addr),
) -> Result<bool> {
    let BoxGeom {
        rank,
        ref n,
        ref chunk,
        ref pitch,
        ref step,
        chunks,
    } = *geom;
    let (n, chunk, pitch, step, first) = match (
        n.get(..rank),
        chunk.get(..rank),
        pitch.get(..rank),
        step.get(..rank),
        first.get(..rank),
    ) {
        (Some(n), Some(chunk), Some(pitch), Some(step), Some(first)) => {
            (n, chunk, pitch, step, first)
        }
        _ => return Ok(false),
    };
    let mut at_b = [0u64; MAX_FAST_RANK];
    let mut scaled_b = [0u64; MAX_FAST_RANK];
    let (Some(at), Some(scaled)) = (at_b.get_mut(..rank), scaled_b.get_mut(..rank)) else {
        return Ok(false);
    };
    // `at` counts chunks from the box's first; `scaled` is where that chunk lies.
    let place = |scaled: &mut [u64], at: &[u64]| {
        for ((s, &f0), &a) in scaled.iter_mut().zip(first).zip(at) {
            *s = f0.saturating_add(a);
        }
    };
    // No fresh chunk lies in the box when, in some dimension, the box starts at or past every
    // fresh chunk (an append's box, along the growing dimension; a write past the fresh
    // chunks' box too), so that each of its chunks needs no lookup.
    let fresh_clear =
        c.fresh.is_empty() || (first.iter().zip(c.fresh.hi())).any(|(&f0, &h)| h <= f0);
    if !fresh_clear || !c.cache.get_mut().is_empty() {
        loop {
            place(scaled, at);
            if c.cache.get_mut().contains(scaled)
                || (!fresh_clear && c.fresh.position(scaled).is_some())
            {
                return Ok(false);
            }
            if !step_row_major(at, n) {
                break;
            }
        }
    }
    let inner = rank.saturating_sub(1);
    let rows = Rows {
        pitch: pitch.get(..inner).unwrap_or_default(),
        outer: chunk.get(..inner).unwrap_or_default(),
        len: chunk
            .last()
            .map_or(0, |&x| x as usize)
            .saturating_mul(pitch.last().copied().unwrap_or(0)),
    };
    // Room for every new chunk at once, unless they alone overflow the fresh budget (then
    // room is made chunk by chunk, as the general path makes it).
    let one_by_one = c
        .fresh
        .cost()
        .saturating_add(chunks.saturating_mul(c.fresh.cost_of_one()))
        > c.fresh_budget_mut();
    if one_by_one
        && c.pipeline.is_none()
        && c.shape.chunk_bytes >= super::DIRECT_WRITE_BYTES
        && f.page_size().is_none()
        && write_box_direct(f, c, (n, step, first), le, &rows)?
    {
        return Ok(true);
    }
    if !one_by_one {
        // One chunk (an append of one chunk, any rank): the plan's slab is exactly that
        // chunk, its bytes in order, so they go in whole with no rows to walk.
        if chunks == 1 {
            if !c.fresh.push_copy(first, le) {
                return Err(short_chunk(path, header, first));
            }
            return Ok(true);
        }
        // Every chunk at once: one reservation, one order check.
        if !c.fresh.push_box(first, n, le, &rows, step) {
            // The plan says the slab holds every row of every chunk.
            return Err(short_chunk(path, header, first));
        }
        return Ok(true);
    }
    c.make_fresh_room(f, path)?;
    loop {
        place(scaled, at);
        let base = (at.iter().zip(step)).fold(0usize, |b, (&a, &s)| {
            b.saturating_add((a as usize).saturating_mul(s))
        });
        c.make_fresh_room(f, path)?;
        if !c.fresh.push_strided(scaled, le, base, &rows) {
            // The plan says the slab holds every row of every chunk.
            return Err(short_chunk(path, header, scaled));
        }
        if !step_row_major(at, n) {
            break;
        }
    }
    Ok(true)
}

/// Parts gathered for one vectored write (Linux's `IOV_MAX`: one system call each).
const GATHER_PARTS: usize = 1024;

/// Index records inserted together.
const RECORD_BATCH: usize = 1 << 16;

/// [`push_box`] of large unfiltered chunks that overflow the fresh chunks' budget (a bulk
/// write: a whole array of 1 MiB chunks in one call): the chunks go from the caller's slab
/// straight to the file, with no copy into the fresh buffer and none into a write block. One
/// allocation for the box (its chunks back to back, in row-major order, as the fresh path
/// lays them); each chunk's rows, gathered from `le` (rows that follow on in `le` joined),
/// written with vectored writes of [`GATHER_PARTS`] parts; then the records, inserted in
/// batches, after every byte they point to (the order `write_chunks` keeps). `Ok(false)`,
/// with nothing changed, when the index holds one of the box's chunks already (a rewrite,
/// which keeps its places: the general path).
fn write_box_direct(
    f: &Store,
    c: &mut Chunked,
    (n, step, first): (&[u64], &[usize], &[u64]),
    le: &[u8],
    rows: &Rows<'_>,
) -> Result<bool> {
    let rank = first.len();
    let past = || Error::Internal("a chunk box past 2^64 bytes");
    let mut at_b = [0u64; MAX_FAST_RANK];
    let mut scaled_b = [0u64; MAX_FAST_RANK];
    let (Some(at), Some(scaled)) = (at_b.get_mut(..rank), scaled_b.get_mut(..rank)) else {
        return Ok(false);
    };
    let place = |scaled: &mut [u64], at: &[u64]| {
        for ((s, &f0), &a) in scaled.iter_mut().zip(first).zip(at) {
            *s = f0.saturating_add(a);
        }
    };
    // Every chunk new to the index, and the box's coordinates in order.
    let chunks = n
        .iter()
        .try_fold(1usize, |t, &x| t.checked_mul(usize::try_from(x).ok()?))
        .ok_or_else(past)?;
    let mut coords: Vec<u64> = Vec::with_capacity(chunks.saturating_mul(rank));
    loop {
        place(scaled, at);
        if c.may_exist(scaled) && c.recorded(f, scaled)?.is_some_and(|r| r.addr.is_some()) {
            return Ok(false);
        }
        coords.extend_from_slice(scaled);
        if !step_row_major(at, n) {
            break;
        }
    }
    let chunk_bytes = c.shape.chunk_bytes;
    let total = (chunks as u64).checked_mul(chunk_bytes).ok_or_else(past)?;
    let base = f.allocate_raw(total)?;
    let written = gather_box(f, base, (n, step), le, rows, total);
    if let Err(e) = written {
        // Nothing points at the space yet.
        let _ = f.free(base, total);
        return Err(e);
    }
    let mut records = Vec::with_capacity(chunks.min(RECORD_BATCH));
    let mut addr = base.get();
    for s in coords.chunks_exact(rank.max(1)) {
        records.push((
            s,
            ChunkRecord {
                addr: Some(Addr(addr)),
                size: 0,
                mask: 0,
            },
        ));
        addr = addr.checked_add(chunk_bytes).ok_or_else(past)?;
        if records.len() == RECORD_BATCH {
            c.index.insert_many(f, &records)?;
            records.clear();
        }
    }
    if !records.is_empty() {
        c.index.insert_many(f, &records)?;
    }
    for s in coords.chunks_exact(rank.max(1)) {
        c.note_recorded(s);
    }
    Ok(true)
}

/// Write the box's chunks (`n` along each dimension, chunk `at` starting at `Σ at·step` in
/// `le`, its rows where `rows` says) back to back from `base`, `total` bytes in all.
fn gather_box(
    f: &Store,
    base: Addr,
    (n, step): (&[u64], &[usize]),
    le: &[u8],
    rows: &Rows<'_>,
    total: u64,
) -> Result<()> {
    let short = || Error::Internal("a chunk box's rows past its slab");
    let mut at_b = [0u64; MAX_FAST_RANK];
    let at = at_b.get_mut(..n.len()).ok_or_else(short)?;
    let mut o_b = [0u64; MAX_FAST_RANK];
    let o = o_b.get_mut(..rows.outer.len()).ok_or_else(short)?;
    // Byte ranges of `le`, joined when they follow on; written `GATHER_PARTS` at a time.
    let mut ranges: Vec<(usize, usize)> = Vec::with_capacity(GATHER_PARTS);
    let mut written = base.get();
    let mut flush = |ranges: &mut Vec<(usize, usize)>| -> Result<()> {
        let parts: Vec<&[u8]> = ranges
            .iter()
            .map(|&(a, b)| le.get(a..b).ok_or_else(short))
            .collect::<Result<_>>()?;
        let len = ranges.iter().fold(0u64, |t, &(a, b)| {
            t.saturating_add(b.saturating_sub(a) as u64)
        });
        f.write_gather(Addr(written), &parts)?;
        written = written.saturating_add(len);
        ranges.clear();
        Ok(())
    };
    loop {
        let chunk_base = (at.iter().zip(step)).fold(0usize, |b, (&a, &s)| {
            b.saturating_add((a as usize).saturating_mul(s))
        });
        o.fill(0);
        // A chunk's first row starts a part of its own, even where it follows on from the
        // previous chunk's last row in `le`: parts then never straddle two chunks, so rows
        // gathered through the storage's bounce buffer (a chunk's worth) go out one `pwrite`
        // per chunk, as libhdf5 writes them, not in writes cut across chunk boundaries.
        let mut first = true;
        loop {
            let from = (o.iter().zip(rows.pitch)).fold(chunk_base, |b, (&i, &p)| {
                b.saturating_add((i as usize).saturating_mul(p))
            });
            let to = from.checked_add(rows.len).ok_or_else(short)?;
            if to > le.len() {
                return Err(short());
            }
            match ranges.last_mut() {
                Some(last) if last.1 == from && !first => last.1 = to,
                _ => {
                    if ranges.len() == GATHER_PARTS {
                        flush(&mut ranges)?;
                    }
                    ranges.push((from, to));
                }
            }
            first = false;
            if !step_row_major(o, rows.outer) {
                break;
            }
        }
        if !step_row_major(at, n) {
            break;
        }
    }
    if !ranges.is_empty() {
        flush(&mut ranges)?;
    }
    if written.checked_sub(base.get()) != Some(total) {
        return Err(short());
    }
    Ok(())
}

impl Dataset {
    /// Append `data` (C order) along the first unlimited dimension: the dimension grows by
    /// `data.len()` divided by the product of the other dimensions.
    pub fn append<T: H5Type>(&self, data: &[T]) -> Result<()> {
        self.check_type(T::DESC)?;
        // Values of the dataset's own type go straight to the bytes' paths; another type's are
        // converted first, so a value that does not fit changes nothing.
        let same = {
            let d = self.dtype();
            d.class == T::DESC.class && d.size == T::DESC.size
        };
        let converted = if same {
            None
        } else {
            Some(self.to_dataset_type(data)?)
        };
        if same
            && cfg!(target_endian = "little")
            && let Some(le) = T::bytes(data)
            && self.append_whole_chunks(le)?
        {
            return Ok(());
        }
        // The new extent, and where the appended slab starts and how large it is, in one pass
        // over the current dims (no copy of them kept).
        let (new, start, count) = {
            let g = self.shared.dims.read();
            let (cur, max) = (&g.0, &g.1);
            let k = max
                .iter()
                .position(Option::is_none)
                .ok_or_else(|| Error::arg("data", "append needs an unlimited dimension"))?;
            let others: u64 = (cur.iter().enumerate())
                .filter(|&(u, _)| u != k)
                .map(|(_, &d)| d)
                .product();
            let values = data.len() as u64;
            let grow = match values.checked_div(others) {
                Some(grow) if values.is_multiple_of(others) => grow,
                _ => {
                    return Err(Error::arg(
                        "data",
                        format!(
                            "{} values do not fill whole slices of {others} elements",
                            data.len()
                        ),
                    ));
                }
            };
            let old_len = *cur
                .get(k)
                .ok_or(Error::Internal("an unlimited dimension past the rank"))?;
            let len = old_len
                .checked_add(grow)
                .ok_or_else(|| Error::arg("data", "appending past 2^64 elements"))?;
            let at = |u: usize, here: u64, other: u64| if u == k { here } else { other };
            let new: SmallVec<[u64; 4]> = (cur.iter().enumerate())
                .map(|(u, &d)| at(u, len, d))
                .collect();
            let start: SmallVec<[u64; 4]> = (0..cur.len()).map(|u| at(u, old_len, 0)).collect();
            let count: SmallVec<[u64; 4]> = (cur.iter().enumerate())
                .map(|(u, &d)| at(u, grow, d))
                .collect();
            (new, start, count)
        };
        self.resize(&new)?;
        if let Some(le) = &converted {
            return self.write_slice_raw(le, &start, &count, None);
        }
        if cfg!(target_endian = "little")
            && let Some(le) = T::bytes(data)
        {
            return self.write_slice_raw(le, &start, &count, None);
        }
        self.write_slice(data, &start, &count, None)
    }
}

/// Whether `a` holds exactly the words of `b`, compared word by word for the ranks of appends:
/// a call to memcmp, or an out-of-line iterator comparison, costs more than these few words.
#[inline(always)]
fn same_words(a: Option<&[u64]>, b: &[u64]) -> bool {
    match (a, b) {
        (Some(&[a0]), &[b0]) => a0 == b0,
        (Some(&[a0, a1]), &[b0, b1]) => a0 == b0 && a1 == b1,
        (Some(a), b) => a == b,
        (None, _) => false,
    }
}
