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
//!   pipelines of equal length;
//! - a stage runs on the rank on whose line it appears (on exactly one);
//! - a pipeline carries the micro-batches its stages mention.
//!
//! Whitespace around a cell and `\r\n` line ends are accepted. Anything else after a cell is an
//! error: PyTorch's loader reads `0F1xyz` as `0F1`; pipeweave refuses it.
//! Ids are decimal; leading zeros are accepted on input and never written.
//!
//! This module checks the structure of the file only; whether the programs are a correct schedule
//! is the validator's question.

use crate::cells::push_action;
use pipeweave_diagnostics::{Diagnostic, FileId, Span};
use pipeweave_plan::{Action, Kind, Op, Pipeline, Plan};
use std::collections::BTreeMap;
use std::ops::Range;

/// Micro-batch ids at or above this bound are refused: the plan keeps a table indexed by id, and a
/// one-line file must not be able to ask for gigabytes.
pub const MAX_MICROBATCH_ID: u32 = (1 << 24) - 1;

/// A plan read from an actions file, with where each action came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionsFile {
    pub plan: Plan,
    /// `spans[r][i]` is the byte range of the cell holding rank r's i-th action.
    pub spans: Vec<Vec<Range<usize>>>,
}

/// What a PyTorch lowered CSV may hold that this format does not, to say so plainly.
const COMM_KINDS: [&str; 11] = [
    "WAIT_REDUCE_GRAD",
    "WAIT_SEND_F",
    "WAIT_SEND_B",
    "REDUCE_GRAD",
    "UNSHARD",
    "RESHARD",
    "SEND_F",
    "RECV_F",
    "SEND_B",
    "RECV_B",
    "OVERLAP_F_B",
];

const PAIR_SUFFIX: &str = ")OVERLAP_F_B";

