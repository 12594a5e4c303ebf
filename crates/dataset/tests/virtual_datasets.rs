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
        // `h5chunk check` walks them: decoded, no problem, none skipped.
        let report = file.check();
        assert!(report.problems.is_empty(), "{name}: {:?}", report.problems);
        assert!(report.skipped.is_empty(), "{name}: {:?}", report.skipped);
        assert!(report.datasets >= 10, "{name}: {}", report.datasets);
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

/// A dataset's values through `h5dump -b LE` (binary, little-endian), as bytes.
fn h5dump_values(h5dump: &Path, file: &Path, dataset: &str, dir: &Path) -> Vec<u8> {
    let out = dir.join(format!("{}.bin", dataset.trim_start_matches('/')));
    let status = Command::new(h5dump)
        .args(["-d", dataset, "-b", "LE", "-o"])
        .arg(&out)
        .arg(file)
        .current_dir(file.parent().unwrap())
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "h5dump {}: {}",
        file.display(),
        String::from_utf8_lossy(&status.stderr)
    );
    std::fs::read(&out).unwrap()
}

/// Virtual datasets h5chunk makes (every selection kind its builder takes: all, blocks,
/// strided regular hyperslabs, unions of blocks, `%b` with an unlimited count, an unlimited
/// source; sources in this file, in others, and missing) read in h5py and `h5dump` equal to
/// what h5chunk reads, and what h5chunk reads is what the sources hold.
#[test]
fn virtual_datasets_h5chunk_writes_read_equal_in_h5py_and_h5dump() {
    use h5chunk::VirtualSelection as S;
    let dir = folder("made");
    let path = dir.join("made.h5");
    {
        let other = File::create(dir.join("other.h5")).unwrap();
        let d = other
            .new_dataset::<i16>()
            .shape(&[3, 6])
            .chunk(&[3, 6])
            .create("d")
            .unwrap();
        d.write(&(0..18).map(|x| -x as i16).collect::<Vec<_>>())
            .unwrap();
        for b in 0..3 {
            let f = File::create(dir.join(format!("frames_{b}.h5"))).unwrap();
            let d = f
                .new_dataset::<i32>()
                .shape(&[2, 6])
                .chunk(&[2, 6])
                .create("f")
                .unwrap();
            d.write(&[1000 * (b + 1); 12]).unwrap();
        }
        let g = File::create(dir.join("grow.h5")).unwrap();
        let d = g
            .new_dataset::<i32>()
            .shape(&[5, 6])
            .max_shape(&[None, Some(6)])
            .chunk(&[2, 6])
            .create("g")
            .unwrap();
        d.write(&(500..530).collect::<Vec<i32>>()).unwrap();
    }
    let file = File::create(&path).unwrap();
    let src = file
        .new_dataset::<i32>()
        .shape(&[4, 6])
        .chunk(&[4, 6])
        .create("src")
        .unwrap();
    src.write(&(0..24).collect::<Vec<i32>>()).unwrap();
    let v = file
        .new_dataset::<i32>()
        .shape(&[12, 6])
        .fill_value(-7i32)
        .virtual_map(".", "src", S::All, S::block(&[0, 0], &[4, 6]))
        // Rows 4, 6 and 8 from another file (int16, converted).
        .virtual_map(
            "other.h5",
            "d",
            S::All,
            S::Regular {
                start: vec![4, 0],
                stride: vec![2, 1],
                count: vec![3, 1],
                block: vec![1, 6],
            },
        )
        // Row 5 from a file that is not there: the fill value.
        .virtual_map(
            "missing.h5",
            "x",
            S::block(&[0, 0], &[1, 6]),
            S::block(&[5, 0], &[1, 6]),
        )
        // Two cells of row 10 and a 2 x 2 square of rows 10-11, from `src` (a union).
        .virtual_map(
            ".",
            "src",
            S::block(&[1, 0], &[1, 6]),
            S::Blocks(vec![(vec![10, 0], vec![1, 2]), (vec![10, 4], vec![2, 2])]),
        )
        .create("v")
        .unwrap();
    let p = file
        .new_dataset::<i32>()
        .shape(&[0, 6])
        .max_shape(&[None, Some(6)])
        .fill_value(-1i32)
        .virtual_map(
            "frames_%b.h5",
            "f",
            S::All,
            S::Regular {
                start: vec![0, 0],
                stride: vec![3, 1],
                count: vec![S::UNLIMITED, 1],
                block: vec![2, 6],
            },
        )
        .create("p")
        .unwrap();
    let u = file
        .new_dataset::<i32>()
        .shape(&[0, 6])
        .max_shape(&[None, Some(6)])
        .virtual_map(
            "grow.h5",
            "g",
            S::Regular {
                start: vec![0, 0],
                stride: vec![1, 1],
                count: vec![1, 1],
                block: vec![S::UNLIMITED, 6],
            },
            S::Regular {
                start: vec![1, 0],
                stride: vec![1, 1],
                count: vec![1, 1],
                block: vec![S::UNLIMITED, 6],
            },
        )
        .create("u")
        .unwrap();
    // The mappings read back as they were given.
    let maps = v.virtual_mappings().unwrap();
    assert_eq!(maps.len(), 4);
    assert_eq!(
        (
            maps[1].source_file.as_str(),
            maps[1].source_dataset.as_str()
        ),
        ("other.h5", "d")
    );
    assert_eq!(maps[0].source, S::All);
    assert_eq!(maps[2].target, S::block(&[5, 0], &[1, 6]));
    assert_eq!(
        maps[3].target,
        S::Blocks(vec![(vec![10, 0], vec![1, 2]), (vec![10, 4], vec![2, 2])])
    );
    assert_eq!(
        p.virtual_mappings().unwrap()[0].target,
        S::Regular {
            start: vec![0, 0],
            stride: vec![3, 1],
            count: vec![S::UNLIMITED, 1],
            block: vec![2, 6],
        }
    );
    // What h5chunk reads is what the sources hold.
    let mut want = vec![-7i32; 72];
    want[..24].copy_from_slice(&(0..24).collect::<Vec<i32>>());
    for (k, row) in [4, 6, 8].into_iter().enumerate() {
        for c in 0..6 {
            want[row * 6 + c] = -((k * 6 + c) as i32);
        }
    }
    // The union's 6 elements in C order: (10,0) (10,1) (10,4) (10,5) (11,4) (11,5).
    for (i, at) in [60, 61, 64, 65, 70, 71].into_iter().enumerate() {
        want[at] = 6 + i as i32;
    }
    assert_eq!(v.read::<i32>().unwrap(), want);
    assert_eq!(p.shape(), vec![8, 6]);
    assert_eq!(&p.read::<i32>().unwrap()[36..], &[3000; 12]);
    assert_eq!(u.shape(), vec![6, 6]);
    assert_eq!(
        &u.read::<i32>().unwrap()[6..],
        &(500..530).collect::<Vec<i32>>()[..]
    );
    assert!(matches!(
        file.new_dataset::<i32>()
            .shape(&[2])
            .virtual_map(".", "src", S::block(&[0, 0], &[1, 3]), S::block(&[0], &[2]))
            .create("bad"),
        Err(Error::InvalidArgument { .. })
    ));
    let ours: Vec<(String, Vec<u8>)> = ["v", "p", "u"]
        .iter()
        .map(|n| (n.to_string(), file.dataset(n).unwrap().read_raw().unwrap()))
        .collect();
    file.close().unwrap();
    // h5chunk reopens what it wrote alike.
    let again = File::open(&path).unwrap();
    for (n, bytes) in &ours {
        assert_eq!(&again.dataset(n).unwrap().read_raw().unwrap(), bytes, "{n}");
    }
    drop(again);
    if let Some(h5dump) =
        interop::h5dump("virtual_datasets_h5chunk_writes_read_equal_in_h5py_and_h5dump")
    {
        for (n, bytes) in &ours {
            assert_eq!(
                &h5dump_values(&h5dump, &path, &format!("/{n}"), &dir),
                bytes,
                "h5dump {n}"
            );
        }
    }
    let Some(python) =
        interop::python("virtual_datasets_h5chunk_writes_read_equal_in_h5py_and_h5dump")
    else {
        return;
    };
    for (n, bytes) in &ours {
        let hex = interop::run_python(
            &python,
            "import sys, os, h5py\nos.chdir(os.path.dirname(sys.argv[1]))\n\
             d = h5py.File(sys.argv[1], 'r')[sys.argv[2]]\nassert d.is_virtual\n\
             print(d[...].astype('<i4').tobytes().hex())",
            &[s(&path), n],
        );
        assert_eq!(unhex(hex.trim()), *bytes, "h5py {n}");
    }
}

