//! Property tests: random dependency DAGs, random dirtying, pinning, moves, proxies, eviction
//! under a tiny budget and flushes, checked against a model. The write-order checker must never
//! fire, pinned and blocked entries must never be evicted (the checker verifies every eviction
//! in the trace), and every value must survive eviction, flush and reopening. A deliberately
//! broken flush order must make the checker fire.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use common::Block;
use h5chunk_cache::{
    CacheConfig, CacheEntry, Error, FaultyStorage, Key, MemStorage, MetadataCache, ProxyId,
    ViolationKind, check_write_order,
};
use h5chunk_format::Addr;
use proptest::prelude::*;

const N: usize = 8;
const P: usize = 3;
const MAX_PAYLOAD: usize = 40;
/// Room for about three of the largest images: eviction happens all the time.
const BUDGET: usize = 3 * (MAX_PAYLOAD + 12);

#[derive(Clone, Debug)]
enum Op {
    Modify(usize, u8, usize),
    Read(usize),
    /// Parent entry, child entry or proxy (indices ≥ N are proxies).
    AddDep(usize, usize),
    RemoveDep(usize),
    Pin(usize),
    Unpin(usize),
    ProxyDirty(usize),
    ChunkWritten(usize),
    Flush,
    FlushWith,
    FlushEntry(usize),
    Evict(usize),
    Move(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..N, any::<u8>(), 0..=MAX_PAYLOAD).prop_map(|(i, v, l)| Op::Modify(i, v, l)),
        2 => (0..N).prop_map(Op::Read),
        4 => (0..N, 0..N + P).prop_map(|(p, c)| Op::AddDep(p, c)),
        1 => any::<usize>().prop_map(Op::RemoveDep),
        1 => (0..N).prop_map(Op::Pin),
        1 => (0..N).prop_map(Op::Unpin),
        1 => (0..P).prop_map(Op::ProxyDirty),
        1 => (0..P).prop_map(Op::ChunkWritten),
        1 => Just(Op::Flush),
        1 => Just(Op::FlushWith),
        1 => (0..N).prop_map(Op::FlushEntry),
        1 => (0..N).prop_map(Op::Evict),
        1 => (0..N).prop_map(Op::Move),
    ]
}

struct Model {
    values: Vec<Vec<u8>>,
    addrs: Vec<Addr>,
    proxies: Vec<ProxyId>,
    /// Parent → child, by index (≥ N: proxy).
    edges: BTreeSet<(usize, usize)>,
    pinned: BTreeSet<usize>,
    next_addr: u64,
}

impl Model {
    fn key(&self, k: usize) -> Key {
        if k < N {
            Key::Entry(self.addrs[k])
        } else {
            Key::Proxy(self.proxies[k - N])
        }
    }

    fn descendants(&self, from: usize) -> BTreeSet<usize> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(k) = stack.pop() {
            for &(p, c) in &self.edges {
                if p == k && seen.insert(c) {
                    stack.push(c);
                }
            }
        }
        seen
    }

    /// Whether a dirty proxy lies below `i`: then `i` cannot be written.
    fn waits_for_chunk(&self, cache: &MetadataCache, i: usize) -> bool {
        self.descendants(i)
            .into_iter()
            .any(|k| k >= N && cache.is_dirty(self.key(k)))
    }
}

fn check(c: &MetadataCache, m: &Model, i: usize) {
    let e = c.get::<Block>(m.addrs[i], &()).unwrap();
    assert_eq!(e.read().payload, m.values[i], "entry {i}");
}

