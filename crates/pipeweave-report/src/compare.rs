//! Comparison of schedules on one spec as tables: figures (time, bubbles, idle, memory,
//! communication, throughput, GPU-hours) and traits, rendered as text, Markdown, CSV and JSON.
//!
//! The [`Comparison`] comes from `pipeweave-eval`; this module only formats it.

use crate::format::{format_time, gib_text, gpu_hours, percent, seconds, si};
use crate::shown::lines;
use crate::table::{
    NONE, Table, csv_field, markdown_cell, markdown_table, right_aligned, text_table,
};
use pipeweave_eval::{Comparison, Figures};
use std::fmt::Write as _;

/// The line that says what was compared, on which spec.
pub fn compare_title(c: &Comparison) -> String {
    lines(format!(
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
    ))
}

/// The most loaded GPU's total, its share of the GPU's memory, `OOM` over the limit.
fn memory_text(f: &Figures) -> String {
    let oom = if f.out_of_memory { " OOM" } else { "" };
    format!(
        "{} ({}){oom}",
        gib_text(f.memory_bytes),
        percent(f.memory_fraction, 0)
    )
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_owned()
}

/// The figure cells of one row (after the schedule's name).
fn figure_cells(f: &Figures, units: bool, measured: bool) -> Vec<String> {
    let mut cells = vec![seconds(f.step_time_s)];
    if units {
        cells.push(
            f.makespan_units
                .map_or_else(|| NONE.to_owned(), format_time),
        );
    }
    if measured {
        cells.push(f.measured.map_or_else(
            || NONE.to_owned(),
            |m| {
                let saved = m
                    .peak_saved_bytes
                    .map_or_else(|| NONE.to_owned(), |b| crate::format::mib_text(b as f64));
                format!("{} · {saved}", seconds(m.step_time_s))
            },
        ));
    }
    cells.extend([
        percent(f.bubble_fraction, 1),
        seconds(f.idle_worst_s),
        seconds(f.idle_best_s),
        f.peak_activations.to_string(),
        memory_text(f),
        format!(
            "{} · {}",
            seconds(f.exposed_comm_per_rank_mean_s),
            seconds(f.exposed_comm_per_rank_max_s)
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
    if c.measured.is_some() {
        header.push("measured costs: step · peak saved".to_owned());
    }
    header.extend(
        [
            "bubble",
            "idle worst",
            "idle best",
            "peak activations",
            "memory/GPU",
            "exposed comm/rank mean · max",
            "tokens/s",
            "bubble GPU-h/Mtok",
        ]
        .map(str::to_owned),
    );
    rows_table(
        c,
        format!("figures per step ({})", compare_title(c)),
        header,
        |f| figure_cells(f, c.units, c.measured.is_some()),
    )
}

/// A table of one row per schedule: its name and `cells` of its figures, dashes without them.
fn rows_table(
    c: &Comparison,
    caption: String,
    header: Vec<String>,
    cells: impl Fn(&Figures) -> Vec<String>,
) -> Table {
    let rows = c
        .rows
        .iter()
        .map(|row| {
            let mut out = vec![row.schedule.clone()];
            match &row.outcome {
                Ok(f) => out.extend(cells(f)),
                Err(_) => out.extend(std::iter::repeat_n(NONE.to_owned(), header.len() - 1)),
            }
            out
        })
        .collect();
    Table {
        caption,
        header,
        rows,
    }
}

/// Where a rank's step goes, the mean over the pipeline ranks; the terms add up to the step time.
pub fn breakdown_table(c: &Comparison) -> Table {
    let header = [
        "schedule",
        "compute",
        "overlap slowdown",
        "exposed TP",
        "exposed all-to-all",
        "exposed p2p",
        "bubble",
        "exposed DP",
        "optimizer",
    ]
    .map(str::to_owned)
    .to_vec();
    rows_table(
        c,
        "step time per rank (mean over the pipeline ranks; the terms add up to the step time)"
            .to_owned(),
        header,
        |f| {
            let b = &f.breakdown_per_rank_mean_s;
            [
                b.compute_s,
                b.overlap_slowdown_s,
                b.exposed_tp_s,
                b.exposed_all_to_all_s,
                b.exposed_p2p_s,
                b.bubble_s,
                b.exposed_dp_s,
                b.optimizer_s,
            ]
            .map(seconds)
            .to_vec()
        },
    )
}

/// The most loaded GPU's memory by what holds it, against the GPU's memory and the limit.
pub fn memory_table(c: &Comparison) -> Table {
    let limit = c
        .rows
        .iter()
        .find_map(|r| r.outcome.as_ref().ok())
        .map(|f| {
            format!(
                "total (of {}, limit {})",
                gib_text(f.gpu_memory_bytes),
                gib_text(f.memory_limit_bytes)
            )
        })
        .unwrap_or_else(|| "total".to_owned());
    let mut header = [
        "schedule",
        "weights",
        "gradients",
        "optimizer",
        "activations",
        "buffers",
        "reserve",
    ]
    .map(str::to_owned)
    .to_vec();
    header.push(limit);
    rows_table(
        c,
        "memory of the most loaded GPU (replicas of a stage count)".to_owned(),
        header,
        |f| {
            let m = &f.memory_per_gpu;
            vec![
                gib_text(m.weights_bytes),
                gib_text(m.gradients_bytes),
                gib_text(m.optimizer_bytes),
                gib_text(m.activations_bytes),
                gib_text(m.buffers_bytes),
                gib_text(m.reserve_bytes),
                memory_text(f),
            ]
        },
    )
}

/// Bytes one GPU sends per step, by kind (the mean over the GPUs).
pub fn volume_table(c: &Comparison) -> Table {
    let header = ["schedule", "p2p", "TP", "all-to-all", "DP"]
        .map(str::to_owned)
        .to_vec();
    rows_table(
        c,
        "bytes one GPU sends per step (mean over the GPUs)".to_owned(),
        header,
        |f| {
            let v = &f.volume_per_gpu_bytes;
            [v.p2p, v.tp, v.all_to_all, v.dp].map(gib_text).to_vec()
        },
    )
}

/// The traits table: what each schedule is and requires.
pub fn traits_table(c: &Comparison) -> Table {
    let header = [
        "schedule",
        "model copies",
        "pipelines",
        "stages/rank",
        "layers per part",
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
                    match &row.outcome {
                        Ok(f) if !f.layers_per_part.is_empty() => {
                            crate::format::split_recompute_text(
                                &f.layers_per_part,
                                &f.recompute_per_part,
                            )
                        }
                        _ => NONE.to_owned(),
                    },
                    yes_no(t.weight_split),
                    yes_no(t.overlap),
                ]),
                None => cells.extend(std::iter::repeat_n(NONE.to_owned(), 6)),
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
    out.into_iter().map(lines).collect()
}

/// Every table of a comparison, in the order the views show them.
pub fn tables(c: &Comparison) -> Vec<Table> {
    vec![
        figures_table(c),
        breakdown_table(c),
        memory_table(c),
        volume_table(c),
        traits_table(c),
    ]
}

/// The comparison as aligned text tables.
pub fn compare_text(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", compare_title(c));
    for (i, t) in tables(c).into_iter().enumerate() {
        out.push('\n');
        if i > 0 {
            let _ = writeln!(out, "{}", t.caption);
        }
        text_table(&t.header, &t.rows, &right_aligned(&t), &mut out);
    }
    let notes = compare_notes(c);
    if !notes.is_empty() {
        out.push('\n');
        for n in notes {
            let _ = writeln!(out, "{n}");
        }
    }
    lines(out)
}

/// The comparison as Markdown (a heading line, two pipe tables, the notes as a list).
pub fn compare_markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "**{}**", markdown_cell(&compare_title(c)));
    for (i, t) in tables(c).into_iter().enumerate() {
        out.push('\n');
        if i > 0 {
            let _ = writeln!(out, "{}\n", markdown_cell(&t.caption));
        }
        markdown_table(&t, &mut out);
    }
    let notes = compare_notes(c);
    if !notes.is_empty() {
        out.push('\n');
        for n in notes {
            let _ = writeln!(out, "- {}", markdown_cell(&n));
        }
    }
    lines(out)
}

