//! 100,000-record trees with libhdf5's chunk-index parameters, built in append order and in a
//! random order, checked in full; prints the measured figures.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use std::time::Instant;

use common::*;
use h5chunk_btree2::{BTree2, Params};
use h5chunk_cache::MemStorage;

const N: u64 = 100_000;
const W: u64 = 400; // grid (250, 400)

fn shuffled(n: u64, seed: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).collect();
    let mut x = seed;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}

fn build(order: &[u64], label: &str) {
    let storage = MemStorage::new();
    let cache = mem_cache(&storage, false);
    let mut t = BTree2::create(&cache, S, class2(), Params::CHUNK_INDEX).unwrap();
    let start = Instant::now();
    for &i in order {
        t.try_insert(&cache, entry(i / W, i % W, 0x10_0000 + i))
            .unwrap();
    }
    let insert = start.elapsed();
    let st = t.validate(&cache).unwrap();
    assert_eq!(st.records, N);
    assert!(st.depth >= 2, "{st:?}");
    check_fill(&t, &st);
    let start = Instant::now();
    for i in (0..N).step_by(7) {
        let e = t.get(&cache, &[i / W, i % W]).unwrap().unwrap();
        assert_eq!(e.record.addr.unwrap().0, 0x10_0000 + i);
        let e = t.nth(&cache, i).unwrap().unwrap();
        assert_eq!(&e.scaled[..], &[i / W, i % W]);
    }
    let lookups = start.elapsed();
    let bytes = t.bytes_used(&cache).unwrap();
    assert!(cache.flush().unwrap().is_complete());
    eprintln!(
        "{label}: {N} inserts in {insert:?} ({:.2} us/insert); {} find+nth pairs in {lookups:?}; \
         depth {}, nodes per depth {:?}, fill min {:?} max {:?}, {bytes} bytes",
        insert.as_secs_f64() * 1e6 / N as f64,
        N.div_ceil(7),
        st.depth,
        st.nodes,
        st.min_fill,
        st.max_fill
    );
}

#[test]
fn append_order_100k() {
    let order: Vec<u64> = (0..N).collect();
    build(&order, "append");
}

#[test]
fn random_order_100k() {
    build(&shuffled(N, 0x9e37_79b9_7f4a_7c15), "random");
}
