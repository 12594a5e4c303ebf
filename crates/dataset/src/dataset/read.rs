//! The read path: no lock held across storage I/O or a filter.
//!
//! A read takes the dataset's state shared, long enough to copy what the chunk cache and the
//! fresh chunks hold and to look up, in the index, where every other selected chunk is
//! stored. It then lets go, reads those chunks (straight into the caller's buffer when a
//! chunk lands there whole and unfiltered) and decodes them, on the file's filter pool when
//! there are several. Readers of one dataset therefore run side by side, and a writer waits
//! for lookups only, never for a reader's I/O.
//!
//! What makes this safe is the store's [epoch](crate::store::Store::epoch): it moves before
//! any raw-data byte of the file can change (a write, or a free whose space a later write may
//! reuse). A read whose epoch did not move between its lookups and the end of its I/O read
//! exactly the chunks its lookups found; otherwise it is done again holding the state alone,
//! as every read was before. Chunks loaded without the lock go into the chunk cache only if
//! no writer took the state in between (the dataset's version) and they evict no dirty chunk.

use std::borrow::Cow;
use std::sync::Arc;

use h5chunk_format::Addr;
use h5chunk_format::chunk_record::ChunkRecord;
use smallvec::SmallVec;

use super::chunked::Chunked;
use super::grid::{
    copy_from_contiguous, copy_out, copy_runs, grid_position, short_chunk, short_storage, zeroed,
};
use super::{Dataset, DatasetState, StorageState};
use crate::chunk_cache::Coords;
use crate::error::{Error, Result};
use crate::filters::{FilterError, Pipeline};
use crate::select::{Hyperslab, Run};
use crate::store::Store;
use crate::types::H5Type;

/// Byte runs of one chunk this close or closer are read as one (the bytes between them read
/// and dropped). 0: only runs that touch are joined, so a read moves exactly the selected
/// bytes (a 64×64 window of a 512×512 f32 chunk: 64 runs of 256 bytes, 16 KiB, not 1 MiB).
const RUN_MERGE_GAP: u64 = 0;

/// Runs of a chunk [`read_runs`] keeps without allocating.
const RUNS_INLINE: usize = 64;

/// Chunks decoded together on the pool: enough to keep every thread busy, few enough that a
/// read of a huge selection holds only a handful of decoded chunks beside its output.
const DECODE_WINDOW_PER_THREAD: usize = 2;

/// A chunk load under way: readers that want the same chunk meanwhile wait for its bytes
/// instead of loading it again.
#[derive(Debug)]
pub(crate) struct Flight {
    /// The store epoch the loader looked the chunk up at: a reader that looked it up at
    /// another moment may want other bytes, and loads for itself.
    epoch: u64,
    /// `None` until the loader is done; then the bytes, or `None` if its load failed.
    bytes: parking_lot::Mutex<Option<Option<Arc<Vec<u8>>>>>,
    done: parking_lot::Condvar,
}

impl Flight {
    fn publish(&self, bytes: Option<Arc<Vec<u8>>>) {
        *self.bytes.lock() = Some(bytes);
        self.done.notify_all();
    }

    fn wait(&self) -> Option<Arc<Vec<u8>>> {
        let mut g = self.bytes.lock();
        loop {
            if let Some(b) = &*g {
                return b.clone();
            }
            self.done.wait(&mut g);
        }
    }
}

/// Chunk loads under way, by chunk (one per dataset, shared by its readers).
pub(crate) type InFlight = parking_lot::Mutex<std::collections::HashMap<Coords, Arc<Flight>>>;

/// What a reader does about a chunk to load.
enum Role {
    /// Load it and hand its bytes to those who wait.
    Lead(Arc<Flight>),
    /// Wait for another reader's load.
    Wait(Arc<Flight>),
    /// Load it for itself (another load of it, from another moment, is under way).
    Alone,
}

/// A chunk a read fetches from the file, as its index records it.
#[derive(Debug)]
struct Fetch {
    scaled: Coords,
    addr: Addr,
    /// Bytes stored: the record's size when the pipeline decodes the chunk, else the chunk's.
    stored: u64,
    mask: u32,
    /// Whether the pipeline decodes it (a filtered dataset's partial edge chunk may skip it).
    decode: bool,
    /// The chunk is selected whole and lands, unfiltered, as one run of the output starting
    /// at this byte: read straight there.
    direct: Option<usize>,
    /// Unfiltered and selected in part: read only the byte runs the selection needs, past the
    /// chunk cache (see [`Chunked::reads_runs`]); or selected whole by a read that loads more
    /// than the chunk cache holds (see `passes_cache`).
    runs: bool,
    /// Read by runs only because its read passes the cache: a storage where each request is a
    /// round trip still fetches it whole, with the read's other chunks.
    passed: bool,
}

/// What a read learned under the shared lock.
struct Plan {
    fetches: Vec<Fetch>,
    pipeline: Option<Pipeline>,
    chunk: Vec<u64>,
    chunk_bytes: usize,
    elem: usize,
    path: String,
    header: Addr,
    epoch: u64,
    version: u64,
}

/// The byte offset in the output where the chunk at `scaled` lands whole as one run, if it
/// does (every element selected, in the chunk's own order, contiguous in the output).
fn whole_run(h: &Hyperslab, chunk: &[u64], scaled: &[u64], elem: usize) -> Option<usize> {
    let elems: u64 = chunk.iter().product();
    // (first output element, next chunk element, next output element)
    let mut run: Option<(u64, u64, u64)> = None;
    let mut contiguous = true;
    h.runs_while(chunk, scaled, |r| {
        let step_ok = r.len <= 1 || r.chunk_step == 1;
        run = match run {
            None if step_ok && r.chunk == 0 => {
                Some((r.memory, r.len, r.memory.saturating_add(r.len)))
            }
            Some((first, c, m)) if step_ok && r.chunk == c && r.memory == m => {
                Some((first, c.saturating_add(r.len), m.saturating_add(r.len)))
            }
            _ => {
                contiguous = false;
                None
            }
        };
        contiguous
    });
    match run {
        Some((first, n, _)) if contiguous && n == elems => {
            usize::try_from(first).ok()?.checked_mul(elem)
        }
        _ => None,
    }
}

/// Read (and decode) one fetched chunk: its unfiltered bytes.
fn load(f: &Store, x: &Fetch, plan: &Plan) -> Result<Vec<u8>> {
    match &plan.pipeline {
        Some(p) if x.decode => f.read_stored(
            x.addr,
            x.stored,
            |stored| p.decode(stored, x.mask, plan.chunk_bytes),
            |source| filter_error(plan, x, source),
        ),
        _ => f.read(x.addr, x.stored),
    }
}

