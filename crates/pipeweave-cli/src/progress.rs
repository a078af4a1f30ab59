//! A progress bar on a terminal's standard error for a sweep that takes more than a moment.

use indicatif::{ProgressBar, ProgressStyle};
use pipeweave_eval::Tick;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Shows a bar once the sweep has run for a moment, on a terminal only.
#[derive(Debug)]
pub struct Progress {
    started: Instant,
    bar: Option<ProgressBar>,
    enabled: bool,
}

impl Progress {
    /// A progress bar that has not shown yet.
    pub fn new() -> Progress {
        Progress {
            started: Instant::now(),
            bar: None,
            enabled: std::io::stderr().is_terminal(),
        }
    }

    /// One more point done.
    pub fn tick(&mut self, t: Tick<'_>) {
        if self.bar.is_none() && self.enabled && self.started.elapsed() > Duration::from_millis(300)
        {
            let bar = ProgressBar::new(t.total);
            if let Ok(style) =
                ProgressStyle::with_template("{bar:30} {pos}/{len} simulations  {msg}")
            {
                bar.set_style(style);
            }
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(t.done);
            bar.set_message(format!("{} {}={}", t.schedule, t.param, t.x));
        }
    }

    /// Clears the bar.
    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
