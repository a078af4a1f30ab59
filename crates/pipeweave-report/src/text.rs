//! The text timeline: one row per rank on a common time axis, readable in a terminal.
//!
//! Every action is a box `[label]` as wide as its duration; idle time is dots. Labels use the
//! actions format (`3F12`, `3I12`, a pair `0F3&7B5`), so a row reads like the plan's own line.
//!
//! A [`TextWindow`] draws part of it: some ranks, a span of time, and at most a number of
//! characters per line. When the labels need more columns than the width leaves, the time axis
//! is scaled down: a box too small for its label shows the action's kind (`[B]`, `B]` in two
//! columns, `B` in one).

use crate::format::{format_time, percent};
use pipeweave_plan::{Action, Plan};
use pipeweave_sim::Timeline;
use std::fmt::Write;
use std::ops::RangeInclusive;

fn label(a: &Action) -> String {
    match a {
        Action::One(op) => op.to_string(),
        Action::Pair { f, b } => format!("{f}&{b}"),
    }
}

/// The letter of an action drawn in one column: its kind, `&` for a pair.
fn letter(a: &Action) -> u8 {
    match a {
        Action::One(op) => op
            .to_string()
            .bytes()
            .find(u8::is_ascii_uppercase)
            .unwrap_or(b'#'),
        Action::Pair { .. } => b'&',
    }
}

/// What part of a timeline to draw, and how wide.
#[derive(Debug, Clone, PartialEq)]
pub struct TextWindow {
    /// The ranks drawn, one row each (clamped to the plan's).
    pub ranks: RangeInclusive<u32>,
    /// The start of the time shown (default 0).
    pub from: Option<f64>,
    /// The end of the time shown (default the makespan).
    pub to: Option<f64>,
    /// The most characters a line may have (`None`: as many as the labels need).
    pub width: Option<usize>,
}

impl TextWindow {
    /// The whole timeline, as wide as its labels need.
    pub fn all(plan: &Plan) -> TextWindow {
        TextWindow {
            ranks: 0..=plan.ranks().saturating_sub(1),
            from: None,
            to: None,
            width: None,
        }
    }
}

/// Renders the timeline of `plan`; `timeline` must come from simulating that plan.
pub fn text_timeline(plan: &Plan, timeline: &Timeline) -> String {
    text_timeline_window(plan, timeline, &TextWindow::all(plan))
}

/// Where times fall on the line: the labels' own scale, or a scale that fits a width.
struct Columns {
    from: f64,
    /// Columns per unit of time.
    scale: f64,
    /// Whether labels fit their boxes (the labels' own scale).
    natural: bool,
    /// Columns of the time shown.
    width: usize,
}

impl Columns {
    fn at(&self, t: f64) -> usize {
        ((t - self.from) * self.scale).round().max(0.0) as usize
    }
}

