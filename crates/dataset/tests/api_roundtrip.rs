//! Files written through the `h5chunk` API, for each index kind available, read back by
//! h5chunk after reopening and by libhdf5 (h5py and h5dump), and appended to by h5py.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk::libver::{Libver, LibverBounds};
use h5chunk::{File, FileOptions, FilterSpec, IndexKind};
use h5chunk_testkit::{h5py, interop};

fn tmp(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

fn latest() -> FileOptions {
    FileOptions {
        bounds: LibverBounds::new(Libver::Latest, Libver::Latest).unwrap(),
        ..FileOptions::default()
    }
}

fn le_i32(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The low bound `Latest` writes layout version 5 for the filtered datasets (as HDF5 2.0
/// does), which libhdf5 1.10's h5dump cannot read; `V110` writes version 4 everywhere.
#[test]
fn latest_format_indexes_roundtrip_and_open_in_libhdf5() {
    roundtrip(latest(), "api_latest.h5", false);
    let v110 = FileOptions {
        bounds: LibverBounds::new(Libver::V110, Libver::Latest).unwrap(),
        ..FileOptions::default()
    };
    roundtrip(v110, "api_v110.h5", true);
}

fn roundtrip(options: FileOptions, name: &str, h5dump_reads: bool) {
    let path = tmp(name);
    let f = File::create_with(&path, options).unwrap();
    // Fixed array: 2-D, partial edge chunks, written in two overlapping slabs.
    let fa = f
        .new_dataset::<i32>()
        .shape(&[10, 7])
        .chunk(&[3, 2])
        .create("fa")
        .unwrap();
    assert_eq!(fa.index_kind(), Some(IndexKind::FixedArray));
    let all: Vec<i32> = (0..70).collect();
    fa.write(&all).unwrap();
    fa.write_slice(&[-1i32; 6], &[4, 1], &[2, 3], None).unwrap();
    // Single chunk, filtered.
    let single = f
        .new_dataset::<f64>()
        .shape(&[4, 5])
        .chunk(&[4, 5])
        .filter(FilterSpec::Shuffle)
        .filter(FilterSpec::Deflate(6))
        .create("single")
        .unwrap();
    assert_eq!(single.index_kind(), Some(IndexKind::Single));
    let fvals: Vec<f64> = (0..20).map(|i| i as f64 * 0.5).collect();
    single.write(&fvals).unwrap();
    // Implicit: early allocation, no filters; only part written (the rest reads as fill 7).
    let imp = f
        .new_dataset::<u16>()
        .shape(&[9])
        .chunk(&[4])
        .fill_value(7u16)
        .alloc_time(h5chunk::index::AllocTime::Early)
        .create("implicit")
        .unwrap();
    assert_eq!(imp.index_kind(), Some(IndexKind::Implicit));
    imp.write_slice(&[1u16, 2, 3], &[2], &[3], None).unwrap();
    // Extensible array: appended in pieces along an unlimited first dimension, with gzip.
    let ea = f
        .new_dataset::<i32>()
        .shape(&[0, 3])
        .max_shape(&[None, Some(3)])
        .chunk(&[2, 3])
        .filter(FilterSpec::Deflate(4))
        .create("ea")
        .unwrap();
    assert_eq!(ea.index_kind(), Some(IndexKind::ExtensibleArray));
    let mut expect_ea = Vec::new();
    for n in 0..50 {
        let row = [n, n * 10, n * 100];
        ea.append(&row).unwrap();
        expect_ea.extend_from_slice(&row);
    }
    // Extensible array with the unlimited dimension second (swizzled), strided writes.
    let ea2 = f
        .new_dataset::<u8>()
        .shape(&[3, 8])
        .max_shape(&[Some(3), None])
        .chunk(&[2, 3])
        .create("g_ea_dim1")
        .unwrap();
    ea2.write(&(0..24).collect::<Vec<u8>>()).unwrap();
    ea2.write_slice(&[100u8, 101, 102, 103], &[0, 1], &[2, 2], Some(&[2, 4]))
        .unwrap();
    f.close().unwrap();
    drop((fa, single, imp, ea, ea2));

    let mut expect_fa = all.clone();
    for r in 4..6 {
        for c in 1..4 {
            expect_fa[r * 7 + c] = -1;
        }
    }
    let expect_imp: Vec<u16> = vec![7, 7, 1, 2, 3, 7, 7, 7, 7];
    let mut expect_ea2: Vec<u8> = (0..24).collect();
    for (i, (r, c)) in [(0, 1), (0, 5), (2, 1), (2, 5)].iter().enumerate() {
        expect_ea2[r * 8 + c] = 100 + i as u8;
    }

    // h5chunk reads its own file back after reopening.
    let f = File::open(&path).unwrap();
    assert_eq!(f.superblock_version(), 3);
    assert_eq!(f.dataset("fa").unwrap().read::<i32>().unwrap(), expect_fa);
    assert_eq!(f.dataset("single").unwrap().read::<f64>().unwrap(), fvals);
    assert_eq!(
        f.dataset("implicit").unwrap().read::<u16>().unwrap(),
        expect_imp
    );
    let ea = f.dataset("ea").unwrap();
    assert_eq!(ea.shape(), vec![50, 3]);
    assert_eq!(ea.read::<i32>().unwrap(), expect_ea);
    assert_eq!(ea.chunks().unwrap().len(), 25);
    assert_eq!(
        f.dataset("g_ea_dim1").unwrap().read::<u8>().unwrap(),
        expect_ea2
    );
    assert_eq!(
        f.dataset("fa")
            .unwrap()
            .read_slice::<i32>(&[3, 0], &[3, 4], None)
            .unwrap(),
        vec![21, 22, 23, 24, 28, -1, -1, -1, 35, -1, -1, -1]
    );
    // Closed, lock and all, though `ea` outlives it: h5py opens it for writing next.
    f.close().unwrap();

    if h5dump_reads
        && let Some(h5dump) = interop::h5dump("latest_format_indexes_roundtrip_and_open_in_libhdf5")
    {
        interop::h5dump_ok(&h5dump, &path);
    }
    let Some(python) = interop::python("latest_format_indexes_roundtrip_and_open_in_libhdf5")
    else {
        return;
    };
    assert_eq!(h5py::values_le(&python, &path, "fa"), le_i32(&expect_fa));
    let fbytes: Vec<u8> = fvals.iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(h5py::values_le(&python, &path, "single"), fbytes);
    let ibytes: Vec<u8> = expect_imp.iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(h5py::values_le(&python, &path, "implicit"), ibytes);
    assert_eq!(h5py::values_le(&python, &path, "ea"), le_i32(&expect_ea));
    assert_eq!(h5py::values_le(&python, &path, "g_ea_dim1"), expect_ea2);
    // libhdf5 reports the index kinds we wrote, and h5py can append to our extensible array.
    let out = interop::run_python(
        &python,
        r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'r+') as f:
    d = f['ea']
    n = d.shape[0]
    d.resize((n + 5, 3))
    d[n:] = np.arange(15, dtype='<i4').reshape(5, 3) + 1000
    print(n)
"#,
        &[&path.to_string_lossy()],
    );
    assert_eq!(out.trim(), "50");
    let f = File::open(&path).unwrap();
    let ea = f.dataset("ea").unwrap();
    assert_eq!(ea.shape(), vec![55, 3]);
    let mut more = expect_ea.clone();
    more.extend((0..15).map(|i| i + 1000));
    assert_eq!(ea.read::<i32>().unwrap(), more);
}

#[test]
fn resize_shrinks_and_refills() {
    let path = tmp("api_resize.h5");
    let f = File::create_with(&path, latest()).unwrap();
    let d = f
        .new_dataset::<i64>()
        .shape(&[10])
        .max_shape(&[None])
        .chunk(&[4])
        .fill_value(-5i64)
        .create("d")
        .unwrap();
    d.write(&(0..10).collect::<Vec<i64>>()).unwrap();
    d.resize(&[5]).unwrap();
    d.resize(&[9]).unwrap();
    assert_eq!(
        d.read::<i64>().unwrap(),
        vec![0, 1, 2, 3, 4, -5, -5, -5, -5]
    );
    // Chunk 2 (elements 8..12) was dropped entirely; chunk 1 was cut and refilled.
    assert_eq!(d.chunks().unwrap().len(), 2);
    assert!(d.resize(&[3, 3]).is_err());
    // Another number type converts, as libhdf5 converts: every value fits an i8.
    assert_eq!(d.read::<i8>().unwrap(), [0, 1, 2, 3, 4, -5, -5, -5, -5]);
    f.close().unwrap();
    let f = File::open(&path).unwrap();
    assert_eq!(
        f.dataset("d").unwrap().read::<i64>().unwrap(),
        vec![0, 1, 2, 3, 4, -5, -5, -5, -5]
    );
}

#[test]
fn groups_new_and_old_style() {
    for (opts, name) in [
        (latest(), "groups_latest.h5"),
        (FileOptions::default(), "groups_earliest.h5"),
    ] {
        let path = tmp(name);
        let f = File::create_with(&path, opts).unwrap();
        let g = f.create_group("a").unwrap();
        g.create_group("b").unwrap();
        for i in 0..12 {
            f.create_group(&format!("/a/b/g{i:02}")).unwrap();
        }
        let names: Vec<String> = f
            .group("/a/b")
            .unwrap()
            .members()
            .unwrap()
            .into_iter()
            .map(|m| m.0)
            .collect();
        assert_eq!(names.len(), 12);
        assert!(f.create_group("/a/b/g03").is_err());
        f.close().unwrap();
        let f = File::open(&path).unwrap();
        assert_eq!(f.group("/a/b").unwrap().members().unwrap().len(), 12);
        if let Some(python) = interop::python("groups_new_and_old_style") {
            let out = interop::run_python(
                &python,
                "import sys, h5py\nf = h5py.File(sys.argv[1], 'r')\nprint(sorted(f['a/b']))",
                &[&path.to_string_lossy()],
            );
            assert!(
                out.contains("'g00'") && out.contains("'g11'"),
                "{name}: {out}"
            );
        }
        if let Some(h5dump) = interop::h5dump("groups_new_and_old_style") {
            interop::h5dump_ok(&h5dump, &path);
        }
    }
}

#[test]
fn errors_name_the_problem() {
    let path = tmp("not_hdf5.h5");
    std::fs::write(&path, b"definitely not an HDF5 file, just text").unwrap();
    let e = File::open(&path).unwrap_err();
    assert!(matches!(e, h5chunk::Error::NotHdf5 { .. }), "{e}");
    assert!(e.to_string().contains("not an HDF5 file"), "{e}");
    let e = File::open(tmp("does_not_exist.h5")).unwrap_err();
    assert!(matches!(e, h5chunk::Error::Io { .. }));
    // A truncated copy of a valid file.
    let good = tmp("truncate_me.h5");
    let f = File::create_with(&good, latest()).unwrap();
    f.new_dataset::<u8>()
        .shape(&[100])
        .chunk(&[10])
        .create("d")
        .unwrap()
        .write(&[1u8; 100])
        .unwrap();
    f.close().unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let cut = tmp("truncated.h5");
    std::fs::write(&cut, &bytes[..bytes.len() - 20]).unwrap();
    let e = File::open(&cut).unwrap_err();
    assert!(
        matches!(e, h5chunk::Error::Truncated { len, eof, .. } if len + 20 == eof),
        "{e}"
    );

    // Members that are missing or of the wrong kind, bad arguments, writes to a read-only file.
    let f = File::open(&good).unwrap();
    let e = f.dataset("nope").unwrap_err();
    assert!(
        matches!(&e, h5chunk::Error::NotFound { group, name } if group == "/" && name == "nope"),
        "{e}"
    );
    let e = f.group("d").unwrap_err();
    assert!(
        matches!(&e, h5chunk::Error::WrongKind { path, expected: "group" } if path == "/d"),
        "{e}"
    );
    let e = f.dataset("/").unwrap_err();
    assert!(
        matches!(e, h5chunk::Error::InvalidArgument { name: "path", .. }),
        "{e}"
    );
    let d = f.dataset("d").unwrap();
    let e = d.write(&[2u8; 100]).unwrap_err();
    assert!(matches!(e, h5chunk::Error::ReadOnly { .. }), "{e}");
    // Numbers convert to any number type (1.0 is what the u8 dataset holds); a value that
    // does not fit is named.
    assert_eq!(d.read::<f64>().unwrap(), vec![1.0; 100]);
    let e = d.read_strings().unwrap_err();
    assert!(matches!(e, h5chunk::Error::InvalidArgument { .. }), "{e}");
    let e = d.read_slice::<u8>(&[95], &[10], None).unwrap_err();
    assert!(
        matches!(
            e,
            h5chunk::Error::InvalidArgument {
                name: "selection",
                ..
            }
        ),
        "{e}"
    );
    drop(d);
    drop(f);
    let f = File::open_rw(&good).unwrap();
    let e = f
        .new_dataset::<u8>()
        .shape(&[4])
        .create("no_chunk")
        .unwrap_err();
    assert!(
        matches!(e, h5chunk::Error::InvalidArgument { name: "chunk", .. }),
        "{e}"
    );
    let e = f
        .new_dataset::<u8>()
        .shape(&[4])
        .chunk(&[2])
        .create("d")
        .unwrap_err();
    assert!(
        matches!(&e, h5chunk::Error::Exists { name, .. } if name == "d"),
        "{e}"
    );
}

/// The skip list on request: appends, shrink, reopen; libhdf5 refuses the dataset with its
/// own error instead of misreading it, and still reads the rest of the file.
#[test]
fn skip_list_on_request() {
    let path = tmp("api_skiplist.h5");
    let f = File::create_with(&path, latest()).unwrap();
    let d = f
        .new_dataset::<i32>()
        .shape(&[0, 5])
        .max_shape(&[None, Some(5)])
        .chunk(&[2, 2])
        .index(IndexKind::SkipList)
        .create("sl")
        .unwrap();
    assert_eq!(d.index_kind(), Some(IndexKind::SkipList));
    let mut expect = Vec::new();
    for n in 0..300 {
        let row: Vec<i32> = (0..5).map(|c| n * 5 + c).collect();
        d.append(&row).unwrap();
        expect.extend(row);
    }
    f.new_dataset::<u8>()
        .shape(&[4])
        .chunk(&[4])
        .create("plain")
        .unwrap()
        .write(&[9u8; 4])
        .unwrap();
    f.flush().unwrap();
    assert_eq!(d.read::<i32>().unwrap(), expect);
    d.resize(&[101, 5]).unwrap();
    expect.truncate(101 * 5);
    f.close().unwrap();
    drop(d);
    let f = File::open(&path).unwrap();
    let d = f.dataset("sl").unwrap();
    assert_eq!(d.index_kind(), Some(IndexKind::SkipList));
    assert_eq!(d.read::<i32>().unwrap(), expect);
    assert_eq!(d.chunks().unwrap().len(), 51 * 3);
    if let Some(python) = interop::python("skip_list_on_request") {
        let out = interop::run_python(
            &python,
            r#"
import sys, h5py
f = h5py.File(sys.argv[1], 'r')
print(list(f['plain'][()]))
try:
    f['sl']
    print('opened')
except Exception as e:
    print('refused:', e)
"#,
            &[&path.to_string_lossy()],
        );
        assert!(
            out.contains("[np.uint8(9)") || out.contains("[9, 9, 9, 9]"),
            "{out}"
        );
        assert!(out.contains("refused"), "{out}");
    }
}

/// h5py's default format (earliest bounds): version 1 B-tree indexes in old-style groups, with
/// and without filters, ranks 1 to 3; libhdf5 reads everything and appends to our trees.
#[test]
fn default_format_btree1_roundtrip() {
    let path = tmp("api_earliest.h5");
    let f = File::create(&path).unwrap();
    assert_eq!(f.superblock_version(), 0);
    let g = f.create_group("data").unwrap();
    let d1 = g
        .new_dataset::<u16>()
        .shape(&[0])
        .max_shape(&[None])
        .chunk(&[7])
        .create("appended")
        .unwrap();
    assert_eq!(
        (d1.index_kind(), d1.layout_version()),
        (Some(IndexKind::BTree1), Some(3))
    );
    let mut expect1: Vec<u16> = Vec::new();
    for n in 0..2000u16 {
        d1.append(&[n.wrapping_mul(3)]).unwrap();
        expect1.push(n.wrapping_mul(3));
    }
    let d2 = f
        .new_dataset::<f32>()
        .shape(&[20, 30])
        .chunk(&[6, 7])
        .filter(FilterSpec::Shuffle)
        .filter(FilterSpec::Deflate(5))
        .filter(FilterSpec::Fletcher32)
        .create("/data/filtered2d")
        .unwrap();
    let v2: Vec<f32> = (0..600).map(|i| i as f32 / 4.0).collect();
    d2.write(&v2).unwrap();
    let d3 = f
        .new_dataset::<i8>()
        .shape(&[5, 6, 7])
        .max_shape(&[None, Some(6), None])
        .chunk(&[2, 3, 4])
        .filter(FilterSpec::Lzf)
        .create("/cube")
        .unwrap();
    let v3: Vec<i8> = (0..210).map(|i| (i % 100) as i8 - 50).collect();
    d3.write(&v3).unwrap();
    f.close().unwrap();
    drop((d1, d2, d3, g));

    let f = File::open(&path).unwrap();
    let d1 = f.dataset("/data/appended").unwrap();
    assert_eq!(d1.read::<u16>().unwrap(), expect1);
    assert_eq!(d1.chunks().unwrap().len(), 2000usize.div_ceil(7));
    assert_eq!(
        f.dataset("/data/filtered2d")
            .unwrap()
            .read::<f32>()
            .unwrap(),
        v2
    );
    assert_eq!(f.dataset("/cube").unwrap().read::<i8>().unwrap(), v3);
    // Closed, lock and all, though `d1` outlives it: h5py opens it for writing next.
    f.close().unwrap();
    let Some(python) = interop::python("default_format_btree1_roundtrip") else {
        return;
    };
    let le16: Vec<u8> = expect1.iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(h5py::values_le(&python, &path, "/data/appended"), le16);
    let le32: Vec<u8> = v2.iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(h5py::values_le(&python, &path, "/data/filtered2d"), le32);
    assert_eq!(
        h5py::values_le(&python, &path, "/cube"),
        v3.iter().map(|&x| x as u8).collect::<Vec<_>>()
    );
    if let Some(h5dump) = interop::h5dump("default_format_btree1_roundtrip") {
        // Debian's h5dump has no LZF: dump the rest.
        for ds in ["/data/appended", "/data/filtered2d"] {
            let out = std::process::Command::new(&h5dump)
                .args(["-d", ds])
                .arg(&path)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "h5dump -d {ds}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    interop::run_python(
        &python,
        r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'r+') as f:
    d = f['data/appended']
    n = d.shape[0]
    d.resize((n + 100,))
    d[n:] = np.arange(100, dtype='<u2') + 7
    f.create_dataset('data/by_h5py', data=np.arange(10, dtype='<i4'), chunks=(3,))
"#,
        &[&path.to_string_lossy()],
    );
    let f = File::open(&path).unwrap();
    let mut more = expect1.clone();
    more.extend((0..100).map(|i| i + 7));
    assert_eq!(
        f.dataset("/data/appended").unwrap().read::<u16>().unwrap(),
        more
    );
    assert_eq!(
        f.dataset("/data/by_h5py").unwrap().read::<i32>().unwrap(),
        (0..10).collect::<Vec<i32>>()
    );
}

/// Direct chunk I/O: pre-filtered chunks written as they are, with a mask that skips a
/// filter, and read back without decoding; h5py decodes them.
#[test]
fn direct_chunk_io() {
    let path = tmp("api_direct.h5");
    let f = File::create_with(&path, latest()).unwrap();
    let d = f
        .new_dataset::<i32>()
        .shape(&[8])
        .max_shape(&[None])
        .chunk(&[4])
        .filter(FilterSpec::Deflate(4))
        .create("d")
        .unwrap();
    let raw: Vec<u8> = (10..14i32).flat_map(|x| x.to_le_bytes()).collect();
    // Chunk 0 stored raw with the deflate filter skipped (mask bit 0).
    d.write_direct_chunk(&[0], &raw, 1).unwrap();
    // Chunk 1 compressed by us through the normal path.
    d.write_slice(&[20i32, 21, 22, 23], &[4], &[4], None)
        .unwrap();
    assert_eq!(d.read_direct_chunk(&[0]).unwrap(), Some((raw.clone(), 1)));
    let (stored, mask) = d.read_direct_chunk(&[4]).unwrap().unwrap();
    assert_eq!(mask, 0);
    assert_ne!(stored.len(), 16, "chunk 1 went through deflate");
    assert!(d.write_direct_chunk(&[1], &raw, 0).is_err());
    assert!(d.write_direct_chunk(&[8], &raw, 0).is_err());
    f.close().unwrap();
    drop(d);
    let f = File::open(&path).unwrap();
    assert_eq!(
        f.dataset("d").unwrap().read::<i32>().unwrap(),
        vec![10, 11, 12, 13, 20, 21, 22, 23]
    );
    if let Some(python) = interop::python("direct_chunk_io") {
        let want: Vec<u8> = [10, 11, 12, 13, 20, 21, 22, 23i32]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert_eq!(h5py::values_le(&python, &path, "d"), want);
    }
}

/// Two unlimited dimensions: a version 2 B-tree, grown along X, along Y and alternately;
/// libhdf5 reads it and extends it, and we read its additions.
#[test]
fn btree2_grows_in_both_dimensions() {
    let path = tmp("api_btree2.h5");
    let f = File::create_with(&path, latest()).unwrap();
    let d = f
        .new_dataset::<i32>()
        .shape(&[0, 0])
        .max_shape(&[None, None])
        .chunk(&[2, 3])
        .create("grid")
        .unwrap();
    assert_eq!(d.index_kind(), Some(IndexKind::BTree2));
    let value = |r: u64, c: u64| (r * 1000 + c) as i32;
    let (mut rows, mut cols) = (0u64, 0u64);
    for step in 0..60 {
        let (nr, nc) = match step % 3 {
            0 => (rows + 1, cols.max(1)),
            1 => (rows.max(1), cols + 2),
            _ => (rows + 1, cols + 1),
        };
        d.resize(&[nr, nc]).unwrap();
        let all: Vec<i32> = (0..nr)
            .flat_map(|r| (0..nc).map(move |c| value(r, c)))
            .collect();
        d.write(&all).unwrap();
        (rows, cols) = (nr, nc);
    }
    f.close().unwrap();
    drop(d);
    let expect: Vec<i32> = (0..rows)
        .flat_map(|r| (0..cols).map(move |c| value(r, c)))
        .collect();
    let f = File::open(&path).unwrap();
    let d = f.dataset("grid").unwrap();
    assert_eq!(d.shape(), vec![rows, cols]);
    assert_eq!(d.read::<i32>().unwrap(), expect);
    assert_eq!(
        d.chunks().unwrap().len() as u64,
        rows.div_ceil(2) * cols.div_ceil(3)
    );
    drop((d, f));
    if let Some(h5dump) = interop::h5dump("btree2_grows_in_both_dimensions") {
        interop::h5dump_ok(&h5dump, &path);
    }
    let Some(python) = interop::python("btree2_grows_in_both_dimensions") else {
        return;
    };
    assert_eq!(h5py::values_le(&python, &path, "grid"), le_i32(&expect));
    interop::run_python(
        &python,
        r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'r+') as f:
    d = f['grid']
    r, c = d.shape
    d.resize((r + 3, c + 4))
    d[r:, :] = -1
    d[:, c:] = -2
"#,
        &[&path.to_string_lossy()],
    );
    let f = File::open(&path).unwrap();
    let d = f.dataset("grid").unwrap();
    let (r2, c2) = (rows + 3, cols + 4);
    let got = d.read::<i32>().unwrap();
    for r in 0..r2 {
        for c in 0..c2 {
            let want = if c >= cols {
                -2
            } else if r >= rows {
                -1
            } else {
                value(r, c)
            };
            assert_eq!(got[(r * c2 + c) as usize], want, "({r}, {c})");
        }
    }
}

/// Traced appends with flushes in between, for every index with a structure: the recorded
/// metadata writes respect every flush dependency (children before parents), and the file
/// reads back. That index blocks never reach the file before the chunks they point to is
/// checked at every crash point in `tests/backends.rs`
/// (`no_crash_leaves_a_record_of_an_unwritten_chunk`): chunks are written before their
/// records go in, so no record needs a chunk proxy.
#[test]
fn traced_appends_keep_the_write_order() {
    for kind in [
        IndexKind::ExtensibleArray,
        IndexKind::BTree1,
        IndexKind::SkipList,
        IndexKind::BTree2,
    ] {
        let path = tmp(&format!("api_proxies_{}.h5", kind.name()));
        let f = FileOptions {
            trace: true,
            ..latest()
        }
        .create(&path)
        .unwrap();
        let max = if kind == IndexKind::BTree2 {
            vec![None, None]
        } else {
            vec![None, Some(4)]
        };
        let d = f
            .new_dataset::<i16>()
            .shape(&[0, 4])
            .max_shape(&max)
            .chunk(&[3, 2])
            .index(kind)
            .create("d")
            .unwrap();
        for n in 0..400i16 {
            d.append(&[n, n, n, n]).unwrap();
            if n % 97 == 0 {
                f.flush().unwrap();
            }
        }
        f.flush().unwrap();
        let trace = f.take_write_trace();
        h5chunk_cache::check_write_order(&trace)
            .unwrap_or_else(|v| panic!("{}: {v:?}", kind.name()));
        let written = trace
            .events
            .iter()
            .filter(|e| matches!(e, h5chunk_cache::TraceEvent::Written { .. }))
            .count();
        assert!(written > 0, "{}: no metadata write traced", kind.name());
        f.close().unwrap();
        drop(d);
        let f = File::open(&path).unwrap();
        assert_eq!(f.dataset("d").unwrap().read::<i16>().unwrap().len(), 1600);
    }
}

/// `read_slice_into` reads what `read_slice` reads, one element or a strided slab, cached or
/// not, and refuses a buffer of another length.
#[test]
fn read_slice_into_matches_read_slice() {
    let path = tmp("read_into.h5");
    let f = File::create(&path).unwrap();
    let d = f
        .new_dataset::<i32>()
        .shape(&[0, 6])
        .max_shape(&[None, Some(6)])
        .chunk(&[2, 3])
        .create("d")
        .unwrap();
    let v: Vec<i32> = (0..60).map(|x| x * 7 - 11).collect();
    d.append(&v).unwrap();
    // Closed (its lock released) before the second open; `d` still reads.
    f.close().unwrap();
    for d in [d, File::open(&path).unwrap().dataset("d").unwrap()] {
        for (i, j) in [(0, 0), (3, 4), (9, 5)] {
            let mut one = [0i32];
            d.read_slice_into(&[i, j], &[1, 1], None, &mut one).unwrap();
            assert_eq!(one[0], v[(i * 6 + j) as usize]);
        }
        let mut slab = vec![0i32; 4 * 2];
        d.read_slice_into(&[1, 1], &[4, 2], Some(&[2, 3]), &mut slab)
            .unwrap();
        assert_eq!(
            slab,
            d.read_slice::<i32>(&[1, 1], &[4, 2], Some(&[2, 3]))
                .unwrap()
        );
        let err = d
            .read_slice_into(&[0, 0], &[2, 2], None, &mut [0i32; 3])
            .unwrap_err();
        assert!(err.to_string().contains("holds 3 elements"), "{err}");
        // One element into a buffer of two is the same refusal, not a partial read.
        assert!(
            d.read_slice_into(&[0, 0], &[1, 1], None, &mut [0i32; 2])
                .is_err()
        );
        // Another element type is refused as read_slice refuses it.
        assert!(
            d.read_slice_into(&[0, 0], &[1, 1], None, &mut [0u8])
                .is_err()
        );
    }
}

/// A dataset written through a `RowWriter` in pieces of awkward sizes and read back slab by
/// slab is the same values in the same order, and the slabs tile the dataset: whole rows,
/// consecutive, each no larger than asked (whole chunk rows when they fit).
#[test]
fn row_writer_and_slabs_stream_a_dataset_in_order() {
    use std::io::Write as _;
    let path = tmp("api_streams.h5");
    let f = File::create(&path).unwrap();
    let (rows, cols) = (1000u64, 37u64);
    let d = f
        .new_dataset::<i32>()
        .shape(&[rows, cols])
        .chunk(&[16, 8])
        .filter(FilterSpec::Deflate(1))
        .create("data")
        .unwrap();
    let values: Vec<i32> = (0..(rows * cols) as i32).map(|i| i * 7 - 3).collect();
    let bytes = le_i32(&values);
    let mut w = d.row_writer(4096).unwrap();
    for piece in bytes.chunks(1013) {
        w.write_all(piece).unwrap();
    }
    w.finish().unwrap();
    // Too few values: an error, not a silently short dataset.
    let mut short = d.row_writer(4096).unwrap();
    short.write_all(&bytes[..bytes.len() - 4]).unwrap();
    assert!(short.finish().is_err());
    drop(d);
    f.close().unwrap();

    let f = File::open(&path).unwrap();
    let d = f.dataset("data").unwrap();
    let mut next_row = 0;
    let mut back = Vec::new();
    for slab in d.slabs(10_000) {
        let slab = slab.unwrap();
        assert_eq!(slab.start, vec![next_row, 0]);
        assert_eq!(slab.count[1], cols);
        // 10,000 bytes hold 67 rows of 148 bytes: 4 chunk rows of 16 (the last fewer).
        assert!(
            slab.count[0] == 64 || next_row + slab.count[0] == rows,
            "{slab:?}"
        );
        assert_eq!(slab.bytes.len() as u64, slab.count[0] * cols * 4);
        next_row += slab.count[0];
        back.extend_from_slice(&slab.bytes);
    }
    assert_eq!(next_row, rows);
    assert_eq!(back, bytes);
}

/// `File::create` starts from nothing whatever was at the path: a file holding other bytes
/// (longer than what is written) is cut, and an empty file (which `create` leaves untruncated)
/// is written from its start; both read back as written.
#[test]
fn create_replaces_what_the_path_held() {
    for (name, before) in [
        ("create_over_bytes.h5", vec![0xa5u8; 1 << 20]),
        ("create_over_empty.h5", Vec::new()),
    ] {
        let path = tmp(name);
        std::fs::write(&path, &before).unwrap();
        let f = File::create(&path).unwrap();
        f.new_dataset::<u16>()
            .shape(&[64])
            .chunk(&[16])
            .create("d")
            .unwrap()
            .write(&(0..64u16).collect::<Vec<_>>())
            .unwrap();
        f.close().unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len < 64 << 10, "{name}: {len} bytes, the old ones cut");
        let f = File::open(&path).unwrap();
        assert_eq!(
            f.dataset("d").unwrap().read::<u16>().unwrap(),
            (0..64u16).collect::<Vec<_>>(),
            "{name}"
        );
        drop(f);
        let _ = std::fs::remove_file(&path);
    }
}
