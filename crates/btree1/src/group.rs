//! Node type 0: the symbol table of an old-style group (a v1 B-tree whose leaves point to
//! symbol table nodes, `SNOD`, with the member names in the group's local heap).
//!
//! A key is the heap offset of a name. Child `i` covers the names `name(key[i]) < x ≤
//! name(key[i + 1])`: the right key of a child is its largest name, and key 0 is the empty
//! name. Insertions always go into an existing symbol table node (libhdf5's "follow min/max"),
//! which splits in halves when full, as `H5G__node_insert` does.

use core::cmp::Ordering;
use core::ops::ControlFlow;

use h5chunk_cache::{CacheEntry, Key as DepKey, MetadataCache};
use h5chunk_format::btree1::GroupKey;
use h5chunk_format::local_heap::{LocalHeap, LocalHeapData};
use h5chunk_format::symbol_table_entry::{Cache, SymbolTableEntry};
use h5chunk_format::symbol_table_node::SymbolTableNode;
use h5chunk_format::{Addr, Sizes};

use crate::entry::NodeCtx;
use crate::error::{Error, Result};
use crate::tree::{BTree, Class, Keys, LeafIns, NewNode};

/// libhdf5's default "group internal node K": up to 32 children a group B-tree node.
pub const DEFAULT_GROUP_INTERNAL_K: u16 = 16;
/// libhdf5's default "group leaf node K": up to 8 entries a symbol table node.
pub const DEFAULT_GROUP_LEAF_K: u16 = 4;
/// The data segment size libhdf5 gives a new group's local heap (docs/format/file-format.md §5.2.3).
pub const DEFAULT_HEAP_SIZE: usize = 88;

/// A symbol table node in the cache.
#[derive(Debug)]
pub struct SnodEntry {
    /// The node.
    pub node: SymbolTableNode,
    sizes: Sizes,
}

/// What decoding a symbol table node needs.
#[derive(Clone, Copy, Debug)]
pub struct SnodCtx {
    /// The superblock's sizes.
    pub sizes: Sizes,
    /// The superblock's group leaf node K.
    pub leaf_k: u16,
}

impl CacheEntry for SnodEntry {
    type Context = SnodCtx;
    const TYPE_NAME: &'static str = "SNOD";
    const CHECKSUMMED: bool = false;

    fn initial_load_len(ctx: &SnodCtx) -> usize {
        SymbolTableNode::encoded_len(ctx.leaf_k, ctx.sizes)
    }
    fn decode(image: &[u8], at: Addr, ctx: &SnodCtx) -> h5chunk_format::Result<Self> {
        let node = SymbolTableNode::decode(image, at, ctx.sizes, ctx.leaf_k)?;
        Ok(SnodEntry {
            node,
            sizes: ctx.sizes,
        })
    }
    fn image_len(&self) -> usize {
        SymbolTableNode::encoded_len(self.node.group_leaf_k(), self.sizes)
    }
    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        self.node.encode(self.sizes, out)
    }
}

/// A local heap header in the cache.
#[derive(Debug)]
pub struct HeapEntry {
    /// The header.
    pub heap: LocalHeap,
    sizes: Sizes,
}

impl CacheEntry for HeapEntry {
    type Context = Sizes;
    const TYPE_NAME: &'static str = "HEAP";
    const CHECKSUMMED: bool = false;

    fn initial_load_len(sizes: &Sizes) -> usize {
        LocalHeap::encoded_len(*sizes)
    }
    fn decode(image: &[u8], at: Addr, sizes: &Sizes) -> h5chunk_format::Result<Self> {
        Ok(HeapEntry {
            heap: LocalHeap::decode(image, at, *sizes)?,
            sizes: *sizes,
        })
    }
    fn image_len(&self) -> usize {
        LocalHeap::encoded_len(self.sizes)
    }
    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        self.heap.encode(self.sizes, out)
    }
}

/// A local heap's data segment in the cache.
#[derive(Debug)]
pub struct HeapDataEntry {
    /// The data segment.
    pub data: LocalHeapData,
}

/// What decoding a data segment needs: the header's fields.
#[derive(Clone, Copy, Debug)]
pub struct HeapDataCtx {
    /// The superblock's sizes.
    pub sizes: Sizes,
    /// The header's data segment size.
    pub len: usize,
    /// The header's free-list head.
    pub free_list_head: u64,
}

