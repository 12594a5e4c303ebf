//! The fletcher32 filter (3): HDF5's Fletcher checksum of the chunk, appended as a
//! little-endian `u32`. It is not the metadata checksum (lookup3).

use super::FilterError;

/// HDF5's Fletcher-32: 16-bit words taken big-endian (a trailing odd byte is the high byte of
/// a last word), both sums folded to 16 bits at least every 360 words.
pub fn fletcher32(data: &[u8]) -> u32 {
    let (mut sum1, mut sum2) = (0u32, 0u32);
    let mut words = data.chunks_exact(2);
    for block in words.by_ref().collect::<Vec<_>>().chunks(360) {
        for w in block {
            sum1 += u32::from(w[0]) << 8 | u32::from(w[1]);
            sum2 += sum1;
        }
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    if let [last] = words.remainder() {
        sum1 += u32::from(*last) << 8;
        sum2 += sum1;
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
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
    let Some(body) = data.len().checked_sub(4) else {
        return Err(FilterError::Corrupt {
            filter: "fletcher32",
            reason: format!("chunk of {} bytes has no checksum", data.len()),
        });
    };
    let mut stored = [0u8; 4];
    stored.copy_from_slice(&data[body..]);
    let stored = u32::from_le_bytes(stored);
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
