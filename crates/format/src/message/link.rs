//! Link message (type 0x0006): one link of a group in compact storage.
//!
//! | size    | field                                                                       |
//! |---------|-----------------------------------------------------------------------------|
//! | 1       | version = 1                                                                 |
//! | 1       | flags: bits 0-1 size of the length of link name field (1, 2, 4, 8 bytes);  |
//! |         | bit 2 creation order present; bit 3 link type present; bit 4 link name     |
//! |         | character set present; bits 5-7 zero                                        |
//! | 1       | link type (bit 3): 0 hard, 1 soft, 64 external, 65-255 user-defined         |
//! | 8       | creation order (bit 2)                                                      |
//! | 1       | link name character set (bit 4): 0 ASCII, 1 UTF-8                           |
//! | 1/2/4/8 | length of link name (non-zero)                                              |
//! | n       | link name, no NUL                                                           |
//! |         | link information, by type:                                                  |
//! | O       | hard: object header address                                                 |
//! | 2 + n   | soft: length (u16, non-zero), path                                          |
//! | 2 + n   | external: length (u16), then version and flags (u8: version 0 in the high  |
//! |         | nibble, flags in the low one), file name NUL, object path NUL               |
//! | 2 + n   | user-defined: length (u16), data                                            |
//!
//! Which optional fields are present and the width of the name length are kept as stored.

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};
use crate::sizes::Sizes;

const STRUCTURE: &str = "Link message";

const FLAG_CREATION_ORDER: u8 = 0x04;
const FLAG_LINK_TYPE: u8 = 0x08;
const FLAG_CHARSET: u8 = 0x10;

/// Character set of a link name.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum CharacterSet {
    /// US-ASCII.
    Ascii,
    /// UTF-8.
    Utf8,
}

/// Where a link points.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum LinkTarget {
    /// A hard link: the object header address.
    Hard(Addr),
    /// A soft link: a path in this file.
    Soft(Vec<u8>),
    /// An external link: an object in another file.
    External {
        /// The low nibble of the version-and-flags byte (the high nibble, version, is 0).
        flags: u8,
        /// File name, without its NUL.
        file: Vec<u8>,
        /// Object path in that file, without its NUL.
        path: Vec<u8>,
    },
    /// A user-defined link (type 65 to 255): its data, uninterpreted.
    UserDefined {
        /// Link type.
        link_type: u8,
        /// Link information.
        data: Vec<u8>,
    },
}

impl LinkTarget {
    fn type_number(&self) -> u8 {
        match self {
            LinkTarget::Hard(_) => 0,
            LinkTarget::Soft(_) => 1,
            LinkTarget::External { .. } => 64,
            LinkTarget::UserDefined { link_type, .. } => *link_type,
        }
    }
}

/// A decoded Link message.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Link {
    /// Width in bytes of the length of link name field: 1, 2, 4 or 8.
    pub name_length_width: u8,
    /// Whether the link type is stored (flag bit 3); always for non-hard links.
    pub link_type_stored: bool,
    /// Creation order, if stored (flag bit 2).
    pub creation_order: Option<u64>,
    /// Link name character set, if stored (flag bit 4); absent means ASCII.
    pub charset: Option<CharacterSet>,
    /// Link name (non-empty, no NUL).
    pub name: Vec<u8>,
    /// Link target.
    pub target: LinkTarget,
}

impl Link {
    /// A link as libhdf5 writes it: the narrowest name-length field, the type stored only
    /// for non-hard links, no creation order, no character set.
    pub fn new(name: impl Into<Vec<u8>>, target: LinkTarget) -> Link {
        let name = name.into();
        let len = name.len() as u64;
        let name_length_width = if len > u64::from(u32::MAX) {
            8
        } else if len > u64::from(u16::MAX) {
            4
        } else if len > u64::from(u8::MAX) {
            2
        } else {
            1
        };
        Link {
            name_length_width,
            link_type_stored: !matches!(target, LinkTarget::Hard(_)),
            creation_order: None,
            charset: None,
            name,
            target,
        }
    }

    /// A hard link to the object header at `address`.
    pub fn hard(name: impl Into<Vec<u8>>, address: Addr) -> Link {
        Link::new(name, LinkTarget::Hard(address))
    }

    /// A soft link to `path`.
    pub fn soft(name: impl Into<Vec<u8>>, path: impl Into<Vec<u8>>) -> Link {
        Link::new(name, LinkTarget::Soft(path.into()))
    }

