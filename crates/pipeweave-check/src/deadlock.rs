//! Deadlock analysis under blocking point-to-point semantics.
//!
//! The launcher runs the lowered plan (`pipeweave_plan::lower`): a receive is posted where it
//! stands and the action that consumes it waits for its data; a send is posted and the rank moves
//! on; the wait for a send blocks until the peer has posted the matching receive (NCCL's
//! rendezvous); messages between two ranks match in posting order; gradient reductions are
//! launched and waited for without blocking on other pipeline work. Under the lowering's placement
//! nothing but missing data can block: receives are appended to a rank's program when the peer's
//! send is scheduled, so each pair of ranks posts receives in the order of the sends, and each
//! receive comes before its consumer; a forward send is waited for after the local backward of the
//! same stage and micro-batch, which needs the gradient the peer computes only after it posted the
//! receive; every other send is waited for at the end. So the lowered plan progresses
//! exactly when the compute actions do, with each one waiting for the actions it depends on — on
//! another rank (a receive) or on its own rank (the turn of a V). That is what this module runs,
//! until no rank can move. If some rank is unfinished then, every unfinished rank waits on another
//! unfinished one, and following those waits finds the cycle that is reported.

use crate::problem::{Problem, ProblemKind, Wait, WaitReason};
use pipeweave_plan::{Action, Kind, Op, Plan};

/// No such row in a per-stage table (the first or last stage of a pipeline).
const NO_ROW: usize = usize::MAX;

struct State {
    mb_bound: usize,
    /// Per stage, the `(stage, mb)` row of the stage its forward waits for (the previous one), and
    /// of the stage its input-gradient backward waits for (the next one): tables, so the hot loop
    /// does no modulo.
    fwd_from: Vec<usize>,
    bwd_from: Vec<usize>,
    /// Indexed by key: `2·(stage, mb)` the forward is done, `2·(stage, mb) + 1` the input-gradient
    /// backward (B or I) is. The same keys name what a parked rank waits for.
    done: Vec<bool>,
}

impl State {
    fn new(plan: &Plan) -> State {
        let mb_bound = plan.mb_bound() as usize;
        let n = plan.num_stages();
        let row = |t: Option<u32>| t.map_or(NO_ROW, |t| t as usize * mb_bound);
        State {
            mb_bound,
            fwd_from: (0..n).map(|s| row(plan.prev_stage(s))).collect(),
            bwd_from: (0..n).map(|s| row(plan.next_stage(s))).collect(),
            done: vec![false; 2 * n as usize * mb_bound],
        }
    }

    #[inline]
    fn at(&self, stage: u32, mb: u32) -> usize {
        stage as usize * self.mb_bound + mb as usize
    }

    /// The key of the op that `op` waits for, if it has not run yet.
    #[inline]
    fn missing_key(&self, op: Op) -> Option<usize> {
        let (row, half) = match op.kind {
            Kind::F => (self.fwd_from[op.stage as usize], 0),
            Kind::B | Kind::I => (self.bwd_from[op.stage as usize], 1),
            // W follows its I on the same rank, which the work checks guarantee.
            Kind::W => return None,
        };
        if row == NO_ROW {
            return None;
        }
        let key = 2 * (row + op.mb as usize) + half;
        (!self.done[key]).then_some(key)
    }
}

/// The op that `op` waits for, if it has not run yet.
fn missing_input(plan: &Plan, st: &State, op: Op) -> Option<Op> {
    let key = st.missing_key(op)?;
    let (stage, kind) = match op.kind {
        Kind::F => (plan.prev_stage(op.stage)?, Kind::F),
        _ => (plan.next_stage(op.stage)?, Kind::B),
    };
    debug_assert_eq!(key / 2, st.at(stage, op.mb));
    Some(Op::new(stage, kind, op.mb))
}

