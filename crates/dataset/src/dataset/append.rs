//! The append fast path: whole chunks appended along the first unlimited dimension of an
//! unfiltered dataset (a SWMR writer's and a logger's every call) go straight into the fresh
//! chunks, with the extent grown under the same lock and no selection or slab built.
//!
//! [`Dataset::append`] takes it when the appended slab starts and ends on the chunk grid along
//! the growing dimension and the other dimensions hold whole chunks; anything else (a partial
//! chunk, a filter, a chunk already cached or fresh there) takes the general path, which
//! resizes and then writes the slab.

use super::fresh::Rows;
use super::{Dataset, DatasetState, MAX_FAST_RANK, StorageState, short_chunk, step_row_major};
use crate::error::Result;

impl Dataset {
    /// Append `le` (little-endian elements, whole slices of the dataset across its first
    /// unlimited dimension) when they make whole new chunks: `Ok(false)`, with nothing
    /// changed, when the append is not of that kind.
    pub(super) fn append_whole_chunks(&self, le: &[u8]) -> Result<bool> {
        let f = &self.file.inner.store;
        f.check_writable()?;
        let mut st = self.shared.write();
        let elem = st.dtype.size as u64;
        if !st.dtype.stored_le() || elem == 0 {
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
        let rank = cur.len();
        let Some(k) = max.iter().position(Option::is_none) else {
            return Ok(false);
        };
        // The slab's shape (`count`), where its chunks start on the grid (`first`), how many
        // chunks it spans (`n`), and the chunk's shape, on the stack.
        let mut bufs = [[0u64; MAX_FAST_RANK]; 4];
        let [count_b, first_b, n_b, chunk_b] = &mut bufs;
        let (Some(count), Some(first), Some(n), Some(chunk)) = (
            count_b.get_mut(..rank),
            first_b.get_mut(..rank),
            n_b.get_mut(..rank),
            chunk_b.get_mut(..rank),
        ) else {
            return Ok(false);
        };
        if rank == 0 || c.shape.chunk.len() != rank || max.len() != rank {
            return Ok(false);
        }
        chunk.copy_from_slice(&c.shape.chunk);
        let mut others = 1u64;
        for (u, ((&d, &ck), (x, y))) in (cur.iter().zip(&*chunk))
            .zip(count.iter_mut().zip(first.iter_mut()))
            .enumerate()
        {
            let (Some(q), Some(0)) = (d.checked_div(ck), d.checked_rem(ck)) else {
                return Ok(false);
            };
            if u == k {
                *y = q;
                continue;
            }
            *x = d;
            others = match others.checked_mul(d) {
                Some(o) if d > 0 => o,
                _ => return Ok(false),
            };
        }
        let (Some(values), Some(&ck)) = ((le.len() as u64).checked_div(elem), chunk.get(k)) else {
            return Ok(false);
        };
        let (Some(grow), Some(len)) = (
            values.checked_div(others),
            cur.get(k)
                .and_then(|&d| d.checked_add(values.checked_div(others)?)),
        ) else {
            return Ok(false);
        };
        if grow == 0
            || values.checked_mul(elem) != Some(le.len() as u64)
            || grow.checked_mul(others) != Some(values)
            || grow.checked_rem(ck) != Some(0)
        {
            return Ok(false);
        }
        if let Some(x) = count.get_mut(k) {
            *x = grow;
        }
        for ((x, &d), &ck) in n.iter_mut().zip(&*count).zip(&*chunk) {
            *x = d.checked_div(ck).unwrap_or(0);
        }
        // No fresh chunk lies at or past the old end along `k` (they all lie inside the old
        // extent), and none of the new chunks is cached: each becomes a new fresh chunk.
        let first_k = first.get(k).copied().unwrap_or(0);
        if c.fresh.hi().get(k).is_some_and(|&h| h > first_k) {
            return Ok(false);
        }
        let mut at_b = [0u64; MAX_FAST_RANK];
        let mut scaled_b = [0u64; MAX_FAST_RANK];
        let (Some(at), Some(scaled)) = (at_b.get_mut(..rank), scaled_b.get_mut(..rank)) else {
            return Ok(false);
        };
        {
            let cache = c.cache.get_mut();
            loop {
                for ((s, &f0), &a) in scaled.iter_mut().zip(&*first).zip(&*at) {
                    *s = f0.saturating_add(a);
                }
                if cache.contains(scaled) {
                    return Ok(false);
                }
                if !step_row_major(at, n) {
                    break;
                }
            }
        }

        // Bytes between consecutive indices of each dimension in `le`.
        let mut pitch_b = [0usize; MAX_FAST_RANK];
        let Some(pitch) = pitch_b.get_mut(..rank) else {
            return Ok(false);
        };
        let mut acc = elem as usize;
        for (p, &d) in pitch.iter_mut().zip(&*count).rev() {
            *p = acc;
            acc = acc.saturating_mul(d as usize);
        }
        let inner = rank.saturating_sub(1);
        let rows = Rows {
            pitch: pitch.get(..inner).unwrap_or_default(),
            outer: chunk.get(..inner).unwrap_or_default(),
            len: chunk
                .last()
                .map_or(0, |&x| x as usize)
                .saturating_mul(elem as usize),
        };
        // Room for every new chunk at once, unless they alone overflow the fresh budget (then
        // room is made chunk by chunk, as the general path makes it).
        let chunks = n.iter().fold(1usize, |a, &x| a.saturating_mul(x as usize));
        let one_by_one = c
            .fresh
            .cost()
            .saturating_add(chunks.saturating_mul(c.fresh.cost_of_one()))
            > c.fresh_budget();
        if one_by_one {
            c.make_fresh_room(f, path)?;
        }
        loop {
            let mut base = 0usize;
            for (((s, &f0), &a), (&ck, &p)) in scaled
                .iter_mut()
                .zip(&*first)
                .zip(&*at)
                .zip(chunk.iter().zip(&*pitch))
            {
                *s = f0.saturating_add(a);
                base = base.saturating_add((a.saturating_mul(ck) as usize).saturating_mul(p));
            }
            if one_by_one {
                c.make_fresh_room(f, path)?;
            }
            if !c.fresh.push_strided(scaled, le, base, &rows) {
                // Checked above: the slab holds every row of every chunk.
                return Err(short_chunk(path, *header, scaled));
            }
            if !step_row_major(at, n) {
                break;
            }
        }
        if let Some(d) = cur.get_mut(k) {
            *d = len;
        }
        c.set_grown_dims(cur);
        Ok(true)
    }
}