impl CacheEntry for HeapDataEntry {
    type Context = HeapDataCtx;
    const TYPE_NAME: &'static str = "HEAP data";
    const CHECKSUMMED: bool = false;

    fn initial_load_len(ctx: &HeapDataCtx) -> usize {
        ctx.len
    }
    fn decode(image: &[u8], at: Addr, ctx: &HeapDataCtx) -> h5chunk_format::Result<Self> {
        if image.len() != ctx.len {
            return Err(h5chunk_format::Error::Truncated {
                structure: "local heap data segment",
                at,
                needed: ctx.len as u64,
                available: image.len() as u64,
            });
        }
        Ok(HeapDataEntry {
            data: LocalHeapData::decode(image, at, ctx.sizes, ctx.free_list_head)?,
        })
    }
    fn image_len(&self) -> usize {
        self.data.bytes().len()
    }
    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        out.extend_from_slice(self.data.bytes());
        Ok(())
    }
}

/// The operation state of the group class: the name looked for or inserted, the heap.
#[derive(Debug)]
pub struct GroupOp {
    name: Vec<u8>,
    heap: LocalHeapData,
    heap_changed: bool,
    insert: Option<(Option<Addr>, Cache)>,
    found: Option<SymbolTableEntry>,
}

impl GroupOp {
    fn name_at(&self, offset: u64) -> Result<&[u8]> {
        Ok(self.heap.name(offset)?)
    }

    /// Binary search of the node's entries: `Ok(i)` if `name` is entry `i`, `Err(i)` where it
    /// would go.
    fn position(&self, node: &SymbolTableNode) -> Result<core::result::Result<usize, usize>> {
        let (mut lo, mut hi) = (0usize, node.entries.len());
        while lo < hi {
            let mid = lo.saturating_add(hi.saturating_sub(lo) / 2);
            let entry = node
                .entries
                .get(mid)
                .ok_or_else(|| Error::InvalidArgument("entry index".into()))?;
            match self
                .name
                .as_slice()
                .cmp(self.name_at(entry.link_name_offset)?)
            {
                Ordering::Equal => return Ok(Ok(mid)),
                Ordering::Less => hi = mid,
                Ordering::Greater => lo = mid.saturating_add(1),
            }
        }
        Ok(Err(lo))
    }
}

/// The key/record class of group B-trees (node type 0).
#[derive(Debug)]
pub struct GroupClass {
    ctx: NodeCtx<()>,
    leaf_k: u16,
}

impl GroupClass {
    fn snod_ctx(&self) -> SnodCtx {
        SnodCtx {
            sizes: self.ctx.sizes,
            leaf_k: self.leaf_k,
        }
    }

    fn new_snod(&self, cache: &MetadataCache, node: SymbolTableNode) -> Result<Addr> {
        let len = SymbolTableNode::encoded_len(self.leaf_k, self.ctx.sizes) as u64;
        let addr = cache.allocator().allocate(len)?;
        cache.insert(
            addr,
            SnodEntry {
                node,
                sizes: self.ctx.sizes,
            },
        )?;
        Ok(addr)
    }
}

impl Class for GroupClass {
    type Key = GroupKey;
    type Op = GroupOp;
    const FOLLOW_MIN: bool = true;
    const FOLLOW_MAX: bool = true;

    fn ctx(&self) -> NodeCtx<()> {
        self.ctx
    }

    fn zero_key(&self) -> GroupKey {
        GroupKey(0)
    }

    fn cmp3(&self, lt: &GroupKey, op: &GroupOp, rt: &GroupKey) -> Result<Ordering> {
        let x = op.name.as_slice();
        Ok(if x <= op.name_at(lt.0)? {
            Ordering::Less
        } else if x > op.name_at(rt.0)? {
            Ordering::Greater
        } else {
            Ordering::Equal
        })
    }

    fn key_cmp(&self, a: &GroupKey, b: &GroupKey, op: &GroupOp) -> Result<Ordering> {
        Ok(op.name_at(a.0)?.cmp(op.name_at(b.0)?))
    }

    fn new_node(
        &self,
        cache: &MetadataCache,
        _kind: NewNode,
        lt: &mut GroupKey,
        _op: &mut GroupOp,
        rt: &mut GroupKey,
    ) -> Result<Addr> {
        *lt = GroupKey(0);
        *rt = GroupKey(0);
        self.new_snod(cache, SymbolTableNode::new(self.leaf_k))
    }

