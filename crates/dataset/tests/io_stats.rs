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
