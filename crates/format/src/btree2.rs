//! Version 2 B-tree: header (`BTHD`), internal node (`BTIN`) and leaf (`BTLF`), with the
//! capacity arithmetic that fixes the width of the child-pointer fields at each depth.
//!
//! Records are opaque `record_size`-byte strings here; their meaning (chunk records of types 10
//! and 11, links by name hash, ...) belongs to the record class of the caller.
//!
//! Header (`sa` = size of offsets, `ss` = size of lengths):
//!
//! | off      | size | field                                   |
//! |----------|------|-----------------------------------------|
//! | 0        | 4    | signature `BTHD`                        |
//! | 4        | 1    | version (0)                             |
//! | 5        | 1    | type                                    |
//! | 6        | 4    | node size                               |
//! | 10       | 2    | record size                             |
//! | 12       | 2    | depth                                   |
//! | 14       | 1    | split percent                           |
//! | 15       | 1    | merge percent                           |
//! | 16       | sa   | root node address                       |
//! | 16+sa    | 2    | number of records in the root node      |
//! | 18+sa    | ss   | total number of records                 |
//! | 18+sa+ss | 4    | checksum                                |
//!
//! Nodes: signature, version (0), type, then the records (leaf) or the records followed by
//! `nrec + 1` child pointers (internal: address (sa), records in the child (`max_nrec_size`
//! bytes) and, below depth 1 only, records in the child's subtree (`cum_size[d-1]` bytes)),
//! then the checksum right after the last used byte, then zeros up to the node size. A node
//! does not store its record count: the parent (or the header, for the root) does.

#![deny(missing_docs)]

use crate::addr::Addr;
use crate::cursor::{Decoder, Encoder};
use crate::error::{Error, Result};
use crate::sizes::Sizes;

/// `BTHD`.
pub const HEADER_SIGNATURE: [u8; 4] = *b"BTHD";
/// `BTIN`.
pub const INTERNAL_SIGNATURE: [u8; 4] = *b"BTIN";
/// `BTLF`.
pub const LEAF_SIGNATURE: [u8; 4] = *b"BTLF";
/// The only version of every block.
pub const VERSION: u8 = 0;
/// Bytes of a node that are not records or pointers: signature, version, type, checksum.
pub const NODE_PREFIX: usize = 10;
/// Deepest tree accepted. Each level multiplies the capacity by at least 2 (a node holds at
/// least one record and two children), so 64 levels exceed any 64-bit record count; a deeper
/// claim can only come from a corrupt header, and bounding it keeps descents finite.
pub const MAX_DEPTH: u16 = 64;

/// The v2 B-tree header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Tree type (10: unfiltered chunks; 11: filtered chunks; others for other clients).
    pub tree_type: u8,
    /// Size of every node in bytes.
    pub node_size: u32,
    /// Size of one record in bytes.
    pub record_size: u16,
    /// Depth of the tree (0: the root is a leaf).
    pub depth: u16,
    /// Split percent.
    pub split_percent: u8,
    /// Merge percent.
    pub merge_percent: u8,
    /// Root node address, `None` for an empty tree.
    pub root: Option<Addr>,
    /// Number of records in the root node.
    pub root_nrec: u16,
    /// Total number of records in the tree.
    pub total_records: u64,
}

impl Header {
    /// Encoded size in bytes, checksum included.
    #[allow(clippy::arithmetic_side_effects)] // small constants and widths of at most 8
    pub fn encoded_len(sizes: Sizes) -> usize {
        18 + usize::from(sizes.offsets()) + usize::from(sizes.lengths()) + 4
    }

    /// Decode a header at file address `at`.
    pub fn decode(bytes: &[u8], at: Addr, sizes: Sizes) -> Result<Header> {
        let mut d = Decoder::new(bytes, at, sizes, "BTHD");
        d.signature(&HEADER_SIGNATURE)?;
        d.verify_checksum(Self::encoded_len(sizes).saturating_sub(4))?;
        let v_at = d.addr();
        let version = d.u8()?;
        if version != VERSION {
            return Err(d.bad_version(v_at, version));
        }
        let tree_type = d.u8()?;
        let ns_at = d.addr();
        let node_size = d.u32()?;
        let rs_at = d.addr();
        let record_size = d.u16()?;
        let depth_at = d.addr();
        let depth = d.u16()?;
        let split_percent = d.u8()?;
        let merge_percent = d.u8()?;
        let root = d.offset()?;
        let root_nrec = d.u16()?;
        let total_records = d.length()?;
        if depth > MAX_DEPTH {
            return Err(d.bad_value(depth_at, "depth", depth.into()));
        }
        if record_size == 0 {
            return Err(d.bad_value(rs_at, "record size", 0));
        }
        let h = Header {
            tree_type,
            node_size,
            record_size,
            depth,
            split_percent,
            merge_percent,
            root,
            root_nrec,
            total_records,
        };
        Geometry::new(&h, sizes).map_err(|_| {
            d.invalid(
                ns_at,
                format!("node size {node_size} cannot hold records of {record_size} bytes at depth {depth}"),
            )
        })?;
        Ok(h)
    }

