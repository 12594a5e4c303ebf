//! kerchunk references (`h5chunk_refs::references`): what they say of a file h5chunk writes, checked
//! against the file's own bytes; and, with real readers, every dataset of every
//! libhdf5-written fixture read through fsspec's reference file system and zarr (and by a
//! `dask.distributed` LocalCluster of two worker processes) equal to h5py's values.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::path::{Path, PathBuf};

use h5chunk::{File, FilterSpec, IndexKind};
use h5chunk_refs::{Error, RefValue, RefsOptions, references};
use h5chunk_testkit::{fixtures, interop};
use serde_json::Value;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("h5chunk-refs-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Write `script` to `path` and run it with `args` (too many for `python -c`); its stdout,
/// a failed test with its stderr when it fails.
fn run_script(
    python: &Path,
    path: &Path,
    script: &str,
    args: &[impl AsRef<std::ffi::OsStr>],
) -> String {
    std::fs::write(path, script).unwrap();
    let out = std::process::Command::new(python)
        .arg(path)
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn range(v: &RefValue) -> (u64, u64) {
    match v {
        RefValue::Range { offset, size } => (*offset, *size),
        other => panic!("not a byte range: {other:?}"),
    }
}

fn text(v: &RefValue) -> Value {
    match v {
        RefValue::Text(t) => serde_json::from_str(t).unwrap(),
        other => panic!("not text: {other:?}"),
    }
}

#[test]
fn references_name_the_chunks_bytes_and_describe_the_arrays() {
    let dir = temp_dir("own");
    let path = dir.join("own.h5");
    let file = File::create(&path).unwrap();
    let grp = file.create_group("grp").unwrap();
    let zipped = grp
        .new_dataset::<i32>()
        .shape(&[10, 7])
        .chunk(&[4, 3])
        .fill_value(-1)
        .filter(FilterSpec::Shuffle)
        .filter(FilterSpec::Deflate(5))
        .filter(FilterSpec::Fletcher32)
        .create("zipped")
        .unwrap();
    // Chunks (0, 0) and (2, 1) only: the rest stay unallocated.
    zipped
        .write_slice(&(0..12).collect::<Vec<i32>>(), &[0, 0], &[4, 3], None)
        .unwrap();
    zipped.write_slice(&[7; 6], &[8, 3], &[2, 3], None).unwrap();
    zipped.attrs().set_str("units", "K").unwrap();
    zipped.attrs().set("scale", &[0.5f64, 2.0]).unwrap();
    // h5chunk's own index: references need only the chunks' places, whatever finds them.
    let log = file
        .new_dataset::<f64>()
        .shape(&[0])
        .max_shape(&[None])
        .chunk(&[2])
        .index(IndexKind::SkipList)
        .create("log")
        .unwrap();
    log.append(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
    file.close().unwrap();

    let file = File::open(&path).unwrap();
    let refs = references(&file, "x.h5", &RefsOptions::default()).unwrap();
    assert!(refs.skipped.is_empty());
    let e = &refs.entries();
    assert_eq!(text(&e[".zgroup"])["zarr_format"], 2);
    assert_eq!(text(&e["grp/.zgroup"])["zarr_format"], 2);
    let z = text(&e["grp/zipped/.zarray"]);
    assert_eq!(z["shape"], serde_json::json!([10, 7]));
    assert_eq!(z["chunks"], serde_json::json!([4, 3]));
    assert_eq!(z["dtype"], "<i4");
    assert_eq!(z["fill_value"], -1);
    assert_eq!(z["compressor"], Value::Null);
    assert_eq!(
        z["filters"],
        serde_json::json!([
            {"id": "shuffle", "elementsize": 4},
            {"id": "zlib", "level": 5},
            {"id": "fletcher32"}
        ])
    );
    let attrs = text(&e["grp/zipped/.zattrs"]);
    assert_eq!(attrs["units"], "K");
    assert_eq!(attrs["scale"], serde_json::json!([0.5, 2.0]));
    assert_eq!(attrs["_ARRAY_DIMENSIONS"].as_array().unwrap().len(), 2);
    // Exactly the allocated chunks, each the bytes read_direct_chunk returns.
    let d = file.dataset("grp/zipped").unwrap();
    let keys: Vec<&str> = e
        .keys()
        .filter(|k| k.starts_with("grp/zipped/") && !k.contains("/."))
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["grp/zipped/0.0", "grp/zipped/2.1"]);
    let bytes = std::fs::read(&path).unwrap();
    for (k, offset) in [("grp/zipped/0.0", [0, 0]), ("grp/zipped/2.1", [8, 3])] {
        let (at, size) = range(&e[k]);
        let (stored, mask) = d.read_direct_chunk(&offset).unwrap().unwrap();
        assert_eq!(mask, 0);
        assert_eq!(&bytes[at as usize..(at + size) as usize], &stored[..]);
    }
    // The skip list's chunks, unfiltered: whole chunks of little-endian values.
    let l = text(&e["log/.zarray"]);
    assert_eq!(
        (l["shape"].clone(), l["chunks"].clone()),
        (serde_json::json!([5]), serde_json::json!([2]))
    );
    assert_eq!(l["filters"], Value::Null);
    let mut values = Vec::new();
    for k in ["log/0", "log/1", "log/2"] {
        let (at, size) = range(&e[k]);
        assert_eq!(size, 16);
        values.extend(
            bytes[at as usize..(at + size) as usize]
                .chunks(8)
                .map(|b| f64::from_le_bytes(b.try_into().unwrap())),
        );
    }
    assert_eq!(values[..5], [1.0, 2.0, 3.0, 4.0, 5.0]);
    // The JSON is kerchunk's version 1, byte ranges naming the URL given.
    let json: Value = serde_json::from_str(&refs.to_json()).unwrap();
    assert_eq!(json["version"], 1);
    assert_eq!(json["refs"]["grp/zipped/2.1"][0], "x.h5");
    assert_eq!(
        json["refs"]["grp/zipped/.zarray"]
            .as_str()
            .map(|s| serde_json::from_str::<Value>(s).unwrap()),
        Some(z)
    );
    // One dataset by name: it and the groups on its way.
    let one = references(
        &file,
        "x.h5",
        &RefsOptions {
            datasets: vec!["grp/zipped".into()],
            ..RefsOptions::default()
        },
    )
    .unwrap();
    let all = one.entries();
    assert!(all.contains_key("grp/.zgroup"));
    assert!(all.contains_key("grp/zipped/2.1"));
    assert!(!all.keys().any(|k| k.starts_with("log")));
    drop(file);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_filter_zarr_cannot_read_is_refused_naming_the_dataset() {
    let dir = temp_dir("lzf");
    let path = dir.join("lzf.h5");
    let file = File::create(&path).unwrap();
    let d = file
        .new_dataset::<u16>()
        .shape(&[8])
        .chunk(&[4])
        .filter(FilterSpec::Lzf)
        .create("packed")
        .unwrap();
    d.write(&[1u16; 8]).unwrap();
    file.new_dataset::<u8>()
        .shape(&[3])
        .chunk(&[3])
        .create("plain")
        .unwrap();
    file.close().unwrap();
    let file = File::open(&path).unwrap();
    match references(&file, "lzf.h5", &RefsOptions::default()) {
        Err(Error::NoZarrEquivalent { dataset, what }) => {
            assert_eq!(dataset, "/packed");
            assert!(what.contains("lzf"), "{what}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let skipping = RefsOptions {
        skip_unsupported: true,
        ..RefsOptions::default()
    };
    let refs = references(&file, "lzf.h5", &skipping).unwrap();
    assert_eq!(refs.skipped.len(), 1);
    assert_eq!(refs.skipped[0].0, "/packed");
    let all = refs.entries();
    assert!(!all.keys().any(|k| k.starts_with("packed")));
    assert!(all.contains_key("plain/.zarray"));
    drop(file);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// References describe numbers stored in the file itself, so far: a string dataset and a
/// dataset whose bytes are in external files are refused by name.
#[test]
fn strings_and_external_storage_are_refused_by_name() {
    let dir = temp_dir("refused");
    let path = dir.join("refused.h5");
    let file = File::create(&path).unwrap();
    let names = file
        .new_dataset_with_type(h5chunk::types::vlen_utf8())
        .shape(&[2])
        .chunk(&[2])
        .create("names")
        .unwrap();
    names.write_strings(&["a", "bc"]).unwrap();
    let part = dir.join("part.bin").display().to_string();
    let outside = file
        .new_dataset::<f64>()
        .shape(&[4])
        .external(&[(&part, 0, None)])
        .create("outside")
        .unwrap();
    outside.write(&[1.0f64, 2.0, 3.0, 4.0]).unwrap();
    drop((names, outside));
    file.close().unwrap();
    let file = File::open(&path).unwrap();
    for (name, why) in [("names", "element type"), ("outside", "external storage")] {
        let one = RefsOptions {
            datasets: vec![name.into()],
            ..RefsOptions::default()
        };
        match references(&file, "refused.h5", &one) {
            Err(Error::NoZarrEquivalent { dataset, what }) => {
                assert_eq!(dataset, format!("/{name}"));
                assert!(what.contains(why), "{what}");
            }
            other => panic!("expected a refusal of {name}, got {other:?}"),
        }
    }
    drop(file);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A LocalCluster of two worker processes reads every array of each references file through
/// dask, zarr and fsspec's reference file system, in one graph, and each is compared with
/// h5py's values of the same dataset. Arguments: pairs of (HDF5 file, references JSON).
const CHECK: &str = r#"
import json, sys
import numpy as np, h5py, zarr, fsspec
import dask, dask.array as da
from dask.distributed import Client, LocalCluster

def arrays(refpath):
    refs = json.load(open(refpath))["refs"]
    return [k[: -len("/.zarray")] if "/" in k else "" for k in refs if k.endswith(".zarray")]

def same(got, want):
    return (got.dtype == want.dtype and got.shape == want.shape
            and np.array_equal(got, want, equal_nan=want.dtype.kind == "f"))

def main():
    pairs = list(zip(sys.argv[1::2], sys.argv[2::2]))
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    lazy, wanted = [], []
    for h5path, refpath in pairs:
        fs = fsspec.filesystem("reference", fo=refpath, remote_protocol="file")
        with h5py.File(h5path, "r") as h:
            for p in arrays(refpath):
                z = zarr.open_array(fs.get_mapper(p), mode="r", zarr_format=2)
                # Two tasks or so per array (first dimension halved), whole zarr chunks each.
                chunks = tuple(max(c, -(-s // 2)) if i == 0 else max(s, 1)
                               for i, (s, c) in enumerate(zip(z.shape, z.chunks)))
                lazy.append(da.from_zarr(z, chunks=chunks or "auto"))
                wanted.append((f"{h5path}:{p}", h[p][...]))
    # One graph for every array: the workers read them side by side.
    got = dask.compute(*lazy)
    for g, (name, want) in zip(got, wanted):
        if not same(g, want):
            raise SystemExit(f"{name}: dask read differs from h5py")
    done = len(got)
    workers = len(client.scheduler_info()["workers"])
    client.close()
    cluster.close()
    print("dask", done, "workers", workers)

if __name__ == "__main__":
    main()
"#;

#[test]
fn every_fixture_dataset_reads_through_its_references_as_h5py_reads_it() {
    let Some(python) = interop::python("every_fixture_dataset_reads_through_its_references") else {
        return;
    };
    let dir = temp_dir("fixtures");
    let manifest = fixtures::manifest();
    let mut args = Vec::new();
    let mut arrays = 0;
    let mut skipped = Vec::new();
    for entry in manifest["files"].as_array().unwrap() {
        let name = entry["file"].as_str().unwrap();
        let h5 = fixtures::dir().join(name);
        let h5 = std::path::absolute(&h5).unwrap();
        let file = File::open(&h5).unwrap();
        let refs = references(
            &file,
            h5.to_str().unwrap(),
            &RefsOptions {
                skip_unsupported: true,
                ..RefsOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        arrays += refs.meta.keys().filter(|k| k.ends_with(".zarray")).count();
        skipped.extend(
            refs.skipped
                .iter()
                .map(|(p, why)| format!("{name}:{p}: {why}")),
        );
        let out = dir.join(format!("{name}.json"));
        std::fs::write(&out, refs.to_json()).unwrap();
        args.push(h5.to_string_lossy().into_owned());
        args.push(out.to_string_lossy().into_owned());
    }
    // What is left out is what Zarr cannot say (LZF, unfiltered partial edge chunks, null
    // dataspaces), nothing else (dense groups and attributes included).
    for s in &skipped {
        assert!(
            s.contains("lzf") || s.contains("DONT_FILTER_PARTIAL") || s.contains("null dataspace"),
            "unexpected: {s}"
        );
    }
    assert!(arrays > 100, "{arrays} arrays");
    let stdout = run_script(&python, &dir.join("check_refs.py"), CHECK, &args);
    assert!(
        stdout.contains(&format!("dask {arrays} workers 2")),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Each argument triple (HDF5 file, references JSON, Parquet references directory): every
/// array read through the Parquet references (fsspec's `LazyReferenceMapper`, zarr) equals
/// h5py's values; and kerchunk's own `refs_to_dataframe` of the JSON gives the same
/// consolidated metadata and, key by key, the same references as h5chunk's Parquet layout.
#[cfg(feature = "parquet")]
const CHECK_PARQUET: &str = r#"
import json, sys, tempfile, warnings
import numpy as np, h5py, zarr, fsspec
import kerchunk.df
from fsspec.implementations.reference import LazyReferenceMapper

warnings.simplefilter("ignore")  # pandas' notice that its fastparquet engine is deprecated

def plain(v):
    return [x.item() if hasattr(x, "item") else x for x in v] if isinstance(v, list) else v

arrays = keys = 0
for h5path, refpath, parq in zip(sys.argv[1::3], sys.argv[2::3], sys.argv[3::3]):
    refs = json.load(open(refpath))["refs"]
    record_size = json.load(open(f"{parq}/.zmetadata"))["record_size"]
    theirs = tempfile.mkdtemp()
    kerchunk.df.refs_to_dataframe(refpath, theirs, record_size=record_size)
    ours_map = LazyReferenceMapper(parq, fs=fsspec.filesystem("file"))
    theirs_map = LazyReferenceMapper(theirs, fs=fsspec.filesystem("file"))
    if ours_map.zmetadata != {k: json.loads(v) for k, v in refs.items() if "/.z" in "/" + k}:
        raise SystemExit(f"{parq}: .zmetadata differs from the JSON references' metadata")
    if ours_map.zmetadata != theirs_map.zmetadata:
        raise SystemExit(f"{parq}: .zmetadata differs from kerchunk's")
    for k in refs:
        if "/.z" in "/" + k:
            continue
        a, b = plain(ours_map._load_one_key(k)), plain(theirs_map._load_one_key(k))
        if a != b:
            raise SystemExit(f"{parq}: {k}: {a!r}, kerchunk {b!r}")
        keys += 1
    fs = fsspec.filesystem("reference", fo=parq, remote_protocol="file")
    with h5py.File(h5path, "r") as h:
        for k in refs:
            if not k.endswith("/.zarray"):
                continue
            p = k[: -len("/.zarray")]
            got = zarr.open_array(fs.get_mapper(p), mode="r", zarr_format=2)[...]
            want = h[p][...]
            if not (got.dtype == want.dtype and got.shape == want.shape
                    and np.array_equal(got, want, equal_nan=want.dtype.kind == "f")):
                raise SystemExit(f"{h5path}:{p}: read through Parquet references differs from h5py")
            arrays += 1
print("parquet arrays", arrays, "keys", keys)
"#;

#[cfg(not(feature = "parquet"))]
#[test]
fn parquet_references_read_as_h5py_reads_and_match_kerchunks_layout() {
    println!("SKIPPED: h5chunk built without its `parquet` feature");
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_references_read_as_h5py_reads_and_match_kerchunks_layout() {
    {
        let Some(python) = interop::python("parquet_references_read_as_h5py_reads") else {
            return;
        };
        let dir = temp_dir("parquet");
        // A sparse grid: 1000 one-element chunks, two of them written, 100 to a record.
        let sparse = dir.join("sparse.h5");
        let file = File::create(&sparse).unwrap();
        let d = file
            .new_dataset::<i64>()
            .shape(&[1000])
            .chunk(&[1])
            .fill_value(-7i64)
            .create("sparse")
            .unwrap();
        d.write_slice(&[3i64], &[3], &[1], None).unwrap();
        d.write_slice(&[950i64], &[950], &[1], None).unwrap();
        file.close().unwrap();
        let file = File::open(&sparse).unwrap();
        let refs = references(&file, sparse.to_str().unwrap(), &RefsOptions::default()).unwrap();
        let out = dir.join("sparse.parq");
        // Only the records holding a chunk are written.
        assert_eq!(refs.write_parquet(&out, 100).unwrap(), 2);
        let mut files: Vec<String> = std::fs::read_dir(out.join("sparse"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        assert_eq!(files, ["refs.0.parq", "refs.9.parq"]);
        let mut args = Vec::new();
        let json = dir.join("sparse.json");
        std::fs::write(&json, refs.to_json()).unwrap();
        args.extend([sparse.clone(), json, out]);
        let mut arrays = 1;
        for entry in fixtures::manifest()["files"].as_array().unwrap() {
            let name = entry["file"].as_str().unwrap();
            // 140,000 chunks read one by one through Python: a minute, and nothing the other
            // fixtures' indexes and records do not cover (the JSON test above reads it).
            if name == "ea_paged.h5" {
                continue;
            }
            let h5 = std::path::absolute(fixtures::dir().join(name)).unwrap();
            let file = File::open(&h5).unwrap();
            let options = RefsOptions {
                skip_unsupported: true,
                ..RefsOptions::default()
            };
            let refs = references(&file, h5.to_str().unwrap(), &options).unwrap();
            arrays += refs.meta.keys().filter(|k| k.ends_with(".zarray")).count();
            let json = dir.join(format!("{name}.json"));
            std::fs::write(&json, refs.to_json()).unwrap();
            let parq = dir.join(format!("{name}.parq"));
            // Small records: arrays span several files, and some records are partly empty.
            refs.write_parquet(&parq, 16).unwrap();
            args.extend([h5, json, parq]);
        }
        let stdout = run_script(&python, &dir.join("check_parquet.py"), CHECK_PARQUET, &args);
        assert!(
            stdout.contains(&format!("parquet arrays {arrays} keys")),
            "{stdout}"
        );
        drop(file);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