/// Renders the part of the timeline of `plan` that `window` selects.
pub fn text_timeline_window(plan: &Plan, timeline: &Timeline, window: &TextWindow) -> String {
    let last = plan.ranks().saturating_sub(1);
    let ranks = (*window.ranks.start()).min(last)..=(*window.ranks.end()).min(last);
    let from = window.from.unwrap_or(0.0).max(0.0);
    let to = window
        .to
        .unwrap_or(timeline.timing.makespan)
        .min(timeline.timing.makespan);
    let to = if to > from {
        to
    } else {
        timeline.timing.makespan.max(from)
    };

    let durations = timeline
        .timing
        .intervals
        .iter()
        .flatten()
        .map(|iv| iv.end - iv.start)
        .filter(|d| *d > 0.0);
    let quantum = durations.fold(f64::INFINITY, f64::min);
    let quantum = if quantum.is_finite() { quantum } else { 1.0 };
    // Characters per quantum: wide enough for every label with its brackets.
    let mut cw = 1usize;
    for (rank, program) in plan.programs().iter().enumerate() {
        for (a, iv) in program.iter().zip(&timeline.timing.intervals[rank]) {
            let units = ((iv.end - iv.start) / quantum).round().max(1.0) as usize;
            cw = cw.max((label(a).len() + 2).div_ceil(units));
        }
    }
    let name_width = format!("rank {}", ranks.end()).len();
    let tails: Vec<String> = ranks
        .clone()
        .map(|r| {
            let m = &timeline.ranks[r as usize];
            format!(
                "  busy {} idle {}",
                format_time(m.busy),
                format_time(m.idle)
            )
        })
        .collect();
    let tail_width = tails.iter().map(|t| t.chars().count()).max().unwrap_or(0);

    let natural_scale = cw as f64 / quantum;
    let natural = Columns {
        from,
        scale: natural_scale,
        natural: true,
        width: 0,
    };
    let natural_width = natural.at(to);
    let room = window
        .width
        .map(|w| w.saturating_sub(name_width + 2 + tail_width).max(10));
    let columns = match room {
        Some(room) if natural_width > room => Columns {
            from,
            scale: room as f64 / (to - from).max(f64::MIN_POSITIVE),
            natural: false,
            width: room,
        },
        _ => Columns {
            width: natural_width,
            ..natural
        },
    };
    let width = columns.width;

    let mut out = String::new();
    let (axis, marks) = axis(&columns, quantum, cw, to);
    let _ = writeln!(out, "{:name_width$}  {axis}", "time");
    let _ = writeln!(out, "{:name_width$}  {marks}", "");
    for (rank, tail) in ranks.clone().zip(&tails) {
        let rank = rank as usize;
        let mut row = vec![b'.'; width];
        for (a, iv) in plan.programs()[rank]
            .iter()
            .zip(&timeline.timing.intervals[rank])
        {
            if iv.end <= from || iv.start >= to {
                continue;
            }
            let (s, e) = (
                columns.at(iv.start.max(from)),
                columns.at(iv.end.min(to)).min(width),
            );
            if e <= s {
                continue;
            }
            let cell = &mut row[s..e];
            if cell.len() <= 2 {
                // Too narrow for brackets around a letter: the letter, and the box's end.
                cell[0] = letter(a);
                if let Some(end) = cell.get_mut(1) {
                    *end = b']';
                }
                continue;
            }
            // A label that does not fit gives way to the action's kind.
            let mut text = label(a);
            if text.len() + 2 > cell.len() {
                text = char::from(letter(a)).to_string();
            }
            cell.fill(b' ');
            cell[0] = b'[';
            cell[e - s - 1] = b']';
            for (i, b) in text.bytes().take((e - s).saturating_sub(2)).enumerate() {
                cell[1 + i] = b;
            }
        }
        let _ = writeln!(
            out,
            "{:name_width$}  {}{tail}",
            format!("rank {rank}"),
            String::from_utf8_lossy(&row),
        );
    }
    let _ = writeln!(
        out,
        "makespan {}, bubble fraction {}",
        format_time(timeline.timing.makespan),
        percent(timeline.bubble_fraction, 2)
    );
    out
}

/// The time axis and its tick marks: a tick every so many quanta on the labels' scale, at round
/// times on a fitted scale, at least 8 columns apart.
fn axis(columns: &Columns, quantum: f64, cw: usize, to: f64) -> (String, String) {
    let width = columns.width;
    let step = if columns.natural {
        let mut step = 1usize;
        for s in [
            1usize, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000,
        ] {
            step = s;
            if s * cw >= 8 {
                break;
            }
        }
        step as f64 * quantum
    } else {
        nice_step(8.0 / columns.scale)
    };
    let mut axis = vec![b' '; width + 12];
    let mut marks = vec![b' '; width + 1];
    let mut k = (columns.from / step).ceil();
    loop {
        let t = k * step;
        if t > to + step * 1e-9 {
            break;
        }
        let c = columns.at(t);
        if c > width {
            break;
        }
        for (i, b) in format_time(t).bytes().enumerate() {
            if c + i < axis.len() {
                axis[c + i] = b;
            }
        }
        marks[c] = b'|';
        k += 1.0;
    }
    let axis = String::from_utf8_lossy(&axis).trim_end().to_string();
    let marks = String::from_utf8_lossy(&marks).trim_end().to_string();
    (axis, marks)
}

/// The smallest of 1, 2, 5 times a power of ten that is at least `x`.
fn nice_step(x: f64) -> f64 {
    if !(x.is_finite() && x > 0.0) {
        return 1.0;
    }
    let power = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|s| *s >= x)
        .unwrap_or(10.0 * power)
}

#[cfg(test)]
mod tests;
