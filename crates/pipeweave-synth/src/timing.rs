//! The simulator's timing on the work graph itself, for the local search's tries: each entry of a
//! rank's program starts when the rank is free and its inputs are there (with their transfers),
//! exactly as `pipeweave_sim` times a plan, but without making a plan, validating and lowering
//! it. A try that beats the best so far still goes through the validator and the simulator
//! (`assess.rs`) before it is kept, so every plan a search returns was checked by them.
//!
//! Event-driven: a rank runs until an input is missing, then waits on that node and is woken when
//! it ends, so a try costs one visit per entry whatever the shape of the plan.

use crate::assess::Score;
use crate::greedy::Act;
use crate::problem::{F, Graph, I, NO_NODE, W};
use pipeweave_plan::memory::{self, OutOfMemory};
use pipeweave_sim::CostModel;

/// No rank waits on the node.
const NOBODY: u32 = u32::MAX;

/// Tables kept between tries.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    waiter: Vec<u32>,
    runnable: Vec<u32>,
}

/// A timed plan: when each node ends, and when each entry of each rank's program starts and
/// ends, for the entries run so far.
#[derive(Debug, Default, Clone)]
pub(crate) struct Timed {
    end: Vec<f64>,
    starts: Vec<Vec<f64>>,
    finishes: Vec<Vec<f64>>,
}

/// What a retiming overwrote, to put back when the try is refused: node ends, and for each rank
/// run again the entries it kept and the times of the others (starts, then finishes, in `times`).
#[derive(Debug, Default)]
pub(crate) struct Undo {
    ends: Vec<(usize, f64)>,
    tails: Vec<(usize, usize, usize)>,
    times: Vec<f64>,
}

impl Scratch {
    /// Scratch tables with room for `g` (so that no try allocates them).
    pub(crate) fn with_room(g: &Graph) -> Result<Scratch, OutOfMemory> {
        let what = "the local search's timing";
        Ok(Scratch {
            waiter: memory::with_capacity(g.nodes.len(), what)?,
            runnable: memory::with_capacity(g.ranks as usize, what)?,
        })
    }
}

impl Timed {
    /// Times with room for every plan of `g`: each rank's for one entry per operation it hosts.
    pub(crate) fn with_room(g: &Graph) -> Result<Timed, OutOfMemory> {
        let what = "the local search's timing";
        let mut timed = Timed {
            end: memory::with_capacity(g.nodes.len(), what)?,
            starts: memory::with_capacity(g.ranks as usize, what)?,
            finishes: memory::with_capacity(g.ranks as usize, what)?,
        };
        for stages in &g.on_rank {
            let most = stages.len() * g.per_pipeline as usize * 3;
            timed.starts.push(memory::with_capacity(most, what)?);
            timed.finishes.push(memory::with_capacity(most, what)?);
        }
        Ok(timed)
    }
}

impl Undo {
    /// Room for what a retiming of `g` can overwrite: every node's end, every entry's times.
    pub(crate) fn with_room(g: &Graph) -> Result<Undo, OutOfMemory> {
        let what = "the local search's timing";
        Ok(Undo {
            ends: memory::with_capacity(g.nodes.len(), what)?,
            tails: memory::with_capacity(g.ranks as usize, what)?,
            times: memory::with_capacity(2 * g.nodes.len(), what)?,
        })
    }
}

/// When node `x` may start on its rank, or the node it still waits for.
#[inline]
fn ready(g: &Graph, end: &[f64], x: usize) -> Result<f64, usize> {
    let mut t: f64 = 0.0;
    match x % 3 {
        W => {
            let i = end[x - 1];
            return if i.is_nan() { Err(x - 1) } else { Ok(i) };
        }
        I => {
            let own = end[x - 1];
            if own.is_nan() {
                return Err(x - 1);
            }
            t = own;
        }
        _ => debug_assert_eq!(x % 3, F),
    }
    let from = g.from[x];
    if from != NO_NODE {
        let e = end[from as usize];
        if e.is_nan() {
            return Err(from as usize);
        }
        t = t.max(e + g.transfer[x]);
    }
    Ok(t)
}

