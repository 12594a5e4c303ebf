//! Interop with libhdf5 (through h5py): trees libhdf5 writes are read back exactly; trees we
//! write are read by libhdf5 value by value, extended by libhdf5, and read back by us.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use h5chunk_btree2::{BTree2, ChunkClass, ChunkEntry, Params};
use h5chunk_cache::CacheConfig;
use h5chunk_format::Addr;
use h5chunk_format::chunk_record::{ChunkRecord, RecordCodec, Scaled, chunk_size_len};
use h5chunk_format::message::filter_pipeline::{FLAG_OPTIONAL, Filter, PipelineVersion, id};
use h5chunk_format::message::{
    Btree2Params, ByteOrder, ChunkIndex, ChunkedLayout, Datatype, FilterPipeline, LayoutVersion,
};
use h5chunk_testkit::{DatasetSpec, FileWriter, Format, H5File, h5py, interop};

fn tmp(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// The chunk records of `dataset`'s v2 B-tree, read by this crate, after a full validation.
fn our_records(path: &Path, dataset: &str, min_depth: u16) -> (Vec<ChunkEntry>, u16) {
    let f = H5File::open(path);
    let d = f.dataset(dataset);
    let c = d.chunked();
    assert!(
        matches!(c.index, ChunkIndex::BTreeV2(_)),
        "{dataset}: {:?}",
        c.index
    );
    let header = c.address.expect("allocated index");
    let cache = f.cache(CacheConfig::default());
    let class = ChunkClass::new(d.record_codec(f.sizes()), d.dims().len()).unwrap();
    let t = BTree2::open(&cache, header, f.sizes(), class).unwrap();
    let st = t.validate(&cache).unwrap();
    assert!(st.depth >= min_depth, "{dataset}: {st:?}");
    eprintln!(
        "{}:{dataset}: {} records, depth {}, nodes per depth {:?}, {} bytes",
        path.file_name().unwrap().to_string_lossy(),
        st.records,
        st.depth,
        st.nodes,
        t.bytes_used(&cache).unwrap()
    );
    let recs = t.to_vec(&cache).unwrap();
    // The counts give every record by rank.
    for i in (0..recs.len()).step_by(997) {
        assert_eq!(t.nth(&cache, i as u64).unwrap().as_ref(), Some(&recs[i]));
        assert_eq!(
            t.get(&cache, &recs[i].scaled).unwrap().as_ref(),
            Some(&recs[i])
        );
    }
    (recs, st.depth)
}

/// Compare our records with h5py's chunk info (element offsets = scaled × chunk dims).
fn same_as_libhdf5(python: &Path, path: &Path, dataset: &str, ours: &[ChunkEntry], chunk: &[u64]) {
    let theirs = h5py::chunks(python, path, dataset);
    assert_eq!(theirs.len(), ours.len(), "{dataset}: record count");
    let mut theirs: BTreeMap<Vec<u64>, (Option<u64>, u64, u32)> = theirs
        .into_iter()
        .map(|c| {
            let scaled: Vec<u64> = c.offset.iter().zip(chunk).map(|(o, k)| o / k).collect();
            (scaled, (c.addr, c.size, c.mask))
        })
        .collect();
    for e in ours {
        let (addr, size, mask) = theirs
            .remove(&e.scaled[..])
            .unwrap_or_else(|| panic!("{dataset}: chunk {:?} unknown to libhdf5", e.scaled));
        assert_eq!(
            e.record.addr.map(Addr::get),
            addr,
            "{dataset} {:?}",
            e.scaled
        );
        if e.record.size != 0 || mask != 0 {
            assert_eq!(
                (e.record.size, e.record.mask),
                (size, mask),
                "{dataset} {:?}",
                e.scaled
            );
        }
    }
}

const MAKE: &str = r#"
import sys, h5py, numpy as np
path = sys.argv[1]
with h5py.File(path, 'w', libver='latest') as f:
    for name, (r, c), gz in [('d0', (5, 10), False), ('d1', (24, 24), False), ('d2', (250, 400), False),
                             ('f0', (5, 10), True), ('f1', (24, 24), True), ('f2', (250, 400), True)]:
        kw = dict(compression='gzip') if gz else {}
        d = f.create_dataset(name, shape=(r, c), maxshape=(None, None), chunks=(1, 1), dtype='u1', **kw)
        i, j = np.indices((r, c))
        d[...] = ((i * 7 + j * 13) % 251).astype('u1')
"#;

#[test]
fn libhdf5_trees_read_back_exactly() {
    let Some(python) = interop::python("libhdf5_trees_read_back_exactly") else {
        return;
    };
    let path = tmp("btree2_libhdf5.h5");
    interop::run_python(&python, MAKE, &[&path.to_string_lossy()]);
    for (name, depth, count) in [
        ("d0", 0u16, 50usize),
        ("d1", 1, 576),
        ("d2", 2, 100_000),
        ("f0", 0, 50),
        ("f1", 1, 576),
        ("f2", 2, 100_000),
    ] {
        let (ours, got_depth) = our_records(&path, name, depth);
        assert_eq!(ours.len(), count, "{name}");
        // libhdf5 2.0 writes filtered records with 8-byte sizes (layout v5): 36-byte records
        // make the 100,000-record tree one level deeper than the unfiltered one.
        assert!(
            got_depth >= depth && (count > 1000 || got_depth == depth),
            "{name}: depth {got_depth}"
        );
        same_as_libhdf5(&python, &path, name, &ours, &[1, 1]);
        if name.starts_with('d') {
            // Unfiltered 1-byte chunks: the byte at each record's address is the value.
            let f = H5File::open(&path);
            let cols = if count == 50 {
                10
            } else if count == 576 {
                24
            } else {
                400
            };
            for e in ours.iter().step_by(13) {
                let (i, j) = (e.scaled[0], e.scaled[1]);
                assert_eq!(
                    f.read(e.record.addr.unwrap(), 1)[0],
                    ((i * 7 + j * 13) % 251) as u8
                );
                assert!(j < cols);
            }
        }
    }
}

const ROWS: u64 = 250;
const COLS: u64 = 400;

fn value(i: u64, j: u64) -> u8 {
    ((i * 7 + j * 13) % 251) as u8
}

fn order(kind: &str) -> Vec<u64> {
    let mut v: Vec<u64> = (0..ROWS * COLS).collect();
    if kind != "append" {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for i in (1..v.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v.swap(i, (x % (i as u64 + 1)) as usize);
        }
    }
    v
}

const EXTEND: &str = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'r+') as f:
    for name in sys.argv[2:]:
        d = f[name]
        r, c = d.shape
        d.resize((r + 10, c + 10))
        i, j = np.indices((r + 10, c + 10))
        v = ((i * 7 + j * 13) % 251).astype('u1')
        d[r:, :] = v[r:, :]
        d[:r, c:] = v[:r, c:]
