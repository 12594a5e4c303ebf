//! Attributes written by h5py (libhdf5) read back by h5chunk: numbers of every width in both
//! byte orders, arrays, fixed- and variable-length strings in ASCII and UTF-8, empty ones, on
//! groups and datasets, at the earliest and latest format bounds.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk::types::DatatypeClass;
use h5chunk::{Error, File, FileOptions, Libver, LibverBounds};
use h5chunk_testkit::interop;

fn tmp(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

const WRITE: &str = r#"
import sys, h5py, numpy as np
path, low = sys.argv[1], sys.argv[2]
with h5py.File(path, 'w', libver=(low, 'latest')) as f:
    d = f.create_dataset('temperature', data=np.arange(4.0))
    d.attrs['units'] = 'K'
    d.attrs['scale_factor'] = np.float32(0.5)
    d.attrs['valid_range'] = np.array([-40, 60], dtype='>i2')
    d.attrs['grid'] = np.arange(6, dtype='<u8').reshape(2, 3)
    d.attrs['long_name'] = np.bytes_('air temperature')
    d.attrs['flags'] = ['ok', 'suspect', 'b\u00e4d']
    d.attrs['empty'] = h5py.Empty('<f8')
    d.attrs['\u00e9t\u00e9'] = np.int8(-3)
    g = f.create_group('instrument')
    g.attrs['NX_class'] = np.bytes_('NXinstrument')
    g.attrs['count'] = 42
    g.attrs['rec'] = np.zeros(2, dtype=[('x', '<i4'), ('y', 'S2')])
    f.attrs['Conventions'] = 'CF-1.8'
    many = f.create_group('many')
    for i in range(12):
        many.attrs['a%02d' % i] = i
"#;

#[test]
fn h5py_attributes_read_back() {
    let Some(python) = interop::python("h5py_attributes_read_back") else {
        return;
    };
    for low in ["earliest", "latest"] {
        let path = tmp(&format!("attrs_{low}.h5"));
        interop::run_python(&python, WRITE, &[path.to_str().unwrap(), low]);
        let f = File::open(&path).unwrap();
        let d = f.dataset("temperature").unwrap();
        // By name, as h5py lists an object that does not track creation order.
        assert_eq!(
            d.attrs().names().unwrap(),
            [
                "empty",
                "flags",
                "grid",
                "long_name",
                "scale_factor",
                "units",
                "valid_range",
                "\u{e9}t\u{e9}"
            ],
            "{low}"
        );
        let units = d.attr("units").unwrap();
        assert_eq!(units.string().unwrap(), "K");
        assert_eq!(units.shape(), Some(&[][..]));
        assert_eq!(units.type_name(), "str");
        assert_eq!(d.attr("scale_factor").unwrap().value::<f32>().unwrap(), 0.5);
        assert_eq!(
            d.attr("valid_range").unwrap().values::<i16>().unwrap(),
            [-40, 60]
        );
        let grid = d.attr("grid").unwrap();
        assert_eq!(grid.shape(), Some(&[2, 3][..]));
        assert_eq!(grid.values::<u64>().unwrap(), [0, 1, 2, 3, 4, 5]);
        assert_eq!(grid.summary(), "[0, 1, 2, 3, 4, 5]");
        // Another number type converts when every value fits, as h5py's astype does; a
        // string type is refused, naming the stored type.
        assert_eq!(grid.values::<i8>().unwrap(), [0, 1, 2, 3, 4, 5]);
        let err = grid.strings().unwrap_err();
        assert!(err.to_string().contains("not strings"), "{err}");
        assert_eq!(
            d.attr("long_name").unwrap().string().unwrap(),
            "air temperature"
        );
        assert_eq!(
            d.attr("flags").unwrap().strings().unwrap(),
            ["ok", "suspect", "b\u{e4}d"]
        );
        let empty = d.attr("empty").unwrap();
        assert_eq!((empty.shape(), empty.len()), (None, 0));
        assert_eq!(d.attr("\u{e9}t\u{e9}").unwrap().value::<i8>().unwrap(), -3);
        assert!(matches!(d.attr("missing"), Err(Error::NoAttribute { .. })));
        assert_eq!(d.attrs().all().unwrap().len(), 8);

        let g = f.group("instrument").unwrap();
        assert_eq!(
            g.attr("NX_class").unwrap().string().unwrap(),
            "NXinstrument"
        );
        assert_eq!(g.attr("count").unwrap().value::<i64>().unwrap(), 42);
        let rec = g.attr("rec").unwrap();
        assert!(matches!(rec.datatype().class, DatatypeClass::Compound(_)));
        assert_eq!(rec.raw().len(), 2 * 6);
        assert!(rec.values::<i32>().is_err());
        assert_eq!(
            f.group("/")
                .unwrap()
                .attr("Conventions")
                .unwrap()
                .string()
                .unwrap(),
            "CF-1.8"
        );

        // Twelve attributes: compact in the earliest format, dense (a fractal heap and a name
        // index) at the latest bounds; both read alike.
        let many = f.group("many").unwrap();
        assert_eq!(many.attrs().all().unwrap().len(), 12, "{low}");
        assert_eq!(
            many.attr("a11").unwrap().value::<i64>().unwrap(),
            11,
            "{low}"
        );
    }
}

/// Attributes h5chunk writes read back in h5py with h5py's own types (a `str` for a string),
/// in h5dump, and in h5chunk after reopening; replacing and deleting work in both formats.
#[test]
fn attributes_h5chunk_writes_read_in_h5py() {
    let Some(python) = interop::python("attributes_h5chunk_writes_read_in_h5py") else {
        return;
    };
    let h5dump = interop::h5dump("attributes_h5chunk_writes_read_in_h5py");
    for (low, name) in [
        (h5chunk::Libver::Earliest, "written_attrs_earliest.h5"),
        (h5chunk::Libver::Latest, "written_attrs_latest.h5"),
    ] {
        let path = tmp(name);
        let opts = h5chunk::FileOptions {
            bounds: h5chunk::LibverBounds::new(low, h5chunk::Libver::Latest).unwrap(),
            ..h5chunk::FileOptions::default()
        };
        let f = File::create_with(&path, opts).unwrap();
        let d = f
            .new_dataset::<f32>()
            .shape(&[3])
            .chunk(&[3])
            .create("t2m")
            .unwrap();
        d.write(&[280.5f32, 281.0, 279.25]).unwrap();
        d.attrs().set_str("units", "K").unwrap();
        d.attrs().set_scalar("scale_factor", 0.01f64).unwrap();
        d.attrs().set("valid_range", &[-40i16, 60]).unwrap();
        d.attrs()
            .set_strs("flags", &["ok", "", "b\u{e4}d"])
            .unwrap();
        d.attrs().set_str("temporary", "gone soon").unwrap();
        d.attrs().delete("temporary").unwrap();
        assert!(matches!(
            d.attrs().delete("temporary"),
            Err(Error::NoAttribute { .. })
        ));
        // Replacing takes the new value and type.
        d.attrs().set_scalar("scale_factor", 0.5f32).unwrap();
        let g = f.create_group("instrument").unwrap();
        g.attrs().set_str("NX_class", "NXinstrument").unwrap();
        g.attrs().set("counts", &[1u64, 2, 3]).unwrap();
        f.group("/")
            .unwrap()
            .attrs()
            .set_str("Conventions", "CF-1.8")
            .unwrap();
        assert!(g.attrs().set::<u8>("none", &[]).is_ok());
        // Past eight, still compact: libhdf5 reads them all.
        let many = f.create_group("many").unwrap();
        for i in 0..12i32 {
            many.attrs().set_scalar(&format!("a{i:02}"), i).unwrap();
        }
        f.close().unwrap();

        let f = File::open(&path).unwrap();
        let d = f.dataset("t2m").unwrap();
        // Stored order: a replaced attribute takes whatever free space fits it.
        let mut names = d.attrs().names().unwrap();
        names.sort();
        assert_eq!(names, ["flags", "scale_factor", "units", "valid_range"]);
        assert_eq!(d.attr("units").unwrap().string().unwrap(), "K");
        assert_eq!(d.attr("scale_factor").unwrap().value::<f32>().unwrap(), 0.5);
        assert_eq!(
            d.attr("flags").unwrap().strings().unwrap(),
            ["ok", "", "b\u{e4}d"]
        );
        drop(f);

        let out = interop::run_python(
            &python,
            r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'r') as f:
    a = f['t2m'].attrs
    assert a['units'] == 'K' and isinstance(a['units'], str), repr(a['units'])
    assert a['scale_factor'] == np.float32(0.5) and a['scale_factor'].dtype == np.float32
    assert list(a['valid_range']) == [-40, 60] and a['valid_range'].dtype == np.int16
    assert list(a['flags']) == ['ok', '', 'b\u00e4d'], list(a['flags'])
    assert 'temporary' not in a
    g = f['instrument'].attrs
    assert g['NX_class'] == 'NXinstrument'
    assert list(g['counts']) == [1, 2, 3] and g['counts'].dtype == np.uint64
    assert g['none'].shape == (0,)
    assert f.attrs['Conventions'] == 'CF-1.8'
    m = f['many'].attrs
    assert len(m) == 12 and [m['a%02d' % i] for i in range(12)] == list(range(12))
    print(sorted(a.keys()))
"#,
            &[path.to_str().unwrap()],
        );
        assert!(
            out.contains("'flags', 'scale_factor', 'units', 'valid_range'"),
            "{out}"
        );
        if let Some(h5dump) = &h5dump {
            interop::h5dump_ok(h5dump, &path);
        }
    }
}

