//! Object header messages: their type numbers and typed bodies.
//!
//! Each message body has a domain type with `decode(&mut Decoder)` and
//! `encode(&self, &mut Encoder)`; [`Message`] ties them to their type numbers. Decoders ignore
//! trailing bytes after the body (version 1 object headers pad every body to a multiple of 8
//! bytes) but never read past the body's bytes. Nothing a decoder accepts is normalised: every
//! decoded message re-encodes to exactly the bytes it came from, so rewriting a header loses
//! nothing. Types without a domain type here (Attribute Info, Reference Count, ...) stay
//! [`Message::Unknown`], as bytes.
//!
//! | type   | message                  | domain type                     |
//! |--------|--------------------------|---------------------------------|
//! | 0x0000 | NIL                      | [`Nil`]                         |
//! | 0x0001 | Dataspace                | [`Dataspace`]                   |
//! | 0x0002 | Link Info                | [`LinkInfo`]                    |
//! | 0x0003 | Datatype                 | [`Datatype`] (all but complex)  |
//! | 0x0004 | Fill Value (old)         | [`FillValueOld`]                |
//! | 0x0005 | Fill Value               | [`FillValue`]                   |
//! | 0x0006 | Link                     | [`Link`]                        |
//! | 0x0008 | Data Layout              | [`DataLayout`]                  |
//! | 0x000A | Group Info               | [`GroupInfo`]                   |
//! | 0x000B | Filter Pipeline          | [`FilterPipeline`]              |
//! | 0x000C | Attribute                | [`Attribute`]                   |
//! | 0x000E | Modification Time (old)  | [`ModificationTimeOld`]         |
//! | 0x0010 | Continuation             | [`Continuation`]                |
//! | 0x0011 | Symbol Table             | [`SymbolTable`]                 |
//! | 0x0012 | Modification Time        | [`ModificationTime`]            |

pub mod attribute;
pub mod btree_k;
pub mod continuation;
pub mod dataspace;
pub mod datatype;
pub mod external_files;
pub mod file_space_info;
pub mod fill_value;
pub mod filter_pipeline;
pub mod group_info;
pub mod layout;
pub mod link;
pub mod link_info;
pub mod modification_time;
pub mod nil;
pub mod shared;
pub mod symbol_table;

pub use attribute::Attribute;
pub use btree_k::BTreeKValues;
pub use continuation::Continuation;
pub use dataspace::{Dataspace, DataspaceKind, DataspaceVersion, Extent};
pub use datatype::{
    Bitfield, ByteOrder, CharSet, CompoundMember, Datatype, DatatypeClass, DatatypeVersion,
    FixedPoint, FloatByteOrder, FloatLayout, FloatingPoint, MemberArrayV1, NativeType,
    Normalization, StringPadding, StringType, VarLenKind,
};
pub use external_files::{ExternalFiles, ExternalSlot};
pub use file_space_info::{FileSpaceInfo, FileSpaceStrategy};
pub use fill_value::{
    AllocTime, FillDefinition, FillTime, FillValue, FillValueOld, FillValueVersion,
};
pub use filter_pipeline::{Filter, FilterPipeline, PipelineVersion};
pub use group_info::{EntryEstimates, GroupInfo, LinkPhaseChange};
pub use layout::{
    Btree2Params, ChunkIndex, ChunkedFlags, ChunkedLayout, DataLayout, EarrayParams, FilteredChunk,
    LayoutVersion, LegacyClass, LegacyLayout, SKIP_LIST_INDEX_TYPE, SkipListParams,
};
pub use link::{CharacterSet, Link, LinkTarget};
pub use link_info::LinkInfo;
pub use modification_time::{ModificationTime, ModificationTimeOld};
pub use nil::Nil;
pub use shared::SharedMessage;
pub use symbol_table::SymbolTable;

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::Result;
use crate::sizes::Sizes;

/// Consume `n` reserved bytes. They must be zero (libhdf5 always writes zeros there), so that
/// re-encoding a decoded message reproduces its bytes exactly.
#[deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects
)]
pub(crate) fn reserved(d: &mut Decoder<'_>, n: usize) -> Result<()> {
    let at = d.addr();
    let bytes = d.bytes(n)?;
    if let Some((i, &b)) = bytes.iter().enumerate().find(|&(_, &b)| b != 0) {
        let at = at.checked_add(i as u64).unwrap_or(at);
        return Err(d.bad_value(at, "reserved", u64::from(b)));
    }
    Ok(())
}

