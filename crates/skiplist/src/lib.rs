//! The deterministic reversed skip list of Koziol's 2007 design paper: h5chunk's own, opt-in
//! chunk index for datasets with one unlimited dimension.
//!
//! Not implemented yet: its issue has not been taken. It deliberately exposes no API until
//! then, so nothing can depend on a placeholder.
