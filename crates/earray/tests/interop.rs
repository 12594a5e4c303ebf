//! Interop with libhdf5: arrays libhdf5 wrote read back exactly (against the fixture manifest
//! and, under `cargo xtask test`, against h5py element by element), and arrays we write are
//! read by libhdf5 (h5py, h5dump) element by element, unfiltered and filtered, crossing every
//! geometry boundary.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use h5chunk_cache::{CacheConfig, check_write_order};
use h5chunk_earray::{ChunkAddrs, ChunkRecords, ElementClass, ExtensibleArray, FilteredChunks};
use h5chunk_format::chunk_record::ChunkRecord;
use h5chunk_format::earray::{Geometry, Params};
use h5chunk_format::message::filter_pipeline::FLAG_OPTIONAL;
use h5chunk_format::message::{
    ByteOrder, ChunkIndex, ChunkedLayout, Datatype, EarrayParams, Filter, FilterPipeline,
    LayoutVersion, PipelineVersion,
};
use h5chunk_format::{Addr, Sizes};
use h5chunk_testkit::{DatasetSpec, FileWriter, Format, H5File, fixtures, h5py, interop};

/// The extensible array's element index of a chunk at element `offset` (docs/format/chunk-index-format.md
/// §3): row-major over the maximum chunk grid, the unlimited dimension moved first.
fn linear_index(offset: &[u64], chunk: &[u64], max_dims: &[Option<u64>]) -> u64 {
    let k = max_dims.iter().position(Option::is_none).unwrap();
    let order = std::iter::once(k).chain((0..offset.len()).filter(|&d| d != k));
    let mut idx = 0u64;
    for d in order {
        let max_chunks = max_dims[d].map_or(1, |m| m.div_ceil(chunk[d]));
        idx = idx * max_chunks + offset[d] / chunk[d];
    }
    idx
}

struct Opened {
    file: H5File,
    ea: ExtensibleArray<ChunkRecords>,
    chunk: Vec<u64>,
    max_dims: Vec<Option<u64>>,
}

fn open_fixture(fx: &fixtures::Fixture) -> Option<(Opened, h5chunk_cache::MetadataCache)> {
    let file = H5File::open(&fx.file);
    let info = file.dataset(fx.path());
    let c = info.chunked();
    let ChunkIndex::ExtensibleArray(p) = c.index else {
        panic!("{}: not an extensible array", fx.path())
    };
    let cache = file.cache(CacheConfig::default());
    let addr = c.address?;
    let class = ChunkRecords::new(info.record_codec(file.sizes()));
    let ea = ExtensibleArray::open(&cache, addr, file.sizes(), class).unwrap();
    // The layout message stores the parameters in another order than the header (Q2).
    assert_eq!(ea.params(), Params::from(p), "{}", fx.path());
    let (chunk, max_dims) = (info.chunk_dims(), info.max_dims());
    Some((
        Opened {
            file,
            ea,
            chunk,
            max_dims,
        },
        cache,
    ))
}

#[test]
fn reads_every_libhdf5_extensible_array() {
    let fxs = fixtures::datasets(|_, o| o["index_type"] == "earray");
    assert!(!fxs.is_empty());
    let mut crossed = BTreeMap::new();
    for fx in &fxs {
        let name = format!("{}:{}", fx.file.display(), fx.path());
        let Some((o, cache)) = open_fixture(fx) else {
            assert_eq!(fx.object["chunks_allocated"], 0, "{name}");
            continue;
        };
        let set = o.ea.to_vec(&cache).unwrap();
        assert_eq!(
            set.len() as u64,
            fx.object["chunks_allocated"].as_u64().unwrap(),
            "{name}"
        );
        for &(i, r) in &set {
            assert_eq!(o.ea.get(&cache, i).unwrap(), r, "{name} {i}");
        }
        if fx.object["chunk_records_reliable"] == true {
            let base = o.file.superblock().base_address;
            for rec in fx.object["chunk_records"].as_array().into_iter().flatten() {
                let offset: Vec<u64> = rec["offset"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_u64().unwrap())
                    .collect();
                let i = linear_index(&offset, &o.chunk, &o.max_dims);
                let got = o.ea.get(&cache, i).unwrap();
                assert_eq!(
                    got.addr,
                    Some(Addr(rec["address"].as_u64().unwrap() - base))
                );
                if o.ea.class().client_id() == 1 {
                    assert_eq!(got.size, rec["size"].as_u64().unwrap(), "{name}");
                    assert_eq!(u64::from(got.mask), rec["filter_mask"].as_u64().unwrap());
                }
            }
        }
        // Which parts of the geometry this file exercises.
        let g = Geometry::new(o.ea.params()).unwrap();
        for &(i, _) in &set {
            let part = match g.locate(i).unwrap() {
                h5chunk_format::earray::Location::IndexBlock(_) => "index block elements",
                h5chunk_format::earray::Location::DataBlock { sblk, .. } => {
                    if sblk < g.iblk_nsblks() {
                        "index block data blocks"
                    } else if g.row(sblk).unwrap().npages == 0 {
                        "super blocks"
                    } else {
                        "paged data blocks"
                    }
                }
            };
            crossed.insert(part, name.clone());
        }
    }
    eprintln!("geometry parts read from libhdf5 files: {crossed:#?}");
    let want = if fixtures::dir().join("ea_paged.h5").exists() {
        4
    } else {
        3
    };
    assert_eq!(crossed.len(), want, "{crossed:?}");
}

