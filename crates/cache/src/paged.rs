//! Paged allocation: the invariants libhdf5's paged aggregation (`H5F_FSPACE_STRATEGY_PAGE`)
//! keeps, so that its page buffer, and any reader that fetches a file a page at a time, finds
//! every block within one page of its kind.
//!
//! - The file is cut into pages of `page` bytes from address 0 (the base address). Every page
//!   holds metadata only or raw data only ([`SpaceKind`]); libhdf5 counts global heap
//!   collections and fractal-heap huge objects as raw data, everything else as metadata.
//! - A block smaller than a page never crosses a page boundary; a block of a page or more
//!   starts on a page boundary and takes whole pages (the rest of its last page is free space
//!   of its kind).
//! - The end of allocation (EOA) is always a multiple of the page size once a page has been
//!   taken: space is taken from the EOA a page at a time.
//!
//! Space freed is reusable by blocks of the same kind only. It is not persisted (the file's
//! File Space Info message says `persist = 0`), and the EOA never shrinks below a page
//! boundary.

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// What a block holds, for paged allocation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum SpaceKind {
    /// Superblock, object headers, B-trees, heaps of names, chunk indexes.
    Metadata,
    /// Chunks and contiguous data, global heap collections, huge fractal-heap objects.
    Raw,
}

/// The pages of a paged file and the free space inside them.
#[derive(Clone, Debug)]
pub(crate) struct PagedSpace {
    page: u64,
    /// First page address of a run of pages → (end of the run, its kind).
    runs: BTreeMap<u64, (u64, SpaceKind)>,
    /// Free blocks inside metadata pages (start → length), coalesced.
    meta_free: BTreeMap<u64, u64>,
    /// Free blocks inside raw-data pages.
    raw_free: BTreeMap<u64, u64>,
    /// Pages below this address were there before (a paged file opened for writing): their
    /// kinds are unknown, so space freed there is forgotten rather than reused.
    known_from: u64,
}

impl PagedSpace {
    /// Paged allocation with pages of `page` bytes over a file whose first `eoa` bytes are
    /// allocated. `fresh`: a new file, whose first bytes (the superblock) lie in metadata
    /// pages, the rest of which is free metadata space; otherwise an existing file, whose
    /// pages keep their unknown kinds and take no new blocks. Returns the space and the new,
    /// page-aligned EOA.
    pub fn new(page: u64, eoa: u64, fresh: bool) -> Result<(Self, u64)> {
        if page == 0 {
            return Err(Error::BadAlignment);
        }
        let end = align_up(eoa, page).ok_or(Error::AddressOverflow {
            addr: h5chunk_format::Addr(eoa),
            len: page,
        })?;
        let mut s = PagedSpace {
            page,
            runs: BTreeMap::new(),
            meta_free: BTreeMap::new(),
            raw_free: BTreeMap::new(),
            known_from: if fresh { 0 } else { end },
        };
        if !fresh {
            return Ok((s, end));
        }
        if end > 0 {
            s.runs.insert(0, (end, SpaceKind::Metadata));
        }
        if end > eoa {
            insert(&mut s.meta_free, eoa, end.saturating_sub(eoa));
        }
        Ok((s, end))
    }

    /// Reserve the file's first `room` bytes (rounded up to whole pages) for metadata: a
    /// new file's metadata blocks take that room first, first fit from the front, and raw
    /// data starts past it. When the room is full, metadata takes new pages at the EOA like
    /// raw data, so later blocks interleave. Only before anything past the first metadata
    /// page was taken (a new file); `eoa` moves past the room.
    pub fn reserve_metadata(&mut self, room: u64, eoa: &mut u64) -> Result<()> {
        let end = align_up(room, self.page).ok_or(Error::AddressOverflow {
            addr: h5chunk_format::Addr(0),
            len: room,
        })?;
        if self.known_from != 0 || self.runs.len() > 1 || !self.raw_free.is_empty() {
            return Err(Error::Unsupported(
                "reserving metadata room in a file that has data pages",
            ));
        }
        if end <= *eoa {
            return Ok(());
        }
        self.runs.clear();
        self.runs.insert(0, (end, SpaceKind::Metadata));
        insert(&mut self.meta_free, *eoa, end.saturating_sub(*eoa));
        *eoa = end;
        Ok(())
    }

