//! Every decoder checks the sizes a chunk declares against the size the chunk must decode to
//! before they size an allocation, and allocates fallibly: under an address-space limit (as a
//! service or a batch job runs), a chunk whose header was changed to declare 2^40 bytes is a
//! typed `Corrupt` error, and a chunk that may legitimately decode to more than the process
//! may hold is a typed `OutOfMemory` error, never an abort.
//!
//! The chunks are real: h5py and hdf5plugin's reference filters (deflate+shuffle, LZF, LZ4,
//! bitshuffle with LZ4 and Zstandard, Zstandard, bzip2, Blosc with LZ4, zlib, Zstandard and
//! BloscLZ) write them and `read_direct_chunk` returns them (an interop test: skipped with a
//! printed line under plain `cargo test`, required under `cargo xtask test`); and, always, the
//! chunks of this crate's own encoders (LZ4 and bitshuffle byte-identical to hdf5plugin's, see
//! `crates/dataset/tests/plugin_filters.rs`; flate2's zlib, libbzip2's Rust port, rust-zstd).
//! Only their size fields are changed.
//!
//! The test binary holds this one test: it lowers its own address-space limit (`prlimit
//! --pid`) to what it uses plus 1 GiB, which no other test of the process could notice.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk_filters::{FilterError, Pipeline};
use h5chunk_format::message::{Filter, FilterPipeline, PipelineVersion, filter_pipeline::id};
use h5chunk_testkit::interop;

/// Writes one single-chunk dataset (16,384 little-endian u32) per reference filter and prints
/// the data, and per dataset its filters (id and client data) and its stored chunk.
const WRITE: &str = r#"
import sys, json, h5py, hdf5plugin, numpy as np
path = sys.argv[1]
n = 16384
i = np.arange(n)
a = ((i // 7) % 300 + (i % 3)).astype('<u4')
filters = {
    'deflate': dict(compression='gzip', compression_opts=4, shuffle=True),
    'lzf': dict(compression='lzf'),
    'lz4': hdf5plugin.LZ4(nbytes=0),
    'bitshuffle-lz4': hdf5plugin.Bitshuffle(nelems=0, cname='lz4'),
    'bitshuffle-zstd': hdf5plugin.Bitshuffle(nelems=0, cname='zstd', clevel=3),
    'zstd': hdf5plugin.Zstd(clevel=3),
    'bzip2': hdf5plugin.BZip2(blocksize=9),
    'blosc-lz4': hdf5plugin.Blosc(cname='lz4', clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE),
    'blosc-zlib': hdf5plugin.Blosc(cname='zlib', clevel=5, shuffle=hdf5plugin.Blosc.BITSHUFFLE),
    'blosc-zstd': hdf5plugin.Blosc(cname='zstd', clevel=5, shuffle=hdf5plugin.Blosc.NOSHUFFLE),
    'blosc-blosclz': hdf5plugin.Blosc(cname='blosclz', clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE),
}
out = []
with h5py.File(path, 'w') as f:
    for name, opts in filters.items():
        d = f.create_dataset(name, data=a, chunks=(n,), **opts)
        dcpl = d.id.get_create_plist()
        fl = []
        for k in range(dcpl.get_nfilters()):
            fid, flags, cd, _ = dcpl.get_filter(k)
            fl.append([int(fid)] + [int(x) for x in cd])
        mask, raw = d.id.read_direct_chunk((0,))
        assert mask == 0
        out.append({'name': name, 'filters': fl, 'chunk': raw.hex()})
print(json.dumps({'data': a.tobytes().hex(), 'chunks': out}))
"#;

struct Case {
    name: String,
    filters: Vec<(u16, Vec<u32>)>,
    chunk: Vec<u8>,
}

impl Case {
    fn pipeline(&self) -> Pipeline {
        let message = FilterPipeline {
            version: PipelineVersion::V2,
            filters: self
                .filters
                .iter()
                .map(|(fid, cd)| Filter::new(PipelineVersion::V2, *fid, 1, cd.clone()))
                .collect(),
        };
        Pipeline::new(&message, 4).unwrap()
    }

    /// The filter that decodes first (the pipeline's last).
    fn outer(&self) -> u16 {
        self.filters.last().unwrap().0
    }

    /// The chunk with its declared decoded size set to `size` (as far as its header's field
    /// holds it); `None` for the formats that declare no size (deflate, LZF, bzip2).
    fn declaring(&self, size: u64) -> Option<Vec<u8>> {
        let mut c = self.chunk.clone();
        match self.outer() {
            id::LZ4 | id::BITSHUFFLE => c[..8].copy_from_slice(&size.to_be_bytes()),
            id::BLOSC => {
                // The uncompressed size, and the block size with it (one block: its offset
                // fits in the buffer, so the size is what the decoder acts on).
                let n = u32::try_from(size).unwrap_or(u32::MAX);
                c[4..8].copy_from_slice(&n.to_le_bytes());
                c[8..12].copy_from_slice(&n.to_le_bytes());
            }
            id::ZSTD => {
                // The frame header rewritten with an 8-byte content size (Frame_Content_Size
                // flag 3), the rest of the frame as it was.
                let descriptor = c[4];
                let single = descriptor & 0x20 != 0;
                let fcs_len = match descriptor >> 6 {
                    0 => usize::from(single),
                    1 => 2,
                    2 => 4,
                    _ => 8,
                };
                let dict_len = [0, 1, 2, 4][usize::from(descriptor & 3)];
                let at = 5 + usize::from(!single) + dict_len;
                let mut out = c[..4].to_vec();
                out.push(descriptor | 0xC0);
                out.extend_from_slice(&c[5..at]);
                out.extend_from_slice(&size.to_le_bytes());
                out.extend_from_slice(&c[at + fcs_len..]);
                c = out;
            }
            _ => return None,
        }
        Some(c)
    }
}

/// The reference filters' chunks, through h5py and hdf5plugin.
fn reference_cases(python: &std::path::Path, data: &mut Vec<u8>) -> Vec<Case> {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("capped_reference.h5");
    let out = interop::run_python(python, WRITE, &[path.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let hex = |s: &str| -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    };
    *data = hex(v["data"].as_str().unwrap());
    v["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| Case {
            name: format!("hdf5plugin {}", c["name"].as_str().unwrap()),
            filters: c["filters"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    let f: Vec<u32> = f
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| u32::try_from(x.as_u64().unwrap()).unwrap())
                        .collect();
                    (u16::try_from(f[0]).unwrap(), f[1..].to_vec())
                })
                .collect(),
            chunk: hex(c["chunk"].as_str().unwrap()),
        })
        .collect()
}

