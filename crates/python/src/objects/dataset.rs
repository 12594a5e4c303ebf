//! `h5chunk.Dataset`: h5py's dataset surface (`shape`, `dtype`, `chunks`, `d[...]` reads and
//! writes, `resize`, `attrs`), `append` in one call, and `create_dataset` with h5py's argument
//! rules and automatic chunk shapes.

use h5chunk::FilterSpec;
use numpy::{
    IntoPyArray, PyArray1, PyReadonlyArrayDyn, PyReadwriteArrayDyn, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use super::group::{File, Group, Origin};
use crate::attrs::{AttributeManager, Owner};
use crate::dtype::{Kind, kind_of, numpy, numpy_dtype, with_number};
use crate::error::{IntoPy, unsupported};
use crate::select::{Hyperslab, resolve};

/// A dataset of an open file (h5py's `h5py.Dataset`).
#[pyclass(module = "h5chunk", frozen)]
#[derive(Debug)]
pub struct Dataset {
    pub(crate) inner: h5chunk::Dataset,
    origin: Origin,
}

impl Dataset {
    pub fn new(inner: h5chunk::Dataset, origin: Origin) -> Dataset {
        Dataset { inner, origin }
    }

    fn kind(&self) -> PyResult<Kind> {
        kind_of(self.inner.datatype())
    }

    /// The element `key` names when it is one in-range integer per dimension (`d[i, j]`), else
    /// None: every other key (negative indices beyond the dimension, bools, numpy integers,
    /// slices...) takes the general path, which gives h5py's answers and errors.
    fn element_key(&self, key: &Bound<'_, PyAny>) -> Option<Vec<u64>> {
        let shape = self.inner.shape();
        let one = |i: Bound<'_, PyAny>, dim: u64| -> Option<u64> {
            if !i.is_exact_instance_of::<pyo3::types::PyInt>() {
                return None;
            }
            let v: i64 = i.extract().ok()?;
            let at = if v < 0 {
                i64::try_from(dim).ok()?.checked_add(v)?
            } else {
                v
            };
            u64::try_from(at).ok().filter(|&a| a < dim)
        };
        match (key.cast::<PyTuple>(), shape.as_slice()) {
            (_, []) => None,
            (Ok(t), dims) if t.len() == dims.len() => {
                t.iter().zip(dims).map(|(i, &d)| one(i, d)).collect()
            }
            (Ok(_), _) => None,
            (Err(_), [d]) => Some(vec![one(key.clone(), *d)?]),
            (Err(_), _) => None,
        }
    }

    pub fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        numpy_dtype(py, self.inner.datatype())
    }

    /// The elements `h` selects, as an array of `h.shape`.
    fn read<'py>(&self, py: Python<'py>, h: &Hyperslab) -> PyResult<Bound<'py, PyAny>> {
        let d = &self.inner;
        let scalar = d.shape().is_empty();
        let dims = h.slab_shape();
        let shape = PyTuple::new(py, &dims)?;
        // Numbers come out in their shape; the other kinds flat, reshaped below.
        let mut shaped = false;
        let flat: Bound<'py, PyAny> = match self.kind()? {
            Kind::Number(desc) => with_number!(desc, T => {
                let v: Vec<T> = if h.is_empty() {
                    Vec::new()
                } else if scalar {
                    py.detach(|| d.read::<T>()).py()?
                } else {
                    py.detach(|| d.read_slice::<T>(&h.start, &h.count, h.stride())).py()?
                };
                // The vector becomes the array's buffer: no copy, and no call of numpy's
                // reshape (a Python call, made with the GIL held, which threads reading in
                // parallel would wait on).
                match numpy::ndarray::ArrayD::from_shape_vec(numpy::ndarray::IxDyn(&dims), v) {
                    Ok(a) => {
                        shaped = true;
                        a.into_pyarray(py).into_any()
                    }
                    Err(e) => return Err(PyValueError::new_err(e.to_string())),
                }
            }, _ => return Err(unsupported("this number type"))),
            Kind::Bool => {
                let v: Vec<u8> = if h.is_empty() {
                    Vec::new()
                } else if scalar {
                    py.detach(|| d.read_raw()).py()?
                } else {
                    py.detach(|| d.read_slice_raw(&h.start, &h.count, h.stride()))
                        .py()?
                };
                PyArray1::from_vec(py, v).call_method1("view", ("?",))?
            }
            Kind::VarLenString => {
                let v: Vec<String> = if h.is_empty() {
                    Vec::new()
                } else if scalar {
                    py.detach(|| d.read_strings()).py()?
                } else {
                    py.detach(|| d.read_slice_strings(&h.start, &h.count, h.stride()))
                        .py()?
                };
                // h5py's d[...] gives variable-length strings as bytes (str through asstr()).
                let items: Vec<Bound<'py, PyBytes>> =
                    v.iter().map(|s| PyBytes::new(py, s.as_bytes())).collect();
                let list = PyList::new(py, items)?;
                let kw = PyDict::new(py);
                kw.set_item("dtype", "O")?;
                numpy(py)?.getattr("array")?.call((list,), Some(&kw))?
            }
            Kind::Raw => {
                let v: Vec<u8> = if h.is_empty() {
                    Vec::new()
                } else if scalar {
                    py.detach(|| d.read_raw()).py()?
                } else {
                    py.detach(|| d.read_slice_raw(&h.start, &h.count, h.stride()))
                        .py()?
                };
                // The bytes viewed as numpy's layout of the type: still no copy.
                PyArray1::from_vec(py, v).call_method1("view", (self.dtype(py)?,))?
            }
        };
        let slab = if shaped {
            flat
        } else {
            flat.call_method1("reshape", (shape,))?
        };
        match &h.pick {
            // The list's elements picked from the span read (one copy, of the result).
            Some(p) => {
                let kw = PyDict::new(py);
                kw.set_item("axis", p.out_axis)?;
                numpy(py)?
                    .getattr("take")?
                    .call((slab, h.pick_relative()), Some(&kw))
            }
            None => Ok(slab),
        }
    }

    /// Write `value` (anything numpy broadcasts to the selection's shape) to `h`.
    fn write<'py>(
        &self,
        py: Python<'py>,
        h: &Hyperslab,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<()> {
        let np = numpy(py)?;
        let d = &self.inner;
        let scalar = d.shape().is_empty();
        let shape = PyTuple::new(py, &h.shape)?;
        // The value in the selection's shape, C-contiguous, of `dtype`: no copy when it is one
        // already.
        let prepared = |dtype: Bound<'py, PyAny>| -> PyResult<Bound<'py, PyAny>> {
            let a = np.call_method1("asarray", (value, dtype))?;
            // h5py's TypeError, where numpy's broadcast_to raises ValueError.
            let a = np.call_method1("broadcast_to", (&a, &shape)).map_err(|_| {
                let from = a
                    .getattr("shape")
                    .and_then(|s| s.repr())
                    .map_or_else(|_| "?".to_string(), |r| r.to_string());
                let to = shape
                    .repr()
                    .map_or_else(|_| "?".to_string(), |r| r.to_string());
                PyTypeError::new_err(format!("Can't broadcast {from} -> {to}"))
            })?;
            np.call_method1("ascontiguousarray", (a,))
        };
        if h.is_empty() {
            return Ok(());
        }
        if let Some(p) = &h.pick {
            // One write per index of the list, each of the value's slice along its axis.
            let whole = prepared(self.dtype(py)?)?;
            let mut one = h.clone();
            one.pick = None;
            one.shape.remove(p.out_axis);
            for (j, &at) in p.at.iter().enumerate() {
                if let (Some(s), Some(c)) = (one.start.get_mut(p.axis), one.count.get_mut(p.axis)) {
                    *s = at;
                    *c = 1;
                }
                let kw = PyDict::new(py);
                kw.set_item("axis", p.out_axis)?;
                let part = np.getattr("take")?.call((&whole, j), Some(&kw))?;
                self.write(py, &one, &part)?;
            }
            return Ok(());
        }
        match self.kind()? {
            Kind::Number(desc) => with_number!(desc, T => {
                let a = prepared(numpy::dtype::<T>(py).into_any())?;
                let ro: PyReadonlyArrayDyn<'_, T> = a.extract()?;
                let data = ro.as_slice().map_err(|e| PyValueError::new_err(e.to_string()))?;
                if scalar {
                    py.detach(|| d.write::<T>(data)).py()
                } else {
                    py.detach(|| d.write_slice::<T>(data, &h.start, &h.count, h.stride())).py()
                }
            }, _ => Err(unsupported("this number type"))),
            Kind::Bool => {
                let a = prepared(np.call_method1("dtype", ("?",))?)?;
                let a = a.call_method1("view", ("u1",))?;
                let ro: PyReadonlyArrayDyn<'_, u8> = a.extract()?;
                // The enumeration's stored bytes, 0 and 1: numpy's bools as they are.
                let data = ro
                    .as_slice()
                    .map_err(|e| PyValueError::new_err(e.to_string()))?;
                if scalar {
                    py.detach(|| d.write_raw(data)).py()
                } else {
                    py.detach(|| d.write_slice_raw(data, &h.start, &h.count, h.stride()))
                        .py()
                }
            }
            Kind::VarLenString => {
                let a = prepared(np.call_method1("dtype", ("O",))?)?;
                let items: Vec<Bound<'_, PyAny>> =
                    a.call_method0("ravel")?.call_method0("tolist")?.extract()?;
                let mut owned = Vec::with_capacity(items.len());
                for it in items {
                    owned.push(match it.extract::<String>() {
                        Ok(s) => s,
                        Err(_) => String::from_utf8(it.extract::<Vec<u8>>()?)
                            .map_err(|e| PyValueError::new_err(e.to_string()))?,
                    });
                }
                let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
                if scalar {
                    py.detach(|| d.write_strings(&refs)).py()
                } else {
                    py.detach(|| d.write_slice_strings(&refs, &h.start, &h.count, h.stride()))
                        .py()
                }
            }
            Kind::Raw => {
                let a = prepared(self.dtype(py)?)?;
                let bytes: Vec<u8> = a.call_method0("tobytes")?.extract()?;
                if scalar {
                    py.detach(|| d.write_raw(&bytes)).py()
                } else {
                    py.detach(|| d.write_slice_raw(&bytes, &h.start, &h.count, h.stride()))
                        .py()
                }
            }
        }
    }

    fn store_infos(&self, py: Python<'_>) -> PyResult<Vec<StoreInfo>> {
        let d = &self.inner;
        let base = self.origin.file.base_address();
        let chunks = py.detach(|| d.chunks()).py()?;
        Ok(chunks
            .into_iter()
            .map(|c| StoreInfo {
                chunk_offset: c.offset,
                filter_mask: c.filter_mask,
                byte_offset: base.saturating_add(c.addr.get()),
                size: c.size,
            })
            .collect())
    }

    fn resize_to(&self, py: Python<'_>, dims: Vec<u64>) -> PyResult<()> {
        let d = &self.inner;
        py.detach(|| d.resize(&dims)).py()
    }

    fn filters(&self) -> PyResult<Vec<h5chunk::FilterInfo>> {
        self.inner.filters().py()
    }
}

