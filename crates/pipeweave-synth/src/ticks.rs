//! Exact times for proofs. A finite binary floating-point number is m·2^e exactly (m a whole
//! number), so with a tick of 2^e for the least such e over every duration a problem can meet,
//! every duration is a whole number of ticks, and so is every time of every plan (a sum of
//! durations, or the later of two): integers compare them without rounding. The exact method and
//! the claim that a plan meets the lower bound compare times so, and nothing else does.
//!
//! Exact times see differences no cost model means: a spec's B and its I + W, each rounded to
//! 53 bits, differ in their last bit, and a proof that had to tell such plans apart would rarely
//! end. So a proof leaves out only plans shorter by less than its slack, a millionth of the
//! shortest duration (rounded down to whole ticks: none where the shortest is under a million
//! ticks, as with unit costs or any costs of a few binary digits, and then the proof is strict),
//! and says so.
//!
//! There is such a tick only while a problem's times stay within [`MAX_BITS`] bits of it. Costs
//! that span a wider range have none (a forward of 10^-12 beside transfers of 10^12 needs 2^139
//! ticks), and then nothing is claimed proved: floating-point sums prove nothing there either,
//! since at 10^13 the simulator's step is 2^-9 and a forward of 10^-12 adds nothing to a time.

use crate::durations::{Durations, Time};
use crate::greedy::Act;
use crate::problem::{F, Graph, I, NO_NODE, W};
use pipeweave_plan::memory::{self, OutOfMemory};
use pipeweave_sim::CostModel;

/// The most bits a problem's longest possible time may take in ticks: every sum and difference
/// the proofs make stays below 2^127, where `i128` ends.
pub(crate) const MAX_BITS: u32 = 120;

/// The most bits a problem's longest possible time may take for its times to be `i64`s (sums of
/// four such stay below 2^63): the common case, and the faster one for the exact method.
const NARROW_BITS: u32 = 60;

/// Whole numbers of ticks: `i64` where the times fit, `i128` where they need more.
pub(crate) trait Whole: Time + Ord + Eq + std::fmt::Debug {
    /// No time yet (the least value: before every time).
    const UNSET: Self;
    /// `t` in this width, if it fits.
    fn from_ticks(t: i128) -> Option<Self>;
}

impl Whole for i64 {
    const UNSET: i64 = i64::MIN;

    fn from_ticks(t: i128) -> Option<i64> {
        i64::try_from(t).ok()
    }
}

impl Whole for i128 {
    const UNSET: i128 = i128::MIN;

    fn from_ticks(t: i128) -> Option<i128> {
        Some(t)
    }
}

/// A proof's slack is the shortest duration over 2^`SLACK_BITS`.
const SLACK_BITS: u32 = 20;

/// One tick, 2^`exp` of the costs' unit, the shortest duration above zero in ticks, and whether
/// every time fits in an `i64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tick {
    exp: i32,
    shortest: i128,
    narrow: bool,
}

/// The whole number m and the power e with `x` = m·2^e, m odd, for `x` finite and above zero.
fn parts(x: f64) -> Option<(u64, i32)> {
    if !x.is_finite() || x <= 0.0 {
        return None;
    }
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (m, e) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), biased - 1075)
    };
    let zeros = m.trailing_zeros();
    Some((m >> zeros, e + zeros as i32))
}

impl Tick {
    /// The tick of every duration `g` can meet under `costs` (each node's, each transfer, each
    /// overlapped pair a rank can form), if the longest time a plan can have fits in
    /// [`MAX_BITS`] bits of it; `None` when the costs span too wide a range.
    pub fn of<C: CostModel + ?Sized>(g: &Graph, costs: &C) -> Option<Tick> {
        let mut least = i32::MAX;
        let mut longest = 0.0f64;
        let mut shortest = f64::INFINITY;
        let mut see = |d: f64| {
            if let Some((_, e)) = parts(d) {
                least = least.min(e);
                shortest = shortest.min(d);
            }
            longest = longest.max(d);
        };
        for x in 0..g.nodes.len() {
            see(g.cost[x]);
            see(g.whole[x]);
            see(g.transfer[x]);
        }
        if g.pairs {
            for stages in &g.on_rank {
                for &sf in stages {
                    for &sb in stages {
                        let (f, b) = (g.node(sf, 0, F), g.node(sb, 0, I));
                        see(g.pair_cost(costs, f, b, true));
                        see(g.pair_cost(costs, f, b, false));
                    }
                }
            }
        }
        if least == i32::MAX {
            // Every duration is zero.
            return Some(Tick {
                exp: 0,
                shortest: 0,
                narrow: true,
            });
        }
        let mut tick = Tick {
            exp: least,
            shortest: 0,
            narrow: false,
        };
        tick.shortest = tick.ticks(shortest)?;
        // A time is a chain of actions and transfers, each at most the longest duration and at
        // most one of each per node: below 2n of the longest.
        let longest = tick.ticks(longest)?;
        let bits = 128 - longest.leading_zeros();
        let count = 64 - (2 * g.nodes.len() as u64).leading_zeros();
        tick.narrow = bits + count <= NARROW_BITS;
        (bits + count <= MAX_BITS).then_some(tick)
    }

