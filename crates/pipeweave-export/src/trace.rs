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

use crate::json_text::{push_f64, push_str, push_uint};
use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::cell::{push_action, push_op, push_step, push_step_with_peer};
use pipeweave_plan::{Action, Dir, Kind, LoweredPlan, Plan, Sent, Step, Timing, lower};
use std::collections::HashMap;

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

/// Where each op runs: (stage, kind, mb) → (rank, action index), the first action holding it.
///
/// A dense table indexed by stage and micro-batch (one lookup per transfer of a big plan, so no
/// hashing); ops outside the plan's stages and micro-batches, which an unvalidated plan may hold,
/// and all ops when the table would be much larger than the plan, go to a map instead.
struct Runs {
    mb_bound: usize,
    /// `dense[(stage · 4 + kind) · mb_bound + mb]`; `None` where no action holds the op.
    dense: Vec<Option<(u32, u32)>>,
    sparse: HashMap<(u32, Kind, u32), (u32, u32)>,
}

impl Runs {
    fn new(plan: &Plan) -> Runs {
        let ops = plan.num_ops();
        let (stages, mb_bound) = (plan.num_stages() as usize, plan.mb_bound() as usize);
        let cells = stages.saturating_mul(4).saturating_mul(mb_bound);
        // A table a few times the number of ops is cheap to fill; a sparse plan is not worth it.
        let cells = if cells <= 8 * ops + 1024 { cells } else { 0 };
        let mut runs = Runs {
            mb_bound,
            dense: vec![None; cells],
            sparse: HashMap::new(),
        };
        for (r, program) in plan.programs().iter().enumerate() {
            for (i, a) in program.iter().enumerate() {
                for op in a.ops() {
                    let at = (r as u32, i as u32);
                    match runs.slot(op.stage, op.kind, op.mb) {
                        Some(k) => {
                            runs.dense[k].get_or_insert(at);
                        }
                        None => {
                            runs.sparse.entry((op.stage, op.kind, op.mb)).or_insert(at);
                        }
                    }
                }
            }
        }
        runs
    }

    fn slot(&self, stage: u32, kind: Kind, mb: u32) -> Option<usize> {
        let kind = match kind {
            Kind::F => 0,
            Kind::B => 1,
            Kind::I => 2,
            Kind::W => 3,
        };
        let mb = mb as usize;
        if mb >= self.mb_bound {
            return None;
        }
        let k = ((stage as usize).checked_mul(4)? + kind)
            .checked_mul(self.mb_bound)?
            .checked_add(mb)?;
        (k < self.dense.len()).then_some(k)
    }

