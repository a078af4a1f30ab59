//! The sends and gradient reductions of a plan's lowering, found from the plan itself in one pass
//! over its actions, without the lowered programs (what the trace and the timelines draw needs
//! only these). They are exactly [`LoweredPlan::sends`](crate::LoweredPlan::sends) and
//! [`LoweredPlan::reductions`](crate::LoweredPlan::reductions) of [`crate::lower`]'s result, on
//! any plan (a proptest in `tests.rs` says so): an op sends its output when it runs on its
//! stage's host, names a micro-batch its stage's pipeline carries and its neighbour stage lives on
//! another rank, right after its action (the forward half's first, for a pair); a stage's
//! gradients are reduced after the last B or W of it on a rank (of micro-batches its pipeline
//! carries).

use crate::action::{Action, Kind, Op};
use crate::lowered::{NONE, Reduction, Sent};
use crate::plan::{Dir, Plan};

/// The ranks a stage's outputs go to, where another rank hosts the neighbour (the lowering's own
/// rule; `NONE` otherwise).
struct Peers<'p> {
    plan: &'p Plan,
    host: Vec<u32>,
    after: Vec<u32>,
    before: Vec<u32>,
}

impl<'p> Peers<'p> {
    fn new(plan: &'p Plan) -> Peers<'p> {
        let hosts = plan.hosts();
        let other = |s: u32, t: Option<u32>| match t {
            Some(t) if hosts[t as usize] != hosts[s as usize] => hosts[t as usize],
            _ => NONE,
        };
        let n = plan.num_stages();
        Peers {
            plan,
            host: hosts.to_vec(),
            after: (0..n).map(|s| other(s, plan.next_stage(s))).collect(),
            before: (0..n).map(|s| other(s, plan.prev_stage(s))).collect(),
        }
    }

    /// The send of `op`'s output, run on `rank` as its `action`-th action, if it has one.
    #[inline]
    fn send(&self, rank: u32, action: usize, op: Op) -> Option<Sent> {
        let s = op.stage as usize;
        if self.plan.work_slot(op.stage, op.mb).is_none() || self.host[s] != rank {
            return None;
        }
        let (dir, peer, to_stage) = match op.kind {
            Kind::F => (Dir::Fwd, self.after[s], op.stage + 1),
            Kind::B | Kind::I => (Dir::Bwd, self.before[s], op.stage.wrapping_sub(1)),
            Kind::W => return None,
        };
        (peer != NONE).then_some(Sent {
            rank,
            action,
            dir,
            stage: op.stage,
            to_stage,
            mb: op.mb,
            peer,
        })
    }
}

/// Every send of the plan's lowering, rank by rank in program order, with the action whose output
/// it carries (as [`LoweredPlan::sends`](crate::LoweredPlan::sends)).
pub fn sends(plan: &Plan) -> Sends<'_> {
    Sends {
        plan,
        peers: Peers::new(plan),
        rank: 0,
        action: 0,
        half: 0,
    }
}

/// The iterator of [`sends`].
pub struct Sends<'p> {
    plan: &'p Plan,
    peers: Peers<'p>,
    /// The op to look at next: the `half`-th op of action `action` of rank `rank`.
    rank: u32,
    action: usize,
    half: u8,
}

impl Iterator for Sends<'_> {
    type Item = Sent;

    fn next(&mut self) -> Option<Sent> {
        while self.rank < self.plan.ranks() {
            let Some(&a) = self.plan.program(self.rank).get(self.action) else {
                self.rank += 1;
                self.action = 0;
                continue;
            };
            let op = match (a, self.half) {
                (Action::One(op), 0) | (Action::Pair { f: op, .. }, 0) => op,
                (Action::Pair { b, .. }, 1) => b,
                _ => {
                    self.action += 1;
                    self.half = 0;
                    continue;
                }
            };
            self.half += 1;
            if let Some(sent) = self.peers.send(self.rank, self.action, op) {
                return Some(sent);
            }
        }
        None
    }
}

impl std::fmt::Debug for Sends<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sends")
            .field("rank", &self.rank)
            .field("action", &self.action)
            .finish_non_exhaustive()
    }
}

/// Every launch of a gradient reduction in the plan's lowering, rank by rank in program order,
/// with the action before it (as [`LoweredPlan::reductions`](crate::LoweredPlan::reductions)):
/// on each rank, one after the last B or W of every stage it runs them for, by position and then
/// stage.
pub fn reductions(plan: &Plan) -> Vec<Reduction> {
    let mut last = vec![usize::MAX; plan.num_stages() as usize];
    let mut touched: Vec<u32> = Vec::new();
    let mut all = Vec::new();
    for rank in 0..plan.ranks() {
        for (i, a) in plan.program(rank).iter().enumerate() {
            for op in a.ops() {
                if matches!(op.kind, Kind::B | Kind::W) && plan.work_slot(op.stage, op.mb).is_some()
                {
                    let at = &mut last[op.stage as usize];
                    if *at == usize::MAX {
                        touched.push(op.stage);
                    }
                    *at = i;
                }
            }
        }
        let mut after: Vec<(usize, u32)> = touched
            .drain(..)
            .map(|s| (std::mem::replace(&mut last[s as usize], usize::MAX), s))
            .collect();
        after.sort_unstable();
        all.extend(after.into_iter().map(|(action, stage)| Reduction {
            rank,
            action,
            stage,
        }));
    }
    all
}
