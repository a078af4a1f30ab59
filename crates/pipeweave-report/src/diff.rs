//! Plan against actual for people: `pipeweave diff`'s text.

use crate::format::{percent, seconds};
use pipeweave_eval::PlanDiff;
use std::fmt::Write as _;

/// The most actions the text lists by how far they started from their prediction (the JSON has
/// every one).
const SHOWN_ACTIONS: usize = 10;

/// The diff as text: the step, each rank, the unpredicted waits, the slowest rank and action, and
/// the actions furthest from their predicted start.
pub fn diff_text(d: &PlanDiff) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "plan {}, step {} of {} (the median), costs {}",
        d.plan, d.step, d.steps, d.costs
    );
    let sign = if d.error >= 0.0 { "+" } else { "" };
    let _ = writeln!(
        s,
        "actions, first start to last end: predicted {}, measured {} ({sign}{})",
        seconds(d.predicted),
        seconds(d.measured),
        percent(d.error, 1)
    );
    let _ = write!(
        s,
        "whole step, with the time outside the actions: predicted {}",
        seconds(d.predicted_step)
    );
    match d.measured_step {
        Some(m) if d.predicted_step > 0.0 => {
            let e = (m - d.predicted_step) / d.predicted_step;
            let sign = if e >= 0.0 { "+" } else { "" };
            let _ = writeln!(s, ", measured {} ({sign}{})\n", seconds(m), percent(e, 1));
        }
        _ => {
            let _ = writeln!(s, ", not measured (no profiler step spans)\n");
        }
    }
    let _ = writeln!(
        s,
        "rank  predicted   measured    unpredicted wait  waited on"
    );
    for r in &d.ranks {
        let on = if r.waited_on.is_empty() {
            "-".to_owned()
        } else {
            r.waited_on
                .iter()
                .map(|w| format!("rank {} {}", w.rank, seconds(w.seconds)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            s,
            "{:<5} {:<11} {:<11} {:<17} {}",
            r.rank,
            seconds(r.predicted),
            seconds(r.measured),
            seconds(r.unpredicted_wait),
            on
        );
    }
    if d.ranks
        .iter()
        .any(|r| r.measured_peak_saved_bytes.is_some() || r.predicted_peak_saved_bytes.is_some())
    {
        let _ = writeln!(s, "\nrank  saved bytes at peak: predicted  measured");
        let b = |x: Option<u64>| x.map_or("-".to_owned(), |b| crate::format::mib_text(b as f64));
        for r in &d.ranks {
            let _ = writeln!(
                s,
                "{:<5} {:<31} {}",
                r.rank,
                b(r.predicted_peak_saved_bytes),
                b(r.measured_peak_saved_bytes)
            );
        }
    }
    let _ = writeln!(
        s,
        "\nslowest rank: {}\nslowest action: {} on rank {}, {} measured against {} predicted",
        d.slowest_rank,
        d.slowest_action.action,
        d.slowest_action.rank,
        seconds(d.slowest_action.measured),
        seconds(d.slowest_action.predicted)
    );
    if d.waits.is_empty() {
        let _ = writeln!(s, "\nno wait the plan did not predict");
    } else {
        let _ = writeln!(s, "\nwaits the plan did not predict, longest first:");
        for w in &d.waits {
            let on =
                w.on.map_or("its own inputs".to_owned(), |r| format!("rank {r}"));
            let _ = writeln!(
                s,
                "  rank {} before {}: {}, waiting on {on}",
                w.rank,
                w.action,
                seconds(w.seconds)
            );
        }
    }
    let mut actions: Vec<(u32, &pipeweave_eval::ActionDiff)> = d
        .ranks
        .iter()
        .flat_map(|r| r.actions.iter().map(move |a| (r.rank, a)))
        .collect();
    actions.sort_by(|(ra, a), (rb, b)| {
        let da = (a.measured_start - a.predicted_start).abs();
        let db = (b.measured_start - b.predicted_start).abs();
        db.total_cmp(&da).then(ra.cmp(rb))
    });
    let _ = writeln!(
        s,
        "\nactions furthest from their predicted start:\nrank  action      predicted start  measured start  predicted   measured"
    );
    for (rank, a) in actions.into_iter().take(SHOWN_ACTIONS) {
        let _ = writeln!(
            s,
            "{:<5} {:<11} {:<16} {:<15} {:<11} {}",
            rank,
            a.action,
            seconds(a.predicted_start),
            seconds(a.measured_start),
            seconds(a.predicted),
            seconds(a.measured)
        );
    }
    crate::shown::lines(s)
}
