//! The superblock extension (superblock versions 2 and 3, or a version 0/1 superblock's
//! "free-space info" address, which libhdf5 reads as the extension's): an object header of
//! file-wide settings that have no room in the superblock.
//!
//! Reading needs only its B-tree 'K' values (a v1 B-tree chunk index of a file made with a
//! non-default `H5Pset_istore_k` must be searched with the K it was built with). The rest is
//! what a writer must keep: the shared message table (a writer must share new messages and
//! count references), file space info when it persists free space (the free-space managers it
//! names would go stale), and driver info (the file is in several parts: family, multi). A
//! file carrying any of those opens read-only; writing to it is a typed `Unsupported` naming
//! what it carries. File space info that persists nothing is kept ([`Extension::file_space`]):
//! a paged file is written with its pages kept apart (`crate::paged`).

use h5chunk_format::Addr;
use h5chunk_format::cursor::Decoder;
use h5chunk_format::message::{BTreeKValues, FileSpaceInfo, MessageType};

use crate::error::{Error, Result};
use crate::store::Store;

/// What the superblock extension says.
#[derive(Debug, Default)]
pub(crate) struct Extension {
    /// The B-tree K values, if stored.
    pub k: Option<BTreeKValues>,
    /// The file space info message, if stored.
    pub file_space: Option<FileSpaceInfo>,
    /// Why h5chunk does not write to this file, if it does not.
    pub no_writes: Option<&'static str>,
    /// A message that makes even reading wrong without support for it.
    pub no_reads: Option<&'static str>,
}

/// Read the extension's object header at `at`.
pub(crate) fn read(store: &Store, at: Addr) -> Result<Extension> {
    let mut ext = Extension::default();
    for m in store.raw_messages(at)? {
        match m.kind {
            MessageType::BTREE_K => {
                let mut d = Decoder::new(&m.data, at, store.sizes, "B-tree 'K' Values message");
                ext.k = Some(BTreeKValues::decode(&mut d)?);
            }
            MessageType::SHARED_MESSAGE_TABLE => {
                ext.no_writes
                    .get_or_insert("writing a file with a shared message table (SOHM)");
            }
            MessageType::FILE_SPACE_INFO => {
                let mut d = Decoder::new(&m.data, at, store.sizes, "File Space Info message");
                let info = FileSpaceInfo::decode(&mut d)?;
                if info.persist {
                    ext.no_writes.get_or_insert(
                        "writing a file with file space info that persists free space \
                         (fs_persist)",
                    );
                }
                ext.file_space = Some(info);
            }
            MessageType::DRIVER_INFO => {
                ext.no_reads.get_or_insert(
                    "files of a multi-part file driver (family, multi: a driver info message)",
                );
            }
            _ => {}
        }
    }
    Ok(ext)
}

/// Apply the extension at `at` to a store being opened: its K values, and a refusal of what
/// h5chunk cannot do with the file.
pub(crate) fn apply(store: &mut Store, at: Addr) -> Result<()> {
    let ext = read(store, at)?;
    if let Some(why) = ext.no_reads {
        return Err(Error::Unsupported(why));
    }
    if let Some(k) = ext.k {
        store.k.istore = k.indexed_storage_internal_k;
        store.k.group_internal = k.group_internal_k;
        store.k.group_leaf = k.group_leaf_k;
    }
    store.file_space = ext.file_space;
    if store.writable
        && let Some(why) = ext.no_writes
    {
        return Err(Error::Unsupported(why));
    }
    Ok(())
}
