//! Opaque images: metadata a client crate encodes whole and only needs written, in order.
//!
//! Most entry classes decode their structure and encode it again at write time. Some
//! structures are edited by their own code as a whole (an object header, a fractal heap's
//! blocks, a global heap collection) and read by it too; for them the cache holds the encoded
//! image as an [`Image`] entry until it is written, with flush dependencies on the blocks it
//! points at ([`MetadataCache::put_image`]). The cache still never interprets an image.

use std::marker::PhantomData;

use h5chunk_format::Addr;

use crate::cache::MetadataCache;
use crate::entry::{CacheEntry, Key};
use crate::error::{Error, Result};

/// A kind of [`Image`]: its name (in statistics and the write trace) and whether it carries a
/// checksum (a SWMR writer's cache writes only checksummed entries).
pub trait ImageKind: Send + Sync + 'static {
    /// The structure's name (its signature).
    const TYPE_NAME: &'static str;
    /// Whether the image ends with a checksum of the bytes before it.
    const CHECKSUMMED: bool;
}

/// An encoded image of kind `K`, held until it is written. Its class never reads one from
/// storage for its owner: loading one (after it was written and evicted) gives an image of
/// no bytes, which [`MetadataCache::image`] reports as absent.
pub struct Image<K> {
    /// The image.
    pub bytes: Vec<u8>,
    kind: PhantomData<fn() -> K>,
}

impl<K> Image<K> {
    /// An image of `bytes`.
    pub fn new(bytes: Vec<u8>) -> Image<K> {
        Image {
            bytes,
            kind: PhantomData,
        }
    }
}

impl<K> std::fmt::Debug for Image<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Image({} bytes)", self.bytes.len())
    }
}

impl<K: ImageKind> CacheEntry for Image<K> {
    type Context = ();
    const TYPE_NAME: &'static str = K::TYPE_NAME;
    const CHECKSUMMED: bool = K::CHECKSUMMED;

    fn initial_load_len(_: &()) -> usize {
        0
    }

    fn decode(image: &[u8], _: Addr, _: &()) -> h5chunk_format::Result<Self> {
        Ok(Image::new(image.to_vec()))
    }

    fn image_len(&self) -> usize {
        self.bytes.len()
    }

    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        out.extend_from_slice(&self.bytes);
        Ok(())
    }
}

impl MetadataCache {
    /// Hold `bytes` as an image of kind `K` at `at` (space the caller allocated), replacing
    /// what the cache held there, dirty, to be written after every block in `children` (the
    /// blocks the image points at); its dependencies on other blocks are dropped.
    pub fn put_image<K: ImageKind>(
        &self,
        at: Addr,
        bytes: Vec<u8>,
        children: &[Addr],
    ) -> Result<()> {
        if self.is_resident(at) {
            match self.protect::<Image<K>>(at, &()) {
                Ok(mut e) => {
                    if e.bytes.len() != bytes.len() {
                        e.resize(bytes.len())?;
                    }
                    e.bytes = bytes;
                }
                // Space a block of another kind held, freed and allocated again.
                Err(Error::TypeMismatch { .. }) => {
                    self.remove(at)?;
                    self.insert(at, Image::<K>::new(bytes))?;
                }
                Err(e) => return Err(e),
            }
        } else {
            self.insert(at, Image::<K>::new(bytes))?;
        }
        for old in self.flush_children(at) {
            if matches!(old, Key::Entry(a) if !children.contains(&a)) {
                self.remove_flush_dependency(at, old)?;
            }
        }
        for &c in children {
            match self.add_flush_dependency(at, c) {
                Ok(()) | Err(Error::DependencyExists { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The image of kind `K` held at `at`, if one is (a block its owner made or changed,
    /// perhaps not yet written).
    pub fn image<K: ImageKind>(&self, at: Addr) -> Option<Vec<u8>> {
        if !self.is_resident(at) {
            return None;
        }
        self.read_with::<Image<K>, _>(at, &(), |i| i.bytes.clone())
            .ok()
            .filter(|b| !b.is_empty())
    }
}
