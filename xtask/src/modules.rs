//! The house inside a crate: the graph of its top-level modules drawn from `crate::` paths,
//! which must have no circle, and their names in `docs/ARCHITECTURE.md` (both part of
//! `cargo xtask deps`).
//!
//! A top-level module is a room: `src/store.rs`, or `src/dataset/` with everything below it.
//! An edge `a -> b` is any `crate::b` path written in a file of room `a` outside comments
//! (imports and paths in code alike). Paths inside a room (its own submodules, `super::`) are
//! the room's business; a circle between rooms means two concerns that cannot be understood,
//! tested or moved apart, so it is a violation. Every crate of the workspace is checked: its
//! library or binary in `src/`, and each program kept as a folder in `src/bin/NAME/` (a
//! program of one file has no rooms).
//!
//! Every room must also be named, as a word, in the section of `docs/ARCHITECTURE.md` whose
//! `## ` heading names its crate's folder (`format`, `btree1`, `xtask`, ...), so the map of the
//! house cannot fall behind the house.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The folders holding crates, below the workspace root: each child with a `src/` is a crate.
const CRATE_PARENTS: &[&str] = &["crates"];
/// Crates at the workspace root.
const ROOT_CRATES: &[&str] = &["benches", "xtask"];

/// One crate (or one program of a crate) whose rooms are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The crate's folder name (`dataset`, `xtask`): what its section of ARCHITECTURE.md names.
    pub name: String,
    /// Where its rooms are, relative to the workspace root (`crates/dataset/src`).
    pub src: PathBuf,
}

/// Every crate of the workspace, and every program kept as a folder in a crate's `src/bin/`.
pub fn checked(root: &Path) -> Result<Vec<Checked>, String> {
    let mut dirs: Vec<(String, PathBuf)> = Vec::new();
    for parent in CRATE_PARENTS {
        let at = root.join(parent);
        let entries = std::fs::read_dir(&at).map_err(|e| format!("{}: {e}", at.display()))?;
        for entry in entries {
            let path = entry.map_err(|e| e.to_string())?.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if path.join("src").is_dir() {
                dirs.push((name.to_owned(), Path::new(parent).join(name)));
            }
        }
    }
    for name in ROOT_CRATES {
        dirs.push(((*name).to_owned(), PathBuf::from(name)));
    }
    let mut out = Vec::new();
    for (name, dir) in dirs {
        let src = dir.join("src");
        let bin = root.join(&src).join("bin");
        if bin.is_dir() {
            let entries = std::fs::read_dir(&bin).map_err(|e| format!("{}: {e}", bin.display()))?;
            for entry in entries {
                let path = entry.map_err(|e| e.to_string())?.path();
                if let Some(program) = path.file_name().and_then(|n| n.to_str())
                    && path.is_dir()
                {
                    out.push(Checked {
                        name: name.clone(),
                        src: src.join("bin").join(program),
                    });
                }
            }
        }
        out.push(Checked { name, src });
    }
    out.sort_by(|a, b| a.src.cmp(&b.src));
    Ok(out)
}

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
            if from == "lib" || from == "main" || from == "bin" {
                // The crate root declares and re-exports every room: it is the roof, not a room.
                // Programs in `bin/` are crates of their own, checked on their own.
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

/// The rooms of the crate whose sources are in `src`: its top-level modules, files and
/// folders, without the roof (`lib`, `main`) and the programs of `bin/`.
pub fn rooms(src: &Path) -> Result<BTreeSet<String>, String> {
    let mut out = BTreeSet::new();
    let entries = std::fs::read_dir(src).map_err(|e| format!("{}: {e}", src.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let room = if path.is_dir() {
            name
        } else if let Some(stem) = name.strip_suffix(".rs") {
            stem
        } else {
            continue;
        };
        if !matches!(room, "lib" | "main" | "bin") {
            out.insert(room.to_owned());
        }
    }
    Ok(out)
}

/// The text of the sections of `doc` (a Markdown file) whose `## ` heading names `crate_name`
/// as a word.
pub fn sections_naming(doc: &str, crate_name: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in doc.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            inside = words(heading).contains(crate_name);
        }
        if inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The words of `text`: runs of letters, digits, `_` and `-`.
fn words(text: &str) -> BTreeSet<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// The circles of every checked crate and the rooms `docs/ARCHITECTURE.md` does not name, as
/// printable lines.
pub fn check_workspace(root: &Path) -> Result<Vec<String>, String> {
    let doc_path = root.join("docs/ARCHITECTURE.md");
    let doc =
        std::fs::read_to_string(&doc_path).map_err(|e| format!("{}: {e}", doc_path.display()))?;
    let mut out = Vec::new();
    for c in checked(root)? {
        let src = root.join(&c.src);
        let dir = c.src.display();
        for circle in circles(&graph(&src)?) {
            out.push(format!(
                "{dir}: module import circle {}",
                circle.join(" -> ")
            ));
        }
        let section = sections_naming(&doc, &c.name);
        let named = words(&section);
        for room in rooms(&src)? {
            if !named.contains(room.as_str()) {
                out.push(format!(
                    "{dir}: module `{room}` is not named in docs/ARCHITECTURE.md's section on \
                     `{}`",
                    c.name
                ));
            }
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
        // The graph is not empty: the check looked at the real crates.
        let dataset = graph(&root.join("crates/dataset/src")).unwrap();
        assert!(dataset["dataset"].contains("store"), "{dataset:?}");
        let all = checked(&root).unwrap();
        for name in [
            "format", "cache", "btree2", "dataset", "cli", "xtask", "benches",
        ] {
            assert!(
                all.iter().any(|c| c.name == name),
                "{name} not checked: {all:?}"
            );
        }
    }

    #[test]
    fn a_room_missing_from_its_section_is_found() {
        let doc = "# A\n## crates/format (`h5chunk-format`)\nHolds `cursor` and superblock.\n\
                   ## crates/cache\nThe `alloc` room.\n";
        let format = sections_naming(doc, "format");
        assert!(words(&format).contains("cursor"));
        assert!(
            !words(&format).contains("alloc"),
            "another crate's section: {format}"
        );
        assert!(words(&sections_naming(doc, "cache")).contains("alloc"));
        assert!(sections_naming(doc, "btree1").is_empty());
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
