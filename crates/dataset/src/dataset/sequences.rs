//! Variable-length sequence datasets (h5py's `h5py.vlen_dtype(np.int32)`, ragged arrays):
//! each element a heap ID naming one object of the file's global heap, which holds the
//! sequence's numbers in the base type's byte order. Read and written as `Vec<T>` per
//! element, as [`strings`](super::strings) does for variable-length strings.

use h5chunk_format::global_heap::HeapId;
use h5chunk_format::message::{DatatypeClass, VarLenKind};

use super::Dataset;
use crate::error::{Error, Result};
use crate::select::Hyperslab;
use crate::types::{H5Type, TypeDesc, from_le_bytes, to_le_bytes};
use crate::values::{heap_sequences, store_objects};

impl Dataset {
    /// Read every element of a variable-length sequence dataset whose base type is `T` (any
    /// byte order), in C order; an empty (or never written) element is an empty `Vec`.
    pub fn read_sequences<T: H5Type>(&self) -> Result<Vec<Vec<T>>> {
        self.sequences_of::<T>(&Hyperslab::all(&self.shape()))
    }

    /// Read a hyperslab of a variable-length sequence dataset (`stride` 1 when `None`), in C
    /// order (see [`read_sequences`](Self::read_sequences)).
    pub fn read_slice_sequences<T: H5Type>(
        &self,
        start: &[u64],
        count: &[u64],
        stride: Option<&[u64]>,
    ) -> Result<Vec<Vec<T>>> {
        self.sequences_of::<T>(&Hyperslab::new(start, count, stride, &self.shape())?)
    }

    /// The sequences of elements as [`read_raw`](Self::read_raw) and
    /// [`read_slice_raw`](Self::read_slice_raw) give them (heap IDs, resolved here).
    pub fn decode_sequences<T: H5Type>(&self, raw: &[u8]) -> Result<Vec<Vec<T>>> {
        let base = self.sequence_base::<T>()?;
        let f = &self.file.inner.store;
        heap_sequences(f, raw, base.size)?
            .into_iter()
            .map(|(_, mut bytes)| {
                base.to_from_le(&mut bytes);
                Ok(from_le_bytes::<T>(&bytes))
            })
            .collect()
    }

    /// Write every element of a variable-length sequence dataset, in C order: each sequence a
    /// new object in the file's global heap (what an element held before is left unused).
    pub fn write_sequences<T: H5Type>(&self, values: &[&[T]]) -> Result<()> {
        let shape = self.shape();
        self.write_slice_sequences(values, &vec![0; shape.len()], &shape, None)
    }

    /// Write a hyperslab of a variable-length sequence dataset (see
    /// [`write_sequences`](Self::write_sequences)).
    pub fn write_slice_sequences<T: H5Type>(
        &self,
        values: &[&[T]],
        start: &[u64],
        count: &[u64],
        stride: Option<&[u64]>,
    ) -> Result<()> {
        let base = self.sequence_base::<T>()?;
        let f = &self.file.inner.store;
        f.check_writable()?;
        // The count is checked before any heap object is stored.
        let h = Hyperslab::new(start, count, stride, &self.shape())?;
        if u64::try_from(values.len()).ok() != Some(h.len()) {
            return Err(Error::arg(
                "values",
                format!(
                    "{} sequences for a selection of {} elements of {}",
                    values.len(),
                    h.len(),
                    self.path()
                ),
            ));
        }
        // Every sequence is a heap object, the empty one too: libhdf5 reads a zero-length
        // element's object all the same (a null ID with an undefined address it cannot read).
        let mut objects = Vec::with_capacity(values.len());
        let mut lens = Vec::with_capacity(values.len());
        for v in values {
            lens.push(
                u32::try_from(v.len()).map_err(|_| {
                    Error::arg("values", "a sequence of more than 2^32 - 1 elements")
                })?,
            );
            let mut bytes = to_le_bytes(v);
            base.to_from_le(&mut bytes);
            objects.push(bytes);
        }
        let refs: Vec<&[u8]> = objects.iter().map(Vec::as_slice).collect();
        let mut ids = Vec::with_capacity(values.len().saturating_mul(HeapId::encoded_len(f.sizes)));
        for id in store_objects(f, &refs, &lens, true)? {
            id.encode(&mut ids, f.sizes)?;
        }
        self.write_slice_raw(&ids, start, count, stride)
    }

    fn sequences_of<T: H5Type>(&self, h: &Hyperslab) -> Result<Vec<Vec<T>>> {
        self.sequence_base::<T>()?;
        let raw = self.read_selection_raw(h)?;
        self.decode_sequences(&raw)
    }

    /// The base type of a variable-length sequence dataset, when it is `T` (its byte order
    /// may differ); an error for any other dataset.
    fn sequence_base<T: H5Type>(&self) -> Result<TypeDesc> {
        let not = |what: String| {
            Error::arg(
                "element type",
                format!(
                    "dataset {} holds {what}, not variable-length sequences of {}",
                    self.path(),
                    T::DESC.numpy()
                ),
            )
        };
        match &self.datatype().class {
            DatatypeClass::VarLen {
                kind: VarLenKind::Sequence,
                base,
            } => match TypeDesc::from_datatype(base) {
                Ok(b) if b.class == T::DESC.class && b.size == T::DESC.size => Ok(b),
                Ok(b) => Err(not(format!("variable-length sequences of {}", b.numpy()))),
                Err(_) => Err(not(format!(
                    "variable-length sequences of {} elements",
                    base.class.name()
                ))),
            },
            other => Err(not(format!("{} elements", other.name()))),
        }
    }
}
