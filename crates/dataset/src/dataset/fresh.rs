//! Fresh chunks: chunks the index does not hold yet (appended ones, above all), kept back to
//! back in one buffer until the dataset writes them as one block: one space allocation, one
//! write and one batched index update per flush, instead of a buffer, a cache entry and an
//! index round trip per chunk.
//!
//! Every fresh chunk is whole and unfiltered (`chunk_bytes` long), so chunk `i` lies at
//! `i × chunk_bytes` in the buffer and needs no per-chunk allocation. The buffer answers
//! "is chunk `s` here?" without hashing for the append pattern: a chunk at or past the box of
//! held coordinates in some dimension is not held, and while the chunks came in row-major
//! order (appends along the first dimension, of one chunk or a row of chunks) one past the
//! last is not held and one before it is found by binary search. Only chunks that came out of
//! order build (once) a map from coordinates to position.

use h5chunk_cache::IntMap;
use smallvec::SmallVec;

use crate::chunk_cache::Coords;

/// Where a chunk's rows lie in a strided source (see [`Fresh::push_strided`]).
#[derive(Debug)]
pub(crate) struct Rows<'a> {
    /// Bytes between consecutive indices of each of the chunk's outer dimensions.
    pub pitch: &'a [usize],
    /// The chunk's extent in each outer dimension (all but the last).
    pub outer: &'a [u64],
    /// Bytes of one row (the chunk's last dimension).
    pub len: usize,
}

/// Fresh chunks of one dataset.
#[derive(Debug, Default)]
pub(crate) struct Fresh {
    rank: usize,
    chunk_bytes: usize,
    /// The chunks' bytes, back to back, in the file's byte order.
    bytes: Vec<u8>,
    /// Scaled coordinates, `rank` per chunk, in the order the chunks came.
    coords: Vec<u64>,
    /// Per dimension, one past the largest coordinate held.
    hi: SmallVec<[u64; 4]>,
    /// Whether the chunks came in strictly increasing row-major order of their coordinates.
    out_of_order: bool,
    /// Position of each chunk by its coordinates, built on the first question inside `hi`.
    map: Option<IntMap<Coords, usize>>,
}

impl Fresh {
    pub fn new(rank: usize, chunk_bytes: usize) -> Fresh {
        Fresh {
            rank,
            chunk_bytes,
            hi: smallvec::smallvec![0; rank],
            ..Fresh::default()
        }
    }

    /// Number of chunks held.
    pub fn len(&self) -> usize {
        self.coords.len().checked_div(self.rank).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.coords.is_empty()
    }

    /// Memory the chunks hold: their bytes and coordinates.
    pub fn cost(&self) -> usize {
        self.bytes
            .len()
            .saturating_add(self.coords.len().saturating_mul(8))
    }

    /// What one more chunk costs.
    pub fn cost_of_one(&self) -> usize {
        self.chunk_bytes.saturating_add(self.rank.saturating_mul(8))
    }

    /// Whether the chunk at `scaled` may be held (it lies inside the box of held coordinates).
    #[inline]
    fn in_box(&self, scaled: &[u64]) -> bool {
        !self.is_empty() && scaled.iter().zip(&self.hi).all(|(s, h)| s < h)
    }

    /// Position of the chunk at `scaled`, if held.
    #[inline]
    pub fn position(&mut self, scaled: &[u64]) -> Option<usize> {
        if !self.in_box(scaled) {
            return None;
        }
        self.position_in_box(scaled)
    }

    /// [`position`](Self::position) inside the box: the order answers while the chunks came in
    /// order, else the map (built on first use).
    #[inline(never)]
    fn position_in_box(&mut self, scaled: &[u64]) -> Option<usize> {
        if !self.out_of_order {
            return self.position_in_order(scaled);
        }
        let rank = self.rank.max(1);
        let map = self.map.get_or_insert_with(|| {
            self.coords
                .chunks_exact(rank)
                .enumerate()
                .map(|(i, s)| (Coords::from_slice(s), i))
                .collect()
        });
        map.get(scaled).copied()
    }

