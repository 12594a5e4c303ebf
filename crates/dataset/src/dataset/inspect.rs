//! What `h5chunk ls`, `inspect` and `check` see of one dataset: how its data is stored, its
//! filters, the shape of its chunk index, and a verification of every chunk it records.

use std::collections::{BTreeMap, HashSet};
use std::fmt;

use h5chunk_format::Addr;
use h5chunk_format::chunk_record::ChunkRecord;
use h5chunk_format::message::{Filter, Message, filter_pipeline::id};

use super::{Dataset, DatasetState, StorageState};
use crate::error::Result;
use crate::index::IndexKind;

/// The Blosc2 filter's identifier (hdf5-blosc2), which the format crate does not name.
const BLOSC2: u16 = 32026;
/// PyTables' LZO filter's identifier.
const LZO: u16 = 305;

/// How a dataset's raw data is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageKind {
    /// In chunks, found through a chunk index.
    Chunked,
    /// In one contiguous block.
    Contiguous,
    /// Inside the object header.
    Compact,
    /// Nowhere: a virtual dataset's elements are those of its source datasets.
    Virtual,
}

/// One filter of a dataset's pipeline, as the file describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterInfo {
    /// The filter identifier (1 deflate, 2 shuffle, 3 fletcher32, 32000 LZF, ...).
    pub id: u16,
    /// Its name: the registered one for known filters, else the stored one (may be empty).
    pub name: String,
    /// Its client data (deflate: the level).
    pub client_data: Vec<u32>,
    /// Whether a chunk may skip it.
    pub optional: bool,
}

impl FilterInfo {
    fn of(f: &Filter) -> FilterInfo {
        let name = match crate::filters::filter_name(f.id) {
            Some(n) => n.to_owned(),
            None => String::from_utf8_lossy(f.name()).into_owned(),
        };
        FilterInfo {
            id: f.id,
            name,
            client_data: f.client_data.clone(),
            optional: f.is_optional(),
        }
    }
}

impl fmt::Display for FilterInfo {
    /// `deflate(4)`, `shuffle`, `fletcher32`, `lzf`, `lz4`, `lz4(block 4096)`,
    /// `bitshuffle(lz4)`, `bitshuffle(zstd 3, block 256)`, `zstd(3)`, `bzip2(9)`, `blosc(lz4 5, shuffle)`, `blosc2(zstd 5, bitshuffle)`, `szip(nn, 8 pixels per block)`, or `filter 307 (bzip2)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cd = |i: usize| self.client_data.get(i).copied();
        match self.id {
            id::DEFLATE => write!(f, "deflate({})", self.client_data.first().unwrap_or(&6)),
            id::SHUFFLE | id::FLETCHER32 | id::LZF => f.write_str(&self.name),
            LZO => f.write_str("lzo"),
            id::LZ4 => match cd(0) {
                None | Some(0) => f.write_str("lz4"),
                Some(block) => write!(f, "lz4(block {block})"),
            },
            id::ZSTD => write!(f, "zstd({})", cd(0).map_or(3, |l| l as i32)),
            id::BZIP2 => write!(f, "bzip2({})", cd(0).unwrap_or(9)),
            // Client data: revision, version, type size, chunk bytes, level, shuffle, codec.
            id::BLOSC => {
                let codec = match cd(6) {
                    None | Some(0) => "blosclz",
                    Some(1) => "lz4",
                    Some(2) => "lz4hc",
                    Some(3) => "snappy",
                    Some(4) => "zlib",
                    Some(5) => "zstd",
                    Some(_) => "unknown codec",
                };
                let shuffle = match cd(5) {
                    Some(0) => "noshuffle",
                    None | Some(1) => "shuffle",
                    Some(2) => "bitshuffle",
                    Some(_) => "unknown shuffle",
                };
                write!(f, "blosc({codec} {}, {shuffle})", cd(4).unwrap_or(5))
            }
            // Client data: revision, block size, type size, chunk bytes, level, filter, codec
            // (then chunk rank and dimensions).
            BLOSC2 => {
                let codec = match cd(6) {
                    None | Some(0) => "blosclz",
                    Some(1) => "lz4",
                    Some(2) => "lz4hc",
                    Some(4) => "zlib",
                    Some(5) => "zstd",
                    Some(_) => "unknown codec",
                };
                let filter = match cd(5) {
                    Some(0) => "nofilter",
                    None | Some(1) => "shuffle",
                    Some(2) => "bitshuffle",
                    Some(3) => "delta",
                    Some(4) => "trunc_prec",
                    Some(_) => "unknown filter",
                };
                write!(f, "blosc2({codec} {}, {filter})", cd(4).unwrap_or(5))
            }
            // Client data: options mask, pixels per block, bits per pixel, pixels per scanline.
            id::SZIP => {
                let method = if cd(0).unwrap_or(0) & 32 != 0 {
                    "nn"
                } else {
                    "ec"
                };
                write!(f, "szip({method}, {} pixels per block)", cd(1).unwrap_or(0))
            }
            id::BITSHUFFLE => {
                let mut parts = Vec::new();
                match cd(4) {
                    Some(2) => parts.push("lz4".to_owned()),
                    Some(3) => parts.push(format!("zstd {}", cd(5).map_or(0, |l| l as i32))),
                    None | Some(0) => {}
                    Some(other) => parts.push(format!("compression {other}")),
                }
                if let Some(block) = cd(3).filter(|&b| b != 0) {
                    parts.push(format!("block {block}"));
                }
                if parts.is_empty() {
                    f.write_str("bitshuffle")
                } else {
                    write!(f, "bitshuffle({})", parts.join(", "))
                }
            }
            other if self.name.is_empty() => write!(f, "filter {other}"),
            other => write!(f, "filter {other} ({})", self.name),
        }
    }
}

