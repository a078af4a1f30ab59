//! The constructive heuristic, in the spirit of the Zero Bubble paper's: a list scheduler that
//! runs the ranks forward in time and gives each, whenever it is free, the next action by a
//! policy: backwards as soon as their gradient arrives (they free memory and lie on the critical
//! path), forwards while the memory limit allows (the warm-up depth follows from the limit), and
//! deferred weight backwards (W) where the rank would otherwise wait. A handful of policies are
//! run and the best plan by the simulator is kept.
//!
//! Every stage runs its forwards, and its backwards, in micro-batch order. The scheduler's own
//! clock uses the same costs and transfer times as the simulator, so its plan's simulated
//! makespan is the time it planned for.

use crate::problem::{F, Graph, I};
use pipeweave_plan::memory::{self, OutOfMemory};
use pipeweave_sim::CostModel;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

/// A decision's start, ordered (starts are finite).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Start(f64);

impl Eq for Start {}

impl PartialOrd for Start {
    fn partial_cmp(&self, other: &Start) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Start {
    fn cmp(&self, other: &Start) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// One entry of a synthesized program, in graph nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Act {
    /// A forward (node F), an input backward (node I), a weight backward (node W), or a whole
    /// backward (node I run as B, its W with it).
    One { node: usize, whole: bool },
    /// An overlapped pair of a forward and a backward (whole or input only).
    Pair { f: usize, b: usize, whole: bool },
}

/// When a rank leaves a deferred W.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WFill {
    /// Whenever the rank would otherwise wait, however short the wait.
    Eager,
    /// Only where the wait is at least as long as the W.
    Gap,
    /// Only when nothing else is known to come (at the end).
    Last,
}

/// A policy of the list scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Policy {
    /// Between a forward and a backward that can start at the same time, the backward.
    pub backward_first: bool,
    /// Between two stages of one rank, the later one (nearer the loss).
    pub later_stage_first: bool,
    /// Split backwards into I and W (when the problem allows); else run them whole.
    pub split: bool,
    pub w: WFill,
    /// Overlap a ready forward and backward as one pair (when the problem allows), with the
    /// backward whole (DualPipe's pairs) or as I.
    pub pair: bool,
    pub pair_whole: bool,
    /// Keep room for every micro-batch a rank owes a later stage (else only for the neediest one,
    /// which is enough to move the oldest micro-batch on, since each stage runs in micro-batch
    /// order: more in flight, at the risk of waiting where the limit is tight).
    pub reserve_all: bool,
}

/// The policies tried, in order (the first best one wins ties).
pub(crate) fn policies(graph: &Graph) -> Vec<Policy> {
    let mut out = Vec::new();
    let splits: &[bool] = if graph.weight_split {
        &[true, false]
    } else {
        &[false]
    };
    let pairs: &[(bool, bool)] = if graph.pairs {
        &[(false, false), (true, true), (true, false)]
    } else {
        &[(false, false)]
    };
    // Reserving for one micro-batch differs from reserving for all only where a rank hosts
    // several stages of a pipeline.
    let reserves: &[bool] = if graph.prev_here.iter().any(Option::is_some) {
        &[true, false]
    } else {
        &[true]
    };
    for &split in splits {
        let fills: &[WFill] = if split {
            &[WFill::Eager, WFill::Gap, WFill::Last]
        } else {
            &[WFill::Eager]
        };
        for &w in fills {
            for &backward_first in &[true, false] {
                for &later_stage_first in &[true, false] {
                    for &(pair, pair_whole) in pairs {
                        for &reserve_all in reserves {
                            out.push(Policy {
                                backward_first,
                                later_stage_first,
                                split,
                                w,
                                pair,
                                pair_whole,
                                reserve_all,
                            });
                        }
                    }
                }
            }
        }
    }
    out
}

/// What a rank must keep free for work to come (see `State::room`).
struct Room {
    /// The units its later stages will take for micro-batches that passed an earlier stage of
    /// their pipeline here.
    owed: u32,
    /// The most one such micro-batch will take here (its next stage's unit and the later ones).
    neediest: u32,
    /// Per pipeline (up to two), the largest unit of a stage of it this rank hosts while the
    /// pipeline holds nothing here and still has forwards to run here.
    waiting: [u32; 2],
}

/// What a rank does next and when it starts.
#[derive(Debug, Clone, Copy)]
struct Decision {
    start: f64,
    act: Act,
}

