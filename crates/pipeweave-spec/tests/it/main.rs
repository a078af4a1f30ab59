//! Integration tests of pipeweave-spec: the cost model's formulas, its laws, checks against plans
//! and schedules.

mod costs;
mod laws;
mod plans;
mod specs;
