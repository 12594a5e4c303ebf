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
    let hash = |i: usize| {
        let v = u32::from(data[i]) << 16 | u32::from(data[i + 1]) << 8 | u32::from(data[i + 2]);
        (v.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize
    };
    let mut lit_start = 0usize;
    let mut i = 0usize;
    let flush_literals = |out: &mut Vec<u8>, from: usize, to: usize| {
        for run in data[from..to].chunks(MAX_LITERAL) {
            out.push((run.len() - 1) as u8);
            out.extend_from_slice(run);
        }
    };
    while i + 2 < n {
        let h = hash(i);
        let cand = table[h];
        table[h] = i;
        if cand != usize::MAX && i - cand <= MAX_OFFSET && data[cand..cand + 3] == data[i..i + 3] {
            let max = (n - i).min(MAX_REF);
            let mut len = 3;
            while len < max && data[cand + len] == data[i + len] {
                len += 1;
            }
            flush_literals(&mut out, lit_start, i);
            let off = i - cand - 1;
            let l = len - 2;
            if l < 7 {
                out.push(((l as u8) << 5) | (off >> 8) as u8);
            } else {
                out.push((7 << 5) | (off >> 8) as u8);
                out.push((l - 7) as u8);
            }
            out.push(off as u8);
            for j in i + 1..(i + len).min(n - 2) {
                table[hash(j)] = j;
            }
            i += len;
            lit_start = i;
        } else {
            i += 1;
        }
        if out.len() >= n {
            return None;
        }
    }
    flush_literals(&mut out, lit_start, n);
    (out.len() < n).then_some(out)
}

/// Decompress `data`, refusing to produce more than `limit` bytes.
pub fn decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, FilterError> {
    let corrupt = |reason: &str| FilterError::Corrupt {
        filter: "lzf",
        reason: reason.to_owned(),
    };
    let mut out: Vec<u8> = Vec::with_capacity(limit.min(1 << 24));
    let mut ip = 0usize;
    while ip < data.len() {
        let ctrl = usize::from(data[ip]);
        ip += 1;
        if ctrl < 32 {
            let len = ctrl + 1;
            let lit = data
                .get(ip..ip + len)
                .ok_or_else(|| corrupt("literal run past the end"))?;
            if out.len() + len > limit {
                return Err(corrupt("output too long"));
            }
            out.extend_from_slice(lit);
            ip += len;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(
                    *data
                        .get(ip)
                        .ok_or_else(|| corrupt("truncated back reference"))?,
                );
                ip += 1;
            }
            let low = usize::from(
                *data
                    .get(ip)
                    .ok_or_else(|| corrupt("truncated back reference"))?,
            );
            ip += 1;
            let dist = ((ctrl & 0x1f) << 8) + low + 1;
            let start = out
                .len()
                .checked_sub(dist)
                .ok_or_else(|| corrupt("back reference before the start"))?;
            let len = len + 2;
            if out.len() + len > limit {
                return Err(corrupt("output too long"));
            }
            for k in 0..len {
                let b = out[start + k];
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
