//! The lowering pass: adds to every rank's compute program what a launcher executes around it.
//!
//! Placement rules (deterministic, a function of the compute program alone):
//! - a receive stands right before the action that consumes it (for a pair: the forward's input
//!   first, then the backward's);
//! - a send stands right after the action that produced it (forward output first for a pair);
//! - the wait for a forward send stands right after the action holding the backward (B or I) of the
//!   same stage and micro-batch, before that action's own sends: the local backward proves the peer
//!   consumed the activation, so the wait never stalls. Every other send (gradients, and forwards
//!   with no local backward) is waited for at the end of the program, in posting order. This is
//!   PyTorch 2.15's `_add_wait_send` placement;
//! - the gradient reduction of a stage stands right after the stage's last weight-gradient action
//!   on the rank (its last B or W), after that action's sends. With several pipelines it reduces
//!   across the replicas of the stage's model part.
//!
//! Nothing is sent where consecutive stages share a rank (the turn of a V).
//!
//! Semantics the validator assumes (blocking point-to-point, as with NCCL): a send is posted and the
//! rank moves on; a receive blocks until the matching send is posted; the wait for a send blocks
//! until the peer has posted the matching receive.

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
    /// Reduce the gradients of `stage` (across the replicas of its part, and data-parallel ranks).
    ReduceGrad {
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

/// Per stage, the rank on the other side of each boundary when it is another rank (else `NONE`):
/// `before[s]` hosts stage s−1 (where a forward's input comes from and a backward's output goes),
/// `after[s]` hosts stage s+1.
struct Peers {
    before: Vec<u32>,
    after: Vec<u32>,
}

impl Peers {
    fn new(plan: &Plan) -> Peers {
        let hosts = plan.hosts();
        let other = |s: u32, t: Option<u32>| match t {
            Some(t) if hosts[t as usize] != hosts[s as usize] => hosts[t as usize],
            _ => NONE,
        };
        let n = plan.num_stages();
        Peers {
            before: (0..n).map(|s| other(s, plan.prev_stage(s))).collect(),
            after: (0..n).map(|s| other(s, plan.next_stage(s))).collect(),
        }
    }

    /// Where an op's input comes from, if another rank: (direction, peer).
    #[inline]
    fn input(&self, op: Op) -> Option<(Dir, u32)> {
        let (dir, table) = match op.kind {
            Kind::F => (Dir::Fwd, &self.before),
            Kind::B | Kind::I => (Dir::Bwd, &self.after),
            Kind::W => return None,
        };
        let peer = *table.get(op.stage as usize)?;
        (peer != NONE).then_some((dir, peer))
    }

    /// Where an op's output goes, if another rank: (direction, peer).
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

/// Lowers every rank's program. Works on any plan; ops on unknown stages get no communication.
pub fn lower(plan: &Plan) -> LoweredPlan {
    let n_stages = plan.num_stages() as usize;
    let mb_bound = plan.mb_bound() as usize;
    // Each rank only tracks its own stages: `local[stage]` is the stage's index on its host.
    let mut local = vec![0usize; n_stages];
    let mut local_count = vec![0usize; plan.ranks() as usize];
    for (stage, l) in local.iter_mut().enumerate() {
        if let Some(r) = plan.stage_rank(stage as u32) {
            *l = local_count[r as usize];
            local_count[r as usize] += 1;
        }
    }
    let slot = |stage: u32, mb: u32| local[stage as usize] * mb_bound + mb as usize;
    let peers = Peers::new(plan);
    let mut steps = Vec::with_capacity(plan.ranks() as usize);
    let mut compute_index = Vec::with_capacity(plan.ranks() as usize);
    for rank in 0..plan.ranks() {
        let program = plan.program(rank);
        // The last action computing weight gradients of each stage: B or W.
        let mut last_weight: Vec<Option<usize>> = vec![None; n_stages];
        for (i, a) in program.iter().enumerate() {
            for op in a.ops() {
                if matches!(op.kind, Kind::B | Kind::W) && plan.is_stage(op.stage) {
                    last_weight[op.stage as usize] = Some(i);
                }
            }
        }
        let mut reduce_after: Vec<(usize, u32)> = last_weight
            .iter()
            .enumerate()
            .filter_map(|(s, i)| i.map(|i| (i, s as u32)))
            .collect();
        reduce_after.sort_unstable();
        let mut reduce_iter = reduce_after.into_iter().peekable();

        let mut out = Vec::with_capacity(program.len() * 3);
        let mut index = Vec::with_capacity(program.len());
        // Forward sends not yet waited for, by (stage, mb) → peer; and all pending sends in
        // posting order, for the waits at the end.
        let mut pending_fwd: Vec<Option<u32>> = vec![None; local_count[rank as usize] * mb_bound];
        let mut posted: Vec<(Dir, u32, u32, u32, bool)> = Vec::new();
        for (i, a) in program.iter().enumerate() {
            for op in a.ops() {
                if let Some((dir, peer)) = peers.input(op) {
                    out.push(Step::Recv {
                        dir,
                        stage: op.stage,
                        mb: op.mb,
                        peer,
                    });
                }
            }
            index.push(out.len());
            out.push(Step::Compute(*a));
            for op in a.ops() {
                if op.kind.is_input_backward()
                    && plan.stage_rank(op.stage) == Some(rank)
                    && op.mb < plan.mb_bound()
                    && let Some(peer) = pending_fwd[slot(op.stage, op.mb)].take()
                {
                    out.push(Step::WaitSend {
                        dir: Dir::Fwd,
                        stage: op.stage,
                        mb: op.mb,
                        peer,
                    });
                }
            }
            for op in a.ops() {
                if let Some((dir, peer)) = peers.output(op) {
                    out.push(Step::Send {
                        dir,
                        stage: op.stage,
                        mb: op.mb,
                        peer,
                    });
                    let tracked = dir == Dir::Fwd
                        && plan.stage_rank(op.stage) == Some(rank)
                        && op.mb < plan.mb_bound();
                    if tracked {
                        pending_fwd[slot(op.stage, op.mb)] = Some(peer);
                    }
                    posted.push((dir, op.stage, op.mb, peer, tracked));
                }
            }
            while let Some(&(at, stage)) = reduce_iter.peek() {
                if at != i {
                    break;
                }
                out.push(Step::ReduceGrad { stage });
                reduce_iter.next();
            }
        }
        for (dir, stage, mb, peer, tracked) in posted {
            // An untracked send (an op off its host rank, in an invalid plan) is waited for here.
            let still_pending = !tracked || pending_fwd[slot(stage, mb)].take().is_some();
            if still_pending {
                out.push(Step::WaitSend {
                    dir,
                    stage,
                    mb,
                    peer,
                });
            }
        }
        steps.push(out);
        compute_index.push(index);
    }
    LoweredPlan {
        steps,
        compute_index,
    }
}
