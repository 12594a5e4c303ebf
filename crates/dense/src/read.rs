//! Dense storage, read: a new-style group's links, or an object's attributes, kept in a
//! fractal heap and indexed by a v2 B-tree of name hashes (record types 5 and 8), as libhdf5
//! stores them once there are more than the object header keeps (8 links by default;
//! netCDF-4 files, h5py with `track_order=True` or `libver='latest'`; attributes past the
//! header's room).
//!
//! Every length read from the file is checked before it sizes a buffer: the header is read
//! in a bounded prefix, blocks only at the sizes the header's geometry gives (bounded by the
//! file's end), objects only inside the block that holds them.

use std::cell::{Cell, RefCell};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::rc::Rc;

use h5chunk_btree2::{BTree2, RecordClass};
use h5chunk_format::cursor::Decoder;
use h5chunk_format::fractal_heap::{self, Header, HeapId, HugeId, HugeRecord, IndirectBlock};
use h5chunk_format::message::Link;
use h5chunk_format::{Addr, Error as FormatError};

use crate::error::{Error, Result};
use crate::space::Space;
use h5chunk_filters::Pipeline;

/// The most indirect-block levels a lookup descends (heap offsets have at most 64 bits, and
/// each level at least doubles the span): a cycle in a damaged file ends here.
pub const MAX_DEPTH: usize = 64;

/// Bytes of blocks one [`Heap`] keeps once read and verified: listing a group of 100,000
/// links reads each 64 KiB block once, not once a link. Past this, the kept blocks are
/// dropped and read again as needed.
const KEPT_BLOCK_BYTES: usize = 32 << 20;

/// The most a filtered object (a direct block or a huge object) may grow when unfiltered, as
/// a multiple of its stored size: deflate's best ratio is about 1032 to 1 and LZF's under
/// 100, so a larger claimed size is damage, refused before it sizes a buffer.
const MAX_UNFILTER_RATIO: u64 = 1100;

/// A fractal heap, opened for reading objects.
#[derive(Debug)]
pub struct Heap {
    addr: Addr,
    h: Header,
    /// A filtered heap's pipeline (its direct blocks and huge objects go through it).
    pipeline: Option<Pipeline>,
    /// Blocks read and verified so far (see [`KEPT_BLOCK_BYTES`]).
    kept: RefCell<Kept>,
}

/// Blocks a [`Heap`] keeps: indirect blocks decoded, direct blocks verified.
#[derive(Default)]
struct Kept {
    indirect: HashMap<Addr, Rc<IndirectBlock>>,
    /// By address and heap offset (a block is verified at the offset it was reached by).
    direct: HashMap<(Addr, u64), Rc<Vec<u8>>>,
    bytes: usize,
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            out,
            "Kept({} indirect, {} direct blocks)",
            self.indirect.len(),
            self.direct.len()
        )
    }
}

impl Kept {
    /// Make room for `n` more bytes.
    fn room(&mut self, n: usize) {
        if self.bytes.saturating_add(n) > KEPT_BLOCK_BYTES {
            *self = Kept::default();
        }
        self.bytes = self.bytes.saturating_add(n);
    }
}

fn bt2_err(e: h5chunk_btree2::Error) -> Error {
    Error::Index(e)
}

impl Heap {
    /// Open the heap at `addr`, its changes not yet written (by a writer of this file)
    /// written first.
    pub fn open(f: &dyn Space, addr: Addr) -> Result<Heap> {
        f.flush_heap(addr)?;
        Heap::open_file(f, addr)
    }

