//! A small read-through cache of storage pages for raw-data reads: the small chunks of a random
//! lookup cost one system call per page, not one per chunk, and a page read once serves every
//! chunk in it.
//!
//! Only reads of at most half a page go through it (larger ones go straight to the storage, at
//! no extra copy). Every write through the same owner must [`invalidate`](PageCache::invalidate)
//! the range it changed; pages are never written back. The storage's last page, when it runs
//! past the storage's end, is kept as far as the storage goes (a read past that reloads it,
//! and the longer copy is kept; a read past the storage's end goes straight to the storage).
//! No lock is ever held across storage I/O: concurrent misses of one page read it twice,
//! harmlessly.
//!
//! Pages are spread over shards by page number, each with its own lock, so that readers on
//! several threads rarely meet. Eviction within a shard is CLOCK over a fixed number of page
//! slots: a hit sets a bit, the hand clears bits until it finds a page not used since its
//! last pass.

use std::io;

use h5chunk_format::Addr;
use parking_lot::Mutex;

use crate::{IntMap, Storage};

/// Bytes per page: the operating system's page, so a miss costs what a one-byte read costs.
pub const PAGE_BYTES: usize = 4096;

/// One cached page.
#[derive(Debug)]
struct Page {
    number: u64,
    bytes: Box<[u8]>,
    referenced: bool,
}

#[derive(Debug, Default)]
struct Inner {
    slots: Vec<Page>,
    by_number: IntMap<u64, usize>,
    hand: usize,
    hits: u64,
    misses: u64,
    /// Moves at every invalidation and clear: a page read from storage while it moved may
    /// predate the write that moved it, and is not kept.
    generation: u64,
    /// The slot of the page last served: a hint only (its page's number is compared before
    /// use, so a slot since emptied, moved or refilled costs a map lookup, never a wrong
    /// page). Lookups of nearby small chunks hit the same page in turn.
    last: usize,
}

/// Most shards a cache has (fewer when it holds fewer pages).
const SHARDS: usize = 16;

/// The page cache (see the module docs).
#[derive(Debug)]
pub struct PageCache {
    /// Pages each shard holds.
    capacity: usize,
    /// The shard of page `n` is `n & mask` (a power of two shards: no division per read).
    mask: u64,
    shards: Box<[Mutex<Inner>]>,
}

impl PageCache {
    /// A cache of at most `bytes` of pages (at least one page, unless `bytes` is 0: then every
    /// read goes to the storage).
    pub fn new(bytes: usize) -> PageCache {
        let pages = bytes.checked_div(PAGE_BYTES).unwrap_or(0);
        // The largest power of two not above min(pages, SHARDS), and at least 1.
        let shards = 1usize
            .checked_shl(pages.clamp(1, SHARDS).checked_ilog2().unwrap_or(0))
            .unwrap_or(1);
        PageCache {
            capacity: pages.checked_div(shards).unwrap_or(0),
            mask: shards.saturating_sub(1) as u64,
            shards: (0..shards).map(|_| Mutex::new(Inner::default())).collect(),
        }
    }

    /// The shard holding page `number` (always one: there is at least one shard). Page
    /// `number` is in shard `number mod shards.len()`, which `invalidate` relies on.
    #[inline]
    fn shard(&self, number: u64) -> Option<&Mutex<Inner>> {
        self.shards.get(usize::try_from(number & self.mask).ok()?)
    }

    /// Pages read from the storage and reads served from memory so far.
    pub fn stats(&self) -> (u64, u64) {
        self.shards.iter().fold((0, 0), |(m, h), s| {
            let g = s.lock();
            (m.saturating_add(g.misses), h.saturating_add(g.hits))
        })
    }

