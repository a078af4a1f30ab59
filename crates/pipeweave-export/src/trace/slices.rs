//! The communication slices of a trace, made before anything is written: every transfer of the
//! plan's lowering (found from the plan: `pipeweave_plan::sends`) with the times of the actions at
//! its ends, every stage's gradient reduction, the order the slices are written in, and how many
//! tracks each rank and kind needs.
//!
//! Kept small, since a big plan has millions of transfers: 28 bytes a transfer (its times, its
//! stage, micro-batch and direction, and the producing action; the ranks are its stage's host and
//! its neighbour's), 8 for the order of its two slices; the slices themselves are made again as they are
//! written, and their tracks assigned again in the same order ([`Lanes`]).

use super::{Comm, CommSlice, RECV_TID, REDUCE_TID, SEND_TID};
use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::memory::{self, OutOfMemory};
use pipeweave_plan::{Dir, Kind, Plan, Timing};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// A transfer's ids: the sending stage, the micro-batch with the direction in its top bit
/// (micro-batch ids are below 2²⁴), and the index of the producing action in the sender's program.
#[derive(Clone, Copy)]
pub(super) struct Ids {
    stage: u32,
    mb_dir: u32,
    pub action: u32,
}

/// The top bit of [`Ids::mb_dir`]: gradients (backward).
const BWD: u32 = 1 << 31;

impl Ids {
    fn dir(self) -> Dir {
        if self.mb_dir & BWD == 0 {
            Dir::Fwd
        } else {
            Dir::Bwd
        }
    }

    fn mb(self) -> u32 {
        self.mb_dir & !BWD
    }
}

/// A gradient reduction's slice.
#[derive(Clone, Copy)]
pub(super) struct Reduce {
    rank: u32,
    start: f64,
    end: f64,
    stage: u32,
    part: u32,
}

/// Every communication slice of a plan run along a timing, and their order.
pub(super) struct Slices {
    /// Per transfer: when the producing action ends (the send is posted) and when the consuming
    /// one starts on the peer (the data is used).
    pub times: Vec<[f64; 2]>,
    pub ids: Vec<Ids>,
    reduces: Vec<Reduce>,
    /// The rank hosting each stage: a transfer goes from its stage's host to its neighbour's
    /// (a valid plan runs work on its stage's host only).
    hosts: Vec<u32>,
    /// The slices in the order they are written, by id: `2·i` the sending side of transfer i,
    /// `2·i + 1` its receiving side, `2·transfers + k` reduction k.
    pub order: Vec<u32>,
    /// Per rank and kind, in the order: `(rank, base track, tracks)`.
    pub lanes_of: Vec<(u32, u32, usize)>,
}

impl Slices {
    /// The slices of a valid plan: its transfers with their consuming actions (each exists, and
    /// runs on the peer), its reductions, their order and tracks.
    pub(super) fn new(plan: &Plan, timing: &Timing) -> Result<Slices, Diagnostic> {
        let too_large = || Diagnostic::error("the plan has too many transfers for a trace");
        let count = pipeweave_plan::sends(plan).count();
        // Slice ids are u32: two per transfer, and the reductions.
        if count >= (u32::MAX / 2 - plan.num_stages()) as usize {
            return Err(too_large());
        }
        let no_memory = |e: OutOfMemory| Diagnostic::error(e.to_string());
        let starts = ConsumerStarts::new(plan, timing).map_err(no_memory)?;
        let mut times = memory::with_capacity(count, "the trace's transfers").map_err(no_memory)?;
        let mut ids = memory::with_capacity(count, "the trace's transfers").map_err(no_memory)?;
        for send in pipeweave_plan::sends(plan) {
            let consumer = match send.dir {
                Dir::Fwd => 0,
                Dir::Bwd => 1,
            };
            let Some(used) = starts.get(send.to_stage, send.mb, consumer) else {
                continue;
            };
            let action = u32::try_from(send.action).map_err(|_| too_large())?;
            times.push([timing.intervals[send.rank as usize][send.action].end, used]);
            debug_assert!(send.mb < BWD && plan.stage_rank(send.stage) == Some(send.rank));
            let dir = match send.dir {
                Dir::Fwd => 0,
                Dir::Bwd => BWD,
            };
            ids.push(Ids {
                stage: send.stage,
                mb_dir: send.mb | dir,
                action,
            });
        }
        drop(starts);
        let reduces = reductions(plan, timing);
        let mut slices = Slices {
            times,
            ids,
            reduces,
            hosts: plan.hosts().to_vec(),
            order: Vec::new(),
            lanes_of: Vec::new(),
        };
        slices.order = slices.ordered().map_err(no_memory)?;
        let mut lanes = Lanes::default();
        for &id in &slices.order {
            let c = slices.slice(id);
            lanes.assign(&c, &mut slices.lanes_of);
        }
        lanes.finish(&mut slices.lanes_of);
        Ok(slices)
    }

