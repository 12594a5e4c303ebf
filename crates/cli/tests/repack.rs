//! `h5chunk repack`: every fixture file is either copied (then `check` is clean and h5py reads
//! every dataset and attribute equal to the original's) or refused in one typed line naming
//! the object, with no OUT left; a paged, metadata-first copy of an h5py file has its chunks
//! after all its metadata, and libhdf5 reports the paged strategy and page size.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::{run, s, tmp};
use h5chunk::{File, Group, MemberKind};
use h5chunk_testkit::{fixtures, interop};

/// h5py reads both files alike: every dataset (values, dtype, shape, max shape, chunks,
/// filters and their options, fill value) and every attribute of every object of the first
/// is in the second, equal. Prints the counts.
const SAME_IN_H5PY: &str = r#"
import sys, h5py, numpy as np
try:
    import hdf5plugin  # noqa: F401  (registers the plugin filters)
except ImportError:
    pass
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
counts = {"datasets": 0, "attrs": 0, "unreadable": 0}
def same(x, y, what):
    x, y = np.asarray(x), np.asarray(y)
    assert x.dtype == y.dtype, (what, x.dtype, y.dtype)
    assert x.shape == y.shape, (what, x.shape, y.shape)
    if x.dtype.kind == "O":
        assert x.tolist() == y.tolist(), what
    else:
        assert x.tobytes() == y.tobytes(), what
def both(read_a, read_b, what):
    """Both values, or None when h5py reads neither (a type or filter this h5py lacks)."""
    try:
        va = read_a()
    except Exception as e:
        try:
            read_b()
        except Exception:
            counts["unreadable"] += 1
            return None
        raise AssertionError(f"{what}: the copy reads, the original not ({e})")
    return va, read_b()
def attrs(p, x, y):
    assert sorted(x.attrs.keys()) == sorted(y.attrs.keys()), p
    for k in x.attrs:
        got = both(lambda: x.attrs[k], lambda: y.attrs[k], p + " @" + k)
        if got is not None:
            same(got[0], got[1], p + " @" + k)
            counts["attrs"] += 1
attrs("/", a, b)
def visit(name, obj):
    other = b.get(name, getlink=False)
    assert other is not None, name
    attrs(name, obj, other)
    if isinstance(obj, h5py.Dataset):
        for prop in ("shape", "maxshape", "chunks", "compression", "compression_opts",
                     "shuffle", "fletcher32"):
            assert getattr(obj, prop) == getattr(other, prop), (name, prop)
        assert obj.id.get_create_plist().get_nfilters() == other.id.get_create_plist().get_nfilters(), name
        # An undefined fill value (PyTables') becomes the default one (zeros): not compared.
        try:
            fill = obj.fillvalue
        except Exception:
            fill = None
        if fill is not None and obj.dtype.kind != "O":
            same(fill, other.fillvalue, name + " fill")
        got = both(lambda: obj[()], lambda: other[()], name)
        if got is not None:
            same(got[0], got[1], name)
            counts["datasets"] += 1
a.visititems(visit)
print(counts["datasets"], counts["attrs"], counts["unreadable"])
"#;

/// The fixture files: the manifest's, and the PyTables files beside them.
fn fixture_files() -> Vec<PathBuf> {
    let dir = fixtures::dir();
    let mut files: Vec<PathBuf> = fixtures::manifest()["files"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["file"].as_str().map(|f| dir.join(f)))
        .collect();
    for sub in ["pytables", "pytables-lzo"] {
        if let Ok(rd) = std::fs::read_dir(dir.join(sub)) {
            let mut more: Vec<PathBuf> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "h5"))
                .collect();
            more.sort();
            files.extend(more);
        }
    }
    files
}

