//! The **actions** text format: PyTorch's compute-only schedule CSV extended to several pipelines.
//!
//! One line per rank (line i is rank i), comma-separated cells, empty cells ignored.
//! A cell is `<stage><F|B|I|W><micro-batch>` or `(<F cell>;<B or I cell>)OVERLAP_F_B`.
//! Stage ids are global and pipeline-major: with K pipelines of S stages, position q of pipeline j
//! is stage j·S+q. Micro-batch ids are global.
//!
//! What the reader decides (the file carries no header):
//! - the number of ranks is the number of lines, not counting blank lines at the end of the file
//!   (a blank line in the middle is an idle rank; an idle last rank is written as a line holding
//!   a single `,`, which is a line of empty cells);
//! - the number of stages is one more than the largest stage id, and must split into `pipelines`
//!   pipelines of equal length; when the number of pipelines is not given, it is the most the
//!   file's micro-batches allow: each micro-batch stays within the stages of one pipeline, so a
//!   file of K pipelines written by pipeweave reads back as K pipelines, and a file whose
//!   micro-batches each run through every stage is one pipeline (PyTorch's CSV);
//! - a stage runs on the rank on whose line it appears (on exactly one);
//! - a pipeline carries the micro-batches its stages mention.
//!
//! Whitespace around a cell and `\r\n` line ends are accepted. Anything else after a cell is an
//! error: PyTorch's loader reads `0F1xyz` as `0F1`; pipeweave refuses it.
//! Ids are decimal; leading zeros are accepted on input and never written.
//!
//! This module checks the structure of the file only; whether the programs are a correct schedule
//! is the validator's question.

use crate::document::{Chunks, Document};
use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::{Diagnostic, FileId, Span};
use pipeweave_plan::cell::{CellError, CellErrorKind, parse_action, push_action};
use pipeweave_plan::{Action, Kind, Pipeline, Plan};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};
use std::ops::Range;

/// Micro-batch ids above this bound are refused, as by every reader (see the constant's page).
pub use pipeweave_plan::MAX_MICROBATCH_ID;

/// A plan read from an actions file, with where each action came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionsFile {
    /// The plan, not yet validated.
    pub plan: Plan,
    /// `spans[r][i]` is the byte range of the cell holding rank r's i-th action.
    pub spans: Vec<Vec<Range<usize>>>,
}

/// Reads an actions file holding `pipelines` pipelines of equal length (`None`: as many as the
/// file shows, see the module's documentation).
///
/// Returns every problem found, never only the first.
pub fn read_actions(
    source: &str,
    file: FileId,
    pipelines: Option<u32>,
) -> Result<ActionsFile, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    if pipelines == Some(0) {
        diags.push(
            Diagnostic::error("the number of pipelines must be at least 1")
                .with_help("a file of one ordinary pipeline is read with 1 pipeline"),
        );
    }
    let lines = rank_lines(source);
    if let Some(&(start, text)) = lines.get(pipeweave_plan::MAX_RANKS as usize) {
        diags.push(too_many_ranks(Span::new(file, start..start + text.len())));
        return Err(diags);
    }
    let (programs, spans) = read_programs(&lines, file, &mut diags);
    if lines.is_empty() {
        diags.push(Diagnostic::error("the file holds no ranks").with_help(
            "write one line per rank, e.g. `0F0,0B0` for one rank running one micro-batch",
        ));
        return Err(diags);
    }
    let plan = plan_of(programs, &spans, pipelines, file, diags)?;
    Ok(ActionsFile { plan, spans })
}

/// The plan of `pipelines` pipelines (`None`: as many as the micro-batches allow) the programs
/// read from a file describe, `spans` being where each action's cell is; `diags` holds the
/// problems found so far (the plan is built only when there are none). Used by every reader of
/// cells.
pub(crate) fn plan_of(
    programs: Vec<Vec<Action>>,
    spans: &[Vec<Range<usize>>],
    pipelines: Option<u32>,
    file: FileId,
    mut diags: Vec<Diagnostic>,
) -> Result<Plan, Vec<Diagnostic>> {
    let first = place_stages(&programs, spans, file, &mut diags);
    if !diags.is_empty() {
        return Err(diags);
    }
    let Some((&max_stage, _)) = first.last_key_value() else {
        diags.push(
            Diagnostic::error("the file holds no actions")
                .with_help("a cell is `<stage><F|B|I|W><micro-batch>`, e.g. `0F0`"),
        );
        return Err(diags);
    };
    check_stage_ids(&first, pipelines.unwrap_or(1), file, &mut diags);
    if !diags.is_empty() {
        return Err(diags);
    }

    // The gap check bounds the number of stages by the number of cells, so these tables are small.
    let k = pipelines.unwrap_or_else(|| most_pipelines(&programs, max_stage + 1));
    let s = (u64::from(max_stage) + 1) / u64::from(k);
    let s = s as u32;
    let mbs = pipeline_microbatches(&programs, spans, k, s, file, &mut diags);
    if !diags.is_empty() {
        return Err(diags);
    }
    let placement: Vec<u32> = first.values().map(|(r, _)| *r).collect();
    let pipelines: Vec<Pipeline> = (0..k as usize)
        .map(|j| Pipeline {
            placement: placement[j * s as usize..(j + 1) * s as usize].to_vec(),
            microbatches: mbs[j].keys().copied().collect(),
        })
        .collect();
    Plan::new(programs.len() as u32, pipelines, programs)
        .map_err(|e| vec![Diagnostic::error(e.to_string())])
}