/// The nodes an entry runs (the first `n` of the array).
#[inline(always)]
fn nodes(act: Act) -> ([usize; 3], usize) {
    match act {
        Act::One { node, whole } => ([node, node + 1, 0], 1 + usize::from(whole)),
        Act::Pair { f, b, whole } => ([f, b, b + 1], 2 + usize::from(whole)),
    }
}

/// The score of `programs` as the simulator would time them, or `None` when they deadlock;
/// `timed` keeps the times for [`retime`].
pub(crate) fn score<C: CostModel + ?Sized>(
    g: &Graph,
    programs: &[Vec<Act>],
    costs: &C,
    timed: &mut Timed,
    s: &mut Scratch,
) -> Option<Score> {
    timed.end.clear();
    timed.end.resize(g.nodes.len(), f64::NAN);
    timed.starts.resize(programs.len(), Vec::new());
    timed.finishes.resize(programs.len(), Vec::new());
    for (a, b) in timed.starts.iter_mut().zip(&mut timed.finishes) {
        a.clear();
        b.clear();
    }
    run(g, programs, costs, timed, s)
}

/// The score of `programs`, which differ from the programs `timed` holds the times of only on
/// rank `r` from entry `from` on: everything that started before that rank's entry `from` could
/// start keeps its times (nothing it waited for changed), the rest is run again. `undo` records
/// what changed, for [`restore`].
pub(crate) fn retime<C: CostModel + ?Sized>(
    g: &Graph,
    programs: &[Vec<Act>],
    costs: &C,
    (r, from): (usize, usize),
    timed: &mut Timed,
    undo: &mut Undo,
    s: &mut Scratch,
) -> Option<Score> {
    undo.ends.clear();
    undo.tails.clear();
    undo.times.clear();
    let from = from.min(timed.starts[r].len());
    let cut = if from == 0 {
        0.0
    } else {
        timed.finishes[r][from - 1]
    };
    for (q, program) in programs.iter().enumerate() {
        let starts = &timed.starts[q];
        let mut keep = starts.partition_point(|&t| t < cut);
        if q == r {
            keep = keep.min(from);
        }
        if keep == starts.len() && q != r {
            continue;
        }
        for &act in &program[keep..] {
            let (xs, n) = nodes(act);
            for &x in &xs[..n] {
                undo.ends.push((x, timed.end[x]));
                timed.end[x] = f64::NAN;
            }
        }
        let len = timed.starts[q].len();
        undo.tails.push((q, keep, len));
        undo.times.extend_from_slice(&timed.starts[q][keep..]);
        undo.times.extend_from_slice(&timed.finishes[q][keep..]);
        timed.starts[q].truncate(keep);
        timed.finishes[q].truncate(keep);
    }
    run(g, programs, costs, timed, s)
}

/// Puts back what the last [`retime`] changed.
pub(crate) fn restore(timed: &mut Timed, undo: &mut Undo) {
    for &(x, end) in &undo.ends {
        timed.end[x] = end;
    }
    let mut at = 0;
    for &(q, keep, len) in &undo.tails {
        let n = len - keep;
        timed.starts[q].truncate(keep);
        timed.starts[q].extend_from_slice(&undo.times[at..at + n]);
        timed.finishes[q].truncate(keep);
        timed.finishes[q].extend_from_slice(&undo.times[at + n..at + 2 * n]);
        at += 2 * n;
    }
}

