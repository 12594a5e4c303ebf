//! Resizing: growing in memory, shrinking by dropping the chunks past the new extent and
//! resetting the cut ones to the fill value, as libhdf5 does.

use crate::error::{Error, Result};

use super::chunked;
use super::grid::step_row_major;
use super::{Dataset, DatasetState, StorageState};

impl Dataset {
    /// Change the current dimensions within the maximum ones. Shrinking drops the chunks wholly
    /// outside the new extent (their space is freed) and resets the elements of the cut chunks
    /// beyond it to the fill value, as libhdf5 does.
    pub fn resize(&self, dims: &[u64]) -> Result<()> {
        let f = &self.file.inner.store;
        f.check_writable()?;
        {
            // The append path: no dimension shrinks, so no chunk is dropped or cut and the
            // index learns of the new extent from the chunks written into it. The dims change
            // in memory; the dataspace message is written at the next flush.
            let mut st = self.shared.write();
            if let StorageState::Chunked(c) = &mut st.storage {
                let mut g = self.shared.dims.write();
                let (cur, max) = &mut *g;
                if let Some(changed) = grows_within(dims, cur, max) {
                    if changed {
                        chunked::copy_dims(cur, dims);
                        c.set_grown_dims(dims);
                    }
                    return Ok(());
                }
            }
        }
        let old = {
            let g = self.shared.dims.read();
            let (cur, max) = (&g.0, &g.1);
            if dims.len() != max.len()
                || dims.iter().zip(max).any(|(&d, m)| m.is_some_and(|m| d > m))
            {
                return Err(Error::arg(
                    "dims",
                    format!("cannot resize to {dims:?} within {max:?}"),
                ));
            }
            // The old extent matters only to a shrink; growing copies nothing.
            let shrinks = dims.iter().zip(cur).any(|(n, o)| n < o);
            shrinks.then(|| cur.clone())
        };
        let mut st = self.shared.write();
        let DatasetState { path, storage, .. } = &mut **st;
        let StorageState::Chunked(c) = storage else {
            return Err(Error::Unsupported(
                "resizing contiguous or compact datasets",
            ));
        };
        let shrinks = old.is_some();
        if let Some(old) = old {
            // Write what is cached so the index knows every chunk, then prune.
            c.flush_cache(f, path)?;
            let chunk = c.shape.chunk.clone();
            let chunks = match pruned_region(&chunk, &old, dims) {
                // A small region past the new extent: its chunks are looked up one by one
                // (a shrink by a few rows costs a few lookups, not a walk of the index).
                Some(region) => {
                    let mut found = Vec::new();
                    for scaled in region {
                        if let Some(rec) = c.index.get(f, &scaled)? {
                            found.push((scaled, rec));
                        }
                    }
                    found
                }
                None => {
                    let mut all = Vec::new();
                    c.index.for_each(f, &mut |s, r| all.push((s.to_vec(), r)))?;
                    all
                }
            };
            for (scaled, rec) in chunks {
                let outside = scaled
                    .iter()
                    .zip(&chunk)
                    .zip(dims)
                    // A chunk starting past 2^64 starts past `d` too.
                    .any(|((&s, &cd), &d)| s.checked_mul(cd).is_none_or(|start| start >= d));
                if outside {
                    c.index.remove(f, &scaled)?;
                    c.cache.get_mut().remove(&scaled);
                    if let Some(a) = rec.addr {
                        let len = if c.pipeline.is_some() {
                            rec.size
                        } else {
                            c.shape.chunk_bytes
                        };
                        f.free(a, len)?;
                    }
                    continue;
                }
                let cut = scaled.iter().zip(&chunk).zip(dims.iter().zip(&old)).any(
                    |((&s, &cd), (&n, &o))| {
                        let end = s.checked_add(1).and_then(|e| e.checked_mul(cd));
                        end.is_none_or(|end| end > n) && n < o
                    },
                );
                if cut {
                    let elem = c.fill.len();
                    let fill = c.fill.clone();
                    let buf = c.cached(f, path, &scaled, false)?;
                    reset_outside(buf, &scaled, &chunk, dims, &fill, elem);
                    if let Some(e) = c.cache.get_mut().get_mut(&scaled) {
                        e.dirty = true;
                    }
                }
            }
        }
        if shrinks {
            c.index.set_dims(f, dims)?;
        }
        c.set_grown_dims(dims);
        drop(st);
        let mut g = self.shared.dims.write();
        g.0.clear();
        g.0.extend_from_slice(dims);
        Ok(())
    }
}

