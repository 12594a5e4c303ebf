//! `insert_many` is `insert` on each record in order: the same bytes reach the storage, in an
//! order the write-order checker accepts, and the trees read back the same, for appends,
//! scattered keys, replacements and duplicates, over the chunk record classes and a plain one.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use core::cmp::Ordering;

use common::*;
use h5chunk_btree2::{BTree2, ChunkClass, ChunkEntry, Params, RecordClass};
use std::sync::Arc;

use h5chunk_cache::{CacheConfig, MemStorage, MetadataCache, check_write_order};
use h5chunk_format::Addr;
use h5chunk_format::chunk_record::{ChunkRecord, RecordCodec, Scaled};
use proptest::prelude::*;

/// A plain record class: a `u32` key and a `u64` value (12 bytes).
#[derive(Clone, Copy, Debug)]
struct PlainClass;

#[derive(Clone, Debug, PartialEq, Eq)]
struct Plain {
    key: u32,
    value: u64,
}

impl RecordClass for PlainClass {
    type Record = Plain;
    type Key = u32;
    fn tree_type(&self) -> u8 {
        1
    }
    fn record_size(&self) -> usize {
        12
    }
    fn decode(&self, raw: &[u8], _at: Addr) -> h5chunk_format::Result<Plain> {
        Ok(Plain {
            key: u32::from_le_bytes(raw[..4].try_into().unwrap()),
            value: u64::from_le_bytes(raw[4..12].try_into().unwrap()),
        })
    }
    fn encode(&self, r: &Plain, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        out.extend_from_slice(&r.key.to_le_bytes());
        out.extend_from_slice(&r.value.to_le_bytes());
        Ok(())
    }
    fn key<'r>(&self, r: &'r Plain) -> &'r u32 {
        &r.key
    }
    fn compare(&self, key: &u32, r: &Plain) -> Ordering {
        key.cmp(&r.key)
    }
}

/// Columns of the 2-D grids: key ordinal `o` is chunk `(o / W, o % W)`.
const W: u64 = 7;

