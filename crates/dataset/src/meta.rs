//! Metadata that this crate encodes itself, written through the metadata cache.
//!
//! Chunk indexes and old-style groups are entry classes of their own crates. The rest of what
//! a flush writes is encoded here, in whole images: object header chunks, global heap
//! collections (fractal heap blocks are `h5chunk-dense`'s). Each image becomes an
//! [`Image`](h5chunk_cache::Image) entry of the cache at
//! its address, with a flush dependency on every block its bytes point at (a continuation
//! chunk, a chunk index, a fractal heap, a name index, a global heap collection), so the cache
//! writes a block only after everything it points to, in the order the dependencies declare,
//! and the write trace and its checker see every byte of a flush (`docs/design/swmr.md`).
//!
//! The cache only writes these entries: the structures are read by their own code (object
//! headers by `object`, collections by `values`), never loaded through the cache.

use h5chunk_cache::ImageKind;
use h5chunk_format::global_heap::HeapId;
use h5chunk_format::message::{DataLayout, DatatypeClass, Message, MessageType};
use h5chunk_format::object_header::Chunk;
use h5chunk_format::{Addr, Sizes};

use crate::error::{Error, Result};

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
                out.extend(attribute_info_addresses(&m.data, header, sizes));
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

/// The blocks an Attribute Info message points at: the fractal heap of dense attributes, its
/// name index and its creation-order index (none when the message does not decode).
pub(crate) fn attribute_info_addresses(
    data: &[u8],
    header: Addr,
    sizes: h5chunk_format::Sizes,
) -> Vec<Addr> {
    AttrInfo::decode(data, header, sizes)
        .map(|i| [i.heap, i.names, i.orders].into_iter().flatten().collect())
        .unwrap_or_default()
}

/// An Attribute Info message: version 0, flags (bit 0: creation order tracked, with a u16
/// maximum creation index; bit 1: indexed, with a third address), fractal heap address, name
/// index address, [creation-order index address].
#[derive(Clone, Debug)]
pub(crate) struct AttrInfo {
    pub tracked: bool,
    pub indexed: bool,
    /// The creation index the next attribute gets (when tracked).
    pub max_order: u16,
    pub heap: Option<Addr>,
    pub names: Option<Addr>,
    pub orders: Option<Addr>,
}

impl AttrInfo {
    pub fn decode(data: &[u8], header: Addr, sizes: h5chunk_format::Sizes) -> Result<AttrInfo> {
        let mut d =
            h5chunk_format::cursor::Decoder::new(data, header, sizes, "attribute info message");
        let v_at = d.addr();
        let version = d.u8()?;
        if version != 0 {
            return Err(d.bad_version(v_at, version).into());
        }
        let flags = d.u8()?;
        let tracked = flags & 0x01 != 0;
        let indexed = flags & 0x02 != 0;
        let max_order = if tracked { d.u16()? } else { 0 };
        let heap = d.offset()?;
        let names = d.offset()?;
        let orders = if indexed { d.offset()? } else { None };
        if heap.is_some() && names.is_none() {
            return Err(Error::corrupt(
                "attribute info message",
                Some(header),
                "a fractal heap of attributes but no name index",
            ));
        }
        Ok(AttrInfo {
            tracked,
            indexed,
            max_order,
            heap,
            names,
            orders,
        })
    }

    /// The fractal heap and name index, when dense storage is in use.
    pub fn dense(&self) -> Option<(Addr, Addr)> {
        self.heap.zip(self.names)
    }

    pub fn encode(&self, sizes: h5chunk_format::Sizes) -> Vec<u8> {
        let flags = u8::from(self.tracked) | (u8::from(self.indexed) << 1);
        let mut out = vec![0u8, flags];
        if self.tracked {
            out.extend_from_slice(&self.max_order.to_le_bytes());
        }
        let mut addrs = vec![self.heap, self.names];
        if self.indexed {
            addrs.push(self.orders);
        }
        let width = usize::from(sizes.offsets());
        for a in addrs {
            let v = a.map_or(sizes.undef_offset(), Addr::get);
            out.extend_from_slice(v.to_le_bytes().get(..width).unwrap_or_default());
        }
        out
    }

    /// The next attribute's creation order (and the message counting past it), when tracked;
    /// libhdf5 refuses past the largest u16 index too.
    pub fn take_order(&mut self) -> Result<Option<u16>> {
        if !self.tracked {
            return Ok(None);
        }
        let order = self.max_order;
        self.max_order =
            order
                .checked_add(1)
                .filter(|&n| n < u16::MAX)
                .ok_or(Error::Unsupported(
                    "more than 65,534 attributes created on one object",
                ))?;
        Ok(Some(order))
    }
}
