//! Dense link storage, written: a new-style group past its Group Info message's compact limit
//! (libhdf5's 8 links by default) moves its links into a fractal heap indexed by a v2 B-tree
//! of name hashes (record type 5), as libhdf5 does, so that a group of 100,000 members costs a
//! B-tree descent a lookup, not a scan of its header. Objects' attributes past the header's
//! room go the same way (record type 8).
//!
//! The heap h5chunk makes has libhdf5's parameters (links: width 4, blocks from 512 bytes to
//! 64 KiB, 32-bit offsets, checksummed direct blocks, 7-byte IDs; attributes: 1 KiB starting
//! blocks, 40-bit offsets, 8-byte IDs) and grows block by block as libhdf5 grows it: a root
//! direct block first; then a root indirect block of the header's starting rows, doubled each
//! time the next block falls past its last row (up to the rows the heap's offsets can span);
//! rows past the largest direct block hold child indirect blocks, each with rows of its own
//! (and children of its own when its rows reach that far). The header's "next block"
//! iterator, managed space, allocated space and free space follow libhdf5's accounting, so
//! libhdf5 goes on adding to a heap h5chunk wrote, and h5chunk to one it wrote itself.
//!
//! Objects are packed one after the other into the newest block; one that does not fit starts
//! the next block (libhdf5 would also fill earlier blocks' tails from its free-space manager,
//! which h5chunk does not write: that space stays counted free, unused).
//!
//! A heap libhdf5 made has a free-space manager whose sections (earlier blocks' tails, holes
//! of deleted objects, skipped blocks) libhdf5 allocates from. h5chunk never allocates from
//! them: its objects go into new blocks from the "next block" iterator on, as libhdf5's own
//! next block would, space no section lists (checked: a manager listing space there is
//! refused, typed), or after the objects of the newest block when no section lies in it (a
//! block h5chunk made: sessions of one link do not cost a block each), and the manager is
//! left as it is. libhdf5's later allocations then land
//! in its sections or in blocks past h5chunk's; the new blocks' unused tails, not listed, stay
//! unused (counted free in the header, as libhdf5 counts a new block's space). Editing the
//! manager instead would mean rewriting its section info, for no more safety. Filtered heaps are
//! refused for appending, typed.
//!
//! Objects past the heap's largest managed object (4 KiB: an attribute of a large array, or
//! one too large for an object header message, which moves the attributes here) are stored as
//! libhdf5 stores "huge" objects: in file space of their own, tracked by the heap's
//! huge-object v2 B-tree under IDs numbered from 1, in heaps h5chunk made and in libhdf5's.
//! Deleting an attribute removes its index records and leaves its heap object in place
//! (managed or huge), which readers never reach again.
//!
//! The newest block, the indirect blocks and the header are kept in memory between changes
//! ([`OpenHeaps`]) and handed to the metadata cache when the file is flushed, or written when the heap is read, so adding
//! a link costs its copy into the block, not a rewrite and checksum of the whole block.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use h5chunk_btree2::{BTree2, Params};
use h5chunk_format::Addr;
use h5chunk_format::cursor::Decoder;
use h5chunk_format::fractal_heap::{Header, HeapStats, IndirectBlock};
use h5chunk_format::message::Link;

use crate::error::{Error, Result};
use crate::read::{
    AttributeOrder, AttributeOrders, CreationOrder, CreationOrders, Heap, LinkName, LinkNames,
    Names,
};
use crate::space::BlockKind;
use crate::space::Space;

/// The heaps of one open file being appended to, by header address, their changes held in
/// memory between calls: handed to the cache by [`flush`](OpenHeaps::flush) at every file
/// flush, or written by [`flush_one`](OpenHeaps::flush_one) before the heap is read.
#[derive(Default)]
pub struct OpenHeaps(pub(crate) Mutex<HashMap<Addr, HeapWriter>>);

impl std::fmt::Debug for OpenHeaps {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(out, "OpenHeaps({} open)", self.lock().len())
    }
}

impl OpenHeaps {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Addr, HeapWriter>> {
        // A panic while the map was held leaves it as it was: still usable.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Write the changes to the heap at `heap`, if it has any (before it is read).
    pub fn flush_one(&self, f: &dyn Space, heap: Addr) -> Result<()> {
        let mut map = self.lock();
        match map.get_mut(&heap) {
            Some(w) if w.is_dirty() => w.write_now(f),
            _ => Ok(()),
        }
    }

    /// The heap ID length of the heap at `heap`, if it is open here.
    pub fn id_len(&self, heap: Addr) -> Option<usize> {
        self.lock().get(&heap).map(HeapWriter::id_len)
    }

    /// Hand every heap's changes to the metadata cache and close them all: the cache's flush,
    /// which follows, writes them in the order their dependencies declare.
    pub fn flush(&self, f: &dyn Space) -> Result<()> {
        let mut map = self.lock();
        for w in map.values_mut() {
            w.stage(f)?;
        }
        map.clear();
        Ok(())
    }
}

/// libhdf5's v2 B-tree parameters for a group's name index.
const NAME_INDEX: Params = Params {
    node_size: 512,
    split_percent: 100,
    merge_percent: 40,
};

/// libhdf5's v2 B-tree parameters for a heap's huge-object index.
const HUGE_INDEX: Params = Params {
    node_size: 512,
    split_percent: 100,
    merge_percent: 40,
};

/// The first byte of a huge object's heap ID: version 0, type 1 ("huge").
const HUGE_ID_TYPE: u8 = 0x10;

/// Heaps kept open in memory at once: past this many, the others are written and dropped
/// (each holds up to a 64 KiB block).
const MAX_PENDING: usize = 32;

/// The header of a new link heap (libhdf5's `H5G` dense-storage parameters): empty, no root.
fn link_heap_header() -> Header {
    Header {
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
        filters: None,
        stats: HeapStats {
            start_rows: 1,
            ..HeapStats::default()
        },
    }
}

/// The header of a new attribute heap (libhdf5's `H5A` dense-storage parameters: 1 KiB
/// starting blocks, 40-bit offsets, 8-byte IDs).
fn attribute_heap_header() -> Header {
    Header {
        id_len: 8,
        start_block: 1024,
        max_heap_bits: 40,
        ..link_heap_header()
    }
}

/// An indirect block the writer holds.
#[derive(Debug)]
struct Iblock {
    addr: Addr,
    rows: u32,
    /// `rows` times the width entries: direct blocks in the direct rows, then indirect ones.
    children: Vec<Option<Addr>>,
    dirty: bool,
}

/// The direct block objects go into.
struct Current {
    addr: Addr,
    /// Its heap offset.
    offset: u64,
    /// The whole block (its checksum field is filled when written).
    bytes: Vec<u8>,
    /// Bytes used: the block's header and its objects.
    fill: usize,
    dirty: bool,
}

impl std::fmt::Debug for Current {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        out.debug_struct("Current")
            .field("addr", &self.addr)
            .field("offset", &self.offset)
            .field("len", &self.bytes.len())
            .field("fill", &self.fill)
            .field("dirty", &self.dirty)
            .finish()
    }
}

/// One level of the "next block" iterator: an indirect block (by heap offset) and the entry
/// in it where the next block goes (an entry past its rows: the block is full).
#[derive(Clone, Copy, Debug)]
struct Level {
    iblock: u64,
    entry: u32,
}

