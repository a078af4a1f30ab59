//! The cell text of ops, actions and lowered steps, PyTorch's form: `3F2`, `(0F3;7B5)OVERLAP_F_B`,
//! `1SEND_B0`, `2REDUCE_GRAD`. One writer and one reader, used by every format that holds cells
//! (the actions file, PyTorch's CSVs, the plugin protocol, trace names) and by `Display`.
//!
//! The writer appends to a byte buffer from the parts, without the formatting machinery, which
//! costs more than the rest of an export per cell on big plans. Cells hold only digits, letters and
//! `();_`, so they can go inside JSON strings and CSV fields without escapes.
//!
//! The readers take one trimmed cell and return the action ([`parse_action`]) or the step of
//! PyTorch's `compute_comms` CSV ([`parse_step`]), or every problem in it as a [`CellError`] with a
//! byte range inside the cell; readers of files turn those into located diagnostics. Ids are
//! decimal; leading zeros are accepted and never written.

use crate::action::{Action, Kind, Op};
use crate::lowered::Step;
use crate::plan::Dir;
use std::fmt;
use std::ops::Range;

/// What follows the two ops of an overlapped pair.
pub const PAIR_SUFFIX: &str = ")OVERLAP_F_B";

/// The longest cell the writer makes (a pair of two ops with ten-digit ids), for buffers.
const MAX_CELL_LEN: usize = 2 * (10 + 1 + 10) + 2 + PAIR_SUFFIX.len();

/// The names PyTorch gives the actions that are not computation, longest first where one is a
/// prefix of another: a reader of compute cells says plainly that it met one of these.
const NON_COMPUTE: [&str; 11] = [
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

/// "00", "01", … "99": two digits per division, half the divisions of one digit at a time.
const DIGIT_PAIRS: &[u8; 200] = b"\
    0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

/// Appends an unsigned integer in decimal.
///
/// Hand-written rather than `itoa`: measured on the export benchmark (32 × 1,024 1F1B, CPU time
/// per export, four alternating runs), `itoa` made `pytorch-comms` 26% slower (6.0 → 7.6 ms) and
/// `json` 18% slower (7.9 → 9.5 ms), `actions` 3% faster (0.72 → 0.70 ms) and the Chrome trace
/// no different within noise (about 52 ms): its variable-length copy calls `memcpy`, where the
/// numbers here, mostly one to four digits, are cheaper pushed one by one.
// Always inlined: each call site then predicts its own digit counts. Measured as above against a
// call shared by every site: actions 0.61 -> 0.55 ms, pytorch-comms 5.9 -> 5.7 ms, json 8.3 -> 7.7
// ms, the Chrome trace 54 -> 50 ms (though it executes 7% more instructions).
#[inline(always)]
pub fn push_uint(out: &mut Vec<u8>, v: u64) {
    // Small numbers (ranks, stages, most micro-batches) directly.
    if v < 10 {
        out.push(b'0' + v as u8);
        return;
    }
    // Digits from the last ones into the end of a buffer long enough for u64::MAX, two per
    // division, then pushed one by one.
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut n = v;
    while n >= 100 {
        let d = (n % 100) as usize * 2;
        n /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&DIGIT_PAIRS[d..d + 2]);
    }
    if n >= 10 {
        let d = n as usize * 2;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&DIGIT_PAIRS[d..d + 2]);
    } else {
        i -= 1;
        buf[i] = b'0' + n as u8;
    }
    for &digit in &buf[i..] {
        out.push(digit);
    }
}

/// The letter of a transfer's direction in step cells: `F` for activations, `B` for gradients.
#[inline]
fn dir_letter(dir: Dir) -> u8 {
    match dir {
        Dir::Fwd => b'F',
        Dir::Bwd => b'B',
    }
}

