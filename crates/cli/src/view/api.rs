//! The JSON the page asks for: the file's tree (`/api/tree`), an object's attributes and a
//! dataset's metadata (`/api/info`), a hyperslab's values with their statistics
//! (`/api/data`), and a dataset's shape after a SWMR refresh (`/api/refresh`).

use std::collections::{HashMap, HashSet};

use h5chunk::types::TypeClass;
use h5chunk::{Dataset, File, Group, MemberKind};
use serde_json::{Value, json};

use crate::cat::Selection;
use crate::{text, type_text};

/// Objects the tree lists at most (a file of more shows the first ones and says so).
const MAX_NODES: usize = 20_000;
/// Values one data request returns at most: the page asks for a strided view of more.
const MAX_VALUES: u64 = 4 << 20;
/// Bytes of values one data request reads at most.
const MAX_BYTES: u64 = 64 << 20;
/// Elements of a non-numeric dataset shown as text at most.
const MAX_TEXT: u64 = 10_000;

/// The open file and the datasets the page has looked at (kept open, so that a refresh
/// carries over to the next data request).
#[derive(Debug)]
pub struct State {
    file: File,
    name: String,
    datasets: HashMap<String, Dataset>,
}

type ApiResult = Result<Value, String>;

impl State {
    pub fn new(file: File, name: String) -> State {
        State {
            file,
            name,
            datasets: HashMap::new(),
        }
    }

    /// The answer to `/api/...` with these query parameters.
    pub fn answer(&mut self, route: &str, q: &HashMap<String, String>) -> ApiResult {
        let path = q.get("path").map_or("/", String::as_str);
        match route {
            "/api/tree" => Ok(self.tree()),
            "/api/info" => self.info(path),
            "/api/data" => {
                let d = self.dataset(path)?;
                data(&d, q)
            }
            "/api/refresh" => {
                let d = self.dataset(path)?;
                d.refresh().map_err(|e| e.to_string())?;
                Ok(json!({ "shape": d.shape(), "maxshape": d.max_shape() }))
            }
            _ => Err(format!("no such request: {route}")),
        }
    }

    fn dataset(&mut self, path: &str) -> Result<Dataset, String> {
        if let Some(d) = self.datasets.get(path) {
            return Ok(d.clone());
        }
        let d = self
            .file
            .dataset(path)
            .map_err(|e| format!("{path}: {e}"))?;
        self.datasets.insert(path.to_owned(), d.clone());
        Ok(d)
    }

    fn tree(&self) -> Value {
        let mut count = 0usize;
        let mut seen = HashSet::new();
        let root = match self.file.group("/") {
            Ok(g) => {
                seen.insert(g.object_address());
                json!({
                    "name": "/",
                    "path": "/",
                    "kind": "group",
                    "children": children(&g, &mut seen, &mut count),
                })
            }
            Err(e) => json!({ "name": "/", "path": "/", "kind": "error", "note": e.to_string() }),
        };
        json!({ "file": self.name, "root": root, "truncated": count >= MAX_NODES })
    }

    fn info(&mut self, path: &str) -> ApiResult {
        match self.file.group(path) {
            Ok(g) => {
                return Ok(json!({
                    "path": g.path(),
                    "kind": "group",
                    "attrs": attrs(g.attrs().all()),
                }));
            }
            Err(h5chunk::Error::WrongKind { .. }) => {}
            Err(e) => return Err(format!("{path}: {e}")),
        }
        let d = self.dataset(path)?;
        let filters: Vec<String> = d
            .filters()
            .map_err(|e| format!("{path}: {e}"))?
            .iter()
            .map(ToString::to_string)
            .collect();
        let layout = d.layout_name();
        let class = d.dtype().class;
        Ok(json!({
            "path": d.path(),
            "kind": "dataset",
            "dtype": type_text(&d),
            "class": d.datatype().class.name(),
            "numeric": matches!(
                class,
                TypeClass::Int | TypeClass::Uint | TypeClass::Float | TypeClass::BFloat16
            ),
            "null": d.is_null(),
            "shape": d.shape(),
            "maxshape": d.max_shape(),
            "chunks": d.chunk(),
            "layout": layout,
            "layout_version": d.layout_version(),
            "index": d.index_kind().map(|k| k.name()),
            "filters": filters,
            "fields": text::field_names(&d),
            "attrs": attrs(d.attrs().all()),
        }))
    }
}