/// Run as a child process by `vds_prefix_finds_sources`, with `HDF5_VDS_PREFIX` set; does
/// nothing otherwise.
#[test]
fn vds_prefix_child() {
    let Ok(dir) = std::env::var("H5CHUNK_VDS_PREFIX_TEST") else {
        return;
    };
    let f = File::open(Path::new(&dir).join("vds/vds_latest.h5")).unwrap();
    let stack = f.dataset("stack").unwrap();
    assert_eq!(
        stack.read_slice::<i32>(&[0, 0], &[1, 20], None).unwrap(),
        (0..20).collect::<Vec<i32>>()
    );
    println!("VDS_PREFIX_CHILD_OK");
}

/// A source file away from the virtual file's folder is found through `HDF5_VDS_PREFIX`, as
/// h5py finds it; without the variable it is missing, and reads as the fill value.
#[test]
fn vds_prefix_finds_sources() {
    let Some(python) = interop::python("vds_prefix_finds_sources") else {
        return;
    };
    let dir = folder("prefix");
    interop::run_python(&python, GEN_VDS, &[s(&dir)]);
    for sub in ["vds", "p"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    std::fs::rename(dir.join("vds_latest.h5"), dir.join("vds/vds_latest.h5")).unwrap();
    std::fs::rename(dir.join("src_a.h5"), dir.join("p/src_a.h5")).unwrap();
    let prefix = s(&dir.join("p")).to_owned();
    let out = interop::run_python_env(
        &python,
        "import sys, h5py; print(h5py.File(sys.argv[1], 'r')['stack'][0].sum())",
        &[s(&dir.join("vds/vds_latest.h5"))],
        &[("HDF5_VDS_PREFIX", &prefix)],
    );
    assert_eq!(out.trim(), (0..20).sum::<i32>().to_string());
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "vds_prefix_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("HDF5_VDS_PREFIX", &prefix)
        .env("H5CHUNK_VDS_PREFIX_TEST", &dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success() && stdout.contains("VDS_PREFIX_CHILD_OK"),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&child.stderr)
    );
    if std::env::var_os("HDF5_VDS_PREFIX").is_none() {
        let f = File::open(dir.join("vds/vds_latest.h5")).unwrap();
        let stack = f.dataset("stack").unwrap();
        assert_eq!(
            stack.read_slice::<i32>(&[0, 0], &[1, 20], None).unwrap(),
            vec![-1; 20]
        );
    }
}

