//! The `ndarray` feature: arrays in, arrays out.
#![cfg(feature = "ndarray")]

use h5chunk::File;

#[test]
fn arrays_roundtrip() {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("ndarray.h5");
    let f = File::create(&path).unwrap();
    let d = f
        .new_dataset::<f64>()
        .shape(&[4, 6])
        .chunk(&[3, 4])
        .create("a")
        .unwrap();
    let a = ndarray::Array2::from_shape_fn((4, 6), |(r, c)| (r * 10 + c) as f64).into_dyn();
    d.write_array(a.view(), &[0, 0]).unwrap();
    let b = ndarray::Array2::from_elem((2, 2), -1.0).into_dyn();
    d.write_array(b.view(), &[1, 4]).unwrap();
    let back = d.read_array::<f64>().unwrap();
    assert_eq!(back.shape(), &[4, 6]);
    assert_eq!(back[[0, 5]], 5.0);
    assert_eq!(back[[2, 5]], -1.0);
    assert_eq!(back[[3, 5]], 35.0);
}