    fn get(&self, stage: u32, kind: Kind, mb: u32) -> Option<(u32, usize)> {
        let at = match self.slot(stage, kind, mb) {
            Some(k) => self.dense[k],
            None => self.sparse.get(&(stage, kind, mb)).copied(),
        };
        at.map(|(r, i)| (r, i as usize))
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

/// A communication slice before lanes are assigned. Small and `Copy` (40 bytes: a field more made
/// the trace 9% slower): there are two per transfer, and they are sorted; names are written from
/// these parts at the end.
#[derive(Clone, Copy)]
struct CommSlice {
    rank: u32,
    start: f64,
    end: f64,
    comm: Comm,
}

// Kept at 40 bytes: see `CommSlice`.
const _: () = assert!(std::mem::size_of::<CommSlice>() == 40);

impl CommSlice {
    fn base_tid(&self) -> u32 {
        match self.comm {
            Comm::Send { .. } => SEND_TID,
            Comm::Recv { .. } => RECV_TID,
            Comm::Reduce { .. } => REDUCE_TID,
        }
    }
}

/// A flow arrow: from (rank, time) of the producing slice to (rank, time) of the consuming one.
type Flow = (u32, f64, u32, f64);

/// Writes the Chrome trace of a plan run along `timing`.
pub fn write_chrome_trace(
    plan: &ValidPlan,
    timing: &Timing,
    us_per_unit: f64,
) -> Result<String, Diagnostic> {
    timing
        .check(plan)
        .map_err(|e| Diagnostic::error(e.to_string()))?;
    if !(us_per_unit.is_finite() && us_per_unit > 0.0) {
        return Err(Diagnostic::error(format!(
            "the time scale must be a positive number of microseconds per unit, not {us_per_unit}"
        )));
    }
    let lowered = lower(plan);
    let (mut comms, flows) = transfers(plan, &lowered, timing);
    push_reductions(plan, &lowered, timing, &mut comms);
    let order = comm_order(&comms);
    let (tids, lanes_of) = lanes(&comms, &order);

    let mut w = Trace {
        out: Vec::with_capacity(plan.num_ops() * 160 + comms.len() * 180 + flows.len() * 150),
        us_per_unit,
        empty: true,
    };
    w.raw("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    w.metadata(plan, &lanes_of);
    w.compute(plan, timing);
    for (&i, &tid) in order.iter().zip(&tids) {
        w.comm(plan, &comms[i], tid);
    }
    for (id, &(from, from_ts, to, to_ts)) in flows.iter().enumerate() {
        w.flow(id, from, from_ts, to, to_ts);
    }
    w.raw("\n]}\n");
    String::from_utf8(w.out).map_err(|e| Diagnostic::error(format!("cannot write the trace: {e}")))
}

/// Both sides of every send, from the end of the action that produced the data to the start of
/// the one that uses it on the peer, and the flow arrow between those actions.
fn transfers(plan: &Plan, lowered: &LoweredPlan, timing: &Timing) -> (Vec<CommSlice>, Vec<Flow>) {
    let runs = Runs::new(plan);
    // The action that uses what a send carries: the receiving stage's forward, or its B or I.
    let consumer = |send: &Sent| -> Option<(u32, usize)> {
        let (stage, mb) = (send.to_stage, send.mb);
        match send.dir {
            Dir::Fwd => runs.get(stage, Kind::F, mb),
            Dir::Bwd => runs
                .get(stage, Kind::B, mb)
                .or_else(|| runs.get(stage, Kind::I, mb)),
        }
    };
    let mut comms: Vec<CommSlice> = Vec::new();
    let mut flows: Vec<Flow> = Vec::new();
    for send in lowered.sends() {
        let sent = timing.intervals[send.rank as usize][send.action];
        let Some((to_rank, j)) = consumer(&send) else {
            continue;
        };
        let used = timing.intervals[to_rank as usize][j].start;
        let end = used.max(sent.end);
        let Sent { dir, stage, mb, .. } = send;
        let (from, to) = (send.rank, send.peer);
        comms.push(CommSlice {
            rank: from,
            start: sent.end,
            end,
            comm: Comm::Send {
                dir,
                stage,
                mb,
                from,
                to,
            },
        });
        comms.push(CommSlice {
            rank: to,
            start: sent.end,
            end,
            comm: Comm::Recv {
                dir,
                stage,
                mb,
                from,
                to,
            },
        });
        flows.push((from, sent.start, to_rank, used));
    }
    (comms, flows)
}

/// Appends every stage's gradient reduction on its rank, from the moment the rank starts it (the
/// end of the action before it) to the moment the last replica of the same model part starts it.
fn push_reductions(
    plan: &Plan,
    lowered: &LoweredPlan,
    timing: &Timing,
    comms: &mut Vec<CommSlice>,
) {
    let mut reduce_at: Vec<Option<f64>> = vec![None; plan.num_stages() as usize];
    for reduction in lowered.reductions() {
        if let Some(slot) = reduce_at.get_mut(reduction.stage as usize) {
            *slot = Some(timing.intervals[reduction.rank as usize][reduction.action].end);
        }
    }
    let s = plan.stages_per_pipeline();
    for stage in 0..plan.num_stages() {
        let (Some(start), Some(rank)) = (reduce_at[stage as usize], plan.stage_rank(stage)) else {
            continue;
        };
        let part = plan.part(stage);
        let end = (0..plan.model_copies())
            .filter_map(|j| reduce_at[(j * s + part) as usize])
            .fold(start, f64::max);
        comms.push(CommSlice {
            rank,
            start,
            end,
            comm: Comm::Reduce { stage, part },
        });
    }
}

/// The track of every slice, taken in `order`: slices of one rank and kind that overlap in time go
/// to separate numbered tracks. Returns the tracks in that order and, per rank and kind, how many
/// there are: `(rank, base track, lanes)`.
fn lanes(comms: &[CommSlice], order: &[usize]) -> (Vec<u32>, Vec<(u32, u32, usize)>) {
    let mut lanes_of: Vec<(u32, u32, usize)> = Vec::new();
    let mut tids: Vec<u32> = Vec::with_capacity(comms.len());
    let mut lane_end: Vec<f64> = Vec::new();
    let mut group: Option<(u32, u32)> = None;
    for c in order.iter().map(|&i| &comms[i]) {
        let base_tid = c.base_tid();
        if group != Some((c.rank, base_tid)) {
            if let Some((rank, base)) = group {
                lanes_of.push((rank, base, lane_end.len()));
            }
            group = Some((c.rank, base_tid));
            lane_end.clear();
        }
        let lane = match lane_end.iter().position(|&e| e <= c.start) {
            Some(l) => l,
            None => {
                lane_end.push(f64::NEG_INFINITY);
                lane_end.len() - 1
            }
        };
        lane_end[lane] = c.end;
        tids.push(base_tid + lane as u32);
    }
    if let Some((rank, base)) = group {
        lanes_of.push((rank, base, lane_end.len()));
    }
    (tids, lanes_of)
}

/// The order of the slices: by rank, kind (send, receive, reduce), start, end, and then the order
/// they were made in (the order lanes are given in).
///
/// Slices are bucketed by rank and kind first, then each bucket is sorted stably by time: a
/// bucket is a few already ordered runs (a rank's sends come in program order), which a stable
/// sort merges in about linear time, where one sort of everything would not.
fn comm_order(comms: &[CommSlice]) -> Vec<usize> {
    let bucket = |c: &CommSlice| {
        let kind = match c.comm {
            Comm::Send { .. } => 0,
            Comm::Recv { .. } => 1,
            Comm::Reduce { .. } => 2,
        };
        c.rank as usize * 3 + kind
    };
    let buckets = comms.iter().map(|c| bucket(c) + 1).max().unwrap_or(0);
    // A counting sort: starts[b] is where bucket b begins in the order.
    let mut starts = vec![0usize; buckets + 1];
    for c in comms {
        starts[bucket(c) + 1] += 1;
    }
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    let mut next = starts.clone();
    let mut order = vec![0usize; comms.len()];
    for (i, c) in comms.iter().enumerate() {
        let b = bucket(c);
        order[next[b]] = i;
        next[b] += 1;
    }
    for b in starts.windows(2) {
        order[b[0]..b[1]].sort_by(|&i, &j| {
            let (x, y) = (&comms[i], &comms[j]);
            x.start.total_cmp(&y.start).then(x.end.total_cmp(&y.end))
        });
    }
    order
}

/// The trace text being written, event by event.
struct Trace {
    /// UTF-8 throughout (see `json_text`); bytes so that appends need no checks.
    out: Vec<u8>,
    us_per_unit: f64,
    /// No event written yet (events are separated by `,` and a newline).
    empty: bool,
}

impl Trace {
    #[inline]
    fn raw(&mut self, text: &str) {
        self.out.extend_from_slice(text.as_bytes());
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
        push_uint(&mut self.out, pid.into());
        self.raw(",\"tid\":");
        push_uint(&mut self.out, tid.into());
    }

    /// Appends `key` (with its punctuation: `,"ts":`) and a time in microseconds.
    #[inline]
    fn time(&mut self, key: &str, t: f64) {
        self.raw(key);
        push_f64(&mut self.out, t * self.us_per_unit);
    }

    /// Appends `key` (with its punctuation: `,"mb":`) and a number.
    #[inline]
    fn uint(&mut self, key: &str, n: u32) {
        self.raw(key);
        push_uint(&mut self.out, n.into());
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
                        push_str(&mut self.out, &name);
                    }
                    None => push_str(&mut self.out, prefix),
                }
            }
            MetaArg::SortIndex(i) => {
                self.raw(",\"args\":{\"sort_index\":");
                push_uint(&mut self.out, i.into());
            }
        }
        self.raw("}}");
    }

    /// Names and orders of every process (rank) and track.
    fn metadata(&mut self, plan: &Plan, lanes_of: &[(u32, u32, usize)]) {
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
            }
        }
    }

    /// One slice per action on its rank's compute track.
    fn compute(&mut self, plan: &Plan, timing: &Timing) {
        let s = plan.stages_per_pipeline();
        for (r, (program, times)) in plan.programs().iter().zip(&timing.intervals).enumerate() {
            for (a, t) in program.iter().zip(times) {
                self.open();
                push_action(&mut self.out, a);
                self.head(PH_X, r as u32, COMPUTE_TID);
                self.time(",\"ts\":", t.start);
                self.time(",\"dur\":", t.end - t.start);
                match *a {
                    Action::One(op) => {
                        self.raw(",\"cat\":\"");
                        // The category: the kind's letter (ASCII).
                        self.out.push(op.kind.letter() as u8);
                        self.raw("\",\"args\":{\"stage\":");
                        push_uint(&mut self.out, op.stage.into());
                        self.uint(",\"mb\":", op.mb);
                        self.raw(",\"kind\":\"");
                        self.raw(kind_name(op.kind));
                        self.out.push(b'"');
                        self.uint(",\"pipeline\":", op.stage / s);
                        self.uint(",\"part\":", op.stage % s);
                    }
                    Action::Pair { f, b } => {
                        self.raw(",\"cat\":\"pair\",\"args\":{\"forward\":\"");
                        push_op(&mut self.out, f);
                        self.raw("\",\"backward\":\"");
                        push_op(&mut self.out, b);
                        self.out.push(b'"');
                    }
                }
                self.raw("}}");
            }
        }
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
                push_step_with_peer(&mut self.out, &send);
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
                push_step_with_peer(&mut self.out, &recv);
                "recv"
            }
            Comm::Reduce { stage, .. } => {
                push_step(&mut self.out, &Step::ReduceGrad { stage });
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
                push_uint(&mut self.out, stage.into());
                self.uint(",\"mb\":", mb);
                self.uint(",\"from_rank\":", from);
                self.uint(",\"to_rank\":", to);
            }
            Comm::Reduce { stage, part } => {
                push_uint(&mut self.out, stage.into());
                self.uint(",\"part\":", part);
                self.raw(",\"replicas\":[");
                let s = plan.stages_per_pipeline();
                for j in 0..plan.model_copies() {
                    if j > 0 {
                        self.out.push(b',');
                    }
                    push_uint(&mut self.out, (j * s + part).into());
                }
                self.out.push(b']');
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
            push_uint(&mut self.out, id as u64);
            self.raw(bp);
            self.out.push(b'}');
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
