//! Reading and writing a dataset of any size in bounded memory: slabs of whole rows along the
//! first dimension, in C order, each at most about a chosen number of bytes (whole chunk rows
//! when they fit, so no chunk is decoded twice).

use std::io;

use super::Dataset;
use crate::error::{Error, Result};

/// A slab of rows: the selection and its values (little-endian bytes of the dataset's type).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slab {
    /// The first element.
    pub start: Vec<u64>,
    /// The elements along each dimension (every dimension whole but the first).
    pub count: Vec<u64>,
    /// The values, C order.
    pub bytes: Vec<u8>,
}

/// Rows per slab for a dataset of `shape` in chunks of `chunk`, with `elem`-byte elements, so
/// that a slab holds about `target` bytes: whole chunk rows when one fits, else single rows.
fn rows_per_slab(shape: &[u64], chunk: Option<&[u64]>, elem: usize, target: usize) -> u64 {
    let row_bytes = shape
        .iter()
        .skip(1)
        .try_fold(elem as u64, |n, &d| n.checked_mul(d))
        .unwrap_or(u64::MAX)
        .max(1);
    let rows = (target as u64).checked_div(row_bytes).unwrap_or(0).max(1);
    let step = chunk.and_then(|c| c.first().copied()).unwrap_or(1).max(1);
    if rows >= step {
        rows.checked_div(step).unwrap_or(1).saturating_mul(step)
    } else {
        rows
    }
}

/// An iterator over a dataset's slabs (see [`Dataset::slabs`]).
#[derive(Debug)]
pub struct Slabs {
    d: Dataset,
    shape: Vec<u64>,
    per_slab: u64,
    next: u64,
}

impl Iterator for Slabs {
    type Item = Result<Slab>;

    fn next(&mut self) -> Option<Result<Slab>> {
        let rows = match self.shape.first() {
            Some(&r) => r,
            // A scalar: one slab of its one element.
            None if self.next == 0 => {
                self.next = 1;
                return Some(self.d.read_raw().map(|bytes| Slab {
                    start: Vec::new(),
                    count: Vec::new(),
                    bytes,
                }));
            }
            None => return None,
        };
        if self.next >= rows || self.shape.contains(&0) {
            return None;
        }
        let start_row = self.next;
        let n = self.per_slab.min(rows.saturating_sub(start_row));
        self.next = start_row.saturating_add(n);
        let mut start = vec![0; self.shape.len()];
        let mut count = self.shape.clone();
        if let (Some(s), Some(c)) = (start.first_mut(), count.first_mut()) {
            *s = start_row;
            *c = n;
        }
        Some(
            self.d
                .read_slice_raw(&start, &count, None)
                .map(|bytes| Slab {
                    start,
                    count,
                    bytes,
                }),
        )
    }
}

/// Writes a dataset's values in C order from a byte stream (see [`Dataset::row_writer`]).
#[derive(Debug)]
pub struct RowWriter {
    d: Dataset,
    shape: Vec<u64>,
    row_bytes: usize,
    per_slab: u64,
    /// The next row to write.
    row: u64,
    buf: Vec<u8>,
}

impl RowWriter {
    /// Write what is buffered: every whole row of it (all of it at the end).
    fn write_rows(&mut self, all: bool) -> Result<()> {
        let whole = self
            .buf
            .len()
            .checked_div(self.row_bytes)
            .unwrap_or(0)
            .saturating_mul(self.row_bytes);
        if whole == 0 {
            return Ok(());
        }
        if !all && (whole as u64) < self.per_slab.saturating_mul(self.row_bytes as u64) {
            return Ok(());
        }
        let n = whole.checked_div(self.row_bytes).unwrap_or(0) as u64;
        let rows = self.shape.first().copied().unwrap_or(0);
        if self.row.saturating_add(n) > rows {
            return Err(Error::arg(
                "values",
                format!("more than the dataset's {rows} rows"),
            ));
        }
        let mut start = vec![0; self.shape.len()];
        let mut count = self.shape.clone();
        if let (Some(s), Some(c)) = (start.first_mut(), count.first_mut()) {
            *s = self.row;
            *c = n;
        }
        let slab = self.buf.get(..whole).unwrap_or_default();
        self.d.write_slice_raw(slab, &start, &count, None)?;
        self.buf.drain(..whole);
        self.row = self.row.saturating_add(n);
        Ok(())
    }

