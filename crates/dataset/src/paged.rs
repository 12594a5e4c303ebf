//! Paged files: libhdf5's paged aggregation (`H5Pset_file_space_strategy(PAGE)` and
//! `H5Pset_file_space_page_size`), read and written.
//!
//! A paged file carries a File Space Info message of the paged strategy in its superblock
//! extension, which libhdf5 (and h5py's `get_create_plist().get_file_space_strategy()`)
//! reports, and keeps metadata and raw data in separate pages (`h5chunk_cache`'s paged
//! allocation): a reader that fetches whole pages, as libhdf5's page buffer and a remote
//! reader do, finds every metadata block in a metadata page.
//!
//! Metadata first: a new paged file may keep its first pages for metadata
//! (`FileOptions::metadata_room`): the superblock, its extension, every object header, group
//! structure (heaps, B-trees, symbol tables) and chunk index fill that room from the front,
//! and raw data (chunks, global heap collections holding variable-length values, huge heap
//! objects) starts past it, page-aligned, so a reader that fetches the room has every
//! structure it needs to open the file, list it and find any chunk. When the room is full,
//! further metadata takes new pages after the data written so far (the file stays valid;
//! those structures just cost a reader another request); a room not filled stays a hole in
//! the file. The room is known while the file that created it is open: a later writer
//! allocates past the end as in any paged file.
//!
//! What h5chunk writes is what libhdf5 writes for `fs_persist=False`: the message with the
//! page size, threshold 1 and no free-space managers, a superblock of version 2 at least
//! (version 0 and 1 superblocks have no extension), and an end of file that is a multiple of
//! the page size. Free space is not persisted; a file whose message persists free space opens
//! read-only (its managers would go stale).

use h5chunk_format::Addr;
use h5chunk_format::cursor::Encoder;
use h5chunk_format::message::{FileSpaceInfo, Message, MessageType};
use h5chunk_format::object_header::MessageFlags;

pub use h5chunk_format::message::FileSpaceStrategy;

use crate::error::{Error, Result};
use crate::libver::Libver;
use crate::store::{HeaderPad, Store};

/// The smallest page size libhdf5 accepts.
pub const MIN_PAGE_SIZE: u64 = h5chunk_format::message::file_space_info::MIN_PAGE_SIZE;
/// The largest page size libhdf5 sets (`H5Pset_file_space_page_size` refuses more than
/// 1 GiB), so the largest h5chunk writes or accepts in a file.
pub const MAX_PAGE_SIZE: u64 = 1 << 30;

/// The most the first-page prefetch of an open fetches, whatever page size a file claims.
const PREFETCH_MAX: u64 = 64 << 20;

/// How a file manages its space, as its File Space Info message says (libhdf5's file
/// creation properties `H5Pget_file_space_strategy` and `H5Pget_file_space_page_size`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FileSpace {
    /// The file space strategy.
    pub strategy: FileSpaceStrategy,
    /// Whether free space is tracked across closes.
    pub persist: bool,
    /// The smallest free-space section tracked.
    pub threshold: u64,
    /// The page size (meaningful for the paged strategy; libhdf5 stores its default, 4096,
    /// for the others).
    pub page_size: u64,
}

impl FileSpace {
    /// Whether the file is paged.
    pub fn is_paged(&self) -> bool {
        self.strategy == FileSpaceStrategy::Page
    }
}

impl From<&FileSpaceInfo> for FileSpace {
    fn from(m: &FileSpaceInfo) -> Self {
        FileSpace {
            strategy: m.strategy,
            persist: m.persist,
            threshold: m.threshold,
            page_size: m.page_size,
        }
    }
}

/// Refuse a page size libhdf5 would refuse (or that h5chunk will not allocate by).
pub(crate) fn check_page_size(page_size: u64) -> Result<()> {
    if !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page_size) {
        return Err(Error::arg(
            "page_size",
            format!("{page_size} bytes: a file space page is {MIN_PAGE_SIZE} bytes to 1 GiB"),
        ));
    }
    Ok(())
}

