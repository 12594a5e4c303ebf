//! A file opened again by the process that has it open shares the open file, as libhdf5
//! shares it: a second `File::open` sees what the first wrote before any flush, `close` closes
//! the file with its last open, and an open the first cannot share (writing a file open
//! read-only, truncating an open file) is refused as such, not as another process's lock.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk::{Error, File};
use h5chunk_testkit::{h5py, interop};

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("open_twice");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn a_second_open_shares_the_first_and_the_last_close_closes() {
    let path = tmp("shared.h5");
    let writer = File::create(&path).unwrap();
    let x = writer
        .new_dataset::<i32>()
        .shape(&[0])
        .max_shape(&[None])
        .chunk(&[4])
        .create("x")
        .unwrap();
    x.append(&[1, 2, 3]).unwrap();
    // Not flushed: only a shared state can see it.
    let reader = File::open(&path).unwrap();
    assert_eq!(
        reader.dataset("x").unwrap().read::<i32>().unwrap(),
        [1, 2, 3]
    );
    // Read-write again: the same state too, both ways.
    let again = File::open_rw(&path).unwrap();
    again.dataset("x").unwrap().append(&[4, 5]).unwrap();
    assert_eq!(x.read::<i32>().unwrap(), [1, 2, 3, 4, 5]);
    // Closing the first open flushes; the others go on writing and reading.
    drop(x);
    writer.close().unwrap();
    again.dataset("x").unwrap().append(&[6]).unwrap();
    again
        .attrs()
        .set_str("note", "written after the first close")
        .unwrap();
    assert_eq!(
        reader.dataset("x").unwrap().read::<i32>().unwrap(),
        [1, 2, 3, 4, 5, 6]
    );
    again.close().unwrap();
    reader.close().unwrap();
    // Closed with its last open: a new open is a fresh one, and libhdf5 reads what all wrote.
    let fresh = File::open_rw(&path).unwrap();
    assert_eq!(
        fresh.attr("note").unwrap().string().unwrap(),
        "written after the first close"
    );
    fresh.close().unwrap();
    if let Some(python) = interop::python("a_second_open_shares_the_first") {
        let le = h5py::values_le(&python, &path, "x");
        let got: Vec<i32> = le
            .chunks_exact(4)
            .map(|b| i32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(got, [1, 2, 3, 4, 5, 6]);
    }
}

#[test]
fn another_name_of_the_same_file_is_the_same_open() {
    let path = tmp("linked.h5");
    let link = tmp("linked-hard.h5");
    let _ = std::fs::remove_file(&link);
    let writer = File::create(&path).unwrap();
    std::fs::hard_link(&path, &link).unwrap();
    writer.create_group("g").unwrap();
    let other = File::open(&link).unwrap();
    assert!(
        other.group("g").is_ok(),
        "the group made before any flush is seen"
    );
    drop(other);
    writer.close().unwrap();
    std::fs::remove_file(&link).unwrap();
}

#[test]
fn opens_the_first_cannot_share_are_refused_by_name() {
    let path = tmp("refused.h5");
    let made = File::create(&path).unwrap();
    made.new_dataset::<u8>()
        .shape(&[2])
        .chunk(&[2])
        .create("d")
        .unwrap()
        .write(&[7u8, 8])
        .unwrap();
    made.close().unwrap();
    let reader = File::open(&path).unwrap();
    // Writing a file this process has open read-only.
    match File::open_rw(&path) {
        Err(Error::AlreadyOpen { how, .. }) => assert!(how.contains("read-only"), "{how}"),
        other => panic!("expected AlreadyOpen, got {other:?}"),
    }
    // Truncating it: refused before anything changes.
    match File::create(&path) {
        Err(e @ Error::AlreadyOpen { .. }) => {
            assert!(
                e.to_string().contains("already open in this process"),
                "{e}"
            )
        }
        other => panic!("expected AlreadyOpen, got {other:?}"),
    }
    assert_eq!(reader.dataset("d").unwrap().read::<u8>().unwrap(), [7, 8]);
    reader.close().unwrap();
    // Once closed, writing is fine again.
    File::open_rw(&path).unwrap().close().unwrap();
}
