//! `h5chunk.File` and `h5chunk.Group`: h5py's `File(name, mode)` and the mapping interface of
//! groups (`f['a/b']`, `in`, iteration, `keys/values/items`, `create_group`,
//! `create_dataset`, `visit`). A `File` is its root group, as in h5py.

use std::sync::Mutex;

use h5chunk::{
    CreateMode, Durability, Error, FileOptions, Libver, LibverBounds, MemberKind, OpenOptions,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use super::dataset::{self, Dataset};
use crate::attrs::{AttributeManager, Owner};
use crate::error::{IntoPy, to_py, unsupported};
use crate::links::{ExternalLink, SoftLink};
use crate::path::{exists, make_parents};

/// A group of an open file (h5py's `h5py.Group`).
#[pyclass(subclass, module = "h5chunk", frozen)]
#[derive(Debug)]
pub struct Group {
    pub(crate) inner: h5chunk::Group,
    pub(crate) origin: Origin,
}

/// The file an object was reached through, as the Python `File` was opened: what `.file`
/// makes a new `File` object of (h5chunk's API names neither a dataset's file nor a file's
/// name, so the module carries them).
#[derive(Debug, Clone)]
pub struct Origin {
    pub file: h5chunk::File,
    pub filename: std::sync::Arc<str>,
    pub writable: bool,
}

impl Origin {
    /// A new `File` object on the same open file (h5py's `obj.file`).
    pub fn file_object(&self, py: Python<'_>) -> PyResult<Py<File>> {
        let root = self.file.root().py()?;
        let init = PyClassInitializer::from(Group {
            inner: root,
            origin: self.clone(),
        })
        .add_subclass(File {
            file: Mutex::new(Some(self.file.clone())),
            filename: self.filename.to_string(),
            writable: self.writable,
            swmr_read: false,
        });
        Py::new(py, init)
    }
}

/// A member of a group as Python sees it: a `Group` or a `Dataset`.
pub fn member(
    py: Python<'_>,
    at: &h5chunk::Group,
    path: &str,
    origin: &Origin,
) -> PyResult<Py<PyAny>> {
    let found = py.detach(|| match at.group(path) {
        Ok(g) => Ok(Ok(g)),
        Err(Error::WrongKind { .. }) => at.dataset(path).map(Err),
        Err(e) => Err(e),
    });
    match found.py()? {
        Ok(g) => Ok(Py::new(
            py,
            Group {
                inner: g,
                origin: origin.clone(),
            },
        )?
        .into_any()),
        Err(d) => Ok(Py::new(py, Dataset::new(d, origin.clone()))?.into_any()),
    }
}

#[pymethods]
impl Group {
    /// The object at `name` (a path, relative to this group or absolute): a Group or a
    /// Dataset; KeyError when there is none.
    fn __getitem__(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        member(py, &self.inner, name, &self.origin)
    }

    /// h5py's `group[name] = value`: an `ExternalLink` adds that link; anything else is data
    /// for a new dataset (`create_dataset(name, data=value)`).
    fn __setitem__(&self, py: Python<'_>, name: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Ok(l) = value.cast::<ExternalLink>() {
            let l = l.get();
            let (parent, last) = make_parents(&self.inner, name)?;
            return py
                .detach(|| parent.link_external(last, &l.filename, &l.path))
                .py();
        }
        if value.is_instance_of::<SoftLink>()
            || value.is_instance_of::<Group>()
            || value.is_instance_of::<Dataset>()
        {
            return Err(unsupported("soft and hard links made (group[name] = obj)"));
        }
        let args = dataset::CreateArgs {
            shape: None,
            dtype: None,
            data: Some(value),
            chunks: None,
            maxshape: None,
            compression: None,
            compression_opts: None,
            shuffle: false,
            fletcher32: false,
            fillvalue: None,
            track_order: None,
        };
        dataset::create(py, &self.inner, name, args, &self.origin).map(|_| ())
    }

    /// The object at `name`, or `default` when there is none; with `getlink=True` the link
    /// itself (HardLink, SoftLink or ExternalLink), with `getclass=True` its class.
    #[pyo3(signature = (name, default=None, getclass=false, getlink=false))]
    fn get(
        &self,
        py: Python<'_>,
        name: &str,
        default: Option<Py<PyAny>>,
        getclass: bool,
        getlink: bool,
    ) -> PyResult<Option<Py<PyAny>>> {
        if getlink {
            if name.contains('/') {
                return Err(unsupported(
                    "get(path, getlink=True) of a path below a member",
                ));
            }
            let Some(link) = self.inner.link(name).py()? else {
                return Ok(default);
            };
            let obj = crate::links::object(py, link)?;
            if getclass {
                return Ok(Some(obj.bind(py).get_type().into_any().unbind()));
            }
            return Ok(Some(obj));
        }
        if !exists(&self.inner, name)? {
            return Ok(default);
        }
        let obj = member(py, &self.inner, name, &self.origin)?;
        if getclass {
            return Ok(Some(obj.bind(py).get_type().into_any().unbind()));
        }
        Ok(Some(obj))
    }

    fn __contains__(&self, name: &str) -> PyResult<bool> {
        exists(&self.inner, name)
    }

    /// The member names, in h5py's order (by name, or by creation order when tracked).
    fn keys(&self) -> PyResult<Vec<String>> {
        Ok(self.members()?.into_iter().map(|(n, _)| n).collect())
    }

    fn values(&self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        let names = self.keys()?;
        names
            .iter()
            .map(|n| member(py, &self.inner, n, &self.origin))
            .collect()
    }

    fn items(&self, py: Python<'_>) -> PyResult<Vec<(String, Py<PyAny>)>> {
        let names = self.keys()?;
        names
            .into_iter()
            .map(|n| {
                let m = member(py, &self.inner, &n, &self.origin)?;
                Ok((n, m))
            })
            .collect()
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PyList::new(py, self.keys()?)?
            .try_iter()
            .map(Bound::into_any)
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(self.members()?.len())
    }

    fn __delitem__(&self, _name: &str) -> PyResult<()> {
        Err(unsupported("deleting group members (del group[name])"))
    }

    /// A new group at `name` (intermediate groups made as needed); ValueError if it exists.
    #[pyo3(signature = (name, track_order=None))]
    fn create_group(
        &self,
        py: Python<'_>,
        name: &str,
        track_order: Option<bool>,
    ) -> PyResult<Group> {
        let (parent, last) = make_parents(&self.inner, name)?;
        let g = py.detach(|| match track_order {
            Some(on) => parent.create_group_with(last, h5chunk::GroupOptions::track_order(on)),
            None => parent.create_group(last),
        });
        Ok(Group {
            inner: g.py()?,
            origin: self.origin.clone(),
        })
    }

    /// The group at `name`, made when missing; TypeError when a dataset is there.
    fn require_group(&self, py: Python<'_>, name: &str) -> PyResult<Group> {
        if !exists(&self.inner, name)? {
            return self.create_group(py, name, None);
        }
        match self.inner.group(name) {
            Ok(g) => Ok(Group {
                inner: g,
                origin: self.origin.clone(),
            }),
            Err(Error::WrongKind { .. }) => Err(PyTypeError::new_err(format!(
                "Incompatible object ({name}) already exists"
            ))),
            Err(e) => Err(to_py(e)),
        }
    }

    /// h5py's `create_dataset`, with its argument rules (see `dataset::create`).
    #[pyo3(signature = (name, shape=None, dtype=None, data=None, chunks=None, maxshape=None,
        compression=None, compression_opts=None, shuffle=None, fletcher32=None,
        fillvalue=None, track_order=None))]
    #[allow(clippy::too_many_arguments)]
    fn create_dataset(
        &self,
        py: Python<'_>,
        name: &str,
        shape: Option<&Bound<'_, PyAny>>,
        dtype: Option<&Bound<'_, PyAny>>,
        data: Option<&Bound<'_, PyAny>>,
        chunks: Option<&Bound<'_, PyAny>>,
        maxshape: Option<&Bound<'_, PyAny>>,
        compression: Option<&Bound<'_, PyAny>>,
        compression_opts: Option<&Bound<'_, PyAny>>,
        shuffle: Option<bool>,
        fletcher32: Option<bool>,
        fillvalue: Option<&Bound<'_, PyAny>>,
        track_order: Option<bool>,
    ) -> PyResult<Dataset> {
        let args = dataset::CreateArgs {
            shape,
            dtype,
            data,
            chunks,
            maxshape,
            compression,
            compression_opts,
            shuffle: shuffle.unwrap_or(false),
            fletcher32: fletcher32.unwrap_or(false),
            fillvalue,
            track_order,
        };
        dataset::create(py, &self.inner, name, args, &self.origin)
    }

    /// The dataset at `name` if its shape and dtype match (dtype: castable unless
    /// `exact`), else made with `create_dataset`'s arguments.
    #[pyo3(signature = (name, shape, dtype, exact=false, **kwds))]
    fn require_dataset(
        &self,
        py: Python<'_>,
        name: &str,
        shape: &Bound<'_, PyAny>,
        dtype: &Bound<'_, PyAny>,
        exact: bool,
        kwds: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        if !exists(&self.inner, name)? {
            let kw = PyDict::new(py);
            if let Some(k) = kwds {
                kw.update(k.as_mapping())?;
            }
            kw.set_item("shape", shape)?;
            kw.set_item("dtype", dtype)?;
            let me = Py::new(
                py,
                Group {
                    inner: self.inner.clone(),
                    origin: self.origin.clone(),
                },
            )?;
            return me
                .bind(py)
                .call_method("create_dataset", (name,), Some(&kw))
                .map(Bound::unbind);
        }
        let d = match self.inner.dataset(name) {
            Ok(d) => Dataset::new(d, self.origin.clone()),
            Err(Error::WrongKind { .. }) => {
                return Err(PyTypeError::new_err(format!(
                    "Incompatible object ({name}) already exists"
                )));
            }
            Err(e) => return Err(to_py(e)),
        };
        let want = dataset::shape_arg(shape)?;
        let have = d.inner.shape();
        if want != have {
            return Err(PyTypeError::new_err(format!(
                "Shapes do not match (existing {have:?} vs new {want:?})"
            )));
        }
        let np = crate::dtype::numpy(py)?;
        let want_dt = np.call_method1("dtype", (dtype,))?;
        let have_dt = d.dtype(py)?;
        let ok = if exact {
            want_dt.eq(&have_dt)?
        } else {
            np.call_method1("can_cast", (&have_dt, &want_dt))?
                .extract()?
        };
        if !ok {
            return Err(PyTypeError::new_err(format!(
                "Datatypes cannot be safely cast (existing {have_dt} vs new {want_dt})"
            )));
        }
        Ok(Py::new(py, d)?.into_any())
    }

    /// Call `func(name)` for every object below this group (names relative to it), stopping at
    /// the first call that returns something other than None, which is returned.
    fn visit(&self, py: Python<'_>, func: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let mut seen = Vec::new();
        walk(py, &self.inner, "", &mut seen, &mut |_, name| {
            func.call1((name,)).map(Bound::unbind)
        })
    }

    /// Call `func(name, obj)` for every object below this group, as `visit`.
    fn visititems(&self, py: Python<'_>, func: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let mut seen = Vec::new();
        let at = self.inner.clone();
        walk(py, &self.inner, "", &mut seen, &mut |py, name| {
            let obj = member(py, &at, name, &self.origin)?;
            func.call1((name, obj)).map(Bound::unbind)
        })
    }

    /// The group's path (`/` for the root).
    #[getter]
    fn name(&self) -> String {
        self.inner.path().to_owned()
    }

    /// The group that holds this one (the root holds itself).
    #[getter]
    fn parent(&self) -> PyResult<Group> {
        let path = self.inner.path();
        let parent = match path.rfind('/') {
            Some(0) | None => "/",
            Some(i) => path.get(..i).unwrap_or("/"),
        };
        Ok(Group {
            inner: self.inner.file().group(parent).py()?,
            origin: self.origin.clone(),
        })
    }

    /// A `File` object on the file this group is in (h5py's `group.file`).
    #[getter]
    fn file(&self, py: Python<'_>) -> PyResult<Py<File>> {
        self.origin.file_object(py)
    }

    /// The group's attributes (h5py's `group.attrs`).
    #[getter]
    fn attrs(&self) -> AttributeManager {
        AttributeManager {
            owner: Owner::Group(self.inner.clone()),
        }
    }

    fn __repr__(&self) -> String {
        format!("<h5chunk.Group {:?}>", self.inner.path())
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Group>()
            .is_ok_and(|g| g.get().inner.object_address() == self.inner.object_address())
    }

    fn __hash__(&self) -> u64 {
        self.inner.object_address()
    }
}