/// Appends `<stage><kind><mb>`.
#[inline]
pub fn push_op(out: &mut Vec<u8>, op: Op) {
    push_uint(out, op.stage.into());
    // Kind letters are ASCII.
    out.push(op.kind.letter() as u8);
    push_uint(out, op.mb.into());
}

/// Appends an op's cell, or `(<F op>;<B or I op>)OVERLAP_F_B` for a pair.
#[inline]
pub fn push_action(out: &mut Vec<u8>, action: &Action) {
    match *action {
        Action::One(op) => push_op(out, op),
        Action::Pair { f, b } => {
            out.push(b'(');
            push_op(out, f);
            out.push(b';');
            push_op(out, b);
            out.extend_from_slice(PAIR_SUFFIX.as_bytes());
        }
    }
}

/// `<stage><name>_<F|B><mb>` for a transfer step.
#[inline]
fn push_transfer(out: &mut Vec<u8>, name: &[u8], dir: Dir, stage: u32, mb: u32) {
    push_uint(out, stage.into());
    out.extend_from_slice(name);
    out.push(dir_letter(dir));
    push_uint(out, mb.into());
}

/// Appends a lowered step's cell, as PyTorch's `compute_comms` CSV writes it: the action's cell
/// for a compute step, `<stage>RECV_F<mb>` (the receiving stage), `<stage>SEND_B<mb>` and
/// `<stage>WAIT_SEND_B<mb>` (the sending stage), `<stage>REDUCE_GRAD`, `<stage>WAIT_REDUCE_GRAD`.
// Always inlined: where the step is built for the call (trace names), the match folds away.
#[inline(always)]
pub fn push_step(out: &mut Vec<u8>, step: &Step) {
    match *step {
        Step::Compute(ref a) => push_action(out, a),
        Step::Recv { dir, stage, mb, .. } => push_transfer(out, b"RECV_", dir, stage, mb),
        Step::Send { dir, stage, mb, .. } => push_transfer(out, b"SEND_", dir, stage, mb),
        Step::WaitSend { dir, stage, mb, .. } => {
            push_transfer(out, b"WAIT_SEND_", dir, stage, mb);
        }
        Step::ReduceGrad { stage } => {
            push_uint(out, stage.into());
            out.extend_from_slice(b"REDUCE_GRAD");
        }
        Step::WaitReduceGrad { stage } => {
            push_uint(out, stage.into());
            out.extend_from_slice(b"WAIT_REDUCE_GRAD");
        }
    }
}

/// Writes `step`'s cell followed by its peer, as messages and traces name a transfer:
/// `0SEND_F0 to rank 1`, `0WAIT_SEND_F0 to rank 1`, `1RECV_F0 from rank 0`; any other step as its
/// cell alone.
// Always inlined, as `push_step` is: each call site folds the match for the step it builds.
#[inline(always)]
pub fn push_step_with_peer(out: &mut Vec<u8>, step: &Step) {
    push_step(out, step);
    let (words, peer): (&[u8], u32) = match *step {
        Step::Recv { peer, .. } => (b" from rank ", peer),
        Step::Send { peer, .. } | Step::WaitSend { peer, .. } => (b" to rank ", peer),
        _ => return,
    };
    out.extend_from_slice(words);
    push_uint(out, peer.into());
}

impl fmt::Display for Op {
    /// PyTorch's cell form: `<stage><kind><micro-batch>`, e.g. `3I0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_cell(f, |out| push_op(out, *self))
    }
}

impl fmt::Display for Action {
    /// PyTorch's cell form; a pair is `(<F op>;<B or I op>)OVERLAP_F_B`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_cell(f, |out| push_action(out, self))
    }
}

impl fmt::Display for Step {
    /// PyTorch's `compute_comms` cell form (see [`push_step`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_cell(f, |out| push_step(out, self))
    }
}