/// Two unlimited mappings that reach unequally far (rows 0, 2, 4, ... from `a.h5`, 5 rows;
/// rows 1, 3, ... from `b.h5`, 2 rows) and a `%b` mapping whose blocks leave gaps, read by
/// h5py in both of libhdf5's views.
const VIEWS: &str = r#"
import sys, os, json, h5py, numpy as np
from h5py import h5s, h5p, h5d, h5t
folder = sys.argv[1]
U = h5s.UNLIMITED
def src(name, rows, base):
    with h5py.File(os.path.join(folder, name), 'w', libver='latest') as f:
        f.create_dataset('d', data=(np.arange(rows * 3).reshape(rows, 3) + base).astype('<i4'),
                         maxshape=(None, 3))
src('a.h5', 5, 0)
src('b.h5', 2, 100)
for i in range(3):
    with h5py.File(os.path.join(folder, f'p_{i}.h5'), 'w') as f:
        f['d'] = np.full((2, 3), 1000 + i, '<i4')
with h5py.File(os.path.join(folder, 'views.h5'), 'w', libver='latest') as f:
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_fill_value(np.array(-9, '<i4'))
    for start, name in ((0, b'a.h5'), (1, b'b.h5')):
        vs = h5s.create_simple((0, 3), (U, 3)); vs.select_hyperslab((start, 0), (U, 1), (2, 1), (1, 3))
        ss = h5s.create_simple((0, 3), (U, 3)); ss.select_hyperslab((0, 0), (U, 1), (1, 1), (1, 3))
        dcpl.set_virtual(vs, name, b'd', ss)
    h5d.create(f.id, b'two', h5t.STD_I32LE, h5s.create_simple((0, 3), (U, 3)), dcpl=dcpl)
    dcpl = h5p.create(h5p.DATASET_CREATE)
    vs = h5s.create_simple((0, 3), (U, 3)); vs.select_hyperslab((0, 0), (U, 1), (3, 1), (2, 3))
    dcpl.set_virtual(vs, b'p_%b.h5', b'd', h5s.create_simple((2, 3)))
    h5d.create(f.id, b'printf', h5t.STD_I32LE, h5s.create_simple((0, 3), (U, 3)), dcpl=dcpl)
