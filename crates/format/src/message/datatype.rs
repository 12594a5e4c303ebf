//! Datatype message (type 0x0003): every class of versions 1 to 4 (and version 5's encoding
//! of them), complex numbers (libhdf5 2.0) included.
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
//! The other classes:
//!
//! | class | bit field | properties |
//! |---|---|---|
//! | 2 time | bit 0 byte order | bit precision (u16) |
//! | 3 string | bits 0-3 padding (0 null-terminated, 1 null-padded, 2 space-padded), bits 4-7 character set (0 ASCII, 1 UTF-8) | none |
//! | 4 bitfield | bit 0 byte order, bits 1-2 low/high padding | bit offset (u16), bit precision (u16) |
//! | 5 opaque | bits 0-7 length of the tag field (a multiple of 8) | the tag, NUL-padded to that length |
//! | 6 compound | bits 0-15 member count | per member: name, byte offset, (version 1: an array description), member type |
//! | 7 reference | bits 0-3 reference type (0 object, 1 dataset region; version 4: 2-4, the revised references), bits 4-7 their encoding version | none |
//! | 8 enumeration | bits 0-15 member count | base type, names, then the values packed in the base type |
//! | 9 variable-length | bits 0-3 kind (0 sequence, 1 string), bits 4-7 padding and bits 8-11 character set of a string | base type |
//! | 10 array | none | rank (u8), versions 1-2: three reserved bytes, dims (u32 each), versions 1-2: permutation indices (u32 each); base type (HDF5 1.4 wrote version 1) |
//!
//! Compound member names and enumeration names are NUL-terminated, padded with NULs to a
//! multiple of 8 bytes in versions 1 and 2 and unpadded from version 3 on. A compound member's
//! byte offset is a u32 in versions 1 and 2; from version 3 on it takes as few bytes as hold the
//! compound's size (1 byte below 256, 2 below 65,536, ...). Version 1 compound members carry
//! their own array description (rank u8, three reserved bytes, permutation u32, four reserved
//! bytes, four dims u32), written as zeros when the member is not an array.
//!
//! Complex numbers (class 11, HDF5 2.0) decode to [`DatatypeClass::Complex`]. Bit-field
//! bits a class does not define are rejected, so every decoded value re-encodes to its exact
//! bytes (names and tags keep their padding). Nested types are followed at most
//! [`MAX_NESTING`] levels deep, and every count is checked against the bytes left before
//! anything is allocated for it.

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

/// How many levels of types inside types (compound members, array, enumeration and
/// variable-length base types) a decoder follows.
pub const MAX_NESTING: usize = 32;

/// Padding of a string class (fixed-length or variable-length).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum StringPadding {
    /// NUL-terminated (the terminator counts in the size).
    NullTerminate,
    /// Padded with NULs, not necessarily terminated.
    NullPad,
    /// Padded with spaces (Fortran).
    SpacePad,
}

/// Character set of a string class.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum CharSet {
    /// ASCII.
    Ascii,
    /// UTF-8.
    Utf8,
}

/// A string's padding and character set, as class 3 and variable-length strings store them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct StringType {
    /// Padding.
    pub padding: StringPadding,
    /// Character set.
    pub charset: CharSet,
}

/// Bit-field (class 4) properties.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Bitfield {
    /// Byte order.
    pub byte_order: ByteOrder,
    /// Low padding type: `true` = ones.
    pub low_padding: bool,
    /// High padding type: `true` = ones.
    pub high_padding: bool,
    /// Bit offset of the first significant bit.
    pub bit_offset: u16,
    /// Bit precision.
    pub bit_precision: u16,
}

/// A version 1 compound member's own array description (all zeros for a scalar member).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct MemberArrayV1 {
    /// Rank, at most 4 (0: not an array).
    pub rank: u8,
    /// Dimension permutation (unused by libhdf5).
    pub permutation: u32,
    /// Dimension sizes.
    pub dims: [u32; 4],
}

/// One member of a compound type.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct CompoundMember {
    /// Name (without its terminator).
    pub name: Vec<u8>,
    /// Byte offset inside the compound element.
    pub offset: u32,
    /// Version 1 only: the member's array description.
    pub array_v1: MemberArrayV1,
    /// The member's type.
    pub datatype: Datatype,
}

/// What a variable-length type holds.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum VarLenKind {
    /// A sequence of base-type elements.
    Sequence,
    /// A string.
    String(StringType),
}

/// The class-specific part of a datatype.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum DatatypeClass {
    /// Class 0: integers.
    FixedPoint(FixedPoint),
    /// Class 1: floating-point numbers.
    FloatingPoint(FloatingPoint),
    /// Class 2: time.
    Time {
        /// Byte order.
        byte_order: ByteOrder,
        /// Bit precision.
        bit_precision: u16,
    },
    /// Class 3: fixed-length strings of `size` bytes.
    String(StringType),
    /// Class 4: bit fields.
    Bitfield(Bitfield),
    /// Class 5: opaque bytes with a tag (the stored field, NUL padding included).
    Opaque {
        /// The tag field as stored: a multiple of 8 bytes.
        tag: Vec<u8>,
    },
    /// Class 6: compound records.
    Compound(Vec<CompoundMember>),
    /// Class 7: references; `flags` is the class bit field's low byte (type and encoding).
    Reference {
        /// Bits 0-7 of the bit field.
        flags: u8,
    },
    /// Class 8: enumerations.
    Enum {
        /// The integer type of the values.
        base: Box<Datatype>,
        /// Names, in stored order.
        names: Vec<Vec<u8>>,
        /// The values, `names.len()` elements of the base type, packed.
        values: Vec<u8>,
    },
    /// Class 9: variable-length sequences and strings.
    VarLen {
        /// Sequence or string.
        kind: VarLenKind,
        /// The element type (for strings, libhdf5 writes a one-byte character type).
        base: Box<Datatype>,
    },
    /// Class 10: fixed-size arrays of a base type.
    Array {
        /// Dimension sizes.
        dims: Vec<u32>,
        /// Versions 1 and 2 only: permutation indices, one per dimension.
        permutation: Vec<u32>,
        /// The element type.
        base: Box<Datatype>,
    },
    /// Class 11 (version 5, libhdf5 2.0): complex numbers, a real and an imaginary part of
    /// one floating-point `base` type, real first (C99's `double complex`).
    Complex {
        /// The type of each part.
        base: Box<Datatype>,
    },
}

