//! Partial chunk I/O: a read that selects part of an unfiltered chunk not in the chunk cache
//! reads only the byte runs it needs, past the cache (libhdf5's rule for chunks that do not
//! fit the cache, and h5chunk's for small parts of any chunk), and gets the same values as the
//! whole-chunk path, for every chunk index kind, ranks 1 to 3, windows, strided selections
//! and edge chunks; a storage that counts bytes shows what moved.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use h5chunk::index::AllocTime;
use h5chunk::libver::{Libver, LibverBounds};
use h5chunk::storage::{MemStorage, Storage};
use h5chunk::{Dataset, File, FileOptions, IndexKind, OpenOptions};
use h5chunk_format::Addr;
use h5chunk_testkit::interop;
use rstest::rstest;

/// Memory storage that counts the bytes and calls of reads and writes.
#[derive(Debug)]
struct Counting {
    inner: Box<dyn Storage>,
    read_bytes: AtomicU64,
    reads: AtomicU64,
    written_bytes: AtomicU64,
    writes: AtomicU64,
}

impl Default for Counting {
    fn default() -> Self {
        Counting {
            inner: Box::new(MemStorage::new()),
            read_bytes: AtomicU64::default(),
            reads: AtomicU64::default(),
            written_bytes: AtomicU64::default(),
            writes: AtomicU64::default(),
        }
    }
}

impl Counting {
    /// (bytes read, reads, bytes written, writes) since the last call.
    fn take(&self) -> (u64, u64, u64, u64) {
        (
            self.read_bytes.swap(0, Ordering::SeqCst),
            self.reads.swap(0, Ordering::SeqCst),
            self.written_bytes.swap(0, Ordering::SeqCst),
            self.writes.swap(0, Ordering::SeqCst),
        )
    }
}

impl Storage for Counting {
    fn read_at(&self, addr: Addr, buf: &mut [u8]) -> io::Result<()> {
        self.read_bytes
            .fetch_add(buf.len() as u64, Ordering::SeqCst);
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.read_at(addr, buf)
    }
    fn write_at(&self, addr: Addr, data: &[u8]) -> io::Result<()> {
        self.written_bytes
            .fetch_add(data.len() as u64, Ordering::SeqCst);
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.write_at(addr, data)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn sync(&self) -> io::Result<()> {
        Ok(())
    }
}

fn value(i: u64) -> i32 {
    (i as i32).wrapping_mul(7919) - 1000
}

/// Every index of `count` in C order.
fn for_each_index(count: &[u64], mut f: impl FnMut(&[u64])) {
    if count.contains(&0) {
        return;
    }
    let mut at = vec![0u64; count.len()];
    loop {
        f(&at);
        let mut d = count.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            at[d] += 1;
            if at[d] < count[d] {
                break;
            }
            at[d] = 0;
        }
    }
}

/// The hyperslab (`start`, `count`, `stride`) of the C-order array `whole` of `dims`.
fn slab<T: Copy>(
    whole: &[T],
    dims: &[u64],
    start: &[u64],
    count: &[u64],
    stride: &[u64],
) -> Vec<T> {
    let mut out = Vec::new();
    for_each_index(count, |k| {
        let mut flat = 0u64;
        for d in 0..dims.len() {
            flat = flat * dims[d] + start[d] + k[d] * stride[d];
        }
        out.push(whole[flat as usize]);
    });
    out
}

/// A 64-bit LCG: reproducible selections.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

