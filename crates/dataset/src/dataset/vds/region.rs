//! A mapping's selection made concrete: the selected elements of a dataspace of known extent,
//! walked in C order as runs along the last dimension (the order in which libhdf5 pairs the
//! elements of a virtual selection with those of its source selection).
//!
//! A region is a span tree, as libhdf5 keeps hyperslabs: at each dimension, sorted disjoint
//! spans, each with the tree of the dimensions below (shared between spans where a regular
//! hyperslab makes them equal). Counts from the file size nothing before they are checked:
//! a dimension of a regular hyperslab holds at most [`MAX_SPANS`] spans, a block union at most
//! [`MAX_BLOCKS`] blocks.

use std::sync::Arc;

use h5chunk_format::selection::RegularDim;
use smallvec::SmallVec;

use crate::error::{Error, Result};

/// The most spans one dimension of a regular hyperslab may have here.
const MAX_SPANS: u64 = 1 << 20;

/// The most spans of all dimensions of one regular hyperslab together.
const MAX_TOTAL_SPANS: usize = 1 << 21;

/// The most blocks of an irregular hyperslab (its span tree costs their square).
const MAX_BLOCKS: usize = 4096;

pub(crate) type Coords = SmallVec<[u64; 4]>;

#[derive(Debug)]
struct Span {
    lo: u64,
    len: u64,
    /// The dimensions below (`None` at the last).
    down: Option<Arc<Tree>>,
}

#[derive(Debug, Default)]
struct Tree {
    spans: Vec<Span>,
    /// Elements below this node.
    count: u64,
}

/// The selected elements of a dataspace.
#[derive(Debug, Clone)]
pub(crate) struct Region {
    rank: usize,
    tree: Arc<Tree>,
    /// The bounding box: first and one-past-last index per dimension (empty region: `lo >
    /// hi` nowhere guaranteed; check [`Region::len`]).
    lo: Coords,
    hi: Coords,
    /// The region as one block (start, shape), when it is one.
    block: Option<(Coords, Coords)>,
}

