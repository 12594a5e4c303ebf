//! Virtual datasets (layout class 3, h5py's `VirtualLayout`): a dataset whose elements are
//! those of other datasets, through mappings of a source selection onto a virtual selection.
//!
//! Opening one reads its mappings (a global heap object), opens each source as libhdf5 does
//! (see [`source`]), and makes every mapping concrete ([`region`]):
//!
//! - a mapping of bounded selections as it is (a source selection of "all" is the source's
//!   current extent);
//! - an unlimited mapping (an `H5S_UNLIMITED` count or block in both selections) clipped to
//!   the source's current extent, the virtual selection cut to as many elements;
//! - a printf mapping (`%b` in a source name; the virtual selection's count unlimited): block
//!   `b` of the virtual selection shows source `b`, for `b` = 0, 1, ... up to the first
//!   source missing (libhdf5's default printf gap of 0).
//!
//! The extent of each unlimited dimension then follows the view ([`VirtualView`]): by
//! default libhdf5's `H5D_VDS_LAST_AVAILABLE`, as far as the furthest unlimited mapping
//! reaches; in `H5D_VDS_FIRST_MISSING` ([`Dataset::set_virtual_view`]), only as far as the
//! shortest one, a last whole block taking the gap after it. Either way at least as far as
//! the bounded mappings reach; the stored dims are ignored there, as libhdf5 ignores them.
//! [`Dataset::refresh`] makes the mappings concrete again (in the same view), so a SWMR
//! reader sees sources another process extends.
//!
//! [`Dataset::set_virtual_view`]: super::Dataset::set_virtual_view
//! [`Dataset::refresh`]: super::Dataset::refresh
//!
//! A read fills the selection with the fill value, then for each mapping in order (a later
//! mapping wins where two overlap) pairs the elements of its virtual selection with those of
//! its source selection in C order, keeps those the read selects, and reads them from the
//! source (one box per batch when the box is not much larger than what it holds). Elements
//! of a missing source, or beyond a source's current extent, keep the fill value.

mod region;
mod source;
pub(crate) mod write;

pub use write::{VirtualMapping, VirtualSelection};

use std::cell::Cell;

use h5chunk_format::Addr;
use h5chunk_format::global_heap::{self, GlobalHeapCollection};
use h5chunk_format::selection::{HyperslabShape, RegularDim, Selection, UNLIMITED};
use h5chunk_format::vds::Mappings;
use smallvec::SmallVec;

use crate::error::{Error, Result};
use crate::file::File;
use crate::select::Hyperslab;
use crate::types::TypeDesc;

use region::{Coords, Region, intervals};
use source::{Name, Source};

impl super::Dataset {
    /// A virtual dataset's mappings as stored (h5py's `dataset.virtual_sources()`): source
    /// file and dataset names, source and virtual selections, in the terms
    /// [`DatasetBuilder::virtual_map`](crate::DatasetBuilder::virtual_map) takes; `None` for
    /// other datasets.
    pub fn virtual_mappings(&self) -> Option<Vec<VirtualMapping>> {
        match &self.shared.state.read().storage {
            super::StorageState::Virtual(v) => Some(
                v.mappings()
                    .iter()
                    .map(|m| VirtualMapping {
                        source_file: m.source_file.clone(),
                        source_dataset: m.source_dataset.clone(),
                        source: VirtualSelection::from_stored(&m.source_selection),
                        target: VirtualSelection::from_stored(&m.virtual_selection),
                    })
                    .collect(),
            ),
            _ => None,
        }
    }

    /// A virtual dataset's view of unlimited mappings that reach unequally far; `None` for
    /// other datasets.
    pub fn virtual_view(&self) -> Option<VirtualView> {
        match &self.shared.state.read().storage {
            super::StorageState::Virtual(v) => Some(v.view),
            _ => None,
        }
    }

    /// Make a virtual dataset's extent in `view` (libhdf5's `H5Pset_virtual_view` on the
    /// dataset access property list, h5py's `virtual_view`): its sources are looked at again
    /// and [`shape`](Self::shape) changes accordingly; [`refresh`](Self::refresh) keeps the
    /// view. Every handle on the dataset sees it. Other datasets: [`Error::InvalidArgument`].
    pub fn set_virtual_view(&self, view: VirtualView) -> Result<()> {
        let mut st = self.shared.write();
        if !matches!(st.storage, super::StorageState::Virtual(_)) {
            return Err(Error::arg(
                "virtual view",
                format!("{} is not a virtual dataset", st.path),
            ));
        }
        let state = super::Dataset::load_with(&self.file, st.header, st.path.clone(), view)?;
        let extent = super::Dataset::extent_of(&state);
        **st = state;
        *self.shared.dims.write() = extent;
        Ok(())
    }
}

/// Virtual datasets read through one another at most this deep (a cycle of mappings ends
/// here with an error instead of a stack overflow).
const MAX_NESTING: u32 = 16;

/// Pieces gathered before their source is read.
const BATCH: usize = 1 << 14;

/// The most runs one read walks through a mapping whose selections are not blocks of one
/// shape (a hostile file's selections cannot make a read walk for hours).
const MAX_RUNS: u64 = 1 << 26;