    /// Open the heap at `addr` as the file has it.
    pub fn open_file(f: &dyn Space, addr: Addr) -> Result<Heap> {
        let avail = f.cache().eoa().get().saturating_sub(addr.get());
        let first = (fractal_heap::MAX_HEADER_LEN as u64).min(avail);
        let bytes = f.read(addr, first)?;
        let h = match Header::decode(&bytes, addr, f.sizes()) {
            // A filter pipeline makes the header longer than the fixed part: read it all.
            Err(FormatError::Truncated { .. }) if first == fractal_heap::MAX_HEADER_LEN as u64 => {
                let with_filters = first.saturating_add(u64::from(u16::MAX)).min(avail);
                Header::decode(&f.read(addr, with_filters)?, addr, f.sizes())?
            }
            other => other?,
        };
        let pipeline = match &h.filters {
            // Shuffle's element size is in its parameters (libhdf5 always stores it).
            Some(fl) => Some(
                Pipeline::new(&fl.pipeline, 1)
                    .map_err(|source| Error::Filter { at: addr, source })?,
            ),
            None if h.filters_len > 0 => {
                return Err(Error::corrupt(
                    "fractal heap",
                    addr,
                    "I/O filters' length without a pipeline",
                ));
            }
            None => None,
        };
        Ok(Heap {
            addr,
            h,
            pipeline,
            kept: RefCell::new(Kept::default()),
        })
    }

    /// The decoded header.
    pub fn header(&self) -> &Header {
        &self.h
    }

    /// Bytes of a heap ID.
    pub fn id_len(&self) -> usize {
        usize::from(self.h.id_len)
    }

    /// The object a heap ID names.
    pub fn object(&self, f: &dyn Space, id: &[u8]) -> Result<Vec<u8>> {
        match HeapId::decode(id, &self.h, f.sizes(), self.addr)? {
            HeapId::Tiny(data) => Ok(data),
            HeapId::Huge(HugeId::Direct(rec)) => self.huge(f, &rec),
            HeapId::Huge(HugeId::Indirect(key)) => {
                let rec = self.huge_record(f, key)?;
                self.huge(f, &rec)
            }
            HeapId::Managed { offset, len } => self.managed(f, offset, len),
        }
    }

    /// The huge-object B-tree's record of the object of ID `key`.
    fn huge_record(&self, f: &dyn Space, key: u64) -> Result<HugeRecord> {
        let at = self.h.huge_btree.ok_or_else(|| {
            Error::corrupt(
                "fractal heap",
                self.addr,
                format!("huge object {key} in a heap without a huge-object B-tree"),
            )
        })?;
        let class = HugeObjects::new(&self.h, f.sizes());
        let tree = BTree2::open(f.cache(), at, f.sizes(), class).map_err(bt2_err)?;
        let found = tree.get(f.cache(), &key).map_err(bt2_err)?.ok_or_else(|| {
            Error::corrupt(
                "fractal heap",
                self.addr,
                format!("huge object {key} not in the huge-object B-tree at {at}"),
            )
        })?;
        Ok(found.rec)
    }

    /// Bytes from `at` to the file's end (the larger of its end of allocation and its
    /// length): what any length read from the file must fit in.
    fn room(&self, f: &dyn Space, at: Addr) -> Result<u64> {
        f.room(at)
    }

    /// Undo the heap's filters on `stored` (read at `at`), skipping those `mask` says were,
    /// to exactly `size` bytes, a size bounded by the stored size first.
    fn unfilter(&self, at: Addr, stored: Vec<u8>, mask: u32, size: u64) -> Result<Vec<u8>> {
        let corrupt = |what: String| Error::corrupt("fractal heap", Some(self.addr), what);
        let pipeline = self
            .pipeline
            .as_ref()
            .ok_or_else(|| corrupt(format!("a filtered object at {at} in an unfiltered heap")))?;
        let bound = (stored.len() as u64)
            .saturating_mul(MAX_UNFILTER_RATIO)
            .saturating_add(4096);
        let size = usize::try_from(size)
            .ok()
            .filter(|&s| s as u64 <= bound)
            .ok_or_else(|| {
                corrupt(format!(
                    "object at {at}: {} bytes stored cannot unfilter to {size}",
                    stored.len()
                ))
            })?;
        pipeline
            .decode(stored, mask, size)
            .map_err(|source| Error::Filter { at, source })
    }

