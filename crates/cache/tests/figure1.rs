//! The example of the SWMR design document (§5.4, figure 1): six entries A–F; A is the parent
//! of C, B of D, C of E and F; A–E are dirty, F is clean. D and E may be written first, then B
//! and C, and A last; if C is written before B, A may also precede B.
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
    CacheConfig, Key, MemStorage, MetadataCache, TraceEvent, ViolationKind, WriteTrace,
    check_write_order,
};
use h5chunk_format::Addr;

const NAMES: [char; 6] = ['A', 'B', 'C', 'D', 'E', 'F'];
/// Parent → child, by index into `NAMES`.
const DEPS: [(usize, usize); 4] = [(0, 2), (1, 3), (2, 4), (2, 5)];
const DIRTY: [usize; 5] = [0, 1, 2, 3, 4];

/// Whether `order` (a permutation of the dirty entries A–E) is a flush order the document
/// allows: every child before its parent.
fn allowed(order: &str) -> bool {
    let pos = |c: char| order.find(c);
    DEPS.iter()
        .all(|&(p, c)| match (pos(NAMES[p]), pos(NAMES[c])) {
            (Some(pp), Some(cp)) => cp < pp,
            // F is clean and never written.
            (Some(_), None) => true,
            _ => false,
        })
}

fn permutations(items: &[char]) -> Vec<String> {
    if items.len() <= 1 {
        return vec![items.iter().collect()];
    }
    let mut out = Vec::new();
    for (i, &c) in items.iter().enumerate() {
        let mut rest = items.to_vec();
        rest.remove(i);
        for p in permutations(&rest) {
            out.push(format!("{c}{p}"));
        }
    }
    out
}

/// A cache holding A–F at `addrs` (one address per entry), all written once, then with the
/// figure's dependencies and A–E dirtied again. Returns the cache and the trace so far.
fn figure(addrs: &[u64; 6]) -> (MetadataCache, WriteTrace) {
    let config = CacheConfig {
        record_trace: true,
        ..CacheConfig::default()
    };
    let cache = MetadataCache::new(Arc::new(MemStorage::new()), config).unwrap();
    for (i, &a) in addrs.iter().enumerate() {
        cache.insert(Addr(a), Block::new([i as u8; 4])).unwrap();
    }
    assert!(cache.flush().unwrap().is_complete());
    for &(p, c) in &DEPS {
        cache
            .add_flush_dependency(Addr(addrs[p]), Addr(addrs[c]))
            .unwrap();
    }
    for &i in &DIRTY {
        let mut e = cache.protect::<Block>(Addr(addrs[i]), &()).unwrap();
        e.payload[0] ^= 0x80;
    }
    let trace = cache.take_trace();
    (cache, trace)
}

fn name_of(addrs: &[u64; 6], a: Addr) -> char {
    let i = addrs.iter().position(|&x| Addr(x) == a).unwrap();
    NAMES[i]
}

#[test]
fn exactly_ten_orders_are_allowed_and_each_puts_children_first() {
    let all = permutations(&NAMES[..5]);
    assert_eq!(all.len(), 120);
    let ok: Vec<&String> = all.iter().filter(|o| allowed(o)).collect();
    // Two chains (D<B and E<C<A) interleaved: C(5,2) = 10.
    assert_eq!(ok.len(), 10);
    for o in &ok {
        let pos = |c| o.find(c).unwrap();
        assert!(pos('D') < pos('B') && pos('E') < pos('C') && pos('C') < pos('A'));
    }
    // The document's two narrated schedules.
    assert!(allowed("DEBCA") && allowed("EDCBA"));
    assert!(allowed("ECADB"), "C before B lets A precede B");
}