/// The most printf sources one mapping opens.
const MAX_PRINTF_SOURCES: u64 = 1 << 20;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// How far an unlimited virtual dataset reaches when its sources reach unequally far
/// (libhdf5's `H5Pset_virtual_view`, h5py's `virtual_view`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum VirtualView {
    /// As far as the furthest unlimited mapping reaches, gaps read as the fill value
    /// (`H5D_VDS_LAST_AVAILABLE`, libhdf5's default).
    #[default]
    LastAvailable,
    /// Only as far as every unlimited mapping reaches, up to the first element missing
    /// (`H5D_VDS_FIRST_MISSING`).
    FirstMissing,
}

/// A virtual dataset's state: its mappings made concrete for the current extent.
#[derive(Debug)]
pub(crate) struct Virtual {
    /// The view the extent was made in.
    pub(crate) view: VirtualView,
    path: String,
    dtype: TypeDesc,
    /// One element of fill value, in the file's byte order.
    pub(crate) fill: Vec<u8>,
    pub(crate) dims: Vec<u64>,
    pub(crate) max_dims: Vec<Option<u64>>,
    maps: Vec<Concrete>,
    /// The mappings as stored.
    mappings: Mappings,
}

/// One mapping, or one block of a printf mapping, for the current extent.
#[derive(Debug)]
struct Concrete {
    virt: Region,
    /// The source and its selection; `None`: missing (fill).
    source: Option<(Source, Region)>,
}

/// What a virtual selection is, for making it concrete.
enum VirtKind {
    Bounded(Option<Region>),
    /// A regular hyperslab with one unlimited dimension.
    Unlimited(Vec<RegularDim>, usize),
}

