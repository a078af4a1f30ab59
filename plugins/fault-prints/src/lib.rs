//! Test fixture: a DualPipeV plugin that prints to standard output and reads standard input while
//! building a plan. The worker's pipes must survive it: the plan arrives, the text goes to
//! standard error.

use pipeweave_generators::DualPipeV;
use pipeweave_plugin_api::{Generator, Metadata, Request};
use std::io::Read;

struct Prints;

impl Generator for Prints {
    fn metadata() -> Metadata {
        Metadata {
            name: "fault-prints".into(),
            ..DualPipeV::metadata()
        }
    }

    #[allow(clippy::print_stdout)]
    fn generate(request: &Request) -> Result<pipeweave_plan::Plan, String> {
        println!("fault-prints: building a plan for {} ranks", request.ranks);
        let mut input = [0u8; 64];
        let read = std::io::stdin().read(&mut input).unwrap_or(0);
        println!("fault-prints: read {read} bytes from standard input");
        DualPipeV::generate(request)
    }
}

pipeweave_plugin_api::export_plugin!(Prints);
