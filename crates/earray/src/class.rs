//! Element classes: what one array element means. The array stores elements as opaque bytes;
//! a class encodes and decodes them and says which value an unset element reads as.
//!
//! | class            | client id | element                                                    |
//! |------------------|-----------|------------------------------------------------------------|
//! | [`ChunkAddrs`]   | 0         | chunk address (sa)                                         |
//! | [`FilteredChunks`] | 1       | chunk address (sa), chunk size (`size_width`), filter mask (u32) |
//! | [`ChunkRecords`] | 0 or 1    | either of the above, chosen by a [`RecordCodec`]           |

use core::fmt;

use h5chunk_format::chunk_record::{ChunkRecord, RecordCodec, chunk_size_len};
use h5chunk_format::{Addr, Sizes};

/// The client id of unfiltered chunk addresses.
pub const CLIENT_UNFILTERED_CHUNKS: u8 = 0;
/// The client id of filtered chunk records.
pub const CLIENT_FILTERED_CHUNKS: u8 = 1;

/// One kind of array element: its client id, its size and its encoding.
///
/// Every new block is initialised with [`fill`](Self::fill) (the undefined element), and an
/// element that was never set reads as it.
pub trait ElementClass: Send + Sync + fmt::Debug + 'static {
    /// The decoded element.
    type Element: Copy + PartialEq + fmt::Debug;

    /// The client id stored in every block (`EAHD`, `EAIB`, `EASB`, `EADB`).
    fn client_id(&self) -> u8;

    /// Bytes of one encoded element (1 to 255).
    fn element_size(&self) -> u8;

    /// The undefined element: what new blocks hold and unset indices read as.
    fn fill(&self) -> Self::Element;

    /// Whether `e` is a set element (iteration reports only those).
    fn is_set(&self, e: &Self::Element) -> bool {
        *e != self.fill()
    }

    /// Append exactly [`element_size`](Self::element_size) bytes encoding `e`.
    fn encode(&self, e: &Self::Element, out: &mut Vec<u8>) -> h5chunk_format::Result<()>;

    /// Decode one element from its bytes, read at file address `at`.
    fn decode(&self, bytes: &[u8], at: Addr) -> h5chunk_format::Result<Self::Element>;

    /// Encode `e` into `out`, exactly [`element_size`](Self::element_size) bytes. The default
    /// goes through [`encode`](Self::encode); classes on the hot path write in place.
    fn encode_into(&self, e: &Self::Element, out: &mut [u8]) -> h5chunk_format::Result<()> {
        h5chunk_format::cursor::encode_exact(out, "extensible array element", |bytes| {
            self.encode(e, bytes)
        })
    }
}

/// Unfiltered chunk addresses (client id 0): `None` is an unallocated chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkAddrs {
    codec: RecordCodec,
}

impl ChunkAddrs {
    /// Addresses of the file's size of offsets.
    pub fn new(sizes: Sizes) -> ChunkAddrs {
        ChunkAddrs {
            codec: RecordCodec::unfiltered(sizes),
        }
    }
}

impl ElementClass for ChunkAddrs {
    type Element = Option<Addr>;

    fn client_id(&self) -> u8 {
        CLIENT_UNFILTERED_CHUNKS
    }

    fn element_size(&self) -> u8 {
        u8::try_from(self.codec.element_size()).unwrap_or(u8::MAX)
    }

    fn fill(&self) -> Option<Addr> {
        None
    }

    fn encode(&self, e: &Option<Addr>, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        let r = ChunkRecord {
            addr: *e,
            ..ChunkRecord::default()
        };
        self.codec.encode(&r, out)
    }

    fn decode(&self, bytes: &[u8], at: Addr) -> h5chunk_format::Result<Option<Addr>> {
        Ok(self.codec.decode(bytes, at)?.addr)
    }
}

/// Filtered chunk records (client id 1): address, stored size and filter mask. An unset
/// element is `{ addr: None, size: 0, mask: 0 }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilteredChunks {
    codec: RecordCodec,
}

impl FilteredChunks {
    /// Records whose size field is `size_width` bytes (1 to 8).
    pub fn new(sizes: Sizes, size_width: u8) -> h5chunk_format::Result<FilteredChunks> {
        Ok(FilteredChunks {
            codec: RecordCodec::filtered(sizes, size_width)?,
        })
    }

