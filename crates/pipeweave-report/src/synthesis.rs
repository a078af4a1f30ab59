//! The report of `synthesize`: what was found, what it cost to find, the bound and the library.

use crate::format::{format_time, percent, seconds};
use crate::shown::lines;
use pipeweave_eval::{CostSource, ExactEnded, SynthesisReport, TimeUnit};
use std::fmt::Write;

/// The report as text.
pub fn synthesis_text(r: &SynthesisReport) -> String {
    let time = |t: f64| match r.time_unit {
        TimeUnit::Seconds => seconds(t),
        TimeUnit::Units => format_time(t),
    };
    let costs = match r.cost_source {
        CostSource::Unit => "unit costs (F = I = W = 1, B = 2, F&B = 3)".to_owned(),
        CostSource::Uniform => "the costs of --costs".to_owned(),
        CostSource::Spec => format!("spec {}", r.costs),
        CostSource::Measured => format!(
            "the costs measured in {}",
            pipeweave_diagnostics::visible(&r.costs)
        ),
    };
    let mut t = String::new();
    let _ = writeln!(
        t,
        "synthesized: {} placement, P {}, M {}, {}",
        r.placement, r.ranks, r.microbatches, costs
    );
    let units = match r.unit_bytes {
        Some(b) => format!("units of {}", crate::format::mib_text(b)),
        None => "activations".to_owned(),
    };
    let limits = if r.limits.windows(2).all(|w| w[0] == w[1]) {
        format!(
            "{} {units} per rank",
            r.limits.first().copied().unwrap_or(0)
        )
    } else {
        format!(
            "{} {units} on ranks 0 to {}",
            r.limits
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            r.limits.len().saturating_sub(1)
        )
    };
    let _ = writeln!(t, "  memory limit        {limits} ({})", r.limits_from);
    let _ = writeln!(t, "  makespan            {}", time(r.makespan));
    match r.heuristic_makespan {
        Some(h) => {
            let _ = writeln!(
                t,
                "  heuristic           {} (best of {} constructions, {} within the limits)",
                time(h),
                r.policies,
                r.policies_within_limits
            );
        }
        None => {
            let _ = writeln!(
                t,
                "  heuristic           none of its {} constructions within the limits",
                r.policies
            );
        }
    }
    if r.started_from_library {
        let _ = writeln!(
            t,
            "  started from        the library's plan (it scored better than the heuristic's: makespan, then the ranks' end times)"
        );
    }
    let _ = writeln!(
        t,
        "  local search        {} plans tried{}",
        r.evaluations,
        if r.stopped_by_time_limit {
            " (stopped by the time limit)"
        } else {
            ""
        }
    );
    let within = if r.proof_slack > 0.0 {
        " to within a millionth of the shortest duration"
    } else {
        ""
    };
    let exact = match &r.exact {
        Some(e) if e.proved => format!(
            "{} nodes, optimum {} proved{within}",
            e.nodes,
            time(e.makespan)
        ),
        Some(e) => match e.ended_by {
            ExactEnded::TimeLimit => {
                format!("{} nodes, stopped by the time limit (not proved)", e.nodes)
            }
            ExactEnded::NodeBudget => {
                format!("{} nodes, stopped by its node budget (not proved)", e.nodes)
            }
            ExactEnded::Complete => format!("{} nodes (not proved)", e.nodes),
            ExactEnded::ZeroDuration => "not run: some duration is zero, and its search orders \
                actions by their start times (not proved)"
                .to_owned(),
            ExactEnded::CostRange => "not run: the costs span too wide a range to compare times \
                exactly (not proved)"
                .to_owned(),
        },
        None => "not run (it runs at P ≤ 4, M ≤ 8)".to_owned(),
    };
    let _ = writeln!(t, "  exact method        {exact}");
    let verdict = if r.proved_optimal {
        format!(", optimal{within}")
    } else if !r.exact_arithmetic {
        ", nothing proved: the costs span too wide a range to compare times exactly".to_owned()
    } else {
        String::new()
    };
    let _ = writeln!(
        t,
        "  lower bound         {} (gap {}){verdict}",
        time(r.lower_bound),
        percent(r.gap, 1),
    );
    match (&r.library, r.change_vs_library) {
        (Some(l), Some(change)) => {
            let _ = writeln!(
                t,
                "  best library        {} {} at the same placement and limit: {}{}",
                l.schedule,
                time(l.makespan),
                if change > 0.0 { "+" } else { "" },
                percent(change, 1)
            );
        }
        _ => {
            let _ = writeln!(
                t,
                "  best library        none places its stages so within this limit"
            );
        }
    }
    lines(t)
}

/// The report as JSON (`docs/json-output.md`).
pub fn synthesis_json(r: &SynthesisReport) -> String {
    crate::json::json(r)
}
