//! Workspace-level integration tests: the reference vectors recorded from the real
//! implementations, loaded, validated and simulated through the library crates.

mod architecture;
mod calibration;
mod deadlock;
mod linear;
mod reference;
mod spec_questions;
