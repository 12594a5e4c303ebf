//! Dense storage: the fractal heap and the v2 B-tree name indexes beside it, where a
//! new-style group keeps its links, and an object its attributes, once there are more than
//! its object header holds (netCDF-4 files, h5py with `track_order=True` or
//! `libver='latest'`, any object past 8 links or its header's room for attributes).
//!
//! Heaps are read with [`Heap`] and appended to through the functions of [`mod@write`] (a heap
//! being appended to is held open, its newest block in memory, in the file's [`OpenHeaps`]).
//! The file is reached through the [`Space`] seam: the crate above (`h5chunk`) implements it
//! over its store; [`CacheSpace`] implements it over a bare metadata cache. Heap blocks are
//! metadata-cache entries (`h5chunk_cache::Image`), each written after the blocks it points at (an
//! indirect block after its children, the header after its root and its newest block), and a
//! name index after its heap.
//!
//! ```
//! use std::sync::Arc;
//! use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache};
//! use h5chunk_dense::{CacheSpace, Space, write};
//! use h5chunk_format::message::{Link, LinkTarget};
//! use h5chunk_format::{Addr, Sizes};
//!
//! let cache = MetadataCache::new(Arc::new(MemStorage::new()), CacheConfig::default())?;
//! cache.allocator().allocate(96)?; // where a superblock would be
//! let space = CacheSpace::new(cache, Sizes::DEFAULT);
//! // Twenty links to object headers, in a heap and a name index of libhdf5's parameters.
//! let links: Vec<Link> = (0..20)
//!     .map(|i| Link::hard(format!("member{i:02}").into_bytes(), Addr(4096 + i * 512)))
//!     .collect();
//! let made = write::create(&space, space.heaps(), &links, false)?;
//! space.flush()?;
//! let found = h5chunk_dense::lookup(&space, made.heap, made.names, "member07")?;
//! assert_eq!(found.map(|l| l.name), Some(b"member07".to_vec()));
//! assert_eq!(h5chunk_dense::links(&space, made.heap, made.names)?.len(), 20);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod cache_space;
mod error;
mod read;
mod space;
pub mod write;

pub use cache_space::CacheSpace;
pub use error::{Error, Result};
pub use read::{
    AttributeOrder, AttributeOrders, CreationOrder, CreationOrders, Heap, HugeEntry, HugeObjects,
    LinkName, LinkNames, MAX_DEPTH, Names, attribute_messages, attribute_name, link_name, links,
    lookup, misordered,
};
pub use space::{BlockKind, DirectImage, DirectSummedImage, HeaderImage, IndirectImage, Space};
pub use write::OpenHeaps;
