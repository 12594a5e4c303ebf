//! Attribute message (type 0x000C): one attribute stored in its object's header (compact
//! storage), versions 1 to 3.
//!
//! | off | size | field |
//! |---|---|---|
//! | 0 | 1 | version |
//! | 1 | 1 | version 1: reserved (0); versions 2-3: flags (bit 0 datatype shared, bit 1 dataspace shared) |
//! | 2 | 2 | name size, its NUL terminator included |
//! | 4 | 2 | datatype size |
//! | 6 | 2 | dataspace size |
//! | 8 | 1 | version 3 only: the name's character set (0 ASCII, 1 UTF-8) |
//! | | var | name, NUL-terminated; version 1: padded with NULs to a multiple of 8 |
//! | | var | datatype message body; version 1: padded to a multiple of 8 |
//! | | var | dataspace message body; version 1: padded to a multiple of 8 |
//! | | var | the data: every element of the dataspace in the datatype, packed |
//!
//! The data's length is not stored: it is the dataspace's element count times the datatype's
//! size (variable-length elements hold global heap IDs). A shared datatype or dataspace (a
//! committed type) decodes to [`Error::Unsupported`]. The stored sizes of the datatype and
//! dataspace fields are kept, so a field libhdf5 wrote longer than its encoding re-encodes to
//! the same bytes.

use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};
use crate::message::{CharSet, Dataspace, DataspaceKind, Datatype};

const STRUCTURE: &str = "Attribute message";

/// A decoded Attribute message.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Attribute {
    /// Message version, 1 to 3.
    pub version: u8,
    /// The name, without its terminator.
    pub name: Vec<u8>,
    /// The name's character set (version 3 stores it; earlier versions mean ASCII).
    pub name_charset: CharSet,
    /// The element type.
    pub datatype: Datatype,
    /// The shape.
    pub dataspace: Dataspace,
    /// The stored sizes of the datatype and dataspace fields (unpadded).
    pub field_sizes: (u16, u16),
    /// For an attribute of a committed (named) datatype: the datatype field as stored, a
    /// shared message reference (flags bit 0), written back as is; `datatype` is then the
    /// named type's. `None` for a datatype stored in the attribute.
    pub shared_datatype: Option<Vec<u8>>,
    /// The elements, packed, in the file's byte order.
    pub data: Vec<u8>,
}

/// Bytes `len` takes in a version 1 attribute: padded to a multiple of 8.
fn padded(len: usize, version: u8) -> usize {
    if version == 1 {
        len.next_multiple_of(8)
    } else {
        len
    }
}

impl Attribute {
    /// A version 3 attribute (as libhdf5 writes with the latest bounds) or version 1 (the
    /// earliest), its field sizes from the encodings.
    pub fn new(
        version: u8,
        name: &[u8],
        datatype: Datatype,
        dataspace: Dataspace,
        data: Vec<u8>,
        sizes: crate::Sizes,
    ) -> Attribute {
        let dt = u16::try_from(datatype.encoded_len()).unwrap_or(u16::MAX);
        let ds = u16::try_from(dataspace.encoded_len(sizes)).unwrap_or(u16::MAX);
        Attribute {
            version,
            name: name.to_vec(),
            name_charset: if std::str::from_utf8(name).is_ok_and(|s| !s.is_ascii()) {
                CharSet::Utf8
            } else {
                CharSet::Ascii
            },
            datatype,
            dataspace,
            field_sizes: (dt, ds),
            shared_datatype: None,
            data,
        }
    }

    /// The number of elements the dataspace holds.
    pub fn elements(&self) -> Option<u64> {
        elements(&self.dataspace)
    }

    /// The name alone of an Attribute message body (whatever its datatype: a committed one
    /// needs no resolving to be found by name).
    pub fn decode_name(d: &mut Decoder<'_>) -> Result<Vec<u8>> {
        let at = d.addr();
        let version = d.u8()?;
        if !(1..=3).contains(&version) {
            return Err(d.bad_version(at, version));
        }
        d.skip(1)?;
        let name_size_at = d.addr();
        let name_size = d.u16()?;
        d.skip(if version == 3 { 5 } else { 4 })?;
        let field = d.bytes(usize::from(name_size))?;
        match field.split_last() {
            Some((0, name)) if !name.contains(&0) => Ok(name.to_vec()),
            _ => Err(d.invalid(name_size_at, "the name is not one NUL-terminated string")),
        }
    }

