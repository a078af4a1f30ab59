//! `recommend`'s page: the choice with its figures, where its step goes and what it saves, the
//! runners-up, why every other schedule family lost (the term of the step it loses most on,
//! memory, a requirement) and the shapes left out.
//!
//! The [`Recommendation`] comes from `pipeweave-eval`'s search; this module only formats it.

use crate::format::{gib_number, gib_text, mib_text, percent, seconds, si};
use crate::shown::lines;
use crate::table::{NONE, Table, markdown_cell, markdown_table};
use pipeweave_eval::{Candidate, MeasuredRecommendation, Recommendation};
use std::fmt::Write as _;

/// `zb-h1, PP 8, TP 8, M 32 × 1 seq, v 2, joins=doubling, recompute full`.
pub fn candidate_label(c: &Candidate) -> String {
    let mut s = format!(
        "{}, PP {}, TP {}, M {} × {} seq",
        c.schedule, c.pp, c.tp, c.microbatches, c.micro_batch_size
    );
    if let Some(v) = c.v {
        let _ = write!(s, ", v {v}");
    }
    for x in &c.settings {
        let _ = write!(s, ", {x}");
    }
    let mixed = c.recompute_per_part.iter().any(|r| *r != c.recompute);
    if mixed {
        let _ = write!(
            s,
            ", recompute {}",
            crate::format::recompute_summary(&c.recompute_per_part)
        );
    } else if c.recompute != "none" {
        let _ = write!(s, ", recompute {}", c.recompute);
    }
    lines(s)
}

fn memory_text(c: &Candidate) -> String {
    let capacity = if c.memory_fraction > 0.0 {
        c.memory_bytes / c.memory_fraction
    } else {
        0.0
    };
    format!(
        "{} of {} ({})",
        gib_text(c.memory_bytes),
        gib_number(capacity),
        percent(c.memory_fraction, 0)
    )
}

fn time_text(c: &Candidate) -> String {
    c.step_time_s.map_or_else(|| NONE.to_owned(), seconds)
}

fn pct_slower(c: &Candidate, base: &Candidate) -> String {
    let r = c.time() / base.time() - 1.0;
    // Signed: a runner-up is slower (+), a fitting candidate can be faster than one that does not.
    format!("{:+.1}%", r * 100.0)
}

fn savings(choice: &Candidate, base: &Candidate, what: &str) -> String {
    let (Some(mine), Some(theirs)) = (choice.run_gpu_hours, base.run_gpu_hours) else {
        return format!(
            "— over 1F1B {what} ({}): it does not fit in memory ({})",
            candidate_label(base),
            memory_text(base)
        );
    };
    let saved = theirs - mine;
    let share = if theirs > 0.0 { saved / theirs } else { 0.0 };
    format!(
        "{} GPU-hours ({}) over 1F1B {what} ({})",
        si(saved),
        percent(share, 1),
        candidate_label(base)
    )
}

