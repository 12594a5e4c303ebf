//! `h5chunk ls`, `inspect`, `cat` and `import`, run as a program on the libhdf5-written
//! fixtures and on files it writes, checked against the manifest and against h5py.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{dims_text, fails, ok, ok_text, run, s, tmp};
use h5chunk::File;
use h5chunk_testkit::{fixtures, interop};
use serde_json::Value;

/// Every fixture dataset the `h5chunk` API reads, with its values (little-endian, C order).
/// Members of dense groups and v2 B-tree datasets are out of the API's reach for now.
fn readable_fixtures() -> Vec<(fixtures::Fixture, Vec<u8>)> {
    let mut out = Vec::new();
    for fx in fixtures::datasets(|_, _| true) {
        let Ok(f) = File::open(&fx.file) else {
            continue;
        };
        let Ok(d) = f.dataset(fx.path()) else {
            continue;
        };
        if let Ok(values) = d.read_raw() {
            out.push((fx, values));
        }
    }
    assert!(out.len() > 100, "only {} fixture datasets", out.len());
    out
}

fn manifest_dims(v: &Value) -> Vec<Option<u64>> {
    v.as_array()
        .map(|a| a.iter().map(Value::as_u64).collect())
        .unwrap_or_default()
}

#[test]
fn help_for_every_command() {
    let top = ok_text(&["--help"]);
    for cmd in ["ls", "inspect", "cat", "import", "check", "refs", "repack"] {
        assert!(top.contains(cmd), "{top}");
        let help = ok_text(&[cmd, "--help"]);
        assert!(help.contains(&format!("Usage: h5chunk {cmd}")), "{help}");
    }
    let import = ok_text(&["import", "--help"]);
    for flag in [
        "--dtype",
        "--shape",
        "--chunks",
        "--maxshape",
        "--libver",
        "--deflate",
        "--shuffle",
        "--fletcher32",
        "--lzf",
        "--fill",
        "--alloc",
        "--index",
        "--input",
    ] {
        assert!(import.contains(flag), "{flag}: {import}");
    }
    // Usage errors come from clap: a non-zero status and a message, never a panic.
    let out = run(&["frobnicate"]);
    assert!(!out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

#[test]
fn ls_lists_every_fixture_dataset() {
    let mut listings = BTreeMap::new();
    for (fx, _) in readable_fixtures() {
        let listing = listings
            .entry(fx.file.clone())
            .or_insert_with(|| ok_text(&["ls", s(&fx.file)]));
        let dtype = fx.object["dtype"].as_str().unwrap();
        let shape = dims_text(&manifest_dims(&fx.object["shape"]));
        let max = match fx.object["maxshape"].as_array() {
            Some(_) => dims_text(&manifest_dims(&fx.object["maxshape"])),
            None => shape.clone(),
        };
        let prefix = format!("{} {dtype} shape={shape} max={max}", fx.path());
        let line = listing
            .lines()
            .find(|l| l.starts_with(&format!("{} ", fx.path())))
            .unwrap_or_else(|| panic!("{}: {prefix} not in\n{listing}", fx.file.display()));
        assert!(line.starts_with(&prefix), "{line} vs {prefix}");
        match fx.object["index_type"].as_str() {
            Some(kind) => {
                let chunks = dims_text(&manifest_dims(&fx.object["chunks"]));
                assert!(
                    line.contains(&format!(" chunks={chunks} index={kind} ")),
                    "{line}"
                );
            }
            None => assert!(line.contains(" layout="), "{line}"),
        }
        let filters: Vec<&str> = fx.object["filters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| match f["id"].as_u64() {
                Some(1) => "deflate",
                Some(2) => "shuffle",
                Some(3) => "fletcher32",
                Some(32000) => "lzf",
                _ => "filter ",
            })
            .collect();
        let listed = line
            .rsplit_once(" filters=")
            .map(|(_, f)| f)
            .unwrap_or_else(|| panic!("{line}"));
        if filters.is_empty() {
            assert_eq!(listed, "none", "{line}");
        } else {
            let ours: Vec<&str> = listed.split(',').collect();
            assert_eq!(ours.len(), filters.len(), "{line}");
            for (ours, name) in ours.iter().zip(&filters) {
                assert!(ours.starts_with(name), "{name}: {line}");
            }
        }
    }
    // A group argument lists that group only.
    let file = fixtures::dir().join("index_latest.h5");
    let farray = ok_text(&["ls", s(&file), "/farray"]);
    assert!(farray.lines().all(|l| l.starts_with("/farray")), "{farray}");
    assert!(farray.contains("/farray/farray "), "{farray}");
    assert!(fails(&["ls", s(&file), "/nope"]).contains("nope"));
}

#[test]
fn inspect_reports_each_index() {
    let mut kinds = BTreeMap::<String, usize>::new();
    for (fx, _) in readable_fixtures() {
        let Some(kind) = fx.object["index_type"].as_str() else {
            continue;
        };
        let text = ok_text(&["inspect", s(&fx.file), fx.path()]);
        let what = format!("{}:{}\n{text}", fx.file.display(), fx.path());
        assert!(
            text.lines().any(|l| l == format!("index: {kind}")),
            "{what}"
        );
        let lv = fx.object["layout_version"].as_u64().unwrap();
        assert!(
            text.lines().any(|l| l == format!("layout version: {lv}")),
            "{what}"
        );
        if let Some(n) = fx.object["chunks_allocated"].as_u64() {
            assert!(
                text.contains(&format!("\nallocated chunks: {n} ")),
                "{what}"
            );
        }
        let blocks = text
            .lines()
            .find_map(|l| l.strip_prefix("index blocks: "))
            .unwrap_or_else(|| panic!("{what}"));
        let allocated = fx.object["chunks_allocated"].as_u64().unwrap_or(0) > 0;
        match kind {
            "earray" if allocated => assert!(blocks.contains("EAHD=1"), "{what}"),
            "farray" if allocated => {
                assert!(
                    blocks.contains("FAHD=1") && blocks.contains("FADB"),
                    "{what}"
                )
            }
            "btree1" if allocated => assert!(blocks.contains("TREE="), "{what}"),
            "btree2" if allocated => assert!(blocks.contains("BTHD=1"), "{what}"),
            "single" | "implicit" => assert_eq!(blocks, "none", "{what}"),
            _ => {}
        }
        for key in [
            "index metadata bytes: ",
            "index bytes per allocated chunk: ",
        ] {
            assert!(text.contains(key), "{what}");
        }
        let depth: u64 = text
            .lines()
            .find_map(|l| {
                l.strip_prefix("index depth: ")
                    .or_else(|| l.strip_prefix("index levels: "))
            })
            .and_then(|d| d.split(' ').next())
            .and_then(|d| d.parse().ok())
            .unwrap_or_else(|| panic!("{what}"));
        match kind {
            "single" | "implicit" => assert_eq!(depth, 0, "{what}"),
            _ if allocated => assert!(depth >= 1, "{what}"),
            _ => {}
        }
        if fx.path() == "/btree2/btree2_deep" {
            assert!(
                text.contains("\nindex depth: 2\n") && text.contains("BTIN=1"),
                "{what}"
            );
        }
        *kinds.entry(kind.to_owned()).or_default() += 1;
    }
    for kind in ["btree1", "btree2", "earray", "farray", "single", "implicit"] {
        assert!(kinds.contains_key(kind), "no {kind} inspected: {kinds:?}");
    }
    // The paged extensible array has every level, pages included.
    let paged = fixtures::dir().join("ea_paged.h5");
    if paged.exists() {
        let text = ok_text(&["inspect", s(&paged), "/earray_paged"]);
        assert!(text.contains("EADB page="), "{text}");
        assert!(text.contains("\nindex levels: 5\n"), "{text}");
    }
    // A contiguous dataset has no index, and says so.
    let text = ok_text(&[
        "inspect",
        s(&fixtures::dir().join("dtypes_earliest.h5")),
        "/le/int/int32",
    ]);
    assert!(
        text.contains("layout: contiguous (no chunk index)"),
        "{text}"
    );
    assert!(!text.contains("index:"), "{text}");
}

#[test]
fn cat_is_byte_identical_to_h5py() {
    let python = interop::python("cat_is_byte_identical_to_h5py");
    let fixtures = readable_fixtures();
    let files: Vec<&Path> = {
        let mut f: Vec<&Path> = fixtures.iter().map(|(fx, _)| fx.file.as_path()).collect();
        f.sort();
        f.dedup();
        f
    };
    let dir = tmp("cat_h5py");
    // One h5py run reads every fixture dataset.
    let h5py = python.as_ref().map(|p| h5py_all(p, &files, &dir));
    let mut checked = 0;
    for (fx, api) in &fixtures {
        let what = format!("{}:{}", fx.file.display(), fx.path());
        let ours = ok(&["cat", s(&fx.file), fx.path()]);
        assert_eq!(&ours, api, "{what}: against the API");
        if let Some(h5py) = &h5py {
            let i = files.iter().position(|f| *f == fx.file).unwrap();
            let name = fx.path().trim_start_matches('/').to_owned();
            let read = h5py
                .get(&(i, name))
                .unwrap_or_else(|| panic!("{what}: h5py did not read it"));
            assert_eq!(ours, read.values, "{what}: against h5py");
            checked += 1;
        }
    }
    println!(
        "cat checked {} fixture datasets, {checked} against h5py",
        fixtures.len()
    );
}

const NPY_CHECK: &str = r#"
import sys, h5py, numpy as np
a = np.load(sys.argv[1])
with h5py.File(sys.argv[2], 'r') as f:
    b = f[sys.argv[3]][()]
assert a.shape == b.shape, (a.shape, b.shape)
assert a.dtype.kind == b.dtype.kind and a.dtype.itemsize == b.dtype.itemsize, (a.dtype, b.dtype)
assert a.dtype.byteorder in '<|=', a.dtype
assert np.array_equal(a, b, equal_nan=a.dtype.kind == 'f'), 'values differ'
print('ok')
"#;

#[test]
fn cat_npy_loads_in_numpy() {
    let python = interop::python("cat_npy_loads_in_numpy");
    let dir = tmp("cat_npy");
    let cases = [
        ("index_latest.h5", "/farray/farray"),
        ("index_latest.h5", "/earray/earray_dim1"),
        ("dtypes_latest.h5", "/be/float/float64"),
        ("dtypes_latest.h5", "/le/uint/uint8"),
        ("filters_v1.h5", "/combo/shuffle_gzip_be_i8"),
    ];
    for (file, path) in cases {
        let file = fixtures::dir().join(file);
        let npy = ok(&["cat", "--npy", s(&file), path]);
        let raw = ok(&["cat", s(&file), path]);
        assert_eq!(&npy[..6], b"\x93NUMPY");
        let header_len = usize::from(u16::from_le_bytes([npy[8], npy[9]]));
        assert_eq!((10 + header_len) % 64, 0);
        assert_eq!(&npy[10 + header_len..], &raw[..], "{path}");
        let out = dir.join(format!("{}.npy", path.replace('/', "_")));
        std::fs::write(&out, &npy).unwrap();
        if let Some(python) = &python {
            let said = interop::run_python(python, NPY_CHECK, &[s(&out), s(&file), path]);
            assert_eq!(said.trim(), "ok", "{path}");
        }
        // The .npy goes back in through `import`, shape and type from its header.
        let back = dir.join("back.h5");
        let text = ok_text(&["inspect", s(&file), path]);
        let rank = text
            .lines()
            .find_map(|l| l.strip_prefix("shape: "))
            .map(|s| {
                s.trim_matches(['(', ')'])
                    .split(',')
                    .filter(|d| !d.trim().is_empty())
                    .count()
            })
            .unwrap();
        let chunks = vec!["1"; rank].join(",");
        let name = format!("/n{}", path.replace('/', "_"));
        ok(&[
            "import",
            s(&back),
            &name,
            "--chunks",
            &chunks,
            "--input",
            s(&out),
        ]);
        assert_eq!(ok(&["cat", s(&back), &name]), raw, "{path} via .npy");
    }
}

/// Deterministic little-endian values for `dtype` (`i4`, `>f8`, ...): integers spread over
/// the whole range, finite floats.
fn values(dtype: &str, n: usize) -> Vec<u8> {
    let bare = dtype.trim_start_matches('>');
    let size: usize = bare[1..].parse().unwrap();
    let mut out = Vec::with_capacity(n * size);
    for i in 0..n as u64 {
        let x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17) ^ i;
        match (&bare[..1], size) {
            ("f", 4) => out.extend_from_slice(&((i as f32) * 0.75 - 10.5).to_le_bytes()),
            ("f", 8) => out.extend_from_slice(&((x % 100_000) as f64 / 7.0 - 3e3).to_le_bytes()),
            _ => out.extend_from_slice(&x.to_le_bytes()[..size]),
        }
    }
    out
}

