//! Chunk references in kerchunk's format (version 1): every dataset of a file described as a
//! Zarr (format 2) array whose chunks are byte ranges of the HDF5 file, so that `fsspec`'s
//! reference file system with `zarr`, `xarray` or `dask` reads the file without libhdf5.
//!
//! What one dataset becomes:
//! - `path/.zarray`: shape, chunk shape (the dataset's chunks; the whole extent for contiguous
//!   and compact storage, as kerchunk does), numpy dtype with byte order, fill value, and the
//!   filter pipeline as numcodecs filters in HDF5's order (shuffle, zlib, fletcher32; no
//!   separate compressor). A filter without a numcodecs codec of the same bytes (LZF, szip,
//!   any third-party filter) and an element type Zarr cannot describe are refused with
//!   [`Error::NoZarrEquivalent`] naming the dataset.
//! - `path/.zattrs`: the dataset's number and string attributes, and `_ARRAY_DIMENSIONS`
//!   (what xarray reads) with phony dimension names shared by the group's datasets as h5netcdf
//!   names them (`phony_dim_K`, one per distinct length in the group, by increasing length).
//! - `path/I.J...`: one reference per allocated chunk, `[url, offset, size]` with the absolute
//!   file offset (a userblock included); chunks never written are left out, so readers see the
//!   fill value there. Compact data is inline (`base64:...`).
//!
//! Groups become `path/.zgroup` and `path/.zattrs`.
//!
//! [`Refs::to_json`] / [`Refs::write_json`] give kerchunk's JSON; `Refs::write_parquet`
//! (cargo feature `parquet`) its Parquet layout, for files of many chunks.
//!
//! The crate is a client of `h5chunk`'s public API only (the `h5chunk refs` command uses it):
//!
//! ```
//! use h5chunk::File;
//! use h5chunk_refs::{RefValue, RefsOptions, references};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = std::env::temp_dir().join(format!("h5chunk-refs-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! # let path = dir.join("x.h5");
//! let file = File::create(&path)?;
//! let x = file.new_dataset::<f32>().shape(&[4]).chunk(&[2]).create("x")?;
//! x.write(&[1.0f32, 2.0, 3.0, 4.0])?;
//! drop(x);
//! file.close()?;
//!
//! let refs = references(&File::open(&path)?, "s3://bucket/x.h5", &RefsOptions::default())?;
//! // Two chunks of 8 bytes each, named by their byte ranges in the file.
//! assert_eq!(refs.chunk_count(), 2);
//! assert!(matches!(refs.entries()["x/1"], RefValue::Range { size: 8, .. }));
//! let json = refs.to_json();
//! assert!(json.contains("\"x/.zarray\""));
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```

// docs.rs (nightly) names the cargo feature each gated item needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "parquet")]
#[cfg_attr(docsrs, doc(cfg(feature = "parquet")))]
mod parquet;
#[cfg(feature = "parquet")]
#[cfg_attr(docsrs, doc(cfg(feature = "parquet")))]
pub use parquet::DEFAULT_RECORD_SIZE;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use h5chunk_format::message::filter_pipeline::id;

use h5chunk::types::{TypeClass, TypeDesc};
use h5chunk::{Attr, Dataset, Error as H5Error, File, Group, MemberKind, StorageKind};

mod error;
pub use error::{Error, Result};

/// What one key of the references points at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefValue {
    /// Text stored in the references themselves (Zarr metadata: `.zarray`, `.zattrs`, ...).
    Text(String),
    /// Bytes stored in the references themselves (compact data), written as `base64:...`.
    Bytes(Vec<u8>),
    /// A byte range of the file: absolute offset and length.
    Range {
        /// Offset from the start of the file (a userblock included).
        offset: u64,
        /// Bytes.
        size: u64,
    },
}

/// kerchunk references to the datasets of one file (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refs {
    /// The URL every byte range names: the file's path, or where the same bytes are served
    /// (`s3://bucket/key`).
    pub url: String,
    /// Zarr metadata (`group/.zgroup`, `group/dataset/.zarray`, `.zattrs`) and inline data
    /// (compact datasets), by key.
    pub meta: BTreeMap<String, RefValue>,
    /// The byte ranges of each array's chunks.
    pub arrays: Vec<ChunkRanges>,
    /// Datasets (or their attributes, or groups' members) left out by
    /// [`RefsOptions::skip_unsupported`], with the reason.
    pub skipped: Vec<(String, String)>,
}