impl DatatypeClass {
    /// The class's name, as HDF5 calls it ("fixed-point", "compound", ...).
    pub fn name(&self) -> &'static str {
        match self {
            DatatypeClass::FixedPoint(_) => "fixed-point",
            DatatypeClass::FloatingPoint(_) => "floating-point",
            DatatypeClass::Time { .. } => "time",
            DatatypeClass::String(_) => "string",
            DatatypeClass::Bitfield(_) => "bitfield",
            DatatypeClass::Opaque { .. } => "opaque",
            DatatypeClass::Compound(_) => "compound",
            DatatypeClass::Reference { .. } => "reference",
            DatatypeClass::Enum { .. } => "enumerated",
            DatatypeClass::VarLen { .. } => "variable-length",
            DatatypeClass::Array { .. } => "array",
            DatatypeClass::Complex { .. } => "complex",
        }
    }
}

/// A decoded Datatype message.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
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
    /// bfloat16: the top half of a binary32 (8 exponent bits, 7 mantissa bits), libhdf5
    /// 2.0's `H5T_FLOAT_BFLOAT16LE`/`BE`.
    const BFLOAT16: FloatFormat = FloatFormat {
        size: 2,
        exponent_size: 8,
        mantissa_size: 7,
        bias: 127,
    };

    /// Whether `f`, of `size` bytes, lays out its bits as this format (whatever its byte
    /// order and padding types: every bit is significant, so padding never shows).
    fn matches(&self, f: &FloatingPoint, size: u32) -> bool {
        let bits = u16::from(self.size).saturating_mul(8);
        size == u32::from(self.size)
            && f.normalization == Normalization::Implied
            && u16::from(f.sign_location) == bits.saturating_sub(1)
            && f.bit_offset == 0
            && f.bit_precision == bits
            && f.exponent_location == self.mantissa_size
            && f.exponent_size == self.exponent_size
            && f.mantissa_location == 0
            && f.mantissa_size == self.mantissa_size
            && f.exponent_bias == self.bias
    }
}

/// The bit layouts of floating-point types that h5chunk converts to and from Rust numbers.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum FloatLayout {
    /// IEEE 754 binary16, binary32 or binary64 (by the type's size).
    Ieee,
    /// bfloat16: 1 sign bit, 8 exponent bits (bias 127), 7 mantissa bits.
    BFloat16,
}

impl FloatingPoint {
    /// Which known layout a floating-point type of `size` bytes has; `None` for any other
    /// (VAX layouts, padded or shortened floats, custom exponent and mantissa widths).
    pub fn layout(&self, size: u32) -> Option<FloatLayout> {
        if [FloatFormat::HALF, FloatFormat::SINGLE, FloatFormat::DOUBLE]
            .iter()
            .any(|format| format.matches(self, size))
        {
            Some(FloatLayout::Ieee)
        } else if FloatFormat::BFLOAT16.matches(self, size) {
            Some(FloatLayout::BFloat16)
        } else {
            None
        }
    }
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

    /// A version 1 bfloat16 (1 sign, 8 exponent and 7 mantissa bits, bias 127): what libhdf5
    /// 2.0 writes for `H5T_FLOAT_BFLOAT16LE`/`BE`, and h5py for a copy of `IEEE_F16LE` given
    /// those fields.
    pub fn bfloat16(byte_order: ByteOrder) -> Datatype {
        Datatype::ieee_float(FloatFormat::BFLOAT16, byte_order)
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
        Self::decode_nested(d, 0)
    }

