//! h5chunk: files, groups and chunked datasets, with the chunk index chosen as libhdf5 chooses.
//!
//! Not implemented yet: its issue has not been taken. It deliberately exposes no API until
//! then, so nothing can depend on a placeholder.
