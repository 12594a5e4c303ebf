//! Node type 1: the chunk index of a dataset with a version 3 layout.
//!
//! A key is the chunk's stored size (u32), its filter mask and its element offsets, with a
//! trailing element-size slot that is 0 for a real chunk. Child `i` of a node covers the
//! offsets `key[i] ≤ x < key[i + 1]` (lexicographic, dimension 0 most significant). A new
//! right-most child gets the right key "chunk + chunk dims in every dimension, element-size
//! slot included", size 0 and mask 0, as libhdf5 writes it; later appends often leave it
//! alone, so the last key is not a tight bound (docs/format/chunk-index-format.md §4.3).

use core::cmp::Ordering;
use core::ops::ControlFlow;
use std::collections::HashMap;
use std::sync::Mutex;

use h5chunk_cache::{Key as DepKey, MetadataCache, ProxyId};
use h5chunk_format::btree1::{ChunkKey, MAX_CHUNK_KEY_DIMS};
use h5chunk_format::{Addr, Sizes};

use crate::entry::NodeCtx;
use crate::error::{Error, Result};
use crate::tree::{BTree, Class, Keys, LeafIns, NewNode};

/// libhdf5's default K of chunk B-trees (`HDF5_BTREE_CHUNK_IK_DEF`): up to 64 children a node.
pub const DEFAULT_CHUNK_K: u16 = 32;

/// One chunk as the index records it.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Chunk {
    /// The chunk's element offsets, one per dataset dimension (multiples of the chunk dims).
    pub offsets: Vec<u64>,
    /// Its size in the file (the filtered size for a filtered dataset).
    pub size: u32,
    /// Filter mask: bit i set means filter i was skipped.
    pub filter_mask: u32,
    /// Its address.
    pub addr: Addr,
}

/// The operation state of the chunk class.
#[derive(Debug)]
pub struct ChunkOp {
    key: ChunkKey,
    addr: Addr,
    found: Option<Chunk>,
}

/// The key/record class of chunk B-trees (node type 1).
#[derive(Debug)]
pub struct ChunkClass {
    ctx: NodeCtx<u8>,
    /// The layout's `nd` chunk dims: one per dimension, then the element size.
    dims: Vec<u64>,
    /// The chunk proxies given with insertions, by chunk address: leaves depend on them.
    proxies: Mutex<HashMap<Addr, ProxyId>>,
}

impl ChunkClass {
    fn chunk(&self, key: &ChunkKey, addr: Addr) -> Chunk {
        let rank = self.dims.len().saturating_sub(1);
        Chunk {
            offsets: key.offsets.iter().copied().take(rank).collect(),
            size: key.chunk_size,
            filter_mask: key.filter_mask,
            addr,
        }
    }

    fn same_chunk(key: &ChunkKey, op: &ChunkOp) -> bool {
        key.offsets == op.key.offsets
    }
}

impl Class for ChunkClass {
    type Key = ChunkKey;
    type Op = ChunkOp;
    const FOLLOW_MIN: bool = false;
    const FOLLOW_MAX: bool = false;

    fn ctx(&self) -> NodeCtx<u8> {
        self.ctx
    }

    fn zero_key(&self) -> ChunkKey {
        ChunkKey {
            chunk_size: 0,
            filter_mask: 0,
            offsets: self.dims.iter().map(|_| 0).collect(),
        }
    }

    fn cmp3(&self, lt: &ChunkKey, op: &ChunkOp, rt: &ChunkKey) -> Result<Ordering> {
        let x = op.key.offsets.as_slice();
        Ok(if x >= rt.offsets.as_slice() {
            Ordering::Greater
        } else if x < lt.offsets.as_slice() {
            Ordering::Less
        } else {
            Ordering::Equal
        })
    }

    fn key_cmp(&self, a: &ChunkKey, b: &ChunkKey, _op: &ChunkOp) -> Result<Ordering> {
        Ok(a.offsets.as_slice().cmp(b.offsets.as_slice()))
    }

