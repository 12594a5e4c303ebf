//! Dense link storage, written: a new-style group past its Group Info message's compact limit
//! (libhdf5's 8 links by default) moves its links into a fractal heap indexed by a v2 B-tree
//! of name hashes (record type 5), as libhdf5 does, so that a group of 10,000 members costs a
//! B-tree descent a lookup, not a scan of its header.
//!
//! The heap h5chunk makes has libhdf5's parameters for link heaps (width 4, blocks from 512
//! bytes to 64 KiB, 32-bit offsets, checksummed direct blocks, 7-byte IDs) and a root indirect
//! block with every direct row from the start (a state libhdf5 reaches by doubling its root):
//! objects go one after the other into the direct blocks in table order, each block filled
//! before the next is made. So a heap holds 512 KiB of link messages (some 15,000 links);
//! past that, and for appends to heaps laid out otherwise (libhdf5's own: free space h5chunk
//! cannot place), the refusal is typed.

use h5chunk_btree2::{BTree2, Params};
use h5chunk_format::Addr;
use h5chunk_format::cursor::Decoder;
use h5chunk_format::fractal_heap::{Header, HeapStats, IndirectBlock};
use h5chunk_format::message::Link;

use crate::dense::{Heap, LinkName, LinkNames};
use crate::error::{Error, Result};
use crate::store::Store;

/// libhdf5's v2 B-tree parameters for a group's name index.
const NAME_INDEX: Params = Params {
    node_size: 512,
    split_percent: 100,
    merge_percent: 40,
};

/// The header of a new link heap (libhdf5's `H5G` dense-storage parameters).
fn link_heap_header() -> Header {
    let mut h = Header {
        id_len: 7,
        filters_len: 0,
        checksum_direct: true,
        max_managed: 4096,
        huge_btree: None,
        width: 4,
        start_block: 512,
        max_direct: 65536,
        max_heap_bits: 32,
        root: None,
        root_rows: 0,
        len: 0,
        stats: HeapStats {
            start_rows: 1,
            ..HeapStats::default()
        },
    };
    h.root_rows = u16::try_from(h.direct_rows()).unwrap_or(9);
    h
}

/// The header of a new attribute heap (libhdf5's `H5A` dense-storage parameters: 1 KiB
/// starting blocks, 40-bit offsets, 8-byte IDs).
fn attribute_heap_header() -> Header {
    let mut h = link_heap_header();
    h.id_len = 8;
    h.start_block = 1024;
    h.max_heap_bits = 40;
    h.root_rows = u16::try_from(h.direct_rows()).unwrap_or(8);
    h
}

/// A heap open for appending objects.
struct HeapWriter {
    addr: Addr,
    h: Header,
    root: Addr,
    children: Vec<Option<Addr>>,
    /// The block objects go into (index in `children`), its bytes and how many are used.
    cur: usize,
    block: Vec<u8>,
    fill: usize,
}

impl HeapWriter {
    /// The heap offset and size of child `index` of the root.
    fn geometry(&self, index: usize) -> (u64, u64) {
        let w = usize::from(self.h.width).max(1);
        let (row, col) = (
            index.checked_div(w).unwrap_or(0),
            index.checked_rem(w).unwrap_or(0),
        );
        let mut offset = 0u64;
        for r in 0..row {
            let span = self.h.row_block_size(r as u32).saturating_mul(w as u64);
            offset = offset.saturating_add(span);
        }
        let size = self.h.row_block_size(row as u32);
        (
            offset.saturating_add((col as u64).saturating_mul(size)),
            size,
        )
    }

