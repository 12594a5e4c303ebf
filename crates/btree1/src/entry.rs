//! The cache entry class of a v1 B-tree node (`TREE`), for either node type.

use std::sync::OnceLock;

use h5chunk_cache::CacheEntry;
use h5chunk_format::btree1::{Node, NodeKey};
use h5chunk_format::{Addr, Sizes};

/// What decoding a node needs besides its bytes: the superblock's sizes, the tree's K and the
/// key parameters (`nd` for chunk keys).
#[derive(Clone, Copy, Debug)]
pub struct NodeCtx<P> {
    /// The superblock's sizes of offsets and lengths.
    pub sizes: Sizes,
    /// The tree's K: nodes hold up to 2K children.
    pub k: u16,
    /// The key parameters.
    pub params: P,
}

/// One node in the metadata cache, with what it needs to encode itself at full size.
///
/// Beside the node it may hold its keys flattened into one contiguous array of integers (for
/// classes whose keys are integer tuples, such as chunk offsets), built by the first lookup
/// that searches the node and dropped by every change to it: a lookup's binary search then
/// reads a few cache lines of packed offsets instead of one scattered key struct per probe.
///
/// Aligned to a cache line: behind the cache's lock, the lock word that every lookup writes
/// then has a line to itself, apart from the node every lookup reads.
#[derive(Debug)]
#[repr(align(64))]
pub struct NodeEntry<K: NodeKey> {
    node: Node<K>,
    /// Its encoding parameters.
    pub ctx: NodeCtx<K::Params>,
    /// The keys flattened for search; `None` inside when the class has no flat form.
    flat: OnceLock<Option<Box<[u64]>>>,
}

impl<K: NodeKey> NodeEntry<K> {
    /// An entry for `node`.
    pub fn new(node: Node<K>, ctx: NodeCtx<K::Params>) -> Self {
        NodeEntry {
            node,
            ctx,
            flat: OnceLock::new(),
        }
    }

    /// The node.
    #[inline]
    pub fn node(&self) -> &Node<K> {
        &self.node
    }

    /// The node for modification; its flattened keys are dropped, to be rebuilt by the next
    /// search.
    #[inline]
    pub fn node_mut(&mut self) -> &mut Node<K> {
        self.flat.take();
        &mut self.node
    }

    /// The keys flattened by `flatten`, built on first use after a change.
    #[inline]
    pub fn flat(&self, flatten: impl FnOnce(&[K]) -> Option<Box<[u64]>>) -> Option<&[u64]> {
        self.flat
            .get_or_init(|| flatten(&self.node.keys))
            .as_deref()
    }
}

impl<K> CacheEntry for NodeEntry<K>
where
    K: NodeKey + Send + Sync + 'static,
    K::Params: Send + Sync + 'static,
{
    type Context = NodeCtx<K::Params>;
    const TYPE_NAME: &'static str = "TREE";
    // v1 B-tree nodes carry no checksum (so a SWMR writer refuses to write them, as the SWMR
    // design requires).
    const CHECKSUMMED: bool = false;

    fn initial_load_len(ctx: &Self::Context) -> usize {
        Node::<K>::encoded_len(ctx.sizes, ctx.k, ctx.params)
    }

    fn decode(image: &[u8], at: Addr, ctx: &Self::Context) -> h5chunk_format::Result<Self> {
        let node = Node::decode(image, at, ctx.sizes, ctx.k, ctx.params)?;
        Ok(NodeEntry::new(node, *ctx))
    }

    fn image_len(&self) -> usize {
        Node::<K>::encoded_len(self.ctx.sizes, self.ctx.k, self.ctx.params)
    }

    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        self.node
            .encode(self.ctx.sizes, self.ctx.k, self.ctx.params, out)
    }
}