    /// An external link to `path` in `file`.
    pub fn external(
        name: impl Into<Vec<u8>>,
        file: impl Into<Vec<u8>>,
        path: impl Into<Vec<u8>>,
    ) -> Link {
        Link::new(
            name,
            LinkTarget::External {
                flags: 0,
                file: file.into(),
                path: path.into(),
            },
        )
    }

    /// Decode a Link message body.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        let at = d.addr();
        let version = d.u8()?;
        if version != 1 {
            return Err(d.bad_version(at, version));
        }
        let at = d.addr();
        let flags = d.u8()?;
        if flags & 0xe0 != 0 {
            return Err(d.bad_value(at, "flags", u64::from(flags)));
        }
        let name_length_width = match flags & 0x03 {
            0 => 1u8,
            1 => 2,
            2 => 4,
            _ => 8,
        };
        let link_type_stored = flags & FLAG_LINK_TYPE != 0;
        let type_at = d.addr();
        let link_type = if link_type_stored { d.u8()? } else { 0 };
        if (2..64).contains(&link_type) {
            return Err(d.bad_value(type_at, "link type", u64::from(link_type)));
        }
        let creation_order = if flags & FLAG_CREATION_ORDER != 0 {
            Some(d.u64()?)
        } else {
            None
        };
        let charset = if flags & FLAG_CHARSET != 0 {
            let at = d.addr();
            Some(match d.u8()? {
                0 => CharacterSet::Ascii,
                1 => CharacterSet::Utf8,
                c => return Err(d.bad_value(at, "character set", u64::from(c))),
            })
        } else {
            None
        };
        let at = d.addr();
        let len = d.uint(name_length_width)?;
        if len == 0 {
            return Err(d.bad_value(at, "length of link name", 0));
        }
        let n = d.check_count(len, 1)?;
        let name = d.bytes(n)?.to_vec();
        let target = match link_type {
            0 => LinkTarget::Hard(d.defined_offset("hard link address")?),
            1 => {
                let at = d.addr();
                let len = d.u16()?;
                if len == 0 {
                    return Err(d.bad_value(at, "soft link length", 0));
                }
                LinkTarget::Soft(d.bytes(usize::from(len))?.to_vec())
            }
            _ => {
                let at = d.addr();
                let len = d.u16()?;
                let data_at = d.addr();
                let data = d.bytes(usize::from(len))?;
                if link_type == 64 {
                    decode_external(d, at, data_at, data)?
                } else {
                    LinkTarget::UserDefined {
                        link_type,
                        data: data.to_vec(),
                    }
                }
            }
        };
        Ok(Link {
            name_length_width,
            link_type_stored,
            creation_order,
            charset,
            name,
            target,
        })
    }

    /// Encode a Link message body.
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        let width_bits = match self.name_length_width {
            1 => 0u8,
            2 => 1,
            4 => 2,
            8 => 3,
            w => return Err(unencodable(format!("name length width {w}"))),
        };
        if self.name.is_empty() {
            return Err(unencodable("empty link name".into()));
        }
        let link_type = self.target.type_number();
        if (2..64).contains(&link_type) || (link_type != 0 && !self.link_type_stored) {
            return Err(unencodable(format!(
                "link type {link_type} must be valid and stored"
            )));
        }
        let mut flags = width_bits;
        if self.creation_order.is_some() {
            flags |= FLAG_CREATION_ORDER;
        }
        if self.link_type_stored {
            flags |= FLAG_LINK_TYPE;
        }
        if self.charset.is_some() {
            flags |= FLAG_CHARSET;
        }
        e.u8(1);
        e.u8(flags);
        if self.link_type_stored {
            e.u8(link_type);
        }
        if let Some(c) = self.creation_order {
            e.u64(c);
        }
        if let Some(c) = self.charset {
            e.u8(match c {
                CharacterSet::Ascii => 0,
                CharacterSet::Utf8 => 1,
            });
        }
        e.uint(
            self.name.len() as u64,
            self.name_length_width,
            "length of link name",
        )?;
        e.bytes(&self.name);
        match &self.target {
            LinkTarget::Hard(a) => e.offset(Some(*a), "hard link address")?,
            LinkTarget::Soft(path) => {
                if path.is_empty() {
                    return Err(unencodable("empty soft link path".into()));
                }
                write_u16_len(e, path.len(), "soft link length")?;
                e.bytes(path);
            }
            LinkTarget::External { flags, file, path } => {
                if *flags > 0x0f || file.contains(&0) || path.contains(&0) {
                    return Err(unencodable("bad external link flags or names".into()));
                }
                let len = external_len(file, path);
                write_u16_len(e, len, "external link length")?;
                e.u8(*flags);
                e.bytes(file);
                e.u8(0);
                e.bytes(path);
                e.u8(0);
            }
            LinkTarget::UserDefined { data, .. } => {
                write_u16_len(e, data.len(), "user-defined link length")?;
                e.bytes(data);
            }
        }
        Ok(())
    }

    /// The body's encoded length.
    pub fn encoded_len(&self, sizes: Sizes) -> usize {
        let mut n = 2usize
            .saturating_add(usize::from(self.name_length_width))
            .saturating_add(self.name.len());
        if self.link_type_stored {
            n = n.saturating_add(1);
        }
        if self.creation_order.is_some() {
            n = n.saturating_add(8);
        }
        if self.charset.is_some() {
            n = n.saturating_add(1);
        }
        let info = match &self.target {
            LinkTarget::Hard(_) => usize::from(sizes.offsets()),
            LinkTarget::Soft(p) => p.len().saturating_add(2),
            LinkTarget::External { file, path, .. } => external_len(file, path).saturating_add(2),
            LinkTarget::UserDefined { data, .. } => data.len().saturating_add(2),
        };
        n.saturating_add(info)
    }
}

