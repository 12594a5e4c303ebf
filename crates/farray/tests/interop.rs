//! Fixed arrays we write, unpaged and paged (6,000 elements with whole pages never touched and
//! a shorter last page), unfiltered and filtered, in files libhdf5 reads element by element:
//! h5py's values and `chunk_iter` records, and h5dump, under `cargo xtask test`. Without the
//! tools, the files are still read back through the testkit's reader and our own array.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use std::collections::BTreeMap;

use h5chunk_cache::{CacheConfig, check_write_order};
use h5chunk_farray::{FixedArray, Params};
use h5chunk_format::Addr;
use h5chunk_format::chunk_record::{ChunkRecord, RecordCodec, chunk_size_len};
use h5chunk_format::message::datatype::{ByteOrder, Datatype};
use h5chunk_format::message::filter_pipeline::{Filter, FilterPipeline, PipelineVersion, id};
use h5chunk_format::message::{ChunkIndex, ChunkedLayout, LayoutVersion};
use h5chunk_testkit::{DatasetSpec, FileWriter, Format, H5File, h5py, interop};

/// One dataset to write: i4 elements, value `k·10^6 + Σ coord·1000^(rank-1-d)` where written.
struct Case {
    name: &'static str,
    dims: Vec<u64>,
    max: Vec<u64>,
    chunk: Vec<u64>,
    filtered: bool,
    /// Which chunks (fixed array indexes) to write.
    write: fn(u64, &Params) -> bool,
}

fn value(k: usize, coord: &[u64]) -> i32 {
    let v = coord.iter().fold(0u64, |acc, x| acc * 1000 + x);
    (k as u64 * 1_000_000 + v) as i32
}

fn cases() -> Vec<Case> {
    vec![
        // 6,000 elements in six 1,024-element pages, the last holding 880. Pages 1, 3 and 4
        // are never touched; inside the others, every third chunk is left unwritten.
        Case {
            name: "paged",
            dims: vec![100, 60],
            max: vec![100, 60],
            chunk: vec![1, 1],
            filtered: false,
            write: |i, _| [0, 2, 5].contains(&(i / 1024)) && i % 3 != 1,
        },
        // 30 elements, unpaged, partial edge chunks, a few chunks unwritten.
        Case {
            name: "unpaged",
            dims: vec![18, 28],
            max: vec![18, 28],
            chunk: vec![4, 5],
            filtered: false,
            write: |i, _| i % 7 != 3,
        },
        // Sized by max dims larger than the dims: 5 × 8 chunks in the index, 3 × 3 in use.
        Case {
            name: "maxshape",
            dims: vec![10, 10],
            max: vec![20, 30],
            chunk: vec![4, 4],
            filtered: false,
            write: |_, _| true,
        },
        // Filtered records (deflate in the pipeline, every chunk stored raw with filter mask
        // bit 0 set): 3,000 elements in three pages, the middle one never touched.
        Case {
            name: "filtered",
            dims: vec![50, 60],
            max: vec![50, 60],
            chunk: vec![1, 1],
            filtered: true,
            write: |i, _| i / 1024 != 1 && i % 5 != 0,
        },
    ]
}

