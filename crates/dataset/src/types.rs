//! Element types: the Rust number types a dataset can be read into or written from, the
//! runtime description of a dataset's element type ([`TypeDesc`]: numbers, strings, and any
//! other class as raw bytes), and the stored description of any HDF5 type ([`Datatype`], every
//! class: what [`Dataset::datatype`](crate::Dataset::datatype) and an
//! [`Attr`](crate::Attr) of a string, compound, enumeration or array type report).

pub use h5chunk_format::message::{
    ByteOrder, CharSet, CompoundMember, Datatype, DatatypeClass, DatatypeVersion, MemberArrayV1,
    StringPadding, StringType, VarLenKind,
};
use h5chunk_format::message::{FloatByteOrder, FloatLayout};

use crate::error::{Error, Result};

/// What kind of element: a number h5chunk reads as a Rust number, a string, or another class
/// read as raw bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TypeClass {
    /// Signed integer.
    Int,
    /// Unsigned integer.
    Uint,
    /// IEEE 754 floating point.
    Float,
    /// bfloat16: 2 bytes, 1 sign, 8 exponent (bias 127) and 7 mantissa bits, the top half of
    /// an IEEE binary32 (libhdf5 2.0's `H5T_FLOAT_BFLOAT16LE`/`BE`, ml_dtypes' `bfloat16`):
    /// read and written as `f32`/`f64` (converted) or as the `half` crate's
    /// [`bf16`](crate::bf16).
    BFloat16,
    /// Fixed-length strings of `size` bytes, padding as the [`Datatype`] says (h5py's `S<n>`,
    /// netCDF's `char` arrays): read with [`Dataset::read_strings`](crate::Dataset::read_strings).
    FixedString,
    /// Variable-length strings (h5py's `str`, netCDF's `string`): each element a reference
    /// into the file's global heap, read with
    /// [`Dataset::read_strings`](crate::Dataset::read_strings).
    VarLenString,
    /// Any other class (compound, enumeration, array, opaque, bitfield, reference, time,
    /// variable-length sequence, numbers with padding bits or of other sizes): elements of
    /// `size` bytes as stored, read with [`Dataset::read_raw`](crate::Dataset::read_raw);
    /// [`Dataset::datatype`](crate::Dataset::datatype) describes them. Variable-length
    /// sequences of numbers also read with
    /// [`Dataset::read_sequences`](crate::Dataset::read_sequences).
    Other,
}

/// A dataset's element type: class, size in bytes and byte order on disk (little-endian for
/// anything but numbers: their bytes are read as stored).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TypeDesc {
    /// Integer or float.
    pub class: TypeClass,
    /// Bytes per element (1, 2, 4 or 8).
    pub size: usize,
    /// Byte order in the file.
    pub order: ByteOrder,
}

