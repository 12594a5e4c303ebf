//! The codecs of files people hold: szip (filter 4, libaec through h5py's own libhdf5), Blosc2
//! (32026, hdf5plugin) and LZO (305, PyTables). h5py (with hdf5plugin) writes every parameter
//! combination its users write, with element sizes 1, 2, 4 and 8, both byte orders where the
//! codec sees them, and chunk shapes with partial edge chunks; h5chunk reads every dataset equal
//! to h5py's values, and refuses by name to write what it does not write (Blosc2's precision
//! truncation). LZO chunks h5chunk writes decode in liblzo2 (`lzop`).
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk::filters::FilterError;
use h5chunk::{Error, File, FilterSpec, OpenOptions};
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
    // Rewriting a dataset h5py made (szip_h5chunk_writes_read_in_h5py_and_h5dump checks
    // h5py and h5dump read what h5chunk writes).
    let f = File::open_with(tmp("codec_filters_szip.h5"), OpenOptions::read_write()).unwrap();
    let d = f.dataset("szip_nn_8_u4_le_1").unwrap();
    let v: Vec<u8> = (0..10007u32).flat_map(|i| (i / 3).to_le_bytes()).collect();
    d.write_raw(&v).and_then(|()| f.flush()).unwrap();
    assert_eq!(d.read_raw().unwrap(), v);
    drop(d);
    drop(f);
    let _ = std::fs::remove_file(tmp("codec_filters_szip.h5"));
}

/// Blosc2 through hdf5plugin: every codec, every pre-filter (none, byte shuffle, bit shuffle,
/// delta, precision truncation), levels 0 (stored raw), 1 and 9, element sizes 1, 2, 4, 8,
/// chunks of one dimension (a plain super-chunk) and of two and three (b2nd: n-dimensional
/// blocks, padded at the chunk's edges), partial edge chunks, chunks of several blocks (the
/// last one partial), and chunks of zeros and of one repeated value (special chunks).
const WRITE_BLOSC2: &str = r#"
import sys, json, h5py, hdf5plugin, numpy as np
path = sys.argv[1]
rng = np.random.default_rng(5)
out = []
B = hdf5plugin.Blosc2
with h5py.File(path, 'w') as f:
    for cname in ['blosclz', 'lz4', 'lz4hc', 'zlib', 'zstd']:
        for filt in [B.NOFILTER, B.SHUFFLE, B.BITSHUFFLE, B.DELTA, B.TRUNC_PREC]:
            for clevel in [0, 1, 9]:
                if clevel == 0 and cname != 'lz4':
                    continue
                for dt in ['u1', '<u2', '<f4', '<f8']:
                    for shape, chunks in [((30007,), (12001,)), ((150, 201), (128, 150)), ((5, 40, 61), (3, 32, 40))]:
                        n = int(np.prod(shape))
                        i = np.arange(n)
                        a = (np.sin(i / 300.0) * 100 + (i % 7 == 0) * rng.normal(0, 0.1, n)).astype(dt)
                        a[n // 3: n // 3 + n // 5] = 0
                        name = 'blosc2_%s_%d_%d_%s_%d' % (cname, filt, clevel, dt.strip('<'), len(shape))
                        f.create_dataset(name, data=a.reshape(shape), chunks=chunks,
                                         **B(cname=cname, clevel=clevel, filters=filt))
                        out.append(name)
    # Chunks over a few hundred KiB: several blocks (1-D: a partial last one; b2nd: blocks of
    # n dimensions padded at the chunk's edges).
    for cname, filt in [('lz4', B.SHUFFLE), ('zstd', B.BITSHUFFLE), ('blosclz', B.DELTA),
                        ('zlib', B.SHUFFLE), ('lz4', B.DELTA), ('zstd', B.NOFILTER)]:
        for dt, shape, chunks in [('<f4', (400000,), (300001,)), ('<u2', (700, 900), (600, 700)),
                                  ('<f8', (4, 300, 300), (3, 200, 250))]:
            n = int(np.prod(shape))
            i = np.arange(n)
            a = (np.sin(i / 3000.0) * 100 + (i % 11 == 0)).astype(dt).reshape(shape)
            name = 'blosc2-blocks_%s_%d_%s_%d' % (cname, filt, dt.strip('<'), len(shape))
            f.create_dataset(name, data=a, chunks=chunks, **B(cname=cname, clevel=5, filters=filt))
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
    assert_eq!(names.len(), (5 * 5 * 2 + 5) * 4 * 3 + 18 + 8);
    let filter = |name: &str| f.dataset(name).unwrap().filters().unwrap()[0].to_string();
    assert_eq!(filter("blosc2_zstd_2_1_f4_2"), "blosc2(zstd 1, bitshuffle)");
    assert_eq!(filter("blosc2_lz4hc_3_9_u2_1"), "blosc2(lz4hc 9, delta)");
    drop(f);
    let f = File::open_with(tmp("codec_filters_blosc2.h5"), OpenOptions::read_write()).unwrap();
    // Writing with the shuffles and delta works (plugin_filters.rs checks h5py reads it);
    // precision truncation is refused by name (the chunk written by a flush).
    let d = f.dataset("blosc2_lz4_1_1_u2_1").unwrap();
    let v: Vec<u8> = (0..2 * 30007u32).map(|i| (i / 50) as u8).collect();
    d.write_raw(&v).and_then(|()| f.flush()).unwrap();
    assert_eq!(d.read_raw().unwrap(), v);
    drop(d);
    drop(f);
    // Reopened: the refused chunk stays dirty in a file's cache and fails its next flush.
    let f = File::open_with(tmp("codec_filters_blosc2.h5"), OpenOptions::read_write()).unwrap();
    let d = f.dataset("blosc2_zstd_4_9_u2_1").unwrap();
    let result = d.write_raw(&v).and_then(|()| f.flush());
    match result {
        Err(Error::Filter {
            source: e @ FilterError::Unsupported { .. },
            ..
        }) => assert_eq!(
            e.to_string(),
            "blosc2: writing with precision truncation is not available"
        ),
        other => panic!("writing blosc2 with precision truncation: {other:?}"),
    }
    drop(d);
    drop(f);
    let _ = std::fs::remove_file(tmp("codec_filters_blosc2.h5"));
}

