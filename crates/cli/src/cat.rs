//! `h5chunk cat`: a dataset's values, or a hyperslab of them (`--slice`), as little-endian
//! binary (the default for pipes), a `.npy` file, text (the default on a terminal; `--text`)
//! or CSV.
//!
//! Text is compact: a 1-D dataset one value a line; rows of the last dimension as lines, each
//! 2-D block of an n-D dataset under its `[i, j, :, :]` header; a 1-D compound dataset as a
//! table under its field names. Values are read in parts of whole rows along the first
//! dimension, so memory stays bounded whatever the selection's size.

use std::io::{IsTerminal, Write};
use std::path::Path;

use h5chunk::types::TypeClass;
use h5chunk::{Dataset, File};

use crate::{CliResult, Outcome, SLAB_BYTES, in_dataset, npy, open, text, type_text};

/// How `cat` writes values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Binary,
    Npy,
    Text,
    Csv,
}

impl Format {
    /// The format the flags ask for; text when none does and stdout is a terminal.
    pub fn choose(npy: bool, text: bool, csv: bool) -> Format {
        if csv {
            Format::Csv
        } else if text {
            Format::Text
        } else if npy {
            Format::Npy
        } else if std::io::stdout().is_terminal() {
            Format::Text
        } else {
            Format::Binary
        }
    }
}

/// A hyperslab: per dimension its first index, count and step; `keep` false for a dimension
/// selected by a single index (dropped from the output's shape, as numpy drops it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    pub start: Vec<u64>,
    pub count: Vec<u64>,
    pub step: Vec<u64>,
    pub keep: Vec<bool>,
}

impl Selection {
    /// Every element of a dataset of `shape`.
    pub fn all(shape: &[u64]) -> Selection {
        Selection {
            start: vec![0; shape.len()],
            count: shape.to_vec(),
            step: vec![1; shape.len()],
            keep: vec![true; shape.len()],
        }
    }

    /// `START:STOP[:STEP],...` (Python's slices: empty parts default, negative indices count
    /// from the end, out-of-range bounds are clipped) or a single index per dimension;
    /// dimensions not named are whole.
    pub fn parse(text: &str, shape: &[u64]) -> CliResult<Selection> {
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        if parts.len() > shape.len() {
            return Err(format!(
                "--slice {text:?}: {} dimensions for a dataset of {}",
                parts.len(),
                shape.len()
            ));
        }
        let mut sel = Selection::all(shape);
        let bad = |why: &str| format!("--slice {text:?}: {why}");
        for (i, (part, &dim)) in parts.iter().zip(shape).enumerate() {
            let dim_i = i128::from(dim);
            let index = |s: &str| -> CliResult<i128> {
                s.trim()
                    .parse::<i128>()
                    .map_err(|_| bad(&format!("{s:?} is not an index")))
            };
            // A negative index counts from the end.
            let from_end = |v: i128| if v < 0 { v.saturating_add(dim_i) } else { v };
            let fields: Vec<&str> = part.split(':').collect();
            let (start, count, step, keep) = match fields.as_slice() {
                [one] => {
                    let v = from_end(index(one)?);
                    if v < 0 || v >= dim_i {
                        return Err(bad(&format!(
                            "index {one} is out of range for dimension {i} of {dim}"
                        )));
                    }
                    (v, 1, 1, false)
                }
                [a, b] | [a, b, _] => {
                    let step = match fields.get(2).map(|s| s.trim()) {
                        None | Some("") => 1,
                        Some(s) => index(s)?,
                    };
                    if step < 1 {
                        return Err(bad("steps are positive (no reversed slices)"));
                    }
                    let clip = |v: i128| from_end(v).clamp(0, dim_i);
                    let a = if a.trim().is_empty() {
                        0
                    } else {
                        clip(index(a)?)
                    };
                    let b = if b.trim().is_empty() {
                        dim_i
                    } else {
                        clip(index(b)?)
                    };
                    let span = b.saturating_sub(a).max(0);
                    // Ceiling division: the indices a, a+step, ... below b.
                    let count = span
                        .saturating_add(step.saturating_sub(1))
                        .checked_div(step)
                        .unwrap_or(0);
                    (a, count, step, true)
                }
                _ => return Err(bad(&format!("{part:?} is not START:STOP[:STEP]"))),
            };
            let u = |v: i128| u64::try_from(v).map_err(|_| bad("out of range"));
            if let (Some(s), Some(c), Some(t), Some(k)) = (
                sel.start.get_mut(i),
                sel.count.get_mut(i),
                sel.step.get_mut(i),
                sel.keep.get_mut(i),
            ) {
                (*s, *c, *t, *k) = (u(start)?, u(count)?, u(step)?.max(1), keep);
            }
        }
        Ok(sel)
    }

