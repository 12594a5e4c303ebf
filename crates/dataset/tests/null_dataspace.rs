//! Datasets with a null dataspace (h5py's `h5py.Empty`, libhdf5's `H5S_NULL`), as h5py writes
//! them: they open, say so through `Dataset::is_null`, and read as zero elements.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk::File;
use h5chunk_testkit::fixtures;

#[test]
fn null_dataspaces_open_as_empty_datasets() {
    let manifest = fixtures::manifest();
    let mut seen = 0;
    for entry in manifest["files"].as_array().unwrap() {
        let name = entry["file"].as_str().unwrap();
        let nulls: Vec<_> = entry["objects"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["kind"] == "null_dataset")
            .collect();
        if nulls.is_empty() {
            continue;
        }
        let f = File::open(fixtures::dir().join(name)).unwrap();
        for o in nulls {
            let path = o["path"].as_str().unwrap();
            let what = format!("{name}:{path}");
            let d = f.dataset(path).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(d.is_null(), "{what}");
            assert_eq!(d.shape(), [0], "{what}");
            assert_eq!(d.max_shape(), [Some(0)], "{what}");
            assert_eq!(d.dtype().numpy(), o["dtype"].as_str().unwrap(), "{what}");
            assert_eq!(d.read_raw().unwrap(), Vec::<u8>::new(), "{what}");
            // Nothing to select but nothing, and nothing to grow.
            assert!(d.read_slice_raw(&[0], &[1], None).is_err(), "{what}");
            seen += 1;
        }
        // Typed reads of the number types give empty vectors.
        assert_eq!(
            f.dataset("empty_f4").unwrap().read::<f32>().unwrap(),
            Vec::<f32>::new()
        );
        assert_eq!(
            f.dataset("empty_i8").unwrap().read::<i64>().unwrap(),
            Vec::<i64>::new()
        );
        // A dataset with elements beside them is not null.
        let beside = f.dataset("beside").unwrap();
        assert!(!beside.is_null());
        assert_eq!(beside.read::<i16>().unwrap().len(), 4);
    }
    // empty_earliest.h5 and empty_latest.h5, three each.
    assert_eq!(seen, 6);
}

#[test]
fn a_null_dataset_survives_a_read_write_open() {
    let src = fixtures::dir().join("empty_latest.h5");
    let dir = std::env::temp_dir().join(format!("h5chunk-null-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("empty_latest.h5");
    std::fs::copy(&src, &path).unwrap();
    {
        let f = File::open_rw(&path).unwrap();
        let d = f.dataset("empty_f4").unwrap();
        assert!(d.is_null());
        // Growing is refused (its maximum is zero elements).
        assert!(d.resize(&[3]).is_err());
        f.close().unwrap();
    }
    // The flush kept the null dataspace (not rewritten as a simple one of dims [0]).
    let f = File::open(&path).unwrap();
    assert!(f.dataset("empty_f4").unwrap().is_null());
    if let Some(python) =
        h5chunk_testkit::interop::python("a_null_dataset_survives_a_read_write_open")
    {
        let out = h5chunk_testkit::interop::run_python(
            &python,
            "import sys, h5py\nprint(h5py.File(sys.argv[1], 'r')['empty_f4'].shape)",
            &[&path.to_string_lossy()],
        );
        assert_eq!(out.trim(), "None");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