/// A selection of `dims`: a random window, a strided one, or one through the last (edge)
/// chunk, by `case`.
fn selection(
    rng: &mut Lcg,
    dims: &[u64],
    chunk: &[u64],
    case: u64,
) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let rank = dims.len();
    let (mut start, mut count, mut stride) = (vec![0; rank], vec![1; rank], vec![1; rank]);
    for d in 0..rank {
        match case % 3 {
            // A window smaller than a chunk, anywhere (often across chunk boundaries).
            0 => {
                count[d] = 1 + rng.below(chunk[d].min(dims[d]) / 4);
                start[d] = rng.below(dims[d] - count[d] + 1);
            }
            // Strided: every 2nd to 4th element over a few chunks' worth.
            1 => {
                stride[d] = 2 + rng.below(3);
                let most = (dims[d] - 1) / stride[d] + 1;
                count[d] = 1 + rng.below(most.min(chunk[d]));
                let span = (count[d] - 1) * stride[d] + 1;
                start[d] = rng.below(dims[d] - span + 1);
            }
            // Through the edge chunk: ending at the last element.
            _ => {
                count[d] = 1 + rng.below(chunk[d].min(dims[d]));
                start[d] = dims[d] - count[d];
            }
        }
    }
    (start, count, stride)
}

/// (dims, max dims, chunk dims) of a dataset of `rank` for `kind`; chunks above half a page
/// (the size partial reads start at) and dims that are no multiple of them (edge chunks).
fn geometry(kind: IndexKind, rank: usize) -> (Vec<u64>, Vec<Option<u64>>, Vec<u64>) {
    let (base, chunk): (Vec<u64>, Vec<u64>) = match rank {
        1 => (vec![10_000], vec![1_500]),
        2 => (vec![300, 250], vec![64, 48]),
        _ => (vec![40, 30, 50], vec![16, 8, 12]),
    };
    match kind {
        IndexKind::Single => (base.clone(), base.iter().map(|&d| Some(d)).collect(), base),
        IndexKind::Implicit | IndexKind::FixedArray => (
            base.clone(),
            base.iter().map(|&d| Some(d + 3)).collect(),
            chunk,
        ),
        IndexKind::ExtensibleArray | IndexKind::SkipList => {
            let mut max: Vec<Option<u64>> = base.iter().map(|&d| Some(d)).collect();
            max[rank - 1] = None;
            (base, max, chunk)
        }
        IndexKind::BTree2 | IndexKind::BTree1 => (base.clone(), vec![None; rank], chunk),
    }
}

fn create(kind: IndexKind, rank: usize) -> (Arc<Counting>, Vec<u64>, Vec<u64>, Vec<i32>) {
    let storage = Arc::new(Counting::default());
    let low = if matches!(kind, IndexKind::BTree1) {
        Libver::Earliest
    } else {
        Libver::Latest
    };
    let opts = FileOptions {
        bounds: LibverBounds::new(low, Libver::Latest).unwrap(),
        ..FileOptions::default()
    };
    let (dims, max, chunk) = geometry(kind, rank);
    let f = opts.create_on(storage.clone()).unwrap();
    let mut b = f
        .new_dataset::<i32>()
        .shape(&dims)
        .max_shape(&max)
        .chunk(&chunk)
        .index(kind);
    if kind == IndexKind::Implicit {
        b = b.alloc_time(AllocTime::Early);
    }
    let d = b.create("d").unwrap();
    assert_eq!(d.index_kind(), Some(kind));
    let values: Vec<i32> = (0..dims.iter().product::<u64>()).map(value).collect();
    d.write(&values).unwrap();
    drop(d);
    f.close().unwrap();
    (storage, dims, chunk, values)
}

fn open(storage: &Arc<Counting>) -> (File, Dataset) {
    let f = OpenOptions::read_only().open_on(storage.clone()).unwrap();
    let d = f.dataset("d").unwrap();
    (f, d)
}

