//! One adapter per chunk index: what makes a generic structure (v1 B-tree, fixed array,
//! extensible array, v2 B-tree, skip list) a *chunk* index, mapping scaled chunk coordinates to
//! chunk records. Single-chunk and implicit indexes have no structure and live here whole.

use std::fmt;
use std::num::NonZeroU64;

use h5chunk_cache::ProxyId;
use h5chunk_format::Addr;
use h5chunk_format::chunk_record::{ChunkRecord, RecordCodec};
use h5chunk_format::message::{ChunkIndex as LayoutIndex, FilteredChunk};

use crate::error::{Error, Result};
use crate::index::linear::LinearIndex;
use crate::index::select::IndexKind;
use crate::store::Store;

/// What an index needs to know about its dataset.
#[derive(Clone, Debug)]
pub(crate) struct Shape {
    /// Current dimensions.
    pub dims: Vec<u64>,
    /// Maximum dimensions (`None`: unlimited).
    pub max_dims: Vec<Option<u64>>,
    /// Chunk dimensions.
    pub chunk: Vec<u64>,
    /// Bytes of an unfiltered chunk.
    pub chunk_bytes: u64,
    /// How records are encoded.
    pub codec: RecordCodec,
}

impl Shape {
    /// Chunks per dimension at the current size.
    pub fn grid(&self) -> Vec<u64> {
        self.dims
            .iter()
            .zip(&self.chunk)
            .map(|(&d, &c)| d.div_ceil(c))
            .collect()
    }
}

/// A chunk index of one dataset.
pub(crate) trait ChunkIndex: Send + Sync + fmt::Debug {
    /// Its kind.
    fn kind(&self) -> IndexKind;
    /// What the layout message stores: the index type with its parameters, and its address.
    fn layout(&self) -> (LayoutIndex, Option<Addr>);
    /// The record of the chunk at `scaled`, if allocated.
    /// Shared: lookups of one dataset run side by side.
    fn get(&self, f: &Store, scaled: &[u64]) -> Result<Option<ChunkRecord>>;
    /// Record (insert or replace) the chunk at `scaled`. With `proxy`, the index block that
    /// holds the record waits for that chunk proxy: it is not written before the chunk.
    fn insert(
        &mut self,
        f: &Store,
        scaled: &[u64],
        rec: ChunkRecord,
        proxy: Option<ProxyId>,
    ) -> Result<()>;
    /// Record many chunks whose bytes are in the file already (so no index block has to wait
    /// for them): [`insert`](Self::insert) without a proxy on each, in order. Indexes that can
    /// update a block's records together (the extensible array) override it.
    fn insert_many(&mut self, f: &Store, items: &[(&[u64], ChunkRecord)]) -> Result<()> {
        for (scaled, rec) in items {
            self.insert(f, scaled, *rec, None)?;
        }
        Ok(())
    }
    /// Forget the chunk at `scaled`, returning its record.
    fn remove(&mut self, f: &Store, scaled: &[u64]) -> Result<Option<ChunkRecord>>;
    /// Every allocated chunk, in the index's order.
    fn for_each(&mut self, f: &Store, visit: &mut dyn FnMut(&[u64], ChunkRecord)) -> Result<()>;
    /// The dataset shrank to `dims` (growing changes nothing in any index until a chunk is
    /// written there, so a resize that grows does not call this).
    fn set_dims(&mut self, _f: &Store, _dims: &[u64]) -> Result<()> {
        Ok(())
    }
    /// Whether the index can hold every chunk of an extent of `dims` (checked on open: a
    /// dataspace grown past its index's capacity is damage, which every read would meet).
    fn check_extent(&self, _dims: &[u64], _chunk: &[u64]) -> Result<()> {
        Ok(())
    }
    /// Bytes of metadata the index occupies in the file.
    fn metadata_bytes(&mut self, _f: &Store) -> Result<u64> {
        Ok(0)
    }
    /// Levels of a tree-shaped index (1 for a lone leaf), if it is one.
    fn depth(&mut self, _f: &Store) -> Result<Option<u64>> {
        Ok(None)
    }
    /// Check the structure's invariants beyond what iterating it checks (key order, counts,
    /// uniform depth), where the structure's crate can.
    fn validate(&mut self, _f: &Store) -> Result<()> {
        Ok(())
    }
}

/// The single-chunk index: the layout message holds the chunk's address (and, filtered, its
/// size and filter mask).
#[derive(Debug)]
pub(crate) struct Single {
    record: Option<ChunkRecord>,
    filtered: bool,
}

impl Single {
    pub fn new(index: &LayoutIndex, address: Option<Addr>, filtered: bool) -> Single {
        let record = address.map(|addr| {
            let (size, mask) = match index {
                LayoutIndex::Single(Some(FilteredChunk { size, filter_mask })) => {
                    (*size, *filter_mask)
                }
                _ => (0, 0),
            };
            ChunkRecord {
                addr: Some(addr),
                size,
                mask,
            }
        });
        Single { record, filtered }
    }
}

fn only_chunk(scaled: &[u64]) -> Result<()> {
    if scaled.iter().all(|&s| s == 0) {
        Ok(())
    } else {
        Err(Error::arg(
            "chunk coordinates",
            format!("chunk {scaled:?} of a single-chunk dataset"),
        ))
    }
}

