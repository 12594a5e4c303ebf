//! File-space allocation over the end-of-allocation address (EOA).
//!
//! The EOA is the address just past the last allocated byte; it is what the superblock's
//! "End of File Address" field must hold (docs/format/file-format.md §6). The allocator keeps it in memory;
//! the caller sets it from the superblock at open ([`Allocator::set_eoa`]) and writes it back
//! into the superblock whenever it flushes that.
//!
//! Invariants:
//! - Free and deferred blocks lie below the EOA, never overlap each other, and free blocks are
//!   coalesced (no two are adjacent).
//! - A block freed while a SWMR writer is active goes to the *deferred* list and is never handed
//!   out again while SWMR lasts: a reader may still hold (or be about to read) metadata that
//!   points into it, and reusing it would let that reader decode unrelated bytes. Deferred blocks
//!   become free when SWMR writing ends ([`Allocator::set_swmr_write`]`(false)`).
//! - The EOA only shrinks outside SWMR, when free space ends at it; a SWMR reader may be about
//!   to read up to the old EOA.
//! - Alignment fragments (the gap an aligned allocation skips) were never handed out, so no
//!   reader can reach them: they are free at once, even under SWMR.
//! - Under SWMR the EOA grows in steps of [`SWMR_EOA_STEP`]: an allocation past it moves it to
//!   the next multiple of the step, and the rest of the step is free space (never handed out,
//!   like an alignment gap) that the next allocations take first. The superblock, whose EOF a
//!   SWMR writer rewrites whenever the EOA moves, then changes once a step rather than at
//!   every flush. [`Allocator::release_tail`] gives the unused rest back at close.
//!
//! Free space is not persisted (libhdf5's default strategy): holes left at close are forgotten,
//! which every HDF5 tool accepts.

use std::collections::BTreeMap;

use h5chunk_format::Addr;

use crate::error::{Error, Result};
use crate::paged::{PagedSpace, SpaceKind};

/// The step the EOA grows by under SWMR (see the module docs).
pub const SWMR_EOA_STEP: u64 = 1 << 20;

/// A first-fit allocator over the EOA, with optional alignment and SWMR-deferred reuse.
#[derive(Debug)]
pub struct Allocator {
    eoa: u64,
    /// The EOA again, for readers that must not take the allocator's lock (every change of
    /// `eoa` is stored here too).
    shared_eoa: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Requests of at least `threshold` bytes start at a multiple of `alignment` (libhdf5's
    /// `H5Pset_alignment`); alignment 1 means none.
    threshold: u64,
    alignment: u64,
    swmr: bool,
    /// Start → length of reusable blocks.
    free: BTreeMap<u64, u64>,
    /// Start → length of blocks freed under SWMR, not reusable until SWMR ends.
    deferred: BTreeMap<u64, u64>,
    /// The end of the highest block handed out (at most the EOA): nothing at or past it was
    /// ever given to anyone, so nothing written before points there.
    high: u64,
    /// Paged allocation (libhdf5's paged aggregation), when the file is paged: every request
    /// goes there instead (see [`crate::paged`]).
    paged: Option<PagedSpace>,
}

/// A copy has its own shared EOA: it allocates on its own.
impl Clone for Allocator {
    fn clone(&self) -> Self {
        Allocator {
            eoa: self.eoa,
            shared_eoa: std::sync::Arc::new(std::sync::atomic::AtomicU64::new(self.eoa)),
            threshold: self.threshold,
            alignment: self.alignment,
            swmr: self.swmr,
            free: self.free.clone(),
            deferred: self.deferred.clone(),
            high: self.high,
            paged: self.paged.clone(),
        }
    }
}

impl Allocator {
    /// An allocator whose EOA is `eoa` (the superblock's EOF field, or the end of a new
    /// superblock), with no alignment and nothing free.
    pub fn new(eoa: Addr) -> Self {
        Allocator {
            eoa: eoa.get(),
            shared_eoa: std::sync::Arc::new(std::sync::atomic::AtomicU64::new(eoa.get())),
            threshold: 1,
            alignment: 1,
            swmr: false,
            free: BTreeMap::new(),
            deferred: BTreeMap::new(),
            high: eoa.get(),
            paged: None,
        }
    }