/// Runs every rank on from the entries `timed` has times for.
fn run<C: CostModel + ?Sized>(
    g: &Graph,
    programs: &[Vec<Act>],
    costs: &C,
    timed: &mut Timed,
    s: &mut Scratch,
) -> Option<Score> {
    let ranks = programs.len();
    s.waiter.clear();
    s.waiter.resize(g.nodes.len(), NOBODY);
    s.runnable.clear();
    s.runnable.extend((0..ranks as u32).rev());
    while let Some(r) = s.runnable.pop() {
        let r = r as usize;
        let program = &programs[r];
        let (starts, finishes) = (&mut timed.starts[r], &mut timed.finishes[r]);
        let mut free = finishes.last().copied().unwrap_or(0.0);
        while let Some(&act) = program.get(starts.len()) {
            let (first, second) = match act {
                Act::One { node, .. } => (node, None),
                Act::Pair { f, b, .. } => (f, Some(b)),
            };
            let inputs = ready(g, &timed.end, first).and_then(|t| match second {
                Some(b) => ready(g, &timed.end, b).map(|u| t.max(u)),
                None => Ok(t),
            });
            let start = match inputs {
                Ok(t) => free.max(t),
                Err(missing) => {
                    // A rank waiting on its own later work waits for good.
                    if g.nodes[missing].rank as usize == r {
                        return None;
                    }
                    s.waiter[missing] = r as u32;
                    break;
                }
            };
            let end = start
                + match act {
                    Act::One { node, whole } => {
                        if whole {
                            g.whole[node]
                        } else {
                            g.cost[node]
                        }
                    }
                    Act::Pair { f, b, whole } => g.pair_cost(costs, f, b, whole),
                };
            let (xs, n) = nodes(act);
            for &x in &xs[..n] {
                timed.end[x] = end;
                let w = std::mem::replace(&mut s.waiter[x], NOBODY);
                if w != NOBODY {
                    s.runnable.push(w);
                }
            }
            starts.push(start);
            finishes.push(end);
            free = end;
        }
    }
    if (0..ranks).any(|r| timed.starts[r].len() < programs[r].len()) {
        return None;
    }
    let last = |r: usize| timed.finishes[r].last().copied().unwrap_or(0.0);
    Some(Score {
        makespan: (0..ranks).map(last).fold(0.0, f64::max),
        spread: (0..ranks).map(last).sum(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assess::assess;
    use crate::local::first_difference;
    use crate::problem::fixtures::{PLACEMENTS, small};
    use pipeweave_sim::{StageCosts, UniformCosts};

    /// Along random walks of the local search's changes, valid or not, the timing here, retimed
    /// from the change on, is the simulator's to the bit, and a plan it cannot time is one the
    /// validator refuses.
    #[test]
    fn equals_the_simulator_along_random_changes() {
        let costs = UniformCosts {
            stage: StageCosts {
                f: 1.0,
                i: 1.5,
                w: 0.5,
                b: 2.0,
            },
            pair: Some(2.25),
            transfer: 0.25,
        };
        let mut scratch = Scratch::default();
        let (mut timed, mut undo) = (Timed::default(), Undo::default());
        let (mut agreed, mut refused) = (0, 0);
        for placement in PLACEMENTS {
            let g = Graph::new(&small(placement, u32::MAX / 4), &costs).unwrap();
            let policy = crate::greedy::policies(&g)[0];
            let mut programs = crate::greedy::schedule(&g, &policy, &costs)
                .unwrap()
                .unwrap();
            score(&g, &programs, &costs, &mut timed, &mut scratch).unwrap();
            let mut rng = oorandom::Rand32::new(7);
            for _ in 0..3000 {
                let r = rng.rand_range(0..4) as usize;
                let Some(changed) = crate::local::change(&g, &programs[r], &mut rng) else {
                    continue;
                };
                let from = first_difference(&programs[r], &changed);
                let old = std::mem::replace(&mut programs[r], changed);
                let fast = retime(
                    &g,
                    &programs,
                    &costs,
                    (r, from),
                    &mut timed,
                    &mut undo,
                    &mut scratch,
                );
                let mut again = Timed::default();
                assert_eq!(fast, score(&g, &programs, &costs, &mut again, &mut scratch));
                match assess(&g, &programs, &costs).unwrap() {
                    Some((_, exact)) => {
                        agreed += 1;
                        assert_eq!(
                            fast.map(|s| s.makespan.to_bits()),
                            Some(exact.makespan.to_bits())
                        );
                        assert_eq!(fast.map(|s| s.spread), Some(exact.spread));
                    }
                    None => {
                        refused += 1;
                        assert_eq!(fast, None, "{placement:?}");
                        // Walk on from the plan before, as the local search does.
                        restore(&mut timed, &mut undo);
                        programs[r] = old;
                    }
                }
            }
        }
        assert!(
            agreed > 1000 && refused > 10,
            "{agreed} agreed, {refused} refused"
        );
    }
}