/// A heap open for appending objects.
#[derive(Debug)]
pub struct HeapWriter {
    addr: Addr,
    h: Header,
    /// Indirect blocks read or made so far, by heap offset (the root's is 0; a child's is
    /// past its parent's, since children sit in rows past the direct ones).
    iblocks: BTreeMap<u64, Iblock>,
    cur: Option<Current>,
    /// Full direct blocks not written yet (sealed).
    retired: Vec<(Addr, Vec<u8>)>,
    header_dirty: bool,
    /// Free bytes of one empty entry of each row ([`Header::entry_free`]).
    entry_free: Vec<u64>,
}

fn heap_full() -> Error {
    Error::Unsupported("fractal heaps past the size their heap offsets can address")
}

impl HeapWriter {
    fn width(&self) -> u32 {
        u32::from(self.h.width).max(1)
    }

    /// The row of `entry` (of any indirect block).
    fn row_of(&self, entry: u32) -> u32 {
        entry.checked_div(self.width()).unwrap_or(0)
    }

    /// Free bytes of one empty entry of `row`.
    fn free_of(&self, row: u32) -> u64 {
        self.entry_free.get(row as usize).copied().unwrap_or(0)
    }

    /// A new, empty heap of `h`'s parameters (no block yet: the first object makes one).
    fn create(f: &dyn Space, mut h: Header) -> Result<HeapWriter> {
        let addr = f.allocate(h.encode(f.sizes())?.len() as u64)?;
        h.len = h.encode(f.sizes())?.len();
        let entry_free = h.entry_free(f.sizes(), h.max_root_rows());
        Ok(HeapWriter {
            addr,
            h,
            iblocks: BTreeMap::new(),
            cur: None,
            retired: Vec::new(),
            header_dirty: true,
            entry_free,
        })
    }

    /// Open an existing heap for appending: one without a free-space manager or huge
    /// objects (as h5chunk writes them), whose newest direct block (the one that ends at the
    /// "next block" iterator) holds objects packed from its start, zeros after.
    /// `object_len` tells how long the object at the start of its argument is.
    fn open(
        f: &dyn Space,
        addr: Addr,
        object_len: impl Fn(&[u8]) -> Option<usize>,
    ) -> Result<HeapWriter> {
        let refuse =
            || Error::Unsupported("appending to a fractal heap laid out by another writer");
        let h = Heap::open_file(f, addr)?.header().clone();
        if h.filters_len > 0 {
            return Err(Error::Unsupported("appending to a filtered fractal heap"));
        }
        // A heap with a free-space manager (libhdf5's): its sections list the free bytes of
        // the blocks before the "next block" iterator (their tails, the holes of deleted
        // objects, blocks skipped), which libhdf5 allocates from. h5chunk never writes into
        // space a section lists: new objects go into new blocks from the iterator on (space no
        // section lists, checked), or after the objects of the newest block when no section
        // lies in that block (one h5chunk made, whose tail the manager does not know), so the
        // manager stays true and libhdf5's later allocations land elsewhere. The new blocks'
        // tails are not added to it: libhdf5 leaves them unused (counted free in the header,
        // as libhdf5 counts them).
        let foreign = h.stats.free_manager.is_some();
        let entry_free = h.entry_free(f.sizes(), h.max_root_rows());
        let mut w = HeapWriter {
            addr,
            h,
            iblocks: BTreeMap::new(),
            cur: None,
            retired: Vec::new(),
            header_dirty: false,
            entry_free,
        };
        let sections = w.free_sections(f)?;
        let newest = match (w.h.root, w.h.root_rows) {
            (None, _) => None,
            (Some(root), 0) => Some((root, 0, w.h.start_block)),
            (Some(root), rows) => {
                w.load(f, 0, root, u32::from(rows))?;
                match w.h.stats.iterator_offset.checked_sub(1) {
                    Some(last) => w.direct_at(f, last)?,
                    None => None,
                }
            }
        };
        let Some((at, offset, size)) = newest else {
            return Ok(w);
        };
        if offset.saturating_add(size) != w.h.stats.iterator_offset && w.h.root_rows > 0 {
            // The iterator was moved past holes: no block to go on filling.
            return Ok(w);
        }
        let end = offset.saturating_add(size);
        if sections.iter().any(|&(s, e)| s < end && e > offset) {
            // Free space libhdf5 knows of (a tail, a hole): the block is left to libhdf5.
            return Ok(w);
        }
        let block = f.read(at, size)?;
        h5chunk_format::fractal_heap::check_direct(&block, at, f.sizes(), &w.h, addr, offset)?;
        // With no section in it, the block's objects tile it from its start (a hole libhdf5
        // made and filled exactly included): after them, zeros h5chunk may fill. A block
        // that does not read so is left alone in a heap with a manager, refused without.
        let mut fill = w.h.direct_header_len(f.sizes());
        while let Some(rest) = block.get(fill..) {
            if rest.iter().all(|&b| b == 0) {
                break;
            }
            match object_len(rest).filter(|&n| n > 0) {
                Some(n) => fill = fill.saturating_add(n),
                None if foreign => return Ok(w),
                None => return Err(refuse()),
            }
        }
        if fill > block.len() {
            return if foreign { Ok(w) } else { Err(refuse()) };
        }
        w.cur = Some(Current {
            addr: at,
            offset,
            bytes: block,
            fill,
            dirty: false,
        });
        Ok(w)
    }

    /// The heap space (start and end offsets) of the sections of the heap's free-space
    /// manager, if it has one, checked to list no space where new blocks go: every section
    /// ends before the "next block" iterator (past the root direct block, when that is the
    /// heap's only block). libhdf5 drops sections past its iterator, so its files pass; a
    /// manager that did list such space would have libhdf5 allocate over h5chunk's objects.
    fn free_sections(&self, f: &dyn Space) -> Result<Vec<(u64, u64)>> {
        use h5chunk_format::free_space::{self, HeapSection};
        let Some(at) = self.h.stats.free_manager else {
            return Ok(Vec::new());
        };
        let len = free_space::Header::encoded_len(f.sizes()) as u64;
        let fs = free_space::Header::decode(&f.read(at, len)?, at, f.sizes())?;
        if fs.client != 0 {
            return Err(Error::corrupt(
                "fractal heap",
                self.addr,
                format!("its free-space manager at {at} is of client {}", fs.client),
            ));
        }
        let sections = match fs.sections_addr {
            Some(s) if fs.serial_sections > 0 => free_space::decode_heap_sections(
                &f.read(s, fs.sections_len)?,
                s,
                f.sizes(),
                &fs,
                at,
                u8::try_from(self.h.offset_bytes()).map_err(|_| heap_full())?,
            )?,
            _ => Vec::new(),
        };
        let frontier = match (self.h.root, self.h.root_rows) {
            (None, _) => 0,
            (Some(_), 0) => self.h.start_block,
            (Some(_), _) => self.h.stats.iterator_offset,
        };
        let mut out = Vec::with_capacity(sections.len());
        for s in sections {
            let (start, end) = match s {
                HeapSection::Single { offset, size } => (offset, offset.saturating_add(size)),
                HeapSection::Blocks {
                    iblock,
                    row,
                    col,
                    entries,
                } => {
                    let first = u32::from(row)
                        .saturating_mul(self.width())
                        .saturating_add(u32::from(col));
                    let last = first.saturating_add(u32::from(entries).saturating_sub(1));
                    let (start, _) = self.entry_geometry(iblock, first);
                    let (offset, size) = self.entry_geometry(iblock, last);
                    (start, offset.saturating_add(size))
                }
            };
            out.push((start, end));
            if end > frontier {
                return Err(Error::Unsupported(
                    "appending to a fractal heap whose free-space manager lists space past its next-block iterator",
                ));
            }
        }
        Ok(out)
    }