const DTYPES: [&str; 10] = ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8"];

const DUMP_ALL: &str = r#"
import sys, os, h5py
for i, path in enumerate(sys.argv[2:]):
    with h5py.File(path, 'r') as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and obj.shape is not None and obj.dtype.kind in 'iuf':
                a = obj[()]
                key = '%d_%s' % (i, name.replace('/', '_'))
                with open(os.path.join(sys.argv[1], key + '.bin'), 'wb') as out:
                    out.write(a.astype(a.dtype.newbyteorder('<')).tobytes())
                print(key, i, name, obj.dtype.str, ','.join(map(str, obj.shape)))
        f.visititems(visit)
"#;

/// One dataset as h5py reads it.
#[derive(Debug)]
struct Read {
    dtype: String,
    shape: String,
    values: Vec<u8>,
}

/// What h5py reads of every dataset of `files`, by (index in `files`, dataset name).
fn h5py_all(python: &Path, files: &[&Path], dir: &Path) -> BTreeMap<(usize, String), Read> {
    let out_dir = dir.join("h5py-out");
    let _ = std::fs::remove_dir_all(&out_dir);
    std::fs::create_dir_all(&out_dir).unwrap();
    let mut args = vec![s(&out_dir)];
    args.extend(files.iter().map(|f| s(f)));
    let listing = interop::run_python(python, DUMP_ALL, &args);
    listing
        .lines()
        .map(|l| {
            let p: Vec<&str> = l.split(' ').collect();
            let values = std::fs::read(out_dir.join(format!("{}.bin", p[0]))).unwrap();
            let read = Read {
                dtype: p[3].to_owned(),
                shape: p.get(4).copied().unwrap_or("").to_owned(),
                values,
            };
            ((p[1].parse().unwrap(), p[2].to_owned()), read)
        })
        .collect()
}

/// Shapes and chunks of ranks 1 to 3, with partial edge chunks.
const SHAPES: [(&str, &str); 3] = [("13", "4"), ("5,7", "2,3"), ("3,4,5", "2,2,3")];

