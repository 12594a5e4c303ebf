//! Crash simulation: for every chunk index, a file with a completed flush is changed (new
//! chunks, chunks rewritten in place, index blocks evicted from a small metadata cache) and
//! flushed again, and the write stream (the file's and its journal's, in one sequence) is cut
//! at every write and, torn, after every byte of it. After each cut the file is reopened (which applies the
//! journal) and must hold exactly the values of the last completed flush: the first one when
//! the cut fell before the second flush returned, the second one after.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::sync::Arc;

use h5chunk::libver::{Libver, LibverBounds};
use h5chunk::storage::{MemStorage, Storage};
use h5chunk::{Durability, File, FileOptions, IndexKind, OpenOptions};
use h5chunk_cache::FaultyStorage;

const CHUNK: [u64; 2] = [4, 3];

/// (dims before, dims after the second flush, max dims) of the 2-D dataset for `kind`.
fn geometry(kind: IndexKind) -> ([u64; 2], [u64; 2], Vec<Option<u64>>) {
    match kind {
        IndexKind::Single => ([8, 6], [8, 6], vec![Some(8), Some(6)]),
        IndexKind::Implicit | IndexKind::FixedArray => ([9, 7], [12, 10], vec![Some(12), Some(10)]),
        IndexKind::ExtensibleArray | IndexKind::SkipList => ([9, 7], [9, 16], vec![Some(9), None]),
        IndexKind::BTree1 | IndexKind::BTree2 => ([9, 7], [15, 13], vec![None, None]),
    }
}

fn options(kind: IndexKind) -> FileOptions {
    let low = if kind == IndexKind::BTree1 {
        Libver::Earliest
    } else {
        Libver::Latest
    };
    FileOptions {
        bounds: LibverBounds::new(low, Libver::Latest).unwrap(),
        // Small: index blocks are written (in place) and evicted between the flushes too.
        metadata_cache_bytes: Some(1024),
        durability: Durability::Sync,
        ..FileOptions::default()
    }
}

/// The first flush's values, then the second's (a rewritten first row and the new area).
fn values(dims: [u64; 2], second: bool) -> Vec<i32> {
    let mut out = Vec::new();
    for i in 0..dims[0] {
        for j in 0..dims[1] {
            let v = (i * 1_000 + j) as i32;
            out.push(if second && i == 0 { -v - 1 } else { v });
        }
    }
    out
}

/// Create the file and flush it with the first values (not cut).
fn first(kind: IndexKind, main: Arc<dyn Storage>, journal: Arc<dyn Storage>) -> File {
    let (d0, _, max) = geometry(kind);
    let f = options(kind).create_on_journaled(main, journal).unwrap();
    // A single chunk covers the whole dataset.
    let chunk = if kind == IndexKind::Single { d0 } else { CHUNK };
    let mut b = f
        .new_dataset::<i32>()
        .shape(&d0)
        .max_shape(&max)
        .chunk(&chunk);
    if !matches!(kind, IndexKind::BTree1 | IndexKind::FixedArray) {
        b = b.index(kind);
    }
    if matches!(kind, IndexKind::Implicit | IndexKind::Single) {
        b = b.alloc_time(h5chunk::AllocTime::Early);
    }
    let d = b.create("d").unwrap();
    assert_eq!(d.index_kind(), Some(kind));
    d.write(&values(d0, false)).unwrap();
    f.flush().unwrap();
    f
}

/// Grow, rewrite the first row in place and write the new area, then flush. Errors are
/// ignored: after a simulated crash reads may see lost writes.
fn second(kind: IndexKind, f: &File) {
    let (_, d1, _) = geometry(kind);
    let Ok(d) = f.dataset("d") else { return };
    if d.resize(&d1).is_err() {
        return;
    }
    let _ = d.write(&values(d1, true));
    let _ = f.flush();
}

struct Run {
    main: MemStorage,
    journal: MemStorage,
    /// Lengths of the writes after the first flush, in order.
    writes: Vec<usize>,
    /// How many of them the second flush had made when it returned.
    by_second_flush: usize,
}

