//! Version 2 object header (`OHDR`) and its continuation chunks (`OCHK`).
//!
//! Chunk 0:
//!
//! | field                                 | size    | notes                                  |
//! |---------------------------------------|---------|----------------------------------------|
//! | signature                             | 4       | `OHDR`                                 |
//! | version                               | 1       | 2                                      |
//! | flags                                 | 1       | see below                              |
//! | access, modification, change, birth time | 4 × 4 | only if flags bit 5                   |
//! | maximum # of compact attributes       | 2       | only if flags bit 4                    |
//! | minimum # of dense attributes         | 2       | only if flags bit 4                    |
//! | size of chunk #0                      | 1/2/4/8 | width from flags bits 0-1; messages + gap |
//! | messages                              |         | packed, no padding                     |
//! | gap                                   | < header| unused tail smaller than a message header |
//! | checksum                              | 4       | lookup3 from the signature to the gap  |
//!
//! Flags: bits 0-1 width of "size of chunk #0" (0→1, 1→2, 2→4, 3→8 bytes); bit 2 attribute
//! creation order tracked; bit 3 attribute creation order indexed; bit 4 attribute phase-change
//! values stored; bit 5 times stored; bits 6-7 reserved (rejected, as libhdf5 rejects them).
//!
//! Message header: type (1), size of message data (2, exact), flags (1), creation order (2,
//! only if flags bit 2).
//!
//! Continuation chunk: `OCHK`, messages, gap, checksum (lookup3 from the signature to the gap);
//! its length in the continuation message includes the signature and checksum.

use super::{Chunk, MessageFormat};
use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};
use crate::sizes::Sizes;

/// Signature of chunk 0.
pub const SIGNATURE: [u8; 4] = *b"OHDR";
/// Signature of a continuation chunk.
pub const CONTINUATION_SIGNATURE: [u8; 4] = *b"OCHK";
/// The version byte of a version 2 object header.
pub const VERSION: u8 = 2;
/// Bytes of the checksum ending every chunk.
pub const CHECKSUM_LEN: usize = 4;

bitflags::bitflags! {
    /// The object header "Flags" byte.
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
    pub struct HeaderFlags: u8 {
        /// Bits 0-1: the width of "Size of Chunk #0" (0→1, 1→2, 2→4, 3→8 bytes).
        const CHUNK0_SIZE_WIDTH = 0x03;
        /// Bit 2: attribute creation order is tracked.
        const ATTR_CREATION_ORDER_TRACKED = 0x04;
        /// Bit 3: attribute creation order is indexed.
        const ATTR_CREATION_ORDER_INDEXED = 0x08;
        /// Bit 4: non-default attribute storage phase-change values are stored.
        const ATTR_PHASE_CHANGE_STORED = 0x10;
        /// Bit 5: access, modification, change and birth times are stored.
        const TIMES_STORED = 0x20;
    }
}

/// The four times a version 2 header may store (seconds since the Unix epoch).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Times {
    /// "Access Time".
    pub access: u32,
    /// "Modification Time".
    pub modification: u32,
    /// "Change Time".
    pub change: u32,
    /// "Birth Time".
    pub birth: u32,
}

/// Non-default attribute storage phase-change values.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PhaseChange {
    /// "Maximum # of compact attributes".
    pub max_compact: u16,
    /// "Minimum # of dense attributes" (at most `max_compact`).
    pub min_dense: u16,
}

/// The version 2 prefix fields.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Prefix {
    /// Width in bytes of "Size of Chunk #0": 1, 2, 4 or 8.
    pub chunk0_size_width: u8,
    /// Flags bit 2: every message header carries a creation order.
    pub creation_order_tracked: bool,
    /// Flags bit 3: attribute creation order is indexed.
    pub creation_order_indexed: bool,
    /// Flags bit 4 and the values it guards.
    pub phase_change: Option<PhaseChange>,
    /// Flags bit 5 and the times it guards.
    pub times: Option<Times>,
}

impl Default for Prefix {
    /// What h5py writes: no times, no creation order, default phase change, 1-byte size.
    fn default() -> Self {
        Prefix {
            chunk0_size_width: 1,
            creation_order_tracked: false,
            creation_order_indexed: false,
            phase_change: None,
            times: None,
        }
    }
}