    /// A huge object: its bytes where its record says, through the heap's filters if any.
    fn huge(&self, f: &dyn Space, rec: &HugeRecord) -> Result<Vec<u8>> {
        if rec.len > self.room(f, rec.addr)? {
            return Err(Error::corrupt(
                "fractal heap",
                self.addr,
                format!(
                    "huge object of {} bytes at {} past the file's end",
                    rec.len, rec.addr
                ),
            ));
        }
        let stored = f.read(rec.addr, rec.len)?;
        match rec.filtered {
            Some((mask, size)) => self.unfilter(rec.addr, stored, mask, size),
            None if self.pipeline.is_some() => Err(Error::corrupt(
                "fractal heap",
                self.addr,
                format!(
                    "huge object at {} of a filtered heap without its filter mask",
                    rec.addr
                ),
            )),
            None => Ok(stored),
        }
    }

    /// The indirect block of `rows` rows at `at`, decoded (once).
    fn indirect(&self, f: &dyn Space, at: Addr, rows: u32) -> Result<Rc<IndirectBlock>> {
        if let Some(ib) = self.kept.borrow().indirect.get(&at)
            && ib.children.len() as u64 == u64::from(rows).saturating_mul(u64::from(self.h.width))
        {
            return Ok(Rc::clone(ib));
        }
        let len = self.h.indirect_len(f.sizes(), rows);
        let ib = Rc::new(IndirectBlock::decode(
            &f.read(at, len as u64)?,
            at,
            f.sizes(),
            &self.h,
            self.addr,
            rows,
        )?);
        let mut kept = self.kept.borrow_mut();
        kept.room(len);
        kept.indirect.insert(at, Rc::clone(&ib));
        Ok(ib)
    }

    /// A managed object: find its direct block through the doubling table.
    fn managed(&self, f: &dyn Space, offset: u64, len: u64) -> Result<Vec<u8>> {
        let corrupt = |what: String| Error::corrupt("fractal heap", Some(self.addr), what);
        if len == 0 || len > u64::from(self.h.max_managed).max(self.h.max_direct) {
            return Err(corrupt(format!("managed object of {len} bytes")));
        }
        let root = self.h.root.ok_or_else(|| corrupt("no root block".into()))?;
        // (block address, its heap offset, its size) of the direct block holding `offset`.
        // With its stored size and filter mask in a filtered heap.
        let (block, block_offset, size, filtered) = if self.h.root_rows == 0 {
            let filtered = self
                .h
                .filters
                .as_ref()
                .map(|fl| (fl.root_size, fl.root_mask));
            (root, 0, self.h.start_block, filtered)
        } else {
            let mut at = root;
            let mut rows = u32::from(self.h.root_rows);
            let mut depth = 0usize;
            loop {
                depth = depth.saturating_add(1);
                if depth > MAX_DEPTH {
                    return Err(corrupt("indirect blocks nest too deep".into()));
                }
                let ib = self.indirect(f, at, rows)?;
                let rel = offset
                    .checked_sub(ib.block_offset)
                    .ok_or_else(|| corrupt(format!("offset {offset} before its block")))?;
                // The row and column whose block spans `rel`.
                let w = u64::from(self.h.width);
                let mut start = 0u64;
                let mut found = None;
                for row in 0..rows {
                    let bs = self.h.row_block_size(row);
                    let span = bs.saturating_mul(w);
                    if rel < start.saturating_add(span) {
                        let col = rel.saturating_sub(start).checked_div(bs).unwrap_or(0);
                        found = Some((row, col, start.saturating_add(col.saturating_mul(bs)), bs));
                        break;
                    }
                    start = start.saturating_add(span);
                }
                let (row, col, child_start, bs) =
                    found.ok_or_else(|| corrupt(format!("offset {offset} past the table")))?;
                let index = u64::from(row).saturating_mul(w).saturating_add(col);
                let entry = ib.children.get(index as usize);
                let child = entry
                    .and_then(|c| c.addr)
                    .ok_or_else(|| corrupt(format!("offset {offset} in an unallocated block")))?;
                let child_offset = ib.block_offset.saturating_add(child_start);
                if row < self.h.direct_rows() {
                    break (child, child_offset, bs, entry.and_then(|c| c.filtered));
                }
                at = child;
                rows = self.h.rows_for_size(bs);
            }
        };
        let kept = self
            .kept
            .borrow()
            .direct
            .get(&(block, block_offset))
            .cloned();
        let bytes = match kept {
            Some(bytes) if bytes.len() as u64 == size => bytes,
            _ => {
                // A filtered heap's block is stored in fewer bytes (its entry says how many).
                let stored = match (&self.pipeline, filtered) {
                    (Some(_), Some((stored, _))) => stored,
                    (Some(_), None) => {
                        return Err(corrupt(format!(
                            "direct block at {block} of a filtered heap without its stored size"
                        )));
                    }
                    (None, _) => size,
                };
                if stored > self.room(f, block)? {
                    return Err(corrupt(format!(
                        "direct block of {stored} bytes at {block} past the file's end"
                    )));
                }
                let bytes = f.read(block, stored)?;
                // libhdf5 checksums a filtered block as it is once unfiltered.
                let bytes = match filtered {
                    Some((_, mask)) if self.pipeline.is_some() => {
                        self.unfilter(block, bytes, mask, size)?
                    }
                    _ => bytes,
                };
                fractal_heap::check_direct(
                    &bytes,
                    block,
                    f.sizes(),
                    &self.h,
                    self.addr,
                    block_offset,
                )?;
                let bytes = Rc::new(bytes);
                let mut kept = self.kept.borrow_mut();
                kept.room(bytes.len());
                kept.direct.insert((block, block_offset), Rc::clone(&bytes));
                bytes
            }
        };
        let from = offset.saturating_sub(block_offset);
        let header = self.h.direct_header_len(f.sizes()) as u64;
        let end = from.saturating_add(len);
        if from < header || end > size {
            return Err(corrupt(format!(
                "object {offset}+{len} outside its direct block (offset {block_offset}, {size} bytes)"
            )));
        }
        Ok(bytes
            .get(from as usize..end as usize)
            .map(<[u8]>::to_vec)
            .unwrap_or_default())
    }
}