#[pymethods]
impl Dataset {
    /// h5py's `d[key]`: integers (negative from the end), slices with a step of 1 or more,
    /// `...` and `()`; a numpy array (a numpy scalar when every dimension is indexed).
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        // Random access to one element of numbers (`d[i, j]`): read it, and give numpy's scalar
        // without the general path's selection, reshape and scalar extraction.
        if let Some(at) = self.element_key(key)
            && let Kind::Number(desc) = self.kind()?
        {
            let d = &self.inner;
            let ones = vec![1u64; at.len()];
            return with_number!(desc, T => {
                let v: Vec<T> = py.detach(|| d.read_slice::<T>(&at, &ones, None)).py()?;
                PyArray1::from_vec(py, v).into_any().get_item(0)
            }, _ => Err(unsupported("this number type")));
        }
        // Field names of a compound type (h5py's d['a'], d[0:2, 'a', 'b']) come out of the key.
        let items: Vec<Bound<'py, PyAny>> = match key.cast::<PyTuple>() {
            Ok(t) => t.iter().collect(),
            Err(_) => vec![key.clone()],
        };
        let (names, rest): (Vec<_>, Vec<_>) = items
            .into_iter()
            .partition(|i| i.is_instance_of::<pyo3::types::PyString>());
        if !names.is_empty() && self.dtype(py)?.getattr("names")?.is_none() {
            return Err(PyValueError::new_err(
                "Field names only allowed for compound types",
            ));
        }
        let key = if names.is_empty() {
            key.clone()
        } else {
            PyTuple::new(py, rest)?.into_any()
        };
        let h = resolve(&key, &self.inner.shape())?;
        let mut out = self.read(py, &h)?;
        match names.as_slice() {
            [] => {}
            [one] => {
                // The field's own array (a copy: numpy's field view strides over records).
                out = out.get_item(one)?.call_method0("copy")?;
            }
            many => out = out.get_item(PyList::new(py, many)?)?,
        }
        if h.shape.is_empty() && !key.is(py.Ellipsis()) {
            // d[()] of a scalar dataset, d[1, 2] of a 2-D one: numpy's scalar.
            return out.get_item(PyTuple::empty(py));
        }
        Ok(out)
    }

    /// A view reading the compound fields `names` (h5py's `d.fields(names)[...]`).
    fn fields(&self, names: &Bound<'_, PyAny>) -> PyResult<View> {
        let conv = match names.extract::<String>() {
            Ok(one) => Conv::Field(one),
            Err(_) => Conv::Fields(names.extract()?),
        };
        Ok(View {
            dataset: Dataset::new(self.inner.clone(), self.origin.clone()),
            conv,
        })
    }

    /// h5py's `d[key] = value`; `value` is broadcast to the selection as numpy broadcasts.
    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let h = resolve(key, &self.inner.shape())?;
        self.write(py, &h, value)
    }

    /// numpy's `np.asarray(d)`: the whole dataset.
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = copy;
        let h = resolve(&PyTuple::empty(py), &self.inner.shape())?;
        let a = self.read(py, &h)?;
        match dtype {
            Some(dt) => a.call_method1("astype", (dt,)),
            None => Ok(a),
        }
    }

    /// Read straight into `dest`, a C-contiguous array of the dataset's number type (h5py's
    /// `read_direct`): the file's bytes land in the caller's buffer.
    #[pyo3(signature = (dest, source_sel=None, dest_sel=None))]
    fn read_direct(
        &self,
        py: Python<'_>,
        dest: &Bound<'_, PyAny>,
        source_sel: Option<&Bound<'_, PyAny>>,
        dest_sel: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        if dest_sel.is_some() {
            return Err(unsupported("read_direct with dest_sel"));
        }
        let h = match source_sel {
            Some(k) => resolve(k, &self.inner.shape())?,
            None => resolve(&PyTuple::empty(py), &self.inner.shape())?,
        };
        let d = &self.inner;
        match self.kind()? {
            Kind::Number(desc) => with_number!(desc, T => {
                let refused = || {
                    PyTypeError::new_err(format!(
                        "read_direct needs a C-contiguous writable numpy array of {}",
                        desc.numpy()
                    ))
                };
                let mut rw: PyReadwriteArrayDyn<'_, T> = dest.extract().map_err(|_| refused())?;
                // as_slice_mut takes Fortran order too, which the C-order values would scramble.
                if !rw.is_c_contiguous() {
                    return Err(refused());
                }
                let out = rw.as_slice_mut().map_err(|e| PyValueError::new_err(e.to_string()))?;
                if h.is_empty() {
                    return Ok(());
                }
                py.detach(|| d.read_slice_into::<T>(&h.start, &h.count, h.stride(), out)).py()
            }, _ => Err(unsupported("this number type"))),
            _ => Err(unsupported("read_direct of other than numbers")),
        }
    }

    /// h5py's `write_direct(source, source_sel=None, dest_sel=None)`: `source[source_sel]`
    /// (an array, or what numpy makes one of) written to `self[dest_sel]` (the whole dataset without one); a
    /// C-contiguous selection of the dataset's type is written from the array's memory.
    #[pyo3(signature = (source, source_sel=None, dest_sel=None))]
    fn write_direct(
        &self,
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        source_sel: Option<&Bound<'_, PyAny>>,
        dest_sel: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let source = numpy(py)?.call_method1("asarray", (source,))?;
        let values = match source_sel {
            Some(k) => source.get_item(k)?,
            None => source.clone(),
        };
        let h = match dest_sel {
            Some(k) => resolve(k, &self.inner.shape())?,
            None => resolve(&PyTuple::empty(py), &self.inner.shape())?,
        };
        self.write(py, &h, &values)
    }

    /// Append `data` along `axis` (the dataset's first unlimited dimension) in one call: the
    /// dimension grows by the rows given and they are written (h5py needs `resize`, then
    /// an assignment). `data` is one row (the other dimensions' shape) or several.
    #[pyo3(signature = (data, axis=0))]
    fn append(&self, py: Python<'_>, data: &Bound<'_, PyAny>, axis: usize) -> PyResult<()> {
        let shape = self.inner.shape();
        let max = self.inner.max_shape();
        let unlimited = max.iter().position(Option::is_none);
        if unlimited != Some(axis) {
            return Err(PyValueError::new_err(format!(
                "append grows the first unlimited dimension ({unlimited:?}), not axis {axis}"
            )));
        }
        // A C-contiguous array of the dataset's number type is appended from its memory, with
        // no numpy call: the common logger's row.
        let kind = self.kind()?;
        if axis == 0
            && let Kind::Number(desc) = kind
        {
            let done = with_number!(desc, T => {
                match data.extract::<PyReadonlyArrayDyn<'_, T>>() {
                    // as_slice takes Fortran order too: C order only, here.
                    Ok(ro) if !ro.is_c_contiguous() => false,
                    Ok(ro) => match ro.as_slice() {
                        Ok(values) => {
                            let given: Vec<u64> = ro.shape().iter().map(|&n| n as u64).collect();
                            let rows = append_rows(&shape, &given, axis)?;
                            if rows > 0 {
                                let d = &self.inner;
                                py.detach(|| d.append::<T>(values)).py()?;
                            }
                            true
                        }
                        Err(_) => false,
                    },
                    Err(_) => false,
                }
            }, _ => false);
            if done {
                return Ok(());
            }
        }
        let np = numpy(py)?;
        let arr = np.call_method1("asarray", (data,))?;
        let ndim: usize = arr.getattr("ndim")?.extract()?;
        let given: Vec<u64> = arr.getattr("shape")?.extract()?;
        let rows = append_rows(&shape, &given, axis)?;
        if rows == 0 {
            return Ok(());
        }
        let d = &self.inner;
        if axis == 0
            && let Kind::Number(desc) = kind
        {
            return with_number!(desc, T => {
                let a = np.call_method1("ascontiguousarray", (arr, numpy::dtype::<T>(py)))?;
                let ro: PyReadonlyArrayDyn<'_, T> = a.extract()?;
                let values = ro.as_slice().map_err(|e| PyValueError::new_err(e.to_string()))?;
                py.detach(|| d.append::<T>(values)).py()
            }, _ => Err(unsupported("this number type")));
        }
        // Other element types (and rows along a later axis): grow, then write the new rows.
        let mut grown = shape.clone();
        let old = shape.get(axis).copied().unwrap_or(0);
        if let Some(g) = grown.get_mut(axis) {
            *g = old.saturating_add(rows);
        }
        self.resize_to(py, grown.clone())?;
        let mut h = Hyperslab {
            start: vec![0; grown.len()],
            count: grown.clone(),
            stride: vec![1; grown.len()],
            shape: Vec::new(),
            pick: None,
        };
        if let (Some(s), Some(c)) = (h.start.get_mut(axis), h.count.get_mut(axis)) {
            *s = old;
            *c = rows;
        }
        h.shape = h
            .count
            .iter()
            .map(|&c| usize::try_from(c).unwrap_or(usize::MAX))
            .collect();
        let arr = if ndim < shape.len() {
            arr.call_method1("reshape", (PyTuple::new(py, &h.shape)?,))?
        } else {
            arr
        };
        self.write(py, &h, &arr)
    }

    /// Change the shape (h5py's `resize(size, axis=None)`): `size` a tuple, or with `axis` the
    /// new length of that dimension. Dimensions stay within `maxshape`.
    #[pyo3(signature = (size, axis=None))]
    fn resize(&self, py: Python<'_>, size: &Bound<'_, PyAny>, axis: Option<usize>) -> PyResult<()> {
        let dims = match axis {
            Some(a) => {
                let n: u64 = size.extract()?;
                let mut dims = self.inner.shape();
                let rank = dims.len();
                *dims.get_mut(a).ok_or_else(|| {
                    PyValueError::new_err(format!("axis {a} of a {rank}-dimensional dataset"))
                })? = n;
                dims
            }
            None => shape_arg(size)?,
        };
        if dims.len() != self.inner.shape().len() {
            return Err(PyTypeError::new_err(
                "New shape length must match dataset rank",
            ));
        }
        self.resize_to(py, dims)
    }

    /// The chunk whose first element is at `offsets`, as stored (h5py's
    /// `d.id.read_direct_chunk`): `(filter_mask, bytes)`, or None when it is not allocated.
    fn read_direct_chunk<'py>(
        &self,
        py: Python<'py>,
        offsets: Vec<u64>,
    ) -> PyResult<Option<(u32, Bound<'py, PyBytes>)>> {
        let d = &self.inner;
        let got = py.detach(|| d.read_direct_chunk(&offsets)).py()?;
        Ok(got.map(|(bytes, mask)| (mask, PyBytes::new(py, &bytes))))
    }

    /// Store `data` (already filtered) as the chunk at `offsets` (h5py's
    /// `d.id.write_direct_chunk`).
    #[pyo3(signature = (offsets, data, filter_mask=0))]
    fn write_direct_chunk(
        &self,
        py: Python<'_>,
        offsets: Vec<u64>,
        data: &[u8],
        filter_mask: u32,
    ) -> PyResult<()> {
        let d = &self.inner;
        py.detach(|| d.write_direct_chunk(&offsets, data, filter_mask))
            .py()
    }

    /// Call `func(info)` for every allocated chunk, a `StoreInfo` (h5py's
    /// `d.id.chunk_iter`): its first element's offsets, filter mask, byte offset in the file
    /// and stored size.
    fn chunk_iter(&self, py: Python<'_>, func: &Bound<'_, PyAny>) -> PyResult<()> {
        for info in self.store_infos(py)? {
            func.call1((info,))?;
        }
        Ok(())
    }

    /// How many chunks are allocated (h5py's `d.id.get_num_chunks()`).
    fn get_num_chunks(&self, py: Python<'_>) -> PyResult<usize> {
        let d = &self.inner;
        Ok(py.detach(|| d.chunks()).py()?.len())
    }

    /// The `index`-th allocated chunk (h5py's `d.id.get_chunk_info(index)`).
    fn get_chunk_info(&self, py: Python<'_>, index: usize) -> PyResult<StoreInfo> {
        self.store_infos(py)?
            .into_iter()
            .nth(index)
            .ok_or_else(|| PyValueError::new_err(format!("no chunk of index {index}")))
    }

    /// The chunk whose first element is at `offsets` (h5py's
    /// `d.id.get_chunk_info_by_coord`); None when it is not allocated.
    fn get_chunk_info_by_coord(
        &self,
        py: Python<'_>,
        offsets: Vec<u64>,
    ) -> PyResult<Option<StoreInfo>> {
        Ok(self
            .store_infos(py)?
            .into_iter()
            .find(|i| i.chunk_offset == offsets))
    }

    /// The chunks' selections, each a tuple of slices (h5py's `iter_chunks()`), in C order.
    #[pyo3(signature = (sel=None))]
    fn iter_chunks<'py>(
        &self,
        py: Python<'py>,
        sel: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if sel.is_some() {
            return Err(unsupported("iter_chunks with a selection"));
        }
        let Some(chunk) = self.inner.chunk() else {
            return Err(PyTypeError::new_err("Dataset is not chunked"));
        };
        let shape = self.inner.shape();
        let out = PyList::empty(py);
        if shape.contains(&0) || chunk.contains(&0) {
            return out.try_iter().map(Bound::into_any);
        }
        let mut at = vec![0u64; shape.len()];
        'grid: loop {
            let slices = at
                .iter()
                .zip(&chunk)
                .zip(&shape)
                .map(|((&a, &c), &s)| {
                    pyo3::types::PySlice::new(
                        py,
                        isize::try_from(a).unwrap_or(isize::MAX),
                        isize::try_from(a.saturating_add(c).min(s)).unwrap_or(isize::MAX),
                        1,
                    )
                })
                .collect::<Vec<_>>();
            out.append(PyTuple::new(py, slices)?)?;
            // The next chunk in C order: the last dimension fastest.
            for u in (0..at.len()).rev() {
                let (Some(a), Some(&c), Some(&s)) = (at.get_mut(u), chunk.get(u), shape.get(u))
                else {
                    break 'grid;
                };
                *a = a.saturating_add(c);
                if *a < s {
                    continue 'grid;
                }
                *a = 0;
            }
            break;
        }
        out.try_iter().map(Bound::into_any)
    }

    /// A view reading as `dtype` (h5py's `d.astype(dtype)[...]`).
    fn astype(&self, py: Python<'_>, dtype: &Bound<'_, PyAny>) -> PyResult<View> {
        let dt = numpy(py)?.call_method1("dtype", (dtype,))?;
        Ok(View {
            dataset: Dataset::new(self.inner.clone(), self.origin.clone()),
            conv: Conv::AsType(dt.unbind()),
        })
    }

    /// A view reading strings as `str` (h5py's `d.asstr()[...]`).
    #[pyo3(signature = (encoding=None, errors="strict"))]
    fn asstr(&self, encoding: Option<String>, errors: &str) -> PyResult<View> {
        if !matches!(self.kind()?, Kind::VarLenString | Kind::Raw)
            || self.inner.dtype().class == h5chunk::TypeClass::Other
        {
            return Err(PyTypeError::new_err(
                "dset.asstr() can only be used on datasets with an HDF5 string datatype",
            ));
        }
        Ok(View {
            dataset: Dataset::new(self.inner.clone(), self.origin.clone()),
            conv: Conv::AsStr {
                encoding: encoding.unwrap_or_else(|| "utf-8".to_owned()),
                errors: errors.to_owned(),
            },
        })
    }

    /// The paths of the dimension scales attached to each dimension (h5py's `d.dims[i]`, by
    /// path), as netCDF-4 readers find a variable's dimensions; empty lists without one.
    fn dimension_scales(&self, py: Python<'_>) -> PyResult<Vec<Vec<String>>> {
        let d = &self.inner;
        py.detach(|| d.dimension_scales()).py()
    }

    /// Whether the dataset is a dimension scale.
    #[getter]
    fn is_scale(&self) -> bool {
        self.inner.is_scale()
    }

    /// Show what a SWMR writer has flushed since (h5py's `refresh`).
    fn refresh(&self, py: Python<'_>) -> PyResult<()> {
        let d = &self.inner;
        py.detach(|| d.refresh()).py()
    }

    /// The length of the first dimension (h5py's `len()`, for lengths past `sys.maxsize`).
    fn len(&self) -> PyResult<u64> {
        self.inner
            .shape()
            .first()
            .copied()
            .ok_or_else(|| PyTypeError::new_err("Attempt to take len() of scalar dataset"))
    }

    fn __len__(&self) -> PyResult<usize> {
        usize::try_from(self.len()?)
            .map_err(|_| pyo3::exceptions::PyOverflowError::new_err("use Dataset.len()"))
    }

    fn __iter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let me = slf.get();
        let n = me.len()?;
        let rows = PyList::empty(slf.py());
        for i in 0..n {
            rows.append(slf.get_item(i)?)?;
        }
        rows.try_iter().map(Bound::into_any)
    }

    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.shape())
    }

    #[getter(dtype)]
    fn get_dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.dtype(py)
    }

    #[getter]
    fn ndim(&self) -> usize {
        self.inner.shape().len()
    }

    #[getter]
    fn size(&self) -> u64 {
        self.inner
            .shape()
            .iter()
            .fold(1u64, |n, &d| n.saturating_mul(d))
    }

    #[getter]
    fn nbytes(&self) -> u64 {
        self.size()
            .saturating_mul(u64::from(self.inner.datatype().size))
    }

    /// The chunk shape, or None for a dataset that is not chunked.
    #[getter]
    fn chunks<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.inner.chunk().map(|c| PyTuple::new(py, c)).transpose()
    }

    /// The maximum shape, None for an unlimited dimension.
    #[getter]
    fn maxshape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.max_shape())
    }

    /// `'gzip'`, `'lzf'`, another compression filter's name, or None.
    #[getter]
    fn compression(&self) -> PyResult<Option<String>> {
        Ok(self.filters()?.into_iter().find_map(|f| match f.id {
            1 => Some("gzip".to_owned()),
            32000 => Some("lzf".to_owned()),
            2 | 3 => None,
            _ => Some(f.name),
        }))
    }

    /// The gzip level, else None.
    #[getter]
    fn compression_opts(&self) -> PyResult<Option<u32>> {
        Ok(self
            .filters()?
            .into_iter()
            .find(|f| f.id == 1)
            .and_then(|f| f.client_data.first().copied()))
    }

    #[getter]
    fn shuffle(&self) -> PyResult<bool> {
        Ok(self.filters()?.iter().any(|f| f.id == 2))
    }

    #[getter]
    fn fletcher32(&self) -> PyResult<bool> {
        Ok(self.filters()?.iter().any(|f| f.id == 3))
    }

    /// The fill value, as a numpy scalar of the dataset's dtype (0 when none is set).
    #[getter]
    fn fillvalue<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let dtype = self.dtype(py)?;
        let raw = self.inner.fill_value_raw();
        let np = numpy(py)?;
        let size = usize::try_from(self.inner.datatype().size).unwrap_or(0);
        if raw.len() == size && size > 0 {
            let a = np.call_method1("frombuffer", (PyBytes::new(py, &raw), dtype))?;
            return a.get_item(0);
        }
        np.call_method1("zeros", ((), dtype))?
            .get_item(PyTuple::empty(py))
    }

    /// The dataset's path.
    #[getter]
    fn name(&self) -> String {
        self.inner.path()
    }

    /// The group that holds the dataset.
    #[getter]
    fn parent(&self) -> PyResult<Group> {
        let path = self.inner.path();
        let parent = match path.rfind('/') {
            Some(0) | None => "/",
            Some(i) => path.get(..i).unwrap_or("/"),
        };
        Ok(Group {
            inner: self.origin.file.group(parent).py()?,
            origin: self.origin.clone(),
        })
    }

    /// A `File` object on the file the dataset is in (h5py's `dataset.file`).
    #[getter]
    fn file(&self, py: Python<'_>) -> PyResult<Py<File>> {
        self.origin.file_object(py)
    }

    /// Write the file's changes (h5py's `Dataset.flush`: the dataset's, h5chunk flushes the
    /// file's, children first).
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let f = &self.origin.file;
        py.detach(|| f.flush()).py()
    }

    #[getter]
    fn attrs(&self) -> AttributeManager {
        AttributeManager {
            owner: Owner::Dataset(self.inner.clone()),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "<h5chunk.Dataset {:?}: shape {:?}, type {}>",
            self.inner.path(),
            self.inner.shape(),
            self.inner.dtype().numpy()
        )
    }
}

