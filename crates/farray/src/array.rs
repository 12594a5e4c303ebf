//! The fixed array over the metadata cache: create, open, get, insert, for_each, delete.
//!
//! A fixed array is a header (`FAHD`) and, from the first set on, one data block (`FADB`). A
//! small array keeps its elements in the data block; an array of more than `2^page_bits`
//! elements keeps them in pages that follow the data block in the file, each a cache entry of
//! its own, written only once an element of it is set (the data block's page-init bitmap says
//! which pages exist; the others read as the fill value). The whole block, pages included, is
//! allocated when the block is created, as libhdf5 does.
//!
//! Flush dependencies (SWMR design, table 8), parent → child:
//!
//! | parent                          | child                          | why                               |
//! |---------------------------------|--------------------------------|-----------------------------------|
//! | header                          | data block                     | the header stores its address     |
//! | data block (paged)              | page, from its first use on    | the bitmap marks the page valid   |
//! | data block (unpaged) or page    | chunk proxy                    | an element stores a chunk address |
//!
//! Every dependency is added before the parent is modified to point at the child, so there is
//! no moment at which an eviction could write a parent that points at an unwritten child.

use std::ops::ControlFlow;
use std::sync::OnceLock;

use h5chunk_cache::{MetadataCache, ProxyId};
use h5chunk_format::farray::{DataBlock, Geometry, Header, MAX_PAGE_BITS, bit};
use h5chunk_format::{Addr, Sizes};

use crate::class::ElementClass;
use crate::entry::{
    BlockContext, DATA_BLOCK_TYPE, DataBlockEntry, HEADER_TYPE, HeaderEntry, PAGE_TYPE,
    PageContext, PageEntry,
};
use crate::error::{Error, Result};

/// What a fixed array is created with, and what opening one checks its header against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Params {
    /// Number of elements: for a chunk index, the number of chunks of the dataset at its
    /// maximum dimensions.
    pub nelmts: u64,
    /// log2 of the number of elements in a data block page (the layout message's
    /// `max_dblk_page_nelmts_bits`; libhdf5 uses 10).
    pub max_dblk_page_nelmts_bits: u8,
}

impl Params {
    /// The parameters of the chunk index of a dataset with these maximum dimensions and chunk
    /// dimensions: one element per chunk of the maximum chunk grid, `Π ceil(max / chunk)`.
    pub fn for_chunks(max_dims: &[u64], chunk_dims: &[u64], page_bits: u8) -> Result<Params> {
        if max_dims.len() != chunk_dims.len() {
            return Err(Error::InvalidArgument(format!(
                "{} maximum dimensions but {} chunk dimensions",
                max_dims.len(),
                chunk_dims.len()
            )));
        }
        let mut nelmts = 1u64;
        for (&max, &chunk) in max_dims.iter().zip(chunk_dims) {
            let n = max
                .checked_div(chunk)
                .ok_or_else(|| Error::InvalidArgument("a chunk dimension is zero".to_string()))?;
            let n = if max.checked_rem(chunk) == Some(0) {
                n
            } else {
                n.saturating_add(1)
            };
            nelmts = nelmts.checked_mul(n).ok_or_else(|| {
                Error::InvalidArgument("the number of chunks overflows".to_string())
            })?;
        }
        Ok(Params {
            nelmts,
            max_dblk_page_nelmts_bits: page_bits,
        })
    }
}

/// A fixed array of `C` elements kept in a [`MetadataCache`].
///
/// The handle holds what the header fixes (element count, sizes, geometry); blocks are reached
/// through the cache given to each call, so readers and the writer each use their own cache
/// over the same storage. Reads take `&self`; modifications take `&mut self` (single writer).
#[derive(Debug)]
pub struct FixedArray<C: ElementClass> {
    addr: Addr,
    sizes: Sizes,
    class: C,
    client_id: u8,
    element_size: u8,
    page_bits: u8,
    geometry: Geometry,
    /// Bytes of the data block and all its pages, checked not to overflow at construction: every
    /// offset inside the block is below it.
    allocated_len: u64,
    /// The fill value, encoded.
    fill: Vec<u8>,
    /// The data block's address once known; it never changes until the array is deleted.
    data_block: OnceLock<Addr>,
}

