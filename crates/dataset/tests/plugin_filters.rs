//! The filters of the hdf5plugin package (what h5py users write with `hdf5plugin.Bitshuffle()`,
//! `LZ4()`, `Zstd()`), both ways: h5chunk reads the datasets h5py writes with them equal, writes
//! the same data with the same filters into a file of its own, which h5py (with hdf5plugin)
//! reads equal, and whose bitshuffle, LZ4 and Zstandard chunks are byte-identical to the
//! reference filters' (compared with h5py's `read_direct_chunk`). Element sizes 1, 2, 4 and 8 (and 3, fixed
//! strings, and 16, complex numbers, in one shape); chunk shapes
//! with partial edge chunks, chunks whose element count is not a multiple of 8 (bitshuffle's
//! left-over elements), several bitshuffle blocks per chunk, and LZ4 blocks over and under
//! 64 KiB (liblz4's two hash tables) and stored raw. The reference chunks also go through
//! `write_direct_chunk` (the detector path: frames stored without recompression) into a third
//! file that both h5chunk and h5py read equal. Blosc and Blosc2 are written by h5chunk and read
//! back by h5py and `h5dump` (with hdf5plugin's plugins).
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk::filters::FilterError;
use h5chunk::{
    BitshuffleCompression, BloscCodec, BloscShuffle, Error, File, FilterSpec, OpenOptions,
};
use h5chunk_testkit::interop;

