//! Chrome trace export (the JSON Trace Event Format that Perfetto and chrome://tracing open).
//!
//! One process per rank (`rank r`), with tracks (threads):
//! - `compute`: one slice per action, named by its cell (`3F2`, `(0F3;7B5)OVERLAP_F_B`);
//! - `send N` / `recv N`: one slice per transfer of the lowered plan, from the moment the producing
//!   action ends (the send is posted) to the moment the consuming action starts on the peer (the
//!   data has arrived and is used); transfers that overlap in time go to separate numbered tracks;
//! - `reduce N`: the gradient reduction of each stage, from the moment this rank starts it to the
//!   moment the last replica of the same model part starts it (an all-reduce ends no earlier);
//! - flow arrows from every producing slice to the slice that consumes its output on another rank.
//!
//! Times come from a [`Timing`] (the simulator's, filled in by the caller); `us_per_unit` says how
//! many microseconds one unit of the timeline is (1e6 for a timeline in seconds).

use crate::document::{Chunks, Document};
use crate::json_text::{push_f64, push_str, push_uint};
use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::cell::{push_action, push_op, push_step, push_step_with_peer};
use pipeweave_plan::{Action, Dir, Kind, Plan, Step, Timing};
use slices::{Lanes, Slices};
use std::io::{self, Write};

mod slices;

// The trace is written by hand rather than through serde: a large plan has hundreds of thousands
// of small events, and serde's generic map serialization cost thousands of instructions each.
// The text is the one serde_json wrote for the former event structs (snapshots pin it): keys in
// the order name, ph, pid, tid, ts, dur, cat, id, bp, args, absent keys left out.

// The end of an event's name and its phase, up to its pid: metadata, complete slice, and the
// start and finish of a flow arrow.
const PH_M: &str = "\",\"ph\":\"M\",\"pid\":";
const PH_X: &str = "\",\"ph\":\"X\",\"pid\":";
const PH_S: &str = "\",\"ph\":\"s\",\"pid\":";
const PH_F: &str = "\",\"ph\":\"f\",\"pid\":";

const COMPUTE_TID: u32 = 0;
const SEND_TID: u32 = 1000;
const RECV_TID: u32 = 2000;
const REDUCE_TID: u32 = 3000;

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::F => "forward",
        Kind::B => "full backward",
        Kind::I => "backward for inputs",
        Kind::W => "backward for weights",
    }
}

/// What a communication slice shows.
#[derive(Clone, Copy)]
enum Comm {
    /// The sending side of a transfer of `stage`'s output (`stage` is the sending stage).
    Send {
        dir: Dir,
        stage: u32,
        mb: u32,
        from: u32,
        to: u32,
    },
    /// The receiving side of the same transfer.
    Recv {
        dir: Dir,
        stage: u32,
        mb: u32,
        from: u32,
        to: u32,
    },
    /// The gradient reduction of a stage across the replicas of its part.
    Reduce { stage: u32, part: u32 },
}

/// A communication slice (made from [`Slices`] as it is written).
#[derive(Clone, Copy)]
struct CommSlice {
    rank: u32,
    start: f64,
    end: f64,
    comm: Comm,
}

/// Writes the Chrome trace of a plan run along `timing`.
pub fn write_chrome_trace(
    plan: &ValidPlan,
    timing: &Timing,
    us_per_unit: f64,
) -> Result<String, Diagnostic> {
    Ok(chrome_trace(plan, timing, us_per_unit)?.to_text())
}

/// [`write_chrome_trace`] as a [`Document`]: the communication slices made and ordered, the
/// events written as they are made.
pub fn chrome_trace<'p>(
    plan: &'p ValidPlan,
    timing: &'p Timing,
    us_per_unit: f64,
) -> Result<ChromeTrace<'p>, Diagnostic> {
    timing
        .check(plan)
        .map_err(|e| Diagnostic::error(e.to_string()))?;
    if !(us_per_unit.is_finite() && us_per_unit > 0.0) {
        return Err(Diagnostic::error(format!(
            "the time scale must be a positive number of microseconds per unit, not {us_per_unit}"
        )));
    }
    Ok(ChromeTrace {
        plan,
        timing,
        us_per_unit,
        slices: Slices::new(plan, timing)?,
    })
}

/// The Chrome trace of a plan run along a timing (see [`write_chrome_trace`]).
pub struct ChromeTrace<'p> {
    plan: &'p Plan,
    timing: &'p Timing,
    us_per_unit: f64,
    slices: Slices,
}

impl std::fmt::Debug for ChromeTrace<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChromeTrace")
            .field("transfers", &self.slices.ids.len())
            .field("us_per_unit", &self.us_per_unit)
            .finish_non_exhaustive()
    }
}