/// The most pipelines `n` stages split into with every micro-batch within one of them: the
/// smallest pipeline length S dividing `n` such that no micro-batch runs on stages on both sides
/// of a multiple of S. Linear in the actions and the stages: a boundary between stages b − 1 and b
/// is crossed when some micro-batch's lowest stage is below b and its highest at or above it.
fn most_pipelines(programs: &[Vec<Action>], n: u32) -> u32 {
    let mut span: BTreeMap<u32, (u32, u32)> = BTreeMap::new();
    for op in programs.iter().flatten().flat_map(Action::ops) {
        let (lo, hi) = span.entry(op.mb).or_insert((op.stage, op.stage));
        *lo = (*lo).min(op.stage);
        *hi = (*hi).max(op.stage);
    }
    // crossings[b]: how many micro-batches run on both sides of the boundary before stage b.
    let mut crossings = vec![0i64; n as usize + 1];
    for &(lo, hi) in span.values() {
        crossings[lo as usize + 1] += 1;
        crossings[hi as usize + 1] -= 1;
    }
    let mut open = 0;
    let crossed: Vec<bool> = crossings
        .iter()
        .map(|&d| {
            open += d;
            open > 0
        })
        .collect();
    (1..=n)
        .filter(|s| n.is_multiple_of(*s))
        .find(|&s| (s..n).step_by(s as usize).all(|b| !crossed[b as usize]))
        .map_or(1, |s| n / s)
}

/// The lines of the file that are ranks, each with the byte where it starts: `\r` before `\n`
/// belongs to the line end, and blank lines at the end of the file are not ranks.
fn rank_lines(source: &str) -> Vec<(usize, &str)> {
    let mut lines: Vec<(usize, &str)> = Vec::new();
    let mut start = 0;
    for piece in source.split('\n') {
        let text = piece.strip_suffix('\r').unwrap_or(piece);
        lines.push((start, text));
        start += piece.len() + 1;
    }
    while lines.last().is_some_and(|(_, t)| t.trim().is_empty()) {
        lines.pop();
    }
    lines
}

/// Every rank's program and the byte range of each action's cell; cells that are not actions are
/// left out and reported.
fn read_programs(
    lines: &[(usize, &str)],
    file: FileId,
    diags: &mut Vec<Diagnostic>,
) -> (Vec<Vec<Action>>, Vec<Vec<Range<usize>>>) {
    let mut programs: Vec<Vec<Action>> = Vec::with_capacity(lines.len());
    let mut spans: Vec<Vec<Range<usize>>> = Vec::with_capacity(lines.len());
    for &(line_start, text) in lines {
        let mut program = Vec::new();
        let mut cell_spans = Vec::new();
        let mut cell_start = line_start;
        for raw in text.split(',') {
            let lead = raw.len() - raw.trim_start_matches(is_blank).len();
            let cell = raw.trim_matches(is_blank);
            let at = cell_start + lead;
            cell_start += raw.len() + 1;
            if cell.is_empty() {
                continue;
            }
            match parse_action(cell, MAX_MICROBATCH_ID) {
                Ok(action) => {
                    program.push(action);
                    cell_spans.push(at..at + cell.len());
                }
                Err(errors) => {
                    diags.extend(
                        errors
                            .into_iter()
                            .map(|e| cell_diagnostic(file, at, e, Cells::Actions)),
                    );
                }
            }
        }
        programs.push(program);
        spans.push(cell_spans);
    }
    (programs, spans)
}