/// This crate's own encoders' chunks of `data`.
fn own_cases(data: &[u8]) -> Vec<Case> {
    let chunk_cd = u32::try_from(data.len()).unwrap();
    [
        (
            "deflate",
            vec![(id::SHUFFLE, vec![4]), (id::DEFLATE, vec![4])],
        ),
        ("lzf", vec![(id::LZF, vec![4, 261, chunk_cd])]),
        ("lz4", vec![(id::LZ4, vec![0])]),
        (
            "bitshuffle-lz4",
            vec![(id::BITSHUFFLE, vec![0, 4, 4, 0, 2])],
        ),
        (
            "bitshuffle-zstd",
            vec![(id::BITSHUFFLE, vec![0, 4, 4, 0, 3, 3])],
        ),
        ("zstd", vec![(id::ZSTD, vec![3])]),
        ("bzip2", vec![(id::BZIP2, vec![9])]),
    ]
    .into_iter()
    .map(|(name, filters)| {
        let mut case = Case {
            name: format!("h5chunk {name}"),
            filters,
            chunk: Vec::new(),
        };
        let (chunk, mask) = case.pipeline().encode(data).unwrap();
        assert_eq!(mask, 0, "{name}");
        case.chunk = chunk;
        case
    })
    .collect()
}

/// This process's virtual memory now (`VmSize`, bytes).
fn vm_size() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib * 1024
}

#[test]
fn declared_sizes_are_checked_and_allocations_fallible_under_a_memory_limit() {
    let test = "declared_sizes_are_checked_and_allocations_fallible_under_a_memory_limit";
    let mut data: Vec<u8> = (0..16384u32)
        .flat_map(|i| ((i / 7) % 300 + (i % 3)).to_le_bytes())
        .collect();
    let mut cases = Vec::new();
    if let Some(python) = interop::python(test) {
        cases = reference_cases(&python, &mut data);
    }
    cases.extend(own_cases(&data));
    // Each chunk decodes as it is.
    for c in &cases {
        assert_eq!(
            c.pipeline().decode(c.chunk.clone(), 0, data.len()).unwrap(),
            data,
            "{}",
            c.name
        );
    }

    // From here on an allocation of more than 1 GiB fails in this process.
    let cap = vm_size() + (1 << 30);
    let pid = std::process::id().to_string();
    let status = std::process::Command::new("prlimit")
        .args(["--pid", &pid, &format!("--as={cap}")])
        .status()
        .expect("prlimit (util-linux) runs");
    assert!(status.success(), "prlimit --pid {pid} --as={cap}");
    assert!(
        Vec::<u8>::new().try_reserve_exact(3 << 30).is_err(),
        "the address-space limit holds"
    );

    let three_gib: usize = 3 << 30;
    for c in &cases {
        let p = c.pipeline();
        match c.declaring(1 << 40) {
            // A header that declares 2^40 bytes (Blosc's 32-bit field: 4 GiB - 1) for a chunk
            // of 64 KiB: refused before anything is allocated.
            Some(mutant) => {
                let err = p.decode(mutant, 0, data.len()).unwrap_err();
                assert!(
                    matches!(err, FilterError::Corrupt { .. }),
                    "{}: {err}",
                    c.name
                );
                assert!(err.to_string().contains("declares"), "{}: {err}", c.name);
            }
            // No size field: the stream stops at the size asked for (a sixteenth of it).
            None => {
                let err = p.decode(c.chunk.clone(), 0, data.len() / 16).unwrap_err();
                assert!(
                    matches!(err, FilterError::Corrupt { .. }),
                    "{}: {err}",
                    c.name
                );
            }
        }
        // A chunk that may decode to 3 GiB (its header says so, or it declares nothing): the
        // output buffer cannot be had under the limit, and that is a typed error.
        let chunk = c.declaring(3 << 30).unwrap_or_else(|| c.chunk.clone());
        let err = p.decode(chunk, 0, three_gib).unwrap_err();
        assert!(
            matches!(err, FilterError::OutOfMemory { .. }),
            "{}: {err}",
            c.name
        );
    }
}