/// The external link information length: version/flags byte, file name NUL, path NUL.
fn external_len(file: &[u8], path: &[u8]) -> usize {
    file.len().saturating_add(path.len()).saturating_add(3)
}

fn decode_external(
    d: &Decoder<'_>,
    len_at: Addr,
    data_at: Addr,
    data: &[u8],
) -> Result<LinkTarget> {
    let Some((&first, rest)) = data.split_first() else {
        return Err(d.bad_value(len_at, "external link length", 0));
    };
    if first >> 4 != 0 {
        return Err(d.bad_version(data_at, first >> 4));
    }
    let mut parts = rest.splitn(3, |&b| b == 0);
    let (Some(file), Some(path), Some(tail)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(d.invalid(
            data_at,
            "external link names are not two NUL-terminated strings",
        ));
    };
    if !tail.is_empty() {
        return Err(d.invalid(data_at, "bytes after the external link object path"));
    }
    Ok(LinkTarget::External {
        flags: first & 0x0f,
        file: file.to_vec(),
        path: path.to_vec(),
    })
}

fn write_u16_len(e: &mut Encoder<'_>, len: usize, field: &'static str) -> Result<()> {
    let v = u16::try_from(len).map_err(|_| Error::TooWide {
        structure: STRUCTURE,
        field,
        value: len as u64,
        width: 2,
    })?;
    e.u16(v);
    Ok(())
}

