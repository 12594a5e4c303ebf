//! Fixed arrays written by libhdf5 (the fixtures of `cargo xtask gen-fixtures`) read back
//! exactly: every chunk record, unpaged and paged (a shorter last page included), unfiltered
//! and filtered (layout v4 and v5 widths), checked against the manifest and, under
//! `cargo xtask test`, against h5py's `chunk_iter` and the values h5py reads.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use std::collections::BTreeMap;

use h5chunk_cache::CacheConfig;
use h5chunk_farray::{FixedArray, Params};
use h5chunk_format::chunk_record::{ChunkRecord, RecordCodec};
use h5chunk_format::message::ChunkIndex;
use h5chunk_testkit::fixtures::{self, Fixture};
use h5chunk_testkit::{H5File, h5py, interop};

fn farray_fixtures() -> Vec<Fixture> {
    // The testkit's reader does not take userblocks; the userblock fixture's array is a small
    // unpaged one, like several others.
    fixtures::datasets(|file, object| {
        object["index_type"] == "farray" && file["userblock_size"].as_u64() == Some(0)
    })
}

/// What one fixture's array holds, by our reading.
struct Read {
    max: Vec<u64>,
    chunk: Vec<u64>,
    chunk_bytes: u64,
    filtered: bool,
    records: BTreeMap<u64, ChunkRecord>,
    paged: bool,
    short_last_page_used: bool,
}

fn read(fx: &Fixture) -> Read {
    let name = format!("{}:{}", fx.file.display(), fx.path());
    let file = H5File::open(&fx.file);
    let sizes = file.sizes();
    let info = file.dataset(fx.path());
    let c = info.chunked();
    let ChunkIndex::FixedArray {
        max_dblk_page_nelmts_bits: bits,
    } = c.index
    else {
        panic!("{name}: not a fixed array: {:?}", c.index)
    };
    let max: Vec<u64> = info
        .max_dims()
        .iter()
        .map(|m| m.expect("fixed arrays have no unlimited dimension"))
        .collect();
    let chunk = info.chunk_dims();
    let codec: RecordCodec = info.record_codec(sizes);
    let params = Params::for_chunks(&max, &chunk, bits).unwrap();
    let mut out = Read {
        max: max.clone(),
        chunk: chunk.clone(),
        chunk_bytes: c.chunk_bytes().unwrap(),
        filtered: codec.is_filtered(),
        records: BTreeMap::new(),
        paged: false,
        short_last_page_used: false,
    };
    let Some(addr) = c.address else {
        return out;
    };
    let cache = file.cache(CacheConfig::default());
    let fa = FixedArray::open(&cache, addr, sizes, codec, params)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let set = fa.to_vec(&cache).unwrap();
    // Element by element, `get` agrees with iteration, and unset elements read as undefined.
    for i in 0..fa.len() {
        let want = set
            .iter()
            .find(|(j, _)| *j == i)
            .map_or(ChunkRecord::default(), |(_, r)| *r);
        assert_eq!(fa.get(&cache, i).unwrap(), want, "{name}: element {i}");
    }
    let g = fa.geometry();
    out.paged = g.is_paged();
    if g.is_paged() {
        let last = g.npages - 1;
        out.short_last_page_used = g.page_nelmts_of(last) < g.page_nelmts
            && set.iter().any(|(i, _)| g.locate(*i).0 == last);
    }
    out.records = set.into_iter().collect();
    out
}

