//! Object header messages: their type numbers and typed bodies.
//!
//! Each message body has a domain type with `decode(&mut Decoder)` and
//! `encode(&self, &mut Encoder)`. Decoders ignore trailing bytes after the body (version 1
//! object headers pad every body to a multiple of 8 bytes); object-header code keeps the raw
//! bytes, so nothing is lost when a header is rewritten.

pub mod continuation;

pub use continuation::Continuation;

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
}
