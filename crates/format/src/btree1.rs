//! Version 1 B-tree node (`TREE`): the raw node of a group B-tree (node type 0) or a chunk
//! B-tree (node type 1). Search and insertion belong to the `btree1` crate; this module only
//! decodes and encodes one node.
//!
//! | field                 | size | notes                                               |
//! |-----------------------|------|-----------------------------------------------------|
//! | signature             | 4    | `TREE`                                              |
//! | node type             | 1    | 0 group nodes, 1 raw data chunk nodes               |
//! | node level            | 1    | 0 for a leaf                                        |
//! | entries used          | 2    | children in use, at most 2K                         |
//! | left sibling address  | O    | undefined if none                                   |
//! | right sibling address | O    | undefined if none                                   |
//! | key 0, child 0, ..., child n-1, key n | | n + 1 keys interleaved with n child addresses (O) |
//!
//! The node is allocated at full capacity, 2K children and 2K + 1 keys, with the unused tail
//! zero: 8 + 2O + 2K·O + (2K + 1)·key bytes. K is the superblock's "group internal node K"
//! for type 0 and "indexed storage internal node K" for type 1. A node with no children
//! stores no keys. No checksum.
//!
//! Keys:
//!
//! | node type | key                                                                          |
//! |-----------|------------------------------------------------------------------------------|
//! | 0         | L bytes: offset in the group's local heap of the largest name in the child   |
//! | 1         | chunk size (4), filter mask (4), `nd` × 8-byte element offsets, where `nd` is|
//! |           | the layout message's dimensionality (rank + 1; the last is the element-size slot) |

#![deny(missing_docs)]

use core::fmt::Debug;

use smallvec::SmallVec;

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};
use crate::sizes::Sizes;

/// The v1 B-tree node signature.
pub const SIGNATURE: [u8; 4] = *b"TREE";

/// The deepest node level accepted. libhdf5 splits a full node into two non-empty nodes and
/// adds a level only when the root splits, so every level multiplies the tree's content by at
/// least two; 64 levels would index more objects than a 64-bit file can hold. A larger level
/// is corruption, and bounding it bounds every descent (a cyclic corrupt tree must end in an
/// error, not a stack overflow).
pub const MAX_DEPTH: u8 = 64;

/// The largest `nd` (dimensionality including the element-size slot) a chunk key may have:
/// HDF5's maximum rank of 32, plus one.
pub const MAX_CHUNK_KEY_DIMS: u8 = 33;

const STRUCTURE: &str = "TREE";

/// A key type of one node type.
pub trait NodeKey: Sized + Clone + PartialEq + Debug {
    /// The "Node Type" byte of nodes with these keys.
    const NODE_TYPE: u8;
    /// What the key width depends on besides the superblock: `()` for group keys, `nd` for
    /// chunk keys.
    type Params: Copy + Debug;
    /// Check `params` before any key is decoded or encoded.
    fn check_params(params: Self::Params, at: Addr) -> Result<()>;
    /// The encoded key width in bytes.
    fn encoded_len(params: Self::Params, sizes: Sizes) -> usize;
    /// Decode one key.
    fn decode(d: &mut Decoder<'_>, params: Self::Params) -> Result<Self>;
    /// Encode one key.
    fn encode(&self, e: &mut Encoder<'_>, params: Self::Params) -> Result<()>;
    /// A node of these keys decoded into its search form ([`FlatNode`]), for key types that
    /// have one (chunk keys); `None`, the default, for the others.
    fn decode_flat_node(
        _bytes: &[u8],
        _at: Addr,
        _sizes: Sizes,
        _k: u16,
        _params: Self::Params,
    ) -> Option<Result<FlatNode>> {
        None
    }
    /// The node a [`FlatNode`] of these keys stands for, keys built.
    fn node_from_flat(_flat: &FlatNode) -> Option<Node<Self>> {
        None
    }
    /// Key `i` of a [`FlatNode`] of these keys.
    fn key_from_flat(_flat: &FlatNode, _i: usize) -> Option<Self> {
        None
    }
    /// [`Node::encode`] of a node of these keys in one pass, after its checks, when the key
    /// type has such a form for these sizes and parameters; `None`, the default, for the
    /// field-by-field encoding (which also reports whatever is unencodable).
    fn encode_node(
        _node: &Node<Self>,
        _sizes: Sizes,
        _total: usize,
        _params: Self::Params,
        _out: &mut Vec<u8>,
    ) -> Option<()> {
        None
    }
}

/// Node type 0 key: the byte offset of a name in the group's local heap.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct GroupKey(pub u64);

impl NodeKey for GroupKey {
    const NODE_TYPE: u8 = 0;
    type Params = ();

    fn check_params((): (), _at: Addr) -> Result<()> {
        Ok(())
    }

    fn encoded_len((): (), sizes: Sizes) -> usize {
        usize::from(sizes.lengths())
    }

    fn decode(d: &mut Decoder<'_>, (): ()) -> Result<Self> {
        d.length().map(GroupKey)
    }

    fn encode(&self, e: &mut Encoder<'_>, (): ()) -> Result<()> {
        e.length(self.0, "group key heap offset")
    }
}

/// Offsets of a chunk key encoded through a fixed buffer (rank 3 and the element-size slot).
const INLINE_KEY_OFFSETS: usize = 4;

/// Node type 1 key: one chunk's size, filter mask and element offsets.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ChunkKey {
    /// "Size of chunk in bytes" (the filtered size for a filtered dataset).
    pub chunk_size: u32,
    /// "Filter mask": bit i set means filter i was skipped for this chunk.
    pub filter_mask: u32,
    /// The chunk's element offsets, `nd` of them; the last is the element-size slot (0 for a
    /// real chunk).
    pub offsets: SmallVec<[u64; 4]>,
}

impl NodeKey for ChunkKey {
    const NODE_TYPE: u8 = 1;
    /// `nd`: the layout message's dimensionality (rank + 1).
    type Params = u8;