    /// Pages held.
    pub fn pages(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().slots.len())
            .fold(0, usize::saturating_add)
    }

    /// Fill `buf` from `at`, through the cache; `Ok(false)` (nothing done) when the read is not
    /// one the cache serves: larger than half a page, or running past the storage's end (the
    /// storage's last page, shorter than a page, is served as far as it goes).
    #[inline]
    pub fn read(&self, storage: &dyn Storage, at: Addr, buf: &mut [u8]) -> io::Result<bool> {
        if self.capacity == 0 || buf.len() > PAGE_BYTES / 2 || buf.is_empty() {
            return Ok(false);
        }
        let page = PAGE_BYTES as u64;
        let number = at.get().checked_div(page).unwrap_or(0);
        // Below `PAGE_BYTES`: the remainder of a division by it.
        let in_page = usize::try_from(at.get().checked_rem(page).unwrap_or(0)).unwrap_or(0);
        // At most half a page long, so the read spans this page and perhaps the next.
        let head_len = buf.len().min(PAGE_BYTES.saturating_sub(in_page));
        let (head, tail) = buf.split_at_mut(head_len);
        if !self.copy_from(storage, number, in_page, head)? {
            return Ok(false);
        }
        if tail.is_empty() {
            return Ok(true);
        }
        match number.checked_add(1) {
            Some(next) => self.copy_from(storage, next, 0, tail),
            None => Ok(false),
        }
    }

    /// Copy `dst.len()` bytes from offset `in_page` of page `number`, loading the page on a
    /// miss; `Ok(false)` if the page cannot be read whole. The hit (a lookup's every read of
    /// a small chunk) is inlined into [`read`](Self::read); the miss is not.
    #[inline]
    fn copy_from(
        &self,
        storage: &dyn Storage,
        number: u64,
        in_page: usize,
        dst: &mut [u8],
    ) -> io::Result<bool> {
        let Some(shard) = self.shard(number) else {
            return Ok(false);
        };
        let generation = {
            let mut g = shard.lock();
            let range = in_page..in_page.saturating_add(dst.len());
            let slot = match g.slots.get(g.last) {
                Some(p) if p.number == number => Some(g.last),
                _ => g.by_number.get(&number).copied(),
            };
            if let Some(slot) = slot
                && let Some(p) = g.slots.get_mut(slot)
                && let Some(src) = p.bytes.get(range)
            {
                copy_short(dst, src);
                p.referenced = true;
                g.hits = g.hits.saturating_add(1);
                g.last = slot;
                return Ok(true);
            }
            g.generation
        };
        self.load(storage, shard, generation, number, in_page, dst)
    }

    /// [`copy_from`](Self::copy_from)'s miss: read page `number` (its shard's generation was
    /// `generation` before the read), serve `dst` from it, and keep it unless it was written
    /// meanwhile.
    #[inline(never)]
    fn load(
        &self,
        storage: &dyn Storage,
        shard: &Mutex<Inner>,
        generation: u64,
        number: u64,
        in_page: usize,
        dst: &mut [u8],
    ) -> io::Result<bool> {
        let Some(page_at) = number.checked_mul(PAGE_BYTES as u64) else {
            return Ok(false);
        };
        let mut bytes = vec![0u8; PAGE_BYTES].into_boxed_slice();
        match storage.read_at(Addr(page_at), &mut bytes) {
            Ok(()) => {}
            // The storage's last page: what of it exists (a file whose raw data ends the file,
            // a fixed dataset's, has its last lookups there: each would read a page, then
            // the element again, if this page were not kept).
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                match last_page(storage, page_at)? {
                    Some(part) => bytes = part,
                    None => return Ok(false),
                }
            }
            Err(e) => return Err(e),
        }
        let Some(src) = bytes.get(in_page..in_page.saturating_add(dst.len())) else {
            // Past the storage's end: the caller reads what exists.
            return Ok(false);
        };
        dst.copy_from_slice(src);
        let mut g = shard.lock();
        g.misses = g.misses.saturating_add(1);
        if g.generation != generation {
            // Written meanwhile: what was read serves this read (whose caller knows the write
            // raced it), but is not kept for later ones.
            return Ok(true);
        }
        if let Some(&slot) = g.by_number.get(&number) {
            // Another reader loaded it meanwhile, or it is the storage's last page, held from
            // when the storage was shorter: the longer of the two is kept (both read since
            // the last write to the page, so they agree where both hold bytes).
            if let Some(p) = g.slots.get_mut(slot)
                && p.bytes.len() < bytes.len()
            {
                p.bytes = bytes;
            }
            return Ok(true);
        }
        let page = Page {
            number,
            bytes,
            referenced: false,
        };
        if g.slots.len() < self.capacity {
            let slot = g.slots.len();
            g.slots.push(page);
            g.by_number.insert(number, slot);
            return Ok(true);
        }
        // CLOCK: clear bits until a page not used since the hand last passed it.
        let n = g.slots.len();
        let victim = loop {
            let h = g.hand.checked_rem(n).unwrap_or(0);
            g.hand = h.saturating_add(1).checked_rem(n).unwrap_or(0);
            match g.slots.get_mut(h) {
                Some(p) if p.referenced => p.referenced = false,
                Some(_) => break h,
                None => return Ok(true),
            }
        };
        if let Some(old) = g.slots.get_mut(victim).map(|p| std::mem::replace(p, page)) {
            g.by_number.remove(&old.number);
        }
        g.by_number.insert(number, victim);
        Ok(true)
    }

    /// Forget every page overlapping `len` bytes at `at` (they were written).
    pub fn invalidate(&self, at: Addr, len: u64) {
        if len == 0 {
            return;
        }
        let page = PAGE_BYTES as u64;
        let first = at.get().checked_div(page).unwrap_or(0);
        let last = at
            .get()
            .saturating_add(len.saturating_sub(1))
            .checked_div(page)
            .unwrap_or(u64::MAX);
        let n = self.shards.len() as u64;
        if last.saturating_sub(first) < n {
            // A few pages (a chunk written in place): only their shards.
            for number in first..=last {
                if let Some(shard) = self.shard(number) {
                    let mut g = shard.lock();
                    g.generation = g.generation.wrapping_add(1);
                    g.forget(number);
                }
            }
            return;
        }
        for (k, shard) in (0u64..).zip(self.shards.iter()) {
            let mut g = shard.lock();
            g.generation = g.generation.wrapping_add(1);
            if g.by_number.is_empty() {
                continue;
            }
            if last.saturating_sub(first).checked_div(n).unwrap_or(0) > g.by_number.len() as u64 {
                // A large write: scan the pages held instead of the pages written.
                g.forget_where(|p| p >= first && p <= last);
                continue;
            }
            // This shard's pages of the range: those `number ≡ k (mod n)`.
            let skip = k
                .checked_add(n)
                .and_then(|x| x.checked_sub(first.checked_rem(n).unwrap_or(0)))
                .and_then(|x| x.checked_rem(n))
                .unwrap_or(0);
            let mut number = first.saturating_add(skip);
            while number <= last {
                g.forget(number);
                match number.checked_add(n) {
                    Some(next) => number = next,
                    None => break,
                }
            }
        }
    }

    /// Forget every page (the storage changed under the cache: truncated, or refreshed).
    pub fn clear(&self) {
        for shard in self.shards.iter() {
            let mut g = shard.lock();
            g.generation = g.generation.wrapping_add(1);
            g.slots.clear();
            g.by_number.clear();
            g.hand = 0;
        }
    }
}