    /// Allocate in pages of `page` bytes from now on, metadata and raw data in pages of their
    /// own (see the crate's `paged` module): the EOA moves up to a page boundary. `fresh`: a new file,
    /// whose first page (the superblock's) is metadata and takes the next metadata blocks;
    /// otherwise an existing paged file, whose pages are left as they are. Refused under SWMR
    /// (its deferred reuse and EOA steps are not paged) and with an alignment set.
    pub fn set_paged(&mut self, page: u64, fresh: bool) -> Result<()> {
        if self.swmr {
            return Err(Error::Unsupported("paged allocation while SWMR writing"));
        }
        if self.alignment != 1 {
            return Err(Error::Unsupported("paged allocation with an alignment"));
        }
        let (space, eoa) = PagedSpace::new(page, self.eoa, fresh)?;
        self.free.clear();
        self.paged = Some(space);
        self.store_eoa(eoa);
        Ok(())
    }

    /// Reserve the first `room` bytes of a new paged file for metadata (see
    /// the crate's `paged` module): metadata fills them first, raw data goes past them.
    pub fn reserve_metadata(&mut self, room: u64) -> Result<()> {
        let Some(p) = self.paged.as_mut() else {
            return Err(Error::Unsupported(
                "metadata room in a file that is not paged",
            ));
        };
        let mut eoa = self.eoa;
        p.reserve_metadata(room, &mut eoa)?;
        self.store_eoa(eoa);
        Ok(())
    }

    /// The page size, when allocation is paged.
    pub fn page_size(&self) -> Option<u64> {
        self.paged.as_ref().map(PagedSpace::page)
    }

    /// Allocate `len` bytes of raw data: in a paged file, in raw-data pages; otherwise as
    /// [`allocate`](Self::allocate).
    pub fn allocate_raw(&mut self, len: u64) -> Result<Addr> {
        self.allocate_kind(SpaceKind::Raw, len)
    }

    /// Allocate `len` bytes of `kind`.
    pub fn allocate_kind(&mut self, kind: SpaceKind, len: u64) -> Result<Addr> {
        match self.paged.as_mut() {
            Some(p) => {
                if len == 0 {
                    return Err(Error::ZeroLength);
                }
                let mut eoa = self.eoa;
                let at = p.allocate(kind, len, &mut eoa)?;
                self.store_eoa(eoa);
                self.high = self.high.max(at.saturating_add(len));
                Ok(Addr(at))
            }
            None => self.allocate_unpaged(len),
        }
    }

    /// The end of the highest block ever handed out (or the EOA it started from): no block
    /// handed out so far reaches past it.
    pub fn high_water(&self) -> Addr {
        Addr(self.high)
    }

    /// The end-of-allocation address: what the superblock's EOF field must hold.
    pub fn eoa(&self) -> Addr {
        Addr(self.eoa)
    }

    /// A handle that always holds the current EOA, readable without this allocator's lock.
    pub fn shared_eoa(&self) -> std::sync::Arc<std::sync::atomic::AtomicU64> {
        std::sync::Arc::clone(&self.shared_eoa)
    }

    fn store_eoa(&mut self, eoa: u64) {
        self.eoa = eoa;
        self.high = self.high.min(eoa);
        self.shared_eoa
            .store(eoa, std::sync::atomic::Ordering::Release);
    }

    /// Set the EOA, as read from the superblock at open. Free and deferred space is forgotten
    /// (it is not persisted in the file).
    pub fn set_eoa(&mut self, eoa: Addr) {
        self.store_eoa(eoa.get());
        self.high = eoa.get();
        self.free.clear();
        self.deferred.clear();
        self.paged = None;
    }

    /// Align every request of at least `threshold` bytes to a multiple of `alignment`.
    pub fn set_alignment(&mut self, threshold: u64, alignment: u64) -> Result<()> {
        if alignment == 0 {
            return Err(Error::BadAlignment);
        }
        self.threshold = threshold.max(1);
        self.alignment = alignment;
        Ok(())
    }

    /// Whether a SWMR writer is active.
    pub fn is_swmr_write(&self) -> bool {
        self.swmr
    }

