//! h5chunk in the browser: HDF5 files opened from a `Blob`/`File` (read lazily by slices) or
//! a URL (read by HTTP range requests), their groups, attributes and dataset metadata, and
//! hyperslabs read into typed arrays.
//!
//! h5chunk's API is synchronous and the browser reads Blobs and URLs asynchronously on a
//! page; in a Web Worker it can read both synchronously (`FileReaderSync`, synchronous
//! `XMLHttpRequest`), so this module runs in a worker (see `example/`). Nothing is loaded
//! whole: a file of any size opens.
//!
//! ```js
//! import init, { H5File } from "h5chunk-wasm";   // in a module worker
//! await init();
//! const f = H5File.openBlob(file);               // a File from <input type=file>
//! f.children("/");                                // [{name, path, kind}, ...]
//! f.info("/data");                                // {shape, dtype, chunks, filters, index, ...}
//! f.read("/data", [0, 0], [10, 100]);             // Float64Array (by the dataset's type)
//! ```
//!
//! A URL can also be read asynchronously, on a page too: [`UrlCache`] holds what JavaScript
//! fetched with `fetch`, and `h5chunk_async.js` (shipped in the package) runs each operation
//! again until the cache holds every byte it needs (`AsyncH5File`).

mod storage;

use std::collections::HashMap;
use std::sync::Arc;

use h5chunk::types::TypeClass;
use h5chunk::{Dataset, File, MemberKind, OpenOptions};
use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;
use web_sys::Blob;

pub use storage::{BLOCK, BlobStorage, UrlStorage};

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = r#"
/** A member of a group. `kind` is "other" for soft and external links and objects of other kinds. */
export interface Child {
  name: string;
  path: string;
  kind: "group" | "dataset" | "other";
}

/** An attribute: its value as text (as `h5chunk cat` shows it), and as numbers when it holds numbers. */
export interface Attribute {
  name: string;
  type: string;
  /** Its dims; null for a null dataspace. */
  shape: number[] | null;
  text: string;
  values?: Float64Array;
}

/** A dataset's metadata. */
export interface DatasetInfo {
  path: string;
  /** numpy's notation of the element type ("<f8", "|S10", "str", ...). */
  dtype: string;
  /** The HDF5 class of the element type ("floating point", "integer", "string", "compound", ...). */
  class: string;
  shape: number[];
  /** null: unlimited. */
  maxshape: (number | null)[];
  chunks: number[] | null;
  layout: "chunked" | "contiguous" | "compact" | "virtual" | "external";
  /** The chunk index ("btree1", "btree2", "earray", "farray", "single", "implicit"), for chunked data. */
  index: string | null;
  /** The filter pipeline, in order ("shuffle", "deflate(4)", ...). */
  filters: string[];
}

/** What `read` returns: the typed array of the dataset's number type (64-bit integers as
 * BigInt64Array/BigUint64Array, float16 as Float32Array), or strings. */
export type Values =
  | Float64Array | Float32Array
  | Int8Array | Int16Array | Int32Array | BigInt64Array
  | Uint8Array | Uint16Array | Uint32Array | BigUint64Array
  | string[];
"#;

