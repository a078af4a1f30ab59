//! Proptest strategies for random plans, and textbook 1F1B, shared by the tests and benchmarks of
//! every crate that takes plans (feature `testing`; never part of a normal build).
//!
//! Pipeline j of a generated plan carries micro-batches j·m … j·m+m−1. Ops are drawn from bounds
//! the caller gives, which may lie beyond the plan's stages and micro-batches: passes that must
//! cope with any plan are tested on such ones too.

use crate::action::{Action, Kind, Op};
use crate::plan::{Pipeline, Plan};
use proptest::collection::vec;
use proptest::prelude::*;

const KINDS: [Kind; 4] = [Kind::F, Kind::B, Kind::I, Kind::W];

/// An op of any kind on a stage below `stages` for a micro-batch below `mbs`.
pub fn op(stages: u32, mbs: u32) -> impl Strategy<Value = Op> {
    (0..stages, 0..KINDS.len(), 0..mbs)
        .prop_map(|(stage, kind, mb)| Op::new(stage, KINDS[kind], mb))
}

/// Mostly single ops, one in five a pair of any two ops (a valid pair or not), with ops as
/// [`op`] draws them.
pub fn action(stages: u32, mbs: u32) -> impl Strategy<Value = Action> {
    prop_oneof![
        4 => op(stages, mbs).prop_map(Action::One),
        1 => (op(stages, mbs), op(stages, mbs)).prop_map(|(f, b)| Action::Pair { f, b }),
    ]
}

/// Pipeline j placed by `placement[j]`, carrying micro-batches j·m … j·m+m−1.
pub fn pipelines(placement: Vec<Vec<u32>>, m: u32) -> Vec<Pipeline> {
    placement
        .into_iter()
        .zip(0u32..)
        .map(|(placement, j)| Pipeline {
            placement,
            microbatches: (0..m).map(|i| j * m + i).collect(),
        })
        .collect()
}

/// Any plan: 1 to 3 ranks, 1 or 2 pipelines of 1 to 3 stages placed at random, 1 to 3
/// micro-batches each, and programs of up to 11 random actions naming stages below 7 and
/// micro-batches below 5 (so often ones the plan does not have).
pub fn any_plan() -> impl Strategy<Value = Plan> {
    (1u32..4, 1usize..4, 1usize..3, 1u32..4).prop_flat_map(|(ranks, s, k, m)| {
        let placement = vec(vec(0..ranks, s), k);
        let programs = vec(vec(action(7, 5), 0..12), ranks as usize);
        (placement, programs).prop_map(move |(placement, programs)| {
            Plan::new(ranks, pipelines(placement, m), programs).expect("generated structure")
        })
    })
}

/// GPipe (all forwards, then all backwards) on every pipeline of a random plan shaped as in
/// [`any_plan`], then up to two random edits: inserting an op or a pair (stages below 7,
/// micro-batches below 4), removing an action or swapping two neighbours. Mostly valid plans, and
/// broken ones close to them.
pub fn edited_gpipe() -> impl Strategy<Value = Plan> {
    (1u32..4, 1usize..4, 1usize..3, 1u32..4).prop_flat_map(|(ranks, s, k, m)| {
        let placement = vec(vec(0..ranks, s), k);
        let edits = vec((0usize..64, 0usize..64, 0u8..4, op(7, 4), op(7, 4)), 0..3);
        (placement, edits).prop_map(move |(placement, edits)| {
            let mut programs = gpipe(ranks, &placement, m);
            for (rank, at, what, x, y) in edits {
                let p = &mut programs[rank % ranks as usize];
                let i = at % (p.len() + 1);
                match what {
                    0 => p.insert(i, Action::One(x)),
                    1 if i < p.len() => {
                        p.remove(i);
                    }
                    2 => p.insert(i, Action::Pair { f: x, b: y }),
                    _ if i + 1 < p.len() => p.swap(i, i + 1),
                    _ => {}
                }
            }
            Plan::new(ranks, pipelines(placement, m), programs).expect("generated structure")
        })
    })
}

