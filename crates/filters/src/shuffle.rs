//! The shuffle filter (2): byte `b` of every element is gathered into plane `b`, which makes
//! numeric data compress better. Trailing bytes that do not fill an element stay in place.

use fearless_simd::{Level, Simd, SimdBase, dispatch, u8x16};

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
        4 => gather4(data, out, n),
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

/// Shuffle the first `n` elements of `N` bytes into planes of `n` bytes.
///
/// Each element is read as one little-endian word and each plane written through its own
/// iterator, zipped: loops the compiler vectorises (masks, shifts and packs) for the sizes
/// with a case here; other sizes go plane by plane.
fn gather<const N: usize>(data: &[u8], out: &mut [u8], n: usize) {
    let (elems, _) = data.as_chunks::<N>();
    let elems = elems.get(..n).unwrap_or_default();
    let mut planes = out.chunks_exact_mut(n);
    let mut plane = || planes.next().unwrap_or_default();
    if let Some(elems) = as_arrays::<N, 2>(elems) {
        let (p0, p1) = (plane(), plane());
        for ((e, d0), d1) in elems.iter().zip(p0).zip(p1) {
            let w = u16::from_le_bytes(*e);
            (*d0, *d1) = (w as u8, (w >> 8) as u8);
        }
    } else if let Some(elems) = as_arrays::<N, 4>(elems) {
        let (p0, p1, p2, p3) = (plane(), plane(), plane(), plane());
        for ((((e, d0), d1), d2), d3) in elems.iter().zip(p0).zip(p1).zip(p2).zip(p3) {
            let w = u32::from_le_bytes(*e);
            let lo = w & 0xFFFF;
            let hi = w >> 16;
            (*d0, *d1, *d2, *d3) = (lo as u8, (lo >> 8) as u8, hi as u8, (hi >> 8) as u8);
        }
    } else {
        for (b, plane) in out.chunks_exact_mut(n).take(N).enumerate() {
            for (d, e) in plane.iter_mut().zip(elems) {
                *d = e.get(b).copied().unwrap_or(0);
            }
        }
    }
}

/// [`gather`] of 4-byte elements: sixteen elements at a time with byte unzips (see
/// [`gather4_simd`]), the rest element by element.
fn gather4(data: &[u8], out: &mut [u8], n: usize) {
    let level = Level::new();
    let done = dispatch!(level, simd => gather4_simd(simd, data, out, n));
    let (elems, _) = data.as_chunks::<4>();
    let mut planes = out.chunks_exact_mut(n.max(1));
    let (Some(p0), Some(p1), Some(p2), Some(p3)) =
        (planes.next(), planes.next(), planes.next(), planes.next())
    else {
        return;
    };
    for ((((e, d0), d1), d2), d3) in elems
        .iter()
        .zip(p0)
        .zip(p1)
        .zip(p2)
        .zip(p3)
        .take(n)
        .skip(done)
    {
        [*d0, *d1, *d2, *d3] = *e;
    }
}

/// The first of `n` 4-byte elements of `data` into the four planes of `out`, sixteen at a
/// time, and how many it did: the inverse of [`scatter4_simd`]'s zips (the even and odd
/// bytes of each pair of vectors, twice), through fearless_simd's unzips.
#[inline(always)]
#[allow(clippy::arithmetic_side_effects)] // places within the planes: g·16 + 16 <= n
fn gather4_simd<S: Simd>(simd: S, data: &[u8], out: &mut [u8], n: usize) -> usize {
    let groups = n / 16;
    let (elems, _) = data.as_chunks::<64>();
    for (g, x) in elems.iter().enumerate().take(groups) {
        let (x, _) = x.as_chunks::<16>();
        let v = |i: usize| {
            x.get(i)
                .map_or_else(|| u8x16::splat(simd, 0), |x| u8x16::from_slice(simd, x))
        };
        let planes = ungroup4(simd, [v(0), v(1), v(2), v(3)]);
        for (k, p) in planes.iter().enumerate() {
            let at = k * n + g * 16;
            if let Some(dst) = out.get_mut(at..at + 16) {
                dst.copy_from_slice(p.as_slice());
            }
        }
    }
    groups.min(elems.len()) * 16
}

