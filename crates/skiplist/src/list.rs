//! The skip list over the metadata cache: create, open, get, set, extend, shrink, iterate,
//! delete, bytes used. The update order is that of `docs/format/skiplist.md` §7.

use std::collections::BTreeMap;

use h5chunk_cache::{Error as CacheError, MetadataCache};
use h5chunk_format::chunk_record::{ChunkRecord, RecordCodec};
use h5chunk_format::{Addr, Error as FormatError, Sizes};

use crate::error::{Error, Result};
use crate::format::{Params, Supernode, SupernodeContext, Tail, TailLevel};
use crate::shape::{self, Hop, Lookup};

/// The longest route a lookup follows: a planned route has one hop per binary position below
/// the start's height plus the start (at most 64), the binary-tree descent one per height.
/// Every hop is checked against the index it must reach, so a corrupt (even cyclic) pointer
/// ends a lookup with an error; this bound is a second guard.
const MAX_ROUTE: usize = 2 * crate::format::MAX_HEIGHT as usize + 1;

/// A handle on one skip list: the tail's address and the list's parameters. Every operation
/// goes through the cache it is given, so handles are cheap, and readers (a fresh cache over
/// the same file) see what the last written tail describes.
#[derive(Clone, Debug)]
pub struct SkipList {
    tail: Addr,
    sizes: Sizes,
    params: Params,
    codec: RecordCodec,
}

/// The space a list occupies in the file, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// The tail node.
    pub tail: u64,
    /// The supernodes.
    pub supernodes: u64,
    /// The space reserved for ghost supernodes.
    pub ghosts: u64,
}

impl Usage {
    /// Everything.
    pub fn total(&self) -> u64 {
        self.tail
            .saturating_add(self.supernodes)
            .saturating_add(self.ghosts)
    }
}

fn invalid(structure: &'static str, at: Addr, reason: impl Into<String>) -> Error {
    Error::Format(FormatError::Invalid {
        structure,
        at,
        reason: reason.into(),
    })
}

impl SkipList {
    /// Create an empty list (0 steps): allocates and inserts its tail, dirty.
    pub fn create(cache: &MetadataCache, sizes: Sizes, params: Params) -> Result<SkipList> {
        params.validate().map_err(Error::InvalidArgument)?;
        let codec = params.codec(sizes)?;
        let len = Tail::encoded_len(sizes, params.max_height);
        let tail = cache.allocator().allocate(len as u64)?;
        cache.insert(
            tail,
            Tail {
                sizes,
                params,
                steps: 0,
                levels: vec![TailLevel::default(); usize::from(params.max_height)],
            },
        )?;
        Ok(SkipList {
            tail,
            sizes,
            params,
            codec,
        })
    }

    /// Open the list whose tail is at `tail`, reading and verifying the tail.
    pub fn open(cache: &MetadataCache, tail: Addr, sizes: Sizes) -> Result<SkipList> {
        let params = cache.get::<Tail>(tail, &sizes)?.read().params;
        let codec = params.codec(sizes)?;
        Ok(SkipList {
            tail,
            sizes,
            params,
            codec,
        })
    }

    /// The tail's address (what a layout message records).
    pub fn addr(&self) -> Addr {
        self.tail
    }

    /// The creation parameters.
    pub fn params(&self) -> Params {
        self.params
    }

    /// The steps of the unlimited dimension the list covers.
    pub fn steps(&self, cache: &MetadataCache) -> Result<u64> {
        Ok(self.tail(cache)?.steps)
    }

    /// The number of slots: steps × group length.
    pub fn len(&self, cache: &MetadataCache) -> Result<u64> {
        self.slot_count(&self.tail(cache)?)
    }

    /// Whether the list covers no step.
    pub fn is_empty(&self, cache: &MetadataCache) -> Result<bool> {
        Ok(self.steps(cache)? == 0)
    }

    /// The number of supernodes.
    pub fn supernodes(&self, cache: &MetadataCache) -> Result<u64> {
        Ok(self.tail(cache)?.supernodes())
    }

