//! Hostile input: every block type rejects truncation and flipped bytes, blocks must name
//! their own array, and pointers past the end of the file are errors, never panics or hangs.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

mod common;

use common::*;
use h5chunk_cache::MemStorage;
use h5chunk_earray::{Error, ExtensibleArray, FilteredChunks};
use h5chunk_format::Addr;
use h5chunk_format::earray::{DataBlock, Geometry, Header, IndexBlock, Params, SuperBlock};

/// An array touching every block type, flushed: its storage, header address and the blocks
/// (name, address, image length, probe index).
struct Fixture {
    bytes: Vec<u8>,
    header: Addr,
    blocks: Vec<(&'static str, Addr, usize, u64)>,
}

fn fixture() -> Fixture {
    let (storage, cache) = new_cache();
    let mut ea = new_filtered_array(&cache);
    for i in [0u64, 4, 244, 131_060] {
        ea.insert(&cache, i, &record(i)).unwrap();
    }
    assert!(cache.flush().unwrap().is_complete());
    let g = Geometry::new(Params::CHUNK_INDEX).unwrap();
    let es = filtered_es();
    let bytes = storage.to_vec();
    let h = ea.header(&cache).unwrap();
    let ib_at = h.index_block.unwrap();
    let ib = IndexBlock::decode(&bytes[ib_at.get() as usize..], ib_at, S, &g, es).unwrap();
    let db0 = ib.dblk_addrs[0].unwrap();
    let sb4 = ib.sblk_addrs[0].unwrap();
    let sb13 = ib.sblk_addrs[9].unwrap();
    let sb4b = SuperBlock::decode(&bytes[sb4.get() as usize..], sb4, S, &g, 4).unwrap();
    let sb13b = SuperBlock::decode(&bytes[sb13.get() as usize..], sb13, S, &g, 13).unwrap();
    let db4 = sb4b.dblk_addrs[0].unwrap();
    let db13 = sb13b.dblk_addrs[0].unwrap();
    let page0 = Addr(db13.get() + g.page_offset(S, 0, es));
    let blocks = vec![
        ("EAHD", ea.addr(), Header::encoded_len(S), 0),
        ("EAIB", ib_at, g.index_block_len(S, es), 0),
        (
            "EADB (index block)",
            db0,
            g.data_block_image_len(S, 0, es) as usize,
            4,
        ),
        ("EASB", sb4, g.super_block_len(S, 4), 244),
        (
            "EADB (super block)",
            db4,
            g.data_block_image_len(S, 4, es) as usize,
            244,
        ),
        ("EASB (paged)", sb13, g.super_block_len(S, 13), 131_060),
        (
            "EADB (paged prefix)",
            db13,
            g.data_block_image_len(S, 13, es) as usize,
            u64::MAX,
        ),
        (
            "EADB page",
            page0,
            (g.page_nelmts() * u64::from(es) + 4) as usize,
            131_060,
        ),
    ];
    Fixture {
        bytes,
        header: ea.addr(),
        blocks,
    }
}

fn filtered_es() -> u8 {
    use h5chunk_earray::ElementClass;
    filtered().element_size()
}

/// Open the array over `bytes` in a fresh cache and read through the block; `u64::MAX` probes
/// by iterating (which also verifies paged data block prefixes).
fn probe(bytes: Vec<u8>, header: Addr, i: u64) -> Result<(), Error> {
    let storage = MemStorage::from_vec(bytes);
    let cache = reader(&storage);
    let ea = ExtensibleArray::open(&cache, header, S, filtered())?;
    if i == u64::MAX {
        let set = ea.to_vec(&cache)?;
        assert_eq!(set.len(), 4);
    } else {
        assert_eq!(ea.get(&cache, i)?, record(i));
    }
    Ok(())
}

#[test]
fn the_intact_fixture_reads_back() {
    let f = fixture();
    for (name, _, _, i) in &f.blocks {
        probe(f.bytes.clone(), f.header, *i).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn rejects_flipped_byte() {
    let f = fixture();
    for (name, at, len, i) in &f.blocks {
        for k in 0..*len {
            let mut bad = f.bytes.clone();
            bad[at.get() as usize + k] ^= 0x10;
            let err = probe(bad, f.header, *i);
            assert!(err.is_err(), "{name}: flipped byte {k} accepted");
        }
    }
}

#[test]
fn rejects_truncation() {
    let f = fixture();
    for (name, at, len, i) in &f.blocks {
        for k in 0..*len {
            let cut = f.bytes[..at.get() as usize + k].to_vec();
            assert!(
                probe(cut, f.header, *i).is_err(),
                "{name}: truncated at {k} accepted"
            );
        }
    }
}

/// Re-encode the block at `at` after `edit`, with a valid checksum.
fn rewrite<T>(
    bytes: &mut [u8],
    at: Addr,
    decode: impl Fn(&[u8]) -> T,
    edit: impl FnOnce(&mut T),
    encode: impl Fn(&T, &mut Vec<u8>),
) {
    let mut b = decode(&bytes[at.get() as usize..]);
    edit(&mut b);
    let mut out = Vec::new();
    encode(&b, &mut out);
    bytes[at.get() as usize..at.get() as usize + out.len()].copy_from_slice(&out);
}

#[test]
fn rejects_pointers_past_the_end_of_the_file() {
    let f = fixture();
    let g = Geometry::new(Params::CHUNK_INDEX).unwrap();
    let es = filtered_es();
    let eof = f.bytes.len() as u64;
    let ib_at = f.blocks[1].1;
    let dec_ib = |b: &[u8]| IndexBlock::decode(b, ib_at, S, &g, es).unwrap();
    let enc_ib = |b: &IndexBlock, out: &mut Vec<u8>| b.encode(S, out).unwrap();
    for far in [eof, eof + 1_000, u64::MAX - 16] {
        // A super block pointer past the end of the file.
        let mut bad = f.bytes.clone();
        rewrite(
            &mut bad,
            ib_at,
            dec_ib,
            |b| b.sblk_addrs[0] = Some(Addr(far)),
            enc_ib,
        );
        let err = probe(bad, f.header, 244).unwrap_err();
        assert!(matches!(err, Error::Cache(_)), "{err}");
        // A data block pointer of the index block past the end.
        let mut bad = f.bytes.clone();
        rewrite(
            &mut bad,
            ib_at,
            dec_ib,
            |b| b.dblk_addrs[0] = Some(Addr(far)),
            enc_ib,
        );
        assert!(probe(bad, f.header, 4).is_err());
        // A paged data block past the end: its page lies past the end too.
        let sb13 = f.blocks[5].1;
        let mut bad = f.bytes.clone();
        rewrite(
            &mut bad,
            sb13,
            |b| SuperBlock::decode(b, sb13, S, &g, 13).unwrap(),
            |b| b.dblk_addrs[0] = Some(Addr(far)),
            |b, out| b.encode(S, &g, out).unwrap(),
        );
        assert!(probe(bad.clone(), f.header, 131_060).is_err());
        assert!(probe(bad, f.header, u64::MAX).is_err());
    }
}

#[test]
fn rejects_blocks_of_another_array_or_class() {
    let f = fixture();
    let g = Geometry::new(Params::CHUNK_INDEX).unwrap();
    let es = filtered_es();
    let db0 = f.blocks[2].1;
    let dec = |b: &[u8]| DataBlock::decode(b, db0, S, &g, 0, es).unwrap();
    let enc = |b: &DataBlock, out: &mut Vec<u8>| b.encode(S, &g, out).unwrap();
    let mut bad = f.bytes.clone();
    rewrite(
        &mut bad,
        db0,
        dec,
        |b| b.header = Addr(f.header.get() + 8),
        enc,
    );
    let err = probe(bad, f.header, 4).unwrap_err();
    assert!(matches!(err, Error::Cache(_)), "{err}");
    assert!(err.to_string().contains("names header"), "{err}");
    let mut bad = f.bytes.clone();
    rewrite(&mut bad, db0, dec, |b| b.client_id = 0, enc);
    assert!(probe(bad, f.header, 4).is_err());
    // A pointer to a block of the wrong kind (the index block where a super block should be).
    let ib_at = f.blocks[1].1;
    let mut bad = f.bytes.clone();
    rewrite(
        &mut bad,
        ib_at,
        |b| IndexBlock::decode(b, ib_at, S, &g, es).unwrap(),
        |b| b.sblk_addrs[0] = Some(ib_at),
        |b, out| b.encode(S, out).unwrap(),
    );
    assert!(probe(bad, f.header, 244).is_err());
    // The header read with the wrong element class.
    let storage = MemStorage::from_vec(f.bytes.clone());
    let cache = reader(&storage);
    let other = FilteredChunks::new(S, 2).unwrap();
    let err = ExtensibleArray::open(&cache, f.header, S, other).unwrap_err();
    assert!(matches!(err, Error::Mismatch { .. }), "{err}");
}