    /// Enter or leave SWMR-write mode. Leaving it releases the deferred blocks: no reader can
    /// reach them once SWMR writing has ended.
    pub fn set_swmr_write(&mut self, on: bool) {
        self.swmr = on;
        if !on {
            for (start, len) in std::mem::take(&mut self.deferred) {
                self.insert_free(start, len);
            }
            self.shrink_eoa();
        }
    }

    /// Allocate `len` bytes (of metadata, in a paged file): the first free block that fits,
    /// else at the EOA.
    pub fn allocate(&mut self, len: u64) -> Result<Addr> {
        self.allocate_kind(SpaceKind::Metadata, len)
    }

    fn allocate_unpaged(&mut self, len: u64) -> Result<Addr> {
        if len == 0 {
            return Err(Error::ZeroLength);
        }
        let align = if len >= self.threshold {
            self.alignment
        } else {
            1
        };
        let fit = self.free.iter().find_map(|(&start, &flen)| {
            let at = align_up(start, align)?;
            let end = at.checked_add(len)?;
            // `None` (does not fit) when the aligned request ends past the block.
            let tail = start.checked_add(flen)?.checked_sub(end)?;
            // `align_up` never rounds down, so this is the (possibly empty) alignment gap.
            let head = at.checked_sub(start)?;
            Some((start, head, at, end, tail))
        });
        if let Some((start, head, at, end, tail)) = fit {
            self.free.remove(&start);
            if head > 0 {
                self.free.insert(start, head);
            }
            if tail > 0 {
                self.free.insert(end, tail);
            }
            self.high = self.high.max(end);
            return Ok(Addr(at));
        }
        let overflow = Error::AddressOverflow {
            addr: Addr(self.eoa),
            len,
        };
        let at = align_up(self.eoa, align).ok_or(overflow)?;
        let end = at.checked_add(len).ok_or(Error::AddressOverflow {
            addr: Addr(at),
            len,
        })?;
        let gap_start = self.eoa;
        // Under SWMR the EOA moves a step at a time; the rest of the step is free.
        let eoa = if self.swmr {
            align_up(end, SWMR_EOA_STEP).unwrap_or(end)
        } else {
            end
        };
        self.store_eoa(eoa);
        self.high = self.high.max(end);
        // `align_up` never rounds down, so `at >= gap_start`. The alignment gap was never handed
        // out, so it is reusable even under SWMR; so is the rest of a step.
        if let Some(gap) = at.checked_sub(gap_start)
            && gap > 0
        {
            self.insert_free(gap_start, gap);
        }
        if let Some(rest) = eoa.checked_sub(end)
            && rest > 0
        {
            self.insert_free(end, rest);
        }
        Ok(Addr(at))
    }

    /// Give back `len` bytes at `addr`. Under SWMR the block is deferred (see the module docs);
    /// otherwise it is reusable at once and, if it ends at the EOA, the EOA shrinks.
    ///
    /// The caller must first make sure no cached entry still lives there
    /// ([`MetadataCache::remove`](crate::MetadataCache::remove)).
    pub fn free(&mut self, addr: Addr, len: u64) -> Result<()> {
        let bad = |reason| Error::BadFree { addr, len, reason };
        if len == 0 {
            return Err(bad("zero length"));
        }
        let start = addr.get();
        let end = start.checked_add(len).ok_or(bad("address overflow"))?;
        if end > self.eoa {
            return Err(bad("beyond the end of allocation"));
        }
        if let Some(p) = self.paged.as_mut() {
            return p.free(start, len);
        }
        if overlaps(&self.free, start, end) || overlaps(&self.deferred, start, end) {
            return Err(bad("overlaps space that is already free"));
        }
        if self.swmr {
            self.deferred.insert(start, len);
        } else {
            self.insert_free(start, len);
            self.shrink_eoa();
        }
        Ok(())
    }

    /// Total bytes reusable now.
    pub fn free_space(&self) -> u64 {
        let paged = self.paged.as_ref().map_or(0, PagedSpace::free_space);
        self.free.values().sum::<u64>().saturating_add(paged)
    }

    /// Total bytes freed under SWMR and not reusable until it ends.
    pub fn deferred_space(&self) -> u64 {
        self.deferred.values().sum()
    }

    /// The reusable blocks, by address.
    pub fn free_blocks(&self) -> Vec<(Addr, u64)> {
        self.free.iter().map(|(&a, &l)| (Addr(a), l)).collect()
    }

