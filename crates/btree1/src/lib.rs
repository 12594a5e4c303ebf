//! The version 1 B-tree of HDF5 over the `h5chunk-cache` metadata cache: node type 1 (the chunk
//! index of datasets with a version 3 layout, what h5py writes by default) and node type 0 (the
//! symbol tables of old-style groups, with their symbol table nodes and local heap).
//!
//! ```
//! use std::sync::Arc;
//!
//! use h5chunk_btree1::{Chunk, ChunkTree, DEFAULT_CHUNK_K, Group};
//! use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache, check_write_order};
//! use h5chunk_format::symbol_table_entry::Cache;
//! use h5chunk_format::{Addr, Sizes};
//!
//! # fn main() -> Result<(), h5chunk_btree1::Error> {
//! let storage = MemStorage::new();
//! let config = CacheConfig { record_trace: true, ..CacheConfig::default() };
//! let cache = MetadataCache::new(Arc::new(storage.clone()), config.clone())?;
//! cache.allocator().set_eoa(Addr(2048)); // room for a superblock and object headers
//!
//! // A chunk index for a 1-D dataset of 4-byte elements in chunks of 10 elements:
//! // the layout's dims are (10, 4), the last one being the element size.
//! let tree = ChunkTree::create(&cache, Sizes::DEFAULT, DEFAULT_CHUNK_K, &[10, 4])?;
//! let root = tree.addr();
//! for i in 0..200u64 {
//!     let addr = cache.allocator().allocate(40)?;
//!     tree.insert(&cache, &Chunk { offsets: [i * 10].into_iter().collect(), size: 40, filter_mask: 0, addr }, None)?;
//! }
//! assert_eq!(tree.depth(&cache)?, 2); // leaves of 57, 57, 57 and 29 chunks, as libhdf5 splits
//! assert_eq!(tree.get(&cache, &[150])?.map(|c| c.size), Some(40));
//! assert_eq!(tree.get(&cache, &[2000])?, None); // not allocated
//! assert!(tree.get(&cache, &[155]).is_err()); // not on the chunk grid
//!
//! // An old-style group with a few links.
//! let group = Group::create(&cache, Sizes::DEFAULT, 16, 4, 88)?;
//! for name in ["b", "a", "c"] {
//!     group.insert(&cache, name.as_bytes(), Addr(0x60), Cache::Nothing)?;
//! }
//! let names: Vec<_> = group.to_vec(&cache)?.into_iter().map(|l| l.name).collect();
//! assert_eq!(names, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
//!
//! // Children reach the file before their parents.
//! assert!(cache.flush()?.is_complete());
//! check_write_order(&cache.take_trace()).expect("children first");
//!
//! // Reopen over the same bytes.
//! let reader = MetadataCache::new(Arc::new(storage), CacheConfig::default())?;
//! let tree = ChunkTree::open(&reader, root, Sizes::DEFAULT, DEFAULT_CHUNK_K, &[10, 4])?;
//! assert_eq!(tree.to_vec(&reader)?.len(), 200);
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//!
//! - [`tree`]: the generic tree ([`BTree`]) and the key/record [`Class`] trait, following
//!   libhdf5's H5B algorithms so that libhdf5 reads and keeps extending our trees: the
//!   three-way search, the insertion paths, splits at 2K × {0.1, 0.5, 0.9} (sequential appends
//!   split 57/7 with K = 32), the root kept at its address (its old contents move to a new
//!   node), sibling links, removal without merging (an emptied tree is an empty leaf root).
//!   A [`Batch`] inserts as `insert` does, appending runs of targets along the right-most
//!   path without a descent per target (`ChunkTree::insert_many`).
//! - [`chunk`]: node type 1 ([`ChunkTree`]).
//! - [`group`]: node type 0 with the symbol table nodes and local heap ([`Group`]).
//!
//! # Where removal departs from libhdf5
//!
//! Insertions follow libhdf5 exactly: replaying the chunks of libhdf5-written trees gives the
//! same nodes, key for key (`tests/interop_shape.rs`). Removal keeps one invariant libhdf5's
//! `H5B__remove_helper` can break: a node's right key equals its separator in the parent. So a
//! raised left key is not propagated to the parent (a node's lower bound may lie below its first
//! key), a middle child of an internal node is removed with the key to its right, and the
//! right sibling's first key is never overwritten. Without this, an insertion after some
//! removals can make a chunk unreachable (the model test found such a sequence when the tree
//! followed libhdf5 to the letter). The trees stay valid for libhdf5, which reads an emptied
//! tree and keeps writing into it (`tests/interop.rs`).
//!
//! # Flush dependencies
//!
//! As the SWMR design (section 8) lists them: every internal node depends on each child node
//! it was modified through, a leaf of a chunk index on the chunk proxy given with an
//! insertion, a leaf of a group on its symbol table nodes, and a local heap header on its data
//! segment. v1 B-tree nodes have no checksum, so a SWMR writer's cache refuses to write them.
//!
//! # Hostile input
//!
//! Every descent checks that a child's level is its parent's minus one, which bounds it by
//! [`MAX_DEPTH`](h5chunk_format::btree1::MAX_DEPTH) levels and turns a cycle (a child that
//! points to itself or to an ancestor) into [`Error::Corrupt`]; a node below the root must
//! have children, keys must be in order.

#![forbid(unsafe_code)]

pub mod chunk;
pub mod entry;
mod error;
pub mod group;
pub mod tree;

pub use chunk::{Chunk, ChunkTree, DEFAULT_CHUNK_K, Located, Offsets};
pub use error::{Error, Result};
pub use group::{DEFAULT_GROUP_INTERNAL_K, DEFAULT_GROUP_LEAF_K, DEFAULT_HEAP_SIZE, Group, Link};
pub use tree::{BTree, Batch, Class};