/// Sixteen 4-byte elements (`q`) as their four byte planes: `q`'s even and odd bytes by pairs
/// (planes 0 and 2, 1 and 3, zipped), then those split again. A function: a closure is not
/// inlined into the dispatched target features, and the unzips would become calls.
#[inline(always)]
fn ungroup4<S: Simd>(simd: S, q: [u8x16<S>; 4]) -> [u8x16<S>; 4] {
    let [q0, q1, q2, q3] = q;
    let (ac_lo, bd_lo) = (simd.unzip_low_u8x16(q0, q1), simd.unzip_high_u8x16(q0, q1));
    let (ac_hi, bd_hi) = (simd.unzip_low_u8x16(q2, q3), simd.unzip_high_u8x16(q2, q3));
    [
        simd.unzip_low_u8x16(ac_lo, ac_hi),
        simd.unzip_low_u8x16(bd_lo, bd_hi),
        simd.unzip_high_u8x16(ac_lo, ac_hi),
        simd.unzip_high_u8x16(bd_lo, bd_hi),
    ]
}

/// Bytes 0, 2, 4 and 6 of `x`, in its low four bytes.
fn evens(x: u64) -> u64 {
    let x = x & 0x00FF_00FF_00FF_00FF;
    let x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    (x | (x >> 16)) & 0xFFFF_FFFF
}