    /// The deferred blocks, by address.
    pub fn deferred_blocks(&self) -> Vec<(Addr, u64)> {
        self.deferred.iter().map(|(&a, &l)| (Addr(a), l)).collect()
    }

    /// Insert a block into the free list, merging it with its neighbours.
    ///
    /// The block and its neighbours lie below the EOA (module invariant; callers check it), so
    /// the merged block does too and the saturating sums below never actually saturate.
    fn insert_free(&mut self, mut start: u64, mut len: u64) {
        if let Some((&ps, &pl)) = self.free.range(..start).next_back()
            && ps.checked_add(pl) == Some(start)
        {
            self.free.remove(&ps);
            start = ps;
            len = len.saturating_add(pl);
        }
        let end = start.saturating_add(len);
        if let Some(nl) = self.free.remove(&end) {
            len = len.saturating_add(nl);
        }
        self.free.insert(start, len);
    }

    /// Give free space that ends at the EOA back, outside SWMR.
    fn shrink_eoa(&mut self) {
        if self.swmr {
            return;
        }
        self.release_tail();
    }

    /// Give the free space that ends at the EOA back, even under SWMR (a closing writer's
    /// unused rest of a step): free blocks were never handed out while SWMR lasts (blocks freed
    /// under it are deferred, not free), so no reader can be about to read there.
    pub fn release_tail(&mut self) {
        while let Some((&start, &len)) = self.free.iter().next_back() {
            if start.checked_add(len) != Some(self.eoa) {
                break;
            }
            self.free.remove(&start);
            self.store_eoa(start);
        }
    }
}

/// `v` rounded up to a multiple of `align` (at least 1), or `None` on overflow.
fn align_up(v: u64, align: u64) -> Option<u64> {
    // `set_alignment` rejects 0, so `checked_rem` only guards the invariant; `rem < align`.
    let rem = v.checked_rem(align)?;
    if rem == 0 {
        Some(v)
    } else {
        v.checked_add(align.checked_sub(rem)?)
    }
}

/// Whether `start..end` overlaps a block of `map` (start → length, non-overlapping).
fn overlaps(map: &BTreeMap<u64, u64>, start: u64, end: u64) -> bool {
    // The blocks of a map never overlap one another and none is empty, so the one starting
    // last before `end` is the one that would reach into `start .. end`: one search, not two
    // (a SWMR writer frees a node on every move, into a list that only grows).
    map.range(..end)
        .next_back()
        // A block whose end would overflow certainly reaches past `start`.
        .is_some_and(|(&s, &l)| s.checked_add(l).is_none_or(|e| e > start))
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unwrap_used
)]
mod tests {
    use super::*;

    #[test]
    fn allocates_at_the_eoa_in_order() {
        let mut a = Allocator::new(Addr(48));
        assert_eq!(a.allocate(100).unwrap(), Addr(48));
        assert_eq!(a.allocate(10).unwrap(), Addr(148));
        assert_eq!(a.eoa(), Addr(158));
        assert!(matches!(a.allocate(0), Err(Error::ZeroLength)));
    }

    #[test]
    fn set_eoa_at_open_forgets_free_space() {
        let mut a = Allocator::new(Addr(0));
        a.allocate(64).unwrap();
        a.allocate(64).unwrap();
        a.free(Addr(0), 64).unwrap();
        a.set_eoa(Addr(4096));
        assert_eq!(a.free_space(), 0);
        assert_eq!(a.allocate(8).unwrap(), Addr(4096));
    }

    #[test]
    fn alignment_applies_above_the_threshold_and_keeps_the_gap_free() {
        let mut a = Allocator::new(Addr(10));
        a.set_alignment(64, 512).unwrap();
        assert_eq!(a.allocate(8).unwrap(), Addr(10));
        assert_eq!(a.allocate(100).unwrap(), Addr(512));
        assert_eq!(a.free_blocks(), vec![(Addr(18), 494)]);
        // A small request reuses the gap.
        assert_eq!(a.allocate(20).unwrap(), Addr(18));
        assert!(matches!(a.set_alignment(1, 0), Err(Error::BadAlignment)));
    }