/// LZO chunks from liblzo2 itself (Debian's `lzop`, which `.ci/run` installs): h5py makes
/// datasets whose pipeline is PyTables' LZO filter (305, client data of a PyTables 2.x Table:
/// level 1, version 23, type 0), and stores each chunk (edge chunks padded, as libhdf5 pads
/// them) as PyTables stores it: the LZO1X stream `lzop` made at levels 1, 3 and 9 (LZO1X-1(15),
/// LZO1X-1, LZO1X-999), at level 9 followed by PyTables 0.5-0.7's Adler-32 and length. Element
/// sizes 1, 2, 4, 8; h5chunk reads the values that went into liblzo2.
const WRITE_LZO: &str = r#"
import sys, json, struct, subprocess, zlib, h5py, numpy as np
path, stem = sys.argv[1], sys.argv[2]

def lzo1x(raw, level):
    # One lzop block: the file header, then (uncompressed length, compressed length, checksums,
    # data) big-endian; data shorter than the block is an LZO1X stream.
    z = subprocess.run(['lzop', '-c', '-%d' % level, '--no-name'], input=raw, check=True,
                       stdout=subprocess.PIPE).stdout
    assert z[:9] == b'\x89LZO\x00\r\n\x1a\n'
    version, = struct.unpack('>H', z[9:11])
    at = 13
    if version >= 0x0940:
        at += 2
    at += 1  # method
    if version >= 0x0940:
        at += 1  # level
    flags, = struct.unpack('>I', z[at:at + 4]); at += 4
    if flags & 0x800:
        at += 4
    at += 8  # mode, mtime low
    if version >= 0x0940:
        at += 4
    n = z[at]; at += 1 + n
    at += 4  # header checksum
    if flags & 0x40:
        m, = struct.unpack('>I', z[at:at + 4]); at += 8 + m
    dst, src = struct.unpack('>II', z[at:at + 8]); at += 8
    assert dst == len(raw) and src < dst, (dst, src)
    if flags & 0x1: at += 4
    if flags & 0x100: at += 4
    if flags & 0x2: at += 4
    if flags & 0x200: at += 4
    block = z[at:at + src]
    assert struct.unpack('>I', z[at + src:at + src + 4]) == (0,)
    return block

