//! The SWMR invariant itself, write by write: a SWMR reader may open the file between any two
//! of the writer's writes, so the file after *every prefix* of the writer's writes must read,
//! and every element inside the extent it shows must hold its value.
//!
//! The writer's writes (after SWMR writing starts) are logged with their bytes; each prefix is
//! replayed onto the file as it was when SWMR writing started, opened as a SWMR reader, read
//! whole, and its whole chunk index walked (past the extent: a reader bounded by the extent
//! alone never follows a pointer to a block holding only elements past it). A flush dependency missing from any structure (an extensible array's header
//! written before its index block, an index block before a data block, a v2 B-tree node before
//! its children, a fixed array's header before its data block, ...) or an object header
//! written before the index it covers leaves a prefix where a pointer leads to bytes not yet
//! written, and this test fails there: it is the test that fails when a single flush
//! dependency is removed.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use h5chunk::storage::{MemStorage, Storage};
use h5chunk::{Durability, File, FileOptions, FilterSpec, IndexKind, OpenOptions};
use h5chunk_format::Addr;
use parking_lot::Mutex;

#[derive(Clone, Debug)]
enum Op {
    Write(u64, Vec<u8>),
    SetLen(u64),
}

/// Memory storage that logs its writes (with their bytes) while recording is on.
#[derive(Debug, Default)]
struct Logged {
    inner: MemStorage,
    ops: Mutex<Vec<Op>>,
    on: AtomicBool,
}

impl Storage for Logged {
    fn read_at(&self, addr: Addr, buf: &mut [u8]) -> io::Result<()> {
        self.inner.read_at(addr, buf)
    }
    fn write_at(&self, addr: Addr, data: &[u8]) -> io::Result<()> {
        if self.on.load(Ordering::SeqCst) {
            self.ops.lock().push(Op::Write(addr.get(), data.to_vec()));
        }
        self.inner.write_at(addr, data)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        if self.on.load(Ordering::SeqCst) {
            self.ops.lock().push(Op::SetLen(len));
        }
        self.inner.set_len(len)
    }
    fn sync(&self) -> io::Result<()> {
        Ok(())
    }
}

fn oracle(c: &[u64]) -> i64 {
    match c {
        [i] => (i * 1_000_003) as i64,
        [i, j] => (i * 1_000_003 + j) as i64,
        _ => unreachable!(),
    }
}

const FILL: i64 = -1;

/// How the writer grows the dataset.
#[derive(Clone, Copy, Debug)]
enum Grow {
    Rows,
    Cols,
    Fill,
}

/// Check one state of the file: it opens as a SWMR reader and every element inside the extent
/// it shows holds its value (or, for a fixed extent being filled, the fill value).
fn check(bytes: Vec<u8>, grow: Grow, what: &str) {
    let r = OpenOptions::swmr_read()
        .open_on(Arc::new(MemStorage::from_vec(bytes)))
        .unwrap_or_else(|e| panic!("{what}: open: {e}"));
    let d = r
        .dataset("x")
        .unwrap_or_else(|e| panic!("{what}: dataset: {e}"));
    let v = d
        .read::<i64>()
        .unwrap_or_else(|e| panic!("{what}: read: {e}"));
    // The whole index, past the extent too (what `get_chunk_info` and `h5chunk check` walk):
    // every block a pointer leads to must be written.
    let chunks = d
        .chunks()
        .unwrap_or_else(|e| panic!("{what}: walking the index: {e}"));
    let _ = chunks;
    let shape = d.shape();
    let mut i = 0;
    let mut bad = 0;
    let mut c = vec![0u64; shape.len()];
    while i < v.len() {
        let want = oracle(&c);
        if v[i] != want && !(matches!(grow, Grow::Fill) && v[i] == FILL) {
            bad += 1;
        }
        i += 1;
        for k in (0..c.len()).rev() {
            c[k] += 1;
            if c[k] < shape[k] {
                break;
            }
            c[k] = 0;
        }
    }
    assert_eq!(bad, 0, "{what}: {bad} wrong values in extent {shape:?}");
}

