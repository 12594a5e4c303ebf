//! Free-space manager (`FSHD` header, `FSSE` section info): the free space libhdf5 tracks in a
//! fractal heap's direct blocks (or in the file), as sections it allocates from. h5chunk reads
//! a heap's sections to know which heap space libhdf5 may hand out later.
//!
//! Header (`FSHD`, version 0): client ID u8 (0: fractal heap, 1: file), total space tracked
//! (L), sections (L), serialized sections (L), ghost sections (L), section classes u16, shrink
//! percent u16, expand percent u16, bits of the address space u16, largest section size (L),
//! section info address (O), its size used (L) and allocated (L), checksum.
//!
//! Section info (`FSSE`, version 0): the header's address (O), then groups of sections of one
//! size: the count (bytes enough for the serialized section count), the size (bytes enough
//! for the largest section size), and per section its offset (bytes enough for the address
//! space's bits), its class u8 and the class's data; checksum last. A fractal heap's classes:
//! 0 single (a run in one direct block, no data), 1 first row and 3 indirect (unmade blocks
//! of an indirect block: its heap offset in heap-offset bytes, row u16, column u16, entries
//! u16), 2 normal row (never serialized).

use crate::addr::Addr;
use crate::cursor::Decoder;
use crate::error::Result;
use crate::sizes::Sizes;

/// The header's signature.
pub const HEADER_SIGNATURE: &[u8; 4] = b"FSHD";
/// The section info's signature.
pub const SECTIONS_SIGNATURE: &[u8; 4] = b"FSSE";

/// A decoded free-space manager header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Whose space: 0 a fractal heap, 1 the file.
    pub client: u8,
    /// Bytes of free space tracked.
    pub total_space: u64,
    /// Sections tracked.
    pub sections: u64,
    /// Sections written in the section info.
    pub serial_sections: u64,
    /// Sections not written ("ghost" sections).
    pub ghost_sections: u64,
    /// Bits of the address space the sections' offsets are in.
    pub address_bits: u16,
    /// The largest section size tracked.
    pub max_section_size: u64,
    /// The section info, if written.
    pub sections_addr: Option<Addr>,
    /// Bytes of the section info.
    pub sections_len: u64,
}

impl Header {
    /// Bytes of a header at `sizes`.
    pub fn encoded_len(sizes: Sizes) -> usize {
        let (o, l) = (usize::from(sizes.offsets()), usize::from(sizes.lengths()));
        // Signature, version, client, four u16; seven lengths; an offset; the checksum.
        (4usize + 1 + 1 + 8)
            .saturating_add(l.saturating_mul(7))
            .saturating_add(o)
            .saturating_add(4)
    }

    /// Decode the header at `at` from `bytes`, checksum verified first.
    pub fn decode(bytes: &[u8], at: Addr, sizes: Sizes) -> Result<Header> {
        let mut d = Decoder::new(bytes, at, sizes, "free-space manager header");
        d.verify_checksum(Header::encoded_len(sizes).saturating_sub(4))?;
        d.signature(HEADER_SIGNATURE)?;
        let v_at = d.addr();
        let version = d.u8()?;
        if version != 0 {
            return Err(d.bad_version(v_at, version));
        }
        let client = d.u8()?;
        let total_space = d.length()?;
        let sections = d.length()?;
        let serial_sections = d.length()?;
        let ghost_sections = d.length()?;
        let _classes = d.u16()?;
        let _shrink = d.u16()?;
        let _expand = d.u16()?;
        let bits_at = d.addr();
        let address_bits = d.u16()?;
        if address_bits == 0 || address_bits > 64 {
            return Err(d.bad_value(bits_at, "address space bits", u64::from(address_bits)));
        }
        let max_section_size = d.length()?;
        let sections_addr = d.offset()?;
        let sections_len = d.length()?;
        let _allocated = d.length()?;
        Ok(Header {
            client,
            total_space,
            sections,
            serial_sections,
            ghost_sections,
            address_bits,
            max_section_size,
            sections_addr,
            sections_len,
        })
    }
}