    /// A new, empty heap (of `h`'s parameters) with its first direct block.
    fn create(f: &Store, mut h: Header) -> Result<HeapWriter> {
        let rows = u32::from(h.root_rows);
        let addr = f.allocate(h.encode(f.sizes)?.len() as u64)?;
        let root = f.allocate(h.indirect_len(f.sizes, rows) as u64)?;
        h.root = Some(root);
        let slots = (rows as usize).saturating_mul(usize::from(h.width));
        let mut w = HeapWriter {
            addr,
            h,
            root,
            children: vec![None; slots],
            cur: 0,
            block: Vec::new(),
            fill: 0,
        };
        w.h.stats.managed_space = (0..rows)
            .map(|r| w.h.row_block_size(r).saturating_mul(u64::from(w.h.width)))
            .sum();
        w.start_block(f, 0)?;
        Ok(w)
    }

    /// Make child `index` the block objects go into.
    fn start_block(&mut self, f: &Store, index: usize) -> Result<()> {
        let (offset, size) = self.geometry(index);
        let at = f.allocate(size)?;
        let mut block = self.h.direct_prefix(f.sizes, self.addr, offset)?;
        self.fill = block.len();
        block.resize(usize::try_from(size).unwrap_or(0), 0);
        let slot = self.children.get_mut(index).ok_or(Error::Unsupported(
            "fractal heaps past their root's direct rows",
        ))?;
        *slot = Some(at);
        self.cur = index;
        self.block = block;
        let st = &mut self.h.stats;
        st.allocated_space = st.allocated_space.saturating_add(size);
        st.iterator_offset = offset.saturating_add(size);
        st.free_space = st
            .free_space
            .saturating_add(size.saturating_sub(self.fill as u64));
        Ok(())
    }

    /// Open an existing heap for appending: it must be laid out as h5chunk lays heaps out (a
    /// root indirect block, objects packed from the start of each block, zeros after).
    /// `object_len` tells how long the object at the start of its argument is.
    fn open(
        f: &Store,
        addr: Addr,
        object_len: impl Fn(&[u8]) -> Option<usize>,
    ) -> Result<HeapWriter> {
        let refuse =
            || Error::Unsupported("appending to a fractal heap laid out by another writer");
        let h = Heap::open(f, addr)?.header().clone();
        let (Some(root), true) = (h.root, u32::from(h.root_rows) == h.direct_rows()) else {
            return Err(refuse());
        };
        if h.stats.free_manager.is_some() || h.huge_btree.is_some() {
            return Err(refuse());
        }
        let rows = u32::from(h.root_rows);
        let ib = IndirectBlock::decode(
            &f.read(root, h.indirect_len(f.sizes, rows) as u64)?,
            root,
            f.sizes,
            &h,
            addr,
            rows,
        )?;
        let children: Vec<Option<Addr>> = ib.children.iter().map(|c| c.addr).collect();
        let cur = children
            .iter()
            .rposition(Option::is_some)
            .ok_or_else(refuse)?;
        if children.iter().take(cur).any(Option::is_none) {
            return Err(refuse());
        }
        let mut w = HeapWriter {
            addr,
            h,
            root,
            children,
            cur,
            block: Vec::new(),
            fill: 0,
        };
        let (offset, size) = w.geometry(cur);
        let at = w.children.get(cur).copied().flatten().ok_or_else(refuse)?;
        let block = f.read(at, size)?;
        h5chunk_format::fractal_heap::check_direct(&block, at, f.sizes, &w.h, addr, offset)?;
        let mut fill = w.h.direct_header_len(f.sizes);
        while let Some(rest) = block.get(fill..) {
            if rest.iter().all(|&b| b == 0) {
                break;
            }
            let n = object_len(rest).filter(|&n| n > 0).ok_or_else(refuse)?;
            fill = fill.saturating_add(n);
        }
        if fill > block.len() {
            return Err(refuse());
        }
        w.block = block;
        w.fill = fill;
        Ok(w)
    }

