//! `cargo xtask deps`: the crate layering of docs/STYLE.md, section 1 (the house), checked on
//! `cargo metadata`.
//!
//! Every dependency edge between two workspace packages (normal, dev and build alike: a
//! dev-dependency on a higher layer breaks the layering just as much) must be allowed by
//! [`LAYERS`]. A workspace package missing from the table is itself a violation, so a new crate
//! cannot slip in without someone deciding where it sits. A crate depending on itself (a
//! dev-dependency that turns on a testing feature) is allowed.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use serde_json::Value;

const FORMAT: &str = "h5chunk-format";
const CACHE: &str = "h5chunk-cache";
/// The filter pipeline: chunk encodings only, beside the structure crates.
const FILTERS: &str = "h5chunk-filters";
/// Test support (fixtures, interop tools, a minimal file writer): a dev-dependency of any crate,
/// never a normal one, so it cannot carry a layer violation into a library.
const TESTKIT: &str = "h5chunk-testkit";
/// Dense storage: the fractal heap and its name indexes, over the v2 B-tree.
const DENSE: &str = "h5chunk-dense";
const STRUCTURES: [&str; 5] = [
    "h5chunk-btree1",
    "h5chunk-btree2",
    "h5chunk-earray",
    "h5chunk-farray",
    "h5chunk-skiplist",
];

/// Which workspace packages a package may depend on.
#[derive(Debug, Clone, Copy)]
enum Allowed {
    Only(&'static [&'static str]),
    Any,
}

/// docs/STYLE.md, section 1 (the house), by package name.
const LAYERS: &[(&str, Allowed)] = &[
    (FORMAT, Allowed::Only(&[])),
    (CACHE, Allowed::Only(&[FORMAT])),
    // The five structure crates never depend on each other.
    ("h5chunk-btree1", Allowed::Only(&[FORMAT, CACHE])),
    ("h5chunk-btree2", Allowed::Only(&[FORMAT, CACHE])),
    ("h5chunk-earray", Allowed::Only(&[FORMAT, CACHE])),
    ("h5chunk-farray", Allowed::Only(&[FORMAT, CACHE])),
    ("h5chunk-skiplist", Allowed::Only(&[FORMAT, CACHE])),
    (FILTERS, Allowed::Only(&[FORMAT])),
    // The one crate above a structure crate and below h5chunk: heaps indexed by v2 B-trees.
    (
        DENSE,
        Allowed::Only(&[FORMAT, CACHE, STRUCTURES[1], FILTERS]),
    ),
    (
        "h5chunk",
        Allowed::Only(&[
            FORMAT,
            CACHE,
            STRUCTURES[0],
            STRUCTURES[1],
            STRUCTURES[2],
            STRUCTURES[3],
            STRUCTURES[4],
            FILTERS,
            DENSE,
        ]),
    ),
    // kerchunk references: a client of h5chunk's public API (and the pipeline's filter ids).
    ("h5chunk-refs", Allowed::Only(&["h5chunk", FORMAT])),
    (
        "h5chunk-cli",
        Allowed::Only(&["h5chunk", "h5chunk-refs", FORMAT]),
    ),
    ("h5chunk-benches", Allowed::Any),
    (TESTKIT, Allowed::Only(&[FORMAT, CACHE])),
    ("xtask", Allowed::Only(&[])),
];

/// A workspace package and its dependencies on other workspace packages.
#[derive(Debug, PartialEq, Eq)]
pub struct Package {
    pub name: String,
    /// (dependency package name, kind: "normal", "dev" or "build")
    pub deps: Vec<(String, String)>,
}

