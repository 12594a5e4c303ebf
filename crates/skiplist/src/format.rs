//! The on-disk encodings of the skip list: the tail node and the supernode, and their metadata
//! cache classes. Normative spec: `docs/format/skiplist.md` (§2 slots, §4 tail, §5 supernode).
//!
//! Tail node (`20 + L + 3·M·O` bytes):
//!
//! | offset     | size      | field                                               |
//! |------------|-----------|-----------------------------------------------------|
//! | 0          | 4         | signature `SKLT`                                    |
//! | 4          | 1         | version 0                                           |
//! | 5          | 1         | element class (0 unfiltered, 1 filtered)            |
//! | 6          | 1         | chunk size width W (0, or 1..=8 when filtered)      |
//! | 7          | 1         | max height M (1..=63)                               |
//! | 8          | 4         | steps per supernode S                               |
//! | 12         | 4         | group length G                                      |
//! | 16         | L         | number of steps                                     |
//! | 16+L       | 3·M·O     | per level: right-most, left-most, ghost addresses   |
//! | 16+L+3MO   | 4         | lookup3 checksum                                    |
//!
//! Supernode (`10 + O + L + 2·h·O + S·G·E` bytes):
//!
//! | offset     | size      | field                                               |
//! |------------|-----------|-----------------------------------------------------|
//! | 0          | 4         | signature `SKLS`                                    |
//! | 4          | 1         | version 0                                           |
//! | 5          | 1         | height h                                            |
//! | 6          | O         | tail address                                        |
//! | 6+O        | L         | supernode index k (h = tz(k) + 1)                   |
//! | 6+O+L      | h·O       | back pointers, level 1 first                        |
//! | 6+O+L+hO   | h·O       | forward pointers, level 1 first                     |
//! | 6+O+L+2hO  | S·G·E     | slots                                               |
//! | end-4      | 4         | lookup3 checksum                                    |

use h5chunk_cache::CacheEntry;
use h5chunk_format::chunk_record::{ChunkRecord, RecordCodec};
use h5chunk_format::cursor::{Decoder, Encoder};
use h5chunk_format::{Addr, Error as FormatError, Result as FormatResult, Sizes};

use crate::shape;

/// The tail node's signature.
pub const TAIL_SIGNATURE: [u8; 4] = *b"SKLT";
/// The supernode's signature.
pub const SUPERNODE_SIGNATURE: [u8; 4] = *b"SKLS";
/// The only version of both blocks.
pub const VERSION: u8 = 0;
/// The greatest max height: supernode indices stay below 2^63.
pub const MAX_HEIGHT: u8 = 63;
/// The most slots a supernode may hold (steps per supernode × group length).
pub const MAX_SLOTS: u64 = 1 << 24;

/// What a slot holds (§2): as the extensible array's element classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementClass {
    /// The chunk address alone.
    Unfiltered,
    /// Chunk address, chunk size (`size_width` bytes) and filter mask.
    Filtered {
        /// Width of the chunk size field, 1 to 8.
        size_width: u8,
    },
}

/// The creation parameters of a list (§2), stored in its tail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// The slots' element class.
    pub class: ElementClass,
    /// The greatest supernode height the list can hold (1 to 63); the list holds at most
    /// `2^max_height - 1` supernodes. Fixes the tail's size.
    pub max_height: u8,
    /// Steps of the unlimited dimension per supernode: the supernode size.
    pub steps_per_supernode: u32,
    /// Chunk slots per step of the unlimited dimension (paper §XXI); 1 for 1-D datasets.
    pub group_len: u32,
}

impl Default for Params {
    /// Unfiltered, max height 32, 64 steps per supernode, one slot per step.
    fn default() -> Self {
        Params {
            class: ElementClass::Unfiltered,
            max_height: 32,
            steps_per_supernode: 64,
            group_len: 1,
        }
    }
}

