//! External storage (the External Data Files message, libhdf5's `H5Pset_external`, h5py's
//! `external=`): a contiguous dataset whose bytes are regions of other files, one after the
//! other (the raw-storage note's striping of one dataset across files).
//!
//! Names are resolved as libhdf5 2.0 resolves them: an absolute name as it is; a relative one
//! under the prefix `HDF5_EXTFILE_PREFIX` gives when set (a leading `${ORIGIN}` standing for
//! the HDF5 file's directory), else relative to the current working directory. A part past the
//! end of its file reads as zeros, as libhdf5 reads it; a missing file is an error naming it.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use h5chunk_format::Addr;
use h5chunk_format::cursor::Decoder;
use h5chunk_format::local_heap::{LocalHeap, LocalHeapData};
use h5chunk_format::message::ExternalFiles;

use crate::error::{Error, Result};
use crate::select::{Hyperslab, Run};
use crate::store::Store;

/// The environment variable libhdf5 reads for the prefix of relative external file names.
pub(crate) const PREFIX_ENV: &str = "HDF5_EXTFILE_PREFIX";

/// One file's part of an externally stored dataset's bytes
/// ([`Dataset::external_files`](crate::Dataset::external_files)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalFile {
    /// The name as stored.
    pub name: String,
    /// The file, resolved as libhdf5 resolves it.
    pub path: PathBuf,
    /// Where the part starts in the file.
    pub offset: u64,
    /// Its bytes; `None`: unlimited.
    pub size: Option<u64>,
}

impl super::Dataset {
    /// The files holding the dataset's bytes, in order, for external storage
    /// ([`DatasetBuilder::external`](crate::DatasetBuilder::external)); `None` otherwise.
    pub fn external_files(&self) -> Option<Vec<ExternalFile>> {
        match &self.shared.state.read().storage {
            super::StorageState::Contiguous {
                external: Some(e), ..
            } => Some(
                e.parts
                    .iter()
                    .map(|p| ExternalFile {
                        name: p.name.clone(),
                        path: p.path.clone(),
                        offset: p.offset,
                        size: (p.size != u64::MAX).then_some(p.size),
                    })
                    .collect(),
            ),
            _ => None,
        }
    }
}

/// One file's part of the dataset's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Part {
    /// The name as stored.
    pub name: String,
    /// The file, resolved.
    pub path: PathBuf,
    /// Where the part starts in the file.
    pub offset: u64,
    /// Its bytes (`u64::MAX`: unlimited).
    pub size: u64,
}

/// A dataset's external parts, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct External {
    pub parts: Vec<Part>,
}

