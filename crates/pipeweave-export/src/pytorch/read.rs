//! Reading PyTorch 2.15's `compute_comms` CSV as a plan: its compute cells, in order, are the plan;
//! every other cell is kept where it stands, for the check against the plan's lowering
//! ([`CommsFile::check`], in `check.rs`). Not a second schedule: what runs is the plan, lowered
//! by pipeweave.
//!
//! The file is read as Python's `csv` module and 2.15's `_load_csv(format="compute_comms")` read
//! it: every line is a rank, an empty one too (an idle rank), except the nothing after the last
//! line end. Cells are those of `pipeweave_plan::cell::parse_step`; whitespace around a cell is
//! accepted and empty cells are ignored, as in the actions format.

use crate::actions::{
    Cells, MAX_MICROBATCH_ID, cell_diagnostic, is_blank, plan_of, too_many_ranks,
};
use pipeweave_diagnostics::{Diagnostic, FileId, Severity, Span};
use pipeweave_plan::cell::{StepCell, parse_step};
use pipeweave_plan::{Action, Plan};
use std::ops::Range;

/// A plan read from a `compute_comms` CSV, with where each action came from and the other cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommsFile {
    /// The compute cells of every rank, in order.
    pub plan: Plan,
    /// `spans[r][i]` is the byte range of the cell holding rank r's i-th action.
    pub spans: Vec<Vec<Range<usize>>>,
    /// Every cell of rank r that is not a compute action, in order.
    pub steps: Vec<Vec<StepAt>>,
    /// The file the spans point into.
    pub file: FileId,
}

/// A cell that is not a compute action, where it stands in its row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepAt {
    /// What the cell says.
    pub step: StepCell,
    /// Its position among the row's cells, from 0 (empty cells not counted).
    pub cell: usize,
    /// How many compute actions stand before it in the row.
    pub after: usize,
    /// Its bytes in the file.
    pub span: Range<usize>,
}

/// Reads a `compute_comms` CSV. Returns every problem in the cells and the placement, never only
/// the first; whether the communication fits the plan is [`CommsFile::check`]'s question, asked
/// once the plan is known to be valid.
pub fn read_pytorch_comms(source: &str, file: FileId) -> Result<CommsFile, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let lines = csv_lines(source);
    if let Some(&(start, text)) = lines.get(pipeweave_plan::MAX_RANKS as usize) {
        diags.push(too_many_ranks(Span::new(file, start..start + text.len())));
        return Err(diags);
    }
    if lines.is_empty() {
        diags.push(Diagnostic::error("the file holds no ranks").with_help(
            "write one line per rank, e.g. `0F0,0REDUCE_GRAD,0WAIT_REDUCE_GRAD` for one rank running one micro-batch",
        ));
        return Err(diags);
    }
    let mut programs: Vec<Vec<Action>> = Vec::with_capacity(lines.len());
    let mut spans: Vec<Vec<Range<usize>>> = Vec::with_capacity(lines.len());
    let mut steps: Vec<Vec<StepAt>> = Vec::with_capacity(lines.len());
    for &(line_start, text) in &lines {
        let (mut program, mut cell_spans, mut others) = (Vec::new(), Vec::new(), Vec::new());
        let mut cell_start = line_start;
        let mut position = 0;
        for raw in text.split(',') {
            let lead = raw.len() - raw.trim_start_matches(is_blank).len();
            let cell = raw.trim_matches(is_blank);
            let at = cell_start + lead;
            cell_start += raw.len() + 1;
            if cell.is_empty() {
                continue;
            }
            position += 1;
            match parse_step(cell, MAX_MICROBATCH_ID) {
                Ok(StepCell::Compute(action)) => {
                    program.push(action);
                    cell_spans.push(at..at + cell.len());
                }
                Ok(step) => others.push(StepAt {
                    step,
                    cell: position - 1,
                    after: program.len(),
                    span: at..at + cell.len(),
                }),
                Err(errors) => diags.extend(
                    errors
                        .into_iter()
                        .map(|e| cell_diagnostic(file, at, e, Cells::Steps)),
                ),
            }
        }
        programs.push(program);
        spans.push(cell_spans);
        steps.push(others);
    }
    let plan = plan_of(programs, &spans, Some(1), file, diags)?;
    Ok(CommsFile {
        plan,
        spans,
        steps,
        file,
    })
}

/// The lines of the file, each with the byte where it starts: `\r` before `\n` belongs to the
/// line end; what follows the last line end is a line only when it holds something. Stops one
/// line past the most ranks a plan may have (the caller reports that line).
fn csv_lines(source: &str) -> Vec<(usize, &str)> {
    let mut lines: Vec<(usize, &str)> = Vec::new();
    let mut start = 0;
    for piece in source
        .split('\n')
        .take(pipeweave_plan::MAX_RANKS as usize + 2)
    {
        let text = piece.strip_suffix('\r').unwrap_or(piece);
        lines.push((start, text));
        start += piece.len() + 1;
    }
    if lines.last().is_some_and(|(_, t)| t.trim().is_empty()) {
        lines.pop();
    }
    lines
}

impl CommsFile {
    /// What reading left out of the plan, as notes: the `UNSHARD` and `RESHARD` cells (one note
    /// for all of them).
    pub fn notes(&self) -> Vec<Diagnostic> {
        let mut sharding = self
            .steps
            .iter()
            .flatten()
            .filter(|s| matches!(s.step, StepCell::Unshard { .. } | StepCell::Reshard { .. }));
        let Some(first) = sharding.next() else {
            return Vec::new();
        };
        let count = 1 + sharding.count();
        let what = if count == 1 {
            "1 cell".to_owned()
        } else {
            format!("{count} cells")
        };
        vec![Diagnostic {
            severity: Severity::Note,
            ..Diagnostic::error(format!(
                "`UNSHARD` and `RESHARD` are left out of the plan ({what})"
            ))
            .with_span_label(Span::new(self.file, first.span.clone()), "the first of them")
            .with_note(
                "they are FSDP's gathering and freeing of a stage's parameters on the stage's own rank: they change neither the order of the computation nor the messages between ranks",
            )
        }]
    }
}
