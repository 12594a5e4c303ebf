//! What libhdf5 (through h5py) says about a file: chunk records and values.

use std::path::Path;

use crate::interop::run_python;

/// One allocated chunk as libhdf5 reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkInfo {
    /// The chunk's element offsets (scaled coordinates times the chunk dims).
    pub offset: Vec<u64>,
    /// The chunk's file address.
    pub addr: Option<u64>,
    /// Stored size in bytes.
    pub size: u64,
    /// Filter mask.
    pub mask: u32,
}

const CHUNKS: &str = r#"
import sys, json, h5py
UNDEF = 2**64 - 1
with h5py.File(sys.argv[1], 'r') as f:
    d = f[sys.argv[2]]
    out = []
    def visit(c):
        a = c.byte_offset
        out.append([list(c.chunk_offset), None if a is None or a == UNDEF else a, c.size, c.filter_mask])
    if d.chunks is None:
        pass
    elif hasattr(d.id, 'chunk_iter'):
        d.id.chunk_iter(visit)
    else:
        for i in range(d.id.get_num_chunks()):
            visit(d.id.get_chunk_info(i))
    print(json.dumps(out))
"#;

/// Every allocated chunk of `dataset` in `path`, in libhdf5's iteration order.
pub fn chunks(python: &Path, path: &Path, dataset: &str) -> Vec<ChunkInfo> {
    let out = run_python(python, CHUNKS, &[&path.to_string_lossy(), dataset]);
    let v: serde_json::Value =
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("chunk list: {e}: {out}"));
    v.as_array()
        .unwrap_or_else(|| panic!("chunk list: {out}"))
        .iter()
        .map(|c| ChunkInfo {
            offset: c[0]
                .as_array()
                .map(|o| o.iter().filter_map(|x| x.as_u64()).collect())
                .unwrap_or_default(),
            addr: c[1].as_u64(),
            size: c[2].as_u64().unwrap_or(0),
            mask: c[3].as_u64().unwrap_or(0) as u32,
        })
        .collect()
}

const VALUES: &str = r#"
import sys, h5py
with h5py.File(sys.argv[1], 'r') as f:
    a = f[sys.argv[2]][()]
    with open(sys.argv[3], 'wb') as out:
        out.write(a.astype(a.dtype.newbyteorder('<')).tobytes())
"#;

/// The C-order little-endian bytes of the whole of `dataset` in `path`, as h5py reads them.
pub fn values_le(python: &Path, path: &Path, dataset: &str) -> Vec<u8> {
    let tmp = path.with_extension(format!("values-{}.bin", std::process::id()));
    run_python(
        python,
        VALUES,
        &[&path.to_string_lossy(), dataset, &tmp.to_string_lossy()],
    );
    let bytes = std::fs::read(&tmp).unwrap_or_else(|e| panic!("{}: {e}", tmp.display()));
    let _ = std::fs::remove_file(&tmp);
    bytes
}

const VALUES_MANY: &str = r#"
import sys, h5py
with h5py.File(sys.argv[1], 'r') as f:
    for i, name in enumerate(sys.argv[3:]):
        a = f[name][()]
        with open('%s.%d' % (sys.argv[2], i), 'wb') as out:
            out.write(a.astype(a.dtype.newbyteorder('<')).tobytes())
"#;

/// [`values_le`] for several datasets of one file, in one Python process.
pub fn values_le_many(python: &Path, path: &Path, datasets: &[&str]) -> Vec<Vec<u8>> {
    let stem = path.with_extension(format!("values-{}", std::process::id()));
    let stem_s = stem.to_string_lossy().into_owned();
    let path_s = path.to_string_lossy().into_owned();
    let mut args: Vec<&str> = vec![&path_s, &stem_s];
    args.extend_from_slice(datasets);
    run_python(python, VALUES_MANY, &args);
    (0..datasets.len())
        .map(|i| {
            let p = format!("{stem_s}.{i}");
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
            let _ = std::fs::remove_file(&p);
            bytes
        })
        .collect()
}
