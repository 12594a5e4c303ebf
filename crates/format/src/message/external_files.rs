//! External Data Files message (type 0x0007): a contiguous dataset whose bytes live in other
//! files (`H5Pset_external`, h5py's `external=[(name, offset, size), ...]`). The dataset's
//! bytes are the slots' regions one after the other; the layout message says contiguous with
//! an undefined address.
//!
//! | field            | size | meaning                                              |
//! |------------------|------|------------------------------------------------------|
//! | version          | 1    | 1                                                    |
//! | reserved         | 3    | zero                                                 |
//! | allocated slots  | 2    | slots the message has room for (≥ used)              |
//! | used slots       | 2    | slots that follow                                    |
//! | heap address     | O    | local heap holding the file names                    |
//! | slots            | 3L each | name offset in the heap, offset in the file, size |
//!
//! A slot's size of all ones means "unlimited" (the file may grow; only the last slot).

use crate::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};

const STRUCTURE: &str = "external data files message";

/// One external file's part of the dataset.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ExternalSlot {
    /// Offset of the file's NUL-terminated name in the local heap.
    pub name_offset: u64,
    /// Where the part starts in that file.
    pub offset: u64,
    /// The part's bytes; `None`: unlimited (to the end of the dataset).
    pub size: Option<u64>,
}

/// The External Data Files message.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ExternalFiles {
    /// The "allocated slots" field, kept so the message re-encodes identically.
    pub allocated: u16,
    /// The local heap of file names.
    pub heap: Addr,
    /// The parts, in the dataset's byte order.
    pub slots: Vec<ExternalSlot>,
}

impl ExternalFiles {
    /// Decode a message body (its bytes only: the slot count is checked against them before
    /// anything is allocated for the slots).
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        let version_at = d.addr();
        let version = d.u8()?;
        if version != 1 {
            return Err(d.bad_version(version_at, version));
        }
        d.skip(3)?;
        let allocated = d.u16()?;
        let used_at = d.addr();
        let used = d.u16()?;
        if used > allocated {
            return Err(d.bad_value(used_at, "used slots", u64::from(used)));
        }
        let heap = d.defined_offset("heap address")?;
        let slot_len = usize::from(d.sizes().lengths()).saturating_mul(3);
        if usize::from(used).saturating_mul(slot_len) > d.remaining() {
            return Err(d.bad_value(used_at, "used slots", u64::from(used)));
        }
        let mut slots = Vec::with_capacity(usize::from(used));
        for _ in 0..used {
            let name_offset = d.length()?;
            let offset = d.length()?;
            let size = d.length_or_undef()?;
            slots.push(ExternalSlot {
                name_offset,
                offset,
                size,
            });
        }
        // Room for the allocated but unused slots follows, as libhdf5 leaves it.
        d.skip(d.remaining())?;
        Ok(ExternalFiles {
            allocated,
            heap,
            slots,
        })
    }

    /// Encode the body, with room for `allocated` slots (at least the used ones).
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        let used = u16::try_from(self.slots.len()).map_err(|_| Error::TooWide {
            structure: STRUCTURE,
            field: "used slots",
            value: self.slots.len() as u64,
            width: 2,
        })?;
        e.u8(1);
        e.zeros(3);
        e.u16(self.allocated.max(used));
        e.u16(used);
        e.offset(Some(self.heap), "heap address")?;
        for s in &self.slots {
            e.length(s.name_offset, "name offset")?;
            e.length(s.offset, "file offset")?;
            e.length_or_undef(s.size, "size")?;
        }
        let spare = usize::from(self.allocated.max(used).saturating_sub(used));
        e.zeros(spare.saturating_mul(usize::from(e.sizes().lengths()).saturating_mul(3)));
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::sizes::Sizes;

    #[test]
    fn round_trips_and_refuses_more_slots_than_bytes() {
        let sizes = Sizes::DEFAULT;
        let m = ExternalFiles {
            allocated: 3,
            heap: Addr(96),
            slots: vec![
                ExternalSlot {
                    name_offset: 8,
                    offset: 0,
                    size: Some(16),
                },
                ExternalSlot {
                    name_offset: 24,
                    offset: 8,
                    size: None,
                },
            ],
        };
        let mut out = Vec::new();
        m.encode(&mut Encoder::new(&mut out, sizes, STRUCTURE))
            .unwrap();
        assert_eq!(out.len(), 8 + 8 + 3 * 24);
        let back =
            ExternalFiles::decode(&mut Decoder::new(&out, Addr(0), sizes, STRUCTURE)).unwrap();
        assert_eq!(back, m);
        // 2 used slots claimed by a body with room for none.
        let short = &out[..16];
        assert!(
            ExternalFiles::decode(&mut Decoder::new(short, Addr(0), sizes, STRUCTURE)).is_err()
        );
        // More used than allocated.
        let mut bad = out.clone();
        bad[4] = 1;
        assert!(ExternalFiles::decode(&mut Decoder::new(&bad, Addr(0), sizes, STRUCTURE)).is_err());
    }
}
