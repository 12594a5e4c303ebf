//! The bounds-checked decoding cursor and the encoder, both aware of the superblock's size of
//! offsets and lengths.
//!
//! Every decoder in this crate reads through a [`Decoder`]: each read checks the remaining
//! length first and reports a [`Error::Truncated`] naming the structure and the file address
//! of the field, so no decoder indexes a slice directly. A [`Decoder`] knows the file address
//! of its first byte, so errors point into the file, not into a buffer.

use crate::addr::{Addr, all_ones};
use crate::checksum::lookup3;
use crate::error::{Error, Result};
use crate::sizes::Sizes;

/// A bounds-checked little-endian reader over one structure's bytes.
#[derive(Clone, Debug)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
    base: u64,
    sizes: Sizes,
    structure: &'static str,
}

impl<'a> Decoder<'a> {
    /// A decoder over `buf`, whose first byte is at file address `at`.
    pub fn new(buf: &'a [u8], at: Addr, sizes: Sizes, structure: &'static str) -> Self {
        Decoder {
            buf,
            pos: 0,
            base: at.get(),
            sizes,
            structure,
        }
    }

    /// The structure name errors carry.
    pub fn structure(&self) -> &'static str {
        self.structure
    }

    /// The same cursor, reporting errors under another structure name.
    pub fn with_structure(mut self, structure: &'static str) -> Self {
        self.structure = structure;
        self
    }

    /// The superblock's widths this decoder uses.
    pub fn sizes(&self) -> Sizes {
        self.sizes
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The file address of the next byte.
    #[inline]
    pub fn addr(&self) -> Addr {
        Addr(self.base.wrapping_add(self.pos as u64))
    }

    /// The file address of the first byte.
    pub fn start(&self) -> Addr {
        Addr(self.base)
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// Whether every byte has been consumed.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// All bytes of the buffer, consumed or not.
    pub fn buffer(&self) -> &'a [u8] {
        self.buf
    }

    /// The bytes not consumed yet, without consuming them.
    pub fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }

    fn truncated(&self, needed: usize) -> Error {
        Error::Truncated {
            structure: self.structure,
            at: self.addr(),
            needed: needed as u64,
            available: self.remaining() as u64,
        }
    }

    /// The next `n` bytes.
    #[inline]
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).ok_or_else(|| self.truncated(n))?;
        let out = self
            .buf
            .get(self.pos..end)
            .ok_or_else(|| self.truncated(n))?;
        self.pos = end;
        Ok(out)
    }

    /// The next `N` bytes as an array.
    #[inline]
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }

    /// Skip `n` bytes.
    pub fn skip(&mut self, n: usize) -> Result<()> {
        self.bytes(n).map(|_| ())
    }

    /// A decoder over the next `n` bytes, which this one skips.
    pub fn sub(&mut self, n: usize) -> Result<Decoder<'a>> {
        let at = self.addr();
        let buf = self.bytes(n)?;
        Ok(Decoder::new(buf, at, self.sizes, self.structure))
    }

    /// Read a `u8`.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    /// Read a little-endian `u16`.
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    /// Read a little-endian `u32`.
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    /// Read a little-endian `u64`.
    #[inline]
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// Read a little-endian unsigned integer of `width` bytes (1 to 8).
    pub fn uint(&mut self, width: u8) -> Result<u64> {
        if !(1..=8).contains(&width) {
            return Err(Error::BadValue {
                structure: self.structure,
                at: self.addr(),
                field: "integer width",
                value: u64::from(width),
            });
        }
        if width == 8 {
            return self.u64();
        }
        let raw = self.bytes(usize::from(width))?;
        let mut le = [0u8; 8];
        for (l, r) in le.iter_mut().zip(raw) {
            *l = *r;
        }
        Ok(u64::from_le_bytes(le))
    }

    /// Read an address field (size of offsets); the undefined address becomes `None`.
    #[inline]
    pub fn offset(&mut self) -> Result<Option<Addr>> {
        // Eight bytes (the common size) read directly: node decoding reads one per child.
        let v = match self.sizes.offsets() {
            8 => self.u64()?,
            w => self.uint(w)?,
        };
        Ok((v != self.sizes.undef_offset()).then_some(Addr(v)))
    }

    /// Read an address field that must be defined.
    #[inline]
    pub fn defined_offset(&mut self, field: &'static str) -> Result<Addr> {
        let at = self.addr();
        self.offset()?.ok_or_else(|| Error::Invalid {
            structure: self.structure,
            at,
            reason: format!("{field} is the undefined address"),
        })
    }

    /// Read a length field (size of lengths), as stored.
    pub fn length(&mut self) -> Result<u64> {
        self.uint(self.sizes.lengths())
    }

    /// Read a length field whose all-ones value means "undefined" or "unlimited".
    pub fn length_or_undef(&mut self) -> Result<Option<u64>> {
        let v = self.length()?;
        Ok((v != self.sizes.undef_length()).then_some(v))
    }

    /// Check that the next bytes are `signature` and consume them.
    pub fn signature(&mut self, signature: &'static [u8]) -> Result<()> {
        let at = self.addr();
        let found = self.bytes(signature.len())?;
        if found != signature {
            return Err(Error::BadSignature {
                structure: self.structure,
                at,
                expected: signature,
                found: found.to_vec(),
            });
        }
        Ok(())
    }

    /// Check that `count` items of `item_len` bytes each can still be read, and return `count`
    /// as a `usize`. Call this before sizing any allocation by a count read from the file.
    pub fn check_count(&self, count: u64, item_len: usize) -> Result<usize> {
        let total = usize::try_from(count)
            .ok()
            .and_then(|c| c.checked_mul(item_len).map(|t| (c, t)));
        match total {
            Some((c, t)) if t <= self.remaining() => Ok(c),
            _ => Err(Error::Truncated {
                structure: self.structure,
                at: self.addr(),
                needed: count.saturating_mul(item_len as u64),
                available: self.remaining() as u64,
            }),
        }
    }

    /// Verify the lookup3 checksum stored right after the first `covered` bytes of the
    /// buffer. Call it before decoding any field the checksum covers.
    pub fn verify_checksum(&self, covered: usize) -> Result<()> {
        verify_checksum(self.buf, covered, Addr(self.base), self.structure)
    }

    /// A [`Error::BadValue`] for `field` at file address `at`.
    pub fn bad_value(&self, at: Addr, field: &'static str, value: u64) -> Error {
        Error::BadValue {
            structure: self.structure,
            at,
            field,
            value,
        }
    }

    /// A [`Error::BadVersion`] at file address `at`.
    pub fn bad_version(&self, at: Addr, version: u8) -> Error {
        Error::BadVersion {
            structure: self.structure,
            at,
            version,
        }
    }

    /// A [`Error::Invalid`] at file address `at`.
    pub fn invalid(&self, at: Addr, reason: impl Into<String>) -> Error {
        Error::Invalid {
            structure: self.structure,
            at,
            reason: reason.into(),
        }
    }

    /// A [`Error::Unsupported`] at file address `at`.
    pub fn unsupported(&self, at: Addr, what: &'static str) -> Error {
        Error::Unsupported {
            structure: self.structure,
            at,
            what,
        }
    }
}