/// Reads an actions file holding `pipelines` pipelines of equal length.
///
/// Returns every problem found, never only the first.
pub fn read_actions(
    source: &str,
    file: FileId,
    pipelines: u32,
) -> Result<ActionsFile, Vec<Diagnostic>> {
    let span = |range: Range<usize>| Span::new(file, range);
    let mut diags = Vec::new();
    if pipelines == 0 {
        diags.push(
            Diagnostic::error("the number of pipelines must be at least 1")
                .with_help("a file of one ordinary pipeline is read with 1 pipeline"),
        );
    }

    // Split into lines, remembering where each starts; `\r` before `\n` belongs to the line end.
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
    if let Some(&(start, text)) = lines.get(pipeweave_plan::MAX_RANKS as usize) {
        diags.push(too_many_ranks(Span::new(file, start..start + text.len())));
        return Err(diags);
    }

    let mut programs: Vec<Vec<Action>> = Vec::with_capacity(lines.len());
    let mut spans: Vec<Vec<Range<usize>>> = Vec::with_capacity(lines.len());
    for &(line_start, text) in &lines {
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
            match parse_cell(cell, at) {
                Ok(action) => {
                    program.push(action);
                    cell_spans.push(at..at + cell.len());
                }
                Err(errors) => {
                    diags.extend(errors.into_iter().map(|e| e.into_diagnostic(file)));
                }
            }
        }
        programs.push(program);
        spans.push(cell_spans);
    }

    if lines.is_empty() {
        diags.push(Diagnostic::error("the file holds no ranks").with_help(
            "write one line per rank, e.g. `0F0,0B0` for one rank running one micro-batch",
        ));
        return Err(diags);
    }

    // Placement: the first rank (and cell) on which every stage appears; a later rank is an error.
    // `first[stage]` = (rank, span of first cell there).
    let mut first: BTreeMap<u32, (u32, Range<usize>)> = BTreeMap::new();
    let mut reported: BTreeMap<(u32, u32), ()> = BTreeMap::new();
    for (rank, (program, cell_spans)) in programs.iter().zip(&spans).enumerate() {
        let rank = rank as u32;
        for (action, cell) in program.iter().zip(cell_spans) {
            for op in action.ops() {
                match first.get(&op.stage) {
                    None => {
                        first.insert(op.stage, (rank, cell.clone()));
                    }
                    Some((r0, cell0)) if *r0 != rank => {
                        if reported.insert((op.stage, rank), ()).is_none() {
                            diags.push(
                                Diagnostic::error(format!(
                                    "stage {} appears on rank {} (line {}) and rank {} (line {})",
                                    op.stage,
                                    r0,
                                    r0 + 1,
                                    rank,
                                    rank + 1
                                ))
                                .with_span_label(
                                    span(cell.clone()),
                                    format!("stage {} on rank {rank}", op.stage),
                                )
                                .with_label(
                                    span(cell0.clone()),
                                    format!("stage {} first appears on rank {r0}", op.stage),
                                )
                                .with_note("a stage runs on exactly one rank; the rank is the line it appears on"),
                            );
                        }
                    }
                    Some(_) => {}
                }
            }
        }
    }

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

    // Every stage below the largest must appear, or it has no rank; report each gap once.
    let mut expected = 0u32;
    for (&stage, (_, cell)) in &first {
        if stage > expected {
            let what = if stage - expected == 1 {
                format!("stage {expected} appears on no rank")
            } else {
                format!("stages {expected} to {} appear on no rank", stage - 1)
            };
            diags.push(
                Diagnostic::error(what)
                    .with_span_label(span(cell.clone()), format!("stage {stage} is used here"))
                    .with_note(
                        "stages are numbered from 0 without gaps; a stage's rank is the line it appears on",
                    ),
            );
        }
        expected = stage + 1;
    }
    let num_stages = u64::from(max_stage) + 1;
    if pipelines > 0 && num_stages % u64::from(pipelines) != 0 {
        diags.push(
            Diagnostic::error(format!(
                "{num_stages} stages cannot be split into {pipelines} pipelines of equal length"
            ))
            .with_span_label(
                span(first[&max_stage].1.clone()),
                format!("the largest stage id is {max_stage}"),
            )
            .with_note("with K pipelines of S stages, stage ids run from 0 to K·S−1"),
        );
    }
    if !diags.is_empty() {
        return Err(diags);
    }

    // The gap check bounds `num_stages` by the number of cells, so these tables are small.
    let k = pipelines;
    let s = (num_stages / u64::from(k)) as u32;
    let placement: Vec<u32> = first.values().map(|(r, _)| *r).collect();
    // Micro-batches per pipeline, with the first cell that mentions each.
    let mut mbs: Vec<BTreeMap<u32, Range<usize>>> = vec![BTreeMap::new(); k as usize];
    for (program, cell_spans) in programs.iter().zip(&spans) {
        for (action, cell) in program.iter().zip(cell_spans) {
            for op in action.ops() {
                mbs[(op.stage / s) as usize]
                    .entry(op.mb)
                    .or_insert_with(|| cell.clone());
            }
        }
    }
    let mut owner: BTreeMap<u32, u32> = BTreeMap::new();
    for (j, set) in mbs.iter().enumerate() {
        for (&mb, cell) in set {
            if let Some(&j0) = owner.get(&mb) {
                diags.push(
                    Diagnostic::error(format!(
                        "micro-batch {mb} appears in pipeline {j0} and pipeline {j}"
                    ))
                    .with_span_label(span(cell.clone()), format!("in pipeline {j}"))
                    .with_label(
                        span(mbs[j0 as usize][&mb].clone()),
                        format!("in pipeline {j0}"),
                    )
                    .with_note(format!(
                        "{}; each micro-batch belongs to one pipeline",
                        pipeline_stages(j as u32, s)
                    )),
                );
            } else {
                owner.insert(mb, j as u32);
            }
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }

    let pipelines_vec: Vec<Pipeline> = (0..k as usize)
        .map(|j| Pipeline {
            placement: placement[j * s as usize..(j + 1) * s as usize].to_vec(),
            microbatches: mbs[j].keys().copied().collect(),
        })
        .collect();
    match Plan::new(lines.len() as u32, pipelines_vec, programs) {
        Ok(plan) => Ok(ActionsFile { plan, spans }),
        Err(e) => Err(vec![Diagnostic::error(e.to_string())]),
    }
}

/// Says which global stages form pipeline `j` of `s` stages.
fn pipeline_stages(j: u32, s: u32) -> String {
    if s == 1 {
        format!("pipeline {j} is stage {j}")
    } else {
        format!("pipeline {j} is stages {} to {}", j * s, (j + 1) * s - 1)
    }
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t' || c == '\r'
}

