//! The shuffle filter (2): byte `b` of every element is gathered into plane `b`, which makes
//! numeric data compress better. Trailing bytes that do not fill an element stay in place.

/// Shuffle `data` of `element_size`-byte elements.
pub fn shuffle(data: &[u8], element_size: usize) -> Vec<u8> {
    if element_size <= 1 || data.len() < element_size {
        return data.to_vec();
    }
    let n = data.len() / element_size;
    let mut out = vec![0u8; data.len()];
    for (b, plane) in out.chunks_mut(n).take(element_size).enumerate() {
        for (e, dst) in plane.iter_mut().enumerate() {
            *dst = data[e * element_size + b];
        }
    }
    let tail = n * element_size;
    out[tail..].copy_from_slice(&data[tail..]);
    out
}

/// Undo [`shuffle`].
pub fn unshuffle(data: &[u8], element_size: usize) -> Vec<u8> {
    if element_size <= 1 || data.len() < element_size {
        return data.to_vec();
    }
    let n = data.len() / element_size;
    let mut out = vec![0u8; data.len()];
    for (b, plane) in data.chunks(n).take(element_size).enumerate() {
        for (e, &src) in plane.iter().enumerate() {
            out[e * element_size + b] = src;
        }
    }
    let tail = n * element_size;
    out[tail..].copy_from_slice(&data[tail..]);
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
