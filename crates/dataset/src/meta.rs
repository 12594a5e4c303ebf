//! Metadata that this crate encodes itself, written through the metadata cache.
//!
//! Chunk indexes and old-style groups are entry classes of their own crates. The rest of what
//! a flush writes is encoded here, in whole images: object header chunks, global heap
//! collections and fractal heap blocks. Each image becomes an [`Image`] entry of the cache at
//! its address, with a flush dependency on every block its bytes point at (a continuation
//! chunk, a chunk index, a fractal heap, a name index, a global heap collection), so the cache
//! writes a block only after everything it points to, in the order the dependencies declare,
//! and the write trace and its checker see every byte of a flush (`docs/design/swmr.md`).
//!
//! The cache only writes these entries: the structures are read by their own code (object
//! headers by `object`, heaps by `dense` and `values`), never loaded through [`Image`].

use std::marker::PhantomData;

use h5chunk_cache::CacheEntry;
use h5chunk_format::global_heap::HeapId;
use h5chunk_format::message::{DataLayout, DatatypeClass, Message, MessageType};
use h5chunk_format::object_header::Chunk;
use h5chunk_format::{Addr, Sizes};

/// A kind of image: its name in the cache's statistics and trace, and whether it carries a
/// checksum.
pub(crate) trait ImageKind: Send + Sync + 'static {
    /// The structure's name (its signature).
    const TYPE_NAME: &'static str;
    /// Whether the image ends with a checksum of the bytes before it.
    const CHECKSUMMED: bool;
}

/// A chunk of a version 2 object header (OHDR, or OCHK for a continuation chunk).
pub(crate) struct HeaderChunkV2;
impl ImageKind for HeaderChunkV2 {
    const TYPE_NAME: &'static str = "OHDR";
    const CHECKSUMMED: bool = true;
}

/// A chunk of a version 1 object header (no signature, no checksum).
pub(crate) struct HeaderChunkV1;
impl ImageKind for HeaderChunkV1 {
    const TYPE_NAME: &'static str = "object header v1";
    const CHECKSUMMED: bool = false;
}

/// A global heap collection (no checksum).
pub(crate) struct GlobalHeap;
impl ImageKind for GlobalHeap {
    const TYPE_NAME: &'static str = "GCOL";
    const CHECKSUMMED: bool = false;
}

/// A fractal heap header.
pub(crate) struct HeapHeader;
impl ImageKind for HeapHeader {
    const TYPE_NAME: &'static str = "FRHP";
    const CHECKSUMMED: bool = true;
}

/// A fractal heap indirect block.
pub(crate) struct HeapIndirect;
impl ImageKind for HeapIndirect {
    const TYPE_NAME: &'static str = "FHIB";
    const CHECKSUMMED: bool = true;
}

/// A fractal heap direct block whose heap checksums its direct blocks.
pub(crate) struct HeapDirectSummed;
impl ImageKind for HeapDirectSummed {
    const TYPE_NAME: &'static str = "FHDB";
    const CHECKSUMMED: bool = true;
}

/// A fractal heap direct block without a checksum (libhdf5's default heaps).
pub(crate) struct HeapDirect;
impl ImageKind for HeapDirect {
    const TYPE_NAME: &'static str = "FHDB";
    const CHECKSUMMED: bool = false;
}

/// An encoded image held by the cache until it is written.
pub(crate) struct Image<K> {
    pub bytes: Vec<u8>,
    kind: PhantomData<fn() -> K>,
}

impl<K> Image<K> {
    pub fn new(bytes: Vec<u8>) -> Image<K> {
        Image {
            bytes,
            kind: PhantomData,
        }
    }
}

impl<K: ImageKind> CacheEntry for Image<K> {
    type Context = ();
    const TYPE_NAME: &'static str = K::TYPE_NAME;
    const CHECKSUMMED: bool = K::CHECKSUMMED;

    fn initial_load_len(_: &()) -> usize {
        0
    }

    /// The bytes as they are: this class is never asked to interpret an image, only to hold
    /// one (see the module's docs).
    fn decode(image: &[u8], _: Addr, _: &()) -> h5chunk_format::Result<Self> {
        Ok(Image::new(image.to_vec()))
    }

    fn image_len(&self) -> usize {
        self.bytes.len()
    }

    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        out.extend_from_slice(&self.bytes);
        Ok(())
    }
}

/// The blocks the messages of one object header chunk point at, which must reach the file
/// before the chunk does: the chunks its continuation messages lead to, a chunked dataset's
/// index, a dense group's or dense attributes' heap and indexes, an old-style group's B-tree
/// and local heap, and the global heap collections of variable-length attribute values. A
/// message that does not decode points at nothing here (reading it reports the error).
pub(crate) fn header_chunk_children(chunk: &Chunk, header: Addr, sizes: Sizes) -> Vec<Addr> {
    let mut out = Vec::new();
    for m in &chunk.messages {
        match m.kind {
            MessageType::CONTINUATION
            | MessageType::DATA_LAYOUT
            | MessageType::LINK_INFO
            | MessageType::SYMBOL_TABLE => match Message::decode(m.kind, &m.data, header, sizes) {
                Ok(Message::Continuation(c)) => out.push(c.offset),
                Ok(Message::DataLayout(DataLayout::Chunked(l))) => out.extend(l.address),
                Ok(Message::LinkInfo(l)) => out.extend(
                    [
                        l.fractal_heap_address,
                        l.name_index_address,
                        l.creation_order_index_address,
                    ]
                    .into_iter()
                    .flatten(),
                ),
                Ok(Message::SymbolTable(s)) => {
                    out.extend([s.btree_address, s.local_heap_address]);
                }
                _ => {}
            },
            MessageType::ATTRIBUTE_INFO => {
                out.extend(crate::attr::info_addresses(&m.data, header, sizes));
            }
            MessageType::ATTRIBUTE => out.extend(attribute_collections(&m.data, header, sizes)),
            _ => {}
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The global heap collections a variable-length attribute's values live in.
fn attribute_collections(data: &[u8], header: Addr, sizes: Sizes) -> Vec<Addr> {
    let mut d = h5chunk_format::cursor::Decoder::new(data, header, sizes, "Attribute message");
    let Ok(a) = h5chunk_format::message::Attribute::decode(&mut d) else {
        return Vec::new();
    };
    if !matches!(a.datatype.class, DatatypeClass::VarLen { .. }) {
        return Vec::new();
    }
    let n = HeapId::encoded_len(sizes);
    let mut out: Vec<Addr> = a
        .data
        .chunks_exact(n)
        .filter_map(|e| HeapId::decode(e, header, sizes).ok()?.collection)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}