impl Params {
    /// Check the limits of §2; the reason names the parameter at fault.
    pub fn validate(&self) -> Result<(), &'static str> {
        if !(1..=MAX_HEIGHT).contains(&self.max_height) {
            return Err("max height must be 1 to 63");
        }
        if self.steps_per_supernode == 0 {
            return Err("steps per supernode must be at least 1");
        }
        if self.group_len == 0 {
            return Err("group length must be at least 1");
        }
        if u64::from(self.steps_per_supernode).saturating_mul(u64::from(self.group_len)) > MAX_SLOTS
        {
            return Err("steps per supernode × group length exceeds 2^24 slots");
        }
        if let ElementClass::Filtered { size_width } = self.class
            && !(1..=8).contains(&size_width)
        {
            return Err("chunk size width must be 1 to 8");
        }
        Ok(())
    }

    /// Slots per supernode, `S × G`.
    pub fn slots_per_supernode(&self) -> u64 {
        u64::from(self.steps_per_supernode).saturating_mul(u64::from(self.group_len))
    }

    /// The slot codec under `sizes`.
    pub fn codec(&self, sizes: Sizes) -> FormatResult<RecordCodec> {
        match self.class {
            ElementClass::Unfiltered => Ok(RecordCodec::unfiltered(sizes)),
            ElementClass::Filtered { size_width } => RecordCodec::filtered(sizes, size_width),
        }
    }

    /// The most supernodes a list with these parameters can hold: `2^M - 1`.
    pub fn max_supernodes(&self) -> u64 {
        1u64.checked_shl(u32::from(self.max_height))
            .map_or(u64::MAX, |p| p.saturating_sub(1))
    }
}

/// The addresses the tail keeps for one level (§4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TailLevel {
    /// The right-most supernode of exactly this height.
    pub rightmost: Option<Addr>,
    /// The left-most supernode of this height (supernode `2^(level-1)`).
    pub leftmost: Option<Addr>,
    /// The space reserved for the ghost of this level.
    pub ghost: Option<Addr>,
}

/// The tail node (§4): the list's parameters, its length in steps and its pointers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tail {
    /// The superblock's widths.
    pub sizes: Sizes,
    /// The creation parameters.
    pub params: Params,
    /// Steps of the unlimited dimension covered.
    pub steps: u64,
    /// One entry per level `1..=max_height`.
    pub levels: Vec<TailLevel>,
}

impl Tail {
    /// The encoded length for max height `max_height`.
    pub fn encoded_len(sizes: Sizes, max_height: u8) -> usize {
        let o = usize::from(sizes.offsets());
        20usize
            .saturating_add(usize::from(sizes.lengths()))
            .saturating_add(o.saturating_mul(3).saturating_mul(usize::from(max_height)))
    }

    /// The number of supernodes, `ceil(steps / S)`.
    pub fn supernodes(&self) -> u64 {
        self.steps
            .div_ceil(u64::from(self.params.steps_per_supernode.max(1)))
    }

    /// The level entry (1-based), if the level exists.
    pub fn level(&self, level: u32) -> Option<&TailLevel> {
        self.levels
            .get(usize::try_from(level.checked_sub(1)?).ok()?)
    }

    /// Mutable level entry (1-based).
    pub fn level_mut(&mut self, level: u32) -> Option<&mut TailLevel> {
        self.levels
            .get_mut(usize::try_from(level.checked_sub(1)?).ok()?)
    }

    /// Decode and validate a tail image (checksum first, then fields, then the invariants of
    /// §3 and §4 that the tail alone can check).
    pub fn decode(image: &[u8], at: Addr, sizes: Sizes) -> FormatResult<Tail> {
        let mut d = Decoder::new(image, at, sizes, "SKLT");
        let covered = image
            .len()
            .checked_sub(4)
            .ok_or_else(|| truncated("SKLT", at, 4, image.len()))?;
        d.verify_checksum(covered)?;
        d.signature(&TAIL_SIGNATURE)?;
        let vat = d.addr();
        let version = d.u8()?;
        if version != VERSION {
            return Err(d.bad_version(vat, version));
        }
        let cat = d.addr();
        let class = d.u8()?;
        let wat = d.addr();
        let width = d.u8()?;
        let class = match (class, width) {
            (0, 0) => ElementClass::Unfiltered,
            (1, 1..=8) => ElementClass::Filtered { size_width: width },
            (0 | 1, w) => return Err(d.bad_value(wat, "chunk size width", u64::from(w))),
            (c, _) => return Err(d.bad_value(cat, "element class", u64::from(c))),
        };
        let mat = d.addr();
        let max_height = d.u8()?;
        let sat = d.addr();
        let steps_per_supernode = d.u32()?;
        let group_len = d.u32()?;
        let params = Params {
            class,
            max_height,
            steps_per_supernode,
            group_len,
        };
        if let Err(reason) = params.validate() {
            let at = if reason.starts_with("max") { mat } else { sat };
            return Err(d.invalid(at, reason));
        }
        if image.len() != Tail::encoded_len(sizes, max_height) {
            return Err(d.invalid(at, "image length does not match the max height"));
        }
        let nat = d.addr();
        let steps = d.length()?;
        let tail = |levels| Tail {
            sizes,
            params,
            steps,
            levels,
        };
        let n = tail(Vec::new()).supernodes();
        if n > params.max_supernodes() {
            return Err(d.bad_value(nat, "number of steps", steps));
        }
        let mut levels = Vec::with_capacity(usize::from(max_height));
        let top = shape::top_height(n);
        for l in 1..=u32::from(max_height) {
            let lat = d.addr();
            let entry = TailLevel {
                rightmost: d.offset()?,
                leftmost: d.offset()?,
                ghost: d.offset()?,
            };
            let ghost_possible =
                shape::ghost(n, l).is_some_and(|g| shape::height(g) <= u32::from(max_height));
            let ok = if l <= top {
                entry.rightmost.is_some()
                    && entry.leftmost.is_some()
                    && entry.ghost.is_some() == ghost_possible
            } else {
                entry == TailLevel::default()
            };
            if !ok {
                return Err(d.invalid(
                    lat,
                    format!("pointers of level {l} do not fit a list of {n} supernodes"),
                ));
            }
            levels.push(entry);
        }
        Ok(tail(levels))
    }

