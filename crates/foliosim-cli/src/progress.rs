//! A progress bar on stderr for runs that take a while. Drawn only when stderr is a terminal and
//! a run has lasted more than a second, so scripted use and quick runs print nothing.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

const SHOW_AFTER: Duration = Duration::from_secs(1);
const REDRAW_EVERY: Duration = Duration::from_millis(100);
const BAR_WIDTH: usize = 30;

pub struct Progress {
    enabled: bool,
    label: String,
    start: Instant,
    last_draw: Option<Instant>,
}

impl Progress {
    pub fn new(label: String) -> Progress {
        Progress {
            enabled: std::io::stderr().is_terminal(),
            label,
            start: Instant::now(),
            last_draw: None,
        }
    }

    /// Called from the engine's progress callback with the fraction done.
    pub fn update(&mut self, fraction: f64) {
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        if now.duration_since(self.start) < SHOW_AFTER {
            return;
        }
        if self
            .last_draw
            .is_some_and(|t| now.duration_since(t) < REDRAW_EVERY)
        {
            return;
        }
        self.last_draw = Some(now);
        let fraction = if fraction.is_finite() {
            fraction.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let filled = (fraction * BAR_WIDTH as f64) as usize;
        let line = format!(
            "\r{} [{}{}] {:3.0}% {:.0}s",
            self.label,
            "#".repeat(filled),
            " ".repeat(BAR_WIDTH - filled),
            fraction * 100.0,
            now.duration_since(self.start).as_secs_f64()
        );
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(line.as_bytes());
        let _ = err.flush();
    }

    /// Clears the bar if one was drawn.
    pub fn finish(&mut self) {
        if self.last_draw.take().is_some() {
            let mut err = std::io::stderr().lock();
            // carriage return, then erase the line
            let _ = err.write_all(b"\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