/// Bytes enough to encode `v`, as libhdf5 sizes its variable-width fields.
fn enc_size(v: u64) -> u8 {
    // floor(log2(v)) / 8 + 1, at most 8.
    (v.max(1).ilog2() / 8).saturating_add(1) as u8
}

/// A fractal heap's free-space section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapSection {
    /// Free bytes `[offset, offset + size)` inside one direct block.
    Single {
        /// Heap offset.
        offset: u64,
        /// Bytes.
        size: u64,
    },
    /// `entries` unmade blocks of the indirect block at heap offset `iblock`, from `row` /
    /// `col` on (classes 1 and 3).
    Blocks {
        /// The indirect block's heap offset.
        iblock: u64,
        /// First row.
        row: u16,
        /// First column.
        col: u16,
        /// Entries covered.
        entries: u16,
    },
}

/// Decode a fractal heap's section info (`bytes`, the header's `sections_len` of them, at
/// `at`) whose header is `h` at `header_at`; `offset_bytes` is the heap's heap-offset width.
pub fn decode_heap_sections(
    bytes: &[u8],
    at: Addr,
    sizes: Sizes,
    h: &Header,
    header_at: Addr,
    offset_bytes: u8,
) -> Result<Vec<HeapSection>> {
    let mut d = Decoder::new(bytes, at, sizes, "free-space sections");
    let covered = usize::try_from(h.sections_len)
        .unwrap_or(usize::MAX)
        .saturating_sub(4);
    d.verify_checksum(covered)?;
    d.signature(SECTIONS_SIGNATURE)?;
    let v_at = d.addr();
    let version = d.u8()?;
    if version != 0 {
        return Err(d.bad_version(v_at, version));
    }
    let owner_at = d.addr();
    let owner = d.offset()?;
    if owner != Some(header_at) {
        return Err(d.invalid(
            owner_at,
            format!("belongs to {owner:?}, not the header at {header_at}"),
        ));
    }
    let count_bytes = enc_size(h.serial_sections);
    let size_bytes = enc_size(h.max_section_size);
    let offset_width = h.address_bits.div_ceil(8) as u8;
    let mut out = Vec::new();
    while d.position() < covered {
        let count = d.uint(count_bytes)?;
        let size = d.uint(size_bytes)?;
        // Each section takes at least its offset and class byte.
        let count = d.check_count(count, usize::from(offset_width).saturating_add(1))?;
        for _ in 0..count {
            let offset = d.uint(offset_width)?;
            let class_at = d.addr();
            match d.u8()? {
                0 => out.push(HeapSection::Single { offset, size }),
                1 | 3 => out.push(HeapSection::Blocks {
                    iblock: d.uint(offset_bytes)?,
                    row: d.u16()?,
                    col: d.u16()?,
                    entries: d.u16()?,
                }),
                class => {
                    return Err(d.bad_value(class_at, "section class", u64::from(class)));
                }
            }
        }
    }
    if d.position() != covered {
        return Err(d.invalid(d.addr(), "sections run past the checksum"));
    }
    if out.len() as u64 != h.serial_sections {
        return Err(d.invalid(
            at,
            format!(
                "{} sections, the header says {}",
                out.len(),
                h.serial_sections
            ),
        ));
    }
    Ok(out)
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;
    use crate::checksum::lookup3;

    const HEADER_AT: Addr = Addr(0x100);
    const SECTIONS_AT: Addr = Addr(0x200);

    fn sealed(mut bytes: Vec<u8>) -> Vec<u8> {
        let c = lookup3(&bytes);
        bytes.extend_from_slice(&c.to_le_bytes());
        bytes
    }

    /// A fractal heap's sections (8-byte offsets and lengths): two singles of 40 bytes, one
    /// indirect section of 1024 bytes, as libhdf5 lays them out.
    #[rustfmt::skip]
    fn sections() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(b"FSSE");
        b.push(0);                                    // version
        b.extend_from_slice(&0x100u64.to_le_bytes()); // header address
        b.push(2);                                    // two sections (1 byte: 3 serialized)
        b.extend_from_slice(&[40, 0]);                // of 40 bytes (2 bytes: largest 65535)
        b.extend_from_slice(&[0x10, 0x01, 0, 0]);     // offset 0x110 (4 bytes: 32-bit space)
        b.push(0);                                    // single
        b.extend_from_slice(&[0x00, 0x02, 0, 0]);     // offset 0x200
        b.push(0);                                    // single
        b.push(1);                                    // one section
        b.extend_from_slice(&[0, 4]);                 // of 1024 bytes
        b.extend_from_slice(&[0, 0x10, 0, 0]);        // offset 0x1000
        b.push(3);                                    // indirect
        b.extend_from_slice(&[0, 0, 0, 0]);           // in the root (heap offset 0)
        b.extend_from_slice(&[2, 0, 1, 0, 3, 0]);     // row 2, column 1, 3 entries
        sealed(b)
    }

    #[rustfmt::skip]
    fn header() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(b"FSHD");
        b.push(0);                                    // version
        b.push(0);                                    // client: fractal heap
        for v in [1104u64, 3, 3, 0] {                 // space, sections, serialized, ghost
            b.extend_from_slice(&v.to_le_bytes());
        }
        for v in [4u16, 80, 120, 32] {                // classes, shrink, expand, address bits
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&65535u64.to_le_bytes()); // largest section
        b.extend_from_slice(&0x200u64.to_le_bytes()); // section info address
        let len = sections().len() as u64;
        b.extend_from_slice(&len.to_le_bytes());      // its size
        b.extend_from_slice(&len.to_le_bytes());      // allocated
        sealed(b)
    }

    #[test]
    fn decode_header_and_heap_sections() {
        let sizes = Sizes::DEFAULT;
        let hb = header();
        assert_eq!(hb.len(), Header::encoded_len(sizes));
        let h = Header::decode(&hb, HEADER_AT, sizes).unwrap();
        assert_eq!((h.client, h.serial_sections), (0, 3));
        assert_eq!(h.sections_addr, Some(SECTIONS_AT));
        let s = decode_heap_sections(&sections(), SECTIONS_AT, sizes, &h, HEADER_AT, 4).unwrap();
        assert_eq!(
            s,
            [
                HeapSection::Single {
                    offset: 0x110,
                    size: 40
                },
                HeapSection::Single {
                    offset: 0x200,
                    size: 40
                },
                HeapSection::Blocks {
                    iblock: 0,
                    row: 2,
                    col: 1,
                    entries: 3
                },
            ]
        );
        // Sections of another header: refused.
        assert!(decode_heap_sections(&sections(), SECTIONS_AT, sizes, &h, Addr(8), 4).is_err());
    }

    #[test]
    fn rejects_truncation() {
        let sizes = Sizes::DEFAULT;
        let (hb, sb) = (header(), sections());
        let h = Header::decode(&hb, HEADER_AT, sizes).unwrap();
        for n in 0..hb.len() {
            assert!(Header::decode(&hb[..n], HEADER_AT, sizes).is_err(), "{n}");
        }
        for n in 0..sb.len() {
            assert!(
                decode_heap_sections(&sb[..n], SECTIONS_AT, sizes, &h, HEADER_AT, 4).is_err(),
                "{n}"
            );
        }
    }

    #[test]
    fn rejects_flipped_byte() {
        let sizes = Sizes::DEFAULT;
        let (hb, sb) = (header(), sections());
        let h = Header::decode(&hb, HEADER_AT, sizes).unwrap();
        for i in 0..hb.len() {
            let mut b = hb.clone();
            b[i] ^= 0x40;
            assert!(Header::decode(&b, HEADER_AT, sizes).is_err(), "{i}");
        }
        for i in 0..sb.len() {
            let mut b = sb.clone();
            b[i] ^= 0x40;
            assert!(
                decode_heap_sections(&b, SECTIONS_AT, sizes, &h, HEADER_AT, 4).is_err(),
                "{i}"
            );
        }
    }
}