/// One allocated chunk, as h5py's `StoreInfo` describes it.
#[pyclass(module = "h5chunk", frozen, get_all)]
#[derive(Debug, Clone)]
pub struct StoreInfo {
    /// The offsets of the chunk's first element.
    pub chunk_offset: Vec<u64>,
    /// Bit i set: filter i of the pipeline was skipped for this chunk.
    pub filter_mask: u32,
    /// Where its bytes begin in the file (past any user block).
    pub byte_offset: u64,
    /// Its stored size in bytes.
    pub size: u64,
}

#[pymethods]
impl StoreInfo {
    fn __repr__(&self) -> String {
        format!(
            "StoreInfo(chunk_offset={:?}, filter_mask={}, byte_offset={}, size={})",
            self.chunk_offset, self.filter_mask, self.byte_offset, self.size
        )
    }
}

/// What a view does to what it reads.
#[derive(Debug)]
enum Conv {
    AsType(Py<PyAny>),
    /// One field: its values.
    Field(String),
    /// A list of fields: records of those fields alone, packed.
    Fields(Vec<String>),
    AsStr {
        encoding: String,
        errors: String,
    },
}

/// `d.astype(dtype)` and `d.asstr()`: reads of the dataset, converted.
#[pyclass(module = "h5chunk", frozen)]
#[derive(Debug)]
pub struct View {
    dataset: Dataset,
    conv: Conv,
}