    /// Append the encoded header, checksum last.
    pub fn encode(&self, sizes: Sizes, out: &mut Vec<u8>) -> Result<()> {
        let mut e = Encoder::new(out, sizes, "BTHD");
        e.bytes(&HEADER_SIGNATURE);
        e.u8(VERSION);
        e.u8(self.tree_type);
        e.u32(self.node_size);
        e.u16(self.record_size);
        e.u16(self.depth);
        e.u8(self.split_percent);
        e.u8(self.merge_percent);
        e.offset(self.root, "root node address")?;
        e.u16(self.root_nrec);
        e.length(self.total_records, "total number of records")?;
        e.checksum();
        Ok(())
    }
}

/// Node capacities and pointer widths at each depth, derived from the header once per tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    node_size: usize,
    record_size: usize,
    offsets: usize,
    /// Per depth d: (max records in a node at depth d, total records a subtree rooted at depth
    /// d can hold, bytes of that total's field).
    levels: Vec<Level>,
    max_nrec_size: usize,
}

/// Capacity of the nodes at one depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level {
    /// Maximum records in one node at this depth.
    pub max_nrec: u64,
    /// Maximum records in a subtree rooted at this depth.
    pub cum_max_nrec: u64,
    /// Bytes of a "records in the subtree" field counting such a subtree (0 for leaves).
    pub cum_size: usize,
}

/// Bytes needed to hold `n`: `floor(log2 n) / 8 + 1`.
fn enc(n: u64) -> usize {
    usize::from((n.max(1).ilog2() / 8) as u8).saturating_add(1)
}

// Geometry arithmetic is bounded: node and record sizes are u32/u16 from the header, and
// `new` checks the subtractions; products of record counts saturate.
#[allow(clippy::arithmetic_side_effects)]
impl Geometry {
    /// The geometry of a tree with `header`'s node size, record size and depth.
    pub fn new(header: &Header, sizes: Sizes) -> Result<Geometry> {
        let bad = |reason: String| Error::Unencodable {
            structure: "BTHD",
            reason,
        };
        let node_size = header.node_size as usize;
        let record_size = usize::from(header.record_size);
        let offsets = usize::from(sizes.offsets());
        if record_size == 0 || node_size <= NODE_PREFIX {
            return Err(bad(format!(
                "node size {node_size} or record size {record_size} too small"
            )));
        }
        let leaf_max = ((node_size - NODE_PREFIX) / record_size) as u64;
        if leaf_max == 0 {
            return Err(bad(format!(
                "a {node_size}-byte node holds no {record_size}-byte record"
            )));
        }
        let max_nrec_size = enc(leaf_max);
        let mut levels = vec![Level {
            max_nrec: leaf_max,
            cum_max_nrec: leaf_max,
            cum_size: 0,
        }];
        for _ in 1..=header.depth {
            let Some(&prev) = levels.last() else { break };
            let ptr = offsets + max_nrec_size + prev.cum_size;
            let room = node_size
                .checked_sub(NODE_PREFIX + ptr)
                .ok_or_else(|| bad(format!("a {node_size}-byte node holds no child pointer")))?;
            let max_nrec = (room / (record_size + ptr)) as u64;
            if max_nrec == 0 {
                return Err(bad(format!(
                    "a {node_size}-byte internal node holds no record"
                )));
            }
            let cum = max_nrec
                .saturating_add(1)
                .saturating_mul(prev.cum_max_nrec)
                .saturating_add(max_nrec);
            levels.push(Level {
                max_nrec,
                cum_max_nrec: cum,
                cum_size: enc(cum),
            });
        }
        Ok(Geometry {
            node_size,
            record_size,
            offsets,
            levels,
            max_nrec_size,
        })
    }

