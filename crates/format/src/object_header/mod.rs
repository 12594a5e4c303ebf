//! Object headers, version 1 and version 2, kept as raw messages so every chunk re-encodes to
//! the bytes it was decoded from.
//!
//! An object header is a chain of chunks. Chunk 0 starts with the prefix; each further chunk
//! is the target of an Object Header Continuation message, loaded in the order those messages
//! appear (chunk 0's first, then those found in chunk 1, and so on, as libhdf5 does).
//!
//! | version | chunk 0                                        | continuation chunk          |
//! |---------|------------------------------------------------|-----------------------------|
//! | 1       | 16-byte prefix + messages (8-byte headers)     | messages only               |
//! | 2       | `OHDR` prefix + messages + gap + checksum      | `OCHK` + messages + gap + checksum |
//!
//! The byte layouts are in [`v1`] and [`v2`]. Message bodies stay raw ([`RawMessage`]); the
//! typed bodies live in [`crate::message`].
//!
//! Message flags (both versions):
//!
//! | bit | meaning                                            |
//! |-----|----------------------------------------------------|
//! | 0   | constant                                           |
//! | 1   | shared                                             |
//! | 2   | do not share                                       |
//! | 3   | fail to open for writing if the type is unknown    |
//! | 4   | mark "was unknown" if unknown and modified         |
//! | 5   | was modified by software that did not know it      |
//! | 6   | shareable                                          |
//! | 7   | always fail if the type is unknown                 |

#![deny(missing_docs)]

pub mod v1;
pub mod v2;

use std::collections::{HashSet, VecDeque};

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};
use crate::message::{Continuation, MessageType};
use crate::sizes::Sizes;

/// How many bytes [`ObjectHeader::read`] asks for first: enough for chunk 0 of most headers in
/// one read (libhdf5 reads the same amount speculatively), and always enough for the prefix.
pub const SPECULATIVE_READ_LEN: u64 = 512;

/// The most bytes the prefix of chunk 0 can take before its first message (a version 2
/// header with times, phase-change values and an 8-byte chunk-0 size: 34 bytes).
pub const MAX_PREFIX_LEN: usize = 34;

/// The most chunks one object header may have. A version 1 header counts its messages, and so
/// its continuation messages, in a u16, so no valid version 1 header has more than 65 536
/// chunks; the same bound applies to version 2. It bounds the work a corrupt header can cause.
pub const MAX_CHUNKS: usize = 65_536;

/// The largest chunk [`ObjectHeader::read`] will ask for. Message sizes are u16, but a chunk
/// may hold many messages; 4 GiB is far beyond anything libhdf5 writes and stops a corrupt
/// length from sizing a huge allocation in the caller's read function.
pub const MAX_CHUNK_LEN: u64 = 1 << 32;

bitflags::bitflags! {
    /// The "Header Message Flags" byte of every message header.
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
    pub struct MessageFlags: u8 {
        /// Bit 0: the message data is constant.
        const CONSTANT = 0x01;
        /// Bit 1: the message is shared (its data is a shared-message reference).
        const SHARED = 0x02;
        /// Bit 2: the message must not be shared.
        const DONT_SHARE = 0x04;
        /// Bit 3: fail to open for writing if the message type is unknown.
        const FAIL_IF_UNKNOWN_AND_OPEN_FOR_WRITE = 0x08;
        /// Bit 4: set bit 5 if the type is unknown and the object is modified.
        const MARK_IF_UNKNOWN = 0x10;
        /// Bit 5: the object was modified by software that did not know this message type.
        const WAS_UNKNOWN = 0x20;
        /// Bit 6: the message may be shared.
        const SHAREABLE = 0x40;
        /// Bit 7: always fail if the message type is unknown.
        const FAIL_IF_UNKNOWN_ALWAYS = 0x80;
    }
}

impl MessageFlags {
    /// Whether libhdf5 accepts this combination (it rejects shared + do-not-share, and a
    /// "was unknown" mark without "mark if unknown" or together with "fail if unknown").
    pub fn is_valid(self) -> bool {
        let shared_conflict = self.contains(Self::SHARED | Self::DONT_SHARE);
        let was_unknown = self.contains(Self::WAS_UNKNOWN);
        let unknown_conflict = was_unknown
            && (self.contains(Self::FAIL_IF_UNKNOWN_AND_OPEN_FOR_WRITE)
                || !self.contains(Self::MARK_IF_UNKNOWN));
        !shared_conflict && !unknown_conflict
    }
}

