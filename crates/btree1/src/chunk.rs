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
use std::sync::{Arc, Mutex};

use h5chunk_cache::{Key as DepKey, MetadataCache, ProxyId};
use h5chunk_format::btree1::{ChunkKey, MAX_CHUNK_KEY_DIMS};
use h5chunk_format::{Addr, Sizes};

use crate::entry::NodeCtx;
use crate::error::{Error, Result};
use crate::tree::{BTree, Class, Keys, LeafIns, NewNode};

/// libhdf5's default K of chunk B-trees (`HDF5_BTREE_CHUNK_IK_DEF`): up to 64 children a node.
pub const DEFAULT_CHUNK_K: u16 = 32;

/// A chunk's element offsets.
pub type Offsets = smallvec::SmallVec<[u64; 4]>;

/// One chunk as the index records it.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Chunk {
    /// The chunk's element offsets, one per dataset dimension (multiples of the chunk dims);
    /// inline up to rank 4, so a batch of appended chunks allocates nothing per chunk.
    pub offsets: Offsets,
    /// Its size in the file (the filtered size for a filtered dataset).
    pub size: u32,
    /// Filter mask: bit i set means filter i was skipped.
    pub filter_mask: u32,
    /// Its address.
    pub addr: Addr,
}

/// Where a chunk is, without its offsets (the caller has them): what a lookup needs.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Located {
    /// Its size in the file (the filtered size for a filtered dataset).
    pub size: u32,
    /// Filter mask: bit i set means filter i was skipped.
    pub filter_mask: u32,
    /// Its address.
    pub addr: Addr,
}

/// Whether `ChunkTree::insert_op` accepts the chunk, for a tree of chunk dims `dims` (the
/// layout's, with the element size last).
#[inline]
fn is_valid(chunk: &Chunk, dims: &[u64]) -> bool {
    let on_grid = chunk
        .offsets
        .iter()
        .zip(dims)
        .all(|(&o, &d)| o.checked_rem(d) == Some(0));
    chunk.size != 0 && chunk.offsets.len().saturating_add(1) == dims.len() && on_grid
}

/// How many offsets fit a key's inline buffer: those of a rank-3 dataset and its element-size
/// slot. Keys are built for every insertion, so the common ranks fill that buffer at once
/// rather than pushing offsets one by one.
const INLINE_OFFSETS: usize = 4;

/// A key of `nd` offsets, the first ones from `offsets` and the rest 0.
#[inline(always)]
fn make_key(chunk_size: u32, filter_mask: u32, nd: usize, offsets: &[u64]) -> ChunkKey {
    if nd > INLINE_OFFSETS {
        let tail = nd.saturating_sub(offsets.len());
        let offsets = offsets.iter().copied().take(nd);
        return ChunkKey {
            chunk_size,
            filter_mask,
            offsets: offsets.chain(core::iter::repeat_n(0, tail)).collect(),
        };
    }
    let at = |i: usize| offsets.get(i).copied().unwrap_or(0);
    inline_key(chunk_size, filter_mask, nd, [at(0), at(1), at(2), at(3)])
}

/// A key of the first `nd` (at most `INLINE_OFFSETS`) offsets of `buf`.
#[inline(always)]
fn inline_key(
    chunk_size: u32,
    filter_mask: u32,
    nd: usize,
    buf: [u64; INLINE_OFFSETS],
) -> ChunkKey {
    let mut key = ChunkKey {
        chunk_size,
        filter_mask,
        offsets: buf.into(),
    };
    key.offsets.truncate(nd);
    key
}