    /// Capacity at depth `d` (0: leaves).
    pub fn level(&self, d: u16) -> Option<&Level> {
        self.levels.get(usize::from(d))
    }

    /// Bytes of the "records in the child" field of a child pointer.
    pub fn max_nrec_size(&self) -> usize {
        self.max_nrec_size
    }

    /// Bytes of one child pointer in a node at depth `d` (≥ 1).
    pub fn pointer_size(&self, d: u16) -> usize {
        let below = self.level(d.saturating_sub(1)).map_or(0, |l| l.cum_size);
        self.offsets + self.max_nrec_size + if d > 1 { below } else { 0 }
    }

    /// Size of every node in bytes.
    pub fn node_size(&self) -> usize {
        self.node_size
    }

    /// Size of one record in bytes.
    pub fn record_size(&self) -> usize {
        self.record_size
    }
}

/// A child pointer of an internal node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChildPointer {
    /// Address of the child node.
    pub addr: Addr,
    /// Number of records in the child node.
    pub nrec: u64,
    /// Number of records in the child's subtree (equal to `nrec` for a leaf child).
    pub total: u64,
}

/// A node: a leaf (depth 0, no children) or an internal node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// The tree type, repeated in every node.
    pub tree_type: u8,
    /// The records, raw, `nrec × record_size` bytes.
    pub records: Vec<u8>,
    /// `nrec + 1` child pointers for an internal node; empty for a leaf.
    pub children: Vec<ChildPointer>,
}

impl Node {
    /// Number of records.
    pub fn nrec(&self, g: &Geometry) -> usize {
        self.records.len().checked_div(g.record_size).unwrap_or(0)
    }