/// Verify the lookup3 checksum stored (u32 LE) right after the first `covered` bytes of `buf`,
/// whose first byte is at file address `at`.
pub fn verify_checksum(
    buf: &[u8],
    covered: usize,
    at: Addr,
    structure: &'static str,
) -> Result<()> {
    let end = covered.checked_add(4);
    let (data, stored) = match end.and_then(|e| buf.get(..e)) {
        Some(b) => b.split_at(covered),
        None => {
            return Err(Error::Truncated {
                structure,
                at: Addr(at.get().wrapping_add(buf.len() as u64)),
                needed: (covered as u64)
                    .saturating_add(4)
                    .saturating_sub(buf.len() as u64),
                available: 0,
            });
        }
    };
    let mut s = [0u8; 4];
    s.copy_from_slice(stored);
    let stored = u32::from_le_bytes(s);
    let computed = lookup3(data);
    if stored != computed {
        return Err(Error::ChecksumMismatch {
            structure,
            at: Addr(at.get().wrapping_add(covered as u64)),
            stored,
            computed,
        });
    }
    Ok(())
}

/// Run `encode`, which appends one value to a buffer, and store what it wrote into `out`,
/// which it must fill exactly: the in-place encoding of a value whose encoder only appends.
pub fn encode_exact(
    out: &mut [u8],
    structure: &'static str,
    encode: impl FnOnce(&mut Vec<u8>) -> Result<()>,
) -> Result<()> {
    let mut bytes = Vec::with_capacity(out.len());
    encode(&mut bytes)?;
    if bytes.len() != out.len() {
        return Err(Error::Unencodable {
            structure,
            reason: format!(
                "{} bytes encoded for a {}-byte field",
                bytes.len(),
                out.len()
            ),
        });
    }
    out.copy_from_slice(&bytes);
    Ok(())
}