    /// The slot of chunk `j` (0-based, in C order over the fixed-size dimensions) in `step`
    /// of the unlimited dimension: `step × G + j` (paper §XXI).
    pub fn slot_index(&self, step: u64, j: u64) -> Result<u64> {
        let g = u64::from(self.params.group_len);
        if j >= g {
            return Err(Error::OutOfRange { index: j, len: g });
        }
        step.checked_mul(g)
            .and_then(|s| s.checked_add(j))
            .ok_or(Error::OutOfRange {
                index: step,
                len: u64::MAX.checked_div(g).unwrap_or(0),
            })
    }

    /// The record of slot `index`, found along the inner-pointer route.
    pub fn get(&self, cache: &MetadataCache, index: u64) -> Result<ChunkRecord> {
        self.get_with(cache, Lookup::Inner, index)
    }

    /// The record of slot `index`, found along the route of `lookup`.
    pub fn get_with(
        &self,
        cache: &MetadataCache,
        lookup: Lookup,
        index: u64,
    ) -> Result<ChunkRecord> {
        let tail = self.tail(cache)?;
        let (k, e) = self.position(&tail, index)?;
        let at = self.locate_in(cache, &tail, lookup, k)?;
        let node = self.node(cache, at, k)?;
        let record = node.read().slots.get(e).copied();
        record.ok_or_else(|| invalid("SKLS", at, format!("slot {e} is missing")))
    }

    /// The address of supernode `k` (1-based), reached along the route of `lookup` (the
    /// supernode itself is not read).
    pub fn locate(&self, cache: &MetadataCache, lookup: Lookup, k: u64) -> Result<Addr> {
        let tail = self.tail(cache)?;
        self.locate_in(cache, &tail, lookup, k)
    }

    /// Store `record` in slot `index`. Returns the address of the supernode that holds it, so
    /// that the caller can make it wait for the chunk's data (a flush dependency on the
    /// chunk's proxy).
    pub fn insert(&self, cache: &MetadataCache, index: u64, record: ChunkRecord) -> Result<Addr> {
        self.check_record(&record)?;
        let tail = self.tail(cache)?;
        let (k, e) = self.position(&tail, index)?;
        let at = self.locate_in(cache, &tail, Lookup::Inner, k)?;
        // The dependency first: the tail must never be written between the slot's change
        // and its supernode's write.
        self.depend(cache, at)?;
        {
            let mut node = cache.protect::<Supernode>(at, &self.ctx(Some(k)))?;
            if node.index != k {
                return Err(invalid(
                    "SKLS",
                    at,
                    format!("expected supernode {k}, found {}", node.index),
                ));
            }
            let slot = node
                .slots
                .get_mut(e)
                .ok_or_else(|| invalid("SKLS", at, format!("slot {e} is missing")))?;
            *slot = record;
        }
        Ok(at)
    }

    /// Cover `steps` steps of the unlimited dimension, creating every supernode they need
    /// (paper §IX): each new supernode takes its ghost's space and gets new ghosts to point
    /// forward to; the tail is rewritten last.
    pub fn extend(&self, cache: &MetadataCache, steps: u64) -> Result<()> {
        let mut tail = self.tail(cache)?;
        if steps < tail.steps {
            return Err(Error::WrongDirection {
                op: "extend",
                current: tail.steps,
                requested: steps,
            });
        }
        if steps == tail.steps {
            return Ok(());
        }
        // Slots beyond the old length must exist to be counted.
        steps
            .checked_mul(u64::from(self.params.group_len))
            .ok_or(Error::Unsupported("more than 2^64 slots"))?;
        let n = tail.supernodes();
        let new_n = steps.div_ceil(u64::from(self.params.steps_per_supernode));
        if new_n > self.params.max_supernodes() {
            return Err(Error::Full {
                steps,
                supernodes: new_n,
                max_height: self.params.max_height,
            });
        }
        let mut k = n;
        while k < new_n {
            k = k.saturating_add(1);
            self.append(cache, &mut tail, k)?;
        }
        tail.steps = steps;
        self.write_tail(cache, tail)
    }