impl ChunkIndex for Single {
    fn kind(&self) -> IndexKind {
        IndexKind::Single
    }
    fn layout(&self) -> (LayoutIndex, Option<Addr>) {
        let filtered = self.filtered.then(|| {
            let r = self.record.unwrap_or_default();
            FilteredChunk {
                size: r.size,
                filter_mask: r.mask,
            }
        });
        (
            LayoutIndex::Single(filtered),
            self.record.and_then(|r| r.addr),
        )
    }
    fn get(&self, _f: &Store, scaled: &[u64]) -> Result<Option<ChunkRecord>> {
        only_chunk(scaled)?;
        Ok(self.record)
    }
    fn insert(
        &mut self,
        _f: &Store,
        scaled: &[u64],
        rec: ChunkRecord,
        _proxy: Option<ProxyId>,
    ) -> Result<()> {
        only_chunk(scaled)?;
        self.record = Some(rec);
        Ok(())
    }
    fn remove(&mut self, _f: &Store, scaled: &[u64]) -> Result<Option<ChunkRecord>> {
        only_chunk(scaled)?;
        Ok(self.record.take())
    }
    fn for_each(&mut self, _f: &Store, visit: &mut dyn FnMut(&[u64], ChunkRecord)) -> Result<()> {
        if let Some(r) = self.record {
            visit(&vec![0; 0][..], r);
        }
        Ok(())
    }
}

/// The implicit index: every chunk of the maximum grid allocated in one run, chunk `i` at
/// `address + i × chunk_bytes`.
#[derive(Debug)]
pub(crate) struct Implicit {
    address: Option<Addr>,
    linear: LinearIndex,
    chunk_bytes: u64,
    rank: usize,
}

impl Implicit {
    pub fn new(shape: &Shape, address: Option<Addr>) -> Result<Implicit> {
        Ok(Implicit {
            address,
            linear: LinearIndex::for_dataset(&shape.max_dims, &shape.chunk)?,
            chunk_bytes: shape.chunk_bytes,
            rank: shape.dims.len(),
        })
    }

    /// Allocate the whole run (implicit indexes are always allocated early).
    pub fn allocate(&mut self, f: &Store) -> Result<Addr> {
        let n = self.linear.chunk_count().ok_or_else(|| {
            Error::corrupt(
                "layout",
                None,
                "an implicit index with an unlimited dimension",
            )
        })?;
        let total = n
            .checked_mul(self.chunk_bytes)
            .ok_or_else(|| Error::arg("shape", "implicit storage larger than 2^64 bytes"))?;
        let at = f.allocate_raw(total)?;
        self.address = Some(at);
        Ok(at)
    }
}

impl ChunkIndex for Implicit {
    fn kind(&self) -> IndexKind {
        IndexKind::Implicit
    }
    fn layout(&self) -> (LayoutIndex, Option<Addr>) {
        (LayoutIndex::Implicit, self.address)
    }
    fn get(&self, _f: &Store, scaled: &[u64]) -> Result<Option<ChunkRecord>> {
        let (Some(base), Some(i)) = (self.address, self.linear.index(scaled)) else {
            return Ok(None);
        };
        let addr = i
            .checked_mul(self.chunk_bytes)
            .and_then(|off| base.get().checked_add(off))
            .ok_or_else(|| {
                Error::corrupt("layout", base, format!("implicit chunk {i} lies past 2^64"))
            })?;
        Ok(Some(ChunkRecord {
            addr: Some(Addr(addr)),
            size: self.chunk_bytes,
            mask: 0,
        }))
    }
    fn insert(
        &mut self,
        f: &Store,
        scaled: &[u64],
        rec: ChunkRecord,
        _proxy: Option<ProxyId>,
    ) -> Result<()> {
        match self.get(f, scaled)? {
            Some(r) if r.addr == rec.addr => Ok(()),
            _ => Err(Error::Internal("moving a chunk of an implicit index")),
        }
    }
    fn remove(&mut self, _f: &Store, _scaled: &[u64]) -> Result<Option<ChunkRecord>> {
        // Implicit storage is never freed chunk by chunk.
        Ok(None)
    }
    /// The whole run of chunks lies inside the file: a damaged layout (dims, chunk dims or
    /// address) cannot make a walk enumerate more chunks than the file holds.
    fn validate(&mut self, f: &Store) -> Result<()> {
        let Some(base) = self.address else {
            return Ok(());
        };
        let end = self
            .linear
            .chunk_count()
            .and_then(|n| n.checked_mul(self.chunk_bytes))
            .and_then(|total| base.get().checked_add(total));
        let eof = f
            .cache
            .eoa()
            .get()
            .max(f.storage.len().map_err(|e| f.io(e))?);
        if end.is_none_or(|end| end > eof) {
            return Err(Error::corrupt(
                "layout",
                base,
                format!("implicit chunk storage runs past the end of the file ({eof})"),
            ));
        }
        Ok(())
    }
    fn for_each(&mut self, f: &Store, visit: &mut dyn FnMut(&[u64], ChunkRecord)) -> Result<()> {
        self.validate(f)?;
        let n = self.linear.chunk_count().unwrap_or(0);
        for i in 0..n {
            let scaled = self.linear.scaled(i);
            debug_assert_eq!(scaled.len(), self.rank);
            if let Some(r) = self.get(f, &scaled)? {
                visit(&scaled, r);
            }
        }
        Ok(())
    }
}

/// The slot arrays of the array-like indexes: a chunk's record is slot `i`, `i` being its
/// linear index (`LinearIndex`: row-major over the maximum grid, the unlimited dimension
/// swizzled to the front). [`Linear`] turns one into a chunk index.
pub(crate) trait Slots: Send + Sync + fmt::Debug {
    /// The index kind.
    const KIND: IndexKind;
    /// The layout message's form of the index and its address.
    fn layout(&self) -> (LayoutIndex, Option<Addr>);
    /// Slot `i` (undefined address: unset).
    fn slot(&self, f: &Store, i: u64) -> Result<ChunkRecord>;
    /// Set slot `i`; with `proxy`, the block holding it waits for that chunk.
    fn set_slot(
        &mut self,
        f: &Store,
        i: u64,
        rec: ChunkRecord,
        proxy: Option<ProxyId>,
    ) -> Result<()>;
    /// Set many slots, in order (records of chunks already written).
    fn set_slots(&mut self, f: &Store, items: &[(u64, ChunkRecord)]) -> Result<()> {
        for (i, rec) in items {
            self.set_slot(f, *i, *rec, None)?;
        }
        Ok(())
    }
    /// Every set slot, in slot order.
    fn each_slot(&self, f: &Store, visit: &mut dyn FnMut(u64, ChunkRecord)) -> Result<()>;
    /// Bytes of metadata in the file.
    fn bytes(&self, f: &Store) -> Result<u64>;
    /// The dataset shrank to `dims`.
    fn set_dims(&mut self, _f: &Store, _dims: &[u64]) -> Result<()> {
        Ok(())
    }
    /// The most slots the structure can hold (`None`: no bound of its own).
    fn capacity(&self) -> Option<u64> {
        None
    }
}