/// A decoded object header message body.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Message {
    /// 0x0000, padding.
    Nil(Nil),
    /// 0x0001.
    Dataspace(Dataspace),
    /// 0x0002.
    LinkInfo(LinkInfo),
    /// 0x0003 (every class but complex numbers).
    Datatype(Datatype),
    /// 0x0004.
    FillValueOld(FillValueOld),
    /// 0x0005.
    FillValue(FillValue),
    /// 0x0006.
    Link(Link),
    /// 0x0008.
    DataLayout(DataLayout),
    /// 0x000A.
    GroupInfo(GroupInfo),
    /// 0x000B.
    FilterPipeline(FilterPipeline),
    /// 0x000C.
    Attribute(Attribute),
    /// 0x000E.
    ModificationTimeOld(ModificationTimeOld),
    /// 0x0010.
    Continuation(Continuation),
    /// 0x0011.
    SymbolTable(SymbolTable),
    /// 0x0012.
    ModificationTime(ModificationTime),
    /// Any other message type, and a NIL message whose bytes are not all zero: kept opaque.
    Unknown {
        /// The message type.
        kind: MessageType,
        /// The message body, as stored (padding included).
        data: Vec<u8>,
    },
}

#[deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects
)]
impl Message {
    /// Decode the body `data` of a message of type `kind`, whose first byte is at file
    /// address `at`. Trailing bytes after the body are ignored (version 1 object headers pad
    /// bodies to 8 bytes). Types without a domain type become [`Message::Unknown`].
    pub fn decode(kind: MessageType, data: &[u8], at: Addr, sizes: Sizes) -> Result<Message> {
        let d = &mut Decoder::new(data, at, sizes, kind.structure_name());
        Ok(match kind {
            MessageType::NIL if data.iter().all(|&b| b == 0) => Message::Nil(Nil::decode(d)?),
            MessageType::DATASPACE => Message::Dataspace(Dataspace::decode(d)?),
            MessageType::LINK_INFO => Message::LinkInfo(LinkInfo::decode(d)?),
            MessageType::DATATYPE => Message::Datatype(Datatype::decode(d)?),
            MessageType::FILL_VALUE_OLD => Message::FillValueOld(FillValueOld::decode(d)?),
            MessageType::FILL_VALUE => Message::FillValue(FillValue::decode(d)?),
            MessageType::LINK => Message::Link(Link::decode(d)?),
            MessageType::DATA_LAYOUT => Message::DataLayout(DataLayout::decode(d)?),
            MessageType::GROUP_INFO => Message::GroupInfo(GroupInfo::decode(d)?),
            MessageType::FILTER_PIPELINE => Message::FilterPipeline(FilterPipeline::decode(d)?),
            MessageType::ATTRIBUTE => Message::Attribute(Attribute::decode(d)?),
            MessageType::MODIFICATION_TIME_OLD => {
                Message::ModificationTimeOld(ModificationTimeOld::decode(d)?)
            }
            MessageType::CONTINUATION => Message::Continuation(Continuation::decode(d)?),
            MessageType::SYMBOL_TABLE => Message::SymbolTable(SymbolTable::decode(d)?),
            MessageType::MODIFICATION_TIME => {
                Message::ModificationTime(ModificationTime::decode(d)?)
            }
            _ => Message::Unknown {
                kind,
                data: data.to_vec(),
            },
        })
    }

