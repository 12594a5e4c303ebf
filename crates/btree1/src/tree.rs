//! The generic v1 B-tree over the metadata cache, following libhdf5's algorithms (H5B): the
//! same binary search with a three-way key compare, the same insertion paths (new left-most or
//! right-most child, insertion into a child, split with the {0.1, 0.5, 0.9} ratios), the root
//! kept at its address by moving its old contents, sibling links, and removal without merging.
//! What the keys and leaf children mean is a [`Class`]'s business: chunks (node type 1) or
//! symbol table nodes (node type 0).
//!
//! Invariants checked on every descent: a child's level is its parent's level minus one (so a
//! child that points to itself or to an ancestor is an error, and a descent ends after at most
//! [`MAX_DEPTH`] levels), and a node below the root has at least one child.

use core::cmp::Ordering;
use core::ops::ControlFlow;
use std::collections::HashSet;

use h5chunk_cache::{EntryMut, Key as DepKey, MetadataCache};
use h5chunk_format::Addr;
use h5chunk_format::btree1::{MAX_DEPTH, Node, NodeKey};

use crate::entry::{NodeCtx, NodeEntry};
use crate::error::{Error, Result};

/// libhdf5's default B-tree split ratios (`H5D_XFER_BTREE_SPLIT_RATIO_DEF`): the share of the
/// children that stays in the left node when the left-most, a middle or the right-most node of
/// a level splits.
pub const SPLIT_RATIOS: [f64; 3] = [0.1, 0.5, 0.9];

/// How a class's `new_node` is being asked to make a leaf child.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NewNode {
    /// The first child of an empty tree: set both keys.
    First,
    /// A new left-most child: set the left key only.
    Left,
    /// A new right-most child: set both keys (the left one is the separator).
    Right,
}

/// What a class's leaf insertion asks the tree to do (libhdf5's `H5B_ins_t`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LeafIns {
    /// Nothing changes in the node.
    Noop,
    /// The child's address changed.
    Change(Addr),
    /// Insert a new child left of the current one; the separator is in `md`.
    Left(Addr),
    /// Insert a new child right of the current one; its left key is in `md`.
    Right(Addr),
}

/// The keys around one child, as libhdf5's callbacks see them: the left and right keys (which
/// the callee may change, saying so through the flags) and the middle key of an insertion.
#[derive(Debug)]
pub struct Keys<'a, K> {
    /// The child's left key.
    pub lt: &'a mut K,
    /// Set when `lt` was changed.
    pub lt_changed: &'a mut bool,
    /// The separator of a new child (an output of insertions).
    pub md: &'a mut K,
    /// The child's right key.
    pub rt: &'a mut K,
    /// Set when `rt` was changed.
    pub rt_changed: &'a mut bool,
}

/// [`BTree::search`]'s answer from a node's flattened keys (`n` children, so `n + 1` keys of
/// `x.len()` integers each): the child `i` with `key[i] ≤ x < key[i + 1]` and `Equal`, or
/// `Less`/`Greater` when `x` lies left or right of every child. For keys in order (the
/// invariant of the tree) this is the child libhdf5's three-way search finds. `None` when the
/// flattened keys do not have that shape, for the caller to fall back on the key-by-key search.
#[inline(always)]
fn search_flat(flat: &[u64], x: &[u64], n: usize) -> Option<(usize, Ordering)> {
    let stride = x.len();
    // The number of keys at or before `x`.
    let at_or_before = match stride {
        2 => at_or_before::<2>(flat, x, n)?,
        3 => at_or_before::<3>(flat, x, n)?,
        4 => at_or_before::<4>(flat, x, n)?,
        _ => {
            if stride == 0 || n == 0 || Some(flat.len()) != n.checked_add(1)?.checked_mul(stride) {
                return None;
            }
            let keys: Vec<&[u64]> = flat.chunks_exact(stride).collect();
            keys.partition_point(|k| *k <= x)
        }
    };
    Some(match at_or_before.checked_sub(1) {
        None => (0, Ordering::Less),
        Some(i) if i >= n => (n.saturating_sub(1), Ordering::Greater),
        Some(i) => (i, Ordering::Equal),
    })
}

/// [`search_flat`] for keys of `N` integers: compared as arrays, with no per-key slice.
#[inline(always)]
fn at_or_before<const N: usize>(flat: &[u64], x: &[u64], n: usize) -> Option<usize> {
    let x: &[u64; N] = x.try_into().ok()?;
    let (keys, rest) = flat.as_chunks::<N>();
    // `n + 1` whole keys, `n ≥ 1`.
    if !rest.is_empty() || n == 0 || keys.len().checked_sub(1) != Some(n) {
        return None;
    }
    if let Some(p) = interpolated(keys, x) {
        return Some(p);
    }
    Some(keys.partition_point(|k| key_le(k, x)))
}

/// `a ≤ b`, keys compared lexicographically word by word: unrolled for a fixed `N`, where
/// the arrays' own comparison goes through the generic slice comparison.
#[inline(always)]
fn key_le<const N: usize>(a: &[u64; N], b: &[u64; N]) -> bool {
    for (p, q) in a.iter().zip(b) {
        if p != q {
            return p < q;
        }
    }
    true
}

/// The number of `keys` at or before `x` when interpolation finds it at once, else `None`
/// (for the binary search). A node of chunks appended in order holds keys nearly evenly
/// spaced in the first integer where its first and last keys differ, so the key `x` falls
/// after is guessed from that integer; the guess is kept only if `keys[p] ≤ x < keys[p + 1]`
/// holds, so the answer is the binary search's whatever the keys.
#[inline(always)]
fn interpolated<const N: usize>(keys: &[[u64; N]], x: &[u64; N]) -> Option<usize> {
    let (first, last) = (keys.first()?, keys.last()?);
    // The first integer where the first and last keys differ, `x` equal to the first key
    // before it (else `x` lies outside the keys' range, for the binary search to tell).
    let mut spread = None;
    for ((&f, &l), &at) in first.iter().zip(last).zip(x) {
        if f != l {
            spread = Some((f, l, at));
            break;
        }
        if f != at {
            return None;
        }
    }
    let (lo, hi, at) = spread?;
    if at < lo || at >= hi {
        return None;
    }
    let m = keys.len().checked_sub(1)? as u64;
    // `lo ≤ at < hi`: neither difference wraps, and the divisor is not 0.
    let p = at
        .wrapping_sub(lo)
        .checked_mul(m)?
        .checked_div(hi.wrapping_sub(lo))?;
    let p = usize::try_from(p).ok()?;
    let next = p.checked_add(1)?;
    let fits =
        keys.get(p).is_some_and(|k| key_le(k, x)) && keys.get(next).is_none_or(|k| !key_le(k, x));
    fits.then_some(next)
}

/// A key/record class: what one node type's keys and leaf children mean.
pub trait Class {
    /// The node key.
    type Key: NodeKey + Send + Sync + 'static;
    /// The state of one operation: the search target, the payload of an insertion, results.
    type Op;
    /// Whether [`found`](Class::found) reads the metadata cache. When it does not, a lookup
    /// calls it on the leaf's key in place, under the leaf's read lock, with no copy of the key.
    const FOUND_READS_CACHE: bool = true;
    /// Whether an insertion left of every leaf child goes into the first child (groups) rather
    /// than making a new child.
    const FOLLOW_MIN: bool;
    /// The same for insertions right of every child.
    const FOLLOW_MAX: bool;

    /// The sizes, K and key parameters of the tree's nodes.
    fn ctx(&self) -> NodeCtx<<Self::Key as NodeKey>::Params>;
    /// A placeholder key, overwritten before it reaches a node.
    fn zero_key(&self) -> Self::Key;
    /// `Less` if the operation's target is left of `lt`, `Greater` if it is right of the range
    /// `lt..rt` covers, `Equal` if inside.
    fn cmp3(&self, lt: &Self::Key, op: &Self::Op, rt: &Self::Key) -> Result<Ordering>;
    /// Order two keys (their positions in the key space, not their payloads).
    fn key_cmp(&self, a: &Self::Key, b: &Self::Key, op: &Self::Op) -> Result<Ordering>;
    /// A node's keys flattened into one array, the same number of integers for every key and
    /// ordered as those integer tuples compare (lexicographically), when the class's key order
    /// is such an order; `None`, the default, leaves lookups on [`cmp3`](Class::cmp3).
    fn flatten(&self, _keys: &[Self::Key]) -> Option<Box<[u64]>> {
        None
    }
    /// The operation's target as a tuple of [`flatten`](Class::flatten)'s form.
    fn flat_target<'o>(&self, _op: &'o Self::Op) -> Option<&'o [u64]> {
        None
    }
    /// Check a node's keys against the class's invariants (for chunks: each on the chunk grid,
    /// in increasing order), so that a damaged node is an error rather than a wrong answer.
    /// [`flatten`](Class::flatten) gives no flat form for keys that fail it; a lookup then asks
    /// this for the error.
    fn validate_keys(&self, _addr: Addr, _keys: &[Self::Key]) -> Result<()> {
        Ok(())
    }
    /// Whether keys read straight into [`flatten`](Class::flatten)'s form (a node decoded
    /// for search) pass the checks of [`validate_keys`](Class::validate_keys); `false`, the
    /// default, sends lookups through the node's keys.
    fn check_flat(&self, _flat: &[u64]) -> bool {
        false
    }
    /// [`found`](Class::found) for a leaf read in flat form, given the key's flat integers
    /// and record word (see `FlatNode`) instead of the key: `None`, the default, has the key
    /// built and `found` called.
    fn found_flat(
        &self,
        _child: Addr,
        _words: &[u64],
        _record: u64,
        _op: &mut Self::Op,
    ) -> Option<bool> {
        None
    }
    /// Make a new leaf child for the operation's target and set its keys; returns its address.
    fn new_node(
        &self,
        cache: &MetadataCache,
        kind: NewNode,
        lt: &mut Self::Key,
        op: &mut Self::Op,
        rt: &mut Self::Key,
    ) -> Result<Addr>;
    /// Insert into the leaf child `child`.
    fn insert(
        &self,
        cache: &MetadataCache,
        child: Addr,
        keys: Keys<'_, Self::Key>,
        op: &mut Self::Op,
    ) -> Result<LeafIns>;
    /// Look the target up in the leaf child `child` whose left key is `lt`.
    fn found(
        &self,
        cache: &MetadataCache,
        child: Addr,
        lt: &Self::Key,
        op: &mut Self::Op,
    ) -> Result<bool>;
    /// Remove the target from the leaf child `child`; `true` removes the child from the node.
    fn remove(
        &self,
        cache: &MetadataCache,
        child: Addr,
        keys: Keys<'_, Self::Key>,
        op: &mut Self::Op,
    ) -> Result<bool>;
    /// The flush-dependency child that a leaf pointing to `child` must wait for, if any (a
    /// chunk proxy, a symbol table node).
    fn leaf_dep(&self, child: Addr) -> Option<DepKey>;

    /// Whether `leaf_dep` may return a dependency at all; `false` lets a batched insertion
    /// skip asking for every child it adds.
    fn has_leaf_deps(&self) -> bool {
        true
    }

    /// Whether the operation's target lies after `lt` in the key order, and not at it. For the
    /// left key of the last child of the right-most leaf, `true` promises that the target is
    /// inserted as a new child right of that child: [`insert`](Class::insert) into it returns
    /// [`LeafIns::Right`] without changing its left key (or, right of its range, `new_node`
    /// makes the new right-most child). A [`Batch`] appends such targets along the right-most
    /// path without descending from the root. Asked only of classes that do not follow the
    /// maximum. The default, `false`, sends every target through [`BTree::insert`].
    fn is_after(&self, _lt: &Self::Key, _op: &Self::Op) -> Result<bool> {
        Ok(false)
    }
}