struct State<'g> {
    g: &'g Graph,
    end: Vec<f64>,
    next_f: Vec<u32>,
    next_b: Vec<u32>,
    pending_w: Vec<VecDeque<usize>>,
    free: Vec<f64>,
    live: Vec<u32>,
    /// Live units per rank and pipeline.
    live_by: Vec<Vec<u32>>,
}

impl State<'_> {
    fn pipeline(&self, s: u32) -> usize {
        (s / self.g.pipelines[0].placement.len() as u32) as usize
    }

    /// When node `x`'s inputs are all there, if they are known yet.
    fn ready(&self, x: usize) -> Option<f64> {
        self.g.ready(&self.end, x)
    }

    /// The earliest (start, stage) of the next node of `slot` on rank r's stages, by the policy's
    /// order between stages.
    fn best(&self, r: usize, slot: usize, later_first: bool) -> Option<(f64, usize)> {
        let t = self.free[r];
        let mut best: Option<(f64, usize)> = None;
        for &s in &self.g.on_rank[r] {
            let k = if slot == F {
                self.next_f[s as usize]
            } else {
                self.next_b[s as usize]
            };
            if k >= self.g.per_pipeline {
                continue;
            }
            let x = self.g.node(s, k, slot);
            let Some(ready) = self.ready(x) else {
                continue;
            };
            let start = t.max(ready);
            let better = match best {
                None => true,
                Some((bs, bx)) => start < bs || (start == bs && (later_first == (x > bx))),
            };
            if better {
                best = Some((start, x));
            }
        }
        best
    }

    /// What rank r must keep free for work to come, read once per decision (each part is a pass
    /// over the rank's stages, so a decision costs the stages once, not once per stage).
    fn room(&self, r: usize) -> Room {
        let g = self.g;
        let s_per = g.pipelines[0].placement.len() as u32;
        let mut room = Room {
            owed: 0,
            neediest: 0,
            waiting: [0; 2],
        };
        for &o in &g.on_rank[r] {
            let w = g.weight[o as usize];
            if let Some(prev) = g.prev_here[o as usize] {
                let count = self.next_f[prev as usize] - self.next_f[o as usize];
                room.owed += count * w;
                if count > 0 {
                    room.neediest = room.neediest.max(w + g.later_here[o as usize]);
                }
            }
            // A pipeline that holds nothing here and still has forwards to run here.
            let j = (o / s_per) as usize;
            if self.live_by[r][j] == 0 && self.next_f[o as usize] < g.per_pipeline {
                room.waiting[j.min(1)] = room.waiting[j.min(1)].max(w);
            }
        }
        room
    }

    /// Whether rank r (whose `room` this is) may start a forward of stage s, with `freed` units
    /// freed by the same action: the memory it takes, with what the rank will owe its later
    /// stages and keeps for the other pipeline, stays within the limit (else a V or a loop could
    /// fill the rank with first chunks and wait for good).
    fn fits_forward(&self, r: usize, s: u32, all: bool, room: &Room, freed: u32) -> bool {
        let g = self.g;
        let w = g.weight[s as usize];
        let later = g.later_here[s as usize];
        let owes_here = g.prev_here[s as usize].is_some();
        // What the rank keeps for forwards it will owe on its later stages: for every micro-batch
        // in flight (`all`, besides this forward if it is one it owes), or for the neediest one
        // (a forward it owes moves the oldest micro-batch on; the others wait for room).
        let future = if all {
            let owed = if owes_here {
                room.owed.saturating_sub(w)
            } else {
                room.owed
            };
            owed + later
        } else if owes_here {
            later
        } else {
            later.max(room.neediest)
        };
        // Units for the other pipelines this rank hosts that hold none here: each pipeline can
        // always move one micro-batch through every rank, so two pipelines never fill each
        // other's ranks and wait for good.
        let s_per = g.pipelines[0].placement.len() as u32;
        let own = (s / s_per) as usize;
        let reserved = if g.pipelines.len() > 1 {
            room.waiting[1 - own.min(1)]
        } else {
            0
        };
        (self.live[r] + w + future + reserved).saturating_sub(freed) <= g.limits[r]
    }

    /// The best forward rank r has room for.
    fn best_forward(&self, r: usize, later_first: bool, all: bool) -> Option<(f64, usize)> {
        let t = self.free[r];
        let room = self.room(r);
        let mut best: Option<(f64, usize)> = None;
        for &s in &self.g.on_rank[r] {
            let k = self.next_f[s as usize];
            if k >= self.g.per_pipeline || !self.fits_forward(r, s, all, &room, 0) {
                continue;
            }
            let x = self.g.node(s, k, F);
            let Some(ready) = self.ready(x) else {
                continue;
            };
            let start = t.max(ready);
            if best.is_none_or(|(bs, bx)| start < bs || (start == bs && (later_first == (x > bx))))
            {
                best = Some((start, x));
            }
        }
        best
    }

    fn decide<C: CostModel + ?Sized>(&self, r: usize, p: &Policy, costs: &C) -> Option<Decision> {
        let g = self.g;
        let t = self.free[r];
        let b = self.best(r, I, p.later_stage_first);
        let f = self.best_forward(r, p.later_stage_first, p.reserve_all);
        let whole = !(p.split && g.weight_split);
        let primary = match (b, f) {
            (None, None) => None,
            (Some(b), None) => Some((b, false)),
            (None, Some(f)) => Some((f, true)),
            (Some(b), Some(f)) => {
                if b.0 < f.0 || (b.0 == f.0 && p.backward_first) {
                    Some((b, false))
                } else {
                    Some((f, true))
                }
            }
        };
        if let Some(&w) = self.pending_w[r].front() {
            let take = match (p.w, primary) {
                (_, None) => true,
                (WFill::Eager, Some(((start, _), _))) => start > t,
                (WFill::Gap, Some(((start, _), _))) => start - t >= g.cost[w],
                (WFill::Last, Some(_)) => false,
            };
            if take {
                return Some(Decision {
                    start: t,
                    act: Act::One {
                        node: w,
                        whole: false,
                    },
                });
            }
        }
        let ((start, x), is_f) = primary?;
        // An overlapped pair: the other kind ready by the same time on this rank.
        if p.pair && g.pairs {
            let other = if is_f {
                self.best(r, I, p.later_stage_first)
            } else {
                // A pair adds no transient unit (its forward's activation grows as its backward's
                // shrinks), so it may run where a lone forward would pass the limit by one.
                self.best(r, F, p.later_stage_first).filter(|&(_, fx)| {
                    // The pair's backward frees its own weight as the forward takes its.
                    let freed = g.weight[g.parts(x).0 as usize];
                    let room = self.room(r);
                    self.fits_forward(r, g.parts(fx).0, p.reserve_all, &room, freed)
                })
            };
            if let Some((ostart, o)) = other
                && ostart <= start
            {
                let (fx, bx) = if is_f { (x, o) } else { (o, x) };
                let pw = p.pair_whole || !g.weight_split;
                let pc = g.pair_cost(costs, fx, bx, pw);
                let apart = g.cost[fx] + if pw { g.whole[bx] } else { g.cost[bx] };
                if pc <= apart {
                    return Some(Decision {
                        start,
                        act: Act::Pair {
                            f: fx,
                            b: bx,
                            whole: pw,
                        },
                    });
                }
            }
        }
        Some(Decision {
            start,
            act: Act::One {
                node: x,
                whole: !is_f && whole,
            },
        })
    }

    fn commit<C: CostModel + ?Sized>(&mut self, r: usize, d: Decision, costs: &C) -> f64 {
        let g = self.g;
        let end = match d.act {
            Act::One { node, whole } => {
                let (s, _, slot) = g.parts(node);
                let c = if whole { g.whole[node] } else { g.cost[node] };
                let end = d.start + c;
                self.end[node] = end;
                match slot {
                    F => {
                        self.next_f[s as usize] += 1;
                        self.live[r] += g.weight[s as usize];
                        let j = self.pipeline(s);
                        self.live_by[r][j] += 1;
                    }
                    I => {
                        self.next_b[s as usize] += 1;
                        self.live[r] -= g.weight[s as usize];
                        let j = self.pipeline(s);
                        self.live_by[r][j] -= 1;
                        if whole {
                            self.end[node + 1] = end;
                        } else {
                            self.pending_w[r].push_back(node + 1);
                        }
                    }
                    _ => {
                        let front = self.pending_w[r].pop_front();
                        debug_assert_eq!(front, Some(node));
                    }
                }
                end
            }
            Act::Pair { f, b, whole } => {
                let end = d.start + g.pair_cost(costs, f, b, whole);
                self.end[f] = end;
                self.end[b] = end;
                let (sf, sb) = (g.parts(f).0, g.parts(b).0);
                self.next_f[sf as usize] += 1;
                self.next_b[sb as usize] += 1;
                self.live[r] += g.weight[sf as usize];
                self.live[r] -= g.weight[sb as usize];
                let (jf, jb) = (self.pipeline(sf), self.pipeline(sb));
                self.live_by[r][jf] += 1;
                self.live_by[r][jb] -= 1;
                if whole {
                    self.end[b + 1] = end;
                } else {
                    self.pending_w[r].push_back(b + 1);
                }
                end
            }
        };
        self.free[r] = end;
        end
    }
}

