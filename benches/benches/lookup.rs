//! Single-element reads that each need a chunk lookup, per index kind of setting 1 (and the
//! fixed-shape indexes): `lookup/<index>/hot` with the metadata cache warm,
//! `lookup/<index>/cold` after evicting every clean metadata entry before each read.

use criterion::{Criterion, criterion_group, criterion_main};
use h5chunk::File;
use h5chunk_benches::{DATASET, Geometry, Scenario, append, create, read_one, sample};
use std::time::{Duration, Instant};

const N: u64 = 20_000;

fn lookups(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("h5chunk-criterion-lookup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let mut group = c.benchmark_group("lookup");
    group.sample_size(20);
    for scenario in [Scenario::S1, Scenario::S3x, Scenario::Fixed] {
        let g = Geometry::new(scenario, N, 1).expect("geometry");
        for &kind in scenario.indexes() {
            if scenario != Scenario::S1 && kind == h5chunk::IndexKind::BTree1 {
                continue;
            }
            let path = dir.join(format!("{}-{}.h5", scenario.name(), kind.name()));
            let (file, ds) = create(&path, &g, kind).expect("create");
            let mut dims = g.initial_dims();
            let mut buf = Vec::new();
            for i in 0..N {
                append(&ds, &g, i, &mut dims, &mut buf).expect("append");
            }
            drop(ds);
            file.close().expect("close");
            let order = sample(N, N);
            // A fresh handle every N reads: each chunk is read once per handle, so the raw-data
            // chunk cache never answers and every read needs the index. Only the reads are
            // timed (not opening, nor the eviction before a cold read).
            let run = |iters: u64, cold: bool| {
                let mut total = Duration::ZERO;
                let mut done = 0;
                while done < iters {
                    let f = File::open(&path).expect("open");
                    let d = f.dataset(DATASET).expect("dataset");
                    for &i in order.iter().take((iters - done).min(N) as usize) {
                        if cold {
                            f.evict_metadata().expect("evict");
                        }
                        let t = Instant::now();
                        read_one(&d, &g, i).expect("read");
                        total += t.elapsed();
                        done += 1;
                    }
                }
                total
            };
            group.bench_function(format!("{}/hot", kind.name()), |b| {
                b.iter_custom(|iters| run(iters, false))
            });
            group.bench_function(format!("{}/cold", kind.name()), |b| {
                b.iter_custom(|iters| run(iters, true))
            });
        }
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, lookups);
criterion_main!(benches);