/// Writes a cell to a formatter through the writer (the `Display` of ops, actions and steps).
fn fmt_cell(f: &mut fmt::Formatter<'_>, write: impl FnOnce(&mut Vec<u8>)) -> fmt::Result {
    let mut buf = Vec::with_capacity(MAX_CELL_LEN);
    write(&mut buf);
    // Cells are ASCII.
    f.write_str(std::str::from_utf8(&buf).map_err(|_| fmt::Error)?)
}

/// A problem in a cell: what is wrong, and the bytes of the cell it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellError {
    /// A byte range of the cell (empty at the end of the cell when something is missing there).
    pub range: Range<usize>,
    /// What is wrong there.
    pub kind: CellErrorKind,
}

/// Which id of an op a number is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id {
    /// The number before the kind.
    Stage,
    /// The number after the kind.
    Microbatch,
}

impl Id {
    fn name(self) -> &'static str {
        match self {
            Id::Stage => "stage",
            Id::Microbatch => "micro-batch",
        }
    }
}

/// What is wrong in a cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CellErrorKind {
    /// No digits where an op starts.
    ExpectedStage {
        /// What stands there (`None`: the end of the cell).
        found: Option<char>,
    },
    /// A number that does not fit in 32 bits.
    TooLarge {
        /// Which number.
        id: Id,
        /// Its digits as written.
        digits: String,
    },
    /// A micro-batch id above the reader's bound.
    MicrobatchAbove {
        /// The id.
        mb: u32,
        /// The largest id the reader takes.
        max: u32,
    },
    /// The cell ends after the stage.
    ExpectedKind {
        /// The stage read.
        stage: u32,
    },
    /// One of PyTorch's communication or sharding actions, where a compute action belongs.
    NotCompute {
        /// The action's name (`SEND_F`, `UNSHARD`, ...).
        name: &'static str,
    },
    /// A letter that is not F, B, I or W.
    UnknownKind {
        /// The letter.
        letter: char,
    },
    /// No digits after the kind.
    ExpectedMicrobatch {
        /// The stage read.
        stage: u32,
        /// The kind's letter read.
        letter: char,
        /// What stands there, as for [`CellErrorKind::ExpectedStage`].
        found: Option<char>,
    },
    /// No digits after a transfer's name (`1SEND_F`); `found` as for
    /// [`CellErrorKind::ExpectedStage`].
    ExpectedStepMicrobatch {
        /// The stage read.
        stage: u32,
        /// The transfer's name read (`SEND_F`, ...).
        name: &'static str,
        /// What stands there.
        found: Option<char>,
    },
    /// Text after a whole op.
    Trailing {
        /// The text after the op.
        rest: String,
        /// The op read, as written.
        op: String,
    },
    /// A cell starting with `(` that does not end with [`PAIR_SUFFIX`].
    PairEnd {
        /// The text from the cell's first `)` on, if it has one.
        found: Option<String>,
    },
    /// A pair without the `;` between its ops.
    PairSeparator,
    /// A pair whose first op is not a forward.
    PairForwardFirst {
        /// The first op's kind.
        found: Kind,
    },
    /// A pair whose second op is not a B or an I.
    PairBackwardSecond {
        /// The second op's kind.
        found: Kind,
    },
}

/// `` `c` `` or "the end of the cell".
struct Found(Option<char>);

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(c) => write!(f, "`{}`", Quoted(c.encode_utf8(&mut [0; 4]))),
            None => f.write_str("the end of the cell"),
        }
    }
}

