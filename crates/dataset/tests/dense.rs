//! Dense storage read (fractal heap + v2 B-tree name index), against h5py: groups of
//! thousands of links (heaps that grow root indirect blocks and rows of them), with and
//! without creation order tracked, attributes past the object header's room, huge heap
//! objects (attribute values, a soft link's target) and a deflate-filtered link heap. A
//! damaged heap is an error, never a panic.
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
    let attrs = file.dataset("attrs").unwrap().attrs().all().unwrap();
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
    // A huge object (outside the heap's blocks, found through the huge-object B-tree).
    let big = file.dataset("huge").unwrap().attr("big").unwrap();
    let big = big.values::<f64>().unwrap();
    assert_eq!(big.len(), 100 * 1024 / 8);
    assert!(big.iter().enumerate().all(|(i, v)| *v == i as f64));
    drop(file);
    // Dense attributes libhdf5 laid out (a free-space manager): deleting one removes its
    // record; adding and replacing go into new heap blocks, and libhdf5 reads them all.
    {
        let copy = dir.join("rw.h5");
        std::fs::copy(&path, &copy).unwrap();
        let file = File::open_rw(&copy).unwrap();
        let d = file.dataset("attrs").unwrap();
        d.attrs().set_str("new", "x").unwrap();
        // A heap holding libhdf5's huge object takes more: a small attribute, and a huge one
        // under the next huge ID after libhdf5's.
        let h = file.dataset("huge").unwrap();
        h.attrs().set_str("new", "x").unwrap();
        let more: Vec<f64> = (0..9000).map(|i| -(i as f64)).collect();
        h.attrs().set("more", &more).unwrap();
        drop(h);
        d.attrs().set_str("a101", "replaced").unwrap();
        assert_eq!(d.attr("a101").unwrap().string().unwrap(), "replaced");
        d.attrs().delete("a100").unwrap();
        assert_eq!(d.attrs().all().unwrap().len(), want_attrs.len());
        drop(d);
        file.close().unwrap();
        assert!(File::open(&copy).unwrap().check().is_clean());
        let out = interop::run_python(
            &python,
            "import sys, h5py; f = h5py.File(sys.argv[1]); a = f['attrs'].attrs; \
             print(len(a), 'a100' in a, a['new'], a['a101'], a['a103']); h = f['huge'].attrs; \
             print(h['new'], float(h['more'].sum()), len(h['more']), len(h['big']))",
            &[copy.to_str().unwrap()],
        );
        let mut lines = out.lines();
        assert_eq!(
            lines.next().unwrap(),
            format!("{} False x replaced 25.75", want_attrs.len())
        );
        assert_eq!(
            lines.next().unwrap(),
            format!(
                "x {:?} 9000 {}",
                -(8999.0f64 * 9000.0 / 2.0),
                100 * 1024 / 8
            )
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
        let attrs = f.dataset("attrs").and_then(|d| d.attrs().all());
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

/// Writes the file of the huge-object and filtered-heap tests: `/huge` and `/huge_ordered`
/// (`track_order`) each with 10 small attributes, then `big` (100,000 float64s) and `long` (a
/// 70,000-byte fixed-length string), huge objects of an unfiltered attribute heap; `/filtered`,
/// a group whose link heap goes through deflate (a group-creation property list with
/// `H5Pset_deflate`, which h5py does not wrap: called through ctypes on h5py's own libhdf5),
/// holding 200 groups of long names and a soft link whose 70,000-byte target makes a huge,
/// filtered heap object. Prints what h5py reads as JSON.
const WRITE_HUGE: &str = r#"
import sys, json, ctypes, glob, os, h5py, numpy as np
path = sys.argv[1]
lib = ctypes.CDLL(glob.glob(os.path.join(os.path.dirname(h5py.__file__), "..", "h5py.libs", "libhdf5-*"))[0]
                  if glob.glob(os.path.join(os.path.dirname(h5py.__file__), "..", "h5py.libs", "libhdf5-*"))
                  else "libhdf5.so")
lib.H5Pset_deflate.argtypes = [ctypes.c_int64, ctypes.c_uint]
with h5py.File(path, "w", libver="latest") as f:
    for name, order in [("huge", False), ("huge_ordered", True)]:
        h = f.create_dataset(name, data=np.zeros(1), track_order=order)
        for i in range(10):
            h.attrs[f"small{i}"] = i
        h.attrs["big"] = np.arange(100000, dtype="<f8") * 0.5
        h.attrs["long"] = np.bytes_("abcdefg" * 10000)
    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
    assert lib.H5Pset_deflate(gcpl.id, 6) >= 0
    h5py.h5g.create(f.id, b"filtered", gcpl=gcpl)
    g = f["filtered"]
    for i in range(200):
        g.create_group(f"member_with_a_rather_long_name_{i:04}_" + "y" * 40)
    g["soft"] = h5py.SoftLink("/" + "t" * 70000)
with h5py.File(path, "r") as f:
    out = {}
    for name in ["huge", "huge_ordered"]:
        a = f[name].attrs
        out[name] = {"names": list(a.keys()), "sum": float(a["big"].sum()), "len": len(a["big"]),
                     "long": a["long"].decode()}
    g = f["filtered"]
    out["filtered"] = sorted(g.keys())
    out["soft"] = g.get("soft", getlink=True).path
print(json.dumps(out))
"#;

#[test]
fn huge_objects_and_filtered_heaps_read_as_h5py_reads_them() {
    let Some(python) = interop::python("huge_objects_and_filtered_heaps_read_as_h5py_reads_them")
    else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-huge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("huge.h5");
    let summary = interop::run_python(&python, WRITE_HUGE, &[path.to_str().unwrap()]);
    let want: serde_json::Value = serde_json::from_str(summary.trim()).unwrap();
    let file = File::open(&path).unwrap();

    // Huge attributes (type-1 huge-object B-tree), in name and in creation order.
    for name in ["huge", "huge_ordered"] {
        let d = file.dataset(name).unwrap();
        let attrs = d.attrs().all().unwrap();
        let names: Vec<&str> = attrs.iter().map(|a| a.name()).collect();
        let want_names: Vec<&str> = want[name]["names"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        if name == "huge" {
            assert_eq!(names, want_names, "{name}");
        } else {
            let mut sorted = want_names.clone();
            sorted.sort_unstable();
            let mut got = names.clone();
            got.sort_unstable();
            assert_eq!(got, sorted, "{name}");
        }
        let big = d.attr("big").unwrap().values::<f64>().unwrap();
        assert_eq!(big.len() as u64, want[name]["len"].as_u64().unwrap());
        assert_eq!(big.iter().sum::<f64>(), want[name]["sum"].as_f64().unwrap());
        assert!(big.iter().enumerate().all(|(i, v)| *v == i as f64 * 0.5));
        assert_eq!(
            d.attr("long").unwrap().string().unwrap(),
            want[name]["long"].as_str().unwrap()
        );
        assert_eq!(d.attr("small7").unwrap().value::<i64>().unwrap(), 7);
    }

    // A deflate-filtered link heap: listed, looked up and followed as h5py does; its huge
    // object (a soft link's long target) through the type-2 B-tree and the pipeline.
    let g = file.group("filtered").unwrap();
    let names: Vec<String> = g.members().unwrap().into_iter().map(|(n, _)| n).collect();
    let want_names: Vec<String> = want["filtered"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, want_names);
    for i in [0, 1, 99, 199] {
        let p = format!(
            "filtered/member_with_a_rather_long_name_{i:04}_{}",
            "y".repeat(40)
        );
        assert!(file.group(&p).is_ok(), "{p}");
    }
    let soft = g
        .links()
        .unwrap()
        .into_iter()
        .find(|(n, _)| n == "soft")
        .unwrap()
        .1;
    assert_eq!(
        soft,
        LinkValue::Soft(want["soft"].as_str().unwrap().to_owned())
    );
    let report = file.check();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert!(
        report.skipped.is_empty(),
        "nothing skipped: {:?}",
        report.skipped
    );
    drop(file);

    // Appending to a filtered heap (this one holds a huge object too) stays refused by name.
    {
        let copy = dir.join("rw.h5");
        std::fs::copy(&path, &copy).unwrap();
        let file = File::open_rw(&copy).unwrap();
        match file.group("filtered").unwrap().create_group("new") {
            Err(Error::Unsupported(what)) => {
                assert!(what.contains("filtered") || what.contains("huge"), "{what}")
            }
            other => panic!("expected a refusal of the filtered heap, got {other:?}"),
        }
    }

    // Damage in the filtered heap's blocks and in the huge-object B-trees: a typed error on
    // reading, a problem `check` reports, no panic.
    let bytes = std::fs::read(&path).unwrap();
    let targets = damage_targets(&bytes);
    for kind in ["huge-object B-tree header", "filtered direct block"] {
        assert!(targets.iter().any(|(w, _)| *w == kind), "{targets:?}");
    }
    let damaged = dir.join("damaged.h5");
    for (what, at) in targets {
        let mut b = bytes.clone();
        b[at] ^= 0x5a;
        std::fs::write(&damaged, &b).unwrap();
        let f = File::open(&damaged).unwrap();
        let listed = f.group("filtered").and_then(|g| g.links());
        let attrs = f.dataset("huge").and_then(|d| d.attrs().all());
        let ordered = f.dataset("huge_ordered").and_then(|d| d.attrs().all());
        let err = listed.err().or(attrs.err()).or(ordered.err());
        let err = err.unwrap_or_else(|| panic!("{what} at {at}: damage not noticed"));
        assert!(
            matches!(
                err,
                Error::Format(_)
                    | Error::Corrupt { .. }
                    | Error::HeapFilter { .. }
                    | Error::NameIndex(_)
                    | Error::Cache(_)
            ),
            "{what}: {err:?}"
        );
        let report = f.check();
        assert!(!report.is_clean(), "check missed {what} at {at}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Bytes to damage in the file of [`WRITE_HUGE`], each with what it is: the middle of each
/// filtered direct block of the filtered heap (its deflate stream), and the huge-object
/// B-trees' headers. Found by decoding every fractal heap header in the file.
fn damage_targets(bytes: &[u8]) -> Vec<(&'static str, usize)> {
    use h5chunk_format::fractal_heap::{Header, IndirectBlock};
    use h5chunk_format::{Addr, Sizes};
    let sizes = Sizes::DEFAULT;
    let mut out = Vec::new();
    for at in (0..bytes.len() - 4).filter(|&i| &bytes[i..i + 4] == b"FRHP") {
        let Ok(h) = Header::decode(&bytes[at..], Addr(at as u64), sizes) else {
            continue;
        };
        if let Some(bt) = h.huge_btree {
            // The B-tree header's tree type byte (after signature and version).
            out.push(("huge-object B-tree header", bt.get() as usize + 5));
        }
        if h.filters.is_some() && h.root_rows > 0 {
            let root = h.root.unwrap().get() as usize;
            let ib = IndirectBlock::decode(
                &bytes[root..],
                Addr(root as u64),
                sizes,
                &h,
                Addr(at as u64),
                u32::from(h.root_rows),
            )
            .unwrap();
            for c in ib.children.iter().filter(|c| c.addr.is_some()).take(3) {
                let (stored, _) = c.filtered.unwrap();
                let a = c.addr.unwrap().get() as usize + stored as usize / 2;
                out.push(("filtered direct block", a));
            }
        }
    }
    out
}