    /// Read the indirect block of `rows` rows at `at`, heap offset `offset`, into `iblocks`.
    fn load(&mut self, f: &dyn Space, offset: u64, at: Addr, rows: u32) -> Result<()> {
        if self.iblocks.contains_key(&offset) {
            return Ok(());
        }
        let len = self.h.indirect_len(f.sizes(), rows) as u64;
        let ib = IndirectBlock::decode(&f.read(at, len)?, at, f.sizes(), &self.h, self.addr, rows)?;
        if ib.block_offset != offset {
            return Err(Error::corrupt(
                "fractal heap indirect block",
                at,
                format!("block offset {}, its parent says {offset}", ib.block_offset),
            ));
        }
        self.iblocks.insert(
            offset,
            Iblock {
                addr: at,
                rows,
                children: ib.children.iter().map(|c| c.addr).collect(),
                dirty: false,
            },
        );
        Ok(())
    }

    fn iblock(&self, offset: u64) -> Result<&Iblock> {
        self.iblocks
            .get(&offset)
            .ok_or(Error::Internal("a fractal heap indirect block not loaded"))
    }

    fn iblock_mut(&mut self, offset: u64) -> Result<&mut Iblock> {
        self.iblocks
            .get_mut(&offset)
            .ok_or(Error::Internal("a fractal heap indirect block not loaded"))
    }

    /// The heap offset of entry `entry` of the indirect block at heap offset `iblock`, and
    /// the size of that entry's block.
    fn entry_geometry(&self, iblock: u64, entry: u32) -> (u64, u64) {
        let w = self.width();
        let (row, col) = (self.row_of(entry), entry.checked_rem(w).unwrap_or(0));
        let size = self.h.row_block_size(row);
        let offset = iblock
            .saturating_add(self.h.row_offset(row))
            .saturating_add(u64::from(col).saturating_mul(size));
        (offset, size)
    }

    /// The row and column of the root-relative heap offset `rel` in a table of any rows.
    fn row_col(&self, rel: u64) -> Result<(u32, u32)> {
        let w = self.width();
        for row in 0..self.h.max_root_rows() {
            let start = self.h.row_offset(row);
            let size = self.h.row_block_size(row);
            let span = size.saturating_mul(u64::from(w));
            if rel >= start && rel < start.saturating_add(span) {
                let col = rel.saturating_sub(start).checked_div(size).unwrap_or(0);
                return Ok((row, u32::try_from(col).unwrap_or(0)));
            }
        }
        Err(heap_full())
    }

    /// The direct block (address, heap offset, size) holding heap offset `offset`, if made.
    fn direct_at(&mut self, f: &dyn Space, offset: u64) -> Result<Option<(Addr, u64, u64)>> {
        let w = self.width();
        let mut iblock = 0u64;
        for _ in 0..crate::read::MAX_DEPTH {
            let (row, col) = self.row_col(offset.saturating_sub(iblock))?;
            let entry = row.saturating_mul(w).saturating_add(col);
            let ib = self.iblock(iblock)?;
            if row >= ib.rows {
                return Ok(None);
            }
            let Some(at) = ib.children.get(entry as usize).copied().flatten() else {
                return Ok(None);
            };
            let (child, size) = self.entry_geometry(iblock, entry);
            if row < self.h.direct_rows() {
                return Ok(Some((at, child, size)));
            }
            self.load(f, child, at, self.h.child_rows(row))?;
            iblock = child;
        }
        Err(Error::corrupt(
            "fractal heap",
            self.addr,
            "indirect blocks nest too deep",
        ))
    }

    /// The "next block" iterator at heap offset `offset`, as libhdf5 starts it from the
    /// header's iterator offset: down through the indirect blocks whose span holds it, to the
    /// entry it starts (a direct block, or an indirect block not made yet).
    fn locate(&mut self, f: &dyn Space, offset: u64) -> Result<Vec<Level>> {
        let w = self.width();
        let mut levels = Vec::new();
        let mut iblock = 0u64;
        for _ in 0..crate::read::MAX_DEPTH {
            let rel = offset.saturating_sub(iblock);
            let (row, col) = self.row_col(rel)?;
            let entry = row.saturating_mul(w).saturating_add(col);
            levels.push(Level { iblock, entry });
            let (child, _) = self.entry_geometry(iblock, entry);
            if child == offset || row < self.h.direct_rows() {
                return Ok(levels);
            }
            let at = self
                .iblock(iblock)?
                .children
                .get(entry as usize)
                .copied()
                .flatten()
                .ok_or_else(|| {
                    Error::corrupt(
                        "fractal heap",
                        self.addr,
                        format!("the next-block offset {offset} inside an unmade indirect block"),
                    )
                })?;
            self.load(f, child, at, self.h.child_rows(row))?;
            iblock = child;
        }
        Err(Error::corrupt(
            "fractal heap",
            self.addr,
            "indirect blocks nest too deep",
        ))
    }

    /// Skip the iterator's level to entry `to`, past blocks libhdf5 leaves for later (too
    /// small for the block wanted): the iterator offset moves past their span.
    fn skip_to(&mut self, level: &mut Level, to: u32) {
        let span: u64 = (level.entry..to)
            .map(|e| self.entry_geometry(0, e).1)
            .fold(0, u64::saturating_add);
        let st = &mut self.h.stats;
        st.iterator_offset = st.iterator_offset.saturating_add(span);
        level.entry = level.entry.max(to);
        self.header_dirty = true;
    }

    /// Turn the root direct block (if any) into entry 0 of a new root indirect block, as
    /// libhdf5 does when its second block is needed: the header's starting rows, or more when
    /// the block wanted is larger than those rows' blocks.
    fn root_create(&mut self, f: &dyn Space, min: u64) -> Result<Vec<Level>> {
        let w = self.width();
        let s = self.h.start_block;
        let mut rows = match self.h.stats.start_rows {
            0 => self.h.max_root_rows(),
            n => u32::from(n),
        };
        let mut beyond = min.max(1).ilog2().saturating_sub(s.max(1).ilog2());
        if beyond > 0 {
            beyond = beyond.saturating_add(1);
        }
        rows = rows.max(beyond.saturating_add(1));
        let at = f.allocate(self.h.indirect_len(f.sizes(), rows) as u64)?;
        let mut children = vec![None; rows.saturating_mul(w) as usize];
        let direct = match (self.h.root, self.h.root_rows) {
            (Some(root), 0) => {
                if let Some(first) = children.first_mut() {
                    *first = Some(root);
                }
                true
            }
            _ => false,
        };
        self.iblocks.insert(
            0,
            Iblock {
                addr: at,
                rows,
                children,
                dirty: true,
            },
        );
        let mut level = Level {
            iblock: 0,
            entry: u32::from(direct),
        };
        self.h.stats.iterator_offset = if direct { s } else { 0 };
        if min > s {
            let to = rows.saturating_sub(1).saturating_mul(w);
            self.skip_to(&mut level, to);
        }
        let covered: u64 = (0..rows)
            .map(|r| self.free_of(r).saturating_mul(u64::from(w)))
            .fold(0, u64::saturating_add);
        let covered = if direct {
            covered.saturating_sub(self.free_of(0))
        } else {
            covered
        };
        self.h.root = Some(at);
        self.h.root_rows = u16::try_from(rows).map_err(|_| heap_full())?;
        let managed = self.h.row_offset(rows);
        let st = &mut self.h.stats;
        st.free_space = st.free_space.saturating_add(covered);
        st.managed_space = managed;
        self.header_dirty = true;
        Ok(vec![level])
    }

