//! Datatype message (type 0x0003), fixed-point (class 0) and floating-point (class 1).
//!
//! | off | size | field                                                              |
//! |-----|------|--------------------------------------------------------------------|
//! | 0   | 1    | class and version: `version << 4 \| class`                         |
//! | 1   | 3    | class bit field (24 bits, little-endian)                           |
//! | 4   | 4    | size (bytes per element)                                           |
//! | 8   | var  | properties                                                         |
//!
//! Fixed-point bit field: bit 0 byte order (0 little-endian, 1 big-endian); bit 1 low padding;
//! bit 2 high padding; bit 3 signed (two's complement). Properties (4 bytes): bit offset (u16),
//! bit precision (u16).
//!
//! Floating-point bit field: bits 0 and 6 byte order (00 little-endian, 01 big-endian, 11 VAX,
//! bit 6 from version 3 on); bit 1 low padding; bit 2 high padding; bit 3 internal padding;
//! bits 4-5 mantissa normalization (0 none, 1 most significant bit set, 2 implied); bits 8-15
//! sign location. Properties (12 bytes): bit offset (u16), bit precision (u16), exponent
//! location (u8), exponent size (u8), mantissa location (u8), mantissa size (u8), exponent
//! bias (u32).
//!
//! Any other class decodes to [`Error::UnsupportedDatatypeClass`]. Bit-field bits a class does
//! not define are rejected, so every decoded value re-encodes to its exact bytes.

use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};

const STRUCTURE: &str = "Datatype message";

/// Datatype message version (the high nibble of the first byte). libhdf5 writes atomic types
/// at version 1; versions 2 to 5 encode fixed- and floating-point types the same way.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DatatypeVersion {
    /// Version 1.
    V1,
    /// Version 2 (array types introduced).
    V2,
    /// Version 3 (VAX byte order and packed compound/enum encoding introduced).
    V3,
    /// Version 4 (revised references, libhdf5 1.12).
    V4,
    /// Version 5 (complex numbers, libhdf5 2.0).
    V5,
}

impl DatatypeVersion {
    /// The version number as stored.
    pub fn number(self) -> u8 {
        match self {
            DatatypeVersion::V1 => 1,
            DatatypeVersion::V2 => 2,
            DatatypeVersion::V3 => 3,
            DatatypeVersion::V4 => 4,
            DatatypeVersion::V5 => 5,
        }
    }

    fn from_number(v: u8) -> Option<Self> {
        Some(match v {
            1 => DatatypeVersion::V1,
            2 => DatatypeVersion::V2,
            3 => DatatypeVersion::V3,
            4 => DatatypeVersion::V4,
            5 => DatatypeVersion::V5,
            _ => return None,
        })
    }
}

/// Byte order of a fixed-point type, or of a floating-point type built by a constructor.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ByteOrder {
    /// Least significant byte first.
    LittleEndian,
    /// Most significant byte first.
    BigEndian,
}

impl ByteOrder {
    /// The byte order of the machine running this code.
    pub const NATIVE: ByteOrder = if cfg!(target_endian = "big") {
        ByteOrder::BigEndian
    } else {
        ByteOrder::LittleEndian
    };
}

/// Byte order of a floating-point type.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum FloatByteOrder {
    /// Least significant byte first.
    LittleEndian,
    /// Most significant byte first.
    BigEndian,
    /// VAX mixed-endian order (datatype version 3 and later).
    Vax,
}

impl From<ByteOrder> for FloatByteOrder {
    fn from(o: ByteOrder) -> Self {
        match o {
            ByteOrder::LittleEndian => FloatByteOrder::LittleEndian,
            ByteOrder::BigEndian => FloatByteOrder::BigEndian,
        }
    }
}

/// Mantissa normalization of a floating-point type.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Normalization {
    /// No normalization.
    None,
    /// The most significant bit of the mantissa is always set.
    MsbSet,
    /// The most significant bit of the mantissa is not stored but implied set (IEEE 754).
    Implied,
}

