//! Reads one rank's profiler trace: the Chrome-trace JSON that `torch.profiler` (Kineto) writes
//! with `export_chrome_trace`, as a [`RankTrace`] of the pipeline actions it ran, in time order.
//!
//! Two namings are read: pipeweave's `PlanRunner` names every action `pw <cell>` (a receive's
//! posting `pw post <cell>`, its `pw <cell>` the wait for the data) and records the
//! saved-activation bytes after each as a `pw saved` event; PyTorch 2.15's
//! `_PipelineScheduleRuntime` names every action `PP:<cell>` (`_get_profiler_function_name`).
//! Every other event is skipped after its name is looked at, so memory follows the actions, not
//! the events. It does not know plans: matching a trace against one is [`crate::matching`]'s.

use pipeweave_diagnostics::{Diagnostic, FileId, Span, visible};
use pipeweave_plan::cell::{StepCell, parse_step};
use pipeweave_plan::{MAX_MICROBATCH_ID, MAX_OPS, MAX_RANKS};
use serde::de::DeserializeSeed;
use serde_json::value::RawValue;
use std::ops::Range;
use stream::{DistributedInfo, RawEvent, SavedArgs, TopSeed, out_of_range, syntax};

mod meta;
mod stream;

pub use meta::{
    MAX_META_ROWS, MAX_PROBE_SECONDS, Message, PartGradient, Probe, ProbePoint, TraceMeta,
};

/// The prefix of pipeweave's action names.
pub const PIPEWEAVE_PREFIX: &str = "pw ";
/// The prefix of PyTorch 2.15's action names (`_get_profiler_function_name`).
pub const PYTORCH_PREFIX: &str = "PP:";
/// What follows [`PIPEWEAVE_PREFIX`] in the name of a receive's posting (`pw post 1RECV_F0`).
pub const POST_WORD: &str = "post ";
/// The name of pipeweave's saved-bytes records.
pub const SAVED_NAME: &str = "pw saved";
/// The prefix of `torch.profiler`'s step spans (`ProfilerStep#3`): one span per profiled step,
/// from one `prof.step()` to the next.
pub const PROFILER_STEP_PREFIX: &str = "ProfilerStep#";

/// The most events a trace may have: some 10 GB of JSON, far beyond a profiled step.
pub const MAX_EVENTS: usize = 1 << 27;
/// The most action spans and saved-bytes records a trace may have (as the most operations of a
/// plan).
pub const MAX_SPANS: usize = MAX_OPS;
/// The latest time a trace may give, in microseconds (about three thousand years after 1970:
/// Kineto's times are microseconds since the epoch, or since the trace's base time).
pub const MAX_TIME_US: f64 = 1e17;
/// The longest duration an event may have, in microseconds (about eleven days).
pub const MAX_DURATION_US: f64 = 1e12;
/// The most problems one file reports; a note says how many more there were.
pub const MAX_PROBLEMS: usize = 20;
/// How far two spans of one thread may overlap before it counts: Kineto writes times to the
/// nanosecond, and an end rounded up may pass the next start by that much.
const OVERLAP_SLACK_US: f64 = 0.002;

/// Whose names the actions of a trace carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    /// `pw <cell>`: pipeweave's `PlanRunner`.
    Pipeweave,
    /// `PP:<cell>`: PyTorch's `_PipelineScheduleRuntime`.
    PyTorch,
}

impl Naming {
    /// The prefix of its names.
    pub fn prefix(self) -> &'static str {
        match self {
            Naming::Pipeweave => PIPEWEAVE_PREFIX,
            Naming::PyTorch => PYTORCH_PREFIX,
        }
    }
}

/// Which clock the spans were taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The host thread's (`cat` `user_annotation`, or none).
    Cpu,
    /// The GPU stream's (`cat` `gpu_user_annotation`): when a trace has those, they are what the
    /// device spent, and the host's spans of the same names only measure launching.
    Gpu,
}

/// One action a rank ran, as its trace gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSpan {
    /// The action's cell (a compute action, a transfer, a reduction, ...).
    pub cell: StepCell,
    /// A `pw post <cell>` span: PlanRunner's posting of a receive, where its lowered program
    /// posts it. The receive's `pw <cell>` span is the wait for its data, before the action that
    /// uses it. (PyTorch's runtime has only the posting, its `PP:<cell>` span.)
    pub post: bool,
    /// When it started, in the trace's microseconds.
    pub start: f64,
    /// How long it took, in microseconds.
    pub dur: f64,
    /// The event's bytes in the file.
    pub at: Range<usize>,
}