/// The chunks of one array, packed: a million-chunk dataset costs no allocation per chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkRanges {
    /// The array's key (`group/dataset`); its chunks' keys are `group/dataset/I.J...`.
    pub prefix: String,
    /// Dimensions of the chunk grid.
    pub rank: usize,
    /// Chunks along each dimension of the array's current extent (the Zarr grid:
    /// `ceil(shape / chunks)`), `rank` of them.
    pub grid: Vec<u64>,
    /// Each chunk's grid indices, `rank` integers a chunk, chunk after chunk.
    pub scaled: Vec<u64>,
    /// Each chunk's absolute file offset and size.
    pub ranges: Vec<(u64, u64)>,
}

impl ChunkRanges {
    /// The key of chunk `i` (`prefix/I.J...`, `prefix/0` for a scalar).
    pub fn key(&self, i: usize) -> Option<String> {
        let mut k = Vec::new();
        self.push_key(i, &mut k)?;
        String::from_utf8(k).ok()
    }

    /// Append the key of chunk `i`.
    fn push_key(&self, i: usize, out: &mut Vec<u8>) -> Option<()> {
        let from = i.checked_mul(self.rank)?;
        let scaled = self.scaled.get(from..from.checked_add(self.rank)?)?;
        push_chunk_key(out, &self.prefix, scaled);
        Some(())
    }
}

/// Append `prefix/I.J...` (`prefix/0` for a scalar; no `prefix/` at the root).
fn push_chunk_key(out: &mut Vec<u8>, prefix: &str, scaled: &[u64]) {
    out.extend_from_slice(prefix.as_bytes());
    if !prefix.is_empty() {
        out.push(b'/');
    }
    if scaled.is_empty() {
        out.push(b'0');
    }
    for (j, &v) in scaled.iter().enumerate() {
        if j > 0 {
            out.push(b'.');
        }
        push_decimal(out, v);
    }
}

/// Append `v` in decimal.
fn push_decimal(out: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut n = digits.len();
    loop {
        n = n.saturating_sub(1);
        if let Some(d) = digits.get_mut(n) {
            *d = b'0'.saturating_add((v % 10) as u8);
        }
        v /= 10;
        if v == 0 || n == 0 {
            break;
        }
    }
    out.extend_from_slice(digits.get(n..).unwrap_or_default());
}

/// What [`references`] describes and how.
#[derive(Clone, Debug, Default)]
pub struct RefsOptions {
    /// The datasets to describe (paths from the root); all of the file's when empty.
    pub datasets: Vec<String>,
    /// Leave out a dataset Zarr cannot describe (listed in [`Refs::skipped`]) instead of
    /// failing.
    pub skip_unsupported: bool,
}

/// Attributes HDF5 and netCDF-4 keep for their own bookkeeping, which mean nothing in Zarr
/// (dimension-scale links, netCDF's dimension ids).
const BOOKKEEPING_ATTRS: &[&str] = &[
    "CLASS",
    "DIMENSION_LIST",
    "NAME",
    "REFERENCE_LIST",
    "_Netcdf4Dimid",
    "_Netcdf4Coordinates",
    "_NCProperties",
    "_nc3_strict",
];

