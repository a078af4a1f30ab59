//! `recommend`'s page: the choice with its figures and savings, the runners-up, why every other
//! schedule lost (worse time, memory, a requirement) and the pipeline degrees left out.
//!
//! The [`Recommendation`] comes from `pipeweave-eval`'s search; this module only formats it.

use crate::format::{gib, percent, seconds, si};
use crate::table::{NONE, Table, markdown_cell, markdown_table};
use pipeweave_eval::{Candidate, Recommendation};
use std::fmt::Write as _;

/// `zb-h1, PP 8, M 32 × 1 seq, v 2`.
pub fn candidate_label(c: &Candidate) -> String {
    let v = c.v.map(|v| format!(", v {v}")).unwrap_or_default();
    format!(
        "{}, PP {}, M {} × {} seq{}",
        c.schedule, c.pp, c.microbatches, c.micro_batch_size, v
    )
}

fn memory_text(c: &Candidate) -> String {
    let f = &c.figures;
    format!(
        "{:.1} GiB of {:.1} ({})",
        gib(f.memory_bytes),
        gib(f.gpu_memory_bytes),
        percent(f.memory_bytes / f.gpu_memory_bytes.max(1.0), 0)
    )
}

fn pct_slower(c: &Candidate, base: &Candidate) -> String {
    let r = c.figures.step_time_s / base.figures.step_time_s - 1.0;
    // Signed: a runner-up is slower (+), a fitting candidate can be faster than one that does not.
    format!("{:+.1}%", r * 100.0)
}

fn savings(choice: &Candidate, base: &Candidate, what: &str) -> String {
    let saved = base.run_gpu_hours - choice.run_gpu_hours;
    let share = if base.run_gpu_hours > 0.0 {
        saved / base.run_gpu_hours
    } else {
        0.0
    };
    let oom = if base.figures.out_of_memory {
        " (that 1F1B would not fit in memory)"
    } else {
        ""
    };
    format!(
        "{} GPU-hours ({}) over 1F1B {what} ({}){oom}",
        si(saved),
        percent(share, 1),
        candidate_label(base)
    )
}

/// The choice (or, when nothing fits, the fastest option) as labelled lines; an empty label
/// continues the line above.
fn choice_lines(r: &Recommendation) -> Vec<(&'static str, String)> {
    let mut lines = Vec::new();
    match &r.choice {
        Some(c) => {
            let f = &c.figures;
            lines.push(("choice", candidate_label(c)));
            lines.push((
                "",
                format!(
                    "dp {}, {} stage{} per rank{}, {} model cop{}",
                    c.dp,
                    c.stages_per_rank,
                    if c.stages_per_rank == 1 { "" } else { "s" },
                    // With replicas every rank hosts that many stages of each copy.
                    if c.model_copies == 1 {
                        ""
                    } else {
                        " and model copy"
                    },
                    c.model_copies,
                    if c.model_copies == 1 { "y" } else { "ies" }
                ),
            ));
            lines.push(("step time", seconds(f.step_time_s)));
            lines.push(("bubble", percent(f.bubble_fraction, 1)));
            lines.push(("memory/GPU", memory_text(c)));
            lines.push(("tokens/s", si(f.tokens_per_s)));
            lines.push(("whole run", format!("{} GPU-hours", si(c.run_gpu_hours))));
            if let Some(b) = &r.same_shape_1f1b {
                lines.push(("saves", savings(c, b, "at the same shape")));
            }
            if let Some(b) = &r.spec_1f1b {
                lines.push(("", savings(c, b, "as the spec has it")));
            }
        }
        None => {
            let gpu = r
                .verdicts
                .iter()
                .find_map(|v| v.least_memory.as_ref())
                .map_or(0.0, |c| gib(c.figures.gpu_memory_bytes));
            lines.push((
                "choice",
                format!(
                    "none: no configuration fits in {gpu:.1} GiB per GPU under the spec's memory model"
                ),
            ));
            lines.push((
                "",
                "(activations are counted without recomputation; below, how far each option is)"
                    .to_owned(),
            ));
            if let Some(c) = &r.fastest {
                lines.push((
                    "fastest",
                    format!(
                        "{}: {}, bubble {}, if memory allowed ({})",
                        candidate_label(c),
                        seconds(c.figures.step_time_s),
                        percent(c.figures.bubble_fraction, 1),
                        memory_text(c)
                    ),
                ));
            }
        }
    }
    lines
}

/// Why each schedule family lost: (family, reason, and a requirement that ruled out some of its
/// shapes when it was built in others).
fn why_not(r: &Recommendation) -> Vec<(&str, String, Option<&str>)> {
    let mut out = Vec::new();
    for v in &r.verdicts {
        let why = match (&v.best, &v.least_memory, &r.choice) {
            (Some(c), _, Some(choice)) if c == choice => continue,
            (Some(c), _, Some(choice)) => format!(
                "worse time: {} ({}) at best, {}",
                seconds(c.figures.step_time_s),
                pct_slower(c, choice),
                candidate_label(c)
            ),
            (Some(c), _, None) => format!("fits: {}", candidate_label(c)),
            (None, Some(c), _) => format!(
                "memory: needs at least {} ({}, {})",
                memory_text(c),
                candidate_label(c),
                seconds(c.figures.step_time_s)
            ),
            (None, None, _) => format!(
                "requirement: {}",
                v.unmet
                    .as_deref()
                    .unwrap_or("no configuration could be built")
            ),
        };
        let partly = v.unmet.as_deref().filter(|_| v.least_memory.is_some());
        out.push((v.schedule.as_str(), why, partly));
    }
    out
}