    /// Slice `id` (see [`Slices::order`]).
    #[inline]
    pub(super) fn slice(&self, id: u32) -> CommSlice {
        let i = id as usize / 2;
        let Some(t) = self.ids.get(i) else {
            let r = self.reduces[id as usize - 2 * self.ids.len()];
            return CommSlice {
                rank: r.rank,
                start: r.start,
                end: r.end,
                comm: Comm::Reduce {
                    stage: r.stage,
                    part: r.part,
                },
            };
        };
        let [start, used] = self.times[i];
        let (from, to) = self.ranks(*t);
        let (dir, stage, mb) = (t.dir(), t.stage, t.mb());
        let (rank, comm) = if id.is_multiple_of(2) {
            let send = Comm::Send {
                dir,
                stage,
                mb,
                from,
                to,
            };
            (from, send)
        } else {
            let recv = Comm::Recv {
                dir,
                stage,
                mb,
                from,
                to,
            };
            (to, recv)
        };
        CommSlice {
            rank,
            start,
            end: used.max(start),
            comm,
        }
    }

    /// The sending and the receiving rank of a transfer: its stage's host and its neighbour's.
    #[inline]
    pub(super) fn ranks(&self, t: Ids) -> (u32, u32) {
        let s = t.stage as usize;
        let neighbour = match t.dir() {
            Dir::Fwd => s + 1,
            Dir::Bwd => s.wrapping_sub(1),
        };
        (self.hosts[s], self.hosts[neighbour])
    }

    /// The order of the slices: by rank, kind (send, receive, reduce), start, end, and then the
    /// order they were made in (the order tracks are given in).
    ///
    /// Slices are bucketed by rank and kind first, then each bucket is sorted stably by time: a
    /// bucket is a few already ordered runs (a rank's sends come in program order), which a stable
    /// sort merges in about linear time, where one sort of everything would not.
    fn ordered(&self) -> Result<Vec<u32>, OutOfMemory> {
        let total = 2 * self.ids.len() + self.reduces.len();
        let bucket = |id: u32| {
            let c = self.slice(id);
            let kind = match c.comm {
                Comm::Send { .. } => 0,
                Comm::Recv { .. } => 1,
                Comm::Reduce { .. } => 2,
            };
            c.rank as usize * 3 + kind
        };
        let ids = || 0..total as u32;
        let buckets = ids().map(|id| bucket(id) + 1).max().unwrap_or(0);
        // A counting sort: starts[b] is where bucket b begins in the order.
        let mut starts = vec![0usize; buckets + 1];
        for id in ids() {
            starts[bucket(id) + 1] += 1;
        }
        for b in 1..starts.len() {
            starts[b] += starts[b - 1];
        }
        let mut next = starts.clone();
        let mut order: Vec<u32> = memory::zeroed(total, "the order of the trace's slices")?;
        for id in ids() {
            let b = bucket(id);
            order[next[b]] = id;
            next[b] += 1;
        }
        drop(next);
        for b in starts.windows(2) {
            order[b[0]..b[1]].sort_by(|&i, &j| {
                let (x, y) = (self.slice(i), self.slice(j));
                x.start.total_cmp(&y.start).then(x.end.total_cmp(&y.end))
            });
        }
        Ok(order)
    }
}

/// Every stage's gradient reduction on its rank, from the moment the rank starts it (the end of
/// the action before it) to the moment the last replica of the same model part starts it.
fn reductions(plan: &Plan, timing: &Timing) -> Vec<Reduce> {
    let mut reduce_at: Vec<Option<f64>> = vec![None; plan.num_stages() as usize];
    for reduction in pipeweave_plan::reductions(plan) {
        if let Some(slot) = reduce_at.get_mut(reduction.stage as usize) {
            *slot = Some(timing.intervals[reduction.rank as usize][reduction.action].end);
        }
    }
    // When the last replica of each part starts its reduction: one pass over the stages (a pass
    // over the replicas for each stage was quadratic in the pipelines).
    let mut last = vec![f64::NEG_INFINITY; plan.stages_per_pipeline() as usize];
    for (stage, at) in (0u32..).zip(&reduce_at) {
        if let Some(at) = *at {
            let part = &mut last[plan.part(stage) as usize];
            *part = part.max(at);
        }
    }
    let mut reduces = Vec::new();
    for stage in 0..plan.num_stages() {
        let (Some(start), Some(rank)) = (reduce_at[stage as usize], plan.stage_rank(stage)) else {
            continue;
        };
        let part = plan.part(stage);
        let end = last[part as usize].max(start);
        reduces.push(Reduce {
            rank,
            start,
            end,
            stage,
            part,
        });
    }
    reduces
}

/// When the actions that consume a transfer start: per stage and micro-batch, its forward's start
/// and its input-gradient backward's (B, or else I), the first action holding each.
///
/// A dense table by stage and the micro-batch's place in its pipeline (every stage of a valid
/// plan runs every micro-batch of its pipeline), or a map when that table would be much larger
/// than the plan.
struct ConsumerStarts {
    /// Per micro-batch id, its place in its pipeline.
    place: Vec<u32>,
    per_stage: usize,
    dense: Vec<[f64; 2]>,
    sparse: HashMap<(u32, u32), [f64; 2]>,
}