out = {}
with h5py.File(os.path.join(folder, 'views.h5'), 'r') as f:
    for view, name in ((h5d.VDS_LAST_AVAILABLE, 'last'), (h5d.VDS_FIRST_MISSING, 'first')):
        for d in ('two', 'printf'):
            dapl = h5p.create(h5p.DATASET_ACCESS)
            dapl.set_virtual_view(view)
            ds = h5py.Dataset(h5d.open(f.id, d.encode(), dapl=dapl))
            out[f'{name}/{d}'] = {'shape': list(ds.shape),
                                  'hex': ds[...].astype('<i4').tobytes().hex()}
print(json.dumps(out))
"#;

#[test]
fn both_views_of_unlimited_mappings_read_equal_h5py() {
    use h5chunk::VirtualView;
    let Some(python) = interop::python("both_views_of_unlimited_mappings_read_equal_h5py") else {
        return;
    };
    let dir = folder("views");
    let out = interop::run_python(&python, VIEWS, &[s(&dir)]);
    let want: Value = serde_json::from_str(out.trim()).unwrap();
    let file = File::open(dir.join("views.h5")).unwrap();
    for name in ["two", "printf"] {
        let d = file.dataset(name).unwrap();
        assert_eq!(d.virtual_view(), Some(VirtualView::LastAvailable));
        for (view, key) in [
            (VirtualView::FirstMissing, "first"),
            (VirtualView::LastAvailable, "last"),
        ] {
            d.set_virtual_view(view).unwrap();
            assert_eq!(d.virtual_view(), Some(view));
            let w = &want[format!("{key}/{name}")];
            assert_eq!(d.shape(), u64s(&w["shape"]), "{key}/{name}: shape");
            assert_eq!(
                d.read_raw().unwrap(),
                unhex(w["hex"].as_str().unwrap()),
                "{key}/{name}: values"
            );
        }
    }
    // The views differ here, so the test says something.
    assert_ne!(want["first/two"]["shape"], want["last/two"]["shape"]);
    assert_ne!(want["first/printf"]["shape"], want["last/printf"]["shape"]);
    let src = File::open(dir.join("a.h5")).unwrap().dataset("d").unwrap();
    assert!(matches!(
        src.set_virtual_view(VirtualView::FirstMissing),
        Err(Error::InvalidArgument { .. })
    ));
    assert_eq!(src.virtual_view(), None);
}

/// A virtual dataset that is its own source (h5py writes it; libhdf5 crashes reading it):
/// opening it is a typed error, not a stack overflow.
#[test]
fn a_cycle_of_mappings_is_an_error() {
    let Some(python) = interop::python("a_cycle_of_mappings_is_an_error") else {
        return;
    };
    let dir = folder("cycle");
    interop::run_python(
        &python,
        "import sys, h5py\n\
         with h5py.File(sys.argv[1], 'w') as f:\n\
         \x20   lay = h5py.VirtualLayout((4,), 'i4')\n\
         \x20   lay[:] = h5py.VirtualSource('.', 'self', shape=(4,))\n\
         \x20   f.create_virtual_dataset('self', lay, fillvalue=3)\n\
         \x20   f['plain'] = [1, 2]\n",
        &[s(&dir.join("c.h5"))],
    );
    let file = File::open(dir.join("c.h5")).unwrap();
    assert!(matches!(
        file.dataset("self"),
        Err(Error::Unsupported(w)) if w.contains("nest")
    ));
    // The file stays usable.
    assert_eq!(
        file.dataset("plain").unwrap().read::<i64>().unwrap(),
        [1, 2]
    );
}
