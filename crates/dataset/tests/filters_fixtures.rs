//! Every chunk of every filtered dataset libhdf5 wrote with a version 1 B-tree index (gzip at
//! several levels, shuffle, fletcher32, LZF, and combinations, in pipeline versions 1 and 2)
//! goes back through h5chunk's pipeline to the values the manifest records.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk::filters::Pipeline;
use h5chunk_format::Addr;
use h5chunk_format::btree1::ChunkNode;
use h5chunk_testkit::{H5File, fixtures};

/// (element offsets, address, stored size, filter mask) of every chunk under a v1 B-tree node.
fn chunks(f: &H5File, node: Addr, nd: u8, out: &mut Vec<(Vec<u64>, Addr, u64, u32)>) {
    let (s, k) = (f.sizes(), f.superblock().indexed_storage_k());
    let bytes = f.read(node, ChunkNode::encoded_len(s, k, nd) as u64);
    let n = ChunkNode::decode(&bytes, node, s, k, nd).unwrap();
    for (i, &child) in n.children.iter().enumerate() {
        if n.level > 0 {
            chunks(f, child, nd, out);
        } else {
            let key = &n.keys[i];
            out.push((
                key.offsets.to_vec(),
                child,
                u64::from(key.chunk_size),
                key.filter_mask,
            ));
        }
    }
}

/// The manifest's values as little-endian bytes of `dtype` (`<i4`, `>i8`, `<f8`, ...).
fn expected(dtype: &str, values: &[serde_json::Value]) -> Vec<u8> {
    let size: usize = dtype[2..].parse().unwrap();
    let mut out = Vec::new();
    for v in values {
        let le: Vec<u8> = match &dtype[1..2] {
            "i" => v.as_i64().unwrap().to_le_bytes()[..size].to_vec(),
            "u" => v.as_u64().unwrap().to_le_bytes()[..size].to_vec(),
            "f" if size == 8 => v.as_f64().unwrap().to_le_bytes().to_vec(),
            "f" if size == 4 => (v.as_f64().unwrap() as f32).to_le_bytes().to_vec(),
            other => panic!("dtype {dtype}: {other}"),
        };
        out.extend(le);
    }
    out
}

/// Copy the in-bounds part of a chunk at element `offsets` into the C-order array `whole`.
fn copy_chunk(
    whole: &mut [u8],
    dims: &[u64],
    cdims: &[u64],
    offsets: &[u64],
    data: &[u8],
    elem: usize,
) {
    let rank = dims.len();
    let last = rank - 1;
    let cols = cdims[last].min(dims[last] - offsets[last]) as usize;
    // Odometer over the chunk's rows (every dimension but the last).
    let mut r = vec![0u64; last];
    loop {
        let inside = (0..last).all(|u| offsets[u] + r[u] < dims[u]);
        if inside {
            let (mut src, mut dst) = (0u64, 0u64);
            for u in 0..rank {
                let (local, global) = if u < last {
                    (r[u], offsets[u] + r[u])
                } else {
                    (0, offsets[u])
                };
                src = src * cdims[u] + local;
                dst = dst * dims[u] + global;
            }
            let (src, dst) = (src as usize * elem, dst as usize * elem);
            whole[dst..dst + cols * elem].copy_from_slice(&data[src..src + cols * elem]);
        }
        let mut u = last;
        loop {
            if u == 0 {
                return;
            }
            u -= 1;
            r[u] += 1;
            if r[u] < cdims[u] {
                break;
            }
            r[u] = 0;
        }
    }
}

#[test]
fn filtered_fixture_chunks_decode_to_the_manifest_values() {
    let sets = fixtures::datasets(|_, o| {
        o["index_type"] == "btree1" && o["filters"].as_array().is_some_and(|f| !f.is_empty())
    });
    assert!(sets.len() >= 10, "filtered fixtures: {}", sets.len());
    let mut seen_filters = std::collections::BTreeSet::new();
    for fx in sets {
        let f = H5File::open(&fx.file);
        let d = f.dataset(fx.path());
        let what = format!("{}:{}", fx.file.display(), fx.path());
        let c = d.chunked();
        let elem = c.element_size() as usize;
        let pipeline = Pipeline::new(d.pipeline.as_ref().unwrap(), elem).unwrap();
        for flt in &d.pipeline.as_ref().unwrap().filters {
            seen_filters.insert(flt.id);
        }
        let dims = d.dims();
        let cdims = d.chunk_dims();
        let chunk_bytes = c.chunk_bytes().unwrap() as usize;
        let mut list = Vec::new();
        chunks(&f, c.address.unwrap(), c.dims.len() as u8, &mut list);
        assert_eq!(
            list.len() as u64,
            fx.object["chunks_allocated"].as_u64().unwrap(),
            "{what}"
        );
        // Assemble the whole dataset (C order, file byte order) from its chunks.
        let total: u64 = dims.iter().product();
        let mut whole = vec![0u8; total as usize * elem];
        for (offsets, addr, size, mask) in list {
            let stored = f.read(addr, size);
            let data = pipeline
                .decode(stored, mask, chunk_bytes)
                .unwrap_or_else(|e| panic!("{what}: chunk {offsets:?}: {e}"));
            copy_chunk(&mut whole, &dims, &cdims, &offsets, &data, elem);
        }
        let dtype = fx.object["dtype"].as_str().unwrap();
        if dtype.starts_with('>') {
            for e in whole.chunks_mut(elem) {
                e.reverse();
            }
        }
        let values = fx.object["values"].as_array().unwrap();
        assert_eq!(whole, expected(dtype, values), "{what}");
    }
    for id in [1, 2, 3, 32000] {
        assert!(seen_filters.contains(&id), "no fixture with filter {id}");
    }
}

