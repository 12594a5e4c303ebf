//! The shuffle filter (2): byte `b` of every element is gathered into plane `b`, which makes
//! numeric data compress better. Trailing bytes that do not fill an element stay in place.

/// Shuffle `data` of `element_size`-byte elements.
pub fn shuffle(data: &[u8], element_size: usize) -> Vec<u8> {
    let mut out = vec![0u8; data.len()];
    shuffle_into(data, element_size, &mut out);
    out
}

/// [`shuffle`] into `out` (as long as `data`; a shorter `out` gets what fits).
pub fn shuffle_into(data: &[u8], element_size: usize, out: &mut [u8]) {
    if element_size <= 1 || data.len() < element_size {
        let n = data.len().min(out.len());
        if let (Some(dst), Some(src)) = (out.get_mut(..n), data.get(..n)) {
            dst.copy_from_slice(src);
        }
        return;
    }
    let elements = data.chunks_exact(element_size);
    let (n, tail) = (elements.len(), elements.remainder());
    // `n >= 1`: `data` holds at least one element.
    match element_size {
        // The common sizes a whole element at a time (the loops vectorise).
        2 => gather2(data, out, n),
        4 => gather::<4>(data, out, n),
        8 => gather::<8>(data, out, n),
        _ => {
            for (b, plane) in out.chunks_exact_mut(n).take(element_size).enumerate() {
                // Plane `b` is byte `b` of every element.
                for (dst, &src) in plane
                    .iter_mut()
                    .zip(data.iter().skip(b).step_by(element_size))
                {
                    *dst = src;
                }
            }
        }
    }
    let body = n.saturating_mul(element_size);
    if let Some(dst) = out.get_mut(body..body.saturating_add(tail.len())) {
        dst.copy_from_slice(tail);
    }
}

/// Undo [`shuffle`].
pub fn unshuffle(data: &[u8], element_size: usize) -> Result<Vec<u8>, crate::FilterError> {
    let mut out = crate::zeroed("shuffle", data.len())?;
    unshuffle_into(data, element_size, &mut out);
    Ok(out)
}

/// [`unshuffle`] into `out` (as long as `data`; a shorter `out` gets what fits).
pub fn unshuffle_into(data: &[u8], element_size: usize, out: &mut [u8]) {
    if element_size <= 1 || data.len() < element_size {
        let n = data.len().min(out.len());
        if let (Some(dst), Some(src)) = (out.get_mut(..n), data.get(..n)) {
            dst.copy_from_slice(src);
        }
        return;
    }
    let elements = data.chunks_exact(element_size);
    let (n, tail) = (elements.len(), elements.remainder());
    // `n >= 1`: `data` holds at least one element.
    match element_size {
        2 => scatter2(data, out, n),
        4 => scatter4(data, out, n),
        8 => scatter::<8>(data, out, n),
        _ => {
            for (b, plane) in data.chunks_exact(n).take(element_size).enumerate() {
                for (dst, &src) in out.iter_mut().skip(b).step_by(element_size).zip(plane) {
                    *dst = src;
                }
            }
        }
    }
    let body = n.saturating_mul(element_size);
    if let Some(dst) = out.get_mut(body..body.saturating_add(tail.len())) {
        dst.copy_from_slice(tail);
    }
}

/// Shuffle the first `n` elements of `N` bytes: planes of `n` bytes, in blocks of elements
/// so that each step reads one small block and writes `N` short runs.
fn gather<const N: usize>(data: &[u8], out: &mut [u8], n: usize) {
    const BLOCK: usize = 64;
    let mut i = 0usize;
    for block in data.chunks(BLOCK.saturating_mul(N)).take(n.div_ceil(BLOCK)) {
        let elems = block.chunks_exact(N);
        let len = elems.len();
        for b in 0..N {
            let at = b.saturating_mul(n).saturating_add(i);
            let Some(plane) = out.get_mut(at..at.saturating_add(len)) else {
                return;
            };
            for (dst, e) in plane.iter_mut().zip(block.chunks_exact(N)) {
                *dst = e.get(b).copied().unwrap_or(0);
            }
        }
        i = i.saturating_add(len);
    }
}

/// Bytes 0, 2, 4 and 6 of `x`, in its low four bytes.
fn evens(x: u64) -> u64 {
    let x = x & 0x00FF_00FF_00FF_00FF;
    let x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    (x | (x >> 16)) & 0xFFFF_FFFF
}