impl<C: ElementClass> FixedArray<C> {
    /// Create an empty array: allocate and insert its header. The data block is created by
    /// the first set.
    pub fn create(
        cache: &MetadataCache,
        sizes: Sizes,
        class: C,
        params: Params,
    ) -> Result<FixedArray<C>> {
        let (client_id, element_size) = check_class(&class)?;
        if params.nelmts == 0 {
            return Err(Error::InvalidArgument(
                "a fixed array has at least one element".to_string(),
            ));
        }
        let page_bits = params.max_dblk_page_nelmts_bits;
        if page_bits == 0 || page_bits > MAX_PAGE_BITS {
            return Err(Error::InvalidArgument(format!(
                "page bits {page_bits} not in 1..={MAX_PAGE_BITS}"
            )));
        }
        let header = Header {
            client_id,
            element_size,
            max_dblk_page_nelmts_bits: page_bits,
            nelmts: params.nelmts,
            data_block: None,
        };
        let array = FixedArray::from_header(Addr(0), sizes, class, &header)?;
        let len = header_len(sizes);
        let addr = cache.allocator().allocate(len)?;
        cache.insert(addr, HeaderEntry { header, sizes })?;
        Ok(FixedArray { addr, ..array })
    }

    /// Open the array whose header is at `addr`, checking the header against the class and
    /// against `expected` (what the dataset's layout implies): an element count, element size,
    /// client id or page size that differs is [`Error::Mismatch`].
    pub fn open(
        cache: &MetadataCache,
        addr: Addr,
        sizes: Sizes,
        class: C,
        expected: Params,
    ) -> Result<FixedArray<C>> {
        let (client_id, element_size) = check_class(&class)?;
        let header = cache
            .get::<HeaderEntry>(addr, &sizes)?
            .read()
            .header
            .clone();
        let checks = [
            ("number of elements", header.nelmts, expected.nelmts),
            (
                "element size",
                header.element_size.into(),
                element_size.into(),
            ),
            ("client id", header.client_id.into(), client_id.into()),
            (
                "max data block page elements bits",
                header.max_dblk_page_nelmts_bits.into(),
                expected.max_dblk_page_nelmts_bits.into(),
            ),
        ];
        for (field, found, expected) in checks {
            if found != expected {
                return Err(Error::Mismatch {
                    addr,
                    field,
                    found,
                    expected,
                });
            }
        }
        let array = FixedArray::from_header(addr, sizes, class, &header)?;
        if let Some(db) = header.data_block {
            array.check_placement(db)?;
            let _ = array.data_block.set(db);
        }
        Ok(array)
    }

    /// The handle of an array with this header at `addr`, once its geometry is known to be
    /// addressable.
    fn from_header(addr: Addr, sizes: Sizes, class: C, h: &Header) -> Result<FixedArray<C>> {
        let geometry = h.geometry()?;
        // The block's full size, computed checked here so that no offset inside it can
        // overflow later: prefix (signature, version, client id, header address, bitmap),
        // checksum, elements, one checksum per page.
        let too_large = || Error::Format(invalid(addr, "the data block's size overflows"));
        let bitmap = geometry.npages.div_ceil(8);
        let allocated_len = bitmap
            .checked_add(10)
            .and_then(|n| n.checked_add(sizes.offsets().into()))
            .and_then(|n| n.checked_add(geometry.nelmts.checked_mul(h.element_size.into())?))
            .and_then(|n| n.checked_add(geometry.npages.checked_mul(4)?))
            .ok_or_else(too_large)?;
        usize::try_from(geometry.block_image_len(sizes)).map_err(|_| too_large())?;
        let mut fill = Vec::new();
        class.encode(&class.fill(), &mut fill)?;
        if fill.len() != usize::from(h.element_size) {
            return Err(bad_width(fill.len(), h.element_size));
        }
        Ok(FixedArray {
            addr,
            sizes,
            class,
            client_id: h.client_id,
            element_size: h.element_size,
            page_bits: h.max_dblk_page_nelmts_bits,
            geometry,
            allocated_len,
            fill,
            data_block: OnceLock::new(),
        })
    }