    /// Append the image, checksum last.
    pub fn encode(&self, out: &mut Vec<u8>) -> FormatResult<()> {
        let mut e = Encoder::new(out, self.sizes, "SKLT");
        e.bytes(&TAIL_SIGNATURE);
        e.u8(VERSION);
        match self.params.class {
            ElementClass::Unfiltered => {
                e.u8(0);
                e.u8(0);
            }
            ElementClass::Filtered { size_width } => {
                e.u8(1);
                e.u8(size_width);
            }
        }
        e.u8(self.params.max_height);
        e.u32(self.params.steps_per_supernode);
        e.u32(self.params.group_len);
        e.length(self.steps, "number of steps")?;
        for l in &self.levels {
            e.offset(l.rightmost, "right-most pointer")?;
            e.offset(l.leftmost, "left-most pointer")?;
            e.offset(l.ghost, "ghost pointer")?;
        }
        e.checksum();
        Ok(())
    }
}

fn truncated(structure: &'static str, at: Addr, needed: usize, available: usize) -> FormatError {
    FormatError::Truncated {
        structure,
        at,
        needed: needed as u64,
        available: available as u64,
    }
}

impl CacheEntry for Tail {
    type Context = Sizes;
    const TYPE_NAME: &'static str = "SKLT";
    const CHECKSUMMED: bool = true;

    fn initial_load_len(sizes: &Sizes) -> usize {
        // Up to and including the max height byte, which gives the full length.
        16usize.saturating_add(usize::from(sizes.lengths()))
    }

    fn final_load_len(prefix: &[u8], at: Addr, sizes: &Sizes) -> FormatResult<usize> {
        let mut d = Decoder::new(prefix, at, *sizes, "SKLT");
        d.signature(&TAIL_SIGNATURE)?;
        d.skip(3)?;
        let mat = d.addr();
        let m = d.u8()?;
        if !(1..=MAX_HEIGHT).contains(&m) {
            return Err(d.bad_value(mat, "max height", u64::from(m)));
        }
        Ok(Tail::encoded_len(*sizes, m))
    }

    fn decode(image: &[u8], at: Addr, sizes: &Sizes) -> FormatResult<Self> {
        Tail::decode(image, at, *sizes)
    }

    fn image_len(&self) -> usize {
        Tail::encoded_len(self.sizes, self.params.max_height)
    }

    fn encode(&self, out: &mut Vec<u8>) -> FormatResult<()> {
        Tail::encode(self, out)
    }
}

/// What decoding a supernode needs: the list's widths and parameters, the owning tail, and
/// (when a route leads there) the index the supernode must have.
#[derive(Clone, Copy, Debug)]
pub struct SupernodeContext {
    /// The superblock's widths.
    pub sizes: Sizes,
    /// The list's parameters.
    pub params: Params,
    /// The slot codec.
    pub codec: RecordCodec,
    /// The owning tail's address (stored in every supernode).
    pub tail: Addr,
    /// The index the supernode must have, if known.
    pub expect: Option<u64>,
}

