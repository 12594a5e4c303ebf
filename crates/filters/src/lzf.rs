//! The LZF filter (32000) as h5py registers it: Marc Lehmann's LZF format. Each control byte
//! either starts a run of 1 to 32 literal bytes (values 0 to 31) or is a back reference: the top
//! three bits are the length minus 2 (7: add the next byte), the low five bits and the next byte
//! the distance minus 1 (up to 8192).

use super::FilterError;

const MAX_LITERAL: usize = 32;
const MAX_OFFSET: usize = 1 << 13;
const MAX_REF: usize = (1 << 8) + (1 << 3); // 264
const HASH_BITS: u32 = 14;

/// Compress `data`; `None` when the result would not be smaller (h5py's filter then fails and
/// libhdf5 stores the chunk unfiltered, marking it in the filter mask).
pub fn compress(data: &[u8]) -> Option<Vec<u8>> {
    let n = data.len();
    if n < 4 {
        return None;
    }
    let mut out = Vec::with_capacity(n);
    let mut table = vec![usize::MAX; 1 << HASH_BITS];
    // The hash of the three bytes at `i`; `None` when fewer than three remain.
    let hash = |i: usize| {
        let &[a, b, c] = data.get(i..)?.first_chunk::<3>()?;
        let v = u32::from(a) << 16 | u32::from(b) << 8 | u32::from(c);
        Some((v.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize)
    };
    let flush_literals = |out: &mut Vec<u8>, run: &[u8]| {
        for run in run.chunks(MAX_LITERAL) {
            // `chunks` yields no empty run, so the length minus one does not saturate.
            out.push(run.len().saturating_sub(1) as u8);
            out.extend_from_slice(run);
        }
    };
    // Positions stay at most `n` (a match never runs past the end), so the saturating
    // additions on them below never saturate; `lit_start <= i` throughout.
    let mut lit_start = 0usize;
    let mut i = 0usize;
    while let Some(h) = hash(i) {
        let cand = table
            .get_mut(h)
            .map_or(usize::MAX, |slot| core::mem::replace(slot, i));
        // The stored distance minus one of an earlier position in reach (`usize::MAX`, the
        // empty slot, is never below `i`).
        let off = i
            .checked_sub(cand)
            .and_then(|d| d.checked_sub(1))
            .filter(|&off| off < MAX_OFFSET);
        // The match length, capped at the end of the data and at MAX_REF.
        let len = match (off, data.get(cand..), data.get(i..)) {
            (Some(_), Some(prev), Some(here)) => prev
                .iter()
                .zip(here)
                .take(MAX_REF)
                .take_while(|(a, b)| a == b)
                .count(),
            _ => 0,
        };
        if let Some(off) = off
            && len >= 3
        {
            flush_literals(&mut out, data.get(lit_start..i).unwrap_or_default());
            // `len >= 3`: the stored length minus 2 does not saturate.
            let l = len.saturating_sub(2);
            match l.checked_sub(7) {
                None => out.push(((l as u8) << 5) | (off >> 8) as u8),
                Some(extra) => {
                    out.push((7 << 5) | (off >> 8) as u8);
                    out.push(extra as u8);
                }
            }
            out.push(off as u8);
            for j in (i..).take(len).skip(1) {
                let Some(h) = hash(j) else { break };
                if let Some(slot) = table.get_mut(h) {
                    *slot = j;
                }
            }
            i = i.saturating_add(len);
            lit_start = i;
        } else {
            i = i.saturating_add(1);
        }
        if out.len() >= n {
            return None;
        }
    }
    flush_literals(&mut out, data.get(lit_start..).unwrap_or_default());
    (out.len() < n).then_some(out)
}

/// Decompress `data`, refusing to produce more than `limit` bytes.
pub fn decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, FilterError> {
    let corrupt = |reason: &str| FilterError::Corrupt {
        filter: "lzf",
        reason: reason.to_owned(),
    };
    // Whether `len` more bytes fit under `limit`.
    let fits = |have: usize, len: usize| have.checked_add(len).is_some_and(|end| end <= limit);
    // All the room the output may fill, allocated fallibly: it never grows past it.
    let mut out = crate::buffer("lzf", limit)?;
    let mut rest = data;
    while let Some((&ctrl, tail)) = rest.split_first() {
        rest = tail;
        let ctrl = usize::from(ctrl);
        if ctrl < 32 {
            // A run of `ctrl + 1` literal bytes.
            let lit = rest
                .get(..=ctrl)
                .ok_or_else(|| corrupt("literal run past the end"))?;
            if !fits(out.len(), lit.len()) {
                return Err(corrupt("output too long"));
            }
            out.extend_from_slice(lit);
            rest = rest.get(lit.len()..).unwrap_or_default();
        } else {
            let mut next = || -> Result<usize, FilterError> {
                let (&b, tail) = rest
                    .split_first()
                    .ok_or_else(|| corrupt("truncated back reference"))?;
                rest = tail;
                Ok(usize::from(b))
            };
            // The length is 2 more than the top three bits, or than 7 plus the next byte: at
            // most 264, so the additions cannot overflow.
            let len = match ctrl >> 5 {
                7 => next()?.wrapping_add(9),
                code => code.wrapping_add(2),
            };
            // The distance minus one: the low five bits, then the next byte.
            let off = (ctrl & 0x1f) << 8 | next()?;
            let start = out
                .len()
                .checked_sub(off)
                .and_then(|s| s.checked_sub(1))
                .ok_or_else(|| corrupt("back reference before the start"))?;
            if !fits(out.len(), len) {
                return Err(corrupt("output too long"));
            }
            // Byte by byte: the reference may overlap the bytes it produces.
            for k in (start..).take(len) {
                // `k` is below the output's length: `start` was, and each step adds a byte.
                let b = *out
                    .get(k)
                    .ok_or_else(|| corrupt("back reference past the output"))?;
                out.push(b);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_reject_corruption() {
        let mut data = Vec::new();
        for i in 0..5000u32 {
            data.extend_from_slice(&(i % 300).to_le_bytes());
        }
        data.extend(std::iter::repeat_n(9u8, 1000));
        let c = compress(&data).unwrap();
        assert!(c.len() < data.len() / 2);
        assert_eq!(decompress(&c, data.len()).unwrap(), data);
        assert!(decompress(&c, data.len() - 1).is_err());
        assert!(decompress(&[0x20, 0x05], 100).is_err());
        assert!(decompress(&[0x05, 1, 2], 100).is_err());
        for n in 0..c.len() {
            let _ = decompress(&c[..n], data.len());
        }
    }

    #[test]
    fn decodes_a_hand_made_stream() {
        // "abc" literal, then a back reference of length 6 at distance 3: "abcabcabc".
        let stream = [2, b'a', b'b', b'c', (4 << 5), 2];
        assert_eq!(decompress(&stream, 100).unwrap(), b"abcabcabc");
    }
}