impl Inner {
    /// Forget page `number`, if held.
    fn forget(&mut self, number: u64) {
        if let Some(slot) = self.by_number.remove(&number) {
            // Keep the slot vector dense: move the last page into the hole.
            let last_slot = self.slots.len().saturating_sub(1);
            if slot >= self.slots.len() {
                return;
            }
            self.slots.swap_remove(slot);
            if slot != last_slot
                && let Some(moved) = self.slots.get(slot).map(|p| p.number)
            {
                self.by_number.insert(moved, slot);
            }
        }
    }

    /// Forget every page whose number `gone` says.
    fn forget_where(&mut self, gone: impl Fn(u64) -> bool) {
        self.by_number.retain(|&n, _| !gone(n));
        self.slots.retain(|p| !gone(p.number));
        for (i, p) in self.slots.iter().enumerate() {
            self.by_number.insert(p.number, i);
        }
        self.hand = 0;
    }
}

/// The bytes of the storage's last page, at `page_at`, as far as the storage goes now: `None`
/// when the page holds none, or the storage changed length under the read.
fn last_page(storage: &dyn Storage, page_at: u64) -> io::Result<Option<Box<[u8]>>> {
    let have = storage.len()?.saturating_sub(page_at);
    let Some(have) = usize::try_from(have)
        .ok()
        .filter(|&h| h > 0 && h < PAGE_BYTES)
    else {
        return Ok(None);
    };
    let mut part = vec![0u8; have].into_boxed_slice();
    match storage.read_at(Addr(page_at), &mut part) {
        Ok(()) => Ok(Some(part)),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
}

/// `dst.copy_from_slice(src)` (equal lengths), with the lengths of one element (1, 2, 4, 8
/// bytes) copied by moves the compiler sees the size of: a lookup's one-byte read otherwise
/// costs a call into the C library's `memcpy`, several times the read itself.
#[inline]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    fn fixed<const N: usize>(dst: &mut [u8], src: &[u8]) -> bool {
        match (<&mut [u8; N]>::try_from(dst), <&[u8; N]>::try_from(src)) {
            (Ok(d), Ok(s)) => {
                *d = *s;
                true
            }
            _ => false,
        }
    }
    // One byte (a lookup of a 1-byte element): no length dispatch.
    if let ([d], [s]) = (&mut *dst, src) {
        *d = *s;
        return;
    }
    let done = match dst.len() {
        2 => fixed::<2>(dst, src),
        4 => fixed::<4>(dst, src),
        8 => fixed::<8>(dst, src),
        _ => false,
    };
    if !done {
        dst.copy_from_slice(src);
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;
    use crate::MemStorage;

    #[test]
    fn serves_small_reads_and_forgets_written_pages() {
        let s = MemStorage::new();
        let data: Vec<u8> = (0..3 * PAGE_BYTES).map(|i| (i % 251) as u8).collect();
        s.write_at(Addr(0), &data).unwrap();
        let c = PageCache::new(2 * PAGE_BYTES);
        let mut b = [0u8; 8];
        // Across the boundary of pages 0 and 1.
        assert!(c.read(&s, Addr(PAGE_BYTES as u64 - 4), &mut b).unwrap());
        assert_eq!(&b, &data[PAGE_BYTES - 4..PAGE_BYTES + 4]);
        assert_eq!(c.stats(), (2, 0));
        assert!(c.read(&s, Addr(10), &mut b).unwrap());
        assert_eq!(&b, &data[10..18]);
        assert_eq!(c.stats(), (2, 1));
        // Written through the owner: the page is forgotten and read again.
        s.write_at(Addr(12), &[0xAA; 2]).unwrap();
        c.invalidate(Addr(12), 2);
        assert!(c.read(&s, Addr(10), &mut b).unwrap());
        assert_eq!(&b, &[10, 11, 0xAA, 0xAA, 14, 15, 16, 17]);
        // A third page evicts one of the two slots.
        assert!(c.read(&s, Addr(2 * PAGE_BYTES as u64), &mut b).unwrap());
        assert_eq!(c.pages(), 2);
        // Large reads and reads past the end are not served.
        assert!(!c.read(&s, Addr(0), &mut [0; PAGE_BYTES]).unwrap());
        assert!(!c.read(&s, Addr(3 * PAGE_BYTES as u64 - 2), &mut b).unwrap());
        c.invalidate(Addr(0), 10 * PAGE_BYTES as u64);
        assert_eq!(c.pages(), 0);
        assert!(c.shards.iter().all(|s| s.lock().by_number.is_empty()));
    }

    #[test]
    fn invalidation_finds_pages_in_power_of_two_shards() {
        let s = MemStorage::new();
        let data: Vec<u8> = (0..8 * PAGE_BYTES).map(|i| (i % 253) as u8).collect();
        s.write_at(Addr(0), &data).unwrap();
        // Six pages' worth: four shards (the largest power of two not above six), one page each.
        let c = PageCache::new(6 * PAGE_BYTES);
        assert_eq!(c.shards.len(), 4);
        let mut b = [0u8; 1];
        for page in 0..4u64 {
            assert!(
                c.read(&s, Addr(page * PAGE_BYTES as u64 + 7), &mut b)
                    .unwrap()
            );
        }
        assert_eq!(c.stats(), (4, 0));
        assert_eq!(c.pages(), 4);
        // Pages 1 to 3 rewritten, through the owner: each is forgotten from its own shard, and
        // the next read of it sees the new bytes.
        let at = PAGE_BYTES as u64 + 7;
        let fresh = vec![0xEE; 2 * PAGE_BYTES + 1];
        s.write_at(Addr(at), &fresh).unwrap();
        c.invalidate(Addr(at), fresh.len() as u64);
        assert_eq!(c.pages(), 1);
        for page in 1..4u64 {
            assert!(
                c.read(&s, Addr(page * PAGE_BYTES as u64 + 7), &mut b)
                    .unwrap()
            );
            assert_eq!(b, [0xEE], "page {page}");
        }
        assert!(c.read(&s, Addr(7), &mut b).unwrap());
        assert_eq!(b, [data[7]]);
        assert_eq!(c.stats(), (7, 1));
        // A large write (more pages than shards) takes the other road through every shard.
        c.invalidate(Addr(0), 8 * PAGE_BYTES as u64);
        assert_eq!(c.pages(), 0);
    }

    #[test]
    fn keeps_the_storages_short_last_page_and_grows_it() {
        let s = MemStorage::new();
        let end = 2 * PAGE_BYTES + 100;
        let data: Vec<u8> = (0..end).map(|i| (i % 251) as u8).collect();
        s.write_at(Addr(0), &data).unwrap();
        let c = PageCache::new(4 * PAGE_BYTES);
        let last = 2 * PAGE_BYTES as u64;
        let mut b = [0u8; 1];
        // The first read of the short last page loads it, the next ones hit it.
        assert!(c.read(&s, Addr(last + 10), &mut b).unwrap());
        assert_eq!(b[0], data[2 * PAGE_BYTES + 10]);
        assert_eq!(c.stats(), (1, 0));
        assert!(c.read(&s, Addr(last + 99), &mut b).unwrap());
        assert_eq!(b[0], data[end - 1]);
        assert_eq!(c.stats(), (1, 1));
        // Past the storage's end: not served (the caller reads what exists).
        let mut four = [0u8; 4];
        assert!(!c.read(&s, Addr(last + 98), &mut four).unwrap());
        assert!(!c.read(&s, Addr(last + 100), &mut b).unwrap());
        // The storage grew (bytes the page never held): read again, and the longer page kept.
        s.write_at(Addr(end as u64), &[0xAB; 200]).unwrap();
        assert!(c.read(&s, Addr(last + 150), &mut b).unwrap());
        assert_eq!(b[0], 0xAB);
        let (misses, hits) = c.stats();
        assert!(c.read(&s, Addr(last + 299), &mut b).unwrap());
        assert_eq!(b[0], 0xAB);
        assert_eq!(c.stats(), (misses, hits + 1));
        assert_eq!(c.pages(), 1);
        // Written through the owner within the held bytes: forgotten, read again.
        s.write_at(Addr(last + 10), &[0xCD]).unwrap();
        c.invalidate(Addr(last + 10), 1);
        assert!(c.read(&s, Addr(last + 10), &mut b).unwrap());
        assert_eq!(b[0], 0xCD);
    }

    #[test]
    fn the_last_page_hint_never_serves_a_moved_page() {
        let s = MemStorage::new();
        // Each page's bytes are its number.
        let data: Vec<u8> = (0..33 * PAGE_BYTES)
            .map(|i| (i / PAGE_BYTES) as u8)
            .collect();
        s.write_at(Addr(0), &data).unwrap();
        // 16 shards of two pages: pages 0, 16 and 32 share shard 0.
        let c = PageCache::new(32 * PAGE_BYTES);
        assert_eq!(c.shards.len(), 16);
        let read = |page: u64| {
            let mut b = [0xFFu8; 1];
            assert!(
                c.read(&s, Addr(page * PAGE_BYTES as u64 + 5), &mut b)
                    .unwrap()
            );
            b[0]
        };
        assert_eq!(read(0), 0);
        assert_eq!(read(16), 16);
        assert_eq!(read(16), 16);
        assert_eq!(read(0), 0);
        // Page 0 forgotten: page 16 moves into its slot, the hint points at no page.
        c.invalidate(Addr(0), 1);
        assert_eq!(read(16), 16);
        // Page 32 takes the freed slot, page 0 evicts one of the two.
        assert_eq!(read(32), 32);
        assert_eq!(read(0), 0);
        for page in [0, 16, 32, 16, 0, 32, 32, 0] {
            assert_eq!(read(page), page as u8, "page {page}");
        }
    }

    #[test]
    fn copies_each_short_length() {
        let src: Vec<u8> = (1..=16).collect();
        for n in 0..=16 {
            let mut dst = vec![0u8; n];
            copy_short(&mut dst, &src[..n]);
            assert_eq!(dst, &src[..n]);
        }
    }
}