#[pymethods]
impl View {
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let got = match &self.conv {
            Conv::Field(name) => {
                let mut items: Vec<Bound<'py, PyAny>> = match key.cast::<PyTuple>() {
                    Ok(t) => t.iter().collect(),
                    Err(_) => vec![key.clone()],
                };
                items.push(pyo3::types::PyString::new(py, name).into_any());
                return self
                    .dataset
                    .__getitem__(py, &PyTuple::new(py, items)?.into_any());
            }
            _ => self.dataset.__getitem__(py, key)?,
        };
        match &self.conv {
            Conv::Field(_) => Ok(got),
            Conv::Fields(names) => {
                // The fields' records packed, as h5py reads them.
                let fields = got.getattr("dtype")?.getattr("fields")?;
                let mut packed = Vec::with_capacity(names.len());
                for n in names {
                    packed.push((n.as_str(), fields.get_item(n)?.get_item(0)?));
                }
                let dt = numpy(py)?.call_method1("dtype", (PyList::new(py, packed)?,))?;
                got.get_item(PyList::new(py, names)?)?
                    .call_method1("astype", (dt,))
            }
            Conv::AsType(dt) => {
                let np = numpy(py)?;
                np.call_method1("asarray", (got,))?
                    .call_method1("astype", (dt.bind(py),))
                    .and_then(|a| {
                        if a.getattr("ndim")?.extract::<usize>()? == 0 && !key.is(py.Ellipsis()) {
                            a.get_item(PyTuple::empty(py))
                        } else {
                            Ok(a)
                        }
                    })
            }
            Conv::AsStr { encoding, errors } => {
                let decode = |b: Bound<'py, PyAny>| b.call_method1("decode", (encoding, errors));
                if got.is_instance_of::<PyBytes>() || got.hasattr("decode")? {
                    return decode(got);
                }
                let np = numpy(py)?;
                let flat: Vec<Bound<'py, PyAny>> = got
                    .call_method0("ravel")?
                    .call_method0("tolist")?
                    .extract()?;
                let strs = flat.into_iter().map(decode).collect::<PyResult<Vec<_>>>()?;
                let kw = PyDict::new(py);
                kw.set_item("dtype", "O")?;
                np.getattr("array")?
                    .call((PyList::new(py, strs)?,), Some(&kw))?
                    .call_method1("reshape", (got.getattr("shape")?,))
            }
        }
    }

    fn __len__(&self) -> PyResult<usize> {
        self.dataset.__len__()
    }

    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = copy;
        let a = self.__getitem__(py, &PyTuple::empty(py).into_any())?;
        let a = numpy(py)?.call_method1("asarray", (a,))?;
        match dtype {
            Some(dt) => a.call_method1("astype", (dt,)),
            None => Ok(a),
        }
    }
}