/// The key of the chunk at chunk coordinates `scaled` (of the tree's rank) for chunk dims
/// `dims` (`nd` of them, the element size last): each offset a product, checked.
#[inline(always)]
fn scaled_key(scaled: &[u64], dims: &[u64], size: u32, filter_mask: u32) -> Result<ChunkKey> {
    let nd = dims.len();
    if nd <= INLINE_OFFSETS {
        let mut offsets = [0u64; INLINE_OFFSETS];
        for ((o, &s), &d) in offsets.iter_mut().zip(scaled).zip(dims) {
            *o = s.checked_mul(d).ok_or_else(|| past_2_64(scaled))?;
        }
        Ok(inline_key(size, filter_mask, nd, offsets))
    } else {
        let o = scaled
            .iter()
            .zip(dims)
            .map(|(&s, &d)| s.checked_mul(d))
            .collect::<Option<Offsets>>()
            .ok_or_else(|| past_2_64(scaled))?;
        Ok(make_key(size, filter_mask, nd, &o))
    }
}

/// The error for chunk coordinates whose element offsets pass 2^64.
fn past_2_64(scaled: &[u64]) -> Error {
    Error::InvalidArgument(format!("chunk {scaled:?} starts past 2^64"))
}

/// The operation state of the chunk class.
#[derive(Debug)]
pub struct ChunkOp {
    key: ChunkKey,
    addr: Addr,
    found: Option<Located>,
}

impl ChunkOp {
    /// The chunk found, with the offsets it was looked up by (a found key equals the target).
    fn found_chunk(&self, rank: usize) -> Option<Chunk> {
        self.found.map(|l| Chunk {
            offsets: self.key.offsets.iter().copied().take(rank).collect(),
            size: l.size,
            filter_mask: l.filter_mask,
            addr: l.addr,
        })
    }
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
    /// [`check_flat`](Class::check_flat) for keys of `N` offsets: one pass, keys compared as
    /// arrays, the grid checked by masks when every chunk dim is a power of two (a node read
    /// for search runs this once).
    fn check_flat_n<const N: usize>(&self, flat: &[u64]) -> bool {
        let (keys, rest) = flat.as_chunks::<N>();
        let Ok(dims) = <&[u64; N]>::try_from(self.dims.as_slice()) else {
            return false;
        };
        if !rest.is_empty() {
            return false;
        }
        // Per dimension, the mask of the bits a multiple of its chunk dim has clear (the
        // element-size slot must be 0: all bits); `None` if some dim is no power of two.
        let mut masks = [u64::MAX; N];
        let mut pow2 = true;
        for (m, &d) in masks.iter_mut().zip(dims).take(N.saturating_sub(1)) {
            pow2 &= d.is_power_of_two();
            *m = d.wrapping_sub(1);
        }
        let last = keys.len().saturating_sub(1);
        let mut prev: Option<&[u64; N]> = None;
        for (i, k) in keys.iter().enumerate() {
            if prev.is_some_and(|p| p >= k) {
                return false;
            }
            prev = Some(k);
            if i < last {
                let on_grid = if pow2 {
                    k.iter().zip(&masks).all(|(&o, &m)| o & m == 0)
                } else {
                    self.on_grid(k)
                };
                if !on_grid {
                    return false;
                }
            }
        }
        true
    }

    /// Whether `offsets` (`nd` of them) name a chunk: each on the chunk grid (a mask for the
    /// usual power-of-two chunk dims, a remainder otherwise), the element-size slot 0.
    fn on_grid(&self, offsets: &[u64]) -> bool {
        let (grid, slot) = offsets.split_at(offsets.len().saturating_sub(1));
        grid.iter().zip(&self.dims).all(|(&o, &d)| {
            if d.is_power_of_two() {
                o & d.wrapping_sub(1) == 0
            } else {
                o.checked_rem(d) == Some(0)
            }
        }) && slot.iter().all(|&s| s == 0)
    }

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

    /// The right key libhdf5 gives a new right-most child for the chunk of `key`: the chunk
    /// plus the chunk dims in every dimension (element-size slot included), size and mask 0.
    #[inline(always)]
    fn right_key(&self, key: &ChunkKey) -> Result<ChunkKey> {
        let overflow = || Error::InvalidArgument("chunk offset overflows".into());
        let pairs = key.offsets.iter().zip(&self.dims);
        let nd = key.offsets.len().min(self.dims.len());
        if nd > INLINE_OFFSETS {
            let offsets = pairs
                .map(|(&o, &d)| o.checked_add(d))
                .collect::<Option<_>>()
                .ok_or_else(overflow)?;
            return Ok(ChunkKey {
                chunk_size: 0,
                filter_mask: 0,
                offsets,
            });
        }
        let mut buf = [0u64; INLINE_OFFSETS];
        for (b, (&o, &d)) in buf.iter_mut().zip(pairs) {
            *b = o.checked_add(d).ok_or_else(overflow)?;
        }
        Ok(inline_key(0, 0, nd, buf))
    }
}