/// Records of a name index: v2 B-tree type 5 (links: the name's lookup3 hash, then the heap
/// ID of the link message) or type 8 (attributes: the heap ID of the attribute message,
/// message flags u8, creation order u32, then the hash).
#[derive(Debug)]
pub struct LinkNames {
    id_len: usize,
    attributes: bool,
}

impl LinkNames {
    pub fn new(id_len: usize, attributes: bool) -> LinkNames {
        LinkNames { id_len, attributes }
    }
}

/// One record of [`LinkNames`].
#[derive(Clone, Debug)]
pub struct LinkName {
    hash: u32,
    id: Vec<u8>,
    /// Type 8 only: the attribute message's flags and creation order (kept as read, so a
    /// node rewritten keeps libhdf5's values).
    flags: u8,
    order: u32,
}

impl LinkName {
    pub fn new(hash: u32, id: Vec<u8>) -> LinkName {
        LinkName {
            hash,
            id,
            flags: 0,
            order: 0,
        }
    }

    /// A type-8 record of an attribute of creation order `order`.
    pub fn attribute(hash: u32, id: Vec<u8>, order: u32) -> LinkName {
        LinkName {
            order,
            ..LinkName::new(hash, id)
        }
    }

    /// The attribute's creation order (type 8).
    pub fn order(&self) -> u32 {
        self.order
    }
}

/// Names of records of a name index, by heap ID: what orders records of one hash. libhdf5
/// compares two names of one hash as `strcmp` does (bytes as unsigned, a name before any
/// longer one it begins), which is how byte strings compare; a name holds no NUL.
#[derive(Debug, Default)]
pub struct Names {
    by_id: HashMap<Vec<u8>, Vec<u8>>,
    /// A tie-break met a record whose name is not here (see [`Names::check`]).
    missing: Cell<bool>,
}