/// The ranks whose next decision may change when `act` is done.
fn touched(g: &Graph, act: Act, out: &mut Vec<usize>) {
    let mut add = |x: usize| {
        if let Some(y) = g.remote_succ[x] {
            out.push(g.nodes[y].rank as usize);
        }
    };
    match act {
        Act::One { node, .. } => add(node),
        Act::Pair { f, b, .. } => {
            add(f);
            add(b);
        }
    }
}

/// Runs the list scheduler with `policy`: every rank's program, or `None` when the ranks wait on
/// each other for good (a memory limit no order of this policy meets); an error where its tables
/// do not fit in memory.
pub(crate) fn schedule<C: CostModel + ?Sized>(
    g: &Graph,
    policy: &Policy,
    costs: &C,
) -> Result<Option<Vec<Vec<Act>>>, OutOfMemory> {
    let what = "the list scheduler's tables";
    let p = g.ranks as usize;
    let mut pending_w = memory::with_capacity(p, what)?;
    for stages in &g.on_rank {
        let mut w = VecDeque::new();
        w.try_reserve_exact(stages.len() * g.per_pipeline as usize)
            .map_err(|_| OutOfMemory {
                bytes: stages.len() * g.per_pipeline as usize * std::mem::size_of::<usize>(),
                what,
            })?;
        pending_w.push(w);
    }
    let mut st = State {
        g,
        end: memory::filled(g.nodes.len(), f64::NAN, what)?,
        next_f: vec![0; g.stages as usize],
        next_b: vec![0; g.stages as usize],
        pending_w,
        free: vec![0.0; p],
        live: vec![0; p],
        live_by: vec![vec![0; g.pipelines.len()]; p],
    };
    let mut programs = crate::footprint::programs(g, what)?;
    let mut decisions: Vec<Option<Decision>> =
        (0..p).map(|r| st.decide(r, policy, costs)).collect();
    // The ranks' decisions by start, the lowest rank first among equal starts; an entry whose
    // decision changed since it was pushed is passed over.
    let mut version = vec![0u32; p];
    let mut queue: BinaryHeap<Reverse<(Start, usize, u32)>> = decisions
        .iter()
        .enumerate()
        .filter_map(|(r, d)| d.map(|d| Reverse((Start(d.start), r, 0))))
        .collect();
    let total_work = g.nodes.len();
    let mut done = 0usize;
    let mut dirty = Vec::new();
    while done < total_work {
        let Some(Reverse((_, r, v))) = queue.pop() else {
            return Ok(None);
        };
        if v != version[r] {
            continue;
        }
        let Some(d) = decisions[r].take() else {
            return Ok(None);
        };
        st.commit(r, d, costs);
        programs[r].push(d.act);
        done += match d.act {
            Act::One { whole: true, .. } => 2,
            Act::One { .. } => 1,
            Act::Pair { whole, .. } => 2 + usize::from(whole),
        };
        dirty.clear();
        dirty.push(r);
        touched(g, d.act, &mut dirty);
        dirty.sort_unstable();
        dirty.dedup();
        for &x in &dirty {
            decisions[x] = st.decide(x, policy, costs);
            version[x] += 1;
            if let Some(d) = decisions[x] {
                queue.try_reserve(1).map_err(|_| OutOfMemory {
                    bytes: (queue.len() + 1) * std::mem::size_of::<Reverse<(Start, usize, u32)>>(),
                    what,
                })?;
                queue.push(Reverse((Start(d.start), x, version[x])));
            }
        }
    }
    Ok(Some(programs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::fixtures::{PLACEMENTS, small};
    use pipeweave_sim::UnitCosts;

    #[test]
    fn every_policy_schedules_every_node_once() {
        for placement in PLACEMENTS {
            let g = Graph::new(&small(placement, 8), &UnitCosts).unwrap();
            for policy in policies(&g) {
                let programs = schedule(&g, &policy, &UnitCosts).unwrap().unwrap();
                let mut seen = vec![0u32; g.nodes.len()];
                for act in programs.iter().flatten() {
                    match *act {
                        Act::One { node, whole } => {
                            seen[node] += 1;
                            if whole {
                                seen[node + 1] += 1;
                            }
                        }
                        Act::Pair { f, b, whole } => {
                            seen[f] += 1;
                            seen[b] += 1;
                            if whole {
                                seen[b + 1] += 1;
                            }
                        }
                    }
                }
                assert!(seen.iter().all(|&n| n == 1), "{placement:?} {policy:?}");
            }
        }
    }
}
