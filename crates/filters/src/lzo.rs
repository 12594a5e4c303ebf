//! The LZO filter (305, PyTables'): LZO1X streams as liblzo2's `lzo1x_1_compress` writes them,
//! read and written from the LZO1X bit-stream description (no liblzo2 code; no maintained
//! pure-Rust crate compresses LZO1X).
//!
//! Client data: [level, object version, object type], none of which decoding needs. A chunk is
//! one LZO1X stream; PyTables 0.5 to 0.7 (2003) followed it with the Adler-32 checksum of the
//! uncompressed data and its length (4 bytes each, little-endian as its x86 builds wrote them),
//! which PyTables stopped writing and checking in 0.8: exactly 8 bytes after the stream's end
//! are taken as those and checked, anything else after it is corrupt.
//!
//! The stream: a first byte above 17 is a literal run of `byte - 17` bytes. Then instructions,
//! each read according to `state`, the number of literals the previous one copied (0, 1-3, or 4
//! for more):
//! - `0000LLLL`, state 0: a literal run of `L + 3` bytes (`L = 0`: 18 plus 255 per following
//!   zero byte plus the next non-zero byte); state 4.
//! - `0000DDSS` then `H`: state 1-3, a 2-byte match at `(H << 2) + D + 1`; state 4, a 3-byte
//!   match at `(H << 2) + D + 2049`.
//! - `0001HLLL` then a 16-bit little-endian `D << 2 | S`: a match of `L + 2` bytes (`L = 0`: 9
//!   plus the zero-byte extension) at `16384 + (H << 14) + D`; distance 16384 ends the stream.
//! - `001LLLLL` then `D << 2 | S` (16-bit): `L + 2` bytes (`L = 0`: 33 plus extension) at `D + 1`.
//! - `01LDDDSS` then `H`: `L + 3` bytes at `(H << 3) + D + 1`.
//! - `1LLDDDSS` then `H`: `L + 5` bytes at `(H << 3) + D + 1`.
//!
//! After a match, `S` literals follow it and become the state.

use super::FilterError;

fn corrupt(reason: impl Into<String>) -> FilterError {
    FilterError::Corrupt {
        filter: "lzo",
        reason: reason.into(),
    }
}

