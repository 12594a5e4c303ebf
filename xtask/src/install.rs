//! System packages the measuring tasks need (Debian's, through `apt-get`), installed the way
//! `.ci/run` installs `hdf5-tools`: as root, or through `sudo -n` when that needs no password;
//! otherwise the exact command to run is said instead.

use std::process::{Command, Stdio};

/// What a task needs: a program on PATH, or a library pkg-config knows (under any of several
/// names); and the Debian packages that provide it.
#[derive(Clone, Copy, Debug)]
pub struct Need {
    /// What is looked for.
    pub what: Lookup,
    /// Debian packages that provide it.
    pub packages: &'static [&'static str],
}

/// How a [`Need`] is looked for.
#[derive(Clone, Copy, Debug)]
pub enum Lookup {
    /// A program on PATH.
    Program(&'static str),
    /// A pkg-config package, under any of these names.
    PkgConfig(&'static [&'static str]),
}

impl Need {
    fn name(&self) -> &'static str {
        match self.what {
            Lookup::Program(p) => p,
            Lookup::PkgConfig(names) => names.first().copied().unwrap_or("?"),
        }
    }

    fn present(&self) -> bool {
        match self.what {
            Lookup::Program(p) => crate::find_on_path(p).is_some(),
            Lookup::PkgConfig(names) => names.iter().any(|p| {
                Command::new("pkg-config")
                    .args(["--exists", p])
                    .status()
                    .is_ok_and(|s| s.success())
            }),
        }
    }
}

/// pkg-config, libhdf5's headers and library: the C side of `cargo xtask bench`.
pub const LIBHDF5: &[Need] = &[
    Need {
        what: Lookup::Program("pkg-config"),
        packages: &["pkg-config"],
    },
    Need {
        what: Lookup::PkgConfig(&["hdf5", "hdf5-serial"]),
        packages: &["libhdf5-dev"],
    },
];

/// valgrind, for `cargo xtask bench --instructions`.
pub const VALGRIND: &[Need] = &[Need {
    what: Lookup::Program("valgrind"),
    packages: &["valgrind"],
}];

/// Whether we may run apt-get: as root, or with a `sudo` that asks for no password.
fn apt_prefix() -> Option<Vec<&'static str>> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() == "0" {
        return Some(vec![]);
    }
    let sudo = Command::new("sudo")
        .args(["-n", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    sudo.success().then(|| vec!["sudo", "-n"])
}

/// Install what `needs` lists and is missing. `Err` says what is still missing and the exact
/// command that would install it.
pub fn ensure(needs: &[Need]) -> Result<(), String> {
    let missing: Vec<&Need> = needs.iter().filter(|n| !n.present()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let packages: Vec<&str> = missing.iter().flat_map(|n| n.packages).copied().collect();
    let command = format!(
        "apt-get update && apt-get install -y --no-install-recommends {}",
        packages.join(" ")
    );
    if crate::find_on_path("apt-get").is_none() {
        return Err(format!(
            "missing {} (no apt-get here: install {} by hand)",
            missing
                .iter()
                .map(|n| n.name())
                .collect::<Vec<_>>()
                .join(", "),
            packages.join(" ")
        ));
    }
    let Some(prefix) = apt_prefix() else {
        return Err(format!(
            "missing {}; run as root: {command}",
            packages.join(" ")
        ));
    };
    eprintln!(
        "xtask: installing Debian's {} for the comparison",
        packages.join(" ")
    );
    let apt = |args: &[&str]| -> Result<(), String> {
        let mut cmd = match prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg("apt-get");
                c
            }
            None => Command::new("apt-get"),
        };
        cmd.args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null());
        let status = cmd
            .status()
            .map_err(|e| format!("cannot run apt-get: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "{} failed ({status}); run: {command}",
                crate::describe(&cmd)
            ))
        }
    };
    apt(&["update", "-qq"])?;
    let mut install = vec!["install", "-y", "-qq", "--no-install-recommends"];
    install.extend(&packages);
    apt(&install)?;
    match needs.iter().find(|n| !n.present()) {
        None => Ok(()),
        Some(n) => Err(format!(
            "{} still missing after installing {}",
            n.name(),
            packages.join(" ")
        )),
    }
}