/// A filter failed on chunk `x` of the planned read.
fn filter_error(plan: &Plan, x: &Fetch, source: FilterError) -> Error {
    Error::Filter {
        dataset: plan.path.clone(),
        chunk: x.scaled.to_vec(),
        source,
    }
}

impl Chunked {
    /// `f` on the cached chunk at `scaled`, if cached. The hit marks the chunk recent when
    /// the cache is free to take alone; when another thread holds it, the hit reads the chunk
    /// shared and leaves its recency as it was (readers never wait for each other here).
    fn cache_hit<R>(&self, scaled: &[u64], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        if !self.cache.read().contains(scaled) {
            return None;
        }
        if let Some(mut cache) = self.cache.try_write() {
            return cache.get_mut(scaled).map(|e| f(&e.data));
        }
        self.cache.read().peek(scaled).map(|e| f(&e.data))
    }

    /// The record of the chunk at `scaled` as a fetch, or `None` when it is not stored (fill).
    fn fetch(&self, f: &Store, scaled: &[u64]) -> Result<Option<Fetch>> {
        let Some(ChunkRecord {
            addr: Some(addr),
            size,
            mask,
        }) = self.recorded(f, scaled)?
        else {
            return Ok(None);
        };
        let decode = self.pipeline.is_some() && !self.skips_filters(scaled);
        Ok(Some(Fetch {
            scaled: Coords::from_slice(scaled),
            addr,
            stored: if decode { size } else { self.shape.chunk_bytes },
            mask,
            decode,
            direct: None,
            runs: false,
            passed: false,
        }))
    }

    /// Whether a read of the unfiltered chunk at `scaled`, not cached, reads only the byte
    /// runs `h` selects in it instead of loading it whole into the chunk cache. libhdf5's rule
    /// first: a chunk larger than the cache is read directly. Then a chunk of which less than
    /// half is selected is read in part too (loading it whole would move bytes nobody asked
    /// for and evict chunks that were used), unless this thread's previous miss in this cache
    /// was the same chunk: it walks the chunk, which is worth caching whole. Chunks of half a
    /// page or less are loaded whole: their page serves their neighbours. (A write that covers
    /// part of a stored chunk follows the same rule: see [`Chunked::write_runs`].)
    pub(crate) fn reads_runs(&self, h: &Hyperslab, scaled: &[u64], elem: usize) -> bool {
        let bytes = self.shape.chunk_bytes;
        if bytes <= (h5chunk_cache::PAGE_BYTES / 2) as u64 {
            return false;
        }
        let cache = self.cache.read();
        if bytes > cache.budget() as u64 {
            return true;
        }
        let selected = h
            .covered(&self.shape.chunk, scaled)
            .saturating_mul(elem as u64);
        selected.saturating_mul(2) < bytes && !cache.repeat_miss(scaled)
    }
}

/// A byte range of a chunk read by [`read_runs`]: one run, or runs [`RUN_MERGE_GAP`] apart or
/// closer joined.
struct RunRead {
    /// Its first byte in the chunk, and one past its last.
    from: u64,
    to: u64,
    /// Where its bytes land: a byte offset of the output when they land there as they are
    /// (its runs contiguous in the output too), else `None` (read into the scratch buffer at
    /// `base`, then copied).
    out: Option<usize>,
    base: usize,
}

impl RunRead {
    fn len(&self) -> usize {
        // At most a chunk long (checked before any read).
        usize::try_from(self.to.saturating_sub(self.from)).unwrap_or(usize::MAX)
    }
}

/// [`read_runs`] when every run of `h` in chunk `x` lands in `out` as it is in the chunk (an
/// unstrided selection: a window, or a chunk selected whole whose rows land apart): each run
/// read straight into its place (runs that follow on in the chunk and in `out` as one), in
/// one [`read_runs_at`](h5chunk_cache::Storage::read_runs_at), a file's vectored read, with no
/// scratch buffer and nothing copied. `false`, nothing read, when some run does not land so
/// (`read_runs` then reads by its general rules), or the read fails (it loads the chunk).
fn read_runs_in_place(f: &Store, plan: &Plan, h: &Hyperslab, x: &Fetch, out: &mut [u8]) -> bool {
    let elem = plan.elem as u64;
    let chunk_end = plan.chunk_bytes as u64;
    // A chunk selected whole has a run per row: room for them all at once.
    let rows = if x.passed {
        plan.chunk
            .split_last()
            .map_or(1, |(_, outer)| outer.iter().product::<u64>())
    } else {
        0
    };
    let mut land = Landing {
        requests: SmallVec::with_capacity(usize::try_from(rows).unwrap_or(0).min(1 << 16)),
        rest: out,
        consumed: 0,
        addr: x.addr.get(),
    };
    // The run being gathered: its first byte in the chunk, in `out`, and its length.
    let mut pending: Option<(u64, usize, usize)> = None;
    let mut ok = elem > 0;
    h.runs_while(&plan.chunk, &x.scaled, |r| {
        let as_is = r.chunk_step == 1 || r.len <= 1;
        let run = r
            .len
            .checked_mul(elem)
            .zip(r.chunk.checked_mul(elem))
            .zip(r.memory.checked_mul(elem))
            .filter(|((len, from), _)| {
                as_is && from.checked_add(*len).is_some_and(|e| e <= chunk_end)
            })
            .and_then(|((len, from), m)| {
                Some((from, usize::try_from(m).ok()?, usize::try_from(len).ok()?))
            });
        let Some((from, at, len)) = run else {
            ok = false;
            return false;
        };
        pending = match pending {
            // Follows on in the chunk and in `out`: one run.
            Some((pf, pa, pl))
                if pf.checked_add(pl as u64) == Some(from) && pa.checked_add(pl) == Some(at) =>
            {
                Some((pf, pa, pl.saturating_add(len)))
            }
            Some(p) => {
                ok = land.push(p);
                Some((from, at, len))
            }
            None => Some((from, at, len)),
        };
        ok
    });
    if let Some(p) = pending.filter(|_| ok) {
        ok = land.push(p);
    }
    ok && f.storage.read_runs_at(&mut land.requests).is_ok()
}

/// The places in the output of the runs [`read_runs_in_place`] reads, taken in increasing
/// order.
struct Landing<'a> {
    requests: SmallVec<[(Addr, &'a mut [u8]); RUNS_INLINE]>,
    /// The output past the last place taken, which starts at byte `consumed` of it.
    rest: &'a mut [u8],
    consumed: usize,
    /// The chunk's address.
    addr: u64,
}

impl Landing<'_> {
    /// Take the `len` bytes at `at` in the output for the run at byte `from` of the chunk:
    /// `false` when they lie before a place taken already, or past the output.
    fn push(&mut self, (from, at, len): (u64, usize, usize)) -> bool {
        let dst = at
            .checked_sub(self.consumed)
            .and_then(|skip| std::mem::take(&mut self.rest).split_at_mut_checked(skip))
            .and_then(|(_, tail)| tail.split_at_mut_checked(len));
        match (dst, self.addr.checked_add(from)) {
            (Some((dst, tail)), Some(addr)) => {
                self.rest = tail;
                self.consumed = at.saturating_add(len);
                self.requests.push((Addr(addr), dst));
                true
            }
            _ => false,
        }
    }
}

