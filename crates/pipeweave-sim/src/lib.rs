//! Discrete-event simulation of step plans: a timeline of every action and the metrics that follow.
//!
//! No IO. Costs come from a [`CostModel`]; the default is [`UnitCosts`].

mod costs;

pub use costs::{CostModel, StageCosts, TableCosts, UniformCosts, UnitCosts};
