//! h5py's `d[key]` keys (integers, slices with a positive step, `...`, `()`), resolved
//! against a dataset's shape into the start, count and stride of one hyperslab, with the shape
//! numpy gives the result.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PySlice, PyTuple};

/// One hyperslab, and the shape of what it reads.
#[derive(Debug, Clone)]
pub struct Hyperslab {
    pub start: Vec<u64>,
    pub count: Vec<u64>,
    pub stride: Vec<u64>,
    /// One length per sliced dimension; none for an integer index.
    pub shape: Vec<usize>,
    /// The one list (or boolean mask) of indices h5py allows per selection: the hyperslab
    /// spans them, and the read picks them from it.
    pub pick: Option<Pick>,
}

/// The indices of a list or mask along one dimension.
#[derive(Debug, Clone)]
pub struct Pick {
    /// The dimension of the dataset they index.
    pub axis: usize,
    /// The dimension of the result they make.
    pub out_axis: usize,
    /// The indices, increasing, each once.
    pub at: Vec<u64>,
}

impl Hyperslab {
    /// The stride, when any is not 1.
    pub fn stride(&self) -> Option<&[u64]> {
        self.stride
            .iter()
            .any(|&s| s != 1)
            .then_some(self.stride.as_slice())
    }

    /// The shape the hyperslab reads: `shape`, with a pick's dimension as long as the span of
    /// its indices.
    pub fn slab_shape(&self) -> Vec<usize> {
        let mut s = self.shape.clone();
        if let Some(p) = &self.pick
            && let (Some(d), Some(&c)) = (s.get_mut(p.out_axis), self.count.get(p.axis))
        {
            *d = usize::try_from(c).unwrap_or(usize::MAX);
        }
        s
    }

    /// The pick's indices relative to the start of the hyperslab.
    pub fn pick_relative(&self) -> Vec<u64> {
        match &self.pick {
            Some(p) => {
                let first = self.start.get(p.axis).copied().unwrap_or(0);
                p.at.iter().map(|&i| i.saturating_sub(first)).collect()
            }
            None => Vec::new(),
        }
    }

    /// Whether it selects no element.
    pub fn is_empty(&self) -> bool {
        self.count.contains(&0)
    }
}

/// Resolve `key` against `shape` as h5py does.
pub fn resolve(key: &Bound<'_, PyAny>, shape: &[u64]) -> PyResult<Hyperslab> {
    let items: Vec<Bound<'_, PyAny>> = match key.cast::<PyTuple>() {
        Ok(t) => t.iter().collect(),
        Err(_) => vec![key.clone()],
    };
    let ellipses = items.iter().filter(|i| i.is(key.py().Ellipsis())).count();
    if ellipses > 1 {
        return Err(PyValueError::new_err(
            "only one Ellipsis (...) per selection",
        ));
    }
    let named = items.len().saturating_sub(ellipses);
    if named > shape.len() {
        return Err(PyValueError::new_err(format!(
            "{named} indices for a {}-dimensional dataset",
            shape.len()
        )));
    }
    let mut out = Hyperslab {
        start: Vec::with_capacity(shape.len()),
        count: Vec::with_capacity(shape.len()),
        stride: Vec::with_capacity(shape.len()),
        shape: Vec::with_capacity(shape.len()),
        pick: None,
    };
    let mut dims = shape.iter().copied();
    let whole = |out: &mut Hyperslab, extent: u64| -> PyResult<()> {
        out.start.push(0);
        out.count.push(extent);
        out.stride.push(1);
        out.shape.push(to_usize(extent)?);
        Ok(())
    };
    for item in &items {
        if item.is(key.py().Ellipsis()) {
            // Every dimension the other items do not name.
            let skipped = shape.len().saturating_sub(named);
            for _ in 0..skipped {
                if let Some(extent) = dims.next() {
                    whole(&mut out, extent)?;
                }
            }
            continue;
        }
        let Some(extent) = dims.next() else {
            break;
        };
        if let Ok(slice) = item.cast::<PySlice>() {
            let len = isize::try_from(extent)
                .map_err(|_| PyValueError::new_err("dimension too large for a slice"))?;
            let step: Option<isize> = slice.getattr("step")?.extract()?;
            if step.is_some_and(|s| s < 1) {
                return Err(PyValueError::new_err(format!(
                    "Step must be >= 1 (got {})",
                    step.unwrap_or(0)
                )));
            }
            let ix = slice.indices(len)?;
            let (start, stop, step) = (ix.start, ix.stop, ix.step);
            let count = if stop > start {
                // ceil((stop - start) / step), all positive.
                stop.saturating_sub(start)
                    .saturating_sub(1)
                    .checked_div(step)
                    .unwrap_or(0)
                    .saturating_add(1)
            } else {
                0
            };
            out.start.push(to_u64(start)?);
            out.count.push(to_u64(count)?);
            out.stride.push(to_u64(step)?);
            out.shape.push(count.unsigned_abs());
        } else if item.is_instance_of::<pyo3::types::PyBool>() {
            return Err(PyTypeError::new_err(
                "a bool is not an index (a mask is an array of them)",
            ));
        } else if let Ok(i) = item
            .call_method0("__index__")
            .and_then(|v| v.extract::<i64>())
        {
            let n = i64::try_from(extent).unwrap_or(i64::MAX);
            let at = if i < 0 { i.saturating_add(n) } else { i };
            if at < 0 || at >= n {
                return Err(crate::error::index_error(format!(
                    "Index ({i}) out of range for (0-{})",
                    n.saturating_sub(1)
                )));
            }
            out.start.push(at.unsigned_abs());
            out.count.push(1);
            out.stride.push(1);
        } else if item.is_instance_of::<pyo3::types::PyList>() || item.hasattr("__array__")? {
            if out.pick.is_some() {
                return Err(PyTypeError::new_err(
                    "Only one indexing vector or array is currently allowed for fancy indexing",
                ));
            }
            let at = indices(item, extent)?;
            let first = at.first().copied().unwrap_or(0);
            let span = at
                .last()
                .map_or(0, |&l| l.saturating_sub(first).saturating_add(1));
            out.pick = Some(Pick {
                axis: out.start.len(),
                out_axis: out.shape.len(),
                at: at.clone(),
            });
            out.start.push(first);
            out.count.push(span);
            out.stride.push(1);
            out.shape.push(at.len());
        } else {
            return Err(PyTypeError::new_err(format!(
                "h5chunk selections take integers, slices, ..., and one list or mask; not {}",
                item.get_type().name()?
            )));
        }
    }
    for extent in dims {
        whole(&mut out, extent)?;
    }
    Ok(out)
}

