//! Fixed array: header (`FAHD`), data block (`FADB`) and data block pages.
//!
//! libhdf5 indexes the chunks of a dataset with no unlimited dimension (latest format) with a
//! fixed array sized by the maximum dimensions. Element bytes are opaque here: the element
//! class (an unfiltered chunk address, or a filtered chunk record) belongs to the caller.
//!
//! Header, `sa` = size of offsets, `ss` = size of lengths:
//!
//! | off    | size | field                                             |
//! |--------|------|---------------------------------------------------|
//! | 0      | 4    | signature `FAHD`                                  |
//! | 4      | 1    | version (0)                                       |
//! | 5      | 1    | client id (0 unfiltered chunks, 1 filtered)       |
//! | 6      | 1    | element size                                      |
//! | 7      | 1    | max data block page elements bits                 |
//! | 8      | ss   | number of elements                                |
//! | 8+ss   | sa   | data block address (undefined until first set)    |
//! | …      | 4    | checksum                                          |
//!
//! Data block:
//!
//! | size             | field                                                        |
//! |------------------|--------------------------------------------------------------|
//! | 4                | signature `FADB`                                             |
//! | 1                | version (0)                                                  |
//! | 1                | client id                                                    |
//! | sa               | header address                                               |
//! | ceil(npages/8)   | page init bitmap, MSB first (only when paged)                |
//! | n × esz          | elements (only when not paged)                               |
//! | 4                | checksum of everything above                                 |
//!
//! A paged block is followed by its pages: each holds `page_nelmts` elements (the last one the
//! remainder) and its own checksum, with no signature.

#![deny(missing_docs)]

use crate::addr::Addr;
use crate::checksum::lookup3;
use crate::cursor::{Decoder, Encoder, verify_checksum};
use crate::error::{Error, Result};
use crate::sizes::Sizes;

/// `FAHD`.
pub const HEADER_SIGNATURE: [u8; 4] = *b"FAHD";
/// `FADB`.
pub const DATA_BLOCK_SIGNATURE: [u8; 4] = *b"FADB";
/// The only version of both blocks.
pub const VERSION: u8 = 0;
/// Largest `max_dblk_page_nelmts_bits` accepted: 2^31 elements per page is far beyond what
/// libhdf5 writes (10) and keeps page sizes representable on every platform.
pub const MAX_PAGE_BITS: u8 = 31;

/// The fixed array header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Client id: 0 for unfiltered chunks, 1 for filtered chunks.
    pub client_id: u8,
    /// Size of one element in bytes.
    pub element_size: u8,
    /// log2 of the number of elements in a data block page.
    pub max_dblk_page_nelmts_bits: u8,
    /// Number of elements in the array.
    pub nelmts: u64,
    /// Address of the data block, `None` until the first element is set.
    pub data_block: Option<Addr>,
}

impl Header {
    /// Encoded size in bytes, checksum included.
    #[allow(clippy::arithmetic_side_effects)] // small constants and widths of at most 8
    pub fn encoded_len(sizes: Sizes) -> usize {
        8 + usize::from(sizes.lengths()) + usize::from(sizes.offsets()) + 4
    }

    /// Decode a header whose first byte is at file address `at`.
    pub fn decode(bytes: &[u8], at: Addr, sizes: Sizes) -> Result<Header> {
        let len = Self::encoded_len(sizes);
        let mut d = Decoder::new(bytes, at, sizes, "FAHD");
        d.signature(&HEADER_SIGNATURE)?;
        d.verify_checksum(len.saturating_sub(4))?;
        let v_at = d.addr();
        let version = d.u8()?;
        if version != VERSION {
            return Err(d.bad_version(v_at, version));
        }
        let c_at = d.addr();
        let client_id = d.u8()?;
        if client_id > 1 {
            return Err(d.bad_value(c_at, "client id", client_id.into()));
        }
        let es_at = d.addr();
        let element_size = d.u8()?;
        if element_size == 0 {
            return Err(d.bad_value(es_at, "element size", 0));
        }
        let pb_at = d.addr();
        let max_dblk_page_nelmts_bits = d.u8()?;
        if max_dblk_page_nelmts_bits == 0 || max_dblk_page_nelmts_bits > MAX_PAGE_BITS {
            return Err(d.bad_value(
                pb_at,
                "max data block page elements bits",
                max_dblk_page_nelmts_bits.into(),
            ));
        }
        let nelmts = d.length()?;
        let data_block = d.offset()?;
        Ok(Header {
            client_id,
            element_size,
            max_dblk_page_nelmts_bits,
            nelmts,
            data_block,
        })
    }