    /// Chunks in order: past the last one, not held; else found by binary search.
    fn position_in_order(&self, scaled: &[u64]) -> Option<usize> {
        let rank = self.rank.max(1);
        let at = |i: usize| {
            self.coords
                .get(i.checked_mul(rank)?..i.checked_add(1)?.checked_mul(rank)?)
        };
        let n = self.len();
        if at(n.checked_sub(1)?).is_some_and(|last| scaled > last) {
            return None;
        }
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = lo.saturating_add(hi.saturating_sub(lo) / 2);
            match at(mid)?.cmp(scaled) {
                std::cmp::Ordering::Less => lo = mid.saturating_add(1),
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Record chunk `i`, whose bytes are in the buffer, at `scaled`: its order, coordinates,
    /// the box of held coordinates and (once built) the map.
    #[inline]
    fn record(&mut self, scaled: &[u64], i: usize) {
        let last_at = self.coords.len().checked_sub(self.rank);
        // Word by word for the ranks of appends: a call to memcpy, an extend by an iterator
        // or a slice comparison costs more than these few words.
        match (scaled, self.hi.as_mut_slice()) {
            (&[s0], [h0]) => {
                if !self.out_of_order
                    && let Some(&[l0]) = last_at.and_then(|at| self.coords.get(at..))
                    && s0 <= l0
                {
                    self.out_of_order = true;
                }
                self.coords.push(s0);
                *h0 = (*h0).max(s0.saturating_add(1));
            }
            (&[s0, s1], [h0, h1]) => {
                if !self.out_of_order
                    && let Some(&[l0, l1]) = last_at.and_then(|at| self.coords.get(at..))
                    && (s0, s1) <= (l0, l1)
                {
                    self.out_of_order = true;
                }
                self.coords.push(s0);
                self.coords.push(s1);
                *h0 = (*h0).max(s0.saturating_add(1));
                *h1 = (*h1).max(s1.saturating_add(1));
            }
            (_, hi) => {
                if !self.out_of_order
                    && let Some(last) = last_at.and_then(|at| self.coords.get(at..))
                    && scaled <= last
                {
                    self.out_of_order = true;
                }
                self.coords.extend_from_slice(scaled);
                for (h, &s) in hi.iter_mut().zip(scaled) {
                    *h = (*h).max(s.saturating_add(1));
                }
            }
        }
        if let Some(map) = &mut self.map {
            map.insert(Coords::from_slice(scaled), i);
        }
    }

    /// Whether [`position_shared`](Self::position_shared) can answer: nothing is held, the
    /// chunks came in order, or the map from coordinates to positions is built.
    pub fn shared_ready(&self) -> bool {
        self.is_empty() || !self.out_of_order || self.map.is_some()
    }

    /// [`position`](Self::position) without building the map (`None` also when it is not
    /// built: ask [`shared_ready`](Self::shared_ready) first).
    pub fn position_shared(&self, scaled: &[u64]) -> Option<usize> {
        if !self.in_box(scaled) {
            return None;
        }
        if !self.out_of_order {
            return self.position_in_order(scaled);
        }
        self.map.as_ref()?.get(scaled).copied()
    }

    /// The bytes of chunk `i`.
    pub fn chunk(&self, i: usize) -> Option<&[u8]> {
        let at = i.checked_mul(self.chunk_bytes)?;
        self.bytes.get(at..at.checked_add(self.chunk_bytes)?)
    }

    /// The bytes of chunk `i`, to change.
    pub fn chunk_mut(&mut self, i: usize) -> Option<&mut [u8]> {
        let at = i.checked_mul(self.chunk_bytes)?;
        self.bytes.get_mut(at..at.checked_add(self.chunk_bytes)?)
    }

    /// Add the chunk at `scaled` (not held: see [`position`](Self::position)), zeroed; its
    /// bytes, for the caller to fill whole.
    pub fn push(&mut self, scaled: &[u64]) -> Option<&mut [u8]> {
        if scaled.len() != self.rank {
            return None;
        }
        let i = self.len();
        let at = self.bytes.len();
        let end = at.checked_add(self.chunk_bytes)?;
        self.bytes.resize(end, 0);
        self.record(scaled, i);
        self.bytes.get_mut(at..end)
    }

    /// Add the chunk at `scaled` (not held) with bytes `data` (exactly one chunk long);
    /// whether it was added.
    #[inline]
    pub fn push_copy(&mut self, scaled: &[u64], data: &[u8]) -> bool {
        if scaled.len() != self.rank || data.len() != self.chunk_bytes {
            return false;
        }
        let i = self.len();
        // Element by element for the tiny chunks of appends: a call to memcpy costs more than
        // copying a few bytes.
        if data.len() <= 16 {
            self.bytes.extend(data.iter().copied());
        } else {
            self.bytes.extend_from_slice(data);
        }
        self.record(scaled, i);
        true
    }

    /// Add the chunk at `scaled` (not held) from its rows, appended one after the other with
    /// no zeroing first: `Some(true)` when they made exactly one chunk, `Some(false)` when a
    /// row was missing or they made another length (nothing is added), `None` for a wrong rank.
    pub fn push_rows<'d>(
        &mut self,
        scaled: &[u64],
        rows: impl Iterator<Item = Option<&'d [u8]>>,
    ) -> Option<bool> {
        if scaled.len() != self.rank {
            return None;
        }
        let at = self.bytes.len();
        for row in rows {
            match row {
                Some(r) => self.bytes.extend_from_slice(r),
                None => {
                    self.bytes.truncate(at);
                    return Some(false);
                }
            }
        }
        if self.bytes.len().checked_sub(at) != Some(self.chunk_bytes) {
            self.bytes.truncate(at);
            return Some(false);
        }
        let i = at.checked_div(self.chunk_bytes).unwrap_or(0);
        self.record(scaled, i);
        Some(true)
    }

    /// Add the chunk at `scaled` (not held) from a strided source: its rows are `rows.len`
    /// bytes each, the first at `base` in `src`, the others where `rows` steps to (the chunk's
    /// outer dimensions, row-major). Whether the rows made exactly one chunk (nothing is added
    /// otherwise).
    pub fn push_strided(
        &mut self,
        scaled: &[u64],
        src: &[u8],
        base: usize,
        rows: &Rows<'_>,
    ) -> bool {
        if scaled.len() != self.rank {
            return false;
        }
        let at = self.bytes.len();
        self.bytes.reserve(self.chunk_bytes);
        let copied = self.copy_rows(src, base, rows);
        if !copied || self.bytes.len().checked_sub(at) != Some(self.chunk_bytes) {
            self.bytes.truncate(at);
            return false;
        }
        let i = at.checked_div(self.chunk_bytes).unwrap_or(0);
        self.record(scaled, i);
        true
    }

    /// Add the box of chunks (none of them held) whose first chunk is at `first`, `n` chunks
    /// along each dimension, in row-major order, from a strided source: chunk `at` (counted
    /// from the box's first) has its first row at
    /// `Σ at[u] × step[u]` in `src`, its other rows where `rows` steps to. Whether every row
    /// was there (nothing is added otherwise).
    ///
    /// Space and coordinates are reserved once for the whole box, and the order, the box of
    /// held coordinates and the map are updated once for it: chunks stepped in row-major
    /// order over a box increase strictly, so only the box's first chunk is compared with
    /// the last one held.
    pub fn push_box(
        &mut self,
        first: &[u64],
        n: &[u64],
        src: &[u8],
        rows: &Rows<'_>,
        step: &[usize],
    ) -> bool {
        let rank = self.rank;
        if first.len() != rank || n.len() != rank || step.len() != rank || n.contains(&0) {
            return false;
        }
        let Some(chunks) = n
            .iter()
            .try_fold(1usize, |t, &x| t.checked_mul(usize::try_from(x).ok()?))
        else {
            return false;
        };
        let (Some(total), Some(ncoords)) = (
            chunks.checked_mul(self.chunk_bytes),
            chunks.checked_mul(rank),
        ) else {
            return false;
        };
        let (b0, c0) = (self.bytes.len(), self.coords.len());
        self.bytes.reserve(total);
        self.coords.reserve(ncoords);
        let copied = match (first, n, rows.outer, rows.pitch, step) {
            // One row per chunk, the chunks back to back: the slab is the chunks' bytes.
            (_, _, [], _, _) if rank == 1 && step == [rows.len] => match src.get(..total) {
                Some(all) => {
                    // One chunk of one byte (the chunk-index benchmark's appends): pushed,
                    // with no copy call and no range to extend by.
                    match all {
                        [b] => self.bytes.push(*b),
                        _ => self.bytes.extend_from_slice(all),
                    }
                    match (first, n) {
                        (&[f0], &[1]) => self.coords.push(f0),
                        (&[f0], &[n0]) => {
                            self.coords.extend((0..n0).map(|a| f0.saturating_add(a)));
                        }
                        _ => {}
                    }
                    true
                }
                None => false,
            },
            (&[f0, f1], &[n0, n1], &[_], &[pitch], &[s0, s1]) if s1 == rows.len => {
                let geom = (rows.len, pitch, s0);
                // The short rows of small chunks as fixed-size copies, inlined: a call to
                // `memcpy` per row costs more than the copy.
                match rows.len {
                    8 => self.push_box_2d::<8>([f0, f1], [n0, n1], src, geom),
                    16 => self.push_box_2d::<16>([f0, f1], [n0, n1], src, geom),
                    32 => self.push_box_2d::<32>([f0, f1], [n0, n1], src, geom),
                    64 => self.push_box_2d::<64>([f0, f1], [n0, n1], src, geom),
                    _ => self.push_box_2d::<0>([f0, f1], [n0, n1], src, geom),
                }
            }
            _ => self.push_box_any(first, n, src, rows, step),
        };
        if !copied || self.bytes.len().checked_sub(b0) != Some(total) {
            self.bytes.truncate(b0);
            self.coords.truncate(c0);
            return false;
        }
        if !self.out_of_order
            && let Some(last) = c0.checked_sub(rank).and_then(|at| self.coords.get(at..c0))
            && self.coords.get(c0..).is_none_or(|new| new <= last)
        {
            self.out_of_order = true;
        }
        for ((h, &f0), &x) in self.hi.iter_mut().zip(first).zip(n) {
            *h = (*h).max(f0.saturating_add(x));
        }
        if let Some(map) = &mut self.map {
            let first_i = c0.checked_div(rank).unwrap_or(0);
            let added = self.coords.get(c0..).unwrap_or_default();
            for (j, s) in added.chunks_exact(rank.max(1)).enumerate() {
                map.insert(Coords::from_slice(s), first_i.saturating_add(j));
            }
        }
        true
    }

    /// [`push_box`](Self::push_box) of 2-D chunks (the rows of a chunk `pitch` bytes apart,
    /// the chunks of one row of chunks `len` bytes apart, the rows of chunks `s0` bytes
    /// apart), chunk by chunk and row by row: the bytes and coordinates, nothing else. `N`:
    /// the rows' length when it is known at compile time (it is then `len`), else 0.
    #[inline(always)]
    fn push_box_2d<const N: usize>(
        &mut self,
        [f0, f1]: [u64; 2],
        [n0, n1]: [u64; 2],
        src: &[u8],
        (len, pitch, s0): (usize, usize, usize),
    ) -> bool {
        if pitch == 0 || s0 == 0 {
            return false;
        }
        let mut blocks = src.chunks_exact(s0);
        for a0 in 0..n0 {
            let Some(block) = blocks.next() else {
                return false;
            };
            let mut col = 0usize;
            for a1 in 0..n1 {
                let end = col.saturating_add(len);
                for row in block.chunks_exact(pitch) {
                    let r = if N == 0 {
                        row.get(col..end)
                    } else {
                        (row.get(col..))
                            .and_then(|r| r.first_chunk::<N>())
                            .map(|r| r.as_slice())
                    };
                    match r {
                        // Rows of one byte (the chunk-index benchmark's chunks): pushed, with
                        // no copy call.
                        Some([b]) => self.bytes.push(*b),
                        Some(r) => self.bytes.extend_from_slice(r),
                        None => return false,
                    }
                }
                col = end;
                self.coords.push(f0.saturating_add(a0));
                self.coords.push(f1.saturating_add(a1));
            }
        }
        true
    }

    /// [`push_box`](Self::push_box) of chunks of any rank: the bytes and coordinates.
    fn push_box_any(
        &mut self,
        first: &[u64],
        n: &[u64],
        src: &[u8],
        rows: &Rows<'_>,
        step: &[usize],
    ) -> bool {
        let mut at_b = [0u64; 8];
        let Some(at) = at_b.get_mut(..first.len()) else {
            return false;
        };
        loop {
            let base = (at.iter().zip(step)).fold(0usize, |b, (&a, &s)| {
                b.saturating_add((a as usize).saturating_mul(s))
            });
            if !self.copy_rows(src, base, rows) {
                return false;
            }
            for (&f0, &a) in first.iter().zip(at.iter()) {
                self.coords.push(f0.saturating_add(a));
            }
            if !super::grid::step_row_major(at, n) {
                return true;
            }
        }
    }

    /// Append one chunk's rows from a strided source (see [`push_strided`](Self::push_strided));
    /// whether every row was there (the rows already appended stay: the caller truncates).
    #[inline]
    fn copy_rows(&mut self, src: &[u8], base: usize, rows: &Rows<'_>) -> bool {
        match (rows.outer, rows.pitch) {
            ([], _) => self.copy_row(src, base, rows.len),
            (&[n], &[pitch]) => {
                let mut from = base;
                (0..n).all(|_| {
                    let ok = self.copy_row(src, from, rows.len);
                    from = from.saturating_add(pitch);
                    ok
                })
            }
            _ => {
                let mut o = [0u64; 8];
                match o.get_mut(..rows.outer.len()) {
                    Some(o) => loop {
                        let from = (o.iter().zip(rows.pitch)).fold(base, |f, (&i, &p)| {
                            f.saturating_add((i as usize).saturating_mul(p))
                        });
                        if !self.copy_row(src, from, rows.len) {
                            break false;
                        }
                        if !super::grid::step_row_major(o, rows.outer) {
                            break true;
                        }
                    },
                    None => false,
                }
            }
        }
    }

    /// Append `len` bytes of `src` from `from`; whether they were there.
    #[inline]
    fn copy_row(&mut self, src: &[u8], from: usize, len: usize) -> bool {
        match src.get(from..from.saturating_add(len)) {
            Some(r) => {
                self.bytes.extend_from_slice(r);
                true
            }
            None => false,
        }
    }

    /// The chunks' bytes, back to back.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Each chunk's coordinates, in order.
    pub fn coords(&self) -> std::slice::ChunksExact<'_, u64> {
        self.coords.chunks_exact(self.rank.max(1))
    }

