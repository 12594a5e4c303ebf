//! The chunk-index paper's append benchmark (§III), shared by the `h5chunk-bench` binary that
//! `cargo xtask bench` runs and by the criterion benches in `benches/`.
//!
//! A *scenario* fixes a dataset's shape, maximum shape and the order in which chunks are
//! appended; an *index* picks the library version bounds (and, for the skip list, the explicit
//! index request) under which the dataset gets that chunk index. Each append extends the
//! growing dimension by one chunk and writes that chunk, as the paper does.
//!
//! | scenario | dataspace (chunks)        | maximum            | append `i` writes chunk     |
//! |----------|---------------------------|--------------------|-----------------------------|
//! | `s1`     | `[0]`                     | `[unlimited]`      | `[i]`                       |
//! | `s2x`    | `[0, 1]`                  | `[unlimited, 1]`   | `[i, 0]`                    |
//! | `s2y`    | `[1, 0]`                  | `[1, unlimited]`   | `[0, i]`                    |
//! | `s3x`    | `[0, 1]`                  | `[unl., unl.]`     | `[i, 0]`                    |
//! | `s3y`    | `[1, 0]`                  | `[unl., unl.]`     | `[0, i]`                    |
//! | `s3alt`  | `[0, 1]`                  | `[unl., unl.]`     | `[i/2, (i+1)/2]` (staircase)|
//! | `fixed`  | `[n]`                     | `[n]`              | `[i]` (no extension)        |
//!
//! Setting 2 of the paper has one unlimited dimension, the one the dataset grows along (its
//! maximum is 1 in the other), so `s2x` and `s2y` differ only in which dimension that is. In
//! `s3alt` even appends extend X and odd appends extend Y, each writing the one chunk at the
//! new corner: one chunk per append like every other scenario, so the datasets stay
//! comparable (the grid grows to about `n/2 x n/2` chunks, of which `n` are written).

use std::path::Path;

use h5chunk::index::AllocTime;
use h5chunk::libver::{Libver, LibverBounds};
use h5chunk::types::TypeDesc;
use h5chunk::{Dataset, File, FileOptions, IndexKind};

/// The dataset's path in every benchmark file.
pub const DATASET: &str = "/data";

/// One of the paper's settings (see the crate docs for the geometry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// Setting 1: 1-D, one unlimited dimension.
    S1,
    /// Setting 2: 2-D, X unlimited, appending along X.
    S2x,
    /// Setting 2: 2-D, Y unlimited, appending along Y.
    S2y,
    /// Setting 3: 2-D, both unlimited, appending along X.
    S3x,
    /// Setting 3: 2-D, both unlimited, appending along Y.
    S3y,
    /// Setting 3: 2-D, both unlimited, appending along X and Y alternately.
    S3alt,
    /// A fixed-shape 1-D dataset written chunk by chunk in order (fixed array, implicit).
    Fixed,
}

impl Scenario {
    /// Every scenario, in the order the table lists them.
    pub const ALL: [Scenario; 7] = [
        Scenario::S1,
        Scenario::S2x,
        Scenario::S2y,
        Scenario::S3x,
        Scenario::S3y,
        Scenario::S3alt,
        Scenario::Fixed,
    ];

    /// The name on the command line and in RESULT lines.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::S1 => "s1",
            Scenario::S2x => "s2x",
            Scenario::S2y => "s2y",
            Scenario::S3x => "s3x",
            Scenario::S3y => "s3y",
            Scenario::S3alt => "s3alt",
            Scenario::Fixed => "fixed",
        }
    }

    /// The scenario called `name`.
    pub fn parse(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The index kinds measured in this scenario: the v1 B-tree everywhere, the extensible
    /// array and skip list with one unlimited dimension, the v2 B-tree with two, the fixed
    /// array and implicit index for a fixed shape.
    pub fn indexes(self) -> &'static [IndexKind] {
        match self {
            Scenario::S1 | Scenario::S2x | Scenario::S2y => &[
                IndexKind::BTree1,
                IndexKind::ExtensibleArray,
                IndexKind::SkipList,
            ],
            Scenario::S3x | Scenario::S3y | Scenario::S3alt => {
                &[IndexKind::BTree1, IndexKind::BTree2]
            }
            Scenario::Fixed => &[
                IndexKind::BTree1,
                IndexKind::FixedArray,
                IndexKind::Implicit,
            ],
        }
    }

    fn rank(self) -> usize {
        match self {
            Scenario::S1 | Scenario::Fixed => 1,
            _ => 2,
        }
    }

    /// The dimension append `i` extends (`None`: the shape is fixed).
    fn grows(self, i: u64) -> Option<usize> {
        match self {
            Scenario::S1 | Scenario::S2x | Scenario::S3x => Some(0),
            Scenario::S2y | Scenario::S3y => Some(1),
            Scenario::S3alt => Some(usize::from(i % 2 == 1)),
            Scenario::Fixed => None,
        }
    }

    /// Scaled coordinates of the chunk append `i` writes, padded with zeros to rank 2 (a
    /// stack array: the benchmark loops allocate nothing).
    pub fn chunk_of(self, i: u64) -> [u64; 2] {
        match self {
            Scenario::S1 | Scenario::Fixed | Scenario::S2x | Scenario::S3x => [i, 0],
            Scenario::S2y | Scenario::S3y => [0, i],
            Scenario::S3alt => [i / 2, i.div_ceil(2)],
        }
    }
}

