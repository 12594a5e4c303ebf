//! The write trace and the write-order checker.
//!
//! With [`CacheConfig::record_trace`](crate::CacheConfig::record_trace) set, the cache records,
//! at its API boundary, every event that changes what may be written: entries and proxies
//! becoming dirty or clean, dependencies added and removed, moves, removals, pins, evictions,
//! and every image written (with the children the cache itself saw dirty at that moment).
//!
//! [`check_write_order`] replays that trace with its own dirty set and dependency graph, so it
//! does not trust the cache's bookkeeping, and reports the first event that broke the SWMR
//! rules:
//! - no entry reaches storage while a flush-dependency descendant of it is dirty (a parent is
//!   written only after its children; the cache is conservative and also waits for dirty
//!   grandchildren under a clean child, so the checker demands that too),
//! - no entry is evicted while dirty, pinned, or with a dirty descendant.
//!
//! Every index crate's tests can take the trace after their operations and call the checker.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use h5chunk_format::Addr;

use crate::entry::Key;

/// One recorded event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    /// The entry or proxy became dirty (inserted, modified, resized, moved, proxy created or
    /// re-dirtied).
    Dirtied(Key),
    /// A proxy's chunk was reported written.
    Cleaned(Key),
    /// An entry's image reached storage, in one write.
    Written {
        /// Where (always a [`Key::Entry`]).
        key: Key,
        /// The entry's type name.
        type_name: &'static str,
        /// The image length.
        len: usize,
        /// The direct children the cache saw dirty at the time (empty unless the cache is
        /// broken).
        dirty_children: Vec<Key>,
    },
    /// `parent` may not be written while `child` is dirty.
    DependencyAdded {
        /// The parent.
        parent: Key,
        /// The child.
        child: Key,
    },
    /// A dependency was removed.
    DependencyRemoved {
        /// The parent.
        parent: Key,
        /// The child.
        child: Key,
    },
    /// An entry moved to another address (it is dirty at its new address).
    Moved {
        /// The old address.
        from: Addr,
        /// The new address.
        to: Addr,
    },
    /// An entry or proxy was removed with its dependencies (not written).
    Removed(Key),
    /// An entry was pinned.
    Pinned(Key),
    /// An entry was unpinned.
    Unpinned(Key),
    /// An entry left memory.
    Evicted(Key),
}

/// The events recorded by a cache, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteTrace {
    /// The events.
    pub events: Vec<TraceEvent>,
}

impl WriteTrace {
    /// The addresses written, in order.
    pub fn written(&self) -> Vec<Addr> {
        self.events
            .iter()
            .filter_map(|e| match e {
                TraceEvent::Written {
                    key: Key::Entry(a), ..
                } => Some(*a),
                _ => None,
            })
            .collect()
    }

    /// The trace of the events of `self` followed by those of `other`.
    pub fn extend(&mut self, other: WriteTrace) {
        self.events.extend(other.events);
    }
}

/// What rule an event broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ViolationKind {
    /// An entry was written while a descendant was dirty.
    WrittenBeforeChild,
    /// An entry was evicted while dirty.
    EvictedDirty,
    /// An entry was evicted while a descendant was dirty.
    EvictedBlocked,
    /// An entry was evicted while pinned.
    EvictedPinned,
}

/// The first event of a trace that broke a write-order rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderViolation {
    /// Index of the event in [`WriteTrace::events`].
    pub event: usize,
    /// The rule broken.
    pub kind: ViolationKind,
    /// The entry written or evicted.
    pub key: Key,
    /// The dirty descendants at the time (for written/evicted-blocked), sorted.
    pub dirty_descendants: Vec<Key>,
}

impl fmt::Display for OrderViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ViolationKind::WrittenBeforeChild => "written while descendants were dirty",
            ViolationKind::EvictedDirty => "evicted while dirty",
            ViolationKind::EvictedBlocked => "evicted while descendants were dirty",
            ViolationKind::EvictedPinned => "evicted while pinned",
        };
        write!(f, "event {}: {} {what}", self.event, self.key)?;
        if !self.dirty_descendants.is_empty() {
            let list: Vec<String> = self.dirty_descendants.iter().map(Key::to_string).collect();
            write!(f, " ({})", list.join(", "))?;
        }
        Ok(())
    }
}

