//! The `pipeweave` command driven as a user would: output, exit codes and files.

mod browser;
mod calibrate;
mod commands;
mod compare;
mod costs;
mod docs;
mod draw;
mod exit_codes;
mod fitting;
mod flags;
mod forward_only;
mod hostile;
mod hostile_outputs;
mod language;
mod lsp;
mod playground;
mod plugin_workers;
mod plugins;
mod recorded;
mod report;
mod roundtrip;
mod schemas;
mod sweeps;
mod synthesize;
mod terminal;
