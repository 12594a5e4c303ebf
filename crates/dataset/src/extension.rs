//! The superblock extension (superblock versions 2 and 3, or a version 0/1 superblock's
//! "free-space info" address, which libhdf5 reads as the extension's): an object header of
//! file-wide settings that have no room in the superblock.
//!
//! Reading needs only its B-tree 'K' values (a v1 B-tree chunk index of a file made with a
//! non-default `H5Pset_istore_k` must be searched with the K it was built with). The rest is
//! what a writer must keep: the shared message table (a writer must share new messages and
//! count references), file space info (persistent free-space managers, paged aggregation),
//! and driver info (the file is in several parts: family, multi). A file carrying any of those
//! opens read-only; writing to it is a typed `Unsupported` naming what it carries.

use h5chunk_format::Addr;
use h5chunk_format::cursor::Decoder;
use h5chunk_format::message::{BTreeKValues, MessageType};

use crate::error::{Error, Result};
use crate::store::Store;

/// "File Space Info" (type 0x0017): the file's space strategy and its free-space managers.
const FILE_SPACE_INFO: MessageType = MessageType(0x0017);

/// What the superblock extension says.
#[derive(Debug, Default)]
pub(crate) struct Extension {
    /// The B-tree K values, if stored.
    pub k: Option<BTreeKValues>,
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
            FILE_SPACE_INFO => {
                ext.no_writes.get_or_insert(
                    "writing a file with file space info (persistent free space or paged \
                     aggregation)",
                );
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
    if store.writable
        && let Some(why) = ext.no_writes
    {
        return Err(Error::Unsupported(why));
    }
    Ok(())
}