/// One header message exactly as stored.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RawMessage {
    /// "Header Message Type".
    pub kind: MessageType,
    /// "Header Message Flags".
    pub flags: MessageFlags,
    /// "Header Message Creation Order": present exactly when a version 2 header tracks
    /// attribute creation order (header flag bit 2).
    pub creation_order: Option<u16>,
    /// The message data as stored: in a version 1 header including the padding to a multiple
    /// of 8 bytes, in version 2 exactly the message's size.
    pub data: Vec<u8>,
}

impl RawMessage {
    /// A message without creation order.
    pub fn new(kind: MessageType, flags: MessageFlags, data: Vec<u8>) -> Self {
        RawMessage {
            kind,
            flags,
            creation_order: None,
            data,
        }
    }

    /// A NIL message whose data is `len` zero bytes.
    pub fn nil(len: usize) -> Self {
        RawMessage::new(MessageType::NIL, MessageFlags::empty(), vec![0; len])
    }

    /// The body of a continuation message, decoded.
    pub fn continuation(&self, at: Addr, sizes: Sizes) -> Result<Option<Continuation>> {
        if self.kind != MessageType::CONTINUATION {
            return Ok(None);
        }
        let mut d = Decoder::new(&self.data, at, sizes, "Object Header Continuation message");
        Continuation::decode(&mut d).map(Some)
    }
}

/// One chunk of an object header: its messages and, in version 2, the gap after them.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Chunk {
    /// File address of the chunk (for chunk 0, the object header's address).
    pub addr: Addr,
    /// The chunk's messages in stored order.
    pub messages: Vec<RawMessage>,
    /// Version 2 only: the unused bytes after the last message, fewer than one message header,
    /// kept as stored.
    pub gap: Vec<u8>,
}

impl Chunk {
    /// The continuation messages in this chunk, decoded, in order.
    pub fn continuations(&self, sizes: Sizes) -> Result<Vec<Continuation>> {
        self.messages
            .iter()
            .filter_map(|m| m.continuation(self.addr, sizes).transpose())
            .collect()
    }
}

/// Where a chunk lives: its address and its total length in bytes (chunk 0: prefix, messages,
/// gap and checksum; continuation chunks: the length the continuation message gives).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ChunkExtent {
    /// File address of the chunk's first byte.
    pub addr: Addr,
    /// Total length in bytes.
    pub len: u64,
}

/// The version-specific prefix of chunk 0.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Prefix {
    /// A version 1 prefix.
    V1(v1::Prefix),
    /// A version 2 (`OHDR`) prefix.
    V2(v2::Prefix),
}

/// How message headers are laid out in a chunk.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum MessageFormat {
    /// 8-byte headers: type u16, size u16, flags u8, 3 reserved; sizes multiples of 8.
    V1,
    /// 4-byte headers (type u8, size u16, flags u8), plus a u16 creation order if tracked.
    V2 { creation_order: bool },
}

impl MessageFormat {
    pub(crate) fn header_len(self) -> usize {
        match self {
            MessageFormat::V1 => v1::MESSAGE_HEADER_LEN,
            MessageFormat::V2 {
                creation_order: false,
            } => 4,
            MessageFormat::V2 {
                creation_order: true,
            } => 6,
        }
    }

    /// Bytes the messages and gap take in a chunk (saturating: in-memory sizes cannot
    /// realistically overflow, and an overflowed size fails to encode anyway).
    pub(crate) fn area_len(self, chunk: &Chunk) -> usize {
        chunk.messages.iter().fold(chunk.gap.len(), |acc, m| {
            acc.saturating_add(self.header_len())
                .saturating_add(m.data.len())
        })
    }