/// kerchunk (version 1) references to the datasets of `file`, their byte ranges named by
/// `url` (see the [crate docs](crate)).
pub fn references(file: &File, url: &str, options: &RefsOptions) -> Result<Refs> {
    let mut refs = Refs {
        url: url.to_owned(),
        meta: BTreeMap::new(),
        arrays: Vec::new(),
        skipped: Vec::new(),
    };
    let base = file.base_address();
    let root = file.root()?;
    if options.datasets.is_empty() {
        let mut groups = vec![root];
        while let Some(g) = groups.pop() {
            describe_group(&g, options.skip_unsupported, &mut refs)?;
            let members = match g.members() {
                Ok(m) => m,
                Err(H5Error::Unsupported(what)) if options.skip_unsupported => {
                    refs.skipped
                        .push((g.path().to_owned(), format!("members not listed: {what}")));
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let mut datasets = Vec::new();
            for (name, kind) in members {
                match kind {
                    MemberKind::Group => groups.push(g.group(&name)?),
                    MemberKind::Dataset => datasets.push(name),
                    MemberKind::Other => {}
                }
            }
            let opened: Vec<(String, h5chunk::Result<Dataset>)> = datasets
                .into_iter()
                .map(|n| {
                    let d = g.dataset(&n);
                    (join(g.path(), &n), d)
                })
                .collect();
            let dims = phony_dims(opened.iter().filter_map(|(_, d)| d.as_ref().ok()));
            for (path, d) in opened {
                let done = d.map_err(Error::from).and_then(|d| {
                    describe_dataset(&d, base, &dims, options.skip_unsupported, &mut refs)
                });
                skip_or_fail(done, &path, options, &mut refs)?;
            }
        }
    } else {
        for path in &options.datasets {
            let path = format!("/{}", path.trim_start_matches('/'));
            // The groups on the way, so that Zarr finds the array.
            let mut at = String::new();
            describe_group(&root, options.skip_unsupported, &mut refs)?;
            let parents: Vec<&str> = path.trim_start_matches('/').split('/').collect();
            for part in parents.iter().take(parents.len().saturating_sub(1)) {
                at = join(&at, part);
                describe_group(&file.group(&at)?, options.skip_unsupported, &mut refs)?;
            }
            let done = file.dataset(&path).map_err(Error::from).and_then(|d| {
                let dims = phony_dims(std::iter::once(&d));
                describe_dataset(&d, base, &dims, options.skip_unsupported, &mut refs)
            });
            skip_or_fail(done, &path, options, &mut refs)?;
        }
    }
    Ok(refs)
}

/// `parent/name` as an absolute path.
fn join(parent: &str, name: &str) -> String {
    format!("{}/{name}", parent.trim_end_matches('/'))
}

fn skip_or_fail(
    done: Result<()>,
    path: &str,
    options: &RefsOptions,
    refs: &mut Refs,
) -> Result<()> {
    match done {
        Ok(()) => Ok(()),
        Err(e @ (Error::NoZarrEquivalent { .. } | Error::Hdf5(H5Error::Unsupported(_))))
            if options.skip_unsupported =>
        {
            // Whatever was written of the dataset goes too.
            let prefix = format!("{}/", key_of(path));
            refs.meta.retain(|k, _| !k.starts_with(&prefix));
            refs.arrays.retain(|a| a.prefix != key_of(path));
            let why = match e {
                Error::NoZarrEquivalent { what, .. } => what,
                other => other.to_string(),
            };
            refs.skipped.push((path.to_owned(), why));
            Ok(())
        }
        Err(Error::Hdf5(H5Error::Unsupported(what))) => Err(Error::NoZarrEquivalent {
            dataset: path.to_owned(),
            what: what.to_owned(),
        }),
        Err(e) => Err(e),
    }
}

/// The Zarr key prefix of an object at `path` (`""` for the root).
fn key_of(path: &str) -> &str {
    path.trim_matches('/')
}

/// `prefix/name`, or `name` at the root.
fn key(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}/{name}")
    }
}

/// Phony dimension names for datasets of one group: one per distinct length, by increasing
/// length (h5netcdf's `phony_dims="sort"`).
fn phony_dims<'a>(datasets: impl Iterator<Item = &'a Dataset>) -> BTreeMap<u64, String> {
    let lengths: BTreeSet<u64> = datasets.flat_map(|d| d.shape()).collect();
    lengths
        .into_iter()
        .enumerate()
        .map(|(i, n)| (n, format!("phony_dim_{i}")))
        .collect()
}

/// The attributes `read` found; with `skip`, none when they are stored in a way h5chunk does
/// not read yet (the data is still described, the attributes listed in [`Refs::skipped`]).
fn readable_attrs(
    read: h5chunk::Result<Vec<Attr>>,
    path: &str,
    skip: bool,
    refs: &mut Refs,
) -> Result<Vec<Attr>> {
    match read {
        Err(H5Error::Unsupported(what)) if skip => {
            refs.skipped.push((
                format!("{path} (attributes)"),
                format!("unsupported: {what}"),
            ));
            Ok(Vec::new())
        }
        other => Ok(other?),
    }
}