    /// The header's address (what the layout message stores).
    pub fn addr(&self) -> Addr {
        self.addr
    }

    /// The number of elements.
    pub fn len(&self) -> u64 {
        self.geometry.nelmts
    }

    /// Whether the array has no elements (never: creation refuses it).
    pub fn is_empty(&self) -> bool {
        self.geometry.nelmts == 0
    }

    /// The element class.
    pub fn class(&self) -> &C {
        &self.class
    }

    /// The parameters the array was created with.
    pub fn params(&self) -> Params {
        Params {
            nelmts: self.geometry.nelmts,
            max_dblk_page_nelmts_bits: self.page_bits,
        }
    }

    /// The data block's geometry: whether it is paged, how many pages, their sizes.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The data block's address, `None` until the first set. Asks the header while unknown, so
    /// a reader sees a block a writer created after it opened the array.
    pub fn data_block_addr(&self, cache: &MetadataCache) -> Result<Option<Addr>> {
        if let Some(&db) = self.data_block.get() {
            return Ok(Some(db));
        }
        let db = cache
            .get::<HeaderEntry>(self.addr, &self.sizes)?
            .read()
            .header
            .data_block;
        if let Some(db) = db {
            self.check_placement(db)?;
            let _ = self.data_block.set(db);
        }
        Ok(db)
    }

    /// The address of page `p` of the data block at `db` (paged arrays only).
    pub fn page_addr(&self, db: Addr, p: u64) -> Result<Addr> {
        if p >= self.geometry.npages {
            return Err(Error::OutOfRange {
                index: p,
                len: self.geometry.npages,
            });
        }
        // `page_offset` of an existing page is below `allocated_len`, checked at construction.
        db.checked_add(self.geometry.page_offset(p, self.sizes))
            .ok_or_else(|| Error::Format(invalid(self.addr, "page address overflows")))
    }

    /// Bytes of file space the array occupies: header, plus data block and all its pages once
    /// the block exists.
    pub fn bytes_used(&self, cache: &MetadataCache) -> Result<u64> {
        let block = match self.data_block_addr(cache)? {
            Some(_) => self.allocated_len,
            None => 0,
        };
        Ok(header_len(self.sizes).saturating_add(block))
    }

    /// Element `index`; the fill value when it was never set.
    pub fn get(&self, cache: &MetadataCache, index: u64) -> Result<C::Value> {
        self.check_index(index)?;
        let Some(db) = self.data_block_addr(cache)? else {
            return Ok(self.class.fill());
        };
        let block = cache.get::<DataBlockEntry>(db, &self.block_ctx())?;
        if !self.geometry.is_paged() {
            let guard = block.read();
            let base = self.elements_addr(db);
            return self.decode_at(&guard.block.elements, index, base);
        }
        let (p, j) = self.geometry.locate(index);
        if !block.read().block.page_initialized(p) {
            return Ok(self.class.fill());
        }
        drop(block);
        let pa = self.page_addr(db, p)?;
        let page = cache.get::<PageEntry>(pa, &self.page_ctx(p))?;
        let guard = page.read();
        self.decode_at(&guard.elements, j, pa)
    }

    /// Set element `index`, creating the data block (and, when paged, the element's page) on
    /// first use.
    pub fn insert(&mut self, cache: &MetadataCache, index: u64, value: &C::Value) -> Result<()> {
        self.insert_with_proxy(cache, index, value, None)
    }