    /// Cover only `steps` steps: removes the supernodes beyond them, clears the slots of the
    /// last one beyond them and keeps the space of removed supernodes that become ghosts
    /// (§8). Returns the allocated records of the removed slots, in slot order, so that the
    /// caller can free their chunks.
    pub fn shrink(&self, cache: &MetadataCache, steps: u64) -> Result<Vec<(u64, ChunkRecord)>> {
        let tail = self.tail(cache)?;
        if steps > tail.steps {
            return Err(Error::WrongDirection {
                op: "shrink",
                current: tail.steps,
                requested: steps,
            });
        }
        if steps == tail.steps {
            return Ok(Vec::new());
        }
        let per = self.params.slots_per_supernode();
        let len = self.slot_count(&tail)?;
        let first_removed = steps.saturating_mul(u64::from(self.params.group_len));
        let n = tail.supernodes();
        let n2 = steps.div_ceil(u64::from(self.params.steps_per_supernode));

        // Walk back from the last supernode to the new last one (or the first), collecting
        // addresses and the records that go.
        let mut addrs: BTreeMap<u64, Addr> = BTreeMap::new();
        let mut removed = Vec::new();
        let stop = n2.max(1);
        let mut at = self.last_addr(&tail)?;
        let mut k = n;
        loop {
            let node = self.node(cache, at, k)?;
            let node = node.read();
            addrs.insert(k, at);
            let base = k.saturating_sub(1).saturating_mul(per);
            for (e, r) in node.slots.iter().enumerate() {
                let slot = base.saturating_add(e as u64);
                if slot >= first_removed && slot < len && r.addr.is_some() {
                    removed.push((slot, *r));
                }
            }
            if k <= stop {
                break;
            }
            at = node
                .back
                .first()
                .copied()
                .flatten()
                .ok_or_else(|| invalid("SKLS", at, "back pointer of level 1 is undefined"))?;
            k = k.saturating_sub(1);
        }
        removed.sort_by_key(|&(slot, _)| slot);

        // The new tail's pointers, found before anything is removed.
        let top2 = shape::top_height(n2);
        let mut levels = vec![TailLevel::default(); usize::from(self.params.max_height)];
        let old_ghosts = self.ghost_table(&tail, tail.supernodes());
        let mut reserved: Vec<Addr> = Vec::new();
        for (l, entry) in (1u32..)
            .zip(levels.iter_mut())
            .take_while(|(l, _)| *l <= top2)
        {
            let r = shape::rightmost(n2, l).ok_or(Error::Unsupported("list shape"))?;
            entry.rightmost = Some(match addrs.get(&r) {
                Some(a) => *a,
                None => self.locate_in(cache, &tail, Lookup::Inner, r)?,
            });
            entry.leftmost = tail.level(l).and_then(|x| x.leftmost);
            let g = shape::ghost(n2, l).ok_or(Error::Unsupported("list shape"))?;
            entry.ghost = if shape::height(g) > u32::from(self.params.max_height) {
                None
            } else {
                let a = if g <= n {
                    addrs.get(&g).copied()
                } else {
                    old_ghosts.iter().find(|(i, _)| *i == g).map(|&(_, a)| a)
                };
                let a = a.ok_or_else(|| invalid("SKLT", self.tail, "missing ghost"))?;
                reserved.push(a);
                Some(a)
            };
        }

        // Clear the slots of the new last supernode beyond the new length.
        if n2 >= 1
            && let Some(&at) = addrs.get(&n2)
        {
            let keep = usize::try_from(
                first_removed.saturating_sub(n2.saturating_sub(1).saturating_mul(per)),
            )
            .unwrap_or(usize::MAX);
            let dirty = {
                let node = self.node(cache, at, n2)?;
                let node = node.read();
                node.slots
                    .iter()
                    .skip(keep)
                    .any(|r| *r != ChunkRecord::default())
            };
            if dirty {
                self.depend(cache, at)?;
                let mut node = cache.protect::<Supernode>(at, &self.ctx(Some(n2)))?;
                for r in node.slots.iter_mut().skip(keep) {
                    *r = ChunkRecord::default();
                }
            }
        }

        let mut new_tail = tail.clone();
        new_tail.steps = steps;
        new_tail.levels = levels;
        self.write_tail(cache, new_tail)?;

        // Drop the removed supernodes; free what is neither a supernode nor a ghost now.
        let mut freed: Vec<Addr> = Vec::new();
        for (&k, &a) in addrs.range(n2.saturating_add(1)..) {
            cache.remove(a)?;
            if !reserved.contains(&a) {
                self.free(cache, a, self.supernode_len(shape::height(k)))?;
                freed.push(a);
            }
        }
        for (g, a) in old_ghosts {
            if !reserved.contains(&a) && !freed.contains(&a) {
                self.free(cache, a, self.supernode_len(shape::height(g)))?;
                freed.push(a);
            }
        }
        Ok(removed)
    }

