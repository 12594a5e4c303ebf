//! The tree: create, open, get, insert (redistributing to siblings before splitting, except
//! for appends, which split the full right-most leaf keeping it full), update,
//! remove (merging and redistributing), in-order iteration, nth record, delete, bytes used;
//! flush dependencies and SWMR shadowing.

use core::cmp::Ordering;
use core::ops::{ControlFlow, Deref, DerefMut};
use std::collections::HashSet;
use std::sync::Arc;

use h5chunk_cache::{EntryMut, Error as CacheError, Key, MetadataCache, ProxyId};
use h5chunk_format::btree2::{ChildPointer, Geometry, Header, MAX_DEPTH};
use h5chunk_format::{Addr, Sizes};

use crate::class::RecordClass;
use crate::entry::{HeaderEntry, InternalEntry, LeafEntry, NodeCtx, NodeData};
use crate::error::{Error, Result};

/// Creation parameters of a tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Size of every node in bytes.
    pub node_size: u32,
    /// A node splits (or redistributes) when it holds this percentage of its capacity.
    pub split_percent: u8,
    /// A node merges (or redistributes) when it falls to this percentage of its capacity.
    pub merge_percent: u8,
}

impl Params {
    /// What libhdf5 uses for chunk indexes (`H5D_BT2_NODE_SIZE`, split 100 %, merge 40 %).
    pub const CHUNK_INDEX: Params = Params {
        node_size: 2048,
        split_percent: 100,
        merge_percent: 40,
    };
}

/// Shape figures of a tree, from a full walk ([`BTree2::validate`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeStats {
    /// Depth (0: the root is a leaf).
    pub depth: u16,
    /// Records counted in the nodes.
    pub records: u64,
    /// Nodes per depth, index 0 = leaves.
    pub nodes: Vec<u64>,
    /// Fewest records in a non-root node other than the right-most of its depth, per depth
    /// (`u64::MAX` when there is none). The right-most is left out: the split an append makes
    /// leaves it short until later appends fill it (see `Deal::KeepLeft`).
    pub min_fill: Vec<u64>,
    /// Most records in a node, per depth.
    pub max_fill: Vec<u64>,
}

/// What a search seeks: a key, and how the sought record compares with each record of an equal
/// key (`tie`; consulted only when the class's keys repeat, see [`RecordClass::keys_repeat`]).
struct Probe<'k, C: RecordClass, T> {
    key: &'k C::Key,
    tie: T,
}

/// The tie-break of a search by key alone: every record of the key is the one sought.
fn no_tie<R>(_: &R) -> Ordering {
    Ordering::Equal
}

/// A [`Probe`] by key alone.
type KeyProbe<'k, C> = Probe<'k, C, fn(&<C as RecordClass>::Record) -> Ordering>;

impl<'k, C: RecordClass> KeyProbe<'k, C> {
    fn key(key: &'k C::Key) -> Self {
        Probe { key, tie: no_tie }
    }
}

impl<C: RecordClass, T: Fn(&C::Record) -> Ordering> Probe<'_, C, T> {
    /// How the sought record compares with `r`.
    #[inline]
    fn cmp(&self, class: &C, r: &C::Record) -> Ordering {
        match class.compare(self.key, r) {
            Ordering::Equal => (self.tie)(r),
            other => other,
        }
    }
}

/// Where a key leads in one node.
enum Pos {
    Found(usize),
    Child(usize),
}

/// How an insert may skip comparisons, thanks to the cached minimum and maximum records.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hint {
    Search,
    /// The key is below the tree's minimum: always the left-most child.
    Left,
    /// The key is above the tree's maximum: always the right-most child.
    Right,
}

/// How [`BTree2::rebalance`] deals the pooled records into the new nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Deal {
    /// As evenly as possible, earlier nodes taking the remainder (libhdf5's way).
    Even,
    /// All in the first node, the others empty: the split of a full right-most leaf that an
    /// append enters. Appends fill leaves left to right, so the full leaf stays full (an even
    /// split would leave it half full for good, and libhdf5's moves to the left sibling
    /// rewrite a second leaf on every split) and the new leaf takes the appended records.
    KeepLeft,
}

/// The state of one modifying operation.
struct Op {
    swmr: bool,
    /// Nodes allocated by this operation: no reader can reach them yet, so they are modified in
    /// place even in SWMR-write mode.
    fresh: HashSet<Addr>,
    /// A split or rebalance shadowed nodes below: the ancestors must be shadowed too.
    shadowed: bool,
}

/// Exclusive access to a node, leaf or internal.
enum Guard<'c, C: RecordClass> {
    Leaf(EntryMut<'c, LeafEntry<C>>),
    Internal(EntryMut<'c, InternalEntry<C>>),
}

impl<C: RecordClass> Deref for Guard<'_, C> {
    type Target = NodeData<C>;
    fn deref(&self) -> &NodeData<C> {
        match self {
            Guard::Leaf(g) => g.data(),
            Guard::Internal(g) => g.data(),
        }
    }
}

impl<C: RecordClass> DerefMut for Guard<'_, C> {
    fn deref_mut(&mut self) -> &mut NodeData<C> {
        match self {
            Guard::Leaf(g) => g.data_mut(),
            Guard::Internal(g) => g.data_mut(),
        }
    }
}

/// The right-most path of a tree, protected for a run of appends (`BTree2::append_run`): the
/// internal nodes from the root down, and the right-most leaf, which holds `leaf.records`
/// followed by `input[pending..taken]`. Appended records are cloned only when they reach the
/// node that keeps them (or the left sibling they move to), so they are never moved twice;
/// dropping the run (also on an error) stores those still pending in the leaf.
struct Run<'c, 'r, C: RecordClass> {
    path: Vec<EntryMut<'c, InternalEntry<C>>>,
    leaf: EntryMut<'c, LeafEntry<C>>,
    input: &'r [C::Record],
    pending: usize,
    taken: usize,
    /// Leaves linked to the leaf's parent during this run and found without dirty proxies:
    /// relieving the leaf again with them needs neither, as nothing else runs meanwhile.
    settled: [Option<Addr>; 2],
}

/// The pointers to two sibling leaves of `s0` and `s1` records (a leaf's total is its count).
/// [`BTree2::locate`] on a node's flattened keys (`n` records of `x.len()` integers each), for
/// keys in order (the tree's invariant). `None` when the flattened keys do not have that
/// shape, for the caller to fall back on comparing records.
fn locate_flat(flat: &[u64], x: &[u64], n: usize) -> Option<Pos> {
    let stride = x.len();
    if stride == 0 || Some(flat.len()) != n.checked_mul(stride) {
        return None;
    }
    let found = match stride {
        1 => flat.binary_search(x.first()?),
        2 => search_arrays::<2>(flat, x)?,
        3 => search_arrays::<3>(flat, x)?,
        4 => search_arrays::<4>(flat, x)?,
        _ => {
            let keys: Vec<&[u64]> = flat.chunks_exact(stride).collect();
            keys.binary_search(&x)
        }
    };
    Some(match found {
        Ok(i) => Pos::Found(i),
        Err(i) => Pos::Child(i),
    })
}

/// [`locate_flat`] for keys of `N` integers, compared as arrays.
#[inline(always)]
fn search_arrays<const N: usize>(
    flat: &[u64],
    x: &[u64],
) -> Option<core::result::Result<usize, usize>> {
    let x: &[u64; N] = x.try_into().ok()?;
    let (keys, _) = flat.as_chunks::<N>();
    if let Some(found) = interpolated(keys, x) {
        return Some(found);
    }
    Some(keys.binary_search(x))
}

/// `keys.binary_search(x)` when interpolation finds the answer at once, else `None` (for the
/// binary search). A node of chunks appended in order holds keys nearly evenly spaced in the
/// first integer where its first and last keys differ, so `x`'s place is guessed from that
/// integer; the guess is kept only if it is `x` itself, or if `x` lies strictly between the
/// keys either side of it, so the answer is the binary search's whatever the keys (which
/// are distinct and in order, the tree's invariant, in a node a lookup searches this way).
#[inline(always)]
fn interpolated<const N: usize>(
    keys: &[[u64; N]],
    x: &[u64; N],
) -> Option<core::result::Result<usize, usize>> {
    let (first, last) = (keys.first()?, keys.last()?);
    let d = (0..N).find(|&d| first.get(d) != last.get(d))?;
    let (lo, hi, at) = (*first.get(d)?, *last.get(d)?, *x.get(d)?);
    if first.get(..d) != x.get(..d) || at < lo || at > hi {
        return None;
    }
    let m = keys.len().checked_sub(1)? as u64;
    let p = at
        .checked_sub(lo)?
        .checked_mul(m)?
        .checked_div(hi.checked_sub(lo)?)?;
    let p = usize::try_from(p).ok()?;
    let k = keys.get(p)?;
    if k == x {
        return Some(Ok(p));
    }
    // Between keys p - 1 and p, or p and p + 1.
    let (below, above) = if x < k {
        (p.checked_sub(1).and_then(|b| keys.get(b)), Some((p, k)))
    } else {
        let next = p.checked_add(1)?;
        (Some(k), keys.get(next).map(|n| (next, n)))
    };
    let (i, above) = above?;
    (below.is_none_or(|b| b < x) && x < above).then_some(Err(i))
}

fn leaf_pair(left: Addr, s0: usize, right: Addr, s1: usize) -> [ChildPointer; 2] {
    [
        ChildPointer {
            addr: left,
            nrec: s0 as u64,
            total: s0 as u64,
        },
        ChildPointer {
            addr: right,
            nrec: s1 as u64,
            total: s1 as u64,
        },
    ]
}

impl<C: RecordClass> Run<'_, '_, C> {
    /// Records in the right-most leaf, stored or pending.
    fn leaf_len(&self) -> usize {
        self.leaf
            .data()
            .records
            .len()
            .saturating_add(self.taken.saturating_sub(self.pending))
    }

    /// Store the first `n` pending records in the leaf.
    fn store(&mut self, n: usize) {
        let end = self.pending.saturating_add(n).min(self.taken);
        if let Some(src) = self.input.get(self.pending..end)
            && !src.is_empty()
        {
            self.leaf.data_mut().records.extend_from_slice(src);
            self.pending = end;
        }
    }

    fn store_all(&mut self) {
        self.store(self.taken.saturating_sub(self.pending));
    }

    fn is_settled(&self, addr: Addr) -> bool {
        self.settled.contains(&Some(addr))
    }
}

impl<C: RecordClass> Drop for Run<'_, '_, C> {
    fn drop(&mut self) {
        self.store_all();
    }
}

/// A version 2 B-tree over a metadata cache, with records of class `C`.
///
/// The handle is owned and borrows nothing: every operation takes the metadata cache of the
/// file the tree lives in (always the same one), as the other structure crates' handles do. It
/// keeps what it knows beyond the header's address (the header, the node geometry derived from
/// it, the smallest and largest records when known) from one operation to the next, so a
/// caller that stores the handle (the dataset crate's chunk index) reads no header per
/// operation and appends keep the chunk-index paper's fast path.
///
/// One handle per tree writes it (the single writer); readers open their own handle over their
/// own cache and call [`refresh`](Self::refresh) to see the writer's flushed changes.
pub struct BTree2<C: RecordClass> {
    class: Arc<C>,
    sizes: Sizes,
    addr: Addr,
    hdr: Header,
    geom: Arc<Geometry>,
    /// The smallest and largest records, when known (the chunk-index paper's append fast path).
    minmax: Option<(C::Record, C::Record)>,
    /// SWMR-write mode: the nodes allocated since the header was last written. No reader can
    /// reach them (readers enter through the header), so they change in place; any other
    /// node whose record count changes moves to new space first, since a reader holding its
    /// parent's old count would look for its checksum in the wrong place.
    unpublished: Arc<HashSet<Addr>>,
    /// Copies of the internal nodes lookups went through (see [`Copies`]).
    copies: std::sync::Mutex<Copies<C>>,
}

