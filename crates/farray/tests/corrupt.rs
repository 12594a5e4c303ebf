//! Hostile input: every block (header, unpaged data block, paged data block, pages including a
//! shorter last page) rejects truncation and flipped bytes, and an element count (or another
//! header field) inconsistent with the layout is an error; never a panic.
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

mod common;

use std::sync::Arc;

use h5chunk_cache::{MemStorage, Storage};
use h5chunk_farray::{Error, FixedArray, Params};
use h5chunk_format::chunk_record::{ChunkRecord, RecordCodec};
use h5chunk_format::farray::{DataBlock, Header};
use h5chunk_format::{Addr, Sizes};

const S: Sizes = Sizes::DEFAULT;

/// An array written and flushed to memory, with the byte ranges of its blocks.
struct Built {
    bytes: Vec<u8>,
    addr: Addr,
    db: Addr,
    params: Params,
    indexes: Vec<u64>,
    /// (what, start, length) of every block written.
    regions: Vec<(&'static str, u64, u64)>,
}

fn build(nelmts: u64, page_bits: u8, indexes: &[u64]) -> Built {
    let storage = MemStorage::new();
    let cache = common::cache(&storage);
    cache.allocator().allocate(64).unwrap();
    let params = Params {
        nelmts,
        max_dblk_page_nelmts_bits: page_bits,
    };
    let mut fa = FixedArray::create(&cache, S, RecordCodec::unfiltered(S), params).unwrap();
    for &i in indexes {
        fa.insert(&cache, i, &common::at(0x10_000 + i)).unwrap();
    }
    assert!(cache.flush().unwrap().is_complete());
    let db = fa.data_block_addr(&cache).unwrap().unwrap();
    let g = *fa.geometry();
    let mut regions = vec![
        ("FAHD", fa.addr().get(), Header::encoded_len(S) as u64),
        ("FADB", db.get(), g.block_image_len(S)),
    ];
    let mut pages: Vec<u64> = indexes.iter().map(|&i| g.locate(i).0).collect();
    pages.dedup();
    if g.is_paged() {
        for p in pages {
            regions.push(("page", fa.page_addr(db, p).unwrap().get(), g.page_len(p)));
        }
    }
    Built {
        bytes: storage.to_vec(),
        addr: fa.addr(),
        db,
        params,
        indexes: indexes.to_vec(),
        regions,
    }
}

/// Open the array in `bytes` and read every element that was set, by `get` and by iteration.
fn read_all(b: &Built, bytes: Vec<u8>, params: Params) -> Result<Vec<ChunkRecord>, Error> {
    let cache = common::reader(bytes);
    let fa = FixedArray::open(&cache, b.addr, S, RecordCodec::unfiltered(S), params)?;
    let mut out = Vec::new();
    for &i in &b.indexes {
        out.push(fa.get(&cache, i)?);
    }
    assert_eq!(fa.to_vec(&cache)?.len(), b.indexes.len());
    Ok(out)
}

/// Unpaged (12 elements, as libhdf5's example), and paged: 40 elements in 16-element pages,
/// the last holding 8, the middle one never written.
fn arrays() -> Vec<Built> {
    vec![
        build(12, 10, &[0, 5, 11]),
        build(40, 4, &[1, 2, 15, 33, 39]),
    ]
}

#[test]
fn intact_arrays_read_back() {
    for b in arrays() {
        let got = read_all(&b, b.bytes.clone(), b.params).unwrap();
        let want: Vec<ChunkRecord> = b
            .indexes
            .iter()
            .map(|&i| common::at(0x10_000 + i))
            .collect();
        assert_eq!(got, want);
    }
}

#[test]
fn rejects_truncation() {
    for b in arrays() {
        for &(what, start, len) in &b.regions {
            for n in 0..len {
                let cut = b.bytes[..(start + n) as usize].to_vec();
                assert!(
                    read_all(&b, cut, b.params).is_err(),
                    "{what} @ {start:#x} cut after {n} bytes"
                );
            }
        }
    }
}

#[test]
fn rejects_flipped_byte() {
    let mut cases = 0;
    for b in arrays() {
        for &(what, start, len) in &b.regions {
            for off in start..start + len {
                for bit in 0..8 {
                    let mut bad = b.bytes.clone();
                    bad[off as usize] ^= 1 << bit;
                    assert!(
                        read_all(&b, bad, b.params).is_err(),
                        "{what}: byte {off:#x} bit {bit}"
                    );
                    cases += 1;
                }
            }
        }
    }
    assert!(cases > 2_000);
}

#[test]
fn rejects_element_count_inconsistent_with_layout() {
    for b in arrays() {
        let n = b.params.nelmts;
        for nelmts in [n - 1, n + 1, 1, 5_000] {
            let p = Params { nelmts, ..b.params };
            assert!(
                matches!(
                    read_all(&b, b.bytes.clone(), p),
                    Err(Error::Mismatch {
                        field: "number of elements",
                        ..
                    })
                ),
                "layout count {nelmts} against {n}"
            );
        }
        let p = Params {
            max_dblk_page_nelmts_bits: b.params.max_dblk_page_nelmts_bits + 1,
            ..b.params
        };
        assert!(matches!(
            read_all(&b, b.bytes.clone(), p),
            Err(Error::Mismatch { .. })
        ));
        // A filtered element class on an unfiltered array.
        let cache = common::reader(b.bytes.clone());
        let filtered = RecordCodec::filtered(S, 2).unwrap();
        assert!(matches!(
            FixedArray::open(&cache, b.addr, S, filtered, b.params),
            Err(Error::Mismatch { .. })
        ));
    }
}

fn rewrite_header(b: &Built, edit: impl Fn(&mut Header)) -> Vec<u8> {
    let at = b.addr.get() as usize;
    let mut h = Header::decode(&b.bytes[at..], b.addr, S).unwrap();
    edit(&mut h);
    let mut image = Vec::new();
    h.encode(S, &mut image).unwrap();
    let mut bytes = b.bytes.clone();
    bytes[at..at + image.len()].copy_from_slice(&image);
    bytes
}

/// A header whose checksum is valid but whose element count differs from what its blocks
/// hold: the blocks' own checksums and lengths reject it, whatever the layout says.
#[test]
fn rejects_blocks_inconsistent_with_header_count() {
    for b in arrays() {
        let n = b.params.nelmts;
        for nelmts in [n - 1, n + 1, n + 8, n + 9, 200, 2_000] {
            let bytes = rewrite_header(&b, |h| h.nelmts = nelmts);
            let p = Params { nelmts, ..b.params };
            assert!(
                read_all(&b, bytes, p).is_err(),
                "header count {nelmts}, blocks written for {n}"
            );
        }
    }
}

#[test]
fn rejects_misplaced_or_foreign_data_block() {
    for b in arrays() {
        // The data block address pointing into the header itself, past the address space, or
        // past the end of the file.
        for db in [
            b.addr,
            Addr(b.addr.get() + 4),
            Addr(u64::MAX - 8),
            Addr(1 << 40),
        ] {
            let bytes = rewrite_header(&b, |h| h.data_block = Some(db));
            assert!(read_all(&b, bytes, b.params).is_err(), "data block @ {db}");
        }
        // A data block with a valid checksum naming another header, or another client.
        let cache = common::reader(b.bytes.clone());
        let g = FixedArray::open(&cache, b.addr, S, RecordCodec::unfiltered(S), b.params)
            .unwrap()
            .geometry()
            .to_owned();
        let at = b.db.get() as usize;
        let block = DataBlock::decode(&b.bytes[at..], b.db, S, &g).unwrap();
        for edit in [
            DataBlock {
                header: Addr(b.addr.get() + 8),
                ..block.clone()
            },
            DataBlock {
                client_id: 1,
                ..block.clone()
            },
        ] {
            let mut image = Vec::new();
            edit.encode(S, &mut image).unwrap();
            let mut bytes = b.bytes.clone();
            bytes[at..at + image.len()].copy_from_slice(&image);
            assert!(read_all(&b, bytes, b.params).is_err());
        }
    }
}

/// A torn read of a block (a SWMR writer rewriting it) is retried by the cache and succeeds.
#[test]
fn torn_reads_are_retried() {
    use h5chunk_cache::{CacheConfig, FaultyStorage, MetadataCache};
    for b in arrays() {
        let faulty = Arc::new(FaultyStorage::new(MemStorage::from_vec(b.bytes.clone())));
        for &(_, start, len) in &b.regions {
            faulty.tear_reads(Addr(start), len, 2);
        }
        let storage: Arc<dyn Storage> = faulty.clone();
        let cache = MetadataCache::new(storage, CacheConfig::swmr_reader()).unwrap();
        let fa = FixedArray::open(&cache, b.addr, S, RecordCodec::unfiltered(S), b.params).unwrap();
        assert_eq!(fa.to_vec(&cache).unwrap().len(), b.indexes.len());
        assert!(faulty.torn_reads() > 0);
    }
}