/// An index kind by its [`IndexKind::name`].
pub fn parse_index(name: &str) -> Option<IndexKind> {
    [
        IndexKind::BTree1,
        IndexKind::Single,
        IndexKind::Implicit,
        IndexKind::FixedArray,
        IndexKind::ExtensibleArray,
        IndexKind::BTree2,
        IndexKind::SkipList,
    ]
    .into_iter()
    .find(|k| k.name() == name)
}

/// The element type and chunk shape for chunks of `chunk_bytes` bytes: one element of 1, 2, 4
/// or 8 bytes when `chunk_bytes` is one of those (the paper's 1-byte chunks are one `u8`),
/// otherwise `chunk_bytes / size` elements of the widest of those sizes that divides it, along
/// the first dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// The scenario.
    pub scenario: Scenario,
    /// Chunks appended.
    pub n: u64,
    /// Bytes per element.
    pub elem: usize,
    /// Chunk dimensions in elements.
    pub chunk: Vec<u64>,
}

impl Geometry {
    /// The geometry of `n` appends of `chunk_bytes`-byte chunks.
    pub fn new(scenario: Scenario, n: u64, chunk_bytes: u64) -> Result<Geometry, String> {
        if chunk_bytes == 0 {
            return Err("--chunk-bytes must be at least 1".into());
        }
        let elem = [8u64, 4, 2, 1]
            .into_iter()
            .find(|s| chunk_bytes.is_multiple_of(*s))
            .unwrap_or(1);
        let mut chunk = vec![chunk_bytes / elem];
        if scenario.rank() == 2 {
            chunk.push(1);
        }
        Ok(Geometry {
            scenario,
            n,
            elem: elem as usize,
            chunk,
        })
    }

    /// Bytes per chunk.
    pub fn chunk_bytes(&self) -> usize {
        self.chunk.iter().product::<u64>() as usize * self.elem
    }

    fn numpy(&self) -> String {
        format!("<u{}", self.elem)
    }

    /// Current dimensions (in elements) before the first append.
    pub fn initial_dims(&self) -> Vec<u64> {
        let c = &self.chunk;
        match self.scenario {
            Scenario::S1 => vec![0],
            Scenario::S2x | Scenario::S3x | Scenario::S3alt => vec![0, c[1]],
            Scenario::S2y | Scenario::S3y => vec![c[0], 0],
            Scenario::Fixed => vec![self.n * c[0]],
        }
    }

    /// Maximum dimensions.
    pub fn max_dims(&self) -> Vec<Option<u64>> {
        let c = &self.chunk;
        match self.scenario {
            Scenario::S1 => vec![None],
            Scenario::S2x => vec![None, Some(c[1])],
            Scenario::S2y => vec![Some(c[0]), None],
            Scenario::S3x | Scenario::S3y | Scenario::S3alt => vec![None, None],
            Scenario::Fixed => vec![Some(self.n * c[0])],
        }
    }

    /// Dimensions after append `i` has extended the dataset.
    pub fn dims_after(&self, i: u64, before: &[u64]) -> Vec<u64> {
        let mut dims = before.to_vec();
        if let Some(d) = self.scenario.grows(i) {
            dims[d] += self.chunk[d];
        }
        dims
    }

    /// Element offset of the first element of the chunk append `i` writes, padded with zeros
    /// to rank 2 (the first `self.chunk.len()` entries are the offset).
    pub fn start_of(&self, i: u64) -> [u64; 2] {
        let mut start = [0u64; 2];
        for ((s, &c), &k) in start
            .iter_mut()
            .zip(&self.scenario.chunk_of(i))
            .zip(&self.chunk)
        {
            *s = c * k;
        }
        start
    }

