//! Entry classes for the cache's tests.

#![allow(dead_code)]

use h5chunk_cache::CacheEntry;
use h5chunk_format::cursor::{Decoder, Encoder, verify_checksum};
use h5chunk_format::{Addr, Error as FormatError, Sizes};

/// A variable-length checksummed test block.
///
/// | bytes | field                                  |
/// |-------|----------------------------------------|
/// | 4     | signature `TBLK`                       |
/// | 4     | payload length n (u32 LE)              |
/// | n     | payload                                |
/// | 4     | lookup3 of everything before           |
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    pub payload: Vec<u8>,
}

pub const SIGNATURE: [u8; 4] = *b"TBLK";

impl Block {
    pub fn new(payload: impl Into<Vec<u8>>) -> Self {
        Block {
            payload: payload.into(),
        }
    }

    /// The image length of a block with `n` payload bytes.
    pub fn len_for(n: usize) -> usize {
        12 + n
    }
}

fn check_signature(d: &mut Decoder<'_>, at: Addr) -> h5chunk_format::Result<()> {
    let sig = d.array::<4>()?;
    if sig != SIGNATURE {
        return Err(FormatError::BadSignature {
            structure: "TBLK",
            at,
            expected: &SIGNATURE,
            found: sig.to_vec(),
        });
    }
    Ok(())
}

impl CacheEntry for Block {
    type Context = ();
    const TYPE_NAME: &'static str = "TBLK";
    const CHECKSUMMED: bool = true;

    fn initial_load_len(_: &()) -> usize {
        16
    }

    fn final_load_len(prefix: &[u8], at: Addr, _: &()) -> h5chunk_format::Result<usize> {
        let mut d = Decoder::new(prefix, at, Sizes::DEFAULT, "TBLK");
        check_signature(&mut d, at)?;
        let n = d.u32()?;
        Ok(Block::len_for(n as usize))
    }

    fn decode(image: &[u8], at: Addr, _: &()) -> h5chunk_format::Result<Self> {
        let covered = image.len().saturating_sub(4);
        verify_checksum(image, covered, at, "TBLK")?;
        let mut d = Decoder::new(&image[..covered], at, Sizes::DEFAULT, "TBLK");
        check_signature(&mut d, at)?;
        let n = d.u32()? as usize;
        let payload = d.bytes(n)?.to_vec();
        if !d.is_empty() {
            return Err(d.invalid(d.addr(), "trailing bytes"));
        }
        Ok(Block { payload })
    }

    fn image_len(&self) -> usize {
        Block::len_for(self.payload.len())
    }

    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        let mut e = Encoder::new(out, Sizes::DEFAULT, "TBLK");
        e.bytes(&SIGNATURE);
        e.u32(self.payload.len() as u32);
        e.bytes(&self.payload);
        e.checksum();
        Ok(())
    }
}

/// A fixed 8-byte block without a checksum (like a v1 B-tree node): `PLN0` then a u32.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plain(pub u32);

impl CacheEntry for Plain {
    type Context = ();
    const TYPE_NAME: &'static str = "PLN0";
    const CHECKSUMMED: bool = false;

    fn initial_load_len(_: &()) -> usize {
        8
    }

    fn decode(image: &[u8], at: Addr, _: &()) -> h5chunk_format::Result<Self> {
        let mut d = Decoder::new(image, at, Sizes::DEFAULT, "PLN0");
        let sig = d.array::<4>()?;
        if &sig != b"PLN0" {
            return Err(FormatError::BadSignature {
                structure: "PLN0",
                at,
                expected: b"PLN0",
                found: sig.to_vec(),
            });
        }
        Ok(Plain(d.u32()?))
    }

    fn image_len(&self) -> usize {
        8
    }

    fn encode(&self, out: &mut Vec<u8>) -> h5chunk_format::Result<()> {
        out.extend_from_slice(b"PLN0");
        out.extend_from_slice(&self.0.to_le_bytes());
        Ok(())
    }
}
