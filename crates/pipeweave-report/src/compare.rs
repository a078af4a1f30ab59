//! Comparison of schedules on one spec: a table of figures (time, bubbles, idle, memory,
//! communication, throughput, GPU-hours) and a table of traits, rendered as text, Markdown, CSV
//! and JSON.
//!
//! A [`Comparison`] is plain data: the command line fills it (compiling, loading and simulating
//! each schedule), this module only formats it. Schedules that could not run stay in the
//! comparison with the reason, so a reader sees why a row has no figures.
//! [`fit_spec`] adapts a spec to a plan's shape (ranks, stages, micro-batches), so that schedules
//! with different stage counts (DualPipeV's 2P stages beside 1F1B's P) run on the same cluster
//! and model.

use pipeweave_plan::{Action, Kind, Plan};
use pipeweave_spec::{Report, Spec, gib};
use std::fmt::Write as _;

/// One schedule's figures on the spec's cluster (seconds, bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    pub step_time_s: f64,
    /// The makespan with unit costs (F = I = W = 1), when asked for.
    pub makespan_units: Option<f64>,
    pub bubble_fraction: f64,
    /// The largest and smallest idle time of a rank in one step.
    pub idle_worst_s: f64,
    pub idle_best_s: f64,
    /// The most live activations of any rank (stage-micro-batch units).
    pub peak_activations: u32,
    /// The largest activation bytes of any GPU.
    pub activation_bytes: f64,
    /// The largest weight bytes of any GPU (every stage it hosts: replicas count).
    pub weight_bytes: f64,
    /// The largest total (weights, gradients, optimizer state, activations) of any GPU.
    pub memory_bytes: f64,
    pub gpu_memory_bytes: f64,
    pub out_of_memory: bool,
    /// Exposed communication over all pipeline ranks in one step.
    pub exposed_comm_s: f64,
    /// The same as a share of all rank-time of the step.
    pub exposed_comm_fraction: f64,
    /// Pipeline ranks (for the mean exposed communication of a rank).
    pub ranks: u32,
    pub tokens_per_s: f64,
    pub gpu_hours_per_million_tokens: f64,
    pub bubble_gpu_hours_per_million_tokens: f64,
}

impl Figures {
    /// The figures of a spec's report (and optionally the unit-cost makespan of the same plan).
    pub fn from_report(report: &Report, makespan_units: Option<f64>) -> Figures {
        let max = |f: &dyn Fn(&pipeweave_spec::RankReport) -> f64| {
            report.ranks.iter().map(f).fold(0.0, f64::max)
        };
        Figures {
            step_time_s: report.step_time_s,
            makespan_units,
            bubble_fraction: report.bubble_fraction,
            idle_worst_s: max(&|r| r.idle_s),
            idle_best_s: report
                .ranks
                .iter()
                .map(|r| r.idle_s)
                .fold(f64::INFINITY, f64::min)
                .min(report.step_time_s),
            peak_activations: report
                .ranks
                .iter()
                .map(|r| r.peak_activations)
                .max()
                .unwrap_or(0),
            activation_bytes: max(&|r| r.memory.activations),
            weight_bytes: max(&|r| r.memory.params),
            memory_bytes: max(&|r| r.memory.total()),
            gpu_memory_bytes: report.gpu_memory_bytes,
            out_of_memory: report.out_of_memory,
            exposed_comm_s: report.exposed_comm_s,
            exposed_comm_fraction: report.exposed_comm_fraction,
            ranks: report.pipeline_ranks,
            tokens_per_s: report.tokens_per_s,
            gpu_hours_per_million_tokens: report.gpu_hours_per_million_tokens,
            bubble_gpu_hours_per_million_tokens: report.bubble_gpu_hours_per_million_tokens,
        }
    }
}

/// What a schedule is, read from its plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traits {
    pub model_copies: u32,
    pub pipelines: u32,
    /// Stages (model parts, replicas counted) the busiest rank hosts over all pipelines: 1 for
    /// 1F1B, v for interleaved, 2 for Chimera and DualPipe (one per pipeline) and DualPipeV.
    pub stages_per_rank: u32,
    /// The plan has weight-gradient (W) actions: backwards split into I and W.
    pub weight_split: bool,
    /// The plan has overlapped F&B pairs.
    pub overlap: bool,
}