impl Names {
    /// The records of `hash` in `tree`, with their names (`name_of` reads one through its
    /// heap ID). Only those records are read from the heap: none, nearly always.
    pub fn of_hash(
        cache: &h5chunk_cache::MetadataCache,
        tree: &BTree2<LinkNames>,
        hash: u32,
        mut name_of: impl FnMut(&[u8]) -> Result<Vec<u8>>,
    ) -> Result<Names> {
        let mut names = Names::default();
        for r in tree.get_all(cache, &hash).map_err(bt2_err)? {
            let name = name_of(&r.id)?;
            names.by_id.insert(r.id, name);
        }
        Ok(names)
    }

    /// Record that heap object `id` holds `name`.
    pub fn insert(&mut self, id: Vec<u8>, name: Vec<u8>) {
        self.by_id.insert(id, name);
    }

    /// Whether a record's name is `name`.
    pub fn has(&self, name: &[u8]) -> bool {
        self.by_id.values().any(|n| n.as_slice() == name)
    }

    /// How `name` compares with the name of `r`, a record of its hash: the tie-break of the
    /// tree's operations on that hash.
    pub fn tie<'a>(&'a self, name: &'a [u8]) -> impl Fn(&LinkName) -> Ordering + 'a {
        move |r| match self.by_id.get(&r.id) {
            Some(other) => name.cmp(other.as_slice()),
            None => {
                self.missing.set(true);
                Ordering::Less
            }
        }
    }

    /// An error if a tie-break met a record not listed here: [`of_hash`](Self::of_hash)
    /// lists every record of the hash, so the tree changed between (a bug, not the file).
    pub fn check(&self) -> Result<()> {
        if self.missing.get() {
            return Err(Error::Internal(
                "a name index record of the hash was not among those read before",
            ));
        }
        Ok(())
    }
}

impl RecordClass for LinkNames {
    type Record = LinkName;
    type Key = u32;

    fn tree_type(&self) -> u8 {
        if self.attributes { 8 } else { 5 }
    }

    fn record_size(&self) -> usize {
        if self.attributes {
            self.id_len.saturating_add(9)
        } else {
            self.id_len.saturating_add(4)
        }
    }

    fn decode(&self, raw: &[u8], at: Addr) -> h5chunk_format::Result<LinkName> {
        let short = FormatError::Truncated {
            structure: "name index record",
            at,
            needed: self.record_size() as u64,
            available: raw.len() as u64,
        };
        let (id, hash, flags, order) = if self.attributes {
            let id = raw.get(..self.id_len).ok_or(short.clone())?;
            let flags = *raw.get(self.id_len).ok_or(short.clone())?;
            let at = self.id_len.saturating_add(1);
            let order = raw.get(at..at.saturating_add(4)).ok_or(short.clone())?;
            let from = self.id_len.saturating_add(5);
            let hash = raw.get(from..from.saturating_add(4)).ok_or(short)?;
            (id, hash, flags, le32(order))
        } else {
            (
                raw.get(4..).ok_or(short.clone())?,
                raw.get(..4).ok_or(short)?,
                0,
                0,
            )
        };
        Ok(LinkName {
            hash: le32(hash),
            id: id.to_vec(),
            flags,
            order,
        })
    }

    fn encode(&self, r: &LinkName, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        if r.id.len() != self.id_len {
            return Err(FormatError::Unencodable {
                structure: "name index record",
                reason: format!("a {}-byte heap ID in a heap of {}", r.id.len(), self.id_len),
            });
        }
        if self.attributes {
            // Type 8: the ID, the message's flags, its creation order, the hash.
            out.extend_from_slice(&r.id);
            out.push(r.flags);
            out.extend_from_slice(&r.order.to_le_bytes());
            out.extend_from_slice(&r.hash.to_le_bytes());
        } else {
            out.extend_from_slice(&r.hash.to_le_bytes());
            out.extend_from_slice(&r.id);
        }
        Ok(())
    }

    fn key<'r>(&self, r: &'r LinkName) -> &'r u32 {
        &r.hash
    }

    fn compare(&self, key: &u32, r: &LinkName) -> Ordering {
        key.cmp(&r.hash)
    }

    /// Two names of one hash: their records are ordered by name (see [`Names`]).
    fn keys_repeat(&self) -> bool {
        true
    }
}