#[test]
fn libhdf5_arrays_match_h5py_element_by_element() {
    let Some(python) = interop::python("libhdf5_arrays_match_h5py_element_by_element") else {
        return;
    };
    // h5py's chunk iteration reports wrong offsets when the unlimited dimension is not the
    // first (Q6): only the others are compared chunk by chunk.
    let fxs = fixtures::datasets(|_, o| {
        o["index_type"] == "earray" && o["maxshape"][0].is_null() && o["chunks_allocated"] != 0
    });
    for fx in &fxs {
        let name = format!("{}:{}", fx.file.display(), fx.path());
        let (o, cache) = open_fixture(fx).unwrap();
        let base = o.file.superblock().base_address;
        let infos = h5py::chunks(&python, &fx.file, fx.path());
        let set = o.ea.to_vec(&cache).unwrap();
        assert_eq!(set.len(), infos.len(), "{name}");
        let filtered = o.ea.class().client_id() == 1;
        for (info, &(i, r)) in infos.iter().zip(&set) {
            assert_eq!(
                linear_index(&info.offset, &o.chunk, &o.max_dims),
                i,
                "{name}"
            );
            assert_eq!(r.addr.map(|a| a.get() + base), info.addr, "{name} {i}");
            if filtered {
                assert_eq!((r.size, r.mask), (info.size, info.mask), "{name} {i}");
            }
        }
        eprintln!("{name}: {} chunks match h5py", infos.len());
    }
}

