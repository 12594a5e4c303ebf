//! The shape of a list of `n` supernodes, computed from `n` alone (implicit keys, paper §IX):
//! heights, tail pointers, ghosts, and the lookup routes of each of the paper's variants.
//! No I/O. See `docs/format/skiplist.md` §3 and §6.
//!
//! Supernode indices are 1-based; a supernode `k` has height `tz(k) + 1`; a step from `c`
//! moves to `c ± 2^j` with `j < height(c)` (a back or forward pointer at level `j + 1`).

/// The height of supernode `k` (`k >= 1`): one more than its number of trailing zero bits, so
/// that heights form a balanced binary tree (paper §VIII).
pub fn height(k: u64) -> u32 {
    k.trailing_zeros().saturating_add(1)
}

/// The greatest height among supernodes `1..=n`: the number of bits of `n` (0 when empty).
pub fn top_height(n: u64) -> u32 {
    u64::BITS.saturating_sub(n.leading_zeros())
}

/// `2^(level-1)`, or `None` for a level outside `1..=64`.
fn span(level: u32) -> Option<u64> {
    1u64.checked_shl(level.checked_sub(1)?)
}

/// The right-most supernode of height exactly `level` among `1..=n`.
pub fn rightmost(n: u64, level: u32) -> Option<u64> {
    let p = span(level)?;
    if p > n {
        return None;
    }
    // Supernodes of height `level` are the odd multiples of p: (2m + 1)·p <= n.
    let m = n.checked_div(p)?.checked_sub(1)?.checked_div(2)?;
    m.checked_mul(2)?.checked_add(1)?.checked_mul(p)
}

/// The left-most supernode of height `level` among `1..=n`: `2^(level-1)` if it exists.
pub fn leftmost(n: u64, level: u32) -> Option<u64> {
    span(level).filter(|&p| p <= n)
}

/// The ghost of `level` for a list of `n` supernodes: the next supernode of height `>= level`
/// after `n`, which the right-most supernode of height `>= level` points forward to.
pub fn ghost(n: u64, level: u32) -> Option<u64> {
    let p = span(level)?;
    n.checked_div(p)?.checked_add(1)?.checked_mul(p)
}

/// The number of supernodes of height exactly `level` among `1..=n`.
pub fn count_of_height(n: u64, level: u32) -> u64 {
    match (span(level), span(level.saturating_add(1))) {
        (Some(p), Some(q)) => n.saturating_add(p).checked_div(q).unwrap_or(0),
        // level 64: only supernode 2^63 can have it.
        (Some(p), None) => u64::from(n >= p),
        _ => 0,
    }
}

/// How a lookup finds a supernode: the paper's three skip list variants and the balanced
/// binary tree it compares them with (paper §XV, Table 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lookup {
    /// Descend the implicit balanced binary tree from its root (the supernode of greatest
    /// height), one child per step: the baseline.
    BinaryTree,
    /// Start from the tail's right-most pointers, follow back pointers (paper §XIII).
    RightMost,
    /// Start from the tail's right-most or left-most pointers, follow back pointers (§XIV).
    LeftRight,
    /// Start from the right-most or left-most pointers, follow back and forward ("inner")
    /// pointers (§XV). The default.
    Inner,
}

impl Lookup {
    /// Every variant, in the order of the paper's Table 1.
    pub const ALL: [Lookup; 4] = [
        Lookup::BinaryTree,
        Lookup::RightMost,
        Lookup::LeftRight,
        Lookup::Inner,
    ];
}

/// One hop of a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    /// Start at the tail's right-most pointer of this level.
    RightMost(u32),
    /// Start at the tail's left-most pointer of this level.
    LeftMost(u32),
    /// Follow the current supernode's back pointer of this level.
    Back(u32),
    /// Follow the current supernode's forward pointer of this level.
    Forward(u32),
}

/// A planned route: each hop with the index of the supernode it reaches. The first hop starts
/// from the tail; the last reaches the target.
pub type Route = Vec<(Hop, u64)>;

/// The route to supernode `target` (in `1..=n`) for `lookup`, or `None` when `target` is out
/// of range. Routes of the skip list variants are shortest for their variant.
pub fn plan(n: u64, target: u64, lookup: Lookup) -> Option<Route> {
    if target == 0 || target > n {
        return None;
    }
    match lookup {
        Lookup::BinaryTree => plan_binary(n, target),
        Lookup::RightMost => plan_skip(n, target, false, false),
        Lookup::LeftRight => plan_skip(n, target, true, false),
        Lookup::Inner => plan_skip(n, target, true, true),
    }
}

