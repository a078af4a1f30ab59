//! The durations of a work graph in one of two arithmetics: the cost model's floating-point
//! numbers (what the heuristics and the local search time plans with, as the simulator does), or
//! exact whole numbers of ticks (`ticks.rs`, what a proof compares). The lower bounds are written
//! once over either.

use crate::problem::Graph;
use pipeweave_sim::CostModel;
use std::ops::{Add, Sub};

/// A time: a floating-point number or a whole number of ticks.
pub(crate) trait Time: Copy + PartialOrd + Add<Output = Self> + Sub<Output = Self> {
    /// No time.
    const ZERO: Self;
    /// Later than every time (no value yet for a least-of).
    const INFINITY: Self;

    /// The later of two times.
    fn later(self, other: Self) -> Self {
        if other > self { other } else { self }
    }

    /// The earlier of two times.
    fn earlier(self, other: Self) -> Self {
        if other < self { other } else { self }
    }
}

impl Time for f64 {
    const ZERO: f64 = 0.0;
    const INFINITY: f64 = f64::INFINITY;
}

impl Time for i64 {
    const ZERO: i64 = 0;
    const INFINITY: i64 = i64::MAX;
}

impl Time for i128 {
    const ZERO: i128 = 0;
    const INFINITY: i128 = i128::MAX;
}

/// What each node of a graph takes.
pub(crate) trait Durations {
    /// The arithmetic.
    type T: Time;
    /// Node x as F, I or W.
    fn cost(&self, x: usize) -> Self::T;
    /// The backward of I node x run whole (as B).
    fn whole(&self, x: usize) -> Self::T;
    /// The transfer of node x's input from another stage (zero where there is none).
    fn transfer(&self, x: usize) -> Self::T;
    /// The overlapped pair of forward node `f` and backward node `b` (whole or as I), or `None`
    /// where it has no value in this arithmetic.
    fn pair(&self, f: usize, b: usize, whole: bool) -> Option<Self::T>;
}

/// The cost model's own numbers, as the graph holds them.
pub(crate) struct Floats<'a, C: ?Sized> {
    pub g: &'a Graph,
    pub costs: &'a C,
}

impl<C: CostModel + ?Sized> Durations for Floats<'_, C> {
    type T = f64;

    fn cost(&self, x: usize) -> f64 {
        self.g.cost[x]
    }

    fn whole(&self, x: usize) -> f64 {
        self.g.whole[x]
    }

    fn transfer(&self, x: usize) -> f64 {
        self.g.transfer[x]
    }

    fn pair(&self, f: usize, b: usize, whole: bool) -> Option<f64> {
        Some(self.g.pair_cost(self.costs, f, b, whole))
    }
}
