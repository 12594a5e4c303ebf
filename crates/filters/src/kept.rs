//! Buffers a thread keeps from one chunk to the next (here a shuffled chunk's planes, a
//! decoded Zstandard frame; in the dataset crate a chunk's compressed output and its stored
//! bytes): taken for a chunk's work, given back after it, so that the next chunk lands in
//! memory already mapped, with no allocation and no zeroing.

use std::cell::RefCell;
use std::thread::LocalKey;

/// A thread's kept buffer.
pub type Kept = LocalKey<RefCell<Vec<u8>>>;

/// This thread's buffer in `key`, taken (the slot left empty); `None` when there is none to
/// take: the thread's locals are torn down, or a call further up is using it.
pub fn take(key: &'static Kept) -> Option<Vec<u8>> {
    key.try_with(|b| b.try_borrow_mut().map(|mut b| std::mem::take(&mut *b)).ok())
        .ok()
        .flatten()
}

/// Give `buf` back to this thread's slot `key`, unless it has more room than `most` (a rare
/// large chunk's buffer is freed) or the slot holds a larger one.
pub fn keep(key: &'static Kept, buf: Vec<u8>, most: usize) {
    if buf.capacity() > most {
        return;
    }
    let _ = key.try_with(|b| {
        if let Ok(mut b) = b.try_borrow_mut()
            && b.capacity() < buf.capacity()
        {
            *b = buf;
        }
    });
}
