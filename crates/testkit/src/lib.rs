//! Test support for h5chunk's crates: the committed and generated libhdf5 fixtures, the interop
//! tools (h5py, h5dump) under the convention of `docs/TESTING.md`, a reader that finds a
//! dataset's messages in any fixture, and a minimal HDF5 file writer so that a structure crate
//! can prove libhdf5 reads what it builds before the `h5chunk` crate exists.
//!
//! This crate is a dev-dependency only (`cargo xtask deps` refuses it as a normal dependency).
//! Test code: it panics with a message on anything unexpected instead of returning errors.
//!
//! ```
//! use h5chunk_testkit::{FileWriter, Format, H5File};
//!
//! let dir = std::env::temp_dir().join(format!("testkit-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("empty.h5");
//! FileWriter::create(&path, Format::Latest).finish();
//! let file = H5File::open(&path);
//! assert_eq!(file.superblock().version, 3);
//! ```

pub mod fixtures;
pub mod h5py;
pub mod interop;
pub mod moto;
pub mod mutate;
mod read;
mod write;

pub use read::{DatasetInfo, H5File};
pub use write::{DatasetSpec, FileWriter, Format};
