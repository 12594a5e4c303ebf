//! Selections as h5py and numpy write them: `d[:, 2]`, `d[10:20]`, `d[::2, 5:]`, as Rust
//! ranges and indices, `dataset.select((.., 2))`, or with the `ndarray` feature ndarray's own
//! `s![.., 2]`; resolved against the dataset's extent into the start/count/stride of a
//! hyperslab.
//!
//! ```
//! # fn main() -> h5chunk::Result<()> {
//! # let dir = std::env::temp_dir().join(format!("h5chunk-select-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).unwrap();
//! let file = h5chunk::File::create(dir.join("grid.h5"))?;
//! let d = file.new_dataset::<i32>().shape(&[3, 4]).chunk(&[3, 4]).create("grid")?;
//! d.write(&(0..12).collect::<Vec<i32>>())?;
//! // h5py's d[:, 2]: a column, one dimension fewer.
//! let column = d.select((.., 2))?;
//! assert_eq!(column.shape(), [3]);
//! assert_eq!(column.read::<i32>()?, [2, 6, 10]);
//! // d[1:, ::2] (`Dim::stepped` for a step), and d[2, 3] = -1.
//! use h5chunk::Dim;
//! assert_eq!(d.select((1.., Dim::stepped(.., 2)))?.read::<i32>()?, [4, 6, 8, 10]);
//! d.select((2, 3))?.write(&[-1])?;
//! assert_eq!(d.read_slice::<i32>(&[2, 3], &[1, 1], None)?, [-1]);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok(())
//! # }
//! ```

use std::ops::{Bound, RangeBounds};

use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::types::H5Type;

/// What one dimension of a [`Selection`] takes. Negative indices count from the end, as in
/// numpy (`-1` is the last element).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dim {
    /// One index (h5py's `d[2]`, `d[-1]`): the dimension is dropped from the result's shape.
    Index(i64),
    /// Every `step`-th index from `start` up to, not including, `end` (`None`: the extent);
    /// h5py's `d[start:end:step]`.
    Range {
        /// The first index.
        start: i64,
        /// One past the last index, or the extent.
        end: Option<i64>,
        /// The step (h5py takes 1 and up).
        step: i64,
    },
}

impl Dim {
    /// Every `step`-th index of `range` (h5py's `d[a:b:step]`): `Dim::stepped(.., 2)`.
    pub fn stepped(range: impl Into<Dim>, step: i64) -> Dim {
        match range.into() {
            Dim::Range { start, end, .. } => Dim::Range { start, end, step },
            // One index stepped is still that index.
            one => one,
        }
    }

    fn from_bounds<T: Copy + TryInto<i64>>(range: &impl RangeBounds<T>) -> Dim {
        // Past i64's range: saturated, so past any extent.
        let wide = |v: T| v.try_into().unwrap_or(i64::MAX);
        let start = match range.start_bound() {
            Bound::Included(&s) => wide(s),
            Bound::Excluded(&s) => wide(s).saturating_add(1),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => Some(wide(e).saturating_add(1)),
            Bound::Excluded(&e) => Some(wide(e)),
            Bound::Unbounded => None,
        };
        Dim::Range {
            start,
            end,
            step: 1,
        }
    }
}

macro_rules! dim_from_index {
    ($($t:ty),*) => {$(
        impl From<$t> for Dim {
            fn from(i: $t) -> Dim {
                Dim::Index(i.try_into().unwrap_or(i64::MAX))
            }
        }
    )*};
}
dim_from_index!(i32, i64, u32, u64, usize);

