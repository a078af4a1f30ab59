//! Integration tests of pipeweave-spec: the shipped specs, the default spec, and a spec's checks
//! against plans and schedules.

mod plans;
mod specs;
