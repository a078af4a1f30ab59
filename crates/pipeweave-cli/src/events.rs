//! What a command tells the user on the way, on standard error: notes and warnings as they arise,
//! and progress bars for a sweep and a synthesis that take a while (on a terminal only).

use crate::output::{note, warn, warning};
use indicatif::{ProgressBar, ProgressStyle};
use pipeweave_app::{Events, Told};
use pipeweave_eval::Tick;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// The command line's side of a command while it runs.
#[derive(Debug)]
pub struct Terminal {
    started: Instant,
    /// Whether standard error is a terminal (bars are drawn only there).
    bars: bool,
    sweep: Option<ProgressBar>,
    synthesis: Option<ProgressBar>,
}

impl Terminal {
    /// Standard error, with bars when it is a terminal.
    pub fn new() -> Terminal {
        Terminal {
            started: Instant::now(),
            bars: std::io::stderr().is_terminal(),
            sweep: None,
            synthesis: None,
        }
    }
}

fn bar(len: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

impl Events for Terminal {
    fn tell(&mut self, told: Told<'_>) {
        match told {
            Told::Rendered(text) => warn(text),
            Told::Warning(message) => warning(message),
            Told::Note(message) => note(message),
        }
    }

    /// A bar once the command has run for a moment, cleared after the last point.
    fn sweep_progress(&mut self, t: &Tick<'_>) {
        if self.sweep.is_none()
            && self.bars
            && self.started.elapsed() > Duration::from_millis(300)
            && t.done < t.total
        {
            self.sweep = Some(bar(t.total, "{bar:30} {pos}/{len} simulations  {msg}"));
        }
        if let Some(bar) = &self.sweep {
            bar.set_position(t.done);
            bar.set_message(format!("{} {}={}", t.schedule, t.param, t.x));
        }
        if t.done >= t.total
            && let Some(bar) = self.sweep.take()
        {
            bar.finish_and_clear();
        }
    }

    fn synthesis_progress(&mut self, evaluations: u64, budget: u64, best: f64) {
        if self.synthesis.is_none() && self.bars {
            self.synthesis = Some(bar(budget, "{bar:30} {pos}/{len} plans  {msg}"));
        }
        if let Some(bar) = &self.synthesis {
            bar.set_position(evaluations);
            bar.set_message(format!("best {best:.6}"));
        }
    }

    fn synthesis_done(&mut self) {
        if let Some(bar) = self.synthesis.take() {
            bar.finish_and_clear();
        }
    }
}