macro_rules! dim_from_range {
    ($($t:ty),*) => {$(
        impl From<std::ops::Range<$t>> for Dim {
            fn from(r: std::ops::Range<$t>) -> Dim {
                Dim::from_bounds(&r)
            }
        }
        impl From<std::ops::RangeFrom<$t>> for Dim {
            fn from(r: std::ops::RangeFrom<$t>) -> Dim {
                Dim::from_bounds(&r)
            }
        }
        impl From<std::ops::RangeTo<$t>> for Dim {
            fn from(r: std::ops::RangeTo<$t>) -> Dim {
                Dim::from_bounds(&r)
            }
        }
        impl From<std::ops::RangeInclusive<$t>> for Dim {
            fn from(r: std::ops::RangeInclusive<$t>) -> Dim {
                Dim::from_bounds(&r)
            }
        }
        impl From<std::ops::RangeToInclusive<$t>> for Dim {
            fn from(r: std::ops::RangeToInclusive<$t>) -> Dim {
                Dim::from_bounds(&r)
            }
        }
    )*};
}
dim_from_range!(i32, i64, u32, u64, usize);

impl From<std::ops::RangeFull> for Dim {
    fn from(_: std::ops::RangeFull) -> Dim {
        Dim::Range {
            start: 0,
            end: None,
            step: 1,
        }
    }
}

/// A selection of a dataset's elements, one [`Dim`] per dimension, from the leading
/// dimensions (dimensions not named are taken whole, as in numpy): from a tuple of ranges and
/// indices (`(.., 2)`, `(1..3, 0..4)`, `(5,)`), a single one (`..`, `7`), a `Vec<Dim>`, or
/// with the `ndarray` feature ndarray's `s![..]`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Selection {
    dims: Vec<Dim>,
}

impl Selection {
    /// Every element.
    pub fn all() -> Selection {
        Selection::default()
    }

    /// The selection's dims.
    pub fn dims(&self) -> &[Dim] {
        &self.dims
    }

    /// The hyperslab of a dataset of extent `shape`: start, count and stride per dimension,
    /// and the shape of the result (the indexed dimensions dropped).
    pub fn resolve(&self, shape: &[u64]) -> Result<Resolved> {
        if self.dims.len() > shape.len() {
            return Err(Error::arg(
                "selection",
                format!(
                    "{} dimensions selected of a dataset of {}",
                    self.dims.len(),
                    shape.len()
                ),
            ));
        }
        let mut r = Resolved::default();
        let whole = Dim::from(..);
        for (k, &n) in shape.iter().enumerate() {
            // numpy's negative indices: from the end.
            let len = i64::try_from(n).unwrap_or(i64::MAX);
            let from_end = |i: i64| if i < 0 { i.saturating_add(len) } else { i };
            match self.dims.get(k).copied().unwrap_or(whole) {
                Dim::Index(i) => {
                    let at = from_end(i);
                    if at < 0 || at >= len {
                        return Err(Error::arg(
                            "selection",
                            format!("index {i} of dimension {k} is outside its extent {n}"),
                        ));
                    }
                    r.start.push(at.unsigned_abs());
                    r.count.push(1);
                    r.stride.push(1);
                }
                Dim::Range { start, end, step } => {
                    if step < 1 {
                        return Err(Error::arg(
                            "selection",
                            format!("a step of {step} (h5py too takes steps of 1 and up)"),
                        ));
                    }
                    // Clamped to the extent, as numpy clamps slice bounds.
                    let start = from_end(start).clamp(0, len);
                    let end = end.map_or(len, from_end).clamp(0, len);
                    let count = end.saturating_sub(start).max(0).unsigned_abs();
                    let count = count.div_ceil(step.unsigned_abs());
                    r.start.push(start.unsigned_abs());
                    r.count.push(count);
                    r.stride.push(step.unsigned_abs());
                    r.shape.push(count);
                }
            }
        }
        Ok(r)
    }
}

/// A [`Selection`] resolved against an extent.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Resolved {
    /// The first element's index per dimension.
    pub start: Vec<u64>,
    /// Elements per dimension.
    pub count: Vec<u64>,
    /// Step per dimension.
    pub stride: Vec<u64>,
    /// The result's shape: `count` without the indexed dimensions.
    pub shape: Vec<u64>,
}

impl From<Dim> for Selection {
    fn from(d: Dim) -> Selection {
        Selection { dims: vec![d] }
    }
}

impl From<Vec<Dim>> for Selection {
    fn from(dims: Vec<Dim>) -> Selection {
        Selection { dims }
    }
}

