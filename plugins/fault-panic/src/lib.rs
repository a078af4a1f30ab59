//! Test fixture: describes itself normally, then panics when asked for a plan. The host must report
//! the panic as an error naming this file, and the process must survive.

use pipeweave_plugin_api::{Generator, Metadata, Request};

struct Panics;

impl Generator for Panics {
    fn metadata() -> Metadata {
        Metadata {
            name: "fault-panic".into(),
            version: "0.0.0".into(),
            description: "test fixture: panics while building a plan".into(),
            requires: String::new(),
            params: Vec::new(),
        }
    }

    fn generate(request: &Request) -> Result<pipeweave_plan::Plan, String> {
        panic!("fixture panic for {} ranks", request.ranks)
    }
}

pipeweave_plugin_api::export_plugin!(Panics);
