//! Link Info message (type 0x0002): how a new-style group stores its links.
//!
//! | size | field                                                                 |
//! |------|-----------------------------------------------------------------------|
//! | 1    | version = 0                                                           |
//! | 1    | flags: bit 0 creation order tracked; bit 1 creation order indexed     |
//! | 8    | maximum creation index (flag bit 0)                                   |
//! | O    | fractal heap address (dense link storage; undefined while compact)   |
//! | O    | address of the v2 B-tree indexing names                               |
//! | O    | address of the v2 B-tree indexing creation order (flag bit 1)         |

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::Result;
use crate::sizes::Sizes;

const FLAG_TRACKED: u8 = 0x01;
const FLAG_INDEXED: u8 = 0x02;

/// A decoded Link Info message.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct LinkInfo {
    /// Maximum creation index, present exactly when creation order is tracked (flag bit 0).
    pub max_creation_index: Option<u64>,
    /// Fractal heap address; `None` while links are stored compactly.
    pub fractal_heap_address: Option<Addr>,
    /// Address of the v2 B-tree indexing names; `None` while compact.
    pub name_index_address: Option<Addr>,
    /// Whether creation order is indexed (flag bit 1).
    pub creation_order_indexed: bool,
    /// Address of the v2 B-tree indexing creation order (stored only if indexed).
    pub creation_order_index_address: Option<Addr>,
}

impl LinkInfo {
    /// Decode a Link Info message body.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        let at = d.addr();
        let version = d.u8()?;
        if version != 0 {
            return Err(d.bad_version(at, version));
        }
        let at = d.addr();
        let flags = d.u8()?;
        if flags & !(FLAG_TRACKED | FLAG_INDEXED) != 0 {
            return Err(d.bad_value(at, "flags", u64::from(flags)));
        }
        let max_creation_index = if flags & FLAG_TRACKED != 0 {
            Some(d.u64()?)
        } else {
            None
        };
        let fractal_heap_address = d.offset()?;
        let name_index_address = d.offset()?;
        let creation_order_indexed = flags & FLAG_INDEXED != 0;
        let creation_order_index_address = if creation_order_indexed {
            d.offset()?
        } else {
            None
        };
        Ok(LinkInfo {
            max_creation_index,
            fractal_heap_address,
            name_index_address,
            creation_order_indexed,
            creation_order_index_address,
        })
    }

    /// Encode a Link Info message body.
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        let mut flags = 0;
        if self.max_creation_index.is_some() {
            flags |= FLAG_TRACKED;
        }
        if self.creation_order_indexed {
            flags |= FLAG_INDEXED;
        }
        e.u8(0);
        e.u8(flags);
        if let Some(m) = self.max_creation_index {
            e.u64(m);
        }
        e.offset(self.fractal_heap_address, "fractal heap address")?;
        e.offset(self.name_index_address, "name index address")?;
        if self.creation_order_indexed {
            e.offset(
                self.creation_order_index_address,
                "creation order index address",
            )?;
        }
        Ok(())
    }

    /// The body's encoded length.
    pub fn encoded_len(&self, sizes: Sizes) -> usize {
        let o = usize::from(sizes.offsets());
        let mut n = o.saturating_mul(2).saturating_add(2);
        if self.max_creation_index.is_some() {
            n = n.saturating_add(8);
        }
        if self.creation_order_indexed {
            n = n.saturating_add(o);
        }
        n
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

    const S: &str = "Link Info message";

    fn decode(body: &[u8]) -> Result<LinkInfo> {
        LinkInfo::decode(&mut Decoder::new(body, Addr(0x3b), Sizes::DEFAULT, S))
    }

    fn encode(l: &LinkInfo) -> Vec<u8> {
        let mut out = Vec::new();
        l.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, S))
            .unwrap();
        assert_eq!(out.len(), l.encoded_len(Sizes::DEFAULT));
        out
    }

    #[rustfmt::skip]
    const DEFAULT: [u8; 18] = [
        0x00,                                           // version 0
        0x00,                                           // flags
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // fractal heap: UNDEF
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // name index: UNDEF
    ];

    #[rustfmt::skip]
    const TRACK_ORDER: [u8; 34] = [
        0x00,                                           // version 0
        0x03,                                           // flags: tracked, indexed
        0x02, 0, 0, 0, 0, 0, 0, 0,                      // max creation index 2
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // fractal heap: UNDEF
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // name index: UNDEF
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // creation order index: UNDEF
    ];

    #[test]
    fn decode_h5py_link_info() {
        let l = decode(&DEFAULT).unwrap();
        assert_eq!(l, LinkInfo::default());
        assert_eq!(encode(&l), DEFAULT);
        let l = decode(&TRACK_ORDER).unwrap();
        assert_eq!(l.max_creation_index, Some(2));
        assert!(l.creation_order_indexed);
        assert_eq!(encode(&l), TRACK_ORDER);
        let dense = LinkInfo {
            fractal_heap_address: Some(Addr(0x400)),
            name_index_address: Some(Addr(0x600)),
            ..LinkInfo::default()
        };
        assert_eq!(decode(&encode(&dense)).unwrap(), dense);
    }

    #[test]
    fn rejects_truncation() {
        for body in [&DEFAULT[..], &TRACK_ORDER] {
            for n in 0..body.len() {
                assert!(decode(&body[..n]).is_err(), "prefix {n}");
            }
        }
    }

    #[test]
    fn rejects_bad_values_with_address() {
        let mut b = DEFAULT;
        b[0] = 1;
        assert!(matches!(
            decode(&b),
            Err(Error::BadVersion {
                at: Addr(0x3b),
                version: 1,
                ..
            })
        ));
        let mut b = DEFAULT;
        b[1] = 4;
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                at: Addr(0x3c),
                value: 4,
                ..
            })
        ));
    }
}
