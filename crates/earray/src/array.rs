//! The extensible array over the metadata cache: create, open, get, insert, append, for_each,
//! statistics, delete and bytes used.
//!
//! # Update order (SWMR)
//!
//! The flush dependencies are those of the SWMR design's table 7: header → index block,
//! index block → its data blocks and super blocks, super block → its data blocks and pages,
//! and any block holding an element → the chunk proxy that element points to. The cache writes
//! children before parents, so a new data block (or page) reaches the file before the super
//! block that points to it, which reaches it before the index block, which reaches it before
//! the header whose `max_idx_set` makes the element visible to readers.

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Arc;

use h5chunk_cache::{MetadataCache, ProxyId};
use h5chunk_format::earray::{
    DataBlock, Geometry, Header, IndexBlock, Location, Params, Row, Stats, SuperBlock, bit, set_bit,
};
use h5chunk_format::{Addr, Sizes};

use crate::class::ElementClass;
use crate::entry::{
    DataBlockEntry, HeaderEntry, IndexBlockEntry, PageEntry, RowCtx, Shape, SuperBlockEntry,
};
use crate::error::{Error, Result};

/// An extensible array of elements of class `C`, living in a [`MetadataCache`].
///
/// The handle holds no block: every operation takes the cache, so a SWMR reader sees what its
/// cache holds (evict clean entries to refresh). Only one handle should modify an array.
#[derive(Debug)]
pub struct ExtensibleArray<C: ElementClass> {
    class: C,
    shape: Arc<Shape>,
    /// Blocks whose flush dependency on their parent this handle has registered (each block
    /// has exactly one parent; a chunk proxy may have several parents and is not listed).
    linked: HashSet<Addr>,
    /// The index block's address, once known (see `index_block_addr`).
    index_block: std::sync::OnceLock<Addr>,
    /// A `max_idx_set` the header held when last read: it only grows, so an index below it
    /// needs no header visit (see `is_past_end`).
    known_len: std::sync::atomic::AtomicU64,
}

/// The block an element's bytes live in, once every block on its path exists (the element's
/// position in it comes from [`ExtensibleArray::block_of`]).
#[derive(Clone, Copy, Debug)]
enum Slot {
    IndexBlock(Addr),
    /// A data block of super block row `u`.
    DataBlock(Addr, usize),
    Page(Addr),
}

/// The block an element lives in: the index block, or data block `dblk` of super block row
/// `sblk` (and its page, when the data block is paged).
#[derive(Clone, Copy, PartialEq, Eq)]
enum BlockKey {
    Index,
    Data(usize, u64, Option<u64>),
}

/// Changes to the header's statistics made while creating blocks.
#[derive(Default)]
struct Delta {
    index_block: Option<Addr>,
    nsuper_blks: u64,
    super_blk_size: u64,
    ndata_blks: u64,
    data_blk_size: u64,
    nelmts: u64,
}

impl Delta {
    fn is_empty(&self) -> bool {
        self.index_block.is_none() && self.nsuper_blks == 0 && self.ndata_blks == 0
    }
}

fn corrupt(structure: &'static str, addr: Addr, reason: impl Into<String>) -> Error {
    Error::Corrupt {
        structure,
        addr,
        reason: reason.into(),
    }
}

/// The byte range of element `k` in a block's element bytes.
fn element_range(k: u64, esz: u8) -> Option<std::ops::Range<usize>> {
    let start = usize::try_from(k).ok()?.checked_mul(usize::from(esz))?;
    Some(start..start.checked_add(usize::from(esz))?)
}

fn to_usize(v: u64, structure: &'static str, at: Addr) -> Result<usize> {
    usize::try_from(v).map_err(|_| corrupt(structure, at, format!("{v} exceeds the address space")))
}

fn add(a: u64, b: u64, structure: &'static str, at: Addr) -> Result<u64> {
    a.checked_add(b)
        .ok_or_else(|| corrupt(structure, at, "arithmetic overflow"))
}

fn mul(a: u64, b: u64, structure: &'static str, at: Addr) -> Result<u64> {
    a.checked_mul(b)
        .ok_or_else(|| corrupt(structure, at, "arithmetic overflow"))
}

impl<C: ElementClass> ExtensibleArray<C> {
    /// Create an empty array with `params` (no block but the header is allocated; the index
    /// block and everything below it are created by the first `set`). The header is inserted
    /// into the cache dirty.
    pub fn create(cache: &MetadataCache, sizes: Sizes, class: C, params: Params) -> Result<Self> {
        let geometry = Geometry::new(params)?;
        let len = Header::encoded_len(sizes);
        let addr = cache.allocator().allocate(len as u64)?;
        let header = Header {
            client_id: class.client_id(),
            element_size: class.element_size(),
            params,
            stats: Stats::default(),
            index_block: None,
        };
        cache.insert(addr, HeaderEntry { sizes, header })?;
        Self::with_shape(class, sizes, geometry, addr)
    }