    /// Append the encoded header, checksum last.
    pub fn encode(&self, sizes: Sizes, out: &mut Vec<u8>) -> Result<()> {
        let mut e = Encoder::new(out, sizes, "FAHD");
        e.bytes(&HEADER_SIGNATURE);
        e.u8(VERSION);
        e.u8(self.client_id);
        e.u8(self.element_size);
        e.u8(self.max_dblk_page_nelmts_bits);
        e.length(self.nelmts, "number of elements")?;
        e.offset(self.data_block, "data block address")?;
        e.checksum();
        Ok(())
    }

    /// The data block geometry this header implies.
    pub fn geometry(&self) -> Result<Geometry> {
        Geometry::new(
            self.nelmts,
            self.element_size,
            self.max_dblk_page_nelmts_bits,
        )
    }
}

/// Sizes and offsets of a fixed array's data block, computed once per array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Number of elements.
    pub nelmts: u64,
    /// Bytes per element.
    pub element_size: u8,
    /// Elements per page (a power of two).
    pub page_nelmts: u64,
    /// Number of pages; 0 when the block is not paged.
    pub npages: u64,
}

// Geometry arithmetic is bounded: `new` checks that the whole block, elements and page
// checksums included, fits in a u64, and every value below is at most that total.
#[allow(clippy::arithmetic_side_effects)]
impl Geometry {
    /// The geometry of `nelmts` elements of `element_size` bytes with `2^page_bits`-element
    /// pages. Fails when the block could not be addressed.
    pub fn new(nelmts: u64, element_size: u8, page_bits: u8) -> Result<Geometry> {
        let page_nelmts = 1u64
            .checked_shl(u32::from(page_bits))
            .filter(|_| page_bits <= MAX_PAGE_BITS)
            .ok_or(Error::Unencodable {
                structure: "FADB",
                reason: format!("page bits {page_bits} out of range"),
            })?;
        let npages = if nelmts > page_nelmts {
            nelmts.div_ceil(page_nelmts)
        } else {
            0
        };
        let g = Geometry {
            nelmts,
            element_size,
            page_nelmts,
            npages,
        };
        // Reject arrays whose block size overflows: a corrupt element count must not turn into
        // arithmetic that wraps.
        nelmts
            .checked_mul(u64::from(element_size))
            .and_then(|b| b.checked_add(npages.checked_mul(4)?))
            .ok_or(Error::Unencodable {
                structure: "FADB",
                reason: format!("{nelmts} elements of {element_size} bytes overflow"),
            })?;
        Ok(g)
    }

    /// Whether the data block is split into pages.
    pub fn is_paged(&self) -> bool {
        self.npages > 0
    }

    /// Bytes of the page-init bitmap (0 when not paged).
    pub fn bitmap_len(&self) -> usize {
        usize::try_from(self.npages.div_ceil(8)).unwrap_or(usize::MAX)
    }

    /// Bytes of the data block's prefix: signature, version, client id, header address and
    /// bitmap (without elements or checksum).
    pub fn prefix_len(&self, sizes: Sizes) -> usize {
        6 + usize::from(sizes.offsets()) + self.bitmap_len()
    }

    /// Bytes the data block's first read covers: the whole block when not paged, the prefix and
    /// its checksum when paged.
    pub fn block_image_len(&self, sizes: Sizes) -> u64 {
        let prefix = self.prefix_len(sizes) as u64 + 4;
        if self.is_paged() {
            prefix
        } else {
            prefix + self.nelmts * u64::from(self.element_size)
        }
    }

    /// Bytes allocated in the file for the data block and all of its pages.
    pub fn allocated_len(&self, sizes: Sizes) -> u64 {
        self.prefix_len(sizes) as u64
            + 4
            + self.nelmts * u64::from(self.element_size)
            + self.npages * 4
    }

    /// Number of elements held by page `p`: the last page holds the remainder.
    pub fn page_nelmts_of(&self, p: u64) -> u64 {
        if p + 1 < self.npages {
            self.page_nelmts
        } else {
            self.nelmts - (self.npages.saturating_sub(1)) * self.page_nelmts
        }
    }

    /// Bytes of page `p` in the file, checksum included.
    pub fn page_len(&self, p: u64) -> u64 {
        self.page_nelmts_of(p) * u64::from(self.element_size) + 4
    }

    /// Offset of page `p` from the data block's address.
    pub fn page_offset(&self, p: u64, sizes: Sizes) -> u64 {
        self.prefix_len(sizes) as u64
            + 4
            + p * (self.page_nelmts * u64::from(self.element_size) + 4)
    }

    /// The page holding element `i` and the element's index within it.
    pub fn locate(&self, i: u64) -> (u64, u64) {
        (i / self.page_nelmts, i % self.page_nelmts)
    }
}

