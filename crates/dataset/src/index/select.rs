//! Which chunk index and layout version a new chunked dataset gets, decided exactly as libhdf5
//! decides (`H5D__layout_set_latest_indexing`; docs/format/chunk-index-format.md §2).
//!
//! Layout version 3 always means a version 1 B-tree. From version 4 on:
//!
//! | condition (in order)                                   | index              |
//! |--------------------------------------------------------|--------------------|
//! | exactly one unlimited dimension                        | extensible array   |
//! | two or more unlimited dimensions                       | version 2 B-tree   |
//! | current = maximum = chunk dimensions in every dimension | single chunk       |
//! | no filters and early allocation                        | implicit           |
//! | otherwise                                              | fixed array        |

use h5chunk_format::message::{Btree2Params, ChunkIndex, EarrayParams, SkipListParams};

use crate::error::{Error, Result};
pub use crate::index_kind::IndexKind;
use crate::libver::LibverBounds;

/// When a dataset's chunks are allocated (the fill value message's "space allocation time").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum AllocTime {
    /// All chunks when the dataset is created.
    Early,
    /// All chunks at the first write.
    Late,
    /// Each chunk when it is first written: the default for chunked datasets.
    #[default]
    Incremental,
}

/// What decides a new chunked dataset's index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexRequest<'a> {
    /// Current dimensions.
    pub dims: &'a [u64],
    /// Maximum dimensions; `None` is unlimited.
    pub max_dims: &'a [Option<u64>],
    /// Chunk dimensions.
    pub chunk: &'a [u64],
    /// Whether the filter pipeline is non-empty.
    pub filtered: bool,
    /// Space allocation time.
    pub alloc_time: AllocTime,
    /// `H5Pset_chunk_opts(DONT_FILTER_PARTIAL_BOUND_CHUNKS)`: forces layout version 4.
    pub dont_filter_partial_chunks: bool,
    /// The file's library version bounds.
    pub bounds: LibverBounds,
    /// An index the user asked for instead of libhdf5's choice.
    pub force: Option<IndexKind>,
}

/// The outcome: the layout version and the index with libhdf5's creation parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selection {
    /// Layout message version (3, 4 or 5).
    pub layout_version: u8,
    /// The index kind.
    pub kind: IndexKind,
    /// The index as the layout message stores it (the skip list under h5chunk's own type
    /// number, which libhdf5 refuses).
    pub index: Option<ChunkIndex>,
}

fn index_of(kind: IndexKind) -> Option<ChunkIndex> {
    match kind {
        IndexKind::BTree1 => Some(ChunkIndex::BTreeV1),
        IndexKind::Single => Some(ChunkIndex::Single(None)),
        IndexKind::Implicit => Some(ChunkIndex::Implicit),
        IndexKind::FixedArray => Some(ChunkIndex::FIXED_ARRAY_DEFAULT),
        IndexKind::ExtensibleArray => Some(ChunkIndex::ExtensibleArray(EarrayParams::DEFAULT)),
        IndexKind::BTree2 => Some(ChunkIndex::BTreeV2(Btree2Params::DEFAULT)),
        IndexKind::SkipList => Some(ChunkIndex::SkipList(SkipListParams {
            max_height: 32,
            steps_per_supernode: 64,
        })),
    }
}

