//! The chunk index h5chunk picks for a new dataset is the one libhdf5 picks: a table of cases
//! (rank, current and maximum dims, chunk dims, filters, allocation time, library version
//! bounds) is created with h5py, and libhdf5's `H5Dget_chunk_index_type` and layout version are
//! compared with [`h5chunk::index::choose`].

use h5chunk::index::{AllocTime, IndexRequest, choose};
use h5chunk::libver::{Libver, LibverBounds};
use h5chunk_testkit::interop;

struct Case {
    low: Libver,
    dims: &'static [u64],
    max: &'static [Option<u64>],
    chunk: &'static [u64],
    gzip: bool,
    alloc: AllocTime,
}

const fn case(
    low: Libver,
    dims: &'static [u64],
    max: &'static [Option<u64>],
    chunk: &'static [u64],
    gzip: bool,
    alloc: AllocTime,
) -> Case {
    Case {
        low,
        dims,
        max,
        chunk,
        gzip,
        alloc,
    }
}

use AllocTime::{Early, Incremental, Late};
use Libver::{Earliest, Latest, V18, V110, V114, V200};

const CASES: &[Case] = &[
    case(Earliest, &[10], &[None], &[4], false, Incremental),
    case(
        Earliest,
        &[10, 10],
        &[Some(10), Some(10)],
        &[10, 10],
        false,
        Early,
    ),
    case(V18, &[10, 10], &[None, None], &[3, 3], true, Incremental),
    case(V110, &[10], &[None], &[4], false, Incremental),
    case(V110, &[10], &[None], &[4], true, Incremental),
    case(
        V110,
        &[3, 10],
        &[Some(3), None],
        &[2, 3],
        false,
        Incremental,
    ),
    case(V110, &[10, 10], &[None, None], &[3, 3], false, Incremental),
    case(
        V110,
        &[5, 5, 5],
        &[None, None, None],
        &[2, 2, 2],
        true,
        Late,
    ),
    case(
        V110,
        &[10, 10],
        &[Some(10), Some(10)],
        &[10, 10],
        false,
        Incremental,
    ),
    case(
        V110,
        &[10, 10],
        &[Some(10), Some(10)],
        &[10, 10],
        true,
        Incremental,
    ),
    case(
        V110,
        &[10, 10],
        &[Some(10), Some(10)],
        &[4, 4],
        false,
        Early,
    ),
    case(V110, &[10, 10], &[Some(10), Some(10)], &[4, 4], true, Early),
    case(V110, &[10, 10], &[Some(10), Some(10)], &[4, 4], false, Late),
    case(V110, &[10], &[Some(100)], &[4], false, Incremental),
    case(
        V114,
        &[10, 10],
        &[Some(10), Some(10)],
        &[4, 4],
        false,
        Incremental,
    ),
    case(V200, &[10], &[None], &[4], true, Incremental),
    case(Latest, &[10], &[None], &[4], false, Incremental),
    case(Latest, &[10], &[None], &[4], true, Incremental),
    case(Latest, &[10, 10], &[None, None], &[4, 4], true, Incremental),
    case(
        Latest,
        &[10, 10],
        &[Some(10), Some(10)],
        &[4, 4],
        true,
        Incremental,
    ),
    case(Latest, &[8], &[Some(8)], &[8], true, Incremental),
    case(Latest, &[8], &[Some(8)], &[8], false, Early),
];

const SCRIPT: &str = r#"
import sys, os, json, ctypes, h5py
def loaded_libhdf5():
    for line in open('/proc/self/maps'):
        p = line.split()[-1]
        b = os.path.basename(p)
        if b.startswith('libhdf5') and not b.startswith('libhdf5_hl') and '.so' in b:
            return p
lib = ctypes.CDLL(loaded_libhdf5())
NAMES = {0: 'btree1', 1: 'single', 2: 'implicit', 3: 'farray', 4: 'earray', 5: 'btree2'}
ALLOC = {'early': h5py.h5d.ALLOC_TIME_EARLY, 'late': h5py.h5d.ALLOC_TIME_LATE, 'incr': h5py.h5d.ALLOC_TIME_INCR}
out = []
for i, c in enumerate(json.loads(sys.argv[2])):
    path = os.path.join(sys.argv[1], 'case%d.h5' % i)
    with h5py.File(path, 'w', libver=(c['low'], 'latest')) as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_alloc_time(ALLOC[c['alloc']])
        maxshape = tuple(None if m is None else m for m in c['max'])
        d = f.create_dataset('d', shape=tuple(c['dims']), maxshape=maxshape, chunks=tuple(c['chunk']),
                             dtype='<i4', compression='gzip' if c['gzip'] else None, dcpl=dcpl)
        kind = ctypes.c_int(-1)
        assert lib.H5Dget_chunk_index_type(ctypes.c_int64(d.id.id), ctypes.byref(kind)) >= 0
        version = ctypes.c_uint(0)
        assert lib.H5D__layout_version_test(ctypes.c_int64(d.id.id), ctypes.byref(version)) >= 0
        out.append([NAMES[kind.value], version.value])
print(json.dumps(out))
"#;

#[test]
fn index_choice_matches_libhdf5() {
    let ours: Vec<(String, u8)> = CASES
        .iter()
        .map(|c| {
            let s = choose(&IndexRequest {
                dims: c.dims,
                max_dims: c.max,
                chunk: c.chunk,
                filtered: c.gzip,
                alloc_time: c.alloc,
                dont_filter_partial_chunks: false,
                bounds: LibverBounds::new(c.low, Latest).unwrap(),
                force: None,
            })
            .unwrap();
            (s.kind.name().to_owned(), s.layout_version)
        })
        .collect();
    // Every index kind libhdf5 chooses appears in the table.
    for kind in ["btree1", "single", "implicit", "farray", "earray", "btree2"] {
        assert!(ours.iter().any(|(k, _)| k == kind), "table lacks {kind}");
    }
    let Some(python) = interop::python("index_choice_matches_libhdf5") else {
        return;
    };
    let cases: Vec<serde_json::Value> = CASES
        .iter()
        .map(|c| {
            serde_json::json!({
                "low": c.low.h5py_name(),
                "dims": c.dims,
                "max": c.max,
                "chunk": c.chunk,
                "gzip": c.gzip,
                "alloc": match c.alloc { Early => "early", Late => "late", Incremental => "incr" },
            })
        })
        .collect();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("index_selection");
    std::fs::create_dir_all(&dir).unwrap();
    let out = interop::run_python(
        &python,
        SCRIPT,
        &[
            &dir.to_string_lossy(),
            &serde_json::Value::Array(cases).to_string(),
        ],
    );
    let theirs: Vec<(String, u8)> = serde_json::from_str(out.trim()).unwrap();
    for (i, (o, t)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(o, t, "case {i}: ours {o:?}, libhdf5 {t:?}");
    }
    assert_eq!(ours.len(), theirs.len());
}