impl Region {
    /// A Cartesian product: per dimension, sorted disjoint `(start, len)` intervals.
    pub(crate) fn product(dims: &[Vec<(u64, u64)>]) -> Region {
        let rank = dims.len();
        let mut below: Option<Arc<Tree>> = None;
        for ivals in dims.iter().rev() {
            let per = below.as_ref().map_or(1, |t| t.count);
            let mut spans = Vec::with_capacity(ivals.len());
            let mut count = 0u64;
            for &(lo, len) in ivals.iter().filter(|i| i.1 > 0) {
                count = count.saturating_add(len.saturating_mul(per));
                spans.push(Span {
                    lo,
                    len,
                    down: below.clone(),
                });
            }
            below = Some(Arc::new(Tree { spans, count }));
        }
        let tree = below.unwrap_or_default();
        let lo: Coords = dims
            .iter()
            .map(|v| v.iter().filter(|i| i.1 > 0).map(|i| i.0).min().unwrap_or(0))
            .collect();
        let hi: Coords = dims
            .iter()
            .map(|v| {
                v.iter()
                    .filter(|i| i.1 > 0)
                    .map(|i| i.0.saturating_add(i.1))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let block = dims
            .iter()
            .all(|v| v.iter().filter(|i| i.1 > 0).count() == 1)
            .then(|| {
                let shape = lo
                    .iter()
                    .zip(&hi)
                    .map(|(l, h)| h.saturating_sub(*l))
                    .collect();
                (lo.clone(), shape)
            });
        Region {
            rank,
            tree,
            lo,
            hi,
            block,
        }
    }

    /// Every element of a dataspace of `dims`.
    pub(crate) fn all(dims: &[u64]) -> Region {
        let ivals: Vec<Vec<(u64, u64)>> = dims.iter().map(|&d| vec![(0, d)]).collect();
        Region::product(&ivals)
    }

    /// A regular hyperslab whose counts and blocks are all bounded.
    pub(crate) fn regular(dims: &[RegularDim]) -> Result<Region> {
        let mut ivals = Vec::with_capacity(dims.len());
        for d in dims {
            ivals.push(intervals(d, None)?);
            check_spans(&ivals)?;
        }
        Ok(Region::product(&ivals))
    }

    /// A union of blocks, `2 · rank` coordinates each (start corner, end corner inclusive).
    pub(crate) fn blocks(rank: usize, coords: &[u64]) -> Result<Region> {
        let per = rank.saturating_mul(2);
        if rank == 0 || coords.len().checked_rem(per) != Some(0) {
            return Err(Error::corrupt(
                "virtual dataset mapping",
                None,
                format!("{} block coordinates for rank {rank}", coords.len()),
            ));
        }
        let n = coords.len().checked_div(per).unwrap_or(0);
        if n > MAX_BLOCKS {
            return Err(Error::Unsupported(
                "virtual dataset selections of more than 4096 blocks",
            ));
        }
        let mut blocks: Vec<(Coords, Coords)> = Vec::with_capacity(n);
        for b in coords.chunks_exact(per) {
            let (start, end) = b.split_at(rank);
            let mut hi = Coords::new();
            for (s, e) in start.iter().zip(end) {
                match e.checked_add(1) {
                    Some(h) if e >= s => hi.push(h),
                    _ => {
                        return Err(Error::corrupt(
                            "virtual dataset mapping",
                            None,
                            format!("a block from {start:?} to {end:?}"),
                        ));
                    }
                }
            }
            blocks.push((start.iter().copied().collect(), hi));
        }
        let refs: Vec<&(Coords, Coords)> = blocks.iter().collect();
        let tree = build(&refs, 0, rank);
        let lo: Coords = (0..rank)
            .map(|d| {
                blocks
                    .iter()
                    .filter_map(|b| b.0.get(d).copied())
                    .min()
                    .unwrap_or(0)
            })
            .collect();
        let hi: Coords = (0..rank)
            .map(|d| {
                blocks
                    .iter()
                    .filter_map(|b| b.1.get(d).copied())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let block = match blocks.as_slice() {
            [(s, h)] => Some((
                s.clone(),
                s.iter().zip(h).map(|(s, h)| h.saturating_sub(*s)).collect(),
            )),
            _ => None,
        };
        Ok(Region {
            rank,
            tree: Arc::new(tree),
            lo,
            hi,
            block,
        })
    }

    pub(crate) fn rank(&self) -> usize {
        self.rank
    }

    /// Number of selected elements.
    pub(crate) fn len(&self) -> u64 {
        self.tree.count
    }

    /// One past the last selected index of each dimension.
    pub(crate) fn upper(&self) -> &[u64] {
        &self.hi
    }

    /// Whether the bounding box meets the box `[lo, hi)`.
    pub(crate) fn meets(&self, lo: &[u64], hi: &[u64]) -> bool {
        self.len() > 0
            && self
                .lo
                .iter()
                .zip(&self.hi)
                .zip(lo.iter().zip(hi))
                .all(|((a, b), (c, d))| a < d && c < b)
    }

    /// The region as one block: its start and shape.
    pub(crate) fn block(&self) -> Option<(&[u64], &[u64])> {
        self.block
            .as_ref()
            .map(|(s, h)| (s.as_slice(), h.as_slice()))
    }

    /// The runs along the last dimension, in C order: the first element's coordinates and
    /// the run's length.
    pub(crate) fn runs(&self) -> Runs<'_> {
        let mut stack = Vec::with_capacity(self.rank);
        if self.rank > 0 {
            stack.push((&*self.tree, 0usize, 0u64));
        }
        Runs {
            rank: self.rank,
            stack,
            coords: smallvec::smallvec![0; self.rank],
        }
    }
}

/// Refuse per-dimension spans that together pass [`MAX_TOTAL_SPANS`] (checked as each
/// dimension is added, so no more than one dimension's worth is made beyond it).
pub(crate) fn check_spans(ivals: &[Vec<(u64, u64)>]) -> Result<()> {
    let total = ivals.iter().fold(0usize, |n, v| n.saturating_add(v.len()));
    if total > MAX_TOTAL_SPANS {
        return Err(Error::Unsupported(
            "virtual dataset selections of more than 2^21 blocks in all dimensions",
        ));
    }
    Ok(())
}

/// The span tree of a union of blocks (start, one-past-end) from dimension `dim` down.
fn build(blocks: &[&(Coords, Coords)], dim: usize, rank: usize) -> Tree {
    let mut cuts: Vec<u64> = Vec::with_capacity(blocks.len().saturating_mul(2));
    for b in blocks {
        cuts.extend(b.0.get(dim).copied());
        cuts.extend(b.1.get(dim).copied());
    }
    cuts.sort_unstable();
    cuts.dedup();
    let mut spans: Vec<Span> = Vec::new();
    let mut count = 0u64;
    for w in cuts.windows(2) {
        let (a, b) = match w {
            [a, b] => (*a, *b),
            _ => continue,
        };
        let active: Vec<&(Coords, Coords)> = blocks
            .iter()
            .copied()
            .filter(|blk| {
                blk.0.get(dim).is_some_and(|&s| s <= a) && blk.1.get(dim).is_some_and(|&e| e >= b)
            })
            .collect();
        if active.is_empty() {
            continue;
        }
        let down = (dim.saturating_add(1) < rank)
            .then(|| Arc::new(build(&active, dim.saturating_add(1), rank)));
        let per = down.as_ref().map_or(1, |t| t.count);
        let len = b.saturating_sub(a);
        count = count.saturating_add(len.saturating_mul(per));
        // Touching spans of the last dimension make one run.
        if let Some(prev) = spans.last_mut()
            && down.is_none()
            && prev.down.is_none()
            && prev.lo.saturating_add(prev.len) == a
        {
            prev.len = prev.len.saturating_add(len);
            continue;
        }
        spans.push(Span { lo: a, len, down });
    }
    Tree { spans, count }
}

/// The spans of one dimension of a regular hyperslab, clipped at `extent` when given (a
/// block that crosses it is cut there; an unlimited count or block reaches it).
pub(crate) fn intervals(d: &RegularDim, extent: Option<u64>) -> Result<Vec<(u64, u64)>> {
    use h5chunk_format::selection::UNLIMITED;
    let end = extent.unwrap_or(u64::MAX);
    if d.block == UNLIMITED {
        if extent.is_none() {
            return Err(Error::Internal("an unlimited block left unclipped"));
        }
        return Ok(if end > d.start {
            vec![(d.start, end.saturating_sub(d.start))]
        } else {
            Vec::new()
        });
    }
    if d.count == UNLIMITED && extent.is_none() {
        return Err(Error::Internal("an unlimited count left unclipped"));
    }
    if d.count == 0 || d.block == 0 {
        return Ok(Vec::new());
    }
    // Blocks that touch: one span.
    if d.stride == d.block || d.count == 1 {
        let len = if d.count == UNLIMITED {
            end.saturating_sub(d.start)
        } else {
            d.count.saturating_mul(d.block)
        };
        let len = len.min(end.saturating_sub(d.start));
        return Ok(if len > 0 {
            vec![(d.start, len)]
        } else {
            Vec::new()
        });
    }
    if d.stride < d.block {
        return Err(Error::corrupt(
            "virtual dataset mapping",
            None,
            format!("a hyperslab of stride {} and block {}", d.stride, d.block),
        ));
    }
    let mut out = Vec::new();
    let mut k = 0u64;
    while k < d.count {
        let Some(lo) = k.checked_mul(d.stride).and_then(|o| o.checked_add(d.start)) else {
            break;
        };
        if lo >= end {
            break;
        }
        if k >= MAX_SPANS {
            return Err(Error::Unsupported(
                "virtual dataset selections of more than 2^20 blocks in one dimension",
            ));
        }
        out.push((lo, d.block.min(end.saturating_sub(lo))));
        k = k.saturating_add(1);
    }
    Ok(out)
}

/// The runs of a [`Region`] (see [`Region::runs`]).
#[derive(Debug)]
pub(crate) struct Runs<'a> {
    rank: usize,
    /// Per dimension entered: the node, the span, the offset in it (upper dimensions only).
    stack: Vec<(&'a Tree, usize, u64)>,
    coords: Coords,
}

impl<'a> Runs<'a> {
    /// The innermost dimension entered moves past its current span.
    fn next_span(&mut self) {
        if let Some((_, i, off)) = self.stack.last_mut() {
            *i = i.saturating_add(1);
            *off = 0;
        }
    }
}

impl<'a> Iterator for Runs<'a> {
    type Item = (Coords, u64);

    fn next(&mut self) -> Option<(Coords, u64)> {
        loop {
            let depth = self.stack.len();
            let (tree, i, off): (&'a Tree, usize, u64) = *self.stack.last()?;
            let Some(span) = tree.spans.get(i) else {
                // This node is done: the dimension above moves on by one index.
                self.stack.pop();
                if let Some((t, i, off)) = self.stack.last_mut() {
                    *off = off.saturating_add(1);
                    if t.spans.get(*i).is_none_or(|s| *off >= s.len) {
                        *i = i.saturating_add(1);
                        *off = 0;
                    }
                }
                continue;
            };
            let level = depth.saturating_sub(1);
            if depth >= self.rank {
                if let Some(c) = self.coords.get_mut(level) {
                    *c = span.lo;
                }
                self.next_span();
                return Some((self.coords.clone(), span.len));
            }
            if let Some(c) = self.coords.get_mut(level) {
                *c = span.lo.saturating_add(off);
            }
            match &span.down {
                Some(down) => self.stack.push((&**down, 0, 0)),
                None => self.next_span(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(r: &Region) -> Vec<(Vec<u64>, u64)> {
        r.runs().map(|(c, n)| (c.to_vec(), n)).collect()
    }

    #[test]
    fn product_runs_in_c_order() {
        let r = Region::product(&[vec![(1, 2)], vec![(0, 2), (5, 1)]]);
        assert_eq!(r.len(), 6);
        assert_eq!(
            runs(&r),
            vec![
                (vec![1, 0], 2),
                (vec![1, 5], 1),
                (vec![2, 0], 2),
                (vec![2, 5], 1)
            ]
        );
        assert!(r.block().is_none());
        assert_eq!(
            Region::all(&[2, 3]).block(),
            Some((&[0, 0][..], &[2, 3][..]))
        );
    }

    #[test]
    fn block_union_runs_in_c_order() {
        // (0,0)-(0,0) and (2,2)-(2,3), then an overlapping pair.
        let r = Region::blocks(2, &[0, 0, 0, 0, 2, 2, 2, 3]).unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(runs(&r), vec![(vec![0, 0], 1), (vec![2, 2], 2)]);
        let r = Region::blocks(2, &[0, 0, 1, 1, 1, 1, 2, 2]).unwrap();
        assert_eq!(r.len(), 7);
        assert_eq!(
            runs(&r),
            vec![(vec![0, 0], 2), (vec![1, 0], 3), (vec![2, 1], 2)]
        );
        assert!(Region::blocks(2, &[3, 0, 1, 0]).is_err());
    }

    #[test]
    fn regular_intervals_clip() {
        let d = RegularDim {
            start: 1,
            stride: 4,
            count: h5chunk_format::selection::UNLIMITED,
            block: 2,
        };
        assert_eq!(
            intervals(&d, Some(10)).unwrap(),
            vec![(1, 2), (5, 2), (9, 1)]
        );
        let d = RegularDim {
            start: 0,
            stride: 1,
            count: 1,
            block: h5chunk_format::selection::UNLIMITED,
        };
        assert_eq!(intervals(&d, Some(3)).unwrap(), vec![(0, 3)]);
        let d = RegularDim {
            start: 0,
            stride: 2,
            count: 3,
            block: 1,
        };
        assert_eq!(intervals(&d, None).unwrap(), vec![(0, 1), (2, 1), (4, 1)]);
    }
}
