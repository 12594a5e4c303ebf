//! Elements as text, for `cat --text`/`--csv` and `view`: numbers as numpy prints them (floats
//! in their shortest round-trip form, `nan`, `inf`), strings quoted, enumerations by name,
//! compounds as their fields, arrays in brackets, complex numbers as `1+2j`, references and
//! opaque bytes in hex.
//!
//! Values come as `Dataset::read_slice_raw` gives them: numbers (and enumerations over them)
//! little-endian in the dataset's width, strings resolved by `Dataset::decode_strings`, every
//! other class as stored, decoded here from its `Datatype` (byte order included).

use h5chunk::Dataset;
use h5chunk::types::{ByteOrder, Datatype, DatatypeClass, TypeClass, VarLenKind};

/// Nesting deeper than this is shown as `...` (decoded types nest at most as deep as the
/// format allows, but a listing has no use for more).
const MAX_DEPTH: usize = 16;

/// Each element of `raw` (C order) as text. `quote`: strings in double quotes (text mode),
/// else bare (CSV quotes them itself).
pub fn elements(d: &Dataset, raw: &[u8], quote: bool) -> h5chunk::Result<Vec<String>> {
    let desc = d.dtype();
    let size = desc.size.max(1);
    match desc.class {
        TypeClass::FixedString | TypeClass::VarLenString => Ok(d
            .decode_strings(raw)?
            .iter()
            .map(|s| if quote { quoted(s) } else { s.clone() })
            .collect()),
        TypeClass::Int | TypeClass::Uint | TypeClass::Float | TypeClass::BFloat16 => {
            // Little-endian in the dataset's width, whatever the file's order.
            let t = d.datatype();
            Ok(raw
                .chunks_exact(size)
                .map(|e| match &t.class {
                    DatatypeClass::Enum { .. } => enum_name(t, e, ByteOrder::LittleEndian),
                    _ => number(desc.class, e, ByteOrder::LittleEndian),
                })
                .collect())
        }
        TypeClass::Other => Ok(raw
            .chunks_exact(size)
            .map(|e| value(d.datatype(), e, 0))
            .collect()),
    }
}

/// The names of a compound type's fields, in stored order, if the dataset's type is one.
pub fn field_names(d: &Dataset) -> Option<Vec<String>> {
    match &d.datatype().class {
        DatatypeClass::Compound(members) => Some(
            members
                .iter()
                .map(|m| String::from_utf8_lossy(&m.name).into_owned())
                .collect(),
        ),
        _ => None,
    }
}

/// Each field of each compound element of `raw`, as text (`fields` per element).
pub fn compound_fields(d: &Dataset, raw: &[u8], quote: bool) -> Vec<Vec<String>> {
    let t = d.datatype();
    let size = usize::try_from(t.size).unwrap_or(0).max(1);
    let DatatypeClass::Compound(members) = &t.class else {
        return Vec::new();
    };
    raw.chunks_exact(size)
        .map(|e| {
            members
                .iter()
                .map(|m| {
                    let v = member_bytes(e, m.offset, &m.datatype)
                        .map_or_else(|| "?".to_owned(), |b| value(&m.datatype, b, 1));
                    if quote { v } else { unquote(&v) }
                })
                .collect()
        })
        .collect()
}

/// A string in double quotes, with `"`, `\` and control characters escaped.
pub fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len().saturating_add(2));
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A quoted string's text again (for CSV, which quotes in its own way).
fn unquote(v: &str) -> String {
    match v.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        Some(inner) => inner.replace("\\\"", "\"").replace("\\\\", "\\"),
        None => v.to_owned(),
    }
}

/// A CSV field: quoted when it holds a comma, a quote, a line break or edge spaces.
pub fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n', '\r']) || v.starts_with(' ') || v.ends_with(' ') {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_owned()
    }
}

/// A float as numpy prints it: shortest round-trip digits, exponent form for very large or
/// small magnitudes, `nan` and `inf`.
pub fn float(v: f64, single: bool) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let a = v.abs();
    let exp = a != 0.0 && !(1e-4..1e16).contains(&a);
    // `f32`'s shortest digits for single precision, so 0.1f32 prints as 0.1.
    let s = match (single, exp) {
        (true, true) => format!("{:e}", v as f32),
        (true, false) => format!("{}", v as f32),
        (false, true) => format!("{v:e}"),
        (false, false) => format!("{v}"),
    };
    // `1.0`, not `1`: a float looks like one.
    if s.contains(['.', 'e']) {
        s
    } else {
        format!("{s}.0")
    }
}