/// Read the byte runs of unfiltered chunk `x` that `h` selects in one
/// [`read_runs_at`](h5chunk_cache::Storage::read_runs_at): straight into `out` where a run
/// lands there as it is in the chunk, else through a buffer of the runs' size. When the runs
/// cannot be read that way (the chunk runs past the file's end: unwritten space reads as
/// zeros; a failed read) the chunk is loaded whole, uncached, so what happens then is what the
/// whole-chunk path does.
fn read_runs(f: &Store, plan: &Plan, h: &Hyperslab, x: &Fetch, out: &mut [u8]) -> Result<()> {
    if read_runs_in_place(f, plan, h, x, out) {
        return Ok(());
    }
    let elem = plan.elem as u64;
    let short = || short_chunk(&plan.path, plan.header, &x.scaled);
    // Inline up to a 64-row window's worth: no allocation per chunk for common reads.
    let mut runs: SmallVec<[(Run, usize); RUNS_INLINE]> = SmallVec::new();
    let mut reads: SmallVec<[RunRead; RUNS_INLINE]> = SmallVec::new();
    let mut fits = elem > 0;
    h.runs(&plan.chunk, &x.scaled, |r| {
        // From the run's first element to the end of its last, in bytes; where it lands.
        let span = r
            .len
            .checked_sub(1)
            .and_then(|k| k.checked_mul(r.chunk_step))
            .and_then(|k| k.checked_add(r.chunk))
            .and_then(|last| last.checked_add(1))
            .and_then(|end| end.checked_mul(elem))
            .zip(r.chunk.checked_mul(elem))
            .zip(
                r.memory
                    .checked_mul(elem)
                    .and_then(|m| usize::try_from(m).ok()),
            );
        let Some(((end, start), memory)) = span.filter(|_| fits) else {
            fits = false;
            return;
        };
        let as_is = r.chunk_step == 1 || r.len <= 1;
        // A run that lands as it is, right after a read that lands as it is, elsewhere in
        // `out` (the next row of a chunk selected whole): a read of its own, straight into
        // place. Runs back to back in the file are still read together (a file reads them
        // with one vectored read), with no scratch buffer and no copy.
        let apart = |g: &RunRead| as_is && g.out.is_some() && start == g.to;
        match reads.last_mut() {
            Some(g)
                if start >= g.from
                    && start <= g.to.saturating_add(RUN_MERGE_GAP)
                    && !(apart(g)
                        && g.out.and_then(|o| o.checked_add(g.len())) != Some(memory)) =>
            {
                // Still landing as it is: the run follows on in the chunk and in `out`.
                let follows = g
                    .out
                    .is_some_and(|o| start == g.to && o.checked_add(g.len()) == Some(memory));
                if !(as_is && follows) {
                    g.out = None;
                }
                g.to = g.to.max(end);
            }
            _ => reads.push(RunRead {
                from: start,
                to: end,
                out: as_is.then_some(memory),
                base: 0,
            }),
        }
        runs.push((r, reads.len().saturating_sub(1)));
    });
    // Reads into `out` in increasing order (so `out` splits between them); the rest into the
    // scratch buffer, one after the other.
    let (mut scratch_len, mut out_end) = (0usize, 0usize);
    for g in &mut reads {
        match g.out {
            Some(o) if o >= out_end => out_end = o.saturating_add(g.len()),
            _ => {
                g.out = None;
                g.base = scratch_len;
                scratch_len = scratch_len.saturating_add(g.len());
            }
        }
    }
    let chunk_end = plan.chunk_bytes as u64;
    // The scratch buffer is sized before any byte is read: at most a chunk (whose size comes
    // from the file), and at most twice the output (a sparse stride reads the chunk whole,
    // through `load`, which checks the chunk against the file before sizing a buffer).
    let scratch_most = plan
        .chunk_bytes
        .min(out.len().saturating_mul(2).max(1 << 16));
    fits = fits && reads.iter().all(|g| g.to <= chunk_end) && scratch_len <= scratch_most;
    let mut scratch = Vec::new();
    let read = fits && {
        scratch.resize(scratch_len, 0u8);
        let mut requests: SmallVec<[(Addr, &mut [u8]); RUNS_INLINE]> =
            SmallVec::with_capacity(reads.len());
        let (mut rest, mut consumed): (&mut [u8], usize) = (&mut *out, 0);
        let mut spare: &mut [u8] = &mut scratch;
        let mut ok = true;
        for g in &reads {
            let dst = match g.out {
                Some(o) => o
                    .checked_sub(consumed)
                    .and_then(|skip| std::mem::take(&mut rest).split_at_mut_checked(skip))
                    .and_then(|(_, tail)| tail.split_at_mut_checked(g.len()))
                    .map(|(dst, tail)| {
                        rest = tail;
                        consumed = o.saturating_add(g.len());
                        dst
                    }),
                None => std::mem::take(&mut spare)
                    .split_at_mut_checked(g.len())
                    .map(|(dst, tail)| {
                        spare = tail;
                        dst
                    }),
            };
            match (dst, x.addr.get().checked_add(g.from)) {
                (Some(dst), Some(at)) => requests.push((Addr(at), dst)),
                _ => {
                    ok = false;
                    break;
                }
            }
        }
        ok && f.storage.read_runs_at(&mut requests).is_ok()
    };
    if !read {
        let data = load(f, x, plan)?;
        return if copy_runs(h, &plan.chunk, &x.scaled, |r| {
            copy_out(out, &data, r, plan.elem)
        }) {
            Ok(())
        } else {
            Err(short())
        };
    }
    for (r, g) in runs {
        let g = reads.get(g).ok_or_else(short)?;
        if g.out.is_some() {
            continue;
        }
        // The run's first element in `scratch`: every offset is a whole number of elements.
        let at = r
            .chunk
            .checked_mul(elem)
            .and_then(|b| b.checked_sub(g.from))
            .and_then(|b| b.checked_add(g.base as u64))
            .and_then(|b| b.checked_div(elem))
            .ok_or_else(short)?;
        copy_out(out, &scratch, Run { chunk: at, ..r }, plan.elem).ok_or_else(short)?;
    }
    Ok(())
}

