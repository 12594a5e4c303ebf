#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects
)]

use proptest::prelude::*;

use super::*;
use crate::checksum::lookup3;

const S: Sizes = Sizes::DEFAULT;

/// Root group `OHDR` at 0x30 of the 447-byte latest-format file (docs/format/file-format.md §9.1).
#[rustfmt::skip]
const LATEST_ROOT_HEAD: [u8; 55] = [
    b'O', b'H', b'D', b'R',             // signature
    2,                                  // version 2
    0x00,                               // flags: 1-byte chunk size, no times
    0x78,                               // size of chunk #0 = 120
    0x02, 0x12, 0x00, 0x00,             // Link Info: type 2, size 18, flags 0
    0x00, 0x00,                         //   version 0, flags 0
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // fractal heap: undefined
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // name index B-tree: undefined
    0x0a, 0x02, 0x00, 0x01,             // Group Info: type 10, size 2, flags 1
    0x00, 0x00,                         //   version 0, flags 0
    0x06, 0x0c, 0x00, 0x00,             // Link: type 6, size 12, flags 0
    0x01, 0x00, 0x01, b'd',             //   version 1, flags 0, name length 1, "d"
    0xb3, 0, 0, 0, 0, 0, 0, 0,          //   hard link target 0xb3
    0x00, 0x48, 0x00, 0x00,             // NIL: type 0, size 72, flags 0
];
const LATEST_ROOT_NIL: usize = 72;
const LATEST_ROOT_CHECKSUM: [u8; 4] = [0x1a, 0xfb, 0xc0, 0x33];

/// Dataset `OHDR` at 0xb3 of the same file.
#[rustfmt::skip]
const LATEST_DATASET_HEAD: [u8; 83] = [
    b'O', b'H', b'D', b'R',             // signature
    2,                                  // version 2
    0x01,                               // flags: 2-byte chunk size
    0x00, 0x01,                         // size of chunk #0 = 256
    0x01, 0x14, 0x00, 0x00,             // Dataspace: type 1, size 20, flags 0
    0x02, 0x01, 0x01, 0x01,             //   version 2, rank 1, max dims present, simple
    0, 0, 0, 0, 0, 0, 0, 0,             //   dims [0]
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // max dims [unlimited]
    0x03, 0x0c, 0x00, 0x01,             // Datatype: type 3, size 12, flags 1 (constant)
    0x10, 0x08, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, // fixed point, signed, 4 bytes
    0x00, 0x00, 0x20, 0x00,             //   offset 0, precision 32
    0x05, 0x02, 0x00, 0x01,             // Fill Value: type 5, size 2, flags 1
    0x03, 0x0b,                         //   version 3, flags
    0x08, 0x15, 0x00, 0x00,             // Data Layout: type 8, size 21, flags 0
    0x04, 0x02, 0x00, 0x02, 0x01,       //   version 4, chunked, flags 0, nd 2, 1-byte dims
    0x04, 0x04,                         //   chunk dims [4, element size 4]
    0x04, 0x20, 0x04, 0x04, 0x10, 0x0a, //   extensible array index parameters
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // index address: undefined
    0x00, 0xb5, 0x00, 0x00,             // NIL: type 0, size 181, flags 0
];
const LATEST_DATASET_NIL: usize = 181;
const LATEST_DATASET_CHECKSUM: [u8; 4] = [0x12, 0x38, 0x6e, 0x7e];

/// Root group version 1 header at 0x60 of the 1400-byte earliest-format file (§9.5).
#[rustfmt::skip]
const EARLIEST_ROOT: [u8; 40] = [
    1,                                  // version 1
    0,                                  // reserved
    1, 0,                               // total number of header messages = 1
    1, 0, 0, 0,                         // object reference count = 1
    0x18, 0, 0, 0,                      // object header size = 24
    0, 0, 0, 0,                         // reserved (alignment)
    0x11, 0x00, 0x10, 0x00,             // Symbol Table message: type 0x11, size 16
    0x00, 0, 0, 0,                      //   flags 0, reserved
    0x88, 0, 0, 0, 0, 0, 0, 0,          //   v1 B-tree address 0x88
    0xa8, 0x02, 0, 0, 0, 0, 0, 0,       //   local heap address 0x2a8
];

