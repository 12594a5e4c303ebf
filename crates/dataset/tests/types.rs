//! Element types beyond numbers, in files h5py writes: strings (fixed-length of each padding,
//! variable-length in chunked and filtered datasets, with unwritten elements), compound
//! records, enumerations (h5py's `bool`), opaque and array types. Strings read as h5py's
//! `.asstr()` reads them, other classes as their stored bytes (equal to numpy's), enumerations
//! as their integers; creating datasets of such types is refused with a typed error.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use h5chunk::types::DatatypeClass;
use h5chunk::{Error, File, FilterSpec, RefsOptions, TypeClass, TypeDesc};
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
    // References describe numbers only, so far: a string dataset is refused by name.
    match file.references(
        "x.h5",
        &RefsOptions {
            datasets: vec!["names".into()],
            ..RefsOptions::default()
        },
    ) {
        Err(Error::NoZarrEquivalent { dataset, .. }) => assert_eq!(dataset, "/names"),
        other => panic!("{other:?}"),
    }
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
/// written from `&str`s reads back padded as its type says; variable-length sequences are
/// refused at creation.
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
        // Variable-length sequences: refused, typed.
        use h5chunk::types::{ByteOrder, Datatype, DatatypeVersion, VarLenKind};
        let sequences = Datatype {
            version: DatatypeVersion::V1,
            size: 16,
            class: DatatypeClass::VarLen {
                kind: VarLenKind::Sequence,
                base: Box::new(Datatype::int(4, true, ByteOrder::LittleEndian)),
            },
        };
        assert!(matches!(
            file.new_dataset_with_type(sequences)
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