    /// Records as layout message version 4 sizes them: the size field is
    /// [`chunk_size_len`]`(chunk_bytes)` bytes wide.
    pub fn layout_v4(sizes: Sizes, chunk_bytes: u64) -> h5chunk_format::Result<FilteredChunks> {
        FilteredChunks::new(sizes, chunk_size_len(chunk_bytes))
    }

    /// The record codec.
    pub fn codec(&self) -> RecordCodec {
        self.codec
    }
}

impl ElementClass for FilteredChunks {
    type Element = ChunkRecord;

    fn client_id(&self) -> u8 {
        CLIENT_FILTERED_CHUNKS
    }

    fn element_size(&self) -> u8 {
        u8::try_from(self.codec.element_size()).unwrap_or(u8::MAX)
    }

    fn fill(&self) -> ChunkRecord {
        ChunkRecord::default()
    }

    fn is_set(&self, e: &ChunkRecord) -> bool {
        e.addr.is_some()
    }

    fn encode(&self, e: &ChunkRecord, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        self.codec.encode(e, out)
    }

    fn decode(&self, bytes: &[u8], at: Addr) -> h5chunk_format::Result<ChunkRecord> {
        match self.codec.decode_slice(bytes) {
            Some(r) => Ok(r),
            // The wrong length: the cursor decoder says what is missing.
            None => self.codec.decode(bytes, at),
        }
    }

    fn encode_into(&self, e: &ChunkRecord, out: &mut [u8]) -> h5chunk_format::Result<()> {
        self.codec.encode_slice(e, out)
    }
}

/// Chunk records of either kind, as a [`RecordCodec`] describes them (client id 1 when
/// filtered, else 0). Unfiltered records decode with size 0 and mask 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkRecords {
    codec: RecordCodec,
}

impl ChunkRecords {
    /// Records encoded by `codec`.
    pub fn new(codec: RecordCodec) -> ChunkRecords {
        ChunkRecords { codec }
    }
}

impl ElementClass for ChunkRecords {
    type Element = ChunkRecord;

    fn client_id(&self) -> u8 {
        if self.codec.is_filtered() {
            CLIENT_FILTERED_CHUNKS
        } else {
            CLIENT_UNFILTERED_CHUNKS
        }
    }

    fn element_size(&self) -> u8 {
        u8::try_from(self.codec.element_size()).unwrap_or(u8::MAX)
    }

    fn fill(&self) -> ChunkRecord {
        ChunkRecord::default()
    }

    fn is_set(&self, e: &ChunkRecord) -> bool {
        e.addr.is_some()
    }

    fn encode(&self, e: &ChunkRecord, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        self.codec.encode(e, out)
    }

    fn decode(&self, bytes: &[u8], at: Addr) -> h5chunk_format::Result<ChunkRecord> {
        match self.codec.decode_slice(bytes) {
            Some(r) => Ok(r),
            // The wrong length: the cursor decoder says what is missing.
            None => self.codec.decode(bytes, at),
        }
    }

    fn encode_into(&self, e: &ChunkRecord, out: &mut [u8]) -> h5chunk_format::Result<()> {
        self.codec.encode_slice(e, out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_elements_and_fill() {
        let s = Sizes::DEFAULT;
        let a = ChunkAddrs::new(s);
        let mut out = Vec::new();
        a.encode(&None, &mut out).unwrap();
        assert_eq!(out, [0xff; 8]);
        assert_eq!(a.decode(&out, Addr(0)).unwrap(), None);
        out.clear();
        a.encode(&Some(Addr(0x1234)), &mut out).unwrap();
        assert_eq!(a.decode(&out, Addr(0)).unwrap(), Some(Addr(0x1234)));

        let f = FilteredChunks::layout_v4(s, 1).unwrap();
        assert_eq!(f.element_size(), 8 + 2 + 4);
        let r = ChunkRecord {
            addr: Some(Addr(0x800)),
            size: 1,
            mask: 1,
        };
        out.clear();
        f.encode(&r, &mut out).unwrap();
        assert_eq!(out.len(), 14);
        assert_eq!(f.decode(&out, Addr(0)).unwrap(), r);
        assert!(!f.is_set(&f.fill()));
        assert_eq!(ChunkRecords::new(f.codec()).client_id(), 1);
        assert_eq!(ChunkRecords::new(RecordCodec::unfiltered(s)).client_id(), 0);
        assert!(a.decode(&out[..3], Addr(0)).is_err());
    }
}