    /// Dimensions after all `n` appends.
    pub fn final_dims(&self) -> Vec<u64> {
        let mut dims = self.initial_dims();
        if self.scenario == Scenario::S3alt {
            dims[0] = self.n.div_ceil(2) * self.chunk[0];
            dims[1] = (self.n / 2 + 1) * self.chunk[1];
        } else if let Some(d) = self.scenario.grows(0) {
            dims[d] = self.n * self.chunk[d];
        }
        dims
    }
}

/// The byte every element of the chunk written by append `i` starts with.
pub fn marker(i: u64) -> u8 {
    (i % 251) as u8 + 1
}

/// File options that give `kind` (the skip list also needs the dataset builder to ask for it).
pub fn file_options(kind: IndexKind) -> FileOptions {
    let low = match kind {
        IndexKind::BTree1 => Libver::Earliest,
        _ => Libver::Latest,
    };
    FileOptions {
        bounds: LibverBounds::new(low, Libver::Latest).unwrap_or_default(),
        ..FileOptions::default()
    }
}

/// Creates `path` holding the empty benchmark dataset; an error when h5chunk cannot create a
/// dataset with that index (the v2 B-tree adapter, while it is missing) or chose another one.
pub fn create(path: &Path, g: &Geometry, kind: IndexKind) -> Result<(File, Dataset), String> {
    let file = File::create_with(path, file_options(kind))
        .map_err(|e| format!("create {}: {e}", path.display()))?;
    let dtype = TypeDesc::from_numpy(&g.numpy()).map_err(|e| e.to_string())?;
    let mut b = file
        .new_dataset_of(dtype)
        .shape(&g.initial_dims())
        .max_shape(&g.max_dims())
        .chunk(&g.chunk);
    match kind {
        IndexKind::SkipList => b = b.index(IndexKind::SkipList),
        IndexKind::Implicit => b = b.alloc_time(AllocTime::Early),
        _ => {}
    }
    let ds = b
        .create(DATASET)
        .map_err(|e| format!("{} dataset: {e}", kind.name()))?;
    match ds.index_kind() {
        Some(k) if k == kind => Ok((file, ds)),
        other => Err(format!(
            "asked for a {} index, got {:?}",
            kind.name(),
            other.map(IndexKind::name)
        )),
    }
}

/// Append `i`: extend the dataset by one chunk (unless it is fixed) and write that chunk.
/// `dims` holds the current dimensions and is updated in place; `buf` is the chunk buffer,
/// reused between appends. Like `append_bench.c`, the loop itself allocates nothing: the
/// coordinates live on the stack and the caller keeps the buffer.
pub fn append(
    ds: &Dataset,
    g: &Geometry,
    i: u64,
    dims: &mut [u64],
    buf: &mut Vec<u8>,
) -> Result<(), String> {
    if let Some(d) = g.scenario.grows(i) {
        dims[d] += g.chunk[d];
        ds.resize(dims).map_err(|e| format!("append {i}: {e}"))?;
    }
    let start = g.start_of(i);
    let rank = g.chunk.len();
    buf.clear();
    buf.resize(g.chunk_bytes(), marker(i));
    ds.write_slice_raw(buf, &start[..rank], &g.chunk, None)
        .map_err(|e| format!("append {i}: {e}"))
}

/// Reads the one element at the start of the chunk append `i` wrote and checks its marker.
pub fn read_one(ds: &Dataset, g: &Geometry, i: u64) -> Result<(), String> {
    let start = g.start_of(i);
    let rank = g.chunk.len();
    let start = &start[..rank];
    let count = &[1u64; 2][..rank];
    // Into a buffer on the stack, as append_bench.c's H5Dread.
    fn one<T: h5chunk::H5Type + Into<u64>>(
        ds: &Dataset,
        start: &[u64],
        count: &[u64],
    ) -> h5chunk::Result<u64> {
        let mut buf = [T::default()];
        ds.read_slice_into(start, count, None, &mut buf)?;
        Ok(buf[0].into())
    }
    let low = match g.elem {
        1 => one::<u8>(ds, start, count),
        2 => one::<u16>(ds, start, count),
        4 => one::<u32>(ds, start, count),
        _ => one::<u64>(ds, start, count),
    }
    .map_err(|e| format!("read chunk {i}: {e}"))?;
    if low as u8 != marker(i) {
        return Err(format!(
            "chunk {i} reads back {:#x}, wrote {:#x}",
            low as u8,
            marker(i)
        ));
    }
    Ok(())
}

/// Chunks per read of the sequential read: slabs keep its memory bounded at `--full` (a
/// single `H5Dread` of 2,500,000 chunks makes libhdf5 build a per-chunk map of gigabytes).
pub const SLAB_CHUNKS: u64 = 16_384;