    /// Each chunk's coordinates and bytes, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u64], &[u8])> {
        self.coords()
            .enumerate()
            .filter_map(|(i, s)| Some((s, self.chunk(i)?)))
    }

    /// One past the largest coordinate held, per dimension.
    pub fn hi(&self) -> &[u64] {
        &self.hi
    }

    /// Forget every chunk (they are written and recorded); the buffers keep their capacity for
    /// the next ones.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.coords.clear();
        self.hi.iter_mut().for_each(|h| *h = 0);
        self.out_of_order = false;
        self.map = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_chunks_in_and_out_of_the_box() {
        let mut f = Fresh::new(2, 3);
        assert_eq!(f.position(&[0, 0]), None);
        f.push(&[0, 0]).unwrap().copy_from_slice(&[1, 2, 3]);
        f.push(&[0, 1]).unwrap().copy_from_slice(&[4, 5, 6]);
        // Past the box: answered without the map.
        assert_eq!(f.position(&[1, 0]), None);
        assert!(f.map.is_none());
        assert_eq!(f.position(&[0, 1]), Some(1));
        assert!(f.map.is_none(), "in order: found without the map");
        // The map follows later pushes.
        f.push(&[1, 1]).unwrap().copy_from_slice(&[7, 8, 9]);
        assert_eq!(f.position(&[1, 1]), Some(2));
        assert_eq!(f.position(&[1, 0]), None);
        assert_eq!(f.chunk(2), Some(&[7u8, 8, 9][..]));
        assert_eq!(f.bytes(), &[1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(
            f.coords().collect::<Vec<_>>(),
            vec![&[0, 0], &[0, 1], &[1, 1]]
        );
        assert_eq!(f.hi(), &[2, 2]);
        assert_eq!(f.iter().nth(1), Some((&[0u64, 1][..], &[4u8, 5, 6][..])));
        assert_eq!(f.push(&[3]), None, "wrong rank");
        assert!(!f.push_copy(&[2, 2], &[1, 2]), "wrong length");
        assert!(f.push_copy(&[2, 2], &[1, 2, 3]));
        assert_eq!(f.position(&[2, 2]), Some(3));
        f.clear();
        assert!(f.is_empty());
        assert_eq!(f.position(&[0, 0]), None);
    }

    #[test]
    fn a_chunk_pushed_from_its_rows() {
        let mut f = Fresh::new(2, 4);
        let rows: [&[u8]; 2] = [&[1, 2], &[3, 4]];
        assert_eq!(
            f.push_rows(&[0, 0], rows.iter().map(|r| Some(*r))),
            Some(true)
        );
        assert_eq!(f.position(&[0, 0]), Some(0));
        assert_eq!(f.chunk(0), Some(&[1u8, 2, 3, 4][..]));
        // A missing row, or rows that make another length: nothing is added.
        assert_eq!(
            f.push_rows(&[0, 1], [Some(&[5u8, 6][..]), None].into_iter()),
            Some(false)
        );
        assert_eq!(
            f.push_rows(&[0, 1], [Some(&[5u8, 6, 7][..])].into_iter()),
            Some(false)
        );
        assert_eq!(f.len(), 1);
        assert_eq!(f.bytes(), &[1, 2, 3, 4]);
        assert_eq!(f.position(&[0, 1]), None);
        assert_eq!(f.push_rows(&[1], std::iter::empty()), None, "wrong rank");
    }

    #[test]
    fn a_box_of_chunks_pushed_at_once() {
        // A 2 x 4 slab of 1-byte elements, two 2 x 2 chunks side by side.
        let src = [1u8, 2, 3, 4, 5, 6, 7, 8];
        let rows = Rows {
            pitch: &[4],
            outer: &[2],
            len: 2,
        };
        let mut f = Fresh::new(2, 4);
        assert!(f.push_box(&[0, 0], &[1, 2], &src, &rows, &[8, 2]));
        assert_eq!(f.bytes(), &[1, 2, 5, 6, 3, 4, 7, 8]);
        assert_eq!(f.coords().collect::<Vec<_>>(), vec![&[0, 0], &[0, 1]]);
        assert_eq!(f.hi(), &[1, 2]);
        assert!(f.shared_ready() && !f.out_of_order);
        assert_eq!(f.position(&[0, 1]), Some(1));
        // A short source: nothing is added.
        assert!(!f.push_box(&[1, 0], &[1, 2], &src[..7], &rows, &[8, 2]));
        assert_eq!(f.len(), 2);
        assert_eq!(f.hi(), &[1, 2]);
        assert!(f.push_box(&[1, 0], &[1, 2], &src, &rows, &[8, 2]));
        assert!(!f.out_of_order);
        assert_eq!(f.position(&[1, 1]), Some(3));
        assert_eq!(f.chunk(3), Some(&[3u8, 4, 7, 8][..]));
        // A box before the last chunk: out of order, found through the map, which follows
        // later boxes.
        assert!(f.push_box(&[0, 2], &[1, 1], &src, &rows, &[8, 2]));
        assert!(f.out_of_order);
        assert_eq!(f.position(&[0, 2]), Some(4));
        assert_eq!(f.chunk(4), Some(&[1u8, 2, 5, 6][..]));
        assert!(f.push_box(&[2, 0], &[1, 2], &src, &rows, &[8, 2]));
        assert_eq!(f.position(&[2, 1]), Some(6));
        // One chunk whose rows lie back to back (a slab of exactly that chunk) goes in whole;
        // a source shorter than the chunk adds nothing.
        let whole = Rows {
            pitch: &[2],
            outer: &[2],
            len: 2,
        };
        assert!(!f.push_box(&[2, 2], &[1, 1], &src[..3], &whole, &[4, 2]));
        assert_eq!(f.len(), 7);
        assert!(f.push_box(&[2, 2], &[1, 1], &src[4..], &whole, &[4, 2]));
        assert_eq!(f.position(&[2, 2]), Some(7));
        assert_eq!(f.chunk(7), Some(&[5u8, 6, 7, 8][..]));
        assert_eq!(f.position(&[1, 0]), Some(2));
        assert_eq!(f.hi(), &[3, 3]);
        assert!(
            !f.push_box(&[3, 0], &[1, 0], &src, &rows, &[8, 2]),
            "empty box"
        );
        assert!(!f.push_box(&[2], &[1], &src, &rows, &[8]), "wrong rank");
    }

    #[test]
    fn a_box_of_chunks_with_rows_of_a_fixed_length() {
        // Rows of 8, 16, 32 and 64 bytes take the fixed-size copies, others the general one.
        for len in [8usize, 16, 24, 32, 64] {
            // Two rows of two chunks side by side.
            let src: Vec<u8> = (0..4 * len).map(|i| i as u8).collect();
            let rows = Rows {
                pitch: &[2 * len],
                outer: &[2],
                len,
            };
            let mut f = Fresh::new(2, 2 * len);
            assert!(f.push_box(&[0, 0], &[1, 2], &src, &rows, &[4 * len, len]));
            let mut want = Vec::new();
            for c in 0..2 {
                for r in 0..2 {
                    want.extend_from_slice(&src[r * 2 * len + c * len..][..len]);
                }
            }
            assert_eq!(f.bytes(), &want[..], "rows of {len} bytes");
            assert!(!f.push_box(&[1, 0], &[1, 2], &src[1..], &rows, &[4 * len, len]));
            assert_eq!(f.bytes(), &want[..], "rows of {len} bytes, short source");
        }
    }

    #[test]
    fn chunks_in_order_are_found_without_the_map() {
        // A row of two chunks per append, as a 2-D append along the first dimension.
        let mut f = Fresh::new(2, 1);
        for r in 0..5u64 {
            for c in 0..2u64 {
                assert_eq!(f.position(&[r, c]), None);
                assert!(f.push_copy(&[r, c], &[(r * 2 + c) as u8]));
            }
        }
        for r in 0..5u64 {
            for c in 0..2u64 {
                let i = (r * 2 + c) as usize;
                assert_eq!(f.position(&[r, c]), Some(i));
                assert_eq!(f.position_shared(&[r, c]), Some(i));
            }
        }
        assert_eq!(f.position(&[1, 2]), None);
        assert!(f.map.is_none(), "in order: no map");
        assert!(f.shared_ready());
        // Out of order: the map takes over, with every chunk.
        assert!(f.push_copy(&[0, 2], &[99]));
        assert!(!f.shared_ready());
        assert_eq!(f.position(&[0, 2]), Some(10));
        assert_eq!(f.position(&[4, 1]), Some(9));
        assert!(f.map.is_some());
        assert_eq!(f.position(&[3, 2]), None);
    }
}