/// Every kind of index, ranks 1 to 3: windows, strided selections and edge selections read
/// from chunks not cached equal the same selections cut from a whole read (every chunk read
/// whole, straight into the output) and the values written; and reading them moved fewer
/// bytes than their chunks hold.
#[rstest]
fn partial_reads_equal_whole_reads(
    #[values(
        IndexKind::BTree1,
        IndexKind::Single,
        IndexKind::Implicit,
        IndexKind::FixedArray,
        IndexKind::ExtensibleArray,
        IndexKind::BTree2,
        IndexKind::SkipList
    )]
    kind: IndexKind,
    #[values(1, 2, 3)] rank: usize,
) {
    let (storage, dims, chunk, values) = create(kind, rank);
    let (f, d) = open(&storage);
    let whole = d.read::<i32>().unwrap();
    assert_eq!(whole, values, "{kind:?} {rank}-D: whole read");
    drop((d, f));
    let chunk_bytes = chunk.iter().product::<u64>() * 4;
    let mut rng = Lcg(rank as u64 * 31 + kind.name().len() as u64);
    let mut fewer = 0;
    let mut previous = None;
    for case in 0..60 {
        // A fresh open every few selections: most chunks are not cached.
        let (f, d) = open(&storage);
        // The index's metadata read first (by a lookup of the last element, in a chunk the
        // windows seldom start in), so what a selection moves is its chunks' bytes. (A single
        // chunk's address is in the layout: nothing to read.)
        if kind != IndexKind::Single {
            let last: Vec<u64> = dims.iter().map(|&n| n - 1).collect();
            d.read_slice::<i32>(&last, &vec![1; rank], None).unwrap();
        }
        for k in 0..3 {
            let (start, count, stride) = selection(&mut rng, &dims, &chunk, case * 3 + k);
            storage.take();
            let got = d.read_slice::<i32>(&start, &count, Some(&stride)).unwrap();
            let (read, ..) = storage.take();
            let want = slab(&whole, &dims, &start, &count, &stride);
            assert_eq!(
                got, want,
                "{kind:?} {rank}-D: start {start:?} count {count:?} stride {stride:?}"
            );
            // Into a buffer too (the loop-of-windows call).
            let mut into = vec![0i32; want.len()];
            d.read_slice_into(&start, &count, Some(&stride), &mut into)
                .unwrap();
            assert_eq!(into, want, "{kind:?} {rank}-D: read_slice_into");
            fewer += u32::from(k == 0 && read < chunk_bytes);
        }
        // Kept open until the next is: its chunk cache is not the next one's (a thread's
        // last miss is noted by cache and chunk).
        previous = Some((d, f));
    }
    drop(previous);
    // The first window after each open reads less than a chunk (the whole-chunk path: never).
    assert!(
        fewer >= 50,
        "{kind:?} {rank}-D: only {fewer} reads moved less than a chunk"
    );
}

/// A 64×64 window of a 512×512 f32 chunk not cached moves its 16 KiB, in one read per row of
/// the window, not the chunk's 1 MiB; a second window of the same chunk (the reader walks it)
/// loads the chunk whole into the cache, and a third costs no read at all.
#[test]
fn window_of_a_large_chunk_reads_its_bytes_only() {
    let storage = Arc::new(Counting::default());
    let f = FileOptions::default().create_on(storage.clone()).unwrap();
    let (n, c) = (1024u64, 512u64);
    let values: Vec<f32> = (0..n * n).map(|i| (i % 1_000_003) as f32).collect();
    let d = f
        .new_dataset::<f32>()
        .shape(&[n, n])
        .chunk(&[c, c])
        .create("d")
        .unwrap();
    d.write(&values).unwrap();
    drop(d);
    f.close().unwrap();

    let f = OpenOptions::read_only().open_on(storage.clone()).unwrap();
    let d = f.dataset("d").unwrap();
    // One element of another chunk first: the chunk index's metadata is then cached.
    let one = d.read_slice::<f32>(&[700, 700], &[1, 1], None).unwrap();
    assert_eq!(one, vec![values[700 * 1024 + 700]]);
    storage.take();
    let window = |r: u64, col: u64| {
        let got = d.read_slice::<f32>(&[r, col], &[64, 64], None).unwrap();
        assert_eq!(got, slab(&values, &[n, n], &[r, col], &[64, 64], &[1, 1]));
        let (bytes, reads, ..) = storage.take();
        (bytes, reads)
    };
    assert_eq!(window(100, 200), (64 * 64 * 4, 64), "first window");
    assert_eq!(
        window(300, 20),
        (c * c * 4, 1),
        "the reader walks the chunk"
    );
    assert_eq!(window(10, 400), (0, 0), "the chunk is cached");

    // A chunk larger than the cache (libhdf5's rule) is never loaded whole for a window,
    // however often the reader comes back.
    drop((d, f));
    let storage = Arc::new(Counting::default());
    let f = FileOptions::default().create_on(storage.clone()).unwrap();
    let big = 2048u64;
    let data: Vec<f32> = (0..big * big).map(|i| (i % 1_000_003) as f32).collect();
    let ds = f
        .new_dataset::<f32>()
        .shape(&[big, big])
        .chunk(&[big, big])
        .create("big")
        .unwrap();
    ds.write(&data).unwrap();
    drop(ds);
    f.close().unwrap();
    let f = OpenOptions::read_only().open_on(storage.clone()).unwrap();
    let ds = f.dataset("big").unwrap();
    ds.read_slice::<f32>(&[0, 0], &[1, 1], None).unwrap();
    for (r, col) in [(5, 9), (70, 900), (1000, 1000)] {
        storage.take();
        let got = ds.read_slice::<f32>(&[r, col], &[64, 64], None).unwrap();
        assert_eq!(got, slab(&data, &[big, big], &[r, col], &[64, 64], &[1, 1]));
        assert_eq!(storage.take().0, 64 * 64 * 4, "window at ({r}, {col})");
    }
}

