//! The errors of the `h5chunk` crate.
//!
//! Each variant says what kind of thing went wrong, so callers match on variants rather than
//! on message text: a file that is not HDF5 ([`Error::NotHdf5`]), shorter than its superblock
//! says ([`Error::Truncated`]), a member that does not exist ([`Error::NotFound`]), an object
//! of the wrong kind ([`Error::WrongKind`]), a bad argument named by its parameter
//! ([`Error::InvalidArgument`]), a feature h5chunk does not implement
//! ([`Error::Unsupported`]), and a broken invariant, in the file ([`Error::Corrupt`]) or in
//! h5chunk itself ([`Error::Internal`]). Errors of the layers below keep their own types and
//! are reachable through [`std::error::Error::source`].

use crate::index_kind::IndexKind;

/// An `h5chunk` result.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The storage holds no HDF5 superblock signature at any place one may stand.
    #[error("{file}: not an HDF5 file (no superblock signature)")]
    NotHdf5 {
        /// The file (its path, or the storage's name).
        file: String,
    },
    /// An interrupted flush left a journal beside the file: the file is not in the state of
    /// its last completed flush until the journal is applied.
    #[error(
        "{file}: an interrupted flush left a journal ({file}.h5chunk-journal); open the file \
         for writing or run `h5chunk recover {file}` to roll it back to its last completed flush"
    )]
    NeedsRecovery {
        /// The file.
        file: String,
    },
    /// The superblock's consistency flags say a writer has the file open, or crashed with it
    /// open (libhdf5 refuses such a file the same way).
    #[error(
        "{file}: marked open for writing by another process, or left so by one that crashed \
         (superblock consistency flags {flags:#x}); if no process has it open, `h5chunk clear \
         FILE` (or h5clear -s) clears the flags"
    )]
    FileFlagged {
        /// The file.
        file: String,
        /// The flags as stored.
        flags: u32,
    },
    /// A SWMR reader found a version 3 file marked open for writing but not for SWMR writing
    /// (libhdf5: "file is not already open for SWMR writing").
    #[error(
        "{file}: open for writing by a writer not in SWMR mode, or left so by one that crashed \
         (superblock consistency flags {flags:#x}); a SWMR reader needs a SWMR writer, or \
         `h5chunk clear FILE` once no process has it open"
    )]
    NotSwmrWriting {
        /// The file.
        file: String,
        /// The flags as stored.
        flags: u32,
    },
    /// Another process holds a lock on the file that conflicts with this open (libhdf5:
    /// "unable to lock file"): a writer has it open, or readers have it open and this open is
    /// for writing. `HDF5_USE_FILE_LOCKING=FALSE` turns locking off, as for libhdf5.
    #[error(
        "{file}: unable to lock file ({source}); another process has it open{}",
        if *exclusive { " (for reading or writing)" } else { " for writing" }
    )]
    Locked {
        /// The file.
        file: String,
        /// Whether the lock asked for was exclusive (a writer's).
        exclusive: bool,
        /// The error the lock gave.
        source: std::io::Error,
    },
    /// A value does not fit the type it is converted to on a read or write (an `i64` element
    /// past `i32`'s range read as `i32`, a NaN read as an integer); libhdf5 would clip it.
    #[error("{object}: element {index} ({value}) does not fit {to}")]
    ValueOutOfRange {
        /// The dataset or attribute.
        object: String,
        /// The element's index among those converted.
        index: u64,
        /// The value, as text.
        value: String,
        /// The type it was converted to (numpy's name).
        to: String,
    },
    /// This process has the file open already, in a way this open cannot share (libhdf5:
    /// "file is already open for read-only", "unable to truncate a file which is already
    /// open"). An open that can share, read-only or read-write again, gets the open file's
    /// state instead, as libhdf5 gives it.
    #[error("{file}: already open in this process{how}")]
    AlreadyOpen {
        /// The file.
        file: String,
        /// How it is open, and what this open asked for.
        how: &'static str,
    },
    /// SWMR writing needs a version 3 superblock (libhdf5: "superblock version for SWMR is
    /// less than 3"); create the file with SWMR writing or bounds V110 or later.
    #[error(
        "{file}: superblock version {version} does not support SWMR writing (needs 3: create \
         the file with swmr_write or library version bounds V110 or later)"
    )]
    SwmrVersion {
        /// The file.
        file: String,
        /// Its superblock version.
        version: u8,
    },
    /// A file in SWMR-write mode gets no new objects (datasets, groups, attributes), as in
    /// libhdf5: its readers' view of the file's objects is fixed when they open it.
    #[error("{file}: no new {what} can be created once SWMR writing has started")]
    SwmrNewObject {
        /// The file.
        file: String,
        /// What was to be created.
        what: &'static str,
    },
    /// A dataset whose chunk index cannot be written under SWMR: the version 1 B-tree's nodes
    /// carry no checksum, so a reader could not tell a torn node from a whole one (libhdf5
    /// refuses it the same way).
    #[error(
        "{dataset}: a {index} chunk index cannot be written under SWMR (its nodes carry no \
         checksum); rewrite the dataset with library version bounds V110 or later"
    )]
    SwmrIndex {
        /// The dataset's path.
        dataset: String,
        /// Its chunk index.
        index: &'static str,
    },
    /// `start_swmr_write` or a SWMR-write open asked of a file that cannot take it.
    #[error("{file}: cannot start SWMR writing: {reason}")]
    SwmrStart {
        /// The file.
        file: String,
        /// Why not.
        reason: &'static str,
    },
    /// The file is shorter than its superblock's end-of-file address.
    #[error("{file}: truncated file: {len} bytes, the superblock says {eof}")]
    Truncated {
        /// The file.
        file: String,
        /// Its length in bytes.
        len: u64,
        /// The end of file the superblock records.
        eof: u64,
    },
    /// A group has no member of that name.
    #[error("{group}: no member named {name:?}")]
    NotFound {
        /// The group's path.
        group: String,
        /// The missing member's name.
        name: String,
    },
    /// An object has no attribute of that name.
    #[error("{object}: no attribute named {name:?}")]
    NoAttribute {
        /// The object's path.
        object: String,
        /// The missing attribute's name.
        name: String,
    },
    /// More soft and external links in a row than libhdf5 follows (`H5L_NUM_LINKS`, 16) on
    /// the way to one object: a cycle (a soft link to itself, two files whose external links
    /// point at each other), or a chain too long.
    #[error("{file}: {link}: more than {limit} soft and external links followed (a cycle?)")]
    LinkDepth {
        /// The file holding the link that went one too far.
        file: String,
        /// That link's path.
        link: String,
        /// The limit.
        limit: u32,
    },
    /// The file an external link names was not found where libhdf5 looks for it
    /// (`HDF5_EXT_PREFIX`, the linking file's folder, the name as given).
    #[error("{file}: external link {link} -> {target}: no such file (tried {})", tried.join(", "))]
    ExternalMissing {
        /// The file holding the link.
        file: String,
        /// The link's path.
        link: String,
        /// The file name the link holds.
        target: String,
        /// The paths tried, in order.
        tried: Vec<String>,
    },
    /// A link of that name exists already.
    #[error("{group}: a member named {name:?} exists already")]
    Exists {
        /// The group's path.
        group: String,
        /// The name taken.
        name: String,
    },
    /// An object is not of the kind asked for (a dataset where a group was expected, ...).
    #[error("{path}: not a {expected}")]
    WrongKind {
        /// The object's path.
        path: String,
        /// What was expected: "group", "dataset", ...
        expected: &'static str,
    },
    /// An argument is out of range or inconsistent with the others or with the dataset.
    #[error("invalid {name}: {reason}")]
    InvalidArgument {
        /// The argument (parameter) it concerns: "shape", "chunk", "selection", ...
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The file was opened read-only and a change was asked for.
    #[error("{file} is open read-only")]
    ReadOnly {
        /// The file.
        file: String,
    },
    /// The file was closed ([`File::close`](crate::File::close)) and a change was asked of a
    /// handle that outlived it.
    #[error("{file} is closed")]
    Closed {
        /// The file.
        file: String,
    },
    /// The file uses a feature h5chunk does not implement.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    /// A floating-point type whose bit layout is neither IEEE 754 binary16/32/64 nor
    /// bfloat16 (a VAX-era or hand-made float): its elements still read as stored bytes
    /// ([`Dataset::read_raw`](crate::Dataset::read_raw)), not as numbers.
    #[error("unsupported: floating-point layout {layout}")]
    UnsupportedFloat {
        /// Its size and fields: sign, exponent and mantissa positions and sizes, bias,
        /// normalization, precision and offset.
        layout: String,
    },
    /// The file breaks an invariant of the format that no decoder caught on its own (a
    /// message missing from an object header, a value outside its structure's bounds).
    #[error("corrupt {structure}{}: {what}", at.map(|a| format!(" @ {a}")).unwrap_or_default())]
    Corrupt {
        /// The structure: "object header", "dataset", "group", ...
        structure: &'static str,
        /// Its file address, where known.
        at: Option<h5chunk_format::Addr>,
        /// What is wrong.
        what: String,
    },
    /// h5chunk broke one of its own invariants: a bug, whatever the file holds.
    #[error("internal error: {0}")]
    Internal(&'static str),
    /// A structure in the file failed to decode.
    #[error(transparent)]
    Format(#[from] h5chunk_format::Error),
    /// A file could not be opened, created or accessed.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A chunk could not go through the filter pipeline.
    #[error("dataset {dataset}: chunk {chunk:?}: {source}")]
    Filter {
        /// The dataset's path.
        dataset: String,
        /// The chunk's scaled coordinates.
        chunk: Vec<u64>,
        /// What the filter said.
        source: crate::filters::FilterError,
    },
    /// An object or block of a filtered fractal heap (dense links or attributes) could not
    /// be unfiltered, or the heap's pipeline cannot be used.
    #[error("fractal heap object @ {at}: {source}")]
    HeapFilter {
        /// The file address of the block, object or heap.
        at: h5chunk_format::Addr,
        /// What the filter said.
        source: crate::filters::FilterError,
    },
    /// The dataset's filter pipeline cannot be used.
    #[error("dataset {dataset}: {source}")]
    Pipeline {
        /// The dataset's path.
        dataset: String,
        /// What is wrong.
        source: crate::filters::FilterError,
    },
    /// A chunk index structure failed.
    #[error("{} chunk index: {source}", kind.describe())]
    Index {
        /// Which index.
        kind: IndexKind,
        /// What its crate said.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The B-tree or local heap of an old-style group failed.
    #[error("old-style group: {0}")]
    SymbolTable(#[source] h5chunk_btree1::Error),
    /// The name index (a v2 B-tree) of a group with dense link storage failed.
    #[error("dense group's name index: {0}")]
    NameIndex(#[source] h5chunk_btree2::Error),
    /// The metadata cache or storage failed.
    #[error(transparent)]
    Cache(#[from] h5chunk_cache::Error),
}

impl Error {
    /// An [`Error::InvalidArgument`] about parameter `name`.
    pub(crate) fn arg(name: &'static str, reason: impl Into<String>) -> Error {
        Error::InvalidArgument {
            name,
            reason: reason.into(),
        }
    }

    /// An [`Error::Corrupt`] in `structure` at `at`.
    pub(crate) fn corrupt(
        structure: &'static str,
        at: impl Into<Option<h5chunk_format::Addr>>,
        what: impl Into<String>,
    ) -> Error {
        Error::Corrupt {
            structure,
            at: at.into(),
            what: what.into(),
        }
    }

    /// An [`Error::Index`] of index `kind`.
    pub(crate) fn index(
        kind: IndexKind,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Error {
        Error::Index {
            kind,
            source: Box::new(source),
        }
    }

    /// Whether the error says h5chunk lacks a feature (rather than that something is wrong).
    pub fn is_unsupported(&self) -> bool {
        matches!(self, Error::Unsupported(_) | Error::UnsupportedFloat { .. })
    }
}

/// Dense storage's errors as this crate's: the store's own errors come back whole.
impl From<h5chunk_dense::Error> for Error {
    fn from(e: h5chunk_dense::Error) -> Error {
        use h5chunk_dense::Error as D;
        match e {
            D::Format(e) => Error::Format(e),
            D::Cache(e) => Error::Cache(e),
            D::Index(e) => Error::NameIndex(e),
            D::Filter { at, source } => Error::HeapFilter { at, source },
            D::Corrupt {
                structure,
                at,
                what,
            } => Error::Corrupt {
                structure,
                at,
                what,
            },
            D::Unsupported(what) => Error::Unsupported(what),
            D::Internal(what) => Error::Internal(what),
            D::Space(e) => match e.downcast::<Error>() {
                Ok(e) => *e,
                Err(_) => Error::Internal("a dense storage error of an unknown store"),
            },
            _ => Error::Internal("a dense storage error this crate does not know"),
        }
    }
}