#[test]
fn repack_round_trips_or_refuses_every_fixture() {
    let python = interop::python("repack_round_trips_or_refuses_every_fixture (h5py side)");
    let dir = tmp("repack-fixtures");
    let mut copied = Vec::new();
    let mut refused: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (i, file) in fixture_files().into_iter().enumerate() {
        let out = dir.join(format!("{i}.h5"));
        let r = run(&["repack", s(&file), s(&out)]);
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains("repack"))
            .collect();
        assert!(leftovers.is_empty(), "{}: {leftovers:?}", file.display());
        if !r.status.success() {
            let err = String::from_utf8_lossy(&r.stderr).into_owned();
            assert_eq!(
                err.trim_end().lines().count(),
                1,
                "{}: {err}",
                file.display()
            );
            assert!(
                err.contains("not supported by repack: "),
                "{}: not a refusal: {err}",
                file.display()
            );
            assert!(!out.exists(), "{}: OUT left after {err}", file.display());
            let cause = err
                .split("not supported by repack: ")
                .nth(1)
                .unwrap()
                .trim();
            refused
                .entry(cause.to_owned())
                .or_default()
                .push(file.file_name().unwrap().to_string_lossy().into_owned());
            continue;
        }
        let check = run(&["check", s(&out)]);
        assert!(
            check.status.success(),
            "{}: check of the copy: {}{}",
            file.display(),
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
        if let Some(py) = &python {
            let said = interop::run_python(py, SAME_IN_H5PY, &[s(&file), s(&out)]);
            let n: Vec<u64> = said
                .split_whitespace()
                .map(|w| w.parse().unwrap())
                .collect();
            assert_eq!(n.len(), 3, "{said}");
            eprintln!(
                "{}: h5py: {} datasets, {} attributes equal, {} unreadable in this h5py",
                file.display(),
                n[0],
                n[1],
                n[2]
            );
        }
        copied.push(file);
    }
    let refused_files: usize = refused.values().map(Vec::len).sum();
    eprintln!(
        "repack: {} fixture files copied, {refused_files} refused",
        copied.len()
    );
    for (cause, files) in &refused {
        eprintln!("  refused ({}): {cause}: {}", files.len(), files.join(", "));
    }
    assert!(!copied.is_empty(), "nothing repacked");
    let _ = std::fs::remove_dir_all(&dir);
}

