//! Files with a superblock extension (h5py-written: B-tree K values, file space info) and
//! datasets whose datatype message is shared (committed datatypes).
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk::{File, IndexKind};
use h5chunk_testkit::{fixtures, h5py, interop};

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("h5chunk-extension-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::copy(fixtures::dir().join(name), &path).unwrap();
    path
}

/// The superblock's extension address field (v2/v3 superblock at 0, 8-byte offsets).
fn extension_address(path: &std::path::Path) -> u64 {
    let b = std::fs::read(path).unwrap();
    assert!(b[8] >= 2, "a version {} superblock", b[8]);
    u64::from_le_bytes(b[20..28].try_into().unwrap())
}

#[test]
fn extension_with_btree_k_reads_and_writes_with_the_files_k() {
    let python = interop::python("extension_with_btree_k_reads_and_writes_with_the_files_k");
    let path = scratch("sb2_istore_k.h5");
    assert_ne!(
        extension_address(&path),
        u64::MAX,
        "no superblock extension"
    );
    let values: Vec<u8> = (0..1000u32).map(|i| (i * 3 % 256) as u8).collect();
    {
        let f = File::open(&path).unwrap();
        let d = f.dataset("btree_k8").unwrap();
        assert_eq!(d.index_kind(), Some(IndexKind::BTree1));
        assert_eq!(d.read::<u8>().unwrap().len(), 1000);
    }
    // Appending 500 chunks splits nodes: with K = 8 as libhdf5 built the tree, h5py reads it.
    {
        let f = File::open_rw(&path).unwrap();
        let d = f.dataset("btree_k8").unwrap();
        d.write(&values).unwrap();
        d.append(&values).unwrap();
        f.close().unwrap();
    }
    let mut want = values.clone();
    want.extend_from_slice(&values);
    let f = File::open(&path).unwrap();
    assert_eq!(f.dataset("btree_k8").unwrap().read::<u8>().unwrap(), want);
    if let Some(python) = python {
        assert_eq!(h5py::values_le(&python, &path, "btree_k8"), want);
    }
}

#[test]
fn file_space_info_files_read_and_refuse_writes() {
    for name in ["fs_page.h5", "fs_fsm.h5"] {
        let path = fixtures::dir().join(name);
        assert_ne!(
            extension_address(&path),
            u64::MAX,
            "{name}: no superblock extension"
        );
        let f = File::open(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!f.root().unwrap().members().unwrap().is_empty(), "{name}");
        drop(f);
        match File::open_rw(scratch(name)) {
            Err(h5chunk::Error::Unsupported(what)) => {
                assert!(what.contains("file space info"), "{name}: {what}")
            }
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn committed_datatypes_resolve_and_survive_writes() {
    let python = interop::python("committed_datatypes_resolve_and_survive_writes");
    for name in ["committed_earliest.h5", "committed_latest.h5"] {
        let path = scratch(name);
        {
            let f = File::open(&path).unwrap();
            let c = f.dataset("contiguous").unwrap();
            assert_eq!(c.dtype().numpy(), "<f4", "{name}");
            let d = f.dataset("chunked").unwrap();
            assert_eq!(d.dtype().numpy(), ">i2", "{name}");
        }
        let new: Vec<i16> = (0..20).map(|i| -300 * i).collect();
        {
            let f = File::open_rw(&path).unwrap();
            let d = f.dataset("chunked").unwrap();
            d.write(&new).unwrap();
            f.close().unwrap();
        }
        let f = File::open(&path).unwrap();
        assert_eq!(f.dataset("chunked").unwrap().read::<i16>().unwrap(), new);
        if let Some(python) = &python {
            let le: Vec<u8> = new.iter().flat_map(|v| v.to_le_bytes()).collect();
            assert_eq!(h5py::values_le(python, &path, "chunked"), le, "{name}");
            // Still a dataset of the named type for h5py.
            let out = interop::run_python(
                python,
                "import sys, h5py\nf = h5py.File(sys.argv[1], 'r')\nprint(f['chunked'].id.get_type().committed())",
                &[&path.to_string_lossy()],
            );
            assert_eq!(out.trim(), "True", "{name}");
        }
    }
}