fn tmp(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// Elements written in the interop files: ≥ 200 000, past the first paged data blocks.
const N: u64 = 200_000;

fn value(i: u64) -> u8 {
    (i.wrapping_mul(7) + 3) as u8
}

/// Write a 1-D u8 dataset of N one-byte chunks indexed by an extensible array of `class`, built
/// with `record(i, chunk address)`; check the SWMR order of the whole build.
fn write_file<C: ElementClass>(
    path: &Path,
    class: C,
    pipeline: Option<FilterPipeline>,
    record: impl Fn(u64, Addr) -> C::Element,
) -> PathBuf {
    let mut w = FileWriter::create(path, Format::Latest);
    let values: Vec<u8> = (0..N).map(value).collect();
    // All chunks in one contiguous run: chunk i is the byte at base + i.
    let base = w.write_chunk(&values);
    let sizes: Sizes = w.sizes();
    let mut ea = ExtensibleArray::create(w.cache(), sizes, class, Params::CHUNK_INDEX).unwrap();
    for i in 0..N {
        assert_eq!(
            ea.append(w.cache(), &record(i, Addr(base.get() + i)))
                .unwrap(),
            i
        );
    }
    assert!(w.cache().flush().unwrap().is_complete());
    check_write_order(&w.cache().take_trace()).unwrap();
    let layout = ChunkedLayout::new(
        LayoutVersion::V4,
        &[1],
        1,
        ChunkIndex::ExtensibleArray(EarrayParams::DEFAULT),
        Some(ea.addr()),
    );
    let u1 = Datatype::int(1, false, ByteOrder::LittleEndian);
    w.add_dataset(
        "d",
        DatasetSpec::chunked(u1.clone(), &[N], &[None], &[1], layout, pipeline),
    );
    w.finish()
}

/// libhdf5 reads every value and reports every chunk where we put it; h5dump reads the file.
fn check_with_libhdf5(test: &str, path: &Path, filtered: bool) {
    // Our own reader first, through a fresh cache.
    let f = H5File::open(path);
    let info = f.dataset("/d");
    let cache = f.cache(CacheConfig::default());
    let class = ChunkRecords::new(info.record_codec(f.sizes()));
    let ea =
        ExtensibleArray::open(&cache, info.chunked().address.unwrap(), f.sizes(), class).unwrap();
    assert_eq!(ea.len(&cache).unwrap(), N);
    let Some(python) = interop::python(test) else {
        return;
    };
    let got = h5py::values_le(&python, path, "/d");
    let want: Vec<u8> = (0..N).map(value).collect();
    assert_eq!(got.len(), want.len());
    let bad = got.iter().zip(&want).position(|(a, b)| a != b);
    assert_eq!(bad, None, "first wrong value at {bad:?}");
    let chunks = h5py::chunks(&python, path, "/d");
    assert_eq!(chunks.len() as u64, N);
    for (i, c) in chunks.iter().enumerate() {
        let r = ea.get(&cache, i as u64).unwrap();
        assert_eq!(c.offset, vec![i as u64]);
        assert_eq!(c.addr, r.addr.map(Addr::get), "chunk {i}");
        assert_eq!(c.size, 1);
        assert_eq!(c.mask, if filtered { 1 } else { 0 });
    }
    if let Some(h5dump) = interop::h5dump(test) {
        interop::h5dump_ok(&h5dump, path);
    }
}

#[test]
fn h5py_reads_our_unfiltered_array() {
    let path = write_file(
        &tmp("earray_unfiltered.h5"),
        ChunkAddrs::new(Sizes::DEFAULT),
        None,
        |_, a| Some(a),
    );
    check_with_libhdf5("h5py_reads_our_unfiltered_array", &path, false);
}

#[test]
fn h5py_reads_our_filtered_array() {
    // Deflate in the pipeline, every chunk stored raw with mask bit 0 set (deflate skipped),
    // so libhdf5 reads it as is; the record's size field is chunk_size_len(1) = 2 bytes wide.
    let pipeline = FilterPipeline {
        version: PipelineVersion::V2,
        filters: vec![Filter::new(PipelineVersion::V2, 1, FLAG_OPTIONAL, vec![4])],
    };
    let class = FilteredChunks::layout_v4(Sizes::DEFAULT, 1).unwrap();
    assert_eq!(class.element_size(), 8 + 2 + 4);
    let path = write_file(&tmp("earray_filtered.h5"), class, Some(pipeline), |_, a| {
        ChunkRecord {
            addr: Some(a),
            size: 1,
            mask: 1,
        }
    });
    check_with_libhdf5("h5py_reads_our_filtered_array", &path, true);
}

#[test]
fn linear_index_swizzles_the_unlimited_dimension() {
    // docs/format/chunk-index-format.md §3: shape (3, ∞), chunk (2, 3) gives idx = scaled[1]·2 + scaled[0].
    assert_eq!(linear_index(&[2, 9], &[2, 3], &[Some(3), None]), 3 * 2 + 1);
    assert_eq!(linear_index(&[40], &[4], &[None]), 10);
}

/// One block of an array with the addresses of the array's own blocks left out: what must be
/// identical between libhdf5's array and ours when both hold the same elements.
#[derive(Debug, PartialEq, Eq)]
enum Norm {
    Header(u8, u8, Params, h5chunk_format::earray::Stats),
    IndexBlock(Vec<u8>, Vec<bool>, Vec<bool>),
    SuperBlock(usize, u64, Vec<u8>, Vec<bool>),
    DataBlock(usize, u64, u64, Vec<u8>),
    Page(usize, u64, u64, Vec<u8>),
}

/// Walk the array whose header is at `at` in `bytes` with the format decoders alone.
fn walk(bytes: &[u8], at: Addr, s: Sizes) -> Vec<Norm> {
    use h5chunk_format::earray::{DataBlock, Header, IndexBlock, SuperBlock, bit, decode_page};
    let from = |a: Addr| &bytes[a.get() as usize..];
    let h = Header::decode(from(at), at, s).unwrap();
    let es = h.element_size;
    let g = Geometry::new(h.params).unwrap();
    let mut out = vec![Norm::Header(h.client_id, es, h.params, h.stats)];
    let Some(ib_at) = h.index_block else {
        return out;
    };
    let ib = IndexBlock::decode(from(ib_at), ib_at, s, &g, es).unwrap();
    let defined = |v: &[Option<Addr>]| v.iter().map(Option::is_some).collect::<Vec<_>>();
    out.push(Norm::IndexBlock(
        ib.elements.clone(),
        defined(&ib.dblk_addrs),
        defined(&ib.sblk_addrs),
    ));
    let mut slot = 0;
    for u in 0..g.iblk_nsblks() {
        for d in 0..g.row(u).unwrap().ndblks {
            if let Some(a) = ib.dblk_addrs[slot] {
                let b = DataBlock::decode(from(a), a, s, &g, u, es).unwrap();
                out.push(Norm::DataBlock(u, d, b.block_offset, b.elements));
            }
            slot += 1;
        }
    }
    for (k, sb) in ib.sblk_addrs.iter().enumerate() {
        let Some(sb_at) = *sb else { continue };
        let u = g.iblk_nsblks() + k;
        let row = *g.row(u).unwrap();
        let sb = SuperBlock::decode(from(sb_at), sb_at, s, &g, u).unwrap();
        out.push(Norm::SuperBlock(
            u,
            sb.block_offset,
            sb.page_init.clone(),
            defined(&sb.dblk_addrs),
        ));
        for (d, a) in sb.dblk_addrs.iter().enumerate() {
            let Some(a) = *a else { continue };
            let b = DataBlock::decode(from(a), a, s, &g, u, es).unwrap();
            out.push(Norm::DataBlock(u, d as u64, b.block_offset, b.elements));
            for p in 0..row.npages {
                if bit(&sb.page_init, d as u64 * row.npages + p) {
                    let pa = Addr(a.get() + g.page_offset(s, p, es));
                    let e = decode_page(from(pa), pa, g.page_nelmts(), es, "page").unwrap();
                    out.push(Norm::Page(u, d as u64, p, e.to_vec()));
                }
            }
        }
    }
    out
}

#[test]
fn our_blocks_match_libhdf5_blocks_holding_the_same_elements() {
    // Every block libhdf5 wrote (header statistics, index block, super blocks with their page
    // bitmaps, data blocks with their block offsets, quirk Q1 included, and pages) is what we
    // write for the same elements set in index order, but for the addresses of the blocks.
    let fxs = fixtures::datasets(|_, o| {
        o["index_type"] == "earray" && o["maxshape"][0].is_null() && o["chunks_allocated"] != 0
    });
    assert!(!fxs.is_empty());
    for fx in &fxs {
        let name = format!("{}:{}", fx.file.display(), fx.path());
        let (o, cache) = open_fixture(fx).unwrap();
        let set = o.ea.to_vec(&cache).unwrap();
        let theirs = walk(
            &std::fs::read(&fx.file).unwrap(),
            o.ea.addr(),
            o.file.sizes(),
        );
        let storage = h5chunk_cache::MemStorage::new();
        let ours_cache = h5chunk_cache::MetadataCache::new(
            std::sync::Arc::new(storage.clone()),
            CacheConfig::default(),
        )
        .unwrap();
        ours_cache.allocator().set_eoa(Addr(64));
        let mut ours =
            ExtensibleArray::create(&ours_cache, o.file.sizes(), *o.ea.class(), o.ea.params())
                .unwrap();
        for &(i, r) in &set {
            ours.insert(&ours_cache, i, &r).unwrap();
        }
        assert!(ours_cache.flush().unwrap().is_complete());
        let ours = walk(&storage.to_vec(), ours.addr(), o.file.sizes());
        assert_eq!(ours.len(), theirs.len(), "{name}");
        for (a, b) in ours.iter().zip(&theirs) {
            assert_eq!(a, b, "{name}");
        }
        eprintln!("{name}: {} blocks identical", ours.len());
    }
}