/// A group's members, depth-first (a group reached again through another link is named, not
/// listed again).
fn children(g: &Group, seen: &mut HashSet<u64>, count: &mut usize) -> Vec<Value> {
    let members = match g.members_in_creation_order() {
        Ok(m) => m,
        Err(e) => {
            return vec![
                json!({ "name": "(members not listed)", "kind": "error", "note": e.to_string() }),
            ];
        }
    };
    let mut out = Vec::new();
    for (name, kind) in members {
        if *count >= MAX_NODES {
            break;
        }
        *count = count.saturating_add(1);
        let path = if g.path() == "/" {
            format!("/{name}")
        } else {
            format!("{}/{name}", g.path())
        };
        out.push(match kind {
            MemberKind::Group => match g.group(&name) {
                Ok(sub) if !seen.insert(sub.object_address()) => json!({
                    "name": name, "path": path, "kind": "link",
                    "note": "a hard link to a group listed already",
                }),
                Ok(sub) => json!({
                    "name": name, "path": path, "kind": "group",
                    "children": children(&sub, seen, count),
                }),
                Err(e) => json!({ "name": name, "path": path, "kind": "error", "note": e.to_string() }),
            },
            MemberKind::Dataset => match g.dataset(&name) {
                Ok(d) => json!({
                    "name": name, "path": path, "kind": "dataset",
                    "note": format!("{} {}", crate::dims_text(d.shape().into_iter().map(Some)), type_text(&d)),
                }),
                Err(e) => json!({ "name": name, "path": path, "kind": "error", "note": e.to_string() }),
            },
            MemberKind::Other => {
                let note = match g.link(&name) {
                    Ok(Some(h5chunk::LinkValue::External { file, path })) => format!("-> {file}:{path}"),
                    Ok(Some(h5chunk::LinkValue::Soft(target))) => format!("-> {target}"),
                    Ok(_) => "other object".to_owned(),
                    Err(e) => e.to_string(),
                };
                json!({ "name": name, "path": path, "kind": "link", "note": note })
            }
        });
    }
    out
}

fn attrs(all: h5chunk::Result<Vec<h5chunk::Attr>>) -> Value {
    match all {
        Ok(all) => Value::Array(
            all.iter()
                .map(|a| {
                    json!({
                        "name": a.name(),
                        "type": a.type_name(),
                        "shape": crate::attr_shape(a),
                        "value": a.summary(),
                    })
                })
                .collect(),
        ),
        Err(e) => {
            json!([{ "name": "(attributes not read)", "type": "", "shape": "", "value": e.to_string() }])
        }
    }
}