/// Files h5py wrote (a v1 B-tree index, and with libver='latest' a fixed array and a v2
/// B-tree): windows and strided selections read in part equal the values h5py wrote.
#[test]
fn windows_of_h5py_files() {
    let test = "partial_chunk_io::windows_of_h5py_files";
    let Some(python) = interop::python(test) else {
        return;
    };
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    for latest in [false, true] {
        let path = dir.join(format!("partial_h5py_{latest}.h5"));
        interop::run_python(
            &python,
            r#"
import sys, h5py, numpy as np
kw = {'libver': 'latest'} if sys.argv[2] == 'true' else {}
with h5py.File(sys.argv[1], 'w', **kw) as f:
    a = (np.arange(300 * 500, dtype=np.int64) * 7919 % 100003).astype('<i4').reshape(300, 500)
    f.create_dataset('fixed', data=a, chunks=(128, 160))
    f.create_dataset('grow', data=a, chunks=(128, 160), maxshape=(None, None))
"#,
            &[
                &path.to_string_lossy(),
                if latest { "true" } else { "false" },
            ],
        );
        let whole: Vec<i32> = (0..300u64 * 500)
            .map(|i| (i * 7919 % 100_003) as i32)
            .collect();
        let mut rng = Lcg(7);
        for name in ["fixed", "grow"] {
            let f = File::open(&path).unwrap();
            let d = f.dataset(name).unwrap();
            for case in 0..30 {
                let (start, count, stride) = selection(&mut rng, &[300, 500], &[128, 160], case);
                let got = d.read_slice::<i32>(&start, &count, Some(&stride)).unwrap();
                assert_eq!(
                    got,
                    slab(&whole, &[300, 500], &start, &count, &stride),
                    "{name} latest={latest}: {start:?} {count:?} {stride:?}"
                );
            }
        }
        let _ = std::fs::remove_file(&path);
    }
}

