//! Element types between h5chunk and numpy: which Rust number type a dataset reads into, and
//! the numpy dtype h5py reports for each HDF5 type.

use h5chunk::types::{self, Datatype, TypeClass, TypeDesc};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::types::PyTuple;

/// What a dataset's elements read as in Python.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A number h5chunk converts: read typed, into a numpy array of the native type.
    Number(TypeDesc),
    /// h5py's bool (an enumeration over int8, FALSE 0 and TRUE 1): numpy's `bool`.
    Bool,
    /// Variable-length strings: h5py's `string_dtype()`, an object array of `bytes`.
    VarLenString,
    /// Anything else numpy can lay out (fixed-length strings, compound, complex, opaque,
    /// enumerations of other bases): the stored bytes under numpy's dtype.
    Raw,
}

pub fn kind_of(datatype: &Datatype) -> PyResult<Kind> {
    if *datatype == types::h5py_bool() {
        return Ok(Kind::Bool);
    }
    let desc = TypeDesc::of(datatype).map_err(crate::error::to_py)?;
    Ok(match desc.class {
        TypeClass::Int | TypeClass::Uint | TypeClass::Float => Kind::Number(desc),
        TypeClass::VarLenString => Kind::VarLenString,
        // numpy has no bfloat16: its elements come as `|V2` (little-endian bits).
        TypeClass::FixedString | TypeClass::Other | TypeClass::BFloat16 => Kind::Raw,
    })
}

/// Run `$body` with `$T` the Rust number type of `$desc` (its class and size; byte order is
/// converted by the typed reads and writes), or `$other` for any other description.
macro_rules! with_number {
    ($desc:expr, $T:ident => $body:expr, _ => $other:expr) => {{
        use h5chunk::types::TypeClass as C;
        let d: h5chunk::types::TypeDesc = $desc;
        match (d.class, d.size) {
            (C::Int, 1) => {
                type $T = i8;
                $body
            }
            (C::Int, 2) => {
                type $T = i16;
                $body
            }
            (C::Int, 4) => {
                type $T = i32;
                $body
            }
            (C::Int, 8) => {
                type $T = i64;
                $body
            }
            (C::Uint, 1) => {
                type $T = u8;
                $body
            }
            (C::Uint, 2) => {
                type $T = u16;
                $body
            }
            (C::Uint, 4) => {
                type $T = u32;
                $body
            }
            (C::Uint, 8) => {
                type $T = u64;
                $body
            }
            (C::Float, 2) => {
                type $T = h5chunk::f16;
                $body
            }
            (C::Float, 4) => {
                type $T = f32;
                $body
            }
            (C::Float, 8) => {
                type $T = f64;
                $body
            }
            _ => $other,
        }
    }};
}
pub(crate) use with_number;

pub fn numpy(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    // Imported once: `import` through the import machinery costs more than many a small read.
    static NUMPY: pyo3::sync::PyOnceLock<Py<PyModule>> = pyo3::sync::PyOnceLock::new();
    NUMPY
        .get_or_try_init(py, || py.import("numpy").map(Bound::unbind))
        .map(|m| m.bind(py).clone())
}

/// The numpy dtype h5py reports for `datatype` (`Dataset.dtype`).
pub fn numpy_dtype<'py>(py: Python<'py>, datatype: &Datatype) -> PyResult<Bound<'py, PyAny>> {
    let np = numpy(py)?;
    match kind_of(datatype)? {
        Kind::Number(desc) => np.call_method1("dtype", (desc.numpy(),)),
        Kind::Bool => np.call_method1("dtype", ("?",)),
        Kind::VarLenString => {
            // h5py.string_dtype(): an object dtype whose metadata says `vlen=str`.
            let meta = PyDict::new(py);
            meta.set_item("vlen", py.get_type::<pyo3::types::PyString>())?;
            let kw = PyDict::new(py);
            kw.set_item("metadata", meta)?;
            np.getattr("dtype")?.call(("O",), Some(&kw))
        }
        Kind::Raw => {
            let descr = types::numpy_descr(datatype).ok_or_else(|| {
                crate::error::unsupported(&format!(
                    "element type {} has no numpy layout",
                    datatype.class.name()
                ))
            })?;
            let literal = py.import("ast")?.call_method1("literal_eval", (descr,))?;
            let dt = np.call_method1("dtype", (literal,))?;
            complex_of(&np, &dt).map(|c| c.unwrap_or(dt))
        }
    }
}

