//! h5chunk as a SWMR writer, and the open rules every writer follows: the superblock's
//! consistency flags and the file lock, as libhdf5 sets, takes and checks them, seen from
//! h5py in another process; `start_swmr_write` and its refusals (superblock version, v1
//! B-tree chunk indexes, new objects); chunks never rewritten in place under a reader.
//!
//! The long runs (every index kind, h5chunk and h5py readers in their own processes, values
//! checked as they appear) are `cargo xtask swmr-soak`, with a short run inside
//! `cargo xtask test`.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::path::{Path, PathBuf};
use std::process::Command;

use h5chunk::libver::{Libver, LibverBounds};
use h5chunk::{Error, File, FileOptions, FilterSpec, IndexKind, OpenOptions};
use h5chunk_testkit::interop;

/// A fresh directory for one test case.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("h5chunk_swmr_write_{}_{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The superblock's consistency flags as stored (versions 0 to 3).
fn flags(path: &Path) -> u32 {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..8], b"\x89HDF\r\n\x1a\n");
    if b[8] >= 2 {
        u32::from(b[11])
    } else {
        u32::from_le_bytes(b[20..24].try_into().unwrap())
    }
}

fn latest() -> FileOptions {
    FileOptions {
        bounds: LibverBounds::new(Libver::V110, Libver::Latest).unwrap(),
        ..FileOptions::default()
    }
}

