//! The text timeline: one row per rank on a common time axis, readable in a terminal.
//!
//! Every action is a box `[label]` as wide as its duration; idle time is dots. Labels use the
//! actions format (`3F12`, `3I12`, a pair `0F3&7B5`), so a row reads like the plan's own line.

use crate::format::{format_time, percent};
use pipeweave_plan::{Action, Plan};
use pipeweave_sim::Timeline;
use std::fmt::Write;

fn label(a: &Action) -> String {
    match a {
        Action::One(op) => op.to_string(),
        Action::Pair { f, b } => format!("{f}&{b}"),
    }
}

/// Renders the timeline of `plan`; `timeline` must come from simulating that plan.
pub fn text_timeline(plan: &Plan, timeline: &Timeline) -> String {
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
    let col = |t: f64| ((t / quantum) * cw as f64).round() as usize;
    let width = col(timeline.timing.makespan);
    let name_width = format!("rank {}", plan.ranks().saturating_sub(1)).len();

    let mut out = String::new();
    // Time axis: a tick every `step` quanta, at least 8 columns apart.
    let mut step = 1usize;
    for s in [
        1usize, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000,
    ] {
        step = s;
        if s * cw >= 8 {
            break;
        }
    }
    let mut axis = vec![b' '; width + 12];
    let mut marks = vec![b' '; width + 1];
    let mut k = 0usize;
    while k * cw <= width {
        let c = k * cw;
        let text = format_time(k as f64 * quantum);
        for (i, b) in text.bytes().enumerate() {
            if c + i < axis.len() {
                axis[c + i] = b;
            }
        }
        marks[c] = b'|';
        k += step;
    }
    let axis = String::from_utf8_lossy(&axis).trim_end().to_string();
    let marks = String::from_utf8_lossy(&marks).trim_end().to_string();
    let _ = writeln!(out, "{:name_width$}  {axis}", "time");
    let _ = writeln!(out, "{:name_width$}  {marks}", "");
    for (rank, program) in plan.programs().iter().enumerate() {
        let mut row = vec![b'.'; width];
        for (a, iv) in program.iter().zip(&timeline.timing.intervals[rank]) {
            let (s, e) = (col(iv.start), col(iv.end).min(width));
            if e <= s {
                continue;
            }
            let text = label(a);
            let cell = &mut row[s..e];
            cell.fill(b' ');
            cell[0] = b'[';
            cell[e - s - 1] = b']';
            for (i, b) in text.bytes().take((e - s).saturating_sub(2)).enumerate() {
                cell[1 + i] = b;
            }
        }
        let m = &timeline.ranks[rank];
        let _ = writeln!(
            out,
            "{:name_width$}  {}  busy {} idle {}",
            format!("rank {rank}"),
            String::from_utf8_lossy(&row),
            format_time(m.busy),
            format_time(m.idle),
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

#[cfg(test)]
mod tests {
    use super::*;
    use pipeweave_plan::{Kind, Op};
    use pipeweave_sim::{UnitCosts, simulate};

    #[test]
    fn two_rank_1f1b() {
        let a = |s, k, m| Action::One(Op::new(s, k, m));
        use Kind::*;
        let plan = Plan::single(
            2,
            vec![0, 1],
            2,
            vec![
                vec![a(0, F, 0), a(0, F, 1), a(0, B, 0), a(0, B, 1)],
                vec![a(1, F, 0), a(1, B, 0), a(1, F, 1), a(1, B, 1)],
            ],
        )
        .expect("structure");
        let plan = pipeweave_check::validate(plan).expect("1F1B is valid");
        let t = simulate(&plan, &UnitCosts).expect("runs");
        assert_eq!(
            text_timeline(&plan, &t),
            "\
time    0         2         4         6         8
        |         |         |         |         |
rank 0  [0F0][0F1]..........[0B0     ].....[0B1     ]  busy 6 idle 3
rank 1  .....[1F0][1B0     ][1F1][1B1     ]..........  busy 6 idle 3
makespan 9, bubble fraction 33.33%
"
        );
    }
}