/// A read that would load more unfiltered chunks whole than the chunk cache holds (a bulk
/// read: a whole dataset, a large block) gains nothing from caching them, each evicting the
/// one before: it reads them by runs instead, straight into the output, past the cache (a
/// chunk selected whole, whose rows land apart in the output, with one vectored read), as
/// libhdf5 reads a chunk that does not fit its cache. Filtered chunks keep the cache.
fn passes_cache(fetches: &mut [Fetch], budget: usize) {
    let loads_whole = |x: &Fetch| x.direct.is_none() && !x.runs && !x.decode;
    let whole = fetches
        .iter()
        .filter(|x| loads_whole(x))
        .fold(0u64, |n, x| n.saturating_add(x.stored));
    if whole <= budget as u64 {
        return;
    }
    for x in fetches.iter_mut().filter(|x| loads_whole(x)) {
        x.runs = true;
        x.passed = true;
    }
}

impl Dataset {
    /// Fill `out` (exactly the selection's bytes, in the file's byte order) from `h`.
    pub(super) fn read_selection_into(&self, h: &Hyperslab, out: &mut [u8]) -> Result<()> {
        let f = &self.file.inner.store;
        let plan = {
            let st = self.shared.state.read();
            let (epoch, version) = (f.epoch(), self.shared.version());
            let elem = st.dtype.size;
            if let StorageState::Virtual(v) = &st.storage {
                // Sources are read without this dataset's lock.
                let v = Arc::clone(v);
                drop(st);
                return v.read(&self.file, h, out);
            }
            let StorageState::Chunked(c) = &st.storage else {
                return read_unchunked(&st, &self.shared.dims.read().0, h, out, f);
            };
            if !c.fresh.shared_ready() {
                // Fresh chunks not mapped yet: mapping them changes the state.
                drop(st);
                return self.read_selection_exclusive(h, out);
            }
            let chunk = c.shape.chunk.clone();
            let chunk_elems = c.chunk_elems();
            let chunk_bytes = usize::try_from(c.shape.chunk_bytes)
                .map_err(|_| Error::Unsupported("chunks larger than memory"))?;
            let mut fetches = Vec::new();
            let mut fill: Option<Vec<u8>> = None;
            let (path, header) = (&st.path, st.header);
            h.try_for_each_chunk(&chunk, |scaled| {
                let copied = c.cache_hit(scaled, |data| {
                    copy_runs(h, &chunk, scaled, |r| copy_out(out, data, r, elem))
                });
                let fits = match copied {
                    Some(fits) => fits,
                    None => match c
                        .fresh
                        .position_shared(scaled)
                        .and_then(|i| c.fresh.chunk(i))
                    {
                        Some(data) => {
                            copy_runs(h, &chunk, scaled, |r| copy_out(out, data, r, elem))
                        }
                        None => match c.fetch(f, scaled)? {
                            Some(mut x) => {
                                // Only a chunk selected whole can land whole.
                                x.direct = (h.covered(&chunk, scaled) == chunk_elems)
                                    .then(|| whole_run(h, &chunk, scaled, elem))
                                    .flatten();
                                x.runs = x.direct.is_none()
                                    && !x.decode
                                    && c.reads_runs(h, scaled, elem);
                                fetches.push(x);
                                true
                            }
                            None => {
                                let data = match &mut fill {
                                    Some(data) => data,
                                    empty => empty.insert(c.fill_chunk(path)?),
                                };
                                copy_runs(h, &chunk, scaled, |r| copy_out(out, data, r, elem))
                            }
                        },
                    },
                };
                if fits {
                    Ok(())
                } else {
                    Err(short_chunk(path, header, scaled))
                }
            })?;
            passes_cache(&mut fetches, c.cache.read().budget());
            Plan {
                fetches,
                pipeline: c.pipeline.clone(),
                chunk,
                chunk_bytes,
                elem,
                path: st.path.clone(),
                header: st.header,
                epoch,
                version,
            }
        };
        if plan.fetches.is_empty() {
            return Ok(());
        }
        let loaded = self.run_fetches(f, &plan, h, out);
        if f.epoch() != plan.epoch {
            // A write or free ran meanwhile: what was read may not be what the lookups found
            // (a failure to decode it included).
            return self.read_selection_exclusive(h, out);
        }
        self.keep_loaded(f, &plan, loaded?);
        Ok(())
    }