    /// The page size.
    pub fn page(&self) -> u64 {
        self.page
    }

    fn free_map(&mut self, kind: SpaceKind) -> &mut BTreeMap<u64, u64> {
        match kind {
            SpaceKind::Metadata => &mut self.meta_free,
            SpaceKind::Raw => &mut self.raw_free,
        }
    }

    /// Allocate `len` bytes of `kind`; `eoa` (page-aligned) grows when new pages are taken.
    pub fn allocate(&mut self, kind: SpaceKind, len: u64, eoa: &mut u64) -> Result<u64> {
        let page = self.page;
        if len < page
            && let Some(at) = self.fit_small(kind, len)
        {
            return Ok(at);
        }
        if len >= page
            && let Some(at) = self.fit_large(kind, len)
        {
            return Ok(at);
        }
        // New pages at the EOA: enough for the block, the rest of the last one free.
        let overflow = || Error::AddressOverflow {
            addr: h5chunk_format::Addr(*eoa),
            len,
        };
        let start = align_up(*eoa, page).ok_or_else(overflow)?;
        let taken = align_up(len, page).ok_or_else(overflow)?;
        let end = start.checked_add(taken).ok_or_else(overflow)?;
        if start > *eoa {
            // Only an EOA set from outside can be unaligned: that gap is metadata.
            insert(&mut self.meta_free, *eoa, start.saturating_sub(*eoa));
        }
        self.runs.insert(start, (end, kind));
        let block_end = start.saturating_add(len);
        if end > block_end {
            insert(
                self.free_map(kind),
                block_end,
                end.saturating_sub(block_end),
            );
        }
        *eoa = end;
        Ok(start)
    }

    /// A place for a block smaller than a page inside one page of free space of its kind.
    fn fit_small(&mut self, kind: SpaceKind, len: u64) -> Option<u64> {
        let page = self.page;
        let map = self.free_map(kind);
        let (fs, flen, at) = map.iter().find_map(|(&fs, &flen)| {
            let fend = fs.checked_add(flen)?;
            let mut at = fs;
            // Crossing a page boundary: start at the next one instead.
            let next = align_up(at.checked_add(1)?, page)?;
            if at.checked_add(len)? > next {
                at = next;
            }
            (at.checked_add(len)? <= fend).then_some((fs, flen, at))
        })?;
        take(map, fs, flen, at, len);
        Some(at)
    }

    /// A place for a block of a page or more at a page boundary inside free space of its kind.
    fn fit_large(&mut self, kind: SpaceKind, len: u64) -> Option<u64> {
        let page = self.page;
        let map = self.free_map(kind);
        let (fs, flen, at) = map.iter().find_map(|(&fs, &flen)| {
            let at = align_up(fs, page)?;
            (at.checked_add(len)? <= fs.checked_add(flen)?).then_some((fs, flen, at))
        })?;
        take(map, fs, flen, at, len);
        Some(at)
    }

    /// The kind of the page holding `addr`, if a page there was taken.
    pub fn kind_at(&self, addr: u64) -> Option<SpaceKind> {
        self.runs
            .range(..=addr)
            .next_back()
            .filter(|(_, (end, _))| addr < *end)
            .map(|(_, (_, kind))| *kind)
    }