/// A little-endian u32 of up to 4 bytes (exactly 4 where called).
fn le32(b: &[u8]) -> u32 {
    let mut v = [0u8; 4];
    for (d, s) in v.iter_mut().zip(b) {
        *d = *s;
    }
    u32::from_le_bytes(v)
}

/// Records of an object's attribute creation-order index: v2 B-tree type 9 (the heap ID of
/// the attribute message, the message's flags u8, its creation order u32), ordered by
/// creation order.
#[derive(Debug)]
pub struct AttributeOrders {
    id_len: usize,
}

impl AttributeOrders {
    pub fn new(id_len: usize) -> AttributeOrders {
        AttributeOrders { id_len }
    }
}

/// One record of [`AttributeOrders`].
#[derive(Clone, Debug)]
pub struct AttributeOrder {
    id: Vec<u8>,
    flags: u8,
    order: u32,
}

impl AttributeOrder {
    pub fn new(order: u32, id: Vec<u8>) -> AttributeOrder {
        AttributeOrder {
            id,
            flags: 0,
            order,
        }
    }
}

impl RecordClass for AttributeOrders {
    type Record = AttributeOrder;
    type Key = u32;

    fn tree_type(&self) -> u8 {
        9
    }

    fn record_size(&self) -> usize {
        self.id_len.saturating_add(5)
    }

    fn decode(&self, raw: &[u8], at: Addr) -> h5chunk_format::Result<AttributeOrder> {
        let short = || FormatError::Truncated {
            structure: "attribute creation-order index record",
            at,
            needed: self.record_size() as u64,
            available: raw.len() as u64,
        };
        let id = raw.get(..self.id_len).ok_or_else(short)?;
        let flags = *raw.get(self.id_len).ok_or_else(short)?;
        let from = self.id_len.saturating_add(1);
        let order = raw.get(from..from.saturating_add(4)).ok_or_else(short)?;
        Ok(AttributeOrder {
            id: id.to_vec(),
            flags,
            order: le32(order),
        })
    }

    fn encode(&self, r: &AttributeOrder, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        if r.id.len() != self.id_len {
            return Err(FormatError::Unencodable {
                structure: "attribute creation-order index record",
                reason: format!("a {}-byte heap ID in a heap of {}", r.id.len(), self.id_len),
            });
        }
        out.extend_from_slice(&r.id);
        out.push(r.flags);
        out.extend_from_slice(&r.order.to_le_bytes());
        Ok(())
    }

    fn key<'r>(&self, r: &'r AttributeOrder) -> &'r u32 {
        &r.order
    }

    fn compare(&self, key: &u32, r: &AttributeOrder) -> Ordering {
        key.cmp(&r.order)
    }
}

/// Records of a group's creation-order index: v2 B-tree type 6 (a link's creation order, a
/// 64-bit integer, then the heap ID of its link message), ordered by creation order.
#[derive(Debug)]
pub struct CreationOrders {
    id_len: usize,
}

impl CreationOrders {
    pub fn new(id_len: usize) -> CreationOrders {
        CreationOrders { id_len }
    }
}

/// One record of [`CreationOrders`].
#[derive(Clone, Debug)]
pub struct CreationOrder {
    order: u64,
    id: Vec<u8>,
}

impl CreationOrder {
    pub fn new(order: u64, id: Vec<u8>) -> CreationOrder {
        CreationOrder { order, id }
    }
}

impl RecordClass for CreationOrders {
    type Record = CreationOrder;
    type Key = u64;

    fn tree_type(&self) -> u8 {
        6
    }

    fn record_size(&self) -> usize {
        self.id_len.saturating_add(8)
    }

    fn decode(&self, raw: &[u8], at: Addr) -> h5chunk_format::Result<CreationOrder> {
        let short = || FormatError::Truncated {
            structure: "creation-order index record",
            at,
            needed: self.record_size() as u64,
            available: raw.len() as u64,
        };
        let (order, id) = raw.split_first_chunk::<8>().ok_or_else(short)?;
        let id = id.get(..self.id_len).ok_or_else(short)?;
        Ok(CreationOrder {
            order: u64::from_le_bytes(*order),
            id: id.to_vec(),
        })
    }