fn describe_group(g: &Group, skip: bool, refs: &mut Refs) -> Result<()> {
    let prefix = key_of(g.path()).to_owned();
    refs.meta.insert(
        key(&prefix, ".zgroup"),
        RefValue::Text("{\"zarr_format\":2}".to_owned()),
    );
    let attrs = attrs_json(
        &readable_attrs(g.attrs().all(), g.path(), skip, refs)?,
        None,
    );
    if attrs != "{}" {
        refs.meta
            .insert(key(&prefix, ".zattrs"), RefValue::Text(attrs));
    }
    Ok(())
}

fn describe_dataset(
    d: &Dataset,
    base: u64,
    dims: &BTreeMap<u64, String>,
    skip: bool,
    refs: &mut Refs,
) -> Result<()> {
    let path = d.path();
    let prefix = key_of(&path).to_owned();
    let refuse = |what: String| Error::NoZarrEquivalent {
        dataset: path.clone(),
        what,
    };
    if d.is_null() {
        return Err(refuse(
            "a null dataspace (h5py.Empty: no shape, which a Zarr array cannot have)".to_owned(),
        ));
    }
    let dtype = d.dtype();
    if dtype.class == TypeClass::BFloat16 {
        return Err(refuse(
            "element type bfloat16 (Zarr v2 and numpy have no bfloat16 dtype)".to_owned(),
        ));
    }
    if !dtype.is_number() {
        return Err(refuse(format!(
            "element type {} (only numbers are described so far)",
            d.datatype().class.name()
        )));
    }
    if d.external_files().is_some() {
        return Err(refuse(
            "external storage (its bytes are in other files; not described so far)".to_owned(),
        ));
    }
    if d.storage_kind() == StorageKind::Virtual {
        return Err(refuse(
            "a virtual dataset (its elements are other datasets'; not described so far)".to_owned(),
        ));
    }
    let shape = d.shape();
    let kind = d.storage_kind();
    // Zarr chunks have at least one element along each dimension.
    let chunks: Vec<u64> = match kind {
        StorageKind::Chunked => d.chunk().unwrap_or_else(|| shape.clone()),
        StorageKind::Contiguous | StorageKind::Compact | StorageKind::Virtual => shape.clone(),
    }
    .into_iter()
    .map(|c| c.max(1))
    .collect();
    let mut filters = Vec::new();
    for f in d.filters()? {
        filters.push(match f.id {
            id::DEFLATE => format!(
                "{{\"id\":\"zlib\",\"level\":{}}}",
                f.client_data.first().copied().unwrap_or(6)
            ),
            id::SHUFFLE => format!("{{\"id\":\"shuffle\",\"elementsize\":{}}}", dtype.size),
            id::FLETCHER32 => "{\"id\":\"fletcher32\"}".to_owned(),
            _ => return Err(refuse(format!("filter {f} (no numcodecs codec reads it)"))),
        });
    }
    let partial = (shape.iter().zip(&chunks)).any(|(n, c)| n.checked_rem(*c).unwrap_or(0) != 0);
    if partial && d.edge_chunks_unfiltered() {
        return Err(refuse(
            "partial edge chunks stored unfiltered (H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS)"
                .to_owned(),
        ));
    }
    let fill = fill_json(dtype, &d.fill_value_raw());
    let zarray = format!(
        "{{\"chunks\":{},\"compressor\":null,\"dtype\":\"{}\",\"fill_value\":{fill},\"filters\":{},\"order\":\"C\",\"shape\":{},\"zarr_format\":2}}",
        list(&chunks),
        dtype.numpy(),
        if filters.is_empty() {
            "null".to_owned()
        } else {
            format!("[{}]", filters.join(","))
        },
        list(&shape)
    );
    let names: Vec<String> = shape
        .iter()
        .map(|n| {
            dims.get(n)
                .cloned()
                .unwrap_or_else(|| format!("phony_dim_{n}"))
        })
        .collect();
    let attrs = attrs_json(
        &readable_attrs(d.attrs().all(), &path, skip, refs)?,
        Some(&names),
    );
    let rank = shape.len();
    let mut ranges = ChunkRanges {
        prefix: prefix.clone(),
        rank,
        grid: (shape.iter().zip(&chunks))
            .map(|(n, c)| n.div_ceil(*c))
            .collect(),
        scaled: Vec::new(),
        ranges: Vec::new(),
    };
    match kind {
        StorageKind::Chunked => {
            let mut skipped_filters = None;
            d.for_each_chunk(&mut |s, addr, size, mask| {
                if mask != 0 {
                    skipped_filters.get_or_insert_with(|| (s.to_vec(), mask));
                }
                // A single-chunk index gives its chunk no coordinates: the origin.
                let s = s.iter().chain(std::iter::repeat(&0)).take(rank);
                ranges.scaled.extend(s);
                ranges.ranges.push((addr.get().saturating_add(base), size));
            })?;
            if let Some((s, mask)) = skipped_filters {
                return Err(refuse(format!(
                    "the chunk at grid index {s:?} skips filters (mask {mask:#x}), which a Zarr array cannot say"
                )));
            }
        }
        StorageKind::Contiguous => {
            if let Some((addr, size)) = d.contiguous_extent() {
                ranges.scaled.extend(std::iter::repeat_n(0, rank));
                ranges.ranges.push((addr.saturating_add(base), size));
            }
        }
        StorageKind::Virtual => {}
        StorageKind::Compact => {
            let data = d.compact_data().unwrap_or_default();
            if !data.is_empty() {
                // One chunk at the origin, inline.
                let mut k = Vec::new();
                push_chunk_key(&mut k, &prefix, &vec![0; rank]);
                refs.meta.insert(
                    String::from_utf8_lossy(&k).into_owned(),
                    RefValue::Bytes(data),
                );
            }
        }
    }
    if !ranges.ranges.is_empty() {
        refs.arrays.push(ranges);
    }
    refs.meta
        .insert(key(&prefix, ".zarray"), RefValue::Text(zarray));
    refs.meta
        .insert(key(&prefix, ".zattrs"), RefValue::Text(attrs));
    Ok(())
}

