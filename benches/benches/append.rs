//! Appends one chunk at a time, as the chunk-index paper's §III (and `cargo xtask bench`) does:
//! `append/<scenario>/<index>`, each iteration creating a file and appending 2,000 one-byte
//! chunks, close included. `cargo xtask bench` runs the large counts and compares with libhdf5.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use h5chunk_benches::{Geometry, Scenario, append, create};

const N: u64 = 2_000;

fn appends(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("h5chunk-criterion-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let mut group = c.benchmark_group("append");
    group.sample_size(10).throughput(Throughput::Elements(N));
    for scenario in Scenario::ALL {
        let g = Geometry::new(scenario, N, 1).expect("geometry");
        for &kind in scenario.indexes() {
            let path = dir.join(format!("{}-{}.h5", scenario.name(), kind.name()));
            group.bench_function(format!("{}/{}", scenario.name(), kind.name()), |b| {
                b.iter(|| {
                    let (file, ds) = create(&path, &g, kind).expect("create");
                    let mut dims = g.initial_dims();
                    let mut buf = Vec::new();
                    for i in 0..N {
                        append(&ds, &g, i, &mut dims, &mut buf).expect("append");
                    }
                    drop(ds);
                    file.close().expect("close");
                })
            });
        }
    }
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, appends);
criterion_main!(benches);
