//! Modification Time message (type 0x0012) and the old Modification Time message (0x000E).
//!
//! Modification Time:
//!
//! | size | field                                  |
//! |------|----------------------------------------|
//! | 1    | version = 1                            |
//! | 3    | reserved (zero)                        |
//! | 4    | seconds since the Unix epoch (u32)     |
//!
//! Old Modification Time (never written by current libhdf5):
//!
//! | size | field                                           |
//! |------|-------------------------------------------------|
//! | 14   | ASCII digits `YYYYMMDDhhmmss` (UTC)             |
//! | 2    | reserved (zero)                                 |

use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};

use super::reserved;

/// A decoded Modification Time message.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ModificationTime {
    /// Seconds since the Unix epoch.
    pub seconds: u32,
}

impl ModificationTime {
    /// Decode a Modification Time message body.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        let at = d.addr();
        let version = d.u8()?;
        if version != 1 {
            return Err(d.bad_version(at, version));
        }
        reserved(d, 3)?;
        Ok(ModificationTime { seconds: d.u32()? })
    }

    /// Encode a Modification Time message body.
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        e.u8(1);
        e.zeros(3);
        e.u32(self.seconds);
        Ok(())
    }

    /// The body's encoded length.
    pub fn encoded_len() -> usize {
        8
    }
}

/// A decoded old Modification Time message: a calendar time in UTC.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct ModificationTimeOld {
    /// Year (four digits).
    pub year: u16,
    /// Month (two digits).
    pub month: u8,
    /// Day of the month (two digits).
    pub day: u8,
    /// Hour (two digits).
    pub hour: u8,
    /// Minute (two digits).
    pub minute: u8,
    /// Second (two digits).
    pub second: u8,
}

impl ModificationTimeOld {
    /// Decode an old Modification Time message body.
    pub fn decode(d: &mut Decoder<'_>) -> Result<Self> {
        let at = d.addr();
        let digits = d.array::<14>()?;
        let mut values = [0u16; 6];
        let mut pos = 0usize;
        for (value, width) in values.iter_mut().zip([4usize, 2, 2, 2, 2, 2]) {
            for _ in 0..width {
                let b = digits.get(pos).copied().unwrap_or(0);
                if !b.is_ascii_digit() {
                    let at = at.checked_add(pos as u64).unwrap_or(at);
                    return Err(d.bad_value(at, "time digit", u64::from(b)));
                }
                *value = value
                    .saturating_mul(10)
                    .saturating_add(u16::from(b.saturating_sub(b'0')));
                pos = pos.saturating_add(1);
            }
        }
        reserved(d, 2)?;
        let [year, month, day, hour, minute, second] = values;
        let two = |v: u16| u8::try_from(v).unwrap_or(u8::MAX);
        Ok(ModificationTimeOld {
            year,
            month: two(month),
            day: two(day),
            hour: two(hour),
            minute: two(minute),
            second: two(second),
        })
    }

    /// Encode an old Modification Time message body.
    pub fn encode(&self, e: &mut Encoder<'_>) -> Result<()> {
        let fields = [self.month, self.day, self.hour, self.minute, self.second];
        if self.year > 9999 || fields.iter().any(|&v| v > 99) {
            return Err(Error::Unencodable {
                structure: "Modification Time (old) message",
                reason: format!("{self:?} does not fit YYYYMMDDhhmmss"),
            });
        }
        let mut text = format!("{:04}", self.year);
        for v in fields {
            text.push_str(&format!("{v:02}"));
        }
        e.bytes(text.as_bytes());
        e.zeros(2);
        Ok(())
    }

    /// The body's encoded length.
    pub fn encoded_len() -> usize {
        16
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
    use crate::{Addr, Sizes};

    #[rustfmt::skip]
    const NEW: [u8; 8] = [
        0x01,                   // version 1
        0x00, 0x00, 0x00,       // reserved
        0x46, 0x37, 0x02, 0x6b, // seconds 0x6b023746
    ];

    fn new(body: &[u8]) -> Result<ModificationTime> {
        ModificationTime::decode(&mut Decoder::new(
            body,
            Addr(0x40),
            Sizes::DEFAULT,
            "Modification Time message",
        ))
    }

    fn old(body: &[u8]) -> Result<ModificationTimeOld> {
        ModificationTimeOld::decode(&mut Decoder::new(
            body,
            Addr(0x40),
            Sizes::DEFAULT,
            "Modification Time (old) message",
        ))
    }

    #[test]
    fn roundtrip_modification_time() {
        let m = new(&NEW).unwrap();
        assert_eq!(m.seconds, 0x6b02_3746);
        let mut out = Vec::new();
        m.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, "x"))
            .unwrap();
        assert_eq!(out, NEW);
        assert_eq!(ModificationTime::encoded_len(), 8);
    }

    #[test]
    fn roundtrip_old_modification_time() {
        let mut body = b"20260102030405".to_vec(); // YYYYMMDDhhmmss
        body.extend_from_slice(&[0, 0]); // reserved
        let m = old(&body).unwrap();
        assert_eq!(
            m,
            ModificationTimeOld {
                year: 2026,
                month: 1,
                day: 2,
                hour: 3,
                minute: 4,
                second: 5
            }
        );
        let mut out = Vec::new();
        m.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, "x"))
            .unwrap();
        assert_eq!(out, body);
        assert_eq!(ModificationTimeOld::encoded_len(), 16);
        let bad = ModificationTimeOld { month: 100, ..m };
        assert!(matches!(
            bad.encode(&mut Encoder::new(&mut out, Sizes::DEFAULT, "x")),
            Err(Error::Unencodable { .. })
        ));
        for n in 0..body.len() {
            assert!(old(&body[..n]).is_err(), "prefix {n}");
        }
        let mut b = body.clone();
        b[5] = b'x';
        assert!(matches!(
            old(&b),
            Err(Error::BadValue { at: Addr(0x45), .. })
        ));
        let mut b = body.clone();
        b[15] = 1;
        assert!(matches!(
            old(&b),
            Err(Error::BadValue { at: Addr(0x4f), .. })
        ));
    }

    #[test]
    fn rejects_truncation() {
        for n in 0..NEW.len() {
            assert!(new(&NEW[..n]).is_err(), "prefix {n}");
        }
    }

    #[test]
    fn rejects_bad_values_with_address() {
        let mut b = NEW;
        b[0] = 2;
        assert!(matches!(
            new(&b),
            Err(Error::BadVersion {
                at: Addr(0x40),
                version: 2,
                ..
            })
        ));
        let mut b = NEW;
        b[2] = 1;
        assert!(matches!(
            new(&b),
            Err(Error::BadValue { at: Addr(0x42), .. })
        ));
    }
}