    /// Whether every time fits in an `i64`.
    pub fn narrow(self) -> bool {
        self.narrow
    }

    /// `d` in ticks, or `None` when it is not a whole number of them or needs more than
    /// [`MAX_BITS`] bits.
    pub fn ticks(self, d: f64) -> Option<i128> {
        if d == 0.0 {
            return Some(0);
        }
        let (m, e) = parts(d)?;
        let shift = u32::try_from(e.checked_sub(self.exp)?).ok()?;
        if 64 - m.leading_zeros() + shift > MAX_BITS {
            return None;
        }
        Some(i128::from(m) << shift)
    }

    /// How much shorter than a plan another may be and still be left out of a proof, in ticks:
    /// the shortest duration over 2^20, rounded down (none for costs of a few binary digits).
    pub fn slack(self) -> i128 {
        self.shortest >> SLACK_BITS
    }

    /// [`Tick::slack`] in the costs' unit.
    pub fn slack_time(self) -> f64 {
        // Exact: the slack has at most 100 bits and 2^exp is a power of two in range.
        (self.slack() as f64) * 2f64.powi(self.exp)
    }
}

/// A graph's durations in ticks, as whole numbers of type `T`.
pub(crate) struct Exact<'a, C: ?Sized, T> {
    pub g: &'a Graph,
    costs: &'a C,
    tick: Tick,
    cost: Vec<T>,
    whole: Vec<T>,
    transfer: Vec<T>,
}

impl<C: CostModel + ?Sized, T: Whole> Durations for Exact<'_, C, T> {
    type T = T;

    #[inline]
    fn cost(&self, x: usize) -> T {
        self.cost[x]
    }

    #[inline]
    fn whole(&self, x: usize) -> T {
        self.whole[x]
    }

    #[inline]
    fn transfer(&self, x: usize) -> T {
        self.transfer[x]
    }

    fn pair(&self, f: usize, b: usize, whole: bool) -> Option<T> {
        self.tick
            .ticks(self.g.pair_cost(self.costs, f, b, whole))
            .and_then(T::from_ticks)
    }
}

