//! Dense link storage written by h5chunk: a new-style group past its compact limit moves its
//! links into a fractal heap and a v2 B-tree of names, as libhdf5 does. A 10,000-member group
//! (appended to again after reopening) is read by h5py and h5dump; libhdf5 then adds and
//! deletes members in it, and the file stays sound.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use h5chunk::{Error, File, FileOptions, Libver, LibverBounds};
use h5chunk_testkit::interop;

#[test]
fn a_dense_group_h5chunk_writes_is_read_and_changed_by_libhdf5() {
    let Some(python) = interop::python("a_dense_group_h5chunk_writes") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-dense-w-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("dense.h5");
    let name = |i: usize| format!("member_{i:05}");
    {
        let options = FileOptions {
            bounds: LibverBounds::new(Libver::Latest, Libver::Latest).unwrap(),
            ..FileOptions::default()
        };
        let file = File::create_with(&path, options).unwrap();
        let g = file.create_group("g").unwrap();
        for i in 0..10_000 {
            if i % 1000 == 7 {
                let d = g
                    .new_dataset::<i32>()
                    .shape(&[1])
                    .chunk(&[1])
                    .create(&name(i))
                    .unwrap();
                d.write(&[i as i32]).unwrap();
            } else {
                g.create_group(&name(i)).unwrap();
            }
        }
        // A name already there: refused, as before.
        assert!(matches!(
            g.create_group(&name(42)),
            Err(Error::Exists { .. })
        ));
        assert!(g.contains(&name(9_999)).unwrap());
        file.close().unwrap();
    }
    // Reopened: more members go into the same heap.
    {
        let file = File::open_rw(&path).unwrap();
        let g = file.group("g").unwrap();
        for i in 10_000..10_500 {
            g.create_group(&name(i)).unwrap();
        }
        assert_eq!(g.members().unwrap().len(), 10_500);
        file.close().unwrap();
    }
    let report = File::open(&path).unwrap().check();
    assert!(report.is_clean(), "{report:?}");
    let out = interop::run_python(
        &python,
        r#"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    g = f["g"]
    names = list(g)
    print(len(names), names == sorted(names), names[0], names[-1], int(g["member_03007"][0]))
with h5py.File(sys.argv[1], "r+") as f:
    g = f["g"]
    g.create_group("added_by_libhdf5")
    del g["member_00100"]
with h5py.File(sys.argv[1], "r") as f:
    print(len(f["g"]), "added_by_libhdf5" in f["g"], "member_00100" in f["g"])
"#,
        &[path.to_str().unwrap()],
    );
    let mut lines = out.lines();
    assert_eq!(
        lines.next().unwrap(),
        "10500 True member_00000 member_10499 3007"
    );
    assert_eq!(lines.next().unwrap(), "10500 True False");
    if let Some(h5dump) = interop::h5dump("a_dense_group_h5chunk_writes") {
        interop::h5dump_ok(&h5dump, &path);
    }
    // After libhdf5's changes: h5chunk reads them, and the file is sound.
    let file = File::open(&path).unwrap();
    let report = file.check();
    assert!(report.is_clean(), "{report:?}");
    let g = file.group("g").unwrap();
    assert!(g.contains("added_by_libhdf5").unwrap());
    assert!(!g.contains("member_00100").unwrap());
    assert_eq!(g.members().unwrap().len(), 10_500);
    drop((g, file));
    // libhdf5 may have laid free space out its own way: adding more is done or refused,
    // typed, never a damaged file.
    {
        let file = File::open_rw(&path).unwrap();
        match file.group("g").unwrap().create_group("after_libhdf5") {
            Ok(_) | Err(Error::Unsupported(_)) => {}
            Err(e) => panic!("{e}"),
        }
        file.close().unwrap();
    }
    assert!(File::open(&path).unwrap().check().is_clean());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Attributes past libhdf5's compact limit (8) move to dense storage as libhdf5 moves them:
/// 100 attributes on a dataset and on a group (numbers and strings), some replaced and some
/// deleted after the move, read by h5py; then libhdf5 adds and deletes some, and h5chunk reads
/// what it left.
#[test]
fn a_hundred_attributes_go_dense_and_h5py_reads_them() {
    let Some(python) = interop::python("a_hundred_attributes_go_dense") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-dense-attrs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("attrs.h5");
    {
        let options = FileOptions {
            bounds: LibverBounds::new(Libver::V110, Libver::Latest).unwrap(),
            ..FileOptions::default()
        };
        let file = File::create_with(&path, options).unwrap();
        let d = file
            .new_dataset::<f64>()
            .shape(&[2])
            .chunk(&[2])
            .create("d")
            .unwrap();
        let g = file.create_group("g").unwrap();
        for i in 0..100 {
            d.set_attr_scalar(&format!("n{i:03}"), f64::from(i) * 0.5)
                .unwrap();
            g.set_attr_str(&format!("s{i:03}"), &format!("text {i}"))
                .unwrap();
        }
        // Replaced and deleted once dense.
        d.set_attr("n007", &[1i32, 2, 3]).unwrap();
        d.delete_attr("n050").unwrap();
        g.set_attr_str("s099", "changed").unwrap();
        assert!(matches!(
            d.delete_attr("n050"),
            Err(Error::NoAttribute { .. })
        ));
        assert_eq!(d.attrs().unwrap().len(), 99);
        assert_eq!(d.attr("n007").unwrap().values::<i32>().unwrap(), [1, 2, 3]);
        file.close().unwrap();
    }
    let report = File::open(&path).unwrap().check();
    assert!(report.is_clean(), "{report:?}");
    // Two fractal heaps and two type-8 name indexes: both objects went dense.
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.windows(4).filter(|w| w == b"FRHP").count(), 2);
    let out = interop::run_python(
        &python,
        r#"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    d, g = f["d"].attrs, f["g"].attrs
    print(len(d), len(g), d["n001"], list(d["n007"]), "n050" in d, g["s099"], g["s042"])
with h5py.File(sys.argv[1], "r+") as f:
    f["d"].attrs["from_libhdf5"] = 42
    del f["d"].attrs["n002"]
"#,
        &[path.to_str().unwrap()],
    );
    let mut lines = out.lines();
    assert_eq!(
        lines.next().unwrap(),
        "99 100 0.5 [np.int32(1), np.int32(2), np.int32(3)] False changed text 42"
    );
    if let Some(h5dump) = interop::h5dump("a_hundred_attributes_go_dense") {
        interop::h5dump_ok(&h5dump, &path);
    }
    let file = File::open(&path).unwrap();
    let d = file.dataset("d").unwrap();
    assert_eq!(d.attr("from_libhdf5").unwrap().value::<i64>().unwrap(), 42);
    assert!(d.attr("n002").is_err());
    assert_eq!(d.attrs().unwrap().len(), 99);
    assert!(file.check().is_clean());
    drop((d, file));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Links added to a group that tracks link creation order carry the next creation index, so
/// h5py lists them in the order they were made, after its own; the group stays compact past
/// eight members (its dense form needs a creation-order index), and libhdf5 goes on adding to
/// it. (h5py's `track_order=True` also tracks attribute order in the group's header, which
/// h5chunk refuses to add to, typed.)
#[test]
fn links_added_to_a_tracked_group_keep_their_creation_order() {
    let Some(python) = interop::python("links_added_to_a_tracked_group") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-tracked-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tracked.h5");
    let run = |script: &str| interop::run_python(&python, script, &[path.to_str().unwrap()]);
    run(r#"
import sys, h5py
with h5py.File(sys.argv[1], "w", libver="latest") as f:
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    gcpl.set_link_creation_order(h5py.h5p.CRT_ORDER_TRACKED | h5py.h5p.CRT_ORDER_INDEXED)
    h5py.h5g.create(f.id, b"t", gcpl=gcpl)
    g = f["t"]
    for n in ["zeta", "alpha", "mu"]:
        g.create_group(n)
    f.create_group("both", track_order=True)
"#);
    {
        let file = File::open_rw(&path).unwrap();
        let g = file.group("t").unwrap();
        for n in ["omega", "beta", "kappa", "a1", "a2", "a3", "a4", "a5", "a6"] {
            g.create_group(n).unwrap();
        }
        // h5py's track_order=True: the header tracks attribute order too: refused, typed.
        let both = file.group("both").unwrap();
        assert!(matches!(both.create_group("x"), Err(Error::Unsupported(_))));
        assert!(both.members().unwrap().is_empty());
        let ours: Vec<String> = (g.members_in_creation_order().unwrap().into_iter())
            .map(|(n, _)| n)
            .collect();
        assert_eq!(
            ours,
            [
                "zeta", "alpha", "mu", "omega", "beta", "kappa", "a1", "a2", "a3", "a4", "a5", "a6"
            ]
        );
        file.close().unwrap();
    }
    let out = run(r#"
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    f["t"].create_group("last")
with h5py.File(sys.argv[1], "r") as f:
    print(" ".join(f["t"]))
"#);
    assert_eq!(
        out.trim(),
        "zeta alpha mu omega beta kappa a1 a2 a3 a4 a5 a6 last"
    );
    assert!(File::open(&path).unwrap().check().is_clean());
    std::fs::remove_dir_all(&dir).unwrap();
}