fn list(v: &[u64]) -> String {
    let items: Vec<String> = v.iter().map(u64::to_string).collect();
    format!("[{}]", items.join(","))
}

/// A number as Zarr's JSON writes it: non-finite floats as the strings `"NaN"`,
/// `"Infinity"` and `"-Infinity"`.
fn float_json(v: f64) -> String {
    if v.is_nan() {
        "\"NaN\"".to_owned()
    } else if v.is_infinite() {
        if v > 0.0 {
            "\"Infinity\""
        } else {
            "\"-Infinity\""
        }
        .to_owned()
    } else {
        // `{:?}` keeps the shortest form that reads back exactly, with a `.0` for integers.
        format!("{v:?}")
    }
}

/// Element `e` (file byte order) of type `t` as a JSON number.
fn element_json(t: TypeDesc, e: &[u8]) -> String {
    let mut le = [0u8; 8];
    let n = t.size.min(8).min(e.len());
    if let (Some(dst), Some(src)) = (le.get_mut(..n), e.get(..n)) {
        dst.copy_from_slice(src);
    }
    if let Some(bytes) = le.get_mut(..n) {
        t.to_from_le(bytes);
    }
    let raw = u64::from_le_bytes(le);
    match (t.class, t.size) {
        (TypeClass::Float, 8) => float_json(f64::from_bits(raw)),
        (TypeClass::Float, 4) => float_json(f64::from(f32::from_bits(raw as u32))),
        (TypeClass::Float, _) => float_json(f16_to_f64(raw as u16)),
        // The top half of a binary32 (refused before a reference is written; kept exact).
        (TypeClass::BFloat16, _) => float_json(f64::from(f32::from_bits((raw as u32) << 16))),
        (TypeClass::Uint, _) => raw.to_string(),
        (TypeClass::Int, size) => {
            // Sign-extend from `size` bytes.
            let shift = 64u32.saturating_sub((size as u32).saturating_mul(8));
            ((raw << shift) as i64 >> shift).to_string()
        }
        (TypeClass::FixedString | TypeClass::VarLenString | TypeClass::Other, _) => {
            "null".to_owned()
        }
    }
}

