//! Hyperslab selections and how they map onto chunks.
//!
//! A selection picks, in each dimension `u`, the indices `start[u] + k·stride[u]` for
//! `k < count[u]` (h5py's `start:stop:step`). Reading or writing it touches only the chunks
//! that hold a selected element; within each chunk the copy is a sequence of runs, contiguous
//! along the last dimension when its stride is 1.

use crate::error::{Error, Result};

/// A regular hyperslab: `count` indices per dimension from `start`, `stride` apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hyperslab {
    start: Vec<u64>,
    count: Vec<u64>,
    stride: Vec<u64>,
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
        let stride = stride.map_or_else(|| vec![1; rank], <[u64]>::to_vec);
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
        for u in 0..rank {
            if stride[u] == 0 {
                return Err(Error::arg(
                    "selection",
                    format!("stride 0 in dimension {u}"),
                ));
            }
            if count[u] > 0 {
                let last = (count[u] - 1)
                    .checked_mul(stride[u])
                    .and_then(|x| x.checked_add(start[u]));
                if last.is_none_or(|l| l >= dims[u]) {
                    return Err(Error::arg(
                        "selection",
                        format!(
                            "selection start {} count {} stride {} leaves dimension {u} of size {}",
                            start[u], count[u], stride[u], dims[u]
                        ),
                    ));
                }
            }
        }
        Ok(Hyperslab {
            start: start.to_vec(),
            count: count.to_vec(),
            stride,
        })
    }

    /// The whole of a dataset of `dims`.
    pub fn all(dims: &[u64]) -> Hyperslab {
        Hyperslab {
            start: vec![0; dims.len()],
            count: dims.to_vec(),
            stride: vec![1; dims.len()],
        }
    }

    /// Number of selected elements.
    pub fn len(&self) -> u64 {
        self.count.iter().product()
    }

    /// Whether nothing is selected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `k` range `[lo, hi)` of dimension `u` that falls in chunk `s` of size `c`.
    fn k_range(&self, u: usize, s: u64, c: u64) -> (u64, u64) {
        let (start, stride, count) = (self.start[u], self.stride[u], self.count[u]);
        let lo_idx = s * c;
        let hi_idx = lo_idx + c; // exclusive
        let lo = if lo_idx <= start {
            0
        } else {
            (lo_idx - start).div_ceil(stride)
        };
        let hi = if hi_idx <= start {
            0
        } else {
            ((hi_idx - 1 - start) / stride + 1).min(count)
        };
        (lo, hi.max(lo))
    }

    /// The scaled coordinates of every chunk (of dims `chunk`) holding a selected element, in
    /// C order.
    pub fn chunks(&self, chunk: &[u64]) -> Vec<Vec<u64>> {
        if self.is_empty() {
            return Vec::new();
        }
        let rank = chunk.len();
        let per_dim: Vec<Vec<u64>> = (0..rank)
            .map(|u| {
                let first = self.start[u] / chunk[u];
                let last = (self.start[u] + (self.count[u] - 1) * self.stride[u]) / chunk[u];
                (first..=last)
                    .filter(|&s| {
                        let (lo, hi) = self.k_range(u, s, chunk[u]);
                        hi > lo
                    })
                    .collect()
            })
            .collect();
        let mut out = Vec::new();
        let mut idx = vec![0usize; rank];
        loop {
            out.push((0..rank).map(|u| per_dim[u][idx[u]]).collect());
            let mut u = rank;
            loop {
                if u == 0 {
                    return out;
                }
                u -= 1;
                idx[u] += 1;
                if idx[u] < per_dim[u].len() {
                    break;
                }
                idx[u] = 0;
            }
        }
    }

    /// The copies between the chunk at `scaled` (dims `chunk`) and the selection's buffer.
    pub fn runs(&self, chunk: &[u64], scaled: &[u64], mut f: impl FnMut(Run)) {
        let rank = chunk.len();
        let ranges: Vec<(u64, u64)> = (0..rank)
            .map(|u| self.k_range(u, scaled[u], chunk[u]))
            .collect();
        if ranges.iter().any(|(lo, hi)| hi <= lo) {
            return;
        }
        let last = rank - 1;
        let mut k: Vec<u64> = ranges.iter().map(|r| r.0).collect();
        loop {
            let (mut c_off, mut m_off) = (0u64, 0u64);
            for u in 0..rank {
                let local = self.start[u] + k[u] * self.stride[u] - scaled[u] * chunk[u];
                c_off = c_off * chunk[u] + local;
                m_off = m_off * self.count[u] + k[u];
            }
            f(Run {
                chunk: c_off,
                memory: m_off,
                len: ranges[last].1 - ranges[last].0,
                chunk_step: self.stride[last],
            });
            let mut u = last;
            loop {
                if u == 0 {
                    return;
                }
                u -= 1;
                k[u] += 1;
                if k[u] < ranges[u].1 {
                    break;
                }
                k[u] = ranges[u].0;
            }
        }
    }
}

#[cfg(test)]
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