/// What one run writes.
#[derive(Clone, Copy, Debug)]
struct Plan {
    grow: Grow,
    deflate: bool,
    /// Rows (or columns) per growth step; steps per flush cycle from 1 to 9.
    step: u64,
    /// Write something before SWMR writing starts (else the index is made under SWMR).
    seed: bool,
}

/// 48 flushes of growth under SWMR, then replay every prefix of the writes: once with no
/// journal (every block written as the flush comes to it), once as a file on disk is written
/// (`Durability::Flush`: the journal bypassed, each flush's new space joined and written
/// first, the writes in place after it in order).
fn every_prefix_reads(
    kind: IndexKind,
    shape: &[u64],
    max: &[Option<u64>],
    chunk: &[u64],
    plan: Plan,
) -> usize {
    every_prefix_reads_with(kind, shape, max, chunk, plan, false)
        + every_prefix_reads_with(kind, shape, max, chunk, plan, true)
}

/// A SWMR-write file over a [`Logged`] storage, with its journal bypassed (`journaled`, as a
/// file on disk is written) or none.
fn logged_file(journaled: bool) -> (Arc<Logged>, File) {
    let log = Arc::new(Logged::default());
    let options = FileOptions {
        swmr_write: true,
        // A small metadata cache: blocks are evicted (written) between flushes too.
        metadata_cache_bytes: Some(16 << 10),
        durability: Durability::Flush,
        ..FileOptions::default()
    };
    let storage = Arc::clone(&log) as Arc<dyn Storage>;
    let f = if journaled {
        options.create_on_journaled(storage, Arc::new(MemStorage::new()))
    } else {
        options.create_on(storage)
    }
    .unwrap();
    (log, f)
}

/// The dataset `x` the writers write: `i64`, fill value [`FILL`], on `kind`'s index.
fn create_x(
    f: &File,
    kind: IndexKind,
    (shape, max, chunk): (&[u64], &[Option<u64>], &[u64]),
    deflate: bool,
) -> h5chunk::Dataset {
    let mut b = f
        .new_dataset::<i64>()
        .shape(shape)
        .max_shape(max)
        .chunk(chunk)
        .fill_value(FILL);
    if kind == IndexKind::SkipList {
        // h5chunk's own index: on request only.
        b = b.index(kind);
    }
    if deflate {
        b = b.filter(FilterSpec::Shuffle).filter(FilterSpec::Deflate(1));
    }
    let d = b.create("x").unwrap();
    assert_eq!(d.index_kind(), Some(kind));
    d
}

/// Apply `ops` one by one to `state`, calling `check` on the state after each (and before the
/// first), with how many were applied.
fn replay(mut state: Vec<u8>, ops: &[Op], check: impl Fn(Vec<u8>, usize)) {
    check(state.clone(), 0);
    for (k, op) in ops.iter().enumerate() {
        match op {
            Op::Write(at, bytes) => {
                let end = *at as usize + bytes.len();
                if state.len() < end {
                    state.resize(end, 0);
                }
                state[*at as usize..end].copy_from_slice(bytes);
            }
            Op::SetLen(n) => state.resize(*n as usize, 0),
        }
        check(state.clone(), k + 1);
    }
}

