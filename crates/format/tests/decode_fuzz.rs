//! Structured fuzz targets: every decoder of the format crate gets arbitrary bytes shaped to
//! reach past its first checks (the right signature, a recomputed checksum, lengths from a small
//! set of extremes), and must answer with `Ok` or a typed `Err`: never a panic, and never an
//! allocation sized by a field before the field is checked (the test runs under the default
//! allocator; a decoder that trusted a length of 2^40 would abort the process).
// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used
)]

use h5chunk_format::btree1::{ChunkKey, GroupKey, Node as Bt1Node};
use h5chunk_format::checksum::lookup3;
use h5chunk_format::message::{Message, MessageType};
use h5chunk_format::object_header::ObjectHeader;
use h5chunk_format::superblock::Superblock;
use h5chunk_format::{
    Addr, Sizes, btree2, earray, farray, global_heap, local_heap, symbol_table_node,
};
use proptest::prelude::*;

const AT: Addr = Addr(0x800);
const S: Sizes = Sizes::DEFAULT;

/// Bytes that look like a structure: `sig`, then the fuzzed body with some 1/2/4/8-byte fields
/// overwritten by extreme values; with `sum_at`, cut or zero-padded to that length and followed
/// by the lookup3 checksum of everything before it (where the decoder looks for it), so that
/// decoding goes past the checksum into the fields.
fn shaped(
    sig: &[u8],
    body: &[u8],
    extremes: &[(usize, u8, u64)],
    sum_at: Option<usize>,
) -> Vec<u8> {
    let mut b = sig.to_vec();
    b.extend_from_slice(body);
    if let Some(n) = sum_at {
        b.resize(n.max(sig.len()), 0);
    }
    for &(at, width, v) in extremes {
        // Fields after the signature only.
        let room = b.len().saturating_sub(sig.len());
        if room == 0 {
            break;
        }
        let at = sig.len() + at % room;
        let w = usize::from(width).min(b.len() - at);
        b[at..at + w].copy_from_slice(&v.to_le_bytes()[..w]);
    }
    if sum_at.is_some() {
        let sum = lookup3(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        // Trailing bytes past the checksum, as a whole allocated block has.
        b.extend_from_slice(body.get(..body.len().min(64)).unwrap_or_default());
    }
    b
}

fn extremes() -> impl Strategy<Value = Vec<(usize, u8, u64)>> {
    let value = prop_oneof![
        Just(0u64),
        Just(1),
        Just(u64::MAX),
        Just(u64::MAX - 1),
        Just(1 << 63),
        Just(1 << 50),
        Just(1 << 40),
        Just(u64::from(u32::MAX)),
        Just(u64::from(u16::MAX)),
        Just(0xff),
        any::<u64>(),
    ];
    proptest::collection::vec(
        (
            0usize..600,
            prop_oneof![Just(1u8), Just(2), Just(4), Just(8)],
            value,
        ),
        0..6,
    )
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..700)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn superblock(body in body(), ex in extremes(), v in 0u8..4) {
        let mut sig = b"\x89HDF\r\n\x1a\n".to_vec();
        sig.push(v);
        let b = shaped(&sig, &body, &ex, (v >= 2).then_some(44));
        let _ = Superblock::decode(&b, Addr(0));
        let _ = Superblock::len_from_prefix(&b, Addr(0));
    }

    #[test]
    fn object_header(body in body(), ex in extremes(), v2 in any::<bool>()) {
        let b = if v2 {
            shaped(b"OHDR\x02", &body, &ex, Some(body.len() / 2))
        } else {
            shaped(&[1], &body, &ex, None)
        };
        if let Ok(h) = ObjectHeader::decode_chunk0(&b, AT, S) {
            let c = shaped(b"OCHK", &body, &ex, Some(body.len() / 2));
            let _ = h.decode_continuation(&c, AT);
        }
    }

    #[test]
    fn messages(kind in 0u16..0x19, body in body(), ex in extremes()) {
        let b = shaped(&[], &body, &ex, None);
        let _ = Message::decode(MessageType(kind), &b, AT, S);
    }

    #[test]
    fn btree1_nodes(body in body(), ex in extremes(), k in 1u16..40, nd in 0u8..40, group in any::<bool>()) {
        let b = shaped(b"TREE", &body, &ex, None);
        if group {
            let _ = Bt1Node::<GroupKey>::decode(&b, AT, S, k, ());
        } else {
            let _ = Bt1Node::<ChunkKey>::decode(&b, AT, S, k, nd);
        }
    }

    #[test]
    fn symbol_table_nodes(body in body(), ex in extremes(), k in 0u16..40) {
        let b = shaped(b"SNOD\x01", &body, &ex, None);
        let _ = symbol_table_node::SymbolTableNode::decode(&b, AT, S, k);
    }

    #[test]
    fn global_heap_collections(body in body(), ex in extremes(), size in prop_oneof![0u64..200, any::<u64>()]) {
        // A collection whose stored size is near the bytes given, or anything.
        let mut b = b"GCOL\x01\0\0\0".to_vec();
        b.extend_from_slice(&size.to_le_bytes());
        b.extend_from_slice(&body);
        let b = shaped(&b[..16], &b[16..], &ex, None);
        let _ = global_heap::collection_size(&b, AT, S);
        if let Ok(c) = global_heap::GlobalHeapCollection::decode(&b, AT, S) {
            prop_assert!(c.objects.len() <= b.len() / 16);
        }
        let _ = global_heap::HeapId::decode(&body, AT, S);
    }

    #[test]
    fn local_heaps(body in body(), ex in extremes(), free in any::<u64>()) {
        let b = shaped(b"HEAP\0", &body, &ex, None);
        let _ = local_heap::LocalHeap::decode(&b, AT, S);
        let _ = local_heap::LocalHeapData::decode(&body, AT, S, free);
    }

    #[test]
    fn btree2(body in body(), ex in extremes(), depth in 0u16..4, nrec in prop_oneof![0u64..300, any::<u64>()]) {
        let h = shaped(b"BTHD\0", &body, &ex, Some(btree2::Header::encoded_len(S) - 4));
        let _ = btree2::Header::decode(&h, AT, S);
        // Nodes under a plausible header (chunk records of a 2-D dataset, 512-byte nodes).
        let header = btree2::Header {
            tree_type: 10,
            node_size: 512,
            record_size: 24,
            depth,
            split_percent: 100,
            merge_percent: 40,
            root: Some(AT),
            root_nrec: 3,
            total_records: 3,
        };
        if let Ok(g) = btree2::Geometry::new(&header, S) {
            let sig: &[u8] = if depth == 0 { b"BTLF\0" } else { b"BTIN\0" };
            let used = btree2::Node::used_len(&g, depth, (nrec % 40) as usize);
            let n = shaped(sig, &body, &ex, Some(used.saturating_sub(4)));
            let _ = btree2::Node::decode(&n, AT, S, &g, depth, nrec);
        }
    }

    #[test]
    fn extensible_array(body in body(), ex in extremes(), u in 0usize..40, esize in 0u8..40) {
        let h = shaped(b"EAHD\0", &body, &ex, Some(earray::Header::encoded_len(S) - 4));
        let _ = earray::Header::decode(&h, AT, S);
        let g = earray::Geometry::new(earray::Params::CHUNK_INDEX).unwrap();
        let ib = g.index_block_len(S, esize).saturating_sub(4);
        let _ = earray::IndexBlock::decode(&shaped(b"EAIB\0", &body, &ex, Some(ib)), AT, S, &g, esize);
        let sb = g.super_block_len(S, u).saturating_sub(4);
        let _ = earray::SuperBlock::decode(&shaped(b"EASB\0", &body, &ex, Some(sb)), AT, S, &g, u);
        let db = (g.data_block_image_len(S, u, esize) as usize).min(4096).saturating_sub(4);
        let _ = earray::DataBlock::decode(&shaped(b"EADB\0", &body, &ex, Some(db)), AT, S, &g, u, esize);
    }

    #[test]
    fn fixed_array(body in body(), ex in extremes(), n in prop_oneof![0u64..5000, any::<u64>()], esize in 0u8..40, bits in 0u8..70) {
        let h = shaped(b"FAHD\0", &body, &ex, Some(farray::Header::encoded_len(S) - 4));
        let _ = farray::Header::decode(&h, AT, S);
        if let Ok(g) = farray::Geometry::new(n, esize, bits) {
            let db = (g.prefix_len(S)).min(4096).saturating_sub(4);
            let _ = farray::DataBlock::decode(&shaped(b"FADB\0", &body, &ex, Some(db)), AT, S, &g);
        }
    }
}