/// The rows an append of an array of shape `given` adds along `axis` of a dataset of `shape`:
/// one row (the other dimensions' shape) or several (the dataset's rank), else a ValueError.
fn append_rows(shape: &[u64], given: &[u64], axis: usize) -> PyResult<u64> {
    let others = |dims: &[u64]| -> Vec<u64> {
        dims.iter()
            .enumerate()
            .filter(|&(i, _)| i != axis)
            .map(|(_, &n)| n)
            .collect()
    };
    let rest = others(shape);
    if given.len().checked_add(1) == Some(shape.len()) && given == rest.as_slice() {
        Ok(1)
    } else if given.len() == shape.len() && others(given) == rest {
        Ok(given.get(axis).copied().unwrap_or(0))
    } else {
        Err(PyValueError::new_err(format!(
            "rows of shape {given:?} do not fit a dataset of shape {shape:?}"
        )))
    }
}

/// h5py's shape arguments: an integer or a sequence of them.
pub fn shape_arg(v: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    if let Ok(n) = v.extract::<u64>() {
        return Ok(vec![n]);
    }
    v.extract::<Vec<u64>>()
        .map_err(|_| PyTypeError::new_err("a shape is an integer or a tuple of integers"))
}

fn maxshape_arg(v: &Bound<'_, PyAny>) -> PyResult<Vec<Option<u64>>> {
    if v.is_none() {
        return Ok(vec![None]);
    }
    if let Ok(n) = v.extract::<u64>() {
        return Ok(vec![Some(n)]);
    }
    v.extract::<Vec<Option<u64>>>()
        .map_err(|_| PyTypeError::new_err("maxshape is an integer or a tuple of integers and None"))
}