    /// Open the array whose header is at `addr`. The header's client id and element size must
    /// be the class's.
    pub fn open(cache: &MetadataCache, addr: Addr, sizes: Sizes, class: C) -> Result<Self> {
        let h = cache.get::<HeaderEntry>(addr, &sizes)?;
        let (client_id, element_size, params) = {
            let g = h.read();
            (g.header.client_id, g.header.element_size, g.header.params)
        };
        if client_id != class.client_id() || element_size != class.element_size() {
            return Err(Error::Mismatch {
                addr,
                expected_client: class.client_id(),
                found_client: client_id,
                expected_size: class.element_size(),
                found_size: element_size,
            });
        }
        // The header decoder has validated the parameters already.
        let geometry = Geometry::new(params)?;
        Self::with_shape(class, sizes, geometry, addr)
    }

    fn with_shape(class: C, sizes: Sizes, geometry: Geometry, header: Addr) -> Result<Self> {
        let mut fill = Vec::with_capacity(usize::from(class.element_size()));
        class.encode(&class.fill(), &mut fill)?;
        if fill.len() != usize::from(class.element_size()) || fill.is_empty() {
            return Err(corrupt(
                "EAHD",
                header,
                format!(
                    "the element class encodes {} bytes per element but declares {}",
                    fill.len(),
                    class.element_size()
                ),
            ));
        }
        let shape = Shape {
            sizes,
            geometry,
            element_size: class.element_size(),
            client_id: class.client_id(),
            header,
            fill,
        };
        Ok(ExtensibleArray {
            class,
            shape: Arc::new(shape),
            linked: HashSet::new(),
            index_block: std::sync::OnceLock::new(),
            known_len: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The header's address (what the layout message stores).
    pub fn addr(&self) -> Addr {
        self.shape.header
    }

    /// The element class.
    pub fn class(&self) -> &C {
        &self.class
    }

    /// The creation parameters (in the header's order; see the layout message for its own).
    pub fn params(&self) -> Params {
        self.shape.geometry.params()
    }

    /// The geometry derived from the parameters.
    pub fn geometry(&self) -> &Geometry {
        &self.shape.geometry
    }

    /// The maximum number of elements, `2^max_nelmts_bits`.
    pub fn max_len(&self) -> u64 {
        self.shape.geometry.max_nelmts()
    }

    /// A copy of the header as the cache holds it.
    pub fn header(&self, cache: &MetadataCache) -> Result<Header> {
        let h = cache.get::<HeaderEntry>(self.shape.header, &self.shape.sizes)?;
        let g = h.read();
        Ok(g.header.clone())
    }

    /// The header's statistics.
    pub fn stats(&self, cache: &MetadataCache) -> Result<Stats> {
        let h = cache.get::<HeaderEntry>(self.shape.header, &self.shape.sizes)?;
        let g = h.read();
        Ok(g.header.stats)
    }

    /// One more than the highest index set (`max_idx_set`): the element count libhdf5
    /// reports and the index `append` uses next.
    pub fn len(&self, cache: &MetadataCache) -> Result<u64> {
        Ok(self.stats(cache)?.max_idx_set)
    }

    /// Whether no element was ever set.
    pub fn is_empty(&self, cache: &MetadataCache) -> Result<bool> {
        Ok(self.len(cache)? == 0)
    }

    /// Bytes of file space the array occupies, as libhdf5 reports its index size: header,
    /// index block, super blocks and data blocks (paged ones at their full size).
    pub fn bytes_used(&self, cache: &MetadataCache) -> Result<u64> {
        let h = self.header(cache)?;
        let s = &self.shape;
        let mut n = Header::encoded_len(s.sizes) as u64;
        if h.index_block.is_some() {
            n = n.saturating_add(s.geometry.index_block_len(s.sizes, s.element_size) as u64);
        }
        Ok(n.saturating_add(h.stats.super_blk_size)
            .saturating_add(h.stats.data_blk_size))
    }

    fn locate(&self, i: u64) -> Result<Location> {
        let g = &self.shape.geometry;
        let out_of_range = || Error::OutOfRange {
            addr: self.shape.header,
            index: i,
            max: g.max_nelmts(),
        };
        if i >= g.max_nelmts() {
            return Err(out_of_range());
        }
        g.locate(i).ok_or_else(out_of_range)
    }

    fn row(&self, u: usize) -> Result<Row> {
        self.shape
            .geometry
            .row(u)
            .copied()
            .ok_or_else(|| corrupt("EAHD", self.shape.header, format!("no super block row {u}")))
    }

    fn row_ctx(&self, u: usize) -> RowCtx {
        RowCtx {
            shape: Arc::clone(&self.shape),
            u,
        }
    }

    /// The index block's address, once the array has one. It never moves once created (only
    /// deleting the array frees it), so the handle remembers it: a lookup does not visit the
    /// header.
    fn index_block_addr(&self, cache: &MetadataCache) -> Result<Option<Addr>> {
        if let Some(&ib) = self.index_block.get() {
            return Ok(Some(ib));
        }
        let h = cache.get::<HeaderEntry>(self.shape.header, &self.shape.sizes)?;
        let ib = h.read().header.index_block;
        if let Some(a) = ib {
            let _already = self.index_block.set(a);
        }
        Ok(ib)
    }

    /// Whether index `i` lies at or past the header's `max_idx_set`. The bound only grows (a
    /// writer's appends, a SWMR reader's refresh), so the handle keeps the last one read and
    /// visits the header only for an index at or past it.
    fn is_past_end(&self, cache: &MetadataCache, i: u64) -> Result<bool> {
        use std::sync::atomic::Ordering;
        if i < self.known_len.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let len = self.stats(cache)?.max_idx_set;
        self.known_len.fetch_max(len, Ordering::Relaxed);
        Ok(i >= len)
    }

    fn decode_at(
        &self,
        elements: &[u8],
        k: u64,
        structure: &'static str,
        at: Addr,
    ) -> Result<C::Element> {
        let bytes = element_range(k, self.shape.element_size)
            .and_then(|r| elements.get(r))
            .ok_or_else(|| corrupt(structure, at, format!("no element {k}")))?;
        Ok(self.class.decode(bytes, at)?)
    }

    /// Position `d` of row `u` among the index block's data block pointers.
    fn iblock_dblk_slot(&self, row: &Row, d: u64, at: Addr) -> Result<usize> {
        to_usize(add(row.start_dblk, d, "EAIB", at)?, "EAIB", at)
    }

    /// The page of data-block element `e` and the element's index in it. The page size is a
    /// power of two of at least 2 (the geometry validated it), so the division cannot fail.
    fn split_page(&self, e: u64) -> (u64, u64) {
        let n = self.shape.geometry.page_nelmts();
        (e.checked_div(n).unwrap_or(0), e.checked_rem(n).unwrap_or(0))
    }

    /// Address of page `p` of the data block at `dblk`.
    fn page_addr(&self, dblk: Addr, p: u64) -> Result<Addr> {
        let s = &self.shape;
        let page = u64::try_from(s.page_image_len().unwrap_or(usize::MAX)).unwrap_or(u64::MAX);
        let prefix = (s.geometry.data_block_prefix_len(s.sizes) as u64).saturating_add(4);
        mul(p, page, "EADB", dblk)
            .and_then(|o| add(o, prefix, "EADB", dblk))
            .and_then(|o| {
                dblk.checked_add(o)
                    .ok_or_else(|| corrupt("EADB", dblk, "page address overflows"))
            })
    }

    /// The element at index `i`; an element never set (or beyond every block created) reads as
    /// the class's fill element. At most four cache lookups (header, index block, super block,
    /// data block or page) and no allocation when they hit.
    pub fn get(&self, cache: &MetadataCache, i: u64) -> Result<C::Element> {
        let loc = self.locate(i)?;
        let fill = self.class.fill();
        if self.is_past_end(cache, i)? {
            // As libhdf5's `H5EA_get`: nothing at or past `max_idx_set` was ever set, whatever
            // a block on its path holds (`for_each`, and so `check`, stop there too).
            return Ok(fill);
        }
        let Some(ib) = self.index_block_addr(cache)? else {
            return Ok(fill);
        };
        let iblock = cache.get::<IndexBlockEntry>(ib, &self.shape)?;
        let (u, d, e) = match loc {
            Location::IndexBlock(k) => {
                let g = iblock.read();
                return self.decode_at(&g.block.elements, k as u64, "EAIB", ib);
            }
            Location::DataBlock { sblk, dblk, elmt } => (sblk, dblk, elmt),
        };
        let row = self.row(u)?;
        let g = &self.shape.geometry;
        if u < g.iblk_nsblks() {
            let slot = self.iblock_dblk_slot(&row, d, ib)?;
            let db = {
                let r = iblock.read();
                r.block.dblk_addrs.get(slot).copied().flatten()
            };
            let Some(db) = db else { return Ok(fill) };
            let block = cache.get_with::<DataBlockEntry>(db, || self.row_ctx(u))?;
            let r = block.read();
            return self.decode_at(&r.block.elements, e, "EADB", db);
        }
        let sb_addr = {
            let r = iblock.read();
            r.block
                .sblk_addrs
                .get(u.saturating_sub(g.iblk_nsblks()))
                .copied()
                .flatten()
        };
        let Some(sb_addr) = sb_addr else {
            return Ok(fill);
        };
        let sblock = cache.get_with::<SuperBlockEntry>(sb_addr, || self.row_ctx(u))?;
        let (db, page_init) = {
            let r = sblock.read();
            let db = r
                .block
                .dblk_addrs
                .get(to_usize(d, "EASB", sb_addr)?)
                .copied()
                .flatten();
            let init = if row.npages == 0 {
                true
            } else {
                let (p, _) = self.split_page(e);
                let b = add(mul(d, row.npages, "EASB", sb_addr)?, p, "EASB", sb_addr)?;
                bit(&r.block.page_init, b)
            };
            (db, init)
        };
        let Some(db) = db else { return Ok(fill) };
        if row.npages == 0 {
            let block = cache.get_with::<DataBlockEntry>(db, || self.row_ctx(u))?;
            let r = block.read();
            return self.decode_at(&r.block.elements, e, "EADB", db);
        }
        if !page_init {
            // A page never written holds meaningless bytes: every element is unset.
            return Ok(fill);
        }
        let (p, k) = self.split_page(e);
        let page_addr = self.page_addr(db, p)?;
        let page = cache.get::<PageEntry>(page_addr, &self.shape)?;
        let r = page.read();
        self.decode_at(&r.elements, k, "EADB page", page_addr)
    }

    /// Set element `i` to `value`, creating (initialised to the fill element) every missing
    /// block on its path, and update the header's statistics as libhdf5 does.
    pub fn insert(&mut self, cache: &MetadataCache, i: u64, value: &C::Element) -> Result<()> {
        self.set_inner(cache, i, value, None)
    }

    /// [`insert`](Self::insert), and make the block holding the element wait for `chunk` (the proxy
    /// of the raw-data chunk the element points to): the chunk reaches the file first.
    pub fn insert_with_proxy(
        &mut self,
        cache: &MetadataCache,
        i: u64,
        value: &C::Element,
        chunk: ProxyId,
    ) -> Result<()> {
        self.set_inner(cache, i, value, Some(chunk))
    }

    /// Set many elements at once (with `chunk`, every block holding one of them waits for that
    /// chunk proxy): the elements that share a block are written under one protect of that
    /// block, and the header's statistics are updated once. Equivalent to
    /// [`insert_with_proxy`](Self::insert_with_proxy) (or [`insert`](Self::insert)) on each item in order; a flush of
    /// appended chunks is one call.
    pub fn insert_many(
        &mut self,
        cache: &MetadataCache,
        items: &[(u64, C::Element)],
        chunk: Option<ProxyId>,
    ) -> Result<()> {
        let mut delta = Delta::default();
        let mut top: Option<u64> = None;
        // Each item's position in its block, found while grouping and used when writing.
        let mut positions: Vec<u64> = Vec::new();
        let mut rest = items;
        let result = (|| -> Result<()> {
            while let Some(((first, _), _)) = rest.split_first() {
                let loc = self.locate(*first)?;
                let (key, k) = self.block_of(loc)?;
                // Elements the block (or page) holds: the next index lands at the next
                // position while it stays below this (the append case, with no `locate`).
                let capacity = self.capacity_of(key)?;
                positions.clear();
                positions.push(k);
                let (mut prev_i, mut prev_k) = (*first, k);
                while let Some((i, _)) = rest.get(positions.len()) {
                    let next_k = prev_k.checked_add(1).filter(|&n| n < capacity);
                    let k = match next_k {
                        Some(n) if prev_i.checked_add(1) == Some(*i) => n,
                        _ => {
                            let (next, k) = self.block_of(self.locate(*i)?)?;
                            if next != key {
                                break;
                            }
                            k
                        }
                    };
                    positions.push(k);
                    (prev_i, prev_k) = (*i, k);
                }
                let (group, tail) = rest
                    .split_at_checked(positions.len())
                    .unwrap_or((rest, &[]));
                rest = tail;
                let target = self.make_path(cache, loc, &mut delta)?;
                let addr = self.write_group(cache, target, group, &positions)?;
                if let Some(p) = chunk {
                    match cache.add_flush_dependency(addr, p) {
                        Ok(()) | Err(h5chunk_cache::Error::DependencyExists { .. }) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                for (i, _) in group {
                    top = top.max(i.checked_add(1));
                }
                // The header learns of new blocks before the next group looks for them (a new
                // index block is found through it); the last group's go in with the new top.
                if !delta.is_empty() && !rest.is_empty() {
                    self.update_header(cache, &delta, None)?;
                    delta = Delta::default();
                }
            }
            Ok(())
        })();
        result?;
        self.update_header(cache, &delta, top)
    }

    /// How many elements the block (or page) `key` names holds.
    fn capacity_of(&self, key: BlockKey) -> Result<u64> {
        Ok(match key {
            BlockKey::Index => u64::from(self.params().idx_blk_elmts),
            BlockKey::Data(_, _, Some(_)) => self.shape.geometry.page_nelmts(),
            BlockKey::Data(sblk, _, None) => self.row(sblk)?.dblk_nelmts,
        })
    }

    /// Which block element location `loc` lives in (the index block, a data block, or a page of
    /// one), and the element's position in that block.
    fn block_of(&self, loc: Location) -> Result<(BlockKey, u64)> {
        Ok(match loc {
            Location::IndexBlock(k) => (BlockKey::Index, k as u64),
            Location::DataBlock { sblk, dblk, elmt } => {
                if self.row(sblk)?.npages == 0 {
                    (BlockKey::Data(sblk, dblk, None), elmt)
                } else {
                    let (p, k) = self.split_page(elmt);
                    (BlockKey::Data(sblk, dblk, Some(p)), k)
                }
            }
        })
    }

    /// Encode and store every element of `group` (all in the block `target` names) under one
    /// protect; returns the block's address.
    fn write_group(
        &self,
        cache: &MetadataCache,
        target: Slot,
        group: &[(u64, C::Element)],
        positions: &[u64],
    ) -> Result<Addr> {
        let esz = self.shape.element_size;
        let put = |elements: &mut [u8], structure: &'static str, at: Addr| -> Result<()> {
            for ((_, value), &k) in group.iter().zip(positions) {
                let dst = element_range(k, esz)
                    .and_then(|r| elements.get_mut(r))
                    .ok_or_else(|| corrupt(structure, at, format!("no element {k}")))?;
                self.class.encode_into(value, dst)?;
            }
            Ok(())
        };
        Ok(match target {
            Slot::IndexBlock(a) => {
                let mut e = cache.protect::<IndexBlockEntry>(a, &self.shape)?;
                put(&mut e.block.elements, "EAIB", a)?;
                a
            }
            Slot::DataBlock(a, u) => {
                let mut e = cache.protect::<DataBlockEntry>(a, &self.row_ctx(u))?;
                put(&mut e.block.elements, "EADB", a)?;
                a
            }
            Slot::Page(a) => {
                let mut e = cache.protect::<PageEntry>(a, &self.shape)?;
                put(&mut e.elements, "EADB page", a)?;
                a
            }
        })
    }

    /// Fold the statistics of new blocks and a new highest index (`top` = index + 1) into the
    /// header, protecting it only if something changed.
    fn update_header(&self, cache: &MetadataCache, delta: &Delta, top: Option<u64>) -> Result<()> {
        let max_idx_set = {
            let h = cache.get::<HeaderEntry>(self.shape.header, &self.shape.sizes)?;
            let g = h.read();
            g.header.stats.max_idx_set
        };
        let new_max = top.filter(|&m| m > max_idx_set);
        if delta.is_empty() && new_max.is_none() {
            return Ok(());
        }
        let mut h = cache.protect::<HeaderEntry>(self.shape.header, &self.shape.sizes)?;
        let hdr = &mut h.header;
        if let Some(ib) = delta.index_block {
            hdr.index_block = Some(ib);
        }
        let s = &mut hdr.stats;
        s.nsuper_blks = s.nsuper_blks.saturating_add(delta.nsuper_blks);
        s.super_blk_size = s.super_blk_size.saturating_add(delta.super_blk_size);
        s.ndata_blks = s.ndata_blks.saturating_add(delta.ndata_blks);
        s.data_blk_size = s.data_blk_size.saturating_add(delta.data_blk_size);
        s.nelmts = s.nelmts.saturating_add(delta.nelmts);
        if let Some(m) = new_max {
            s.max_idx_set = m;
        }
        Ok(())
    }

    /// Set the element after the highest one set (index `max_idx_set`) and return its index.
    pub fn append(&mut self, cache: &MetadataCache, value: &C::Element) -> Result<u64> {
        let i = self.len(cache)?;
        self.insert(cache, i, value)?;
        Ok(i)
    }

    /// Register `parent → child` unless this handle did already. A dependency registered by
    /// another handle of the same cache is fine.
    fn link(&mut self, cache: &MetadataCache, parent: Addr, child: Addr) -> Result<()> {
        if self.linked.contains(&child) {
            return Ok(());
        }
        match cache.add_flush_dependency(parent, child) {
            Ok(()) | Err(h5chunk_cache::Error::DependencyExists { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        self.linked.insert(child);
        Ok(())
    }

    fn allocate(&self, cache: &MetadataCache, len: u64) -> Result<Addr> {
        Ok(cache.allocator().allocate(len)?)
    }

    fn set_inner(
        &mut self,
        cache: &MetadataCache,
        i: u64,
        value: &C::Element,
        chunk: Option<ProxyId>,
    ) -> Result<()> {
        self.insert_many(cache, &[(i, *value)], chunk)
    }

    /// Create every missing block on the path to `loc`, registering each new block's flush
    /// dependency on its parent, and return where the element lives.
    fn make_path(
        &mut self,
        cache: &MetadataCache,
        loc: Location,
        delta: &mut Delta,
    ) -> Result<Slot> {
        let header = self.shape.header;
        let ib = match self.index_block_addr(cache)? {
            Some(a) => a,
            None => {
                let a = self.create_index_block(cache)?;
                delta.index_block = Some(a);
                delta.nelmts = u64::from(self.params().idx_blk_elmts);
                a
            }
        };
        self.link(cache, header, ib)?;
        let (u, d, e) = match loc {
            Location::IndexBlock(_) => return Ok(Slot::IndexBlock(ib)),
            Location::DataBlock { sblk, dblk, elmt } => (sblk, dblk, elmt),
        };
        let row = self.row(u)?;
        let iblk_nsblks = self.shape.geometry.iblk_nsblks();
        if u < iblk_nsblks {
            let slot = self.iblock_dblk_slot(&row, d, ib)?;
            let existing = {
                let r = cache.get::<IndexBlockEntry>(ib, &self.shape)?;
                let g = r.read();
                *g.block
                    .dblk_addrs
                    .get(slot)
                    .ok_or_else(|| corrupt("EAIB", ib, format!("no data block pointer {slot}")))?
            };
            let db = match existing {
                Some(a) => a,
                None => {
                    // libhdf5's block offset for these blocks counts data blocks from the
                    // start of the index block, not of the row (§11 Q1); copied for identical
                    // bytes, never read.
                    let off = add(
                        row.start_idx,
                        mul(slot as u64, row.dblk_nelmts, "EAIB", ib)?,
                        "EAIB",
                        ib,
                    )?;
                    let a = self.create_data_block(cache, u, off, delta)?;
                    let mut w = cache.protect::<IndexBlockEntry>(ib, &self.shape)?;
                    if let Some(p) = w.block.dblk_addrs.get_mut(slot) {
                        *p = Some(a);
                    }
                    a
                }
            };
            self.link(cache, ib, db)?;
            return Ok(Slot::DataBlock(db, u));
        }
        let sb_slot = u.saturating_sub(iblk_nsblks);
        let existing = {
            let r = cache.get::<IndexBlockEntry>(ib, &self.shape)?;
            let g = r.read();
            *g.block
                .sblk_addrs
                .get(sb_slot)
                .ok_or_else(|| corrupt("EAIB", ib, format!("no super block pointer {sb_slot}")))?
        };
        let sb = match existing {
            Some(a) => a,
            None => {
                let a = self.create_super_block(cache, u, delta)?;
                let mut w = cache.protect::<IndexBlockEntry>(ib, &self.shape)?;
                if let Some(p) = w.block.sblk_addrs.get_mut(sb_slot) {
                    *p = Some(a);
                }
                a
            }
        };
        self.link(cache, ib, sb)?;
        let d_idx = to_usize(d, "EASB", sb)?;
        let existing = {
            let r = cache.get::<SuperBlockEntry>(sb, &self.row_ctx(u))?;
            let g = r.read();
            *g.block
                .dblk_addrs
                .get(d_idx)
                .ok_or_else(|| corrupt("EASB", sb, format!("no data block pointer {d}")))?
        };
        let db = match existing {
            Some(a) => a,
            None => {
                let off = add(
                    row.start_idx,
                    mul(d, row.dblk_nelmts, "EASB", sb)?,
                    "EASB",
                    sb,
                )?;
                let a = self.create_data_block(cache, u, off, delta)?;
                let mut w = cache.protect::<SuperBlockEntry>(sb, &self.row_ctx(u))?;
                if let Some(p) = w.block.dblk_addrs.get_mut(d_idx) {
                    *p = Some(a);
                }
                a
            }
        };
        self.link(cache, sb, db)?;
        if row.npages == 0 {
            return Ok(Slot::DataBlock(db, u));
        }
        let page_nelmts = self.shape.geometry.page_nelmts();
        let (p, _) = self.split_page(e);
        let page_addr = self.page_addr(db, p)?;
        let b = add(mul(d, row.npages, "EASB", sb)?, p, "EASB", sb)?;
        let initialised = {
            let r = cache.get::<SuperBlockEntry>(sb, &self.row_ctx(u))?;
            let g = r.read();
            bit(&g.block.page_init, b)
        };
        if !initialised {
            let elements = self.shape.fill.repeat(to_usize(page_nelmts, "EADB", db)?);
            cache.insert(page_addr, PageEntry { elements })?;
            let mut w = cache.protect::<SuperBlockEntry>(sb, &self.row_ctx(u))?;
            set_bit(&mut w.block.page_init, b);
        }
        self.link(cache, sb, page_addr)?;
        Ok(Slot::Page(page_addr))
    }

    fn create_index_block(&mut self, cache: &MetadataCache) -> Result<Addr> {
        let s = &self.shape;
        let len = s.geometry.index_block_len(s.sizes, s.element_size);
        let a = self.allocate(cache, len as u64)?;
        let block = IndexBlock::new(s.client_id, s.header, &s.geometry, &s.fill);
        cache.insert(
            a,
            IndexBlockEntry {
                shape: Arc::clone(s),
                block,
            },
        )?;
        Ok(a)
    }

    fn create_super_block(
        &mut self,
        cache: &MetadataCache,
        u: usize,
        delta: &mut Delta,
    ) -> Result<Addr> {
        let s = &self.shape;
        let len = s.geometry.super_block_len(s.sizes, u);
        let a = self.allocate(cache, len as u64)?;
        let block = SuperBlock::new(s.client_id, s.header, &s.geometry, u);
        cache.insert(
            a,
            SuperBlockEntry {
                shape: Arc::clone(s),
                u,
                block,
            },
        )?;
        delta.nsuper_blks = delta.nsuper_blks.saturating_add(1);
        delta.super_blk_size = delta.super_blk_size.saturating_add(len as u64);
        Ok(a)
    }

    fn create_data_block(
        &mut self,
        cache: &MetadataCache,
        u: usize,
        block_offset: u64,
        delta: &mut Delta,
    ) -> Result<Addr> {
        let s = &self.shape;
        let row = self.row(u)?;
        // A paged block's space covers all of its pages; its cache image is the prefix alone.
        let len = s
            .geometry
            .data_block_allocated_len(s.sizes, u, s.element_size);
        let a = self.allocate(cache, len)?;
        let block = DataBlock::new(s.client_id, s.header, block_offset, &s.geometry, u, &s.fill);
        cache.insert(
            a,
            DataBlockEntry {
                shape: Arc::clone(s),
                u,
                block,
            },
        )?;
        delta.ndata_blks = delta.ndata_blks.saturating_add(1);
        delta.data_blk_size = delta.data_blk_size.saturating_add(len);
        delta.nelmts = delta.nelmts.saturating_add(row.dblk_nelmts);
        Ok(a)
    }

    /// Call `f` with every set element (per [`ElementClass::is_set`]) below `max_idx_set`, in
    /// index order, until it returns `Break`. Only blocks that exist are read.
    pub fn for_each(
        &self,
        cache: &MetadataCache,
        mut f: impl FnMut(u64, C::Element) -> ControlFlow<()>,
    ) -> Result<()> {
        let end = self.len(cache)?;
        let Some(ib) = self.index_block_addr(cache)? else {
            return Ok(());
        };
        let g = &self.shape.geometry;
        let iblk_elmts = u64::from(self.params().idx_blk_elmts);
        let iblock = cache.get::<IndexBlockEntry>(ib, &self.shape)?;
        let (elements, dblk_addrs, sblk_addrs) = {
            let r = iblock.read();
            (
                r.block.elements.clone(),
                r.block.dblk_addrs.clone(),
                r.block.sblk_addrs.clone(),
            )
        };
        let mut visit = |base: u64,
                         elements: &[u8],
                         n: u64,
                         structure: &'static str,
                         at: Addr|
         -> Result<ControlFlow<()>> {
            for k in 0..n {
                let i = add(base, k, structure, at)?;
                if i >= end {
                    return Ok(ControlFlow::Break(()));
                }
                let v = self.decode_at(elements, k, structure, at)?;
                if self.class.is_set(&v) && f(i, v).is_break() {
                    return Ok(ControlFlow::Break(()));
                }
            }
            Ok(ControlFlow::Continue(()))
        };
        if visit(0, &elements, iblk_elmts, "EAIB", ib)?.is_break() {
            return Ok(());
        }
        for u in 0..g.nsblks() {
            let row = self.row(u)?;
            let row_base = add(iblk_elmts, row.start_idx, "EAHD", self.shape.header)?;
            if row_base >= end {
                break;
            }
            let sblock = if u < g.iblk_nsblks() {
                None
            } else {
                match sblk_addrs
                    .get(u.saturating_sub(g.iblk_nsblks()))
                    .copied()
                    .flatten()
                {
                    None => continue,
                    Some(sb) => {
                        let e = cache.get::<SuperBlockEntry>(sb, &self.row_ctx(u))?;
                        let r = e.read();
                        Some((sb, r.block.dblk_addrs.clone(), r.block.page_init.clone()))
                    }
                }
            };
            for d in 0..row.ndblks {
                let base = add(
                    row_base,
                    mul(d, row.dblk_nelmts, "EAHD", self.shape.header)?,
                    "EAHD",
                    self.shape.header,
                )?;
                if base >= end {
                    return Ok(());
                }
                let db = match &sblock {
                    None => {
                        let slot = self.iblock_dblk_slot(&row, d, ib)?;
                        dblk_addrs.get(slot).copied().flatten()
                    }
                    Some((sb, addrs, _)) => addrs.get(to_usize(d, "EASB", *sb)?).copied().flatten(),
                };
                let Some(db) = db else { continue };
                if row.npages == 0 {
                    let e = cache.get::<DataBlockEntry>(db, &self.row_ctx(u))?;
                    let r = e.read();
                    if visit(base, &r.block.elements, row.dblk_nelmts, "EADB", db)?.is_break() {
                        return Ok(());
                    }
                    continue;
                }
                let Some((sb, _, page_init)) = &sblock else {
                    return Err(corrupt(
                        "EAIB",
                        ib,
                        "a paged data block row hangs off the index block",
                    ));
                };
                // Lookups go straight to the pages, as libhdf5's do; iteration also verifies
                // the data block's own prefix.
                cache.get::<DataBlockEntry>(db, &self.row_ctx(u))?;
                for p in 0..row.npages {
                    let pbase = add(base, mul(p, g.page_nelmts(), "EASB", *sb)?, "EASB", *sb)?;
                    if pbase >= end {
                        return Ok(());
                    }
                    let b = add(mul(d, row.npages, "EASB", *sb)?, p, "EASB", *sb)?;
                    if !bit(page_init, b) {
                        continue;
                    }
                    let pa = self.page_addr(db, p)?;
                    let e = cache.get::<PageEntry>(pa, &self.shape)?;
                    let r = e.read();
                    if visit(pbase, &r.elements, g.page_nelmts(), "EADB page", pa)?.is_break() {
                        return Ok(());
                    }
                }
            }
        }
        Ok(())
    }

    /// Every set element below `max_idx_set`, in index order.
    pub fn to_vec(&self, cache: &MetadataCache) -> Result<Vec<(u64, C::Element)>> {
        let mut out = Vec::new();
        self.for_each(cache, |i, v| {
            out.push((i, v));
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }

    /// Delete the array: drop every block from the cache and free its space (data blocks with
    /// their pages, super blocks, the index block, the header). Under SWMR the allocator
    /// defers the reuse of the space.
    pub fn delete(self, cache: &MetadataCache) -> Result<()> {
        let s = Arc::clone(&self.shape);
        let g = &s.geometry;
        let header = self.header(cache)?;
        if let Some(ib) = header.index_block {
            let (dblk_addrs, sblk_addrs) = {
                let e = cache.get::<IndexBlockEntry>(ib, &s)?;
                let r = e.read();
                (r.block.dblk_addrs.clone(), r.block.sblk_addrs.clone())
            };
            let mut slot = 0usize;
            for u in 0..g.iblk_nsblks() {
                let row = self.row(u)?;
                for _ in 0..row.ndblks {
                    if let Some(db) = dblk_addrs.get(slot).copied().flatten() {
                        self.free_data_block(cache, db, u, None)?;
                    }
                    slot = slot.saturating_add(1);
                }
            }
            for (k, sb) in sblk_addrs.iter().enumerate() {
                let Some(sb) = *sb else { continue };
                let u = g.iblk_nsblks().saturating_add(k);
                let (addrs, page_init) = {
                    let e = cache.get::<SuperBlockEntry>(sb, &self.row_ctx(u))?;
                    let r = e.read();
                    (r.block.dblk_addrs.clone(), r.block.page_init.clone())
                };
                for (d, db) in addrs.iter().enumerate() {
                    if let Some(db) = *db {
                        self.free_data_block(cache, db, u, Some((page_init.as_slice(), d as u64)))?;
                    }
                }
                cache.remove(sb)?;
                cache
                    .allocator()
                    .free(sb, g.super_block_len(s.sizes, u) as u64)?;
            }
            cache.remove(ib)?;
            cache
                .allocator()
                .free(ib, g.index_block_len(s.sizes, s.element_size) as u64)?;
        }
        cache.remove(s.header)?;
        cache
            .allocator()
            .free(s.header, Header::encoded_len(s.sizes) as u64)?;
        Ok(())
    }

    fn free_data_block(
        &self,
        cache: &MetadataCache,
        db: Addr,
        u: usize,
        pages: Option<(&[u8], u64)>,
    ) -> Result<()> {
        let s = &self.shape;
        let row = self.row(u)?;
        if let Some((bitmap, d)) = pages {
            for p in 0..row.npages {
                let b = add(mul(d, row.npages, "EASB", db)?, p, "EASB", db)?;
                if bit(bitmap, b) {
                    cache.remove(self.page_addr(db, p)?)?;
                }
            }
        }
        cache.remove(db)?;
        let len = s
            .geometry
            .data_block_allocated_len(s.sizes, u, s.element_size);
        cache.allocator().free(db, len)?;
        Ok(())
    }
}