/// [`gather`] of 2-byte elements: eight elements (two words) at a time, the even and odd
/// bytes of each word packed with shifts and masks.
fn gather2(data: &[u8], out: &mut [u8], n: usize) {
    let (p0, rest) = out.split_at_mut(n.min(out.len()));
    let p1 = rest.get_mut(..n).unwrap_or_default();
    let words = n / 8;
    for ((src, a), b) in data
        .chunks_exact(16)
        .zip(p0.chunks_exact_mut(8))
        .zip(p1.chunks_exact_mut(8))
        .take(words)
    {
        let (Some(x0), Some(x1)) = (src.first_chunk::<8>(), src.last_chunk::<8>()) else {
            continue;
        };
        let (x0, x1) = (u64::from_le_bytes(*x0), u64::from_le_bytes(*x1));
        a.copy_from_slice(&(evens(x0) | (evens(x1) << 32)).to_le_bytes());
        b.copy_from_slice(&(evens(x0 >> 8) | (evens(x1 >> 8) << 32)).to_le_bytes());
    }
    let done = words.saturating_mul(8);
    for (i, e) in data.chunks_exact(2).enumerate().take(n).skip(done) {
        if let (Some(d), Some(&v)) = (p0.get_mut(i), e.first()) {
            *d = v;
        }
        if let (Some(d), Some(&v)) = (p1.get_mut(i), e.get(1)) {
            *d = v;
        }
    }
}

/// [`scatter`] of 2-byte elements: the two planes zipped, a loop LLVM vectorises.
fn scatter2(data: &[u8], out: &mut [u8], n: usize) {
    let mut planes = data.chunks_exact(n.max(1));
    let (Some(p0), Some(p1)) = (planes.next(), planes.next()) else {
        return;
    };
    for ((e, &a), &b) in out.chunks_exact_mut(2).zip(p0).zip(p1) {
        e.copy_from_slice(&[a, b]);
    }
}

/// [`scatter`] of 4-byte elements: the four planes zipped, a loop LLVM vectorises.
fn scatter4(data: &[u8], out: &mut [u8], n: usize) {
    let mut planes = data.chunks_exact(n.max(1));
    let (Some(p0), Some(p1), Some(p2), Some(p3)) =
        (planes.next(), planes.next(), planes.next(), planes.next())
    else {
        return;
    };
    for ((((e, &a), &b), &c), &d) in out.chunks_exact_mut(4).zip(p0).zip(p1).zip(p2).zip(p3) {
        e.copy_from_slice(&[a, b, c, d]);
    }
}

/// Undo [`gather`].
fn scatter<const N: usize>(data: &[u8], out: &mut [u8], n: usize) {
    const BLOCK: usize = 64;
    let mut i = 0usize;
    for block in out
        .chunks_mut(BLOCK.saturating_mul(N))
        .take(n.div_ceil(BLOCK))
    {
        let len = block.len().checked_div(N).unwrap_or(0);
        for b in 0..N {
            let at = b.saturating_mul(n).saturating_add(i);
            let Some(plane) = data.get(at..at.saturating_add(len)) else {
                return;
            };
            for (e, &src) in block.chunks_exact_mut(N).zip(plane) {
                if let Some(dst) = e.get_mut(b) {
                    *dst = src;
                }
            }
        }
        i = i.saturating_add(len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gathers_byte_planes_and_keeps_the_tail() {
        let data = [1, 2, 3, 4, 5, 6, 7];
        assert_eq!(shuffle(&data, 2), vec![1, 3, 5, 2, 4, 6, 7]);
        for es in 1..10 {
            for len in [0, 1, 7, 37, 255, 256 * 8 + 5, 4096] {
                let d: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
                let s = shuffle(&d, es);
                // Plane `b` is byte `b` of every element, in order.
                let n = len / es;
                if es > 1 && n > 0 {
                    for (i, e) in d.chunks_exact(es).enumerate() {
                        for (b, &x) in e.iter().enumerate() {
                            assert_eq!(s[b * n + i], x, "es {es} len {len}");
                        }
                    }
                }
                assert_eq!(unshuffle(&s, es).unwrap(), d, "es {es} len {len}");
            }
        }
    }
}