    /// Double the root indirect block's rows (up to the most the heap has), moving it, as
    /// libhdf5 does when the next block falls past its last row.
    fn root_double(&mut self, f: &dyn Space, min: u64, level: &mut Level) -> Result<()> {
        let w = self.width();
        let next_row = self.row_of(level.entry);
        let next_size = self.h.row_block_size(next_row);
        let (old, old_addr) = {
            let root = self.iblock(0)?;
            (root.rows, root.addr)
        };
        let mut min_rows = 0;
        let mut skip_to = None;
        if old < self.h.direct_rows() && min > next_size {
            min_rows = self.h.size_to_row(min).saturating_add(1);
            skip_to = Some(min_rows.saturating_sub(1).saturating_mul(w));
        }
        let rows = min_rows.max(old.saturating_mul(2).min(self.h.max_root_rows()));
        if rows <= old {
            return Err(heap_full());
        }
        f.cache().remove(old_addr)?;
        f.free(old_addr, self.h.indirect_len(f.sizes(), old) as u64)?;
        let at = f.allocate(self.h.indirect_len(f.sizes(), rows) as u64)?;
        let root = self.iblock_mut(0)?;
        root.addr = at;
        root.rows = rows;
        root.children.resize(rows.saturating_mul(w) as usize, None);
        root.dirty = true;
        if let Some(to) = skip_to {
            self.skip_to(level, to);
        }
        let added: u64 = (old.saturating_mul(w)..rows.saturating_mul(w))
            .map(|e| self.free_of(self.row_of(e)))
            .fold(0, u64::saturating_add);
        self.h.root = Some(at);
        self.h.root_rows = u16::try_from(rows).map_err(|_| heap_full())?;
        let managed = self.h.row_offset(rows.saturating_sub(1)).saturating_mul(2);
        let st = &mut self.h.stats;
        st.free_space = st.free_space.saturating_add(added);
        st.managed_space = managed;
        self.header_dirty = true;
        Ok(())
    }

    /// Move the iterator to where the next direct block of at least `min` bytes goes, making
    /// the indirect blocks on the way (libhdf5's iterator update): the root made or doubled
    /// when the iterator is past its rows, a finished child left for its parent's next entry,
    /// a child indirect block made for an indirect entry, blocks too small skipped.
    fn update_iter(&mut self, f: &dyn Space, min: u64) -> Result<Vec<Level>> {
        if self.h.root_rows == 0 {
            return self.root_create(f, min);
        }
        let w = self.width();
        let mut levels = self.locate(f, self.h.stats.iterator_offset)?;
        let min_row = self.h.size_to_row(min);
        let mut top = *levels
            .last()
            .ok_or(Error::Internal("an empty heap iterator"))?;
        let rows = self.iblock(top.iblock)?.rows;
        let next_row = self.row_of(top.entry);
        if min_row > next_row && next_row < rows {
            let to = min_row.min(rows).saturating_mul(w);
            self.skip_to(&mut top, to);
            set_top(&mut levels, top);
        }
        for _ in 0..MAX_ITER_STEPS {
            let mut walked = false;
            // Past the block's rows: the root grows, a child gives way to its parent's next
            // entry.
            loop {
                let mut top = *levels
                    .last()
                    .ok_or(Error::Internal("an empty heap iterator"))?;
                if self.row_of(top.entry) < self.iblock(top.iblock)?.rows {
                    break;
                }
                if levels.len() == 1 {
                    self.root_double(f, min, &mut top)?;
                    set_top(&mut levels, top);
                } else {
                    levels.pop();
                    let mut up = *levels
                        .last()
                        .ok_or(Error::Internal("an empty heap iterator"))?;
                    up.entry = up.entry.saturating_add(1);
                    set_top(&mut levels, up);
                }
                walked = true;
            }
            let mut top = *levels
                .last()
                .ok_or(Error::Internal("an empty heap iterator"))?;
            let row = self.row_of(top.entry);
            if row >= self.h.direct_rows() {
                let child_rows = self.h.child_rows(row);
                if self.h.row_block_size(child_rows.saturating_sub(1)) < min {
                    // The child's blocks are all too small: skip to an entry whose are not.
                    let needed = min
                        .max(1)
                        .ilog2()
                        .saturating_sub(self.h.start_block.max(1).ilog2())
                        .saturating_add(2);
                    let rows = self.iblock(top.iblock)?.rows;
                    let to = row
                        .saturating_add(needed.saturating_sub(child_rows))
                        .saturating_mul(w)
                        .min(rows.saturating_mul(w));
                    self.skip_to(&mut top, to);
                    set_top(&mut levels, top);
                } else {
                    let (offset, _) = self.entry_geometry(top.iblock, top.entry);
                    let at = f.allocate(self.h.indirect_len(f.sizes(), child_rows) as u64)?;
                    let parent = self.iblock_mut(top.iblock)?;
                    let slot = parent
                        .children
                        .get_mut(top.entry as usize)
                        .ok_or(Error::Internal("a heap entry past its block"))?;
                    *slot = Some(at);
                    parent.dirty = true;
                    self.iblocks.insert(
                        offset,
                        Iblock {
                            addr: at,
                            rows: child_rows,
                            children: vec![None; child_rows.saturating_mul(w) as usize],
                            dirty: true,
                        },
                    );
                    let mut down = Level {
                        iblock: offset,
                        entry: 0,
                    };
                    if min > self.h.start_block {
                        self.skip_to(&mut down, min_row.saturating_mul(w));
                    }
                    levels.push(down);
                }
                walked = true;
            }
            if !walked {
                return Ok(levels);
            }
        }
        Err(Error::Internal("the heap iterator did not settle"))
    }

    /// Make the next direct block, for an object of `len` bytes, and make it current (the
    /// current one, full, is sealed for writing).
    fn new_block(&mut self, f: &dyn Space, len: u64) -> Result<()> {
        let min = self.h.min_block_size(f.sizes(), len);
        if min > self.h.max_direct {
            return Err(Error::Unsupported(
                "fractal heap objects larger than a direct block (huge objects)",
            ));
        }
        let (at, offset, size) = if self.h.root.is_none() && min == self.h.start_block {
            let size = self.h.start_block;
            let at = f.allocate(size)?;
            self.h.root = Some(at);
            self.h.root_rows = 0;
            let free = self.free_of(0);
            let st = &mut self.h.stats;
            st.managed_space = size;
            st.free_space = st.free_space.saturating_add(free);
            (at, 0, size)
        } else {
            let levels = self.update_iter(f, min)?;
            let top = *levels
                .last()
                .ok_or(Error::Internal("an empty heap iterator"))?;
            let (offset, size) = self.entry_geometry(top.iblock, top.entry);
            if min > size {
                // libhdf5 refuses this too ("skipping direct block sizes not supported").
                return Err(Error::Unsupported(
                    "fractal heap objects larger than the next direct block",
                ));
            }
            let at = f.allocate(size)?;
            let parent = self.iblock_mut(top.iblock)?;
            let slot = parent
                .children
                .get_mut(top.entry as usize)
                .ok_or(Error::Internal("a heap entry past its block"))?;
            *slot = Some(at);
            parent.dirty = true;
            let st = &mut self.h.stats;
            st.iterator_offset = st.iterator_offset.saturating_add(size);
            (at, offset, size)
        };
        let mut bytes = self.h.direct_prefix(f.sizes(), self.addr, offset)?;
        let fill = bytes.len();
        bytes.resize(usize::try_from(size).map_err(|_| heap_full())?, 0);
        if let Some(mut old) = self.cur.take()
            && old.dirty
        {
            self.h.seal_direct(f.sizes(), &mut old.bytes);
            self.retired.push((old.addr, old.bytes));
        }
        self.cur = Some(Current {
            addr: at,
            offset,
            bytes,
            fill,
            dirty: true,
        });
        let st = &mut self.h.stats;
        st.allocated_space = st.allocated_space.saturating_add(size);
        self.header_dirty = true;
        Ok(())
    }

