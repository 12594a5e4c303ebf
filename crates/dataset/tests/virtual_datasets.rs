//! Virtual datasets (layout class 3) made by h5py (libhdf5 2.0) read equal to what h5py reads:
//! every selection kind h5py's `VirtualLayout` makes (all, regular hyperslabs with stride and
//! block, unions of blocks, of another rank), sources in the same file (`.`), in other files
//! (one in a sub-folder, found relative to the virtual file's folder) and in a missing file
//! (the fill value), an element type converted, overlapping mappings, a `%b` mapping whose
//! last source file appears after the virtual dataset was made, and an unlimited source that
//! grows after it was made; each under the three hyperslab encodings (files with low bounds
//! earliest, v110 and latest). Then a live h5py SWMR writer extends the sources while h5chunk
//! reads the virtual dataset and refreshes it.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use h5chunk::{Error, File, OpenOptions, StorageKind};
use h5chunk_testkit::interop;
use serde_json::Value;

/// The fixture generator (h5py), run at test time into a folder of the test's own.
const GEN_VDS: &str = include_str!("../../../xtask/fixtures/gen_vds.py");

/// A fresh folder of this test's own under the target's temporary folder.
fn folder(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("virtual_datasets")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

#[test]
fn h5py_virtual_datasets_read_equal() {
    let Some(python) = interop::python("h5py_virtual_datasets_read_equal") else {
        return;
    };
    let dir = folder("h5py");
    let report = interop::run_python(&python, GEN_VDS, &[s(&dir)]);
    let report: Value = serde_json::from_str(report.trim()).unwrap();
    let files = report.as_object().unwrap();
    assert_eq!(files.len(), 3);
    let mut checked = 0;
    for (name, datasets) in files {
        let file = File::open(dir.join(name)).unwrap();
        let datasets = datasets.as_object().unwrap();
        assert!(datasets.len() >= 10, "{name}: {}", datasets.len());
        for (dname, want) in datasets {
            let what = format!("{name}:{dname}");
            let d = file.dataset(dname).unwrap();
            assert_eq!(d.storage_kind(), StorageKind::Virtual, "{what}");
            assert_eq!(d.shape(), u64s(&want["shape"]), "{what}: shape");
            assert_eq!(
                d.virtual_mappings().unwrap().len() as u64,
                want["mappings"].as_u64().unwrap(),
                "{what}: mappings"
            );
            let mut fill = d.fill_value_raw();
            d.dtype().to_from_le(&mut fill);
            assert_eq!(fill, unhex(want["fill"].as_str().unwrap()), "{what}: fill");
            assert_eq!(
                d.read_raw().unwrap(),
                unhex(want["hex"].as_str().unwrap()),
                "{what}: values"
            );
            for sel in want["selections"].as_array().unwrap() {
                let (start, count, stride) = (
                    u64s(&sel["start"]),
                    u64s(&sel["count"]),
                    u64s(&sel["stride"]),
                );
                assert_eq!(
                    d.read_slice_raw(&start, &count, Some(&stride)).unwrap(),
                    unhex(sel["hex"].as_str().unwrap()),
                    "{what}: selection {start:?} {count:?} {stride:?}"
                );
            }
            checked += 1;
        }
        // The values h5chunk can say without h5py: the missing source's row is the fill
        // value, the last `%b` source (written after the virtual dataset) shows.
        let stack = file.dataset("stack").unwrap();
        assert_eq!(
            stack.read_slice::<i32>(&[2, 0], &[1, 20], None).unwrap(),
            vec![-1; 20]
        );
        let printf = file.dataset("printf").unwrap();
        assert_eq!(printf.shape(), vec![8, 5]);
        assert_eq!(
            printf.read_slice::<i32>(&[6, 0], &[2, 5], None).unwrap(),
            (3000..3010).collect::<Vec<i32>>()
        );
        // Row 2 and 5 lie between the blocks of the `%b` mapping.
        assert_eq!(
            printf.read_slice::<i32>(&[2, 0], &[1, 5], None).unwrap(),
            vec![-3; 5]
        );
        let unlimited = file.dataset("unlimited").unwrap();
        assert_eq!(unlimited.shape(), vec![6, 5]);
        assert_eq!(unlimited.max_shape(), vec![None, Some(5)]);
    }
    assert!(checked >= 30, "{checked} datasets");
}

#[test]
fn writing_to_a_virtual_dataset_is_unsupported() {
    let Some(python) = interop::python("writing_to_a_virtual_dataset_is_unsupported") else {
        return;
    };
    let dir = folder("write");
    interop::run_python(&python, GEN_VDS, &[s(&dir)]);
    let file = File::open_with(dir.join("vds_latest.h5"), OpenOptions::read_write()).unwrap();
    let d = file.dataset("overlap").unwrap();
    assert!(matches!(
        d.write_slice::<i32>(&[5], &[0], &[1], None),
        Err(Error::Unsupported("writing to a virtual dataset"))
    ));
    // Opening it writable wrote nothing back: h5py reads the same.
    drop(d);
    file.close().unwrap();
    let out = interop::run_python(
        &python,
        "import sys, h5py\nprint(h5py.File(sys.argv[1], 'r')['overlap'][0])",
        &[s(&dir.join("vds_latest.h5"))],
    );
    assert_eq!(out.trim(), "1");
}

/// An h5py SWMR writer: `live.h5` with an unlimited dataset `d` (4 columns), and
/// `live_vds.h5` made while it has 3 rows (`v`: every row of `d`, unlimited; `p`: blocks of
/// 2 rows from `livep_%b.h5`). It adds 2 rows, prints `ready`; on each `grow` line adds 4 rows
/// and the next `livep_N.h5`, prints `grown`; on any other line closes and prints `closed`.
const SWMR_WRITER: &str = r#"
import sys, os, h5py, numpy as np
from h5py import h5s, h5p, h5d, h5t
folder = sys.argv[1]
U = h5s.UNLIMITED
f = h5py.File(os.path.join(folder, 'live.h5'), 'w', libver='latest')
d = f.create_dataset('d', shape=(0, 4), maxshape=(None, 4), dtype='<i4', chunks=(2, 4))
f.swmr_mode = True
def grow(n):
    old = d.shape[0]
    d.resize((old + n, 4))
    d[old:] = np.arange(old * 4, (old + n) * 4, dtype='<i4').reshape(n, 4)
    d.flush()
def block(b):
    with h5py.File(os.path.join(folder, f'livep_{b}.h5'), 'w') as g:
        g['x'] = np.full((2, 4), 100 + b, dtype='<i4')
grow(3)
block(0)
with h5py.File(os.path.join(folder, 'live_vds.h5'), 'w', libver='latest') as v:
    dcpl = h5p.create(h5p.DATASET_CREATE)
    vs = h5s.create_simple((0, 4), (U, 4)); vs.select_hyperslab((0, 0), (1, 1), (1, 1), (U, 4))
    ss = h5s.create_simple((0, 4), (U, 4)); ss.select_hyperslab((0, 0), (1, 1), (1, 1), (U, 4))
    dcpl.set_virtual(vs, b'live.h5', b'd', ss)
    h5d.create(v.id, b'v', h5t.STD_I32LE, h5s.create_simple((0, 4), (U, 4)), dcpl=dcpl)
    dcpl = h5p.create(h5p.DATASET_CREATE)
    vs = h5s.create_simple((0, 4), (U, 4)); vs.select_hyperslab((0, 0), (U, 1), (2, 1), (2, 4))
    dcpl.set_virtual(vs, b'livep_%b.h5', b'x', h5s.create_simple((2, 4)))
    h5d.create(v.id, b'p', h5t.STD_I32LE, h5s.create_simple((0, 4), (U, 4)), dcpl=dcpl)
grow(2)
print('ready', flush=True)
b = 1
for line in sys.stdin:
    if line.strip() != 'grow':
        break
    grow(4)
    block(b)
    b += 1
    print('grown', flush=True)
f.close()
print('closed', flush=True)
"#;

#[test]
fn swmr_writer_extends_sources_and_refresh_sees_them() {
    let Some(python) = interop::python("swmr_writer_extends_sources_and_refresh_sees_them") else {
        return;
    };
    let dir = folder("swmr");
    let mut child = Command::new(&python)
        .arg("-c")
        .arg(SWMR_WRITER)
        .arg(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut expect = |word: &str| {
        let line = lines.next().unwrap().unwrap();
        assert_eq!(line.trim(), word);
    };
    expect("ready");
    let file = File::open_with(dir.join("live_vds.h5"), OpenOptions::swmr_read()).unwrap();
    let v = file.dataset("v").unwrap();
    let p = file.dataset("p").unwrap();
    // Rows written after the virtual dataset was made are there (libhdf5's "last available"
    // view: the source's extent now, not the stored one).
    assert_eq!(v.shape(), vec![5, 4]);
    assert_eq!(v.read::<i32>().unwrap(), (0..20).collect::<Vec<i32>>());
    assert_eq!(p.shape(), vec![2, 4]);
    assert_eq!(p.read::<i32>().unwrap(), vec![100; 8]);
    for round in 1..=2u64 {
        writeln!(stdin, "grow").unwrap();
        expect("grown");
        v.refresh().unwrap();
        p.refresh().unwrap();
        let rows = 5 + 4 * round;
        assert_eq!(v.shape(), vec![rows, 4], "round {round}");
        assert_eq!(
            v.read::<i32>().unwrap(),
            (0..(rows * 4) as i32).collect::<Vec<i32>>()
        );
        // One `%b` block more (2 rows each, 2 apart: the last block reaches 2b + 2).
        assert_eq!(p.shape(), vec![2 * round + 2, 4]);
        assert_eq!(
            p.read_slice::<i32>(&[2 * round, 0], &[2, 4], None).unwrap(),
            vec![100 + round as i32; 8]
        );
    }
    writeln!(stdin, "stop").unwrap();
    expect("closed");
    assert!(child.wait().unwrap().success());
    // What h5py reads once the writer is gone, h5chunk read last.
    let out = interop::run_python(
        &python,
        "import sys, h5py\nd = h5py.File(sys.argv[1], 'r')['v']\nprint(d.shape, int(d[...].sum()))",
        &[s(&dir.join("live_vds.h5"))],
    );
    let n = (0..52).sum::<i64>();
    assert_eq!(out.trim(), format!("(13, 4) {n}"));
}
