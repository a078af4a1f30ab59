//! Local improvement over the simulator: from a plan, try small changes to one rank's program
//! (move an action a few places, split or join an overlapped pair, split or join a backward's I
//! and W), keep every change that is no worse, remember the best. Each try is checked against the
//! memory limit and timed as the simulator times it (`timing.rs`, which finds deadlocks too); the
//! best plan found is validated and simulated before it is returned, so every plan a search
//! returns is a valid one.
//!
//! Deterministic: the changes come from a generator seeded by the caller, and the search stops
//! after a number of tries; a caller's stop (a time limit) is the only thing that can make two runs
//! differ.

use crate::assess::{Score, assess, program_fits};
use crate::footprint;
use crate::greedy::Act;
use crate::problem::{F, Graph, I};
use crate::timing;
use pipeweave_check::ValidPlan;
use pipeweave_plan::memory::OutOfMemory;
use pipeweave_sim::CostModel;

/// How far an action moves at most, in places of its rank's program.
const WINDOW: u32 = 6;

/// Where a search stands, as it reports to its caller.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Plans tried so far.
    pub evaluations: u64,
    /// The best score so far.
    pub best: Score,
}

/// The (stage-micro-batch unit, slot) pairs an entry covers.
fn units(act: Act) -> [Option<(usize, usize)>; 3] {
    let u = |x: usize| Some((x / 3, x % 3));
    match act {
        Act::One { node, whole: true } => [u(node), u(node + 1), None],
        Act::One { node, .. } => [u(node), None, None],
        Act::Pair { f, b, whole } => [u(f), u(b), if whole { u(b + 1) } else { None }],
    }
}

/// Whether two entries touch the same stage and micro-batch (and so must keep their order).
fn linked(a: Act, b: Act) -> bool {
    let ua = units(a);
    units(b)
        .iter()
        .flatten()
        .any(|(x, _)| ua.iter().flatten().any(|(y, _)| x == y))
}

/// A change to one rank's program, or `None` when the drawn change does not apply.
pub(crate) fn change(g: &Graph, program: &[Act], rng: &mut oorandom::Rand32) -> Option<Vec<Act>> {
    let n = program.len() as u32;
    if n < 2 {
        return None;
    }
    let kind = rng.rand_range(0..10);
    let i = rng.rand_range(0..n) as usize;
    let mut out = program.to_vec();
    match kind {
        // Split or join an overlapped pair.
        0 | 1 if g.pairs => match program[i] {
            Act::Pair { f, b, whole } => {
                let (x, y) = (
                    Act::One {
                        node: f,
                        whole: false,
                    },
                    Act::One { node: b, whole },
                );
                let (x, y) = if kind == 0 { (x, y) } else { (y, x) };
                out[i] = x;
                out.insert(i + 1, y);
                Some(out)
            }
            Act::One { node, whole } if i + 1 < program.len() => {
                let Act::One {
                    node: other,
                    whole: other_whole,
                } = program[i + 1]
                else {
                    return None;
                };
                let (f, b, w) = match (node % 3, other % 3) {
                    (F, I) => (node, other, other_whole),
                    (I, F) => (other, node, whole),
                    _ => return None,
                };
                if f / 3 == b / 3 {
                    return None;
                }
                out[i] = Act::Pair { f, b, whole: w };
                out.remove(i + 1);
                Some(out)
            }
            _ => None,
        },
        // Split a whole backward into I and W, or join an I with the W right after it.
        2 if g.weight_split => match program[i] {
            Act::One { node, whole: true } => {
                out[i] = Act::One { node, whole: false };
                out.insert(
                    i + 1,
                    Act::One {
                        node: node + 1,
                        whole: false,
                    },
                );
                Some(out)
            }
            Act::Pair { f, b, whole: true } => {
                out[i] = Act::Pair { f, b, whole: false };
                out.insert(
                    i + 1,
                    Act::One {
                        node: b + 1,
                        whole: false,
                    },
                );
                Some(out)
            }
            Act::One { node, whole: false } if node % 3 == I => (program.get(i + 1)
                == Some(&Act::One {
                    node: node + 1,
                    whole: false,
                }))
            .then(|| {
                out[i] = Act::One { node, whole: true };
                out.remove(i + 1);
                out
            }),
            Act::Pair { f, b, whole: false } => (program.get(i + 1)
                == Some(&Act::One {
                    node: b + 1,
                    whole: false,
                }))
            .then(|| {
                out[i] = Act::Pair { f, b, whole: true };
                out.remove(i + 1);
                out
            }),
            _ => None,
        },
        // Move one entry a few places, never past an entry of the same stage and micro-batch.
        _ => {
            let d = rng.rand_range(1..WINDOW + 1) as usize;
            let a = program[i];
            let j = if rng.rand_range(0..2) == 0 {
                i.checked_sub(d)?
            } else {
                (i + d).min(program.len() - 1)
            };
            if j == i {
                return None;
            }
            let (lo, hi) = if j < i { (j, i) } else { (i + 1, j + 1) };
            if program[lo..hi].iter().any(|&b| linked(a, b)) {
                return None;
            }
            let a = out.remove(i);
            out.insert(j, a);
            Some(out)
        }
    }
}

