//! Checks of the work itself: every op names a real stage on its own rank and a micro-batch of its
//! pipeline; every stage runs every micro-batch once forward and once backward (B, or I then W);
//! backwards follow their forward, W follows its I; pairs are a forward with a B or I.
//! An evaluation plan (one that says so: `Plan::forward_only`) requires every forward once and
//! refuses any backward; no backward is missing from it.

use crate::problem::{Problem, ProblemKind};
use pipeweave_plan::memory::{self, OutOfMemory};
use pipeweave_plan::{Action, Kind, Op, Plan, WorkSlots};

const NONE: u32 = u32::MAX;

/// At most this many pieces of missing work are reported one by one; the rest are counted in one
/// problem. A plan that lists a million micro-batches and runs one misses two million operations,
/// and a problem each was most of a gigabyte of messages.
pub(crate) const MAX_MISSING_LISTED: usize = 1000;

/// Where each op of a piece of work (stage, micro-batch) was seen: a position on the stage's host
/// rank. One record per piece, so checking an op touches one cache line.
#[derive(Clone, Copy)]
struct Slot {
    f: u32,
    bwd: u32,
    w: u32,
    bwd_full: bool,
}

const UNSEEN: Slot = Slot {
    f: NONE,
    bwd: NONE,
    w: NONE,
    bwd_full: false,
};

/// A stage's facts for the hot loop, in one record.
#[derive(Clone, Copy)]
struct Stage {
    host: u32,
    pipeline: u32,
    position: u32,
}

struct Seen {
    /// S, for dense slots.
    per_pipeline: usize,
    /// The slots: dense for a plan that runs as many operations as it lists pieces of work (every
    /// valid plan), the pieces its actions name otherwise (see `WorkSlots`).
    work: WorkSlots,
    dense: bool,
    slots: Vec<Slot>,
    stages: Vec<Stage>,
}

impl Seen {
    fn new(plan: &Plan, work: WorkSlots) -> Result<Seen, OutOfMemory> {
        let hosts = plan.hosts();
        Ok(Seen {
            per_pipeline: plan.stages_per_pipeline() as usize,
            dense: work.is_dense(),
            slots: memory::filled(work.len(), UNSEEN, "the validator's table of work")?,
            work,
            stages: (0..plan.num_stages())
                .map(|s| {
                    let (pipeline, position) = plan.locate(s);
                    Stage {
                        host: hosts[s as usize],
                        pipeline,
                        position,
                    }
                })
                .collect(),
        })
    }

    /// The slot of `op`'s piece of work, when its stage exists and its pipeline carries its
    /// micro-batch; with the stage's record.
    #[inline(always)]
    fn slot(&self, plan: &Plan, op: Op) -> Option<(Stage, usize)> {
        let st = *self.stages.get(op.stage as usize)?;
        let [carrier, index] = *plan.carriers().get(op.mb as usize)?;
        if carrier != st.pipeline + 1 {
            return None;
        }
        let x = if self.dense {
            index as usize * self.per_pipeline + st.position as usize
        } else {
            self.work.slot(plan, op.stage, op.mb)?
        };
        Some((st, x))
    }

    /// Records `op` at position `pos` of `rank` if it passes every check of [`check_op`], as that
    /// would; otherwise changes nothing and returns false.
    #[inline(always)]
    fn record_valid(&mut self, plan: &Plan, rank: u32, pos: u32, op: Op) -> bool {
        let Some((st, x)) = self.slot(plan, op) else {
            return false;
        };
        if st.host != rank {
            return false;
        }
        let slot = &mut self.slots[x];
        match op.kind {
            Kind::F if slot.f == NONE => slot.f = pos,
            Kind::B | Kind::I if slot.bwd == NONE && slot.f != NONE && slot.f < pos => {
                slot.bwd = pos;
                slot.bwd_full = op.kind == Kind::B;
            }
            Kind::W if slot.w == NONE && slot.bwd != NONE && !slot.bwd_full && slot.bwd < pos => {
                slot.w = pos;
            }
            _ => return false,
        }
        true
    }
}

pub(crate) fn check_work(plan: &Plan) -> Vec<Problem> {
    check_work_in(plan, WorkSlots::new(plan))
}

/// [`check_work`] with sparse slots whatever the plan: what the dense ones must give exactly.
#[cfg(test)]
pub(crate) fn check_work_sparsely(plan: &Plan) -> Vec<Problem> {
    check_work_in(plan, WorkSlots::sparse(plan))
}

fn check_work_in(plan: &Plan, work: Result<WorkSlots, OutOfMemory>) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut seen = match work.and_then(|work| Seen::new(plan, work)) {
        Ok(seen) => seen,
        Err(e) => return vec![Problem::out_of_memory(e)],
    };
    for rank in 0..plan.ranks() {
        for (i, action) in plan.program(rank).iter().enumerate() {
            // The common case, a single op that passes every check, decided with one look at its
            // stage and slot; anything else takes the full path below, which reports.
            if let Action::One(op) = *action
                && seen.record_valid(plan, rank, i as u32, op)
            {
                continue;
            }
            let mut report = |kind: ProblemKind| {
                problems.push(Problem {
                    rank,
                    position: Some(i),
                    action: Some(*action),
                    kind,
                })
            };
            // A match rather than `ops()`: this runs for every action.
            match *action {
                Action::One(op) => check_op(plan, &mut seen, rank, i, op, &mut report),
                Action::Pair { f, b } => {
                    if f.kind != Kind::F || !b.kind.is_input_backward() {
                        report(ProblemKind::MalformedPair { f, b });
                    }
                    check_op(plan, &mut seen, rank, i, f, &mut report);
                    check_op(plan, &mut seen, rank, i, b, &mut report);
                }
            }
        }
    }
    let training = !plan.is_forward_only();
    if !training {
        for rank in 0..plan.ranks() {
            for (i, action) in plan.program(rank).iter().enumerate() {
                for op in action.ops().filter(|op| op.kind != Kind::F) {
                    problems.push(Problem {
                        rank,
                        position: Some(i),
                        action: Some(*action),
                        kind: ProblemKind::BackwardInEvaluation { op },
                    });
                }
            }
        }
    }
    missing_work(plan, &seen, training, &mut problems);
    problems
}

