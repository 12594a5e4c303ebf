//! h5py's link objects: `SoftLink(path)`, `ExternalLink(filename, path)` and `HardLink()`, as
//! `group.get(name, getlink=True)` returns them and `group[name] = ExternalLink(...)` takes
//! them.

use h5chunk::LinkValue;
use pyo3::prelude::*;

/// A link to a path in the same file.
#[pyclass(module = "h5chunk", frozen, get_all)]
#[derive(Debug, Clone)]
pub struct SoftLink {
    pub path: String,
}

#[pymethods]
impl SoftLink {
    #[new]
    fn new(path: String) -> SoftLink {
        SoftLink { path }
    }

    fn __repr__(&self) -> String {
        format!("<SoftLink to \"{}\">", self.path)
    }
}

/// A link to an object in another file.
#[pyclass(module = "h5chunk", frozen, get_all)]
#[derive(Debug, Clone)]
pub struct ExternalLink {
    pub filename: String,
    pub path: String,
}

#[pymethods]
impl ExternalLink {
    #[new]
    fn new(filename: String, path: String) -> ExternalLink {
        ExternalLink { filename, path }
    }

    fn __repr__(&self) -> String {
        format!(
            "<ExternalLink to \"{}\" in file \"{}\">",
            self.path, self.filename
        )
    }
}

/// A hard link (what `get(name, getlink=True)` returns for an object of this file).
#[pyclass(module = "h5chunk", frozen)]
#[derive(Debug, Clone)]
pub struct HardLink {}

#[pymethods]
impl HardLink {
    #[new]
    fn new() -> HardLink {
        HardLink {}
    }
}

/// The link object for `link`.
pub fn object(py: Python<'_>, link: LinkValue) -> PyResult<Py<PyAny>> {
    Ok(match link {
        LinkValue::Hard(_) => Py::new(py, HardLink {})?.into_any(),
        LinkValue::Soft(path) => Py::new(py, SoftLink { path })?.into_any(),
        LinkValue::External { file, path } => Py::new(
            py,
            ExternalLink {
                filename: file,
                path,
            },
        )?
        .into_any(),
    })
}