    /// Decode a datatype `depth` levels inside another.
    fn decode_nested(d: &mut Decoder<'_>, depth: usize) -> Result<Self> {
        let at = d.addr();
        let first = d.u8()?;
        let (version_number, class) = (first >> 4, first & 0x0f);
        let version = DatatypeVersion::from_number(version_number)
            .ok_or_else(|| d.bad_version(at, version_number))?;
        match class {
            0..=11 => {}
            _ => return Err(d.bad_value(at, "datatype class", u64::from(class))),
        }
        if depth >= MAX_NESTING {
            return Err(d.invalid(
                at,
                format!("datatypes nested more than {MAX_NESTING} levels deep"),
            ));
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
        let undefined = |known: u32, field: &'static str| {
            if bits & !known != 0 {
                Err(d.bad_value(bits_at, field, u64::from(bits)))
            } else {
                Ok(())
            }
        };
        let order = |bits: u32| {
            if bits & 0x01 != 0 {
                ByteOrder::BigEndian
            } else {
                ByteOrder::LittleEndian
            }
        };
        // From version 3 on, names are not padded to 8 bytes.
        let padded_names = version_number < 3;
        let class = match class {
            0 => {
                undefined(0x0f, "fixed-point bit field")?;
                let bit_offset = d.u16()?;
                let bit_precision = d.u16()?;
                check_bits(d, props_at, size_bits, bit_offset, bit_precision)?;
                DatatypeClass::FixedPoint(FixedPoint {
                    byte_order: order(bits),
                    low_padding: bits & 0x02 != 0,
                    high_padding: bits & 0x04 != 0,
                    signed: bits & 0x08 != 0,
                    bit_offset,
                    bit_precision,
                })
            }
            1 => decode_float(d, bits, bits_at, props_at, size_bits, version_number)?,
            2 => {
                undefined(0x01, "time bit field")?;
                let bit_precision = d.u16()?;
                check_bits(d, props_at, size_bits, 0, bit_precision)?;
                DatatypeClass::Time {
                    byte_order: order(bits),
                    bit_precision,
                }
            }
            3 => {
                undefined(0xff, "string bit field")?;
                DatatypeClass::String(string_type(d, bits_at, bits)?)
            }
            4 => {
                undefined(0x07, "bit-field bit field")?;
                let bit_offset = d.u16()?;
                let bit_precision = d.u16()?;
                check_bits(d, props_at, size_bits, bit_offset, bit_precision)?;
                DatatypeClass::Bitfield(Bitfield {
                    byte_order: order(bits),
                    low_padding: bits & 0x02 != 0,
                    high_padding: bits & 0x04 != 0,
                    bit_offset,
                    bit_precision,
                })
            }
            5 => {
                undefined(0xff, "opaque bit field")?;
                let len = usize::try_from(bits).unwrap_or(usize::MAX);
                if !len.is_multiple_of(8) {
                    return Err(d.bad_value(bits_at, "opaque tag length", u64::from(bits)));
                }
                DatatypeClass::Opaque {
                    tag: d.bytes(len)?.to_vec(),
                }
            }
            6 => {
                undefined(0xffff, "compound bit field")?;
                // A member takes at least a NUL, a one-byte offset and an 8-byte type.
                let n = d.check_count(u64::from(bits), 10)?;
                let mut members = Vec::with_capacity(n);
                for _ in 0..n {
                    let member_at = d.addr();
                    let name = name(d, padded_names)?;
                    let offset = if version_number < 3 {
                        d.u32()?
                    } else {
                        let w = offset_width(size);
                        u32::try_from(d.uint(w)?).unwrap_or(u32::MAX)
                    };
                    let mut array_v1 = MemberArrayV1::default();
                    if version_number == 1 {
                        let rank_at = d.addr();
                        array_v1.rank = d.u8()?;
                        if array_v1.rank > 4 {
                            return Err(d.bad_value(
                                rank_at,
                                "compound member rank",
                                u64::from(array_v1.rank),
                            ));
                        }
                        d.skip(3)?;
                        array_v1.permutation = d.u32()?;
                        d.skip(4)?;
                        for dim in &mut array_v1.dims {
                            *dim = d.u32()?;
                        }
                    }
                    let datatype = Datatype::decode_nested(d, depth.saturating_add(1))?;
                    let end = u64::from(offset).saturating_add(member_extent(&datatype, &array_v1));
                    if end > u64::from(size) {
                        return Err(d.invalid(
                            member_at,
                            format!(
                                "compound member ends at byte {end}, past the {size}-byte element"
                            ),
                        ));
                    }
                    members.push(CompoundMember {
                        name,
                        offset,
                        array_v1,
                        datatype,
                    });
                }
                DatatypeClass::Compound(members)
            }
            7 => {
                undefined(0xff, "reference bit field")?;
                let kind = bits & 0x0f;
                let highest = if version_number >= 4 { 4 } else { 1 };
                if kind > highest {
                    return Err(d.bad_value(bits_at, "reference type", u64::from(kind)));
                }
                DatatypeClass::Reference {
                    flags: u8::try_from(bits).unwrap_or(u8::MAX),
                }
            }
            8 => {
                undefined(0xffff, "enumeration bit field")?;
                let base_at = d.addr();
                let base = Datatype::decode_nested(d, depth.saturating_add(1))?;
                if !matches!(base.class, DatatypeClass::FixedPoint(_)) || base.size != size {
                    return Err(d.invalid(
                        base_at,
                        "an enumeration's base type must be an integer of the enumeration's size",
                    ));
                }
                // A name takes at least its NUL; a value, the base type's size.
                let n = d.check_count(u64::from(bits), 1)?;
                let mut names = Vec::with_capacity(n);
                for _ in 0..n {
                    names.push(name(d, padded_names)?);
                }
                let value_len = usize::try_from(size).unwrap_or(usize::MAX);
                let n = d.check_count(u64::from(bits), value_len)?;
                let values = d.bytes(n.saturating_mul(value_len))?.to_vec();
                DatatypeClass::Enum {
                    base: Box::new(base),
                    names,
                    values,
                }
            }
            9 => {
                undefined(0x0fff, "variable-length bit field")?;
                let kind = match bits & 0x0f {
                    0 if bits & 0x0ff0 == 0 => VarLenKind::Sequence,
                    1 => VarLenKind::String(string_type(d, bits_at, bits >> 4)?),
                    _ => {
                        return Err(d.bad_value(
                            bits_at,
                            "variable-length bit field",
                            u64::from(bits),
                        ));
                    }
                };
                let base = Datatype::decode_nested(d, depth.saturating_add(1))?;
                DatatypeClass::VarLen {
                    kind,
                    base: Box::new(base),
                }
            }
            10 => {
                // HDF5 1.4 wrote array types at version 1; libhdf5 reads them with version 2's
                // wire layout (reserved bytes and permutation indices), and so does h5chunk.
                let old_layout = version_number < 3;
                undefined(0, "array bit field")?;
                let rank_at = d.addr();
                let rank = d.u8()?;
                if rank == 0 || rank > 32 {
                    return Err(d.bad_value(rank_at, "array rank", u64::from(rank)));
                }
                if old_layout {
                    d.skip(3)?;
                }
                let n = d.check_count(u64::from(rank), 4)?;
                let mut dims = Vec::with_capacity(n);
                for _ in 0..n {
                    dims.push(d.u32()?);
                }
                let mut permutation = Vec::new();
                if old_layout {
                    let n = d.check_count(u64::from(rank), 4)?;
                    permutation.reserve(n);
                    for _ in 0..n {
                        permutation.push(d.u32()?);
                    }
                }
                let base = Datatype::decode_nested(d, depth.saturating_add(1))?;
                let elements = dims
                    .iter()
                    .try_fold(1u64, |a, &x| a.checked_mul(u64::from(x)));
                if elements.and_then(|e| e.checked_mul(u64::from(base.size)))
                    != Some(u64::from(size))
                {
                    return Err(d.invalid(
                        rank_at,
                        format!(
                            "array dims {dims:?} of {}-byte elements are not {size} bytes",
                            base.size
                        ),
                    ));
                }
                DatatypeClass::Array {
                    dims,
                    permutation,
                    base: Box::new(base),
                }
            }
            _ => {
                // Class 11: bit 0 says the two parts are of one type, which is all libhdf5
                // makes; the base type follows.
                undefined(0x01, "complex bit field")?;
                if bits & 0x01 == 0 {
                    return Err(d.bad_value(bits_at, "complex bit field", u64::from(bits)));
                }
                let base_at = d.addr();
                let base = Datatype::decode_nested(d, depth.saturating_add(1))?;
                if !matches!(base.class, DatatypeClass::FloatingPoint(_))
                    || u64::from(base.size).checked_mul(2) != Some(u64::from(size))
                {
                    return Err(d.invalid(
                        base_at,
                        format!(
                            "complex numbers of {size} bytes with parts of {} ({} bytes)",
                            base.class.name(),
                            base.size
                        ),
                    ));
                }
                DatatypeClass::Complex {
                    base: Box::new(base),
                }
            }
        };
        Ok(Datatype {
            version,
            size,
            class,
        })
    }