/// 48 flushes of growth under SWMR, then replay every prefix of the writes (see
/// [`every_prefix_reads`]).
fn every_prefix_reads_with(
    kind: IndexKind,
    shape: &[u64],
    max: &[Option<u64>],
    chunk: &[u64],
    plan: Plan,
    journaled: bool,
) -> usize {
    let Plan {
        grow,
        deflate,
        step,
        seed,
    } = plan;
    let (log, f) = logged_file(journaled);
    let d = create_x(&f, kind, (shape, max, chunk), deflate);
    let mut dims = shape.to_vec();
    let write = |dims: &[u64], start: &[u64], count: &[u64]| {
        if !matches!(grow, Grow::Fill) {
            d.resize(dims).unwrap();
        }
        write_box(&d, start, count);
    };
    if seed && !matches!(grow, Grow::Fill) {
        // Something to see from the start.
        let first: Vec<u64> = dims.iter().map(|&x| x.max(1)).collect();
        dims.clone_from(&first);
        write(&dims, &vec![0; dims.len()], &first);
    }
    f.flush().unwrap();
    f.start_swmr_write().unwrap();
    let base = log.inner.to_vec();
    log.on.store(true, Ordering::SeqCst);
    let mut filled = 0u64;
    for round in 0..48u64 {
        for _ in 0..(1 + round % 9) {
            match grow {
                Grow::Rows => {
                    let r = dims[0];
                    dims[0] += step;
                    let mut count = dims.clone();
                    count[0] = step;
                    let mut start = vec![0; dims.len()];
                    start[0] = r;
                    write(&dims, &start, &count);
                }
                Grow::Cols => {
                    let c = dims[1];
                    dims[1] += step;
                    write(&dims, &[0, c], &[dims[0], step]);
                }
                Grow::Fill => {
                    let k = step.min(dims[0] - filled);
                    if k > 0 {
                        write(&dims, &[filled, 0], &[k, dims[1]]);
                        filled += k;
                    }
                }
            }
        }
        f.flush().unwrap();
    }
    log.on.store(false, Ordering::SeqCst);
    let ops = log.ops.lock().clone();
    assert!(ops.len() > 20, "{kind:?}: only {} writes", ops.len());
    replay(base, &ops, |state, k| {
        let what = format!(
            "{kind:?} (deflate {deflate}, journaled {journaled}), after {k} of {} writes",
            ops.len()
        );
        check(state, grow, &what);
    });
    f.close().unwrap();
    eprintln!(
        "{kind:?} (deflate {deflate}, journaled {journaled}): {} prefixes read",
        ops.len() + 1
    );
    ops.len()
}

#[test]
fn extensible_array_every_prefix_reads() {
    // 6,000 chunks: data blocks in the index block, super blocks, then paged data blocks.
    for (deflate, seed) in [(false, true), (true, true), (false, false)] {
        let plan = Plan {
            grow: Grow::Rows,
            deflate,
            step: 25,
            seed,
        };
        every_prefix_reads(IndexKind::ExtensibleArray, &[0], &[None], &[1], plan);
    }
}

#[test]
fn v2_btree_every_prefix_reads() {
    for (grow, deflate) in [(Grow::Rows, false), (Grow::Cols, false), (Grow::Rows, true)] {
        let plan = Plan {
            grow,
            deflate,
            step: 1,
            seed: true,
        };
        every_prefix_reads(IndexKind::BTree2, &[0, 3], &[None, None], &[1, 1], plan);
    }
}

#[test]
fn fixed_array_every_prefix_reads() {
    // 2,400 chunks: a paged data block, its pages made as they are first written.
    for deflate in [false, true] {
        let plan = Plan {
            grow: Grow::Fill,
            deflate,
            step: 4,
            seed: false,
        };
        every_prefix_reads(
            IndexKind::FixedArray,
            &[800, 3],
            &[Some(800), Some(3)],
            &[1, 1],
            plan,
        );
    }
}

#[test]
fn skip_list_every_prefix_reads() {
    for deflate in [false, true] {
        let plan = Plan {
            grow: Grow::Rows,
            deflate,
            step: 25,
            seed: true,
        };
        every_prefix_reads(IndexKind::SkipList, &[0], &[None], &[1], plan);
    }
}