    fn new_node(
        &self,
        _cache: &MetadataCache,
        kind: NewNode,
        lt: &mut ChunkKey,
        op: &mut ChunkOp,
        rt: &mut ChunkKey,
    ) -> Result<Addr> {
        *lt = op.key.clone();
        if kind != NewNode::Left {
            let offsets = op
                .key
                .offsets
                .iter()
                .zip(&self.dims)
                .map(|(&o, &d)| o.checked_add(d))
                .collect::<Option<_>>()
                .ok_or_else(|| Error::InvalidArgument("chunk offset overflows".into()))?;
            *rt = ChunkKey {
                chunk_size: 0,
                filter_mask: 0,
                offsets,
            };
        }
        Ok(op.addr)
    }

    fn insert(
        &self,
        _cache: &MetadataCache,
        child: Addr,
        keys: Keys<'_, ChunkKey>,
        op: &mut ChunkOp,
    ) -> Result<LeafIns> {
        if self.cmp3(keys.lt, op, keys.rt)? == Ordering::Less {
            return Err(Error::corrupt(child, "chunk left of its leaf key"));
        }
        if Self::same_chunk(keys.lt, op) && keys.lt.chunk_size > 0 {
            if keys.lt.chunk_size != op.key.chunk_size || keys.lt.filter_mask != op.key.filter_mask
            {
                keys.lt.chunk_size = op.key.chunk_size;
                keys.lt.filter_mask = op.key.filter_mask;
                *keys.lt_changed = true;
            }
            Ok(LeafIns::Change(op.addr))
        } else {
            *keys.md = op.key.clone();
            Ok(LeafIns::Right(op.addr))
        }
    }

