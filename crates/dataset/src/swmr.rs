//! The single-writer/multiple-reader rules of the superblock: its file consistency flags.
//!
//! libhdf5 sets bit 0 (open for writing) and bit 2 (open for SWMR writing) on a read-write open
//! and clears them as the last step of a clean close; a writer that crashed leaves them set. On
//! a version 3 superblock libhdf5 then refuses the file ("file is already open for write (may
//! use `<h5clear file>` to clear file consistency flags)"), and so does h5chunk, with the same way
//! out: [`File::clear_consistency_flags`](crate::File::clear_consistency_flags) (`h5chunk
//! clear FILE`, as `h5clear -s`) zeroes them.
//! Only version 3 is checked, as libhdf5 checks only version 3 (`docs/format/file-format.md`
//! §2.5). A SWMR reader ([`OpenOptions::swmr_read`](crate::OpenOptions::swmr_read)) accepts a
//! file a SWMR writer has open; a SWMR writer
//! ([`File::start_swmr_write`](crate::File::start_swmr_write)) sets both bits.
//!
//! Beside the flags, the file lock: libhdf5 takes an advisory `flock` on every file it opens,
//! exclusive for writing and shared for reading, and a SWMR writer releases its own so SWMR
//! readers can get in. h5chunk takes the same locks, so an h5chunk writer and a libhdf5 reader
//! (or the reverse) keep out of each other's way as two libhdf5 processes do. The environment
//! variable `HDF5_USE_FILE_LOCKING` is honoured as libhdf5 reads it: `FALSE` or `0` turns
//! locking off; `TRUE` or `1` makes a file system without locks an error; anything else
//! (`BEST_EFFORT`, unset) locks where the file system can.

use std::path::Path;

use h5chunk_cache::{FileStorage, Storage};
use h5chunk_format::Addr;
use h5chunk_format::superblock::{self, ConsistencyFlags, Superblock};

use crate::error::{Error, Result};

/// The lock an open takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lock {
    /// A writer's: no other process may have the file open.
    Exclusive,
    /// A reader's: other readers and a SWMR writer may have the file open.
    Shared,
    /// None (a SWMR writer).
    None,
}

/// Take the lock `how` on `file`, as libhdf5 does (see the module docs); a second handle on
/// the file that holds it, to release it later (`None`: no lock taken).
pub(crate) fn lock(file: &std::fs::File, how: Lock, name: &str) -> Result<Option<std::fs::File>> {
    let strict = match std::env::var("HDF5_USE_FILE_LOCKING").as_deref() {
        Ok("FALSE" | "0") => return Ok(None),
        Ok("TRUE" | "1") => true,
        _ => false,
    };
    let taken = match how {
        Lock::None => return Ok(None),
        Lock::Exclusive => file.try_lock(),
        Lock::Shared => file.try_lock_shared(),
    };
    let io = |e| Error::Io {
        file: name.to_owned(),
        source: e,
    };
    match taken {
        Ok(()) => Ok(Some(file.try_clone().map_err(io)?)),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::Locked {
            file: name.to_owned(),
            exclusive: how == Lock::Exclusive,
            source: std::io::Error::from(std::io::ErrorKind::WouldBlock),
        }),
        // A file system without locks: libhdf5 goes on unless told to insist.
        Err(std::fs::TryLockError::Error(e))
            if !strict && e.kind() == std::io::ErrorKind::Unsupported =>
        {
            Ok(None)
        }
        Err(std::fs::TryLockError::Error(e)) => Err(Error::Locked {
            file: name.to_owned(),
            exclusive: how == Lock::Exclusive,
            source: e,
        }),
    }
}

