//! Shared message reference: the body of any message whose "shared" flag (bit 1 of the header
//! message flags) is set, in place of the message itself.
//!
//! | version | fields                                                                      |
//! |---------|-----------------------------------------------------------------------------|
//! | 1       | version (1), type (1, ignored: always committed), reserved (6), a symbol    |
//! |         | table entry's first fields: skipped (L), object header address (O)          |
//! | 2       | version (1), type (1), object header address (O)                            |
//! | 3       | version (1), type (1: 1 in the shared-message heap, 2 committed), then a    |
//! |         | heap ID (8 bytes) for type 1 or an object header address (O) for type 2     |
//!
//! A committed message (a named datatype, the common case) lives in the object header at the
//! address: its first message of the same type. A message in the shared-message heap (the
//! superblock extension's shared message table) is found through that table's index.

use crate::addr::Addr;
use crate::cursor::Decoder;
use crate::error::Result;

/// Where a shared message's body is.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum SharedMessage {
    /// In the object header at this address (a committed datatype, ...).
    Committed(Addr),
    /// In the fractal heap of the shared message table's index for its type, by heap ID.
    Heap([u8; 8]),
}

impl SharedMessage {
    /// Decode a shared message reference (any message type's body when it is shared).
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        let at = d.addr();
        let version = d.u8()?;
        let type_at = d.addr();
        let kind = d.u8()?;
        match version {
            1 => {
                d.skip(6)?;
                // The old symbol table entry's link name offset (a length's width).
                d.skip(usize::from(d.sizes().lengths()))?;
                committed(d)
            }
            2 => match kind {
                2 => committed(d),
                k => Err(d.bad_value(type_at, "shared message type", u64::from(k))),
            },
            3 => match kind {
                1 => Ok(SharedMessage::Heap(d.array()?)),
                2 => committed(d),
                k => Err(d.bad_value(type_at, "shared message type", u64::from(k))),
            },
            v => Err(d.bad_version(at, v)),
        }
    }
}

fn committed(d: &mut Decoder<'_>) -> Result<SharedMessage> {
    let at = d.addr();
    d.offset()?
        .map(SharedMessage::Committed)
        .ok_or_else(|| d.invalid(at, "undefined object header address"))
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::Error;
    use crate::sizes::Sizes;

    fn decode(body: &[u8]) -> Result<SharedMessage> {
        SharedMessage::decode(&mut Decoder::new(
            body,
            Addr(0x100),
            Sizes::DEFAULT,
            "Shared message",
        ))
    }

    #[rustfmt::skip]
    fn cases() -> Vec<(Vec<u8>, SharedMessage)> {
        vec![
            // Version 3, committed (libhdf5 writes version 3 only for the heap case, below).
            (vec![
                3, 2,                          // version 3, committed
                0x20, 0x03, 0, 0, 0, 0, 0, 0,  // object header 0x320
            ], SharedMessage::Committed(Addr(0x320))),
            // Version 3, in the shared-message heap.
            (vec![
                3, 1,                          // version 3, shared-message heap
                1, 2, 3, 4, 5, 6, 7, 8,        // heap ID
            ], SharedMessage::Heap([1, 2, 3, 4, 5, 6, 7, 8])),
            // Version 2: what libhdf5 (1.6 to 2.0) writes for a named datatype.
            (vec![
                2, 2,                          // version 2, committed
                0x20, 0x03, 0, 0, 0, 0, 0, 0,  // object header 0x320
            ], SharedMessage::Committed(Addr(0x320))),
            // Version 1 (libhdf5 1.4): a symbol table entry's fields.
            (vec![
                1, 0,                          // version 1, type (ignored)
                0, 0, 0, 0, 0, 0,              // reserved
                0, 0, 0, 0, 0, 0, 0, 0,        // link name offset
                0x20, 0x03, 0, 0, 0, 0, 0, 0,  // object header 0x320
            ], SharedMessage::Committed(Addr(0x320))),
        ]
    }

    #[test]
    fn decode_every_version() {
        for (body, want) in cases() {
            assert_eq!(decode(&body).unwrap(), want, "{body:?}");
        }
    }

    #[test]
    fn rejects_truncation() {
        for (body, _) in cases() {
            for n in 0..body.len() {
                assert!(decode(&body[..n]).is_err(), "{body:?} prefix {n}");
            }
        }
    }

    #[test]
    fn rejects_bad_values() {
        assert!(matches!(decode(&[4, 2]), Err(Error::BadVersion { .. })));
        assert!(matches!(decode(&[0, 2]), Err(Error::BadVersion { .. })));
        assert!(matches!(
            decode(&[3, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(Error::BadValue {
                at: Addr(0x101),
                ..
            })
        ));
        assert!(matches!(
            decode(&[2, 1, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(Error::BadValue { .. })
        ));
        assert!(matches!(
            decode(&[3, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            Err(Error::Invalid { .. })
        ));
    }
}
