//! Hostile input: a file's lengths and dimensions never size an allocation unchecked, and
//! structures that break their own constraints are refused with an error naming them.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::sync::Arc;

use h5chunk::storage::MemStorage;
use h5chunk::{FileOptions, OpenOptions};

/// A dataspace of 2^50 elements (h5py raises MemoryError on reading it all): reading the whole
/// dataset is a typed error, not an abort trying to allocate a petabyte; a small part reads.
#[test]
fn reading_a_petabyte_dataspace_is_an_error() {
    let mem = MemStorage::new();
    let f = FileOptions::default()
        .create_on(Arc::new(mem.clone()))
        .unwrap();
    f.new_dataset::<u8>()
        .shape(&[1 << 25, 1 << 25])
        .chunk(&[1024, 1024])
        .create("huge")
        .unwrap();
    f.close().unwrap();
    let f = OpenOptions::read_only().open_on(Arc::new(mem)).unwrap();
    let d = f.dataset("huge").unwrap();
    let err = d.read::<u8>().unwrap_err();
    assert!(err.to_string().contains("do not fit in memory"), "{err}");
    assert_eq!(
        d.read_slice::<u8>(&[5, 5], &[2, 3], None).unwrap(),
        vec![0; 6]
    );
}

/// Find `needle` in `hay` (once).
fn find(hay: &[u8], needle: &[u8]) -> usize {
    let at: Vec<usize> = hay
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at.len(), 1, "{needle:?} found {} times", at.len());
    at[0]
}

/// A dataspace whose dimension exceeds its maximum (libhdf5 refuses such files): the dataset
/// does not open, and `check` does not call the file clean.
#[test]
fn a_dimension_beyond_its_maximum_is_refused() {
    let mem = MemStorage::new();
    let f = FileOptions::default()
        .create_on(Arc::new(mem.clone()))
        .unwrap();
    let d = f
        .new_dataset::<i32>()
        .shape(&[40, 40])
        .max_shape(&[Some(0xabcd_ef01), Some(40)])
        .chunk(&[8, 8])
        .create("d")
        .unwrap();
    d.write(&vec![7i32; 1600]).unwrap();
    drop(d);
    f.close().unwrap();
    let mut bytes = mem.to_vec();
    // The maximum of dimension 0, an 8-byte length: set it below the dimension (40).
    let at = find(&bytes, &0xabcd_ef01u64.to_le_bytes());
    bytes[at..at + 8].copy_from_slice(&39u64.to_le_bytes());
    let f = OpenOptions::read_only()
        .open_on(Arc::new(MemStorage::from_vec(bytes)))
        .unwrap();
    let err = f.dataset("d").unwrap_err();
    assert!(
        err.to_string()
            .contains("maximum dimension below the current"),
        "{err}"
    );
    let report = f.check();
    assert!(!report.problems.is_empty(), "check calls the file clean");
}

/// A v1 B-tree chunk index (no checksums): a key moved off the chunk grid, and a chunk size
/// that disagrees with the chunk's, are errors on read, not zeros or wrong values.
#[test]
fn damaged_v1_btree_chunk_keys_are_errors_on_read() {
    let mem = MemStorage::new();
    let f = FileOptions::default()
        .create_on(Arc::new(mem.clone()))
        .unwrap();
    let d = f
        .new_dataset::<i32>()
        .shape(&[40])
        .max_shape(&[None])
        .chunk(&[8])
        .create("d")
        .unwrap();
    assert_eq!(d.index_kind(), Some(h5chunk::IndexKind::BTree1));
    let values: Vec<i32> = (0..40).collect();
    d.write(&values).unwrap();
    drop(d);
    f.close().unwrap();
    let clean = mem.to_vec();
    let node = find(&clean, b"TREE\x01\x00");
    // Keys: size (4), filter mask (4), two offsets (the element and the element-size slot);
    // each followed by a child address (8).
    let key = |i: usize| node + 24 + i * (8 + 16 + 8);
    let open = |bytes: Vec<u8>| {
        let f = OpenOptions::read_only()
            .open_on(Arc::new(MemStorage::from_vec(bytes)))
            .unwrap();
        f.dataset("d").unwrap()
    };
    assert_eq!(open(clean.clone()).read::<i32>().unwrap(), values);

    let mut off_grid = clean.clone();
    let k1 = key(1) + 8;
    assert_eq!(off_grid[k1], 8, "chunk 1 starts at element 8");
    off_grid[k1] = 9;
    let err = open(off_grid).read::<i32>().unwrap_err();
    assert!(err.to_string().contains("off the chunk grid"), "{err}");

    let mut size = clean;
    let k2 = key(2);
    assert_eq!(size[k2], 32, "an unfiltered chunk of 8 i32");
    size[k2] = 31;
    let d = open(size);
    let err = d.read_slice::<i32>(&[17], &[1], None).unwrap_err();
    assert!(err.to_string().contains("stored as 31 bytes"), "{err}");
    // The chunks the damage does not touch still read.
    assert_eq!(d.read_slice::<i32>(&[3], &[1], None).unwrap(), vec![3]);
}