/// The directory `${ORIGIN}` stands for: the HDF5 file's (the store's name is its path).
fn origin(store_name: &str) -> PathBuf {
    Path::new(store_name)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// `name` resolved with `prefix` (libhdf5's rules, see the module docs).
pub(crate) fn resolve(name: &str, prefix: Option<&str>, store_name: &str) -> PathBuf {
    let name_path = Path::new(name);
    if name_path.is_absolute() {
        return name_path.to_path_buf();
    }
    match prefix.filter(|p| !p.is_empty()) {
        None => name_path.to_path_buf(),
        Some(p) => {
            let dir = match p.strip_prefix("${ORIGIN}") {
                Some(rest) => {
                    let base = origin(store_name);
                    let rest = rest.trim_start_matches('/');
                    if rest.is_empty() {
                        base
                    } else {
                        base.join(rest)
                    }
                }
                None => PathBuf::from(p),
            };
            dir.join(name_path)
        }
    }
}

impl External {
    /// The parts an External Data Files message (`body`) names, their names read from its
    /// local heap.
    pub(crate) fn load(f: &Store, header: Addr, path: &str, body: &[u8]) -> Result<External> {
        if f.name.contains("://") {
            return Err(Error::Unsupported(
                "external storage of a file read from object storage",
            ));
        }
        let corrupt = |what: String| Error::corrupt("external data files message", header, what);
        let msg = ExternalFiles::decode(&mut Decoder::new(
            body,
            header,
            f.sizes,
            "external data files message",
        ))?;
        let at = msg.heap;
        let head = f.read(at, LocalHeap::encoded_len(f.sizes) as u64)?;
        let heap = LocalHeap::decode(&head, at, f.sizes)?;
        // The store checks the size against the file's end before allocating.
        let data = f.read(heap.data_segment_address, heap.data_segment_size)?;
        let names = LocalHeapData::decode(
            &data,
            heap.data_segment_address,
            f.sizes,
            heap.free_list_head,
        )?;
        let prefix = std::env::var(PREFIX_ENV).ok();
        let mut parts = Vec::with_capacity(msg.slots.len());
        for (i, s) in msg.slots.iter().enumerate() {
            if s.size.is_none() && i.saturating_add(1) != msg.slots.len() {
                return Err(corrupt(format!(
                    "{path}: an unlimited part before the last"
                )));
            }
            let name = String::from_utf8_lossy(names.name(s.name_offset)?).into_owned();
            if name.is_empty() {
                return Err(corrupt(format!("{path}: part {i} names no file")));
            }
            parts.push(Part {
                path: resolve(&name, prefix.as_deref(), &f.name),
                name,
                offset: s.offset,
                size: s.size.unwrap_or(u64::MAX),
            });
        }
        Ok(External { parts })
    }

    /// The bytes the parts hold together (saturating: an unlimited part holds any number).
    pub(crate) fn capacity(&self) -> u64 {
        self.parts
            .iter()
            .fold(0u64, |n, p| n.saturating_add(p.size))
    }

    /// Each part's share of the dataset's bytes `[from, from + len)`: the part, the offset in
    /// its file, and the range of those bytes within `[0, len)`.
    fn spans(&self, from: u64, len: u64) -> Vec<(&Part, u64, std::ops::Range<usize>)> {
        let end = from.saturating_add(len);
        let mut out = Vec::new();
        let mut start = 0u64;
        for p in &self.parts {
            let stop = start.saturating_add(p.size);
            let (lo, hi) = (from.max(start), end.min(stop));
            if lo < hi {
                let (a, b) = (lo.saturating_sub(from), hi.saturating_sub(from));
                if let (Ok(a), Ok(b)) = (usize::try_from(a), usize::try_from(b)) {
                    out.push((p, p.offset.saturating_add(lo.saturating_sub(start)), a..b));
                }
            }
            start = stop;
            if start >= end {
                break;
            }
        }
        out
    }

    /// Fill `out` with the dataset's bytes from `from`. Bytes past a file's end read as zeros;
    /// a missing file is an error, or zeros when `missing_ok` (before a write: the write
    /// creates it).
    fn read_or_zeros(&self, from: u64, out: &mut [u8], missing_ok: bool) -> Result<()> {
        let len = out.len() as u64;
        if self.capacity() < from.saturating_add(len) {
            return Err(Error::corrupt(
                "external data files message",
                None,
                format!(
                    "the external files hold {} bytes, not the {} the dataset needs",
                    self.capacity(),
                    from.saturating_add(len)
                ),
            ));
        }
        for (p, at, range) in self.spans(from, len) {
            let Some(buf) = out.get_mut(range) else {
                return Err(Error::Internal("an external span outside its buffer"));
            };
            let file = match std::fs::File::open(&p.path) {
                Ok(f) => f,
                Err(e) if missing_ok && e.kind() == std::io::ErrorKind::NotFound => {
                    buf.fill(0);
                    continue;
                }
                Err(e) => return Err(io(&p.path, e)),
            };
            let mut done = 0usize;
            while let Some(rest) = buf.get_mut(done..).filter(|r| !r.is_empty()) {
                match read_at(&file, rest, at.saturating_add(done as u64)) {
                    Ok(0) => {
                        rest.fill(0);
                        break;
                    }
                    Ok(n) => done = done.saturating_add(n),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(io(&p.path, e)),
                }
            }
        }
        Ok(())
    }

    /// The dataset's bytes from the selection `h`'s first element to its last (a dataset of
    /// `dims`, `elem`-byte elements), and the first element's index. Missing files read as
    /// zeros when `missing_ok`.
    pub(crate) fn read_span(
        &self,
        h: &Hyperslab,
        dims: &[u64],
        elem: usize,
        missing_ok: bool,
    ) -> Result<(u64, Vec<u8>)> {
        let (lo, hi) = super::read::span(h, dims);
        let (from, to) = (
            lo.saturating_mul(elem as u64),
            hi.saturating_mul(elem as u64),
        );
        let len = usize::try_from(to.saturating_sub(from))
            .map_err(|_| Error::arg("selection", "more bytes than memory can address"))?;
        let mut buf = Vec::new();
        buf.try_reserve_exact(len)
            .map_err(|_| Error::arg("selection", "does not fit in memory"))?;
        buf.resize(len, 0);
        self.read_or_zeros(from, &mut buf, missing_ok)?;
        Ok((lo, buf))
    }

    /// Write the selection `h` of a dataset of `dims` (`data`: its elements of `elem` bytes, in
    /// the file's byte order): the bytes from its first to its last element are read (missing
    /// files as zeros), the selection copied in, and written back.
    pub(crate) fn write_selection(
        &self,
        h: &Hyperslab,
        dims: &[u64],
        data: &[u8],
        elem: usize,
    ) -> Result<()> {
        let (lo, mut buf) = self.read_span(h, dims, elem, true)?;
        let from = lo.saturating_mul(elem as u64);
        let whole: Vec<u64> = dims.iter().map(|&d| d.max(1)).collect();
        let zero = vec![0u64; dims.len()];
        let mut fits = true;
        h.runs(&whole, &zero, |r| {
            let r = Run {
                chunk: r.chunk.saturating_sub(lo),
                ..r
            };
            fits &= super::grid::copy_in(&mut buf, data, r, elem).is_some();
        });
        if !fits {
            return Err(Error::Internal("a selection outside its span"));
        }
        self.write(from, &buf)
    }

    /// Write `data` as the dataset's bytes from `from`, creating files that do not exist (never
    /// truncating one: several datasets may share a file).
    pub(crate) fn write(&self, from: u64, data: &[u8]) -> Result<()> {
        let len = data.len() as u64;
        if self.capacity() < from.saturating_add(len) {
            return Err(Error::arg(
                "selection",
                "past the end of the dataset's external storage",
            ));
        }
        for (p, at, range) in self.spans(from, len) {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(&p.path)
                .map_err(|e| io(&p.path, e))?;
            let bytes = data.get(range).unwrap_or_default();
            write_all_at(&file, bytes, at).map_err(|e| io(&p.path, e))?;
            (&file).flush().map_err(|e| io(&p.path, e))?;
        }
        Ok(())
    }
}

/// A new local heap holding `names` (after the empty name at offset 0, as libhdf5 lays an
/// external file list's heap out): its header's address and each name's offset.
pub(crate) fn create_name_heap(f: &Store, names: &[&str]) -> Result<(Addr, Vec<u64>)> {
    let size = names.iter().fold(8usize, |n, name| {
        n.saturating_add(name.len().saturating_add(1).next_multiple_of(8))
    });
    // Built first (the segment may grow while names go in), then placed.
    let mut heap = LocalHeapData::new(size.saturating_add(16), Addr(0), f.sizes);
    heap.insert_name(b"")?;
    let mut offsets = Vec::with_capacity(names.len());
    for name in names {
        offsets.push(heap.insert_name(name.as_bytes())?);
    }
    let data_at = f.allocate(heap.len())?;
    let header_at = f.allocate(LocalHeap::encoded_len(f.sizes) as u64)?;
    let header = LocalHeap {
        data_segment_size: heap.len(),
        free_list_head: heap.free_list_head(),
        data_segment_address: data_at,
    };
    let mut bytes = Vec::new();
    header.encode(f.sizes, &mut bytes)?;
    f.write(header_at, &bytes)?;
    f.write(data_at, heap.bytes())?;
    Ok((header_at, offsets))
}

fn io(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        file: path.display().to_string(),
        source,
    }
}

