//! Test fixture: returns a well-formed plan that runs no backward at all. The host must refuse it
//! through the validator.

use pipeweave_plan::{Action, Kind, Op, Plan};
use pipeweave_plugin_api::{Generator, Metadata, Request};

struct Broken;

impl Generator for Broken {
    fn metadata() -> Metadata {
        Metadata {
            name: "fault-broken-plan".into(),
            version: "0.0.0".into(),
            description: "test fixture: a plan without backwards".into(),
            requires: String::new(),
            params: Vec::new(),
        }
    }

    fn generate(_request: &Request) -> Result<Plan, String> {
        let programs = (0..2)
            .map(|r| vec![Action::One(Op::new(r, Kind::F, 0))])
            .collect();
        Plan::single(2, vec![0, 1], 1, programs).map_err(|e| e.to_string())
    }
}

pipeweave_plugin_api::export_plugin!(Broken);
