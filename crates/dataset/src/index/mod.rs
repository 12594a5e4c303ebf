//! Chunk indexes: which one a dataset gets, and how chunk coordinates become an index key.

pub(crate) mod adapter;
pub(crate) mod linear;
pub(crate) mod select;

pub use select::{AllocTime, IndexKind, IndexRequest, Selection, choose};