/// The placement: for every stage, the first rank it appears on and the cell there; a stage on
/// a second rank is reported (once per stage and rank).
fn place_stages(
    programs: &[Vec<Action>],
    spans: &[Vec<Range<usize>>],
    file: FileId,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<u32, (u32, Range<usize>)> {
    let span = |range: &Range<usize>| Span::new(file, range.clone());
    let mut first: BTreeMap<u32, (u32, Range<usize>)> = BTreeMap::new();
    let mut reported: BTreeSet<(u32, u32)> = BTreeSet::new();
    for (rank, (program, cell_spans)) in (0u32..).zip(programs.iter().zip(spans)) {
        for (action, cell) in program.iter().zip(cell_spans) {
            for op in action.ops() {
                let Some((r0, cell0)) = first.get(&op.stage) else {
                    first.insert(op.stage, (rank, cell.clone()));
                    continue;
                };
                if *r0 == rank || !reported.insert((op.stage, rank)) {
                    continue;
                }
                diags.push(
                    Diagnostic::error(format!(
                        "stage {} appears on rank {} (line {}) and rank {} (line {})",
                        op.stage,
                        r0,
                        r0 + 1,
                        rank,
                        rank + 1
                    ))
                    .with_span_label(span(cell), format!("stage {} on rank {rank}", op.stage))
                    .with_label(
                        span(cell0),
                        format!("stage {} first appears on rank {r0}", op.stage),
                    )
                    .with_note(
                        "a stage runs on exactly one rank; the rank is the line it appears on",
                    ),
                );
            }
        }
    }
    first
}

/// Reports stage ids with gaps below the largest (each gap once) and a count of stages that does
/// not split into `pipelines` pipelines of equal length.
fn check_stage_ids(
    first: &BTreeMap<u32, (u32, Range<usize>)>,
    pipelines: u32,
    file: FileId,
    diags: &mut Vec<Diagnostic>,
) {
    let span = |range: &Range<usize>| Span::new(file, range.clone());
    // The next stage id without a gap, in u64: the largest id, u32::MAX, has no next one in u32.
    let mut expected = 0u64;
    for (&stage, (_, cell)) in first {
        if u64::from(stage) > expected {
            let what = if u64::from(stage) - expected == 1 {
                format!("stage {expected} appears on no rank")
            } else {
                format!("stages {expected} to {} appear on no rank", stage - 1)
            };
            diags.push(
                Diagnostic::error(what)
                    .with_span_label(span(cell), format!("stage {stage} is used here"))
                    .with_note(
                        "stages are numbered from 0 without gaps; a stage's rank is the line it appears on",
                    ),
            );
        }
        expected = u64::from(stage) + 1;
    }
    let Some((&max_stage, (_, cell))) = first.last_key_value() else {
        return;
    };
    let num_stages = u64::from(max_stage) + 1;
    if pipelines > 0 && num_stages % u64::from(pipelines) != 0 {
        diags.push(
            Diagnostic::error(format!(
                "{num_stages} stages cannot be split into {pipelines} pipelines of equal length"
            ))
            .with_span_label(span(cell), format!("the largest stage id is {max_stage}"))
            .with_note("with K pipelines of S stages, stage ids run from 0 to K·S−1"),
        );
    }
}

/// The micro-batches of each of the `k` pipelines of `s` stages, with the first cell that mentions
/// each; a micro-batch in two pipelines is reported.
fn pipeline_microbatches(
    programs: &[Vec<Action>],
    spans: &[Vec<Range<usize>>],
    k: u32,
    s: u32,
    file: FileId,
    diags: &mut Vec<Diagnostic>,
) -> Vec<BTreeMap<u32, Range<usize>>> {
    let span = |range: &Range<usize>| Span::new(file, range.clone());
    let mut mbs: Vec<BTreeMap<u32, Range<usize>>> = vec![BTreeMap::new(); k as usize];
    for (program, cell_spans) in programs.iter().zip(spans) {
        for (action, cell) in program.iter().zip(cell_spans) {
            for op in action.ops() {
                mbs[(op.stage / s) as usize]
                    .entry(op.mb)
                    .or_insert_with(|| cell.clone());
            }
        }
    }
    let mut owner: BTreeMap<u32, u32> = BTreeMap::new();
    for (j, set) in (0u32..).zip(&mbs) {
        for (&mb, cell) in set {
            let Some(&j0) = owner.get(&mb) else {
                owner.insert(mb, j);
                continue;
            };
            diags.push(
                Diagnostic::error(format!(
                    "micro-batch {mb} appears in pipeline {j0} and pipeline {j}"
                ))
                .with_span_label(span(cell), format!("in pipeline {j}"))
                .with_label(span(&mbs[j0 as usize][&mb]), format!("in pipeline {j0}"))
                .with_note(format!(
                    "{}; each micro-batch belongs to one pipeline",
                    pipeline_stages(j, s)
                )),
            );
        }
    }
    mbs
}

/// Says which global stages form pipeline `j` of `s` stages.
fn pipeline_stages(j: u32, s: u32) -> String {
    if s == 1 {
        format!("pipeline {j} is stage {j}")
    } else {
        format!("pipeline {j} is stages {} to {}", j * s, (j + 1) * s - 1)
    }
}

pub(crate) fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t' || c == '\r'
}

