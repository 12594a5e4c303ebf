//! `obj.attrs`: h5py's AttributeManager over h5chunk's attributes (numbers and arrays of them,
//! bool, strings, fixed-length bytes; read back as h5py returns them).

use h5chunk::types::{self, TypeDesc};
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::dtype::{Kind, kind_of, numpy, numpy_dtype, with_number};
use crate::error::{IntoPy, to_py, unsupported};

/// The object whose attributes these are.
#[derive(Debug, Clone)]
pub enum Owner {
    Group(h5chunk::Group),
    Dataset(h5chunk::Dataset),
}

/// The attributes of a group, file or dataset (h5py's `obj.attrs`).
#[pyclass(module = "h5chunk", frozen)]
#[derive(Debug)]
pub struct AttributeManager {
    pub(crate) owner: Owner,
}

impl AttributeManager {
    fn attrs(&self) -> h5chunk::Attributes<'_> {
        match &self.owner {
            Owner::Group(g) => g.attrs(),
            Owner::Dataset(d) => d.attrs(),
        }
    }
}

/// An attribute's value as h5py returns it: a numpy scalar for a scalar of numbers, a numpy
/// array for an array, `str` for a variable-length string, None for an empty attribute.
fn value_of(py: Python<'_>, a: &h5chunk::Attr) -> PyResult<Py<PyAny>> {
    let Some(shape) = a.shape() else {
        return Ok(py.None());
    };
    let scalar = shape.is_empty();
    let pyshape = PyTuple::new(py, shape)?;
    let np = numpy(py)?;
    let array: Bound<'_, PyAny> = match kind_of(a.datatype())? {
        Kind::Number(desc) => with_number!(desc, T => {
            let v: Vec<T> = a.values::<T>().py()?;
            PyArray1::from_vec(py, v).into_any()
        }, _ => return Err(unsupported("this number type"))),
        Kind::Bool => {
            // The enumeration's stored bytes: 0 and 1.
            let v: Vec<u8> = a.raw().to_vec();
            PyArray1::from_vec(py, v).call_method1("view", ("?",))?
        }
        Kind::VarLenString => {
            let v = a.strings().py()?;
            if scalar {
                let one = v.into_iter().next().unwrap_or_default();
                return Ok(PyString::new(py, &one).into_any().unbind());
            }
            let kw = PyDict::new(py);
            kw.set_item("dtype", "O")?;
            np.getattr("array")?
                .call((PyList::new(py, v)?,), Some(&kw))?
        }
        Kind::Raw => {
            let dtype = numpy_dtype(py, a.datatype())?;
            np.call_method1("frombuffer", (PyBytes::new(py, a.raw()), dtype))?
                .call_method0("copy")?
        }
    };
    let shaped = array.call_method1("reshape", (pyshape,))?;
    if scalar {
        return Ok(shaped.get_item(PyTuple::empty(py))?.unbind());
    }
    Ok(shaped.unbind())
}