impl From<&[Dim]> for Selection {
    fn from(dims: &[Dim]) -> Selection {
        Selection {
            dims: dims.to_vec(),
        }
    }
}

macro_rules! selection_from_one {
    ($($t:ty),*) => {$(
        impl From<$t> for Selection {
            fn from(d: $t) -> Selection {
                Selection { dims: vec![Dim::from(d)] }
            }
        }
    )*};
}
selection_from_one!(
    i32,
    i64,
    u32,
    u64,
    usize,
    std::ops::RangeFull,
    std::ops::Range<i32>,
    std::ops::Range<i64>,
    std::ops::Range<u64>,
    std::ops::Range<usize>,
    std::ops::RangeFrom<i32>,
    std::ops::RangeFrom<i64>,
    std::ops::RangeFrom<u64>,
    std::ops::RangeFrom<usize>,
    std::ops::RangeTo<i32>,
    std::ops::RangeTo<i64>,
    std::ops::RangeTo<u64>,
    std::ops::RangeTo<usize>,
    std::ops::RangeInclusive<i32>,
    std::ops::RangeInclusive<i64>,
    std::ops::RangeInclusive<u64>,
    std::ops::RangeInclusive<usize>
);

macro_rules! selection_from_tuple {
    ($($name:ident),+) => {
        impl<$($name: Into<Dim>),+> From<($($name,)+)> for Selection {
            #[allow(non_snake_case)]
            fn from(($($name,)+): ($($name,)+)) -> Selection {
                Selection { dims: vec![$($name.into()),+] }
            }
        }
    };
}
selection_from_tuple!(A);
selection_from_tuple!(A, B);
selection_from_tuple!(A, B, C);
selection_from_tuple!(A, B, C, D);
selection_from_tuple!(A, B, C, D, E);
selection_from_tuple!(A, B, C, D, E, F);

#[cfg(feature = "ndarray")]
#[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
impl<T, Din: ndarray::Dimension, Dout: ndarray::Dimension> From<ndarray::SliceInfo<T, Din, Dout>>
    for Selection
where
    T: AsRef<[ndarray::SliceInfoElem]>,
{
    /// ndarray's `s![..]`: ranges and indices, negative ones from the end as in numpy;
    /// negative steps and new axes have no h5py equivalent and are refused when resolved.
    fn from(info: ndarray::SliceInfo<T, Din, Dout>) -> Selection {
        let wide = |v: isize| i64::try_from(v).unwrap_or(i64::MAX);
        let dims = info
            .as_ref()
            .iter()
            .map(|e| match *e {
                ndarray::SliceInfoElem::Index(i) => Dim::Index(wide(i)),
                ndarray::SliceInfoElem::Slice { start, end, step } => Dim::Range {
                    start: wide(start),
                    end: end.map(wide),
                    step: wide(step),
                },
                // A new axis selects nothing of the file: refused as a step of 0.
                ndarray::SliceInfoElem::NewAxis => Dim::Range {
                    start: 0,
                    end: None,
                    step: 0,
                },
            })
            .collect();
        Selection { dims }
    }
}

/// A selection of one dataset's elements ([`Dataset::select`]), to read or write.
#[derive(Debug)]
pub struct Selected<'a> {
    dataset: &'a Dataset,
    at: Resolved,
}