/// An integer or float element of `e.len()` bytes in `order`.
fn number(class: TypeClass, e: &[u8], order: ByteOrder) -> String {
    let mut b = [0u8; 8];
    let n = e.len().min(8);
    if let (Some(dst), Some(src)) = (b.get_mut(..n), e.get(..n)) {
        dst.copy_from_slice(src);
        if order == ByteOrder::BigEndian {
            dst.reverse();
        }
    }
    let u = u64::from_le_bytes(b);
    match (class, n) {
        (TypeClass::Float, 2) => float(f64::from(h5chunk::f16::from_bits(u as u16).to_f32()), true),
        (TypeClass::Float, 4) => float(f64::from(f32::from_bits(u as u32)), true),
        (TypeClass::Float, 8) => float(f64::from_bits(u), false),
        (TypeClass::BFloat16, 2) => {
            float(f64::from(h5chunk::bf16::from_bits(u as u16).to_f32()), true)
        }
        (TypeClass::Int, 1) => (u as u8 as i8).to_string(),
        (TypeClass::Int, 2) => (u as u16 as i16).to_string(),
        (TypeClass::Int, 4) => (u as u32 as i32).to_string(),
        (TypeClass::Int, 8) => (u as i64).to_string(),
        (TypeClass::Uint, 1 | 2 | 4 | 8) => u.to_string(),
        _ => hex(e),
    }
}

/// An enumeration's element by name (its number when no name has it).
fn enum_name(t: &Datatype, e: &[u8], order: ByteOrder) -> String {
    if let DatatypeClass::Enum {
        base,
        names,
        values,
    } = &t.class
    {
        let size = usize::try_from(base.size).unwrap_or(0).max(1);
        // Names' values are stored in the base type's order; compare in the same order.
        let stored_order = byte_order(base).unwrap_or(ByteOrder::LittleEndian);
        let mut mine = e.to_vec();
        if order != stored_order {
            mine.reverse();
        }
        for (name, v) in names.iter().zip(values.chunks_exact(size)) {
            if v == mine.as_slice() {
                return String::from_utf8_lossy(name).into_owned();
            }
        }
        let class = match &base.class {
            DatatypeClass::FixedPoint(f) if f.signed => TypeClass::Int,
            _ => TypeClass::Uint,
        };
        return number(class, e, order);
    }
    hex(e)
}

fn byte_order(t: &Datatype) -> Option<ByteOrder> {
    match &t.class {
        DatatypeClass::FixedPoint(f) => Some(f.byte_order),
        _ => None,
    }
}

/// The bytes of a member at `offset` of an element.
fn member_bytes<'a>(e: &'a [u8], offset: u32, t: &Datatype) -> Option<&'a [u8]> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(t.size).ok()?)?;
    e.get(start..end)
}

/// One element of type `t`, as stored.
fn value(t: &Datatype, e: &[u8], depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "...".into();
    }
    let next = depth.saturating_add(1);
    match &t.class {
        DatatypeClass::FixedPoint(f)
            if f.bit_offset == 0 && u32::from(f.bit_precision) == t.size.saturating_mul(8) =>
        {
            let class = if f.signed {
                TypeClass::Int
            } else {
                TypeClass::Uint
            };
            number(class, e, f.byte_order)
        }
        DatatypeClass::FloatingPoint(_) => match h5chunk::TypeDesc::from_datatype(t) {
            Ok(desc) => {
                let mut le = e.to_vec();
                desc.to_from_le(&mut le);
                number(TypeClass::Float, &le, ByteOrder::LittleEndian)
            }
            Err(_) => hex(e),
        },
        DatatypeClass::Enum { base, .. } => {
            enum_name(t, e, byte_order(base).unwrap_or(ByteOrder::LittleEndian))
        }
        DatatypeClass::String(st) => {
            let end = match st.padding {
                h5chunk::types::StringPadding::NullTerminate => {
                    e.iter().position(|&b| b == 0).unwrap_or(e.len())
                }
                _ => e
                    .iter()
                    .rposition(|&b| b != 0 && b != b' ')
                    .map_or(0, |i| i.saturating_add(1)),
            };
            quoted(&String::from_utf8_lossy(e.get(..end).unwrap_or_default()))
        }
        DatatypeClass::Compound(members) => {
            let fields: Vec<String> = members
                .iter()
                .map(|m| {
                    member_bytes(e, m.offset, &m.datatype)
                        .map_or_else(|| "?".to_owned(), |b| value(&m.datatype, b, next))
                })
                .collect();
            format!("({})", fields.join(", "))
        }
        DatatypeClass::Array { base, .. } => {
            let size = usize::try_from(base.size).unwrap_or(0).max(1);
            let items: Vec<String> = e.chunks_exact(size).map(|b| value(base, b, next)).collect();
            format!("[{}]", items.join(", "))
        }
        DatatypeClass::Complex { base } => {
            let size = usize::try_from(base.size).unwrap_or(0).max(1);
            match (e.get(..size), e.get(size..)) {
                (Some(re), Some(im)) => {
                    let im = value(base, im, next);
                    let sign = if im.starts_with('-') { "" } else { "+" };
                    format!("{}{sign}{im}j", value(base, re, next))
                }
                _ => hex(e),
            }
        }
        DatatypeClass::VarLen {
            kind: VarLenKind::String(_),
            ..
        } => "<variable-length string>".into(),
        DatatypeClass::VarLen { .. } => "<variable-length sequence>".into(),
        DatatypeClass::Reference { .. } => format!("<reference {}>", hex(e)),
        _ => hex(e),
    }
}

/// Bytes in hex, as stored: `0x0a1b`.
fn hex(e: &[u8]) -> String {
    let mut s = String::from("0x");
    for b in e {
        s.push_str(&format!("{b:02x}"));
    }
    s
}
