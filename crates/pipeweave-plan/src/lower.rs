//! The lowering pass: adds to every rank's compute program what a launcher executes around it.
//!
//! The placement is PyTorch 2.15's (`_add_reduce_grad`, `_add_send_recv`, `_add_wait_send`),
//! generalised to several pipelines, so a single-pipeline plan lowers to exactly the
//! `compute_comms` schedule PyTorch would build from its compute-only CSV:
//! - the gradient reduction of a stage is launched right after the stage's last weight-gradient
//!   action on the rank (its last B or W) and waited for right after; with several pipelines it
//!   reduces across the replicas of the stage's model part (each part in its own group of ranks),
//!   and all the waits stand at the end of the program, in launch order, since the replicas of a
//!   part finish their backwards at different times;
//! - the ranks are scheduled round-robin, one entry per rank per round, in rank order; a compute
//!   action is scheduled once the actions it depends on have been scheduled (anywhere); its sends
//!   follow it (forward output first for a pair) and, at that same moment, the matching receive is
//!   appended to the peer's program. So on every pair of ranks the receives are posted in the
//!   order the sends are, which launchers whose point-to-point channels are matched in posting
//!   order (NCCL, PyTorch's untagged `P2POp`s) need;
//! - the wait for a forward send stands right after the action holding the backward (B or I) of
//!   the same stage and micro-batch, before that action's own sends (the local backward proves the
//!   peer consumed the activation); every other send is waited for at the end, in posting order.
//!
//! Nothing is sent where consecutive stages share a rank (the turn of a V).
//! A plan whose compute order cannot progress (the validator reports it) still lowers: when no
//! rank can move, the lowest unfinished rank's next entry is taken anyway.
//!
//! Semantics the validator assumes (blocking point-to-point, as with NCCL): a receive is posted
//! where it stands and the consuming action waits for its data; a send is posted and the rank moves
//! on; the wait for a send blocks until the peer has posted the matching receive.

use crate::action::{Action, Kind, Op};
use crate::plan::Plan;
use std::fmt;

/// The direction of a transfer: activations flow forward, gradients backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dir {
    Fwd,
    Bwd,
}

/// One entry of a lowered program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    Compute(Action),
    /// Receive the input of `stage` for `mb` from `peer` (PyTorch `RECV_F` / `RECV_B`: the stage is
    /// the receiving one).
    Recv {
        dir: Dir,
        stage: u32,
        mb: u32,
        peer: u32,
    },
    /// Send the output of `stage` for `mb` to `peer` (PyTorch `SEND_F` / `SEND_B`: the stage is the
    /// sending one).
    Send {
        dir: Dir,
        stage: u32,
        mb: u32,
        peer: u32,
    },
    /// Wait until the send with the same fields has been matched by the peer.
    WaitSend {
        dir: Dir,
        stage: u32,
        mb: u32,
        peer: u32,
    },
    /// Launch the reduction of the gradients of `stage` (across the replicas of its part, and
    /// data-parallel ranks).
    ReduceGrad {
        stage: u32,
    },
    /// Wait for that reduction (PyTorch `WAIT_REDUCE_GRAD`, right after the launch by default).
    WaitReduceGrad {
        stage: u32,
    },
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = |dir: &Dir| match dir {
            Dir::Fwd => 'F',
            Dir::Bwd => 'B',
        };
        match self {
            Step::Compute(a) => a.fmt(f),
            Step::Recv { dir, stage, mb, .. } => write!(f, "{stage}RECV_{}{mb}", d(dir)),
            Step::Send { dir, stage, mb, .. } => write!(f, "{stage}SEND_{}{mb}", d(dir)),
            Step::WaitSend { dir, stage, mb, .. } => write!(f, "{stage}WAIT_SEND_{}{mb}", d(dir)),
            Step::ReduceGrad { stage } => write!(f, "{stage}REDUCE_GRAD"),
            Step::WaitReduceGrad { stage } => write!(f, "{stage}WAIT_REDUCE_GRAD"),
        }
    }
}

