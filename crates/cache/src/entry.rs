//! Entry classes and the keys of the flush-dependency graph.
//!
//! An entry class is implemented by a client crate (one per on-disk structure: an extensible
//! array header, a B-tree leaf, ...). It tells the cache how to learn an entry's on-disk length
//! from its first bytes, how to decode (verifying the checksum first) and how to encode. The
//! cache never interprets an image itself.

use core::fmt;

use h5chunk_format::Addr;

/// An on-disk metadata structure that lives in the [`MetadataCache`](crate::MetadataCache).
///
/// The cache loads an entry in two steps, as libhdf5 does: it reads
/// [`initial_load_len`](Self::initial_load_len) bytes speculatively, asks
/// [`final_load_len`](Self::final_load_len) for the real length, re-reads the whole image if it
/// is longer, then calls [`decode`](Self::decode). Every decode error of a checksummed class is
/// treated as possibly caused by a torn read and retried (see
/// [`CacheConfig::read_attempts`](crate::CacheConfig::read_attempts)).
///
/// The image produced by [`encode`](Self::encode) reaches storage in one `write_at` call, and
/// must be exactly as long as the space the cache records for the entry.
pub trait CacheEntry: Send + Sync + Sized + 'static {
    /// What decoding needs beyond the bytes and their address (the superblock's sizes, the
    /// parent structure's parameters, ...). `()` when nothing.
    type Context: ?Sized;

    /// The structure's name (its signature, as the specification gives it), used in errors and
    /// as the key of the per-type statistics.
    const TYPE_NAME: &'static str;

    /// Whether images carry a checksum. A SWMR writer refuses to write entries whose class has
    /// none, and reads of such entries are never retried (a tear cannot be detected).
    const CHECKSUMMED: bool;

    /// How many bytes to read first. For a fixed-size structure, its size.
    fn initial_load_len(ctx: &Self::Context) -> usize;

    /// The full on-disk length of the image that starts with `prefix` (which holds at most
    /// [`initial_load_len`](Self::initial_load_len) bytes, fewer at the end of the file). The
    /// default is for fixed-size structures: the prefix is the whole image.
    ///
    /// The prefix may be torn or corrupt. The cache refuses a length that runs past the end of
    /// the storage before allocating for it; a class should also refuse lengths its structure
    /// cannot have.
    fn final_load_len(
        prefix: &[u8],
        at: Addr,
        ctx: &Self::Context,
    ) -> h5chunk_format::Result<usize> {
        let _ = (at, ctx);
        Ok(prefix.len())
    }

    /// Decode a whole image, verifying its checksum before parsing any field.
    fn decode(image: &[u8], at: Addr, ctx: &Self::Context) -> h5chunk_format::Result<Self>;

    /// The on-disk length of this entry's image, used when the entry is inserted.
    fn image_len(&self) -> usize;

    /// Append the entry's image (checksum last) to `out`.
    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()>;

    /// Where the checksum of this entry's image of `len` bytes starts (`None`: none): a SWMR
    /// reader's refresh compares those 4 bytes with the file's to keep an unchanged entry
    /// ([`MetadataCache::mark_stale`](crate::MetadataCache::mark_stale)). By default the last
    /// 4 bytes; a type whose image is padded after its checksum says where it is.
    fn checksum_at(&self, len: usize) -> Option<usize> {
        if Self::CHECKSUMMED {
            len.checked_sub(4)
        } else {
            None
        }
    }
}

/// A chunk proxy: a node of the flush-dependency graph that stands for one raw-data chunk held
/// in a chunk cache outside this crate.
///
/// A proxy is dirty from its creation until the owner reports the chunk written
/// ([`chunk_written`](crate::MetadataCache::chunk_written)), so an index block that depends on
/// it cannot reach the file before the chunk data it points to.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct ProxyId(pub(crate) u64);

impl ProxyId {
    /// The proxy's serial number (unique within one cache).
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ProxyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "proxy#{}", self.0)
    }
}

/// A node of the flush-dependency graph: a metadata entry (by file address) or a chunk proxy.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Key {
    /// The metadata entry at this file address.
    Entry(Addr),
    /// A chunk proxy.
    Proxy(ProxyId),
}

/// One word, not the derived discriminant and word: the graph's maps hash a key on every edge
/// they add, drop or re-key (a SWMR writer's moves re-key every edge of the right-most path
/// once a flush). Proxies hash as the complement of their serial numbers, small counters, so
/// that they stay apart from file addresses; equal keys hash alike, as `Hash` requires.
impl core::hash::Hash for Key {
    #[inline]
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(match *self {
            Key::Entry(a) => a.get(),
            Key::Proxy(p) => !p.0,
        });
    }
}

impl From<Addr> for Key {
    fn from(a: Addr) -> Key {
        Key::Entry(a)
    }
}

impl From<ProxyId> for Key {
    fn from(p: ProxyId) -> Key {
        Key::Proxy(p)
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Entry(a) => write!(f, "{a}"),
            Key::Proxy(p) => write!(f, "{p}"),
        }
    }
}