impl std::error::Error for OrderViolation {}

/// The checker's own model of the cache, rebuilt from the trace.
#[derive(Default)]
struct Replay {
    dirty: BTreeSet<Key>,
    pinned: BTreeSet<Key>,
    children: BTreeMap<Key, BTreeSet<Key>>,
}

impl Replay {
    fn dirty_descendants(&self, key: Key) -> Vec<Key> {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<Key> = self.children_of(key);
        let mut out = BTreeSet::new();
        while let Some(k) = stack.pop() {
            if !seen.insert(k) {
                continue;
            }
            if self.dirty.contains(&k) {
                out.insert(k);
            }
            stack.extend(self.children_of(k));
        }
        out.into_iter().collect()
    }

    fn children_of(&self, key: Key) -> Vec<Key> {
        self.children
            .get(&key)
            .map(|c| c.iter().copied().collect())
            .unwrap_or_default()
    }

    fn rekey(&mut self, from: Key, to: Key) {
        if self.dirty.remove(&from) {
            self.dirty.insert(to);
        }
        if self.pinned.remove(&from) {
            self.pinned.insert(to);
        }
        if let Some(c) = self.children.remove(&from) {
            self.children.insert(to, c);
        }
        for set in self.children.values_mut() {
            if set.remove(&from) {
                set.insert(to);
            }
        }
    }

    fn remove(&mut self, key: Key) {
        self.dirty.remove(&key);
        self.pinned.remove(&key);
        self.children.remove(&key);
        for set in self.children.values_mut() {
            set.remove(&key);
        }
    }
}

