//! The errors of the `format` layer. Every decode error names the structure and the file
//! address at which the problem was found.

use crate::addr::Addr;

/// A `format` result.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// What went wrong decoding or encoding an on-disk structure.
///
/// `structure` is the structure's name as the specification (or its signature) gives it, such
/// as `"superblock"`, `"OHDR"` or `"Dataspace message"`; `at` is the file address of the field
/// at fault (relative to the base address, like every address in the file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The buffer ends before the structure does.
    #[error("{structure} @ {at}: truncated: {needed} more bytes needed, {available} available")]
    Truncated {
        structure: &'static str,
        at: Addr,
        needed: u64,
        available: u64,
    },
    /// The signature bytes are not the structure's.
    #[error("{structure} @ {at}: bad signature {found:02x?} (expected {expected:02x?})")]
    BadSignature {
        structure: &'static str,
        at: Addr,
        expected: &'static [u8],
        found: Vec<u8>,
    },
    /// The stored checksum does not match the bytes it covers.
    #[error(
        "{structure} @ {at}: checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
    )]
    ChecksumMismatch {
        structure: &'static str,
        at: Addr,
        stored: u32,
        computed: u32,
    },
    /// A version number this implementation does not know.
    #[error("{structure} @ {at}: unknown version {version}")]
    BadVersion {
        structure: &'static str,
        at: Addr,
        version: u8,
    },
    /// A field holds a value outside its legal range.
    #[error("{structure} @ {at}: invalid {field} {value}")]
    BadValue {
        structure: &'static str,
        at: Addr,
        field: &'static str,
        value: u64,
    },
    /// The structure is inconsistent in a way a single field cannot describe.
    #[error("{structure} @ {at}: {reason}")]
    Invalid {
        structure: &'static str,
        at: Addr,
        reason: String,
    },
    /// The structure is valid HDF5 but uses a feature h5chunk does not implement.
    #[error("{structure} @ {at}: unsupported: {what}")]
    Unsupported {
        structure: &'static str,
        at: Addr,
        what: &'static str,
    },
    /// A value does not fit the field it must be encoded into.
    #[error("{structure}: {field} value {value} does not fit in {width} bytes")]
    TooWide {
        structure: &'static str,
        field: &'static str,
        value: u64,
        width: u8,
    },
    /// A value cannot be encoded for a reason a width cannot describe.
    #[error("{structure}: cannot encode: {reason}")]
    Unencodable {
        structure: &'static str,
        reason: String,
    },
}

impl Error {
    /// The file address the error names, if it is a decode error.
    pub fn addr(&self) -> Option<Addr> {
        match self {
            Error::Truncated { at, .. }
            | Error::BadSignature { at, .. }
            | Error::ChecksumMismatch { at, .. }
            | Error::BadVersion { at, .. }
            | Error::BadValue { at, .. }
            | Error::Invalid { at, .. }
            | Error::Unsupported { at, .. } => Some(*at),
            Error::TooWide { .. } | Error::Unencodable { .. } => None,
        }
    }
}