    fn check_params(nd: u8, at: Addr) -> Result<()> {
        if nd == 0 || nd > MAX_CHUNK_KEY_DIMS {
            return Err(Error::BadValue {
                structure: STRUCTURE,
                at,
                field: "chunk key dimensionality",
                value: u64::from(nd),
            });
        }
        Ok(())
    }

    fn encoded_len(nd: u8, _sizes: Sizes) -> usize {
        8usize.saturating_add(usize::from(nd).saturating_mul(8))
    }

    #[inline(always)]
    fn decode(d: &mut Decoder<'_>, nd: u8) -> Result<Self> {
        // One bounds check for the whole key (nodes hold up to 2K + 1 of them), then plain
        // little-endian reads of the slice.
        let raw = d.bytes(Self::encoded_len(nd, d.sizes()))?;
        let (head, offsets) = raw.split_at_checked(8).unwrap_or_default();
        let (size, mask) = head.split_at_checked(4).unwrap_or_default();
        Ok(ChunkKey {
            chunk_size: u32::from_le_bytes(size.try_into().unwrap_or_default()),
            filter_mask: u32::from_le_bytes(mask.try_into().unwrap_or_default()),
            offsets: {
                let words = offsets
                    .chunks_exact(8)
                    .map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default()));
                let n = usize::from(nd);
                if n <= 4 {
                    // Filled in place: no growth of the small vector key by key.
                    let mut buf = [0u64; 4];
                    for (b, w) in buf.iter_mut().zip(words) {
                        *b = w;
                    }
                    SmallVec::from_buf_and_len(buf, n)
                } else {
                    words.collect()
                }
            },
        })
    }

    fn decode_flat_node(
        bytes: &[u8],
        at: Addr,
        sizes: Sizes,
        k: u16,
        nd: u8,
    ) -> Option<Result<FlatNode>> {
        Some(Node::<ChunkKey>::decode_flat(bytes, at, sizes, k, nd))
    }

    /// 8-byte addresses and 2 to 4 offsets a key (chunks of 1 to 3 dimensions): the node as
    /// little-endian words, written into its zeroed space (a flush writes every node of an
    /// appended tree).
    fn encode_node(
        node: &Node<ChunkKey>,
        sizes: Sizes,
        total: usize,
        nd: u8,
        out: &mut Vec<u8>,
    ) -> Option<()> {
        if sizes.offsets() != 8 {
            return None;
        }
        let start = out.len();
        let done = match nd {
            2 => encode_words::<2>(node, total, out),
            3 => encode_words::<3>(node, total, out),
            4 => encode_words::<4>(node, total, out),
            _ => None,
        };
        if done.is_none() {
            out.truncate(start);
        }
        done
    }

    fn node_from_flat(flat: &FlatNode) -> Option<Node<Self>> {
        Some(flat.to_node())
    }

    #[inline]
    fn key_from_flat(flat: &FlatNode, i: usize) -> Option<Self> {
        flat.key(i)
    }

    fn encode(&self, e: &mut Encoder<'_>, nd: u8) -> Result<()> {
        if self.offsets.len() != usize::from(nd) {
            return Err(Error::Unencodable {
                structure: STRUCTURE,
                reason: format!(
                    "chunk key has {} offsets, node needs {nd}",
                    self.offsets.len()
                ),
            });
        }
        // Built on the stack and appended at once: nodes encode up to 2K + 1 keys.
        let mut buf = [0u8; 8 + 8 * INLINE_KEY_OFFSETS];
        if self.offsets.len() > INLINE_KEY_OFFSETS {
            e.u32(self.chunk_size);
            e.u32(self.filter_mask);
            for &o in &self.offsets {
                e.u64(o);
            }
            return Ok(());
        }
        let (head, words) = buf.split_at_mut(8);
        let (size, mask) = head.split_at_mut(4);
        size.copy_from_slice(&self.chunk_size.to_le_bytes());
        mask.copy_from_slice(&self.filter_mask.to_le_bytes());
        for (w, &o) in words.chunks_exact_mut(8).zip(&self.offsets) {
            w.copy_from_slice(&o.to_le_bytes());
        }
        // A length known at compile time per rank: the copy is a few moves, not a memcpy call.
        fn put<const N: usize>(e: &mut Encoder<'_>, buf: &[u8]) {
            if let Some(b) = buf.first_chunk::<N>() {
                e.bytes(b);
            }
        }
        match self.offsets.len() {
            0 => put::<8>(e, &buf),
            1 => put::<16>(e, &buf),
            2 => put::<24>(e, &buf),
            3 => put::<32>(e, &buf),
            _ => put::<40>(e, &buf),
        }
        Ok(())
    }
}

