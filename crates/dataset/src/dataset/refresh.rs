//! A SWMR reader's view of a dataset a writer is changing: [`Dataset::refresh`].
//!
//! libhdf5's `H5Drefresh` closes the dataset, evicts every metadata entry tagged with it and
//! reopens it, so that the dataspace (current dims) and the layout (index address) come from
//! the file again and the whole index is read again on demand. Here a refresh reads the
//! dataset's object header again (one read of its known length) and marks every cached index
//! block stale ([`MetadataCache::mark_stale`](h5chunk_cache::MetadataCache::mark_stale)): a
//! stale block is checked before its next use by the 4 bytes of its checksum in the file, and
//! read again only if they changed. Blocks the writer did not touch cost 4 bytes instead of
//! their whole image. Cached pages of raw data are dropped.

use super::{Dataset, StorageState};
use crate::error::{Error, Result};

impl Dataset {
    /// Show what the file holds now: the dims, the index and the chunks another process (a
    /// SWMR writer) has flushed since this handle last looked, as `H5Drefresh` and h5py's
    /// `dataset.refresh()`. Every handle on the dataset sees the refreshed state.
    ///
    /// A no-op on a file open for writing (libhdf5's too): the writer's view is the newest.
    /// Open the file with [`OpenOptions::swmr_read`](crate::OpenOptions::swmr_read) to follow
    /// a live writer: its metadata is then read again, with back-off, when a checksum shows a
    /// write under way.
    pub fn refresh(&self) -> Result<()> {
        let f = &self.file.inner.store;
        if f.writable {
            return Ok(());
        }
        // Alone: no read plans with the old index while it is replaced, and a read that
        // loaded chunks without the lock does not cache them into the new state (the
        // version moves).
        let mut st = self.shared.write();
        let (header, path) = (st.header, st.path.clone());
        let view = match &st.storage {
            StorageState::Virtual(v) => v.view,
            _ => super::vds::VirtualView::default(),
        };
        // Only what changed is read again: each cached block is checked by its checksum (4
        // bytes) before its next use, and read whole only if that changed.
        f.cache.mark_stale();
        f.pages.clear();
        let state = self.load_fresh(header, &path, view)?;
        if state.dtype != self.shared.dtype {
            return Err(Error::corrupt(
                "dataset",
                header,
                "the element type changed under a refresh",
            ));
        }
        let filtered = matches!(&state.storage, StorageState::Chunked(c) if c.pipeline.is_some());
        if filtered != self.shared.filtered {
            return Err(Error::corrupt(
                "dataset",
                header,
                "the filter pipeline changed under a refresh",
            ));
        }
        let extent = Dataset::extent_of(&state);
        **st = state;
        *self.shared.dims.write() = extent;
        Ok(())
    }

    /// The dataset's state read from the file again. The object header is read past any
    /// cached copy; a header caught mid-write (its checksum fails) is read again with
    /// back-off, as the metadata cache retries its entries for a SWMR reader.
    fn load_fresh(
        &self,
        header: h5chunk_format::Addr,
        path: &str,
        view: super::vds::VirtualView,
    ) -> Result<super::DatasetState> {
        let f = &self.file.inner.store;
        crate::store::with_backoff(
            h5chunk_cache::CacheConfig::SWMR_READ_ATTEMPTS,
            |e| matches!(e, Error::Format(_)),
            |_| {
                f.forget_header(header);
                Dataset::load_with(&self.file, header, path.to_owned(), view)
            },
        )
    }
}
