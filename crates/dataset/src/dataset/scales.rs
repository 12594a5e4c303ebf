//! Dimension scales (the HDF5 Dimension Scales convention, libhdf5's `H5DS`, h5py's
//! `dataset.dims`): what netCDF-4 readers (netCDF-C, netCDF4-python, xarray) take a
//! variable's named dimensions and coordinates from.
//!
//! - A scale carries `CLASS = "DIMENSION_SCALE"` and its `NAME` (fixed-length, NUL-terminated
//!   ASCII strings, as `H5DSset_scale` writes them).
//! - A dataset with scales attached carries `DIMENSION_LIST`: one variable-length sequence of
//!   object references per dimension.
//! - A scale attached to datasets carries `REFERENCE_LIST`: a compound `{dataset: object
//!   reference, dimension: u32}` (16 bytes, as libhdf5 lays it out) per attachment.
//!
//! Attaching rewrites both lists whole (the old global heap collection of `DIMENSION_LIST` is
//! left unused, as space the file does not reuse).

use h5chunk_format::message::{
    ByteOrder, CharSet, CompoundMember, Datatype, DatatypeClass, DatatypeVersion, StringPadding,
    StringType,
};

use super::Dataset;
use crate::error::{Error, Result};
use crate::types::decode_refs;
use crate::values::{NewValues, heap_sequences};

/// `CLASS` of a dimension scale.
const SCALE_CLASS: &str = "DIMENSION_SCALE";

/// A fixed-length NUL-terminated ASCII string type of `len` bytes, the terminator included.
fn c_string(len: usize) -> Result<Datatype> {
    Ok(Datatype {
        version: DatatypeVersion::V1,
        size: u32::try_from(len).map_err(|_| Error::arg("name", "longer than 4 GiB"))?,
        class: DatatypeClass::String(StringType {
            padding: StringPadding::NullTerminate,
            charset: CharSet::Ascii,
        }),
    })
}

/// An object reference (`H5T_STD_REF_OBJ`): the object header's address, `offsets` bytes.
fn object_ref(offsets: u8) -> Datatype {
    Datatype {
        version: DatatypeVersion::V1,
        size: u32::from(offsets),
        class: DatatypeClass::Reference { flags: 0 },
    }
}

/// `REFERENCE_LIST`'s element type.
fn reference_list_type(offsets: u8) -> Datatype {
    let member = |name: &str, offset: u32, datatype: Datatype| CompoundMember {
        name: name.as_bytes().to_vec(),
        offset,
        array_v1: Default::default(),
        datatype,
    };
    Datatype {
        version: DatatypeVersion::V1,
        size: 16,
        class: DatatypeClass::Compound(vec![
            member("dataset", 0, object_ref(offsets)),
            member(
                "dimension",
                8,
                Datatype::int(4, false, ByteOrder::LittleEndian),
            ),
        ]),
    }
}

impl Dataset {
    /// Make this dataset a dimension scale named `name` (`H5DSset_scale`, h5py's
    /// `make_scale`): netCDF-4 readers then see it as the dimension `name` (and, when it has
    /// values, its coordinate variable).
    pub fn make_scale(&self, name: &str) -> Result<()> {
        if name.contains('\0') {
            return Err(Error::arg("name", "a scale name has no NUL"));
        }
        let class = format!("{SCALE_CLASS}\0");
        self.attrs().write(
            "CLASS",
            None,
            NewValues::Raw(c_string(class.len())?, class.into_bytes()),
        )?;
        let named = format!("{name}\0");
        self.attrs().write(
            "NAME",
            None,
            NewValues::Raw(c_string(named.len())?, named.into_bytes()),
        )
    }

    /// Whether this dataset is a dimension scale (its `CLASS` says so).
    pub fn is_scale(&self) -> bool {
        self.attr("CLASS")
            .and_then(|a| a.string())
            .is_ok_and(|c| c == SCALE_CLASS)
    }