impl Prefix {
    /// The flags byte these fields encode to, or `None` for a width other than 1, 2, 4, 8.
    pub fn flags(&self) -> Option<HeaderFlags> {
        let width_bits = match self.chunk0_size_width {
            1 => 0,
            2 => 1,
            4 => 2,
            8 => 3,
            _ => return None,
        };
        let mut f = HeaderFlags::from_bits_retain(width_bits);
        f.set(
            HeaderFlags::ATTR_CREATION_ORDER_TRACKED,
            self.creation_order_tracked,
        );
        f.set(
            HeaderFlags::ATTR_CREATION_ORDER_INDEXED,
            self.creation_order_indexed,
        );
        f.set(
            HeaderFlags::ATTR_PHASE_CHANGE_STORED,
            self.phase_change.is_some(),
        );
        f.set(HeaderFlags::TIMES_STORED, self.times.is_some());
        Some(f)
    }

    /// Bytes of the prefix before the first message.
    pub fn encoded_len(&self) -> usize {
        let times = if self.times.is_some() { 16 } else { 0 };
        let phase = if self.phase_change.is_some() { 4 } else { 0 };
        6usize
            .saturating_add(times)
            .saturating_add(phase)
            .saturating_add(usize::from(self.chunk0_size_width))
    }

    /// Decode the prefix and the stored "Size of Chunk #0".
    fn decode(d: &mut Decoder<'_>) -> Result<(Prefix, u64)> {
        d.signature(&SIGNATURE)?;
        let version_at = d.addr();
        let version = d.u8()?;
        if version != VERSION {
            return Err(d.bad_version(version_at, version));
        }
        let flags_at = d.addr();
        let raw = d.u8()?;
        let flags = HeaderFlags::from_bits(raw)
            .ok_or_else(|| d.bad_value(flags_at, "object header flags", u64::from(raw)))?;
        let times = if flags.contains(HeaderFlags::TIMES_STORED) {
            Some(Times {
                access: d.u32()?,
                modification: d.u32()?,
                change: d.u32()?,
                birth: d.u32()?,
            })
        } else {
            None
        };
        let phase_change = if flags.contains(HeaderFlags::ATTR_PHASE_CHANGE_STORED) {
            let at = d.addr();
            let max_compact = d.u16()?;
            let min_dense = d.u16()?;
            if max_compact < min_dense {
                return Err(d.invalid(
                    at,
                    format!(
                        "maximum compact attributes {max_compact} below minimum dense {min_dense}"
                    ),
                ));
            }
            Some(PhaseChange {
                max_compact,
                min_dense,
            })
        } else {
            None
        };
        let chunk0_size_width = match raw & 0x03 {
            0 => 1,
            1 => 2,
            2 => 4,
            _ => 8,
        };
        let size_at = d.addr();
        let size = d.uint(chunk0_size_width)?;
        let prefix = Prefix {
            chunk0_size_width,
            creation_order_tracked: flags.contains(HeaderFlags::ATTR_CREATION_ORDER_TRACKED),
            creation_order_indexed: flags.contains(HeaderFlags::ATTR_CREATION_ORDER_INDEXED),
            phase_change,
            times,
        };
        let header_len = prefix.message_format().header_len() as u64;
        if size > 0 && size < header_len {
            return Err(d.bad_value(size_at, "size of chunk #0", size));
        }
        Ok((prefix, size))
    }

    fn message_format(&self) -> MessageFormat {
        MessageFormat::V2 {
            creation_order: self.creation_order_tracked,
        }
    }
}

/// The smallest "Size of Chunk #0" width holding `size` (libhdf5's choice for a new header).
pub fn smallest_width(size: u64) -> u8 {
    if size <= 0xff {
        1
    } else if size <= 0xffff {
        2
    } else if size <= 0xffff_ffff {
        4
    } else {
        8
    }
}

