//! Plans built in code for the tests.

pub use pipeweave_plan::testing::one_f_one_b;
