//! The kinds of chunk index: a leaf of the crate's module graph, so that errors can name an
//! index without depending on the index code.

use h5chunk_format::message::ChunkIndex;

/// The kinds of chunk index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IndexKind {
    /// Version 1 B-tree (the only index of layout version 3).
    BTree1,
    /// A single chunk, no index structure.
    Single,
    /// All chunks allocated contiguously, no index structure.
    Implicit,
    /// Fixed array.
    FixedArray,
    /// Extensible array.
    ExtensibleArray,
    /// Version 2 B-tree.
    BTree2,
    /// h5chunk's deterministic skip list; libhdf5 cannot read it. Only on explicit request.
    SkipList,
}

impl IndexKind {
    /// The name `h5chunk inspect` and the fixtures' manifest use.
    pub fn name(self) -> &'static str {
        match self {
            IndexKind::BTree1 => "btree1",
            IndexKind::Single => "single",
            IndexKind::Implicit => "implicit",
            IndexKind::FixedArray => "farray",
            IndexKind::ExtensibleArray => "earray",
            IndexKind::BTree2 => "btree2",
            IndexKind::SkipList => "skiplist",
        }
    }

    /// What the index is, in words: "extensible array", "version 2 B-tree", ...
    pub fn describe(self) -> &'static str {
        match self {
            IndexKind::BTree1 => "version 1 B-tree",
            IndexKind::Single => "single-chunk",
            IndexKind::Implicit => "implicit",
            IndexKind::FixedArray => "fixed array",
            IndexKind::ExtensibleArray => "extensible array",
            IndexKind::BTree2 => "version 2 B-tree",
            IndexKind::SkipList => "skip list",
        }
    }

    /// The kind of a layout message's index.
    pub fn of(index: &ChunkIndex) -> IndexKind {
        match index {
            ChunkIndex::BTreeV1 => IndexKind::BTree1,
            ChunkIndex::Single(_) => IndexKind::Single,
            ChunkIndex::Implicit => IndexKind::Implicit,
            ChunkIndex::FixedArray { .. } => IndexKind::FixedArray,
            ChunkIndex::ExtensibleArray(_) => IndexKind::ExtensibleArray,
            ChunkIndex::BTreeV2(_) => IndexKind::BTree2,
            ChunkIndex::SkipList(_) => IndexKind::SkipList,
        }
    }
}
