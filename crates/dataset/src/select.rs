//! Hyperslab selections and how they map onto chunks.
//!
//! A selection picks, in each dimension `u`, the indices `start[u] + k·stride[u]` for
//! `k < count[u]` (h5py's `start:stop:step`). Reading or writing it touches only the chunks
//! that hold a selected element; within each chunk the copy is a sequence of runs, contiguous
//! along the last dimension when its stride is 1.
//!
//! A [`Hyperslab`] fits its dataspace (checked by [`Hyperslab::new`], true by construction for
//! [`Hyperslab::all`]): every selected index is below its dimension's size, so computing one
//! never overflows. Chunk shapes and coordinates come from the file and are not trusted: a
//! zero-sized chunk, or one lying beyond the `u64` index space, holds no selected element, and
//! a chunk shape of the wrong rank selects nothing.

use core::num::NonZeroU64;

use smallvec::SmallVec;

use crate::error::{Error, Result};

/// A regular hyperslab: `count` indices per dimension from `start`, `stride` apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hyperslab {
    start: SmallVec<[u64; 4]>,
    count: SmallVec<[u64; 4]>,
    stride: SmallVec<[NonZeroU64; 4]>,
}

/// One copy between a chunk buffer and a selection buffer (both C order), in elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// Offset of the first element in the chunk buffer.
    pub chunk: u64,
    /// Offset of the first element in the selection's buffer.
    pub memory: u64,
    /// Number of elements.
    pub len: u64,
    /// Distance between consecutive elements in the chunk buffer (1: contiguous).
    pub chunk_step: u64,
}

/// One dimension of a selection: the indices `start + k·stride` for `k < count`.
#[derive(Clone, Copy, Debug)]
struct Axis {
    start: u64,
    count: u64,
    stride: NonZeroU64,
}

impl Axis {
    /// The last selected index, or `None` when nothing is selected.
    fn last(self) -> Option<u64> {
        self.count
            .checked_sub(1)?
            .checked_mul(self.stride.get())?
            .checked_add(self.start)
    }

    /// The `k` range `[lo, hi)` that falls in chunk `s` of size `c`.
    fn k_range(self, s: u64, c: u64) -> (u64, u64) {
        // The chunk covers the indices `[s·c, s·c + c)`. One starting beyond `u64` holds no
        // index; every selected index is below a dimension size, so below `u64::MAX`, and an
        // end saturated at `u64::MAX` still bounds them all.
        let Some(lo_idx) = s.checked_mul(c) else {
            return (0, 0);
        };
        let hi_idx = lo_idx.saturating_add(c);
        // The first `k` with `start + k·stride >= lo_idx`, and the first with
        // `start + k·stride >= hi_idx` (0 when the bound is at or before `start`).
        let lo = lo_idx
            .saturating_sub(self.start)
            .div_ceil(self.stride.get());
        let hi = hi_idx
            .saturating_sub(self.start)
            .div_ceil(self.stride.get())
            .min(self.count);
        (lo, hi.max(lo))
    }
}

/// The walk of one dimension over the selected `k` of one chunk: `k` goes over `[lo, hi)`.
#[derive(Debug)]
struct Walk {
    axis: Axis,
    /// The chunk's size along the dimension.
    size: u64,
    /// The chunk's first index along the dimension.
    base: u64,
    lo: u64,
    hi: u64,
    k: u64,
}

impl Walk {
    /// Step `k` on, or back to `lo` (returning false) past the end.
    fn advance(&mut self) -> bool {
        match self.k.checked_add(1) {
            Some(k) if k < self.hi => {
                self.k = k;
                true
            }
            _ => {
                self.k = self.lo;
                false
            }
        }
    }
}

/// The chunk-buffer and selection-buffer offsets of the elements at the walks' current `k`.
///
/// `None` (overflow) cannot happen for a selection that fits its dataspace and a chunk whose
/// element count fits `u64`: the local index is below the chunk size and `k` below `count`.
fn offsets(walks: &[Walk]) -> Option<(u64, u64)> {
    walks.iter().try_fold((0u64, 0u64), |(c_off, m_off), w| {
        let local =
            w.k.checked_mul(w.axis.stride.get())?
                .checked_add(w.axis.start)?
                .checked_sub(w.base)?;
        Some((
            c_off.checked_mul(w.size)?.checked_add(local)?,
            m_off.checked_mul(w.axis.count)?.checked_add(w.k)?,
        ))
    })
}