    /// Decode messages until the decoder is empty; version 2 keeps a tail shorter than a
    /// message header as the gap.
    pub(crate) fn decode_messages(self, d: &mut Decoder<'_>) -> Result<(Vec<RawMessage>, Vec<u8>)> {
        let mut messages = Vec::new();
        let header_len = self.header_len();
        while !d.is_empty() {
            if d.remaining() < header_len {
                if let MessageFormat::V2 { .. } = self {
                    let gap = d.bytes(d.remaining())?.to_vec();
                    return Ok((messages, gap));
                }
                return Err(d.invalid(
                    d.addr(),
                    format!(
                        "{} bytes left at the end of a chunk, fewer than a message header",
                        d.remaining()
                    ),
                ));
            }
            let at = d.addr();
            let (kind, size) = match self {
                MessageFormat::V1 => (MessageType(d.u16()?), d.u16()?),
                MessageFormat::V2 { .. } => (MessageType(u16::from(d.u8()?)), d.u16()?),
            };
            let flags_at = d.addr();
            let raw_flags = d.u8()?;
            let flags = MessageFlags::from_bits_retain(raw_flags);
            if !flags.is_valid() {
                return Err(d.bad_value(flags_at, "message flags", u64::from(raw_flags)));
            }
            let creation_order = match self {
                MessageFormat::V1 => {
                    d.skip(3)?; // reserved; libhdf5 ignores it
                    if size % 8 != 0 {
                        return Err(d.bad_value(
                            at,
                            "message size (not 8-byte aligned)",
                            size.into(),
                        ));
                    }
                    None
                }
                MessageFormat::V2 {
                    creation_order: true,
                } => Some(d.u16()?),
                MessageFormat::V2 {
                    creation_order: false,
                } => None,
            };
            let data = d.bytes(usize::from(size))?.to_vec();
            messages.push(RawMessage {
                kind,
                flags,
                creation_order,
                data,
            });
        }
        Ok((messages, Vec::new()))
    }

    /// Encode the messages and gap of `chunk`.
    pub(crate) fn encode_messages(self, e: &mut Encoder<'_>, chunk: &Chunk) -> Result<()> {
        let structure = match self {
            MessageFormat::V1 => "object header",
            MessageFormat::V2 { .. } => "OHDR",
        };
        let unencodable = |reason: String| Error::Unencodable { structure, reason };
        for m in &chunk.messages {
            let size = u16::try_from(m.data.len()).map_err(|_| Error::TooWide {
                structure,
                field: "message size",
                value: m.data.len() as u64,
                width: 2,
            })?;
            if !m.flags.is_valid() {
                return Err(unencodable(format!(
                    "invalid message flags {:#04x}",
                    m.flags.bits()
                )));
            }
            match self {
                MessageFormat::V1 => {
                    if size % 8 != 0 {
                        return Err(unencodable(format!(
                            "version 1 message data of {size} bytes is not padded to 8"
                        )));
                    }
                    if m.creation_order.is_some() {
                        return Err(unencodable(
                            "version 1 messages have no creation order".to_owned(),
                        ));
                    }
                    e.u16(m.kind.0);
                    e.u16(size);
                    e.u8(m.flags.bits());
                    e.zeros(3);
                }
                MessageFormat::V2 { creation_order } => {
                    e.uint(u64::from(m.kind.0), 1, "message type")?;
                    e.u16(size);
                    e.u8(m.flags.bits());
                    match (creation_order, m.creation_order) {
                        (true, Some(c)) => e.u16(c),
                        (false, None) => {}
                        _ => {
                            return Err(unencodable(
                                "creation order must be present exactly when the header tracks it"
                                    .to_owned(),
                            ));
                        }
                    }
                }
            }
            e.bytes(&m.data);
        }
        match self {
            MessageFormat::V1 if !chunk.gap.is_empty() => {
                return Err(unencodable("version 1 chunks have no gap".to_owned()));
            }
            MessageFormat::V2 { .. } if chunk.gap.len() >= self.header_len() => {
                return Err(unencodable(format!(
                    "a gap of {} bytes would hold a message header",
                    chunk.gap.len()
                )));
            }
            _ => e.bytes(&chunk.gap),
        }
        Ok(())
    }
}

/// Enough bytes for chunk 0's prefix (and its length field) in either version.
const PREFIX_PROBE_LEN: u64 = MAX_PREFIX_LEN as u64;

/// The length of chunk 0 (prefix, messages, gap and checksum) from its first bytes: 16 bytes
/// suffice for version 1, at most [`MAX_PREFIX_LEN`] for version 2.
pub fn chunk0_len(bytes: &[u8], at: Addr) -> Result<u64> {
    if bytes.starts_with(&v2::SIGNATURE) {
        v2::chunk0_len(bytes, at)
    } else {
        v1::chunk0_len(bytes, at)
    }
}

/// A decoded object header: its prefix and every chunk loaded so far.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ObjectHeader {
    sizes: Sizes,
    prefix: Prefix,
    chunks: Vec<Chunk>,
}

