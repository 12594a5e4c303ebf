//! File addresses, and the all-ones value of a field of any width (the undefined address).

use core::fmt;

/// A byte address in the file, relative to the superblock's base address.
///
/// The all-ones "undefined address" never becomes an `Addr`: decoders turn it into `None`, so
/// an `Option<Addr>` is how the code says "not allocated".
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Addr(pub u64);

impl Addr {
    /// The address as a plain integer.
    #[inline]
    pub const fn get(self) -> u64 {
        self.0
    }

    /// This address plus `n` bytes, or `None` on overflow.
    #[inline]
    pub fn checked_add(self, n: u64) -> Option<Addr> {
        self.0.checked_add(n).map(Addr)
    }
}

impl fmt::Debug for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl From<u64> for Addr {
    fn from(v: u64) -> Self {
        Addr(v)
    }
}

/// The value of a `width`-byte field with every bit set (`width` in 1..=8).
#[inline]
pub const fn all_ones(width: u8) -> u64 {
    if width >= 8 {
        u64::MAX
    } else if width == 0 {
        0
    } else {
        // 1 <= width <= 7: the shift is 8..=56.
        u64::MAX >> 64u32.wrapping_sub(8u32.wrapping_mul(width as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_ones_by_width() {
        assert_eq!(all_ones(2), 0xffff);
        assert_eq!(all_ones(4), 0xffff_ffff);
        assert_eq!(all_ones(8), u64::MAX);
    }
}
