//! Virtual datasets written: [`DatasetBuilder::virtual_map`](crate::DatasetBuilder::virtual_map)
//! collects mappings; creating the dataset stores them as a version 0 global heap block (what
//! libhdf5 1.10 and later read) in a new global heap collection, named by a version 4 layout
//! message of class 3.
//!
//! Selections are encoded so that libhdf5 1.10 reads them: a regular hyperslab (bounded or
//! not) as hyperslab version 2, a union of blocks as version 1 when its coordinates fit 32
//! bits (else version 2), "all" as itself.

use h5chunk_format::Addr;
use h5chunk_format::selection::{
    Hyperslab, HyperslabEncoding, HyperslabShape, RegularDim, Selection, UNLIMITED,
};
use h5chunk_format::vds::{Mapping, Mappings, NameEncoding, VERSION_0};

use crate::error::{Error, Result};
use crate::store::Store;

/// One side of a virtual dataset mapping: which elements of the source dataset, or where in
/// the virtual dataset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VirtualSelection {
    /// Every element (of the source: its extent at read time).
    All,
    /// A regular hyperslab, one entry per dimension; a count or a block may be
    /// [`VirtualSelection::UNLIMITED`] (in one dimension), as `H5S_UNLIMITED`.
    Regular {
        /// First index.
        start: Vec<u64>,
        /// Distance between block starts.
        stride: Vec<u64>,
        /// Number of blocks.
        count: Vec<u64>,
        /// Block size.
        block: Vec<u64>,
    },
    /// A union of blocks, each its start and its shape.
    Blocks(Vec<(Vec<u64>, Vec<u64>)>),
}

impl VirtualSelection {
    /// The unlimited count or block (`H5S_UNLIMITED`).
    pub const UNLIMITED: u64 = UNLIMITED;

    /// The block `start` of `shape` (h5py's `layout[a:b, c:d]`).
    pub fn block(start: &[u64], shape: &[u64]) -> VirtualSelection {
        VirtualSelection::Regular {
            start: start.to_vec(),
            stride: vec![1; start.len()],
            count: vec![1; start.len()],
            block: shape.to_vec(),
        }
    }

    /// A selection as a file stores it (a point selection as blocks of one element; none as
    /// no blocks).
    pub(crate) fn from_stored(s: &Selection) -> VirtualSelection {
        match s {
            Selection::All => VirtualSelection::All,
            Selection::None => VirtualSelection::Blocks(Vec::new()),
            Selection::Points(p) => VirtualSelection::Blocks(
                p.coords
                    .chunks(p.rank.max(1))
                    .map(|c| (c.to_vec(), vec![1; c.len()]))
                    .collect(),
            ),
            Selection::Hyperslab(h) => match &h.shape {
                HyperslabShape::Regular(dims) => VirtualSelection::Regular {
                    start: dims.iter().map(|d| d.start).collect(),
                    stride: dims.iter().map(|d| d.stride).collect(),
                    count: dims.iter().map(|d| d.count).collect(),
                    block: dims.iter().map(|d| d.block).collect(),
                },
                HyperslabShape::Blocks(coords) => VirtualSelection::Blocks(
                    coords
                        .chunks(h.rank.saturating_mul(2).max(1))
                        .map(|b| {
                            let (lo, hi) = b.split_at(b.len().checked_div(2).unwrap_or(0));
                            let shape = lo
                                .iter()
                                .zip(hi)
                                .map(|(l, h)| h.saturating_sub(*l).saturating_add(1))
                                .collect();
                            (lo.to_vec(), shape)
                        })
                        .collect(),
                ),
            },
        }
    }

    fn rank(&self) -> Option<usize> {
        match self {
            VirtualSelection::All => None,
            VirtualSelection::Regular { start, .. } => Some(start.len()),
            VirtualSelection::Blocks(b) => b.first().map(|(s, _)| s.len()),
        }
    }

    fn unlimited(&self) -> bool {
        matches!(self, VirtualSelection::Regular { count, block, .. }
            if count.contains(&UNLIMITED) || block.contains(&UNLIMITED))
    }

    /// Elements selected, when bounded and known without the dataspace.
    fn len(&self) -> Option<u64> {
        match self {
            VirtualSelection::All => None,
            VirtualSelection::Regular { count, block, .. } => {
                if self.unlimited() {
                    return None;
                }
                count
                    .iter()
                    .zip(block)
                    .try_fold(1u64, |n, (&c, &b)| n.checked_mul(c)?.checked_mul(b))
            }
            VirtualSelection::Blocks(b) => b.iter().try_fold(0u64, |n, (_, shape)| {
                n.checked_add(shape.iter().try_fold(1u64, |m, &s| m.checked_mul(s))?)
            }),
        }
    }