    /// Call `f(slot, record)` for every slot, first to last, walking the forward pointers of
    /// level 1 from the first supernode until the pointer that equals the tail's ghost of
    /// level 1 (paper §XII).
    pub fn for_each(
        &self,
        cache: &MetadataCache,
        mut f: impl FnMut(u64, ChunkRecord),
    ) -> Result<()> {
        let tail = self.tail(cache)?;
        let n = tail.supernodes();
        if n == 0 {
            return Ok(());
        }
        let len = self.slot_count(&tail)?;
        let per = self.params.slots_per_supernode();
        let ghost = tail.level(1).and_then(|l| l.ghost);
        let mut at = tail
            .level(1)
            .and_then(|l| l.leftmost)
            .ok_or_else(|| invalid("SKLT", self.tail, "no first supernode"))?;
        // Bounded by the number of supernodes; each is checked to be the one expected.
        for k in 1..=n {
            let (slots, next) = {
                let node = self.node(cache, at, k)?;
                let node = node.read();
                (node.slots.clone(), node.forward.first().copied().flatten())
            };
            let base = k.saturating_sub(1).saturating_mul(per);
            for (e, r) in (0u64..).zip(slots) {
                let slot = base.saturating_add(e);
                if slot < len {
                    f(slot, r);
                }
            }
            if k == n {
                if next != ghost {
                    return Err(invalid(
                        "SKLS",
                        at,
                        "the last supernode does not point to the ghost",
                    ));
                }
            } else {
                if next == ghost {
                    return Err(invalid(
                        "SKLS",
                        at,
                        "the ghost is reached before the last supernode",
                    ));
                }
                at = next.ok_or_else(|| {
                    invalid("SKLS", at, "forward pointer of level 1 is undefined")
                })?;
            }
        }
        Ok(())
    }

    /// Call `f(slot, record)` for every slot, last to first, walking back pointers of level 1
    /// from the last supernode.
    pub fn for_each_backward(
        &self,
        cache: &MetadataCache,
        mut f: impl FnMut(u64, ChunkRecord),
    ) -> Result<()> {
        let tail = self.tail(cache)?;
        let n = tail.supernodes();
        if n == 0 {
            return Ok(());
        }
        let len = self.slot_count(&tail)?;
        let per = self.params.slots_per_supernode();
        let mut at = self.last_addr(&tail)?;
        // Bounded by the number of supernodes; each is checked to be the one expected.
        for k in (1..=n).rev() {
            let (slots, next) = {
                let node = self.node(cache, at, k)?;
                let node = node.read();
                (node.slots.clone(), node.back.first().copied().flatten())
            };
            let base = k.saturating_sub(1).saturating_mul(per);
            let numbered: Vec<(u64, ChunkRecord)> = (0u64..).zip(slots).collect();
            for (e, r) in numbered.into_iter().rev() {
                let slot = base.saturating_add(e);
                if slot < len {
                    f(slot, r);
                }
            }
            match (k, next) {
                (1, None) => {}
                (1, Some(_)) => {
                    return Err(invalid(
                        "SKLS",
                        at,
                        "the first supernode has a back pointer",
                    ));
                }
                (_, Some(a)) => at = a,
                (_, None) => {
                    return Err(invalid("SKLS", at, "back pointer of level 1 is undefined"));
                }
            }
        }
        Ok(())
    }

