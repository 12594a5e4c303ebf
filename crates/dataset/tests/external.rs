//! External storage (`H5Pset_external`, h5py's `external=`), both ways with h5py: a dataset
//! striped over several files at offsets, written by h5py and read by h5chunk; written by
//! h5chunk (whole and by strided slices) and read by h5py and `h5dump`. Names here are
//! absolute (relative ones depend on the process's directory and `HDF5_EXTFILE_PREFIX`: the
//! CLI tests run those in processes of their own).
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use h5chunk::{Error, File};
use h5chunk_testkit::interop;

#[test]
fn external_storage_round_trips_with_h5py_both_ways() {
    let Some(python) = interop::python("external_storage_round_trips_with_h5py") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-external-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();

    // h5py writes: 6 x 5 int32 (120 bytes) over three parts of two files, at offsets.
    let theirs = dir.join("theirs.h5");
    interop::run_python(
        &python,
        r#"
import sys, numpy as np, h5py
d = sys.argv[2]
with h5py.File(sys.argv[1], "w") as f:
    x = f.create_dataset("x", (6, 5), "<i4",
                         external=[(d + "/a.bin", 16, 40), (d + "/b.bin", 0, 48), (d + "/a.bin", 100, 64)])
    x[...] = np.arange(30, dtype="<i4").reshape(6, 5) * 7 - 50
"#,
        &[theirs.to_str().unwrap(), d],
    );
    let file = File::open(&theirs).unwrap();
    let x = file.dataset("x").unwrap();
    let parts = x.external_files().unwrap();
    assert_eq!(parts.len(), 3);
    assert_eq!(
        (parts[2].name.as_str(), parts[2].offset, parts[2].size),
        (&*format!("{d}/a.bin"), 100, Some(64))
    );
    let want: Vec<i32> = (0..30).map(|v| v * 7 - 50).collect();
    assert_eq!(x.read::<i32>().unwrap(), want);
    // A slab crossing the parts' boundaries, and a strided one.
    assert_eq!(
        x.read_slice::<i32>(&[1, 2], &[3, 3], None).unwrap(),
        [7, 8, 9, 12, 13, 14, 17, 18, 19].map(|i| want[i])
    );
    assert_eq!(
        x.read_slice::<i32>(&[0, 0], &[3, 2], Some(&[2, 3]))
            .unwrap(),
        [0, 3, 10, 13, 20, 23].map(|i| want[i])
    );
    assert!(file.check().is_clean());
    drop((x, file));
    // A missing part: an error naming the file.
    std::fs::rename(dir.join("b.bin"), dir.join("b.moved")).unwrap();
    let err = File::open(&theirs)
        .and_then(|f| f.dataset("x"))
        .and_then(|x| x.read::<i32>())
        .unwrap_err();
    assert!(err.to_string().contains("b.bin"), "{err}");
    std::fs::rename(dir.join("b.moved"), dir.join("b.bin")).unwrap();

    // h5chunk writes: 4 x 6 float64 (192 bytes) over two new files (the second unlimited),
    // whole rows first, then a strided slice over them.
    let ours = dir.join("ours.h5");
    let file = File::create(&ours).unwrap();
    let (c, e) = (format!("{d}/c.bin"), format!("{d}/e.bin"));
    let y = file
        .new_dataset::<f64>()
        .shape(&[4, 6])
        .external(&[(&c, 8, Some(80)), (&e, 0, None)])
        .create("grp_less_y")
        .unwrap();
    let mut values: Vec<f64> = (0..24).map(|v| f64::from(v) / 4.0).collect();
    y.write(&values).unwrap();
    y.write_slice(
        &[-1.0f64, -2.0, -3.0, -4.0],
        &[1, 1],
        &[2, 2],
        Some(&[2, 3]),
    )
    .unwrap();
    for (k, (r, col)) in [(1, 1), (1, 4), (3, 1), (3, 4)].into_iter().enumerate() {
        values[r * 6 + col] = -(k as f64 + 1.0);
    }
    assert_eq!(y.read::<f64>().unwrap(), values);
    // Too small a set of parts, chunks with external storage: refused before anything is made.
    assert!(matches!(
        file.new_dataset::<u8>()
            .shape(&[100])
            .external(&[(&c, 0, Some(99))])
            .create("small"),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(
        file.new_dataset::<u8>()
            .shape(&[10])
            .chunk(&[5])
            .external(&[(&c, 0, None)])
            .create("chunked")
            .is_err()
    );
    drop(y);
    file.close().unwrap();
    // The first 8 bytes of c.bin are not the dataset's: never written.
    assert_eq!(&std::fs::read(&c).unwrap()[..8], &[0; 8]);
    let got = interop::run_python(
        &python,
        r#"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    y = f["grp_less_y"]
    print(y.external)
    print(" ".join(repr(float(v)) for v in y[...].ravel()))
"#,
        &[ours.to_str().unwrap()],
    );
    let mut lines = got.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!("[('{c}', 8, 80), ('{e}', 0, 18446744073709551615)]")
    );
    let read: Vec<f64> = lines
        .next()
        .unwrap()
        .split(' ')
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(read, values);
    if let Some(h5dump) = interop::h5dump("external_storage_round_trips_with_h5py") {
        interop::h5dump_ok(&h5dump, &ours);
    }
    // h5chunk reads its own file back, reopened.
    let file = File::open(&ours).unwrap();
    assert_eq!(
        file.dataset("grp_less_y").unwrap().read::<f64>().unwrap(),
        values
    );
    drop(file);
    std::fs::remove_dir_all(&dir).unwrap();
}