/// Dataset version 1 header at 0x320 of the same file, without the NIL message's data.
#[rustfmt::skip]
const EARLIEST_DATASET_HEAD: [u8; 128] = [
    1,                                  // version 1
    0,                                  // reserved
    5, 0,                               // total number of header messages = 5
    1, 0, 0, 0,                         // object reference count = 1
    0x00, 0x01, 0, 0,                   // object header size = 256
    0, 0, 0, 0,                         // reserved (alignment)
    0x01, 0x00, 0x18, 0x00, 0x00, 0, 0, 0, // Dataspace: type 1, size 24, flags 0
    0x01, 0x01, 0x01, 0x00, 0, 0, 0, 0, //   version 1, rank 1, max dims present
    0, 0, 0, 0, 0, 0, 0, 0,             //   dims [0]
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // max dims [unlimited]
    0x03, 0x00, 0x10, 0x00, 0x01, 0, 0, 0, // Datatype: type 3, size 16, flags 1
    0x10, 0x08, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, // fixed point, signed, 4 bytes
    0x00, 0x00, 0x20, 0x00, 0, 0, 0, 0, //   offset 0, precision 32, padding
    0x05, 0x00, 0x08, 0x00, 0x01, 0, 0, 0, // Fill Value: type 5, size 8, flags 1
    0x02, 0x03, 0x02, 0x01, 0, 0, 0, 0, //   version 2, incremental, if set, defined, size 0
    0x08, 0x00, 0x18, 0x00, 0x00, 0, 0, 0, // Data Layout: type 8, size 24, flags 0
    0x03, 0x02, 0x02,                   //   version 3, chunked, nd 2
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // B-tree address: undefined
    0x04, 0, 0, 0, 0x04, 0, 0, 0,       //   chunk dims [4, element size 4]
    0, 0, 0, 0, 0,                      //   padding
    0x00, 0x00, 0x90, 0x00, 0x00, 0, 0, 0, // NIL: type 0, size 144, flags 0
];
const EARLIEST_DATASET_NIL: usize = 144;

fn image(head: &[u8], zeros: usize, checksum: &[u8]) -> Vec<u8> {
    let mut v = head.to_vec();
    v.resize(head.len() + zeros, 0);
    v.extend_from_slice(checksum);
    v
}

fn latest_root() -> Vec<u8> {
    image(&LATEST_ROOT_HEAD, LATEST_ROOT_NIL, &LATEST_ROOT_CHECKSUM)
}

fn latest_dataset() -> Vec<u8> {
    image(
        &LATEST_DATASET_HEAD,
        LATEST_DATASET_NIL,
        &LATEST_DATASET_CHECKSUM,
    )
}

fn earliest_dataset() -> Vec<u8> {
    image(&EARLIEST_DATASET_HEAD, EARLIEST_DATASET_NIL, &[])
}

/// The four images with their addresses.
fn images() -> Vec<(Addr, Vec<u8>)> {
    vec![
        (Addr(0x30), latest_root()),
        (Addr(0xb3), latest_dataset()),
        (Addr(0x60), EARLIEST_ROOT.to_vec()),
        (Addr(0x320), earliest_dataset()),
    ]
}

/// A file image in memory with `chunks` written at their addresses; reads past its end are
/// short, as the read contract allows.
fn file_with(chunks: &[(Addr, Vec<u8>)]) -> Vec<u8> {
    let mut file = Vec::new();
    for (a, bytes) in chunks {
        let at = a.get() as usize;
        if file.len() < at + bytes.len() {
            file.resize(at + bytes.len(), 0);
        }
        file[at..at + bytes.len()].copy_from_slice(bytes);
    }
    file
}

