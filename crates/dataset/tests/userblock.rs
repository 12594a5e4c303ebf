//! Files whose superblock is not at byte 0: a user block made by libhdf5 (`userblock_size=512`
//! and 4096), and files moved down by bytes put in front of them (stored base address 0, the
//! superblock at 512 or 1024), which libhdf5 reads with addresses relative to the superblock.
//! Each is read, then written (a chunk rewritten, a new dataset appended to), and read back by
//! h5chunk and by h5py; the user block's bytes survive, and a moved file's superblock gets its
//! new base address written back, as libhdf5 does at a read-write open.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk::File;
use h5chunk_testkit::{fixtures, h5py, interop};
use serde_json::Value;

/// The manifest entries of the fixtures whose superblock is not at byte 0.
fn offset_files() -> Vec<Value> {
    let m = fixtures::manifest();
    m["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["superblock_at"].as_u64().unwrap_or(0) > 0)
        .cloned()
        .collect()
}

/// A fresh folder of this test process.
fn scratch(what: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("h5chunk-userblock-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The stored base address of the superblock at `at` (8-byte offsets, as every fixture).
fn stored_base(file: &[u8], at: usize) -> u64 {
    let field = match file[at + 8] {
        0 => 24,
        1 => 28,
        _ => 12,
    };
    u64::from_le_bytes(file[at + field..at + field + 8].try_into().unwrap())
}

#[test]
fn offset_superblocks_read_write_and_keep_their_user_block() {
    let python = interop::python("offset_superblocks_read_write_and_keep_their_user_block");
    let files = offset_files();
    let names: Vec<&str> = files.iter().map(|e| e["file"].as_str().unwrap()).collect();
    // The committed subset has all five: 512 and 4096 byte user blocks, two moved files.
    for want in [
        "userblock_earliest.h5",
        "userblock_latest.h5",
        "userblock_4096.h5",
        "moved_earliest.h5",
        "moved_latest.h5",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    let tmp = scratch("rw");
    for entry in &files {
        let name = entry["file"].as_str().unwrap();
        let at = entry["superblock_at"].as_u64().unwrap() as usize;
        let src = fixtures::dir().join(name);
        let original = std::fs::read(&src).unwrap();
        let path = tmp.join(name);
        std::fs::copy(&src, &path).unwrap();

        // Read: the manifest's values.
        {
            let f = File::open(&path).unwrap();
            let c = f.dataset("chunked").unwrap();
            assert_eq!(
                c.read::<i32>().unwrap(),
                (0..20).collect::<Vec<i32>>(),
                "{name}"
            );
            let d = f.dataset("contiguous").unwrap();
            assert_eq!(d.read::<f64>().unwrap().len(), 5, "{name}");
        }

        // Write: a chunk rewritten in place, a new extendible dataset appended to.
        let new_values: Vec<i32> = (0..20).map(|i| 1000 - i).collect();
        let appended: Vec<u16> = (0..3000).map(|i| (i * 7) as u16).collect();
        {
            let f = File::open_rw(&path).unwrap();
            f.dataset("chunked").unwrap().write(&new_values).unwrap();
            let a = f
                .new_dataset::<u16>()
                .shape(&[0])
                .max_shape(&[None])
                .chunk(&[256])
                .create("appended")
                .unwrap();
            a.append(&appended[..1000]).unwrap();
            f.flush().unwrap();
            a.append(&appended[1000..]).unwrap();
            f.close().unwrap();
        }
        let written = std::fs::read(&path).unwrap();
        // The user block (everything before the superblock) is untouched.
        assert_eq!(written[..at], original[..at], "{name}: user block");
        assert_eq!(&written[at..at + 8], b"\x89HDF\r\n\x1a\n", "{name}");
        // Addresses are relative to the superblock: its stored base is now its position.
        assert_eq!(stored_base(&written, at), at as u64, "{name}: stored base");

        // Read back by h5chunk...
        let f = File::open(&path).unwrap();
        assert_eq!(
            f.dataset("chunked").unwrap().read::<i32>().unwrap(),
            new_values
        );
        assert_eq!(
            f.dataset("appended").unwrap().read::<u16>().unwrap(),
            appended
        );
        drop(f);
        // ... and by h5py.
        if let Some(python) = &python {
            let got = h5py::values_le_many(python, &path, &["chunked", "appended"]);
            let le: Vec<u8> = new_values.iter().flat_map(|v| v.to_le_bytes()).collect();
            assert_eq!(got[0], le, "{name}: h5py chunked");
            let le: Vec<u8> = appended.iter().flat_map(|v| v.to_le_bytes()).collect();
            assert_eq!(got[1], le, "{name}: h5py appended");
            let ub = interop::run_python(
                python,
                "import sys, h5py\nprint(h5py.File(sys.argv[1], 'r').userblock_size)",
                &[&path.to_string_lossy()],
            );
            assert_eq!(ub.trim(), at.to_string(), "{name}: h5py userblock_size");
        }
    }
}

#[test]
fn moved_file_with_an_impossible_end_of_file_is_an_error() {
    // moved_earliest.h5 (a v0 superblock, no checksum, at 512) with a stored base address past
    // its stored end of file: no position makes sense of it.
    let name = "moved_earliest.h5";
    let at = 512;
    let mut bytes = std::fs::read(fixtures::dir().join(name)).unwrap();
    assert_eq!((bytes[at + 8], stored_base(&bytes, at)), (0, 0));
    bytes[at + 24..at + 32].copy_from_slice(&0x7fff_ffff_ffff_ffffu64.to_le_bytes());
    let path = scratch("bad").join(name);
    std::fs::write(&path, &bytes).unwrap();
    let err = File::open(&path).unwrap_err();
    assert!(
        matches!(
            err,
            h5chunk::Error::Format(h5chunk_format::Error::Invalid { .. })
        ),
        "{err:?}"
    );
}