impl Traits {
    pub fn of(plan: &Plan) -> Traits {
        let actions = || plan.programs().iter().flatten();
        let stages_per_rank = (0..plan.ranks())
            .map(|r| plan.stages_on_rank(r).len() as u32)
            .max()
            .unwrap_or(0);
        Traits {
            model_copies: plan.model_copies(),
            pipelines: plan.pipelines().len() as u32,
            stages_per_rank,
            weight_split: actions().any(|a| match a {
                Action::One(op) => op.kind == Kind::W,
                Action::Pair { f, b } => f.kind == Kind::W || b.kind == Kind::W,
            }),
            overlap: actions().any(|a| matches!(a, Action::Pair { .. })),
        }
    }
}

/// One row: a schedule, what it requires, and its figures or why it has none.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// As the user named it (`1f1b`, `plugin:dualpipe`, `my.weave`, a plan file).
    pub schedule: String,
    /// What the schedule requires of P and M, in words (empty when unknown).
    pub requires: String,
    /// From the plan, when one was built.
    pub traits: Option<Traits>,
    /// The figures, or the reason the schedule did not run (its own error message).
    pub outcome: Result<Figures, String>,
    /// How the spec was adapted to this plan (e.g. the model cut into more parts).
    pub notes: Vec<String>,
}

/// A comparison of schedules on one spec.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The spec's name, and whether it is the built-in default.
    pub spec: String,
    pub default_spec: bool,
    pub gpus: u64,
    pub gpu: String,
    /// P and M the schedules were built for.
    pub ranks: u32,
    pub microbatches: u32,
    /// The spec's own micro-batches per step (M may differ).
    pub spec_microbatches: u32,
    /// Whether the unit-cost makespan column is shown.
    pub units: bool,
    pub rows: Vec<Row>,
}

impl Comparison {
    /// How many rows have figures.
    pub fn simulated(&self) -> usize {
        self.rows.iter().filter(|r| r.outcome.is_ok()).count()
    }

    /// The line that says what was compared, on which spec.
    pub fn title(&self) -> String {
        format!(
            "spec {}{}: {} × {}, P = {}, M = {}{}",
            self.spec,
            if self.default_spec {
                " (built-in default)"
            } else {
                ""
            },
            self.gpus,
            self.gpu,
            self.ranks,
            self.microbatches,
            if self.microbatches == self.spec_microbatches {
                String::new()
            } else {
                format!(" (the spec has {})", self.spec_microbatches)
            }
        )
    }
}

impl Comparison {
    /// An empty comparison on `spec` for schedules built with P = `ranks`, M = `microbatches`.
    pub fn new(
        spec: &Spec,
        default_spec: bool,
        ranks: u32,
        microbatches: u32,
        units: bool,
    ) -> Self {
        Comparison {
            spec: spec.name.clone(),
            default_spec,
            gpus: spec.cluster.gpus(),
            gpu: spec.cluster.gpu.clone(),
            ranks,
            microbatches,
            spec_microbatches: spec.training.microbatches,
            units,
            rows: Vec::new(),
        }
    }

    /// Adds a row for `schedule`: its plan (or the reason there is none) simulated on the spec
    /// adapted to the plan's shape ([`fit_spec`]).
    pub fn push(
        &mut self,
        spec: &Spec,
        schedule: impl Into<String>,
        requires: impl Into<String>,
        plan: Result<&Plan, String>,
    ) {
        self.rows
            .push(evaluate_row(spec, schedule, requires, plan, self.units));
    }
}