/// Whether `dims` grows (or keeps) every dimension of `cur` within `max`: `Some(changed)`, or
/// `None` when a dimension shrinks, passes its maximum or the ranks differ. Word by word for
/// the ranks of appends (every append's resize asks): zipped iterators and a call to memcmp
/// cost more than these few words.
#[inline(always)]
fn grows_within(dims: &[u64], cur: &[u64], max: &[Option<u64>]) -> Option<bool> {
    let within = |d: u64, o: u64, m: Option<u64>| d >= o && m.is_none_or(|m| d <= m);
    match (dims, cur, max) {
        (&[d0], &[o0], &[m0]) => within(d0, o0, m0).then_some(d0 != o0),
        (&[d0, d1], &[o0, o1], &[m0, m1]) => {
            (within(d0, o0, m0) && within(d1, o1, m1)).then_some(d0 != o0 || d1 != o1)
        }
        _ => (dims.len() == max.len()
            && dims.len() == cur.len()
            && (dims.iter().zip(cur).zip(max)).all(|((&d, &o), &m)| within(d, o, m)))
        .then(|| dims != cur),
    }
}

/// The scaled coordinates of every chunk of the `old` extent that reaches past the `new` one
/// (to drop or to cut), when there are at most [`PRUNE_LOOKUPS`]; `None` when there are more
/// (walking the index is then cheaper) or a bound overflows. For each dimension that shrinks,
/// the slab of chunks from the first one the new extent does not hold whole, with the
/// dimensions before it that shrink too kept inside theirs, so that no chunk comes twice.
pub(super) fn pruned_region(chunk: &[u64], old: &[u64], new: &[u64]) -> Option<Vec<Vec<u64>>> {
    let rank = chunk.len();
    if old.len() != rank || new.len() != rank {
        return None;
    }
    // Per dimension: chunks in the old extent, and chunks the new extent holds whole.
    let grid: Vec<u64> = (old.iter().zip(chunk))
        .map(|(&o, &c)| o.checked_add(c.checked_sub(1)?)?.checked_div(c))
        .collect::<Option<_>>()?;
    let whole: Vec<u64> = (new.iter().zip(chunk))
        .map(|(&n, &c)| n.checked_div(c))
        .collect::<Option<_>>()?;
    let mut out = Vec::new();
    for d in 0..rank {
        let (Some(&n), Some(&o)) = (new.get(d), old.get(d)) else {
            return None;
        };
        if n >= o {
            continue;
        }
        // The slab: dimension d from `whole[d]`, earlier shrinking dimensions inside their
        // whole chunks, every other dimension over the old grid.
        let mut lo = vec![0u64; rank];
        let mut hi = grid.clone();
        for e in 0..rank {
            let (Some(l), Some(h), Some(&w)) = (lo.get_mut(e), hi.get_mut(e), whole.get(e)) else {
                return None;
            };
            if e == d {
                *l = w;
            } else if e < d && new.get(e) < old.get(e) {
                *h = (*h).min(w);
            }
        }
        let count = (lo.iter().zip(&hi))
            .try_fold(1u64, |a, (&l, &h)| a.checked_mul(h.saturating_sub(l)))?;
        if count == 0 {
            continue;
        }
        if (out.len() as u64).saturating_add(count) > PRUNE_LOOKUPS {
            return None;
        }
        let span: Vec<u64> = (lo.iter().zip(&hi))
            .map(|(&l, &h)| h.saturating_sub(l))
            .collect();
        let mut rel = vec![0u64; rank];
        loop {
            out.push(
                (lo.iter().zip(&rel))
                    .map(|(&l, &r)| l.saturating_add(r))
                    .collect(),
            );
            if !step_row_major(&mut rel, &span) {
                break;
            }
        }
    }
    Some(out)
}