    /// Rows written so far.
    pub fn rows_written(&self) -> u64 {
        self.row
    }

    /// Write what is left; an error unless the values written fill the dataset exactly.
    pub fn finish(mut self) -> Result<()> {
        self.write_rows(true)?;
        let rows = self.shape.first().copied().unwrap_or(0);
        if !self.buf.is_empty() || self.row != rows {
            return Err(Error::arg(
                "values",
                format!(
                    "{} whole rows and {} bytes given for {rows} rows of {} bytes",
                    self.row,
                    self.buf.len(),
                    self.row_bytes
                ),
            ));
        }
        Ok(())
    }
}

impl io::Write for RowWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        // Take no more than completes the current slab, so the buffer stays one slab long.
        let slab = usize::try_from(self.per_slab)
            .unwrap_or(usize::MAX)
            .saturating_mul(self.row_bytes);
        let room = slab.saturating_sub(self.buf.len()).max(self.row_bytes);
        let take = bytes.get(..room.min(bytes.len())).unwrap_or(bytes);
        self.buf.extend_from_slice(take);
        self.write_rows(false).map_err(io::Error::other)?;
        Ok(take.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Dataset {
    /// The dataset's values in slabs of whole rows along the first dimension, in order, each
    /// about `target_bytes` long (whole chunk rows when one fits, so that no chunk is read
    /// twice; single rows otherwise): the whole dataset in memory bounded by one slab, the
    /// chunk cache and the file's caches, whatever its size.
    pub fn slabs(&self, target_bytes: usize) -> Slabs {
        let shape = self.shape();
        let per_slab = rows_per_slab(
            &shape,
            self.chunk().as_deref(),
            self.dtype().size,
            target_bytes,
        );
        Slabs {
            d: self.clone(),
            shape,
            per_slab,
            next: 0,
        }
    }

    /// A writer of the dataset's values (little-endian bytes of its type, C order, from the
    /// first element) that writes them in slabs of about `target_bytes` of whole rows (see
    /// [`slabs`](Self::slabs)) as they come; [`RowWriter::finish`] writes the rest and checks
    /// the dataset was filled exactly.
    pub fn row_writer(&self, target_bytes: usize) -> Result<RowWriter> {
        let shape = self.shape();
        let elem = self.dtype().size;
        let row_bytes = shape
            .iter()
            .skip(1)
            .try_fold(elem as u64, |n, &d| n.checked_mul(d))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| Error::arg("dataset", "a row larger than memory"))?;
        if shape.is_empty() {
            return Err(Error::Unsupported("row writers of scalar datasets"));
        }
        let per_slab = rows_per_slab(&shape, self.chunk().as_deref(), elem, target_bytes);
        Ok(RowWriter {
            d: self.clone(),
            shape,
            row_bytes: row_bytes.max(1),
            per_slab,
            row: 0,
            buf: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::rows_per_slab;

    #[test]
    fn slabs_are_whole_chunk_rows_when_they_fit() {
        // Rows of 1,024 four-byte values, chunks of 256 rows: 4 MiB holds 4 chunk rows.
        assert_eq!(
            rows_per_slab(&[10_000, 1024], Some(&[256, 64]), 4, 4 << 20),
            1024
        );
        // A chunk row larger than the target: single rows.
        assert_eq!(
            rows_per_slab(&[10_000, 1024], Some(&[256, 64]), 4, 64 << 10),
            16
        );
        // A row larger than the target: one row.
        assert_eq!(rows_per_slab(&[10, 1 << 20], None, 8, 1 << 20), 1);
    }
}