    /// Give back `len` bytes at `start`, reusable by blocks of the kind of their page.
    pub fn free(&mut self, start: u64, len: u64) -> Result<()> {
        if start < self.known_from {
            return Ok(());
        }
        let kind = self.kind_at(start).ok_or(Error::BadFree {
            addr: h5chunk_format::Addr(start),
            len,
            reason: "outside every page handed out",
        })?;
        let end = start.checked_add(len).ok_or(Error::BadFree {
            addr: h5chunk_format::Addr(start),
            len,
            reason: "address overflow",
        })?;
        if overlaps(&self.meta_free, start, end) || overlaps(&self.raw_free, start, end) {
            return Err(Error::BadFree {
                addr: h5chunk_format::Addr(start),
                len,
                reason: "overlaps space that is already free",
            });
        }
        insert(self.free_map(kind), start, len);
        Ok(())
    }

    /// Total bytes free inside pages.
    pub fn free_space(&self) -> u64 {
        self.meta_free
            .values()
            .chain(self.raw_free.values())
            .fold(0u64, |a, &b| a.saturating_add(b))
    }
}

/// Cut `at .. at + len` out of the free block `fs .. fs + flen` of `map`.
fn take(map: &mut BTreeMap<u64, u64>, fs: u64, flen: u64, at: u64, len: u64) {
    map.remove(&fs);
    let head = at.saturating_sub(fs);
    if head > 0 {
        map.insert(fs, head);
    }
    let end = at.saturating_add(len);
    let tail = fs.saturating_add(flen).saturating_sub(end);
    if tail > 0 {
        map.insert(end, tail);
    }
}

/// Insert a free block, merging it with its neighbours.
fn insert(map: &mut BTreeMap<u64, u64>, mut start: u64, mut len: u64) {
    if let Some((&ps, &pl)) = map.range(..start).next_back()
        && ps.checked_add(pl) == Some(start)
    {
        map.remove(&ps);
        start = ps;
        len = len.saturating_add(pl);
    }
    if let Some(nl) = map.remove(&start.saturating_add(len)) {
        len = len.saturating_add(nl);
    }
    map.insert(start, len);
}

fn overlaps(map: &BTreeMap<u64, u64>, start: u64, end: u64) -> bool {
    map.range(..end)
        .next_back()
        .is_some_and(|(&s, &l)| s.checked_add(l).is_none_or(|e| e > start))
}