/// [`gather`] of 2-byte elements: sixteen elements at a time with byte unzips (see
/// [`gather2_simd`]), then eight elements (two words) at a time, the even and odd bytes of
/// each word packed with shifts and masks, then element by element.
fn gather2(data: &[u8], out: &mut [u8], n: usize) {
    let (p0, rest) = out.split_at_mut(n.min(out.len()));
    let p1 = rest.get_mut(..n).unwrap_or_default();
    let level = Level::new();
    let vectors = dispatch!(level, simd => gather2_simd(simd, data, (&mut *p0, &mut *p1)));
    let words = n / 8;
    for ((src, a), b) in data
        .chunks_exact(16)
        .zip(p0.chunks_exact_mut(8))
        .zip(p1.chunks_exact_mut(8))
        .take(words)
        .skip(vectors / 8)
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

/// The first of the 2-byte elements of `data` into the planes `p0` and `p1` (as long as each
/// other), sixteen at a time, and how many it did: the even and odd bytes of each pair of
/// vectors (two unzips per 32 bytes, where the word loop of [`gather2`] takes about 1.8
/// instructions a byte).
#[inline(always)]
fn gather2_simd<S: Simd>(simd: S, data: &[u8], (p0, p1): (&mut [u8], &mut [u8])) -> usize {
    let (elems, _) = data.as_chunks::<32>();
    let mut done = 0usize;
    for ((x, a), b) in elems
        .iter()
        .zip(p0.chunks_exact_mut(16))
        .zip(p1.chunks_exact_mut(16))
    {
        let (lo, hi) = x.split_at(16);
        let (lo, hi) = (u8x16::from_slice(simd, lo), u8x16::from_slice(simd, hi));
        a.copy_from_slice(simd.unzip_low_u8x16(lo, hi).as_slice());
        b.copy_from_slice(simd.unzip_high_u8x16(lo, hi).as_slice());
        done = done.saturating_add(16);
    }
    done
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

/// [`scatter`] of 4-byte elements: sixteen elements at a time with byte zips (see
/// [`scatter4_simd`]), the rest the four planes zipped element by element.
fn scatter4(data: &[u8], out: &mut [u8], n: usize) {
    let mut planes = data.chunks_exact(n.max(1));
    let (Some(p0), Some(p1), Some(p2), Some(p3)) =
        (planes.next(), planes.next(), planes.next(), planes.next())
    else {
        return;
    };
    let level = Level::new();
    let done = dispatch!(level, simd => scatter4_simd(simd, [p0, p1, p2, p3], out));
    for ((((e, &a), &b), &c), &d) in out
        .chunks_exact_mut(4)
        .zip(p0)
        .zip(p1)
        .zip(p2)
        .zip(p3)
        .skip(done)
    {
        e.copy_from_slice(&[a, b, c, d]);
    }
}

/// The first elements of [`scatter4`], sixteen at a time, and how many it did: planes `a` and
/// `c` zipped bytewise, `b` and `d` too, then those two zipped make `a b c d` per element
/// (eight byte unpacks per 64 bytes, where LLVM's vectorising of the element loop on the
/// baseline x86-64 widened each byte to 32 bits: 22 instructions per 16 bytes).
#[inline(always)]
fn scatter4_simd<S: Simd>(simd: S, planes: [&[u8]; 4], out: &mut [u8]) -> usize {
    let [p0, p1, p2, p3] = planes.map(|p| p.as_chunks::<16>().0);
    let (outs, _) = out.as_chunks_mut::<64>();
    let mut done = 0usize;
    for ((((o, a), b), c), d) in outs.iter_mut().zip(p0).zip(p1).zip(p2).zip(p3) {
        let v = |x: &[u8; 16]| u8x16::from_slice(simd, x);
        let (a, b, c, d) = (v(a), v(b), v(c), v(d));
        let (ac_lo, ac_hi) = (simd.zip_low_u8x16(a, c), simd.zip_high_u8x16(a, c));
        let (bd_lo, bd_hi) = (simd.zip_low_u8x16(b, d), simd.zip_high_u8x16(b, d));
        let quads = [
            simd.zip_low_u8x16(ac_lo, bd_lo),
            simd.zip_high_u8x16(ac_lo, bd_lo),
            simd.zip_low_u8x16(ac_hi, bd_hi),
            simd.zip_high_u8x16(ac_hi, bd_hi),
        ];
        let (dst, _) = o.as_chunks_mut::<16>();
        for (d, q) in dst.iter_mut().zip(quads) {
            d.copy_from_slice(q.as_slice());
        }
        done = done.saturating_add(16);
    }
    done
}

/// Undo [`gather`].
fn scatter<const N: usize>(data: &[u8], out: &mut [u8], n: usize) {
    let (elems, _) = out.as_chunks_mut::<N>();
    let elems = elems.get_mut(..n).unwrap_or_default();
    let mut planes = data.chunks_exact(n);
    let mut plane = || planes.next().unwrap_or_default();
    if let Some(elems) = as_arrays_mut::<N, 2>(elems) {
        let (p0, p1) = (plane(), plane());
        for ((e, &b0), &b1) in elems.iter_mut().zip(p0).zip(p1) {
            *e = [b0, b1];
        }
    } else if let Some(elems) = as_arrays_mut::<N, 4>(elems) {
        let (p0, p1, p2, p3) = (plane(), plane(), plane(), plane());
        for ((((e, &b0), &b1), &b2), &b3) in elems.iter_mut().zip(p0).zip(p1).zip(p2).zip(p3) {
            let w = u32::from(b0) | u32::from(b1) << 8 | u32::from(b2) << 16 | u32::from(b3) << 24;
            *e = w.to_le_bytes();
        }
    } else {
        for (b, plane) in data.chunks_exact(n).take(N).enumerate() {
            for (e, &src) in elems.iter_mut().zip(plane) {
                if let Some(d) = e.get_mut(b) {
                    *d = src;
                }
            }
        }
    }
}

/// `elems` as arrays of `M` bytes when `N` is `M` (a no-op the compiler resolves).
fn as_arrays<const N: usize, const M: usize>(elems: &[[u8; N]]) -> Option<&[[u8; M]]> {
    if N != M {
        return None;
    }
    let (whole, _) = elems.as_flattened().as_chunks::<M>();
    Some(whole)
}

/// [`as_arrays`] of a mutable slice.
fn as_arrays_mut<const N: usize, const M: usize>(elems: &mut [[u8; N]]) -> Option<&mut [[u8; M]]> {
    if N != M {
        return None;
    }
    let (whole, _) = elems.as_flattened_mut().as_chunks_mut::<M>();
    Some(whole)
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