impl TypeDesc {
    /// The description of a Datatype message, if it is one h5chunk handles: integers of 1, 2,
    /// 4 or 8 bytes, IEEE floats of 2, 4 or 8 bytes and bfloat16, in either byte order, with
    /// every bit significant. A float of any other bit layout is
    /// [`Error::UnsupportedFloat`], naming its fields.
    pub fn from_datatype(t: &Datatype) -> Result<TypeDesc> {
        let size = t.size as usize;
        let desc = match &t.class {
            DatatypeClass::FixedPoint(f) => {
                if f.bit_offset != 0 || size.checked_mul(8) != Some(usize::from(f.bit_precision)) {
                    return Err(Error::Unsupported("integer types with padding bits"));
                }
                TypeDesc {
                    class: if f.signed {
                        TypeClass::Int
                    } else {
                        TypeClass::Uint
                    },
                    size,
                    order: f.byte_order,
                }
            }
            DatatypeClass::FloatingPoint(f) => {
                let order = match f.byte_order {
                    FloatByteOrder::LittleEndian => ByteOrder::LittleEndian,
                    FloatByteOrder::BigEndian => ByteOrder::BigEndian,
                    FloatByteOrder::Vax => return Err(Error::Unsupported("VAX floating point")),
                };
                let class = match f.layout(t.size) {
                    Some(FloatLayout::Ieee) => TypeClass::Float,
                    Some(FloatLayout::BFloat16) => TypeClass::BFloat16,
                    None => {
                        return Err(Error::UnsupportedFloat {
                            layout: format!(
                                "of {} bytes: sign bit {}, exponent {} bits at bit {} (bias {}), \
                                 mantissa {} bits at bit {} ({:?} normalization), {} significant \
                                 bits at offset {}",
                                t.size,
                                f.sign_location,
                                f.exponent_size,
                                f.exponent_location,
                                f.exponent_bias,
                                f.mantissa_size,
                                f.mantissa_location,
                                f.normalization,
                                f.bit_precision,
                                f.bit_offset
                            ),
                        });
                    }
                };
                TypeDesc { class, size, order }
            }
            other => {
                return Err(Error::Unsupported(match other.name() {
                    "time" => "time element types",
                    "string" => "fixed-length string element types",
                    "bitfield" => "bitfield element types",
                    "opaque" => "opaque element types",
                    "compound" => "compound element types",
                    "reference" => "reference element types",
                    "enumerated" => "enumerated element types",
                    "variable-length" => "variable-length element types",
                    "complex" => "complex element types",
                    _ => "array element types",
                }));
            }
        };
        if !matches!(size, 1 | 2 | 4 | 8) || (desc.class == TypeClass::Float && size == 1) {
            return Err(Error::Unsupported(
                "element sizes other than 1, 2, 4 and 8 bytes",
            ));
        }
        Ok(desc)
    }

    /// The description of any Datatype message: numbers as [`from_datatype`] reads them,
    /// enumerations as their integer base type, strings, and every other class (or a number of a form h5chunk does not convert) as
    /// [`TypeClass::Other`] elements of the type's size.
    ///
    /// [`from_datatype`]: TypeDesc::from_datatype
    pub fn of(t: &Datatype) -> Result<TypeDesc> {
        if let Ok(number) = TypeDesc::from_datatype(t) {
            return Ok(number);
        }
        // An enumeration reads as its integer values (h5py's `bool` is one over int8; netCDF's
        // enums too), its names in `Datatype`.
        if let DatatypeClass::Enum { base, .. } = &t.class
            && let Ok(number) = TypeDesc::from_datatype(base)
            && u32::try_from(number.size).ok() == Some(t.size)
        {
            return Ok(number);
        }
        let size = usize::try_from(t.size).unwrap_or(usize::MAX);
        if size == 0 {
            return Err(Error::Unsupported("element types of zero bytes"));
        }
        let class = match &t.class {
            DatatypeClass::String(_) => TypeClass::FixedString,
            DatatypeClass::VarLen {
                kind: VarLenKind::String(_),
                ..
            } => TypeClass::VarLenString,
            _ => TypeClass::Other,
        };
        Ok(TypeDesc {
            class,
            size,
            order: ByteOrder::LittleEndian,
        })
    }

    /// Whether it is a number type (integer or float) that reads as a Rust number.
    pub fn is_number(self) -> bool {
        matches!(
            self.class,
            TypeClass::Int | TypeClass::Uint | TypeClass::Float | TypeClass::BFloat16
        )
    }

    /// The Datatype message h5py writes for this type; `None` for a type h5chunk does not
    /// create datasets of (anything but numbers, for now).
    pub fn to_datatype(self) -> Option<Datatype> {
        let size = u8::try_from(self.size).ok()?;
        match self.class {
            TypeClass::Int | TypeClass::Uint => Some(Datatype::int(
                size,
                self.class == TypeClass::Int,
                self.order,
            )),
            TypeClass::Float => Datatype::float(size, self.order),
            TypeClass::BFloat16 if size == 2 => Some(Datatype::bfloat16(self.order)),
            TypeClass::BFloat16 => None,
            TypeClass::FixedString | TypeClass::VarLenString | TypeClass::Other => None,
        }
    }