/// A plan's programs with communication added; `steps[r]` is rank r's lowered program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoweredPlan {
    pub steps: Vec<Vec<Step>>,
    /// `compute_index[r][i]` is the position in `steps[r]` of rank r's i-th compute action.
    pub compute_index: Vec<Vec<usize>>,
}

impl LoweredPlan {
    pub fn num_steps(&self) -> usize {
        self.steps.iter().map(Vec::len).sum()
    }
}

const NONE: u32 = u32::MAX;
/// No such row in a per-stage table (the first or last stage of a pipeline).
const NO_ROW: usize = usize::MAX;

/// Per-stage tables, so the hot loop does no modulo and no `Option` chain per op.
struct Tables {
    mb_bound: usize,
    /// `(stage, mb)` slots in the `done` and `pending_fwd` tables: `stage · mb_bound + mb`.
    slots: usize,
    /// Row of the stage whose forward feeds this stage's forward (`NO_ROW` at a pipeline's head).
    fwd_from: Vec<usize>,
    /// Row of the stage whose input-gradient backward feeds this stage's (`NO_ROW` at its tail).
    bwd_from: Vec<usize>,
    /// The rank hosting stage s+1 when it is another rank (where a forward's output goes), or
    /// `NONE`.
    after: Vec<u32>,
    /// The rank hosting stage s−1 when it is another rank (where a backward's output goes), or
    /// `NONE`.
    before: Vec<u32>,
}

impl Tables {
    fn new(plan: &Plan) -> Tables {
        let hosts = plan.hosts();
        let mb_bound = plan.mb_bound() as usize;
        let n = plan.num_stages();
        let other = |s: u32, t: Option<u32>| match t {
            Some(t) if hosts[t as usize] != hosts[s as usize] => hosts[t as usize],
            _ => NONE,
        };
        let row = |t: Option<u32>| t.map_or(NO_ROW, |t| t as usize * mb_bound);
        Tables {
            mb_bound,
            slots: n as usize * mb_bound,
            fwd_from: (0..n).map(|s| row(plan.prev_stage(s))).collect(),
            bwd_from: (0..n).map(|s| row(plan.next_stage(s))).collect(),
            after: (0..n).map(|s| other(s, plan.next_stage(s))).collect(),
            before: (0..n).map(|s| other(s, plan.prev_stage(s))).collect(),
        }
    }

    /// The `(stage, mb)` slot of an op, if both exist.
    #[inline]
    fn slot(&self, op: Op) -> Option<usize> {
        ((op.stage as usize) < self.after.len() && (op.mb as usize) < self.mb_bound)
            .then(|| op.stage as usize * self.mb_bound + op.mb as usize)
    }

    /// Where an op's output goes, if another rank: (direction, peer). Unknown stages send nothing.
    #[inline]
    fn output(&self, op: Op) -> Option<(Dir, u32)> {
        let (dir, table) = match op.kind {
            Kind::F => (Dir::Fwd, &self.after),
            Kind::B | Kind::I => (Dir::Bwd, &self.before),
            Kind::W => return None,
        };
        let peer = *table.get(op.stage as usize)?;
        (peer != NONE).then_some((dir, peer))
    }
}

/// The lowering's running state: the programs being built and what has been scheduled.
struct Lowering<'a> {
    t: &'a Tables,
    steps: Vec<Vec<Step>>,
    compute_index: Vec<Vec<usize>>,
    /// By `(stage, mb)` slot: the forward has been scheduled; the input-gradient backward (B or
    /// I) has.
    f_done: Vec<bool>,
    b_done: Vec<bool>,
    /// Forward sends not yet waited for: slot → peer (`NONE` when there is none).
    pending_fwd: Vec<u32>,
}

