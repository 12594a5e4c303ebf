//! A one-line progress bar on stderr, drawn only when stderr is a terminal (so piped and
//! captured output stays clean), at most ten times a second.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

const WIDTH: u64 = 30;
const EVERY: Duration = Duration::from_millis(100);

/// A progress bar for one long step.
#[derive(Debug)]
pub struct Progress {
    label: &'static str,
    enabled: bool,
    last: Option<Instant>,
    drawn: bool,
}

impl Progress {
    /// A bar labelled `label`, active only if stderr is a terminal.
    pub fn new(label: &'static str) -> Progress {
        Progress {
            label,
            enabled: std::io::stderr().is_terminal(),
            last: None,
            drawn: false,
        }
    }

    /// Show `done` of `total`.
    pub fn set(&mut self, done: u64, total: u64) {
        if !self.enabled || self.last.is_some_and(|t| t.elapsed() < EVERY) && done < total {
            return;
        }
        self.last = Some(Instant::now());
        let filled = scaled(done, total, WIDTH);
        let percent = scaled(done, total, 100);
        let bar: String = (0..WIDTH)
            .map(|i| if i < filled { '#' } else { ' ' })
            .collect();
        let mut err = std::io::stderr().lock();
        // Errors writing a progress bar are not worth failing a command for.
        let _ = write!(
            err,
            "\r{} [{bar}] {percent:3}% ({done}/{total})",
            self.label
        );
        let _ = err.flush();
        self.drawn = true;
    }

    /// Erase the bar.
    pub fn finish(&mut self) {
        if self.drawn {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[K");
            self.drawn = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// `done` of `total` scaled to `0..=scale` (rounded down; `scale` when `total` is 0). The
/// product is formed in `u128`, where two `u64`s cannot overflow, so the saturating multiply is
/// exact and the quotient, at most `scale`, fits back into a `u64`.
fn scaled(done: u64, total: u64, scale: u64) -> u64 {
    u128::from(done.min(total))
        .saturating_mul(u128::from(scale))
        .checked_div(u128::from(total))
        .map_or(scale, |v| u64::try_from(v).unwrap_or(scale))
}