/// Text of a cell as a message quotes it: a control character as its code (`\u{1b}`), since a
/// cell holds whatever its file does and a message may reach a terminal.
struct Quoted<'a>(&'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            if c.is_control() {
                write!(f, "{}", c.escape_unicode())?;
            } else {
                fmt::Write::write_char(f, c)?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for CellError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            CellErrorKind::ExpectedStage { found } => {
                write!(f, "expected a stage number, found {}", Found(*found))
            }
            CellErrorKind::TooLarge { id, digits } => {
                write!(f, "{} number `{digits}` is too large", id.name())
            }
            CellErrorKind::MicrobatchAbove { mb, max } => {
                write!(f, "micro-batch number `{mb}` is too large (at most {max})")
            }
            CellErrorKind::ExpectedKind { stage } => write!(
                f,
                "expected an action kind (F, B, I or W) after `{stage}`, found the end of the cell"
            ),
            CellErrorKind::NotCompute { name } => write!(f, "`{name}` is not a compute action"),
            CellErrorKind::UnknownKind { letter } => write!(
                f,
                "unknown action kind `{}`: expected F, B, I or W",
                Quoted(letter.encode_utf8(&mut [0; 4]))
            ),
            CellErrorKind::ExpectedMicrobatch {
                stage,
                letter,
                found,
            } => write!(
                f,
                "expected a micro-batch number after `{stage}{letter}`, found {}",
                Found(*found)
            ),
            CellErrorKind::ExpectedStepMicrobatch { stage, name, found } => write!(
                f,
                "expected a micro-batch number after `{stage}{name}`, found {}",
                Found(*found)
            ),
            CellErrorKind::Trailing { rest, op } => {
                write!(f, "unexpected `{}` after `{op}`", Quoted(rest))
            }
            CellErrorKind::PairEnd { found: Some(found) } => write!(
                f,
                "an overlapped pair must end with `{PAIR_SUFFIX}`, found `{}`",
                Quoted(found)
            ),
            CellErrorKind::PairEnd { found: None } => {
                write!(f, "an overlapped pair must end with `{PAIR_SUFFIX}`")
            }
            CellErrorKind::PairSeparator => {
                f.write_str("an overlapped pair needs two actions separated by `;`")
            }
            CellErrorKind::PairForwardFirst { .. } => {
                f.write_str("an overlapped pair needs a forward first")
            }
            CellErrorKind::PairBackwardSecond { .. } => {
                f.write_str("the second action of an overlapped pair must be a B or an I")
            }
        }
    }
}

impl std::error::Error for CellError {}

fn error(range: Range<usize>, kind: CellErrorKind) -> CellError {
    CellError { range, kind }
}

/// Reads one cell as an action; micro-batch ids above `max_mb` are refused (a reader's bound on
/// the tables a plan keeps by id). Returns every problem found in the cell: a pair can have one
/// in each half.
pub fn parse_action(cell: &str, max_mb: u32) -> Result<Action, Vec<CellError>> {
    if let Some(inner) = cell.strip_prefix('(') {
        return parse_pair(cell, inner, max_mb);
    }
    let (op, used) = parse_op(cell, 0, max_mb).map_err(|e| vec![e])?;
    if used < cell.len() {
        return Err(vec![trailing(cell, 0, used)]);
    }
    Ok(Action::One(op))
}

/// A cell of PyTorch's `compute_comms` CSV: a compute action, or one of the other actions of 2.15's
/// `_Action` grammar. A transfer names the stage PyTorch writes (the receiving one for `RECV_*`,
/// the sending one for `SEND_*` and `WAIT_SEND_*`), as [`Step`] does, without the peer: the plan's
/// placement gives that.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepCell {
    /// A compute action (`0F1`, `(0F3;7B5)OVERLAP_F_B`).
    Compute(Action),
    /// `<stage>RECV_F<mb>`, `<stage>RECV_B<mb>`.
    Recv {
        /// Activations (`F`) or gradients (`B`).
        dir: Dir,
        /// The receiving stage.
        stage: u32,
        /// The micro-batch.
        mb: u32,
    },
    /// `<stage>SEND_F<mb>`, `<stage>SEND_B<mb>`.
    Send {
        /// Activations (`F`) or gradients (`B`).
        dir: Dir,
        /// The sending stage.
        stage: u32,
        /// The micro-batch.
        mb: u32,
    },
    /// `<stage>WAIT_SEND_F<mb>`, `<stage>WAIT_SEND_B<mb>`: the wait for that send.
    WaitSend {
        /// Activations (`F`) or gradients (`B`).
        dir: Dir,
        /// The sending stage.
        stage: u32,
        /// The micro-batch.
        mb: u32,
    },
    /// `<stage>REDUCE_GRAD`.
    ReduceGrad {
        /// The stage whose gradients are reduced.
        stage: u32,
    },
    /// `<stage>WAIT_REDUCE_GRAD`.
    WaitReduceGrad {
        /// The stage whose reduction is waited for.
        stage: u32,
    },
    /// `<stage>UNSHARD`: FSDP gathers the stage's parameters before it computes.
    Unshard {
        /// The stage.
        stage: u32,
    },
    /// `<stage>RESHARD`: FSDP frees them again.
    Reshard {
        /// The stage.
        stage: u32,
    },
}

