//! On-disk encoding of HDF5 file structures: superblock, object headers, messages, heaps and
//! checksums. This crate does no I/O: every decoder takes the bytes of one structure plus the
//! file address they came from, and every encoder appends to a `Vec<u8>`.
//!
//! ```
//! use h5chunk_format::{Addr, Sizes, checksum::lookup3, cursor::Decoder};
//!
//! // The HDF5 metadata checksum is Jenkins lookup3 with an initial value of 0.
//! assert_eq!(lookup3(b"Four score and seven years ago"), 0x1777_0551);
//!
//! // Decoders are bounds-checked and name the file address of a failure.
//! let bytes = [0x30, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];
//! let mut d = Decoder::new(&bytes, Addr(0x24), Sizes::DEFAULT, "example");
//! assert_eq!(d.offset().unwrap(), Some(Addr(0x30)));
//! let err = d.offset().unwrap_err();
//! assert_eq!(err.addr(), Some(Addr(0x2c)));
//! ```
//!
//! Invariants: nothing here panics on any input (decoders are bounds-checked and every length
//! read from a file is checked against the bytes that remain before it sizes an allocation);
//! checksums are verified before any covered field is parsed and appended last when encoding;
//! the undefined address is `None`, never a sentinel.

#![forbid(unsafe_code)]

pub mod addr;
pub mod btree1;
pub mod btree2;
pub mod checksum;
pub mod chunk_record;
pub mod cursor;
pub mod earray;
pub mod error;
pub mod farray;
pub mod fractal_heap;
pub mod free_space;
pub mod global_heap;
pub mod local_heap;
pub mod message;
pub mod object_header;
pub mod selection;
pub mod sizes;
pub mod superblock;
pub mod symbol_table_entry;
pub mod symbol_table_node;
pub mod vds;

pub use addr::Addr;
pub use error::{Error, Result};
pub use sizes::Sizes;