impl Document for ChromeTrace<'_> {
    fn write_to(&self, out: &mut dyn Write) -> io::Result<()> {
        let (plan, timing, slices) = (self.plan, self.timing, &self.slices);
        let mut w = Trace {
            c: Chunks::new(out),
            us_per_unit: self.us_per_unit,
            empty: true,
        };
        w.c.raw("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
        w.metadata(plan, &slices.lanes_of)?;
        w.compute(plan, timing)?;
        // The tracks again, in the same order as when they were counted.
        let (mut lanes, mut groups) = (Lanes::default(), Vec::new());
        for &id in &slices.order {
            let c = slices.slice(id);
            let tid = lanes.assign(&c, &mut groups);
            groups.clear();
            w.comm(plan, &c, tid);
            w.c.spill()?;
        }
        // A flow arrow per transfer, from the producing action to the consuming one.
        for (id, (&t, &[_, used])) in slices.ids.iter().zip(&slices.times).enumerate() {
            let (from, to) = slices.ranks(t);
            let sent = timing.intervals[from as usize][t.action as usize];
            w.flow(id, from, sent.start, to, used);
            w.c.spill()?;
        }
        w.c.raw("\n]}\n");
        w.c.finish()
    }
}

/// The trace text being written, event by event.
struct Trace<'w> {
    /// UTF-8 throughout (see `json_text`); bytes so that appends need no checks.
    c: Chunks<'w>,
    us_per_unit: f64,
    /// No event written yet (events are separated by `,` and a newline).
    empty: bool,
}

