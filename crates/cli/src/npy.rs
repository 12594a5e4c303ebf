//! The `.npy` format (numpy's `NEP 1`), versions 1.0 to 3.0, for the element types h5chunk
//! handles: a magic string, a version, a header length, a Python dict literal with `descr`,
//! `fortran_order` and `shape`, padded to a multiple of 64 bytes, then the raw values.
//!
//! | bytes | field |
//! |---|---|
//! | 6 | `\x93NUMPY` |
//! | 1, 1 | major, minor version |
//! | 2 (v1) or 4 (v2, v3) | header length, little-endian |
//! | header length | `{'descr': '<i4', 'fortran_order': False, 'shape': (3, 4), }`, spaces, `\n` |
//! | rest | the values in C order |

/// The magic string every `.npy` file starts with.
pub const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// A parsed `.npy` file.
#[derive(Debug)]
pub struct Npy<'a> {
    /// numpy's type string (`<i4`, `>f8`, `|u1`).
    pub descr: String,
    /// The array's shape.
    pub shape: Vec<u64>,
    /// The values, in `descr`'s byte order, C order (the CLI streams them instead, after
    /// [`read_header`]).
    #[cfg_attr(not(test), allow(dead_code))]
    pub data: &'a [u8],
}

/// The `.npy` header of a C-order array of `descr` values (`descr` a type name such as `<i4`,
/// or a structured type's field list, `[...]`).
pub fn encode_header(descr: &str, shape: &[u64]) -> Vec<u8> {
    let descr = if descr.starts_with('[') {
        descr.to_owned()
    } else {
        format!("'{}'", descr.trim_matches('\''))
    };
    let dims = match shape {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut dict = format!("{{'descr': {descr}, 'fortran_order': False, 'shape': {dims}, }}");
    // Magic (6), version (2), length (2), the dict and a newline: a multiple of 64.
    // A `String` is far shorter than `usize::MAX`, so none of these sizes saturates or fails.
    let unpadded = dict.len().saturating_add(10 + 1);
    let padded = unpadded.checked_next_multiple_of(64).unwrap_or(unpadded);
    dict.push_str(&" ".repeat(padded.saturating_sub(unpadded)));
    dict.push('\n');
    let mut out = Vec::with_capacity(dict.len().saturating_add(10));
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    // The padded header of a version 1.0 file is at most a few hundred bytes for any rank
    // h5chunk writes (ranks up to 32).
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

/// Parse a `.npy` file.
pub fn decode(bytes: &[u8]) -> Result<Npy<'_>, String> {
    let rest = bytes
        .strip_prefix(MAGIC)
        .ok_or("not a .npy file (no \\x93NUMPY magic)")?;
    let (major, rest) = match rest {
        [major, _minor, rest @ ..] => (*major, rest),
        _ => return Err("truncated .npy header".into()),
    };
    let (len, rest) = match (major, rest) {
        (1, [a, b, rest @ ..]) => (usize::from(u16::from_le_bytes([*a, *b])), rest),
        (2 | 3, [a, b, c, d, rest @ ..]) => (u32::from_le_bytes([*a, *b, *c, *d]) as usize, rest),
        (1..=3, _) => return Err("truncated .npy header".into()),
        _ => return Err(format!(".npy version {major} is not supported")),
    };
    if rest.len() < len {
        return Err("truncated .npy header".into());
    }
    let (header, data) = rest.split_at(len);
    let header = std::str::from_utf8(header).map_err(|_| ".npy header is not text")?;
    let descr = field(header, "descr")?
        .trim_matches(|c| c == '\'' || c == '"')
        .to_owned();
    match field(header, "fortran_order")? {
        "False" => {}
        "True" => {
            return Err(".npy in Fortran order is not supported (write it in C order)".into());
        }
        other => return Err(format!(".npy fortran_order {other:?}")),
    }
    let shape_text = field(header, "shape")?;
    let shape = shape_text
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('L').parse::<u64>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| format!(".npy shape {shape_text:?}"))?;
    Ok(Npy { descr, shape, data })
}