/// One row of a comparison: `plan` simulated on `spec` adapted to it, with the unit-cost makespan
/// when `units` is set.
pub fn evaluate_row(
    spec: &Spec,
    schedule: impl Into<String>,
    requires: impl Into<String>,
    plan: Result<&Plan, String>,
    units: bool,
) -> Row {
    let mut row = Row {
        schedule: schedule.into(),
        requires: requires.into(),
        traits: None,
        outcome: Err(String::new()),
        notes: Vec::new(),
    };
    let plan = match plan {
        Ok(plan) => plan,
        Err(reason) => {
            row.outcome = Err(reason);
            return row;
        }
    };
    row.traits = Some(Traits::of(plan));
    let (fitted, notes) = match fit_spec(spec, plan) {
        Ok(x) => x,
        Err(reason) => {
            row.outcome = Err(reason);
            return row;
        }
    };
    row.notes = notes;
    row.outcome = match pipeweave_spec::evaluate(&fitted, plan) {
        Ok((_, _, report)) => {
            let makespan_units = if units {
                pipeweave_sim::simulate(plan, &pipeweave_sim::UnitCosts)
                    .ok()
                    .map(|t| t.timing.makespan)
            } else {
                None
            };
            Ok(Figures::from_report(&report, makespan_units))
        }
        Err(diags) => Err(diags
            .iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")),
    };
    row
}

/// A table of text cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Seconds for people: `1.234 s`, `56.7 ms`, `12.3 µs`.
pub fn seconds(s: f64) -> String {
    let a = s.abs();
    if a >= 1.0 {
        format!("{s:.3} s")
    } else if a >= 1e-3 || a == 0.0 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

/// A count with an SI suffix and three significant digits: `1.23M`.
pub fn si(x: f64) -> String {
    let (v, suffix) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(scale, _)| x.abs() >= *scale)
        .map_or((x, ""), |(scale, s)| (x / scale, s));
    let a = v.abs();
    let digits = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$}{suffix}")
}

fn percent(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn gib_text(bytes: f64) -> String {
    format!("{:.1} GiB", gib(bytes))
}

fn memory_text(f: &Figures) -> String {
    let share = if f.gpu_memory_bytes > 0.0 {
        f.memory_bytes / f.gpu_memory_bytes
    } else {
        0.0
    };
    let oom = if f.out_of_memory { " OOM" } else { "" };
    format!("{} ({:.0}%){oom}", gib_text(f.memory_bytes), share * 100.0)
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_owned()
}

const NONE: &str = "—";

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
                Ok(f) => {
                    cells.push(seconds(f.step_time_s));
                    if c.units {
                        cells.push(
                            f.makespan_units
                                .map_or_else(|| NONE.to_owned(), crate::format_time),
                        );
                    }
                    cells.extend([
                        percent(f.bubble_fraction),
                        seconds(f.idle_worst_s),
                        seconds(f.idle_best_s),
                        format!("{} ({})", gib_text(f.activation_bytes), f.peak_activations),
                        gib_text(f.weight_bytes),
                        memory_text(f),
                        format!(
                            "{} ({})",
                            seconds(f.exposed_comm_s / f64::from(f.ranks.max(1))),
                            percent(f.exposed_comm_fraction)
                        ),
                        si(f.tokens_per_s),
                        format!("{:.4}", f.bubble_gpu_hours_per_million_tokens),
                    ]);
                }
                Err(_) => {
                    let n = header_len(c) - 1;
                    cells.extend(std::iter::repeat_n(NONE.to_owned(), n));
                }
            }
            cells
        })
        .collect();
    Table {
        caption: format!("figures per step ({})", c.title()),
        header,
        rows,
    }
}