/// A supernode (§5): pointers and a block of slots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Supernode {
    /// The superblock's widths.
    pub sizes: Sizes,
    /// The slot codec.
    pub codec: RecordCodec,
    /// The owning tail's address.
    pub tail: Addr,
    /// The supernode's index (1-based); its height is `tz(index) + 1`.
    pub index: u64,
    /// Back pointers, level 1 first (as many as the height).
    pub back: Vec<Option<Addr>>,
    /// Forward pointers, level 1 first (as many as the height).
    pub forward: Vec<Option<Addr>>,
    /// The slots.
    pub slots: Vec<ChunkRecord>,
}

impl Supernode {
    /// The encoded length of a supernode of `height` with `slots` slots of `codec`.
    pub fn encoded_len(sizes: Sizes, codec: &RecordCodec, slots: u64, height: u32) -> usize {
        let o = usize::from(sizes.offsets());
        let h = usize::try_from(height).unwrap_or(usize::MAX);
        let slots = usize::try_from(slots).unwrap_or(usize::MAX);
        10usize
            .saturating_add(o)
            .saturating_add(usize::from(sizes.lengths()))
            .saturating_add(o.saturating_mul(2).saturating_mul(h))
            .saturating_add(slots.saturating_mul(codec.element_size()))
    }

    /// The height, `tz(index) + 1`.
    pub fn height(&self) -> u32 {
        shape::height(self.index)
    }

    /// Decode and validate an image (checksum first).
    pub fn decode(image: &[u8], at: Addr, ctx: &SupernodeContext) -> FormatResult<Supernode> {
        let mut d = Decoder::new(image, at, ctx.sizes, "SKLS");
        let covered = image
            .len()
            .checked_sub(4)
            .ok_or_else(|| truncated("SKLS", at, 4, image.len()))?;
        d.verify_checksum(covered)?;
        d.signature(&SUPERNODE_SIGNATURE)?;
        let vat = d.addr();
        let version = d.u8()?;
        if version != VERSION {
            return Err(d.bad_version(vat, version));
        }
        let hat = d.addr();
        let height = d.u8()?;
        if height == 0 || height > ctx.params.max_height {
            return Err(d.bad_value(hat, "height", u64::from(height)));
        }
        let slots = ctx.params.slots_per_supernode();
        let len = Supernode::encoded_len(ctx.sizes, &ctx.codec, slots, u32::from(height));
        if image.len() != len {
            return Err(d.invalid(at, "image length does not match the height"));
        }
        let tat = d.addr();
        let tail = d.defined_offset("tail address")?;
        if tail != ctx.tail {
            return Err(d.invalid(
                tat,
                format!("belongs to the tail at {tail}, not {}", ctx.tail),
            ));
        }
        let iat = d.addr();
        let index = d.length()?;
        if index == 0 || shape::height(index) != u32::from(height) {
            return Err(d.bad_value(iat, "supernode index", index));
        }
        if let Some(expect) = ctx.expect
            && expect != index
        {
            return Err(d.invalid(
                iat,
                format!("the route expected supernode {expect}, found supernode {index}"),
            ));
        }
        let h = usize::from(height);
        let mut back = Vec::with_capacity(h);
        for _ in 0..h {
            back.push(d.offset()?);
        }
        let mut forward = Vec::with_capacity(h);
        for _ in 0..h {
            forward.push(d.offset()?);
        }
        let count = d.check_count(slots, ctx.codec.element_size())?;
        let mut records = Vec::with_capacity(count);
        for _ in 0..count {
            let eat = d.addr();
            let bytes = d.bytes(ctx.codec.element_size())?;
            records.push(ctx.codec.decode(bytes, eat)?);
        }
        Ok(Supernode {
            sizes: ctx.sizes,
            codec: ctx.codec,
            tail,
            index,
            back,
            forward,
            slots: records,
        })
    }

    /// Append the image, checksum last.
    pub fn encode(&self, out: &mut Vec<u8>) -> FormatResult<()> {
        let height = u8::try_from(self.height()).map_err(|_| FormatError::Unencodable {
            structure: "SKLS",
            reason: format!("supernode index {} is too large", self.index),
        })?;
        let h = usize::from(height);
        if self.back.len() != h || self.forward.len() != h {
            return Err(FormatError::Unencodable {
                structure: "SKLS",
                reason: format!("a supernode of height {h} needs {h} pointers of each kind"),
            });
        }
        let mut e = Encoder::new(out, self.sizes, "SKLS");
        e.bytes(&SUPERNODE_SIGNATURE);
        e.u8(VERSION);
        e.u8(height);
        e.offset(Some(self.tail), "tail address")?;
        e.length(self.index, "supernode index")?;
        for p in self.back.iter().chain(&self.forward) {
            e.offset(*p, "supernode pointer")?;
        }
        let mut slots =
            Vec::with_capacity(self.slots.len().saturating_mul(self.codec.element_size()));
        for r in &self.slots {
            self.codec.encode(r, &mut slots)?;
        }
        e.bytes(&slots);
        e.checksum();
        Ok(())
    }
}