/// h5py's complex numbers: a compound of two floats of one type named `r` and `i`, which h5py
/// reports as numpy's complex type of the same bytes.
fn complex_of<'py>(
    np: &Bound<'py, PyModule>,
    dt: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let names: Option<Vec<String>> = dt.getattr("names")?.extract()?;
    if names.as_deref() != Some(&["r".to_owned(), "i".to_owned()]) {
        return Ok(None);
    }
    let (r, i) = (dt.get_item("r")?, dt.get_item("i")?);
    let kind: String = r.getattr("kind")?.extract()?;
    let part: usize = r.getattr("itemsize")?.extract()?;
    let whole: usize = dt.getattr("itemsize")?.extract()?;
    let offset_i: usize = dt
        .getattr("fields")?
        .get_item("i")?
        .get_item(1)?
        .extract()?;
    if !r.eq(&i)? || kind != "f" || offset_i != part || Some(whole) != part.checked_mul(2) {
        return Ok(None);
    }
    let order: String = r.getattr("str")?.extract()?;
    let order = order.chars().next().unwrap_or('<');
    np.call_method1("dtype", (format!("{order}c{whole}"),))
        .map(Some)
}

/// The numpy dtype string `s` (`'<f8'`, `'i4'`) as an h5chunk number type, with numpy's
/// native order for `'='`.
pub fn number_from_numpy(s: &str) -> PyResult<TypeDesc> {
    if s.len() >= 2 && s.ends_with("f2") {
        let order = if s.starts_with('>') {
            types::ByteOrder::BigEndian
        } else {
            types::ByteOrder::LittleEndian
        };
        return Ok(TypeDesc {
            class: TypeClass::Float,
            size: 2,
            order,
        });
    }
    TypeDesc::from_numpy(s).map_err(|_| {
        PyTypeError::new_err(format!(
            "h5chunk creates datasets of integers, floats and bool, not of numpy dtype {s:?}"
        ))
    })
}

/// The HDF5 type h5py writes for numpy dtype `dt` (a created dataset's): numbers, bool
/// (h5py's enumeration), complex (h5py's compound of `r` and `i`), fixed-length bytes,
/// variable-length `str` (`h5py.string_dtype()`), and compounds of those.
pub fn datatype_for(dt: &Bound<'_, PyAny>) -> PyResult<Datatype> {
    datatype_at(dt, 0)
}

fn datatype_at(dt: &Bound<'_, PyAny>, depth: usize) -> PyResult<Datatype> {
    let refuse = |what: String| crate::error::unsupported(&format!("creating datasets of {what}"));
    if depth > 8 {
        return Err(refuse("compounds nested this deep".to_owned()));
    }
    let kind: String = dt.getattr("kind")?.extract()?;
    let s: String = dt.getattr("str")?.extract()?;
    let size: u32 = dt.getattr("itemsize")?.extract()?;
    match kind.as_str() {
        "b" => Ok(types::h5py_bool()),
        "i" | "u" | "f" => number_from_numpy(&s)?
            .to_datatype()
            .ok_or_else(|| refuse(format!("numpy dtype {s}"))),
        "c" => {
            let part = u8::try_from(size / 2).map_err(|_| refuse(format!("numpy dtype {s}")))?;
            let order = if s.starts_with('>') {
                types::ByteOrder::BigEndian
            } else {
                types::ByteOrder::LittleEndian
            };
            let f =
                Datatype::float(part, order).ok_or_else(|| refuse(format!("numpy dtype {s}")))?;
            Ok(types::compound(
                size,
                &[("r", 0, f.clone()), ("i", u32::from(part), f)],
            ))
        }
        "S" if size > 0 => Ok(types::fixed_ascii(size)),
        "O" => {
            let meta = dt.getattr("metadata")?;
            let vlen = if meta.is_none() {
                None
            } else {
                meta.call_method1("get", ("vlen",))?
                    .extract::<Option<Bound<'_, PyAny>>>()?
            };
            match vlen {
                Some(t) if t.is(dt.py().get_type::<pyo3::types::PyString>()) => {
                    Ok(types::vlen_utf8())
                }
                _ => Err(refuse(
                    "Python objects other than h5py.string_dtype() strings".to_owned(),
                )),
            }
        }
        "V" if !dt.getattr("names")?.is_none() => {
            let names: Vec<String> = dt.getattr("names")?.extract()?;
            let fields = dt.getattr("fields")?;
            let mut members = Vec::with_capacity(names.len());
            for n in &names {
                let f = fields.get_item(n)?.cast_into::<PyTuple>()?;
                let t = datatype_at(&f.get_item(0)?, depth.saturating_add(1))?;
                let offset: u32 = f.get_item(1)?.extract()?;
                members.push((n.as_str(), offset, t));
            }
            Ok(types::compound(size, &members))
        }
        "U" => Err(PyTypeError::new_err(format!(
            "No conversion path for dtype: dtype('{s}') (use h5py.string_dtype())"
        ))),
        _ => Err(refuse(format!("numpy dtype {s}"))),
    }
}