"#;

#[test]
fn our_trees_read_and_extended_by_libhdf5() {
    let path = tmp("btree2_ours.h5");
    let mut w = FileWriter::create(&path, Format::Latest);
    let sizes = w.sizes();
    let u1 = Datatype::int(1, false, ByteOrder::LittleEndian);
    let mut depths = Vec::new();
    for (name, kind, filtered) in [
        ("append", "append", false),
        ("random", "random", false),
        ("filtered", "random", true),
    ] {
        let codec = if filtered {
            RecordCodec::filtered(sizes, chunk_size_len(1)).unwrap()
        } else {
            RecordCodec::unfiltered(sizes)
        };
        let class = ChunkClass::new(codec, 2).unwrap();
        let mut t = BTree2::create(w.cache(), sizes, class, Params::CHUNK_INDEX).unwrap();
        for idx in order(kind) {
            let (i, j) = (idx / COLS, idx % COLS);
            let addr = w.write_chunk(&[value(i, j)]);
            t.try_insert(
                w.cache(),
                ChunkEntry {
                    scaled: Scaled::from_slice(&[i, j]),
                    // Filtered chunks are stored raw: the mask's bit 0 says deflate was skipped.
                    record: ChunkRecord {
                        addr: Some(addr),
                        size: u64::from(filtered),
                        mask: u32::from(filtered),
                    },
                },
            )
            .unwrap();
        }
        let st = t.validate(w.cache()).unwrap();
        assert_eq!(st.records, ROWS * COLS);
        assert!(st.depth >= 2, "{name}: {st:?}");
        depths.push((name, st.depth, st.nodes.clone()));
        let layout = ChunkedLayout::new(
            LayoutVersion::V4,
            &[1, 1],
            1,
            ChunkIndex::BTreeV2(Btree2Params::DEFAULT),
            Some(t.addr()),
        );
        let pipeline = filtered.then(|| FilterPipeline {
            version: PipelineVersion::V2,
            filters: vec![Filter::new(
                PipelineVersion::V2,
                id::DEFLATE,
                FLAG_OPTIONAL,
                vec![6],
            )],
        });
        w.add_dataset(
            name,
            DatasetSpec::chunked(
                u1.clone(),
                &[ROWS, COLS],
                &[None, None],
                &[1, 1],
                layout,
                pipeline,
            ),
        );
    }
    let path = w.finish();
    eprintln!("our trees: {depths:?}");
    for (name, _, _) in &depths {
        let (ours, _) = our_records(&path, name, 2);
        assert_eq!(ours.len() as u64, ROWS * COLS);
    }
    if let Some(h5dump) = interop::h5dump("our_trees_read_and_extended_by_libhdf5") {
        interop::h5dump_ok(&h5dump, &path);
    }
    let Some(python) = interop::python("our_trees_read_and_extended_by_libhdf5") else {
        return;
    };
    let expect = |r: u64, c: u64| -> Vec<u8> {
        (0..r)
            .flat_map(|i| (0..c).map(move |j| value(i, j)))
            .collect()
    };
    for (name, _, _) in &depths {
        assert_eq!(
            h5py::values_le(&python, &path, name),
            expect(ROWS, COLS),
            "{name}"
        );
        let (ours, _) = our_records(&path, name, 2);
        same_as_libhdf5(&python, &path, name, &ours, &[1, 1]);
    }
    // libhdf5 goes on inserting into our trees (splits and redistributions of our nodes).
    let names: Vec<&str> = depths.iter().map(|d| d.0).collect();
    let mut args = vec![path.to_str().unwrap()];
    args.extend(&names);
    interop::run_python(&python, EXTEND, &args);
    for name in names {
        let (ours, _) = our_records(&path, name, 2);
        assert_eq!(ours.len() as u64, (ROWS + 10) * (COLS + 10), "{name}");
        same_as_libhdf5(&python, &path, name, &ours, &[1, 1]);
        assert_eq!(
            h5py::values_le(&python, &path, name),
            expect(ROWS + 10, COLS + 10),
            "{name}"
        );
    }
}
