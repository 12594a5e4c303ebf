//! Dense storage read (fractal heap + v2 B-tree name index), against h5py: groups of
//! thousands of links (heaps that grow root indirect blocks and rows of them), with and
//! without creation order tracked, attributes past the object header's room, and a huge
//! heap object (refused by name, not misread). A damaged heap is an error, never a panic.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk::{Error, File, LinkValue, MemberKind};
use h5chunk_testkit::interop;

/// Writes the file: `/big` (N datasets `d00000`.., each holding its number; latest format),
/// `/ordered` (300 groups, creation order tracked and indexed), `/attrs` (a dataset with 200
/// attributes: numbers and strings), `/huge` (dense attributes, one of them 100 KiB: a huge
/// heap object). Prints a JSON summary of what h5py sees.
const WRITE: &str = r#"
import sys, json, h5py, numpy as np
path, n = sys.argv[1], int(sys.argv[2])
with h5py.File(path, "w", libver="latest") as f:
    g = f.create_group("big")
    for i in range(n):
        g.create_dataset(f"d{i:05}", data=np.array([i], dtype="<i4"))
    o = f.create_group("ordered", track_order=True)
    for i in range(300):
        o.create_group(f"g{299 - i:03}")
    a = f.create_dataset("attrs", data=np.arange(3, dtype="<f8"))
    for i in range(200):
        a.attrs[f"a{i:03}"] = np.float64(i) / 4 if i % 2 else f"text {i}"
    h = f.create_dataset("huge", data=np.zeros(1))
    for i in range(10):
        h.attrs[f"small{i}"] = i
    h.attrs["big"] = np.arange(100 * 1024 // 8, dtype="<f8")
with h5py.File(path, "r") as f:
    out = {
        "big": sorted(f["big"].keys()),
        "ordered": sorted(f["ordered"].keys()),
        # h5py iterates a group that tracks creation order in that order.
        "ordered_as_created": list(f["ordered"].keys()),
        "attrs": {k: (v.item() if hasattr(v, "item") else v) for k, v in f["attrs"].attrs.items()},
    }
print(json.dumps(out))
"#;

#[test]
fn dense_groups_and_attributes_read_as_h5py_reads_them() {
    let Some(python) = interop::python("dense_groups_and_attributes_read_as_h5py_reads_them")
    else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-dense-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("dense.h5");
    let n = 3000;
    let summary = interop::run_python(&python, WRITE, &[path.to_str().unwrap(), &n.to_string()]);
    let want: serde_json::Value = serde_json::from_str(summary.trim()).unwrap();

    let file = File::open(&path).unwrap();
    // Every member of a 3,000-link group, by name, and each dataset found by lookup.
    let big = file.group("big").unwrap();
    let members = big.members().unwrap();
    let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
    let want_big: Vec<&str> = want["big"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(names, want_big);
    assert!(members.iter().all(|(_, k)| *k == MemberKind::Dataset));
    for i in [0, 1, 7, 511, 1234, n - 1] {
        let d = file.dataset(&format!("big/d{i:05}")).unwrap();
        assert_eq!(d.read::<i32>().unwrap(), vec![i], "d{i:05}");
    }
    assert!(!big.contains("d99999").unwrap());
    assert!(matches!(big.links().unwrap()[0].1, LinkValue::Hard(_)));
    // Creation order tracked (records with a creation index, a second index): the same names.
    let ordered: Vec<String> = file
        .group("ordered")
        .unwrap()
        .members()
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let want_ordered: Vec<String> = want["ordered"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ordered, want_ordered);
    assert!(file.group("ordered/g123").is_ok());
    // In creation order (dense: the order each link message carries), as h5py lists them.
    let g = file.group("ordered").unwrap();
    assert!(g.tracks_creation_order().unwrap());
    let as_created: Vec<String> = (g.members_in_creation_order().unwrap().into_iter())
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        serde_json::Value::from(as_created.clone()),
        want["ordered_as_created"]
    );
    assert_eq!(as_created.first().map(String::as_str), Some("g299"));
    // 200 attributes in a fractal heap, numbers and strings, in name order as h5py lists them.
    let attrs = file.dataset("attrs").unwrap().attrs().unwrap();
    let want_attrs = want["attrs"].as_object().unwrap();
    assert_eq!(attrs.len(), want_attrs.len());
    for (a, (name, value)) in attrs.iter().zip(want_attrs) {
        assert_eq!(a.name(), name);
        match value {
            serde_json::Value::String(s) => assert_eq!(&a.string().unwrap(), s, "{name}"),
            v => assert_eq!(a.value::<f64>().unwrap(), v.as_f64().unwrap(), "{name}"),
        }
    }
    assert_eq!(
        file.dataset("attrs")
            .unwrap()
            .attr("a101")
            .unwrap()
            .value::<f64>()
            .unwrap(),
        25.25
    );
    // A huge object (outside the heap's blocks): refused by name.
    match file.dataset("huge").unwrap().attrs() {
        Err(Error::Unsupported(what)) => assert!(what.contains("huge"), "{what}"),
        other => panic!("expected a refusal of the huge attribute, got {other:?}"),
    }
    drop(file);
    // Dense attributes libhdf5 laid out (a free-space manager): deleting one removes its
    // record; adding and replacing go into new heap blocks, and libhdf5 reads them all.
    {
        let copy = dir.join("rw.h5");
        std::fs::copy(&path, &copy).unwrap();
        let file = File::open_rw(&copy).unwrap();
        let d = file.dataset("attrs").unwrap();
        d.set_attr_str("new", "x").unwrap();
        // A heap holding a huge object is not appended to: refused by name.
        match file.dataset("huge").unwrap().set_attr_str("new", "x") {
            Err(Error::Unsupported(what)) => assert!(what.contains("huge"), "{what}"),
            other => panic!("expected a refusal of the heap with a huge object, got {other:?}"),
        }
        d.set_attr_str("a101", "replaced").unwrap();
        assert_eq!(d.attr("a101").unwrap().string().unwrap(), "replaced");
        d.delete_attr("a100").unwrap();
        assert_eq!(d.attrs().unwrap().len(), want_attrs.len());
        drop(d);
        file.close().unwrap();
        assert!(File::open(&copy).unwrap().check().is_clean());
        let out = interop::run_python(
            &python,
            "import sys, h5py; a = h5py.File(sys.argv[1])['attrs'].attrs; \
             print(len(a), 'a100' in a, a['new'], a['a101'], a['a103'])",
            &[copy.to_str().unwrap()],
        );
        assert_eq!(
            out.trim(),
            format!("{} False x replaced 25.75", want_attrs.len())
        );
    }

    // Damage anywhere in the heaps and indexes: errors, never a panic or a hang.
    let bytes = std::fs::read(&path).unwrap();
    let damaged = dir.join("damaged.h5");
    let step = (bytes.len() / 997).max(1);
    let mut errors = 0;
    let (mut checked, mut caught) = (0, 0);
    for at in (0..bytes.len()).step_by(step) {
        let mut b = bytes.clone();
        b[at] ^= 0x5a;
        std::fs::write(&damaged, &b).unwrap();
        let Ok(f) = File::open(&damaged) else {
            errors += 1;
            continue;
        };
        let listed = f.group("big").and_then(|g| g.members());
        let attrs = f.dataset("attrs").and_then(|d| d.attrs());
        errors += usize::from(listed.is_err()) + usize::from(attrs.is_err());
        // `check` walks the same heaps and indexes and reports what the reads ran into.
        if (listed.is_err() || attrs.is_err()) && checked < 40 {
            checked += 1;
            let report = f.check();
            assert!(!report.is_clean(), "check missed damage at byte {at}");
            caught += 1;
        }
    }
    assert!(errors > 0, "no damage was noticed");
    assert!(caught > 0, "check never ran into the damage");
    std::fs::remove_dir_all(&dir).unwrap();
}
