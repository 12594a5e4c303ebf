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
use super::{Dataset, DatasetState, MAX_FAST_RANK, StorageState, short_chunk, step_row_major};
use crate::error::Result;
use crate::store::Store;

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
    /// The slab's shape, the chunks it spans per dimension, the chunk's shape, and the bytes
    /// between consecutive indices of each dimension in the appended bytes.
    count: [u64; MAX_FAST_RANK],
    n: [u64; MAX_FAST_RANK],
    chunk: [u64; MAX_FAST_RANK],
    pitch: [usize; MAX_FAST_RANK],
    /// Chunks appended.
    chunks: usize,
}

impl AppendPlan {
    /// The plan for appending `len` bytes of `elem`-byte elements to a dataset of extent `cur`
    /// along `k`, with chunks `chunk`; `None` when they do not make whole chunks.
    fn new(len: usize, elem: u64, k: usize, cur: &[u64], chunk: &[u64]) -> Option<AppendPlan> {
        let rank = cur.len();
        let mut p = AppendPlan {
            len,
            k,
            rank,
            others: [0; MAX_FAST_RANK],
            grow: 0,
            chunk_k: *chunk.get(k)?,
            count: [0; MAX_FAST_RANK],
            n: [0; MAX_FAST_RANK],
            chunk: [0; MAX_FAST_RANK],
            pitch: [0; MAX_FAST_RANK],
            chunks: 1,
        };
        if rank == 0 || chunk.len() != rank || elem == 0 {
            return None;
        }
        p.chunk.get_mut(..rank)?.copy_from_slice(chunk);
        let mut others = 1u64;
        for (u, (&d, &ck)) in cur.iter().zip(chunk).enumerate() {
            if d.checked_rem(ck)? != 0 {
                return None;
            }
            if u != k {
                if d == 0 {
                    return None;
                }
                others = others.checked_mul(d)?;
                *p.others.get_mut(u)? = d;
                *p.count.get_mut(u)? = d;
            }
        }
        let values = (len as u64).checked_div(elem)?;
        p.grow = values.checked_div(others)?;
        if p.grow == 0
            || values.checked_mul(elem)? != len as u64
            || p.grow.checked_mul(others)? != values
            || p.grow.checked_rem(p.chunk_k)? != 0
        {
            return None;
        }
        *p.count.get_mut(k)? = p.grow;
        for ((x, &d), &ck) in p.n.iter_mut().zip(&p.count).zip(&p.chunk).take(rank) {
            *x = d.checked_div(ck)?;
            p.chunks = p.chunks.checked_mul(usize::try_from(*x).ok()?)?;
        }
        let mut acc = usize::try_from(elem).ok()?;
        for (q, &d) in p.pitch.iter_mut().zip(&p.count).take(rank).rev() {
            *q = acc;
            acc = acc.checked_mul(usize::try_from(d).ok()?)?;
        }
        Some(p)
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
    (path, header): (&str, h5chunk_format::Addr),
) -> Result<bool> {
    let AppendPlan {
        k,
        rank,
        chunk_k,
        ref n,
        ref chunk,
        ref pitch,
        chunks,
        ..
    } = *plan;
    // The new chunks start here along `k`, and at 0 elsewhere.
    let first_k = match (cur_k.checked_div(chunk_k), cur_k.checked_rem(chunk_k)) {
        (Some(q), Some(0)) => q,
        _ => return Ok(false),
    };
    // No fresh chunk lies at or past the old end along `k` (they all lie inside the old
    // extent), and none of the new chunks is cached: each becomes a new fresh chunk.
    if c.fresh.hi().get(k).is_some_and(|&h| h > first_k) {
        return Ok(false);
    }
    let (n, chunk, pitch) = match (n.get(..rank), chunk.get(..rank), pitch.get(..rank)) {
        (Some(n), Some(chunk), Some(pitch)) => (n, chunk, pitch),
        _ => return Ok(false),
    };
    let mut at_b = [0u64; MAX_FAST_RANK];
    let mut scaled_b = [0u64; MAX_FAST_RANK];
    let (Some(at), Some(scaled)) = (at_b.get_mut(..rank), scaled_b.get_mut(..rank)) else {
        return Ok(false);
    };
    // `at` counts chunks from the slab's first; `scaled` is where that chunk lies.
    let place = |scaled: &mut [u64], at: &[u64]| {
        for (u, (s, &a)) in scaled.iter_mut().zip(at).enumerate() {
            *s = if u == k { first_k.saturating_add(a) } else { a };
        }
    };
    if !c.cache.get_mut().is_empty() {
        loop {
            place(scaled, at);
            if c.cache.get_mut().contains(scaled) {
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
        > c.fresh_budget();
    if one_by_one {
        c.make_fresh_room(f, path)?;
    }
    loop {
        place(scaled, at);
        let base = (at.iter().zip(chunk).zip(pitch)).fold(0usize, |b, ((&a, &ck), &p)| {
            b.saturating_add((a.saturating_mul(ck) as usize).saturating_mul(p))
        });
        if one_by_one {
            c.make_fresh_room(f, path)?;
        }
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