/// One edge (or package) that breaks the layering.
#[derive(Debug, PartialEq, Eq)]
pub enum Violation {
    Forbidden {
        from: String,
        to: String,
        kind: String,
    },
    Unlisted {
        package: String,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Forbidden { from, to, kind } => {
                write!(f, "{from} -> {to} ({kind} dependency) is not allowed")?;
                match allowed(from) {
                    Some(Allowed::Only([])) => {
                        write!(f, "; {from} may depend on no workspace crate")
                    }
                    Some(Allowed::Only(list)) => {
                        write!(f, "; {from} may depend on: {}", list.join(", "))
                    }
                    Some(Allowed::Any) | None => Ok(()),
                }
            }
            Violation::Unlisted { package } => write!(
                f,
                "workspace package {package} is not in the layering table: add it to \
                 docs/STYLE.md, section 1 (the house) and xtask/src/deps.rs"
            ),
        }
    }
}

fn allowed(package: &str) -> Option<Allowed> {
    LAYERS
        .iter()
        .find(|(name, _)| *name == package)
        .map(|(_, allowed)| *allowed)
}

/// Runs `cargo metadata` for the workspace at `root` and checks it.
pub fn check_workspace(root: &Path) -> Result<Vec<Violation>, String> {
    let mut cmd = crate::cargo();
    cmd.current_dir(root)
        .args(["metadata", "--format-version", "1", "--no-deps"]);
    let output = cmd
        .output()
        .map_err(|e| format!("cannot run {}: {e}", crate::describe(&cmd)))?;
    if !output.status.success() {
        return Err(format!(
            "{} failed: {}",
            crate::describe(&cmd),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let metadata: Value =
        serde_json::from_slice(&output.stdout).map_err(|e| format!("cargo metadata: {e}"))?;
    Ok(check(&packages(&metadata)?))
}

/// Workspace packages with their workspace-internal dependencies, from `cargo metadata
/// --no-deps` JSON (whose `packages` are exactly the workspace members).
pub fn packages(metadata: &Value) -> Result<Vec<Package>, String> {
    let list = metadata["packages"]
        .as_array()
        .ok_or("cargo metadata: no `packages` array")?;
    let names: BTreeSet<&str> = list.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut out = Vec::new();
    for package in list {
        let name = package["name"]
            .as_str()
            .ok_or("cargo metadata: package without a name")?;
        let mut deps = Vec::new();
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let Some(dep_name) = dep["name"].as_str() else {
                continue;
            };
            if names.contains(dep_name) {
                let kind = dep["kind"].as_str().unwrap_or("normal");
                deps.push((dep_name.to_string(), kind.to_string()));
            }
        }
        out.push(Package {
            name: name.to_string(),
            deps,
        });
    }
    Ok(out)
}

/// Every violation of [`LAYERS`] in `packages`.
pub fn check(packages: &[Package]) -> Vec<Violation> {
    let mut violations = Vec::new();
    for package in packages {
        let Some(rule) = allowed(&package.name) else {
            violations.push(Violation::Unlisted {
                package: package.name.clone(),
            });
            continue;
        };
        for (to, kind) in &package.deps {
            // A dev-dependency of a crate on itself (to switch on a test feature) is no edge
            // between layers.
            let ok = to == &package.name
                || (to == TESTKIT && kind == "dev" && package.name != "xtask")
                || match rule {
                    Allowed::Any => true,
                    Allowed::Only(list) => list.contains(&to.as_str()),
                };
            if !ok {
                violations.push(Violation::Forbidden {
                    from: package.name.clone(),
                    to: to.clone(),
                    kind: kind.clone(),
                });
            }
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dep(name: &str, kind: Option<&str>) -> Value {
        json!({ "name": name, "kind": kind, "source": null, "path": "/ws/x" })
    }

    fn metadata(packages: Vec<(&str, Vec<Value>)>) -> Value {
        let packages: Vec<Value> = packages
            .into_iter()
            .map(|(name, deps)| json!({ "name": name, "dependencies": deps }))
            .collect();
        json!({ "packages": packages })
    }

    /// The real workspace, as `cargo test --workspace` builds it.
    #[test]
    fn workspace_respects_layering() {
        let violations = check_workspace(&crate::workspace_root()).unwrap();
        let text: Vec<String> = violations.iter().map(ToString::to_string).collect();
        assert!(violations.is_empty(), "{}", text.join("\n"));
    }

    #[test]
    fn accepts_the_documented_graph() {
        let graph = metadata(vec![
            ("h5chunk-format", vec![dep("zerocopy", None)]),
            ("h5chunk-cache", vec![dep("h5chunk-format", None)]),
            (
                "h5chunk-btree1",
                vec![
                    dep("h5chunk-format", None),
                    dep("h5chunk-cache", None),
                    dep("h5chunk-cache", Some("dev")),
                ],
            ),
            (
                "h5chunk",
                vec![dep("h5chunk-btree1", None), dep("h5chunk-cache", None)],
            ),
            ("h5chunk-cli", vec![dep("h5chunk", None)]),
            (
                "h5chunk-benches",
                vec![dep("h5chunk", None), dep("criterion", Some("dev"))],
            ),
            ("xtask", vec![dep("serde_json", None)]),
        ]);
        assert_eq!(check(&packages(&graph).unwrap()), vec![]);
    }

    #[test]
    fn accepts_self_dev_dependency_for_test_features() {
        let graph = metadata(vec![
            ("h5chunk-format", vec![]),
            (
                "h5chunk-cache",
                vec![
                    dep("h5chunk-format", None),
                    dep("h5chunk-cache", Some("dev")),
                ],
            ),
        ]);
        assert_eq!(check(&packages(&graph).unwrap()), vec![]);
    }

    #[test]
    fn rejects_structure_crate_depending_on_another() {
        let graph = metadata(vec![
            ("h5chunk-format", vec![]),
            ("h5chunk-cache", vec![dep("h5chunk-format", None)]),
            ("h5chunk-btree2", vec![dep("h5chunk-cache", None)]),
            (
                "h5chunk-btree1",
                vec![dep("h5chunk-cache", None), dep("h5chunk-btree2", None)],
            ),
        ]);
        assert_eq!(
            check(&packages(&graph).unwrap()),
            vec![Violation::Forbidden {
                from: "h5chunk-btree1".into(),
                to: "h5chunk-btree2".into(),
                kind: "normal".into(),
            }]
        );
    }

    #[test]
    fn rejects_lower_layer_dev_dependency_on_higher_layer() {
        let graph = metadata(vec![
            ("h5chunk-format", vec![dep("h5chunk", Some("dev"))]),
            ("h5chunk", vec![dep("h5chunk-format", None)]),
        ]);
        assert_eq!(
            check(&packages(&graph).unwrap()),
            vec![Violation::Forbidden {
                from: "h5chunk-format".into(),
                to: "h5chunk".into(),
                kind: "dev".into(),
            }]
        );
    }

    #[test]
    fn rejects_xtask_and_cli_reaching_past_their_layer() {
        let graph = metadata(vec![
            ("h5chunk-format", vec![]),
            ("h5chunk-cache", vec![dep("h5chunk-format", None)]),
            ("xtask", vec![dep("h5chunk-format", Some("build"))]),
            ("h5chunk-cli", vec![dep("h5chunk-cache", None)]),
        ]);
        let violations = check(&packages(&graph).unwrap());
        assert_eq!(violations.len(), 2, "{violations:?}");
        assert!(violations.contains(&Violation::Forbidden {
            from: "xtask".into(),
            to: "h5chunk-format".into(),
            kind: "build".into(),
        }));
        assert!(violations.contains(&Violation::Forbidden {
            from: "h5chunk-cli".into(),
            to: "h5chunk-cache".into(),
            kind: "normal".into(),
        }));
    }

    #[test]
    fn rejects_unlisted_workspace_crate() {
        let graph = metadata(vec![("h5chunk-newthing", vec![])]);
        assert_eq!(
            check(&packages(&graph).unwrap()),
            vec![Violation::Unlisted {
                package: "h5chunk-newthing".into()
            }]
        );
    }

    #[test]
    fn rejects_metadata_without_packages() {
        assert!(packages(&json!({})).is_err());
    }
}
