//! Storage backends, space allocation and the metadata cache with flush dependencies.
//!
//! Work in progress (see its issue).