    /// Free every supernode, every ghost and the tail, and drop them from the cache.
    pub fn delete(self, cache: &MetadataCache) -> Result<()> {
        let tail = self.tail(cache)?;
        let n = tail.supernodes();
        let mut nodes = Vec::new();
        if n > 0 {
            let mut at = self.last_addr(&tail)?;
            for k in (1..=n).rev() {
                nodes.push((k, at));
                if k > 1 {
                    let node = self.node(cache, at, k)?;
                    let next = node.read().back.first().copied().flatten();
                    at = next.ok_or_else(|| {
                        invalid("SKLS", at, "back pointer of level 1 is undefined")
                    })?;
                }
            }
        }
        for (k, a) in nodes {
            cache.remove(a)?;
            self.free(cache, a, self.supernode_len(shape::height(k)))?;
        }
        let mut freed = Vec::new();
        for (g, a) in self.ghost_table(&tail, tail.supernodes()) {
            if !freed.contains(&a) {
                self.free(cache, a, self.supernode_len(shape::height(g)))?;
                freed.push(a);
            }
        }
        cache.remove(self.tail)?;
        let len = Tail::encoded_len(self.sizes, self.params.max_height);
        self.free(cache, self.tail, len as u64)
    }

    /// The bytes the list occupies: tail, supernodes and reserved ghosts (no I/O beyond the
    /// tail: the sizes follow from the shape).
    pub fn usage(&self, cache: &MetadataCache) -> Result<Usage> {
        let tail = self.tail(cache)?;
        let n = tail.supernodes();
        let supernodes = (1..=shape::top_height(n))
            .map(|l| shape::count_of_height(n, l).saturating_mul(self.supernode_len(l)))
            .fold(0u64, u64::saturating_add);
        let mut seen = Vec::new();
        let mut ghosts = 0u64;
        for (g, a) in self.ghost_table(&tail, tail.supernodes()) {
            if !seen.contains(&a) {
                seen.push(a);
                ghosts = ghosts.saturating_add(self.supernode_len(shape::height(g)));
            }
        }
        Ok(Usage {
            tail: Tail::encoded_len(self.sizes, self.params.max_height) as u64,
            supernodes,
            ghosts,
        })
    }

    /// The bytes the list occupies in the file: `usage(cache)?.total()`.
    pub fn bytes_used(&self, cache: &MetadataCache) -> Result<u64> {
        Ok(self.usage(cache)?.total())
    }

    // ----- internals ----------------------------------------------------------------------

    fn tail(&self, cache: &MetadataCache) -> Result<Tail> {
        let t = cache.get::<Tail>(self.tail, &self.sizes)?.read().clone();
        if t.params != self.params {
            return Err(invalid(
                "SKLT",
                self.tail,
                "parameters changed since the list was opened",
            ));
        }
        Ok(t)
    }

    /// Supernode `k` at `at`, checked to be supernode `k` of this list even when the cache
    /// already holds it (a corrupt pointer may lead to a resident supernode of another index).
    fn node(
        &self,
        cache: &MetadataCache,
        at: Addr,
        k: u64,
    ) -> Result<h5chunk_cache::EntryRef<Supernode>> {
        let node = cache.get::<Supernode>(at, &self.ctx(Some(k)))?;
        let found = node.read().index;
        if found != k {
            return Err(invalid(
                "SKLS",
                at,
                format!("the route expected supernode {k}, found supernode {found}"),
            ));
        }
        Ok(node)
    }