fn read_from(file: &[u8], at: Addr) -> Result<ObjectHeader> {
    ObjectHeader::read(at, S, |a, len| {
        let start = (a.get() as usize).min(file.len());
        let end = start.saturating_add(len as usize).min(file.len());
        Ok(file[start..end].to_vec())
    })
}

fn assert_reencodes(header: &ObjectHeader, chunks: &[(Addr, Vec<u8>)]) {
    assert_eq!(&header.encode_chunks().unwrap(), chunks);
    for (i, (a, bytes)) in chunks.iter().enumerate() {
        let extent = header.chunk_extent(i).unwrap();
        assert_eq!((extent.addr, extent.len), (*a, bytes.len() as u64));
    }
}

#[test]
fn decode_latest_root() {
    let bytes = latest_root();
    assert_eq!(bytes.len(), 131);
    assert_eq!(chunk0_len(&bytes[..8], Addr(0x30)).unwrap(), 131);
    let h = ObjectHeader::decode_chunk0(&bytes, Addr(0x30), S).unwrap();
    h.validate().unwrap();
    assert_eq!(h.version(), 2);
    let Prefix::V2(p) = h.prefix() else {
        panic!("not v2")
    };
    assert_eq!(*p, v2::Prefix::default());
    let kinds: Vec<_> = h.messages().map(|m| (m.kind, m.data.len())).collect();
    assert_eq!(
        kinds,
        vec![
            (MessageType::LINK_INFO, 18),
            (MessageType::GROUP_INFO, 2),
            (MessageType::LINK, 12),
            (MessageType::NIL, 72)
        ]
    );
    assert_eq!(h.messages().nth(1).unwrap().flags, MessageFlags::CONSTANT);
    assert!(h.chunk(0).unwrap().gap.is_empty());
    assert_eq!(
        h.chunks().collect::<Vec<_>>(),
        vec![ChunkExtent {
            addr: Addr(0x30),
            len: 131
        }]
    );
    assert_reencodes(&h, &[(Addr(0x30), bytes)]);
}

#[test]
fn decode_latest_dataset() {
    let bytes = latest_dataset();
    assert_eq!(bytes.len(), 268);
    assert_eq!(lookup3(&bytes[..264]), 0x7e6e_3812);
    let h = read_from(&file_with(&[(Addr(0xb3), bytes.clone())]), Addr(0xb3)).unwrap();
    let Prefix::V2(p) = h.prefix() else {
        panic!("not v2")
    };
    assert_eq!(p.chunk0_size_width, 2);
    assert_eq!(h.message_count(), 5);
    let layout = h
        .messages()
        .find(|m| m.kind == MessageType::DATA_LAYOUT)
        .unwrap();
    assert_eq!(layout.data.len(), 21);
    assert_eq!(h.messages().last().unwrap().data.len(), 181);
    assert_reencodes(&h, &[(Addr(0xb3), bytes)]);
}

#[test]
fn decode_earliest_root() {
    let h = read_from(
        &file_with(&[(Addr(0x60), EARLIEST_ROOT.to_vec())]),
        Addr(0x60),
    )
    .unwrap();
    assert_eq!(h.version(), 1);
    assert_eq!(
        h.prefix(),
        &Prefix::V1(v1::Prefix {
            message_count: 1,
            refcount: 1
        })
    );
    let m = h.messages().next().unwrap();
    assert_eq!(m.kind, MessageType::SYMBOL_TABLE);
    assert_eq!(m.data.len(), 16);
    assert_reencodes(&h, &[(Addr(0x60), EARLIEST_ROOT.to_vec())]);
}