    /// Record `i`, raw.
    pub fn record<'a>(&'a self, g: &Geometry, i: usize) -> Option<&'a [u8]> {
        let start = i.checked_mul(g.record_size)?;
        self.records.get(start..start.checked_add(g.record_size)?)
    }

    /// Decode a node at depth `depth` holding `nrec` records (as its parent says), read from
    /// file address `at`. `bytes` is the whole node (`node_size` bytes) or at least its used
    /// part and checksum.
    pub fn decode(
        bytes: &[u8],
        at: Addr,
        sizes: Sizes,
        g: &Geometry,
        depth: u16,
        nrec: u64,
    ) -> Result<Node> {
        let (sig, name) = if depth == 0 {
            (&LEAF_SIGNATURE, "BTLF")
        } else {
            (&INTERNAL_SIGNATURE, "BTIN")
        };
        let mut d = Decoder::new(bytes, at, sizes, name);
        let level = g
            .level(depth)
            .ok_or_else(|| d.invalid(at, format!("depth {depth} beyond the tree's depth")))?;
        if nrec > level.max_nrec {
            return Err(d.invalid(
                at,
                format!("{nrec} records exceed the node capacity {}", level.max_nrec),
            ));
        }
        let nrec = nrec as usize;
        let used = Self::used_len(g, depth, nrec);
        d.signature(sig)?;
        d.verify_checksum(used)?;
        let v_at = d.addr();
        let version = d.u8()?;
        if version != VERSION {
            return Err(d.bad_version(v_at, version));
        }
        let tree_type = d.u8()?;
        let records = d.bytes(nrec.saturating_mul(g.record_size))?.to_vec();
        let mut children = Vec::new();
        if depth > 0 {
            children.reserve(nrec.saturating_add(1));
            let below = g.level(depth.saturating_sub(1)).copied().unwrap_or(*level);
            for _ in 0..=nrec {
                let addr = d.defined_offset("child node address")?;
                let n_at = d.addr();
                let child_nrec = d.uint(g.max_nrec_size as u8)?;
                if child_nrec > below.max_nrec {
                    return Err(d.bad_value(n_at, "records in child node", child_nrec));
                }
                let total = if depth > 1 {
                    d.uint(below.cum_size as u8)?
                } else {
                    child_nrec
                };
                children.push(ChildPointer {
                    addr,
                    nrec: child_nrec,
                    total,
                });
            }
        }
        Ok(Node {
            tree_type,
            records,
            children,
        })
    }

    /// Bytes the checksum of a node at `depth` with `nrec` records covers: from the signature
    /// to the last record or child pointer (the checksum follows them).
    pub fn used_len(g: &Geometry, depth: u16, nrec: usize) -> usize {
        let ptrs = if depth > 0 {
            nrec.saturating_add(1).saturating_mul(g.pointer_size(depth))
        } else {
            0
        };
        nrec.saturating_mul(g.record_size)
            .saturating_add(ptrs)
            .saturating_add(6)
    }

    /// Append the node at `depth`, zero-filled to the node size.
    pub fn encode(&self, sizes: Sizes, g: &Geometry, depth: u16, out: &mut Vec<u8>) -> Result<()> {
        let nrec = self.records.len().checked_div(g.record_size).unwrap_or(0);
        Self::encode_parts(
            self.tree_type,
            sizes,
            g,
            depth,
            nrec,
            &self.children,
            out,
            |raw| {
                if raw.len() != self.records.len() {
                    return Err(Error::Unencodable {
                        structure: if depth == 0 { "BTLF" } else { "BTIN" },
                        reason: format!(
                            "{} bytes of records, not a whole number of {}-byte records",
                            self.records.len(),
                            g.record_size
                        ),
                    });
                }
                raw.copy_from_slice(&self.records);
                Ok(())
            },
        )
    }

    /// Append a node at `depth` of `nrec` records and (internal nodes) `children`, zero-filled
    /// to the node size; `records` writes the records straight into their
    /// `nrec * record_size` bytes of the image (a node is written at every change of it, and
    /// an intermediate buffer of records would be copied once more).
    #[allow(clippy::too_many_arguments)]
    pub fn encode_parts(
        tree_type: u8,
        sizes: Sizes,
        g: &Geometry,
        depth: u16,
        nrec: usize,
        children: &[ChildPointer],
        out: &mut Vec<u8>,
        records: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<()> {
        let (sig, name) = if depth == 0 {
            (&LEAF_SIGNATURE, "BTLF")
        } else {
            (&INTERNAL_SIGNATURE, "BTIN")
        };
        let too_big = |used: usize| Error::Unencodable {
            structure: name,
            reason: format!("{used} bytes exceed the node size {}", g.node_size),
        };
        let used = Self::used_len(g, depth, nrec);
        if used.saturating_add(4) > g.node_size {
            return Err(too_big(used.saturating_add(4)));
        }
        out.reserve(g.node_size);
        let start = out.len();
        let mut e = Encoder::new(out, sizes, name);
        e.bytes(sig);
        e.u8(VERSION);
        e.u8(tree_type);
        let at = start.saturating_add(e.position());
        e.zeros(nrec.saturating_mul(g.record_size));
        let end = start.saturating_add(e.position());
        records(
            e.written_mut()
                .get_mut(at.saturating_sub(start)..end.saturating_sub(start))
                .unwrap_or_default(),
        )?;
        if depth > 0 {
            let below = g.level(depth.saturating_sub(1)).map_or(0, |l| l.cum_size);
            for c in children {
                e.offset(Some(c.addr), "child node address")?;
                e.uint(c.nrec, g.max_nrec_size as u8, "records in child node")?;
                if depth > 1 {
                    e.uint(c.total, below as u8, "records in child subtree")?;
                }
            }
        }
        e.checksum();
        let used = e.position();
        let Some(fill) = g.node_size.checked_sub(used) else {
            return Err(too_big(used));
        };
        e.zeros(fill);
        Ok(())
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

    const S: Sizes = Sizes::DEFAULT;

    #[rustfmt::skip]
    const BTHD: [u8; 38] = [
        b'B', b'T', b'H', b'D',
        0x00,                               // version
        0x0a,                               // type 10: unfiltered chunks
        0x00, 0x08, 0x00, 0x00,             // node size 2048
        0x18, 0x00,                         // record size 24
        0x00, 0x00,                         // depth 0
        0x64,                               // split 100 %
        0x28,                               // merge 40 %
        0x00, 0xb8, 0x04, 0, 0, 0, 0, 0,    // root @ 0x4b800
        0x04, 0x00,                         // 4 records in the root
        0x04, 0, 0, 0, 0, 0, 0, 0,          // 4 records in all
        0x45, 0xcb, 0x4c, 0xaa,             // checksum
    ];

    fn header(record_size: u16, depth: u16) -> Header {
        Header {
            tree_type: 10,
            node_size: 2048,
            record_size,
            depth,
            split_percent: 100,
            merge_percent: 40,
            root: None,
            root_nrec: 0,
            total_records: 0,
        }
    }

    #[test]
    fn decode_header_from_libhdf5() {
        let h = Header::decode(&BTHD, Addr(0x1000), S).unwrap();
        assert_eq!((h.node_size, h.record_size, h.depth), (2048, 24, 0));
        assert_eq!(
            (h.root, h.root_nrec, h.total_records),
            (Some(Addr(0x4b800)), 4, 4)
        );
        let mut out = Vec::new();
        h.encode(S, &mut out).unwrap();
        assert_eq!(out, BTHD);
    }

    #[test]
    fn capacities_match_the_reference_table() {
        // (record size, leaf max, d1 max, d1 cum, d1 cum bytes, d2 max, d2 cum, d2 cum bytes)
        for (rs, leaf, m1, c1, s1, m2, c2, s2) in [
            (
                24u16, 84u64, 61u64, 5269u64, 2usize, 57u64, 305_659u64, 3usize,
            ),
            (31, 65, 50, 3365, 2, 48, 164_933, 3),
            (36, 56, 45, 2621, 2, 43, 115_367, 3),
            (32, 63, 49, 3199, 2, 47, 153_599, 3),
            (40, 50, 41, 2141, 2, 39, 85_679, 3),
        ] {
            let g = Geometry::new(&header(rs, 2), S).unwrap();
            assert_eq!(g.level(0).unwrap().max_nrec, leaf, "rs={rs}");
            let l1 = g.level(1).unwrap();
            assert_eq!(
                (l1.max_nrec, l1.cum_max_nrec, l1.cum_size),
                (m1, c1, s1),
                "rs={rs}"
            );
            let l2 = g.level(2).unwrap();
            assert_eq!(
                (l2.max_nrec, l2.cum_max_nrec, l2.cum_size),
                (m2, c2, s2),
                "rs={rs}"
            );
        }
    }

    #[test]
    fn roundtrip_nodes_and_reject_damage() {
        let g = Geometry::new(&header(24, 2), S).unwrap();
        let leaf = Node {
            tree_type: 10,
            records: (0..3 * 24).map(|i| i as u8).collect(),
            children: vec![],
        };
        let internal = Node {
            tree_type: 10,
            records: vec![7; 2 * 24],
            children: (0..3)
                .map(|i| ChildPointer {
                    addr: Addr(0x1000 * (i + 1)),
                    nrec: 61,
                    total: 4388,
                })
                .collect(),
        };
        for (node, depth, nrec) in [(&leaf, 0u16, 3u64), (&internal, 2, 2)] {
            let mut out = Vec::new();
            node.encode(S, &g, depth, &mut out).unwrap();
            assert_eq!(out.len(), 2048);
            let used = Node::used_len(&g, depth, nrec as usize);
            assert!(out[used + 4..].iter().all(|&b| b == 0));
            assert_eq!(
                &Node::decode(&out, Addr(0x800), S, &g, depth, nrec).unwrap(),
                node
            );
            for n in 0..used + 4 {
                assert!(Node::decode(&out[..n], Addr(0x800), S, &g, depth, nrec).is_err());
            }
            for i in 0..used + 4 {
                let mut bad = out.clone();
                bad[i] ^= 0x20;
                assert!(
                    Node::decode(&bad, Addr(0x800), S, &g, depth, nrec).is_err(),
                    "byte {i}"
                );
            }
            // A count beyond the node's capacity is refused before any allocation.
            assert!(Node::decode(&out, Addr(0x800), S, &g, depth, 1_000_000).is_err());
        }
    }

    #[test]
    fn rejects_header_damage() {
        for n in 0..BTHD.len() {
            assert!(Header::decode(&BTHD[..n], Addr(0), S).is_err());
        }
        for i in 0..BTHD.len() {
            let mut bad = BTHD;
            bad[i] ^= 0x80;
            assert!(Header::decode(&bad, Addr(0), S).is_err(), "byte {i}");
        }
        // A depth beyond MAX_DEPTH, with a valid checksum, is still refused.
        let mut deep = header(24, MAX_DEPTH + 1);
        deep.root = Some(Addr(0x100));
        let mut out = Vec::new();
        deep.encode(S, &mut out).unwrap();
        assert!(matches!(
            Header::decode(&out, Addr(0), S),
            Err(Error::BadValue { field: "depth", .. })
        ));
    }
}