fn num(x: f64) -> String {
    if x.is_finite() {
        // The shortest text that reads back as the same number.
        format!("{x}")
    } else {
        String::new()
    }
}

/// The figure columns of the CSV, between `microbatches` and `model_copies`.
const CSV_FIGURES: usize = 37;

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
    "memory_fraction",
    "gpu_memory_bytes",
    "memory_limit_bytes",
    "out_of_memory",
    "weights_bytes",
    "gradients_bytes",
    "optimizer_bytes",
    "activations_bytes",
    "buffers_bytes",
    "reserve_bytes",
    "exposed_comm_per_rank_mean_s",
    "exposed_comm_per_rank_max_s",
    "exposed_comm_total_s",
    "compute_s",
    "overlap_slowdown_s",
    "exposed_tp_s",
    "exposed_all_to_all_s",
    "exposed_p2p_s",
    "bubble_s",
    "exposed_dp_s",
    "optimizer_s",
    "p2p_bytes_per_gpu",
    "tp_bytes_per_gpu",
    "all_to_all_bytes_per_gpu",
    "dp_bytes_per_gpu",
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
    if c.measured.is_some() {
        out.push_str(",measured_makespan_s,measured_step_time_s,measured_peak_saved_bytes");
    }
    out.push('\n');
    for row in &c.rows {
        let mut cells = vec![
            row.schedule.clone(),
            c.spec.clone(),
            c.ranks.to_string(),
            c.microbatches.to_string(),
        ];
        match &row.outcome {
            Ok(f) => {
                cells.extend([
                    num(f.step_time_s),
                    f.makespan_units.map(num).unwrap_or_default(),
                    num(f.bubble_fraction),
                    num(f.idle_worst_s),
                    num(f.idle_best_s),
                    f.peak_activations.to_string(),
                    num(f.activation_bytes),
                    num(f.weight_bytes),
                    num(f.memory_bytes),
                    num(f.memory_fraction),
                    num(f.gpu_memory_bytes),
                    num(f.memory_limit_bytes),
                    f.out_of_memory.to_string(),
                ]);
                let m = &f.memory_per_gpu;
                let b = &f.breakdown_per_rank_mean_s;
                let v = &f.volume_per_gpu_bytes;
                cells.extend(
                    [
                        m.weights_bytes,
                        m.gradients_bytes,
                        m.optimizer_bytes,
                        m.activations_bytes,
                        m.buffers_bytes,
                        m.reserve_bytes,
                        f.exposed_comm_per_rank_mean_s,
                        f.exposed_comm_per_rank_max_s,
                        f.exposed_comm_total_s,
                        b.compute_s,
                        b.overlap_slowdown_s,
                        b.exposed_tp_s,
                        b.exposed_all_to_all_s,
                        b.exposed_p2p_s,
                        b.bubble_s,
                        b.exposed_dp_s,
                        b.optimizer_s,
                        v.p2p,
                        v.tp,
                        v.all_to_all,
                        v.dp,
                        f.tokens_per_s,
                        f.gpu_hours_per_million_tokens,
                        f.bubble_gpu_hours_per_million_tokens,
                    ]
                    .map(num),
                );
            }
            Err(_) => cells.extend(std::iter::repeat_n(String::new(), CSV_FIGURES)),
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
        if c.measured.is_some() {
            let m = row.outcome.as_ref().ok().and_then(|f| f.measured);
            cells.push(m.map(|m| num(m.makespan_s)).unwrap_or_default());
            cells.push(m.map(|m| num(m.step_time_s)).unwrap_or_default());
            cells.push(
                m.and_then(|m| m.peak_saved_bytes)
                    .map(|b| b.to_string())
                    .unwrap_or_default(),
            );
        }
        let cells: Vec<String> = cells.iter().map(|s| csv_field(s)).collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    lines(out)
}

/// The comparison as JSON (`schemas/pipeweave-compare.v2.schema.json`): the spec, P, M, and one
/// object per schedule with raw figures (seconds, bytes), its traits, or its `error`.
pub fn compare_json(c: &Comparison) -> String {
    crate::json::json(c)
}