#[test]
fn import_reads_back_in_h5py_for_every_dtype_rank_and_index() {
    let python = interop::python("import_reads_back_in_h5py_for_every_dtype_rank_and_index");
    let dir = tmp("import_all");
    // (index, libver, extra arguments by rank: maxshape/alloc), as libhdf5 1.10+ reads them.
    let kinds: [(&str, &str); 6] = [
        ("btree1", "earliest"),
        ("btree2", "latest"),
        ("earray", "latest"),
        ("farray", "latest"),
        ("single", "latest"),
        ("implicit", "latest"),
    ];
    for (kind, libver) in kinds {
        let file = dir.join(format!("{kind}.h5"));
        let mut expected = BTreeMap::new();
        for dtype in DTYPES.iter().flat_map(|t| [t.to_string(), format!(">{t}")]) {
            for (shape, chunks) in SHAPES {
                let n: usize = shape
                    .split(',')
                    .map(|d| d.parse::<usize>().unwrap())
                    .product();
                let data = values(&dtype, n);
                let input = dir.join("input.bin");
                std::fs::write(&input, &data).unwrap();
                let rank = shape.split(',').count();
                let name = format!("{}_r{rank}", dtype.replace('>', "be_"));
                let maxshape = match kind {
                    "btree2" => vec!["inf"; rank].join(","),
                    "earray" => {
                        let mut m = vec!["inf".to_owned()];
                        m.extend(shape.split(',').skip(1).map(str::to_owned));
                        m.join(",")
                    }
                    _ => shape.to_owned(),
                };
                let chunks = if kind == "single" { shape } else { chunks };
                let mut args = vec![
                    "import",
                    s(&file),
                    &name,
                    "--dtype",
                    &dtype,
                    "--shape",
                    shape,
                    "--chunks",
                    chunks,
                    "--maxshape",
                    &maxshape,
                    "--index",
                    kind,
                    "--input",
                    s(&input),
                ];
                // The file's bounds are chosen when it is created.
                if !file.exists() {
                    args.extend(["--libver", libver]);
                }
                if kind == "implicit" {
                    args.extend(["--alloc", "early"]);
                }
                ok(&args);
                let text = ok_text(&["inspect", s(&file), &name]);
                assert!(
                    text.contains(&format!("\nindex: {kind}\n")),
                    "{name}: {text}"
                );
                assert_eq!(ok(&["cat", s(&file), &name]), data, "{kind} {name}");
                expected.insert(name, (dtype.clone(), shape.to_owned(), data));
            }
        }
        // Everything h5chunk wrote passes its own check.
        let report = ok_text(&["check", s(&file)]);
        assert!(report.ends_with(": 0 problems\n"), "{kind}: {report}");
        let Some(python) = &python else { continue };
        let read = h5py_all(python, &[&file], &dir);
        assert_eq!(read.len(), expected.len(), "{kind}");
        for (name, (dtype, shape, data)) in expected {
            let r = &read[&(0, name.clone())];
            let bare = dtype.trim_start_matches('>');
            let want = match (bare.ends_with('1'), dtype.starts_with('>')) {
                (true, _) => format!("|{bare}"),
                (false, true) => dtype.clone(),
                (false, false) => format!("<{bare}"),
            };
            assert_eq!(r.dtype, want, "{kind} {name}");
            assert_eq!(r.shape, shape, "{kind} {name}");
            assert_eq!(r.values, data, "{kind} {name}: values");
        }
    }
}

#[test]
fn import_btree2_index() {
    let dir = tmp("import_btree2");
    let file = dir.join("b.h5");
    let input = dir.join("in.bin");
    std::fs::write(&input, values("i4", 35)).unwrap();
    let args = [
        "import",
        s(&file),
        "/x",
        "--dtype",
        "i4",
        "--shape",
        "5,7",
        "--chunks",
        "2,3",
        "--maxshape",
        "inf,inf",
        "--libver",
        "latest",
        "--index",
        "btree2",
        "--input",
        s(&input),
    ];
    let out = run(&args);
    if out.status.success() {
        // The v2 B-tree adapter has landed: the values come back.
        let text = ok_text(&["inspect", s(&file), "/x"]);
        assert!(text.contains("\nindex: btree2\n"), "{text}");
        assert_eq!(ok(&["cat", s(&file), "/x"]), values("i4", 35));
    } else {
        let err = fails(&args);
        assert!(err.contains("version 2 B-tree"), "{err}");
    }
}

#[test]
fn import_filters_read_back_in_h5py_and_h5dump() {
    let test = "import_filters_read_back_in_h5py_and_h5dump";
    let python = interop::python(test);
    let h5dump = interop::h5dump(test);
    let dir = tmp("import_filters");
    let combos: [&[&str]; 7] = [
        &["--deflate", "4"],
        &["--shuffle", "--deflate", "6"],
        &["--fletcher32"],
        &["--lzf"],
        &["--shuffle", "--lzf", "--fletcher32"],
        &["--deflate", "1", "--fletcher32"],
        &[
            "--shuffle",
            "--deflate",
            "9",
            "--fletcher32",
            "--fill",
            "-7",
        ],
    ];
    let data = values("i4", 37 * 23);
    let input = dir.join("in.bin");
    std::fs::write(&input, &data).unwrap();
    // earliest: layout v3 (v1 B-tree); v110: layout v4 (array indexes); latest: layout v5,
    // which libhdf5 1.10's h5dump cannot read.
    // `--libver` applies to a new file, so each dataset gets its own.
    let mut files = Vec::new();
    for (libver, layout) in [("earliest", 3), ("v110", 4), ("latest", 5)] {
        for (i, combo) in combos.iter().enumerate() {
            for (maxshape, tag) in [("37,23", "fixed"), ("inf,23", "unlimited")] {
                let file = dir.join(format!("{libver}_c{i}_{tag}.h5"));
                let mut args = vec![
                    "import",
                    s(&file),
                    "/x",
                    "--dtype",
                    ">i4",
                    "--shape",
                    "37,23",
                    "--chunks",
                    "8,5",
                    "--maxshape",
                    maxshape,
                    "--libver",
                    libver,
                    "--input",
                    s(&input),
                ];
                args.extend_from_slice(combo);
                ok(&args);
                let text = ok_text(&["inspect", s(&file), "/x"]);
                assert!(
                    text.contains(&format!("\nlayout version: {layout}\n")),
                    "{text}"
                );
                assert_eq!(ok(&["cat", s(&file), "/x"]), data, "{}", file.display());
                let report = ok_text(&["check", s(&file)]);
                assert!(report.ends_with(": 0 problems\n"), "{report}");
                // Debian's h5dump has no LZF plugin.
                if let Some(h5dump) = &h5dump
                    && layout < 5
                    && !combo.contains(&"--lzf")
                {
                    interop::h5dump_ok(h5dump, &file);
                }
                files.push(file);
            }
        }
    }
    if let Some(python) = &python {
        let paths: Vec<&Path> = files.iter().map(|f| f.as_path()).collect();
        let read = h5py_all(python, &paths, &dir);
        assert_eq!(read.len(), files.len());
        for ((i, _), r) in read {
            assert_eq!(r.dtype, ">i4", "{}", files[i].display());
            assert_eq!(r.values, data, "{}", files[i].display());
        }
    }
}

#[test]
fn import_rejects_bad_arguments_in_one_line() {
    let dir = tmp("import_bad");
    let file = dir.join("x.h5");
    let input = dir.join("in.bin");
    std::fs::write(&input, values("u2", 12)).unwrap();
    let base = |extra: &[&'static str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "import",
            s(&file),
            "/x",
            "--input",
            s(&input),
            "--chunks",
            "2",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect();
        v.extend(extra.iter().map(|a| a.to_string()));
        v
    };
    for (extra, says) in [
        (&["--dtype", "f2", "--shape", "12"][..], "--dtype"),
        (&["--dtype", "u2", "--shape", "13"][..], "needs 26"),
        (&["--dtype", "u2", "--shape", "x"][..], "--shape"),
        (&["--dtype", "u2"][..], "--shape is required"),
        (
            &["--dtype", "u1", "--shape", "24", "--fill", "300"][..],
            "--fill",
        ),
        (
            &["--dtype", "u2", "--shape", "12", "--maxshape", "6"][..],
            "x.h5",
        ),
    ] {
        let args = base(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = fails(&args);
        assert!(err.contains(says), "{extra:?}: {err}");
    }
    assert!(fails(&["cat", s(&dir.join("missing.h5")), "/x"]).contains("missing.h5"));
}

/// A group that holds a hard link to its own ancestor (legal in HDF5, and what a damaged
/// symbol table entry can make): `ls` names it once and does not recurse forever (the fuzz
/// campaign's stack overflow).
#[test]
fn ls_stats_prints_the_requests_of_a_local_listing() {
    let file = fixtures::dir().join("index_latest.h5");
    let out = run(&["ls", "--stats", s(&file)]);
    assert!(out.status.success());
    assert_eq!(out.stdout, ok(&["ls", s(&file)]));
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.starts_with("io: "))
        .unwrap_or_else(|| panic!("{err}"));
    let n: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    // reads, bytes read, writes, bytes written; no remote part for a local file.
    assert_eq!(n.len(), 4, "{line}");
    assert!(n[0] > 0 && n[1] > 0, "{line}");
    assert_eq!((n[2], n[3]), (0, 0), "{line}");
    assert!(
        n[1] <= std::fs::metadata(&file).unwrap().len() * 4,
        "{line}"
    );
}

