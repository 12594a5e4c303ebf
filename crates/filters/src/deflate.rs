//! The deflate filter (1): a zlib stream (RFC 1950) at the level of the client data.

use std::cell::RefCell;
use std::io::Write;

use flate2::write::ZlibEncoder;
use flate2::{Compression, Decompress, FlushDecompress, Status};

use super::FilterError;

fn corrupt(reason: impl Into<String>) -> FilterError {
    FilterError::Corrupt {
        filter: "deflate",
        reason: reason.into(),
    }
}

/// Compress at `level` (0..=9).
pub fn compress(data: &[u8], level: u32) -> Result<Vec<u8>, FilterError> {
    let mut e = ZlibEncoder::new(
        Vec::with_capacity((data.len() / 2).saturating_add(64)),
        Compression::new(level),
    );
    e.write_all(data)
        .and_then(|()| e.finish())
        .map_err(|err| corrupt(err.to_string()))
}

/// Decompress, refusing to produce more than `limit` bytes. The output's room (`limit` and
/// one byte, to see an overrun) is allocated fallibly up front and filled by one inflate
/// call (see [`decompress_into`]), unzeroed: the decoder writes only what it decodes.
pub fn decompress(data: &[u8], limit: usize) -> Result<Vec<u8>, FilterError> {
    let mut out = crate::buffer("deflate", limit.saturating_add(1))?;
    let status = with_inflate(|d| d.decompress_vec(data, &mut out, FlushDecompress::Finish))
        .map_err(|e| corrupt(e.to_string()))?;
    if out.len() > limit {
        return Err(corrupt(format!("inflates past {limit} bytes")));
    }
    match status {
        Status::StreamEnd => Ok(out),
        _ => Err(corrupt(format!(
            "stream ends after {} bytes, unfinished",
            out.len()
        ))),
    }
}

thread_local! {
    /// This thread's inflate state, kept from one chunk to the next and reset for each: a
    /// new one allocates zlib-rs's state (its tables and window) again.
    static INFLATE: RefCell<Option<Decompress>> = const { RefCell::new(None) };
}

/// `f` with an inflate state ready for a new zlib stream: this thread's kept one, reset, or
/// a new one when the thread's locals are torn down or a call further up holds it.
fn with_inflate<R>(f: impl FnOnce(&mut Decompress) -> R) -> R {
    let kept = INFLATE
        .try_with(|cell| cell.try_borrow_mut().ok().and_then(|mut slot| slot.take()))
        .ok()
        .flatten();
    let mut d = match kept {
        Some(mut d) => {
            d.reset(true);
            d
        }
        None => Decompress::new(true),
    };
    let result = f(&mut d);
    let _ = INFLATE.try_with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut() {
            *slot = Some(d);
        }
    });
    result
}

/// Decompress `data` to exactly `out.len()` bytes written into `out`: one inflate call over
/// the whole stream and the whole output, so the decoder copies nothing into a window (a
/// stream that finishes in one call needs none) and the output is neither grown nor zeroed.
/// Bytes after the stream's end are ignored, as libhdf5's filter ignores them.
pub fn decompress_into(data: &[u8], out: &mut [u8]) -> Result<(), FilterError> {
    with_inflate(|d| inflate(d, data, out))
}

/// [`decompress_into`] with the inflate state `d` (fresh or reset).
fn inflate(d: &mut Decompress, data: &[u8], out: &mut [u8]) -> Result<(), FilterError> {
    let want = out.len();
    let status = d
        .decompress(data, out, FlushDecompress::Finish)
        .map_err(|e| corrupt(e.to_string()))?;
    let got = usize::try_from(d.total_out()).unwrap_or(usize::MAX);
    match status {
        Status::StreamEnd if got == want => Ok(()),
        Status::StreamEnd => Err(corrupt(format!("inflates to {got} bytes, expected {want}"))),
        // The output is full but the stream goes on: more bytes than the chunk holds, or
        // only its checksum left (a stream that ends without it is truncated).
        _ if got == want => {
            let mut more = [0u8; 1];
            let rest = data
                .get(usize::try_from(d.total_in()).unwrap_or(usize::MAX)..)
                .unwrap_or_default();
            match d.decompress(rest, &mut more, FlushDecompress::Finish) {
                Ok(Status::StreamEnd) if d.total_out() == want as u64 => Ok(()),
                Ok(_) if d.total_out() > want as u64 => {
                    Err(corrupt(format!("inflates past {want} bytes")))
                }
                Ok(_) => Err(corrupt("stream ends before its checksum")),
                Err(e) => Err(corrupt(e.to_string())),
            }
        }
        _ => Err(corrupt(format!(
            "stream ends after {got} bytes, expected {want}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_call_inflate_agrees_with_the_stream_and_refuses_what_libhdf5_refuses() {
        let data: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i / 13).to_le_bytes())
            .collect();
        let z = compress(&data, 4).unwrap();
        // Into a place, and into a new buffer, on one thread in turn (the kept state reset
        // between them), trailing bytes after the stream ignored as libhdf5 ignores them.
        let mut trailing = z.clone();
        trailing.extend_from_slice(b"after the stream");
        for stored in [&z, &trailing, &z] {
            let mut out = vec![0u8; data.len()];
            decompress_into(stored, &mut out).unwrap();
            assert_eq!(out, data);
            assert_eq!(decompress(stored, data.len()).unwrap(), data);
        }
        // A place of another size: too small (the stream goes on) or too large (it ends).
        for len in [data.len() - 1, data.len() + 1] {
            let mut out = vec![0u8; len];
            assert!(decompress_into(&z, &mut out).is_err(), "{len}");
        }
        assert!(decompress(&z, data.len() - 1).is_err());
        // A stream cut anywhere, its Adler-32 included, and a wrong checksum are errors.
        for cut in (0..z.len()).step_by(1009).chain(z.len() - 4..z.len()) {
            let mut out = vec![0u8; data.len()];
            assert!(decompress_into(&z[..cut], &mut out).is_err(), "{cut}");
            assert!(decompress(&z[..cut], data.len()).is_err(), "{cut}");
        }
        let mut bad = z.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert!(decompress_into(&bad, &mut vec![0u8; data.len()]).is_err());
        assert!(decompress(&bad, data.len()).is_err());
    }
}