/// Decide the layout version and index of a new chunked dataset.
pub fn choose(r: &IndexRequest<'_>) -> Result<Selection> {
    let rank = r.dims.len();
    if rank == 0 || r.max_dims.len() != rank || r.chunk.len() != rank {
        return Err(Error::arg(
            "shape",
            format!(
                "a chunked dataset needs rank >= 1 and as many max and chunk dims as dims \
             ({} dims, {} max dims, {} chunk dims)",
                rank,
                r.max_dims.len(),
                r.chunk.len()
            ),
        ));
    }
    let n_unlim = r.max_dims.iter().filter(|m| m.is_none()).count();
    let auto = {
        let version = r
            .bounds
            .layout_version(r.filtered, r.dont_filter_partial_chunks)?;
        let single = r
            .dims
            .iter()
            .zip(r.max_dims)
            .zip(r.chunk)
            .all(|((&d, &m), &c)| m == Some(d) && d == c);
        let kind = if version == 3 {
            IndexKind::BTree1
        } else if n_unlim == 1 {
            IndexKind::ExtensibleArray
        } else if n_unlim >= 2 {
            IndexKind::BTree2
        } else if single {
            IndexKind::Single
        } else if !r.filtered && r.alloc_time == AllocTime::Early {
            IndexKind::Implicit
        } else {
            IndexKind::FixedArray
        };
        (version, kind)
    };
    let (version, kind) = match r.force {
        None => auto,
        Some(k) if k == auto.1 => auto,
        Some(IndexKind::BTree1) => (3, IndexKind::BTree1),
        Some(k) => {
            // Every other index needs layout version 4 (5 only where the bounds demand it).
            let version = r.bounds.layout_version(r.filtered, true)?;
            let fits = match k {
                IndexKind::ExtensibleArray | IndexKind::SkipList => n_unlim == 1,
                IndexKind::BTree2 => true,
                IndexKind::FixedArray => n_unlim == 0,
                IndexKind::Implicit => n_unlim == 0 && !r.filtered,
                IndexKind::Single => {
                    n_unlim == 0 && r.dims.iter().zip(r.chunk).all(|(&d, &c)| c >= d)
                }
                IndexKind::BTree1 => true,
            };
            if !fits {
                return Err(Error::arg(
                    "index",
                    format!(
                        "a {} index cannot hold a dataset with {n_unlim} unlimited dimension(s){}",
                        k.name(),
                        if r.filtered { " and filters" } else { "" }
                    ),
                ));
            }
            (version, k)
        }
    };
    Ok(Selection {
        layout_version: version,
        kind,
        index: index_of(kind),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::libver::Libver::{self, *};

    fn pick(
        low: Libver,
        dims: &[u64],
        max: &[Option<u64>],
        chunk: &[u64],
        filtered: bool,
        alloc: AllocTime,
    ) -> (u8, IndexKind) {
        let s = choose(&IndexRequest {
            dims,
            max_dims: max,
            chunk,
            filtered,
            alloc_time: alloc,
            dont_filter_partial_chunks: false,
            bounds: LibverBounds::new(low, Latest).unwrap(),
            force: None,
        })
        .unwrap();
        (s.layout_version, s.kind)
    }

    #[test]
    fn the_reference_matrix() {
        use AllocTime::*;
        use IndexKind::*;
        let one_unlim = (&[10u64][..], &[None][..], &[4u64][..]);
        let two_unlim = (&[10u64, 10][..], &[None, None][..], &[4u64, 4][..]);
        let fixed = (&[10u64, 10][..], &[Some(10), Some(10)][..], &[4u64, 4][..]);
        let single = (
            &[10u64, 10][..],
            &[Some(10), Some(10)][..],
            &[10u64, 10][..],
        );
        for low in [Earliest, V18] {
            for (d, m, c) in [one_unlim, two_unlim, fixed, single] {
                assert_eq!(pick(low, d, m, c, false, Incremental), (3, BTree1));
            }
        }
        for low in [V110, V112, V114] {
            assert_eq!(
                pick(
                    low,
                    one_unlim.0,
                    one_unlim.1,
                    one_unlim.2,
                    true,
                    Incremental
                ),
                (4, ExtensibleArray)
            );
            assert_eq!(
                pick(
                    low,
                    two_unlim.0,
                    two_unlim.1,
                    two_unlim.2,
                    false,
                    Incremental
                ),
                (4, BTree2)
            );
            assert_eq!(
                pick(low, fixed.0, fixed.1, fixed.2, false, Incremental),
                (4, FixedArray)
            );
            assert_eq!(
                pick(low, fixed.0, fixed.1, fixed.2, false, Early),
                (4, Implicit)
            );
            assert_eq!(
                pick(low, fixed.0, fixed.1, fixed.2, true, Early),
                (4, FixedArray)
            );
            assert_eq!(
                pick(low, single.0, single.1, single.2, true, Incremental),
                (4, Single)
            );
        }
        assert_eq!(
            pick(
                Latest,
                one_unlim.0,
                one_unlim.1,
                one_unlim.2,
                true,
                Incremental
            ),
            (5, ExtensibleArray)
        );
        assert_eq!(
            pick(Latest, fixed.0, fixed.1, fixed.2, false, Incremental),
            (4, FixedArray)
        );
        // Fixed dims whose maximum exceeds the current size still get a fixed array.
        assert_eq!(
            pick(V110, &[10], &[Some(100)], &[4], false, Incremental),
            (4, FixedArray)
        );
    }

    #[test]
    fn forced_indexes() {
        let req = |force, max: &'static [Option<u64>]| IndexRequest {
            dims: &[10],
            max_dims: max,
            chunk: &[4],
            filtered: false,
            alloc_time: AllocTime::Incremental,
            dont_filter_partial_chunks: false,
            bounds: LibverBounds::default(),
            force: Some(force),
        };
        let s = choose(&req(IndexKind::SkipList, &[None])).unwrap();
        assert_eq!(s.layout_version, 4);
        assert!(matches!(s.index, Some(ChunkIndex::SkipList(_))));
        let s = choose(&req(IndexKind::BTree1, &[None])).unwrap();
        assert_eq!(s.layout_version, 3);
        assert!(matches!(
            choose(&req(IndexKind::FixedArray, &[None])),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(choose(&req(IndexKind::SkipList, &[Some(10)])).is_err());
    }
}