    fn found(
        &self,
        _cache: &MetadataCache,
        child: Addr,
        lt: &ChunkKey,
        op: &mut ChunkOp,
    ) -> Result<bool> {
        if Self::same_chunk(lt, op) {
            op.found = Some(self.chunk(lt, child));
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn remove(
        &self,
        _cache: &MetadataCache,
        child: Addr,
        keys: Keys<'_, ChunkKey>,
        op: &mut ChunkOp,
    ) -> Result<bool> {
        if !Self::same_chunk(keys.lt, op) {
            return Err(Error::corrupt(
                child,
                "the chunk to remove is not in the leaf",
            ));
        }
        op.found = Some(self.chunk(keys.lt, child));
        Ok(true)
    }

    fn leaf_dep(&self, child: Addr) -> Option<DepKey> {
        self.proxies
            .lock()
            .ok()
            .and_then(|p| p.get(&child).copied())
            .map(DepKey::Proxy)
    }
}

/// The chunk index of one dataset: a v1 B-tree of node type 1.
#[derive(Debug)]
pub struct ChunkTree<'c> {
    tree: BTree<'c, ChunkClass>,
}

impl<'c> ChunkTree<'c> {
    fn class(sizes: Sizes, k: u16, dims: &[u64]) -> Result<ChunkClass> {
        let nd = u8::try_from(dims.len())
            .ok()
            .filter(|&nd| (2..=MAX_CHUNK_KEY_DIMS).contains(&nd))
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{} layout dims (rank + 1, between 2 and 33 expected)",
                    dims.len()
                ))
            })?;
        if dims.contains(&0) {
            return Err(Error::InvalidArgument("a chunk dimension is 0".into()));
        }
        Ok(ChunkClass {
            ctx: NodeCtx {
                sizes,
                k,
                params: nd,
            },
            dims: dims.to_vec(),
            proxies: Mutex::new(HashMap::new()),
        })
    }

    /// A new, empty chunk index. `k` is the superblock's indexed-storage K
    /// ([`DEFAULT_CHUNK_K`] unless a v1 superblock or a superblock extension says otherwise);
    /// `dims` are the layout message's `nd` dims: the chunk dims, then the element size.
    pub fn create(cache: &'c MetadataCache, sizes: Sizes, k: u16, dims: &[u64]) -> Result<Self> {
        let class = Self::class(sizes, k, dims)?;
        Ok(ChunkTree {
            tree: BTree::create(cache, class)?,
        })
    }

    /// The chunk index whose root node is at `root` (the layout message's address).
    pub fn open(
        cache: &'c MetadataCache,
        root: Addr,
        sizes: Sizes,
        k: u16,
        dims: &[u64],
    ) -> Result<Self> {
        let class = Self::class(sizes, k, dims)?;
        Ok(ChunkTree {
            tree: BTree::open(cache, root, class)?,
        })
    }

    /// The root node's address, for the layout message; it never changes.
    pub fn root(&self) -> Addr {
        self.tree.root()
    }

    /// The generic tree under this index.
    pub fn tree(&self) -> &BTree<'c, ChunkClass> {
        &self.tree
    }

    fn rank(&self) -> usize {
        self.tree.class().dims.len().saturating_sub(1)
    }

    fn op(&self, offsets: &[u64], size: u32, filter_mask: u32, addr: Addr) -> Result<ChunkOp> {
        let dims = &self.tree.class().dims;
        if offsets.len() != self.rank() {
            return Err(Error::InvalidArgument(format!(
                "{} offsets for a rank-{} dataset",
                offsets.len(),
                self.rank()
            )));
        }
        for (&o, &d) in offsets.iter().zip(dims) {
            if o.checked_rem(d) != Some(0) {
                return Err(Error::InvalidArgument(format!(
                    "offset {o} is not a multiple of the chunk dimension {d}"
                )));
            }
        }
        let mut key_offsets: Vec<u64> = offsets.to_vec();
        key_offsets.push(0);
        Ok(ChunkOp {
            key: ChunkKey {
                chunk_size: size,
                filter_mask,
                offsets: key_offsets.into_iter().collect(),
            },
            addr,
            found: None,
        })
    }

    /// The chunk at these element offsets, if allocated.
    pub fn get(&self, offsets: &[u64]) -> Result<Option<Chunk>> {
        let mut op = self.op(offsets, 0, 0, Addr(0))?;
        self.tree.find(&mut op)?;
        Ok(op.found)
    }

    /// Insert or replace a chunk. When `proxy` is given (the chunk cache's proxy for the
    /// chunk's data), the leaf that points to the chunk is not written before the chunk.
    pub fn insert(&self, chunk: &Chunk, proxy: Option<ProxyId>) -> Result<()> {
        if chunk.size == 0 {
            return Err(Error::InvalidArgument("a stored chunk has a size".into()));
        }
        let mut op = self.op(&chunk.offsets, chunk.size, chunk.filter_mask, chunk.addr)?;
        if let Some(p) = proxy
            && let Ok(mut map) = self.tree.class().proxies.lock()
        {
            map.insert(chunk.addr, p);
        }
        self.tree.insert(&mut op)
    }

    /// Remove the chunk at these offsets; returns it (its space is the caller's to free).
    pub fn remove(&self, offsets: &[u64]) -> Result<Option<Chunk>> {
        let mut op = self.op(offsets, 0, 0, Addr(0))?;
        if !self.tree.find(&mut op)? {
            return Ok(None);
        }
        op.found = None;
        self.tree.remove(&mut op)?;
        // The leaf no longer depends on the chunk's proxy (dropped by the tree above).
        if let Some(c) = &op.found
            && let Ok(mut map) = self.tree.class().proxies.lock()
        {
            map.remove(&c.addr);
        }
        Ok(op.found)
    }

    /// Visit the chunks in key order until `f` breaks.
    pub fn for_each<F>(&self, mut f: F) -> Result<ControlFlow<()>>
    where
        F: FnMut(&Chunk) -> ControlFlow<()>,
    {
        let class = self.tree.class();
        self.tree
            .iterate(|lt, child, _rt| Ok(f(&class.chunk(lt, child))))
    }

    /// Every chunk, in key order.
    pub fn chunks(&self) -> Result<Vec<Chunk>> {
        let mut out = Vec::new();
        let _ = self.for_each(|c| {
            out.push(c.clone());
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }

    /// The bytes the index's nodes occupy in the file.
    pub fn index_bytes(&self) -> Result<u64> {
        self.tree.node_bytes()
    }

    /// The number of levels (1 for a lone leaf).
    pub fn depth(&self) -> Result<u8> {
        Ok(self.tree.node_count()?.1)
    }

    /// Free every node of the index, calling `f` for every chunk first (to free its space).
    pub fn delete<F>(self, mut f: F) -> Result<()>
    where
        F: FnMut(&Chunk) -> Result<()>,
    {
        let tree = self.tree;
        let dims_len = tree.class().dims.len();
        let rank = dims_len.saturating_sub(1);
        tree.delete(|k, child| {
            f(&Chunk {
                offsets: k.offsets.iter().copied().take(rank).collect(),
                size: k.chunk_size,
                filter_mask: k.filter_mask,
                addr: child,
            })
        })
    }
}
