//! Test fixture: describes itself normally, then never returns when asked for a plan (a busy
//! loop). The host must stop it at its time limit and say so, naming this file.

use pipeweave_plugin_api::{Generator, Metadata, Request};

struct Loops;

impl Generator for Loops {
    fn metadata() -> Metadata {
        Metadata {
            name: "fault-loop".into(),
            version: "0.0.0".into(),
            description: "test fixture: never returns from generate".into(),
            requires: String::new(),
            params: Vec::new(),
        }
    }

    fn generate(request: &Request) -> Result<pipeweave_plan::Plan, String> {
        let mut n = u64::from(request.ranks);
        loop {
            n = std::hint::black_box(n.wrapping_mul(3).wrapping_add(1));
        }
    }
}

pipeweave_plugin_api::export_plugin!(Loops);
