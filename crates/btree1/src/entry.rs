//! The cache entry class of a v1 B-tree node (`TREE`), for either node type.

use std::sync::OnceLock;

use h5chunk_cache::CacheEntry;
use h5chunk_format::btree1::{FlatNode, Node, NodeKey};
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
/// A node read from the file, for key types that have a search form (chunk keys), is decoded
/// straight into it ([`FlatNode`]): the keys' offsets as one array of integers, their sizes
/// and masks beside. A lookup binary-searches that array and builds only the key it finds; the
/// node with its key structs is built the first time something asks for it, and every change
/// goes through it (dropping the search form).
///
/// A node built in memory, or of a key type without a search form, may hold its keys
/// flattened the same way, built by the first lookup that searches it and dropped by every
/// change.
///
/// Aligned to a cache line: behind the cache's lock, the lock word that every lookup writes
/// then has a line to itself, apart from the node every lookup reads.
#[derive(Debug)]
#[repr(align(64))]
pub struct NodeEntry<K: NodeKey> {
    /// The node, once built (always, for a node not decoded into `decoded`).
    node: Option<Node<K>>,
    /// The node as decoded for search, while unchanged since it was read.
    decoded: Option<FlatNode>,
    /// The node built from `decoded` when something asked for it.
    built: OnceLock<Node<K>>,
    /// Its encoding parameters.
    pub ctx: NodeCtx<K::Params>,
    /// The node's keys flattened for search; `None` inside when the class has no flat form or
    /// the keys fail its checks.
    flat: OnceLock<Option<Box<[u64]>>>,
    /// Whether `decoded`'s keys passed the class's checks (see [`search_keys`]).
    ///
    /// [`search_keys`]: NodeEntry::search_keys
    decoded_ok: OnceLock<bool>,
}

/// What a lookup reads of one node: its level, children, and keys in flat form.
#[derive(Clone, Copy, Debug)]
pub struct SearchView<'a> {
    /// The node's level.
    pub level: u8,
    /// Its children.
    pub children: &'a [Addr],
}

impl<K: NodeKey> NodeEntry<K> {
    /// An entry for `node`.
    pub fn new(node: Node<K>, ctx: NodeCtx<K::Params>) -> Self {
        NodeEntry {
            node: Some(node),
            decoded: None,
            built: OnceLock::new(),
            ctx,
            flat: OnceLock::new(),
            decoded_ok: OnceLock::new(),
        }
    }

    /// An entry for a node read in its search form.
    fn from_flat(decoded: FlatNode, ctx: NodeCtx<K::Params>) -> Self {
        NodeEntry {
            node: None,
            decoded: Some(decoded),
            built: OnceLock::new(),
            ctx,
            flat: OnceLock::new(),
            decoded_ok: OnceLock::new(),
        }
    }

    /// The node built from its search form (an empty leaf if the key type cannot build it,
    /// which a key type with a search form always can).
    fn build(decoded: Option<&FlatNode>) -> Node<K> {
        decoded
            .and_then(K::node_from_flat)
            .unwrap_or_else(Node::new_leaf)
    }

    /// The node.
    #[inline]
    pub fn node(&self) -> &Node<K> {
        match &self.node {
            Some(node) => node,
            None => self
                .built
                .get_or_init(|| Self::build(self.decoded.as_ref())),
        }
    }

    /// The node for modification; its search forms are dropped, the flat keys to be rebuilt
    /// by the next search.
    #[inline]
    pub fn node_mut(&mut self) -> &mut Node<K> {
        self.flat.take();
        self.decoded_ok.take();
        let decoded = self.decoded.take();
        let built = self.built.take();
        self.node
            .get_or_insert_with(|| built.unwrap_or_else(|| Self::build(decoded.as_ref())))
    }

    /// The node's level and children, as a lookup reads them (without building the node).
    #[inline]
    pub fn view(&self) -> SearchView<'_> {
        match (&self.node, &self.decoded) {
            (None, Some(d)) => SearchView {
                level: d.level,
                children: &d.children,
            },
            _ => {
                let node = self.node();
                SearchView {
                    level: node.level,
                    children: &node.children,
                }
            }
        }
    }

    /// The keys in flat form for a lookup: the decoded ones if `check` accepts them, else
    /// those `flatten` makes of the node's keys (built on first use after a change). `None`
    /// when the class has no flat form or the keys fail its checks.
    #[inline]
    pub fn search_keys(
        &self,
        flatten: impl FnOnce(&[K]) -> Option<Box<[u64]>>,
        check: impl FnOnce(&[u64]) -> bool,
    ) -> Option<&[u64]> {
        match (&self.node, &self.decoded) {
            (None, Some(d)) => {
                (*self.decoded_ok.get_or_init(|| check(&d.words))).then_some(&*d.words)
            }
            _ => self.flat(flatten),
        }
    }

    /// Key `i`, built (a lookup's found key).
    #[inline]
    pub fn key(&self, i: usize) -> Option<K> {
        match (&self.node, &self.decoded) {
            (None, Some(d)) => K::key_from_flat(d, i),
            _ => self.node().keys.get(i).cloned(),
        }
    }

    /// Key `i` of a node read in flat form, as its integers and record word; `None` for a
    /// node built in memory.
    #[inline]
    pub fn flat_key(&self, i: usize) -> Option<(&[u64], u64)> {
        let d = self.decoded.as_ref().filter(|_| self.node.is_none())?;
        let start = i.checked_mul(d.stride)?;
        let words = d.words.get(start..start.checked_add(d.stride)?)?;
        Some((words, *d.records.get(i)?))
    }

    /// The keys flattened by `flatten`, built on first use after a change.
    #[inline]
    pub fn flat(&self, flatten: impl FnOnce(&[K]) -> Option<Box<[u64]>>) -> Option<&[u64]> {
        self.flat
            .get_or_init(|| flatten(&self.node().keys))
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
        if let Some(flat) = K::decode_flat_node(image, at, ctx.sizes, ctx.k, ctx.params) {
            return Ok(NodeEntry::from_flat(flat?, *ctx));
        }
        let node = Node::decode(image, at, ctx.sizes, ctx.k, ctx.params)?;
        Ok(NodeEntry::new(node, *ctx))
    }

    fn image_len(&self) -> usize {
        Node::<K>::encoded_len(self.ctx.sizes, self.ctx.k, self.ctx.params)
    }

    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        self.node()
            .encode(self.ctx.sizes, self.ctx.k, self.ctx.params, out)
    }
}
