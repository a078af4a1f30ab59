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

/// Per stage, the rank on the other side of each boundary when it is another rank (else `NONE`):
/// `before[s]` hosts stage s−1 (where a backward's output goes), `after[s]` hosts stage s+1 (where
/// a forward's output goes).
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

/// One entry of a rank's input to the scheduler: a compute action or a gradient reduction.
#[derive(Clone, Copy)]
enum Entry {
    Action(usize),
    Reduce(u32),
    WaitReduce(u32),
}

/// Lowers every rank's program. Works on any plan; ops on unknown stages get no communication.
pub fn lower(plan: &Plan) -> LoweredPlan {
    let ranks = plan.ranks() as usize;
    let n_stages = plan.num_stages() as usize;
    let mb_bound = plan.mb_bound() as usize;
    let peers = Peers::new(plan);
    let known = |op: Op| (op.stage as usize) < n_stages && (op.mb as usize) < mb_bound;
    let at = |stage: u32, mb: u32| stage as usize * mb_bound + mb as usize;

    // With replicas, a reduction pairs ranks that may reach it far apart: waiting right after the
    // launch would stall one on the other (or deadlock), so the waits go to the end.
    let replicated = plan.pipelines().len() > 1;
    // Each rank's entries: its actions, with the reductions after each stage's last B or W.
    let entries: Vec<Vec<Entry>> = plan
        .programs()
        .iter()
        .map(|program| {
            let mut last_weight: Vec<Option<usize>> = vec![None; n_stages];
            for (i, a) in program.iter().enumerate() {
                for op in a.ops() {
                    if matches!(op.kind, Kind::B | Kind::W) && known(op) {
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
            let mut out = Vec::with_capacity(program.len() + reduce_after.len());
            let mut next = reduce_after.iter().peekable();
            for i in 0..program.len() {
                out.push(Entry::Action(i));
                while let Some(&(_, stage)) = next.next_if(|(at, _)| *at == i) {
                    out.push(Entry::Reduce(stage));
                    if !replicated {
                        out.push(Entry::WaitReduce(stage));
                    }
                }
            }
            out
        })
        .collect();

    // Scheduled work, by (stage, mb): forwards, and input-gradient backwards (B or I).
    let mut f_done = vec![false; n_stages * mb_bound];
    let mut b_done = vec![false; n_stages * mb_bound];
    let ready = |op: Op, f_done: &[bool], b_done: &[bool]| -> bool {
        if !known(op) {
            return true;
        }
        match op.kind {
            Kind::F => plan
                .prev_stage(op.stage)
                .is_none_or(|p| f_done[at(p, op.mb)]),
            Kind::B | Kind::I => plan
                .next_stage(op.stage)
                .is_none_or(|n| b_done[at(n, op.mb)]),
            Kind::W => true,
        }
    };

    let mut steps: Vec<Vec<Step>> = plan
        .programs()
        .iter()
        .map(|p| Vec::with_capacity(p.len() * 3))
        .collect();
    let mut compute_index: Vec<Vec<usize>> = plan
        .programs()
        .iter()
        .map(|p| Vec::with_capacity(p.len()))
        .collect();
    // Forward sends not yet waited for: (stage, mb) → peer; and every send in posting order.
    let mut pending_fwd: Vec<u32> = vec![NONE; n_stages * mb_bound];
    let mut posted: Vec<Vec<(Dir, u32, u32, u32)>> = vec![Vec::new(); ranks];
    let mut pos = vec![0usize; ranks];
    let mut left: usize = entries.iter().map(Vec::len).sum();

    while left > 0 {
        let mut progress = false;
        for r in 0..ranks {
            let Some(&entry) = entries[r].get(pos[r]) else {
                continue;
            };
            if let Entry::Action(i) = entry {
                let a = plan.programs()[r][i];
                if !a.ops().all(|op| ready(op, &f_done, &b_done)) {
                    continue;
                }
            }
            schedule(
                plan,
                &peers,
                r,
                entry,
                &mut steps,
                &mut compute_index,
                &mut pending_fwd,
                &mut posted[r],
                (&mut f_done, &mut b_done),
            );
            pos[r] += 1;
            left -= 1;
            progress = true;
        }
        if !progress {
            // Stuck (an invalid plan): take the lowest unfinished rank's next entry anyway.
            if let Some(r) = (0..ranks).find(|&r| pos[r] < entries[r].len()) {
                let entry = entries[r][pos[r]];
                schedule(
                    plan,
                    &peers,
                    r,
                    entry,
                    &mut steps,
                    &mut compute_index,
                    &mut pending_fwd,
                    &mut posted[r],
                    (&mut f_done, &mut b_done),
                );
                pos[r] += 1;
                left -= 1;
            }
        }
    }
    for (r, sends) in posted.into_iter().enumerate() {
        for (dir, stage, mb, peer) in sends {
            let still_pending = match dir {
                Dir::Fwd => {
                    let x = at(stage, mb);
                    x < pending_fwd.len() && std::mem::replace(&mut pending_fwd[x], NONE) != NONE
                }
                Dir::Bwd => true,
            };
            if still_pending {
                steps[r].push(Step::WaitSend {
                    dir,
                    stage,
                    mb,
                    peer,
                });
            }
        }
    }
    if replicated {
        for program in &mut steps {
            let launched: Vec<u32> = program
                .iter()
                .filter_map(|s| match *s {
                    Step::ReduceGrad { stage } => Some(stage),
                    _ => None,
                })
                .collect();
            program.extend(
                launched
                    .into_iter()
                    .map(|stage| Step::WaitReduceGrad { stage }),
            );
        }
    }
    LoweredPlan {
        steps,
        compute_index,
    }
}

/// Appends one entry of rank `r` with its communication: the action, the waits its backwards
/// release, its sends, and the receives on the peers' programs.
#[allow(clippy::too_many_arguments)]
fn schedule(
    plan: &Plan,
    peers: &Peers,
    r: usize,
    entry: Entry,
    steps: &mut [Vec<Step>],
    compute_index: &mut [Vec<usize>],
    pending_fwd: &mut [u32],
    posted: &mut Vec<(Dir, u32, u32, u32)>,
    (f_done, b_done): (&mut [bool], &mut [bool]),
) {
    let i = match entry {
        Entry::Reduce(stage) => {
            steps[r].push(Step::ReduceGrad { stage });
            return;
        }
        Entry::WaitReduce(stage) => {
            steps[r].push(Step::WaitReduceGrad { stage });
            return;
        }
        Entry::Action(i) => i,
    };
    let a = plan.programs()[r][i];
    let mb_bound = plan.mb_bound() as usize;
    let slot = |op: Op| {
        ((op.stage as usize) < plan.num_stages() as usize && (op.mb as usize) < mb_bound)
            .then(|| op.stage as usize * mb_bound + op.mb as usize)
    };
    compute_index[r].push(steps[r].len());
    steps[r].push(Step::Compute(a));
    for op in a.ops() {
        let Some(x) = slot(op) else { continue };
        match op.kind {
            Kind::F => f_done[x] = true,
            Kind::B | Kind::I => {
                b_done[x] = true;
                let peer = std::mem::replace(&mut pending_fwd[x], NONE);
                if peer != NONE {
                    steps[r].push(Step::WaitSend {
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
    for op in a.ops() {
        let Some((dir, peer)) = peers.output(op) else {
            continue;
        };
        let receiving = match dir {
            Dir::Fwd => op.stage + 1,
            Dir::Bwd => op.stage - 1,
        };
        steps[r].push(Step::Send {
            dir,
            stage: op.stage,
            mb: op.mb,
            peer,
        });
        steps[peer as usize].push(Step::Recv {
            dir,
            stage: receiving,
            mb: op.mb,
            peer: r as u32,
        });
        if dir == Dir::Fwd
            && let Some(x) = slot(op)
        {
            pending_fwd[x] = peer;
        }
        posted.push((dir, op.stage, op.mb, peer));
    }
}