impl ConsumerStarts {
    fn new(plan: &Plan, timing: &Timing) -> Result<ConsumerStarts, OutOfMemory> {
        let mut place = vec![u32::MAX; plan.mb_bound() as usize];
        let mut per_stage = 0;
        for p in plan.pipelines() {
            for (i, &mb) in p.microbatches.iter().enumerate() {
                place[mb as usize] = i as u32;
            }
            per_stage = per_stage.max(p.microbatches.len());
        }
        let cells = (plan.num_stages() as usize).saturating_mul(per_stage);
        let cells = if cells <= 2 * plan.num_ops() + 1024 {
            cells
        } else {
            0
        };
        let mut starts = ConsumerStarts {
            place,
            per_stage,
            dense: memory::filled(cells, [f64::NAN; 2], "the trace's table of consumers")?,
            sparse: HashMap::new(),
        };
        for (program, times) in plan.programs().iter().zip(&timing.intervals) {
            for (a, t) in program.iter().zip(times) {
                for op in a.ops() {
                    let side = match op.kind {
                        Kind::F => 0,
                        Kind::B | Kind::I => 1,
                        Kind::W => continue,
                    };
                    let cell = match starts.cell(op.stage, op.mb) {
                        Some(k) => &mut starts.dense[k],
                        None => starts
                            .sparse
                            .entry((op.stage, op.mb))
                            .or_insert([f64::NAN; 2]),
                    };
                    if cell[side].is_nan() {
                        cell[side] = t.start;
                    }
                }
            }
        }
        Ok(starts)
    }

    #[inline]
    fn cell(&self, stage: u32, mb: u32) -> Option<usize> {
        let place = *self.place.get(mb as usize)?;
        let k = (stage as usize)
            .checked_mul(self.per_stage)?
            .checked_add(place as usize)?;
        (place != u32::MAX && k < self.dense.len()).then_some(k)
    }

    /// The start of the forward (`side` 0) or input-gradient backward (1) of `stage` for `mb`.
    #[inline]
    fn get(&self, stage: u32, mb: u32, side: usize) -> Option<f64> {
        let cell = match self.cell(stage, mb) {
            Some(k) => self.dense[k],
            None => *self.sparse.get(&(stage, mb))?,
        };
        Some(cell[side]).filter(|t| !t.is_nan())
    }
}

/// Assigns tracks to the slices taken in order: slices of one rank and kind that overlap in time
/// go to separate numbered tracks, each to the lowest-numbered track free at its start.
///
/// A group's slices come by start time, so a track once free stays free until taken: the busy
/// tracks wait in a heap by end time and move to a heap of free ones as the starts pass their
/// ends (a scan of every track per slice was quadratic when thousands of transfers are in flight
/// at once).
#[derive(Default)]
pub(super) struct Lanes {
    busy: BinaryHeap<Reverse<(TotalF64, u32)>>,
    free: BinaryHeap<Reverse<u32>>,
    count: u32,
    group: Option<(u32, u32)>,
}

impl Lanes {
    /// The track of slice `c`, the next in order; a group that ends is added to `lanes_of`.
    pub(super) fn assign(&mut self, c: &CommSlice, lanes_of: &mut Vec<(u32, u32, usize)>) -> u32 {
        let base = c.base_tid();
        if self.group != Some((c.rank, base)) {
            self.finish(lanes_of);
            self.group = Some((c.rank, base));
        }
        while let Some(&Reverse((TotalF64(end), lane))) = self.busy.peek()
            && end <= c.start
        {
            self.busy.pop();
            self.free.push(Reverse(lane));
        }
        let lane = match self.free.pop() {
            Some(Reverse(lane)) => lane,
            None => {
                self.count += 1;
                self.count - 1
            }
        };
        self.busy.push(Reverse((TotalF64(c.end), lane)));
        base + lane
    }

    /// Ends the current group, adding it to `lanes_of`.
    pub(super) fn finish(&mut self, lanes_of: &mut Vec<(u32, u32, usize)>) {
        if let Some((rank, base)) = self.group.take() {
            lanes_of.push((rank, base, self.count as usize));
        }
        self.busy.clear();
        self.free.clear();
        self.count = 0;
    }
}

impl CommSlice {
    fn base_tid(&self) -> u32 {
        match self.comm {
            Comm::Send { .. } => SEND_TID,
            Comm::Recv { .. } => RECV_TID,
            Comm::Reduce { .. } => REDUCE_TID,
        }
    }
}

/// A time ordered by [`f64::total_cmp`], for the heaps of [`Lanes`] (times are finite: the
/// timing was checked).
#[derive(Clone, Copy, PartialEq)]
struct TotalF64(f64);

impl Eq for TotalF64 {}

impl PartialOrd for TotalF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TotalF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}
