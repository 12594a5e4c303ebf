//! The `ndarray` feature: arrays in, arrays out.
#![cfg(feature = "ndarray")]
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(clippy::unwrap_used)]

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

/// ndarray's slice description (what `s![]` makes; the macro itself allows `unsafe_code`
/// inside, which this workspace forbids, so the test builds the same value safely).
fn s(
    elems: &[ndarray::SliceInfoElem],
) -> ndarray::SliceInfo<Vec<ndarray::SliceInfoElem>, ndarray::IxDyn, ndarray::IxDyn> {
    ndarray::SliceInfo::try_from(elems.to_vec()).unwrap()
}

/// Selections as h5py writes them, from ndarray's slice descriptions, read as arrays of
/// numpy's shape.
#[test]
fn selections_from_ndarray_slices_read_as_numpy_slices() {
    use ndarray::{Slice, SliceInfoElem::Index};
    let all = |step: isize| ndarray::SliceInfoElem::from(Slice::new(0, None, step));
    let from =
        |start: isize, end: Option<isize>| ndarray::SliceInfoElem::from(Slice::new(start, end, 1));
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("ndarray_select.h5");
    let f = File::create(&path).unwrap();
    let d = f
        .new_dataset::<i32>()
        .shape(&[4, 6])
        .chunk(&[3, 4])
        .create("a")
        .unwrap();
    d.write(&(0..24).collect::<Vec<i32>>()).unwrap();
    // d[:, 2], s![.., 2]
    let column = d
        .select(s(&[all(1), Index(2)]))
        .unwrap()
        .read_array::<i32>()
        .unwrap();
    assert_eq!(column, ndarray::arr1(&[2, 8, 14, 20]).into_dyn());
    // d[1:3, ::2], s![1..3, ..;2]
    let block = d
        .select(s(&[from(1, Some(3)), all(2)]))
        .unwrap()
        .read_array::<i64>()
        .unwrap();
    assert_eq!(block.shape(), &[2, 3]);
    assert_eq!(
        block,
        ndarray::arr2(&[[6i64, 8, 10], [12, 14, 16]]).into_dyn()
    );
    // d[3, 4:] = [-1, -2], s![3, 4..]
    d.select(s(&[Index(3), from(4, None)]))
        .unwrap()
        .write(&[-1i32, -2])
        .unwrap();
    assert_eq!(
        d.read_slice::<i32>(&[3, 3], &[1, 3], None).unwrap(),
        [21, -1, -2]
    );
    // Negative indices count from the end, as in numpy (s![-1, -2..]); negative steps are
    // refused, as h5py refuses them (s![.., ..;-1]).
    assert_eq!(
        d.select(s(&[Index(-1), from(-2, None)]))
            .unwrap()
            .read::<i32>()
            .unwrap(),
        [-1, -2]
    );
    assert!(d.select(s(&[all(1), all(-1)])).is_err());
}