/// A batched insertion into a [`BTree`], from [`BTree::batch`]: each [`insert`](Batch::insert)
/// is exactly [`BTree::insert`] (the same nodes, keys, splits, file space allocated in the same
/// order, and flush dependencies), but appends (targets the class places
/// [after](Class::is_after) the tree's last leaf child) go straight into the right-most leaf.
/// The right-most path stays protected in the cache for a run of appends (the right halves of
/// the nodes split meanwhile stay out of the cache until they leave the path), a node is split
/// (as `insert` splits it) only when full, the ancestors' right keys are set once when the path
/// is released rather than per target, and each flush dependency of the path is added once.
/// Any other target releases the path and goes through `BTree::insert`. A class may also push
/// appends into the right-most leaf itself, through [`leaf_end`](Batch::leaf_end).
///
/// [`finish`](Batch::finish) (or dropping the batch) releases the path; until then the tree
/// is only to be changed through the batch (its right-most nodes are protected or not yet in
/// the cache).
pub struct Batch<'t, 'c, C>
where
    C: Class,
    <C::Key as NodeKey>::Params: Send + Sync + 'static,
{
    tree: &'t BTree<C>,
    cache: &'c MetadataCache,
    path: Option<RightPath<'c, C::Key>>,
    /// Whether appends may take the right-most path.
    fast: bool,
    /// The last leaf child's left key when the path was last released. Only appends raise it
    /// (any other insertion lands at or left of that child, or replaces it), so a target not
    /// after it is no append and need not protect the path to find out.
    floor: Option<C::Key>,
}

impl<C> core::fmt::Debug for Batch<'_, '_, C>
where
    C: Class,
    <C::Key as NodeKey>::Params: Send + Sync + 'static,
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Batch")
            .field("root", &self.tree.root)
            .field("path_len", &self.path.as_ref().map(|p| p.nodes.len()))
            .field("fast", &self.fast)
            .finish()
    }
}

impl<'c, C> Batch<'_, 'c, C>
where
    C: Class,
    <C::Key as NodeKey>::Params: Send + Sync + 'static,
{
    /// Insert the operation's target, as [`BTree::insert`] does.
    pub fn insert(&mut self, op: &mut C::Op) -> Result<()> {
        let tree = self.tree;
        let cache = self.cache;
        if self.fast && self.path.is_none() {
            let worth_it = match &self.floor {
                Some(f) => tree.class.is_after(f, op)?,
                None => true,
            };
            if worth_it {
                // A path that cannot be appended to (an empty root, or a right-most path whose
                // shape `insert` would not follow the way appends do: keys out of order, a
                // right sibling, a bad level) turns the fast path off for the batch; `insert`
                // then reports what is wrong when a target crosses it.
                match tree.right_path(cache, op) {
                    Ok(p) => self.path = p,
                    Err(_) => self.fast = false,
                }
            }
        }
        if let Some(p) = &mut self.path {
            if tree.append(cache, p, op)? {
                return Ok(());
            }
            self.floor = Some(p.last_lt()?.clone());
            tree.release(cache, self.path.take())?;
        }
        tree.insert(cache, op)
    }

    /// The end of the right-most leaf, when the last insertion left the batch appending there
    /// (and the class's leaf children have no flush dependencies to add): a class may append
    /// its next targets with [`LeafEnd::push`] directly, each exactly as [`Batch::insert`]
    /// would append it, until the leaf is full.
    pub fn leaf_end(&mut self) -> Option<LeafEnd<'_, C::Key>> {
        let two_k = self.tree.two_k();
        let path = self.path.as_mut().filter(|p| p.active && !p.leaf_deps)?;
        let RightPath {
            nodes, rt_pending, ..
        } = path;
        let Node { keys, children, .. } = nodes.last_mut()?.node_mut();
        // The path's leaf has children and one key more (see `right_path`).
        if children.is_empty() || keys.len() != children.len().saturating_add(1) {
            return None;
        }
        let rt = keys.pop();
        Some(LeafEnd {
            room: two_k.saturating_sub(children.len()),
            keys,
            rt,
            children,
            rt_changed: rt_pending,
        })
    }

    /// Release the right-most path: its nodes get their right keys and are unprotected.
    pub fn finish(mut self) -> Result<()> {
        self.tree.release(self.cache, self.path.take())
    }
}

/// The end of the right-most leaf of a [`Batch`], open for appends (see [`Batch::leaf_end`]).
/// While it lives, the leaf's right key is held apart, so that an append pushes its separator
/// where `insert_child` would insert it (before the right key) without moving the right key
/// every time; dropping it puts the right key back.
#[derive(Debug)]
pub struct LeafEnd<'b, K> {
    /// The leaf's keys but the right key: the last is the last child's left key.
    keys: &'b mut Vec<K>,
    /// The right key (`None` only while being dropped).
    rt: Option<K>,
    children: &'b mut Vec<Addr>,
    /// How many more children the leaf holds before it is full (2K of them).
    room: usize,
    rt_changed: &'b mut bool,
}

impl<K> LeafEnd<'_, K> {
    /// Whether the leaf has room for another child (else the next target goes through
    /// [`Batch::insert`], which splits it).
    #[inline]
    pub fn has_room(&self) -> bool {
        self.room > 0
    }

    /// The last child's left key and the leaf's right key.
    #[inline]
    pub fn last_keys(&self) -> Option<(&K, &K)> {
        Some((self.keys.last()?, self.rt.as_ref()?))
    }

    /// Add `child`, with left key `md`, right of the last child, as [`Batch::insert`] does
    /// for a target after the last child's left key and left of the leaf's right key: the
    /// caller vouches for that order (and that `md` is the key `Class::insert` would give).
    /// Nothing happens when the leaf is full.
    #[inline]
    pub fn push(&mut self, child: Addr, md: K) {
        if let Some(room) = self.room.checked_sub(1) {
            self.room = room;
            self.keys.push(md);
            self.children.push(child);
        }
    }

    /// [`push`](Self::push) for a target at or right of the leaf's right key, which becomes
    /// `rt` (the right key `Class::new_node` gives a new right-most child).
    #[inline]
    pub fn push_right(&mut self, child: Addr, md: K, rt: K) {
        if let Some(room) = self.room.checked_sub(1) {
            self.room = room;
            self.keys.push(md);
            self.children.push(child);
            self.rt = Some(rt);
            *self.rt_changed = true;
        }
    }
}

impl<K> Drop for LeafEnd<'_, K> {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            self.keys.push(rt);
        }
    }
}

impl<C> Drop for Batch<'_, '_, C>
where
    C: Class,
    <C::Key as NodeKey>::Params: Send + Sync + 'static,
{
    fn drop(&mut self) {
        // What `finish` does, for a batch left early (an error, a panic); `finish` reports
        // what could go wrong here: a missing key (which `right_path` rules out) or a new node
        // the cache refuses.
        let _ = self.tree.release(self.cache, self.path.take());
    }
}

/// The right-most path of a tree, root first, held by a batched insertion while its targets
/// are appended: nodes of the tree protected in the cache, and right halves of splits not in
/// the cache yet.
struct RightPath<'c, K>
where
    K: NodeKey + Send + Sync + 'static,
    K::Params: Send + Sync + 'static,
{
    /// The nodes from the root down to the right-most leaf; each is its parent's last child.
    nodes: Vec<PathNode<'c, K>>,
    /// The leaf's right key changed since the ancestors' right keys were last set to it. An
    /// insertion propagates a changed right key up the whole path (every node on it is its
    /// parent's last child); appends do it once, when the path is released. Until then only
    /// the last key of each node of the path is stale, and nothing copies it off the path: a
    /// split moves it into the new right half, which replaces the split node in the path, and
    /// the new root of a root split takes it as its own right key.
    rt_pending: bool,
    /// Whether the first append has marked the nodes dirty, added the parent → child flush
    /// dependencies along the path and made room for 2K children in each.
    active: bool,
    /// Whether the class's leaf children may have flush dependencies.
    leaf_deps: bool,
    /// The most children a node holds.
    two_k: usize,
}

