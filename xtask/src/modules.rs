//! The house inside a crate: the graph of its top-level modules drawn from `crate::` paths,
//! which must have no circle (part of `cargo xtask deps`).
//!
//! A top-level module is a room: `src/store.rs`, or `src/dataset/` with everything below it.
//! An edge `a -> b` is any `crate::b` path written in a file of room `a` outside comments
//! (imports and paths in code alike). Paths inside a room (its own submodules, `super::`) are
//! the room's business; a circle between rooms means two concerns that cannot be understood,
//! tested or moved apart, so it is a violation.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The crates whose module graph is checked, by source directory.
pub const CHECKED: &[&str] = &["crates/dataset/src"];

/// Rooms and the rooms each one names.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// The room a file belongs to: its first path component below `src`, without `.rs`.
fn room(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    Some(first.strip_suffix(".rs").unwrap_or(first).to_owned())
}

/// The rooms named by `crate::NAME` in `source`, outside `//` comments.
pub fn named_rooms(source: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in source.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
            rest = after;
        }
    }
    out
}

/// The module graph of the crate whose sources are in `src`.
pub fn graph(src: &Path) -> Result<Graph, String> {
    let mut g = Graph::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).map_err(|e| e.to_string())?;
            let Some(from) = room(rel) else { continue };
            if from == "lib" || from == "main" {
                // The crate root declares and re-exports every room: it is the roof, not a room.
                continue;
            }
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let edges = g.entry(from.clone()).or_default();
            edges.extend(named_rooms(&text).into_iter().filter(|to| *to != from));
        }
    }
    Ok(g)
}

/// Every circle of `g`, each as the rooms along it (the first repeated at the end), found by a
/// depth-first search; one circle per back edge.
pub fn circles(g: &Graph) -> Vec<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        g: &Graph,
        node: &str,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
        out: &mut Vec<Vec<String>>,
    ) {
        marks.insert(node.to_owned(), Mark::Open);
        path.push(node.to_owned());
        for next in g.get(node).into_iter().flatten() {
            match marks.get(next.as_str()) {
                Some(Mark::Open) => {
                    let start = path.iter().position(|n| n == next).unwrap_or(0);
                    let mut circle = path[start..].to_vec();
                    circle.push(next.clone());
                    out.push(circle);
                }
                Some(Mark::Done) => {}
                None => visit(g, next, marks, path, out),
            }
        }
        path.pop();
        marks.insert(node.to_owned(), Mark::Done);
    }
    let mut marks = BTreeMap::new();
    let mut out = Vec::new();
    for node in g.keys() {
        if !marks.contains_key(node.as_str()) {
            visit(g, node, &mut marks, &mut Vec::new(), &mut out);
        }
    }
    out
}

/// The circles of every checked crate, as printable lines.
pub fn check_workspace(root: &Path) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for dir in CHECKED {
        for c in circles(&graph(&root.join(dir))?) {
            out.push(format!("{dir}: module import circle {}", c.join(" -> ")));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(edges: &[(&str, &[&str])]) -> Graph {
        edges
            .iter()
            .map(|(a, bs)| {
                (
                    (*a).to_owned(),
                    bs.iter().map(|b| (*b).to_owned()).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn workspace_modules_have_no_circle() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let found = check_workspace(&root).unwrap();
        assert!(found.is_empty(), "{found:#?}");
        // The graph is not empty: the check looked at the real crate.
        let dataset = graph(&root.join(CHECKED[0])).unwrap();
        assert!(dataset["dataset"].contains("store"), "{dataset:?}");
    }

    #[test]
    fn finds_paths_outside_comments() {
        let src = "use crate::store::Store;\n// crate::nope\nlet x = crate::link::lookup(); // crate::no\n";
        let named: Vec<_> = named_rooms(src).into_iter().collect();
        assert_eq!(named, ["link", "store"]);
    }

    #[test]
    fn reports_a_circle_and_accepts_a_dag() {
        assert!(circles(&g(&[("a", &["b"]), ("b", &["c"]), ("c", &[])])).is_empty());
        let found = circles(&g(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"])]));
        assert_eq!(found, [vec!["a", "b", "c", "a"]]);
    }
}