    fn encode(&self, r: &CreationOrder, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        if r.id.len() != self.id_len {
            return Err(FormatError::Unencodable {
                structure: "creation-order index record",
                reason: format!("a {}-byte heap ID in a heap of {}", r.id.len(), self.id_len),
            });
        }
        out.extend_from_slice(&r.order.to_le_bytes());
        out.extend_from_slice(&r.id);
        Ok(())
    }

    fn key<'r>(&self, r: &'r CreationOrder) -> &'r u64 {
        &r.order
    }

    fn compare(&self, key: &u64, r: &CreationOrder) -> Ordering {
        key.cmp(&r.order)
    }
}

/// Records of a heap's huge-object B-tree (types 1 to 4, as the heap's header implies):
/// keyed by the object's ID (types 1 and 2) or its address (3 and 4).
#[derive(Debug)]
pub struct HugeObjects {
    tree_type: u8,
    sizes: h5chunk_format::Sizes,
}

impl HugeObjects {
    pub fn new(h: &Header, sizes: h5chunk_format::Sizes) -> HugeObjects {
        HugeObjects {
            tree_type: h.huge_tree_type(sizes),
            sizes,
        }
    }
}

/// One record of [`HugeObjects`], with its key.
#[derive(Clone, Debug)]
pub struct HugeEntry {
    key: u64,
    rec: HugeRecord,
}

impl HugeEntry {
    /// The record `rec` under `key` (its ID, or its address in a tree of direct IDs).
    pub fn new(key: u64, rec: HugeRecord) -> HugeEntry {
        HugeEntry { key, rec }
    }
}

impl RecordClass for HugeObjects {
    type Record = HugeEntry;
    type Key = u64;

    fn tree_type(&self) -> u8 {
        self.tree_type
    }

    fn record_size(&self) -> usize {
        HugeRecord::record_len(self.tree_type, self.sizes)
    }

    fn decode(&self, raw: &[u8], at: Addr) -> h5chunk_format::Result<HugeEntry> {
        let rec = HugeRecord::decode(raw, at, self.sizes, self.tree_type)?;
        let key = rec.id.unwrap_or(rec.addr.get());
        Ok(HugeEntry { key, rec })
    }

    fn encode(&self, r: &HugeEntry, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        r.rec.encode(self.sizes, self.tree_type, out)
    }

    fn key<'r>(&self, r: &'r HugeEntry) -> &'r u64 {
        &r.key
    }

    fn compare(&self, key: &u64, r: &HugeEntry) -> Ordering {
        key.cmp(&r.key)
    }
}

/// The heap IDs of the records of the name index at `names` (links, or `attributes`), in the
/// index's order.
fn ids(f: &dyn Space, heap: &Heap, names: Addr, attributes: bool) -> Result<Vec<Vec<u8>>> {
    Ok(records(f, heap, names, attributes)?
        .into_iter()
        .map(|r| r.id)
        .collect())
}

/// The records of the name index at `names` (links, or `attributes`), in the index's order.
fn records(f: &dyn Space, heap: &Heap, names: Addr, attributes: bool) -> Result<Vec<LinkName>> {
    let class = LinkNames {
        id_len: heap.id_len(),
        attributes,
    };
    let tree = BTree2::open(f.cache(), names, f.sizes(), class).map_err(bt2_err)?;
    let mut out = Vec::new();
    // The closure never breaks: the flow it returns says nothing.
    let _ = tree
        .for_each(f.cache(), |r| {
            out.push(r.clone());
            ControlFlow::Continue(())
        })
        .map_err(bt2_err)?;
    Ok(out)
}

fn link(f: &dyn Space, heap: &Heap, id: &[u8]) -> Result<Link> {
    let bytes = heap.object(f, id)?;
    let mut d = Decoder::new(&bytes, heap.addr, f.sizes(), "link message (dense)");
    Ok(Link::decode(&mut d)?)
}

