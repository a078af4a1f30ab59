//! The second constructive method: periodic schedules built from one block, after Qi et al.,
//! "Pipeline Parallelism with Controllable Memory" (2024). One micro-batch of each pipeline is
//! placed in time, each of its operations as early as its inputs allow at a time that is free on
//! its rank modulo a period T; micro-batch k then repeats the block k·T later. Since the block
//! never collides with itself modulo T, every rank's steady state is a repeating pattern without
//! waits beyond the period's slack, and a rank's memory is the block's activation lifespans over
//! T: a longer period trades time for memory, which is how the search meets a tight limit (the
//! list scheduler of `greedy.rs` fills a tight rank in bursts and stalls behind it instead).
//!
//! Each rank's program is its operations sorted by their planned start; the simulator then runs
//! them as early as they can, never later than planned.

use crate::greedy::Act;
use crate::problem::{F, Graph, I, W};
use pipeweave_plan::memory::{self, OutOfMemory};

/// The busy intervals of one rank modulo the period.
struct Table {
    busy: Vec<(f64, f64)>,
}

impl Table {
    /// Whether `[t, t + c)` modulo `period` is free.
    fn free(&self, t: f64, c: f64, period: f64, eps: f64) -> bool {
        let a = t.rem_euclid(period);
        let pieces = if a + c <= period + eps {
            [(a, a + c), (0.0, 0.0)]
        } else {
            [(a, period), (0.0, a + c - period)]
        };
        pieces.iter().filter(|(x, y)| y - x > eps).all(|&(x, y)| {
            self.busy
                .iter()
                .all(|&(bx, by)| by <= x + eps || bx >= y - eps)
        })
    }

    fn take(&mut self, t: f64, c: f64, period: f64) {
        let a = t.rem_euclid(period);
        if a + c <= period {
            self.busy.push((a, a + c));
        } else {
            self.busy.push((a, period));
            self.busy.push((0.0, a + c - period));
        }
    }

    /// The earliest `t ≥ ready` at which `[t, t + c)` is free modulo `period`, if any: `ready`
    /// itself or the end of a busy interval.
    fn earliest(&self, ready: f64, c: f64, period: f64, eps: f64) -> Option<f64> {
        if c > period + eps {
            return None;
        }
        if self.free(ready, c, period, eps) {
            return Some(ready);
        }
        let base = ready - ready.rem_euclid(period);
        self.busy
            .iter()
            .flat_map(|&(_, end)| [base + end, base + end + period])
            .filter(|&t| t > ready && self.free(t, c, period, eps))
            .min_by(f64::total_cmp)
    }
}

/// The block: for the first micro-batch of each pipeline, the planned start of each node it
/// runs (F, I, and W unless backwards run whole), or `None` when some operation finds no free
/// time modulo `period` (the period is shorter than a rank's work).
fn block(g: &Graph, period: f64, whole: bool) -> Option<Vec<(usize, f64)>> {
    let eps = 1e-9 * period.max(1.0);
    let mut tables: Vec<Table> = (0..g.ranks).map(|_| Table { busy: Vec::new() }).collect();
    let mut end = vec![f64::NAN; g.nodes.len()];
    let mut placed = Vec::new();
    let s_per = g.pipelines[0].placement.len() as u32;
    let mut put = |x: usize, c: f64, ready: f64, end: &mut Vec<f64>| -> Option<()> {
        let r = g.nodes[x].rank as usize;
        let t = tables[r].earliest(ready, c, period, eps)?;
        tables[r].take(t, c, period);
        end[x] = t + c;
        placed.push((x, t));
        Some(())
    };
    for j in 0..g.pipelines.len() as u32 {
        let stages = j * s_per..(j + 1) * s_per;
        for s in stages.clone() {
            let x = g.node(s, 0, F);
            let ready = g.ready(&end, x)?;
            put(x, g.cost[x], ready, &mut end)?;
        }
        for s in stages.clone().rev() {
            let x = g.node(s, 0, I);
            let ready = g.ready(&end, x)?;
            let c = if whole { g.whole[x] } else { g.cost[x] };
            put(x, c, ready, &mut end)?;
        }
        if !whole {
            for s in stages.rev() {
                let x = g.node(s, 0, W);
                put(x, g.cost[x], end[x - 1], &mut end)?;
            }
        }
    }
    Some(placed)
}