impl Group {
    fn members(&self) -> PyResult<Vec<(String, MemberKind)>> {
        self.inner.members().py()
    }
}

/// Depth-first over the members below `g`, each object once (hard links to an object seen
/// before are skipped, as libhdf5's visit does), names joined with `/`.
fn walk(
    py: Python<'_>,
    g: &h5chunk::Group,
    prefix: &str,
    seen: &mut Vec<u64>,
    f: &mut dyn FnMut(Python<'_>, &str) -> PyResult<Py<PyAny>>,
) -> PyResult<Py<PyAny>> {
    for (name, kind) in g.members().py()? {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        match kind {
            MemberKind::Group => {
                let sub = g.group(&name).py()?;
                if seen.contains(&sub.object_address()) {
                    continue;
                }
                seen.push(sub.object_address());
                let r = f(py, &path)?;
                if !r.is_none(py) {
                    return Ok(r);
                }
                let r = walk(py, &sub, &path, seen, f)?;
                if !r.is_none(py) {
                    return Ok(r);
                }
            }
            MemberKind::Dataset => {
                let d = g.dataset(&name).py()?;
                if seen.contains(&d.object_address()) {
                    continue;
                }
                seen.push(d.object_address());
                let r = f(py, &path)?;
                if !r.is_none(py) {
                    return Ok(r);
                }
            }
            // Soft and external links: libhdf5's visit does not follow them.
            MemberKind::Other => {}
        }
    }
    Ok(py.None())
}

/// An HDF5 file (h5py's `h5py.File`), which is also its root group.
#[pyclass(extends = Group, module = "h5chunk", frozen)]
#[derive(Debug)]
pub struct File {
    file: Mutex<Option<h5chunk::File>>,
    filename: String,
    writable: bool,
    /// Opened as a SWMR reader (`File(name, 'r', swmr=True)`).
    swmr_read: bool,
}

fn libver_named(name: &str) -> PyResult<Libver> {
    [
        Libver::Earliest,
        Libver::V18,
        Libver::V110,
        Libver::V112,
        Libver::V114,
        Libver::V200,
        Libver::Latest,
    ]
    .into_iter()
    .find(|l| l.h5py_name() == name)
    .ok_or_else(|| PyValueError::new_err(format!("unknown libver {name:?}")))
}

fn libver_arg(libver: Option<&Bound<'_, PyAny>>) -> PyResult<LibverBounds> {
    let Some(v) = libver else {
        return Ok(LibverBounds::default());
    };
    let (low, high) = if let Ok(s) = v.extract::<String>() {
        (libver_named(&s)?, Libver::Latest)
    } else if let Ok((lo, hi)) = v.extract::<(String, String)>() {
        (libver_named(&lo)?, libver_named(&hi)?)
    } else {
        return Err(PyTypeError::new_err(
            "libver is a name ('earliest', 'v110', 'latest', ...) or a (low, high) pair",
        ));
    };
    LibverBounds::new(low, high).py()
}

#[pymethods]
impl File {
    /// Open or create `name`: mode `'r'` (read-only, the default), `'r+'` (read and write,
    /// must exist), `'w'` (create, truncate), `'w-'` or `'x'` (create, fail if it exists),
    /// `'a'` (read and write if it exists, create otherwise). `swmr=True` with `'r'` opens as
    /// a SWMR reader; `threads` sizes the pool that (de)compresses chunks; `durability` says
    /// what each flush of a writable file survives: `'flush'` (the default: the process killed
    /// at any instant, through a journal beside the file), `'sync'` (a power cut too: the
    /// journal and `fsync`) or `'none'` (neither, as libhdf5's flush).
    #[new]
    #[pyo3(signature = (name, mode="r", driver=None, libver=None, userblock_size=None,
        swmr=false, rdcc_nslots=None, rdcc_nbytes=None, rdcc_w0=None, track_order=None,
        locking=None, threads=None, durability=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        mode: &str,
        driver: Option<&str>,
        libver: Option<&Bound<'_, PyAny>>,
        userblock_size: Option<u64>,
        swmr: bool,
        rdcc_nslots: Option<&Bound<'_, PyAny>>,
        rdcc_nbytes: Option<&Bound<'_, PyAny>>,
        rdcc_w0: Option<&Bound<'_, PyAny>>,
        track_order: Option<bool>,
        locking: Option<&Bound<'_, PyAny>>,
        threads: Option<usize>,
        durability: Option<&str>,
    ) -> PyResult<PyClassInitializer<Self>> {
        // h5py's `locking` picks libhdf5's file-locking mode; h5chunk always locks a writer
        // as libhdf5 does and never a reader, so any value is taken. The raw-data chunk cache
        // settings (rdcc_*) tune libhdf5's cache; h5chunk sizes its own, so they are taken too.
        let _ = (locking, rdcc_nslots, rdcc_nbytes, rdcc_w0);
        if let Some(d) = driver.filter(|d| *d != "sec2") {
            return Err(unsupported(&format!(
                "File(driver={d:?}) (h5chunk reads and writes files on disk)"
            )));
        }
        if userblock_size.is_some_and(|u| u != 0) {
            return Err(unsupported(
                "File(userblock_size=...) (user blocks are read, not made)",
            ));
        }
        if track_order.is_some() {
            return Err(unsupported(
                "File(track_order=...) (creation order of the root group)",
            ));
        }
        let filename: String = py
            .import("os")?
            .call_method1("fspath", (name,))?
            .extract()?;
        let bounds = libver_arg(libver)?;
        let durability = match durability {
            Some("sync") => Durability::Sync,
            None | Some("flush") => Durability::Flush,
            Some("none") => Durability::None,
            Some(other) => {
                return Err(PyValueError::new_err(format!(
                    "durability={other:?}: one of 'sync', 'flush', 'none'"
                )));
            }
        };
        let path = std::path::PathBuf::from(&filename);
        let create = |mode: CreateMode| FileOptions {
            bounds,
            mode,
            threads,
            durability,
            ..FileOptions::default()
        };
        let open = |writable: bool| OpenOptions {
            writable,
            threads,
            durability,
            swmr_read: swmr && !writable,
            ..OpenOptions::default()
        };
        let (file, writable) = py
            .detach(|| -> h5chunk::Result<(h5chunk::File, bool)> {
                Ok(match mode {
                    "r" => (open(false).open(&path)?, false),
                    "r+" => (open(true).open(&path)?, true),
                    "w" => (create(CreateMode::Truncate).create(&path)?, true),
                    "w-" | "x" => (create(CreateMode::Exclusive).create(&path)?, true),
                    "a" => {
                        if path.exists() {
                            (open(true).open(&path)?, true)
                        } else {
                            (create(CreateMode::Exclusive).create(&path)?, true)
                        }
                    }
                    _ => {
                        return Err(Error::InvalidArgument {
                            name: "mode",
                            reason: format!("{mode:?}: one of 'r', 'r+', 'w', 'w-', 'x', 'a'"),
                        });
                    }
                })
            })
            .py()?;
        let root = file.root().py()?;
        let origin = Origin {
            file: file.clone(),
            filename: filename.as_str().into(),
            writable,
        };
        Ok(PyClassInitializer::from(Group {
            inner: root,
            origin,
        })
        .add_subclass(File {
            file: Mutex::new(Some(file)),
            filename,
            writable,
            swmr_read: swmr && !writable,
        }))
    }

    /// The name the file was opened with.
    #[getter]
    fn filename(&self) -> &str {
        &self.filename
    }

    /// `'r'` or `'r+'`, as h5py reports it.
    #[getter]
    fn mode(&self) -> &'static str {
        if self.writable { "r+" } else { "r" }
    }

    /// Whether the file is open for SWMR reading or writing; set True to start writing
    /// (libhdf5's `H5Fstart_swmr_write`).
    #[getter]
    fn get_swmr_mode(&self) -> PyResult<bool> {
        Ok(self.swmr_read || self.handle()?.is_swmr_write())
    }

    #[setter]
    fn set_swmr_mode(&self, py: Python<'_>, on: bool) -> PyResult<()> {
        let f = self.handle()?;
        if !on {
            return Err(PyValueError::new_err("SWMR writing cannot be turned off"));
        }
        py.detach(|| f.start_swmr_write()).py()
    }

    /// Write everything that changed; the file is then complete on disk.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let f = self.handle()?;
        py.detach(|| f.flush()).py()
    }

    /// Flush and close the file (closing a closed file does nothing, as in h5py).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self
            .file
            .lock()
            .map_err(|_| PyValueError::new_err("file handle poisoned"))?
            .take();
        match taken {
            Some(f) => py.detach(|| f.close()).py(),
            None => Ok(()),
        }
    }

    /// Whether the file is open.
    fn __bool__(&self) -> bool {
        self.file.lock().map(|f| f.is_some()).unwrap_or(false)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        if self.__bool__() {
            format!("<h5chunk.File {:?} (mode {})>", self.filename, self.mode())
        } else {
            "<Closed h5chunk.File>".to_owned()
        }
    }
}

impl File {
    fn handle(&self) -> PyResult<h5chunk::File> {
        self.file
            .lock()
            .map_err(|_| PyValueError::new_err("file handle poisoned"))?
            .clone()
            .ok_or_else(|| PyValueError::new_err("Not a location (the file is closed)"))
    }
}
