//! The chunk-index conformance suite: every index kind, through the same `ChunkIndex` adapter
//! interface, for ranks 1 to 3 and both h5py's default format (earliest bounds) and the latest.
//! Each case writes, overwrites part, iterates the allocated chunks in order, resizes up and
//! down where the kind allows it, reopens, and compares with what it wrote; then libhdf5 reads
//! the file (h5py values, h5dump), appends where the dataset is extendable, and h5chunk reads
//! libhdf5's result back. The skip list is h5chunk's own format: libhdf5 refuses it, so its
//! cases stop at h5chunk's own checks.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk::index::AllocTime;
use h5chunk::libver::{Libver, LibverBounds};
use h5chunk::{File, FileOptions, IndexKind};
use h5chunk_testkit::{h5py, interop};
use rstest::rstest;

/// (dims, max dims, chunk dims) of a dataset of `rank` for `kind`.
fn geometry(kind: IndexKind, rank: usize) -> (Vec<u64>, Vec<Option<u64>>, Vec<u64>) {
    let base: Vec<u64> = [9u64, 7, 5][..rank].to_vec();
    let chunk: Vec<u64> = [4u64, 3, 2][..rank].to_vec();
    match kind {
        IndexKind::Single => (base.clone(), base.iter().map(|&d| Some(d)).collect(), base),
        IndexKind::Implicit | IndexKind::FixedArray => (
            base.clone(),
            base.iter().map(|&d| Some(d + 3)).collect(),
            chunk,
        ),
        // One unlimited dimension: the last, so rank >= 2 exercises the swizzled index.
        IndexKind::ExtensibleArray | IndexKind::SkipList => {
            let mut max: Vec<Option<u64>> = base.iter().map(|&d| Some(d)).collect();
            max[rank - 1] = None;
            (base, max, chunk)
        }
        IndexKind::BTree2 | IndexKind::BTree1 => (base.clone(), vec![None; rank], chunk),
    }
}

fn value(i: u64) -> i32 {
    (i as i32).wrapping_mul(7919) - 1000
}

fn row_major(dims: &[u64]) -> Vec<i32> {
    (0..dims.iter().product::<u64>()).map(value).collect()
}