#[test]
fn decode_earliest_dataset() {
    let bytes = earliest_dataset();
    assert_eq!(bytes.len(), 272);
    let h = read_from(&file_with(&[(Addr(0x320), bytes.clone())]), Addr(0x320)).unwrap();
    let kinds: Vec<_> = h
        .messages()
        .map(|m| (m.kind, m.flags.bits(), m.data.len()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (MessageType::DATASPACE, 0, 24),
            (MessageType::DATATYPE, 1, 16),
            (MessageType::FILL_VALUE, 1, 8),
            (MessageType::DATA_LAYOUT, 0, 24),
            (MessageType::NIL, 0, 144)
        ]
    );
    assert_reencodes(&h, &[(Addr(0x320), bytes)]);
}

/// The messages of a header without its trailing NIL, with v1 padding removed where
/// `unpad` gives the unpadded lengths.
fn messages_without_nil(h: &ObjectHeader, unpad: &[usize]) -> Vec<RawMessage> {
    h.messages()
        .filter(|m| m.kind != MessageType::NIL)
        .zip(unpad.iter().chain(core::iter::repeat(&usize::MAX)))
        .map(|(m, &n)| {
            let mut m = m.clone();
            m.data.truncate(n);
            m
        })
        .collect()
}

#[test]
fn roundtrip_builder_reproduces_libhdf5_headers() {
    let root = ObjectHeader::decode_chunk0(&latest_root(), Addr(0x30), S).unwrap();
    let built = ObjectHeader::new_v2(
        Addr(0x30),
        S,
        v2::Prefix::default(),
        messages_without_nil(&root, &[]),
        Some(120),
    )
    .unwrap();
    assert_eq!(built, root);

    let dataset = ObjectHeader::decode_chunk0(&latest_dataset(), Addr(0xb3), S).unwrap();
    let built = ObjectHeader::new_v2(
        Addr(0xb3),
        S,
        v2::Prefix::default(),
        messages_without_nil(&dataset, &[]),
        Some(256),
    )
    .unwrap();
    assert_eq!(
        built.encode_chunks().unwrap(),
        vec![(Addr(0xb3), latest_dataset())]
    );

    // Unpadded bodies: dataspace 24, datatype 12, fill 8, layout 19 bytes.
    let dataset = ObjectHeader::decode_chunk0(&earliest_dataset(), Addr(0x320), S).unwrap();
    let built = ObjectHeader::new_v1(
        Addr(0x320),
        S,
        1,
        messages_without_nil(&dataset, &[24, 12, 8, 19]),
        Some(256),
    )
    .unwrap();
    assert_eq!(
        built.encode_chunks().unwrap(),
        vec![(Addr(0x320), earliest_dataset())]
    );

    let root = ObjectHeader::decode_chunk0(&EARLIEST_ROOT, Addr(0x60), S).unwrap();
    let built =
        ObjectHeader::new_v1(Addr(0x60), S, 1, messages_without_nil(&root, &[]), None).unwrap();
    assert_eq!(built, root);
}