/// A chunk index over slots addressed by the linear chunk index.
#[derive(Debug)]
pub(crate) struct Linear<S: Slots> {
    slots: S,
    linear: LinearIndex,
}

impl<S: Slots> Linear<S> {
    fn new(slots: S, shape: &Shape) -> Result<Linear<S>> {
        Ok(Linear {
            slots,
            linear: LinearIndex::for_dataset(&shape.max_dims, &shape.chunk)?,
        })
    }

    fn index(&self, scaled: &[u64]) -> Result<u64> {
        self.linear.index(scaled).ok_or_else(|| {
            Error::arg(
                "chunk coordinates",
                format!("chunk {scaled:?} outside the chunk grid"),
            )
        })
    }
}

impl<S: Slots> ChunkIndex for Linear<S> {
    fn kind(&self) -> IndexKind {
        S::KIND
    }
    fn check_extent(&self, dims: &[u64], chunk: &[u64]) -> Result<()> {
        // The last chunk of the extent has the highest linear index.
        let mut last = Vec::with_capacity(dims.len());
        for (&d, &c) in dims.iter().zip(chunk) {
            match d.checked_sub(1).and_then(|d| d.checked_div(c)) {
                Some(s) => last.push(s),
                // An empty dimension: no chunk at all.
                None => return Ok(()),
            }
        }
        let at = self.slots.layout().1;
        let i = self.linear.index(&last).ok_or_else(|| {
            Error::corrupt(
                "chunk index",
                at,
                format!("the extent {dims:?} reaches chunk {last:?}, outside the index's grid"),
            )
        })?;
        match self.slots.capacity() {
            Some(cap) if i >= cap => Err(Error::corrupt(
                "chunk index",
                at,
                format!(
                    "the extent {dims:?} needs {} chunk slots; the {} holds {cap}",
                    i.saturating_add(1),
                    S::KIND.name()
                ),
            )),
            _ => Ok(()),
        }
    }
    fn layout(&self) -> (LayoutIndex, Option<Addr>) {
        self.slots.layout()
    }
    fn get(&self, f: &Store, scaled: &[u64]) -> Result<Option<ChunkRecord>> {
        let r = self.slots.slot(f, self.index(scaled)?)?;
        Ok(r.addr.is_some().then_some(r))
    }
    fn insert(
        &mut self,
        f: &Store,
        scaled: &[u64],
        rec: ChunkRecord,
        proxy: Option<ProxyId>,
    ) -> Result<()> {
        let i = self.index(scaled)?;
        self.slots.set_slot(f, i, rec, proxy)
    }
    fn insert_many(&mut self, f: &Store, items: &[(&[u64], ChunkRecord)]) -> Result<()> {
        let mut slots = Vec::with_capacity(items.len());
        for (scaled, rec) in items {
            slots.push((self.index(scaled)?, *rec));
        }
        self.slots.set_slots(f, &slots)
    }
    fn remove(&mut self, f: &Store, scaled: &[u64]) -> Result<Option<ChunkRecord>> {
        let old = self.get(f, scaled)?;
        if old.is_some() {
            let i = self.index(scaled)?;
            self.slots.set_slot(f, i, ChunkRecord::default(), None)?;
        }
        Ok(old)
    }
    fn for_each(&mut self, f: &Store, visit: &mut dyn FnMut(&[u64], ChunkRecord)) -> Result<()> {
        let linear = &self.linear;
        self.slots.each_slot(f, &mut |i, r| {
            if r.addr.is_some() {
                visit(&linear.scaled(i), r);
            }
        })
    }
    fn set_dims(&mut self, f: &Store, dims: &[u64]) -> Result<()> {
        self.slots.set_dims(f, dims)
    }
    fn metadata_bytes(&mut self, f: &Store) -> Result<u64> {
        self.slots.bytes(f)
    }
}

/// The fixed array (h5chunk-farray), one element per chunk of the maximum grid.
#[derive(Debug)]
pub(crate) struct FixedArray {
    array: h5chunk_farray::FixedArray<RecordCodec>,
    page_bits: u8,
}

fn fa_err(e: h5chunk_farray::Error) -> Error {
    Error::index(IndexKind::FixedArray, e)
}

impl FixedArray {
    fn params(shape: &Shape, page_bits: u8) -> Result<h5chunk_farray::Params> {
        let max: Vec<u64> = shape
            .max_dims
            .iter()
            .map(|m| {
                m.ok_or_else(|| {
                    Error::corrupt("layout", None, "a fixed array with an unlimited dimension")
                })
            })
            .collect::<Result<_>>()?;
        h5chunk_farray::Params::for_chunks(&max, &shape.chunk, page_bits).map_err(fa_err)
    }

    pub fn create(f: &Store, shape: &Shape, page_bits: u8) -> Result<Linear<FixedArray>> {
        let params = FixedArray::params(shape, page_bits)?;
        let array = h5chunk_farray::FixedArray::create(&f.cache, f.sizes, shape.codec, params)
            .map_err(fa_err)?;
        Linear::new(FixedArray { array, page_bits }, shape)
    }

    pub fn open(f: &Store, shape: &Shape, addr: Addr, page_bits: u8) -> Result<Linear<FixedArray>> {
        let params = FixedArray::params(shape, page_bits)?;
        let array = h5chunk_farray::FixedArray::open(&f.cache, addr, f.sizes, shape.codec, params)
            .map_err(fa_err)?;
        Linear::new(FixedArray { array, page_bits }, shape)
    }
}