/// The choice as labelled lines; an empty label continues the line above.
fn choice_lines(r: &Recommendation) -> Vec<(&'static str, String)> {
    let mut lines = Vec::new();
    let Some(c) = &r.choice else {
        lines.push((
            "choice",
            format!(
                "none: no configuration fits in GPU memory less {} headroom under the spec's memory model",
                percent(r.memory_headroom, 0)
            ),
        ));
        lines.push(("", "(below, how far each option is)".to_owned()));
        return lines;
    };
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
    lines.push((
        "layers",
        format!(
            "{} per part ({})",
            crate::format::split_text(&c.layers_per_part),
            if c.split_searched { "searched" } else { "even" }
        ),
    ));
    if c.recompute_per_part.iter().any(|r| *r != c.recompute) {
        lines.push((
            "recompute",
            format!(
                "{} per part (searched with the split)",
                crate::format::recompute_text(&c.recompute_per_part)
            ),
        ));
    }
    lines.push(("step time", time_text(c)));
    if let Some(f) = &c.figures {
        let b = &f.breakdown_per_rank_mean_s;
        lines.push(("bubble", percent(f.bubble_fraction, 1)));
        lines.push((
            "exposed comm",
            format!(
                "{} per rank (mean), {} (worst rank)",
                seconds(f.exposed_comm_per_rank_mean_s),
                seconds(f.exposed_comm_per_rank_max_s)
            ),
        ));
        lines.push((
            "step per rank",
            format!(
                "compute {}, overlap slowdown {}, exposed TP {}, all-to-all {}, p2p {}",
                seconds(b.compute_s),
                seconds(b.overlap_slowdown_s),
                seconds(b.exposed_tp_s),
                seconds(b.exposed_all_to_all_s),
                seconds(b.exposed_p2p_s)
            ),
        ));
        lines.push((
            "",
            format!(
                "bubble {}, exposed DP {}, optimizer {}",
                seconds(b.bubble_s),
                seconds(b.exposed_dp_s),
                seconds(b.optimizer_s)
            ),
        ));
    }
    lines.push((
        "memory/GPU",
        format!(
            "{}, limit {}",
            memory_text(c),
            gib_text(c.memory_limit_bytes)
        ),
    ));
    if let Some(f) = &c.figures {
        lines.push(("tokens/s", si(f.tokens_per_s)));
    }
    if let Some(h) = c.run_gpu_hours {
        lines.push(("whole run", format!("{} GPU-hours", si(h))));
    }
    if let Some(b) = &r.same_shape_1f1b {
        lines.push(("saves", savings(c, b, "at the same shape")));
    }
    if let Some(b) = &r.spec_1f1b {
        let label = if r.same_shape_1f1b.is_some() {
            ""
        } else {
            "saves"
        };
        lines.push((label, savings(c, b, "as the spec has it")));
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
            (Some(c), _, Some(choice)) => {
                let mut why = format!(
                    "worse time: {} ({}) at best, {}",
                    time_text(c),
                    pct_slower(c, choice),
                    candidate_label(c)
                );
                if let Some(l) = &v.lost_on {
                    let _ = write!(
                        why,
                        "; most of it {} (+{} per rank)",
                        l.term,
                        seconds(l.more_s)
                    );
                }
                why
            }
            (Some(c), _, None) => format!("fits: {}", candidate_label(c)),
            (None, Some(c), _) => format!(
                "memory: needs at least {} ({})",
                memory_text(c),
                candidate_label(c)
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

/// The shapes left out, those with the same reason on one line: `TP 8: PP 64, 128: reason`.
fn left_out(r: &Recommendation) -> Vec<String> {
    let mut groups: Vec<(u32, Vec<u32>, &str)> = Vec::new();
    let mut lines = Vec::new();
    for s in &r.rejected_shapes {
        let Some(pp) = s.pp else {
            lines.push(format!("TP {}: {}", s.tp, s.reason));
            continue;
        };
        match groups
            .iter_mut()
            .find(|(tp, _, why)| *tp == s.tp && *why == s.reason.as_str())
        {
            Some((_, pps, _)) => pps.push(pp),
            None => groups.push((s.tp, vec![pp], s.reason.as_str())),
        }
    }
    lines.extend(groups.into_iter().map(|(tp, pps, why)| {
        let list: Vec<String> = pps.iter().map(u32::to_string).collect();
        format!("TP {tp}, PP {}: {why}", list.join(", "))
    }));
    lines
}

fn headline(r: &Recommendation) -> String {
    format!(
        "recommendation for spec {}: {} × {}, EP {}, global batch {} sequences of {} tokens, {} tokens in the run, {} of memory kept free",
        r.spec,
        r.gpus,
        r.gpu,
        r.ep,
        r.global_sequences,
        r.sequence_length,
        si(r.total_tokens),
        percent(r.memory_headroom, 0)
    )
}

fn searched(r: &Recommendation) -> String {
    format!(
        "searched: {} configurations simulated, {} that fit in memory in no way, {} not buildable",
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
        s.push_str("\nrunners-up (the fastest of each other schedule family that fits)\n");
        // At least 44 wide; a longer label (a library schedule named with its twin plugin)
        // widens it.
        let width = r
            .runners_up
            .iter()
            .map(|c| candidate_label(c).chars().count())
            .chain([44])
            .max()
            .unwrap_or(44);
        for c in &r.runners_up {
            let vs = versus_choice(r, c)
                .map(|p| format!(", {p} vs the choice"))
                .unwrap_or_default();
            let bubble = c
                .figures
                .as_ref()
                .map_or_else(|| NONE.to_owned(), |f| percent(f.bubble_fraction, 1));
            let _ = writeln!(
                s,
                "  {:<width$} {:>10}  bubble {:>6}  {}{vs}",
                candidate_label(c),
                time_text(c),
                bubble,
                memory_text(c)
            );
        }
    }
    s.push_str("\nwhy not the others\n");
    let reasons = why_not(r);
    // At least 22 wide; a longer name (a library schedule named with its twin plugin) widens it.
    let width = reasons
        .iter()
        .map(|(f, _, _)| f.chars().count())
        .chain([22])
        .max()
        .unwrap_or(22);
    for (schedule, why, partly) in reasons {
        let _ = writeln!(s, "  {schedule:<width$} {why}");
        if let Some(reason) = partly {
            let _ = writeln!(s, "  {:<width$} not buildable in some shapes: {reason}", "");
        }
    }
    let left_out = left_out(r);
    if !left_out.is_empty() {
        s.push_str("\nshapes left out\n");
        for line in left_out {
            let _ = writeln!(s, "  {line}");
        }
    }
    lines(s)
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
        s.push_str("\n**runners-up** (the fastest of each other schedule family that fits)\n\n");
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
                        time_text(c),
                        c.figures
                            .as_ref()
                            .map_or_else(|| NONE.to_owned(), |f| percent(f.bubble_fraction, 1)),
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
        s.push_str("\n**shapes left out**\n\n");
        for line in left_out {
            let _ = writeln!(s, "- {}", markdown_cell(&line));
        }
    }
    lines(s)
}

/// The search's outcome as JSON (`schemas/pipeweave-recommend.v2.schema.json`).
pub fn recommend_json(r: &Recommendation) -> String {
    crate::json::json(r)
}

/// `recommend --costs-from`'s table: one row per schedule family, fastest first.
fn measured_table(r: &MeasuredRecommendation) -> Table {
    let choice = r.choice.as_ref().map_or(f64::NAN, |c| c.step_time_s);
    Table {
        caption: String::new(),
        header: [
            "schedule",
            "step",
            "makespan",
            "peak saved (largest rank)",
            "vs the choice",
        ]
        .map(str::to_owned)
        .to_vec(),
        rows: r
            .candidates
            .iter()
            .map(|c| {
                vec![
                    c.schedule.clone(),
                    seconds(c.step_time_s),
                    seconds(c.makespan_s),
                    c.peak_saved_bytes
                        .map_or_else(|| NONE.to_owned(), |b| mib_text(b as f64)),
                    if choice > 0.0 {
                        format!("{:+.1}%", 100.0 * (c.step_time_s - choice) / choice)
                    } else {
                        NONE.to_owned()
                    },
                ]
            })
            .collect(),
    }
}

/// The headline of `recommend --costs-from`.
fn measured_headline(r: &MeasuredRecommendation) -> String {
    let when = r
        .measured_when
        .as_deref()
        .map(|w| format!(", measured {w}"))
        .unwrap_or_default();
    match &r.choice {
        Some(c) => format!(
            "recommended: {} at P = {}, M = {}, {} a step under the costs of {}{when}",
            c.schedule,
            r.ranks,
            r.microbatches,
            seconds(c.step_time_s),
            r.costs_from
        ),
        None => format!(
            "no schedule could be priced at P = {}, M = {} under the costs of {}{when}",
            r.ranks, r.microbatches, r.costs_from
        ),
    }
}

/// `recommend --costs-from` as text: the headline, every schedule family priced (fastest first)
/// and those that could not be, with why.
pub fn recommend_measured_text(r: &MeasuredRecommendation) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", measured_headline(r));
    let _ = writeln!(
        s,
        "every schedule at the run's shape, priced with its measured costs (the step: the makespan and the run's time outside the actions)\n"
    );
    let t = measured_table(r);
    let widths: Vec<usize> = (0..t.header.len())
        .map(|i| {
            t.rows
                .iter()
                .map(|row| row[i].chars().count())
                .chain([t.header[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in std::iter::once(&t.header).chain(&t.rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(s, "{}", cells.join("  ").trim_end());
    }
    if !r.unmet.is_empty() {
        s.push_str("\nnot priced\n");
        for u in &r.unmet {
            let _ = writeln!(s, "  {}: {}", u.schedule, u.reason);
        }
    }
    lines(s)
}

/// `recommend --costs-from` as Markdown: the headline and the table.
pub fn recommend_measured_markdown(r: &MeasuredRecommendation) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "**{}**\n", markdown_cell(&measured_headline(r)));
    markdown_table(&measured_table(r), &mut s);
    if !r.unmet.is_empty() {
        s.push_str("\n**not priced**\n\n");
        for u in &r.unmet {
            let _ = writeln!(
                s,
                "- {}: {}",
                markdown_cell(&u.schedule),
                markdown_cell(&u.reason)
            );
        }
    }
    lines(s)
}

/// `recommend --costs-from` as JSON (`schemas/pipeweave-recommend-measured.v1.schema.json`).
pub fn recommend_measured_json(r: &MeasuredRecommendation) -> String {
    crate::json::json(r)
}

/// The README's table of the splits: for every spec, the choice with the even split (`even`) and
/// with the searched split (`searched`), each with its layers per part, step time and most loaded
/// GPU's memory, as a Markdown table.
pub fn split_table(rows: &[(&str, &Recommendation, &Recommendation)]) -> String {
    let cells = |r: &Recommendation| -> Vec<String> {
        match &r.choice {
            Some(c) => vec![
                candidate_label(c),
                crate::format::split_text(&c.layers_per_part),
                time_text(c),
                gib_text(c.memory_bytes),
            ],
            None => vec![NONE.to_owned(); 4],
        }
    };
    let header = [
        "spec",
        "even split: choice",
        "layers per part",
        "step",
        "memory/GPU",
        "searched split: choice",
        "layers per part",
        "step",
        "memory/GPU",
    ]
    .map(str::to_owned)
    .to_vec();
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|(name, even, searched)| {
            let mut row = vec![format!("`{name}`")];
            row.extend(cells(even));
            row.extend(cells(searched));
            row
        })
        .collect();
    let mut out = String::new();
    markdown_table(
        &Table {
            caption: String::new(),
            header,
            rows: body,
        },
        &mut out,
    );
    out
}