    /// Encode a Datatype message body.
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        let unencodable = |reason: String| Error::Unencodable {
            structure: STRUCTURE,
            reason,
        };
        let v = self.version.number();
        let count = |n: usize, what: &str| {
            u32::try_from(n)
                .ok()
                .filter(|&n| n <= 0xffff)
                .ok_or_else(|| unencodable(format!("{n} {what} do not fit the bit field")))
        };
        let be = |o: ByteOrder| u32::from(o == ByteOrder::BigEndian);
        let (class, bits) = match &self.class {
            DatatypeClass::FixedPoint(f) => (
                0u8,
                be(f.byte_order)
                    | u32::from(f.low_padding) << 1
                    | u32::from(f.high_padding) << 2
                    | u32::from(f.signed) << 3,
            ),
            DatatypeClass::FloatingPoint(f) => {
                let mut bits = u32::from(f.sign_location) << 8;
                match f.byte_order {
                    FloatByteOrder::LittleEndian => {}
                    FloatByteOrder::BigEndian => bits |= 0x01,
                    FloatByteOrder::Vax => {
                        if v < 3 {
                            return Err(unencodable(
                                "VAX byte order needs datatype version 3 or later".into(),
                            ));
                        }
                        bits |= 0x41;
                    }
                }
                bits |= u32::from(f.low_padding) << 1
                    | u32::from(f.high_padding) << 2
                    | u32::from(f.internal_padding) << 3;
                bits |= match f.normalization {
                    Normalization::None => 0,
                    Normalization::MsbSet => 0x10,
                    Normalization::Implied => 0x20,
                };
                (1u8, bits)
            }
            DatatypeClass::Time { byte_order, .. } => (2, be(*byte_order)),
            DatatypeClass::String(t) => (3, string_bits(*t)),
            DatatypeClass::Bitfield(b) => (
                4,
                be(b.byte_order) | u32::from(b.low_padding) << 1 | u32::from(b.high_padding) << 2,
            ),
            DatatypeClass::Opaque { tag } => {
                if tag.len() > 0xf8 || !tag.len().is_multiple_of(8) {
                    return Err(unencodable(format!(
                        "an opaque tag field of {} bytes (a multiple of 8 up to 248)",
                        tag.len()
                    )));
                }
                (5, u32::try_from(tag.len()).unwrap_or(0))
            }
            DatatypeClass::Compound(m) => (6, count(m.len(), "compound members")?),
            DatatypeClass::Reference { flags } => (7, u32::from(*flags)),
            DatatypeClass::Enum { names, .. } => (8, count(names.len(), "enumeration members")?),
            DatatypeClass::VarLen { kind, .. } => match kind {
                VarLenKind::Sequence => (9, 0),
                VarLenKind::String(t) => (9, 1 | string_bits(*t) << 4),
            },
            DatatypeClass::Array { .. } => (10, 0),
            DatatypeClass::Complex { .. } => (11, 1),
        };
        e.u8((v << 4) | class);
        let [b0, b1, b2, _] = bits.to_le_bytes();
        e.bytes(&[b0, b1, b2]);
        e.u32(self.size);
        let padded_names = v < 3;
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
            DatatypeClass::Time { bit_precision, .. } => e.u16(*bit_precision),
            DatatypeClass::String(_) | DatatypeClass::Reference { .. } => {}
            DatatypeClass::Bitfield(b) => {
                e.u16(b.bit_offset);
                e.u16(b.bit_precision);
            }
            DatatypeClass::Opaque { tag } => e.bytes(tag),
            DatatypeClass::Compound(members) => {
                for m in members {
                    put_name(e, &m.name, padded_names);
                    if v < 3 {
                        e.u32(m.offset);
                    } else {
                        e.uint(
                            u64::from(m.offset),
                            offset_width(self.size),
                            "member offset",
                        )?;
                    }
                    if v == 1 {
                        let a = &m.array_v1;
                        e.u8(a.rank);
                        e.bytes(&[0; 3]);
                        e.u32(a.permutation);
                        e.bytes(&[0; 4]);
                        for dim in a.dims {
                            e.u32(dim);
                        }
                    }
                    m.datatype.encode(e)?;
                }
            }
            DatatypeClass::Enum {
                base,
                names,
                values,
            } => {
                base.encode(e)?;
                for n in names {
                    put_name(e, n, padded_names);
                }
                e.bytes(values);
            }
            DatatypeClass::VarLen { base, .. } | DatatypeClass::Complex { base } => {
                base.encode(e)?
            }
            DatatypeClass::Array {
                dims,
                permutation,
                base,
            } => {
                let rank = u8::try_from(dims.len())
                    .map_err(|_| unencodable(format!("an array of rank {}", dims.len())))?;
                e.u8(rank);
                // Version 1 (HDF5 1.4's arrays) has version 2's layout.
                if v < 3 {
                    e.bytes(&[0; 3]);
                }
                for &dim in dims {
                    e.u32(dim);
                }
                if v < 3 {
                    if permutation.len() != dims.len() {
                        return Err(unencodable(
                            "a version 1 or 2 array needs one permutation index per dimension"
                                .into(),
                        ));
                    }
                    for &p in permutation {
                        e.u32(p);
                    }
                }
                base.encode(e)?;
            }
        }
        Ok(())
    }

    /// The body's encoded length.
    pub fn encoded_len(&self) -> usize {
        let name_len = |n: &[u8]| {
            let len = n.len().saturating_add(1);
            if self.version.number() < 3 {
                len.next_multiple_of(8)
            } else {
                len
            }
        };
        let props = match &self.class {
            DatatypeClass::FixedPoint(_) | DatatypeClass::Bitfield(_) => 4,
            DatatypeClass::FloatingPoint(_) => 12,
            DatatypeClass::Time { .. } => 2,
            DatatypeClass::String(_) | DatatypeClass::Reference { .. } => 0,
            DatatypeClass::Opaque { tag } => tag.len(),
            DatatypeClass::Compound(members) => members
                .iter()
                .map(|m| {
                    let offset = match self.version.number() {
                        1 => 4 + 28,
                        2 => 4,
                        _ => usize::from(offset_width(self.size)),
                    };
                    name_len(&m.name)
                        .saturating_add(offset)
                        .saturating_add(m.datatype.encoded_len())
                })
                .fold(0usize, usize::saturating_add),
            DatatypeClass::Enum {
                base,
                names,
                values,
            } => names
                .iter()
                .map(|n| name_len(n))
                .fold(base.encoded_len(), usize::saturating_add)
                .saturating_add(values.len()),
            DatatypeClass::VarLen { base, .. } | DatatypeClass::Complex { base } => {
                base.encoded_len()
            }
            DatatypeClass::Array {
                dims,
                permutation,
                base,
            } => {
                let reserved = if self.version.number() < 3 { 3 } else { 0 };
                1usize
                    .saturating_add(reserved)
                    .saturating_add(dims.len().saturating_mul(4))
                    .saturating_add(permutation.len().saturating_mul(4))
                    .saturating_add(base.encoded_len())
            }
        };
        8usize.saturating_add(props)
    }
}