impl Virtual {
    /// The virtual dataset whose layout names the mappings at (`heap`, `index`), with stored
    /// `dims` and `max_dims`, element type `dtype` and `fill`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn load(
        file: &File,
        header: Addr,
        path: &str,
        heap: Option<Addr>,
        index: u32,
        dims: &[u64],
        max_dims: &[Option<u64>],
        dtype: TypeDesc,
        fill: Vec<u8>,
        view: VirtualView,
    ) -> Result<Virtual> {
        nested(|| {
            Virtual::load_nested(
                file, header, path, heap, index, dims, max_dims, dtype, fill, view,
            )
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn load_nested(
        file: &File,
        header: Addr,
        path: &str,
        heap: Option<Addr>,
        index: u32,
        dims: &[u64],
        max_dims: &[Option<u64>],
        dtype: TypeDesc,
        fill: Vec<u8>,
        view: VirtualView,
    ) -> Result<Virtual> {
        let trail = view == VirtualView::FirstMissing;
        let mappings = match heap {
            None => Mappings::default(),
            Some(at) => {
                let f = &file.inner.store;
                let head = f.read(at, global_heap::header_len(f.sizes) as u64)?;
                let size = global_heap::collection_size(&head, at, f.sizes)?;
                let bytes = f.read(at, size)?;
                let collection = GlobalHeapCollection::decode(&bytes, at, f.sizes)?;
                let object = collection.object(index).ok_or_else(|| {
                    Error::corrupt(
                        "layout message",
                        header,
                        format!("{path}: no object {index} in the global heap at {at}"),
                    )
                })?;
                Mappings::decode(object, at, f.sizes)?
            }
        };
        let rank = dims.len();
        if rank == 0 {
            return Err(Error::Unsupported("scalar virtual datasets"));
        }
        let mut dims = dims.to_vec();
        // Per dimension: how far each unlimited mapping along it reaches.
        let mut reach: Vec<Vec<u64>> = vec![Vec::new(); rank];
        let mut bounded_reach = vec![0u64; rank];
        let mut maps: Vec<Concrete> = Vec::new();
        // Mappings whose virtual selection is "all", made once the extent is known.
        let mut all_later: Vec<(usize, Option<(Source, Region)>)> = Vec::new();
        for m in &mappings.entries {
            let file_name = Name::parse(&m.source_file)?;
            let dset_name = Name::parse(&m.source_dataset)?;
            let kind = virt_kind(&m.virtual_selection, rank)?;
            if file_name.is_printf() || dset_name.is_printf() {
                let VirtKind::Unlimited(vdims, u) = kind else {
                    return Err(Error::Unsupported(
                        "printf-named virtual dataset sources without an unlimited virtual \
                         selection",
                    ));
                };
                let vd = vdims
                    .get(u)
                    .copied()
                    .ok_or(Error::Internal("unlimited dimension"))?;
                if vd.count != UNLIMITED || vd.block == UNLIMITED {
                    return Err(Error::Unsupported(
                        "printf-named virtual dataset sources with an unlimited block",
                    ));
                }
                let mut b = 0u64;
                while b < MAX_PRINTF_SOURCES {
                    let Some(src) =
                        source::open(file, &file_name.with_block(b), &dset_name.with_block(b))?
                    else {
                        break;
                    };
                    let src_dims = src.dataset(file)?.shape();
                    let sregion = bounded(&m.source_selection, &src_dims)?;
                    let mut one = vdims.clone();
                    let start = b
                        .checked_mul(vd.stride)
                        .and_then(|o| o.checked_add(vd.start))
                        .ok_or(Error::Unsupported("virtual selections beyond 2^64"))?;
                    if let Some(d) = one.get_mut(u) {
                        *d = RegularDim {
                            start,
                            stride: 1,
                            count: 1,
                            block: vd.block,
                        };
                    }
                    let vregion = Region::regular(&one)?;
                    maps.push(Concrete {
                        virt: vregion,
                        source: Some((src, sregion)),
                    });
                    b = b.saturating_add(1);
                }
                // Each source found fills one block.
                let to = clip_extent(&vd, b.saturating_mul(vd.block), trail);
                extend(&mut reach, u, to);
                continue;
            }
            let src = source::open(file, &file_name.with_block(0), &dset_name.with_block(0))?;
            let src_dims = match &src {
                Some(s) => Some(s.dataset(file)?.shape()),
                None => None,
            };
            match kind {
                VirtKind::Unlimited(vdims, uv) => {
                    let Selection::Hyperslab(h) = &m.source_selection else {
                        return Err(Error::Unsupported(
                            "an unlimited virtual selection mapped from a bounded source one",
                        ));
                    };
                    let HyperslabShape::Regular(sdims) = &h.shape else {
                        return Err(Error::Unsupported(
                            "an unlimited virtual selection mapped from a bounded source one",
                        ));
                    };
                    let us = unlimited_dim(sdims)?.ok_or(Error::Unsupported(
                        "an unlimited virtual selection mapped from a bounded source one",
                    ))?;
                    // The source's elements along its unlimited dimension, to its extent.
                    let (sregion, n) = match &src_dims {
                        Some(sd) => {
                            let mut ivals = Vec::with_capacity(sdims.len());
                            let mut n = 0u64;
                            for (e, d) in sdims.iter().enumerate() {
                                let clip = (e == us).then(|| sd.get(e).copied().unwrap_or(0));
                                let iv = intervals(d, clip)?;
                                if e == us {
                                    n = iv.iter().fold(0u64, |a, i| a.saturating_add(i.1));
                                }
                                ivals.push(iv);
                                region::check_spans(&ivals)?;
                            }
                            (Some(Region::product(&ivals)), n)
                        }
                        None => (None, 0),
                    };
                    // The virtual selection cut to `n` elements along its unlimited dimension.
                    let mut ivals = Vec::with_capacity(vdims.len());
                    for (d, vd) in vdims.iter().enumerate() {
                        ivals.push(if d == uv {
                            first_n(vd, n)?
                        } else {
                            intervals(vd, None)?
                        });
                        region::check_spans(&ivals)?;
                    }
                    let vd = vdims
                        .get(uv)
                        .copied()
                        .ok_or(Error::Internal("unlimited dimension"))?;
                    extend(&mut reach, uv, clip_extent(&vd, n, trail));
                    maps.push(Concrete {
                        virt: Region::product(&ivals),
                        source: src.zip(sregion),
                    });
                }
                VirtKind::Bounded(vregion) => {
                    let source = match (src, src_dims) {
                        (Some(s), Some(sd)) => {
                            let sregion = bounded(&m.source_selection, &sd)?;
                            Some((s, sregion))
                        }
                        _ => None,
                    };
                    match vregion {
                        Some(v) => {
                            for (r, &h) in bounded_reach.iter_mut().zip(v.upper()) {
                                *r = (*r).max(h);
                            }
                            maps.push(Concrete { virt: v, source });
                        }
                        None => all_later.push((maps.len(), source)),
                    }
                }
            }
        }
        for (d, r) in dims.iter_mut().zip(&reach) {
            let combined = match view {
                VirtualView::LastAvailable => r.iter().max(),
                VirtualView::FirstMissing => r.iter().min(),
            };
            if let Some(r) = combined {
                *d = *r;
            }
        }
        for ((d, r), b) in dims.iter_mut().zip(&reach).zip(&bounded_reach) {
            if !r.is_empty() {
                *d = (*d).max(*b);
            }
        }
        for (d, m) in dims.iter().zip(max_dims) {
            if m.is_some_and(|m| *d > m) {
                return Err(Error::corrupt(
                    "virtual dataset mapping",
                    header,
                    format!("{path}: the sources reach {dims:?}, beyond the maximum {max_dims:?}"),
                ));
            }
        }
        // "All" of the virtual dataset is its extent now, in the mappings' order.
        for (at, source) in all_later.into_iter().rev() {
            maps.insert(
                at.min(maps.len()),
                Concrete {
                    virt: Region::all(&dims),
                    source,
                },
            );
        }
        for m in &maps {
            if m.virt.rank() != rank {
                return Err(Error::corrupt(
                    "virtual dataset mapping",
                    header,
                    format!("{path}: a virtual selection of rank {}", m.virt.rank()),
                ));
            }
        }
        Ok(Virtual {
            view,
            path: path.to_owned(),
            dtype,
            fill,
            dims,
            max_dims: max_dims.to_vec(),
            maps,
            mappings,
        })
    }

    /// The mappings as stored, in order.
    pub(crate) fn mappings(&self) -> &[h5chunk_format::vds::Mapping] {
        &self.mappings.entries
    }

    /// Fill `out` (the selection's elements, file byte order) with the elements `h` selects.
    pub(crate) fn read(&self, file: &File, h: &Hyperslab, out: &mut [u8]) -> Result<()> {
        nested(|| self.read_nested(file, h, out))
    }

    fn read_nested(&self, file: &File, h: &Hyperslab, out: &mut [u8]) -> Result<()> {
        let elem = self.dtype.size;
        if elem > 0 && self.fill.len() == elem {
            for e in out.chunks_exact_mut(elem) {
                e.copy_from_slice(&self.fill);
            }
        } else {
            out.fill(0);
        }
        if h.is_empty() || elem == 0 {
            return Ok(());
        }
        let req = Request::new(h);
        for m in &self.maps {
            let Some((src, sregion)) = &m.source else {
                continue;
            };
            if !m.virt.meets(&req.lo, &req.hi) {
                continue;
            }
            let ds = src.dataset(file)?;
            let mut reader = Reader {
                vds: self,
                ds: &ds,
                src_dims: ds.shape(),
                out: &mut *out,
                pieces: Vec::new(),
            };
            match (m.virt.block(), sregion.block()) {
                (Some(v), Some(s)) if squeezed(v.1) == squeezed(s.1) => {
                    block_pieces(&req, v, s, &mut reader)?;
                }
                _ => run_pieces(&req, &m.virt, sregion, &mut reader)?,
            }
            reader.flush()?;
        }
        Ok(())
    }
}

/// Run `f` one level deeper in virtual datasets opened or read through one another: a
/// cycle of mappings (a virtual dataset that is its own source, which crashes libhdf5) ends
/// in an error instead of a stack overflow.
fn nested<R>(f: impl FnOnce() -> Result<R>) -> Result<R> {
    let depth = DEPTH.with(|d| d.get());
    if depth >= MAX_NESTING {
        return Err(Error::Unsupported(
            "virtual datasets whose sources nest more than 16 deep (a cycle of mappings?)",
        ));
    }
    DEPTH.with(|d| d.set(depth.saturating_add(1)));
    let r = f();
    DEPTH.with(|d| d.set(depth));
    r
}

/// The virtual selection of a mapping, for a virtual dataset of rank `rank`.
fn virt_kind(s: &Selection, rank: usize) -> Result<VirtKind> {
    if s.rank().is_some_and(|r| r != rank) {
        return Err(Error::corrupt(
            "virtual dataset mapping",
            None,
            format!(
                "a virtual selection of rank {:?} in a dataset of rank {rank}",
                s.rank()
            ),
        ));
    }
    Ok(match s {
        Selection::None => VirtKind::Bounded(Some(Region::product(&vec![Vec::new(); rank]))),
        Selection::All => VirtKind::Bounded(None),
        Selection::Points(_) => {
            return Err(Error::Unsupported(
                "point selections in a virtual dataset mapping (libhdf5 makes none)",
            ));
        }
        Selection::Hyperslab(h) => match &h.shape {
            HyperslabShape::Blocks(b) => VirtKind::Bounded(Some(Region::blocks(h.rank, b)?)),
            HyperslabShape::Regular(dims) => match unlimited_dim(dims)? {
                Some(u) => VirtKind::Unlimited(dims.clone(), u),
                None => VirtKind::Bounded(Some(Region::regular(dims)?)),
            },
        },
    })
}

/// A bounded source selection over a source of `dims`.
fn bounded(s: &Selection, dims: &[u64]) -> Result<Region> {
    if s.rank().is_some_and(|r| r != dims.len()) {
        return Err(Error::corrupt(
            "virtual dataset mapping",
            None,
            format!(
                "a source selection of rank {:?} for a source of rank {}",
                s.rank(),
                dims.len()
            ),
        ));
    }
    match s {
        Selection::None => Ok(Region::product(&vec![Vec::new(); dims.len()])),
        Selection::All => Ok(Region::all(dims)),
        Selection::Points(_) => Err(Error::Unsupported(
            "point selections in a virtual dataset mapping (libhdf5 makes none)",
        )),
        Selection::Hyperslab(h) => match &h.shape {
            HyperslabShape::Blocks(b) => Region::blocks(h.rank, b),
            HyperslabShape::Regular(d) => {
                if unlimited_dim(d)?.is_some() {
                    return Err(Error::Unsupported(
                        "an unlimited source selection mapped to a bounded virtual one",
                    ));
                }
                Region::regular(d)
            }
        },
    }
}

/// The one dimension whose count or block is unlimited, if any (libhdf5 allows one).
fn unlimited_dim(dims: &[RegularDim]) -> Result<Option<usize>> {
    let mut found = None;
    for (u, d) in dims.iter().enumerate() {
        if d.count == UNLIMITED || d.block == UNLIMITED {
            if found.is_some() || (d.count == UNLIMITED && d.block == UNLIMITED) {
                return Err(Error::corrupt(
                    "virtual dataset mapping",
                    None,
                    "a selection unlimited in more than one way",
                ));
            }
            found = Some(u);
        }
    }
    Ok(found)
}

/// The first `n` indices an unlimited dimension selects.
fn first_n(d: &RegularDim, n: u64) -> Result<Vec<(u64, u64)>> {
    if n == 0 || d.block == 0 {
        return Ok(Vec::new());
    }
    if d.block == UNLIMITED || d.stride == d.block {
        return Ok(vec![(d.start, n)]);
    }
    let full = n.checked_div(d.block).unwrap_or(0);
    let rem = n.checked_rem(d.block).unwrap_or(0);
    if full >= 1 << 20 {
        return Err(Error::Unsupported(
            "virtual dataset selections of more than 2^20 blocks in one dimension",
        ));
    }
    let at = |k: u64| {
        k.checked_mul(d.stride)
            .and_then(|o| o.checked_add(d.start))
            .ok_or(Error::Unsupported("virtual selections beyond 2^64"))
    };
    let mut out = Vec::with_capacity(usize::try_from(full).unwrap_or(0).saturating_add(1));
    for k in 0..full {
        out.push((at(k)?, d.block));
    }
    if rem > 0 {
        out.push((at(full)?, rem));
    }
    Ok(out)
}

/// Record that a mapping unlimited along dimension `u` reaches `to`.
fn extend(reach: &mut [Vec<u64>], u: usize, to: u64) {
    if let Some(r) = reach.get_mut(u) {
        r.push(to);
    }
}

/// The extent of an unlimited dimension `d` that holds its first `n` selected indices
/// (libhdf5's clip extent): up to the last of them, or, with `trail` (the first-missing
/// view), past the gap after a last block that is whole.
fn clip_extent(d: &RegularDim, n: u64, trail: bool) -> u64 {
    if n == 0 {
        return if trail { d.start } else { 0 };
    }
    if d.block == UNLIMITED || d.block == 0 {
        return d.start.saturating_add(n);
    }
    let full = n.checked_div(d.block).unwrap_or(0);
    let rem = n.checked_rem(d.block).unwrap_or(0);
    let at = |k: u64| k.saturating_mul(d.stride).saturating_add(d.start);
    if rem > 0 {
        at(full).saturating_add(rem)
    } else if trail {
        at(full)
    } else {
        at(full.saturating_sub(1)).saturating_add(d.block)
    }
}

/// A shape without its dimensions of size 1.
fn squeezed(shape: &[u64]) -> SmallVec<[u64; 4]> {
    shape.iter().copied().filter(|&n| n != 1).collect()
}

/// A read's selection, with what pairing needs of it.
struct Request {
    /// Per dimension: start, count, stride.
    parts: Vec<(u64, u64, u64)>,
    /// Bounding box: first and one-past-last index.
    lo: Vec<u64>,
    hi: Vec<u64>,
    /// Output elements per step of each dimension.
    mult: Vec<u64>,
}

impl Request {
    fn new(h: &Hyperslab) -> Request {
        let parts = h.parts();
        let lo = parts.iter().map(|p| p.0).collect();
        let hi = parts
            .iter()
            .map(|&(s, c, st)| {
                c.saturating_sub(1)
                    .saturating_mul(st)
                    .saturating_add(s)
                    .saturating_add(1)
            })
            .collect();
        let mut mult = vec![1u64; parts.len()];
        let mut m = 1u64;
        for (slot, p) in mult.iter_mut().zip(&parts).rev() {
            *slot = m;
            m = m.saturating_mul(p.1);
        }
        Request {
            parts,
            lo,
            hi,
            mult,
        }
    }

    /// The step `k` at which dimension `d` selects index `x`.
    fn k_of(&self, d: usize, x: u64) -> Option<u64> {
        let &(s, c, st) = self.parts.get(d)?;
        let off = x.checked_sub(s)?;
        if off.checked_rem(st)? != 0 {
            return None;
        }
        let k = off.checked_div(st)?;
        (k < c).then_some(k)
    }

    /// The steps `[lo, hi)` of dimension `d` whose indices fall in `[a, b)`.
    fn k_range(&self, d: usize, a: u64, b: u64) -> (u64, u64) {
        let Some(&(s, c, st)) = self.parts.get(d) else {
            return (0, 0);
        };
        let lo = a.saturating_sub(s).div_ceil(st.max(1));
        let hi = b.saturating_sub(s).div_ceil(st.max(1)).min(c);
        (lo, hi.max(lo))
    }
}

/// Elements of a source to copy: `n` elements from `src`, `step` apart along `axis`, to
/// consecutive output elements from `out`.
#[derive(Debug)]
struct Piece {
    src: Coords,
    axis: usize,
    step: u64,
    n: u64,
    out: u64,
}

/// Pairings of a mapping whose two selections are blocks of the same shape but for
/// dimensions of size 1: only the rows the read selects are visited.
fn block_pieces(
    req: &Request,
    (vs, vsh): (&[u64], &[u64]),
    (ss, ssh): (&[u64], &[u64]),
    reader: &mut Reader<'_, '_>,
) -> Result<()> {
    let rank = vs.len();
    // Which source dimension each virtual dimension of size other than 1 walks.
    let src_dims: Vec<usize> = (0..ssh.len()).filter(|&e| ssh.get(e) != Some(&1)).collect();
    let mut map: Vec<Option<usize>> = vec![None; rank];
    let mut next = src_dims.iter();
    for (d, &n) in vsh.iter().enumerate() {
        if n != 1
            && let Some(slot) = map.get_mut(d)
        {
            *slot = next.next().copied();
        }
    }
    // The steps of each dimension inside the block.
    let mut ranges = Vec::with_capacity(rank);
    for (d, (&s, &n)) in vs.iter().zip(vsh).enumerate() {
        let r = req.k_range(d, s, s.saturating_add(n));
        if r.0 >= r.1 {
            return Ok(());
        }
        ranges.push(r);
    }
    let last = rank.saturating_sub(1);
    let (klo, khi) = ranges.get(last).copied().unwrap_or((0, 0));
    let step = req.parts.get(last).map_or(1, |p| p.2);
    let axis = map
        .get(last)
        .copied()
        .flatten()
        .unwrap_or(ssh.len().saturating_sub(1));
    let mut ks: Vec<u64> = ranges.iter().map(|r| r.0).collect();
    loop {
        let mut src: Coords = ss.iter().copied().collect();
        let mut out = 0u64;
        for (d, &k) in ks.iter().enumerate() {
            let (s, _, st) = req.parts.get(d).copied().unwrap_or((0, 0, 1));
            let x = k.saturating_mul(st).saturating_add(s);
            if let Some(Some(e)) = map.get(d)
                && let (Some(c), Some(&v0)) = (src.get_mut(*e), vs.get(d))
            {
                *c = c.saturating_add(x.saturating_sub(v0));
            }
            out = out.saturating_add(k.saturating_mul(req.mult.get(d).copied().unwrap_or(0)));
        }
        reader.push(Piece {
            src,
            axis,
            step,
            n: khi.saturating_sub(klo),
            out,
        })?;
        // The next row: the odometer over every dimension but the last.
        let mut d = last;
        loop {
            if d == 0 {
                return Ok(());
            }
            d = d.saturating_sub(1);
            let (Some(k), Some(&(lo, hi))) = (ks.get_mut(d), ranges.get(d)) else {
                return Ok(());
            };
            *k = k.saturating_add(1);
            if *k < hi {
                break;
            }
            *k = lo;
        }
    }
}

/// Pairings of any two selections of as many elements: their runs walked side by side.
fn run_pieces(
    req: &Request,
    virt: &Region,
    src: &Region,
    reader: &mut Reader<'_, '_>,
) -> Result<()> {
    let rank = virt.rank();
    let last = rank.saturating_sub(1);
    let src_last = src.rank().saturating_sub(1);
    let (s_l, _, st_l) = req.parts.get(last).copied().unwrap_or((0, 0, 1));
    let hi0 = req.hi.first().copied().unwrap_or(0);
    let mut vr = virt.runs();
    let mut sr = src.runs();
    let mut v = vr.next();
    let mut s = sr.next();
    let mut walked = 0u64;
    while let (Some((vc, vn)), Some((sc, sn))) = (&mut v, &mut s) {
        walked = walked.saturating_add(1);
        if walked > MAX_RUNS {
            return Err(Error::Unsupported(
                "virtual dataset mappings of more than 2^26 runs that are not blocks of one shape",
            ));
        }
        if vc.first().is_some_and(|&x| x >= hi0) {
            // C order: every later run lies past the read too.
            break;
        }
        let len = (*vn).min(*sn);
        // The rows above the last dimension must be selected.
        let mut base = Some(0u64);
        for d in 0..last {
            base = match (base, vc.get(d).and_then(|&x| req.k_of(d, x))) {
                (Some(b), Some(k)) => {
                    Some(b.saturating_add(k.saturating_mul(req.mult.get(d).copied().unwrap_or(0))))
                }
                _ => None,
            };
        }
        if let Some(base) = base {
            let a = vc.get(last).copied().unwrap_or(0);
            let (klo, khi) = req.k_range(last, a, a.saturating_add(len));
            if klo < khi {
                let first = klo.saturating_mul(st_l).saturating_add(s_l);
                let mut src_at = sc.clone();
                if let Some(c) = src_at.get_mut(src_last) {
                    *c = c.saturating_add(first.saturating_sub(a));
                }
                reader.push(Piece {
                    src: src_at,
                    axis: src_last,
                    step: st_l,
                    n: khi.saturating_sub(klo),
                    out: base.saturating_add(klo),
                })?;
            }
        }
        if let Some(c) = vc.get_mut(last) {
            *c = c.saturating_add(len);
        }
        if let Some(c) = sc.get_mut(src_last) {
            *c = c.saturating_add(len);
        }
        *vn = vn.saturating_sub(len);
        *sn = sn.saturating_sub(len);
        if *vn == 0 {
            v = vr.next();
        }
        if *sn == 0 {
            s = sr.next();
        }
    }
    Ok(())
}

/// Reads the pieces of one mapping from its source into the output.
struct Reader<'v, 'o> {
    vds: &'v Virtual,
    ds: &'v super::Dataset,
    /// The source's extent now: elements beyond keep the fill value.
    src_dims: Vec<u64>,
    out: &'o mut [u8],
    pieces: Vec<Piece>,
}

impl Reader<'_, '_> {
    fn push(&mut self, p: Piece) -> Result<()> {
        if p.n > 0 {
            self.pieces.push(p);
        }
        if self.pieces.len() >= BATCH {
            self.flush()?;
        }
        Ok(())
    }

    /// The source's elements `h` selects, in the virtual dataset's type and byte order.
    fn source_bytes(&self, h: &Hyperslab) -> Result<Vec<u8>> {
        let from = self.ds.dtype();
        let to = self.vds.dtype;
        let mut raw = self.ds.read_selection_raw(h)?;
        if from != to {
            if !crate::convert::convertible(from, to) {
                return Err(Error::Unsupported(
                    "virtual dataset sources of an element type that does not convert to the \
                     virtual dataset's",
                ));
            }
            let n = raw.len().checked_div(from.size).unwrap_or(0);
            let mut conv = vec![0u8; n.saturating_mul(to.size)];
            crate::convert::convert(from, &raw, to, &mut conv).map_err(|u| {
                Error::ValueOutOfRange {
                    object: self.vds.path.clone(),
                    index: u.index as u64,
                    value: u.value,
                    to: to.numpy(),
                }
            })?;
            raw = conv;
        }
        to.to_from_le(&mut raw);
        Ok(raw)
    }

    /// Read the gathered pieces: one box of the source when it is not much larger than
    /// what they hold, else piece by piece.
    fn flush(&mut self) -> Result<()> {
        let pieces = std::mem::take(&mut self.pieces);
        if pieces.is_empty() {
            return Ok(());
        }
        let rank = self.src_dims.len();
        let mut lo = vec![u64::MAX; rank];
        let mut hi = vec![0u64; rank];
        let mut needed = 0u64;
        for p in &pieces {
            needed = needed.saturating_add(p.n);
            for (e, (l, h)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
                let c = p.src.get(e).copied().unwrap_or(0);
                let end = if e == p.axis {
                    p.n.saturating_sub(1)
                        .saturating_mul(p.step)
                        .saturating_add(c)
                } else {
                    c
                };
                *l = (*l).min(c);
                *h = (*h).max(end.saturating_add(1));
            }
        }
        for (h, &d) in hi.iter_mut().zip(&self.src_dims) {
            *h = (*h).min(d);
        }
        if lo.iter().zip(&hi).any(|(l, h)| l >= h) {
            // Wholly beyond the source's extent: fill.
            return Ok(());
        }
        let shape: Vec<u64> = lo
            .iter()
            .zip(&hi)
            .map(|(l, h)| h.saturating_sub(*l))
            .collect();
        let volume = shape.iter().fold(1u64, |a, &n| a.saturating_mul(n));
        let elem = self.vds.dtype.size as u64;
        let boxed = volume <= needed.saturating_mul(4).max(1 << 16)
            && volume.saturating_mul(elem) <= 256 << 20;
        if boxed {
            let h = Hyperslab::new(&lo, &shape, None, &self.src_dims)?;
            let buf = self.source_bytes(&h)?;
            for p in &pieces {
                self.copy_piece(p, &buf, &lo, &shape)?;
            }
        } else {
            for p in &pieces {
                let Some(n) = self.in_extent(p) else {
                    continue;
                };
                let mut count: Vec<u64> = vec![1; rank];
                let mut stride: Vec<u64> = vec![1; rank];
                if let (Some(c), Some(s)) = (count.get_mut(p.axis), stride.get_mut(p.axis)) {
                    *c = n;
                    *s = p.step.max(1);
                }
                let h = Hyperslab::new(&p.src, &count, Some(&stride), &self.src_dims)?;
                let buf = self.source_bytes(&h)?;
                let at = usize::try_from(p.out.saturating_mul(elem)).unwrap_or(usize::MAX);
                let dst = at
                    .checked_add(buf.len())
                    .and_then(|end| self.out.get_mut(at..end))
                    .ok_or(Error::Internal("a virtual read past its output"))?;
                dst.copy_from_slice(&buf);
            }
        }
        Ok(())
    }

    /// How many of the piece's elements lie inside the source's extent (`None`: none).
    fn in_extent(&self, p: &Piece) -> Option<u64> {
        if p.src.len() != self.src_dims.len()
            || p.src.iter().zip(&self.src_dims).any(|(c, d)| c >= d)
        {
            return None;
        }
        let c = p.src.get(p.axis)?;
        let d = self.src_dims.get(p.axis)?;
        let room = d
            .saturating_sub(*c)
            .saturating_sub(1)
            .checked_div(p.step.max(1))?;
        Some(p.n.min(room.saturating_add(1)))
    }

    /// Copy a piece out of the box `[lo, lo + shape)` of the source, read as `buf`.
    fn copy_piece(&mut self, p: &Piece, buf: &[u8], lo: &[u64], shape: &[u64]) -> Result<()> {
        let Some(n) = self.in_extent(p) else {
            return Ok(());
        };
        let elem = self.vds.dtype.size;
        // The box's element strides.
        let mut strides = vec![1u64; shape.len()];
        let mut m = 1u64;
        for (s, &n) in strides.iter_mut().zip(shape).rev() {
            *s = m;
            m = m.saturating_mul(n);
        }
        let mut first = 0u64;
        for ((&c, &l), &s) in p.src.iter().zip(lo).zip(&strides) {
            first = first.saturating_add(c.saturating_sub(l).saturating_mul(s));
        }
        let along = strides
            .get(p.axis)
            .copied()
            .unwrap_or(1)
            .saturating_mul(p.step);
        let bad = || Error::Internal("a virtual read past its buffers");
        if along == 1 {
            let from = usize::try_from(first)
                .map_err(|_| bad())?
                .saturating_mul(elem);
            let len = usize::try_from(n).map_err(|_| bad())?.saturating_mul(elem);
            let to = usize::try_from(p.out)
                .map_err(|_| bad())?
                .saturating_mul(elem);
            let src = buf.get(from..from.saturating_add(len)).ok_or_else(bad)?;
            let dst = self
                .out
                .get_mut(to..to.saturating_add(len))
                .ok_or_else(bad)?;
            dst.copy_from_slice(src);
            return Ok(());
        }
        for i in 0..n {
            let at = first.saturating_add(i.saturating_mul(along));
            let from = usize::try_from(at).map_err(|_| bad())?.saturating_mul(elem);
            let to = usize::try_from(p.out.saturating_add(i))
                .map_err(|_| bad())?
                .saturating_mul(elem);
            let src = buf.get(from..from.saturating_add(elem)).ok_or_else(bad)?;
            let dst = self
                .out
                .get_mut(to..to.saturating_add(elem))
                .ok_or_else(bad)?;
            dst.copy_from_slice(src);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use h5chunk_format::selection::{Hyperslab as Slab, HyperslabEncoding, Points, PointsEncoding};

    fn regular(dims: Vec<RegularDim>) -> Selection {
        Selection::Hyperslab(Slab {
            encoding: HyperslabEncoding::V2,
            rank: dims.len(),
            shape: HyperslabShape::Regular(dims),
        })
    }

    #[test]
    fn point_selections_are_unsupported_by_name() {
        let points = Selection::Points(Points {
            encoding: PointsEncoding::V1,
            rank: 1,
            coords: vec![1, 3],
        });
        assert!(matches!(
            virt_kind(&points, 1),
            Err(Error::Unsupported(w)) if w.contains("point selections")
        ));
        assert!(matches!(
            bounded(&points, &[4]),
            Err(Error::Unsupported(w)) if w.contains("point selections")
        ));
    }

    #[test]
    fn unlimited_source_under_bounded_virtual_is_unsupported() {
        let s = regular(vec![RegularDim {
            start: 0,
            stride: 1,
            count: 1,
            block: UNLIMITED,
        }]);
        assert!(matches!(bounded(&s, &[4]), Err(Error::Unsupported(_))));
        // Unlimited both ways in one dimension is no selection libhdf5 makes.
        let s = regular(vec![RegularDim {
            start: 0,
            stride: 1,
            count: UNLIMITED,
            block: UNLIMITED,
        }]);
        assert!(matches!(virt_kind(&s, 1), Err(Error::Corrupt { .. })));
        // A rank other than the dataset's.
        assert!(matches!(virt_kind(&s, 2), Err(Error::Corrupt { .. })));
    }

    #[test]
    fn first_n_cuts_the_last_block() {
        let d = RegularDim {
            start: 1,
            stride: 4,
            count: UNLIMITED,
            block: 3,
        };
        assert_eq!(first_n(&d, 7).unwrap(), vec![(1, 3), (5, 3), (9, 1)]);
        assert_eq!(first_n(&d, 6).unwrap(), vec![(1, 3), (5, 3)]);
        assert_eq!(first_n(&d, 0).unwrap(), vec![]);
        let d = RegularDim {
            start: 2,
            stride: 1,
            count: 1,
            block: UNLIMITED,
        };
        assert_eq!(first_n(&d, 5).unwrap(), vec![(2, 5)]);
    }

    #[test]
    fn requests_step_through_their_dimensions() {
        let h = Hyperslab::new(&[1, 2], &[3, 4], Some(&[2, 3]), &[10, 20]).unwrap();
        let r = Request::new(&h);
        assert_eq!(r.lo, vec![1, 2]);
        assert_eq!(r.hi, vec![6, 12]);
        assert_eq!(r.mult, vec![4, 1]);
        assert_eq!(r.k_of(0, 3), Some(1));
        assert_eq!(r.k_of(0, 4), None);
        assert_eq!(r.k_of(0, 7), None);
        assert_eq!(r.k_range(1, 4, 12), (1, 4));
        assert_eq!(r.k_range(1, 0, 2), (0, 0));
    }
}