/// The layout and chunk index of a chunked dataset, as `h5chunk inspect` prints it.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexReport {
    /// The index kind.
    pub kind: IndexKind,
    /// The layout message version.
    pub layout_version: u8,
    /// Allocated chunks.
    pub chunks: u64,
    /// Chunks per dimension at the current extent.
    pub grid: Vec<u64>,
    /// Levels of the index: nodes on a root-to-leaf path of a tree, block levels from header
    /// to data of an array (header, index block, super blocks, data blocks, pages), the
    /// maximum height of a skip list; `None` for indexes without a structure.
    pub depth: Option<u64>,
    /// Index blocks or nodes by type name (`EAHD`, `EADB`, `TREE`, ...): the distinct blocks
    /// a cold iteration over every chunk record loads from the file.
    pub blocks_by_type: BTreeMap<&'static str, u64>,
    /// Bytes of index metadata in the file.
    pub metadata_bytes: u64,
    /// Bytes of the stored (possibly filtered) chunks.
    pub stored_bytes: u64,
}

impl IndexReport {
    /// Index metadata bytes per allocated chunk (`None` with no chunk allocated).
    pub fn metadata_bytes_per_chunk(&self) -> Option<f64> {
        (self.chunks > 0).then(|| self.metadata_bytes as f64 / self.chunks as f64)
    }
}

/// The block types of the array indexes, from the header down to the data.
const ARRAY_LEVELS: [&[&str]; 2] = [
    &["EAHD", "EAIB", "EASB", "EADB", "EADB page"],
    &["FAHD", "FADB", "FADB page"],
];

impl Dataset {
    /// The address of the dataset's object header.
    pub(crate) fn header_addr(&self) -> Addr {
        self.shared.state.read().header
    }

    /// How the raw data is stored.
    pub fn storage_kind(&self) -> StorageKind {
        match &self.shared.state.read().storage {
            StorageState::Chunked(_) => StorageKind::Chunked,
            StorageState::Contiguous { .. } => StorageKind::Contiguous,
            StorageState::Compact { .. } => StorageKind::Compact,
            StorageState::Virtual(_) => StorageKind::Virtual,
        }
    }

