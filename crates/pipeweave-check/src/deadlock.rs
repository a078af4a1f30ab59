//! Deadlock analysis of a lowered plan under blocking point-to-point semantics.
//!
//! Every rank runs its lowered program in order. A send is posted and the rank moves on; a receive
//! blocks until the matching send has been posted; the wait for a send blocks until the peer has
//! posted the matching receive (NCCL's rendezvous); a compute action blocks until the actions it
//! depends on that sit on the same rank are done (the turn of a V). Gradient reductions are
//! launched asynchronously and never block. The analysis runs the ranks round-robin until none can
//! move; if some rank is unfinished then, every unfinished rank waits on another one and following
//! those waits finds a cycle, which is reported.

use crate::problem::{Problem, ProblemKind, Wait, WaitReason};
use pipeweave_plan::{Action, Dir, Kind, LoweredPlan, Op, Plan, Step};

struct State {
    mb_bound: usize,
    /// Transfer (sending stage, direction, mb) has its send posted.
    sent: Vec<bool>,
    /// Transfer (sending stage, direction, mb) has its receive posted.
    received: Vec<bool>,
    /// (stage, mb): forward done; input-gradient backward (B or I) done.
    f_done: Vec<bool>,
    b_done: Vec<bool>,
}

impl State {
    fn transfer(&self, sending_stage: u32, dir: Dir, mb: u32) -> usize {
        (sending_stage as usize * 2 + (dir == Dir::Bwd) as usize) * self.mb_bound + mb as usize
    }

    fn work(&self, stage: u32, mb: u32) -> usize {
        stage as usize * self.mb_bound + mb as usize
    }
}

/// The stage on the other end of a receive: where its data comes from.
fn sender_of(dir: Dir, receiving_stage: u32) -> u32 {
    match dir {
        Dir::Fwd => receiving_stage - 1,
        Dir::Bwd => receiving_stage + 1,
    }
}

/// What blocks a step, if anything.
enum Block {
    Recv {
        sending_stage: u32,
        dir: Dir,
        mb: u32,
        peer: u32,
    },
    SendMatched {
        sending_stage: u32,
        dir: Dir,
        mb: u32,
        peer: u32,
    },
    Local(Op),
}

fn local_block(plan: &Plan, st: &State, rank: u32, op: Op) -> Option<Op> {
    match op.kind {
        Kind::F => {
            let prev = plan.prev_stage(op.stage)?;
            (plan.stage_rank(prev) == Some(rank) && !st.f_done[st.work(prev, op.mb)])
                .then(|| Op::new(prev, Kind::F, op.mb))
        }
        Kind::B | Kind::I => {
            let next = plan.next_stage(op.stage)?;
            (plan.stage_rank(next) == Some(rank) && !st.b_done[st.work(next, op.mb)])
                .then(|| Op::new(next, Kind::B, op.mb))
        }
        Kind::W => None,
    }
}

fn blocked(plan: &Plan, st: &State, rank: u32, step: &Step) -> Option<Block> {
    match *step {
        Step::Recv {
            dir,
            stage,
            mb,
            peer,
        } => {
            let sending_stage = sender_of(dir, stage);
            (!st.sent[st.transfer(sending_stage, dir, mb)]).then_some(Block::Recv {
                sending_stage,
                dir,
                mb,
                peer,
            })
        }
        Step::WaitSend {
            dir,
            stage,
            mb,
            peer,
        } => (!st.received[st.transfer(stage, dir, mb)]).then_some(Block::SendMatched {
            sending_stage: stage,
            dir,
            mb,
            peer,
        }),
        Step::Compute(a) => a
            .ops()
            .find_map(|op| local_block(plan, st, rank, op))
            .map(Block::Local),
        Step::Send { .. } | Step::ReduceGrad { .. } => None,
    }
}

fn execute(st: &mut State, step: &Step) {
    match *step {
        Step::Recv { dir, stage, mb, .. } => {
            let t = st.transfer(sender_of(dir, stage), dir, mb);
            st.received[t] = true;
        }
        Step::Send { dir, stage, mb, .. } => {
            let t = st.transfer(stage, dir, mb);
            st.sent[t] = true;
        }
        Step::Compute(a) => {
            for op in a.ops() {
                let w = st.work(op.stage, op.mb);
                match op.kind {
                    Kind::F => st.f_done[w] = true,
                    Kind::B | Kind::I => st.b_done[w] = true,
                    Kind::W => {}
                }
            }
        }
        Step::WaitSend { .. } | Step::ReduceGrad { .. } => {}
    }
}