/// What a step's name stands for, before its ids are read.
#[derive(Debug, Clone, Copy)]
enum Named {
    Recv(Dir),
    Send(Dir),
    WaitSend(Dir),
    ReduceGrad,
    WaitReduceGrad,
    Unshard,
    Reshard,
}

/// The names of the steps that are not computation, as 2.15's `_action_regex` lists them (none is
/// a prefix of another).
const STEP_NAMES: [(&str, Named); 10] = [
    ("WAIT_REDUCE_GRAD", Named::WaitReduceGrad),
    ("WAIT_SEND_F", Named::WaitSend(Dir::Fwd)),
    ("WAIT_SEND_B", Named::WaitSend(Dir::Bwd)),
    ("REDUCE_GRAD", Named::ReduceGrad),
    ("UNSHARD", Named::Unshard),
    ("RESHARD", Named::Reshard),
    ("SEND_F", Named::Send(Dir::Fwd)),
    ("RECV_F", Named::Recv(Dir::Fwd)),
    ("SEND_B", Named::Send(Dir::Bwd)),
    ("RECV_B", Named::Recv(Dir::Bwd)),
];

/// The stage's digits and the step name after them, when the cell names a step that is not
/// computation.
fn step_name(cell: &str) -> Option<(usize, &'static str, Named)> {
    let digits = cell.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = &cell[digits..];
    STEP_NAMES
        .iter()
        .find(|(name, _)| rest.starts_with(name))
        .map(|&(name, named)| (digits, name, named))
}

/// Whether a (trimmed) cell names one of PyTorch's steps that are not computation: a transfer, a
/// wait, a gradient reduction, `UNSHARD` or `RESHARD`. What tells a `compute_comms` CSV from a
/// compute-only one.
pub fn is_step_cell(cell: &str) -> bool {
    step_name(cell).is_some()
}

/// Reads one cell of a `compute_comms` CSV: a compute action as [`parse_action`] reads it, or a
/// step. A transfer needs its micro-batch (2.15's runtime refuses one without); the other steps
/// take none. Nothing may follow. Returns every problem found in the cell.
pub fn parse_step(cell: &str, max_mb: u32) -> Result<StepCell, Vec<CellError>> {
    let Some((digits, name, named)) = step_name(cell) else {
        return parse_action(cell, max_mb).map(StepCell::Compute);
    };
    let stage = parse_id(&cell[..digits], 0, Id::Stage).map_err(|e| vec![e])?;
    let after = digits + name.len();
    let rest = &cell[after..];
    let transfer = match named {
        Named::Recv(dir) | Named::Send(dir) | Named::WaitSend(dir) => Some(dir),
        _ => None,
    };
    let Some(dir) = transfer else {
        if !rest.is_empty() {
            return Err(vec![trailing(cell, 0, after)]);
        }
        return Ok(match named {
            Named::ReduceGrad => StepCell::ReduceGrad { stage },
            Named::WaitReduceGrad => StepCell::WaitReduceGrad { stage },
            Named::Unshard => StepCell::Unshard { stage },
            _ => StepCell::Reshard { stage },
        });
    };
    let mb_digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if mb_digits == 0 {
        return Err(vec![error(
            first_char(rest, after),
            CellErrorKind::ExpectedStepMicrobatch {
                stage,
                name,
                found: rest.chars().next(),
            },
        )]);
    }
    let mb = parse_id(&rest[..mb_digits], after, Id::Microbatch).map_err(|e| vec![e])?;
    if mb > max_mb {
        return Err(vec![error(
            after..after + mb_digits,
            CellErrorKind::MicrobatchAbove { mb, max: max_mb },
        )]);
    }
    if after + mb_digits < cell.len() {
        return Err(vec![trailing(cell, 0, after + mb_digits)]);
    }
    Ok(match named {
        Named::Recv(_) => StepCell::Recv { dir, stage, mb },
        Named::Send(_) => StepCell::Send { dir, stage, mb },
        _ => StepCell::WaitSend { dir, stage, mb },
    })
}