impl Slots for FixedArray {
    const KIND: IndexKind = IndexKind::FixedArray;
    fn capacity(&self) -> Option<u64> {
        Some(self.array.len())
    }
    fn layout(&self) -> (LayoutIndex, Option<Addr>) {
        let index = LayoutIndex::FixedArray {
            max_dblk_page_nelmts_bits: self.page_bits,
        };
        (index, Some(self.array.addr()))
    }
    fn slot(&self, f: &Store, i: u64) -> Result<ChunkRecord> {
        self.array.get(&f.cache, i).map_err(fa_err)
    }
    fn set_slot(
        &mut self,
        f: &Store,
        i: u64,
        rec: ChunkRecord,
        proxy: Option<ProxyId>,
    ) -> Result<()> {
        self.array
            .insert_with_proxy(&f.cache, i, &rec, proxy)
            .map_err(fa_err)
    }
    fn set_slots(&mut self, f: &Store, items: &[(u64, ChunkRecord)]) -> Result<()> {
        self.array
            .insert_many(&f.cache, items, None)
            .map_err(fa_err)
    }
    fn each_slot(&self, f: &Store, visit: &mut dyn FnMut(u64, ChunkRecord)) -> Result<()> {
        self.array
            .for_each(&f.cache, |i, r| {
                visit(i, r);
                std::ops::ControlFlow::Continue(())
            })
            .map_err(fa_err)
    }
    fn bytes(&self, f: &Store) -> Result<u64> {
        self.array.bytes_used(&f.cache).map_err(fa_err)
    }
}

/// The extensible array (h5chunk-earray), one element per chunk, the unlimited dimension first.
#[derive(Debug)]
pub(crate) struct ExtensibleArray {
    array: h5chunk_earray::ExtensibleArray<h5chunk_earray::ChunkRecords>,
    params: h5chunk_format::message::EarrayParams,
}

fn ea_err(e: h5chunk_earray::Error) -> Error {
    Error::index(IndexKind::ExtensibleArray, e)
}

impl ExtensibleArray {
    pub fn create(
        f: &Store,
        shape: &Shape,
        params: h5chunk_format::message::EarrayParams,
    ) -> Result<Linear<ExtensibleArray>> {
        let class = h5chunk_earray::ChunkRecords::new(shape.codec);
        let array =
            h5chunk_earray::ExtensibleArray::create(&f.cache, f.sizes, class, params.into())
                .map_err(ea_err)?;
        Linear::new(ExtensibleArray { array, params }, shape)
    }

    pub fn open(
        f: &Store,
        shape: &Shape,
        addr: Addr,
        params: h5chunk_format::message::EarrayParams,
    ) -> Result<Linear<ExtensibleArray>> {
        let class = h5chunk_earray::ChunkRecords::new(shape.codec);
        let array = h5chunk_earray::ExtensibleArray::open(&f.cache, addr, f.sizes, class)
            .map_err(ea_err)?;
        if array.params() != params.into() {
            return Err(Error::Index {
                kind: IndexKind::ExtensibleArray,
                source: format!(
                    "header parameters {:?} differ from the layout's {params:?}",
                    array.params()
                )
                .into(),
            });
        }
        Linear::new(ExtensibleArray { array, params }, shape)
    }
}

impl Slots for ExtensibleArray {
    const KIND: IndexKind = IndexKind::ExtensibleArray;
    fn capacity(&self) -> Option<u64> {
        Some(self.array.max_len())
    }
    fn layout(&self) -> (LayoutIndex, Option<Addr>) {
        (
            LayoutIndex::ExtensibleArray(self.params),
            Some(self.array.addr()),
        )
    }
    fn slot(&self, f: &Store, i: u64) -> Result<ChunkRecord> {
        self.array.get(&f.cache, i).map_err(ea_err)
    }
    fn set_slot(
        &mut self,
        f: &Store,
        i: u64,
        rec: ChunkRecord,
        proxy: Option<ProxyId>,
    ) -> Result<()> {
        match proxy {
            Some(p) => self.array.insert_with_proxy(&f.cache, i, &rec, p),
            None => self.array.insert(&f.cache, i, &rec),
        }
        .map_err(ea_err)
    }
    fn set_slots(&mut self, f: &Store, items: &[(u64, ChunkRecord)]) -> Result<()> {
        self.array
            .insert_many(&f.cache, items, None)
            .map_err(ea_err)
    }
    fn each_slot(&self, f: &Store, visit: &mut dyn FnMut(u64, ChunkRecord)) -> Result<()> {
        self.array
            .for_each(&f.cache, |i, r| {
                visit(i, r);
                std::ops::ControlFlow::Continue(())
            })
            .map_err(ea_err)
    }
    fn bytes(&self, f: &Store) -> Result<u64> {
        self.array.bytes_used(&f.cache).map_err(ea_err)
    }
}

/// h5chunk's skip list (h5chunk-skiplist): slot `step × G + j` for the chunk at step `step` of
/// the unlimited dimension and position `j` among the `G` chunks of one step (the same
/// swizzled linear index as the extensible array's).
#[derive(Debug)]
pub(crate) struct SkipList {
    list: h5chunk_skiplist::SkipList,
    params: h5chunk_format::message::SkipListParams,
    unlimited: usize,
    chunk: Vec<u64>,
    /// Slots per step of the unlimited dimension (`G`).
    group_len: u64,
}

fn sl_err(e: h5chunk_skiplist::Error) -> Error {
    Error::index(IndexKind::SkipList, e)
}