    /// Decode an Attribute message body. An attribute of a committed datatype is
    /// [`Error::Unsupported`] here; [`Attribute::decode_resolving`] reads it.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Attribute> {
        Self::decode_resolving(d, &mut |_| None)
    }

    /// Decode an Attribute message body, asking `resolve` for the named datatype a shared
    /// datatype field refers to (by its object header address; `None`: not resolvable, which
    /// is [`Error::Unsupported`]).
    pub fn decode_resolving(
        d: &mut Decoder<'_>,
        resolve: &mut dyn FnMut(crate::Addr) -> Option<Datatype>,
    ) -> Result<Attribute> {
        let at = d.addr();
        let version = d.u8()?;
        if !(1..=3).contains(&version) {
            return Err(d.bad_version(at, version));
        }
        let flags_at = d.addr();
        let flags = d.u8()?;
        match (version, flags) {
            (1, 0) => {}
            (1, f) => return Err(d.bad_value(flags_at, "reserved", u64::from(f))),
            (_, f) if f & 0x02 != 0 => {
                return Err(d.unsupported(flags_at, "attributes of shared dataspaces"));
            }
            (_, f) if f & !0x01 != 0 => {
                return Err(d.bad_value(flags_at, "flags", u64::from(f)));
            }
            _ => {}
        }
        let shared_type = flags & 0x01 != 0;
        let name_size_at = d.addr();
        let name_size = d.u16()?;
        let datatype_size = d.u16()?;
        let dataspace_size = d.u16()?;
        let name_charset = if version == 3 {
            let cs_at = d.addr();
            match d.u8()? {
                0 => CharSet::Ascii,
                1 => CharSet::Utf8,
                c => return Err(d.bad_value(cs_at, "name character set", u64::from(c))),
            }
        } else {
            CharSet::Ascii
        };
        if name_size == 0 {
            return Err(d.bad_value(name_size_at, "name size", 0));
        }
        let name_field = d.bytes(padded(usize::from(name_size), version))?;
        let (name, terminator) = name_field
            .get(..usize::from(name_size))
            .and_then(|n| n.split_last())
            .map(|(t, n)| (n, *t))
            .unwrap_or_default();
        if terminator != 0 || name.contains(&0) {
            return Err(d.invalid(name_size_at, "the name is not one NUL-terminated string"));
        }
        let mut dt = d.sub(padded(usize::from(datatype_size), version))?;
        let (datatype, shared_datatype) = if shared_type {
            let field = dt
                .rest()
                .get(..usize::from(datatype_size))
                .unwrap_or_default();
            let target = match crate::message::SharedMessage::decode(&mut dt)? {
                crate::message::SharedMessage::Committed(a) => a,
                crate::message::SharedMessage::Heap(_) => {
                    return Err(d.unsupported(flags_at, "attributes of types in the SOHM heap"));
                }
            };
            let datatype = resolve(target)
                .ok_or_else(|| d.unsupported(flags_at, "attributes of shared (committed) types"))?;
            (datatype, Some(field.to_vec()))
        } else {
            (Datatype::decode(&mut dt)?, None)
        };
        let mut ds = d.sub(padded(usize::from(dataspace_size), version))?;
        let dataspace = Dataspace::decode(&mut ds)?;
        let n =
            elements(&dataspace).ok_or_else(|| d.invalid(at, "more elements than fit 64 bits"))?;
        let size = usize::try_from(datatype.size).unwrap_or(usize::MAX);
        let n = d.check_count(n, size)?;
        let data = d.bytes(n.saturating_mul(size))?.to_vec();
        Ok(Attribute {
            version,
            name: name.to_vec(),
            name_charset,
            datatype,
            dataspace,
            field_sizes: (datatype_size, dataspace_size),
            shared_datatype,
            data,
        })
    }

    /// Encode an Attribute message body.
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        let unencodable = |reason: String| Error::Unencodable {
            structure: STRUCTURE,
            reason,
        };
        if !(1..=3).contains(&self.version) {
            return Err(unencodable(format!("version {}", self.version)));
        }
        let name_size = u16::try_from(self.name.len().saturating_add(1))
            .map_err(|_| unencodable(format!("a name of {} bytes", self.name.len())))?;
        let expected =
            elements(&self.dataspace).and_then(|n| n.checked_mul(u64::from(self.datatype.size)));
        if expected != u64::try_from(self.data.len()).ok() {
            return Err(unencodable(format!(
                "{} data bytes for {expected:?} expected",
                self.data.len()
            )));
        }
        e.u8(self.version);
        e.u8(u8::from(self.shared_datatype.is_some()));
        e.u16(name_size);
        e.u16(self.field_sizes.0);
        e.u16(self.field_sizes.1);
        if self.version == 3 {
            e.u8(match self.name_charset {
                CharSet::Ascii => 0,
                CharSet::Utf8 => 1,
            });
        }
        e.bytes(&self.name);
        pad_to(
            e,
            self.name.len(),
            padded(usize::from(name_size), self.version),
        );
        let mut field = Vec::new();
        match &self.shared_datatype {
            Some(reference) => field.extend_from_slice(reference),
            None => self
                .datatype
                .encode(&mut Encoder::new(&mut field, e.sizes(), STRUCTURE))?,
        }
        put_field(e, &field, self.field_sizes.0, self.version, "datatype")?;
        field.clear();
        self.dataspace
            .encode(&mut Encoder::new(&mut field, e.sizes(), STRUCTURE))?;
        put_field(e, &field, self.field_sizes.1, self.version, "dataspace")?;
        e.bytes(&self.data);
        Ok(())
    }

    /// The body's encoded length.
    pub fn encoded_len(&self) -> usize {
        let v = self.version;
        let header = if v == 3 { 9 } else { 8 };
        [
            header,
            padded(self.name.len().saturating_add(1), v),
            padded(usize::from(self.field_sizes.0), v),
            padded(usize::from(self.field_sizes.1), v),
            self.data.len(),
        ]
        .into_iter()
        .fold(0usize, usize::saturating_add)
    }
}