    /// Append `object`; its heap ID.
    fn insert(&mut self, f: &dyn Space, object: &[u8]) -> Result<Vec<u8>> {
        if object.is_empty() {
            return Err(Error::Internal("an empty fractal heap object"));
        }
        if object.len() > self.h.max_managed as usize {
            return self.insert_huge(f, object);
        }
        let len = object.len();
        let fits = self
            .cur
            .as_ref()
            .is_some_and(|c| c.fill.saturating_add(len) <= c.bytes.len());
        if !fits {
            self.new_block(f, len as u64)?;
        }
        let cur = self
            .cur
            .as_mut()
            .ok_or(Error::Internal("no current heap block"))?;
        let at = cur.fill;
        let Some(dst) = cur.bytes.get_mut(at..at.saturating_add(len)) else {
            return Err(Error::Internal("a heap object past its block"));
        };
        dst.copy_from_slice(object);
        cur.fill = at.saturating_add(len);
        cur.dirty = true;
        let offset = cur.offset.saturating_add(at as u64);
        let st = &mut self.h.stats;
        st.managed_objects = st.managed_objects.saturating_add(1);
        st.free_space = st.free_space.saturating_sub(len as u64);
        self.header_dirty = true;
        Ok(self.h.managed_id(offset, len as u64))
    }

    /// Store `object`, larger than the largest managed object, as libhdf5 stores a "huge"
    /// one: in file space of its own (written with the sealed blocks), tracked by a record of
    /// the heap's huge-object v2 B-tree (made with the first; type 1: address, length, ID)
    /// under the next huge ID, which the heap ID carries after its type byte. Heaps whose IDs
    /// would hold the address itself (IDs of 17 bytes or more) and filtered heaps are not
    /// written (libhdf5's dense links and attributes have 7- and 8-byte IDs, unfiltered).
    fn insert_huge(&mut self, f: &dyn Space, object: &[u8]) -> Result<Vec<u8>> {
        if self.h.filters_len > 0 {
            return Err(Error::Unsupported(
                "huge objects in a filtered fractal heap",
            ));
        }
        if self.h.huge_ids_direct(f.sizes()) {
            return Err(Error::Unsupported(
                "huge objects of fractal heaps whose IDs hold their address",
            ));
        }
        // libhdf5 numbers huge objects from 1 in the ID's bytes after the first, and stops
        // when the numbers run out (it does not reuse them either).
        let id_len = usize::from(self.h.id_len);
        let id_bytes = id_len.saturating_sub(1).min(8);
        let max_id = u64::MAX
            .checked_shr(64u32.saturating_sub(8u32.saturating_mul(id_bytes as u32)))
            .unwrap_or(0);
        let id = (self.h.stats.next_huge_id.checked_add(1))
            .filter(|&n| n < max_id)
            .ok_or(Error::Unsupported(
                "more huge objects than a fractal heap's IDs can number",
            ))?;
        let len = object.len() as u64;
        let class = crate::read::HugeObjects::new(&self.h, f.sizes());
        let mut tree = match self.h.huge_btree {
            Some(at) => BTree2::open(f.cache(), at, f.sizes(), class).map_err(bt2)?,
            None => BTree2::create(f.cache(), f.sizes(), class, HUGE_INDEX).map_err(bt2)?,
        };
        let at = f.allocate_raw(len)?;
        let rec = h5chunk_format::fractal_heap::HugeRecord {
            addr: at,
            len,
            filtered: None,
            id: Some(id),
        };
        tree.try_insert(f.cache(), crate::read::HugeEntry::new(id, rec))
            .map_err(bt2)?;
        self.h.huge_btree = Some(tree.addr());
        // A huge object's bytes are raw data in new space: written at once, before the
        // B-tree record that points at them can be.
        f.write(at, object)?;
        let st = &mut self.h.stats;
        st.next_huge_id = id;
        st.huge_size = st.huge_size.saturating_add(len);
        st.huge_count = st.huge_count.saturating_add(1);
        self.header_dirty = true;
        let mut heap_id = Vec::with_capacity(id_len);
        heap_id.push(HUGE_ID_TYPE);
        heap_id.extend_from_slice(id.to_le_bytes().get(..id_bytes).unwrap_or_default());
        heap_id.resize(id_len, 0);
        Ok(heap_id)
    }

    /// Hand what changed to the metadata cache: full direct blocks, the current one, the
    /// indirect blocks (each depending on its children) and the header (depending on its root
    /// block, its current direct block and its huge-object B-tree), so that no block reaches
    /// the file before the blocks it points to. The addresses handed on.
    fn write(&mut self, f: &dyn Space) -> Result<Vec<Addr>> {
        let mut put = Vec::new();
        let summed = self.h.checksum_direct;
        let direct = |at: Addr, bytes: Vec<u8>| {
            if summed {
                f.put_block(BlockKind::Direct { checksummed: true }, at, bytes, &[])
            } else {
                f.put_block(BlockKind::Direct { checksummed: false }, at, bytes, &[])
            }
        };
        for (at, bytes) in std::mem::take(&mut self.retired) {
            direct(at, bytes)?;
            put.push(at);
        }
        if let Some(cur) = self.cur.as_mut().filter(|c| c.dirty) {
            self.h.seal_direct(f.sizes(), &mut cur.bytes);
            direct(cur.addr, cur.bytes.clone())?;
            put.push(cur.addr);
            cur.dirty = false;
        }
        for (&offset, ib) in self.iblocks.iter_mut() {
            if ib.dirty {
                let bytes = self
                    .h
                    .encode_indirect(f.sizes(), self.addr, offset, &ib.children)?;
                let children: Vec<Addr> = ib.children.iter().flatten().copied().collect();
                f.put_block(BlockKind::Indirect, ib.addr, bytes, &children)?;
                put.push(ib.addr);
                ib.dirty = false;
            }
        }
        if self.header_dirty {
            let children: Vec<Addr> = [
                self.h.root,
                self.h.huge_btree,
                self.cur.as_ref().map(|c| c.addr),
            ]
            .into_iter()
            .flatten()
            .collect();
            f.put_block(
                BlockKind::Header,
                self.addr,
                self.h.encode(f.sizes())?,
                &children,
            )?;
            put.push(self.addr);
            self.header_dirty = false;
        }
        Ok(put)
    }

