//! The lowering's steps other than computation, each with what the check needs to know about it,
//! looked up by cell in a dense table: transfers by piece of work (`Plan::work_slot`), kind and
//! direction, reductions by stage. Each such step belongs to one rank (its stage's host), so the cell alone
//! finds it, and the rank confirms it.

use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::cell::StepCell;
use pipeweave_plan::memory::{self, OutOfMemory};
use pipeweave_plan::{Dir, Kind, Plan, Step, try_lower};
use std::collections::HashMap;

/// A step of the lowering, and where the file has it.
pub(super) struct Expected {
    pub rank: u32,
    pub step: StepCell,
    /// The action of the rank's program it goes with: a send's producer, a receive's consumer, the
    /// stage's last backward before a reduction.
    pub action: Option<usize>,
    /// For a transfer: its channel end and its place among the channel's messages.
    pub order: Option<(usize, u32)>,
    /// The other rank of a transfer.
    pub peer: u32,
    /// Its index among the rank's steps in the file.
    pub found: Option<usize>,
}

/// No step in this slot.
const NONE: u32 = u32::MAX;

/// The lowering's steps, looked up by rank and cell.
pub(super) struct Table<'p> {
    plan: &'p Plan,
    pub expected: Vec<Expected>,
    /// Channel ends: (sending rank, receiving rank, the receiving end).
    pub channels: Vec<(u32, u32, bool)>,
    /// `slots[slot(step)]`: the step's index in `expected`, or [`NONE`].
    slots: Vec<u32>,
    /// The plan's pieces of work (`Plan::work_slots`): the reductions' slots come after the
    /// transfers'.
    pieces: usize,
    stages: usize,
}

impl<'p> Table<'p> {
    /// The table of `plan`'s lowering; an error when the plan cannot be valid (fewer operations
    /// than pieces of work: some stage misses a micro-batch), which also bounds the table by the
    /// plan's size, or when the memory for it is not there.
    pub fn new(plan: &'p Plan) -> Result<Table<'p>, Diagnostic> {
        let pieces = plan.work_slots();
        if pieces > plan.num_ops() {
            return Err(Diagnostic::error(
                "the plan is not valid (a stage misses micro-batches), so its communication is not checked",
            )
            .with_help("the validator names what is missing"));
        }
        let stages = plan.num_stages() as usize;
        let out_of_memory = |e: OutOfMemory| Diagnostic::error(e.to_string());
        let lowered = try_lower(plan).map_err(out_of_memory)?;
        let mut t = Table {
            plan,
            expected: memory::with_capacity(
                lowered.num_steps().saturating_sub(plan.num_ops()),
                "the steps of the lowering",
            )
            .map_err(out_of_memory)?,
            channels: Vec::new(),
            slots: memory::filled(pieces * 6 + stages * 2, NONE, "the table of the steps")
                .map_err(out_of_memory)?,
            pieces,
            stages,
        };
        let mut channel_ids: HashMap<(u32, u32, bool), usize> = HashMap::new();
        let mut counts: Vec<u32> = Vec::new();
        for (r, steps) in (0u32..).zip(lowered.programs()) {
            let (mut last, mut i) = (None, 0usize);
            for step in steps {
                let (action, channel, peer) = match step {
                    Step::Compute(_) => {
                        last = Some(i);
                        i += 1;
                        continue;
                    }
                    Step::Send { peer, .. } => (last, Some((r, peer, false)), peer),
                    Step::Recv { peer, .. } => (None, Some((peer, r, true)), peer),
                    Step::WaitSend { peer, .. } => (None, None, peer),
                    Step::ReduceGrad { .. } => (last, None, r),
                    Step::WaitReduceGrad { .. } => (None, None, r),
                };
                let order = channel.map(|c| {
                    let id = *channel_ids.entry(c).or_insert_with(|| {
                        t.channels.push(c);
                        counts.push(0);
                        counts.len() - 1
                    });
                    counts[id] += 1;
                    (id, counts[id] - 1)
                });
                let step = StepCell::from(step);
                // A step the lowering repeats (only in an invalid plan) is taken once.
                let Some(slot) = t.slot(step).filter(|&s| t.slots[s] == NONE) else {
                    continue;
                };
                t.slots[slot] = t.expected.len() as u32;
                t.expected.push(Expected {
                    rank: r,
                    step,
                    action,
                    order,
                    peer,
                    found: None,
                });
            }
        }
        // A receive goes with the first action of its rank that computes its stage and
        // micro-batch in its direction.
        for (r, program) in (0u32..).zip(plan.programs()) {
            for (i, a) in program.iter().enumerate() {
                for op in a.ops() {
                    let dir = match op.kind {
                        Kind::F => Dir::Fwd,
                        Kind::B | Kind::I => Dir::Bwd,
                        Kind::W => continue,
                    };
                    let (stage, mb) = (op.stage, op.mb);
                    if let Some(e) = t.lookup(r, StepCell::Recv { dir, stage, mb }) {
                        t.expected[e].action.get_or_insert(i);
                    }
                }
            }
        }
        Ok(t)
    }

    /// The slot of a transfer or reduction naming a stage and micro-batch the plan has.
    fn slot(&self, step: StepCell) -> Option<usize> {
        let transfer = |kind: usize, dir: Dir, stage: u32, mb: u32| {
            let x = self.plan.work_slot(stage, mb)?;
            let dir = usize::from(dir == Dir::Bwd);
            Some((x * 3 + kind) * 2 + dir)
        };
        let reduction = |which: usize, stage: u32| {
            let stage = stage as usize;
            (stage < self.stages).then(|| self.pieces * 6 + stage * 2 + which)
        };
        match step {
            StepCell::Recv { dir, stage, mb } => transfer(0, dir, stage, mb),
            StepCell::Send { dir, stage, mb } => transfer(1, dir, stage, mb),
            StepCell::WaitSend { dir, stage, mb } => transfer(2, dir, stage, mb),
            StepCell::ReduceGrad { stage } => reduction(0, stage),
            StepCell::WaitReduceGrad { stage } => reduction(1, stage),
            StepCell::Compute(_) | StepCell::Unshard { .. } | StepCell::Reshard { .. } => None,
        }
    }

    /// The index in `expected` of rank r's `step`, when the lowering has it.
    pub fn lookup(&self, r: u32, step: StepCell) -> Option<usize> {
        let e = *self.slots.get(self.slot(step)?)?;
        (e != NONE && self.expected[e as usize].rank == r).then_some(e as usize)
    }

    /// Where the file has `step` of rank r, when the lowering has it.
    pub fn found(&self, r: u32, step: StepCell) -> Option<usize> {
        self.lookup(r, step).and_then(|e| self.expected[e].found)
    }
}