fn run(ops: &[Op]) {
    let mem = MemStorage::new();
    let storage = Arc::new(FaultyStorage::new(mem.clone()));
    let config = CacheConfig {
        max_bytes: BUDGET,
        record_trace: true,
        ..CacheConfig::default()
    };
    let c = MetadataCache::new(storage.clone(), config).unwrap();
    let mut m = Model {
        values: (0..N).map(|i| vec![i as u8; 4]).collect(),
        addrs: (0..N).map(|i| Addr(0x100 + 64 * i as u64)).collect(),
        proxies: (0..P).map(|_| c.create_proxy()).collect(),
        edges: BTreeSet::new(),
        pinned: BTreeSet::new(),
        next_addr: 0x1000,
    };
    for i in 0..N {
        c.insert(m.addrs[i], Block::new(m.values[i].clone()))
            .unwrap();
    }

    for op in ops {
        match *op {
            Op::Modify(i, v, l) => {
                let mut e = c.protect::<Block>(m.addrs[i], &()).unwrap();
                e.payload = vec![v; l];
                let len = e.image_len();
                e.resize(len).unwrap();
                m.values[i] = vec![v; l];
            }
            Op::Read(i) => check(&c, &m, i),
            Op::AddDep(p, ch) => {
                let r = c.add_flush_dependency(m.key(p), m.key(ch));
                if p == ch || m.descendants(ch).contains(&p) {
                    assert!(matches!(r, Err(Error::DependencyCycle { .. })), "{r:?}");
                } else if m.edges.contains(&(p, ch)) {
                    assert!(matches!(r, Err(Error::DependencyExists { .. })), "{r:?}");
                } else {
                    r.unwrap();
                    m.edges.insert((p, ch));
                }
            }
            Op::RemoveDep(k) => {
                if !m.edges.is_empty() {
                    let &(p, ch) = m.edges.iter().nth(k % m.edges.len()).unwrap();
                    c.remove_flush_dependency(m.key(p), m.key(ch)).unwrap();
                    m.edges.remove(&(p, ch));
                }
            }
            Op::Pin(i) => {
                c.get::<Block>(m.addrs[i], &()).unwrap();
                let r = c.pin(m.addrs[i]);
                if m.pinned.insert(i) {
                    r.unwrap();
                } else {
                    assert!(matches!(r, Err(Error::Pinned { .. })), "{r:?}");
                }
            }
            Op::Unpin(i) => {
                let r = c.unpin(m.addrs[i]);
                if m.pinned.remove(&i) {
                    r.unwrap();
                } else {
                    assert!(r.is_err());
                }
            }
            Op::ProxyDirty(j) => c.mark_proxy_dirty(m.proxies[j]).unwrap(),
            Op::ChunkWritten(j) => c.chunk_written(m.proxies[j]).unwrap(),
            Op::Flush => {
                let expected: Vec<Addr> = (0..N)
                    .filter(|&i| c.is_dirty(m.addrs[i]) && m.waits_for_chunk(&c, i))
                    .map(|i| m.addrs[i])
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                let report = c.flush().unwrap();
                let mut blocked = report.blocked.clone();
                blocked.sort();
                assert_eq!(blocked, expected);
                for i in 0..N {
                    assert_eq!(c.is_dirty(m.addrs[i]), expected.contains(&m.addrs[i]));
                }
            }
            Op::FlushWith => {
                let mut flusher =
                    |_: &[ProxyId]| -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
                        Ok(())
                    };
                let report = c.flush_with(&mut flusher).unwrap();
                assert!(report.is_complete());
                for i in 0..N {
                    assert!(!c.is_dirty(m.addrs[i]));
                }
                assert!(c.dirty_proxies().is_empty());
            }
            Op::FlushEntry(i) => {
                let expected = !m.waits_for_chunk(&c, i);
                assert_eq!(c.flush_entry(m.addrs[i]).unwrap(), expected);
                if expected {
                    assert!(!c.is_dirty(m.addrs[i]) && !c.is_blocked(m.addrs[i]));
                }
            }
            Op::Evict(i) => {
                let a = m.addrs[i];
                let resident = c.is_resident(a);
                let blocked = c.is_blocked(a);
                let r = c.evict(a);
                if !resident {
                    assert!(matches!(r, Err(Error::NotResident { .. })), "{r:?}");
                } else if m.pinned.contains(&i) {
                    assert!(matches!(r, Err(Error::Pinned { .. })), "{r:?}");
                } else if blocked {
                    assert!(matches!(r, Err(Error::Blocked { .. })), "{r:?}");
                } else {
                    r.unwrap();
                    assert!(!c.is_resident(a));
                }
            }
            Op::Move(i) => {
                let to = Addr(m.next_addr);
                m.next_addr += 64;
                c.get::<Block>(m.addrs[i], &()).unwrap();
                c.move_entry(m.addrs[i], to).unwrap();
                m.addrs[i] = to;
                assert!(c.is_dirty(to));
            }
        }
        for &i in &m.pinned {
            assert!(
                c.is_resident(m.addrs[i]) && c.is_pinned(m.addrs[i]),
                "pinned {i}"
            );
        }
    }

    for i in 0..N {
        check(&c, &m, i);
    }
    let mut flusher =
        |_: &[ProxyId]| -> Result<(), Box<dyn std::error::Error + Send + Sync>> { Ok(()) };
    assert!(c.flush_with(&mut flusher).unwrap().is_complete());
    let trace = c.take_trace();
    if let Err(v) = check_write_order(&trace) {
        panic!("write order violated: {v}");
    }
    // Every image the trace records reached storage in one write, in the same order.
    let logged: Vec<Addr> = storage.writes().iter().map(|w| w.addr).collect();
    assert_eq!(logged, trace.written());
    // Everything survives reopening.
    let reopened = MetadataCache::new(Arc::new(mem), CacheConfig::default()).unwrap();
    for i in 0..N {
        check(&reopened, &m, i);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_operations_keep_the_write_order(ops in prop::collection::vec(op(), 1..60)) {
        run(&ops);
    }

    #[test]
    fn a_broken_flush_order_makes_the_checker_fire(
        len in 2usize..6,
        extra in prop::collection::vec((0usize..6, 0usize..6), 0..4),
    ) {
        let config = CacheConfig { record_trace: true, ..CacheConfig::default() };
        let c = MetadataCache::new(Arc::new(MemStorage::new()), config).unwrap();
        let addr = |i: usize| Addr(64 * i as u64);
        for i in 0..len {
            c.insert(addr(i), Block::new([i as u8; 4])).unwrap();
        }
        // A chain 0 -> 1 -> ... plus random extra edges (cycles are refused and skipped).
        for i in 1..len {
            c.add_flush_dependency(addr(i - 1), addr(i)).unwrap();
        }
        for (p, ch) in extra {
            if p < len && ch < len {
                let _ = c.add_flush_dependency(addr(p), addr(ch));
            }
        }
        c.testing_break_flush_order(true);
        assert!(c.flush().unwrap().is_complete());
        let v = check_write_order(&c.take_trace()).unwrap_err();
        prop_assert_eq!(v.kind, ViolationKind::WrittenBeforeChild);
    }
}