#[test]
fn ls_shows_null_dataspaces_as_having_no_shape() {
    for file in ["empty_earliest.h5", "empty_latest.h5"] {
        let listing = ok_text(&["ls", s(&fixtures::dir().join(file))]);
        for (path, dtype) in [("/empty_f4", "<f4"), ("/empty_i8", "<i8")] {
            let want = format!("{path} {dtype} shape=null layout=contiguous filters=none");
            assert!(
                listing.lines().any(|l| l == want),
                "{want} not in\n{listing}"
            );
        }
        assert!(listing.contains("/beside <i2 shape=(4,)"), "{listing}");
        // cat of a null dataset: no bytes.
        assert!(ok(&["cat", s(&fixtures::dir().join(file)), "/empty_f4"]).is_empty());
    }
}

#[test]
fn ls_stops_at_a_group_that_contains_its_ancestor() {
    let dir = tmp("ls_cycle");
    let path = dir.join("cycle.h5");
    let f = File::create(&path).unwrap();
    let a = f.create_group("a").unwrap();
    a.create_group("b").unwrap();
    let (root_addr, b_addr) = (
        f.group("/").unwrap().object_address(),
        f.group("/a/b").unwrap().object_address(),
    );
    drop(a);
    f.close().unwrap();
    // Point /a/b's symbol table entry at the root group's object header.
    let mut bytes = std::fs::read(&path).unwrap();
    let needle = b_addr.to_le_bytes();
    let at: Vec<usize> = bytes
        .windows(8)
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect();
    assert!(!at.is_empty());
    for i in at {
        bytes[i..i + 8].copy_from_slice(&root_addr.to_le_bytes());
    }
    std::fs::write(&path, bytes).unwrap();
    let out = ok_text(&["ls", s(&path)]);
    assert!(
        out.contains("/a/b/ (a hard link to a group listed already)"),
        "{out}"
    );
}