fn header_len(c: &Comparison) -> usize {
    if c.units { 12 } else { 11 }
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

fn is_numeric(cell: &str) -> bool {
    cell.trim_start_matches(['-', '−'])
        .starts_with(|ch: char| ch.is_ascii_digit())
}

/// Which columns to align right: those whose cells (dashes aside) are all numbers.
fn right_aligned(t: &Table) -> Vec<bool> {
    (0..t.header.len())
        .map(|i| {
            i > 0
                && t.rows
                    .iter()
                    .filter_map(|r| r.get(i))
                    .all(|c| c == NONE || is_numeric(c))
        })
        .collect()
}

/// An aligned text table: text columns left-aligned, numbers right-aligned.
fn text_table(t: &Table, out: &mut String) {
    let width = |i: usize| {
        std::iter::once(&t.header)
            .chain(&t.rows)
            .filter_map(|r| r.get(i))
            .map(|s| s.chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..t.header.len()).map(width).collect();
    let right = right_aligned(t);
    let line = |cells: &[String], out: &mut String| {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            let pad = w.saturating_sub(cell.chars().count());
            if i > 0 {
                s.push_str("  ");
            }
            if right.get(i).copied().unwrap_or(false) {
                s.push_str(&" ".repeat(pad));
                s.push_str(cell);
            } else {
                s.push_str(cell);
                s.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(&t.header, out);
    for r in &t.rows {
        line(r, out);
    }
}

/// The comparison as aligned text tables.
pub fn compare_text(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", c.title());
    out.push('\n');
    text_table(&figures_table(c), &mut out);
    out.push('\n');
    text_table(&traits_table(c), &mut out);
    let notes = compare_notes(c);
    if !notes.is_empty() {
        out.push('\n');
        for n in notes {
            let _ = writeln!(out, "{n}");
        }
    }
    out
}

fn markdown_cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn markdown_table(t: &Table, out: &mut String) {
    let row = |cells: &[String]| {
        let cells: Vec<String> = cells.iter().map(|c| markdown_cell(c)).collect();
        format!("| {} |\n", cells.join(" | "))
    };
    out.push_str(&row(&t.header));
    let rule: Vec<&str> = right_aligned(t)
        .into_iter()
        .map(|r| if r { "---:" } else { "---" })
        .collect();
    let _ = writeln!(out, "| {} |", rule.join(" | "));
    for r in &t.rows {
        out.push_str(&row(r));
    }
}

/// The comparison as Markdown (a heading line, two pipe tables, the notes as a list).
pub fn compare_markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "**{}**", markdown_cell(&c.title()));
    out.push('\n');
    markdown_table(&figures_table(c), &mut out);
    out.push('\n');
    markdown_table(&traits_table(c), &mut out);
    let notes = compare_notes(c);
    if !notes.is_empty() {
        out.push('\n');
        for n in notes {
            let _ = writeln!(out, "- {}", markdown_cell(&n));
        }
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
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

/// The comparison as JSON: the spec, P, M, and one object per schedule with raw figures (seconds,
/// bytes), its traits, or its `error`.
pub fn compare_json(c: &Comparison) -> String {
    use serde_json::{Value, json};
    let rows: Vec<Value> = c
        .rows
        .iter()
        .map(|row| {
            let mut v = serde_json::Map::new();
            v.insert("schedule".into(), json!(row.schedule));
            v.insert("requires".into(), json!(row.requires));
            match &row.outcome {
                Ok(f) => {
                    v.insert(
                        "figures".into(),
                        json!({
                            "step_time_s": f.step_time_s,
                            "makespan_units": f.makespan_units,
                            "bubble_fraction": f.bubble_fraction,
                            "idle_worst_s": f.idle_worst_s,
                            "idle_best_s": f.idle_best_s,
                            "peak_activations": f.peak_activations,
                            "activation_bytes": f.activation_bytes,
                            "weight_bytes": f.weight_bytes,
                            "memory_bytes": f.memory_bytes,
                            "gpu_memory_bytes": f.gpu_memory_bytes,
                            "out_of_memory": f.out_of_memory,
                            "exposed_comm_s": f.exposed_comm_s,
                            "exposed_comm_fraction": f.exposed_comm_fraction,
                            "tokens_per_s": f.tokens_per_s,
                            "gpu_hours_per_million_tokens": f.gpu_hours_per_million_tokens,
                            "bubble_gpu_hours_per_million_tokens": f.bubble_gpu_hours_per_million_tokens,
                        }),
                    );
                }
                Err(reason) => {
                    v.insert("error".into(), json!(reason));
                }
            }
            if let Some(t) = &row.traits {
                v.insert(
                    "traits".into(),
                    json!({
                        "model_copies": t.model_copies,
                        "pipelines": t.pipelines,
                        "stages_per_rank": t.stages_per_rank,
                        "weight_split": t.weight_split,
                        "overlap": t.overlap,
                    }),
                );
            }
            v.insert("notes".into(), json!(row.notes));
            Value::Object(v)
        })
        .collect();
    let v = json!({
        "spec": c.spec,
        "default_spec": c.default_spec,
        "gpus": c.gpus,
        "gpu": c.gpu,
        "ranks": c.ranks,
        "microbatches": c.microbatches,
        "spec_microbatches": c.spec_microbatches,
        "rows": rows,
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}

/// Adapts `spec` to `plan`'s shape: pipeline ranks (data parallelism takes the rest of the GPUs),
/// model parts (an even split of the layers when the count changes, the first and last parts
/// lighter since they carry the embedding and the head), and micro-batches per step.
/// Returns the adapted spec and one note per change; fails when the cluster or the model cannot
/// take the plan's shape.
pub fn fit_spec(spec: &Spec, plan: &Plan) -> Result<(Spec, Vec<String>), String> {
    let mut out = spec.clone();
    let mut notes = Vec::new();
    let pp = plan.ranks();
    let parts = plan.stages_per_pipeline();
    if pp == 0 || !parts.is_multiple_of(pp) {
        return Err(format!(
            "the plan's {parts} stages per pipeline do not spread evenly over its {pp} ranks"
        ));
    }
    let par = &mut out.parallelism;
    if pp != par.pp {
        let gpus = spec.cluster.gpus();
        let per_replica = u64::from(pp) * u64::from(par.tp);
        if !gpus.is_multiple_of(per_replica) {
            return Err(format!(
                "{gpus} GPUs do not split into pipelines of {pp} ranks × tp {}",
                par.tp
            ));
        }
        let dp = u32::try_from(gpus / per_replica).map_err(|_| "too many GPUs".to_owned())?;
        if spec.model.moe.is_some() && !dp.is_multiple_of(par.ep) {
            return Err(format!(
                "expert parallelism {} does not divide the data parallelism {dp} left by pp {pp}",
                par.ep
            ));
        }
        notes.push(format!(
            "pp {} instead of the spec's {} (dp {dp} instead of {})",
            pp, par.pp, par.dp
        ));
        par.pp = pp;
        par.dp = dp;
    }
    let v = parts / pp;
    par.stages_per_rank = v;
    if par.layers_per_stage.len() != parts as usize {
        let layers = spec.model.layers;
        if layers < u64::from(parts) {
            return Err(format!(
                "the plan has {parts} stages per pipeline but the model has only {layers} layers"
            ));
        }
        if spec.measured != pipeweave_spec::Measured::default() {
            return Err(format!(
                "the spec's measured costs are given per part for {} parts, the plan has {parts}",
                par.layers_per_stage.len()
            ));
        }
        par.layers_per_stage = split_layers(layers, parts);
        let each = describe_split(&par.layers_per_stage);
        notes.push(format!(
            "the model cut into {parts} parts ({v} per rank): {each} layer{} each",
            if each == "1" { "" } else { "s" }
        ));
    }
    // The comparison's title says when M differs from the spec's; every row would repeat it.
    out.training.microbatches = plan.num_microbatches();
    Ok((out, notes))
}

/// `layers` over `parts` as evenly as possible; the extra layers go to the middle parts, so the
/// first and last parts (embedding, head) are the lighter ones.
pub fn split_layers(layers: u64, parts: u32) -> Vec<u64> {
    let n = u64::from(parts.max(1));
    let (base, extra) = (layers / n, layers % n);
    let lo = (n - extra) / 2;
    (0..n)
        .map(|q| base + u64::from(q >= lo && q < lo + extra))
        .collect()
}

fn describe_split(split: &[u64]) -> String {
    let min = split.iter().copied().min().unwrap_or(0);
    let max = split.iter().copied().max().unwrap_or(0);
    if min == max {
        min.to_string()
    } else {
        format!("{min}–{max}")
    }
}