    /// Set element `index` to a value that points at a chunk which `proxy` stands for: the
    /// block or page holding the element then waits for the chunk to be written before it can
    /// be. The dependency stays until the proxy's owner removes the proxy.
    pub fn insert_with_proxy(
        &mut self,
        cache: &MetadataCache,
        index: u64,
        value: &C::Value,
        proxy: Option<ProxyId>,
    ) -> Result<()> {
        self.insert_many(cache, std::slice::from_ref(&(index, value.clone())), proxy)
    }

    /// Set many elements (with `proxy`, every block or page holding one of them waits for that
    /// chunk proxy), equivalent to [`insert_with_proxy`](Self::insert_with_proxy) on each in order:
    /// the elements that share a page (or the whole unpaged block) are written under one
    /// protect, and a new page is created and marked valid once. A flush of appended chunks is
    /// one call.
    pub fn insert_many(
        &mut self,
        cache: &MetadataCache,
        items: &[(u64, C::Value)],
        proxy: Option<ProxyId>,
    ) -> Result<()> {
        // Every item is checked (index in range) and encoded, once, before anything changes.
        let esz = usize::from(self.element_size);
        if esz == 0 {
            return Err(bad_width(0, self.element_size));
        }
        let mut encoded = vec![0u8; items.len().saturating_mul(esz)];
        for ((index, value), bytes) in items.iter().zip(encoded.chunks_exact_mut(esz)) {
            self.check_index(*index)?;
            self.class.encode_into(value, bytes)?;
        }
        if items.is_empty() {
            return Ok(());
        }
        let db = match self.data_block_addr(cache)? {
            Some(db) => db,
            None => self.create_data_block(cache)?,
        };
        let ctx = self.block_ctx();
        if !self.geometry.is_paged() {
            if let Some(proxy) = proxy {
                depend(cache, db, proxy)?;
            }
            let mut block = cache.protect::<DataBlockEntry>(db, &ctx)?;
            let at = self.elements_addr(db);
            for ((index, _), bytes) in items.iter().zip(encoded.chunks_exact(esz)) {
                self.slot(&mut block.block.elements, *index, at)?
                    .copy_from_slice(bytes);
            }
            return Ok(());
        }
        let (mut rest, mut rest_bytes) = (items, encoded.as_slice());
        while let Some(((first, _), _)) = rest.split_first() {
            let (p, _) = self.geometry.locate(*first);
            let n = rest
                .iter()
                .take_while(|(i, _)| self.geometry.locate(*i).0 == p)
                .count();
            let (group, tail) = rest.split_at_checked(n).unwrap_or((rest, &[]));
            let (group_bytes, bytes_tail) = rest_bytes
                .split_at_checked(n.saturating_mul(esz))
                .unwrap_or((rest_bytes, &[]));
            (rest, rest_bytes) = (tail, bytes_tail);
            self.set_in_page(cache, db, p, group, group_bytes, proxy)?;
        }
        Ok(())
    }

    /// [`insert_many`](Self::insert_many) for items that all live in page `p`.
    fn set_in_page(
        &self,
        cache: &MetadataCache,
        db: Addr,
        p: u64,
        group: &[(u64, C::Value)],
        encoded: &[u8],
        proxy: Option<ProxyId>,
    ) -> Result<()> {
        let ctx = &self.block_ctx();
        let pa = self.page_addr(db, p)?;
        let pctx = self.page_ctx(p);
        let initialized = cache
            .get::<DataBlockEntry>(db, ctx)?
            .read()
            .block
            .page_initialized(p);
        if !initialized {
            // A new page, filled with the fill value, reaches the cache and the dependency
            // graph before the bitmap marks it valid. A resident page with its bit still clear
            // is the leftover of an interrupted set; it is reused.
            if !cache.is_resident(pa) {
                let n = usize::try_from(pctx.nelmts)
                    .map_err(|_| Error::Format(invalid_in(PAGE_TYPE, pa, "page too large")))?;
                let elements = self.fill.repeat(n);
                cache.insert(pa, PageEntry { elements })?;
            }
            depend(cache, db, pa)?;
        }
        if let Some(proxy) = proxy {
            depend(cache, pa, proxy)?;
        }
        {
            let mut page = cache.protect::<PageEntry>(pa, &pctx)?;
            let esz = usize::from(self.element_size).max(1);
            for ((index, _), bytes) in group.iter().zip(encoded.chunks_exact(esz)) {
                let (_, j) = self.geometry.locate(*index);
                self.slot(&mut page.elements, j, pa)?.copy_from_slice(bytes);
            }
        }
        if !initialized {
            cache
                .protect::<DataBlockEntry>(db, ctx)?
                .block
                .set_page_initialized(p);
        }
        Ok(())
    }