/// `create_dataset`'s arguments after `name`, as given.
#[derive(Debug)]
pub struct CreateArgs<'a, 'py> {
    pub shape: Option<&'a Bound<'py, PyAny>>,
    pub dtype: Option<&'a Bound<'py, PyAny>>,
    pub data: Option<&'a Bound<'py, PyAny>>,
    pub chunks: Option<&'a Bound<'py, PyAny>>,
    pub maxshape: Option<&'a Bound<'py, PyAny>>,
    pub compression: Option<&'a Bound<'py, PyAny>>,
    pub compression_opts: Option<&'a Bound<'py, PyAny>>,
    pub shuffle: bool,
    pub fletcher32: bool,
    pub fillvalue: Option<&'a Bound<'py, PyAny>>,
    pub track_order: Option<bool>,
}

/// h5py's chunk shape guess, as its documentation describes it: aim for chunks of 16 KiB
/// doubled for every factor of ten the dataset's size is above 1 MiB, kept between 8 KiB and
/// 1 MiB; start from the whole dataset (1024 for a dimension of length 0) and halve the
/// dimensions in turn until the chunk is near or under that size.
pub fn guess_chunk(shape: &[u64], elem: u64) -> Vec<u64> {
    const BASE: f64 = 16.0 * 1024.0;
    const MIN: f64 = 8.0 * 1024.0;
    const MAX: f64 = 1024.0 * 1024.0;
    let mut chunk: Vec<u64> = shape
        .iter()
        .map(|&d| if d == 0 { 1024 } else { d })
        .collect();
    let bytes = |c: &[u64]| c.iter().fold(elem.max(1) as f64, |n, &d| n * d as f64);
    let total = bytes(&chunk);
    let target = (BASE * 2f64.powf((total / MAX).log10())).clamp(MIN, MAX);
    let rank = chunk.len();
    let mut turn = 0usize;
    loop {
        let now = bytes(&chunk);
        let near = ((now - target) / target).abs() < 0.5;
        if (now < target || near) && now < MAX {
            break;
        }
        if chunk.iter().all(|&c| c <= 1) {
            break;
        }
        if let Some(c) = chunk.get_mut(turn.checked_rem(rank).unwrap_or(0)) {
            *c = c.div_ceil(2);
        }
        turn = turn.wrapping_add(1);
    }
    chunk
}