impl TraceSpan {
    /// What it ran, as its name says after the prefix: the cell, `post <cell>` for a posting.
    pub fn shown(&self) -> String {
        if self.post {
            format!("{}{}", POST_WORD, self.cell)
        } else {
            self.cell.to_string()
        }
    }

    /// When it ended, in microseconds.
    pub fn end(&self) -> f64 {
        self.start + self.dur
    }
}

/// A `pw saved` record: the bytes autograd keeps saved for the backward after an action.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedRecord {
    /// The action it follows.
    pub cell: StepCell,
    /// When it was taken, in microseconds.
    pub time: f64,
    /// Bytes saved and alive after the action.
    pub bytes: u64,
    /// The most bytes alive at once so far.
    pub peak: u64,
    /// The event's bytes in the file.
    pub at: Range<usize>,
}

/// A number the file gives, with where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located<T> {
    /// The value.
    pub value: T,
    /// Its bytes in the file.
    pub at: Range<usize>,
}

/// One rank's trace.
#[derive(Debug, Clone, PartialEq)]
pub struct RankTrace {
    /// The file it was read from.
    pub file: FileId,
    /// `distributedInfo.rank`, when the file has it.
    pub rank: Option<Located<u32>>,
    /// `distributedInfo.world_size`, when the file has it.
    pub world_size: Option<Located<u32>>,
    /// Whose names the actions carry.
    pub naming: Naming,
    /// Which clock the spans come from.
    pub clock: Clock,
    /// The actions, by start time (ties in file order).
    pub spans: Vec<TraceSpan>,
    /// The saved-bytes records, by time (ties in file order); empty when the trace has none.
    pub saved: Vec<SavedRecord>,
    /// How many events the file has.
    pub events: usize,
    /// `baseTimeNanoseconds`: when Kineto gives one, the times are microseconds after it (since
    /// the epoch, in nanoseconds).
    pub base_time_ns: Option<u64>,
    /// The profiler's step spans on the host (`ProfilerStep#N`, complete events), by start time:
    /// each step as the training loop ran it, with the time outside any action. Empty when the
    /// trace has none.
    pub step_spans: Vec<StepSpan>,
    /// pipeweave's own record of the run's transfers (the `pipeweave` object `profile` writes),
    /// when the file has one.
    pub meta: Option<TraceMeta>,
}

/// A profiler step span (`ProfilerStep#N`): one step of the training loop on the host.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepSpan {
    /// When it started, in the trace's microseconds.
    pub start: f64,
    /// How long it took, in microseconds.
    pub dur: f64,
}

impl StepSpan {
    /// When it ended, in microseconds.
    pub fn end(&self) -> f64 {
        self.start + self.dur
    }
}

/// Reads one trace's text (`file` names it in diagnostics). Every problem is a diagnostic with a
/// span in the text, at most [`MAX_PROBLEMS`] of them and a note of how many more.
pub fn read_trace(text: &str, file: FileId) -> Result<RankTrace, Vec<Diagnostic>> {
    let mut reading = Reading::new(text, file);
    let mut de = serde_json::Deserializer::from_str(text);
    let top = TopSeed {
        reading: &mut reading,
    }
    .deserialize(&mut de);
    let top = top.and_then(|top| de.end().map(|()| top));
    match top {
        Ok(Top { events_given: true }) => {}
        Ok(Top {
            events_given: false,
        }) => {
            let end = text.chars().next().map_or(0, char::len_utf8);
            reading.problem(
                Diagnostic::error("this trace has no `traceEvents` list")
                    .with_span(Span::new(file, 0..end))
                    .with_note(
                        "a trace is the JSON object `torch.profiler`'s `export_chrome_trace` writes",
                    ),
            );
        }
        Err(e) => {
            if !reading.stopped {
                reading.problem(syntax(text, file, &e));
            }
        }
    }
    reading.finish()
}

/// What the top-level object held.
struct Top {
    events_given: bool,
}