fn unencodable(reason: String) -> Error {
    Error::Unencodable {
        structure: STRUCTURE,
        reason,
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

    fn decode(body: &[u8]) -> Result<Link> {
        Link::decode(&mut Decoder::new(
            body,
            Addr(0x57),
            Sizes::DEFAULT,
            STRUCTURE,
        ))
    }

    fn encode(l: &Link) -> Vec<u8> {
        let mut out = Vec::new();
        l.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, STRUCTURE))
            .unwrap();
        assert_eq!(out.len(), l.encoded_len(Sizes::DEFAULT));
        out
    }

    #[rustfmt::skip]
    fn cases() -> Vec<(&'static str, Vec<u8>, Link)> {
        let mut ext = vec![
            0x01,                   // version 1
            0x08,                   // flags: 1-byte name length, link type present
            0x40,                   // link type 64: external
            0x01,                   // name length 1
            b'e',                   // name
            0x09, 0x00,             // link information length 9
            0x00,                   // version 0, flags 0
        ];
        ext.extend_from_slice(b"f.h5\0");  // file name
        ext.extend_from_slice(b"/d\0");    // object path
        let mut ordered = Link::hard("d", Addr(0xb3));
        ordered.creation_order = Some(2);
        let mut utf8 = Link::soft("s", "/d");
        utf8.charset = Some(CharacterSet::Utf8);
        vec![
            ("h5py hard link", vec![
                0x01,                   // version 1
                0x00,                   // flags: 1-byte name length, hard link implied
                0x01,                   // name length 1
                b'd',                   // name
                0xb3, 0, 0, 0, 0, 0, 0, 0, // object header address 0xb3
            ], Link::hard("d", Addr(0xb3))),
            ("track_order hard link", vec![
                0x01,                   // version 1
                0x04,                   // flags: creation order present
                0x02, 0, 0, 0, 0, 0, 0, 0, // creation order 2
                0x01,                   // name length 1
                b'd',                   // name
                0xb3, 0, 0, 0, 0, 0, 0, 0, // address
            ], ordered),
            ("soft link, UTF-8", vec![
                0x01,                   // version 1
                0x18,                   // flags: link type and character set present
                0x01,                   // link type 1: soft
                0x01,                   // character set UTF-8
                0x01,                   // name length 1
                b's',                   // name
                0x02, 0x00,             // path length 2
                b'/', b'd',             // path
            ], utf8),
            ("external link", ext, Link::external("e", "f.h5", "/d")),
            ("user-defined link", vec![
                0x01, 0x08,             // version 1, link type present
                0x41,                   // link type 65
                0x01, b'u',             // name "u"
                0x02, 0x00, 0xaa, 0xbb, // data length 2, data
            ], Link::new("u", LinkTarget::UserDefined { link_type: 65, data: vec![0xaa, 0xbb] })),
        ]
    }

    #[test]
    fn decode_every_link_kind() {
        for (name, bytes, expected) in cases() {
            let l = decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(l, expected, "{name}");
            assert_eq!(encode(&l), bytes, "{name}");
        }
    }

    #[test]
    fn roundtrip_wide_name_length_and_explicit_hard_type() {
        #[rustfmt::skip]
        let body = [
            0x01,                   // version 1
            0x09,                   // flags: 2-byte name length, link type present
            0x00,                   // link type 0: hard, stored anyway
            0x01, 0x00,             // name length 1 (2 bytes)
            b'x',                   // name
            0x30, 0, 0, 0, 0, 0, 0, 0, // address
        ];
        let l = decode(&body).unwrap();
        assert_eq!(l.name_length_width, 2);
        assert!(l.link_type_stored);
        assert_eq!(encode(&l), body);
        let long = Link::hard(vec![b'n'; 300], Addr(1));
        assert_eq!(long.name_length_width, 2);
        assert_eq!(decode(&encode(&long)).unwrap(), long);
    }

    #[test]
    fn rejects_truncation() {
        for (name, bytes, _) in cases() {
            for n in 0..bytes.len() {
                assert!(decode(&bytes[..n]).is_err(), "{name} prefix {n}");
            }
        }
    }

    #[test]
    fn rejects_bad_values_with_address() {
        let hard = cases()[0].1.clone();
        let mut b = hard.clone();
        b[0] = 2;
        assert!(matches!(
            decode(&b),
            Err(Error::BadVersion {
                at: Addr(0x57),
                version: 2,
                ..
            })
        ));
        let mut b = hard.clone();
        b[1] = 0x20;
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue { at: Addr(0x58), .. })
        ));
        let mut b = hard.clone();
        b[2] = 0; // empty name
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                at: Addr(0x59),
                value: 0,
                ..
            })
        ));
        assert!(matches!(
            decode(&[1, 0x08, 2, 1, b'x']),
            Err(Error::BadValue {
                at: Addr(0x59),
                value: 2,
                ..
            })
        ));
        assert!(matches!(
            decode(&[1, 0x10, 2, 1, b'x']),
            Err(Error::BadValue {
                at: Addr(0x59),
                value: 2,
                ..
            })
        ));
        assert!(matches!(
            decode(&[1, 0x08, 1, 1, b'x', 0, 0]),
            Err(Error::BadValue {
                at: Addr(0x5c),
                value: 0,
                ..
            })
        ));
        // An 8-byte name length far beyond the body: refused before allocating.
        assert!(matches!(
            decode(&[
                1, 0x03, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, b'x'
            ]),
            Err(Error::Truncated { .. })
        ));
        // Hard link to the undefined address.
        let mut b = hard.clone();
        b[4..].fill(0xff);
        assert!(matches!(decode(&b), Err(Error::Invalid { .. })));
        let mut b = cases()[3].1.clone();
        b[7] = 0x10; // external link version 1
        assert!(matches!(
            decode(&b),
            Err(Error::BadVersion {
                at: Addr(0x5e),
                version: 1,
                ..
            })
        ));
        let mut b = cases()[3].1.clone();
        b[15] = b'x'; // object path without its NUL
        assert!(matches!(decode(&b), Err(Error::Invalid { .. })));
        assert!(matches!(
            decode(&[1, 0x08, 64, 1, b'e', 0, 0]),
            Err(Error::BadValue { at: Addr(0x5c), .. })
        ));
    }
}
