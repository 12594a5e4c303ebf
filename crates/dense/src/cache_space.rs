//! [`CacheSpace`]: a [`Space`] over a bare metadata cache.

use h5chunk_cache::MetadataCache;
use h5chunk_format::{Addr, Sizes};

use crate::error::{Error, Result};
use crate::space::{BlockKind, DirectImage, DirectSummedImage, HeaderImage, IndirectImage, Space};
use crate::write::OpenHeaps;

/// A [`Space`] over a bare metadata cache (and its storage): for tests and tools that hold no
/// file of their own.
#[derive(Debug)]
pub struct CacheSpace {
    cache: MetadataCache,
    sizes: Sizes,
    heaps: OpenHeaps,
}

impl CacheSpace {
    /// A space over `cache`, addresses and lengths of `sizes`.
    pub fn new(cache: MetadataCache, sizes: Sizes) -> CacheSpace {
        CacheSpace {
            cache,
            sizes,
            heaps: OpenHeaps::default(),
        }
    }

    /// The heaps held open.
    pub fn heaps(&self) -> &OpenHeaps {
        &self.heaps
    }

    /// Write every change: the heaps held open, then the cache.
    pub fn flush(&self) -> Result<()> {
        self.heaps.flush(self)?;
        let report = self.cache.flush()?;
        if !report.is_complete() {
            return Err(Error::Internal("a flush blocked"));
        }
        Ok(())
    }
}

impl Space for CacheSpace {
    fn cache(&self) -> &MetadataCache {
        &self.cache
    }
    fn sizes(&self) -> Sizes {
        self.sizes
    }
    fn read(&self, at: Addr, len: u64) -> Result<Vec<u8>> {
        if len > self.room(at)? {
            return Err(Error::corrupt(
                "file",
                at,
                format!("{len} bytes past its end"),
            ));
        }
        let n = usize::try_from(len).map_err(|_| Error::Unsupported("reads over 4 GiB"))?;
        let mut buf = vec![0u8; n];
        let end = self
            .cache
            .storage()
            .len()
            .map_err(h5chunk_cache::Error::from)?;
        // Allocated space past the storage's end reads as zeros.
        let have = usize::try_from(end.saturating_sub(at.get()).min(len)).unwrap_or(n);
        if let Some(head) = buf.get_mut(..have)
            && !head.is_empty()
        {
            self.cache
                .storage()
                .read_at(at, head)
                .map_err(h5chunk_cache::Error::from)?;
        }
        Ok(buf)
    }
    fn room(&self, at: Addr) -> Result<u64> {
        let eoa = self.cache.eoa().get();
        let end = self
            .cache
            .storage()
            .len()
            .map_err(h5chunk_cache::Error::from)?;
        Ok(eoa.max(end).saturating_sub(at.get()))
    }
    fn write(&self, at: Addr, bytes: &[u8]) -> Result<()> {
        self.cache
            .storage()
            .write_at(at, bytes)
            .map_err(h5chunk_cache::Error::from)?;
        Ok(())
    }
    fn allocate(&self, len: u64) -> Result<Addr> {
        Ok(self.cache.allocator().allocate(len)?)
    }
    fn free(&self, at: Addr, len: u64) -> Result<()> {
        Ok(self.cache.allocator().free(at, len)?)
    }
    fn swmr_write(&self) -> bool {
        false
    }
    fn put_block(
        &self,
        kind: BlockKind,
        at: Addr,
        bytes: Vec<u8>,
        children: &[Addr],
    ) -> Result<()> {
        match kind {
            BlockKind::Header => Ok(self.cache.put_image::<HeaderImage>(at, bytes, children)?),
            BlockKind::Indirect => {
                Ok(self.cache.put_image::<IndirectImage>(at, bytes, children)?)
            }
            BlockKind::Direct { checksummed: true } => Ok(self
                .cache
                .put_image::<DirectSummedImage>(at, bytes, children)?),
            BlockKind::Direct { checksummed: false } => {
                Ok(self.cache.put_image::<DirectImage>(at, bytes, children)?)
            }
        }
    }
    fn flush_heap(&self, heap: Addr) -> Result<()> {
        self.heaps.flush_one(self, heap)
    }
    fn held_id_len(&self, heap: Addr) -> Option<usize> {
        self.heaps.id_len(heap)
    }
}