/// Adler-32 (RFC 1950).
fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    // 5552 bytes keep the sums below 2^32 before the reduction.
    for block in data.chunks(5552) {
        for &x in block {
            a = a.wrapping_add(u32::from(x));
            b = b.wrapping_add(a);
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

/// Undo the filter, refusing to produce more than `limit` bytes.
pub fn decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, FilterError> {
    let (out, rest) = decompress_stream(data, limit)?;
    match rest {
        [] => Ok(out),
        // PyTables 0.5 to 0.7's checksum and length, checked.
        &[c0, c1, c2, c3, n0, n1, n2, n3] => {
            let stored = u32::from_le_bytes([c0, c1, c2, c3]);
            let len = u32::from_le_bytes([n0, n1, n2, n3]) as usize;
            let computed = adler32(&out);
            if len != out.len() || computed != stored {
                return Err(corrupt(format!(
                    "PyTables checksum or length mismatch (stored {stored:#010x} over {len} \
                     bytes, computed {computed:#010x} over {})",
                    out.len()
                )));
            }
            Ok(out)
        }
        _ => Err(corrupt("bytes after the end of the stream")),
    }
}

/// Decode one LZO1X stream of at most `limit` bytes; the bytes after its end marker too.
pub fn decompress_stream(src: &[u8], limit: usize) -> Result<(Vec<u8>, &[u8]), FilterError> {
    let mut out: Vec<u8> = Vec::with_capacity(limit.min(src.len().saturating_mul(8)));
    let mut ip = src;
    let byte = |ip: &mut &[u8]| -> Result<usize, FilterError> {
        let (&b, rest) = ip
            .split_first()
            .ok_or_else(|| corrupt("truncated stream"))?;
        *ip = rest;
        Ok(usize::from(b))
    };
    // A length's zero-byte extension: 255 per zero byte, then the non-zero byte.
    let extend = |ip: &mut &[u8], base: usize| -> Result<usize, FilterError> {
        let mut n = base;
        loop {
            let b = byte(ip)?;
            if b != 0 {
                return Ok(n.saturating_add(b));
            }
            n = n.saturating_add(255);
        }
    };
    let literals = |ip: &mut &[u8], out: &mut Vec<u8>, n: usize| -> Result<(), FilterError> {
        if out.len().saturating_add(n) > limit {
            return Err(corrupt("output past the expected size"));
        }
        let (lit, rest) = ip
            .split_at_checked(n)
            .ok_or_else(|| corrupt("literal run past the end"))?;
        out.extend_from_slice(lit);
        *ip = rest;
        Ok(())
    };
    let copy = |out: &mut Vec<u8>, distance: usize, len: usize| -> Result<(), FilterError> {
        if out.len().saturating_add(len) > limit {
            return Err(corrupt("output past the expected size"));
        }
        let from = out
            .len()
            .checked_sub(distance)
            .ok_or_else(|| corrupt("match before the start"))?;
        if distance >= len {
            out.extend_from_within(from..from.saturating_add(len));
        } else {
            for k in (from..).take(len) {
                let b = out.get(k).copied().unwrap_or(0);
                out.push(b);
            }
        }
        Ok(())
    };
    let mut state = 0usize;
    if let Some(&first) = ip.first()
        && first > 17
    {
        ip = ip.get(1..).unwrap_or_default();
        let n = usize::from(first).saturating_sub(17);
        literals(&mut ip, &mut out, n)?;
        state = n.min(4);
    }
    loop {
        let t = byte(&mut ip)?;
        let s = if t < 16 {
            if state == 0 {
                let n = if t == 0 {
                    extend(&mut ip, 18)?
                } else {
                    t.saturating_add(3)
                };
                literals(&mut ip, &mut out, n)?;
                state = 4;
                continue;
            }
            let h = byte(&mut ip)?;
            let d = (h << 2).saturating_add(t >> 2);
            if state == 4 {
                copy(&mut out, d.saturating_add(2049), 3)?;
            } else {
                copy(&mut out, d.saturating_add(1), 2)?;
            }
            t & 3
        } else if t < 32 {
            let len = match t & 7 {
                0 => extend(&mut ip, 9)?,
                l => l.saturating_add(2),
            };
            let v = byte(&mut ip)? | (byte(&mut ip)? << 8);
            let distance = 16384usize
                .saturating_add((t & 8) << 11)
                .saturating_add(v >> 2);
            if distance == 16384 {
                break;
            }
            copy(&mut out, distance, len)?;
            v & 3
        } else if t < 64 {
            let len = match t & 31 {
                0 => extend(&mut ip, 33)?,
                l => l.saturating_add(2),
            };
            let v = byte(&mut ip)? | (byte(&mut ip)? << 8);
            copy(&mut out, (v >> 2).saturating_add(1), len)?;
            v & 3
        } else {
            let len = (t >> 5).saturating_add(1);
            let h = byte(&mut ip)?;
            let distance = (h << 3).saturating_add((t >> 2) & 7).saturating_add(1);
            copy(&mut out, distance, len)?;
            t & 3
        };
        literals(&mut ip, &mut out, s)?;
        state = s;
    }
    Ok((out, ip))
}

/// Compress `src` into one LZO1X stream (the instructions [`decompress_stream`] reads, which
/// liblzo2's decoders read), or `None` when it would not be shorter than `src` (PyTables' filter
/// then fails and the optional filter leaves the chunk unfiltered).
///
/// A greedy compressor in the manner of LZO1X-1: a hash of the next 4 bytes finds the last
/// place they occurred; a match of at least 4 bytes is encoded in the shortest form its length
/// and distance allow (`01`/`1x` up to 8 bytes at up to 2048, `001` up to 16384, `0001` up to
/// 49151), the 1 to 3 literals after it in its `S` bits, longer runs as literal instructions.
/// The stream starts with a literal run (a first byte of 17 + n, or `0000LLLL` beyond 238) and
/// ends with the end-of-stream match (`0x11 0 0`).
///
/// Positions are indexes into `src` (a chunk, below 4 GiB), so the arithmetic on them does not
/// overflow; the reads go through `get`.
#[allow(clippy::arithmetic_side_effects)]
pub fn compress(src: &[u8]) -> Option<Vec<u8>> {
    const HASH_LOG: u32 = 14;
    const MIN_MATCH: usize = 4;
    const M2_MAX_LEN: usize = 8;
    const M2_MAX_DISTANCE: usize = 2048;
    const M3_MAX_DISTANCE: usize = 16384;
    const M4_MAX_DISTANCE: usize = 49151;
    let n = src.len();
    let mut out = Vec::with_capacity(n / 2 + 16);
    let read32 = |p: usize| {
        src.get(p..)
            .and_then(|s| s.first_chunk::<4>())
            .map(|b| u32::from_le_bytes(*b))
    };
    let hash = |v: u32| (v.wrapping_mul(2_654_435_761) >> (32 - HASH_LOG)) as usize;
    let mut table = vec![0u32; 1 << HASH_LOG];
    // Where the previous match's `S` bits are (none before the first match).
    let mut s_at: Option<usize> = None;
    let extend = |out: &mut Vec<u8>, mut v: usize| {
        while v > 255 {
            out.push(0);
            v -= 255;
        }
        out.push(v as u8);
    };
    let literals = |out: &mut Vec<u8>, s_at: Option<usize>, lit: &[u8]| {
        let k = lit.len();
        if k == 0 {
            return;
        }
        match s_at {
            None if k <= 238 => out.push((k + 17) as u8),
            None => {
                out.push(0);
                extend(out, k - 18);
            }
            Some(at) if k <= 3 => {
                if let Some(b) = out.get_mut(at) {
                    *b |= k as u8;
                }
            }
            Some(_) if k <= 18 => out.push((k - 3) as u8),
            Some(_) => {
                out.push(0);
                extend(out, k - 18);
            }
        }
        out.extend_from_slice(lit);
    };
    let mut anchor = 0usize;
    let mut ip = 1usize;
    while ip + MIN_MATCH <= n {
        let Some(v) = read32(ip) else { break };
        let h = hash(v);
        let cand = table.get(h).map_or(0, |&c| c as usize);
        if let Some(slot) = table.get_mut(h) {
            *slot = (ip + 1) as u32;
        }
        let distance = ip.wrapping_sub(cand.wrapping_sub(1));
        if cand == 0 || distance == 0 || distance > M4_MAX_DISTANCE || read32(cand - 1) != Some(v) {
            ip += 1;
            continue;
        }
        let from = cand - 1;
        let mut len = MIN_MATCH;
        while ip + len < n && src.get(from + len) == src.get(ip + len) {
            len += 1;
        }
        literals(&mut out, s_at, src.get(anchor..ip).unwrap_or_default());
        let d = distance - 1;
        if len <= M2_MAX_LEN && distance <= M2_MAX_DISTANCE {
            s_at = Some(out.len());
            out.push((((len - 1) << 5) | ((d & 7) << 2)) as u8);
            out.push((d >> 3) as u8);
        } else {
            let (head, mask, short, tail) = if distance <= M3_MAX_DISTANCE {
                (0x20usize, 31usize, 33usize, d)
            } else {
                let far = distance - 16384;
                (0x10 | ((far >> 14) << 3), 7, 9, far & 0x3FFF)
            };
            if len - 2 <= mask {
                out.push((head | (len - 2)) as u8);
            } else {
                out.push(head as u8);
                extend(&mut out, len - short);
            }
            s_at = Some(out.len());
            out.extend_from_slice(&((tail << 2) as u16).to_le_bytes());
        }
        // Positions inside the match feed the table sparsely.
        let end = ip + len;
        let mut p = ip + 1;
        while p + MIN_MATCH <= end {
            if let Some(w) = read32(p)
                && let Some(slot) = table.get_mut(hash(w))
            {
                *slot = (p + 1) as u32;
            }
            p += 3;
        }
        ip = end;
        anchor = end;
        if out.len() >= n {
            return None;
        }
    }
    literals(&mut out, s_at, src.get(anchor..).unwrap_or_default());
    out.extend_from_slice(&[0x11, 0, 0]);
    (out.len() < n).then_some(out)
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn adler32_of_known_strings() {
        assert_eq!(adler32(b""), 1);
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
        let long = vec![0xFFu8; 100_000];
        // Reduced often enough not to overflow: the same as a u64 reference.
        let (mut a, mut b) = (1u64, 0u64);
        for &x in &long {
            a = (a + u64::from(x)) % 65521;
            b = (b + a) % 65521;
        }
        assert_eq!(u64::from(adler32(&long)), (b << 16) | a);
    }

    #[test]
    fn decodes_each_instruction_kind() {
        // "abcd" as a first-byte literal run (21 = 17 + 4), then a 64..127 match of 4 bytes at
        // distance 4 (`01 1 011 00`, H = 0), a 32..63 match of 2 + 3 bytes at distance 1 with
        // one trailing literal 'z', then the end marker.
        let stream = [
            21,
            b'a',
            b'b',
            b'c',
            b'd',
            0b0110_1100,
            0,
            0b0010_0011,
            0b0000_0001,
            0,
            b'z',
            0x11,
            0,
            0,
        ];
        let out = decompress(&stream, 100).unwrap();
        assert_eq!(out, b"abcdabcddddddz");
        assert!(decompress(&stream, 13).is_err());
        for n in 0..stream.len() {
            assert!(decompress(&stream[..n], 100).is_err(), "{n}");
        }
        let mut longer = stream.to_vec();
        longer.push(0);
        assert!(decompress(&longer, 100).is_err());
        // The old PyTables trailer: checked.
        let mut framed = stream.to_vec();
        framed.extend(adler32(&out).to_le_bytes());
        framed.extend(14u32.to_le_bytes());
        assert_eq!(decompress(&framed, 100).unwrap(), out);
        framed[14] ^= 1;
        assert!(decompress(&framed, 100).is_err());
    }

    #[test]
    fn compressed_streams_decode_to_their_input() {
        let mut next = crate::xorshift(0x2545_F491_4F6C_DD1Du64);
        let noise: Vec<u8> = (0..60_000).map(|_| next() as u8).collect();
        let mut far = noise[..30_000].to_vec();
        far.extend_from_slice(&noise[..30_000]);
        far.extend_from_slice(&noise[..20_000]);
        far.extend_from_slice(&[9; 1000]);
        let mut samples = vec![
            b"abcdabcdabcdabcdabcdxyz".to_vec(),
            vec![0; 100_000],
            (0..300_000u32)
                .flat_map(|i| (i / 7).to_le_bytes())
                .collect(),
            (0..5000u32).flat_map(|i| (i % 300).to_le_bytes()).collect(),
            far,
        ];
        // A long run of literals first (over 238), then repeats.
        let mut lit_first = noise[..1000].to_vec();
        lit_first.extend_from_slice(&noise[..1000]);
        samples.push(lit_first);
        for s in &samples {
            let z = compress(s).unwrap();
            assert!(z.len() < s.len());
            assert!(decompress(&z, s.len()).unwrap() == *s, "{} bytes", s.len());
        }
        assert!(compress(&noise).is_none());
        assert!(compress(b"abc").is_none());
    }

    #[test]
    fn garbage_never_panics() {
        let mut next = crate::xorshift(0x2545_F491_4F6C_DD1Du64);
        for round in 0..5000 {
            let len = round % 200;
            let junk: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if let Ok(d) = decompress(&junk, 3000) {
                assert!(d.len() <= 3000);
            }
        }
    }
}