    fn write_tail(&self, cache: &MetadataCache, tail: Tail) -> Result<()> {
        let mut t = cache.protect::<Tail>(self.tail, &self.sizes)?;
        *t = tail;
        Ok(())
    }

    fn ctx(&self, expect: Option<u64>) -> SupernodeContext {
        SupernodeContext {
            sizes: self.sizes,
            params: self.params,
            codec: self.codec,
            tail: self.tail,
            expect,
        }
    }

    fn supernode_len(&self, height: u32) -> u64 {
        Supernode::encoded_len(
            self.sizes,
            &self.codec,
            self.params.slots_per_supernode(),
            height,
        ) as u64
    }

    fn slot_count(&self, tail: &Tail) -> Result<u64> {
        tail.steps
            .checked_mul(u64::from(self.params.group_len))
            .ok_or_else(|| invalid("SKLT", self.tail, "more than 2^64 slots"))
    }

    /// Supernode (1-based) and slot within it of slot `index`.
    fn position(&self, tail: &Tail, index: u64) -> Result<(u64, usize)> {
        let len = self.slot_count(tail)?;
        if index >= len {
            return Err(Error::OutOfRange { index, len });
        }
        let per = self.params.slots_per_supernode().max(1);
        let k = index.checked_div(per).unwrap_or(0).saturating_add(1);
        let e = usize::try_from(index.checked_rem(per).unwrap_or(0))
            .map_err(|_| Error::Unsupported("huge supernodes"))?;
        Ok((k, e))
    }

    fn last_addr(&self, tail: &Tail) -> Result<Addr> {
        let n = tail.supernodes();
        tail.level(shape::height(n))
            .and_then(|l| l.rightmost)
            .ok_or_else(|| invalid("SKLT", self.tail, "no pointer to the last supernode"))
    }

    /// The ghosts of a list of `n` supernodes whose tail pointers are `tail`'s, as (supernode
    /// index, reserved address), one entry per level.
    fn ghost_table(&self, tail: &Tail, n: u64) -> Vec<(u64, Addr)> {
        (1..=shape::top_height(n))
            .filter_map(|l| Some((shape::ghost(n, l)?, tail.level(l)?.ghost?)))
            .collect()
    }

    /// Follow the route of `lookup` to supernode `k`, reading every supernode before it.
    fn locate_in(
        &self,
        cache: &MetadataCache,
        tail: &Tail,
        lookup: Lookup,
        k: u64,
    ) -> Result<Addr> {
        let n = tail.supernodes();
        let route = shape::plan(n, k, lookup).ok_or(Error::OutOfRange { index: k, len: n })?;
        if route.len() > MAX_ROUTE {
            return Err(Error::Unsupported("route longer than the format allows"));
        }
        let mut cur: Option<(Addr, u64)> = None;
        for (hop, to) in route {
            let next = match (hop, cur) {
                (Hop::RightMost(l), _) => tail.level(l).and_then(|e| e.rightmost),
                (Hop::LeftMost(l), _) => tail.level(l).and_then(|e| e.leftmost),
                (Hop::Back(l) | Hop::Forward(l), Some((at, from))) => {
                    let node = self.node(cache, at, from)?;
                    let node = node.read();
                    let ptrs = if matches!(hop, Hop::Back(_)) {
                        &node.back
                    } else {
                        &node.forward
                    };
                    usize::try_from(l.saturating_sub(1))
                        .ok()
                        .and_then(|i| ptrs.get(i).copied().flatten())
                }
                (_, None) => None,
            };
            let at = cur.map_or(self.tail, |(a, _)| a);
            let next = next.ok_or_else(|| {
                invalid(
                    if cur.is_some() { "SKLS" } else { "SKLT" },
                    at,
                    format!("{hop:?} toward supernode {to} is undefined"),
                )
            })?;
            cur = Some((next, to));
        }
        cur.map(|(a, _)| a)
            .ok_or(Error::OutOfRange { index: k, len: n })
    }