/// The binary-tree descent of §6 of the format document: from the root, to the child whose
/// subtree holds the target, where the right child of a node whose right subtree is cut short
/// by `n` is the node of greatest height that exists in that subtree.
fn plan_binary(n: u64, target: u64) -> Option<Route> {
    let top = top_height(n);
    let mut cur = leftmost(n, top)?;
    let mut route = vec![(Hop::RightMost(top), cur)];
    // Each step strictly lowers the height, so there are fewer than 64 of them.
    while cur != target {
        let below = height(cur).checked_sub(1)?;
        if target < cur {
            let next = cur.checked_sub(span(below)?)?;
            route.push((Hop::Back(below), next));
            cur = next;
        } else {
            let level = (1..=below).rev().find(|&l| {
                span(l)
                    .and_then(|p| cur.checked_add(p))
                    .is_some_and(|c| c <= n)
            })?;
            let next = cur.checked_add(span(level)?)?;
            route.push((Hop::Forward(level), next));
            cur = next;
        }
    }
    Some(route)
}

/// The shortest route from the tail's pointers for a skip list variant. From start `s`, a
/// route is a signed binary representation of `target - s` whose digits sit at positions
/// below `height(s)`, taken from the highest position down, every intermediate supernode in
/// `1..=n` (back pointers only: negative digits only). A dynamic programme over the positions
/// finds the fewest digits; it has at most two states per position (the remainder is fixed
/// modulo `2^(j+1)` and bounded by it). Routes that climb to an ancestor first are never
/// shorter than starting from another tail pointer (a test checks the planner against a
/// breadth-first search of the pointer graph).
fn plan_skip(n: u64, target: u64, left: bool, forward: bool) -> Option<Route> {
    let top = top_height(n);
    let mut starts: Vec<(Hop, u64)> = Vec::new();
    for l in 1..=top {
        if let Some(s) = rightmost(n, l) {
            starts.push((Hop::RightMost(l), s));
        }
    }
    if left {
        for l in 1..=top {
            if let Some(s) = leftmost(n, l)
                && !starts.iter().any(|&(_, x)| x == s)
            {
                starts.push((Hop::LeftMost(l), s));
            }
        }
    }
    let mut best: Option<Route> = None;
    for (hop, s) in starts {
        if !forward && s < target {
            continue;
        }
        if let Some(steps) = digits(n, s, target, forward) {
            let better = best
                .as_ref()
                .is_none_or(|b| steps.len() < b.len().saturating_sub(1));
            if better {
                let mut route = vec![(hop, s)];
                route.extend(steps);
                best = Some(route);
            }
        }
    }
    best
}

/// The fewest hops from supernode `s` to `t` with steps of decreasing size (see
/// [`plan_skip`]), or `None` if there is no such route.
fn digits(n: u64, s: u64, t: u64, forward: bool) -> Option<Vec<(Hop, u64)>> {
    // States: the current supernode and the hops taken so far. Two at most per position.
    let mut states: Vec<(u64, Vec<(Hop, u64)>)> = vec![(s, Vec::new())];
    let choices: &[i8] = if forward { &[0, -1, 1] } else { &[0, -1] };
    for j in (0..height(s)).rev() {
        let step = 1u64.checked_shl(j)?;
        // After this position, the remaining distance must be coverable by the lower digits.
        let reach = step.checked_sub(1)?;
        let mut next: Vec<(u64, Vec<(Hop, u64)>)> = Vec::new();
        for (pos, hops) in &states {
            for &d in choices {
                let to = match d {
                    0 => Some(*pos),
                    -1 => pos.checked_sub(step).filter(|&x| x >= 1),
                    _ => pos.checked_add(step).filter(|&x| x <= n),
                };
                let Some(to) = to else { continue };
                let ok = if forward {
                    to.abs_diff(t) <= reach
                } else {
                    to >= t && to.checked_sub(t).is_some_and(|r| r <= reach)
                };
                if !ok {
                    continue;
                }
                let mut h = hops.clone();
                let level = j.checked_add(1)?;
                match d {
                    0 => {}
                    -1 => h.push((Hop::Back(level), to)),
                    _ => h.push((Hop::Forward(level), to)),
                }
                match next.iter_mut().find(|(p, _)| *p == to) {
                    Some(slot) if slot.1.len() > h.len() => *slot = (to, h),
                    Some(_) => {}
                    None => next.push((to, h)),
                }
            }
        }
        states = next;
    }
    states.into_iter().find(|(p, _)| *p == t).map(|(_, h)| h)
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unwrap_used
)]
mod tests {
    use std::collections::{BTreeMap, VecDeque};