/// Textbook 1F1B on `p` ranks with `m` micro-batches, one stage per rank: rank r warms up with
/// min(P − r − 1, M) forwards, then alternates one forward and one backward, then cools down with
/// the backwards left. The plan the benchmarks and the cost-model tests run.
pub fn one_f_one_b(p: u32, m: u32) -> Plan {
    let programs = (0..p)
        .map(|r| {
            let warmup = (p - r - 1).min(m);
            let f = |mb| Action::One(Op::new(r, Kind::F, mb));
            let b = |mb| Action::One(Op::new(r, Kind::B, mb));
            let mut program: Vec<Action> = Vec::with_capacity(2 * m as usize);
            program.extend((0..warmup).map(f));
            for i in 0..m - warmup {
                program.push(f(warmup + i));
                program.push(b(i));
            }
            program.extend((m - warmup..m).map(b));
            program
        })
        .collect();
    Plan::single(p, (0..p).collect(), m, programs).expect("1F1B has a valid structure")
}

/// Each rank's program as one line of comma-separated cells, as the actions format writes it
/// (without the newlines): what tests compare orders with.
pub fn program_lines(plan: &Plan) -> Vec<String> {
    plan.programs()
        .iter()
        .map(|p| {
            p.iter()
                .map(Action::to_string)
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect()
}

/// GPipe's programs on `ranks` ranks for pipelines placed by `placement`, with `m` micro-batches
/// each.
fn gpipe(ranks: u32, placement: &[Vec<u32>], m: u32) -> Vec<Vec<Action>> {
    let mut programs = vec![Vec::new(); ranks as usize];
    let s = placement.first().map_or(0, Vec::len) as u32;
    for (j, p) in (0u32..).zip(placement) {
        let stages = (0..s).zip(p);
        for mb in j * m..(j + 1) * m {
            for (q, &r) in stages.clone() {
                programs[r as usize].push(Action::One(Op::new(j * s + q, Kind::F, mb)));
            }
        }
        for mb in j * m..(j + 1) * m {
            for (q, &r) in stages.clone().rev() {
                programs[r as usize].push(Action::One(Op::new(j * s + q, Kind::B, mb)));
            }
        }
    }
    programs
}

/// The plans the actions format can express, valid schedules or not: 1 to 4 ranks, 1 to 3
/// pipelines of 1 to 3 stages placed at random, 1 to 3 micro-batches each; every stage's forwards
/// on its rank, then up to 11 more ops of any kind inserted at random (some overlapped with a
/// forward of a stage on the same rank).
pub fn expressible_plan() -> impl Strategy<Value = Plan> {
    (1u32..5, 1u32..4, 1u32..4, 1u32..4).prop_flat_map(|(ranks, k, s, m)| {
        let placement = vec(0..ranks, (k * s) as usize);
        let extra = vec(
            (
                0u32..k * s,
                0..KINDS.len(),
                0u32..m,
                any::<bool>(),
                0u32..k * s,
            ),
            0..12,
        );
        let seed = any::<u64>();
        (Just((ranks, k, s, m)), placement, extra, seed).prop_map(
            |((ranks, k, s, m), placement, extra, seed)| {
                let mut programs: Vec<Vec<Action>> = vec![Vec::new(); ranks as usize];
                let mb = |stage: u32, i: u32| stage / s * m + i;
                for stage in 0..k * s {
                    for i in 0..m {
                        let forward = Op::new(stage, Kind::F, mb(stage, i));
                        programs[placement[stage as usize] as usize].push(Action::One(forward));
                    }
                }
                for (stage, kind, i, pair, other) in extra {
                    let kind = KINDS[kind];
                    let rank = placement[stage as usize];
                    let op = Op::new(stage, kind, mb(stage, i));
                    let action =
                        if pair && kind.is_input_backward() && placement[other as usize] == rank {
                            Action::Pair {
                                f: Op::new(other, Kind::F, mb(other, i)),
                                b: op,
                            }
                        } else {
                            Action::One(op)
                        };
                    let program = &mut programs[rank as usize];
                    let at = (seed as usize).wrapping_add(stage as usize) % (program.len() + 1);
                    program.insert(at, action);
                }
                let placement = placement.chunks(s as usize).map(<[u32]>::to_vec).collect();
                Plan::new(ranks, pipelines(placement, m), programs).expect("generated structure")
            },
        )
    })
}

/// `n` pipelines of one stage each on one rank, pipeline j carrying micro-batch j, the rank running
/// `jFj, jBj` for every j: the plan whose pipelines are as many as its micro-batches, where a
/// table by stage and micro-batch id holds n² slots and one by piece of work n.
pub fn one_stage_pipelines(n: u32) -> Plan {
    let pipelines = (0..n)
        .map(|j| Pipeline {
            placement: vec![0],
            microbatches: vec![j],
        })
        .collect();
    let program = (0..n)
        .flat_map(|j| [Kind::F, Kind::B].map(|k| Action::One(Op::new(j, k, j))))
        .collect();
    Plan::new(1, pipelines, vec![program]).expect("a valid structure")
}

/// Valid plans of many pipelines on many ranks: 1 to 64 ranks, 1 to 300 pipelines of 1 to 3
/// stages placed at random, 1 to 3 micro-batches each, their work in one sequential order (each
/// micro-batch through its pipeline and back, pipeline after pipeline), some backwards split into
/// an I and a W right after it, some backwards of a pipeline's first stage overlapped with the
/// forward there of the pipeline's next micro-batch. The shapes where the pipelines, not the
/// micro-batches, are what there are many of.
pub fn many_pipelines() -> impl Strategy<Value = Plan> {
    (1u32..65, 1u32..301, 1u32..4, 1u32..4).prop_flat_map(|(ranks, k, s, m)| {
        let placement = vec(0..ranks, (k * s) as usize);
        let choices = vec(0u8..4, (k * s * m) as usize);
        (Just((ranks, k, s, m)), placement, choices).prop_map(
            |((ranks, k, s, m), placement, choices)| {
                let mut programs: Vec<Vec<Action>> = vec![Vec::new(); ranks as usize];
                let mut choice = choices.into_iter();
                for j in 0..k {
                    // Whether the pipeline's head has run the current micro-batch's forward
                    // already, overlapped with the backward of the one before.
                    let mut head_done = false;
                    for mb in j * m..(j + 1) * m {
                        for q in u32::from(head_done)..s {
                            let stage = j * s + q;
                            let program = &mut programs[placement[stage as usize] as usize];
                            program.push(Action::One(Op::new(stage, Kind::F, mb)));
                        }
                        head_done = false;
                        for q in (0..s).rev() {
                            let stage = j * s + q;
                            let program = &mut programs[placement[stage as usize] as usize];
                            let b = Op::new(stage, Kind::B, mb);
                            match choice.next().unwrap_or(0) {
                                0 => {
                                    program.push(Action::One(Op::new(stage, Kind::I, mb)));
                                    program.push(Action::One(Op::new(stage, Kind::W, mb)));
                                }
                                // The head's forward of the next micro-batch needs no input.
                                1 if q == 0 && mb + 1 < (j + 1) * m => {
                                    let f = Op::new(stage, Kind::F, mb + 1);
                                    program.push(Action::Pair { f, b });
                                    head_done = true;
                                }
                                _ => program.push(Action::One(b)),
                            }
                        }
                    }
                }
                let placement = placement.chunks(s as usize).map(<[u32]>::to_vec).collect();
                Plan::new(ranks, pipelines(placement, m), programs).expect("generated structure")
            },
        )
    })
}