impl Selected<'_> {
    /// The shape of what the selection reads: one length per range, none for an index (as
    /// numpy's `d[:, 2]` has one dimension fewer than `d`).
    pub fn shape(&self) -> &[u64] {
        &self.at.shape
    }

    /// How many elements it selects.
    pub fn len(&self) -> u64 {
        self.at.count.iter().product()
    }

    /// Whether it selects no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The start, count and stride it resolved to (for
    /// [`Dataset::read_slice`](crate::Dataset::read_slice) and kin).
    pub fn hyperslab(&self) -> &Resolved {
        &self.at
    }

    fn stride(&self) -> Option<&[u64]> {
        (self.at.stride.iter().any(|&s| s != 1)).then_some(self.at.stride.as_slice())
    }

    /// The selected elements as `T`, in C order (converted as any typed read is).
    pub fn read<T: H5Type>(&self) -> Result<Vec<T>> {
        self.dataset
            .read_slice(&self.at.start, &self.at.count, self.stride())
    }

    /// Fill `out` (exactly the selected elements) from the selection.
    pub fn read_into<T: H5Type>(&self, out: &mut [T]) -> Result<()> {
        self.dataset
            .read_slice_into(&self.at.start, &self.at.count, self.stride(), out)
    }

    /// Write the selected elements from `data` (C order; converted as any typed write is).
    pub fn write<T: H5Type>(&self, data: &[T]) -> Result<()> {
        self.dataset
            .write_slice(data, &self.at.start, &self.at.count, self.stride())
    }

    /// The selected elements as an array of the selection's [`shape`](Self::shape) (cargo
    /// feature `ndarray`).
    #[cfg(feature = "ndarray")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
    pub fn read_array<T: H5Type>(&self) -> Result<ndarray::ArrayD<T>> {
        let shape: Vec<usize> = (self.at.shape.iter())
            .map(|&d| usize::try_from(d).unwrap_or(usize::MAX))
            .collect();
        ndarray::ArrayD::from_shape_vec(shape, self.read::<T>()?)
            .map_err(|_| Error::Internal("ndarray refused a selection's own shape"))
    }
}

impl Dataset {
    /// A selection of the dataset's elements, as h5py's `d[...]` writes it: `d.select((.., 2))`
    /// is `d[:, 2]`, `d.select(1..3)` is `d[1:3]`; with the `ndarray` feature,
    /// `d.select(s![.., 2])`. Read or write it with [`Selected::read`] and
    /// [`Selected::write`]. Negative indices count from the end; an index outside the extent
    /// is an error, and range bounds past it stop at it, as in numpy.
    pub fn select(&self, selection: impl Into<Selection>) -> Result<Selected<'_>> {
        let at = selection.into().resolve(&self.shape())?;
        Ok(Selected { dataset: self, at })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_as_numpy_slices() {
        let shape = [5u64, 4];
        let r = Selection::from((.., 2)).resolve(&shape).unwrap();
        assert_eq!(
            (r.start, r.count, r.shape),
            (vec![0, 2], vec![5, 1], vec![5])
        );
        let r = Selection::from(1..3).resolve(&shape).unwrap();
        assert_eq!(
            (r.start, r.count, r.shape),
            (vec![1, 0], vec![2, 4], vec![2, 4])
        );
        let r = Selection::from((Dim::stepped(1.., 2), 0..=1))
            .resolve(&shape)
            .unwrap();
        assert_eq!(
            (r.start, r.count, r.stride),
            (vec![1, 0], vec![2, 2], vec![2, 1])
        );
        // numpy's d[-1, -3:]: from the end.
        let r = Selection::from((-1, -3..)).resolve(&shape).unwrap();
        assert_eq!(
            (r.start, r.count, r.shape),
            (vec![4, 1], vec![1, 3], vec![3])
        );
        // Bounds past the extent stop at it; a start past the end selects nothing.
        let r = Selection::from((3..99, 9..)).resolve(&shape).unwrap();
        assert_eq!(r.count, [2, 0]);
        let r = Selection::from(Dim::stepped(0..5, 2))
            .resolve(&shape)
            .unwrap();
        assert_eq!(r.count, [3, 4]);
        assert!(Selection::from((5, 0)).resolve(&shape).is_err());
        assert!(Selection::from((-6, 0)).resolve(&shape).is_err());
        assert!(Selection::from((0, 0, 0)).resolve(&shape).is_err());
        assert!(
            Selection::from(Dim::stepped(.., 0))
                .resolve(&shape)
                .is_err()
        );
        assert!(
            Selection::from(Dim::stepped(.., -1))
                .resolve(&shape)
                .is_err()
        );
        assert_eq!(Selection::all().resolve(&shape).unwrap().shape, [5, 4]);
        assert_eq!(
            Selection::from(usize::MAX)
                .resolve(&shape)
                .map(|r| r.start)
                .ok(),
            None
        );
    }
}
