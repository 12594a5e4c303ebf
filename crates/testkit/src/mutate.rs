//! Impossible files made from real ones: a fixture's dataspace or datatype message changed in
//! place inside its object header, the header re-encoded so that a version 2 header's checksum
//! holds again (the mutation `cargo xtask fuzz` calls "checksum recomputed"). Only the rules
//! of the messages themselves can refuse such a file; the hostile-input tests of the library
//! and of the CLI share these cases.

use std::path::Path;

use h5chunk_format::Addr;
use h5chunk_format::message::{DataspaceVersion, MessageType};

use crate::read::H5File;

/// One mutated file.
#[derive(Clone, Debug)]
pub struct Mutant {
    /// A short name for messages and file names (`<fixture>-<what>`).
    pub name: String,
    /// The dataset whose messages were changed.
    pub dataset: String,
    /// What the mutation breaks, in the words the library's error is expected to use.
    pub expect: &'static str,
    /// The whole file.
    pub bytes: Vec<u8>,
}

/// The file at `path` with the current dimensions of `dataset` replaced by `dims` (the rank
/// kept; maximum dimensions untouched).
pub fn with_dims(path: &Path, dataset: &str, dims: &[u64]) -> Vec<u8> {
    let f = H5File::open(path);
    let info = f.dataset(dataset);
    assert_eq!(info.dataspace.rank(), dims.len(), "{dataset}: rank");
    let l = usize::from(f.sizes().lengths());
    let first = match info.dataspace.version {
        DataspaceVersion::V1 => 8,
        DataspaceVersion::V2 => 4,
    };
    f.with_message_changed(info.header, MessageType::DATASPACE, |body| {
        for (i, d) in dims.iter().enumerate() {
            let at = first + i * l;
            body[at..at + l].copy_from_slice(&d.to_le_bytes()[..l]);
        }
    })
}

/// The file at `path` with the element size of `dataset`'s datatype set to `size`.
pub fn with_type_size(path: &Path, dataset: &str, size: u32) -> Vec<u8> {
    let f = H5File::open(path);
    let info = f.dataset(dataset);
    f.with_message_changed(info.header, MessageType::DATATYPE, |body| {
        body[4..8].copy_from_slice(&size.to_le_bytes());
    })
}

/// The file at `path` with the rank of `dataset`'s dataspace set to `rank` (the message's
/// length kept: a lower rank leaves bytes unread at its end, which libhdf5 ignores too).
pub fn with_rank(path: &Path, dataset: &str, rank: u8) -> Vec<u8> {
    let f = H5File::open(path);
    let info = f.dataset(dataset);
    f.with_message_changed(info.header, MessageType::DATASPACE, |body| {
        body[1] = rank;
    })
}

/// The file at `path` with the first chunk dimension of `dataset`'s version 4 layout message
/// set to `value` (its encoded width kept).
pub fn with_first_chunk_dim(path: &Path, dataset: &str, value: u64) -> Vec<u8> {
    let f = H5File::open(path);
    let info = f.dataset(dataset);
    f.with_message_changed(info.header, MessageType::DATA_LAYOUT, |body| {
        // Version, class, flags, dimensionality, encoded width, then the dimensions.
        assert_eq!(
            (body[0], body[1]),
            (4, 2),
            "{dataset}: a version 4 chunked layout"
        );
        let enc = usize::from(body[4]);
        body[5..5 + enc].copy_from_slice(&value.to_le_bytes()[..enc]);
    })
}

/// The file at `path` with every unset element (an undefined chunk address) of `dataset`'s
/// extensible array that lies at or past the array's `max_idx_set`, in a data block the index
/// block points to, set to the chunk address `garbage`, each block's checksum recomputed. This
/// is the mutation `cargo xtask fuzz` found as a `check` miss: nothing at or past `max_idx_set`
/// was ever set, so libhdf5 never reads such an element (`H5EA_get` answers the fill value).
/// Returns the bytes and how many elements changed.
pub fn with_ea_elements_past_end(path: &Path, dataset: &str, garbage: Addr) -> (Vec<u8>, usize) {
    use h5chunk_format::earray::{DataBlock, Geometry, Header, IndexBlock};
    use h5chunk_format::message::ChunkIndex;
    let f = H5File::open(path);
    let info = f.dataset(dataset);
    let layout = info.chunked();
    assert!(
        matches!(layout.index, ChunkIndex::ExtensibleArray(_)),
        "{dataset}: an extensible-array index"
    );
    assert!(
        !info.is_filtered(),
        "{dataset}: unfiltered (elements are addresses)"
    );
    let sizes = f.sizes();
    let width = usize::from(sizes.offsets());
    let hdr_at = layout.address.expect("the array exists");
    let hbytes = f.read(hdr_at, Header::encoded_len(sizes) as u64);
    let header = Header::decode(&hbytes, hdr_at, sizes).expect("the header decodes");
    let es = header.element_size;
    assert_eq!(
        usize::from(es),
        width,
        "{dataset}: an element is one address"
    );
    let g = Geometry::new(header.params).expect("valid parameters");
    let ib_at = header.index_block.expect("an index block");
    let ibytes = f.read(ib_at, g.index_block_len(sizes, es) as u64);
    let block = IndexBlock::decode(&ibytes, ib_at, sizes, &g, es).expect("decodes");
    let mut bytes = f.read(Addr(0), u64::MAX);
    let mut changed = 0;
    for u in 0..g.iblk_nsblks() {
        let row = *g.row(u).expect("row");
        for d in 0..row.ndblks {
            let Some(at) = block.dblk_addrs[(row.start_dblk + d) as usize] else {
                continue;
            };
            let first =
                u64::from(header.params.idx_blk_elmts) + row.start_idx + d * row.dblk_nelmts;
            let len = g.data_block_image_len(sizes, u, es) as usize;
            let mut db = DataBlock::decode(&f.read(at, len as u64), at, sizes, &g, u, es)
                .expect("the data block decodes");
            for (k, e) in db.elements.chunks_mut(width).enumerate() {
                if first + k as u64 >= header.stats.max_idx_set && e.iter().all(|&b| b == 0xff) {
                    e.copy_from_slice(&garbage.get().to_le_bytes()[..width]);
                    changed += 1;
                }
            }
            let mut image = Vec::new();
            db.encode(sizes, &g, &mut image).expect("encodes");
            assert_eq!(image.len(), len);
            let start = at.get() as usize;
            bytes[start..start + len].copy_from_slice(&image);
        }
    }
    (bytes, changed)
}