/// Objects whose header tracks attribute creation order (h5py's `track_order=True`): h5chunk's
/// attributes get the next creation index, compact (in the header message), moved to dense
/// storage past eight (with the creation-order index h5py asked for) and dense already; h5py
/// lists them all in creation order with their values, adds after them, and h5chunk reads
/// what it left.
#[test]
fn attributes_added_to_track_order_objects_keep_creation_order() {
    let Some(python) = interop::python("attributes_added_to_track_order_objects") else {
        return;
    };
    let started = std::time::Instant::now();
    let path = tmp("attrs_track_order.h5");
    let run = |script: &str| interop::run_python(&python, script, &[path.to_str().unwrap()]);
    run(r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w", libver="latest") as f:
    g = f.create_group("compact", track_order=True)
    g.attrs["zeta"] = 1
    g.attrs["alpha"] = 2
    g.attrs["gone"] = 0
    del g.attrs["gone"]
    m = f.create_group("moves", track_order=True)
    for n in ["m3", "m1", "m2"]:
        m.attrs[n] = n
    d = f.create_dataset("dense", data=np.arange(3), track_order=True)
    for i in range(12):
        d.attrs["p%02d" % (11 - i)] = i
    del d.attrs["p05"]
"#);
    let ours = |prefix: &str, n: usize| -> Vec<String> {
        (0..n).map(|i| format!("{prefix}{}", n - i)).collect()
    };
    {
        let file = File::open_rw(&path).unwrap();
        let g = file.group("compact").unwrap();
        g.attrs().set_scalar("mid", 3i64).unwrap();
        g.attrs().set_str("last", "text").unwrap();
        // Replaced: a new attribute, last in creation order (as h5py's replacing does).
        g.attrs().set_scalar("zeta", 10i64).unwrap();
        let m = file.group("moves").unwrap();
        for (i, n) in ours("h", 8).iter().enumerate() {
            m.attrs().set_scalar(n, i as i64).unwrap();
        }
        let d = file.dataset("dense").unwrap();
        for (i, n) in ours("c", 5).iter().enumerate() {
            d.attrs().set(n, &[i as i32, -1]).unwrap();
        }
        d.attrs().delete("p07").unwrap();
        d.attrs().set_str("p09", "replaced").unwrap();
        file.close().unwrap();
    }
    let report = File::open(&path).unwrap().check();
    assert!(report.is_clean(), "{report:?}");
    let script = r#"
import sys, h5py
def show(a):
    return " ".join("%s=%s" % (k, v.tolist() if hasattr(v, "tolist") else v) for k, v in a.items())
mode = sys.argv[2] if len(sys.argv) > 2 else "r"
with h5py.File(sys.argv[1], "r+") as f:
    if mode == "add":
        for o in ("compact", "moves", "dense"):
            f[o].attrs["py_after"] = 99
with h5py.File(sys.argv[1], "r") as f:
    for o in ("compact", "moves", "dense"):
        print(show(f[o].attrs))
"#;
    let want_compact = "alpha=2 mid=3 last=text zeta=10";
    let want_moves = "m3=m3 m1=m1 m2=m2 h8=0 h7=1 h6=2 h5=3 h4=4 h3=5 h2=6 h1=7";
    let want_dense = "p11=0 p10=1 p08=3 p06=5 p04=7 p03=8 p02=9 p01=10 p00=11 \
                      c5=[0, -1] c4=[1, -1] c3=[2, -1] c2=[3, -1] c1=[4, -1] p09=replaced";
    let want = [want_compact, want_moves, want_dense];
    let out = run(script);
    assert_eq!(out.lines().collect::<Vec<_>>(), want, "{out}");
    // h5py adds after h5chunk's: last in creation order.
    let out = interop::run_python(&python, script, &[path.to_str().unwrap(), "add"]);
    let after: Vec<String> = want.iter().map(|w| format!("{w} py_after=99")).collect();
    assert_eq!(out.lines().collect::<Vec<_>>(), after, "{out}");
    if let Some(h5dump) = interop::h5dump("attributes_added_to_track_order_objects") {
        interop::h5dump_ok(&h5dump, &path);
    }
    let file = File::open(&path).unwrap();
    let report = file.check();
    assert!(report.is_clean(), "{report:?}");
    for o in ["compact", "moves"] {
        let g = file.group(o).unwrap();
        assert_eq!(g.attr("py_after").unwrap().value::<i64>().unwrap(), 99);
    }
    let g = file.group("compact").unwrap();
    assert_eq!(g.attr("zeta").unwrap().value::<i64>().unwrap(), 10);
    assert_eq!(g.attr("last").unwrap().string().unwrap(), "text");
    let m = file.group("moves").unwrap();
    assert_eq!(m.attr("h1").unwrap().value::<i64>().unwrap(), 7);
    assert_eq!(m.attr("m2").unwrap().string().unwrap(), "m2");
    let d = file.dataset("dense").unwrap();
    assert_eq!(d.attr("c3").unwrap().values::<i32>().unwrap(), [2, -1]);
    assert_eq!(d.attr("p09").unwrap().string().unwrap(), "replaced");
    assert_eq!(d.attr("py_after").unwrap().value::<i64>().unwrap(), 99);
    assert!(d.attr("p07").is_err());
    eprintln!("took {:?}", started.elapsed());
}

/// Attributes of the types h5py writes besides numbers and variable-length strings, written by
/// h5chunk at both format bounds: booleans as h5py's `bool` enumeration, fixed-length strings
/// (scalar and array), a compound record array, big-endian integers and an enumeration, all
/// through `set_attr_bool` and `set_attr_raw`. h5py reads the values and the numpy types it
/// would have written itself; h5dump reads the file; h5chunk reads them back as stored. A
/// variable-length type given raw is refused, typed.
#[test]
fn attributes_of_every_fixed_size_type_written_by_h5chunk_read_in_h5py() {
    use h5chunk::types::{self, ByteOrder, Datatype, DatatypeClass};
    let Some(python) = interop::python("attributes_of_every_fixed_size_type") else {
        return;
    };
    let le = ByteOrder::LittleEndian;
    let record = types::compound(
        16,
        &[
            ("id", 0, Datatype::int(4, true, le)),
            ("value", 8, Datatype::float(8, le).unwrap()),
        ],
    );
    let mut records = Vec::new();
    for (id, value) in [(7i32, 1.5f64), (-3, 2.25)] {
        records.extend_from_slice(&id.to_le_bytes());
        records.extend_from_slice(&[0; 4]);
        records.extend_from_slice(&value.to_le_bytes());
    }
    let colour = Datatype {
        class: DatatypeClass::Enum {
            base: Box::new(Datatype::int(1, false, le)),
            names: vec![b"RED".to_vec(), b"GREEN".to_vec(), b"BLUE".to_vec()],
            values: vec![0, 1, 2],
        },
        ..Datatype::int(1, false, le)
    };
    let be = Datatype::int(4, true, ByteOrder::BigEndian);
    let be_bytes: Vec<u8> = [1i32, -2, 300]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect();
    for (label, lo) in [("earliest", Libver::Earliest), ("latest", Libver::Latest)] {
        let path = tmp(&format!("typed-attrs-{label}.h5"));
        {
            let options = FileOptions {
                bounds: LibverBounds::new(lo, Libver::Latest).unwrap(),
                ..FileOptions::default()
            };
            let file = File::create_with(&path, options).unwrap();
            let g = file.create_group("g").unwrap();
            g.attrs().set_bool("flag", true).unwrap();
            g.attrs().set_bool("off", false).unwrap();
            g.attrs()
                .set_raw("name", None, &types::fixed_ascii(8), b"abc\0\0\0\0\0")
                .unwrap();
            g.attrs()
                .set_raw("names", Some(&[3]), &types::fixed_ascii(2), b"abcdef")
                .unwrap();
            let d = file
                .new_dataset::<f32>()
                .shape(&[2])
                .chunk(&[2])
                .create("d")
                .unwrap();
            d.attrs()
                .set_raw("records", Some(&[2]), &record, &records)
                .unwrap();
            d.attrs()
                .set_raw("big_endian", Some(&[3]), &be, &be_bytes)
                .unwrap();
            d.attrs()
                .set_raw("colour", Some(&[2]), &colour, &[2, 0])
                .unwrap();
            match d
                .attrs()
                .set_raw("strings", None, &types::vlen_utf8(), &[0; 16])
            {
                Err(Error::Unsupported(what)) => {
                    assert!(what.contains("variable-length"), "{what}")
                }
                other => panic!("{label}: expected a typed refusal, got {other:?}"),
            }
            file.close().unwrap();
        }
        let file = File::open(&path).unwrap();
        let g = file.group("g").unwrap();
        assert_eq!(g.attr("flag").unwrap().raw(), [1], "{label}");
        assert_eq!(g.attr("name").unwrap().raw(), b"abc\0\0\0\0\0", "{label}");
        let d = file.dataset("d").unwrap();
        assert_eq!(d.attr("records").unwrap().raw(), records, "{label}");
        assert_eq!(d.attr("records").unwrap().datatype(), &record, "{label}");
        drop((g, d, file));
        let out = interop::run_python(
            &python,
            r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    g, d = f["g"].attrs, f["d"].attrs
    print(repr(g["flag"]), repr(g["off"]), g["flag"].dtype, g["name"], list(g["names"]))
    r = d["records"]
    print(r.dtype.names, list(r["id"]), list(r["value"]), r.dtype.itemsize)
    print(d["big_endian"].dtype.str, list(d["big_endian"]))
    print(h5py.check_enum_dtype(d["colour"].dtype), list(d["colour"]))
"#,
            &[path.to_str().unwrap()],
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                "np.True_ np.False_ bool b'abc' [np.bytes_(b'ab'), np.bytes_(b'cd'), np.bytes_(b'ef')]",
                "('id', 'value') [np.int32(7), np.int32(-3)] [np.float64(1.5), np.float64(2.25)] 16",
                ">i4 [np.int32(1), np.int32(-2), np.int32(300)]",
                "{'RED': 0, 'GREEN': 1, 'BLUE': 2} [np.uint8(2), np.uint8(0)]",
            ],
            "{label}"
        );
        if let Some(h5dump) = interop::h5dump("attributes_of_every_fixed_size_type") {
            interop::h5dump_ok(&h5dump, &path);
        }
    }
}
