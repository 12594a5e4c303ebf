//! Groups: new-style (links in the object header, "compact" storage) and old-style (a symbol
//! table: local heap of names, group B-tree, symbol table nodes). Dense link storage (fractal
//! heap) is reported as unsupported.

use h5chunk_format::Addr;
use h5chunk_format::btree1::{GroupKey, GroupNode, MAX_DEPTH};
use h5chunk_format::local_heap::{LocalHeap, LocalHeapData};
use h5chunk_format::message::{GroupInfo, Link, LinkInfo, LinkTarget, Message, SymbolTable};
use h5chunk_format::symbol_table_entry::{Cache, SymbolTableEntry};
use h5chunk_format::symbol_table_node::SymbolTableNode;

use crate::error::{Error, Result};
use crate::file::FileInner;
use crate::object::raw;

/// The group B-tree's K (`group internal node K`, libhdf5's default 16) used for new groups.
pub(crate) const GROUP_INTERNAL_K: u16 = 16;
/// The symbol table nodes' K (`group leaf node K`, default 4: 8 entries per node).
pub(crate) const GROUP_LEAF_K: u16 = 4;
/// The local heap data segment libhdf5 gives a new group.
const NEW_HEAP_SIZE: usize = 88;

/// What a link points to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkValue {
    /// An object in this file.
    Hard(Addr),
    /// A path in this file.
    Soft(String),
    /// An object in another file.
    External {
        /// The other file.
        file: String,
        /// The object's path there.
        path: String,
    },
}

/// How a group stores its links.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Storage {
    Compact,
    SymbolTable { btree: Addr, heap: Addr },
}

pub(crate) fn storage_of(f: &FileInner, group: Addr) -> Result<Storage> {
    let mut found = None;
    for m in f.messages(group)? {
        match m {
            Message::SymbolTable(st) => {
                return Ok(Storage::SymbolTable {
                    btree: st.btree_address,
                    heap: st.local_heap_address,
                });
            }
            Message::LinkInfo(li) => {
                if li.fractal_heap_address.is_some() {
                    return Err(Error::Unsupported("dense link storage (fractal heap)"));
                }
                found = Some(Storage::Compact);
            }
            _ => {}
        }
    }
    found.ok_or_else(|| Error::InvalidArgument(format!("object @ {group} is not a group")))
}

