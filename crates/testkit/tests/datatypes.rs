//! Datatype messages of every class, as h5py and libhdf5 write them at the earliest and the
//! latest format bounds, decode and re-encode to the bytes in the file.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk_format::message::{DatatypeClass, Message, MessageType, VarLenKind};
use h5chunk_format::{Addr, Sizes};
use h5chunk_testkit::{H5File, interop};

fn tmp(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// Writes one dataset per datatype class and variant; prints `name class` per dataset, the
/// class as libhdf5 names it.
const WRITE: &str = r#"
import sys, h5py, numpy as np
path, low = sys.argv[1], sys.argv[2]
h5t = h5py.h5t
with h5py.File(path, 'w', libver=(low, 'latest')) as root:
    # Groups of at most six members: compact link storage at the latest bounds.
    made = [0]
    class Next:
        def __getattr__(self, attr):
            made[0] += 1
            return getattr(root.require_group('g%d' % (made[0] // 6)), attr)
    f = Next()
    def lowlevel(name, tid, n=2):
        space = h5py.h5s.create_simple((n,))
        h5py.h5d.create(f.id, name.encode(), tid, space)
    f.create_dataset('i4', (2,), dtype='<i4')
    f.create_dataset('f8be', (2,), dtype='>f8')
    f.create_dataset('s_fixed_ascii', data=np.array([b'ab', b'cde'], dtype='S5'))
    f.create_dataset('s_fixed_utf8', (2,), dtype=h5py.string_dtype('utf-8', 7))
    f.create_dataset('s_vlen_utf8', data=['x', 'yz'], dtype=h5py.string_dtype('utf-8'))
    f.create_dataset('s_vlen_ascii', data=[b'x'], dtype=h5py.string_dtype('ascii'))
    f.create_dataset('vlen_i4', (2,), dtype=h5py.vlen_dtype(np.int32))
    f.create_dataset('vlen_compound', (2,), dtype=h5py.vlen_dtype(np.dtype([('p', '<i2'), ('q', '<f4')])))
    f.create_dataset('enum_bool', data=np.array([True, False]))
    f.create_dataset('enum_i2', (2,), dtype=h5py.enum_dtype({'RED': 0, 'GREEN': 1, 'BLUE': 42}, basetype='>i2'))
    f.create_dataset('opaque', (2,), dtype='V7')
    inner = np.dtype([('x', 'u1'), ('y', '<f4')])
    f.create_dataset('compound', (3,), dtype=np.dtype([
        ('a', '<i4'), ('b', '>f8'), ('c', 'S3'), ('d', '<u2', (2, 3)), ('e', inner),
        ('f', h5py.string_dtype('utf-8')), ('g', h5py.ref_dtype),
    ]))
    f.create_dataset('compound_big', (1,), dtype=np.dtype([('a', 'S300'), ('b', '<i4')]))
    lowlevel('array_i8', h5t.array_create(h5t.STD_I64LE, (3,)))
    lowlevel('array_2d_compound', h5t.array_create(h5t.py_create(inner), (2, 2)))
    f.create_dataset('objref', (2,), dtype=h5py.ref_dtype)
    f.create_dataset('regref', (1,), dtype=h5py.regionref_dtype)
    lowlevel('bitfield_b16', h5t.STD_B16LE)
    lowlevel('bitfield_b8be', h5t.STD_B8BE)
    if hasattr(h5t, 'UNIX_D32LE'):
        lowlevel('time_d32', h5t.UNIX_D32LE)
    g = root.require_group('attrs')
    g.attrs['units'] = 'K'
    g.attrs['scale'] = 1.5
    g.attrs['grid'] = np.arange(6, dtype='>i2').reshape(2, 3)
    g.attrs['flag'] = np.array([True, False])
    g.attrs['fixed'] = np.bytes_('abc')
    g.attrs.create('rec', np.zeros(2, dtype=[('x', '<i4'), ('y', 'S2')]))
    g.attrs['empty'] = h5py.Empty('<f4')
    g.attrs['\u00e9t\u00e9'] = 3
    def show(name, obj):
        if isinstance(obj, h5py.Dataset):
            print(obj.name, obj.id.get_type().get_class())
    root.visititems(show)
"#;

/// libhdf5's class numbers, as `H5Tget_class` reports them (a variable-length string is of
/// the string class there).
fn class_number(c: &DatatypeClass) -> u8 {
    match c {
        DatatypeClass::FixedPoint(_) => 0,
        DatatypeClass::FloatingPoint(_) => 1,
        DatatypeClass::Time { .. } => 2,
        DatatypeClass::String(_) => 3,
        DatatypeClass::Bitfield(_) => 4,
        DatatypeClass::Opaque { .. } => 5,
        DatatypeClass::Compound(_) => 6,
        DatatypeClass::Reference { .. } => 7,
        DatatypeClass::Enum { .. } => 8,
        DatatypeClass::VarLen {
            kind: VarLenKind::String(_),
            ..
        } => 3,
        DatatypeClass::VarLen { .. } => 9,
        DatatypeClass::Array { .. } => 10,
        DatatypeClass::Complex { .. } => 11,
    }
}

#[test]
fn every_class_libhdf5_writes_roundtrips() {
    let Some(python) = interop::python("every_class_libhdf5_writes_roundtrips") else {
        return;
    };
    for low in ["earliest", "v108", "latest"] {
        let path = tmp(&format!("datatypes_{low}.h5"));
        let listing = interop::run_python(&python, WRITE, &[path.to_str().unwrap(), low]);
        let file = H5File::open(&path);
        let mut seen = std::collections::BTreeSet::new();
        let mut versions = std::collections::BTreeSet::new();
        for line in listing.lines() {
            let (name, class) = line.split_once(' ').unwrap();
            let class: u8 = class.trim().parse().unwrap();
            let header = file.object(name);
            let (_, body) = file
                .raw_messages(header)
                .into_iter()
                .find(|(k, _)| *k == MessageType::DATATYPE)
                .unwrap_or_else(|| panic!("{low} {name}: no datatype message"));
            let m = Message::decode(MessageType::DATATYPE, &body, Addr(0), Sizes::DEFAULT)
                .unwrap_or_else(|e| panic!("{low} {name}: {e}"));
            let Message::Datatype(dt) = &m else {
                panic!("{low} {name}: {m:?}");
            };
            assert_eq!(class_number(&dt.class), class, "{low} {name}: {dt:?}");
            let mut out = Vec::new();
            m.encode(Sizes::DEFAULT, &mut out).unwrap();
            assert_eq!(out.len(), dt.encoded_len(), "{low} {name}");
            // Version 1 object headers pad each message to 8 bytes.
            assert!(out.len() <= body.len(), "{low} {name}: grew");
            out.resize(body.len(), 0);
            assert_eq!(out, body, "{low} {name}: re-encodes differently");
            seen.insert(class);
            versions.insert(dt.version.number());
        }
        // Attributes of those types, in attribute messages of the format's version.
        let attrs = file.object("/attrs");
        let mut names = Vec::new();
        for (kind, body) in file.raw_messages(attrs) {
            if kind != MessageType::ATTRIBUTE {
                continue;
            }
            let m = Message::decode(kind, &body, Addr(0), Sizes::DEFAULT)
                .unwrap_or_else(|e| panic!("{low} attribute: {e}"));
            let Message::Attribute(a) = &m else {
                panic!("{low}: {m:?}");
            };
            let mut out = Vec::new();
            m.encode(Sizes::DEFAULT, &mut out).unwrap();
            assert!(out.len() <= body.len(), "{low} {:?}: grew", a.name);
            out.resize(body.len(), 0);
            assert_eq!(out, body, "{low} {:?}: re-encodes differently", a.name);
            names.push((String::from_utf8(a.name.clone()).unwrap(), a.version));
        }
        // Eight: more would go to dense storage at the latest bounds.
        assert_eq!(names.len(), 8, "{low}: {names:?}");
        assert!(names.iter().any(|(n, _)| n == "\u{e9}t\u{e9}"), "{names:?}");
        eprintln!("{low}: attributes {names:?}");
        // Every class but complex numbers (and time, where h5py has no time type).
        for class in [0u8, 1, 3, 4, 5, 6, 7, 8, 9, 10] {
            assert!(seen.contains(&class), "{low}: no class {class} in {seen:?}");
        }
        eprintln!("{low}: classes {seen:?}, datatype versions {versions:?}");
    }
}