/// Writes a plan in the canonical actions form; `read_actions` with the plan's pipeline count gives
/// the same plan back.
///
/// Every line ends with `\n`. An idle rank is an empty line, except at the end of the file where it
/// is written as `,` (blank lines at the end are not ranks).
pub fn write_actions(plan: &Plan) -> String {
    let programs = plan.programs();
    let last_busy = programs.iter().rposition(|p| !p.is_empty());
    // Cells written from their parts (see `cells`), not through `Display`.
    let mut out: Vec<u8> = Vec::with_capacity(plan.num_ops() * 6 + programs.len());
    for (r, program) in programs.iter().enumerate() {
        if program.is_empty() && last_busy.is_none_or(|last| r > last) {
            out.push(b',');
        }
        for (i, action) in program.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            push_action(&mut out, action);
        }
        out.push(b'\n');
    }
    // Cells are ASCII, so the conversion always succeeds; the lossy one only avoids a panic path.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A problem inside one cell, before file ids are known.
#[derive(Debug)]
struct CellError {
    range: Range<usize>,
    message: String,
    label: Option<String>,
    help: Option<String>,
}

impl CellError {
    fn new(range: Range<usize>, message: String) -> CellError {
        CellError {
            range,
            message,
            label: None,
            help: None,
        }
    }

    fn label(mut self, label: impl Into<String>) -> CellError {
        self.label = Some(label.into());
        self
    }

    fn help(mut self, help: impl Into<String>) -> CellError {
        self.help = Some(help.into());
        self
    }

    fn into_diagnostic(self, file: FileId) -> Diagnostic {
        let span = Span::new(file, self.range);
        let mut d = Diagnostic::error(self.message);
        d = match self.label {
            Some(l) => d.with_span_label(span, l),
            None => d.with_span(span),
        };
        match self.help {
            Some(h) => d.with_help(h),
            None => d,
        }
    }
}

/// Describes what stands at `rest` for a message: the next character, or the end of the cell.
fn found(rest: &str) -> String {
    match rest.chars().next() {
        Some(c) => format!("`{c}`"),
        None => "the end of the cell".to_string(),
    }
}

/// The byte range of the next character of `rest` (which starts at `at`), or an empty range at the end.
fn next_char_range(rest: &str, at: usize) -> Range<usize> {
    at..at + rest.chars().next().map_or(0, char::len_utf8)
}

fn parse_cell(cell: &str, at: usize) -> Result<Action, Vec<CellError>> {
    if let Some(inner) = cell.strip_prefix('(') {
        return parse_pair(cell, inner, at);
    }
    let (op, used) = parse_op(cell, at).map_err(|e| vec![e])?;
    let rest = &cell[used..];
    if !rest.is_empty() {
        return Err(vec![trailing(rest, at + used, &cell[..used])]);
    }
    Ok(Action::One(op))
}

fn trailing(rest: &str, at: usize, op: &str) -> CellError {
    CellError::new(
        at..at + rest.len(),
        format!("unexpected `{rest}` after `{op}`"),
    )
    .label("not part of the action")
    .help("a cell holds one action; separate actions with commas")
}

/// Parses `(<F op>;<B or I op>)OVERLAP_F_B`; `inner` is the cell after `(`.
fn parse_pair(cell: &str, inner: &str, at: usize) -> Result<Action, Vec<CellError>> {
    let whole = at..at + cell.len();
    let inner_at = at + 1;
    let Some(body) = inner.strip_suffix(PAIR_SUFFIX) else {
        let msg = if let Some(close) = inner.find(')') {
            format!(
                "an overlapped pair must end with `{PAIR_SUFFIX}`, found `{}`",
                &inner[close..]
            )
        } else {
            "an overlapped pair must end with `)OVERLAP_F_B`".to_string()
        };
        return Err(vec![
            CellError::new(whole, msg).help("write an overlapped pair as `(0F1;3B0)OVERLAP_F_B`"),
        ]);
    };
    let Some((fwd, bwd)) = body.split_once(';') else {
        return Err(vec![
            CellError::new(
                whole,
                "an overlapped pair needs two actions separated by `;`".to_string(),
            )
            .help("write an overlapped pair as `(0F1;3B0)OVERLAP_F_B`"),
        ]);
    };
    let bwd_at = inner_at + fwd.len() + 1;
    let mut errors = Vec::new();
    let f = parse_half(fwd, inner_at, &mut errors);
    let b = parse_half(bwd, bwd_at, &mut errors);
    if let Some(f) = f
        && f.kind != Kind::F
    {
        errors.push(
            CellError::new(
                inner_at..inner_at + fwd.len(),
                "an overlapped pair needs a forward first".to_string(),
            )
            .label(format!("this is a {} action", kind_name(f.kind)))
            .help("write the forward first, e.g. `(0F1;3B0)OVERLAP_F_B`"),
        );
    }
    if let Some(b) = b
        && !b.kind.is_input_backward()
    {
        errors.push(
            CellError::new(
                bwd_at..bwd_at + bwd.len(),
                "the second action of an overlapped pair must be a B or an I".to_string(),
            )
            .label(format!("this is a {} action", kind_name(b.kind))),
        );
    }
    match (f, b) {
        (Some(f), Some(b)) if errors.is_empty() => Ok(Action::Pair { f, b }),
        _ => Err(errors),
    }
}