/// Find and decode the superblock of `storage` (of length `len`): its position and value.
pub(crate) fn locate_superblock(
    storage: &dyn Storage,
    len: u64,
    name: &str,
) -> Result<(u64, Superblock)> {
    let io = |e| Error::Io {
        file: name.to_owned(),
        source: e,
    };
    let read = |at: u64, n: u64| -> Result<Vec<u8>> {
        let n = n.min(len.saturating_sub(at));
        // `n` is at most a superblock's length here (the callers ask for fixed sizes).
        let mut buf = vec![0u8; usize::try_from(n).map_err(|_| Error::Internal("read"))?];
        storage.read_at(Addr(at), &mut buf).map_err(io)?;
        Ok(buf)
    };
    let mut at = None;
    for o in superblock::signature_offsets(len) {
        if read(o, 8)? == superblock::SIGNATURE {
            at = Some(o);
            break;
        }
    }
    let at = at.ok_or_else(|| Error::NotHdf5 {
        file: name.to_owned(),
    })?;
    let prefix = read(at, superblock::PREFIX_LEN as u64)?;
    let sb_len = Superblock::len_from_prefix(&prefix, Addr(at))?;
    let sb = Superblock::decode(&read(at, sb_len as u64)?, Addr(at))?;
    Ok((at, sb))
}

/// Refuse a version 3 superblock whose flags say a writer has the file open (or crashed with
/// it open), as libhdf5 refuses it.
pub(crate) fn check_flags(sb: &Superblock, name: &str) -> Result<()> {
    let open = ConsistencyFlags::WRITE_ACCESS | ConsistencyFlags::SWMR_WRITE_ACCESS;
    if sb.version >= 3 && sb.consistency_flags.intersects(open) {
        return Err(Error::FileFlagged {
            file: name.to_owned(),
            flags: sb.consistency_flags.bits(),
        });
    }
    Ok(())
}

/// The flags a SWMR reader accepts, as libhdf5: in a version 3 file, open for SWMR writing
/// (write and SWMR-write bits both set) or by nobody (both clear); one without the other is a
/// writer that is not in SWMR mode. Whether a SWMR writer has the file open.
pub(crate) fn check_flags_swmr_read(sb: &Superblock, name: &str) -> Result<bool> {
    if sb.version < 3 {
        return Ok(false);
    }
    let write = sb
        .consistency_flags
        .contains(ConsistencyFlags::WRITE_ACCESS);
    let swmr = sb
        .consistency_flags
        .contains(ConsistencyFlags::SWMR_WRITE_ACCESS);
    if write != swmr {
        return Err(Error::NotSwmrWriting {
            file: name.to_owned(),
            flags: sb.consistency_flags.bits(),
        });
    }
    Ok(write && swmr)
}

/// Zero the superblock's file consistency flags of the file at `path` (see
/// [`File::clear_consistency_flags`](crate::File::clear_consistency_flags)).
pub(crate) fn clear_flags(path: &Path) -> Result<bool> {
    let name = path.display().to_string();
    let io = |e| Error::Io {
        file: name.clone(),
        source: e,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(io)?;
    let storage = FileStorage::new(file);
    // A journal an interrupted flush left would put the flags back when applied: applied
    // first (the roll-back a writable open does).
    h5chunk_cache::recover(&storage, &h5chunk_cache::JournalPlace::beside(path)).map_err(io)?;
    clear_flags_on(&storage, &name)
}

/// [`clear_flags`] of the file `storage` holds.
pub(crate) fn clear_flags_on(storage: &dyn Storage, name: &str) -> Result<bool> {
    let io = |e| Error::Io {
        file: name.to_owned(),
        source: e,
    };
    let len = storage.len().map_err(io)?;
    let (at, mut sb) = locate_superblock(storage, len, name)?;
    if sb.consistency_flags.is_empty() {
        return Ok(false);
    }
    sb.consistency_flags = ConsistencyFlags::empty();
    let mut bytes = Vec::new();
    sb.encode(&mut bytes)?;
    storage.write_at(Addr(at), &bytes).map_err(io)?;
    storage.sync().map_err(io)?;
    Ok(true)
}