/// Every kind of index, ranks 1 to 3: windows, strided selections and edge selections written
/// into stored chunks that are not cached (written as runs in place) leave the dataset as the
/// same writes applied to an array in memory, after a reopen; and the writes moved fewer
/// bytes than whole chunks.
#[rstest]
fn partial_writes_land_where_they_should(
    #[values(
        IndexKind::BTree1,
        IndexKind::Single,
        IndexKind::Implicit,
        IndexKind::FixedArray,
        IndexKind::ExtensibleArray,
        IndexKind::BTree2,
        IndexKind::SkipList
    )]
    kind: IndexKind,
    #[values(1, 2, 3)] rank: usize,
) {
    let (storage, dims, chunk, mut expect) = create(kind, rank);
    let chunk_bytes = chunk.iter().product::<u64>() * 4;
    let mut rng = Lcg(rank as u64 * 17 + kind.name().len() as u64);
    let mut fewer = 0;
    for round in 0..20 {
        // A fresh open each round: most chunks are not cached.
        let f = OpenOptions::read_write().open_on(storage.clone()).unwrap();
        let d = f.dataset("d").unwrap();
        if kind != IndexKind::Single {
            let last: Vec<u64> = dims.iter().map(|&n| n - 1).collect();
            d.read_slice::<i32>(&last, &vec![1; rank], None).unwrap();
        }
        for k in 0..3 {
            let (start, count, stride) = selection(&mut rng, &dims, &chunk, round * 3 + k);
            let n: u64 = count.iter().product();
            let base = -((round * 3 + k) as i32 + 1) * 1_000_000;
            let values: Vec<i32> = (0..n as i32).map(|v| base - v).collect();
            storage.take();
            d.write_slice(&values, &start, &count, Some(&stride))
                .unwrap();
            let (read, _, written, _) = storage.take();
            // Written at once, without loading the chunk (the cached path writes nothing
            // until the chunk leaves the cache).
            fewer +=
                u32::from(k == 0 && written > 0 && written < chunk_bytes && read < chunk_bytes);
            let mut i = 0;
            for_each_index(&count, |c| {
                let mut flat = 0u64;
                for a in 0..rank {
                    flat = flat * dims[a] + start[a] + c[a] * stride[a];
                }
                expect[flat as usize] = values[i];
                i += 1;
            });
            // Read back at once, from the same handle.
            assert_eq!(
                d.read_slice::<i32>(&start, &count, Some(&stride)).unwrap(),
                values,
                "{kind:?} {rank}-D: {start:?} {count:?} {stride:?} read back"
            );
        }
        drop(d);
        f.close().unwrap();
        let (f, d) = open(&storage);
        assert_eq!(
            d.read::<i32>().unwrap(),
            expect,
            "{kind:?} {rank}-D: after round {round}"
        );
        drop((d, f));
    }
    // The first write after each open (a window, of less than a quarter of a chunk) wrote
    // only its runs, reading nothing.
    assert!(
        fewer >= 15,
        "{kind:?} {rank}-D: only {fewer} writes moved less than a chunk"
    );
}