    /// numpy's name for it (`<i4`, `>f8`, `|u1`: one-byte types have no byte order). numpy
    /// has no bfloat16: it is `|V2`, its elements' bytes (ml_dtypes' `bfloat16` views them).
    pub fn numpy(self) -> String {
        let o = match self.order {
            _ if self.size == 1 => '|',
            ByteOrder::LittleEndian => '<',
            ByteOrder::BigEndian => '>',
        };
        let c = match self.class {
            TypeClass::Int => 'i',
            TypeClass::Uint => 'u',
            TypeClass::Float => 'f',
            TypeClass::BFloat16 => return format!("|V{}", self.size),
            TypeClass::FixedString => return format!("|S{}", self.size),
            TypeClass::VarLenString => return "|O".to_owned(),
            TypeClass::Other => return format!("|V{}", self.size),
        };
        format!("{o}{c}{}", self.size)
    }

    /// Parse numpy's name (`i4`, `<u2`, `>f8`; no order prefix means little-endian).
    pub fn from_numpy(s: &str) -> Result<TypeDesc> {
        let (order, rest) = match s.as_bytes().first() {
            Some(b'<') | Some(b'=') | Some(b'|') => (ByteOrder::LittleEndian, &s[1..]),
            Some(b'>') => (ByteOrder::BigEndian, &s[1..]),
            _ => (ByteOrder::LittleEndian, s),
        };
        let bad = || Error::arg("element type", format!("unknown element type {s:?}"));
        let class = match rest.as_bytes().first() {
            Some(b'i') => TypeClass::Int,
            Some(b'u') => TypeClass::Uint,
            Some(b'f') => TypeClass::Float,
            _ => return Err(bad()),
        };
        let size: usize = rest[1..].parse().map_err(|_| bad())?;
        let valid = match class {
            TypeClass::Float => matches!(size, 4 | 8),
            _ => matches!(size, 1 | 2 | 4 | 8),
        };
        if !valid {
            return Err(bad());
        }
        Ok(TypeDesc { class, size, order })
    }

    /// Swap `buf`'s elements between this type's byte order and little-endian.
    /// Whether elements are stored as their little-endian bytes ([`to_from_le`] changes
    /// nothing).
    ///
    /// [`to_from_le`]: TypeDesc::to_from_le
    pub(crate) fn stored_le(self) -> bool {
        self.order != ByteOrder::BigEndian || self.size <= 1 || !self.is_number()
    }

    pub fn to_from_le(self, buf: &mut [u8]) {
        if self.order == ByteOrder::BigEndian && self.size > 1 && self.is_number() {
            for e in buf.chunks_exact_mut(self.size) {
                e.reverse();
            }
        }
    }
}

/// The type of variable-length UTF-8 strings (h5py's `str`, `h5py.string_dtype()`), for
/// [`File::new_dataset_with_type`](crate::File::new_dataset_with_type).
pub fn vlen_utf8() -> Datatype {
    Datatype {
        version: DatatypeVersion::V1,
        size: 16,
        class: DatatypeClass::VarLen {
            kind: VarLenKind::String(StringType {
                padding: StringPadding::NullTerminate,
                charset: CharSet::Utf8,
            }),
            base: Box::new(Datatype::int(1, false, ByteOrder::LittleEndian)),
        },
    }
}

/// The type of variable-length sequences of `base` elements (h5py's `h5py.vlen_dtype(base)`,
/// ragged arrays), for [`File::new_dataset_with_type`](crate::File::new_dataset_with_type);
/// written and read with [`Dataset::write_sequences`](crate::Dataset::write_sequences) and
/// [`Dataset::read_sequences`](crate::Dataset::read_sequences). `base` is a number type
/// (`T::DESC.to_datatype()` of an [`H5Type`], or a big-endian one).
pub fn vlen_sequence(base: Datatype) -> Datatype {
    Datatype {
        version: DatatypeVersion::V1,
        size: 16,
        class: DatatypeClass::VarLen {
            kind: VarLenKind::Sequence,
            base: Box::new(base),
        },
    }
}