impl ObjectHeader {
    /// Read a whole object header through `read(addr, len)`, which returns the file's bytes
    /// `[addr, addr + len)` and may return fewer only where the file ends. Chunk 0 is read
    /// with one speculative read of [`SPECULATIVE_READ_LEN`] bytes (plus a second read if it
    /// is longer), then each continuation chunk in order. A chain longer than [`MAX_CHUNKS`],
    /// a chunk longer than [`MAX_CHUNK_LEN`] or a repeated chunk address (a cycle) is an
    /// error; version 1 message counts are validated.
    pub fn read<E: From<Error>>(
        at: Addr,
        sizes: Sizes,
        read: impl FnMut(Addr, u64) -> Result<Vec<u8>, E>,
    ) -> Result<ObjectHeader, E> {
        ObjectHeader::read_hinted(at, sizes, SPECULATIVE_READ_LEN, read)
    }

    /// [`read`](Self::read) with chunk 0 read first as `first` bytes (at least its prefix;
    /// the length chunk 0 had when last read, for a header read again): a header whose chunk
    /// 0 kept its length is read in exactly one read of exactly its bytes.
    pub fn read_hinted<E: From<Error>>(
        at: Addr,
        sizes: Sizes,
        first: u64,
        mut read: impl FnMut(Addr, u64) -> Result<Vec<u8>, E>,
    ) -> Result<ObjectHeader, E> {
        let probe = read(at, first.clamp(PREFIX_PROBE_LEN, MAX_CHUNK_LEN))?;
        let len = chunk0_len(&probe, at)?;
        let bytes = if probe.len() as u64 >= len {
            probe
        } else if len > MAX_CHUNK_LEN {
            return Err(too_long(at, len).into());
        } else {
            read(at, len)?
        };
        let mut header = ObjectHeader::decode_chunk0(&bytes, at, sizes)?;
        let mut seen = HashSet::from([at]);
        let mut pending: VecDeque<Continuation> = header
            .chunks
            .first()
            .map(|c| c.continuations(sizes))
            .transpose()?
            .unwrap_or_default()
            .into();
        while let Some(cont) = pending.pop_front() {
            header.check_next_chunk(&cont, &seen)?;
            let bytes = read(cont.offset, cont.length)?;
            if bytes.len() as u64 != cont.length {
                return Err(Error::Truncated {
                    structure: header.chunk_structure(),
                    at: cont.offset,
                    needed: cont.length,
                    available: bytes.len() as u64,
                }
                .into());
            }
            let chunk = header.decode_continuation(&bytes, cont.offset)?;
            pending.extend(chunk.continuations(sizes)?);
            seen.insert(cont.offset);
            header.chunks.push(chunk);
        }
        header.validate()?;
        Ok(header)
    }