/// Total length of chunk 0 (prefix, messages, gap, checksum) from its first bytes.
pub(super) fn chunk0_len(bytes: &[u8], at: Addr) -> Result<u64> {
    let mut d = Decoder::new(bytes, at, Sizes::DEFAULT, "OHDR");
    let (_, size) = Prefix::decode(&mut d)?;
    (d.position() as u64)
        .checked_add(size)
        .and_then(|n| n.checked_add(CHECKSUM_LEN as u64))
        .ok_or_else(|| d.bad_value(at, "size of chunk #0", size))
}

/// Decode chunk 0, verifying its checksum before decoding any message.
pub(super) fn decode_chunk0(bytes: &[u8], at: Addr, sizes: Sizes) -> Result<(Prefix, Chunk)> {
    let mut d = Decoder::new(bytes, at, sizes, "OHDR");
    let (prefix, size) = Prefix::decode(&mut d)?;
    let prefix_len = d.position();
    let size = d.check_count(size, 1)?;
    let covered = prefix_len
        .checked_add(size)
        .ok_or_else(|| d.bad_value(at, "size of chunk #0", size as u64))?;
    let total = covered
        .checked_add(CHECKSUM_LEN)
        .ok_or_else(|| d.bad_value(at, "size of chunk #0", size as u64))?;
    let whole = Decoder::new(bytes, at, sizes, "OHDR").sub(total)?;
    whole.verify_checksum(covered)?;
    let mut area = d.sub(size)?;
    let (messages, gap) = prefix.message_format().decode_messages(&mut area)?;
    Ok((
        prefix,
        Chunk {
            addr: at,
            messages,
            gap,
        },
    ))
}

/// Decode a continuation chunk; `bytes` are exactly the chunk.
pub(super) fn decode_continuation(
    bytes: &[u8],
    at: Addr,
    sizes: Sizes,
    creation_order_tracked: bool,
) -> Result<Chunk> {
    let mut d = Decoder::new(bytes, at, sizes, "OCHK");
    d.signature(&CONTINUATION_SIGNATURE)?;
    let covered = bytes
        .len()
        .checked_sub(CHECKSUM_LEN)
        .ok_or(Error::Truncated {
            structure: "OCHK",
            at,
            needed: (SIGNATURE.len().saturating_add(CHECKSUM_LEN)) as u64,
            available: bytes.len() as u64,
        })?;
    d.verify_checksum(covered)?;
    let area_len = covered.saturating_sub(CONTINUATION_SIGNATURE.len());
    let mut area = d.sub(area_len)?;
    let format = MessageFormat::V2 {
        creation_order: creation_order_tracked,
    };
    let (messages, gap) = format.decode_messages(&mut area)?;
    Ok(Chunk {
        addr: at,
        messages,
        gap,
    })
}

/// Encode chunk 0 with its checksum.
pub(super) fn encode_chunk0(
    p: &Prefix,
    chunk: &Chunk,
    sizes: Sizes,
    out: &mut Vec<u8>,
) -> Result<()> {
    let flags = p.flags().ok_or_else(|| Error::Unencodable {
        structure: "OHDR",
        reason: format!(
            "size of chunk #0 width {} is not 1, 2, 4 or 8",
            p.chunk0_size_width
        ),
    })?;
    let format = p.message_format();
    let mut e = Encoder::new(out, sizes, "OHDR");
    e.bytes(&SIGNATURE);
    e.u8(VERSION);
    e.u8(flags.bits());
    if let Some(t) = p.times {
        e.u32(t.access);
        e.u32(t.modification);
        e.u32(t.change);
        e.u32(t.birth);
    }
    if let Some(pc) = p.phase_change {
        e.u16(pc.max_compact);
        e.u16(pc.min_dense);
    }
    let size = format.area_len(chunk) as u64;
    e.uint(size, p.chunk0_size_width, "size of chunk #0")?;
    format.encode_messages(&mut e, chunk)?;
    e.checksum();
    Ok(())
}

/// Encode a continuation chunk with its checksum.
pub(super) fn encode_continuation(
    p: &Prefix,
    chunk: &Chunk,
    sizes: Sizes,
    out: &mut Vec<u8>,
) -> Result<()> {
    let mut e = Encoder::new(out, sizes, "OCHK");
    e.bytes(&CONTINUATION_SIGNATURE);
    p.message_format().encode_messages(&mut e, chunk)?;
    e.checksum();
    Ok(())
}