/// Runs the lowered plan; returns the deadlock problem if it gets stuck.
///
/// Assumes the work checks passed (every op on a real stage of its own rank, every transfer's two
/// ends present).
pub(crate) fn find_deadlock(plan: &Plan, lowered: &LoweredPlan) -> Option<Problem> {
    let mb_bound = plan.mb_bound() as usize;
    let stages = plan.num_stages() as usize;
    let mut st = State {
        mb_bound,
        sent: vec![false; stages * 2 * mb_bound],
        received: vec![false; stages * 2 * mb_bound],
        f_done: vec![false; stages * mb_bound],
        b_done: vec![false; stages * mb_bound],
    };
    let mut pc = vec![0usize; lowered.steps.len()];
    loop {
        let mut progress = false;
        for (rank, steps) in lowered.steps.iter().enumerate() {
            let start = pc[rank];
            let mut k = start;
            while k < steps.len() && blocked(plan, &st, rank as u32, &steps[k]).is_none() {
                execute(&mut st, &steps[k]);
                k += 1;
            }
            pc[rank] = k;
            progress |= k != start;
        }
        if !progress {
            break;
        }
    }
    let first = (0..pc.len()).find(|&r| pc[r] < lowered.steps[r].len())?;
    // Follow the waits from the first stuck rank until a rank repeats.
    let mut order: Vec<u32> = Vec::new();
    let mut visited = vec![usize::MAX; pc.len()];
    let mut rank = first as u32;
    while visited[rank as usize] == usize::MAX {
        visited[rank as usize] = order.len();
        order.push(rank);
        let wait = describe(plan, lowered, &st, rank, pc[rank as usize]);
        rank = wait.waits_on();
    }
    let cycle: Vec<Wait> = order[visited[rank as usize]..]
        .iter()
        .map(|&r| describe(plan, lowered, &st, r, pc[r as usize]))
        .collect();
    let head = &cycle[0];
    Some(Problem {
        rank: head.rank,
        position: head.position,
        action: head.action,
        kind: ProblemKind::Deadlock { cycle },
    })
}

/// The op that produced a transfer: a forward, or whichever of B or I the sending stage runs.
fn producer(plan: &Plan, sending_stage: u32, dir: Dir, mb: u32) -> Op {
    match dir {
        Dir::Fwd => Op::new(sending_stage, Kind::F, mb),
        Dir::Bwd => {
            let kind = plan
                .stage_rank(sending_stage)
                .and_then(|r| {
                    plan.program(r).iter().flat_map(Action::ops).find(|op| {
                        op.stage == sending_stage && op.mb == mb && op.kind.is_input_backward()
                    })
                })
                .map_or(Kind::B, |op| op.kind);
            Op::new(sending_stage, kind, mb)
        }
    }
}

fn describe(plan: &Plan, lowered: &LoweredPlan, st: &State, rank: u32, k: usize) -> Wait {
    let r = rank as usize;
    let step = lowered.steps[r][k];
    // The compute action at or after the blocked step.
    let position = lowered.compute_index[r].partition_point(|&c| c < k);
    let program = plan.program(rank);
    let (position, action) = match program.get(position) {
        Some(a) => (Some(position), Some(*a)),
        None => (None, None),
    };
    let reason = match blocked(plan, st, rank, &step) {
        Some(Block::Recv {
            sending_stage,
            dir,
            mb,
            peer,
        }) => WaitReason::Input {
            op: producer(plan, sending_stage, dir, mb),
            on_rank: peer,
        },
        Some(Block::SendMatched {
            sending_stage,
            dir,
            mb,
            peer,
        }) => WaitReason::SendMatched {
            op: producer(plan, sending_stage, dir, mb),
            to_rank: peer,
        },
        Some(Block::Local(op)) => {
            let op = if op.kind == Kind::F {
                op
            } else {
                producer(plan, op.stage, Dir::Bwd, op.mb)
            };
            WaitReason::Local { op }
        }
        // Unreachable for a stuck rank; describe it as waiting on itself rather than panic.
        None => WaitReason::Local {
            op: action
                .and_then(|a| a.ops().next())
                .unwrap_or(Op::new(0, Kind::F, 0)),
        },
    };
    Wait {
        rank,
        position,
        action,
        reason,
    }
}
