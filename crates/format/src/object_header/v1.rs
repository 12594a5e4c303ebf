//! Version 1 object header.
//!
//! Chunk 0 prefix (16 bytes; the messages start 8-byte aligned after it):
//!
//! | field                          | size | notes                                         |
//! |--------------------------------|------|-----------------------------------------------|
//! | version                        | 1    | 1                                             |
//! | reserved                       | 1    | zero                                          |
//! | total number of header messages| 2    | all chunks, NIL and continuation included     |
//! | object reference count         | 4    | hard links to the object                      |
//! | object header size             | 4    | bytes of messages in chunk 0 after the prefix |
//! | reserved (alignment padding)   | 4    | zero                                          |
//!
//! Each message (in chunk 0 and in continuation blocks, which are bare message sequences with
//! no signature, prefix or checksum):
//!
//! | field                | size | notes                                                 |
//! |----------------------|------|-------------------------------------------------------|
//! | header message type  | 2    |                                                       |
//! | size of message data | 2    | including padding; a multiple of 8                    |
//! | header message flags | 1    |                                                       |
//! | reserved             | 3    | zero                                                  |
//! | message data         | size | zero-padded to a multiple of 8                        |
//!
//! Reserved bytes are ignored when decoding (as libhdf5 does) and written as zero.

use zerocopy::little_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{Chunk, MessageFormat};
use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};
use crate::sizes::Sizes;

/// The version byte of a version 1 object header.
pub const VERSION: u8 = 1;
/// Bytes of the chunk 0 prefix.
pub const PREFIX_LEN: usize = 16;
/// Bytes of each message header.
pub const MESSAGE_HEADER_LEN: usize = 8;

const STRUCTURE: &str = "object header";

/// The fixed 16-byte prefix as stored.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Clone, Copy, Debug)]
#[repr(C)]
struct RawPrefix {
    version: u8,
    reserved: u8,
    message_count: U16,
    refcount: U32,
    chunk0_size: U32,
    padding: [u8; 4],
}

const _: () = assert!(size_of::<RawPrefix>() == PREFIX_LEN);

/// The version 1 prefix fields that are not derived from the chunks.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Prefix {
    /// "Total Number of Header Messages" as stored. [`super::ObjectHeader::validate`] checks
    /// it against the messages found; [`super::ObjectHeader::update_message_count`] resets it.
    pub message_count: u16,
    /// "Object Reference Count".
    pub refcount: u32,
}

fn read_prefix(d: &mut Decoder<'_>) -> Result<RawPrefix> {
    let at = d.addr();
    let raw: [u8; PREFIX_LEN] = d.array()?;
    let prefix = RawPrefix::read_from_bytes(&raw).map_err(|_| Error::Truncated {
        structure: STRUCTURE,
        at,
        needed: PREFIX_LEN as u64,
        available: 0,
    })?;
    if prefix.version != VERSION {
        return Err(d.bad_version(at, prefix.version));
    }
    Ok(prefix)
}

/// Total length of chunk 0 (prefix and messages) from its first 16 bytes.
pub(super) fn chunk0_len(bytes: &[u8], at: Addr) -> Result<u64> {
    let mut d = Decoder::new(bytes, at, Sizes::DEFAULT, STRUCTURE);
    let p = read_prefix(&mut d)?;
    Ok(u64::from(p.chunk0_size.get()).saturating_add(PREFIX_LEN as u64))
}

/// Decode the prefix and messages of chunk 0.
pub(super) fn decode_chunk0(bytes: &[u8], at: Addr, sizes: Sizes) -> Result<(Prefix, Chunk)> {
    let mut d = Decoder::new(bytes, at, sizes, STRUCTURE);
    let p = read_prefix(&mut d)?;
    let count = p.message_count.get();
    let size = p.chunk0_size.get();
    // libhdf5's rule: a header with messages has room for at least one message header, and
    // one without messages has an empty chunk 0.
    if (count > 0 && (size as usize) < MESSAGE_HEADER_LEN) || (count == 0 && size > 0) {
        let size_at = Addr(at.get().wrapping_add(8));
        return Err(d.bad_value(size_at, "object header size", u64::from(size)));
    }
    let size =
        usize::try_from(size).map_err(|_| d.bad_value(at, "object header size", size.into()))?;
    let mut area = d.sub(size)?;
    let (messages, gap) = MessageFormat::V1.decode_messages(&mut area)?;
    debug_assert!(gap.is_empty());
    Ok((
        Prefix {
            message_count: count,
            refcount: p.refcount.get(),
        },
        Chunk {
            addr: at,
            messages,
            gap,
        },
    ))
}

/// Decode a continuation block: `bytes` are exactly the block.
pub(super) fn decode_continuation(bytes: &[u8], at: Addr, sizes: Sizes) -> Result<Chunk> {
    let mut d = Decoder::new(bytes, at, sizes, STRUCTURE);
    let (messages, gap) = MessageFormat::V1.decode_messages(&mut d)?;
    Ok(Chunk {
        addr: at,
        messages,
        gap,
    })
}

/// Encode chunk 0: the prefix, then the messages.
pub(super) fn encode_chunk0(
    p: &Prefix,
    chunk: &Chunk,
    sizes: Sizes,
    out: &mut Vec<u8>,
) -> Result<()> {
    let area = MessageFormat::V1.area_len(chunk);
    let chunk0_size = u32::try_from(area).map_err(|_| Error::TooWide {
        structure: STRUCTURE,
        field: "object header size",
        value: area as u64,
        width: 4,
    })?;
    let raw = RawPrefix {
        version: VERSION,
        reserved: 0,
        message_count: U16::new(p.message_count),
        refcount: U32::new(p.refcount),
        chunk0_size: U32::new(chunk0_size),
        padding: [0; 4],
    };
    let mut e = Encoder::new(out, sizes, STRUCTURE);
    e.bytes(raw.as_bytes());
    MessageFormat::V1.encode_messages(&mut e, chunk)
}

/// Encode a continuation block: its messages.
pub(super) fn encode_continuation(chunk: &Chunk, sizes: Sizes, out: &mut Vec<u8>) -> Result<()> {
    let mut e = Encoder::new(out, sizes, STRUCTURE);
    MessageFormat::V1.encode_messages(&mut e, chunk)
}