/// Run `script` with the file as its argument and `env` set; (success, stdout + stderr).
fn python(py: &Path, script: &str, path: &Path, env: &[(&str, &str)]) -> (bool, String) {
    let out = Command::new(py)
        .arg("-c")
        .arg(script)
        .arg(path)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

const H5PY_READ: &str = r#"
import sys, h5py
with h5py.File(sys.argv[1], 'r') as f:
    print(f['x'][:].tolist())
"#;

const H5PY_SWMR_READ: &str = r#"
import sys, h5py
with h5py.File(sys.argv[1], 'r', swmr=True) as f:
    print(f['x'][:].tolist())
"#;

#[test]
fn a_swmr_writer_is_flagged_unlocked_and_followed_by_h5py() {
    let dir = scratch("writer");
    let path = dir.join("w.h5");
    let f = File::create_with(
        &path,
        FileOptions {
            swmr_write: true,
            trace: true,
            ..FileOptions::default()
        },
    )
    .unwrap();
    // libhdf5 raises a SWMR create to superblock 3 and V110 bounds: an extensible array here.
    assert_eq!(f.superblock_version(), 3);
    assert!(f.is_swmr_write());
    let d = f
        .new_dataset::<i64>()
        .shape(&[0])
        .max_shape(&[None])
        .chunk(&[4])
        .create("x")
        .unwrap();
    assert_eq!(d.index_kind(), Some(IndexKind::ExtensibleArray));
    d.append(&[1i64, 2, 3, 4, 5]).unwrap();
    f.flush().unwrap();
    h5chunk_cache::check_write_order(&f.take_write_trace()).unwrap();
    assert_eq!(flags(&path), 0x05, "write and SWMR-write bits");
    // Objects may still be created until SWMR writing is started explicitly.
    f.create_group("g").unwrap();
    f.start_swmr_write().unwrap();
    assert!(matches!(
        f.create_group("g2"),
        Err(Error::SwmrNewObject { what: "group", .. })
    ));
    assert!(matches!(
        f.new_dataset::<i32>().shape(&[1]).create("y"),
        Err(Error::SwmrNewObject {
            what: "dataset",
            ..
        })
    ));
    assert!(matches!(
        d.attrs().set_scalar("units", 1i32),
        Err(Error::SwmrNewObject {
            what: "attribute",
            ..
        })
    ));
    d.append(&[6i64]).unwrap();
    f.flush().unwrap();
    h5chunk_cache::check_write_order(&f.take_write_trace()).unwrap();
    if let Some(py) = interop::python("a_swmr_writer_is_flagged_unlocked_and_followed_by_h5py") {
        // No lock held: a SWMR reader gets in; a plain reader is refused by the flags.
        let (ok, out) = python(&py, H5PY_SWMR_READ, &path, &[]);
        assert!(ok, "{out}");
        assert!(out.contains("[1, 2, 3, 4, 5, 6]"), "{out}");
        let (ok, out) = python(&py, H5PY_READ, &path, &[]);
        assert!(!ok && out.contains("already open for write"), "{out}");
    }
    // In this process, a second open for writing shares the SWMR writer's open file, as
    // libhdf5's does (another process's is refused by the flags, as h5py's is above).
    let again = File::open_rw(&path).unwrap();
    assert_eq!(
        again.dataset("x").unwrap().read::<i64>().unwrap(),
        [1, 2, 3, 4, 5, 6]
    );
    drop(again);
    f.close().unwrap();
    assert_eq!(flags(&path), 0, "cleared at close");
    // A handle that outlived the close reads, and refuses changes.
    assert_eq!(d.read::<i64>().unwrap(), vec![1, 2, 3, 4, 5, 6]);
    assert!(matches!(d.append(&[7i64]), Err(Error::Closed { .. })));
    if let Some(py) = interop::python("a_swmr_writer_is_flagged_unlocked_and_followed_by_h5py") {
        let (ok, out) = python(&py, H5PY_READ, &path, &[]);
        assert!(ok && out.contains("[1, 2, 3, 4, 5, 6]"), "{out}");
    }
}

#[test]
fn a_plain_writer_is_locked_and_flagged_as_libhdf5_does() {
    let dir = scratch("plain");
    for (name, options, v3) in [
        ("v0.h5", FileOptions::default(), false),
        ("v3.h5", latest(), true),
    ] {
        let path = dir.join(name);
        let f = File::create_with(&path, options).unwrap();
        let d = f
            .new_dataset::<i64>()
            .shape(&[0])
            .max_shape(&[None])
            .chunk(&[4])
            .create("x")
            .unwrap();
        d.append(&[7i64, 8]).unwrap();
        f.flush().unwrap();
        assert_eq!(flags(&path), 0x01, "{name}: the write bit, set at open");
        // The lock: another open file description (another process's) cannot share it.
        let other = std::fs::File::open(&path).unwrap();
        assert!(
            matches!(
                other.try_lock_shared(),
                Err(std::fs::TryLockError::WouldBlock)
            ),
            "{name}"
        );
        drop(other);
        // In this process, a second open shares the open file instead, as libhdf5's does.
        let again = File::open(&path).unwrap();
        assert_eq!(again.dataset("x").unwrap().read::<i64>().unwrap(), [7, 8]);
        drop(again);
        if let Some(py) = interop::python("a_plain_writer_is_locked_and_flagged_as_libhdf5_does") {
            let (ok, out) = python(&py, H5PY_READ, &path, &[]);
            assert!(!ok && out.contains("unable to lock file"), "{name}: {out}");
            // Without locks the flags decide: libhdf5 checks them in version 3 only.
            let (ok, out) = python(&py, H5PY_READ, &path, &[("HDF5_USE_FILE_LOCKING", "FALSE")]);
            if v3 {
                assert!(
                    !ok && out.contains("already open for write"),
                    "{name}: {out}"
                );
            } else {
                assert!(ok && out.contains("[7, 8]"), "{name}: {out}");
            }
        }
        // SWMR writing needs superblock 3.
        let started = f.start_swmr_write();
        if v3 {
            started.unwrap();
            assert_eq!(flags(&path), 0x05);
            assert!(File::open_with(&path, OpenOptions::swmr_read()).is_ok());
        } else {
            assert!(
                matches!(started, Err(Error::SwmrVersion { version: 0, .. })),
                "{started:?}"
            );
        }
        f.close().unwrap();
        assert_eq!(flags(&path), 0, "{name}: cleared at close");
        assert!(
            matches!(
                File::open_with(&path, OpenOptions::swmr_write()),
                Err(Error::SwmrVersion { version: 0, .. })
            ) != v3
        );
    }
}

#[test]
fn swmr_writing_refuses_version_1_b_trees() {
    let dir = scratch("btree1");
    let path = dir.join("b.h5");
    let f = File::create_with(&path, latest()).unwrap();
    for (name, kind) in [
        ("old", IndexKind::BTree1),
        ("new", IndexKind::ExtensibleArray),
    ] {
        f.new_dataset::<i32>()
            .shape(&[0])
            .max_shape(&[None])
            .chunk(&[8])
            .index(kind)
            .create(name)
            .unwrap()
            .append(&[1i32, 2, 3])
            .unwrap();
    }
    f.close().unwrap();
    // Open with the v1 B-tree dataset open: refused, as libhdf5 refuses it.
    let f = File::open_rw(&path).unwrap();
    let _old = f.dataset("old").unwrap();
    assert!(matches!(
        f.start_swmr_write(),
        Err(Error::SwmrIndex { ref dataset, .. }) if dataset == "/old"
    ));
    f.close().unwrap();
    // Opened for SWMR writing: the v1 B-tree dataset does not open; the other does.
    let f = File::open_with(&path, OpenOptions::swmr_write()).unwrap();
    assert!(matches!(f.dataset("old"), Err(Error::SwmrIndex { .. })));
    let d = f.dataset("new").unwrap();
    d.append(&[4i32]).unwrap();
    f.close().unwrap();
    let f = File::open(&path).unwrap();
    assert_eq!(
        f.dataset("new").unwrap().read::<i32>().unwrap(),
        vec![1, 2, 3, 4]
    );
    // Nor does a SWMR-write create make one on request.
    let g = File::create_with(
        dir.join("c.h5"),
        FileOptions {
            swmr_write: true,
            ..FileOptions::default()
        },
    )
    .unwrap();
    assert!(matches!(
        g.new_dataset::<i32>()
            .shape(&[0])
            .max_shape(&[None])
            .chunk(&[8])
            .index(IndexKind::BTree1)
            .create("b"),
        Err(Error::SwmrIndex { .. })
    ));
}

/// Under SWMR a reader may be reading a stored chunk while it is rewritten, and a write is not
/// atomic to a concurrent read: a rewrite (filtered at the same size, or unfiltered) goes to
/// new space, and the old bytes stay (outside SWMR the chunk keeps its place). Through the
/// direct chunk path and the chunk cache alike.
#[test]
fn swmr_rewrites_chunks_elsewhere() {
    let dir = scratch("rewrite");
    for (swmr, filtered) in [(false, true), (true, true), (false, false), (true, false)] {
        let path = dir.join(format!("r{swmr}{filtered}.h5"));
        let f = File::create_with(&path, latest()).unwrap();
        let mut b = f
            .new_dataset::<i32>()
            .shape(&[0])
            .max_shape(&[None])
            .chunk(&[16]);
        if filtered {
            b = b.filter(FilterSpec::Deflate(1));
        }
        let d = b.create("x").unwrap();
        let n = if filtered { 40 } else { 64 };
        let stored = vec![0x5au8; n];
        d.resize(&[16]).unwrap();
        d.write_direct_chunk(&[0], &stored, 0).unwrap();
        f.flush().unwrap();
        if swmr {
            f.start_swmr_write().unwrap();
        }
        let before = d.chunks().unwrap()[0].addr;
        d.write_direct_chunk(&[0], &vec![0xa5u8; n], 0).unwrap();
        f.flush().unwrap();
        let after = d.chunks().unwrap()[0].addr;
        assert_eq!(
            before != after,
            swmr,
            "swmr {swmr}: {before:?} -> {after:?}"
        );
        // The old bytes stay where a reader may still find them.
        if swmr {
            let bytes = std::fs::read(&path).unwrap();
            let at = before.get() as usize;
            assert_eq!(&bytes[at..at + n], &stored[..]);
        }
        if !filtered {
            // Through the chunk cache: a value changed in a stored chunk.
            d.write_slice(&[7i32], &[3], &[1], None).unwrap();
            f.flush().unwrap();
            let again = d.chunks().unwrap()[0].addr;
            assert_eq!(again != after, swmr, "swmr {swmr}: {after:?} -> {again:?}");
            assert_eq!(d.read_slice::<i32>(&[3], &[1], None).unwrap(), vec![7]);
        }
        f.close().unwrap();
    }
}

/// A SWMR reader's refresh reads again only what changed: index blocks the writer did not
/// touch cost the 4 bytes of their checksum, and the values it then reads are the writer's.
#[test]
fn a_refresh_rereads_only_changed_index_blocks() {
    for (name, max) in [("earray", None), ("btree2", Some(()))] {
        refresh_rereads_only_changed(name, max.is_some());
    }
}

/// A 1-D extensible array, or (`btree2`) a 2-D v2 B-tree one column wide.
fn refresh_rereads_only_changed(name: &str, btree2: bool) {
    let dir = scratch(&format!("refresh_{name}"));
    let path = dir.join("r.h5");
    let f = File::create_with(
        &path,
        FileOptions {
            swmr_write: true,
            ..FileOptions::default()
        },
    )
    .unwrap();
    let (shape, max, chunk): (&[u64], &[Option<u64>], &[u64]) = if btree2 {
        (&[0, 1], &[None, None], &[1, 1])
    } else {
        (&[0], &[None], &[1])
    };
    let d = f
        .new_dataset::<i64>()
        .shape(shape)
        .max_shape(max)
        .chunk(chunk)
        .create("x")
        .unwrap();
    assert_eq!(
        d.index_kind(),
        Some(if btree2 {
            IndexKind::BTree2
        } else {
            IndexKind::ExtensibleArray
        })
    );
    f.start_swmr_write().unwrap();
    let values = |n: i64| (0..n).map(|i| i * 7).collect::<Vec<i64>>();
    d.append(&values(5000)).unwrap();
    f.flush().unwrap();
    let r = File::open_with(&path, OpenOptions::swmr_read()).unwrap();
    let seen = r.dataset("x").unwrap();
    assert_eq!(seen.read::<i64>().unwrap(), values(5000));
    let cold = r.cache_stats().total().bytes_read;
    // Nothing changed: the refresh and a whole read again cost a few bytes per block.
    r.reset_cache_stats();
    seen.refresh().unwrap();
    assert_eq!(seen.read::<i64>().unwrap(), values(5000));
    let again = r.cache_stats().total();
    assert!(
        again.bytes_read * 10 < cold,
        "unchanged: {} bytes read again of {cold}",
        again.bytes_read
    );
    // The writer appends: the blocks that changed are read again, and the values are new.
    d.append(&(5000..6000).map(|i| i * 7).collect::<Vec<i64>>())
        .unwrap();
    f.flush().unwrap();
    seen.refresh().unwrap();
    assert_eq!(seen.shape()[0], 6000);
    assert_eq!(seen.read::<i64>().unwrap(), values(6000));
    f.close().unwrap();
}