impl Lowering<'_> {
    /// Whether the inputs of `op` have been scheduled; ops on unknown stages or micro-batches
    /// depend on nothing.
    #[inline]
    fn ready(&self, op: Op) -> bool {
        let (s, mb) = (op.stage as usize, op.mb as usize);
        if s >= self.t.fwd_from.len() || mb >= self.t.mb_bound {
            return true;
        }
        match op.kind {
            Kind::F => {
                let row = self.t.fwd_from[s];
                row == NO_ROW || self.f_done[row + mb]
            }
            Kind::B | Kind::I => {
                let row = self.t.bwd_from[s];
                row == NO_ROW || self.b_done[row + mb]
            }
            Kind::W => true,
        }
    }

    #[inline]
    fn action_ready(&self, a: Action) -> bool {
        match a {
            Action::One(op) => self.ready(op),
            Action::Pair { f, b } => self.ready(f) && self.ready(b),
        }
    }

    /// Appends action `a` of rank `r` with its communication: the action, the waits its
    /// backwards release, its sends (forward output first for a pair), and the receives on the
    /// peers' programs.
    #[inline]
    fn schedule(&mut self, r: usize, a: Action) {
        self.compute_index[r].push(self.steps[r].len());
        self.steps[r].push(Step::Compute(a));
        match a {
            Action::One(op) => {
                let x = self.t.slot(op);
                self.mark(r, op, x);
                self.send(r, op, x);
            }
            Action::Pair { f, b } => {
                // Both halves are done before either sends: b's wait precedes f's send.
                let (xf, xb) = (self.t.slot(f), self.t.slot(b));
                self.mark(r, f, xf);
                self.mark(r, b, xb);
                self.send(r, f, xf);
                self.send(r, b, xb);
            }
        }
    }

    /// Records `op` (at slot `x`, if known) as scheduled; a backward releases the wait of its
    /// stage's forward send.
    // Always inlined: called once or twice per action, the call itself cost a third of the work.
    #[inline(always)]
    fn mark(&mut self, r: usize, op: Op, x: Option<usize>) {
        let Some(x) = x else { return };
        match op.kind {
            Kind::F => self.f_done[x] = true,
            Kind::B | Kind::I => {
                self.b_done[x] = true;
                let peer = std::mem::replace(&mut self.pending_fwd[x], NONE);
                if peer != NONE {
                    self.steps[r].push(Step::WaitSend {
                        dir: Dir::Fwd,
                        stage: op.stage,
                        mb: op.mb,
                        peer,
                    });
                }
            }
            Kind::W => {}
        }
    }

    /// Appends the send of `op`'s output (at slot `x`, if known), if it goes to another rank, and
    /// the peer's receive.
    #[inline(always)]
    fn send(&mut self, r: usize, op: Op, x: Option<usize>) {
        let Some((dir, peer)) = self.t.output(op) else {
            return;
        };
        let receiving = match dir {
            Dir::Fwd => op.stage + 1,
            Dir::Bwd => op.stage - 1,
        };
        self.steps[r].push(Step::Send {
            dir,
            stage: op.stage,
            mb: op.mb,
            peer,
        });
        self.steps[peer as usize].push(Step::Recv {
            dir,
            stage: receiving,
            mb: op.mb,
            peer: r as u32,
        });
        if dir == Dir::Fwd
            && let Some(x) = x
        {
            self.pending_fwd[x] = peer;
        }
    }
}

