//! Plugins in a worker process: the worker's serve loop ([`serve`], [`serve_stdio`]) with the end
//! of what a plugin started (`descendants`), the host's client ([`Worker`]) over one running
//! process (`process`) whose output is passed on bounded (`output`), and the pipe format between
//! them (`frame`).

mod client;
mod descendants;
mod frame;
mod options;
mod output;
mod process;
mod serve;

pub use client::{Worker, descriptor_limit};
pub use options::WorkerOptions;
pub use serve::{serve, serve_stdio};