/// `v` rounded up to a multiple of `align` (non-zero), or `None` on overflow.
fn align_up(v: u64, align: u64) -> Option<u64> {
    let rem = v.checked_rem(align)?;
    if rem == 0 {
        Some(v)
    } else {
        v.checked_add(align.checked_sub(rem)?)
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unwrap_used
)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn superblock_page_is_metadata_and_kinds_take_their_own_pages() {
        let (mut s, mut eoa) = PagedSpace::new(4096, 48, true).unwrap();
        assert_eq!(eoa, 4096);
        assert_eq!(s.allocate(SpaceKind::Metadata, 100, &mut eoa).unwrap(), 48);
        assert_eq!(s.allocate(SpaceKind::Raw, 100, &mut eoa).unwrap(), 4096);
        assert_eq!(eoa, 8192);
        assert_eq!(s.allocate(SpaceKind::Metadata, 100, &mut eoa).unwrap(), 148);
        // Does not fit in what is left of page 0: a new metadata page.
        assert_eq!(
            s.allocate(SpaceKind::Metadata, 4000, &mut eoa).unwrap(),
            8192
        );
        // A large block: page-aligned, whole pages.
        assert_eq!(s.allocate(SpaceKind::Raw, 5000, &mut eoa).unwrap(), 12288);
        assert_eq!(eoa, 12288 + 8192);
        assert_eq!(s.kind_at(12288 + 5000), Some(SpaceKind::Raw));
        assert_eq!(s.kind_at(0), Some(SpaceKind::Metadata));
        // The rest of the large block's last page serves small raw blocks.
        assert_eq!(s.allocate(SpaceKind::Raw, 100, &mut eoa).unwrap(), 4196);
    }

    #[test]
    fn freed_space_goes_back_to_its_kind() {
        let (mut s, mut eoa) = PagedSpace::new(512, 0, true).unwrap();
        let m = s.allocate(SpaceKind::Metadata, 512, &mut eoa).unwrap();
        let r = s.allocate(SpaceKind::Raw, 512, &mut eoa).unwrap();
        s.free(m, 512).unwrap();
        // A raw block does not take the freed metadata page.
        assert_eq!(s.allocate(SpaceKind::Raw, 10, &mut eoa).unwrap(), 1024);
        assert_eq!(s.allocate(SpaceKind::Metadata, 10, &mut eoa).unwrap(), m);
        assert!(s.free(r, 512).is_ok());
        assert!(s.free(r, 512).is_err());
        assert!(s.free(1 << 40, 1).is_err());
    }

    #[test]
    fn reserved_metadata_room_takes_metadata_first_and_raw_data_after() {
        let (mut s, mut eoa) = PagedSpace::new(4096, 48, true).unwrap();
        s.reserve_metadata(10_000, &mut eoa).unwrap();
        assert_eq!(eoa, 12288);
        assert_eq!(s.allocate(SpaceKind::Raw, 10, &mut eoa).unwrap(), 12288);
        assert_eq!(s.allocate(SpaceKind::Metadata, 4000, &mut eoa).unwrap(), 48);
        // Does not fit the rest of page 0: the next page of the room.
        assert_eq!(
            s.allocate(SpaceKind::Metadata, 4090, &mut eoa).unwrap(),
            4096
        );
        assert_eq!(
            s.allocate(SpaceKind::Metadata, 4096, &mut eoa).unwrap(),
            8192
        );
        // The room is full: a new page at the EOA.
        assert_eq!(
            s.allocate(SpaceKind::Metadata, 100, &mut eoa).unwrap(),
            16384
        );
        // Too late once data pages exist.
        assert!(s.reserve_metadata(1 << 20, &mut eoa).is_err());
    }

    #[test]
    fn an_existing_file_takes_new_pages_and_forgets_old_space() {
        let (mut s, mut eoa) = PagedSpace::new(4096, 10_000, false).unwrap();
        assert_eq!(eoa, 12288);
        assert_eq!(s.allocate(SpaceKind::Raw, 10, &mut eoa).unwrap(), 12288);
        s.free(100, 50).unwrap();
        assert_eq!(s.free_space(), 4086);
        assert_eq!(
            s.allocate(SpaceKind::Metadata, 10, &mut eoa).unwrap(),
            16384
        );
    }

    proptest! {
        #[test]
        fn blocks_keep_the_page_invariants(
            page_log in 9u32..13,
            ops in proptest::collection::vec((any::<bool>(), 1u64..20_000, any::<bool>()), 1..200),
            room in 0u64..100_000,
        ) {
            let page = 1u64 << page_log;
            let (mut s, mut eoa) = PagedSpace::new(page, 48, true).unwrap();
            s.reserve_metadata(room, &mut eoa).unwrap();
            let room_end = eoa;
            let mut live: Vec<(u64, u64, SpaceKind)> = vec![(0, 48, SpaceKind::Metadata)];
            for (raw, len, free_one) in ops {
                if free_one && live.len() > 1 {
                    let (a, l, _) = live.remove(1);
                    s.free(a, l).unwrap();
                    continue;
                }
                let kind = if raw { SpaceKind::Raw } else { SpaceKind::Metadata };
                let a = s.allocate(kind, len, &mut eoa).unwrap();
                prop_assert_eq!(eoa % page, 0);
                if raw {
                    prop_assert!(a >= room_end, "raw data inside the metadata room");
                }
                prop_assert!(a + len <= eoa);
                if len < page {
                    prop_assert_eq!(a / page, (a + len - 1) / page, "crosses a page");
                } else {
                    prop_assert_eq!(a % page, 0);
                }
                for p in (a / page)..=((a + len - 1) / page) {
                    prop_assert_eq!(s.kind_at(p * page), Some(kind));
                }
                for &(b, bl, _) in &live {
                    prop_assert!(a + len <= b || b + bl <= a, "overlap");
                }
                live.push((a, len, kind));
            }
        }
    }
}