    /// The shape of the output: the kept dimensions' counts.
    pub fn out_shape(&self) -> Vec<u64> {
        self.count
            .iter()
            .zip(&self.keep)
            .filter(|&(_, &k)| k)
            .map(|(&c, _)| c)
            .collect()
    }

    /// Elements selected, if the count fits a `u64`.
    pub fn len(&self) -> Option<u64> {
        self.count.iter().try_fold(1u64, |n, &c| n.checked_mul(c))
    }

    /// The dataset index of the `k`-th selected position along dimension `dim`.
    fn coord(&self, dim: usize, k: u64) -> u64 {
        let start = self.start.get(dim).copied().unwrap_or(0);
        let step = self.step.get(dim).copied().unwrap_or(1);
        start.saturating_add(k.saturating_mul(step))
    }
}

/// Read `sel` of `d` in parts of whole positions along the first dimension, about
/// `SLAB_BYTES` each, giving each part's bytes (as `read_slice_raw` gives them) to `each`.
pub fn read_parts(
    d: &Dataset,
    sel: &Selection,
    each: &mut dyn FnMut(Vec<u8>) -> Result<(), PartError>,
) -> Result<(), PartError> {
    if sel.count.is_empty() {
        // A scalar: its one element.
        return each(d.read_raw().map_err(PartError::Read)?);
    }
    if sel.len() == Some(0) {
        return Ok(());
    }
    let first = sel.count.first().copied().unwrap_or(0);
    let per_position = sel
        .count
        .iter()
        .skip(1)
        .try_fold(d.dtype().size as u64, |n, &c| n.checked_mul(c))
        .unwrap_or(u64::MAX)
        .max(1);
    let rows = (SLAB_BYTES as u64)
        .checked_div(per_position)
        .unwrap_or(1)
        .clamp(1, first.max(1));
    let mut done = 0u64;
    while done < first {
        let n = rows.min(first.saturating_sub(done));
        let mut start = sel.start.clone();
        let mut count = sel.count.clone();
        if let (Some(s), Some(c)) = (start.first_mut(), count.first_mut()) {
            *s = sel.coord(0, done);
            *c = n;
        }
        let bytes = d
            .read_slice_raw(&start, &count, Some(&sel.step))
            .map_err(PartError::Read)?;
        each(bytes)?;
        done = done.saturating_add(n);
    }
    Ok(())
}

/// Why a part was not written.
#[derive(Debug)]
pub enum PartError {
    Read(h5chunk::Error),
    Write(std::io::Error),
    Other(String),
}