/// A compound type of `size` bytes whose members are `(name, byte offset, type)` (numpy's
/// structured dtype with explicit offsets, `np.dtype({'names': ..., 'offsets': ...,
/// 'itemsize': size})`).
pub fn compound(size: u32, members: &[(&str, u32, Datatype)]) -> Datatype {
    Datatype {
        version: DatatypeVersion::V1,
        size,
        class: DatatypeClass::Compound(
            members
                .iter()
                .map(|(name, offset, t)| CompoundMember {
                    name: name.as_bytes().to_vec(),
                    offset: *offset,
                    array_v1: MemberArrayV1::default(),
                    datatype: t.clone(),
                })
                .collect(),
        ),
    }
}

/// Complex numbers of IEEE float parts of `part_size` bytes (4: numpy's `complex64`, 8:
/// `complex128`; 2 for half-precision parts) in `order`: libhdf5 2.0's `H5T_COMPLEX_IEEE_*`,
/// which h5py 3.16 writes when given `dtype=h5py.h5t.COMPLEX_IEEE_F64LE`. `None` for another
/// part size. Elements are read and written as their stored bytes (`read_raw`), real part
/// first.
pub fn complex(part_size: u8, order: ByteOrder) -> Option<Datatype> {
    let base = Datatype::float(part_size, order)?;
    Some(Datatype {
        version: DatatypeVersion::V5,
        size: base.size.checked_mul(2)?,
        class: DatatypeClass::Complex {
            base: Box::new(base),
        },
    })
}

/// The type of object references (h5py's `ref_dtype`, libhdf5's `H5T_STD_REF_OBJ`): an
/// object header's address, 8 bytes. Written with
/// [`Dataset::write_object_refs`](crate::Dataset::write_object_refs) or an attribute's
/// `Attributes::set_object_refs`, read with [`Dataset::read_object_refs`](crate::Dataset::read_object_refs).
pub fn object_reference() -> Datatype {
    Datatype {
        version: DatatypeVersion::V1,
        size: 8,
        class: DatatypeClass::Reference { flags: 0 },
    }
}

/// h5py's `bool`: an enumeration of `FALSE` (0) and `TRUE` (1) over a signed byte, what h5py
/// writes for numpy's `bool` and reads back as `bool`.
pub fn h5py_bool() -> Datatype {
    Datatype {
        version: DatatypeVersion::V1,
        size: 1,
        class: DatatypeClass::Enum {
            base: Box::new(Datatype::int(1, true, ByteOrder::LittleEndian)),
            names: vec![b"FALSE".to_vec(), b"TRUE".to_vec()],
            values: vec![0, 1],
        },
    }
}

/// A fixed-length string type of `size` bytes, NUL-padded ASCII (numpy's `S<size>`, what
/// h5py writes for `bytes` arrays).
pub fn fixed_ascii(size: u32) -> Datatype {
    Datatype {
        version: DatatypeVersion::V1,
        size,
        class: DatatypeClass::String(StringType {
            padding: StringPadding::NullPad,
            charset: CharSet::Ascii,
        }),
    }
}

/// numpy's description of elements of type `t` as stored, as the Python literal a `.npy`
/// header's `descr` holds: a quoted name for numbers (`'<i4'`, `'>f8'`; an enumeration as its
/// integers), fixed-length strings (`'|S3'`) and opaque, bitfield, reference and time elements
/// (`'|V4'`); for a compound, the list of `(name, type[, shape])` fields in offset order, with
/// `('', '|Vn')` padding wherever members leave a gap. `None` for variable-length types (numpy
/// holds them as Python objects) and anything numpy cannot lay out as stored.
pub fn numpy_descr(t: &Datatype) -> Option<String> {
    numpy_descr_at(t, 0)
}

