//! The chunk grid: where a selection falls on it, and the copies of runs of elements between
//! a selection's buffer and a chunk.

use smallvec::SmallVec;

use h5chunk_format::Addr;

use crate::error::{Error, Result};
use crate::select::{Hyperslab, Run};

use super::chunked::Chunked;

/// The chunk `le` is, whole, when `start`/`count` select exactly one chunk of the grid inside
/// the extent and `le` is that chunk's size.
#[inline(always)]
pub(super) fn whole_chunk_at(
    c: &Chunked,
    le: &[u8],
    start: &[u64],
    count: &[u64],
) -> Option<SmallVec<[u64; 4]>> {
    if le.len() as u64 != c.shape.chunk_bytes
        || count.iter().ne(c.shape.chunk.iter())
        || start.len() != count.len()
    {
        return None;
    }
    let mut scaled: SmallVec<[u64; 4]> = SmallVec::new();
    for ((&s, &n), &d) in start.iter().zip(count).zip(&c.shape.dims) {
        match (s.checked_rem(n), s.checked_div(n), s.checked_add(n)) {
            (Some(0), Some(q), Some(end)) if end <= d => scaled.push(q),
            _ => return None,
        }
    }
    Some(scaled)
}

/// Step `idx` to the next index of the box `0 .. bound` in row-major order: `false` (with
/// `idx` back at zeros) after the last.
pub(super) fn step_row_major(idx: &mut [u64], bound: &[u64]) -> bool {
    for (i, &b) in idx.iter_mut().zip(bound).rev() {
        *i = i.saturating_add(1);
        if *i < b {
            return true;
        }
        *i = 0;
    }
    false
}

/// The most dimensions the box-of-chunks append path handles (on the stack).
pub(super) const MAX_FAST_RANK: usize = 4;

/// Whether a selection covers a box of whole chunks exactly, on the chunk grid and inside the
/// extent; if so `first` gets its first chunk's scaled coordinates and `n` the number of
/// chunks along each dimension (all slices one per dimension).
pub(super) fn aligned_grid(
    chunk: &[u64],
    dims: &[u64],
    (start, count): (&[u64], &[u64]),
    first: &mut [u64],
    n: &mut [u64],
) -> bool {
    let rank = chunk.len();
    if [start.len(), count.len(), dims.len(), first.len(), n.len()]
        .iter()
        .any(|&l| l != rank)
    {
        return false;
    }
    let dims_iter = start.iter().zip(count).zip(chunk).zip(dims);
    for ((((&s, &k), &c), &d), (f, m)) in dims_iter.zip(first.iter_mut().zip(n.iter_mut())) {
        let (q, r) = (s.checked_div(c), k.checked_div(c));
        match (s.checked_rem(c), k.checked_rem(c), s.checked_add(k), q, r) {
            (Some(0), Some(0), Some(end), Some(q), Some(r)) if k > 0 && end <= d => {
                *f = q;
                *m = r;
            }
            _ => return false,
        }
    }
    true
}

/// `len` zero bytes, or a typed error when the memory cannot be had (a selection sized by a
/// file's dataspace may ask for petabytes: that is an error, not an abort).
pub(crate) fn zeroed(len: usize) -> Result<Vec<u8>> {
    crate::store::try_zeroed(len).ok_or_else(|| {
        Error::arg(
            "selection",
            format!("{len} bytes do not fit in memory (read it in parts with read_slice)"),
        )
    })
}

/// The scaled coordinates of the chunk whose first element is at `offset`.
pub(super) fn grid_position(offset: &[u64], chunk: &[u64], dims: &[u64]) -> Result<Vec<u64>> {
    let bad = || {
        Error::arg(
            "offset",
            format!(
                "{offset:?} is not the first element of a chunk (chunk {chunk:?}) inside {dims:?}"
            ),
        )
    };
    if offset.len() != chunk.len()
        || offset
            .iter()
            .zip(chunk)
            .zip(dims)
            .any(|((&o, &c), &d)| o.checked_rem(c) != Some(0) || o >= d)
    {
        return Err(bad());
    }
    offset
        .iter()
        .zip(chunk)
        .map(|(o, c)| o.checked_div(*c))
        .collect::<Option<_>>()
        .ok_or_else(bad)
}

/// Chunk `scaled`'s buffer is too short for the selection's runs: its layout's element size
/// disagrees with the datatype's.
pub(super) fn short_chunk(path: &str, header: Addr, scaled: &[u64]) -> Error {
    Error::corrupt(
        "dataset",
        header,
        format!("{path}: chunk {scaled:?} is shorter than its elements"),
    )
}