/// Fixed-point (integer) properties.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct FixedPoint {
    /// Byte order.
    pub byte_order: ByteOrder,
    /// Padding type of the bits below the bit offset: `true` = ones.
    pub low_padding: bool,
    /// Padding type of the bits above offset + precision: `true` = ones.
    pub high_padding: bool,
    /// Signed (two's complement) when `true`, unsigned otherwise.
    pub signed: bool,
    /// Bit offset of the first significant bit.
    pub bit_offset: u16,
    /// Bit precision: the number of significant bits.
    pub bit_precision: u16,
}

/// Floating-point properties.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct FloatingPoint {
    /// Byte order.
    pub byte_order: FloatByteOrder,
    /// Low padding type: `true` = ones.
    pub low_padding: bool,
    /// High padding type: `true` = ones.
    pub high_padding: bool,
    /// Internal padding type: `true` = ones.
    pub internal_padding: bool,
    /// Mantissa normalization.
    pub normalization: Normalization,
    /// Sign location: bit position of the sign bit.
    pub sign_location: u8,
    /// Bit offset of the first significant bit.
    pub bit_offset: u16,
    /// Bit precision: the number of significant bits.
    pub bit_precision: u16,
    /// Exponent location: bit position of the exponent's least significant bit.
    pub exponent_location: u8,
    /// Exponent size in bits.
    pub exponent_size: u8,
    /// Mantissa location: bit position of the mantissa's least significant bit.
    pub mantissa_location: u8,
    /// Mantissa size in bits.
    pub mantissa_size: u8,
    /// Exponent bias.
    pub exponent_bias: u32,
}

/// The class-specific part of a datatype.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DatatypeClass {
    /// Class 0: integers.
    FixedPoint(FixedPoint),
    /// Class 1: floating-point numbers.
    FloatingPoint(FloatingPoint),
}

/// A decoded Datatype message of class 0 or 1.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Datatype {
    /// Message version.
    pub version: DatatypeVersion,
    /// Size of one element in bytes.
    pub size: u32,
    /// Class and class properties.
    pub class: DatatypeClass,
}

/// Rust number types with a standard HDF5 datatype in the machine's byte order.
pub trait NativeType {
    /// The datatype libhdf5 and h5py write for this type.
    fn datatype() -> Datatype;
}

macro_rules! native_int {
    ($($t:ty => $size:expr, $signed:expr;)*) => {$(
        impl NativeType for $t {
            fn datatype() -> Datatype {
                Datatype::int($size, $signed, ByteOrder::NATIVE)
            }
        }
    )*};
}

native_int! {
    i8 => 1, true; i16 => 2, true; i32 => 4, true; i64 => 8, true;
    u8 => 1, false; u16 => 2, false; u32 => 4, false; u64 => 8, false;
}

impl NativeType for f32 {
    fn datatype() -> Datatype {
        Datatype::ieee_float(FloatFormat::SINGLE, ByteOrder::NATIVE)
    }
}

impl NativeType for f64 {
    fn datatype() -> Datatype {
        Datatype::ieee_float(FloatFormat::DOUBLE, ByteOrder::NATIVE)
    }
}

/// Field positions of an IEEE 754 binary format.
struct FloatFormat {
    size: u8,
    exponent_size: u8,
    mantissa_size: u8,
    bias: u32,
}

impl FloatFormat {
    const HALF: FloatFormat = FloatFormat {
        size: 2,
        exponent_size: 5,
        mantissa_size: 10,
        bias: 15,
    };
    const SINGLE: FloatFormat = FloatFormat {
        size: 4,
        exponent_size: 8,
        mantissa_size: 23,
        bias: 127,
    };
    const DOUBLE: FloatFormat = FloatFormat {
        size: 8,
        exponent_size: 11,
        mantissa_size: 52,
        bias: 1023,
    };
}

impl Datatype {
    /// The datatype of the Rust number type `T` in the machine's byte order.
    pub fn native<T: NativeType>() -> Datatype {
        T::datatype()
    }

    /// A version 1 integer of `size` bytes, all bits significant, zero padding, as h5py
    /// writes `<i4`, `>u2` and so on.
    pub fn int(size: u8, signed: bool, byte_order: ByteOrder) -> Datatype {
        Datatype {
            version: DatatypeVersion::V1,
            size: u32::from(size),
            class: DatatypeClass::FixedPoint(FixedPoint {
                byte_order,
                low_padding: false,
                high_padding: false,
                signed,
                bit_offset: 0,
                bit_precision: u16::from(size).saturating_mul(8),
            }),
        }
    }

