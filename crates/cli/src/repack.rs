//! `h5chunk repack [--paged SIZE] [--metadata-first] IN OUT`: rewrite a file object by object,
//! chunks copied as stored (filters, filter masks, chunk shape, index kind, fill value and
//! maximum shape kept), optionally as a paged file with its metadata in the first pages.
//!
//! What the public API cannot write yet is refused, typed, naming the object and what it is;
//! OUT is then not left behind (the copy is made beside it and renamed when complete).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use h5chunk::storage::{MemStorage, Storage};
use h5chunk::types::{Datatype, DatatypeClass, TypeClass, VarLenKind};
use h5chunk::{
    Dataset, File, FileOptions, Group, GroupOptions, LinkValue, MemberKind, StorageKind,
};

use crate::CliResult;

/// A page size as given on the command line: bytes, or with a `KiB`/`MiB`/`GiB` (or `K`,
/// `M`, `G`) suffix.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{text:?} is not a size (4096, 64KiB, 8MiB)"))?;
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        _ => {
            return Err(format!(
                "{text:?}: unknown unit {unit:?} (use KiB, MiB, GiB)"
            ));
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// Run the command.
pub fn repack(
    input: &Path,
    output: &Path,
    paged: Option<u64>,
    metadata_first: bool,
) -> CliResult<()> {
    if metadata_first && paged.is_none() {
        return Err("--metadata-first needs --paged SIZE".to_owned());
    }
    let src = File::open(input).map_err(|e| format!("{}: {e}", input.display()))?;
    let mut options = match paged {
        Some(size) => FileOptions::paged(size),
        None => FileOptions::default(),
    };
    if metadata_first && let Some(page) = paged {
        // A dry run in memory, unpaged: what is not raw data is metadata.
        let mem = Arc::new(MemStorage::new());
        let dry = FileOptions::default()
            .create_on(mem.clone())
            .map_err(|e| format!("dry run: {e}"))?;
        let raw = copy_file(&src, &dry)?;
        dry.close().map_err(|e| format!("dry run: {e}"))?;
        let total = mem.len().map_err(|e| format!("dry run: {e}"))?;
        let meta = total.saturating_sub(raw);
        // Paging pads metadata blocks at page boundaries: leave a quarter more and a page.
        let room = meta.saturating_add(meta / 4).saturating_add(page);
        options.metadata_room = Some(room.div_ceil(page).saturating_mul(page));
    }
    let tmp = temp_beside(output);
    let result = (|| {
        let dst = options
            .create(&tmp)
            .map_err(|e| format!("{}: {e}", output.display()))?;
        copy_file(&src, &dst)?;
        dst.close()
            .map_err(|e| format!("{}: {e}", output.display()))
    })();
    match result {
        Ok(()) => std::fs::rename(&tmp, output).map_err(|e| format!("{}: {e}", output.display())),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

fn temp_beside(output: &Path) -> PathBuf {
    let mut name = output.file_name().unwrap_or_default().to_os_string();
    name.push(".h5chunk-repack");
    output.with_file_name(name)
}

/// Copy everything from `src` into the empty `dst`; the raw data bytes written.
fn copy_file(src: &File, dst: &File) -> CliResult<u64> {
    let root = src.root().map_err(|e| format!("/: {e}"))?;
    let mut seen = HashSet::new();
    seen.insert(root.object_address());
    let mut raw = 0u64;
    copy_attrs("/", &root.attrs().all(), &dst.attrs())?;
    let droot = dst.root().map_err(|e| format!("/: {e}"))?;
    copy_members(&root, &droot, &mut seen, &mut raw)?;
    Ok(raw)
}

fn unsupported(path: &str, what: &str) -> String {
    format!("{path}: not supported by repack: {what}")
}

/// The path of member `name` of the group at `group` (`/` joins without doubling).
pub(crate) fn join(group: &str, name: &str) -> String {
    if group.ends_with('/') {
        format!("{group}{name}")
    } else {
        format!("{group}/{name}")
    }
}

fn copy_members(src: &Group, dst: &Group, seen: &mut HashSet<u64>, raw: &mut u64) -> CliResult<()> {
    let gpath = src.path().to_owned();
    let ordered = src
        .tracks_creation_order()
        .map_err(|e| format!("{gpath}: {e}"))?;
    let members = if ordered {
        src.members_in_creation_order()
    } else {
        src.members()
    }
    .map_err(|e| format!("{gpath}: {e}"))?;
    for (name, kind) in members {
        let path = join(&gpath, &name);
        match kind {
            MemberKind::Group => {
                let g = src.group(&name).map_err(|e| format!("{path}: {e}"))?;
                if !seen.insert(g.object_address()) {
                    return Err(unsupported(&path, "a second hard link to an object"));
                }
                let track = g
                    .tracks_creation_order()
                    .map_err(|e| format!("{path}: {e}"))?;
                let d = dst
                    .create_group_with(&name, GroupOptions::track_order(track))
                    .map_err(|e| format!("{path}: {e}"))?;
                copy_attrs(&path, &g.attrs().all(), &d.attrs())?;
                copy_members(&g, &d, seen, raw)?;
            }
            MemberKind::Dataset => {
                let ds = src.dataset(&name).map_err(|e| format!("{path}: {e}"))?;
                if !seen.insert(ds.object_address()) {
                    return Err(unsupported(&path, "a second hard link to an object"));
                }
                *raw = raw.saturating_add(copy_dataset(&path, &name, &ds, dst)?);
            }
            MemberKind::Other => match src.link(&name).map_err(|e| format!("{path}: {e}"))? {
                Some(LinkValue::External { file, path: target }) => dst
                    .link_external(&name, &file, &target)
                    .map_err(|e| format!("{path}: {e}"))?,
                Some(LinkValue::Soft(target)) => {
                    return Err(unsupported(&path, &format!("a soft link (to {target})")));
                }
                Some(LinkValue::Hard(_)) => {
                    return Err(unsupported(
                        &path,
                        "an object neither group nor dataset (a committed datatype)",
                    ));
                }
                None => return Err(unsupported(&path, "a link of an unknown kind")),
            },
        }
    }
    Ok(())
}

/// Whether a type holds references or variable-length data anywhere (its stored bytes are
/// addresses into this file, not values).
fn holds_pointers(t: &Datatype) -> Option<&'static str> {
    match &t.class {
        DatatypeClass::VarLen { .. } => Some("variable-length data"),
        DatatypeClass::Reference { .. } => Some("references"),
        DatatypeClass::Compound(members) => {
            members.iter().find_map(|m| holds_pointers(&m.datatype))
        }
        DatatypeClass::Array { base, .. } => holds_pointers(base),
        _ => None,
    }
}

fn is_vlen_string(t: &Datatype) -> bool {
    matches!(
        t.class,
        DatatypeClass::VarLen {
            kind: VarLenKind::String(_),
            ..
        }
    )
}

fn copy_attrs(
    path: &str,
    attrs: &h5chunk::Result<Vec<h5chunk::Attr>>,
    dst: &h5chunk::Attributes<'_>,
) -> CliResult<()> {
    let attrs = attrs
        .as_ref()
        .map_err(|e| format!("{path}: attributes: {e}"))?;
    for a in attrs {
        let at = format!("{path} @{}", a.name());
        let Some(shape) = a.shape() else {
            return Err(unsupported(&at, "an empty (null dataspace) attribute"));
        };
        let vlen_string = is_vlen_string(a.datatype());
        let written = if vlen_string {
            let strings = a.strings().map_err(|e| format!("{at}: {e}"))?;
            let refs: Vec<&str> = strings.iter().map(String::as_str).collect();
            match (shape, refs.as_slice()) {
                ([], [one]) => dst.set_str(a.name(), one),
                ([_], _) => dst.set_strs(a.name(), &refs),
                _ => {
                    return Err(unsupported(
                        &at,
                        "a string attribute of more than one dimension",
                    ));
                }
            }
        } else if let Some(what) = holds_pointers(a.datatype()) {
            return Err(unsupported(&at, &format!("an attribute of {what}")));
        } else {
            let shape = (!shape.is_empty()).then_some(shape);
            dst.set_raw(a.name(), shape, a.datatype(), a.raw())
        };
        written.map_err(|e| format!("{at}: {e}"))?;
    }
    Ok(())
}

/// Copy one dataset into `dst` as `name`; its raw bytes written.
fn copy_dataset(path: &str, name: &str, ds: &Dataset, dst: &Group) -> CliResult<u64> {
    let err = |e: h5chunk::Error| format!("{path}: {e}");
    if ds.is_null() {
        return Err(unsupported(path, "a dataset with a null dataspace"));
    }
    if ds.external_files().is_some() {
        return Err(unsupported(path, "a dataset stored in external files"));
    }
    let vlen_string = is_vlen_string(ds.datatype());
    if !vlen_string && let Some(what) = holds_pointers(ds.datatype()) {
        return Err(unsupported(path, &format!("a dataset of {what}")));
    }
    let mut fill = ds.fill_value_raw();
    let shape = ds.shape();
    let max = ds.max_shape();
    let mut b = dst
        .new_dataset_with_type(ds.datatype().clone())
        .shape(&shape);
    // A maximum shape other than the shape makes the builder choose chunks: only then.
    if max.iter().zip(&shape).any(|(m, &d)| *m != Some(d)) {
        b = b.max_shape(&max);
    }
    // A fill of zeros is the default one: left so (libhdf5 converts no user fill value of
    // some array types).
    if fill.iter().any(|&x| x != 0) && !vlen_string {
        if ds.dtype().class == TypeClass::Other {
            return Err(unsupported(
                path,
                "a fill value other than zero of a compound, array or other non-number type",
            ));
        }
        ds.dtype().to_from_le(&mut fill);
        b = b.fill_value_bytes(&fill);
    }
    let mut raw = 0u64;
    let out = match ds.storage_kind() {
        StorageKind::Chunked => {
            let (Some(chunk), Some(index)) = (ds.chunk(), ds.index_kind()) else {
                return Err(unsupported(
                    path,
                    "a chunked dataset without chunk shape or index",
                ));
            };
            b = b
                .chunk(&chunk)
                .index(index)
                .stored_filters(&ds.filters().map_err(err)?);
            if ds.edge_chunks_unfiltered() {
                b = b.dont_filter_partial_chunks();
            }
            let out = b.create(name).map_err(err)?;
            if vlen_string {
                let strings = ds.read_strings().map_err(err)?;
                let refs: Vec<&str> = strings.iter().map(String::as_str).collect();
                out.write_strings(&refs).map_err(err)?;
            } else {
                for c in ds.chunks().map_err(err)? {
                    if let Some((bytes, mask)) = ds.read_direct_chunk(&c.offset).map_err(err)? {
                        out.write_direct_chunk(&c.offset, &bytes, mask)
                            .map_err(err)?;
                        raw = raw.saturating_add(bytes.len() as u64);
                    }
                }
            }
            out
        }
        StorageKind::Contiguous => {
            if vlen_string {
                return Err(unsupported(
                    path,
                    "a contiguous dataset of variable-length strings",
                ));
            }
            let stored = match ds.contiguous_extent() {
                Some(_) => {
                    let mut data = ds.read_raw().map_err(err)?;
                    ds.dtype().to_from_le(&mut data);
                    raw = data.len() as u64;
                    Some(data)
                }
                None => None,
            };
            b.contiguous(stored).create(name).map_err(err)?
        }
        StorageKind::Compact => return Err(unsupported(path, "a compact dataset")),
        StorageKind::Virtual => return Err(unsupported(path, "a virtual dataset")),
    };
    copy_attrs(path, &ds.attrs().all(), &out.attrs())?;
    Ok(raw)
}