/// A 64×64 window written into a stored 512×512 f32 chunk that is not cached writes its
/// 16 KiB in 64 writes, reading nothing; a strided window reads and writes back the span of
/// each of its rows only. h5py reads the result.
#[test]
fn window_write_into_a_large_chunk_writes_its_bytes_only() {
    let test = "partial_chunk_io::window_write_into_a_large_chunk_writes_its_bytes_only";
    let (n, c) = (1024u64, 512u64);
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("partial_window_write.h5");
    let mut expect: Vec<f32> = (0..n * n).map(|i| (i % 1_000_003) as f32).collect();
    let f = File::create(&path).unwrap();
    let d = f
        .new_dataset::<f32>()
        .shape(&[n, n])
        .chunk(&[c, c])
        .create("d")
        .unwrap();
    d.write(&expect).unwrap();
    drop(d);
    f.close().unwrap();

    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let storage = Arc::new(Counting {
        inner: Box::new(h5chunk::storage::FileStorage::new(file)),
        ..Counting::default()
    });
    let f = OpenOptions::read_write().open_on(storage.clone()).unwrap();
    let d = f.dataset("d").unwrap();
    // The index's metadata first (a lookup in another chunk).
    d.read_slice::<f32>(&[700, 700], &[1, 1], None).unwrap();
    storage.take();
    let window: Vec<f32> = (0..64 * 64).map(|i| -(i as f32)).collect();
    d.write_slice(&window, &[100, 200], &[64, 64], None)
        .unwrap();
    let (read, _, written, writes) = storage.take();
    assert_eq!((read, written, writes), (0, 64 * 64 * 4, 64), "window");
    for r in 0..64 {
        for col in 0..64 {
            expect[((100 + r) * n + 200 + col) as usize] = window[(r * 64 + col) as usize];
        }
    }
    // Strided: every 2nd element of every 2nd row, 32×32, in another chunk.
    let strided: Vec<f32> = (0..32 * 32).map(|i| -(i as f32) - 0.5).collect();
    d.write_slice(&strided, &[600, 10], &[32, 32], Some(&[2, 2]))
        .unwrap();
    let (read, reads, written, writes) = storage.take();
    let span = (31 * 2 + 1) * 4;
    assert_eq!(
        (read, reads),
        (32 * span, 32),
        "strided: each row's span read"
    );
    assert_eq!(
        (written, writes),
        (32 * span, 32),
        "strided: and written back"
    );
    for r in 0..32 {
        for col in 0..32 {
            expect[((600 + 2 * r) * n + 10 + 2 * col) as usize] = strided[(r * 32 + col) as usize];
        }
    }
    assert_eq!(d.read::<f32>().unwrap(), expect, "read back before closing");
    drop(d);
    f.close().unwrap();

    // With a journal, an in-place write outside a flush would first copy what it overwrites
    // into the journal, run by run: the window waits in the chunk cache instead, and the
    // close journals and writes its chunk in one batch.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let storage = Arc::new(Counting {
        inner: Box::new(h5chunk::storage::FileStorage::new(file)),
        ..Counting::default()
    });
    let journal = Arc::new(Counting::default());
    let f = OpenOptions::read_write()
        .open_on_journaled(storage.clone(), journal.clone())
        .unwrap();
    let d = f.dataset("d").unwrap();
    d.read_slice::<f32>(&[700, 700], &[1, 1], None).unwrap();
    storage.take();
    journal.take();
    let again: Vec<f32> = (0..64 * 64).map(|i| i as f32 + 0.25).collect();
    d.write_slice(&again, &[300, 900], &[64, 64], None).unwrap();
    assert_eq!(
        storage.take().2,
        0,
        "journaled: nothing written before the flush"
    );
    assert_eq!(
        journal.take().2,
        0,
        "journaled: nothing journaled before the flush"
    );
    for r in 0..64 {
        for col in 0..64 {
            expect[((300 + r) * n + 900 + col) as usize] = again[(r * 64 + col) as usize];
        }
    }
    drop(d);
    f.close().unwrap();
    assert!(journal.take().2 > 0, "the close journaled the chunk");

    let f = File::open(&path).unwrap();
    assert_eq!(f.dataset("d").unwrap().read::<f32>().unwrap(), expect);
    drop(f);
    if let Some(python) = interop::python(test) {
        let le: Vec<u8> = expect.iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(
            h5chunk_testkit::h5py::values_le(&python, &path, "d"),
            le,
            "h5py"
        );
    }
    if let Some(h5dump) = interop::h5dump(test) {
        interop::h5dump_ok(&h5dump, &path);
    }
    let _ = std::fs::remove_file(&path);
}

/// A sparse stride (a few elements far apart in one large chunk) reads and writes the right
/// values through the whole-chunk paths: the runs' span would size a buffer far larger than
/// the selection.
#[test]
fn sparse_strides_take_the_whole_chunk_paths() {
    let storage = Arc::new(Counting::default());
    let f = FileOptions::default().create_on(storage.clone()).unwrap();
    let n = 100_000u64;
    let mut values: Vec<i32> = (0..n).map(value).collect();
    let d = f
        .new_dataset::<i32>()
        .shape(&[n])
        .chunk(&[n])
        .create("d")
        .unwrap();
    d.write(&values).unwrap();
    drop(d);
    f.close().unwrap();
    let f = OpenOptions::read_write().open_on(storage.clone()).unwrap();
    let d = f.dataset("d").unwrap();
    let got = d.read_slice::<i32>(&[5], &[3], Some(&[40_000])).unwrap();
    assert_eq!(got, vec![values[5], values[40_005], values[80_005]]);
    d.write_slice(&[-1i32, -2, -3], &[7], &[3], Some(&[40_000]))
        .unwrap();
    for (k, v) in [-1, -2, -3].into_iter().enumerate() {
        values[7 + 40_000 * k] = v;
    }
    drop(d);
    f.close().unwrap();
    let (f, d) = open(&storage);
    assert_eq!(d.read::<i32>().unwrap(), values);
    drop((d, f));
}