    /// A version 1 IEEE 754 float of `size` bytes (2, 4 or 8), as h5py writes `<f2`, `<f4`,
    /// `>f8`; `None` for any other size.
    pub fn float(size: u8, byte_order: ByteOrder) -> Option<Datatype> {
        let format = match size {
            2 => FloatFormat::HALF,
            4 => FloatFormat::SINGLE,
            8 => FloatFormat::DOUBLE,
            _ => return None,
        };
        Some(Datatype::ieee_float(format, byte_order))
    }

    fn ieee_float(f: FloatFormat, byte_order: ByteOrder) -> Datatype {
        let bits = f.size.saturating_mul(8);
        Datatype {
            version: DatatypeVersion::V1,
            size: u32::from(f.size),
            class: DatatypeClass::FloatingPoint(FloatingPoint {
                byte_order: byte_order.into(),
                low_padding: false,
                high_padding: false,
                internal_padding: false,
                normalization: Normalization::Implied,
                sign_location: bits.saturating_sub(1),
                bit_offset: 0,
                bit_precision: u16::from(bits),
                exponent_location: f.mantissa_size,
                exponent_size: f.exponent_size,
                mantissa_location: 0,
                mantissa_size: f.mantissa_size,
                exponent_bias: f.bias,
            }),
        }
    }

    /// Size of one element in bytes.
    pub fn element_size(&self) -> u32 {
        self.size
    }