/// A member whose header fails its checksum is listed with the reason, the rest of the listing
/// is printed, and the exit status says the listing is not whole.
#[test]
fn ls_lists_the_rest_and_fails_on_a_damaged_member() {
    use h5chunk::FileOptions;
    use h5chunk::libver::{Libver, LibverBounds};
    let dir = tmp("ls_damaged");
    let path = dir.join("damaged.h5");
    let opts = FileOptions {
        bounds: LibverBounds::new(Libver::Latest, Libver::Latest).unwrap(),
        ..FileOptions::default()
    };
    let f = File::create_with(&path, opts).unwrap();
    f.create_group("sub").unwrap().create_group("bad").unwrap();
    f.new_dataset::<i32>()
        .shape(&[3])
        .chunk(&[3])
        .create("good")
        .unwrap()
        .write(&[1, 2, 3])
        .unwrap();
    let bad = f.group("/sub/bad").unwrap().object_address();
    f.close().unwrap();
    let before = ok_text(&["ls", s(&path)]);
    assert!(before.contains("/sub/bad/"), "{before}");
    // One bit inside /sub/bad's object header (version 2: checksummed).
    let mut bytes = std::fs::read(&path).unwrap();
    let at = usize::try_from(bad).unwrap();
    assert_eq!(&bytes[at..at + 4], b"OHDR");
    bytes[at + 6] ^= 0x10;
    std::fs::write(&path, bytes).unwrap();
    let out = run(&["ls", s(&path)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("/good <i4 shape=(3,) "), "{stdout}");
    assert!(stdout.contains("/sub/ (members not listed: "), "{stdout}");
    assert!(
        stderr.contains("1 member(s) could not be listed"),
        "{stderr}"
    );
}

/// `attrs` and `ls -a` print what h5py stored: strings, numbers, arrays, per object.
#[test]
fn attrs_and_ls_a_print_h5py_attributes() {
    let Some(python) = interop::python("attrs_and_ls_a_print_h5py_attributes") else {
        return;
    };
    let dir = tmp("attrs_cli");
    let path = dir.join("attrs.h5");
    interop::run_python(
        &python,
        "import sys, h5py, numpy as np\n\
         with h5py.File(sys.argv[1], 'w') as f:\n\
         \x20   d = f.create_dataset('t', data=np.arange(3.0))\n\
         \x20   d.attrs['units'] = 'K'\n\
         \x20   d.attrs['valid_range'] = np.array([-40, 60], dtype='<i2')\n\
         \x20   f.attrs['title'] = np.bytes_('run 7')\n",
        &[s(&path)],
    );
    assert_eq!(
        ok_text(&["attrs", s(&path), "/t"]),
        "units str scalar = \"K\"\nvalid_range <i2 (2,) = [-40, 60]\n"
    );
    assert_eq!(
        ok_text(&["attrs", s(&path)]),
        "title |S5 scalar = \"run 7\"\n"
    );
    let listing = ok_text(&["ls", "-a", s(&path)]);
    assert!(
        listing.contains("/\n  @title |S5 = \"run 7\"\n/t <f8"),
        "{listing}"
    );
    assert!(listing.contains("  @units str = \"K\"\n"), "{listing}");
    assert!(fails(&["attrs", s(&path), "/nope"]).contains("nope"));
}

/// A file a killed libhdf5 writer left marked open (superblock version 3, flags set): h5chunk
/// refuses it as libhdf5 does, naming the way out; `h5chunk clear` clears the flags and both
/// libraries open it again with its data.
#[test]
fn clear_reopens_a_file_a_killed_writer_left_flagged() {
    let Some(python) = interop::python("clear_reopens_a_file_a_killed_writer_left_flagged") else {
        return;
    };
    let dir = tmp("clear_flags");
    let path = dir.join("flagged.h5");
    // The writer flushes its data and kills itself while the file is open: no clean close.
    let status = std::process::Command::new(&python)
        .args([
            "-c",
            "import os, sys, h5py, numpy as np\n\
             f = h5py.File(sys.argv[1], 'w', libver='latest')\n\
             f.create_dataset('d', data=np.arange(5, dtype='<i4'))\n\
             f.flush()\n\
             os.kill(os.getpid(), 9)\n",
            s(&path),
        ])
        .status()
        .unwrap();
    assert!(!status.success());
    let err = fails(&["cat", s(&path), "/d"]);
    assert!(err.contains("h5chunk clear"), "{err}");
    assert!(matches!(
        File::open(&path),
        Err(h5chunk::Error::FileFlagged { flags: 1, .. })
    ));
    assert!(ok_text(&["clear", s(&path)]).contains("flags cleared"));
    assert!(ok_text(&["clear", s(&path)]).contains("no file consistency flags set"));
    let values: Vec<u8> = (0..5i32).flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(ok(&["cat", s(&path), "/d"]), values);
    let out = interop::run_python(
        &python,
        "import sys, h5py\n\
         with h5py.File(sys.argv[1], 'r') as f:\n\
         \x20   print(list(f['d'][:]))\n",
        &[s(&path)],
    );
    assert!(
        out.contains("[np.int32(0), np.int32(1)") || out.contains("[0, 1, 2, 3, 4]"),
        "{out}"
    );
}

#[test]
fn refs_writes_kerchunk_json_and_refuses_lzf_unless_told_to_skip() {
    let dir = tmp("refs");
    let path = dir.join("r.h5");
    let raw: Vec<u8> = (0..24u32).flat_map(|v| v.to_le_bytes()).collect();
    let input = dir.join("in.bin");
    std::fs::write(&input, &raw).unwrap();
    for (name, extra) in [("plain", None), ("packed", Some("--lzf"))] {
        let mut args = vec![
            "import",
            s(&path),
            name,
            "--dtype",
            "u4",
            "--shape",
            "4,6",
            "--chunks",
            "2,3",
            "--input",
            s(&input),
        ];
        args.extend(extra);
        ok(&args);
    }
    // Refused, naming the dataset, with a non-zero status.
    let err = fails(&["refs", s(&path)]);
    assert!(err.contains("/packed") && err.contains("lzf"), "{err}");
    // Skipped on request: stdout holds the rest, stderr says what was left out.
    let out = run(&[
        "refs",
        s(&path),
        "--skip-unsupported",
        "--url",
        "s3://bucket/r.h5",
    ]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("skipped /packed"));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["version"], 1);
    let refs = json["refs"].as_object().unwrap();
    let chunks: Vec<&String> = refs
        .keys()
        .filter(|k| k.starts_with("plain/") && !k.contains("/."))
        .collect();
    assert_eq!(chunks, ["plain/0.0", "plain/0.1", "plain/1.0", "plain/1.1"]);
    assert_eq!(refs["plain/1.1"][0], "s3://bucket/r.h5");
    assert!(!refs.keys().any(|k| k.starts_with("packed")));
    // One dataset by name, to a file; the URL defaults to the file's absolute path.
    let out_path = dir.join("refs.json");
    ok(&["refs", s(&path), "plain", "-o", s(&out_path)]);
    let json: Value = serde_json::from_slice(&std::fs::read(&out_path).unwrap()).unwrap();
    let url = json["refs"]["plain/0.0"][0].as_str().unwrap();
    assert!(
        Path::new(url).is_absolute() && url.ends_with("r.h5"),
        "{url}"
    );
    // The bytes a reference names are the chunk: the first chunk holds 0, 1, 2, 6, 7, 8.
    let (at, size) = (
        json["refs"]["plain/0.0"][1].as_u64().unwrap() as usize,
        json["refs"]["plain/0.0"][2].as_u64().unwrap() as usize,
    );
    let file = std::fs::read(&path).unwrap();
    let first: Vec<u32> = file[at..at + size]
        .chunks(4)
        .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(first, [0, 1, 2, 6, 7, 8]);
    // kerchunk's Parquet layout: the consolidated metadata, and one file per record of
    // references (4 chunks, 3 to a record: two files).
    let parq = dir.join("refs.parq");
    ok(&[
        "refs",
        s(&path),
        "plain",
        "--parquet",
        s(&parq),
        "--record-size",
        "3",
    ]);
    let meta: Value =
        serde_json::from_slice(&std::fs::read(parq.join(".zmetadata")).unwrap()).unwrap();
    assert_eq!(meta["record_size"], 3);
    assert_eq!(
        meta["metadata"]["plain/.zarray"]["chunks"],
        serde_json::json!([2, 3])
    );
    for record in ["refs.0.parq", "refs.1.parq"] {
        let bytes = std::fs::read(parq.join("plain").join(record)).unwrap();
        assert!(
            bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"),
            "{record}"
        );
    }
    assert!(!parq.join("plain/refs.2.parq").exists());
    // One output only.
    let both = run(&["refs", s(&path), "-o", s(&out_path), "--parquet", s(&parq)]);
    assert!(!both.status.success());
    assert!(String::from_utf8_lossy(&both.stderr).contains("--parquet"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn commands_take_s3_urls_with_the_endpoint_from_the_environment() {
    let Some(python) = interop::python("commands_take_s3_urls") else {
        return;
    };
    let moto = h5chunk_testkit::moto::Moto::start(&python);
    let local = fixtures::dir().join("index_latest.h5");
    moto.upload(&python, "cli-bucket", &[&local]);
    let url = "s3://cli-bucket/index_latest.h5";
    let with_env = |args: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_h5chunk"));
        c.args(args);
        for (k, v) in moto.env() {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    // ls, cat and check read the object as they read the local file.
    for args in [vec!["ls"], vec!["cat", "", "btree2/btree2"], vec!["check"]] {
        let mut remote = args.clone();
        let mut here = args.clone();
        if remote.len() > 1 {
            remote[1] = url;
            here[1] = s(&local);
        } else {
            remote.push(url);
            here.push(s(&local));
        }
        let out = with_env(&remote);
        assert!(
            out.status.success(),
            "{remote:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout, ok(&here), "{remote:?}");
    }
    // ls --stats: the listing unchanged on stdout, the requests on stderr: the opening GET
    // (which brings the object's size: no HEAD) and what the listing fetched.
    let out = with_env(&["ls", "--stats", url]);
    assert!(out.status.success());
    assert_eq!(out.stdout, ok(&["ls", s(&local)]));
    let err = String::from_utf8_lossy(&out.stderr);
    let remote = err
        .lines()
        .find_map(|l| l.split("; remote: ").nth(1))
        .unwrap_or_else(|| panic!("no remote stats: {err}"));
    let words: Vec<&str> = remote.split_whitespace().collect();
    let gets: u64 = words[0].parse().unwrap();
    assert!(gets >= 1, "{err}");
    assert_eq!(&words[2..4], ["0", "HEAD,"], "{err}");
    let fetched: u64 = words[4].parse().unwrap();
    assert!(fetched > 0, "{err}");
    // refs names the URL it read.
    let out = with_env(&["refs", url, "single/single"]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["refs"]["single/single/0.0"][0], url);
    // A missing object: one line naming it.
    let out = with_env(&["ls", "s3://cli-bucket/missing.h5"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains("s3://cli-bucket/missing.h5") && err.contains("no such object"),
        "{err}"
    );
}

/// A metadata-first paged file (pages and metadata room of 1 MiB, its metadata within the
/// 1 MiB the opening request reads ahead) in a local S3: `ls --stats` opens and lists it in
/// that one GET and no HEAD (the rest of the first page is fetched only when a read misses
/// in it); with a read-ahead of 4 KiB, in two GETs, the second one bringing the whole rest
/// of the first page at the first miss; reading a dataset then fetches its chunks past the
/// room.
#[test]
fn ls_stats_of_a_metadata_first_file_in_s3_takes_the_read_ahead_then_the_page() {
    let Some(python) = interop::python("ls_stats_of_a_metadata_first_file_in_s3") else {
        return;
    };
    let dir = tmp("metadata_first_s3");
    let local = dir.join("granule.h5");
    let page = 1u64 << 20;
    let f = h5chunk::FileOptions {
        metadata_room: Some(page),
        ..h5chunk::FileOptions::paged(page)
    }
    .create(&local)
    .unwrap();
    for gi in 0..20 {
        let g = f.create_group(&format!("gt{gi:02}")).unwrap();
        g.attrs().set_scalar("beam", gi).unwrap();
        for name in ["h_ph", "lat_ph", "lon_ph"] {
            let d = f
                .new_dataset::<f32>()
                .shape(&[40_000])
                .chunk(&[10_000])
                .filter(h5chunk::FilterSpec::Deflate(1))
                .create(&format!("gt{gi:02}/{name}"))
                .unwrap();
            d.write(&(0..40_000).map(|i| (i * gi) as f32).collect::<Vec<_>>())
                .unwrap();
        }
    }
    f.close().unwrap();
    assert!(std::fs::metadata(&local).unwrap().len() > 2 * page);
    let moto = h5chunk_testkit::moto::Moto::start(&python);
    moto.upload(&python, "granules", &[&local]);
    let url = "s3://granules/granule.h5";
    let with_ra = |args: &[&str], read_ahead: Option<&str>| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_h5chunk"));
        c.args(args).env_remove("H5CHUNK_READ_AHEAD");
        for (k, v) in moto.env() {
            c.env(k, v);
        }
        if let Some(r) = read_ahead {
            c.env("H5CHUNK_READ_AHEAD", r);
        }
        c.output().unwrap()
    };
    let with_env = |args: &[&str]| with_ra(args, None);
    for (read_ahead, want) in [
        (
            None,
            format!("1 GET, 0 HEAD, {} bytes", h5chunk::storage::READ_AHEAD),
        ),
        (Some("4096"), format!("2 GET, 0 HEAD, {page} bytes")),
    ] {
        let out = with_ra(&["ls", "--stats", url], read_ahead);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert_eq!(out.stdout, ok(&["ls", s(&local)]));
        let remote = err
            .lines()
            .find_map(|l| l.split("; remote: ").nth(1))
            .unwrap_or_else(|| panic!("no remote stats: {err}"));
        assert!(remote.starts_with(&want), "{read_ahead:?}: {err}");
    }
    let out = with_env(&["cat", url, "gt07/lat_ph"]);
    assert!(out.status.success());
    assert_eq!(out.stdout, ok(&["cat", s(&local), "gt07/lat_ph"]));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// libhdf5's own paged file (an h5py file of 20 groups of 8 deflated datasets, repacked by
/// `h5repack -S PAGE -G 1048576`) in a local S3: `ls --stats` lists it in one GET, no HEAD:
/// the opening request's read-ahead (1 MiB) is its first page, which holds the metadata; `cat` reads a dataset equal to the local file.
#[test]
fn ls_stats_of_a_libhdf5_paged_file_in_s3_takes_one_get() {
    let test = "ls_stats_of_a_libhdf5_paged_file_in_s3";
    let (Some(python), Some(h5dump)) = (interop::python(test), interop::h5dump(test)) else {
        return;
    };
    let h5repack = h5dump.with_file_name("h5repack");
    let dir = tmp("libhdf5_paged_s3");
    let plain = dir.join("plain.h5");
    let paged = dir.join("paged.h5");
    interop::run_python(
        &python,
        r#"
import sys, h5py, numpy as np
rng = np.random.default_rng(0)
with h5py.File(sys.argv[1], "w") as f:
    for g in range(20):
        grp = f.create_group("gt%02d/heights" % g)
        for d in range(8):
            v = rng.normal(size=20000).astype("f4").cumsum()
            grp.create_dataset("v%d" % d, data=v, chunks=(10000,), compression="gzip")
"#,
        &[s(&plain)],
    );
    let status = std::process::Command::new(&h5repack)
        .args(["-S", "PAGE", "-G", "1048576"])
        .arg(&plain)
        .arg(&paged)
        .status()
        .unwrap();
    assert!(status.success());
    let moto = h5chunk_testkit::moto::Moto::start(&python);
    moto.upload(&python, "granules", &[&paged]);
    let url = "s3://granules/paged.h5";
    let with_env = |args: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_h5chunk"));
        c.args(args);
        for (k, v) in moto.env() {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let out = with_env(&["ls", "--stats", url]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(out.stdout, ok(&["ls", s(&plain)]));
    assert!(
        err.contains("; remote: 1 GET, 0 HEAD, 1048576 bytes fetched"),
        "{err}"
    );
    let out = with_env(&["cat", url, "gt13/heights/v5"]);
    assert!(out.status.success());
    assert_eq!(out.stdout, ok(&["cat", s(&plain), "gt13/heights/v5"]));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An h5py granule in h5py's default layout (20 groups of 8 deflated datasets, 11.7 MB: every
/// dataset's object header and chunk index between the chunks, 73 KB apart) in a local S3:
/// `ls --stats` lists it equal to the local listing while fetching at most a quarter of the
/// file (the tree's structures are fetched a level at a time, in 4 KiB blocks joined across
/// holes under 16 KiB), in at most 240 GETs (237 measured; 41 GETs and 11.5 MB before the
/// level prefetch and the smaller blocks).
#[test]
fn ls_stats_of_an_unpaged_h5py_granule_in_s3_fetches_a_quarter_of_it() {
    let test = "ls_stats_of_an_unpaged_h5py_granule_in_s3";
    let Some(python) = interop::python(test) else {
        return;
    };
    let dir = tmp("unpaged_granule_s3");
    let local = dir.join("granule.h5");
    interop::run_python(
        &python,
        r#"
import sys, h5py, numpy as np
rng = np.random.default_rng(0)
with h5py.File(sys.argv[1], "w") as f:
    for g in range(20):
        grp = f.create_group("gt%02d/heights" % g)
        for d in range(8):
            v = rng.normal(size=20000).astype("f4").cumsum()
            grp.create_dataset("v%d" % d, data=v, chunks=(10000,), compression="gzip")
"#,
        &[s(&local)],
    );
    let len = std::fs::metadata(&local).unwrap().len();
    let moto = h5chunk_testkit::moto::Moto::start(&python);
    moto.upload(&python, "granules", &[&local]);
    let url = "s3://granules/granule.h5";
    let with_env = |args: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_h5chunk"));
        c.args(args);
        for (k, v) in moto.env() {
            c.env(k, v);
        }
        c.env_remove("H5CHUNK_BLOCK_SIZE");
        c.env_remove("H5CHUNK_COALESCE_GAP");
        c.output().unwrap()
    };
    let out = with_env(&["ls", "--stats", url]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(out.stdout, ok(&["ls", s(&local)]));
    let remote = err
        .lines()
        .find_map(|l| l.split("; remote: ").nth(1))
        .unwrap_or_else(|| panic!("no remote stats: {err}"));
    let words: Vec<&str> = remote.split_whitespace().collect();
    let gets: u64 = words[0].parse().unwrap();
    let fetched: u64 = words[4].parse().unwrap();
    assert_eq!(&words[2..4], ["0", "HEAD,"], "{err}");
    assert!(
        fetched.saturating_mul(4) <= len,
        "{fetched} of {len}: {err}"
    );
    assert!(gets <= 240, "{err}");
    // A dataset reads equal through the same storage.
    let out = with_env(&["cat", url, "gt13/heights/v5"]);
    assert!(out.status.success());
    assert_eq!(out.stdout, ok(&["cat", s(&local), "gt13/heights/v5"]));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A range-capable HTTP server (Python's http.server answers no ranges): serves the files of
/// `argv[1]`, writes its port to `argv[2]` once listening, and appends each request's method
/// to `argv[3]`.
const RANGE_SERVER: &str = r#"
import os, re, sys, http.server
root, port_file, log = sys.argv[1], sys.argv[2], sys.argv[3]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def answer(self, head_only):
        with open(log, "a") as f:
            f.write(self.command + "\n")
        p = os.path.join(root, os.path.basename(self.path))
        if not os.path.isfile(p):
            self.send_error(404)
            return
        size = os.path.getsize(p)
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        start, end = 0, size - 1
        if m:
            start = int(m.group(1))
            end = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % size)
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if not head_only:
            with open(p, "rb") as f:
                f.seek(start)
                self.wfile.write(f.read(end - start + 1))
    def do_GET(self):
        self.answer(False)
    def do_HEAD(self):
        self.answer(True)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(port_file + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
os.replace(port_file + ".tmp", port_file)
s.serve_forever()
"#;

/// `http://` URLs open through object_store's HTTP store: an h5py file served by a local
/// range-capable server lists and reads equal to the local file, without a HEAD (the first
/// GET's Content-Range gives the size), and the GETs `ls --stats` counts are the ones the
/// server saw; a missing file is one error line naming the URL.
#[test]
fn commands_take_http_urls_from_a_range_capable_server() {
    let test = "commands_take_http_urls";
    let Some(python) = interop::python(test) else {
        return;
    };
    let dir = tmp("http_urls");
    let local = dir.join("granule.h5");
    interop::run_python(
        &python,
        r#"
import sys, h5py, numpy as np
rng = np.random.default_rng(1)
with h5py.File(sys.argv[1], "w") as f:
    for g in range(4):
        grp = f.create_group("gt%d/heights" % g)
        for d in range(3):
            v = rng.normal(size=30000).astype("f4").cumsum()
            grp.create_dataset("v%d" % d, data=v, chunks=(10000,), compression="gzip")
"#,
        &[s(&local)],
    );
    let (port_file, log) = (dir.join("port"), dir.join("requests.log"));
    let script = dir.join("serve.py");
    std::fs::write(&script, RANGE_SERVER).unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _server = Kill(
        std::process::Command::new(&python)
            .arg(&script)
            .args([&dir, &port_file, &log])
            .spawn()
            .unwrap(),
    );
    let t = std::time::Instant::now();
    while !port_file.exists() {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(30),
            "no server"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let port = std::fs::read_to_string(&port_file).unwrap();
    let url = format!("http://127.0.0.1:{port}/granule.h5");
    let run_url = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_h5chunk"))
            .args(args)
            .output()
            .unwrap()
    };
    let out = run_url(&["ls", "--stats", &url]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(out.stdout, ok(&["ls", s(&local)]));
    let seen = std::fs::read_to_string(&log).unwrap();
    let gets = seen.lines().filter(|l| *l == "GET").count();
    assert_eq!(seen.lines().count(), gets, "{seen}");
    assert!(
        err.contains(&format!("; remote: {gets} GET, 0 HEAD, ")),
        "{err} against {gets} GETs served"
    );
    let out = run_url(&["cat", &url, "gt2/heights/v1"]);
    assert!(out.status.success());
    assert_eq!(out.stdout, ok(&["cat", s(&local), "gt2/heights/v1"]));
    let missing = format!("http://127.0.0.1:{port}/missing.h5");
    let out = run_url(&["ls", &missing]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains(&missing), "{err}");
    assert!(!std::fs::read_to_string(&log).unwrap().contains("HEAD"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A netCDF-4 file of 30 variables written by the `netCDF4` package (its root group's links
/// in dense storage): `ls -a` lists every variable with each of its attributes and their
/// values, `cat` prints a string variable a line an element, and `check` finds it sound.
#[test]
fn ls_a_lists_every_variable_and_attribute_of_a_netcdf4_file() {
    let Some(python) = interop::python("ls_a_lists_every_variable_and_attribute_of_a_netcdf4")
    else {
        return;
    };
    let dir = tmp("netcdf-wide");
    let path = dir.join("wide.nc");
    interop::run_python(
        &python,
        r#"
import sys, numpy as np, netCDF4
ds = netCDF4.Dataset(sys.argv[1], "w", format="NETCDF4")
ds.title = "thirty variables"
ds.createDimension("time", None)
ds.createDimension("x", 4)
for i in range(29):
    v = ds.createVariable(f"var_{i:02}", "f4" if i % 2 else "i2", ("time", "x"), zlib=i % 3 == 0)
    v.units = f"unit {i}"
    v.long_name = f"variable number {i}"
    v[0:2] = np.full((2, 4), i)
names = ds.createVariable("names", str, ("x",))
names[:] = np.array(["a", "bb", "ccc", "dddd"], dtype=object)
ds.close()
"#,
        &[s(&path)],
    );
    let listing = ok_text(&["ls", "-a", s(&path)]);
    assert!(
        listing.contains("@title |S16 = \"thirty variables\""),
        "{listing}"
    );
    for i in 0..29 {
        let var = format!("/var_{i:02} ");
        let at = listing
            .find(&var)
            .unwrap_or_else(|| panic!("{var} not listed:\n{listing}"));
        // The variable's own attributes follow its line, before the next variable.
        let rest = &listing[at + var.len()..];
        let own = &rest[..rest.find("\n/").unwrap_or(rest.len())];
        let units = format!("unit {i}");
        assert!(
            own.contains(&format!("@units |S{} = \"{units}\"", units.len())),
            "{var}: {own}"
        );
        let long_name = format!("variable number {i}");
        assert!(
            own.contains(&format!(
                "@long_name |S{} = \"{long_name}\"",
                long_name.len()
            )),
            "{var}: {own}"
        );
        assert!(own.contains("@DIMENSION_LIST"), "{var}: {own}");
    }
    assert!(listing.contains("/names |O shape=(4,)"), "{listing}");
    // inspect ends with the dataset's attributes.
    let inspected = ok_text(&["inspect", s(&path), "var_00"]);
    assert!(inspected.contains("attributes: 4\n"), "{inspected}");
    assert!(
        inspected.contains("  units |S6 scalar = \"unit 0\"\n"),
        "{inspected}"
    );
    assert_eq!(ok_text(&["cat", s(&path), "names"]), "a\nbb\nccc\ndddd\n");
    let report = ok_text(&["check", s(&path)]);
    assert!(
        report.contains("32 datasets") && report.ends_with(": 0 problems\n"),
        "{report}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Compound records (nested, with an array member, padding and a big-endian member) go to
/// `.npy` as numpy structured arrays equal to h5py's; `ls` shows their fields; a
/// variable-length string dataset has no `.npy` form and says so.
#[test]
fn cat_npy_writes_compound_datasets_as_structured_arrays() {
    let Some(python) = interop::python("cat_npy_writes_compound_datasets_as_structured") else {
        return;
    };
    let dir = tmp("compound");
    let path = dir.join("comp.h5");
    interop::run_python(
        &python,
        r#"
import sys, numpy as np, h5py
dt = np.dtype({"names": ["a", "b", "c", "arr"],
               "formats": ["<i4", ">f8", "S3", ("<i2", (2, 3))],
               "offsets": [0, 8, 16, 20], "itemsize": 40})
x = np.zeros(4, dt)
x["a"] = [1, 2, 3, -4]; x["b"] = [.5, 1.5, 2.5, 3.5]; x["c"] = [b"a", b"bb", b"ccc", b""]
x["arr"][2] = np.arange(6).reshape(2, 3)
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("table", data=x, chunks=(2,), compression="gzip")
    f["nested"] = np.array([((1.5, -2.0), 7), ((0.0, 3.25), 255)],
                           dtype=[("p", [("x", "<f4"), ("y", "<f4")]), ("n", "u1")])
    f["names"] = ["x", "yy"]
"#,
        &[s(&path)],
    );
    let listing = ok_text(&["ls", s(&path)]);
    assert!(
        listing.contains("/nested [('p', [('x', '<f4'), ('y', '<f4')]), ('n', '|u1')] shape=(2,)"),
        "{listing}"
    );
    for name in ["table", "nested"] {
        let npy = dir.join(format!("{name}.npy"));
        std::fs::write(&npy, ok(&["cat", s(&path), name, "--npy"])).unwrap();
        let same = interop::run_python(
            &python,
            r#"
import sys, numpy as np, h5py
got = np.load(sys.argv[2])
want = h5py.File(sys.argv[1], "r")[sys.argv[3]][...]
print(got.dtype == want.dtype and got.tobytes() == want.tobytes()
      and all(np.array_equal(got[k], want[k]) for k in want.dtype.names))
"#,
            &[s(&path), s(&npy), name],
        );
        assert_eq!(same.trim(), "True", "{name}");
    }
    let err = fails(&["cat", s(&path), "names", "--npy"]);
    assert!(err.contains("no .npy form"), "{err}");
    assert_eq!(ok_text(&["cat", s(&path), "names"]), "x\nyy\n");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// External storage with relative names, resolved as libhdf5 resolves them: against the
/// current directory, or under `HDF5_EXTFILE_PREFIX` (`${ORIGIN}`: the HDF5 file's own
/// directory). h5py writes the parts from one directory; `h5chunk cat` reads them from there,
/// from elsewhere with the prefix, and from elsewhere without it fails naming the file.
#[test]
fn external_files_resolve_relative_names_as_libhdf5_does() {
    let Some(python) = interop::python("external_files_resolve_relative_names") else {
        return;
    };
    let dir = tmp("external-relative");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let path = data.join("e.h5");
    let out = std::process::Command::new(&python)
        .current_dir(&data)
        .args([
            "-c",
            r#"
import sys, numpy as np, h5py
with h5py.File("e.h5", "w") as f:
    x = f.create_dataset("x", (10,), "<u2", external=[("p1.bin", 0, 8), ("p2.bin", 4, 12)])
    x[...] = np.arange(10, dtype="<u2") * 3
"#,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: Vec<u8> = (0..10u16).flat_map(|v| (v * 3).to_le_bytes()).collect();
    let cat = |cwd: &Path, prefix: Option<&str>| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_h5chunk"));
        c.current_dir(cwd).args(["cat", s(&path), "x"]);
        c.env_remove("HDF5_EXTFILE_PREFIX");
        if let Some(p) = prefix {
            c.env("HDF5_EXTFILE_PREFIX", p);
        }
        c.output().unwrap()
    };
    let here = cat(&data, None);
    assert!(
        here.status.success(),
        "{}",
        String::from_utf8_lossy(&here.stderr)
    );
    assert_eq!(here.stdout, want);
    let origin = cat(&dir, Some("${ORIGIN}"));
    assert!(
        origin.status.success(),
        "{}",
        String::from_utf8_lossy(&origin.stderr)
    );
    assert_eq!(origin.stdout, want);
    let prefixed = cat(&dir, Some("data"));
    assert_eq!(prefixed.stdout, want);
    let elsewhere = cat(&dir, None);
    assert!(!elsewhere.status.success());
    assert!(String::from_utf8_lossy(&elsewhere.stderr).contains("p1.bin"));
    assert!(
        ok_text(&["ls", s(&path)])
            .contains("/x <u2 shape=(10,) max=(10,) layout=external(2 files)")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn import_plugin_filters_name_themselves_and_read_back_in_h5py() {
    let test = "import_plugin_filters_name_themselves_and_read_back_in_h5py";
    let python = interop::python(test);
    let dir = tmp("import_plugin_filters");
    let data = values("u2", 41 * 29);
    let input = dir.join("in.bin");
    std::fs::write(&input, &data).unwrap();
    let combos: [(&[&str], &str); 13] = [
        (&["--lz4"], "lz4"),
        (&["--lz4", "512"], "lz4(block 512)"),
        (&["--bitshuffle", "lz4"], "bitshuffle(lz4)"),
        (
            &["--bitshuffle", "none", "--bitshuffle-block", "64"],
            "bitshuffle(block 64)",
        ),
        (
            &["--bitshuffle", "zstd", "--zstd", "5"],
            "bitshuffle(zstd 5)",
        ),
        (&["--zstd", "7"], "zstd(7)"),
        (&["--bzip2", "4"], "bzip2(4)"),
        (&["--blosc", "lz4"], "blosc(lz4 5, shuffle)"),
        (
            &[
                "--blosc",
                "blosclz",
                "--blosc-level",
                "9",
                "--blosc-shuffle",
                "bit",
            ],
            "blosc(blosclz 9, bitshuffle)",
        ),
        (
            &["--blosc2", "zstd", "--blosc-level", "3"],
            "blosc2(zstd 3, shuffle)",
        ),
        (&["--lzo"], "lzo"),
        (&["--szip", "nn"], "szip(nn, 8 pixels per block)"),
        (
            &["--szip", "ec", "--szip-block", "16"],
            "szip(ec, 16 pixels per block)",
        ),
    ];
    let mut files = Vec::new();
    for (i, (combo, name)) in combos.iter().enumerate() {
        let file = dir.join(format!("c{i}.h5"));
        let mut args = vec![
            "import",
            s(&file),
            "/x",
            "--dtype",
            "<u2",
            "--shape",
            "41,29",
            "--chunks",
            "9,7",
            "--input",
            s(&input),
        ];
        args.extend_from_slice(combo);
        ok(&args);
        let text = ok_text(&["inspect", s(&file), "/x"]);
        assert!(text.contains(&format!("\nfilters: {name}\n")), "{text}");
        let listing = ok_text(&["ls", s(&file)]);
        assert!(listing.contains(&format!(" filters={name}")), "{listing}");
        assert_eq!(ok(&["cat", s(&file), "/x"]), data, "{}", file.display());
        // Neither h5py nor hdf5plugin has an LZO filter (codec_filters.rs checks LZO chunks
        // with liblzo2).
        if *name != "lzo" {
            files.push(file);
        }
    }
    let file = dir.join("bad.h5");
    let err = fails(&[
        "import",
        s(&file),
        "/x",
        "--dtype",
        "<u2",
        "--shape",
        "41,29",
        "--chunks",
        "9,7",
        "--input",
        s(&input),
        "--bitshuffle",
        "lz4",
        "--bitshuffle-block",
        "12",
    ]);
    assert!(err.contains("multiple of 8"), "{err}");
    let Some(python) = python else { return };
    let mut args: Vec<&str> = vec![s(&input)];
    args.extend(files.iter().map(|f| s(f)));
    let out = interop::run_python(
        &python,
        r#"
import sys, h5py, hdf5plugin, numpy as np
want = np.fromfile(sys.argv[1], dtype='<u2').reshape(41, 29)
for p in sys.argv[2:]:
    with h5py.File(p, 'r') as f:
        assert np.array_equal(f['x'][()], want), p
print(len(sys.argv) - 2)
"#,
        &args,
    );
    assert_eq!(out.trim(), files.len().to_string());
}

/// An EIGER-shaped master file (h5py, with data files of bitshuffle/LZ4 one-frame chunks)
/// lists its external links with where they point, and `cat --npy` reads through each one
/// what h5py (with hdf5plugin) reads; the working folder is not the files' folder, so the
/// data files are found beside the master, as libhdf5 finds them. A link to a missing file
/// fails with one line naming it.
#[test]
fn external_links_list_and_cat() {
    let Some(python) = interop::python("external_links_list_and_cat") else {
        return;
    };
    let dir = tmp("external_links");
    interop::run_python(
        &python,
        "import sys, os, h5py, hdf5plugin, numpy as np\n\
         d = sys.argv[1]\n\
         rng = np.random.default_rng(5)\n\
         for i in (1, 2):\n\
         \x20   with h5py.File(os.path.join(d, f'x_data_{i:06d}.h5'), 'w') as f:\n\
         \x20       f.create_dataset('entry/data/data', data=rng.integers(0, 5000, (2 + i, 16, 24), dtype=np.uint16),\n\
         \x20                        chunks=(1, 16, 24), **hdf5plugin.Bitshuffle(nelems=0, cname='lz4'))\n\
         with h5py.File(os.path.join(d, 'x_master.h5'), 'w') as f:\n\
         \x20   g = f.create_group('entry/data'); g.attrs['NX_class'] = 'NXdata'\n\
         \x20   for i in (1, 2):\n\
         \x20       g[f'data_{i:06d}'] = h5py.ExternalLink(f'x_data_{i:06d}.h5', '/entry/data/data')\n\
         \x20   f['missing'] = h5py.ExternalLink('not_there.h5', '/x')\n",
        &[s(&dir)],
    );
    let master = dir.join("x_master.h5");
    let listing = ok_text(&["ls", s(&master)]);
    assert!(
        listing.contains("/entry/data/data_000001 -> x_data_000001.h5:/entry/data/data"),
        "{listing}"
    );
    assert!(listing.contains("/missing -> not_there.h5:/x"), "{listing}");
    for i in [1, 2] {
        let link = format!("/entry/data/data_{i:06}");
        let npy = ok(&["cat", "--npy", s(&master), &link]);
        let out = dir.join(format!("data_{i}.npy"));
        std::fs::write(&out, &npy).unwrap();
        let said = interop::run_python(
            &python,
            "import sys, h5py, hdf5plugin, numpy as np\n\
             a = np.load(sys.argv[1]); b = h5py.File(sys.argv[2], 'r')[sys.argv[3]][...]\n\
             print('ok' if a.dtype == b.dtype and a.shape == b.shape and (a == b).all() else f'differ {a.shape} {b.shape}')",
            &[s(&out), s(&master), &link],
        );
        assert_eq!(said.trim(), "ok", "{link}");
    }
    let err = fails(&["cat", s(&master), "/missing"]);
    assert!(
        err.contains("not_there.h5") && err.contains("/missing"),
        "{err}"
    );
}

/// A bfloat16 dataset (written through the API, as h5py reads it: see the `types` test of
/// `h5chunk`): `ls` and `inspect` name the type, `cat --npy` gives its bits as `|V2` (numpy
/// has no bfloat16; ml_dtypes' `bfloat16` views them) in little-endian order, whatever the
/// stored order.
#[test]
fn bfloat16_is_named_and_cat_npy_gives_its_bits() {
    let dir = tmp("bfloat16");
    let file = dir.join("bf.h5");
    let f = File::create(&file).unwrap();
    let d = f
        .new_dataset_of(h5chunk::TypeDesc {
            class: h5chunk::TypeClass::BFloat16,
            size: 2,
            order: h5chunk::types::ByteOrder::BigEndian,
        })
        .shape(&[3])
        .chunk(&[3])
        .create("x")
        .unwrap();
    d.write(&[1.0f32, -2.5, 3.140625]).unwrap();
    drop(d);
    f.close().unwrap();
    let ls = ok_text(&["ls", s(&file)]);
    assert!(ls.contains("/x bfloat16 shape=(3,)"), "{ls}");
    let inspect = ok_text(&["inspect", s(&file), "x"]);
    assert!(inspect.contains("type: bfloat16"), "{inspect}");
    let npy = ok(&["cat", "--npy", s(&file), "x"]);
    let header_len = usize::from(u16::from_le_bytes([npy[8], npy[9]]));
    let header = String::from_utf8_lossy(&npy[10..10 + header_len]);
    assert!(header.contains("'descr': '|V2'"), "{header}");
    assert_eq!(
        &npy[10 + header_len..],
        &[0x80, 0x3f, 0x20, 0xc0, 0x49, 0x40]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