#[test]
fn roundtrip_builder_gap_and_compact() {
    // 3 bytes of free space cannot hold a 4-byte message header: they become the gap.
    let msgs = vec![RawMessage::new(
        MessageType::GROUP_INFO,
        MessageFlags::CONSTANT,
        vec![0, 0],
    )];
    let h =
        ObjectHeader::new_v2(Addr(0x30), S, v2::Prefix::default(), msgs.clone(), Some(9)).unwrap();
    assert_eq!(h.chunk(0).unwrap().gap, vec![0, 0, 0]);
    let bytes = h.encode_chunks().unwrap().remove(0).1;
    let back = ObjectHeader::decode_chunk0(&bytes, Addr(0x30), S).unwrap();
    assert_eq!(back, h);
    // No padding target: chunk 0 holds exactly the messages (docs/format/file-format.md §9.3).
    let h = ObjectHeader::new_v2(Addr(0x30), S, v2::Prefix::default(), msgs, None).unwrap();
    assert_eq!(h.chunk_extent(0).unwrap().len, 7 + 6 + 4);
    // Creation order tracking and times; a 300-byte chunk needs a 2-byte size.
    let prefix = v2::Prefix {
        creation_order_tracked: true,
        times: Some(v2::Times {
            access: 1,
            modification: 2,
            change: 3,
            birth: 4,
        }),
        phase_change: Some(v2::PhaseChange {
            max_compact: 10,
            min_dense: 4,
        }),
        ..v2::Prefix::default()
    };
    let msgs = vec![RawMessage::new(
        MessageType::ATTRIBUTE,
        MessageFlags::empty(),
        vec![7; 30],
    )];
    let h = ObjectHeader::new_v2(Addr(0x30), S, prefix, msgs, Some(300)).unwrap();
    let Prefix::V2(p) = h.prefix() else {
        panic!("not v2")
    };
    assert_eq!(p.chunk0_size_width, 2);
    let bytes = h.encode_chunks().unwrap().remove(0).1;
    assert_eq!(bytes[5], 0x35);
    assert_eq!(
        ObjectHeader::decode_chunk0(&bytes, Addr(0x30), S).unwrap(),
        h
    );
}

/// A header at 0x100 whose chunk 0 continues at 0x400, which continues at 0x800.
fn chained(version: u8) -> ObjectHeader {
    let cont = |offset: u64, length: u64| {
        let mut data = Vec::new();
        Continuation {
            offset: Addr(offset),
            length,
        }
        .encode(&mut Encoder::new(&mut data, S, "test"))
        .unwrap();
        RawMessage::new(MessageType::CONTINUATION, MessageFlags::empty(), data)
    };
    let attr = |n: u8| RawMessage::new(MessageType::ATTRIBUTE, MessageFlags::empty(), vec![n; 16]);
    // Lengths: v1 blocks are bare messages (8-byte headers); v2 blocks add OCHK + checksum.
    let (len1, len2) = match version {
        1 => (24 + 24, 24),
        _ => (8 + 20 + 20, 8 + 20),
    };
    let chunk0 = vec![attr(1), cont(0x400, len1)];
    let mut h = match version {
        1 => ObjectHeader::new_v1(Addr(0x100), S, 1, chunk0, None).unwrap(),
        _ => ObjectHeader::new_v2(Addr(0x100), S, v2::Prefix::default(), chunk0, None).unwrap(),
    };
    h.push_chunk(Chunk {
        addr: Addr(0x400),
        messages: vec![attr(2), cont(0x800, len2)],
        gap: vec![],
    })
    .unwrap();
    h.push_chunk(Chunk {
        addr: Addr(0x800),
        messages: vec![attr(3)],
        gap: vec![],
    })
    .unwrap();
    h.update_message_count().unwrap();
    h.validate().unwrap();
    h
}

#[test]
fn roundtrip_continuation_chains() {
    for version in [1, 2] {
        let h = chained(version);
        let chunks = h.encode_chunks().unwrap();
        assert_eq!(chunks.len(), 3);
        if version == 2 {
            assert_eq!(&chunks[1].1[..4], b"OCHK");
        }
        let back = read_from(&file_with(&chunks), Addr(0x100)).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.message_count(), 5);
        assert_eq!(back.next_continuation().unwrap(), None);
        // A cache loading chunk by chunk gets the same header.
        let mut cached = ObjectHeader::decode_chunk0(&chunks[0].1, Addr(0x100), S).unwrap();
        while let Some(c) = cached.next_continuation().unwrap() {
            let (_, bytes) = chunks.iter().find(|(a, _)| *a == c.offset).unwrap();
            let chunk = cached.decode_continuation(bytes, c.offset).unwrap();
            cached.push_chunk(chunk).unwrap();
        }
        cached.validate().unwrap();
        assert_eq!(cached, h);
    }
}

