//! Fill Value message (type 0x0005) and the old Fill Value message (type 0x0004).
//!
//! Fill Value, versions 1 and 2:
//!
//! | off | size | field                                                                 |
//! |-----|------|-----------------------------------------------------------------------|
//! | 0   | 1    | version (1 or 2)                                                      |
//! | 1   | 1    | space allocation time: 1 early, 2 late, 3 incremental                 |
//! | 2   | 1    | fill value write time: 0 on allocation, 1 never, 2 if set by the user |
//! | 3   | 1    | fill value defined: 0 or 1                                            |
//! | 4   | 4    | size: version 1 always; version 2 only if defined                     |
//! | 8   | size | fill value                                                            |
//!
//! Fill Value, version 3 (there is no third byte, whatever the specification's table shows):
//!
//! | off | size | field                                                                 |
//! |-----|------|-----------------------------------------------------------------------|
//! | 0   | 1    | version = 3                                                           |
//! | 1   | 1    | flags: bits 0-1 allocation time; bits 2-3 fill write time; bit 4     |
//! |     |      | value undefined; bit 5 value defined (4 and 5 exclusive); 6-7 zero    |
//! | 2   | 4    | size, only if flag bit 5                                              |
//! | 6   | size | fill value, only if flag bit 5                                        |
//!
//! Old Fill Value: size (u32), then the fill value.
//!
//! A "defined" fill value of size 0 (version 2) or neither flag (version 3) is the library
//! default: zeros. A size of all ones (-1: libhdf5 reads the field as signed) in version 1 or
//! 2 is an undefined value with no bytes following, as HDF5 1.6 wrote it.

use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};

const STRUCTURE: &str = "Fill Value message";

const FLAG_UNDEFINED: u8 = 0x10;
const FLAG_HAVE_VALUE: u8 = 0x20;

/// The size field of a version 1/2 message whose value is undefined: -1 as a signed 32-bit
/// number, which is how libhdf5 reads the field.
const UNDEFINED_SIZE: u32 = u32::MAX;

/// Fill Value message version.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum FillValueVersion {
    /// Version 1: never written by modern libhdf5.
    V1,
    /// Version 2: libhdf5's `EARLIEST` bound.
    V2,
    /// Version 3: libver `V18` and later.
    V3,
}

impl FillValueVersion {
    /// The version number as stored.
    pub fn number(self) -> u8 {
        match self {
            FillValueVersion::V1 => 1,
            FillValueVersion::V2 => 2,
            FillValueVersion::V3 => 3,
        }
    }
}

/// Space allocation time.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum AllocTime {
    /// All storage is allocated when the dataset is created.
    Early,
    /// Storage is allocated at the first write.
    Late,
    /// Chunks are allocated one by one as they are written (chunked datasets' default).
    Incremental,
}

impl AllocTime {
    fn number(self) -> u8 {
        match self {
            AllocTime::Early => 1,
            AllocTime::Late => 2,
            AllocTime::Incremental => 3,
        }
    }

    fn from_number(v: u8) -> Option<Self> {
        Some(match v {
            1 => AllocTime::Early,
            2 => AllocTime::Late,
            3 => AllocTime::Incremental,
            _ => return None,
        })
    }
}

/// Fill value write time.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum FillTime {
    /// The fill value is written when storage is allocated.
    OnAlloc,
    /// The fill value is never written.
    Never,
    /// The fill value is written only if the user set one.
    IfSet,
}

impl FillTime {
    fn number(self) -> u8 {
        match self {
            FillTime::OnAlloc => 0,
            FillTime::Never => 1,
            FillTime::IfSet => 2,
        }
    }

    fn from_number(v: u8) -> Option<Self> {
        Some(match v {
            0 => FillTime::OnAlloc,
            1 => FillTime::Never,
            2 => FillTime::IfSet,
            _ => return None,
        })
    }
}

/// Whether and how the fill value is defined.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum FillDefinition {
    /// The user undefined the fill value: uninitialized elements have no defined contents.
    Undefined,
    /// Undefined, as HDF5 1.6 stored it in message versions 1 and 2: a size of -1 and no
    /// value, after a "defined" byte of either value. The same meaning as
    /// [`Undefined`](Self::Undefined), kept apart so the message re-encodes to its own bytes.
    UndefinedSizeMinusOne {
        /// The "defined" byte stored before the size (libhdf5 ignores it here).
        flagged_defined: bool,
    },
    /// The library default fill value (zeros).
    Default,
    /// A user-defined fill value: one element's bytes, in the dataset's datatype.
    User(Vec<u8>),
}