    #[test]
    fn freed_space_is_reused_first_fit_and_coalesced() {
        let mut a = Allocator::new(Addr(0));
        let x = a.allocate(32).unwrap();
        let y = a.allocate(32).unwrap();
        let _z = a.allocate(32).unwrap();
        a.free(x, 32).unwrap();
        a.free(y, 32).unwrap();
        assert_eq!(a.free_blocks(), vec![(Addr(0), 64)]);
        assert_eq!(a.allocate(48).unwrap(), Addr(0));
        assert_eq!(a.free_blocks(), vec![(Addr(48), 16)]);
        assert_eq!(a.eoa(), Addr(96));
    }

    #[test]
    fn freeing_at_the_eoa_shrinks_it() {
        let mut a = Allocator::new(Addr(0));
        let x = a.allocate(32).unwrap();
        let y = a.allocate(32).unwrap();
        let z = a.allocate(32).unwrap();
        a.free(y, 32).unwrap();
        assert_eq!(a.eoa(), Addr(96));
        a.free(z, 32).unwrap();
        // z and the free y before it both go back.
        assert_eq!(a.eoa(), Addr(32));
        assert_eq!(a.free_space(), 0);
        a.free(x, 32).unwrap();
        assert_eq!(a.eoa(), Addr(0));
    }

    #[test]
    fn swmr_defers_reuse_and_keeps_the_eoa() {
        let mut a = Allocator::new(Addr(0));
        let x = a.allocate(32).unwrap();
        let y = a.allocate(32).unwrap();
        a.set_swmr_write(true);
        a.free(x, 32).unwrap();
        a.free(y, 32).unwrap();
        // Neither block is handed out again, and the EOA does not move back.
        assert_eq!(a.eoa(), Addr(64));
        assert_eq!(a.deferred_space(), 64);
        assert_eq!(a.free_space(), 0);
        assert_eq!(a.allocate(16).unwrap(), Addr(64));
        assert_eq!(a.allocate(32).unwrap(), Addr(80));
        // A double free is caught in the deferred list too.
        assert!(matches!(a.free(x, 8), Err(Error::BadFree { .. })));
        // When SWMR writing ends, the deferred blocks become reusable.
        a.set_swmr_write(false);
        assert_eq!(a.deferred_space(), 0);
        assert_eq!(a.free_blocks(), vec![(Addr(0), 64)]);
        assert_eq!(a.allocate(64).unwrap(), Addr(0));
    }

    #[test]
    fn swmr_moves_the_eoa_in_steps_and_close_gives_the_rest_back() {
        let mut a = Allocator::new(Addr(100));
        a.set_swmr_write(true);
        assert_eq!(a.allocate(50).unwrap(), Addr(100));
        // The EOA jumps to the step; the rest of it is free, and handed out next.
        assert_eq!(a.eoa(), Addr(SWMR_EOA_STEP));
        assert_eq!(a.high_water(), Addr(150));
        assert_eq!(a.free_blocks(), vec![(Addr(150), SWMR_EOA_STEP - 150)]);
        assert_eq!(a.allocate(10).unwrap(), Addr(150));
        assert_eq!(a.eoa(), Addr(SWMR_EOA_STEP));
        // A request larger than the rest starts at the EOA and takes the next step.
        assert_eq!(a.allocate(SWMR_EOA_STEP).unwrap(), Addr(SWMR_EOA_STEP));
        assert_eq!(a.eoa(), Addr(2 * SWMR_EOA_STEP));
        assert_eq!(a.high_water(), Addr(2 * SWMR_EOA_STEP));
        let x = a.allocate(20).unwrap();
        assert_eq!(x, Addr(160), "first fit: the rest of the first step");
        assert_eq!(a.eoa(), Addr(2 * SWMR_EOA_STEP));
        // Freed under SWMR: deferred, the rest of the step stays free.
        a.free(x, 20).unwrap();
        assert_eq!(a.deferred_space(), 20);
        // Closing: nothing free ends at the EOA here (the second step is full).
        a.release_tail();
        assert_eq!(a.eoa(), Addr(2 * SWMR_EOA_STEP));
        // The next step, all but 8 bytes of it: those 8 are the rest, at the EOA.
        let y = a.allocate(SWMR_EOA_STEP - 8).unwrap();
        assert_eq!(y, Addr(2 * SWMR_EOA_STEP));
        assert_eq!(a.eoa(), Addr(3 * SWMR_EOA_STEP));
        a.release_tail();
        assert_eq!(a.eoa(), Addr(3 * SWMR_EOA_STEP - 8));
        assert_eq!(a.high_water(), a.eoa());
    }