impl SkipList {
    fn group_len(shape: &Shape) -> Result<(usize, u32)> {
        let k = shape
            .max_dims
            .iter()
            .position(Option::is_none)
            .ok_or_else(|| {
                Error::corrupt("layout", None, "a skip list without an unlimited dimension")
            })?;
        let g: u64 = shape
            .max_dims
            .iter()
            .zip(&shape.chunk)
            .enumerate()
            .filter(|&(u, _)| u != k)
            .map(|(_, (m, c))| m.unwrap_or(1).div_ceil(*c))
            .product();
        let g = u32::try_from(g)
            .map_err(|_| Error::Unsupported("more than 2^32 chunks per step of a skip list"))?;
        Ok((k, g))
    }

    fn class(shape: &Shape) -> h5chunk_skiplist::ElementClass {
        match shape.codec.size_width() {
            Some(w) => h5chunk_skiplist::ElementClass::Filtered { size_width: w },
            None => h5chunk_skiplist::ElementClass::Unfiltered,
        }
    }

    pub fn create(
        f: &Store,
        shape: &Shape,
        params: h5chunk_format::message::SkipListParams,
    ) -> Result<Linear<SkipList>> {
        let (unlimited, group_len) = SkipList::group_len(shape)?;
        let p = h5chunk_skiplist::Params {
            class: SkipList::class(shape),
            max_height: params.max_height,
            steps_per_supernode: params.steps_per_supernode,
            group_len,
        };
        let list = h5chunk_skiplist::SkipList::create(&f.cache, f.sizes, p).map_err(sl_err)?;
        let slots = SkipList {
            list,
            params,
            unlimited,
            chunk: shape.chunk.clone(),
            group_len: u64::from(group_len),
        };
        Linear::new(slots, shape)
    }

    pub fn open(
        f: &Store,
        shape: &Shape,
        addr: Addr,
        params: h5chunk_format::message::SkipListParams,
    ) -> Result<Linear<SkipList>> {
        let (unlimited, group_len) = SkipList::group_len(shape)?;
        let list = h5chunk_skiplist::SkipList::open(&f.cache, addr, f.sizes).map_err(sl_err)?;
        let p = list.params();
        if p.group_len != group_len
            || p.max_height != params.max_height
            || p.steps_per_supernode != params.steps_per_supernode
        {
            return Err(Error::Index {
                kind: IndexKind::SkipList,
                source: format!("tail parameters {p:?} differ from the layout's").into(),
            });
        }
        let slots = SkipList {
            list,
            params,
            unlimited,
            chunk: shape.chunk.clone(),
            group_len: u64::from(group_len),
        };
        Linear::new(slots, shape)
    }
}

impl Slots for SkipList {
    const KIND: IndexKind = IndexKind::SkipList;
    fn layout(&self) -> (LayoutIndex, Option<Addr>) {
        (LayoutIndex::SkipList(self.params), Some(self.list.addr()))
    }
    fn slot(&self, f: &Store, i: u64) -> Result<ChunkRecord> {
        if i >= self.list.len(&f.cache).map_err(sl_err)? {
            return Ok(ChunkRecord::default());
        }
        self.list.get(&f.cache, i).map_err(sl_err)
    }
    fn set_slot(
        &mut self,
        f: &Store,
        i: u64,
        rec: ChunkRecord,
        proxy: Option<ProxyId>,
    ) -> Result<()> {
        // The list covers whole steps: extend it to the step holding slot `i` first.
        let step = i
            .checked_div(self.group_len.max(1))
            .and_then(|s| s.checked_add(1))
            .ok_or_else(|| Error::Internal("a skip list slot past 2^64"))?;
        if step > self.list.steps(&f.cache).map_err(sl_err)? {
            self.list.extend(&f.cache, step).map_err(sl_err)?;
        }
        let supernode = self.list.insert(&f.cache, i, rec).map_err(sl_err)?;
        if let Some(p) = proxy {
            f.cache.add_flush_dependency(supernode, p)?;
        }
        Ok(())
    }
    fn each_slot(&self, f: &Store, visit: &mut dyn FnMut(u64, ChunkRecord)) -> Result<()> {
        self.list.for_each(&f.cache, visit).map_err(sl_err)
    }
    fn set_dims(&mut self, f: &Store, dims: &[u64]) -> Result<()> {
        // Shrinking drops whole steps beyond the new extent (their chunks were freed by the
        // dataset already); growing needs nothing until a chunk is written there.
        let (Some(&d), Some(&c)) = (dims.get(self.unlimited), self.chunk.get(self.unlimited))
        else {
            return Err(Error::Internal(
                "a skip list's unlimited dimension past the rank",
            ));
        };
        let steps = d.div_ceil(c);
        if steps < self.list.steps(&f.cache).map_err(sl_err)? {
            self.list.shrink(&f.cache, steps).map_err(sl_err)?;
        }
        Ok(())
    }
    fn bytes(&self, f: &Store) -> Result<u64> {
        self.list.bytes_used(&f.cache).map_err(sl_err)
    }
}

/// The version 1 B-tree index (h5chunk-btree1), keyed by element offsets. The tree's handle
/// is kept between operations (with the chunk proxies its class records): no operation reads
/// anything to find the tree again.
#[derive(Debug)]
pub(crate) struct BTree1 {
    tree: h5chunk_btree1::ChunkTree,
    chunk: Vec<u64>,
    chunk_bytes: u64,
    filtered: bool,
}

fn bt1_err(e: h5chunk_btree1::Error) -> Error {
    Error::index(IndexKind::BTree1, e)
}

impl BTree1 {
    fn layout_dims(shape: &Shape) -> Vec<u64> {
        let mut d = shape.chunk.clone();
        let elems = NonZeroU64::new(shape.chunk.iter().product()).unwrap_or(NonZeroU64::MIN);
        d.push(shape.chunk_bytes / elems);
        d
    }

