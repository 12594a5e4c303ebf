//! The version 1 B-tree of HDF5 (node type 0: group symbol tables; node type 1: raw-data chunks).
//!
//! This crate will hold a generic v1 B-tree over the `h5chunk-cache` metadata cache, with a
//! key/record class per node type. It is not implemented yet: its issue has not been taken.
//! It deliberately exposes no API until then, so nothing can depend on a placeholder.