/// Copies of a tree's internal nodes in search form, made by lookups and kept while the
/// cache's [generation](MetadataCache::generation) stays the one they were made in (any
/// change to an entry, eviction or SWMR refresh moves it on) and the root is the one they
/// were made under. A lookup then goes down the internal levels with no lock, hash or
/// reference count of the metadata cache per level; the leaf is still read there.
struct Copies<C: RecordClass> {
    /// The cache generation and root the copies belong to.
    generation: u64,
    root: Option<(ChildPointer, u16)>,
    /// `nodes[0]` is the root's copy once made; the others are reached through `slots`.
    nodes: Vec<NodeCopy<C>>,
}

impl<C: RecordClass> Default for Copies<C> {
    fn default() -> Self {
        Copies {
            generation: 0,
            root: None,
            nodes: Vec::new(),
        }
    }
}

/// One internal node of [`Copies`].
struct NodeCopy<C: RecordClass> {
    /// The records' keys in the class's flat form.
    keys: Box<[u64]>,
    records: Box<[C::Record]>,
    children: Box<[ChildPointer]>,
    /// Per child, the place of its copy in `Copies::nodes` ([`NO_COPY`]: none yet).
    slots: Box<[u32]>,
}

/// [`NodeCopy::slots`] of a child not copied.
const NO_COPY: u32 = u32::MAX;

/// The most internal nodes a tree keeps copies of (each at most a node's size in keys,
/// records and child pointers): past it, lookups read the rest of the nodes in the cache.
const MAX_COPIES: usize = 1024;

/// Where [`BTree2::descend_copies`] leaves a lookup.
enum CopyStep<R> {
    /// The answer, found in an internal node or known absent.
    Done(Option<R>),
    /// Go on from this node, at this depth.
    From(ChildPointer, u16),
}

impl<C: RecordClass> core::fmt::Debug for BTree2<C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BTree2")
            .field("addr", &self.addr)
            .field("header", &self.hdr)
            .field("class", &self.class)
            .finish()
    }
}

fn header_len(sizes: Sizes) -> u64 {
    Header::encoded_len(sizes) as u64
}