fn numpy_descr_at(t: &Datatype, depth: usize) -> Option<String> {
    // As deep as a decoded type can nest, no further.
    if depth > 32 {
        return None;
    }
    let size = usize::try_from(t.size).ok()?;
    if let Ok(number) = TypeDesc::of(t)
        && number.is_number()
    {
        return Some(format!("'{}'", number.numpy()));
    }
    match &t.class {
        DatatypeClass::String(_) => Some(format!("'|S{size}'")),
        // numpy's complex64/complex128 (`<c8`, `>c16`): two IEEE floats of the part's order.
        DatatypeClass::Complex { base } => match TypeDesc::of(base) {
            Ok(part) if part.class == TypeClass::Float && part.size >= 4 => {
                let order = if part.order == ByteOrder::BigEndian {
                    '>'
                } else {
                    '<'
                };
                Some(format!("'{order}c{size}'"))
            }
            _ => None,
        },
        DatatypeClass::Opaque { .. }
        | DatatypeClass::Bitfield(_)
        | DatatypeClass::Reference { .. }
        | DatatypeClass::Time { .. } => Some(format!("'|V{size}'")),
        DatatypeClass::Compound(members) => {
            let mut sorted: Vec<&CompoundMember> = members.iter().collect();
            sorted.sort_by_key(|m| m.offset);
            let mut fields = Vec::new();
            let mut at = 0usize;
            for (i, m) in sorted.into_iter().enumerate() {
                let offset = usize::try_from(m.offset).ok()?;
                // Overlapping members have no numpy layout.
                let gap = offset.checked_sub(at)?;
                if gap > 0 {
                    fields.push(format!("('', '|V{gap}')"));
                }
                let name = String::from_utf8_lossy(&m.name);
                let name = if name.is_empty() {
                    format!("f{i}")
                } else {
                    name.replace('\\', "\\\\").replace('\'', "\\'")
                };
                let next = depth.saturating_add(1);
                fields.push(match &m.datatype.class {
                    DatatypeClass::Array { dims, base, .. } => {
                        let shape: String = dims.iter().map(|d| format!("{d},")).collect();
                        format!("('{name}', {}, ({shape}))", numpy_descr_at(base, next)?)
                    }
                    _ => format!("('{name}', {})", numpy_descr_at(&m.datatype, next)?),
                });
                at = offset.checked_add(usize::try_from(m.datatype.size).ok()?)?;
            }
            let tail = size.checked_sub(at)?;
            if tail > 0 {
                fields.push(format!("('', '|V{tail}')"));
            }
            Some(format!("[{}]", fields.join(", ")))
        }
        _ => None,
    }
}

/// Object references of `t`, packed in `raw`: each the referenced object header's address.
pub(crate) fn decode_refs(t: &Datatype, raw: &[u8], what: &str) -> Result<Vec<u64>> {
    let size = usize::try_from(t.size).unwrap_or(0);
    match t.class {
        // Type 0 in the low bits: an object reference (1 is a region reference).
        DatatypeClass::Reference { flags } if flags & 0x0f == 0 && (1..=8).contains(&size) => {
            Ok(raw
                .chunks_exact(size)
                .map(|b| {
                    let mut le = [0u8; 8];
                    le.iter_mut().zip(b).for_each(|(d, s)| *d = *s);
                    u64::from_le_bytes(le)
                })
                .collect())
        }
        // Region references (type 1: an object and a selection in it) and the references of
        // libhdf5 1.12's H5R_ref_t (types 2-4, version 4 datatypes) are kept as their bytes
        // (`read_raw`); resolving them is not built.
        DatatypeClass::Reference { flags } if flags & 0x0f == 1 => {
            Err(Error::Unsupported("dataset region references"))
        }
        DatatypeClass::Reference { flags } if (2..=4).contains(&(flags & 0x0f)) => Err(
            Error::Unsupported("references of libhdf5 1.12 and later (H5R_ref_t)"),
        ),
        _ => Err(Error::arg(
            "element type",
            format!(
                "{what} holds {} elements, not object references",
                t.class.name()
            ),
        )),
    }
}

/// A Rust number type that maps to an HDF5 integer or float type.
pub trait H5Type: Copy + Default + Send + Sync + 'static {
    /// Its class and size (in native little-endian order).
    const DESC: TypeDesc;
    /// Its little-endian bytes.
    fn write_le(self, out: &mut [u8]);
    /// From little-endian bytes.
    fn read_le(b: &[u8]) -> Self;
    /// The values' memory as bytes, when every bit pattern is a value (then a read fills
    /// them straight from the file, with no copy in between). `None` (the default): values
    /// are built one by one with [`read_le`](Self::read_le).
    fn bytes_mut(_values: &mut [Self]) -> Option<&mut [u8]> {
        None
    }
    /// The values' memory as bytes (see [`bytes_mut`](Self::bytes_mut)): a write takes them
    /// as they are, with no copy to little-endian bytes first.
    fn bytes(_values: &[Self]) -> Option<&[u8]> {
        None
    }
}

