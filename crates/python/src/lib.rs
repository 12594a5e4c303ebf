//! `import h5chunk`: h5chunk's files, groups, datasets and attributes with h5py's surface, so
//! that a script moves from h5py by changing its import.
//!
//! ```python
//! import numpy as np, h5chunk
//! with h5chunk.File("log.h5", "w") as f:
//!     d = f.create_dataset("t", shape=(0, 8), maxshape=(None, 8), dtype="f8",
//!                          chunks=(1024, 8), compression="gzip")
//!     d.append(np.ones((3, 8)))        # resize and write, one call
//!     print(d[1:, ::2], d.attrs.keys())
//! ```
//!
//! Every read, write, resize, append and flush runs with the GIL released (`Python::detach`),
//! so Python threads read one dataset (or many) in parallel. numpy arrays come out of a read
//! with the `Vec` the read filled as their buffer (no copy), and a write of a C-contiguous
//! array of the dataset's type reads the array's memory in place.

use pyo3::prelude::*;

mod attrs;
mod dtype;
mod error;
mod links;
mod objects;
mod path;
mod select;

/// The compiled module `h5chunk._h5chunk`, which the package `h5chunk` re-exports.
#[pymodule]
mod _h5chunk {
    #[pymodule_export]
    use crate::attrs::AttributeManager;
    #[pymodule_export]
    use crate::error::UnsupportedError;
    #[pymodule_export]
    use crate::links::{ExternalLink, HardLink, SoftLink};
    #[pymodule_export]
    use crate::objects::dataset::{Dataset, StoreInfo, View};
    #[pymodule_export]
    use crate::objects::group::{File, Group};

    use pyo3::prelude::*;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("__version__", env!("CARGO_PKG_VERSION"))
    }
}