fn err(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

/// An object of plain fields.
fn object(fields: &[(&str, JsValue)]) -> Result<Object, JsError> {
    let o = Object::new();
    for (k, v) in fields {
        Reflect::set(&o, &JsValue::from_str(k), v)
            .map_err(|_| JsError::new("setting a field of an object"))?;
    }
    Ok(o)
}

#[allow(clippy::cast_precision_loss)]
fn numbers(v: &[u64]) -> JsValue {
    v.iter()
        .map(|&n| JsValue::from_f64(n as f64))
        .collect::<Array>()
        .into()
}

/// A JavaScript list of dims or offsets as integers.
fn dims(what: &str, v: &[f64]) -> Result<Vec<u64>, JsError> {
    v.iter()
        .map(|&x| {
            if x >= 0.0 && x.fract() == 0.0 && x < 9.007_199_254_740_992e15 {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                Ok(x as u64)
            } else {
                Err(JsError::new(&format!(
                    "{what}: {x} is not a non-negative integer"
                )))
            }
        })
        .collect()
}

/// An open HDF5 file (read-only).
#[wasm_bindgen]
#[derive(Debug)]
pub struct H5File {
    file: File,
    name: String,
    /// The URL storage, to refresh its cache and size with the datasets.
    url: Option<Arc<UrlStorage>>,
    /// Datasets opened so far (a refresh carries over to the next read).
    datasets: HashMap<String, Dataset>,
}

#[wasm_bindgen]
impl H5File {
    /// Open a `Blob` (a `File` from an `<input type=file>`, a drop). Read by slices as the
    /// library needs them: call it in a Web Worker (`FileReaderSync`).
    #[wasm_bindgen(js_name = openBlob)]
    pub fn open_blob(blob: Blob, name: Option<String>) -> Result<H5File, JsError> {
        let name = name.unwrap_or_else(|| {
            Reflect::get(&blob, &JsValue::from_str("name"))
                .ok()
                .and_then(|n| n.as_string())
                .unwrap_or_else(|| "blob".to_owned())
        });
        let storage = BlobStorage::new(blob).map_err(|e| err(format!("{name}: {e}")))?;
        let file = OpenOptions::swmr_read()
            .open_on_named(&name, Arc::new(storage))
            .map_err(err)?;
        Ok(H5File {
            file,
            name,
            url: None,
            datasets: HashMap::new(),
        })
    }

    /// Open a URL by HTTP range requests (synchronous: call it in a Web Worker). The server
    /// must answer `Range` with 206 and, across origins, expose `Content-Range`.
    #[wasm_bindgen(js_name = openUrl)]
    pub fn open_url(url: &str) -> Result<H5File, JsError> {
        let storage = Arc::new(UrlStorage::open(url).map_err(err)?);
        let file = OpenOptions::swmr_read()
            .open_on_named(url, storage.clone())
            .map_err(err)?;
        Ok(H5File {
            file,
            name: url.to_owned(),
            url: Some(storage),
            datasets: HashMap::new(),
        })
    }

    /// Open the URL of `cache`, whose bytes come from its owner's asynchronous requests
    /// (`h5chunk_async.js`: `AsyncH5File.open(url)` drives this). Throws, with
    /// `cache.pendingCount > 0`, until the bytes it needs are supplied; works on a page too.
    #[wasm_bindgen(js_name = openCache)]
    pub fn open_cache(cache: &UrlCache) -> Result<H5File, JsError> {
        let storage = cache.storage.clone();
        let file = OpenOptions::swmr_read()
            .open_on_named(&cache.url, storage.clone())
            .map_err(err)?;
        Ok(H5File {
            file,
            name: cache.url.clone(),
            url: Some(storage),
            datasets: HashMap::new(),
        })
    }

    /// The file's name (a File's) or URL.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// Range requests made so far (a URL's; 0 for a Blob).
    #[wasm_bindgen(getter)]
    pub fn requests(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        self.url.as_ref().map_or(0.0, |u| u.requests() as f64)
    }

    /// Bytes those requests returned.
    #[wasm_bindgen(getter, js_name = bytesFetched)]
    pub fn bytes_fetched(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        self.url.as_ref().map_or(0.0, |u| u.bytes_fetched() as f64)
    }

    /// The members of the group at `path`, in creation order when the group tracks it (else
    /// by name).
    #[wasm_bindgen(unchecked_return_type = "Child[]")]
    pub fn children(&self, path: &str) -> Result<Array, JsError> {
        let g = self.file.group(path).map_err(err)?;
        let base = g.path();
        let out = Array::new();
        for (name, kind) in g.members_in_creation_order().map_err(err)? {
            let full = if base == "/" {
                format!("/{name}")
            } else {
                format!("{base}/{name}")
            };
            let kind = match kind {
                MemberKind::Group => "group",
                MemberKind::Dataset => "dataset",
                MemberKind::Other => "other",
            };
            let child = object(&[
                ("name", JsValue::from_str(&name)),
                ("path", JsValue::from_str(&full)),
                ("kind", JsValue::from_str(kind)),
            ])?;
            out.push(&child.into());
        }
        Ok(out)
    }

    /// The attributes of the group or dataset at `path`.
    #[wasm_bindgen(unchecked_return_type = "Attribute[]")]
    pub fn attrs(&self, path: &str) -> Result<Array, JsError> {
        let all = match self.file.group(path) {
            Ok(g) => g.attrs().all(),
            Err(h5chunk::Error::WrongKind { .. }) => {
                self.file.dataset(path).map_err(err)?.attrs().all()
            }
            Err(e) => return Err(err(e)),
        }
        .map_err(err)?;
        let out = Array::new();
        for a in &all {
            let shape = a.shape().map_or(JsValue::NULL, numbers);
            let o = object(&[
                ("name", JsValue::from_str(a.name())),
                ("type", JsValue::from_str(&a.type_name())),
                ("shape", shape),
                ("text", JsValue::from_str(&a.summary())),
            ])?;
            if a.dtype().is_ok_and(|t| t.is_number())
                && let Ok(v) = a.values::<f64>()
            {
                Reflect::set(
                    &o,
                    &JsValue::from_str("values"),
                    &js_sys::Float64Array::from(v.as_slice()),
                )
                .map_err(|_| JsError::new("setting a field of an object"))?;
            }
            out.push(&o.into());
        }
        Ok(out)
    }

    /// Whether `path` names a dataset (false for a group).
    #[wasm_bindgen(js_name = isDataset)]
    pub fn is_dataset(&self, path: &str) -> Result<bool, JsError> {
        match self.file.group(path) {
            Ok(_) => Ok(false),
            Err(h5chunk::Error::WrongKind { .. }) => Ok(true),
            Err(e) => Err(err(e)),
        }
    }

    /// The metadata of the dataset at `path`.
    #[wasm_bindgen(unchecked_return_type = "DatasetInfo")]
    pub fn info(&mut self, path: &str) -> Result<Object, JsError> {
        let d = self.dataset(path)?;
        let filters: Array = d
            .filters()
            .map_err(err)?
            .iter()
            .map(|f| JsValue::from_str(&f.to_string()))
            .collect();
        let layout = d.layout_name();
        #[allow(clippy::cast_precision_loss)]
        let maxshape: Array = d
            .max_shape()
            .into_iter()
            .map(|m| m.map_or(JsValue::NULL, |n| JsValue::from_f64(n as f64)))
            .collect();
        let dtype = match d.dtype().class {
            TypeClass::Other => h5chunk::types::numpy_descr(d.datatype())
                .unwrap_or_else(|| d.datatype().class.name().to_owned()),
            _ => d.dtype().numpy(),
        };
        object(&[
            ("path", JsValue::from_str(&d.path())),
            ("dtype", JsValue::from_str(&dtype)),
            ("class", JsValue::from_str(d.datatype().class.name())),
            ("shape", numbers(&d.shape())),
            ("maxshape", maxshape.into()),
            ("chunks", d.chunk().map_or(JsValue::NULL, |c| numbers(&c))),
            ("layout", JsValue::from_str(layout)),
            (
                "index",
                d.index_kind()
                    .map_or(JsValue::NULL, |k| JsValue::from_str(k.name())),
            ),
            ("filters", filters.into()),
        ])
    }

    /// Read a hyperslab of the dataset at `path`: `count` elements along each dimension from
    /// `start`, every `step`-th (defaults: from 0, everything, every element), in C order,
    /// into the typed array of its type (strings into an array of strings).
    #[wasm_bindgen(unchecked_return_type = "Values")]
    pub fn read(
        &mut self,
        path: &str,
        start: Option<Vec<f64>>,
        count: Option<Vec<f64>>,
        step: Option<Vec<f64>>,
    ) -> Result<JsValue, JsError> {
        let d = self.dataset(path)?;
        let shape = d.shape();
        let start = start.map_or(Ok(vec![0; shape.len()]), |s| dims("start", &s))?;
        let step = step.map_or(Ok(vec![1; shape.len()]), |s| dims("step", &s))?;
        let count = match count {
            Some(c) => dims("count", &c)?,
            // What the extent holds from `start` by `step`.
            None => shape
                .iter()
                .zip(start.iter().zip(&step))
                .map(|(&n, (&s, &t))| {
                    n.saturating_sub(s)
                        .saturating_add(t.saturating_sub(1))
                        .checked_div(t)
                        .unwrap_or(0)
                })
                .collect(),
        };
        read_values(&d, &start, &count, &step).map_err(|e| err(format!("{path}: {e}")))
    }

    /// Read the dataset at `path` again from the file (a file a SWMR writer is extending: its
    /// new extent and chunks); its shape now. A URL's cached blocks and size are dropped first.
    #[wasm_bindgen(unchecked_return_type = "number[]")]
    pub fn refresh(&mut self, path: &str) -> Result<JsValue, JsError> {
        // A deferred URL's blocks are dropped by its owner (`UrlCache.reset`) before the
        // rounds of this operation, not in each.
        if let Some(u) = self.url.as_ref().filter(|u| !u.is_deferred()) {
            u.refresh().map_err(err)?;
        }
        let d = self.dataset(path)?;
        d.refresh().map_err(|e| err(format!("{path}: {e}")))?;
        Ok(numbers(&d.shape()))
    }
}

/// The bytes of a URL that JavaScript fetches asynchronously (`fetch` with a `Range` header):
/// an [`H5File`] opened on it (`H5File.openCache`) reads what was supplied, and an operation
/// that needs more notes the ranges and throws; the caller fetches `pending()`, `supply`s
/// each answer and runs the operation again, then calls `settle()`. `h5chunk_async.js` is
/// that loop.
#[wasm_bindgen]
#[derive(Debug)]
pub struct UrlCache {
    url: String,
    storage: Arc<UrlStorage>,
}

#[wasm_bindgen]
impl UrlCache {
    /// A cache of `url` with nothing in it: its first block is pending.
    #[wasm_bindgen(constructor)]
    pub fn new(url: &str) -> UrlCache {
        UrlCache {
            url: url.to_owned(),
            storage: Arc::new(UrlStorage::deferred(url)),
        }
    }

    /// The URL.
    #[wasm_bindgen(getter)]
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// Ranges waited for.
    #[wasm_bindgen(getter, js_name = pendingCount)]
    pub fn pending_count(&self) -> usize {
        self.storage.pending_count()
    }

    /// The ranges to fetch, each handed out once: `[start0, end0, start1, end1, ...]` (end
    /// exclusive).
    #[wasm_bindgen(unchecked_return_type = "number[]")]
    pub fn pending(&self) -> Result<JsValue, JsError> {
        let flat: Vec<u64> = self
            .storage
            .take_pending()
            .map_err(err)?
            .into_iter()
            .flat_map(|(a, b)| [a, b])
            .collect();
        Ok(numbers(&flat))
    }

    /// The answer to a range `pending` gave: its first byte's offset, its bytes, and the
    /// resource's size (from `Content-Range`).
    pub fn supply(&self, start: f64, bytes: &[u8], size: f64) -> Result<(), JsError> {
        let start = dims("start", &[start])?.first().copied().unwrap_or(0);
        let size = dims("size", &[size])?.first().copied().unwrap_or(0);
        self.storage.supply(start, bytes, size).map_err(err)
    }

    /// An operation ran to its end: the large reads' bytes kept for its rounds are dropped.
    pub fn settle(&self) {
        self.storage.settle();
    }

    /// Drop every cached block; the first one is pending again (a file a writer is
    /// extending: before `refresh`).
    pub fn reset(&self) -> Result<(), JsError> {
        self.storage.refresh().map_err(err)
    }

    /// Ranges supplied so far.
    #[wasm_bindgen(getter)]
    pub fn requests(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let n = self.storage.requests() as f64;
        n
    }

    /// Bytes supplied so far.
    #[wasm_bindgen(getter, js_name = bytesFetched)]
    pub fn bytes_fetched(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let n = self.storage.bytes_fetched() as f64;
        n
    }
}

impl H5File {
    fn dataset(&mut self, path: &str) -> Result<Dataset, JsError> {
        if let Some(d) = self.datasets.get(path) {
            return Ok(d.clone());
        }
        let d = self
            .file
            .dataset(path)
            .map_err(|e| err(format!("{path}: {e}")))?;
        self.datasets.insert(path.to_owned(), d.clone());
        Ok(d)
    }
}

/// The hyperslab's values as the typed array of `d`'s type.
fn read_values(
    d: &Dataset,
    start: &[u64],
    count: &[u64],
    step: &[u64],
) -> h5chunk::Result<JsValue> {
    let scalar = d.shape().is_empty();
    macro_rules! typed {
        ($t:ty, $array:ty) => {{
            let v: Vec<$t> = if scalar {
                d.read::<$t>()?
            } else {
                d.read_slice::<$t>(start, count, Some(step))?
            };
            <$array>::from(v.as_slice()).into()
        }};
    }
    let t = d.dtype();
    Ok(match (t.class, t.size) {
        (TypeClass::Float, 8) => typed!(f64, js_sys::Float64Array),
        // float16 and bfloat16 as Float32Array (JavaScript has no 16-bit float array).
        (TypeClass::Float | TypeClass::BFloat16, _) => typed!(f32, js_sys::Float32Array),
        (TypeClass::Int, 1) => typed!(i8, js_sys::Int8Array),
        (TypeClass::Int, 2) => typed!(i16, js_sys::Int16Array),
        (TypeClass::Int, 4) => typed!(i32, js_sys::Int32Array),
        (TypeClass::Int, _) => typed!(i64, js_sys::BigInt64Array),
        (TypeClass::Uint, 1) => typed!(u8, js_sys::Uint8Array),
        (TypeClass::Uint, 2) => typed!(u16, js_sys::Uint16Array),
        (TypeClass::Uint, 4) => typed!(u32, js_sys::Uint32Array),
        (TypeClass::Uint, _) => typed!(u64, js_sys::BigUint64Array),
        (TypeClass::FixedString | TypeClass::VarLenString, _) => {
            let v = if scalar {
                d.read_strings()?
            } else {
                d.read_slice_strings(start, count, Some(step))?
            };
            v.iter()
                .map(|s| JsValue::from_str(s))
                .collect::<Array>()
                .into()
        }
        (TypeClass::Other, _) => {
            return Err(h5chunk::Error::Unsupported(
                "reading compound, enumeration, array, opaque and reference datasets into JavaScript",
            ));
        }
    })
}
