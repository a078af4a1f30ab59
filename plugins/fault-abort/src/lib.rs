//! Test fixture: describes itself normally, then aborts its process when asked for a plan (as a
//! failed assertion in C code or a double panic would). No `catch_unwind` can stop an abort: the
//! host must report it as an error naming this file.

use pipeweave_plugin_api::{Generator, Metadata, Request};

struct Aborts;

impl Generator for Aborts {
    fn metadata() -> Metadata {
        Metadata {
            name: "fault-abort".into(),
            version: "0.0.0".into(),
            description: "test fixture: aborts while building a plan".into(),
            requires: String::new(),
            params: Vec::new(),
        }
    }

    fn generate(_request: &Request) -> Result<pipeweave_plan::Plan, String> {
        std::process::abort()
    }
}

pipeweave_plugin_api::export_plugin!(Aborts);