/// A node of a [`RightPath`].
enum PathNode<'c, K>
where
    K: NodeKey + Send + Sync + 'static,
    K::Params: Send + Sync + 'static,
{
    /// A node of the tree, protected in the cache.
    Cached(EntryMut<'c, NodeEntry<K>>),
    /// The right half of a split made while appending, not in the cache yet (so neither
    /// protected nor unprotected for every split): it enters the cache, dirty, when a split
    /// moves it off the path or the path is released. Its parent is on the path, protected or
    /// new itself, so no parent of it can reach the file meanwhile.
    New {
        /// Its address (allocated by the split).
        addr: Addr,
        /// Its contents.
        node: Node<K>,
    },
}

impl<K> PathNode<'_, K>
where
    K: NodeKey + Send + Sync + 'static,
    K::Params: Send + Sync + 'static,
{
    fn addr(&self) -> Addr {
        match self {
            PathNode::Cached(g) => g.addr(),
            PathNode::New { addr, .. } => *addr,
        }
    }

    fn node(&self) -> &Node<K> {
        match self {
            PathNode::Cached(g) => g.node(),
            PathNode::New { node, .. } => node,
        }
    }

    /// The node for modification (which marks a cached one dirty).
    #[inline]
    fn node_mut(&mut self) -> &mut Node<K> {
        match self {
            PathNode::Cached(g) => g.node_mut(),
            PathNode::New { node, .. } => node,
        }
    }
}

/// A shared class is the class: a handle that outlives one opening of the tree keeps its class
/// (and whatever state the class holds, such as chunk proxies) in an `Arc`.
impl<C: Class> Class for std::sync::Arc<C> {
    type Key = C::Key;
    type Op = C::Op;
    const FOUND_READS_CACHE: bool = C::FOUND_READS_CACHE;
    const FOLLOW_MIN: bool = C::FOLLOW_MIN;
    const FOLLOW_MAX: bool = C::FOLLOW_MAX;

    #[inline]
    fn ctx(&self) -> NodeCtx<<Self::Key as NodeKey>::Params> {
        (**self).ctx()
    }
    fn zero_key(&self) -> Self::Key {
        (**self).zero_key()
    }
    #[inline]
    fn cmp3(&self, lt: &Self::Key, op: &Self::Op, rt: &Self::Key) -> Result<Ordering> {
        (**self).cmp3(lt, op, rt)
    }
    #[inline]
    fn key_cmp(&self, a: &Self::Key, b: &Self::Key, op: &Self::Op) -> Result<Ordering> {
        (**self).key_cmp(a, b, op)
    }
    fn flatten(&self, keys: &[Self::Key]) -> Option<Box<[u64]>> {
        (**self).flatten(keys)
    }
    #[inline]
    fn flat_target<'o>(&self, op: &'o Self::Op) -> Option<&'o [u64]> {
        (**self).flat_target(op)
    }
    fn validate_keys(&self, addr: Addr, keys: &[Self::Key]) -> Result<()> {
        (**self).validate_keys(addr, keys)
    }
    #[inline]
    fn check_flat(&self, flat: &[u64]) -> bool {
        (**self).check_flat(flat)
    }
    #[inline]
    fn found_flat(
        &self,
        child: Addr,
        words: &[u64],
        record: u64,
        op: &mut Self::Op,
    ) -> Option<bool> {
        (**self).found_flat(child, words, record, op)
    }
    fn new_node(
        &self,
        cache: &MetadataCache,
        kind: NewNode,
        lt: &mut Self::Key,
        op: &mut Self::Op,
        rt: &mut Self::Key,
    ) -> Result<Addr> {
        (**self).new_node(cache, kind, lt, op, rt)
    }
    fn insert(
        &self,
        cache: &MetadataCache,
        child: Addr,
        keys: Keys<'_, Self::Key>,
        op: &mut Self::Op,
    ) -> Result<LeafIns> {
        (**self).insert(cache, child, keys, op)
    }
    fn found(
        &self,
        cache: &MetadataCache,
        child: Addr,
        lt: &Self::Key,
        op: &mut Self::Op,
    ) -> Result<bool> {
        (**self).found(cache, child, lt, op)
    }
    fn remove(
        &self,
        cache: &MetadataCache,
        child: Addr,
        keys: Keys<'_, Self::Key>,
        op: &mut Self::Op,
    ) -> Result<bool> {
        (**self).remove(cache, child, keys, op)
    }
    fn leaf_dep(&self, child: Addr) -> Option<DepKey> {
        (**self).leaf_dep(child)
    }
    fn has_leaf_deps(&self) -> bool {
        (**self).has_leaf_deps()
    }
    #[inline]
    fn is_after(&self, lt: &Self::Key, op: &Self::Op) -> Result<bool> {
        (**self).is_after(lt, op)
    }
}

/// The nodes of one level, left to right, with their addresses.
type LevelNodes<K> = Vec<(Addr, Node<K>)>;

/// A v1 B-tree rooted at a fixed address, over a metadata cache.
///
/// The handle is owned and borrows nothing: every operation that reads or writes nodes takes
/// the metadata cache of the file the tree lives in (always the same one), as the handles of
/// the other structure crates do, so a caller can keep the handle between operations.
#[derive(Debug)]
pub struct BTree<C> {
    root: Addr,
    class: C,
    /// Copies of the internal nodes lookups went through (see [`Copies`]).
    copies: std::sync::Mutex<Copies>,
}

/// Copies of a tree's internal nodes in search form, made by lookups and kept while the
/// cache's [generation](MetadataCache::generation) stays the one they were made in: any
/// change to an entry, eviction or SWMR refresh moves it on, and the next lookup drops them
/// all. A lookup then goes down the internal levels with no lock, hash or reference count of
/// the metadata cache per level (the leaf is still read there), and searches keys the class
/// checked when the copy was made.
#[derive(Debug, Default)]
struct Copies {
    /// The cache generation the copies belong to.
    generation: u64,
    /// `nodes[0]` is the root's copy once made; the others are reached through `slots`.
    nodes: Vec<NodeCopy>,
    /// The root is a leaf (or has no search form) in this generation: nothing to copy.
    root_uncopied: bool,
}

/// One internal node of [`Copies`].
#[derive(Debug)]
struct NodeCopy {
    addr: Addr,
    level: u8,
    /// The keys in the class's flat form, as the class checked them.
    keys: Box<[u64]>,
    children: Box<[Addr]>,
    /// Per child, the place of its copy in `Copies::nodes` ([`NO_COPY`]: none yet).
    slots: Box<[u32]>,
}

/// [`NodeCopy::slots`] of a child not copied.
const NO_COPY: u32 = u32::MAX;

/// The most internal nodes a tree keeps copies of: about 2 KiB each at K = 32 (rank 2), so
/// well under 2 MiB; enough for the level above the leaves of trees of millions of chunks.
/// Past it, lookups read the rest of the nodes in the cache.
const MAX_COPIES: usize = 1024;

/// `(keys[i], keys[i + 1])`, mutable.
#[inline]
fn pair_mut<K>(keys: &mut [K], i: usize, at: Addr) -> Result<(&mut K, &mut K)> {
    let (left, right) = keys
        .split_at_mut_checked(i.saturating_add(1))
        .ok_or_else(|| Error::corrupt(at, "key index out of range"))?;
    match (left.last_mut(), right.first_mut()) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(Error::corrupt(at, "key index out of range")),
    }
}

fn key_at<K: Clone>(keys: &[K], i: usize, at: Addr) -> Result<K> {
    keys.get(i)
        .cloned()
        .ok_or_else(|| Error::corrupt(at, "key index out of range"))
}

#[inline]
fn child_at(children: &[Addr], i: usize, at: Addr) -> Result<Addr> {
    children
        .get(i)
        .copied()
        .ok_or_else(|| Error::corrupt(at, "child index out of range"))
}

fn child_level(node_level: u8, at: Addr) -> Result<u8> {
    node_level
        .checked_sub(1)
        .ok_or_else(|| Error::corrupt(at, "a leaf has no child nodes"))
}

