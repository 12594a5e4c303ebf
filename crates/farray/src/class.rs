//! Element classes: what one fixed array element means.
//!
//! The array stores elements as opaque fixed-size byte strings; a class gives them a meaning,
//! as libhdf5's `H5FA_class_t` does. The chunk indexes use [`RecordCodec`]: client id 0 for an
//! unfiltered chunk address, 1 for a filtered record (address, chunk size whose width the
//! layout version dictates, filter mask).

use core::fmt;

use h5chunk_format::Addr;
use h5chunk_format::chunk_record::{ChunkRecord, RecordCodec};

/// The meaning of a fixed array's elements.
pub trait ElementClass: fmt::Debug {
    /// The decoded element.
    type Value: Clone + PartialEq + fmt::Debug;

    /// The client id stored in the header and data block (0 unfiltered chunks, 1 filtered).
    fn client_id(&self) -> u8;

    /// Bytes of one encoded element (1 to 255: the header stores it in one byte).
    fn element_size(&self) -> usize;

    /// The value of an element that was never set.
    fn fill(&self) -> Self::Value;

    /// Whether `value` counts as set (iteration visits only those).
    fn is_set(&self, value: &Self::Value) -> bool;

    /// Append exactly [`element_size`](Self::element_size) bytes encoding `value`.
    fn encode(&self, value: &Self::Value, out: &mut Vec<u8>) -> h5chunk_format::Result<()>;

    /// Decode one element of [`element_size`](Self::element_size) bytes read at `at`.
    fn decode(&self, bytes: &[u8], at: Addr) -> h5chunk_format::Result<Self::Value>;

    /// Encode `value` into `out`, exactly [`element_size`](Self::element_size) bytes. The
    /// default goes through [`encode`](Self::encode); classes on the hot path write in place.
    fn encode_into(&self, value: &Self::Value, out: &mut [u8]) -> h5chunk_format::Result<()> {
        h5chunk_format::cursor::encode_exact(out, "fixed array element", |bytes| {
            self.encode(value, bytes)
        })
    }
}

/// Chunk records: an unfiltered chunk address (client id 0) or a filtered record (client
/// id 1). An element is set when its chunk address is defined.
impl ElementClass for RecordCodec {
    type Value = ChunkRecord;

    fn client_id(&self) -> u8 {
        u8::from(self.is_filtered())
    }

    fn element_size(&self) -> usize {
        RecordCodec::element_size(self)
    }

    fn fill(&self) -> ChunkRecord {
        ChunkRecord::default()
    }

    fn is_set(&self, value: &ChunkRecord) -> bool {
        value.addr.is_some()
    }

    fn encode(&self, value: &ChunkRecord, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        RecordCodec::encode(self, value, out)
    }

    fn decode(&self, bytes: &[u8], at: Addr) -> h5chunk_format::Result<ChunkRecord> {
        match self.decode_slice(bytes) {
            Some(r) => Ok(r),
            // The wrong length: the cursor decoder says what is missing.
            None => RecordCodec::decode(self, bytes, at),
        }
    }

    fn encode_into(&self, value: &ChunkRecord, out: &mut [u8]) -> h5chunk_format::Result<()> {
        self.encode_slice(value, out)
    }
}