/// A read that loads more unfiltered chunks than the chunk cache holds (a whole dataset of
/// 1 MiB chunks, 10 MiB against the default 8 MiB) reads each chunk selected whole with one
/// vectored read straight into the output, and reads only the in-extent bytes of edge chunks;
/// it caches none of them (a window afterwards reads from the storage). The values equal what
/// was written, for a grid of whole chunks and one with edge chunks.
#[test]
fn bulk_reads_pass_the_cache_one_read_per_chunk() {
    for (rows, cols) in [(2560u64, 1024u64), (2600, 1300)] {
        let mem = Arc::new(MemStorage::new());
        let f = FileOptions::default()
            .create_on(Arc::clone(&mem) as Arc<dyn Storage>)
            .unwrap();
        let data: Vec<f32> = (0..rows * cols).map(|i| (i % 1_000_003) as f32).collect();
        let d = f
            .new_dataset::<f32>()
            .shape(&[rows, cols])
            .chunk(&[512, 512])
            .create("d")
            .unwrap();
        d.write(&data).unwrap();
        drop(d);
        f.close().unwrap();

        let f = OpenOptions::read_only()
            .open_on(Arc::clone(&mem) as Arc<dyn Storage>)
            .unwrap();
        let d = f.dataset("d").unwrap();
        // The index's metadata first.
        d.read_slice::<f32>(&[0, 0], &[1, 1], None).unwrap();
        let before = f.io_stats();
        let mut got = vec![0f32; data.len()];
        d.read_slice_into(&[0, 0], &[rows, cols], None, &mut got)
            .unwrap();
        assert!(got == data, "{rows}x{cols}: the values written");
        let after = f.io_stats();
        assert_eq!(
            after.bytes_read - before.bytes_read,
            rows * cols * 4,
            "{rows}x{cols}: exactly the dataset's bytes"
        );
        if rows % 512 == 0 && cols % 512 == 0 {
            assert_eq!(
                after.reads - before.reads,
                (rows / 512) * (cols / 512),
                "one read a chunk"
            );
        }
        // Not cached: a window of the last chunk read goes to the storage.
        let w = d
            .read_slice::<f32>(&[rows - 100, cols - 100], &[64, 64], None)
            .unwrap();
        assert_eq!(
            w,
            slab(
                &data,
                &[rows, cols],
                &[rows - 100, cols - 100],
                &[64, 64],
                &[1, 1]
            )
        );
        assert!(f.io_stats().bytes_read > after.bytes_read, "window read");
    }
}

/// One-element reads (the lookup path, whose chunk coordinates live on the stack up to rank
/// 8) of every element of datasets of ranks 1 to 9 (9: past that array, the general path)
/// with edge chunks, reopened (nothing cached), equal the values written; a start outside
/// the extent is a typed error of either path, not a panic or a fill value.
#[test]
fn one_element_reads_of_ranks_one_to_nine_read_what_was_written() {
    for rank in 1..=9usize {
        // Three elements a side in chunks of two: every dimension has an edge chunk.
        let dims = vec![3u64; rank];
        let chunk = vec![2u64; rank];
        let storage = Arc::new(Counting::default());
        let f = FileOptions::default().create_on(storage.clone()).unwrap();
        let max: Vec<Option<u64>> = vec![None; rank];
        let d = f
            .new_dataset::<i32>()
            .shape(&dims)
            .max_shape(&max)
            .chunk(&chunk)
            .create("d")
            .unwrap();
        let values: Vec<i32> = (0..dims.iter().product::<u64>()).map(value).collect();
        d.write(&values).unwrap();
        drop(d);
        f.close().unwrap();
        let (_f, d) = open(&storage);
        let ones = vec![1u64; rank];
        let mut i = 0usize;
        for_each_index(&dims, |at| {
            let mut got = [0i32];
            d.read_slice_into(at, &ones, None, &mut got).unwrap();
            assert_eq!(got[0], values[i], "rank {rank}, element {at:?}");
            i += 1;
        });
        assert_eq!(i, values.len());
        let mut outside = vec![0u64; rank];
        outside[rank - 1] = 3;
        let mut got = [0i32];
        assert!(
            d.read_slice_into(&outside, &ones, None, &mut got).is_err(),
            "rank {rank}: a start past the extent"
        );
    }
}