impl<'c, C: RecordClass> BTree2<C> {
    // ----- creation and opening ---------------------------------------------------------

    /// Create an empty tree (header only, no root node) in `cache`'s file.
    pub fn create(
        cache: &'c MetadataCache,
        sizes: Sizes,
        class: C,
        params: Params,
    ) -> Result<Self> {
        if !(1..=100).contains(&params.split_percent)
            || params.merge_percent > params.split_percent / 2
        {
            return Err(Error::InvalidArgument(format!(
                "split {} % must be in 1..=100 and merge {} % at most half of it",
                params.split_percent, params.merge_percent
            )));
        }
        let record_size = u16::try_from(class.record_size())
            .ok()
            .filter(|&r| r > 0)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("record size {}", class.record_size()))
            })?;
        let hdr = Header {
            tree_type: class.tree_type(),
            node_size: params.node_size,
            record_size,
            depth: 0,
            split_percent: params.split_percent,
            merge_percent: params.merge_percent,
            root: None,
            root_nrec: 0,
            total_records: 0,
        };
        let geom = Geometry::new(&hdr, sizes)
            .map_err(|e| Error::InvalidArgument(format!("node size: {e}")))?;
        let addr = cache.allocator().allocate(header_len(sizes))?;
        let tree = BTree2 {
            class: Arc::new(class),
            sizes,
            addr,
            hdr,
            geom: Arc::new(geom),
            minmax: None,
            unpublished: Arc::default(),
            copies: Default::default(),
        };
        // Refuse node sizes too small for the merge and split rules from the start.
        tree.thresholds(0)?;
        cache.insert(
            addr,
            HeaderEntry {
                header: tree.hdr.clone(),
                sizes,
            },
        )?;
        Ok(tree)
    }

    /// Open the tree whose header is at `addr`.
    pub fn open(cache: &'c MetadataCache, addr: Addr, sizes: Sizes, class: C) -> Result<Self> {
        let hdr = cache
            .get::<HeaderEntry>(addr, &sizes)?
            .read()
            .header
            .clone();
        if hdr.tree_type != class.tree_type() {
            return Err(Error::Mismatch {
                header: addr,
                what: "tree type",
                found: hdr.tree_type.into(),
                expected: class.tree_type().into(),
            });
        }
        if usize::from(hdr.record_size) != class.record_size() {
            return Err(Error::Mismatch {
                header: addr,
                what: "record size",
                found: hdr.record_size.into(),
                expected: class.record_size() as u64,
            });
        }
        let geom = Geometry::new(&hdr, sizes)?;
        Ok(BTree2 {
            class: Arc::new(class),
            sizes,
            addr,
            hdr,
            geom: Arc::new(geom),
            minmax: None,
            unpublished: Arc::default(),
            copies: Default::default(),
        })
    }

    /// Re-read the header (a reader following a writer): forget the cached minimum and maximum.
    pub fn refresh(&mut self, cache: &'c MetadataCache) -> Result<()> {
        let hdr = cache
            .get::<HeaderEntry>(self.addr, &self.sizes)?
            .read()
            .header
            .clone();
        self.geom = Arc::new(Geometry::new(&hdr, self.sizes)?);
        self.hdr = hdr;
        self.minmax = None;
        Ok(())
    }

    /// The header's address.
    pub fn addr(&self) -> Addr {
        self.addr
    }

    /// The header as this handle knows it.
    pub fn header(&self) -> &Header {
        &self.hdr
    }

    /// The record class.
    pub fn class(&self) -> &C {
        &self.class
    }

    /// Number of records.
    pub fn len(&self) -> u64 {
        self.hdr.total_records
    }

    /// Whether the tree holds no record.
    pub fn is_empty(&self) -> bool {
        self.hdr.total_records == 0
    }

    /// Depth (0: the root is a leaf).
    pub fn depth(&self) -> u16 {
        self.hdr.depth
    }

    // ----- helpers ------------------------------------------------------------------------

    fn corrupt(&self, at: Addr, reason: impl Into<String>) -> Error {
        Error::Corrupt {
            header: self.addr,
            at,
            reason: reason.into(),
        }
    }

    fn root_ptr(&self) -> Option<ChildPointer> {
        self.hdr.root.map(|addr| ChildPointer {
            addr,
            nrec: self.hdr.root_nrec.into(),
            total: self.hdr.total_records,
        })
    }

    fn ctx(&self, depth: u16, nrec: u64) -> NodeCtx<C> {
        NodeCtx {
            class: self.class.clone(),
            sizes: self.sizes,
            geom: self.geom.clone(),
            depth,
            nrec,
        }
    }

    /// A cached node must be the node its parent describes: a node reached at two depths or
    /// with two counts means a corrupt (possibly cyclic) tree.
    fn check_node(&self, ptr: &ChildPointer, depth: u16, data: &NodeData<C>) -> Result<()> {
        if data.depth != depth || data.records.len() as u64 != ptr.nrec {
            return Err(self.corrupt(
                ptr.addr,
                format!(
                    "node reached at depth {depth} with {} records was loaded at depth {} with {}",
                    ptr.nrec,
                    data.depth,
                    data.records.len()
                ),
            ));
        }
        if depth > 0 && data.children.len() != data.records.len().saturating_add(1) {
            return Err(self.corrupt(ptr.addr, "internal node without nrec + 1 children"));
        }
        Ok(())
    }

    fn read_node<R>(
        &self,
        cache: &'c MetadataCache,
        ptr: &ChildPointer,
        depth: u16,
        f: impl FnOnce(&NodeData<C>) -> Result<R>,
    ) -> Result<R> {
        // The context (two shared pointers) is built only when the node must be loaded.
        let ctx = || self.ctx(depth, ptr.nrec);
        if depth == 0 {
            let e = cache.get_with::<LeafEntry<C>>(ptr.addr, ctx)?;
            let g = e.read();
            self.check_node(ptr, depth, g.data())?;
            f(g.data())
        } else {
            let e = cache.get_with::<InternalEntry<C>>(ptr.addr, ctx)?;
            let g = e.read();
            self.check_node(ptr, depth, g.data())?;
            f(g.data())
        }
    }

    /// One step of [`get`](Self::get) in the node at `ptr`: the record when the node holds
    /// the key (`Err`), else the child to descend to, if any (`Ok`). The search runs on the
    /// node's flattened keys when the class has them.
    #[allow(clippy::type_complexity)]
    fn search_node<T: Fn(&C::Record) -> Ordering>(
        &self,
        cache: &'c MetadataCache,
        ptr: &ChildPointer,
        depth: u16,
        p: &Probe<'_, C, T>,
    ) -> Result<core::result::Result<Option<ChildPointer>, Option<C::Record>>> {
        // Flattened keys say nothing of a tie-break: classes whose keys repeat compare records.
        let flat_key = if self.class.keys_repeat() {
            None
        } else {
            self.class.flat_key(p.key)
        };
        let step = |data: &NodeData<C>, flat: Option<&[u64]>| {
            let pos = flat
                .zip(flat_key)
                .and_then(|(flat, x)| locate_flat(flat, x, data.records.len()))
                .unwrap_or_else(|| self.locate(data, p));
            match pos {
                Pos::Found(i) => Err(data.records.get(i).cloned()),
                Pos::Child(i) => Ok(data.children.get(i).copied()),
            }
        };
        // Searched under the entry's read lock: a hit takes no reference count.
        let ctx = || self.ctx(depth, ptr.nrec);
        if depth == 0 {
            cache.read_with_lazy::<LeafEntry<C>, _>(ptr.addr, ctx, |g| {
                self.check_node(ptr, depth, g.data())?;
                Ok(step(g.data(), g.flat()))
            })?
        } else {
            cache.read_with_lazy::<InternalEntry<C>, _>(ptr.addr, ctx, |g| {
                self.check_node(ptr, depth, g.data())?;
                Ok(step(g.data(), g.flat()))
            })?
        }
    }

    fn node_mut(
        &self,
        cache: &'c MetadataCache,
        ptr: &ChildPointer,
        depth: u16,
    ) -> Result<Guard<'c, C>> {
        let ctx = self.ctx(depth, ptr.nrec);
        let g = if depth == 0 {
            Guard::Leaf(cache.protect::<LeafEntry<C>>(ptr.addr, &ctx)?)
        } else {
            Guard::Internal(cache.protect::<InternalEntry<C>>(ptr.addr, &ctx)?)
        };
        self.check_node(ptr, depth, &g)?;
        Ok(g)
    }

    fn insert_node(&self, cache: &'c MetadataCache, addr: Addr, data: NodeData<C>) -> Result<()> {
        if data.depth == 0 {
            cache.insert(addr, LeafEntry::new(data))?;
        } else {
            cache.insert(addr, InternalEntry::new(data))?;
        }
        Ok(())
    }

    fn new_data(
        &self,
        depth: u16,
        records: Vec<C::Record>,
        children: Vec<ChildPointer>,
    ) -> NodeData<C> {
        NodeData {
            class: self.class.clone(),
            sizes: self.sizes,
            geom: self.geom.clone(),
            depth,
            records,
            children,
        }
    }

    fn alloc_node(&self, cache: &'c MetadataCache, op: &mut Op) -> Result<Addr> {
        let addr = cache.allocator().allocate(self.geom.node_size() as u64)?;
        op.fresh.insert(addr);
        Ok(addr)
    }

    fn free_node(&self, cache: &'c MetadataCache, addr: Addr, op: &mut Op) -> Result<()> {
        cache.remove(addr)?;
        cache.allocator().free(addr, self.geom.node_size() as u64)?;
        op.fresh.remove(&addr);
        Ok(())
    }

    /// Make `child` depend on `parent` alone (header -> root, internal -> child).
    ///
    /// Tree nodes get entry parents only here, and each call leaves the child one: an edge
    /// already there from `parent` is therefore the only one, and the common case costs one
    /// lookup. A new edge is added before former parents are dropped; that cannot close a cycle
    /// that dropping them first would avoid, since a node keeps its depth for life and every
    /// edge goes one level down (or from the header to the root).
    fn link(&self, cache: &'c MetadataCache, parent: Addr, child: Addr) -> Result<()> {
        match cache.add_flush_dependency(parent, child) {
            Err(CacheError::DependencyExists { .. }) => return Ok(()),
            Err(e) => return Err(e.into()),
            Ok(()) => {}
        }
        for p in cache.flush_parents(child) {
            if p != Key::Entry(parent)
                && let Key::Entry(_) = p
            {
                match cache.remove_flush_dependency(p, child) {
                    Ok(()) | Err(CacheError::NoSuchDependency { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(())
    }

    /// [`link`](Self::link) `parent` to each of `children`, asking the cache once for the edges
    /// already there (linking never removes an edge from `parent`, so the answer stays true).
    fn link_all(&self, cache: &'c MetadataCache, parent: Addr, children: &[Addr]) -> Result<()> {
        if children.is_empty() {
            return Ok(());
        }
        let mut present = cache.flush_children(parent);
        present.sort_unstable();
        for &c in children {
            if present.binary_search(&Key::Entry(c)).is_err() {
                self.link(cache, parent, c)?;
            }
        }
        Ok(())
    }

    fn add_proxy(&self, cache: &'c MetadataCache, node: Addr, proxy: ProxyId) -> Result<()> {
        match cache.add_flush_dependency(node, proxy) {
            Ok(()) | Err(CacheError::DependencyExists { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn store_header(&self, cache: &'c MetadataCache) -> Result<()> {
        let mut e = cache.protect::<HeaderEntry>(self.addr, &self.sizes)?;
        if e.header != self.hdr {
            e.header = self.hdr.clone();
        }
        Ok(())
    }

    /// (split threshold, lower bound) of nodes at depth `d`: a node holding the threshold is
    /// split or rebalanced before an insert descends into it; a node holding at most the lower
    /// bound is merged or rebalanced before a removal descends into it.
    fn thresholds(&self, d: u16) -> Result<(usize, usize)> {
        let max = self
            .geom
            .level(d)
            .map(|l| l.max_nrec)
            .ok_or_else(|| self.corrupt(self.addr, format!("no geometry for depth {d}")))?;
        let max = usize::try_from(max).unwrap_or(usize::MAX);
        let split = max.saturating_mul(usize::from(self.hdr.split_percent)) / 100;
        let merge = max.saturating_mul(usize::from(self.hdr.merge_percent)) / 100;
        let low = merge.max(1);
        // Two nodes at the lower bound and their separator must fit one node below the split
        // threshold, so a merge never produces a node that must split at once.
        if split > max || low.saturating_mul(2).saturating_add(2) > split {
            return Err(Error::Unsupported(
                "writing a v2 B-tree whose nodes are too small for its split and merge percentages",
            ));
        }
        Ok((split, low))
    }

    fn locate<T: Fn(&C::Record) -> Ordering>(
        &self,
        data: &NodeData<C>,
        p: &Probe<'_, C, T>,
    ) -> Pos {
        match data
            .records
            .binary_search_by(|r| p.cmp(&self.class, r).reverse())
        {
            Ok(i) => Pos::Found(i),
            Err(i) => Pos::Child(i),
        }
    }

    fn hint<T: Fn(&C::Record) -> Ordering>(&self, p: &Probe<'_, C, T>) -> Hint {
        match &self.minmax {
            Some((min, _)) if p.cmp(&self.class, min) == Ordering::Less => Hint::Left,
            Some((_, max)) if p.cmp(&self.class, max) == Ordering::Greater => Hint::Right,
            _ => Hint::Search,
        }
    }

    /// Start a modifying operation. A node allocated since the header was last written is
    /// out of readers' reach while it is dirty: its parent waits for it (flush dependency), so
    /// no written image points at it yet. Once written (a flush, or an eviction between
    /// flushes) its parent may be written too, pointing at it from a node readers reach: from
    /// then on it is treated as any other node. A clean header means every node may be in a
    /// reader's hands.
    fn new_op(&mut self, cache: &'c MetadataCache) -> Op {
        let swmr = cache.allocator().is_swmr_write();
        let mut fresh = std::mem::take(Arc::make_mut(&mut self.unpublished));
        if !swmr || !cache.is_dirty(self.addr) {
            fresh.clear();
        } else {
            fresh.retain(|&a| cache.is_dirty(a));
        }
        Op {
            swmr,
            fresh,
            shadowed: false,
        }
    }

    /// End an operation begun by [`new_op`](Self::new_op): keep what it allocated. (An
    /// operation that fails drops the set, which only makes later changes move more nodes.)
    fn end_op(&mut self, op: Op) {
        if op.swmr {
            *Arc::make_mut(&mut self.unpublished) = op.fresh;
        }
    }

    /// In SWMR-write mode, move a node whose record count just changed (and whose guard is
    /// released) to new space unless no reader can reach it; its new address.
    fn moved_if_published(
        &self,
        cache: &'c MetadataCache,
        ptr: &ChildPointer,
        depth: u16,
        op: &mut Op,
    ) -> Result<Addr> {
        if op.swmr && !op.fresh.contains(&ptr.addr) {
            self.relocate(cache, ptr, depth, op)
        } else {
            Ok(ptr.addr)
        }
    }

    /// Move a node modified in place to new space (SWMR shadowing): its old image stays intact
    /// in the file for readers until the space is reused, which the allocator defers.
    fn relocate(
        &self,
        cache: &'c MetadataCache,
        ptr: &ChildPointer,
        depth: u16,
        op: &mut Op,
    ) -> Result<Addr> {
        if op.fresh.contains(&ptr.addr) {
            return Ok(ptr.addr);
        }
        if !cache.is_resident(ptr.addr) {
            self.read_node(cache, ptr, depth, |_| Ok(()))?;
        }
        let new = self.alloc_node(cache, op)?;
        cache.move_entry(ptr.addr, new)?;
        cache
            .allocator()
            .free(ptr.addr, self.geom.node_size() as u64)?;
        Ok(new)
    }

    fn subtree_total(&self, at: Addr, nrec: usize, children: &[ChildPointer]) -> Result<u64> {
        children.iter().try_fold(nrec as u64, |acc, c| {
            acc.checked_add(c.total)
                .ok_or_else(|| self.corrupt(at, "record count overflow"))
        })
    }

    /// The dirty chunk proxies that the nodes at `nodes` wait for: when records move between
    /// nodes, these follow them to every node of the result.
    fn dirty_proxies(
        &self,
        cache: &'c MetadataCache,
        nodes: impl IntoIterator<Item = Addr>,
    ) -> Vec<ProxyId> {
        nodes
            .into_iter()
            .flat_map(|a| cache.flush_children(a))
            .filter_map(|key| match key {
                Key::Proxy(p) if cache.is_dirty(p) => Some(p),
                _ => None,
            })
            .collect()
    }

    /// Pool children `first .. first + k` of `node` (at `node_addr`) with the separators between
    /// them and deal the records into `m` nodes as evenly as possible (earlier nodes take the
    /// remainder): redistribution (`m == k`), split (`m == k + 1`) or merge (`m == k - 1`).
    fn rebalance(
        &self,
        cache: &'c MetadataCache,
        node: &mut NodeData<C>,
        node_addr: Addr,
        (first, k, m): (usize, usize, usize),
        deal: Deal,
        op: &mut Op,
    ) -> Result<()> {
        let cd = node
            .depth
            .checked_sub(1)
            .ok_or_else(|| self.corrupt(node_addr, "rebalancing below a leaf"))?;
        let olds: Vec<ChildPointer> = node
            .children
            .get(first..first.saturating_add(k))
            .ok_or_else(|| self.corrupt(node_addr, "child index out of range"))?
            .to_vec();
        if k == 0 || m == 0 || node.records.len() < first.saturating_add(k).saturating_sub(1) {
            return Err(self.corrupt(node_addr, "separator index out of range"));
        }
        let proxies = self.dirty_proxies(cache, olds.iter().map(|p| p.addr));
        let mut seps = node
            .records
            .drain(first..first.saturating_add(k).saturating_sub(1));
        let mut recs = Vec::new();
        let mut kids = Vec::new();
        let mut guards: Vec<Option<Guard<'c, C>>> = Vec::with_capacity(k);
        let mut load = || -> Result<()> {
            for (j, p) in olds.iter().enumerate() {
                let mut g = self.node_mut(cache, p, cd)?;
                if op.swmr && !op.fresh.contains(&p.addr) {
                    // Shadowed: read without dirtying; the old image stays as readers know it.
                    recs.extend(g.records.iter().cloned());
                    kids.extend(g.children.iter().copied());
                    guards.push(None);
                } else {
                    let d = &mut *g;
                    recs.append(&mut d.records);
                    kids.append(&mut d.children);
                    guards.push(Some(g));
                }
                if j.saturating_add(1) < k {
                    let s = seps
                        .next()
                        .ok_or_else(|| self.corrupt(node_addr, "missing separator"))?;
                    recs.push(s);
                }
            }
            Ok(())
        };
        let loaded = load();
        drop(seps);
        loaded?;
        let body = recs
            .len()
            .checked_sub(m.saturating_sub(1))
            .ok_or_else(|| self.corrupt(node_addr, "too few records to rebalance"))?;
        let (base, rem) = match deal {
            Deal::Even => (
                body.checked_div(m).unwrap_or(0),
                body.checked_rem(m).unwrap_or(0),
            ),
            // Every record in the first node, none in the others (see `Deal::KeepLeft`).
            Deal::KeepLeft => (0, usize::from(m > 0)),
        };
        let mut recs = recs.into_iter();
        let mut kids = kids.into_iter();
        let mut new_seps = Vec::with_capacity(m.saturating_sub(1));
        let mut ptrs = Vec::with_capacity(m);
        for j in 0..m {
            let s = match deal {
                Deal::KeepLeft if j == 0 => body,
                _ => base.saturating_add(usize::from(j < rem)),
            };
            // The empty node an append's split starts gets room for a full leaf: the appends
            // that follow fill it without regrowing it.
            let cap = match deal {
                Deal::KeepLeft if j > 0 => self.thresholds(cd).map_or(s, |(split, _)| split.max(s)),
                _ => s,
            };
            let mut r: Vec<C::Record> = Vec::with_capacity(cap);
            r.extend(recs.by_ref().take(s));
            let c: Vec<ChildPointer> = if cd > 0 {
                kids.by_ref().take(s.saturating_add(1)).collect()
            } else {
                Vec::new()
            };
            if r.len() != s || (cd > 0 && c.len() != s.saturating_add(1)) {
                return Err(self.corrupt(node_addr, "children and records out of step"));
            }
            let reuse = guards.get_mut(j).and_then(Option::take);
            let addr = match &reuse {
                Some(_) => olds.get(j).map(|p| p.addr).unwrap_or(node_addr),
                None => self.alloc_node(cache, op)?,
            };
            let total = self.subtree_total(addr, s, &c)?;
            let children_addrs: Vec<Addr> = c.iter().map(|p| p.addr).collect();
            match reuse {
                Some(mut g) => {
                    g.records = r;
                    g.children = c;
                }
                None => self.insert_node(cache, addr, self.new_data(cd, r, c))?,
            }
            ptrs.push((
                ChildPointer {
                    addr,
                    nrec: s as u64,
                    total,
                },
                children_addrs,
            ));
            if j.saturating_add(1) < m {
                new_seps.push(
                    recs.next()
                        .ok_or_else(|| self.corrupt(node_addr, "missing separator"))?,
                );
            }
        }
        // Nodes not reused (merged away, or shadowed) leave the cache unwritten.
        let kept: HashSet<Addr> = ptrs.iter().map(|(p, _)| p.addr).collect();
        drop(guards);
        for p in &olds {
            if !kept.contains(&p.addr) {
                self.free_node(cache, p.addr, op)?;
            }
        }
        let _ = node.records.splice(first..first, new_seps);
        let _ = node
            .children
            .splice(first..first.saturating_add(k), ptrs.iter().map(|(p, _)| *p));
        for (p, grandchildren) in &ptrs {
            self.link(cache, node_addr, p.addr)?;
            self.link_all(cache, p.addr, grandchildren)?;
            for &x in &proxies {
                self.add_proxy(cache, p.addr, x)?;
            }
        }
        if op.swmr {
            op.shadowed = true;
        }
        Ok(())
    }

    // ----- reading ------------------------------------------------------------------------

    /// The record whose key is `key` (when the class's keys repeat: one of the records of
    /// that key, whichever the descent meets first; see [`get_by`](Self::get_by) and
    /// [`get_all`](Self::get_all)).
    pub fn get(&self, cache: &'c MetadataCache, key: &C::Key) -> Result<Option<C::Record>> {
        self.find_probe(cache, &Probe::key(key))
    }

    /// The record of key `key` that `tie` picks among the records of that key: `tie(r)` says
    /// how the record sought compares with `r` (a record of key `key`), in the order the
    /// tree keeps such records (libhdf5's name indexes: the names, read through the heap ID
    /// of `r`). `tie` is called only on records of key `key`.
    pub fn get_by(
        &self,
        cache: &'c MetadataCache,
        key: &C::Key,
        tie: impl Fn(&C::Record) -> Ordering,
    ) -> Result<Option<C::Record>> {
        self.find_probe(cache, &Probe { key, tie })
    }

    fn find_probe<T: Fn(&C::Record) -> Ordering>(
        &self,
        cache: &'c MetadataCache,
        p: &Probe<'_, C, T>,
    ) -> Result<Option<C::Record>> {
        if let Some((min, max)) = &self.minmax
            && (p.cmp(&self.class, min) == Ordering::Less
                || p.cmp(&self.class, max) == Ordering::Greater)
        {
            return Ok(None);
        }
        let Some(root) = self.root_ptr() else {
            return Ok(None);
        };
        let flat_key = if self.class.keys_repeat() {
            None
        } else {
            self.class.flat_key(p.key)
        };
        let (mut ptr, mut depth) = match flat_key {
            Some(x) => match self.descend_copies(cache, root, x)? {
                CopyStep::Done(found) => return Ok(found),
                CopyStep::From(ptr, depth) => (ptr, depth),
            },
            None => (root, self.hdr.depth),
        };
        // Each step goes one level down from the header's depth (at most MAX_DEPTH), so a
        // cyclic corrupt tree ends in an error, never a loop.
        loop {
            let step = self.search_node(cache, &ptr, depth, p)?;
            match step {
                Err(found) => return Ok(found),
                Ok(None) => return Ok(None),
                Ok(Some(child)) => {
                    ptr = child;
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| self.corrupt(ptr.addr, "descent below a leaf"))?;
                }
            }
        }
    }

    /// The internal levels of a lookup of flat key `x` on the [`Copies`] of the nodes: the
    /// answer when an internal node holds the key, else where to go on in the cache (the root
    /// when there are no copies to use). Copies are made of the internal nodes passed through
    /// that have none.
    fn descend_copies(
        &self,
        cache: &'c MetadataCache,
        root: ChildPointer,
        x: &[u64],
    ) -> Result<CopyStep<C::Record>> {
        let from_root = CopyStep::From(root, self.hdr.depth);
        if self.hdr.depth == 0 {
            return Ok(from_root);
        }
        // Another lookup holds the copies (or one panicked holding them): go the cache's way.
        let Ok(mut copies) = self.copies.try_lock() else {
            return Ok(from_root);
        };
        let copies = &mut *copies;
        let generation = cache.generation();
        let at_root = Some((root, self.hdr.depth));
        if copies.generation != generation || copies.root != at_root {
            copies.generation = generation;
            copies.root = at_root;
            copies.nodes.clear();
        }
        if copies.nodes.is_empty() {
            match self.copy_node(cache, &root, self.hdr.depth)? {
                Some(c) => copies.nodes.push(c),
                None => return Ok(from_root),
            }
        }
        let (mut at, mut depth) = (0usize, self.hdr.depth);
        // Each step goes one level down from the header's depth (nodes were checked to be at
        // their depth when copied).
        for _ in 0..=MAX_DEPTH {
            let Some(node) = copies.nodes.get(at) else {
                return Ok(from_root);
            };
            let Some(pos) = locate_flat(&node.keys, x, node.records.len()) else {
                return Ok(from_root);
            };
            let i = match pos {
                Pos::Found(i) => return Ok(CopyStep::Done(node.records.get(i).cloned())),
                Pos::Child(i) => i,
            };
            let Some(child) = node.children.get(i).copied() else {
                return Ok(CopyStep::Done(None));
            };
            depth = depth
                .checked_sub(1)
                .ok_or_else(|| self.corrupt(child.addr, "descent below a leaf"))?;
            if depth == 0 {
                return Ok(CopyStep::From(child, 0));
            }
            let slot = node.slots.get(i).copied().unwrap_or(NO_COPY);
            if slot != NO_COPY {
                at = slot as usize;
                continue;
            }
            let next = u32::try_from(copies.nodes.len())
                .ok()
                .filter(|&n| (n as usize) < MAX_COPIES);
            let Some(next) = next else {
                return Ok(CopyStep::From(child, depth));
            };
            let Some(copy) = self.copy_node(cache, &child, depth)? else {
                return Ok(CopyStep::From(child, depth));
            };
            copies.nodes.push(copy);
            if let Some(s) = copies.nodes.get_mut(at).and_then(|n| n.slots.get_mut(i)) {
                *s = next;
            }
            at = next as usize;
        }
        Err(self.corrupt(root.addr, "descent deeper than MAX_DEPTH"))
    }

    /// A copy of the internal node at `ptr`, checked as a lookup checks it; `None` when its
    /// keys have no flat form.
    fn copy_node(
        &self,
        cache: &'c MetadataCache,
        ptr: &ChildPointer,
        depth: u16,
    ) -> Result<Option<NodeCopy<C>>> {
        let ctx = || self.ctx(depth, ptr.nrec);
        cache.read_with_lazy::<InternalEntry<C>, _>(ptr.addr, ctx, |g| {
            let data = g.data();
            self.check_node(ptr, depth, data)?;
            Ok(g.flat().map(|keys| NodeCopy {
                keys: keys.into(),
                records: data.records.as_slice().into(),
                children: data.children.as_slice().into(),
                slots: vec![NO_COPY; data.children.len()].into(),
            }))
        })?
    }

    /// Every record of key `key`, in the tree's order: one descent, then the records of that
    /// key and the subtrees between them (libhdf5's name indexes: the records of one hash,
    /// whose names tell them apart).
    pub fn get_all(&self, cache: &'c MetadataCache, key: &C::Key) -> Result<Vec<C::Record>> {
        let mut out = Vec::new();
        if let Some((min, max)) = &self.minmax
            && (self.class.compare(key, min) == Ordering::Less
                || self.class.compare(key, max) == Ordering::Greater)
        {
            return Ok(out);
        }
        if let Some(root) = self.root_ptr() {
            self.find_all_node(cache, &root, self.hdr.depth, key, &mut out)?;
        }
        Ok(out)
    }

    fn find_all_node(
        &self,
        cache: &'c MetadataCache,
        ptr: &ChildPointer,
        depth: u16,
        key: &C::Key,
        out: &mut Vec<C::Record>,
    ) -> Result<()> {
        /// A record of the key, or a subtree that may hold some.
        enum Item<R> {
            Record(R),
            Child(ChildPointer),
        }
        // The node's records `lo..hi` have the key; its children `lo..=hi` may hold more.
        // They are listed first and visited after the node's lock is released.
        let items = self.read_node(cache, ptr, depth, |n| {
            let lo = n
                .records
                .partition_point(|r| self.class.compare(key, r) == Ordering::Greater);
            let hi = n
                .records
                .partition_point(|r| self.class.compare(key, r) != Ordering::Less);
            let mut items = Vec::new();
            for i in lo..=hi {
                if depth > 0 {
                    let c = n
                        .children
                        .get(i)
                        .ok_or_else(|| self.corrupt(ptr.addr, "child index out of range"))?;
                    items.push(Item::Child(*c));
                }
                if let Some(r) = n.records.get(i).filter(|_| i < hi) {
                    items.push(Item::Record(r.clone()));
                }
            }
            Ok(items)
        })?;
        // Recursion depth is the header's depth, at most MAX_DEPTH.
        for item in items {
            match item {
                Item::Record(r) => out.push(r),
                Item::Child(c) => {
                    let d = depth
                        .checked_sub(1)
                        .ok_or_else(|| self.corrupt(c.addr, "descent below a leaf"))?;
                    self.find_all_node(cache, &c, d, key, out)?;
                }
            }
        }
        Ok(())
    }

    /// The `n`th record in key order (0-based), found through the subtree counts in O(depth).
    pub fn nth(&self, cache: &'c MetadataCache, n: u64) -> Result<Option<C::Record>> {
        let Some(mut ptr) = self.root_ptr() else {
            return Ok(None);
        };
        if n >= self.hdr.total_records {
            return Ok(None);
        }
        let mut n = n;
        let mut depth = self.hdr.depth;
        for _ in 0..=MAX_DEPTH {
            let step = self.read_node(cache, &ptr, depth, |node| {
                if depth == 0 {
                    return Ok(Err(node.records.get(n as usize).cloned()));
                }
                let mut left = n;
                for (i, c) in node.children.iter().enumerate() {
                    if left < c.total {
                        return Ok(Ok((*c, left)));
                    }
                    left = left.saturating_sub(c.total);
                    if left == 0 {
                        return Ok(Err(node.records.get(i).cloned()));
                    }
                    left = left.saturating_sub(1);
                }
                Err(self.corrupt(ptr.addr, "subtree counts below the parent's total"))
            })?;
            match step {
                Err(found) => {
                    return found
                        .map(Some)
                        .ok_or_else(|| self.corrupt(ptr.addr, "record index beyond the node"));
                }
                Ok((child, left)) => {
                    ptr = child;
                    n = left;
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| self.corrupt(ptr.addr, "descent below a leaf"))?;
                }
            }
        }
        Err(self.corrupt(self.addr, "descent deeper than MAX_DEPTH"))
    }

    /// Call `f` on every record in key order until it breaks; returns whether it broke.
    ///
    /// `f` runs while the node holding the record is read-locked in the cache: it must not
    /// modify this tree.
    pub fn for_each(
        &self,
        cache: &'c MetadataCache,
        mut f: impl FnMut(&C::Record) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>> {
        let Some(root) = self.root_ptr() else {
            return Ok(ControlFlow::Continue(()));
        };
        let mut count = 0u64;
        let flow = self.iter_node(cache, &root, self.hdr.depth, &mut f, &mut count)?;
        if flow.is_continue() && count != self.hdr.total_records {
            return Err(self.corrupt(
                self.addr,
                format!(
                    "header counts {} records, nodes hold {count}",
                    self.hdr.total_records
                ),
            ));
        }
        Ok(flow)
    }

    fn iter_node(
        &self,
        cache: &'c MetadataCache,
        ptr: &ChildPointer,
        depth: u16,
        f: &mut impl FnMut(&C::Record) -> ControlFlow<()>,
        count: &mut u64,
    ) -> Result<ControlFlow<()>> {
        // Recursion depth is the header's depth, at most MAX_DEPTH.
        self.read_node(cache, ptr, depth, |node| {
            let start = *count;
            for (i, r) in node.records.iter().enumerate() {
                if depth > 0 {
                    let c = node
                        .children
                        .get(i)
                        .ok_or_else(|| self.corrupt(ptr.addr, "missing child"))?;
                    if self
                        .iter_node(cache, c, depth.saturating_sub(1), f, count)?
                        .is_break()
                    {
                        return Ok(ControlFlow::Break(()));
                    }
                }
                *count = count.saturating_add(1);
                if f(r).is_break() {
                    return Ok(ControlFlow::Break(()));
                }
            }
            if depth > 0 {
                let c = node
                    .children
                    .last()
                    .ok_or_else(|| self.corrupt(ptr.addr, "missing child"))?;
                if self
                    .iter_node(cache, c, depth.saturating_sub(1), f, count)?
                    .is_break()
                {
                    return Ok(ControlFlow::Break(()));
                }
            }
            if count.saturating_sub(start) != ptr.total {
                return Err(self.corrupt(
                    ptr.addr,
                    format!(
                        "parent counts {} records in the subtree, found {}",
                        ptr.total,
                        count.saturating_sub(start)
                    ),
                ));
            }
            Ok(ControlFlow::Continue(()))
        })
    }

    /// Every record in key order.
    pub fn to_vec(&self, cache: &'c MetadataCache) -> Result<Vec<C::Record>> {
        let mut out =
            Vec::with_capacity(usize::try_from(self.hdr.total_records.min(1 << 24)).unwrap_or(0));
        let _ = self.for_each(cache, |r| {
            out.push(r.clone());
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }

    fn node_addrs(
        &self,
        cache: &'c MetadataCache,
        ptr: &ChildPointer,
        depth: u16,
        out: &mut Vec<(Addr, u16)>,
    ) -> Result<()> {
        out.push((ptr.addr, depth));
        if depth == 0 {
            return Ok(());
        }
        let children = self.read_node(cache, ptr, depth, |n| Ok(n.children.clone()))?;
        for c in &children {
            self.node_addrs(cache, c, depth.saturating_sub(1), out)?;
        }
        Ok(())
    }

    /// The address and depth of every node, in pre-order.
    pub fn nodes(&self, cache: &'c MetadataCache) -> Result<Vec<(Addr, u16)>> {
        let mut nodes = Vec::new();
        if let Some(root) = self.root_ptr() {
            self.node_addrs(cache, &root, self.hdr.depth, &mut nodes)?;
        }
        Ok(nodes)
    }

    /// File space the tree occupies: the header and every node at its full size.
    pub fn bytes_used(&self, cache: &'c MetadataCache) -> Result<u64> {
        let mut nodes = Vec::new();
        if let Some(root) = self.root_ptr() {
            self.node_addrs(cache, &root, self.hdr.depth, &mut nodes)?;
        }
        (nodes.len() as u64)
            .checked_mul(u64::from(self.hdr.node_size))
            .and_then(|b| b.checked_add(header_len(self.sizes)))
            .ok_or_else(|| self.corrupt(self.addr, "size overflow"))
    }

    /// Walk the whole tree and check it: record order (within and across nodes), counts in
    /// every pointer and in the header, uniform depth. Returns its shape.
    pub fn validate(&self, cache: &'c MetadataCache) -> Result<TreeStats> {
        let d = usize::from(self.hdr.depth);
        let mut st = TreeStats {
            depth: self.hdr.depth,
            records: 0,
            nodes: vec![0; d + 1],
            min_fill: vec![u64::MAX; d + 1],
            max_fill: vec![0; d + 1],
        };
        if let Some(root) = self.root_ptr() {
            let mut last: Option<C::Record> = None;
            self.validate_node(
                cache,
                &root,
                self.hdr.depth,
                (true, true),
                &mut last,
                &mut st,
            )?;
        }
        if st.records != self.hdr.total_records {
            return Err(self.corrupt(self.addr, "header total differs from the records found"));
        }
        Ok(st)
    }

    fn validate_node(
        &self,
        cache: &'c MetadataCache,
        ptr: &ChildPointer,
        depth: u16,
        (is_root, rightmost): (bool, bool),
        last: &mut Option<C::Record>,
        st: &mut TreeStats,
    ) -> Result<u64> {
        let (records, children) = self.read_node(cache, ptr, depth, |n| {
            Ok((n.records.clone(), n.children.clone()))
        })?;
        let di = usize::from(depth);
        let max = self.geom.level(depth).map_or(0, |l| l.max_nrec);
        let n = records.len() as u64;
        if n > max || (n == 0 && (depth > 0 || !is_root)) {
            return Err(self.corrupt(ptr.addr, format!("{n} records in a node of {max}")));
        }
        if let (Some(c), Some(x)) = (st.nodes.get_mut(di), st.max_fill.get_mut(di)) {
            *c = c.saturating_add(1);
            *x = (*x).max(n);
        }
        if !rightmost && let Some(m) = st.min_fill.get_mut(di) {
            *m = (*m).min(n);
        }
        let mut total = 0u64;
        let check = |r: &C::Record, last: &mut Option<C::Record>| -> Result<()> {
            // Records of one key (a class whose keys repeat) are ordered by what only the
            // caller knows: equal neighbours are in order as far as the tree can tell.
            let repeat = self.class.keys_repeat();
            if let Some(prev) = last.as_ref()
                && match self.class.compare(self.class.key(r), prev) {
                    Ordering::Greater => false,
                    Ordering::Equal => !repeat,
                    Ordering::Less => true,
                }
            {
                return Err(self.corrupt(ptr.addr, "records out of order"));
            }
            *last = Some(r.clone());
            Ok(())
        };
        for (i, r) in records.iter().enumerate() {
            if depth > 0 {
                let c = children
                    .get(i)
                    .ok_or_else(|| self.corrupt(ptr.addr, "missing child"))?;
                total = total.saturating_add(self.validate_node(
                    cache,
                    c,
                    depth.saturating_sub(1),
                    (false, false),
                    last,
                    st,
                )?);
            }
            check(r, last)?;
            total = total.saturating_add(1);
        }
        if depth > 0 {
            let c = children
                .last()
                .ok_or_else(|| self.corrupt(ptr.addr, "missing child"))?;
            total = total.saturating_add(self.validate_node(
                cache,
                c,
                depth.saturating_sub(1),
                (false, rightmost),
                last,
                st,
            )?);
        }
        if total != ptr.total {
            return Err(self.corrupt(
                ptr.addr,
                format!("counted {} records, found {total}", ptr.total),
            ));
        }
        st.records = st.records.saturating_add(n);
        Ok(total)
    }

    fn extreme(&self, cache: &'c MetadataCache, right: bool) -> Result<Option<C::Record>> {
        let Some(mut ptr) = self.root_ptr() else {
            return Ok(None);
        };
        let mut depth = self.hdr.depth;
        for _ in 0..=MAX_DEPTH {
            let step = self.read_node(cache, &ptr, depth, |n| {
                Ok(if depth == 0 {
                    Err(if right {
                        n.records.last()
                    } else {
                        n.records.first()
                    }
                    .cloned())
                } else {
                    Ok(if right {
                        n.children.last()
                    } else {
                        n.children.first()
                    }
                    .copied())
                })
            })?;
            match step {
                Err(r) => return Ok(r),
                Ok(Some(c)) => {
                    ptr = c;
                    depth = depth.saturating_sub(1);
                }
                Ok(None) => return Err(self.corrupt(ptr.addr, "internal node without children")),
            }
        }
        Err(self.corrupt(self.addr, "descent deeper than MAX_DEPTH"))
    }

    /// The smallest and largest records (cached after the first call, kept up to date by
    /// inserts; the chunk-index paper's fast path for appends).
    pub fn min_max(&mut self, cache: &'c MetadataCache) -> Result<Option<(C::Record, C::Record)>> {
        if self.minmax.is_none()
            && let (Some(a), Some(b)) = (self.extreme(cache, false)?, self.extreme(cache, true)?)
        {
            self.minmax = Some((a, b));
        }
        Ok(self.minmax.clone())
    }
}

// ----- modification -------------------------------------------------------------------------

/// What a removal descends for.
enum Target<'p, P> {
    Key(&'p P),
    Min,
}

impl<P> Clone for Target<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for Target<'_, P> {}

impl<'c, C: RecordClass> BTree2<C> {
    /// Insert `record`; an error if a record with its key is there already.
    pub fn try_insert(&mut self, cache: &'c MetadataCache, record: C::Record) -> Result<()> {
        self.try_insert_with_proxy(cache, record, None)
    }

    /// Insert `record` for a chunk whose data the chunk proxy `proxy` stands for: the node that
    /// holds the record is not written before the chunk is.
    pub fn try_insert_with_proxy(
        &mut self,
        cache: &'c MetadataCache,
        record: C::Record,
        proxy: Option<ProxyId>,
    ) -> Result<()> {
        self.insert_probe(cache, record, proxy, no_tie)
    }

    /// Insert `record` among the records of its key where `tie` places it: `tie(r)` says how
    /// `record` compares with `r`, a record of the same key (a class whose keys repeat, see
    /// [`RecordClass::keys_repeat`]; libhdf5's name indexes order two names of one hash by
    /// name). An error, the tree untouched, if `tie` finds it equal to one of them.
    pub fn try_insert_by(
        &mut self,
        cache: &'c MetadataCache,
        record: C::Record,
        tie: impl Fn(&C::Record) -> Ordering,
    ) -> Result<()> {
        self.insert_probe(cache, record, None, tie)
    }

    fn insert_probe<T: Fn(&C::Record) -> Ordering>(
        &mut self,
        cache: &'c MetadataCache,
        record: C::Record,
        proxy: Option<ProxyId>,
        tie: T,
    ) -> Result<()> {
        if self.minmax.is_none() && !self.is_empty() {
            self.min_max(cache)?;
        }
        let mut op = self.new_op(cache);
        let Some(root) = self.root_ptr() else {
            let addr = self.alloc_node(cache, &mut op)?;
            self.insert_node(
                cache,
                addr,
                self.new_data(0, vec![record.clone()], Vec::new()),
            )?;
            self.link(cache, self.addr, addr)?;
            if let Some(p) = proxy {
                self.add_proxy(cache, addr, p)?;
            }
            self.hdr.root = Some(addr);
            self.hdr.root_nrec = 1;
            self.hdr.total_records = 1;
            self.hdr.depth = 0;
            self.minmax = Some((record.clone(), record));
            self.end_op(op);
            return self.store_header(cache);
        };
        let class = Arc::clone(&self.class);
        let p = Probe {
            key: class.key(&record),
            tie,
        };
        let hint = self.hint(&p);
        // Look before restructuring anything: a duplicate must leave the tree untouched. A key
        // beyond the minimum or maximum cannot be in the tree, so appends skip this search.
        if hint == Hint::Search && self.find_probe(cache, &p)?.is_some() {
            return Err(Error::Exists { header: self.addr });
        }
        let mut root = root;
        let (split, _) = self.thresholds(self.hdr.depth)?;
        if usize::from(self.hdr.root_nrec) >= split {
            root = self.split_root(cache, root, hint, &mut op)?;
        }
        let new_root = self.insert_rec(
            cache,
            root,
            self.hdr.depth,
            &record,
            &p,
            hint,
            proxy,
            &mut op,
        )?;
        self.set_root(cache, new_root)?;
        if let Some((min, max)) = &mut self.minmax {
            match hint {
                Hint::Left => *min = record,
                Hint::Right => *max = record,
                Hint::Search => {}
            }
        }
        self.end_op(op);
        self.store_header(cache)
    }

    fn set_root(&mut self, cache: &'c MetadataCache, root: ChildPointer) -> Result<()> {
        self.hdr.root = Some(root.addr);
        self.hdr.root_nrec = u16::try_from(root.nrec)
            .map_err(|_| self.corrupt(root.addr, "root record count beyond u16"))?;
        self.hdr.total_records = root.total;
        self.link(cache, self.addr, root.addr)
    }

    /// A full root: a new root above it, then the old root split in two under it (a leaf that
    /// an append enters keeps its records, as `insert_rec` splits the right-most leaf).
    fn split_root(
        &mut self,
        cache: &'c MetadataCache,
        root: ChildPointer,
        hint: Hint,
        op: &mut Op,
    ) -> Result<ChildPointer> {
        let depth = self
            .hdr
            .depth
            .checked_add(1)
            .filter(|&d| d <= MAX_DEPTH)
            .ok_or(Error::Unsupported("a v2 B-tree deeper than MAX_DEPTH"))?;
        let deeper = Header {
            depth,
            ..self.hdr.clone()
        };
        let geom = Geometry::new(&deeper, self.sizes).map_err(|_| {
            Error::Unsupported("a v2 B-tree level whose internal nodes hold no record")
        })?;
        let old_geom = std::mem::replace(&mut self.geom, Arc::new(geom));
        if let Err(e) = self.thresholds(depth) {
            self.geom = old_geom;
            return Err(e);
        }
        let addr = self.alloc_node(cache, op)?;
        let mut data = self.new_data(depth, Vec::new(), vec![root]);
        let deal = if hint == Hint::Right && depth == 1 {
            Deal::KeepLeft
        } else {
            Deal::Even
        };
        self.rebalance(cache, &mut data, addr, (0, 1, 2), deal, op)?;
        let total = self.subtree_total(addr, data.records.len(), &data.children)?;
        let ptr = ChildPointer {
            addr,
            nrec: data.records.len() as u64,
            total,
        };
        self.insert_node(cache, addr, data)?;
        self.hdr.depth = depth;
        self.set_root(cache, ptr)?;
        Ok(ptr)
    }

    #[allow(clippy::too_many_arguments)]
    fn insert_rec<T: Fn(&C::Record) -> Ordering>(
        &self,
        cache: &'c MetadataCache,
        ptr: ChildPointer,
        depth: u16,
        record: &C::Record,
        p: &Probe<'_, C, T>,
        hint: Hint,
        proxy: Option<ProxyId>,
        op: &mut Op,
    ) -> Result<ChildPointer> {
        let mut node = self.node_mut(cache, &ptr, depth)?;
        let pos = |node: &NodeData<C>| match hint {
            Hint::Left => Pos::Child(0),
            Hint::Right => Pos::Child(node.records.len()),
            Hint::Search => self.locate(node, p),
        };
        if depth == 0 {
            let Pos::Child(i) = pos(&node) else {
                return Err(Error::Exists { header: self.addr });
            };
            node.records.insert(i, record.clone());
            if let Some(p) = proxy {
                self.add_proxy(cache, ptr.addr, p)?;
            }
            let n = node.records.len() as u64;
            let mut out = ChildPointer {
                addr: ptr.addr,
                nrec: n,
                total: n,
            };
            drop(node);
            out.addr = self.moved_if_published(cache, &out, 0, op)?;
            return Ok(out);
        }
        let (split, _) = self.thresholds(depth.saturating_sub(1))?;
        // libhdf5 tries twice to make room by moving records to siblings before it splits.
        let mut retries = 2u32;
        let idx = loop {
            let idx = match pos(&node) {
                Pos::Found(_) => return Err(Error::Exists { header: self.addr }),
                Pos::Child(i) => i,
            };
            let n = node.records.len();
            let nrec_of = |i: usize| node.children.get(i).map_or(0, |c| c.nrec as usize);
            if nrec_of(idx) < split {
                break idx;
            }
            let room = |i: usize| nrec_of(i) < split;
            let (first, k, m) = if hint == Hint::Right && depth == 1 {
                // An append into the full right-most leaf: it splits keeping every record
                // but the one that moves up (see `Deal::KeepLeft`); nothing moves to its left
                // sibling, which stays as it is, on disk and for readers.
                (idx, 1, 2)
            } else if idx == 0 {
                if retries > 0 && n >= 1 && room(1) {
                    (0, 2, 2)
                } else {
                    (0, 1, 2)
                }
            } else if idx == n {
                if retries > 0 && room(idx.saturating_sub(1)) {
                    (idx.saturating_sub(1), 2, 2)
                } else {
                    (idx, 1, 2)
                }
            } else if retries > 0 && (room(idx.saturating_sub(1)) || room(idx.saturating_add(1))) {
                (idx.saturating_sub(1), 3, 3)
            } else {
                (idx, 1, 2)
            };
            let deal = if hint == Hint::Right && depth == 1 {
                Deal::KeepLeft
            } else {
                Deal::Even
            };
            self.rebalance(cache, &mut node, ptr.addr, (first, k, m), deal, op)?;
            retries = retries.saturating_sub(1);
        };
        let child = *node
            .children
            .get(idx)
            .ok_or_else(|| self.corrupt(ptr.addr, "child index out of range"))?;
        self.link(cache, ptr.addr, child.addr)?;
        let new_child = self.insert_rec(
            cache,
            child,
            depth.saturating_sub(1),
            record,
            p,
            hint,
            proxy,
            op,
        )?;
        if let Some(c) = node.children.get_mut(idx) {
            *c = new_child;
        }
        let total = self.subtree_total(ptr.addr, node.records.len(), &node.children)?;
        let mut out = ChildPointer {
            addr: ptr.addr,
            nrec: node.records.len() as u64,
            total,
        };
        drop(node);
        // Under SWMR every node of the path changed (a child pointer's counts at least): one
        // a reader may reach moves, as libhdf5 shadows it, so that no reader meets a parent
        // of one flush over a child of the next (their counts would disagree).
        if op.shadowed || op.swmr {
            out.addr = self.relocate(cache, &out, depth, op)?;
        }
        Ok(out)
    }

    /// Replace the record with `record`'s key, or insert it (libhdf5's `H5B2_update`). A key
    /// above the maximum (an append) goes straight to the insert without a search. Refused
    /// (typed) for a class whose keys repeat: a key alone does not name the record to replace.
    pub fn insert(
        &mut self,
        cache: &'c MetadataCache,
        record: C::Record,
        proxy: Option<ProxyId>,
    ) -> Result<bool> {
        if self.class.keys_repeat() {
            return Err(Error::Unsupported(
                "replacing or modifying records by key in a v2 B-tree whose keys repeat",
            ));
        }
        if self.minmax.is_none() && !self.is_empty() {
            self.min_max(cache)?;
        }
        if self.hint(&Probe::key(self.class.key(&record))) == Hint::Search {
            let replacement = record.clone();
            let key_of = self.class.clone();
            let done = self.modify_with_proxy(cache, key_of.key(&record), proxy, move |r| {
                *r = replacement;
            })?;
            if done {
                return Ok(false);
            }
        }
        self.try_insert_with_proxy(cache, record, proxy)?;
        Ok(true)
    }

    /// [`insert`](Self::insert) each of `records` in order (without proxies): the same tree,
    /// the same header and, once flushed, the same bytes in the file as that loop, in a fraction
    /// of its time when the records are appends.
    ///
    /// Appends (keys increasing from above the tree's maximum: the chunks of a dataset growing
    /// along its slowest dimension) go into the right-most leaf while it and its path stay
    /// protected, each record cloned once, into the node that keeps it; the counts above the
    /// leaf, the header and the cached maximum are updated once per run. A full leaf is relieved
    /// as [`insert`](Self::insert) relieves it (records moved to its left sibling, or a split).
    /// What would restructure a level above the leaves, relieving a leaf in SWMR-write mode,
    /// and every record that is not an append (a replacement, a key inside the tree's range)
    /// take the per-record path. After an error, as after one of `insert`, the tree may be
    /// left inconsistent.
    pub fn insert_many(&mut self, cache: &'c MetadataCache, records: &[C::Record]) -> Result<()> {
        if self.class.keys_repeat() {
            return Err(Error::Unsupported(
                "replacing or modifying records by key in a v2 B-tree whose keys repeat",
            ));
        }
        let mut rest = records;
        while let Some((first, tail)) = rest.split_first() {
            if self.minmax.is_none() && !self.is_empty() {
                self.min_max(cache)?;
            }
            let taken = if self.hint(&Probe::key(self.class.key(first))) == Hint::Right {
                self.append_run(cache, rest)?
            } else {
                0
            };
            if taken == 0 {
                let _ = self.insert(cache, first.clone(), None)?;
                rest = tail;
            } else {
                rest = rest.get(taken..).unwrap_or_default();
            }
        }
        Ok(())
    }

    /// Append the leading run of `records` whose keys increase from above the maximum, through
    /// the protected right-most path, doing for each record exactly what
    /// [`try_insert_with_proxy`](Self::try_insert_with_proxy) would. Returns how many records it took:
    /// 0 when the first one needs the per-record path (a level above the leaves must be split
    /// or rebalanced first, the tree is empty, or its parameters are refused).
    fn append_run(&mut self, cache: &'c MetadataCache, records: &[C::Record]) -> Result<usize> {
        let mut op = self.new_op(cache);
        let taken = self.append_run_op(cache, records, &mut op)?;
        self.end_op(op);
        Ok(taken)
    }

    /// Protect the internal node at `ptr` (at depth `d`), checked: its guard and its last
    /// child pointer.
    fn protect_right(
        &self,
        cache: &'c MetadataCache,
        ptr: &ChildPointer,
        d: u16,
    ) -> Result<(EntryMut<'c, InternalEntry<C>>, ChildPointer)> {
        let node = cache.protect::<InternalEntry<C>>(ptr.addr, &self.ctx(d, ptr.nrec))?;
        self.check_node(ptr, d, node.data())?;
        let child = *node
            .data()
            .children
            .last()
            .ok_or_else(|| self.corrupt(ptr.addr, "internal node without children"))?;
        Ok((node, child))
    }

    /// SWMR-write mode: move the right-most path from `root` down to new space where a reader
    /// may hold it, leaf first (as `insert_rec` moves the path of a record it appends): the
    /// address of each node of the path afterwards, top down, and whether any moved. `None`,
    /// with nothing moved, when the first append would restructure the path (a full internal
    /// node below the root, or a published full leaf, which the per-record path splits into
    /// two new nodes): that is the per-record path's.
    fn shadow_right_path(
        &self,
        cache: &'c MetadataCache,
        root: ChildPointer,
        splits: &[usize],
        op: &mut Op,
    ) -> Result<Option<(Vec<Addr>, bool)>> {
        let depth = self.hdr.depth;
        let split_of = |d: u16| splits.get(usize::from(d)).copied().unwrap_or(0);
        let mut ptrs = Vec::with_capacity(usize::from(depth).saturating_add(1));
        let mut ptr = root;
        for d in (1..=depth).rev() {
            ptrs.push((ptr, d));
            let (node, child) = self.protect_right(cache, &ptr, d)?;
            drop(node);
            let cd = d.saturating_sub(1);
            if cd > 0 && child.nrec >= split_of(cd) as u64 {
                return Ok(None);
            }
            ptr = child;
        }
        if !op.fresh.contains(&ptr.addr) && ptr.nrec >= split_of(0) as u64 {
            return Ok(None);
        }
        ptrs.push((ptr, 0));
        let mut moved = vec![Addr(0); ptrs.len()];
        let mut any = false;
        for ((p, d), m) in ptrs.iter().zip(moved.iter_mut()).rev() {
            *m = self.relocate(cache, p, *d, op)?;
            any |= *m != p.addr;
        }
        Ok(Some((moved, any)))
    }

    /// [`append_run`](Self::append_run) within the operation `op`.
    fn append_run_op(
        &mut self,
        cache: &'c MetadataCache,
        records: &[C::Record],
        op: &mut Op,
    ) -> Result<usize> {
        let (Some(root), Some((_, max))) = (self.root_ptr(), &self.minmax) else {
            return Ok(0);
        };
        let depth = self.hdr.depth;
        // The split threshold of each depth; a refusal is the per-record path's to report.
        let mut splits = Vec::with_capacity(usize::from(depth).saturating_add(1));
        for d in 0..=depth {
            match self.thresholds(d) {
                Ok((split, _)) => splits.push(split),
                Err(_) => return Ok(0),
            }
        }
        let split_of = |d: u16| splits.get(usize::from(d)).copied().unwrap_or(0);
        // `try_insert_with_proxy` splits a full root first, and `insert_rec` relieves a full child
        // before entering it: while no internal node of the path is full, an append only adds
        // a record to the right-most leaf (after relieving that leaf when it is full).
        if usize::from(self.hdr.root_nrec) >= split_of(depth) {
            return Ok(0);
        }
        // In SWMR-write mode the run changes every node of the right-most path in place: only
        // a path no reader can reach yet will do. A published one is moved first, bottom up,
        // as the per-record path shadows it (libhdf5's way): the same new addresses, in the
        // same order, as the first record's `insert_rec` would give it.
        //
        // `shadowed`: a node moved, so the run ends with the header and the counts written
        // back even if it takes no record (the old addresses are freed).
        let (moved, shadowed) = if op.swmr {
            match self.shadow_right_path(cache, root, &splits, op)? {
                Some(m) => m,
                None => return Ok(0),
            }
        } else {
            (Vec::new(), false)
        };
        let new_addr = |level: usize, old: Addr| moved.get(level).copied().unwrap_or(old);
        let unpublished = |a: &Addr| !op.swmr || op.fresh.contains(a);
        let mut path = Vec::with_capacity(usize::from(depth));
        let mut ptr = root;
        ptr.addr = new_addr(0, ptr.addr);
        for (level, d) in (1..=depth).rev().enumerate() {
            if !unpublished(&ptr.addr) {
                return Err(self.corrupt(ptr.addr, "a shadowed node still published"));
            }
            let (node, mut child) = self.protect_right(cache, &ptr, d)?;
            let cd = d.saturating_sub(1);
            if cd > 0 && child.nrec >= split_of(cd) as u64 {
                // `shadow_right_path` checked it: only an unmoved path gets here.
                if shadowed {
                    return Err(self.corrupt(ptr.addr, "a full node on a shadowed path"));
                }
                return Ok(0);
            }
            child.addr = new_addr(level.saturating_add(1), child.addr);
            path.push(node);
            ptr = child;
        }
        if !unpublished(&ptr.addr) {
            return Err(self.corrupt(ptr.addr, "a shadowed leaf still published"));
        }
        let leaf = cache.protect::<LeafEntry<C>>(ptr.addr, &self.ctx(0, ptr.nrec))?;
        self.check_node(&ptr, 0, leaf.data())?;
        let mut run = Run {
            path,
            leaf,
            input: records,
            pending: 0,
            taken: 0,
            settled: [None; 2],
        };

        let class = Arc::clone(&self.class);
        let (split0, split1) = (split_of(0), split_of(1));
        let mut bound = max;
        loop {
            // The records that fit in the leaf as it is, as long as their keys increase.
            let room = split0.saturating_sub(run.leaf_len());
            let fit = records
                .get(run.taken..run.taken.saturating_add(room).min(records.len()))
                .unwrap_or_default();
            let mut took = 0usize;
            for rec in fit {
                if class.compare(class.key(rec), bound) != Ordering::Greater {
                    break;
                }
                bound = rec;
                took = took.saturating_add(1);
            }
            run.taken = run.taken.saturating_add(took);
            if took < fit.len() {
                break;
            }
            // The leaf is full: relieve it for the next record, if that one is an append too.
            let Some(rec) = records.get(run.taken) else {
                break;
            };
            if class.compare(class.key(rec), bound) != Ordering::Greater {
                break;
            }
            // A full root leaf grows the tree: the per-record path's. (In SWMR-write mode the
            // path is unpublished, and a sibling that takes records moves first.)
            let Some(parent) = run.path.last() else {
                break;
            };
            if parent.data().records.is_empty() {
                break;
            }
            self.relieve_leaf(cache, &mut run, split0, op)?;
            run.taken = run.taken.saturating_add(1);
            bound = rec;
            // A split may have filled the leaf's parent: the next insert would relieve the
            // parent first, which is the per-record path's.
            if run
                .path
                .last()
                .is_some_and(|p| p.data().records.len() >= split1)
            {
                break;
            }
        }
        let taken = run.taken;
        if taken == 0 && !shadowed {
            return Ok(0);
        }
        let max = bound.clone();

        // The counts of the path, bottom up, as `insert_rec` leaves them.
        run.store_all();
        let n = run.leaf.data().records.len() as u64;
        let mut child = ChildPointer {
            addr: run.leaf.addr(),
            nrec: n,
            total: n,
        };
        while let Some(mut node) = run.path.pop() {
            let addr = node.addr();
            self.link(cache, addr, child.addr)?;
            let data = node.data_mut();
            let slot = data
                .children
                .last_mut()
                .ok_or_else(|| self.corrupt(addr, "internal node without children"))?;
            *slot = child;
            let total = self.subtree_total(addr, data.records.len(), &data.children)?;
            child = ChildPointer {
                addr,
                nrec: data.records.len() as u64,
                total,
            };
        }
        drop(run);
        self.set_root(cache, child)?;
        if let Some((_, m)) = &mut self.minmax {
            *m = max;
        }
        self.store_header(cache)?;
        Ok(taken)
    }

    /// The right-most leaf of `run` is full and a record is to be appended: make room as
    /// `insert_rec` does in the leaf's parent for its last child when it appends (a split that
    /// keeps the leaf full, [`Deal::KeepLeft`]).
    fn relieve_leaf(
        &self,
        cache: &'c MetadataCache,
        run: &mut Run<'c, '_, C>,
        split: usize,
        op: &mut Op,
    ) -> Result<()> {
        loop {
            let len = run.leaf_len();
            let addr = run.leaf.addr();
            let parent = run
                .path
                .last_mut()
                .ok_or_else(|| self.corrupt(addr, "leaf without parent"))?;
            let p_addr = parent.addr();
            let p = parent.data_mut();
            let n = p.records.len();
            let slot = p
                .children
                .get_mut(n)
                .ok_or_else(|| self.corrupt(p_addr, "child index out of range"))?;
            *slot = ChildPointer {
                addr,
                nrec: len as u64,
                total: len as u64,
            };
            if len < split {
                return Ok(());
            }
            self.split_last(cache, run, split, op)?;
        }
    }

    /// What `rebalance` does last for the two leaves `ptrs` it dealt records into, under the
    /// leaf's parent at `p_addr`: link them to it and make them wait for `proxies`, the dirty
    /// proxies of the leaves before. Links made earlier in the run are not made again.
    fn settle(
        &self,
        cache: &'c MetadataCache,
        run: &mut Run<'c, '_, C>,
        p_addr: Addr,
        ptrs: [ChildPointer; 2],
        proxies: &[ProxyId],
    ) -> Result<()> {
        for ptr in ptrs {
            if !run.is_settled(ptr.addr) {
                self.link(cache, p_addr, ptr.addr)?;
            }
            for &x in proxies {
                self.add_proxy(cache, ptr.addr, x)?;
            }
        }
        run.settled = if proxies.is_empty() {
            ptrs.map(|p| Some(p.addr))
        } else {
            [None; 2]
        };
        Ok(())
    }

    /// `rebalance(parent, last, 1, 2, Deal::KeepLeft)` for the last leaf: the right-most leaf
    /// of `run` keeps its records but the last, which moves up, and a new leaf (allocated
    /// where `rebalance` allocates it) takes the pending ones and becomes the right-most leaf.
    fn split_last(
        &self,
        cache: &'c MetadataCache,
        run: &mut Run<'c, '_, C>,
        split: usize,
        op: &mut Op,
    ) -> Result<()> {
        let l_addr = run.leaf.addr();
        let proxies = if run.is_settled(l_addr) {
            Vec::new()
        } else {
            self.dirty_proxies(cache, [l_addr])
        };
        let body = run
            .leaf_len()
            .checked_sub(1)
            .ok_or_else(|| self.corrupt(l_addr, "too few records to rebalance"))?;
        let (s0, s1) = (body, 0);
        let r_addr = self.alloc_node(cache, op)?;
        // Every record of the leaf is stored now (the separator last), and the new leaf
        // starts empty.
        run.store(
            s0.saturating_add(1)
                .saturating_sub(run.leaf.data().records.len()),
        );
        let rest = run.input.get(run.pending..run.taken).unwrap_or_default();
        // Room for the whole leaf the run is about to fill: no regrowth on the way.
        let mut moved = Vec::with_capacity(split.max(rest.len()));
        let stored = &mut run.leaf.data_mut().records;
        moved.extend(stored.drain(s0.saturating_add(1).min(stored.len())..));
        let sep = stored
            .pop()
            .ok_or_else(|| self.corrupt(l_addr, "missing separator"))?;
        moved.extend_from_slice(rest);
        run.pending = run.taken;
        self.insert_node(cache, r_addr, self.new_data(0, moved, Vec::new()))?;
        let parent = run
            .path
            .last_mut()
            .ok_or_else(|| self.corrupt(l_addr, "leaf without parent"))?;
        let p_addr = parent.addr();
        let p = parent.data_mut();
        let ptrs = leaf_pair(l_addr, s0, r_addr, s1);
        let last = p
            .children
            .last_mut()
            .ok_or_else(|| self.corrupt(p_addr, "internal node without children"))?;
        *last = ptrs[0];
        p.records.push(sep);
        p.children.push(ptrs[1]);
        self.settle(cache, run, p_addr, ptrs, &proxies)?;
        let right = cache.protect::<LeafEntry<C>>(r_addr, &self.ctx(0, ptrs[1].nrec))?;
        self.check_node(&ptrs[1], 0, right.data())?;
        // The split leaf is full: the run moves on to the new leaf.
        run.leaf = right;
        Ok(())
    }

    /// Modify the record with key `key` in place (its key must not change); returns whether it
    /// was found. Refused (typed) for a class whose keys repeat, as [`insert`](Self::insert).
    pub fn modify(
        &mut self,
        cache: &'c MetadataCache,
        key: &C::Key,
        f: impl FnOnce(&mut C::Record),
    ) -> Result<bool> {
        self.modify_with_proxy(cache, key, None, f)
    }

    /// [`modify`](Self::modify), making the node that holds the record wait for `proxy`.
    pub fn modify_with_proxy(
        &mut self,
        cache: &'c MetadataCache,
        key: &C::Key,
        proxy: Option<ProxyId>,
        f: impl FnOnce(&mut C::Record),
    ) -> Result<bool> {
        if self.class.keys_repeat() {
            return Err(Error::Unsupported(
                "replacing or modifying records by key in a v2 B-tree whose keys repeat",
            ));
        }
        let Some(mut ptr) = self.root_ptr() else {
            return Ok(false);
        };
        let mut depth = self.hdr.depth;
        self.link(cache, self.addr, ptr.addr)?;
        for _ in 0..=MAX_DEPTH {
            // Look without dirtying; protect only the node that holds the record.
            let step = self.read_node(cache, &ptr, depth, |n| {
                Ok(match self.locate(n, &Probe::key(key)) {
                    Pos::Found(_) => None,
                    Pos::Child(i) => Some(n.children.get(i).copied()),
                })
            })?;
            match step {
                None => {
                    let mut node = self.node_mut(cache, &ptr, depth)?;
                    let Pos::Found(i) = self.locate(&node, &Probe::key(key)) else {
                        return Err(self.corrupt(ptr.addr, "record vanished"));
                    };
                    let class = self.class.clone();
                    let rec = node
                        .records
                        .get_mut(i)
                        .ok_or_else(|| self.corrupt(ptr.addr, "record index"))?;
                    let mut copy = rec.clone();
                    f(&mut copy);
                    if class.compare(key, &copy) != Ordering::Equal {
                        return Err(Error::KeyChanged { header: self.addr });
                    }
                    *rec = copy.clone();
                    drop(node);
                    if let Some(p) = proxy {
                        self.add_proxy(cache, ptr.addr, p)?;
                    }
                    if let Some((min, max)) = &mut self.minmax {
                        if class.compare(key, min) == Ordering::Equal {
                            *min = copy.clone();
                        }
                        if class.compare(key, max) == Ordering::Equal {
                            *max = copy;
                        }
                    }
                    return Ok(true);
                }
                Some(None) => return Ok(false),
                Some(Some(child)) => {
                    self.link(cache, ptr.addr, child.addr)?;
                    ptr = child;
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| self.corrupt(ptr.addr, "descent below a leaf"))?;
                }
            }
        }
        Err(self.corrupt(self.addr, "descent deeper than MAX_DEPTH"))
    }

    /// Remove the record with key `key`; returns it, or `None` when absent. (When the
    /// class's keys repeat: one of the records of that key, whichever the descent meets
    /// first; see [`remove_by`](Self::remove_by).)
    pub fn remove(&mut self, cache: &'c MetadataCache, key: &C::Key) -> Result<Option<C::Record>> {
        self.remove_probe(cache, &Probe::key(key))
    }

    /// Remove the record of key `key` that `tie` picks (as [`get_by`](Self::get_by) picks
    /// it); returns it, or `None` when absent.
    pub fn remove_by(
        &mut self,
        cache: &'c MetadataCache,
        key: &C::Key,
        tie: impl Fn(&C::Record) -> Ordering,
    ) -> Result<Option<C::Record>> {
        self.remove_probe(cache, &Probe { key, tie })
    }

    fn remove_probe<T: Fn(&C::Record) -> Ordering>(
        &mut self,
        cache: &'c MetadataCache,
        p: &Probe<'_, C, T>,
    ) -> Result<Option<C::Record>> {
        if self.minmax.is_none() && !self.is_empty() {
            self.min_max(cache)?;
        }
        if self.hint(p) != Hint::Search {
            return Ok(None);
        }
        let Some(mut root) = self.root_ptr() else {
            return Ok(None);
        };
        let mut op = self.new_op(cache);
        // A root with one record whose two children would merge: merge them into the root's
        // place, which lowers the tree by one level.
        while self.hdr.depth > 0 && root.nrec == 1 {
            let (_, low) = self.thresholds(self.hdr.depth.saturating_sub(1))?;
            let mut node = self.node_mut(cache, &root, self.hdr.depth)?;
            let sum: usize = node.children.iter().map(|c| c.nrec as usize).sum();
            if sum >= low.saturating_add(1).saturating_mul(2) {
                break;
            }
            self.rebalance(cache, &mut node, root.addr, (0, 2, 1), Deal::Even, &mut op)?;
            let child = *node
                .children
                .first()
                .ok_or_else(|| self.corrupt(root.addr, "collapsed root without child"))?;
            drop(node);
            self.free_node(cache, root.addr, &mut op)?;
            self.hdr.depth = self.hdr.depth.saturating_sub(1);
            self.set_root(cache, child)?;
            root = child;
        }
        let (removed, new_root) =
            self.remove_rec(cache, root, self.hdr.depth, Target::Key(p), &mut op)?;
        if new_root.nrec == 0 {
            // The root leaf lost its last record: the tree is empty again.
            self.free_node(cache, new_root.addr, &mut op)?;
            self.hdr.root = None;
            self.hdr.root_nrec = 0;
            self.hdr.total_records = 0;
            self.hdr.depth = 0;
        } else {
            self.set_root(cache, new_root)?;
        }
        // Another record of the same key (a class whose keys repeat) also drops the cached
        // extremes: they are found again when needed.
        if let (Some(r), Some((min, max))) = (&removed, &self.minmax) {
            let k = self.class.key(r);
            if self.class.compare(k, min) == Ordering::Equal
                || self.class.compare(k, max) == Ordering::Equal
            {
                self.minmax = None;
            }
        }
        if self.is_empty() {
            self.minmax = None;
        }
        self.end_op(op);
        self.store_header(cache)?;
        Ok(removed)
    }

    fn remove_rec<T: Fn(&C::Record) -> Ordering>(
        &self,
        cache: &'c MetadataCache,
        ptr: ChildPointer,
        depth: u16,
        target: Target<'_, Probe<'_, C, T>>,
        op: &mut Op,
    ) -> Result<(Option<C::Record>, ChildPointer)> {
        let mut node = self.node_mut(cache, &ptr, depth)?;
        if depth == 0 {
            let i = match target {
                Target::Min => Some(0).filter(|_| !node.records.is_empty()),
                Target::Key(k) => match self.locate(&node, k) {
                    Pos::Found(i) => Some(i),
                    Pos::Child(_) => None,
                },
            };
            let removed = match i {
                Some(i) => Some(node.records.remove(i)),
                None => None,
            };
            let n = node.records.len() as u64;
            let mut out = ChildPointer {
                addr: ptr.addr,
                nrec: n,
                total: n,
            };
            drop(node);
            if removed.is_some() {
                out.addr = self.moved_if_published(cache, &out, 0, op)?;
            }
            return Ok((removed, out));
        }
        let (_, low) = self.thresholds(depth.saturating_sub(1))?;
        // Each fix merges (one separator fewer) or leaves the target above the bound, so the
        // loop ends within nrec + 2 rounds; the bound guards against a corrupt node.
        let mut rounds = node.records.len().saturating_add(2);
        let (idx, found) = loop {
            let (idx, found) = match target {
                Target::Min => (0, None),
                Target::Key(k) => match self.locate(&node, k) {
                    Pos::Found(i) => (i.saturating_add(1), Some(i)),
                    Pos::Child(i) => (i, None),
                },
            };
            let c = node.children.get(idx).map_or(0, |c| c.nrec as usize);
            if c > low {
                break (idx, found);
            }
            rounds = rounds
                .checked_sub(1)
                .ok_or_else(|| self.corrupt(ptr.addr, "underflow could not be fixed"))?;
            let n = node.records.len();
            let (first, sib) = match (idx < n, idx.checked_sub(1)) {
                (true, _) => (idx, idx.saturating_add(1)),
                (false, Some(left)) => (left, left),
                (false, None) => {
                    return Err(self.corrupt(ptr.addr, "internal node without records"));
                }
            };
            let s = node.children.get(sib).map_or(0, |c| c.nrec as usize);
            let m = if c.saturating_add(s) >= low.saturating_add(1).saturating_mul(2) {
                2
            } else {
                1
            };
            self.rebalance(cache, &mut node, ptr.addr, (first, 2, m), Deal::Even, op)?;
        };
        let child = *node
            .children
            .get(idx)
            .ok_or_else(|| self.corrupt(ptr.addr, "child index out of range"))?;
        self.link(cache, ptr.addr, child.addr)?;
        let sub_target = if found.is_some() { Target::Min } else { target };
        let (mut removed, new_child) =
            self.remove_rec(cache, child, depth.saturating_sub(1), sub_target, op)?;
        if let Some(c) = node.children.get_mut(idx) {
            *c = new_child;
        }
        if let Some(i) = found {
            // The record sits in this node: its successor (the minimum of the right subtree,
            // just removed) takes its place.
            let succ = removed
                .take()
                .ok_or_else(|| self.corrupt(child.addr, "empty subtree"))?;
            let slot = node
                .records
                .get_mut(i)
                .ok_or_else(|| self.corrupt(ptr.addr, "record index"))?;
            removed = Some(std::mem::replace(slot, succ));
        }
        let total = self.subtree_total(ptr.addr, node.records.len(), &node.children)?;
        let mut out = ChildPointer {
            addr: ptr.addr,
            nrec: node.records.len() as u64,
            total,
        };
        drop(node);
        // Under SWMR every node of the path changed (a child pointer's counts at least): one
        // a reader may reach moves, as libhdf5 shadows it, so that no reader meets a parent
        // of one flush over a child of the next (their counts would disagree).
        if op.shadowed || op.swmr {
            out.addr = self.relocate(cache, &out, depth, op)?;
        }
        Ok((removed, out))
    }

    /// Remove every node and the header from the cache and free their space.
    pub fn delete(mut self, cache: &'c MetadataCache) -> Result<()> {
        let mut nodes = Vec::new();
        if let Some(root) = self.root_ptr() {
            self.node_addrs(cache, &root, self.hdr.depth, &mut nodes)?;
        }
        let mut op = self.new_op(cache);
        for (addr, _) in nodes.into_iter().rev() {
            self.free_node(cache, addr, &mut op)?;
        }
        cache.remove(self.addr)?;
        cache.allocator().free(self.addr, header_len(self.sizes))?;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)] // test models index small vectors
mod tests {
    use super::*;

    fn pos(p: Option<Pos>) -> Option<core::result::Result<usize, usize>> {
        p.map(|p| match p {
            Pos::Found(i) => Ok(i),
            Pos::Child(i) => Err(i),
        })
    }

    proptest::proptest! {
        /// On keys in order, the flattened search gives the record or child that a search
        /// over the keys as slices gives, for every rank the array path specialises and one it
        /// does not.
        #[test]
        fn flat_locate_agrees_with_slices(
            stride in 1usize..6,
            mut raw in proptest::collection::vec(proptest::collection::vec(0u64..6, 5), 0..90),
            x in proptest::collection::vec(0u64..7, 5),
        ) {
            let mut keys: Vec<Vec<u64>> = raw.iter_mut().map(|k| k[..stride].to_vec()).collect();
            keys.sort();
            keys.dedup();
            let flat: Vec<u64> = keys.iter().flatten().copied().collect();
            let x = &x[..stride];
            let want = keys.binary_search_by(|k| k.as_slice().cmp(x));
            proptest::prop_assert_eq!(pos(locate_flat(&flat, x, keys.len())), Some(want));
        }
    }

    proptest::proptest! {
        /// Keys nearly evenly spaced (a node of appended chunks), where the interpolated guess
        /// is tried: the answer is the binary search's, hit or miss, for targets between keys
        /// and equal to one.
        #[test]
        fn interpolated_locate_agrees_with_binary_search(
            n in 1usize..90,
            step in 1u64..1000,
            start in 0u64..1000,
            jitter in proptest::collection::vec(0u64..3, 90),
            x0 in 0u64..300_000,
            x1 in 0u64..3,
        ) {
            let keys: Vec<[u64; 2]> = (0..n)
                .map(|i| [start + i as u64 * step * 3 + jitter[i], i as u64 % 2])
                .collect();
            let flat: Vec<u64> = keys.iter().flatten().copied().collect();
            for x in [[x0, x1], keys[x0 as usize % n]] {
                let want = keys.binary_search(&x);
                proptest::prop_assert_eq!(pos(locate_flat(&flat, &x, n)), Some(want));
            }
        }
    }

    #[test]
    fn flat_locate_refuses_a_misshapen_node() {
        assert!(locate_flat(&[1, 2, 3], &[1, 2], 2).is_none());
        assert!(locate_flat(&[], &[], 0).is_none());
        assert_eq!(pos(locate_flat(&[1, 4, 9], &[4], 3)), Some(Ok(1)));
        assert_eq!(pos(locate_flat(&[1, 4, 9], &[5], 3)), Some(Err(2)));
    }
}