    #[test]
    fn swmr_end_releases_deferred_space_at_the_eoa() {
        let mut a = Allocator::new(Addr(0));
        a.allocate(32).unwrap();
        let y = a.allocate(32).unwrap();
        a.set_swmr_write(true);
        a.free(y, 32).unwrap();
        assert_eq!(a.eoa(), Addr(64));
        a.set_swmr_write(false);
        assert_eq!(a.eoa(), Addr(32));
    }

    #[test]
    fn rejects_bad_frees() {
        let mut a = Allocator::new(Addr(0));
        let x = a.allocate(32).unwrap();
        a.allocate(32).unwrap();
        assert!(matches!(a.free(x, 0), Err(Error::BadFree { .. })));
        assert!(matches!(a.free(Addr(60), 8), Err(Error::BadFree { .. })));
        assert!(matches!(
            a.free(Addr(u64::MAX), 8),
            Err(Error::BadFree { .. })
        ));
        a.free(x, 16).unwrap();
        assert!(matches!(a.free(Addr(8), 16), Err(Error::BadFree { .. })));
        assert!(matches!(a.free(Addr(0), 4), Err(Error::BadFree { .. })));
        a.free(Addr(16), 16).unwrap();
        assert_eq!(a.free_blocks(), vec![(Addr(0), 32)]);
    }

    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Alloc(u64),
        Free(usize),
        Swmr(bool),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (1u64..200).prop_map(Op::Alloc),
            3 => any::<usize>().prop_map(Op::Free),
            1 => any::<bool>().prop_map(Op::Swmr),
        ]
    }

    fn overlap(a: (u64, u64), b: (u64, u64)) -> bool {
        a.0 < b.0 + b.1 && b.0 < a.0 + a.1
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        /// Live blocks never overlap and lie below the EOA; aligned requests are aligned; under
        /// SWMR no block freed during it is handed out again and the EOA never moves back.
        #[test]
        fn allocations_never_overlap_and_swmr_never_reuses(
            align in prop::sample::select(vec![1u64, 8, 64]),
            ops in prop::collection::vec(op(), 1..80),
        ) {
            let mut a = Allocator::new(Addr(48));
            a.set_alignment(32, align).unwrap();
            let mut live: Vec<(u64, u64)> = Vec::new();
            let mut freed_in_swmr: Vec<(u64, u64)> = Vec::new();
            for op in ops {
                let eoa_before = a.eoa().get();
                match op {
                    Op::Alloc(len) => {
                        let at = a.allocate(len).unwrap().get();
                        let block = (at, len);
                        prop_assert!(at >= 48 && at + len <= a.eoa().get());
                        prop_assert!(live.iter().all(|&b| !overlap(b, block)));
                        prop_assert!(freed_in_swmr.iter().all(|&b| !overlap(b, block)));
                        if len >= 32 {
                            prop_assert_eq!(at % align, 0);
                        }
                        live.push(block);
                    }
                    Op::Free(i) if !live.is_empty() => {
                        let (at, len) = live.swap_remove(i % live.len());
                        a.free(Addr(at), len).unwrap();
                        if a.is_swmr_write() {
                            freed_in_swmr.push((at, len));
                        }
                    }
                    Op::Free(_) => {}
                    Op::Swmr(on) => {
                        a.set_swmr_write(on);
                        if !on {
                            freed_in_swmr.clear();
                        }
                    }
                }
                if a.is_swmr_write() {
                    prop_assert!(a.eoa().get() >= eoa_before);
                }
                let top = live.iter().map(|&(s, l)| s + l).max().unwrap_or(48);
                prop_assert!(a.eoa().get() >= top);
                let accounted: u64 =
                    live.iter().map(|b| b.1).sum::<u64>() + a.free_space() + a.deferred_space();
                // No byte is lost: alignment gaps and split remainders stay free.
                prop_assert_eq!(accounted, a.eoa().get() - 48);
            }
        }
    }
}