impl fmt::Display for StepCell {
    /// The cell as PyTorch writes it (the peer-less form of [`push_step`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_cell(f, |out| push_step_cell(out, self))
    }
}

/// Appends a step cell as PyTorch writes it.
pub fn push_step_cell(out: &mut Vec<u8>, cell: &StepCell) {
    let named = |out: &mut Vec<u8>, stage: u32, name: &[u8]| {
        push_uint(out, stage.into());
        out.extend_from_slice(name);
    };
    match *cell {
        StepCell::Compute(ref a) => push_action(out, a),
        StepCell::Recv { dir, stage, mb } => push_transfer(out, b"RECV_", dir, stage, mb),
        StepCell::Send { dir, stage, mb } => push_transfer(out, b"SEND_", dir, stage, mb),
        StepCell::WaitSend { dir, stage, mb } => {
            push_transfer(out, b"WAIT_SEND_", dir, stage, mb);
        }
        StepCell::ReduceGrad { stage } => named(out, stage, b"REDUCE_GRAD"),
        StepCell::WaitReduceGrad { stage } => named(out, stage, b"WAIT_REDUCE_GRAD"),
        StepCell::Unshard { stage } => named(out, stage, b"UNSHARD"),
        StepCell::Reshard { stage } => named(out, stage, b"RESHARD"),
    }
}

impl From<Step> for StepCell {
    /// The cell of a lowered step (its peer left out).
    fn from(step: Step) -> StepCell {
        match step {
            Step::Compute(a) => StepCell::Compute(a),
            Step::Recv { dir, stage, mb, .. } => StepCell::Recv { dir, stage, mb },
            Step::Send { dir, stage, mb, .. } => StepCell::Send { dir, stage, mb },
            Step::WaitSend { dir, stage, mb, .. } => StepCell::WaitSend { dir, stage, mb },
            Step::ReduceGrad { stage } => StepCell::ReduceGrad { stage },
            Step::WaitReduceGrad { stage } => StepCell::WaitReduceGrad { stage },
        }
    }
}

/// Text after the op `text[..used]`, where `text` starts at byte `at` of the cell.
fn trailing(text: &str, at: usize, used: usize) -> CellError {
    error(
        at + used..at + text.len(),
        CellErrorKind::Trailing {
            rest: text[used..].to_owned(),
            op: text[..used].to_owned(),
        },
    )
}

