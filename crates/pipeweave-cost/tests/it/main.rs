//! Integration tests of pipeweave-cost: the cost model's formulas and its laws, on specs and
//! plans.

mod costs;
mod laws;
mod plans;
mod specs;