    fn chunk_structure(&self) -> &'static str {
        match self.prefix {
            Prefix::V1(_) => "object header",
            Prefix::V2(_) => "OCHK",
        }
    }

    /// Checks before loading the chunk `cont` points at: the chunk bound, the length bound
    /// and that the address is new.
    fn check_next_chunk(&self, cont: &Continuation, seen: &HashSet<Addr>) -> Result<()> {
        let at = self.addr();
        if self.chunks.len() >= MAX_CHUNKS {
            return Err(Error::Invalid {
                structure: "object header",
                at,
                reason: format!("more than {MAX_CHUNKS} chunks"),
            });
        }
        if cont.length > MAX_CHUNK_LEN {
            return Err(too_long(cont.offset, cont.length));
        }
        if seen.contains(&cont.offset) {
            return Err(Error::Invalid {
                structure: "object header",
                at,
                reason: format!(
                    "continuation chunk address {} repeats (cyclic continuation chain)",
                    cont.offset
                ),
            });
        }
        Ok(())
    }

    /// Decode chunk 0 alone (for a metadata cache that loads chunks itself). `bytes` start at
    /// the header and must hold at least [`chunk0_len`] bytes; later bytes are ignored.
    pub fn decode_chunk0(bytes: &[u8], at: Addr, sizes: Sizes) -> Result<ObjectHeader> {
        let (prefix, chunk) = if bytes.starts_with(&v2::SIGNATURE) {
            let (p, c) = v2::decode_chunk0(bytes, at, sizes)?;
            (Prefix::V2(p), c)
        } else {
            let (p, c) = v1::decode_chunk0(bytes, at, sizes)?;
            (Prefix::V1(p), c)
        };
        Ok(ObjectHeader {
            sizes,
            prefix,
            chunks: vec![chunk],
        })
    }

    /// Decode a continuation chunk of this header; `bytes` are exactly the block the
    /// continuation message names (its length included the `OCHK` signature and checksum).
    pub fn decode_continuation(&self, bytes: &[u8], at: Addr) -> Result<Chunk> {
        match &self.prefix {
            Prefix::V1(_) => v1::decode_continuation(bytes, at, self.sizes),
            Prefix::V2(p) => {
                v2::decode_continuation(bytes, at, self.sizes, p.creation_order_tracked)
            }
        }
    }

    /// Append a chunk decoded with [`ObjectHeader::decode_continuation`]. It must be the
    /// target of the next continuation message not yet loaded, at a new address.
    pub fn push_chunk(&mut self, chunk: Chunk) -> Result<()> {
        let next = self
            .continuations()?
            .into_iter()
            .nth(self.chunks.len().saturating_sub(1));
        let Some(cont) = next else {
            return Err(self.invalid("no continuation message points at another chunk"));
        };
        let seen: HashSet<Addr> = self.chunks.iter().map(|c| c.addr).collect();
        self.check_next_chunk(&cont, &seen)?;
        if cont.offset != chunk.addr {
            return Err(self.invalid(format!(
                "chunk at {} is not the next continuation target {}",
                chunk.addr, cont.offset
            )));
        }
        self.chunks.push(chunk);
        Ok(())
    }

    /// The continuation message not yet followed, if any: the chunk a cache loads next.
    pub fn next_continuation(&self) -> Result<Option<Continuation>> {
        Ok(self
            .continuations()?
            .into_iter()
            .nth(self.chunks.len().saturating_sub(1)))
    }

    /// Every continuation message of the loaded chunks, decoded, in load order.
    pub fn continuations(&self) -> Result<Vec<Continuation>> {
        let mut all = Vec::new();
        for c in &self.chunks {
            all.extend(c.continuations(self.sizes)?);
        }
        Ok(all)
    }

    /// Check the loaded header is complete and consistent: every continuation message has its
    /// chunk loaded, with the length the message gives, and a version 1 header's stored
    /// message count equals the messages found in all chunks.
    pub fn validate(&self) -> Result<()> {
        let conts = self.continuations()?;
        if conts.len() != self.chunks.len().saturating_sub(1) {
            return Err(self.invalid(format!(
                "{} continuation messages but {} continuation chunks loaded",
                conts.len(),
                self.chunks.len().saturating_sub(1)
            )));
        }
        for (i, cont) in conts.iter().enumerate() {
            let i = i.saturating_add(1);
            let extent = self.chunk_extent(i);
            if extent.map(|e| (e.addr, e.len)) != Some((cont.offset, cont.length)) {
                return Err(self.invalid(format!(
                    "chunk {i} does not match its continuation message ({} bytes at {})",
                    cont.length, cont.offset
                )));
            }
        }
        if let Prefix::V1(p) = &self.prefix {
            let found = self.message_count();
            if found != usize::from(p.message_count) {
                return Err(Error::Invalid {
                    structure: "object header",
                    at: self.addr(),
                    reason: format!(
                        "prefix counts {} messages but the chunks hold {found}",
                        p.message_count
                    ),
                });
            }
        }
        Ok(())
    }

    fn invalid(&self, reason: impl Into<String>) -> Error {
        Error::Invalid {
            structure: match self.prefix {
                Prefix::V1(_) => "object header",
                Prefix::V2(_) => "OHDR",
            },
            at: self.addr(),
            reason: reason.into(),
        }
    }

    /// The object header's address (that of chunk 0).
    pub fn addr(&self) -> Addr {
        self.chunks.first().map_or(Addr(0), |c| c.addr)
    }

    /// The superblock widths the header was decoded with.
    pub fn sizes(&self) -> Sizes {
        self.sizes
    }

    /// Object header version: 1 or 2.
    pub fn version(&self) -> u8 {
        match self.prefix {
            Prefix::V1(_) => 1,
            Prefix::V2(_) => 2,
        }
    }

    /// The prefix of chunk 0.
    pub fn prefix(&self) -> &Prefix {
        &self.prefix
    }

    /// The prefix of chunk 0, for editing (reference count, times).
    pub fn prefix_mut(&mut self) -> &mut Prefix {
        &mut self.prefix
    }

    fn message_format(&self) -> MessageFormat {
        match &self.prefix {
            Prefix::V1(_) => MessageFormat::V1,
            Prefix::V2(p) => MessageFormat::V2 {
                creation_order: p.creation_order_tracked,
            },
        }
    }

    /// Every message of every loaded chunk, in order.
    pub fn messages(&self) -> impl Iterator<Item = &RawMessage> + '_ {
        self.chunks.iter().flat_map(|c| c.messages.iter())
    }

    /// Every message, mutable. Changing a data length changes the chunk's length.
    pub fn messages_mut(&mut self) -> impl Iterator<Item = &mut RawMessage> + '_ {
        self.chunks.iter_mut().flat_map(|c| c.messages.iter_mut())
    }

    /// The number of messages in all loaded chunks.
    pub fn message_count(&self) -> usize {
        self.chunks.iter().map(|c| c.messages.len()).sum()
    }

    /// Each loaded chunk's address and total length, in order.
    pub fn chunks(&self) -> impl Iterator<Item = ChunkExtent> + '_ {
        (0..self.chunks.len()).filter_map(|i| self.chunk_extent(i))
    }

    /// The number of loaded chunks.
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Chunk `i`.
    pub fn chunk(&self, i: usize) -> Option<&Chunk> {
        self.chunks.get(i)
    }

    /// Chunk `i`, for editing its messages.
    pub fn chunk_mut(&mut self, i: usize) -> Option<&mut Chunk> {
        self.chunks.get_mut(i)
    }

    /// Address and total encoded length of chunk `i`.
    pub fn chunk_extent(&self, i: usize) -> Option<ChunkExtent> {
        let chunk = self.chunks.get(i)?;
        let area = self.message_format().area_len(chunk);
        let len = match (&self.prefix, i) {
            (Prefix::V1(_), 0) => area.saturating_add(v1::PREFIX_LEN),
            (Prefix::V1(_), _) => area,
            (Prefix::V2(p), 0) => area
                .saturating_add(p.encoded_len())
                .saturating_add(v2::CHECKSUM_LEN),
            (Prefix::V2(_), _) => area
                .saturating_add(v2::SIGNATURE.len())
                .saturating_add(v2::CHECKSUM_LEN),
        };
        Some(ChunkExtent {
            addr: chunk.addr,
            len: len as u64,
        })
    }

    /// Append the exact bytes of chunk `i` to `out` (v2: its checksum last).
    pub fn encode_chunk(&self, i: usize, out: &mut Vec<u8>) -> Result<()> {
        let Some(chunk) = self.chunks.get(i) else {
            return Err(Error::Unencodable {
                structure: "object header",
                reason: format!("no chunk {i} (the header has {})", self.chunks.len()),
            });
        };
        // The image's length is known: one allocation, not one per doubling.
        if let Some(e) = self.chunk_extent(i) {
            out.reserve(usize::try_from(e.len).unwrap_or(0));
        }
        match (&self.prefix, i) {
            (Prefix::V1(p), 0) => v1::encode_chunk0(p, chunk, self.sizes, out),
            (Prefix::V1(_), _) => v1::encode_continuation(chunk, self.sizes, out),
            (Prefix::V2(p), 0) => v2::encode_chunk0(p, chunk, self.sizes, out),
            (Prefix::V2(p), _) => v2::encode_continuation(p, chunk, self.sizes, out),
        }
    }

    /// Every chunk's address and exact bytes, in order.
    pub fn encode_chunks(&self) -> Result<Vec<(Addr, Vec<u8>)>> {
        (0..self.chunks.len())
            .map(|i| {
                let mut out = Vec::new();
                self.encode_chunk(i, &mut out)?;
                Ok((self.chunks.get(i).map_or(Addr(0), |c| c.addr), out))
            })
            .collect()
    }

    /// Set a version 1 header's stored message count to the number of messages it holds
    /// (call after adding or removing messages). Does nothing for version 2.
    pub fn update_message_count(&mut self) -> Result<()> {
        let n = self.message_count();
        if let Prefix::V1(p) = &mut self.prefix {
            p.message_count = u16::try_from(n).map_err(|_| Error::TooWide {
                structure: "object header",
                field: "total number of header messages",
                value: n as u64,
                width: 2,
            })?;
        }
        Ok(())
    }

    /// A new single-chunk version 1 header at `at`, as libhdf5 writes one. Each message's
    /// data is zero-padded to a multiple of 8. With `pad_to` (bytes of message area, a multiple
    /// of 8) the space after the messages is filled with NIL messages, as libhdf5 pads a new
    /// dataset's chunk 0 to 256 bytes; if the messages need more, chunk 0 holds exactly them.
    pub fn new_v1(
        at: Addr,
        sizes: Sizes,
        refcount: u32,
        messages: Vec<RawMessage>,
        pad_to: Option<usize>,
    ) -> Result<ObjectHeader> {
        let messages: Vec<RawMessage> = messages
            .into_iter()
            .map(|mut m| {
                let padded = m.data.len().next_multiple_of(8);
                m.data.resize(padded, 0);
                m
            })
            .collect();
        let mut chunk = Chunk {
            addr: at,
            messages,
            gap: Vec::new(),
        };
        if let Some(target) = pad_to {
            if target % 8 != 0 {
                return Err(Error::Unencodable {
                    structure: "object header",
                    reason: format!("version 1 chunk size {target} is not a multiple of 8"),
                });
            }
            let used = MessageFormat::V1.area_len(&chunk);
            pad_with_nil(
                &mut chunk,
                MessageFormat::V1,
                target.saturating_sub(used),
                None,
            );
        }
        let mut header = ObjectHeader {
            sizes,
            prefix: Prefix::V1(v1::Prefix {
                message_count: 0,
                refcount,
            }),
            chunks: vec![chunk],
        };
        header.update_message_count()?;
        // Check now that the header encodes (sizes, flags), so the caller learns early.
        header.encode_chunk(0, &mut Vec::new())?;
        Ok(header)
    }

    /// A new single-chunk version 2 header at `at`. `prefix`'s chunk-0 size width is replaced
    /// by the smallest that fits (libhdf5's choice). When `prefix` tracks creation order,
    /// messages without one get 0. With `pad_to` (bytes of messages and gap), the space after
    /// the messages becomes a NIL message, or a gap if it is smaller than a message header.
    pub fn new_v2(
        at: Addr,
        sizes: Sizes,
        mut prefix: v2::Prefix,
        messages: Vec<RawMessage>,
        pad_to: Option<usize>,
    ) -> Result<ObjectHeader> {
        let tracked = prefix.creation_order_tracked;
        let messages = messages
            .into_iter()
            .map(|mut m| {
                m.creation_order = if tracked {
                    Some(m.creation_order.unwrap_or(0))
                } else {
                    None
                };
                m
            })
            .collect();
        let mut chunk = Chunk {
            addr: at,
            messages,
            gap: Vec::new(),
        };
        let format = MessageFormat::V2 {
            creation_order: tracked,
        };
        if let Some(target) = pad_to {
            let used = format.area_len(&chunk);
            pad_with_nil(
                &mut chunk,
                format,
                target.saturating_sub(used),
                tracked.then_some(0),
            );
        }
        prefix.chunk0_size_width = v2::smallest_width(format.area_len(&chunk) as u64);
        let header = ObjectHeader {
            sizes,
            prefix: Prefix::V2(prefix),
            chunks: vec![chunk],
        };
        header.encode_chunk(0, &mut Vec::new())?;
        Ok(header)
    }
}

fn too_long(at: Addr, len: u64) -> Error {
    Error::Invalid {
        structure: "object header",
        at,
        reason: format!("chunk of {len} bytes exceeds the {MAX_CHUNK_LEN}-byte bound"),
    }
}

/// Fill `free` bytes at the end of `chunk` with NIL messages (several if one cannot hold it
/// all), leaving a version 2 gap for a tail smaller than a message header.
fn pad_with_nil(
    chunk: &mut Chunk,
    format: MessageFormat,
    free: usize,
    creation_order: Option<u16>,
) {
    let header = format.header_len();
    // The largest NIL data a u16 size can carry, 8-byte aligned for version 1.
    let max_data = match format {
        MessageFormat::V1 => 65_528,
        MessageFormat::V2 { .. } => 65_535,
    };
    let mut free = free;
    while free >= header {
        let data = free.saturating_sub(header).min(max_data);
        let mut nil = RawMessage::nil(data);
        nil.creation_order = creation_order;
        chunk.messages.push(nil);
        free = free.saturating_sub(header.saturating_add(data));
    }
    chunk.gap = vec![0; free];
}

#[cfg(test)]
mod tests;