/// The floating-point class's bit field and properties.
fn decode_float(
    d: &mut Decoder<'_>,
    bits: u32,
    bits_at: crate::Addr,
    props_at: crate::Addr,
    size_bits: u64,
    version_number: u8,
) -> Result<DatatypeClass> {
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
    Ok(DatatypeClass::FloatingPoint(FloatingPoint {
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
    }))
}

/// Padding (bits 0-3) and character set (bits 4-7) of a string.
fn string_type(d: &Decoder<'_>, bits_at: crate::Addr, bits: u32) -> Result<StringType> {
    let padding = match bits & 0x0f {
        0 => StringPadding::NullTerminate,
        1 => StringPadding::NullPad,
        2 => StringPadding::SpacePad,
        p => return Err(d.bad_value(bits_at, "string padding", u64::from(p))),
    };
    let charset = match (bits >> 4) & 0x0f {
        0 => CharSet::Ascii,
        1 => CharSet::Utf8,
        c => return Err(d.bad_value(bits_at, "character set", u64::from(c))),
    };
    Ok(StringType { padding, charset })
}

fn string_bits(t: StringType) -> u32 {
    let padding = match t.padding {
        StringPadding::NullTerminate => 0,
        StringPadding::NullPad => 1,
        StringPadding::SpacePad => 2,
    };
    let charset = match t.charset {
        CharSet::Ascii => 0,
        CharSet::Utf8 => 1,
    };
    padding | charset << 4
}

/// A NUL-terminated name, then (versions 1 and 2) NULs up to a multiple of 8 bytes.
fn name(d: &mut Decoder<'_>, padded: bool) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        match d.u8()? {
            0 => break,
            b => out.push(b),
        }
    }
    if padded {
        let len = out.len().saturating_add(1);
        d.skip(len.next_multiple_of(8).saturating_sub(len))?;
    }
    Ok(out)
}

fn put_name(e: &mut Encoder<'_>, name: &[u8], padded: bool) {
    e.bytes(name);
    let len = name.len().saturating_add(1);
    let total = if padded { len.next_multiple_of(8) } else { len };
    for _ in 0..total.saturating_sub(name.len()) {
        e.u8(0);
    }
}

/// Bytes a version 3 compound member offset takes: as few as hold the compound's size.
fn offset_width(size: u32) -> u8 {
    let bits = 32u32.saturating_sub(size.leading_zeros());
    // floor(log2(size)) / 8 + 1, for size > 0.
    u8::try_from((bits.saturating_sub(1) / 8).saturating_add(1)).unwrap_or(4)
}