/// The chunk of fixed array index `idx`, C order, elements beyond `dims` zero.
fn chunk_bytes(k: usize, case: &Case, idx: u64) -> Vec<u8> {
    let origin: Vec<u64> = common::scaled(idx, &case.chunk, &case.max)
        .iter()
        .zip(&case.chunk)
        .map(|(s, c)| s * c)
        .collect();
    let n: u64 = case.chunk.iter().product();
    let mut out = Vec::new();
    for local in 0..n {
        let mut rem = local;
        let mut coord = vec![0u64; case.chunk.len()];
        for d in (0..case.chunk.len()).rev() {
            coord[d] = origin[d] + rem % case.chunk[d];
            rem /= case.chunk[d];
        }
        let inside = coord.iter().zip(&case.dims).all(|(x, d)| x < d);
        let v = if inside { value(k, &coord) } else { 0 };
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// What h5py must read: the formula where a chunk was written, the fill value 0 elsewhere.
fn expected_values(k: usize, case: &Case, written: &BTreeMap<u64, ChunkRecord>) -> Vec<u8> {
    let total: u64 = case.dims.iter().product();
    let mut out = Vec::new();
    for flat in 0..total {
        let mut rem = flat;
        let mut coord = vec![0u64; case.dims.len()];
        for d in (0..case.dims.len()).rev() {
            coord[d] = rem % case.dims[d];
            rem /= case.dims[d];
        }
        let idx = common::linear(&coord, &case.chunk, &case.max);
        let v = if written.contains_key(&idx) {
            value(k, &coord)
        } else {
            0
        };
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

#[test]
fn libhdf5_reads_fixed_arrays_we_write() {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("farray_written.h5");
    let mut w = FileWriter::create(&path, Format::Latest);
    let sizes = w.sizes();
    let i4 = Datatype::int(4, true, ByteOrder::LittleEndian);
    let cases = cases();
    let mut written: Vec<BTreeMap<u64, ChunkRecord>> = Vec::new();
    let mut codecs = Vec::new();
    for (k, case) in cases.iter().enumerate() {
        let chunk_len = 4 * case.chunk.iter().product::<u64>();
        let codec = if case.filtered {
            RecordCodec::filtered(sizes, chunk_size_len(chunk_len)).unwrap()
        } else {
            RecordCodec::unfiltered(sizes)
        };
        let params = Params::for_chunks(&case.max, &case.chunk, 10).unwrap();
        let mut fa = FixedArray::create(w.cache(), sizes, codec, params).unwrap();
        let mut records = BTreeMap::new();
        // Elements in a scattered order, so pages are created out of order.
        let n = params.nelmts;
        for j in 0..n {
            let idx = (j * 7919) % n;
            if !(case.write)(idx, &params) {
                continue;
            }
            let addr = w.write_chunk(&chunk_bytes(k, case, idx));
            let rec = ChunkRecord {
                addr: Some(addr),
                size: if case.filtered { chunk_len } else { 0 },
                mask: u32::from(case.filtered),
            };
            fa.insert(w.cache(), idx, &rec).unwrap();
            records.insert(idx, rec);
        }
        let layout = ChunkedLayout::new(
            LayoutVersion::V4,
            &case.chunk,
            4,
            ChunkIndex::FixedArray {
                max_dblk_page_nelmts_bits: 10,
            },
            Some(fa.addr()),
        );
        let pipeline = case.filtered.then(|| FilterPipeline {
            version: PipelineVersion::V2,
            filters: vec![Filter::new(PipelineVersion::V2, id::DEFLATE, 0, vec![6])],
        });
        let max: Vec<Option<u64>> = case.max.iter().map(|&m| Some(m)).collect();
        w.add_dataset(
            case.name,
            DatasetSpec::chunked(i4.clone(), &case.dims, &max, &case.chunk, layout, pipeline),
        );
        written.push(records);
        codecs.push((codec, params, fa.addr()));
    }
    assert!(w.cache().flush().unwrap().is_complete());
    check_write_order(&w.cache().take_trace()).unwrap();
    let path = w.finish();

    // Our own reading of the finished file.
    let file = H5File::open(&path);
    for (k, case) in cases.iter().enumerate() {
        let info = file.dataset(&format!("/{}", case.name));
        let (codec, params, addr) = codecs[k];
        assert_eq!(info.record_codec(file.sizes()), codec);
        assert_eq!(info.chunked().address, Some(addr));
        let cache = file.cache(CacheConfig::default());
        let fa = FixedArray::open(&cache, addr, file.sizes(), codec, params).unwrap();
        let got: BTreeMap<u64, ChunkRecord> = fa.to_vec(&cache).unwrap().into_iter().collect();
        assert_eq!(got, written[k], "{}", case.name);
        if fa.geometry().is_paged() {
            // Untouched pages exist only as allocated space: their bits are clear, and reading
            // an element of one reads no page.
            let g = *fa.geometry();
            let touched: Vec<u64> = (0..g.npages)
                .filter(|p| got.keys().any(|i| i / g.page_nelmts == *p))
                .collect();
            assert!(touched.len() < g.npages as usize, "{}", case.name);
            assert_eq!(
                cache.stats().of(h5chunk_farray::PAGE_TYPE).misses as usize,
                touched.len()
            );
        }
    }
    let paged = written[0].keys().filter(|i| *i / 1024 == 5).count();
    assert!(written[0].len() > 1_900 && paged > 500);

    if let Some(h5dump) = interop::h5dump("libhdf5_reads_fixed_arrays_we_write") {
        interop::h5dump_ok(&h5dump, &path);
    }
    let Some(python) = interop::python("libhdf5_reads_fixed_arrays_we_write") else {
        return;
    };
    for (k, case) in cases.iter().enumerate() {
        assert_eq!(
            h5py::values_le(&python, &path, case.name),
            expected_values(k, case, &written[k]),
            "{}: values h5py reads",
            case.name
        );
        let theirs: BTreeMap<u64, ChunkRecord> = h5py::chunks(&python, &path, case.name)
            .into_iter()
            .map(|c| {
                let rec = ChunkRecord {
                    addr: c.addr.map(Addr),
                    size: if case.filtered { c.size } else { 0 },
                    mask: c.mask,
                };
                (common::linear(&c.offset, &case.chunk, &case.max), rec)
            })
            .collect();
        assert_eq!(
            theirs, written[k],
            "{}: chunk records h5py reports",
            case.name
        );
    }

    // libhdf5 keeps modifying what we wrote: it writes into a page we never touched (its
    // bitmap bit and page are libhdf5's to create) and overwrites an element we set; we read
    // both back, and everything else is unchanged.
    let copy = path.with_extension("modified.h5");
    std::fs::copy(&path, &copy).unwrap();
    interop::run_python(
        &python,
        "import sys, h5py\nwith h5py.File(sys.argv[1], 'r+') as f:\n    f['paged'][30, 0] = 42\n    f['paged'][0, 0] = 43\n",
        &[&copy.to_string_lossy()],
    );
    let file = H5File::open(&copy);
    let (codec, params, addr) = codecs[0];
    let cache = file.cache(CacheConfig::default());
    let fa = FixedArray::open(&cache, addr, file.sizes(), codec, params).unwrap();
    let mut got: BTreeMap<u64, ChunkRecord> = fa.to_vec(&cache).unwrap().into_iter().collect();
    let new = got
        .remove(&1800)
        .expect("the chunk libhdf5 added in an untouched page");
    assert_eq!(file.read(new.addr.unwrap(), 4), 42i32.to_le_bytes());
    let first = got.remove(&0).unwrap();
    assert_eq!(file.read(first.addr.unwrap(), 4), 43i32.to_le_bytes());
    let mut want = written[0].clone();
    want.remove(&0);
    assert_eq!(got, want);
}