/// A fixed array data block. When paged, its elements live in separate pages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataBlock {
    /// Client id, as in the header.
    pub client_id: u8,
    /// Address of the array's header.
    pub header: Addr,
    /// Page-init bitmap, MSB first; empty when the block is not paged.
    pub page_init: Vec<u8>,
    /// The raw elements (`nelmts × element_size` bytes) when not paged; empty when paged.
    pub elements: Vec<u8>,
}

impl DataBlock {
    /// A new block with every element set to `fill` (one element's bytes) and no page
    /// initialised.
    pub fn new(client_id: u8, header: Addr, geometry: &Geometry, fill: &[u8]) -> DataBlock {
        let elements = if geometry.is_paged() {
            Vec::new()
        } else {
            fill.repeat(geometry.nelmts as usize)
        };
        DataBlock {
            client_id,
            header,
            page_init: vec![0; geometry.bitmap_len()],
            elements,
        }
    }

    /// Decode the block image (see [`Geometry::block_image_len`]) at file address `at`.
    pub fn decode(bytes: &[u8], at: Addr, sizes: Sizes, geometry: &Geometry) -> Result<DataBlock> {
        let mut d = Decoder::new(bytes, at, sizes, "FADB");
        d.signature(&DATA_BLOCK_SIGNATURE)?;
        let image = usize::try_from(geometry.block_image_len(sizes))
            .map_err(|_| d.invalid(at, "data block larger than the address space"))?;
        d.verify_checksum(image.saturating_sub(4))?;
        let v_at = d.addr();
        let version = d.u8()?;
        if version != VERSION {
            return Err(d.bad_version(v_at, version));
        }
        let c_at = d.addr();
        let client_id = d.u8()?;
        if client_id > 1 {
            return Err(d.bad_value(c_at, "client id", client_id.into()));
        }
        let header = d.defined_offset("header address")?;
        let page_init = d.bytes(geometry.bitmap_len())?.to_vec();
        let elements = if geometry.is_paged() {
            Vec::new()
        } else {
            let n = d.check_count(geometry.nelmts, usize::from(geometry.element_size))?;
            d.bytes(n.saturating_mul(usize::from(geometry.element_size)))?
                .to_vec()
        };
        Ok(DataBlock {
            client_id,
            header,
            page_init,
            elements,
        })
    }

    /// Append the block image (prefix, elements when not paged, checksum).
    pub fn encode(&self, sizes: Sizes, out: &mut Vec<u8>) -> Result<()> {
        let mut e = Encoder::new(out, sizes, "FADB");
        e.bytes(&DATA_BLOCK_SIGNATURE);
        e.u8(VERSION);
        e.u8(self.client_id);
        e.offset(Some(self.header), "header address")?;
        e.bytes(&self.page_init);
        e.bytes(&self.elements);
        e.checksum();
        Ok(())
    }

    /// Whether page `p` has been written.
    pub fn page_initialized(&self, p: u64) -> bool {
        bit(&self.page_init, p)
    }

    /// Mark page `p` as written.
    pub fn set_page_initialized(&mut self, p: u64) {
        set_bit(&mut self.page_init, p);
    }
}

/// Verify and return the elements of a data block page (`nelmts` elements of `element_size`
/// bytes followed by their checksum) read from file address `at`.
pub fn decode_page<'a>(
    bytes: &'a [u8],
    at: Addr,
    nelmts: u64,
    element_size: u8,
    structure: &'static str,
) -> Result<&'a [u8]> {
    let len = usize::try_from(nelmts)
        .ok()
        .and_then(|n| n.checked_mul(usize::from(element_size)))
        .ok_or(Error::Invalid {
            structure,
            at,
            reason: format!("page of {nelmts} elements is too large"),
        })?;
    verify_checksum(bytes, len, at, structure)?;
    bytes.get(..len).ok_or(Error::Truncated {
        structure,
        at,
        needed: len as u64,
        available: bytes.len() as u64,
    })
}

/// Append a data block page: the elements, then their checksum.
pub fn encode_page(elements: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(elements);
    out.extend_from_slice(&lookup3(elements).to_le_bytes());
}

/// Bit `i` of an MSB-first bitmap (`false` past its end).
pub fn bit(bitmap: &[u8], i: u64) -> bool {
    usize::try_from(i / 8)
        .ok()
        .and_then(|b| bitmap.get(b))
        .is_some_and(|byte| byte & (0x80 >> (i % 8)) != 0)
}

