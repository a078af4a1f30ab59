//! The `dualpipev` plugin: exports [`pipeweave_generators::DualPipeV`]; the logic and its tests live there.

pipeweave_plugin_api::export_plugin!(pipeweave_generators::DualPipeV);