    pub fn create(f: &Store, shape: &Shape) -> Result<BTree1> {
        let dims = BTree1::layout_dims(shape);
        let tree = h5chunk_btree1::ChunkTree::create(&f.cache, f.sizes, f.k.istore, &dims)
            .map_err(bt1_err)?;
        Ok(BTree1 {
            tree,
            chunk: shape.chunk.clone(),
            chunk_bytes: shape.chunk_bytes,
            filtered: shape.codec.is_filtered(),
        })
    }

    pub fn open(f: &Store, shape: &Shape, root: Addr) -> Result<BTree1> {
        let dims = BTree1::layout_dims(shape);
        let tree = h5chunk_btree1::ChunkTree::open(&f.cache, root, f.sizes, f.k.istore, &dims)
            .map_err(bt1_err)?;
        Ok(BTree1 {
            tree,
            chunk: shape.chunk.clone(),
            chunk_bytes: shape.chunk_bytes,
            filtered: shape.codec.is_filtered(),
        })
    }

    /// The element offsets of the chunk at `scaled`.
    fn offsets(&self, scaled: &[u64]) -> Result<h5chunk_btree1::Offsets> {
        scaled
            .iter()
            .zip(&self.chunk)
            .map(|(s, c)| s.checked_mul(*c))
            .collect::<Option<h5chunk_btree1::Offsets>>()
            .ok_or_else(|| {
                Error::arg(
                    "chunk coordinates",
                    format!("chunk {scaled:?} starts past 2^64"),
                )
            })
    }

    /// Where the tree records a chunk of record `rec`.
    fn located(&self, rec: ChunkRecord) -> Result<h5chunk_btree1::Located> {
        let addr = rec
            .addr
            .ok_or_else(|| Error::Internal("recording an unallocated chunk"))?;
        let size = if self.filtered {
            rec.size
        } else {
            self.chunk_bytes
        };
        Ok(h5chunk_btree1::Located {
            size: u32::try_from(size)
                .map_err(|_| Error::arg("chunk size", "a chunk of 4 GiB or more"))?,
            filter_mask: rec.mask,
            addr,
        })
    }

    /// The tree's form of the record of the chunk at `scaled`.
    fn chunk(&self, scaled: &[u64], rec: ChunkRecord) -> Result<h5chunk_btree1::Chunk> {
        let at = self.located(rec)?;
        Ok(h5chunk_btree1::Chunk {
            offsets: self.offsets(scaled)?,
            size: at.size,
            filter_mask: at.filter_mask,
            addr: at.addr,
        })
    }

    /// The record of a chunk the tree holds, checked: v1 B-tree nodes carry no checksum, so
    /// a damaged size is caught here rather than read as wrong values. A chunk's stored size is
    /// never 0, and an unfiltered chunk's is the chunk's size.
    fn record(&self, c: &h5chunk_btree1::Chunk) -> Result<ChunkRecord> {
        self.checked_record(c.size, c.filter_mask, c.addr, || {
            format!("offsets {:?}", c.offsets)
        })
    }

    /// [`record`](Self::record) of a chunk found at chunk coordinates `scaled`.
    fn located_record(&self, scaled: &[u64], c: h5chunk_btree1::Located) -> Result<ChunkRecord> {
        self.checked_record(c.size, c.filter_mask, c.addr, || {
            format!("chunk coordinates {scaled:?}")
        })
    }

    /// The record of a chunk key: its size must be a chunk's (`at` names the chunk in the
    /// error).
    fn checked_record(
        &self,
        size: u32,
        mask: u32,
        addr: Addr,
        at: impl FnOnce() -> String,
    ) -> Result<ChunkRecord> {
        let size = u64::from(size);
        if size == 0 || (!self.filtered && size != self.chunk_bytes) {
            return Err(Error::corrupt(
                "v1 B-tree chunk key",
                addr,
                format!(
                    "chunk at {} stored as {size} bytes (an unfiltered chunk is {})",
                    at(),
                    self.chunk_bytes
                ),
            ));
        }
        Ok(ChunkRecord {
            addr: Some(addr),
            // Unfiltered datasets carry the chunk size in the key too; records say 0.
            size: if self.filtered { size } else { 0 },
            mask,
        })
    }
}

impl ChunkIndex for BTree1 {
    fn kind(&self) -> IndexKind {
        IndexKind::BTree1
    }
    fn layout(&self) -> (LayoutIndex, Option<Addr>) {
        (LayoutIndex::BTreeV1, Some(self.tree.addr()))
    }
    fn get(&self, f: &Store, scaled: &[u64]) -> Result<Option<ChunkRecord>> {
        let c = self.tree.get_scaled(&f.cache, scaled).map_err(bt1_err)?;
        c.map(|c| self.located_record(scaled, c)).transpose()
    }
    fn insert(
        &mut self,
        f: &Store,
        scaled: &[u64],
        rec: ChunkRecord,
        proxy: Option<ProxyId>,
    ) -> Result<()> {
        let chunk = self.chunk(scaled, rec)?;
        self.tree.insert(&f.cache, &chunk, proxy).map_err(bt1_err)
    }
    fn insert_many(&mut self, f: &Store, items: &[(&[u64], ChunkRecord)]) -> Result<()> {
        let mut chunks = Vec::with_capacity(items.len());
        for &(scaled, rec) in items {
            chunks.push((scaled, self.located(rec)?));
        }
        self.tree
            .insert_many_scaled(&f.cache, &chunks)
            .map_err(bt1_err)
    }
    fn remove(&mut self, f: &Store, scaled: &[u64]) -> Result<Option<ChunkRecord>> {
        let c = self
            .tree
            .remove(&f.cache, &self.offsets(scaled)?)
            .map_err(bt1_err)?;
        c.map(|c| self.record(&c)).transpose()
    }
    fn for_each(&mut self, f: &Store, visit: &mut dyn FnMut(&[u64], ChunkRecord)) -> Result<()> {
        let chunks = self.tree.to_vec(&f.cache).map_err(bt1_err)?;
        for c in chunks {
            let scaled: Vec<u64> = c
                .offsets
                .iter()
                .zip(&self.chunk)
                .map(|(o, ch)| o.checked_div(*ch))
                .collect::<Option<_>>()
                .ok_or_else(|| Error::corrupt("layout", None, "a chunk dimension of 0"))?;
            visit(&scaled, self.record(&c)?);
        }
        Ok(())
    }
    fn metadata_bytes(&mut self, f: &Store) -> Result<u64> {
        self.tree.bytes_used(&f.cache).map_err(bt1_err)
    }
    fn depth(&mut self, f: &Store) -> Result<Option<u64>> {
        Ok(Some(u64::from(self.tree.depth(&f.cache).map_err(bt1_err)?)))
    }
}