#[rstest]
fn conformance(
    #[values(
        IndexKind::BTree1,
        IndexKind::Single,
        IndexKind::Implicit,
        IndexKind::FixedArray,
        IndexKind::ExtensibleArray,
        IndexKind::BTree2,
        IndexKind::SkipList
    )]
    kind: IndexKind,
    #[values(1, 2, 3)] rank: usize,
    #[values(Libver::Earliest, Libver::Latest)] low: Libver,
) {
    let name = format!("conf_{}_{rank}d_{}.h5", kind.name(), low.h5py_name());
    let test = format!("conformance {}", name);
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(&name);
    let opts = FileOptions {
        bounds: LibverBounds::new(low, Libver::Latest).unwrap(),
        ..FileOptions::default()
    };
    let (dims, max, chunk) = geometry(kind, rank);
    let f = File::create_with(&path, opts).unwrap();
    let mut b = f
        .new_dataset::<i32>()
        .shape(&dims)
        .max_shape(&max)
        .chunk(&chunk)
        .index(kind);
    if kind == IndexKind::Implicit {
        b = b.alloc_time(AllocTime::Early);
    }
    let d = b.create("d").unwrap();
    assert_eq!(d.index_kind(), Some(kind), "{test}");

    // Insert everything, then overwrite a corner slab.
    let mut expect = row_major(&dims);
    d.write(&expect).unwrap();
    let count: Vec<u64> = dims.iter().map(|&n| n.min(2)).collect();
    let patch = vec![-7i32; count.iter().product::<u64>() as usize];
    let start: Vec<u64> = dims.iter().zip(&count).map(|(n, c)| n - c).collect();
    d.write_slice(&patch, &start, &count, None).unwrap();
    for_each_index(&count, |local| {
        let g: Vec<u64> = local.iter().zip(&start).map(|(l, s)| l + s).collect();
        expect[flat(&g, &dims)] = -7;
    });
    assert_eq!(d.read::<i32>().unwrap(), expect, "{test}");

    // Iterate: every chunk of the grid, each once, in the index's order.
    let chunks = d.chunks().unwrap();
    let grid: u64 = dims
        .iter()
        .zip(&chunk)
        .map(|(n, c)| n.div_ceil(*c))
        .product();
    let implicit_all: u64 = max
        .iter()
        .zip(&chunk)
        .map(|(m, c)| m.unwrap_or(0).div_ceil(*c))
        .product();
    let want = if kind == IndexKind::Implicit {
        implicit_all
    } else {
        grid
    };
    assert_eq!(chunks.len() as u64, want, "{test}");
    let mut offsets: Vec<_> = chunks.iter().map(|c| c.offset.clone()).collect();
    offsets.sort();
    offsets.dedup();
    assert_eq!(offsets.len() as u64, want, "{test}: a chunk listed twice");

    // Resize down and up where the maximum allows it: the cut part comes back as fill.
    let extendable = max.iter().any(Option::is_none) || kind == IndexKind::FixedArray;
    let mut shape = dims.clone();
    if extendable && kind != IndexKind::Implicit {
        let last = rank - 1;
        let u = if max[last].is_none() || kind == IndexKind::FixedArray {
            last
        } else {
            0
        };
        let mut smaller = dims.clone();
        smaller[u] -= 3;
        d.resize(&smaller).unwrap();
        let mut bigger = smaller.clone();
        bigger[u] += 3;
        d.resize(&bigger).unwrap();
        let mut e2 = vec![0i32; expect.len()];
        for_each_index(&bigger, |g| {
            if g[u] < smaller[u] {
                e2[flat(g, &bigger)] = expect[flat(g, &dims)];
            }
        });
        expect = e2;
        shape = bigger;
        assert_eq!(d.read::<i32>().unwrap(), expect, "{test}: after resizing");
    }
    f.close().unwrap();
    drop(d);

    // Reopen.
    let f = File::open(&path).unwrap();
    let d = f.dataset("d").unwrap();
    assert_eq!(
        (d.shape(), d.index_kind()),
        (shape.clone(), Some(kind)),
        "{test}"
    );
    assert_eq!(d.read::<i32>().unwrap(), expect, "{test}: after reopening");
    drop((d, f));

    if kind == IndexKind::SkipList {
        return;
    }
    let le: Vec<u8> = expect.iter().flat_map(|x| x.to_le_bytes()).collect();
    if let Some(python) = interop::python(&test) {
        assert_eq!(h5py::values_le(&python, &path, "d"), le, "{test}: h5py");
        if max.iter().any(Option::is_none) {
            let u = max.iter().rposition(Option::is_none).unwrap();
            let out = interop::run_python(
                &python,
                r#"
import sys, h5py
u = int(sys.argv[2])
with h5py.File(sys.argv[1], 'r+') as f:
    d = f['d']
    shape = list(d.shape)
    n = shape[u]
    shape[u] += 2
    d.resize(tuple(shape))
    sl = [slice(None)] * len(shape)
    sl[u] = slice(n, n + 2)
    d[tuple(sl)] = 4242
    print(n)
"#,
                &[&path.to_string_lossy(), &u.to_string()],
            );
            let n: u64 = out.trim().parse().unwrap();
            let f = File::open(&path).unwrap();
            let d = f.dataset("d").unwrap();
            let mut grown = shape.clone();
            grown[u] += 2;
            assert_eq!(d.shape(), grown, "{test}");
            let got = d.read::<i32>().unwrap();
            for_each_index(&grown, |g| {
                let want = if g[u] >= n {
                    4242
                } else {
                    expect[flat(g, &shape)]
                };
                assert_eq!(
                    got[flat(g, &grown)],
                    want,
                    "{test}: after h5py appended, at {g:?}"
                );
            });
        }
    }
    if let Some(h5dump) = interop::h5dump(&test) {
        interop::h5dump_ok(&h5dump, &path);
    }
}