impl Class for ChunkClass {
    type Key = ChunkKey;
    type Op = ChunkOp;
    const FOUND_READS_CACHE: bool = false;
    const FOLLOW_MIN: bool = false;
    const FOLLOW_MAX: bool = false;

    fn ctx(&self) -> NodeCtx<u8> {
        self.ctx
    }

    fn zero_key(&self) -> ChunkKey {
        make_key(0, 0, self.dims.len(), &[])
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

    /// Chunk keys order as their offsets do: `nd` integers a key. Keys that break the
    /// invariants of [`validate_keys`](Class::validate_keys) have no flat form. One pass:
    /// each key is checked and copied together (this runs once per node a lookup first
    /// reaches, so on every cold lookup).
    fn flatten(&self, keys: &[ChunkKey]) -> Option<Box<[u64]>> {
        let nd = self.dims.len();
        let mut flat = Vec::with_capacity(keys.len().checked_mul(nd)?);
        for k in keys {
            let o = k.offsets.as_slice();
            if o.len() != nd {
                return None;
            }
            flat.extend_from_slice(o);
        }
        self.check_flat(&flat).then(|| flat.into_boxed_slice())
    }

    /// The checks of `validate_keys` on keys in flat form: whole keys of `nd` offsets, every
    /// one but the last on the chunk grid, strictly increasing.
    fn check_flat(&self, flat: &[u64]) -> bool {
        match self.dims.len() {
            2 => self.check_flat_n::<2>(flat),
            3 => self.check_flat_n::<3>(flat),
            4 => self.check_flat_n::<4>(flat),
            nd => {
                if nd == 0 || !flat.len().is_multiple_of(nd) {
                    return false;
                }
                let keys = flat.chunks_exact(nd);
                let increasing = keys.clone().zip(keys.clone().skip(1)).all(|(a, b)| a < b);
                let last = keys.len().saturating_sub(1);
                increasing && keys.take(last).all(|o| self.on_grid(o))
            }
        }
    }

    /// Every key has `nd` offsets; every key but the node's last (its right bound, which
    /// libhdf5 writes as the last chunk plus the chunk dims in every slot) is a chunk: on the
    /// chunk grid, with the element-size slot 0; and the keys increase strictly.
    fn validate_keys(&self, addr: Addr, keys: &[ChunkKey]) -> Result<()> {
        let nd = self.dims.len();
        let last = keys.len().saturating_sub(1);
        for (i, k) in keys.iter().enumerate() {
            if k.offsets.len() != nd {
                return Err(Error::corrupt(
                    addr,
                    "a chunk key of another dimensionality",
                ));
            }
            if i < last && !self.on_grid(&k.offsets) {
                return Err(Error::corrupt(addr, "a chunk key off the chunk grid"));
            }
        }
        if keys
            .windows(2)
            .any(|w| matches!(w, [a, b] if a.offsets >= b.offsets))
        {
            return Err(Error::corrupt(addr, "chunk keys out of order"));
        }
        Ok(())
    }

    #[inline]
    fn flat_target<'o>(&self, op: &'o ChunkOp) -> Option<&'o [u64]> {
        Some(op.key.offsets.as_slice()).filter(|x| x.len() == self.dims.len())
    }

    fn new_node(
        &self,
        _cache: &MetadataCache,
        kind: NewNode,
        lt: &mut ChunkKey,
        op: &mut ChunkOp,
        rt: &mut ChunkKey,
    ) -> Result<Addr> {
        if kind != NewNode::Left {
            *rt = self.right_key(&op.key)?;
        }
        *lt = op.key.clone();
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
            op.found = Some(Located {
                size: lt.chunk_size,
                filter_mask: lt.filter_mask,
                addr: child,
            });
            Ok(true)
        } else {
            Ok(false)
        }
    }

    #[inline]
    fn found_flat(
        &self,
        child: Addr,
        words: &[u64],
        record: u64,
        op: &mut ChunkOp,
    ) -> Option<bool> {
        // Compared word by word: a few integers, where slice equality would call memcmp.
        let target = op.key.offsets.as_slice();
        if words.len() != target.len() || words.iter().zip(target).any(|(a, b)| a != b) {
            return Some(false);
        }
        op.found = Some(Located {
            size: h5chunk_format::btree1::record_size(record),
            filter_mask: h5chunk_format::btree1::record_mask(record),
            addr: child,
        });
        Some(true)
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
        op.found = Some(Located {
            size: keys.lt.chunk_size,
            filter_mask: keys.lt.filter_mask,
            addr: child,
        });
        Ok(true)
    }

    fn leaf_dep(&self, child: Addr) -> Option<DepKey> {
        self.proxies
            .lock()
            .ok()
            .and_then(|p| p.get(&child).copied())
            .map(DepKey::Proxy)
    }

    fn has_leaf_deps(&self) -> bool {
        self.proxies.lock().map_or(true, |p| !p.is_empty())
    }

    /// A chunk whose offsets come after `lt`'s: not the chunk of `lt`, so `insert` adds it as
    /// a new child (it replaces a chunk only at equal offsets).
    fn is_after(&self, lt: &ChunkKey, op: &ChunkOp) -> Result<bool> {
        Ok(op.key.offsets.as_slice() > lt.offsets.as_slice())
    }
}