/// The version 2 B-tree index (h5chunk-btree2), records of type 10/11 keyed by scaled
/// coordinates. The tree's handle is kept between operations: it holds what the tree knows
/// beyond its header's address (the header, the node geometry, the smallest and largest
/// records), so appends keep the chunk-index paper's fast path and lookups read no header.
#[derive(Debug)]
pub(crate) struct BTree2 {
    tree: h5chunk_btree2::BTree2<h5chunk_btree2::ChunkClass>,
    params: h5chunk_format::message::Btree2Params,
}

fn bt2_err(e: h5chunk_btree2::Error) -> Error {
    Error::index(IndexKind::BTree2, e)
}

impl BTree2 {
    fn class(shape: &Shape) -> Result<h5chunk_btree2::ChunkClass> {
        h5chunk_btree2::ChunkClass::new(shape.codec, shape.dims.len()).map_err(bt2_err)
    }

    pub fn create(
        f: &Store,
        shape: &Shape,
        params: h5chunk_format::message::Btree2Params,
    ) -> Result<BTree2> {
        let class = BTree2::class(shape)?;
        let p = h5chunk_btree2::Params {
            node_size: params.node_size,
            split_percent: params.split_percent,
            merge_percent: params.merge_percent,
        };
        let tree = h5chunk_btree2::BTree2::create(&f.cache, f.sizes, class, p).map_err(bt2_err)?;
        Ok(BTree2 { tree, params })
    }

    pub fn open(
        f: &Store,
        shape: &Shape,
        header: Addr,
        params: h5chunk_format::message::Btree2Params,
    ) -> Result<BTree2> {
        let class = BTree2::class(shape)?;
        let tree =
            h5chunk_btree2::BTree2::open(&f.cache, header, f.sizes, class).map_err(bt2_err)?;
        Ok(BTree2 { tree, params })
    }

    /// After a failed modification the handle's header and extremes may disagree with the
    /// nodes: forget them and read the header again from the cache, as a fresh open would.
    fn after<T>(&mut self, f: &Store, r: h5chunk_btree2::Result<T>) -> Result<T> {
        r.map_err(|e| {
            let class = *self.tree.class();
            if let Ok(t) = h5chunk_btree2::BTree2::open(&f.cache, self.tree.addr(), f.sizes, class)
            {
                self.tree = t;
            }
            bt2_err(e)
        })
    }
}

impl ChunkIndex for BTree2 {
    fn kind(&self) -> IndexKind {
        IndexKind::BTree2
    }
    fn layout(&self) -> (LayoutIndex, Option<Addr>) {
        (LayoutIndex::BTreeV2(self.params), Some(self.tree.addr()))
    }
    fn get(&self, f: &Store, scaled: &[u64]) -> Result<Option<ChunkRecord>> {
        // Lookups share the adapter (`&self`): they read through the handle and change nothing
        // in it.
        Ok(self
            .tree
            .get(&f.cache, scaled)
            .map_err(bt2_err)?
            .map(|e| e.record))
    }
    fn insert(
        &mut self,
        f: &Store,
        scaled: &[u64],
        rec: ChunkRecord,
        proxy: Option<ProxyId>,
    ) -> Result<()> {
        let entry = h5chunk_btree2::ChunkEntry {
            scaled: scaled.iter().copied().collect(),
            record: rec,
        };
        let r = self.tree.insert(&f.cache, entry, proxy);
        self.after(f, r)?;
        Ok(())
    }
    fn insert_many(&mut self, f: &Store, items: &[(&[u64], ChunkRecord)]) -> Result<()> {
        let mut entries = Vec::with_capacity(items.len());
        for (scaled, rec) in items {
            entries.push(h5chunk_btree2::ChunkEntry::new(scaled, *rec));
        }
        let r = self.tree.insert_many(&f.cache, &entries);
        self.after(f, r)
    }
    fn remove(&mut self, f: &Store, scaled: &[u64]) -> Result<Option<ChunkRecord>> {
        let r = self.tree.remove(&f.cache, scaled);
        Ok(self.after(f, r)?.map(|e| e.record))
    }
    fn for_each(&mut self, f: &Store, visit: &mut dyn FnMut(&[u64], ChunkRecord)) -> Result<()> {
        let records = self.tree.to_vec(&f.cache).map_err(bt2_err)?;
        for e in records {
            visit(&e.scaled, e.record);
        }
        Ok(())
    }
    fn metadata_bytes(&mut self, f: &Store) -> Result<u64> {
        self.tree.bytes_used(&f.cache).map_err(bt2_err)
    }
    fn depth(&mut self, _f: &Store) -> Result<Option<u64>> {
        // The header counts levels below the root; a lone leaf is one level.
        Ok(Some(u64::from(self.tree.depth()) + 1))
    }
    fn validate(&mut self, f: &Store) -> Result<()> {
        self.tree.validate(&f.cache).map_err(bt2_err)?;
        Ok(())
    }
}

/// An index structure not created yet: libhdf5 leaves the layout's index address undefined
/// until the first chunk is written, and so does h5chunk.
#[derive(Debug)]
pub(crate) struct Lazy {
    index: LayoutIndex,
    shape: Shape,
    inner: Option<Box<dyn ChunkIndex>>,
}