/// The pipeline degrees left out, those with the same reason on one line: `PP 1, 3: reason`.
fn left_out(r: &Recommendation) -> Vec<String> {
    let mut groups: Vec<(Vec<u32>, &str)> = Vec::new();
    for rejected in &r.rejected_pp {
        match groups
            .iter_mut()
            .find(|(_, why)| *why == rejected.reason.as_str())
        {
            Some((pps, _)) => pps.push(rejected.pp),
            None => groups.push((vec![rejected.pp], rejected.reason.as_str())),
        }
    }
    groups
        .into_iter()
        .map(|(pps, why)| {
            let list: Vec<String> = pps.iter().map(u32::to_string).collect();
            format!("PP {}: {why}", list.join(", "))
        })
        .collect()
}

fn headline(r: &Recommendation) -> String {
    format!(
        "recommendation for spec {}: {} × {}, tp {}, global batch {} sequences of {} tokens, {} tokens in the run",
        r.spec,
        r.gpus,
        r.gpu,
        r.tp,
        r.global_sequences,
        r.sequence_length,
        si(r.total_tokens)
    )
}

fn searched(r: &Recommendation) -> String {
    format!(
        "searched: {} configurations simulated ({} out of memory), {} not buildable",
        r.simulated, r.out_of_memory, r.unmet
    )
}

fn versus_choice(r: &Recommendation, c: &Candidate) -> Option<String> {
    r.choice.as_ref().map(|b| pct_slower(c, b))
}

const DEFAULT_SPEC_LINE: &str = "(no --spec: the built-in default spec)";

/// The one-page plan as text.
pub fn recommend_text(r: &Recommendation) -> String {
    let mut s = String::new();
    if r.default_spec {
        let _ = writeln!(s, "{DEFAULT_SPEC_LINE}");
    }
    let _ = writeln!(s, "{}", headline(r));
    let _ = writeln!(s, "{}", searched(r));
    s.push('\n');
    for (label, value) in choice_lines(r) {
        let _ = writeln!(s, "{label:<14}{value}");
    }
    if !r.runners_up.is_empty() {
        s.push_str("\nrunners-up (the fastest of each other schedule that fits)\n");
        for c in &r.runners_up {
            let vs = versus_choice(r, c)
                .map(|p| format!(", {p} vs the choice"))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "  {:<44} {:>10}  bubble {:>6}  {}{vs}",
                candidate_label(c),
                seconds(c.figures.step_time_s),
                percent(c.figures.bubble_fraction, 1),
                memory_text(c)
            );
        }
    }
    s.push_str("\nwhy not the others\n");
    for (schedule, why, partly) in why_not(r) {
        let _ = writeln!(s, "  {schedule:<22} {why}");
        if let Some(reason) = partly {
            let _ = writeln!(s, "  {:<22} not buildable in some shapes: {reason}", "");
        }
    }
    let left_out = left_out(r);
    if !left_out.is_empty() {
        s.push_str("\npipeline degrees left out\n");
        for line in left_out {
            let _ = writeln!(s, "  {line}");
        }
    }
    s
}

/// The one-page plan as Markdown: the headline, the choice as a two-column table, the
/// runners-up as a table, and the reasons as lists.
pub fn recommend_markdown(r: &Recommendation) -> String {
    let mut s = String::new();
    if r.default_spec {
        let _ = writeln!(s, "{}\n", markdown_cell(DEFAULT_SPEC_LINE));
    }
    let _ = writeln!(s, "**{}**\n", markdown_cell(&headline(r)));
    let _ = writeln!(s, "{}\n", markdown_cell(&searched(r)));
    let choice = Table {
        caption: String::new(),
        header: vec![String::new(), String::new()],
        rows: choice_lines(r)
            .into_iter()
            .map(|(label, value)| vec![label.to_owned(), value])
            .collect(),
    };
    markdown_table(&choice, &mut s);
    if !r.runners_up.is_empty() {
        s.push_str("\n**runners-up** (the fastest of each other schedule that fits)\n\n");
        let runners = Table {
            caption: String::new(),
            header: [
                "configuration",
                "step time",
                "bubble",
                "memory/GPU",
                "vs the choice",
            ]
            .map(str::to_owned)
            .to_vec(),
            rows: r
                .runners_up
                .iter()
                .map(|c| {
                    vec![
                        candidate_label(c),
                        seconds(c.figures.step_time_s),
                        percent(c.figures.bubble_fraction, 1),
                        memory_text(c),
                        versus_choice(r, c).unwrap_or_else(|| NONE.to_owned()),
                    ]
                })
                .collect(),
        };
        markdown_table(&runners, &mut s);
    }
    s.push_str("\n**why not the others**\n\n");
    for (schedule, why, partly) in why_not(r) {
        let _ = writeln!(s, "- {}: {}", markdown_cell(schedule), markdown_cell(&why));
        if let Some(reason) = partly {
            let _ = writeln!(
                s,
                "  - not buildable in some shapes: {}",
                markdown_cell(reason)
            );
        }
    }
    let left_out = left_out(r);
    if !left_out.is_empty() {
        s.push_str("\n**pipeline degrees left out**\n\n");
        for line in left_out {
            let _ = writeln!(s, "- {}", markdown_cell(&line));
        }
    }
    s
}

/// The search's outcome as JSON (`schemas/pipeweave-recommend.v2.schema.json`).
pub fn recommend_json(r: &Recommendation) -> String {
    crate::json::json(r)
}
