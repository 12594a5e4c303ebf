//! The scenarios: how each one's extent grows, the value every element holds (the oracle),
//! and the boxes a step makes new.

use h5chunk::IndexKind;

/// How a scenario's extent grows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Grow {
    /// Rows appended along dimension 0.
    Dim0,
    /// Columns appended along dimension 1.
    Dim1,
    /// A row or a column, whichever keeps the extent nearer square.
    Alternate,
    /// A fixed extent, filled row by row.
    Fill,
    /// Rows appended along dimension 0, and every fourth step two rows removed instead
    /// (libhdf5's `swmr_remove_*`): chunks dropped and cut under the readers.
    Shrink,
    /// The extent grows by four chunks a step while one whole chunk is written at a scattered
    /// place in it (libhdf5's `swmr_sparse_*`): most chunks stay holes.
    Sparse,
}

impl Grow {
    /// Scenarios whose readers check each element for its value or the fill value over a
    /// window of the extent, and whose extent may shrink (no monotonic checks).
    pub(crate) fn loose(self) -> bool {
        matches!(self, Grow::Shrink | Grow::Sparse)
    }
}

/// One dataset shape and growth pattern.
#[derive(Clone, Debug)]
pub(crate) struct Scenario {
    pub(crate) name: &'static str,
    pub(crate) initial: Vec<u64>,
    pub(crate) max: Vec<Option<u64>>,
    pub(crate) chunk: Vec<u64>,
    pub(crate) grow: Grow,
    /// The chunk index libhdf5 (and h5chunk) choose for it.
    pub(crate) index: IndexKind,
}

pub(crate) const SCENARIOS: &[&str] = &[
    "earray",
    "earray2d",
    "btree2-x",
    "btree2-y",
    "btree2-alt",
    "btree2-3d",
    "farray",
    "skiplist",
    "shrink",
    "sparse",
];

/// The value at `coords`.
pub(crate) fn oracle(coords: &[u64]) -> i64 {
    let v = match coords {
        [i] => i * 1_000_003,
        [i, j] => i * 1_000_003 + j,
        [i, j, k] => i * 1_000_003 + j * 1_009 + k,
        _ => unreachable!("ranks 1 to 3"),
    };
    v as i64
}

/// The fill value of the fixed-array scenario (never an oracle value).
pub(crate) const FILL: i64 = -1;

/// `n` elements in chunks of about `chunk_elems` elements.
pub(crate) fn scenario(name: &str, n: u64, chunk_elems: u64) -> Result<Scenario, String> {
    let e = chunk_elems.max(1);
    let s = (e as f64).sqrt().floor().max(1.0) as u64;
    Ok(match name {
        "earray" => Scenario {
            name: "earray",
            initial: vec![0],
            max: vec![None],
            chunk: vec![e],
            grow: Grow::Dim0,
            index: IndexKind::ExtensibleArray,
        },
        "earray2d" => Scenario {
            name: "earray2d",
            initial: vec![0, 8],
            max: vec![None, Some(8)],
            chunk: vec![(e / 4).max(1), e.min(4)],
            grow: Grow::Dim0,
            index: IndexKind::ExtensibleArray,
        },
        "btree2-x" => Scenario {
            name: "btree2-x",
            initial: vec![0, 8],
            max: vec![None, None],
            chunk: vec![(e / 4).max(1), e.min(4)],
            grow: Grow::Dim0,
            index: IndexKind::BTree2,
        },
        "btree2-y" => Scenario {
            name: "btree2-y",
            initial: vec![8, 0],
            max: vec![None, None],
            chunk: vec![e.min(4), (e / 4).max(1)],
            grow: Grow::Dim1,
            index: IndexKind::BTree2,
        },
        "btree2-alt" => Scenario {
            name: "btree2-alt",
            initial: vec![1, 1],
            max: vec![None, None],
            chunk: vec![s, s],
            grow: Grow::Alternate,
            index: IndexKind::BTree2,
        },
        "btree2-3d" => Scenario {
            name: "btree2-3d",
            initial: vec![0, 4, 4],
            max: vec![None, None, None],
            chunk: vec![(e / 4).max(1), e.min(2), (e / 2).clamp(1, 2)],
            grow: Grow::Dim0,
            index: IndexKind::BTree2,
        },
        // h5chunk's own index (h5py cannot read it): h5chunk readers only.
        "shrink" => Scenario {
            name: "shrink",
            initial: vec![0],
            max: vec![None],
            chunk: vec![e],
            grow: Grow::Shrink,
            index: IndexKind::ExtensibleArray,
        },
        "sparse" => Scenario {
            name: "sparse",
            initial: vec![0],
            max: vec![None],
            chunk: vec![e],
            grow: Grow::Sparse,
            index: IndexKind::ExtensibleArray,
        },
        "skiplist" => Scenario {
            name: "skiplist",
            initial: vec![0],
            max: vec![None],
            chunk: vec![e],
            grow: Grow::Dim0,
            index: IndexKind::SkipList,
        },
        "farray" => {
            let rows = n.div_ceil(8).max(1);
            Scenario {
                name: "farray",
                initial: vec![rows, 8],
                max: vec![Some(rows), Some(8)],
                chunk: vec![(e / 4).max(1), e.min(4)],
                grow: Grow::Fill,
                index: IndexKind::FixedArray,
            }
        }
        other => return Err(format!("unknown scenario {other} (one of {SCENARIOS:?})")),
    })
}

/// The boxes (start, count) that cover `new` minus `old` (both extents from the origin).
pub(crate) fn new_boxes(old: &[u64], new: &[u64]) -> Vec<(Vec<u64>, Vec<u64>)> {
    let mut out = Vec::new();
    for k in 0..new.len() {
        if new[k] <= old[k] {
            continue;
        }
        let mut start = vec![0; new.len()];
        let mut count = new.to_vec();
        count[..k].copy_from_slice(&old[..k]);
        start[k] = old[k];
        count[k] = new[k] - old[k];
        if count.iter().all(|&c| c > 0) {
            out.push((start, count));
        }
    }
    out
}

/// Every coordinate of the box `start`/`count` in C order.
pub(crate) fn for_each_coord(start: &[u64], count: &[u64], mut f: impl FnMut(&[u64])) {
    let total: u64 = count.iter().product();
    let mut c = start.to_vec();
    for _ in 0..total {
        f(&c);
        for d in (0..c.len()).rev() {
            c[d] += 1;
            if c[d] < start[d] + count[d] {
                break;
            }
            c[d] = start[d];
        }
    }
}

/// Whether `got` is a mix of the bytes of `old` and `new` (each byte one or the other): an
/// element read while a write over it was under way, which no read/write system call makes
/// atomic. Only a writer that rewrites visible data in place causes it (libhdf5's does).
pub(crate) fn is_torn(got: i64, old: i64, new: i64) -> bool {
    let (g, o, n) = (got.to_le_bytes(), old.to_le_bytes(), new.to_le_bytes());
    (0..8).all(|i| g[i] == o[i] || g[i] == n[i])
}
