//! The extensible array of HDF5 (`EAHD`/`EAIB`/`EASB`/`EADB`), the index of datasets with one
//! unlimited dimension under the latest file format.
//!
//! Not implemented yet: its issue has not been taken. It deliberately exposes no API until
//! then, so nothing can depend on a placeholder.
