//! The cache entry class of a v1 B-tree node (`TREE`), for either node type.

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
#[derive(Debug)]
pub struct NodeEntry<K: NodeKey> {
    /// The node.
    pub node: Node<K>,
    /// Its encoding parameters.
    pub ctx: NodeCtx<K::Params>,
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
        Ok(NodeEntry { node, ctx: *ctx })
    }

    fn image_len(&self) -> usize {
        Node::<K>::encoded_len(self.ctx.sizes, self.ctx.k, self.ctx.params)
    }

    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        self.node
            .encode(self.ctx.sizes, self.ctx.k, self.ctx.params, out)
    }
}