/// Refuse paged-file options that cannot be honoured: a page size libhdf5 would refuse, a
/// metadata room without pages, SWMR writing (not paged), or a high bound below V110 (the
/// File Space Info message's first version).
pub(crate) fn check_options(
    page_size: Option<u64>,
    metadata_room: Option<u64>,
    swmr_write: bool,
    high: Libver,
) -> Result<()> {
    let Some(page) = page_size else {
        if metadata_room.is_some() {
            return Err(Error::arg(
                "metadata_room",
                "a metadata room is kept in a paged file only (set page_size)",
            ));
        }
        return Ok(());
    };
    check_page_size(page)?;
    if swmr_write {
        return Err(Error::Unsupported("a paged file created for SWMR writing"));
    }
    if high < Libver::V110 {
        return Err(Error::arg(
            "page_size",
            "a paged file needs a high bound of V110 or later (the File Space Info message)",
        ));
    }
    Ok(())
}

/// The page size of a store whose File Space Info message says it is paged; a page size
/// that cannot be is an error naming the file.
pub(crate) fn page_size(store: &Store) -> Result<Option<u64>> {
    match store.file_space.as_ref().filter(|m| m.is_paged()) {
        Some(m) => {
            // libhdf5 refuses to set a page size outside these bounds.
            if !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&m.page_size) {
                return Err(Error::corrupt(
                    "File Space Info message",
                    None,
                    format!("a page size of {} bytes", m.page_size),
                ));
            }
            Ok(Some(m.page_size))
        }
        None => Ok(None),
    }
}

/// Start paged allocation on a new file's store (its superblock allocated, nothing else),
/// with the first `metadata_room` bytes kept for metadata if asked, and create the
/// superblock extension holding the File Space Info message; its address.
pub(crate) fn create(
    store: &mut Store,
    page_size: u64,
    metadata_room: Option<u64>,
) -> Result<Addr> {
    check_page_size(page_size)?;
    {
        let mut alloc = store.cache.allocator();
        alloc.set_paged(page_size, true)?;
        if let Some(room) = metadata_room {
            alloc.reserve_metadata(room)?;
        }
    }
    let info = FileSpaceInfo::new(FileSpaceStrategy::Page, page_size);
    let mut data = Vec::new();
    info.encode(&mut Encoder::new(
        &mut data,
        store.sizes,
        "File Space Info message",
    ))?;
    // The flags libhdf5 gives the message: never shared, and marked by a writer that does
    // not know it.
    let flags = MessageFlags::DONT_SHARE | MessageFlags::MARK_IF_UNKNOWN;
    let message = Message::Unknown {
        kind: MessageType::FILE_SPACE_INFO,
        data,
    };
    let at = store.create_object(&[(message, flags)], HeaderPad::Extension, false)?;
    store.file_space = Some(info);
    Ok(at)
}

/// On opening a paged file: have its whole first page fetched by the first read that misses
/// in it, in one request where requests cost a round trip (an object store, whose opening
/// request brought only its read-ahead): a paged file keeps its superblock, and in a
/// metadata-first file every structure, there. Not before that read: when the opening
/// request's read-ahead held all the metadata a reader needs (a metadata-first file's, with
/// a read-ahead as large as its metadata), nothing more of the page is fetched, and opening,
/// listing and reading one chunk costs two requests. A page size libhdf5 could not have
/// written is no reason to refuse reading the file: the hint is skipped (a writer refuses
/// it, [`open_for_writing`]).
pub(crate) fn prefetch_first_page(store: &Store) -> Result<()> {
    if let Ok(Some(page)) = page_size(store) {
        let len = store.storage.len().map_err(|e| store.io(e))?;
        let want = page.min(len).min(PREFETCH_MAX);
        if want > 0 {
            store.storage.fetch_whole_on_miss((Addr(0), want));
        }
    }
    Ok(())
}

/// On opening a paged file for writing: allocate by its pages from now on.
pub(crate) fn open_for_writing(store: &Store) -> Result<()> {
    if let Some(page) = page_size(store)? {
        store.cache.allocator().set_paged(page, false)?;
    }
    Ok(())
}
