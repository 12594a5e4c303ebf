//! `File::io_stats`: the requests a file handle made through its storage, and their bytes.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use std::sync::Arc;

use h5chunk::storage::{MemStorage, Storage};
use h5chunk::{FileOptions, OpenOptions};

#[test]
fn io_stats_count_what_reads_and_writes_ask_of_the_storage() {
    let mem = Arc::new(MemStorage::new());
    let f = FileOptions::default()
        .create_on(Arc::clone(&mem) as Arc<dyn Storage>)
        .unwrap();
    let d = f
        .new_dataset::<u32>()
        .shape(&[4096])
        .chunk(&[1024])
        .create("d")
        .unwrap();
    d.write(&(0..4096).collect::<Vec<u32>>()).unwrap();
    let before = f.io_stats();
    f.flush().unwrap();
    let after = f.io_stats();
    // The flush wrote the 16 KiB of chunks and the metadata, at least.
    assert!(after.writes > before.writes, "{before:?} -> {after:?}");
    assert!(
        after.bytes_written >= before.bytes_written + 16384,
        "{before:?} -> {after:?}"
    );
    assert_eq!(after.remote, None);
    f.close().unwrap();
    let len = mem.len().unwrap();

    let f = OpenOptions::read_only()
        .open_on(Arc::clone(&mem) as Arc<dyn Storage>)
        .unwrap();
    let opened = f.io_stats();
    assert!(opened.reads > 0 && opened.bytes_read > 0, "{opened:?}");
    assert_eq!((opened.writes, opened.bytes_written), (0, 0));
    let v: Vec<u32> = f.dataset("d").unwrap().read().unwrap();
    assert_eq!(v.len(), 4096);
    let read = f.io_stats();
    // The four chunks at least, and never more than the file (each byte read once here).
    assert!(
        read.bytes_read >= opened.bytes_read + 16384,
        "{opened:?} -> {read:?}"
    );
    assert!(read.bytes_read <= 2 * len, "{read:?}, file of {len} bytes");
    // Reading again costs no more than the first read (the metadata is cached now).
    let _: Vec<u32> = f.dataset("d").unwrap().read().unwrap();
    let again = f.io_stats();
    assert!(
        again.bytes_read - read.bytes_read <= read.bytes_read - opened.bytes_read,
        "{opened:?} -> {read:?} -> {again:?}"
    );
    assert!(
        again.reads > read.reads,
        "the chunks are read again: {again:?}"
    );
}

/// A memory storage that records the prefetches asked of it.
#[derive(Debug)]
struct Recording {
    inner: MemStorage,
    prefetches: parking_lot::Mutex<Vec<Vec<(h5chunk_format::Addr, u64)>>>,
}

impl Storage for Recording {
    fn read_at(&self, addr: h5chunk_format::Addr, buf: &mut [u8]) -> std::io::Result<()> {
        self.inner.read_at(addr, buf)
    }
    fn write_at(&self, addr: h5chunk_format::Addr, data: &[u8]) -> std::io::Result<()> {
        self.inner.write_at(addr, data)
    }
    fn len(&self) -> std::io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.inner.set_len(len)
    }
    fn sync(&self) -> std::io::Result<()> {
        Ok(())
    }
    fn prefetch(&self, ranges: &[(h5chunk_format::Addr, u64)]) -> std::io::Result<()> {
        self.prefetches.lock().push(ranges.to_vec());
        Ok(())
    }
}

#[test]
fn listing_a_group_asks_for_every_member_header_at_once() {
    let mem = Arc::new(MemStorage::new());
    let f = FileOptions::default()
        .create_on(Arc::clone(&mem) as Arc<dyn Storage>)
        .unwrap();
    let g = f.create_group("beam").unwrap();
    let mut headers = Vec::new();
    for i in 0..12 {
        let d = f
            .new_dataset::<u8>()
            .shape(&[10])
            .chunk(&[10])
            .create(&format!("beam/d{i:02}"))
            .unwrap();
        headers.push(d.object_address());
    }
    g.create_group("sub").unwrap();
    drop(g);
    f.close().unwrap();
    let bytes = {
        let mut b = vec![0u8; mem.len().unwrap() as usize];
        mem.read_at(h5chunk_format::Addr(0), &mut b).unwrap();
        b
    };
    let rec = Arc::new(Recording {
        inner: MemStorage::from_vec(bytes),
        prefetches: parking_lot::Mutex::new(Vec::new()),
    });
    let f = OpenOptions::read_only()
        .open_on(Arc::clone(&rec) as Arc<dyn Storage>)
        .unwrap();
    rec.prefetches.lock().clear();
    let members = f.group("beam").unwrap().members().unwrap();
    assert_eq!(members.len(), 13);
    let asked = rec.prefetches.lock().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let mut got: Vec<u64> = asked[0].iter().map(|(a, _)| a.get()).collect();
    got.sort_unstable();
    let sub = f.group("beam/sub").unwrap().object_address();
    headers.push(sub);
    headers.sort_unstable();
    assert_eq!(got, headers);
}
