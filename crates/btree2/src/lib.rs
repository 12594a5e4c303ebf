//! The version 2 B-tree of HDF5 (`BTHD`/`BTIN`/`BTLF`), generic over record classes.
//!
//! Not implemented yet: its issue has not been taken. It deliberately exposes no API until
//! then, so nothing can depend on a placeholder.
