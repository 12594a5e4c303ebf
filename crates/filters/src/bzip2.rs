//! The bzip2 filter (307, PyTables' and hdf5plugin's): each chunk is one bzip2 stream;
//! client data: [block size in units of 100 kB, 1..=9]. Compression is the `bzip2` crate over
//! `libbz2-rs-sys`, a Rust port of libbzip2 (its default backend: no C); decompression is our
//! own decoder ([`crate::bunzip`]), faster than both that port and libbzip2.

use std::io::{Read, Write};

use bzip2::Compression;
use bzip2::read::BzDecoder;
use bzip2::write::BzEncoder;

use super::FilterError;

fn corrupt(reason: impl Into<String>) -> FilterError {
    FilterError::Corrupt {
        filter: "bzip2",
        reason: reason.into(),
    }
}

/// Compress with blocks of `level` × 100 kB (1..=9).
pub fn compress(data: &[u8], level: u32) -> Result<Vec<u8>, FilterError> {
    let mut e = BzEncoder::new(
        Vec::with_capacity((data.len() / 2).saturating_add(64)),
        Compression::new(level.clamp(1, 9)),
    );
    e.write_all(data)
        .and_then(|()| e.finish())
        .map_err(|err| corrupt(err.to_string()))
}

/// Whether `e` is our decoder's refusal of a randomised block.
fn randomised(e: &FilterError) -> bool {
    matches!(e, FilterError::Unsupported { what, .. } if *what == crate::bunzip::RANDOMISED)
}

/// Decode with the `bzip2` crate's port of libbzip2, which reads the randomised blocks of
/// bzip2 before 0.9.5 that [`crate::bunzip`] refuses; at most `limit` bytes into `out`
/// (cleared first), the room allocated fallibly up front.
fn decompress_reference(data: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), FilterError> {
    out.clear();
    crate::reserve(out, "bzip2", limit.saturating_add(1))?;
    BzDecoder::new(data)
        .take(u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(out)
        .map_err(|err| crate::stream_error("bzip2", &err, limit))?;
    if out.len() > limit {
        return Err(corrupt(format!("decodes past {limit} bytes")));
    }
    Ok(())
}

/// Decompress, refusing to produce more than `limit` bytes, with h5chunk's own decoder
/// ([`crate::bunzip`]; a stream of randomised blocks through the `bzip2` crate's); the
/// output's room is allocated fallibly up front and never grows.
pub fn decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, FilterError> {
    let mut out = crate::zeroed("bzip2", limit)?;
    match crate::bunzip::decode(data, &mut out) {
        Ok(n) => out.truncate(n),
        Err(e) if randomised(&e) => decompress_reference(data, limit, &mut out)?,
        Err(e) => return Err(e),
    }
    Ok(out)
}

/// Decompress into `out`, which the stream must fill exactly (the chunk's place).
pub fn decompress_into(data: &[u8], out: &mut [u8]) -> Result<(), FilterError> {
    let n = match crate::bunzip::decode(data, out) {
        Ok(n) => n,
        Err(e) if randomised(&e) => {
            let mut v = Vec::new();
            decompress_reference(data, out.len(), &mut v)?;
            let place = out
                .get_mut(..v.len())
                .ok_or_else(|| corrupt("decodes past the chunk"))?;
            place.copy_from_slice(&v);
            v.len()
        }
        Err(e) => return Err(e),
    };
    if n != out.len() {
        return Err(corrupt(format!(
            "decodes to {n} bytes where the chunk holds {}",
            out.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn randomised_blocks_go_to_the_reference_decoder() {
        let data: Vec<u8> = (0..5_000u32).flat_map(|i| (i / 7).to_le_bytes()).collect();
        let mut c = compress(&data, 9).unwrap();
        // The randomisation bit follows the header (4 bytes), the block magic (6) and the
        // block CRC (4). Set, our decoder refuses the block; the crate's decodes it as
        // randomised, so the block CRC no longer matches: corruption, not `Unsupported`.
        c[14] |= 0x80;
        let e = crate::bunzip::decode(&c, &mut vec![0; data.len()]).unwrap_err();
        assert!(randomised(&e), "{e}");
        for r in [
            decompress(&c, data.len()).map(drop),
            decompress_into(&c, &mut vec![0; data.len()]),
        ] {
            let e = r.unwrap_err();
            assert!(matches!(e, FilterError::Corrupt { .. }), "{e}");
        }
    }

    #[test]
    fn roundtrip_and_reject_corruption() {
        let data: Vec<u8> = (0..20_000u32).flat_map(|i| (i / 9).to_le_bytes()).collect();
        let c = compress(&data, 9).unwrap();
        assert!(c.len() < data.len() / 4, "{} bytes", c.len());
        assert_eq!(decompress(&c, data.len()).unwrap(), data);
        assert!(decompress(&c, data.len() - 1).is_err());
        for n in (0..c.len()).step_by(3) {
            assert!(decompress(&c[..n], data.len()).is_err(), "prefix {n}");
        }
        for i in (0..c.len()).step_by(5) {
            let mut bad = c.clone();
            bad[i] ^= 0x21;
            if let Ok(d) = decompress(&bad, data.len()) {
                assert!(d.len() <= data.len());
            }
        }
    }
}