#[test]
fn rejects_cyclic_continuation() {
    for version in [1, 2] {
        for target in [0x100u64, 0x400] {
            let mut h = chained(version);
            // Point chunk 1's continuation back at chunk 0 or at itself.
            let m = &mut h.chunk_mut(1).unwrap().messages[1];
            m.data[..8].copy_from_slice(&target.to_le_bytes());
            let chunks = h.encode_chunks().unwrap();
            let err = read_from(&file_with(&chunks), Addr(0x100)).unwrap_err();
            assert!(
                matches!(&err, Error::Invalid { reason, .. } if reason.contains("cyclic")),
                "v{version} -> {target:#x}: {err}"
            );
        }
    }
}

#[test]
fn rejects_message_count_mismatch() {
    let mut bytes = earliest_dataset();
    bytes[2] = 6;
    let err = read_from(&file_with(&[(Addr(0x320), bytes.clone())]), Addr(0x320)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Invalid {
                at: Addr(0x320),
                ..
            }
        ),
        "{err}"
    );
    // The stored value survives a decode for re-encoding.
    let h = ObjectHeader::decode_chunk0(&bytes, Addr(0x320), S).unwrap();
    assert_eq!(h.encode_chunks().unwrap()[0].1, bytes);
}

#[test]
fn rejects_bad_message_flags_and_sizes() {
    let mut bytes = EARLIEST_ROOT;
    bytes[20] = 0x06; // shared + do not share
    assert!(matches!(
        ObjectHeader::decode_chunk0(&bytes, Addr(0x60), S),
        Err(Error::BadValue {
            field: "message flags",
            at: Addr(0x74),
            ..
        })
    ));
    let mut bytes = EARLIEST_ROOT;
    bytes[18] = 0x0f; // size 15: not 8-byte aligned
    assert!(ObjectHeader::decode_chunk0(&bytes, Addr(0x60), S).is_err());
    let mut bytes = EARLIEST_ROOT;
    bytes[0] = 3;
    assert!(matches!(
        ObjectHeader::decode_chunk0(&bytes, Addr(0x60), S),
        Err(Error::BadVersion { version: 3, .. })
    ));
}

#[test]
fn rejects_unencodable_edits() {
    let mut h = ObjectHeader::decode_chunk0(&EARLIEST_ROOT, Addr(0x60), S).unwrap();
    h.chunk_mut(0).unwrap().messages[0].data.push(0);
    assert!(matches!(
        h.encode_chunk(0, &mut Vec::new()),
        Err(Error::Unencodable { .. })
    ));
    let mut h = ObjectHeader::decode_chunk0(&latest_root(), Addr(0x30), S).unwrap();
    h.chunk_mut(0).unwrap().gap = vec![0; 4];
    assert!(h.encode_chunk(0, &mut Vec::new()).is_err());
    let mut h = ObjectHeader::decode_chunk0(&latest_root(), Addr(0x30), S).unwrap();
    h.chunk_mut(0).unwrap().messages[3].data.resize(300, 0);
    assert!(matches!(
        h.encode_chunk(0, &mut Vec::new()),
        Err(Error::TooWide { .. })
    ));
    assert!(h.encode_chunk(1, &mut Vec::new()).is_err());
}

#[test]
fn rejects_truncation() {
    for (at, bytes) in images() {
        for n in 0..bytes.len() {
            assert!(
                ObjectHeader::decode_chunk0(&bytes[..n], at, S).is_err(),
                "{at} prefix {n}"
            );
            let file = file_with(&[(at, bytes[..n].to_vec())]);
            assert!(read_from(&file, at).is_err(), "{at} read prefix {n}");
        }
    }
    let h = chained(2);
    let chunks = h.encode_chunks().unwrap();
    for n in 0..chunks[1].1.len() {
        assert!(
            h.decode_continuation(&chunks[1].1[..n], Addr(0x400))
                .is_err()
        );
    }
}