/// Set bit `i` of an MSB-first bitmap (no effect past its end).
pub fn set_bit(bitmap: &mut [u8], i: u64) {
    if let Some(byte) = usize::try_from(i / 8).ok().and_then(|b| bitmap.get_mut(b)) {
        *byte |= 0x80 >> (i % 8);
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;

    const S: Sizes = Sizes::DEFAULT;

    /// A header written by libhdf5 1.14.6 (docs/format/chunk-index-format.md §7.1).
    #[rustfmt::skip]
    const FAHD: [u8; 28] = [
        b'F', b'A', b'H', b'D',
        0x00,                                           // version
        0x00,                                           // client id: unfiltered
        0x08,                                           // element size
        0x0a,                                           // page bits
        0x0c, 0, 0, 0, 0, 0, 0, 0,                      // 12 elements
        0xeb, 0x01, 0, 0, 0, 0, 0, 0,                   // data block @ 491
        0x79, 0xcf, 0x9f, 0x5f,                         // checksum
    ];

    #[test]
    fn decode_header_from_libhdf5() {
        let h = Header::decode(&FAHD, Addr(0x1c3), S).unwrap();
        assert_eq!(h.nelmts, 12);
        assert_eq!(h.data_block, Some(Addr(491)));
        assert_eq!(h.max_dblk_page_nelmts_bits, 10);
        let mut out = Vec::new();
        h.encode(S, &mut out).unwrap();
        assert_eq!(out, FAHD);
    }

    #[test]
    fn unpaged_block_geometry_matches_libhdf5() {
        let g = Geometry::new(12, 8, 10).unwrap();
        assert!(!g.is_paged());
        assert_eq!(g.block_image_len(S), 114);
        assert_eq!(g.allocated_len(S), 114);
    }

    #[test]
    fn paged_block_geometry_matches_libhdf5() {
        // 2500 chunks: 3 pages, the last holding 452 elements; prefix 15 bytes + checksum.
        let g = Geometry::new(2500, 8, 10).unwrap();
        assert_eq!(g.npages, 3);
        assert_eq!(g.prefix_len(S), 15);
        assert_eq!(g.page_offset(0, S), 19);
        assert_eq!(g.page_nelmts_of(2), 452);
        assert_eq!(g.page_len(2), 452 * 8 + 4);
        assert_eq!(g.allocated_len(S), 19 + 2500 * 8 + 12);
    }

    #[test]
    fn roundtrip_data_blocks_and_pages() {
        for nelmts in [12u64, 2500] {
            let g = Geometry::new(nelmts, 8, 10).unwrap();
            let mut b = DataBlock::new(0, Addr(0x1c3), &g, &[0xff; 8]);
            if g.is_paged() {
                b.set_page_initialized(0);
                b.set_page_initialized(2);
                assert_eq!(b.page_init, vec![0xa0]);
            } else {
                b.elements[..8].copy_from_slice(&0x800u64.to_le_bytes());
            }
            let mut out = Vec::new();
            b.encode(S, &mut out).unwrap();
            assert_eq!(out.len() as u64, g.block_image_len(S));
            assert_eq!(DataBlock::decode(&out, Addr(491), S, &g).unwrap(), b);
            for i in 0..out.len() {
                let mut bad = out.clone();
                bad[i] ^= 0x10;
                assert!(
                    DataBlock::decode(&bad, Addr(491), S, &g).is_err(),
                    "byte {i}"
                );
            }
            for n in 0..out.len() {
                assert!(DataBlock::decode(&out[..n], Addr(491), S, &g).is_err());
            }
        }
        let elems: Vec<u8> = (0..452 * 8).map(|i| i as u8).collect();
        let mut page = Vec::new();
        encode_page(&elems, &mut page);
        assert_eq!(
            decode_page(&page, Addr(0), 452, 8, "FADB page").unwrap(),
            &elems[..]
        );
        page[17] ^= 1;
        assert!(matches!(
            decode_page(&page, Addr(0), 452, 8, "FADB page"),
            Err(Error::ChecksumMismatch { .. })
        ));
    }

    #[test]
    fn rejects_truncation() {
        for n in 0..FAHD.len() {
            assert!(
                Header::decode(&FAHD[..n], Addr(0), S).is_err(),
                "prefix {n}"
            );
        }
    }

    #[test]
    fn rejects_flipped_byte() {
        for i in 0..FAHD.len() {
            for bit in 0..8 {
                let mut bad = FAHD;
                bad[i] ^= 1 << bit;
                assert!(
                    Header::decode(&bad, Addr(0), S).is_err(),
                    "byte {i} bit {bit}"
                );
            }
        }
    }

    #[test]
    fn rejects_overflowing_element_count() {
        assert!(Geometry::new(u64::MAX, 8, 10).is_err());
    }
}
