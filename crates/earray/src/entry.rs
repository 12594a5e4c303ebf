//! The metadata-cache entry classes of the extensible array: one per on-disk block.
//!
//! | entry                 | `TYPE_NAME`  | image                                                  |
//! |-----------------------|--------------|--------------------------------------------------------|
//! | [`HeaderEntry`]       | `EAHD`       | the whole header                                       |
//! | [`IndexBlockEntry`]   | `EAIB`       | the whole index block                                  |
//! | [`SuperBlockEntry`]   | `EASB`       | the whole super block of row `u`                       |
//! | [`DataBlockEntry`]    | `EADB`       | unpaged: the whole block; paged: the prefix and its checksum |
//! | [`PageEntry`]         | `EADB page`  | one page of a paged data block: elements and checksum  |
//!
//! Besides verifying checksums (the format decoders do that first), every block checks that it
//! names the array's header and the array's client id, as libhdf5 does.

use std::sync::Arc;

use h5chunk_cache::CacheEntry;
use h5chunk_format::earray::{
    DataBlock, Geometry, Header, IndexBlock, SuperBlock, decode_page, encode_page,
};
use h5chunk_format::{Addr, Sizes};

/// What every block of one array shares: the file's sizes, the geometry (computed once from the
/// parameters), the element size and client id, the header's address and the fill element.
#[derive(Debug)]
pub(crate) struct Shape {
    pub(crate) sizes: Sizes,
    pub(crate) geometry: Geometry,
    pub(crate) element_size: u8,
    pub(crate) client_id: u8,
    pub(crate) header: Addr,
    /// One encoded fill element.
    pub(crate) fill: Vec<u8>,
}

impl Shape {
    /// Bytes of one page image (elements and checksum).
    pub(crate) fn page_image_len(&self) -> Option<usize> {
        usize::try_from(self.geometry.page_nelmts())
            .ok()?
            .checked_mul(usize::from(self.element_size))?
            .checked_add(4)
    }

    /// A block must name this array's header and client id.
    fn check_owner(
        &self,
        structure: &'static str,
        at: Addr,
        header: Addr,
        client_id: u8,
    ) -> h5chunk_format::Result<()> {
        if header != self.header {
            return Err(h5chunk_format::Error::Invalid {
                structure,
                at,
                reason: format!(
                    "names header {header}, but belongs to the array whose header is at {}",
                    self.header
                ),
            });
        }
        if client_id != self.client_id {
            return Err(h5chunk_format::Error::Invalid {
                structure,
                at,
                reason: format!(
                    "client id {client_id}, but the array's header says {}",
                    self.client_id
                ),
            });
        }
        Ok(())
    }
}

/// The load context of a super block or data block: the array's shape and the block's row.
#[derive(Debug)]
pub(crate) struct RowCtx {
    pub(crate) shape: Arc<Shape>,
    pub(crate) u: usize,
}

/// The header (`EAHD`).
#[derive(Debug)]
pub(crate) struct HeaderEntry {
    pub(crate) sizes: Sizes,
    pub(crate) header: Header,
}

impl CacheEntry for HeaderEntry {
    type Context = Sizes;
    const TYPE_NAME: &'static str = "EAHD";
    const CHECKSUMMED: bool = true;

    fn initial_load_len(sizes: &Sizes) -> usize {
        Header::encoded_len(*sizes)
    }

    fn decode(image: &[u8], at: Addr, sizes: &Sizes) -> h5chunk_format::Result<Self> {
        Ok(HeaderEntry {
            sizes: *sizes,
            header: Header::decode(image, at, *sizes)?,
        })
    }

    fn image_len(&self) -> usize {
        Header::encoded_len(self.sizes)
    }

    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        self.header.encode(self.sizes, out)
    }
}

/// The index block (`EAIB`).
#[derive(Debug)]
pub(crate) struct IndexBlockEntry {
    pub(crate) shape: Arc<Shape>,
    pub(crate) block: IndexBlock,
}

impl CacheEntry for IndexBlockEntry {
    type Context = Arc<Shape>;
    const TYPE_NAME: &'static str = "EAIB";
    const CHECKSUMMED: bool = true;

    fn initial_load_len(s: &Arc<Shape>) -> usize {
        s.geometry.index_block_len(s.sizes, s.element_size)
    }

