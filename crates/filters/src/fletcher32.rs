//! The fletcher32 filter (3): HDF5's Fletcher checksum of the chunk, appended as a
//! little-endian `u32`. It is not the metadata checksum (lookup3).

use super::FilterError;

/// HDF5's Fletcher-32: 16-bit words taken big-endian (a trailing odd byte is the high byte of
/// a last word), both sums folded to 16 bits at least every 360 words.
pub fn fletcher32(data: &[u8]) -> u32 {
    // The sums are 32-bit and wrap as libhdf5's `uint32_t` ones do; folding every 360 words is
    // libhdf5's bound for keeping them from wrapping in practice.
    let fold = |s: u32| (s & 0xffff).wrapping_add(s >> 16);
    let (mut sum1, mut sum2) = (0u32, 0u32);
    let (words, rest) = data.as_chunks::<2>();
    for block in words.chunks(360) {
        for &[hi, lo] in block {
            sum1 = sum1.wrapping_add(u32::from(hi) << 8 | u32::from(lo));
            sum2 = sum2.wrapping_add(sum1);
        }
        sum1 = fold(sum1);
        sum2 = fold(sum2);
    }
    if let [last] = rest {
        sum1 = sum1.wrapping_add(u32::from(*last) << 8);
        sum2 = sum2.wrapping_add(sum1);
        sum1 = fold(sum1);
        sum2 = fold(sum2);
    }
    sum1 = fold(sum1);
    sum2 = fold(sum2);
    (sum2 << 16) | sum1
}

/// Append the checksum.
pub fn append(mut data: Vec<u8>) -> Vec<u8> {
    let sum = fletcher32(&data);
    data.extend_from_slice(&sum.to_le_bytes());
    data
}

/// Verify and remove the trailing checksum. libhdf5 also accepts the checksum byte-swapped, as
/// some old releases stored it.
pub fn verify_and_strip(mut data: Vec<u8>) -> Result<Vec<u8>, FilterError> {
    let Some((body, &stored)) = data.split_last_chunk::<4>() else {
        return Err(FilterError::Corrupt {
            filter: "fletcher32",
            reason: format!("chunk of {} bytes has no checksum", data.len()),
        });
    };
    let (body, stored) = (body.len(), u32::from_le_bytes(stored));
    data.truncate(body);
    let computed = fletcher32(&data);
    if stored != computed && stored.swap_bytes() != computed {
        return Err(FilterError::Checksum { stored, computed });
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // Words 0x6162, 0x6364, 0x6566: sum1 = 0x12a2c, sum2 = 0x25054, folded to 0x2a2d and
        // 0x5056. (The fixtures test checks libhdf5's own checksums.)
        assert_eq!(fletcher32(b"abcdef"), 0x5056_2a2d);
        assert_ne!(fletcher32(b"abcde"), fletcher32(b"abcdf"));
        let data = append(vec![1, 2, 3, 4, 5]);
        assert_eq!(verify_and_strip(data).unwrap(), vec![1, 2, 3, 4, 5]);
    }
}