#[test]
fn libhdf5_fixed_arrays_read_back_exactly() {
    let python = interop::python("libhdf5_fixed_arrays_read_back_exactly");
    let (mut paged, mut short_last, mut unpaged, mut filtered, mut checked) = (0, 0, 0, 0, 0);
    for fx in farray_fixtures() {
        let name = format!("{}:{}", fx.file.display(), fx.path());
        let r = read(&fx);
        let allocated = fx.object["chunks_allocated"].as_u64().unwrap();
        assert_eq!(
            r.records.len() as u64,
            allocated,
            "{name}: chunks allocated"
        );
        if let Some(records) = fx.object["chunk_records"].as_array() {
            assert_eq!(records.len(), r.records.len(), "{name}");
            for rec in records {
                let offset: Vec<u64> = rec["offset"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_u64().unwrap())
                    .collect();
                let ours = r.records[&common::linear(&offset, &r.chunk, &r.max)];
                assert_eq!(
                    ours.addr.map(|a| a.get()),
                    rec["address"].as_u64(),
                    "{name}"
                );
                assert_eq!(u64::from(ours.mask), rec["filter_mask"].as_u64().unwrap());
                let size = if r.filtered { ours.size } else { r.chunk_bytes };
                assert_eq!(size, rec["size"].as_u64().unwrap(), "{name}: size");
            }
        }
        if let Some(python) = &python {
            let theirs = h5py::chunks(python, &fx.file, fx.path());
            let mut want = BTreeMap::new();
            for c in theirs {
                let rec = ChunkRecord {
                    addr: c.addr.map(h5chunk_format::Addr),
                    size: if r.filtered { c.size } else { 0 },
                    mask: c.mask,
                };
                want.insert(common::linear(&c.offset, &r.chunk, &r.max), rec);
            }
            assert_eq!(r.records, want, "{name}: records against h5py");
            checked += 1;
        }
        paged += usize::from(r.paged);
        short_last += usize::from(r.short_last_page_used);
        unpaged += usize::from(!r.paged && !r.records.is_empty());
        filtered += usize::from(r.filtered && !r.records.is_empty());
    }
    assert!(paged >= 2, "paged arrays covered: {paged}");
    assert!(short_last >= 2, "shorter last pages in use: {short_last}");
    assert!(unpaged >= 5, "unpaged arrays covered: {unpaged}");
    assert!(filtered >= 4, "filtered arrays covered: {filtered}");
    if python.is_some() {
        assert!(
            checked >= paged + unpaged,
            "checked against h5py: {checked}"
        );
    }
}

/// Values: for every unfiltered fixture, each allocated chunk read through our index (its
/// address, chunk_bytes long) holds exactly the elements h5py reads in that chunk's region.
#[test]
fn libhdf5_chunk_contents_match_h5py_values() {
    let Some(python) = interop::python("libhdf5_chunk_contents_match_h5py_values") else {
        return;
    };
    let mut compared = 0;
    for fx in farray_fixtures() {
        let name = format!("{}:{}", fx.file.display(), fx.path());
        let r = read(&fx);
        if r.filtered {
            continue;
        }
        let file = H5File::open(&fx.file);
        let dims = file.dataset(fx.path()).dims();
        let dtype = fx.object["dtype"].as_str().unwrap();
        let esz = (r.chunk_bytes / r.chunk.iter().product::<u64>()) as usize;
        let big_endian = dtype.starts_with('>');
        let values = h5py::values_le(&python, &fx.file, fx.path());
        for (&idx, rec) in &r.records {
            let bytes = file.read(rec.addr.unwrap(), r.chunk_bytes);
            let origin: Vec<u64> = common::scaled(idx, &r.chunk, &r.max)
                .iter()
                .zip(&r.chunk)
                .map(|(s, c)| s * c)
                .collect();
            let n: u64 = r.chunk.iter().product();
            for local in 0..n {
                // Chunk-local C-order index → element coordinates.
                let mut rem = local;
                let mut coord = vec![0u64; r.chunk.len()];
                for d in (0..r.chunk.len()).rev() {
                    coord[d] = origin[d] + rem % r.chunk[d];
                    rem /= r.chunk[d];
                }
                if coord.iter().zip(&dims).any(|(x, d)| x >= d) {
                    continue; // beyond the current extent (partial edge chunk)
                }
                let global = coord.iter().zip(&dims).fold(0, |acc, (x, d)| acc * d + x) as usize;
                let mut elem = bytes[local as usize * esz..][..esz].to_vec();
                if big_endian {
                    elem.reverse();
                }
                assert_eq!(
                    elem,
                    values[global * esz..][..esz],
                    "{name}: chunk {idx}, element {coord:?}"
                );
            }
            compared += 1;
        }
    }
    assert!(compared > 1122, "chunks compared: {compared}");
}
