//! The `pipeweave` command driven as a user would: output, exit codes and files.

mod commands;
mod draw;
mod plugins;