/// An extensible array dataset whose fixed maximum dimension was raised so far that its chunk
/// grid needs more slots than the array can index: the dataset does not open (every read
/// would fail past the array's maximum), and `check` reports it.
#[test]
fn an_extent_past_the_index_capacity_is_refused() {
    use h5chunk::libver::{Libver, LibverBounds};
    let mem = MemStorage::new();
    let opts = FileOptions {
        bounds: LibverBounds::new(Libver::Latest, Libver::Latest).unwrap(),
        ..FileOptions::default()
    };
    let f = opts.create_on(Arc::new(mem.clone())).unwrap();
    let d = f
        .new_dataset::<i32>()
        .shape(&[4, 6])
        .max_shape(&[None, Some(0x0123_4567)])
        .chunk(&[2, 3])
        .create("d")
        .unwrap();
    assert_eq!(d.index_kind(), Some(h5chunk::IndexKind::ExtensibleArray));
    d.write(&[1i32; 24]).unwrap();
    drop(d);
    f.close().unwrap();
    let mut bytes = mem.to_vec();
    // Dimension 1's maximum, a consistent value above its size, but with 2^40 chunks along it.
    let at = find(&bytes, &0x0123_4567u64.to_le_bytes());
    // The object header chunk holding it, and the length its checksum covers.
    let start = bytes[..at].windows(4).rposition(|w| w == b"OHDR").unwrap();
    let covered = (8..bytes.len() - start - 4)
        .find(|&n| {
            h5chunk_format::checksum::lookup3(&bytes[start..start + n]).to_le_bytes()
                == bytes[start + n..start + n + 4]
        })
        .unwrap();
    bytes[at..at + 8].copy_from_slice(&(3u64 << 40).to_le_bytes());
    let sum = h5chunk_format::checksum::lookup3(&bytes[start..start + covered]);
    bytes[start + covered..start + covered + 4].copy_from_slice(&sum.to_le_bytes());
    let f = OpenOptions::read_only()
        .open_on(Arc::new(MemStorage::from_vec(bytes)))
        .unwrap();
    let err = f.dataset("d").unwrap_err();
    assert!(err.to_string().contains("chunk slots"), "{err}");
    assert!(!f.check().problems.is_empty(), "check calls the file clean");
}

/// A link name holding a '/' (libhdf5 refuses to make one; damage can): no path reaches the
/// object, and `check` says so.
#[test]
fn a_link_name_with_a_slash_is_a_check_problem() {
    let mem = MemStorage::new();
    let f = FileOptions::default()
        .create_on(Arc::new(mem.clone()))
        .unwrap();
    f.create_group("zzgroupzz").unwrap();
    f.close().unwrap();
    let mut bytes = mem.to_vec();
    let at = find(&bytes, b"zzgroupzz");
    bytes[at + 2] = b'/';
    let f = OpenOptions::read_only()
        .open_on(Arc::new(MemStorage::from_vec(bytes)))
        .unwrap();
    let report = f.check();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.what.contains("holds a '/'")),
        "{report:?}"
    );
}

