//! Plugins in a worker process: the worker's serve loop ([`serve`], [`serve_stdio`]), the host's
//! client ([`Worker`]) and the pipe format between them (`frame`).

mod client;
mod frame;
mod serve;

pub use client::{Worker, WorkerOptions};
pub use serve::{serve, serve_stdio};