/// Reads the chunks of appends `first..first + count` (in one slab along the growing
/// dimension; not for `s3alt`) and checks the first and last markers.
pub fn read_slab(ds: &Dataset, g: &Geometry, first: u64, count: u64) -> Result<(), String> {
    let d = g.scenario.grows(0).unwrap_or(0);
    let mut start = vec![0u64; g.chunk.len()];
    let mut counts = g.chunk.clone();
    start[d] = first * g.chunk[d];
    counts[d] = count * g.chunk[d];
    let bytes: Vec<u8> = match g.elem {
        1 => ds.read_slice::<u8>(&start, &counts, None),
        2 => ds
            .read_slice::<u16>(&start, &counts, None)
            .map(|v| v.iter().map(|&x| x as u8).collect()),
        4 => ds
            .read_slice::<u32>(&start, &counts, None)
            .map(|v| v.iter().map(|&x| x as u8).collect()),
        _ => ds
            .read_slice::<u64>(&start, &counts, None)
            .map(|v| v.iter().map(|&x| x as u8).collect()),
    }
    .map_err(|e| format!("read chunks {first}..{}: {e}", first + count))?;
    let (Some(&a), Some(&z)) = (bytes.first(), bytes.last()) else {
        return Err(format!("read chunks {first}..{}: nothing", first + count));
    };
    if a != marker(first) || z != marker(first + count - 1) {
        return Err(format!(
            "chunks {first}..{} read back other bytes than were written",
            first + count
        ));
    }
    Ok(())
}

/// splitmix64: the same sequence in the Rust and C benchmarks.
#[derive(Clone, Debug)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The first `k` entries of a random permutation of `0..n` (a partial Fisher-Yates shuffle
/// seeded with 42, the same as `append_bench.c`): distinct chunks, so every lookup misses the
/// raw-data chunk cache and needs the index.
pub fn sample(n: u64, k: u64) -> Vec<u64> {
    let mut order: Vec<u64> = (0..n).collect();
    let mut rng = SplitMix(42);
    let k = k.min(n);
    for j in 0..k {
        let r = j + rng.next_u64() % (n - j);
        order.swap(j as usize, r as usize);
    }
    order.truncate(k as usize);
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staircase_writes_one_new_chunk_per_append() {
        let g = Geometry::new(Scenario::S3alt, 5, 1).unwrap();
        let mut dims = g.initial_dims();
        for i in 0..5 {
            dims = g.dims_after(i, &dims);
            let c = Scenario::S3alt.chunk_of(i);
            assert!(c[0] < dims[0] && c[1] < dims[1], "{c:?} outside {dims:?}");
        }
        assert_eq!(dims, g.final_dims());
        assert_eq!(dims, vec![3, 3]);
    }

    #[test]
    fn sample_is_distinct_and_reproducible() {
        let a = sample(100, 40);
        let mut b = a.clone();
        b.sort_unstable();
        b.dedup();
        assert_eq!(b.len(), 40);
        assert_eq!(a, sample(100, 40));
        // The C program checks the same first value.
        assert_eq!(SplitMix(42).next_u64(), 0xbdd7_3226_2feb_6e95);
    }
}

/// The bulk benchmark's dataset (`cargo xtask bench --bulk`): float32 rows of 1,024 values,
/// chunks of 256 rows (1 MiB), values smooth enough that deflate has something to do.
/// Join the scoped `handles`, the first error (or panic, named by `who`) stopping it.
pub fn join_all(
    handles: Vec<std::thread::ScopedJoinHandle<'_, Result<(), String>>>,
    who: &str,
) -> Result<(), String> {
    handles
        .into_iter()
        .try_for_each(|h| h.join().map_err(|_| format!("{who} panicked"))?)
}

pub mod bulk {
    /// Values per row.
    pub const COLS: u64 = 1024;
    /// Rows per chunk: 256 × 1,024 × 4 bytes = 1 MiB.
    pub const ROWS_PER_CHUNK: u64 = 256;

    /// One row's wave, computed once.
    fn wave() -> &'static [f32] {
        static WAVE: std::sync::OnceLock<Vec<f32>> = std::sync::OnceLock::new();
        WAVE.get_or_init(|| (0..COLS).map(|c| (c as f32 * 0.01).sin() * 100.0).collect())
    }

    /// Append row `r`'s values to `out`: a wave along the row shifted by a slow drift down the
    /// rows, as sampled instrument data looks; cheap to compute, so the benchmark times the
    /// library rather than the generator (the C program computes the same floats).
    pub fn row_values(r: u64, out: &mut Vec<f32>) {
        let drift = (r % 4096) as f32 * 0.125;
        out.extend(wave().iter().map(|w| w + drift));
    }
}