/// Set attribute `name` of `attrs` to `value`, stored as h5py stores it.
fn set(
    py: Python<'_>,
    attrs: &h5chunk::Attributes<'_>,
    name: &str,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    if let Ok(s) = value.cast::<PyString>() {
        return attrs.set_str(name, &s.to_cow()?).py();
    }
    if let Ok(b) = value.cast::<PyBytes>() {
        let bytes = b.as_bytes();
        let size = u32::try_from(bytes.len().max(1))
            .map_err(|_| pyo3::exceptions::PyValueError::new_err("bytes too long"))?;
        let padded: Vec<u8> = if bytes.is_empty() {
            vec![0]
        } else {
            bytes.to_vec()
        };
        return attrs
            .set_raw(name, None, &types::fixed_ascii(size), &padded)
            .py();
    }
    if value.is_instance_of::<PyBool>() {
        return attrs.set_bool(name, value.extract()?).py();
    }
    let np = numpy(py)?;
    let arr = np.call_method1("asarray", (value,))?;
    let kind: String = arr.getattr("dtype")?.getattr("kind")?.extract()?;
    let shape: Vec<u64> = arr.getattr("shape")?.extract()?;
    let dims: &[u64] = &shape;
    // A scalar is a dataspace with no dimensions, not one of rank 0.
    let shape_arg = (!dims.is_empty()).then_some(dims);
    match kind.as_str() {
        "i" | "u" | "f" => {
            let s: String = arr.getattr("dtype")?.getattr("str")?.extract()?;
            let desc: TypeDesc = crate::dtype::number_from_numpy(&s)?;
            let t = desc
                .to_datatype()
                .ok_or_else(|| unsupported(&format!("attributes of numpy dtype {s}")))?;
            let c = np.call_method1("ascontiguousarray", (arr,))?;
            let bytes: Vec<u8> = c.call_method0("tobytes")?.extract()?;
            attrs.set_raw(name, shape_arg, &t, &bytes).py()
        }
        "b" => {
            if dims.is_empty() {
                return attrs
                    .set_bool(name, arr.call_method0("item")?.extract()?)
                    .py();
            }
            let c = np.call_method1("ascontiguousarray", (arr,))?;
            let bytes: Vec<u8> = c.call_method0("tobytes")?.extract()?;
            attrs
                .set_raw(name, shape_arg, &types::h5py_bool(), &bytes)
                .py()
        }
        "S" => {
            let size: u32 = arr.getattr("dtype")?.getattr("itemsize")?.extract()?;
            let c = np.call_method1("ascontiguousarray", (arr,))?;
            let bytes: Vec<u8> = c.call_method0("tobytes")?.extract()?;
            attrs
                .set_raw(name, shape_arg, &types::fixed_ascii(size.max(1)), &bytes)
                .py()
        }
        "U" | "O" => {
            let items: Vec<String> = arr
                .call_method0("ravel")?
                .call_method0("tolist")?
                .extract()
                .map_err(|_| unsupported("attributes of Python objects other than strings"))?;
            let refs: Vec<&str> = items.iter().map(String::as_str).collect();
            match dims {
                [] => attrs
                    .set_str(name, refs.first().copied().unwrap_or_default())
                    .py(),
                [_] => attrs.set_strs(name, &refs).py(),
                _ => Err(unsupported("multi-dimensional string attributes")),
            }
        }
        _ => Err(unsupported(&format!(
            "attributes of numpy dtype kind {kind:?}"
        ))),
    }
}

#[pymethods]
impl AttributeManager {
    fn __getitem__(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        let a = self.attrs().get(name).map_err(to_py)?;
        value_of(py, &a)
    }

    fn __setitem__(&self, py: Python<'_>, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        set(py, &self.attrs(), name, value)
    }

    fn __delitem__(&self, name: &str) -> PyResult<()> {
        self.attrs().delete(name).py()
    }

    fn __contains__(&self, name: &str) -> PyResult<bool> {
        self.attrs().contains(name).py()
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(self.keys()?.len())
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PyList::new(py, self.keys()?)?
            .try_iter()
            .map(Bound::into_any)
    }

    /// The names, in h5py's order (creation order when the object tracks it, else by name).
    fn keys(&self) -> PyResult<Vec<String>> {
        self.attrs().names().py()
    }

    fn values(&self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        let all = self.attrs().all().py()?;
        all.iter().map(|a| value_of(py, a)).collect()
    }

    fn items(&self, py: Python<'_>) -> PyResult<Vec<(String, Py<PyAny>)>> {
        let all = self.attrs().all().py()?;
        all.iter()
            .map(|a| Ok((a.name().to_owned(), value_of(py, a)?)))
            .collect()
    }

    #[pyo3(signature = (name, default=None))]
    fn get(
        &self,
        py: Python<'_>,
        name: &str,
        default: Option<Py<PyAny>>,
    ) -> PyResult<Option<Py<PyAny>>> {
        match self.attrs().get(name) {
            Ok(a) => value_of(py, &a).map(Some),
            Err(h5chunk::Error::NoAttribute { .. }) => Ok(default),
            Err(e) => Err(to_py(e)),
        }
    }

    /// h5py's `attrs.create(name, data, shape=None, dtype=None)`: the value converted to
    /// `dtype` and reshaped to `shape` first.
    #[pyo3(signature = (name, data, shape=None, dtype=None))]
    fn create(
        &self,
        py: Python<'_>,
        name: &str,
        data: &Bound<'_, PyAny>,
        shape: Option<&Bound<'_, PyAny>>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let np = numpy(py)?;
        let mut v = match dtype {
            Some(dt) => np.call_method1("asarray", (data, dt))?,
            None => data.clone(),
        };
        if let Some(s) = shape {
            v = np
                .call_method1("asarray", (v,))?
                .call_method1("reshape", (s,))?;
        }
        set(py, &self.attrs(), name, &v)
    }

    /// h5py's `attrs.modify(name, value)`: set, keeping nothing of the old value.
    fn modify(&self, py: Python<'_>, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        set(py, &self.attrs(), name, value)
    }

    fn __repr__(&self) -> String {
        "<Attributes of an h5chunk object>".to_owned()
    }
}
