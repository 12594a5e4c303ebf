//! A value on cache lines of its own.

/// `T` aligned to a cache line. Behind a lock (`RwLock<CacheLine<T>>`) it keeps the lock word
/// alone on its line: threads that take the lock shared, each writing the word, do not also
/// evict the line holding the data they all read.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct CacheLine<T>(pub T);

impl<T> std::ops::Deref for CacheLine<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for CacheLine<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}
