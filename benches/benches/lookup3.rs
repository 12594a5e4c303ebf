//! Throughput of the metadata checksum, which every checksummed block read and write pays.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

fn lookup3(c: &mut Criterion) {
    let mut group = c.benchmark_group("checksum/lookup3");
    for len in [48usize, 512, 4096] {
        let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
        group.throughput(Throughput::Bytes(len as u64));
        group.bench_function(format!("{len}"), |b| {
            b.iter(|| h5chunk_format::checksum::lookup3(black_box(&data)))
        });
    }
    group.finish();
}

criterion_group!(benches, lookup3);
criterion_main!(benches);
