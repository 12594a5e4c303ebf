//! kerchunk's Parquet layout of references, for files with many chunks: what
//! `kerchunk.df.refs_to_dataframe` writes and `fsspec`'s `LazyReferenceMapper` reads.
//!
//! - `DIR/.zmetadata`: JSON, `{"metadata": {key: zarr metadata, ...}, "record_size": N}`,
//!   every `.zgroup`, `.zarray` and `.zattrs` of the references.
//! - `DIR/FIELD/refs.R.parq`: one Parquet file per `record_size` chunks of the array `FIELD`
//!   (its key, `group/dataset`), in the C order of the chunk grid: the chunk at grid index
//!   `(i, j, ...)` is row `L % record_size` of record `L / record_size`, where `L` is its
//!   linear index. Columns `path` (the URL; null for a chunk never written), `offset`, `size`
//!   (int64) and `raw` (inline bytes; null for a byte range).
//!
//! Only records holding at least one chunk are written: a reader finds no file for the others
//! and sees the fill value, as for a null row. So a sparse grid costs nothing per empty record.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use parquet::basic::{Compression, GzipLevel};
use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

use super::{RefValue, Refs, push_decimal, string_json};
use crate::{Error, Result};

/// References per Parquet file unless asked otherwise: `refs_to_dataframe`'s default.
pub const DEFAULT_RECORD_SIZE: usize = 100_000;

/// The columns of every record file, as kerchunk writes them.
const SCHEMA: &str = "message schema {
    OPTIONAL BYTE_ARRAY path (STRING);
    REQUIRED INT64 offset;
    REQUIRED INT64 size;
    OPTIONAL BYTE_ARRAY raw;
}";

/// What one chunk key refers to.
#[derive(Clone, Copy)]
enum Row<'a> {
    Range(u64, u64),
    Raw(&'a [u8]),
}

/// One array's rows, by linear chunk index.
struct Field<'a> {
    /// Chunks in the grid (1 for a scalar).
    total: u64,
    rows: Vec<(u64, Row<'a>)>,
}

impl Refs {
    /// Write the references in kerchunk's Parquet layout (see the module docs) into the
    /// directory `dir` (created if missing), `record_size` chunks to a Parquet file. Returns the
    /// number of Parquet files written.
    pub fn write_parquet(&self, dir: &Path, record_size: usize) -> Result<usize> {
        let record_size = u64::try_from(record_size.max(1)).unwrap_or(u64::MAX);
        let io = |path: &Path, source: std::io::Error| Error::Io {
            file: path.display().to_string(),
            source,
        };
        let mut fields: BTreeMap<&str, Field<'_>> = BTreeMap::new();
        for a in &self.arrays {
            let total = (a.grid.iter()).try_fold(1u64, |n, &g| n.checked_mul(g));
            let Some(total) = total else {
                return Err(Error::NoZarrEquivalent {
                    dataset: a.prefix.clone(),
                    what: format!("a chunk grid of {:?} chunks (more than 2^64)", a.grid),
                });
            };
            let mut rows = Vec::with_capacity(a.ranges.len());
            for (i, &(offset, size)) in a.ranges.iter().enumerate() {
                let from = i.saturating_mul(a.rank);
                let scaled = (a.scaled.get(from..from.saturating_add(a.rank))).unwrap_or_default();
                let linear = linear_index(scaled, &a.grid)
                    .ok_or_else(|| Error::Internal("a chunk reference outside its array's grid"))?;
                rows.push((linear, Row::Range(offset, size)));
            }
            fields.insert(&a.prefix, Field { total, rows });
        }
        let mut metadata = Vec::new();
        metadata.extend_from_slice(b"{\"metadata\":{");
        let mut first = true;
        for (k, v) in &self.meta {
            let (field, name) = k.rsplit_once('/').unwrap_or(("", k));
            match v {
                RefValue::Text(json) if name.starts_with(".z") => {
                    if !first {
                        metadata.push(b',');
                    }
                    first = false;
                    metadata.extend_from_slice(string_json(k).as_bytes());
                    metadata.push(b':');
                    metadata.extend_from_slice(json.as_bytes());
                }
                // Inline data: only compact datasets have it, one chunk at the grid's origin.
                _ => {
                    if field.is_empty() || name.split('.').any(|i| i != "0") {
                        return Err(Error::Internal(
                            "inline references only at the origin of a named array",
                        ));
                    }
                    let row = match v {
                        RefValue::Text(t) => Row::Raw(t.as_bytes()),
                        RefValue::Bytes(b) => Row::Raw(b),
                        &RefValue::Range { offset, size } => Row::Range(offset, size),
                    };
                    let f = fields.entry(field).or_insert(Field {
                        total: 1,
                        rows: Vec::new(),
                    });
                    f.rows.push((0, row));
                }
            }
        }
        metadata.extend_from_slice(b"},\"record_size\":");
        push_decimal(&mut metadata, record_size);
        metadata.extend_from_slice(b",\"zarr_consolidated_format\":1}");

        fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        let schema = Arc::new(parse_message_type(SCHEMA).map_err(|e| parquet_error(dir, e))?);
        let props = Arc::new(
            WriterProperties::builder()
                .set_compression(Compression::GZIP(GzipLevel::default()))
                // A null count of 0 is what tells fastparquet a column is plain int64, not nullable.
                .set_statistics_enabled(EnabledStatistics::Chunk)
                .build(),
        );
        let mut written = 0usize;
        for (field, mut f) in fields {
            // A field is a directory: names that would leave `dir` are not written.
            if field
                .split('/')
                .any(|c| c.is_empty() || c == "." || c == "..")
            {
                return Err(Error::NoZarrEquivalent {
                    dataset: format!("/{field}"),
                    what: "a name that cannot be a directory of the Parquet layout".to_owned(),
                });
            }
            f.rows.sort_unstable_by_key(|&(linear, _)| linear);
            let field_dir = dir.join(field);
            fs::create_dir_all(&field_dir).map_err(|e| io(&field_dir, e))?;
            let mut rest = f.rows.as_slice();
            while let Some(&(linear, _)) = rest.first() {
                let record = linear.checked_div(record_size).unwrap_or(0);
                let start = record.saturating_mul(record_size);
                let n = record_size.min(f.total.saturating_sub(start));
                let split =
                    rest.partition_point(|&(l, _)| l.checked_div(record_size) == Some(record));
                let (these, later) = rest.split_at(split);
                rest = later;
                let mut name = b"refs.".to_vec();
                push_decimal(&mut name, record);
                name.extend_from_slice(b".parq");
                let path = field_dir.join(String::from_utf8_lossy(&name).as_ref());
                let file = fs::File::create(&path).map_err(|e| io(&path, e))?;
                write_record(file, &schema, &props, &self.url, start, n, these)
                    .map_err(|e| parquet_error(&path, e))?;
                written = written.saturating_add(1);
            }
        }
        let meta_path = dir.join(".zmetadata");
        fs::write(&meta_path, &metadata).map_err(|e| io(&meta_path, e))?;
        Ok(written)
    }
}