/// The flush dependencies the SWMR design asks of each chunk index (parent → child: the parent
/// is written only once the child is), as the writer's trace records them: each pair of block
/// types below must be linked at least once while the structure grows under SWMR writing.
/// Removing any one of them from the code fails here, whether or not a reader could catch the
/// resulting order in the act (several are unobservable while the object header, which holds
/// the extent, goes last).
#[test]
fn the_designs_flush_dependencies_are_made() {
    use h5chunk_cache::{Key, TraceEvent};
    use std::collections::{BTreeSet, HashMap};

    fn edges(
        kind: IndexKind,
        shape: &[u64],
        max: &[Option<u64>],
        grow: Grow,
        (seed, step): (bool, u64),
    ) -> BTreeSet<(String, String)> {
        let f = FileOptions {
            swmr_write: true,
            trace: true,
            metadata_cache_bytes: Some(16 << 10),
            durability: Durability::Flush,
            ..FileOptions::default()
        }
        .create_on(Arc::new(MemStorage::new()))
        .unwrap();
        let mut b = f
            .new_dataset::<i64>()
            .shape(shape)
            .max_shape(max)
            .chunk(&vec![1; shape.len()])
            .fill_value(FILL);
        if kind == IndexKind::SkipList {
            b = b.index(kind);
        }
        let d = b.create("x").unwrap();
        let mut dims = shape.to_vec();
        if seed {
            dims.iter_mut().for_each(|x| *x = (*x).max(1));
            d.resize(&dims).unwrap();
            d.write_slice(
                &vec![1i64; dims.iter().product::<u64>() as usize],
                &vec![0; dims.len()],
                &dims,
                None,
            )
            .unwrap();
        }
        f.flush().unwrap();
        f.start_swmr_write().unwrap();
        let mut filled = 0u64;
        for round in 0..60u64 {
            for _ in 0..(1 + round % 7) {
                match grow {
                    Grow::Rows => {
                        let r = dims[0];
                        dims[0] += step;
                        d.resize(&dims).unwrap();
                        let mut count = dims.clone();
                        count[0] = step;
                        let mut start = vec![0; dims.len()];
                        start[0] = r;
                        let n: u64 = count.iter().product();
                        d.write_slice(&vec![2i64; n as usize], &start, &count, None)
                            .unwrap();
                    }
                    Grow::Cols => unreachable!(),
                    Grow::Fill => {
                        let k = 10.min(dims[0] - filled);
                        if k > 0 {
                            let n = (k * dims[1]) as usize;
                            d.write_slice(&vec![3i64; n], &[filled, 0], &[k, dims[1]], None)
                                .unwrap();
                            filled += k;
                        }
                    }
                }
            }
            f.flush().unwrap();
        }
        let trace = f.take_write_trace();
        eprintln!(
            "{kind:?}: {} elements, types written {:?}",
            dims.iter().product::<u64>(),
            trace
                .events
                .iter()
                .filter_map(|e| match e {
                    TraceEvent::Written { type_name, .. } => Some(*type_name),
                    _ => None,
                })
                .collect::<BTreeSet<_>>()
        );
        f.close().unwrap();
        // Each address's type, from its writes; a moved entry takes the type its new place
        // is written with.
        let mut ty: HashMap<Key, &'static str> = HashMap::new();
        let mut moved: HashMap<Key, Key> = HashMap::new();
        for e in &trace.events {
            match e {
                TraceEvent::Written { key, type_name, .. } => {
                    ty.insert(*key, type_name);
                }
                TraceEvent::Moved { from, to } => {
                    moved.insert(Key::Entry(*from), Key::Entry(*to));
                }
                _ => {}
            }
        }
        let name = |k: Key| -> Option<String> {
            if let Key::Proxy(_) = k {
                return Some("chunk".into());
            }
            let mut k = k;
            for _ in 0..64 {
                if let Some(t) = ty.get(&k) {
                    return Some((*t).to_owned());
                }
                k = *moved.get(&k)?;
            }
            None
        };
        let mut out = BTreeSet::new();
        for e in &trace.events {
            if let TraceEvent::DependencyAdded { parent, child } = e
                && let (Some(p), Some(c)) = (name(*parent), name(*child))
            {
                out.insert((p, c));
            }
        }
        out
    }

    let pairs = |v: &[(&str, &str)]| -> BTreeSet<(String, String)> {
        v.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    };
    type Case<'a> = (
        IndexKind,
        &'a [u64],
        &'a [Option<u64>],
        Grow,
        (bool, u64),
        &'a [(&'a str, &'a str)],
    );
    let cases: [Case<'_>; 4] = [
        // 480,000 chunks: data blocks in the index block, super blocks, paged data blocks.
        (
            IndexKind::ExtensibleArray,
            &[0],
            &[None],
            Grow::Rows,
            (true, 2000),
            &[
                ("EAHD", "EAIB"),
                ("EAIB", "EADB"),
                ("EAIB", "EASB"),
                ("EASB", "EADB"),
                ("EASB", "EADB page"),
            ],
        ),
        (
            IndexKind::FixedArray,
            &[1200, 3],
            &[Some(1200), Some(3)],
            Grow::Fill,
            (false, 0),
            &[("FAHD", "FADB"), ("FADB", "FADB page")],
        ),
        (
            IndexKind::BTree2,
            &[0, 3],
            &[None, None],
            Grow::Rows,
            (true, 25),
            &[
                ("BTHD", "BTLF"),
                ("BTHD", "BTIN"),
                ("BTIN", "BTIN"),
                ("BTIN", "BTLF"),
            ],
        ),
        (
            IndexKind::SkipList,
            &[0],
            &[None],
            Grow::Rows,
            (true, 25),
            &[("SKLT", "SKLS")],
        ),
    ];
    for (kind, shape, max, grow, plan, want) in cases {
        let got = edges(kind, shape, max, grow, plan);
        eprintln!("{kind:?}: {got:?}");
        let missing: Vec<_> = pairs(want).difference(&got).cloned().collect();
        assert!(missing.is_empty(), "{kind:?}: no {missing:?} among {got:?}");
    }
}