/// The most chunk lookups a shrink makes before it walks the whole index instead.
pub(super) const PRUNE_LOOKUPS: u64 = 4096;

/// Reset the elements of chunk `scaled` that lie outside `dims` to `fill` (`elem` bytes).
pub(super) fn reset_outside(
    buf: &mut [u8],
    scaled: &[u64],
    chunk: &[u64],
    dims: &[u64],
    fill: &[u8],
    elem: usize,
) {
    if elem == 0 {
        return;
    }
    // Along each dimension, the chunk's local indices below `inside` lie within `dims` (none
    // when the chunk starts past the end, or past 2^64).
    let inside: Vec<u64> = scaled
        .iter()
        .zip(chunk)
        .zip(dims)
        .map(|((&s, &c), &d)| s.checked_mul(c).map_or(0, |start| d.saturating_sub(start)))
        .collect();
    let n: u64 = chunk.iter().product();
    for (i, slot) in (0..n).zip(buf.chunks_exact_mut(elem)) {
        // Element `i` in C order; every chunk dimension is at least 1, or `n` would be 0.
        let mut rest = i;
        let mut outside = false;
        for (&c, &lim) in chunk.iter().zip(&inside).rev() {
            outside |= rest.checked_rem(c).unwrap_or(0) >= lim;
            rest = rest.checked_div(c).unwrap_or(0);
        }
        if outside {
            slot.copy_from_slice(fill);
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]
mod prune_tests {
    use super::pruned_region;
    use std::collections::BTreeSet;

    /// Every chunk of the old grid that reaches past the new extent in a dimension that
    /// shrinks, by brute force.
    fn brute(chunk: &[u64], old: &[u64], new: &[u64]) -> BTreeSet<Vec<u64>> {
        let grid: Vec<u64> = old.iter().zip(chunk).map(|(o, c)| o.div_ceil(*c)).collect();
        let mut out = BTreeSet::new();
        let mut at = vec![0u64; chunk.len()];
        if grid.contains(&0) {
            return out;
        }
        loop {
            let past = (0..chunk.len()).any(|d| new[d] < old[d] && (at[d] + 1) * chunk[d] > new[d]);
            if past {
                out.insert(at.clone());
            }
            if !super::step_row_major(&mut at, &grid) {
                return out;
            }
        }
    }

    #[test]
    fn the_pruned_region_is_every_chunk_past_the_new_extent_once() {
        let cases: &[(&[u64], &[u64], &[u64])] = &[
            (&[16], &[100], &[98]),
            (&[16], &[100], &[96]),
            (&[16], &[100], &[0]),
            (&[4, 3], &[10, 9], &[7, 9]),
            (&[4, 3], &[10, 9], &[10, 4]),
            (&[4, 3], &[10, 9], &[5, 2]),
            (&[2, 3, 2], &[7, 8, 5], &[3, 8, 1]),
            (&[2, 3, 2], &[7, 8, 5], &[7, 8, 5]),
        ];
        for &(chunk, old, new) in cases {
            let got = pruned_region(chunk, old, new).unwrap();
            let set: BTreeSet<Vec<u64>> = got.iter().cloned().collect();
            assert_eq!(
                set.len(),
                got.len(),
                "{chunk:?} {old:?} {new:?}: a chunk twice"
            );
            assert_eq!(set, brute(chunk, old, new), "{chunk:?} {old:?} {new:?}");
        }
        // Too many to look up one by one: walk the index instead.
        assert!(pruned_region(&[1, 1], &[100, 100], &[0, 0]).is_none());
    }
}
