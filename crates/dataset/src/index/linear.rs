//! The linear chunk index of the array indexes (fixed array, implicit, extensible array): the
//! row-major position of a chunk's scaled coordinates in the grid of *maximum* chunks.
//!
//! For the extensible array the unlimited dimension `k` is moved to the front first (libhdf5's
//! "swizzle") and its own (unbounded) chunk count never enters the products, so appending along
//! it only ever adds indexes at the end.

use crate::error::{Error, Result};

/// Maps scaled chunk coordinates to a linear index and back, computed once per dataset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinearIndex {
    /// Dimension order: `order[0]` is the most significant (the unlimited one for a swizzled
    /// index), then the others in their order.
    order: Vec<usize>,
    /// Multiplier of each position of `order`.
    down: Vec<u64>,
    /// Chunk counts per position of `order` (the first may be unbounded: `u64::MAX`).
    counts: Vec<u64>,
}

impl LinearIndex {
    /// The index over a grid of `max_chunks[u]` chunks per dimension (`None`: unlimited), with
    /// the unlimited dimension (at most one) moved to the front.
    pub fn new(max_chunks: &[Option<u64>]) -> Result<LinearIndex> {
        let mut unlimited = max_chunks
            .iter()
            .enumerate()
            .filter(|(_, m)| m.is_none())
            .map(|(u, _)| u);
        let first_unlimited = unlimited.next();
        if unlimited.next().is_some() {
            return Err(Error::arg(
                "shape",
                "a linear chunk index allows at most one unlimited dimension",
            ));
        }
        let mut order: Vec<usize> = Vec::with_capacity(max_chunks.len());
        let mut counts: Vec<u64> = Vec::with_capacity(max_chunks.len());
        if let Some(u) = first_unlimited {
            order.push(u);
            counts.push(u64::MAX);
        }
        for (u, m) in max_chunks.iter().enumerate() {
            if let Some(c) = *m {
                order.push(u);
                counts.push(c);
            }
        }
        let too_many = || Error::arg("shape", "the chunk grid has more than 2^64 chunks");
        // `down[p]` is the product of `counts[p + 1..]`.
        let mut down = vec![1u64; order.len()];
        let mut acc = 1u64;
        for (d, &c) in down.iter_mut().zip(&counts).skip(1).rev() {
            *d = acc;
            acc = acc.checked_mul(c).ok_or_else(too_many)?;
        }
        if let Some(d) = down.first_mut() {
            *d = acc;
        }
        if let Some(&first) = counts.first().filter(|&&c| c != u64::MAX) {
            acc.checked_mul(first).ok_or_else(too_many)?;
        }
        Ok(LinearIndex {
            order,
            down,
            counts,
        })
    }

    /// The index over a dataset with maximum dims `max_dims` (`None`: unlimited) and chunk dims
    /// `chunk`: `ceil(max / chunk)` chunks per dimension.
    pub fn for_dataset(max_dims: &[Option<u64>], chunk: &[u64]) -> Result<LinearIndex> {
        if max_dims.len() != chunk.len() || chunk.contains(&0) {
            return Err(Error::arg(
                "shape",
                "max dims and non-zero chunk dims must have the same rank",
            ));
        }
        let counts: Vec<Option<u64>> = max_dims
            .iter()
            .zip(chunk)
            .map(|(m, &c)| m.map(|m| m.div_ceil(c)))
            .collect();
        LinearIndex::new(&counts)
    }

    /// Total number of chunks, or `None` when a dimension is unlimited.
    pub fn chunk_count(&self) -> Option<u64> {
        self.counts.iter().try_fold(1u64, |acc, &c| {
            (c != u64::MAX).then(|| acc.checked_mul(c)).flatten()
        })
    }

    /// The linear index of `scaled` (one coordinate per dataset dimension), or `None` when it
    /// lies outside the grid.
    pub fn index(&self, scaled: &[u64]) -> Option<u64> {
        if scaled.len() != self.order.len() {
            return None;
        }
        let mut idx = 0u64;
        for ((&u, &count), &down) in self.order.iter().zip(&self.counts).zip(&self.down) {
            let s = *scaled.get(u)?;
            if s >= count {
                return None;
            }
            idx = idx.checked_add(s.checked_mul(down)?)?;
        }
        Some(idx)
    }

    /// The scaled coordinates of linear index `idx`.
    pub fn scaled(&self, mut idx: u64) -> Vec<u64> {
        let mut out = vec![0u64; self.order.len()];
        for (&u, &down) in self.order.iter().zip(&self.down) {
            // `order` is a permutation of the dimensions, so `u` is in bounds. A zero
            // multiplier (a grid with no chunks along a later dimension) leaves `idx` whole.
            if let (Some(o), Some(q), Some(r)) =
                (out.get_mut(u), idx.checked_div(down), idx.checked_rem(down))
            {
                *o = q;
                idx = r;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_over_the_max_grid() {
        // 2-D (10, 15) with chunk (3, 5): max chunks (4, 3).
        let li = LinearIndex::for_dataset(&[Some(10), Some(15)], &[3, 5]).unwrap();
        assert_eq!(li.chunk_count(), Some(12));
        assert_eq!(li.index(&[0, 0]), Some(0));
        assert_eq!(li.index(&[1, 2]), Some(5));
        assert_eq!(li.index(&[3, 2]), Some(11));
        assert_eq!(li.index(&[4, 0]), None);
        for i in 0..12 {
            assert_eq!(li.index(&li.scaled(i)), Some(i));
        }
    }

    #[test]
    fn swizzles_the_unlimited_dimension_first() {
        // Shape (3, inf) with chunk (2, 3): idx = scaled[1] * 2 + scaled[0] (reference §3).
        let li = LinearIndex::for_dataset(&[Some(3), None], &[2, 3]).unwrap();
        assert_eq!(li.chunk_count(), None);
        assert_eq!(li.index(&[0, 0]), Some(0));
        assert_eq!(li.index(&[1, 0]), Some(1));
        assert_eq!(li.index(&[0, 1]), Some(2));
        assert_eq!(li.index(&[1, 7]), Some(15));
        assert_eq!(li.scaled(15), vec![1, 7]);
        // Unlimited first: plain row-major.
        let li = LinearIndex::for_dataset(&[None, Some(10)], &[1, 4]).unwrap();
        assert_eq!(li.index(&[5, 2]), Some(17));
    }

    #[test]
    fn rejects_two_unlimited_dims_and_overflow() {
        assert!(LinearIndex::new(&[None, None]).is_err());
        assert!(LinearIndex::new(&[Some(1 << 63), Some(3)]).is_err());
    }

    #[test]
    fn an_empty_grid_does_not_divide_by_zero() {
        let li = LinearIndex::new(&[Some(3), Some(0)]).unwrap();
        assert_eq!(li.chunk_count(), Some(0));
        assert_eq!(li.index(&[0, 0]), None);
        assert_eq!(li.scaled(5).len(), 2);
    }
}