    /// Append supernode `k` (the list has `k - 1`), updating `tail` in memory.
    fn append(&self, cache: &MetadataCache, tail: &mut Tail, k: u64) -> Result<()> {
        let n = k.saturating_sub(1);
        let h = shape::height(k);
        let old_ghosts = self.ghost_table(tail, n);
        let at = if n == 0 {
            self.allocate(cache, self.supernode_len(h))?
        } else {
            old_ghosts
                .iter()
                .find(|(g, _)| *g == k)
                .map(|&(_, a)| a)
                .ok_or_else(|| invalid("SKLT", self.tail, format!("no ghost for supernode {k}")))?
        };
        let mut back = Vec::new();
        for l in 1..=h {
            let step = 1u64.checked_shl(l.saturating_sub(1)).unwrap_or(u64::MAX);
            back.push(match k.checked_sub(step).filter(|&x| x > 0) {
                None => None,
                // Supernode k - 2^(l-1) is the right-most of its height among 1..k-1.
                Some(x) => Some(
                    tail.level(shape::height(x))
                        .and_then(|e| e.rightmost)
                        .ok_or_else(|| invalid("SKLT", self.tail, "missing right-most pointer"))?,
                ),
            });
        }
        // The new ghosts: kept from the old table, shared between levels, or allocated.
        let top = shape::top_height(k);
        let mut ghosts: Vec<(u64, Option<Addr>)> = Vec::new();
        for l in 1..=top {
            let g = shape::ghost(k, l).ok_or(Error::Unsupported("list shape"))?;
            let a = if shape::height(g) > u32::from(self.params.max_height) {
                None
            } else if let Some(&(_, a)) = old_ghosts.iter().find(|(i, _)| *i == g) {
                Some(a)
            } else if let Some(&(_, a)) = ghosts.iter().find(|(i, _)| *i == g) {
                a
            } else {
                Some(self.allocate(cache, self.supernode_len(shape::height(g)))?)
            };
            ghosts.push((g, a));
        }
        // Supernode k's forward pointer of level l leads to k + 2^(l-1), the ghost of level l.
        let forward: Vec<Option<Addr>> = ghosts.iter().take(back.len()).map(|&(_, a)| a).collect();
        let slots = usize::try_from(self.params.slots_per_supernode())
            .map_err(|_| Error::Unsupported("huge supernodes"))?;
        cache.insert(
            at,
            Supernode {
                sizes: self.sizes,
                codec: self.codec,
                tail: self.tail,
                index: k,
                back,
                forward,
                slots: vec![ChunkRecord::default(); slots],
            },
        )?;
        let entry = tail
            .level_mut(h)
            .ok_or(Error::Unsupported("height above the max height"))?;
        entry.rightmost = Some(at);
        if k.is_power_of_two() {
            entry.leftmost = Some(at);
        }
        for (i, level) in tail.levels.iter_mut().enumerate() {
            level.ghost = ghosts.get(i).and_then(|&(_, a)| a);
        }
        self.depend(cache, at)
    }

    /// The tail may not reach the file before `child` (§7.5).
    fn depend(&self, cache: &MetadataCache, child: Addr) -> Result<()> {
        match cache.add_flush_dependency(self.tail, child) {
            Ok(()) | Err(CacheError::DependencyExists { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn allocate(&self, cache: &MetadataCache, len: u64) -> Result<Addr> {
        Ok(cache.allocator().allocate(len)?)
    }

    fn free(&self, cache: &MetadataCache, at: Addr, len: u64) -> Result<()> {
        Ok(cache.allocator().free(at, len)?)
    }

    fn check_record(&self, record: &ChunkRecord) -> Result<()> {
        if !self.codec.is_filtered() && (record.size != 0 || record.mask != 0) {
            return Err(Error::InvalidArgument(
                "chunk record: an unfiltered list stores no chunk size or filter mask",
            ));
        }
        let mut scratch = Vec::new();
        self.codec.encode(record, &mut scratch).map_err(|_| {
            Error::InvalidArgument("chunk record: the address or size does not fit its field")
        })
    }
}
