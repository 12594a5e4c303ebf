//! The three metadata cache classes of a fixed array: header, data block and data block page.
//!
//! Entries keep their elements as raw bytes, so the classes do not depend on the element class;
//! [`FixedArray`](crate::FixedArray) decodes and encodes single elements on access.

use h5chunk_cache::CacheEntry;
use h5chunk_format::farray::{DataBlock, Geometry, Header, decode_page, encode_page};
use h5chunk_format::{Addr, Error, Sizes};

/// Cache type name of the header.
pub const HEADER_TYPE: &str = "FAHD";
/// Cache type name of the data block.
pub const DATA_BLOCK_TYPE: &str = "FADB";
/// Cache type name of a data block page.
pub const PAGE_TYPE: &str = "FADB page";

/// The header (`FAHD`) as a cache entry.
#[derive(Debug)]
pub(crate) struct HeaderEntry {
    pub(crate) header: Header,
    pub(crate) sizes: Sizes,
}

impl CacheEntry for HeaderEntry {
    type Context = Sizes;
    const TYPE_NAME: &'static str = HEADER_TYPE;
    const CHECKSUMMED: bool = true;

    fn initial_load_len(sizes: &Sizes) -> usize {
        Header::encoded_len(*sizes)
    }

    fn decode(image: &[u8], at: Addr, sizes: &Sizes) -> h5chunk_format::Result<Self> {
        Ok(HeaderEntry {
            header: Header::decode(image, at, *sizes)?,
            sizes: *sizes,
        })
    }

    fn image_len(&self) -> usize {
        Header::encoded_len(self.sizes)
    }

    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        self.header.encode(self.sizes, out)
    }
}

/// What decoding a data block needs: its geometry and what its prefix must repeat.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockContext {
    pub(crate) sizes: Sizes,
    pub(crate) geometry: Geometry,
    /// The header's address, which the block stores.
    pub(crate) header: Addr,
    /// The header's client id, which the block repeats.
    pub(crate) client_id: u8,
}

/// The data block (`FADB`) as a cache entry: the elements when unpaged, the page-init bitmap
/// when paged.
#[derive(Debug)]
pub(crate) struct DataBlockEntry {
    pub(crate) block: DataBlock,
    /// Bytes of the image (prefix, elements if unpaged, checksum).
    len: usize,
    sizes: Sizes,
}

impl DataBlockEntry {
    pub(crate) fn new(block: DataBlock, ctx: &BlockContext) -> Result<Self, Error> {
        Ok(DataBlockEntry {
            block,
            len: image_len(ctx)?,
            sizes: ctx.sizes,
        })
    }
}

fn image_len(ctx: &BlockContext) -> Result<usize, Error> {
    usize::try_from(ctx.geometry.block_image_len(ctx.sizes)).map_err(|_| Error::Unencodable {
        structure: DATA_BLOCK_TYPE,
        reason: "data block larger than the address space".into(),
    })
}

impl CacheEntry for DataBlockEntry {
    type Context = BlockContext;
    const TYPE_NAME: &'static str = DATA_BLOCK_TYPE;
    const CHECKSUMMED: bool = true;

    fn initial_load_len(ctx: &BlockContext) -> usize {
        // The cache reads at most what the storage holds, so an oversized geometry cannot
        // size an allocation beyond the file.
        image_len(ctx).unwrap_or(usize::MAX)
    }

    fn decode(image: &[u8], at: Addr, ctx: &BlockContext) -> h5chunk_format::Result<Self> {
        let block = DataBlock::decode(image, at, ctx.sizes, &ctx.geometry)?;
        if block.client_id != ctx.client_id {
            return Err(Error::Invalid {
                structure: DATA_BLOCK_TYPE,
                at,
                reason: format!(
                    "client id {} differs from the header's {}",
                    block.client_id, ctx.client_id
                ),
            });
        }
        if block.header != ctx.header {
            return Err(Error::Invalid {
                structure: DATA_BLOCK_TYPE,
                at,
                reason: format!(
                    "header address {} is not the header's {}",
                    block.header, ctx.header
                ),
            });
        }
        Ok(DataBlockEntry {
            block,
            len: image.len(),
            sizes: ctx.sizes,
        })
    }

    fn image_len(&self) -> usize {
        self.len
    }

    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        self.block.encode(self.sizes, out)
    }
}

/// What decoding a page needs: how many elements it holds (the last page holds fewer).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PageContext {
    pub(crate) nelmts: u64,
    pub(crate) element_size: u8,
}

impl PageContext {
    /// Bytes of the page's elements, without the checksum.
    pub(crate) fn elements_len(&self) -> Result<usize, Error> {
        usize::try_from(self.nelmts)
            .ok()
            .and_then(|n| n.checked_mul(usize::from(self.element_size)))
            .ok_or_else(|| Error::Unencodable {
                structure: PAGE_TYPE,
                reason: format!("page of {} elements is too large", self.nelmts),
            })
    }
}

/// A data block page (no signature: elements, then their checksum) as a cache entry.
#[derive(Debug)]
pub(crate) struct PageEntry {
    pub(crate) elements: Vec<u8>,
}

impl CacheEntry for PageEntry {
    type Context = PageContext;
    const TYPE_NAME: &'static str = PAGE_TYPE;
    const CHECKSUMMED: bool = true;

    fn initial_load_len(ctx: &PageContext) -> usize {
        ctx.elements_len()
            .ok()
            .and_then(|n| n.checked_add(4))
            .unwrap_or(usize::MAX)
    }

    fn decode(image: &[u8], at: Addr, ctx: &PageContext) -> h5chunk_format::Result<Self> {
        let elements = decode_page(image, at, ctx.nelmts, ctx.element_size, PAGE_TYPE)?;
        Ok(PageEntry {
            elements: elements.to_vec(),
        })
    }

    fn image_len(&self) -> usize {
        self.elements.len().saturating_add(4)
    }

    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        encode_page(&self.elements, out);
        Ok(())
    }
}