    /// Decode a Datatype message body.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        let at = d.addr();
        let first = d.u8()?;
        let (version_number, class) = (first >> 4, first & 0x0f);
        let version = DatatypeVersion::from_number(version_number)
            .ok_or_else(|| d.bad_version(at, version_number))?;
        let name = match class {
            0 | 1 => "",
            2 => "time",
            3 => "string",
            4 => "bitfield",
            5 => "opaque",
            6 => "compound",
            7 => "reference",
            8 => "enumerated",
            9 => "variable-length",
            10 => "array",
            11 => "complex",
            _ => return Err(d.bad_value(at, "datatype class", u64::from(class))),
        };
        if class > 1 {
            return Err(Error::UnsupportedDatatypeClass { at, class, name });
        }
        let bits_at = d.addr();
        let [b0, b1, b2] = d.array::<3>()?;
        let bits = u32::from_le_bytes([b0, b1, b2, 0]);
        let size_at = d.addr();
        let size = d.u32()?;
        if size == 0 {
            return Err(d.bad_value(size_at, "size", 0));
        }
        let size_bits = u64::from(size).saturating_mul(8);
        let props_at = d.addr();
        let class = if class == 0 {
            if bits & !0x0f != 0 {
                return Err(d.bad_value(bits_at, "fixed-point bit field", u64::from(bits)));
            }
            let bit_offset = d.u16()?;
            let bit_precision = d.u16()?;
            check_bits(d, props_at, size_bits, bit_offset, bit_precision)?;
            DatatypeClass::FixedPoint(FixedPoint {
                byte_order: if bits & 0x01 != 0 {
                    ByteOrder::BigEndian
                } else {
                    ByteOrder::LittleEndian
                },
                low_padding: bits & 0x02 != 0,
                high_padding: bits & 0x04 != 0,
                signed: bits & 0x08 != 0,
                bit_offset,
                bit_precision,
            })
        } else {
            let vax_allowed = version_number >= 3;
            let known = 0xff3f | if vax_allowed { 0x40 } else { 0 };
            if bits & !known != 0 {
                return Err(d.bad_value(bits_at, "floating-point bit field", u64::from(bits)));
            }
            let byte_order = match (bits & 0x01 != 0, bits & 0x40 != 0) {
                (false, false) => FloatByteOrder::LittleEndian,
                (true, false) => FloatByteOrder::BigEndian,
                (true, true) => FloatByteOrder::Vax,
                (false, true) => {
                    return Err(d.bad_value(bits_at, "floating-point byte order", u64::from(bits)));
                }
            };
            let normalization = match (bits >> 4) & 0x03 {
                0 => Normalization::None,
                1 => Normalization::MsbSet,
                2 => Normalization::Implied,
                n => return Err(d.bad_value(bits_at, "mantissa normalization", u64::from(n))),
            };
            let sign_location = u8::try_from((bits >> 8) & 0xff).unwrap_or(u8::MAX);
            let bit_offset = d.u16()?;
            let bit_precision = d.u16()?;
            let exponent_location = d.u8()?;
            let exponent_size = d.u8()?;
            let mantissa_location = d.u8()?;
            let mantissa_size = d.u8()?;
            let exponent_bias = d.u32()?;
            check_bits(d, props_at, size_bits, bit_offset, bit_precision)?;
            if u64::from(sign_location) >= size_bits {
                return Err(d.invalid(bits_at, "sign location out of bounds"));
            }
            for (what, pos, len) in [
                ("exponent", exponent_location, exponent_size),
                ("mantissa", mantissa_location, mantissa_size),
            ] {
                if len == 0 {
                    return Err(d.invalid(props_at, format!("{what} size is zero")));
                }
                if u64::from(pos).saturating_add(u64::from(len)) > size_bits {
                    return Err(d.invalid(props_at, format!("{what} out of bounds")));
                }
            }
            DatatypeClass::FloatingPoint(FloatingPoint {
                byte_order,
                low_padding: bits & 0x02 != 0,
                high_padding: bits & 0x04 != 0,
                internal_padding: bits & 0x08 != 0,
                normalization,
                sign_location,
                bit_offset,
                bit_precision,
                exponent_location,
                exponent_size,
                mantissa_location,
                mantissa_size,
                exponent_bias,
            })
        };
        Ok(Datatype {
            version,
            size,
            class,
        })
    }

    /// Encode a Datatype message body.
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        let (class, bits) = match &self.class {
            DatatypeClass::FixedPoint(f) => {
                let mut bits = 0u32;
                if f.byte_order == ByteOrder::BigEndian {
                    bits |= 0x01;
                }
                if f.low_padding {
                    bits |= 0x02;
                }
                if f.high_padding {
                    bits |= 0x04;
                }
                if f.signed {
                    bits |= 0x08;
                }
                (0u8, bits)
            }
            DatatypeClass::FloatingPoint(f) => {
                let mut bits = u32::from(f.sign_location) << 8;
                match f.byte_order {
                    FloatByteOrder::LittleEndian => {}
                    FloatByteOrder::BigEndian => bits |= 0x01,
                    FloatByteOrder::Vax => {
                        if self.version.number() < 3 {
                            return Err(Error::Unencodable {
                                structure: STRUCTURE,
                                reason: "VAX byte order needs datatype version 3 or later".into(),
                            });
                        }
                        bits |= 0x41;
                    }
                }
                if f.low_padding {
                    bits |= 0x02;
                }
                if f.high_padding {
                    bits |= 0x04;
                }
                if f.internal_padding {
                    bits |= 0x08;
                }
                bits |= match f.normalization {
                    Normalization::None => 0,
                    Normalization::MsbSet => 0x10,
                    Normalization::Implied => 0x20,
                };
                (1u8, bits)
            }
        };
        e.u8((self.version.number() << 4) | class);
        let [b0, b1, b2, _] = bits.to_le_bytes();
        e.bytes(&[b0, b1, b2]);
        e.u32(self.size);
        match &self.class {
            DatatypeClass::FixedPoint(f) => {
                e.u16(f.bit_offset);
                e.u16(f.bit_precision);
            }
            DatatypeClass::FloatingPoint(f) => {
                e.u16(f.bit_offset);
                e.u16(f.bit_precision);
                e.u8(f.exponent_location);
                e.u8(f.exponent_size);
                e.u8(f.mantissa_location);
                e.u8(f.mantissa_size);
                e.u32(f.exponent_bias);
            }
        }
        Ok(())
    }

    /// The body's encoded length.
    pub fn encoded_len(&self) -> usize {
        match self.class {
            DatatypeClass::FixedPoint(_) => 12,
            DatatypeClass::FloatingPoint(_) => 20,
        }
    }
}