/// A tree's record class with a way to build the record of key ordinal `o` (ordinals and keys
/// in the same order) carrying the value `v`.
trait Maker: Copy {
    type C: RecordClass<Record = Self::R> + Clone;
    type R: Clone + PartialEq + core::fmt::Debug;
    fn class(self) -> Self::C;
    fn make(self, o: u64, v: u64) -> Self::R;
    /// Small nodes (about ten leaf records), so a few hundred records make a tree of depth 2 or
    /// 3, yet large enough for the split and merge rules at every level.
    fn params(self) -> Params {
        Params {
            node_size: 10 * self.class().record_size() as u32 + 60,
            split_percent: 100,
            merge_percent: 40,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Chunks {
    Unfiltered1,
    Unfiltered2,
    Filtered1,
    Filtered2,
}

impl Maker for Chunks {
    type C = ChunkClass;
    type R = ChunkEntry;
    fn class(self) -> ChunkClass {
        let (codec, rank) = match self {
            Chunks::Unfiltered1 => (RecordCodec::unfiltered(S), 1),
            Chunks::Unfiltered2 => (RecordCodec::unfiltered(S), 2),
            Chunks::Filtered1 => (RecordCodec::filtered(S, 2).unwrap(), 1),
            Chunks::Filtered2 => (RecordCodec::filtered(S, 2).unwrap(), 2),
        };
        ChunkClass::new(codec, rank).unwrap()
    }
    fn make(self, o: u64, v: u64) -> ChunkEntry {
        let scaled = match self {
            Chunks::Unfiltered1 | Chunks::Filtered1 => Scaled::from_slice(&[o]),
            Chunks::Unfiltered2 | Chunks::Filtered2 => Scaled::from_slice(&[o / W, o % W]),
        };
        let filtered = matches!(self, Chunks::Filtered1 | Chunks::Filtered2);
        ChunkEntry {
            scaled,
            record: ChunkRecord {
                addr: Some(Addr(0x10_0000 + v)),
                size: if filtered { v % 60_000 } else { 0 },
                mask: if filtered { (v % 3) as u32 } else { 0 },
            },
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Plains;

impl Maker for Plains {
    type C = PlainClass;
    type R = Plain;
    fn class(self) -> PlainClass {
        PlainClass
    }
    fn make(self, o: u64, v: u64) -> Plain {
        Plain {
            key: o as u32,
            value: v,
        }
    }
}

/// One piece of a batch, in key ordinals.
#[derive(Clone, Debug)]
enum Piece {
    /// `len` keys above everything so far, `step` apart (the common case).
    Append { len: usize, step: u64 },
    /// Keys anywhere in `0..limit`, present or not.
    Scattered(Vec<u64>),
    /// The last key of the batch so far, again (a replacement inside the batch).
    Repeat,
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        6 => (1usize..300, 1u64..3).prop_map(|(len, step)| Piece::Append { len, step }),
        2 => prop::collection::vec(0u64..3_000, 1..30).prop_map(Piece::Scattered),
        1 => Just(Piece::Repeat),
    ]
}

/// One batch: its pieces; whether to open the trees afresh before it (which forgets the
/// cached minimum and maximum, as the dataset crate's adapter does between operations);
/// whether to append one record with a chunk proxy first, which relieving its leaf spreads.
#[derive(Clone, Debug)]
struct Batch {
    pieces: Vec<Piece>,
    reopen: bool,
    proxy: bool,
}

fn batches() -> impl Strategy<Value = Vec<Batch>> {
    prop::collection::vec(
        (
            prop::collection::vec(piece(), 1..6),
            any::<bool>(),
            prop::bool::weighted(0.3),
        )
            .prop_map(|(pieces, reopen, proxy)| Batch {
                pieces,
                reopen,
                proxy,
            }),
        1..6,
    )
}

/// Turn pieces into records, appends continuing above `top` (the highest ordinal so far).
fn materialize<M: Maker>(
    m: M,
    pieces: &[Piece],
    top: &mut Option<u64>,
    serial: &mut u64,
) -> Vec<M::R> {
    let mut ords = Vec::new();
    for p in pieces {
        match p {
            Piece::Append { len, step } => {
                let mut o = top.map_or(0, |t| t + step);
                for _ in 0..*len {
                    ords.push(o);
                    o += step;
                }
            }
            Piece::Scattered(v) => ords.extend(v.iter().copied()),
            Piece::Repeat => ords.extend(ords.last().copied()),
        }
        if let Some(&m) = ords.iter().max() {
            *top = Some(top.map_or(m, |t| t.max(m)));
        }
    }
    ords.into_iter()
        .map(|o| {
            *serial += 1;
            m.make(o, *serial)
        })
        .collect()
}

/// A cache over `storage` with a budget of `max_bytes` (`None`: the default).
fn cache_over(storage: &MemStorage, trace: bool, max_bytes: Option<usize>) -> MetadataCache {
    let cfg = CacheConfig {
        record_trace: trace,
        max_bytes: max_bytes.unwrap_or(CacheConfig::default().max_bytes),
        ..CacheConfig::default()
    };
    let cache = MetadataCache::new(Arc::new(storage.clone()), cfg).unwrap();
    cache.allocator().allocate(64).unwrap();
    cache
}

fn same_as_insert<M: Maker>(m: M, swmr: bool, batches: &[Batch]) -> Result<u16, TestCaseError> {
    same_as_insert_in(m, swmr, None, batches)
}

/// Both trees in caches of `max_bytes`: a small budget makes the caches evict (and write)
/// nodes in the middle of a batch, at different moments on the two sides.
fn same_as_insert_in<M: Maker>(
    m: M,
    swmr: bool,
    max_bytes: Option<usize>,
    batches: &[Batch],
) -> Result<u16, TestCaseError> {
    let (one_storage, many_storage) = (MemStorage::new(), MemStorage::new());
    let one = cache_over(&one_storage, false, max_bytes);
    let many = cache_over(&many_storage, true, max_bytes);
    one.set_swmr_write(swmr);
    many.set_swmr_write(swmr);
    let mut a = BTree2::create(&one, S, m.class(), m.params()).unwrap();
    let mut b = BTree2::create(&many, S, m.class(), m.params()).unwrap();
    let (mut top, mut serial) = (None, 0u64);
    for batch in batches {
        if batch.reopen {
            a = BTree2::open(&one, a.addr(), S, m.class()).unwrap();
            b = BTree2::open(&many, b.addr(), S, m.class()).unwrap();
        }
        let proxies = if batch.proxy {
            let r = materialize(
                m,
                &[Piece::Append { len: 1, step: 1 }],
                &mut top,
                &mut serial,
            );
            let (p, q) = (one.create_proxy(), many.create_proxy());
            prop_assert_eq!(p, q);
            a.insert(&one, r[0].clone(), Some(p)).unwrap();
            b.insert(&many, r[0].clone(), Some(q)).unwrap();
            Some((p, q))
        } else {
            None
        };
        let records = materialize(m, &batch.pieces, &mut top, &mut serial);
        for r in &records {
            a.insert(&one, r.clone(), None).unwrap();
        }
        b.insert_many(&many, &records).unwrap();
        prop_assert_eq!(a.header(), b.header());
        // The same flush dependencies: header -> root, internal node -> children, leaf ->
        // the proxies its records wait for.
        let nodes = a.nodes(&one).unwrap();
        prop_assert_eq!(&nodes, &b.nodes(&many).unwrap());
        for addr in nodes.iter().map(|&(addr, _)| addr).chain([a.addr()]) {
            prop_assert_eq!(
                one.flush_children(addr),
                many.flush_children(addr),
                "children of {:?} (header {:?}) nodes {:?}",
                addr,
                a.addr(),
                &nodes
            );
            prop_assert_eq!(one.flush_parents(addr), many.flush_parents(addr));
        }
        if let Some((p, q)) = proxies {
            one.chunk_written(p).unwrap();
            many.chunk_written(q).unwrap();
        }
        prop_assert!(one.flush().unwrap().is_complete());
        prop_assert!(many.flush().unwrap().is_complete());
        prop_assert_eq!(check_write_order(&many.take_trace()), Ok(()));
        prop_assert!(
            one_storage.to_vec() == many_storage.to_vec(),
            "storage differs"
        );
        prop_assert_eq!(a.to_vec(&one).unwrap(), b.to_vec(&many).unwrap());
    }
    let st = b.validate(&many).unwrap();
    prop_assert_eq!(st.records, b.len());
    Ok(st.depth)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn insert_many_writes_what_insert_writes_chunks(
        batches in batches(),
        which in 0usize..4,
        swmr in prop::bool::weighted(0.2),
    ) {
        let m = [Chunks::Unfiltered1, Chunks::Unfiltered2, Chunks::Filtered1, Chunks::Filtered2][which];
        same_as_insert(m, swmr, &batches)?;
    }

    #[test]
    fn insert_many_writes_what_insert_writes_evicting(batches in batches(), which in 0usize..4) {
        let m = [Chunks::Unfiltered1, Chunks::Unfiltered2, Chunks::Filtered1, Chunks::Filtered2][which];
        // About a dozen nodes.
        let budget = 12 * m.params().node_size as usize;
        same_as_insert_in(m, false, Some(budget), &batches)?;
    }

    #[test]
    fn insert_many_writes_what_insert_writes_plain(
        batches in batches(),
        swmr in prop::bool::weighted(0.2),
    ) {
        same_as_insert(Plains, swmr, &batches)?;
    }
}

#[test]
fn insert_many_reaches_depth_three() {
    // Long appends with a few replacements and scattered keys between them.
    let batches: Vec<Batch> = (0..8)
        .map(|i| Batch {
            pieces: vec![
                Piece::Append { len: 250, step: 1 },
                Piece::Scattered(vec![3, 17 * i, 400 + i]),
                Piece::Repeat,
                Piece::Append { len: 90, step: 2 },
            ],
            reopen: i % 3 == 2,
            proxy: i % 2 == 1,
        })
        .collect();
    for m in [Chunks::Unfiltered1, Chunks::Filtered2] {
        assert!(same_as_insert(m, false, &batches).unwrap() >= 3);
        assert!(same_as_insert(m, true, &batches).unwrap() >= 3);
    }
}

#[test]
fn insert_many_appends_50k() {
    const N: u64 = 50_000;
    let m = Chunks::Unfiltered2;
    let records: Vec<ChunkEntry> = (0..N).map(|i| m.make(i, 4096 * i)).collect();
    let (one_storage, many_storage) = (MemStorage::new(), MemStorage::new());
    let (one, many) = (
        mem_cache(&one_storage, false),
        mem_cache(&many_storage, false),
    );
    let mut a = BTree2::create(&one, S, m.class(), Params::CHUNK_INDEX).unwrap();
    let mut b = BTree2::create(&many, S, m.class(), Params::CHUNK_INDEX).unwrap();
    b.insert_many(&many, &records).unwrap();
    assert_eq!(b.len(), N);
    let st = b.validate(&many).unwrap();
    assert_eq!(st.records, N);
    assert!(st.depth >= 2, "{st:?}");
    check_fill(&b, &st);
    // Appends split a full right-most leaf keeping it full: every leaf but the right-most
    // holds as many records as a split allows (an even split would leave them half full).
    let h = b.header();
    let g = h5chunk_format::btree2::Geometry::new(h, S).unwrap();
    let split = g.level(0).unwrap().max_nrec * u64::from(h.split_percent) / 100;
    assert_eq!(st.min_fill[0], split - 1, "{st:?}");
    assert_eq!(st.nodes[0], N.div_ceil(split), "{st:?}");
    for i in (0..N).step_by(97).chain([N - 1]) {
        assert_eq!(
            b.get(&many, &[i / W, i % W]).unwrap(),
            Some(records[i as usize].clone())
        );
    }
    assert_eq!(b.get(&many, &[N / W + 1, 0]).unwrap(), None);
    // The per-record loop writes the same file.
    for r in &records {
        a.insert(&one, r.clone(), None).unwrap();
    }
    assert_eq!(a.header(), b.header());
    assert!(one.flush().unwrap().is_complete());
    assert!(many.flush().unwrap().is_complete());
    assert!(one_storage.to_vec() == many_storage.to_vec());
}
