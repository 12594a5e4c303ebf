//! The fixed array of HDF5 (`FAHD`/`FADB`), the index of datasets with no unlimited dimension
//! under the latest file format.
//!
//! Not implemented yet: its issue has not been taken. It deliberately exposes no API until
//! then, so nothing can depend on a placeholder.