/// Contiguous or compact storage of `len` bytes is too short for the dataspace.
pub(super) fn short_storage(path: &str, header: Addr, len: usize) -> Error {
    Error::corrupt(
        "dataset",
        header,
        format!("{path}: storage of {len} bytes is shorter than its dataspace"),
    )
}

/// Call `copy` on each run of `h` in chunk `scaled` (dims `chunk`) until one does not fit its
/// buffers; whether all fit.
pub(super) fn copy_runs(
    h: &Hyperslab,
    chunk: &[u64],
    scaled: &[u64],
    mut copy: impl FnMut(Run) -> Option<()>,
) -> bool {
    let mut fits = true;
    h.runs(chunk, scaled, |r| {
        if fits {
            fits = copy(r).is_some();
        }
    });
    fits
}

/// A run in bytes: its range in the chunk buffer (from its first element to the end of its
/// last), its range in the selection buffer, and the distance between its elements in the
/// chunk buffer.
pub(super) struct ByteRun {
    chunk: std::ops::Range<usize>,
    memory: std::ops::Range<usize>,
    step: usize,
}

impl ByteRun {
    /// Run `r` of `elem`-byte elements; `None` if a bound overflows, or for a step of 0 (runs
    /// step by at least 1).
    fn new(r: Run, elem: usize) -> Option<ByteRun> {
        let bytes = |n: u64| usize::try_from(n).ok()?.checked_mul(elem);
        let (c, m, n, step) = (
            bytes(r.chunk)?,
            bytes(r.memory)?,
            bytes(r.len)?,
            bytes(r.chunk_step)?,
        );
        if r.chunk_step == 0 {
            return None;
        }
        let span = match r.len.checked_sub(1) {
            None => 0,
            Some(k) => usize::try_from(k)
                .ok()?
                .checked_mul(step)?
                .checked_add(elem)?,
        };
        Some(ByteRun {
            chunk: c..c.checked_add(span)?,
            memory: m..m.checked_add(n)?,
            step,
        })
    }
}

/// Copy run `r` from a chunk buffer into the selection buffer; `None` if it does not fit them.
pub(super) fn copy_out(out: &mut [u8], chunk: &[u8], r: Run, elem: usize) -> Option<()> {
    if elem == 0 {
        return Some(());
    }
    let b = ByteRun::new(r, elem)?;
    let (dst, src) = (out.get_mut(b.memory)?, chunk.get(b.chunk)?);
    if r.chunk_step == 1 {
        dst.copy_from_slice(src);
    } else {
        // `step >= elem`: each piece of `src` starts with one element, the last is one.
        for (d, s) in dst.chunks_exact_mut(elem).zip(src.chunks(b.step)) {
            d.copy_from_slice(s.get(..elem)?);
        }
    }
    Some(())
}

/// Copy run `r` from the selection buffer into a chunk buffer; `None` if it does not fit them.
pub(crate) fn copy_in(chunk: &mut [u8], data: &[u8], r: Run, elem: usize) -> Option<()> {
    if elem == 0 {
        return Some(());
    }
    let b = ByteRun::new(r, elem)?;
    let (dst, src) = (chunk.get_mut(b.chunk)?, data.get(b.memory)?);
    if r.chunk_step == 1 {
        dst.copy_from_slice(src);
    } else {
        // `step >= elem`: each piece of `dst` starts with one element, the last is one.
        for (d, s) in dst.chunks_mut(b.step).zip(src.chunks_exact(elem)) {
            d.get_mut(..elem)?.copy_from_slice(s);
        }
    }
    Some(())
}

/// Copy a hyperslab out of a whole C-order array (contiguous and compact layouts): the array
/// is one chunk the size of the dataset. Whether `whole` held every element selected.
pub(super) fn copy_from_contiguous(
    h: &Hyperslab,
    dims: &[u64],
    whole: &[u8],
    base: u64,
    out: &mut [u8],
    elem: usize,
) -> bool {
    if dims.is_empty() {
        let n = out.len().min(whole.len());
        if let (Some(dst), Some(src)) = (out.get_mut(..n), whole.get(..n)) {
            dst.copy_from_slice(src);
        }
        return true;
    }
    let chunk: Vec<u64> = dims.iter().map(|&d| d.max(1)).collect();
    let zero = vec![0u64; dims.len()];
    // `whole` starts at element `base` of the storage.
    copy_runs(h, &chunk, &zero, |mut r| {
        r.chunk = r.chunk.checked_sub(base)?;
        copy_out(out, whole, r, elem)
    })
}