    fn insert(
        &self,
        cache: &MetadataCache,
        child: Addr,
        keys: Keys<'_, GroupKey>,
        op: &mut GroupOp,
    ) -> Result<LeafIns> {
        let Some((object_header, link_cache)) = op.insert else {
            return Err(Error::InvalidArgument("no entry to insert".into()));
        };
        let mut sn = cache.protect::<SnodEntry>(child, &self.snod_ctx())?;
        let mut idx = match op.position(&sn.node)? {
            Ok(_) => {
                return Err(Error::Exists(
                    String::from_utf8_lossy(&op.name).into_owned(),
                ));
            }
            Err(i) => i,
        };
        let offset = op.heap.insert_name(&op.name)?;
        op.heap_changed = true;
        let entry = SymbolTableEntry::new(offset, object_header, link_cache, self.ctx.sizes)?;
        let k = usize::from(self.leaf_k);
        if sn.node.entries.len() >= k.saturating_mul(2) {
            let at = k.min(sn.node.entries.len());
            let right_entries = sn.node.entries.split_off(at);
            let mut twin = SymbolTableNode::new(self.leaf_k);
            twin.entries = right_entries;
            let last = sn
                .node
                .entries
                .last()
                .ok_or_else(|| Error::corrupt(child, "empty half of a split SNOD"))?;
            *keys.md = GroupKey(last.link_name_offset);
            if idx <= k {
                if idx == k {
                    *keys.md = GroupKey(offset);
                }
                insert_entry(&mut sn.node, idx, entry);
            } else {
                idx = idx.saturating_sub(k);
                if idx == k {
                    *keys.rt = GroupKey(offset);
                    *keys.rt_changed = true;
                }
                insert_entry(&mut twin, idx, entry);
            }
            drop(sn);
            let twin_addr = self.new_snod(cache, twin)?;
            Ok(LeafIns::Right(twin_addr))
        } else {
            if idx == sn.node.entries.len() {
                *keys.rt = GroupKey(offset);
                *keys.rt_changed = true;
            }
            insert_entry(&mut sn.node, idx, entry);
            Ok(LeafIns::Noop)
        }
    }

    fn found(
        &self,
        cache: &MetadataCache,
        child: Addr,
        _lt: &GroupKey,
        op: &mut GroupOp,
    ) -> Result<bool> {
        let sn = cache.get::<SnodEntry>(child, &self.snod_ctx())?;
        let guard = sn.read();
        let node = &guard.node;
        if let Ok(i) = op.position(node)? {
            op.found = node.entries.get(i).cloned();
            return Ok(true);
        }
        Ok(false)
    }

    fn remove(
        &self,
        _cache: &MetadataCache,
        _child: Addr,
        _keys: Keys<'_, GroupKey>,
        _op: &mut GroupOp,
    ) -> Result<bool> {
        Err(Error::Unsupported(
            "removing a link from an old-style group",
        ))
    }

    fn leaf_dep(&self, child: Addr) -> Option<DepKey> {
        Some(DepKey::Entry(child))
    }
}

fn insert_entry(node: &mut SymbolTableNode, idx: usize, entry: SymbolTableEntry) {
    let at = idx.min(node.entries.len());
    node.entries.insert(at, entry);
}

/// An old-style group's symbol table: its B-tree (node type 0), symbol table nodes and local
/// heap.
#[derive(Debug)]
pub struct Group {
    tree: BTree<GroupClass>,
    heap: Addr,
}

/// One link of an old-style group.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Link {
    /// The link name.
    pub name: Vec<u8>,
    /// Its symbol table entry.
    pub entry: SymbolTableEntry,
}