/// An IEEE half-precision value as f64.
fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f64::from(h & 0x3ff);
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        e => sign * (1.0 + frac / 1024.0) * 2f64.powi(e.saturating_sub(15)),
    }
}

/// The fill value (one element, file byte order; empty: none defined, zeros) as JSON.
fn fill_json(t: TypeDesc, fill: &[u8]) -> String {
    if fill.len() < t.size {
        return element_json(t, &[0; 8]);
    }
    element_json(t, fill)
}

/// A JSON string literal.
fn string_json(s: &str) -> String {
    let mut out = String::with_capacity(s.len().saturating_add(2));
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The attributes Zarr can hold (numbers and strings, scalar or one list), and
/// `_ARRAY_DIMENSIONS` when `dims` is given, as a JSON object.
fn attrs_json(attrs: &[Attr], dims: Option<&[String]>) -> String {
    let mut fields = Vec::new();
    for a in attrs {
        if BOOKKEEPING_ATTRS.contains(&a.name()) || a.name() == "_ARRAY_DIMENSIONS" {
            continue;
        }
        let Some(shape) = a.shape() else {
            continue;
        };
        let scalar = shape.is_empty();
        let values: Vec<String> = if let Ok(s) = a.strings() {
            s.iter().map(|v| string_json(v)).collect()
        } else if let Ok(t) = a.dtype() {
            a.raw()
                .chunks_exact(t.size.max(1))
                .map(|e| element_json(t, e))
                .collect()
        } else {
            continue;
        };
        let value = match values.as_slice() {
            [one] if scalar => one.clone(),
            _ => format!("[{}]", values.join(",")),
        };
        fields.push(format!("{}:{value}", string_json(a.name())));
    }
    if let Some(dims) = dims {
        let names: Vec<String> = dims.iter().map(|d| string_json(d)).collect();
        fields.push(format!("\"_ARRAY_DIMENSIONS\":[{}]", names.join(",")));
    }
    format!("{{{}}}", fields.join(","))
}

/// Standard base64 with padding.
fn base64(data: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let sym = |v: u32| char::from(ABC.get((v & 63) as usize).copied().unwrap_or(b'A'));
    let mut out = String::with_capacity(data.len().div_ceil(3).saturating_mul(4));
    for group in data.chunks(3) {
        let b = |i: usize| u32::from(group.get(i).copied().unwrap_or(0));
        let v = (b(0) << 16) | (b(1) << 8) | b(2);
        out.push(sym(v >> 18));
        out.push(sym(v >> 12));
        out.push(if group.len() > 1 { sym(v >> 6) } else { '=' });
        out.push(if group.len() > 2 { sym(v) } else { '=' });
    }
    out
}

impl Refs {
    /// Every key and what it holds: the metadata and inline data, and each chunk's byte
    /// range (one map entry a chunk: for inspection, not for millions of chunks).
    pub fn entries(&self) -> BTreeMap<String, RefValue> {
        let mut all = self.meta.clone();
        for a in &self.arrays {
            for (i, &(offset, size)) in a.ranges.iter().enumerate() {
                if let Some(k) = a.key(i) {
                    all.insert(k, RefValue::Range { offset, size });
                }
            }
        }
        all
    }

    /// The number of chunks with a byte range.
    pub fn chunk_count(&self) -> usize {
        self.arrays.iter().map(|a| a.ranges.len()).sum()
    }

    /// The references as kerchunk's version 1 JSON: `{"version":1,"refs":{...}}`, metadata
    /// as JSON text, byte ranges as `[url, offset, size]`, inline bytes as `base64:...`.
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        // Writing to a vector cannot fail.
        let _ = self.write_json(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// Write [`to_json`](Self::to_json)'s text to `w`, a piece at a time.
    pub fn write_json(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        const PIECE: usize = 1 << 16;
        let url = string_json(&self.url);
        let mut out = Vec::with_capacity(PIECE.saturating_mul(2));
        out.extend_from_slice(b"{\"version\":1,\"refs\":{");
        let mut first = true;
        let mut sep = |out: &mut Vec<u8>| {
            if !first {
                out.push(b',');
            }
            first = false;
        };
        for (k, v) in &self.meta {
            sep(&mut out);
            out.extend_from_slice(string_json(k).as_bytes());
            out.push(b':');
            match v {
                RefValue::Text(t) => out.extend_from_slice(string_json(t).as_bytes()),
                RefValue::Bytes(b) => {
                    out.extend_from_slice(b"\"base64:");
                    out.extend_from_slice(base64(b).as_bytes());
                    out.push(b'"');
                }
                RefValue::Range { offset, size } => {
                    out.push(b'[');
                    out.extend_from_slice(url.as_bytes());
                    out.push(b',');
                    push_decimal(&mut out, *offset);
                    out.push(b',');
                    push_decimal(&mut out, *size);
                    out.push(b']');
                }
            }
        }
        for a in &self.arrays {
            // Keys are the prefix (escaped once), `/`, and digits and dots.
            let quoted = string_json(&a.prefix);
            let prefix = quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or("");
            for (i, &(offset, size)) in a.ranges.iter().enumerate() {
                sep(&mut out);
                out.push(b'"');
                let from = i.saturating_mul(a.rank);
                let scaled = (a.scaled.get(from..from.saturating_add(a.rank))).unwrap_or_default();
                push_chunk_key(&mut out, prefix, scaled);
                out.extend_from_slice(b"\":[");
                out.extend_from_slice(url.as_bytes());
                out.push(b',');
                push_decimal(&mut out, offset);
                out.push(b',');
                push_decimal(&mut out, size);
                out.push(b']');
                if out.len() >= PIECE {
                    w.write_all(&out)?;
                    out.clear();
                }
            }
        }
        out.extend_from_slice(b"}}");
        w.write_all(&out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard_alphabet_and_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(&[0xff, 0xfe, 0x00]), "//4A");
    }

    #[test]
    fn chunk_keys_are_decimal_indices_joined_by_dots() {
        let mut out = Vec::new();
        for v in [0, 7, 10, 12345, u64::MAX] {
            push_decimal(&mut out, v);
            out.push(b' ');
        }
        assert_eq!(out, b"0 7 10 12345 18446744073709551615 ");
        let a = ChunkRanges {
            prefix: "g/d".into(),
            rank: 2,
            grid: vec![21, 4],
            scaled: vec![0, 1, 20, 3],
            ranges: vec![(1, 2), (3, 4)],
        };
        assert_eq!(a.key(1).as_deref(), Some("g/d/20.3"));
        assert_eq!(a.key(2), None);
        let scalar = ChunkRanges {
            prefix: String::new(),
            rank: 0,
            grid: Vec::new(),
            scaled: Vec::new(),
            ranges: vec![(1, 2)],
        };
        assert_eq!(scalar.key(0).as_deref(), Some("0"));
    }

    #[test]
    fn numbers_and_strings_are_json() {
        let le = TypeDesc::from_numpy("<i2").unwrap();
        assert_eq!(element_json(le, &(-3i16).to_le_bytes()), "-3");
        let be = TypeDesc::from_numpy(">u4").unwrap();
        assert_eq!(element_json(be, &7u32.to_be_bytes()), "7");
        let f = TypeDesc::from_numpy("<f8").unwrap();
        assert_eq!(element_json(f, &1.5f64.to_le_bytes()), "1.5");
        assert_eq!(element_json(f, &f64::NAN.to_le_bytes()), "\"NaN\"");
        assert_eq!(
            element_json(f, &(-f64::INFINITY).to_le_bytes()),
            "\"-Infinity\""
        );
        let h = TypeDesc {
            class: TypeClass::Float,
            size: 2,
            order: h5chunk::types::ByteOrder::LittleEndian,
        };
        assert_eq!(element_json(h, &0x3e00u16.to_le_bytes()), "1.5");
        assert_eq!(fill_json(f, &[]), "0.0");
        assert_eq!(string_json("a\"b\\\n\u{1}"), "\"a\\\"b\\\\\\n\\u0001\"");
    }
}