    fn decode(image: &[u8], at: Addr, s: &Arc<Shape>) -> h5chunk_format::Result<Self> {
        let block = IndexBlock::decode(image, at, s.sizes, &s.geometry, s.element_size)?;
        s.check_owner("EAIB", at, block.header, block.client_id)?;
        Ok(IndexBlockEntry {
            shape: Arc::clone(s),
            block,
        })
    }

    fn image_len(&self) -> usize {
        let s = &self.shape;
        s.geometry.index_block_len(s.sizes, s.element_size)
    }

    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        self.block.encode(self.shape.sizes, out)
    }
}

/// A super block (`EASB`) of row `u`.
#[derive(Debug)]
pub(crate) struct SuperBlockEntry {
    pub(crate) shape: Arc<Shape>,
    pub(crate) u: usize,
    pub(crate) block: SuperBlock,
}

impl CacheEntry for SuperBlockEntry {
    type Context = RowCtx;
    const TYPE_NAME: &'static str = "EASB";
    const CHECKSUMMED: bool = true;

    fn initial_load_len(c: &RowCtx) -> usize {
        c.shape.geometry.super_block_len(c.shape.sizes, c.u)
    }

    fn decode(image: &[u8], at: Addr, c: &RowCtx) -> h5chunk_format::Result<Self> {
        let s = &c.shape;
        let block = SuperBlock::decode(image, at, s.sizes, &s.geometry, c.u)?;
        s.check_owner("EASB", at, block.header, block.client_id)?;
        Ok(SuperBlockEntry {
            shape: Arc::clone(s),
            u: c.u,
            block,
        })
    }

    fn image_len(&self) -> usize {
        self.shape
            .geometry
            .super_block_len(self.shape.sizes, self.u)
    }

    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        self.block
            .encode(self.shape.sizes, &self.shape.geometry, out)
    }
}

/// A data block (`EADB`) of row `u`. A paged data block's image is its prefix alone: its
/// pages are [`PageEntry`]s of their own.
#[derive(Debug)]
pub(crate) struct DataBlockEntry {
    pub(crate) shape: Arc<Shape>,
    pub(crate) u: usize,
    pub(crate) block: DataBlock,
}

impl DataBlockEntry {
    fn len_of(s: &Shape, u: usize) -> usize {
        usize::try_from(s.geometry.data_block_image_len(s.sizes, u, s.element_size))
            .unwrap_or(usize::MAX)
    }
}

impl CacheEntry for DataBlockEntry {
    type Context = RowCtx;
    const TYPE_NAME: &'static str = "EADB";
    const CHECKSUMMED: bool = true;

    fn initial_load_len(c: &RowCtx) -> usize {
        Self::len_of(&c.shape, c.u)
    }

    fn decode(image: &[u8], at: Addr, c: &RowCtx) -> h5chunk_format::Result<Self> {
        let s = &c.shape;
        let block = DataBlock::decode(image, at, s.sizes, &s.geometry, c.u, s.element_size)?;
        // The block offset is not checked: libhdf5 stores a wrong one for data blocks reached
        // from the index block (docs/format/chunk-index-format.md §11 Q1) and never reads it.
        s.check_owner("EADB", at, block.header, block.client_id)?;
        Ok(DataBlockEntry {
            shape: Arc::clone(s),
            u: c.u,
            block,
        })
    }

    fn image_len(&self) -> usize {
        Self::len_of(&self.shape, self.u)
    }

    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        self.block
            .encode(self.shape.sizes, &self.shape.geometry, out)
    }
}

/// One page of a paged data block: `page_nelmts` elements and their checksum, no prefix.
#[derive(Debug)]
pub(crate) struct PageEntry {
    pub(crate) elements: Vec<u8>,
}

impl CacheEntry for PageEntry {
    type Context = Arc<Shape>;
    const TYPE_NAME: &'static str = "EADB page";
    const CHECKSUMMED: bool = true;

    fn initial_load_len(s: &Arc<Shape>) -> usize {
        s.page_image_len().unwrap_or(usize::MAX)
    }

    fn decode(image: &[u8], at: Addr, s: &Arc<Shape>) -> h5chunk_format::Result<Self> {
        let elements = decode_page(
            image,
            at,
            s.geometry.page_nelmts(),
            s.element_size,
            "EADB page",
        )?;
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
