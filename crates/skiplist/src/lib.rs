//! The deterministic reversed skip list of Koziol's 2007 design paper: h5chunk's own, opt-in
//! chunk index for datasets with one unlimited dimension. The byte layout is specified in
//! `docs/format/skiplist.md`; libhdf5 does not know it.
//!
//! ```
//! use std::sync::Arc;
//!
//! use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache, check_write_order};
//! use h5chunk_format::{Addr, Sizes, chunk_record::ChunkRecord};
//! use h5chunk_skiplist::{Lookup, Params, SkipList};
//!
//! # fn main() -> Result<(), h5chunk_skiplist::Error> {
//! let storage = MemStorage::new();
//! let config = CacheConfig { record_trace: true, ..CacheConfig::default() };
//! let cache = MetadataCache::new(Arc::new(storage.clone()), config)?;
//!
//! // A 2-D dataset (unlimited, 50) with chunks (30, 25): two chunk slots per step of the
//! // unlimited dimension, four steps per supernode.
//! let params = Params { steps_per_supernode: 4, group_len: 2, ..Params::default() };
//! let list = SkipList::create(&cache, Sizes::DEFAULT, params)?;
//!
//! // Append: extend to cover 10 steps (3 supernodes), then record where chunks are.
//! list.extend(&cache, 10)?;
//! let slot = list.slot_index(7, 1)?; // step 7, second chunk of the step
//! list.insert(&cache, slot, ChunkRecord { addr: Some(Addr(0x10_000)), size: 0, mask: 0 })?;
//! assert!(cache.flush()?.is_complete());
//! // Supernodes reached the file before the tail that makes them visible.
//! check_write_order(&cache.take_trace()).expect("children first");
//!
//! // A reader with its own cache sees the list the tail describes.
//! let reader = MetadataCache::new(Arc::new(storage), CacheConfig::swmr_reader())?;
//! let list = SkipList::open(&reader, list.addr(), Sizes::DEFAULT)?;
//! assert_eq!(list.len(&reader)?, 20);
//! assert_eq!(list.get(&reader, slot)?.addr, Some(Addr(0x10_000)));
//! assert_eq!(list.get_with(&reader, Lookup::BinaryTree, 0)?.addr, None);
//! let mut seen = Vec::new();
//! list.for_each(&reader, |i, r| if r.addr.is_some() { seen.push(i) })?;
//! assert_eq!(seen, vec![slot]);
//! # Ok(())
//! # }
//! ```
//!
//! # The structure (paper sections in parentheses)
//!
//! - A **tail node** (`SKLT`, §VI) instead of a head: it holds the list's parameters, the
//!   number of steps of the unlimited dimension it covers, and, for every level, pointers to
//!   the right-most (§XIII) and left-most (§XIV) supernode of that height and to the ghost of
//!   that level (§XII, §XV). It has a fixed size and is rewritten in place, never moved.
//! - **Supernodes** (`SKLS`, §XI) of a configurable number of steps, each step a group of
//!   chunk slots (§XXI), with back pointers and forward ("inner") pointers at every level of
//!   their height. Heights are deterministic (§VIII): supernode `k` has height `tz(k) + 1`, so
//!   the levels form a balanced binary tree. Keys are implicit (§IX): which supernode holds a
//!   slot and the route to it are computed from the number of steps, never probed.
//! - **Ghosts** (§XII, §XV): space reserved for the next supernode of each height, which the
//!   right-most supernodes already point forward to; a new supernode takes its ghost's space,
//!   so no written supernode is ever rewritten to gain a forward pointer.
//!
//! Lookups follow planned routes for each of the paper's variants ([`Lookup`]); the shortest
//! route of each is computed by [`shape::plan`]. The tail depends (a cache flush dependency)
//! on every supernode dirtied since its last write, so a reader always sees the consistent
//! prefix the last written tail describes (§VII, §XI).
//!
//! [`measure::access_counts`] runs the paper's Table 1 experiment (every supernode looked up
//! from the tail, supernode reads counted through the cache's statistics); the example
//! `access_table` prints it (`cargo run -p h5chunk-skiplist --example access_table --
//! --heights 3-12`, or `--supernodes N`).
//!
//! What this crate does not have: the paper's later steps (index nodes, §XVI onwards, which
//! became the extensible array), concurrent writers, and any meaning of slots beyond a
//! [`ChunkRecord`](h5chunk_format::chunk_record::ChunkRecord): the dataset crate maps chunk
//! coordinates to slots.

#![forbid(unsafe_code)]

mod error;
pub mod format;
mod list;
pub mod measure;
pub mod shape;

pub use error::{Error, Result};
pub use format::{ElementClass, Params, Supernode, SupernodeContext, Tail, TailLevel};
pub use list::{SkipList, Usage};
pub use shape::Lookup;
