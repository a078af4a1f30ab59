//! Checks of the work itself: every op names a real stage on its own rank and a micro-batch of its
//! pipeline; every stage runs every micro-batch once forward and once backward (B, or I then W);
//! backwards follow their forward, W follows its I; pairs are a forward with a B or I.
//! An evaluation plan (one that says so: `Plan::forward_only`) requires every forward once and
//! refuses any backward; no backward is missing from it.

use crate::problem::{Problem, ProblemKind};
use pipeweave_plan::memory::{self, OutOfMemory};
use pipeweave_plan::{Action, Kind, Op, Plan};

const NONE: u32 = u32::MAX;

/// Where each op of a (stage, micro-batch) was seen: a position on the stage's host rank.
/// One record per pair, so checking an op touches one cache line.
#[derive(Clone, Copy)]
struct Slot {
    f: u32,
    bwd: u32,
    w: u32,
    bwd_full: bool,
}

struct Seen {
    mb_bound: usize,
    slots: Vec<Slot>,
    /// Per stage, its pipeline: a table, so the hot loop does no division.
    pipeline: Vec<u32>,
}

impl Seen {
    fn new(plan: &Plan) -> Result<Seen, OutOfMemory> {
        let mb_bound = plan.mb_bound() as usize;
        let n = plan.num_stages() as usize * mb_bound;
        let unseen = Slot {
            f: NONE,
            bwd: NONE,
            w: NONE,
            bwd_full: false,
        };
        Ok(Seen {
            mb_bound,
            slots: memory::filled(n, unseen, "the validator's table of work")?,
            pipeline: (0..plan.num_stages()).map(|s| plan.locate(s).0).collect(),
        })
    }

    /// Records `op` at position `pos` of `rank` if it passes every check of [`check_op`], as that
    /// would; otherwise changes nothing and returns false.
    #[inline(always)]
    fn record_valid(&mut self, plan: &Plan, hosts: &[u32], rank: u32, pos: u32, op: Op) -> bool {
        let s = op.stage as usize;
        let (Some(&host), Some(&pipeline)) = (hosts.get(s), self.pipeline.get(s)) else {
            return false;
        };
        if host != rank || plan.mb_pipeline(op.mb) != Some(pipeline) {
            return false;
        }
        let x = self.index(op);
        let Some(slot) = self.slots.get_mut(x) else {
            return false;
        };
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

    #[inline]
    fn index(&self, op: Op) -> usize {
        op.stage as usize * self.mb_bound + op.mb as usize
    }
}

pub(crate) fn check_work(plan: &Plan) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut seen = match Seen::new(plan) {
        Ok(seen) => seen,
        Err(e) => return vec![Problem::out_of_memory(e)],
    };
    let hosts = plan.hosts();
    for rank in 0..plan.ranks() {
        for (i, action) in plan.program(rank).iter().enumerate() {
            // The common case, a single op that passes every check, decided with one look at its
            // stage and slot; anything else takes the full path below, which reports.
            if let Action::One(op) = *action
                && seen.record_valid(plan, hosts, rank, i as u32, op)
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
    for (j, pipeline) in plan.pipelines().iter().enumerate() {
        for (q, &host) in pipeline.placement.iter().enumerate() {
            let stage = plan.stage_id(j as u32, q as u32);
            for &mb in &pipeline.microbatches {
                let x = seen.index(Op::new(stage, Kind::F, mb));
                let mut missing = |kind| {
                    problems.push(Problem {
                        rank: host,
                        position: None,
                        action: None,
                        kind: ProblemKind::Missing {
                            op: Op::new(stage, kind, mb),
                        },
                    })
                };
                let slot = seen.slots[x];
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
    problems
}

fn check_op(
    plan: &Plan,
    seen: &mut Seen,
    rank: u32,
    i: usize,
    op: Op,
    report: &mut impl FnMut(ProblemKind),
) {
    let Some(host) = plan.stage_rank(op.stage) else {
        report(ProblemKind::UnknownStage {
            op,
            stages: plan.num_stages(),
        });
        return;
    };
    let pipeline = seen.pipeline[op.stage as usize];
    if plan.mb_pipeline(op.mb) != Some(pipeline) {
        report(ProblemKind::UnknownMicrobatch { op, pipeline });
        return;
    }
    // Work on the wrong rank does not count: its host must still run it.
    if host != rank {
        report(ProblemKind::WrongRank { op, host });
        return;
    }
    let x = seen.index(op);
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