/// Chunks filtered by h5chunk are read by libhdf5: one single-chunk dataset per filter
/// combination (latest format, layout version 4, filtered single-chunk index), read back by
/// h5py and h5dump.
#[test]
fn libhdf5_reads_chunks_we_filter() {
    use h5chunk_format::message::Filter;
    use h5chunk_format::message::{
        ByteOrder, ChunkIndex, ChunkedLayout, Datatype, FilterPipeline, FilteredChunk,
        LayoutVersion, PipelineVersion, filter_pipeline::id,
    };
    use h5chunk_testkit::{DatasetSpec, FileWriter, Format, h5py, interop};

    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("our_filters.h5");
    let mut w = FileWriter::create(&path, Format::Latest);
    let (rows, cols) = (30u64, 40u64);
    let values: Vec<u8> = (0..rows * cols)
        .flat_map(|i| ((i * 7 / 3) as i32).to_le_bytes())
        .collect();
    /// (filter id, flags, client data)
    type Spec = (u16, u16, &'static [u32]);
    let combos: &[(&str, &[Spec])] = &[
        ("gzip", &[(id::DEFLATE, 1, &[4])]),
        (
            "shuffle_gzip",
            &[(id::SHUFFLE, 1, &[4]), (id::DEFLATE, 1, &[9])],
        ),
        ("fletcher32", &[(id::FLETCHER32, 0, &[])]),
        (
            "shuffle_gzip_fletcher32",
            &[
                (id::SHUFFLE, 1, &[4]),
                (id::DEFLATE, 1, &[1]),
                (id::FLETCHER32, 0, &[]),
            ],
        ),
        ("lzf", &[(id::LZF, 1, &[4, 261, 4800])]),
        (
            "shuffle_lzf",
            &[(id::SHUFFLE, 1, &[4]), (id::LZF, 1, &[4, 261, 4800])],
        ),
    ];
    for (name, filters) in combos {
        let message = FilterPipeline {
            version: PipelineVersion::V2,
            filters: filters
                .iter()
                .map(|&(fid, flags, cd)| Filter::new(PipelineVersion::V2, fid, flags, cd.to_vec()))
                .collect(),
        };
        let (stored, mask) = Pipeline::new(&message, 4).unwrap().encode(&values).unwrap();
        assert_eq!(mask, 0, "{name}");
        let addr = w.write_chunk(&stored);
        let index = ChunkIndex::Single(Some(FilteredChunk {
            size: stored.len() as u64,
            filter_mask: mask,
        }));
        let layout = ChunkedLayout::new(LayoutVersion::V4, &[rows, cols], 4, index, Some(addr));
        let dtype = Datatype::int(4, true, ByteOrder::LittleEndian);
        let spec = DatasetSpec::chunked(
            dtype,
            &[rows, cols],
            &[Some(rows), Some(cols)],
            &[rows, cols],
            layout,
            Some(message),
        );
        w.add_dataset(name, spec);
    }
    let path = w.finish();
    if let Some(python) = interop::python("libhdf5_reads_chunks_we_filter") {
        for (name, _) in combos {
            assert_eq!(h5py::values_le(&python, &path, name), values, "{name}");
        }
    }
    if let Some(h5dump) = interop::h5dump("libhdf5_reads_chunks_we_filter") {
        // Debian's h5dump has no LZF plugin: check the datasets it can decode.
        for (name, _) in combos.iter().filter(|(n, _)| !n.contains("lzf")) {
            let out = std::process::Command::new(&h5dump)
                .args(["-d", name])
                .arg(&path)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "h5dump -d {name}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