/// Where two programs first differ (the shorter one's length if one is the other's start).
pub(crate) fn first_difference(a: &[Act], b: &[Act]) -> usize {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()))
}

/// What a local search ends with: the best programs, their plan and score, and the tries made.
pub(crate) type Improved = (Vec<Vec<Act>>, ValidPlan, Score, u64);

/// Improves `programs` (whose plan and score are `start`) for at most `budget` tries, seeded by
/// `seed`; `report` is called every 64 tries and stops the search by returning false. An error
/// where its tables do not fit in memory (they are all asked for before the first try).
pub(crate) fn improve<C: CostModel + ?Sized>(
    g: &Graph,
    mut programs: Vec<Vec<Act>>,
    start: (ValidPlan, Score),
    costs: &C,
    seed: u64,
    budget: u64,
    report: &mut dyn FnMut(Progress) -> bool,
) -> Result<Improved, OutOfMemory> {
    let what = "the local search's programs";
    let mut rng = oorandom::Rand32::new(seed);
    let (start_plan, start_score) = start;
    let mut best = start_score;
    let mut best_programs = footprint::copy(g, &programs, what)?;
    let start_programs = footprint::copy(g, &programs, what)?;
    let mut improved = false;
    let mut current = best;
    let mut evaluations = 0u64;
    let mut scratch = timing::Scratch::with_room(g)?;
    let (mut timed, mut undo) = (timing::Timed::with_room(g)?, timing::Undo::with_room(g)?);
    if timing::score(g, &programs, costs, &mut timed, &mut scratch).is_none() {
        return Ok((programs, start_plan, start_score, 0));
    }
    let ranks = programs.len() as u32;
    while evaluations < budget {
        if evaluations.is_multiple_of(64) && !report(Progress { evaluations, best }) {
            break;
        }
        let r = rng.rand_range(0..ranks) as usize;
        let Some(changed) = change(g, &programs[r], &mut rng) else {
            evaluations += 1;
            continue;
        };
        evaluations += 1;
        let old = std::mem::replace(&mut programs[r], changed);
        if !program_fits(g, r, &programs[r]) {
            programs[r] = old;
            continue;
        }
        let from = first_difference(&old, &programs[r]);
        let tried = timing::retime(
            g,
            &programs,
            costs,
            (r, from),
            &mut timed,
            &mut undo,
            &mut scratch,
        );
        match tried {
            Some(score) if score.ties_or_beats(&current) => {
                current = score;
                if score.beats(&best) {
                    best = score;
                    best_programs.clone_from(&programs);
                    improved = true;
                }
            }
            _ => {
                timing::restore(&mut timed, &mut undo);
                programs[r] = old;
            }
        }
    }
    if !improved {
        return Ok((best_programs, start_plan, start_score, evaluations));
    }
    // The best is kept only as the validator and the simulator see it (the timing here is the
    // simulator's, and a change never breaks what the validator checks, so this is the rule's
    // guard, not a filter).
    Ok(match assess(g, &best_programs, costs)? {
        Some((plan, score)) => (best_programs, plan, score, evaluations),
        None => {
            debug_assert!(false, "a plan the local search kept does not validate");
            (start_programs, start_plan, start_score, evaluations)
        }
    })
}
