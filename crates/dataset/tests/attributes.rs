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
use h5chunk::{Error, File};
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
        assert_eq!(
            d.attr_names().unwrap(),
            [
                "units",
                "scale_factor",
                "valid_range",
                "grid",
                "long_name",
                "flags",
                "empty",
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
        // A wrong type is refused, naming both.
        let err = grid.values::<i32>().unwrap_err();
        assert!(err.to_string().contains("<u8"), "{err}");
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
        assert_eq!(d.attrs().unwrap().len(), 8);

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

        // Twelve attributes: compact in the earliest format, dense (a fractal heap) at the
        // latest bounds, which h5chunk does not read yet.
        let many = f.group("many").unwrap();
        match low {
            "earliest" => {
                assert_eq!(many.attrs().unwrap().len(), 12);
                assert_eq!(many.attr("a11").unwrap().value::<i64>().unwrap(), 11);
            }
            _ => assert!(matches!(many.attrs(), Err(Error::Unsupported(_)))),
        }
    }
}