fn flat(g: &[u64], dims: &[u64]) -> usize {
    g.iter().zip(dims).fold(0u64, |acc, (x, n)| acc * n + x) as usize
}

fn for_each_index(dims: &[u64], mut f: impl FnMut(&[u64])) {
    if dims.contains(&0) {
        return;
    }
    let mut i = vec![0u64; dims.len()];
    loop {
        f(&i);
        let mut u = dims.len();
        loop {
            if u == 0 {
                return;
            }
            u -= 1;
            i[u] += 1;
            if i[u] < dims[u] {
                break;
            }
            i[u] = 0;
        }
    }
}

/// The chunk-index paper's append scenarios (§III): chunks of one element appended one at a
/// time, 1-D; 2-D with one unlimited dimension growing along X or Y; 2-D with both unlimited,
/// growing along X, Y and alternately; for every index that applies.
#[rstest]
#[case::s1_btree1("s1", IndexKind::BTree1)]
#[case::s1_earray("s1", IndexKind::ExtensibleArray)]
#[case::s1_skiplist("s1", IndexKind::SkipList)]
#[case::s2x_btree1("s2x", IndexKind::BTree1)]
#[case::s2x_earray("s2x", IndexKind::ExtensibleArray)]
#[case::s2y_earray("s2y", IndexKind::ExtensibleArray)]
#[case::s2y_skiplist("s2y", IndexKind::SkipList)]
#[case::s3x_btree2("s3x", IndexKind::BTree2)]
#[case::s3y_btree2("s3y", IndexKind::BTree2)]
#[case::s3alt_btree2("s3alt", IndexKind::BTree2)]
#[case::s3alt_btree1("s3alt", IndexKind::BTree1)]
fn paper_append_scenarios(#[case] scenario: &str, #[case] kind: IndexKind) {
    let n = 600u64;
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("append_{scenario}_{}.h5", kind.name()));
    let bounds = LibverBounds::new(Libver::Latest, Libver::Latest).unwrap();
    let f = File::create_with(
        &path,
        FileOptions {
            bounds,
            ..FileOptions::default()
        },
    )
    .unwrap();
    let (dims, max): (Vec<u64>, Vec<Option<u64>>) = match scenario {
        "s1" => (vec![0], vec![None]),
        "s2x" => (vec![0, 1], vec![None, Some(1)]),
        "s2y" => (vec![1, 0], vec![Some(1), None]),
        _ => (vec![1, 1], vec![None, None]),
    };
    let chunk = vec![1u64; dims.len()];
    let d = f
        .new_dataset::<u8>()
        .shape(&dims)
        .max_shape(&max)
        .chunk(&chunk)
        .index(kind)
        .create("d")
        .unwrap();
    let mut shape = dims.clone();
    let mut written = 0u64;
    for i in 0..n {
        let grow = match scenario {
            "s1" | "s2x" | "s3x" => 0,
            "s2y" | "s3y" => 1,
            _ => (i % 2) as usize,
        };
        let mut start = vec![0u64; shape.len()];
        start[grow] = shape[grow];
        shape[grow] += 1;
        d.resize(&shape).unwrap();
        // Each append extends the dimension by one chunk and writes that chunk's first element
        // (a 1-element chunk in the 1-D and one-unlimited cases).
        let count = vec![1u64; shape.len()];
        d.write_slice(&[(i % 251) as u8], &start, &count, None)
            .unwrap();
        written += 1;
    }
    f.close().unwrap();
    drop(d);
    let f = File::open(&path).unwrap();
    let d = f.dataset("d").unwrap();
    assert_eq!(d.shape(), shape);
    assert_eq!(d.index_kind(), Some(kind));
    let chunks = d.chunks().unwrap();
    assert_eq!(chunks.len() as u64, written, "{scenario}/{}", kind.name());
    let all = d.read::<u8>().unwrap();
    assert_eq!(
        all.iter().map(|&v| u64::from(v)).sum::<u64>(),
        (0..n).map(|i| i % 251).sum::<u64>()
    );
}