    /// The storage's name as `h5chunk inspect`, the view and the wasm build print it:
    /// `chunked`, `compact`, `virtual`, `external` (contiguous in external files) or
    /// `contiguous`.
    pub fn layout_name(&self) -> &'static str {
        match self.storage_kind() {
            StorageKind::Chunked => "chunked",
            StorageKind::Compact => "compact",
            StorageKind::Virtual => "virtual",
            StorageKind::Contiguous if self.external_files().is_some() => "external",
            StorageKind::Contiguous => "contiguous",
        }
    }

    /// One element of the fill value in the file's byte order (empty when the file defines
    /// none: reads then see zeros).
    pub fn fill_value_raw(&self) -> Vec<u8> {
        match &self.shared.state.read().storage {
            StorageState::Chunked(c) => c.fill.clone(),
            StorageState::Contiguous { fill, .. } => fill.clone(),
            StorageState::Compact { .. } => Vec::new(),
            StorageState::Virtual(v) => v.fill.clone(),
        }
    }

    /// Whether the dataset stores its partial edge chunks unfiltered
    /// (`H5Pset_chunk_opts`'s `H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS`) and has a filter
    /// pipeline they skip.
    pub fn edge_chunks_unfiltered(&self) -> bool {
        match &self.shared.state.read().storage {
            StorageState::Chunked(c) => {
                c.pipeline.is_some()
                    && c.layout.flags.contains(
                        h5chunk_format::message::ChunkedFlags::DONT_FILTER_PARTIAL_BOUND_CHUNKS,
                    )
            }
            _ => false,
        }
    }

    /// A contiguous dataset's data in the file: address (relative to
    /// [`File::base_address`](crate::File::base_address)) and size; `None` for other layouts
    /// and for storage never allocated.
    pub fn contiguous_extent(&self) -> Option<(u64, u64)> {
        match &self.shared.state.read().storage {
            StorageState::Contiguous {
                addr: Some(a),
                size,
                ..
            } => Some((a.get(), *size)),
            _ => None,
        }
    }

    /// A compact dataset's data, as stored in its object header.
    pub fn compact_data(&self) -> Option<Vec<u8>> {
        match &self.shared.state.read().storage {
            StorageState::Compact { data } => Some(data.clone()),
            _ => None,
        }
    }

    /// The filter pipeline, in the order filters apply when writing (empty if unfiltered).
    pub fn filters(&self) -> Result<Vec<FilterInfo>> {
        let header = self.header_addr();
        for m in self.file.inner.store.messages(header)? {
            if let Message::FilterPipeline(p) = m {
                return Ok(p.filters.iter().map(FilterInfo::of).collect());
            }
        }
        Ok(Vec::new())
    }

    /// The chunk index and its blocks (`None` if the dataset is not chunked). Counting the
    /// blocks evicts the file's clean metadata from the cache, then iterates every record.
    pub fn inspect(&self) -> Result<Option<IndexReport>> {
        let (Some(kind), Some(layout_version)) = (self.index_kind(), self.layout_version()) else {
            return Ok(None);
        };
        let chunks = self.chunks()?;
        self.file.evict_metadata()?;
        let before = self.file.cache_stats();
        let again = self.chunks()?;
        let after = self.file.cache_stats();
        let mut blocks_by_type = BTreeMap::new();
        for (name, s) in &after.by_type {
            let n = s.misses.saturating_sub(before.of(name).misses);
            if n > 0 {
                blocks_by_type.insert(*name, n);
            }
        }
        debug_assert_eq!(chunks.len(), again.len());
        // An open array or skip list keeps its header (or tail) in memory, so a cold iteration
        // does not load it again: it is counted here, once, when the structure exists.
        let header_type = match kind {
            IndexKind::ExtensibleArray => Some("EAHD"),
            IndexKind::FixedArray => Some("FAHD"),
            IndexKind::SkipList => Some("SKLT"),
            IndexKind::BTree2 => Some("BTHD"),
            _ => None,
        };
        if let (Some(t), Some((_, Some(_)))) = (header_type, self.layout_full()) {
            blocks_by_type.entry(t).or_insert(1);
        }
        let f = &self.file.inner.store;
        let mut st = self.shared.write();
        let (grid, depth) = match &mut st.storage {
            StorageState::Chunked(c) => (c.shape.grid(), c.index.depth(f)?),
            _ => (Vec::new(), None),
        };
        drop(st);
        let depth = match (kind, depth) {
            (_, Some(d)) => Some(d),
            (IndexKind::ExtensibleArray | IndexKind::FixedArray, None) => ARRAY_LEVELS
                .iter()
                .find(|levels| {
                    levels
                        .first()
                        .is_some_and(|t| blocks_by_type.contains_key(t))
                })
                .map(|levels| {
                    levels
                        .iter()
                        .filter(|t| blocks_by_type.contains_key(*t))
                        .count() as u64
                }),
            (IndexKind::SkipList, None) => match self.layout_index() {
                Some(h5chunk_format::message::ChunkIndex::SkipList(p)) => {
                    Some(u64::from(p.max_height))
                }
                _ => None,
            },
            _ => None,
        };
        Ok(Some(IndexReport {
            kind,
            layout_version,
            chunks: chunks.len() as u64,
            grid,
            depth,
            blocks_by_type,
            metadata_bytes: self.index_metadata_bytes()?,
            stored_bytes: chunks.iter().map(|c| c.size).sum(),
        }))
    }

    fn layout_index(&self) -> Option<h5chunk_format::message::ChunkIndex> {
        self.layout_full().map(|l| l.0)
    }

    fn layout_full(&self) -> Option<(h5chunk_format::message::ChunkIndex, Option<Addr>)> {
        match &self.shared.state.read().storage {
            StorageState::Chunked(c) => Some(c.index.layout()),
            _ => None,
        }
    }

    /// Records of every allocated chunk (scaled coordinates and record), for [`verify_chunks`].
    ///
    /// [`verify_chunks`]: Dataset::verify_chunks
    pub(crate) fn chunk_records(&self) -> Result<Vec<(Vec<u64>, ChunkRecord)>> {
        let f = &self.file.inner.store;
        let mut st = self.shared.write();
        let StorageState::Chunked(c) = &mut st.storage else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        let rank = c.shape.chunk.len();
        c.index.for_each(f, &mut |s, r| {
            if r.addr.is_some() {
                // The single-chunk index names its chunk by no coordinates at all.
                let s = if s.is_empty() {
                    vec![0; rank]
                } else {
                    s.to_vec()
                };
                out.push((s, r));
            }
        })?;
        c.index.validate(f)?;
        Ok(out)
    }

    /// Check the invariants of the chunk records and decode every chunk (which verifies
    /// fletcher32 checksums and compressed streams), reporting what is wrong to `problem`
    /// (with the address of the chunk concerned) and calling `progress` once per chunk.
    pub(crate) fn verify_chunks(
        &self,
        records: &[(Vec<u64>, ChunkRecord)],
        problem: &mut dyn FnMut(Option<Addr>, String),
        progress: &mut dyn FnMut(),
    ) -> Result<()> {
        let f = &self.file.inner.store;
        let eof = f.storage.len().map_err(h5chunk_cache::Error::from)?;
        let dims = self.shared.dims.read().0.clone();
        let mut st = self.shared.write();
        let elem = st.dtype.size as u64;
        let DatasetState { path, storage, .. } = &mut **st;
        // Contiguous and compact storage hold every element: as many bytes as the dataspace
        // needs, inside the file (what a read would otherwise find out).
        let needed = dims
            .iter()
            .try_fold(elem, |n, &d| n.checked_mul(d))
            .unwrap_or(u64::MAX);
        let c = match storage {
            StorageState::Chunked(c) => c,
            StorageState::Contiguous { addr, size, .. } => {
                if addr.is_some() && *size < needed {
                    problem(
                        *addr,
                        format!("contiguous storage of {size} bytes for {needed}"),
                    );
                }
                if let Some(a) = addr
                    && a.get().checked_add(*size).is_none_or(|end| end > eof)
                {
                    problem(
                        Some(*a),
                        format!(
                            "contiguous storage of {size} bytes runs past the file's end ({eof})"
                        ),
                    );
                }
                return Ok(());
            }
            StorageState::Compact { data } => {
                if (data.len() as u64) < needed {
                    problem(
                        None,
                        format!("compact storage of {} bytes for {needed}", data.len()),
                    );
                }
                return Ok(());
            }
            // Its mappings were decoded and its sources opened on open.
            StorageState::Virtual(_) => return Ok(()),
        };
        let max_grid: Vec<Option<u64>> = c
            .shape
            .max_dims
            .iter()
            .zip(&c.shape.chunk)
            .map(|(m, &ch)| m.map(|m| m.div_ceil(ch.max(1))))
            .collect();
        let mut seen = HashSet::new();
        let mut extents = Vec::new();
        for (scaled, r) in records {
            let Some(addr) = r.addr else { continue };
            if scaled.len() != max_grid.len()
                || scaled
                    .iter()
                    .zip(&max_grid)
                    .any(|(&s, m)| m.is_some_and(|m| s >= m))
            {
                problem(
                    Some(addr),
                    format!("chunk {scaled:?} lies outside the maximum chunk grid {max_grid:?}"),
                );
                progress();
                continue;
            }
            if !seen.insert(scaled.clone()) {
                problem(Some(addr), format!("chunk {scaled:?} is recorded twice"));
            }
            let filtered = c.pipeline.is_some() && !c.skips_filters(scaled);
            let len = if filtered {
                r.size
            } else {
                c.shape.chunk_bytes
            };
            if filtered && len == 0 {
                problem(
                    Some(addr),
                    format!("chunk {scaled:?} has a stored size of 0"),
                );
            }
            match addr.get().checked_add(len) {
                Some(end) if end <= eof => extents.push((addr.get(), end, scaled.clone())),
                _ => {
                    problem(
                        Some(addr),
                        format!(
                            "chunk {scaled:?} ({len} bytes) ends past the end of the file \
                             ({eof} bytes)"
                        ),
                    );
                    progress();
                    continue;
                }
            }
            if let Err(e) = c.load(f, path, scaled) {
                problem(Some(addr), format!("chunk {scaled:?}: {e}"));
            }
            progress();
        }
        extents.sort();
        for w in extents.windows(2) {
            if let [(a0, e0, s0), (a1, _, s1)] = w
                && e0 > a1
            {
                problem(
                    Some(Addr(*a1)),
                    format!(
                        "chunk {s1:?} overlaps chunk {s0:?} (at {:#x}, {} bytes)",
                        a0,
                        // Extents end where they start or after.
                        e0.saturating_sub(*a0)
                    ),
                );
            }
        }
        Ok(())
    }
}
