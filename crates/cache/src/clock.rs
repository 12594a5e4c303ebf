//! The clock and the pause of read retries, where the platform has them: WebAssembly in a
//! browser (`wasm32-unknown-unknown`) has neither in `std` (`Instant::now` and
//! `thread::sleep` panic there), so its retries are bounded by their count alone and follow
//! one another at once.

use std::time::{Duration, Instant};

/// Whether this target lacks a clock and sleeping in `std`.
const NO_CLOCK: bool = cfg!(all(target_arch = "wasm32", target_os = "unknown"));

/// The time now, where there is a clock.
pub(crate) fn now() -> Option<Instant> {
    if NO_CLOCK { None } else { Some(Instant::now()) }
}

/// The time since `start` (zero without a clock).
pub(crate) fn since(start: Option<Instant>) -> Duration {
    start.map_or(Duration::ZERO, |s| s.elapsed())
}

/// Sleep `d` before a retry, where the platform can sleep (on `wasm32-unknown-unknown`
/// the retry follows at once).
pub fn pause(d: Duration) {
    if !NO_CLOCK {
        std::thread::sleep(d);
    }
}
