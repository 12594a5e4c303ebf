//! The tree's metadata-cache entry classes: the header (`BTHD`), internal nodes (`BTIN`) and
//! leaves (`BTLF`), holding decoded records of the tree's record class.

use core::fmt;
use core::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use h5chunk_cache::CacheEntry;
use h5chunk_format::btree2::{ChildPointer, Geometry, Header, Node};
use h5chunk_format::{Addr, Error as FormatError, Sizes};

use crate::class::RecordClass;

/// The cached header.
#[derive(Debug)]
pub(crate) struct HeaderEntry {
    pub(crate) header: Header,
    pub(crate) sizes: Sizes,
}

impl CacheEntry for HeaderEntry {
    type Context = Sizes;
    const TYPE_NAME: &'static str = "BTHD";
    const CHECKSUMMED: bool = true;

    fn initial_load_len(sizes: &Sizes) -> usize {
        Header::encoded_len(*sizes)
    }

    fn decode(image: &[u8], at: Addr, sizes: &Sizes) -> h5chunk_format::Result<Self> {
        Ok(HeaderEntry {
            header: Header::decode(image, at, *sizes)?,
            sizes: *sizes,
        })
    }

    fn image_len(&self) -> usize {
        Header::encoded_len(self.sizes)
    }

    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        self.header.encode(self.sizes, out)
    }
}

/// What decoding a node needs: the class, the geometry, and what the parent says of the node
/// (its depth and record count, which the node itself does not store).
pub(crate) struct NodeCtx<C: RecordClass> {
    pub(crate) class: Arc<C>,
    pub(crate) sizes: Sizes,
    pub(crate) geom: Arc<Geometry>,
    pub(crate) depth: u16,
    pub(crate) nrec: u64,
}

/// A decoded node, leaf or internal.
pub(crate) struct NodeData<C: RecordClass> {
    pub(crate) class: Arc<C>,
    pub(crate) sizes: Sizes,
    pub(crate) geom: Arc<Geometry>,
    pub(crate) depth: u16,
    pub(crate) records: Vec<C::Record>,
    /// `records.len() + 1` pointers in an internal node; empty in a leaf.
    pub(crate) children: Vec<ChildPointer>,
}

impl<C: RecordClass> fmt::Debug for NodeData<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeData")
            .field("depth", &self.depth)
            .field("nrec", &self.records.len())
            .field("children", &self.children.len())
            .finish()
    }
}

impl<C: RecordClass> NodeData<C> {
    /// The node at `at`, and its keys in the class's flat form when its decoding made them.
    fn decode(
        image: &[u8],
        at: Addr,
        ctx: &NodeCtx<C>,
    ) -> h5chunk_format::Result<(Self, Option<Box<[u64]>>)> {
        let node = Node::decode(image, at, ctx.sizes, &ctx.geom, ctx.depth, ctx.nrec)?;
        if node.tree_type != ctx.class.tree_type() {
            return Err(FormatError::BadValue {
                structure: if ctx.depth == 0 { "BTLF" } else { "BTIN" },
                at: Addr(at.get().saturating_add(5)),
                field: "tree type",
                value: node.tree_type.into(),
            });
        }
        let mut records = Vec::new();
        // The records start after the signature, version and type (6 bytes).
        let first = Addr(at.get().saturating_add(6));
        let flat = ctx
            .class
            .decode_records(&node.records, first, &mut records)?;
        let data = NodeData {
            class: ctx.class.clone(),
            sizes: ctx.sizes,
            geom: ctx.geom.clone(),
            depth: ctx.depth,
            records,
            children: node.children,
        };
        Ok((data, flat))
    }

    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        let rs = self.geom.record_size();
        if rs == 0 {
            return Err(FormatError::Unencodable {
                structure: "v2 B-tree record",
                reason: "record size 0".into(),
            });
        }
        // Records straight into the node's image.
        Node::encode_parts(
            self.class.tree_type(),
            self.sizes,
            &self.geom,
            self.depth,
            self.records.len(),
            &self.children,
            out,
            |raw| self.class.encode_slots(&self.records, raw),
        )
    }
}

/// Which of the two node classes an entry is.
pub(crate) trait Kind: Send + Sync + 'static {
    const NAME: &'static str;
}

/// Leaves (`BTLF`).
#[derive(Debug)]
pub(crate) struct LeafKind;
impl Kind for LeafKind {
    const NAME: &'static str = "BTLF";
}

/// Internal nodes (`BTIN`).
#[derive(Debug)]
pub(crate) struct InternalKind;
impl Kind for InternalKind {
    const NAME: &'static str = "BTIN";
}

/// A node as the cache holds it, with its record keys flattened for lookups when the class
/// has a flat form (built by the first search after a change, dropped by every change): a
/// binary search then reads a few cache lines of packed integers, not one record per probe.
// A cache line of its own, apart from the lock word every lookup writes (as v1 B-tree nodes).
#[repr(align(64))]
pub(crate) struct NodeEntry<C: RecordClass, K: Kind> {
    data: NodeData<C>,
    flat: OnceLock<Option<Box<[u64]>>>,
    kind: PhantomData<K>,
}

impl<C: RecordClass, K: Kind> NodeEntry<C, K> {
    pub(crate) fn new(data: NodeData<C>) -> Self {
        NodeEntry {
            data,
            flat: OnceLock::new(),
            kind: PhantomData,
        }
    }

    /// The node.
    #[inline]
    pub(crate) fn data(&self) -> &NodeData<C> {
        &self.data
    }

    /// The node for modification; the flattened keys are dropped.
    #[inline]
    pub(crate) fn data_mut(&mut self) -> &mut NodeData<C> {
        self.flat.take();
        &mut self.data
    }

    /// The records' keys in the class's flat form, built on first use after a change.
    #[inline]
    pub(crate) fn flat(&self) -> Option<&[u64]> {
        self.flat
            .get_or_init(|| self.data.class.flatten(&self.data.records))
            .as_deref()
    }
}

impl<C: RecordClass, K: Kind> fmt::Debug for NodeEntry<C, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{:?}", K::NAME, self.data)
    }
}

impl<C: RecordClass, K: Kind> CacheEntry for NodeEntry<C, K> {
    type Context = NodeCtx<C>;
    const TYPE_NAME: &'static str = K::NAME;
    const CHECKSUMMED: bool = true;

    fn initial_load_len(ctx: &NodeCtx<C>) -> usize {
        // Nodes are allocated at their full size; reading the used part only would save little
        // and need a second read when the count is unknown.
        ctx.geom.node_size()
    }

    fn decode(image: &[u8], at: Addr, ctx: &NodeCtx<C>) -> h5chunk_format::Result<Self> {
        let (data, flat) = NodeData::decode(image, at, ctx)?;
        let entry = NodeEntry::new(data);
        if let Some(flat) = flat {
            // Fresh: nothing has set it yet.
            let _ = entry.flat.set(Some(flat));
        }
        Ok(entry)
    }

    fn image_len(&self) -> usize {
        self.data.geom.node_size()
    }

    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        self.data.encode(out)
    }

    /// A node's checksum follows its records (and child pointers); zeros pad it to the node
    /// size.
    fn checksum_at(&self, len: usize) -> Option<usize> {
        let at = Node::used_len(&self.data.geom, self.data.depth, self.data.records.len());
        (at.saturating_add(4) <= len).then_some(at)
    }
}

pub(crate) type LeafEntry<C> = NodeEntry<C, LeafKind>;
pub(crate) type InternalEntry<C> = NodeEntry<C, InternalKind>;
