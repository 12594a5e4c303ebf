//! What the programs share: running this program again, `key=value` result lines, dimension
//! text, atomic side files, clocks and I/O counters.

use std::path::Path;
use std::process::Command;

/// This program, to run its command `command` in a process of its own.
pub(crate) fn this_program(command: &str) -> Result<Command, String> {
    let mut c = Command::new(std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?);
    c.arg(command);
    Ok(c)
}

/// The `key=value` fields of the first `RESULT` line of a program's output.
pub(crate) fn result_fields(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
}

pub(crate) fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

pub(crate) fn dims_text(d: &[u64]) -> String {
    d.iter().map(u64::to_string).collect::<Vec<_>>().join(" ")
}

pub(crate) fn parse_dims(s: &str) -> Option<Vec<u64>> {
    s.split_whitespace().map(|x| x.parse().ok()).collect()
}

/// Microseconds of wall-clock time (the same clock in every process of the machine).
pub(crate) fn wall_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// This process's bytes and calls of `read`-like system calls so far (`/proc/self/io`).
pub(crate) fn proc_io() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (get("rchar:"), get("syscr:"))
}

pub(crate) fn percentile(v: &mut [u64], p: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    let i = ((v.len() - 1) as f64 * p).round() as usize;
    v[i.min(v.len() - 1)]
}