/// Bytes a compound member takes: its type's size, times its version 1 array dims.
fn member_extent(t: &Datatype, a: &MemberArrayV1) -> u64 {
    a.dims
        .iter()
        .take(usize::from(a.rank))
        .fold(u64::from(t.size), |n, &d| n.saturating_mul(u64::from(d)))
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
    fn float_layouts_are_told_apart_by_their_fields() {
        let layout = |t: &Datatype| match &t.class {
            DatatypeClass::FloatingPoint(f) => f.layout(t.size),
            _ => panic!("not a float"),
        };
        for size in [2, 4, 8] {
            for order in [LE, BE] {
                assert_eq!(
                    layout(&Datatype::float(size, order).unwrap()),
                    Some(FloatLayout::Ieee)
                );
            }
        }
        let bf = Datatype::bfloat16(BE);
        assert_eq!(layout(&bf), Some(FloatLayout::BFloat16));
        // bfloat16's fields: sign 15, exponent 7..15, mantissa 0..7, bias 127, as libhdf5 2.0
        // and h5py's `set_fields(15, 7, 8, 0, 7)` + `set_ebias(127)` make them.
        let DatatypeClass::FloatingPoint(f) = &bf.class else {
            panic!()
        };
        assert_eq!(
            (f.sign_location, f.exponent_location, f.exponent_size),
            (15, 7, 8)
        );
        assert_eq!(
            (f.mantissa_location, f.mantissa_size, f.exponent_bias),
            (0, 7, 127)
        );
        assert_eq!(decode(&encode(&bf)).unwrap(), bf);
        // One field off and the layout is unknown.
        for change in [
            |f: &mut FloatingPoint| f.exponent_bias = 128,
            |f: &mut FloatingPoint| f.bit_precision = 15,
            |f: &mut FloatingPoint| f.normalization = Normalization::MsbSet,
            |f: &mut FloatingPoint| f.mantissa_size = 6,
        ] {
            let mut t = Datatype::bfloat16(LE);
            if let DatatypeClass::FloatingPoint(f) = &mut t.class {
                change(f);
            }
            assert_eq!(layout(&t), None);
        }
        // A bfloat16 layout claimed by a 4-byte type is no layout either.
        let mut t = Datatype::bfloat16(LE);
        t.size = 4;
        assert_eq!(layout(&t), None);
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

    /// libhdf5 2.0's `H5T_COMPLEX_IEEE_F64LE`, as `H5Tencode` gives it (its 2-byte prefix
    /// dropped): version 5, class 11, homogeneous, 16 bytes, then the base float64 message.
    #[rustfmt::skip]
    const COMPLEX_F64LE: [u8; 28] = [
        0x5b, 0x01, 0x00, 0x00,  16, 0, 0, 0,                     // v5 class 11, bits, size 16
        0x11, 0x20, 0x3f, 0x00,   8, 0, 0, 0,                     // base: v1 float, size 8
        0x00, 0x00, 0x40, 0x00, 0x34, 0x0b, 0x00, 0x34,           // offset, precision, locations
        0xff, 0x03, 0x00, 0x00,                                   // exponent bias 1023
    ];

    #[test]
    fn decode_complex_as_libhdf5_2_encodes_it() {
        let dt = decode(&COMPLEX_F64LE).unwrap();
        assert_eq!(dt.version, DatatypeVersion::V5);
        assert_eq!(dt.size, 16);
        let DatatypeClass::Complex { base } = &dt.class else {
            panic!("{dt:?}");
        };
        assert_eq!(**base, Datatype::float(8, LE).unwrap());
        assert_eq!(encode(&dt), COMPLEX_F64LE);
        assert_eq!(dt.encoded_len(), COMPLEX_F64LE.len());
        for n in 0..COMPLEX_F64LE.len() {
            assert!(decode(&COMPLEX_F64LE[..n]).is_err(), "prefix {n}");
        }
    }

    #[test]
    fn rejects_complex_that_libhdf5_never_makes() {
        // Parts of two types (bit 0 clear).
        let mut mixed = COMPLEX_F64LE;
        mixed[1] = 0;
        assert!(matches!(decode(&mixed), Err(Error::BadValue { .. })));
        // A size that is not twice the part's.
        let mut size = COMPLEX_F64LE;
        size[4] = 24;
        assert!(decode(&size).is_err());
        // Integer parts.
        let mut ints = COMPLEX_F64LE;
        ints[8] = 0x10;
        assert!(decode(&ints).is_err());
    }

    fn u1() -> Datatype {
        Datatype::int(1, false, LE)
    }

    /// The other classes, byte for byte as libhdf5 lays them out (the module table).
    #[rustfmt::skip]
    fn other_classes() -> Vec<(&'static str, Vec<u8>, Datatype)> {
        let utf8_nullterm = StringType { padding: StringPadding::NullTerminate, charset: CharSet::Utf8 };
        vec![
            ("time", vec![0x12, 0x01, 0, 0, 4, 0, 0, 0, 0x20, 0x00], Datatype {
                version: DatatypeVersion::V1, size: 4,
                class: DatatypeClass::Time { byte_order: BE, bit_precision: 32 },
            }),
            ("|S5 null-padded ASCII", vec![0x13, 0x01, 0, 0, 5, 0, 0, 0], Datatype {
                version: DatatypeVersion::V1, size: 5,
                class: DatatypeClass::String(StringType { padding: StringPadding::NullPad, charset: CharSet::Ascii }),
            }),
            ("bitfield b16", vec![0x14, 0x00, 0, 0, 2, 0, 0, 0, 0, 0, 16, 0], Datatype {
                version: DatatypeVersion::V1, size: 2,
                class: DatatypeClass::Bitfield(Bitfield {
                    byte_order: LE, low_padding: false, high_padding: false, bit_offset: 0, bit_precision: 16,
                }),
            }),
            ("opaque V3 tagged", vec![0x15, 0x08, 0, 0, 3, 0, 0, 0, b'b', b'l', b'o', b'b', 0, 0, 0, 0], Datatype {
                version: DatatypeVersion::V1, size: 3,
                class: DatatypeClass::Opaque { tag: b"blob\0\0\0\0".to_vec() },
            }),
            ("object reference", vec![0x17, 0x00, 0, 0, 8, 0, 0, 0], Datatype {
                version: DatatypeVersion::V1, size: 8,
                class: DatatypeClass::Reference { flags: 0 },
            }),
            ("vlen UTF-8 string (h5py str)", vec![
                0x19, 0x01, 0x01, 0x00, 16, 0, 0, 0, // v1 vlen: string, null-terminated, UTF-8
                0x10, 0x00, 0, 0, 1, 0, 0, 0, 0, 0, 8, 0, // base: u1
            ], Datatype {
                version: DatatypeVersion::V1, size: 16,
                class: DatatypeClass::VarLen { kind: VarLenKind::String(utf8_nullterm), base: Box::new(u1()) },
            }),
            ("vlen sequence of u1", vec![
                0x19, 0x00, 0x00, 0x00, 16, 0, 0, 0,
                0x10, 0x00, 0, 0, 1, 0, 0, 0, 0, 0, 8, 0,
            ], Datatype {
                version: DatatypeVersion::V1, size: 16,
                class: DatatypeClass::VarLen { kind: VarLenKind::Sequence, base: Box::new(u1()) },
            }),
            ("enum v1 (h5py bool)", vec![
                0x18, 0x02, 0x00, 0x00, 1, 0, 0, 0, // v1 enum, 2 members, size 1
                0x10, 0x08, 0, 0, 1, 0, 0, 0, 0, 0, 8, 0, // base <i1
                b'F', b'A', b'L', b'S', b'E', 0, 0, 0, // names padded to 8
                b'T', b'R', b'U', b'E', 0, 0, 0, 0,
                0, 1, // values
            ], Datatype {
                version: DatatypeVersion::V1, size: 1,
                class: DatatypeClass::Enum {
                    base: Box::new(Datatype::int(1, true, LE)),
                    names: vec![b"FALSE".to_vec(), b"TRUE".to_vec()],
                    values: vec![0, 1],
                },
            }),
            ("enum v3, names unpadded", vec![
                0x38, 0x02, 0x00, 0x00, 1, 0, 0, 0,
                0x10, 0x08, 0, 0, 1, 0, 0, 0, 0, 0, 8, 0,
                b'F', b'A', b'L', b'S', b'E', 0, b'T', b'R', b'U', b'E', 0,
                0, 1,
            ], Datatype {
                version: DatatypeVersion::V3, size: 1,
                class: DatatypeClass::Enum {
                    base: Box::new(Datatype::int(1, true, LE)),
                    names: vec![b"FALSE".to_vec(), b"TRUE".to_vec()],
                    values: vec![0, 1],
                },
            }),
            ("array v2 [2,3] of u1", vec![
                0x2a, 0, 0, 0, 6, 0, 0, 0,
                2, 0, 0, 0,          // rank 2, reserved
                2, 0, 0, 0, 3, 0, 0, 0, // dims
                0, 0, 0, 0, 1, 0, 0, 0, // permutation
                0x10, 0x00, 0, 0, 1, 0, 0, 0, 0, 0, 8, 0,
            ], Datatype {
                version: DatatypeVersion::V2, size: 6,
                class: DatatypeClass::Array { dims: vec![2, 3], permutation: vec![0, 1], base: Box::new(u1()) },
            }),
            // HDF5 1.4 wrote arrays at version 1 (PyTables 1.x files): version 2's layout.
            ("array v1 [2,3] of u1", vec![
                0x1a, 0, 0, 0, 6, 0, 0, 0,
                2, 0, 0, 0,          // rank 2, reserved
                2, 0, 0, 0, 3, 0, 0, 0, // dims
                0, 0, 0, 0, 1, 0, 0, 0, // permutation
                0x10, 0x00, 0, 0, 1, 0, 0, 0, 0, 0, 8, 0,
            ], Datatype {
                version: DatatypeVersion::V1, size: 6,
                class: DatatypeClass::Array { dims: vec![2, 3], permutation: vec![0, 1], base: Box::new(u1()) },
            }),
            ("array v3 [4] of u1", vec![
                0x3a, 0, 0, 0, 4, 0, 0, 0,
                1, 4, 0, 0, 0,
                0x10, 0x00, 0, 0, 1, 0, 0, 0, 0, 0, 8, 0,
            ], Datatype {
                version: DatatypeVersion::V3, size: 4,
                class: DatatypeClass::Array { dims: vec![4], permutation: vec![], base: Box::new(u1()) },
            }),
            ("compound v1 {a: u1 @0, b: u1 [2] @1}", vec![
                0x16, 0x02, 0x00, 0x00, 3, 0, 0, 0,
                b'a', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // name, offset 0
                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // rank 0, reserved, permutation, reserved
                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // dims
                0x10, 0x00, 0, 0, 1, 0, 0, 0, 0, 0, 8, 0,
                b'b', 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, // name, offset 1
                1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // rank 1
                2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                0x10, 0x00, 0, 0, 1, 0, 0, 0, 0, 0, 8, 0,
            ], Datatype {
                version: DatatypeVersion::V1, size: 3,
                class: DatatypeClass::Compound(vec![
                    CompoundMember { name: b"a".to_vec(), offset: 0, array_v1: MemberArrayV1::default(), datatype: u1() },
                    CompoundMember {
                        name: b"b".to_vec(), offset: 1,
                        array_v1: MemberArrayV1 { rank: 1, permutation: 0, dims: [2, 0, 0, 0] },
                        datatype: u1(),
                    },
                ]),
            }),
            ("compound v3, one-byte offsets", vec![
                0x36, 0x02, 0x00, 0x00, 9, 0, 0, 0,
                b'x', 0, 0, // name, offset 0 in one byte
                0x10, 0x00, 0, 0, 1, 0, 0, 0, 0, 0, 8, 0,
                b'y', b'y', 0, 1,
                0x11, 0x20, 0x3f, 0x00, 8, 0, 0, 0, 0, 0, 0x40, 0, 0x34, 0x0b, 0, 0x34, 0xff, 0x03, 0, 0,
            ], Datatype {
                version: DatatypeVersion::V3, size: 9,
                class: DatatypeClass::Compound(vec![
                    CompoundMember { name: b"x".to_vec(), offset: 0, array_v1: MemberArrayV1::default(), datatype: u1() },
                    CompoundMember {
                        name: b"yy".to_vec(), offset: 1, array_v1: MemberArrayV1::default(),
                        datatype: Datatype::float(8, LE).unwrap(),
                    },
                ]),
            }),
        ]
    }

    #[test]
    fn decode_every_other_class() {
        for (name, bytes, expected) in other_classes() {
            let dt = decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(dt, expected, "{name}");
            assert_eq!(encode(&dt), bytes, "{name}");
            assert_eq!(dt.class.name(), expected.class.name());
            for n in 0..bytes.len() {
                assert!(decode(&bytes[..n]).is_err(), "{name} prefix {n}");
            }
        }
    }

    #[test]
    fn offset_widths_follow_the_compound_size() {
        assert_eq!(offset_width(1), 1);
        assert_eq!(offset_width(255), 1);
        assert_eq!(offset_width(256), 2);
        assert_eq!(offset_width(65_535), 2);
        assert_eq!(offset_width(65_536), 3);
        assert_eq!(offset_width(u32::MAX), 4);
    }

    #[test]
    fn rejects_inconsistent_nested_types() {
        let table = other_classes();
        let find = |n: &str| {
            table
                .iter()
                .find(|(name, ..)| name.starts_with(n))
                .unwrap()
                .1
                .clone()
        };
        // An array whose dims do not make its size.
        let mut b = find("array v3");
        b[4] = 5;
        assert!(matches!(decode(&b), Err(Error::Invalid { .. })));
        // An array at version 1.
        let mut b = find("array v3");
        b[0] = 0x1a;
        assert!(matches!(decode(&b), Err(Error::BadVersion { .. })));
        // A compound member past the element's end.
        let mut b = find("compound v3");
        b[4] = 8;
        assert!(matches!(decode(&b), Err(Error::Invalid { .. })));
        // An enumeration over a float.
        let mut b = find("enum v3");
        b[8] = 0x11;
        assert!(decode(&b).is_err());
        // A member count far beyond the bytes: refused before any allocation.
        let mut b = find("compound v3");
        b[1] = 0xff;
        b[2] = 0xff;
        assert!(matches!(decode(&b), Err(Error::Truncated { .. })));
        // Undefined bits, padding and character sets.
        let mut b = find("|S5");
        b[1] = 0x03;
        assert!(matches!(decode(&b), Err(Error::BadValue { .. })));
        let mut b = find("|S5");
        b[1] = 0x21;
        assert!(matches!(decode(&b), Err(Error::BadValue { .. })));
        let mut b = find("vlen sequence");
        b[1] = 0x10; // padding bits on a sequence
        assert!(matches!(decode(&b), Err(Error::BadValue { .. })));
        let mut b = find("opaque");
        b[1] = 0x05; // a tag field not a multiple of 8
        assert!(matches!(decode(&b), Err(Error::BadValue { .. })));
        let mut b = find("object reference");
        b[1] = 0x02; // a revised reference type before version 4
        assert!(matches!(decode(&b), Err(Error::BadValue { .. })));
        b[0] = 0x47;
        assert!(decode(&b).is_ok());
    }

    #[test]
    fn nesting_is_bounded() {
        // Arrays of arrays of ... of u1, each level a version 3 array of one element.
        let depth = MAX_NESTING + 4;
        let mut bytes = Vec::new();
        for _ in 0..depth {
            bytes.extend_from_slice(&[0x3a, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0]);
        }
        bytes.extend_from_slice(&[0x10, 0x00, 0, 0, 1, 0, 0, 0, 0, 0, 8, 0]);
        assert!(matches!(decode(&bytes), Err(Error::Invalid { .. })));
        // Just inside the bound it decodes and re-encodes.
        let inside = &bytes[13 * (depth - MAX_NESTING + 1)..];
        let dt = decode(inside).unwrap();
        assert_eq!(encode(&dt), inside);
    }

    mod roundtrip {
        use super::*;
        use proptest::prelude::*;

        fn atomic() -> impl Strategy<Value = Datatype> {
            prop_oneof![
                (
                    prop_oneof![Just(1u8), Just(2), Just(4), Just(8)],
                    any::<bool>(),
                    any::<bool>()
                )
                    .prop_map(|(n, s, be)| Datatype::int(
                        n,
                        s,
                        if be { BE } else { LE }
                    )),
                (prop_oneof![Just(4u8), Just(8)], any::<bool>())
                    .prop_map(|(n, be)| Datatype::float(n, if be { BE } else { LE }).unwrap()),
                (1u32..64, 0u8..3, 0u8..2).prop_map(|(size, p, c)| Datatype {
                    version: DatatypeVersion::V1,
                    size,
                    class: DatatypeClass::String(StringType {
                        padding: [
                            StringPadding::NullTerminate,
                            StringPadding::NullPad,
                            StringPadding::SpacePad
                        ][usize::from(p)],
                        charset: if c == 0 {
                            CharSet::Ascii
                        } else {
                            CharSet::Utf8
                        },
                    }),
                }),
                (1u32..16, proptest::collection::vec(1u8..=255, 0..20)).prop_map(|(size, tag)| {
                    let mut tag = tag;
                    tag.resize(tag.len().next_multiple_of(8), 0);
                    Datatype {
                        version: DatatypeVersion::V1,
                        size,
                        class: DatatypeClass::Opaque { tag },
                    }
                }),
            ]
        }

        fn name() -> impl Strategy<Value = Vec<u8>> {
            proptest::collection::vec(1u8..=255, 0..12)
        }

        fn with_version(mut t: Datatype, v: DatatypeVersion) -> Datatype {
            t.version = v;
            t
        }

        fn datatype() -> impl Strategy<Value = Datatype> {
            atomic().prop_recursive(3, 24, 4, |inner| {
                let version = prop_oneof![
                    Just(DatatypeVersion::V1),
                    Just(DatatypeVersion::V2),
                    Just(DatatypeVersion::V3)
                ];
                prop_oneof![
                    (
                        version.clone(),
                        proptest::collection::vec((name(), inner.clone()), 0..4)
                    )
                        .prop_map(|(v, ms)| {
                            let mut offset = 0u32;
                            let members: Vec<CompoundMember> = ms
                                .into_iter()
                                .map(|(name, datatype)| {
                                    let m = CompoundMember {
                                        name,
                                        offset,
                                        array_v1: MemberArrayV1::default(),
                                        datatype,
                                    };
                                    offset += m.datatype.size;
                                    m
                                })
                                .collect();
                            Datatype {
                                version: v,
                                size: offset.max(1),
                                class: DatatypeClass::Compound(members),
                            }
                        }),
                    (version.clone(), inner.clone(), any::<bool>()).prop_map(
                        |(v, base, string)| Datatype {
                            version: v,
                            size: 16,
                            class: DatatypeClass::VarLen {
                                kind: if string {
                                    VarLenKind::String(StringType {
                                        padding: StringPadding::NullTerminate,
                                        charset: CharSet::Utf8,
                                    })
                                } else {
                                    VarLenKind::Sequence
                                },
                                base: Box::new(base),
                            },
                        }
                    ),
                    (
                        prop_oneof![
                            Just(DatatypeVersion::V1),
                            Just(DatatypeVersion::V2),
                            Just(DatatypeVersion::V3)
                        ],
                        inner.clone(),
                        proptest::collection::vec(1u32..5, 1..4)
                    )
                        .prop_map(|(v, base, dims)| Datatype {
                            version: v,
                            size: dims.iter().product::<u32>() * base.size,
                            class: DatatypeClass::Array {
                                permutation: if v != DatatypeVersion::V3 {
                                    (0..dims.len() as u32).collect()
                                } else {
                                    vec![]
                                },
                                dims,
                                base: Box::new(base),
                            },
                        }),
                    (
                        version,
                        proptest::collection::vec(name(), 0..5),
                        any::<bool>()
                    )
                        .prop_map(|(v, names, signed)| {
                            let values = (0..names.len() as u8).collect();
                            Datatype {
                                version: v,
                                size: 1,
                                class: DatatypeClass::Enum {
                                    base: Box::new(with_version(
                                        Datatype::int(1, signed, LE),
                                        DatatypeVersion::V1,
                                    )),
                                    names,
                                    values,
                                },
                            }
                        }),
                ]
            })
        }

        proptest! {
            #[test]
            fn every_class_roundtrips(dt in datatype()) {
                let bytes = encode(&dt);
                prop_assert_eq!(decode(&bytes).unwrap(), dt.clone());
                // A v1 object header pads messages: padding after the type is ignored.
                let mut padded = bytes.clone();
                padded.resize(bytes.len().next_multiple_of(8), 0);
                prop_assert_eq!(decode(&padded).unwrap(), dt);
            }

            #[test]
            fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..96)) {
                let _ = decode(&bytes);
            }
        }
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