    /// The encoding libhdf5 1.10 reads.
    fn encode(&self) -> Result<Selection> {
        let bad = |why: String| Error::arg("virtual selection", why);
        Ok(match self {
            VirtualSelection::All => Selection::All,
            VirtualSelection::Regular {
                start,
                stride,
                count,
                block,
            } => {
                let rank = start.len();
                if rank == 0
                    || rank > h5chunk_format::selection::MAX_RANK
                    || stride.len() != rank
                    || count.len() != rank
                    || block.len() != rank
                {
                    return Err(bad(format!(
                        "start, stride, count and block of ranks {}, {}, {}, {}",
                        rank,
                        stride.len(),
                        count.len(),
                        block.len()
                    )));
                }
                let mut dims = Vec::with_capacity(rank);
                let mut unlimited = 0u32;
                for u in 0..rank {
                    let d = RegularDim {
                        start: start.get(u).copied().unwrap_or(0),
                        stride: stride.get(u).copied().unwrap_or(1),
                        count: count.get(u).copied().unwrap_or(0),
                        block: block.get(u).copied().unwrap_or(0),
                    };
                    if d.count == UNLIMITED || d.block == UNLIMITED {
                        unlimited = unlimited.saturating_add(1);
                    }
                    if d.count != 1 && d.count != 0 && d.stride < d.block {
                        return Err(bad(format!(
                            "dimension {u}: stride {} under block {}",
                            d.stride, d.block
                        )));
                    }
                    dims.push(d);
                }
                if unlimited > 1 {
                    return Err(bad("unlimited in more than one dimension".into()));
                }
                Selection::Hyperslab(Hyperslab {
                    encoding: HyperslabEncoding::V2,
                    rank,
                    shape: HyperslabShape::Regular(dims),
                })
            }
            VirtualSelection::Blocks(blocks) => {
                let rank = self.rank().unwrap_or(0);
                if rank == 0 || rank > h5chunk_format::selection::MAX_RANK {
                    return Err(bad("a union of no blocks, or of rank 0".into()));
                }
                let mut coords =
                    Vec::with_capacity(blocks.len().saturating_mul(rank.saturating_mul(2)));
                let mut ends = Vec::new();
                for (start, shape) in blocks {
                    if start.len() != rank || shape.len() != rank || shape.contains(&0) {
                        return Err(bad(format!("a block {start:?} of shape {shape:?}")));
                    }
                    coords.extend_from_slice(start);
                    for (s, n) in start.iter().zip(shape) {
                        let end = s
                            .checked_add(*n)
                            .and_then(|e| e.checked_sub(1))
                            .ok_or_else(|| bad(format!("a block {start:?} of shape {shape:?}")))?;
                        ends.push(end);
                    }
                    coords.append(&mut ends);
                }
                let narrow = coords.iter().all(|&c| c <= u64::from(u32::MAX));
                Selection::Hyperslab(Hyperslab {
                    encoding: if narrow {
                        HyperslabEncoding::V1
                    } else {
                        HyperslabEncoding::V2
                    },
                    rank,
                    shape: HyperslabShape::Blocks(coords),
                })
            }
        })
    }
}

/// One mapping of a virtual dataset ([`Dataset::virtual_mappings`](crate::Dataset::virtual_mappings)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VirtualMapping {
    /// The source file's name as stored (`.`: the virtual dataset's own file; `%b`: the block
    /// number of an unlimited mapping).
    pub source_file: String,
    /// The source dataset's path, as stored.
    pub source_dataset: String,
    /// The elements of the source.
    pub source: VirtualSelection,
    /// Where they show in the virtual dataset.
    pub target: VirtualSelection,
}

/// One mapping of a virtual dataset being built.
#[derive(Clone, Debug)]
pub(crate) struct VirtualMap {
    pub(crate) file: String,
    pub(crate) dataset: String,
    pub(crate) source: VirtualSelection,
    pub(crate) target: VirtualSelection,
}

/// Check the mappings of a virtual dataset of `rank` and store them in a new global heap
/// collection: its address and the object's index.
pub(crate) fn store_mappings(f: &Store, rank: usize, maps: &[VirtualMap]) -> Result<(Addr, u32)> {
    let mut entries = Vec::with_capacity(maps.len());
    for (i, m) in maps.iter().enumerate() {
        let bad = |why: &str| Error::arg("virtual_map", format!("mapping {i}: {why}"));
        if m.file.is_empty() || m.dataset.is_empty() {
            return Err(bad("a source file and a source dataset are named"));
        }
        if m.target.rank().is_some_and(|r| r != rank) {
            return Err(bad("the virtual selection's rank is not the dataset's"));
        }
        let printf = m.file.contains("%b") || m.dataset.contains("%b");
        match (m.target.unlimited(), m.source.unlimited()) {
            (true, false) if !printf => {
                return Err(bad(
                    "an unlimited virtual selection needs an unlimited source selection or \
                     %b in a source name",
                ));
            }
            (false, true) => {
                return Err(bad(
                    "an unlimited source selection needs an unlimited virtual one",
                ));
            }
            (true, true) if printf => {
                return Err(bad("a %b mapping's source selection is bounded"));
            }
            _ => {}
        }
        if let (Some(a), Some(b)) = (m.source.len(), m.target.len())
            && a != b
        {
            return Err(bad(&format!("{a} source elements for {b} virtual ones")));
        }
        entries.push(Mapping {
            source_file: m.file.clone(),
            source_dataset: m.dataset.clone(),
            source_selection: m.source.encode()?,
            virtual_selection: m.target.encode()?,
            file_encoding: NameEncoding::Stored,
            dataset_encoding: NameEncoding::Stored,
        });
    }
    let block = Mappings {
        version: VERSION_0,
        entries,
    }
    .encode(f.sizes)?;
    let len = u32::try_from(block.len())
        .map_err(|_| Error::arg("virtual_map", "mappings of more than 4 GiB"))?;
    // Written at once: the layout message that points at it is not followed by the header's
    // flush dependencies (`meta` knows chunked layouts only).
    let ids = crate::values::store_objects(f, &[&block], &[len], true)?;
    match ids.first() {
        Some(h5chunk_format::global_heap::HeapId {
            collection: Some(at),
            index,
            ..
        }) => Ok((*at, *index)),
        _ => Err(Error::Internal("the mappings stored nowhere")),
    }
}
