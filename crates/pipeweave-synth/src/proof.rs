//! What a synthesis can prove about its plan, in exact times (`ticks.rs`): that it meets the
//! lower bound, and the exact method's search, each up to the ticks' slack. The tick tables and
//! the exact bounds are built when a proof needs them and dropped after, so a plan clearly above
//! the bound costs nothing more, and a large one holds them only while they are used.

use crate::bound::Bounds;
use crate::exact::{self, ExactEnd, Searched};
use crate::greedy::Act;
use crate::problem::Graph;
use crate::ticks::{Exact, Tick, Whole};
use pipeweave_plan::memory::OutOfMemory;
use pipeweave_sim::CostModel;

/// How far above the floating-point bound a floating-point makespan is surely above the exact
/// one: floating-point sums of a plan's durations are off by far less than a millionth.
const CLEARLY_ABOVE: f64 = 1e-6;

/// The durations in ticks and the bounds in them, with the slack, as whole numbers of type `T`.
struct Tables<'a, C: ?Sized, T> {
    exact: Exact<'a, C, T>,
    bounds: Bounds<T>,
    root: T,
    slack: T,
}

/// The proofs of one synthesis.
pub(crate) struct Proof<'a, C: ?Sized> {
    g: &'a Graph,
    costs: &'a C,
    /// The lower bound in floating point.
    float_bound: f64,
    tick: Option<Tick>,
}

impl<'a, C: CostModel + ?Sized> Proof<'a, C> {
    /// The proofs of `g` under `costs`, whose floating-point lower bound is `float_bound`.
    pub fn new(g: &'a Graph, costs: &'a C, float_bound: f64) -> Proof<'a, C> {
        Proof {
            g,
            costs,
            float_bound,
            tick: Tick::of(g, costs),
        }
    }

    /// Whether times can be compared exactly.
    pub fn exact_arithmetic(&self) -> bool {
        self.tick.is_some()
    }

    /// How much shorter than the plan another may be and still be left out of a proof, in the
    /// costs' unit (0: the proofs are strict).
    pub fn slack(&self) -> f64 {
        self.tick.map_or(0.0, Tick::slack_time)
    }

    /// The tables in `T` (`None` without a tick, or where a pair has no whole number of
    /// them).
    fn tables<T: Whole>(&self) -> Result<Option<Tables<'a, C, T>>, OutOfMemory> {
        let Some(tick) = self.tick else {
            return Ok(None);
        };
        let Some(slack) = T::from_ticks(tick.slack()) else {
            return Ok(None);
        };
        let Some(exact) = Exact::new(self.g, self.costs, tick)? else {
            return Ok(None);
        };
        let Some(bounds) = Bounds::new(self.g, &exact)? else {
            return Ok(None);
        };
        let root = bounds.root(self.g);
        Ok(Some(Tables {
            exact,
            bounds,
            root,
            slack,
        }))
    }

    /// Whether `programs`, of floating-point makespan `makespan`, meet the lower bound in exact
    /// times, up to the slack (so no plan is shorter by more).
    pub fn meets_bound(&self, programs: &[Vec<Act>], makespan: f64) -> Result<bool, OutOfMemory> {
        if makespan > self.float_bound * (1.0 + CLEARLY_ABOVE) {
            return Ok(false);
        }
        match self.tick {
            None => Ok(false),
            Some(tick) if tick.narrow() => self.meets::<i64>(programs),
            Some(_) => self.meets::<i128>(programs),
        }
    }

    fn meets<T: Whole>(&self, programs: &[Vec<Act>]) -> Result<bool, OutOfMemory> {
        let Some(t) = self.tables::<T>()? else {
            return Ok(false);
        };
        Ok(t.exact
            .makespan(programs)?
            .is_some_and(|m| m <= t.root + t.slack))
    }

    /// The exact method, searching for a plan shorter than `programs` in exact times: why it
    /// ended, the nodes it visited, and the programs of the shortest plan it found if shorter.
    /// In `i64` where every time fits, which is quicker, else in `i128`.
    pub fn exact(
        &self,
        programs: &[Vec<Act>],
        node_limit: u64,
        go_on: &mut dyn FnMut(u64) -> bool,
    ) -> Result<Searched, OutOfMemory> {
        match self.tick {
            None => Ok((ExactEnd::CostRange, 0, None)),
            Some(tick) if tick.narrow() => self.search::<i64>(programs, node_limit, go_on),
            Some(_) => self.search::<i128>(programs, node_limit, go_on),
        }
    }

    fn search<T: Whole>(
        &self,
        programs: &[Vec<Act>],
        node_limit: u64,
        go_on: &mut dyn FnMut(u64) -> bool,
    ) -> Result<Searched, OutOfMemory> {
        let Some(t) = self.tables::<T>()? else {
            return Ok((ExactEnd::CostRange, 0, None));
        };
        if t.exact.has_zero() {
            return Ok((ExactEnd::ZeroDuration, 0, None));
        }
        let Some(incumbent) = t.exact.makespan(programs)? else {
            // A pair whose duration is no whole number of ticks (its cost depends on the
            // micro-batch).
            return Ok((ExactEnd::CostRange, 0, None));
        };
        exact::branch_and_bound(&t.exact, &t.bounds, (incumbent, t.slack), node_limit, go_on)
    }
}
