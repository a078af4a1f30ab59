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
use pipeweave_plan::memory::{self, OutOfMemory};
use pipeweave_plan::{Action, Kind, Op, Plan};

struct State<'p> {
    /// Per micro-batch id, its pipeline plus 1 and index (`Plan::carriers`), and S: a slot is
    /// `index · S + position`.
    carriers: &'p [[u32; 2]],
    per_pipeline: usize,
    /// Per stage: its position in its pipeline; whether its forward waits for the previous
    /// stage's (not at a pipeline's head), its input-gradient backward for the next stage's (not
    /// at its tail).
    position: Vec<u32>,
    has_prev: Vec<bool>,
    has_next: Vec<bool>,
    /// Indexed by key: `2·x` the forward of the piece of work at slot x is done, `2·x + 1` its
    /// input-gradient backward (B or I) is. The same keys name what a parked rank waits for.
    /// Slots are `Plan::work_slot`'s, one per piece of work the plan lists (the work checks
    /// passed, so the plan runs each: the table is no larger than the plan), micro-batch major:
    /// the ranks work on neighbouring micro-batches at any time, so the live part of the table is
    /// a small window that slides along it rather than a stream per stage.
    done: Vec<bool>,
}

impl<'p> State<'p> {
    fn new(plan: &'p Plan) -> Result<State<'p>, OutOfMemory> {
        let n = plan.num_stages();
        Ok(State {
            carriers: plan.carriers(),
            per_pipeline: plan.stages_per_pipeline() as usize,
            position: (0..n).map(|s| plan.locate(s).1).collect(),
            has_prev: (0..n).map(|s| plan.prev_stage(s).is_some()).collect(),
            has_next: (0..n).map(|s| plan.next_stage(s).is_some()).collect(),
            done: memory::filled(
                2 * plan.work_slots(),
                false,
                "the deadlock analysis's table",
            )?,
        })
    }

    /// The slot of the work of `stage` on `mb` (which the work checks found in the plan).
    #[inline(always)]
    fn at(&self, stage: u32, mb: u32) -> usize {
        self.carriers[mb as usize][1] as usize * self.per_pipeline
            + self.position[stage as usize] as usize
    }

    /// The key of the op that `op` waits for, if it has not run yet.
    #[inline]
    fn missing_key(&self, op: Op) -> Option<usize> {
        let (s, x) = (op.stage as usize, self.at(op.stage, op.mb));
        let key = match op.kind {
            // The previous stage's forward of the same micro-batch: slot x − 1.
            Kind::F if self.has_prev[s] => 2 * (x - 1),
            // The next stage's input-gradient backward: slot x + 1.
            Kind::B | Kind::I if self.has_next[s] => 2 * (x + 1) + 1,
            // W follows its I on the same rank, which the work checks guarantee.
            _ => return None,
        };
        (!self.done[key]).then_some(key)
    }
}

/// A stage's links, in one record for the hot loop: its position, whether its forward and its
/// input-gradient backward wait for a neighbour's, and the ranks that may wait for them (`NONE` at
/// a pipeline's ends).
#[derive(Clone, Copy)]
struct Links {
    position: u32,
    has_prev: bool,
    has_next: bool,
    fwd_to: u32,
    bwd_to: u32,
}

/// The op that `op` waits for, if it has not run yet.
fn missing_input(plan: &Plan, st: &State<'_>, op: Op) -> Option<Op> {
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
    let mut st = match State::new(plan) {
        Ok(st) => st,
        Err(e) => return Some(Problem::out_of_memory(e)),
    };
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
    let links: Vec<Links> = (0..plan.num_stages())
        .map(|s| Links {
            position: st.position[s as usize],
            has_prev: st.has_prev[s as usize],
            has_next: st.has_next[s as usize],
            fwd_to: consumer(plan.next_stage(s)),
            bwd_to: consumer(plan.prev_stage(s)),
        })
        .collect();
    let mut waits = vec![NO_KEY; programs.len()];
    let mut runnable: Vec<u32> = (0..programs.len() as u32).rev().collect();
    while let Some(rank) = runnable.pop() {
        let r = rank as usize;
        let program = &programs[r];
        let mut i = pc[r];
        while let Some(&a) = program.get(i) {
            // The common case, a single op, with its stage's links looked up once.
            if let Action::One(op) = a {
                let l = links[op.stage as usize];
                let x =
                    st.carriers[op.mb as usize][1] as usize * st.per_pipeline + l.position as usize;
                // The op's own key, and its input's (slot x − 1 or x + 1) if it has one.
                let (own, input, to) = match op.kind {
                    Kind::F => (2 * x, l.has_prev.then(|| 2 * (x - 1)), l.fwd_to),
                    Kind::B | Kind::I => (2 * x + 1, l.has_next.then(|| 2 * (x + 1) + 1), l.bwd_to),
                    // W follows its I on the same rank, which the work checks guarantee.
                    Kind::W => {
                        i += 1;
                        continue;
                    }
                };
                if let Some(key) = input
                    && !st.done[key]
                {
                    waits[r] = key;
                    break;
                }
                st.done[own] = true;
                if to != NONE && waits[to as usize] == own {
                    waits[to as usize] = NO_KEY;
                    runnable.push(to);
                }
                i += 1;
                continue;
            }
            let missing = match a {
                Action::One(op) => st.missing_key(op),
                Action::Pair { f, b } => st.missing_key(f).or_else(|| st.missing_key(b)),
            };
            if let Some(key) = missing {
                waits[r] = key;
                break;
            }
            let mut run = |op: Op| {
                let x = st.at(op.stage, op.mb);
                let l = links[op.stage as usize];
                let (key, to) = match op.kind {
                    Kind::F => (2 * x, l.fwd_to),
                    Kind::B | Kind::I => (2 * x + 1, l.bwd_to),
                    Kind::W => return,
                };
                st.done[key] = true;
                if to != NONE && waits[to as usize] == key {
                    waits[to as usize] = NO_KEY;
                    runnable.push(to);
                }
            };
            if let Action::Pair { f, b } = a {
                run(f);
                run(b);
            }
            i += 1;
        }
        pc[r] = i;
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

fn describe(plan: &Plan, st: &State<'_>, rank: u32, position: usize) -> Wait {
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