impl<'c, C: Class> BTree<C>
where
    <C::Key as NodeKey>::Params: Send + Sync + 'static,
{
    /// A new empty tree: one empty leaf, allocated and inserted (dirty) in the cache.
    pub fn create(cache: &'c MetadataCache, class: C) -> Result<Self> {
        Self::check_k(&class)?;
        let tree = BTree {
            root: Addr(0),
            class,
            copies: Default::default(),
        };
        let root = tree.create_node(cache, Node::new_leaf())?;
        Ok(BTree { root, ..tree })
    }

    /// The tree whose root node is at `root` (read and checked now).
    pub fn open(cache: &'c MetadataCache, root: Addr, class: C) -> Result<Self> {
        Self::check_k(&class)?;
        let tree = BTree {
            root,
            class,
            copies: Default::default(),
        };
        // Load (and verify) the root; no copy of it is needed.
        cache.get::<NodeEntry<C::Key>>(root, &tree.class.ctx())?;
        Ok(tree)
    }

    fn check_k(class: &C) -> Result<()> {
        if class.ctx().k == 0 {
            return Err(Error::InvalidArgument("node K must be at least 1".into()));
        }
        Ok(())
    }

    /// The root node's address (it never changes).
    pub fn addr(&self) -> Addr {
        self.root
    }

    /// The key/record class.
    pub fn class(&self) -> &C {
        &self.class
    }

    fn two_k(&self) -> usize {
        usize::from(self.class.ctx().k).saturating_mul(2)
    }

    fn node_len(&self) -> u64 {
        let ctx = self.class.ctx();
        Node::<C::Key>::encoded_len(ctx.sizes, ctx.k, ctx.params) as u64
    }

    /// A copy of the node at `addr`, checked to be at `level` when one is expected.
    pub(crate) fn read(
        &self,
        cache: &'c MetadataCache,
        addr: Addr,
        level: Option<u8>,
    ) -> Result<Node<C::Key>> {
        let entry = cache.get::<NodeEntry<C::Key>>(addr, &self.class.ctx())?;
        let node = entry.read().node().clone();
        check_level(addr, &node, level)?;
        Ok(node)
    }

    /// The node at `addr` protected for modification in place, with the checks of
    /// [`read`](Self::read).
    fn protect_node(
        &self,
        cache: &'c MetadataCache,
        addr: Addr,
        level: Option<u8>,
    ) -> Result<h5chunk_cache::EntryMut<'c, NodeEntry<C::Key>>> {
        let entry = cache.protect::<NodeEntry<C::Key>>(addr, &self.class.ctx())?;
        check_level(addr, entry.node(), level)?;
        Ok(entry)
    }

    /// [`read`](Self::read) for whole-tree walks: a node reached twice (children shared in a
    /// corrupt file) is an error, so a walk visits each node once and its cost is bounded by
    /// the file's size rather than exponential in the depth.
    fn read_once(
        &self,
        cache: &'c MetadataCache,
        addr: Addr,
        level: Option<u8>,
        seen: &mut HashSet<Addr>,
    ) -> Result<Node<C::Key>> {
        if !seen.insert(addr) {
            return Err(Error::corrupt(addr, "node reached twice"));
        }
        self.read(cache, addr, level)
    }

    fn write(&self, cache: &'c MetadataCache, addr: Addr, node: Node<C::Key>) -> Result<()> {
        let mut entry = cache.protect::<NodeEntry<C::Key>>(addr, &self.class.ctx())?;
        *entry.node_mut() = node;
        Ok(())
    }

    fn allocate(&self, cache: &'c MetadataCache) -> Result<Addr> {
        Ok(cache.allocator().allocate(self.node_len())?)
    }

    fn create_node(&self, cache: &'c MetadataCache, node: Node<C::Key>) -> Result<Addr> {
        let addr = self.allocate(cache)?;
        self.insert_entry(cache, addr, node)?;
        Ok(addr)
    }

    fn insert_entry(&self, cache: &'c MetadataCache, addr: Addr, node: Node<C::Key>) -> Result<()> {
        let ctx = self.class.ctx();
        cache.insert(addr, NodeEntry::new(node, ctx))?;
        Ok(())
    }

    fn free_node(&self, cache: &'c MetadataCache, addr: Addr) -> Result<()> {
        cache.remove(addr)?;
        cache.allocator().free(addr, self.node_len())?;
        Ok(())
    }

    /// `parent` may not reach the file before `child` (idempotent).
    fn ensure_dep(&self, cache: &'c MetadataCache, parent: Addr, child: DepKey) -> Result<()> {
        match cache.add_flush_dependency(parent, child) {
            Ok(()) | Err(h5chunk_cache::Error::DependencyExists { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Drop a dependency that may not exist (any more).
    fn drop_dep(&self, cache: &'c MetadataCache, parent: Addr, child: DepKey) -> Result<()> {
        match cache.remove_flush_dependency(parent, child) {
            Ok(())
            | Err(h5chunk_cache::Error::NoSuchDependency { .. })
            | Err(h5chunk_cache::Error::UnknownProxy(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// The dependency of node `node` (at `level`) on its child `child`.
    fn child_dep(&self, level: u8, child: Addr) -> Option<DepKey> {
        if level > 0 {
            Some(DepKey::Entry(child))
        } else {
            self.class.leaf_dep(child)
        }
    }

    fn link_child(
        &self,
        cache: &'c MetadataCache,
        node: Addr,
        level: u8,
        child: Addr,
    ) -> Result<()> {
        match self.child_dep(level, child) {
            Some(k) => self.ensure_dep(cache, node, k),
            None => Ok(()),
        }
    }

    fn unlink_child(
        &self,
        cache: &'c MetadataCache,
        node: Addr,
        level: u8,
        child: Addr,
    ) -> Result<()> {
        match self.child_dep(level, child) {
            Some(k) => self.drop_dep(cache, node, k),
            None => Ok(()),
        }
    }

    /// Move the dependencies on `children` from node `from` to node `to`.
    fn rehome(
        &self,
        cache: &'c MetadataCache,
        from: Addr,
        to: Addr,
        level: u8,
        children: &[Addr],
    ) -> Result<()> {
        if level == 0 && !self.class.has_leaf_deps() {
            return Ok(());
        }
        for &c in children {
            if let Some(k) = self.child_dep(level, c) {
                self.drop_dep(cache, from, k)?;
                self.ensure_dep(cache, to, k)?;
            }
        }
        Ok(())
    }

    /// libhdf5's binary search: the child index and the last three-way comparison.
    fn search(&self, addr: Addr, node: &Node<C::Key>, op: &C::Op) -> Result<(usize, Ordering)> {
        let (mut lo, mut hi) = (0usize, node.children.len());
        let (mut idx, mut cmp) = (0usize, Ordering::Less);
        while lo < hi && cmp != Ordering::Equal {
            idx = lo.saturating_add(hi.saturating_sub(lo) / 2);
            let lt = node
                .keys
                .get(idx)
                .ok_or_else(|| Error::corrupt(addr, "missing key"))?;
            let rt = node
                .keys
                .get(idx.saturating_add(1))
                .ok_or_else(|| Error::corrupt(addr, "missing key"))?;
            cmp = self.class.cmp3(lt, op, rt)?;
            if cmp == Ordering::Less {
                hi = idx;
            } else {
                lo = idx.saturating_add(1);
            }
        }
        Ok((idx, cmp))
    }

    /// Look the operation's target up; the class's `found` fills in the result.
    pub fn get(&self, cache: &'c MetadataCache, op: &mut C::Op) -> Result<bool> {
        let (mut addr, mut level) = match self.descend_copies(cache, op)? {
            CopyStep::Done => return Ok(false),
            CopyStep::From(addr, Some(0)) if !C::FOUND_READS_CACHE => {
                if let Some(found) = self.leaf_get(cache, addr, op)? {
                    return Ok(found);
                }
                (addr, Some(0))
            }
            CopyStep::From(addr, level) => (addr, level),
        };
        // Each step goes one level down and levels are checked, so the loop ends; the bound
        // is a second guard.
        for _ in 0..=MAX_DEPTH {
            // Searched under the entry's read lock: no copy of the node, no count taken.
            let step = cache.read_with::<NodeEntry<C::Key>, _>(
                addr,
                &self.class.ctx(),
                |guard| -> Result<FindStep<C::Key>> {
                    // The level, children and flat keys: a node read for search is not built.
                    let view = guard.view();
                    check_level_of(addr, view.level, view.children.len(), level)?;
                    if view.children.is_empty() {
                        return Ok(FindStep::Done(false));
                    }
                    let flat = self
                        .class
                        .flat_target(op)
                        .and_then(|x| {
                            let keys = guard.search_keys(
                                |k| self.class.flatten(k),
                                |w| self.class.check_flat(w),
                            )?;
                            Some((keys, x))
                        })
                        .and_then(|(flat, x)| search_flat(flat, x, view.children.len()));
                    let (idx, cmp) = match flat {
                        Some(found) => found,
                        None => {
                            let node = guard.node();
                            self.class.validate_keys(addr, &node.keys)?;
                            self.search(addr, node, op)?
                        }
                    };
                    if cmp != Ordering::Equal {
                        return Ok(FindStep::Done(false));
                    }
                    let child = child_at(view.children, idx, addr)?;
                    if view.level > 0 {
                        return Ok(FindStep::Descend(child, child_level(view.level, addr)?));
                    }
                    if !C::FOUND_READS_CACHE
                        && let Some((words, record)) = guard.flat_key(idx)
                        && let Some(found) = self.class.found_flat(child, words, record, op)
                    {
                        return Ok(FindStep::Done(found));
                    }
                    let lt = guard
                        .key(idx)
                        .ok_or_else(|| Error::corrupt(addr, "key index out of range"))?;
                    if C::FOUND_READS_CACHE {
                        Ok(FindStep::Found(child, lt))
                    } else {
                        Ok(FindStep::Done(self.class.found(cache, child, &lt, op)?))
                    }
                },
            )??;
            match step {
                FindStep::Done(found) => return Ok(found),
                FindStep::Descend(child, l) => {
                    level = Some(l);
                    addr = child;
                }
                FindStep::Found(child, lt) => return self.class.found(cache, child, &lt, op),
            }
        }
        Err(Error::corrupt(addr, "descent deeper than MAX_DEPTH"))
    }

    /// The internal levels of a lookup on the [`Copies`] of the nodes: where to go on in the
    /// cache (the root when there are no copies to use), or `Done` when the target lies
    /// outside every child. Copies are made of the nodes passed through that have none.
    fn descend_copies(&self, cache: &'c MetadataCache, op: &C::Op) -> Result<CopyStep> {
        let from_root = CopyStep::From(self.root, None);
        let Some(x) = self.class.flat_target(op) else {
            return Ok(from_root);
        };
        // Another lookup holds the copies (or one panicked holding them): go the cache's way.
        let Ok(mut copies) = self.copies.try_lock() else {
            return Ok(from_root);
        };
        let copies = &mut *copies;
        let generation = cache.generation();
        if copies.generation != generation {
            copies.generation = generation;
            copies.nodes.clear();
            copies.root_uncopied = false;
        }
        if copies.root_uncopied {
            return Ok(from_root);
        }
        if copies.nodes.is_empty() {
            match self.copy_node(cache, self.root, None)? {
                Some(c) => copies.nodes.push(c),
                None => {
                    copies.root_uncopied = true;
                    return Ok(from_root);
                }
            }
        }
        let mut at = 0usize;
        // Each step goes one level down (levels were checked when the copies were made).
        for _ in 0..=MAX_DEPTH {
            let Some(node) = copies.nodes.get(at) else {
                return Ok(from_root);
            };
            let Some((idx, cmp)) = search_flat(&node.keys, x, node.children.len()) else {
                return Ok(from_root);
            };
            if cmp != Ordering::Equal {
                return Ok(CopyStep::Done);
            }
            let child = child_at(&node.children, idx, node.addr)?;
            let level = child_level(node.level, node.addr)?;
            if level == 0 {
                return Ok(CopyStep::From(child, Some(0)));
            }
            let slot = node.slots.get(idx).copied().unwrap_or(NO_COPY);
            if slot != NO_COPY {
                at = slot as usize;
                continue;
            }
            let next = u32::try_from(copies.nodes.len())
                .ok()
                .filter(|&n| (n as usize) < MAX_COPIES);
            let Some(next) = next else {
                return Ok(CopyStep::From(child, Some(level)));
            };
            let Some(copy) = self.copy_node(cache, child, Some(level))? else {
                return Ok(CopyStep::From(child, Some(level)));
            };
            copies.nodes.push(copy);
            if let Some(s) = copies.nodes.get_mut(at).and_then(|n| n.slots.get_mut(idx)) {
                *s = next;
            }
            at = next as usize;
        }
        Err(Error::corrupt(self.root, "descent deeper than MAX_DEPTH"))
    }

    /// The last step of a lookup in the leaf at `addr`, for a class whose `found` reads
    /// nothing from the cache: found or not, or `None` when the leaf has no search form (for
    /// the general step).
    fn leaf_get(
        &self,
        cache: &'c MetadataCache,
        addr: Addr,
        op: &mut C::Op,
    ) -> Result<Option<bool>> {
        cache.read_with::<NodeEntry<C::Key>, _>(addr, &self.class.ctx(), |guard| {
            let view = guard.view();
            check_level_of(addr, view.level, view.children.len(), Some(0))?;
            let Some(x) = self.class.flat_target(op) else {
                return Ok(None);
            };
            let keys = guard.search_keys(|k| self.class.flatten(k), |w| self.class.check_flat(w));
            let Some((idx, cmp)) = keys.and_then(|k| search_flat(k, x, view.children.len())) else {
                return Ok(None);
            };
            if cmp != Ordering::Equal {
                return Ok(Some(false));
            }
            let child = child_at(view.children, idx, addr)?;
            let Some((words, record)) = guard.flat_key(idx) else {
                return Ok(None);
            };
            Ok(self.class.found_flat(child, words, record, op))
        })?
    }

    /// A copy of the internal node at `addr`, checked to be at `level` as a lookup checks it;
    /// `None` for a leaf, a node with no children or keys without the class's search form.
    fn copy_node(
        &self,
        cache: &'c MetadataCache,
        addr: Addr,
        level: Option<u8>,
    ) -> Result<Option<NodeCopy>> {
        cache.read_with::<NodeEntry<C::Key>, _>(addr, &self.class.ctx(), |guard| {
            let view = guard.view();
            check_level_of(addr, view.level, view.children.len(), level)?;
            if view.level == 0 || view.children.is_empty() {
                return Ok(None);
            }
            let keys = guard.search_keys(|k| self.class.flatten(k), |w| self.class.check_flat(w));
            Ok(keys.map(|keys| NodeCopy {
                addr,
                level: view.level,
                keys: keys.into(),
                children: view.children.into(),
                slots: vec![NO_COPY; view.children.len()].into(),
            }))
        })?
    }

    /// Insert the operation's target. Splits propagate up; when the root splits, its old
    /// contents move to a new node and the new root is written at the same address.
    pub fn insert(&self, cache: &'c MetadataCache, op: &mut C::Op) -> Result<()> {
        let (mut lt, mut md, mut rt) = (
            self.class.zero_key(),
            self.class.zero_key(),
            self.class.zero_key(),
        );
        let (mut lt_changed, mut rt_changed) = (false, false);
        let keys = Keys {
            lt: &mut lt,
            lt_changed: &mut lt_changed,
            md: &mut md,
            rt: &mut rt,
            rt_changed: &mut rt_changed,
        };
        let Some(twin) = self.insert_helper(cache, self.root, None, keys, op)? else {
            return Ok(());
        };
        let root = self.root;
        let old = self.read(cache, root, None)?;
        if !lt_changed {
            lt = key_at(&old.keys, 0, root)?;
        }
        let mut twin_node = self.read(cache, twin, Some(old.level))?;
        if !rt_changed {
            rt = key_at(&twin_node.keys, twin_node.children.len(), twin)?;
        }
        let level = old
            .level
            .checked_add(1)
            .filter(|&l| l <= MAX_DEPTH)
            .ok_or_else(|| Error::corrupt(root, "the tree would exceed MAX_DEPTH levels"))?;
        let moved = self.allocate(cache)?;
        twin_node.left = Some(moved);
        self.write(cache, twin, twin_node)?;
        let children = old.children.clone();
        let old_level = old.level;
        self.insert_entry(cache, moved, old)?;
        self.rehome(cache, root, moved, old_level, &children)?;
        self.drop_dep(cache, root, DepKey::Entry(twin))?;
        let new_root = Node {
            level,
            left: None,
            right: None,
            keys: vec![lt, md, rt],
            children: vec![moved, twin],
        };
        self.write(cache, root, new_root)?;
        self.ensure_dep(cache, root, DepKey::Entry(moved))?;
        self.ensure_dep(cache, root, DepKey::Entry(twin))?;
        Ok(())
    }

    /// The recursive part of an insertion into the subtree at `addr`. Returns the address of
    /// a new right sibling when the node split (its first key is then in `keys.md`).
    fn insert_helper(
        &self,
        cache: &'c MetadataCache,
        addr: Addr,
        level: Option<u8>,
        keys: Keys<'_, C::Key>,
        op: &mut C::Op,
    ) -> Result<Option<Addr>> {
        let Keys {
            lt,
            lt_changed,
            md,
            rt,
            rt_changed,
        } = keys;
        *lt_changed = false;
        *rt_changed = false;
        // The node is modified in place under protect (no copy of its keys): the cache neither
        // writes nor evicts it meanwhile, and a cycle back to it (a corrupt file) is an error.
        let mut guard = self.protect_node(cache, addr, level)?;
        let bt: &mut Node<C::Key> = guard.node_mut();
        let mut dirty = false;
        let n = bt.children.len();
        let (mut idx, cmp) = self.search(addr, bt, op)?;
        let is_leaf = bt.level == 0;

        let my_ins = if n == 0 {
            if !is_leaf {
                return Err(Error::corrupt(addr, "an internal node has no children"));
            }
            let (mut k0, mut k1) = (self.class.zero_key(), self.class.zero_key());
            let child = self
                .class
                .new_node(cache, NewNode::First, &mut k0, op, &mut k1)?;
            bt.keys = vec![k0, k1];
            bt.children = vec![child];
            dirty = true;
            idx = 0;
            if C::FOLLOW_MIN {
                self.leaf_insert(cache, addr, bt, 0, lt_changed, md, rt_changed, op)?
            } else {
                LeafIns::Noop
            }
        } else if cmp == Ordering::Less && idx == 0 {
            if !is_leaf {
                self.descend_insert(cache, addr, bt, 0, lt_changed, md, rt_changed, op)?
            } else if C::FOLLOW_MIN {
                self.leaf_insert(cache, addr, bt, 0, lt_changed, md, rt_changed, op)?
            } else {
                let k0 = bt
                    .keys
                    .first_mut()
                    .ok_or_else(|| Error::corrupt(addr, "missing key"))?;
                *md = k0.clone();
                let child = self.class.new_node(cache, NewNode::Left, k0, op, md)?;
                *lt_changed = true;
                LeafIns::Left(child)
            }
        } else if cmp == Ordering::Greater && idx.saturating_add(1) >= n {
            idx = n.saturating_sub(1);
            if !is_leaf {
                self.descend_insert(cache, addr, bt, idx, lt_changed, md, rt_changed, op)?
            } else if C::FOLLOW_MAX {
                self.leaf_insert(cache, addr, bt, idx, lt_changed, md, rt_changed, op)?
            } else {
                let last = bt
                    .keys
                    .get_mut(n)
                    .ok_or_else(|| Error::corrupt(addr, "missing key"))?;
                *md = last.clone();
                let child = self.class.new_node(cache, NewNode::Right, md, op, last)?;
                *rt_changed = true;
                LeafIns::Right(child)
            }
        } else if cmp != Ordering::Equal {
            return Err(Error::corrupt(addr, "keys are not in order"));
        } else if !is_leaf {
            self.descend_insert(cache, addr, bt, idx, lt_changed, md, rt_changed, op)?
        } else {
            self.leaf_insert(cache, addr, bt, idx, lt_changed, md, rt_changed, op)?
        };

        // Propagate key changes to the caller's copies while the child is at our edge.
        if *lt_changed {
            dirty = true;
            self.propagate_lt(addr, bt, idx, lt, lt_changed, op)?;
        }
        if *rt_changed {
            dirty = true;
            if idx.saturating_add(1) < bt.children.len() {
                *rt_changed = false;
            } else {
                *rt = key_at(&bt.keys, idx.saturating_add(1), addr)?;
            }
        }

        let mut twin = None;
        match my_ins {
            LeafIns::Noop => {}
            LeafIns::Change(new) => {
                let slot = bt
                    .children
                    .get_mut(idx)
                    .ok_or_else(|| Error::corrupt(addr, "child index out of range"))?;
                let old = core::mem::replace(slot, new);
                dirty = true;
                if old != new {
                    self.unlink_child(cache, addr, bt.level, old)?;
                }
                self.link_child(cache, addr, bt.level, new)?;
            }
            LeafIns::Left(child) | LeafIns::Right(child) => {
                let right = matches!(my_ins, LeafIns::Right(_));
                dirty = true;
                if bt.children.len() >= self.two_k() {
                    let (twin_addr, mut twin_node) = self.split(cache, addr, bt, idx)?;
                    let nleft = bt.children.len();
                    if idx < nleft {
                        insert_child(addr, bt, idx, child, right, md.clone())?;
                        self.link_child(cache, addr, bt.level, child)?;
                    } else {
                        let i = idx.saturating_sub(nleft);
                        insert_child(twin_addr, &mut twin_node, i, child, right, md.clone())?;
                        self.link_child(cache, twin_addr, twin_node.level, child)?;
                    }
                    twin = Some((twin_addr, twin_node));
                } else {
                    insert_child(addr, bt, idx, child, right, md.clone())?;
                    self.link_child(cache, addr, bt.level, child)?;
                }
            }
        }
        if dirty {
            guard.mark_dirty();
        }
        drop(guard);
        match twin {
            Some((twin_addr, twin_node)) => {
                *md = key_at(&twin_node.keys, 0, twin_addr)?;
                self.insert_entry(cache, twin_addr, twin_node)?;
                Ok(Some(twin_addr))
            }
            None => Ok(None),
        }
    }

    /// Recurse into the child node `idx` of `bt`.
    #[allow(clippy::too_many_arguments)]
    fn descend_insert(
        &self,
        cache: &'c MetadataCache,
        addr: Addr,
        bt: &mut Node<C::Key>,
        idx: usize,
        lt_changed: &mut bool,
        md: &mut C::Key,
        rt_changed: &mut bool,
        op: &mut C::Op,
    ) -> Result<LeafIns> {
        let child = child_at(&bt.children, idx, addr)?;
        let level = child_level(bt.level, addr)?;
        let (lt, rt) = pair_mut(&mut bt.keys, idx, addr)?;
        let keys = Keys {
            lt,
            lt_changed,
            md,
            rt,
            rt_changed,
        };
        let split = self.insert_helper(cache, child, Some(level), keys, op)?;
        // The child may be dirty now: it must reach the file before this node.
        self.ensure_dep(cache, addr, DepKey::Entry(child))?;
        Ok(split.map_or(LeafIns::Noop, LeafIns::Right))
    }

    /// Let the class insert into the leaf child `idx` of `bt`.
    #[allow(clippy::too_many_arguments)]
    fn leaf_insert(
        &self,
        cache: &'c MetadataCache,
        addr: Addr,
        bt: &mut Node<C::Key>,
        idx: usize,
        lt_changed: &mut bool,
        md: &mut C::Key,
        rt_changed: &mut bool,
        op: &mut C::Op,
    ) -> Result<LeafIns> {
        let child = child_at(&bt.children, idx, addr)?;
        let (lt, rt) = pair_mut(&mut bt.keys, idx, addr)?;
        let keys = Keys {
            lt,
            lt_changed,
            md,
            rt,
            rt_changed,
        };
        let r = self.class.insert(cache, child, keys, op)?;
        self.link_child(cache, addr, 0, child)?;
        Ok(r)
    }

    /// Split the full node `bt` at `addr` (whose child `idx` is receiving a new sibling) as
    /// libhdf5 does; returns the new right node, not yet in the cache.
    fn split(
        &self,
        cache: &'c MetadataCache,
        addr: Addr,
        bt: &mut Node<C::Key>,
        idx: usize,
    ) -> Result<(Addr, Node<C::Key>)> {
        let two_k = self.two_k();
        let ratio = if bt.right.is_none() {
            SPLIT_RATIOS[2]
        } else if bt.left.is_none() {
            SPLIT_RATIOS[0]
        } else {
            SPLIT_RATIOS[1]
        };
        // As libhdf5: truncate 2K × ratio, then keep the new child with the child that split.
        let mut nleft = (two_k as f64 * ratio) as usize;
        if idx < nleft && nleft == two_k {
            nleft = nleft.saturating_sub(1);
        } else if idx >= nleft && nleft == 0 {
            nleft = 1;
        }
        if nleft >= bt.children.len() {
            return Err(Error::corrupt(addr, "split of a node that is not full"));
        }
        let twin_addr = self.allocate(cache)?;
        // The new node gets room for 2K children at once: it fills up to a split of its own.
        let mut twin_keys = Vec::with_capacity(two_k.saturating_add(1));
        twin_keys.extend(bt.keys.drain(nleft..));
        let mut twin_children = Vec::with_capacity(two_k);
        twin_children.extend(bt.children.drain(nleft..));
        bt.keys.push(key_at(&twin_keys, 0, addr)?);
        let twin = Node {
            level: bt.level,
            left: Some(addr),
            right: bt.right,
            keys: twin_keys,
            children: twin_children,
        };
        if let Some(r) = bt.right {
            let mut sib = cache.protect::<NodeEntry<C::Key>>(r, &self.class.ctx())?;
            if sib.node().level != bt.level {
                return Err(Error::corrupt(r, "right sibling at another level"));
            }
            sib.node_mut().left = Some(twin_addr);
        }
        bt.right = Some(twin_addr);
        self.rehome(cache, addr, twin_addr, twin.level, &twin.children)?;
        Ok((twin_addr, twin))
    }

    /// A batched insertion: [`Batch::insert`] is [`insert`](Self::insert), faster for runs of
    /// appends.
    pub fn batch(&self, cache: &'c MetadataCache) -> Batch<'_, 'c, C> {
        Batch {
            tree: self,
            cache,
            path: None,
            // Appending along the right-most path is only defined for classes whose leaves
            // make a new child right of the maximum, as `insert_helper` does when `FOLLOW_MAX`
            // is false.
            fast: !C::FOLLOW_MAX,
            floor: None,
        }
    }

    /// Protect the right-most path from the root down and check that appending along it does
    /// what `insert` does: every node holds its keys in order (so `search` picks the last
    /// child for any target after the last left key), none has a right sibling (so splits use
    /// the right-most ratio), and no node's last left key lies after the leaf's (so a target
    /// after the leaf's is after all of them). `None` for an empty tree.
    #[inline(never)]
    fn right_path(
        &self,
        cache: &'c MetadataCache,
        op: &C::Op,
    ) -> Result<Option<RightPath<'c, C::Key>>> {
        let mut nodes: Vec<PathNode<'c, C::Key>> = Vec::new();
        let (mut addr, mut level) = (self.root, None);
        // Levels are checked on the way down (a child is at its parent's level minus one), so
        // the loop ends; the bound is a second guard.
        for _ in 0..=MAX_DEPTH {
            let guard = self.protect_node(cache, addr, level)?;
            let node = guard.node();
            let Some(idx) = node.children.len().checked_sub(1) else {
                if node.level == 0 && level.is_none() {
                    return Ok(None);
                }
                return Err(Error::corrupt(addr, "an internal node has no children"));
            };
            if node.right.is_some() {
                return Err(Error::corrupt(
                    addr,
                    "the right-most node has a right sibling",
                ));
            }
            if node.keys.len() != node.children.len().saturating_add(1) {
                return Err(Error::corrupt(addr, "keys and children do not match"));
            }
            for pair in node.keys.windows(2) {
                if let [a, b] = pair
                    && self.class.key_cmp(a, b, op)? == Ordering::Greater
                {
                    return Err(Error::corrupt(addr, "keys are not in order"));
                }
            }
            let below = if node.level > 0 {
                Some((
                    child_at(&node.children, idx, addr)?,
                    child_level(node.level, addr)?,
                ))
            } else {
                None
            };
            nodes.push(PathNode::Cached(guard));
            if let Some((child, l)) = below {
                addr = child;
                level = Some(l);
                continue;
            }
            let path = RightPath {
                nodes,
                rt_pending: false,
                active: false,
                leaf_deps: self.class.has_leaf_deps(),
                two_k: self.two_k(),
            };
            let leaf_lt = path.last_lt()?;
            for g in &path.nodes {
                let node = g.node();
                let lt = node
                    .children
                    .len()
                    .checked_sub(1)
                    .and_then(|i| node.keys.get(i))
                    .ok_or_else(|| Error::corrupt(g.addr(), "missing key"))?;
                if self.class.key_cmp(lt, leaf_lt, op)? == Ordering::Greater {
                    return Err(Error::corrupt(g.addr(), "keys are not in order"));
                }
            }
            return Ok(Some(path));
        }
        Err(Error::corrupt(addr, "descent deeper than MAX_DEPTH"))
    }

    /// Append the target of `op` if the class places it after the last leaf child, as
    /// `insert_helper` inserts it at the last child of each node of the path; `false` (and
    /// nothing changed) if it does not.
    fn append(
        &self,
        cache: &'c MetadataCache,
        path: &mut RightPath<'c, C::Key>,
        op: &mut C::Op,
    ) -> Result<bool> {
        if !path.active {
            if !self.class.is_after(path.last_lt()?, op)? {
                return Ok(false);
            }
            self.activate(cache, path)?;
        }
        let leaf = path
            .nodes
            .last_mut()
            .ok_or_else(|| Error::corrupt(self.root, "empty right-most path"))?;
        let addr = leaf.addr();
        // The leaf is dirty already (see `activate`).
        let bt = leaf.node_mut();
        let n = bt.children.len();
        let idx = n
            .checked_sub(1)
            .ok_or_else(|| Error::corrupt(addr, "a leaf of the path has no children"))?;
        let (lt, rt) = pair_mut(&mut bt.keys, idx, addr)?;
        if !self.class.is_after(lt, op)? {
            return Ok(false);
        }
        let last = child_at(&bt.children, idx, addr)?;
        // What `insert_helper` does at the leaf for a target after its last child: a new
        // right-most child right of the right key, else an insertion into the last child,
        // which the class promises (`is_after`) adds a child right of it.
        let mut md = self.class.zero_key();
        let (child, rt_changed) = if self.class.cmp3(lt, op, rt)? == Ordering::Greater {
            let child = self
                .class
                .new_node(cache, NewNode::Right, &mut md, op, rt)?;
            (child, true)
        } else {
            let (mut lt_changed, mut rt_changed) = (false, false);
            let keys = Keys {
                lt,
                lt_changed: &mut lt_changed,
                md: &mut md,
                rt,
                rt_changed: &mut rt_changed,
            };
            let ins = self.class.insert(cache, last, keys, op)?;
            if path.leaf_deps {
                self.link_child(cache, addr, 0, last)?;
            }
            match ins {
                LeafIns::Right(child) if !lt_changed => (child, rt_changed),
                _ => {
                    return Err(Error::corrupt(
                        addr,
                        "a target after the last child did not become a new child",
                    ));
                }
            }
        };
        path.rt_pending |= rt_changed;
        if n < path.two_k {
            insert_last(addr, bt, child, md)?;
            if path.leaf_deps {
                self.link_child(cache, addr, 0, child)?;
            }
            return Ok(true);
        }
        self.append_split(cache, path, child, md)?;
        Ok(true)
    }

    /// The first append along a freshly protected path: what `insert_helper` does to every
    /// node of a descent (mark it dirty, make each node depend on the child it went through),
    /// done once, and room for 2K children so appends do not reallocate.
    #[inline(never)]
    fn activate(&self, cache: &'c MetadataCache, path: &mut RightPath<'c, C::Key>) -> Result<()> {
        let two_k = self.two_k();
        for pair in path.nodes.windows(2) {
            if let [parent, child] = pair {
                self.ensure_dep(cache, parent.addr(), DepKey::Entry(child.addr()))?;
            }
        }
        for g in &mut path.nodes {
            // What a descent does to every node it passes (marking a cached node dirty).
            reserve(g.node_mut(), two_k);
        }
        path.active = true;
        Ok(())
    }

    /// Add `child` (with separator `md`) right of the last child of the full leaf of the path,
    /// splitting up the path as `insert_helper` splits on the way back from a descent; the
    /// split nodes' right halves take their place in the path.
    #[inline(never)]
    fn append_split(
        &self,
        cache: &'c MetadataCache,
        path: &mut RightPath<'c, C::Key>,
        mut child: Addr,
        mut md: C::Key,
    ) -> Result<()> {
        // The ancestors' right keys may be stale here (see `RightPath::rt_pending`): a split
        // moves a node's right key into its new right half, which takes its place in the path,
        // so the stale keys stay on the path until `release` sets them.
        let two_k = self.two_k();
        let mut at = path.nodes.len();
        while let Some(l) = at.checked_sub(1) {
            at = l;
            let slot = path
                .nodes
                .get_mut(l)
                .ok_or_else(|| Error::corrupt(self.root, "empty right-most path"))?;
            let addr = slot.addr();
            let bt = slot.node_mut();
            let level = bt.level;
            let link = level > 0 || path.leaf_deps;
            let n = bt.children.len();
            let idx = n
                .checked_sub(1)
                .ok_or_else(|| Error::corrupt(addr, "a node of the path has no children"))?;
            if n < two_k {
                insert_last(addr, bt, child, md)?;
                if link {
                    self.link_child(cache, addr, level, child)?;
                }
                return Ok(());
            }
            let (twin_addr, mut twin) = self.split(cache, addr, bt, idx)?;
            let nleft = bt.children.len();
            if idx < nleft {
                insert_child(addr, bt, idx, child, true, md)?;
                if link {
                    self.link_child(cache, addr, level, child)?;
                }
            } else {
                // The last child went to the twin.
                insert_last(twin_addr, &mut twin, child, md)?;
                if link {
                    self.link_child(cache, twin_addr, level, child)?;
                }
            }
            let up = key_at(&twin.keys, 0, twin_addr)?;
            if l == 0 {
                return self.append_root_split(cache, path, twin_addr, twin, up);
            }
            // The left half leaves the path: unprotected (dirty) if it is in the cache, else
            // inserted; the right half takes its place.
            let twin = PathNode::New {
                addr: twin_addr,
                node: twin,
            };
            if let PathNode::New { addr, node } = core::mem::replace(slot, twin) {
                self.insert_entry(cache, addr, node)?;
            }
            child = twin_addr;
            md = up;
        }
        Ok(())
    }

    /// The root split into itself and `twin` (separator `md`): as [`insert`](Self::insert), its
    /// old contents move to a new node and the root, kept at its address, gets the two halves
    /// as children. `twin` joins the path below the root.
    #[inline(never)]
    fn append_root_split(
        &self,
        cache: &'c MetadataCache,
        path: &mut RightPath<'c, C::Key>,
        twin_addr: Addr,
        twin: Node<C::Key>,
        md: C::Key,
    ) -> Result<()> {
        let root = self.root;
        let two_k = self.two_k();
        let rt = key_at(&twin.keys, twin.children.len(), twin_addr)?;
        let slot = path
            .nodes
            .first_mut()
            .ok_or_else(|| Error::corrupt(root, "empty right-most path"))?;
        let old_level = slot.node().level;
        let lt = key_at(&slot.node().keys, 0, root)?;
        let Some(level) = old_level.checked_add(1).filter(|&l| l <= MAX_DEPTH) else {
            // `insert` has the right half in the cache by now.
            self.insert_entry(cache, twin_addr, twin)?;
            return Err(Error::corrupt(
                root,
                "the tree would exceed MAX_DEPTH levels",
            ));
        };
        let moved = self.allocate(cache)?;
        let mut twin = twin;
        twin.left = Some(moved);
        let mut new_root = Node {
            level,
            left: None,
            right: None,
            keys: vec![lt, md, rt],
            children: vec![moved, twin_addr],
        };
        reserve(&mut new_root, two_k);
        let old = core::mem::replace(slot.node_mut(), new_root);
        let children = old.children.clone();
        self.insert_entry(cache, moved, old)?;
        self.rehome(cache, root, moved, old_level, &children)?;
        self.drop_dep(cache, root, DepKey::Entry(twin_addr))?;
        self.ensure_dep(cache, root, DepKey::Entry(moved))?;
        self.ensure_dep(cache, root, DepKey::Entry(twin_addr))?;
        path.nodes.insert(
            1,
            PathNode::New {
                addr: twin_addr,
                node: twin,
            },
        );
        Ok(())
    }

    /// Give every ancestor on the path the leaf's right key, if it changed.
    fn sync_rt(&self, path: &mut RightPath<'c, C::Key>) -> Result<()> {
        if !path.rt_pending {
            return Ok(());
        }
        let (leaf, ancestors) = path
            .nodes
            .split_last_mut()
            .ok_or_else(|| Error::corrupt(self.root, "empty right-most path"))?;
        let rt = leaf
            .node()
            .keys
            .last()
            .ok_or_else(|| Error::corrupt(leaf.addr(), "missing key"))?;
        for g in ancestors {
            let addr = g.addr();
            let slot = g
                .node_mut()
                .keys
                .last_mut()
                .ok_or_else(|| Error::corrupt(addr, "missing key"))?;
            slot.clone_from(rt);
        }
        path.rt_pending = false;
        Ok(())
    }

    /// Finish with a path: the ancestors get their right keys, the new nodes enter the cache
    /// (dirty, the leaf first), and only then are the protected ones released, so no parent on
    /// the path can reach the file before its new child is in the cache.
    #[inline(never)]
    fn release(&self, cache: &'c MetadataCache, path: Option<RightPath<'c, C::Key>>) -> Result<()> {
        let Some(mut path) = path else {
            return Ok(());
        };
        let synced = self.sync_rt(&mut path);
        let mut inserted = Ok(());
        let mut cached = Vec::with_capacity(path.nodes.len());
        while let Some(n) = path.nodes.pop() {
            match n {
                PathNode::New { addr, node } => {
                    // Every new node gets its chance, whatever happened to the others.
                    inserted = inserted.and(self.insert_entry(cache, addr, node));
                }
                PathNode::Cached(guard) => cached.push(guard),
            }
        }
        drop(cached);
        synced.and(inserted)
    }

    /// Remove the operation's target, which must be present (check with [`BTree::get`]).
    /// Nodes that become empty are freed (the root stays, as an empty leaf); nodes are never
    /// merged, as in libhdf5. Keys are maintained so that every node's right key equals its
    /// separator in the parent (see the crate docs for where this departs from libhdf5).
    pub fn remove(&self, cache: &'c MetadataCache, op: &mut C::Op) -> Result<()> {
        let (mut lt, mut md, mut rt) = (
            self.class.zero_key(),
            self.class.zero_key(),
            self.class.zero_key(),
        );
        let (mut lt_changed, mut rt_changed) = (false, false);
        let keys = Keys {
            lt: &mut lt,
            lt_changed: &mut lt_changed,
            md: &mut md,
            rt: &mut rt,
            rt_changed: &mut rt_changed,
        };
        self.remove_helper(cache, self.root, None, keys, op)?;
        let mut root = cache.protect::<NodeEntry<C::Key>>(self.root, &self.class.ctx())?;
        if root.node().children.is_empty() && root.node().level != 0 {
            root.node_mut().level = 0;
        }
        Ok(())
    }

    fn remove_helper(
        &self,
        cache: &'c MetadataCache,
        addr: Addr,
        level: Option<u8>,
        keys: Keys<'_, C::Key>,
        op: &mut C::Op,
    ) -> Result<bool> {
        let Keys {
            lt,
            lt_changed,
            md,
            rt,
            rt_changed,
        } = keys;
        let is_root = level.is_none();
        let mut bt = self.read(cache, addr, level)?;
        let n = bt.children.len();
        let (idx, cmp) = self.search(addr, &bt, op)?;
        if n == 0 || cmp != Ordering::Equal {
            return Err(Error::corrupt(addr, "the key to remove is not in the tree"));
        }
        let child = child_at(&bt.children, idx, addr)?;
        let removed = {
            let (a, b) = pair_mut(&mut bt.keys, idx, addr)?;
            let keys = Keys {
                lt: a,
                lt_changed,
                md,
                rt: b,
                rt_changed,
            };
            if bt.level > 0 {
                let r =
                    self.remove_helper(cache, child, Some(child_level(bt.level, addr)?), keys, op)?;
                if !r {
                    self.ensure_dep(cache, addr, DepKey::Entry(child))?;
                }
                r
            } else {
                let r = self.class.remove(cache, child, keys, op)?;
                if !r {
                    self.link_child(cache, addr, 0, child)?;
                }
                r
            }
        };
        let mut dirty = false;
        if *lt_changed {
            dirty = true;
            self.propagate_lt(addr, &bt, idx, lt, lt_changed, op)?;
        }
        if *rt_changed {
            dirty = true;
            if idx.saturating_add(1) < n {
                *rt_changed = false;
            } else {
                *rt = key_at(&bt.keys, idx.saturating_add(1), addr)?;
            }
        }
        if !removed {
            if dirty {
                self.write(cache, addr, bt)?;
            }
            return Ok(false);
        }
        self.unlink_child(cache, addr, bt.level, child)?;
        if n == 1 {
            bt.children.clear();
            bt.keys.clear();
            if is_root {
                self.write(cache, addr, bt)?;
            } else {
                if let Some(l) = bt.left {
                    let mut sib = cache.protect::<NodeEntry<C::Key>>(l, &self.class.ctx())?;
                    sib.node_mut().right = bt.right;
                }
                if let Some(r) = bt.right {
                    let mut sib = cache.protect::<NodeEntry<C::Key>>(r, &self.class.ctx())?;
                    sib.node_mut().left = bt.left;
                }
                self.free_node(cache, addr)?;
            }
            return Ok(true);
        }
        if idx == 0 {
            // The node's range keeps its lower bound in the parent: a raised left key is not
            // propagated (see `propagate_lt`).
            bt.children.remove(0);
            bt.keys.remove(0);
        } else if idx.saturating_add(1) == n {
            // The right key drops to the last remaining separator; the parent's separator
            // follows, so that every node's right key equals its parent's separator.
            bt.children.pop();
            bt.keys.pop();
            *rt = key_at(&bt.keys, bt.children.len(), addr)?;
            *rt_changed = true;
        } else {
            bt.children.remove(idx);
            // In a leaf, key `idx` is the removed chunk's own key. In an internal node, the
            // next child's range grows to the left instead, so the previous child's right key
            // stays equal to its separator.
            bt.keys.remove(if bt.level == 0 {
                idx
            } else {
                idx.saturating_add(1)
            });
        }
        self.write(cache, addr, bt)?;
        Ok(false)
    }

    /// Propagate a changed left key of child `idx` to the caller's copy (the separator in the
    /// parent) when the child is the node's first. Unlike libhdf5, a key is only propagated when
    /// it does not rise: a raised separator would leave the left neighbour's right key below
    /// it, and a later insertion between the two would then make an unreachable child. A node's
    /// lower bound may lie below its first key; searches handle that gap.
    fn propagate_lt(
        &self,
        addr: Addr,
        bt: &Node<C::Key>,
        idx: usize,
        lt: &mut C::Key,
        lt_changed: &mut bool,
        op: &C::Op,
    ) -> Result<()> {
        if idx > 0 {
            *lt_changed = false;
            return Ok(());
        }
        let new = key_at(&bt.keys, idx, addr)?;
        if self.class.key_cmp(&new, lt, op)? == Ordering::Greater {
            *lt_changed = false;
        } else {
            *lt = new;
        }
        Ok(())
    }

    /// Visit every leaf child in key order, `f(left key, child, right key)`, until `f` breaks.
    pub fn for_each<F>(&self, cache: &'c MetadataCache, mut f: F) -> Result<ControlFlow<()>>
    where
        F: FnMut(&C::Key, Addr, &C::Key) -> Result<ControlFlow<()>>,
    {
        self.walk(cache, self.root, None, &mut f, &mut HashSet::new())
    }

    fn walk<F>(
        &self,
        cache: &'c MetadataCache,
        addr: Addr,
        level: Option<u8>,
        f: &mut F,
        seen: &mut HashSet<Addr>,
    ) -> Result<ControlFlow<()>>
    where
        F: FnMut(&C::Key, Addr, &C::Key) -> Result<ControlFlow<()>>,
    {
        let node = self.read_once(cache, addr, level, seen)?;
        if node.level > 0 {
            let below = child_level(node.level, addr)?;
            for &c in &node.children {
                if self.walk(cache, c, Some(below), f, seen)?.is_break() {
                    return Ok(ControlFlow::Break(()));
                }
            }
        } else {
            for (i, &c) in node.children.iter().enumerate() {
                let lt = node
                    .keys
                    .get(i)
                    .ok_or_else(|| Error::corrupt(addr, "missing key"))?;
                let rt = node
                    .keys
                    .get(i.saturating_add(1))
                    .ok_or_else(|| Error::corrupt(addr, "missing key"))?;
                if f(lt, c, rt)?.is_break() {
                    return Ok(ControlFlow::Break(()));
                }
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// The number of nodes and their levels: `(nodes, depth)` where depth is the root's level
    /// plus one.
    pub fn node_count(&self, cache: &'c MetadataCache) -> Result<(u64, u8)> {
        let root = self.read(cache, self.root, None)?;
        let mut count = 0u64;
        self.count(cache, self.root, None, &mut count, &mut HashSet::new())?;
        Ok((count, root.level.saturating_add(1)))
    }

    fn count(
        &self,
        cache: &'c MetadataCache,
        addr: Addr,
        level: Option<u8>,
        count: &mut u64,
        seen: &mut HashSet<Addr>,
    ) -> Result<()> {
        let node = self.read_once(cache, addr, level, seen)?;
        *count = count.saturating_add(1);
        if node.level > 0 {
            let below = child_level(node.level, addr)?;
            for &c in &node.children {
                self.count(cache, c, Some(below), count, seen)?;
            }
        }
        Ok(())
    }

    /// Check the tree's structure and describe it: every level's nodes from left to right
    /// with their child counts. Checks that levels go down by one, that no node below the root
    /// is empty, and that the sibling links of every level chain its nodes in order with no
    /// sibling at either end.
    pub fn shape(&self, cache: &'c MetadataCache) -> Result<Vec<Vec<usize>>> {
        let root = self.read(cache, self.root, None)?;
        let depth = usize::from(root.level).saturating_add(1);
        let mut levels: Vec<LevelNodes<C::Key>> = (0..depth).map(|_| Vec::new()).collect();
        self.collect(cache, self.root, None, &mut levels, &mut HashSet::new())?;
        for level in &levels {
            let mut prev: Option<Addr> = None;
            for (i, (addr, node)) in level.iter().enumerate() {
                let next = level.get(i.saturating_add(1)).map(|(a, _)| *a);
                if node.left != prev || node.right != next {
                    return Err(Error::corrupt(
                        *addr,
                        format!(
                            "sibling links {:?}/{:?}, expected {prev:?}/{next:?}",
                            node.left, node.right
                        ),
                    ));
                }
                prev = Some(*addr);
            }
        }
        Ok(levels
            .iter()
            .rev()
            .map(|l| l.iter().map(|(_, n)| n.children.len()).collect())
            .collect())
    }

    fn collect(
        &self,
        cache: &'c MetadataCache,
        addr: Addr,
        level: Option<u8>,
        levels: &mut [LevelNodes<C::Key>],
        seen: &mut HashSet<Addr>,
    ) -> Result<()> {
        let node = self.read_once(cache, addr, level, seen)?;
        let below = node.level.checked_sub(1);
        let children = if node.level > 0 {
            node.children.clone()
        } else {
            Vec::new()
        };
        levels
            .get_mut(usize::from(node.level))
            .ok_or_else(|| Error::corrupt(addr, "level above the root"))?
            .push((addr, node));
        for c in children {
            self.collect(cache, c, below, levels, seen)?;
        }
        Ok(())
    }

    /// The bytes the tree's nodes occupy in the file (each node is allocated at full size).
    pub fn bytes_used(&self, cache: &'c MetadataCache) -> Result<u64> {
        Ok(self.node_count(cache)?.0.saturating_mul(self.node_len()))
    }

    /// Free every node, calling `f(left key, child)` for every leaf child first.
    pub fn delete<F>(self, cache: &'c MetadataCache, mut f: F) -> Result<()>
    where
        F: FnMut(&C::Key, Addr) -> Result<()>,
    {
        self.delete_node(cache, self.root, None, &mut f, &mut HashSet::new())
    }

    fn delete_node<F>(
        &self,
        cache: &'c MetadataCache,
        addr: Addr,
        level: Option<u8>,
        f: &mut F,
        seen: &mut HashSet<Addr>,
    ) -> Result<()>
    where
        F: FnMut(&C::Key, Addr) -> Result<()>,
    {
        let node = self.read_once(cache, addr, level, seen)?;
        if node.level > 0 {
            let below = child_level(node.level, addr)?;
            for &c in &node.children {
                self.delete_node(cache, c, Some(below), f, seen)?;
            }
        } else {
            for (k, &c) in node.keys.iter().zip(&node.children) {
                f(k, c)?;
            }
        }
        self.free_node(cache, addr)
    }
}

/// Insert `child` left (`right == false`) or right of child `idx`, with `md` as the key
/// between them, as libhdf5's `H5B__insert_child` does.
fn insert_child<K: NodeKey>(
    at: Addr,
    node: &mut Node<K>,
    idx: usize,
    child: Addr,
    right: bool,
    md: K,
) -> Result<()> {
    let key_pos = idx.saturating_add(1);
    let child_pos = if right { key_pos } else { idx };
    if key_pos > node.keys.len() || child_pos > node.children.len() {
        return Err(Error::corrupt(at, "insertion index out of range"));
    }
    node.keys.insert(key_pos, md);
    node.children.insert(child_pos, child);
    Ok(())
}

/// Make room in `node` for 2K children (and 2K + 1 keys), so that insertions up to a split do
/// not reallocate.
fn reserve<K: NodeKey>(node: &mut Node<K>, two_k: usize) {
    node.keys
        .reserve(two_k.saturating_add(1).saturating_sub(node.keys.len()));
    node.children
        .reserve(two_k.saturating_sub(node.children.len()));
}

impl<K> RightPath<'_, K>
where
    K: NodeKey + Send + Sync + 'static,
    K::Params: Send + Sync + 'static,
{
    /// The left key of the leaf's last child.
    fn last_lt(&self) -> Result<&K> {
        let leaf = self
            .nodes
            .last()
            .ok_or_else(|| Error::corrupt(Addr(0), "empty right-most path"))?;
        let node = leaf.node();
        node.children
            .len()
            .checked_sub(1)
            .and_then(|i| node.keys.get(i))
            .ok_or_else(|| Error::corrupt(leaf.addr(), "missing key"))
    }
}

/// `insert_child(node, last child, child, right, md)`: `child` becomes the last child, with
/// `md` as the key before the (unchanged) right key.
fn insert_last<K: NodeKey>(at: Addr, node: &mut Node<K>, child: Addr, md: K) -> Result<()> {
    if node.keys.len() != node.children.len().saturating_add(1) {
        return Err(Error::corrupt(at, "keys and children do not match"));
    }
    let rt = node
        .keys
        .last_mut()
        .ok_or_else(|| Error::corrupt(at, "missing key"))?;
    let rt = core::mem::replace(rt, md);
    node.keys.push(rt);
    node.children.push(child);
    Ok(())
}

/// A node reached from its parent must be at the level below it and hold children (`level`:
/// the expected level, `None` for the root, which may be an empty leaf).
fn check_level<K: NodeKey>(addr: Addr, node: &Node<K>, level: Option<u8>) -> Result<()> {
    check_level_of(addr, node.level, node.children.len(), level)
}

/// [`check_level`] of a node at `node_level` with `children` children.
#[inline]
fn check_level_of(addr: Addr, node_level: u8, children: usize, level: Option<u8>) -> Result<()> {
    if let Some(l) = level {
        if node_level != l {
            return Err(Error::corrupt(
                addr,
                format!("node level {node_level} where {l} was expected"),
            ));
        }
        if children == 0 {
            return Err(Error::corrupt(
                addr,
                "a node below the root has no children",
            ));
        }
    }
    Ok(())
}

/// One level of [`BTree::get`]: the answer, the child to descend to, or the leaf's child
/// and key for the class to finish with.
enum FindStep<K> {
    Done(bool),
    Descend(Addr, u8),
    Found(Addr, K),
}

/// Where [`BTree::descend_copies`] leaves a lookup.
enum CopyStep {
    /// The target is in no child: not found.
    Done,
    /// Go on from this node, expected at this level (`None`: the root).
    From(Addr, Option<u8>),
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;
    use h5chunk_format::btree1::GroupKey;

    /// The three-way search libhdf5 does, over keys as integer tuples: the model
    /// `search_flat` must agree with.
    fn search_model(keys: &[Vec<u64>], x: &[u64]) -> (usize, Ordering) {
        let (mut lo, mut hi) = (0usize, keys.len() - 1);
        let (mut idx, mut cmp) = (0usize, Ordering::Less);
        while lo < hi && cmp != Ordering::Equal {
            idx = (lo + hi) / 2;
            cmp = if x >= keys[idx + 1].as_slice() {
                Ordering::Greater
            } else if x < keys[idx].as_slice() {
                Ordering::Less
            } else {
                Ordering::Equal
            };
            if cmp == Ordering::Less {
                hi = idx;
            } else {
                lo = idx + 1;
            }
        }
        (idx, cmp)
    }

    proptest::proptest! {
        /// On keys in order, the flattened search finds the child the three-way search finds,
        /// for every rank the array path specialises and one it does not.
        #[test]
        fn flat_search_agrees_with_three_way(
            stride in 2usize..6,
            mut raw in proptest::collection::vec(proptest::collection::vec(0u64..6, 5), 2..70),
            x in proptest::collection::vec(0u64..7, 5),
        ) {
            let mut keys: Vec<Vec<u64>> = raw.iter_mut().map(|k| k[..stride].to_vec()).collect();
            keys.sort();
            keys.dedup();
            proptest::prop_assume!(keys.len() >= 2);
            let flat: Vec<u64> = keys.iter().flatten().copied().collect();
            let x = &x[..stride];
            let n = keys.len() - 1;
            let got = search_flat(&flat, x, n).unwrap();
            let want = search_model(&keys, x);
            proptest::prop_assert_eq!(got.1, want.1);
            if want.1 == Ordering::Equal {
                proptest::prop_assert_eq!(got.0, want.0);
            }
        }
    }

    proptest::proptest! {
        /// Keys nearly evenly spaced (a node of appended chunks), where the interpolated
        /// guess is tried: the answer is the binary search's, hit or miss.
        #[test]
        fn interpolated_search_agrees_with_binary_search(
            n in 2usize..70,
            step in 1u64..1000,
            start in 0u64..1000,
            jitter in proptest::collection::vec(0u64..3, 70),
            x0 in 0u64..250_000,
            x1 in 0u64..3,
        ) {
            let keys: Vec<[u64; 2]> = (0..n)
                .map(|i| [start + i as u64 * step * 3 + jitter[i], i as u64 % 2])
                .collect();
            let flat: Vec<u64> = keys.iter().flatten().copied().collect();
            let x = [x0, x1];
            let want = keys.partition_point(|k| k <= &x);
            proptest::prop_assert_eq!(at_or_before::<2>(&flat, &x, n - 1), Some(want));
            // A target equal to a key, where a hit must land exactly.
            let k = keys[x0 as usize % n];
            let want = keys.partition_point(|c| c <= &k);
            proptest::prop_assert_eq!(at_or_before::<2>(&flat, &k, n - 1), Some(want));
        }
    }

    #[test]
    fn flat_search_refuses_a_misshapen_node() {
        // Three children need four keys of the target's length.
        assert_eq!(search_flat(&[0, 0, 1, 0, 2, 0], &[1, 0], 3), None);
        assert_eq!(search_flat(&[0, 0, 1, 0], &[1, 0, 0], 1), None);
        assert_eq!(search_flat(&[], &[], 0), None);
        assert_eq!(
            search_flat(&[0, 0, 4, 0, 8, 0], &[5, 0], 2),
            Some((1, Ordering::Equal))
        );
    }

    #[test]
    fn split_points_are_libhdf5s() {
        // (2K × ratio) truncated, as libhdf5's cast of a double does.
        let nleft = |two_k: usize, r: f64| (two_k as f64 * r) as usize;
        assert_eq!(nleft(64, SPLIT_RATIOS[2]), 57);
        assert_eq!(nleft(64, SPLIT_RATIOS[1]), 32);
        assert_eq!(nleft(64, SPLIT_RATIOS[0]), 6);
        assert_eq!(nleft(16, SPLIT_RATIOS[2]), 14);
        assert_eq!(nleft(2, SPLIT_RATIOS[0]), 0);
    }

    #[test]
    fn insert_child_places_key_and_child() {
        let mut n: Node<GroupKey> = Node {
            level: 0,
            left: None,
            right: None,
            keys: vec![GroupKey(0), GroupKey(10)],
            children: vec![Addr(100)],
        };
        insert_child(Addr(0), &mut n, 0, Addr(200), true, GroupKey(5)).unwrap();
        assert_eq!(n.keys, vec![GroupKey(0), GroupKey(5), GroupKey(10)]);
        assert_eq!(n.children, vec![Addr(100), Addr(200)]);
        insert_child(Addr(0), &mut n, 0, Addr(300), false, GroupKey(1)).unwrap();
        assert_eq!(
            n.keys,
            vec![GroupKey(0), GroupKey(1), GroupKey(5), GroupKey(10)]
        );
        assert_eq!(n.children, vec![Addr(300), Addr(100), Addr(200)]);
        assert!(insert_child(Addr(0), &mut n, 9, Addr(1), true, GroupKey(1)).is_err());
    }
}
