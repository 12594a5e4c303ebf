//! The criterion twin of `cargo xtask bench --bulk`, at 32 MiB: writing (create..close) and
//! reading back a float32 dataset in 1 MiB chunks, unfiltered and with shuffle + deflate 4.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use h5chunk::{Durability, File, FileOptions, FilterSpec};
use h5chunk_benches::bulk::{COLS, ROWS_PER_CHUNK, row_values};

const CHUNKS: u64 = 32;

fn write(path: &std::path::Path, deflate: bool) {
    let opts = FileOptions {
        durability: Durability::Flush,
        ..FileOptions::default()
    };
    let f = File::create_with(path, opts).expect("create");
    let mut b = f
        .new_dataset::<f32>()
        .shape(&[CHUNKS * ROWS_PER_CHUNK, COLS])
        .chunk(&[ROWS_PER_CHUNK, COLS]);
    if deflate {
        b = b.filter(FilterSpec::Shuffle).filter(FilterSpec::Deflate(4));
    }
    let d = b.create("data").expect("dataset");
    let mut buf = Vec::new();
    for s in 0..CHUNKS {
        buf.clear();
        for r in s * ROWS_PER_CHUNK..(s + 1) * ROWS_PER_CHUNK {
            row_values(r, &mut buf);
        }
        d.write_slice(
            &buf,
            &[s * ROWS_PER_CHUNK, 0],
            &[ROWS_PER_CHUNK, COLS],
            None,
        )
        .expect("write");
    }
    drop(d);
    f.close().expect("close");
}

fn bulk(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("h5chunk-bulk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let mut g = c.benchmark_group("bulk");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(CHUNKS << 20));
    for (name, deflate) in [("none", false), ("deflate", true)] {
        let path = dir.join(format!("{name}.h5"));
        g.bench_function(format!("write_{name}"), |b| {
            b.iter(|| write(&path, deflate))
        });
        write(&path, deflate);
        g.bench_function(format!("read_{name}"), |b| {
            b.iter(|| {
                let f = File::open(&path).expect("open");
                let d = f.dataset("data").expect("dataset");
                for s in 0..CHUNKS {
                    let v = d
                        .read_slice::<f32>(&[s * ROWS_PER_CHUNK, 0], &[ROWS_PER_CHUNK, COLS], None)
                        .expect("read");
                    assert_eq!(v.len() as u64, ROWS_PER_CHUNK * COLS);
                }
            })
        });
    }
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bulk);
criterion_main!(benches);