/// Elements of a dataspace: 1 for a scalar, 0 for null, the product of dims otherwise.
fn elements(ds: &Dataspace) -> Option<u64> {
    match ds.kind {
        DataspaceKind::Scalar => Some(1),
        DataspaceKind::Null => Some(0),
        DataspaceKind::Simple => ds.dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d)),
    }
}

fn pad_to(e: &mut Encoder<'_>, written: usize, total: usize) {
    for _ in written..total {
        e.u8(0);
    }
}

/// A field's encoding, NUL-filled to its stored size (and, in version 1, to a multiple of 8).
fn put_field(
    e: &mut Encoder<'_>,
    field: &[u8],
    stored: u16,
    version: u8,
    what: &str,
) -> Result<()> {
    let stored = usize::from(stored);
    if field.len() > stored {
        return Err(Error::Unencodable {
            structure: STRUCTURE,
            reason: format!("the {what} takes {} bytes, its field {stored}", field.len()),
        });
    }
    e.bytes(field);
    pad_to(e, field.len(), padded(stored, version));
    Ok(())
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;
    use crate::message::{ByteOrder, Extent};
    use crate::{Addr, Sizes};

    fn decode(body: &[u8]) -> Result<Attribute> {
        Attribute::decode(&mut Decoder::new(
            body,
            Addr(0x40),
            Sizes::DEFAULT,
            STRUCTURE,
        ))
    }

    fn encode(a: &Attribute) -> Vec<u8> {
        let mut out = Vec::new();
        a.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, STRUCTURE))
            .unwrap();
        assert_eq!(out.len(), a.encoded_len());
        out
    }

    fn sample(version: u8) -> Attribute {
        Attribute::new(
            version,
            b"scale",
            Datatype::float(8, ByteOrder::LittleEndian).unwrap(),
            Dataspace::simple(vec![2], Some(vec![Extent::Fixed(2)])),
            [1.5f64, -2.0]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
            Sizes::DEFAULT,
        )
    }

    #[test]
    fn every_version_roundtrips() {
        for v in 1..=3 {
            let a = sample(v);
            let bytes = encode(&a);
            assert_eq!(decode(&bytes).unwrap(), a, "version {v}");
            for n in 0..bytes.len() {
                assert!(decode(&bytes[..n]).is_err(), "version {v} prefix {n}");
            }
        }
        // Version 1 pads name, datatype and dataspace to 8: "scale\0" takes 8 bytes.
        let v1 = encode(&sample(1));
        assert_eq!(&v1[8..16], b"scale\0\0\0");
        let v3 = encode(&sample(3));
        assert_eq!(&v3[9..15], b"scale\0");
    }

    #[test]
    fn committed_datatypes_resolve_and_roundtrip() {
        for v in 2..=3 {
            let mut a = sample(v);
            // A version 3 shared message reference to the named type's header at 0x320.
            let reference = vec![3, 2, 0x20, 0x03, 0, 0, 0, 0, 0, 0];
            a.field_sizes.0 = reference.len() as u16;
            a.shared_datatype = Some(reference);
            let bytes = encode(&a);
            assert_eq!(bytes[1], 0x01, "flags: datatype shared");
            let named = a.datatype.clone();
            let mut asked = Vec::new();
            let mut resolve = |at: crate::Addr| {
                asked.push(at);
                Some(named.clone())
            };
            let mut d = Decoder::new(&bytes, crate::Addr(0), Sizes::DEFAULT, STRUCTURE);
            assert_eq!(
                Attribute::decode_resolving(&mut d, &mut resolve).unwrap(),
                a
            );
            assert_eq!(asked, [crate::Addr(0x320)]);
            // Without a resolver: a typed Unsupported; every prefix: an error.
            assert!(matches!(decode(&bytes), Err(Error::Unsupported { .. })));
            for n in 0..bytes.len() {
                let mut d = Decoder::new(&bytes[..n], crate::Addr(0), Sizes::DEFAULT, STRUCTURE);
                let mut resolve = |_| Some(named.clone());
                assert!(
                    Attribute::decode_resolving(&mut d, &mut resolve).is_err(),
                    "prefix {n}"
                );
            }
        }
    }

    #[test]
    fn decode_name_alone() {
        for v in 1..=3 {
            let bytes = encode(&sample(v));
            let mut d = Decoder::new(&bytes, crate::Addr(0), Sizes::DEFAULT, STRUCTURE);
            assert_eq!(Attribute::decode_name(&mut d).unwrap(), b"scale");
            let name_end = if v == 3 { 15 } else { 14 };
            for n in 0..name_end {
                let mut d = Decoder::new(&bytes[..n], crate::Addr(0), Sizes::DEFAULT, STRUCTURE);
                assert!(
                    Attribute::decode_name(&mut d).is_err(),
                    "version {v} prefix {n}"
                );
            }
        }
    }

    #[test]
    fn scalar_and_null_dataspaces() {
        let mut a = sample(3);
        a.dataspace = Dataspace::scalar();
        a.field_sizes.1 = u16::try_from(a.dataspace.encoded_len(Sizes::DEFAULT)).unwrap();
        a.data.truncate(8);
        assert_eq!(a.elements(), Some(1));
        assert_eq!(decode(&encode(&a)).unwrap(), a);
    }

    #[test]
    fn rejects_bad_fields() {
        let good = encode(&sample(3));
        let mut b = good.clone();
        b[0] = 4;
        assert!(matches!(decode(&b), Err(Error::BadVersion { .. })));
        let mut b = good.clone();
        b[1] = 0x01; // shared datatype, unresolvable without a header to read
        assert!(decode(&b).is_err());
        let mut b = good.clone();
        b[1] = 0x02; // shared dataspace
        assert!(matches!(decode(&b), Err(Error::Unsupported { .. })));
        let mut b = good.clone();
        b[1] = 0x04; // undefined flag
        assert!(matches!(decode(&b), Err(Error::BadValue { .. })));
        let mut b = good.clone();
        b[14] = b'x'; // no terminator
        assert!(matches!(decode(&b), Err(Error::Invalid { .. })));
        let mut b = good.clone();
        b[8] = 7; // character set
        assert!(matches!(decode(&b), Err(Error::BadValue { .. })));
        // Data shorter than the dataspace asks for.
        assert!(decode(&good[..good.len() - 1]).is_err());
        // A data length that does not match cannot be encoded.
        let mut a = sample(3);
        a.data.pop();
        let mut out = Vec::new();
        assert!(
            a.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, STRUCTURE))
                .is_err()
        );
    }
}