impl Trace<'_> {
    #[inline]
    fn raw(&mut self, text: &str) {
        self.c.raw(text);
    }

    /// Starts an event: everything up to the opening quote of its name's text, which the caller
    /// writes next (already escaped) before calling [`Trace::head`].
    #[inline]
    fn open(&mut self) {
        if !self.empty {
            self.raw(",\n");
        }
        self.empty = false;
        self.raw("{\"name\":\"");
    }

    /// Closes the name and writes `ph` (given with its punctuation: `","ph":"X","pid":`), `pid`
    /// and `tid`. Keys come with their punctuation, here and below, so that each is one copy of
    /// a fixed size.
    #[inline]
    fn head(&mut self, ph: &str, pid: u32, tid: u32) {
        self.raw(ph);
        push_uint(self.c.buf(), pid.into());
        self.raw(",\"tid\":");
        push_uint(self.c.buf(), tid.into());
    }

    /// Appends `key` (with its punctuation: `,"ts":`) and a time in microseconds.
    #[inline]
    fn time(&mut self, key: &str, t: f64) {
        self.raw(key);
        push_f64(self.c.buf(), t * self.us_per_unit);
    }

    /// Appends `key` (with its punctuation: `,"mb":`) and a number.
    #[inline]
    fn uint(&mut self, key: &str, n: u32) {
        self.raw(key);
        push_uint(self.c.buf(), n.into());
    }

    /// A metadata event with one argument: `name` for a text, `sort_index` for a number.
    fn meta(&mut self, pid: u32, tid: u32, event: &str, arg: MetaArg<'_>) {
        self.open();
        self.raw(event);
        self.head(PH_M, pid, tid);
        match arg {
            MetaArg::Name(prefix, n) => {
                self.raw(",\"args\":{\"name\":");
                // Names are fixed words and numbers, but go through the escaper all the same.
                match n {
                    Some(n) => {
                        let name = format!("{prefix}{n}");
                        push_str(self.c.buf(), &name);
                    }
                    None => push_str(self.c.buf(), prefix),
                }
            }
            MetaArg::SortIndex(i) => {
                self.raw(",\"args\":{\"sort_index\":");
                push_uint(self.c.buf(), i.into());
            }
        }
        self.raw("}}");
    }

    /// Names and orders of every process (rank) and track.
    fn metadata(&mut self, plan: &Plan, lanes_of: &[(u32, u32, usize)]) -> io::Result<()> {
        for r in 0..plan.ranks() {
            self.meta(r, 0, "process_name", MetaArg::Name("rank ", Some(r)));
            self.meta(r, 0, "process_sort_index", MetaArg::SortIndex(r));
            self.meta(
                r,
                COMPUTE_TID,
                "thread_name",
                MetaArg::Name("compute", None),
            );
            self.meta(r, COMPUTE_TID, "thread_sort_index", MetaArg::SortIndex(0));
            self.c.spill()?;
        }
        for &(rank, base, lanes) in lanes_of {
            let word = match base {
                SEND_TID => "send ",
                RECV_TID => "recv ",
                _ => "reduce ",
            };
            for lane in 0..lanes as u32 {
                let tid = base + lane;
                self.meta(rank, tid, "thread_name", MetaArg::Name(word, Some(lane)));
                self.meta(rank, tid, "thread_sort_index", MetaArg::SortIndex(tid));
                self.c.spill()?;
            }
        }
        Ok(())
    }

    /// One slice per action on its rank's compute track.
    fn compute(&mut self, plan: &Plan, timing: &Timing) -> io::Result<()> {
        let s = plan.stages_per_pipeline();
        for (r, (program, times)) in plan.programs().iter().zip(&timing.intervals).enumerate() {
            for (a, t) in program.iter().zip(times) {
                self.open();
                push_action(self.c.buf(), a);
                self.head(PH_X, r as u32, COMPUTE_TID);
                self.time(",\"ts\":", t.start);
                self.time(",\"dur\":", t.end - t.start);
                match *a {
                    Action::One(op) => {
                        self.raw(",\"cat\":\"");
                        // The category: the kind's letter (ASCII).
                        self.c.buf().push(op.kind.letter() as u8);
                        self.raw("\",\"args\":{\"stage\":");
                        push_uint(self.c.buf(), op.stage.into());
                        self.uint(",\"mb\":", op.mb);
                        self.raw(",\"kind\":\"");
                        self.raw(kind_name(op.kind));
                        self.c.buf().push(b'"');
                        self.uint(",\"pipeline\":", op.stage / s);
                        self.uint(",\"part\":", op.stage % s);
                    }
                    Action::Pair { f, b } => {
                        self.raw(",\"cat\":\"pair\",\"args\":{\"forward\":\"");
                        push_op(self.c.buf(), f);
                        self.raw("\",\"backward\":\"");
                        push_op(self.c.buf(), b);
                        self.c.buf().push(b'"');
                    }
                }
                self.raw("}}");
                self.c.spill()?;
            }
        }
        Ok(())
    }

    /// One communication slice on track `tid` of its rank.
    fn comm(&mut self, plan: &Plan, c: &CommSlice, tid: u32) {
        self.open();
        // The name: the step's cell and the peer (digits and fixed words: no escape needed).
        let cat = match c.comm {
            Comm::Send {
                dir, stage, mb, to, ..
            } => {
                let send = Step::Send {
                    dir,
                    stage,
                    mb,
                    peer: to,
                };
                push_step_with_peer(self.c.buf(), &send);
                "send"
            }
            Comm::Recv {
                dir,
                stage,
                mb,
                from,
                ..
            } => {
                // Named after the receiving stage, as PyTorch's RECV_F / RECV_B are (there is one:
                // the slice comes from a send).
                let recv = Step::Recv {
                    dir,
                    stage: plan.receiving_stage(dir, stage).unwrap_or(stage),
                    mb,
                    peer: from,
                };
                push_step_with_peer(self.c.buf(), &recv);
                "recv"
            }
            Comm::Reduce { stage, .. } => {
                push_step(self.c.buf(), &Step::ReduceGrad { stage });
                "reduce"
            }
        };
        self.head(PH_X, c.rank, tid);
        self.time(",\"ts\":", c.start);
        self.time(",\"dur\":", c.end - c.start);
        self.raw(",\"cat\":\"");
        self.raw(cat);
        self.raw("\",\"args\":{\"stage\":");
        match c.comm {
            Comm::Send {
                stage,
                mb,
                from,
                to,
                ..
            }
            | Comm::Recv {
                stage,
                mb,
                from,
                to,
                ..
            } => {
                push_uint(self.c.buf(), stage.into());
                self.uint(",\"mb\":", mb);
                self.uint(",\"from_rank\":", from);
                self.uint(",\"to_rank\":", to);
            }
            Comm::Reduce { stage, part } => {
                push_uint(self.c.buf(), stage.into());
                self.uint(",\"part\":", part);
                // The replicas are stage `part` of every pipeline: their count says which, where
                // listing them made each of K reductions K long (10,000 pipelines: 500 MB).
                self.uint(",\"model_copies\":", plan.model_copies());
            }
        }
        self.raw("}}");
    }

    /// The two ends of a flow arrow from the producing slice to the consuming one.
    fn flow(&mut self, id: usize, from: u32, from_ts: f64, to: u32, to_ts: f64) {
        for (ph, pid, ts, bp) in [
            (PH_S, from, from_ts, ""),
            (PH_F, to, to_ts, ",\"bp\":\"e\""),
        ] {
            self.open();
            self.raw("data");
            self.head(ph, pid, COMPUTE_TID);
            self.time(",\"ts\":", ts);
            self.raw(",\"cat\":\"flow\",\"id\":");
            push_uint(self.c.buf(), id as u64);
            self.raw(bp);
            self.c.buf().push(b'}');
        }
    }
}

/// The argument of a metadata event.
enum MetaArg<'a> {
    /// `name`: the text, then a number when there is one (`rank 3`, `send 0`).
    Name(&'a str, Option<u32>),
    SortIndex(u32),
}

#[cfg(test)]
mod tests;