/// The header of a `.npy` stream whose magic string was read already: numpy's type string
/// and the shape; the reader is left at the first value. The header length is a `u16` or a
/// `u32` of the file: at most 4 GiB are asked for, and only as they arrive (a short stream
/// ends the read). The third value: the bytes read (after the magic string).
pub fn read_header(r: &mut impl std::io::Read) -> Result<(String, Vec<u64>, u64), String> {
    use std::io::Read as _;
    let io = |e: std::io::Error| format!("reading the .npy header: {e}");
    let mut version = [0u8; 2];
    r.read_exact(&mut version).map_err(io)?;
    let len = match version[0] {
        1 => {
            let mut b = [0u8; 2];
            r.read_exact(&mut b).map_err(io)?;
            u64::from(u16::from_le_bytes(b))
        }
        2 | 3 => {
            let mut b = [0u8; 4];
            r.read_exact(&mut b).map_err(io)?;
            u64::from(u32::from_le_bytes(b))
        }
        major => return Err(format!(".npy version {major} is not supported")),
    };
    let mut header = Vec::new();
    r.take(len).read_to_end(&mut header).map_err(io)?;
    if header.len() as u64 != len {
        return Err("truncated .npy header".into());
    }
    // The same parse as a whole file's, on the header alone.
    let mut whole = Vec::with_capacity(header.len().saturating_add(12));
    whole.extend_from_slice(MAGIC);
    whole.extend_from_slice(&version);
    match version[0] {
        1 => whole.extend_from_slice(&(len as u16).to_le_bytes()),
        _ => whole.extend_from_slice(&(len as u32).to_le_bytes()),
    }
    whole.extend_from_slice(&header);
    let n = decode(&whole)?;
    let read = (whole.len() as u64).saturating_sub(MAGIC.len() as u64);
    Ok((n.descr, n.shape, read))
}

/// The value text of `'key': value` in a dict literal (a tuple value up to its `)`).
fn field<'h>(header: &'h str, key: &str) -> Result<&'h str, String> {
    let missing = || format!(".npy header has no {key:?}: {header:?}");
    // The text after the first `'key'` (or, failing that, the first `"key"`).
    let (_, after) = header
        .split_once(&format!("'{key}'"))
        .or_else(|| header.split_once(&format!("\"{key}\"")))
        .ok_or_else(missing)?;
    let after = after.trim_start();
    let after = after.strip_prefix(':').ok_or_else(missing)?.trim_start();
    let value = if after.starts_with('(') {
        // A tuple, up to and including its `)`.
        after.find(')').and_then(|i| after.get(..=i))
    } else {
        after.find([',', '}']).and_then(|i| after.get(..i))
    }
    .ok_or_else(missing)?;
    Ok(value.trim())
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unwrap_used
)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_header() {
        for shape in [vec![], vec![5], vec![2, 3, 4]] {
            let mut bytes = encode_header("<i4", &shape);
            assert_eq!(bytes.len() % 64, 0);
            bytes.extend_from_slice(&[1, 2, 3, 4]);
            let n = decode(&bytes).unwrap();
            assert_eq!(
                (n.descr.as_str(), n.shape, n.data),
                ("<i4", shape, &[1, 2, 3, 4][..])
            );
        }
    }

    #[test]
    fn decode_numpy_written_header() {
        let mut bytes = MAGIC.to_vec();
        let dict = b"{'descr': '>f8', 'fortran_order': False, 'shape': (2, 3), }      \n";
        bytes.extend_from_slice(&[2, 0]);
        bytes.extend_from_slice(&(dict.len() as u32).to_le_bytes());
        bytes.extend_from_slice(dict);
        let n = decode(&bytes).unwrap();
        assert_eq!((n.descr.as_str(), n.shape), (">f8", vec![2, 3]));
    }

    #[test]
    fn rejects_truncation_and_fortran_order() {
        let bytes = encode_header("<u2", &[3]);
        for i in 0..bytes.len() {
            assert!(decode(&bytes[..i]).is_err(), "prefix {i}");
        }
        let mut fortran = encode_header("<u2", &[3]);
        let at = fortran.windows(5).position(|w| w == b"False").unwrap();
        fortran[at..at + 5].copy_from_slice(b"True ");
        assert!(decode(&fortran).unwrap_err().contains("Fortran"));
    }
}