/// Comma-separated numbers of a query parameter, if given.
fn list(q: &HashMap<String, String>, key: &str) -> Result<Option<Vec<u64>>, String> {
    match q.get(key).map(String::as_str) {
        None | Some("") => Ok(None),
        Some(v) => v
            .split(',')
            .map(|x| {
                x.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("{key}={v}: not numbers"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
    }
}

/// `/api/data?path=P[&start=..&count=..&step=..]`: the hyperslab's values (numbers, or text
/// for other types) and statistics of the numbers.
fn data(d: &Dataset, q: &HashMap<String, String>) -> ApiResult {
    let shape = d.shape();
    let mut sel = Selection::all(&shape);
    if let Some(s) = list(q, "start")? {
        sel.start = s;
    }
    if let Some(c) = list(q, "count")? {
        sel.count = c;
    }
    if let Some(t) = list(q, "step")? {
        sel.step = t;
    }
    let rank = shape.len();
    if sel.start.len() != rank || sel.count.len() != rank || sel.step.len() != rank {
        return Err(format!("start, count and step need {rank} numbers each"));
    }
    if sel.step.contains(&0) {
        return Err("steps are positive".into());
    }
    // Clip each count to what the extent holds (the page may ask with an older shape).
    for ((c, (&s, &t)), &n) in sel
        .count
        .iter_mut()
        .zip(sel.start.iter().zip(&sel.step))
        .zip(&shape)
    {
        let room = n
            .saturating_sub(s)
            .saturating_add(t.saturating_sub(1))
            .checked_div(t)
            .unwrap_or(0);
        *c = (*c).min(room);
    }
    let n = sel.len().unwrap_or(u64::MAX);
    let numeric = d.dtype().is_number();
    let cap = if numeric { MAX_VALUES } else { MAX_TEXT };
    if n > cap {
        return Err(format!(
            "{n} values asked for; at most {cap} at once (use step)"
        ));
    }
    // Elements of a large type (a compound of big arrays) are bounded by their bytes too.
    let bytes = n.saturating_mul(d.dtype().size as u64);
    if bytes > MAX_BYTES {
        return Err(format!(
            "{bytes} bytes asked for; at most {MAX_BYTES} at once (use step)"
        ));
    }
    let mut raw = Vec::new();
    if !d.is_null() {
        crate::cat::read_parts(d, &sel, &mut |bytes| {
            raw.extend_from_slice(&bytes);
            Ok(())
        })
        .map_err(|e| match e {
            crate::cat::PartError::Read(e) => e.to_string(),
            crate::cat::PartError::Write(e) => e.to_string(),
            crate::cat::PartError::Other(e) => e,
        })?;
    }
    let mut out = serde_json::Map::new();
    out.insert("shape".into(), json!(shape));
    out.insert("start".into(), json!(sel.start));
    out.insert("count".into(), json!(sel.count));
    out.insert("step".into(), json!(sel.step));
    if numeric {
        let values = numbers(d, &raw);
        out.insert("stats".into(), stats(&values));
        out.insert(
            "values".into(),
            Value::Array(
                values
                    .into_iter()
                    .map(|v| serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
                    .collect(),
            ),
        );
    } else {
        let text = text::elements(d, &raw, true).map_err(|e| e.to_string())?;
        out.insert("text".into(), json!(text));
        // A compound's fields apart, for a table with a column each.
        if let Some(names) = text::field_names(d) {
            out.insert("fields".into(), json!(names));
            out.insert("rows".into(), json!(text::compound_fields(d, &raw, true)));
        }
    }
    Ok(Value::Object(out))
}

/// Little-endian numbers of the dataset's type as `f64`.
fn numbers(d: &Dataset, raw: &[u8]) -> Vec<f64> {
    let t = d.dtype();
    let size = t.size.max(1);
    raw.chunks_exact(size)
        .map(|e| {
            let mut b = [0u8; 8];
            if let Some(dst) = b.get_mut(..e.len()) {
                dst.copy_from_slice(e);
            }
            let u = u64::from_le_bytes(b);
            #[allow(clippy::cast_precision_loss)]
            match (t.class, size) {
                (TypeClass::Float, 2) => f64::from(h5chunk::f16::from_bits(u as u16).to_f32()),
                (TypeClass::Float, 4) => f64::from(f32::from_bits(u as u32)),
                (TypeClass::Float, _) => f64::from_bits(u),
                (TypeClass::BFloat16, _) => f64::from(h5chunk::bf16::from_bits(u as u16).to_f32()),
                (TypeClass::Int, 1) => f64::from(u as u8 as i8),
                (TypeClass::Int, 2) => f64::from(u as u16 as i16),
                (TypeClass::Int, 4) => f64::from(u as u32 as i32),
                (TypeClass::Int, _) => u as i64 as f64,
                (_, _) => u as f64,
            }
        })
        .collect()
}

/// Count, finite count, min, max, mean and standard deviation of the finite values.
fn stats(values: &[f64]) -> Value {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let n = finite.len();
    if n == 0 {
        return json!({ "count": values.len(), "finite": 0 });
    }
    let min = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let max = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    #[allow(clippy::cast_precision_loss)]
    let nf = n as f64;
    let mean = finite.iter().sum::<f64>() / nf;
    let var = finite.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / nf;
    json!({
        "count": values.len(),
        "finite": n,
        "min": min,
        "max": max,
        "mean": mean,
        "std": var.sqrt(),
    })
}