/// A string attribute whose global heap collection is damaged: reading it is an error, and
/// `check`, which reads every attribute, reports it.
#[test]
fn a_damaged_attribute_heap_is_an_error_and_a_check_problem() {
    let mem = MemStorage::new();
    let f = FileOptions::default()
        .create_on(Arc::new(mem.clone()))
        .unwrap();
    f.create_group("g")
        .unwrap()
        .attrs()
        .set_str("units", "K")
        .unwrap();
    f.close().unwrap();
    let mut bytes = mem.to_vec();
    let at = find(&bytes, b"GCOL");
    bytes[at] = b'X';
    let f = OpenOptions::read_only()
        .open_on(Arc::new(MemStorage::from_vec(bytes)))
        .unwrap();
    assert!(f.group("g").unwrap().attr("units").is_err());
    let report = f.check();
    assert!(
        report.problems.iter().any(|p| p.object == "/g"),
        "{report:?}"
    );
}

/// Zstandard chunks read whole go through each thread's kept buffers (the stored bytes and the
/// decoded chunk): a damaged chunk (cut short, altered, a frame of another chunk's size, bytes
/// that are no frame) is a typed error, and the next read, on the same threads, is the
/// dataset's values, nothing of the damaged read left in them.
#[test]
fn damaged_zstd_chunks_are_errors_and_leave_the_next_read_whole() {
    let shape = [6u64, 64, 64];
    let values: Vec<u8> = (0..6 * 64 * 64u32)
        .flat_map(|i| ((i / 5) as u16 ^ (i % 7) as u16).to_le_bytes())
        .collect();
    for threads in [1usize, 2] {
        let mem = MemStorage::new();
        let opts = FileOptions {
            threads: Some(threads),
            ..FileOptions::default()
        };
        let f = opts.create_on(Arc::new(mem.clone())).unwrap();
        let d = f
            .new_dataset::<u16>()
            .shape(&shape)
            .chunk(&[1, 64, 64])
            .filter(h5chunk::FilterSpec::Zstd(3))
            .create("d")
            .unwrap();
        d.write_raw(&values).unwrap();
        // A frame of half a chunk, from a dataset of smaller chunks.
        let half = f
            .new_dataset::<u16>()
            .shape(&[1, 32, 64])
            .chunk(&[1, 32, 64])
            .filter(h5chunk::FilterSpec::Zstd(3))
            .create("half")
            .unwrap();
        half.write_raw(&values[..32 * 64 * 2]).unwrap();
        let (short_frame, _) = half.read_direct_chunk(&[0, 0, 0]).unwrap().unwrap();
        let (good, mask) = d.read_direct_chunk(&[2, 0, 0]).unwrap().unwrap();
        let mut altered = good.clone();
        let mid = altered.len() / 2;
        altered[mid] ^= 0xff;
        altered[mid + 1] ^= 0x81;
        let damaged: [(&str, Vec<u8>); 4] = [
            ("cut short", good[..good.len() - 3].to_vec()),
            ("a frame of half a chunk", short_frame),
            ("no frame", vec![0x5a; good.len()]),
            ("altered", altered),
        ];
        for (what, bytes) in damaged {
            d.write_direct_chunk(&[2, 0, 0], &bytes, mask).unwrap();
            match d.read_raw() {
                Err(h5chunk::Error::Filter { .. }) => {}
                // An altered frame may still decode to a chunk's worth of bytes: then only
                // that chunk differs.
                Ok(got) if what == "altered" => {
                    let at = 2 * 64 * 64 * 2;
                    assert_eq!(got[..at], values[..at], "{what}");
                    assert_eq!(got[at + 8192..], values[at + 8192..], "{what}");
                }
                other => panic!("{threads} threads, {what}: {:?}", other.map(|v| v.len())),
            }
            d.write_direct_chunk(&[2, 0, 0], &good, mask).unwrap();
            assert_eq!(
                d.read_raw().unwrap(),
                values,
                "{threads} threads, after {what}"
            );
        }
    }
}