/// One-element reads of a big-endian int32 dataset (the lookup path reads the element into
/// the caller's value, then puts its bytes in host order) and of a little-endian one read
/// as another type (the general path converts) equal the values written.
#[test]
fn one_element_reads_put_big_endian_values_in_host_order() {
    use h5chunk::types::{ByteOrder, Datatype};
    let storage = Arc::new(Counting::default());
    let f = FileOptions::default().create_on(storage.clone()).unwrap();
    let values: Vec<i32> = (0..40).map(value).collect();
    let d = f
        .new_dataset_with_type(Datatype::int(4, true, ByteOrder::BigEndian))
        .shape(&[40])
        .chunk(&[8])
        .create("d")
        .unwrap();
    d.write(&values).unwrap();
    drop(d);
    f.close().unwrap();
    let (_f, d) = open(&storage);
    for (i, &v) in values.iter().enumerate() {
        let mut got = [0i32];
        d.read_slice_into(&[i as u64], &[1], None, &mut got)
            .unwrap();
        assert_eq!(got[0], v, "element {i}");
        // The same element as int64: converted, not reinterpreted.
        let mut wide = [0i64];
        d.read_slice_into(&[i as u64], &[1], None, &mut wide)
            .unwrap();
        assert_eq!(wide[0], i64::from(v), "element {i} as int64");
    }
}

/// Lookups of one element in the storage's last page when that page is short (a fixed dataset
/// of 1-byte chunks, allocated early, whose chunks end the file): the first lookup reads the
/// page, the next ones in it read nothing from the storage. (The page cache used to refuse a
/// page running past the storage's end: each such lookup read a page that failed, then the
/// element, two reads.)
#[test]
fn lookups_in_a_short_last_page_read_the_storage_once() {
    let storage = Arc::new(Counting::default());
    let f = FileOptions::default().create_on(storage.clone()).unwrap();
    let n = 6_000u64;
    let d = f
        .new_dataset::<u8>()
        .shape(&[n])
        .max_shape(&[Some(n)])
        .chunk(&[1])
        .index(IndexKind::Implicit)
        .alloc_time(AllocTime::Early)
        .create("d")
        .unwrap();
    assert_eq!(d.index_kind(), Some(IndexKind::Implicit));
    let values: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
    d.write(&values).unwrap();
    drop(d);
    f.close().unwrap();
    let (_f, d) = open(&storage);
    let page = 4096u64;
    let end = storage.inner.len().unwrap();
    assert_ne!(end % page, 0, "the last page is short");
    let last_page = (end - 1) / page;
    let chunks = d.chunks().unwrap();
    let in_last: Vec<u64> = chunks
        .iter()
        .filter(|c| c.addr.get() / page == last_page)
        .map(|c| c.offset[0])
        .collect();
    assert!(
        in_last.len() >= 3,
        "{} chunks in the last page",
        in_last.len()
    );
    let mut got = [0u8];
    d.read_slice_into(&[in_last[0]], &[1], None, &mut got)
        .unwrap();
    assert_eq!(got[0], values[in_last[0] as usize]);
    storage.take();
    for &at in in_last.iter().rev() {
        d.read_slice_into(&[at], &[1], None, &mut got).unwrap();
        assert_eq!(got[0], values[at as usize], "element {at}");
    }
    assert_eq!(storage.take().1, 0, "storage reads after the first lookup");
}