macro_rules! h5type {
    ($($t:ty => $class:ident;)*) => {$(
        impl H5Type for $t {
            const DESC: TypeDesc = TypeDesc {
                class: TypeClass::$class,
                size: std::mem::size_of::<$t>(),
                order: ByteOrder::LittleEndian,
            };
            fn write_le(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            fn read_le(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
            fn bytes_mut(values: &mut [Self]) -> Option<&mut [u8]> {
                Some(zerocopy::IntoBytes::as_mut_bytes(values))
            }
            fn bytes(values: &[Self]) -> Option<&[u8]> {
                Some(zerocopy::IntoBytes::as_bytes(values))
            }
        }
    )*};
}

h5type! {
    i8 => Int; i16 => Int; i32 => Int; i64 => Int;
    u8 => Uint; u16 => Uint; u32 => Uint; u64 => Uint;
    f32 => Float; f64 => Float;
}

/// The two 16-bit floats of the `half` crate, stored little-endian in two bytes.
macro_rules! half_type {
    ($($(#[$doc:meta])* $t:ty => $class:ident;)*) => {$(
        $(#[$doc])*
        impl H5Type for $t {
            const DESC: TypeDesc = TypeDesc {
                class: TypeClass::$class,
                size: 2,
                order: ByteOrder::LittleEndian,
            };
            fn write_le(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            fn read_le(b: &[u8]) -> Self {
                let mut two = [0u8; 2];
                two.copy_from_slice(b.get(..2).unwrap_or(&[0, 0]));
                <$t>::from_le_bytes(two)
            }
        }
    )*};
}

half_type! {
    /// Half-precision floats (h5py's and numpy's `float16`, IEEE binary16) as the `half` crate's
    /// `f16`, which h5chunk re-exports as [`f16`](crate::f16).
    half::f16 => Float;
    /// bfloat16 (libhdf5 2.0's `H5T_FLOAT_BFLOAT16LE`, ml_dtypes' `bfloat16`) as the `half`
    /// crate's `bf16`, which h5chunk re-exports as [`bf16`](crate::bf16).
    half::bf16 => BFloat16;
}

/// Little-endian bytes of `values`.
pub fn to_le_bytes<T: H5Type>(values: &[T]) -> Vec<u8> {
    // For the crate's types `DESC.size` is the type's own size, so the product is the byte
    // length of `values`, which is in memory.
    let mut out = vec![0u8; values.len().saturating_mul(T::DESC.size)];
    for (v, o) in values.iter().zip(out.chunks_exact_mut(T::DESC.size)) {
        v.write_le(o);
    }
    out
}

/// Values from little-endian bytes.
pub fn from_le_bytes<T: H5Type>(bytes: &[u8]) -> Vec<T> {
    bytes.chunks_exact(T::DESC.size).map(T::read_le).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_names_roundtrip_through_datatypes() {
        for name in [
            "|i1", "|u1", "<i2", ">u2", "<i4", ">i8", "<u8", "<f4", ">f8",
        ] {
            let t = TypeDesc::from_numpy(name).unwrap();
            assert_eq!(t.numpy(), name);
            assert_eq!(
                TypeDesc::from_datatype(&t.to_datatype().unwrap()).unwrap(),
                t
            );
        }
        assert_eq!(TypeDesc::from_numpy("i4").unwrap(), i32::DESC);
        assert!(TypeDesc::from_numpy("<f1").is_err());
        assert!(TypeDesc::from_numpy("<c8").is_err());
    }

    #[test]
    fn byte_order_swap() {
        let t = TypeDesc::from_numpy(">i4").unwrap();
        let mut b = 0x01020304i32.to_be_bytes().to_vec();
        t.to_from_le(&mut b);
        assert_eq!(from_le_bytes::<i32>(&b), vec![0x01020304]);
    }
}