impl Hyperslab {
    /// The selection `start`, `count`, `stride` (stride 1 when `None`), checked against a
    /// dataset of `dims`.
    pub fn new(
        start: &[u64],
        count: &[u64],
        stride: Option<&[u64]>,
        dims: &[u64],
    ) -> Result<Hyperslab> {
        let rank = dims.len();
        let stride: SmallVec<[u64; 4]> = match stride {
            Some(s) => s.iter().copied().collect(),
            None => smallvec::smallvec![1; rank],
        };
        if start.len() != rank || count.len() != rank || stride.len() != rank {
            return Err(Error::arg(
                "selection",
                format!(
                    "selection of rank {}/{}/{} on a dataset of rank {rank}",
                    start.len(),
                    count.len(),
                    stride.len()
                ),
            ));
        }
        let mut strides = SmallVec::with_capacity(rank);
        let dims_iter = start.iter().zip(count).zip(&stride).zip(dims);
        for (u, (((&s, &n), &st), &d)) in dims_iter.enumerate() {
            let Some(st) = NonZeroU64::new(st) else {
                return Err(Error::arg(
                    "selection",
                    format!("stride 0 in dimension {u}"),
                ));
            };
            strides.push(st);
            let axis = Axis {
                start: s,
                count: n,
                stride: st,
            };
            if n > 0 && axis.last().is_none_or(|l| l >= d) {
                return Err(Error::arg(
                    "selection",
                    format!(
                        "selection start {s} count {n} stride {st} leaves dimension {u} of size {d}"
                    ),
                ));
            }
        }
        Ok(Hyperslab {
            start: start.iter().copied().collect(),
            count: count.iter().copied().collect(),
            stride: strides,
        })
    }

    /// The whole of a dataset of `dims`.
    pub fn all(dims: &[u64]) -> Hyperslab {
        Hyperslab {
            start: smallvec::smallvec![0; dims.len()],
            count: dims.iter().copied().collect(),
            stride: smallvec::smallvec![NonZeroU64::MIN; dims.len()],
        }
    }

    /// Number of selected elements (`u64::MAX` if that overflows: more than any buffer holds).
    pub fn len(&self) -> u64 {
        if self.count.contains(&0) {
            return 0;
        }
        self.count
            .iter()
            .try_fold(1u64, |acc, &n| acc.checked_mul(n))
            .unwrap_or(u64::MAX)
    }

    /// Each dimension's `(start, count, stride)`.
    pub(crate) fn parts(&self) -> Vec<(u64, u64, u64)> {
        self.axes()
            .map(|a| (a.start, a.count, a.stride.get()))
            .collect()
    }

