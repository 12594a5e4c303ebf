//! Sizes the heaps of a file declare are checked before they size anything: libhdf5-written
//! heaps (the committed fixtures) with one size field changed (and the checksum recomputed
//! where the structure has one) are typed errors.
//!
//! - A fractal heap header whose maximum direct block size is above libhdf5's 2 GiB limit
//!   (a reader would hold such a block in memory).
//! - A global heap collection (h5py's test files, from the generated fixtures) whose object
//!   declares 2^40 bytes, or whose collection size is below its own header or past its bytes.
//! - A local heap data segment whose free list starts past the segment, or whose free block
//!   declares 2^40 bytes.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::path::PathBuf;

use h5chunk_format::checksum::lookup3;
use h5chunk_format::fractal_heap::{self, Header};
use h5chunk_format::global_heap::{self, GlobalHeapCollection};
use h5chunk_format::local_heap::{LocalHeap, LocalHeapData};
use h5chunk_format::{Addr, Error, Sizes};

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/libhdf5")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every offset of `sig` in `bytes`.
fn find_all(bytes: &[u8], sig: &[u8]) -> Vec<usize> {
    bytes
        .windows(sig.len())
        .enumerate()
        .filter(|(_, w)| *w == sig)
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn fractal_heap_direct_blocks_over_libhdf5s_limit_are_refused() {
    let sizes = Sizes::DEFAULT;
    let mut headers = 0;
    for name in ["dense_groups_latest.h5", "dense_groups_earliest.h5"] {
        let bytes = fixture(name);
        for at in find_all(&bytes, fractal_heap::HEADER_SIGNATURE) {
            let Ok(h) = Header::decode(&bytes[at..], Addr(at as u64), sizes) else {
                continue; // the signature's bytes inside something else
            };
            headers += 1;
            // The maximum direct block size: after the signature, version, ID length, filters'
            // length, flags, maximum managed size, twelve L/O fields, width and starting size.
            let field = at + 4 + 1 + 2 + 2 + 1 + 4 + 12 * 8 + 2 + 8;
            assert_eq!(
                u64::from_le_bytes(bytes[field..field + 8].try_into().unwrap()),
                h.max_direct,
                "{name} @ {at:#x}"
            );
            for (max_direct, refused) in [
                (fractal_heap::MAX_DIRECT_LIMIT, false),
                (fractal_heap::MAX_DIRECT_LIMIT * 2, true),
                (1 << 40, true),
                (1 << 63, true),
            ] {
                let mut m = bytes[at..at + h.len].to_vec();
                m[field - at..field - at + 8].copy_from_slice(&max_direct.to_le_bytes());
                let sum = lookup3(&m[..h.len - 4]);
                m[h.len - 4..].copy_from_slice(&sum.to_le_bytes());
                let got = Header::decode(&m, Addr(at as u64), sizes);
                if refused {
                    let err = got.unwrap_err();
                    assert!(
                        matches!(err, Error::Invalid { .. }),
                        "{name} @ {at:#x}: {err}"
                    );
                    assert!(
                        err.to_string()
                            .contains(&format!("{max_direct} (largest direct)")),
                        "{err}"
                    );
                } else {
                    assert_eq!(got.unwrap().max_direct, max_direct, "{name} @ {at:#x}");
                }
            }
        }
    }
    assert!(headers >= 2, "fractal heap headers found: {headers}");
}

/// The generated fixtures (`H5CHUNK_FIXTURES`, set by `cargo xtask test`): under plain `cargo
/// test` a test that needs them prints a skip line, under `H5CHUNK_REQUIRE_INTEROP=1` it fails.
fn generated_fixtures(test: &str) -> Option<PathBuf> {
    match std::env::var_os("H5CHUNK_FIXTURES").filter(|v| !v.is_empty()) {
        Some(dir) => Some(dir.into()),
        None if std::env::var("H5CHUNK_REQUIRE_INTEROP").as_deref() == Ok("1") => {
            panic!("{test}: H5CHUNK_REQUIRE_INTEROP=1 but H5CHUNK_FIXTURES is not set")
        }
        None => {
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED (interop): {test}: set by cargo xtask test"
            );
            None
        }
    }
}