/// h5py writes 20 groups of 8 deflate datasets (its default layout: object headers between
/// the chunks); `repack --paged 64KiB --metadata-first` puts every chunk after every object
/// header and chunk index, the data starting on a page; h5py reads the copy equal and
/// libhdf5 reports the paged strategy and the page size.
#[test]
fn repack_paged_metadata_first_puts_chunks_after_metadata() {
    let Some(python) = interop::python("repack_paged_metadata_first_puts_chunks_after_metadata")
    else {
        return;
    };
    let dir = tmp("repack-paged");
    let src = dir.join("granule.h5");
    let out = dir.join("paged.h5");
    interop::run_python(
        &python,
        r#"
import sys, h5py, numpy as np
rng = np.random.default_rng(7)
with h5py.File(sys.argv[1], "w") as f:
    f.attrs["title"] = "granule"
    for g in range(20):
        grp = f.create_group(f"gt{g:02}")
        grp.attrs["beam"] = g
        for d in range(8):
            v = np.cumsum(rng.integers(0, 5, 6000)).astype("f8")
            ds = grp.create_dataset(f"v{d}", data=v, chunks=(1000,), compression="gzip")
            ds.attrs["units"] = "m"
"#,
        &[s(&src)],
    );
    let r = run(&[
        "repack",
        "--paged",
        "64KiB",
        "--metadata-first",
        s(&src),
        s(&out),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(run(&["check", s(&out)]).status.success());
    interop::run_python(&python, SAME_IN_H5PY, &[s(&src), s(&out)]);
    if let Some(h5dump) = interop::h5dump("repack_paged_metadata_first (h5dump side)") {
        interop::h5dump_ok(&h5dump, &out);
    }
    let said = interop::run_python(
        &python,
        r#"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    fcpl = f.id.get_create_plist()
    print(fcpl.get_file_space_strategy()[0] == h5py.h5f.FSPACE_STRATEGY_PAGE,
          fcpl.get_file_space_page_size())
"#,
        &[s(&out)],
    );
    assert_eq!(said.trim(), "True 65536", "{said}");

    fn walk(g: &Group, headers: &mut Vec<u64>, chunks: &mut Vec<u64>, index: &mut u64) {
        headers.push(g.object_address());
        for (name, kind) in g.members().unwrap() {
            match kind {
                MemberKind::Group => walk(&g.group(&name).unwrap(), headers, chunks, index),
                MemberKind::Dataset => {
                    let d = g.dataset(&name).unwrap();
                    headers.push(d.object_address());
                    *index += d.index_metadata_bytes().unwrap();
                    chunks.extend(d.chunks().unwrap().iter().map(|c| c.addr.get()));
                }
                MemberKind::Other => panic!("{name}"),
            }
        }
    }
    let f = File::open(&out).unwrap();
    let (mut headers, mut chunks, mut index) = (Vec::new(), Vec::new(), 0);
    walk(&f.root().unwrap(), &mut headers, &mut chunks, &mut index);
    assert_eq!(headers.len(), 1 + 20 + 160);
    assert_eq!(chunks.len(), 160 * 6);
    let last_header = *headers.iter().max().unwrap();
    let first_chunk = *chunks.iter().min().unwrap();
    assert!(
        first_chunk > last_header,
        "a chunk at {first_chunk} before an object header at {last_header}"
    );
    assert!(
        first_chunk / 65536 > last_header / 65536,
        "a chunk at {first_chunk} in the page of an object header at {last_header}"
    );
    // In h5py's original the headers and chunks interleave: the test would see it.
    let g = File::open(&src).unwrap();
    let (mut h0, mut c0, mut i0) = (Vec::new(), Vec::new(), 0);
    walk(&g.root().unwrap(), &mut h0, &mut c0, &mut i0);
    assert!(c0.iter().min().unwrap() < h0.iter().max().unwrap());
    eprintln!(
        "metadata-first: last object header at {last_header}, first chunk at {first_chunk}, \
         {index} bytes of chunk index"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--paged 8MiB` writes pages of 8 MiB (and the units parse), every dataset reads the same
/// through h5chunk; `--metadata-first` alone and a size that is not one are refused in one
/// line, leaving no OUT.
#[test]
fn repack_paged_sizes_and_refused_options() {
    let dir = tmp("repack-options");
    let src = fixtures::dir().join("filters_v2.h5");
    for (arg, size) in [("8MiB", 8u64 << 20), ("4096", 4096), ("64k", 64 << 10)] {
        let out = dir.join(format!("{arg}.h5"));
        let r = run(&["repack", "--paged", arg, s(&src), s(&out)]);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        let f = File::open(&out).unwrap();
        let space = f.file_space().unwrap();
        assert!(space.is_paged(), "{arg}: {space:?}");
        assert_eq!(space.page_size, size, "{arg}");
        assert_eq!(std::fs::metadata(&out).unwrap().len() % size, 0, "{arg}");
        let g = File::open(&src).unwrap();
        for (name, kind) in g.root().unwrap().members().unwrap() {
            if kind == MemberKind::Dataset {
                let want = g.dataset(&name).unwrap().read_raw().unwrap();
                assert_eq!(
                    f.dataset(&name).unwrap().read_raw().unwrap(),
                    want,
                    "{name}"
                );
            }
        }
    }
    let out = dir.join("refused.h5");
    let r = run(&["repack", "--metadata-first", s(&src), s(&out)]);
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("--metadata-first needs --paged"), "{err}");
    assert!(!out.exists());
    // A size clap refuses (its usage lines follow).
    let r = run(&["repack", "--paged", "8XB", s(&src), s(&out)]);
    assert!(!r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("unknown unit \"XB\""), "{err}");
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
