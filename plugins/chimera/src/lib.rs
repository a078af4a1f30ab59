//! The `chimera` plugin: exports [`pipeweave_generators::Chimera`]; the logic and its tests live there.

pipeweave_plugin_api::export_plugin!(pipeweave_generators::Chimera);