/// The whole scenario, with the write stream after the first flush cut at write `n` (1 =
/// the first) with `keep` of its bytes persisted.
fn run(kind: IndexKind, cut: Option<(u64, usize)>) -> Run {
    let (main, journal) = (MemStorage::new(), MemStorage::new());
    let fm = Arc::new(FaultyStorage::new(main.clone()));
    let fj = Arc::new(fm.sibling(journal.clone()));
    let f = first(kind, fm.clone(), fj);
    fm.clear_writes();
    if let Some((n, keep)) = cut {
        fm.crash_at_write(n, keep);
    }
    second(kind, &f);
    let by_second_flush = fm.writes().len();
    drop(f);
    Run {
        main,
        journal,
        writes: fm.writes().iter().map(|w| w.len).collect(),
        by_second_flush,
    }
}

/// Reopen what survived and read the dataset (the writable open applies the journal).
fn survivor(r: &Run) -> Result<(Vec<u64>, Vec<i32>), String> {
    // The writer died with the file marked open for writing: rolled back to the last flush,
    // then the flags cleared, as `h5chunk clear` does.
    h5chunk_cache::recover(
        &r.main,
        &h5chunk_cache::JournalPlace::Storage(Arc::new(r.journal.clone())),
    )
    .map_err(|e| format!("recover: {e}"))?;
    File::clear_consistency_flags_on(&r.main).map_err(|e| format!("clear: {e}"))?;
    let f = OpenOptions::read_write()
        .open_on_journaled(Arc::new(r.main.clone()), Arc::new(r.journal.clone()))
        .map_err(|e| format!("open: {e}"))?;
    let d = f.dataset("d").map_err(|e| format!("dataset: {e}"))?;
    let v = d.read::<i32>().map_err(|e| format!("read: {e}"))?;
    Ok((d.shape(), v))
}

fn crash_everywhere(kind: IndexKind) {
    let clean = run(kind, None);
    let (d0, d1, _) = geometry(kind);
    let (v1, v2) = (values(d0, false), values(d1, true));
    assert_eq!(
        survivor(&clean),
        Ok((d1.to_vec(), v2.clone())),
        "{kind:?}: no cut"
    );
    assert!(
        clean.writes.len() >= 3,
        "{kind:?}: only {} writes",
        clean.writes.len()
    );
    let mut cases = 0;
    for (i, &len) in clean.writes.iter().enumerate() {
        let n = i as u64 + 1;
        // Torn after every byte (0: the write never happened).
        for keep in 0..len {
            let r = run(kind, Some((n, keep)));
            let want = if i < clean.by_second_flush {
                (d0.to_vec(), v1.clone())
            } else {
                (d1.to_vec(), v2.clone())
            };
            let got = survivor(&r);
            assert_eq!(
                got.as_ref().map(|(s, _)| s),
                Ok(&want.0),
                "{kind:?}: cut at write {n} of {} ({len} bytes) keeping {keep}",
                clean.writes.len()
            );
            assert!(
                got.as_ref().is_ok_and(|g| g.1 == want.1),
                "{kind:?}: wrong values after a cut at write {n} keeping {keep}"
            );
            // The journal was applied and removed: a read-only open works.
            assert!(r.journal.to_vec().is_empty() || survivor(&r).is_ok());
            cases += 1;
        }
    }
    eprintln!(
        "{kind:?}: {} writes after the first flush, {cases} cuts, every one back to the last \
         completed flush",
        clean.writes.len()
    );
}

#[test]
fn cut_extensible_array() {
    crash_everywhere(IndexKind::ExtensibleArray);
}

#[test]
fn cut_btree1() {
    crash_everywhere(IndexKind::BTree1);
}

#[test]
fn cut_btree2() {
    crash_everywhere(IndexKind::BTree2);
}

#[test]
fn cut_fixed_array() {
    crash_everywhere(IndexKind::FixedArray);
}

#[test]
fn cut_implicit() {
    crash_everywhere(IndexKind::Implicit);
}

#[test]
fn cut_single() {
    crash_everywhere(IndexKind::Single);
}

