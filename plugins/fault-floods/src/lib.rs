//! Test fixture: a DualPipeV plugin that writes 50 MiB on its standard output and 50 MiB on its
//! standard error while building a plan, then answers. The host must pass on only the first few
//! KiB of it and say how much it dropped.

use pipeweave_generators::DualPipeV;
use pipeweave_plugin_api::{Generator, Metadata, Request};
use std::io::Write;

struct Floods;

/// What it writes on each of the two: 50 MiB.
const EACH: usize = 50 << 20;

impl Generator for Floods {
    fn metadata() -> Metadata {
        Metadata {
            name: "fault-floods".into(),
            ..DualPipeV::metadata()
        }
    }

    fn generate(request: &Request) -> Result<pipeweave_plan::Plan, String> {
        let line = b"fault-floods: a line of output, over and over, 64 bytes a line.\n";
        let chunk = line.repeat((1 << 20) / line.len() + 1);
        let chunk = &chunk[..1 << 20];
        for _ in 0..EACH >> 20 {
            std::io::stdout()
                .write_all(chunk)
                .map_err(|e| e.to_string())?;
        }
        for _ in 0..EACH >> 20 {
            std::io::stderr()
                .write_all(chunk)
                .map_err(|e| e.to_string())?;
        }
        std::io::stdout().flush().map_err(|e| e.to_string())?;
        DualPipeV::generate(request)
    }
}

pipeweave_plugin_api::export_plugin!(Floods);
