//! Comparison of schedules on one spec as tables: figures (time, bubbles, idle, memory,
//! communication, throughput, GPU-hours) and traits, rendered as text, Markdown, CSV and JSON.
//!
//! The [`Comparison`] comes from `pipeweave-eval`; this module only formats it.

use crate::format::{format_time, gib_text, gpu_hours, percent, seconds, si};
use crate::table::{
    NONE, Table, csv_field, markdown_cell, markdown_table, right_aligned, text_table,
};
use pipeweave_eval::{Comparison, Figures};
use std::fmt::Write as _;

/// The line that says what was compared, on which spec.
pub fn compare_title(c: &Comparison) -> String {
    format!(
        "spec {}{}: {} × {}, P = {}, M = {}{}",
        c.spec,
        if c.default_spec {
            " (built-in default)"
        } else {
            ""
        },
        c.gpus,
        c.gpu,
        c.ranks,
        c.microbatches,
        if c.microbatches == c.spec_microbatches {
            String::new()
        } else {
            format!(" (the spec has {})", c.spec_microbatches)
        }
    )
}

fn memory_text(f: &Figures) -> String {
    let share = if f.gpu_memory_bytes > 0.0 {
        f.memory_bytes / f.gpu_memory_bytes
    } else {
        0.0
    };
    let oom = if f.out_of_memory { " OOM" } else { "" };
    format!("{} ({}){oom}", gib_text(f.memory_bytes), percent(share, 0))
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_owned()
}

/// The figure cells of one row (after the schedule's name).
fn figure_cells(f: &Figures, units: bool) -> Vec<String> {
    let mut cells = vec![seconds(f.step_time_s)];
    if units {
        cells.push(
            f.makespan_units
                .map_or_else(|| NONE.to_owned(), format_time),
        );
    }
    cells.extend([
        percent(f.bubble_fraction, 1),
        seconds(f.idle_worst_s),
        seconds(f.idle_best_s),
        format!("{} ({})", gib_text(f.activation_bytes), f.peak_activations),
        gib_text(f.weight_bytes),
        memory_text(f),
        format!(
            "{} ({})",
            seconds(f.exposed_comm_s / f64::from(f.ranks.max(1))),
            percent(f.exposed_comm_fraction, 1)
        ),
        si(f.tokens_per_s),
        gpu_hours(f.bubble_gpu_hours_per_million_tokens),
    ]);
    cells
}

/// The figures table: one row per schedule; rows without figures show dashes.
pub fn figures_table(c: &Comparison) -> Table {
    let mut header = vec!["schedule".to_owned(), "step time".to_owned()];
    if c.units {
        header.push("makespan (units)".to_owned());
    }
    header.extend(
        [
            "bubble",
            "idle worst",
            "idle best",
            "activations (peak)",
            "weights",
            "memory/GPU",
            "exposed comm/rank",
            "tokens/s",
            "bubble GPU-h/Mtok",
        ]
        .map(str::to_owned),
    );
    let rows = c
        .rows
        .iter()
        .map(|row| {
            let mut cells = vec![row.schedule.clone()];
            match &row.outcome {
                Ok(f) => cells.extend(figure_cells(f, c.units)),
                Err(_) => cells.extend(std::iter::repeat_n(NONE.to_owned(), header.len() - 1)),
            }
            cells
        })
        .collect();
    Table {
        caption: format!("figures per step ({})", compare_title(c)),
        header,
        rows,
    }
}

/// The traits table: what each schedule is and requires.
pub fn traits_table(c: &Comparison) -> Table {
    let header = [
        "schedule",
        "model copies",
        "pipelines",
        "stages/rank",
        "W split",
        "F&B overlap",
        "requires",
    ]
    .map(str::to_owned)
    .to_vec();
    let rows = c
        .rows
        .iter()
        .map(|row| {
            let mut cells = vec![row.schedule.clone()];
            match &row.traits {
                Some(t) => cells.extend([
                    t.model_copies.to_string(),
                    t.pipelines.to_string(),
                    t.stages_per_rank.to_string(),
                    yes_no(t.weight_split),
                    yes_no(t.overlap),
                ]),
                None => cells.extend(std::iter::repeat_n(NONE.to_owned(), 5)),
            }
            cells.push(if row.requires.is_empty() {
                NONE.to_owned()
            } else {
                row.requires.clone()
            });
            cells
        })
        .collect();
    Table {
        caption: "traits".to_owned(),
        header,
        rows,
    }
}