    /// Append `object`; its heap ID. Writes the block, and the root when a block is added.
    fn insert(&mut self, f: &Store, object: &[u8]) -> Result<Vec<u8>> {
        if object.is_empty() || object.len() > self.h.max_managed as usize {
            return Err(Error::Unsupported(
                "fractal heap objects of more than 4 KiB (huge objects)",
            ));
        }
        if self.fill.saturating_add(object.len()) > self.block.len() {
            let next = self.cur.saturating_add(1);
            if next >= self.children.len() {
                return Err(Error::Unsupported(
                    "fractal heaps past 512 KiB of objects (child indirect blocks)",
                ));
            }
            self.start_block(f, next)?;
            self.write_root(f)?;
        }
        let (offset, _) = self.geometry(self.cur);
        let at = self.fill;
        let Some(dst) = self.block.get_mut(at..at.saturating_add(object.len())) else {
            return Err(Error::Internal("a heap object past its block"));
        };
        dst.copy_from_slice(object);
        self.fill = at.saturating_add(object.len());
        self.h.seal_direct(f.sizes, &mut self.block);
        let block_at = self
            .children
            .get(self.cur)
            .copied()
            .flatten()
            .ok_or(Error::Internal("the current heap block unallocated"))?;
        f.write(block_at, &self.block)?;
        let st = &mut self.h.stats;
        st.managed_objects = st.managed_objects.saturating_add(1);
        st.free_space = st.free_space.saturating_sub(object.len() as u64);
        Ok(self
            .h
            .managed_id(offset.saturating_add(at as u64), object.len() as u64))
    }

    fn write_root(&self, f: &Store) -> Result<()> {
        let bytes = self
            .h
            .encode_indirect(f.sizes, self.addr, 0, &self.children)?;
        f.write(self.root, &bytes)
    }

    fn write_header(&self, f: &Store) -> Result<()> {
        f.write(self.addr, &self.h.encode(f.sizes)?)
    }
}

/// The length of the link message at the start of `bytes`.
fn link_len(f: &Store, bytes: &[u8]) -> Option<usize> {
    let mut d = Decoder::new(bytes, Addr(0), f.sizes, "link message (dense)");
    Link::decode(&mut d).ok()?;
    Some(d.position())
}

/// A link message's encoded body.
fn encode_link(f: &Store, l: &Link) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    l.encode(&mut h5chunk_format::cursor::Encoder::new(
        &mut out,
        f.sizes,
        "link message",
    ))?;
    Ok(out)
}

fn bt2(e: h5chunk_btree2::Error) -> Error {
    match e {
        h5chunk_btree2::Error::Duplicate { .. } => Error::Unsupported(
            "two link names of one dense group with the same hash (libhdf5 orders them by name)",
        ),
        other => Error::NameIndex(other),
    }
}

/// Move `links` into new dense storage: the fractal heap's and the name index's addresses.
pub(crate) fn create(f: &Store, links: &[Link]) -> Result<(Addr, Addr)> {
    let mut heap = HeapWriter::create(f, link_heap_header())?;
    let class = LinkNames::new(usize::from(heap.h.id_len), false);
    let mut tree = BTree2::create(&f.cache, f.sizes, class, NAME_INDEX).map_err(bt2)?;
    for l in links {
        let id = heap.insert(f, &encode_link(f, l)?)?;
        tree.insert(LinkName::new(
            h5chunk_format::checksum::lookup3(&l.name),
            id,
        ))
        .map_err(bt2)?;
    }
    heap.write_root(f)?;
    heap.write_header(f)?;
    Ok((heap.addr, tree.addr()))
}

/// Add `link` to the dense storage at `heap` / `names`.
pub(crate) fn add(f: &Store, heap: Addr, names: Addr, link: &Link) -> Result<()> {
    let mut w = HeapWriter::open(f, heap, |b| link_len(f, b))?;
    let class = LinkNames::new(usize::from(w.h.id_len), false);
    let mut tree = BTree2::open(&f.cache, f.sizes, names, class).map_err(bt2)?;
    let hash = h5chunk_format::checksum::lookup3(&link.name);
    if tree.find(&hash).map_err(bt2)?.is_some() {
        return Err(bt2(h5chunk_btree2::Error::Duplicate { header: names }));
    }
    let id = w.insert(f, &encode_link(f, link)?)?;
    tree.insert(LinkName::new(hash, id)).map_err(bt2)?;
    w.write_header(f)
}

