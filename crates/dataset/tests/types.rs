//! Element types beyond numbers, in files h5py writes: strings (fixed-length of each padding,
//! variable-length in chunked and filtered datasets, with unwritten elements), compound
//! records, enumerations (h5py's `bool`), opaque and array types. Strings read as h5py's
//! `.asstr()` reads them, other classes as their stored bytes (equal to numpy's), enumerations
//! as their integers; variable-length sequences (ragged int32 and float64 rows) read and
//! write both ways; creating sequences of non-number base types is refused, typed.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use h5chunk::types::DatatypeClass;
use h5chunk::{Error, File, FilterSpec, TypeClass, TypeDesc};
use h5chunk_testkit::interop;
use serde_json::Value;

const WRITE: &str = r#"
import json, sys
import numpy as np, h5py

path = sys.argv[1]
comp = np.array([(1, 2.5, b"ab"), (-3, 4.5, b"xyz")],
                dtype=[("a", "<i4"), ("b", ">f8"), ("c", "S3")])
with h5py.File(path, "w") as f:
    f["comp"] = comp
    f["flag"] = np.array([True, False, True])
    f.create_dataset("opaque", data=np.array([b"abcd", b"efgh"], dtype="V4"))
    f["fixed"] = np.array([b"ab", b"c", b""], "S3")
    t = h5py.h5t.C_S1.copy(); t.set_size(4); t.set_strpad(h5py.h5t.STR_SPACEPAD)
    sp = f.create_dataset("spacepad", (2,), dtype=h5py.Datatype(t))
    sp[...] = np.array([b"ab", b"wxyz"], "S4")
    vs = f.create_dataset("names", shape=(5,), maxshape=(None,), chunks=(2,),
                          dtype=h5py.string_dtype(), compression="gzip", shuffle=True)
    vs[0:3] = ["alpha", "béta", "a much longer string than the others"]
    f.create_dataset("utf8_fixed", data=np.array(["é".encode(), b"z"], "S2"))
    json.dump({
        "comp": comp.tobytes().hex(),
        "opaque": f["opaque"][...].tobytes().hex(),
        "names": [s for s in f["names"].asstr()[...]],
        "spacepad": [s.decode() for s in f["spacepad"][...]],
    }, sys.stdout)
"#;

#[test]
fn strings_compounds_enums_and_opaque_read_as_h5py_reads_them() {
    let Some(python) = interop::python("strings_compounds_enums_and_opaque_read_as_h5py") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-types-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("types.h5");
    let want: Value = serde_json::from_str(&interop::run_python(
        &python,
        WRITE,
        &[path.to_str().unwrap()],
    ))
    .unwrap();
    let file = File::open(&path).unwrap();

    // Variable-length strings, chunked and filtered; the two never written are empty.
    let names = file.dataset("names").unwrap();
    assert_eq!(names.dtype().class, TypeClass::VarLenString);
    let got = names.read_strings().unwrap();
    assert_eq!(Value::from(got.clone()), want["names"]);
    assert_eq!(got[3], "");
    assert_eq!(
        names.read_slice_strings(&[1], &[2], None).unwrap(),
        ["béta", "a much longer string than the others"]
    );
    // Fixed-length strings: NUL- and space-padded, UTF-8 bytes kept.
    let fixed = file.dataset("fixed").unwrap();
    assert_eq!(fixed.dtype().numpy(), "|S3");
    assert_eq!(fixed.read_strings().unwrap(), ["ab", "c", ""]);
    assert_eq!(
        Value::from(file.dataset("spacepad").unwrap().read_strings().unwrap()),
        want["spacepad"]
    );
    assert_eq!(
        file.dataset("utf8_fixed").unwrap().read_strings().unwrap(),
        ["é", "z"]
    );
    // A compound: its bytes as stored (big-endian member included), its members described.
    let comp = file.dataset("comp").unwrap();
    assert_eq!(comp.dtype().class, TypeClass::Other);
    assert_eq!(comp.dtype().size, 15);
    assert_eq!(
        hex(&comp.read_raw().unwrap()),
        want["comp"].as_str().unwrap()
    );
    let DatatypeClass::Compound(members) = &comp.datatype().class else {
        panic!("{:?}", comp.datatype());
    };
    let names_of: Vec<String> = members
        .iter()
        .map(|m| String::from_utf8_lossy(&m.name).into_owned())
        .collect();
    assert_eq!(names_of, ["a", "b", "c"]);
    // Numbers and strings are asked of the right types only.
    assert!(matches!(
        comp.read::<i32>(),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        comp.read_strings(),
        Err(Error::InvalidArgument { .. })
    ));
    // h5py's bool: an enumeration over int8, read as its integers.
    let flag = file.dataset("flag").unwrap();
    assert_eq!(flag.read::<i8>().unwrap(), [1, 0, 1]);
    assert!(matches!(flag.datatype().class, DatatypeClass::Enum { .. }));
    let opaque = file.dataset("opaque").unwrap();
    assert_eq!(
        hex(&opaque.read_raw().unwrap()),
        want["opaque"].as_str().unwrap()
    );
    assert!(file.check().is_clean());

    // Creating a dataset of a string type: a typed refusal, nothing written.
    let file = File::create(dir.join("new.h5")).unwrap();
    let s3 = fixed_desc();
    assert!(matches!(
        file.new_dataset_of(s3).shape(&[2]).create("new_strings"),
        Err(Error::Unsupported(_))
    ));
    drop((file, names, fixed, comp, flag, opaque));
    std::fs::remove_dir_all(&dir).unwrap();
}

