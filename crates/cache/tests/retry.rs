//! Verified reads: torn reads (served by FaultyStorage) are retried within the configured
//! bounds; a persistent tear ends in a typed error naming the entry type and address, with the
//! format error as its source; statistics count the retries.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use std::error::Error as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Block, Plain};
use h5chunk_cache::{
    CacheConfig, Error, FaultyStorage, MemStorage, MetadataCache, Storage, TypeStats,
};
use h5chunk_format::Addr;

const AT: Addr = Addr(0x40);
/// 30 payload bytes: a 42-byte image, longer than the 16-byte speculative read, so each attempt
/// reads twice.
const PAYLOAD: [u8; 30] = [7; 30];

/// A storage holding one written block at `AT`, behind a FaultyStorage.
fn written() -> Arc<FaultyStorage<MemStorage>> {
    let mem = MemStorage::new();
    let writer = MetadataCache::new(Arc::new(mem.clone()), CacheConfig::default()).unwrap();
    writer.insert(AT, Block::new(PAYLOAD)).unwrap();
    assert!(writer.flush().unwrap().is_complete());
    Arc::new(FaultyStorage::new(mem))
}

fn reader(storage: &Arc<FaultyStorage<MemStorage>>, attempts: u32) -> MetadataCache {
    let config = CacheConfig {
        read_attempts: attempts,
        retry_initial_backoff: Duration::from_micros(1),
        retry_max_backoff: Duration::from_micros(100),
        ..CacheConfig::default()
    };
    MetadataCache::new(storage.clone(), config).unwrap()
}

fn tblk(cache: &MetadataCache) -> TypeStats {
    cache.stats().of("TBLK")
}

#[test]
fn a_transient_tear_is_retried_and_succeeds() {
    let storage = written();
    let cache = reader(&storage, 5);
    // Both reads of the first attempt come back torn; the second attempt is clean.
    storage.tear_reads(AT, Block::len_for(PAYLOAD.len()) as u64, 2);
    let e = cache.get::<Block>(AT, &()).unwrap();
    assert_eq!(e.read().payload, PAYLOAD);
    assert_eq!(storage.torn_reads(), 2);
    let st = tblk(&cache);
    assert_eq!(
        (st.misses, st.retries, st.reads, st.read_failures),
        (1, 1, 4, 0)
    );
    assert_eq!(st.bytes_read, 2 * (16 + 42));
    // Now resident: a hit costs no I/O.
    cache.get::<Block>(AT, &()).unwrap();
    let st = tblk(&cache);
    assert_eq!((st.hits, st.reads), (1, 4));
    assert_eq!(st.reads_per_lookup(), 2.0);
}

#[test]
fn a_persistent_tear_fails_within_the_bound_with_a_typed_error() {
    let storage = written();
    let cache = reader(&storage, 5);
    storage.tear_reads(AT, 42, u64::MAX);
    let err = cache.get::<Block>(AT, &()).unwrap_err();
    match &err {
        Error::Read {
            type_name,
            addr,
            attempts,
            source,
        } => {
            assert_eq!((*type_name, *addr, *attempts), ("TBLK", AT, 5));
            assert!(matches!(
                source,
                h5chunk_format::Error::ChecksumMismatch {
                    structure: "TBLK",
                    ..
                }
            ));
        }
        other => panic!("expected a read error, got {other:?}"),
    }
    // The format error is reachable through source().
    let src = err.source().unwrap();
    assert!(src.downcast_ref::<h5chunk_format::Error>().is_some());
    assert!(err.to_string().contains("TBLK @ 0x40"));
    let st = tblk(&cache);
    assert_eq!((st.retries, st.read_failures, st.reads), (4, 1, 10));
    assert!(!cache.is_resident(AT));
    // Once the tear is gone, the same cache reads the block.
    storage.clear_tears();
    assert_eq!(cache.get::<Block>(AT, &()).unwrap().read().payload, PAYLOAD);
}

#[test]
fn the_default_is_one_attempt_and_swmr_readers_get_a_hundred() {
    assert_eq!(CacheConfig::default().read_attempts, 1);
    assert_eq!(CacheConfig::swmr_reader().read_attempts, 100);

    let storage = written();
    let plain = MetadataCache::new(storage.clone(), CacheConfig::default()).unwrap();
    storage.tear_reads(AT, 42, 2);
    assert!(matches!(
        plain.get::<Block>(AT, &()),
        Err(Error::Read { attempts: 1, .. })
    ));
    assert_eq!(tblk(&plain).retries, 0);

    let swmr = MetadataCache::new(storage.clone(), CacheConfig::swmr_reader()).unwrap();
    storage.tear_reads(AT, 42, 2);
    swmr.get::<Block>(AT, &()).unwrap();
    assert_eq!(tblk(&swmr).retries, 1);
}

#[test]
fn total_retry_time_is_capped() {
    let storage = written();
    let config = CacheConfig {
        read_attempts: u32::MAX,
        retry_initial_backoff: Duration::from_micros(100),
        retry_max_backoff: Duration::from_millis(5),
        retry_max_total: Duration::from_millis(50),
        ..CacheConfig::default()
    };
    let cache = MetadataCache::new(storage.clone(), config).unwrap();
    storage.tear_reads(AT, 42, u64::MAX);
    let start = Instant::now();
    let err = cache.get::<Block>(AT, &()).unwrap_err();
    let took = start.elapsed();
    let Error::Read { attempts, .. } = err else {
        panic!("expected a read error, got {err:?}");
    };
    assert!(attempts > 1 && attempts < 1000, "{attempts} attempts");
    assert!(took >= Duration::from_millis(45), "{took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert_eq!(u64::from(attempts) - 1, tblk(&cache).retries);
}

#[test]
fn unchecksummed_entries_are_not_retried() {
    let mem = MemStorage::new();
    mem.write_at(Addr(0), b"XXXX\x01\0\0\0").unwrap();
    let storage = Arc::new(FaultyStorage::new(mem));
    let cache = reader(&storage, 5);
    assert!(matches!(
        cache.get::<Plain>(Addr(0), &()),
        Err(Error::Read {
            type_name: "PLN0",
            attempts: 1,
            ..
        })
    ));
    assert_eq!(cache.stats().of("PLN0").retries, 0);
}

#[test]
fn a_torn_write_is_detected_by_the_checksum() {
    // A crash tears the block's only write: a reader must refuse the image, not decode it.
    let storage = Arc::new(FaultyStorage::new(MemStorage::new()));
    let writer = MetadataCache::new(storage.clone(), CacheConfig::default()).unwrap();
    writer.insert(AT, Block::new(PAYLOAD)).unwrap();
    storage.crash_at_write(1, 20);
    assert!(writer.flush().unwrap().is_complete());
    assert!(storage.crashed());
    let survivor = Arc::new(storage.inner().clone());
    let reader = MetadataCache::new(survivor, CacheConfig::default()).unwrap();
    assert!(matches!(
        reader.get::<Block>(AT, &()),
        Err(Error::Read { .. })
    ));
}

#[test]
fn io_errors_are_reported_with_context() {
    let storage = written();
    let cache = reader(&storage, 5);
    // Operation 1 is the length query, operation 2 the speculative read.
    storage.fail_nth_op(2);
    let err = cache.get::<Block>(AT, &()).unwrap_err();
    assert!(matches!(
        err,
        Error::EntryIo {
            type_name: "TBLK",
            addr: AT,
            op: "reading",
            ..
        }
    ));
    assert!(
        err.source()
            .unwrap()
            .downcast_ref::<std::io::Error>()
            .is_some()
    );
}
