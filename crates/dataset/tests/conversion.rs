//! Numeric conversion on read and write, as libhdf5 and h5py convert: datasets and attributes
//! of one number type read and written as another, values that do not fit refused by name.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk::{Error, File, f16};
use h5chunk_testkit::interop;

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("conversion");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Written by h5py: every number type h5py writes, read by h5chunk as other types.
const WRITE: &str = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("f32", data=np.array([1.5, -2.25, 3e38], dtype="<f4"))
    f.create_dataset("f16", data=np.array([0.5, -1.0, 65504.0], dtype="<f2"))
    f.create_dataset("i64", data=np.array([-3, 7, 2**31], dtype="<i8"), chunks=(2,))
    f.create_dataset("u8be", data=np.array([0, 200, 255], dtype=">u2"))
    f.attrs["small"] = np.array([1, -2, 3], dtype="<i8")
    f.attrs["big"] = np.array([1, 2**40], dtype="<i8")
    f.attrs["ratio"] = np.float32(0.5)
"#;

/// Read by h5py: what h5chunk wrote into datasets of other types.
const READ: &str = r#"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    for name in ("f32", "i16", "u8", "f16"):
        d = f[name]
        print(name, d.dtype.str, [float(v) for v in d[:]])
"#;

#[test]
fn numbers_read_as_another_type_as_h5py_reads_them() {
    let Some(python) = interop::python("numbers_read_as_another_type") else {
        return;
    };
    let path = tmp("theirs.h5");
    std::fs::write(tmp("write.py"), WRITE).unwrap();
    let out = std::process::Command::new(&python)
        .arg(tmp("write.py"))
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f = File::open(&path).unwrap();
    let f32s = f.dataset("f32").unwrap();
    assert_eq!(
        f32s.read::<f64>().unwrap(),
        [1.5, -2.25, f64::from(3e38f32)]
    );
    // A float into an integer: truncated toward zero; one past the range is refused.
    assert_eq!(f32s.read_slice::<i16>(&[0], &[2], None).unwrap(), [1, -2]);
    match f32s.read::<i64>() {
        Err(Error::ValueOutOfRange { index, to, .. }) => {
            assert_eq!((index, to.as_str()), (2, "<i8"));
        }
        other => panic!("expected ValueOutOfRange, got {other:?}"),
    }
    assert_eq!(
        f.dataset("f16").unwrap().read::<f32>().unwrap(),
        [0.5, -1.0, 65504.0]
    );
    // float16 as itself (the half crate's f16), bit for bit.
    assert_eq!(
        f.dataset("f16").unwrap().read::<f16>().unwrap(),
        [0.5, -1.0, 65504.0].map(f16::from_f32)
    );
    let i64s = f.dataset("i64").unwrap();
    assert_eq!(i64s.read::<f64>().unwrap(), [-3.0, 7.0, 2147483648.0]);
    assert_eq!(i64s.read_slice::<i32>(&[0], &[2], None).unwrap(), [-3, 7]);
    // One element, the lookup path, converts too.
    assert_eq!(i64s.read_slice::<i8>(&[1], &[1], None).unwrap(), [7]);
    match i64s.read::<i32>() {
        Err(e @ Error::ValueOutOfRange { .. }) => {
            assert!(e.to_string().contains("2147483648"), "{e}");
            assert!(e.to_string().contains("/i64"), "{e}");
        }
        other => panic!("expected ValueOutOfRange, got {other:?}"),
    }
    let mut into = [0u64; 3];
    f.dataset("u8be")
        .unwrap()
        .read_slice_into(&[0], &[3], None, &mut into)
        .unwrap();
    assert_eq!(into, [0, 200, 255]);
    // Attributes: an i64 attribute read as i32 when every value fits.
    assert_eq!(
        f.attr("small").unwrap().values::<i32>().unwrap(),
        [1, -2, 3]
    );
    assert!(matches!(
        f.attr("big").unwrap().values::<i32>(),
        Err(Error::ValueOutOfRange { index: 1, .. })
    ));
    assert_eq!(
        f.attr("big").unwrap().values::<f64>().unwrap(),
        [1.0, 2f64.powi(40)]
    );
    assert_eq!(f.attr("ratio").unwrap().value::<f64>().unwrap(), 0.5);
    // Strings are not numbers: still refused as a type mismatch.
    assert!(matches!(
        f.attr("ratio").unwrap().strings(),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn values_written_as_another_type_are_converted_and_read_by_h5py() {
    let path = tmp("ours.h5");
    let f = File::create(&path).unwrap();
    let f32s = f
        .new_dataset::<f32>()
        .shape(&[3])
        .chunk(&[3])
        .create("f32")
        .unwrap();
    f32s.write(&[0.5f64, -1.25, 1e300]).unwrap();
    let i16s = f
        .new_dataset::<i16>()
        .shape(&[0])
        .max_shape(&[None])
        .chunk(&[2])
        .create("i16")
        .unwrap();
    i16s.append(&[1i64, -300, 32767]).unwrap();
    match i16s.append(&[40000i64]) {
        Err(Error::ValueOutOfRange { value, .. }) => assert_eq!(value, "40000"),
        other => panic!("expected ValueOutOfRange, got {other:?}"),
    }
    let u8s = f
        .new_dataset::<u8>()
        .shape(&[4])
        .chunk(&[2])
        .create("u8")
        .unwrap();
    u8s.write(&[0.0f64; 4]).unwrap();
    u8s.write_slice(&[2.7f32, 255.0], &[1], &[2], None).unwrap();
    assert!(matches!(
        u8s.write_slice(&[-1i32], &[0], &[1], None),
        Err(Error::ValueOutOfRange { .. })
    ));
    assert_eq!(f32s.read::<f32>().unwrap(), [0.5, -1.25, f32::INFINITY]);
    assert_eq!(i16s.read::<i16>().unwrap(), [1, -300, 32767]);
    assert_eq!(u8s.read::<u8>().unwrap(), [0, 2, 255, 0]);
    // float16 datasets, written as f16 and as f64 (rounded to the nearest half).
    let halves = f
        .new_dataset::<f16>()
        .shape(&[3])
        .chunk(&[3])
        .create("f16")
        .unwrap();
    halves.write(&[0.5f64, 1.0 / 3.0, 1e6]).unwrap();
    assert_eq!(
        halves.read::<f16>().unwrap(),
        [f16::from_f64(0.5), f16::from_f64(1.0 / 3.0), f16::INFINITY]
    );
    f.close().unwrap();
    if let Some(python) = interop::python("values_written_as_another_type") {
        std::fs::write(tmp("read.py"), READ).unwrap();
        let out = std::process::Command::new(&python)
            .arg(tmp("read.py"))
            .arg(&path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("f32 <f4 [0.5, -1.25, inf]"), "{text}");
        assert!(text.contains("i16 <i2 [1.0, -300.0, 32767.0]"), "{text}");
        assert!(text.contains("u8 |u1 [0.0, 2.0, 255.0, 0.0]"), "{text}");
        assert!(
            text.contains("f16 <f2 [0.5, 0.333251953125, inf]"),
            "{text}"
        );
    }
}
