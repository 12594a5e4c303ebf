//! Every dataset of every libhdf5-written fixture reads back through the `h5chunk` API equal to
//! what libhdf5 wrote: value by value against the manifest (datasets of up to 4096 elements),
//! and against h5py's own reading of the whole dataset under `cargo xtask test`.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk::{File, IndexKind};
use h5chunk_testkit::{fixtures, h5py, interop};
use serde_json::Value;

/// Little-endian bytes of the manifest's values for `dtype` (numpy's name).
fn expected(dtype: &str, values: &[Value]) -> Vec<u8> {
    let size: usize = dtype[2..].parse().unwrap();
    let mut out = Vec::new();
    for v in values {
        match &dtype[1..2] {
            "i" => out.extend_from_slice(&v.as_i64().unwrap().to_le_bytes()[..size]),
            "u" => out.extend_from_slice(&v.as_u64().unwrap().to_le_bytes()[..size]),
            "f" => {
                let x = v.as_f64().unwrap();
                match size {
                    8 => out.extend_from_slice(&x.to_le_bytes()),
                    4 => out.extend_from_slice(&(x as f32).to_le_bytes()),
                    2 => out.extend_from_slice(&f16_bits(x).to_le_bytes()),
                    _ => panic!("{dtype}"),
                }
            }
            _ => panic!("{dtype}"),
        }
    }
    out
}

/// The IEEE half-precision bits of `x`, which the manifest gives exactly (so no rounding).
fn f16_bits(x: f64) -> u16 {
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let a = x.abs();
    if a == 0.0 {
        return sign;
    }
    let e = a.log2().floor() as i32;
    if e < -14 {
        // Subnormal: a = m × 2^-24.
        return sign | (a / 2f64.powi(-24)).round() as u16;
    }
    let m = ((a / 2f64.powi(e) - 1.0) * 1024.0).round() as u16;
    sign | (((e + 15) as u16) << 10) | m
}

#[test]
fn every_fixture_dataset_reads_back() {
    let python = interop::python("every_fixture_dataset_reads_back");
    let mut checked = std::collections::BTreeMap::<String, usize>::new();
    let skipped: Vec<String> = Vec::new();
    // Compared with h5py file by file, in one Python process per file.
    let mut by_file: std::collections::BTreeMap<std::path::PathBuf, Vec<(String, Vec<u8>)>> =
        Default::default();
    for fx in fixtures::datasets(|_, _| true) {
        let what = format!("{}:{}", fx.file.display(), fx.path());
        let f = File::open(&fx.file).unwrap_or_else(|e| panic!("{what}: {e}"));
        let d = match f.dataset(fx.path()) {
            Ok(d) => d,
            // Members of groups in dense storage (fractal heap) included.
            Err(e) => panic!("{what}: {e}"),
        };
        let dtype = fx.object["dtype"].as_str().unwrap();
        assert_eq!(d.dtype().numpy(), dtype, "{what}");
        let shape: Vec<u64> = fx.object["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(d.shape(), shape, "{what}");
        if let Some(kind) = fx.object["index_type"].as_str() {
            assert_eq!(d.index_kind().map(IndexKind::name), Some(kind), "{what}");
            assert_eq!(
                d.layout_version().map(u64::from),
                fx.object["layout_version"].as_u64(),
                "{what}"
            );
            if let Some(n) = fx.object["chunks_allocated"].as_u64() {
                assert_eq!(d.chunks().unwrap().len() as u64, n, "{what}");
            }
        }
        let ours = d.read_raw().unwrap_or_else(|e| panic!("{what}: {e}"));
        if let Some(values) = fx.object["values"].as_array() {
            assert_eq!(ours, expected(dtype, values), "{what}");
        }
        if python.is_some() {
            by_file
                .entry(fx.file.clone())
                .or_default()
                .push((fx.path().to_owned(), ours));
        }
        *checked
            .entry(
                fx.object["index_type"]
                    .as_str()
                    .unwrap_or("not chunked")
                    .to_owned(),
            )
            .or_default() += 1;
    }
    if let Some(python) = &python {
        for (file, sets) in &by_file {
            let names: Vec<&str> = sets.iter().map(|(n, _)| n.as_str()).collect();
            let theirs = h5py::values_le_many(python, file, &names);
            for ((name, ours), theirs) in sets.iter().zip(theirs) {
                assert_eq!(ours, &theirs, "{}:{name}: against h5py", file.display());
            }
        }
    }
    println!("checked {checked:?}; skipped {skipped:?}");
    for kind in [
        "btree1",
        "single",
        "implicit",
        "farray",
        "earray",
        "not chunked",
    ] {
        assert!(
            checked.get(kind).is_some_and(|&n| n > 0),
            "no {kind} dataset checked: {checked:?}"
        );
    }
}
