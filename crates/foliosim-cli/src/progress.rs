//! A progress bar on stderr for runs that take a while (indicatif). Drawn only when stderr is a
//! terminal and a run has lasted more than a second, so scripted use and quick runs print nothing.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

const SHOW_AFTER: Duration = Duration::from_secs(1);
const REDRAWS_PER_SECOND: u8 = 10;
/// Positions of the bar: the fraction done in thousandths.
const STEPS: u64 = 1000;

pub struct Progress {
    enabled: bool,
    bar: ProgressBar,
    start: Instant,
    shown: bool,
}

impl Progress {
    pub fn new(label: String) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(STEPS), ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template("{msg} [{bar:30}] {percent:>3}% {elapsed}")
            .expect("a valid template")
            .progress_chars("# ");
        bar.set_style(style);
        bar.set_message(label);
        Progress {
            enabled: std::io::stderr().is_terminal(),
            bar,
            start: Instant::now(),
            shown: false,
        }
    }

    /// Called from the engine's progress callback with the fraction done.
    pub fn update(&mut self, fraction: f64) {
        if !self.enabled {
            return;
        }
        if !self.shown {
            if self.start.elapsed() < SHOW_AFTER {
                return;
            }
            self.bar
                .set_draw_target(ProgressDrawTarget::stderr_with_hz(REDRAWS_PER_SECOND));
            self.shown = true;
        }
        let fraction = if fraction.is_finite() {
            fraction.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self.bar.set_position((fraction * STEPS as f64) as u64);
    }

    /// Clears the bar if one was drawn.
    pub fn finish(&mut self) {
        if std::mem::take(&mut self.shown) {
            self.bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