/// Every link of the group whose header is at `group`, sorted by name.
pub(crate) fn links(f: &FileInner, group: Addr) -> Result<Vec<(String, LinkValue)>> {
    let mut out = Vec::new();
    match storage_of(f, group)? {
        Storage::Compact => {
            for m in f.messages(group)? {
                if let Message::Link(l) = m {
                    let value = match l.target {
                        LinkTarget::Hard(a) => LinkValue::Hard(a),
                        LinkTarget::Soft(p) => {
                            LinkValue::Soft(String::from_utf8_lossy(&p).into_owned())
                        }
                        LinkTarget::External { file, path, .. } => LinkValue::External {
                            file: String::from_utf8_lossy(&file).into_owned(),
                            path: String::from_utf8_lossy(&path).into_owned(),
                        },
                        LinkTarget::UserDefined { .. } => continue,
                    };
                    out.push((String::from_utf8_lossy(&l.name).into_owned(), value));
                }
            }
        }
        Storage::SymbolTable { btree, heap } => {
            let (_, names) = read_heap(f, heap)?;
            let mut entries = Vec::new();
            collect_entries(f, btree, 0, &mut entries)?;
            for e in entries {
                let name = String::from_utf8_lossy(names.name(e.link_name_offset)?).into_owned();
                let value = match (e.cache(), e.object_header) {
                    (Cache::SoftLink { link_value_offset }, _) => LinkValue::Soft(
                        String::from_utf8_lossy(names.name(u64::from(link_value_offset))?)
                            .into_owned(),
                    ),
                    (_, Some(a)) => LinkValue::Hard(a),
                    (_, None) => continue,
                };
                out.push((name, value));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn read_heap(f: &FileInner, heap: Addr) -> Result<(LocalHeap, LocalHeapData)> {
    let s = f.sizes;
    let h = LocalHeap::decode(&f.read(heap, LocalHeap::encoded_len(s) as u64)?, heap, s)?;
    let data = f.read(h.data_segment_address, h.data_segment_size)?;
    let names = LocalHeapData::decode(&data, h.data_segment_address, s, h.free_list_head)?;
    Ok((h, names))
}

fn read_tree(f: &FileInner, at: Addr) -> Result<GroupNode> {
    let (s, k) = (f.sizes, f.group_internal_k);
    Ok(GroupNode::decode(
        &f.read(at, GroupNode::encoded_len(s, k, ()) as u64)?,
        at,
        s,
        k,
        (),
    )?)
}

fn read_snod(f: &FileInner, at: Addr) -> Result<SymbolTableNode> {
    let (s, k) = (f.sizes, f.group_leaf_k);
    Ok(SymbolTableNode::decode(
        &f.read(at, SymbolTableNode::encoded_len(k, s) as u64)?,
        at,
        s,
        k,
    )?)
}

fn collect_entries(
    f: &FileInner,
    node: Addr,
    depth: u8,
    out: &mut Vec<SymbolTableEntry>,
) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(Error::InvalidArgument(format!(
            "group B-tree @ {node} is deeper than {MAX_DEPTH}"
        )));
    }
    let tree = read_tree(f, node)?;
    for &child in &tree.children {
        if tree.level > 0 {
            collect_entries(f, child, depth + 1, out)?;
        } else {
            out.extend(read_snod(f, child)?.entries);
        }
    }
    Ok(())
}

/// The messages of a new group's object header.
pub(crate) fn new_group_messages(f: &FileInner) -> Result<Vec<Message>> {
    if f.bounds.new_style() {
        return Ok(vec![
            Message::LinkInfo(LinkInfo {
                max_creation_index: None,
                fractal_heap_address: None,
                name_index_address: None,
                creation_order_indexed: false,
                creation_order_index_address: None,
            }),
            Message::GroupInfo(GroupInfo {
                link_phase_change: None,
                estimates: None,
            }),
        ]);
    }
    // An old-style group: an empty local heap (the empty name at offset 0) and an empty group
    // B-tree leaf, written now.
    let s = f.sizes;
    let mut names = LocalHeapData::new(NEW_HEAP_SIZE, Addr(0), s);
    names.insert_name(b"")?;
    let heap_at = f.allocate(LocalHeap::encoded_len(s) as u64)?;
    let data_at = f.allocate(names.len())?;
    f.write(data_at, names.bytes())?;
    write_heap_header(f, heap_at, &names, data_at)?;
    let tree = GroupNode::new_leaf();
    let tree_at = f.allocate(GroupNode::encoded_len(s, GROUP_INTERNAL_K, ()) as u64)?;
    write_tree(f, tree_at, &tree)?;
    Ok(vec![Message::SymbolTable(SymbolTable {
        btree_address: tree_at,
        local_heap_address: heap_at,
    })])
}

fn write_heap_header(f: &FileInner, at: Addr, names: &LocalHeapData, data_at: Addr) -> Result<()> {
    let h = LocalHeap {
        data_segment_size: names.len(),
        free_list_head: names.free_list_head(),
        data_segment_address: data_at,
    };
    let mut out = Vec::new();
    h.encode(f.sizes, &mut out)?;
    f.write(at, &out)
}

fn write_tree(f: &FileInner, at: Addr, tree: &GroupNode) -> Result<()> {
    let mut out = Vec::new();
    tree.encode(f.sizes, f.group_internal_k, (), &mut out)?;
    f.write(at, &out)
}

fn write_snod(f: &FileInner, at: Addr, node: &SymbolTableNode) -> Result<()> {
    let mut out = Vec::new();
    node.encode(f.sizes, &mut out)?;
    f.write(at, &out)
}

/// Add a hard link `name` → `target` to the group whose header is at `group`. `cache` is the
/// cache entry type for old-style groups (a group member caches its symbol table).
pub(crate) fn add_link(
    f: &FileInner,
    group: Addr,
    name: &str,
    target: Addr,
    cache: Cache,
) -> Result<()> {
    if name.is_empty() || name.contains('/') || name.contains('\0') {
        return Err(Error::InvalidArgument(format!(
            "invalid link name {name:?}"
        )));
    }
    if links(f, group)?.iter().any(|(n, _)| n == name) {
        return Err(Error::InvalidArgument(format!(
            "a link named {name:?} exists already"
        )));
    }
    match storage_of(f, group)? {
        Storage::Compact => {
            let m = raw(
                &Message::Link(Link::hard(name.as_bytes(), target)),
                0,
                f.sizes,
            )?;
            f.add_message(group, m)
        }
        Storage::SymbolTable { btree, heap } => add_symbol(f, btree, heap, name, target, cache),
    }
}

/// Insert into an old-style group whose B-tree is a single leaf (what h5chunk creates and what
/// libhdf5 has for groups of up to 256 members). Deeper trees need the btree1 crate's group
/// support.
fn add_symbol(
    f: &FileInner,
    btree: Addr,
    heap: Addr,
    name: &str,
    target: Addr,
    cache: Cache,
) -> Result<()> {
    let s = f.sizes;
    let mut tree = read_tree(f, btree)?;
    if tree.level != 0 {
        return Err(Error::Unsupported(
            "adding links to an old-style group with a multi-level B-tree",
        ));
    }
    let (_, mut names) = read_heap(f, heap)?;
    let old_len = names.len();
    let offset = names.insert_name(name.as_bytes())?;
    // The heap's data segment moves when it grows (the old space is abandoned).
    let (h, _) = read_heap(f, heap)?;
    let data_at = if names.len() == old_len {
        h.data_segment_address
    } else {
        f.allocate(names.len())?
    };
    f.write(data_at, names.bytes())?;
    write_heap_header(f, heap, &names, data_at)?;
    let entry = SymbolTableEntry::new(offset, Some(target), cache, s)?;
    let name_of =
        |e: &SymbolTableEntry| -> Result<Vec<u8>> { Ok(names.name(e.link_name_offset)?.to_vec()) };
    // The symbol table node whose range holds the name: the first whose last name is greater,
    // else the last one.
    let mut pos = tree.children.len().saturating_sub(1);
    for (i, &child) in tree.children.iter().enumerate() {
        let node = read_snod(f, child)?;
        if let Some(last) = node.entries.last()
            && name_of(last)?.as_slice() > name.as_bytes()
        {
            pos = i;
            break;
        }
    }
    let capacity = usize::from(2 * f.group_leaf_k);
    let mut node = match tree.children.get(pos) {
        Some(&a) => read_snod(f, a)?,
        None => SymbolTableNode::new(f.group_leaf_k),
    };
    let at = node
        .entries
        .iter()
        .map(name_of)
        .collect::<Result<Vec<_>>>()?
        .iter()
        .position(|n| n.as_slice() > name.as_bytes())
        .unwrap_or(node.entries.len());
    node.entries.insert(at, entry);
    let mut nodes = vec![node];
    if nodes[0].entries.len() > capacity {
        // Split in two halves, as libhdf5 does.
        let half = nodes[0].entries.len() / 2;
        let right = nodes[0].entries.split_off(half);
        let mut r = SymbolTableNode::new(f.group_leaf_k);
        r.entries = right;
        nodes.push(r);
    }
    if tree.children.len() + nodes.len() - usize::from(!tree.children.is_empty())
        > usize::from(2 * f.group_internal_k)
    {
        return Err(Error::Unsupported(
            "an old-style group B-tree leaf that must split",
        ));
    }
    let snod_len = SymbolTableNode::encoded_len(f.group_leaf_k, s) as u64;
    let mut addrs = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let a = match (i, tree.children.get(pos)) {
            (0, Some(&a)) => a,
            _ => f.allocate(snod_len)?,
        };
        write_snod(f, a, n)?;
        addrs.push(a);
    }
    // Rebuild the leaf's children and keys: key[0] is the empty name, key[i + 1] the last
    // name of child i.
    let mut children = tree.children.clone();
    if children.is_empty() {
        children = addrs.clone();
    } else {
        children.splice(pos..=pos, addrs.iter().copied());
    }
    let mut keys = vec![GroupKey(0)];
    for &c in &children {
        let n = read_snod(f, c)?;
        keys.push(GroupKey(n.entries.last().map_or(0, |e| e.link_name_offset)));
    }
    tree.children = children;
    tree.keys = keys;
    write_tree(f, btree, &tree)
}