/// The C-order linear index of grid index `scaled` in `grid` (as numpy's `ravel_multi_index`),
/// or `None` outside the grid.
fn linear_index(scaled: &[u64], grid: &[u64]) -> Option<u64> {
    if scaled.len() != grid.len() {
        return None;
    }
    let mut linear = 0u64;
    for (&s, &g) in scaled.iter().zip(grid) {
        if s >= g {
            return None;
        }
        linear = linear.checked_mul(g)?.checked_add(s)?;
    }
    Some(linear)
}

/// Write one record file: `n` rows from linear index `start`, `rows` (sorted, all within) set
/// and the others null.
fn write_record(
    file: fs::File,
    schema: &Arc<parquet::schema::types::Type>,
    props: &Arc<WriterProperties>,
    url: &str,
    start: u64,
    n: u64,
    rows: &[(u64, Row<'_>)],
) -> parquet::errors::Result<()> {
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    // Definition levels (1: set, 0: null) and the set values, column by column.
    let mut path_def = vec![0i16; n];
    let mut raw_def = vec![0i16; n];
    let mut offsets = vec![0i64; n];
    let mut sizes = vec![0i64; n];
    let mut paths = Vec::new();
    let mut raws = Vec::new();
    let url = ByteArray::from(url.as_bytes().to_vec());
    for &(linear, row) in rows {
        let Some(i) = linear
            .checked_sub(start)
            .and_then(|i| usize::try_from(i).ok())
            .filter(|&i| i < n)
        else {
            return Err(parquet::errors::ParquetError::General(
                "a reference outside its record".to_owned(),
            ));
        };
        match row {
            Row::Range(offset, size) => {
                if let (Some(d), Some(o), Some(s)) =
                    (path_def.get_mut(i), offsets.get_mut(i), sizes.get_mut(i))
                {
                    *d = 1;
                    *o = i64::try_from(offset).unwrap_or(i64::MAX);
                    *s = i64::try_from(size).unwrap_or(i64::MAX);
                }
                paths.push(url.clone());
            }
            Row::Raw(bytes) => {
                if let Some(d) = raw_def.get_mut(i) {
                    *d = 1;
                }
                raws.push(ByteArray::from(bytes.to_vec()));
            }
        }
    }
    let mut writer = SerializedFileWriter::new(file, Arc::clone(schema), Arc::clone(props))?;
    let mut group = writer.next_row_group()?;
    let mut column = 0u8;
    while let Some(mut c) = group.next_column()? {
        match column {
            0 => {
                (c.typed::<ByteArrayType>()).write_batch(&paths, Some(&path_def), None)?;
            }
            1 => {
                c.typed::<Int64Type>().write_batch(&offsets, None, None)?;
            }
            2 => {
                c.typed::<Int64Type>().write_batch(&sizes, None, None)?;
            }
            _ => {
                (c.typed::<ByteArrayType>()).write_batch(&raws, Some(&raw_def), None)?;
            }
        }
        c.close()?;
        column = column.saturating_add(1);
    }
    group.close()?;
    writer.close()?;
    Ok(())
}

fn parquet_error(path: &Path, e: parquet::errors::ParquetError) -> Error {
    Error::Io {
        file: path.display().to_string(),
        source: std::io::Error::other(e),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn linear_index_is_c_order_within_the_grid() {
        assert_eq!(linear_index(&[], &[]), Some(0));
        assert_eq!(linear_index(&[2, 3], &[4, 5]), Some(13));
        assert_eq!(linear_index(&[1, 0, 0], &[2, 3, 4]), Some(12));
        assert_eq!(linear_index(&[4, 0], &[4, 5]), None);
        assert_eq!(linear_index(&[0], &[4, 5]), None);
        assert_eq!(linear_index(&[1 << 40, 0], &[1 << 41, 1 << 30]), None);
    }
}