/// Every link of a group stored densely (heap at `heap`, name index at `names`).
pub fn links(f: &dyn Space, heap: Addr, names: Addr) -> Result<Vec<Link>> {
    let heap = Heap::open(f, heap)?;
    ids(f, &heap, names, false)?
        .iter()
        .map(|id| link(f, &heap, id))
        .collect()
}

/// The link `name` of a group stored densely: the records of its name's hash (libhdf5's
/// lookup3 of the name), then the one whose message holds the name.
pub fn lookup(f: &dyn Space, heap: Addr, names: Addr, name: &str) -> Result<Option<Link>> {
    let hash = h5chunk_format::checksum::lookup3(name.as_bytes());
    // One descent finds the records of the hash (nearly always none or one), and each one's
    // link is read until the name matches. A name not there (a link about to be added) most
    // often reads nothing of the heap, so its changes not yet written stay in memory.
    let id_len = match f.held_id_len(heap) {
        Some(n) => n,
        None => Heap::open(f, heap)?.id_len(),
    };
    let class = LinkNames {
        id_len,
        attributes: false,
    };
    let tree = BTree2::open(f.cache(), names, f.sizes(), class).map_err(bt2_err)?;
    let records = tree.get_all(f.cache(), &hash).map_err(bt2_err)?;
    if records.is_empty() {
        return Ok(None);
    }
    let heap = Heap::open(f, heap)?;
    for r in records {
        let l = link(f, &heap, &r.id)?;
        if l.name == name.as_bytes() {
            return Ok(Some(l));
        }
    }
    Ok(None)
}

/// The name of the link message heap object `id` of `heap` holds.
pub fn link_name(f: &dyn Space, heap: &Heap, id: &[u8]) -> Result<Vec<u8>> {
    Ok(link(f, heap, id)?.name)
}

/// The name of the attribute message heap object `id` of `heap` holds.
pub fn attribute_name(f: &dyn Space, heap: &Heap, id: &[u8]) -> Result<Vec<u8>> {
    let body = heap.object(f, id)?;
    let mut d = Decoder::new(&body, heap.addr, f.sizes(), "attribute message (dense)");
    Ok(h5chunk_format::message::Attribute::decode_name(&mut d)?)
}

/// Records of the name index at `names` (links, or `attributes`; heap at `heap`) that share
/// a hash with the record before them but whose name does not follow its name: libhdf5 finds
/// a name by comparing the hash, then the name, so it may miss such a record. Each as the two
/// names, in the index's order.
pub fn misordered(
    f: &dyn Space,
    heap: Addr,
    names: Addr,
    attributes: bool,
) -> Result<Vec<(String, String)>> {
    let heap = Heap::open(f, heap)?;
    let class = LinkNames::new(heap.id_len(), attributes);
    let tree = BTree2::open(f.cache(), names, f.sizes(), class).map_err(bt2_err)?;
    let records = tree.to_vec(f.cache()).map_err(bt2_err)?;
    let name_of = |r: &LinkName| {
        if attributes {
            attribute_name(f, &heap, &r.id)
        } else {
            link_name(f, &heap, &r.id)
        }
    };
    let mut out = Vec::new();
    // Only the names of records of a shared hash are read.
    for run in records.chunk_by(|a, b| a.hash == b.hash) {
        let mut prev: Option<Vec<u8>> = None;
        for r in run.iter().filter(|_| run.len() > 1) {
            let name = name_of(r)?;
            if let Some(p) = prev.as_ref().filter(|p| **p >= name) {
                out.push((
                    String::from_utf8_lossy(p).into_owned(),
                    String::from_utf8_lossy(&name).into_owned(),
                ));
            }
            prev = Some(name);
        }
    }
    Ok(out)
}

/// The attribute messages (encoded) of an object whose attributes are stored densely, in the
/// name index's order.
pub fn attribute_messages(f: &dyn Space, heap: Addr, names: Addr) -> Result<Vec<(Vec<u8>, u32)>> {
    let heap = Heap::open(f, heap)?;
    records(f, &heap, names, true)?
        .iter()
        .map(|r| Ok((heap.object(f, &r.id)?, r.order())))
        .collect()
}