    /// [`write`](Self::write), then write the blocks handed on (children first): for a
    /// reader of the heap that reads the file, and for a SWMR writer's readers.
    pub(crate) fn write_now(&mut self, f: &dyn Space) -> Result<()> {
        // The header first: the cache writes what it depends on before it.
        for at in self.write(f)?.into_iter().rev() {
            f.cache().flush_entry(at)?;
        }
        Ok(())
    }

    pub(crate) fn is_dirty(&self) -> bool {
        self.header_dirty
            || !self.retired.is_empty()
            || self.cur.as_ref().is_some_and(|c| c.dirty)
            || self.iblocks.values().any(|ib| ib.dirty)
    }
}

/// Steps of the iterator update: each walks up or down one level or grows the root, so
/// twice the most levels and root doublings there can be is ample; past it, a bug, not a
/// hang.
const MAX_ITER_STEPS: usize = 4 * crate::read::MAX_DEPTH;

fn set_top(levels: &mut [Level], level: Level) {
    if let Some(top) = levels.last_mut() {
        *top = level;
    }
}

impl HeapWriter {
    /// Hand the held changes to the metadata cache, to be written by its next flush.
    pub(crate) fn stage(&mut self, f: &dyn Space) -> Result<()> {
        self.write(f).map(drop)
    }

    /// The heap's ID length.
    pub(crate) fn id_len(&self) -> usize {
        usize::from(self.h.id_len)
    }
}

/// Run `op` on the writer of the heap at `heap`, held by the store between calls (opened from
/// the file if not held yet; `object_len` as for [`HeapWriter::open`]).
fn with_heap<R>(
    f: &dyn Space,
    heaps: &OpenHeaps,
    heap: Addr,
    object_len: impl Fn(&[u8]) -> Option<usize>,
    op: impl FnOnce(&mut HeapWriter) -> Result<R>,
) -> Result<R> {
    let mut map = heaps.lock();
    if !map.contains_key(&heap) {
        if map.len() >= MAX_PENDING {
            for w in map.values_mut() {
                w.write_now(f)?;
            }
            map.clear();
        }
        map.insert(heap, HeapWriter::open(f, heap, object_len)?);
    }
    let w = map
        .get_mut(&heap)
        .ok_or(Error::Internal("a heap writer gone"))?;
    let out = op(w)?;
    // A SWMR writer's readers must find every change in the file at once.
    if f.swmr_write() {
        w.write_now(f)?;
    }
    Ok(out)
}

/// Keep `w` (a heap just made) open in the store.
fn adopt_heap(f: &dyn Space, heaps: &OpenHeaps, mut w: HeapWriter) -> Result<()> {
    let mut map = heaps.lock();
    if map.len() >= MAX_PENDING || f.swmr_write() {
        for other in map.values_mut() {
            other.write_now(f)?;
        }
        map.clear();
    }
    if f.swmr_write() {
        return w.write_now(f);
    }
    map.insert(w.addr, w);
    Ok(())
}

/// The length of the link message at the start of `bytes`.
fn link_len(f: &dyn Space, bytes: &[u8]) -> Option<usize> {
    let mut d = Decoder::new(bytes, Addr(0), f.sizes(), "link message (dense)");
    Link::decode(&mut d).ok()?;
    Some(d.position())
}

/// A link message's encoded body.
fn encode_link(f: &dyn Space, l: &Link) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    l.encode(&mut h5chunk_format::cursor::Encoder::new(
        &mut out,
        f.sizes(),
        "link message",
    ))?;
    Ok(out)
}

