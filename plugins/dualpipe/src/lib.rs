//! The `dualpipe` plugin: exports [`pipeweave_generators::DualPipe`]; the logic and its tests live there.

pipeweave_plugin_api::export_plugin!(pipeweave_generators::DualPipe);
