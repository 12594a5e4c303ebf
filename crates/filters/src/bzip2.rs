//! The bzip2 filter (307, PyTables' and hdf5plugin's): each chunk is one bzip2 stream;
//! client data: [block size in units of 100 kB, 1..=9]. Compression is the `bzip2` crate over
//! `libbz2-rs-sys`, a Rust port of libbzip2 (its default backend: no C); decompression is our
//! own decoder ([`crate::bunzip`]), faster than both that port and libbzip2.

use std::io::Write;

use bzip2::Compression;
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

/// Decompress, refusing to produce more than `limit` bytes, with h5chunk's own decoder
/// ([`crate::bunzip`]); the output's room is allocated fallibly up front and never grows.
pub fn decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, FilterError> {
    let mut out = crate::zeroed("bzip2", limit)?;
    let n = crate::bunzip::decode(data, &mut out)?;
    out.truncate(n);
    Ok(out)
}

/// Decompress into `out`, which the stream must fill exactly (the chunk's place).
pub fn decompress_into(data: &[u8], out: &mut [u8]) -> Result<(), FilterError> {
    let n = crate::bunzip::decode(data, out)?;
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
