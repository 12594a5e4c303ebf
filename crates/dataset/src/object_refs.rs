//! Object references, read (HDF5's `H5R_OBJECT`, h5py's `h5py.Reference` to a group or
//! dataset): an object header's address, resolved to a path by walking the file's groups
//! (as `h5py`'s `f[ref].name` does).

use std::collections::HashSet;

use h5chunk_format::message::DatatypeClass;

use crate::attr::Attr;
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::file::File;
use crate::link::LinkValue;
use crate::types::decode_refs;
use crate::values::heap_sequences;

impl Attr {
    /// The object references an attribute holds (their object header addresses; see
    /// [`File::object_path`]).
    pub fn object_refs(&self) -> Result<Vec<u64>> {
        decode_refs(
            self.datatype(),
            self.raw(),
            &format!("attribute {:?}", self.name()),
        )
    }
}

impl Dataset {
    /// Write every element of a dataset of object references
    /// ([`types::object_reference`](crate::types::object_reference), h5py's `ref_dtype`):
    /// `targets` are the objects' addresses ([`Group::object_address`](crate::Group::object_address),
    /// [`Dataset::object_address`]), each checked to be an object of this file. h5py resolves
    /// them with `f[ref]`.
    pub fn write_object_refs(&self, targets: &[u64]) -> Result<()> {
        // Decoding no elements checks the type alone, with the errors a read would give.
        decode_refs(self.datatype(), &[], &self.path())?;
        let bytes = crate::values::encode_refs(&self.file().inner.store, targets)?;
        self.write_raw(&bytes)
    }

    /// Every element of a dataset of object references (their object header addresses; see
    /// [`File::object_path`]).
    pub fn read_object_refs(&self) -> Result<Vec<u64>> {
        let raw = self.read_raw()?;
        decode_refs(self.datatype(), &raw, &self.path())
    }

    /// The dimension scales attached to each dimension (the paths its `DIMENSION_LIST`
    /// names, as netCDF-4 readers find a variable's dimensions); empty lists without one.
    pub fn dimension_scales(&self) -> Result<Vec<Vec<String>>> {
        let rank = self.shape().len();
        let Ok(list) = self.attr("DIMENSION_LIST") else {
            return Ok(vec![Vec::new(); rank]);
        };
        let DatatypeClass::VarLen { base, .. } = &list.datatype().class else {
            return Err(Error::corrupt(
                "DIMENSION_LIST attribute",
                None,
                format!("{}: not variable-length", self.path()),
            ));
        };
        let store = &self.file().inner.store;
        let width = usize::try_from(base.size).unwrap_or(0);
        let mut out = Vec::with_capacity(rank);
        for (_, bytes) in heap_sequences(store, list.raw(), width.max(1))? {
            let mut paths = Vec::new();
            for addr in decode_refs(base, &bytes, "DIMENSION_LIST")? {
                paths.push(
                    self.file()
                        .object_path(addr)?
                        .unwrap_or_else(|| format!("(object @ {addr})")),
                );
            }
            out.push(paths);
        }
        Ok(out)
    }
}

impl File {
    /// A path to the object whose header is at `addr` (what an object reference holds), found
    /// by walking the groups from the root in name order; `None` when no link reaches it.
    pub fn object_path(&self, addr: u64) -> Result<Option<String>> {
        let root = self.root()?;
        if root.object_address() == addr {
            return Ok(Some("/".to_owned()));
        }
        let mut seen = HashSet::new();
        let mut queue = std::collections::VecDeque::from([root]);
        while let Some(g) = queue.pop_front() {
            if !seen.insert(g.object_address()) {
                continue;
            }
            for (name, value) in g.links()? {
                let LinkValue::Hard(a) = value else { continue };
                let path = if g.path() == "/" {
                    format!("/{name}")
                } else {
                    format!("{}/{name}", g.path())
                };
                if a.get() == addr {
                    return Ok(Some(path));
                }
                if let Ok(sub) = g.group(&name) {
                    queue.push_back(sub);
                }
            }
        }
        Ok(None)
    }
}