/// libhdf5's other SWMR scenarios (`test/swmr_remove_*`, `test/swmr_sparse_*`), every prefix
/// of the writer's writes replayed as in [`every_prefix_reads`]: `drive` writes under SWMR
/// (flushing as it goes) and every state must open, walk its index and read its whole extent,
/// each element holding its value or the fill value: a shrink may leave a reader's view with
/// chunks already dropped (as libhdf5's readers allow), a sparse writer leaves holes, but no
/// state may hold a wrong value or fail to read.
fn every_prefix_reads_loosely(
    kind: IndexKind,
    shape: &[u64],
    max: &[Option<u64>],
    chunk: &[u64],
    drive: &dyn Fn(&File, &h5chunk::Dataset),
) -> usize {
    let mut total = 0;
    for journaled in [false, true] {
        let (log, f) = logged_file(journaled);
        let d = create_x(&f, kind, (shape, max, chunk), false);
        f.flush().unwrap();
        f.start_swmr_write().unwrap();
        let base = log.inner.to_vec();
        log.on.store(true, Ordering::SeqCst);
        drive(&f, &d);
        log.on.store(false, Ordering::SeqCst);
        let ops = log.ops.lock().clone();
        assert!(ops.len() > 20, "{kind:?}: only {} writes", ops.len());
        // The fill scenario's check: every element its value or the fill value.
        replay(base, &ops, |state, k| {
            let what = format!(
                "{kind:?} (journaled {journaled}), after {k} of {} writes",
                ops.len()
            );
            check(state, Grow::Fill, &what);
        });
        f.close().unwrap();
        total += ops.len();
    }
    total
}

/// Write the oracle's values over `start .. start + count` of `d`.
fn write_box(d: &h5chunk::Dataset, start: &[u64], count: &[u64]) {
    let mut v = Vec::new();
    let mut c = start.to_vec();
    let n: u64 = count.iter().product();
    for _ in 0..n {
        v.push(oracle(&c));
        for k in (0..c.len()).rev() {
            c[k] += 1;
            if c[k] < start[k] + count[k] {
                break;
            }
            c[k] = start[k];
        }
    }
    d.write_slice(&v, start, count, None).unwrap();
}