    /// Append the encoded body to `out`. On error nothing is appended.
    pub fn encode(&self, sizes: Sizes, out: &mut Vec<u8>) -> Result<()> {
        let start = out.len();
        // A dataspace (rewritten on every flush of a growing dataset) knows its length.
        if let Message::Dataspace(m) = self {
            out.reserve(m.encoded_len(sizes));
        }
        let result = self.encode_inner(&mut Encoder::new(out, sizes, self.kind().structure_name()));
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    fn encode_inner(&self, e: &mut Encoder<'_>) -> Result<()> {
        match self {
            Message::Nil(m) => m.encode(e),
            Message::Dataspace(m) => m.encode(e),
            Message::LinkInfo(m) => m.encode(e),
            Message::Datatype(m) => m.encode(e),
            Message::FillValueOld(m) => m.encode(e),
            Message::FillValue(m) => m.encode(e),
            Message::Link(m) => m.encode(e),
            Message::DataLayout(m) => m.encode(e),
            Message::GroupInfo(m) => m.encode(e),
            Message::FilterPipeline(m) => m.encode(e),
            Message::Attribute(m) => m.encode(e),
            Message::ModificationTimeOld(m) => m.encode(e),
            Message::Continuation(m) => m.encode(e),
            Message::SymbolTable(m) => m.encode(e),
            Message::ModificationTime(m) => m.encode(e),
            Message::Unknown { data, .. } => {
                e.bytes(data);
                Ok(())
            }
        }
    }

    /// The message type.
    pub fn kind(&self) -> MessageType {
        match self {
            Message::Nil(_) => MessageType::NIL,
            Message::Dataspace(_) => MessageType::DATASPACE,
            Message::LinkInfo(_) => MessageType::LINK_INFO,
            Message::Datatype(_) => MessageType::DATATYPE,
            Message::FillValueOld(_) => MessageType::FILL_VALUE_OLD,
            Message::FillValue(_) => MessageType::FILL_VALUE,
            Message::Link(_) => MessageType::LINK,
            Message::DataLayout(_) => MessageType::DATA_LAYOUT,
            Message::GroupInfo(_) => MessageType::GROUP_INFO,
            Message::FilterPipeline(_) => MessageType::FILTER_PIPELINE,
            Message::Attribute(_) => MessageType::ATTRIBUTE,
            Message::ModificationTimeOld(_) => MessageType::MODIFICATION_TIME_OLD,
            Message::Continuation(_) => MessageType::CONTINUATION,
            Message::SymbolTable(_) => MessageType::SYMBOL_TABLE,
            Message::ModificationTime(_) => MessageType::MODIFICATION_TIME,
            Message::Unknown { kind, .. } => *kind,
        }
    }

    /// The encoded body's length in bytes, without padding.
    pub fn encoded_len(&self, sizes: Sizes) -> usize {
        match self {
            Message::Nil(m) => m.encoded_len(),
            Message::Dataspace(m) => m.encoded_len(sizes),
            Message::LinkInfo(m) => m.encoded_len(sizes),
            Message::Datatype(m) => m.encoded_len(),
            Message::FillValueOld(m) => m.encoded_len(),
            Message::FillValue(m) => m.encoded_len(),
            Message::Link(m) => m.encoded_len(sizes),
            Message::DataLayout(m) => m.encoded_len(sizes),
            Message::GroupInfo(m) => m.encoded_len(),
            Message::FilterPipeline(m) => m.encoded_len(),
            Message::Attribute(m) => m.encoded_len(),
            Message::ModificationTimeOld(_) => ModificationTimeOld::encoded_len(),
            Message::Continuation(_) => Continuation::encoded_len(sizes),
            Message::SymbolTable(_) => SymbolTable::encoded_len(sizes),
            Message::ModificationTime(_) => ModificationTime::encoded_len(),
            Message::Unknown { data, .. } => data.len(),
        }
    }
}

/// Object header message type numbers (the spec's "Header Message Type").
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct MessageType(pub u16);

impl MessageType {
    pub const NIL: MessageType = MessageType(0x0000);
    pub const DATASPACE: MessageType = MessageType(0x0001);
    pub const LINK_INFO: MessageType = MessageType(0x0002);
    pub const DATATYPE: MessageType = MessageType(0x0003);
    pub const FILL_VALUE_OLD: MessageType = MessageType(0x0004);
    pub const FILL_VALUE: MessageType = MessageType(0x0005);
    pub const LINK: MessageType = MessageType(0x0006);
    pub const EXTERNAL_FILES: MessageType = MessageType(0x0007);
    pub const DATA_LAYOUT: MessageType = MessageType(0x0008);
    pub const BOGUS: MessageType = MessageType(0x0009);
    pub const GROUP_INFO: MessageType = MessageType(0x000A);
    pub const FILTER_PIPELINE: MessageType = MessageType(0x000B);
    pub const ATTRIBUTE: MessageType = MessageType(0x000C);
    pub const OBJECT_COMMENT: MessageType = MessageType(0x000D);
    pub const MODIFICATION_TIME_OLD: MessageType = MessageType(0x000E);
    pub const SHARED_MESSAGE_TABLE: MessageType = MessageType(0x000F);
    pub const CONTINUATION: MessageType = MessageType(0x0010);
    pub const SYMBOL_TABLE: MessageType = MessageType(0x0011);
    pub const MODIFICATION_TIME: MessageType = MessageType(0x0012);
    pub const BTREE_K: MessageType = MessageType(0x0013);
    pub const DRIVER_INFO: MessageType = MessageType(0x0014);
    pub const ATTRIBUTE_INFO: MessageType = MessageType(0x0015);
    pub const REFERENCE_COUNT: MessageType = MessageType(0x0016);
    pub const FILE_SPACE_INFO: MessageType = MessageType(0x0017);