#[test]
fn cut_skip_list() {
    crash_everywhere(IndexKind::SkipList);
}

/// Without a journal the same cut can destroy flushed data: the suite above tests something.
#[test]
fn without_the_journal_a_cut_loses_flushed_values() {
    let kind = IndexKind::ExtensibleArray;
    let (d0, _, _) = geometry(kind);
    let mut lost = 0;
    for n in 1..40u64 {
        let main = MemStorage::new();
        let fm = Arc::new(FaultyStorage::new(main.clone()));
        let opts = FileOptions {
            durability: Durability::None,
            ..options(kind)
        };
        let f = opts.create_on(fm.clone()).unwrap();
        let d = f
            .new_dataset::<i32>()
            .shape(&d0)
            .max_shape(&geometry(kind).2)
            .chunk(&CHUNK)
            .index(kind)
            .create("d")
            .unwrap();
        d.write(&values(d0, false)).unwrap();
        f.flush().unwrap();
        drop(d);
        fm.crash_at_write(n, 3);
        second(kind, &f);
        drop(f);
        // The first flush's area must read back as it was flushed.
        let ok = OpenOptions::read_only()
            .open_on(Arc::new(main.clone()))
            .and_then(|f| f.dataset("d")?.read_slice::<i32>(&[0, 0], &d0, None))
            .is_ok_and(|v| v == values(d0, false));
        if !ok {
            lost += 1;
        }
    }
    assert!(lost > 0, "no cut lost anything without the journal");
}

/// A file on a path keeps its journal beside it, `<file>.h5chunk-journal`, only while a flush
/// overwrites flushed data; a journal left by an interrupted flush is refused by a read-only
/// open (with the way out in the message) and applied by a writable open or `File::recover`.
#[test]
fn a_file_on_a_path_recovers_from_its_sidecar_journal() {
    use h5chunk_cache::{FileStorage, JournalPlace, Journaled};
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join("crash_sidecar.h5");
    let side = dir.join("crash_sidecar.h5.h5chunk-journal");
    let f = File::create(&path).unwrap();
    let d = f
        .new_dataset::<i32>()
        .shape(&[9, 7])
        .max_shape(&[None, Some(7)])
        .chunk(&CHUNK)
        .create("d")
        .unwrap();
    d.write(&values([9, 7], false)).unwrap();
    f.flush().unwrap();
    assert!(!side.exists(), "no journal after a completed flush");
    // Rewriting flushed chunks in place journals them during the flush only.
    d.write_slice(&[-5i32; 3], &[0, 0], &[1, 3], None).unwrap();
    drop((d, f));
    assert!(!side.exists(), "no journal after closing");
    let flushed = std::fs::read(&path).unwrap();

    // An interrupted flush: bytes of the superblock overwritten after their originals were
    // journaled, and no commit.
    let interrupt = || {
        let raw = std::fs::File::options()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let j = Journaled::new(
            Arc::new(FileStorage::new(raw)),
            JournalPlace::beside(&path),
            Durability::Sync,
        )
        .unwrap();
        j.write_at(h5chunk_format::Addr(0), &[0xee; 16]).unwrap();
        j.set_len(100).unwrap();
    };
    interrupt();
    assert!(side.exists());
    let err = File::open(&path).unwrap_err();
    assert!(
        matches!(err, h5chunk::Error::NeedsRecovery { .. }) && err.to_string().contains("recover"),
        "{err}"
    );
    let f = File::open_rw(&path).unwrap();
    let mut want = values([9, 7], false);
    want[..3].copy_from_slice(&[-5; 3]);
    assert_eq!(f.dataset("d").unwrap().read::<i32>().unwrap(), want);
    drop(f);
    assert!(!side.exists());

    interrupt();
    let r = File::recover(&path).unwrap().unwrap();
    assert_eq!(r.durable_len, flushed.len() as u64);
    assert_eq!(std::fs::read(&path).unwrap(), flushed);
    assert_eq!(File::recover(&path).unwrap(), None);
    let f = File::open(&path).unwrap();
    assert_eq!(f.dataset("d").unwrap().read::<i32>().unwrap(), want);
}