/// A list of indices or a boolean mask along a dimension of length `extent`, as increasing
/// indices (h5py refuses others).
fn indices(item: &Bound<'_, PyAny>, extent: u64) -> PyResult<Vec<u64>> {
    let np = item.py().import("numpy")?;
    let a = np.call_method1("asarray", (item,))?;
    let ndim: usize = a.getattr("ndim")?.extract()?;
    let kind: String = a.getattr("dtype")?.getattr("kind")?.extract()?;
    if ndim != 1 {
        return Err(PyTypeError::new_err(
            "a list or mask in a selection has one dimension",
        ));
    }
    let at: Vec<u64> = match kind.as_str() {
        "b" => {
            let mask: Vec<bool> = a.call_method0("tolist")?.extract()?;
            if u64::try_from(mask.len()).ok() != Some(extent) {
                return Err(PyTypeError::new_err(format!(
                    "boolean index of length {} for a dimension of {extent}",
                    mask.len()
                )));
            }
            (0u64..)
                .zip(mask)
                .filter(|&(_, m)| m)
                .map(|(i, _)| i)
                .collect()
        }
        "i" | "u" => {
            let n = i64::try_from(extent).unwrap_or(i64::MAX);
            let raw: Vec<i64> = a.call_method0("tolist")?.extract()?;
            let mut at = Vec::with_capacity(raw.len());
            for i in raw {
                let j = if i < 0 { i.saturating_add(n) } else { i };
                if j < 0 || j >= n {
                    return Err(crate::error::index_error(format!(
                        "Index ({i}) out of range for (0-{})",
                        n.saturating_sub(1)
                    )));
                }
                at.push(j.unsigned_abs());
            }
            at
        }
        // An empty list is numpy's float64.
        "f" if a.getattr("size")?.extract::<usize>()? == 0 => Vec::new(),
        _ => {
            return Err(PyTypeError::new_err(
                "a list in a selection holds integers, a mask booleans",
            ));
        }
    };
    if at.windows(2).any(|w| matches!(w, [a, b] if a >= b)) {
        return Err(PyTypeError::new_err(
            "Indexing elements must be in increasing order",
        ));
    }
    Ok(at)
}

fn to_u64(v: isize) -> PyResult<u64> {
    u64::try_from(v).map_err(|_| PyValueError::new_err("negative slice bound"))
}

fn to_usize(v: u64) -> PyResult<usize> {
    usize::try_from(v).map_err(|_| PyValueError::new_err("dimension larger than memory"))
}