    /// The message's name as the specification gives it.
    pub fn name(self) -> &'static str {
        match self.structure_name().strip_suffix(" message") {
            Some(name) => name,
            None => "unknown",
        }
    }

    /// The structure name decode errors carry, such as `"Dataspace message"`.
    pub fn structure_name(self) -> &'static str {
        match self {
            MessageType::NIL => "NIL message",
            MessageType::DATASPACE => "Dataspace message",
            MessageType::LINK_INFO => "Link Info message",
            MessageType::DATATYPE => "Datatype message",
            MessageType::FILL_VALUE_OLD => "Fill Value (old) message",
            MessageType::FILL_VALUE => "Fill Value message",
            MessageType::LINK => "Link message",
            MessageType::EXTERNAL_FILES => "External Data Files message",
            MessageType::DATA_LAYOUT => "Data Layout message",
            MessageType::BOGUS => "Bogus message",
            MessageType::GROUP_INFO => "Group Info message",
            MessageType::FILTER_PIPELINE => "Filter Pipeline message",
            MessageType::ATTRIBUTE => "Attribute message",
            MessageType::OBJECT_COMMENT => "Object Comment message",
            MessageType::MODIFICATION_TIME_OLD => "Modification Time (old) message",
            MessageType::SHARED_MESSAGE_TABLE => "Shared Message Table message",
            MessageType::CONTINUATION => "Object Header Continuation message",
            MessageType::SYMBOL_TABLE => "Symbol Table message",
            MessageType::MODIFICATION_TIME => "Modification Time message",
            MessageType::BTREE_K => "B-tree 'K' Values message",
            MessageType::DRIVER_INFO => "Driver Info message",
            MessageType::ATTRIBUTE_INFO => "Attribute Info message",
            MessageType::REFERENCE_COUNT => "Reference Count message",
            MessageType::FILE_SPACE_INFO => "File Space Info message",
            _ => "unknown message",
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;
    use crate::error::Error;
    use proptest::prelude::*;

    fn ff(n: usize) -> Vec<u8> {
        vec![0xff; n]
    }

    fn cat(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    /// The messages of the files of docs/format/file-format.md §9.1 (latest, v2 object headers, exact
    /// sizes) and §9.5 (earliest, v1 object headers, bodies padded to 8): (type, address,
    /// stored size, body without padding).
    fn h5py_messages() -> Vec<(MessageType, u64, usize, Vec<u8>)> {
        use MessageType as T;
        let layout_v4 = cat(&[
            &[
                0x04, 0x02, 0x00, 0x02, 0x01, 0x04, 0x04, 0x04, 0x20, 0x04, 0x04, 0x10, 0x0a,
            ],
            &ff(8),
        ]);
        let layout_v3 = cat(&[&[0x03, 0x02, 0x02], &ff(8), &[4, 0, 0, 0, 4, 0, 0, 0]]);
        vec![
            (T::LINK_INFO, 0x3b, 18, cat(&[&[0, 0], &ff(16)])),
            (T::GROUP_INFO, 0x51, 2, vec![0, 0]),
            (
                T::LINK,
                0x57,
                12,
                vec![1, 0, 1, b'd', 0xb3, 0, 0, 0, 0, 0, 0, 0],
            ),
            (T::NIL, 0x67, 72, vec![0; 72]),
            (
                T::DATASPACE,
                0xbf,
                20,
                cat(&[&[2, 1, 1, 1], &[0; 8], &ff(8)]),
            ),
            (
                T::DATATYPE,
                0xd7,
                12,
                vec![0x10, 0x08, 0, 0, 4, 0, 0, 0, 0, 0, 0x20, 0],
            ),
            (T::FILL_VALUE, 0xe7, 2, vec![0x03, 0x0b]),
            (T::DATA_LAYOUT, 0xed, 21, layout_v4),
            (T::NIL, 0x106, 181, vec![0; 181]),
            (
                T::SYMBOL_TABLE,
                0x78,
                16,
                cat(&[
                    &[0x88, 0, 0, 0, 0, 0, 0, 0],
                    &[0xa8, 0x02, 0, 0, 0, 0, 0, 0],
                ]),
            ),
            (
                T::DATASPACE,
                0x338,
                24,
                cat(&[&[1, 1, 1, 0, 0, 0, 0, 0], &[0; 8], &ff(8)]),
            ),
            (
                T::DATATYPE,
                0x358,
                16,
                vec![0x10, 0x08, 0, 0, 4, 0, 0, 0, 0, 0, 0x20, 0],
            ),
            (
                T::FILL_VALUE,
                0x370,
                8,
                vec![0x02, 0x03, 0x02, 0x01, 0, 0, 0, 0],
            ),
            (T::DATA_LAYOUT, 0x380, 24, layout_v3),
            (T::NIL, 0x3a0, 144, vec![0; 144]),
            (T::FILL_VALUE_OLD, 0x3a0, 8, vec![4, 0, 0, 0, 7, 0, 0, 0]),
            (
                T::MODIFICATION_TIME,
                0x3a0,
                8,
                vec![0x01, 0, 0, 0, 0x46, 0x37, 0x02, 0x6b],
            ),
            (
                T::CONTINUATION,
                0x3a0,
                16,
                vec![0x78, 0x05, 0, 0, 0, 0, 0, 0, 0xe0, 0x01, 0, 0, 0, 0, 0, 0],
            ),
        ]
    }

    #[test]
    fn roundtrip_h5py_headers() {
        for (kind, at, stored, body) in h5py_messages() {
            let mut data = body.clone();
            data.resize(stored, 0);
            let m = Message::decode(kind, &data, Addr(at), Sizes::DEFAULT)
                .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
            assert!(!matches!(m, Message::Unknown { .. }), "{kind:?}");
            assert_eq!(m.kind(), kind);
            let mut out = vec![0xaa];
            m.encode(Sizes::DEFAULT, &mut out).unwrap();
            assert_eq!(&out[1..], &body[..], "{kind:?}");
            assert_eq!(m.encoded_len(Sizes::DEFAULT), body.len(), "{kind:?}");
        }
    }

    #[test]
    fn unknown_types_and_dirty_nil_stay_bytes() {
        let attr_info = cat(&[&[0, 0], &ff(16)]);
        let m = Message::decode(
            MessageType::ATTRIBUTE_INFO,
            &attr_info,
            Addr(0),
            Sizes::DEFAULT,
        )
        .unwrap();
        assert_eq!(
            m,
            Message::Unknown {
                kind: MessageType::ATTRIBUTE_INFO,
                data: attr_info.clone()
            }
        );
        let mut out = Vec::new();
        m.encode(Sizes::DEFAULT, &mut out).unwrap();
        assert_eq!(out, attr_info);
        let dirty = [0u8, 0, 7, 0];
        let m = Message::decode(MessageType::NIL, &dirty, Addr(0), Sizes::DEFAULT).unwrap();
        assert_eq!(m.kind(), MessageType::NIL);
        assert_eq!(m.encoded_len(Sizes::DEFAULT), 4);
        out.clear();
        m.encode(Sizes::DEFAULT, &mut out).unwrap();
        assert_eq!(out, dirty);
    }

    #[test]
    fn errors_name_the_message_and_address() {
        let err =
            Message::decode(MessageType::DATASPACE, &[9], Addr(0xbf), Sizes::DEFAULT).unwrap_err();
        assert!(matches!(
            err,
            Error::BadVersion {
                structure: "Dataspace message",
                at: Addr(0xbf),
                version: 9
            }
        ));
        assert_eq!(MessageType::DATASPACE.name(), "Dataspace");
        assert_eq!(MessageType(0x99).name(), "unknown");
        // A failed encode appends nothing.
        let legacy = Message::decode(
            MessageType::DATA_LAYOUT,
            &[
                1, 2, 2, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 4, 0, 0, 0,
            ],
            Addr(0),
            Sizes::DEFAULT,
        )
        .unwrap();
        let mut out = vec![1, 2, 3];
        assert!(matches!(
            legacy.encode(Sizes::DEFAULT, &mut out),
            Err(Error::Unencodable { .. })
        ));
        assert_eq!(out, [1, 2, 3]);
    }

    #[test]
    fn rejects_truncation() {
        for (kind, at, _, body) in h5py_messages() {
            if kind == MessageType::NIL {
                continue; // every prefix of a NIL body is a shorter NIL body
            }
            for n in 0..body.len() {
                assert!(
                    Message::decode(kind, &body[..n], Addr(at), Sizes::DEFAULT).is_err(),
                    "{kind:?} prefix {n}"
                );
            }
        }
    }

    const KINDS: [MessageType; 16] = [
        MessageType::NIL,
        MessageType::DATASPACE,
        MessageType::LINK_INFO,
        MessageType::DATATYPE,
        MessageType::FILL_VALUE_OLD,
        MessageType::FILL_VALUE,
        MessageType::LINK,
        MessageType::DATA_LAYOUT,
        MessageType::GROUP_INFO,
        MessageType::FILTER_PIPELINE,
        MessageType::MODIFICATION_TIME_OLD,
        MessageType::CONTINUATION,
        MessageType::SYMBOL_TABLE,
        MessageType::MODIFICATION_TIME,
        MessageType::ATTRIBUTE,
        MessageType::ATTRIBUTE_INFO,
    ];

    fn sizes() -> impl Strategy<Value = Sizes> {
        prop_oneof![
            Just((8u8, 8u8)),
            Just((4, 4)),
            Just((2, 2)),
            Just((4, 8)),
            Just((8, 2))
        ]
        .prop_map(|(o, l)| Sizes::new(o, l, Addr(0)).unwrap())
    }

    /// Bytes biased towards small values, so versions, flags and counts are often valid.
    fn body() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(prop_oneof![0u8..=8, Just(0xff), any::<u8>()], 0..96)
    }

    fn check_roundtrip(m: &Message, sizes: Sizes) -> Vec<u8> {
        let mut out = Vec::new();
        m.encode(sizes, &mut out).unwrap();
        assert_eq!(out.len(), m.encoded_len(sizes));
        let back = Message::decode(m.kind(), &out, Addr(0x40), sizes).unwrap();
        assert_eq!(&back, m);
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Any bytes: no panic; whatever decodes re-encodes to a prefix of its bytes.
        #[test]
        fn decode_never_panics(kind in proptest::sample::select(&KINDS[..]), data in body(), sizes in sizes()) {
            if let Ok(m) = Message::decode(kind, &data, Addr(0x1000), sizes) {
                let mut out = Vec::new();
                match m.encode(sizes, &mut out) {
                    Ok(()) => {
                        prop_assert!(data.starts_with(&out), "{m:?}: {out:02x?} vs {data:02x?}");
                        prop_assert_eq!(out.len(), m.encoded_len(sizes));
                    }
                    Err(e) => prop_assert!(
                        matches!(m, Message::DataLayout(DataLayout::Legacy(_))),
                        "{m:?}: {e}"
                    ),
                }
            }
        }

        /// Valid h5py message bodies with a few bytes replaced and the length changed: no
        /// panic, and whatever decodes re-encodes to a prefix of its bytes.
        #[test]
        fn mutated_messages_never_panic(
            pick in any::<proptest::sample::Index>(),
            edits in proptest::collection::vec((any::<proptest::sample::Index>(), prop_oneof![0u8..=8, Just(0xff), any::<u8>()]), 1..4),
            resize in proptest::option::of(0usize..200),
        ) {
            let samples = h5py_messages();
            let (kind, at, stored, body) = &samples[pick.index(samples.len())];
            let mut data = body.clone();
            data.resize(*stored, 0);
            for (i, b) in edits {
                let i = i.index(data.len().max(1));
                if let Some(slot) = data.get_mut(i) {
                    *slot = b;
                }
            }
            if let Some(n) = resize {
                data.resize(n, 0);
            }
            if let Ok(m) = Message::decode(*kind, &data, Addr(*at), Sizes::DEFAULT) {
                let mut out = Vec::new();
                match m.encode(Sizes::DEFAULT, &mut out) {
                    Ok(()) => prop_assert!(data.starts_with(&out), "{m:?}: {out:02x?} vs {data:02x?}"),
                    Err(e) => prop_assert!(
                        matches!(m, Message::DataLayout(DataLayout::Legacy(_))),
                        "{m:?}: {e}"
                    ),
                }
            }
        }

        #[test]
        fn decode_any_type_number_never_panics(kind in any::<u16>(), data in body()) {
            let _ = Message::decode(MessageType(kind), &data, Addr(0), Sizes::DEFAULT);
        }

        #[test]
        fn roundtrip_dataspace(
            v1 in any::<bool>(),
            dims in proptest::collection::vec(0u64..1 << 40, 0..=dataspace::MAX_RANK),
            max in proptest::option::of(proptest::collection::vec(proptest::option::of(0u64..1 << 40), dataspace::MAX_RANK)),
            sizes in sizes(),
        ) {
            let limit = sizes.undef_length();
            // The element count fits in 64 bits (the decoder refuses more): the dimension
            // that would overflow it becomes 0.
            let mut elements = 1u64;
            let dims: Vec<u64> = dims
                .into_iter()
                .map(|d| {
                    let d = d % limit;
                    let d = if elements.checked_mul(d).is_some() { d } else { 0 };
                    elements = elements.saturating_mul(d);
                    d
                })
                .collect();
            // A maximum is never below its dimension (the decoder refuses that).
            let max_dims = max.map(|m| {
                m.into_iter()
                    .zip(&dims)
                    .map(|(x, &d)| x.map_or(Extent::Unlimited, |v| Extent::Fixed((v % limit).max(d))))
                    .collect()
            });
            let mut ds = Dataspace::simple(dims, max_dims);
            if v1 {
                ds.version = DataspaceVersion::V1;
            }
            if ds.dims.is_empty() {
                ds.kind = DataspaceKind::Scalar;
            }
            check_roundtrip(&Message::Dataspace(ds), sizes);
        }

        #[test]
        fn roundtrip_chunked_layout(
            version in prop_oneof![Just(LayoutVersion::V4), Just(LayoutVersion::V5)],
            dims in proptest::collection::vec(1u64..=u64::from(u32::MAX), 1..=32),
            elem in 1u64..=16,
            index_kind in 0u8..6,
            params in any::<[u8; 5]>(),
            size in any::<u64>(),
            mask in any::<u32>(),
            addr in proptest::option::of(0u64..0xffff),
            dont_filter in any::<bool>(),
            sizes in sizes(),
        ) {
            let nz = |v: u8| v.max(1);
            let index = match index_kind {
                0 => ChunkIndex::Single(None),
                1 => ChunkIndex::Single(Some(FilteredChunk { size: size % sizes.undef_length(), filter_mask: mask })),
                2 => ChunkIndex::Implicit,
                3 => ChunkIndex::FixedArray { max_dblk_page_nelmts_bits: nz(params[0]) },
                4 => ChunkIndex::ExtensibleArray(EarrayParams {
                    max_nelmts_bits: nz(params[0]),
                    idx_blk_elmts: nz(params[1]),
                    sup_blk_min_data_ptrs: nz(params[2]),
                    data_blk_min_elmts: nz(params[3]),
                    max_dblk_page_nelmts_bits: nz(params[4]),
                }),
                _ => ChunkIndex::BTreeV2(Btree2Params {
                    node_size: u32::from_le_bytes([params[0], params[1], params[2], params[3]]),
                    split_percent: params[4],
                    merge_percent: params[0],
                }),
            };
            let mut c = ChunkedLayout::new(version, &dims, elem, index, addr.map(Addr));
            prop_assert_eq!(c.enc, layout::min_enc(&c.dims));
            prop_assert_eq!(c.chunk_dims(), &dims[..]);
            prop_assert_eq!(c.element_size(), elem);
            if dont_filter {
                c.flags |= ChunkedFlags::DONT_FILTER_PARTIAL_BOUND_CHUNKS;
            }
            check_roundtrip(&Message::DataLayout(DataLayout::Chunked(c.clone())), sizes);
            // A wider enc than needed is kept as given.
            c.enc = 8;
            check_roundtrip(&Message::DataLayout(DataLayout::Chunked(c)), sizes);
        }

        #[test]
        fn roundtrip_filter_pipeline(
            v1 in any::<bool>(),
            filters in proptest::collection::vec(
                (prop_oneof![1u16..=6, Just(32000u16), any::<u16>()], 0u16..4,
                 proptest::collection::vec(any::<u32>(), 0..6),
                 proptest::option::of(proptest::collection::vec(1u8..=255, 1..20))),
                0..=filter_pipeline::MAX_FILTERS),
        ) {
            let version = if v1 { PipelineVersion::V1 } else { PipelineVersion::V2 };
            let filters = filters
                .into_iter()
                .map(|(id, flags, cd, name)| {
                    let mut f = Filter::new(version, id, flags, cd);
                    if let Some(n) = name
                        && (version == PipelineVersion::V1 || id >= filter_pipeline::FIRST_THIRD_PARTY_ID)
                    {
                        f.name = Filter::name_field(version, &n);
                    }
                    f
                })
                .collect();
            check_roundtrip(&Message::FilterPipeline(FilterPipeline { version, filters }), Sizes::DEFAULT);
        }

        #[test]
        fn roundtrip_fill_value(
            version in 0u8..3,
            alloc in 0u8..3,
            fill in 0u8..3,
            value in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..16)),
        ) {
            let version = [FillValueVersion::V1, FillValueVersion::V2, FillValueVersion::V3][usize::from(version)];
            let value = match value {
                None => FillDefinition::Undefined,
                Some(v) if v.is_empty() && version != FillValueVersion::V3 => FillDefinition::Default,
                Some(v) if v.is_empty() && alloc == 0 => FillDefinition::Default,
                Some(v) => FillDefinition::User(v),
            };
            let f = FillValue {
                version,
                alloc_time: [AllocTime::Early, AllocTime::Late, AllocTime::Incremental][usize::from(alloc)],
                fill_time: [FillTime::OnAlloc, FillTime::Never, FillTime::IfSet][usize::from(fill)],
                value,
            };
            check_roundtrip(&Message::FillValue(f), Sizes::DEFAULT);
        }

