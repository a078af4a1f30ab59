//! Integration tests of pipeweave-spec: shipped specs, reports, the cost model's laws.

mod plans;
mod reports;