fn tmp(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// Writes every (filter, element type, shape) combination and prints the list as JSON.
const WRITE: &str = r#"
import sys, json, h5py, hdf5plugin, numpy as np
path = sys.argv[1]
filters = {
    'bitshuffle-none': hdf5plugin.Bitshuffle(nelems=0, cname='none'),
    'bitshuffle-lz4': hdf5plugin.Bitshuffle(nelems=0, cname='lz4'),
    'bitshuffle-lz4-b64': hdf5plugin.Bitshuffle(nelems=64, cname='lz4'),
    'bitshuffle-none-b256': hdf5plugin.Bitshuffle(nelems=256, cname='none'),
    'bitshuffle-zstd': hdf5plugin.Bitshuffle(nelems=0, cname='zstd', clevel=3),
    'lz4': hdf5plugin.LZ4(nbytes=0),
    'lz4-b1000': hdf5plugin.LZ4(nbytes=1000),
    'zstd': hdf5plugin.Zstd(clevel=3),
    'zstd-19': hdf5plugin.Zstd(clevel=19),
    'bzip2': hdf5plugin.BZip2(blocksize=9),
    'bzip2-1': hdf5plugin.BZip2(blocksize=1),
}
shapes = [((10007,), (1001,)), ((37, 53), (10, 13)), ((5, 33, 70), (2, 16, 64)), ((300, 400), (128, 256))]
dtypes = ['u1', '<u2', '<f4', '<f8']
rng = np.random.default_rng(7)
out = []
with h5py.File(path, 'w') as f:
    for fname, opts in filters.items():
        for dt in dtypes:
            for shape, chunks in shapes:
                n = int(np.prod(shape))
                i = np.arange(n)
                # Smooth values with noise in the low bits, a run of zeros, and a stretch of
                # noise, so that blocks compress, repeat, and (LZ4) stay raw.
                if dt == 'u1':
                    a = ((i // 37) % 7 + rng.integers(0, 2, n)).astype(dt)
                elif dt == '<u2':
                    a = (1000 + (i // 11) % 300 + rng.integers(0, 4, n)).astype(dt)
                else:
                    a = (np.sin(i / 500.0) * 100 + rng.normal(0, 0.01, n)).astype(dt)
                a[n // 3: n // 3 + n // 10] = 0
                a[n // 2: n // 2 + n // 20] = rng.integers(0, 255, n // 20).astype(dt)
                name = '%s_%s_%s' % (fname, dt.strip('<'), 'x'.join(map(str, shape)))
                f.create_dataset(name, data=a.reshape(shape), chunks=chunks, **opts)
                out.append([name, fname])
        # Element sizes that are not a power of two, and 16: fixed strings of 3 bytes, complex.
        n = 10007
        i = np.arange(n)
        s3 = np.frombuffer(np.stack([i // 5 % 50, i % 3, (i // 100) % 7], 1).astype('u1').tobytes(), 'S3')
        c16 = (np.sin(i / 400.0) + 1j * np.cos(i / 300.0)).astype('<c16')
        for dt, a in [('s3', s3), ('c16', c16)]:
            name = '%s_%s_%d' % (fname, dt, n)
            f.create_dataset(name, data=a, chunks=(1001,), **opts)
            out.append([name, fname])
print(json.dumps(out))
"#;

/// Compares h5chunk's file with h5py's: values, and (for the filters given) every stored chunk.
const COMPARE: &str = r#"
import sys, json, h5py, hdf5plugin, numpy as np
ref, ours, identical = sys.argv[1], sys.argv[2], set(sys.argv[3].split(','))
bad, chunks = [], 0
with h5py.File(ref, 'r') as a, h5py.File(ours, 'r') as b:
    for name in a:
        da, db = a[name], b[name]
        if da.dtype != db.dtype or da.chunks != db.chunks or not np.array_equal(da[()], db[()]):
            bad.append(name + ': values')
            continue
        if name.split('_')[0] not in identical:
            continue
        offsets = []
        da.id.chunk_iter(lambda c: offsets.append(c.chunk_offset))
        for off in offsets:
            chunks += 1
            if da.id.read_direct_chunk(off) != db.id.read_direct_chunk(off):
                bad.append('%s: chunk %s' % (name, off))
print(json.dumps([bad, chunks]))
"#;

/// The C-order little-endian bytes of the datasets named after the first two arguments, as h5py
/// with hdf5plugin reads them, into `<stem>.<i>`.
const VALUES: &str = r#"
import sys, h5py, hdf5plugin
with h5py.File(sys.argv[1], 'r') as f:
    for i, name in enumerate(sys.argv[3:]):
        a = f[name][()]
        with open('%s.%d' % (sys.argv[2], i), 'wb') as out:
            out.write(a.astype(a.dtype.newbyteorder('<')).tobytes())
"#;

/// The `FilterSpec` that writes what hdf5plugin's filter of that name writes.
fn spec(name: &str) -> FilterSpec {
    match name {
        "bitshuffle-none" => FilterSpec::Bitshuffle {
            block_size: 0,
            compression: BitshuffleCompression::None,
        },
        "bitshuffle-lz4" => FilterSpec::Bitshuffle {
            block_size: 0,
            compression: BitshuffleCompression::Lz4,
        },
        "bitshuffle-lz4-b64" => FilterSpec::Bitshuffle {
            block_size: 64,
            compression: BitshuffleCompression::Lz4,
        },
        "bitshuffle-none-b256" => FilterSpec::Bitshuffle {
            block_size: 256,
            compression: BitshuffleCompression::None,
        },
        "bitshuffle-zstd" => FilterSpec::Bitshuffle {
            block_size: 0,
            compression: BitshuffleCompression::Zstd(3),
        },
        "lz4" => FilterSpec::Lz4(0),
        "lz4-b1000" => FilterSpec::Lz4(1000),
        "zstd" => FilterSpec::Zstd(3),
        "zstd-19" => FilterSpec::Zstd(19),
        "bzip2" => FilterSpec::Bzip2(9),
        "bzip2-1" => FilterSpec::Bzip2(1),
        other => panic!("no spec for {other}"),
    }
}

#[test]
fn hdf5plugin_filters_both_ways_and_byte_identical() {
    let Some(python) = interop::python("hdf5plugin_filters_both_ways_and_byte_identical") else {
        return;
    };
    let reference = tmp("plugin_filters_h5py.h5");
    let ours = tmp("plugin_filters_h5chunk.h5");
    let list = interop::run_python(&python, WRITE, &[reference.to_str().unwrap()]);
    let list: Vec<(String, String)> = serde_json::from_str(list.trim()).unwrap();
    assert_eq!(list.len(), 11 * (4 * 4 + 2));

    // h5chunk reads h5py's datasets as h5py does.
    let names: Vec<&str> = list.iter().map(|(n, _)| n.as_str()).collect();
    let stem = tmp("plugin_filters_values");
    let mut args = vec![reference.to_str().unwrap(), stem.to_str().unwrap()];
    args.extend(&names);
    interop::run_python(&python, VALUES, &args);
    let expected: Vec<Vec<u8>> = (0..names.len())
        .map(|i| std::fs::read(format!("{}.{i}", stem.display())).unwrap())
        .collect();
    let src = File::open(&reference).unwrap();
    let out = File::create(&ours).unwrap();
    let direct_path = tmp("plugin_filters_direct.h5");
    let direct = File::create(&direct_path).unwrap();
    let (out_root, direct_root) = (out.group("/").unwrap(), direct.group("/").unwrap());
    for ((name, filter), want) in list.iter().zip(&expected) {
        let d = src.dataset(name).unwrap();
        let values = d.read_raw().unwrap();
        assert_eq!(&values, want, "{name}: values read by h5chunk");
        // The same data through the same filter, written by h5chunk.
        let copy = out_root
            .new_dataset_with_type(d.datatype().clone())
            .shape(&d.shape())
            .chunk(&d.chunk().unwrap())
            .filter(spec(filter))
            .create(name)
            .unwrap();
        copy.write_raw(&values).unwrap();
        // The detector path: the reference filter's chunks as they are, through
        // write_direct_chunk, into a dataset with the same filter.
        let raw = direct_root
            .new_dataset_with_type(d.datatype().clone())
            .shape(&d.shape())
            .chunk(&d.chunk().unwrap())
            .filter(spec(filter))
            .create(name)
            .unwrap();
        for c in d.chunks().unwrap() {
            let (stored, mask) = d.read_direct_chunk(&c.offset).unwrap().unwrap();
            raw.write_direct_chunk(&c.offset, &stored, mask).unwrap();
        }
        assert_eq!(raw.read_raw().unwrap(), values, "{name}: direct chunks");
    }
    drop((out_root, direct_root));
    out.close().unwrap();
    direct.close().unwrap();

    // h5py with hdf5plugin reads h5chunk's file equal; bitshuffle (none, LZ4, Zstandard), LZ4
    // and Zstandard chunks are the reference filters' bytes. For Zstandard that pins the frame
    // to libzstd's one-shot `ZSTD_compress`: the same parameters for the chunk's known size
    // (window, hash and chain logs shrunk for small chunks), content size in the header, no
    // checksum, the same blocks.
    let identical = [
        "bitshuffle-none",
        "bitshuffle-lz4",
        "bitshuffle-lz4-b64",
        "bitshuffle-none-b256",
        "lz4",
        "lz4-b1000",
        "zstd",
        "zstd-19",
        "bitshuffle-zstd",
    ];
    let report = interop::run_python(
        &python,
        COMPARE,
        &[
            reference.to_str().unwrap(),
            ours.to_str().unwrap(),
            &identical.join(","),
        ],
    );
    let (bad, chunks): (Vec<String>, u64) = serde_json::from_str(report.trim()).unwrap();
    assert!(bad.is_empty(), "{} differences: {bad:#?}", bad.len());
    // Every chunk of the byte-identical filters' datasets was compared (18 datasets, 236
    // chunks, a filter).
    assert_eq!(chunks, identical.len() as u64 * 236, "chunks compared");
    // The directly written chunks read equal in h5py, and are the reference's bytes for every
    // filter.
    let every = list
        .iter()
        .map(|(_, f)| f.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>()
        .join(",");
    let report = interop::run_python(
        &python,
        COMPARE,
        &[
            reference.to_str().unwrap(),
            direct_path.to_str().unwrap(),
            &every,
        ],
    );
    let (bad, chunks): (Vec<String>, u64) = serde_json::from_str(report.trim()).unwrap();
    assert!(bad.is_empty(), "direct chunks: {bad:#?}");
    assert!(chunks > 11 * 4 * 20, "{chunks} direct chunks compared");
}

#[test]
fn hdf5plugin_filters_h5chunk_reports_names() {
    let Some(python) = interop::python("hdf5plugin_filters_h5chunk_reports_names") else {
        return;
    };
    let path = tmp("plugin_filter_names.h5");
    interop::run_python(
        &python,
        r#"
import sys, h5py, hdf5plugin, numpy as np
with h5py.File(sys.argv[1], 'w') as f:
    a = np.arange(1000, dtype='<i4')
    f.create_dataset('bs', data=a, chunks=(100,), **hdf5plugin.Bitshuffle(nelems=64, cname='lz4'))
    f.create_dataset('lz4', data=a, chunks=(100,), **hdf5plugin.LZ4())
    f.create_dataset('zstd', data=a, chunks=(100,), **hdf5plugin.Zstd(clevel=5))
    f.create_dataset('bz2', data=a, chunks=(100,), **hdf5plugin.BZip2())
    f.create_dataset('sz', data=a.astype('<f4'), chunks=(100,), **hdf5plugin.SZ(absolute=0.1))
"#,
        &[path.to_str().unwrap()],
    );
    let f = File::open(&path).unwrap();
    let names = |ds: &str| -> Vec<String> {
        f.dataset(ds)
            .unwrap()
            .filters()
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    assert_eq!(names("bs"), ["bitshuffle(lz4, block 64)"]);
    assert_eq!(names("lz4"), ["lz4"]);
    assert_eq!(names("zstd"), ["zstd(5)"]);
    assert_eq!(names("bz2"), ["bzip2(9)"]);
    let want: Vec<i32> = (0..1000).collect();
    for ds in ["bs", "lz4", "zstd", "bz2"] {
        assert_eq!(f.dataset(ds).unwrap().read::<i32>().unwrap(), want, "{ds}");
    }
    // A filter h5chunk does not implement names itself, as h5py names a missing plugin.
    match f.dataset("sz").and_then(|d| d.read::<f32>()) {
        Err(Error::Pipeline {
            source: e @ FilterError::Unknown { id: 32017, .. },
            ..
        }) => assert_eq!(e.to_string(), "filter 32017 (SZ) is not available"),
        other => panic!("sz: {other:?}"),
    }
}

/// Blosc buffers of every codec and shuffle h5py writes through hdf5plugin, and the element
/// sizes 1, 2, 4, 8 (a type size of 8 in blocks that split, a partial edge chunk, blocks whose
/// element count is not a multiple of 8 for the bit shuffle).
const WRITE_BLOSC: &str = r#"
import sys, json, h5py, hdf5plugin, numpy as np
path = sys.argv[1]
rng = np.random.default_rng(3)
out = []
with h5py.File(path, 'w') as f:
    for cname in ['blosclz', 'lz4', 'lz4hc', 'zlib', 'zstd']:
        for shuffle in [hdf5plugin.Blosc.NOSHUFFLE, hdf5plugin.Blosc.SHUFFLE, hdf5plugin.Blosc.BITSHUFFLE]:
            for clevel in [1, 5, 9]:
                for dt in ['u1', '<u2', '<f4', '<f8']:
                    for shape, chunks in [((10007,), (3001,)), ((300, 301), (100, 150))]:
                        n = int(np.prod(shape))
                        i = np.arange(n)
                        a = (np.sin(i / 300.0) * 100 + rng.normal(0, 0.1, n)).astype(dt)
                        a[n // 3: n // 3 + n // 10] = 0
                        name = 'blosc_%s_%d_%d_%s_%d' % (cname, shuffle, clevel, dt.strip('<'), len(shape))
                        f.create_dataset(name, data=a.reshape(shape), chunks=chunks,
                                         **hdf5plugin.Blosc(cname=cname, clevel=clevel, shuffle=shuffle))
                        out.append(name)
    a = np.repeat(np.arange(10, dtype='<i4'), 1000)
    f.create_dataset('snappy', data=a, chunks=(5000,), **hdf5plugin.Blosc(cname='snappy'))
print(json.dumps(out))
"#;

#[test]
fn hdf5plugin_blosc_reads_every_codec_and_shuffle() {
    let Some(python) = interop::python("hdf5plugin_blosc_reads_every_codec_and_shuffle") else {
        return;
    };
    let path = tmp("plugin_filters_blosc.h5");
    let names = interop::run_python(&python, WRITE_BLOSC, &[path.to_str().unwrap()]);
    let names: Vec<String> = serde_json::from_str(names.trim()).unwrap();
    assert_eq!(names.len(), 5 * 3 * 3 * 4 * 2);
    let stem = tmp("plugin_filters_blosc_values");
    let mut args = vec![path.to_str().unwrap(), stem.to_str().unwrap()];
    args.extend(names.iter().map(String::as_str));
    interop::run_python(&python, VALUES, &args);
    let f = File::open(&path).unwrap();
    for (i, name) in names.iter().enumerate() {
        let want = std::fs::read(format!("{}.{i}", stem.display())).unwrap();
        let d = f.dataset(name).unwrap();
        assert_eq!(d.read_raw().unwrap(), want, "{name}");
        // blosc_<codec>_<shuffle>_<level>_...
        let parts: Vec<&str> = name.split('_').collect();
        let shuffle = ["noshuffle", "shuffle", "bitshuffle"][parts[2].parse::<usize>().unwrap()];
        assert_eq!(
            d.filters().unwrap()[0].to_string(),
            format!("blosc({} {}, {shuffle})", parts[1], parts[3]),
        );
    }
    // Snappy has no pure-Rust decoder here: a typed refusal that names it.
    match f.dataset("snappy").and_then(|d| d.read::<i32>()) {
        Err(Error::Filter {
            source: e @ FilterError::Unsupported { .. },
            ..
        }) => assert_eq!(e.to_string(), "blosc: the Snappy codec is not available"),
        other => panic!("snappy: {:?}", other.map(|v| v.len())),
    }
    drop(f);
    // Writing with Snappy is refused, by name (the chunk written by a flush).
    let f = File::open_with(&path, OpenOptions::read_write()).unwrap();
    let d = f.dataset("snappy").unwrap();
    let result = d.write_raw(&vec![0u8; 4 * 10000]).and_then(|()| f.flush());
    match result {
        Err(Error::Filter {
            source: e @ FilterError::Unsupported { .. },
            ..
        }) => assert_eq!(
            e.to_string(),
            "blosc: writing with the Snappy codec is not available"
        ),
        other => panic!("writing blosc with snappy: {other:?}"),
    }
}

/// Data for the Blosc writing test, made by h5py with hdf5plugin: every codec (Snappy aside)
/// and shuffle of Blosc and Blosc2 (and Blosc2's delta), levels 1, 5 and 9 (Blosc2 also 0: stored raw), element
/// sizes 1, 2, 4 and 8, chunk shapes with partial edge chunks in one, two and three dimensions,
/// and data with runs of zeros and a stretch of noise (chunks that do not compress, which the
/// reference Blosc filter leaves unfiltered). Prints [name, filters of the dataset].
const WRITE_BLOSC_REFERENCE: &str = r#"
import sys, json, h5py, hdf5plugin, numpy as np
path = sys.argv[1]
rng = np.random.default_rng(13)
out = []
with h5py.File(path, 'w') as f:
    for kind, make in [('blosc', lambda c, l, s: hdf5plugin.Blosc(cname=c, clevel=l, shuffle=s)),
                       ('blosc2', lambda c, l, s: hdf5plugin.Blosc2(cname=c, clevel=l, filters=s))]:
        for cname in ['blosclz', 'lz4', 'lz4hc', 'zlib', 'zstd']:
            for shuffle in ([0, 1, 2, 3] if kind == 'blosc2' else [0, 1, 2]):
                for clevel in [0, 1, 5, 9]:
                    if clevel == 0 and (kind == 'blosc' or cname != 'lz4'):
                        continue
                    for dt in ['u1', '<u2', '<f4', '<i8']:
                        for shape, chunks in [((10007,), (3001,)), ((300, 301), (100, 150)), ((5, 40, 61), (3, 32, 40))]:
                            n = int(np.prod(shape))
                            i = np.arange(n)
                            a = (np.sin(i / 300.0) * 100 + rng.normal(0, 0.1, n)).astype(dt)
                            a[n // 3: n // 3 + n // 10] = 0
                            a.view('u1')[-(n * a.itemsize // 8):] = rng.integers(0, 256, n * a.itemsize // 8, dtype='u1')
                            name = '%s_%s_%d_%d_%s_%d' % (kind, cname, shuffle, clevel, dt.strip('<'), len(shape))
                            f.create_dataset(name, data=a.reshape(shape), chunks=chunks, **make(cname, clevel, shuffle))
                            out.append(name)
print(json.dumps(out))
"#;

/// Checks h5chunk's file against h5py's: the same dtype, chunks and values, and the same client
/// data for the filter (hdf5plugin's Blosc2 adds the chunk's rank and shape for chunks of two
/// dimensions and more, which h5chunk's plain frames do not need). Prints the differences.
const COMPARE_BLOSC: &str = r#"
import sys, json, h5py, hdf5plugin, numpy as np
ref, ours = sys.argv[1], sys.argv[2]
bad = []
with h5py.File(ref, 'r') as a, h5py.File(ours, 'r') as b:
    for name in a:
        da, db = a[name], b[name]
        # Bytes, not numbers: the noise makes NaNs.
        if da.dtype != db.dtype or da.chunks != db.chunks or da[()].tobytes() != db[()].tobytes():
            bad.append(name + ': values')
        fa, fb = da._filters, db._filters
        if list(fa) != list(fb) or [tuple(v[:7]) for v in fa.values()] != [tuple(v) for v in fb.values()]:
            bad.append('%s: filters %s, h5py %s' % (name, fb, fa))
print(json.dumps(bad))
"#;

/// hdf5plugin's folder of filter plugins, for `HDF5_PLUGIN_PATH`.
fn plugin_path(python: &std::path::Path) -> String {
    interop::run_python(
        python,
        "import hdf5plugin; print(hdf5plugin.PLUGIN_PATH)",
        &[],
    )
    .trim()
    .to_owned()
}

/// `h5dump -b LE` of one dataset (its values as little-endian binary) with hdf5plugin's
/// plugins.
fn h5dump_values(
    h5dump: &std::path::Path,
    plugins: &str,
    file: &std::path::Path,
    name: &str,
) -> Vec<u8> {
    let out = tmp(&format!("h5dump_{name}.bin"));
    let run = std::process::Command::new(h5dump)
        .env("HDF5_PLUGIN_PATH", plugins)
        .args(["-d", &format!("/{name}"), "-b", "LE", "-o"])
        .arg(&out)
        .arg(file)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "h5dump -d {name}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let bytes = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    bytes
}

/// h5chunk writes Blosc and Blosc2 with every codec (Snappy aside) and shuffle, at every level,
/// for element sizes 1, 2, 4 and 8 and chunk shapes with partial edge chunks; h5py with
/// hdf5plugin reads every dataset equal to the same data written by hdf5plugin's filters, with
/// the same client data (Blosc) and `h5dump`, with hdf5plugin's plugins, dumps the same values.
#[test]
fn blosc_and_blosc2_h5chunk_writes_read_in_h5py_and_h5dump() {
    let test = "blosc_and_blosc2_h5chunk_writes_read_in_h5py_and_h5dump";
    let Some(python) = interop::python(test) else {
        return;
    };
    let h5dump = interop::h5dump(test);
    let reference = tmp("plugin_filters_blosc_reference.h5");
    let ours = tmp("plugin_filters_blosc_h5chunk.h5");
    let names = interop::run_python(
        &python,
        WRITE_BLOSC_REFERENCE,
        &[reference.to_str().unwrap()],
    );
    let names: Vec<String> = serde_json::from_str(names.trim()).unwrap();
    // Blosc: 5 codecs × 3 shuffles × 3 levels; Blosc2: × 4 filters (delta too), and level 0.
    assert_eq!(names.len(), (5 * 3 * 3 + 5 * 4 * 3 + 4) * 4 * 3);
    let src = File::open(&reference).unwrap();
    let out = File::create(&ours).unwrap();
    let root = out.group("/").unwrap();
    let mut values = Vec::new();
    let mut masked = 0usize;
    for name in &names {
        // <kind>_<codec>_<shuffle>_<level>_<type>_<rank>
        let parts: Vec<&str> = name.split('_').collect();
        let codec = match parts[1] {
            "blosclz" => BloscCodec::BloscLz,
            "lz4" => BloscCodec::Lz4,
            "lz4hc" => BloscCodec::Lz4Hc,
            "zlib" => BloscCodec::Zlib,
            "zstd" => BloscCodec::Zstd,
            other => panic!("{other}"),
        };
        let shuffle = [
            BloscShuffle::None,
            BloscShuffle::Byte,
            BloscShuffle::Bit,
            BloscShuffle::Delta,
        ][parts[2].parse::<usize>().unwrap()];
        let level = parts[3].parse().unwrap();
        let spec = if parts[0] == "blosc" {
            FilterSpec::Blosc {
                codec,
                level,
                shuffle,
            }
        } else {
            FilterSpec::Blosc2 {
                codec,
                level,
                shuffle,
            }
        };
        let d = src.dataset(name).unwrap();
        let v = d.read_raw().unwrap();
        let copy = root
            .new_dataset_with_type(d.datatype().clone())
            .shape(&d.shape())
            .chunk(&d.chunk().unwrap())
            .filter(spec)
            .create(name)
            .unwrap();
        copy.write_raw(&v).unwrap();
        assert_eq!(copy.read_raw().unwrap(), v, "{name}: h5chunk reads back");
        for c in copy.chunks().unwrap() {
            let (_, mask) = copy.read_direct_chunk(&c.offset).unwrap().unwrap();
            masked += usize::from(mask != 0);
        }
        values.push(v);
    }
    drop(root);
    out.close().unwrap();
    // Chunks of noise do not compress: Blosc leaves them unfiltered, as the reference does.
    assert!(masked > 0, "no chunk left unfiltered");
    let report = interop::run_python(
        &python,
        COMPARE_BLOSC,
        &[reference.to_str().unwrap(), ours.to_str().unwrap()],
    );
    let bad: Vec<String> = serde_json::from_str(report.trim()).unwrap();
    assert!(bad.is_empty(), "{} differences: {bad:#?}", bad.len());
    if let Some(h5dump) = h5dump {
        let plugins = plugin_path(&python);
        // Every filter, codec, shuffle, element size and chunk shape at levels 5 and 0 (h5py
        // has read every level above): a process per dataset is the test's main cost.
        for (name, v) in names
            .iter()
            .zip(&values)
            .filter(|(n, _)| matches!(n.split('_').nth(3), Some("5" | "0")))
        {
            assert!(
                h5dump_values(&h5dump, &plugins, &ours, name) == *v,
                "{name}: h5dump's values differ"
            );
        }
    }
    let _ = std::fs::remove_file(&reference);
    let _ = std::fs::remove_file(&ours);
}

#[test]
fn unusable_filter_parameters_leave_no_dataset() {
    let path = tmp("plugin_filters_bad_parameters.h5");
    let f = File::create(&path).unwrap();
    let made = f
        .new_dataset::<u32>()
        .shape(&[100])
        .chunk(&[10])
        .filter(FilterSpec::Bitshuffle {
            block_size: 12,
            compression: BitshuffleCompression::Lz4,
        })
        .create("bad");
    assert!(
        matches!(
            made,
            Err(Error::Pipeline {
                source: FilterError::BadParameters {
                    filter: "bitshuffle",
                    ..
                },
                ..
            })
        ),
        "{made:?}"
    );
    assert!(f.dataset("bad").is_err());
    // Blosc 1 has no delta filter (Blosc2 has).
    let made = f
        .new_dataset::<u32>()
        .shape(&[100])
        .chunk(&[10])
        .filter(FilterSpec::Blosc {
            codec: BloscCodec::Lz4,
            level: 5,
            shuffle: BloscShuffle::Delta,
        })
        .create("bad_blosc");
    assert!(
        matches!(made, Err(Error::InvalidArgument { name: "filter", .. })),
        "{made:?}"
    );
    assert!(f.dataset("bad_blosc").is_err());
    // The same file takes a good one, which reads back.
    let d = f
        .new_dataset::<u32>()
        .shape(&[100])
        .chunk(&[10])
        .filter(FilterSpec::Bitshuffle {
            block_size: 16,
            compression: BitshuffleCompression::Lz4,
        })
        .create("good")
        .unwrap();
    let v: Vec<u32> = (0..100).collect();
    d.write(&v).unwrap();
    f.close().unwrap();
    let f = File::open(&path).unwrap();
    assert_eq!(f.dataset("good").unwrap().read::<u32>().unwrap(), v);
    assert!(f.dataset("bad").is_err());
}