impl<'c> Group {
    fn class(sizes: Sizes, internal_k: u16, leaf_k: u16) -> Result<GroupClass> {
        if leaf_k == 0 {
            return Err(Error::InvalidArgument(
                "group leaf K must be at least 1".into(),
            ));
        }
        Ok(GroupClass {
            ctx: NodeCtx {
                sizes,
                k: internal_k,
                params: (),
            },
            leaf_k,
        })
    }

    /// A new, empty symbol table: an empty B-tree root and a local heap of `heap_size` bytes
    /// (header and data segment in one block) holding the empty name at offset 0.
    /// `internal_k` and `leaf_k` are the superblock's group K values.
    pub fn create(
        cache: &'c MetadataCache,
        sizes: Sizes,
        internal_k: u16,
        leaf_k: u16,
        heap_size: usize,
    ) -> Result<Self> {
        let class = Self::class(sizes, internal_k, leaf_k)?;
        let tree = BTree::create(cache, class)?;
        let header_len = LocalHeap::encoded_len(sizes) as u64;
        let data_len = heap_size.max(usize::from(sizes.lengths()).saturating_mul(2));
        // Lay the segment out first (the empty name may make it grow), then place it right
        // after the header, in one allocation as libhdf5 does.
        let mut data = LocalHeapData::new(data_len, Addr(0), sizes);
        data.insert_name(b"")?;
        let total = header_len.saturating_add(data.len());
        let heap = cache.allocator().allocate(total)?;
        let data_at = heap
            .checked_add(header_len)
            .ok_or_else(|| Error::InvalidArgument("heap address overflows".into()))?;
        let data = LocalHeapData::decode(data.bytes(), data_at, sizes, data.free_list_head())?;
        let header = LocalHeap {
            data_segment_size: data.len(),
            free_list_head: data.free_list_head(),
            data_segment_address: data_at,
        };
        cache.insert(data_at, HeapDataEntry { data })?;
        cache.insert(
            heap,
            HeapEntry {
                heap: header,
                sizes,
            },
        )?;
        Ok(Group { tree, heap })
    }

    /// The symbol table whose B-tree root is at `btree` and local heap header at `heap` (the
    /// Symbol Table message's addresses).
    pub fn open(
        cache: &'c MetadataCache,
        btree: Addr,
        heap: Addr,
        sizes: Sizes,
        internal_k: u16,
        leaf_k: u16,
    ) -> Result<Self> {
        let class = Self::class(sizes, internal_k, leaf_k)?;
        let tree = BTree::open(cache, btree, class)?;
        let group = Group { tree, heap };
        group.load_heap(cache)?;
        Ok(group)
    }

    /// The B-tree root's address (for the Symbol Table message).
    pub fn btree_address(&self) -> Addr {
        self.tree.addr()
    }

    /// The local heap header's address (for the Symbol Table message).
    pub fn heap_address(&self) -> Addr {
        self.heap
    }

    /// The generic tree under this group.
    pub fn tree(&self) -> &BTree<GroupClass> {
        &self.tree
    }

    fn sizes(&self) -> Sizes {
        self.tree.class().ctx.sizes
    }

    /// The local heap's data segment: the names, and the values of soft links (a soft link's
    /// symbol table entry holds the offset of its value).
    pub fn names(&self, cache: &'c MetadataCache) -> Result<LocalHeapData> {
        Ok(self.load_heap(cache)?.1)
    }

    fn load_heap(&self, cache: &'c MetadataCache) -> Result<(LocalHeap, LocalHeapData)> {
        let header = cache
            .get::<HeapEntry>(self.heap, &self.sizes())?
            .read()
            .heap
            .clone();
        let len = usize::try_from(header.data_segment_size)
            .map_err(|_| Error::corrupt(self.heap, "local heap data segment larger than memory"))?;
        let ctx = HeapDataCtx {
            sizes: self.sizes(),
            len,
            free_list_head: header.free_list_head,
        };
        let data = cache
            .get::<HeapDataEntry>(header.data_segment_address, &ctx)?
            .read()
            .data
            .clone();
        Ok((header, data))
    }

    fn store_heap(
        &self,
        cache: &'c MetadataCache,
        header: LocalHeap,
        data: LocalHeapData,
    ) -> Result<()> {
        let old_at = header.data_segment_address;
        let mut header = header;
        if data.len() != header.data_segment_size {
            // The segment grew: give it new space and free the old one.
            let new_at = cache.allocator().allocate(data.len())?;
            let moved =
                LocalHeapData::decode(data.bytes(), new_at, self.sizes(), data.free_list_head())?;
            cache.remove(old_at)?;
            cache.allocator().free(old_at, header.data_segment_size)?;
            cache.insert(new_at, HeapDataEntry { data: moved })?;
            header.data_segment_address = new_at;
            header.data_segment_size = data.len();
        } else {
            let ctx = HeapDataCtx {
                sizes: self.sizes(),
                len: usize::try_from(header.data_segment_size).unwrap_or(usize::MAX),
                free_list_head: header.free_list_head,
            };
            cache.protect::<HeapDataEntry>(old_at, &ctx)?.data = data.clone();
        }
        header.free_list_head = data.free_list_head();
        let data_key = DepKey::Entry(header.data_segment_address);
        cache.protect::<HeapEntry>(self.heap, &self.sizes())?.heap = header;
        // The header points to the data segment: write the segment first.
        match cache.add_flush_dependency(self.heap, data_key) {
            Ok(()) | Err(h5chunk_cache::Error::DependencyExists { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn op(&self, cache: &'c MetadataCache, name: &[u8]) -> Result<GroupOp> {
        if name.contains(&0) {
            return Err(Error::InvalidArgument(
                "a link name cannot contain NUL".into(),
            ));
        }
        let (_, heap) = self.load_heap(cache)?;
        Ok(GroupOp {
            name: name.to_vec(),
            heap,
            heap_changed: false,
            insert: None,
            found: None,
        })
    }

    /// The entry of the link `name`, if present.
    pub fn get(&self, cache: &'c MetadataCache, name: &[u8]) -> Result<Option<SymbolTableEntry>> {
        if name.is_empty() {
            return Ok(None);
        }
        let mut op = self.op(cache, name)?;
        self.tree.get(cache, &mut op)?;
        Ok(op.found)
    }

    /// Add the link `name` to the object at `object_header`, with the symbol table entry's
    /// `cache` (scratch pad). An existing name is [`Error::Exists`].
    pub fn insert(
        &self,
        cache: &'c MetadataCache,
        name: &[u8],
        object_header: Addr,
        link_cache: Cache,
    ) -> Result<()> {
        if name.is_empty() {
            return Err(Error::InvalidArgument("a link name cannot be empty".into()));
        }
        let mut op = self.op(cache, name)?;
        op.insert = Some((Some(object_header), link_cache));
        let result = self.tree.insert(cache, &mut op);
        if op.heap_changed {
            let (header, _) = self.load_heap(cache)?;
            self.store_heap(cache, header, op.heap)?;
        }
        result
    }

    /// Every link, in name order.
    pub fn to_vec(&self, cache: &'c MetadataCache) -> Result<Vec<Link>> {
        let (_, heap) = self.load_heap(cache)?;
        let ctx = self.tree.class().snod_ctx();
        let mut out = Vec::new();
        let _ = self.tree.for_each(cache, |_, child, _| {
            let sn = cache.get::<SnodEntry>(child, &ctx)?;
            for e in &sn.read().node.entries {
                out.push(Link {
                    name: heap.name(e.link_name_offset)?.to_vec(),
                    entry: e.clone(),
                });
            }
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    /// Free the whole symbol table: B-tree nodes, symbol table nodes, local heap. The objects
    /// the links point to are left alone.
    pub fn delete(self, cache: &'c MetadataCache) -> Result<()> {
        let sizes = self.sizes();
        let snod_len = SymbolTableNode::encoded_len(self.tree.class().leaf_k, sizes) as u64;
        let (header, _) = self.load_heap(cache)?;
        self.tree.delete(cache, |_, snod| {
            cache.remove(snod)?;
            cache.allocator().free(snod, snod_len)?;
            Ok(())
        })?;
        cache.remove(header.data_segment_address)?;
        cache.remove(self.heap)?;
        let mut alloc = cache.allocator();
        alloc.free(header.data_segment_address, header.data_segment_size)?;
        alloc.free(self.heap, LocalHeap::encoded_len(sizes) as u64)?;
        Ok(())
    }

    /// The bytes the symbol table occupies: B-tree nodes, symbol table nodes, heap header
    /// and data segment.
    pub fn bytes_used(&self, cache: &'c MetadataCache) -> Result<u64> {
        let mut snods = 0u64;
        let _ = self.tree.for_each(cache, |_, _, _| {
            snods = snods.saturating_add(1);
            Ok(ControlFlow::Continue(()))
        })?;
        let snod_len = SymbolTableNode::encoded_len(self.tree.class().leaf_k, self.sizes()) as u64;
        let (header, _) = self.load_heap(cache)?;
        Ok(self
            .tree
            .bytes_used(cache)?
            .saturating_add(snods.saturating_mul(snod_len))
            .saturating_add(LocalHeap::encoded_len(self.sizes()) as u64)
            .saturating_add(header.data_segment_size))
    }
}