/// The state of one read: what is kept and what went wrong.
struct Reading<'a> {
    text: &'a str,
    file: FileId,
    pipeweave: Spans,
    pytorch: Spans,
    saved: Vec<SavedRecord>,
    step_spans: Vec<StepSpan>,
    rank: Option<Located<u32>>,
    world_size: Option<Located<u32>>,
    base_time_ns: Option<u64>,
    meta: Option<TraceMeta>,
    events: usize,
    problems: Vec<Diagnostic>,
    more_problems: usize,
    /// A problem that ends the read was reported (the error serde returns then is not another).
    stopped: bool,
}

/// The spans of one naming, by clock.
#[derive(Default)]
struct Spans {
    cpu: Vec<TraceSpan>,
    gpu: Vec<TraceSpan>,
}

impl Spans {
    fn len(&self) -> usize {
        self.cpu.len() + self.gpu.len()
    }
}

/// An error that stops the read, already reported.
#[derive(Debug)]
struct Stop;

impl<'a> Reading<'a> {
    fn new(text: &'a str, file: FileId) -> Self {
        Reading {
            text,
            file,
            pipeweave: Spans::default(),
            pytorch: Spans::default(),
            saved: Vec::new(),
            step_spans: Vec::new(),
            rank: None,
            world_size: None,
            base_time_ns: None,
            meta: None,
            events: 0,
            problems: Vec::new(),
            more_problems: 0,
            stopped: false,
        }
    }