    /// Visit every set element (see [`ElementClass::is_set`]) in index order, until `f`
    /// breaks. Pages never written are skipped without being read.
    pub fn for_each(
        &self,
        cache: &MetadataCache,
        mut f: impl FnMut(u64, C::Value) -> ControlFlow<()>,
    ) -> Result<()> {
        let Some(db) = self.data_block_addr(cache)? else {
            return Ok(());
        };
        let block = cache.get::<DataBlockEntry>(db, &self.block_ctx())?;
        if !self.geometry.is_paged() {
            // Decoded under the read guard, visited after it is released: `f` may use the cache.
            let set = self.decode_set(&block.read().block.elements, 0, self.elements_addr(db))?;
            for (i, v) in set {
                if f(i, v).is_break() {
                    break;
                }
            }
            return Ok(());
        }
        let bitmap = block.read().block.page_init.clone();
        drop(block);
        for p in 0..self.geometry.npages {
            if !bit(&bitmap, p) {
                continue;
            }
            let pa = self.page_addr(db, p)?;
            let page = cache.get::<PageEntry>(pa, &self.page_ctx(p))?;
            // p < npages, so p × page_nelmts is below nelmts.
            let start = p.saturating_mul(self.geometry.page_nelmts);
            let set = self.decode_set(&page.read().elements, start, pa)?;
            for (i, v) in set {
                if f(i, v).is_break() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Every set element with its index, in index order.
    pub fn to_vec(&self, cache: &MetadataCache) -> Result<Vec<(u64, C::Value)>> {
        let mut out = Vec::new();
        self.for_each(cache, |i, v| {
            out.push((i, v));
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }

    /// Delete the array: drop its blocks from the cache without writing them and free their
    /// file space. The caller makes the layout stop pointing at it.
    pub fn delete(self, cache: &MetadataCache) -> Result<()> {
        if let Some(db) = self.data_block_addr(cache)? {
            if self.geometry.is_paged() {
                let bitmap = cache
                    .get::<DataBlockEntry>(db, &self.block_ctx())?
                    .read()
                    .block
                    .page_init
                    .clone();
                for p in 0..self.geometry.npages {
                    if bit(&bitmap, p) {
                        cache.remove(self.page_addr(db, p)?)?;
                    }
                }
            }
            cache.remove(db)?;
            cache.allocator().free(db, self.allocated_len)?;
        }
        cache.remove(self.addr)?;
        cache.allocator().free(self.addr, header_len(self.sizes))?;
        Ok(())
    }

    // ----- internals ----------------------------------------------------------------------

    fn create_data_block(&mut self, cache: &MetadataCache) -> Result<Addr> {
        let ctx = self.block_ctx();
        let block = DataBlock::new(self.client_id, self.addr, &self.geometry, &self.fill);
        let entry = DataBlockEntry::new(block, &ctx)?;
        let db = cache.allocator().allocate(self.allocated_len)?;
        cache.insert(db, entry)?;
        // The dependency exists before the header points at the block.
        depend(cache, self.addr, db)?;
        cache
            .protect::<HeaderEntry>(self.addr, &self.sizes)?
            .header
            .data_block = Some(db);
        let _ = self.data_block.set(db);
        Ok(db)
    }

    /// A data block address read from the header must leave room for the whole block without
    /// overlapping the header.
    fn check_placement(&self, db: Addr) -> Result<()> {
        let end = db
            .checked_add(self.allocated_len)
            .ok_or_else(|| invalid(self.addr, "data block runs past the address space"))?;
        let header_end = self.addr.checked_add(header_len(self.sizes));
        if header_end.is_none_or(|he| db < he) && self.addr < end {
            return Err(
                invalid(self.addr, format!("data block at {db} overlaps the header")).into(),
            );
        }
        Ok(())
    }

    fn check_index(&self, index: u64) -> Result<()> {
        if index >= self.geometry.nelmts {
            return Err(Error::OutOfRange {
                index,
                len: self.geometry.nelmts,
            });
        }
        Ok(())
    }

    fn block_ctx(&self) -> BlockContext {
        BlockContext {
            sizes: self.sizes,
            geometry: self.geometry,
            header: self.addr,
            client_id: self.client_id,
        }
    }

    fn page_ctx(&self, p: u64) -> PageContext {
        PageContext {
            nelmts: self.geometry.page_nelmts_of(p),
            element_size: self.element_size,
        }
    }

    /// The file address of an unpaged block's first element.
    fn elements_addr(&self, db: Addr) -> Addr {
        db.checked_add(self.geometry.prefix_len(self.sizes) as u64)
            .unwrap_or(db)
    }

    /// The byte range of element `j` in `elements`, or a decode error naming `at`.
    fn range(&self, len: usize, j: u64, at: Addr) -> Result<std::ops::Range<usize>> {
        let esz = usize::from(self.element_size);
        usize::try_from(j)
            .ok()
            .and_then(|j| j.checked_mul(esz))
            .and_then(|start| Some(start..start.checked_add(esz)?))
            .filter(|r| r.end <= len)
            .ok_or_else(|| {
                invalid_in(
                    DATA_BLOCK_TYPE,
                    at,
                    format!("element {j} outside the block"),
                )
                .into()
            })
    }

    fn slot<'a>(&self, elements: &'a mut [u8], j: u64, at: Addr) -> Result<&'a mut [u8]> {
        let r = self.range(elements.len(), j, at)?;
        elements
            .get_mut(r)
            .ok_or_else(|| invalid_in(DATA_BLOCK_TYPE, at, "element outside the block").into())
    }

    fn decode_at(&self, elements: &[u8], j: u64, at: Addr) -> Result<C::Value> {
        let r = self.range(elements.len(), j, at)?;
        let start = r.start as u64;
        let bytes = elements
            .get(r)
            .ok_or_else(|| invalid_in(DATA_BLOCK_TYPE, at, "element outside the block"))?;
        Ok(self
            .class
            .decode(bytes, at.checked_add(start).unwrap_or(at))?)
    }

    /// The set elements of one block or page whose first element has index `start`.
    fn decode_set(&self, elements: &[u8], start: u64, at: Addr) -> Result<Vec<(u64, C::Value)>> {
        let mut out = Vec::new();
        let mut index = start;
        let mut offset = 0u64;
        for bytes in elements.chunks_exact(usize::from(self.element_size)) {
            let v = self
                .class
                .decode(bytes, at.checked_add(offset).unwrap_or(at))?;
            if self.class.is_set(&v) {
                out.push((index, v));
            }
            index = index.saturating_add(1);
            offset = offset.saturating_add(self.element_size.into());
        }
        Ok(out)
    }
}

/// `parent` waits for `child`; a dependency that exists already is fine.
fn depend(
    cache: &MetadataCache,
    parent: impl Into<h5chunk_cache::Key>,
    child: impl Into<h5chunk_cache::Key>,
) -> Result<()> {
    match cache.add_flush_dependency(parent, child) {
        Ok(()) | Err(h5chunk_cache::Error::DependencyExists { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

fn header_len(sizes: Sizes) -> u64 {
    Header::encoded_len(sizes) as u64
}

fn check_class<C: ElementClass>(class: &C) -> Result<(u8, u8)> {
    let client_id = class.client_id();
    if client_id > 1 {
        return Err(Error::InvalidArgument(format!(
            "client id {client_id} (fixed arrays know 0 and 1)"
        )));
    }
    let size = class.element_size();
    let element_size = u8::try_from(size)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| Error::InvalidArgument(format!("element size {size} not in 1..=255")))?;
    Ok((client_id, element_size))
}

fn bad_width(found: usize, element_size: u8) -> Error {
    Error::InvalidArgument(format!(
        "the element class encoded {found} bytes, not {element_size}"
    ))
}

fn invalid(at: Addr, reason: impl Into<String>) -> h5chunk_format::Error {
    invalid_in(HEADER_TYPE, at, reason)
}

fn invalid_in(
    structure: &'static str,
    at: Addr,
    reason: impl Into<String>,
) -> h5chunk_format::Error {
    h5chunk_format::Error::Invalid {
        structure,
        at,
        reason: reason.into(),
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects
)]
mod tests {
    use std::sync::Arc;

    use h5chunk_cache::{CacheConfig, MemStorage};
    use h5chunk_format::chunk_record::RecordCodec;

    use super::*;

    /// The header libhdf5 1.14.6 wrote for a 12-chunk array (docs/format/chunk-index-format.md §7.1).
    #[rustfmt::skip]
    const FAHD: [u8; 28] = [
        b'F', b'A', b'H', b'D',
        0x00,                                           // version
        0x00,                                           // client id: unfiltered
        0x08,                                           // element size
        0x0a,                                           // page bits
        0x0c, 0, 0, 0, 0, 0, 0, 0,                      // 12 elements
        0xeb, 0x01, 0, 0, 0, 0, 0, 0,                   // data block @ 491
        0x79, 0xcf, 0x9f, 0x5f,                         // checksum
    ];

    fn cache_with_header() -> MetadataCache {
        let mut bytes = vec![0u8; 0x1c3];
        bytes.extend_from_slice(&FAHD);
        let storage = Arc::new(MemStorage::from_vec(bytes));
        MetadataCache::new(storage, CacheConfig::default()).unwrap()
    }

    #[test]
    fn open_checks_libhdf5_header_against_layout() {
        let s = Sizes::DEFAULT;
        let cache = cache_with_header();
        let codec = RecordCodec::unfiltered(s);
        let p = Params::for_chunks(&[12, 10], &[4, 5], 10).unwrap();
        assert_eq!(p.nelmts, 6);
        // The header holds 12 elements: a (12, 10) dataset in (4, 5) chunks implies 6.
        let err = FixedArray::open(&cache, Addr(0x1c3), s, codec, p).unwrap_err();
        assert!(matches!(
            err,
            Error::Mismatch {
                field: "number of elements",
                found: 12,
                expected: 6,
                ..
            }
        ));
        let p = Params::for_chunks(&[12, 40], &[4, 10], 10).unwrap();
        let fa = FixedArray::open(&cache, Addr(0x1c3), s, codec, p).unwrap();
        assert_eq!(fa.len(), 12);
        assert!(!fa.geometry().is_paged());
        assert_eq!(fa.data_block_addr(&cache).unwrap(), Some(Addr(491)));
        // Filtered records are 8 + 2 + 4 bytes here, not 8.
        let filtered = RecordCodec::filtered(s, 2).unwrap();
        assert!(matches!(
            FixedArray::open(&cache, Addr(0x1c3), s, filtered, p),
            Err(Error::Mismatch {
                field: "element size",
                ..
            })
        ));
    }
}