impl Lazy {
    fn new(index: LayoutIndex, shape: &Shape) -> Lazy {
        Lazy {
            index,
            shape: shape.clone(),
            inner: None,
        }
    }
}

impl ChunkIndex for Lazy {
    fn kind(&self) -> IndexKind {
        match &self.inner {
            Some(i) => i.kind(),
            None => IndexKind::of(&self.index),
        }
    }
    fn layout(&self) -> (LayoutIndex, Option<Addr>) {
        match &self.inner {
            Some(i) => i.layout(),
            None => (self.index, None),
        }
    }
    fn get(&self, f: &Store, scaled: &[u64]) -> Result<Option<ChunkRecord>> {
        match &self.inner {
            Some(i) => i.get(f, scaled),
            None => Ok(None),
        }
    }
    fn insert(
        &mut self,
        f: &Store,
        scaled: &[u64],
        rec: ChunkRecord,
        proxy: Option<ProxyId>,
    ) -> Result<()> {
        if self.inner.is_none() {
            self.inner = Some(create_structure(f, &self.shape, &self.index)?);
        }
        match &mut self.inner {
            Some(i) => i.insert(f, scaled, rec, proxy),
            None => Err(Error::Internal("an index that could not be created")),
        }
    }
    fn insert_many(&mut self, f: &Store, items: &[(&[u64], ChunkRecord)]) -> Result<()> {
        if items.is_empty() {
            return Ok(());
        }
        if self.inner.is_none() {
            self.inner = Some(create_structure(f, &self.shape, &self.index)?);
        }
        match &mut self.inner {
            Some(i) => i.insert_many(f, items),
            None => Err(Error::Internal("an index that could not be created")),
        }
    }
    fn remove(&mut self, f: &Store, scaled: &[u64]) -> Result<Option<ChunkRecord>> {
        match &mut self.inner {
            Some(i) => i.remove(f, scaled),
            None => Ok(None),
        }
    }
    fn for_each(&mut self, f: &Store, visit: &mut dyn FnMut(&[u64], ChunkRecord)) -> Result<()> {
        match &mut self.inner {
            Some(i) => i.for_each(f, visit),
            None => Ok(()),
        }
    }
    fn set_dims(&mut self, f: &Store, dims: &[u64]) -> Result<()> {
        match &mut self.inner {
            Some(i) => i.set_dims(f, dims),
            // A structure created later holds no chunk outside the extent.
            None => Ok(()),
        }
    }
    fn metadata_bytes(&mut self, f: &Store) -> Result<u64> {
        match &mut self.inner {
            Some(i) => i.metadata_bytes(f),
            None => Ok(0),
        }
    }
    fn depth(&mut self, f: &Store) -> Result<Option<u64>> {
        match &mut self.inner {
            Some(i) => i.depth(f),
            None => Ok(None),
        }
    }
    fn validate(&mut self, f: &Store) -> Result<()> {
        match &mut self.inner {
            Some(i) => i.validate(f),
            None => Ok(()),
        }
    }
}

/// Create the structure of an index with a structure (fixed array, extensible array, B-trees).
fn create_structure(f: &Store, shape: &Shape, index: &LayoutIndex) -> Result<Box<dyn ChunkIndex>> {
    Ok(match index {
        LayoutIndex::FixedArray {
            max_dblk_page_nelmts_bits,
        } => Box::new(FixedArray::create(f, shape, *max_dblk_page_nelmts_bits)?),
        LayoutIndex::ExtensibleArray(p) => Box::new(ExtensibleArray::create(f, shape, *p)?),
        LayoutIndex::SkipList(p) => Box::new(SkipList::create(f, shape, *p)?),
        LayoutIndex::BTreeV1 => Box::new(BTree1::create(f, shape)?),
        LayoutIndex::BTreeV2(p) => Box::new(BTree2::create(f, shape, *p)?),
        LayoutIndex::Single(_) | LayoutIndex::Implicit => {
            return Err(Error::Internal("a structure for an index that has none"));
        }
    })
}

/// Open the index a layout message describes.
pub(crate) fn open(
    f: &Store,
    shape: &Shape,
    index: &LayoutIndex,
    address: Option<Addr>,
) -> Result<Box<dyn ChunkIndex>> {
    Ok(match (index, address) {
        (LayoutIndex::Single(_), _) => {
            Box::new(Single::new(index, address, shape.codec.is_filtered()))
        }
        (LayoutIndex::Implicit, _) => Box::new(Implicit::new(shape, address)?),
        (_, None) => Box::new(Lazy::new(*index, shape)),
        (
            LayoutIndex::FixedArray {
                max_dblk_page_nelmts_bits,
            },
            Some(a),
        ) => Box::new(FixedArray::open(f, shape, a, *max_dblk_page_nelmts_bits)?),
        (LayoutIndex::ExtensibleArray(p), Some(a)) => {
            Box::new(ExtensibleArray::open(f, shape, a, *p)?)
        }
        (LayoutIndex::SkipList(p), Some(a)) => Box::new(SkipList::open(f, shape, a, *p)?),
        (LayoutIndex::BTreeV1, Some(a)) => Box::new(BTree1::open(f, shape, a)?),
        (LayoutIndex::BTreeV2(p), Some(a)) => Box::new(BTree2::open(f, shape, a, *p)?),
    })
}

/// Create a new index of `kind` for a dataset of `shape` (`index`: its layout form).
pub(crate) fn create(
    f: &Store,
    shape: &Shape,
    index: Option<LayoutIndex>,
    kind: IndexKind,
) -> Result<Box<dyn ChunkIndex>> {
    match (kind, index) {
        (IndexKind::Implicit, _) => {
            let mut idx = Implicit::new(shape, None)?;
            idx.allocate(f)?;
            Ok(Box::new(idx))
        }
        (_, Some(i)) => open(f, shape, &i, None),
        (_, None) => Err(Error::Internal("an index without a layout form")),
    }
}