/// Runs the plan; returns the deadlock problem if it gets stuck.
///
/// Assumes the work checks passed (every op on a real stage of its own rank and micro-batch of
/// its pipeline, each exactly once, in order).
pub(crate) fn find_deadlock(plan: &Plan) -> Option<Problem> {
    let mut st = State::new(plan);
    let programs = plan.programs();
    let mut pc = vec![0usize; programs.len()];
    // Event-driven: a blocked rank records the key of the op it misses and is woken when that op
    // runs, so every action is examined a bounded number of times. Work sits on its stage's host
    // (the work checks passed) and runs once, so only one rank can miss a given op: the host of the
    // next stage for a forward, of the previous stage for an input-gradient backward.
    const NONE: u32 = u32::MAX;
    const NO_KEY: usize = usize::MAX;
    let hosts = plan.hosts();
    let consumer = |t: Option<u32>| t.map_or(NONE, |t| hosts[t as usize]);
    let fwd_to: Vec<u32> = (0..plan.num_stages())
        .map(|s| consumer(plan.next_stage(s)))
        .collect();
    let bwd_to: Vec<u32> = (0..plan.num_stages())
        .map(|s| consumer(plan.prev_stage(s)))
        .collect();
    let mut waits = vec![NO_KEY; programs.len()];
    let mut runnable: Vec<u32> = (0..programs.len() as u32).rev().collect();
    while let Some(rank) = runnable.pop() {
        let r = rank as usize;
        let program = &programs[r];
        while let Some(a) = program.get(pc[r]) {
            let missing = match *a {
                Action::One(op) => st.missing_key(op),
                Action::Pair { f, b } => st.missing_key(f).or_else(|| st.missing_key(b)),
            };
            if let Some(key) = missing {
                waits[r] = key;
                break;
            }
            let mut run = |op: Op| {
                let x = st.at(op.stage, op.mb);
                let (key, to) = match op.kind {
                    Kind::F => (2 * x, fwd_to[op.stage as usize]),
                    Kind::B | Kind::I => (2 * x + 1, bwd_to[op.stage as usize]),
                    Kind::W => return,
                };
                st.done[key] = true;
                if to != NONE && waits[to as usize] == key {
                    waits[to as usize] = NO_KEY;
                    runnable.push(to);
                }
            };
            match *a {
                Action::One(op) => run(op),
                Action::Pair { f, b } => {
                    run(f);
                    run(b);
                }
            }
            pc[r] += 1;
        }
    }
    let first = (0..pc.len()).find(|&r| pc[r] < programs[r].len())?;
    // Follow the waits from the first stuck rank until a rank repeats.
    let mut order: Vec<u32> = Vec::new();
    let mut visited = vec![usize::MAX; pc.len()];
    let mut rank = first as u32;
    while visited[rank as usize] == usize::MAX {
        visited[rank as usize] = order.len();
        order.push(rank);
        rank = describe(plan, &st, rank, pc[rank as usize]).waits_on();
    }
    let cycle: Vec<Wait> = order[visited[rank as usize]..]
        .iter()
        .map(|&r| describe(plan, &st, r, pc[r as usize]))
        .collect();
    let head = &cycle[0];
    Some(Problem {
        rank: head.rank,
        position: head.position,
        action: head.action,
        kind: ProblemKind::Deadlock { cycle },
    })
}

/// A backward op as the plan spells it: B, or I where the stage splits its backward.
fn spelled(plan: &Plan, op: Op) -> Op {
    if op.kind == Kind::F {
        return op;
    }
    let kind = plan
        .stage_rank(op.stage)
        .and_then(|r| {
            plan.program(r)
                .iter()
                .flat_map(Action::ops)
                .find(|o| o.stage == op.stage && o.mb == op.mb && o.kind.is_input_backward())
        })
        .map_or(Kind::B, |o| o.kind);
    Op::new(op.stage, kind, op.mb)
}

fn describe(plan: &Plan, st: &State, rank: u32, position: usize) -> Wait {
    let action = plan.program(rank)[position];
    let needed = action
        .ops()
        .find_map(|op| missing_input(plan, st, op))
        // A stuck action always misses an input; fall back to itself rather than panic.
        .unwrap_or_else(|| action.ops().next().unwrap_or(Op::new(0, Kind::F, 0)));
    let op = spelled(plan, needed);
    let on_rank = plan.stage_rank(op.stage).unwrap_or(rank);
    let reason = if on_rank == rank {
        WaitReason::Local { op }
    } else {
        WaitReason::Input { op, on_rank }
    };
    Wait {
        rank,
        position: Some(position),
        action: Some(action),
        reason,
    }
}