/// A little-endian writer appending to a `Vec<u8>`, aware of the superblock's widths.
#[derive(Debug)]
pub struct Encoder<'a> {
    out: &'a mut Vec<u8>,
    start: usize,
    sizes: Sizes,
    structure: &'static str,
}

impl<'a> Encoder<'a> {
    /// An encoder appending to `out`; [`Encoder::position`] counts from `out`'s current end.
    pub fn new(out: &'a mut Vec<u8>, sizes: Sizes, structure: &'static str) -> Self {
        let start = out.len();
        Encoder {
            out,
            start,
            sizes,
            structure,
        }
    }

    /// The superblock's widths this encoder uses.
    pub fn sizes(&self) -> Sizes {
        self.sizes
    }

    /// Bytes written by this encoder so far.
    pub fn position(&self) -> usize {
        self.out.len().saturating_sub(self.start)
    }

    /// The bytes written by this encoder so far.
    pub fn written(&self) -> &[u8] {
        self.out.get(self.start..).unwrap_or_default()
    }

    /// Mutable access to the bytes written so far (for back-patching a size field).
    pub fn written_mut(&mut self) -> &mut [u8] {
        self.out.get_mut(self.start..).unwrap_or_default()
    }

    /// Append raw bytes.
    #[inline]
    pub fn bytes(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
    }

    /// Append `n` zero bytes.
    pub fn zeros(&mut self, n: usize) {
        self.out.resize(self.out.len().saturating_add(n), 0);
    }

    /// Append a `u8`.
    pub fn u8(&mut self, v: u8) {
        self.out.push(v);
    }

    /// Append a little-endian `u16`.
    pub fn u16(&mut self, v: u16) {
        self.bytes(&v.to_le_bytes());
    }