impl CacheEntry for Supernode {
    type Context = SupernodeContext;
    const TYPE_NAME: &'static str = "SKLS";
    const CHECKSUMMED: bool = true;

    fn initial_load_len(ctx: &SupernodeContext) -> usize {
        // When the route knows the index, it knows the height, hence the whole length: one
        // read per supernode.
        match ctx.expect {
            Some(k) => Supernode::encoded_len(
                ctx.sizes,
                &ctx.codec,
                ctx.params.slots_per_supernode(),
                shape::height(k),
            ),
            None => 6,
        }
    }

    fn final_load_len(prefix: &[u8], at: Addr, ctx: &SupernodeContext) -> FormatResult<usize> {
        let mut d = Decoder::new(prefix, at, ctx.sizes, "SKLS");
        d.signature(&SUPERNODE_SIGNATURE)?;
        d.skip(1)?;
        let hat = d.addr();
        let h = d.u8()?;
        if h == 0 || h > ctx.params.max_height {
            return Err(d.bad_value(hat, "height", u64::from(h)));
        }
        Ok(Supernode::encoded_len(
            ctx.sizes,
            &ctx.codec,
            ctx.params.slots_per_supernode(),
            u32::from(h),
        ))
    }

    fn decode(image: &[u8], at: Addr, ctx: &SupernodeContext) -> FormatResult<Self> {
        Supernode::decode(image, at, ctx)
    }

    fn image_len(&self) -> usize {
        Supernode::encoded_len(
            self.sizes,
            &self.codec,
            self.slots.len() as u64,
            self.height(),
        )
    }

    fn encode(&self, out: &mut Vec<u8>) -> FormatResult<()> {
        Supernode::encode(self, out)
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unwrap_used
)]
mod tests {
    use super::*;

    const S: Sizes = Sizes::DEFAULT;

    fn params() -> Params {
        Params {
            class: ElementClass::Unfiltered,
            max_height: 2,
            steps_per_supernode: 2,
            group_len: 1,
        }
    }

    /// A tail of max height 2 over 3 steps (2 supernodes), as §4 lays it out.
    #[rustfmt::skip]
    fn tail_bytes() -> Vec<u8> {
        let mut b = vec![
            b'S', b'K', b'L', b'T', // signature
            0,                      // version
            0,                      // element class: unfiltered
            0,                      // chunk size width
            2,                      // max height
            2, 0, 0, 0,             // steps per supernode
            1, 0, 0, 0,             // group length
            3, 0, 0, 0, 0, 0, 0, 0, // number of steps
        ];
        // level 1: right-most 0x100, left-most 0x80, ghost 0x180 (supernode 3)
        b.extend(0x100u64.to_le_bytes());
        b.extend(0x80u64.to_le_bytes());
        b.extend(0x180u64.to_le_bytes());
        // level 2: right-most 0x100 (supernode 2), left-most 0x100, ghost 0x200 (supernode 4,
        // height 3 > max height 2: undefined)
        b.extend(0x100u64.to_le_bytes());
        b.extend(0x100u64.to_le_bytes());
        b.extend([0xff; 8]);
        let sum = h5chunk_format::checksum::lookup3(&b);
        b.extend(sum.to_le_bytes());
        b
    }

    #[test]
    fn decode_tail() {
        let b = tail_bytes();
        assert_eq!(b.len(), Tail::encoded_len(S, 2));
        let t = Tail::decode(&b, Addr(0x40), S).unwrap();
        assert_eq!(t.params, params());
        assert_eq!(t.steps, 3);
        assert_eq!(t.supernodes(), 2);
        assert_eq!(t.levels[0].ghost, Some(Addr(0x180)));
        assert_eq!(t.levels[1].ghost, None);
        let mut out = Vec::new();
        t.encode(&mut out).unwrap();
        assert_eq!(out, b);
    }

