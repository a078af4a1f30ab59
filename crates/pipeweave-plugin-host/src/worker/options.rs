//! What a worker may take and send: its time limit and the bounds of its replies and output.

use std::time::Duration;

/// How long a worker may take and how much it may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerOptions {
    /// The longest one request may take: starting the worker, loading the library and reading
    /// its metadata count as one request, each plan as another. Past it the worker is killed.
    pub time_limit: Duration,
    /// The most bytes one reply may hold; a larger one stops the worker before it is read.
    pub max_reply: u64,
    /// The most bytes of a worker process's standard output and error (the plugin's prints, the
    /// dynamic loader's messages) passed on to this process's standard error; the rest is
    /// dropped and counted in a warning. All workers together pass on at most 64 KiB.
    pub max_output: u64,
}

impl WorkerOptions {
    /// The default time limit: 10 s per request.
    pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(10);
    /// The default reply bound: 256 MiB, about ten million actions (DualPipe at 32 × 1,024 sends
    /// 25 bytes per action).
    pub const DEFAULT_MAX_REPLY: u64 = 256 << 20;
    /// The default output bound: 4 KiB per worker process.
    pub const DEFAULT_MAX_OUTPUT: u64 = 4 << 10;
}

impl Default for WorkerOptions {
    fn default() -> WorkerOptions {
        WorkerOptions {
            time_limit: WorkerOptions::DEFAULT_TIME_LIMIT,
            max_reply: WorkerOptions::DEFAULT_MAX_REPLY,
            max_output: WorkerOptions::DEFAULT_MAX_OUTPUT,
        }
    }
}
