//! h5chunk's errors as the Python exceptions h5py raises for the same failure, with
//! h5chunk's message.

use std::io::ErrorKind;

use h5chunk::Error;
use pyo3::PyErr;
use pyo3::create_exception;
use pyo3::exceptions::{
    PyFileExistsError, PyFileNotFoundError, PyIndexError, PyKeyError, PyNotImplementedError,
    PyOSError, PyPermissionError, PyTypeError, PyValueError,
};

create_exception!(
    h5chunk,
    UnsupportedError,
    PyNotImplementedError,
    "What h5chunk does not do (yet): the message names it. A NotImplementedError."
);

/// The exception h5py raises for the same failure.
pub fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match &e {
        Error::NotFound { .. } | Error::NoAttribute { .. } => PyKeyError::new_err(msg),
        Error::Exists { .. } | Error::InvalidArgument { .. } | Error::ValueOutOfRange { .. } => {
            PyValueError::new_err(msg)
        }
        Error::WrongKind { .. } => PyTypeError::new_err(msg),
        Error::Unsupported(_) | Error::UnsupportedFloat { .. } => UnsupportedError::new_err(msg),
        Error::Io { source, .. } => match source.kind() {
            ErrorKind::NotFound => PyFileNotFoundError::new_err(msg),
            ErrorKind::AlreadyExists => PyFileExistsError::new_err(msg),
            ErrorKind::PermissionDenied => PyPermissionError::new_err(msg),
            _ => PyOSError::new_err(msg),
        },
        _ => PyOSError::new_err(msg),
    }
}

/// `Result<T, h5chunk::Error>` into a Python result.
pub trait IntoPy<T> {
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPy<T> for h5chunk::Result<T> {
    fn py(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}

/// What h5chunk's Python module refuses, named.
pub fn unsupported(what: &str) -> PyErr {
    UnsupportedError::new_err(format!("unsupported: {what}"))
}

/// An index outside a dimension (numpy's and h5py's IndexError).
pub fn index_error(msg: String) -> PyErr {
    PyIndexError::new_err(msg)
}