/// Lines under the tables: schedules that did not run (with the reason) and spec adaptations.
pub fn compare_notes(c: &Comparison) -> Vec<String> {
    let mut out = Vec::new();
    for row in &c.rows {
        if let Err(reason) = &row.outcome {
            out.push(format!("{}: not run: {reason}", row.schedule));
        }
    }
    for row in &c.rows {
        for n in &row.notes {
            out.push(format!("{}: {n}", row.schedule));
        }
    }
    let multi = c
        .rows
        .iter()
        .any(|row| row.traits.as_ref().is_some_and(|t| t.pipelines > 1));
    if multi {
        out.push(
            "stages/rank counts every stage a rank hosts over all its pipelines: with two pipelines a rank hosts one stage of each, two model parts"
                .to_string(),
        );
    }
    out
}

/// The comparison as aligned text tables.
pub fn compare_text(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", compare_title(c));
    for t in [figures_table(c), traits_table(c)] {
        out.push('\n');
        text_table(&t.header, &t.rows, &right_aligned(&t), &mut out);
    }
    let notes = compare_notes(c);
    if !notes.is_empty() {
        out.push('\n');
        for n in notes {
            let _ = writeln!(out, "{n}");
        }
    }
    out
}

/// The comparison as Markdown (a heading line, two pipe tables, the notes as a list).
pub fn compare_markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "**{}**", markdown_cell(&compare_title(c)));
    for t in [figures_table(c), traits_table(c)] {
        out.push('\n');
        markdown_table(&t, &mut out);
    }
    let notes = compare_notes(c);
    if !notes.is_empty() {
        out.push('\n');
        for n in notes {
            let _ = writeln!(out, "- {}", markdown_cell(&n));
        }
    }
    out
}

fn num(x: f64) -> String {
    if x.is_finite() {
        // The shortest text that reads back as the same number.
        format!("{x}")
    } else {
        String::new()
    }
}

const CSV_COLUMNS: &[&str] = &[
    "schedule",
    "spec",
    "ranks",
    "microbatches",
    "step_time_s",
    "makespan_units",
    "bubble_fraction",
    "idle_worst_s",
    "idle_best_s",
    "peak_activations",
    "activation_bytes",
    "weight_bytes",
    "memory_bytes",
    "gpu_memory_bytes",
    "out_of_memory",
    "exposed_comm_s",
    "exposed_comm_fraction",
    "tokens_per_s",
    "gpu_hours_per_million_tokens",
    "bubble_gpu_hours_per_million_tokens",
    "model_copies",
    "pipelines",
    "stages_per_rank",
    "weight_split",
    "overlap",
    "requires",
    "error",
];

/// The comparison as CSV: one line per schedule, raw numbers in seconds and bytes, figures and
/// traits side by side; `error` holds the reason a schedule did not run.
pub fn compare_csv(c: &Comparison) -> String {
    let mut out = CSV_COLUMNS.join(",");
    out.push('\n');
    for row in &c.rows {
        let mut cells = vec![
            row.schedule.clone(),
            c.spec.clone(),
            c.ranks.to_string(),
            c.microbatches.to_string(),
        ];
        match &row.outcome {
            Ok(f) => cells.extend([
                num(f.step_time_s),
                f.makespan_units.map(num).unwrap_or_default(),
                num(f.bubble_fraction),
                num(f.idle_worst_s),
                num(f.idle_best_s),
                f.peak_activations.to_string(),
                num(f.activation_bytes),
                num(f.weight_bytes),
                num(f.memory_bytes),
                num(f.gpu_memory_bytes),
                f.out_of_memory.to_string(),
                num(f.exposed_comm_s),
                num(f.exposed_comm_fraction),
                num(f.tokens_per_s),
                num(f.gpu_hours_per_million_tokens),
                num(f.bubble_gpu_hours_per_million_tokens),
            ]),
            Err(_) => cells.extend(std::iter::repeat_n(String::new(), 16)),
        }
        match &row.traits {
            Some(t) => cells.extend([
                t.model_copies.to_string(),
                t.pipelines.to_string(),
                t.stages_per_rank.to_string(),
                t.weight_split.to_string(),
                t.overlap.to_string(),
            ]),
            None => cells.extend(std::iter::repeat_n(String::new(), 5)),
        }
        cells.push(row.requires.clone());
        cells.push(row.outcome.as_ref().err().cloned().unwrap_or_default());
        let cells: Vec<String> = cells.iter().map(|s| csv_field(s)).collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// The comparison as JSON (`schemas/pipeweave-compare.v1.schema.json`): the spec, P, M, and one
/// object per schedule with raw figures (seconds, bytes), its traits, or its `error`.
pub fn compare_json(c: &Comparison) -> String {
    crate::json::json(c)
}