fn parse_half(text: &str, at: usize, errors: &mut Vec<CellError>) -> Option<Op> {
    match parse_op(text, at) {
        Ok((op, used)) if used == text.len() => Some(op),
        Ok((_, used)) => {
            errors.push(trailing(&text[used..], at + used, &text[..used]));
            None
        }
        Err(e) => {
            errors.push(e);
            None
        }
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

/// Parses `<stage><kind><mb>` at the start of `text`; returns the op and the bytes used.
fn parse_op(text: &str, at: usize) -> Result<(Op, usize), CellError> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(CellError::new(
            next_char_range(text, at),
            format!("expected a stage number, found {}", found(text)),
        )
        .help("a cell is `<stage><F|B|I|W><micro-batch>`, e.g. `0F1`"));
    }
    let stage = parse_id(&text[..digits], at, "stage")?;
    let rest = &text[digits..];
    let kind_at = at + digits;
    let Some(letter) = rest.chars().next() else {
        return Err(CellError::new(
            kind_at..kind_at,
            format!(
                "expected an action kind (F, B, I or W) after `{stage}`, found the end of the cell"
            ),
        ));
    };
    let Some(kind) = Kind::from_letter(letter) else {
        if let Some(name) = COMM_KINDS.iter().find(|n| rest.starts_with(**n)) {
            return Err(CellError::new(
                kind_at..kind_at + name.len(),
                format!("`{name}` is not a compute action"),
            )
            .help("the actions format holds compute actions only (F, B, I, W and overlapped pairs); communication is added by lowering"));
        }
        return Err(CellError::new(
            next_char_range(rest, kind_at),
            format!("unknown action kind `{letter}`: expected F, B, I or W"),
        ));
    };
    let rest = &rest[1..];
    let mb_at = kind_at + 1;
    let mb_digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if mb_digits == 0 {
        return Err(CellError::new(
            next_char_range(rest, mb_at),
            format!(
                "expected a micro-batch number after `{stage}{letter}`, found {}",
                found(rest)
            ),
        ));
    }
    let mb = parse_id(&rest[..mb_digits], mb_at, "micro-batch")?;
    if mb > MAX_MICROBATCH_ID {
        return Err(CellError::new(
            mb_at..mb_at + mb_digits,
            format!("micro-batch number `{mb}` is too large (at most {MAX_MICROBATCH_ID})"),
        ));
    }
    Ok((Op::new(stage, kind, mb), digits + 1 + mb_digits))
}

fn parse_id(digits: &str, at: usize, what: &str) -> Result<u32, CellError> {
    digits.parse::<u32>().map_err(|_| {
        CellError::new(
            at..at + digits.len(),
            format!("{what} number `{digits}` is too large"),
        )
    })
}

/// A file of more lines than a plan may have ranks, pointing at the first line too many.
fn too_many_ranks(line: Span) -> Diagnostic {
    let max = pipeweave_plan::MAX_RANKS;
    Diagnostic::error(format!(
        "the file has more than {max} ranks (lines); a plan has at most {max} ranks"
    ))
    .with_span_label(line, format!("rank {max} (line {})", max + 1))
    .with_note("every line is a rank, an empty one too (only empty lines at the end are not)")
}

#[cfg(test)]
mod tests;
