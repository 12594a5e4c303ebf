//! Datasets that cannot exist, made from real libhdf5 files (`h5chunk_testkit::mutate`: a
//! dataspace or datatype message changed inside its object header, the header's checksum
//! recomputed): opening them is a typed error naming the rule they break, `check` reports
//! them, and the other datasets of the file still open.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use h5chunk::storage::MemStorage;
use h5chunk::{Error, File, OpenOptions};
use h5chunk_testkit::mutate;

fn committed() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/libhdf5")
}

#[test]
fn impossible_dataspaces_and_types_are_typed_errors_and_check_problems() {
    let mutants = mutate::impossible(&committed());
    assert!(mutants.len() >= 8);
    for m in mutants {
        let f = OpenOptions::read_only()
            .open_on(Arc::new(MemStorage::from_vec(m.bytes.clone())))
            .unwrap_or_else(|e| panic!("{}: the file itself opens: {e}", m.name));
        let err = f
            .dataset(&m.dataset)
            .err()
            .unwrap_or_else(|| panic!("{}: {} opened", m.name, m.dataset));
        assert!(
            matches!(err, Error::Corrupt { .. } | Error::Format(_)),
            "{}: {err:?}",
            m.name
        );
        assert!(
            err.to_string().contains(m.expect),
            "{}: {err} (expected {:?})",
            m.name,
            m.expect
        );
        let report = f.check();
        let found: Vec<_> = report
            .problems
            .iter()
            .filter(|p| p.object == m.dataset && p.what.contains(m.expect))
            .collect();
        assert_eq!(found.len(), 1, "{}: {:?}", m.name, report.problems);
        assert!(!report.is_clean());
        // Only the mutated dataset is refused: `check` still counts the others.
        assert!(report.datasets >= 1, "{}: {report:?}", m.name);
    }
}

/// The same fixtures unmutated open every dataset the mutants break (the rules refuse only
/// what libhdf5 would).
#[test]
fn the_unmutated_fixtures_open() {
    for (file, ds) in [
        ("index_latest.h5", "/btree2/btree2"),
        ("sb3_latest.h5", "/chunked_u4"),
        ("sb2_v108.h5", "/contiguous"),
        ("sb2_v108.h5", "/compact"),
        ("sb0_earliest.h5", "/g1/g2/leaf_i4"),
    ] {
        let f = File::open_with(committed().join(file), OpenOptions::read_only()).unwrap();
        f.dataset(ds).unwrap();
        assert!(f.check().is_clean(), "{file}");
    }
}

/// An extensible-array element past every element ever set is never read (libhdf5's
/// `H5EA_get` answers the fill value there): `cargo xtask fuzz` found a libhdf5 file whose
/// sparse extensible array had such an element flipped to a garbage chunk address, the data
/// block's checksum recomputed; `check`
/// (which walks the array up to `max_idx_set`) said clean while `cat` failed on it. Both now
/// agree with libhdf5: the dataset reads as before.
#[test]
fn an_extensible_array_element_past_every_set_element_is_not_read() {
    let path = committed().join("index_latest.h5");
    let ds = "/earray/earray_sparse";
    let want = File::open_with(&path, OpenOptions::read_only())
        .unwrap()
        .dataset(ds)
        .unwrap()
        .read_raw()
        .unwrap();
    let (bytes, changed) =
        mutate::with_ea_elements_past_end(&path, ds, h5chunk_format::Addr(0xffff_ffff_fdff_ffff));
    assert!(changed > 0);
    let f = OpenOptions::read_only()
        .open_on(Arc::new(MemStorage::from_vec(bytes)))
        .unwrap();
    assert_eq!(f.dataset(ds).unwrap().read_raw().unwrap(), want);
    assert!(f.check().is_clean(), "{:?}", f.check().problems);
}
