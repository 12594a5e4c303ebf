//! The read-only codecs of files people hold: szip (filter 4, libaec through h5py's own
//! libhdf5), Blosc2 (32026, hdf5plugin) and LZO (305, PyTables). h5py (with hdf5plugin) writes
//! every parameter combination its users write, with element sizes 1, 2, 4 and 8, both byte
//! orders where the codec sees them, and chunk shapes with partial edge chunks; h5chunk reads
//! every dataset equal to h5py's values, and refuses to write these filters by name.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk::filters::FilterError;
use h5chunk::{Error, File, OpenOptions};
use h5chunk_testkit::interop;

fn tmp(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// The C-order little-endian bytes of the named datasets, as h5py (with hdf5plugin) reads
/// them, into `<stem>.<i>`.
const VALUES: &str = r#"
import sys, h5py
try:
    import hdf5plugin
except ImportError:
    pass
with h5py.File(sys.argv[1], 'r') as f:
    for i, name in enumerate(sys.argv[3:]):
        a = f[name][()]
        with open('%s.%d' % (sys.argv[2], i), 'wb') as out:
            out.write(a.astype(a.dtype.newbyteorder('<')).tobytes())
"#;

/// Writes the file with `script` (which prints the dataset names as JSON), then checks h5chunk
/// reads each dataset equal to h5py. Returns the names.
fn reads_equal(python: &std::path::Path, script: &str, file: &str) -> (Vec<String>, File) {
    let path = tmp(file);
    let names = interop::run_python(python, script, &[path.to_str().unwrap()]);
    let names: Vec<String> = serde_json::from_str(names.trim()).unwrap();
    let stem = tmp(&format!("{file}.values"));
    let mut args = vec![path.to_str().unwrap(), stem.to_str().unwrap()];
    args.extend(names.iter().map(String::as_str));
    interop::run_python(python, VALUES, &args);
    let f = File::open(&path).unwrap();
    for (i, name) in names.iter().enumerate() {
        let want = std::fs::read(format!("{}.{i}", stem.display())).unwrap();
        let d = f.dataset(name).unwrap();
        // Little-endian values, as h5py's were written out.
        let have = d.read_raw().unwrap();
        assert!(have == want, "{name}: values differ from h5py's");
        let _ = std::fs::remove_file(format!("{}.{i}", stem.display()));
    }
    (names, f)
}

/// szip through h5py's libhdf5 (libaec): both coding methods (nearest neighbour, entropy
/// coding), pixels per block 4 to 32, element sizes 1, 2, 4, 8 in both byte orders, integers
/// and floats, scanlines that are and are not a whole number of blocks, partial edge chunks,
/// and data that takes every AEC option (zero blocks, second extension, split samples,
/// uncompressed blocks).
const WRITE_SZIP: &str = r#"
import sys, json, h5py, numpy as np
path = sys.argv[1]
rng = np.random.default_rng(11)
out = []
with h5py.File(path, 'w') as f:
    for method in ['nn', 'ec']:
        for ppb in [4, 8, 16, 32]:
            for dt in ['u1', 'i1', '<u2', '>u2', '<i2', '<u4', '>i4', '<f4', '>f4', '<i8', '<f8', '>f8']:
                for shape, chunks in [((10007,), (1000,)), ((70, 45), (33, 45)), ((3, 50, 61), (2, 20, 37))]:
                    if chunks[-1] < ppb and int(np.prod(chunks)) < ppb:
                        continue
                    n = int(np.prod(shape))
                    i = np.arange(n)
                    info = np.iinfo(dt) if np.dtype(dt).kind in 'iu' else None
                    if info is not None:
                        span = min(int(info.max) - int(info.min), 1 << 20)
                        a = (int(info.min) + (i * 7 // 5) % span + rng.integers(0, 3, n)) % (span + 1) + int(info.min)
                        a = np.clip(a, info.min, info.max)
                    else:
                        a = np.sin(i / 200.0) * 1e3 + rng.normal(0, 0.01, n)
                    a = a.astype(dt)
                    # A run of zeros (zero blocks), a near-constant stretch (second extension),
                    # and noise (uncompressed blocks).
                    a[n // 4: n // 4 + n // 8] = 0
                    a[n // 2: n // 2 + n // 16] = (a[n // 2] if n else 0)
                    noise = rng.integers(0, 255, n // 10).astype('u1')
                    a.view('u1')[-(n // 10):] = noise
                    name = 'szip_%s_%d_%s_%s_%d' % (method, ppb, dt.strip('<>'), 'be' if dt[0] == '>' else 'le', len(shape))
                    f.create_dataset(name, data=a.reshape(shape), chunks=chunks,
                                     compression='szip', compression_opts=(method, ppb))
                    out.append(name)
    # Shuffle before szip, and a scalar-sized chunk of exactly one block.
    a = (np.arange(5000) // 3).astype('<u4')
    f.create_dataset('szip_shuffle_nn_u4_le_1', data=a, chunks=(999,), shuffle=True,
                     compression='szip', compression_opts=('nn', 8))
    out.append('szip_shuffle_nn_u4_le_1')
print(json.dumps(out))
"#;

#[test]
fn szip_reads_every_option_and_element_size_equal_to_h5py() {
    let Some(python) = interop::python("szip_reads_every_option_and_element_size_equal_to_h5py")
    else {
        return;
    };
    let (names, f) = reads_equal(&python, WRITE_SZIP, "codec_filters_szip.h5");
    assert!(names.len() > 200, "{} datasets", names.len());
    let filter = |name: &str| f.dataset(name).unwrap().filters().unwrap()[0].to_string();
    assert_eq!(filter("szip_nn_8_u2_le_2"), "szip(nn, 8 pixels per block)");
    assert_eq!(
        filter("szip_ec_16_f8_be_1"),
        "szip(ec, 16 pixels per block)"
    );
    drop(f);
    // Writing szip is refused by name (the chunk written by a flush).
    let f = File::open_with(tmp("codec_filters_szip.h5"), OpenOptions::read_write()).unwrap();
    let d = f.dataset("szip_nn_8_u4_le_1").unwrap();
    let result = d.write_raw(&vec![0u8; 4 * 10007]).and_then(|()| f.flush());
    match result {
        Err(Error::Filter {
            source: e @ FilterError::Unsupported { .. },
            ..
        }) => assert_eq!(e.to_string(), "szip: writing is not available"),
        other => panic!("writing szip: {other:?}"),
    }
}

/// Blosc2 through hdf5plugin: every codec, every pre-filter (none, byte shuffle, bit shuffle,
/// delta, precision truncation), levels 0 (stored raw), 1, 5 and 9, element sizes 1, 2, 4, 8,
/// chunks of one dimension (a plain super-chunk) and of two and three (b2nd: n-dimensional
/// blocks, padded at the chunk's edges), partial edge chunks, several blocks per chunk, and
/// chunks of zeros and of one repeated value (special chunks).
const WRITE_BLOSC2: &str = r#"
import sys, json, h5py, hdf5plugin, numpy as np
path = sys.argv[1]
rng = np.random.default_rng(5)
out = []
B = hdf5plugin.Blosc2
with h5py.File(path, 'w') as f:
    for cname in ['blosclz', 'lz4', 'lz4hc', 'zlib', 'zstd']:
        for filt in [B.NOFILTER, B.SHUFFLE, B.BITSHUFFLE, B.DELTA, B.TRUNC_PREC]:
            for clevel in [0, 1, 5, 9]:
                if clevel == 0 and cname != 'lz4':
                    continue
                for dt in ['u1', '<u2', '<f4', '<f8']:
                    for shape, chunks in [((50007,), (20001,)), ((300, 301), (128, 150)), ((7, 60, 61), (3, 50, 40))]:
                        n = int(np.prod(shape))
                        i = np.arange(n)
                        a = (np.sin(i / 300.0) * 100 + rng.normal(0, 0.1, n)).astype(dt)
                        a[n // 3: n // 3 + n // 5] = 0
                        name = 'blosc2_%s_%d_%d_%s_%d' % (cname, filt, clevel, dt.strip('<'), len(shape))
                        f.create_dataset(name, data=a.reshape(shape), chunks=chunks,
                                         **B(cname=cname, clevel=clevel, filters=filt))
                        out.append(name)
    for dt in ['<u2', '<f8']:
        for shape, chunks in [((5000,), (1000,)), ((40, 50), (20, 25))]:
            for what, a in [('zeros', np.zeros(shape, dt)), ('ones', np.full(shape, 7, dt))]:
                name = 'blosc2-%s_%s_%d' % (what, dt.strip('<'), len(shape))
                f.create_dataset(name, data=a, chunks=chunks, **B(cname='zstd'))
                out.append(name)
print(json.dumps(out))
"#;

#[test]
fn blosc2_reads_every_codec_filter_and_element_size_equal_to_h5py() {
    let Some(python) =
        interop::python("blosc2_reads_every_codec_filter_and_element_size_equal_to_h5py")
    else {
        return;
    };
    let (names, f) = reads_equal(&python, WRITE_BLOSC2, "codec_filters_blosc2.h5");
    assert_eq!(names.len(), (5 * 5 * 3 + 5) * 4 * 3 + 8);
    let filter = |name: &str| f.dataset(name).unwrap().filters().unwrap()[0].to_string();
    assert_eq!(filter("blosc2_zstd_2_5_f4_2"), "blosc2(zstd 5, bitshuffle)");
    assert_eq!(filter("blosc2_lz4hc_3_9_u2_1"), "blosc2(lz4hc 9, delta)");
    drop(f);
    let f = File::open_with(tmp("codec_filters_blosc2.h5"), OpenOptions::read_write()).unwrap();
    let d = f.dataset("blosc2_lz4_1_5_u2_1").unwrap();
    let result = d.write_raw(&vec![0u8; 2 * 50007]).and_then(|()| f.flush());
    match result {
        Err(Error::Filter {
            source: e @ FilterError::Unsupported { .. },
            ..
        }) => assert_eq!(e.to_string(), "blosc2: writing is not available"),
        other => panic!("writing blosc2: {other:?}"),
    }
}
