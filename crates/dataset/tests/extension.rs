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

/// A copy of fixture `name` in a folder of this process and test (`test`).
fn scratch_for(test: &str, name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("h5chunk-extension-{}-{test}", std::process::id()));
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
    let scratch = |name| scratch_for("k", name);
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
    let scratch = |name| scratch_for("fs", name);
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
    let scratch = |name| scratch_for("datasets", name);
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

#[test]
fn attributes_of_committed_types_read_and_move_to_dense_storage() {
    let scratch = |name| scratch_for("attributes", name);
    let python = interop::python("attributes_of_committed_types_read_and_move_to_dense_storage");
    for name in ["committed_earliest.h5", "committed_latest.h5"] {
        let path = scratch(name);
        {
            let f = File::open(&path).unwrap();
            let root = f.root().unwrap();
            let a = root.attr("named_f4").unwrap();
            assert_eq!(a.values::<f32>().unwrap(), [0.0, 1.0, 2.0], "{name}");
            let c = f.dataset("chunked").unwrap();
            assert_eq!(
                c.attr("named_i2").unwrap().value::<i16>().unwrap(),
                -5,
                "{name}"
            );
        }
        // Nine more attributes: a version 2 header moves them all to dense storage, the
        // committed one with its reference; an old header keeps them compact.
        {
            let f = File::open_rw(&path).unwrap();
            let root = f.root().unwrap();
            for i in 0..9i32 {
                root.attrs().set_scalar(&format!("extra_{i}"), i).unwrap();
            }
            // Overwritten by name: found without resolving its type.
            let c = f.dataset("chunked").unwrap();
            c.attrs().set_scalar("named_i2", 9i16).unwrap();
            f.close().unwrap();
        }
        let f = File::open(&path).unwrap();
        let root = f.root().unwrap();
        assert_eq!(
            root.attr("named_f4").unwrap().values::<f32>().unwrap(),
            [0.0, 1.0, 2.0],
            "{name}"
        );
        assert_eq!(root.attrs().names().unwrap().len(), 10, "{name}");
        let c = f.dataset("chunked").unwrap();
        assert_eq!(
            c.attr("named_i2").unwrap().value::<i16>().unwrap(),
            9,
            "{name}"
        );
        assert_eq!(c.attrs().names().unwrap(), ["named_i2"], "{name}");
        if let Some(python) = &python {
            let out = interop::run_python(
                python,
                "import sys, h5py\nf = h5py.File(sys.argv[1], 'r')\n\
                 print(f.attrs['named_f4'].tolist(), len(f.attrs), int(f['chunked'].attrs['named_i2']))",
                &[&path.to_string_lossy()],
            );
            assert_eq!(out.trim(), "[0.0, 1.0, 2.0] 10 9", "{name}");
        }
    }
}

#[test]
fn bad_shared_references_are_errors() {
    // committed_latest.h5: the datasets' datatype messages are references
    // `02 02 <address of /float32 or /int16_be>` (libhdf5 writes version 2 for committed ones). Each is pointed at the dataset's own header
    // (a cycle), at the superblock, past the end of the file, and at the undefined address.
    let src = fixtures::dir().join("committed_latest.h5");
    let bytes = std::fs::read(&src).unwrap();
    let f = File::open(&src).unwrap();
    let root = f.root().unwrap();
    let named: Vec<u64> = root
        .links()
        .unwrap()
        .into_iter()
        .filter(|(n, _)| n == "float32" || n == "int16_be")
        .map(|(_, l)| match l {
            h5chunk::LinkValue::Hard(a) => a.get(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(named.len(), 2);
    let own = f.dataset("chunked").unwrap().object_address();
    drop(f);
    let mut refs = Vec::new();
    for p in 0..bytes.len() - 10 {
        let addr = u64::from_le_bytes(bytes[p + 2..p + 10].try_into().unwrap());
        if bytes[p] == 2 && bytes[p + 1] == 2 && named.contains(&addr) {
            refs.push(p);
        }
    }
    assert!(refs.len() >= 2, "references found at {refs:?}");
    let dir = std::env::temp_dir().join(format!("h5chunk-badref-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for &p in &refs {
        for target in [own, 0, bytes.len() as u64 + 4096, u64::MAX] {
            let mut b = bytes.clone();
            b[p + 2..p + 10].copy_from_slice(&target.to_le_bytes());
            let path = dir.join(format!("bad-{p}-{target}.h5"));
            std::fs::write(&path, &b).unwrap();
            // Opening the file and each dataset: a typed error or a value, never a panic; a
            // reference to no object header fails the dataset that holds it.
            let f = File::open(&path).unwrap();
            let failed = ["contiguous", "chunked"]
                .iter()
                .filter(|name| f.dataset(name).and_then(|d| d.read_raw()).is_err())
                .count();
            if target != own {
                assert!(failed >= 1, "reference at {p} to {target:#x}");
            }
            let _ = f.root().and_then(|r| r.attrs().all());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