impl<'a, C: CostModel + ?Sized, T: Whole> Exact<'a, C, T> {
    /// The durations of `g` in ticks of `tick` (`None` if one is not a whole number of them,
    /// which a tick from [`Tick::of`] rules out); an error where they do not fit in memory.
    pub fn new(
        g: &'a Graph,
        costs: &'a C,
        tick: Tick,
    ) -> Result<Option<Exact<'a, C, T>>, OutOfMemory> {
        let table = |of: &[f64]| -> Result<Option<Vec<T>>, OutOfMemory> {
            let mut out = memory::with_capacity(of.len(), "the durations in ticks")?;
            for &d in of {
                let Some(t) = tick.ticks(d).and_then(T::from_ticks) else {
                    return Ok(None);
                };
                out.push(t);
            }
            Ok(Some(out))
        };
        let (Some(cost), Some(whole), Some(transfer)) =
            (table(&g.cost)?, table(&g.whole)?, table(&g.transfer)?)
        else {
            return Ok(None);
        };
        Ok(Some(Exact {
            g,
            costs,
            tick,
            cost,
            whole,
            transfer,
        }))
    }

    /// Whether some duration a plan can meet is zero (a backward, a split part where backwards
    /// split, a forward, a pair a rank can form): an action of no length has no place in an order
    /// by start time, which the exact method's enumeration needs.
    pub fn has_zero(&self) -> bool {
        let g = self.g;
        let zero = T::ZERO;
        let zero_node = (0..g.nodes.len()).any(|x| match x % 3 {
            F => self.cost[x] == zero,
            I => self.whole[x] == zero || (g.weight_split && self.cost[x] == zero),
            _ => g.weight_split && self.cost[x] == zero,
        });
        zero_node
            || (g.pairs
                && g.on_rank.iter().any(|stages| {
                    stages.iter().any(|&sf| {
                        stages.iter().any(|&sb| {
                            let (f, b) = (g.node(sf, 0, F), g.node(sb, 0, I));
                            [true, false].into_iter().any(|whole| {
                                (whole || g.weight_split) && self.pair(f, b, whole) == Some(zero)
                            })
                        })
                    })
                }))
    }

    /// When node `x`'s inputs are all there, given the end of every node placed so far
    /// ([`Whole::UNSET`] for the others), or the node it still waits for: the F before an I (the
    /// I before a W) on its own stage, and the output from the neighbouring stage with its
    /// transfer.
    #[inline]
    pub fn ready(&self, end: &[T], x: usize) -> Result<T, usize> {
        let t = self.ready_or_unset(end, x);
        if t != T::UNSET {
            return Ok(t);
        }
        // The input it waits for: its own stage's first, then its neighbour's.
        Err(if x % 3 != F && end[x - 1] == T::UNSET {
            x - 1
        } else {
            self.g.from[x] as usize
        })
    }

    /// [`Exact::ready`]'s time, or [`Whole::UNSET`] while an input is missing (the exact method's
    /// hot path, where which one does not matter).
    #[inline]
    pub fn ready_or_unset(&self, end: &[T], x: usize) -> T {
        let mut t = T::ZERO;
        if x % 3 != F {
            t = end[x - 1];
            if t == T::UNSET || x % 3 == W {
                return t;
            }
        }
        let from = self.g.from[x];
        if from != NO_NODE {
            let e = end[from as usize];
            if e == T::UNSET {
                return T::UNSET;
            }
            t = t.later(e + self.transfer[x]);
        }
        t
    }

    /// How long an entry takes (`None` for a pair whose duration is not a whole number of ticks,
    /// which a cost model whose pairs depend on the micro-batch could give).
    #[inline]
    pub fn duration(&self, act: Act) -> Option<T> {
        match act {
            Act::One { node, whole: true } => Some(self.whole[node]),
            Act::One { node, .. } => Some(self.cost[node]),
            Act::Pair { f, b, whole } => self.pair(f, b, whole),
        }
    }

    /// The makespan of `programs` in ticks, each entry as early as its rank and its inputs allow
    /// (the simulator's timing, without its rounding), or `None` when they wait on each other for
    /// good or a pair has no duration in ticks; an error where its tables do not fit in memory.
    pub fn makespan(&self, programs: &[Vec<Act>]) -> Result<Option<T>, OutOfMemory> {
        const NOBODY: u32 = u32::MAX;
        let what = "the exact timing's tables";
        let n = self.g.nodes.len();
        let mut end = memory::filled(n, T::UNSET, what)?;
        let mut waiter = memory::filled(n, NOBODY, what)?;
        let mut next = vec![0usize; programs.len()];
        let mut free = vec![T::ZERO; programs.len()];
        let mut runnable: Vec<u32> = (0..programs.len() as u32).rev().collect();
        while let Some(r) = runnable.pop() {
            let r = r as usize;
            while let Some(&act) = programs[r].get(next[r]) {
                let (first, second) = match act {
                    Act::One { node, .. } => (node, None),
                    Act::Pair { f, b, .. } => (f, Some(b)),
                };
                let inputs = self.ready(&end, first).and_then(|t| match second {
                    Some(b) => self.ready(&end, b).map(|u| t.later(u)),
                    None => Ok(t),
                });
                let start = match inputs {
                    Ok(t) => free[r].later(t),
                    Err(missing) => {
                        // A rank waiting on its own later work waits for good.
                        if self.g.nodes[missing].rank as usize == r {
                            return Ok(None);
                        }
                        waiter[missing] = r as u32;
                        break;
                    }
                };
                let Some(duration) = self.duration(act) else {
                    return Ok(None);
                };
                let finish = start + duration;
                let covered: &[usize] = match act {
                    Act::One { node, whole: true } => &[node, node + 1],
                    Act::One { node, .. } => &[node],
                    Act::Pair { f, b, whole: true } => &[f, b, b + 1],
                    Act::Pair { f, b, .. } => &[f, b],
                };
                for &x in covered {
                    end[x] = finish;
                    let w = std::mem::replace(&mut waiter[x], NOBODY);
                    if w != NOBODY {
                        runnable.push(w);
                    }
                }
                free[r] = finish;
                next[r] += 1;
            }
        }
        Ok((0..programs.len())
            .all(|r| next[r] == programs[r].len())
            .then(|| free.iter().copied().fold(T::ZERO, T::later)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::Placement;
    use crate::problem::fixtures::{PLACEMENTS, small};
    use pipeweave_sim::{StageCosts, UniformCosts, UnitCosts};

    fn uniform(f: f64, transfer: f64) -> UniformCosts {
        UniformCosts {
            stage: StageCosts {
                f,
                ..StageCosts::UNIT
            },
            pair: None,
            transfer,
        }
    }

    #[test]
    fn a_tick_divides_every_duration() {
        assert_eq!(parts(1.0), Some((1, 0)));
        assert_eq!(parts(0.75), Some((3, -2)));
        assert_eq!(parts(6.0), Some((3, 1)));
        assert_eq!(parts(f64::MIN_POSITIVE / 4.0), Some((1, -1024)));
        assert_eq!(parts(0.0), None);
        let g = Graph::new(&small(Placement::Bidirectional, 5), &uniform(0.25, 1.5)).unwrap();
        let tick = Tick::of(&g, &uniform(0.25, 1.5)).unwrap();
        assert_eq!(tick.exp, -2);
        assert_eq!(tick.ticks(1.5), Some(6));
        assert_eq!(tick.ticks(0.125), None);
        assert_eq!((tick.slack(), tick.slack_time()), (0, 0.0));
        // 0.1 is a whole number of ticks of 2^-55, and sums of it stay well within 120 bits; its
        // proofs leave out what is shorter by less than a millionth of it.
        let tenths = uniform(0.1, 0.3);
        let g = Graph::new(&small(Placement::Bidirectional, 5), &tenths).unwrap();
        let tick = Tick::of(&g, &tenths).unwrap();
        assert_eq!(tick.exp, -55);
        assert!((tick.slack_time() - 0.1 / f64::from(1 << 20)).abs() < 1e-16);
    }

    /// The audit's costs, a forward of 10^-12 beside transfers of 10^12, have no tick: the times
    /// of P = 4, M = 8 would need some 2^140 of one.
    #[test]
    fn costs_twenty_four_orders_apart_have_no_tick() {
        let costs = uniform(1e-12, 1e12);
        let g = Graph::new(&small(Placement::Bidirectional, 5), &costs).unwrap();
        assert_eq!(Tick::of(&g, &costs), None);
        let costs = uniform(1.0, 1e9);
        let g = Graph::new(&small(Placement::Bidirectional, 5), &costs).unwrap();
        assert_eq!(Tick::of(&g, &costs).map(Tick::slack), Some(0));
    }

    /// Under costs the floating-point sums keep exact, the ticks time every construction as the
    /// simulator does.
    #[test]
    fn ticks_time_plans_as_the_simulator_does() {
        for placement in PLACEMENTS {
            let g = Graph::new(&small(placement, u32::MAX / 4), &UnitCosts).unwrap();
            let tick = Tick::of(&g, &UnitCosts).unwrap();
            assert!(tick.narrow());
            let exact = Exact::<_, i64>::new(&g, &UnitCosts, tick).unwrap().unwrap();
            for policy in crate::greedy::policies(&g) {
                let programs = crate::greedy::schedule(&g, &policy, &UnitCosts)
                    .unwrap()
                    .unwrap();
                let (_, score) = crate::assess::assess(&g, &programs, &UnitCosts)
                    .unwrap()
                    .unwrap();
                let ticks = exact.makespan(&programs).unwrap().unwrap();
                assert_eq!(
                    tick.ticks(score.makespan),
                    Some(i128::from(ticks)),
                    "{placement:?}"
                );
            }
        }
    }
}