/// Read what there is of `buf.len()` bytes at `offset` (`pread`; a seek and a read where there
/// is no positioned I/O: each call opens the file for itself, so no cursor is shared).
fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_at(file, buf, offset)
    }
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = file;
        f.seek(SeekFrom::Start(offset))?;
        f.read(buf)
    }
}

/// Write all of `data` at `offset` (`pwrite`, or a seek and a write; see [`read_at`]).
fn write_all_at(file: &std::fs::File, data: &[u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(file, data, offset)
    }
    #[cfg(not(unix))]
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = file;
        f.seek(SeekFrom::Start(offset))?;
        f.write_all(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_as_libhdf5_resolves_them() {
        let file = "/data/run/f.h5";
        assert_eq!(
            resolve("/abs/x.bin", Some("/p"), file),
            Path::new("/abs/x.bin")
        );
        assert_eq!(resolve("x.bin", None, file), Path::new("x.bin"));
        assert_eq!(resolve("x.bin", Some(""), file), Path::new("x.bin"));
        assert_eq!(
            resolve("x.bin", Some("/raw"), file),
            Path::new("/raw/x.bin")
        );
        assert_eq!(resolve("x.bin", Some("rel"), file), Path::new("rel/x.bin"));
        assert_eq!(
            resolve("x.bin", Some("${ORIGIN}"), file),
            Path::new("/data/run/x.bin")
        );
        assert_eq!(
            resolve("x.bin", Some("${ORIGIN}/sub"), file),
            Path::new("/data/run/sub/x.bin")
        );
    }

    #[test]
    fn spans_split_a_range_over_the_parts() {
        let part = |size| Part {
            name: String::new(),
            path: PathBuf::new(),
            offset: 100,
            size,
        };
        let e = External {
            parts: vec![part(10), part(20), part(u64::MAX)],
        };
        let s: Vec<(u64, std::ops::Range<usize>)> = e
            .spans(5, 30)
            .into_iter()
            .map(|(_, at, r)| (at, r))
            .collect();
        assert_eq!(s, [(105, 0..5), (100, 5..25), (100, 25..30)]);
        assert_eq!(e.capacity(), u64::MAX);
    }
}