/// One v1 B-tree node with keys of type `K`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Node<K: NodeKey> {
    /// "Node Level": 0 for a leaf, whose children are symbol table nodes or chunks.
    pub level: u8,
    /// "Address of Left Sibling".
    pub left: Option<Addr>,
    /// "Address of Right Sibling".
    pub right: Option<Addr>,
    /// The keys: one more than the children, or none when there are no children.
    pub keys: Vec<K>,
    /// The child addresses ("Entries Used" of them).
    pub children: Vec<Addr>,
}

/// A group B-tree node (type 0).
pub type GroupNode = Node<GroupKey>;
/// A chunk B-tree node (type 1).
pub type ChunkNode = Node<ChunkKey>;

/// The "Node Type" byte of the node in `bytes` (to pick the key type before decoding).
pub fn node_type(bytes: &[u8], at: Addr) -> Result<u8> {
    let mut d = Decoder::new(bytes, at, Sizes::DEFAULT, STRUCTURE);
    d.signature(&SIGNATURE)?;
    d.u8()
}

/// A node's fixed fields, as `decode_header` checked them.
struct Header {
    level: u8,
    left: Option<Addr>,
    right: Option<Addr>,
    /// Entries used (children), checked against K and the node's length.
    used: usize,
}

/// The error for a child address at `at` that is the undefined address.
fn undefined_child(at: Addr) -> Error {
    Error::Invalid {
        structure: STRUCTURE,
        at,
        reason: "child address is the undefined address".into(),
    }
}

/// A child address, which must be defined; read in place (nodes hold up to 2K of them).
#[inline(always)]
fn child_address(d: &mut Decoder<'_>) -> Result<Addr> {
    let at = d.addr();
    let o = d.sizes().offsets();
    let undef = d.sizes().undef_offset();
    let raw = d.bytes(usize::from(o))?;
    let mut le = [0u8; 8];
    for (l, r) in le.iter_mut().zip(raw) {
        *l = *r;
    }
    let child = u64::from_le_bytes(le);
    if child == undef {
        return Err(undefined_child(at));
    }
    Ok(Addr(child))
}

/// A chunk node decoded for search: each key's offsets back to back as integers, its size
/// and filter mask beside, and no key structs. A lookup binary-searches `words` directly; the
/// keys are built ([`FlatNode::to_node`]) only when something needs the node itself.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FlatNode {
    /// "Node Level".
    pub level: u8,
    /// "Address of Left Sibling".
    pub left: Option<Addr>,
    /// "Address of Right Sibling".
    pub right: Option<Addr>,
    /// Integers per key (`nd`).
    pub stride: usize,
    /// Every key's offsets, `stride` each: children + 1 keys, none for an empty node.
    pub words: Padded<u64>,
    /// Every key's chunk size (low half) and filter mask (high half).
    pub records: Padded<u64>,
    /// The children.
    pub children: Padded<Addr>,
}

/// Elements kept a cache line or more away from any other allocation: lookups on several
/// threads read a node's arrays on every search, and an allocation of another thread's (its
/// allocator's bookkeeping, a lock) sharing a line with them would make every such read a
/// cache miss on the other core. Reads as the slice of its elements.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Padded<T> {
    buf: Vec<T>,
    len: usize,
}

/// Elements of padding before and after (two cache lines for 8-byte elements).
const PAD: usize = 16;

impl<T: Copy + Default> Padded<T> {
    /// `len` default elements.
    pub fn new(len: usize) -> Padded<T> {
        Padded {
            buf: vec![T::default(); len.saturating_add(2 * PAD)],
            len,
        }
    }

    /// The elements, to fill.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        let len = self.len;
        self.buf
            .get_mut(PAD..PAD.saturating_add(len))
            .unwrap_or_default()
    }
}

impl<T> core::ops::Deref for Padded<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.buf
            .get(PAD..PAD.saturating_add(self.len))
            .unwrap_or_default()
    }
}

/// The chunk size of a [`FlatNode`] record word (its low half).
#[inline]
pub fn record_size(record: u64) -> u32 {
    let [a, b, c, d, ..] = record.to_le_bytes();
    u32::from_le_bytes([a, b, c, d])
}

/// The filter mask of a [`FlatNode`] record word (its high half).
#[inline]
pub fn record_mask(record: u64) -> u32 {
    let [.., a, b, c, d] = record.to_le_bytes();
    u32::from_le_bytes([a, b, c, d])
}

impl FlatNode {
    /// Key `i`, built.
    pub fn key(&self, i: usize) -> Option<ChunkKey> {
        let start = i.checked_mul(self.stride)?;
        let offsets = self.words.get(start..start.checked_add(self.stride)?)?;
        let record = *self.records.get(i)?;
        Some(ChunkKey {
            chunk_size: record_size(record),
            filter_mask: record_mask(record),
            offsets: SmallVec::from_slice(offsets),
        })
    }

    /// The node with its keys built: what [`Node::decode`] gives for the same bytes.
    pub fn to_node(&self) -> Node<ChunkKey> {
        Node {
            level: self.level,
            left: self.left,
            right: self.right,
            keys: (0..self.records.len())
                .filter_map(|i| self.key(i))
                .collect(),
            children: self.children.to_vec(),
        }
    }
}