/// Lowers every rank's program. Works on any plan; ops on unknown stages get no communication.
pub fn lower(plan: &Plan) -> LoweredPlan {
    let ranks = plan.ranks() as usize;
    let programs = plan.programs();
    let t = Tables::new(plan);

    // With replicas, a reduction pairs ranks that may reach it far apart: waiting right after the
    // launch would stall one on the other (or deadlock), so the waits go to the end.
    let replicated = plan.pipelines().len() > 1;
    // One pass over the programs finds, per rank, the reductions (after each stage's last B or W,
    // by position then stage) and every program's exact length, so each is allocated once: its
    // actions, a send and its wait for every output to another rank, the peers' receives, and a
    // launch and a wait per reduction.
    let mut reductions: Vec<Vec<(usize, Step)>> = Vec::with_capacity(ranks);
    let mut sizes = vec![0usize; ranks];
    let mut last_weight = vec![usize::MAX; t.after.len()];
    let mut touched: Vec<u32> = Vec::new();
    for (r, program) in programs.iter().enumerate() {
        for (i, a) in program.iter().enumerate() {
            let mut count = |op: Op| {
                if matches!(op.kind, Kind::B | Kind::W) && t.slot(op).is_some() {
                    let last = &mut last_weight[op.stage as usize];
                    if *last == usize::MAX {
                        touched.push(op.stage);
                    }
                    *last = i;
                }
                if let Some((_, peer)) = t.output(op) {
                    sizes[r] += 2;
                    sizes[peer as usize] += 1;
                }
            };
            // A match rather than `ops()`: this runs for every action.
            match *a {
                Action::One(op) => count(op),
                Action::Pair { f, b } => {
                    count(f);
                    count(b);
                }
            }
        }
        let mut after: Vec<(usize, u32)> = touched
            .drain(..)
            .map(|s| {
                (
                    std::mem::replace(&mut last_weight[s as usize], usize::MAX),
                    s,
                )
            })
            .collect();
        after.sort_unstable();
        let mut list = Vec::with_capacity(2 * after.len());
        for (i, stage) in after {
            list.push((i, Step::ReduceGrad { stage }));
            if !replicated {
                list.push((i, Step::WaitReduceGrad { stage }));
            }
        }
        sizes[r] += program.len()
            + if replicated {
                2 * list.len()
            } else {
                list.len()
            };
        reductions.push(list);
    }

    let mut l = Lowering {
        t: &t,
        steps: sizes.into_iter().map(Vec::with_capacity).collect(),
        compute_index: programs
            .iter()
            .map(|p| Vec::with_capacity(p.len()))
            .collect(),
        f_done: vec![false; t.slots],
        b_done: vec![false; t.slots],
        pending_fwd: vec![NONE; t.slots],
    };
    // Each rank's next action, and its next reduction entry; a reduction entry is due once the
    // action it follows has been scheduled, and takes a round's turn like an action.
    let mut pos = vec![0usize; ranks];
    let mut red = vec![0usize; ranks];
    let mut left: usize = programs
        .iter()
        .zip(&reductions)
        .map(|(p, rd)| p.len() + rd.len())
        .sum();

    while left > 0 {
        let mut progress = false;
        for r in 0..ranks {
            if let Some(&(i, step)) = reductions[r].get(red[r])
                && i < pos[r]
            {
                l.steps[r].push(step);
                red[r] += 1;
            } else if let Some(&a) = programs[r].get(pos[r])
                && l.action_ready(a)
            {
                l.schedule(r, a);
                pos[r] += 1;
            } else {
                continue;
            }
            left -= 1;
            progress = true;
        }
        if !progress {
            // Stuck (an invalid plan): take the lowest unfinished rank's next action anyway (it
            // cannot be a reduction, which is always due).
            if let Some(r) = (0..ranks).find(|&r| pos[r] < programs[r].len()) {
                l.schedule(r, programs[r][pos[r]]);
                pos[r] += 1;
                left -= 1;
            }
        }
    }

    let Lowering {
        mut steps,
        compute_index,
        mut pending_fwd,
        ..
    } = l;
    // Per rank: the sends still pending, in posting order (a rank's own sends stand in its program
    // in that order), gathered while reading the program and then appended; then, with replicas,
    // the waits of the reductions in launch order.
    let mut waits: Vec<Step> = Vec::new();
    for (r, program) in steps.iter_mut().enumerate() {
        waits.clear();
        for step in program.iter() {
            let Step::Send {
                dir,
                stage,
                mb,
                peer,
            } = *step
            else {
                continue;
            };
            let still_pending = match dir {
                Dir::Fwd => {
                    let x = stage as usize * t.mb_bound + mb as usize;
                    x < pending_fwd.len() && std::mem::replace(&mut pending_fwd[x], NONE) != NONE
                }
                Dir::Bwd => true,
            };
            if still_pending {
                waits.push(Step::WaitSend {
                    dir,
                    stage,
                    mb,
                    peer,
                });
            }
        }
        program.extend_from_slice(&waits);
        if replicated {
            program.extend(reductions[r].iter().map(|&(_, step)| match step {
                Step::ReduceGrad { stage } => Step::WaitReduceGrad { stage },
                other => other,
            }));
        }
    }
    LoweredPlan {
        steps,
        compute_index,
    }
}