#[test]
fn blocked_entries_are_those_with_dirty_children() {
    let addrs = [0x100, 0x200, 0x300, 0x400, 0x500, 0x600];
    let (cache, _) = figure(&addrs);
    let blocked: String = (0..6)
        .filter(|&i| cache.is_blocked(Addr(addrs[i])))
        .map(|i| NAMES[i])
        .collect();
    assert_eq!(blocked, "ABC");
    assert!(!cache.is_dirty(Addr(addrs[5])));
    // A blocked entry cannot be evicted.
    assert!(matches!(
        cache.evict(Addr(addrs[0])),
        Err(h5chunk_cache::Error::Blocked { .. })
    ));
}

#[test]
fn every_flush_order_the_cache_produces_is_allowed() {
    // Every assignment of addresses 1..=6 (×0x100) to A–F changes the order in which the cache
    // meets the dirty entries; every resulting flush order must be an allowed one.
    let slots: Vec<char> = "123456".chars().collect();
    let mut seen = BTreeSet::new();
    for perm in permutations(&slots) {
        let addrs: Vec<u64> = perm
            .chars()
            .map(|c| 0x100 * u64::from(c.to_digit(10).unwrap()))
            .collect();
        let addrs: [u64; 6] = addrs.try_into().unwrap();
        let (cache, mut trace) = figure(&addrs);
        let report = cache.flush().unwrap();
        assert!(report.is_complete());
        assert_eq!(report.written, 5);
        let flush = cache.take_trace();
        let order: String = flush
            .written()
            .into_iter()
            .map(|a| name_of(&addrs, a))
            .collect();
        assert!(allowed(&order), "cache flushed in forbidden order {order}");
        trace.extend(flush);
        check_write_order(&trace).unwrap();
        seen.insert(order);
    }
    // The address layout really varies the order: the cache produces every one of the ten
    // allowed orders for some layout.
    assert_eq!(seen.len(), 10, "only {seen:?}");
}

/// The setup events of the figure followed by writes of A–E in `order`.
fn forged(order: &str) -> WriteTrace {
    let key = |c: char| {
        Key::Entry(Addr(
            0x100 * (NAMES.iter().position(|&n| n == c).unwrap() as u64 + 1),
        ))
    };
    let mut events = Vec::new();
    for &(p, c) in &DEPS {
        events.push(TraceEvent::DependencyAdded {
            parent: key(NAMES[p]),
            child: key(NAMES[c]),
        });
    }
    for &i in &DIRTY {
        events.push(TraceEvent::Dirtied(key(NAMES[i])));
    }
    for c in order.chars() {
        events.push(TraceEvent::Written {
            key: key(c),
            type_name: "TBLK",
            len: 16,
            dirty_children: Vec::new(),
        });
    }
    WriteTrace { events }
}

#[test]
fn checker_accepts_exactly_the_allowed_orders() {
    for order in permutations(&NAMES[..5]) {
        let verdict = check_write_order(&forged(&order));
        if allowed(&order) {
            assert_eq!(verdict, Ok(()), "{order} is allowed");
        } else {
            let v = verdict.expect_err(&order);
            assert_eq!(v.kind, ViolationKind::WrittenBeforeChild, "{order}");
        }
    }
    // A named forbidden order: A before its child C.
    let v = check_write_order(&forged("DEABC")).unwrap_err();
    assert_eq!(v.key, Key::Entry(Addr(0x100)));
}

#[test]
fn a_broken_cache_is_caught() {
    let addrs = [0x100, 0x200, 0x300, 0x400, 0x500, 0x600];
    let (cache, mut trace) = figure(&addrs);
    cache.testing_break_flush_order(true);
    let report = cache.flush().unwrap();
    assert!(report.is_complete());
    trace.extend(cache.take_trace());
    let v = check_write_order(&trace).unwrap_err();
    assert_eq!(v.kind, ViolationKind::WrittenBeforeChild);
    // The broken cache itself reported the dirty child it ignored.
    let first = trace.events.iter().find_map(|e| match e {
        TraceEvent::Written { dirty_children, .. } if !dirty_children.is_empty() => Some(()),
        _ => None,
    });
    assert!(first.is_some());
}