impl Node<ChunkKey> {
    /// Decode a chunk node at `at` into its search form: the checks of
    /// [`decode`](Node::decode), and the same node once [`FlatNode::to_node`] builds it.
    pub fn decode_flat(bytes: &[u8], at: Addr, sizes: Sizes, k: u16, nd: u8) -> Result<FlatNode> {
        let mut outer = Decoder::new(bytes, at, sizes, STRUCTURE);
        let (mut d, head) = Self::decode_header(&mut outer, at, sizes, k, nd)?;
        let n = head.used;
        let stride = usize::from(nd);
        let keys = if n == 0 { 0 } else { n.saturating_add(1) };
        let key_len = ChunkKey::encoded_len(nd, sizes);
        let o = usize::from(sizes.offsets());
        let entry_len = key_len.saturating_add(o);
        // Every entry and the last key under one bounds check, then plain reads of the slice.
        let start = d.addr();
        let body = d.bytes(if n == 0 {
            0
        } else {
            n.saturating_mul(entry_len).saturating_add(key_len)
        })?;
        let mut words = Padded::<u64>::new(keys.saturating_mul(stride));
        let mut records = Padded::<u64>::new(keys);
        let mut children = Padded::<Addr>::new(n);
        let undef = sizes.undef_offset();
        // 8-byte addresses and 2 to 4 offsets a key (chunks of 1 to 3 dimensions): every
        // field a whole word, the entry's shape known at compile time.
        let filled = match (o, stride) {
            (8, 2) => fill_words::<2>(body, &mut words, &mut records, &mut children, undef),
            (8, 3) => fill_words::<3>(body, &mut words, &mut records, &mut children, undef),
            (8, 4) => fill_words::<4>(body, &mut words, &mut records, &mut children, undef),
            _ => None,
        };
        match filled {
            Some(Ok(())) => {
                return Ok(FlatNode {
                    level: head.level,
                    left: head.left,
                    right: head.right,
                    stride,
                    words,
                    records,
                    children,
                });
            }
            Some(Err(i)) => {
                let at = i
                    .checked_mul(entry_len)
                    .and_then(|x| x.checked_add(key_len))
                    .map_or(start, |x| Addr(start.get().wrapping_add(x as u64)));
                return Err(undefined_child(at));
            }
            None => {}
        }
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or_default());
        let slots = children.as_mut_slice();
        let entries = words
            .as_mut_slice()
            .chunks_exact_mut(stride)
            .zip(records.as_mut_slice())
            .zip(body.chunks(entry_len));
        for (i, ((w, r), entry)) in entries.enumerate() {
            let (key, child) = entry.split_at_checked(key_len).unwrap_or_default();
            let (head, offsets) = key.split_at_checked(8).unwrap_or_default();
            *r = word(head);
            for (x, b) in w.iter_mut().zip(offsets.as_chunks::<8>().0) {
                *x = u64::from_le_bytes(*b);
            }
            if let Some(slot) = slots.get_mut(i) {
                let addr = match child.first_chunk::<8>() {
                    Some(b) => u64::from_le_bytes(*b),
                    None => {
                        let mut le = [0u8; 8];
                        for (l, b) in le.iter_mut().zip(child) {
                            *l = *b;
                        }
                        u64::from_le_bytes(le)
                    }
                };
                if addr == undef {
                    let at = i
                        .checked_mul(entry_len)
                        .and_then(|x| x.checked_add(key_len))
                        .map_or(start, |x| Addr(start.get().wrapping_add(x as u64)));
                    return Err(undefined_child(at));
                }
                *slot = Addr(addr);
            }
        }
        Ok(FlatNode {
            level: head.level,
            left: head.left,
            right: head.right,
            stride,
            words,
            records,
            children,
        })
    }
}

/// [`ChunkKey::encode_node`] for keys of `N` offsets: header word, siblings, then each key's
/// record word and offsets followed by its child, the last key, zeros to `total` bytes. `None`
/// (with `out` possibly grown, for the caller to cut back) for a node the field-by-field
/// encoding must check: a key of another rank, an address that does not fit.
#[inline(always)]
fn encode_words<const N: usize>(
    node: &Node<ChunkKey>,
    total: usize,
    out: &mut Vec<u8>,
) -> Option<()> {
    let used = node.children.len();
    let undef = u64::MAX;
    let fits = |a: Option<Addr>| a.is_none_or(|a| a.get() != undef);
    if node.keys.iter().any(|k| k.offsets.len() != N)
        || !fits(node.left)
        || !fits(node.right)
        || node.children.iter().any(|c| c.get() == undef)
    {
        return None;
    }
    let [u0, u1] = u16::try_from(used).ok()?.to_le_bytes();
    let [s0, s1, s2, s3] = SIGNATURE;
    let start = out.len();
    out.resize(start.checked_add(total)?, 0);
    let (words, _) = out.get_mut(start..)?.as_chunks_mut::<8>();
    let (head, body) = words.split_at_mut_checked(3)?;
    let [w0, w1, w2] = head else {
        return None;
    };
    *w0 = [s0, s1, s2, s3, ChunkKey::NODE_TYPE, node.level, u0, u1];
    *w1 = node.left.map_or(undef, Addr::get).to_le_bytes();
    *w2 = node.right.map_or(undef, Addr::get).to_le_bytes();
    let entry = N.checked_add(2)?;
    let (entries, rest) = body.split_at_mut_checked(used.checked_mul(entry)?)?;
    for ((e, k), c) in entries
        .chunks_exact_mut(entry)
        .zip(&node.keys)
        .zip(&node.children)
    {
        let (h, tail) = e.split_first_mut()?;
        let (offsets, child) = tail.split_at_mut_checked(N)?;
        *h = key_head(k);
        for (w, &o) in offsets.iter_mut().zip(&k.offsets) {
            *w = o.to_le_bytes();
        }
        *child.first_mut()? = c.get().to_le_bytes();
    }
    if let Some(last) = node.keys.get(used) {
        let (h, offsets) = rest.split_first_mut()?;
        *h = key_head(last);
        for (w, &o) in offsets.iter_mut().zip(&last.offsets) {
            *w = o.to_le_bytes();
        }
    }
    Some(())
}

