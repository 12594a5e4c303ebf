//! The seam to the file: what dense storage needs of the crate above, and the heaps held open
//! between calls.

use h5chunk_cache::{ImageKind, MetadataCache};
use h5chunk_format::{Addr, Sizes};

use crate::error::Result;

/// A block of a fractal heap, as the metadata cache holds it until it is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    /// The heap's header (FRHP), checksummed.
    Header,
    /// An indirect block (FHIB), checksummed.
    Indirect,
    /// A direct block (FHDB); checksummed when the heap says so.
    Direct {
        /// Whether the heap checksums its direct blocks.
        checksummed: bool,
    },
}

/// Where a heap's bytes are: the file of the crate above, seen through its metadata cache.
///
/// Blocks are handed to the cache with [`put_block`](Self::put_block), each with the blocks it
/// points at, and written by the cache's flush, children first. [`CacheSpace`](crate::CacheSpace) is the plain
/// implementation over a bare cache.
pub trait Space {
    /// The metadata cache (B-tree nodes of the indexes live there too).
    fn cache(&self) -> &MetadataCache;
    /// The file's sizes of offsets and lengths.
    fn sizes(&self) -> Sizes;
    /// `len` bytes at `at`, as the file has them (checked against the file's end before any
    /// buffer is sized).
    fn read(&self, at: Addr, len: u64) -> Result<Vec<u8>>;
    /// Bytes from `at` to the file's end: what any length read from the file must fit in.
    fn room(&self, at: Addr) -> Result<u64>;
    /// Write raw bytes (a huge object) at `at`, now.
    fn write(&self, at: Addr, bytes: &[u8]) -> Result<()>;
    /// Allocate `len` bytes of file space.
    fn allocate(&self, len: u64) -> Result<Addr>;
    /// Allocate `len` bytes of raw data (a huge object), which a paged file keeps in pages
    /// apart from metadata; by default as [`allocate`](Self::allocate).
    fn allocate_raw(&self, len: u64) -> Result<Addr> {
        self.allocate(len)
    }
    /// Give back `len` bytes at `at`.
    fn free(&self, at: Addr, len: u64) -> Result<()>;
    /// Whether readers in other processes may be reading the file at any instant: every
    /// change is then written at once.
    fn swmr_write(&self) -> bool;
    /// Hand the image of a heap block to the metadata cache, to be written after every block
    /// in `children`.
    fn put_block(&self, kind: BlockKind, at: Addr, bytes: Vec<u8>, children: &[Addr])
    -> Result<()>;
    /// Write what the file's [`OpenHeaps`](crate::OpenHeaps) hold of the heap at `heap`
    /// (before it is read).
    fn flush_heap(&self, heap: Addr) -> Result<()>;
    /// The heap ID length of the heap at `heap`, if the file's open heaps hold it.
    fn held_id_len(&self, heap: Addr) -> Option<usize>;
}

/// A heap header (FRHP).
#[derive(Debug)]
pub struct HeaderImage;
impl ImageKind for HeaderImage {
    const TYPE_NAME: &'static str = "FRHP";
    const CHECKSUMMED: bool = true;
}

/// An indirect block (FHIB).
#[derive(Debug)]
pub struct IndirectImage;
impl ImageKind for IndirectImage {
    const TYPE_NAME: &'static str = "FHIB";
    const CHECKSUMMED: bool = true;
}

/// A direct block (FHDB) of a heap that checksums them.
#[derive(Debug)]
pub struct DirectSummedImage;
impl ImageKind for DirectSummedImage {
    const TYPE_NAME: &'static str = "FHDB";
    const CHECKSUMMED: bool = true;
}

/// A direct block (FHDB) of a heap that does not (libhdf5's default heaps).
#[derive(Debug)]
pub struct DirectImage;
impl ImageKind for DirectImage {
    const TYPE_NAME: &'static str = "FHDB";
    const CHECKSUMMED: bool = false;
}