    /// Read the planned chunks into `out`, decoding on the pool; the chunks loaded whole that
    /// the chunk cache may keep (at most one window of them).
    fn run_fetches(
        &self,
        f: &Store,
        plan: &Plan,
        h: &Hyperslab,
        out: &mut [u8],
    ) -> Result<Vec<(Coords, Vec<u8>)>> {
        let (runs, whole): (Vec<&Fetch>, Vec<&Fetch>) = plan.fetches.iter().partition(|x| x.runs);
        let passed = runs.iter().filter(|x| x.passed).count();
        if whole.len().saturating_add(passed) > 1 {
            // A storage where each request is a round trip (an object store) fetches the
            // selection's whole chunks together; a failure shows in the reads that follow.
            let ranges: Vec<(Addr, u64)> = (plan.fetches.iter())
                .filter(|x| !x.runs || x.passed)
                .map(|x| (x.addr, x.stored))
                .collect();
            let _ = f.storage.prefetch(&ranges);
        }
        // Chunks read in part: only their selected bytes, and never cached.
        for x in runs {
            read_runs(f, plan, h, x, out)?;
        }
        let (direct, other): (Vec<&Fetch>, Vec<&Fetch>) =
            whole.into_iter().partition(|x| x.direct.is_some());
        let (mut decoded, read): (Vec<&Fetch>, Vec<&Fetch>) =
            direct.into_iter().partition(|x| x.decode);
        for x in read {
            let at = x.direct.unwrap_or(0);
            let dst = at
                .checked_add(plan.chunk_bytes)
                .and_then(|end| out.get_mut(at..end))
                .ok_or_else(|| short_chunk(&plan.path, plan.header, &x.scaled))?;
            f.read_into(x.addr, dst)?;
        }
        if !decoded.is_empty() {
            // Filtered chunks that land whole decode straight into their place in `out`, on
            // the pool: the places are disjoint, so `out` is split between them.
            decoded.sort_by_key(|x| x.direct);
            let mut targets: Vec<(&Fetch, &mut [u8])> = Vec::with_capacity(decoded.len());
            let mut rest: &mut [u8] = out;
            let mut base = 0usize;
            for x in decoded {
                let at = x.direct.unwrap_or(0);
                let short = || short_chunk(&plan.path, plan.header, &x.scaled);
                let (_, tail) = rest
                    .split_at_mut_checked(at.checked_sub(base).ok_or_else(short)?)
                    .ok_or_else(short)?;
                let (dst, tail) = tail
                    .split_at_mut_checked(plan.chunk_bytes)
                    .ok_or_else(short)?;
                targets.push((x, dst));
                rest = tail;
                base = at.saturating_add(plan.chunk_bytes);
            }
            let decode_into = |(x, dst): &mut (&Fetch, &mut [u8])| -> Result<()> {
                match &plan.pipeline {
                    Some(p) if p.decodes_slices() => f.read_stored_slice(
                        x.addr,
                        x.stored,
                        |stored| p.decode_slice_into(stored, x.mask, dst),
                        |source| filter_error(plan, x, source),
                    ),
                    Some(p) => f.read_stored(
                        x.addr,
                        x.stored,
                        |stored| p.decode_into(stored, x.mask, dst),
                        |source| filter_error(plan, x, source),
                    ),
                    None => {
                        dst.copy_from_slice(&f.read(x.addr, x.stored)?);
                        Ok(())
                    }
                }
            };
            match (targets.len() > 1).then(|| f.pool()).flatten() {
                Some(p) => p.install(|| {
                    use rayon::prelude::*;
                    targets.par_iter_mut().try_for_each(decode_into)
                })?,
                None => targets.iter_mut().try_for_each(decode_into)?,
            }
        }
        // Each chunk is loaded once however many readers want it at once: this read loads
        // the chunks no one is loading (handing their bytes to those who wait), then waits for
        // the others. It waits only once its own loads are handed over, and pool threads never
        // wait, so two readers never wait for each other.
        let roles: Vec<Role> = other.iter().map(|x| self.role(x, plan)).collect();
        // Asked only with decoding to share: the pool's threads start on first use.
        let pool = (other.iter().filter(|x| x.decode).count() > 1)
            .then(|| f.pool())
            .flatten();
        let window = pool.map_or(1, |p| {
            p.current_num_threads()
                .saturating_mul(DECODE_WINDOW_PER_THREAD)
                .max(1)
        });
        let mine: Vec<(&Fetch, &Role)> = other
            .iter()
            .copied()
            .zip(&roles)
            .filter(|(_, r)| !matches!(r, Role::Wait(_)))
            .collect();
        let load_mine = |&(x, role): &(&Fetch, &Role)| -> Result<Arc<Vec<u8>>> {
            let loaded = load(f, x, plan).map(Arc::new);
            if let Role::Lead(flight) = role {
                flight.publish(loaded.as_ref().ok().cloned());
                self.land(&x.scaled, flight);
            }
            loaded
        };
        let mut kept = Vec::new();
        let mut failed = None;
        for group in mine.chunks(window) {
            let data: Vec<Result<Arc<Vec<u8>>>> = match pool {
                Some(p) => p.install(|| {
                    use rayon::prelude::*;
                    group.par_iter().map(load_mine).collect()
                }),
                None => group.iter().map(load_mine).collect(),
            };
            kept.clear();
            for (&(x, _), data) in group.iter().zip(data) {
                // Every load of the window is handed over before an error returns.
                match data {
                    Ok(data) => {
                        if !copy_runs(h, &plan.chunk, &x.scaled, |r| {
                            copy_out(out, &data, r, plan.elem)
                        }) {
                            failed.get_or_insert_with(|| {
                                short_chunk(&plan.path, plan.header, &x.scaled)
                            });
                        }
                        kept.push((x.scaled.clone(), data));
                    }
                    Err(e) => {
                        failed.get_or_insert(e);
                    }
                }
            }
        }
        // Mine are all handed over: now wait for the others' (or load them, if theirs failed).
        for (x, role) in other.iter().zip(&roles) {
            if let Role::Wait(flight) = role {
                let data = match flight.wait() {
                    Some(data) => data,
                    None => Arc::new(load(f, x, plan)?),
                };
                if !copy_runs(h, &plan.chunk, &x.scaled, |r| {
                    copy_out(out, &data, r, plan.elem)
                }) {
                    return Err(short_chunk(&plan.path, plan.header, &x.scaled));
                }
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(kept
            .into_iter()
            .map(|(k, d)| (k, Arc::try_unwrap(d).unwrap_or_else(|d| (*d).clone())))
            .collect())
    }

    /// This read's part in loading chunk `x` (see [`Flight`]).
    fn role(&self, x: &Fetch, plan: &Plan) -> Role {
        let mut flights = self.shared.inflight.lock();
        match flights.get(&x.scaled) {
            Some(flight) if flight.epoch == plan.epoch => Role::Wait(Arc::clone(flight)),
            Some(_) => Role::Alone,
            None => {
                let flight = Arc::new(Flight {
                    epoch: plan.epoch,
                    bytes: parking_lot::Mutex::new(None),
                    done: parking_lot::Condvar::new(),
                });
                flights.insert(x.scaled.clone(), Arc::clone(&flight));
                Role::Lead(flight)
            }
        }
    }

    /// The load of `scaled` this read led is over: later readers load it themselves (or find
    /// it cached).
    fn land(&self, scaled: &[u64], flight: &Arc<Flight>) {
        let mut flights = self.shared.inflight.lock();
        if flights.get(scaled).is_some_and(|f| Arc::ptr_eq(f, flight)) {
            flights.remove(scaled);
        }
    }

    /// Offer chunks a read loaded to the chunk cache, if nothing changed the dataset since the
    /// read looked them up.
    fn keep_loaded(&self, f: &Store, plan: &Plan, loaded: Vec<(Coords, Vec<u8>)>) {
        if loaded.is_empty() {
            return;
        }
        let st = self.shared.state.read();
        if self.shared.version() != plan.version || f.epoch() != plan.epoch {
            return;
        }
        // Caching is a favour: a reader does not wait for the cache to do it.
        if let StorageState::Chunked(c) = &st.storage
            && let Some(mut cache) = c.cache.try_write()
        {
            for (scaled, data) in loaded {
                cache.insert_clean(&scaled, data);
            }
        }
    }

    /// The read as it is done when a writer raced it: holding the state alone throughout.
    pub(super) fn read_selection_exclusive(&self, h: &Hyperslab, out: &mut [u8]) -> Result<()> {
        let f = &self.file.inner.store;
        let mut st = self.shared.write();
        let elem = st.dtype.size;
        let DatasetState {
            path,
            header,
            storage,
            ..
        } = &mut **st;
        let StorageState::Chunked(c) = storage else {
            drop(st);
            let st = self.shared.state.read();
            return read_unchunked(&st, &self.shared.dims.read().0, h, out, f);
        };
        let chunk = c.shape.chunk.clone();
        h.try_for_each_chunk(&chunk, |scaled| {
            let data = c.read_view(f, path, scaled)?;
            if !copy_runs(h, &chunk, scaled, |r| copy_out(out, data, r, elem)) {
                return Err(short_chunk(path, *header, scaled));
            }
            Ok(())
        })
    }

    /// The lookup path: a selection of one element of a chunked dataset is one copy out of
    /// its chunk (cached, fresh, or read) into `one` (the element's bytes in the file's
    /// order), with no selection built or walked. `false` (nothing read) when the dataset is
    /// not chunked, `start` is not a place inside it, or `one` is not an element long (the
    /// general path says why).
    pub(super) fn read_element(&self, start: &[u64], one: &mut [u8]) -> Result<bool> {
        let f = &self.file.inner.store;
        let st = self.shared.state.read();
        let epoch = f.epoch();
        let version = self.shared.version();
        let elem = st.dtype.size;
        let StorageState::Chunked(c) = &st.storage else {
            return Ok(false);
        };
        let rank = c.shape.chunk.len();
        if start.len() != rank || one.len() != elem {
            return Ok(false);
        }
        if !c.fresh.shared_ready() {
            drop(st);
            let h = Hyperslab::new(start, &vec![1; rank], None, &self.shape())?;
            self.read_selection_exclusive(&h, one)?;
            return Ok(true);
        }
        // The chunk's coordinates, on the stack (a lookup allocates nothing and grows no
        // vector); a dataset of higher rank takes the general path.
        let mut grid = [0u64; LOOKUP_RANK];
        let Some(scaled) = grid.get_mut(..rank) else {
            return Ok(false);
        };
        // The element's position in its chunk, in elements, C order.
        let mut at = 0u64;
        for (((q, &s), &k), &d) in scaled
            .iter_mut()
            .zip(start)
            .zip(&c.shape.chunk)
            .zip(&c.shape.dims)
        {
            if s >= d {
                return Ok(false);
            }
            let (Some(quot), Some(r)) = (s.checked_div(k), s.checked_rem(k)) else {
                return Ok(false);
            };
            *q = quot;
            at = match at.checked_mul(k).and_then(|a| a.checked_add(r)) {
                Some(a) => a,
                None => return Ok(false),
            };
        }
        let scaled: &[u64] = scaled;
        let short = || short_chunk(&st.path, st.header, scaled);
        let in_chunk = usize::try_from(at)
            .ok()
            .and_then(|a| a.checked_mul(elem))
            .ok_or_else(short)?;
        let pick = |data: &[u8], one: &mut [u8]| -> Result<()> {
            let bytes = in_chunk
                .checked_add(elem)
                .and_then(|end| data.get(in_chunk..end))
                .ok_or_else(short)?;
            one.copy_from_slice(bytes);
            Ok(())
        };
        let small = c.shape.chunk_bytes <= (h5chunk_cache::PAGE_BYTES / 2) as u64;
        // One look at the cache: a hit, or a miss noted (chunks larger than half a page).
        let repeat = {
            let cache = c.cache.read();
            if cache.contains(scaled) {
                drop(cache);
                if let Some(picked) = c.cache_hit(scaled, |data| pick(data, one)) {
                    picked?;
                    return Ok(true);
                }
                false
            } else {
                !small && cache.repeat_miss(scaled)
            }
        };
        if let Some(data) = c
            .fresh
            .position_shared(scaled)
            .and_then(|i| c.fresh.chunk(i))
        {
            pick(data, one)?;
            return Ok(true);
        }
        let fill = |one: &mut [u8]| -> Result<bool> {
            if c.fill.len() != elem {
                return Err(short());
            }
            one.copy_from_slice(&c.fill);
            Ok(true)
        };
        // The element's file address in an unfiltered chunk at `chunk`.
        let element_at = |chunk: Addr| -> Result<Addr> {
            element_addr(chunk, in_chunk, elem, c.shape.chunk_bytes).ok_or_else(short)
        };
        if c.pipeline.is_none() && (small || !repeat) {
            // The lookup's path (no filter: the element is where the record says): the
            // record alone, no fetch plan built for a chunk that will not be loaded.
            let Some(ChunkRecord { addr: Some(a), .. }) = c.recorded(f, scaled)? else {
                return fill(one);
            };
            let at = element_at(a)?;
            drop(st);
            return self.read_element_at(f, at, small, epoch, start, one);
        }
        let Some(x) = c.fetch(f, scaled)? else {
            return fill(one);
        };
        // An unfiltered chunk not cached: read the element alone (a random lookup will not
        // see the chunk again), unless the previous lookup missed the same chunk (the reader
        // walks it: load it whole). A small chunk's page serves its neighbours too.
        if !x.decode && (small || !repeat) {
            let at = element_at(x.addr)?;
            drop(st);
            return self.read_element_at(f, at, small, epoch, start, one);
        }
        let loaded = {
            let plan = Plan {
                fetches: Vec::new(),
                pipeline: if x.decode { c.pipeline.clone() } else { None },
                chunk: Vec::new(),
                chunk_bytes: usize::try_from(c.shape.chunk_bytes)
                    .map_err(|_| Error::Unsupported("chunks larger than memory"))?,
                elem,
                path: st.path.clone(),
                header: st.header,
                epoch,
                version,
            };
            drop(st);
            // Loaded once however many readers want the chunk at once (this read leads no
            // other load, so it may wait).
            let loaded = match self.role(&x, &plan) {
                Role::Wait(flight) => match flight.wait() {
                    Some(bytes) => Ok(Arc::unwrap_or_clone(bytes)),
                    None => load(f, &x, &plan),
                },
                Role::Lead(flight) => {
                    let loaded = load(f, &x, &plan).map(Arc::new);
                    flight.publish(loaded.as_ref().ok().cloned());
                    self.land(&x.scaled, &flight);
                    loaded.map(Arc::unwrap_or_clone)
                }
                Role::Alone => load(f, &x, &plan),
            };
            loaded
                .and_then(|data| {
                    let bytes = in_chunk
                        .checked_add(elem)
                        .and_then(|end| data.get(in_chunk..end))
                        .ok_or_else(|| short_chunk(&plan.path, plan.header, &x.scaled))?;
                    one.copy_from_slice(bytes);
                    Ok(Some(data))
                })
                .map(|data| data.map(|d| (plan, d)))
        };
        if f.epoch() != epoch {
            // Raced by a write or free: what was read (or failed to decode) may not be the
            // chunk the lookup found.
            let h = Hyperslab::new(start, &vec![1; start.len()], None, &self.shape())?;
            self.read_selection_exclusive(&h, one)?;
            return Ok(true);
        }
        if let Some((plan, data)) = loaded? {
            self.keep_loaded(f, &plan, vec![(x.scaled, data)]);
        }
        Ok(true)
    }

    /// [`read_element`](Self::read_element)'s read of the element's bytes at `at` in an
    /// unfiltered chunk (the dataset's lock released): through the page cache for a `small`
    /// chunk (its page serves its neighbours), else straight from the file (one element of a
    /// larger chunk: its page would serve no neighbour). A write or free since `epoch` may
    /// have moved the chunk: then the element is read again under the exclusive lock.
    #[inline]
    fn read_element_at(
        &self,
        f: &Store,
        at: Addr,
        small: bool,
        epoch: u64,
        start: &[u64],
        one: &mut [u8],
    ) -> Result<bool> {
        let read = if small {
            f.read_into(at, one)
        } else {
            f.read_uncached(at, one)
        };
        if f.epoch() != epoch {
            let h = Hyperslab::new(start, &vec![1; start.len()], None, &self.shape())?;
            self.read_selection_exclusive(&h, one)?;
            return Ok(true);
        }
        read.map(|()| true)
    }
}

/// The file address of the `elem` bytes at byte `in_chunk` of an unfiltered chunk stored at
/// `chunk`, `chunk_bytes` long: `None` when they do not lie inside it.
#[inline]
fn element_addr(chunk: Addr, in_chunk: usize, elem: usize, chunk_bytes: u64) -> Option<Addr> {
    let end = in_chunk.checked_add(elem)?;
    if end as u64 > chunk_bytes {
        return None;
    }
    (in_chunk as u64).checked_add(chunk.get()).map(Addr)
}

/// The highest rank [`Dataset::read_element`] serves (its chunk coordinates live in an array
/// of this length on the stack); a lookup in a dataset of higher rank takes the general path.
const LOOKUP_RANK: usize = 8;

/// A contiguous or compact dataset's selection (read under the shared lock: there is no
/// chunk cache to fill and no index to ask).
fn read_unchunked(
    st: &DatasetState,
    dims: &[u64],
    h: &Hyperslab,
    out: &mut [u8],
    f: &Store,
) -> Result<()> {
    let elem = st.dtype.size;
    let (path, header) = (&st.path, st.header);
    let (whole, base): (Cow<'_, [u8]>, u64) = match &st.storage {
        StorageState::Chunked(_) => return Err(Error::Internal("a chunked dataset read whole")),
        StorageState::Virtual(_) => {
            return Err(Error::Internal("a virtual dataset read as stored data"));
        }
        StorageState::Contiguous {
            external: Some(e), ..
        } => {
            // Only the elements from the selection's first to its last are read.
            let (lo, buf) = e.read_span(h, dims, elem, false)?;
            (Cow::Owned(buf), lo)
        }
        StorageState::Contiguous {
            addr, size, fill, ..
        } => match addr {
            // Only the elements from the selection's first to its last are read: a slab of a
            // huge dataset costs its own size.
            Some(a) => {
                let (lo, hi) = span(h, dims);
                let (from, to) = (
                    lo.saturating_mul(elem as u64),
                    hi.saturating_mul(elem as u64),
                );
                let len = to.min(*size).saturating_sub(from);
                let at = a
                    .get()
                    .checked_add(from)
                    .ok_or_else(|| short_storage(path, header, 0))?;
                (Cow::Owned(f.read(Addr(at), len)?), lo)
            }
            // Never written: every selected element is the fill value (the stored size,
            // which a damaged file may make huge, sizes nothing).
            None => {
                if fill.len() == elem && elem > 0 {
                    for e in out.chunks_exact_mut(elem) {
                        e.copy_from_slice(fill);
                    }
                }
                return Ok(());
            }
        },
        StorageState::Compact { data } => (Cow::Borrowed(data.as_slice()), 0),
    };
    if !copy_from_contiguous(h, dims, &whole, base, out, elem) {
        return Err(short_storage(path, header, whole.len()));
    }
    Ok(())
}

/// The selection's first and one past its last element, as indices into the C-order
/// elements of `dims` (`(0, 0)` for an empty selection).
pub(crate) fn span(h: &Hyperslab, dims: &[u64]) -> (u64, u64) {
    let chunk: Vec<u64> = dims.iter().map(|&d| d.max(1)).collect();
    let zero = vec![0u64; dims.len()];
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    h.runs(&chunk, &zero, |r| {
        if r.len == 0 {
            return;
        }
        let last = r
            .len
            .saturating_sub(1)
            .saturating_mul(r.chunk_step)
            .saturating_add(r.chunk);
        lo = lo.min(r.chunk);
        hi = hi.max(last.saturating_add(1));
    });
    if dims.is_empty() {
        // A scalar: its one element.
        return (0, 1);
    }
    if lo > hi { (0, 0) } else { (lo, hi) }
}

impl Dataset {
    /// Read everything, as `T`. Numbers of another type than the dataset's are converted as
    /// libhdf5 and h5py convert them (a float32 dataset read as `f64`; an `i64` one read as
    /// `i32` when every value fits, else [`Error::ValueOutOfRange`] naming the first that does
    /// not); the same holds for every typed read and write.
    pub fn read<T: H5Type>(&self) -> Result<Vec<T>> {
        self.check_type(T::DESC)?;
        self.read_values(&Hyperslab::all(&self.shape()))
    }

    /// Read everything, as little-endian bytes of the dataset's type (for element types known
    /// only at run time: see [`Dataset::dtype`]).
    pub fn read_raw(&self) -> Result<Vec<u8>> {
        let dims = self.shape();
        self.read_selection_raw(&Hyperslab::all(&dims))
    }

    /// Read a hyperslab as little-endian bytes of the dataset's type, in C order.
    pub fn read_slice_raw(
        &self,
        start: &[u64],
        count: &[u64],
        stride: Option<&[u64]>,
    ) -> Result<Vec<u8>> {
        let h = Hyperslab::new(start, count, stride, &self.shape())?;
        self.read_selection_raw(&h)
    }

    /// Read a hyperslab (`stride` 1 when `None`), as `T`, in C order.
    pub fn read_slice<T: H5Type>(
        &self,
        start: &[u64],
        count: &[u64],
        stride: Option<&[u64]>,
    ) -> Result<Vec<T>> {
        if stride.is_none() {
            let mut one = [T::default()];
            if self.read_one_element(start, count, &mut one)? {
                return Ok(one.to_vec());
            }
        }
        self.check_type(T::DESC)?;
        self.read_values(&Hyperslab::new(start, count, stride, &self.shape())?)
    }

    /// `h`'s elements as a new vector (the type checked), or a typed error when they do not
    /// fit in memory.
    pub(super) fn read_values<T: H5Type>(&self, h: &Hyperslab) -> Result<Vec<T>> {
        let n = usize::try_from(h.len())
            .map_err(|_| Error::arg("selection", "more elements than memory can address"))?;
        // Zeroed by the allocator where large: the read writes every element.
        let mut out = crate::store::try_zeroed(n).ok_or_else(|| {
            Error::arg(
                "selection",
                format!("{n} elements do not fit in memory (read it in parts with read_slice)"),
            )
        })?;
        self.read_typed(h, &mut out)?;
        Ok(out)
    }

    /// Read a hyperslab into `out` (as h5py's `read_direct`, or `H5Dread` into the caller's
    /// buffer): `out` holds exactly the selected elements, in C order. A loop of small reads
    /// allocates nothing per read, and unfiltered chunks selected whole are read from the file
    /// straight into `out`.
    pub fn read_slice_into<T: H5Type>(
        &self,
        start: &[u64],
        count: &[u64],
        stride: Option<&[u64]>,
        out: &mut [T],
    ) -> Result<()> {
        if stride.is_none() && self.read_one_element(start, count, out)? {
            return Ok(());
        }
        self.check_type(T::DESC)?;
        let h = Hyperslab::new(start, count, stride, &self.shape())?;
        if u64::try_from(out.len()).ok() != Some(h.len()) {
            return Err(Error::arg(
                "out",
                format!("holds {} elements, the selection {}", out.len(), h.len()),
            ));
        }
        // The caller's buffer, about to be written whole: huge pages where it is large and
        // not touched yet (a fresh `vec![0; n]`), as for the buffers a read allocates.
        crate::store::advise_huge_pages(out.as_ptr().cast(), std::mem::size_of_val(out));
        self.read_typed(&h, out)
    }

    /// Fill `out` (exactly `h`'s elements; the type checked) from `h`: straight into its
    /// memory when `T` allows and the host is little-endian, else through a byte buffer.
    pub(super) fn read_typed<T: H5Type>(&self, h: &Hyperslab, out: &mut [T]) -> Result<()> {
        let dtype = self.dtype();
        if dtype.class != T::DESC.class || dtype.size != T::DESC.size {
            // Numbers of another type: converted as libhdf5 converts them.
            let bytes = self.read_selection_raw(h)?;
            let mut le = vec![0u8; out.len().saturating_mul(T::DESC.size)];
            self.converted(dtype, &bytes, T::DESC, &mut le)?;
            for (o, b) in out.iter_mut().zip(le.chunks_exact(T::DESC.size)) {
                *o = T::read_le(b);
            }
            return Ok(());
        }
        if cfg!(target_endian = "little")
            && let Some(bytes) = T::bytes_mut(out)
            && bytes.len() as u64 == h.len().saturating_mul(dtype.size as u64)
        {
            self.read_selection_into(h, bytes)?;
            dtype.to_from_le(bytes);
            return Ok(());
        }
        let bytes = self.read_selection_raw(h)?;
        for (o, b) in out.iter_mut().zip(bytes.chunks_exact(T::DESC.size)) {
            *o = T::read_le(b);
        }
        Ok(())
    }

    /// The lookup path (see [`read_element`](Self::read_element)) for a one-element `out`;
    /// `false` when the selection is of another kind.
    pub(super) fn read_one_element<T: H5Type>(
        &self,
        start: &[u64],
        count: &[u64],
        out: &mut [T],
    ) -> Result<bool> {
        let [slot] = out else {
            return Ok(false);
        };
        let dtype = self.dtype();
        // Another element type: the general path reports it.
        if dtype.class != T::DESC.class
            || dtype.size != T::DESC.size
            || count.iter().any(|&n| n != 1)
        {
            return Ok(false);
        }
        // Straight into `T`'s memory where its bytes are its little-endian value (every
        // number type on a little-endian host), as `read_typed` reads.
        if cfg!(target_endian = "little")
            && let Some(bytes) = T::bytes_mut(std::slice::from_mut(slot))
            && bytes.len() == dtype.size
        {
            if !self.read_element(start, bytes)? {
                return Ok(false);
            }
            dtype.to_from_le(bytes);
            return Ok(true);
        }
        // The element's bytes, in the file's order, then as `T`.
        let mut buf = [0u8; 16];
        let Some(one) = buf.get_mut(..dtype.size) else {
            return Ok(false);
        };
        if !self.read_element(start, one)? {
            return Ok(false);
        }
        dtype.to_from_le(one);
        *slot = T::read_le(one);
        Ok(true)
    }

    pub(crate) fn read_selection_raw(&self, h: &Hyperslab) -> Result<Vec<u8>> {
        let elem = self.dtype().size;
        let n = usize::try_from(h.len())
            .map_err(|_| Error::arg("selection", "more elements than memory can address"))?;
        let bytes = n
            .checked_mul(elem)
            .ok_or_else(|| Error::arg("selection", "more bytes than memory can address"))?;
        let mut out = zeroed(bytes)?;
        self.read_selection_into(h, &mut out)?;
        self.dtype().to_from_le(&mut out);
        Ok(out)
    }

    /// A chunk's stored bytes and filter mask, without decoding (h5py's `read_direct_chunk`);
    /// `None` if the chunk is not allocated. Cached changes are written first.
    pub fn read_direct_chunk(&self, offset: &[u64]) -> Result<Option<(Vec<u8>, u32)>> {
        let f = &self.file.inner.store;
        let mut st = self.shared.write();
        let dims = self.shared.dims.read().0.clone();
        let DatasetState { path, storage, .. } = &mut **st;
        let StorageState::Chunked(c) = storage else {
            return Err(Error::Unsupported(
                "direct chunk reads of contiguous or compact datasets",
            ));
        };
        let scaled = grid_position(offset, &c.shape.chunk, &dims)?;
        if let Some(e) = c.cache.get_mut().get_mut(&scaled)
            && e.dirty
        {
            e.dirty = false;
            let data = e.data.clone();
            c.write_chunk(f, path, &scaled, &data)?;
        }
        if c.fresh.position(&scaled).is_some() {
            c.flush_fresh(f, path)?;
        }
        let filtered = c.pipeline.is_some();
        match c.index.get(f, &scaled)? {
            Some(ChunkRecord {
                addr: Some(a),
                size,
                mask,
            }) => {
                let len = if filtered && !c.skips_filters(&scaled) {
                    size
                } else {
                    c.shape.chunk_bytes
                };
                Ok(Some((f.read(a, len)?, mask)))
            }
            _ => Ok(None),
        }
    }

    /// Read everything into an n-dimensional array of the dataset's shape (cargo feature
    /// `ndarray`).
    #[cfg(feature = "ndarray")]
    #[cfg_attr(docsrs, doc(cfg(feature = "ndarray")))]
    pub fn read_array<T: H5Type>(&self) -> Result<ndarray::ArrayD<T>> {
        let shape: Vec<usize> = self.shape().iter().map(|&d| d as usize).collect();
        ndarray::ArrayD::from_shape_vec(shape, self.read::<T>()?)
            .map_err(|_| Error::Internal("ndarray refused the dataset's own shape"))
    }
}