/// A chunk key's first word: its chunk size, then its filter mask, little-endian.
#[inline(always)]
fn key_head(k: &ChunkKey) -> [u8; 8] {
    let [a, b, c, d] = k.chunk_size.to_le_bytes();
    let [e, f, g, h] = k.filter_mask.to_le_bytes();
    [a, b, c, d, e, f, g, h]
}

/// [`Node::decode_flat`]'s fill of `words`, `records` and `children` from a node's `body`
/// (its entries and last key) for keys of `N` offsets and 8-byte child addresses: an entry is
/// `N + 2` little-endian words (record, offsets, child), the last key `N + 1`. `None` when
/// the arrays do not have that shape (the caller's general loop then runs), `Some(Err(i))`
/// when child `i` is the undefined address.
#[inline(always)]
fn fill_words<const N: usize>(
    body: &[u8],
    words: &mut Padded<u64>,
    records: &mut Padded<u64>,
    children: &mut Padded<Addr>,
    undef: u64,
) -> Option<core::result::Result<(), usize>> {
    let (body, rest) = body.as_chunks::<8>();
    let n = children.len();
    let keys = records.len();
    let entry = N.checked_add(2)?;
    let fits = rest.is_empty()
        && words.len() == keys.checked_mul(N)?
        && if n == 0 {
            keys == 0 && body.is_empty()
        } else {
            keys == n.checked_add(1)?
                && body.len() == n.checked_mul(entry)?.checked_add(N.checked_add(1)?)?
        };
    if !fits {
        return None;
    }
    let (key_words, _) = words.as_mut_slice().as_chunks_mut::<N>();
    let (entries, last) = body.split_at_checked(n.checked_mul(entry)?)?;
    let mut keys_out = key_words.iter_mut().zip(records.as_mut_slice().iter_mut());
    for (i, ((e, child), (key, rec))) in entries
        .chunks_exact(entry)
        .zip(children.as_mut_slice().iter_mut())
        .zip(keys_out.by_ref())
        .enumerate()
    {
        let (head, tail) = e.split_first()?;
        let (offsets, c) = tail.split_at_checked(N)?;
        *rec = u64::from_le_bytes(*head);
        for (k, w) in key.iter_mut().zip(offsets) {
            *k = u64::from_le_bytes(*w);
        }
        let c = u64::from_le_bytes(*c.first()?);
        if c == undef {
            return Some(Err(i));
        }
        *child = Addr(c);
    }
    if let Some((key, rec)) = keys_out.next() {
        let (head, offsets) = last.split_first()?;
        *rec = u64::from_le_bytes(*head);
        for (k, w) in key.iter_mut().zip(offsets) {
            *k = u64::from_le_bytes(*w);
        }
    }
    Some(Ok(()))
}

impl<K: NodeKey> Node<K> {
    /// An empty leaf.
    pub fn new_leaf() -> Self {
        Node {
            level: 0,
            left: None,
            right: None,
            keys: Vec::new(),
            children: Vec::new(),
        }
    }

    /// The node's size on disk at full capacity (544 bytes for a group node with K = 16,
    /// 2096 for a 1-D chunk node with K = 32, at O = L = 8).
    pub fn encoded_len(sizes: Sizes, k: u16, params: K::Params) -> usize {
        let o = usize::from(sizes.offsets());
        let children = usize::from(k).saturating_mul(2);
        let keys = children.saturating_add(1);
        8usize
            .saturating_add(o.saturating_mul(2))
            .saturating_add(children.saturating_mul(o))
            .saturating_add(keys.saturating_mul(K::encoded_len(params, sizes)))
    }

    /// Decode a node at `at`; `bytes` must hold the whole allocated node. `k` is the tree's K
    /// and `params` the key parameters (`nd` for chunk nodes).
    pub fn decode(bytes: &[u8], at: Addr, sizes: Sizes, k: u16, params: K::Params) -> Result<Self> {
        let mut outer = Decoder::new(bytes, at, sizes, STRUCTURE);
        let (mut d, head) = Self::decode_header(&mut outer, at, sizes, k, params)?;
        let n = head.used;
        let mut keys = Vec::with_capacity(if n == 0 { 0 } else { n.saturating_add(1) });
        let mut children = Vec::with_capacity(n);
        for _ in 0..n {
            keys.push(K::decode(&mut d, params)?);
            children.push(child_address(&mut d)?);
        }
        if n > 0 {
            keys.push(K::decode(&mut d, params)?);
        }
        Ok(Node {
            level: head.level,
            left: head.left,
            right: head.right,
            keys,
            children,
        })
    }