/// A decoded Fill Value message (type 0x0005).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct FillValue {
    /// Message version.
    pub version: FillValueVersion,
    /// Space allocation time.
    pub alloc_time: AllocTime,
    /// Fill value write time.
    pub fill_time: FillTime,
    /// The fill value.
    pub value: FillDefinition,
}

impl FillValue {
    /// What h5py 3.16 (HDF5 2.0) writes for a chunked dataset without a fill value, at
    /// `version`: incremental allocation, fill time "if set", default value (`03 0b`).
    pub fn h5py_default(version: FillValueVersion) -> Self {
        FillValue {
            version,
            alloc_time: AllocTime::Incremental,
            fill_time: FillTime::IfSet,
            value: FillDefinition::Default,
        }
    }

    /// Decode a Fill Value message body.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        let at = d.addr();
        let version = match d.u8()? {
            1 => FillValueVersion::V1,
            2 => FillValueVersion::V2,
            3 => FillValueVersion::V3,
            v => return Err(d.bad_version(at, v)),
        };
        if version == FillValueVersion::V3 {
            return Self::decode_v3(d);
        }
        let at = d.addr();
        let v = d.u8()?;
        let alloc_time = AllocTime::from_number(v)
            .ok_or_else(|| d.bad_value(at, "space allocation time", u64::from(v)))?;
        let at = d.addr();
        let v = d.u8()?;
        let fill_time = FillTime::from_number(v)
            .ok_or_else(|| d.bad_value(at, "fill value write time", u64::from(v)))?;
        let defined_at = d.addr();
        let defined = match d.u8()? {
            0 => false,
            1 => true,
            v => return Err(d.bad_value(defined_at, "fill value defined", u64::from(v))),
        };
        let value = if version == FillValueVersion::V1 || defined {
            // libhdf5 decodes this size as a signed number, and HDF5 1.6 wrote -1 for an
            // undefined value (no bytes follow).
            if d.rest().starts_with(&UNDEFINED_SIZE.to_le_bytes()) {
                d.skip(4)?;
                return Ok(FillValue {
                    version,
                    alloc_time,
                    fill_time,
                    value: FillDefinition::UndefinedSizeMinusOne {
                        flagged_defined: defined,
                    },
                });
            }
            let bytes = read_value(d)?;
            match (defined, bytes.is_empty()) {
                (false, true) => FillDefinition::Undefined,
                (false, false) => {
                    return Err(d.invalid(defined_at, "fill value stored but flagged undefined"));
                }
                (true, true) => FillDefinition::Default,
                (true, false) => FillDefinition::User(bytes),
            }
        } else {
            FillDefinition::Undefined
        };
        Ok(FillValue {
            version,
            alloc_time,
            fill_time,
            value,
        })
    }

    fn decode_v3(d: &mut Decoder<'_>) -> Result<Self> {
        let at = d.addr();
        let flags = d.u8()?;
        if flags & 0xc0 != 0 {
            return Err(d.bad_value(at, "flags", u64::from(flags)));
        }
        let alloc_time = AllocTime::from_number(flags & 0x03)
            .ok_or_else(|| d.bad_value(at, "space allocation time", u64::from(flags & 0x03)))?;
        let fill_time = FillTime::from_number((flags >> 2) & 0x03).ok_or_else(|| {
            d.bad_value(at, "fill value write time", u64::from((flags >> 2) & 0x03))
        })?;
        let value = match (flags & FLAG_UNDEFINED != 0, flags & FLAG_HAVE_VALUE != 0) {
            (true, true) => {
                return Err(d.invalid(at, "fill value both undefined and defined"));
            }
            (true, false) => FillDefinition::Undefined,
            (false, true) => FillDefinition::User(read_value(d)?),
            (false, false) => FillDefinition::Default,
        };
        Ok(FillValue {
            version: FillValueVersion::V3,
            alloc_time,
            fill_time,
            value,
        })
    }

    /// Encode a Fill Value message body.
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        e.u8(self.version.number());
        match self.version {
            FillValueVersion::V1 | FillValueVersion::V2 => {
                e.u8(self.alloc_time.number());
                e.u8(self.fill_time.number());
                let (defined, bytes): (u8, &[u8]) = match &self.value {
                    FillDefinition::Undefined => (0, &[]),
                    FillDefinition::UndefinedSizeMinusOne { flagged_defined } => {
                        // As HDF5 1.6 wrote it: size -1, no value.
                        e.u8(u8::from(*flagged_defined));
                        e.u32(UNDEFINED_SIZE);
                        return Ok(());
                    }
                    FillDefinition::Default => (1, &[]),
                    FillDefinition::User(v) => (1, v),
                };
                e.u8(defined);
                if self.version == FillValueVersion::V1 || defined == 1 {
                    write_value(e, bytes)?;
                }
            }
            FillValueVersion::V3 => {
                let mut flags = self.alloc_time.number() | (self.fill_time.number() << 2);
                match &self.value {
                    FillDefinition::Undefined | FillDefinition::UndefinedSizeMinusOne { .. } => {
                        e.u8(flags | FLAG_UNDEFINED)
                    }
                    FillDefinition::Default => e.u8(flags),
                    FillDefinition::User(v) => {
                        flags |= FLAG_HAVE_VALUE;
                        e.u8(flags);
                        write_value(e, v)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The body's encoded length.
    pub fn encoded_len(&self) -> usize {
        let value_len = match &self.value {
            FillDefinition::User(v) => v.len().saturating_add(4),
            FillDefinition::Default
            | FillDefinition::Undefined
            | FillDefinition::UndefinedSizeMinusOne { .. } => 4,
        };
        match (self.version, &self.value) {
            (FillValueVersion::V1, _) => 4usize.saturating_add(value_len),
            (FillValueVersion::V2, FillDefinition::UndefinedSizeMinusOne { .. }) => 8,
            (FillValueVersion::V2, FillDefinition::Undefined) => 4,
            (FillValueVersion::V2, _) => 4usize.saturating_add(value_len),
            (FillValueVersion::V3, FillDefinition::User(_)) => 2usize.saturating_add(value_len),
            (FillValueVersion::V3, _) => 2,
        }
    }
}

/// A decoded old Fill Value message (type 0x0004): a user-defined fill value, written in
/// addition to the Fill Value message by libhdf5's `EARLIEST` bound.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct FillValueOld {
    /// The fill value: one element's bytes (empty: none).
    pub value: Vec<u8>,
}

impl FillValueOld {
    /// Decode an old Fill Value message body.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        Ok(FillValueOld {
            value: read_value(d)?,
        })
    }

    /// Encode an old Fill Value message body.
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        write_value(e, &self.value)
    }

    /// The body's encoded length.
    pub fn encoded_len(&self) -> usize {
        self.value.len().saturating_add(4)
    }
}