/// Parses `(<F op>;<B or I op>)OVERLAP_F_B`; `inner` is the cell after `(`.
fn parse_pair(cell: &str, inner: &str, max_mb: u32) -> Result<Action, Vec<CellError>> {
    let whole = 0..cell.len();
    let Some(body) = inner.strip_suffix(PAIR_SUFFIX) else {
        let found = inner.find(')').map(|close| inner[close..].to_owned());
        return Err(vec![error(whole, CellErrorKind::PairEnd { found })]);
    };
    let Some((fwd, bwd)) = body.split_once(';') else {
        return Err(vec![error(whole, CellErrorKind::PairSeparator)]);
    };
    let (fwd_at, bwd_at) = (1, 1 + fwd.len() + 1);
    let mut errors = Vec::new();
    let f = parse_half(fwd, fwd_at, max_mb, &mut errors);
    let b = parse_half(bwd, bwd_at, max_mb, &mut errors);
    if let Some(f) = f
        && f.kind != Kind::F
    {
        errors.push(error(
            fwd_at..fwd_at + fwd.len(),
            CellErrorKind::PairForwardFirst { found: f.kind },
        ));
    }
    if let Some(b) = b
        && !b.kind.is_input_backward()
    {
        errors.push(error(
            bwd_at..bwd_at + bwd.len(),
            CellErrorKind::PairBackwardSecond { found: b.kind },
        ));
    }
    match (f, b) {
        (Some(f), Some(b)) if errors.is_empty() => Ok(Action::Pair { f, b }),
        _ => Err(errors),
    }
}

/// One op of a pair, the whole of `text` (which starts at byte `at` of the cell).
fn parse_half(text: &str, at: usize, max_mb: u32, errors: &mut Vec<CellError>) -> Option<Op> {
    match parse_op(text, at, max_mb) {
        Ok((op, used)) if used == text.len() => Some(op),
        Ok((_, used)) => {
            errors.push(trailing(text, at, used));
            None
        }
        Err(e) => {
            errors.push(e);
            None
        }
    }
}

/// The byte range of the first character of `rest` (which starts at byte `at` of the cell), or an
/// empty range at the end.
fn first_char(rest: &str, at: usize) -> Range<usize> {
    at..at + rest.chars().next().map_or(0, char::len_utf8)
}

/// Parses `<stage><kind><mb>` at the start of `text` (byte `at` of the cell); returns the op and
/// the bytes used.
fn parse_op(text: &str, at: usize, max_mb: u32) -> Result<(Op, usize), CellError> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        let found = text.chars().next();
        return Err(error(
            first_char(text, at),
            CellErrorKind::ExpectedStage { found },
        ));
    }
    let stage = parse_id(&text[..digits], at, Id::Stage)?;
    let rest = &text[digits..];
    let kind_at = at + digits;
    let Some(letter) = rest.chars().next() else {
        return Err(error(
            kind_at..kind_at,
            CellErrorKind::ExpectedKind { stage },
        ));
    };
    let Some(kind) = Kind::from_letter(letter) else {
        if let Some(&name) = NON_COMPUTE.iter().find(|n| rest.starts_with(**n)) {
            return Err(error(
                kind_at..kind_at + name.len(),
                CellErrorKind::NotCompute { name },
            ));
        }
        return Err(error(
            first_char(rest, kind_at),
            CellErrorKind::UnknownKind { letter },
        ));
    };
    // The kind letter is ASCII.
    let rest = &rest[1..];
    let mb_at = kind_at + 1;
    let mb_digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if mb_digits == 0 {
        return Err(error(
            first_char(rest, mb_at),
            CellErrorKind::ExpectedMicrobatch {
                stage,
                letter,
                found: rest.chars().next(),
            },
        ));
    }
    let mb = parse_id(&rest[..mb_digits], mb_at, Id::Microbatch)?;
    if mb > max_mb {
        return Err(error(
            mb_at..mb_at + mb_digits,
            CellErrorKind::MicrobatchAbove { mb, max: max_mb },
        ));
    }
    Ok((Op::new(stage, kind, mb), digits + 1 + mb_digits))
}

/// A run of ASCII digits (byte `at` of the cell) as an id.
fn parse_id(digits: &str, at: usize, id: Id) -> Result<u32, CellError> {
    digits.parse::<u32>().map_err(|_| {
        error(
            at..at + digits.len(),
            CellErrorKind::TooLarge {
                id,
                digits: digits.to_owned(),
            },
        )
    })
}

#[cfg(test)]
mod tests;
