//! The shuffle filter (2): byte `b` of every element is gathered into plane `b`, which makes
//! numeric data compress better. Trailing bytes that do not fill an element stay in place.

/// Shuffle `data` of `element_size`-byte elements.
pub fn shuffle(data: &[u8], element_size: usize) -> Vec<u8> {
    if element_size <= 1 || data.len() < element_size {
        return data.to_vec();
    }
    let elements = data.chunks_exact(element_size);
    let (n, tail) = (elements.len(), elements.remainder());
    let mut out = vec![0u8; data.len()];
    // `n >= 1`: `data` holds at least one element.
    for (b, plane) in out.chunks_exact_mut(n).take(element_size).enumerate() {
        // Plane `b` is byte `b` of every element.
        for (dst, &src) in plane
            .iter_mut()
            .zip(data.iter().skip(b).step_by(element_size))
        {
            *dst = src;
        }
    }
    out.chunks_exact_mut(element_size)
        .into_remainder()
        .copy_from_slice(tail);
    out
}

/// Undo [`shuffle`].
pub fn unshuffle(data: &[u8], element_size: usize) -> Vec<u8> {
    if element_size <= 1 || data.len() < element_size {
        return data.to_vec();
    }
    let elements = data.chunks_exact(element_size);
    let (n, tail) = (elements.len(), elements.remainder());
    let mut out = vec![0u8; data.len()];
    // `n >= 1`: `data` holds at least one element.
    for (b, plane) in data.chunks_exact(n).take(element_size).enumerate() {
        for (dst, &src) in out.iter_mut().skip(b).step_by(element_size).zip(plane) {
            *dst = src;
        }
    }
    out.chunks_exact_mut(element_size)
        .into_remainder()
        .copy_from_slice(tail);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gathers_byte_planes_and_keeps_the_tail() {
        let data = [1, 2, 3, 4, 5, 6, 7];
        assert_eq!(shuffle(&data, 2), vec![1, 3, 5, 2, 4, 6, 7]);
        for es in 1..6 {
            let d: Vec<u8> = (0..37).collect();
            assert_eq!(unshuffle(&shuffle(&d, es), es), d);
        }
    }
}
