//! Slots for the pieces of work of any plan, valid or not: the tables of the passes that take any
//! plan (the validator's work checks, the lowering) have one entry per slot.
//!
//! A valid plan runs a forward and a backward of every piece of work its pipelines list, so a
//! dense table with a slot per listed piece ([`Plan::work_slot`]) is no larger than the plan. A
//! plan that lists far more than it runs (a pipeline naming a million micro-batches its stages
//! never run) is invalid, but must still be judged and lowered at the cost of what it holds: its
//! slots are then the pieces its actions name and the inputs those wait for, sorted, and a slot is
//! found by a binary search among them.

use crate::action::{Action, Kind};
use crate::memory::{self, OutOfMemory};
use crate::plan::Plan;

/// Plans that list at most this many pieces of work get a dense table whatever their actions:
/// small enough to be no cost, and large enough that nearly every plan a test builds is dense.
const ALWAYS_DENSE: usize = 1 << 16;

/// Where each piece of work of a plan has its slot (see the module's doc).
#[derive(Debug, Clone)]
pub struct WorkSlots {
    /// `None`: the dense numbering of [`Plan::work_slot`]. Otherwise the pieces of work that have a
    /// slot, as `stage << 32 | mb`, ascending: a slot is a place in this list.
    sparse: Option<Vec<u64>>,
    len: usize,
}

#[inline]
fn key(stage: u32, mb: u32) -> u64 {
    u64::from(stage) << 32 | u64::from(mb)
}

impl WorkSlots {
    /// The slots of `plan`: dense when it lists no more pieces of work than it has operations
    /// (every valid plan does), else the pieces its actions name and their inputs.
    pub fn new(plan: &Plan) -> Result<WorkSlots, OutOfMemory> {
        let listed = plan.work_slots();
        // The actions first, counted per rank: they are at most the operations, and most plans
        // are decided by them without a pass over every action for the pairs.
        let actions: usize = plan.programs().iter().map(Vec::len).sum();
        if listed <= actions.max(ALWAYS_DENSE) || listed <= plan.num_ops() {
            return Ok(WorkSlots {
                sparse: None,
                len: listed,
            });
        }
        WorkSlots::sparse(plan)
    }

    /// The sparse slots of `plan`, whatever its size (for the tests that compare both kinds).
    pub fn sparse(plan: &Plan) -> Result<WorkSlots, OutOfMemory> {
        let what = "the table of the plan's pieces of work";
        let mut keys: Vec<u64> = memory::with_capacity(2 * plan.num_ops(), what)?;
        for a in plan.programs().iter().flatten() {
            let (first, second) = match *a {
                Action::One(op) => (op, None),
                Action::Pair { f, b } => (f, Some(b)),
            };
            for op in std::iter::once(first).chain(second) {
                if plan.work_slot(op.stage, op.mb).is_none() {
                    continue;
                }
                keys.push(key(op.stage, op.mb));
                // The piece it waits for, in the same pipeline: the lowering looks it up.
                let input = match op.kind {
                    Kind::F => plan.prev_stage(op.stage),
                    Kind::B | Kind::I => plan.next_stage(op.stage),
                    Kind::W => None,
                };
                if let Some(t) = input {
                    keys.push(key(t, op.mb));
                }
            }
        }
        keys.sort_unstable();
        keys.dedup();
        let len = keys.len();
        Ok(WorkSlots {
            sparse: Some(keys),
            len,
        })
    }

    /// Whether the slots are [`Plan::work_slot`]'s.
    #[inline]
    pub fn is_dense(&self) -> bool {
        self.sparse.is_none()
    }

    /// The number of slots.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot of the work of `stage` on `mb`, if it has one: the stage exists, its pipeline
    /// carries the micro-batch and, for sparse slots, an action names it or waits for it.
    #[inline]
    pub fn slot(&self, plan: &Plan, stage: u32, mb: u32) -> Option<usize> {
        let dense = plan.work_slot(stage, mb)?;
        match &self.sparse {
            None => Some(dense),
            Some(keys) => keys.binary_search(&key(stage, mb)).ok(),
        }
    }
}