    #[test]
    fn tail_rejects_truncation() {
        let b = tail_bytes();
        for len in 0..b.len() {
            assert!(Tail::decode(&b[..len], Addr(0), S).is_err(), "prefix {len}");
        }
    }

    #[test]
    fn tail_rejects_flipped_byte() {
        let b = tail_bytes();
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x01;
            assert!(Tail::decode(&c, Addr(0), S).is_err(), "byte {i}");
        }
    }

    #[test]
    fn tail_rejects_inconsistent_pointers() {
        let good = Tail::decode(&tail_bytes(), Addr(0), S).unwrap();
        let mut bad = good.clone();
        bad.levels[1].ghost = Some(Addr(0x200));
        let mut img = Vec::new();
        bad.encode(&mut img).unwrap();
        assert!(matches!(
            Tail::decode(&img, Addr(0), S),
            Err(FormatError::Invalid { .. })
        ));
    }

    fn ctx(expect: Option<u64>) -> SupernodeContext {
        let p = Params {
            class: ElementClass::Filtered { size_width: 2 },
            ..params()
        };
        SupernodeContext {
            sizes: S,
            params: p,
            codec: p.codec(S).unwrap(),
            tail: Addr(0x40),
            expect,
        }
    }

    /// Supernode 2 (height 2) of a filtered list with two slots, as §5 lays it out.
    #[rustfmt::skip]
    fn supernode_bytes() -> Vec<u8> {
        let mut b = vec![
            b'S', b'K', b'L', b'S', // signature
            0,                      // version
            2,                      // height
        ];
        b.extend(0x40u64.to_le_bytes());  // tail address
        b.extend(2u64.to_le_bytes());     // supernode index
        b.extend(0x80u64.to_le_bytes());  // back, level 1: supernode 1
        b.extend([0xff; 8]);              // back, level 2: none (index 0)
        b.extend(0x180u64.to_le_bytes()); // forward, level 1: supernode 3 (a ghost)
        b.extend(0x200u64.to_le_bytes()); // forward, level 2: supernode 4 (a ghost)
        b.extend(0x1000u64.to_le_bytes()); // slot 0: chunk address
        b.extend([0x34, 0x12]);           //          chunk size
        b.extend([1, 0, 0, 0]);           //          filter mask
        b.extend([0xff; 8]);              // slot 1: unallocated
        b.extend([0, 0, 0, 0, 0, 0]);
        let sum = h5chunk_format::checksum::lookup3(&b);
        b.extend(sum.to_le_bytes());
        b
    }

    #[test]
    fn decode_supernode() {
        let b = supernode_bytes();
        let c = ctx(Some(2));
        assert_eq!(
            b.len(),
            Supernode::encoded_len(S, &c.codec, c.params.slots_per_supernode(), 2)
        );
        let sn = Supernode::decode(&b, Addr(0x100), &c).unwrap();
        assert_eq!(sn.index, 2);
        assert_eq!(sn.back, vec![Some(Addr(0x80)), None]);
        assert_eq!(sn.slots[0].addr, Some(Addr(0x1000)));
        assert_eq!(sn.slots[0].size, 0x1234);
        assert_eq!(sn.slots[0].mask, 1);
        assert_eq!(sn.slots[1], ChunkRecord::default());
        let mut out = Vec::new();
        sn.encode(&mut out).unwrap();
        assert_eq!(out, b);
        assert_eq!(<Supernode as CacheEntry>::initial_load_len(&c), b.len());
    }

    #[test]
    fn supernode_rejects_truncation() {
        let b = supernode_bytes();
        for len in 0..b.len() {
            assert!(Supernode::decode(&b[..len], Addr(0), &ctx(None)).is_err());
        }
    }

    #[test]
    fn supernode_rejects_flipped_byte() {
        let b = supernode_bytes();
        for i in 0..b.len() {
            let mut c = b.clone();
            c[i] ^= 0x10;
            assert!(
                Supernode::decode(&c, Addr(0), &ctx(None)).is_err(),
                "byte {i}"
            );
        }
    }

    #[test]
    fn supernode_rejects_unexpected_index() {
        let b = supernode_bytes();
        assert!(matches!(
            Supernode::decode(&b, Addr(0), &ctx(Some(6))),
            Err(FormatError::Invalid { .. })
        ));
        let mut other = ctx(Some(2));
        other.tail = Addr(0x48);
        assert!(Supernode::decode(&b, Addr(0), &other).is_err());
    }
}