    /// Attach the dimension scale `scale` to dimension `dim` of this dataset
    /// (`H5DSattach_scale`, h5py's `dims[dim].attach_scale`): this dataset's `DIMENSION_LIST`
    /// and the scale's `REFERENCE_LIST` gain the pair. Attaching it again changes nothing.
    pub fn attach_scale(&self, scale: &Dataset, dim: usize) -> Result<()> {
        let rank = self.shape().len();
        if dim >= rank {
            return Err(Error::arg(
                "dim",
                format!("dimension {dim} of a dataset of {rank}"),
            ));
        }
        if !scale.is_scale() {
            return Err(Error::arg(
                "scale",
                format!(
                    "{} is not a dimension scale (make_scale it first)",
                    scale.path()
                ),
            ));
        }
        let (me, it) = (self.header(), scale.header());
        if me == it {
            return Err(Error::arg(
                "scale",
                "a dataset is not its own dimension scale",
            ));
        }
        if scale.shape().len() != 1 {
            return Err(Error::arg("scale", "a dimension scale is one-dimensional"));
        }
        let f = &self.file.inner.store;
        let width = usize::from(f.sizes.offsets());
        let reference = object_ref(f.sizes.offsets());
        let addr_bytes = |a: u64| a.to_le_bytes().get(..width).unwrap_or_default().to_vec();
        // This dataset's DIMENSION_LIST: one sequence of references per dimension.
        let mut lists: Vec<Vec<u64>> = vec![Vec::new(); rank];
        if let Ok(a) = self.attr("DIMENSION_LIST") {
            let seqs = heap_sequences(f, a.raw(), width)?;
            for (list, (_, bytes)) in lists.iter_mut().zip(seqs) {
                list.extend(decode_refs(&reference, &bytes, "DIMENSION_LIST")?);
            }
        }
        let slot = lists
            .get_mut(dim)
            .ok_or(Error::Internal("a dimension list shorter than the rank"))?;
        if !slot.contains(&it.get()) {
            slot.push(it.get());
        }
        let items = lists
            .iter()
            .map(|l| {
                let n = u32::try_from(l.len()).unwrap_or(u32::MAX);
                (n, l.iter().flat_map(|&a| addr_bytes(a)).collect())
            })
            .collect();
        self.attrs().write(
            "DIMENSION_LIST",
            Some(&[rank as u64]),
            NewValues::Sequences(reference.clone(), items),
        )?;
        // The scale's REFERENCE_LIST: (dataset, dimension) pairs.
        let mut pairs: Vec<(u64, u32)> = Vec::new();
        if let Ok(a) = scale.attr("REFERENCE_LIST") {
            for e in a.raw().chunks_exact(16) {
                let (r, d) = e.split_at(8);
                let mut le = [0u8; 4];
                le.iter_mut().zip(d).for_each(|(x, y)| *x = *y);
                let refs = decode_refs(
                    &reference,
                    r.get(..width).unwrap_or_default(),
                    "REFERENCE_LIST",
                )?;
                if let Some(&a) = refs.first() {
                    pairs.push((a, u32::from_le_bytes(le)));
                }
            }
        }
        let pair = (me.get(), u32::try_from(dim).unwrap_or(u32::MAX));
        if !pairs.contains(&pair) {
            pairs.push(pair);
        }
        let mut raw = Vec::with_capacity(pairs.len().saturating_mul(16));
        for (a, d) in &pairs {
            let mut r = addr_bytes(*a);
            r.resize(8, 0);
            raw.extend_from_slice(&r);
            raw.extend_from_slice(&d.to_le_bytes());
            raw.extend_from_slice(&[0; 4]);
        }
        scale.attrs().write(
            "REFERENCE_LIST",
            Some(&[pairs.len() as u64]),
            NewValues::Raw(reference_list_type(f.sizes.offsets()), raw),
        )
    }

    /// The object header's address (what an object reference holds).
    fn header(&self) -> h5chunk_format::Addr {
        self.shared.state.read().header
    }
}
