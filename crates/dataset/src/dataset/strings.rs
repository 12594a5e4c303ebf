//! String datasets, read: fixed-length strings (padding removed) and variable-length ones
//! (each element a reference into the file's global heap), as h5py's `.asstr()` gives them.

use std::collections::HashMap;

use h5chunk_format::message::{DatatypeClass, StringPadding, StringType, VarLenKind};

use super::Dataset;
use crate::error::{Error, Result};
use crate::select::Hyperslab;
use crate::types::TypeClass;
use crate::values::{heap_strings, string_ids, unpad};

impl Dataset {
    /// Read every element of a string dataset ([`TypeClass::FixedString`] or
    /// [`TypeClass::VarLenString`]), in C order. Invalid UTF-8 is replaced (U+FFFD).
    pub fn read_strings(&self) -> Result<Vec<String>> {
        self.strings_of(&Hyperslab::all(&self.shape()))
    }

    /// Read a hyperslab of a string dataset (`stride` 1 when `None`), in C order.
    pub fn read_slice_strings(
        &self,
        start: &[u64],
        count: &[u64],
        stride: Option<&[u64]>,
    ) -> Result<Vec<String>> {
        self.strings_of(&Hyperslab::new(start, count, stride, &self.shape())?)
    }

    /// Write every element of a string dataset, in C order. Fixed-length strings: each value's
    /// bytes padded as the type says (NUL or spaces), a value longer than the element refused.
    /// Variable-length strings: each value a new object in the file's global heap (what an
    /// element held before is left unused).
    pub fn write_strings(&self, values: &[&str]) -> Result<()> {
        let shape = self.shape();
        self.write_slice_strings(values, &vec![0; shape.len()], &shape, None)
    }

    /// Write a hyperslab of a fixed-length string dataset (see
    /// [`write_strings`](Self::write_strings)).
    pub fn write_slice_strings(
        &self,
        values: &[&str],
        start: &[u64],
        count: &[u64],
        stride: Option<&[u64]>,
    ) -> Result<()> {
        let t = self.strings_type()?;
        let size = self.dtype().size;
        if self.dtype().class == TypeClass::VarLenString {
            // Each string a global heap object; the elements are their heap IDs.
            let ids = string_ids(&self.file.inner.store, values, true)?;
            return self.write_slice_raw(&ids, start, count, stride);
        }
        let pad = if t.padding == StringPadding::SpacePad {
            b' '
        } else {
            0
        };
        let mut raw = Vec::with_capacity(values.len().saturating_mul(size));
        for v in values {
            if v.len() > size {
                return Err(Error::arg(
                    "values",
                    format!(
                        "{v:?} is longer than the {size}-byte strings of {}",
                        self.path()
                    ),
                ));
            }
            raw.extend_from_slice(v.as_bytes());
            raw.resize(raw.len().saturating_add(size.saturating_sub(v.len())), pad);
        }
        self.write_slice_raw(&raw, start, count, stride)
    }

    fn strings_of(&self, h: &Hyperslab) -> Result<Vec<String>> {
        self.strings_type()?;
        let raw = self.read_selection_raw(h)?;
        self.decode_strings(&raw)
    }

    /// The strings of elements as [`read_raw`](Self::read_raw), [`read_slice_raw`] and
    /// [`slabs`](Self::slabs) give them (variable-length ones: heap IDs, resolved here).
    ///
    /// [`read_slice_raw`]: Self::read_slice_raw
    pub fn decode_strings(&self, raw: &[u8]) -> Result<Vec<String>> {
        let string_type = self.strings_type()?;
        match self.dtype().class {
            TypeClass::VarLenString => heap_strings(
                &self.file.inner.store,
                raw,
                string_type,
                &mut HashMap::new(),
            ),
            _ => Ok(raw
                .chunks_exact(self.dtype().size.max(1))
                .map(|e| unpad(e, string_type))
                .collect()),
        }
    }

    /// The padding and character set of a string dataset; an error for any other.
    fn strings_type(&self) -> Result<StringType> {
        match &self.datatype().class {
            DatatypeClass::String(t)
            | DatatypeClass::VarLen {
                kind: VarLenKind::String(t),
                ..
            } => Ok(*t),
            other => Err(Error::arg(
                "element type",
                format!(
                    "dataset {} holds {} elements, not strings",
                    self.path(),
                    other.name()
                ),
            )),
        }
    }
}