#[test]
fn global_heap_objects_and_collections_declaring_too_much_are_refused() {
    // h5py's own test files (variable-length strings, libhdf5-written): the committed subset
    // holds no global heap.
    let Some(dir) =
        generated_fixtures("global_heap_objects_and_collections_declaring_too_much_are_refused")
    else {
        return;
    };
    let sizes = Sizes::DEFAULT;
    let mut collections = 0;
    for name in ["vlen_string_dset.h5", "vlen_string_dset_utc.h5"] {
        let path = dir.join("h5py-tests").join(name);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for at in find_all(&bytes, &global_heap::SIGNATURE) {
            let header = &bytes[at..(at + global_heap::header_len(sizes)).min(bytes.len())];
            let Ok(size) = global_heap::collection_size(header, Addr(at as u64), sizes) else {
                continue;
            };
            let size = size as usize;
            let whole = &bytes[at..at + size];
            let c = GlobalHeapCollection::decode(whole, Addr(at as u64), sizes).unwrap();
            assert!(!c.objects.is_empty(), "{name} @ {at:#x}");
            collections += 1;
            // The first object's size field (its header: index u16, refcount u16, 4 reserved).
            let first = global_heap::header_len(sizes) + 8;
            let mut m = whole.to_vec();
            m[first..first + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
            let err = GlobalHeapCollection::decode(&m, Addr(at as u64), sizes).unwrap_err();
            assert!(
                matches!(err, Error::Truncated { .. } | Error::BadValue { .. }),
                "{name} @ {at:#x}: {err}"
            );
            // A collection size smaller than the collection's own header.
            let mut m = whole.to_vec();
            m[8..16].copy_from_slice(&8u64.to_le_bytes());
            let err = global_heap::collection_size(&m, Addr(at as u64), sizes).unwrap_err();
            assert!(matches!(err, Error::BadValue { .. }), "{err}");
            // One larger than the bytes there: the decoder asks for what it was not given.
            let mut m = whole.to_vec();
            m[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes());
            assert!(GlobalHeapCollection::decode(&m, Addr(at as u64), sizes).is_err());
        }
    }
    assert!(
        collections >= 1,
        "global heap collections found: {collections}"
    );
}

#[test]
fn local_heap_free_lists_reaching_outside_the_segment_are_refused() {
    let sizes = Sizes::DEFAULT;
    let mut heaps = 0;
    for name in ["sb0_earliest.h5", "dense_groups_earliest.h5"] {
        let bytes = fixture(name);
        for at in find_all(&bytes, b"HEAP") {
            let Ok(heap) = LocalHeap::decode(&bytes[at..], Addr(at as u64), sizes) else {
                continue;
            };
            let (start, len) = (
                heap.data_segment_address.get() as usize,
                heap.data_segment_size as usize,
            );
            let Some(segment) = bytes.get(start..start + len) else {
                continue;
            };
            let data = LocalHeapData::decode(
                segment,
                heap.data_segment_address,
                sizes,
                heap.free_list_head,
            )
            .unwrap();
            heaps += 1;
            // A free list that starts past the segment.
            assert!(
                LocalHeapData::decode(segment, heap.data_segment_address, sizes, len as u64 + 8)
                    .is_err(),
                "{name} @ {at:#x}"
            );
            // The first free block declaring 2^40 bytes.
            if let Some(block) = data.free_list().first() {
                let mut m = segment.to_vec();
                let o = block.offset as usize + 8;
                m[o..o + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
                let err = LocalHeapData::decode(
                    &m,
                    heap.data_segment_address,
                    sizes,
                    heap.free_list_head,
                )
                .unwrap_err();
                assert!(
                    matches!(err, Error::BadValue { .. } | Error::Invalid { .. }),
                    "{name} @ {at:#x}: {err}"
                );
            }
        }
    }
    assert!(heaps >= 2, "local heaps found: {heaps}");
}