/// A u32 size, then that many bytes.
fn read_value(d: &mut Decoder<'_>) -> Result<Vec<u8>> {
    let size = d.u32()?;
    let n = d.check_count(u64::from(size), 1)?;
    Ok(d.bytes(n)?.to_vec())
}

fn write_value(e: &mut Encoder<'_>, v: &[u8]) -> Result<()> {
    let size = u32::try_from(v.len()).map_err(|_| Error::TooWide {
        structure: STRUCTURE,
        field: "fill value size",
        value: v.len() as u64,
        width: 4,
    })?;
    e.u32(size);
    e.bytes(v);
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
    use crate::{Addr, Sizes};

    use AllocTime::*;
    use FillTime::*;
    use FillValueVersion::*;

    fn decode(body: &[u8]) -> Result<FillValue> {
        FillValue::decode(&mut Decoder::new(
            body,
            Addr(0xe7),
            Sizes::DEFAULT,
            STRUCTURE,
        ))
    }

    fn encode(f: &FillValue) -> Vec<u8> {
        let mut out = Vec::new();
        f.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, STRUCTURE))
            .unwrap();
        assert_eq!(out.len(), f.encoded_len());
        out
    }

    fn fv(
        version: FillValueVersion,
        a: AllocTime,
        t: FillTime,
        value: FillDefinition,
    ) -> FillValue {
        FillValue {
            version,
            alloc_time: a,
            fill_time: t,
            value,
        }
    }

    /// Every case of docs/format/file-format.md §4.3 (message bodies without v1-header padding).
    #[rustfmt::skip]
    fn cases() -> Vec<(&'static str, Vec<u8>, FillValue)> {
        use FillDefinition::{Default as D, Undefined as U, User};
        vec![
            ("earliest h5py 3.16 default", vec![
                0x02, // version 2
                0x03, // allocation time: incremental
                0x02, // fill write time: if set
                0x01, // defined
                0, 0, 0, 0, // size 0: library default
            ], fv(V2, Incremental, IfSet, D)),
            ("latest h5py 3.16 default", vec![
                0x03, // version 3
                0x0b, // flags: incremental (3) | if set (2 << 2)
            ], fv(V3, Incremental, IfSet, D)),
            ("earliest h5py 3.11 default", vec![
                0x02, 0x03, // version 2, incremental
                0x00,       // fill write time: on allocation
                0x01,       // defined
                0, 0, 0, 0, // size 0
            ], fv(V2, Incremental, OnAlloc, D)),
            ("latest h5py 3.11 default", vec![
                0x03, 0x03, // version 3; incremental, on allocation
            ], fv(V3, Incremental, OnAlloc, D)),
            ("earliest fillvalue=7 (3.16)", vec![
                0x02, 0x03, 0x02, 0x01, // version 2, incremental, if set, defined
                0x04, 0, 0, 0,          // size 4
                0x07, 0, 0, 0,          // value 7 (int32)
            ], fv(V2, Incremental, IfSet, User(vec![7, 0, 0, 0]))),
            ("latest fillvalue=7 (3.16)", vec![
                0x03,             // version 3
                0x2b,             // flags: incremental, if set, value defined
                0x04, 0, 0, 0,    // size 4
                0x07, 0, 0, 0,    // value 7
            ], fv(V3, Incremental, IfSet, User(vec![7, 0, 0, 0]))),
            ("earliest fillvalue=7 (3.11)", vec![
                0x02, 0x03, 0x00, 0x01, // version 2, incremental, on allocation, defined
                0x04, 0, 0, 0,          // size 4
                0x07, 0, 0, 0,          // value 7
            ], fv(V2, Incremental, OnAlloc, User(vec![7, 0, 0, 0]))),
            ("latest fillvalue=7 (3.11)", vec![
                0x03, 0x23,          // version 3; incremental, on allocation, value defined
                0x04, 0, 0, 0,       // size 4
                0x07, 0, 0, 0,       // value 7
            ], fv(V3, Incremental, OnAlloc, User(vec![7, 0, 0, 0]))),
            ("earliest fill_time='never'", vec![
                0x02, 0x03, 0x01, 0x01, // version 2, incremental, never, defined
                0, 0, 0, 0,             // size 0
            ], fv(V2, Incremental, Never, D)),
            ("latest fill_time='never'", vec![
                0x03, 0x07, // version 3; incremental, never
            ], fv(V3, Incremental, Never, D)),
            ("earliest undefined", vec![
                0x02, 0x03, 0x02, // version 2, incremental, if set
                0x00,             // not defined: no size follows
            ], fv(V2, Incremental, IfSet, U)),
            ("latest undefined", vec![
                0x03, 0x1b, // version 3; incremental, if set, value undefined
            ], fv(V3, Incremental, IfSet, U)),
            ("earliest alloc early", vec![
                0x02, 0x01, 0x02, 0x01, 0, 0, 0, 0, // version 2, early, if set, defined, size 0
            ], fv(V2, Early, IfSet, D)),
            ("earliest alloc late", vec![
                0x02, 0x02, 0x02, 0x01, 0, 0, 0, 0, // version 2, late, if set, defined, size 0
            ], fv(V2, Late, IfSet, D)),
            ("latest alloc early", vec![0x03, 0x09], fv(V3, Early, IfSet, D)),
            ("latest alloc late", vec![0x03, 0x0a], fv(V3, Late, IfSet, D)),
            ("version 1 with value", vec![
                0x01, 0x02, 0x00, 0x01, // version 1, late, on allocation, defined
                0x02, 0, 0, 0,          // size 2
                0x34, 0x12,             // value
            ], fv(V1, Late, OnAlloc, User(vec![0x34, 0x12]))),
            // As in PyTables' attr-u16.h5 (HDF5 1.6): the size is -1.
            ("version 1 undefined", vec![
                0x01, 0x03, 0x02, 0x00, // version 1, incremental, if set, undefined
                0xff, 0xff, 0xff, 0xff, // size -1: always present in version 1
            ], fv(V1, Incremental, IfSet, FillDefinition::UndefinedSizeMinusOne { flagged_defined: false })),
        ]
    }

    #[test]
    fn decode_every_documented_case() {
        for (name, bytes, expected) in cases() {
            let f = decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(f, expected, "{name}");
            assert_eq!(encode(&f), bytes, "{name}");
            // A v1 object header pads the body to 8 bytes; the padding is ignored.
            let mut padded = bytes.clone();
            padded.resize(bytes.len().next_multiple_of(8), 0);
            assert_eq!(decode(&padded).unwrap(), expected, "{name} padded");
        }
        assert_eq!(decode(&[0x03, 0x0b]).unwrap(), FillValue::h5py_default(V3));
    }

    #[test]
    fn decode_undefined_sizes() {
        // Version 1 undefined with size 0, and with HDF5 1.6's size -1: both undefined, each
        // written back as it was.
        let zero = [0x01, 0x02, 0x02, 0x00, 0, 0, 0, 0];
        let f = decode(&zero).unwrap();
        assert_eq!(f, fv(V1, Late, IfSet, FillDefinition::Undefined));
        assert_eq!(encode(&f), zero);
        let minus_one = [0x01, 0x02, 0x02, 0x00, 0xff, 0xff, 0xff, 0xff];
        let f = decode(&minus_one).unwrap();
        let undefined_v1 = FillDefinition::UndefinedSizeMinusOne {
            flagged_defined: false,
        };
        assert_eq!(f, fv(V1, Late, IfSet, undefined_v1));
        assert_eq!(encode(&f), minus_one);
        // Version 2 "defined" with size -1: no value follows; libhdf5 reads it undefined.
        let v2 = [0x02, 0x02, 0x02, 0x01, 0xff, 0xff, 0xff, 0xff];
        let f = decode(&v2).unwrap();
        let undefined_v2 = FillDefinition::UndefinedSizeMinusOne {
            flagged_defined: true,
        };
        assert_eq!(f, fv(V2, Late, IfSet, undefined_v2));
        assert_eq!(encode(&f), v2);
        // Any other size with its top bit set still needs that many bytes.
        assert!(matches!(
            decode(&[0x01, 0x02, 0x02, 0x00, 0xfe, 0xff, 0xff, 0xff]),
            Err(Error::Truncated { .. })
        ));
    }

    #[test]
    fn roundtrip_old_fill_value() {
        #[rustfmt::skip]
        let body = [
            0x04, 0, 0, 0, // size 4
            0x07, 0, 0, 0, // value 7
        ];
        let mut d = Decoder::new(&body, Addr(0), Sizes::DEFAULT, "Fill Value (old) message");
        let f = FillValueOld::decode(&mut d).unwrap();
        assert_eq!(f.value, vec![7, 0, 0, 0]);
        let mut out = Vec::new();
        f.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, "x"))
            .unwrap();
        assert_eq!(out, body);
        assert_eq!(f.encoded_len(), 8);
        for n in 0..body.len() {
            let mut d = Decoder::new(&body[..n], Addr(0), Sizes::DEFAULT, "x");
            assert!(FillValueOld::decode(&mut d).is_err(), "prefix {n}");
        }
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
        assert!(matches!(
            decode(&[0x04, 0x0b]),
            Err(Error::BadVersion {
                at: Addr(0xe7),
                version: 4,
                ..
            })
        ));
        assert!(matches!(
            decode(&[0x00]),
            Err(Error::BadVersion { version: 0, .. })
        ));
        // Version 3: allocation time 0, fill time 3, reserved bits, both value flags.
        assert!(matches!(
            decode(&[0x03, 0x08]),
            Err(Error::BadValue {
                at: Addr(0xe8),
                value: 0,
                ..
            })
        ));
        assert!(matches!(
            decode(&[0x03, 0x0f]),
            Err(Error::BadValue {
                at: Addr(0xe8),
                value: 3,
                ..
            })
        ));
        assert!(matches!(
            decode(&[0x03, 0x4b]),
            Err(Error::BadValue { at: Addr(0xe8), .. })
        ));
        assert!(matches!(
            decode(&[0x03, 0x3b]),
            Err(Error::Invalid { at: Addr(0xe8), .. })
        ));
        // Version 2: allocation time 4, fill time 3, defined 2.
        assert!(matches!(
            decode(&[0x02, 0x04, 0x02, 0x00]),
            Err(Error::BadValue {
                at: Addr(0xe8),
                value: 4,
                ..
            })
        ));
        assert!(matches!(
            decode(&[0x02, 0x03, 0x03, 0x00]),
            Err(Error::BadValue {
                at: Addr(0xe9),
                value: 3,
                ..
            })
        ));
        assert!(matches!(
            decode(&[0x02, 0x03, 0x02, 0x02]),
            Err(Error::BadValue {
                at: Addr(0xea),
                value: 2,
                ..
            })
        ));
        // A huge size is refused before any allocation.
        assert!(matches!(
            decode(&[0x03, 0x2b, 0xff, 0xff, 0xff, 0xff, 1, 2]),
            Err(Error::Truncated { .. })
        ));
        // Version 1 with a value but flagged undefined.
        assert!(matches!(
            decode(&[0x01, 0x02, 0x02, 0x00, 1, 0, 0, 0, 9]),
            Err(Error::Invalid { .. })
        ));
    }
}