    /// Check the node's fixed fields: the decoder over the whole node, positioned at its first
    /// key, and what the fields say.
    fn decode_header<'a>(
        outer: &mut Decoder<'a>,
        at: Addr,
        sizes: Sizes,
        k: u16,
        params: K::Params,
    ) -> Result<(Decoder<'a>, Header)> {
        if k == 0 {
            return Err(outer.bad_value(at, "node K", 0));
        }
        K::check_params(params, at)?;
        let mut d = outer.sub(Self::encoded_len(sizes, k, params))?;
        d.signature(&SIGNATURE)?;
        let type_at = d.addr();
        let node_type = d.u8()?;
        if node_type != K::NODE_TYPE {
            return Err(d.bad_value(type_at, "node type", u64::from(node_type)));
        }
        let level_at = d.addr();
        let level = d.u8()?;
        if level > MAX_DEPTH {
            return Err(d.bad_value(level_at, "node level", u64::from(level)));
        }
        let used_at = d.addr();
        let used = d.u16()?;
        if usize::from(used) > usize::from(k).saturating_mul(2) {
            return Err(d.bad_value(used_at, "entries used", u64::from(used)));
        }
        let left = d.offset()?;
        let right = d.offset()?;
        let key_len = K::encoded_len(params, sizes);
        let entry_len = key_len.saturating_add(usize::from(sizes.offsets()));
        let used = d.check_count(u64::from(used), entry_len)?;
        Ok((
            d,
            Header {
                level,
                left,
                right,
                used,
            },
        ))
    }

    /// Append the node at full capacity, the unused tail zero.
    pub fn encode(&self, sizes: Sizes, k: u16, params: K::Params, out: &mut Vec<u8>) -> Result<()> {
        let unencodable = |reason: String| Error::Unencodable {
            structure: STRUCTURE,
            reason,
        };
        let used = self.children.len();
        if k == 0 || used > usize::from(k).saturating_mul(2) {
            return Err(unencodable(format!(
                "{used} children do not fit a node with K = {k}"
            )));
        }
        let keys_expected = if used == 0 { 0 } else { used.saturating_add(1) };
        if self.keys.len() != keys_expected {
            return Err(unencodable(format!(
                "{} keys for {used} children (need {keys_expected})",
                self.keys.len()
            )));
        }
        if self.level > MAX_DEPTH {
            return Err(unencodable(format!(
                "level {} exceeds {MAX_DEPTH}",
                self.level
            )));
        }
        let total = Self::encoded_len(sizes, k, params);
        if K::encode_node(self, sizes, total, params, out).is_some() {
            return Ok(());
        }
        out.reserve(total);
        let mut e = Encoder::new(out, sizes, STRUCTURE);
        e.bytes(&SIGNATURE);
        e.u8(K::NODE_TYPE);
        e.u8(self.level);
        e.u16(u16::try_from(used).map_err(|_| unencodable("too many children".to_owned()))?);
        e.offset(self.left, "left sibling address")?;
        e.offset(self.right, "right sibling address")?;
        for (key, child) in self.keys.iter().zip(&self.children) {
            key.encode(&mut e, params)?;
            e.offset(Some(*child), "child address")?;
        }
        if let Some(last) = self.keys.get(used) {
            last.encode(&mut e, params)?;
        }
        e.zeros(total.saturating_sub(e.position()));
        Ok(())
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use smallvec::smallvec;

    const S: Sizes = Sizes::DEFAULT;

    /// The first 48 bytes of the root group's B-tree node at 0x88 of the earliest-format file
    /// (docs/format/file-format.md §9.5); the rest of its 544 bytes is zero.
    #[rustfmt::skip]
    const GROUP_HEAD: [u8; 48] = [
        b'T', b'R', b'E', b'E',             // signature
        0,                                  // node type 0: group
        0,                                  // level 0: leaf
        1, 0,                               // entries used 1
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // left sibling: none
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // right sibling: none
        0, 0, 0, 0, 0, 0, 0, 0,             // key 0: heap offset 0 ("")
        0x30, 0x04, 0, 0, 0, 0, 0, 0,       // child 0: SNOD at 0x430
        8, 0, 0, 0, 0, 0, 0, 0,             // key 1: heap offset 8 ("d")
    ];

    /// A 1-D chunk B-tree leaf with two chunks (docs/format/chunk-index-format.md §4.1), first 112 bytes
    /// of 2096.
    #[rustfmt::skip]
    const CHUNK_HEAD: [u8; 112] = [
        b'T', b'R', b'E', b'E',             // signature
        1,                                  // node type 1: raw data chunks
        0,                                  // level 0: leaf
        2, 0,                               // entries used 2
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // left sibling: none
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // right sibling: none
        0x14, 0, 0, 0,                      // key 0: chunk size 20
        0, 0, 0, 0,                         //   filter mask 0
        0, 0, 0, 0, 0, 0, 0, 0,             //   offset 0
        0, 0, 0, 0, 0, 0, 0, 0,             //   element-size slot 0
        0xa5, 0x23, 0, 0, 0, 0, 0, 0,       // child 0: chunk at 0x23a5
        0x14, 0, 0, 0,                      // key 1: chunk size 20
        0, 0, 0, 0,                         //   filter mask 0
        5, 0, 0, 0, 0, 0, 0, 0,             //   offset 5
        0, 0, 0, 0, 0, 0, 0, 0,             //   element-size slot 0
        0xb9, 0x23, 0, 0, 0, 0, 0, 0,       // child 1: chunk at 0x23b9
        0, 0, 0, 0,                         // key 2: chunk size 0
        0, 0, 0, 0,                         //   filter mask 0
        5, 0, 0, 0, 0, 0, 0, 0,             //   offset 5
        4, 0, 0, 0, 0, 0, 0, 0,             //   element-size slot 4
    ];

    fn full(head: &[u8], len: usize) -> Vec<u8> {
        let mut v = head.to_vec();
        v.resize(len, 0);
        v
    }

    #[test]
    fn decode_group_node() {
        assert_eq!(GroupNode::encoded_len(S, 16, ()), 544);
        let bytes = full(&GROUP_HEAD, 544);
        assert_eq!(node_type(&bytes, Addr(0x88)).unwrap(), 0);
        let node = GroupNode::decode(&bytes, Addr(0x88), S, 16, ()).unwrap();
        assert_eq!(node.level, 0);
        assert_eq!((node.left, node.right), (None, None));
        assert_eq!(node.keys, vec![GroupKey(0), GroupKey(8)]);
        assert_eq!(node.children, vec![Addr(0x430)]);
        let mut out = Vec::new();
        node.encode(S, 16, (), &mut out).unwrap();
        assert_eq!(out, bytes);
    }

    #[test]
    fn decode_chunk_node() {
        assert_eq!(ChunkNode::encoded_len(S, 32, 2), 2096);
        let bytes = full(&CHUNK_HEAD, 2096);
        let node = ChunkNode::decode(&bytes, Addr(0x800), S, 32, 2).unwrap();
        assert_eq!(node.children, vec![Addr(0x23a5), Addr(0x23b9)]);
        assert_eq!(
            node.keys[2],
            ChunkKey {
                chunk_size: 0,
                filter_mask: 0,
                offsets: smallvec![5, 4]
            }
        );
        let mut out = Vec::new();
        node.encode(S, 32, 2, &mut out).unwrap();
        assert_eq!(out, bytes);
    }

    #[test]
    fn roundtrip_empty_and_internal_nodes() {
        let empty = ChunkNode::new_leaf();
        let mut out = Vec::new();
        empty.encode(S, 4, 3, &mut out).unwrap();
        assert_eq!(out.len(), ChunkNode::encoded_len(S, 4, 3));
        assert_eq!(ChunkNode::decode(&out, Addr(0), S, 4, 3).unwrap(), empty);

        let sizes = Sizes::new(4, 4, Addr(0)).unwrap();
        let node = GroupNode {
            level: 2,
            left: Some(Addr(0x100)),
            right: None,
            keys: vec![GroupKey(0), GroupKey(8), GroupKey(24)],
            children: vec![Addr(0x200), Addr(0x300)],
        };
        let mut out = Vec::new();
        node.encode(sizes, 1, (), &mut out).unwrap();
        assert_eq!(
            GroupNode::decode(&out, Addr(0), sizes, 1, ()).unwrap(),
            node
        );
        assert!(node.encode(sizes, 0, (), &mut Vec::new()).is_err());
        let mut bad = node.clone();
        bad.keys.pop();
        assert!(matches!(
            bad.encode(sizes, 1, (), &mut Vec::new()),
            Err(Error::Unencodable { .. })
        ));
    }

    #[test]
    fn rejects_bad_nodes() {
        let bytes = full(&GROUP_HEAD, 544);
        // Wrong node type for the key type.
        assert!(matches!(
            ChunkNode::decode(&full(&GROUP_HEAD, 2096), Addr(0), S, 32, 2),
            Err(Error::BadValue {
                field: "node type",
                ..
            })
        ));
        let mut b = bytes.clone();
        b[5] = MAX_DEPTH + 1;
        assert!(matches!(
            GroupNode::decode(&b, Addr(0), S, 16, ()),
            Err(Error::BadValue {
                field: "node level",
                ..
            })
        ));
        let mut b = bytes.clone();
        b[6] = 33;
        assert!(matches!(
            GroupNode::decode(&b, Addr(0x88), S, 16, ()),
            Err(Error::BadValue {
                field: "entries used",
                at: Addr(0x8e),
                ..
            })
        ));
        let mut b = bytes.clone();
        b[32..40].copy_from_slice(&[0xff; 8]);
        assert!(GroupNode::decode(&b, Addr(0), S, 16, ()).is_err());
        assert!(ChunkNode::decode(&full(&CHUNK_HEAD, 2096), Addr(0), S, 32, 0).is_err());
        assert!(ChunkNode::decode(&full(&CHUNK_HEAD, 2096), Addr(0), S, 32, 34).is_err());
    }

    #[test]
    fn rejects_truncation() {
        let bytes = full(&GROUP_HEAD, 544);
        for n in 0..bytes.len() {
            assert!(
                GroupNode::decode(&bytes[..n], Addr(0), S, 16, ()).is_err(),
                "prefix {n}"
            );
        }
        let bytes = full(&CHUNK_HEAD, 2096);
        for n in 0..bytes.len() {
            assert!(
                ChunkNode::decode(&bytes[..n], Addr(0), S, 32, 2).is_err(),
                "prefix {n}"
            );
        }
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(
            mut bytes in proptest::collection::vec(any::<u8>(), 0..700),
            k in 0u16..8,
            nd in 0u8..40,
        ) {
            let _ = node_type(&bytes, Addr(0));
            let _ = GroupNode::decode(&bytes, Addr(0), S, k, ());
            let _ = ChunkNode::decode(&bytes, Addr(0), S, k, nd);
            if bytes.len() >= 8 {
                bytes[..4].copy_from_slice(&SIGNATURE);
                bytes[5] %= 4;
                bytes[7] = 0;
                bytes[4] = 0;
                let _ = GroupNode::decode(&bytes, Addr(0), S, k, ());
                bytes[4] = 1;
                let _ = ChunkNode::decode(&bytes, Addr(0), S, k, nd);
            }
        }

        /// The one-pass encoding of chunk nodes (2 to 4 offsets a key) gives a node of the
        /// full size that the field-by-field decoding reads back as the same node; a key of
        /// another rank is refused as before.
        #[test]
        fn chunk_node_encoding_roundtrips(
            nd in 2u8..5,
            keys in proptest::collection::vec(
                (any::<u32>(), any::<u32>(), proptest::collection::vec(any::<u64>(), 4)),
                2..9,
            ),
            children in proptest::collection::vec(0u64..u64::MAX, 8),
            level in 0u8..3,
            left in proptest::option::of(0u64..u64::MAX),
            bad_rank in any::<bool>(),
        ) {
            let n = keys.len() - 1;
            let mut node = ChunkNode {
                level,
                left: left.map(Addr),
                right: Some(Addr(0x300)),
                keys: keys
                    .iter()
                    .map(|(size, mask, o)| ChunkKey {
                        chunk_size: *size,
                        filter_mask: *mask,
                        offsets: o[..usize::from(nd)].iter().copied().collect(),
                    })
                    .collect(),
                children: children[..n].iter().map(|&c| Addr(c)).collect(),
            };
            if bad_rank {
                node.keys[n].offsets.push(1);
            }
            let mut out = vec![7u8; 3];
            let r = node.encode(S, 4, nd, &mut out);
            if bad_rank {
                let refused = matches!(r, Err(Error::Unencodable { .. }));
                prop_assert!(refused);
            } else {
                r.unwrap();
                prop_assert_eq!(&out[..3], &[7u8; 3][..]);
                prop_assert_eq!(out.len() - 3, ChunkNode::encoded_len(S, 4, nd));
                prop_assert_eq!(ChunkNode::decode(&out[3..], Addr(0), S, 4, nd).unwrap(), node);
            }
        }

        /// The search form decodes what the node decoding does, and refuses what it refuses.
        #[test]
        fn flat_decoding_agrees_with_node_decoding(
            keys in proptest::collection::vec(
                (any::<u32>(), any::<u32>(), proptest::collection::vec(any::<u64>(), 3)),
                0..9,
            ),
            children in proptest::collection::vec(1u64..u64::MAX, 8),
            level in 0u8..3,
            flip in proptest::option::of((0usize..400, any::<u8>())),
            cut in proptest::option::of(0usize..400),
        ) {
            let n = keys.len().saturating_sub(1);
            let node = ChunkNode {
                level,
                left: Some(Addr(0x100)),
                right: None,
                keys: keys
                    .iter()
                    .map(|(size, mask, o)| ChunkKey {
                        chunk_size: *size,
                        filter_mask: *mask,
                        offsets: o.iter().copied().collect(),
                    })
                    .collect(),
                children: children[..n].iter().map(|&c| Addr(c)).collect(),
            };
            let node = if keys.len() == 1 { ChunkNode::new_leaf() } else { node };
            let mut bytes = Vec::new();
            node.encode(S, 4, 3, &mut bytes).unwrap();
            if let Some((at, v)) = flip {
                let at = at % bytes.len();
                bytes[at] ^= v;
            }
            if let Some(cut) = cut {
                bytes.truncate(cut);
            }
            let whole = ChunkNode::decode(&bytes, Addr(0), S, 4, 3);
            let flat = ChunkNode::decode_flat(&bytes, Addr(0), S, 4, 3);
            match (whole, flat) {
                (Ok(whole), Ok(flat)) => {
                    prop_assert_eq!(flat.to_node(), whole);
                    let built = flat.to_node();
                    for i in 0..flat.records.len() {
                        prop_assert_eq!(flat.key(i), built.keys.get(i).cloned());
                    }
                }
                (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
                (a, b) => prop_assert!(false, "decode {:?} but decode_flat {:?}", a, b),
            }
        }
    }
}