    /// Whether nothing is selected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The selection's dimensions.
    fn axes(&self) -> impl Iterator<Item = Axis> + '_ {
        self.start
            .iter()
            .zip(&self.count)
            .zip(&self.stride)
            .map(|((&start, &count), &stride)| Axis {
                start,
                count,
                stride,
            })
    }

    /// The scaled coordinates of every chunk (of dims `chunk`) holding a selected element, in
    /// C order.
    pub fn chunks(&self, chunk: &[u64]) -> Vec<Vec<u64>> {
        let mut out = Vec::new();
        let Ok(()) = self.try_for_each_chunk(chunk, |scaled| {
            out.push(scaled.to_vec());
            Ok::<(), std::convert::Infallible>(())
        });
        out
    }

    /// Call `f` with the scaled coordinates of every chunk (of dims `chunk`) holding a selected
    /// element, in C order, stopping at the first error. One coordinate buffer serves every
    /// chunk: no allocation per chunk.
    pub fn try_for_each_chunk<E>(
        &self,
        chunk: &[u64],
        mut f: impl FnMut(&[u64]) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.is_empty() || chunk.len() != self.count.len() {
            return Ok(());
        }
        let mut per_dim: SmallVec<[Vec<u64>; 4]> = SmallVec::with_capacity(chunk.len());
        for (axis, &c) in self.axes().zip(chunk) {
            // `last` is `Some`: the selection is not empty and fits the dataspace. A zero chunk
            // size holds nothing.
            let (Some(first), Some(last)) = (
                axis.start.checked_div(c),
                axis.last().and_then(|l| l.checked_div(c)),
            ) else {
                return Ok(());
            };
            per_dim.push(
                (first..=last)
                    .filter(|&s| {
                        let (lo, hi) = axis.k_range(s, c);
                        hi > lo
                    })
                    .collect(),
            );
        }
        // `idx[u]` is a position in `per_dim[u]`; none is empty (the chunk holding `start`
        // holds a selected element), so every position stays in bounds.
        let mut idx: SmallVec<[usize; 4]> = smallvec::smallvec![0usize; per_dim.len()];
        let mut scaled: SmallVec<[u64; 4]> =
            per_dim.iter().filter_map(|v| v.first().copied()).collect();
        loop {
            f(&scaled)?;
            let advanced = idx
                .iter_mut()
                .zip(&per_dim)
                .zip(scaled.iter_mut())
                .rev()
                .any(|((i, v), s)| {
                    let next = i.checked_add(1).and_then(|n| v.get(n).map(|&x| (n, x)));
                    match next {
                        Some((n, x)) => {
                            *i = n;
                            *s = x;
                            true
                        }
                        None => {
                            *i = 0;
                            *s = v.first().copied().unwrap_or(0);
                            false
                        }
                    }
                });
            if !advanced {
                return Ok(());
            }
        }
    }

    /// How many selected elements the chunk at `scaled` (dims `chunk`) holds: the product of
    /// the selected positions inside it along each dimension (what [`runs`](Self::runs) would
    /// cover, without walking them).
    pub fn covered(&self, chunk: &[u64], scaled: &[u64]) -> u64 {
        self.axes()
            .zip(chunk)
            .zip(scaled)
            .map(|((axis, &c), &s)| {
                let (lo, hi) = axis.k_range(s, c);
                hi.saturating_sub(lo)
            })
            .fold(1u64, u64::saturating_mul)
    }

    /// The copies between the chunk at `scaled` (dims `chunk`) and the selection's buffer.
    pub fn runs(&self, chunk: &[u64], scaled: &[u64], mut f: impl FnMut(Run)) {
        self.runs_while(chunk, scaled, |r| {
            f(r);
            true
        });
    }

    /// [`runs`](Self::runs) until `f` says stop (returns `false`).
    pub fn runs_while(&self, chunk: &[u64], scaled: &[u64], mut f: impl FnMut(Run) -> bool) {
        let rank = self.count.len();
        if chunk.len() != rank || scaled.len() != rank {
            return;
        }
        let mut walks: SmallVec<[Walk; 4]> = SmallVec::with_capacity(rank);
        for ((axis, &size), &s) in self.axes().zip(chunk).zip(scaled) {
            let (lo, hi) = axis.k_range(s, size);
            // A non-empty range means the chunk's first index fits `u64`.
            let base = match s.checked_mul(size) {
                Some(base) if hi > lo => base,
                _ => return,
            };
            walks.push(Walk {
                axis,
                size,
                base,
                lo,
                hi,
                k: lo,
            });
        }
        // The last dimension's `k` stays at `lo`: each run covers its whole range.
        let Some(inner) = walks.last() else {
            // Rank 0: the one element of a scalar.
            let _ = f(Run {
                chunk: 0,
                memory: 0,
                len: 1,
                chunk_step: 1,
            });
            return;
        };
        let (len, chunk_step) = (inner.hi.saturating_sub(inner.lo), inner.axis.stride.get());
        loop {
            let Some((chunk, memory)) = offsets(&walks) else {
                return;
            };
            let more = f(Run {
                chunk,
                memory,
                len,
                chunk_step,
            });
            if !more || !walks.iter_mut().rev().skip(1).any(Walk::advance) {
                return;
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)] // clippy.toml already lets tests index and unwrap
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every selected element visited once, at the right chunk and memory offsets.
    fn check(dims: &[u64], chunk: &[u64], start: &[u64], count: &[u64], stride: &[u64]) {
        let h = Hyperslab::new(start, count, Some(stride), dims).unwrap();
        let rank = dims.len();
        let mut seen = std::collections::HashMap::new();
        for scaled in h.chunks(chunk) {
            let mut any = false;
            h.runs(chunk, &scaled, |r| {
                any = true;
                for i in 0..r.len {
                    // Decode the chunk offset back to a global coordinate.
                    let mut off = r.chunk + i * r.chunk_step;
                    let mut coord = vec![0u64; rank];
                    for u in (0..rank).rev() {
                        coord[u] = scaled[u] * chunk[u] + off % chunk[u];
                        off /= chunk[u];
                    }
                    assert!(seen.insert(coord, r.memory + i).is_none(), "visited twice");
                }
            });
            assert!(any, "chunk {scaled:?} listed but holds nothing");
        }
        assert_eq!(seen.len() as u64, h.len());
        for (coord, mem) in seen {
            let mut m = 0u64;
            for u in 0..rank {
                let d = coord[u] - start[u];
                assert_eq!(d % stride[u], 0);
                m = m * count[u] + d / stride[u];
            }
            assert_eq!(m, mem);
        }
    }

    #[test]
    fn examples() {
        check(&[10], &[4], &[0], &[10], &[1]);
        check(&[10, 7], &[3, 2], &[1, 0], &[8, 7], &[1, 1]);
        check(&[100], &[4], &[3], &[10], &[9]);
        check(&[20, 20, 5], &[7, 3, 5], &[2, 1, 0], &[5, 6, 3], &[3, 3, 2]);
        assert!(Hyperslab::new(&[5], &[6], None, &[10]).is_err());
        assert!(Hyperslab::new(&[0], &[2], Some(&[0]), &[10]).is_err());
        assert!(Hyperslab::new(&[0], &[u64::MAX], Some(&[2]), &[10]).is_err());
    }

    #[test]
    fn hostile_shapes_select_nothing_rather_than_panic() {
        let h = Hyperslab::new(&[0, 0], &[4, 4], None, &[4, 4]).unwrap();
        let mut n = 0;
        // A zero chunk size, a chunk shape of the wrong rank, a chunk beyond u64.
        assert!(h.chunks(&[0, 2]).is_empty());
        assert!(h.chunks(&[2]).is_empty());
        h.runs(&[0, 2], &[0, 0], |_| n += 1);
        h.runs(&[2], &[0], |_| n += 1);
        h.runs(&[2, 2], &[0], |_| n += 1);
        h.runs(&[2, 2], &[u64::MAX, 0], |_| n += 1);
        assert_eq!(n, 0);
        // Counts whose product overflows.
        assert_eq!(Hyperslab::all(&[u64::MAX, u64::MAX]).len(), u64::MAX);
        assert_eq!(Hyperslab::all(&[u64::MAX, u64::MAX, 0]).len(), 0);
    }

    #[test]
    fn the_top_of_the_index_space() {
        // The last chunk's end, 2^64, does not fit u64.
        let h = Hyperslab::new(&[u64::MAX - 2], &[2], None, &[u64::MAX]).unwrap();
        let c = 1u64 << 63;
        assert_eq!(h.chunks(&[c]), vec![vec![1]]);
        let mut runs = Vec::new();
        h.runs(&[c], &[1], |r| runs.push(r));
        assert_eq!(
            runs,
            vec![Run {
                chunk: c - 3,
                memory: 0,
                len: 2,
                chunk_step: 1
            }]
        );
    }

    #[test]
    fn a_scalar_is_one_element() {
        let h = Hyperslab::all(&[]);
        assert_eq!(h.len(), 1);
        assert_eq!(h.chunks(&[]), vec![Vec::<u64>::new()]);
        let mut runs = Vec::new();
        h.runs(&[], &[], |r| runs.push(r));
        assert_eq!(
            runs,
            vec![Run {
                chunk: 0,
                memory: 0,
                len: 1,
                chunk_step: 1
            }]
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn every_element_once(
            spec in proptest::collection::vec((1u64..30, 1u64..8, 0u64..30, 0u64..12, 1u64..6), 1..4)
        ) {
            let dims: Vec<u64> = spec.iter().map(|s| s.0).collect();
            let chunk: Vec<u64> = spec.iter().map(|s| s.1).collect();
            let start: Vec<u64> = spec.iter().map(|s| s.2 % s.0).collect();
            let stride: Vec<u64> = spec.iter().map(|s| s.4).collect();
            let count: Vec<u64> = (0..dims.len())
                .map(|u| spec[u].3.min((dims[u] - 1 - start[u]) / stride[u] + 1))
                .collect();
            check(&dims, &chunk, &start, &count, &stride);
        }
    }
}