    use super::*;

    /// Shortest distances (supernodes read, the start counting 1) by breadth-first search over
    /// the pointer graph of the variant: every pointer a supernode holds, to supernodes that
    /// exist.
    fn bfs(n: u64, lookup: Lookup) -> BTreeMap<u64, usize> {
        let top = top_height(n);
        let mut starts = Vec::new();
        for l in 1..=top {
            starts.extend(rightmost(n, l));
            if lookup != Lookup::RightMost {
                starts.extend(leftmost(n, l));
            }
        }
        let mut dist = BTreeMap::new();
        let mut queue = VecDeque::new();
        for s in starts {
            if dist.insert(s, 1).is_none() {
                queue.push_back(s);
            }
        }
        while let Some(u) = queue.pop_front() {
            let d = dist[&u];
            for l in 1..=height(u) {
                let p = 1u64 << (l - 1);
                let mut next = vec![u.checked_sub(p)];
                if lookup == Lookup::Inner {
                    next.push(Some(u + p));
                }
                for v in next.into_iter().flatten() {
                    if (1..=n).contains(&v) && !dist.contains_key(&v) {
                        dist.insert(v, d + 1);
                        queue.push_back(v);
                    }
                }
            }
        }
        dist
    }

    /// Follow a route's hops and check it ends where it says.
    fn walk(n: u64, route: &Route) -> u64 {
        let mut cur = 0;
        for &(hop, to) in route {
            let expect = match hop {
                Hop::RightMost(l) => rightmost(n, l).unwrap(),
                Hop::LeftMost(l) => leftmost(n, l).unwrap(),
                Hop::Back(l) => {
                    assert!(l <= height(cur));
                    cur - (1 << (l - 1))
                }
                Hop::Forward(l) => {
                    assert!(l <= height(cur));
                    cur + (1 << (l - 1))
                }
            };
            assert_eq!(expect, to);
            assert!((1..=n).contains(&to));
            cur = to;
        }
        cur
    }

    #[test]
    fn planner_is_shortest_and_valid() {
        for n in 1..=260u64 {
            for lookup in [Lookup::RightMost, Lookup::LeftRight, Lookup::Inner] {
                let dist = bfs(n, lookup);
                for t in 1..=n {
                    let route = plan(n, t, lookup).unwrap();
                    assert_eq!(walk(n, &route), t);
                    assert_eq!(route.len(), dist[&t], "n={n} t={t} {lookup:?}");
                }
            }
            for t in 1..=n {
                let route = plan(n, t, Lookup::BinaryTree).unwrap();
                assert_eq!(walk(n, &route), t);
            }
        }
    }

    #[test]
    fn binary_tree_of_full_lists_is_balanced() {
        for h in 1..=9u32 {
            let n = (1u64 << h) - 1;
            let total: usize = (1..=n)
                .map(|t| plan(n, t, Lookup::BinaryTree).unwrap().len())
                .sum();
            // Sum of depths of a perfect binary tree of height h: (h - 1)·2^h + 1.
            assert_eq!(total as u64, (u64::from(h) - 1) * (1 << h) + 1);
        }
    }

    #[test]
    fn shape_helpers() {
        assert_eq!(top_height(0), 0);
        assert_eq!(top_height(31), 5);
        assert_eq!(rightmost(31, 1), Some(31));
        assert_eq!(rightmost(31, 3), Some(28));
        assert_eq!(rightmost(31, 5), Some(16));
        assert_eq!(rightmost(31, 6), None);
        assert_eq!(leftmost(31, 3), Some(4));
        assert_eq!(ghost(31, 1), Some(32));
        assert_eq!(ghost(31, 5), Some(32));
        assert_eq!(ghost(5, 2), Some(6));
        assert_eq!(ghost(5, 3), Some(8));
        for n in 0..100u64 {
            let total: u64 = (1..=7).map(|l| count_of_height(n, l)).sum();
            assert_eq!(total, n);
        }
        assert_eq!(plan(5, 0, Lookup::Inner), None);
        assert_eq!(plan(5, 6, Lookup::Inner), None);
    }
}
