//! Group Info message (type 0x000A): a new-style group's storage thresholds.
//!
//! | size | field                                                                   |
//! |------|-------------------------------------------------------------------------|
//! | 1    | version = 0                                                             |
//! | 1    | flags: bit 0 link phase change values stored; bit 1 estimates stored    |
//! | 2    | maximum compact value (flag bit 0; default 8)                           |
//! | 2    | minimum dense value (flag bit 0; default 6)                             |
//! | 2    | estimated number of entries (flag bit 1; default 4)                     |
//! | 2    | estimated link name length of entries (flag bit 1; default 8)           |

use crate::cursor::{Decoder, Encoder};
use crate::error::Result;

const FLAG_PHASE_CHANGE: u8 = 0x01;
const FLAG_ESTIMATES: u8 = 0x02;

/// Link phase change values: when a group switches between compact and dense storage.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct LinkPhaseChange {
    /// Maximum number of links in compact storage.
    pub max_compact: u16,
    /// Minimum number of links in dense storage.
    pub min_dense: u16,
}

/// Estimated entry information.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct EntryEstimates {
    /// Estimated number of entries.
    pub num_entries: u16,
    /// Estimated link name length of entries.
    pub name_length: u16,
}

/// A decoded Group Info message. The default (`00 00`) means 8 / 6 / 4 / 8.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct GroupInfo {
    /// Link phase change values, if stored.
    pub link_phase_change: Option<LinkPhaseChange>,
    /// Estimated entry information, if stored.
    pub estimates: Option<EntryEstimates>,
}

impl GroupInfo {
    /// Decode a Group Info message body.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        let at = d.addr();
        let version = d.u8()?;
        if version != 0 {
            return Err(d.bad_version(at, version));
        }
        let at = d.addr();
        let flags = d.u8()?;
        if flags & !(FLAG_PHASE_CHANGE | FLAG_ESTIMATES) != 0 {
            return Err(d.bad_value(at, "flags", u64::from(flags)));
        }
        let link_phase_change = if flags & FLAG_PHASE_CHANGE != 0 {
            Some(LinkPhaseChange {
                max_compact: d.u16()?,
                min_dense: d.u16()?,
            })
        } else {
            None
        };
        let estimates = if flags & FLAG_ESTIMATES != 0 {
            Some(EntryEstimates {
                num_entries: d.u16()?,
                name_length: d.u16()?,
            })
        } else {
            None
        };
        Ok(GroupInfo {
            link_phase_change,
            estimates,
        })
    }

    /// Encode a Group Info message body.
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        let mut flags = 0;
        if self.link_phase_change.is_some() {
            flags |= FLAG_PHASE_CHANGE;
        }
        if self.estimates.is_some() {
            flags |= FLAG_ESTIMATES;
        }
        e.u8(0);
        e.u8(flags);
        if let Some(p) = self.link_phase_change {
            e.u16(p.max_compact);
            e.u16(p.min_dense);
        }
        if let Some(s) = self.estimates {
            e.u16(s.num_entries);
            e.u16(s.name_length);
        }
        Ok(())
    }

    /// The body's encoded length.
    pub fn encoded_len(&self) -> usize {
        let mut n = 2usize;
        if self.link_phase_change.is_some() {
            n = n.saturating_add(4);
        }
        if self.estimates.is_some() {
            n = n.saturating_add(4);
        }
        n
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::arithmetic_side_effects
)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::{Addr, Sizes};

    const S: &str = "Group Info message";

    fn decode(body: &[u8]) -> Result<GroupInfo> {
        GroupInfo::decode(&mut Decoder::new(body, Addr(0x51), Sizes::DEFAULT, S))
    }

    fn encode(g: &GroupInfo) -> Vec<u8> {
        let mut out = Vec::new();
        g.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, S))
            .unwrap();
        assert_eq!(out.len(), g.encoded_len());
        out
    }

    #[rustfmt::skip]
    const FULL: [u8; 10] = [
        0x00,       // version 0
        0x03,       // flags: phase change and estimates stored
        0x10, 0x00, // max compact 16
        0x0c, 0x00, // min dense 12
        0x20, 0x00, // estimated entries 32
        0x12, 0x00, // estimated name length 18
    ];

    #[test]
    fn decode_h5py_default_and_full() {
        #[rustfmt::skip]
        let default = [
            0x00, // version 0
            0x00, // flags: nothing stored
        ];
        let g = decode(&default).unwrap();
        assert_eq!(g, GroupInfo::default());
        assert_eq!(encode(&g), default);
        let g = decode(&FULL).unwrap();
        assert_eq!(
            g.link_phase_change,
            Some(LinkPhaseChange {
                max_compact: 16,
                min_dense: 12
            })
        );
        assert_eq!(
            g.estimates,
            Some(EntryEstimates {
                num_entries: 32,
                name_length: 18
            })
        );
        assert_eq!(encode(&g), FULL);
    }

    #[test]
    fn rejects_truncation() {
        for n in 0..FULL.len() {
            assert!(decode(&FULL[..n]).is_err(), "prefix {n}");
        }
    }

    #[test]
    fn rejects_bad_values_with_address() {
        assert!(matches!(
            decode(&[1, 0]),
            Err(Error::BadVersion {
                at: Addr(0x51),
                version: 1,
                ..
            })
        ));
        assert!(matches!(
            decode(&[0, 4]),
            Err(Error::BadValue {
                at: Addr(0x52),
                value: 4,
                ..
            })
        ));
    }
}