/// h5py's `create_dataset` over h5chunk's builder.
pub fn create(
    py: Python<'_>,
    g: &h5chunk::Group,
    name: &str,
    a: CreateArgs<'_, '_>,
    origin: &Origin,
) -> PyResult<Dataset> {
    let np = numpy(py)?;
    let data = match a.data {
        Some(d) => Some(match a.dtype {
            Some(dt) => np.call_method1("asarray", (d, np.call_method1("dtype", (dt,))?))?,
            None => np.call_method1("asarray", (d,))?,
        }),
        None => None,
    };
    let dtype = match (a.dtype, &data) {
        (Some(dt), _) => np.call_method1("dtype", (dt,))?,
        (None, Some(arr)) => arr.getattr("dtype")?,
        (None, None) => np.call_method1("dtype", ("f4",))?,
    };
    let shape: Vec<u64> = match (a.shape, &data) {
        (Some(s), Some(arr)) => {
            let s = shape_arg(s)?;
            let n: u64 = arr.getattr("size")?.extract()?;
            if s.iter().fold(1u64, |p, &d| p.saturating_mul(d)) != n {
                return Err(PyValueError::new_err(
                    "Shape tuple is incompatible with data",
                ));
            }
            s
        }
        (Some(s), None) => shape_arg(s)?,
        (None, Some(arr)) => arr.getattr("shape")?.extract()?,
        (None, None) => {
            return Err(PyTypeError::new_err(
                "One of data, shape or dtype must be specified",
            ));
        }
    };
    if shape.is_empty() {
        return Err(unsupported(
            "creating scalar datasets (h5chunk writes chunked datasets, which have a rank)",
        ));
    }
    let kind: String = dtype.getattr("kind")?.extract()?;
    let dtype_str: String = dtype.getattr("str")?.extract()?;
    let (desc, datatype) = match kind.as_str() {
        "i" | "u" | "f" => (Some(crate::dtype::number_from_numpy(&dtype_str)?), None),
        _ => (None, Some(crate::dtype::datatype_for(&dtype)?)),
    };
    let maxshape = a.maxshape.map(maxshape_arg).transpose()?;
    if let Some(m) = &maxshape {
        if m.len() != shape.len() {
            return Err(PyValueError::new_err(
                "Dimensionality of maxshape and shape must match",
            ));
        }
        if shape.iter().zip(m).any(|(&s, m)| m.is_some_and(|m| s > m)) {
            return Err(PyValueError::new_err(
                "Maximum shape must be larger than or equal to shape",
            ));
        }
    }
    let mut filters = Vec::new();
    if a.shuffle {
        filters.push(FilterSpec::Shuffle);
    }
    let level = match a.compression_opts {
        Some(o) => Some(
            o.extract::<u32>()
                .map_err(|_| PyValueError::new_err("compression_opts of gzip is a level 0..9"))?,
        ),
        None => None,
    };
    if let Some(c) = a.compression.filter(|c| !c.is_none()) {
        if let Ok(n) = c.extract::<u32>() {
            if level.is_some() {
                return Err(PyTypeError::new_err("Conflict in compression options"));
            }
            filters.push(FilterSpec::Deflate(n));
        } else {
            let c: String = c.extract()?;
            match c.as_str() {
                "gzip" => filters.push(FilterSpec::Deflate(level.unwrap_or(4))),
                "lzf" => filters.push(FilterSpec::Lzf),
                other => {
                    return Err(PyValueError::new_err(format!(
                        "Compression filter \"{other}\" is unavailable"
                    )));
                }
            }
        }
    }
    if let Some(FilterSpec::Deflate(l)) = filters.last()
        && *l > 9
    {
        return Err(PyValueError::new_err(format!(
            "GZIP setting must be an integer from 0-9, not {l}"
        )));
    }
    if a.fletcher32 {
        filters.push(FilterSpec::Fletcher32);
    }
    let elem: u64 = dtype.getattr("itemsize")?.extract()?;
    let chunk = match a.chunks {
        Some(c) if !c.is_none() && !c.is_instance_of::<pyo3::types::PyBool>() => {
            let c = shape_arg(c)?;
            if c.len() != shape.len() {
                return Err(PyValueError::new_err(
                    "'chunks' must have same rank as dataset shape",
                ));
            }
            if c.contains(&0) {
                return Err(PyValueError::new_err(
                    "All chunk dimensions must be positive",
                ));
            }
            // h5py's rule: no chunk dimension past a fixed dimension's maximum.
            let fixed: Vec<Option<u64>> = match &maxshape {
                Some(m) => m.clone(),
                None => shape.iter().map(|&d| Some(d)).collect(),
            };
            if c.iter().zip(&fixed).any(|(&c, m)| m.is_some_and(|m| c > m)) {
                return Err(PyValueError::new_err(format!(
                    "Chunk shape must not be greater than data shape in any dimension. \
                     {c:?} is not compatible with {shape:?}"
                )));
            }
            c
        }
        Some(c) if c.is_instance_of::<pyo3::types::PyBool>() && !c.extract::<bool>()? => {
            if maxshape.is_some() || !filters.is_empty() {
                return Err(PyValueError::new_err(
                    "Chunked format required for given storage options",
                ));
            }
            // h5py would make it contiguous; h5chunk writes chunked datasets only.
            guess_chunk(&shape, elem)
        }
        _ => guess_chunk(&shape, elem),
    };
    let (parent, name) = crate::path::make_parents(g, name)?;
    let mut b = match (desc, datatype) {
        (Some(desc), _) => parent.new_dataset_of(desc),
        (None, Some(t)) => parent.new_dataset_with_type(t),
        (None, None) => return Err(unsupported("this element type")),
    };
    b = b.shape(&shape).chunk(&chunk);
    if let Some(m) = &maxshape {
        b = b.max_shape(m);
    }
    for f in filters {
        b = b.filter(f);
    }
    if let Some(on) = a.track_order {
        b = b.track_order(on);
    }
    if let Some(fv) = a.fillvalue {
        let le = dtype.call_method1("newbyteorder", ("<",))?;
        let one = np.call_method1("asarray", (fv, le))?;
        let bytes: Vec<u8> = one.call_method0("tobytes")?.extract()?;
        b = b.fill_value_bytes(&bytes);
    }
    let d = py.detach(|| b.create(name)).py()?;
    let out = Dataset::new(d, origin.clone());
    if let Some(arr) = data {
        let arr = arr.call_method1("reshape", (PyTuple::new(py, &shape)?,))?;
        let h = resolve(&PyTuple::empty(py), &shape)?;
        out.write(py, &h, &arr)?;
    }
    Ok(out)
}