/// `h5chunk cat FILE DATASET [--npy|--text|--csv] [--slice ...]`.
pub fn cat(file: &Path, path: &str, format: Format, slice: Option<&str>) -> CliResult<Outcome> {
    let f: File = open(file)?;
    let d = f.dataset(path).map_err(|e| in_dataset(file, path, &e))?;
    let shape = d.shape();
    let sel = match slice {
        Some(s) => Selection::parse(s, &shape)?,
        None => Selection::all(&shape),
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    let written = match format {
        Format::Binary | Format::Npy => binary(&d, &sel, format == Format::Npy, &mut out),
        Format::Text | Format::Csv => as_text(&d, &sel, format == Format::Csv, &mut out),
    }
    .and_then(|()| out.flush().map_err(PartError::Write));
    match written {
        Ok(()) => Ok(Outcome::Ok),
        Err(PartError::Read(e)) => Err(in_dataset(file, path, &e)),
        Err(PartError::Other(e)) => Err(format!("{path}: {e}")),
        // A closed pipe (`h5chunk cat ... | head -c 16`) is the reader's choice.
        Err(PartError::Write(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Outcome::Ok),
        Err(PartError::Write(e)) => Err(format!("writing to stdout: {e}")),
    }
}

/// Bare values or `.npy`; strings (without `--npy`, or variable-length ones) as lines.
fn binary(
    d: &Dataset,
    sel: &Selection,
    as_npy: bool,
    out: &mut dyn Write,
) -> Result<(), PartError> {
    let class = d.dtype().class;
    let w = |out: &mut dyn Write, b: &[u8]| out.write_all(b).map_err(PartError::Write);
    if class == TypeClass::VarLenString || (class == TypeClass::FixedString && !as_npy) {
        if as_npy {
            return Err(PartError::Other(
                "variable-length strings have no .npy form (numpy's object arrays are \
                 pickles); cat prints them as lines without --npy"
                    .into(),
            ));
        }
        return read_parts(d, sel, &mut |bytes| {
            for s in d.decode_strings(&bytes).map_err(PartError::Read)? {
                w(out, s.as_bytes())?;
                w(out, b"\n")?;
            }
            Ok(())
        });
    }
    if as_npy {
        // Numbers come little-endian from h5chunk; other elements as stored; bfloat16,
        // which numpy lacks, as its bits (`|V2`, which ml_dtypes' `bfloat16` views).
        let descr = match class {
            TypeClass::Other | TypeClass::BFloat16 => h5chunk::types::numpy_descr(d.datatype())
                .ok_or_else(|| {
                    PartError::Other(format!(
                        "{} elements have no .npy form",
                        d.datatype().class.name()
                    ))
                })?,
            _ => type_text(d).replace('>', "<"),
        };
        w(out, &npy::encode_header(&descr, &sel.out_shape()))?;
    }
    if sel == &Selection::all(&d.shape()) && !sel.count.is_empty() {
        // The whole dataset: slabs of whole chunk rows, no chunk read twice.
        for slab in d.slabs(SLAB_BYTES) {
            w(out, &slab.map_err(PartError::Read)?.bytes)?;
        }
        return Ok(());
    }
    read_parts(d, sel, &mut |bytes| w(out, &bytes))
}

/// Text (`csv` false) or CSV.
fn as_text(d: &Dataset, sel: &Selection, csv: bool, out: &mut dyn Write) -> Result<(), PartError> {
    let shape = sel.out_shape();
    let rank = shape.len();
    let fields = text::field_names(d);
    let w = |out: &mut dyn Write, line: &str| writeln!(out, "{line}").map_err(PartError::Write);
    if d.is_null() {
        return if csv {
            Ok(())
        } else {
            w(out, "(null dataspace: no values)")
        };
    }
    // A table of fields: a compound dataset of at most one dimension.
    let table = fields.as_ref().filter(|_| rank <= 1);
    match (table, &fields) {
        (Some(names), _) => {
            let header: Vec<String> = if csv {
                names.iter().map(|n| text::csv_field(n)).collect()
            } else {
                names.clone()
            };
            // Text aligns the header with the first part's columns below.
            if csv {
                w(out, &header.join(","))?;
            }
            let mut first = true;
            return read_parts(d, sel, &mut |bytes| {
                let rows = text::compound_fields(d, &bytes, !csv);
                if csv {
                    for r in rows {
                        let r: Vec<String> = r.iter().map(|v| text::csv_field(v)).collect();
                        w(out, &r.join(","))?;
                    }
                    return Ok(());
                }
                let mut lines = Vec::with_capacity(rows.len().saturating_add(1));
                if first {
                    lines.push(header.clone());
                    first = false;
                }
                lines.extend(rows);
                for l in aligned(&lines) {
                    w(out, &l)?;
                }
                Ok(())
            });
        }
        (None, Some(names)) if !csv => {
            w(out, &format!("# ({})", names.join(", ")))?;
        }
        _ => {}
    }
    let cols = if rank <= 1 {
        1
    } else {
        usize::try_from(shape.last().copied().unwrap_or(1))
            .unwrap_or(usize::MAX)
            .max(1)
    };
    // Elements per 2-D block of an n-D selection (a header line before each).
    let block = if rank >= 3 {
        shape
            .iter()
            .rev()
            .take(2)
            .try_fold(1u64, |n, &c| n.checked_mul(c))
            .unwrap_or(u64::MAX)
            .max(1)
    } else {
        u64::MAX
    };
    let kept: Vec<usize> = (0..sel.keep.len())
        .filter(|&i| sel.keep.get(i).copied().unwrap_or(false))
        .collect();
    let mut at = 0u64;
    read_parts(d, sel, &mut |bytes| {
        let values = if csv && fields.is_some() {
            // Each compound element's fields as columns of its own.
            text::compound_fields(d, &bytes, false)
                .into_iter()
                .map(|f| {
                    f.iter()
                        .map(|v| text::csv_field(v))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .collect()
        } else {
            text::elements(d, &bytes, !csv)
                .map_err(PartError::Read)?
                .into_iter()
                .map(|v| if csv { text::csv_field(&v) } else { v })
                .collect::<Vec<String>>()
        };
        let mut rows: Vec<Vec<String>> = Vec::new();
        let mut starts: Vec<u64> = Vec::new();
        for row in values.chunks(cols) {
            starts.push(at);
            rows.push(row.to_vec());
            at = at.saturating_add(row.len() as u64);
        }
        if csv {
            for r in rows {
                w(out, &r.join(","))?;
            }
            return Ok(());
        }
        let lines = aligned(&rows);
        for (line, first) in lines.iter().zip(starts) {
            if rank >= 3 && first.checked_rem(block) == Some(0) {
                if first > 0 {
                    w(out, "")?;
                }
                w(out, &block_header(sel, &kept, &shape, first))?;
            }
            w(out, line)?;
        }
        Ok(())
    })
}

/// `[i, j, :, :]`: the dataset indices of the 2-D block starting at output element `flat`.
fn block_header(sel: &Selection, kept: &[usize], shape: &[u64], flat: u64) -> String {
    let rank = shape.len();
    // The output index of each kept dimension, from the last.
    let mut rest = flat;
    let mut idx = vec![0u64; rank];
    for (i, &n) in shape.iter().enumerate().rev() {
        if let Some(slot) = idx.get_mut(i) {
            *slot = rest.checked_rem(n).unwrap_or(0);
        }
        rest = rest.checked_div(n).unwrap_or(0);
    }
    let mut parts = Vec::new();
    let mut k = 0usize;
    for dim in 0..sel.keep.len() {
        if kept.contains(&dim) {
            if k.saturating_add(2) >= rank {
                parts.push(":".to_owned());
            } else {
                parts.push(sel.coord(dim, idx.get(k).copied().unwrap_or(0)).to_string());
            }
            k = k.saturating_add(1);
        } else {
            parts.push(sel.coord(dim, 0).to_string());
        }
    }
    format!("[{}]", parts.join(", "))
}

/// Rows of cells as lines, each column aligned to its widest cell (two spaces apart): to the
/// left in a column of strings (quoted), else to the right.
fn aligned(rows: &[Vec<String>]) -> Vec<String> {
    let mut widths: Vec<usize> = Vec::new();
    let mut left: Vec<bool> = Vec::new();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            let n = c.chars().count();
            let string = c.starts_with('"');
            match (widths.get_mut(i), left.get_mut(i)) {
                (Some(w), Some(l)) => {
                    *w = (*w).max(n);
                    *l |= string;
                }
                _ => {
                    widths.push(n);
                    left.push(string);
                }
            }
        }
    }
    rows.iter()
        .map(|r| {
            let cells: Vec<String> = r
                .iter()
                .zip(widths.iter().zip(&left))
                .map(|(c, (&w, &l))| {
                    if l {
                        format!("{c:<w$}")
                    } else {
                        format!("{c:>w$}")
                    }
                })
                .collect();
            cells.join("  ").trim_end().to_owned()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::Selection;

    #[test]
    fn slices_parse_as_python_reads_them() {
        let s = Selection::parse("1:5, ::2, -1", &[10, 5, 4]).unwrap();
        assert_eq!(s.start, [1, 0, 3]);
        assert_eq!(s.count, [4, 3, 1]);
        assert_eq!(s.step, [1, 2, 1]);
        assert_eq!(s.keep, [true, true, false]);
        assert_eq!(s.out_shape(), [4, 3]);
        // Clipped as Python clips, empty when the stop comes first.
        let s = Selection::parse("-3:100", &[10]).unwrap();
        assert_eq!((s.start[0], s.count[0]), (7, 3));
        let s = Selection::parse("5:2", &[10]).unwrap();
        assert_eq!(s.count[0], 0);
        // Dimensions not named are whole.
        assert_eq!(Selection::parse("2", &[3, 4]).unwrap().out_shape(), [4]);
        for bad in ["10", "-11", "1:2:0", "1:2:-1", "a", "1,2,3", "1:2:3:4"] {
            assert!(Selection::parse(bad, &[10, 4]).is_err(), "{bad}");
        }
    }
}