/// The length of the attribute message at the start of `bytes`.
fn attribute_len(f: &Store, bytes: &[u8]) -> Option<usize> {
    let mut d = Decoder::new(bytes, Addr(0), f.sizes, "attribute message (dense)");
    h5chunk_format::message::Attribute::decode(&mut d).ok()?;
    Some(d.position())
}

/// Move attribute messages (each its encoded body and name) into new dense storage: the
/// fractal heap's and the name index's (type 8) addresses.
pub(crate) fn create_attributes(
    f: &Store,
    messages: &[(Vec<u8>, Vec<u8>)],
) -> Result<(Addr, Addr)> {
    let mut heap = HeapWriter::create(f, attribute_heap_header())?;
    let class = LinkNames::new(usize::from(heap.h.id_len), true);
    let mut tree = BTree2::create(&f.cache, f.sizes, class, NAME_INDEX).map_err(bt2)?;
    for (body, name) in messages {
        let id = heap.insert(f, body)?;
        tree.insert(LinkName::new(h5chunk_format::checksum::lookup3(name), id))
            .map_err(bt2)?;
    }
    heap.write_root(f)?;
    heap.write_header(f)?;
    Ok((heap.addr, tree.addr()))
}

/// Store an attribute message (its encoded body, its name) in the dense storage at `heap` /
/// `names`, replacing the attribute of that name if there is one. The new message goes into
/// the heap first: when the heap cannot take it, nothing changes.
pub(crate) fn put_attribute(
    f: &Store,
    heap: Addr,
    names: Addr,
    body: &[u8],
    name: &[u8],
) -> Result<()> {
    let mut w = HeapWriter::open(f, heap, |b| attribute_len(f, b))?;
    let h = Heap::open(f, heap)?;
    let class = LinkNames::new(h.id_len(), true);
    let mut tree = BTree2::open(&f.cache, f.sizes, names, class).map_err(bt2)?;
    let hash = h5chunk_format::checksum::lookup3(name);
    // The attribute it replaces; a different name of the same hash is refused before anything
    // is written.
    let replaced = match tree.find(&hash).map_err(bt2)? {
        Some(r) if attribute_name(f, &h, heap, r.id())? != name => {
            return Err(bt2(h5chunk_btree2::Error::Duplicate { header: names }));
        }
        found => found.is_some(),
    };
    let id = w.insert(f, body)?;
    w.write_header(f)?;
    if replaced {
        tree.remove(&hash).map_err(bt2)?;
    }
    tree.insert(LinkName::new(hash, id)).map_err(bt2)
}

/// The name of the attribute message the heap object `id` holds.
fn attribute_name(f: &Store, h: &Heap, heap: Addr, id: &[u8]) -> Result<Vec<u8>> {
    let body = h.object(f, id)?;
    let mut d = Decoder::new(&body, heap, f.sizes, "attribute message (dense)");
    Ok(h5chunk_format::message::Attribute::decode(&mut d)?.name)
}

/// Remove attribute `name` from the dense storage at `heap` / `names` (its record; the heap
/// object is left unused); whether it was there.
pub(crate) fn remove_attribute(f: &Store, heap: Addr, names: Addr, name: &[u8]) -> Result<bool> {
    let h = Heap::open(f, heap)?;
    let class = LinkNames::new(h.id_len(), true);
    let mut tree = BTree2::open(&f.cache, f.sizes, names, class).map_err(bt2)?;
    let hash = h5chunk_format::checksum::lookup3(name);
    let Some(record) = tree.find(&hash).map_err(bt2)? else {
        return Ok(false);
    };
    if attribute_name(f, &h, heap, record.id())? != name {
        // Another attribute of the same hash: libhdf5 tells them apart by name.
        return Err(Error::Unsupported(
            "two attribute names of one object with the same hash",
        ));
    }
    tree.remove(&hash).map_err(bt2)?;
    Ok(true)
}