#[test]
fn rejects_flipped_byte() {
    let h = chained(2);
    let chunks = h.encode_chunks().unwrap();
    for (at, bytes) in [(Addr(0x30), latest_root()), (Addr(0xb3), latest_dataset())] {
        for i in 0..bytes.len() {
            for bit in [0x01u8, 0x80] {
                let mut b = bytes.clone();
                b[i] ^= bit;
                assert!(
                    ObjectHeader::decode_chunk0(&b, at, S).is_err(),
                    "{at} byte {i}"
                );
            }
        }
    }
    for i in 0..chunks[1].1.len() {
        let mut b = chunks[1].1.clone();
        b[i] ^= 0x01;
        assert!(
            h.decode_continuation(&b, Addr(0x400)).is_err(),
            "OCHK byte {i}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = chunk0_len(&bytes, Addr(0));
        let _ = ObjectHeader::decode_chunk0(&bytes, Addr(0), S);
        let h = chained(2);
        let _ = h.decode_continuation(&bytes, Addr(0x400));
        let _ = chained(1).decode_continuation(&bytes, Addr(0x400));
        let _ = read_from(&bytes, Addr(0));
    }

    #[test]
    fn mutated_images_never_panic(
        which in 0usize..4,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
    ) {
        let (at, mut bytes) = images().swap_remove(which);
        for (i, v) in edits {
            let i = i % bytes.len();
            bytes[i] = v;
        }
        let _ = ObjectHeader::decode_chunk0(&bytes, at, S);
        let _ = read_from(&file_with(&[(at, bytes)]), at);
    }

    #[test]
    fn mutated_chains_never_panic(
        version in 1u8..=2,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
    ) {
        let mut file = file_with(&chained(version).encode_chunks().unwrap());
        for (i, v) in edits {
            let i = i % file.len();
            file[i] = v;
        }
        let _ = read_from(&file, Addr(0x100));
    }
}

/// A version 2 chunk 0 with `flags` around the message area `area`, with a valid checksum.
fn v2_chunk0_around(flags: u8, area: &[u8]) -> Vec<u8> {
    let mut v = b"OHDR".to_vec();
    v.push(2);
    v.push(flags);
    if flags & 0x20 != 0 {
        v.extend_from_slice(&[1; 16]);
    }
    if flags & 0x10 != 0 {
        v.extend_from_slice(&[8, 0, 6, 0]);
    }
    let width = [1usize, 2, 4, 8][usize::from(flags & 3)];
    v.extend_from_slice(&(area.len() as u64).to_le_bytes()[..width]);
    v.extend_from_slice(area);
    let sum = lookup3(&v);
    v.extend_from_slice(&sum.to_le_bytes());
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any message area under a valid checksum either fails to decode or re-encodes to the
    /// identical bytes (version 2 headers have no reserved bytes to normalise).
    #[test]
    fn roundtrip_random_v2_chunks(
        flags in 0u8..0x40,
        area in proptest::collection::vec(
            prop_oneof![Just(0u8), Just(1), Just(4), Just(0x10), any::<u8>()], 0..120),
    ) {
        let bytes = v2_chunk0_around(flags, &area);
        if let Ok(h) = ObjectHeader::decode_chunk0(&bytes, Addr(0x40), S) {
            prop_assert_eq!(h.encode_chunks().unwrap(), vec![(Addr(0x40), bytes.clone())]);
            prop_assert_eq!(h.chunk_extent(0).unwrap().len, bytes.len() as u64);
        }
        let mut ochk = b"OCHK".to_vec();
        ochk.extend_from_slice(&area);
        let sum = lookup3(&ochk);
        ochk.extend_from_slice(&sum.to_le_bytes());
        let base = chained(2);
        if let Ok(c) = base.decode_continuation(&ochk, Addr(0x400)) {
            let mut h = base.clone();
            *h.chunk_mut(1).unwrap() = c;
            let mut out = Vec::new();
            h.encode_chunk(1, &mut out).unwrap();
            prop_assert_eq!(out, ochk);
        }
    }
}