rng = np.random.default_rng(9)
out = []
with h5py.File(path, 'w') as f:
    for level in [1, 3, 9]:
        for dt in ['u1', '<u2', '<f4', '<f8']:
            for shape, chunks in [((10007,), (1000,)), ((70, 45), (33, 20)), ((3, 50, 61), (2, 20, 37))]:
                n = int(np.prod(shape))
                i = np.arange(n)
                # Steps with a little noise: compressible at every element size.
                a = ((i // 9) % 60 * 3 + (i % 17 == 0) * rng.integers(0, 5, n)).astype(dt)
                a[n // 3: n // 3 + n // 6] = 0
                a = a.reshape(shape)
                name = 'lzo_%d_%s_%d' % (level, dt.strip('<'), len(shape))
                dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
                dcpl.set_chunk(chunks)
                dcpl.set_filter(305, h5py.h5z.FLAG_OPTIONAL, (1, 23, 0))
                tid = h5py.h5t.py_create(np.dtype(dt))
                space = h5py.h5s.create_simple(shape)
                h5py.h5d.create(f.id, name.encode(), tid, space, dcpl=dcpl)
                d = f[name]
                grid = [range(0, s, c) for s, c in zip(shape, chunks)]
                for off in np.array(np.meshgrid(*grid, indexing='ij')).reshape(len(shape), -1).T:
                    block = np.zeros(chunks, dt)
                    part = a[tuple(slice(o, o + c) for o, c in zip(off, chunks))]
                    block[tuple(slice(0, s) for s in part.shape)] = part
                    raw = block.tobytes()
                    frame = lzo1x(raw, level)
                    if level == 9:
                        frame += struct.pack('<II', zlib.adler32(raw), len(raw))
                    d.id.write_direct_chunk(tuple(int(o) for o in off), frame, 0)
                with open('%s.%d' % (stem, len(out)), 'wb') as fh:
                    fh.write(a.astype(a.dtype.newbyteorder('<')).tobytes())
                out.append(name)
print(json.dumps(out))
"#;

#[test]
fn lzo_reads_liblzo2_streams_of_every_element_size() {
    let Some(python) = interop::python("lzo_reads_liblzo2_streams_of_every_element_size") else {
        return;
    };
    assert!(
        std::process::Command::new("lzop")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "lzop not found: install Debian's lzop (.ci/run does), the LZO reference encoder"
    );
    let path = tmp("codec_filters_lzo.h5");
    let stem = tmp("codec_filters_lzo.values");
    let names = interop::run_python(
        &python,
        WRITE_LZO,
        &[path.to_str().unwrap(), stem.to_str().unwrap()],
    );
    let names: Vec<String> = serde_json::from_str(names.trim()).unwrap();
    assert_eq!(names.len(), 3 * 4 * 3);
    let f = File::open(&path).unwrap();
    for (i, name) in names.iter().enumerate() {
        let want = std::fs::read(format!("{}.{i}", stem.display())).unwrap();
        let d = f.dataset(name).unwrap();
        assert!(d.read_raw().unwrap() == want, "{name}: values differ");
        assert_eq!(d.filters().unwrap()[0].to_string(), "lzo");
        let _ = std::fs::remove_file(format!("{}.{i}", stem.display()));
    }
    drop(f);
    let _ = std::fs::remove_file(&path);
}

/// PyTables' own LZO files (its wheel's test folder, which h5py cannot read, nor the PyPI
/// PyTables, built without LZO): every table reads, its 100 rows as PyTables' test expects, and
/// the same table written with LZO 1 and 2, with and without shuffle, reads equal.
#[test]
fn pytables_lzo_files_read_the_rows_pytables_expects() {
    let Some(python) = interop::python("pytables_lzo_files_read_the_rows_pytables_expects") else {
        return;
    };
    let dir = pytables_corpus(&python);
    let read = |file: &str| -> Vec<Vec<u8>> {
        let f = File::open(dir.join(file)).unwrap();
        ["/tuple0", "/group0/tuple1", "/group0/group1/tuple2"]
            .iter()
            .map(|p| {
                let d = f.dataset(p).unwrap();
                assert!(
                    d.filters().unwrap().iter().any(|x| x.to_string() == "lzo"),
                    "{file}{p}"
                );
                d.read_raw().unwrap()
            })
            .collect()
    };
    let lzo1 = read("Tables_lzo1.h5");
    // Rows (var3 f8, var2 i4, var1 S4): 100 - i, i, four spaces.
    for t in &lzo1 {
        assert_eq!(t.len(), 100 * 16);
        for (i, r) in t.chunks(16).enumerate() {
            assert_eq!(
                f64::from_le_bytes(r[..8].try_into().unwrap()),
                100.0 - i as f64
            );
            assert_eq!(i32::from_le_bytes(r[8..12].try_into().unwrap()), i as i32);
            assert_eq!(&r[12..], b"    ");
        }
    }
    for other in [
        "Tables_lzo1_shuffle.h5",
        "Tables_lzo2.h5",
        "Tables_lzo2_shuffle.h5",
    ] {
        assert!(read(other) == lzo1, "{other} differs from Tables_lzo1.h5");
    }
    // PyTables 0.8's rows (var1 S4, var2 i4, var3 f8): four spaces, a number, 100 - i.
    for t in read("Table2_1_lzo_nrv2e_shuffle.h5") {
        assert_eq!(t.len(), 100 * 16);
        for (i, r) in t.chunks(16).enumerate() {
            assert_eq!(&r[..4], b"    ");
            assert_eq!(
                f64::from_le_bytes(r[8..].try_into().unwrap()),
                100.0 - i as f64
            );
        }
    }
}

/// The LZO files of the PyTables wheel's test folder, fetched as `files_people_hold.rs` fetches
/// the whole folder (into a folder of their own: the two tests may run at once).
fn pytables_corpus(python: &std::path::Path) -> std::path::PathBuf {
    const FETCH: &str = r#"
import sys, os, glob, zipfile, subprocess
pin, wheel_dir, out = sys.argv[1:4]
if not glob.glob(os.path.join(out, '*.h5')):
    version = pin.split('==')[1]
    wheels = glob.glob(os.path.join(wheel_dir, 'tables-%s-*.whl' % version))
    if not wheels:
        subprocess.check_call([sys.executable, '-m', 'pip', 'download', '--quiet', '--no-deps',
                               '--only-binary=:all:', '--dest', wheel_dir, pin])
        wheels = glob.glob(os.path.join(wheel_dir, 'tables-%s-*.whl' % version))
    os.makedirs(out, exist_ok=True)
    with zipfile.ZipFile(sorted(wheels)[0]) as z:
        for n in z.namelist():
            if n.startswith('tables/tests/') and n.endswith('.h5') and 'lzo' in n:
                with open(os.path.join(out, os.path.basename(n)), 'wb') as fh:
                    fh.write(z.read(n))
"#;
    let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    let out = target.join("fixtures").join("pytables-lzo");
    interop::run_python(
        python,
        FETCH,
        &[
            "tables==3.11.1",
            &target.join("pytables-wheel").to_string_lossy(),
            &out.to_string_lossy(),
        ],
    );
    out
}

/// Decodes the LZO chunks of h5chunk's file with liblzo2 (`lzop -d` over each stored chunk in an
/// lzop container) and checks the values, C order, against `<stem>.<i>`; chunks stored
/// unfiltered (mask bit set) are taken as they are. Prints [differing names, chunks decoded by
/// liblzo2, chunks left unfiltered].
const CHECK_LZO: &str = r#"
import sys, json, struct, subprocess, zlib, h5py, numpy as np
path, stem, names = sys.argv[1], sys.argv[2], sys.argv[3:]

def lzop_file(stream, n):
    # Version 1.04, library 2.10, needs 0.94; method LZO1X-1, level 5; Unix, no checksums of
    # the data; mode, mtime, no name; the header's Adler-32; one block; the end.
    h = struct.pack('>HHHBBIIII', 0x1040, 0x20a0, 0x0940, 1, 5, 0x03000000, 0o100644, 0, 0) + b'\x00'
    return (b'\x89LZO\x00\r\n\x1a\n' + h + struct.pack('>I', zlib.adler32(h))
            + struct.pack('>II', n, len(stream)) + stream + b'\x00\x00\x00\x00')

bad, decoded, raw_chunks = [], 0, 0
with h5py.File(path, 'r') as f:
    for i, name in enumerate(names):
        d = f[name]
        assert list(d._filters) == ['305'], d._filters
        want = np.fromfile('%s.%d' % (stem, i), dtype=d.dtype.newbyteorder('<')).reshape(d.shape)
        got = np.zeros(d.shape, d.dtype)
        nbytes = int(np.prod(d.chunks)) * d.dtype.itemsize
        for k in range(d.id.get_num_chunks()):
            off = d.id.get_chunk_info(k).chunk_offset
            mask, stored = d.id.read_direct_chunk(off)
            if mask & 1:
                raw_chunks += 1
                block = stored
            else:
                decoded += 1
                block = subprocess.run(['lzop', '-d', '-c'], input=lzop_file(stored, nbytes),
                                       check=True, stdout=subprocess.PIPE).stdout
            a = np.frombuffer(block, d.dtype).reshape(d.chunks)
            sl = tuple(slice(o, min(o + c, s)) for o, c, s in zip(off, d.chunks, d.shape))
            got[sl] = a[tuple(slice(0, x.stop - x.start) for x in sl)]
        if got.tobytes() != want.tobytes():
            bad.append(name)
print(json.dumps([bad, decoded, raw_chunks]))
"#;

/// h5chunk writes LZO (PyTables' filter 305) for element sizes 1, 2, 4 and 8 and chunk shapes
/// with partial edge chunks in one, two and three dimensions; liblzo2 (Debian's `lzop`, the
/// reference decoder: neither h5py nor hdf5plugin nor h5dump has an LZO filter) decodes every
/// stored chunk to the values written, and chunks of noise are left unfiltered (PyTables' filter
/// fails where LZO does not shrink a chunk).
#[test]
fn lzo_h5chunk_writes_decode_in_liblzo2() {
    let Some(python) = interop::python("lzo_h5chunk_writes_decode_in_liblzo2") else {
        return;
    };
    assert!(
        std::process::Command::new("lzop")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "lzop not found: install Debian's lzop (.ci/run does), the LZO reference decoder"
    );
    let path = tmp("codec_filters_lzo_h5chunk.h5");
    let stem = tmp("codec_filters_lzo_h5chunk.values");
    let f = File::create(&path).unwrap();
    let root = f.group("/").unwrap();
    let mut names = Vec::new();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for size in [1usize, 2, 4, 8] {
        for (shape, chunk) in [
            (vec![10007u64], vec![1000u64]),
            (vec![70, 45], vec![33, 20]),
            (vec![3, 50, 61], vec![2, 20, 37]),
        ] {
            let n: u64 = shape.iter().product();
            let n = n as usize;
            // Steps with a little noise, a run of zeros, and a last stretch of noise.
            let mut bytes = Vec::with_capacity(n * size);
            for i in 0..n {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let v = if i >= n - n / 5 {
                    state
                } else if (n / 3..n / 2).contains(&i) {
                    0
                } else {
                    (i as u64 / 9) % 60 * 3 + u64::from(i % 17 == 0) * (state % 5)
                };
                bytes.extend_from_slice(&v.to_le_bytes()[..size]);
            }
            let name = format!("lzo_{size}_{}", shape.len());
            let b = match size {
                1 => root.new_dataset::<u8>(),
                2 => root.new_dataset::<u16>(),
                4 => root.new_dataset::<u32>(),
                _ => root.new_dataset::<u64>(),
            };
            let d = b
                .shape(&shape)
                .chunk(&chunk)
                .filter(FilterSpec::Lzo)
                .create(&name)
                .unwrap();
            d.write_raw(&bytes).unwrap();
            assert_eq!(d.read_raw().unwrap(), bytes, "{name}: h5chunk reads back");
            std::fs::write(format!("{}.{}", stem.display(), names.len()), &bytes).unwrap();
            names.push(name);
        }
    }
    drop(root);
    f.close().unwrap();
    let mut args = vec![path.to_str().unwrap(), stem.to_str().unwrap()];
    args.extend(names.iter().map(String::as_str));
    let report = interop::run_python(&python, CHECK_LZO, &args);
    let (bad, decoded, raw): (Vec<String>, usize, usize) =
        serde_json::from_str(report.trim()).unwrap();
    assert!(bad.is_empty(), "liblzo2 decodes other values: {bad:?}");
    assert!(
        decoded > 100 && raw > 0,
        "{decoded} chunks decoded, {raw} raw"
    );
    for i in 0..names.len() {
        let _ = std::fs::remove_file(format!("{}.{i}", stem.display()));
    }
    let _ = std::fs::remove_file(&path);
}

/// For each dataset of h5chunk's file: its values as h5py reads them (C order, little-endian,
/// into `<stem>.<i>`), and whether its szip client data equal those libhdf5 makes for the same
/// type, chunk shape and options. Prints the names whose client data differ.
const CHECK_SZIP: &str = r#"
import sys, json, h5py, numpy as np
path, stem, names = sys.argv[1], sys.argv[2], sys.argv[3:]
bad = []
with h5py.File(path, 'r') as f, h5py.File('mem', 'w', driver='core', backing_store=False) as m:
    for i, name in enumerate(names):
        d = f[name]
        a = d[()]
        with open('%s.%d' % (stem, i), 'wb') as out:
            out.write(a.astype(a.dtype.newbyteorder('<')).tobytes())
        ours = d.id.get_create_plist().get_filter(0)
        method, ppb = name.split('_')[1], int(name.split('_')[2])
        r = m.create_dataset(name, shape=d.shape, dtype=d.dtype, chunks=d.chunks,
                             compression='szip', compression_opts=(method, ppb))
        theirs = r.id.get_create_plist().get_filter(0)
        if ours[:3] != theirs[:3]:
            bad.append('%s: %s, libhdf5 %s' % (name, ours, theirs))
print(json.dumps(bad))
"#;

/// h5chunk writes szip with both coding methods, pixels per block 8, 16 and 32, element sizes
/// 1, 2, 4 and 8 in both byte orders, and chunk shapes with partial edge chunks (scanlines that
/// are and are not a whole number of blocks); h5py reads every dataset equal, `h5dump` (libhdf5
/// 1.10 over libaec) dumps the same values, the client data are those libhdf5 makes, and chunks
/// of noise are left unfiltered.
#[test]
fn szip_h5chunk_writes_read_in_h5py_and_h5dump() {
    let test = "szip_h5chunk_writes_read_in_h5py_and_h5dump";
    let Some(python) = interop::python(test) else {
        return;
    };
    let h5dump = interop::h5dump(test);
    let path = tmp("codec_filters_szip_h5chunk.h5");
    let stem = tmp("codec_filters_szip_h5chunk.values");
    let f = File::create(&path).unwrap();
    let root = f.group("/").unwrap();
    let mut names = Vec::new();
    let mut values = Vec::new();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut masked = 0usize;
    for nn in [true, false] {
        for ppb in [8u32, 16, 32] {
            for (ty, size) in [
                ("u1", 1usize),
                ("u2le", 2),
                ("u2be", 2),
                ("i4le", 4),
                ("f4be", 4),
                ("u8le", 8),
                ("f8be", 8),
            ] {
                for (shape_no, (shape, chunk)) in [
                    (vec![10007u64], vec![1000u64]),
                    (vec![70, 45], vec![33, 45]),
                    (vec![3, 50, 61], vec![2, 20, 37]),
                    (vec![100, 5], vec![50, 5]),
                ]
                .into_iter()
                .enumerate()
                {
                    let n = shape.iter().product::<u64>() as usize;
                    let mut bytes = Vec::with_capacity(n * size);
                    for i in 0..n {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        // Smooth values with a little noise, zeros, then noise.
                        let v = if i >= n - n / 6 {
                            state
                        } else if (n / 3..n / 2).contains(&i) {
                            0
                        } else {
                            ((i as f64 / 40.0).sin() * 100.0 + 200.0) as u64 + state % 3
                        };
                        let v = match ty {
                            "f4be" => u64::from((v as f32).to_bits()),
                            "f8be" => (v as f64).to_bits(),
                            _ => v,
                        };
                        bytes.extend_from_slice(&v.to_le_bytes()[..size]);
                    }
                    let name = format!(
                        "szip_{}_{ppb}_{ty}_{shape_no}",
                        if nn { "nn" } else { "ec" },
                    );
                    let b = match ty {
                        "u1" => root.new_dataset::<u8>(),
                        "u2le" => root.new_dataset::<u16>(),
                        "u2be" => root.new_dataset_of(h5chunk::TypeDesc {
                            order: h5chunk::types::ByteOrder::BigEndian,
                            ..<u16 as h5chunk::H5Type>::DESC
                        }),
                        "i4le" => root.new_dataset::<i32>(),
                        "f4be" => root.new_dataset_of(h5chunk::TypeDesc {
                            order: h5chunk::types::ByteOrder::BigEndian,
                            ..<f32 as h5chunk::H5Type>::DESC
                        }),
                        "u8le" => root.new_dataset::<u64>(),
                        _ => root.new_dataset_of(h5chunk::TypeDesc {
                            order: h5chunk::types::ByteOrder::BigEndian,
                            ..<f64 as h5chunk::H5Type>::DESC
                        }),
                    };
                    let d = b
                        .shape(&shape)
                        .chunk(&chunk)
                        .filter(FilterSpec::Szip {
                            nn,
                            pixels_per_block: ppb,
                        })
                        .create(&name)
                        .unwrap();
                    d.write_raw(&bytes).unwrap();
                    assert_eq!(d.read_raw().unwrap(), bytes, "{name}: h5chunk reads back");
                    for c in d.chunks().unwrap() {
                        let (_, mask) = d.read_direct_chunk(&c.offset).unwrap().unwrap();
                        masked += usize::from(mask != 0);
                    }
                    names.push(name);
                    values.push(bytes);
                }
            }
        }
    }
    drop(root);
    f.close().unwrap();
    assert!(masked > 0, "no chunk left unfiltered");
    let mut args = vec![path.to_str().unwrap(), stem.to_str().unwrap()];
    args.extend(names.iter().map(String::as_str));
    let report = interop::run_python(&python, CHECK_SZIP, &args);
    let bad: Vec<String> = serde_json::from_str(report.trim()).unwrap();
    assert!(bad.is_empty(), "client data differ: {bad:#?}");
    for (i, (name, v)) in names.iter().zip(&values).enumerate() {
        let got = std::fs::read(format!("{}.{i}", stem.display())).unwrap();
        assert!(got == *v, "{name}: h5py reads other values");
        let _ = std::fs::remove_file(format!("{}.{i}", stem.display()));
    }
    if let Some(h5dump) = h5dump {
        for (name, v) in names.iter().zip(&values) {
            let out = tmp(&format!("h5dump_{name}.bin"));
            let run = std::process::Command::new(&h5dump)
                .args(["-d", &format!("/{name}"), "-b", "LE", "-o"])
                .arg(&out)
                .arg(&path)
                .output()
                .unwrap();
            assert!(
                run.status.success(),
                "h5dump -d {name}: {}",
                String::from_utf8_lossy(&run.stderr)
            );
            assert!(
                std::fs::read(&out).unwrap() == *v,
                "{name}: h5dump's values differ"
            );
            let _ = std::fs::remove_file(&out);
        }
    }
    let _ = std::fs::remove_file(&path);
}