    /// Append a little-endian `u32`.
    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }

    /// Append a little-endian `u64`.
    #[inline]
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    /// Append `v` as a little-endian integer of `width` bytes (1 to 8); it must fit.
    pub fn uint(&mut self, v: u64, width: u8, field: &'static str) -> Result<()> {
        if !(1..=8).contains(&width) || (width < 8 && v > all_ones(width)) {
            return Err(Error::TooWide {
                structure: self.structure,
                field,
                value: v,
                width,
            });
        }
        let le = v.to_le_bytes();
        self.bytes(le.get(..usize::from(width)).unwrap_or(&le));
        Ok(())
    }

    /// Append an address field; `None` is the undefined address.
    #[inline]
    pub fn offset(&mut self, a: Option<Addr>, field: &'static str) -> Result<()> {
        let o = self.sizes.offsets();
        match a {
            Some(a) if a.get() >= self.sizes.undef_offset() => Err(Error::TooWide {
                structure: self.structure,
                field,
                value: a.get(),
                width: o,
            }),
            // Eight bytes (the common size) written directly: nodes write one per child.
            Some(a) if o == 8 => {
                self.u64(a.get());
                Ok(())
            }
            Some(a) => self.uint(a.get(), o, field),
            None => self.uint(self.sizes.undef_offset(), o, field),
        }
    }

    /// Append a length field.
    pub fn length(&mut self, v: u64, field: &'static str) -> Result<()> {
        self.uint(v, self.sizes.lengths(), field)
    }

    /// Append a length field whose `None` is the all-ones "undefined"/"unlimited" value.
    pub fn length_or_undef(&mut self, v: Option<u64>, field: &'static str) -> Result<()> {
        match v {
            Some(v) if v >= self.sizes.undef_length() => Err(Error::TooWide {
                structure: self.structure,
                field,
                value: v,
                width: self.sizes.lengths(),
            }),
            Some(v) => self.length(v, field),
            None => self.length(self.sizes.undef_length(), field),
        }
    }

    /// Append the lookup3 checksum of everything this encoder has written so far.
    pub fn checksum(&mut self) {
        let c = lookup3(self.written());
        self.u32(c);
    }

    /// Append the lookup3 checksum of the bytes written since `from` (an earlier
    /// [`Encoder::position`]).
    pub fn checksum_from(&mut self, from: usize) {
        let c = lookup3(self.written().get(from..).unwrap_or_default());
        self.u32(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S44: Sizes = Sizes::DEFAULT;

    #[test]
    fn reads_are_bounds_checked_and_name_the_address() {
        let buf = [1u8, 2, 3];
        let mut d = Decoder::new(&buf, Addr(0x100), S44, "test");
        assert_eq!(d.u16().unwrap(), 0x0201);
        match d.u32() {
            Err(Error::Truncated {
                at,
                needed,
                available,
                ..
            }) => {
                assert_eq!(at, Addr(0x102));
                assert_eq!((needed, available), (4, 1));
            }
            other => panic!("expected truncation, got {other:?}"),
        }
        // A failed read consumes nothing.
        assert_eq!(d.u8().unwrap(), 3);
    }

    #[test]
    fn undefined_address_is_none_at_every_width() {
        for w in [2u8, 4, 8] {
            let sizes = Sizes::new(w, w, Addr(0)).unwrap();
            let mut out = Vec::new();
            let mut e = Encoder::new(&mut out, sizes, "test");
            e.offset(None, "a").unwrap();
            e.offset(Some(Addr(0x30)), "b").unwrap();
            assert_eq!(out.len(), 2 * usize::from(w));
            let mut d = Decoder::new(&out, Addr(0), sizes, "test");
            assert_eq!(d.offset().unwrap(), None);
            assert_eq!(d.offset().unwrap(), Some(Addr(0x30)));
        }
    }

    #[test]
    fn encoder_rejects_values_too_wide() {
        let sizes = Sizes::new(2, 2, Addr(0)).unwrap();
        let mut out = Vec::new();
        let mut e = Encoder::new(&mut out, sizes, "test");
        assert!(matches!(
            e.offset(Some(Addr(0x1_0000)), "addr"),
            Err(Error::TooWide { .. })
        ));
        assert!(e.uint(256, 1, "x").is_err());
        assert!(e.uint(255, 1, "x").is_ok());
    }

    #[test]
    fn check_count_refuses_huge_counts_before_allocation() {
        let buf = [0u8; 16];
        let d = Decoder::new(&buf, Addr(0), S44, "test");
        assert_eq!(d.check_count(2, 8).unwrap(), 2);
        assert!(d.check_count(3, 8).is_err());
        assert!(d.check_count(u64::MAX, 8).is_err());
    }

    #[test]
    fn checksum_roundtrip_and_mismatch() {
        let mut out = Vec::new();
        let mut e = Encoder::new(&mut out, S44, "test");
        e.bytes(b"OHDR\x02\x00");
        e.checksum();
        verify_checksum(&out, 6, Addr(0x30), "OHDR").unwrap();
        out[2] ^= 1;
        assert!(matches!(
            verify_checksum(&out, 6, Addr(0x30), "OHDR"),
            Err(Error::ChecksumMismatch { at: Addr(0x36), .. })
        ));
        assert!(matches!(
            verify_checksum(&out[..8], 6, Addr(0x30), "OHDR"),
            Err(Error::Truncated { .. })
        ));
    }
}