/// The index at `index`, whose records hold IDs of objects in the heap at `heap`, reaches the
/// file only after the heap (and so after the blocks the objects are in).
fn index_after_heap(f: &dyn Space, index: Addr, heap: Addr) -> Result<()> {
    match f.cache().add_flush_dependency(index, heap) {
        Ok(()) | Err(h5chunk_cache::Error::DependencyExists { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

fn bt2(e: h5chunk_btree2::Error) -> Error {
    Error::Index(e)
}

/// The heap ID length of the heap at `heap`.
fn id_len(f: &dyn Space, heap: Addr) -> Result<usize> {
    match f.held_id_len(heap) {
        Some(n) => Ok(n),
        None => Ok(Heap::open(f, heap)?.id_len()),
    }
}

/// Dense storage made by [`create`]: the fractal heap, the name index and, for a group that
/// indexes creation order, the creation-order index.
#[derive(Debug)]
pub struct Created {
    pub heap: Addr,
    pub names: Addr,
    pub orders: Option<Addr>,
}

/// Move `links` into new dense storage, with a creation-order index (type 6) when
/// `index_order` (every link then carries its creation order).
pub fn create(
    f: &dyn Space,
    heaps: &OpenHeaps,
    links: &[Link],
    index_order: bool,
) -> Result<Created> {
    let mut heap = HeapWriter::create(f, link_heap_header())?;
    let id_len = usize::from(heap.h.id_len);
    let class = LinkNames::new(id_len, false);
    let mut tree = BTree2::create(f.cache(), f.sizes(), class, NAME_INDEX).map_err(bt2)?;
    let mut by_order = if index_order {
        let class = CreationOrders::new(id_len);
        Some(BTree2::create(f.cache(), f.sizes(), class, NAME_INDEX).map_err(bt2)?)
    } else {
        None
    };
    // Names of one hash are ordered by name: the names inserted so far, by heap ID.
    let mut known = Names::default();
    for l in links {
        let id = heap.insert(f, &encode_link(f, l)?)?;
        let record = LinkName::new(h5chunk_format::checksum::lookup3(&l.name), id.clone());
        tree.try_insert_by(f.cache(), record, known.tie(&l.name))
            .map_err(bt2)?;
        known.check()?;
        if let Some(t) = &mut by_order {
            let order = l.creation_order.ok_or(Error::Unsupported(
                "indexing the creation order of a link that has none",
            ))?;
            t.try_insert(f.cache(), CreationOrder::new(order, id.clone()))
                .map_err(bt2)?;
        }
        known.insert(id, l.name.clone());
    }
    let addr = heap.addr;
    index_after_heap(f, tree.addr(), addr)?;
    if let Some(t) = &by_order {
        index_after_heap(f, t.addr(), addr)?;
    }
    adopt_heap(f, heaps, heap)?;
    Ok(Created {
        heap: addr,
        names: tree.addr(),
        orders: by_order.map(|t| t.addr()),
    })
}

/// Add `link` to the dense storage at `heap` / `names` (the caller has made sure no link of
/// its name is there). Among other names of its hash, its record goes where libhdf5 puts it:
/// in name order. A group that indexes creation order (`orders`: its type-6 B-tree) gets a
/// record there too, keyed by the link's creation order.
pub fn add(
    f: &dyn Space,
    heaps: &OpenHeaps,
    heap: Addr,
    names: Addr,
    orders: Option<Addr>,
    link: &Link,
) -> Result<()> {
    let body = encode_link(f, link)?;
    let hash = h5chunk_format::checksum::lookup3(&link.name);
    let class = LinkNames::new(id_len(f, heap)?, false);
    let mut tree = BTree2::open(f.cache(), names, f.sizes(), class).map_err(bt2)?;
    // The names of the hash's other records (nearly always none: the heap is not read).
    let mut reader = None;
    let known = Names::of_hash(f.cache(), &tree, hash, |id| {
        let h = match &mut reader {
            Some(h) => h,
            None => reader.insert(Heap::open(f, heap)?),
        };
        crate::read::link_name(f, h, id)
    })?;
    if known.has(&link.name) {
        return Err(Error::Internal("adding a dense link whose name is there"));
    }
    with_heap(
        f,
        heaps,
        heap,
        |b| link_len(f, b),
        |w| {
            // A creation order already indexed is refused before anything changes.
            let mut by_order = match (orders, link.creation_order) {
                (Some(at), Some(order)) => {
                    let class = CreationOrders::new(usize::from(w.h.id_len));
                    let t = BTree2::open(f.cache(), at, f.sizes(), class).map_err(bt2)?;
                    if t.get(f.cache(), &order).map_err(bt2)?.is_some() {
                        return Err(Error::corrupt(
                            "creation-order index",
                            at,
                            format!("creation order {order} is there, past the group's maximum"),
                        ));
                    }
                    Some((t, order))
                }
                (None, _) => None,
                (Some(_), None) => {
                    return Err(Error::Internal(
                        "a link without creation order for a creation-order index",
                    ));
                }
            };
            let id = w.insert(f, &body)?;
            tree.try_insert_by(
                f.cache(),
                LinkName::new(hash, id.clone()),
                known.tie(&link.name),
            )
            .map_err(bt2)?;
            known.check()?;
            index_after_heap(f, tree.addr(), heap)?;
            if let Some((t, order)) = &mut by_order {
                t.try_insert(f.cache(), CreationOrder::new(*order, id))
                    .map_err(bt2)?;
                index_after_heap(f, t.addr(), heap)?;
            }
            Ok(())
        },
    )
}

/// The length of the attribute message at the start of `bytes`.
fn attribute_len(f: &dyn Space, bytes: &[u8]) -> Option<usize> {
    let mut d = Decoder::new(bytes, Addr(0), f.sizes(), "attribute message (dense)");
    h5chunk_format::message::Attribute::decode(&mut d).ok()?;
    Some(d.position())
}

/// Dense attribute storage made by [`create_attributes`]: the fractal heap, the name index
/// and, for an object that indexes attribute creation order, the creation-order index.
#[derive(Debug)]
pub struct CreatedAttributes {
    pub heap: Addr,
    pub names: Addr,
    pub orders: Option<Addr>,
}

/// An attribute message to store densely: its encoded body, its name and its creation order
/// (0 when the object does not track it).
#[derive(Debug)]
pub struct NewAttribute<'a> {
    pub body: &'a [u8],
    pub name: &'a [u8],
    pub order: u32,
}

fn attribute_orders(f: &dyn Space, at: Addr, id_len: usize) -> Result<BTree2<AttributeOrders>> {
    BTree2::open(f.cache(), at, f.sizes(), AttributeOrders::new(id_len)).map_err(bt2)
}

/// Move attribute messages into new dense storage, with a creation-order index (type 9) when
/// `index_order`, as libhdf5 makes it.
pub fn create_attributes(
    f: &dyn Space,
    heaps: &OpenHeaps,
    messages: &[NewAttribute<'_>],
    index_order: bool,
) -> Result<CreatedAttributes> {
    let mut heap = HeapWriter::create(f, attribute_heap_header())?;
    let id_len = usize::from(heap.h.id_len);
    let class = LinkNames::new(id_len, true);
    let mut tree = BTree2::create(f.cache(), f.sizes(), class, NAME_INDEX).map_err(bt2)?;
    let mut by_order = if index_order {
        let class = AttributeOrders::new(id_len);
        Some(BTree2::create(f.cache(), f.sizes(), class, NAME_INDEX).map_err(bt2)?)
    } else {
        None
    };
    // Names of one hash are ordered by name: the names inserted so far, by heap ID.
    let mut known = Names::default();
    for m in messages {
        let id = heap.insert(f, m.body)?;
        let hash = h5chunk_format::checksum::lookup3(m.name);
        let record = LinkName::attribute(hash, id.clone(), m.order);
        tree.try_insert_by(f.cache(), record, known.tie(m.name))
            .map_err(bt2)?;
        known.check()?;
        if let Some(t) = &mut by_order {
            t.try_insert(f.cache(), AttributeOrder::new(m.order, id.clone()))
                .map_err(bt2)?;
        }
        known.insert(id, m.name.to_vec());
    }
    let addr = heap.addr;
    index_after_heap(f, tree.addr(), addr)?;
    if let Some(t) = &by_order {
        index_after_heap(f, t.addr(), addr)?;
    }
    adopt_heap(f, heaps, heap)?;
    Ok(CreatedAttributes {
        heap: addr,
        names: tree.addr(),
        orders: by_order.map(|t| t.addr()),
    })
}

/// Store an attribute message in the dense storage at `heap` / `names` (and the creation-order
/// index `orders`, when the object has one), replacing the attribute of that name if there is
/// one. The new message goes into the heap first: when the heap cannot take it, nothing
/// changes.
pub fn put_attribute(
    f: &dyn Space,
    heaps: &OpenHeaps,
    heap: Addr,
    names: Addr,
    orders: Option<Addr>,
    new: &NewAttribute<'_>,
) -> Result<()> {
    let h = Heap::open(f, heap)?;
    let class = LinkNames::new(h.id_len(), true);
    let mut tree = BTree2::open(f.cache(), names, f.sizes(), class).map_err(bt2)?;
    let hash = h5chunk_format::checksum::lookup3(new.name);
    // The records of the hash with their names: the attribute it replaces, if one has its
    // name, and where its record goes among the others (in name order, as libhdf5 orders
    // them).
    let known = Names::of_hash(f.cache(), &tree, hash, |id| {
        crate::read::attribute_name(f, &h, id)
    })?;
    let replaced = known.has(new.name);
    let mut by_order = match orders {
        Some(at) => {
            let t = attribute_orders(f, at, h.id_len())?;
            if t.get(f.cache(), &new.order).map_err(bt2)?.is_some() {
                return Err(Error::corrupt(
                    "attribute creation-order index",
                    at,
                    format!("creation order {} is there, past the maximum", new.order),
                ));
            }
            Some(t)
        }
        None => None,
    };
    let id = with_heap(
        f,
        heaps,
        heap,
        |b| attribute_len(f, b),
        |w| w.insert(f, new.body),
    )?;
    if replaced {
        let old = tree
            .remove_by(f.cache(), &hash, known.tie(new.name))
            .map_err(bt2)?;
        if let (Some(t), Some(old)) = (&mut by_order, old) {
            t.remove(f.cache(), &old.order()).map_err(bt2)?;
        }
    }
    tree.try_insert_by(
        f.cache(),
        LinkName::attribute(hash, id.clone(), new.order),
        known.tie(new.name),
    )
    .map_err(bt2)?;
    known.check()?;
    index_after_heap(f, tree.addr(), heap)?;
    if let Some(t) = &mut by_order {
        t.try_insert(f.cache(), AttributeOrder::new(new.order, id))
            .map_err(bt2)?;
        index_after_heap(f, t.addr(), heap)?;
    }
    Ok(())
}

/// Remove attribute `name` from the dense storage at `heap` / `names` (and `orders`) (its
/// records; the heap object is left unused); whether it was there.
pub fn remove_attribute(
    f: &dyn Space,
    heap: Addr,
    names: Addr,
    orders: Option<Addr>,
    name: &[u8],
) -> Result<bool> {
    let h = Heap::open(f, heap)?;
    let class = LinkNames::new(h.id_len(), true);
    let mut tree = BTree2::open(f.cache(), names, f.sizes(), class).map_err(bt2)?;
    let hash = h5chunk_format::checksum::lookup3(name);
    // Other attributes of the hash stay: the record removed is the one of this name.
    let known = Names::of_hash(f.cache(), &tree, hash, |id| {
        crate::read::attribute_name(f, &h, id)
    })?;
    if !known.has(name) {
        return Ok(false);
    }
    let removed = tree
        .remove_by(f.cache(), &hash, known.tie(name))
        .map_err(bt2)?;
    known.check()?;
    if let (Some(at), Some(r)) = (orders, &removed) {
        attribute_orders(f, at, h.id_len())?
            .remove(f.cache(), &r.order())
            .map_err(bt2)?;
    }
    Ok(removed.is_some())
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]
mod tests {
    use std::sync::Arc;

    use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache};

    use super::*;
    use crate::CacheSpace;

    fn file() -> CacheSpace {
        let cache =
            MetadataCache::new(Arc::new(MemStorage::new()), CacheConfig::default()).unwrap();
        // Past a superblock's room, as in a file.
        cache.allocator().allocate(96).unwrap();
        CacheSpace::new(cache, h5chunk_format::Sizes::DEFAULT)
    }

    /// (free space, managed space, allocated space, iterator offset, root rows).
    type Stats = (u64, u64, u64, u64, u16);

    fn stats(w: &HeapWriter) -> Stats {
        let st = &w.h.stats;
        (
            st.free_space,
            st.managed_space,
            st.allocated_space,
            st.iterator_offset,
            w.h.root_rows,
        )
    }

    /// An object of `len` bytes telling its number.
    fn object(i: u32, len: usize) -> Vec<u8> {
        let mut o = vec![0xa5; len];
        o[..4].copy_from_slice(&i.to_le_bytes());
        o
    }

    /// A link heap's header after n objects of 24 bytes (a hard link named `member_000000`)
    /// says what libhdf5's says after n such links (h5py, libver='latest', HDF5 1.14):
    /// the same blocks, root rows and accounting.
    #[test]
    fn a_heap_grows_as_libhdf5_grows_it() {
        let file = file();
        let f: &dyn Space = &file;
        let libhdf5: [(u32, Stats); 6] = [
            (9, (275, 512, 512, 0, 0)),
            (30, (1244, 2048, 1024, 1024, 1)),
            (100, (1528, 4096, 2560, 2560, 2)),
            (1000, (237_472, 262_144, 28_672, 28_672, 8)),
            (20_000, (66_464_140, 64 << 20, 524_288, 524_288, 16)),
            (100_000, (64_544_140, 64 << 20, 2_424_832, 2_424_832, 16)),
        ];
        let mut w = HeapWriter::create(f, link_heap_header()).unwrap();
        let mut ids = Vec::new();
        let mut n = 0;
        for (want_n, want) in libhdf5 {
            while n < want_n {
                ids.push(w.insert(f, &object(n, 24)).unwrap());
                n += 1;
            }
            assert_eq!(stats(&w), want, "after {n} objects");
        }
        w.write_now(f).unwrap();
        let heap = Heap::open(f, w.addr).unwrap();
        for (i, id) in ids.iter().enumerate().step_by(97) {
            assert_eq!(
                heap.object(f, id).unwrap(),
                object(i as u32, 24),
                "object {i}"
            );
        }
    }

    /// Past 4 MiB the root's rows of 1 MiB blocks hold child indirect blocks with children
    /// of their own; every object reads back, and a writer reopened from the file (at any
    /// point) goes on exactly as one that never stopped.
    #[test]
    fn nested_indirect_blocks_and_reopening() {
        let file = file();
        let f: &dyn Space = &file;
        let mut a = HeapWriter::create(f, link_heap_header()).unwrap();
        let b_header = HeapWriter::create(f, link_heap_header()).unwrap();
        let b_addr = b_header.addr;
        adopt_heap(f, file.heaps(), b_header).unwrap();
        let len = |bytes: &[u8]| (bytes.first() != Some(&0)).then_some(100);
        let total = 70_000u32;
        let mut ids = Vec::new();
        for i in 0..total {
            // Every object starts with a non-zero byte, so a reopened writer finds the end of
            // the newest block's objects.
            let mut o = object(i, 100);
            o[0] = 1;
            let id = a.insert(f, &o).unwrap();
            let id_b = with_heap(f, file.heaps(), b_addr, len, |w| w.insert(f, &o)).unwrap();
            assert_eq!(id, id_b);
            ids.push(id);
            if i % 9_973 == 0 {
                // Written and forgotten: the next insert reopens it from the file.
                file.flush().unwrap();
            }
        }
        file.flush().unwrap();
        let b = HeapWriter::open(f, b_addr, len).unwrap();
        assert_eq!(stats(&a), stats(&b));
        // 7 MB of objects: rows up to 12 (1 MiB children, each with a row of 128 KiB
        // grandchildren).
        assert!(a.h.stats.iterator_offset > 5 << 20);
        assert!(a.iblocks.contains_key(&((4 << 20) + (512 << 10))));
        a.write_now(f).unwrap();
        for addr in [a.addr, b_addr] {
            let heap = Heap::open(f, addr).unwrap();
            for (i, id) in ids.iter().enumerate().step_by(13) {
                let mut o = object(i as u32, 100);
                o[0] = 1;
                assert_eq!(heap.object(f, id).unwrap(), o, "object {i}");
            }
        }
    }

    /// Objects too big for the next block skip to a row of blocks big enough, as libhdf5
    /// skips; the small ones after them go on in the big block.
    #[test]
    fn large_objects_skip_to_larger_blocks() {
        let file = file();
        let f: &dyn Space = &file;
        let mut w = HeapWriter::create(f, attribute_heap_header()).unwrap();
        let mut ids = Vec::new();
        let sizes = [40usize, 3000, 40, 4000, 900, 2500, 40];
        for i in 0..3000u32 {
            let n = sizes[i as usize % sizes.len()];
            ids.push((w.insert(f, &object(i, n)).unwrap(), n));
        }
        w.write_now(f).unwrap();
        let heap = Heap::open(f, w.addr).unwrap();
        for (i, (id, n)) in ids.iter().enumerate() {
            assert_eq!(
                heap.object(f, id).unwrap(),
                object(i as u32, *n),
                "object {i}"
            );
        }
        // More than 4 KiB: a huge object, numbered from 1 in its heap ID, read back once
        // written.
        let huge = w.insert(f, &object(7, 5000)).unwrap();
        assert_eq!(huge, [0x10, 1, 0, 0, 0, 0, 0, 0]);
        let second = w.insert(f, &object(8, 70_000)).unwrap();
        assert_eq!(second, [0x10, 2, 0, 0, 0, 0, 0, 0]);
        w.write_now(f).unwrap();
        let heap = Heap::open(f, w.addr).unwrap();
        assert_eq!(heap.object(f, &huge).unwrap(), object(7, 5000));
        assert_eq!(heap.object(f, &second).unwrap(), object(8, 70_000));
        assert_eq!(heap.header().stats.huge_count, 2);
        assert_eq!(heap.header().stats.huge_size, 75_000);
        assert!(matches!(w.insert(f, &[]), Err(Error::Internal(_))));
    }
}