/// Writes a valid plan in the canonical actions form; `read_actions` with the plan's pipeline count
/// gives the same plan back.
///
/// Every line ends with `\n`. An idle rank is an empty line, except at the end of the file where it
/// is written as `,` (blank lines at the end are not ranks).
pub fn write_actions(plan: &ValidPlan) -> String {
    actions_text(plan).to_text()
}

/// [`write_actions`] as a [`Document`], written as it is made.
pub fn actions_text(plan: &ValidPlan) -> ActionsText<'_> {
    ActionsText { plan }
}

/// The canonical actions text of a plan (see [`write_actions`]).
#[derive(Debug, Clone, Copy)]
pub struct ActionsText<'p> {
    pub(crate) plan: &'p Plan,
}

impl Document for ActionsText<'_> {
    fn write_to(&self, out: &mut dyn Write) -> io::Result<()> {
        let programs = self.plan.programs();
        let last_busy = programs.iter().rposition(|p| !p.is_empty());
        // Cells written into the chunk buffer (see `pipeweave_plan::cell`), not through `Display`.
        let mut c = Chunks::new(out);
        for (r, program) in programs.iter().enumerate() {
            if program.is_empty() && last_busy.is_none_or(|last| r > last) {
                c.buf().push(b',');
            }
            for (i, action) in program.iter().enumerate() {
                if i > 0 {
                    c.buf().push(b',');
                }
                push_action(c.buf(), action);
                c.spill()?;
            }
            c.buf().push(b'\n');
            c.spill()?;
        }
        c.finish()
    }
}

/// Which cells a file holds: compute actions only, or the steps of a `compute_comms` CSV too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cells {
    Actions,
    Steps,
}

/// A problem the cell reader found in the cell starting at byte `at`, as a located diagnostic
/// with the words of the format.
pub(crate) fn cell_diagnostic(file: FileId, at: usize, e: CellError, cells: Cells) -> Diagnostic {
    const PAIR_HELP: &str = "write an overlapped pair as `(0F1;3B0)OVERLAP_F_B`";
    let span = Span::new(file, at + e.range.start..at + e.range.end);
    let d = Diagnostic::error(e.to_string());
    match e.kind {
        CellErrorKind::ExpectedStage { .. } => d.with_span(span).with_help(match cells {
            Cells::Actions => "a cell is `<stage><F|B|I|W><micro-batch>`, e.g. `0F1`",
            Cells::Steps => {
                "a cell is `<stage><F|B|I|W><micro-batch>`, e.g. `0F1`, or a step such as `0SEND_F1` or `0REDUCE_GRAD`"
            }
        }),
        CellErrorKind::NotCompute { .. } if cells == Cells::Steps => {
            d.with_span(span).with_help(PAIR_HELP)
        }
        CellErrorKind::NotCompute { .. } => d.with_span(span).with_help(
            "the actions format holds compute actions only (F, B, I, W and overlapped pairs); communication is added by lowering, and a PyTorch compute_comms CSV is read as `pytorch-comms`",
        ),
        CellErrorKind::Trailing { .. } => d
            .with_span_label(span, "not part of the action")
            .with_help("a cell holds one action; separate actions with commas"),
        CellErrorKind::PairEnd { .. } | CellErrorKind::PairSeparator => {
            d.with_span(span).with_help(PAIR_HELP)
        }
        CellErrorKind::PairForwardFirst { found } => d
            .with_span_label(span, format!("this is a {} action", kind_name(found)))
            .with_help("write the forward first, e.g. `(0F1;3B0)OVERLAP_F_B`"),
        CellErrorKind::PairBackwardSecond { found } => {
            d.with_span_label(span, format!("this is a {} action", kind_name(found)))
        }
        CellErrorKind::TooLarge { .. }
        | CellErrorKind::MicrobatchAbove { .. }
        | CellErrorKind::ExpectedKind { .. }
        | CellErrorKind::UnknownKind { .. }
        | CellErrorKind::ExpectedMicrobatch { .. }
        | CellErrorKind::ExpectedStepMicrobatch { .. } => d.with_span(span),
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::F => "forward",
        Kind::B => "full backward",
        Kind::I => "input-backward",
        Kind::W => "weight-backward",
    }
}

/// A file of more lines than a plan may have ranks, pointing at the first line too many.
pub(crate) fn too_many_ranks(line: Span) -> Diagnostic {
    let max = pipeweave_plan::MAX_RANKS;
    Diagnostic::error(format!(
        "the file has more than {max} ranks (lines); a plan has at most {max} ranks"
    ))
    .with_span_label(line, format!("rank {max} (line {})", max + 1))
    .with_note("every line is a rank, an empty one too (only empty lines at the end are not)")
}

#[cfg(test)]
mod tests;