    fn problem(&mut self, d: Diagnostic) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(d);
        } else {
            self.more_problems += 1;
        }
    }

    fn error_at(&mut self, at: Range<usize>, message: String) {
        let d = Diagnostic::error(message).with_span(Span::new(self.file, at));
        self.problem(d);
    }

    /// The bytes of a raw value inside the text.
    fn range_of(&self, raw: &RawValue) -> Range<usize> {
        let start = (raw.get().as_ptr() as usize).wrapping_sub(self.text.as_ptr() as usize);
        let start = start.min(self.text.len());
        start..(start + raw.get().len()).min(self.text.len())
    }

    /// One element of `traceEvents`.
    fn event(&mut self, raw: &'a RawValue) -> Result<(), Stop> {
        self.events += 1;
        let at = self.range_of(raw);
        if self.events > MAX_EVENTS {
            self.error_at(
                at,
                format!(
                    "this trace has more than {MAX_EVENTS} events, more than any step profiles"
                ),
            );
            return Err(Stop);
        }
        let event: RawEvent<'a> = match serde_json::from_str(raw.get()) {
            Ok(event) => event,
            Err(e) => {
                let text = e.to_string();
                let message = text.rfind(" at line ").map_or(&text[..], |i| &text[..i]);
                self.error_at(
                    at,
                    format!("an event must be an object of fields: {}", visible(message)),
                );
                return Ok(());
            }
        };
        let Some(name) = event.name else {
            return Ok(());
        };
        let quoted = name.get();
        if quoted.starts_with("\"ProfilerStep#") {
            return self.step_span(&event, at);
        }
        let naming = if quoted.starts_with("\"pw ") {
            Naming::Pipeweave
        } else if quoted.starts_with("\"PP:") {
            Naming::PyTorch
        } else {
            return Ok(());
        };
        let name_at = self.range_of(name);
        let Ok(name) = serde_json::from_str::<String>(quoted) else {
            return Ok(());
        };
        if name == SAVED_NAME {
            return self.saved(&event, at);
        }
        let ph = event
            .ph
            .and_then(|ph| serde_json::from_str::<String>(ph.get()).ok());
        if ph.as_deref() != Some("X") {
            let found = ph.map_or("none".to_owned(), |ph| format!("`{}`", visible(&ph)));
            self.error_at(
                at,
                format!(
                    "the action `{}` must be a complete event (`\"ph\": \"X\"`), found phase {found}",
                    visible(&name)
                ),
            );
            return Ok(());
        }
        let cell_text = &name[naming.prefix().len()..];
        let (post, cell_text) = match naming {
            Naming::Pipeweave => cell_text
                .strip_prefix(POST_WORD)
                .map_or((false, cell_text), |rest| (true, rest)),
            Naming::PyTorch => (false, cell_text),
        };
        let cell = match parse_step(cell_text, MAX_MICROBATCH_ID) {
            Ok(cell) => cell,
            Err(errors) => {
                let first = errors.first().map_or(String::new(), |e| format!(": {e}"));
                self.error_at(
                    name_at,
                    format!("`{}` does not name an action{first}", visible(&name)),
                );
                return Ok(());
            }
        };
        if post && !matches!(cell, StepCell::Recv { .. }) {
            self.error_at(
                name_at,
                format!(
                    "`{}` posts what is not a receive: only a receive (`RECV_F`, `RECV_B`) has a posting of its own",
                    visible(&name)
                ),
            );
            return Ok(());
        }
        let (Some(start), Some(dur)) = (
            self.time(event.ts, "ts", &at),
            self.duration(event.dur, &at),
        ) else {
            return Ok(());
        };
        let gpu = match event.cat {
            Some(cat) => serde_json::from_str::<String>(cat.get())
                .is_ok_and(|cat| cat == "gpu_user_annotation"),
            None => false,
        };
        let spans = match naming {
            Naming::Pipeweave => &mut self.pipeweave,
            Naming::PyTorch => &mut self.pytorch,
        };
        if spans.len() >= MAX_SPANS {
            self.error_at(
                at,
                format!("this trace has more than {MAX_SPANS} actions, more than any plan"),
            );
            return Err(Stop);
        }
        let span = TraceSpan {
            cell,
            post,
            start,
            dur,
            at,
        };
        if gpu {
            spans.gpu.push(span);
        } else {
            spans.cpu.push(span);
        }
        Ok(())
    }

    /// A `ProfilerStep#N` event: kept when it is a complete event on the host; one on a GPU
    /// stream, or of another phase, is skipped.
    fn step_span(&mut self, event: &RawEvent<'a>, at: Range<usize>) -> Result<(), Stop> {
        let ph = event
            .ph
            .and_then(|ph| serde_json::from_str::<String>(ph.get()).ok());
        let gpu = event.cat.is_some_and(|cat| {
            serde_json::from_str::<String>(cat.get()).is_ok_and(|cat| cat.starts_with("gpu"))
        });
        if ph.as_deref() != Some("X") || gpu {
            return Ok(());
        }
        let (Some(start), Some(dur)) = (
            self.time(event.ts, "ts", &at),
            self.duration(event.dur, &at),
        ) else {
            return Ok(());
        };
        if self.step_spans.len() >= MAX_SPANS {
            self.error_at(
                at,
                format!("this trace has more than {MAX_SPANS} profiler steps, more than any plan has actions"),
            );
            return Err(Stop);
        }
        self.step_spans.push(StepSpan { start, dur });
        Ok(())
    }

    /// A `pw saved` event.
    fn saved(&mut self, event: &RawEvent<'a>, at: Range<usize>) -> Result<(), Stop> {
        let ph = event
            .ph
            .and_then(|ph| serde_json::from_str::<String>(ph.get()).ok());
        if !matches!(ph.as_deref(), Some("i" | "I" | "C")) {
            self.error_at(
                at,
                format!(
                    "`{SAVED_NAME}` must be an instant (`\"ph\": \"i\"`) or counter (`\"ph\": \"C\"`) event"
                ),
            );
            return Ok(());
        }
        let Some(time) = self.time(event.ts, "ts", &at) else {
            return Ok(());
        };
        let Some(args) = event.args else {
            self.error_at(
                at,
                format!("`{SAVED_NAME}` needs `args` with `action`, `bytes` and `peak`"),
            );
            return Ok(());
        };
        let args_at = self.range_of(args);
        let args: SavedArgs<'_> = match serde_json::from_str(args.get()) {
            Ok(args) => args,
            Err(_) => {
                self.error_at(
                    args_at,
                    format!(
                        "the `args` of `{SAVED_NAME}` must be an object with `action` (a cell), `bytes` and `peak` (whole numbers of bytes)"
                    ),
                );
                return Ok(());
            }
        };
        let (Some(action), Some(bytes), Some(peak)) = (args.action, args.bytes, args.peak) else {
            self.error_at(
                args_at,
                format!("the `args` of `{SAVED_NAME}` need `action`, `bytes` and `peak`"),
            );
            return Ok(());
        };
        let action_at = self.range_of(action);
        let Ok(cell_text) = serde_json::from_str::<String>(action.get()) else {
            self.error_at(action_at, "`action` must be a cell, as a string".to_owned());
            return Ok(());
        };
        let cell = match parse_step(&cell_text, MAX_MICROBATCH_ID) {
            Ok(cell @ StepCell::Compute(_)) => cell,
            Ok(_) => {
                self.error_at(
                    action_at,
                    format!("`{}` is not a compute action", visible(&cell_text)),
                );
                return Ok(());
            }
            Err(errors) => {
                let first = errors.first().map_or(String::new(), |e| format!(": {e}"));
                self.error_at(
                    action_at,
                    format!("`{}` does not name an action{first}", visible(&cell_text)),
                );
                return Ok(());
            }
        };
        let (Some(bytes), Some(peak)) = (self.bytes(bytes, "bytes"), self.bytes(peak, "peak"))
        else {
            return Ok(());
        };
        if peak < bytes {
            self.error_at(
                args_at,
                format!("`peak` ({peak}) is below `bytes` ({bytes}): the peak so far includes now"),
            );
            return Ok(());
        }
        if self.saved.len() >= MAX_SPANS {
            self.error_at(
                at,
                format!("this trace has more than {MAX_SPANS} saved-bytes records"),
            );
            return Err(Stop);
        }
        self.saved.push(SavedRecord {
            cell,
            time,
            bytes,
            peak,
            at,
        });
        Ok(())
    }

    /// A finite number of microseconds within [`MAX_TIME_US`] of zero.
    fn time(&mut self, raw: Option<&RawValue>, field: &str, at: &Range<usize>) -> Option<f64> {
        let Some(raw) = raw else {
            self.error_at(
                at.clone(),
                format!("an action needs `{field}`, its start in microseconds"),
            );
            return None;
        };
        let where_ = self.range_of(raw);
        match serde_json::from_str::<f64>(raw.get()) {
            Ok(t) if t.is_finite() && t.abs() <= MAX_TIME_US => Some(t),
            Ok(t) => {
                self.error_at(
                    where_,
                    format!("`{field}` {t:e} is beyond any trace's clock (at most {MAX_TIME_US:e} microseconds)"),
                );
                None
            }
            Err(_) => {
                self.error_at(
                    where_,
                    format!(
                        "`{field}` must be a number of microseconds{}",
                        out_of_range(raw)
                    ),
                );
                None
            }
        }
    }

    /// A duration from 0 to [`MAX_DURATION_US`].
    fn duration(&mut self, raw: Option<&RawValue>, at: &Range<usize>) -> Option<f64> {
        let Some(raw) = raw else {
            self.error_at(
                at.clone(),
                "an action needs `dur`, its duration in microseconds".to_owned(),
            );
            return None;
        };
        let where_ = self.range_of(raw);
        match serde_json::from_str::<f64>(raw.get()) {
            Ok(d) if d.is_finite() && (0.0..=MAX_DURATION_US).contains(&d) => Some(d),
            Ok(d) if d < 0.0 => {
                self.error_at(
                    where_,
                    format!("`dur` {d} is negative: a duration is at least 0"),
                );
                None
            }
            Ok(d) => {
                self.error_at(
                    where_,
                    format!("`dur` {d:e} is longer than any step (at most {MAX_DURATION_US:e} microseconds)"),
                );
                None
            }
            Err(_) => {
                self.error_at(
                    where_,
                    format!(
                        "`dur` must be a number of microseconds{}",
                        out_of_range(raw)
                    ),
                );
                None
            }
        }
    }

    /// A whole number of bytes (written as an integer or as a float with no fraction, as counters
    /// may be), at most 2^53.
    fn bytes(&mut self, raw: &RawValue, field: &str) -> Option<u64> {
        let where_ = self.range_of(raw);
        const MAX: f64 = 9_007_199_254_740_992.0;
        let value = match serde_json::from_str::<u64>(raw.get()) {
            Ok(v) => Some(v as f64),
            Err(_) => serde_json::from_str::<f64>(raw.get()).ok(),
        };
        match value {
            Some(v) if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= MAX => Some(v as u64),
            _ => {
                self.error_at(
                    where_,
                    format!("`{field}` must be a whole number of bytes from 0 to 2^53"),
                );
                None
            }
        }
    }

    /// `distributedInfo`: the rank and the world size, when given.
    fn distributed(&mut self, raw: &'a RawValue) {
        let at = self.range_of(raw);
        let Ok(info) = serde_json::from_str::<DistributedInfo<'a>>(raw.get()) else {
            self.error_at(at, "`distributedInfo` must be an object".to_owned());
            return;
        };
        for (field, value, slot) in [
            ("rank", info.rank, 0usize),
            ("world_size", info.world_size, 1),
        ] {
            let Some(value) = value else { continue };
            let where_ = self.range_of(value);
            match serde_json::from_str::<u32>(value.get()) {
                Ok(v) if v < MAX_RANKS || (slot == 1 && v == MAX_RANKS) => {
                    let located = Some(Located {
                        value: v,
                        at: where_,
                    });
                    if slot == 0 {
                        self.rank = located;
                    } else {
                        self.world_size = located;
                    }
                }
                _ => self.error_at(
                    where_,
                    format!(
                        "`distributedInfo.{field}` must be a whole number below {}",
                        MAX_RANKS + u32::from(slot == 1)
                    ),
                ),
            }
        }
        if let (Some(rank), Some(size)) = (&self.rank, &self.world_size)
            && rank.value >= size.value
        {
            let d = Diagnostic::error(format!(
                "rank {} is outside a world of {} ranks",
                rank.value, size.value
            ))
            .with_span(Span::new(self.file, rank.at.clone()));
            self.problem(d);
        }
    }

    /// The trace, or its problems.
    fn finish(mut self) -> Result<RankTrace, Vec<Diagnostic>> {
        if self.problems.is_empty() && self.pipeweave.len() + self.pytorch.len() == 0 {
            let end = self.text.chars().next().map_or(0, char::len_utf8);
            self.problem(
                Diagnostic::error("this trace has no pipeline actions")
                    .with_span(Span::new(self.file, 0..end))
                    .with_note(format!(
                        "expected spans named `{PIPEWEAVE_PREFIX}<cell>` (pipeweave's PlanRunner) or `{PYTORCH_PREFIX}<cell>` (PyTorch's _PipelineScheduleRuntime), e.g. `{PIPEWEAVE_PREFIX}0F0`"
                    ))
                    .with_help("profile the step with `record_function` names on, as `pipeweave.torch.profile` does"),
            );
        }
        let (naming, spans) = if self.pipeweave.len() > 0 {
            (Naming::Pipeweave, std::mem::take(&mut self.pipeweave))
        } else {
            (Naming::PyTorch, std::mem::take(&mut self.pytorch))
        };
        let (clock, mut spans) = if spans.gpu.is_empty() {
            (Clock::Cpu, spans.cpu)
        } else {
            (Clock::Gpu, spans.gpu)
        };
        // Events need not be in time order (Kineto writes the host's events before the
        // device's); the sort is stable, so ties keep the file's order.
        spans.sort_by(|a, b| a.start.total_cmp(&b.start));
        if clock == Clock::Cpu {
            self.check_one_at_a_time(&spans);
        }
        self.saved.sort_by(|a, b| a.time.total_cmp(&b.time));
        self.step_spans.sort_by(|a, b| a.start.total_cmp(&b.start));
        if !self.problems.is_empty() {
            if self.more_problems > 0 {
                let n = self.more_problems;
                if let Some(last) = self.problems.last_mut() {
                    last.notes
                        .push(format!("and {n} more problems in this file, not shown"));
                }
            }
            return Err(self.problems);
        }
        Ok(RankTrace {
            file: self.file,
            rank: self.rank,
            world_size: self.world_size,
            naming,
            clock,
            spans,
            saved: self.saved,
            events: self.events,
            base_time_ns: self.base_time_ns,
            step_spans: self.step_spans,
            meta: self.meta,
        })
    }

    /// A rank's host thread runs one action at a time: two spans that overlap mean two traces in
    /// one file, or a runner this reader does not know.
    fn check_one_at_a_time(&mut self, spans: &[TraceSpan]) {
        let mut end_of: Option<&TraceSpan> = None;
        for span in spans {
            if let Some(prev) = end_of
                && span.start + OVERLAP_SLACK_US < prev.end()
            {
                let d = Diagnostic::error(format!(
                    "`{}` starts at {} µs, before `{}` ends at {} µs: a rank runs its actions one at a time",
                    span.shown(),
                    span.start,
                    prev.shown(),
                    prev.end()
                ))
                .with_span_label(Span::new(self.file, span.at.clone()), "this action")
                .with_label(Span::new(self.file, prev.at.clone()), "overlaps this one")
                .with_note("a file holds the trace of one rank");
                self.problem(d);
                return;
            }
            if end_of.is_none_or(|prev| span.end() > prev.end()) {
                end_of = Some(span);
            }
        }
    }
}