/// Records added, then removed (`swmr_remove_writer`): the extent grows, then shrinks and grows
/// again, chunks dropped and cut on the way, under SWMR.
#[test]
fn shrinking_every_prefix_reads() {
    for kind in [IndexKind::ExtensibleArray, IndexKind::SkipList] {
        let drive = |f: &File, d: &h5chunk::Dataset| {
            let mut n = 0u64;
            for round in 0..40u64 {
                let new = if round < 10 || round % 2 == 1 {
                    n + 37
                } else {
                    n.saturating_sub(29)
                };
                d.resize(&[new]).unwrap();
                if new > n {
                    write_box(d, &[n], &[new - n]);
                }
                n = new;
                f.flush().unwrap();
            }
        };
        let writes = every_prefix_reads_loosely(kind, &[0], &[None], &[4], &drive);
        eprintln!("{kind:?} shrinking: {writes} writes replayed");
    }
    // Two unlimited dimensions: both shrink and grow.
    let drive = |f: &File, d: &h5chunk::Dataset| {
        let mut dims = [0u64, 0];
        for round in 0..40u64 {
            let shrink = round >= 8 && round % 3 == 0;
            let new = if shrink {
                [dims[0].saturating_sub(5), dims[1].saturating_sub(3)]
            } else {
                [dims[0] + 7, dims[1] + 4]
            };
            d.resize(&new).unwrap();
            // Rewrite the whole extent's new parts: the rows and columns past the old one.
            if new[0] > dims[0] {
                write_box(d, &[dims[0], 0], &[new[0] - dims[0], new[1]]);
            }
            let top = dims[0].min(new[0]);
            if new[1] > dims[1] && top > 0 {
                write_box(d, &[0, dims[1]], &[top, new[1] - dims[1]]);
            }
            dims = new;
            f.flush().unwrap();
        }
    };
    let writes =
        every_prefix_reads_loosely(IndexKind::BTree2, &[0, 0], &[None, None], &[2, 3], &drive);
    eprintln!("BTree2 shrinking: {writes} writes replayed");
}

/// Sparse writes (`swmr_sparse_writer`): chunks written far apart and out of order, into a
/// growing extent and into a fixed one, holes left unwritten.
#[test]
fn sparse_writes_every_prefix_reads() {
    // An extent that grows by 1,000 at each flush, five scattered chunks written into it.
    let growing = |f: &File, d: &h5chunk::Dataset| {
        let mut n = 0u64;
        for round in 0..40u64 {
            n += 1000;
            d.resize(&[n]).unwrap();
            for k in 0..5u64 {
                let at = (round * 7919 + k * 104_729) % (n / 4) * 4;
                write_box(d, &[at], &[4]);
            }
            f.flush().unwrap();
        }
    };
    for kind in [IndexKind::ExtensibleArray, IndexKind::SkipList] {
        let writes = every_prefix_reads_loosely(kind, &[0], &[None], &[4], &growing);
        eprintln!("{kind:?} sparse: {writes} writes replayed");
    }
    let growing_2d = |f: &File, d: &h5chunk::Dataset| {
        let mut n = 0u64;
        for round in 0..40u64 {
            n += 30;
            d.resize(&[n, n]).unwrap();
            for k in 0..5u64 {
                let i = (round * 31 + k * 17) % (n / 2) * 2;
                let j = (round * 13 + k * 29) % (n / 2) * 2;
                write_box(d, &[i, j], &[2, 2]);
            }
            f.flush().unwrap();
        }
    };
    let writes = every_prefix_reads_loosely(
        IndexKind::BTree2,
        &[0, 0],
        &[None, None],
        &[2, 2],
        &growing_2d,
    );
    eprintln!("BTree2 sparse: {writes} writes replayed");
    // A fixed extent of 4,000 rows: 200 scattered chunks.
    let fixed = |f: &File, d: &h5chunk::Dataset| {
        for round in 0..40u64 {
            for k in 0..5u64 {
                let at = (round * 5 + k) * 1_237 % 1000 * 4;
                write_box(d, &[at, 0], &[4, 3]);
            }
            f.flush().unwrap();
        }
    };
    let writes = every_prefix_reads_loosely(
        IndexKind::FixedArray,
        &[4000, 3],
        &[Some(4000), Some(3)],
        &[4, 3],
        &fixed,
    );
    eprintln!("FixedArray sparse: {writes} writes replayed");
}