/// The most work one block puts on a rank: the shortest period a block can have.
pub(crate) fn shortest_period(g: &Graph, whole: bool) -> f64 {
    let mut work = vec![0.0; g.ranks as usize];
    for s in 0..g.stages {
        let r = g.nodes[g.node(s, 0, F)].rank as usize;
        let f = g.node(s, 0, F);
        work[r] += g.cost[f]
            + if whole {
                g.whole[f + 1]
            } else {
                g.cost[f + 1] + g.cost[f + 2]
            };
    }
    work.into_iter().fold(0.0, f64::max)
}

/// Every rank's program of the periodic schedule with period `period` (backwards whole or split
/// into I and W), or `None` when no block fits the period; an error where its tables do not fit in
/// memory.
pub(crate) fn schedule(
    g: &Graph,
    period: f64,
    whole: bool,
) -> Result<Option<Vec<Vec<Act>>>, OutOfMemory> {
    let what = "the periodic schedule's tables";
    let Some(placed) = block(g, period, whole) else {
        return Ok(None);
    };
    let mut timed: Vec<Vec<(f64, u32, usize, Act)>> =
        memory::with_capacity(g.ranks as usize, what)?;
    for stages in &g.on_rank {
        timed.push(memory::with_capacity(
            stages.len() * g.per_pipeline as usize * 3,
            what,
        )?);
    }
    for k in 0..g.per_pipeline {
        for (pos, &(x, t)) in placed.iter().enumerate() {
            let (s, _, slot) = g.parts(x);
            let node = g.node(s, k, slot);
            let act = Act::One {
                node,
                whole: whole && slot == I,
            };
            timed[g.nodes[x].rank as usize].push((t + f64::from(k) * period, k, pos, act));
        }
    }
    let mut programs = crate::footprint::programs(g, what)?;
    for (program, mut ops) in programs.iter_mut().zip(timed) {
        ops.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        program.extend(ops.into_iter().map(|o| o.3));
    }
    Ok(Some(programs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assess::assess;
    use crate::problem::Placement;
    use crate::problem::fixtures::{PLACEMENTS, small};
    use pipeweave_sim::{UnitCosts, live_activations};

    fn graph(placement: Placement, limit: u32) -> Graph {
        Graph::new(&small(placement, limit), &UnitCosts).unwrap()
    }

    /// With unit costs and whole backwards, the block at the shortest period is 1F1B's: each
    /// rank's micro-batch every F + B, makespan (M + P − 1)(F + B), P − r activations on rank r.
    #[test]
    fn the_shortest_block_of_a_loop_is_one_f_one_b() {
        let g = graph(Placement::Loop { v: 1 }, 4);
        assert_eq!(shortest_period(&g, true), 3.0);
        let programs = schedule(&g, 3.0, true).unwrap().unwrap();
        let (plan, score) = assess(&g, &programs, &UnitCosts).unwrap().unwrap();
        assert_eq!(score.makespan, 33.0);
        let peaks: Vec<u32> = (0..4)
            .map(|r| live_activations(plan.plan().program(r)).peak)
            .collect();
        assert_eq!(peaks, [4, 3, 2, 1]);
    }

    /// A longer period holds fewer micro-batches at once, and every block that packs gives a
    /// valid plan of every placement.
    #[test]
    fn a_longer_period_trades_time_for_memory() {
        for placement in PLACEMENTS {
            let g = graph(placement, u32::MAX / 4);
            for whole in [false, true] {
                let shortest = shortest_period(&g, whole);
                let peaks: Vec<u32> = (0..=96)
                    .filter_map(|step| {
                        let period = shortest * (1.0 + f64::from(step) / 32.0);
                        let programs = schedule(&g, period, whole).unwrap()?;
                        let (plan, _) = assess(&g, &programs, &UnitCosts).unwrap().unwrap();
                        (0..4)
                            .map(|r| live_activations(plan.plan().program(r)).peak)
                            .max()
                    })
                    .collect();
                assert!(peaks.len() > 48, "{placement:?} whole {whole}: {peaks:?}");
                let (short, long) = (peaks[0], peaks[peaks.len() - 1]);
                assert!(
                    long < short,
                    "{placement:?} whole {whole}: {long} against {short}"
                );
            }
        }
        assert!(
            schedule(&graph(Placement::V, 8), 1.0, false)
                .unwrap()
                .is_none()
        );
    }
}