/// The chunk index of one dataset: a v1 B-tree of node type 1. An owned handle that takes
/// the cache per call (see [`BTree`]); its class keeps the chunk proxies of the chunks it
/// recorded, so a caller keeps one handle per index.
#[derive(Debug)]
pub struct ChunkTree {
    tree: BTree<Arc<ChunkClass>>,
}

impl<'c> ChunkTree {
    fn new_class(sizes: Sizes, k: u16, dims: &[u64]) -> Result<ChunkClass> {
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
        let class = Arc::new(Self::new_class(sizes, k, dims)?);
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
        let class = Arc::new(Self::new_class(sizes, k, dims)?);
        Ok(ChunkTree {
            tree: BTree::open(cache, root, class)?,
        })
    }

    /// The root node's address, for the layout message; it never changes.
    pub fn addr(&self) -> Addr {
        self.tree.addr()
    }

    /// The generic tree under this index.
    pub fn tree(&self) -> &BTree<Arc<ChunkClass>> {
        &self.tree
    }

    fn rank(&self) -> usize {
        self.tree.class().dims.len().saturating_sub(1)
    }

    /// `n` integers (`what`: offsets, chunk coordinates) must be one per dimension.
    fn check_rank(&self, n: usize, what: &str) -> Result<()> {
        if n != self.rank() {
            return Err(Error::InvalidArgument(format!(
                "{n} {what} for a rank-{} dataset",
                self.rank()
            )));
        }
        Ok(())
    }

    fn op(&self, offsets: &[u64], size: u32, filter_mask: u32, addr: Addr) -> Result<ChunkOp> {
        let dims = &self.tree.class().dims;
        self.check_rank(offsets.len(), "offsets")?;
        for (&o, &d) in offsets.iter().zip(dims) {
            if o.checked_rem(d) != Some(0) {
                return Err(Error::InvalidArgument(format!(
                    "offset {o} is not a multiple of the chunk dimension {d}"
                )));
            }
        }
        // The element-size slot of a real chunk is 0.
        let key = make_key(size, filter_mask, dims.len(), offsets);
        Ok(ChunkOp {
            key,
            addr,
            found: None,
        })
    }

    /// The chunk at these element offsets, if allocated.
    pub fn get(&self, cache: &'c MetadataCache, offsets: &[u64]) -> Result<Option<Chunk>> {
        let mut op = self.op(offsets, 0, 0, Addr(0))?;
        self.tree.get(cache, &mut op)?;
        Ok(op.found_chunk(self.rank()))
    }

    /// The chunk at chunk coordinates `scaled` (element offsets divided by the chunk dims),
    /// if allocated: [`get`](Self::get) for a caller that counts in chunks, with no offsets
    /// to check or hand back.
    pub fn get_scaled(&self, cache: &'c MetadataCache, scaled: &[u64]) -> Result<Option<Located>> {
        let dims = &self.tree.class().dims;
        self.check_rank(scaled.len(), "chunk coordinates")?;
        let key = scaled_key(scaled, dims, 0, 0)?;
        let mut op = ChunkOp {
            key,
            addr: Addr(0),
            found: None,
        };
        self.tree.get(cache, &mut op)?;
        Ok(op.found)
    }

    fn insert_op(&self, chunk: &Chunk) -> Result<ChunkOp> {
        if chunk.size == 0 {
            return Err(Error::InvalidArgument("a stored chunk has a size".into()));
        }
        self.op(&chunk.offsets, chunk.size, chunk.filter_mask, chunk.addr)
    }

    /// Insert or replace a chunk. When `proxy` is given (the chunk cache's proxy for the
    /// chunk's data), the leaf that points to the chunk is not written before the chunk.
    pub fn insert(
        &self,
        cache: &'c MetadataCache,
        chunk: &Chunk,
        proxy: Option<ProxyId>,
    ) -> Result<()> {
        let mut op = self.insert_op(chunk)?;
        if let Some(p) = proxy
            && let Ok(mut map) = self.tree.class().proxies.lock()
        {
            map.insert(chunk.addr, p);
        }
        self.tree.insert(cache, &mut op)
    }

    /// Insert or replace the chunks in order: exactly [`insert`](Self::insert)`(chunk, None)`
    /// on each, giving the same nodes and, once flushed, the same bytes in the file. The first
    /// invalid chunk stops the batch with an error, the chunks before it inserted.
    ///
    /// Chunks after every chunk of the index (a dataset growing along its first dimension)
    /// are appended to the right-most leaf directly, with nodes split only when full and the
    /// path of nodes to that leaf held for the run (see [`Batch`](crate::Batch)): a few hundred
    /// instructions a chunk rather than thousands for a descent from the root. Other chunks
    /// go through `insert`.
    pub fn insert_many(&self, cache: &'c MetadataCache, chunks: &[Chunk]) -> Result<()> {
        let dims = self.tree.class().dims.as_slice();
        self.insert_keyed(cache, chunks, |c| {
            if is_valid(c, dims) {
                Ok((
                    make_key(c.size, c.filter_mask, dims.len(), &c.offsets),
                    c.addr,
                ))
            } else {
                // The op gives the error that names what is wrong.
                self.insert_op(c).map(|op| (op.key, op.addr))
            }
        })
    }

    /// [`insert_many`](Self::insert_many) for a caller that counts in chunks: each chunk by
    /// its chunk coordinates (offsets divided by the chunk dims), so its offsets are on the
    /// grid by construction and no remainder is taken. Same nodes, same bytes.
    pub fn insert_many_scaled(
        &self,
        cache: &'c MetadataCache,
        chunks: &[(&[u64], Located)],
    ) -> Result<()> {
        let dims = self.tree.class().dims.as_slice();
        self.insert_keyed(cache, chunks, |&(scaled, at)| {
            if at.size == 0 {
                return Err(Error::InvalidArgument("a stored chunk has a size".into()));
            }
            self.check_rank(scaled.len(), "chunk coordinates")?;
            let key = scaled_key(scaled, dims, at.size, at.filter_mask)?;
            Ok((key, at.addr))
        })
    }

    /// The batch insertion behind [`insert_many`](Self::insert_many) and
    /// [`insert_many_scaled`](Self::insert_many_scaled): `key_of` gives each item's key and
    /// chunk address, or the error that stops the batch.
    fn insert_keyed<T>(
        &self,
        cache: &'c MetadataCache,
        items: &[T],
        key_of: impl Fn(&T) -> Result<(ChunkKey, Addr)>,
    ) -> Result<()> {
        let class = self.tree.class();
        let mut batch = self.tree.batch(cache);
        let mut rest = items;
        while let Some((first, tail)) = rest.split_first() {
            let (key, addr) = key_of(first)?;
            batch.insert(&mut ChunkOp {
                key,
                addr,
                found: None,
            })?;
            rest = tail;
            // While that left the batch appending to a leaf with room, the next chunks that
            // are appends go in directly, as `Batch::insert` would append them, without an op
            // (an invalid chunk, or one that is no append, takes the general path above).
            let Some(mut leaf) = batch.leaf_end() else {
                continue;
            };
            while leaf.has_room()
                && let Some((c, tail)) = rest.split_first()
                && let Some((lt, rt)) = leaf.last_keys()
                && let Ok((key, addr)) = key_of(c)
            {
                // Not after the last chunk (its offsets with the element-size slot 0 compare
                // as the chunk's own): the general path decides.
                if key.offsets.as_slice() <= lt.offsets.as_slice() {
                    break;
                }
                if key.offsets.as_slice() < rt.offsets.as_slice() {
                    leaf.push(addr, key);
                } else {
                    let rt = class.right_key(&key)?;
                    leaf.push_right(addr, key, rt);
                }
                rest = tail;
            }
        }
        batch.finish()
    }

    /// Remove the chunk at these offsets; returns it (its space is the caller's to free).
    pub fn remove(&self, cache: &'c MetadataCache, offsets: &[u64]) -> Result<Option<Chunk>> {
        let mut op = self.op(offsets, 0, 0, Addr(0))?;
        if !self.tree.get(cache, &mut op)? {
            return Ok(None);
        }
        op.found = None;
        self.tree.remove(cache, &mut op)?;
        // The leaf no longer depends on the chunk's proxy (dropped by the tree above).
        if let Some(c) = &op.found
            && let Ok(mut map) = self.tree.class().proxies.lock()
        {
            map.remove(&c.addr);
        }
        Ok(op.found_chunk(self.rank()))
    }

    /// Visit the chunks in key order until `f` breaks.
    pub fn for_each<F>(&self, cache: &'c MetadataCache, mut f: F) -> Result<ControlFlow<()>>
    where
        F: FnMut(&Chunk) -> ControlFlow<()>,
    {
        let class = self.tree.class();
        self.tree
            .for_each(cache, |lt, child, _rt| Ok(f(&class.chunk(lt, child))))
    }

    /// Every chunk, in key order.
    pub fn to_vec(&self, cache: &'c MetadataCache) -> Result<Vec<Chunk>> {
        let mut out = Vec::new();
        let _ = self.for_each(cache, |c| {
            out.push(c.clone());
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }

    /// The bytes the index's nodes occupy in the file.
    pub fn bytes_used(&self, cache: &'c MetadataCache) -> Result<u64> {
        self.tree.bytes_used(cache)
    }

    /// The number of levels (1 for a lone leaf).
    pub fn depth(&self, cache: &'c MetadataCache) -> Result<u8> {
        Ok(self.tree.node_count(cache)?.1)
    }

    /// Free every node of the index, calling `f` for every chunk first (to free its space).
    pub fn delete<F>(self, cache: &'c MetadataCache, mut f: F) -> Result<()>
    where
        F: FnMut(&Chunk) -> Result<()>,
    {
        let tree = self.tree;
        let dims_len = tree.class().dims.len();
        let rank = dims_len.saturating_sub(1);
        tree.delete(cache, |k, child| {
            f(&Chunk {
                offsets: k.offsets.iter().copied().take(rank).collect(),
                size: k.chunk_size,
                filter_mask: k.filter_mask,
                addr: child,
            })
        })
    }
}