/// Replay `trace` and report the first write or eviction that broke the flush-dependency rules
/// (see the module docs).
pub fn check_write_order(trace: &WriteTrace) -> Result<(), OrderViolation> {
    let mut r = Replay::default();
    for (i, ev) in trace.events.iter().enumerate() {
        let violation = |kind, key, dirty_descendants| OrderViolation {
            event: i,
            kind,
            key,
            dirty_descendants,
        };
        match ev {
            TraceEvent::Dirtied(k) => {
                r.dirty.insert(*k);
            }
            TraceEvent::Cleaned(k) => {
                r.dirty.remove(k);
            }
            TraceEvent::Written {
                key,
                dirty_children,
                ..
            } => {
                let mut bad = r.dirty_descendants(*key);
                bad.extend(dirty_children.iter().copied());
                bad.sort();
                bad.dedup();
                if !bad.is_empty() {
                    return Err(violation(ViolationKind::WrittenBeforeChild, *key, bad));
                }
                r.dirty.remove(key);
            }
            TraceEvent::DependencyAdded { parent, child } => {
                r.children.entry(*parent).or_default().insert(*child);
            }
            TraceEvent::DependencyRemoved { parent, child } => {
                if let Some(set) = r.children.get_mut(parent) {
                    set.remove(child);
                }
            }
            TraceEvent::Moved { from, to } => r.rekey(Key::Entry(*from), Key::Entry(*to)),
            TraceEvent::Removed(k) => r.remove(*k),
            TraceEvent::Pinned(k) => {
                r.pinned.insert(*k);
            }
            TraceEvent::Unpinned(k) => {
                r.pinned.remove(k);
            }
            TraceEvent::Evicted(k) => {
                if r.dirty.contains(k) {
                    return Err(violation(ViolationKind::EvictedDirty, *k, Vec::new()));
                }
                if r.pinned.contains(k) {
                    return Err(violation(ViolationKind::EvictedPinned, *k, Vec::new()));
                }
                let bad = r.dirty_descendants(*k);
                if !bad.is_empty() {
                    return Err(violation(ViolationKind::EvictedBlocked, *k, bad));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(a: u64) -> Key {
        Key::Entry(Addr(a))
    }

    fn written(a: u64) -> TraceEvent {
        TraceEvent::Written {
            key: e(a),
            type_name: "T",
            len: 8,
            dirty_children: Vec::new(),
        }
    }

    fn dep(p: u64, c: u64) -> TraceEvent {
        TraceEvent::DependencyAdded {
            parent: e(p),
            child: e(c),
        }
    }

    #[test]
    fn accepts_children_first() {
        let t = WriteTrace {
            events: vec![
                TraceEvent::Dirtied(e(1)),
                TraceEvent::Dirtied(e(2)),
                dep(1, 2),
                written(2),
                written(1),
            ],
        };
        assert_eq!(check_write_order(&t), Ok(()));
        assert_eq!(t.written(), vec![Addr(2), Addr(1)]);
    }

    #[test]
    fn rejects_parent_first() {
        let t = WriteTrace {
            events: vec![
                TraceEvent::Dirtied(e(1)),
                TraceEvent::Dirtied(e(2)),
                dep(1, 2),
                written(1),
                written(2),
            ],
        };
        let v = check_write_order(&t).unwrap_err();
        assert_eq!(
            (v.event, v.kind, v.key),
            (3, ViolationKind::WrittenBeforeChild, e(1))
        );
        assert_eq!(v.dirty_descendants, vec![e(2)]);
        assert!(
            v.to_string()
                .contains("written while descendants were dirty")
        );
    }

    #[test]
    fn rejects_a_dirty_grandchild_under_a_clean_child() {
        let t = WriteTrace {
            events: vec![
                dep(1, 2),
                dep(2, 3),
                TraceEvent::Dirtied(e(1)),
                TraceEvent::Dirtied(e(3)),
                written(1),
            ],
        };
        assert_eq!(
            check_write_order(&t).unwrap_err().kind,
            ViolationKind::WrittenBeforeChild
        );
    }

    #[test]
    fn trusts_neither_side_alone() {
        // The replay sees nothing wrong, but the cache itself reported a dirty child.
        let t = WriteTrace {
            events: vec![TraceEvent::Written {
                key: e(1),
                type_name: "T",
                len: 8,
                dirty_children: vec![e(9)],
            }],
        };
        assert!(check_write_order(&t).is_err());
    }

    #[test]
    fn follows_moves_removals_and_proxies() {
        use crate::entry::ProxyId;
        let p = Key::Proxy(ProxyId(0));
        let t = WriteTrace {
            events: vec![
                TraceEvent::Dirtied(e(1)),
                TraceEvent::Dirtied(e(2)),
                TraceEvent::Dirtied(p),
                dep(1, 2),
                TraceEvent::DependencyAdded {
                    parent: e(2),
                    child: p,
                },
                TraceEvent::Moved {
                    from: Addr(2),
                    to: Addr(5),
                },
                TraceEvent::Cleaned(p),
                written(5),
                written(1),
                TraceEvent::Removed(e(1)),
            ],
        };
        assert_eq!(check_write_order(&t), Ok(()));
    }

    #[test]
    fn rejects_illegal_evictions() {
        let pinned = WriteTrace {
            events: vec![TraceEvent::Pinned(e(1)), TraceEvent::Evicted(e(1))],
        };
        assert_eq!(
            check_write_order(&pinned).unwrap_err().kind,
            ViolationKind::EvictedPinned
        );
        let dirty = WriteTrace {
            events: vec![TraceEvent::Dirtied(e(1)), TraceEvent::Evicted(e(1))],
        };
        assert_eq!(
            check_write_order(&dirty).unwrap_err().kind,
            ViolationKind::EvictedDirty
        );
        let blocked = WriteTrace {
            events: vec![
                dep(1, 2),
                TraceEvent::Dirtied(e(2)),
                TraceEvent::Evicted(e(1)),
            ],
        };
        assert_eq!(
            check_write_order(&blocked).unwrap_err().kind,
            ViolationKind::EvictedBlocked
        );
    }
}
