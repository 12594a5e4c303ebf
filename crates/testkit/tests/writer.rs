//! The writer's files open in libhdf5 and in the testkit's own reader.

use h5chunk_format::Addr;
use h5chunk_format::message::{
    ByteOrder, ChunkIndex, ChunkedLayout, Datatype, Extent, LayoutVersion,
};
use h5chunk_testkit::{DatasetSpec, FileWriter, Format, H5File, h5py, interop};

fn tmp(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// Both formats: a single-chunk dataset holding 0..12 and an unwritten v1 B-tree dataset, plus
/// enough other datasets that the earliest format's root group needs two symbol table nodes.
#[test]
fn written_files_open_in_libhdf5() {
    for (format, name) in [
        (Format::Earliest, "writer_earliest.h5"),
        (Format::Latest, "writer_latest.h5"),
    ] {
        let path = tmp(name);
        let mut w = FileWriter::create(&path, format);
        let i4 = Datatype::int(4, true, ByteOrder::LittleEndian);
        let values: Vec<u8> = (0..12i32).flat_map(|v| v.to_le_bytes()).collect();
        let (version, index, address) = match format {
            Format::Earliest => (LayoutVersion::V3, ChunkIndex::BTreeV1, None),
            Format::Latest => (
                LayoutVersion::V4,
                ChunkIndex::Single(None),
                Some(w.write_chunk(&values)),
            ),
        };
        let layout = ChunkedLayout::new(version, &[3, 4], 4, index, address);
        w.add_dataset(
            "d",
            DatasetSpec::chunked(
                i4.clone(),
                &[3, 4],
                &[Some(3), Some(4)],
                &[3, 4],
                layout,
                None,
            ),
        );
        for k in 0..9 {
            let layout = ChunkedLayout::new(LayoutVersion::V3, &[2], 4, ChunkIndex::BTreeV1, None);
            let spec = DatasetSpec::chunked(i4.clone(), &[4], &[None], &[2], layout, None);
            w.add_dataset(&format!("e{k}"), spec);
        }
        let path = w.finish();

        let f = H5File::open(&path);
        assert_eq!(
            f.superblock().version,
            if format == Format::Earliest { 0 } else { 3 }
        );
        let d = f.dataset("/d");
        assert_eq!(d.dims(), vec![3, 4]);
        assert_eq!(d.chunk_dims(), vec![3, 4]);
        assert_eq!(d.chunked().address, address);
        let e = f.dataset("/e8");
        assert_eq!(e.max_dims(), vec![None]);
        assert_eq!(e.dataspace.max_dims, Some(vec![Extent::Unlimited]));
        assert!(f.read(Addr(0), 8).starts_with(b"\x89HDF"));

        if let Some(h5dump) = interop::h5dump("written_files_open_in_libhdf5") {
            interop::h5dump_ok(&h5dump, &path);
        }
        if let Some(python) = interop::python("written_files_open_in_libhdf5") {
            let expect = if format == Format::Latest {
                values.clone()
            } else {
                vec![0; 48]
            };
            assert_eq!(h5py::values_le(&python, &path, "d"), expect);
            let chunks = h5py::chunks(&python, &path, "d");
            match format {
                Format::Latest => {
                    assert_eq!(chunks.len(), 1);
                    assert_eq!(chunks[0].addr, address.map(|a| a.get()));
                    assert_eq!((chunks[0].offset.clone(), chunks[0].size), (vec![0, 0], 48));
                }
                Format::Earliest => assert!(chunks.is_empty()),
            }
            let out = interop::run_python(
                &python,
                "import sys, h5py\nf = h5py.File(sys.argv[1], 'r')\nprint(sorted(f))",
                &[&path.to_string_lossy()],
            );
            assert!(out.contains("'e8'") && out.contains("'d'"), "{out}");
        }
    }
}

/// The reader finds datasets in every committed fixture that has them.
#[test]
fn reader_finds_fixture_datasets() {
    let fixtures = h5chunk_testkit::fixtures::datasets(|entry, o| {
        entry["userblock_size"] == 0
            && o["layout"] == "chunked"
            && !entry["dense_groups"].as_bool().unwrap_or(false)
    });
    assert!(!fixtures.is_empty());
    for fx in fixtures {
        let f = H5File::open(&fx.file);
        let d = f.dataset(fx.path());
        let shape: Vec<u64> = fx.object["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(d.dims(), shape, "{}:{}", fx.file.display(), fx.path());
        let chunks: Vec<u64> = fx.object["chunks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(d.chunk_dims(), chunks);
        let _ = d.record_codec(f.sizes());
    }
}