        #[test]
        fn roundtrip_link(
            name in proptest::collection::vec(any::<u8>(), 1..300),
            target in 0u8..4,
            addr in 0u64..0xffff_ffff,
            path in proptest::collection::vec(1u8..=255, 1..40),
            file in proptest::collection::vec(1u8..=255, 0..40),
            order in proptest::option::of(any::<u64>()),
            utf8 in proptest::option::of(any::<bool>()),
            sizes in sizes(),
        ) {
            let addr = addr % (sizes.undef_offset());
            let mut l = match target {
                0 => Link::hard(name, Addr(addr)),
                1 => Link::soft(name, path),
                2 => Link::external(name, file, path),
                _ => Link::new(name, LinkTarget::UserDefined { link_type: 200, data: path }),
            };
            l.creation_order = order;
            l.charset = utf8.map(|u| if u { CharacterSet::Utf8 } else { CharacterSet::Ascii });
            check_roundtrip(&Message::Link(l), sizes);
        }

        #[test]
        fn roundtrip_datatype(
            size in 1u8..=16,
            signed in any::<bool>(),
            big in any::<bool>(),
            float_size in prop_oneof![Just(2u8), Just(4), Just(8)],
            float in any::<bool>(),
        ) {
            let order = if big { ByteOrder::BigEndian } else { ByteOrder::LittleEndian };
            let dt = if float {
                Datatype::float(float_size, order).unwrap()
            } else {
                Datatype::int(size, signed, order)
            };
            check_roundtrip(&Message::Datatype(dt), Sizes::DEFAULT);
        }
    }
}
