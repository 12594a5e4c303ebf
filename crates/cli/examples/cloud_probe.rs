//! h5chunk's side of `cargo xtask bench --cloud`: in one process, open a remote file
//! (`s3://` with the `AWS_*` environment variables, or `http(s)://`), list it as `h5chunk ls`
//! does (the tree prefetched level by level, then every group's members and every dataset's
//! shape and type), and read the first chunk of one dataset. Prints one `RESULT` line with each
//! phase's seconds and the requests and bytes counted after it (cumulative, from
//! `File::io_stats`), the objects listed and a checksum of the chunk's bytes.
//!
//! `cloud_probe URL DATASET`

use std::time::Instant;

use h5chunk::{File, Group, MemberKind};

/// Objects under `g` (groups and datasets), each dataset's shape and type read as `ls` does.
fn walk(g: &Group) -> Result<u64, h5chunk::Error> {
    let mut n = 0u64;
    for (name, kind) in g.members_in_creation_order()? {
        n = n.saturating_add(1);
        match kind {
            MemberKind::Group => n = n.saturating_add(walk(&g.group(&name)?)?),
            MemberKind::Dataset => {
                let d = g.dataset(&name)?;
                std::hint::black_box((d.shape(), d.dtype(), d.chunk()));
            }
            _ => {}
        }
    }
    Ok(n)
}

fn counts(f: &File) -> (u64, u64, u64) {
    let s = f.io_stats();
    s.remote
        .map_or((0, 0, 0), |r| (r.requests, r.heads, r.bytes))
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, dataset] = args.as_slice() else {
        return Err("usage: cloud_probe URL DATASET".into());
    };
    let t = Instant::now();
    let f = File::open_url(url).map_err(|e| e.to_string())?;
    let open_s = t.elapsed().as_secs_f64();
    let open = counts(&f);

    let t = Instant::now();
    let root = f.group("/").map_err(|e| e.to_string())?;
    root.prefetch_tree();
    let objects = walk(&root).map_err(|e| e.to_string())?;
    let list_s = t.elapsed().as_secs_f64();
    let list = counts(&f);

    let t = Instant::now();
    let d = f.dataset(dataset).map_err(|e| e.to_string())?;
    let shape = d.shape();
    let chunk = d.chunk().unwrap_or_else(|| shape.clone());
    let count: Vec<u64> = chunk.iter().zip(&shape).map(|(c, s)| *c.min(s)).collect();
    let start = vec![0; shape.len()];
    let bytes = d
        .read_slice_raw(&start, &count, None)
        .map_err(|e| e.to_string())?;
    let read_s = t.elapsed().as_secs_f64();
    let read = counts(&f);
    let check: u64 = bytes.iter().map(|&b| u64::from(b)).sum();
    println!(
        "RESULT open_s={open_s:.6} list_s={list_s:.6} read_s={read_s:.6} \
         open_gets={} open_heads={} open_bytes={} list_gets={} list_heads={} list_bytes={} \
         read_gets={} read_heads={} read_bytes={} objects={objects} chunk_bytes={} check={check}",
        open.0,
        open.1,
        open.2,
        list.0,
        list.1,
        list.2,
        read.0,
        read.1,
        read.2,
        bytes.len()
    );
    Ok(())
}