/// Reports the work no rank runs: the first [`MAX_MISSING_LISTED`] pieces one by one, in the
/// order of the pipelines, their stages and micro-batches, and the rest counted in one problem.
/// The count comes from the slots first (a valid plan stops there); the listing looks at a piece
/// of work only to report it or where some op of it ran, so the cost follows the actions and not
/// what the pipelines list.
fn missing_work(plan: &Plan, seen: &Seen, training: bool, problems: &mut Vec<Problem>) {
    // Every piece of work lacks its forward and its backward but where a slot says it ran.
    let pieces = plan.work_slots() as u64;
    let (mut missing, mut ran_f, mut ran_bwd) = (0u64, 0u64, 0u64);
    for slot in &seen.slots {
        ran_f += u64::from(slot.f != NONE);
        ran_bwd += u64::from(slot.bwd != NONE);
        missing += u64::from(training && slot.bwd != NONE && !slot.bwd_full && slot.w == NONE);
    }
    missing += pieces - ran_f;
    if training {
        missing += pieces - ran_bwd;
    }
    if missing == 0 {
        return;
    }
    let mut listed = 0;
    'listing: for (j, pipeline) in plan.pipelines().iter().enumerate() {
        for (q, &host) in pipeline.placement.iter().enumerate() {
            let stage = plan.stage_id(j as u32, q as u32);
            for &mb in &pipeline.microbatches {
                if listed >= MAX_MISSING_LISTED {
                    break 'listing;
                }
                let slot = seen
                    .slot(plan, Op::new(stage, Kind::F, mb))
                    .map_or(UNSEEN, |(_, x)| seen.slots[x]);
                let mut missing = |kind| {
                    listed += 1;
                    problems.push(Problem {
                        rank: host,
                        position: None,
                        action: None,
                        kind: ProblemKind::Missing {
                            op: Op::new(stage, kind, mb),
                        },
                    })
                };
                if slot.f == NONE {
                    missing(Kind::F);
                }
                if !training {
                    continue;
                }
                if slot.bwd == NONE {
                    missing(Kind::B);
                } else if !slot.bwd_full && slot.w == NONE {
                    missing(Kind::W);
                }
            }
        }
    }
    let more = missing.saturating_sub(listed as u64);
    if more > 0 {
        problems.push(Problem {
            rank: 0,
            position: None,
            action: None,
            kind: ProblemKind::MoreMissing {
                listed: listed as u64,
                more,
            },
        });
    }
}

fn check_op(
    plan: &Plan,
    seen: &mut Seen,
    rank: u32,
    i: usize,
    op: Op,
    report: &mut impl FnMut(ProblemKind),
) {
    let Some(st) = seen.stages.get(op.stage as usize) else {
        report(ProblemKind::UnknownStage {
            op,
            stages: plan.num_stages(),
        });
        return;
    };
    let Some((st, x)) = seen.slot(plan, op) else {
        report(ProblemKind::UnknownMicrobatch {
            op,
            pipeline: st.pipeline,
        });
        return;
    };
    // Work on the wrong rank does not count: its host must still run it.
    if st.host != rank {
        report(ProblemKind::WrongRank { op, host: st.host });
        return;
    }
    let pos = i as u32;
    let seen = &mut seen.slots[x];
    match op.kind {
        Kind::F => {
            if seen.f != NONE {
                report(ProblemKind::Duplicate {
                    op,
                    first: seen.f as usize,
                });
            } else {
                seen.f = pos;
            }
        }
        Kind::B | Kind::I => {
            if seen.bwd != NONE {
                report(ProblemKind::Duplicate {
                    op,
                    first: seen.bwd as usize,
                });
                return;
            }
            seen.bwd = pos;
            seen.bwd_full = op.kind == Kind::B;
            // A forward at this very position is the other half of the same pair: not before.
            if seen.f == NONE || seen.f >= pos {
                report(ProblemKind::BackwardBeforeForward { op });
            }
        }
        Kind::W => {
            if seen.w != NONE {
                report(ProblemKind::Duplicate {
                    op,
                    first: seen.w as usize,
                });
                return;
            }
            seen.w = pos;
            if seen.bwd != NONE && seen.bwd_full {
                report(ProblemKind::WeightWithoutInput {
                    op,
                    after_full_backward: true,
                });
            } else if seen.bwd == NONE || seen.bwd >= pos {
                report(ProblemKind::WeightWithoutInput {
                    op,
                    after_full_backward: false,
                });
            }
        }
    }
}