/// The checks libhdf5 applies to bit offset and precision: a non-zero precision, and the
/// significant bits inside the element.
fn check_bits(
    d: &Decoder<'_>,
    at: crate::Addr,
    size_bits: u64,
    bit_offset: u16,
    bit_precision: u16,
) -> Result<()> {
    if bit_precision == 0 {
        return Err(d.invalid(at, "bit precision is zero"));
    }
    if u64::from(bit_offset).saturating_add(u64::from(bit_precision)) > size_bits {
        return Err(d.invalid(
            at,
            format!(
                "bit offset {bit_offset} + precision {bit_precision} exceed the {size_bits}-bit element"
            ),
        ));
    }
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

    use ByteOrder::{BigEndian as BE, LittleEndian as LE};

    fn decode(body: &[u8]) -> Result<Datatype> {
        Datatype::decode(&mut Decoder::new(
            body,
            Addr(0xd7),
            Sizes::DEFAULT,
            STRUCTURE,
        ))
    }

    fn encode(dt: &Datatype) -> Vec<u8> {
        let mut out = Vec::new();
        dt.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, STRUCTURE))
            .unwrap();
        assert_eq!(out.len(), dt.encoded_len());
        out
    }

    /// Every row of docs/format/file-format.md §4.2, with the constructor that must produce it.
    #[rustfmt::skip]
    fn table() -> Vec<(&'static str, Vec<u8>, Datatype)> {
        vec![
            ("<i1", vec![
                0x10,             // version 1, class 0 (fixed-point)
                0x08, 0x00, 0x00, // bit field: little-endian, signed
                0x01, 0, 0, 0,    // size 1
                0x00, 0x00,       // bit offset 0
                0x08, 0x00,       // bit precision 8
            ], Datatype::int(1, true, LE)),
            ("<i2", vec![
                0x10, 0x08, 0x00, 0x00, // v1 fixed-point, LE signed
                0x02, 0, 0, 0,          // size 2
                0x00, 0x00, 0x10, 0x00, // offset 0, precision 16
            ], Datatype::int(2, true, LE)),
            ("<i4", vec![
                0x10, 0x08, 0x00, 0x00, // v1 fixed-point, LE signed
                0x04, 0, 0, 0,          // size 4
                0x00, 0x00, 0x20, 0x00, // offset 0, precision 32
            ], Datatype::int(4, true, LE)),
            ("<i8", vec![
                0x10, 0x08, 0x00, 0x00, // v1 fixed-point, LE signed
                0x08, 0, 0, 0,          // size 8
                0x00, 0x00, 0x40, 0x00, // offset 0, precision 64
            ], Datatype::int(8, true, LE)),
            ("<u1", vec![
                0x10, 0x00, 0x00, 0x00, // v1 fixed-point, LE unsigned
                0x01, 0, 0, 0,          // size 1
                0x00, 0x00, 0x08, 0x00, // offset 0, precision 8
            ], Datatype::int(1, false, LE)),
            ("<u2", vec![
                0x10, 0x00, 0x00, 0x00, // v1 fixed-point, LE unsigned
                0x02, 0, 0, 0,          // size 2
                0x00, 0x00, 0x10, 0x00, // offset 0, precision 16
            ], Datatype::int(2, false, LE)),
            ("<u4", vec![
                0x10, 0x00, 0x00, 0x00, // v1 fixed-point, LE unsigned
                0x04, 0, 0, 0,          // size 4
                0x00, 0x00, 0x20, 0x00, // offset 0, precision 32
            ], Datatype::int(4, false, LE)),
            ("<u8", vec![
                0x10, 0x00, 0x00, 0x00, // v1 fixed-point, LE unsigned
                0x08, 0, 0, 0,          // size 8
                0x00, 0x00, 0x40, 0x00, // offset 0, precision 64
            ], Datatype::int(8, false, LE)),
            (">i4", vec![
                0x10, 0x09, 0x00, 0x00, // v1 fixed-point, BE signed
                0x04, 0, 0, 0,          // size 4
                0x00, 0x00, 0x20, 0x00, // offset 0, precision 32
            ], Datatype::int(4, true, BE)),
            (">u2", vec![
                0x10, 0x01, 0x00, 0x00, // v1 fixed-point, BE unsigned
                0x02, 0, 0, 0,          // size 2
                0x00, 0x00, 0x10, 0x00, // offset 0, precision 16
            ], Datatype::int(2, false, BE)),
            ("<f2", vec![
                0x11,             // version 1, class 1 (floating-point)
                0x20, 0x0f, 0x00, // bit field: LE, implied normalization, sign at bit 15
                0x02, 0, 0, 0,    // size 2
                0x00, 0x00,       // bit offset 0
                0x10, 0x00,       // bit precision 16
                0x0a,             // exponent location 10
                0x05,             // exponent size 5
                0x00,             // mantissa location 0
                0x0a,             // mantissa size 10
                0x0f, 0, 0, 0,    // exponent bias 15
            ], Datatype::float(2, LE).unwrap()),
            ("<f4", vec![
                0x11, 0x20, 0x1f, 0x00, // v1 float, LE, implied, sign at bit 31
                0x04, 0, 0, 0,          // size 4
                0x00, 0x00, 0x20, 0x00, // offset 0, precision 32
                0x17, 0x08,             // exponent location 23, size 8
                0x00, 0x17,             // mantissa location 0, size 23
                0x7f, 0, 0, 0,          // exponent bias 127
            ], Datatype::float(4, LE).unwrap()),
            ("<f8", vec![
                0x11, 0x20, 0x3f, 0x00, // v1 float, LE, implied, sign at bit 63
                0x08, 0, 0, 0,          // size 8
                0x00, 0x00, 0x40, 0x00, // offset 0, precision 64
                0x34, 0x0b,             // exponent location 52, size 11
                0x00, 0x34,             // mantissa location 0, size 52
                0xff, 0x03, 0, 0,       // exponent bias 1023
            ], Datatype::float(8, LE).unwrap()),
            (">f4", vec![
                0x11, 0x21, 0x1f, 0x00, // v1 float, BE, implied, sign at bit 31
                0x04, 0, 0, 0,          // size 4
                0x00, 0x00, 0x20, 0x00, // offset 0, precision 32
                0x17, 0x08, 0x00, 0x17, // exponent 23/8, mantissa 0/23
                0x7f, 0, 0, 0,          // exponent bias 127
            ], Datatype::float(4, BE).unwrap()),
            (">f8", vec![
                0x11, 0x21, 0x3f, 0x00, // v1 float, BE, implied, sign at bit 63
                0x08, 0, 0, 0,          // size 8
                0x00, 0x00, 0x40, 0x00, // offset 0, precision 64
                0x34, 0x0b, 0x00, 0x34, // exponent 52/11, mantissa 0/52
                0xff, 0x03, 0, 0,       // exponent bias 1023
            ], Datatype::float(8, BE).unwrap()),
        ]
    }

    #[test]
    fn decode_every_h5py_datatype() {
        for (name, bytes, expected) in table() {
            let dt = decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(dt, expected, "{name}");
            assert_eq!(encode(&dt), bytes, "{name}");
        }
    }

    #[test]
    fn decode_ignores_v1_header_padding() {
        // A v1 object header pads integers to 16 and floats to 24 bytes.
        for (name, mut bytes, expected) in table() {
            bytes.resize(bytes.len().next_multiple_of(8), 0);
            assert_eq!(decode(&bytes).unwrap(), expected, "{name}");
        }
    }

    #[test]
    fn native_types() {
        let le = ByteOrder::NATIVE == LE;
        if le {
            assert_eq!(encode(&Datatype::native::<i32>()), table()[2].1);
            assert_eq!(encode(&Datatype::native::<f64>()), table()[12].1);
            assert_eq!(encode(&Datatype::native::<u8>()), table()[4].1);
            assert_eq!(encode(&Datatype::native::<f32>()), table()[11].1);
        }
        assert_eq!(Datatype::native::<u16>().element_size(), 2);
        assert_eq!(Datatype::native::<i64>().element_size(), 8);
        assert!(Datatype::float(3, LE).is_none());
    }

    #[test]
    fn roundtrip_flags_and_versions() {
        let mut dt = Datatype::int(4, true, BE);
        dt.version = DatatypeVersion::V3;
        if let DatatypeClass::FixedPoint(f) = &mut dt.class {
            f.low_padding = true;
            f.high_padding = true;
            f.bit_offset = 8;
            f.bit_precision = 16;
        }
        assert_eq!(decode(&encode(&dt)).unwrap(), dt);
        let mut dt = Datatype::float(8, LE).unwrap();
        dt.version = DatatypeVersion::V3;
        if let DatatypeClass::FloatingPoint(f) = &mut dt.class {
            f.byte_order = FloatByteOrder::Vax;
            f.internal_padding = true;
            f.low_padding = true;
            f.normalization = Normalization::MsbSet;
        }
        let bytes = encode(&dt);
        assert_eq!(&bytes[..4], &[0x31, 0x5b, 0x3f, 0x00]);
        assert_eq!(decode(&bytes).unwrap(), dt);
        dt.version = DatatypeVersion::V2;
        let mut out = Vec::new();
        assert!(matches!(
            dt.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, STRUCTURE)),
            Err(Error::Unencodable { .. })
        ));
    }

    #[test]
    fn rejects_truncation() {
        for (name, bytes, _) in table() {
            for n in 0..bytes.len() {
                assert!(decode(&bytes[..n]).is_err(), "{name} prefix {n}");
            }
        }
    }

    #[test]
    fn rejects_other_classes_naming_them() {
        for (class, name) in [
            (2u8, "time"),
            (3, "string"),
            (4, "bitfield"),
            (5, "opaque"),
            (6, "compound"),
            (7, "reference"),
            (8, "enumerated"),
            (9, "variable-length"),
            (10, "array"),
            (11, "complex"),
        ] {
            let body = [0x10 | class, 0, 0, 0, 1, 0, 0, 0];
            assert_eq!(
                decode(&body),
                Err(Error::UnsupportedDatatypeClass {
                    at: Addr(0xd7),
                    class,
                    name
                })
            );
        }
        // h5py bool under HDF5 2.0 `latest`: an enum at datatype version 5.
        assert!(matches!(
            decode(&[0x58, 1, 0, 0, 1, 0, 0, 0]),
            Err(Error::UnsupportedDatatypeClass { class: 8, .. })
        ));
    }

    #[test]
    fn rejects_bad_values_with_address() {
        let i4 = table()[2].1.clone();
        let f4 = table()[11].1.clone();
        let mut b = i4.clone();
        b[0] = 0x00; // version 0
        assert!(matches!(
            decode(&b),
            Err(Error::BadVersion {
                at: Addr(0xd7),
                version: 0,
                ..
            })
        ));
        b[0] = 0x60; // version 6
        assert!(matches!(
            decode(&b),
            Err(Error::BadVersion { version: 6, .. })
        ));
        b[0] = 0x1c; // class 12
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                at: Addr(0xd7),
                value: 12,
                ..
            })
        ));
        let mut b = i4.clone();
        b[1] = 0x18; // undefined fixed-point bit
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue { at: Addr(0xd8), .. })
        ));
        let mut b = i4.clone();
        b[4] = 0; // size 0
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                at: Addr(0xdb),
                value: 0,
                ..
            })
        ));
        let mut b = i4.clone();
        b[10] = 0; // precision 0
        assert!(matches!(
            decode(&b),
            Err(Error::Invalid { at: Addr(0xdf), .. })
        ));
        let mut b = i4.clone();
        b[8] = 1; // offset 1 + precision 32 > 32
        assert!(matches!(decode(&b), Err(Error::Invalid { .. })));
        let mut b = f4.clone();
        b[1] = 0x30; // normalization 3
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue {
                at: Addr(0xd8),
                value: 3,
                ..
            })
        ));
        let mut b = f4.clone();
        b[1] = 0x61; // VAX order in a version 1 datatype
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue { at: Addr(0xd8), .. })
        ));
        let mut b = f4.clone();
        b[0] = 0x31;
        b[1] = 0x60; // bit 6 without bit 0
        assert!(matches!(
            decode(&b),
            Err(Error::BadValue { at: Addr(0xd8), .. })
        ));
        let mut b = f4.clone();
        b[13] = 0; // exponent size 0
        assert!(matches!(decode(&b), Err(Error::Invalid { .. })));
        let mut b = f4.clone();
        b[2] = 32; // sign bit outside the element
        assert!(matches!(decode(&b), Err(Error::Invalid { .. })));
    }
}