fn fixed_desc() -> TypeDesc {
    TypeDesc {
        class: TypeClass::FixedString,
        size: 3,
        order: h5chunk::types::ByteOrder::LittleEndian,
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Datasets of every fixed-size class h5py writes (compound with nested, array and string
/// members, enumeration, opaque, fixed-length strings of each padding, bitfield-free numbers
/// in big-endian), created by h5chunk from the same datatypes and bytes, chunked and
/// filtered: h5py reads them equal to its own, type and bytes; a fixed-length string dataset
/// written from `&str`s reads back padded as its type says; variable-length sequences of
/// anything but numbers are refused at creation, typed.
#[test]
fn datasets_of_any_fixed_size_type_written_by_h5chunk_read_in_h5py() {
    let Some(python) = interop::python("datasets_of_any_fixed_size_type_written") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-types-w-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let theirs = dir.join("theirs.h5");
    interop::run_python(
        &python,
        r#"
import sys, numpy as np, h5py
rec = np.dtype([("id", "<u4"), ("pos", [("x", "<f4"), ("y", "<f4")]), ("tag", "S5"),
                ("hist", "<i2", (2, 3)), ("score", ">f8")])
r = np.zeros(7, rec)
r["id"] = np.arange(7); r["pos"]["x"] = np.arange(7) / 2; r["tag"] = [b"a", b"bb", b"ccc", b"", b"eeeee", b"f", b"g"]
r["hist"] = np.arange(42).reshape(7, 2, 3); r["score"] = -np.arange(7) * 1.5
colors = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 42}, basetype="i2")
with h5py.File(sys.argv[1], "w") as f:
    f["records"] = r
    f.create_dataset("colors", data=np.array([0, 42, 1, 1], "i2"), dtype=colors)
    f["flags"] = np.array([True, False, False, True])
    f["blob"] = np.array([b"\x00\x01\x02\x03\x04\x05", b"zzzzzz"], dtype="V6")
    f["names"] = np.array([b"x", b"yy", b"zzz"], "S4")
    t = h5py.h5t.C_S1.copy(); t.set_size(6); t.set_strpad(h5py.h5t.STR_SPACEPAD)
    sp = f.create_dataset("spaced", (2,), dtype=h5py.Datatype(t)); sp[...] = [b"ab", b"cdefgh"]
    f["be"] = np.arange(5, dtype=">i8")
"#,
        &[theirs.to_str().unwrap()],
    );
    let names = [
        "records", "colors", "flags", "blob", "names", "spaced", "be",
    ];
    let ours = dir.join("ours.h5");
    {
        let src = File::open(&theirs).unwrap();
        let file = File::create(&ours).unwrap();
        for name in names {
            let d = src.dataset(name).unwrap();
            let shape = d.shape();
            let copy = file
                .new_dataset_with_type(d.datatype().clone())
                .shape(&shape)
                .chunk(&[2])
                .filter(FilterSpec::Shuffle)
                .filter(FilterSpec::Deflate(6))
                .create(name)
                .unwrap();
            copy.write_raw(&d.read_raw().unwrap()).unwrap();
        }
        // A fixed-length string dataset from `&str`s, NUL-padded.
        let s8 = file
            .new_dataset_with_type(src.dataset("names").unwrap().datatype().clone())
            .shape(&[3])
            .chunk(&[3])
            .create("written")
            .unwrap();
        s8.write_strings(&["one", "four", ""]).unwrap();
        assert_eq!(s8.read_strings().unwrap(), ["one", "four", ""]);
        assert!(matches!(
            s8.write_strings(&["too long", "a", "b"]),
            Err(Error::InvalidArgument { .. })
        ));
        // Variable-length sequences of anything but numbers: refused, typed.
        assert!(matches!(
            file.new_dataset_with_type(h5chunk::types::vlen_sequence(h5chunk::types::fixed_ascii(
                3
            )))
            .shape(&[1])
            .chunk(&[1])
            .create("vlen"),
            Err(Error::Unsupported(_))
        ));
        drop(src);
        file.close().unwrap();
    }
    let out = interop::run_python(
        &python,
        r#"
import sys, numpy as np, h5py
theirs, ours = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
for name in sys.argv[3:]:
    a, b = theirs[name], ours[name]
    assert a.dtype == b.dtype, (name, a.dtype, b.dtype)
    assert a.id.get_type() == b.id.get_type(), name
    assert a[...].tobytes() == b[...].tobytes(), name
    assert b.chunks == (2,) and b.compression == "gzip", name
print(list(ours["written"][...]))
print(sorted(h5py.check_enum_dtype(ours["colors"].dtype).items()))
"#,
        &[
            theirs.to_str().unwrap(),
            ours.to_str().unwrap(),
            "records",
            "colors",
            "flags",
            "blob",
            "names",
            "spaced",
            "be",
        ],
    );
    let mut lines = out.lines();
    assert_eq!(
        lines.next().unwrap(),
        "[np.bytes_(b'one'), np.bytes_(b'four'), np.bytes_(b'')]"
    );
    assert_eq!(
        lines.next().unwrap(),
        "[('BLUE', 42), ('GREEN', 1), ('RED', 0)]"
    );
    if let Some(h5dump) = interop::h5dump("datasets_of_any_fixed_size_type_written") {
        interop::h5dump_ok(&h5dump, &ours);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// String datasets h5chunk writes, both kinds: variable-length UTF-8 (h5py's `str`), chunked
/// and deflated, written whole, by strided slice and by append, with elements never written;
/// and fixed-length ASCII. h5py reads the same strings; h5dump reads the file.
#[test]
fn string_datasets_written_by_h5chunk_read_in_h5py() {
    let Some(python) = interop::python("string_datasets_written_by_h5chunk") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-strings-w-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("strings.h5");
    let long = "x".repeat(5000);
    let mut want: Vec<String> = ["alpha", "", "béta ünïcode", "🦀", "gamma"]
        .into_iter()
        .map(String::from)
        .collect();
    {
        let file = File::create(&path).unwrap();
        let names = file
            .new_dataset_with_type(h5chunk::types::vlen_utf8())
            .shape(&[8])
            .chunk(&[3])
            .filter(FilterSpec::Deflate(4))
            .create("names")
            .unwrap();
        assert_eq!(names.dtype().class, TypeClass::VarLenString);
        let refs: Vec<&str> = want.iter().map(String::as_str).collect();
        names.write_slice_strings(&refs, &[0], &[5], None).unwrap();
        // Overwrite elements 1 and 3 (strided); 5 stays unwritten, 6 and 7 get a long one.
        names
            .write_slice_strings(&["one", "three"], &[1], &[2], Some(&[2]))
            .unwrap();
        names
            .write_slice_strings(&[&long, "last"], &[6], &[2], None)
            .unwrap();
        want[1] = "one".into();
        want[3] = "three".into();
        want.extend([String::new(), long.clone(), "last".into()]);
        assert_eq!(names.read_strings().unwrap(), want);
        // Many strings: more than one heap collection holds them.
        let log = file
            .new_dataset_with_type(h5chunk::types::vlen_utf8())
            .shape(&[0])
            .max_shape(&[None])
            .chunk(&[1000])
            .create("log")
            .unwrap();
        let lines: Vec<String> = (0..10_000).map(|i| format!("line {i}")).collect();
        let line_refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        log.resize(&[10_000]).unwrap();
        log.write_strings(&line_refs).unwrap();
        let fixed = file
            .new_dataset_with_type(h5chunk::types::fixed_ascii(4))
            .shape(&[3])
            .chunk(&[3])
            .create("codes")
            .unwrap();
        fixed.write_strings(&["AB", "CDEF", ""]).unwrap();
        file.close().unwrap();
    }
    let out = interop::run_python(
        &python,
        r#"
import sys, json, h5py
with h5py.File(sys.argv[1], "r") as f:
    log = f["log"].asstr()[...]
    print(json.dumps({
        "names": list(f["names"].asstr()[...]),
        "log_len": len(log), "log_last": log[-1], "log_ok": all(s == f"line {i}" for i, s in enumerate(log)),
        "codes": [c.decode() for c in f["codes"][...]],
        "dtype": str(h5py.check_string_dtype(f["names"].dtype)),
    }))
"#,
        &[path.to_str().unwrap()],
    );
    let got: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(got["names"], Value::from(want.clone()));
    assert_eq!(got["log_len"], 10_000);
    assert_eq!(got["log_ok"], true);
    assert_eq!(got["codes"], serde_json::json!(["AB", "CDEF", ""]));
    assert_eq!(got["dtype"], "string_info(encoding='utf-8', length=None)");
    if let Some(h5dump) = interop::h5dump("string_datasets_written_by_h5chunk") {
        interop::h5dump_ok(&h5dump, &path);
    }
    let file = File::open(&path).unwrap();
    assert_eq!(file.dataset("names").unwrap().read_strings().unwrap(), want);
    assert!(file.check().is_clean());
    drop(file);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Object references h5py writes, in a dataset and an attribute: read as object header
/// addresses, resolved to the paths h5py's `f[ref].name` gives.
#[test]
fn object_references_resolve_to_the_paths_h5py_names() {
    let Some(python) = interop::python("object_references_resolve_to_the_paths") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-refs-obj-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("refs.h5");
    let out = interop::run_python(
        &python,
        r#"
import sys, json, numpy as np, h5py
with h5py.File(sys.argv[1], "w") as f:
    a = f.create_dataset("grp/a", data=np.arange(3))
    b = f.create_group("grp/sub/b")
    f.create_dataset("targets", data=[a.ref, b.ref, f.ref], dtype=h5py.ref_dtype)
    f["grp"].attrs["favourite"] = b.ref
    print(json.dumps([f[r].name for r in f["targets"][...]] + [f[f["grp"].attrs["favourite"]].name]))
"#,
        &[path.to_str().unwrap()],
    );
    let want: Vec<String> = serde_json::from_str(&out).unwrap();
    let file = File::open(&path).unwrap();
    let targets = file.dataset("targets").unwrap();
    let mut got = Vec::new();
    for r in targets.read_object_refs().unwrap() {
        got.push(file.object_path(r).unwrap().unwrap());
    }
    let fav = file.group("grp").unwrap().attr("favourite").unwrap();
    got.push(
        file.object_path(fav.object_refs().unwrap()[0])
            .unwrap()
            .unwrap(),
    );
    assert_eq!(got, want);
    // Not references: a typed error naming what they are.
    assert!(matches!(
        file.dataset("grp/a").unwrap().read_object_refs(),
        Err(Error::InvalidArgument { .. })
    ));
    assert_eq!(file.object_path(u64::MAX - 7).unwrap(), None);
    drop((targets, file));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Object references h5chunk writes (a dataset of `types::object_reference`, h5py's
/// `ref_dtype`, and an attribute of them) resolve in h5py to the groups and datasets they
/// name, and read back in h5chunk; a target that is not an object, and a dataset of another
/// type, are refused, typed.
#[test]
fn object_references_h5chunk_writes_resolve_in_h5py() {
    let Some(python) = interop::python("object_references_h5chunk_writes") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-refs-w-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("refs.h5");
    {
        let file = File::create(&path).unwrap();
        file.create_group("grp").unwrap();
        let g = file.create_group("grp/sub").unwrap();
        let a = file
            .new_dataset::<i32>()
            .shape(&[3])
            .chunk(&[3])
            .create("grp/a")
            .unwrap();
        a.write(&[1, 2, 3]).unwrap();
        let root = file.root().unwrap();
        let targets = [
            a.object_address(),
            g.object_address(),
            root.object_address(),
        ];
        let refs = file
            .new_dataset_with_type(h5chunk::types::object_reference())
            .shape(&[3])
            .chunk(&[3])
            .create("refs")
            .unwrap();
        refs.write_object_refs(&targets).unwrap();
        assert_eq!(refs.read_object_refs().unwrap(), targets);
        root.attrs()
            .set_object_refs("favourite", &[g.object_address()])
            .unwrap();
        assert!(matches!(
            refs.write_object_refs(&[1, 2, 3]),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            a.write_object_refs(&targets),
            Err(Error::InvalidArgument { .. })
        ));
        file.close().unwrap();
    }
    let out = interop::run_python(
        &python,
        r#"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    print(" ".join(f[r].name for r in f["refs"][...]), f[f.attrs["favourite"][0]].name,
          f["refs"].dtype == h5py.ref_dtype)
"#,
        &[path.to_str().unwrap()],
    );
    assert_eq!(out.trim(), "/grp/a /grp/sub / /grp/sub True");
    let file = File::open(&path).unwrap();
    let got: Vec<String> = (file.dataset("refs").unwrap().read_object_refs().unwrap())
        .into_iter()
        .map(|r| file.object_path(r).unwrap().unwrap())
        .collect();
    assert_eq!(got, ["/grp/a", "/grp/sub", "/"]);
    drop(file);
    if let Some(h5dump) = interop::h5dump("object_references_h5chunk_writes") {
        interop::h5dump_ok(&h5dump, &path);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Region references (h5py's `regionref_dtype`) and bitfields (libhdf5's `H5T_STD_B16LE`, made
/// through h5py's low-level API: numpy has no bitfield type) read as the bytes h5py reads, with
/// their datatype class named; resolving a region reference is refused, typed, naming it.
#[test]
fn region_references_and_bitfields_read_as_their_bytes() {
    let Some(python) = interop::python("region_references_and_bitfields") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-regref-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("regref.h5");
    let out = interop::run_python(
        &python,
        r#"
import sys, json, numpy as np, h5py
with h5py.File(sys.argv[1], "w") as f:
    a = f.create_dataset("a", data=np.arange(10))
    rr = f.create_dataset("regions", (2,), dtype=h5py.regionref_dtype)
    rr[0] = a.regionref[2:5]
    rr[1] = a.regionref[::3]
    tid = h5py.h5t.STD_B16LE.copy()
    bits = h5py.h5d.create(f.id, b"bits", tid, h5py.h5s.create_simple((5,)))
    bits.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([1, 2, 0x8001, 0xFFFF, 0x1234], "<u2"), mtype=tid)
with h5py.File(sys.argv[1], "r") as f:
    regions = np.zeros(2, "V12")
    f["regions"].id.read(h5py.h5s.ALL, h5py.h5s.ALL, regions, mtype=h5py.h5t.STD_REF_DSETREG)
    bits = np.zeros(5, "<u2")
    f["bits"].id.read(h5py.h5s.ALL, h5py.h5s.ALL, bits, mtype=f["bits"].id.get_type())
    print(json.dumps([list(regions.tobytes()), list(bits.tobytes()),
                      [[int(x) for x in f["a"][f["regions"][i]]] for i in range(2)]]))
"#,
        &[path.to_str().unwrap()],
    );
    let (regions, bits, selected): (Vec<u8>, Vec<u8>, Vec<Vec<i64>>) =
        serde_json::from_str(&out).unwrap();
    assert_eq!(selected, vec![vec![2, 3, 4], vec![0, 3, 6, 9]]);
    let file = File::open(&path).unwrap();
    let r = file.dataset("regions").unwrap();
    assert_eq!(r.datatype().class.name(), "reference");
    assert_eq!(r.read_raw().unwrap(), regions);
    match r.read_object_refs() {
        Err(Error::Unsupported(what)) => assert!(what.contains("region"), "{what}"),
        other => panic!("expected a typed refusal naming region references, got {other:?}"),
    }
    let b = file.dataset("bits").unwrap();
    assert_eq!(b.datatype().class.name(), "bitfield");
    assert_eq!(b.dtype().class, TypeClass::Other);
    assert_eq!(b.read_raw().unwrap(), bits);
    assert_eq!(
        bits,
        [1u16, 2, 0x8001, 0xFFFF, 0x1234]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>()
    );
    assert!(b.read::<u16>().is_err());
    drop((r, b, file));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Ragged rows for the sequence tests: row `i` holds `i % 7` values (so some are empty).
fn ragged(n: usize) -> Vec<Vec<i32>> {
    (0..n)
        .map(|i| (0..i % 7).map(|j| (i * 10 + j) as i32 - 500).collect())
        .collect()
}

/// Variable-length sequences h5py writes (`h5py.vlen_dtype`): ragged int32 (both byte orders)
/// and float64 rows, a few thousand, chunked and deflated, some empty and some never written.
/// h5chunk reads the values h5py reads, whole and by strided slice.
#[test]
fn sequence_datasets_written_by_h5py_read_equal() {
    let Some(python) = interop::python("sequence_datasets_written_by_h5py") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-seq-r-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("seq.h5");
    let out = interop::run_python(
        &python,
        r#"
import sys, json, numpy as np, h5py
n = 3000
with h5py.File(sys.argv[1], "w") as f:
    for name, base in [("ints", "<i4"), ("bigints", ">i4")]:
        d = f.create_dataset(name, (n + 5,), dtype=h5py.vlen_dtype(np.dtype(base)),
                             chunks=(256,), compression="gzip", shuffle=True)
        d[:n] = [np.arange(i % 7, dtype=base) + i * 10 - 500 for i in range(n)]
    fl = f.create_dataset("floats", (n,), dtype=h5py.vlen_dtype(np.float64),
                          chunks=(100,), compression="gzip")
    fl[...] = [np.linspace(0, 1, i % 5) * i for i in range(n)]
    f["names"] = np.array([b"ab"], "S2")
with h5py.File(sys.argv[1], "r") as f:
    print(json.dumps({"floats": [r.astype("<f8").tobytes().hex() for r in f["floats"][...]]}))
"#,
        &[path.to_str().unwrap()],
    );
    let want: Value = serde_json::from_str(&out).unwrap();
    let file = File::open(&path).unwrap();
    let mut rows = ragged(3000);
    rows.extend(vec![Vec::new(); 5]);
    for name in ["ints", "bigints"] {
        let d = file.dataset(name).unwrap();
        assert_eq!(d.dtype().class, TypeClass::Other);
        assert!(d.read_sequences::<i32>().unwrap() == rows, "{name}");
        // Rows 1, 8, 15, ... of a strided slice.
        let slice = d
            .read_slice_sequences::<i32>(&[1], &[400], Some(&[7]))
            .unwrap();
        let want_slice: Vec<Vec<i32>> = rows.iter().skip(1).step_by(7).take(400).cloned().collect();
        assert_eq!(slice, want_slice, "{name}");
        // Another base type, or not a sequence: typed errors.
        assert!(matches!(
            d.read_sequences::<i64>(),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            d.read_sequences::<f32>(),
            Err(Error::InvalidArgument { .. })
        ));
    }
    let floats = file
        .dataset("floats")
        .unwrap()
        .read_sequences::<f64>()
        .unwrap();
    let want_floats: Vec<Vec<f64>> = want["floats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let b = r.as_str().unwrap();
            (0..b.len())
                .step_by(16)
                .map(|i| {
                    f64::from_le_bytes(
                        u64::from_str_radix(&b[i..i + 16], 16)
                            .unwrap()
                            .swap_bytes()
                            .to_le_bytes(),
                    )
                })
                .collect()
        })
        .collect();
    assert!(floats == want_floats, "floats differ");
    assert!(matches!(
        file.dataset("names").unwrap().read_sequences::<u8>(),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(file.check().is_clean());
    drop(file);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Variable-length sequences h5chunk writes: int32 chunked and deflated (written whole, then
/// a strided slice overwritten; more rows than one heap collection holds), big-endian int32,
/// and float64 unfiltered. h5py reads the same rows, h5dump reads the file, `check` is clean.
#[test]
fn sequence_datasets_written_by_h5chunk_read_in_h5py() {
    use h5chunk::types::{ByteOrder, Datatype, vlen_sequence};
    let dir = std::env::temp_dir().join(format!("h5chunk-seq-w-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("seq.h5");
    let mut rows = ragged(5000);
    let floats: Vec<Vec<f64>> = (0..50)
        .map(|i| {
            (0..i % 4)
                .map(|j| f64::from(i) + f64::from(j) / 4.0)
                .collect()
        })
        .collect();
    {
        let file = File::create(&path).unwrap();
        let ints = file
            .new_dataset_with_type(vlen_sequence(Datatype::int(
                4,
                true,
                ByteOrder::LittleEndian,
            )))
            .shape(&[5000])
            .chunk(&[512])
            .filter(FilterSpec::Shuffle)
            .filter(FilterSpec::Deflate(4))
            .create("ints")
            .unwrap();
        let refs: Vec<&[i32]> = rows.iter().map(Vec::as_slice).collect();
        ints.write_sequences(&refs).unwrap();
        // Rows 3, 13, 23: replaced (one by an empty row).
        let new: [&[i32]; 3] = [&[1, 2, 3], &[], &[-7; 10]];
        ints.write_slice_sequences(&new, &[3], &[3], Some(&[10]))
            .unwrap();
        rows[3] = vec![1, 2, 3];
        rows[13] = Vec::new();
        rows[23] = vec![-7; 10];
        assert_eq!(ints.read_sequences::<i32>().unwrap(), rows);
        // A wrong count stores nothing and is refused; so is a wrong type.
        assert!(matches!(
            ints.write_sequences::<i32>(&[&[1]]),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            ints.write_sequences::<u32>(&[&[1u32][..]; 5000]),
            Err(Error::InvalidArgument { .. })
        ));
        let big = file
            .new_dataset_with_type(vlen_sequence(Datatype::int(4, true, ByteOrder::BigEndian)))
            .shape(&[20])
            .chunk(&[8])
            .create("bigints")
            .unwrap();
        let refs: Vec<&[i32]> = rows[..20].iter().map(Vec::as_slice).collect();
        big.write_sequences(&refs).unwrap();
        let fl = file
            .new_dataset_with_type(vlen_sequence(
                Datatype::float(8, ByteOrder::LittleEndian).unwrap(),
            ))
            .shape(&[50])
            .chunk(&[16])
            .create("floats")
            .unwrap();
        let frefs: Vec<&[f64]> = floats.iter().map(Vec::as_slice).collect();
        fl.write_sequences(&frefs).unwrap();
        file.close().unwrap();
    }
    let file = File::open(&path).unwrap();
    assert_eq!(
        file.dataset("ints")
            .unwrap()
            .read_sequences::<i32>()
            .unwrap(),
        rows
    );
    assert_eq!(
        file.dataset("bigints")
            .unwrap()
            .read_sequences::<i32>()
            .unwrap(),
        &rows[..20]
    );
    assert_eq!(
        file.dataset("floats")
            .unwrap()
            .read_sequences::<f64>()
            .unwrap(),
        floats
    );
    assert!(file.check().is_clean());
    drop(file);
    if let Some(python) = interop::python("sequence_datasets_written_by_h5chunk") {
        let out = interop::run_python(
            &python,
            r#"
import sys, json, h5py
with h5py.File(sys.argv[1], "r") as f:
    print(json.dumps({
        n: [[float(x) for x in r] for r in f[n][...]] for n in ["ints", "floats"]
    } | {
        "base": str(h5py.check_vlen_dtype(f["ints"].dtype)),
        "bigbase": str(h5py.check_vlen_dtype(f["bigints"].dtype)),
        "gzip": f["ints"].compression,
    }))
"#,
            &[path.to_str().unwrap()],
        );
        let got: Value = serde_json::from_str(&out).unwrap();
        let as_f64 = |rows: &[Vec<i32>]| -> Value {
            serde_json::json!(
                rows.iter()
                    .map(|r| r.iter().map(|&v| f64::from(v)).collect::<Vec<f64>>())
                    .collect::<Vec<_>>()
            )
        };
        assert_eq!(got["ints"], as_f64(&rows));
        assert_eq!(got["floats"], serde_json::json!(floats));
        assert_eq!(got["base"], "int32");
        assert_eq!(got["bigbase"], ">i4");
        assert_eq!(got["gzip"], "gzip");
    }
    if let Some(h5dump) = interop::h5dump("sequence_datasets_written_by_h5chunk") {
        interop::h5dump_ok(&h5dump, &path);
        // The big-endian rows through libhdf5's conversion (h5py hands them back with their
        // bytes unswapped under a native dtype, so h5dump is the reader checked here).
        let out = std::process::Command::new(&h5dump)
            .args(["-d", "bigints"])
            .arg(&path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("H5T_VLEN { H5T_STD_I32BE}"), "{text}");
        assert!(
            text.contains("(0): (), (-490), (-480, -479), (1, 2, 3),"),
            "{text}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A damaged heap ID (a length past its heap object, an index the collection lacks, a
/// collection address past the end of the file) is a typed error when read, never a panic
/// or an allocation of the claimed length.
#[test]
fn rejects_corrupt_sequence_heap_ids() {
    use h5chunk::types::{ByteOrder, Datatype, vlen_sequence};
    let dir = std::env::temp_dir().join(format!("h5chunk-seq-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.h5");
    let file = File::create(&path).unwrap();
    let d = file
        .new_dataset_with_type(vlen_sequence(Datatype::int(
            8,
            false,
            ByteOrder::LittleEndian,
        )))
        .shape(&[3])
        .chunk(&[3])
        .filter(FilterSpec::Deflate(1))
        .create("seq")
        .unwrap();
    d.write_sequences::<u64>(&[&[1, 2], &[], &[3]]).unwrap();
    let good = d.read_raw().unwrap();
    let id_len = good.len() / 3;
    // Each damage: (byte range of element 0's ID, new bytes).
    let damages: [(std::ops::Range<usize>, Vec<u8>); 4] = [
        (0..4, u32::MAX.to_le_bytes().to_vec()),
        (0..4, 3u32.to_le_bytes().to_vec()),
        (id_len - 4..id_len, 999u32.to_le_bytes().to_vec()),
        (4..id_len - 4, vec![0x7f; id_len - 8]),
    ];
    for (range, bytes) in damages {
        let mut raw = good.clone();
        raw[range.clone()].copy_from_slice(&bytes);
        d.write_raw(&raw).unwrap();
        let err = d.read_sequences::<u64>().unwrap_err();
        assert!(
            matches!(
                err,
                Error::Corrupt { .. } | Error::Format(_) | Error::Cache(_)
            ),
            "{range:?}: {err:?}"
        );
    }
    d.write_raw(&good).unwrap();
    assert_eq!(
        d.read_sequences::<u64>().unwrap(),
        vec![vec![1, 2], vec![], vec![3]]
    );
    drop(d);
    file.close().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// HDF5 2.0's complex numbers (h5py 3.16 on libhdf5 2.0 writes them when given the type):
/// read as their stored bytes with the type named, described to numpy as `<c16`/`>c8`, and
/// written by h5chunk so that h5py reads numpy complex values.
#[test]
fn complex_numbers_of_hdf5_2_both_ways_with_h5py() {
    let Some(python) = interop::python("complex_numbers_of_hdf5_2_both_ways") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-complex-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let theirs = dir.join("theirs.h5");
    interop::run_python(
        &python,
        "import sys, h5py, numpy as np\n\
         with h5py.File(sys.argv[1], 'w') as f:\n\
         \x20   f.create_dataset('c16', data=np.array([1+2j, -3.5-0.25j]), dtype=h5py.h5t.COMPLEX_IEEE_F64LE)\n\
         \x20   d = f.create_dataset('c8be', (2,), dtype=h5py.h5t.COMPLEX_IEEE_F32BE, chunks=(1,))\n\
         \x20   d.id.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([0.5j, 2], dtype='>c8'), mtype=h5py.h5t.COMPLEX_IEEE_F32BE)\n",
        &[theirs.to_str().unwrap()],
    );
    let f = File::open(&theirs).unwrap();
    let c16 = f.dataset("c16").unwrap();
    assert!(matches!(
        c16.datatype().class,
        DatatypeClass::Complex { .. }
    ));
    assert_eq!(
        h5chunk::types::numpy_descr(c16.datatype()).as_deref(),
        Some("'<c16'")
    );
    let raw = c16.read_raw().unwrap();
    let parts: Vec<f64> = raw
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(parts, [1.0, 2.0, -3.5, -0.25]);
    let c8be = f.dataset("c8be").unwrap();
    assert_eq!(
        h5chunk::types::numpy_descr(c8be.datatype()).as_deref(),
        Some("'>c8'")
    );
    let parts: Vec<f32> = c8be
        .read_raw()
        .unwrap()
        .chunks_exact(4)
        .map(|b| f32::from_be_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(parts, [0.0, 0.5, 2.0, 0.0]);
    drop((c16, c8be, f));

    // Written by h5chunk, read by h5py as complex128.
    let ours = dir.join("ours.h5");
    let f = File::create(&ours).unwrap();
    let t = h5chunk::types::complex(8, h5chunk::types::ByteOrder::LittleEndian).unwrap();
    let d = f
        .new_dataset_with_type(t)
        .shape(&[2])
        .chunk(&[2])
        .create("z")
        .unwrap();
    let bytes: Vec<u8> = [1.5f64, -2.0, 0.0, 4.25]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    d.write_raw(&bytes).unwrap();
    drop(d);
    f.close().unwrap();
    let out = interop::run_python(
        &python,
        "import sys, h5py\nd = h5py.File(sys.argv[1], 'r')['z']\nprint(d.dtype.str, list(d[:]))",
        &[ours.to_str().unwrap()],
    );
    assert_eq!(
        out.trim(),
        "<c16 [np.complex128(1.5-2j), np.complex128(4.25j)]"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// bfloat16 (libhdf5 2.0's `H5T_FLOAT_BFLOAT16LE`/`BE`; made here as h5py makes it, a copy
/// of `IEEE_F16LE` with bfloat16's fields), written by libhdf5 from float32 values whose
/// bfloat16 bits are known: h5chunk reads them as `f32` equal to h5py's, as `bf16`, and as
/// little-endian bits (`read_raw`), in both byte orders, contiguous and chunked + deflate; a
/// float of another layout (6 exponent bits, 9 mantissa bits) is refused as numbers with
/// every field named and still reads as its stored bytes. Written by h5chunk (from `f32`
/// and from `bf16` values), h5py reads the same values and libhdf5 the same bits.
#[test]
fn bfloat16_both_ways_with_h5py_and_other_float_layouts_named() {
    let Some(python) = interop::python("bfloat16_both_ways_with_h5py") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5chunk-bfloat16-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let theirs = dir.join("theirs.h5");
    // Values exact in bfloat16 (bits = the float32's top half), and -1/3, which libhdf5
    // rounds to the nearest (0xbeab, where truncation gives 0xbeaa).
    let out = interop::run_python(
        &python,
        r#"
import sys, json, h5py, numpy as np
vals = np.array([0.0, -0.0, 1.0, -2.5, 3.140625, 2.0**100, 2.0**-126, 2.0**-133,
                 np.inf, -np.inf, 65280.0, -1.0/3], dtype=np.float32)
def bf16(base):
    t = base.copy(); t.set_fields(15, 7, 8, 0, 7); t.set_ebias(127); return t
odd = h5py.h5t.IEEE_F16LE.copy(); odd.set_fields(15, 9, 6, 0, 9); odd.set_ebias(31)
out = {}
with h5py.File(sys.argv[1], 'w') as f:
    for name, t, chunked in [('le', bf16(h5py.h5t.IEEE_F16LE), False),
                             ('be', bf16(h5py.h5t.IEEE_F16BE), True),
                             ('odd', odd, False)]:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        if chunked:
            dcpl.set_chunk((5,)); dcpl.set_deflate(4)
        d = h5py.h5d.create(f.id, name.encode(), t, h5py.h5s.create_simple((len(vals),)), dcpl=dcpl)
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, vals, mtype=h5py.h5t.NATIVE_FLOAT)
        stored = np.zeros(len(vals) * 2, dtype=np.uint8)
        d.read(h5py.h5s.ALL, h5py.h5s.ALL, stored, mtype=t)
        back = np.zeros(len(vals), dtype=np.float32)
        d.read(h5py.h5s.ALL, h5py.h5s.ALL, back, mtype=h5py.h5t.NATIVE_FLOAT)
        out[name] = {'stored': stored.tobytes().hex(), 'f32_bits': back.view(np.uint32).tolist()}
print(json.dumps(out))
"#,
        &[theirs.to_str().unwrap()],
    );
    let want: Value = serde_json::from_str(out.trim()).unwrap();
    let hex = |s: &str| -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    };
    let expected_bits: [u16; 12] = [
        0x0000, 0x8000, 0x3f80, 0xc020, 0x4049, 0x7180, 0x0080, 0x0001, 0x7f80, 0xff80, 0x477f,
        0xbeab,
    ];
    let f = File::open(&theirs).unwrap();
    for (name, order) in [
        ("le", h5chunk::types::ByteOrder::LittleEndian),
        ("be", h5chunk::types::ByteOrder::BigEndian),
    ] {
        let d = f.dataset(name).unwrap();
        assert_eq!(
            d.dtype(),
            TypeDesc {
                class: TypeClass::BFloat16,
                size: 2,
                order
            },
            "{name}"
        );
        // libhdf5 stored the bits we know, in the dataset's order.
        let stored = hex(want[name]["stored"].as_str().unwrap());
        let stored_bits: Vec<u16> = stored
            .chunks_exact(2)
            .map(|b| match order {
                h5chunk::types::ByteOrder::LittleEndian => u16::from_le_bytes([b[0], b[1]]),
                h5chunk::types::ByteOrder::BigEndian => u16::from_be_bytes([b[0], b[1]]),
            })
            .collect();
        assert_eq!(stored_bits, expected_bits, "{name}: libhdf5's bits");
        // As f32: equal, bit for bit, to what libhdf5 converts them to.
        let ours: Vec<u32> = d
            .read::<f32>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        let h5py_f32: Vec<u32> = want[name]["f32_bits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        assert_eq!(ours, h5py_f32, "{name}: f32 values");
        let shifted: Vec<u32> = expected_bits.iter().map(|&b| u32::from(b) << 16).collect();
        assert_eq!(
            ours, shifted,
            "{name}: bfloat16 is the top half of a float32"
        );
        // As bf16 and as little-endian bits.
        let bits: Vec<u16> = d
            .read::<h5chunk::bf16>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        assert_eq!(bits, expected_bits, "{name}: bf16");
        let raw: Vec<u16> = d
            .read_raw()
            .unwrap()
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        assert_eq!(raw, expected_bits, "{name}: read_raw");
        assert_eq!(d.read::<f64>().unwrap()[3], -2.5);
    }
    // Another float layout: refused as numbers, every field named; its bytes still read.
    let odd = f.dataset("odd").unwrap();
    assert_eq!(odd.dtype().class, TypeClass::Other);
    match odd.read::<f32>() {
        Err(e @ Error::UnsupportedFloat { .. }) => {
            let text = e.to_string();
            assert!(e.is_unsupported());
            for field in [
                "of 2 bytes",
                "sign bit 15",
                "exponent 6 bits at bit 9 (bias 31)",
                "mantissa 9 bits at bit 0",
                "16 significant bits at offset 0",
            ] {
                assert!(text.contains(field), "{field:?} not in {text:?}");
            }
        }
        other => panic!("odd float read as {other:?}"),
    }
    assert_eq!(
        odd.read_raw().unwrap(),
        hex(want["odd"]["stored"].as_str().unwrap())
    );
    drop((odd, f));

    // Written by h5chunk: from f32 (converted, rounded as libhdf5 rounds) and from bf16.
    let ours = dir.join("ours.h5");
    let f = File::create(&ours).unwrap();
    let values: Vec<f32> = expected_bits
        .iter()
        .map(|&b| f32::from_bits(u32::from(b) << 16))
        .collect();
    let le = f
        .new_dataset::<h5chunk::bf16>()
        .shape(&[12])
        .chunk(&[12])
        .create("le")
        .unwrap();
    let mut from_f32 = values.clone();
    from_f32[11] = -1.0 / 3.0;
    le.write(&from_f32).unwrap();
    let be = f
        .new_dataset_of(TypeDesc {
            class: TypeClass::BFloat16,
            size: 2,
            order: h5chunk::types::ByteOrder::BigEndian,
        })
        .shape(&[12])
        .chunk(&[5])
        .filter(FilterSpec::Deflate(4))
        .create("be")
        .unwrap();
    let bf: Vec<h5chunk::bf16> = expected_bits
        .iter()
        .map(|&b| h5chunk::bf16::from_bits(b))
        .collect();
    be.write(&bf).unwrap();
    drop((le, be));
    f.close().unwrap();
    let out = interop::run_python(
        &python,
        r#"
import sys, json, h5py, numpy as np
out = {}
with h5py.File(sys.argv[1], 'r') as f:
    for name in ['le', 'be']:
        d = f[name]
        t = d.id.get_type()
        stored = np.zeros(d.shape[0] * 2, dtype=np.uint8)
        d.id.read(h5py.h5s.ALL, h5py.h5s.ALL, stored, mtype=t)
        out[name] = {'fields': list(t.get_fields()), 'ebias': t.get_ebias(),
                     'order': t.get_order(), 'dtype': d.dtype.str,
                     'stored': stored.tobytes().hex(),
                     'f32_bits': d[()].astype(np.float32).view(np.uint32).tolist()}
print(json.dumps(out))
"#,
        &[ours.to_str().unwrap()],
    );
    let got: Value = serde_json::from_str(out.trim()).unwrap();
    for (name, order_code) in [("le", 0), ("be", 1)] {
        let g = &got[name];
        assert_eq!(g["fields"], serde_json::json!([15, 7, 8, 0, 7]), "{name}");
        assert_eq!(g["ebias"], 127, "{name}");
        assert_eq!(g["order"], order_code, "{name}");
        let f32_bits: Vec<u32> = g["f32_bits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        let want: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
        assert_eq!(f32_bits, want, "{name}: h5py's values");
        let stored = hex(g["stored"].as_str().unwrap());
        let bits: Vec<u16> = stored
            .chunks_exact(2)
            .map(|b| {
                if order_code == 0 {
                    u16::from_le_bytes([b[0], b[1]])
                } else {
                    u16::from_be_bytes([b[0], b[1]])
                }
            })
            .collect();
        assert_eq!(bits, expected_bits, "{name}: stored bits");
    }
    if let Some(h5dump) = interop::h5dump("bfloat16_both_ways_with_h5py") {
        interop::h5dump_ok(&h5dump, &ours);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