/// The impossible dataspaces and datatypes, made from the committed fixtures in `dir` (which
/// the full generated set contains too).
pub fn impossible(dir: &Path) -> Vec<Mutant> {
    let mut out = Vec::new();
    let mut add = |file: &str, dataset: &str, what: &str, expect: &'static str, bytes| {
        out.push(Mutant {
            name: format!("{}-{what}", file.trim_end_matches(".h5")),
            dataset: dataset.to_owned(),
            expect,
            bytes,
        });
    };
    let btree2 = dir.join("index_latest.h5");
    let ds = "/btree2/btree2"; // [10, 12] of i4, both dimensions unlimited
    add(
        "index_latest.h5",
        ds,
        "dim-unlimited-marker",
        "unlimited marker",
        with_dims(&btree2, ds, &[u64::MAX, 12]),
    );
    add(
        "index_latest.h5",
        ds,
        "elements-overflow",
        "elements beyond 2^64",
        with_dims(&btree2, ds, &[1 << 40, 1 << 40]),
    );
    add(
        "index_latest.h5",
        ds,
        "bytes-overflow",
        "beyond 2^64 bytes",
        with_dims(&btree2, ds, &[1 << 62, 1]),
    );
    let sb3 = dir.join("sb3_latest.h5");
    add(
        "sb3_latest.h5",
        "/chunked_u4",
        "elements-overflow",
        "elements beyond 2^64",
        with_dims(&sb3, "/chunked_u4", &[1 << 40, 1 << 40]),
    );
    add(
        "sb3_latest.h5",
        "/chunked_u4",
        "chunk-over-4gib",
        "the limit is 4 GiB",
        with_type_size(&sb3, "/chunked_u4", 1 << 31),
    );
    add(
        "sb3_latest.h5",
        "/chunked_u4",
        "dim-above-maximum",
        "maximum dimension below the current",
        with_dims(&sb3, "/chunked_u4", &[20, 10]),
    );
    add(
        "sb3_latest.h5",
        "/chunked_u4",
        "zero-chunk-dim",
        "invalid chunk dimension 0",
        with_first_chunk_dim(&sb3, "/chunked_u4", 0),
    );
    // The datatype's element size contradicts the layout's copy of it (which sizes the
    // chunks): libhdf5 refuses the dataset ("stored datatype size in chunk layout does not
    // match datatype description"). `cargo xtask fuzz` found these as `check` misses: check
    // said clean, and every read failed on a chunk "shorter than its elements". Both object
    // header versions: a version 1 header has no checksum to recompute.
    add(
        "sb3_latest.h5",
        "/chunked_u4",
        "type-size-contradicts-layout",
        "element size of 4 bytes, the datatype 8",
        with_type_size(&sb3, "/chunked_u4", 8),
    );
    let earliest = dir.join("sb0_earliest.h5");
    add(
        "sb0_earliest.h5",
        "/g1/g2/leaf_i4",
        "type-size-contradicts-layout",
        "element size of 4 bytes, the datatype 16908292",
        with_type_size(&earliest, "/g1/g2/leaf_i4", 0x0102_0004),
    );
    // Chunk dimensions that do not fit the dataset's rank: the 2-D dataset's dataspace made
    // 1-D, its chunk layout still 2-D.
    add(
        "index_latest.h5",
        ds,
        "chunk-rank",
        "chunk dims [3, 4] for dims [10]",
        with_rank(&btree2, ds, 1),
    );
    let sb2 = dir.join("sb2_v108.h5");
    add(
        "sb2_v108.h5",
        "/contiguous",
        "huge-element",
        "contiguous storage of 42 bytes",
        with_type_size(&sb2, "/contiguous", 0xffff_fff0),
    );
    add(
        "sb2_v108.h5",
        "/contiguous",
        "dim-above-maximum",
        "maximum dimension below the current",
        with_dims(&sb2, "/contiguous", &[1 << 40, 3]),
    );
    add(
        "sb2_v108.h5",
        "/compact",
        "huge-element",
        "compact data of 40 bytes",
        with_type_size(&sb2, "/compact", 1 << 31),
    );
    out
}
